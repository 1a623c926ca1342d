//! Native tests of the StatefulSet controller, through
//! `windlass_sdk::testing`: the harness plays the host's writer, the tests
//! play the scheduler and kubelet.

use std::collections::BTreeMap;

use serde_json::{Value, json};
use windlass_sdk::testing::Harness;
use windlass_sdk::{Object, ObjectRef, Outcome, Time};

use super::StatefulSetController;
use super::pods::ordinal_of;

type H = Harness<StatefulSetController>;

fn t(secs: i64) -> Time {
    let base = Time::parse("2026-03-01T10:00:00Z").unwrap();
    Time::from_millis(base.millis() + secs * 1000)
}

fn set_ref() -> ObjectRef {
    ObjectRef::new("apps/v1", "StatefulSet", "default", "web")
}

fn set(spec: Value) -> Object {
    let mut s = json!({
        "apiVersion": "apps/v1", "kind": "StatefulSet",
        "metadata": {"name": "web", "namespace": "default", "uid": "sts-uid",
                     "generation": 1, "resourceVersion": "1"},
        "spec": {
            "replicas": 3,
            "serviceName": "nginx",
            "podManagementPolicy": "OrderedReady",
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}},
            "revisionHistoryLimit": 10,
            "selector": {"matchLabels": {"app": "nginx"}},
            "template": {
                "metadata": {"labels": {"app": "nginx"}},
                "spec": {"containers": [{"name": "nginx", "image": "nginx:1",
                    "volumeMounts": [{"name": "www", "mountPath": "/usr/share/nginx/html"}]}]}
            },
            "volumeClaimTemplates": [{
                "metadata": {"name": "www"},
                "spec": {"accessModes": ["ReadWriteOnce"],
                         "resources": {"requests": {"storage": "1Gi"}}}
            }]
        }
    });
    for (k, v) in spec.as_object().unwrap() {
        s["spec"][k] = v.clone();
    }
    Object::from_value(s).unwrap()
}

fn step(h: &mut H, secs: i64) -> Outcome {
    h.set_now(t(secs));
    let out = h.reconcile_key(&set_ref()).unwrap();
    h.apply_outcome(&set_ref(), &out).unwrap();
    out
}

/// The kubelet's part: pods being deleted go, the others run and are ready.
fn kubelet(h: &mut H, secs: i64) {
    for mut p in h.list("v1", "Pod") {
        if p.is_being_deleted() {
            h.remove(&p.object_ref());
            continue;
        }
        p.value_mut()["spec"]["nodeName"] = json!("node-1");
        if p.get_str("status.phase").is_none() {
            p.value_mut()["status"] = json!({"phase": "Running", "conditions": [
                {"type": "Ready", "status": "True", "lastTransitionTime": t(secs).to_rfc3339()}]});
        }
        h.insert(p);
    }
}

/// Pods by name, with their image.
fn pods(h: &H) -> BTreeMap<String, String> {
    h.list("v1", "Pod")
        .iter()
        .map(|p| {
            (
                p.name().to_owned(),
                p.get_str("spec.containers.0.image").unwrap().to_owned(),
            )
        })
        .collect()
}

fn names(h: &H) -> Vec<String> {
    pods(h).into_keys().collect()
}

fn status(h: &H) -> Value {
    h.get(&set_ref()).unwrap().get("status").cloned().unwrap()
}

/// Runs the set and the kubelet until nothing changes.
fn settle(h: &mut H, from: i64) -> i64 {
    let mut at = from;
    for _ in 0..40 {
        kubelet(h, at);
        let out = step(h, at);
        at += 1;
        if out.writes.is_empty() {
            return at;
        }
    }
    panic!("did not settle: {:?}", pods(h));
}

