//! A plugin's index of one kind (contract 0.2): each object filed under the
//! keys the plugin's `index` gave it, with the sums of its amounts kept per
//! key, as client-go's indexers and kube-scheduler's per-node snapshot.
//!
//! [`KindIndex`] is plain bookkeeping, unit-tested here; the controller
//! feeds it from the informer (one writer) and reads it for the plugin's
//! `cache.lookup`/`lookup-objects`/`totals` through [`SharedIndex`].
//!
//! **Versions.** Every change to a key's members or totals gives that key a
//! new version (one counter for the whole index, so versions only grow).
//! A call records the versions of the keys it read; before a binding is
//! sent, the host checks that the keys the pod will be filed under are
//! still at those versions, and files the pod there at once ("assumes" it,
//! as kube-scheduler does) — so two concurrent decisions can never both
//! take a node's last room. An assumption stands until the informer brings
//! a newer version of the object, and is undone if the binding fails.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, RwLock};

use foldhash::fast::RandomState as Fast;

use crate::contract::IndexEntry;
use crate::model::{IndexReader, ObjectKey, Text};

/// One object as filed.
#[derive(Debug, Clone)]
struct Filed {
    entry: IndexEntry,
    text: Text,
    /// The object's resourceVersion as the informer last brought it.
    version: u64,
    /// Set while the object is filed by an assumption rather than by the
    /// informer: what it was filed as before.
    assumed: Option<Option<Box<Filed>>>,
}

/// The members, totals and version of one key.
#[derive(Debug, Default)]
struct Key {
    /// Each member with what a lookup returns of it, kept here so that a
    /// lookup of a key of many members looks none of them up again (a
    /// scheduling decision reads every pod of a label).
    members: BTreeMap<ObjectKey, Member>,
    totals: Vec<i64>,
    version: u64,
}

/// What a lookup returns of one member: the object's summary and its text,
/// the same `Arc`s as in its [`Filed`].
#[derive(Debug, Clone)]
struct Member {
    summary: Arc<[u8]>,
    text: Text,
}

/// Why an assumption was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conflict(pub String);

/// The index of one kind.
#[derive(Debug, Default)]
pub struct KindIndex {
    objects: HashMap<ObjectKey, Filed, Fast>,
    keys: HashMap<Arc<str>, Key, Fast>,
    /// The last version given to a key.
    clock: u64,
}

impl KindIndex {
    pub fn new() -> Self {
        Self::default()
    }

    /// Objects filed.
    pub fn len(&self) -> usize {
        self.objects.len()
    }

    pub fn is_empty(&self) -> bool {
        self.objects.is_empty()
    }

    /// The resourceVersion the index last saw for `key` from the informer.
    pub fn version_of(&self, key: &ObjectKey) -> Option<u64> {
        self.objects.get(key).map(|f| f.version)
    }

    /// Files the object `key` at `version` as the informer brings it, with
    /// `entry` from the plugin (`None`: filed nowhere). Returns whether its
    /// entry changed (what `map` of an indexed `reads` watch reacts to).
    ///
    /// An event older than what is filed changes nothing (it can arrive
    /// late, after the index was filled from the cache), and an assumption
    /// stays until the informer brings a version newer than the one it was
    /// made from: an older event is a picture from before the binding.
    pub fn file(
        &mut self,
        key: ObjectKey,
        version: u64,
        text: Text,
        entry: Option<IndexEntry>,
    ) -> bool {
        if let Some(old) = self.objects.get(&key)
            && (version < old.version || (old.assumed.is_some() && version == old.version))
        {
            return false;
        }
        let entry = entry.unwrap_or_default();
        let changed = self.objects.get(&key).is_none_or(|old| old.entry != entry);
        self.unfile(&key);
        self.put(
            key,
            Filed {
                entry,
                text,
                version,
                assumed: None,
            },
        );
        changed
    }

    /// Removes the object `key`, deleted at `version`, unless what is filed
    /// is newer (the name was taken again since); returns whether it was
    /// filed anywhere.
    pub fn remove(&mut self, key: &ObjectKey, version: u64) -> bool {
        if self.objects.get(key).is_some_and(|f| f.version > version) {
            return false;
        }
        self.unfile(key).is_some_and(|f| !f.entry.keys.is_empty())
    }

