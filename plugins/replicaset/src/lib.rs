//! The ReplicaSet controller as a windlass plugin.
//!
//! Declarative: every reconcile lists the pods that should exist (the kept
//! ones by identity, new ones from the template) with `prune-owned`, and the
//! host deletes the rest. The result depends only on the snapshot, so a
//! burst of scale changes (1 → 5 → 2) ends at the last one.
//!
//! Which pods to keep follows the upstream controller's ranking (keep pods
//! that are scheduled, running, ready, ready for longer, restarted less, and
//! older). Status follows upstream too, except that `availableReplicas`
//! equals `readyReplicas`: a plugin has no clock to measure
//! `minReadySeconds` with.

use std::borrow::Cow;
use std::cmp::Ordering;
use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use windlass_sdk::{
    Controller, Error, Event, Manifest, Object, ObjectRef, Outcome, Request, Watch,
};

/// The ReplicaSet controller.
pub struct ReplicaSetController;

/// Most pods created in one reconcile, as upstream's `burstReplicas`.
const BURST: usize = 500;

impl Controller for ReplicaSetController {
    fn manifest() -> Manifest {
        Manifest::new("replicaset", Watch::kind("apps/v1", "ReplicaSet"))
            .version(env!("CARGO_PKG_VERSION"))
            .owns(Watch::kind("v1", "Pod"))
            .max_concurrency(4)
    }

    fn reconcile(req: Request) -> Result<Outcome, Error> {
        reconcile(req)
    }
}

windlass_sdk::export!(ReplicaSetController);

fn reconcile(req: Request) -> Result<Outcome, Error> {
    let Some(rs) = &req.object else {
        return Ok(Outcome::new());
    };
    // Only the fields needed are read from the JSON text; the parts copied
    // into writes (template, status) stay JSON text.
    let view: RsView<'_> = rs.deserialize()?;
    // Read before anything else, so malformed labels or status fail every
    // reconcile (as when they were fields of the view).
    let template_labels: Labels<'_> = match &view.spec.template {
        Some(RsTemplate {
            metadata:
                RsTemplateMeta {
                    labels: Some(labels),
                    ..
                },
            ..
        }) => serde_json::from_str(labels.get())?,
        _ => Labels::new(),
    };
    let current_status: RsStatus = match view.status {
        Some(status) => serde_json::from_str(status.get())?,
        None => RsStatus::default(),
    };
    // Being deleted: garbage collection removes the pods.
    if view.metadata.deletion_timestamp.is_some() {
        return Ok(Outcome::new());
    }
    let name = &*view.metadata.name;
    let namespace = view.metadata.namespace.as_deref().unwrap_or("default");
    let desired = match &view.spec.replicas {
        None | Some(Value::Null) => 1,
        Some(v) => v
            .as_i64()
            .ok_or_else(|| Error::permanent(format!("spec.replicas is not an integer: {v}")))?
            .max(0) as usize,
    };

    // Only the fields ranking needs are read from each pod's JSON text.
    let mut live: Vec<PodRank<'_>> = Vec::with_capacity(req.owned.len());
    for pod in &req.owned {
        let pod: PodView<'_> = pod.deserialize()?;
        if pod.kind == "Pod" && pod.is_live() {
            live.push(PodRank::of(pod));
        }
    }
    live.sort_by(PodRank::keep_first);

    let status = Status {
        replicas: live.len() as i64,
        fully_labeled: live
            .iter()
            .filter(|p| has_labels(&p.pod.metadata.labels, &template_labels))
            .count() as i64,
        ready: live.iter().filter(|p| p.ready).count() as i64,
        observed_generation: view.metadata.generation.unwrap_or(0),
    };

    let mut out = Outcome::new().prune_owned();
    let keep = desired.min(live.len());
    for p in &live[..keep] {
        let meta = &p.pod.metadata;
        out = out.apply(Object::identity(&ObjectRef {
            api_version: "v1".into(),
            kind: "Pod".into(),
            namespace: meta.namespace.as_deref().map(str::to_owned),
            name: meta.name.clone().into_owned(),
        }));
    }
    let extra = &live[keep..];
    for p in extra {
        out = out.event(Event::normal(
            "SuccessfulDelete",
            format!("Deleted pod: {}", p.pod.metadata.name),
        ));
    }
    let create = (desired - keep).min(BURST);
    if create > 0 {
        let pod = pod_from_template(view.spec.template.as_ref(), name, namespace)?;
        for _ in 1..create {
            out = out.apply(pod.clone());
        }
        out = out.apply(pod).event(Event::normal(
            "SuccessfulCreate",
            if create == 1 {
                format!("Created pod with generateName {name}-")
            } else {
                format!("Created {create} pods with generateName {name}-")
            },
        ));
    }
    if !status.matches(&current_status) {
        out = out.update_status(status.write_for(&view)?);
    }
    Ok(out)
}

type Labels<'a> = BTreeMap<Cow<'a, str>, Cow<'a, str>>;

