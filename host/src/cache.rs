//! The informer cache: the current objects of one informer, as the raw JSON
//! text the API server sent (with `managedFields` stripped) plus where in
//! that text its header fields are, indexed by namespace, controller owner
//! uid and labels.
//!
//! One writer (the informer's task, through the only `CacheWriter`)
//! applies list and watch results with plain synchronous functions that
//! report what changed; any number of cheap, read-only [`Cache`] clones
//! read. Keeping text rather than `serde_json::Value` trees
//! costs about a ninth of the memory, and a plugin needs the text anyway.
//!
//! Memory: each object lives in a slot of the store, and every index holds
//! slot ids (four bytes) rather than keys: the slots sorted by key (which
//! is also the namespace index), and per controller owner uid and per label
//! a set of ids that becomes a bitmap when most objects are in it. The
//! header fields are spans of the text, never copies (see `object.rs`).
//! [`Store::bytes`] counts every allocation this takes.

mod index;

use std::collections::HashMap;
use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, BuildHasherDefault, Hasher};
use std::sync::{Arc, RwLock};

use hashbrown::HashTable;
use windlass_selector::LabelSelector;

use self::index::{Ids, Ordered, allocation, table_bytes};
pub use crate::model::{CachedObject, Controller, KeyRef, Labels, MalformedObject, ObjectKey};

/// What applying something to the store changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    Added(Arc<CachedObject>),
    Modified {
        old: Arc<CachedObject>,
        new: Arc<CachedObject>,
    },
    /// The last state known of a deleted object.
    Deleted(Arc<CachedObject>),
}

impl Change {
    /// The object as it now is, or as it last was when deleted.
    pub fn object(&self) -> &Arc<CachedObject> {
        match self {
            Change::Added(o) | Change::Deleted(o) | Change::Modified { new: o, .. } => o,
        }
    }
}

/// Keys that are already hashes: passed through as they are.
#[derive(Debug, Default)]
struct PreHashed(u64);

impl Hasher for PreHashed {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

/// An index from a hash of the indexed value to the ids of the objects
/// that have it. Keyed by hash so that no value is copied; two values with
/// the same hash share a set, which is harmless: readers check the objects
/// they get from it, and a set keeps an id while the object has any value
/// with that hash.
type HashIndex = HashMap<u64, Ids, BuildHasherDefault<PreHashed>>;

/// The objects of one informer and their indexes.
#[derive(Debug, Default)]
pub struct Store {
    /// Objects by id; `None` marks a free slot (listed in `free`).
    slots: Vec<Option<Arc<CachedObject>>>,
    free: Vec<u32>,
    /// Ids ordered by namespace then name: listing in order, and the
    /// namespace index.
    order: Ordered,
    /// Ids by key: a get, an update or a delete finds its object with one
    /// hash, not the ordered search's comparisons (each a read of another
    /// object's header).
    by_key: HashTable<u32>,
    key_hasher: foldhash::fast::RandomState,
    by_controller: HashIndex,
    by_label: HashIndex,
    hasher: RandomState,
    /// Bytes of the objects themselves (see [`CachedObject::size`]).
    object_bytes: usize,
    /// Heap bytes of the id sets in `by_controller` and `by_label`.
    ids_bytes: usize,
    /// The resourceVersion the store reflects (the last list, event or
    /// bookmark), when the server's versions are numbers.
    version: Option<u64>,
}

impl Store {
    pub fn new() -> Self {
        Self::default()
    }

    /// Records the resourceVersion the store now reflects: everything the
    /// server did up to it is in the store. Versions that are not numbers
    /// (the API allows opaque ones) leave it unknown.
    pub fn set_version(&mut self, version: &str) {
        self.version = version.parse().ok();
    }

    /// The resourceVersion the store reflects, when known.
    pub fn version(&self) -> Option<u64> {
        self.version
    }

