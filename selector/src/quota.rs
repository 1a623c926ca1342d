//! What an object costs a `ResourceQuota`: the usage evaluators of the
//! Kubernetes API server and quota controller (`pkg/quota/v1/evaluator/core`,
//! `generic.ObjectCountEvaluator`), as plain functions over JSON objects.
//!
//! The embedded API server uses them to check and charge quota on admission;
//! the `resourcequota` plugin uses the same ones to recompute
//! `status.used`, so both always agree on what everything costs.
//!
//! ```
//! use serde_json::json;
//! use windlass_selector::quota::Evaluator;
//! let pod = json!({"spec": {"containers": [
//!     {"name": "a", "resources": {"requests": {"cpu": "250m"}, "limits": {"cpu": "1"}}}]}});
//! let usage = Evaluator::of("", "pods").unwrap().usage(&pod).unwrap();
//! assert_eq!(usage["requests.cpu"].to_string(), "250m");
//! assert_eq!(usage["pods"].to_string(), "1");
//! assert_eq!(usage["count/pods"].to_string(), "1");
//! ```

use std::borrow::Cow;
use std::collections::BTreeSet;

use serde_json::Value;

use crate::Quantity;
use crate::pod_resources::{PodResources, QosClass, has_pod_level_resources, qos_class};
use crate::resources::{self, InvalidQuantity, ResourceList};

/// Compute resources that every container must set once a quota limits
/// them (an upstream backward-compatibility rule kept for cpu and memory only).
const VALIDATION_SET: [&str; 6] = [
    "cpu",
    "memory",
    "requests.cpu",
    "requests.memory",
    "limits.cpu",
    "limits.memory",
];

/// Whether a pod's every container must set what the quota name `name`
/// limits, once a quota limits it ([`Evaluator::constraints`] asks only
/// these of the names it is given).
pub fn constrains_containers(name: &str) -> bool {
    VALIDATION_SET.contains(&name)
}

/// The names the pod evaluator tracks, besides prefixed ones (a `match`:
/// admission asks this of every hard name of every quota on each create).
fn is_pod_resource(name: &str) -> bool {
    matches!(
        name,
        "count/pods"
            | "cpu"
            | "memory"
            | "ephemeral-storage"
            | "requests.cpu"
            | "requests.memory"
            | "requests.ephemeral-storage"
            | "limits.cpu"
            | "limits.memory"
            | "limits.ephemeral-storage"
            | "pods"
    )
}

const SERVICE_RESOURCES: [&str; 4] = [
    "count/services",
    "services",
    "services.nodeports",
    "services.loadbalancers",
];

/// `<class>.storageclass.storage.k8s.io/<resource>` quota names.
const STORAGE_CLASS_SUFFIX: &str = ".storageclass.storage.k8s.io/";

/// Scope names a quota may use.
pub const SCOPES: [&str; 6] = [
    "Terminating",
    "NotTerminating",
    "BestEffort",
    "NotBestEffort",
    "PriorityClass",
    "CrossNamespacePodAffinity",
];

/// An object this evaluator could not measure.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UsageError {
    /// A resource quantity in the object does not parse.
    #[error("invalid quantity in {0}")]
    Quantity(#[from] InvalidQuantity),
}

/// One term of a quota's scopes: `spec.scopes` entries (operator `Exists`)
/// and `spec.scopeSelector.matchExpressions`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScopeRequirement {
    /// `Terminating`, `BestEffort`, `PriorityClass`, ...
    pub scope_name: String,
    /// `In`, `NotIn`, `Exists` or `DoesNotExist`.
    pub operator: String,
    /// For `In` and `NotIn`.
    pub values: Vec<String>,
}

