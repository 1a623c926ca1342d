//! What an update may change of a pod's spec, as kube-apiserver's
//! `ValidatePodUpdate` allows: container and init container images,
//! `activeDeadlineSeconds` (set, or lowered), tolerations (added, or an
//! existing one's `tolerationSeconds`), scheduling gates (removed), a
//! negative `terminationGracePeriodSeconds` raised to 1, and while the pod
//! is gated, additions to its `nodeSelector` and a narrowing of its
//! required node affinity (requirements added to each term; its preferred
//! terms free), as Kueue and other admission controllers do before they
//! lift a gate. Anything else — a node, a
//! restart policy, a port, a container added — is refused, with the fields
//! that differ. A pod's node is set through `pods/binding`
//! (`subresource.rs`), never by an update.
//!
//! Ephemeral containers (`kubectl debug`) are added only through
//! `pods/ephemeralcontainers`, where one already there may be neither
//! removed nor changed (`ValidatePodEphemeralContainersUpdate`); an update
//! of the pod itself may not touch them.

use serde_json::{Map, Value};

use crate::causes::{self as field, Causes};

/// kube's list of what may change, as its message gives it.
const UPDATABLE: &str = "`spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)";

fn list(v: &Value) -> &[Value] {
    v.as_array().map(Vec::as_slice).unwrap_or_default()
}

/// The problems of updating pod `old` to `new` through subresource `sub`
/// (empty for the pod itself): `binding` alone may set the node,
/// `ephemeralcontainers` alone may add ephemeral containers.
pub(crate) fn errors(old: &Value, new: &Value, sub: &str) -> Causes {
    let mut errs = Causes::new();
    let (o, n) = (&old["spec"], &new["spec"]);
    if o == n {
        // Most updates (labels, finalizers, owner references).
        return errs;
    }
    for kind in ["containers", "initContainers"] {
        let (was, now) = (list(&o[kind]), list(&n[kind]));
        if was.len() != now.len() {
            field::forbidden(
                &mut errs,
                format!("spec.{kind}"),
                "pod updates may not add or remove containers",
            );
            return errs;
        }
        for (i, c) in now.iter().enumerate() {
            let image = c["image"].as_str().unwrap_or_default();
            let at = format!("spec.{kind}[{i}].image");
            if image.is_empty() {
                field::required(&mut errs, at, "");
            } else if image.trim() != image {
                field::invalid(
                    &mut errs,
                    at,
                    &c["image"],
                    "must not have leading or trailing whitespace",
                );
            }
        }
    }
    let deadline = "spec.activeDeadlineSeconds";
    match (
        o["activeDeadlineSeconds"].as_i64(),
        &n["activeDeadlineSeconds"],
    ) {
        (_, Value::Number(x))
            if x.as_i64()
                .is_none_or(|x| !(0..=i64::from(i32::MAX)).contains(&x)) =>
        {
            field::invalid(
                &mut errs,
                deadline,
                &n["activeDeadlineSeconds"],
                "must be between 0 and 2147483647, inclusive",
            );
            return errs;
        }
        (Some(was), Value::Number(x)) if x.as_i64().is_some_and(|x| x > was) => {
            field::invalid(
                &mut errs,
                deadline,
                &n["activeDeadlineSeconds"],
                "must be less than or equal to previous value",
            );
            return errs;
        }
        (Some(_), Value::Null) => field::invalid(
            &mut errs,
            deadline,
            &Value::from("null"),
            "must not update from a positive integer to nil value",
        ),
        _ => {}
    }
    tolerations(list(&o["tolerations"]), list(&n["tolerations"]), &mut errs);
    scheduling_gates(
        list(&o["schedulingGates"]),
        list(&n["schedulingGates"]),
        &mut errs,
    );
    let gated = !list(&o["schedulingGates"]).is_empty();
    if gated {
        node_selector_additions(&o["nodeSelector"], &n["nodeSelector"], &mut errs);
        node_affinity_narrowing(
            &o["affinity"]["nodeAffinity"],
            &n["affinity"]["nodeAffinity"],
            &mut errs,
        );
    }
    if sub == "ephemeralcontainers" {
        ephemeral(
            list(&o["ephemeralContainers"]),
            list(&n["ephemeralContainers"]),
            &mut errs,
        );
    }
    let munged = munged(o, n, gated, sub);
    if normalized(&munged) != normalized(o) {
        let diff = differences(o, &munged);
        field::forbidden(
            &mut errs,
            "spec",
            &format!(
                "pod updates may not change fields other than {UPDATABLE}\n{}",
                diff.join("\n")
            ),
        );
    }
    errs
}