    fn object(&self, id: u32) -> Option<&Arc<CachedObject>> {
        self.slots.get(id as usize)?.as_ref()
    }

    /// The key of the object in slot `id` (for [`Ordered`]'s comparisons).
    fn key_of(&self, id: u32) -> KeyRef<'_> {
        slot_key(&self.slots, id)
    }

    /// The id of the object under `key`.
    fn find(&self, key: &KeyRef<'_>) -> Option<u32> {
        let hash = self.key_hasher.hash_one(key);
        self.by_key
            .find(hash, |&id| self.key_of(id) == *key)
            .copied()
    }

    /// Where `key` is: its id, or where it would go in the order.
    fn locate(&self, key: &KeyRef<'_>) -> Result<u32, index::Pos> {
        match self.find(key) {
            Some(id) => Ok(id),
            None => {
                let pos = self.order.search(key, |id| self.key_of(id))?;
                // Filed in the order but not by key: the two never differ,
                // but if they did, the ordered entry is the truth.
                Ok(self.order.id_at(pos).unwrap_or_default())
            }
        }
    }

    /// Files the object in slot `id` by its key.
    fn file_key(&mut self, id: u32) {
        let Self {
            slots,
            by_key,
            key_hasher,
            ..
        } = self;
        let hash = key_hasher.hash_one(slot_key(slots, id));
        by_key.insert_unique(hash, id, |&id| key_hasher.hash_one(slot_key(slots, id)));
    }

    /// Takes slot `id` (holding an object under `key`) out of the key table.
    fn unfile_key(&mut self, id: u32, key: &KeyRef<'_>) {
        let hash = self.key_hasher.hash_one(key);
        if let Ok(entry) = self.by_key.find_entry(hash, |&x| x == id) {
            entry.remove();
        }
    }

    /// Inserts or replaces an object, returning what changed: nothing when
    /// the cached copy has the same resourceVersion; when the name now
    /// belongs to a new object (another uid: deleted and recreated while we
    /// were not watching), the old one's delete and then the new one's add,
    /// so that nobody mistakes a new object for an update of the old one.
    pub fn upsert(&mut self, object: CachedObject) -> Vec<Change> {
        let mut changes = Vec::new();
        self.upsert_into(object, &mut changes);
        changes
    }

    /// [`Store::upsert`], appending to `changes`; returns the object's id.
    fn upsert_into(&mut self, object: CachedObject, changes: &mut Vec<Change>) -> u32 {
        let mut found = self.locate(&object.key());
        if let Ok(id) = found {
            let (same, renewed) = self.object(id).map_or((false, false), |old| {
                let (rv, uid) = (old.resource_version(), old.uid());
                (
                    rv == object.resource_version() && !rv.is_empty(),
                    uid != object.uid() && !uid.is_empty() && !object.uid().is_empty(),
                )
            });
            if same {
                return id;
            }
            if renewed {
                changes.extend(self.remove_key(&object.key()).map(Change::Deleted));
                found = self.locate(&object.key());
            }
        }
        let new = Arc::new(object);
        match found {
            Ok(id) => {
                let old = self.slots[id as usize].replace(new.clone());
                self.index(id, &new);
                if let Some(old) = old {
                    self.unindex(id, &old, Some(&new));
                    changes.push(Change::Modified { old, new });
                }
                id
            }
            Err(pos) => {
                let id = match self.free.pop() {
                    Some(id) => {
                        self.slots[id as usize] = Some(new.clone());
                        id
                    }
                    None => {
                        self.slots.push(Some(new.clone()));
                        (self.slots.len() - 1) as u32
                    }
                };
                self.order.insert(pos, id);
                self.file_key(id);
                self.index(id, &new);
                changes.push(Change::Added(new));
                id
            }
        }
    }

