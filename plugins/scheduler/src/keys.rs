//! The index keys the scheduler files Nodes and Pods under, and which keys
//! find the pods a selector can select.
//!
//! Nodes: all under [`NODES`] (with amount 1, so its total counts them),
//! and each under one of [`NODE_SHARDS`] shards (`nodes/<n>`, by a hash of
//! its name), so that a decision that needs only part of the nodes reads
//! only some shards. Bound pods (not finished): under their node
//! (`n/<node>`, with the amounts the node's totals add up), their namespace
//! (`ns/<ns>`), each label (`l/<key>=<value>`), [`ALL`], and [`AFFINITY`]
//! if they have pod (anti-)affinity, and when a ReplicaSet,
//! ReplicationController or StatefulSet controls them and they are not
//! being deleted, under that owner and their node (`o/<hash of the
//! owner's uid>/<node>`).
//! Pending pods this scheduler found
//! unschedulable: under [`UNSCHEDULABLE`], and also [`WAITING_FOR_PODS`] if
//! a newly bound pod could help them (pod affinity, spread constraints);
//! pending pods nominated to a node under [`NOMINATED`].

use crate::selector::Selector;

/// Every node.
pub(crate) const NODES: &str = "nodes";
/// How many shards nodes are spread over.
pub(crate) const NODE_SHARDS: u64 = 16;

/// One shard of the nodes.
pub(crate) fn node_shard(shard: u64) -> String {
    format!("nodes/{shard}")
}

/// The shard of the node called `name`.
pub(crate) fn shard_of(name: &str) -> u64 {
    crate::hash::of(&[name.as_bytes()]) % NODE_SHARDS
}

/// Every bound pod.
pub(crate) const ALL: &str = "all";
/// Bound pods with pod affinity or anti-affinity (`PodsWithAffinity`).
pub(crate) const AFFINITY: &str = "aff";
/// Bound pods with a priority below zero: what a pod of priority 0 (the
/// default) could preempt. With none, such a pod does not look for victims.
pub(crate) const NEGATIVE_PRIORITY: &str = "prio<0";
/// Pending pods the scheduler could not place.
pub(crate) const UNSCHEDULABLE: &str = "unsched";
/// Those of them that another pod being bound can help.
pub(crate) const WAITING_FOR_PODS: &str = "unsched-pods";
/// Pending pods nominated to a node (`status.nominatedNodeName`).
pub(crate) const NOMINATED: &str = "nominated";

/// The pods bound to a node.
pub(crate) fn node(name: &str) -> String {
    format!("{NODE_PREFIX}{name}")
}

/// [`node`] without the name.
pub(crate) const NODE_PREFIX: &str = "n/";

/// The bound pods on a node that a controller (by uid) controls and that
/// are not being deleted: the counts of the default spread constraints.
/// (The owner's uid is hashed: a decision reads hundreds of these keys,
/// and a short key is cheaper to pass and to look up.)
pub(crate) fn owned_on(owner_uid: &str, node: &str) -> String {
    owned_prefix(owner_uid) + node
}

/// [`owned_on`] without the node.
pub(crate) fn owned_prefix(owner_uid: &str) -> String {
    format!("o/{:016x}/", crate::hash::of(&[owner_uid.as_bytes()]))
}

/// The bound pods of a namespace.
pub(crate) fn namespace(ns: &str) -> String {
    format!("ns/{ns}")
}

/// The bound pods carrying label `key=value` (in any namespace).
pub(crate) fn label(key: &str, value: &str) -> String {
    format!("l/{key}={value}")
}

/// Keys under which every pod `selector` selects in `namespaces` (`None`:
/// every namespace) is filed. Lookups of them may return more pods than
/// selected; callers match each one.
pub(crate) fn for_selector(selector: &Selector<'_>, namespaces: Option<&[&str]>) -> Vec<String> {
    if selector.is_nothing() {
        return Vec::new();
    }
    if let Some(r) = selector.narrowest_in() {
        return r.values.iter().map(|v| label(&r.key, v)).collect();
    }
    match namespaces {
        Some(list) => list.iter().map(|ns| namespace(ns)).collect(),
        None => vec![ALL.to_owned()],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::selector::{Op, Requirement};

    #[test]
    fn selectors_pick_the_narrowest_keys() {
        let sel = Selector::of(vec![
            Requirement::new("tier", Op::In, &["a", "b"]),
            Requirement::new("app", Op::In, &["web"]),
            Requirement::new("x", Op::Exists, &[]),
        ]);
        assert_eq!(for_selector(&sel, Some(&["prod"])), ["l/app=web"]);
        let exists = Selector::of(vec![Requirement::new("x", Op::Exists, &[])]);
        assert_eq!(for_selector(&exists, Some(&["a", "b"])), ["ns/a", "ns/b"]);
        assert_eq!(for_selector(&exists, None), ["all"]);
        assert!(for_selector(&Selector::nothing(), None).is_empty());
    }
}
