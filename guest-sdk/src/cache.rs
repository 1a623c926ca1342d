//! Read-only access to the host's informer caches.
//!
//! Reads are instant and never touch the network. A plugin may read only the
//! kinds its manifest declares (`reconciles`, `owns`, `reads`); reading any
//! other kind returns an error naming it, and the host fails the reconcile.
//!
//! Natively (under `cargo test`) these functions read the fake cache of the
//! [`crate::testing::Harness`] that is running the call.

use serde_json::Value;

use crate::{Error, KindRef, Object, ObjectRef};

/// One object by reference, or `None` if the cache does not hold it.
pub fn get(object: &ObjectRef) -> Result<Option<Object>, Error> {
    #[cfg(target_arch = "wasm32")]
    {
        crate::wasm::cache_get(object)
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        crate::testing::context::cache_get(object)
    }
}

/// Every cached object of `kind`, optionally only in `namespace` and matching
/// `label_selector` (e.g. `app=web,tier in (a,b)`), ordered by namespace then
/// name.
pub fn list(
    kind: &KindRef,
    namespace: Option<&str>,
    label_selector: Option<&str>,
) -> Result<Vec<Object>, Error> {
    #[cfg(target_arch = "wasm32")]
    {
        crate::wasm::cache_list(kind, namespace, label_selector)
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        crate::testing::context::cache_list(kind, namespace, label_selector)
    }
}

/// The orphans of `kind` in `namespace` that the `metav1.LabelSelector`
/// `selector` selects: objects no controller owns and that are not being
/// deleted — what a controller may adopt (upstream's `ClaimObject`). The
/// host's label index narrows the list by the selector's `matchLabels`
/// ([`match_labels`](crate::match_labels)); the whole selector is checked
/// here. A controller adopts one by applying its identity.
pub fn orphans(kind: &KindRef, namespace: &str, selector: &Value) -> Result<Vec<Object>, Error> {
    let pinned = crate::match_labels(selector);
    let mut objects = list(kind, Some(namespace), pinned.as_deref())?;
    objects.retain(|o| {
        o.controller_ref().is_none() && o.deletion_timestamp().is_none() && o.selected_by(selector)
    });
    Ok(objects)
}

/// The summaries (see [`IndexEntry`](crate::IndexEntry)) of the objects of
/// an indexed `kind` filed under `key`, ordered by namespace then name.
pub fn lookup(kind: &KindRef, key: &str) -> Result<Vec<Vec<u8>>, Error> {
    #[cfg(target_arch = "wasm32")]
    {
        crate::wasm::cache_lookup(kind, key)
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        crate::testing::context::cache_lookup(kind, key)
    }
}

/// The objects of an indexed `kind` filed under `key`, ordered by namespace
/// then name.
pub fn lookup_objects(kind: &KindRef, key: &str) -> Result<Vec<Object>, Error> {
    #[cfg(target_arch = "wasm32")]
    {
        crate::wasm::cache_lookup_objects(kind, key)
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        crate::testing::context::cache_lookup_objects(kind, key)
    }
}

/// For each of `keys`, the sums of the amounts of the objects of an indexed
/// `kind` filed under it. Each answer is as long as the longest amounts list
/// filed under its key (empty if nothing is); read a missing position as 0.
pub fn totals(kind: &KindRef, keys: &[&str]) -> Result<Vec<Vec<i64>>, Error> {
    #[cfg(target_arch = "wasm32")]
    {
        crate::wasm::cache_totals(kind, keys)
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        crate::testing::context::cache_totals(kind, keys)
    }
}
