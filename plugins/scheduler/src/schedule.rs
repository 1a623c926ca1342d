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
use crate::keys;
use crate::node::NodeInfo;
use crate::nominated::Nominated;
use crate::plugins::{
    MAX_NODE_SCORE, Reason, Usage, inter_pod_affinity, node_affinity, node_name, node_resources,
    node_unschedulable, pod_topology_spread, taint_toleration, weight,
};
use crate::pod::PodInfo;
use crate::preemption;
use crate::snapshot::{Cluster, Lookups, Snapshot, Stats};

/// Below this many nodes, every node is looked at (`minFeasibleNodesToFind`).
const MIN_FEASIBLE_NODES_TO_FIND: usize = 100;
/// The adaptive percentage never goes below this (`minFeasibleNodesPercentageToFind`).
const MIN_FEASIBLE_PERCENTAGE: usize = 5;
/// Node totals are read at least this many at a time.
const MIN_BATCH: usize = 16;
/// The most nodes the default spread constraints are scored on (the best
/// by the other scores): kube-scheduler's `minFeasibleNodesToFind`, so a
/// cluster that small is scored as kube-scheduler scores it.
const DEFAULT_SPREAD_NODES: usize = MIN_FEASIBLE_NODES_TO_FIND;

/// What the scheduler decided for a pod.
#[derive(Debug, PartialEq, Eq)]
pub enum Decision {
    /// Bind it to this node.
    Bind(String),
    /// It fits nowhere: the `FailedScheduling` message. A nomination the
    /// pod has is void.
    Unschedulable(String),
    /// It fits nowhere and may not preempt now (its policy, or victims
    /// still terminating): the message. A nomination stays.
    NotEligible(String),
    /// It fits nowhere, but will on `node` once `victims`, of lower
    /// priority, are gone (`message`: why it fits nowhere now).
    Preempt {
        node: String,
        victims: Vec<preemption::Victim>,
        message: String,
    },
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

/// The part of the nodes a simple decision reads: shards from a point
/// given by the pod, enough to hold the nodes it looks for (and a quarter
/// more, for nodes that do not fit), then the other shards if those did
/// not have enough.
struct Window {
    want: usize,
    start: u64,
}

impl Window {
    /// A window if the pod can do with one: its rules involve no other
    /// pods and no bound pod has rules of its own (`lookups` found
    /// nothing), it pins no node names, and the cluster is big enough for
    /// part of it to do.
    fn plan(
        pod: &PodInfo<'_>,
        lookups: &Lookups,
        pod_hash: u64,
        cluster: &mut impl Cluster,
    ) -> Result<Option<Self>, Error> {
        let simple = lookups.is_empty()
            && pod.spread.is_empty()
            && pod.volumes.is_none()
            && node_affinity::pre_filter(pod) == node_affinity::PreFilter::All;
        if !simple {
            return Ok(None);
        }
        let count = cluster.node_count()?;
        if count < MIN_FEASIBLE_NODES_TO_FIND {
            return Ok(None);
        }
        Ok(Some(Self {
            want: feasible_nodes_to_find(count),
            start: pod_hash % keys::NODE_SHARDS,
        }))
    }

