//! Which nodes a DaemonSet's pod belongs on: upstream's
//! `NodeShouldRunDaemonPod` — the template's `nodeName`, `nodeSelector` and
//! required node affinity match the node, and its tolerations (with the
//! ones every daemon pod gets) tolerate the node's `NoSchedule` and
//! `NoExecute` taints. A pod already there stays while only a `NoSchedule`
//! taint is untolerated.

use std::collections::BTreeMap;

use serde_json::{Value, json};
use windlass_sdk::{Object, taints};

/// What upstream decides for one node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Verdict {
    /// A daemon pod should run there.
    pub should_run: bool,
    /// A daemon pod already there may keep running.
    pub should_continue: bool,
}

/// A node as the predicates read it.
pub(crate) struct Node {
    pub name: String,
    labels: BTreeMap<String, String>,
    taints: Vec<Value>,
}

impl Node {
    pub(crate) fn of(o: &Object) -> Self {
        Node {
            name: o.name().to_owned(),
            labels: o
                .labels()
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .collect(),
            taints: o
                .get("spec.taints")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default(),
        }
    }

    /// Upstream's verdict for a pod with spec `spec` (tolerations already
    /// including the daemon pods' own).
    pub(crate) fn verdict(&self, spec: &Value) -> Verdict {
        let no = Verdict {
            should_run: false,
            should_continue: false,
        };
        if spec["nodeName"]
            .as_str()
            .is_some_and(|n| !n.is_empty() && n != self.name)
        {
            return no;
        }
        if !self.matches_selector(&spec["nodeSelector"])
            || !self.matches_affinity(
                &spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"],
            )
        {
            return no;
        }
        let tolerations = spec["tolerations"]
            .as_array()
            .map_or(&[][..], Vec::as_slice);
        let untolerated = |effects: &[&str]| {
            self.taints.iter().any(|t| {
                effects.contains(&t["effect"].as_str().unwrap_or_default())
                    && !tolerations.iter().any(|tol| tolerates(tol, t))
            })
        };
        if untolerated(&["NoSchedule", "NoExecute"]) {
            return Verdict {
                should_run: false,
                should_continue: !untolerated(&["NoExecute"]),
            };
        }
        Verdict {
            should_run: true,
            should_continue: true,
        }
    }

    fn matches_selector(&self, selector: &Value) -> bool {
        selector.as_object().is_none_or(|m| {
            m.iter()
                .all(|(k, v)| self.labels.get(k).map(String::as_str) == v.as_str())
        })
    }

    /// Required node affinity: any term matches (an empty term matches
    /// nothing); no terms, or none given, matches every node.
    fn matches_affinity(&self, required: &Value) -> bool {
        let Some(terms) = required["nodeSelectorTerms"].as_array() else {
            return true;
        };
        terms.iter().any(|term| {
            let exprs = term["matchExpressions"]
                .as_array()
                .map_or(&[][..], Vec::as_slice);
            let fields = term["matchFields"]
                .as_array()
                .map_or(&[][..], Vec::as_slice);
            (!exprs.is_empty() || !fields.is_empty())
                && exprs
                    .iter()
                    .all(|r| requirement(r, self.labels.get(r["key"].as_str().unwrap_or_default())))
                && fields
                    .iter()
                    .all(|r| r["key"] == "metadata.name" && requirement(r, Some(&self.name)))
        })
    }
}