    /// Files `key` as `entry` (with `text`) now, ahead of the informer, if
    /// none of the keys it would be filed under changed since the caller
    /// read them (`read`: key → version seen; keys it did not read are not
    /// checked). `decided_at` is the version of the object the decision
    /// was made on: the informer's events up to it are older news and do
    /// not undo the assumption, even when the index files them late (the
    /// pod's first event can reach the index after the decision that binds
    /// it, which reads the pod from another watch).
    pub fn assume(
        &mut self,
        key: ObjectKey,
        text: Text,
        entry: IndexEntry,
        decided_at: u64,
        read: &HashMap<&str, u64>,
    ) -> Result<(), Conflict> {
        for k in &entry.keys {
            let now = self.keys.get(k.as_str()).map_or(0, |s| s.version);
            if let Some(&seen) = read.get(k.as_str())
                && seen != now
            {
                return Err(Conflict(format!(
                    "{k} changed since the reconcile read it (another decision came first)"
                )));
            }
        }
        let previous = self.unfile(&key).map(Box::new);
        let version = previous.as_ref().map_or(0, |p| p.version).max(decided_at);
        self.put(
            key,
            Filed {
                entry,
                text,
                version,
                assumed: Some(previous),
            },
        );
        Ok(())
    }

    /// Undoes an assumption of `key` (its binding failed): the object is
    /// filed as it was before.
    pub fn forget_assumption(&mut self, key: &ObjectKey) {
        let Some(Filed {
            assumed: Some(previous),
            ..
        }) = self.objects.get(key)
        else {
            return;
        };
        let previous = previous.clone();
        self.unfile(key);
        if let Some(previous) = previous {
            self.put(key.clone(), *previous);
        }
    }

    /// Removes `key` from its keys; returns how it was filed.
    fn unfile(&mut self, key: &ObjectKey) -> Option<Filed> {
        let filed = self.objects.remove(key)?;
        for k in &filed.entry.keys {
            let Some(state) = self.keys.get_mut(k.as_str()) else {
                continue;
            };
            // A key the entry names twice was added to once (see `put`).
            if state.members.remove(key).is_some() {
                for (sum, a) in state.totals.iter_mut().zip(&filed.entry.amounts) {
                    *sum = sum.wrapping_sub(*a);
                }
            }
            self.clock += 1;
            state.version = self.clock;
            if state.members.is_empty() {
                // The version must still only grow if the key comes back.
                state.totals.clear();
            }
        }
        Some(filed)
    }

    fn put(&mut self, key: ObjectKey, filed: Filed) {
        for k in &filed.entry.keys {
            if !self.keys.contains_key(k.as_str()) {
                // Allocated only for a key not yet seen.
                self.keys.insert(Arc::from(k.as_str()), Key::default());
            }
            let state = self.keys.get_mut(k.as_str()).expect("inserted above");
            let member = Member {
                summary: filed.entry.summary.clone(),
                text: filed.text.clone(),
            };
            if state.members.insert(key.clone(), member).is_none() {
                if state.totals.len() < filed.entry.amounts.len() {
                    state.totals.resize(filed.entry.amounts.len(), 0);
                }
                for (sum, a) in state.totals.iter_mut().zip(&filed.entry.amounts) {
                    *sum = sum.wrapping_add(*a);
                }
            }
            self.clock += 1;
            state.version = self.clock;
        }
        self.objects.insert(key, filed);
    }

    fn members(&self, key: &str) -> (impl Iterator<Item = &Member>, u64) {
        let state = self.keys.get(key);
        let version = state.map_or(0, |s| s.version);
        (state.into_iter().flat_map(|s| s.members.values()), version)
    }

    pub fn lookup(&self, key: &str) -> (Vec<Arc<[u8]>>, u64) {
        let (members, version) = self.members(key);
        (members.map(|m| m.summary.clone()).collect(), version)
    }

    pub fn lookup_objects(&self, key: &str) -> (Vec<Text>, u64) {
        let (members, version) = self.members(key);
        (members.map(|m| m.text.clone()).collect(), version)
    }

    pub fn totals(&self, key: &str) -> (Vec<i64>, u64) {
        match self.keys.get(key) {
            Some(s) => (s.totals.clone(), s.version),
            None => (Vec::new(), 0),
        }
    }

