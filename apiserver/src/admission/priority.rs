//! Two admission plugins every cluster runs on a pod being created, as
//! kube-apiserver's do it:
//! - `Priority`: `spec.priority` (and `preemptionPolicy`) from the pod's
//!   PriorityClass, or from the global default class, else 0; a class
//!   that does not exist, or a priority the pod gives that differs from
//!   its class's, is a `403`;
//! - `DefaultTolerationSeconds`: a pod that does not tolerate the
//!   `node.kubernetes.io/not-ready` or `unreachable` `NoExecute` taints
//!   gets a toleration of 300 seconds for each.
//!
//! And the rules of PriorityClasses themselves: the two system classes
//! exist at start (`system::ensure`) and cannot be deleted; other classes
//! are at most one billion, not named `system-`, and one global default.

use serde_json::{Value, json};

use crate::causes::{self as field, Causes};
use crate::scope::Req;
use crate::state::{Obj, State};
use crate::status::{ApiError, ApiResult};

/// Where PriorityClasses are stored.
pub(crate) const PRIORITY_CLASSES: &str = "scheduling.k8s.io/priorityclasses";

/// The system classes, as kube-apiserver makes them at start: name, value,
/// description.
pub(crate) const SYSTEM_CLASSES: [(&str, i64, &str); 2] = [
    (
        "system-node-critical",
        2_000_001_000,
        "Used for system critical pods that must not be moved from their current node.",
    ),
    (
        "system-cluster-critical",
        2_000_000_000,
        "Used for system critical pods that must run in the cluster, but can be moved to another node if necessary.",
    ),
];

/// The highest value a user's class may have (`HighestUserDefinablePriority`).
const HIGHEST_USER_PRIORITY: i64 = 1_000_000_000;
const PREEMPT_LOWER_PRIORITY: &str = "PreemptLowerPriority";
const POLICIES: [&str; 2] = ["Never", PREEMPT_LOWER_PRIORITY];
/// How long a pod stays on a node that is not ready or unreachable.
const DEFAULT_TOLERATION_SECONDS: i64 = 300;
const NOT_READY: &str = "node.kubernetes.io/not-ready";
const UNREACHABLE: &str = "node.kubernetes.io/unreachable";

/// The system classes as objects.
pub(crate) fn system_classes() -> impl Iterator<Item = Value> {
    SYSTEM_CLASSES
        .into_iter()
        .map(|(name, value, description)| {
            json!({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
               "metadata": {"name": name}, "value": value, "description": description,
               "globalDefault": false, "preemptionPolicy": PREEMPT_LOWER_PRIORITY})
        })
}

/// `Priority` and `DefaultTolerationSeconds` for `pod`, being created.
pub(crate) fn admit_pod(st: &State, req: &Req<'_>, pod: &mut Value) -> ApiResult<()> {
    priority(st, req, pod)?;
    default_toleration_seconds(pod);
    Ok(())
}

fn priority(st: &State, req: &Req<'_>, pod: &mut Value) -> ApiResult<()> {
    let name = crate::object::name(pod).to_owned();
    let forbidden = |why: String| ApiError::forbidden(req.target(&name), &why);
    let named = pod["spec"]["priorityClassName"]
        .as_str()
        .filter(|n| !n.is_empty())
        .map(str::to_owned);
    let class = match &named {
        Some(name) => match st.get(PRIORITY_CLASSES, "", name) {
            Some(c) => Some(Class::of_stored(&c)),
            None => {
                return Err(forbidden(format!(
                    "no PriorityClass with name {name} was found"
                )));
            }
        },
        None => global_default(st),
    };
    let value = class.as_ref().map_or(0, |c| c.value);
    let policy = class
        .as_ref()
        .map_or(PREEMPT_LOWER_PRIORITY, |c| c.policy.as_str());
    let spec = &mut pod["spec"];
    if let Some(given) = spec["priority"].as_i64()
        && given != value
    {
        return Err(forbidden(format!(
            "the integer value of priority ({given}) must not be provided in pod spec; \
             priority admission controller computed {value} from the given PriorityClass name"
        )));
    }
    if let Some(given) = spec["preemptionPolicy"].as_str()
        && given != policy
    {
        return Err(forbidden(format!(
            "the string value of PreemptionPolicy ({given}) must not be provided in pod spec; \
             priority admission controller computed {policy} from the given PriorityClass name"
        )));
    }
    if let (None, Some(class)) = (&named, &class) {
        spec["priorityClassName"] = json!(class.name);
    }
    spec["priority"] = json!(value);
    spec["preemptionPolicy"] = json!(policy);
    Ok(())
}

/// What admission reads of a PriorityClass, read once per stored version
/// of it (`Obj::derived`): every pod create looks at the classes.
#[derive(Clone)]
struct Class {
    name: String,
    value: i64,
    policy: String,
    global_default: bool,
}