/// `new`'s spec with every field an update may change set back to `old`'s
/// (kube's "munged" spec): what is left to differ may not.
fn munged(o: &Value, n: &Value, gated: bool, sub: &str) -> Value {
    let mut m = n.clone();
    for kind in ["containers", "initContainers"] {
        if let Some(cs) = m[kind].as_array_mut() {
            for (c, was) in cs.iter_mut().zip(list(&o[kind])) {
                c["image"] = was["image"].clone();
            }
        }
    }
    let mut keep = vec!["activeDeadlineSeconds", "schedulingGates", "tolerations"];
    if gated {
        keep.push("nodeSelector");
    }
    match sub {
        "binding" => keep.push("nodeName"),
        "ephemeralcontainers" => keep.push("ephemeralContainers"),
        _ => {}
    }
    let negative_to_one = o["terminationGracePeriodSeconds"]
        .as_i64()
        .is_some_and(|g| g < 0)
        && n["terminationGracePeriodSeconds"] == 1;
    if negative_to_one {
        keep.push("terminationGracePeriodSeconds");
    }
    if gated {
        // The whole node affinity, once its required part is checked.
        let was = &o["affinity"]["nodeAffinity"];
        if let Some(mm) = m.as_object_mut() {
            let affinity = mm
                .entry("affinity")
                .or_insert_with(|| Value::Object(Map::new()));
            if affinity.is_null() {
                *affinity = Value::Object(Map::new());
            }
            if let Some(a) = affinity.as_object_mut() {
                match was {
                    Value::Null => _ = a.remove("nodeAffinity"),
                    v => _ = a.insert("nodeAffinity".to_owned(), v.clone()),
                }
            }
        }
    }
    if let Some(mm) = m.as_object_mut() {
        for k in keep {
            match o.get(k) {
                Some(v) => _ = mm.insert(k.to_owned(), v.clone()),
                None => _ = mm.remove(k),
            }
        }
    }
    m
}

/// `v` without the empty values kube's types do not tell from absent ones
/// (`""`, `null`, `[]`, `{}`, `false`, `0` are a Go field's zero value).
fn normalized(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, x)| (k.clone(), normalized(x)))
                .filter(|(_, x)| !is_zero(x))
                .collect::<Map<_, _>>(),
        ),
        Value::Array(xs) => Value::Array(xs.iter().map(normalized).collect()),
        other => other.clone(),
    }
}

/// A Go field's zero value, which kube's types do not tell from absent.
pub(super) fn is_zero(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::String(s) => s.is_empty(),
        Value::Array(xs) => xs.is_empty(),
        Value::Object(m) => m.is_empty(),
        Value::Number(n) => n.as_f64() == Some(0.0),
    }
}

/// The paths where `b` differs from `a`, one line each (`spec.nodeName:
/// "a" → "b"`), so the refusal says what the update tried to change.
fn differences(a: &Value, b: &Value) -> Vec<String> {
    let mut out = Vec::new();
    diff_into(&normalized(a), &normalized(b), "spec", &mut out);
    out
}

fn diff_into(a: &Value, b: &Value, path: &str, out: &mut Vec<String>) {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let mut keys: Vec<&String> = x.keys().chain(y.keys()).collect();
            keys.sort();
            keys.dedup();
            for k in keys {
                let (u, v) = (
                    x.get(k).unwrap_or(&Value::Null),
                    y.get(k).unwrap_or(&Value::Null),
                );
                diff_into(u, v, &format!("{path}.{k}"), out);
            }
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            for (i, (u, v)) in x.iter().zip(y).enumerate() {
                diff_into(u, v, &format!("{path}[{i}]"), out);
            }
        }
        _ if a != b => out.push(format!("{path}: {a} → {b}")),
        _ => {}
    }
}

/// kube's `validateOnlyAddedTolerations`: every existing toleration is
/// still there, its `tolerationSeconds` aside.
fn tolerations(old: &[Value], new: &[Value], errs: &mut Causes) {
    let without_seconds = |t: &Value| {
        let mut t = normalized(t);
        if let Some(m) = t.as_object_mut() {
            m.remove("tolerationSeconds");
        }
        t
    };
    let kept: Vec<Value> = new.iter().map(without_seconds).collect();
    if old.iter().any(|t| !kept.contains(&without_seconds(t))) {
        field::forbidden(
            errs,
            "spec.tolerations",
            "existing toleration can not be modified except its tolerationSeconds",
        );
    }
}