/// Every scope term of a quota object.
pub fn scope_requirements(quota: &Value) -> Vec<ScopeRequirement> {
    let spec = &quota["spec"];
    let mut out: Vec<ScopeRequirement> = spec["scopes"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(|s| ScopeRequirement {
            scope_name: s.to_owned(),
            operator: "Exists".to_owned(),
            values: vec![],
        })
        .collect();
    for e in spec["scopeSelector"]["matchExpressions"]
        .as_array()
        .into_iter()
        .flatten()
    {
        out.push(ScopeRequirement {
            scope_name: e["scopeName"].as_str().unwrap_or_default().to_owned(),
            operator: e["operator"].as_str().unwrap_or_default().to_owned(),
            values: e["values"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect(),
        });
    }
    out
}

/// The quota name counting objects of `group`/`resource`: `count/pods`,
/// `count/deployments.apps`.
pub fn object_count_name(group: &str, resource: &str) -> String {
    if group.is_empty() {
        format!("count/{resource}")
    } else {
        format!("count/{resource}.{group}")
    }
}

/// The `(group, resource)` a `count/<resource>.<group>` name counts.
pub fn counted_resource(name: &str) -> Option<(&str, &str)> {
    let rest = name.strip_prefix("count/").filter(|r| !r.is_empty())?;
    Some(match rest.split_once('.') {
        Some((resource, group)) => (group, resource),
        None => ("", rest),
    })
}

/// Whether a resource name is native to Kubernetes (no domain, or a
/// `kubernetes.io` one).
fn is_native(name: &str) -> bool {
    !name.contains('/') || name.contains("kubernetes.io/")
}

/// An extended resource a container may request (`example.com/gpu`).
fn is_extended(name: &str) -> bool {
    !is_native(name) && !name.starts_with("requests.")
}

/// The quota name for an extended resource (`requests.example.com/gpu`).
fn is_extended_quota_name(name: &str) -> bool {
    !is_native(name) && name.starts_with("requests.")
}

/// The kinds of usage evaluators, one per resource (upstream's registry).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Evaluator {
    /// Pods: compute resources, `pods`, `count/pods`; scopes apply.
    Pods,
    /// Services: `services`, `services.loadbalancers`, `services.nodeports`.
    Services,
    /// PersistentVolumeClaims: claims and storage, also per storage class.
    PersistentVolumeClaims,
    /// Any other kind: `count/<resource>.<group>`, plus the legacy name
    /// (`configmaps`, `secrets`, `resourcequotas`, `replicationcontrollers`).
    Count {
        /// `count/<resource>.<group>`.
        name: String,
        /// The legacy name, for the four core kinds that have one.
        alias: Option<&'static str>,
    },
}

impl Evaluator {
    /// The evaluator for objects of `group`/`resource` (plural), or `None`
    /// for kinds quota ignores (core Events).
    pub fn of(group: &str, resource: &str) -> Option<Self> {
        Some(match (group, resource) {
            ("", "events") => return None,
            ("", "pods") => Self::Pods,
            ("", "services") => Self::Services,
            ("", "persistentvolumeclaims") => Self::PersistentVolumeClaims,
            _ => Self::Count {
                name: object_count_name(group, resource),
                alias: match (group, resource) {
                    ("", "configmaps") => Some("configmaps"),
                    ("", "secrets") => Some("secrets"),
                    ("", "resourcequotas") => Some("resourcequotas"),
                    ("", "replicationcontrollers") => Some("replicationcontrollers"),
                    _ => None,
                },
            },
        })
    }

    /// The evaluator that tracks the quota name `name`, with the
    /// `(group, resource)` it counts, or `None` if no kind does.
    pub fn tracking(name: &str) -> Option<(String, String, Self)> {
        let core = |r: &str| Some((String::new(), r.to_owned(), Self::of("", r)?));
        if Self::Pods.tracks(name) {
            return core("pods");
        }
        if Self::Services.tracks(name) {
            return core("services");
        }
        if Self::PersistentVolumeClaims.tracks(name) {
            return core("persistentvolumeclaims");
        }
        match name {
            "configmaps" | "secrets" | "resourcequotas" | "replicationcontrollers" => core(name),
            _ => {
                let (group, resource) = counted_resource(name)?;
                Some((
                    group.to_owned(),
                    resource.to_owned(),
                    Self::of(group, resource)?,
                ))
            }
        }
    }

    /// Whether this evaluator tracks the quota name `name`.
    pub fn tracks(&self, name: &str) -> bool {
        match self {
            Self::Pods => {
                is_pod_resource(name)
                    || name.starts_with("hugepages-")
                    || name.starts_with("requests.hugepages-")
                    || is_extended_quota_name(name)
            }
            Self::Services => SERVICE_RESOURCES.contains(&name),
            Self::PersistentVolumeClaims => {
                matches!(
                    name,
                    "count/persistentvolumeclaims" | "persistentvolumeclaims" | "requests.storage"
                ) || name.ends_with(&format!("{STORAGE_CLASS_SUFFIX}persistentvolumeclaims"))
                    || name.ends_with(&format!("{STORAGE_CLASS_SUFFIX}requests.storage"))
            }
            Self::Count { name: n, alias } => name == n || alias.is_some_and(|a| a == name),
        }
    }

    /// The names in `names` this evaluator tracks.
    pub fn matching_resources<'a>(&self, names: impl IntoIterator<Item = &'a str>) -> Vec<&'a str> {
        names.into_iter().filter(|n| self.tracks(n)).collect()
    }

    /// Every field of an object that [`Evaluator::usage`] and
    /// [`Evaluator::matches_scope`] read, as [`crate::partial::Fields`]
    /// paths: a reader measuring many stored objects may parse only these
    /// (the API server's recount of a quota does). A test holds both to
    /// the same answers on objects cut to these fields.
    pub fn reads(&self) -> &'static [&'static str] {
        match self {
            Self::Pods => &[
                "spec.containers.resources",
                "spec.containers.restartPolicy",
                "spec.initContainers.resources",
                "spec.initContainers.restartPolicy",
                "spec.overhead",
                "spec.resources",
                "spec.activeDeadlineSeconds",
                "spec.priorityClassName",
                "spec.affinity",
                "status.phase",
            ],
            Self::Services => &["spec.type", "spec.ports"],
            Self::PersistentVolumeClaims => &[
                "metadata.annotations",
                "spec.storageClassName",
                "spec.resources",
            ],
            // Counted, never read.
            Self::Count { .. } => &[],
        }
    }

    /// What `obj` costs.
    pub fn usage(&self, obj: &Value) -> Result<ResourceList, UsageError> {
        let one = Quantity::from_units(1);
        let mut out = ResourceList::new();
        match self {
            Self::Pods => return Ok(pod_usage(obj, &counted_resources(obj)?)),
            Self::Services => {
                let ports = obj["spec"]["ports"].as_array().map_or(0, Vec::len);
                let (node_ports, balancers) = match obj["spec"]["type"].as_str() {
                    Some("NodePort") => (ports, 0),
                    Some("LoadBalancer") => (ports, 1),
                    _ => (0, 0),
                };
                out.insert("count/services".into(), one);
                out.insert("services".into(), one);
                out.insert(
                    "services.nodeports".into(),
                    Quantity::from_units(node_ports as i64),
                );
                out.insert(
                    "services.loadbalancers".into(),
                    Quantity::from_units(balancers),
                );
            }
            Self::PersistentVolumeClaims => {
                out.insert("persistentvolumeclaims".into(), one);
                out.insert("count/persistentvolumeclaims".into(), one);
                let class = storage_class(obj);
                if let Some(c) = class {
                    out.insert(
                        format!("{c}{STORAGE_CLASS_SUFFIX}persistentvolumeclaims"),
                        one,
                    );
                }
                let requests = resources::parse_list(&obj["spec"]["resources"]["requests"])?;
                if let Some(q) = requests.get("storage") {
                    // Counted in whole bytes, as upstream rounds it.
                    let q = q.round_up_to_units();
                    out.insert("requests.storage".into(), q);
                    if let Some(c) = class {
                        out.insert(format!("{c}{STORAGE_CLASS_SUFFIX}requests.storage"), q);
                    }
                }
            }
            Self::Count { name, alias } => {
                out.insert(name.clone(), one);
                if let Some(a) = alias {
                    out.insert((*a).to_owned(), one);
                }
            }
        }
        Ok(out)
    }

    /// Adds what `obj` costs to each name `sum` already holds (the names a
    /// quota tracks): [`Evaluator::usage`] of those names, without building
    /// a pod's whole usage list (a recount adds up every pod).
    pub fn add_usage(&self, obj: &Value, sum: &mut ResourceList) -> Result<(), UsageError> {
        let mut add = |get: &dyn Fn(&str) -> Option<Quantity>| {
            for (name, total) in sum.iter_mut() {
                if let Some(q) = get(name) {
                    total.add(&q);
                }
            }
        };
        if *self == Self::Pods {
            let resources = counted_resources(obj)?;
            let usage = PodUsage::of(obj, &resources);
            add(&|name| usage.get(name));
        } else {
            let usage = self.usage(obj)?;
            add(&|name| usage.get(name).copied());
        }
        Ok(())
    }

    /// Whether `obj` falls under one scope term. Only pods have scopes:
    /// for other kinds every scope is a non-match (so a scoped quota never
    /// counts them).
    pub fn matches_scope(&self, scope: &ScopeRequirement, obj: &Value) -> bool {
        self.matches_scope_given(scope, obj, &|| qos_class(obj))
    }

    /// [`Evaluator::matches_scope`] for a pod whose QoS class `qos` gives
    /// (asked only by the scopes that need it).
    fn matches_scope_given(
        &self,
        scope: &ScopeRequirement,
        obj: &Value,
        qos: &dyn Fn() -> QosClass,
    ) -> bool {
        if *self != Self::Pods {
            return false;
        }
        match scope.scope_name.as_str() {
            "Terminating" => is_terminating(obj),
            "NotTerminating" => !is_terminating(obj),
            "BestEffort" => qos() == QosClass::BestEffort,
            "NotBestEffort" => qos() != QosClass::BestEffort,
            "PriorityClass" => {
                let class = obj["spec"]["priorityClassName"]
                    .as_str()
                    .filter(|c| !c.is_empty());
                match scope.operator.as_str() {
                    "Exists" => class.is_some(),
                    "DoesNotExist" => class.is_none(),
                    "In" => class.is_some_and(|c| scope.values.iter().any(|v| v == c)),
                    "NotIn" => class.is_none_or(|c| scope.values.iter().all(|v| v != c)),
                    _ => false,
                }
            }
            "CrossNamespacePodAffinity" => uses_cross_namespace_affinity(obj),
            _ => false,
        }
    }

    /// Whether `obj` matches every scope term.
    pub fn matches_scopes(&self, scopes: &[ScopeRequirement], obj: &Value) -> bool {
        scopes.iter().all(|s| self.matches_scope(s, obj))
    }

    /// [`Evaluator::matches_scopes`] with the pod's QoS class given by
    /// `qos` (asked only by the scopes that need it): for a reader that
    /// asks several quotas about one pod.
    pub fn matches_scopes_given(
        &self,
        scopes: &[ScopeRequirement],
        obj: &Value,
        qos: &dyn Fn() -> QosClass,
    ) -> bool {
        scopes.iter().all(|s| self.matches_scope_given(s, obj, qos))
    }

    /// Whether an update from `old` to `new` can change what the object
    /// costs: services and claims can change type or size; a pod only when
    /// it moves between the Terminating and NotTerminating scopes; other
    /// kinds are charged on create only.
    pub fn handles_update(&self, old: &Value, new: &Value) -> bool {
        match self {
            Self::Services | Self::PersistentVolumeClaims => true,
            Self::Pods => is_terminating(old) != is_terminating(new),
            Self::Count { .. } => false,
        }
    }

    /// For pods: every container must set the cpu and memory requests and
    /// limits that `required` (the quota's tracked names) constrain. The
    /// message is the API server's (`must specify limits.cpu for: app; ...`).
    pub fn constraints(&self, required: &[&str], obj: &Value) -> Result<(), String> {
        if *self != Self::Pods || has_pod_level_resources(obj) {
            return Ok(());
        }
        let validated = || {
            required
                .iter()
                .copied()
                .filter(|r| VALIDATION_SET.contains(r))
        };
        if validated().next().is_none() {
            return Ok(());
        }
        let spec = &obj["spec"];
        let containers = || {
            spec["containers"]
                .as_array()
                .into_iter()
                .flatten()
                .chain(spec["initContainers"].as_array().into_iter().flatten())
        };
        let set = |c: &Value, r: &str| {
            let (which, name) = match r {
                "cpu" | "requests.cpu" => ("requests", "cpu"),
                "memory" | "requests.memory" => ("requests", "memory"),
                "limits.cpu" => ("limits", "cpu"),
                _ => ("limits", "memory"),
            };
            c["resources"][which].get(name).is_some()
        };
        // Most pods set what is required: look before collecting names.
        if containers().all(|c| validated().all(|r| set(c, r))) {
            return Ok(());
        }
        let required: BTreeSet<&str> = validated().collect();
        let mut missing: std::collections::BTreeMap<&str, BTreeSet<&str>> = Default::default();
        for c in containers() {
            let name = c["name"].as_str().unwrap_or_default();
            for r in &required {
                if !set(c, r) {
                    missing.entry(r).or_default().insert(name);
                }
            }
        }
        if missing.is_empty() {
            return Ok(());
        }
        let parts: Vec<String> = missing
            .iter()
            .map(|(r, names)| {
                format!(
                    "{r} for: {}",
                    names.iter().copied().collect::<Vec<_>>().join(",")
                )
            })
            .collect();
        Err(format!("must specify {}", parts.join("; ")))
    }
}

