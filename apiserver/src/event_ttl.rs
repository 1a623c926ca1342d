//! Events expire, as kube-apiserver's do (`--event-ttl`, an hour by
//! default): an Event not written for the time to live is deleted, so a
//! long-running server does not keep every `Scheduled` and `Started` it
//! was ever told. kube hands each event's key an etcd lease renewed on
//! every write; here the last write is read from the event itself, the
//! newest of its `creationTimestamp` and its managers' `time`s (which each
//! create, update and patch sets), so it survives a restart.

use std::time::Duration;

use serde_json::Value;

use crate::state::State;
use crate::time::parse_rfc3339;

/// kube-apiserver's default `--event-ttl`.
pub(crate) const DEFAULT: Duration = Duration::from_secs(60 * 60);

/// Core Events' table (`events.k8s.io` ones are stored there too).
const EVENTS: &str = "/events";

/// When an event was last written, in seconds since the epoch (kept with
/// each version of it, so a sweep parses each version once).
#[derive(Debug, Clone, Copy)]
struct LastWrite(i64);

fn last_write(event: &Value) -> LastWrite {
    let meta = &event["metadata"];
    let managers = meta["managedFields"].as_array().into_iter().flatten();
    let at = std::iter::once(&meta["creationTimestamp"])
        .chain(managers.map(|m| &m["time"]))
        .filter_map(|t| parse_rfc3339(t.as_str()?))
        .max()
        .unwrap_or(0);
    LastWrite(at)
}

/// Deletes the events last written `ttl` or longer before `now` (seconds
/// since the epoch); returns how many.
pub(crate) fn expire(st: &mut State, now: i64, ttl: Duration) -> usize {
    let ttl = i64::try_from(ttl.as_secs()).unwrap_or(i64::MAX);
    let expired: Vec<(String, String)> = st
        .list(EVENTS, None)
        .iter()
        .filter(|o| o.derived(last_write).0.saturating_add(ttl) <= now)
        .map(|o| (o.attrs.namespace.to_string(), o.attrs.name.to_string()))
        .collect();
    for (ns, name) in &expired {
        st.write(EVENTS, ns, name, None);
    }
    expired.len()
}

/// How often a server whose events live `ttl` looks for expired ones: a
/// quarter of it, between a second and a minute.
pub(crate) fn sweep_every(ttl: Duration) -> Duration {
    (ttl / 4).clamp(Duration::from_secs(1), Duration::from_secs(60))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::storage::Storage;

    fn event(name: &str, created: &str, managed: &[&str]) -> Value {
        let managers: Vec<Value> = managed
            .iter()
            .map(|t| json!({"manager": "m", "operation": "Update", "time": t}))
            .collect();
        json!({"apiVersion": "v1", "kind": "Event",
            "metadata": {"name": name, "namespace": "a", "creationTimestamp": created, "managedFields": managers},
            "involvedObject": {"kind": "Pod", "name": "p", "namespace": "a"}, "reason": "Started"})
    }

    #[test]
    fn an_event_expires_a_ttl_after_its_last_write() {
        let (s, _) = Storage::in_memory();
        let history = crate::state::History {
            events: 64,
            bytes: usize::MAX,
            buffer: 64,
            commit_backlog: 64,
        };
        let mut st = State::new(s, 1, vec![], history);
        let t0 = parse_rfc3339("2026-01-01T00:00:00Z").unwrap();
        st.write(
            EVENTS,
            "a",
            "old",
            Some(event("old", "2026-01-01T00:00:00Z", &[])),
        );
        // Created as long ago, but counted again (patched) since.
        let bumped = event("bumped", "2026-01-01T00:00:00Z", &["2026-01-01T00:50:00Z"]);
        st.write(EVENTS, "a", "bumped", Some(bumped));
        st.write(
            "/configmaps",
            "a",
            "c",
            Some(json!({"metadata": {"name": "c", "creationTimestamp": "2026-01-01T00:00:00Z"}})),
        );

        let hour = Duration::from_secs(3600);
        assert_eq!(expire(&mut st, t0 + 3599, hour), 0);
        assert_eq!(expire(&mut st, t0 + 3600, hour), 1);
        assert!(st.get(EVENTS, "a", "old").is_none());
        assert!(st.get(EVENTS, "a", "bumped").is_some());
        assert_eq!(expire(&mut st, t0 + 3000 + 3600, hour), 1);
        assert!(st.list(EVENTS, None).is_empty());
        // Only events.
        assert!(st.get("/configmaps", "a", "c").is_some());
    }

    #[test]
    fn sweeps_are_a_quarter_of_the_ttl_within_bounds() {
        assert_eq!(sweep_every(DEFAULT), Duration::from_secs(60));
        assert_eq!(sweep_every(Duration::from_secs(8)), Duration::from_secs(2));
        assert_eq!(sweep_every(Duration::from_secs(1)), Duration::from_secs(1));
    }
}
