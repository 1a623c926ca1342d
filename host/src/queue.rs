//! A work queue with client-go's semantics, one per plugin.
//!
//! - A key waits at most once: adding a waiting key again does nothing.
//! - A key is never handed to two workers at once: a key added while it is
//!   being processed is parked ("dirty") and queued again when `done`.
//! - Failures back off per key exponentially (5 ms doubling to 1000 s), and
//!   all retries together are held to a token bucket (10/s, burst 100), as
//!   client-go's default controller rate limiter does.
//! - `add_after` schedules a later visit; the earliest pending visit wins.
//! - `shut_down` stops handing out work; `drained` waits for in-flight keys.
//! - Each waiting key remembers when it was first added (or became due), so
//!   a worker learns how long it waited (as client-go's queue-duration
//!   metric: a key added while in flight counts from that add).
//! - It counts what client-go's queue metrics count ([`QueueMetrics`]):
//!   adds (a key newly needing work; repeats while it waits are not adds),
//!   retries (rate-limited re-adds), and how long the keys in flight have
//!   been processed.
//!
//! The bookkeeping is a plain struct ([`QueueState`]) driven with explicit
//! instants, unit-tested without time; [`WorkQueue`] is the async shell.

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::hash::Hash;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;

use crate::bucket::Bucket;

/// How retries are spaced.
#[derive(Debug, Clone, Copy)]
pub struct RateLimit {
    /// Delay after the first failure; doubles with each further one.
    pub base: Duration,
    /// The most one key ever waits.
    pub max: Duration,
    /// Retries per second across all keys, on average (0: no limit).
    pub per_second: f64,
    /// Retries allowed in a burst before `per_second` applies.
    pub burst: u32,
}

impl Default for RateLimit {
    fn default() -> Self {
        Self {
            base: Duration::from_millis(5),
            max: Duration::from_secs(1000),
            per_second: 10.0,
            burst: 100,
        }
    }
}

impl RateLimit {
    /// The per-key delay after `failures` failures in a row (1 = first).
    pub fn backoff(&self, failures: u32) -> Duration {
        let exp = failures.saturating_sub(1).min(40);
        self.base
            .checked_mul(1u32 << exp.min(31))
            .map(|d| if exp > 31 { self.max } else { d })
            .unwrap_or(self.max)
            .min(self.max)
    }
}

/// The queue's bookkeeping, with time passed in.
#[derive(Debug)]
pub struct QueueState<K> {
    /// Ready keys, in order.
    ready: VecDeque<K>,
    /// Keys that need processing (waiting in `ready`, or parked while
    /// processing), with when each was first added.
    dirty: HashMap<K, Instant>,
    /// Keys being processed, with when each was handed out.
    processing: HashMap<K, Instant>,
    /// Later visits, by due time; `due` holds each key's earliest one.
    delayed: BTreeSet<(Instant, u64, K)>,
    due: HashMap<K, (Instant, u64)>,
    seq: u64,
    failures: HashMap<K, u32>,
    limit: RateLimit,
    /// Holds retries across all keys to `limit.per_second` and `burst`.
    bucket: Bucket,
    shut_down: bool,
    adds: u64,
    retries: u64,
}

/// A queue's numbers at one moment, as client-go's workqueue metrics have
/// them.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct QueueMetrics {
    /// Keys ready for a worker (client-go's depth: neither the delayed nor
    /// the ones in flight).
    pub ready: usize,
    /// Keys scheduled for later (requeue-after, backoff).
    pub delayed: usize,
    /// Keys being processed.
    pub in_flight: usize,
    /// Keys that newly needed work, ever.
    pub adds: u64,
    /// Retries scheduled after failures, ever.
    pub retries: u64,
    /// Seconds the keys in flight have been processed, together.
    pub unfinished_seconds: f64,
    /// Seconds the longest-running key in flight has been processed.
    pub longest_running_seconds: f64,
}

impl<K: Clone + Eq + Hash + Ord> QueueState<K> {
    pub fn new(limit: RateLimit) -> Self {
        Self {
            ready: VecDeque::new(),
            dirty: HashMap::new(),
            processing: HashMap::new(),
            delayed: BTreeSet::new(),
            due: HashMap::new(),
            seq: 0,
            failures: HashMap::new(),
            bucket: Bucket::new(limit.per_second, limit.burst),
            limit,
            shut_down: false,
            adds: 0,
            retries: 0,
        }
    }

