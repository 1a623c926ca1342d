//! What one ReplicaSet reconcile should do, as a plain function of the
//! ReplicaSet and the pods it controls: how many pods to create, which to
//! delete, and the status to write. The same rules as the `replicaset`
//! plugin (`plugins/replicaset/src/lib.rs`), on k8s-openapi types.

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::apps::v1::{ReplicaSet, ReplicaSetStatus};
use k8s_openapi::api::core::v1::{Pod, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference, Time};

/// Most pods created in one reconcile, as upstream's `burstReplicas`.
pub const BURST: usize = 500;

/// A ReplicaSet that cannot be acted on.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    #[error("ReplicaSet {0} has no uid or name (not read from the API server?)")]
    Unidentified(String),
    #[error("ReplicaSet {0}: spec.template is required")]
    NoTemplate(String),
}

/// The outcome of one reconcile.
#[derive(Debug, Default, PartialEq)]
pub struct Plan {
    /// Pods to create from the template.
    pub create: usize,
    /// Pods to delete (name, uid), the least valuable first.
    pub delete: Vec<(String, String)>,
    /// The status to write, when it differs from the one the object has.
    pub status: Option<ReplicaSetStatus>,
}

/// Decides what to do about `rs`, given the pods it controls.
pub fn plan(rs: &ReplicaSet, owned: &[Arc<Pod>]) -> Plan {
    let desired = rs.spec.replicas.unwrap_or(1).max(0) as usize;
    let template_labels = rs
        .spec
        .template
        .as_ref()
        .and_then(|t| t.metadata.as_ref())
        .and_then(|m| m.labels.clone())
        .unwrap_or_default();

    let mut live: Vec<Rank<'_>> = owned
        .iter()
        .filter(|p| is_live(p))
        .map(|p| Rank::of(p))
        .collect();
    live.sort_by(Rank::keep_first);

    let ready = live.iter().filter(|r| r.ready).count() as i32;
    let status = ReplicaSetStatus {
        replicas: live.len() as i32,
        fully_labeled_replicas: Some(
            live.iter()
                .filter(|r| has_labels(r.pod, &template_labels))
                .count() as i32,
        ),
        ready_replicas: Some(ready),
        available_replicas: Some(ready),
        observed_generation: Some(rs.metadata.generation.unwrap_or(0)),
        ..ReplicaSetStatus::default()
    };

    let keep = desired.min(live.len());
    Plan {
        create: (desired - keep).min(BURST),
        delete: live[keep..]
            .iter()
            .map(|r| {
                let m = &r.pod.metadata;
                (
                    m.name.clone().unwrap_or_default(),
                    m.uid.clone().unwrap_or_default(),
                )
            })
            .collect(),
        status: (!status_matches(rs.status.as_ref(), &status)).then(|| {
            // Status fields this controller does not own (conditions) stay.
            let mut new = rs.status.clone().unwrap_or_default();
            new.replicas = status.replicas;
            new.fully_labeled_replicas = status.fully_labeled_replicas;
            new.ready_replicas = status.ready_replicas;
            new.available_replicas = status.available_replicas;
            new.observed_generation = status.observed_generation;
            new
        }),
    }
}

/// The sizes of client-go's slow-start batches for `n` creates: 1, 2, 4, …
/// (upstream's `slowStartBatch` with an initial batch of 1), the last one
/// what is left.
pub fn slow_start(n: usize) -> Vec<usize> {
    let mut batches = Vec::new();
    let (mut left, mut size) = (n, 1);
    while left > 0 {
        let batch = size.min(left);
        batches.push(batch);
        left -= batch;
        size *= 2;
    }
    batches
}

/// A new pod from `spec.template`, named `<rs-name>-<random>` by the server
/// and controlled by `rs`.
pub fn pod_from_template(rs: &ReplicaSet) -> Result<Pod, PlanError> {
    let (Some(name), Some(uid)) = (&rs.metadata.name, &rs.metadata.uid) else {
        return Err(PlanError::Unidentified(
            rs.metadata.name.clone().unwrap_or_default(),
        ));
    };
    let template: &PodTemplateSpec = rs
        .spec
        .template
        .as_ref()
        .ok_or_else(|| PlanError::NoTemplate(name.clone()))?;
    let tm = template.metadata.clone().unwrap_or_default();
    Ok(Pod {
        metadata: ObjectMeta {
            generate_name: Some(format!("{name}-")),
            namespace: rs.metadata.namespace.clone(),
            labels: tm.labels,
            annotations: tm.annotations,
            finalizers: tm.finalizers,
            owner_references: Some(vec![OwnerReference {
                api_version: "apps/v1".into(),
                kind: "ReplicaSet".into(),
                name: name.clone(),
                uid: uid.clone(),
                controller: Some(true),
                block_owner_deletion: Some(true),
            }]),
            ..ObjectMeta::default()
        },
        spec: template.spec.clone(),
        status: None,
    })
}

