//! ResourceQuota, as the API server enforces it: its validation, the status
//! a quota is given when written (what the quota controller computes on its
//! first sync), and the admission check that refuses what would exceed a
//! quota and says what to charge (upstream's `checkRequest`, with its
//! messages).

use std::borrow::Cow;
use std::ops::Deref;
use std::sync::Arc;

use serde_json::{Value, json};
use windlass_selector::quota::{
    Evaluator, PodUsage, SCOPES, ScopeRequirement, calculate_usage, constrains_containers,
    pod_constraints, pod_usage, scope_requirements,
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
    /// The hard names the pod evaluator tracks (what a pod create asks of
    /// every quota of its namespace, found once per quota).
    pod_names: Arc<[String]>,
    /// Those of them every container must then set (the rest never fail
    /// the pod evaluator's constraints).
    pod_constrained: Arc<[String]>,
    /// Whether `used` has every one of `pod_names` (else a pod is refused:
    /// the quota's status is unknown). Charges never take a name away.
    pods_known: bool,
    /// Whether `used` names exactly the names of `hard` (as the status
    /// admission and the quota controller write does): then the n-th name
    /// of one is the n-th of the other, and a charge needs no look-up.
    same_names: bool,
    /// The quota as stored, which a charge writes with another
    /// `status.used`: kept with the reading so that a charge copies it
    /// rather than parse the stored object again.
    pub(super) stored: Arc<Value>,
}

impl Quota {
    pub(super) fn of(v: &Value) -> Self {
        let hard = parse_list(&v["status"]["hard"]).unwrap_or_default();
        let pod_names: Arc<[String]> = Evaluator::Pods
            .matching_resources(hard.keys().map(String::as_str))
            .into_iter()
            .map(str::to_owned)
            .collect();
        let used = parse_list(&v["status"]["used"]).unwrap_or_default();
        let pod_constrained = pod_names
            .iter()
            .filter(|n| constrains_containers(n))
            .cloned()
            .collect();
        Self {
            name: v["metadata"]["name"].as_str().unwrap_or_default().into(),
            same_names: used.keys().eq(hard.keys()),
            pods_known: pod_names.iter().all(|n| used.contains_key(n)),
            hard: Arc::new(hard),
            used,
            scopes: scope_requirements(v).into(),
            pod_names,
            pod_constrained,
            stored: Arc::new(v.clone()),
        }
    }
}

/// The object being admitted, with what the quota rules read of it that
/// admission has already worked out: a pod's parsed resources and its QoS
/// class (asked only by a quota scoped by it).
pub(super) struct Subject<'a> {
    pub(super) obj: &'a Value,
    pub(super) pod: Option<&'a PodResources>,
    /// The pod's usage, if it was measured already (else it is read from
    /// `pod`).
    pub(super) usage: Option<&'a PodUsage<'a>>,
    pub(super) qos: &'a dyn Fn() -> QosClass,
}

/// What a write costs the quotas: a pod created is read name by name from
/// its parsed resources; anything else is measured into a list.
enum Delta<'a> {
    Pod(PodUsage<'a>),
    List(Cow<'a, ResourceList>),
}

impl Delta<'_> {
    fn get(&self, name: &str) -> Option<Quantity> {
        match self {
            Self::Pod(u) => u.get(name),
            Self::List(l) => l.get(name).copied(),
        }
    }

    /// The entries named, as [`mask`] gives them.
    fn masked<'n>(&self, names: impl IntoIterator<Item = &'n str>) -> ResourceList {
        match self {
            Self::Pod(u) => names
                .into_iter()
                .filter_map(|n| Some((n.to_owned(), u.get(n)?)))
                .collect(),
            Self::List(l) => mask(l, names),
        }
    }
}

impl Subject<'_> {
    /// What the write costs, before an update's old cost is taken off.
    fn usage(&self, ev: &Evaluator, updating: bool) -> Result<Delta<'_>, String> {
        match (ev, self.usage, self.pod) {
            (Evaluator::Pods, Some(usage), _) if !updating => Ok(Delta::Pod(usage.view())),
            (Evaluator::Pods, None, Some(pod)) if !updating => {
                Ok(Delta::Pod(PodUsage::of(self.obj, pod)))
            }
            (Evaluator::Pods, Some(usage), _) => Ok(Delta::List(Cow::Owned(usage.to_list()))),
            (Evaluator::Pods, None, Some(pod)) => {
                Ok(Delta::List(Cow::Owned(pod_usage(self.obj, pod))))
            }
            _ => ev
                .usage(self.obj)
                .map(|l| Delta::List(Cow::Owned(l)))
                .map_err(|e| format!("cannot measure quota usage: {e}")),
        }
    }
}

