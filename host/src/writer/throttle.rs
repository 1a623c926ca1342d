//! Per-plugin write rate limits: every request the writer sends for a
//! plugin (its writes, finalizers and events) first takes a token from that
//! plugin's bucket, as client-go's `flowcontrol.NewTokenBucketRateLimiter`
//! (QPS and burst) does for one client. A throttled request waits — on a
//! timer, never holding a thread — and is then sent; it is never dropped.
//!
//! Each plugin also has at most [`PLUGIN_REQUESTS_IN_FLIGHT`] requests in
//! flight, half of what the host's client lets out at once
//! ([`crate::client::MAX_REQUESTS_IN_FLIGHT`]): one plugin's burst of
//! writes (a hundred workers creating pods) then queues behind its own
//! turns, never ahead of every other plugin's requests for all of the
//! host's.
//!
//! The pure core is the host's token bucket (`crate::bucket`, which the
//! work queue's retry limit uses too); [`Throttle`] wraps one in a lock and
//! a sleep and counts the time waited; [`Throttles`] holds one per plugin.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{Semaphore, SemaphorePermit};
use tokio::time::Instant;

use crate::bucket::Bucket;
use crate::histogram::{Histogram, HistogramSnapshot};

/// How fast one plugin may send requests: `qps` tokens a second refill a
/// bucket of `burst`. A `qps` of 0 means unlimited (the host's default; see
/// `docs/operations.md` for why); the default burst is client-go's (10).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WriteLimit {
    pub qps: f64,
    pub burst: u32,
}

impl WriteLimit {
    /// client-go's `DefaultBurst`.
    pub const DEFAULT_BURST: u32 = 10;

    /// A limit, checked: `qps` finite and not negative, and a burst of at
    /// least 1 when there is a limit (a bucket of 0 would never let a
    /// request through).
    pub fn new(qps: f64, burst: u32) -> Result<Self, String> {
        if !qps.is_finite() || qps < 0.0 {
            return Err(format!(
                "write QPS {qps} must be a number of at least 0 (0: unlimited)"
            ));
        }
        if qps > 0.0 && burst == 0 {
            return Err(format!(
                "write burst must be at least 1 with a write QPS of {qps}"
            ));
        }
        Ok(WriteLimit { qps, burst })
    }

    pub fn is_unlimited(&self) -> bool {
        self.qps == 0.0
    }
}

impl Default for WriteLimit {
    /// Unlimited, with client-go's burst for when a QPS is set.
    fn default() -> Self {
        WriteLimit {
            qps: 0.0,
            burst: Self::DEFAULT_BURST,
        }
    }
}

/// Requests one plugin may have in flight at once (see the module docs).
pub const PLUGIN_REQUESTS_IN_FLIGHT: usize = crate::client::MAX_REQUESTS_IN_FLIGHT / 2;

/// One plugin's limit, its bucket and what waiting for it cost.
#[derive(Debug)]
pub(crate) struct Throttle {
    limit: WriteLimit,
    /// The plugin's requests in flight ([`PLUGIN_REQUESTS_IN_FLIGHT`]).
    turns: Semaphore,
    bucket: Mutex<Bucket>,
    waited_nanos: AtomicU64,
    /// Every request's wait (zero when a token was there), as client-go's
    /// `rest_client_rate_limiter_duration_seconds`.
    waits: Histogram,
}

impl Throttle {
    fn new(limit: WriteLimit) -> Self {
        Self {
            limit,
            turns: Semaphore::new(PLUGIN_REQUESTS_IN_FLIGHT),
            bucket: Mutex::new(Bucket::new(limit.qps, limit.burst)),
            waited_nanos: AtomicU64::new(0),
            waits: Histogram::default(),
        }
    }

    /// Waits for this plugin's next token (at once when unlimited), then
    /// for one of its turns: the request is sent while the turn is held.
    pub(crate) async fn wait(&self) -> SemaphorePermit<'_> {
        self.token().await;
        self.turns
            .acquire()
            .await
            .expect("the semaphore is never closed")
    }

    async fn token(&self) {
        if self.limit.is_unlimited() {
            return;
        }
        let delay = self
            .bucket
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .reserve(Instant::now());
        self.waits.observe(delay);
        if !delay.is_zero() {
            self.waited_nanos
                .fetch_add(delay.as_nanos() as u64, Ordering::Relaxed);
            tokio::time::sleep(delay).await;
        }
    }
}

