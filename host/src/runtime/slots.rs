//! The two shared mechanisms every call relies on: [`Slots`] keeps calls in
//! flight within the pooling allocator's instances (a caller past the limit
//! waits rather than failing, and freed slots go round the waiting plugins
//! in turn), and [`EpochTicker`] advances the engine's epoch so that a
//! store's deadline, a number of ticks, means wall-clock time.
//!
//! A call from async code that must run on a blocking thread waits for its
//! slot as a task first ([`Slots::acquire_owned`]) and takes the thread
//! only with the slot in hand ([`OwnedSlot::run`]): a plugin of hundreds
//! of workers then holds hundreds of parked tasks while the slots are
//! taken, not hundreds of threads.

use std::cell::Cell;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use tokio::sync::Notify;
use wasmtime::Engine;

/// How often the epoch ticker advances; deadlines are this precise.
pub(crate) const EPOCH_TICK: Duration = Duration::from_millis(5);

/// Counts calls in flight so they never exceed the pooling allocator's
/// slots, and shares them fairly between plugins when they run short.
pub(crate) struct Slots {
    state: Mutex<Shares>,
    /// Wakes the threads waiting in [`Slots::acquire`] …
    granted: Condvar,
    /// … and the tasks waiting in [`Slots::acquire_owned`].
    granted_async: Notify,
}

thread_local! {
    /// Set while this thread runs a call with an [`OwnedSlot`]: the call's
    /// own `acquire` is then already satisfied.
    static HOLDS_SLOT: Cell<bool> = const { Cell::new(false) };
}

/// Who gets a slot: the bookkeeping under [`Slots`], plain data.
///
/// A free slot is taken at once. When none is free, callers wait, and each
/// slot freed goes to the next *plugin* in a round of the plugins waiting —
/// not to whichever waiting thread wakes first. A plugin that requeues
/// itself in a tight loop with many workers thus gets one slot in turn with
/// a quiet plugin's one waiting call, instead of one in (its workers + 1);
/// while nobody else waits it may use every slot (nothing is kept idle).
#[derive(Debug)]
struct Shares {
    /// Slots neither held nor granted to a waiter. Never above zero while
    /// a waiter has no grant: a freed slot is granted before anyone else
    /// can take it.
    free: usize,
    /// Plugins with waiters that have no grant yet, each once, in turn.
    turn: VecDeque<Arc<str>>,
    /// Waiters and grants by plugin, while it has waiters.
    waiting: HashMap<Arc<str>, Waiting>,
}

#[derive(Debug, Default)]
struct Waiting {
    /// Calls of this plugin waiting (granted or not).
    callers: usize,
    /// Slots granted to them and not yet claimed.
    granted: usize,
}

impl Shares {
    fn new(n: usize) -> Self {
        Self {
            free: n,
            turn: VecDeque::new(),
            waiting: HashMap::new(),
        }
    }

    /// Takes a free slot, if any.
    fn take(&mut self) -> bool {
        self.free = match self.free.checked_sub(1) {
            Some(free) => free,
            None => return false,
        };
        true
    }

    /// A call of `plugin` starts waiting.
    fn wait(&mut self, plugin: &Arc<str>) {
        let w = self.waiting.entry(plugin.clone()).or_default();
        w.callers += 1;
        if w.callers - w.granted == 1 {
            self.turn.push_back(plugin.clone());
        }
    }

    /// A waiting call of `plugin` takes a slot granted to its plugin, if
    /// there is one.
    fn claim(&mut self, plugin: &str) -> bool {
        let Some(w) = self.waiting.get_mut(plugin) else {
            return false;
        };
        if w.granted == 0 {
            return false;
        }
        w.granted -= 1;
        w.callers -= 1;
        if w.callers == 0 {
            self.waiting.remove(plugin);
        }
        true
    }

    /// A waiting call of `plugin` gives up (its task was dropped): a slot
    /// granted to the plugin that no remaining caller will claim is given
    /// on. Returns whether a slot was granted anew.
    fn cancel(&mut self, plugin: &str) -> bool {
        let Some(w) = self.waiting.get_mut(plugin) else {
            return false;
        };
        w.callers -= 1;
        let unclaimed = w.granted > w.callers;
        if unclaimed {
            w.granted -= 1;
        }
        if w.callers == 0 {
            self.waiting.remove(plugin);
            self.turn.retain(|p| &**p != plugin);
        } else if !unclaimed && w.callers == w.granted {
            // Every remaining caller has its grant: out of the round.
            self.turn.retain(|p| &**p != plugin);
        }
        if unclaimed { self.release() } else { false }
    }

