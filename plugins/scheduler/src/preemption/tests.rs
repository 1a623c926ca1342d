//! `DefaultPreemption` through the SDK harness: victims chosen and spared
//! as upstream chooses them, the node with the least important victims,
//! the wait for victims to go, and the messages when nothing can be done.

use windlass_sdk::{EventType, Write};

use crate::tests::{H, failed_scheduling, key, node_of, node_yaml, pod_yaml};

/// A pod of `cpu` with `priority`, bound to `node` (started at `start`)
/// or pending.
fn pod(name: &str, cpu: &str, priority: i32, node: Option<&str>, start: &str) -> String {
    labelled(name, "app: x", cpu, priority, node, start)
}

/// [`pod`] with `labels`.
fn labelled(
    name: &str,
    labels: &str,
    cpu: &str,
    priority: i32,
    node: Option<&str>,
    start: &str,
) -> String {
    let place = node.map_or(String::new(), |n| format!("nodeName: {n}\n  "));
    let yaml = pod_yaml(
        name,
        labels,
        &format!(
            "{place}priority: {priority}\n  containers: [{{name: c, image: nginx, resources: {{requests: {{cpu: \"{cpu}\"}}}}}}]"
        ),
    );
    match node {
        Some(_) => format!("{yaml}status: {{phase: Running, startTime: \"{start}\"}}\n"),
        None => yaml,
    }
}

/// The pods an outcome deletes, by name.
fn deleted(out: &windlass_sdk::Outcome) -> Vec<String> {
    out.writes
        .iter()
        .filter_map(|w| match w {
            Write::Delete { target, .. } => Some(target.name.clone()),
            _ => None,
        })
        .collect()
}

fn nominated(h: &H, name: &str) -> Option<String> {
    h.get(&key(name))?
        .get_str("status.nominatedNodeName")
        .map(str::to_owned)
}

#[test]
fn a_higher_priority_pod_preempts_as_few_and_as_unimportant_pods_as_it_can() {
    // n1: pods of priority 5 and 1; n2: pods of priority 1 and 1, full.
    // The 1-cpu pod of priority 10 needs one 1-cpu pod gone on either:
    // n1 spares its 5 (the most important) and gives up its 1; n2 gives
    // up one of its 1s. Equal so far: the node whose victim started
    // later is chosen, so `late` goes.
    let text = node_yaml("n1", "2", "8Gi", 110, "")
        + &node_yaml("n2", "2", "8Gi", 110, "")
        + &pod("keep", "1", 5, Some("n1"), "2026-01-01T00:00:00Z")
        + &pod("late", "1", 1, Some("n1"), "2026-01-03T00:00:00Z")
        + &pod("early-a", "1", 1, Some("n2"), "2026-01-02T00:00:00Z")
        + &pod("early-b", "1", 1, Some("n2"), "2026-01-02T00:00:00Z")
        + &pod("urgent", "1", 10, None, "");
    let mut h = H::new().with_objects(&text).unwrap();
    let out = h.reconcile_key(&key("urgent")).unwrap();
    assert_eq!(deleted(&out), ["late"], "{out:?}");
    let preempted: Vec<(&str, &str)> = out
        .events
        .iter()
        .filter(|e| e.reason == "Preempted")
        .map(|e| {
            (
                e.message.as_str(),
                e.regarding.as_ref().unwrap().name.as_str(),
            )
        })
        .collect();
    assert_eq!(
        preempted,
        [("Preempted by pod uid-urgent on node n1", "late")]
    );
    assert_eq!(
        failed_scheduling(&out),
        ["0/2 nodes are available: 2 Insufficient cpu."]
    );
    h.apply_outcome(&key("urgent"), &out).unwrap();
    assert_eq!(nominated(&h, "urgent").as_deref(), Some("n1"));
    // Marked before it goes, as upstream marks a victim.
    let late = h.get(&key("late")).expect("terminating, not gone yet");
    let marked = late
        .get("status.conditions")
        .and_then(|c| c.as_array())
        .and_then(|cs| cs.iter().find(|c| c["type"] == "DisruptionTarget"))
        .cloned()
        .unwrap_or_default();
    assert_eq!(marked["reason"], "PreemptionByScheduler", "{late:?}");
    assert_eq!(
        marked["message"],
        "default-scheduler: preempting to accommodate a higher priority pod"
    );
    assert_eq!(
        late.get_str("status.phase"),
        Some("Running"),
        "other status kept"
    );

    // The victim terminating: the pod waits for it, preempting no more.
    let out = h.reconcile_key(&key("urgent")).unwrap();
    assert!(deleted(&out).is_empty(), "{out:?}");
    assert_eq!(
        failed_scheduling(&out),
        [
            "0/2 nodes are available: 2 Insufficient cpu. preemption: not eligible due to a terminating pod on the nominated node.."
        ]
    );

    // Gone: the pod goes where room was made.
    h.remove(&key("late"));
    let out = h.reconcile_key(&key("urgent")).unwrap();
    h.apply_outcome(&key("urgent"), &out).unwrap();
    assert_eq!(node_of(&h, "urgent").as_deref(), Some("n1"));
}