/// [`Evaluator::constraints`] for a pod whose resources are parsed
/// already: when every container sets what `required` names (or the pod
/// sets pod-level resources), no JSON is read; the message of a failure
/// still comes from `pod`'s JSON.
pub fn pod_constraints<S: AsRef<str>>(
    required: &[S],
    pod: &Value,
    resources: &PodResources,
) -> Result<(), String> {
    if resources.pod_level {
        return Ok(());
    }
    let set = |c: &crate::ContainerResources, r: &S| match r.as_ref() {
        "cpu" | "requests.cpu" => c.requests.contains_key("cpu"),
        "memory" | "requests.memory" => c.requests.contains_key("memory"),
        "limits.cpu" => c.limits.contains_key("cpu"),
        "limits.memory" => c.limits.contains_key("memory"),
        _ => true,
    };
    let complete = resources
        .containers
        .iter()
        .chain(&resources.init_containers)
        .all(|c| required.iter().all(|r| set(c, r)));
    if complete {
        Ok(())
    } else {
        let required: Vec<&str> = required.iter().map(AsRef::as_ref).collect();
        Evaluator::Pods.constraints(&required, pod)
    }
}

/// The resources of a pod quota counts: none for a finished pod, which
/// counts in `count/pods` alone, whatever its quantities (not read).
fn counted_resources(pod: &Value) -> Result<PodResources, InvalidQuantity> {
    if is_terminal(pod) {
        Ok(PodResources::default())
    } else {
        PodResources::of(pod)
    }
}

