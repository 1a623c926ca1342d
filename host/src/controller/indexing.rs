//! One plugin's indexes (contract 0.2): a task per indexed watch keeps the
//! plugin's [`SharedIndex`] of that kind in step with the informer, by
//! calling the plugin's `index` for every object that changes; for an
//! indexed `reads` watch it calls `map` only when an object's entry changed
//! (appeared, moved, went). And [`Binder`]: the "assume" of a binding, which
//! files the pod under its new node in the plugin's index before the
//! binding is sent, or refuses it when what the reconcile read has changed.
//!
//! An indexed `owns` watch files only the plugin's own children: an object
//! controlled by an object of the primary kind that the plugin does not
//! reconcile (another instance's, or one outside its selector) is not
//! indexed, so N instances of one component over one shared pod watch do
//! not each index every pod. Its owner's uid is remembered instead, and
//! should that owner come into the plugin's cache later (its labels
//! changed, or it arrived after its children), its reconcile files those
//! children first ([`file_skipped_children`]), before it reads the index.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tokio::sync::mpsc::UnboundedReceiver;

use super::Shared;
use crate::cache::Change;
use crate::contract::{IndexEntry, Outcome, SubresourceCreate, Write};
use crate::index::SharedIndex;
use crate::informer::Informer;
use crate::model::{CacheReader, CachedObject, KindRef, ObjectKey, ObjectRef, Text};
use crate::writer::Assume;

/// One indexed watch of a plugin.
pub(super) struct IndexedWatch {
    pub kind: KindRef,
    pub informer: Arc<Informer>,
    pub index: Arc<SharedIndex>,
    /// A `reads` watch: entry changes go through `map`.
    pub reads: bool,
    /// An `owns` watch: each change, once filed, requeues the child's
    /// controller owner (so its reconcile reads the index at or past it).
    pub owns: bool,
    /// Of an `owns` watch: the uids of owners not in the primary cache
    /// whose children were not filed (see the module docs).
    pub skipped: Mutex<HashSet<String>>,
}

/// Keeps one index in step: fills it from the informer's cache once it has
/// synced, then follows the changes the informer reports (`changes` was
/// subscribed before the fill, so nothing falls between; what arrives twice
/// or late is ignored by version).
pub(super) async fn follow(
    shared: Arc<Shared>,
    which: usize,
    mut changes: UnboundedReceiver<Change>,
) {
    let watch = &shared.indexed[which];
    watch.informer.wait_synced().await;
    let everything = windlass_selector::LabelSelector::everything();
    let objects = watch.informer.cache().read(|s| s.list(None, &everything));
    for object in objects {
        file(&shared, watch, &object).await;
    }
    tracing::debug!(plugin = %shared.manifest.name, kind = %watch.kind, objects = watch.index.read(|i| i.len()), "index built");
    shared
        .ready
        .send_modify(|pending| *pending = pending.saturating_sub(1));
    while let Some(change) = changes.recv().await {
        let changed = match &change {
            Change::Added(o) | Change::Modified { new: o, .. } => file(&shared, watch, o).await,
            Change::Deleted(o) => {
                let key = ObjectKey::from(o.key());
                if watch.owns {
                    forget_skipped_owner(watch, o);
                }
                watch.index.write(|i| i.remove(&key, version(o)))
            }
        };
        if changed && watch.reads {
            super::map_one(&shared, change.object().text().clone()).await;
        }
        if watch.owns {
            let kind = &shared.manifest.reconciles.kind;
            for owner in super::keys::cached_owners(kind, &shared.primary, &change) {
                shared.queue.add(owner);
            }
            for adopter in super::keys::adopters(&shared.primary, &change) {
                shared.queue.add(adopter);
            }
        }
    }
}

