//! A latency histogram that is cheap to record into from any thread (two
//! relaxed atomic adds, no lock, no allocation) and can be read at any time
//! as a [`HistogramSnapshot`] with quantiles.
//!
//! The buckets are fixed: ten per decade (1, 1.25, 1.5, 2, 2.5, 3, 4, 5, 6,
//! 8) from 1 µs to 100 s, so a quantile read from them is within about 25%
//! before interpolation. Prometheus gets the 1-2.5-5 subset of those bounds
//! ([`EXPORTED_BOUNDS`]), whose cumulative counts are exact.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Upper bounds of the buckets, nanoseconds; one more bucket above holds
/// everything slower than the last.
const BOUNDS: [u64; 81] = bounds();

/// Mantissas of one decade's bounds, in hundredths.
const STEPS: [u64; 10] = [100, 125, 150, 200, 250, 300, 400, 500, 600, 800];

const fn bounds() -> [u64; 81] {
    let mut out = [0u64; 81];
    let mut decade = 0;
    let mut scale = 1_000u64; // 1 µs in ns
    while decade < 8 {
        let mut i = 0;
        while i < STEPS.len() {
            out[decade * 10 + i] = STEPS[i] * scale / 100;
            i += 1;
        }
        scale *= 10;
        decade += 1;
    }
    out[80] = scale; // 100 s
    out
}

/// Bucket bounds exported to Prometheus, seconds: 1-2.5-5 per decade from
/// 10 µs to 100 s. Each is one of `BOUNDS`.
pub const EXPORTED_BOUNDS: [f64; 22] = [
    0.000_01, 0.000_025, 0.000_05, 0.000_1, 0.000_25, 0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025,
    0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 25.0, 50.0, 100.0,
];

/// Durations, bucketed. Shared by reference; every method takes `&self`.
#[derive(Debug)]
pub struct Histogram {
    counts: [AtomicU64; BOUNDS.len() + 1],
    sum_nanos: AtomicU64,
}

impl Default for Histogram {
    fn default() -> Self {
        Self {
            counts: std::array::from_fn(|_| AtomicU64::new(0)),
            sum_nanos: AtomicU64::new(0),
        }
    }
}

impl Histogram {
    pub fn new() -> Self {
        Self::default()
    }

    /// Records one duration.
    pub fn observe(&self, d: Duration) {
        let nanos = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        let bucket = BOUNDS.partition_point(|&b| b < nanos);
        self.counts[bucket].fetch_add(1, Ordering::Relaxed);
        self.sum_nanos.fetch_add(nanos, Ordering::Relaxed);
    }

    /// The counts as of now (each bucket read once; observations racing
    /// with the read may or may not be in it).
    pub fn snapshot(&self) -> HistogramSnapshot {
        HistogramSnapshot {
            counts: self
                .counts
                .iter()
                .map(|c| c.load(Ordering::Relaxed))
                .collect(),
            sum_nanos: self.sum_nanos.load(Ordering::Relaxed),
        }
    }
}

/// A histogram's counts at one moment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HistogramSnapshot {
    /// Per bucket (not cumulative); the last is above every bound.
    counts: Box<[u64]>,
    sum_nanos: u64,
}

impl Default for HistogramSnapshot {
    fn default() -> Self {
        Self {
            counts: vec![0; BOUNDS.len() + 1].into(),
            sum_nanos: 0,
        }
    }
}