/// The uid of the pod's controller owner reference, if it is a ReplicaSet.
pub fn controller_uid(pod: &Pod) -> Option<&str> {
    pod.metadata
        .owner_references
        .as_ref()?
        .iter()
        .find(|o| o.controller == Some(true) && o.kind == "ReplicaSet")
        .map(|o| o.uid.as_str())
}

/// Live pods count toward replicas: not being deleted, not finished.
fn is_live(pod: &Pod) -> bool {
    pod.metadata.deletion_timestamp.is_none()
        && !matches!(
            pod.status.as_ref().and_then(|s| s.phase.as_deref()),
            Some("Succeeded" | "Failed")
        )
}

fn has_labels(pod: &Pod, template: &BTreeMap<String, String>) -> bool {
    let labels = pod.metadata.labels.as_ref();
    template
        .iter()
        .all(|(k, v)| labels.and_then(|l| l.get(k)) == Some(v))
}

/// The absent counts are 0, as the API server omits zero counts.
fn status_matches(current: Option<&ReplicaSetStatus>, want: &ReplicaSetStatus) -> bool {
    let counts = |s: &ReplicaSetStatus| {
        [
            i64::from(s.replicas),
            i64::from(s.fully_labeled_replicas.unwrap_or(0)),
            i64::from(s.ready_replicas.unwrap_or(0)),
            i64::from(s.available_replicas.unwrap_or(0)),
            s.observed_generation.unwrap_or(0),
        ]
    };
    counts(current.unwrap_or(&ReplicaSetStatus::default())) == counts(want)
}

/// What the upstream controller ranks pods by.
struct Rank<'a> {
    pod: &'a Pod,
    scheduled: bool,
    phase: u8,
    ready: bool,
    ready_since: Option<&'a Time>,
    restarts: i64,
}

impl<'a> Rank<'a> {
    fn of(pod: &'a Pod) -> Self {
        let status = pod.status.as_ref();
        let ready_condition = status
            .and_then(|s| s.conditions.as_ref())
            .and_then(|c| c.iter().find(|c| c.type_ == "Ready"));
        let ready = ready_condition.is_some_and(|c| c.status == "True");
        Self {
            pod,
            scheduled: pod
                .spec
                .as_ref()
                .and_then(|s| s.node_name.as_deref())
                .is_some_and(|n| !n.is_empty()),
            phase: match status.and_then(|s| s.phase.as_deref()) {
                Some("Running") => 2,
                Some("Unknown") => 1,
                _ => 0,
            },
            ready,
            ready_since: ready_condition
                .filter(|_| ready)
                .and_then(|c| c.last_transition_time.as_ref()),
            restarts: status
                .and_then(|s| s.container_statuses.as_ref())
                .map_or(0, |cs| cs.iter().map(|c| i64::from(c.restart_count)).sum()),
        }
    }

    /// Best-to-keep first: scheduled, running, ready, ready for longer,
    /// fewer restarts, older; the name breaks ties.
    fn keep_first(a: &Self, b: &Self) -> Ordering {
        b.scheduled
            .cmp(&a.scheduled)
            .then(b.phase.cmp(&a.phase))
            .then(b.ready.cmp(&a.ready))
            .then_with(|| older_first(a.ready_since, b.ready_since))
            .then(a.restarts.cmp(&b.restarts))
            .then_with(|| {
                older_first(
                    a.pod.metadata.creation_timestamp.as_ref(),
                    b.pod.metadata.creation_timestamp.as_ref(),
                )
            })
            .then_with(|| a.pod.metadata.name.cmp(&b.pod.metadata.name))
    }
}

