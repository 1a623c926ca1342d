//! `PodTopologySpread`: `DoNotSchedule` constraints filter nodes where the
//! pod would make its domain exceed `maxSkew` over the least loaded domain;
//! `ScheduleAnyway` constraints score nodes in less loaded domains higher.
//!
//! Counting follows kube-scheduler: only pods in the pod's namespace that
//! the constraint's selector matches, not being deleted, on nodes that have
//! every topology key of the constraints and pass the inclusion policies
//! (`nodeAffinityPolicy: Honor` by default: the pod's node selector and
//! required affinity; `nodeTaintsPolicy: Ignore` by default). Every such
//! node makes its domain count (with zero pods) for the minimum and for
//! `minDomains`. An empty selector counts no pods, as upstream.
//!
//! A pod with no constraints of its own that a ReplicaSet,
//! ReplicationController or StatefulSet controls is scored with
//! kube-scheduler's system defaults (see [`default_scores`]).

use super::{MAX_NODE_SCORE, Reason, node_affinity, taint_toleration};
use crate::hash::FnvMap;
use crate::node::NodeInfo;
use crate::pod::{PodInfo, SpreadConstraint};
use crate::snapshot::Snapshot;

pub(crate) const REASON: &str = "node(s) didn't match pod topology spread constraints";
pub(crate) const REASON_MISSING_LABEL: &str =
    "node(s) didn't match pod topology spread constraints (missing required label)";
/// Constraints on this key are counted per node.
const HOSTNAME: &str = "kubernetes.io/hostname";

/// Whether the node counts for constraint `c` of a set of constraints.
fn counts_for(
    pod: &PodInfo<'_>,
    node: &NodeInfo<'_>,
    c: &SpreadConstraint<'_>,
    all: &[&SpreadConstraint<'_>],
) -> bool {
    all.iter()
        .all(|o| node.labels.get(&o.topology_key).is_some())
        && (!c.honor_node_affinity || node_affinity::required_matches(pod, node))
        && (!c.honor_taints
            || !node
                .taints()
                .any(|t| taint_toleration::untolerated_do_not_schedule(pod, &t)))
}

/// The pods matching `c` per domain value (nodes' label values as bytes).
type Counts<'a> = FnvMap<&'a [u8], i64>;

/// Adds the bound pods matching `c` to the domains already in `counts`
/// (`per_node`: count by node index instead, for hostname scoring).
fn count_matching<'a>(
    pod: &PodInfo<'_>,
    c: &SpreadConstraint<'_>,
    snap: &Snapshot<'a>,
    eligible: &[bool],
    counts: &mut Counts<'a>,
    per_node: Option<&mut FnvMap<usize, i64>>,
) {
    if c.selector.is_everything() {
        return;
    }
    let mut per_node = per_node;
    for p in snap.pods_for_selector(&c.selector, pod.namespace) {
        if p.terminating || p.namespace != pod.namespace || !c.selector.matches(&p) {
            continue;
        }
        let Some((i, node)) = snap.node_of(&p) else {
            continue;
        };
        if let Some(per_node) = per_node.as_deref_mut() {
            *per_node.entry(i).or_insert(0) += 1;
            continue;
        }
        if !eligible[i] {
            continue;
        }
        if let Some(v) = node.labels.get(&c.topology_key)
            && let Some(n) = counts.get_mut(v)
        {
            *n += 1;
        }
    }
}

/// One `DoNotSchedule` constraint, counted.
struct Hard<'p, 'a> {
    c: &'p SpreadConstraint<'p>,
    counts: Counts<'a>,
    /// The global minimum, 0 while fewer than `minDomains` domains exist.
    min: i64,
}

/// What the pre-filter computes for the filter.
pub(crate) struct FilterState<'p, 'a> {
    hard: Vec<Hard<'p, 'a>>,
}

