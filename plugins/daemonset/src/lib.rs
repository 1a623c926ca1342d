//! The DaemonSet controller as a windlass plugin: one pod of a DaemonSet on
//! every node it belongs on, as kube-controller-manager's daemonset
//! controller keeps them, so `kubectl get ds`, `kubectl rollout status
//! ds`, `rollout history` and `rollout undo` behave as on a cluster.
//!
//! Each reconcile looks at the DaemonSet, its pods and every Node:
//! - a node belongs to the DaemonSet when the template's `nodeSelector`
//!   and required node affinity match it and its tolerations — with the
//!   ones every daemon pod gets (not-ready, unreachable, pressure,
//!   unschedulable) — tolerate its `NoSchedule` and `NoExecute` taints
//!   (`nodes.rs`); a pod already there stays while only a `NoSchedule`
//!   taint is untolerated;
//! - a node that belongs and has no pod gets one, pinned to it with
//!   `matchFields metadata.name` in its required node affinity, so the
//!   scheduler binds it there (upstream has the default scheduler place
//!   daemon pods the same way); pods on nodes that no longer belong, on
//!   nodes that are gone, that failed, or a second one on a node, are
//!   deleted;
//! - `RollingUpdate` replaces pods of an old template node by node, at
//!   most `maxUnavailable` unavailable at once, or with `maxSurge` the new
//!   pod first, the old one deleted once the new is available;
//!   `OnDelete` only replaces pods that are deleted;
//! - each template is kept as a ControllerRevision
//!   (`windlass_sdk::revision`: `revisionHistoryLimit` old ones kept) for
//!   `kubectl rollout history` and `undo`;
//! - when it would make pods, the orphans its selector selects (left by a
//!   DaemonSet deleted with `--cascade=orphan`) are adopted first.
//!
//! Status counts (`desiredNumberScheduled`, `currentNumberScheduled`,
//! `numberMisscheduled`, `numberReady`, `numberAvailable` with
//! `minReadySeconds`, `numberUnavailable`, `updatedNumberScheduled`,
//! `observedGeneration`) are written when they change; the events are
//! upstream's `SuccessfulCreate` and `SuccessfulDelete`.
//!
//! Differences from upstream: pod names are derived from the DaemonSet's
//! uid, the node and the template instead of drawn at random (a reconcile
//! ahead of the cache converges the pod it made instead of making a
//! second); the template hash is FNV-32a over the template's JSON; a
//! failed pod is replaced without upstream's per-node back-off.
//!
//! Files: `nodes.rs` (which nodes, default tolerations, pinning), `pods.rs`
//! (what a pod is, new pods).

mod nodes;
mod pods;

use std::collections::{BTreeMap, HashSet};
use std::time::Duration;

use serde_json::{Map, Value, json};
use windlass_sdk::{
    Controller, Error, Event, KindRef, Manifest, Object, ObjectRef, Outcome, Request, Time, Watch,
    cache, revision,
};

use nodes::Node;
use pods::{DaemonPod, HASH_LABEL};

/// The DaemonSet controller.
pub struct DaemonSetController;

impl Controller for DaemonSetController {
    fn manifest() -> Manifest {
        Manifest::new("daemonset", Watch::kind("apps/v1", "DaemonSet"))
            .version(env!("CARGO_PKG_VERSION"))
            .owns(Watch::kind("v1", "Pod"))
            .owns(Watch::kind("apps/v1", "ControllerRevision"))
            .reads(Watch::kind("v1", "Node"))
            .max_concurrency(4)
    }

    fn reconcile(req: Request) -> Result<Outcome, Error> {
        reconcile(&req)
    }

    /// A node's change (added, relabelled, tainted, gone) wakes every
    /// DaemonSet.
    fn map(changed: &Object) -> Vec<ObjectRef> {
        if !changed.is("v1", "Node") {
            return Vec::new();
        }
        cache::list(&KindRef::new("apps/v1", "DaemonSet"), None, None)
            .map(|all| all.iter().map(Object::object_ref).collect())
            .unwrap_or_default()
    }
}

windlass_sdk::export!(DaemonSetController);