/// A pod that has finished (`Succeeded` or `Failed`) no longer uses compute
/// quota.
pub fn is_terminal(pod: &Value) -> bool {
    matches!(
        pod["status"]["phase"].as_str(),
        Some("Succeeded" | "Failed")
    )
}

/// The compute names a pod is charged for, with their `requests.` and
/// `limits.` forms (written out: this runs on every pod create).
const COMPUTE: [(&str, &str, &str); 3] = [
    ("cpu", "requests.cpu", "limits.cpu"),
    ("memory", "requests.memory", "limits.memory"),
    (
        "ephemeral-storage",
        "requests.ephemeral-storage",
        "limits.ephemeral-storage",
    ),
];

/// What a pod costs ([`Evaluator::usage`]), from its resources parsed
/// once: for a reader that has them already.
pub fn pod_usage(pod: &Value, resources: &PodResources) -> ResourceList {
    PodUsage::of(pod, resources).to_list()
}

/// What a pod costs, read name by name from its parsed resources: the
/// entries of [`pod_usage`] without building that list (a quota check asks
/// for a few names on every pod create). `get(n)` is `pod_usage(..).get(n)`.
#[derive(Debug, Clone)]
pub struct PodUsage<'a> {
    terminal: bool,
    requests: Cow<'a, ResourceList>,
    limits: Cow<'a, ResourceList>,
}