/// One plugin's write limit, the time its requests waited for it, and the
/// events held back from the server.
#[derive(Debug, Clone)]
pub struct ThrottleStats {
    pub plugin: String,
    pub limit: WriteLimit,
    /// Total time requests waited for a token.
    pub waited: Duration,
    /// Each request's wait, when the plugin has a limit.
    pub waits: HistogramSnapshot,
    /// Events the writer dropped as spam (more than 25 about one object).
    pub events_dropped: u64,
}

/// The write limit of every plugin, by name; a plugin not set explicitly
/// gets the host's default.
#[derive(Debug, Default)]
pub(crate) struct Throttles {
    pub(super) default: WriteLimit,
    plugins: Mutex<HashMap<String, Arc<Throttle>>>,
}

impl Throttles {
    pub(crate) fn new(default: WriteLimit) -> Self {
        Self {
            default,
            plugins: Mutex::default(),
        }
    }

    /// The throttle `plugin`'s requests go through.
    pub(crate) fn of(&self, plugin: &str) -> Arc<Throttle> {
        let mut plugins = self.plugins.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(t) = plugins.get(plugin) {
            return t.clone();
        }
        let t = Arc::new(Throttle::new(self.default));
        plugins.insert(plugin.to_owned(), t.clone());
        t
    }

    /// Sets `plugin`'s limit (`None`: the host's default). The same limit
    /// keeps its bucket, so a reload does not hand out a fresh burst.
    pub(crate) fn set(&self, plugin: &str, limit: Option<WriteLimit>) {
        let limit = limit.unwrap_or(self.default);
        let mut plugins = self.plugins.lock().unwrap_or_else(|e| e.into_inner());
        if plugins.get(plugin).is_some_and(|t| t.limit == limit) {
            return;
        }
        plugins.insert(plugin.to_owned(), Arc::new(Throttle::new(limit)));
    }

    /// Forgets a plugin that no longer runs.
    pub(crate) fn remove(&self, plugin: &str) {
        self.plugins
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(plugin);
    }

