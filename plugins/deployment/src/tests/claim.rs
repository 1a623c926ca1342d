//! Adoption and release of ReplicaSets (upstream's `ClaimReplicaSets`).

use windlass_sdk::{ObjectRef, Write};

use super::{H, ROLLING, deployment, key};

/// A ReplicaSet `name` in `namespace` labelled `labels`, controlled by the
/// owner of uid `owner` if any.
fn replicaset(name: &str, namespace: &str, labels: &str, owner: Option<&str>) -> String {
    let owner = owner.map_or(String::new(), |uid| {
        format!(
            "ownerReferences: [{{apiVersion: apps/v1, kind: Deployment, name: x, uid: {uid}, controller: true}}]"
        )
    });
    format!(
        r#"
---
apiVersion: apps/v1
kind: ReplicaSet
metadata:
  name: {name}
  namespace: {namespace}
  uid: uid-{name}
  resourceVersion: "5"
  creationTimestamp: "2026-03-01T11:00:00Z"
  labels: {labels}
  {owner}
spec:
  replicas: 1
  selector: {{matchLabels: {labels}}}
  template:
    metadata: {{labels: {labels}}}
    spec: {{containers: [{{name: nginx, image: "nginx:1"}}]}}
"#
    )
}

fn rs_key(name: &str) -> ObjectRef {
    ObjectRef::new("apps/v1", "ReplicaSet", "default", name)
}

/// After `kubectl delete deployment --cascade=orphan`, a Deployment made
/// again adopts the ReplicaSets its selector selects, on their own, before
/// it plans anything; it leaves alone those it does not select, those of
/// another namespace or another controller.
#[test]
fn orphan_replicasets_the_selector_selects_are_adopted_first() {
    let text = deployment(2, ROLLING)
        + &replicaset("web-a", "default", "{app: web}", None)
        + &replicaset("web-b", "default", "{app: web, track: x}", None)
        + &replicaset("db", "default", "{app: db}", None)
        + &replicaset("web-other", "other", "{app: web}", None)
        + &replicaset("web-taken", "default", "{app: web}", Some("someone"));
    let mut h = H::new().with_objects(&text).unwrap();
    let out = h.reconcile_key(&key()).unwrap();
    let mut adopted: Vec<&str> = out.applies().map(|o| o.name()).collect();
    adopted.sort_unstable();
    assert_eq!(adopted, ["web-a", "web-b"]);
    assert_eq!(out.writes.len(), 2, "adoption goes on its own");
    h.apply_outcome(&key(), &out).unwrap();
    for name in ["web-a", "web-b"] {
        let rs = h.get(&rs_key(name)).unwrap();
        let controller = rs.controller_ref().expect("a controller");
        assert_eq!((controller.kind, controller.uid), ("Deployment", "dep-uid"));
    }
    let taken = h.get(&rs_key("web-taken")).unwrap();
    assert_eq!(taken.controller_ref().unwrap().uid, "someone");
    assert!(h.get(&rs_key("db")).unwrap().controller_ref().is_none());
}

/// A ReplicaSet the Deployment controls that its selector no longer
/// selects is released (its controller reference removed, with its uid
/// and resourceVersion as preconditions), on its own.
#[test]
fn an_owned_replicaset_the_selector_no_longer_selects_is_released() {
    let text =
        deployment(2, ROLLING) + &replicaset("web-a", "default", "{app: other}", Some("dep-uid"));
    let mut h = H::new().with_objects(&text).unwrap();
    let out = h.reconcile_key(&key()).unwrap();
    assert_eq!(out.writes.len(), 1, "{:?}", out.writes);
    let Write::MergePatch { target, patch, .. } = &out.writes[0] else {
        panic!("a merge patch: {:?}", out.writes);
    };
    assert_eq!(target, &rs_key("web-a"));
    assert!(patch["metadata"]["ownerReferences"].is_null(), "{patch}");
    assert_eq!(patch["metadata"]["uid"], "uid-web-a");
    assert_eq!(patch["metadata"]["resourceVersion"], "5");
    h.apply_outcome(&key(), &out).unwrap();
    assert!(h.get(&rs_key("web-a")).unwrap().controller_ref().is_none());
    // Then it makes its own ReplicaSet, and leaves the released one be.
    let out = h.reconcile_key(&key()).unwrap();
    assert!(
        out.applies().any(|o| o.name() != "web-a"),
        "{:?}",
        out.writes
    );
}

/// The ReplicaSet watch is indexed: a Deployment's ReplicaSets under its
/// uid, live orphans counted under their namespace, and nothing for a
/// ReplicaSet another kind controls or an orphan being deleted.
#[test]
fn replicasets_are_indexed_by_owner_and_orphans_counted() {
    let text = replicaset("mine", "default", "{app: web}", Some("dep-uid"))
        + &replicaset("bare", "team", "{app: web}", None)
        + &replicaset("other", "default", "{app: web}", Some("x"))
            .replace("kind: Deployment", "kind: Rollout")
        + &replicaset("leaving", "default", "{app: web}", None).replace(
            "resourceVersion: \"5\"",
            "resourceVersion: \"5\"\n  deletionTimestamp: \"2026-03-01T11:30:00Z\"",
        );
    let h = H::new().with_objects(&text).unwrap();
    let entry = |name: &str, ns: &str| {
        let rs = h
            .get(&ObjectRef::new("apps/v1", "ReplicaSet", ns, name))
            .unwrap();
        h.index(&rs)
    };
    assert_eq!(entry("mine", "default").unwrap().keys, ["dep-uid"]);
    let orphan = entry("bare", "team").unwrap();
    assert_eq!(orphan.keys, ["orphans/team"]);
    assert_eq!(orphan.amounts, [1]);
    assert!(orphan.summary.is_empty());
    assert!(entry("other", "default").is_none());
    assert!(entry("leaving", "default").is_none());
}