#[test]
fn ordered_ready_makes_one_pod_at_a_time_with_its_identity() {
    let mut h = H::new().with_now(t(0)).with_object(set(json!({})));
    let out = step(&mut h, 0);
    assert_eq!(names(&h), ["web-0"]);
    let p = h
        .get(&ObjectRef::new("v1", "Pod", "default", "web-0"))
        .unwrap();
    assert_eq!(p.get_str("spec.hostname"), Some("web-0"));
    assert_eq!(p.get_str("spec.subdomain"), Some("nginx"));
    assert_eq!(p.label("statefulset.kubernetes.io/pod-name"), Some("web-0"));
    assert_eq!(p.label("apps.kubernetes.io/pod-index"), Some("0"));
    assert!(
        p.label("controller-revision-hash")
            .unwrap()
            .starts_with("web-")
    );
    assert_eq!(
        p.get("spec.volumes.0").unwrap(),
        &json!({"name": "www", "persistentVolumeClaim": {"claimName": "www-web-0"}})
    );
    let claim = h
        .get(&ObjectRef::new(
            "v1",
            "PersistentVolumeClaim",
            "default",
            "www-web-0",
        ))
        .unwrap();
    assert_eq!(claim.label("app"), Some("nginx"));
    assert!(claim.controller_ref().is_none());
    let events: Vec<&str> = out.events.iter().map(|e| e.message.as_str()).collect();
    assert_eq!(
        events,
        [
            "create Claim www-web-0 Pod web-0 in StatefulSet web success",
            "create Pod web-0 in StatefulSet web successful"
        ]
    );
    // Nothing more until web-0 is Running and Ready.
    assert!(step(&mut h, 1).applies().all(|o| !o.is("v1", "Pod")));
    kubelet(&mut h, 1);
    step(&mut h, 2);
    assert_eq!(names(&h), ["web-0", "web-1"]);
    settle(&mut h, 3);
    assert_eq!(names(&h), ["web-0", "web-1", "web-2"]);
    let s = status(&h);
    assert_eq!(s["replicas"], 3);
    assert_eq!(s["readyReplicas"], 3);
    assert_eq!(s["currentRevision"], s["updateRevision"]);
}

#[test]
fn parallel_makes_them_all_at_once() {
    let mut h = H::new()
        .with_now(t(0))
        .with_object(set(json!({"podManagementPolicy": "Parallel"})));
    step(&mut h, 0);
    assert_eq!(names(&h), ["web-0", "web-1", "web-2"]);
}

#[test]
fn scaling_down_goes_from_the_highest_ordinal_one_at_a_time() {
    let mut h = H::new().with_now(t(0)).with_object(set(json!({})));
    let at = settle(&mut h, 0);
    let mut s = h.get(&set_ref()).unwrap();
    s.value_mut()["spec"]["replicas"] = json!(1);
    h.insert(s);
    let out = step(&mut h, at);
    let deleted: Vec<&str> = out.deletes().map(|r| r.name.as_str()).collect();
    assert_eq!(deleted, ["web-2"]);
    // web-1 waits until web-2 is gone.
    assert!(step(&mut h, at + 1).deletes().next().is_none());
    kubelet(&mut h, at + 1);
    let out = step(&mut h, at + 2);
    let deleted: Vec<&str> = out.deletes().map(|r| r.name.as_str()).collect();
    assert_eq!(deleted, ["web-1"]);
    settle(&mut h, at + 3);
    assert_eq!(names(&h), ["web-0"]);
    // The claims stay.
    assert_eq!(h.list("v1", "PersistentVolumeClaim").len(), 3);
}

#[test]
fn a_rolling_update_goes_down_to_the_partition() {
    let mut h = H::new().with_now(t(0)).with_object(set(json!({})));
    let at = settle(&mut h, 0);
    let before = status(&h)["updateRevision"].clone();
    let mut s = h.get(&set_ref()).unwrap();
    s.value_mut()["spec"]["template"]["spec"]["containers"][0]["image"] = json!("nginx:2");
    s.value_mut()["spec"]["updateStrategy"]["rollingUpdate"]["partition"] = json!(1);
    s.value_mut()["metadata"]["generation"] = json!(2);
    h.insert(s);
    let out = step(&mut h, at);
    let deleted: Vec<&str> = out.deletes().map(|r| r.name.as_str()).collect();
    assert_eq!(deleted, ["web-2"]);
    settle(&mut h, at + 1);
    let images: Vec<String> = pods(&h).into_values().collect();
    assert_eq!(images, ["nginx:1", "nginx:2", "nginx:2"]);
    let st = status(&h);
    assert_eq!(st["updatedReplicas"], 2);
    assert_eq!(st["currentRevision"], before);
    assert_ne!(st["updateRevision"], before);
    // Revisions 1 and 2.
    let mut revs: Vec<i64> = h
        .list("apps/v1", "ControllerRevision")
        .iter()
        .map(|r| r.get_i64("revision").unwrap())
        .collect();
    revs.sort();
    assert_eq!(revs, [1, 2]);

    // web-0, below the partition, is made again from the current
    // revision's template.
    h.remove(&ObjectRef::new("v1", "Pod", "default", "web-0"));
    settle(&mut h, at + 50);
    assert_eq!(pods(&h)["web-0"], "nginx:1");
}