impl<'a> PodUsage<'a> {
    /// The usage of `pod`, whose resources are `resources` (see
    /// [`PodResources::effective_requests`]: most pods' are borrowed).
    pub fn of(pod: &Value, resources: &'a PodResources) -> Self {
        if is_terminal(pod) {
            // A finished pod counts in `count/pods` alone.
            return Self {
                terminal: true,
                requests: Cow::Owned(ResourceList::new()),
                limits: Cow::Owned(ResourceList::new()),
            };
        }
        Self {
            terminal: false,
            requests: resources.effective_requests(),
            limits: resources.effective_limits(),
        }
    }

    /// This usage owning what it read.
    pub fn into_owned(self) -> PodUsage<'static> {
        PodUsage {
            terminal: self.terminal,
            requests: Cow::Owned(self.requests.into_owned()),
            limits: Cow::Owned(self.limits.into_owned()),
        }
    }

    /// This usage, borrowing from `self`.
    pub fn view(&self) -> PodUsage<'_> {
        PodUsage {
            terminal: self.terminal,
            requests: Cow::Borrowed(&self.requests),
            limits: Cow::Borrowed(&self.limits),
        }
    }

    /// The usage of the quota name `name`, if the pod is charged for it.
    pub fn get(&self, name: &str) -> Option<Quantity> {
        let one = Quantity::from_units(1);
        let (requests, limits) = (&self.requests, &self.limits);
        match name {
            "count/pods" => Some(one),
            _ if self.terminal => None,
            "pods" => Some(one),
            _ => {
                if let Some((r, _, _)) = COMPUTE
                    .iter()
                    .find(|(r, request, _)| name == *r || name == *request)
                {
                    return requests.get(*r).copied();
                }
                if let Some((r, _, _)) = COMPUTE.iter().find(|(_, _, limit)| name == *limit) {
                    return limits.get(*r).copied();
                }
                if name.starts_with("hugepages-") {
                    return requests.get(name).copied();
                }
                let r = name.strip_prefix("requests.")?;
                (r.starts_with("hugepages-") || is_extended(r))
                    .then(|| requests.get(r).copied())
                    .flatten()
            }
        }
    }

    /// Whether some entry could be below zero (then [`PodUsage::to_list`]
    /// tells which; validation refuses negative pod quantities, so this is
    /// rarely true).
    pub fn may_be_negative(&self) -> bool {
        self.requests
            .values()
            .chain(self.limits.values())
            .any(Quantity::is_negative)
    }

    /// The whole usage, as [`pod_usage`] gives it.
    pub fn to_list(&self) -> ResourceList {
        let one = Quantity::from_units(1);
        let mut out = ResourceList::new();
        out.insert("count/pods".into(), one);
        if self.terminal {
            return out;
        }
        out.insert("pods".into(), one);
        for (r, request, limit) in COMPUTE {
            if let Some(q) = self.requests.get(r) {
                out.insert(r.into(), *q);
                out.insert(request.into(), *q);
            }
            if let Some(q) = self.limits.get(r) {
                out.insert(limit.into(), *q);
            }
        }
        for (r, q) in self.requests.iter() {
            if r.starts_with("hugepages-") {
                out.insert(r.clone(), *q);
                out.insert(format!("requests.{r}"), *q);
            } else if is_extended(r) {
                out.insert(format!("requests.{r}"), *q);
            }
        }
        out
    }
}

