//! Expectations, as in client-go's ReplicaSet controller: after a reconcile
//! creates or deletes children, its key is not reconciled again until the
//! cache shows those writes (or a timeout passes), so a plugin never acts
//! twice on a picture that predates its own writes — say, creating pods
//! with `generateName` twice.
//!
//! [`Expectations`] is plain bookkeeping: time comes in as `now`, and what
//! the caches show comes in through a lookup the caller passes, so it is
//! unit-tested without informers or a clock.

use std::collections::HashMap;
use std::time::Duration;

use tokio::time::Instant;

use crate::model::{ObjectKey, ObjectRef};

/// What the caches show of one object a reconcile wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Sighting {
    pub cached: Cached,
    /// The resourceVersion the object's kind's cache reflects (the highest,
    /// when several caches hold the kind).
    pub cache_version: Option<u64>,
}

impl Sighting {
    /// What one written object's cache entry (its state and version) shows,
    /// and, when the plugin reads its kind through an index (an indexed
    /// `owns` watch), the version the index has it filed at (`Some(None)`:
    /// not filed). The reconcile reads the index, so the object counts as
    /// the index has it: a create the cache holds but the index has yet to
    /// file is not seen (and the cache's version, past the create, must
    /// not stand in for it); a delete the index has yet to file is not
    /// either.
    pub fn of(
        cached: Option<(Cached, u64)>,
        filed: Option<Option<u64>>,
        cache_version: Option<u64>,
    ) -> Sighting {
        let (cached, cache_version) = match (cached, filed) {
            (cached, None) => (cached.map_or(Cached::Absent, |(c, _)| c), cache_version),
            (Some((c, version)), Some(Some(at))) if at == version => (c, cache_version),
            (Some(_), Some(Some(_))) => (Cached::Present, cache_version),
            (Some(_), Some(None)) => (Cached::Absent, None),
            (None, Some(Some(_))) => (Cached::Present, cache_version),
            (None, Some(None)) => (Cached::Absent, cache_version),
        };
        Sighting {
            cached,
            cache_version,
        }
    }
}

/// One object as the cache holds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Cached {
    Absent,
    Present,
    /// Present, with a deletionTimestamp.
    Deleting,
}

/// Writes of one reconcile the cache has yet to show.
#[derive(Debug)]
struct Expectation {
    creates: Vec<ObjectRef>,
    /// The server's version of the newest create: a cache at or past it
    /// that lacks a created object saw it deleted (perhaps by a relist that
    /// never showed it at all), so there is nothing left to wait for.
    created_version: Option<u64>,
    deletes: Vec<ObjectRef>,
    deadline: Instant,
}

/// Whether a key may be reconciled now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Pending {
    /// Nothing to wait for (any expectation was met and is forgotten).
    Clear,
    /// The cache has not shown the key's writes yet: look again after this.
    Wait(Duration),
    /// The deadline passed without the cache showing them; forgotten, so
    /// the key goes on (a last resort, worth a warning).
    TimedOut,
}

/// The expectations of one plugin's keys.
#[derive(Debug)]
pub(super) struct Expectations {
    pending: HashMap<ObjectKey, Expectation>,
    /// How long a key waits for its writes at most.
    timeout: Duration,
}

impl Expectations {
    pub fn new(timeout: Duration) -> Self {
        Self {
            pending: HashMap::new(),
            timeout,
        }
    }

    /// Records what a reconcile of `key` finished at `now` created and
    /// deleted (of the kinds whose caches the lookup reads), replacing any
    /// earlier expectation; nothing when it did neither.
    pub fn expect(
        &mut self,
        key: &ObjectKey,
        creates: Vec<ObjectRef>,
        created_version: Option<u64>,
        deletes: Vec<ObjectRef>,
        now: Instant,
    ) {
        if creates.is_empty() && deletes.is_empty() {
            return;
        }
        self.pending.insert(
            key.clone(),
            Expectation {
                creates,
                created_version,
                deletes,
                deadline: now + self.timeout,
            },
        );
    }

    /// Whether `key` must still wait at `now`, judged by what `lookup`
    /// says the caches show: every create cached (or its kind's cache past
    /// the create's version), every delete gone or going.
    pub fn pending(
        &mut self,
        key: &ObjectKey,
        now: Instant,
        lookup: impl Fn(&ObjectRef) -> Sighting,
    ) -> Pending {
        let Some(e) = self.pending.get(key) else {
            return Pending::Clear;
        };
        let created = |r: &ObjectRef| {
            let seen = lookup(r);
            seen.cached != Cached::Absent
                || e.created_version
                    .is_some_and(|want| seen.cache_version.is_some_and(|have| have >= want))
        };
        let deleted = |r: &ObjectRef| lookup(r).cached != Cached::Present;
        let seen = e.creates.iter().all(created) && e.deletes.iter().all(deleted);
        if seen {
            self.pending.remove(key);
            return Pending::Clear;
        }
        if now >= e.deadline {
            self.pending.remove(key);
            return Pending::TimedOut;
        }
        Pending::Wait(e.deadline - now)
    }