    /// Marks `key` as needing processing as of `now`. Returns true when a
    /// worker should be woken (the key became ready).
    pub fn add(&mut self, key: K, now: Instant) -> bool {
        if self.shut_down || self.dirty.contains_key(&key) {
            return false;
        }
        self.dirty.insert(key.clone(), now);
        self.adds += 1;
        if self.processing.contains_key(&key) {
            // Parked: `done` queues it again.
            return false;
        }
        self.ready.push_back(key);
        true
    }

    /// Schedules `key` at `at` (now or earlier means at once). An earlier
    /// pending visit is kept; a later one is replaced.
    pub fn add_at(&mut self, key: K, at: Instant, now: Instant) -> bool {
        if self.shut_down {
            return false;
        }
        if at <= now {
            return self.add(key, now);
        }
        if let Some(&(when, seq)) = self.due.get(&key) {
            if when <= at {
                return false;
            }
            self.delayed.remove(&(when, seq, key.clone()));
        }
        self.seq += 1;
        self.delayed.insert((at, self.seq, key.clone()));
        self.due.insert(key, (at, self.seq));
        false
    }

    /// Schedules a retry of `key` after a failure; returns its delay.
    pub fn add_rate_limited(&mut self, key: K, now: Instant) -> Duration {
        self.retries += 1;
        let failures = self.failures.entry(key.clone()).or_insert(0);
        *failures += 1;
        let per_key = self.limit.backoff(*failures);
        let overall = self.bucket.reserve(now);
        let delay = per_key.max(overall);
        self.add_at(key, now + delay, now);
        delay
    }

    /// How many failures in a row `key` has had.
    pub fn failures(&self, key: &K) -> u32 {
        self.failures.get(key).copied().unwrap_or(0)
    }

    /// Clears `key`'s failure count (after a success).
    pub fn forget(&mut self, key: &K) {
        self.failures.remove(key);
    }

    /// Moves visits due by `now` into the ready queue.
    pub fn promote(&mut self, now: Instant) -> usize {
        let mut woke = 0;
        while let Some((at, _, _)) = self.delayed.first() {
            if *at > now {
                break;
            }
            let (at, _, key) = self.delayed.pop_first().expect("checked above");
            self.due.remove(&key);
            // It waits from when it was due, not from when it was scheduled.
            if self.add(key, at) {
                woke += 1;
            }
        }
        woke
    }

    /// The next key to process, now marked as processing, with when it was
    /// added (or became due).
    pub fn pop(&mut self, now: Instant) -> Option<(K, Instant)> {
        if self.shut_down {
            return None;
        }
        self.promote(now);
        let key = self.ready.pop_front()?;
        let added = self.dirty.remove(&key).unwrap_or(now);
        self.processing.insert(key.clone(), now);
        Some((key, added))
    }

    /// Marks `key` finished. Returns true when it was re-added meanwhile and
    /// is ready again.
    pub fn done(&mut self, key: &K) -> bool {
        self.processing.remove(key);
        if self.dirty.contains_key(key) && !self.shut_down {
            self.ready.push_back(key.clone());
            return true;
        }
        false
    }

    /// When the earliest delayed visit is due.
    pub fn next_due(&self) -> Option<Instant> {
        self.delayed.first().map(|(at, _, _)| *at)
    }

    /// Keys ready now.
    pub fn len(&self) -> usize {
        self.ready.len()
    }

    /// Keys scheduled for later.
    pub fn delayed_len(&self) -> usize {
        self.delayed.len()
    }

    /// Keys being processed.
    pub fn in_flight(&self) -> usize {
        self.processing.len()
    }

    /// The queue's numbers as of `now`.
    pub fn metrics(&self, now: Instant) -> QueueMetrics {
        let running = self
            .processing
            .values()
            .map(|started| now.saturating_duration_since(*started).as_secs_f64());
        let (unfinished, longest) =
            running.fold((0.0, 0.0_f64), |(sum, max), s| (sum + s, max.max(s)));
        QueueMetrics {
            ready: self.ready.len(),
            delayed: self.delayed.len(),
            in_flight: self.processing.len(),
            adds: self.adds,
            retries: self.retries,
            unfinished_seconds: unfinished,
            longest_running_seconds: longest,
        }
    }

    /// Stops handing out keys and accepting new ones.
    pub fn shut_down(&mut self) {
        self.shut_down = true;
    }

    /// True after `shut_down`.
    pub fn is_shut_down(&self) -> bool {
        self.shut_down
    }
}

/// The async queue workers share: cheap to clone.
#[derive(Clone)]
pub struct WorkQueue<K> {
    state: Arc<Mutex<QueueState<K>>>,
    /// Wakes workers waiting for a key.
    ready: Arc<Notify>,
    /// Wakes `drained` when a key finishes.
    finished: Arc<Notify>,
}

