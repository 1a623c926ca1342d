//! ResourceQuota, as the API server enforces it: its validation, the status
//! a quota is given when written (what the quota controller computes on its
//! first sync), and the admission check that refuses what would exceed a
//! quota and says what to charge (upstream's `checkRequest`, with its
//! messages).

use std::borrow::Cow;
use std::sync::Arc;

use serde_json::{Value, json};
use windlass_selector::quota::{
    Evaluator, SCOPES, ScopeRequirement, calculate_usage, pod_constraints, pod_usage,
    scope_requirements,
};
use windlass_selector::resources::{
    self, ResourceList, list_to_json, mask, parse_list, pretty, subtract_non_negative,
};
use windlass_selector::{PodResources, QosClass, Quantity};

use super::Causes;

/// Names a quota may use without a domain.
const STANDARD: [&str; 19] = [
    "cpu",
    "memory",
    "ephemeral-storage",
    "requests.cpu",
    "requests.memory",
    "requests.storage",
    "requests.ephemeral-storage",
    "limits.cpu",
    "limits.memory",
    "limits.ephemeral-storage",
    "pods",
    "resourcequotas",
    "services",
    "replicationcontrollers",
    "secrets",
    "persistentvolumeclaims",
    "configmaps",
    "services.nodeports",
    "services.loadbalancers",
];

/// Names counted in whole units.
const INTEGER: [&str; 9] = [
    "pods",
    "resourcequotas",
    "services",
    "replicationcontrollers",
    "secrets",
    "configmaps",
    "persistentvolumeclaims",
    "services.nodeports",
    "services.loadbalancers",
];

fn is_standard(name: &str) -> bool {
    STANDARD.contains(&name)
        || name.starts_with("hugepages-")
        || name.starts_with("requests.hugepages-")
}

/// Extended resources (`example.com/gpu`, `count/pods`) are integers too.
fn is_integer(name: &str) -> bool {
    INTEGER.contains(&name)
        || (name.contains('/')
            && !name.contains("kubernetes.io/")
            && !name.starts_with("requests."))
}

/// Which hard names a scope may be used with.
fn scope_allows(scope: &str, name: &str) -> bool {
    const COMPUTE: [&str; 7] = [
        "pods",
        "cpu",
        "memory",
        "limits.cpu",
        "limits.memory",
        "requests.cpu",
        "requests.memory",
    ];
    match scope {
        "BestEffort" => name == "pods",
        s if SCOPES.contains(&s) => COMPUTE.contains(&name),
        _ => true,
    }
}

fn list_errors(at: &str, list: &Value, errs: &mut Causes) {
    let Ok(list) = parse_list(list) else {
        return;
    };
    for (name, q) in list {
        let path = format!("{at}[{name}]");
        if !name.contains('/') && !is_standard(&name) {
            errs.push((
                path.clone(),
                format!("Invalid value: {name:?}: must be a standard resource for quota"),
            ));
        }
        if q.is_negative() {
            errs.push((
                path.clone(),
                format!("Invalid value: \"{q}\": must be greater than or equal to 0"),
            ));
        }
        if is_integer(&name) && q.milli_value() % 1000 != 0 {
            errs.push((path, format!("Invalid value: \"{q}\": must be an integer")));
        }
    }
}

