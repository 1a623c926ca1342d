//! A Job's pods: what each one's state counts as, and the new ones made
//! from the template.

use serde_json::{Value, json};
use windlass_sdk::{Error, Object, ObjectRef, Time, template};

/// The annotation (and label) of an Indexed Job's pod that holds its index.
pub(crate) const INDEX: &str = "batch.kubernetes.io/job-completion-index";

/// Where a pod is in its life, as the Job counts it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    /// Pending or Running, not being deleted.
    Active,
    /// Being deleted, not yet ended.
    Terminating,
    Succeeded,
    Failed,
}

/// One pod, as the controller sees it.
#[derive(Debug, Clone)]
pub(crate) struct Pod {
    pub name: String,
    pub namespace: String,
    pub phase: Phase,
    pub ready: bool,
    /// Container restarts (init containers included).
    pub restarts: u32,
    /// Its completion index (Indexed Jobs).
    pub index: Option<u32>,
    pub created: Option<Time>,
    /// When it ended: its last container's `finishedAt`.
    pub ended_at: Option<Time>,
}

impl Pod {
    pub(crate) fn of(o: &Object) -> Self {
        let phase = match o.get_str("status.phase") {
            Some("Succeeded") => Phase::Succeeded,
            Some("Failed") => Phase::Failed,
            _ if o.is_being_deleted() => Phase::Terminating,
            _ => Phase::Active,
        };
        let ready = o.condition("Ready").is_some_and(|c| c["status"] == "True");
        let statuses = ["status.initContainerStatuses", "status.containerStatuses"]
            .into_iter()
            .filter_map(|f| o.get(f).and_then(Value::as_array))
            .flatten();
        let mut restarts = 0u32;
        let mut ended_at: Option<Time> = None;
        for s in statuses {
            restarts = restarts.saturating_add(s["restartCount"].as_u64().unwrap_or(0) as u32);
            if let Some(t) = s["state"]["terminated"]["finishedAt"]
                .as_str()
                .and_then(Time::parse)
            {
                ended_at = Some(ended_at.map_or(t, |e| e.max(t)));
            }
        }
        Pod {
            name: o.name().to_owned(),
            namespace: o.namespace().unwrap_or("default").to_owned(),
            phase,
            ready: ready && phase == Phase::Active,
            restarts,
            index: o
                .annotation(INDEX)
                .or_else(|| o.label(INDEX))
                .and_then(|i| i.parse().ok()),
            created: o.creation_timestamp().and_then(Time::parse),
            ended_at,
        }
    }

    pub(crate) fn object_ref(&self) -> ObjectRef {
        ObjectRef::new("v1", "Pod", &self.namespace, &self.name)
    }
}

/// The `n`-th pod name of the Job with uid `uid`: `<prefix><5 characters>`,
/// as a generated name looks, but derived from the uid and `n`. A reconcile
/// that runs again before its creates are in the cache picks the same
/// names, so it converges the pods it made instead of making more.
pub(crate) fn name(prefix: &str, uid: &str, n: u32) -> String {
    template::generated_name(
        prefix,
        template::name_seed(&[uid.as_bytes(), &n.to_le_bytes()]),
    )
}

/// A new pod of the Job from its template, named `name`; for an Indexed
/// Job, with its index as upstream gives it: the annotation and label, the
/// hostname `<job>-<index>`, and `JOB_COMPLETION_INDEX` in every container's
/// environment.
pub(crate) fn new_pod(job: &Object, name: &str, index: Option<u32>) -> Result<Object, Error> {
    let template = job
        .get("spec.template")
        .filter(|t| t.is_object())
        .ok_or_else(|| Error::permanent("spec.template is required"))?;
    let mut pod = template::pod(template, job.namespace().unwrap_or("default"), name);
    if let Some(i) = index {
        pod["metadata"]["labels"][INDEX] = json!(i.to_string());
        let annotations = &mut pod["metadata"]["annotations"];
        if !annotations.is_object() {
            *annotations = json!({});
        }
        annotations[INDEX] = json!(i.to_string());
        let spec = &mut pod["spec"];
        if spec["hostname"].as_str().is_none_or(str::is_empty) {
            spec["hostname"] = json!(format!("{}-{i}", job.name()));
        }
        for list in ["initContainers", "containers"] {
            if let Some(containers) = spec[list].as_array_mut() {
                for c in containers {
                    if !c["env"].is_array() {
                        c["env"] = json!([]);
                    }
                    if let Some(env) = c["env"].as_array_mut()
                        && !env.iter().any(|e| e["name"] == "JOB_COMPLETION_INDEX")
                    {
                        env.push(json!({
                            "name": "JOB_COMPLETION_INDEX",
                            "valueFrom": {"fieldRef": {
                                "fieldPath": format!("metadata.annotations['{INDEX}']")
                            }}
                        }));
                    }
                }
            }
        }
    }
    Object::from_value(pod)
}
