//! A token bucket over explicit instants (golang.org/x/time/rate's
//! reservation arithmetic, as client-go's token-bucket rate limiters use
//! it): the work queue's limit on retries across all keys and the writer's
//! per-plugin write limit are both one.

use std::time::Duration;

use tokio::time::Instant;

/// `per_second` tokens a second refill a bucket of `burst`, full at first.
/// A request reserves a token at once — into debt if the bucket is empty —
/// and is told how long to wait for it, so waiting requests queue in order
/// of arrival and the rate holds however many wait: over any window from
/// the first reservation, at most `burst + per_second × elapsed` get
/// through. A rate of 0 is no limit.
#[derive(Debug, Clone)]
pub(crate) struct Bucket {
    per_second: f64,
    burst: u32,
    /// May go below zero: tokens already promised to waiting requests.
    tokens: f64,
    /// When the tokens were last counted; time never runs backwards for the
    /// bucket (a caller that read the clock before another's reservation
    /// refills nothing).
    last: Option<Instant>,
}

impl Bucket {
    pub(crate) fn new(per_second: f64, burst: u32) -> Self {
        Self {
            per_second,
            burst,
            tokens: f64::from(burst),
            last: None,
        }
    }

    /// Takes one token at `now`; returns how long its holder must wait
    /// (zero when a token was there).
    pub(crate) fn reserve(&mut self, now: Instant) -> Duration {
        if self.per_second <= 0.0 {
            return Duration::ZERO;
        }
        self.refill(now);
        self.tokens -= 1.0;
        if self.tokens >= 0.0 {
            Duration::ZERO
        } else {
            Duration::from_secs_f64(-self.tokens / self.per_second)
        }
    }

    /// Takes one token at `now` if one is there (client-go's `TryAccept`):
    /// never waits and never goes into debt.
    pub(crate) fn try_take(&mut self, now: Instant) -> bool {
        if self.per_second <= 0.0 {
            return true;
        }
        self.refill(now);
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }

    fn refill(&mut self, now: Instant) {
        match self.last {
            Some(last) if now <= last => {}
            Some(last) => {
                let refill = now.duration_since(last).as_secs_f64() * self.per_second;
                self.tokens = (self.tokens + refill).min(f64::from(self.burst));
                self.last = Some(now);
            }
            None => self.last = Some(now),
        }
    }
}