    /// Reads shards until they hold enough nodes; returns them and the
    /// shards left.
    fn first(&self, cluster: &mut impl Cluster) -> Result<(Vec<Vec<u8>>, Vec<u64>), Error> {
        let enough = self.want + self.want / 4;
        let mut nodes = Vec::with_capacity(enough + enough / 8);
        let mut shards = (0..keys::NODE_SHARDS).map(|i| (self.start + i) % keys::NODE_SHARDS);
        for shard in shards.by_ref() {
            nodes.extend(cluster.nodes(&keys::node_shard(shard))?);
            if nodes.len() >= enough {
                break;
            }
        }
        Ok((nodes, shards.collect()))
    }
}

/// Decides where `pod` goes.
pub(crate) fn decide(
    pod: &PodInfo<'_>,
    cluster: &mut impl Cluster,
    stats: &mut Stats,
) -> Result<Decision, Error> {
    let lookups = Lookups::fetch_for(pod, cluster, stats)?;
    let pod_hash = hash::of(&[pod.namespace.as_bytes(), pod.name.as_bytes()]);
    let window = Window::plan(pod, &lookups, pod_hash, cluster)?;
    let (first, mut left) = match &window {
        Some(w) => w.first(cluster)?,
        None => (cluster.nodes(keys::NODES)?, Vec::new()),
    };
    let rest: Vec<Vec<u8>>;
    let mut snap = Snapshot::new(&first, &lookups);
    if snap.nodes.is_empty() && left.is_empty() {
        return Ok(Decision::NoNodes);
    }
    let candidates: Vec<usize> = match node_affinity::pre_filter(pod) {
        node_affinity::PreFilter::All => (0..snap.nodes.len()).collect(),
        node_affinity::PreFilter::Names(names) => (0..snap.nodes.len())
            .filter(|&i| names.iter().any(|n| n.as_bytes() == snap.nodes[i].name))
            .collect(),
        node_affinity::PreFilter::Conflict => {
            return Ok(Decision::Unschedulable(fit_error::pre_filter_rejection(
                snap.nodes.len(),
                node_affinity::REASON_CONFLICT,
            )));
        }
    };
    let spread = pod_topology_spread::FilterState::new(pod, &snap);
    let affinity = inter_pod_affinity::FilterState::new(pod, &snap);
    let nominated = Nominated::fetch(pod, cluster)?;
    let filters = Filters {
        pod,
        nominated: &nominated,
        spread: &spread,
        affinity: &affinity,
    };
    let mut search = match &window {
        Some(w) => Search::new(w.want, 0),
        None => {
            let want = feasible_nodes_to_find(candidates.len());
            let start = if candidates.is_empty() {
                0
            } else {
                (pod_hash % candidates.len() as u64) as usize
            };
            Search::new(want, start)
        }
    };
    search.run(&filters, &snap, &candidates, cluster, stats)?;
    let mut considered = candidates.len();
    if search.feasible.len() < search.want && !left.is_empty() {
        // The window was not enough: read the other shards too.
        let mut more = Vec::new();
        for shard in left.drain(..) {
            more.extend(cluster.nodes(&keys::node_shard(shard))?);
        }
        rest = more;
        let from = snap.nodes.len();
        snap.add_nodes(&rest);
        let more_candidates: Vec<usize> = (from..snap.nodes.len()).collect();
        considered += more_candidates.len();
        search.start = 0;
        search.run(&filters, &snap, &more_candidates, cluster, stats)?;
    }
    stats.nodes = snap.nodes.len();
    stats.feasible = search.feasible.len();
    stats.pods = snap.decoded();
    let all = snap.nodes.len();
    if all == 0 {
        return Ok(Decision::NoNodes);
    }
    match search.feasible.len() {
        0 => {
            let mut reasons = Vec::with_capacity(search.failed.len() + 1);
            for (i, r) in &search.failed {
                r.texts(&snap.nodes[*i], &mut reasons);
            }
            let absent = all - considered;
            reasons.extend(
                std::iter::repeat_n(node_affinity::REASON_NOT_PRE_FILTERED, absent)
                    .map(str::to_owned),
            );
            let message = fit_error::message(all, reasons);
            let others = |node: &NodeInfo<'_>| filters.after_resources(node);
            let failed = preemption::Failed {
                short: &search.short,
                repelled: &search.repelled,
                all,
            };
            match preemption::preempt(pod, &snap, &failed, &others, cluster)? {
                preemption::Outcome::Victims { node, victims } => Ok(Decision::Preempt {
                    node,
                    victims,
                    message,
                }),
                preemption::Outcome::Failed(why) => Ok(Decision::Unschedulable(
                    fit_error::with_post_filter(message, &why),
                )),
                preemption::Outcome::NotEligible(why) => Ok(Decision::NotEligible(
                    fit_error::with_post_filter(message, &why),
                )),
            }
        }
        1 => Ok(Decision::Bind(
            snap.nodes[search.feasible[0].0].name_str().to_owned(),
        )),
        _ => {
            let best = select(pod, &snap, &search.feasible, pod_hash, cluster)?;
            Ok(Decision::Bind(snap.nodes[best].name_str().to_owned()))
        }
    }
}

/// The pre-computed states the filters need.
struct Filters<'f, 'p, 'a> {
    pod: &'f PodInfo<'p>,
    /// What nominated pods claim (for the filters only).
    nominated: &'f Nominated,
    spread: &'f pod_topology_spread::FilterState<'f, 'a>,
    affinity: &'f inter_pod_affinity::FilterState<'a>,
}

impl Filters<'_, '_, '_> {
    /// The filters after `NodeResourcesFit`, in the profile's order.
    fn after_resources(&self, node: &NodeInfo<'_>) -> Option<Reason> {
        let pod = self.pod;
        pod.volumes
            .as_ref()
            .and_then(|v| v.filter(node))
            .or_else(|| self.spread.filter(pod, node))
            .or_else(|| self.affinity.filter(pod, node))
    }
}

/// The search for feasible nodes: the nodes found and the reasons of the
/// others, by node index in the snapshot.
struct Search {
    want: usize,
    start: usize,
    feasible: Vec<(usize, Usage)>,
    failed: Vec<(usize, Reason)>,
    /// The failed nodes that lacked only resources, with their usage:
    /// where preemption may help.
    short: Vec<(usize, Usage)>,
    /// The failed nodes where pod anti-affinity kept the pod out: where
    /// upstream's preemption looks too (see `preemption`).
    repelled: Vec<(usize, Reason)>,
}