/// A pod with `activeDeadlineSeconds >= 0` is in the `Terminating` scope.
fn is_terminating(pod: &Value) -> bool {
    pod["spec"]["activeDeadlineSeconds"]
        .as_i64()
        .is_some_and(|s| s >= 0)
}

fn uses_cross_namespace_affinity(pod: &Value) -> bool {
    let cross = |term: &Value| {
        term["namespaces"].as_array().is_some_and(|n| !n.is_empty())
            || !term["namespaceSelector"].is_null()
    };
    let affinity = &pod["spec"]["affinity"];
    ["podAffinity", "podAntiAffinity"].iter().any(|k| {
        let a = &affinity[k];
        a["requiredDuringSchedulingIgnoredDuringExecution"]
            .as_array()
            .into_iter()
            .flatten()
            .any(cross)
            || a["preferredDuringSchedulingIgnoredDuringExecution"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|w| cross(&w["podAffinityTerm"]))
    })
}

/// A claim's storage class: the beta annotation, else `spec.storageClassName`.
fn storage_class(pvc: &Value) -> Option<&str> {
    pvc["metadata"]["annotations"]["volume.beta.kubernetes.io/storage-class"]
        .as_str()
        .or_else(|| pvc["spec"]["storageClassName"].as_str())
        .filter(|c| !c.is_empty())
}