/// What a write charges the quotas it was checked against: for each
/// (quota index, index of a hard name in that quota's `hard`), the new
/// `used` of that name, in quota order. One list for all the quotas, made
/// on every charged create.
#[derive(Debug, Default)]
pub(super) struct Charge(Vec<(usize, usize, Quantity)>);

impl Charge {
    /// The indices of the quotas charged, in order.
    pub(super) fn quotas(&self) -> impl Iterator<Item = usize> + '_ {
        let mut last = None;
        self.0
            .iter()
            .map(|(q, _, _)| *q)
            .filter(move |q| last.replace(*q) != Some(*q))
    }

    /// Sets quota `index`'s charge into `quota` (the quota it was checked
    /// against, or that reading charged since: the same `hard`).
    pub(super) fn apply(&self, index: usize, quota: &mut Quota) {
        // A quota's entries are together, in the order of its names.
        let mine = self
            .0
            .iter()
            .skip_while(|(q, _, _)| *q != index)
            .take_while(|(q, _, _)| *q == index);
        if quota.same_names {
            let mut used = quota.used.values_mut().enumerate();
            for (_, n, value) in mine {
                if let Some((_, u)) = used.find(|(i, _)| i == n) {
                    *u = *value;
                }
            }
            return;
        }
        let mut mine = mine.peekable();
        for (i, name) in quota.hard.keys().enumerate() {
            let Some((_, _, value)) = mine.next_if(|(_, n, _)| *n == i) else {
                continue;
            };
            // (A name is copied only if `used` lacks it.)
            match quota.used.get_mut(name) {
                Some(u) => *u = *value,
                None => {
                    quota.used.insert(name.clone(), *value);
                }
            }
        }
    }
}

/// Checks a create (`old` none) or update of `new.obj` against the
/// namespace's quotas. `Ok` holds, per quota index, the `used` to charge;
/// `Err` the reason the request is forbidden.
#[cfg(test)]
pub(super) fn check(
    quotas: &[&Quota],
    ev: &Evaluator,
    old: Option<&Value>,
    new: &Subject<'_>,
) -> Result<Vec<(usize, ResourceList)>, String> {
    let charge = charges(quotas, ev, old, new)?;
    Ok(charge
        .quotas()
        .map(|i| {
            let mut q = quotas[i].clone();
            charge.apply(i, &mut q);
            (i, q.used)
        })
        .collect())
}