    /// Keys waiting for their writes.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.pending.len()
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn an_indexed_child_is_seen_as_its_index_has_it() {
        use super::{Cached::*, Sighting};
        let seen = |cached, filed, version| {
            let s = Sighting::of(cached, filed, version);
            (s.cached, s.cache_version)
        };
        // Not indexed: as the cache has it.
        assert_eq!(seen(Some((Present, 5)), None, Some(9)), (Present, Some(9)));
        assert_eq!(seen(None, None, Some(9)), (Absent, Some(9)));
        // Filed at the cached version: as the cache has it.
        assert_eq!(
            seen(Some((Deleting, 5)), Some(Some(5)), Some(9)),
            (Deleting, Some(9))
        );
        // Cached, not yet filed: not seen, and the cache's version (past
        // the create) does not count either.
        assert_eq!(
            seen(Some((Present, 5)), Some(None), Some(9)),
            (Absent, None)
        );
        // Filed at an older version: it exists.
        assert_eq!(
            seen(Some((Deleting, 7)), Some(Some(5)), Some(9)),
            (Present, Some(9))
        );
        // Gone from the cache, still filed: the delete is not seen yet.
        assert_eq!(seen(None, Some(Some(5)), Some(9)), (Present, Some(9)));
        assert_eq!(seen(None, Some(None), Some(9)), (Absent, Some(9)));
    }

    use super::*;

    const TIMEOUT: Duration = Duration::from_secs(30);

    fn pod(name: &str) -> ObjectRef {
        ObjectRef {
            api_version: "v1".into(),
            kind: "Pod".into(),
            namespace: Some("ns".into()),
            name: name.into(),
        }
    }

    fn key() -> ObjectKey {
        ObjectKey::new(Some("ns"), "rs")
    }

    /// A lookup over a fixed picture: (name, cached), and the cache's version.
    fn caches<'a>(
        objects: &'a [(&'a str, Cached)],
        version: Option<u64>,
    ) -> impl Fn(&ObjectRef) -> Sighting + 'a {
        move |r| Sighting {
            cached: objects
                .iter()
                .find(|(n, _)| *n == r.name)
                .map_or(Cached::Absent, |(_, c)| *c),
            cache_version: version,
        }
    }

    #[test]
    fn a_key_waits_until_its_creates_and_deletes_show() {
        let t0 = Instant::now();
        let mut e = Expectations::new(TIMEOUT);
        e.expect(&key(), vec![pod("a"), pod("b")], None, vec![pod("old")], t0);
        let t1 = t0 + Duration::from_secs(1);
        let half = [("a", Cached::Present), ("old", Cached::Present)];
        assert_eq!(
            e.pending(&key(), t1, caches(&half, None)),
            Pending::Wait(TIMEOUT - Duration::from_secs(1))
        );
        // Both creates cached; the delete still shows as going.
        let shown = [
            ("a", Cached::Present),
            ("b", Cached::Deleting),
            ("old", Cached::Deleting),
        ];
        assert_eq!(e.pending(&key(), t1, caches(&shown, None)), Pending::Clear);
        assert_eq!(e.len(), 0, "a met expectation is forgotten");
        assert_eq!(e.pending(&key(), t1, caches(&[], None)), Pending::Clear);
    }

    #[test]
    fn a_cache_past_the_create_saw_it_deleted_since() {
        let t0 = Instant::now();
        let mut e = Expectations::new(TIMEOUT);
        e.expect(&key(), vec![pod("a")], Some(40), Vec::new(), t0);
        assert!(matches!(
            e.pending(&key(), t0, caches(&[], Some(39))),
            Pending::Wait(_)
        ));
        assert!(matches!(
            e.pending(&key(), t0, caches(&[], None)),
            Pending::Wait(_)
        ));
        assert_eq!(e.pending(&key(), t0, caches(&[], Some(40))), Pending::Clear);
    }

    #[test]
    fn the_deadline_is_the_last_resort() {
        let t0 = Instant::now();
        let mut e = Expectations::new(TIMEOUT);
        e.expect(&key(), Vec::new(), None, vec![pod("old")], t0);
        let still = [("old", Cached::Present)];
        assert!(matches!(
            e.pending(&key(), t0 + TIMEOUT - Duration::from_millis(1), caches(&still, None)),
            Pending::Wait(d) if d == Duration::from_millis(1)
        ));
        assert_eq!(
            e.pending(&key(), t0 + TIMEOUT, caches(&still, None)),
            Pending::TimedOut
        );
        assert_eq!(
            e.pending(&key(), t0 + TIMEOUT, caches(&still, None)),
            Pending::Clear
        );
    }

    #[test]
    fn a_reconcile_that_wrote_nothing_expects_nothing_and_a_later_one_replaces() {
        let t0 = Instant::now();
        let mut e = Expectations::new(TIMEOUT);
        e.expect(&key(), Vec::new(), None, Vec::new(), t0);
        assert_eq!(e.len(), 0);
        e.expect(&key(), vec![pod("a")], None, Vec::new(), t0);
        e.expect(&key(), vec![pod("b")], None, Vec::new(), t0);
        let a_only = [("a", Cached::Present)];
        assert!(matches!(
            e.pending(&key(), t0, caches(&a_only, None)),
            Pending::Wait(_)
        ));
        let other = ObjectKey::new(Some("ns"), "other");
        assert_eq!(e.pending(&other, t0, caches(&[], None)), Pending::Clear);
    }
}
