//! Native tests of the DaemonSet controller, through `windlass_sdk::testing`:
//! the harness plays the host's writer, the tests play the scheduler and
//! kubelet (binding pods and making them ready).

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{Value, json};
use windlass_sdk::testing::Harness;
use windlass_sdk::{Object, ObjectRef, Outcome, Time};

use super::DaemonSetController;
use super::nodes::{Node, target_of};

type H = Harness<DaemonSetController>;

fn t(secs: i64) -> Time {
    let base = Time::parse("2026-03-01T10:00:00Z").unwrap();
    Time::from_millis(base.millis() + secs * 1000)
}

fn ds_ref() -> ObjectRef {
    ObjectRef::new("apps/v1", "DaemonSet", "default", "agent")
}

fn node(name: &str, labels: Value, taints: Value) -> Object {
    Object::from_value(json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "spec": {"taints": taints}
    }))
    .unwrap()
}

/// A DaemonSet `agent` with `spec` merged over a plain one.
fn ds(spec: Value) -> Object {
    let mut d = json!({
        "apiVersion": "apps/v1", "kind": "DaemonSet",
        "metadata": {"name": "agent", "namespace": "default", "uid": "ds-uid",
                     "generation": 1, "resourceVersion": "1"},
        "spec": {
            "selector": {"matchLabels": {"app": "agent"}},
            "updateStrategy": {"type": "RollingUpdate",
                               "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}},
            "revisionHistoryLimit": 10,
            "template": {
                "metadata": {"labels": {"app": "agent"}},
                "spec": {"containers": [{"name": "agent", "image": "agent:1"}]}
            }
        }
    });
    for (k, v) in spec.as_object().unwrap() {
        d["spec"][k] = v.clone();
    }
    Object::from_value(d).unwrap()
}

fn harness(spec: Value, nodes: Vec<Object>) -> H {
    let mut h = H::new().with_now(t(0)).with_object(ds(spec));
    for n in nodes {
        h.insert(n);
    }
    h
}

fn three_nodes() -> Vec<Object> {
    vec![
        node("a", json!({"disk": "ssd"}), json!([])),
        node("b", json!({"disk": "hdd"}), json!([])),
        node(
            "gpu",
            json!({"disk": "ssd"}),
            json!([{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]),
        ),
    ]
}

fn step(h: &mut H, secs: i64) -> Outcome {
    h.set_now(t(secs));
    let out = h.reconcile_key(&ds_ref()).unwrap();
    h.apply_outcome(&ds_ref(), &out).unwrap();
    out
}

fn pods(h: &H) -> Vec<Object> {
    h.list("v1", "Pod")
}

/// The pods by the node they are for, with their image.
fn placement(h: &H) -> BTreeMap<String, Vec<String>> {
    let mut m: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for p in pods(h) {
        m.entry(target_of(&p).unwrap_or_default())
            .or_default()
            .push(p.get_str("spec.containers.0.image").unwrap().to_owned());
    }
    m
}

/// Binds and readies every pod, and removes the ones being deleted, as
/// the scheduler and kubelet would.
fn run_all(h: &mut H, secs: i64) {
    for mut p in pods(h) {
        if p.is_being_deleted() {
            h.remove(&p.object_ref());
            continue;
        }
        let node = target_of(&p).unwrap();
        p.value_mut()["spec"]["nodeName"] = json!(node);
        if p.get("status.phase").is_none() {
            p.value_mut()["status"] = json!({"phase": "Running", "conditions": [
                {"type": "Ready", "status": "True", "lastTransitionTime": t(secs).to_rfc3339()}]});
        }
        h.insert(p);
    }
}

fn status(h: &H) -> Value {
    h.get(&ds_ref()).unwrap().get("status").cloned().unwrap()
}

#[test]
fn one_pod_on_every_node_it_belongs_on() {
    let mut h = harness(json!({}), three_nodes());
    let out = step(&mut h, 0);
    // The tainted node is left out.
    assert_eq!(
        placement(&h).keys().cloned().collect::<Vec<_>>(),
        ["a", "b"]
    );
    let p = &pods(&h)[0];
    assert_eq!(p.label("app"), Some("agent"));
    assert!(p.label("controller-revision-hash").is_some());
    assert_eq!(p.label("pod-template-generation"), Some("1"));
    assert_eq!(p.controller_ref().unwrap().kind, "DaemonSet");
    let tolerations = p.get("spec.tolerations").unwrap().to_string();
    for key in ["not-ready", "unreachable", "unschedulable", "disk-pressure"] {
        assert!(tolerations.contains(key), "{tolerations}");
    }
    assert!(
        out.events
            .iter()
            .any(|e| e.message == format!("Created pod: {}", p.name()))
    );
    // As upstream, the counts are of the pods the cache holds: the ones
    // just created count from the next reconcile.
    let s = status(&h);
    assert_eq!(s["desiredNumberScheduled"], 2);
    assert_eq!(s["currentNumberScheduled"], 0);
    assert_eq!(s["numberReady"], 0);
    assert_eq!(s["numberUnavailable"], 2);
    assert_eq!(s["observedGeneration"], 1);

    run_all(&mut h, 1);
    step(&mut h, 1);
    let s = status(&h);
    assert_eq!(
        (s["numberReady"].clone(), s["numberAvailable"].clone()),
        (json!(2), json!(2))
    );
    assert!(s.get("numberUnavailable").is_none(), "{s}");
    assert_eq!(s["updatedNumberScheduled"], 2);
    // Steady: nothing to write.
    assert!(step(&mut h, 2).writes.is_empty());

    // A node joins: it gets a pod too.
    h.insert(node("c", json!({}), json!([])));
    step(&mut h, 3);
    assert_eq!(placement(&h).len(), 3);
}

#[test]
fn selectors_affinity_and_tolerations_pick_the_nodes() {
    let mut spec = ds(json!({})).value()["spec"].clone();
    spec["template"]["spec"]["nodeSelector"] = json!({"disk": "ssd"});
    spec["template"]["spec"]["tolerations"] =
        json!([{"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}]);
    let mut h = harness(spec.clone(), three_nodes());
    step(&mut h, 0);
    assert_eq!(
        placement(&h).keys().cloned().collect::<Vec<_>>(),
        ["a", "gpu"]
    );
    // The pin: matchFields metadata.name in every required term.
    for p in pods(&h) {
        let terms = p
            .get("spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms")
            .unwrap()
            .clone();
        assert_eq!(terms[0]["matchFields"][0]["key"], "metadata.name");
    }

    let mut spec = ds(json!({})).value()["spec"].clone();
    spec["template"]["spec"]["affinity"] = json!({"nodeAffinity": {
    "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "disk", "operator": "NotIn", "values": ["ssd"]}]}
    ]}}});
    let mut h = harness(spec, three_nodes());
    step(&mut h, 0);
    assert_eq!(placement(&h).keys().cloned().collect::<Vec<_>>(), ["b"]);
    let p = &pods(&h)[0];
    let term = p
        .get("spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms.0")
        .unwrap();
    assert_eq!(term["matchExpressions"][0]["key"], "disk", "{term}");
    assert_eq!(term["matchFields"][0]["values"][0], "b", "{term}");
}

#[test]
fn a_node_that_stops_fitting_loses_its_pod_but_only_for_no_execute() {
    let mut h = harness(json!({}), three_nodes());
    step(&mut h, 0);
    run_all(&mut h, 0);
    // A NoSchedule taint: the pod already there stays.
    h.insert(node(
        "a",
        json!({}),
        json!([{"key": "maintenance", "effect": "NoSchedule"}]),
    ));
    let out = step(&mut h, 1);
    assert!(out.deletes().next().is_none());
    assert_eq!(status(&h)["numberMisscheduled"], 1);
    assert_eq!(status(&h)["desiredNumberScheduled"], 1);
    // NoExecute: it goes.
    h.insert(node(
        "a",
        json!({}),
        json!([{"key": "maintenance", "effect": "NoExecute"}]),
    ));
    step(&mut h, 2);
    run_all(&mut h, 2);
    assert_eq!(placement(&h).keys().cloned().collect::<Vec<_>>(), ["b"]);
    // A node removed: its pod goes.
    h.remove(&ObjectRef::cluster("v1", "Node", "b"));
    step(&mut h, 3);
    run_all(&mut h, 3);
    assert!(pods(&h).is_empty());
}

#[test]
fn a_rolling_update_replaces_one_node_at_a_time() {
    let nodes = vec![
        node("a", json!({}), json!([])),
        node("b", json!({}), json!([])),
        node("c", json!({}), json!([])),
    ];
    let mut h = harness(json!({}), nodes);
    step(&mut h, 0);
    run_all(&mut h, 0);
    step(&mut h, 1);
    let mut d = h.get(&ds_ref()).unwrap();
    d.value_mut()["spec"]["template"]["spec"]["containers"][0]["image"] = json!("agent:2");
    d.value_mut()["metadata"]["generation"] = json!(2);
    h.insert(d);
    // Each round deletes one old pod (maxUnavailable 1), the next creates
    // its replacement; never two nodes without an available pod.
    for round in 0..12 {
        let out = step(&mut h, 10 + round);
        let unavailable = 3 - status(&h)["numberAvailable"].as_u64().unwrap_or(0);
        assert!(unavailable <= 1, "round {round}: {:?}", placement(&h));
        run_all(&mut h, 10 + round);
        if out.writes.is_empty() {
            break;
        }
    }
    let all: Vec<String> = placement(&h).into_values().flatten().collect();
    assert_eq!(all, ["agent:2", "agent:2", "agent:2"]);
    assert_eq!(status(&h)["updatedNumberScheduled"], 3);
    // Two revisions, the newest numbered 2.
    let mut revs: Vec<i64> = h
        .list("apps/v1", "ControllerRevision")
        .iter()
        .map(|r| r.get_i64("revision").unwrap())
        .collect();
    revs.sort();
    assert_eq!(revs, [1, 2]);
}

#[test]
fn with_max_surge_the_new_pod_comes_before_the_old_one_goes() {
    let mut h = harness(
        json!({"updateStrategy": {"type": "RollingUpdate",
                                  "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 1}}}),
        vec![node("a", json!({}), json!([]))],
    );
    step(&mut h, 0);
    run_all(&mut h, 0);
    let mut d = h.get(&ds_ref()).unwrap();
    d.value_mut()["spec"]["template"]["spec"]["containers"][0]["image"] = json!("agent:2");
    h.insert(d);
    step(&mut h, 5);
    assert_eq!(placement(&h)["a"].len(), 2);
    run_all(&mut h, 5);
    step(&mut h, 6);
    run_all(&mut h, 6);
    assert_eq!(placement(&h)["a"], ["agent:2"]);
}

#[test]
fn on_delete_replaces_only_deleted_pods() {
    let mut h = harness(
        json!({"updateStrategy": {"type": "OnDelete"}}),
        vec![
            node("a", json!({}), json!([])),
            node("b", json!({}), json!([])),
        ],
    );
    step(&mut h, 0);
    run_all(&mut h, 0);
    let mut d = h.get(&ds_ref()).unwrap();
    d.value_mut()["spec"]["template"]["spec"]["containers"][0]["image"] = json!("agent:2");
    h.insert(d);
    let out = step(&mut h, 5);
    assert!(out.deletes().next().is_none());
    let victim = pods(&h)
        .into_iter()
        .find(|p| target_of(p).as_deref() == Some("a"))
        .unwrap();
    h.remove(&victim.object_ref());
    step(&mut h, 6);
    let p = placement(&h);
    assert_eq!(
        (p["a"].as_slice(), p["b"].as_slice()),
        (&["agent:2".to_owned()][..], &["agent:1".to_owned()][..])
    );
}

#[test]
fn a_reconcile_before_the_cache_has_its_pods_makes_the_same_ones() {
    let h = harness(json!({}), three_nodes());
    let names = |o: &Outcome| -> Vec<String> {
        o.applies()
            .filter(|a| a.is("v1", "Pod"))
            .map(|p| p.name().to_owned())
            .collect()
    };
    let first = h.reconcile_key(&ds_ref()).unwrap();
    let again = h.reconcile_key(&ds_ref()).unwrap();
    assert_eq!(names(&first).len(), 2);
    assert_eq!(names(&first), names(&again));
}

#[test]
fn readiness_waits_for_min_ready_seconds() {
    let mut h = harness(
        json!({"minReadySeconds": 30}),
        vec![node("a", json!({}), json!([]))],
    );
    step(&mut h, 0);
    run_all(&mut h, 0);
    let out = step(&mut h, 10);
    assert_eq!(status(&h)["numberReady"], 1);
    assert!(status(&h).get("numberAvailable").is_none());
    assert_eq!(out.requeue_after, Some(Duration::from_secs(20)));
    step(&mut h, 30);
    assert_eq!(status(&h)["numberAvailable"], 1);
}

#[test]
fn node_predicates_follow_upstream() {
    let n = Node::of(&node(
        "n1",
        json!({"zone": "a", "cores": "8"}),
        json!([{"key": "k", "value": "v", "effect": "NoExecute"}]),
    ));
    let spec = |extra: Value| {
        let mut s = json!({"tolerations": [{"key": "k", "operator": "Exists"}]});
        for (k, v) in extra.as_object().unwrap() {
            s[k] = v.clone();
        }
        s
    };
    let runs = |s: Value| n.verdict(&s).should_run;
    assert!(runs(spec(json!({}))));
    assert!(!n.verdict(&json!({})).should_run);
    assert!(!n.verdict(&json!({})).should_continue);
    let req = |e: Value| {
        json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
        {"nodeSelectorTerms": [e]}}})
    };
    for (term, expected) in [
        (
            json!({"matchExpressions": [{"key": "cores", "operator": "Gt", "values": ["4"]}]}),
            true,
        ),
        (
            json!({"matchExpressions": [{"key": "cores", "operator": "Lt", "values": ["4"]}]}),
            false,
        ),
        (
            json!({"matchExpressions": [{"key": "gpu", "operator": "DoesNotExist"}]}),
            true,
        ),
        (
            json!({"matchExpressions": [{"key": "zone", "operator": "In", "values": ["b"]}]}),
            false,
        ),
        (
            json!({"matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["n1"]}]}),
            false,
        ),
        (json!({}), false),
    ] {
        assert_eq!(
            runs(spec(json!({"affinity": req(term.clone())}))),
            expected,
            "{term}"
        );
    }
    assert!(!runs(spec(json!({"nodeName": "n2"}))));
}

/// After `kubectl delete ds --cascade=orphan`, a DaemonSet made again
/// adopts the pods its selector selects instead of making a second pod on
/// each node (no `SuccessfulCreate`), and then rolls those of an old
/// template; a bare pod of another app is left alone.
#[test]
fn a_daemonset_made_again_adopts_its_orphaned_pods() {
    let mut first = harness(json!({}), three_nodes());
    for secs in 1..6 {
        step(&mut first, secs);
        run_all(&mut first, secs);
    }
    let mut h = harness(
        json!({"template": {"metadata": {"labels": {"app": "agent"}},
            "spec": {"containers": [{"name": "agent", "image": "agent:2"}]}}}),
        three_nodes(),
    );
    for mut p in pods(&first) {
        p.value_mut()["metadata"]["ownerReferences"] = json!(null);
        h.insert(p);
    }
    let mut stranger = pods(&first)[0].clone();
    stranger.value_mut()["metadata"]["name"] = json!("stranger");
    stranger.value_mut()["metadata"]["labels"] = json!({"app": "other"});
    stranger.value_mut()["metadata"]["ownerReferences"] = json!(null);
    h.insert(stranger);
    let before = pods(&first).len();
    assert_eq!(before, 2, "{:?}", placement(&first));

    let out = step(&mut h, 10);
    assert!(out.events.is_empty(), "{:?}", out.events);
    assert_eq!(out.applies().count(), before);
    for p in pods(&h) {
        let controller = p.controller_ref().map(|c| c.uid.to_owned());
        if p.name() == "stranger" {
            assert_eq!(controller, None);
        } else {
            assert_eq!(controller.as_deref(), Some("ds-uid"), "{}", p.name());
        }
    }
    for secs in 11..30 {
        step(&mut h, secs);
        run_all(&mut h, secs);
    }
    let images: Vec<String> = placement(&h).into_values().flatten().collect();
    assert_eq!(images.len(), before + 1, "{:?}", placement(&h));
    assert!(
        images.iter().filter(|i| *i == "agent:2").count() == before,
        "{:?}",
        placement(&h)
    );
}