/// Whether the pod carries every template label.
fn has_labels(pod: &Labels<'_>, template: &Labels<'_>) -> bool {
    template.iter().all(|(k, v)| pod.get(k) == Some(v))
}

/// A new pod from `spec.template`, named `<rs-name>-<random>` by the server.
/// The template's labels, annotations, finalizers and spec are copied as
/// the JSON text they are, and the pod is serialized once.
fn pod_from_template(
    template: Option<&RsTemplate<'_>>,
    name: &str,
    namespace: &str,
) -> Result<Object, Error> {
    #[derive(Serialize)]
    struct NewPod<'a> {
        #[serde(rename = "apiVersion")]
        api_version: &'static str,
        kind: &'static str,
        metadata: NewPodMeta<'a>,
        spec: &'a RawValue,
    }
    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct NewPodMeta<'a> {
        generate_name: String,
        namespace: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        labels: Option<&'a RawValue>,
        #[serde(skip_serializing_if = "Option::is_none")]
        annotations: Option<&'a RawValue>,
        #[serde(skip_serializing_if = "Option::is_none")]
        finalizers: Option<&'a RawValue>,
    }
    let template = template.ok_or_else(|| Error::permanent("spec.template is required"))?;
    let empty: &RawValue = serde_json::from_str("{}")?;
    let meta = &template.metadata;
    Object::from_serialize(&NewPod {
        api_version: "v1",
        kind: "Pod",
        metadata: NewPodMeta {
            generate_name: format!("{name}-"),
            namespace,
            labels: meta.labels,
            annotations: meta.annotations,
            finalizers: meta.finalizers,
        },
        spec: template.spec.unwrap_or(empty),
    })
}

/// For fields that must be told apart from absent when they are `null`:
/// present (even as `null`) deserializes to `Some`.
fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<T>, D::Error> {
    T::deserialize(d).map(Some)
}

/// The parts of a ReplicaSet this controller looks at, borrowed from its JSON.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RsView<'a> {
    #[serde(borrow, default)]
    api_version: Cow<'a, str>,
    #[serde(borrow, default)]
    kind: Cow<'a, str>,
    #[serde(borrow, default)]
    metadata: RsMeta<'a>,
    #[serde(borrow, default)]
    spec: RsSpec<'a>,
    /// Kept as text: read for the counts, copied into a status write.
    #[serde(borrow, default, deserialize_with = "present")]
    status: Option<&'a RawValue>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct RsMeta<'a> {
    #[serde(borrow, default)]
    name: Cow<'a, str>,
    #[serde(borrow, default)]
    namespace: Option<Cow<'a, str>>,
    #[serde(default)]
    generation: Option<i64>,
    #[serde(borrow, default)]
    resource_version: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    deletion_timestamp: Option<Cow<'a, str>>,
}

#[derive(Deserialize, Default)]
struct RsSpec<'a> {
    #[serde(default)]
    replicas: Option<Value>,
    #[serde(borrow, default, deserialize_with = "present")]
    template: Option<RsTemplate<'a>>,
}

/// The pod template, as JSON text: new pods copy it verbatim.
#[derive(Deserialize)]
struct RsTemplate<'a> {
    #[serde(borrow, default)]
    metadata: RsTemplateMeta<'a>,
    #[serde(borrow, default, deserialize_with = "present")]
    spec: Option<&'a RawValue>,
}

#[derive(Deserialize, Default)]
struct RsTemplateMeta<'a> {
    #[serde(borrow, default, deserialize_with = "present")]
    labels: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    annotations: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    finalizers: Option<&'a RawValue>,
}

/// The status counts as the object has them (absent counts as 0, as the
/// API server omits zero counts).
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct RsStatus {
    #[serde(default)]
    replicas: i64,
    #[serde(default)]
    fully_labeled_replicas: i64,
    #[serde(default)]
    ready_replicas: i64,
    #[serde(default)]
    available_replicas: i64,
    #[serde(default)]
    observed_generation: i64,
}