/// How a DaemonSet replaces pods of an old template.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Strategy {
    RollingUpdate {
        max_unavailable: u32,
        max_surge: u32,
    },
    OnDelete,
}

impl Strategy {
    fn of(ds: &Object, desired: u32) -> Result<Self, Error> {
        if ds.get_str("spec.updateStrategy.type") == Some("OnDelete") {
            return Ok(Strategy::OnDelete);
        }
        let value = |field: &str, default: &str| -> Result<u32, Error> {
            let v = ds
                .get(&format!("spec.updateStrategy.rollingUpdate.{field}"))
                .filter(|v| !v.is_null())
                .cloned()
                .unwrap_or_else(|| json!(default));
            scaled(&v, desired).ok_or_else(|| {
                Error::permanent(format!(
                    "spec.updateStrategy.rollingUpdate.{field}: {v} is not a count or a percentage"
                ))
            })
        };
        let max_surge = value("maxSurge", "0")?;
        let mut max_unavailable = value("maxUnavailable", "1")?;
        // Upstream: with no surge, at least one may be unavailable.
        if max_surge == 0 && max_unavailable == 0 {
            max_unavailable = 1;
        }
        Ok(Strategy::RollingUpdate {
            max_unavailable,
            max_surge,
        })
    }
}

/// An int-or-percent of `total`: a percentage of unavailability rounds up,
/// as upstream's `GetScaledValueFromIntOrPercent(…, true)`.
fn scaled(v: &Value, total: u32) -> Option<u32> {
    if let Some(n) = v.as_u64() {
        return u32::try_from(n).ok();
    }
    let pct: u64 = v.as_str()?.strip_suffix('%')?.parse().ok()?;
    Some((u64::from(total) * pct).div_ceil(100) as u32)
}

fn reconcile(req: &Request) -> Result<Outcome, Error> {
    // Gone, or being deleted: its pods are garbage-collected.
    let Some(ds) = req.live_object() else {
        return Ok(Outcome::new());
    };
    let template = ds
        .get("spec.template")
        .filter(|t| t.is_object())
        .cloned()
        .ok_or_else(|| Error::permanent("spec.template is required"))?;
    let hash = revision::template_hash(&template);
    let min_ready =
        Duration::from_secs(ds.get_i64("spec.minReadySeconds").unwrap_or(0).max(0) as u64);
    let mut spec = template["spec"].clone();
    nodes::add_daemon_tolerations(&mut spec);

    let nodes: Vec<Node> = cache::list(&KindRef::new("v1", "Node"), None, None)?
        .iter()
        .filter(|n| !n.is_being_deleted())
        .map(Node::of)
        .collect();
    let all: Vec<DaemonPod> = req
        .owned_of("v1", "Pod")
        .map(|p| DaemonPod::of(p, &hash, min_ready, req.now))
        .collect();
    let mut plan = Plan::default();
    let mut by_node: BTreeMap<&str, Vec<&DaemonPod>> = BTreeMap::new();
    for p in &all {
        match p
            .node
            .as_deref()
            .filter(|n| nodes.iter().any(|node| node.name == *n))
        {
            Some(n) => by_node.entry(n).or_default().push(p),
            // On a node that is gone (or pinned nowhere): nothing runs it.
            None if !p.deleting => plan.deletes.push(p),
            None => {}
        }
    }
    let mut desired = 0u32;
    let verdicts: Vec<(&Node, nodes::Verdict)> = nodes
        .iter()
        .map(|n| (n, n.verdict(&spec)))
        .inspect(|(_, v)| desired += u32::from(v.should_run))
        .collect();
    let strategy = Strategy::of(ds, desired)?;
    let surge = matches!(strategy, Strategy::RollingUpdate { max_surge, .. } if max_surge > 0);
    for (node, verdict) in &verdicts {
        let on = by_node
            .get(node.name.as_str())
            .map_or(&[][..], Vec::as_slice);
        plan.node(node, *verdict, on, surge);
    }
    if let Strategy::RollingUpdate {
        max_unavailable,
        max_surge,
    } = strategy
    {
        plan.roll(max_unavailable, max_surge);
    }
    for p in &all {
        if let Some(at) = p.available_at {
            plan.requeue_at(req.now, at);
        }
    }
    if !plan.creates.is_empty()
        && let Some(out) = adopt(ds)?
    {
        return Ok(out);
    }
    plan.outcome(ds, &template, &spec, &hash, &all, desired, req)
}

