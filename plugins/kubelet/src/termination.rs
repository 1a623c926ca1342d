//! Graceful deletion: how long a deleted pod's containers take to stop.
//!
//! The API server marks a deleted pod with `deletionTimestamp` (the moment
//! its grace period ends) and `deletionGracePeriodSeconds`. The kubelet then
//! runs each running container's `preStop` hook, bounded by the grace
//! period, sends SIGTERM with what is left of it, and kills the container
//! when that runs out, always allowing at least 2 s after the hook
//! (`killContainer` in `pkg/kubelet/kuberuntime`). A simulated container
//! ignores SIGTERM, so it stops when it is killed: the hook's time counts
//! within the grace period, not on top of it.

use windlass_sdk::Time;

use crate::view::{Container, PodMeta};

/// Kubelet's minimal shutdown window after a `preStop` hook.
const MIN_SHUTDOWN_SECS: i64 = 2;

/// When deletion started and how long the containers were given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Deletion {
    pub started: Time,
    pub grace_secs: i64,
}

impl Deletion {
    /// The pod's deletion, if it is being deleted.
    pub(crate) fn of(meta: &PodMeta<'_>) -> Option<Self> {
        let ends = Time::parse(meta.deletion_timestamp.as_deref()?)?;
        let grace_secs = meta.deletion_grace_period_seconds.unwrap_or(0).max(0);
        Some(Deletion {
            started: ends - std::time::Duration::from_secs(grace_secs.unsigned_abs()),
            grace_secs,
        })
    }

    /// When the kubelet kills `container`, running when deletion started.
    pub(crate) fn kill_at(&self, container: &Container<'_>) -> Time {
        let hook = pre_stop_secs(container).map(|s| s.clamp(0, self.grace_secs));
        let secs = match hook {
            Some(hook) => hook + (self.grace_secs - hook).max(MIN_SHUTDOWN_SECS),
            None => self.grace_secs.max(MIN_SHUTDOWN_SECS),
        };
        self.started + std::time::Duration::from_secs(secs.unsigned_abs())
    }
}

/// How long `container`'s `preStop` hook runs, if it has one: a `sleep`
/// action's seconds, the `N` of an exec hook that runs `sleep N`, else no
/// time at all (an HTTP or exec hook that returns at once).
pub(crate) fn pre_stop_secs(container: &Container<'_>) -> Option<i64> {
    let hook = container.lifecycle.pre_stop.as_ref()?;
    if let Some(sleep) = &hook.sleep {
        return Some(sleep.seconds);
    }
    let words = hook
        .exec
        .iter()
        .flat_map(|e| e.command.iter())
        .flat_map(|arg| arg.split(|c: char| c.is_whitespace() || c == ';' || c == '&'));
    let mut after_sleep = false;
    for word in words.filter(|w| !w.is_empty()) {
        if after_sleep {
            let number = word.strip_suffix('s').unwrap_or(word);
            return Some(number.parse::<f64>().map_or(0, |s| s.max(0.0) as i64));
        }
        after_sleep = word == "sleep" || word.ends_with("/sleep");
    }
    Some(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn container(json: &str) -> Container<'_> {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn pre_stop_durations() {
        for (json, want) in [
            (r#"{"name":"c"}"#, None),
            (
                r#"{"name":"c","lifecycle":{"preStop":{"sleep":{"seconds":7}}}}"#,
                Some(7),
            ),
            (
                r#"{"name":"c","lifecycle":{"preStop":{"exec":{"command":["sleep","5"]}}}}"#,
                Some(5),
            ),
            (
                r#"{"name":"c","lifecycle":{"preStop":{"exec":{"command":["/bin/sh","-c","sleep 3 && nginx -s quit"]}}}}"#,
                Some(3),
            ),
            (
                r#"{"name":"c","lifecycle":{"preStop":{"exec":{"command":["/bin/sleep","2s"]}}}}"#,
                Some(2),
            ),
            (
                r#"{"name":"c","lifecycle":{"preStop":{"httpGet":{"port":80}}}}"#,
                Some(0),
            ),
        ] {
            assert_eq!(pre_stop_secs(&container(json)), want, "{json}");
        }
    }

    #[test]
    fn the_hook_counts_within_the_grace_period() {
        let started = Time::parse("2026-01-01T00:00:00Z").unwrap();
        let d = |grace_secs| Deletion {
            started,
            grace_secs,
        };
        let at = |d: Deletion, json| d.kill_at(&container(json)).since(started).as_secs();
        let plain = r#"{"name":"c"}"#;
        let hook10 = r#"{"name":"c","lifecycle":{"preStop":{"sleep":{"seconds":10}}}}"#;
        let hook40 = r#"{"name":"c","lifecycle":{"preStop":{"sleep":{"seconds":40}}}}"#;
        assert_eq!(at(d(30), plain), 30);
        assert_eq!(at(d(30), hook10), 30);
        // A hook that uses up the grace period still leaves 2 s for SIGTERM.
        assert_eq!(at(d(30), hook40), 32);
        assert_eq!(at(d(1), plain), 2);
    }
}
