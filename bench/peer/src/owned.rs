//! Pods by the uid of the ReplicaSet that controls them: the owner index
//! kube's reflector `Store` does not have (client-go's controllers get it
//! from an indexer), so a reconcile reads its own pods instead of scanning
//! every pod.
//!
//! [`OwnedPods::apply`] takes the watcher's events as a reflector does —
//! a relist (`Init` … `InitApply` … `InitDone`) is built aside and swapped
//! in whole — and says which ReplicaSets the event touched, so the same
//! pass that keeps the index feeds the controller's triggers. Pods without
//! a controlling ReplicaSet are not kept: nothing here reads them.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::core::v1::Pod;
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;

/// `namespace/name` of a pod.
type PodKey = String;

/// The index; cheap to clone, every clone sees the same pods.
#[derive(Debug, Clone, Default)]
pub struct OwnedPods(Arc<RwLock<Index>>);

#[derive(Debug, Default)]
struct Index {
    live: Pods,
    /// A relist being built, swapped in at `InitDone`.
    relist: Option<Pods>,
}

#[derive(Debug, Default)]
struct Pods {
    /// Controller uid → its pods by key.
    by_owner: HashMap<String, HashMap<PodKey, Arc<Pod>>>,
    /// Pod key → controller uid, to move or drop a pod without searching.
    owner_of: HashMap<PodKey, String>,
}

/// The ReplicaSets `pod` touches: its controller now and the one the index
/// had it under, if different.
fn touched(live: &Pods, pod: &Pod) -> Vec<ObjectRef<ReplicaSet>> {
    let mut out: Vec<ObjectRef<ReplicaSet>> = Vec::new();
    let now = controller(pod);
    if let Some(before) = live.get(&key(pod))
        && let Some((uid, reference)) = controller(before)
        && now.as_ref().is_none_or(|(n, _)| *n != uid)
    {
        out.push(reference);
    }
    out.extend(now.map(|(_, reference)| reference));
    out
}

/// The controlling ReplicaSet of a pod: its uid and a reference to it.
fn controller(pod: &Pod) -> Option<(&str, ObjectRef<ReplicaSet>)> {
    let owner = pod
        .metadata
        .owner_references
        .as_ref()?
        .iter()
        .find(|o| o.controller == Some(true) && o.kind == "ReplicaSet")?;
    let mut reference = ObjectRef::new(&owner.name);
    if let Some(ns) = &pod.metadata.namespace {
        reference = reference.within(ns);
    }
    Some((owner.uid.as_str(), reference))
}

fn key(pod: &Pod) -> PodKey {
    format!(
        "{}/{}",
        pod.metadata.namespace.as_deref().unwrap_or_default(),
        pod.metadata.name.as_deref().unwrap_or_default()
    )
}

impl Pods {
    /// Files `pod` under its controller (moving it if that changed).
    fn insert(&mut self, pod: Pod) {
        let key = key(&pod);
        self.remove(&key);
        let Some((uid, _)) = controller(&pod) else {
            return;
        };
        let uid = uid.to_owned();
        self.owner_of.insert(key.clone(), uid.clone());
        self.by_owner
            .entry(uid)
            .or_default()
            .insert(key, Arc::new(pod));
    }

    fn remove(&mut self, key: &str) {
        let Some(uid) = self.owner_of.remove(key) else {
            return;
        };
        if let Some(pods) = self.by_owner.get_mut(&uid) {
            pods.remove(key);
            if pods.is_empty() {
                self.by_owner.remove(&uid);
            }
        }
    }

    fn get(&self, key: &str) -> Option<&Arc<Pod>> {
        self.by_owner.get(self.owner_of.get(key)?)?.get(key)
    }
}

impl OwnedPods {
    /// Applies one watcher event; returns the ReplicaSets it touched (the
    /// pod's controller, and its previous one if that changed).
    pub fn apply(&self, event: watcher::Event<Pod>) -> Vec<ObjectRef<ReplicaSet>> {
        let mut index = self.0.write().unwrap_or_else(|e| e.into_inner());
        match event {
            watcher::Event::Apply(pod) => {
                let touched = touched(&index.live, &pod);
                index.live.insert(pod);
                touched
            }
            watcher::Event::Delete(pod) => {
                let touched = touched(&index.live, &pod);
                index.live.remove(&key(&pod));
                touched
            }
            watcher::Event::Init => {
                index.relist = Some(Pods::default());
                Vec::new()
            }
            watcher::Event::InitApply(pod) => {
                let touched = touched(&index.live, &pod);
                index.relist.get_or_insert_default().insert(pod);
                touched
            }
            watcher::Event::InitDone => {
                if let Some(relist) = index.relist.take() {
                    index.live = relist;
                }
                Vec::new()
            }
        }
    }

