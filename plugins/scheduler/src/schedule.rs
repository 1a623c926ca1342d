//! One scheduling decision, as kube-scheduler's `schedulePod`: pre-filter,
//! filter the nodes until enough feasible ones are found, score them,
//! take the best.
//!
//! Like kube-scheduler (`percentageOfNodesToScore`, adaptive), the search
//! stops once `max(100, n × (50 − n/125)%)` (at least 5%) feasible nodes
//! are found, starting at a rotating offset so that every node gets its
//! turn. kube-scheduler keeps that offset between decisions; a plugin keeps
//! no state, so it is derived from the pod's name. Equally good nodes are
//! told apart by a hash of the pod and the node: pure, and spread.
//!
//! Node totals are read in batches as the search goes, after the cheap
//! filters (taints, affinity) have passed a node, so a decision reads the
//! totals of about as many nodes as it looks at, not of every node.

use windlass_sdk::Error;

use crate::fit_error;
use crate::hash;
use crate::node::NodeInfo;
use crate::plugins::{
    MAX_NODE_SCORE, Reason, Usage, inter_pod_affinity, node_affinity, node_name, node_resources,
    node_unschedulable, pod_topology_spread, taint_toleration, weight,
};
use crate::pod::PodInfo;
use crate::snapshot::{Cluster, Lookups, Snapshot, Stats};

/// Below this many nodes, every node is looked at (`minFeasibleNodesToFind`).
const MIN_FEASIBLE_NODES_TO_FIND: usize = 100;
/// The adaptive percentage never goes below this (`minFeasibleNodesPercentageToFind`).
const MIN_FEASIBLE_PERCENTAGE: usize = 5;
/// Node totals are read at least this many at a time.
const MIN_BATCH: usize = 16;

/// What the scheduler decided for a pod.
#[derive(Debug, PartialEq, Eq)]
pub enum Decision {
    /// Bind it to this node.
    Bind(String),
    /// It fits nowhere: the `FailedScheduling` message.
    Unschedulable(String),
    /// There are no nodes at all.
    NoNodes,
}

/// `numFeasibleNodesToFind` with the default (adaptive) percentage.
pub(crate) fn feasible_nodes_to_find(nodes: usize) -> usize {
    if nodes < MIN_FEASIBLE_NODES_TO_FIND {
        return nodes;
    }
    let percentage = 50usize
        .saturating_sub(nodes / 125)
        .max(MIN_FEASIBLE_PERCENTAGE);
    (nodes * percentage / 100).max(MIN_FEASIBLE_NODES_TO_FIND)
}

/// The filters that need no node totals, in the default profile's order.
fn cheap_filters(pod: &PodInfo<'_>, node: &NodeInfo<'_>) -> Option<Reason> {
    node_unschedulable::filter(pod, node)
        .or_else(|| node_name::filter(pod, node))
        .or_else(|| taint_toleration::filter(pod, node))
        .or_else(|| node_affinity::filter(pod, node))
}

/// Decides where `pod` goes.
pub(crate) fn decide(
    pod: &PodInfo<'_>,
    cluster: &mut impl Cluster,
    stats: &mut Stats,
) -> Result<Decision, Error> {
    let node_summaries = cluster.nodes()?;
    let lookups = Lookups::fetch_for(pod, cluster, stats)?;
    let snap = Snapshot::new(&node_summaries, &lookups);
    let decision = decide_in(pod, &snap, cluster, stats);
    stats.pods = snap.decoded();
    decision
}