/// Whether `child`, of an `owns` watch, is one the plugin reconciles the
/// owner of (or has no owner of the primary kind). When not, its owner's
/// uid is remembered — decided under the lock that
/// [`file_skipped_children`] takes, so an owner cached meanwhile either is
/// seen here or finds its uid there.
fn own_child(shared: &Shared, watch: &IndexedWatch, child: &CachedObject) -> bool {
    let Some(owner) = super::keys::owner(&shared.manifest.reconciles.kind, child) else {
        return true;
    };
    let mut skipped = super::lock(&watch.skipped);
    if shared.primary.cache().read(|s| s.get(&owner).is_some()) {
        return true;
    }
    if let Some(c) = child.controller() {
        skipped.insert(c.uid.to_owned());
    }
    false
}

/// Forgets a skipped owner once its last child is gone, so that the owners
/// remembered are only those with children (not every other instance's
/// ReplicaSet the host ever saw).
fn forget_skipped_owner(watch: &IndexedWatch, child: &CachedObject) {
    let Some(uid) = child.controller_uid() else {
        return;
    };
    let mut skipped = super::lock(&watch.skipped);
    if skipped.contains(uid)
        && watch
            .informer
            .cache()
            .read(|s| s.controlled_by(uid).is_empty())
    {
        skipped.remove(uid);
    }
}

/// Files the children of `primary` that were passed over while it was not
/// in the plugin's cache: called before its reconcile reads the index.
pub(super) async fn file_skipped_children(shared: &Arc<Shared>, primary: &CachedObject) {
    let uid = primary.uid();
    for watch in shared.indexed.iter().filter(|w| w.owns) {
        if !super::lock(&watch.skipped).remove(uid) {
            continue;
        }
        let children = watch.informer.cache().read(|s| s.controlled_by(uid));
        for child in &children {
            file(shared, watch, child).await;
        }
    }
}

fn version(o: &CachedObject) -> u64 {
    o.resource_version().parse().unwrap_or(0)
}

/// Files one object; returns whether its entry changed. An object already
/// filed at this version is not indexed again, and a child of someone
/// else's is not filed at all (it leaves the index if it was in it).
async fn file(shared: &Arc<Shared>, watch: &IndexedWatch, object: &Arc<CachedObject>) -> bool {
    let key = ObjectKey::from(object.key());
    let v = version(object);
    if watch.owns && !own_child(shared, watch, object) {
        return watch.index.write(|i| i.remove(&key, v));
    }
    if watch.index.read(|i| i.version_of(&key)) == Some(v) {
        return false;
    }
    let entry = index_entry(shared, object.text().clone()).await;
    watch
        .index
        .write(|i| i.file(key, v, object.text().clone(), entry))
}

/// The plugin's entry for `text`; a failing `index` files the object
/// nowhere (logged: the plugin's reads then miss it until it changes).
async fn index_entry(shared: &Arc<Shared>, text: Text) -> Option<IndexEntry> {
    match shared.plugin().index_async(text, shared.view()).await {
        Ok(entry) => entry,
        Err(e) => {
            shared
                .stats
                .failures
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            tracing::warn!(plugin = %shared.manifest.name, error = %e, "index failed; the object is filed nowhere");
            None
        }
    }
}

/// The bindings of one outcome, prepared for [`Assume`]: each pod's entry
/// as the plugin files it once bound.
pub(super) struct Binder {
    index: Arc<SharedIndex>,
    /// Key → version, of the pod index's keys the reconcile read.
    read: HashMap<String, u64>,
    /// Each pod: its key, its text and entry once bound, and the version
    /// the decision saw.
    bound: HashMap<ObjectRef, (ObjectKey, Text, IndexEntry, u64)>,
}