#[test]
fn nothing_to_preempt_says_why_per_node() {
    // n1 is tainted (preemption cannot help), n2 holds a pod of the same
    // priority (no victims), n3 a lower one too small to make room.
    let taint = "\n  taints: [{key: dedicated, value: gpu, effect: NoSchedule}]";
    let tainted = node_yaml("n1", "2", "8Gi", 110, "")
        .replace("\nstatus:", &format!("\nspec:{taint}\nstatus:"));
    let text = tainted
        + &node_yaml("n2", "2", "8Gi", 110, "")
        + &node_yaml("n3", "1", "8Gi", 110, "")
        + &pod("peer", "2", 10, Some("n2"), "2026-01-01T00:00:00Z")
        + &pod("small", "500m", 1, Some("n3"), "2026-01-01T00:00:00Z")
        + &pod("urgent", "1500m", 10, None, "");
    let h = H::new().with_objects(&text).unwrap();
    let out = h.reconcile_key(&key("urgent")).unwrap();
    assert!(deleted(&out).is_empty(), "{out:?}");
    assert_eq!(
        failed_scheduling(&out),
        [
            "0/3 nodes are available: 1 node(s) had untolerated taint {dedicated: gpu}, 2 Insufficient cpu. \
          preemption: 0/3 nodes are available: 1 Insufficient cpu, 1 No preemption victims found for incoming pod, \
          1 Preemption is not helpful for scheduling.."
        ]
    );

    // Priority 0 with no pod below it anywhere: no victims, not searched.
    let text = node_yaml("n1", "1", "8Gi", 110, "")
        + &pod("busy", "1", 0, Some("n1"), "2026-01-01T00:00:00Z")
        + &pod("plain", "1", 0, None, "");
    let h = H::new().with_objects(&text).unwrap();
    let out = h.reconcile_key(&key("plain")).unwrap();
    assert_eq!(
        failed_scheduling(&out),
        [
            "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod.."
        ]
    );

    // `preemptionPolicy: Never` waits instead.
    let text = node_yaml("n1", "1", "8Gi", 110, "")
        + &pod("busy", "1", 0, Some("n1"), "2026-01-01T00:00:00Z")
        + &pod("polite", "1", 10, None, "")
            .replace("priority: 10", "priority: 10\n  preemptionPolicy: Never");
    let h = H::new().with_objects(&text).unwrap();
    let out = h.reconcile_key(&key("polite")).unwrap();
    assert!(deleted(&out).is_empty());
    assert_eq!(
        out.events
            .iter()
            .filter(|e| e.type_ == EventType::Warning)
            .count(),
        1
    );
    assert_eq!(
        failed_scheduling(&out),
        [
            "0/1 nodes are available: 1 Insufficient cpu. preemption: not eligible due to preemptionPolicy=Never.."
        ]
    );
}

/// A PodDisruptionBudget in `default` selecting `app: <app>`, with
/// `allowed` disruptions left and `disrupted` pods already being disrupted.
fn budget(app: &str, allowed: i32, disrupted: &[&str]) -> String {
    let disrupted: Vec<String> = (disrupted.iter())
        .map(|p| format!("{p}: \"2026-01-05T00:00:00Z\""))
        .collect();
    format!(
        r#"
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {{name: {app}, namespace: default}}
spec: {{maxUnavailable: 0, selector: {{matchLabels: {{app: {app}}}}}}}
status: {{disruptionsAllowed: {allowed}, disruptedPods: {{{}}}}}
"#,
        disrupted.join(", ")
    )
}

