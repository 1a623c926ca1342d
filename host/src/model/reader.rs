//! The read side of the host's caches as a plugin sees them
//! ([`CacheReader`]), including the plugin's own index (contract 0.2).
//!
//! The informer caches, a plugin's view of them, and the fixed object set of
//! offline runs all implement it; the runtime's `cache` import and the
//! writer's live lookups only ever see this trait.

use std::sync::Arc;

use windlass_selector::LabelSelector;

use super::{CachedObject, KindRef, ObjectRef, Text};

/// Read access to cached objects, as JSON text, and to a plugin's index.
pub trait CacheReader: Send + Sync {
    /// One object by reference.
    fn get(&self, object: &ObjectRef) -> Option<Text>;

    /// One object by reference, with its parsed header (name, owners,
    /// labels …), when the reader keeps objects that way; `None` means
    /// "ask [`CacheReader::get`]", not "absent".
    fn get_object(&self, object: &ObjectRef) -> Option<Arc<CachedObject>> {
        let _ = object;
        None
    }

    /// Every object of `kind`, optionally in one namespace, matching `selector`,
    /// ordered by namespace then name.
    fn list(&self, kind: &KindRef, namespace: Option<&str>, selector: &LabelSelector) -> Vec<Text>;

    /// Whether the reader caches objects of `kind` at all (a kind a plugin
    /// only writes is not cached, so "not found" means nothing there).
    fn holds(&self, kind: &KindRef) -> bool {
        let _ = kind;
        true
    }

    /// The index of `kind` (0.2), if the reader has one for it.
    fn index(&self, kind: &KindRef) -> Option<&dyn IndexReader> {
        let _ = kind;
        None
    }
}

/// Reads one kind's index: what a plugin's `index` filed under each key.
/// Every read also reports the key's version, which changes whenever the
/// key's members or totals do, so a writer can tell whether what a
/// reconcile read is still true (see `IndexRead`).
pub trait IndexReader: Send + Sync {
    /// The summaries filed under `key`, ordered by namespace then name, and
    /// the key's version.
    fn lookup(&self, key: &str) -> (Vec<Arc<[u8]>>, u64);

    /// The objects filed under `key`, ordered by namespace then name, and
    /// the key's version.
    fn lookup_objects(&self, key: &str) -> (Vec<Text>, u64);

    /// For each of `keys`, the sums of the amounts filed under it and the
    /// key's version, read at one instant (a decision reads hundreds).
    fn totals(&self, keys: &[String]) -> Vec<(Vec<i64>, u64)>;
}

/// A key of a plugin's index a call read, and its version then.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct IndexRead {
    /// Shared by the reads of one call (a decision reads hundreds of keys).
    pub kind: Arc<KindRef>,
    pub key: String,
    pub version: u64,
}

/// A cache with nothing in it.
#[derive(Debug, Default, Clone, Copy)]
pub struct EmptyCache;

impl CacheReader for EmptyCache {
    fn get(&self, _: &ObjectRef) -> Option<Text> {
        None
    }

    fn list(&self, _: &KindRef, _: Option<&str>, _: &LabelSelector) -> Vec<Text> {
        Vec::new()
    }
}