/// ResourceQuota validation (`ValidateResourceQuota`): names, values, scopes.
pub(super) fn errors(quota: &Value, errs: &mut Causes) {
    let spec = &quota["spec"];
    list_errors("spec.hard", &spec["hard"], errs);
    list_errors("status.hard", &quota["status"]["hard"], errs);
    list_errors("status.used", &quota["status"]["used"], errs);
    let hard: Vec<String> = parse_list(&spec["hard"])
        .unwrap_or_default()
        .into_keys()
        .filter(|n| is_standard(n))
        .collect();
    let scopes: Vec<&str> = spec["scopes"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let shown = spec["scopes"].to_string();
    for s in &scopes {
        if !SCOPES.contains(s) {
            errs.push((
                "spec.scopes".into(),
                format!("Invalid value: {shown}: unsupported scope"),
            ));
        }
        if hard.iter().any(|n| !scope_allows(s, n)) {
            errs.push((
                "spec.scopes".into(),
                format!("Invalid value: {shown}: unsupported scope applied to resource"),
            ));
        }
    }
    conflicts("spec.scopes", &scopes, &shown, errs);
    let exprs = spec["scopeSelector"]["matchExpressions"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let at = "spec.scopeSelector.matchExpressions";
    let mut names = Vec::new();
    for e in &exprs {
        let name = e["scopeName"].as_str().unwrap_or_default();
        let op = e["operator"].as_str().unwrap_or_default();
        let values = e["values"].as_array().map_or(0, Vec::len);
        if !SCOPES.contains(&name) {
            errs.push((
                format!("{at}.scopeName"),
                format!("Invalid value: {name:?}: unsupported scope"),
            ));
        }
        if hard.iter().any(|n| !scope_allows(name, n)) {
            errs.push((
                at.into(),
                format!(
                    "Invalid value: {}: unsupported scope applied to resource",
                    spec["scopeSelector"]
                ),
            ));
        }
        if name != "PriorityClass" && SCOPES.contains(&name) && op != "Exists" {
            errs.push((
                format!("{at}.operator"),
                format!("Invalid value: {op:?}: must be 'Exist' when scope is any of ResourceQuotaScopeTerminating, ResourceQuotaScopeNotTerminating, ResourceQuotaScopeBestEffort, ResourceQuotaScopeNotBestEffort or ResourceQuotaScopeCrossNamespacePodAffinity"),
            ));
        }
        match op {
            "In" | "NotIn" if values == 0 => errs.push((
                format!("{at}.values"),
                "Required value: must be at least one value when `operator` is 'In' or 'NotIn' for scope selector".into(),
            )),
            "Exists" | "DoesNotExist" if values != 0 => errs.push((
                format!("{at}.values"),
                format!(
                    "Invalid value: {}: must be no value when `operator` is 'Exist' or 'DoesNotExist' for scope selector",
                    e["values"]
                ),
            )),
            "In" | "NotIn" | "Exists" | "DoesNotExist" => {}
            _ => errs.push((
                format!("{at}.operator"),
                format!("Invalid value: {op:?}: not a valid selector operator"),
            )),
        }
        names.push(name);
    }
    conflicts(at, &names, &shown, errs);
}

fn conflicts(at: &str, scopes: &[&str], shown: &str, errs: &mut Causes) {
    for (a, b) in [
        ("BestEffort", "NotBestEffort"),
        ("Terminating", "NotTerminating"),
    ] {
        if scopes.contains(&a) && scopes.contains(&b) {
            errs.push((
                at.into(),
                format!("Invalid value: {shown}: conflicting scopes"),
            ));
        }
    }
}

/// The status a quota gets when it is written: `hard` from the spec, and
/// `used` recomputed from what its namespace holds (see
/// [`calculate_usage`]), over the previous `used` for what cannot be.
pub(super) fn set_status(
    quota: &mut Value,
    list: impl FnMut(&str, &str, &mut dyn FnMut(&Value)) -> bool,
) {
    let hard = parse_list(&quota["spec"]["hard"]).unwrap_or_default();
    let scopes = scope_requirements(quota);
    let previous = parse_list(&quota["status"]["used"]).unwrap_or_default();
    let used = match calculate_usage(&hard, &scopes, list) {
        Ok(usage) => usage.status_used(&previous, &hard),
        // Objects are validated before they are stored, so this is only
        // reachable with a database written by something else: keep what
        // was known rather than fail the quota.
        Err(e) => {
            tracing::warn!(error = %e, "cannot recompute quota usage");
            mask(&previous, hard.keys().map(String::as_str))
        }
    };
    quota["status"] = json!({"hard": list_to_json(&hard), "used": list_to_json(&used)});
}

/// A stored quota as admission reads it. What a charge does not change is
/// shared, so the reading of the charged quota is cheap to make.
#[derive(Debug, Clone)]
pub(super) struct Quota {
    pub(super) name: Arc<str>,
    pub(super) hard: Arc<ResourceList>,
    pub(super) used: ResourceList,
    pub(super) scopes: Arc<[ScopeRequirement]>,
}

impl Quota {
    /// This quota with `used` charged (what a charge does not change is shared).
    pub(super) fn with_used(&self, used: ResourceList) -> Self {
        Self {
            name: self.name.clone(),
            hard: self.hard.clone(),
            used,
            scopes: self.scopes.clone(),
        }
    }

    pub(super) fn of(v: &Value) -> Self {
        Self {
            name: v["metadata"]["name"].as_str().unwrap_or_default().into(),
            hard: Arc::new(parse_list(&v["status"]["hard"]).unwrap_or_default()),
            used: parse_list(&v["status"]["used"]).unwrap_or_default(),
            scopes: scope_requirements(v).into(),
        }
    }
}

/// The object being admitted, with what the quota rules read of it that
/// admission has already worked out: a pod's parsed resources and its QoS
/// class (asked only by a quota scoped by it).
pub(super) struct Subject<'a> {
    pub(super) obj: &'a Value,
    pub(super) pod: Option<&'a PodResources>,
    /// The pod's usage, if it was measured already.
    pub(super) usage: Option<&'a ResourceList>,
    pub(super) qos: &'a dyn Fn() -> QosClass,
}

impl Subject<'_> {
    fn usage(&self, ev: &Evaluator) -> Result<Cow<'_, ResourceList>, String> {
        match (ev, self.usage, self.pod) {
            (Evaluator::Pods, Some(usage), _) => Ok(Cow::Borrowed(usage)),
            (Evaluator::Pods, None, Some(pod)) => Ok(Cow::Owned(pod_usage(self.obj, pod))),
            _ => ev
                .usage(self.obj)
                .map(Cow::Owned)
                .map_err(|e| format!("cannot measure quota usage: {e}")),
        }
    }
}