    /// The pods the ReplicaSet with `uid` controls.
    pub fn of(&self, uid: &str) -> Vec<Arc<Pod>> {
        let index = self.0.read().unwrap_or_else(|e| e.into_inner());
        index
            .live
            .by_owner
            .get(uid)
            .map(|pods| pods.values().cloned().collect())
            .unwrap_or_default()
    }

    /// A controlled pod by namespace and name.
    pub fn get(&self, namespace: &str, name: &str) -> Option<Arc<Pod>> {
        let index = self.0.read().unwrap_or_else(|e| e.into_inner());
        index.live.get(&format!("{namespace}/{name}")).cloned()
    }

    /// How many controlled pods are indexed.
    pub fn len(&self) -> usize {
        let index = self.0.read().unwrap_or_else(|e| e.into_inner());
        index.live.owner_of.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference, Time};

    use super::*;

    fn pod(name: &str, owner: Option<&str>) -> Pod {
        Pod {
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some("ns".into()),
                owner_references: owner.map(|uid| {
                    vec![OwnerReference {
                        api_version: "apps/v1".into(),
                        kind: "ReplicaSet".into(),
                        name: format!("rs-{uid}"),
                        uid: uid.into(),
                        controller: Some(true),
                        ..OwnerReference::default()
                    }]
                }),
                ..ObjectMeta::default()
            },
            ..Pod::default()
        }
    }

    fn names(pods: &OwnedPods, uid: &str) -> Vec<String> {
        let mut names: Vec<String> = pods
            .of(uid)
            .iter()
            .map(|p| p.metadata.name.clone().unwrap())
            .collect();
        names.sort();
        names
    }

    fn rs(name: &str) -> ObjectRef<ReplicaSet> {
        ObjectRef::new(name).within("ns")
    }

    #[test]
    fn pods_are_found_by_their_controller_and_touch_it() {
        let pods = OwnedPods::default();
        assert_eq!(
            pods.apply(watcher::Event::Apply(pod("a", Some("u1")))),
            vec![rs("rs-u1")]
        );
        pods.apply(watcher::Event::Apply(pod("b", Some("u1"))));
        pods.apply(watcher::Event::Apply(pod("c", Some("u2"))));
        assert!(
            pods.apply(watcher::Event::Apply(pod("loose", None)))
                .is_empty()
        );
        assert_eq!(names(&pods, "u1"), ["a", "b"]);
        assert_eq!(names(&pods, "u2"), ["c"]);
        assert_eq!(pods.len(), 3, "a pod without a controller is not kept");
        assert!(pods.get("ns", "a").is_some() && pods.get("ns", "loose").is_none());
    }

    #[test]
    fn an_update_replaces_and_a_delete_removes() {
        let pods = OwnedPods::default();
        pods.apply(watcher::Event::Apply(pod("a", Some("u1"))));
        let mut going = pod("a", Some("u1"));
        going.metadata.deletion_timestamp = Some(Time(Default::default()));
        pods.apply(watcher::Event::Apply(going));
        assert!(
            pods.get("ns", "a")
                .unwrap()
                .metadata
                .deletion_timestamp
                .is_some()
        );
        assert_eq!(pods.of("u1").len(), 1);
        assert_eq!(
            pods.apply(watcher::Event::Delete(pod("a", Some("u1")))),
            vec![rs("rs-u1")]
        );
        assert!(pods.of("u1").is_empty() && pods.is_empty());
    }

    #[test]
    fn a_pod_that_changes_controller_moves_and_touches_both() {
        let pods = OwnedPods::default();
        pods.apply(watcher::Event::Apply(pod("a", Some("u1"))));
        let touched = pods.apply(watcher::Event::Apply(pod("a", Some("u2"))));
        assert_eq!(touched, vec![rs("rs-u1"), rs("rs-u2")]);
        assert!(pods.of("u1").is_empty());
        assert_eq!(names(&pods, "u2"), ["a"]);
        // Orphaned: touches the old controller only, and is dropped.
        assert_eq!(
            pods.apply(watcher::Event::Apply(pod("a", None))),
            vec![rs("rs-u2")]
        );
        assert!(pods.is_empty());
    }

    #[test]
    fn a_relist_is_swapped_in_whole_at_init_done() {
        let pods = OwnedPods::default();
        pods.apply(watcher::Event::Apply(pod("old", Some("u1"))));
        pods.apply(watcher::Event::Init);
        pods.apply(watcher::Event::InitApply(pod("new", Some("u1"))));
        assert_eq!(
            names(&pods, "u1"),
            ["old"],
            "readers see the old picture until done"
        );
        pods.apply(watcher::Event::InitDone);
        assert_eq!(
            names(&pods, "u1"),
            ["new"],
            "what the relist did not show is gone"
        );
    }
}