/// [`check`], the charges as a [`Charge`] (no copy of any quota's `used`).
pub(super) fn charges<Q: Deref<Target = Quota>>(
    quotas: &[Q],
    ev: &Evaluator,
    old: Option<&Value>,
    new: &Subject<'_>,
) -> Result<Charge, String> {
    let obj = new.obj;
    if old.is_some_and(|old| !ev.handles_update(old, obj)) {
        return Ok(Charge::default());
    }
    let mut interesting = Applying::default();
    for (i, q) in quotas.iter().enumerate() {
        let admits = match (ev, new.pod) {
            // Read from what the quota found once: only the names that
            // constrain containers are asked of them, and whether its
            // usage of all of them is known.
            (Evaluator::Pods, Some(pod)) => applies(q, &q.pod_names, ev, new, q.pods_known, || {
                if q.pod_constrained.is_empty() {
                    return Ok(());
                }
                pod_constraints(&q.pod_constrained, obj, pod)
            }),
            _ => {
                let restricted = ev.matching_resources(q.hard.keys().map(String::as_str));
                let known = restricted.iter().all(|r| q.used.contains_key(*r));
                applies(q, &restricted, ev, new, known, || {
                    ev.constraints(&restricted, obj)
                })
            }
        };
        if admits? {
            interesting.add(i);
        }
    }
    if interesting.is_empty() {
        return Ok(Charge::default());
    }
    let mut delta = new.usage(ev, old.is_some())?;
    let negative = match &delta {
        Delta::Pod(u) if !u.may_be_negative() => vec![],
        Delta::Pod(u) => resources::negative_names(&u.to_list()),
        Delta::List(l) => resources::negative_names(l),
    };
    if !negative.is_empty() {
        return Err(format!(
            "quota usage is negative for resource(s): {}",
            negative.join(",")
        ));
    }
    if let (Some(old), Delta::List(now)) = (old, &delta) {
        let before = ev
            .usage(old)
            .map_err(|e| format!("cannot measure quota usage: {e}"))?;
        delta = Delta::List(Cow::Owned(subtract_non_negative(now, &before)));
    }
    // Zeros are no change: they are skipped below. (A pod created always
    // counts one in `count/pods`.)
    if let Delta::List(l) = &delta
        && l.values().all(Quantity::is_zero)
    {
        return Ok(Charge::default());
    }
    // Room for every name of the quotas that apply: one allocation.
    let names = interesting.iter().map(|i| quotas[i].hard.len()).sum();
    let mut charge = Charge(Vec::with_capacity(names));
    for i in interesting.iter() {
        let q = &quotas[i];
        // `used + requested`, where requested is the delta on the quota's
        // hard names, and the names it takes past their hard limit.
        let mut over: Vec<&str> = Vec::new();
        // Where `used` names what `hard` does, its n-th is the n-th name's.
        let mut by_position = q.same_names.then(|| q.used.values());
        for (n, (name, hard)) in q.hard.iter().enumerate() {
            let at = by_position.as_mut().and_then(Iterator::next);
            let Some(d) = delta.get(name).filter(|d| !d.is_zero()) else {
                continue;
            };
            let mut used = match at {
                Some(u) => *u,
                None => q.used.get(name).copied().unwrap_or(Quantity::ZERO),
            };
            used.add(&d);
            if used > *hard {
                over.push(name);
            }
            charge.0.push((i, n, used));
        }
        if !over.is_empty() {
            let names = || over.iter().copied();
            return Err(format!(
                "exceeded quota: {}, requested: {}, used: {}, limited: {}",
                q.name,
                pretty(&delta.masked(names())),
                pretty(&mask(&q.used, names())),
                pretty(&mask(&q.hard, names())),
            ));
        }
    }
    Ok(charge)
}

/// The indices of the quotas that apply to a write: bits for the first
/// 128 (a namespace has a few), a list past them. (This runs on every
/// create: no allocation for the usual namespace.)
#[derive(Default)]
struct Applying {
    bits: u128,
    more: Vec<usize>,
}

impl Applying {
    fn add(&mut self, i: usize) {
        match u32::try_from(i) {
            Ok(bit) if bit < u128::BITS => self.bits |= 1 << bit,
            _ => self.more.push(i),
        }
    }

    fn is_empty(&self) -> bool {
        self.bits == 0 && self.more.is_empty()
    }

    fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        // The set bits, lowest first.
        let mut bits = self.bits;
        std::iter::from_fn(move || {
            let i = bits.trailing_zeros();
            (i < u128::BITS).then(|| {
                bits &= bits - 1;
                i as usize
            })
        })
        .chain(self.more.iter().copied())
    }
}

/// Whether quota `q` applies to the subject (`restricted`: the hard names
/// its evaluator tracks), or why the subject is refused: the evaluator's
/// `constraints` on those names, and a quota whose usage of them is not
/// `known`.
fn applies<S: AsRef<str>>(
    q: &Quota,
    restricted: &[S],
    ev: &Evaluator,
    new: &Subject<'_>,
    known: bool,
    constraints: impl FnOnce() -> Result<(), String>,
) -> Result<bool, String> {
    if restricted.is_empty() || !ev.matches_scopes_given(&q.scopes, new.obj, new.qos) {
        return Ok(false);
    }
    constraints().map_err(|m| format!("failed quota: {}: {m}", q.name))?;
    if !known {
        let mut names: Vec<&str> = restricted.iter().map(AsRef::as_ref).collect();
        names.sort_unstable();
        return Err(format!(
            "status unknown for quota: {}, resources: {}",
            q.name,
            names.join(",")
        ));
    }
    Ok(true)
}

#[cfg(test)]
mod tests;