/// kube's `validateOnlyDeletedSchedulingGates`.
fn scheduling_gates(old: &[Value], new: &[Value], errs: &mut Causes) {
    for (i, g) in new.iter().enumerate() {
        let name = g["name"].as_str().unwrap_or_default();
        if !old.iter().any(|o| o["name"] == g["name"]) {
            field::forbidden(
                errs,
                format!("spec.schedulingGates[{i}].name"),
                &format!("only deletion is allowed, but found new scheduling gate '{name}'"),
            );
        }
    }
}

/// A gated pod's `nodeSelector` may gain entries, not lose or change them.
fn node_selector_additions(old: &Value, new: &Value, errs: &mut Causes) {
    let Some(was) = old.as_object() else { return };
    for (k, v) in was {
        if new.get(k) != Some(v) {
            field::invalid(
                errs,
                "spec.nodeSelector",
                &Value::String(format!("{k}={}", v.as_str().unwrap_or_default())),
                "only additions to spec.nodeSelector are allowed (no mutations or deletions)",
            );
        }
    }
}

/// kube's `validateNodeAffinityMutation`: a gated pod's required node
/// affinity, once it has terms, keeps as many, and each keeps its
/// requirements (`matchExpressions`, `matchFields`) as they were, first,
/// with any new ones after them.
fn node_affinity_narrowing(old: &Value, new: &Value, errs: &mut Causes) {
    const REQUIRED: &str = "requiredDuringSchedulingIgnoredDuringExecution";
    let (was, now) = (&old[REQUIRED], &new[REQUIRED]);
    let was_terms = list(&was["nodeSelectorTerms"]);
    if normalized(old) == normalized(new) || was_terms.is_empty() {
        return;
    }
    let path = format!("spec.affinity.nodeAffinity.{REQUIRED}.nodeSelectorTerms");
    let now_terms = list(&now["nodeSelectorTerms"]);
    if was_terms.len() != now_terms.len() {
        field::invalid(
            errs,
            path,
            &now["nodeSelectorTerms"],
            "no additions/deletions to non-empty NodeSelectorTerms list are allowed",
        );
        return;
    }
    let only_added = |was: &Value, now: &Value| {
        ["matchExpressions", "matchFields"].iter().all(|k| {
            let (a, b) = (list(&was[*k]), list(&now[*k]));
            a.len() <= b.len() && a.iter().zip(b).all(|(x, y)| normalized(x) == normalized(y))
        })
    };
    for (i, (w, n)) in was_terms.iter().zip(now_terms).enumerate() {
        if !only_added(w, n) {
            field::invalid(
                errs,
                format!("{path}[{i}]"),
                n,
                "only additions are allowed (no mutations or deletions)",
            );
        }
    }
}

