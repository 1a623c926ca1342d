//! One reconcile of a simulated node: everything its kubelet writes now.
//!
//! In order: the node's missing well-known labels (and `timeAdded` on
//! `NoExecute` taints that need one), its status when due, its Lease when
//! due, then each of its pods that needs something, as a kubelet syncing
//! its pods would. Pods are found through the host's index: their summaries
//! say which need reading now (see `summary.rs`), so a heartbeat reconcile
//! of a busy node reads no pod at all. The outcome asks to be called again
//! when the next thing falls due.

use std::time::Duration;

use serde_json::{Map, Value, json};
use windlass_sdk::conditions;
use windlass_sdk::taints::{self, Eviction, StoredTaint};
use windlass_sdk::{
    DeleteOptions, Error, Event, KindRef, Object, ObjectRef, Outcome, Request, Time, Write, cache,
    log,
};

use crate::lease;
use crate::network::{self, Allocator, Cidr};
use crate::node_status;
use crate::pod::{self, Place, earliest, pod_ref};
use crate::settings::Settings;
use crate::status::Cond;
use crate::summary::Summary;
use crate::view::{Node, Pod};

/// The shortest wait the outcome asks for, so that a due time in the past
/// cannot spin the key.
const MIN_REQUEUE: Duration = Duration::from_millis(10);

pub(crate) fn reconcile(req: &Request) -> Result<Outcome, Error> {
    let Some(object) = &req.object else {
        // Gone: the Lease goes with it (it is owned by the Node), and its
        // pods are the pod garbage collector's.
        return Ok(Outcome::new());
    };
    let node: Node<'_> = object.deserialize()?;
    if node.metadata.deletion_timestamp.is_some() {
        return Ok(Outcome::new());
    }
    let now = req.now;
    let name = &*node.metadata.name;
    let node_ref = ObjectRef::cluster("v1", "Node", name);
    let (cidr, claim) = pod_cidr(&node, name, network::node_number(name))?;
    if let Some(claim) = claim {
        // A kubelet's network is not ready until the node has a pod CIDR:
        // claim one, and report nothing (no status, no Lease, no pod
        // started) until the block is the node's own — two nodes that
        // claimed one block at once would otherwise report one address.
        // Missing well-known labels go in the same write.
        let mut patch = node_patch(&node, false, now).unwrap_or_else(|| json!({}));
        patch["spec"]["podCIDR"] = json!(claim);
        patch["spec"]["podCIDRs"] = json!([claim]);
        return Ok(Outcome::new().merge_patch(node_ref, patch));
    }
    let node_ip = node_status::node_ip(&node, network::node_ip(cidr));
    let taints: Vec<StoredTaint<'_>> = node
        .spec
        .taints
        .iter()
        .filter_map(|raw| serde_json::from_str(raw.get()).ok())
        .collect();

    let mut due: Option<Time> = None;
    let pods = Pods {
        node: name,
        taints: &taints,
        host_ip: &node_ip.to_string(),
        now,
    }
    .sync(cidr, req.attempt, &mut due)?;

    let mut out = Outcome::new();
    if let Some(patch) = node_patch(&node, pods.stamp_taints, now) {
        out = out.merge_patch(node_ref.clone(), patch);
    }
    let report = node_status::report(&node, node_ip, now);
    due = earliest(due, Some(report.due));
    for e in report.events {
        out = out.event(e);
    }
    if let Some(status) = report.status {
        out = out.patch_status(node_ref, json!({ "status": status }));
    }
    let (renewal, renew_due) = lease::renew(&node, now)?;
    due = earliest(due, Some(renew_due));
    if let Some(lease) = renewal {
        out = out.apply(lease);
    }
    for w in pods.writes {
        out = out.write(w);
    }
    for e in pods.events {
        out = out.event(e);
    }
    if let Some(at) = due {
        out = out.requeue_after(now.until(at).max(MIN_REQUEUE));
    }
    Ok(out)
}