impl<K: Clone + Eq + Hash + Ord> WorkQueue<K> {
    pub fn new(limit: RateLimit) -> Self {
        Self {
            state: Arc::new(Mutex::new(QueueState::new(limit))),
            ready: Arc::new(Notify::new()),
            finished: Arc::new(Notify::new()),
        }
    }

    fn with<R>(&self, f: impl FnOnce(&mut QueueState<K>) -> R) -> R {
        f(&mut self.state.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Marks `key` as needing processing.
    pub fn add(&self, key: K) {
        let now = Instant::now();
        if self.with(|s| s.add(key, now)) {
            self.ready.notify_one();
        }
    }

    /// Schedules a visit to `key` after `delay`.
    pub fn add_after(&self, key: K, delay: Duration) {
        let now = Instant::now();
        if self.with(|s| s.add_at(key, now + delay, now)) {
            self.ready.notify_one();
        } else {
            // A sleeping worker may need to wake earlier than it planned.
            self.ready.notify_waiters();
        }
    }

    /// Schedules a retry after a failure, with backoff; returns the delay.
    pub fn add_rate_limited(&self, key: K) -> Duration {
        let delay = self.with(|s| s.add_rate_limited(key, Instant::now()));
        self.ready.notify_waiters();
        delay
    }

    /// Clears `key`'s failures.
    pub fn forget(&self, key: &K) {
        self.with(|s| s.forget(key));
    }

    /// How many failures in a row `key` has had.
    pub fn failures(&self, key: &K) -> u32 {
        self.with(|s| s.failures(key))
    }

    /// Waits for the next key, and says when it was added (or became due);
    /// `None` once the queue is shut down.
    pub async fn get(&self) -> Option<(K, Instant)> {
        loop {
            let notified = self.ready.notified();
            tokio::pin!(notified);
            // Register before looking, so a wake-up between the look and the
            // wait is not lost.
            notified.as_mut().enable();
            let (key, next_due, shut_down) = self.with(|s| {
                let key = s.pop(Instant::now());
                (key, s.next_due(), s.is_shut_down())
            });
            if key.is_some() {
                return key;
            }
            if shut_down {
                return None;
            }
            match next_due {
                Some(at) => {
                    tokio::select! {
                        _ = &mut notified => {}
                        _ = tokio::time::sleep_until(at) => {}
                    }
                }
                None => notified.await,
            }
        }
    }

    /// Marks `key` finished; it is queued again if it changed meanwhile.
    pub fn done(&self, key: &K) {
        if self.with(|s| s.done(key)) {
            self.ready.notify_one();
        }
        self.finished.notify_waiters();
    }

    /// (ready, delayed, in flight) counts.
    pub fn depth(&self) -> (usize, usize, usize) {
        self.with(|s| (s.len(), s.delayed_len(), s.in_flight()))
    }

    /// The queue's numbers now.
    pub fn metrics(&self) -> QueueMetrics {
        self.with(|s| s.metrics(Instant::now()))
    }

    /// Stops handing out keys; workers waiting in `get` return `None`.
    pub fn shut_down(&self) {
        self.with(|s| s.shut_down());
        self.ready.notify_waiters();
    }

    /// Waits until no key is being processed.
    pub async fn drained(&self) {
        loop {
            let finished = self.finished.notified();
            tokio::pin!(finished);
            finished.as_mut().enable();
            if self.with(|s| s.in_flight()) == 0 {
                return;
            }
            finished.await;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    fn state() -> QueueState<&'static str> {
        QueueState::new(RateLimit::default())
    }

    /// The next key, without when it was added.
    fn pop<K: Clone + Eq + Hash + Ord>(q: &mut QueueState<K>, now: Instant) -> Option<K> {
        q.pop(now).map(|(key, _)| key)
    }

    #[test]
    fn a_waiting_key_is_queued_once() {
        let now = Instant::now();
        let mut q = state();
        assert!(q.add("a", now));
        assert!(!q.add("a", now));
        assert!(q.add("b", now));
        assert_eq!(q.len(), 2);
        assert_eq!(pop(&mut q, now), Some("a"));
        assert_eq!(pop(&mut q, now), Some("b"));
        assert_eq!(pop(&mut q, now), None);
    }

    #[test]
    fn a_key_changed_while_processing_is_parked_then_requeued() {
        let now = Instant::now();
        let mut q = state();
        q.add("a", now);
        assert_eq!(pop(&mut q, now), Some("a"));
        // Changes while in flight: no second worker may get it.
        assert!(!q.add("a", now));
        assert!(!q.add("a", now));
        assert_eq!(pop(&mut q, now), None);
        // Finished: it comes back exactly once.
        assert!(q.done(&"a"));
        assert_eq!(pop(&mut q, now), Some("a"));
        assert!(!q.done(&"a"));
        assert_eq!(pop(&mut q, now), None);
    }

    #[test]
    fn backoff_doubles_from_5ms_to_1000s() {
        let limit = RateLimit::default();
        assert_eq!(limit.backoff(1), Duration::from_millis(5));
        assert_eq!(limit.backoff(2), Duration::from_millis(10));
        assert_eq!(limit.backoff(11), Duration::from_millis(5 * 1024));
        assert_eq!(limit.backoff(30), Duration::from_secs(1000));
        assert_eq!(limit.backoff(u32::MAX), Duration::from_secs(1000));
    }

    #[test]
    fn retries_wait_their_backoff_and_forget_resets_it() {
        let t0 = Instant::now();
        let mut q = state();
        assert_eq!(q.add_rate_limited("a", t0), Duration::from_millis(5));
        assert_eq!(pop(&mut q, t0), None);
        assert_eq!(pop(&mut q, t0 + Duration::from_millis(5)), Some("a"));
        q.done(&"a");
        assert_eq!(q.add_rate_limited("a", t0), Duration::from_millis(10));
        assert_eq!(q.failures(&"a"), 2);
        q.forget(&"a");
        assert_eq!(q.failures(&"a"), 0);
    }

    #[test]
    fn the_bucket_holds_retries_to_the_overall_rate_after_a_burst() {
        let t0 = Instant::now();
        let mut q: QueueState<u32> = QueueState::new(RateLimit {
            burst: 3,
            per_second: 10.0,
            ..RateLimit::default()
        });
        for k in 0..3 {
            assert_eq!(q.add_rate_limited(k, t0), Duration::from_millis(5));
        }
        // The fourth retry waits for a token: 100 ms at 10/s.
        let d = q.add_rate_limited(3, t0);
        assert!(
            d >= Duration::from_millis(99) && d <= Duration::from_millis(101),
            "{d:?}"
        );
    }

    #[test]
    fn the_earliest_scheduled_visit_wins() {
        let t0 = Instant::now();
        let mut q = state();
        q.add_at("a", t0 + Duration::from_secs(10), t0);
        q.add_at("a", t0 + Duration::from_secs(2), t0);
        q.add_at("a", t0 + Duration::from_secs(5), t0);
        assert_eq!(q.delayed_len(), 1);
        assert_eq!(q.next_due(), Some(t0 + Duration::from_secs(2)));
        assert_eq!(pop(&mut q, t0 + Duration::from_secs(1)), None);
        assert_eq!(pop(&mut q, t0 + Duration::from_secs(2)), Some("a"));
        assert_eq!(q.delayed_len(), 0);
    }

    #[test]
    fn a_due_visit_of_a_waiting_key_does_not_duplicate_it() {
        let t0 = Instant::now();
        let mut q = state();
        q.add("a", t0);
        q.add_at("a", t0 + Duration::from_millis(1), t0);
        assert_eq!(q.promote(t0 + Duration::from_millis(1)), 0);
        assert_eq!(q.len(), 1);
    }

    #[test]
    fn shut_down_stops_handing_out_and_accepting_keys() {
        let now = Instant::now();
        let mut q = state();
        q.add("a", now);
        q.shut_down();
        assert_eq!(pop(&mut q, now), None);
        assert!(!q.add("b", now));
    }

    #[test]
    fn a_key_reports_when_it_was_first_added() {
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        let mut q = state();
        q.add("a", t0);
        q.add("a", t0 + ms(5)); // already waiting: the first add counts
        assert_eq!(q.pop(t0 + ms(9)), Some(("a", t0)));
        // Added while in flight: it waits from that add, through `done`.
        q.add("a", t0 + ms(10));
        q.done(&"a");
        assert_eq!(q.pop(t0 + ms(20)), Some(("a", t0 + ms(10))));
        q.done(&"a");
        // A delayed visit waits from when it was due, not when scheduled.
        q.add_at("a", t0 + ms(30), t0 + ms(20));
        assert_eq!(q.pop(t0 + ms(35)), Some(("a", t0 + ms(30))));
    }

    #[test]
    fn metrics_count_adds_retries_and_work_in_flight_as_client_go_does() {
        let t0 = Instant::now();
        let s = Duration::from_secs;
        let mut q = state();
        q.add("a", t0);
        q.add("a", t0); // already waiting: not an add
        q.add("b", t0);
        let m = q.metrics(t0);
        assert_eq!((m.ready, m.adds, m.in_flight), (2, 2, 0));
        assert_eq!(q.pop(t0 + s(1)).map(|(k, _)| k), Some("a"));
        assert_eq!(q.pop(t0 + s(3)).map(|(k, _)| k), Some("b"));
        q.add("a", t0 + s(3)); // changed while in flight: an add
        let m = q.metrics(t0 + s(4));
        assert_eq!((m.ready, m.in_flight, m.adds), (0, 2, 3));
        // `a` has run 3 s, `b` 1 s.
        assert_eq!(m.unfinished_seconds, 4.0);
        assert_eq!(m.longest_running_seconds, 3.0);
        q.done(&"b");
        q.add_rate_limited("b", t0 + s(4));
        let m = q.metrics(t0 + s(4));
        assert_eq!((m.in_flight, m.delayed, m.retries), (1, 1, 1));
        assert_eq!(m.unfinished_seconds, 3.0);
        q.done(&"a"); // parked: ready again
        let m = q.metrics(t0 + s(4));
        assert_eq!((m.ready, m.in_flight), (1, 0));
        assert_eq!(m.longest_running_seconds, 0.0);
    }

    #[tokio::test(start_paused = true)]
    async fn workers_wait_for_keys_and_for_delays() {
        let q: WorkQueue<&'static str> = WorkQueue::new(RateLimit::default());
        let worker = {
            let q = q.clone();
            tokio::spawn(async move { q.get().await.map(|(k, _)| k) })
        };
        tokio::task::yield_now().await;
        q.add("a");
        assert_eq!(worker.await.unwrap(), Some("a"));
        q.done(&"a");

        let started = Instant::now();
        q.add_after("b", Duration::from_secs(30));
        assert_eq!(q.get().await.map(|(k, _)| k), Some("b"));
        assert!(started.elapsed() >= Duration::from_secs(30));

        // An earlier add_after wakes a worker already sleeping on a later one.
        q.done(&"b");
        q.add_after("late", Duration::from_secs(60));
        let worker = {
            let q = q.clone();
            tokio::spawn(async move { q.get().await.map(|(k, _)| k) })
        };
        tokio::task::yield_now().await;
        let started = Instant::now();
        q.add_after("soon", Duration::from_secs(1));
        assert_eq!(worker.await.unwrap(), Some("soon"));
        assert!(started.elapsed() < Duration::from_secs(2));
    }

    #[tokio::test(start_paused = true)]
    async fn one_key_is_never_processed_by_two_workers() {
        let q: WorkQueue<u32> = WorkQueue::new(RateLimit::default());
        let active = Arc::new(Mutex::new(HashSet::new()));
        let processed = Arc::new(Mutex::new(0u32));
        let mut workers = Vec::new();
        for _ in 0..4 {
            let (q, active, processed) = (q.clone(), active.clone(), processed.clone());
            workers.push(tokio::spawn(async move {
                while let Some(key) = q.get().await.map(|(k, _)| k) {
                    assert!(active.lock().unwrap().insert(key), "key {key} taken twice");
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    active.lock().unwrap().remove(&key);
                    *processed.lock().unwrap() += 1;
                    q.done(&key);
                }
            }));
        }
        for round in 0..20 {
            for key in 0..3 {
                q.add(key);
            }
            tokio::time::sleep(Duration::from_millis(3 + round % 7)).await;
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert_eq!(q.depth(), (0, 0, 0));
        q.shut_down();
        for w in workers {
            w.await.unwrap();
        }
        // Dedup collapsed most adds, but every burst was seen at least once.
        let n = *processed.lock().unwrap();
        assert!((3..=60).contains(&n), "{n}");
    }

    #[tokio::test(start_paused = true)]
    async fn shut_down_wakes_idle_workers_and_drained_waits_for_in_flight() {
        let q: WorkQueue<&'static str> = WorkQueue::new(RateLimit::default());
        let idle = {
            let q = q.clone();
            tokio::spawn(async move { q.get().await.map(|(k, _)| k) })
        };
        tokio::task::yield_now().await;
        q.add("a");
        assert_eq!(idle.await.unwrap(), Some("a"));
        let idle = {
            let q = q.clone();
            tokio::spawn(async move { q.get().await.map(|(k, _)| k) })
        };
        tokio::task::yield_now().await;
        q.shut_down();
        assert_eq!(idle.await.unwrap(), None, "an idle worker is released");
        let drained = {
            let q = q.clone();
            tokio::spawn(async move { q.drained().await })
        };
        tokio::task::yield_now().await;
        assert!(!drained.is_finished(), "a key is still in flight");
        q.done(&"a");
        drained.await.unwrap();
    }
}
