//! client-go's event correlator (`tools/record/events_cache.go`) as plain
//! bookkeeping over explicit instants: what to do with an event a plugin
//! records — create it, bump the count of an earlier one, or drop it.
//!
//! Three rules, with client-go's numbers, so that `kubectl describe` reads
//! the same whichever host recorded the events and a plugin recording in a
//! loop cannot flood the server with Events:
//! - **Repeats** of the exact same event (same source, object, type,
//!   reason and message) bump `count` and `lastTimestamp` of the first.
//! - **Similar events** (same source, object, type and reason, differing
//!   messages): from the tenth distinct message within ten minutes on, they
//!   become one event, `(combined from similar events): <latest message>`,
//!   whose count goes up.
//! - **Spam**: a source may record 25 events about one object, then one
//!   more every five minutes; the rest are dropped (and counted, per plugin,
//!   on `/metrics`), though an Event already sent counts them on its next
//!   bump, as client-go's does.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use hashlink::LruCache;
use tokio::time::Instant;

use crate::bucket::Bucket;
use crate::model::ObjectRef;

/// Entries each of the three caches remembers (client-go's
/// `maxLruCacheEntries`); past this the least recently used is forgotten.
const CACHE_ENTRIES: usize = 4096;
/// Distinct messages of similar events before they are combined.
const AGGREGATE_MAX_EVENTS: usize = 10;
/// How long similar events are remembered since the last of them.
const AGGREGATE_INTERVAL: Duration = Duration::from_secs(600);
/// Events a source may record about one object at once…
const SPAM_BURST: u32 = 25;
/// …and then one every five minutes.
const SPAM_PER_SECOND: f64 = 1.0 / 300.0;
/// The prefix of a combined event's message.
pub(super) const COMBINED: &str = "(combined from similar events): ";

/// Who records events about what: the spam filter's key.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) struct Source {
    pub(super) plugin: String,
    pub(super) regarding: ObjectRef,
    /// The object's uid when known: a recreated object starts afresh.
    pub(super) uid: Option<String>,
}

/// Events that differ only by message.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) struct Similar {
    pub(super) source: Source,
    pub(super) type_: &'static str,
    pub(super) reason: String,
}

/// An event as remembered for counting: exact, or the combined one.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) enum Key {
    Exact(Similar, String),
    Combined(Similar),
}

impl Key {
    /// The events this key stands for, whatever their messages.
    pub(super) fn similar(&self) -> &Similar {
        match self {
            Key::Exact(s, _) | Key::Combined(s) => s,
        }
    }
}

/// An Event object on the server, and its count there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Recorded {
    pub(super) namespace: String,
    pub(super) name: String,
    pub(super) count: u32,
}

/// A request for recorded events: create an Event (`existing: None`) or
/// bump one to `count`, with `message`; remember it under `key`.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Send {
    pub(super) key: Key,
    pub(super) existing: Option<Recorded>,
    pub(super) count: u32,
    pub(super) message: String,
}

/// Messages of similar events seen lately.
struct Messages {
    seen: HashSet<String>,
    last: Instant,
}

/// The correlator's memory; one per writer, keyed by plugin among the rest.
pub(super) struct Correlator {
    spam: LruCache<Source, Bucket>,
    similar: LruCache<Similar, Messages>,
    recorded: LruCache<Key, Recorded>,
    dropped: HashMap<String, u64>,
}

impl Default for Correlator {
    fn default() -> Self {
        Self {
            spam: LruCache::new(CACHE_ENTRIES),
            similar: LruCache::new(CACHE_ENTRIES),
            recorded: LruCache::new(CACHE_ENTRIES),
            dropped: HashMap::new(),
        }
    }
}