/// Two full nodes of two 1-cpu pods of priority 1: on n1 a budget with no
/// disruptions left guards both (and they started later, so without the
/// budget n1 would win the tie); on n2 nothing does.
fn guarded_and_unguarded(budget_text: &str) -> String {
    node_yaml("n1", "2", "8Gi", 110, "")
        + &node_yaml("n2", "2", "8Gi", 110, "")
        + &labelled(
            "g1",
            "app: guarded",
            "1",
            1,
            Some("n1"),
            "2026-01-03T00:00:00Z",
        )
        + &labelled(
            "g2",
            "app: guarded",
            "1",
            1,
            Some("n1"),
            "2026-01-03T00:00:00Z",
        )
        + &pod("x1", "1", 1, Some("n2"), "2026-01-02T00:00:00Z")
        + &pod("x2", "1", 1, Some("n2"), "2026-01-02T00:00:00Z")
        + &pod("urgent", "1", 10, None, "")
        + budget_text
}

#[test]
fn preemption_prefers_the_node_whose_victims_violate_no_budget() {
    // Without a budget the tie goes to n1, whose victim started later.
    let h = H::new().with_objects(&guarded_and_unguarded("")).unwrap();
    let out = h.reconcile_key(&key("urgent")).unwrap();
    assert_eq!(deleted(&out).len(), 1, "{out:?}");
    assert!(deleted(&out)[0].starts_with('g'), "{out:?}");

    let text = guarded_and_unguarded(&budget("guarded", 0, &[]));
    let mut h = H::new().with_objects(&text).unwrap();
    let out = h.reconcile_key(&key("urgent")).unwrap();
    assert_eq!(deleted(&out).len(), 1, "{out:?}");
    assert!(deleted(&out)[0].starts_with('x'), "{out:?}");
    h.apply_outcome(&key("urgent"), &out).unwrap();
    assert_eq!(nominated(&h, "urgent").as_deref(), Some("n2"));

    // A pod the API server already counts as disrupted under the budget
    // is not counted again: g1 is, and deleting g2 takes the budget below
    // zero no more than deleting g1 does, so n1 is as good as before.
    let text = guarded_and_unguarded(&budget("guarded", 0, &["g1", "g2"]));
    let h = H::new().with_objects(&text).unwrap();
    let out = h.reconcile_key(&key("urgent")).unwrap();
    assert!(deleted(&out)[0].starts_with('g'), "{out:?}");
}

#[test]
fn on_a_node_the_victims_a_budget_protects_are_spared_first() {
    // One node, three 1-cpu pods of priority 1, full: `c` started first,
    // then `a`, then `b`. Without a budget the least important, `b`, goes.
    // A budget over `a` and `b` allowing one disruption leaves `b` (the
    // second it counts) violating: it is spared first, and `a` goes.
    let pods = node_yaml("n1", "3", "8Gi", 110, "")
        + &pod("c", "1", 1, Some("n1"), "2026-01-01T00:00:00Z")
        + &labelled(
            "a",
            "app: guarded",
            "1",
            1,
            Some("n1"),
            "2026-01-02T00:00:00Z",
        )
        + &labelled(
            "b",
            "app: guarded",
            "1",
            1,
            Some("n1"),
            "2026-01-03T00:00:00Z",
        )
        + &pod("urgent", "1", 10, None, "");
    let h = H::new().with_objects(&pods).unwrap();
    let out = h.reconcile_key(&key("urgent")).unwrap();
    assert_eq!(deleted(&out), ["b"], "{out:?}");

    let with_budget = pods.clone() + &budget("guarded", 1, &[]);
    let h = H::new().with_objects(&with_budget).unwrap();
    let out = h.reconcile_key(&key("urgent")).unwrap();
    assert_eq!(deleted(&out), ["a"], "{out:?}");

    // A budget of another namespace, or with an empty selector, protects
    // nothing here.
    let elsewhere = budget("guarded", 1, &[]).replace("namespace: default", "namespace: other");
    let h = H::new().with_objects(&(pods.clone() + &elsewhere)).unwrap();
    assert_eq!(deleted(&h.reconcile_key(&key("urgent")).unwrap()), ["b"]);
    let empty = budget("guarded", 1, &[]).replace("{matchLabels: {app: guarded}}", "{}");
    let h = H::new().with_objects(&(pods + &empty)).unwrap();
    assert_eq!(deleted(&h.reconcile_key(&key("urgent")).unwrap()), ["b"]);
}