/// Earlier timestamps first; a missing one last.
fn older_first(a: Option<&Time>, b: Option<&Time>) -> Ordering {
    match (a, b) {
        (Some(a), Some(b)) => a.0.cmp(&b.0),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => Ordering::Equal,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn rs(replicas: i32, status: serde_json::Value) -> ReplicaSet {
        serde_json::from_value(json!({
            "apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": {"name": "web", "namespace": "default", "uid": "rs-uid", "generation": 3},
            "spec": {
                "replicas": replicas,
                "selector": {"matchLabels": {"app": "web"}},
                "template": {
                    "metadata": {"labels": {"app": "web", "tier": "front"}, "annotations": {"note": "hi"}},
                    "spec": {"containers": [{"name": "nginx", "image": "nginx:1.27"}]}
                }
            },
            "status": status
        }))
        .unwrap()
    }

    fn pod(name: &str, created: &str, phase: &str, ready: bool) -> Arc<Pod> {
        Arc::new(
            serde_json::from_value(json!({
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": name, "namespace": "default", "uid": format!("uid-{name}"),
                    "creationTimestamp": created, "labels": {"app": "web", "tier": "front"},
                    "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web", "uid": "rs-uid", "controller": true}]},
                "spec": {"nodeName": "node-1", "containers": [{"name": "nginx", "image": "nginx:1.27"}]},
                "status": {"phase": phase, "conditions": [{"type": "Ready", "status": if ready {"True"} else {"False"}, "lastTransitionTime": created}]}
            }))
            .unwrap(),
        )
    }

    #[test]
    fn slow_start_doubles_and_ends_with_what_is_left() {
        assert!(slow_start(0).is_empty());
        assert_eq!(slow_start(1), [1]);
        assert_eq!(slow_start(5), [1, 2, 2]);
        assert_eq!(slow_start(7), [1, 2, 4]);
        assert_eq!(slow_start(500).iter().sum::<usize>(), 500);
        assert_eq!(slow_start(500).len(), 9);
    }

    #[test]
    fn missing_pods_are_created_and_status_counts_what_exists() {
        let p = plan(
            &rs(3, json!({})),
            &[pod("a", "2026-01-01T00:00:00Z", "Running", true)],
        );
        assert_eq!(p.create, 2);
        assert!(p.delete.is_empty());
        let s = p.status.unwrap();
        assert_eq!(
            (s.replicas, s.ready_replicas, s.observed_generation),
            (1, Some(1), Some(3))
        );
    }

    #[test]
    fn extras_go_least_valuable_first() {
        let pods = [
            pod("old-ready", "2026-01-01T00:00:00Z", "Running", true),
            pod("pending", "2026-01-01T00:00:01Z", "Pending", false),
            pod("new-ready", "2026-01-02T00:00:00Z", "Running", true),
        ];
        let p = plan(&rs(1, json!({})), &pods);
        assert_eq!(p.create, 0);
        let names: Vec<&str> = p.delete.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["new-ready", "pending"]);
        assert_eq!(p.delete[1].1, "uid-pending");
    }

    #[test]
    fn nothing_is_written_when_the_status_already_says_it() {
        let pods = [pod("a", "2026-01-01T00:00:00Z", "Running", true)];
        let done = json!({"replicas": 1, "fullyLabeledReplicas": 1, "readyReplicas": 1,
            "availableReplicas": 1, "observedGeneration": 3});
        assert_eq!(plan(&rs(1, done), &pods), Plan::default());
    }

    #[test]
    fn terminating_and_finished_pods_do_not_count() {
        let mut deleting = (*pod("gone", "2026-01-01T00:00:00Z", "Running", true)).clone();
        deleting.metadata.deletion_timestamp = deleting.metadata.creation_timestamp.clone();
        let pods = [
            Arc::new(deleting),
            pod("done", "2026-01-01T00:00:00Z", "Succeeded", false),
        ];
        let p = plan(&rs(2, json!({})), &pods);
        assert_eq!(p.create, 2);
        assert_eq!(p.status.unwrap().replicas, 0);
    }

    #[test]
    fn a_new_pod_carries_the_template_and_a_controller_reference() {
        let pod = pod_from_template(&rs(1, json!({}))).unwrap();
        assert_eq!(pod.metadata.generate_name.as_deref(), Some("web-"));
        assert_eq!(pod.metadata.namespace.as_deref(), Some("default"));
        assert_eq!(pod.metadata.labels.unwrap()["tier"], "front");
        assert_eq!(pod.metadata.annotations.unwrap()["note"], "hi");
        let owner = &pod.metadata.owner_references.unwrap()[0];
        assert_eq!(
            (
                owner.uid.as_str(),
                owner.controller,
                owner.block_owner_deletion
            ),
            ("rs-uid", Some(true), Some(true))
        );
        assert_eq!(
            pod.spec.unwrap().containers[0].image.as_deref(),
            Some("nginx:1.27")
        );
    }
}
