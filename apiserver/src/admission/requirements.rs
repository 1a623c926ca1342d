//! The resource fields of the governed kinds (pod containers' requests and
//! limits, claims' storage, quotas' `hard`/`used`, limit ranges' bounds):
//! the decode check, the canonical form they are stored in, the pod
//! defaulting of requests to limits, and the pod validation of requests
//! against limits, with the API server's messages.

use serde_json::{Map, Value};
use windlass_selector::PodResources;
use windlass_selector::resources::{ResourceList, parse_list, quantity_from_json};

use super::Causes;

/// The names of a limit range item's quantity maps.
const RANGE_LISTS: [&str; 5] = [
    "max",
    "min",
    "default",
    "defaultRequest",
    "maxLimitRequestRatio",
];

/// Calls `f` with every map of quantities in an object of `plural`.
fn each_list<'a>(plural: &str, obj: &'a Value, f: &mut dyn FnMut(&'a Map<String, Value>)) {
    let mut at = |v: &'a Value| {
        if let Some(m) = v.as_object() {
            f(m);
        }
    };
    let spec = &obj["spec"];
    // Pods are checked by parsing them (`PodResources::of`, in `mutate`).
    match plural {
        "persistentvolumeclaims" => {
            at(&spec["resources"]["requests"]);
            at(&spec["resources"]["limits"]);
        }
        "resourcequotas" => {
            at(&spec["hard"]);
            at(&obj["status"]["hard"]);
            at(&obj["status"]["used"]);
        }
        "limitranges" => {
            for item in spec["limits"].as_array().into_iter().flatten() {
                RANGE_LISTS.iter().for_each(|k| at(&item[k]));
            }
        }
        _ => {}
    }
}

/// The quantity maps of one object, by their path below it.
fn list_paths(plural: &str) -> &'static [&'static [&'static str]] {
    match plural {
        "persistentvolumeclaims" => &[
            &["spec", "resources", "requests"],
            &["spec", "resources", "limits"],
        ],
        "resourcequotas" => &[&["spec", "hard"], &["status", "hard"], &["status", "used"]],
        "pods" => &[
            &["spec", "overhead"],
            &["spec", "resources", "requests"],
            &["spec", "resources", "limits"],
        ],
        _ => &[],
    }
}

/// Calls `f` with every map of quantities in an object of `plural`, mutably.
fn each_list_mut(plural: &str, obj: &mut Value, f: &mut dyn FnMut(&mut Map<String, Value>)) {
    for path in list_paths(plural) {
        if let Some(Value::Object(m)) = path.iter().try_fold(&mut *obj, |v, k| v.get_mut(*k)) {
            f(m);
        }
    }
    let (array, keys): (&str, &[&str]) = match plural {
        "pods" => ("containers", &["requests", "limits"]),
        "limitranges" => ("limits", &RANGE_LISTS),
        _ => return,
    };
    let arrays: &[&str] = if plural == "pods" {
        &[array, "initContainers"]
    } else {
        &[array]
    };
    for a in arrays {
        let Some(items) = obj
            .get_mut("spec")
            .and_then(|s| s.get_mut(*a))
            .and_then(Value::as_array_mut)
        else {
            continue;
        };
        for item in items {
            let holder = if plural == "pods" {
                item.get_mut("resources")
            } else {
                Some(item)
            };
            let Some(holder) = holder else { continue };
            for k in keys {
                if let Some(Value::Object(m)) = holder.get_mut(*k) {
                    f(m);
                }
            }
        }
    }
}

/// The first quantity that does not parse, as the decode error the API
/// server gives (`quantities must match the regular expression ...`).
pub(super) fn undecodable(plural: &str, obj: &Value) -> Option<String> {
    let mut found = None;
    each_list(plural, obj, &mut |m| {
        if found.is_none() {
            found = m.values().find_map(|q| quantity_from_json(q).err());
        }
    });
    found.map(|e| e.to_string())
}

/// Rewrites every parsable quantity in its canonical form (`0.5` →
/// `500m`, `1024Mi` → `1Gi`), as the API server stores them.
pub(super) fn canonicalize(plural: &str, obj: &mut Value) {
    each_list_mut(plural, obj, &mut |m| {
        for q in m.values_mut() {
            if let Ok(parsed) = quantity_from_json(q) {
                let canonical = parsed.to_string();
                if q.as_str() != Some(&canonical) {
                    *q = Value::String(canonical);
                }
            }
        }
    });
}

/// A pod container with limits but no request for them gets requests equal
/// to its limits (the API server's pod defaulting, before any admission).
pub(super) fn default_requests_to_limits(pod: &mut Value) {
    for key in ["containers", "initContainers"] {
        // Looked up without indexing mutably, which would store a `null`
        // for every list the pod does not have.
        let Some(cs) = pod
            .get_mut("spec")
            .and_then(|s| s.get_mut(key))
            .and_then(Value::as_array_mut)
        else {
            continue;
        };
        for c in cs.iter_mut().filter(|c| c.is_object()) {
            let Some(limits) = c["resources"]["limits"].as_object().cloned() else {
                continue;
            };
            if limits.is_empty() {
                continue;
            }
            if !c["resources"]["requests"].is_object() {
                c["resources"]["requests"] = Value::Object(Map::new());
            }
            let requests = c["resources"]["requests"]
                .as_object_mut()
                .expect("made an object above");
            for (k, v) in limits {
                requests.entry(k).or_insert(v);
            }
        }
    }
}

/// Resources a container may name without a domain.
fn is_standard_container_resource(name: &str) -> bool {
    matches!(name, "cpu" | "memory" | "ephemeral-storage") || name.starts_with("hugepages-")
}

