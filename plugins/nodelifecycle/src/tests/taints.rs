//! Taints: the node's conditions as `NoSchedule` and `NoExecute` taints.

use super::*;

const NR: &str = "node.kubernetes.io/not-ready";
const UR: &str = "node.kubernetes.io/unreachable";

/// Conditions, `spec.unschedulable`, the taints before, the taints after.
type Case = (Vec<(&'static str, &'static str)>, bool, Value, Vec<String>);

#[test]
fn conditions_become_taints() {
    let foreign = json!({"key": "dedicated", "value": "gpu", "effect": "NoSchedule"});
    let cases: Vec<Case> = vec![
        (vec![("Ready", "True")], false, json!([]), vec![]),
        (
            vec![("Ready", "False")],
            false,
            json!([]),
            vec![format!("{NR}:NoSchedule"), format!("{NR}:NoExecute")],
        ),
        (
            // Ready False to Unknown: not-ready goes, unreachable comes.
            vec![("Ready", "Unknown")],
            false,
            json!([{"key": NR, "effect": "NoSchedule"}, {"key": NR, "effect": "NoExecute"}, foreign]),
            vec![
                "dedicated:NoSchedule".to_owned(),
                format!("{UR}:NoSchedule"),
                format!("{UR}:NoExecute"),
            ],
        ),
        (
            // Ready again: both go, the foreign taint stays.
            vec![("Ready", "True")],
            false,
            json!([foreign, {"key": UR, "effect": "NoSchedule"}, {"key": UR, "effect": "NoExecute"}]),
            vec!["dedicated:NoSchedule".to_owned()],
        ),
        (
            vec![
                ("Ready", "True"),
                ("MemoryPressure", "True"),
                ("DiskPressure", "True"),
                ("PIDPressure", "True"),
                ("NetworkUnavailable", "True"),
            ],
            true,
            json!([]),
            [
                "memory-pressure",
                "disk-pressure",
                "pid-pressure",
                "network-unavailable",
                "unschedulable",
            ]
            .iter()
            .map(|k| format!("node.kubernetes.io/{k}:NoSchedule"))
            .collect(),
        ),
        (
            // Pressure gone, schedulable again; a NoExecute taint of the
            // same key as a managed NoSchedule one is someone else's.
            vec![("Ready", "True"), ("MemoryPressure", "False")],
            false,
            json!([
                {"key": "node.kubernetes.io/memory-pressure", "effect": "NoSchedule"},
                {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"},
                {"key": "node.kubernetes.io/memory-pressure", "effect": "NoExecute"},
            ]),
            vec!["node.kubernetes.io/memory-pressure:NoExecute".to_owned()],
        ),
    ];
    for (conditions, unschedulable, before, after) in cases {
        let conditions: Vec<Value> = conditions.iter().map(|(t, s)| cond(t, s, 0)).collect();
        let case = format!("{conditions:?} {unschedulable} {before}");
        let n = node(conditions, |n| {
            n["spec"]["taints"] = before.clone();
            n["spec"]["unschedulable"] = json!(unschedulable);
        });
        let mut h = harness([n]);
        let out = step(&mut h, 1);
        assert_eq!(taint_list(&h), after, "{case}");
        if let Some((sub, patch)) = patches(&out, &node_key()).first() {
            assert_eq!(*sub, None, "{case}");
            assert_eq!(patch["metadata"]["resourceVersion"], "1", "{case}");
            // The foreign taint is kept exactly as it was.
            if after.contains(&"dedicated:NoSchedule".to_owned()) {
                assert!(
                    patch["spec"]["taints"]
                        .as_array()
                        .unwrap()
                        .contains(&foreign)
                );
            }
        }
        // Settled: the next reconcile writes nothing.
        let out = step(&mut h, 2);
        assert!(out.writes.is_empty(), "{case}: {out:?}");
    }
}

#[test]
fn nothing_is_written_when_the_taints_are_right() {
    let taints = json!([
        {"key": UR, "effect": "NoSchedule"},
        {"key": UR, "effect": "NoExecute", "timeAdded": ts(-30)},
    ]);
    let mut h = harness([node(vec![cond("Ready", "Unknown", 0)], |n| {
        n["spec"]["taints"] = taints.clone();
    })]);
    let out = step(&mut h, 1);
    assert!(out.writes.is_empty(), "{out:?}");
    // timeAdded is kept.
    let stored = h.get(&node_key()).unwrap();
    assert_eq!(stored.get("spec.taints"), Some(&taints));
}

#[test]
fn the_last_taint_removed_removes_the_field() {
    // Uncordoned: the unschedulable taint goes, and with it `spec.taints`
    // (the real server drops an empty list), not `taints: []`.
    let mut h = harness([node(vec![cond("Ready", "True", 0)], |n| {
        n["spec"]["taints"] =
            json!([{"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}]);
    })]);
    let out = step(&mut h, 1);
    let (_, patch) = patches(&out, &node_key()).first().cloned().unwrap();
    assert_eq!(patch["spec"]["taints"], Value::Null, "{patch}");
    let stored = h.get(&node_key()).unwrap();
    assert_eq!(stored.get("spec.taints"), None);
}