    /// A slot is given back; returns whether it was granted to a waiter.
    fn release(&mut self) -> bool {
        self.free += 1;
        self.grant()
    }

    /// Grants free slots to waiting plugins in turn.
    fn grant(&mut self) -> bool {
        let mut any = false;
        while self.free > 0 {
            let Some(plugin) = self.turn.pop_front() else {
                break;
            };
            let w = self
                .waiting
                .get_mut(&plugin)
                .expect("a plugin in turn has waiters");
            w.granted += 1;
            self.free -= 1;
            any = true;
            if w.callers > w.granted {
                self.turn.push_back(plugin);
            }
        }
        any
    }
}

/// One slot, given back when dropped (`None`: the slot this thread's
/// [`OwnedSlot`] holds, given back by it).
pub(crate) struct Slot<'a>(Option<&'a Slots>);

/// A slot taken by a task ([`Slots::acquire_owned`]), to be used on a
/// blocking thread by [`OwnedSlot::run`]; given back when dropped, used or
/// not.
pub(crate) struct OwnedSlot(Arc<Slots>);

impl OwnedSlot {
    /// Runs `f` on this thread holding the slot: the calls it makes find
    /// their slot taken already.
    pub(crate) fn run<R>(self, f: impl FnOnce() -> R) -> R {
        struct Reset;
        impl Drop for Reset {
            fn drop(&mut self) {
                HOLDS_SLOT.with(|h| h.set(false));
            }
        }
        HOLDS_SLOT.with(|h| h.set(true));
        let _reset = Reset;
        f()
    }
}

impl Drop for OwnedSlot {
    fn drop(&mut self) {
        self.0.give_back();
    }
}

impl Slots {
    pub(crate) fn new(n: usize) -> Self {
        Self {
            state: Mutex::new(Shares::new(n)),
            granted: Condvar::new(),
            granted_async: Notify::new(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Shares> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A slot for a call of `plugin`, waiting for one as a task (in turn
    /// with the plugins' waiting threads) if none is free.
    pub(crate) async fn acquire_owned(self: &Arc<Self>, plugin: &str) -> OwnedSlot {
        {
            let mut state = self.lock();
            if state.take() {
                return OwnedSlot(self.clone());
            }
            state.wait(&Arc::from(plugin));
        }
        // Gives the wait up if this future is dropped before its claim.
        struct Waiting<'a> {
            slots: &'a Slots,
            plugin: &'a str,
            claimed: bool,
        }
        impl Drop for Waiting<'_> {
            fn drop(&mut self) {
                if !self.claimed && self.slots.lock().cancel(self.plugin) {
                    self.slots.wake_all();
                }
            }
        }
        let mut waiting = Waiting {
            slots: self,
            plugin,
            claimed: false,
        };
        loop {
            let notified = self.granted_async.notified();
            tokio::pin!(notified);
            // Registered before the claim is tried: a grant made between
            // the two still wakes this task.
            notified.as_mut().enable();
            if self.lock().claim(plugin) {
                waiting.claimed = true;
                return OwnedSlot(self.clone());
            }
            notified.await;
        }
    }

    fn wake_all(&self) {
        self.granted.notify_all();
        self.granted_async.notify_waiters();
    }

    fn give_back(&self) {
        let mut state = self.lock();
        // Waiters share one condition variable; only the granted plugin's
        // claim succeeds, the others wait again. Uncontended, no wake-up.
        if state.release() {
            drop(state);
            self.wake_all();
        }
    }

    /// A slot for a call of `plugin`, waiting for one if none is free.
    pub(crate) fn acquire(&self, plugin: &str) -> Slot<'_> {
        if HOLDS_SLOT.with(Cell::get) {
            return Slot(None);
        }
        let mut state = self.lock();
        if !state.take() {
            state.wait(&Arc::from(plugin));
            while !state.claim(plugin) {
                state = self.granted.wait(state).unwrap_or_else(|e| e.into_inner());
            }
        }
        Slot(Some(self))
    }

    /// A slot if one is free now (none is while a call waits for one).
    pub(crate) fn try_acquire(&self) -> Option<Slot<'_>> {
        let mut state = self.lock();
        // Lazily: a `Slot` made and dropped on failure would give back a
        // slot never taken (and lock the state it is still holding).
        state.take().then(|| Slot(Some(self)))
    }
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        if let Some(slots) = self.0 {
            slots.give_back();
        }
    }
}