    /// The text the object is filed with (its latest known state,
    /// assumptions included).
    pub fn text_of(&self, key: &ObjectKey) -> Option<Text> {
        self.objects.get(key).map(|f| f.text.clone())
    }
}

/// A [`KindIndex`] shared between its writer and the plugin's reads.
#[derive(Debug, Default)]
pub struct SharedIndex {
    inner: RwLock<KindIndex>,
}

impl SharedIndex {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn write<R>(&self, f: impl FnOnce(&mut KindIndex) -> R) -> R {
        f(&mut self.inner.write().unwrap_or_else(|e| e.into_inner()))
    }

    pub fn read<R>(&self, f: impl FnOnce(&KindIndex) -> R) -> R {
        f(&self.inner.read().unwrap_or_else(|e| e.into_inner()))
    }
}

impl IndexReader for SharedIndex {
    fn lookup(&self, key: &str) -> (Vec<Arc<[u8]>>, u64) {
        self.read(|i| i.lookup(key))
    }

    fn lookup_objects(&self, key: &str) -> (Vec<Text>, u64) {
        self.read(|i| i.lookup_objects(key))
    }

    fn totals(&self, keys: &[String]) -> Vec<(Vec<i64>, u64)> {
        self.read(|i| keys.iter().map(|k| i.totals(k)).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(name: &str) -> ObjectKey {
        ObjectKey::new(Some("default"), name)
    }

    fn entry(keys: &[&str], amounts: &[i64], summary: &str) -> Option<IndexEntry> {
        Some(IndexEntry {
            keys: keys.iter().map(|k| (*k).to_owned()).collect(),
            amounts: amounts.to_vec(),
            summary: summary.as_bytes().into(),
        })
    }

    fn text(s: &str) -> Text {
        s.into()
    }

    #[test]
    fn totals_follow_what_is_filed_under_each_key() {
        let mut ix = KindIndex::new();
        assert!(ix.file(pod("a"), 1, text("a"), entry(&["n1"], &[100, 64], "a")));
        assert!(ix.file(pod("b"), 2, text("b"), entry(&["n1"], &[250], "b")));
        assert!(ix.file(pod("c"), 3, text("c"), entry(&["n2"], &[1, 1], "c")));
        assert_eq!(ix.totals("n1").0, [350, 64]);
        assert_eq!(
            ix.lookup("n1").0,
            [b"a".as_ref().into(), b"b".as_ref().into()] as [Arc<[u8]>; 2]
        );
        // Moving b to n2 moves its amounts; the same entry again is no change.
        assert!(ix.file(pod("b"), 4, text("b2"), entry(&["n2"], &[250], "b")));
        assert!(!ix.file(pod("b"), 5, text("b3"), entry(&["n2"], &[250], "b")));
        assert_eq!(ix.totals("n1").0, [100, 64]);
        assert_eq!(ix.totals("n2").0, [251, 1]);
        assert_eq!(ix.lookup_objects("n2").0, [text("b3"), text("c")]);
        assert!(ix.remove(&pod("a"), 1));
        assert_eq!(ix.totals("n1"), (Vec::new(), ix.totals("n1").1));
        assert!(ix.totals("nowhere").0.is_empty());
        // Filed nowhere: present, but under no key.
        assert!(ix.file(pod("d"), 6, text("d"), None));
        assert!(!ix.remove(&pod("d"), 6));
        // Late events change nothing: an older version, or the delete of
        // an earlier object of the same name.
        assert!(!ix.file(pod("b"), 3, text("old"), entry(&["n1"], &[9], "old")));
        assert!(!ix.remove(&pod("b"), 4));
        assert_eq!(ix.totals("n2").0, [251, 1]);
    }

    #[test]
    fn a_key_named_twice_in_an_entry_counts_the_object_once() {
        let mut ix = KindIndex::new();
        ix.file(pod("a"), 1, text("a"), entry(&["n1", "n1"], &[5], "a"));
        ix.file(pod("b"), 2, text("b"), entry(&["n1"], &[3], "b"));
        assert_eq!(ix.totals("n1").0, [8]);
        assert_eq!(ix.lookup("n1").0.len(), 2);
        // Moved away and removed: a's amount leaves n1 once, not twice.
        ix.file(pod("a"), 3, text("a"), entry(&["n2", "n2"], &[5], "a"));
        assert_eq!(ix.totals("n1").0, [3]);
        assert!(ix.remove(&pod("a"), 3));
        assert_eq!(ix.totals("n1").0, [3]);
        assert!(ix.totals("n2").0.is_empty());
    }

    #[test]
    fn versions_only_grow_and_change_with_the_key() {
        let mut ix = KindIndex::new();
        ix.file(pod("a"), 1, text("a"), entry(&["n1"], &[1], ""));
        let (_, v1) = ix.totals("n1");
        ix.file(pod("b"), 2, text("b"), entry(&["n2"], &[1], ""));
        assert_eq!(
            ix.totals("n1").1,
            v1,
            "another key's change leaves n1 alone"
        );
        ix.remove(&pod("a"), 1);
        ix.file(pod("a"), 3, text("a"), entry(&["n1"], &[1], ""));
        assert!(ix.totals("n1").1 > v1);
    }

    #[test]
    fn an_assumption_refuses_a_stale_read_and_survives_older_events() {
        let mut ix = KindIndex::new();
        ix.file(pod("p1"), 10, text("pending"), entry(&["pending"], &[], ""));
        ix.file(pod("p2"), 11, text("pending"), entry(&["pending"], &[], ""));
        ix.file(pod("x"), 12, text("x"), entry(&["n1"], &[500], ""));
        let (_, seen) = ix.totals("n1");
        let read: HashMap<&str, u64> = [("n1", seen)].into();
        // Two decisions both read n1 at `seen` and both pick it.
        ix.assume(
            pod("p1"),
            text("bound"),
            entry(&["n1"], &[500], "").unwrap(),
            10,
            &read,
        )
        .expect("the first binding is assumed");
        assert_eq!(ix.totals("n1").0, [1000]);
        let second = ix.assume(
            pod("p2"),
            text("bound"),
            entry(&["n1"], &[500], "").unwrap(),
            11,
            &read,
        );
        assert!(second.is_err(), "the second sees n1 changed: {second:?}");
        // A late event from before the binding does not undo it ...
        assert!(!ix.file(pod("p1"), 10, text("pending"), entry(&["pending"], &[], "")));
        assert_eq!(ix.totals("n1").0, [1000]);
        // ... the informer's newer version replaces it.
        ix.file(pod("p1"), 13, text("bound"), entry(&["n1"], &[500], ""));
        assert_eq!(ix.totals("n1").0, [1000]);
        assert_eq!(ix.lookup("pending").0.len(), 1);
    }

    /// The decision read the pod from another watch before the index had
    /// filed it: the pod's first event, filed after the assumption, must
    /// not take the pod off the node it is being bound to (two pods with
    /// required anti-affinity were seen bound to one node that way).
    #[test]
    fn an_assumption_survives_the_event_it_was_decided_on_arriving_late() {
        let mut ix = KindIndex::new();
        ix.assume(
            pod("p"),
            text("bound"),
            entry(&["n1"], &[1], "").unwrap(),
            10,
            &HashMap::new(),
        )
        .unwrap();
        assert!(!ix.file(pod("p"), 10, text("pending"), entry(&["pending"], &[], "")));
        assert_eq!(ix.totals("n1").0, [1]);
        assert!(ix.lookup("pending").0.is_empty());
        // The binding's own event, newer, replaces it.
        ix.file(pod("p"), 11, text("bound"), entry(&["n1"], &[1], ""));
        assert_eq!(ix.totals("n1").0, [1]);
    }

    #[test]
    fn a_failed_binding_puts_the_object_back() {
        let mut ix = KindIndex::new();
        ix.file(pod("p"), 5, text("pending"), entry(&["pending"], &[], ""));
        ix.assume(
            pod("p"),
            text("bound"),
            entry(&["n1"], &[7], "").unwrap(),
            5,
            &HashMap::new(),
        )
        .unwrap();
        assert_eq!(ix.totals("n1").0, [7]);
        ix.forget_assumption(&pod("p"));
        assert!(ix.totals("n1").0.is_empty());
        assert_eq!(ix.lookup_objects("pending").0, [text("pending")]);
        // Forgetting twice, or an object never assumed, changes nothing.
        ix.forget_assumption(&pod("p"));
        assert_eq!(ix.lookup_objects("pending").0.len(), 1);
    }
}