/// The node's pod CIDR, and the one to claim in its spec when it has none
/// (or shares its own with a node whose name sorts first), as the node IPAM
/// controller assigns them: every node a block of its own, so pod IPs are
/// unique across the cluster. Nodes are filed in this plugin's index under
/// their CIDR (`index`), so a free one is found by asking for the totals of
/// a few candidates, starting from the node's number.
fn pod_cidr(node: &Node<'_>, name: &str, number: u32) -> Result<(Cidr, Option<String>), Error> {
    let nodes = KindRef::new("v1", "Node");
    if let Some(own) = node.spec.pod_cidr.as_deref().and_then(Cidr::parse) {
        let holders = cache::lookup(&nodes, &cidr_key(own))?;
        let first = holders
            .iter()
            .filter_map(|h| std::str::from_utf8(h).ok())
            .min();
        if first.is_none_or(|f| f == name) {
            return Ok((own, None));
        }
        // Expected when nodes claim blocks at once (their searches start
        // from the numbers their names end with), so not a warning.
        log::info!(
            "node {name} shares pod CIDR {own} with {}; moving it",
            first.unwrap_or("")
        );
    }
    const BATCH: u32 = 16;
    for round in 0..network::CIDRS / BATCH {
        let candidates: Vec<Cidr> = (0..BATCH)
            .map(|i| Cidr::for_node((number + round * BATCH + i) % network::CIDRS))
            .collect();
        let keys: Vec<String> = candidates.iter().map(|c| cidr_key(*c)).collect();
        let key_refs: Vec<&str> = keys.iter().map(String::as_str).collect();
        let totals = cache::totals(&nodes, &key_refs)?;
        if let Some(free) = totals
            .iter()
            .position(|t| t.first().copied().unwrap_or(0) == 0)
        {
            let cidr = candidates[free];
            return Ok((cidr, Some(cidr.to_string())));
        }
    }
    Err(Error::retry("every pod CIDR of 10.0.0.0/8 is taken"))
}

/// The index key of the nodes holding a pod CIDR.
pub(crate) fn cidr_key(cidr: Cidr) -> String {
    format!("cidr:{cidr}")
}

/// The pods of one node, synced.
struct Pods<'n> {
    node: &'n str,
    taints: &'n [StoredTaint<'n>],
    host_ip: &'n str,
    now: Time,
}

#[derive(Default)]
struct PodWrites {
    writes: Vec<Write>,
    events: Vec<Event>,
    /// A pod tolerates a `NoExecute` taint for a while, but the taint has
    /// no `timeAdded` to count from.
    stamp_taints: bool,
}

impl Pods<'_> {
    fn sync(&self, cidr: Cidr, attempt: u32, due: &mut Option<Time>) -> Result<PodWrites, Error> {
        let (mut summaries, mut objects) = self.entries()?;
        let mut ips = Allocator::new(cidr);
        for s in summaries.iter().filter(|s| !s.ended) {
            if let Some(ip) = s.ip {
                ips.hold(ip);
            }
        }
        // After a failed write, start elsewhere, so that one pod the API
        // server refuses does not hold up the others on its node.
        if !summaries.is_empty() {
            let turn = attempt as usize % summaries.len();
            summaries.rotate_left(turn);
            objects.rotate_left(turn);
        }
        let tainted = self.taints.iter().any(|t| t.effect == "NoExecute");
        let mut settings: Option<Settings> = None;
        let mut out = PodWrites::default();
        for (summary, object) in summaries.iter().zip(objects) {
            if !summary.needs_reading(self.now, tainted) {
                *due = earliest(*due, summary.due);
                continue;
            }
            let Some(object) =
                object.map_or_else(|| cache::get(&summary.pod_ref()), |o| Ok(Some(o)))?
            else {
                continue;
            };
            let pod: Pod<'_> = match object.deserialize() {
                Ok(p) => p,
                Err(e) => {
                    log::warn!("pod {}/{} skipped: {e}", summary.namespace, summary.name);
                    continue;
                }
            };
            if pod.spec.node_name.as_deref() != Some(self.node) {
                continue;
            }
            if tainted && pod.metadata.deletion_timestamp.is_none() {
                match taints::no_execute(self.taints, &pod.spec.tolerations, self.now) {
                    Eviction::Now => {
                        self.evict(&pod, &mut out)?;
                        continue;
                    }
                    Eviction::At { at, unstamped } => {
                        // Stamped, the taint's time stays put.
                        out.stamp_taints |= unstamped;
                        *due = earliest(*due, Some(at));
                    }
                    Eviction::Stays => {}
                }
            }
            let settings = match settings {
                Some(s) => s,
                None => *settings.insert(Settings::get()?),
            };
            self.sync_pod(&pod, &mut ips, settings, &mut out, due)?;
        }
        Ok(out)
    }

    /// The summaries of the node's pods; with the pods themselves when the
    /// summaries were filed by another version of this plugin and cannot
    /// be read (then every pod is read).
    fn entries(&self) -> Result<(Vec<Summary>, Vec<Option<Object>>), Error> {
        let kind = KindRef::new("v1", "Pod");
        let entries = cache::lookup(&kind, self.node)?;
        if let Some(summaries) = entries
            .iter()
            .map(|e| Summary::decode(e))
            .collect::<Option<Vec<_>>>()
        {
            let n = summaries.len();
            return Ok((summaries, vec![None; n]));
        }
        let objects = cache::lookup_objects(&kind, self.node)?;
        let summaries = objects
            .iter()
            .map(|o| o.deserialize::<Pod<'_>>().map(|p| Summary::of(&p)))
            .collect::<Result<_, _>>()?;
        Ok((summaries, objects.into_iter().map(Some).collect()))
    }

    /// Syncs one pod (see `pod.rs`) and adds its writes and events.
    fn sync_pod(
        &self,
        pod: &Pod<'_>,
        ips: &mut Allocator,
        settings: Settings,
        out: &mut PodWrites,
        due: &mut Option<Time>,
    ) -> Result<(), Error> {
        let ended = matches!(pod.status.phase.as_deref(), Some("Succeeded" | "Failed"));
        let ip = (pod.status.pod_ip.is_none() && pod.spec.host_network != Some(true) && !ended)
            .then(|| {
                let key = pod.metadata.uid.as_deref().unwrap_or(&pod.metadata.name);
                ips.take(key).to_string()
            });
        let place = Place {
            host_ip: self.host_ip,
            pod_ip: ip.as_deref(),
            record: true,
            start_events: settings.container_start_events,
        };
        let sync = pod::sync(pod, self.now, &place);
        *due = earliest(*due, sync.due);
        if let Some(status) = &sync.status {
            let shared = status
                .conditions
                .iter()
                .any(|c| matches!(c, Cond::Other(_)));
            out.writes
                .push(status_patch(pod, serde_json::to_value(status)?, shared));
        }
        if sync.remove {
            let mut options = DeleteOptions::new().grace_period_seconds(0);
            if let Some(uid) = pod.metadata.uid.as_deref() {
                options = options.uid(uid);
            }
            out.writes.push(Write::Delete {
                target: pod_ref(pod),
                options,
            });
        }
        out.events.extend(sync.events);
        Ok(())
    }

    /// Evicts a pod as the taint eviction controller does: a
    /// `DisruptionTarget` condition, then a delete with the pod's own grace
    /// period, and a `TaintManagerEviction` event.
    fn evict(&self, pod: &Pod<'_>, out: &mut PodWrites) -> Result<(), Error> {
        let mut conditions = (pod.status.conditions.iter())
            .map(|raw| serde_json::from_str(raw.get()))
            .collect::<Result<Vec<Value>, _>>()?;
        if conditions::set(&mut conditions, taints::eviction_condition(), self.now) {
            out.writes
                .push(status_patch(pod, json!({ "conditions": conditions }), true));
        }
        let mut options = DeleteOptions::new();
        if let Some(uid) = pod.metadata.uid.as_deref() {
            options = options.uid(uid);
        }
        let target = pod_ref(pod);
        out.writes.push(Write::Delete {
            target: target.clone(),
            options,
        });
        out.events.push(taints::eviction_event(target));
        Ok(())
    }
}