/// Existing ephemeral containers may be neither removed nor changed.
fn ephemeral(old: &[Value], new: &[Value], errs: &mut Causes) {
    for was in old {
        let name = was["name"].as_str().unwrap_or_default();
        match new.iter().find(|c| c["name"] == was["name"]) {
            None => field::forbidden(
                errs,
                "spec.ephemeralContainers",
                &format!("existing ephemeral containers {name:?} may not be removed\n"),
            ),
            Some(now) if normalized(now) != normalized(was) => {
                let mut diff = Vec::new();
                diff_into(&normalized(was), &normalized(now), "", &mut diff);
                field::forbidden(
                    errs,
                    "spec.ephemeralContainers",
                    &format!(
                        "existing ephemeral containers {name:?} may not be changed\n{}",
                        diff.join("\n")
                    ),
                );
            }
            Some(_) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod() -> Value {
        json!({"spec": {
            "nodeName": "n1", "restartPolicy": "Always", "terminationGracePeriodSeconds": 30,
            "containers": [{"name": "web", "image": "nginx", "ports": [{"containerPort": 80}]}],
            "tolerations": [{"key": "a", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}],
        }})
    }

    fn with(f: impl FnOnce(&mut Value)) -> Value {
        let mut p = pod();
        f(&mut p);
        p
    }

    fn text(errs: &Causes) -> Vec<String> {
        errs.iter().map(|(f, m)| format!("{f}: {m}")).collect()
    }

    #[test]
    fn what_an_update_may_change() {
        for (what, new) in [
            (
                "an image",
                with(|p| p["spec"]["containers"][0]["image"] = json!("nginx:2")),
            ),
            (
                "a deadline set",
                with(|p| p["spec"]["activeDeadlineSeconds"] = json!(60)),
            ),
            (
                "a toleration added",
                with(|p| {
                    p["spec"]["tolerations"]
                        .as_array_mut()
                        .unwrap()
                        .push(json!({"key": "b", "operator": "Exists"}))
                }),
            ),
            (
                "tolerationSeconds",
                with(|p| p["spec"]["tolerations"][0]["tolerationSeconds"] = json!(10)),
            ),
            ("nothing", pod()),
            (
                "a zero value spelled out",
                with(|p| p["spec"]["hostNetwork"] = json!(false)),
            ),
        ] {
            assert_eq!(
                text(&errors(&pod(), &new, "")),
                Vec::<String>::new(),
                "{what}"
            );
        }
    }

    #[test]
    fn what_an_update_may_not_change_in_kubes_words() {
        let forbidden = |new: Value| text(&errors(&pod(), &new, ""));
        let moved = forbidden(with(|p| p["spec"]["nodeName"] = json!("n2")));
        assert_eq!(moved.len(), 1);
        assert!(
            moved[0].starts_with(&format!(
                "spec: Forbidden: pod updates may not change fields other than {UPDATABLE}\n"
            )),
            "{moved:?}"
        );
        assert!(
            moved[0].ends_with("spec.nodeName: \"n1\" → \"n2\""),
            "{moved:?}"
        );
        let port = forbidden(with(|p| {
            p["spec"]["containers"][0]["ports"][0]["containerPort"] = json!(81)
        }));
        assert!(
            port[0].contains("spec.containers[0].ports[0].containerPort: 80 → 81"),
            "{port:?}"
        );
        assert_eq!(
            forbidden(with(|p| p["spec"]["containers"]
                .as_array_mut()
                .unwrap()
                .push(json!({"name": "b", "image": "b"})))),
            ["spec.containers: Forbidden: pod updates may not add or remove containers"]
        );
        assert_eq!(
            forbidden(with(
                |p| p["spec"]["containers"][0]["image"] = json!(" nginx")
            )),
            [
                "spec.containers[0].image: Invalid value: \" nginx\": must not have leading or trailing whitespace"
            ]
        );
        assert_eq!(
            forbidden(with(|p| p["spec"]["tolerations"] = json!([]))),
            [
                "spec.tolerations: Forbidden: existing toleration can not be modified except its tolerationSeconds"
            ]
        );
        let deadline = |was: Option<i64>, now: Option<i64>| {
            let mut old = pod();
            let mut new = pod();
            if let Some(w) = was {
                old["spec"]["activeDeadlineSeconds"] = json!(w);
            }
            if let Some(n) = now {
                new["spec"]["activeDeadlineSeconds"] = json!(n);
            }
            text(&errors(&old, &new, ""))
        };
        assert_eq!(deadline(Some(60), Some(30)), Vec::<String>::new());
        assert_eq!(
            deadline(Some(60), Some(90)),
            [
                "spec.activeDeadlineSeconds: Invalid value: 90: must be less than or equal to previous value"
            ]
        );
        assert_eq!(
            deadline(Some(60), None),
            [
                "spec.activeDeadlineSeconds: Invalid value: \"null\": must not update from a positive integer to nil value"
            ]
        );
        assert_eq!(
            deadline(None, Some(-1)),
            [
                "spec.activeDeadlineSeconds: Invalid value: -1: must be between 0 and 2147483647, inclusive"
            ]
        );
    }

    #[test]
    fn only_a_binding_sets_the_node_and_gates_only_go() {
        let unbound = with(|p| _ = p["spec"].as_object_mut().unwrap().remove("nodeName"));
        assert!(errors(&unbound, &pod(), "binding").is_empty());
        assert_eq!(errors(&unbound, &pod(), "").len(), 1);
        let gated = with(|p| {
            p["spec"]["schedulingGates"] = json!([{"name": "a"}]);
            p["spec"]["nodeSelector"] = json!({"zone": "a"});
        });
        let ungated = with(|p| p["spec"]["nodeSelector"] = json!({"zone": "a", "disk": "ssd"}));
        assert!(
            errors(&gated, &ungated, "").is_empty(),
            "gate removed, selector added to"
        );
        let regated = with(|p| p["spec"]["schedulingGates"] = json!([{"name": "b"}]));
        assert_eq!(
            text(&errors(&gated, &regated, ""))[0],
            "spec.schedulingGates[0].name: Forbidden: only deletion is allowed, but found new scheduling gate 'b'"
        );
    }

    #[test]
    fn a_gated_pods_required_node_affinity_may_only_narrow() {
        let zone = json!({"key": "zone", "operator": "In", "values": ["a"]});
        let disk = json!({"key": "disk", "operator": "Exists"});
        let gated = |terms: Value, preferred: Value| {
            with(|p| {
                p["spec"]["schedulingGates"] = json!([{"name": "kueue"}]);
                p["spec"]["affinity"] = json!({"nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms},
                    "preferredDuringSchedulingIgnoredDuringExecution": preferred,
                }});
            })
        };
        let preferred = json!([{"weight": 1, "preference": {"matchExpressions": [disk]}}]);
        let one = gated(json!([{"matchExpressions": [zone]}]), json!([]));
        let narrowed = gated(
            json!([{"matchExpressions": [zone, disk]}]),
            preferred.clone(),
        );
        assert!(
            errors(&one, &narrowed, "").is_empty(),
            "a requirement added, a preference set"
        );
        // No required terms yet: any may be set; none at all: the same.
        let bare = with(|p| p["spec"]["schedulingGates"] = json!([{"name": "kueue"}]));
        assert!(errors(&bare, &one, "").is_empty());
        assert!(errors(&gated(json!([]), json!([])), &one, "").is_empty());
        let required = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms";
        let swapped = gated(json!([{"matchExpressions": [disk, zone]}]), json!([]));
        assert_eq!(
            text(&errors(&one, &swapped, "")),
            [format!(
                "{required}[0]: Invalid value: {}: only additions are allowed (no mutations or deletions)",
                json!({"matchExpressions": [disk, zone]})
            )]
        );
        let two = gated(
            json!([{"matchExpressions": [zone]}, {"matchExpressions": [disk]}]),
            json!([]),
        );
        let errs = text(&errors(&one, &two, ""));
        assert_eq!(errs.len(), 1, "{errs:?}");
        assert!(
            errs[0].starts_with(&format!("{required}: Invalid value: "))
                && errs[0].ends_with(
                    "no additions/deletions to non-empty NodeSelectorTerms list are allowed"
                ),
            "{errs:?}"
        );
        let removed = with(|p| p["spec"]["schedulingGates"] = json!([{"name": "kueue"}]));
        assert_eq!(
            text(&errors(&one, &removed, "")).len(),
            1,
            "the required terms dropped"
        );
        let nulled = with(|p| {
            p["spec"]["schedulingGates"] = json!([{"name": "kueue"}]);
            p["spec"]["affinity"] = Value::Null;
        });
        assert_eq!(
            text(&errors(&one, &nulled, "")).len(),
            1,
            "the affinity nulled"
        );
        // Ungated, the node affinity is as fixed as the rest of the spec.
        let ungated = |p: &Value| {
            let mut p = p.clone();
            p["spec"].as_object_mut().unwrap().remove("schedulingGates");
            p
        };
        let errs = text(&errors(&ungated(&one), &ungated(&narrowed), ""));
        assert!(
            errs.len() == 1
                && errs[0]
                    .starts_with("spec: Forbidden: pod updates may not change fields other than"),
            "{errs:?}"
        );
        // Gated, the pod's other affinities still may not change.
        let anti = with(|p| {
            p["spec"] = one["spec"].clone();
            p["spec"]["affinity"]["podAntiAffinity"] = json!({"requiredDuringSchedulingIgnoredDuringExecution": [
                {"topologyKey": "zone", "labelSelector": {"matchLabels": {"app": "web"}}}]});
        });
        assert_eq!(text(&errors(&one, &anti, "")).len(), 1);
    }

    #[test]
    fn ephemeral_containers_may_be_added_not_removed_or_changed() {
        let debug = json!({"name": "debugger", "image": "busybox"});
        let one = with(|p| p["spec"]["ephemeralContainers"] = json!([debug]));
        let sub = "ephemeralcontainers";
        assert!(errors(&pod(), &one, sub).is_empty());
        let through_the_pod = text(&errors(&pod(), &one, ""));
        assert!(
            through_the_pod[0]
                .starts_with("spec: Forbidden: pod updates may not change fields other than"),
            "{through_the_pod:?}"
        );
        assert_eq!(
            text(&errors(&one, &pod(), sub)),
            [
                "spec.ephemeralContainers: Forbidden: existing ephemeral containers \"debugger\" may not be removed\n"
            ]
        );
        let changed = with(|p| {
            p["spec"]["ephemeralContainers"] = json!([{"name": "debugger", "image": "alpine"}])
        });
        let errs = text(&errors(&one, &changed, sub));
        assert!(errs[0].starts_with("spec.ephemeralContainers: Forbidden: existing ephemeral containers \"debugger\" may not be changed\n"), "{errs:?}");
    }
}