    /// Removes an object. `last` is its final state from the DELETED event,
    /// when there is one; it is what the change reports.
    pub fn remove(&mut self, key: &ObjectKey, last: Option<CachedObject>) -> Option<Change> {
        let old = self.remove_key(&key.as_ref())?;
        Some(Change::Deleted(last.map(Arc::new).unwrap_or(old)))
    }

    /// Takes the object under `key` out of the store and every index.
    fn remove_key(&mut self, key: &KeyRef<'_>) -> Option<Arc<CachedObject>> {
        let pos = self.order.search(key, |id| self.key_of(id)).ok()?;
        let id = self.order.remove(pos)?;
        self.unfile_key(id, key);
        let old = self.slots.get_mut(id as usize)?.take()?;
        self.unindex(id, &old, None);
        if self.order.len() == 0 {
            // Empty: let go of the tables too.
            *self = Store {
                version: self.version,
                hasher: self.hasher.clone(),
                ..Store::default()
            };
        } else {
            self.free.push(id);
        }
        Some(old)
    }

    /// Replaces everything with a fresh list: objects missing from it are
    /// reported deleted (deletes missed while disconnected), new or changed
    /// ones added or modified.
    pub fn replace_all(&mut self, objects: Vec<CachedObject>) -> Vec<Change> {
        let mut changes = Vec::new();
        if self.slots.is_empty() {
            self.slots.reserve_exact(objects.len());
        }
        let mut seen = vec![false; self.slots.len()];
        for object in objects {
            let id = self.upsert_into(object, &mut changes) as usize;
            if id >= seen.len() {
                seen.resize(id + 1, false);
            }
            seen[id] = true;
        }
        let gone: Vec<ObjectKey> = self
            .order
            .iter()
            .filter(|&id| !seen.get(id as usize).copied().unwrap_or(false))
            .map(|id| self.key_of(id).into())
            .collect();
        for key in gone {
            changes.extend(self.remove(&key, None));
        }
        changes
    }

    fn uid_hash(&self, uid: &str) -> u64 {
        self.hasher.hash_one(uid)
    }

    /// Adds `o` (in slot `id`) to the indexes.
    fn index(&mut self, id: u32, o: &CachedObject) {
        self.object_bytes += o.size();
        let universe = self.slots.len();
        if let Some(h) = o.controller_uid().map(|uid| self.uid_hash(uid)) {
            add(
                &mut self.by_controller,
                &mut self.ids_bytes,
                h,
                id,
                universe,
            );
        }
        for (k, v) in o.labels() {
            let h = label_hash(&self.hasher, k, v);
            add(&mut self.by_label, &mut self.ids_bytes, h, id, universe);
        }
    }

    /// Drops `old`'s index entries (slot `id`), keeping those `replacement`
    /// (now in the same slot) still has.
    fn unindex(&mut self, id: u32, old: &CachedObject, replacement: Option<&CachedObject>) {
        self.object_bytes -= old.size();
        let kept = replacement
            .and_then(|r| r.controller_uid())
            .map(|uid| self.uid_hash(uid));
        if let Some(h) = old.controller_uid().map(|uid| self.uid_hash(uid))
            && kept != Some(h)
        {
            drop_id(&mut self.by_controller, &mut self.ids_bytes, h, id);
        }
        let kept: Vec<u64> = replacement
            .into_iter()
            .flat_map(|r| r.labels())
            .map(|(k, v)| label_hash(&self.hasher, k, v))
            .collect();
        for (k, v) in old.labels() {
            let h = label_hash(&self.hasher, k, v);
            if !kept.contains(&h) {
                drop_id(&mut self.by_label, &mut self.ids_bytes, h, id);
            }
        }
    }