/// Upstream's `ClaimPods`, looked for when the DaemonSet would make pods:
/// the live orphans of its namespace that its selector selects (left by a
/// DaemonSet deleted with `--cascade=orphan`) are adopted instead, on their
/// own; the reconcile their change brings then counts them on their nodes,
/// and a rolling update replaces any of an old template.
fn adopt(ds: &Object) -> Result<Option<Outcome>, Error> {
    let Some(selector) = ds.get("spec.selector").filter(|s| s.is_object()) else {
        return Ok(None);
    };
    let namespace = ds.namespace().unwrap_or("default");
    let mut out = Outcome::new();
    for pod in cache::orphans(&KindRef::new("v1", "Pod"), namespace, selector)? {
        if !matches!(pod.get_str("status.phase"), Some("Succeeded" | "Failed")) {
            out = out.apply(Object::identity(&pod.object_ref()));
        }
    }
    Ok((!out.is_empty()).then_some(out))
}

/// One node's pods after the node's own rules: the one kept (if any).
#[derive(Debug, Default)]
struct Plan<'a> {
    /// Nodes to give a pod of the current template.
    creates: Vec<String>,
    deletes: Vec<&'a DaemonPod>,
    /// Per node that should run a pod: the pods kept there.
    kept: BTreeMap<String, Vec<&'a DaemonPod>>,
    misscheduled: u32,
    requeue: Option<Duration>,
}

impl<'a> Plan<'a> {
    fn requeue_at(&mut self, now: Time, at: Time) {
        let after = now.until(at).max(Duration::from_millis(10));
        self.requeue = Some(self.requeue.map_or(after, |r| r.min(after)));
    }