/// The container resource checks of pod validation: known names,
/// non-negative values, requests at most limits. (Field paths are written
/// only for an error: this runs on every pod write.)
pub(super) fn pod_errors(pod: &PodResources, errs: &mut Causes) {
    for (key, containers) in [
        ("containers", &pod.containers),
        ("initContainers", &pod.init_containers),
    ] {
        for (i, c) in containers.iter().enumerate() {
            let path = || format!("spec.{key}[{i}].resources");
            for (which, list) in [("limits", &c.limits), ("requests", &c.requests)] {
                for (name, q) in list {
                    let at = || format!("{}.{which}[{name}]", path());
                    if !name.contains('/') && !is_standard_container_resource(name) {
                        errs.push((
                            at(),
                            format!("Invalid value: {name:?}: must be a standard resource for containers"),
                        ));
                    }
                    if q.is_negative() {
                        errs.push((
                            at(),
                            format!("Invalid value: \"{q}\": must be greater than or equal to 0"),
                        ));
                    }
                }
            }
            check_requests_within_limits(path, &c.requests, &c.limits, errs);
        }
    }
}

fn check_requests_within_limits(
    path: impl Fn() -> String,
    requests: &ResourceList,
    limits: &ResourceList,
    errs: &mut Causes,
) {
    for (name, request) in requests {
        if let Some(limit) = limits.get(name)
            && request > limit
        {
            errs.push((
                format!("{}.requests", path()),
                format!(
                    "Invalid value: \"{request}\": must be less than or equal to {name} limit of {limit}"
                ),
            ));
        }
    }
}

/// A claim's requested storage must not be negative.
pub(super) fn claim_errors(pvc: &Value, errs: &mut Causes) {
    for which in ["requests", "limits"] {
        for (name, q) in parse_list(&pvc["spec"]["resources"][which]).unwrap_or_default() {
            if q.is_negative() {
                errs.push((
                    format!("spec.resources.{which}[{name}]"),
                    format!("Invalid value: \"{q}\": must be greater than or equal to 0"),
                ));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn canonical_forms_are_stored() {
        let mut pod = json!({"spec": {"containers": [
            {"name": "a", "resources": {"requests": {"cpu": 0.5, "memory": "1024Mi"}, "limits": {"cpu": "bad"}}}
        ]}});
        canonicalize("pods", &mut pod);
        assert_eq!(
            pod["spec"]["containers"][0]["resources"],
            json!({"requests": {"cpu": "500m", "memory": "1Gi"}, "limits": {"cpu": "bad"}})
        );
        assert_eq!(
            PodResources::of(&pod)
                .map_err(|e| e.error.to_string())
                .err()
                .as_deref(),
            Some(
                "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
            )
        );
        let mut quota = json!({"spec": {"hard": {"pods": 4, "requests.memory": "1.5Gi"}}});
        canonicalize("resourcequotas", &mut quota);
        assert_eq!(
            quota["spec"]["hard"],
            json!({"pods": "4", "requests.memory": "1536Mi"})
        );
        assert_eq!(undecodable("resourcequotas", &quota), None);
    }

    #[test]
    fn limits_become_requests_where_requests_are_missing() {
        let mut pod = json!({"spec": {"containers": [
            {"name": "a", "resources": {"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "100m"}}},
            {"name": "b"},
        ], "initContainers": [{"name": "i", "resources": {"limits": {"cpu": "2"}}}]}});
        default_requests_to_limits(&mut pod);
        assert_eq!(
            pod["spec"]["containers"][0]["resources"]["requests"],
            json!({"cpu": "100m", "memory": "1Gi"})
        );
        assert_eq!(pod["spec"]["containers"][1], json!({"name": "b"}));
        assert_eq!(
            pod["spec"]["initContainers"][0]["resources"]["requests"],
            json!({"cpu": "2"})
        );
    }

    #[test]
    fn a_pod_without_init_containers_is_left_without_them() {
        let mut pod = json!({"spec": {"containers": [{"name": "a"}]}});
        let before = pod.clone();
        default_requests_to_limits(&mut pod);
        assert_eq!(pod, before, "no `initContainers: null` added");
        let mut bare = json!({"kind": "Pod"});
        default_requests_to_limits(&mut bare);
        assert_eq!(bare, json!({"kind": "Pod"}));
    }

    #[test]
    fn requests_above_limits_and_negative_values_are_invalid() {
        let pod = json!({"spec": {"containers": [
            {"name": "a", "resources": {"requests": {"cpu": "2", "memory": "-1", "gpu": "1"}, "limits": {"cpu": "1"}}}
        ]}});
        let mut errs = Vec::new();
        pod_errors(&PodResources::lenient(&pod), &mut errs);
        assert_eq!(
            errs,
            [
                (
                    "spec.containers[0].resources.requests[gpu]".to_string(),
                    "Invalid value: \"gpu\": must be a standard resource for containers"
                        .to_string()
                ),
                (
                    "spec.containers[0].resources.requests[memory]".to_string(),
                    "Invalid value: \"-1\": must be greater than or equal to 0".to_string()
                ),
                (
                    "spec.containers[0].resources.requests".to_string(),
                    "Invalid value: \"2\": must be less than or equal to cpu limit of 1"
                        .to_string()
                ),
            ]
        );
        let mut errs = Vec::new();
        claim_errors(
            &json!({"spec": {"resources": {"requests": {"storage": "-1Gi"}}}}),
            &mut errs,
        );
        assert_eq!(errs.len(), 1);
    }
}