impl Search {
    fn new(want: usize, start: usize) -> Self {
        Self {
            want,
            start,
            feasible: Vec::with_capacity(want.min(1024)),
            failed: Vec::new(),
            short: Vec::new(),
            repelled: Vec::new(),
        }
    }

    /// Filters `candidates` from `start` round, until `want` feasible nodes
    /// are found. The cheap filters run first; the totals of the nodes that
    /// pass them are read in batches, then the rest of the filters run.
    fn run(
        &mut self,
        f: &Filters<'_, '_, '_>,
        snap: &Snapshot<'_>,
        candidates: &[usize],
        cluster: &mut impl Cluster,
        stats: &mut Stats,
    ) -> Result<(), Error> {
        let pod = f.pod;
        let mut pending: Vec<usize> = Vec::new();
        let mut next = 0;
        while self.feasible.len() < self.want && (next < candidates.len() || !pending.is_empty()) {
            if next < candidates.len() {
                let i = candidates[(self.start + next) % candidates.len()];
                next += 1;
                stats.filtered += 1;
                match cheap_filters(pod, &snap.nodes[i]) {
                    Some(r) => self.failed.push((i, r)),
                    None => pending.push(i),
                }
                let batch = (self.want - self.feasible.len()).max(MIN_BATCH);
                if pending.len() < batch && next < candidates.len() {
                    continue;
                }
            }
            if pending.is_empty() {
                continue;
            }
            let names: Vec<&[u8]> = pending.iter().map(|&i| snap.nodes[i].name).collect();
            let usage = cluster.usage(&names)?;
            stats.usage_reads += names.len();
            for (&i, u) in pending.iter().zip(usage) {
                if self.feasible.len() >= self.want {
                    break;
                }
                let node = &snap.nodes[i];
                let claimed = f.nominated.on(node.name, u);
                if let Some(r) = node_resources::filter(pod, &node.allocatable, &claimed) {
                    self.failed.push((i, r));
                    self.short.push((i, claimed));
                    continue;
                }
                match f.after_resources(node) {
                    Some(r) => {
                        if matches!(r, Reason::AntiAffinity | Reason::ExistingAntiAffinity) {
                            self.repelled.push((i, r));
                        }
                        self.failed.push((i, r));
                    }
                    None => self.feasible.push((i, u)),
                }
            }
            pending.clear();
        }
        Ok(())
    }
}

/// Scores the feasible nodes and returns the best one's index.
///
/// A pod the default spread constraints apply to is spread over the
/// [`DEFAULT_SPREAD_NODES`] nodes the other scores rank best (all of them
/// in a cluster that small): those nodes' counts of the owner's pods are
/// read (a key each), their spread scores added, and the best of them
/// taken. kube-scheduler adds the spread score of every feasible node; at
/// the hundreds a large cluster gives, reading each count cost more than
/// the rest of the decision.
fn select(
    pod: &PodInfo<'_>,
    snap: &Snapshot<'_>,
    feasible: &[(usize, Usage)],
    pod_hash: u64,
    cluster: &mut impl Cluster,
) -> Result<usize, Error> {
    let mut totals = scores(pod, snap, feasible);
    let mut candidates: Vec<usize> = (0..feasible.len()).collect();
    if let Some(owner) = pod.default_spread_owner() {
        if candidates.len() > DEFAULT_SPREAD_NODES {
            candidates.select_nth_unstable_by_key(DEFAULT_SPREAD_NODES - 1, |&k| {
                std::cmp::Reverse(totals[k])
            });
            candidates.truncate(DEFAULT_SPREAD_NODES);
        }
        let nodes: Vec<usize> = candidates.iter().map(|&k| feasible[k].0).collect();
        let names: Vec<&[u8]> = nodes.iter().map(|&i| snap.nodes[i].name).collect();
        let owned = cluster.owned(owner, &names)?;
        let spread = pod_topology_spread::default_scores(snap, &nodes, &owned);
        for (&k, s) in candidates.iter().zip(&spread) {
            totals[k] += weight::POD_TOPOLOGY_SPREAD * s;
        }
    }
    let top = candidates.iter().map(|&k| totals[k]).max().unwrap_or(0);
    // Among the best, the one the pod's hash and the node's name favour
    // (hashed only for the tied ones).
    Ok(candidates
        .iter()
        .filter(|&&k| totals[k] == top)
        .map(|&k| feasible[k].0)
        .map(|i| (hash::mix(pod_hash ^ hash::of(&[snap.nodes[i].name])), i))
        .max()
        .map_or(feasible[0].0, |(_, i)| i))
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