    /// Upstream's `podsShouldBeOnNode`.
    fn node(&mut self, node: &Node, verdict: nodes::Verdict, on: &[&'a DaemonPod], surge: bool) {
        let live: Vec<&'a DaemonPod> = on.iter().copied().filter(|p| !p.deleting).collect();
        if !verdict.should_run && !live.is_empty() {
            self.misscheduled += 1;
        }
        if verdict.should_run && on.is_empty() {
            self.creates.push(node.name.clone());
            self.kept.insert(node.name.clone(), Vec::new());
            return;
        }
        if !verdict.should_continue {
            self.deletes.extend(live);
            return;
        }
        let (failed, mut running): (Vec<&'a DaemonPod>, Vec<&'a DaemonPod>) =
            live.into_iter().partition(|p| p.failed);
        self.deletes.extend(failed);
        // More than one: keep the oldest of the current template (and,
        // while a surge is under way, the oldest of the old one).
        running.sort_by(|a, b| a.created.cmp(&b.created).then(a.name.cmp(&b.name)));
        let mut keep: Vec<&'a DaemonPod> = Vec::new();
        if let Some(new) = running.iter().find(|p| p.updated) {
            keep.push(new);
        }
        if let Some(old) = running.iter().find(|p| !p.updated)
            && (keep.is_empty() || surge && !keep[0].available)
        {
            keep.push(old);
        }
        for p in running {
            if !keep.iter().any(|k| k.name == p.name) {
                self.deletes.push(p);
            }
        }
        if verdict.should_run {
            self.kept.insert(node.name.clone(), keep);
        }
    }

    /// Upstream's `rollingUpdate`: old pods replaced node by node.
    fn roll(&mut self, max_unavailable: u32, max_surge: u32) {
        let unavailable = |pods: &[&DaemonPod]| !pods.iter().any(|p| p.available);
        if max_surge == 0 {
            let mut budget = max_unavailable
                .saturating_sub(self.kept.values().filter(|pods| unavailable(pods)).count() as u32);
            for pods in self.kept.values() {
                let Some(old) = pods.iter().find(|p| !p.updated) else {
                    continue;
                };
                if !old.available {
                    // Already unavailable: replacing it costs nothing.
                    self.deletes.push(old);
                } else if budget > 0 {
                    budget -= 1;
                    self.deletes.push(old);
                }
            }
            return;
        }
        let mut surging = self.kept.values().filter(|pods| pods.len() > 1).count() as u32;
        for (node, pods) in &self.kept {
            let old = pods.iter().find(|p| !p.updated);
            let new = pods.iter().find(|p| p.updated);
            match (old, new) {
                (Some(old), Some(new)) if new.available => self.deletes.push(old),
                (Some(old), None) if !old.available => self.deletes.push(old),
                (Some(_), None) if surging < max_surge => {
                    surging += 1;
                    self.creates.push(node.clone());
                }
                _ => {}
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn outcome(
        self,
        ds: &Object,
        template: &Value,
        spec: &Value,
        hash: &str,
        all: &[DaemonPod],
        desired: u32,
        req: &Request,
    ) -> Result<Outcome, Error> {
        let mut out = Outcome::new();
        let mut deleted: HashSet<&str> = HashSet::new();
        for p in &self.deletes {
            if deleted.insert(&p.name) {
                out = out.delete(p.object_ref()).event(Event::normal(
                    "SuccessfulDelete",
                    format!("Deleted pod: {}", p.name),
                ));
            }
        }
        let uid = ds.uid().unwrap_or_default();
        let taken: HashSet<&str> = all.iter().map(|p| p.name.as_str()).collect();
        for node in &self.creates {
            let name = (0u32..)
                .map(|n| pods::name(ds.name(), uid, node, hash, n))
                .find(|n| !taken.contains(n.as_str()))
                .unwrap_or_default();
            out = out
                .apply(pods::new_pod(ds, template, spec, &name, node, hash)?)
                .event(Event::normal(
                    "SuccessfulCreate",
                    format!("Created pod: {name}"),
                ));
        }
        // Pods are labelled with their template's hash, as upstream's.
        let live: HashSet<&str> = req
            .owned_of("v1", "Pod")
            .filter_map(|p| p.label(HASH_LABEL))
            .collect();
        let limit = ds.get_i64("spec.revisionHistoryLimit").unwrap_or(10).max(0) as usize;
        let history = revision::history(
            ds,
            template,
            hash,
            req.owned_of("apps/v1", "ControllerRevision"),
            |r| r.label(HASH_LABEL).is_some_and(|h| live.contains(h)),
            limit,
        )?;
        for w in history.writes {
            out = out.write(w);
        }

        // The counts, per node that should run a pod.
        let kept = |f: &dyn Fn(&DaemonPod) -> bool| {
            self.kept
                .values()
                .filter(|pods| {
                    pods.iter()
                        .any(|p| !deleted.contains(p.name.as_str()) && f(p))
                })
                .count() as u32
        };
        let current = kept(&|_| true);
        let ready = kept(&|p| p.ready);
        let available = kept(&|p| p.available);
        let updated = kept(&|p| p.updated);
        let mut status: Map<String, Value> = ds
            .get("status")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        for (key, n, always) in [
            ("currentNumberScheduled", current, true),
            ("numberMisscheduled", self.misscheduled, true),
            ("desiredNumberScheduled", desired, true),
            ("numberReady", ready, true),
            ("updatedNumberScheduled", updated, false),
            ("numberAvailable", available, false),
            (
                "numberUnavailable",
                desired.saturating_sub(available),
                false,
            ),
        ] {
            if n > 0 || always {
                status.insert(key.into(), json!(n));
            } else {
                status.remove(key);
            }
        }
        status.insert(
            "observedGeneration".into(),
            json!(ds.generation().unwrap_or(0)),
        );
        let status = Value::Object(status);
        if ds.get("status") != Some(&status) {
            let mut updated = ds.clone();
            updated.value_mut()["status"] = status;
            out = out.update_status(updated);
        }
        if let Some(after) = self.requeue {
            out = out.requeue_after(after);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests;