    /// The object under `key` (an [`ObjectKey`] or a [`KeyRef`]).
    pub fn get<'k>(&self, key: impl Into<KeyRef<'k>>) -> Option<Arc<CachedObject>> {
        let id = self.find(&key.into())?;
        self.object(id).cloned()
    }

    /// Objects in `namespace` (or all) matching `selector`, ordered by
    /// namespace then name. Uses the label index when the selector pins a
    /// label to one value that few objects have.
    pub fn list(
        &self,
        namespace: Option<&str>,
        selector: &LabelSelector,
    ) -> Vec<Arc<CachedObject>> {
        let matches = |o: &CachedObject| {
            namespace.is_none_or(|ns| o.namespace() == Some(ns)) && selector.matches(|k| o.label(k))
        };
        let mut fewest: Option<&Ids> = None;
        for r in selector.requirements() {
            if let Some(v) = selector.pinned_value(r.key()) {
                match self.by_label.get(&label_hash(&self.hasher, r.key(), v)) {
                    None => return Vec::new(),
                    Some(ids) if fewest.is_none_or(|f| ids.len() < f.len()) => fewest = Some(ids),
                    Some(_) => {}
                }
            }
        }
        // A set with more than an eighth of the objects: reading them in
        // key order and checking each beats sorting the set's.
        if let Some(ids) = fewest.filter(|ids| ids.len() * 8 <= self.order.len()) {
            let mut found: Vec<Arc<CachedObject>> = ids
                .iter()
                .filter_map(|id| self.object(id))
                .filter(|o| matches(o))
                .cloned()
                .collect();
            found.sort_by(|a, b| a.key().cmp(&b.key()));
            return found;
        }
        let ids: Box<dyn Iterator<Item = u32>> = match namespace {
            Some(ns) => {
                let start = KeyRef {
                    namespace: Some(ns),
                    name: "",
                };
                let pos = self
                    .order
                    .search(&start, |id| self.key_of(id))
                    .unwrap_or_else(|pos| pos);
                Box::new(
                    self.order
                        .iter_from(pos)
                        .take_while(move |&id| self.key_of(id).namespace == Some(ns)),
                )
            }
            None => Box::new(self.order.iter()),
        };
        ids.filter_map(|id| self.object(id))
            .filter(|o| matches(o))
            .cloned()
            .collect()
    }

    /// Objects whose controller owner reference has this uid.
    pub fn controlled_by(&self, uid: &str) -> Vec<Arc<CachedObject>> {
        let mut found: Vec<Arc<CachedObject>> = self
            .by_controller
            .get(&self.uid_hash(uid))
            .into_iter()
            .flat_map(|ids| ids.iter())
            .filter_map(|id| self.object(id))
            .filter(|o| o.controller_uid() == Some(uid))
            .cloned()
            .collect();
        found.sort_by(|a, b| a.key().cmp(&b.key()));
        found
    }

    /// Every key, in order (for resync and for comparing with a fresh list).
    pub fn keys(&self) -> Vec<ObjectKey> {
        let mut namespace: Option<Arc<str>> = None;
        self.order
            .iter()
            .map(|id| {
                let key = self.key_of(id);
                // One namespace string for the run of keys in it.
                if namespace.as_deref() != key.namespace {
                    namespace = key.namespace.map(Arc::from);
                }
                ObjectKey {
                    namespace: namespace.clone(),
                    name: key.name.into(),
                }
            })
            .collect()
    }

    pub fn len(&self) -> usize {
        self.order.len()
    }

    pub fn is_empty(&self) -> bool {
        self.order.len() == 0
    }

    /// Heap bytes the store holds, as the allocator hands them out (see
    /// `index::allocation`: each allocation's header and rounding
    /// included): every object's text and header (`Arc` counts included,
    /// whether or not a reader still holds it too), the slot table and its
    /// free list, the ordered index's blocks, and the controller and label
    /// indexes — their hash tables (slots and control bytes) and id sets.
    pub fn bytes(&self) -> usize {
        self.object_bytes
            + allocation(self.slots.capacity() * std::mem::size_of::<Option<Arc<CachedObject>>>())
            + allocation(self.free.capacity() * std::mem::size_of::<u32>())
            + self.order.bytes()
            + allocation(self.by_key.allocation_size())
            + table_bytes(&self.by_controller)
            + table_bytes(&self.by_label)
            + self.ids_bytes
    }
}