impl Class {
    fn of(class: &Value) -> Self {
        Self {
            name: crate::object::name(class).to_owned(),
            value: class["value"].as_i64().unwrap_or(0),
            policy: class["preemptionPolicy"]
                .as_str()
                .unwrap_or(PREEMPT_LOWER_PRIORITY)
                .to_owned(),
            global_default: class["globalDefault"] == true,
        }
    }

    fn of_stored(class: &Obj) -> Self {
        class.derived(Class::of).into_owned()
    }
}

/// The global default class: of several, the one with the lowest value
/// (as upstream's `getDefaultPriorityClass`).
fn global_default(st: &State) -> Option<Class> {
    st.list(PRIORITY_CLASSES, None)
        .iter()
        .map(|c| Class::of_stored(c))
        .filter(|c| c.global_default)
        .min_by_key(|c| c.value)
}

fn default_toleration_seconds(pod: &mut Value) {
    let tolerations = pod["spec"]["tolerations"]
        .as_array()
        .map_or(&[][..], Vec::as_slice);
    let tolerates = |key: &str| {
        tolerations.iter().any(|t| {
            let k = t["key"].as_str().unwrap_or("");
            let effect = t["effect"].as_str().unwrap_or("");
            (k == key || k.is_empty()) && (effect == "NoExecute" || effect.is_empty())
        })
    };
    let missing: Vec<&str> = [NOT_READY, UNREACHABLE]
        .into_iter()
        .filter(|k| !tolerates(k))
        .collect();
    if missing.is_empty() || !pod["spec"].is_object() {
        return;
    }
    let spec = &mut pod["spec"];
    if !spec["tolerations"].is_array() {
        spec["tolerations"] = json!([]);
    }
    if let Some(list) = spec["tolerations"].as_array_mut() {
        for key in missing {
            list.push(
                json!({"key": key, "operator": "Exists", "effect": "NoExecute",
                             "tolerationSeconds": DEFAULT_TOLERATION_SECONDS}),
            );
        }
    }
}

/// The `Priority` plugin on a PriorityClass being written: at most one
/// global default.
pub(crate) fn admit_class(st: &State, req: &Req<'_>, class: &Value) -> ApiResult<()> {
    if class["globalDefault"] != true {
        return Ok(());
    }
    let name = crate::object::name(class);
    match global_default(st) {
        Some(other) if other.name != name => Err(ApiError::forbidden(
            req.target(name),
            &format!(
                "PriorityClass {} is already marked as default. Only one default can exist",
                other.name
            ),
        )),
        _ => Ok(()),
    }
}

/// Whether `name` is a system class (which cannot be deleted).
pub(crate) fn is_system_class(name: &str) -> bool {
    SYSTEM_CLASSES.iter().any(|(n, _, _)| *n == name)
}

/// Problems with the PriorityClass `class` (`ValidatePriorityClass`).
pub(crate) fn class_errors(class: &Value) -> Causes {
    let mut errs = Causes::new();
    let name = crate::object::name(class);
    let value = class["value"].as_i64().unwrap_or(0);
    if name.starts_with("system-") {
        if let Err(why) = known_system_class(name, value, class["globalDefault"] == true) {
            field::forbidden(
                &mut errs,
                "metadata.name",
                &format!(
                    "priority class names with 'system-' prefix are reserved for system use only. error: {why}"
                ),
            );
        }
    } else if value > HIGHEST_USER_PRIORITY {
        field::forbidden(
            &mut errs,
            "value",
            &format!("maximum allowed value of a user defined priority is {HIGHEST_USER_PRIORITY}"),
        );
    }
    let policy = &class["preemptionPolicy"];
    if !policy.is_null() && !policy.as_str().is_some_and(|p| POLICIES.contains(&p)) {
        field::not_supported(&mut errs, "preemptionPolicy", policy, &POLICIES);
    }
    errs
}

/// Whether a `system-` class is one of the system classes, as they are.
fn known_system_class(name: &str, value: i64, global_default: bool) -> Result<(), String> {
    let Some((_, v, _)) = SYSTEM_CLASSES.iter().find(|(n, _, _)| *n == name) else {
        return Err(format!("{name} is not a known system priority class"));
    };
    if *v != value {
        return Err(format!("value of {name} PriorityClass must be {v}"));
    }
    if global_default {
        return Err(format!(
            "globalDefault of {name} PriorityClass must be false"
        ));
    }
    Ok(())
}

/// What an update of a PriorityClass may not change: its value and
/// preemption policy.
pub(crate) fn class_update_errors(old: &Value, new: &Value) -> Causes {
    let mut errs = Causes::new();
    if old["value"] != new["value"] {
        field::forbidden(&mut errs, "value", "may not be changed in an update.");
    }
    if old["preemptionPolicy"] != new["preemptionPolicy"] {
        field::invalid(
            &mut errs,
            "preemptionPolicy",
            &new["preemptionPolicy"],
            "field is immutable",
        );
    }
    errs
}

#[cfg(test)]
mod tests;