#[test]
fn an_ended_pod_is_made_again() {
    let mut h = H::new()
        .with_now(t(0))
        .with_object(set(json!({"replicas": 1})));
    let at = settle(&mut h, 0);
    let r = ObjectRef::new("v1", "Pod", "default", "web-0");
    let mut p = h.get(&r).unwrap();
    p.value_mut()["status"]["phase"] = json!("Failed");
    h.insert(p);
    let out = step(&mut h, at);
    assert_eq!(out.deletes().count(), 1);
    kubelet(&mut h, at);
    settle(&mut h, at + 1);
    assert_eq!(names(&h), ["web-0"]);
    assert_eq!(h.get(&r).unwrap().get_str("status.phase"), Some("Running"));
}

#[test]
fn ordinals_are_read_as_upstream() {
    assert_eq!(ordinal_of("web-12", "web"), Some(12));
    assert_eq!(ordinal_of("web-x", "web"), None);
    assert_eq!(ordinal_of("web-", "web"), None);
    assert_eq!(ordinal_of("webby-1", "web"), None);
    assert_eq!(ordinal_of("web-1-2", "web"), None);
}

/// After `kubectl delete sts --cascade=orphan`, a set made again adopts
/// the pods of its names that its selector selects (no "create Pod"
/// event, no new pod), and a rolling update then replaces one of an old
/// revision; a pod of its name that another controller owns is not taken.
#[test]
fn a_set_made_again_adopts_its_orphaned_pods() {
    let orphan = |name: &str, labels: Value, owner: Value| {
        Object::from_value(json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "uid": format!("uid-{name}"),
                "resourceVersion": "3", "labels": labels, "ownerReferences": owner},
            "spec": {"nodeName": "node-1", "containers": [{"name": "nginx", "image": "nginx:0"}]},
            "status": {"phase": "Running", "conditions": [
                {"type": "Ready", "status": "True", "lastTransitionTime": t(0).to_rfc3339()}]}
        }))
        .unwrap()
    };
    let mut h = H::new()
        .with_object(set(
            json!({"replicas": 2, "podManagementPolicy": "Parallel"}),
        ))
        .with_object(orphan(
            "web-0",
            json!({"app": "nginx", "controller-revision-hash": "web-old"}),
            json!([]),
        ))
        .with_object(orphan(
            "web-1",
            json!({"app": "nginx"}),
            json!([{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "x",
                "uid": "rs-uid", "controller": true}]),
        ));
    let out = step(&mut h, 1);
    let messages: Vec<&str> = out.events.iter().map(|e| e.message.as_str()).collect();
    assert!(
        !messages.iter().any(|m| m.contains("create Pod web-0")),
        "{messages:?}"
    );
    let pod = h
        .get(&ObjectRef::new("v1", "Pod", "default", "web-0"))
        .unwrap();
    let controller = pod.controller_ref().expect("adopted");
    assert_eq!(
        (controller.kind, controller.uid),
        ("StatefulSet", "sts-uid")
    );
    assert_eq!(pod.get_str("spec.containers.0.image"), Some("nginx:0"));
    let taken = h
        .get(&ObjectRef::new("v1", "Pod", "default", "web-1"))
        .unwrap();
    assert_eq!(taken.controller_ref().unwrap().uid, "rs-uid");

    // With its other pod free to make, the adopted web-0, of an old
    // revision, is replaced by the rolling update.
    h.remove(&taken.object_ref());
    for secs in 2..12 {
        kubelet(&mut h, secs);
        step(&mut h, secs);
    }
    let images = pods(&h);
    assert_eq!(images.get("web-0").map(String::as_str), Some("nginx:1"));
    assert_eq!(images.get("web-1").map(String::as_str), Some("nginx:1"));
}