/// One thread advancing the engine's epoch; a store's deadline is a number
/// of ticks. Stops when dropped.
pub(crate) struct EpochTicker {
    stop: Arc<AtomicBool>,
}

impl EpochTicker {
    pub(crate) fn start(engine: Engine) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let spawned = std::thread::Builder::new()
            .name("windlass-epoch".into())
            .spawn(move || {
                while !flag.load(Ordering::Relaxed) {
                    std::thread::sleep(EPOCH_TICK);
                    engine.increment_epoch();
                }
            });
        if let Err(e) = spawned {
            // Without a ticker deadlines never fire; say so loudly.
            tracing::error!(error = %e, "could not start the epoch ticker: plugin deadlines are not enforced");
        }
        Self { stop }
    }

    pub(crate) fn ticks_for(&self, timeout: Duration) -> u64 {
        // +1: the current tick may be almost over.
        (timeout.as_nanos() / EPOCH_TICK.as_nanos()) as u64 + 1
    }
}

impl Drop for EpochTicker {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_never_exceed_their_count() {
        let slots = Slots::new(2);
        let a = slots.try_acquire().expect("one");
        let _b = slots.acquire("p");
        assert!(slots.try_acquire().is_none());
        drop(a);
        assert!(slots.try_acquire().is_some());
    }

    /// The plugins, in the order given, whose waiters claim a grant now.
    fn claim_all(s: &mut Shares, plugins: &[&str]) -> Vec<String> {
        let mut got = Vec::new();
        for p in plugins {
            while s.claim(p) {
                got.push((*p).to_owned());
            }
        }
        got
    }

    #[test]
    fn a_freed_slot_goes_round_the_waiting_plugins_not_to_the_most_waiters() {
        let (noisy, quiet): (Arc<str>, Arc<str>) = ("noisy".into(), "quiet".into());
        let mut s = Shares::new(2);
        // The noisy plugin holds both slots and has ten more calls waiting;
        // then one quiet call waits.
        assert!(s.take() && s.take());
        for _ in 0..10 {
            s.wait(&noisy);
        }
        s.wait(&quiet);
        assert!(!s.take(), "nothing free");
        // Two slots freed: one goes to each plugin, though the noisy one
        // waited first and with ten calls.
        assert!(s.release());
        assert!(s.release());
        let mut got = claim_all(&mut s, &["noisy", "quiet"]);
        got.sort();
        assert_eq!(got, ["noisy", "quiet"]);
        // The quiet plugin is done waiting; the rest go to the noisy one.
        assert!(s.release());
        assert_eq!(claim_all(&mut s, &["noisy", "quiet"]), ["noisy"]);
    }

    #[test]
    fn with_many_plugins_waiting_each_gets_a_turn_before_anyone_a_second() {
        let names: Vec<Arc<str>> = ["a", "b", "c"].into_iter().map(Arc::from).collect();
        let mut s = Shares::new(1);
        assert!(s.take());
        for n in &names {
            for _ in 0..3 {
                s.wait(n);
            }
        }
        let mut order = Vec::new();
        for _ in 0..9 {
            assert!(s.release());
            let got = claim_all(&mut s, &["a", "b", "c"]);
            assert_eq!(got.len(), 1, "one slot, one grant");
            order.extend(got);
        }
        assert_eq!(order, ["a", "b", "c", "a", "b", "c", "a", "b", "c"]);
        // Nobody waits now: the freed slot is simply free.
        assert!(!s.release());
        assert!(s.take());
    }