/// The key of the object in slot `id` of `slots` (empty when the slot is).
fn slot_key(slots: &[Option<Arc<CachedObject>>], id: u32) -> KeyRef<'_> {
    match slots.get(id as usize) {
        Some(Some(o)) => o.key(),
        _ => KeyRef {
            namespace: None,
            name: "",
        },
    }
}

/// The label index's key for label `key` = `value` (a function of the
/// hasher alone, so the indexes can be updated while it is borrowed).
fn label_hash(hasher: &RandomState, key: &str, value: &str) -> u64 {
    hasher.hash_one((key, value))
}

/// Adds `id` to `index[hash]`, keeping `bytes` up to date.
fn add(index: &mut HashIndex, bytes: &mut usize, hash: u64, id: u32, universe: usize) {
    match index.get_mut(&hash) {
        Some(ids) => {
            *bytes -= ids.bytes();
            ids.insert(id, universe);
            *bytes += ids.bytes();
        }
        None => {
            index.insert(hash, Ids::One(id));
        }
    }
}

/// Takes `id` out of `index[hash]`, dropping the set once empty.
fn drop_id(index: &mut HashIndex, bytes: &mut usize, hash: u64, id: u32) {
    if let Some(ids) = index.get_mut(&hash) {
        *bytes -= ids.bytes();
        if ids.remove(id) {
            index.remove(&hash);
        } else {
            *bytes += ids.bytes();
        }
    }
}

/// The one handle that changes a store, as kube-runtime's `reflector::store::Writer`:
/// owned by its informer's task and never cloned, so "one writer" is a
/// fact of the types rather than a comment. It hands out [`Cache`]s.
#[derive(Debug, Default)]
pub(crate) struct CacheWriter {
    store: Arc<RwLock<Store>>,
}

impl CacheWriter {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// A read-only handle on the store.
    pub(crate) fn reader(&self) -> Cache {
        Cache {
            store: self.store.clone(),
        }
    }

    /// Changes the store.
    pub(crate) fn write<R>(&mut self, f: impl FnOnce(&mut Store) -> R) -> R {
        f(&mut self.store.write().unwrap_or_else(|e| e.into_inner()))
    }
}

/// A read-only handle on one informer's store: cheap to clone, read by
/// plugins and request building; only its informer's `CacheWriter`
/// changes the store.
#[derive(Debug, Clone)]
pub struct Cache {
    store: Arc<RwLock<Store>>,
}