/// One node selector requirement against the value it is about.
fn requirement(r: &Value, value: Option<&String>) -> bool {
    let values: Vec<&str> = r["values"]
        .as_array()
        .map(|v| v.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let number = |s: &str| s.parse::<i64>().ok();
    match r["operator"].as_str().unwrap_or_default() {
        "In" => value.is_some_and(|v| values.contains(&v.as_str())),
        "NotIn" => value.is_none_or(|v| !values.contains(&v.as_str())),
        "Exists" => value.is_some(),
        "DoesNotExist" => value.is_none(),
        "Gt" => {
            matches!((value.and_then(|v| number(v)), values.first().and_then(|v| number(v))), (Some(a), Some(b)) if a > b)
        }
        "Lt" => {
            matches!((value.and_then(|v| number(v)), values.first().and_then(|v| number(v))), (Some(a), Some(b)) if a < b)
        }
        _ => false,
    }
}

/// Whether toleration `tol` tolerates `taint` (upstream's
/// `ToleratesTaint`).
fn tolerates(tol: &Value, taint: &Value) -> bool {
    let toleration = taints::Toleration {
        key: tol["key"].as_str().unwrap_or_default(),
        operator: tol["operator"].as_str().unwrap_or_default(),
        value: tol["value"].as_str().unwrap_or_default(),
        effect: tol["effect"].as_str().unwrap_or_default(),
    };
    toleration.tolerates(&taints::Taint {
        key: taint["key"].as_str().unwrap_or_default(),
        value: taint["value"].as_str().unwrap_or_default(),
        effect: taint["effect"].as_str().unwrap_or_default(),
    })
}

/// The tolerations every daemon pod gets (upstream's
/// `AddOrUpdateDaemonPodTolerations`), added to `spec` where it has none
/// of that key and effect: it keeps running on a node that is not ready
/// or unreachable, under pressure or cordoned.
pub(crate) fn add_daemon_tolerations(spec: &mut Value) {
    let mut wanted = vec![
        ("node.kubernetes.io/not-ready", "NoExecute"),
        ("node.kubernetes.io/unreachable", "NoExecute"),
        ("node.kubernetes.io/disk-pressure", "NoSchedule"),
        ("node.kubernetes.io/memory-pressure", "NoSchedule"),
        ("node.kubernetes.io/pid-pressure", "NoSchedule"),
        ("node.kubernetes.io/unschedulable", "NoSchedule"),
    ];
    if spec["hostNetwork"] == true {
        wanted.push(("node.kubernetes.io/network-unavailable", "NoSchedule"));
    }
    if !spec["tolerations"].is_array() {
        spec["tolerations"] = json!([]);
    }
    let Some(list) = spec["tolerations"].as_array_mut() else {
        return;
    };
    for (key, effect) in wanted {
        if !list
            .iter()
            .any(|t| t["key"] == key && t["effect"] == effect)
        {
            list.push(json!({"key": key, "operator": "Exists", "effect": effect}));
        }
    }
}

/// Pins `spec` to node `name` as upstream does
/// (`ReplaceDaemonSetPodNodeNameNodeAffinity`): the required node affinity
/// gets `matchFields metadata.name In [name]` in every term (one term when
/// there are none), so the scheduler binds it there and nowhere else.
pub(crate) fn pin_to_node(spec: &mut Value, name: &str) {
    let field = json!([{"key": "metadata.name", "operator": "In", "values": [name]}]);
    let required =
        &mut spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"];
    let terms = required["nodeSelectorTerms"]
        .as_array()
        .filter(|t| !t.is_empty())
        .cloned()
        .unwrap_or_else(|| vec![json!({})]);
    let pinned: Vec<Value> = terms
        .into_iter()
        .map(|mut t| {
            t["matchFields"] = field.clone();
            t
        })
        .collect();
    *required = json!({"nodeSelectorTerms": pinned});
}

/// The node a daemon pod is for: its `nodeName`, or the one its affinity
/// pins it to before it is bound.
pub(crate) fn target_of(pod: &Object) -> Option<String> {
    if let Some(n) = pod.get_str("spec.nodeName").filter(|n| !n.is_empty()) {
        return Some(n.to_owned());
    }
    let terms = pod
        .get("spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms")?
        .as_array()?;
    terms.iter().find_map(|t| {
        t["matchFields"].as_array()?.iter().find_map(|f| {
            let values = f["values"].as_array()?;
            (f["key"] == "metadata.name" && f["operator"] == "In" && values.len() == 1)
                .then(|| values[0].as_str().map(str::to_owned))
                .flatten()
        })
    })
}
