//! Events expire, as kube-apiserver's do (`--event-ttl`, an hour by
//! default): an Event not written for the time to live is deleted, so a
//! long-running server does not keep every `Scheduled` and `Started` it
//! was ever told. kube hands each event's key an etcd lease renewed on
//! every write; here the last write is read from the event itself, the
//! newest of its `creationTimestamp` and its managers' `time`s (which each
//! create, update and patch sets), so it survives a restart.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use crate::state::{Obj, State};
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

/// The events of `events` last written `ttl` or longer before `now`
/// (seconds since the epoch). Run without the store's lock: the first
/// sweep after a burst reads tens of thousands of events.
pub(crate) fn expired(events: &[Arc<Obj>], now: i64, ttl: Duration) -> Vec<Arc<Obj>> {
    let ttl = i64::try_from(ttl.as_secs()).unwrap_or(i64::MAX);
    events
        .iter()
        .filter(|o| o.derived(last_write).0.saturating_add(ttl) <= now)
        .cloned()
        .collect()
}

/// Deletes `expired` events that are still the version that expired (one
/// written since lives on); returns how many.
pub(crate) fn delete(st: &mut State, expired: &[Arc<Obj>]) -> usize {
    let mut deleted = 0;
    for o in expired {
        let (ns, name) = (&*o.attrs.namespace, &*o.attrs.name);
        if st.get(EVENTS, ns, name).is_some_and(|now| now.rv == o.rv) {
            st.write(EVENTS, ns, name, None);
            deleted += 1;
        }
    }
    deleted
}

/// Every event now, to look at without the lock.
pub(crate) fn all(st: &State) -> Vec<Arc<Obj>> {
    st.list(EVENTS, None)
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
        let sweep = |st: &mut State, now: i64| {
            let expired = expired(&all(st), now, hour);
            delete(st, &expired)
        };
        assert_eq!(sweep(&mut st, t0 + 3599), 0);
        assert_eq!(sweep(&mut st, t0 + 3600), 1);
        assert!(st.get(EVENTS, "a", "old").is_none());
        assert!(st.get(EVENTS, "a", "bumped").is_some());
        // Written again between the look and the delete: it stays.
        let late = expired(&all(&st), t0 + 3000 + 3600, hour);
        let renewed = event("bumped", "2026-01-01T00:00:00Z", &["2026-01-01T01:40:00Z"]);
        st.write(EVENTS, "a", "bumped", Some(renewed));
        assert_eq!(delete(&mut st, &late), 0);
        assert_eq!(sweep(&mut st, t0 + 6000 + 3600), 1);
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