/// A merge patch of the pod's status. Lists (conditions, container
/// statuses) are replaced whole: when the conditions include another
/// component's, the patch applies only if the pod is still as read (its
/// `resourceVersion`), so that a condition added meanwhile is not lost.
/// Otherwise it is unconditional: everything in it is the kubelet's, and a
/// patch computed from a cache that has not yet seen the kubelet's previous
/// write repeats it harmlessly instead of failing the node's other writes.
fn status_patch(pod: &Pod<'_>, status: Value, shared: bool) -> Write {
    let mut patch = Map::new();
    if shared && let Some(rv) = pod.metadata.resource_version.as_deref() {
        patch.insert("metadata".into(), json!({ "resourceVersion": rv }));
    }
    patch.insert("status".into(), status);
    Write::MergePatch {
        target: pod_ref(pod),
        subresource: Some("status".to_owned()),
        patch: Value::Object(patch),
    }
}

/// The node's labels a kubelet sets and it lacks, and `timeAdded` on its
/// `NoExecute` taints when a pod counts its `tolerationSeconds` from one.
fn node_patch(node: &Node<'_>, stamp_taints: bool, now: Time) -> Option<Value> {
    let labels = node_status::missing_labels(node);
    let mut meta = Map::new();
    if !labels.is_empty() {
        let labels: Map<String, Value> = labels
            .into_iter()
            .map(|(k, v)| (k.to_owned(), Value::String(v)))
            .collect();
        meta.insert("labels".into(), Value::Object(labels));
    }
    let mut patch = Map::new();
    if stamp_taints {
        let stamp = now.to_rfc3339();
        let taints: Vec<Value> = node
            .spec
            .taints
            .iter()
            .filter_map(|raw| serde_json::from_str::<Value>(raw.get()).ok())
            .map(|mut t| {
                if t["effect"] == "NoExecute" && t.get("timeAdded").is_none_or(Value::is_null) {
                    t["timeAdded"] = json!(stamp);
                }
                t
            })
            .collect();
        patch.insert("spec".into(), json!({ "taints": taints }));
        // The list is replaced whole: only if nobody changed it meanwhile.
        if let Some(rv) = node.metadata.resource_version.as_deref() {
            meta.insert("resourceVersion".into(), json!(rv));
        }
    }
    if meta.is_empty() && patch.is_empty() {
        return None;
    }
    patch.insert("metadata".into(), Value::Object(meta));
    Some(Value::Object(patch))
}