fn decide_in(
    pod: &PodInfo<'_>,
    snap: &Snapshot<'_>,
    cluster: &mut impl Cluster,
    stats: &mut Stats,
) -> Result<Decision, Error> {
    let all = snap.nodes.len();
    stats.nodes = all;
    if all == 0 {
        return Ok(Decision::NoNodes);
    }
    let candidates: Vec<usize> = match node_affinity::pre_filter(pod) {
        node_affinity::PreFilter::All => (0..all).collect(),
        node_affinity::PreFilter::Names(names) => (0..all)
            .filter(|&i| names.contains(&snap.nodes[i].name))
            .collect(),
        node_affinity::PreFilter::Conflict => {
            return Ok(Decision::Unschedulable(fit_error::pre_filter_message(
                all,
                node_affinity::REASON_CONFLICT,
            )));
        }
    };
    let spread = pod_topology_spread::FilterState::new(pod, snap);
    let affinity = inter_pod_affinity::FilterState::new(pod, snap);
    let pod_hash = hash::of(&[pod.namespace.as_bytes(), pod.name.as_bytes()]);

    let want = feasible_nodes_to_find(candidates.len());
    let start = if candidates.is_empty() {
        0
    } else {
        (pod_hash % candidates.len() as u64) as usize
    };
    let mut feasible: Vec<(usize, Usage)> = Vec::with_capacity(want.min(1024));
    let mut failed: Vec<(usize, Reason)> = Vec::new();
    let mut pending: Vec<usize> = Vec::new();
    let mut next = 0;
    while feasible.len() < want && (next < candidates.len() || !pending.is_empty()) {
        if next < candidates.len() {
            let i = candidates[(start + next) % candidates.len()];
            next += 1;
            stats.filtered += 1;
            match cheap_filters(pod, &snap.nodes[i]) {
                Some(r) => failed.push((i, r)),
                None => pending.push(i),
            }
            let batch = (want - feasible.len()).max(MIN_BATCH);
            if pending.len() < batch && next < candidates.len() {
                continue;
            }
        }
        if pending.is_empty() {
            continue;
        }
        // Read the totals of the nodes that passed so far, then finish filtering them.
        let names: Vec<&str> = pending.iter().map(|&i| snap.nodes[i].name).collect();
        let usage = cluster.usage(&names)?;
        stats.usage_reads += names.len();
        for (&i, u) in pending.iter().zip(usage) {
            if feasible.len() >= want {
                break;
            }
            let node = &snap.nodes[i];
            let reason = node_resources::filter(pod, &node.allocatable, &u)
                .or_else(|| spread.filter(pod, node))
                .or_else(|| affinity.filter(pod, node));
            match reason {
                Some(r) => failed.push((i, r)),
                None => feasible.push((i, u)),
            }
        }
        pending.clear();
    }
    stats.feasible = feasible.len();

    match feasible.len() {
        0 => {
            let mut reasons = Vec::with_capacity(failed.len() + 1);
            for (i, r) in &failed {
                r.texts(&snap.nodes[*i], &mut reasons);
            }
            let absent = all - candidates.len();
            reasons.extend(
                std::iter::repeat_n(node_affinity::REASON_NOT_PRE_FILTERED, absent)
                    .map(str::to_owned),
            );
            Ok(Decision::Unschedulable(fit_error::message(all, reasons)))
        }
        1 => Ok(Decision::Bind(snap.nodes[feasible[0].0].name.to_owned())),
        _ => {
            let best = select(pod, snap, &feasible, pod_hash);
            Ok(Decision::Bind(snap.nodes[best].name.to_owned()))
        }
    }
}

/// Scores the feasible nodes and returns the best one's index.
fn select(
    pod: &PodInfo<'_>,
    snap: &Snapshot<'_>,
    feasible: &[(usize, Usage)],
    pod_hash: u64,
) -> usize {
    let totals = scores(pod, snap, feasible);
    let mut best = 0;
    let mut best_key = (i64::MIN, 0u64);
    for (k, (i, _)) in feasible.iter().enumerate() {
        let tie = hash::mix(pod_hash ^ hash::of(&[snap.nodes[*i].name.as_bytes()]));
        let key = (totals[k], tie);
        if key > best_key {
            best_key = key;
            best = *i;
        }
    }
    best
}

/// Adds a plugin's normalized scores, weighted, to the totals.
fn add(total: &mut [i64], one: &[i64], weight: i64) {
    for (t, s) in total.iter_mut().zip(one) {
        *t += weight * (*s).clamp(0, MAX_NODE_SCORE);
    }
}

/// The weighted sum of every score plugin's normalized score, per feasible node.
pub(crate) fn scores(
    pod: &PodInfo<'_>,
    snap: &Snapshot<'_>,
    feasible: &[(usize, Usage)],
) -> Vec<i64> {
    let n = feasible.len();
    let mut total = vec![0i64; n];
    let mut one = vec![0i64; n];
    let nodes = || feasible.iter().map(|(i, u)| (&snap.nodes[*i], u));

    for (s, (node, _)) in one.iter_mut().zip(nodes()) {
        *s = taint_toleration::score(pod, node);
    }
    taint_toleration::normalize(&mut one);
    add(&mut total, &one, weight::TAINT_TOLERATION);

    if !pod.preferred_node_affinity.is_empty() {
        for (s, (node, _)) in one.iter_mut().zip(nodes()) {
            *s = node_affinity::score(pod, node);
        }
        node_affinity::normalize(&mut one);
        add(&mut total, &one, weight::NODE_AFFINITY);
    }

    for (s, (node, u)) in one.iter_mut().zip(nodes()) {
        *s = node_resources::least_allocated(pod, &node.allocatable, u);
    }
    add(&mut total, &one, weight::NODE_RESOURCES_FIT);

    if node_resources::balanced_applies(pod) {
        for (s, (node, u)) in one.iter_mut().zip(nodes()) {
            *s = node_resources::balanced_allocation(pod, &node.allocatable, u);
        }
        add(&mut total, &one, weight::NODE_RESOURCES_BALANCED_ALLOCATION);
    }

    let indices: Vec<usize> = feasible.iter().map(|(i, _)| *i).collect();
    if let Some(state) = pod_topology_spread::ScoreState::new(pod, snap, &indices) {
        for (k, s) in one.iter_mut().enumerate() {
            *s = state.score(k, indices[k], &snap.nodes[indices[k]]);
        }
        state.normalize(&mut one);
        add(&mut total, &one, weight::POD_TOPOLOGY_SPREAD);
    }

    if let Some(state) = inter_pod_affinity::ScoreState::new(pod, snap) {
        for (s, (node, _)) in one.iter_mut().zip(nodes()) {
            *s = state.score(node);
        }
        inter_pod_affinity::ScoreState::normalize(&mut one);
        add(&mut total, &one, weight::INTER_POD_AFFINITY);
    }
    total
}

#[cfg(test)]
mod tests;