    /// Every plugin's limit and waits, by name.
    pub(crate) fn stats(&self) -> Vec<ThrottleStats> {
        let plugins = self.plugins.lock().unwrap_or_else(|e| e.into_inner());
        let mut rows: Vec<ThrottleStats> = plugins
            .iter()
            .map(|(plugin, t)| ThrottleStats {
                plugin: plugin.clone(),
                limit: t.limit,
                waited: Duration::from_nanos(t.waited_nanos.load(Ordering::Relaxed)),
                waits: t.waits.snapshot(),
                events_dropped: 0,
            })
            .collect();
        rows.sort_by(|a, b| a.plugin.cmp(&b.plugin));
        rows
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limit(qps: f64, burst: u32) -> WriteLimit {
        WriteLimit::new(qps, burst).unwrap()
    }

    /// A plugin's bucket (full, so when its clock starts changes nothing).
    fn bucket(limit: WriteLimit) -> Bucket {
        Bucket::new(limit.qps, limit.burst)
    }

    #[test]
    fn a_full_bucket_lets_a_burst_through_then_spaces_requests_by_the_rate() {
        let t0 = Instant::now();
        let mut b = bucket(limit(10.0, 3));
        for _ in 0..3 {
            assert_eq!(b.reserve(t0), Duration::ZERO);
        }
        // Empty: each next request waits one more tenth of a second.
        assert_eq!(b.reserve(t0), Duration::from_millis(100));
        assert_eq!(b.reserve(t0), Duration::from_millis(200));
    }

    #[test]
    fn tokens_refill_at_the_rate_up_to_the_burst() {
        let t0 = Instant::now();
        let mut b = bucket(limit(10.0, 2));
        b.reserve(t0);
        b.reserve(t0);
        // A tenth of a second later one token is back.
        let t1 = t0 + Duration::from_millis(100);
        assert_eq!(b.reserve(t1), Duration::ZERO);
        // Long idle refills only up to the burst.
        let t2 = t1 + Duration::from_secs(60);
        assert_eq!(b.reserve(t2), Duration::ZERO);
        assert_eq!(b.reserve(t2), Duration::ZERO);
        assert!(b.reserve(t2) > Duration::ZERO);
    }

    #[test]
    fn a_clock_read_before_the_last_reservation_refills_nothing() {
        let t0 = Instant::now();
        let later = t0 + Duration::from_millis(100);
        let mut b = bucket(limit(10.0, 1));
        assert_eq!(b.reserve(later), Duration::ZERO);
        assert_eq!(b.reserve(t0), Duration::from_millis(100));
    }

    #[test]
    fn over_any_window_at_most_burst_plus_rate_times_elapsed_get_through() {
        // Requests arriving faster than the rate, at irregular instants: the
        // ones whose wait ends within the window are bounded.
        let (qps, burst) = (7.0, 4);
        let t0 = Instant::now();
        let mut b = bucket(limit(qps, burst));
        let mut sent = Vec::new();
        let mut now = t0;
        for i in 0..500u64 {
            now += Duration::from_micros(1_000 + (i * 7919) % 20_000);
            sent.push(now + b.reserve(now));
        }
        for end in sent.iter().copied() {
            let through = sent.iter().filter(|&&s| s <= end).count() as f64;
            let bound = f64::from(burst) + qps * end.duration_since(t0).as_secs_f64();
            assert!(through <= bound + 1e-9, "{through} > {bound}");
        }
        // And the rate is used, not just respected: the last request went
        // out within one interval of the rate's schedule.
        let last = sent.last().unwrap().duration_since(t0).as_secs_f64();
        let ideal = (500.0 - f64::from(burst)) / qps;
        assert!(last <= ideal + 1.0 / qps + 1e-9, "{last} vs {ideal}");
    }

    #[test]
    fn unlimited_never_waits_and_limits_are_checked() {
        let t0 = Instant::now();
        let mut b = bucket(WriteLimit::default());
        for _ in 0..10_000 {
            assert_eq!(b.reserve(t0), Duration::ZERO);
        }
        assert!(WriteLimit::new(-1.0, 5).is_err());
        assert!(WriteLimit::new(f64::NAN, 5).is_err());
        assert!(WriteLimit::new(5.0, 0).is_err());
        assert!(WriteLimit::new(0.0, 0).unwrap().is_unlimited());
    }

    #[test]
    fn setting_the_same_limit_keeps_the_bucket() {
        let throttles = Throttles::new(WriteLimit::default());
        assert!(throttles.of("a").limit.is_unlimited());
        throttles.set("a", Some(limit(5.0, 1)));
        let first = throttles.of("a");
        throttles.set("a", Some(limit(5.0, 1)));
        assert!(Arc::ptr_eq(&first, &throttles.of("a")));
        throttles.set("a", None);
        assert!(throttles.of("a").limit.is_unlimited());
        throttles.remove("a");
        assert_eq!(throttles.stats().len(), 0);
    }

    #[tokio::test]
    async fn a_plugin_has_at_most_its_share_of_requests_in_flight() {
        let t = Throttle::new(WriteLimit::default());
        let mut turns = Vec::new();
        for _ in 0..PLUGIN_REQUESTS_IN_FLIGHT {
            turns.push(t.wait().await);
        }
        let next = tokio::time::timeout(Duration::from_millis(50), t.wait()).await;
        assert!(next.is_err(), "a request past the plugin's share went out");
        turns.pop();
        let next = tokio::time::timeout(Duration::from_secs(5), t.wait()).await;
        assert!(next.is_ok(), "a freed turn was not taken");
    }

    #[tokio::test(start_paused = true)]
    async fn a_throttled_request_waits_on_a_timer_and_the_wait_is_counted() {
        let t = Throttle::new(limit(2.0, 1));
        let started = Instant::now();
        drop(t.wait().await);
        drop(t.wait().await);
        drop(t.wait().await);
        // Paused time moves only by the sleeps: two half-second waits.
        assert_eq!(started.elapsed(), Duration::from_secs(1));
        assert_eq!(
            t.waited_nanos.load(Ordering::Relaxed),
            Duration::from_secs(1).as_nanos() as u64
        );
    }
}
