//! Upstream's back-off before a failed pod is replaced: 10 s, doubling with
//! each failure, at most 6 min, from when the last failure ended.

use std::time::Duration;

use windlass_sdk::Time;

const BASE: Duration = Duration::from_secs(10);
const MAX: Duration = Duration::from_secs(360);

/// The back-off after `failures` failures (none after none).
pub(crate) fn delay(failures: u32) -> Duration {
    match failures {
        0 => Duration::ZERO,
        n => BASE.saturating_mul(1u32 << (n - 1).min(16)).min(MAX),
    }
}

/// How long a replacement must still wait after `failures` failures, the
/// last of which ended at `last`; `None` when it need not.
pub(crate) fn remaining(failures: u32, last: Time, now: Time) -> Option<Duration> {
    let at = last + delay(failures);
    (now < at).then(|| now.until(at))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_delay_doubles_up_to_six_minutes() {
        let secs: Vec<u64> = (0..8).map(|n| delay(n).as_secs()).collect();
        assert_eq!(secs, [0, 10, 20, 40, 80, 160, 320, 360]);
        assert_eq!(delay(u32::MAX), MAX);
    }
}
