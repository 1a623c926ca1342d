//! `DefaultPreemption` through the SDK harness: victims chosen and spared
//! as upstream chooses them, the node with the least important victims,
//! the wait for victims to go, and the messages when nothing can be done.

use windlass_sdk::{EventType, Write};

use crate::tests::{H, failed_scheduling, key, node_of, node_yaml, pod_yaml};

/// A pod of `cpu` with `priority`, bound to `node` (started at `start`)
/// or pending.
fn pod(name: &str, cpu: &str, priority: i32, node: Option<&str>, start: &str) -> String {
    let place = node.map_or(String::new(), |n| format!("nodeName: {n}\n  "));
    let yaml = pod_yaml(
        name,
        "app: x",
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