/// The parts of a pod this controller looks at, borrowed from its JSON.
#[derive(Deserialize)]
struct PodView<'a> {
    #[serde(borrow, default)]
    kind: Cow<'a, str>,
    #[serde(borrow, default)]
    metadata: PodMeta<'a>,
    #[serde(borrow, default)]
    spec: PodSpec<'a>,
    #[serde(borrow, default)]
    status: PodStatus<'a>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct PodMeta<'a> {
    #[serde(borrow, default)]
    name: Cow<'a, str>,
    #[serde(borrow, default)]
    namespace: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    creation_timestamp: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    deletion_timestamp: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    labels: Labels<'a>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct PodSpec<'a> {
    #[serde(borrow, default)]
    node_name: Option<Cow<'a, str>>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct PodStatus<'a> {
    #[serde(borrow, default)]
    phase: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    conditions: Vec<PodCondition<'a>>,
    #[serde(default)]
    container_statuses: Vec<ContainerStatus>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PodCondition<'a> {
    #[serde(borrow, rename = "type")]
    type_: Cow<'a, str>,
    #[serde(borrow)]
    status: Cow<'a, str>,
    #[serde(borrow, default)]
    last_transition_time: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ContainerStatus {
    #[serde(default)]
    restart_count: i64,
}

impl PodView<'_> {
    /// Live pods count toward replicas: not being deleted, not finished.
    fn is_live(&self) -> bool {
        self.metadata.deletion_timestamp.is_none()
            && !matches!(self.status.phase.as_deref(), Some("Succeeded" | "Failed"))
    }
}

/// What the upstream controller ranks pods by.
struct PodRank<'a> {
    pod: PodView<'a>,
    scheduled: bool,
    phase: u8,
    ready: bool,
    ready_since: Option<Cow<'a, str>>,
    restarts: i64,
}

impl<'a> PodRank<'a> {
    fn of(mut pod: PodView<'a>) -> Self {
        let ready_condition = pod
            .status
            .conditions
            .iter_mut()
            .find(|c| c.type_ == "Ready");
        let ready = ready_condition.as_ref().is_some_and(|c| c.status == "True");
        let ready_since = ready_condition
            .filter(|_| ready)
            .and_then(|c| c.last_transition_time.take());
        Self {
            scheduled: pod.spec.node_name.as_deref().is_some_and(|n| !n.is_empty()),
            phase: match pod.status.phase.as_deref() {
                Some("Running") => 2,
                Some("Unknown") => 1,
                _ => 0,
            },
            ready,
            ready_since,
            restarts: pod
                .status
                .container_statuses
                .iter()
                .map(|s| s.restart_count)
                .sum(),
            pod,
        }
    }

    /// Orders pods best-to-keep first: scheduled, running, ready, ready for
    /// longer, fewer restarts, older; the name breaks ties so the choice is
    /// deterministic. (RFC 3339 timestamps in one format compare as strings.)
    fn keep_first(a: &Self, b: &Self) -> Ordering {
        b.scheduled
            .cmp(&a.scheduled)
            .then(b.phase.cmp(&a.phase))
            .then(b.ready.cmp(&a.ready))
            .then_with(|| older_first(a.ready_since.as_deref(), b.ready_since.as_deref()))
            .then(a.restarts.cmp(&b.restarts))
            .then_with(|| {
                older_first(
                    a.pod.metadata.creation_timestamp.as_deref(),
                    b.pod.metadata.creation_timestamp.as_deref(),
                )
            })
            .then_with(|| a.pod.metadata.name.cmp(&b.pod.metadata.name))
    }
}

/// Earlier timestamps first; a missing one last.
fn older_first(a: Option<&str>, b: Option<&str>) -> Ordering {
    match (a, b) {
        (Some(a), Some(b)) => a.cmp(b),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => Ordering::Equal,
    }
}

/// The status fields this controller owns.
struct Status {
    replicas: i64,
    fully_labeled: i64,
    ready: i64,
    observed_generation: i64,
}

impl Status {
    const FIELDS: [&'static str; 5] = [
        "replicas",
        "fullyLabeledReplicas",
        "readyReplicas",
        "availableReplicas",
        "observedGeneration",
    ];

    fn values(&self) -> [i64; 5] {
        [
            self.replicas,
            self.fully_labeled,
            self.ready,
            self.ready,
            self.observed_generation,
        ]
    }

    /// Whether the object's status already says this.
    fn matches(&self, current: &RsStatus) -> bool {
        [
            current.replicas,
            current.fully_labeled_replicas,
            current.ready_replicas,
            current.available_replicas,
            current.observed_generation,
        ] == self.values()
    }

    /// A status write: the ReplicaSet's identity and resourceVersion (so a
    /// stale write conflicts) and its status, keeping status fields this
    /// controller does not own (e.g. conditions).
    fn write_for(&self, rs: &RsView<'_>) -> Result<Object, Error> {
        #[derive(Serialize)]
        struct StatusWrite<'a> {
            #[serde(rename = "apiVersion")]
            api_version: &'a str,
            kind: &'a str,
            metadata: StatusWriteMeta<'a>,
            status: Map<String, Value>,
        }
        #[derive(Serialize)]
        #[serde(rename_all = "camelCase")]
        struct StatusWriteMeta<'a> {
            name: &'a str,
            #[serde(skip_serializing_if = "Option::is_none")]
            namespace: Option<&'a str>,
            #[serde(skip_serializing_if = "Option::is_none")]
            resource_version: Option<&'a str>,
        }
        let mut status = match rs
            .status
            .map(|s| serde_json::from_str(s.get()))
            .transpose()?
        {
            Some(Value::Object(s)) => s,
            _ => Map::new(),
        };
        for (field, value) in Self::FIELDS.iter().zip(self.values()) {
            status.insert((*field).to_owned(), value.into());
        }
        let meta = &rs.metadata;
        Object::from_serialize(&StatusWrite {
            api_version: &rs.api_version,
            kind: &rs.kind,
            metadata: StatusWriteMeta {
                name: &meta.name,
                namespace: meta.namespace.as_deref(),
                resource_version: meta.resource_version.as_deref(),
            },
            status,
        })
    }
}

#[cfg(test)]
mod tests;