/// The status of a pending pod nominated to n1 after it preempted there.
const NOMINATED_TO_N1: &str = "status: {nominatedNodeName: n1, conditions: [{type: PodScheduled, status: \"False\", reason: Unschedulable}]}\n";

#[test]
fn a_nominated_pod_keeps_its_room_from_pods_of_no_higher_priority() {
    // `urgent` (priority 10) preempted on n1 and waits there; the room it
    // waits for is free already. `low` and `equal` may not take it; `high`
    // may, and so may `urgent` itself.
    let text = node_yaml("n1", "2", "8Gi", 110, "")
        + &pod("busy", "1", 0, Some("n1"), "2026-01-01T00:00:00Z")
        + &pod("urgent", "1", 10, None, "")
        + NOMINATED_TO_N1
        + &pod("low", "1", 0, None, "")
        + &pod("equal", "1", 10, None, "")
        + &pod("high", "1", 20, None, "");
    let h = H::new().with_objects(&text).unwrap();
    for name in ["low", "equal"] {
        let out = h.reconcile_key(&key(name)).unwrap();
        assert_eq!(
            failed_scheduling(&out)
                .first()
                .map(|m| m.split(" preemption:").next()),
            Some(Some("0/1 nodes are available: 1 Insufficient cpu.")),
            "{name}: {out:?}"
        );
    }
    for name in ["high", "urgent"] {
        let mut h = H::new().with_objects(&text).unwrap();
        let out = h.reconcile_key(&key(name)).unwrap();
        h.apply_outcome(&key(name), &out).unwrap();
        assert_eq!(node_of(&h, name).as_deref(), Some("n1"), "{name}: {out:?}");
    }
    // Once `urgent` is bound, its claim is its usage: nothing is counted twice.
    let mut h = H::new().with_objects(&text).unwrap();
    let out = h.reconcile_key(&key("urgent")).unwrap();
    h.apply_outcome(&key("urgent"), &out).unwrap();
    let out = h.reconcile_key(&key("low")).unwrap();
    assert_eq!(failed_scheduling(&out).len(), 1, "{out:?}");
}

#[test]
fn a_nomination_no_node_bears_out_is_cleared() {
    // `urgent` was nominated to n1, but n1 is now full of pods of its own
    // priority: no victims anywhere. Upstream clears the nomination (so
    // its claim stops holding room); a pod that may not preempt keeps it.
    let text = node_yaml("n1", "1", "8Gi", 110, "")
        + &pod("peer", "1", 10, Some("n1"), "2026-01-01T00:00:00Z")
        + &pod("urgent", "1", 10, None, "")
        + NOMINATED_TO_N1;
    let mut h = H::new().with_objects(&text).unwrap();
    let out = h.reconcile_key(&key("urgent")).unwrap();
    assert_eq!(
        failed_scheduling(&out),
        [
            "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod.."
        ]
    );
    h.apply_outcome(&key("urgent"), &out).unwrap();
    assert_eq!(nominated(&h, "urgent"), None);

    let never = text.replace("priority: 10\n  containers: [{name: c, image: nginx, resources: {requests: {cpu: \"1\"}}}]\nstatus: {nominatedNodeName",
        "priority: 10\n  preemptionPolicy: Never\n  containers: [{name: c, image: nginx, resources: {requests: {cpu: \"1\"}}}]\nstatus: {nominatedNodeName");
    assert_ne!(never, text);
    let mut h = H::new().with_objects(&never).unwrap();
    let out = h.reconcile_key(&key("urgent")).unwrap();
    h.apply_outcome(&key("urgent"), &out).unwrap();
    assert_eq!(nominated(&h, "urgent").as_deref(), Some("n1"), "{out:?}");
}
