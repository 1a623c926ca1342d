//! The ReplicaSet controller as a windlass plugin.
//!
//! Declarative: every reconcile lists the pods that should exist (the kept
//! ones by identity, new ones from the template) with `prune-owned`, and the
//! host deletes the rest. The result depends only on the snapshot, so a
//! burst of scale changes (1 → 5 → 2) ends at the last one.
//!
//! As upstream's controller: pods that are being deleted or have ended
//! (`Succeeded`, `Failed`) do not count, and missing ones are created;
//! which pods to keep follows upstream's ranking (scheduled, running,
//! ready, ready for longer, restarted less, older); status counts
//! `readyReplicas`, `availableReplicas` (ready for `minReadySeconds`,
//! measured with `Request::now`, with a requeue for when the next pod
//! becomes available) and `terminatingReplicas`. Pods its selector no
//! longer selects are released, and orphans it selects adopted, before
//! anything else (`claim.rs`).
//!
//! A create the API server refuses (a quota, say) shows in the next
//! attempt's `last_failure`. The writes come in a fixed order — kept pods,
//! then creates, then the status — so the failed write's position says
//! whether it was a create. The first such failure gets a reconcile of its
//! own that only records it (a `FailedCreate` event and the `ReplicaFailure`
//! condition); later attempts try the creates again, with the host's
//! growing backoff between them, and the status written after creates that
//! succeed drops the condition. While creates are refused, a change in the
//! counts (a pod becoming ready) is also written on its own, before the
//! creates are tried again: upstream updates the status after every sync,
//! failed or not. Ended pods are not kept: the host's pruning
//! deletes them (upstream leaves them to the pod garbage collector, which
//! windlass does not have).

mod claim;
mod pods;
mod rank;
mod status;
mod view;

use std::time::Duration;

use serde::Serialize;
use serde_json::value::RawValue;
use windlass_sdk::{
    Controller, Error, Event, IndexEntry, Manifest, Object, ObjectRef, Outcome, Request, Watch,
    cache, template,
};

use pods::Reader;
use rank::PodRank;
use status::Status;
use view::{Labels, PodView, RsStatus, RsTemplate, RsTemplateMeta, RsView};

/// The ReplicaSet controller.
pub struct ReplicaSetController;

/// Most pods created in one reconcile, as upstream's `burstReplicas`.
const BURST: usize = 500;

impl Controller for ReplicaSetController {
    fn manifest() -> Manifest {
        Manifest::new("replicaset", Watch::kind("apps/v1", "ReplicaSet"))
            .version(env!("CARGO_PKG_VERSION"))
            .owns(Watch::kind("v1", "Pod").indexed())
            .max_concurrency(128)
    }

    fn reconcile(req: Request) -> Result<Outcome, Error> {
        reconcile(req)
    }

    /// Files each pod under its ReplicaSet's uid (and the uid and its
    /// label set) with counts and the little the controller ranks by, so a
    /// reconcile reads two sums, or one short summary per pod, instead of
    /// every pod's JSON (see `pods.rs`).
    fn index(object: &Object) -> Option<IndexEntry> {
        index(object)
    }
}

windlass_sdk::export!(ReplicaSetController);