impl Cache {
    /// Reads the store.
    pub fn read<R>(&self, f: impl FnOnce(&Store) -> R) -> R {
        f(&self.store.read().unwrap_or_else(|e| e.into_inner()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod_with_uid(
        ns: &str,
        name: &str,
        uid: &str,
        rv: u32,
        app: &str,
        owner: Option<&str>,
    ) -> CachedObject {
        let mut meta = json!({"name": name, "namespace": ns, "uid": uid,
            "resourceVersion": rv.to_string(), "labels": {"app": app}});
        if let Some(owner) = owner {
            meta["ownerReferences"] = json!([{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"rs","uid":owner,"controller":true}]);
        }
        CachedObject::parse(&json!({"apiVersion":"v1","kind":"Pod","metadata":meta}).to_string())
            .unwrap()
    }

    fn pod(ns: &str, name: &str, rv: u32, app: &str, owner: Option<&str>) -> CachedObject {
        pod_with_uid(ns, name, &format!("u-{name}"), rv, app, owner)
    }

    fn names(objects: &[Arc<CachedObject>]) -> Vec<String> {
        objects.iter().map(|o| o.key().to_string()).collect()
    }

    #[test]
    fn upsert_reports_changes_and_ignores_same_version() {
        let mut s = Store::new();
        assert!(matches!(
            s.upsert(pod("a", "p", 1, "web", None))[..],
            [Change::Added(_)]
        ));
        assert!(s.upsert(pod("a", "p", 1, "web", None)).is_empty());
        assert!(matches!(
            s.upsert(pod("a", "p", 2, "web", None))[..],
            [Change::Modified { .. }]
        ));
        assert_eq!(s.len(), 1);
        let gone = s.remove(&ObjectKey::new(Some("a"), "p"), None).unwrap();
        assert!(matches!(gone, Change::Deleted(ref o) if o.resource_version() == "2"));
        assert!(s.is_empty() && s.bytes() == 0);
    }

    #[test]
    fn lists_by_namespace_and_labels_in_order() {
        let mut s = Store::new();
        for (ns, name, app) in [
            ("b", "x", "web"),
            ("a", "z", "db"),
            ("a", "y", "web"),
            ("c", "w", "web"),
        ] {
            s.upsert(pod(ns, name, 1, app, None));
        }
        let all = LabelSelector::everything();
        assert_eq!(names(&s.list(None, &all)), ["a/y", "a/z", "b/x", "c/w"]);
        assert_eq!(names(&s.list(Some("a"), &all)), ["a/y", "a/z"]);
        let web = LabelSelector::parse("app=web").unwrap();
        assert_eq!(names(&s.list(None, &web)), ["a/y", "b/x", "c/w"]);
        assert_eq!(names(&s.list(Some("b"), &web)), ["b/x"]);
        let not_web = LabelSelector::parse("app!=web").unwrap();
        assert_eq!(names(&s.list(None, &not_web)), ["a/z"]);
    }

    #[test]
    fn indexes_follow_label_and_owner_changes() {
        let mut s = Store::new();
        s.upsert(pod("a", "p", 1, "web", Some("rs1")));
        assert_eq!(names(&s.controlled_by("rs1")), ["a/p"]);
        // Relabelled and adopted by another owner.
        s.upsert(pod("a", "p", 2, "db", Some("rs2")));
        assert!(s.controlled_by("rs1").is_empty());
        assert_eq!(names(&s.controlled_by("rs2")), ["a/p"]);
        assert!(
            s.list(None, &LabelSelector::parse("app=web").unwrap())
                .is_empty()
        );
        assert_eq!(
            s.list(None, &LabelSelector::parse("app=db").unwrap()).len(),
            1
        );
        s.remove(&ObjectKey::new(Some("a"), "p"), None);
        assert!(s.controlled_by("rs2").is_empty());
        assert!(s.by_label.is_empty() && s.by_controller.is_empty());
    }

    #[test]
    fn a_relist_reports_missed_deletes_and_changes() {
        let mut s = Store::new();
        s.upsert(pod("a", "keep", 1, "web", None));
        s.upsert(pod("a", "gone", 1, "web", None));
        s.upsert(pod("a", "changed", 1, "web", None));
        let changes = s.replace_all(vec![
            pod("a", "keep", 1, "web", None),
            pod("a", "changed", 2, "web", None),
            pod("a", "new", 1, "web", None),
        ]);
        let summary: Vec<String> = changes
            .iter()
            .map(|c| match c {
                Change::Added(o) => format!("+{}", o.key()),
                Change::Modified { new, .. } => format!("~{}", new.key()),
                Change::Deleted(o) => format!("-{}", o.key()),
            })
            .collect();
        assert_eq!(summary, ["~a/changed", "+a/new", "-a/gone"]);
        assert_eq!(s.len(), 3);
    }

    #[test]
    fn a_name_reused_by_a_new_object_is_a_delete_then_an_add() {
        let mut s = Store::new();
        s.upsert(pod("a", "p", 1, "web", Some("rs1")));
        let recreated = pod_with_uid("a", "p", "u-other", 7, "web", Some("rs2"));
        let changes = s.replace_all(vec![recreated]);
        assert!(
            matches!(&changes[..], [Change::Deleted(old), Change::Added(new)]
                if old.uid() == "u-p" && new.uid() == "u-other"),
            "{changes:?}"
        );
        assert!(s.controlled_by("rs1").is_empty());
        assert_eq!(names(&s.controlled_by("rs2")), ["a/p"]);
        assert_eq!(s.len(), 1);
        // The same through upsert, beside other objects.
        s.upsert(pod("a", "q", 1, "web", Some("rs2")));
        let changes = s.upsert(pod_with_uid("a", "p", "u-third", 8, "db", None));
        assert!(
            matches!(&changes[..], [Change::Deleted(old), Change::Added(new)]
                if old.uid() == "u-other" && new.uid() == "u-third"),
            "{changes:?}"
        );
        assert_eq!(names(&s.controlled_by("rs2")), ["a/q"]);
        let db = LabelSelector::parse("app=db").unwrap();
        assert_eq!(names(&s.list(None, &db)), ["a/p"]);
    }
    /// Random adds, updates, recreations (a new uid under an old name),
    /// deletes and relists, checked after each step against a plain map:
    /// every key is found (or not) and the order lists exactly the map.
    #[test]
    fn lookups_by_key_follow_every_change() {
        let mut rng = fastrand::Rng::with_seed(7);
        let mut s = Store::new();
        let mut want: std::collections::BTreeMap<(String, String), (String, u32)> =
            Default::default();
        let key = |i: u32| (format!("ns-{}", i % 3), format!("p-{i}"));
        for step in 0..4000u32 {
            let i = rng.u32(0..300);
            let (ns, name) = key(i);
            match rng.u8(0..10) {
                0..=5 => {
                    // Add or update; one in eight a recreation.
                    let uid = match want.get(&(ns.clone(), name.clone())) {
                        Some((uid, _)) if rng.u8(0..8) != 0 => uid.clone(),
                        _ => format!("u-{step}"),
                    };
                    s.upsert(pod_with_uid(&ns, &name, &uid, step + 1, "web", None));
                    want.insert((ns, name), (uid, step + 1));
                }
                6..=8 => {
                    let gone = s.remove(&ObjectKey::new(Some(&ns), &name), None);
                    assert_eq!(gone.is_some(), want.remove(&(ns, name)).is_some());
                }
                _ => {
                    // A relist keeping about half.
                    want.retain(|_, _| rng.bool());
                    let objects = want
                        .iter()
                        .map(|((ns, name), (uid, rv))| {
                            pod_with_uid(ns, name, uid, *rv, "web", None)
                        })
                        .collect();
                    s.replace_all(objects);
                }
            }
            assert_eq!(s.len(), want.len(), "step {step}");
            assert_eq!(s.by_key.len(), want.len(), "step {step}: the key table");
            for i in 0..300 {
                let (ns, name) = key(i);
                let k = ObjectKey::new(Some(&ns), &name);
                assert_eq!(
                    s.find(&k.as_ref()).is_some(),
                    want.contains_key(&(ns.clone(), name.clone()))
                );
                let got = s.get(&k);
                let expected = want.get(&(ns, name));
                assert_eq!(
                    got.map(|o| (o.uid().to_owned(), o.resource_version().to_owned())),
                    expected.map(|(uid, rv)| (uid.clone(), rv.to_string())),
                    "step {step}, p-{i}"
                );
            }
        }
        let listed = names(&s.list(None, &LabelSelector::everything()));
        let expected: Vec<String> = want
            .keys()
            .map(|(ns, name)| format!("{ns}/{name}"))
            .collect();
        assert_eq!(listed, expected);
    }

    /// Many objects, so that label sets become bitmaps and the ordered
    /// index splits into blocks; results must match a plain scan.
    #[test]
    fn large_stores_list_like_a_scan() {
        let mut s = Store::new();
        let mut objects = Vec::new();
        for i in (0..3000u32).map(|i| (i * 7) % 3000) {
            let ns = format!("ns-{}", i % 3);
            let name = format!("p-{i:05}");
            let owner = format!("rs-{}", i % 100);
            let text = json!({"metadata": {"name": name, "namespace": ns, "uid": format!("u{i}"),
                "resourceVersion": "1", "labels": {"app": format!("app-{}", i % 50), "tier": "backend",
                    "even": (i % 2 == 0).to_string()},
                "ownerReferences": [{"apiVersion":"apps/v1","kind":"ReplicaSet","name":owner,"uid":owner,"controller":true}]}})
            .to_string();
            objects.push(CachedObject::parse(&text).unwrap());
        }
        s.replace_all(objects);
        // Delete a third, so slots are reused by later adds.
        for i in (0..3000u32).filter(|i| i % 3 == 1) {
            let key = ObjectKey::new(Some(&format!("ns-{}", i % 3)), &format!("p-{i:05}"));
            assert!(s.remove(&key, None).is_some());
        }
        assert_eq!(s.len(), 2000);
        let everything = s.list(None, &LabelSelector::everything());
        let mut sorted = names(&everything);
        sorted.sort_by(|a, b| {
            let split = |k: &str| k.split_once('/').map(|(a, b)| (a.to_owned(), b.to_owned()));
            split(a).cmp(&split(b))
        });
        assert_eq!(names(&everything), sorted);
        for (ns, selector) in [
            (None, "app=app-7"),
            (Some("ns-0"), "app=app-7"),
            (None, "tier=backend"),
            (Some("ns-2"), "tier=backend,even=true"),
            (None, "tier=backend,app in (app-1,app-2)"),
            (Some("ns-0"), "app!=app-3"),
            (None, "app=nothing"),
        ] {
            let selector = LabelSelector::parse(selector).unwrap();
            let want: Vec<String> = everything
                .iter()
                .filter(|o| ns.is_none_or(|ns| o.namespace() == Some(ns)))
                .filter(|o| selector.matches(|k| o.label(k)))
                .map(|o| o.key().to_string())
                .collect();
            assert_eq!(names(&s.list(ns, &selector)), want, "{ns:?} {selector}");
        }
        let owned = names(&s.controlled_by("rs-12"));
        let want: Vec<String> = everything
            .iter()
            .filter(|o| o.controller_uid() == Some("rs-12"))
            .map(|o| o.key().to_string())
            .collect();
        assert_eq!(owned, want);
        assert_eq!(owned.len(), 20);
        assert_eq!(s.keys().len(), 2000);
        assert!(
            s.keys()
                .iter()
                .map(|k| k.to_string())
                .eq(sorted.iter().cloned())
        );
    }

    /// `bytes` counts at least the text and header of every object, plus
    /// some index; and it shrinks back to nothing.
    #[test]
    fn bytes_count_objects_and_indexes() {
        let mut s = Store::new();
        let objects: Vec<CachedObject> = (0..1000)
            .map(|i| {
                pod(
                    "default",
                    &format!("p-{i:04}"),
                    1,
                    &format!("a{}", i % 10),
                    None,
                )
            })
            .collect();
        let text: usize = objects.iter().map(|o| o.text().len()).sum();
        let headers: usize = objects.iter().map(|o| o.size()).sum();
        assert!(headers > text + 1000 * std::mem::size_of::<CachedObject>());
        s.replace_all(objects);
        assert!(s.bytes() > headers + 1000 * 8, "{} vs {headers}", s.bytes());
        assert!(
            s.bytes() < headers + 1000 * 40,
            "{} vs {headers}",
            s.bytes()
        );
        let changes = s.replace_all(Vec::new());
        assert_eq!(changes.len(), 1000);
        assert!(s.is_empty());
        assert_eq!(s.bytes(), 0);
    }
}