impl<'p, 'a> FilterState<'p, 'a> {
    pub(crate) fn new(pod: &'p PodInfo<'p>, snap: &Snapshot<'a>) -> Self {
        let all: Vec<&SpreadConstraint<'_>> = pod.spread.iter().filter(|c| c.hard).collect();
        let mut hard = Vec::with_capacity(all.len());
        for c in &all {
            let eligible: Vec<bool> = snap
                .nodes
                .iter()
                .map(|n| counts_for(pod, n, c, &all))
                .collect();
            let mut counts = Counts::default();
            for (n, _) in snap.nodes.iter().zip(&eligible).filter(|(_, e)| **e) {
                if let Some(v) = n.labels.get(&c.topology_key) {
                    counts.entry(v).or_insert(0);
                }
            }
            count_matching(pod, c, snap, &eligible, &mut counts, None);
            let min = if (counts.len() as i64) < i64::from(c.min_domains) {
                0
            } else {
                counts
                    .values()
                    .copied()
                    .min()
                    .unwrap_or(i64::from(i32::MAX))
            };
            hard.push(Hard { c, counts, min });
        }
        Self { hard }
    }

    /// `matching pods in the node's domain + the pod itself - minimum <= maxSkew`.
    pub(crate) fn filter(&self, pod: &PodInfo<'_>, node: &NodeInfo<'_>) -> Option<Reason> {
        for h in &self.hard {
            let Some(v) = node.labels.get(&h.c.topology_key) else {
                return Some(Reason::SpreadMissingLabel);
            };
            let own = i64::from(h.c.selector.matches(pod.labels));
            let matching = h.counts.get(v).copied().unwrap_or(0);
            if matching + own - h.min > i64::from(h.c.max_skew) {
                return Some(Reason::Spread);
            }
        }
        None
    }
}

/// The system default constraints kube-scheduler gives a pod with none of
/// its own (`PodTopologySpreadArgs.defaultingType: System`): spread over
/// nodes with skew 3 and over zones with skew 5, both `ScheduleAnyway`.
const DEFAULT_CONSTRAINTS: [(&str, i32); 2] = [(HOSTNAME, 3), ("topology.kubernetes.io/zone", 5)];

/// The normalized scores of the default constraints for `nodes` (indices
/// into the snapshot), given how many of the owner's live pods each holds
/// (`owned`, in the same order).
///
/// Counted as kube-scheduler counts them, but over `nodes` only: exact per
/// node; per zone, the sum over the given nodes of the zone (kube-scheduler
/// counts every node of the zone). As upstream for defaults, no node is
/// ignored: a node lacking a key only adds nothing for that constraint, and
/// counts as a domain of its own (the empty value) in the zone constraint's
/// weight. Each node's labels are read once (a decision scores up to a
/// hundred nodes this way).
pub(crate) fn default_scores(snap: &Snapshot<'_>, nodes: &[usize], owned: &[i64]) -> Vec<i64> {
    let [(hostname_key, hostname_skew), (zone_key, zone_skew)] = DEFAULT_CONSTRAINTS;
    let mut zones: Vec<(&[u8], i64)> = Vec::new();
    let mut at_node = Vec::with_capacity(nodes.len());
    for (&i, &n) in nodes.iter().zip(owned) {
        let (hostname, zone) = snap.nodes[i].labels.get_both(hostname_key, zone_key);
        let value = zone.unwrap_or_default();
        let at = match zones.iter().position(|(v, _)| *v == value) {
            Some(at) => at,
            None => {
                zones.push((value, 0));
                zones.len() - 1
            }
        };
        zones[at].1 += n;
        at_node.push((hostname.is_some(), zone.map(|_| at)));
    }
    let (node_weight, zone_weight) = (
        normalizing_weight(nodes.len()),
        normalizing_weight(zones.len()),
    );
    let mut scores: Vec<i64> = owned
        .iter()
        .zip(at_node)
        .map(|(&n, (has_hostname, zone))| {
            let mut score = 0.0;
            if has_hostname {
                score += score_for_count(n, node_weight, hostname_skew);
            }
            if let Some(at) = zone {
                score += score_for_count(zones[at].1, zone_weight, zone_skew);
            }
            score.round() as i64
        })
        .collect();
    normalize_fewer_higher(&mut scores, |_| false);
    scores
}

/// `topologyNormalizingWeight`: a constraint over more domains weighs more.
fn normalizing_weight(domains: usize) -> f64 {
    ((domains + 2) as f64).ln()
}

/// `scoreForCount`: a node's raw score for one constraint, from the
/// matching pods in its domain.
fn score_for_count(count: i64, weight: f64, max_skew: i32) -> f64 {
    count as f64 * weight + f64::from(max_skew - 1)
}