    #[test]
    fn a_granted_slot_cannot_be_taken_by_a_caller_that_did_not_wait() {
        let quiet: Arc<str> = "quiet".into();
        let mut s = Shares::new(1);
        assert!(s.take());
        s.wait(&quiet);
        assert!(s.release());
        // An inline call (try_acquire) finds nothing free: the slot is the
        // waiter's.
        assert!(!s.take());
        assert!(s.claim("quiet"));
        assert!(s.waiting.is_empty() && s.turn.is_empty());
    }

    #[test]
    fn waiting_threads_of_two_plugins_all_get_through() {
        // The real shell: many threads of one plugin and one of another,
        // one slot; every call completes.
        let slots = Arc::new(Slots::new(1));
        let done = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let threads: Vec<_> = (0..9)
            .map(|i| {
                let (slots, done) = (slots.clone(), done.clone());
                std::thread::spawn(move || {
                    let plugin = if i == 0 { "quiet" } else { "noisy" };
                    for _ in 0..50 {
                        let _slot = slots.acquire(plugin);
                        done.fetch_add(1, Ordering::Relaxed);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(done.load(Ordering::Relaxed), 9 * 50);
        assert!(slots.try_acquire().is_some(), "every slot came back");
    }

    /// A task of plugin `p` waiting in `acquire_owned`, once it has started
    /// to wait.
    async fn waiting_task(slots: &Arc<Slots>) -> tokio::task::JoinHandle<OwnedSlot> {
        let waiter = tokio::spawn({
            let slots = slots.clone();
            async move { slots.acquire_owned("p").await }
        });
        tokio::task::yield_now().await;
        waiter
    }

    #[tokio::test]
    async fn a_task_waits_for_its_slot_and_its_thread_then_needs_no_other() {
        let slots = Arc::new(Slots::new(1));
        let held = slots.try_acquire().expect("the one slot");
        let waiter = waiting_task(&slots).await;
        assert!(!waiter.is_finished(), "no slot was free");
        drop(held);
        let owned = waiter.await.unwrap();
        assert!(slots.try_acquire().is_none(), "the task holds the slot");
        // On the thread that runs with it, a call's own acquire is already
        // satisfied (it would wait forever otherwise: the one slot is taken).
        let inside = slots.clone();
        std::thread::spawn(move || owned.run(|| drop(inside.acquire("p"))))
            .join()
            .unwrap();
        assert!(slots.try_acquire().is_some(), "given back after the run");
    }

    #[tokio::test]
    async fn a_dropped_waiting_task_gives_back_what_it_was_granted() {
        let slots = Arc::new(Slots::new(1));
        let held = slots.try_acquire().expect("the one slot");
        let waiter = waiting_task(&slots).await;
        // The slot is granted to the waiting task's plugin, and the task is
        // dropped before it runs to claim it.
        drop(held);
        waiter.abort();
        assert!(matches!(waiter.await, Err(e) if e.is_cancelled()));
        assert!(slots.try_acquire().is_some(), "the grant came back");
        // And a task dropped before any grant leaves nothing behind.
        let held = slots.try_acquire().expect("free again");
        let waiter = waiting_task(&slots).await;
        waiter.abort();
        let _ = waiter.await;
        drop(held);
        assert!(slots.lock().waiting.is_empty() && slots.lock().turn.is_empty());
        assert!(slots.try_acquire().is_some());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn waiting_tasks_and_threads_all_get_through() {
        let slots = Arc::new(Slots::new(1));
        let done = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let tasks: Vec<_> = (0..8)
            .map(|_| {
                let (slots, done) = (slots.clone(), done.clone());
                tokio::spawn(async move {
                    for _ in 0..50 {
                        let slot = slots.acquire_owned("noisy").await;
                        let done = done.clone();
                        tokio::task::spawn_blocking(move || {
                            slot.run(|| done.fetch_add(1, Ordering::Relaxed))
                        })
                        .await
                        .unwrap();
                    }
                })
            })
            .collect();
        let thread = std::thread::spawn({
            let (slots, done) = (slots.clone(), done.clone());
            move || {
                for _ in 0..50 {
                    let _slot = slots.acquire("quiet");
                    done.fetch_add(1, Ordering::Relaxed);
                }
            }
        });
        for t in tasks {
            t.await.unwrap();
        }
        thread.join().unwrap();
        assert_eq!(done.load(Ordering::Relaxed), 9 * 50);
        assert!(slots.try_acquire().is_some(), "every slot came back");
    }
}