/// Checks a create (`old` none) or update of `new.obj` against the
/// namespace's quotas. `Ok` holds, per quota index, the `used` to charge;
/// `Err` the reason the request is forbidden.
pub(super) fn check(
    quotas: &[&Quota],
    ev: &Evaluator,
    old: Option<&Value>,
    new: &Subject<'_>,
) -> Result<Vec<(usize, ResourceList)>, String> {
    let obj = new.obj;
    if old.is_some_and(|old| !ev.handles_update(old, obj)) {
        return Ok(vec![]);
    }
    let mut interesting = Vec::new();
    for (i, q) in quotas.iter().enumerate() {
        let restricted = ev.matching_resources(q.hard.keys().map(String::as_str));
        if restricted.is_empty() || !ev.matches_scopes_given(&q.scopes, obj, new.qos) {
            continue;
        }
        match (ev, new.pod) {
            (Evaluator::Pods, Some(pod)) => pod_constraints(&restricted, obj, pod),
            _ => ev.constraints(&restricted, obj),
        }
        .map_err(|m| format!("failed quota: {}: {m}", q.name))?;
        if restricted.iter().any(|r| !q.used.contains_key(*r)) {
            let mut names = restricted.clone();
            names.sort_unstable();
            return Err(format!(
                "status unknown for quota: {}, resources: {}",
                q.name,
                names.join(",")
            ));
        }
        interesting.push(i);
    }
    if interesting.is_empty() {
        return Ok(vec![]);
    }
    let mut delta = new.usage(ev)?;
    let negative = resources::negative_names(&delta);
    if !negative.is_empty() {
        return Err(format!(
            "quota usage is negative for resource(s): {}",
            negative.join(",")
        ));
    }
    if let Some(old) = old {
        let before = ev
            .usage(old)
            .map_err(|e| format!("cannot measure quota usage: {e}"))?;
        delta = Cow::Owned(subtract_non_negative(&delta, &before));
    }
    // Zeros are no change: they are skipped below.
    if delta.values().all(Quantity::is_zero) {
        return Ok(vec![]);
    }
    let mut charges = Vec::new();
    for i in interesting {
        let q = &quotas[i];
        // `used + requested`, where requested is the delta on the quota's
        // hard names, and the names it takes past their hard limit. (One
        // copy of `used` per quota: this runs on every create.)
        let mut new_used: Option<ResourceList> = None;
        let mut over: Vec<&str> = Vec::new();
        for (name, hard) in q.hard.iter() {
            let Some(d) = delta.get(name).filter(|d| !d.is_zero()) else {
                continue;
            };
            let used = new_used.get_or_insert_with(|| q.used.clone());
            // (A name is copied only if `used` lacks it.)
            let u = match used.get_mut(name) {
                Some(u) => u,
                None => used.entry(name.clone()).or_insert(Quantity::ZERO),
            };
            u.add(d);
            if *u > *hard {
                over.push(name);
            }
        }
        if !over.is_empty() {
            let names = || over.iter().copied();
            return Err(format!(
                "exceeded quota: {}, requested: {}, used: {}, limited: {}",
                q.name,
                pretty(&mask(&delta, names())),
                pretty(&mask(&q.used, names())),
                pretty(&mask(&q.hard, names())),
            ));
        }
        // Zeros were skipped: a quota the delta touches always changes.
        if let Some(new_used) = new_used {
            charges.push((i, new_used));
        }
    }
    Ok(charges)
}

#[cfg(test)]
mod tests;