/// One `ScheduleAnyway` constraint, counted for scoring.
struct Soft<'p, 'a> {
    c: &'p SpreadConstraint<'p>,
    /// Per domain, or (hostname) per node index.
    counts: Counts<'a>,
    per_node: FnvMap<usize, i64>,
    weight: f64,
}

/// What scoring needs, over the feasible nodes.
pub(crate) struct ScoreState<'p, 'a> {
    soft: Vec<Soft<'p, 'a>>,
    /// Feasible nodes lacking a topology key: scored 0.
    ignored: Vec<bool>,
}

impl<'p, 'a> ScoreState<'p, 'a> {
    /// `None` when the pod has no `ScheduleAnyway` constraints (the score is skipped).
    pub(crate) fn new(
        pod: &'p PodInfo<'p>,
        snap: &Snapshot<'a>,
        feasible: &[usize],
    ) -> Option<Self> {
        let all: Vec<&SpreadConstraint<'_>> = pod.spread.iter().filter(|c| !c.hard).collect();
        if all.is_empty() {
            return None;
        }
        let ignored: Vec<bool> = feasible
            .iter()
            .map(|&i| {
                let n = &snap.nodes[i];
                !all.iter().all(|c| n.labels.get(&c.topology_key).is_some())
            })
            .collect();
        let scored = ignored.iter().filter(|x| !**x).count();
        let mut soft = Vec::with_capacity(all.len());
        for c in &all {
            let hostname = c.topology_key == HOSTNAME;
            let mut counts = Counts::default();
            let mut per_node = FnvMap::default();
            let size = if hostname {
                count_matching(pod, c, snap, &[], &mut counts, Some(&mut per_node));
                scored
            } else {
                for (&i, _) in feasible.iter().zip(&ignored).filter(|(_, ig)| !**ig) {
                    if let Some(v) = snap.nodes[i].labels.get(&c.topology_key) {
                        counts.entry(v).or_insert(0);
                    }
                }
                let eligible: Vec<bool> = snap
                    .nodes
                    .iter()
                    .map(|n| counts_for(pod, n, c, &all))
                    .collect();
                let size = counts.len();
                count_matching(pod, c, snap, &eligible, &mut counts, None);
                size
            };
            soft.push(Soft {
                c,
                counts,
                per_node,
                weight: normalizing_weight(size),
            });
        }
        Some(Self { soft, ignored })
    }

    /// The raw score of feasible node `k` (index `node` in the snapshot):
    /// matching pods in its domains, weighted by the number of domains.
    pub(crate) fn score(&self, k: usize, node_index: usize, node: &NodeInfo<'_>) -> i64 {
        if self.ignored[k] {
            return 0;
        }
        let mut score = 0.0;
        for s in &self.soft {
            let Some(v) = node.labels.get(&s.c.topology_key) else {
                continue;
            };
            let count = if s.c.topology_key == HOSTNAME {
                s.per_node.get(&node_index).copied().unwrap_or(0)
            } else {
                s.counts.get(v).copied().unwrap_or(0)
            };
            score += score_for_count(count, s.weight, s.c.max_skew);
        }
        score.round() as i64
    }

    /// Fewer matching pods score higher; ignored nodes score 0.
    pub(crate) fn normalize(&self, scores: &mut [i64]) {
        normalize_fewer_higher(scores, |k| self.ignored[k]);
    }
}

/// kube-scheduler's `NormalizeScore` for spreading: fewer matching pods
/// score higher; ignored nodes score 0.
fn normalize_fewer_higher(scores: &mut [i64], ignored: impl Fn(usize) -> bool) {
    let mut min = i64::MAX;
    let mut max = 0;
    for (k, s) in scores.iter().enumerate() {
        if !ignored(k) {
            min = min.min(*s);
            max = max.max(*s);
        }
    }
    for (k, s) in scores.iter_mut().enumerate() {
        *s = if ignored(k) {
            0
        } else if max == 0 {
            MAX_NODE_SCORE
        } else {
            MAX_NODE_SCORE * (max + min - *s) / max
        };
    }
}

#[cfg(test)]
mod tests;
