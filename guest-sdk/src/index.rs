//! `IndexEntry`: how the host files one object of an indexed watch.
//!
//! client-go's informers have indexers (a function from an object to the
//! keys it is filed under) and kube-scheduler keeps a per-node snapshot of
//! what is requested there. A windlass plugin gets both from one pure
//! function, [`Controller::index`](crate::Controller::index): for each object
//! of a watch marked [`indexed`](crate::Watch::indexed) it returns the keys
//! to file the object under, numbers the host adds up per key, and a compact
//! summary. Reads then cost what they return, not the size of the cluster:
//! [`cache::totals`](crate::cache::totals) gives the sums for a few keys,
//! [`cache::lookup`](crate::cache::lookup) the summaries under one key.

/// The keys, amounts and summary of one object.
///
/// ```
/// use windlass_sdk::IndexEntry;
/// // A pod on node-1 requesting 250 millicores and 64 MiB.
/// let e = IndexEntry::new().key("node-1").amounts([250, 64 << 20]).summary(b"web-1".to_vec());
/// assert_eq!(e.keys, ["node-1"]);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IndexEntry {
    /// The keys the object is filed under.
    pub keys: Vec<String>,
    /// Numbers added up per key.
    pub amounts: Vec<i64>,
    /// A compact form of the object, in the plugin's own encoding.
    pub summary: Vec<u8>,
}

impl IndexEntry {
    /// An entry with no keys (files the object nowhere).
    pub fn new() -> Self {
        Self::default()
    }

    /// Files the object under `key` too.
    pub fn key(mut self, key: impl Into<String>) -> Self {
        self.keys.push(key.into());
        self
    }

    /// Sets the amounts added up per key.
    pub fn amounts(mut self, amounts: impl IntoIterator<Item = i64>) -> Self {
        self.amounts = amounts.into_iter().collect();
        self
    }

    /// Sets the summary `cache::lookup` returns.
    pub fn summary(mut self, summary: Vec<u8>) -> Self {
        self.summary = summary;
        self
    }
}