fn index(object: &Object) -> Option<IndexEntry> {
    let pod: PodView<'_> = object.deserialize().ok()?;
    if pod.is_orphan() {
        // A live orphan, for the ReplicaSets of its namespace to adopt.
        if pod.has_ended() || pod.is_terminating() {
            return None;
        }
        return Some(claim::orphan_entry(pod.metadata.namespace.as_deref()?));
    }
    let owner = pod.replicaset_uid()?.to_owned();
    let rank = PodRank::of(pod);
    let summary = serde_json::to_vec(&rank).ok()?;
    Some(pods::entry(&owner, &rank, summary))
}

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
    let current_status: RsStatus<'_> = match view.status {
        Some(status) => serde_json::from_str(status.get())?,
        None => RsStatus::default(),
    };
    // Being deleted: garbage collection removes the pods.
    if view.metadata.deletion_timestamp.is_some() {
        return Ok(Outcome::new());
    }
    let name = &*view.metadata.name;
    let namespace = view.metadata.namespace.as_deref().unwrap_or("default");
    let desired = view::count("spec.replicas", view.spec.replicas.as_ref(), 1)
        .map_err(Error::permanent)? as usize;
    let min_ready = view::count(
        "spec.minReadySeconds",
        view.spec.min_ready_seconds.as_ref(),
        0,
    )
    .map_err(Error::permanent)?;
    let min_ready = Duration::from_secs(min_ready as u64);

    let mut reader = Reader::new();
    let pods = reader.read(
        &view.metadata.uid,
        namespace,
        desired,
        &template_labels,
        min_ready,
        req.now,
    )?;
    let live = &pods.live;
    // Pods to adopt or release go first, on their own (see `claim.rs`).
    // Pods were read one by one whenever one may have left the selector:
    // when they all carry exactly the template's labels, it selects them.
    if (pods.orphans > 0 || !live.is_empty())
        && let Some(selector) = claim::selector(view.spec.selector)?
    {
        if let Some(out) = claim::release(&view.metadata.uid, namespace, live, &selector)? {
            return Ok(out);
        }
        if pods.orphans > 0
            && let Some(out) = claim::adopt(namespace, &selector)?
        {
            return Ok(out);
        }
    }

    let keep = desired.min(pods.live_count);
    let create = (desired - keep).min(BURST);
    // A prune deletes what the outcome does not name, so it names every
    // pod kept; when nothing is to go (the common case: scaling up, or
    // steady) there is no prune and no list of the kept, which for a
    // ReplicaSet of thousands would be thousands of writes per reconcile
    // (and past the host's limit on one outcome). (Something to go means
    // every pod was read and ranked: see `pods.rs`.)
    let prunes = pods.ended > 0 || keep < pods.live_count;
    let listed = if prunes { keep } else { 0 };
    let failed_create = refused_create(&req, listed, create);
    let status = Status {
        replicas: pods.live_count as i64,
        fully_labeled: pods.fully_labeled as i64,
        ready: pods.ready as i64,
        available: pods.available as i64,
        terminating: pods.terminating as i64,
        observed_generation: view.metadata.generation.unwrap_or(0),
        failed_create,
    };

    if let Some(message) = failed_create
        && !status.matches(&current_status)
    {
        // Record the refusal, and the counts, on their own: a status write
        // after the creates never happens while they keep failing, and
        // upstream updates the status whether or not its creates failed
        // (a held-back ReplicaSet still shows its ready pods).
        let mut out =
            Outcome::new().update_status(status.write_for(&view, &current_status, req.now)?);
        if !status.failure_matches(&current_status) {
            out = out.event(failed_create_event(message));
        }
        return Ok(out);
    }

    let mut out = Outcome::new();
    if prunes {
        out = out.prune_owned();
        for p in &live[..keep] {
            out = out.apply(Object::identity(&ObjectRef {
                api_version: "v1".into(),
                kind: "Pod".into(),
                namespace: p.namespace.as_deref().map(str::to_owned),
                name: p.name.clone().into_owned(),
            }));
        }
    }
    for p in live.iter().skip(keep) {
        out = out.event(Event::normal(
            "SuccessfulDelete",
            format!("Deleted pod: {}", p.name),
        ));
    }
    if create > 0 {
        let names = new_pod_names(&view.metadata.uid, name, namespace, &req, create)?;
        // Serialized once; the others differ only in the name, which is as
        // long and needs no escaping (a DNS subdomain).
        let first = pod_from_template(view.spec.template.as_ref(), name, &names[0], namespace)?;
        let text = first.to_json();
        let named = |pod: &str| format!("\"metadata\":{{\"name\":\"{pod}\"");
        out = out.apply(first);
        for pod in &names[1..] {
            let other = text.replacen(&named(&names[0]), &named(pod), 1);
            out = out.apply(Object::from_json_lazy(other)?);
        }
        match failed_create {
            Some(message) => out = out.event(failed_create_event(message)),
            // One event a pod, as upstream's `CreatePods` records them.
            None => {
                for pod in names {
                    out = out.event(Event::normal(
                        "SuccessfulCreate",
                        format!("Created pod: {pod}"),
                    ));
                }
            }
        }
    }
    if !status.matches(&current_status) {
        out = out.update_status(status.write_for(&view, &current_status, req.now)?);
    }
    if let Some(after) = pods.next_available {
        out = out.requeue_after(after);
    }
    Ok(out)
}

/// The server's message when the previous attempt failed at one of the
/// creates this reconcile makes again. Writes go kept pods first (when
/// listed for a prune, `0..first`), then creates, so the failed write's
/// position says which it was. Conflicts and not-founds are left out: they only mean the cache was
/// behind, and the host retries them at once.
fn refused_create(req: &Request, first: usize, create: usize) -> Option<&str> {
    let failure = req.last_failure.as_ref()?;
    let at = failure.write as usize;
    (!matches!(failure.code, 404 | 409) && (first..first + create).contains(&at))
        .then_some(failure.message.as_str())
}

/// Upstream's event for a refused create.
fn failed_create_event(message: &str) -> Event {
    Event::warning("FailedCreate", format!("Error creating: {message}"))
}

/// Names for `count` new pods of the ReplicaSet `rs` (uid `uid`), as the
/// API server would generate them from `generateName: <rs>-`, but chosen
/// here so that each pod's `SuccessfulCreate` event can name it. They are
/// drawn from the uid, the time, the attempt and a counter; one the cache
/// already holds is drawn again (a name taken but not yet cached makes the
/// create fail with a conflict, and the next attempt draws anew).
fn new_pod_names(
    uid: &str,
    rs: &str,
    namespace: &str,
    req: &Request,
    count: usize,
) -> Result<Vec<String>, Error> {
    let prefix = format!("{rs}-");
    let (now, attempt) = (req.now.millis().to_le_bytes(), req.attempt.to_le_bytes());
    let mut names: Vec<String> = Vec::with_capacity(count);
    let mut draw: u64 = 0;
    while names.len() < count {
        let seed = template::name_seed(&[uid.as_bytes(), &now, &attempt, &draw.to_le_bytes()]);
        draw += 1;
        let candidate = template::generated_name(&prefix, seed);
        let taken = names.contains(&candidate)
            || cache::get(&ObjectRef::new("v1", "Pod", namespace, &candidate))?.is_some();
        if !taken {
            names.push(candidate);
        }
    }
    Ok(names)
}

/// A new pod from `spec.template` named `pod`, with `generateName:
/// <rs>-` as upstream's pods carry it. The template's labels, annotations,
/// finalizers and spec are copied as the JSON text they are.
fn pod_from_template(
    template: Option<&RsTemplate<'_>>,
    rs: &str,
    pod: &str,
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
        name: &'a str,
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
            name: pod,
            generate_name: format!("{rs}-"),
            namespace,
            labels: meta.labels,
            annotations: meta.annotations,
            finalizers: meta.finalizers,
        },
        spec: template.spec.unwrap_or(empty),
    })
}

#[cfg(test)]
mod tests;