impl Binder {
    /// Prepares the bindings in `outcome` when the plugin indexes pods;
    /// `None` when there is nothing to assume.
    pub(super) async fn prepare(shared: &Arc<Shared>, outcome: &Outcome) -> Option<Binder> {
        let pods = KindRef::new("v1", "Pod");
        let index = shared
            .indexed
            .iter()
            .find(|w| w.kind == pods)?
            .index
            .clone();
        let mut bound = HashMap::new();
        for write in &outcome.writes {
            let Write::CreateSubresource(SubresourceCreate {
                target,
                subresource,
                body,
            }) = write
            else {
                continue;
            };
            if subresource != "binding" || !target.is_of(&pods) {
                continue;
            }
            let Some(node) = serde_json::from_str::<Value>(body.get())
                .ok()
                .and_then(|b| b.pointer("/target/name")?.as_str().map(str::to_owned))
            else {
                continue;
            };
            let key = ObjectKey::from(target.key());
            let text = index
                .read(|i| i.text_of(&key))
                .or_else(|| shared.view.get(target));
            let Some(text) = text else { continue };
            let Some((assumed, filed_at)) = bound_pod(&text, &node) else {
                continue;
            };
            // The decision was made on the pod as the reconciled watch has
            // it, which may be newer than what the index has filed yet.
            let reconciled_at = (shared.manifest.reconciles.kind == pods)
                .then(|| shared.primary.cache().read(|s| s.get(&key)))
                .flatten()
                .and_then(|o| o.resource_version().parse().ok())
                .unwrap_or(0);
            let decided_at = filed_at.max(reconciled_at);
            let Some(entry) = index_entry(shared, assumed.clone()).await else {
                continue;
            };
            bound.insert(target.clone(), (key, assumed, entry, decided_at));
        }
        if bound.is_empty() {
            return None;
        }
        // Only the keys the bound pods are filed under are checked, and a
        // decision reads hundreds (the totals of every node it looks at):
        // keep just those.
        let filed: HashSet<&str, foldhash::fast::RandomState> = bound
            .values()
            .flat_map(|(_, _, entry, _)| entry.keys.iter().map(String::as_str))
            .collect();
        let read = outcome
            .index_reads
            .iter()
            .filter(|r| *r.kind == pods && filed.contains(r.key.as_str()))
            .map(|r| (r.key.clone(), r.version))
            .collect();
        Some(Binder { index, read, bound })
    }
}

impl Assume for Binder {
    fn before_bind(&self, pod: &ObjectRef, _node: &str) -> Result<(), String> {
        let Some((key, text, entry, decided_at)) = self.bound.get(pod) else {
            return Ok(());
        };
        let read: HashMap<&str, u64> = self.read.iter().map(|(k, v)| (k.as_str(), *v)).collect();
        self.index
            .write(|i| i.assume(key.clone(), text.clone(), entry.clone(), *decided_at, &read))
            .map_err(|c| format!("binding {pod}: {}", c.0))
    }

    fn after_bind(&self, pod: &ObjectRef, bound: bool) {
        if bound {
            return;
        }
        if let Some((key, ..)) = self.bound.get(pod) {
            self.index.write(|i| i.forget_assumption(key));
        }
    }
}

/// The pod `text` as the binding subresource leaves it: on `node`, with
/// `PodScheduled=True`; and the resourceVersion `text` has.
fn bound_pod(text: &str, node: &str) -> Option<(Text, u64)> {
    let mut pod: Value = serde_json::from_str(text).ok()?;
    let version = pod
        .pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let spec = pod.get_mut("spec")?.as_object_mut()?;
    spec.insert("nodeName".into(), json!(node));
    let status = pod
        .as_object_mut()?
        .entry("status")
        .or_insert_with(|| json!({}));
    if let Some(status) = status.as_object_mut() {
        let conditions = status.entry("conditions").or_insert_with(|| json!([]));
        if let Some(list) = conditions.as_array_mut() {
            list.retain(|c| c["type"] != "PodScheduled");
            list.push(json!({"type": "PodScheduled", "status": "True"}));
        }
    }
    Some((pod.to_string().into(), version))
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_bound_pod_has_its_node_and_scheduled_condition() {
        let pod = r#"{"metadata":{"name":"p"},"spec":{"containers":[]},"status":{"conditions":[{"type":"PodScheduled","status":"False"}]}}"#;
        let bound: serde_json::Value =
            serde_json::from_str(&super::bound_pod(pod, "n1").unwrap().0).unwrap();
        assert_eq!(bound["spec"]["nodeName"], "n1");
        assert_eq!(
            bound["status"]["conditions"],
            serde_json::json!([{"type": "PodScheduled", "status": "True"}])
        );
        assert!(super::bound_pod("[]", "n1").is_none());
    }
}