impl HistogramSnapshot {
    /// How many durations were recorded.
    pub fn count(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// Their total.
    pub fn sum(&self) -> Duration {
        Duration::from_nanos(self.sum_nanos)
    }

    /// What was recorded after `earlier` (a snapshot of the same histogram).
    pub fn since(&self, earlier: &Self) -> Self {
        Self {
            counts: self
                .counts
                .iter()
                .zip(earlier.counts.iter())
                .map(|(now, then)| now.saturating_sub(*then))
                .collect(),
            sum_nanos: self.sum_nanos.saturating_sub(earlier.sum_nanos),
        }
    }

    /// The `q` quantile (0.5 for the median, 0.99 for p99), interpolated
    /// linearly inside its bucket; `None` when nothing was recorded. Above
    /// the last bound it says the last bound (100 s).
    pub fn quantile(&self, q: f64) -> Option<Duration> {
        let total = self.count();
        if total == 0 {
            return None;
        }
        let rank = (q.clamp(0.0, 1.0) * total as f64).max(1.0);
        let mut below = 0u64;
        for (i, &n) in self.counts.iter().enumerate() {
            if n > 0 && (below + n) as f64 >= rank {
                let Some(&upper) = BOUNDS.get(i) else {
                    return Some(Duration::from_nanos(BOUNDS[BOUNDS.len() - 1]));
                };
                let lower = if i == 0 { 0 } else { BOUNDS[i - 1] };
                let within = (rank - below as f64) / n as f64;
                let nanos = lower as f64 + (upper - lower) as f64 * within;
                return Some(Duration::from_nanos(nanos.round() as u64));
            }
            below += n;
        }
        None
    }

    /// `(upper bound in seconds, count in that bucket)` for Prometheus: the
    /// [`EXPORTED_BOUNDS`] then `+Inf`. Counts are per bucket, not
    /// cumulative (the encoder adds them up).
    pub fn exported_buckets(&self) -> Vec<(f64, u64)> {
        let mut out = Vec::with_capacity(EXPORTED_BOUNDS.len() + 1);
        let mut next = 0;
        for bound in EXPORTED_BOUNDS {
            let nanos = (bound * 1e9).round() as u64;
            let end = BOUNDS.partition_point(|&b| b <= nanos);
            out.push((bound, self.counts[next..end].iter().sum()));
            next = end;
        }
        out.push((f64::INFINITY, self.counts[next..].iter().sum()));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn us(n: u64) -> Duration {
        Duration::from_micros(n)
    }

    #[test]
    fn bounds_run_from_one_microsecond_to_a_hundred_seconds() {
        assert_eq!(BOUNDS[0], 1_000);
        assert_eq!(BOUNDS[10], 10_000);
        assert_eq!(BOUNDS[36], 4_000_000);
        assert_eq!(BOUNDS[80], 100_000_000_000);
        assert!(BOUNDS.windows(2).all(|w| w[0] < w[1]));
        for bound in EXPORTED_BOUNDS {
            let nanos = (bound * 1e9).round() as u64;
            assert!(BOUNDS.contains(&nanos), "{bound} is not a bucket bound");
        }
    }

    #[test]
    fn a_bound_belongs_to_its_own_bucket() {
        let h = Histogram::new();
        h.observe(us(1_000)); // exactly 1 ms: counted as ≤ 1 ms
        h.observe(Duration::from_nanos(1_000_001));
        let buckets = h.snapshot().exported_buckets();
        let at = |s: f64| buckets.iter().find(|(b, _)| *b == s).unwrap().1;
        assert_eq!(at(0.001), 1);
        assert_eq!(at(0.0025), 1);
        assert_eq!(buckets.iter().map(|(_, n)| n).sum::<u64>(), 2);
    }

    #[test]
    fn quantiles_land_in_the_right_bucket() {
        let h = Histogram::new();
        for _ in 0..98 {
            h.observe(us(100));
        }
        h.observe(us(900));
        h.observe(Duration::from_secs(500));
        let s = h.snapshot();
        assert_eq!(s.count(), 100);
        let p50 = s.quantile(0.5).unwrap();
        assert!(p50 > us(80) && p50 <= us(100), "{p50:?}");
        let p99 = s.quantile(0.99).unwrap();
        assert!(p99 > us(800) && p99 <= us(1_000), "{p99:?}");
        assert_eq!(s.quantile(1.0), Some(Duration::from_secs(100)));
        assert_eq!(s.sum(), us(98 * 100 + 900) + Duration::from_secs(500));
        assert_eq!(HistogramSnapshot::default().quantile(0.5), None);
    }

    #[test]
    fn since_subtracts_an_earlier_snapshot() {
        let h = Histogram::new();
        h.observe(Duration::from_secs(2));
        let before = h.snapshot();
        h.observe(us(3));
        h.observe(us(3));
        let delta = h.snapshot().since(&before);
        assert_eq!(delta.count(), 2);
        assert_eq!(delta.sum(), us(6));
        assert!(delta.quantile(0.99).unwrap() <= us(3));
    }

    #[test]
    fn observing_is_safe_from_many_threads() {
        let h = std::sync::Arc::new(Histogram::new());
        let threads: Vec<_> = (0..4)
            .map(|t| {
                let h = h.clone();
                std::thread::spawn(move || {
                    for i in 0..10_000u64 {
                        h.observe(Duration::from_nanos(i * 997 + t));
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(h.snapshot().count(), 40_000);
    }
}