/// Whether a quota with hard names `hard` and scope terms `scopes` applies
/// to `obj` at all (upstream's `generic.Matches`): the evaluator tracks one
/// of its names and the object falls under every scope.
pub fn quota_matches<'a>(
    ev: &Evaluator,
    hard: impl IntoIterator<Item = &'a str>,
    scopes: &[ScopeRequirement],
    obj: &Value,
) -> bool {
    hard.into_iter().any(|n| ev.tracks(n)) && ev.matches_scopes(scopes, obj)
}

/// The usage of one quota, recomputed from the objects of its namespace as
/// the quota controller does (`quota.CalculateUsage`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Usage {
    /// The recomputed `status.used` of every hard name whose kind could be
    /// listed (zero when nothing counts toward it).
    pub used: ResourceList,
    /// Hard names whose kind `list` could not list.
    pub unknown: Vec<String>,
    /// Hard names no kind tracks.
    pub untracked: Vec<String>,
}

impl Usage {
    /// The new `status.used`, as the quota controller writes it: the
    /// recomputed values over the previous ones (which stand for the names
    /// that could not be recomputed), limited to the hard names.
    pub fn status_used(&self, previous: &ResourceList, hard: &ResourceList) -> ResourceList {
        let mut used = previous.clone();
        used.extend(self.used.iter().map(|(k, q)| (k.clone(), *q)));
        resources::mask(&used, hard.keys().map(String::as_str))
    }
}

/// Recomputes a quota's usage. `list(group, resource, visit)` calls `visit`
/// with each object of that kind in the quota's namespace and returns
/// `true`, or returns `false` if it cannot list that kind.
pub fn calculate_usage(
    hard: &ResourceList,
    scopes: &[ScopeRequirement],
    mut list: impl FnMut(&str, &str, &mut dyn FnMut(&Value)) -> bool,
) -> Result<Usage, UsageError> {
    let mut usage = Usage::default();
    // Which kinds to list, each with the hard names it tracks.
    let mut kinds: Vec<(String, String, Evaluator, Vec<&str>)> = Vec::new();
    for name in hard.keys() {
        match Evaluator::tracking(name) {
            Some((group, resource, ev)) => {
                match kinds.iter_mut().find(|k| k.0 == group && k.1 == resource) {
                    Some(k) => k.3.push(name),
                    None => kinds.push((group, resource, ev, vec![name])),
                }
            }
            None => usage.untracked.push(name.clone()),
        }
    }
    for (group, resource, ev, names) in kinds {
        // Each tracked name starts at zero, so a quota always reports every
        // name it limits.
        let mut sum: ResourceList = names
            .iter()
            .map(|n| ((*n).to_owned(), Quantity::ZERO))
            .collect();
        let mut failed = None;
        let listed = list(&group, &resource, &mut |obj: &Value| {
            if failed.is_some() || !ev.matches_scopes(scopes, obj) {
                return;
            }
            if let Err(e) = ev.add_usage(obj, &mut sum) {
                failed = Some(e);
            }
        });
        if let Some(e) = failed {
            return Err(e);
        }
        if listed {
            usage.used.extend(sum);
        } else {
            usage.unknown.extend(names.iter().map(|n| (*n).to_owned()));
        }
    }
    Ok(usage)
}

#[cfg(test)]
mod tests;
