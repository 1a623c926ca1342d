//! `Priority` and `DefaultTolerationSeconds` on pods being created, and
//! the rules of PriorityClasses, in kube's words.

use serde_json::{Value, json};

use super::*;

fn state(classes: &[Value]) -> State {
    let mut st = crate::admission::empty_state();
    for c in classes {
        let name = c["metadata"]["name"].as_str().unwrap().to_owned();
        st.write(PRIORITY_CLASSES, "", &name, Some(c.clone()));
    }
    st
}

fn class(name: &str, value: i64, default: bool) -> Value {
    json!({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
           "metadata": {"name": name}, "value": value, "globalDefault": default})
}

fn pod(spec: Value) -> Value {
    let mut s = json!({"containers": [{"name": "c", "image": "nginx"}]});
    for (k, v) in spec.as_object().unwrap() {
        s[k] = v.clone();
    }
    json!({"metadata": {"name": "p", "namespace": "a"}, "spec": s})
}

/// Runs the pod admission with `classes` stored; the pod, or the message.
fn admit(classes: &[Value], spec: Value) -> Result<Value, String> {
    let st = state(classes);
    let res = st.registry.lookup("", "v1", "pods").unwrap().clone();
    let req = Req {
        res: &res,
        ns: "a",
        version: "v1",
        dry_run: false,
        sub: "",
    };
    let mut p = pod(spec);
    admit_pod(&st, &req, &mut p)
        .map(|()| p)
        .map_err(|e| format!("{e:?}"))
}

#[test]
fn a_pods_priority_comes_from_its_class_the_default_or_zero() {
    let high = class("high", 1000, false);
    let p = admit(
        std::slice::from_ref(&high),
        json!({"priorityClassName": "high"}),
    )
    .unwrap();
    assert_eq!(p["spec"]["priority"], 1000);
    assert_eq!(p["spec"]["preemptionPolicy"], "PreemptLowerPriority");

    let p = admit(&[], json!({})).unwrap();
    assert_eq!(p["spec"]["priority"], 0);
    assert!(p["spec"]["priorityClassName"].is_null());

    // The global default (the lowest, if several) names itself on the pod.
    let mut never = class("batch", 10, true);
    never["preemptionPolicy"] = json!("Never");
    let p = admit(&[high.clone(), never, class("other", 20, true)], json!({})).unwrap();
    assert_eq!(p["spec"]["priorityClassName"], "batch");
    assert_eq!(p["spec"]["priority"], 10);
    assert_eq!(p["spec"]["preemptionPolicy"], "Never");

    let err = admit(&[], json!({"priorityClassName": "gold"})).unwrap_err();
    assert!(
        err.contains("no PriorityClass with name gold was found"),
        "{err}"
    );
    let err = admit(&[high], json!({"priorityClassName": "high", "priority": 5})).unwrap_err();
    assert!(
        err.contains("the integer value of priority (5) must not be provided in pod spec; priority admission controller computed 1000 from the given PriorityClass name"),
        "{err}"
    );
}

#[test]
fn pods_tolerate_unready_and_unreachable_nodes_for_five_minutes() {
    let p = admit(&[], json!({})).unwrap();
    assert_eq!(
        p["spec"]["tolerations"],
        json!([
            {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
            {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
        ])
    );
    // A pod's own toleration of one is kept, and the other added.
    let own = json!({"key": "node.kubernetes.io/unreachable", "operator": "Exists",
                     "effect": "NoExecute", "tolerationSeconds": 6000});
    let p = admit(&[], json!({"tolerations": [own.clone()]})).unwrap();
    let tolerations = p["spec"]["tolerations"].as_array().unwrap();
    assert_eq!(tolerations.len(), 2);
    assert_eq!(tolerations[0], own);
    assert_eq!(tolerations[1]["key"], "node.kubernetes.io/not-ready");
    // Tolerating everything: nothing added.
    let p = admit(&[], json!({"tolerations": [{"operator": "Exists"}]})).unwrap();
    assert_eq!(p["spec"]["tolerations"].as_array().unwrap().len(), 1);
}

#[test]
fn classes_are_held_to_kubes_rules() {
    let messages = |c: &Value| -> Vec<String> {
        class_errors(c)
            .into_iter()
            .map(|(f, m)| format!("{f}: {m}"))
            .collect()
    };
    assert!(messages(&class("high", 1_000_000_000, false)).is_empty());
    assert_eq!(
        messages(&class("huge", 1_000_000_001, false)),
        ["value: Forbidden: maximum allowed value of a user defined priority is 1000000000"]
    );
    assert_eq!(
        messages(&class("system-mine", 5, false)),
        [
            "metadata.name: Forbidden: priority class names with 'system-' prefix are reserved for system use only. error: system-mine is not a known system priority class"
        ]
    );
    for c in system_classes() {
        assert!(messages(&c).is_empty(), "{c}");
    }
    assert_eq!(
        messages(&class("system-node-critical", 5, false)),
        [
            "metadata.name: Forbidden: priority class names with 'system-' prefix are reserved for system use only. error: value of system-node-critical PriorityClass must be 2000001000"
        ]
    );
    let changed = class_update_errors(&class("high", 1, false), &class("high", 2, false));
    assert_eq!(
        changed,
        [(
            "value".to_owned(),
            "Forbidden: may not be changed in an update.".to_owned()
        )]
    );
}
