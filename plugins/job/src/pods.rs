//! A Job's pods: what each one's state counts as, and the new ones made
//! from the template.

use serde_json::{Value, json};
use windlass_sdk::{Error, Object, ObjectRef, Time, template};

use crate::policy::{Failure, Policy, Verdict};
use crate::tracking;

/// The annotation (and label) of an Indexed Job's pod that holds its index.
pub(crate) const INDEX: &str = "batch.kubernetes.io/job-completion-index";
/// The annotation of a pod of a Job with `backoffLimitPerIndex` that holds
/// how many counted failures its index had before it.
pub(crate) const FAILURE_COUNT: &str = "batch.kubernetes.io/job-index-failure-count";
/// The same, for failures the pod failure policy ignored.
pub(crate) const IGNORED_FAILURE_COUNT: &str =
    "batch.kubernetes.io/job-index-ignored-failure-count";

/// An index's failures before a pod: counted, and ignored by the policy.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct IndexFailures {
    pub counted: u32,
    pub ignored: u32,
}

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
    pub uid: String,
    /// It carries the tracking finalizer: the Job has not counted it yet.
    pub tracked: bool,
    /// The patch that takes the finalizer off it (see `tracking.rs`).
    pub release: (ObjectRef, Value),
    pub phase: Phase,
    pub ready: bool,
    /// Container restarts (init containers included).
    pub restarts: u32,
    /// Its completion index (Indexed Jobs).
    pub index: Option<u32>,
    pub created: Option<Time>,
    /// When it ended: its last container's `finishedAt`.
    pub ended_at: Option<Time>,
    /// Its index's failures before it (its annotations; zero when absent
    /// or not a count, as upstream reads them).
    pub index_failures: IndexFailures,
    /// A failed pod's match in the pod failure policy, if it has one.
    pub verdict: Option<Verdict>,
}

impl Pod {
    /// `o` as the controller sees it; a failed pod is judged by `policy`.
    pub(crate) fn of(o: &Object, policy: Option<&Policy>) -> Self {
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
        let namespace = o.namespace().unwrap_or("default");
        let verdict = policy
            .filter(|_| phase == Phase::Failed)
            .and_then(|p| p.judge(namespace, o.name(), &Failure::of(o)));
        let annotated = |key| {
            o.annotation(key)
                .and_then(|v| v.parse::<i32>().ok())
                .and_then(|n| u32::try_from(n).ok())
                .unwrap_or(0)
        };
        Pod {
            name: o.name().to_owned(),
            namespace: namespace.to_owned(),
            uid: o.uid().unwrap_or_default().to_owned(),
            tracked: tracking::is_tracked(o),
            release: tracking::release_patch(o),
            phase,
            ready: ready && phase == Phase::Active,
            restarts,
            index: o
                .annotation(INDEX)
                .or_else(|| o.label(INDEX))
                .and_then(|i| i.parse().ok()),
            created: o.creation_timestamp().and_then(Time::parse),
            ended_at,
            index_failures: IndexFailures {
                counted: annotated(FAILURE_COUNT),
                ignored: annotated(IGNORED_FAILURE_COUNT),
            },
            verdict,
        }
    }

    /// Whether the pod failed and the failure counts (the policy did not
    /// ignore it).
    pub(crate) fn counted_failure(&self) -> bool {
        self.phase == Phase::Failed && Verdict::counts(self.verdict.as_ref())
    }

    /// When it ended, or failing that when it was made: the time its
    /// back-off runs from.
    pub(crate) fn finished(&self) -> Option<Time> {
        self.ended_at.or(self.created)
    }

    /// Its index's failures once it has failed too: what its replacement
    /// carries, as upstream's `getNewIndexFailureCounts`.
    pub(crate) fn failures_after(&self) -> IndexFailures {
        let mut f = self.index_failures;
        if Verdict::counts(self.verdict.as_ref()) {
            f.counted += 1;
        } else {
            f.ignored += 1;
        }
        f
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

/// A pod to create: its name, its index (Indexed Jobs) and, with
/// `backoffLimitPerIndex`, its index's failures before it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct NewPod {
    pub name: String,
    pub index: Option<u32>,
    pub failures: Option<IndexFailures>,
}

/// A new pod of the Job from its template, with the tracking finalizer;
/// for an Indexed Job, with its index as upstream gives it: the annotation
/// and label, the hostname `<job>-<index>`, `JOB_COMPLETION_INDEX` in every
/// container's environment, and with `backoffLimitPerIndex` the failure
/// counts (the ignored one only when not zero).
pub(crate) fn new_pod(job: &Object, new: &NewPod) -> Result<Object, Error> {
    let (name, index) = (new.name.as_str(), new.index);
    let template = job
        .get("spec.template")
        .filter(|t| t.is_object())
        .ok_or_else(|| Error::permanent("spec.template is required"))?;
    let mut pod = template::pod(template, job.namespace().unwrap_or("default"), name);
    // Held until the Job has counted it (`tracking.rs`).
    let finalizers = &mut pod["metadata"]["finalizers"];
    if !finalizers.is_array() {
        *finalizers = json!([]);
    }
    if let Some(list) = finalizers.as_array_mut()
        && !list.iter().any(|f| f == tracking::FINALIZER)
    {
        list.push(json!(tracking::FINALIZER));
    }
    if let Some(i) = index {
        pod["metadata"]["labels"][INDEX] = json!(i.to_string());
        let annotations = &mut pod["metadata"]["annotations"];
        if !annotations.is_object() {
            *annotations = json!({});
        }
        annotations[INDEX] = json!(i.to_string());
        if let Some(f) = new.failures {
            annotations[FAILURE_COUNT] = json!(f.counted.to_string());
            if f.ignored > 0 {
                annotations[IGNORED_FAILURE_COUNT] = json!(f.ignored.to_string());
            }
        }
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