impl Correlator {
    /// Decides about events recorded together at `now`, in order: each
    /// `(source, type, reason, message)`. Events that fall under one key
    /// are one request (a create or bump counting them all, with the last
    /// message), so what one outcome records never races itself.
    pub(super) fn decide_all(
        &mut self,
        events: impl IntoIterator<Item = (Source, &'static str, String, String)>,
        now: Instant,
    ) -> Vec<Send> {
        let mut out: Vec<Send> = Vec::new();
        for (source, type_, reason, message) in events {
            let Some(send) = self.decide(source, type_, reason, &message, now) else {
                continue;
            };
            match out.iter_mut().find(|s| s.key == send.key) {
                Some(earlier) => {
                    earlier.count += 1;
                    earlier.message = send.message;
                }
                None => out.push(send),
            }
        }
        out
    }

    /// Decides about one event of `type_`, `reason` and `message` from
    /// `source`, recorded at `now`: `None` when the spam filter drops it.
    fn decide(
        &mut self,
        source: Source,
        type_: &'static str,
        reason: String,
        message: &str,
        now: Instant,
    ) -> Option<Send> {
        let similar = Similar {
            source,
            type_,
            reason,
        };
        let (key, message) = self.aggregate(similar, message, now);
        let source = &key.similar().source;
        let allowed = match self.spam.get_mut(source) {
            Some(bucket) => bucket.try_take(now),
            None => {
                let mut bucket = Bucket::new(SPAM_PER_SECOND, SPAM_BURST);
                let allowed = bucket.try_take(now);
                self.spam.insert(source.clone(), bucket);
                allowed
            }
        };
        if !allowed {
            *self.dropped.entry(source.plugin.clone()).or_default() += 1;
            // Still an occurrence, as client-go counts it: the next bump
            // that goes out carries it.
            if let Some(existing) = self.recorded.get_mut(&key) {
                existing.count += 1;
            }
            return None;
        }
        let existing = self.recorded.get(&key).cloned();
        Some(Send {
            count: existing.as_ref().map_or(1, |e| e.count + 1),
            existing,
            key,
            message,
        })
    }

    /// The key and message an event is recorded under: itself while fewer
    /// than ten distinct similar ones were seen lately, else the combined
    /// event.
    fn aggregate(&mut self, similar: Similar, message: &str, now: Instant) -> (Key, String) {
        let fresh = || Messages {
            seen: HashSet::new(),
            last: now,
        };
        let messages = match self.similar.get_mut(&similar) {
            Some(m) if now.saturating_duration_since(m.last) <= AGGREGATE_INTERVAL => m,
            _ => {
                self.similar.insert(similar.clone(), fresh());
                self.similar.get_mut(&similar).expect("just inserted")
            }
        };
        messages.seen.insert(message.to_owned());
        messages.last = now;
        if messages.seen.len() < AGGREGATE_MAX_EVENTS {
            return (Key::Exact(similar, message.to_owned()), message.to_owned());
        }
        // The set never grows past the threshold: any one member goes.
        if let Some(any) = messages.seen.iter().next().cloned() {
            messages.seen.remove(&any);
        }
        (Key::Combined(similar), format!("{COMBINED}{message}"))
    }

    /// Remembers the Event now on the server for `key`.
    pub(super) fn remember(&mut self, key: Key, recorded: Recorded) {
        self.recorded.insert(key, recorded);
    }

    /// Forgets an Event the server no longer has.
    pub(super) fn forget(&mut self, key: &Key) {
        self.recorded.remove(key);
    }

    /// Events dropped by the spam filter so far, for `plugin`.
    pub(super) fn dropped(&self, plugin: &str) -> u64 {
        self.dropped.get(plugin).copied().unwrap_or(0)
    }

    /// Forgets what `plugin` was counted for (it no longer runs).
    pub(super) fn forget_plugin(&mut self, plugin: &str) {
        self.dropped.remove(plugin);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn source(plugin: &str, name: &str) -> Source {
        Source {
            plugin: plugin.into(),
            regarding: ObjectRef {
                api_version: "v1".into(),
                kind: "ConfigMap".into(),
                namespace: Some("default".into()),
                name: name.into(),
            },
            uid: Some(format!("uid-{name}")),
        }
    }

    /// What one send amounts to: (created?, count, message).
    type Sent = (bool, u32, String);

    /// Records `messages` (all of reason `reason`) as one outcome and as
    /// the writer does: every send succeeds, a create as `name.N`.
    fn record(
        c: &mut Correlator,
        s: &Source,
        reason: &str,
        messages: &[&str],
        now: Instant,
    ) -> Vec<Sent> {
        let events = messages
            .iter()
            .map(|m| (s.clone(), "Normal", reason.to_owned(), (*m).to_owned()));
        let mut sent = Vec::new();
        for Send {
            key,
            existing,
            count,
            message,
        } in c.decide_all(events, now)
        {
            sent.push((existing.is_none(), count, message));
            let recorded = existing.unwrap_or_else(|| Recorded {
                namespace: "default".into(),
                name: format!("{}.{}", s.regarding.name, c.recorded.len()),
                count: 0,
            });
            c.remember(key, Recorded { count, ..recorded });
        }
        sent
    }

    fn one(
        c: &mut Correlator,
        s: &Source,
        reason: &str,
        message: &str,
        now: Instant,
    ) -> Option<Sent> {
        record(c, s, reason, &[message], now).pop()
    }

    #[test]
    fn a_repeat_bumps_the_first_and_a_new_message_is_its_own_event() {
        let t0 = Instant::now();
        let mut c = Correlator::default();
        let s = source("p", "a");
        assert_eq!(
            one(&mut c, &s, "Synced", "one", t0),
            Some((true, 1, "one".into()))
        );
        assert_eq!(
            one(&mut c, &s, "Synced", "one", t0),
            Some((false, 2, "one".into()))
        );
        assert_eq!(
            one(&mut c, &s, "Synced", "two", t0),
            Some((true, 1, "two".into()))
        );
    }

    #[test]
    fn repeats_within_one_outcome_are_one_request() {
        let t0 = Instant::now();
        let mut c = Correlator::default();
        let s = source("p", "a");
        assert_eq!(
            record(&mut c, &s, "Synced", &["one", "two", "one", "one"], t0),
            vec![(true, 3, "one".into()), (true, 1, "two".into())]
        );
        assert_eq!(
            one(&mut c, &s, "Synced", "one", t0),
            Some((false, 4, "one".into()))
        );
    }

    #[test]
    fn the_tenth_distinct_similar_message_is_combined_and_later_ones_bump_it() {
        let t0 = Instant::now();
        let mut c = Correlator::default();
        let s = source("p", "a");
        for i in 0..9 {
            let m = format!("m{i}");
            assert_eq!(one(&mut c, &s, "Noise", &m, t0), Some((true, 1, m)));
        }
        let combined = |m: &str| format!("(combined from similar events): {m}");
        assert_eq!(
            one(&mut c, &s, "Noise", "m9", t0),
            Some((true, 1, combined("m9")))
        );
        assert_eq!(
            one(&mut c, &s, "Noise", "m10", t0),
            Some((false, 2, combined("m10")))
        );
        // Several in one outcome: one bump counting them all.
        assert_eq!(
            record(&mut c, &s, "Noise", &["m11", "m12", "m13"], t0),
            vec![(false, 5, combined("m13"))]
        );
        // Another reason, or the same one on another object, is not similar.
        assert_eq!(
            one(&mut c, &s, "Other", "m14", t0),
            Some((true, 1, "m14".into()))
        );
        let b = source("p", "b");
        assert_eq!(
            one(&mut c, &b, "Noise", "m15", t0),
            Some((true, 1, "m15".into()))
        );
    }

    #[test]
    fn similar_events_ten_minutes_apart_start_afresh() {
        let t0 = Instant::now();
        let mut c = Correlator::default();
        let s = source("p", "a");
        for i in 0..9 {
            one(&mut c, &s, "Noise", &format!("m{i}"), t0);
        }
        let later = t0 + AGGREGATE_INTERVAL + Duration::from_secs(1);
        assert_eq!(
            one(&mut c, &s, "Noise", "m9", later),
            Some((true, 1, "m9".into()))
        );
    }

    #[test]
    fn a_source_may_record_25_events_about_an_object_then_one_every_five_minutes() {
        let t0 = Instant::now();
        let mut c = Correlator::default();
        let s = source("noisy", "a");
        // Identical events: bumps count against the same budget.
        let sent = (0..40)
            .filter(|_| one(&mut c, &s, "Loop", "again", t0).is_some())
            .count();
        assert_eq!(sent, 25);
        assert_eq!(c.dropped("noisy"), 15);
        let at = t0 + Duration::from_secs(301);
        assert_eq!(
            one(&mut c, &s, "Loop", "again", at - Duration::from_secs(2)),
            None
        );
        // The next bump counts every occurrence, the dropped ones too.
        assert_eq!(
            one(&mut c, &s, "Loop", "again", at),
            Some((false, 42, "again".into()))
        );
        assert_eq!(one(&mut c, &s, "Loop", "again", at), None);
        // One outcome of 30 is cut at the budget, in one request.
        let far = at + Duration::from_secs(300 * 100);
        assert_eq!(
            record(&mut c, &s, "Loop", &["again"; 30], far),
            vec![(false, 68, "again".into())]
        );
        // Another object, another plugin and a recreated object (new uid)
        // have budgets of their own.
        assert!(one(&mut c, &source("noisy", "b"), "Loop", "again", at).is_some());
        assert!(one(&mut c, &source("quiet", "a"), "Loop", "again", at).is_some());
        let mut recreated = s.clone();
        recreated.uid = Some("uid-new".into());
        assert!(one(&mut c, &recreated, "Loop", "again", at).is_some());
        assert_eq!(c.dropped("quiet"), 0);
    }

    #[test]
    fn a_forgotten_event_is_created_again() {
        let t0 = Instant::now();
        let mut c = Correlator::default();
        let s = source("p", "a");
        one(&mut c, &s, "R", "m", t0);
        let key = Key::Exact(
            Similar {
                source: s.clone(),
                type_: "Normal",
                reason: "R".into(),
            },
            "m".into(),
        );
        c.forget(&key);
        assert_eq!(one(&mut c, &s, "R", "m", t0), Some((true, 1, "m".into())));
    }
}
