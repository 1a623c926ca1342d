//! `InterPodAffinity`: required pod affinity and anti-affinity filter
//! nodes by the pods in their topology domain (the nodes sharing the
//! value of the term's `topologyKey`), in both directions: the incoming
//! pod's terms, and the anti-affinity of pods already bound (a pod may not
//! join a domain whose pods keep it away). Preferred terms of both, and
//! the required affinity terms of bound pods (weight 1), score nodes.
//!
//! Counts are kept per topology pair, as kube-scheduler's pre-filter keeps
//! them, but the pods counted come from index lookups (pods carrying a
//! label the term selects; bound pods with affinity), never from a scan of
//! every pod.

use super::{MAX_NODE_SCORE, Reason};
use crate::bound::Terms;
use crate::hash::FnvMap;
use crate::node::NodeInfo;
use crate::pod::PodInfo;
use crate::snapshot::Snapshot;
use crate::term::Term;

pub(crate) const REASON_AFFINITY: &str = "node(s) didn't match pod affinity rules";
pub(crate) const REASON_ANTI_AFFINITY: &str = "node(s) didn't match pod anti-affinity rules";
pub(crate) const REASON_EXISTING_ANTI_AFFINITY: &str =
    "node(s) didn't satisfy existing pods anti-affinity rules";

/// Counts per topology pair: a label key and value of a node, as slices of
/// the node's summary.
type Pairs<'a> = FnvMap<(&'a [u8], &'a [u8]), i64>;

/// Adds `by` to the pair of `node` for `key`, if the node has that label
/// (and says whether it had).
fn add<'a>(pairs: &mut Pairs<'a>, node: &NodeInfo<'a>, key: &str, by: i64) -> bool {
    let Some(pair) = node.labels.entry(key) else {
        return false;
    };
    *pairs.entry(pair).or_insert(0) += by;
    true
}

/// Whether the pod matches every term (`podMatchesAllAffinityTerms`).
fn matches_all(terms: &[Term<'_>], namespace: &str, labels: &impl crate::selector::Labels) -> bool {
    !terms.is_empty() && terms.iter().all(|t| t.matches(namespace, labels))
}

/// What the pre-filter computes for the filter.
pub(crate) struct FilterState<'a> {
    /// Pairs where bound pods' anti-affinity selects the incoming pod.
    existing_anti: Pairs<'a>,
    /// The topology keys among them.
    existing_keys: Vec<&'a [u8]>,
    /// Pairs with pods matching all of the incoming pod's affinity terms.
    affinity: Pairs<'a>,
    /// Pairs with pods matching one of its anti-affinity terms.
    anti: Pairs<'a>,
}

impl<'a> FilterState<'a> {
    pub(crate) fn new(pod: &PodInfo<'_>, snap: &Snapshot<'a>) -> Self {
        let with = snap.with_affinity();
        let mut existing_anti =
            Pairs::with_capacity_and_hasher(with.pods.len(), Default::default());
        // Which topology keys of each distinct set of terms select the pod.
        let selecting: Vec<Vec<&str>> = with
            .terms
            .iter()
            .map(|terms| {
                terms
                    .anti_affinity
                    .iter()
                    .filter(|t| t.matches(pod.namespace, pod.labels))
                    .map(|t| &*t.topology_key)
                    .collect()
            })
            .collect();
        for (p, i) in &with.pods {
            if selecting[*i].is_empty() {
                continue;
            }
            if let Some((_, node)) = snap.node_of(p) {
                for key in &selecting[*i] {
                    add(&mut existing_anti, node, key, 1);
                }
            }
        }
        let mut affinity = Pairs::default();
        if let Some(first) = pod.affinity.first() {
            for p in snap.pods_for_term(first) {
                if !matches_all(&pod.affinity, p.namespace, &p) {
                    continue;
                }
                if let Some((_, node)) = snap.node_of(&p) {
                    for t in &pod.affinity {
                        add(&mut affinity, node, &t.topology_key, 1);
                    }
                }
            }
        }
        let mut anti = Pairs::default();
        for t in &pod.anti_affinity {
            anti.reserve(snap.nodes.len().min(4096));
            for p in snap.pods_for_term(t) {
                if t.matches(p.namespace, &p)
                    && let Some((_, node)) = snap.node_of(&p)
                {
                    add(&mut anti, node, &t.topology_key, 1);
                }
            }
        }
        let mut existing_keys: Vec<&'a [u8]> = Vec::new();
        for (k, _) in existing_anti.keys() {
            if !existing_keys.contains(k) {
                existing_keys.push(k);
            }
        }
        Self {
            existing_anti,
            existing_keys,
            affinity,
            anti,
        }
    }

    pub(crate) fn filter(&self, pod: &PodInfo<'_>, node: &NodeInfo<'_>) -> Option<Reason> {
        if !self.satisfies_affinity(pod, node) {
            return Some(Reason::Affinity);
        }
        for t in &pod.anti_affinity {
            if let Some(pair) = node.labels.entry(&t.topology_key)
                && self.anti.get(&pair).is_some_and(|n| *n > 0)
            {
                return Some(Reason::AntiAffinity);
            }
        }
        // (`satisfyExistingPodsAntiAffinity` looks up every label of the
        // node; only the keys counted can be found.)
        for key in &self.existing_keys {
            let Ok(key) = std::str::from_utf8(key) else {
                continue;
            };
            if let Some(pair) = node.labels.entry(key)
                && self.existing_anti.get(&pair).is_some_and(|n| *n > 0)
            {
                return Some(Reason::ExistingAntiAffinity);
            }
        }
        None
    }

    fn satisfies_affinity(&self, pod: &PodInfo<'_>, node: &NodeInfo<'_>) -> bool {
        let mut pods_exist = true;
        for t in &pod.affinity {
            // Every topology key must be on the node.
            let Some(pair) = node.labels.entry(&t.topology_key) else {
                return false;
            };
            if self.affinity.get(&pair).is_none_or(|n| *n <= 0) {
                pods_exist = false;
            }
        }
        // The first of a group of pods with affinity to each other may go
        // anywhere, as long as no pod matches yet and it matches itself.
        pods_exist
            || (self.affinity.is_empty() && matches_all(&pod.affinity, pod.namespace, pod.labels))
    }
}

/// What scoring needs: the score of every topology pair.
pub(crate) struct ScoreState<'a> {
    pairs: Pairs<'a>,
}

impl<'a> ScoreState<'a> {
    /// `None` when no term applies (the score is skipped).
    pub(crate) fn new(pod: &PodInfo<'_>, snap: &Snapshot<'a>) -> Option<Self> {
        let mut pairs = Pairs::default();
        let mut any = false;
        for (terms, sign) in [
            (&pod.preferred_affinity, 1),
            (&pod.preferred_anti_affinity, -1),
        ] {
            for t in terms {
                for p in snap.pods_for_term(t) {
                    if t.matches(p.namespace, &p)
                        && let Some((_, node)) = snap.node_of(&p)
                    {
                        any |= add(
                            &mut pairs,
                            node,
                            &t.topology_key,
                            sign * i64::from(t.weight),
                        );
                    }
                }
            }
        }
        let with = snap.with_affinity();
        // What each distinct set of terms says about the pod.
        let said: Vec<Vec<(&str, i64)>> = with.terms.iter().map(|t| about(pod, t)).collect();
        for (p, i) in &with.pods {
            if said[*i].is_empty() {
                continue;
            }
            if let Some((_, node)) = snap.node_of(p) {
                for (key, weight) in &said[*i] {
                    any |= add(&mut pairs, node, key, *weight);
                }
            }
        }
        any.then_some(Self { pairs })
    }

    /// The sum of the scores of the node's pairs.
    pub(crate) fn score(&self, node: &NodeInfo<'_>) -> i64 {
        node.labels
            .iter_bytes()
            .filter_map(|pair| self.pairs.get(&pair))
            .sum()
    }

    /// Scales scores between the lowest and the highest (both at least 0
    /// apart from 0) to 0..=100.
    pub(crate) fn normalize(scores: &mut [i64]) {
        let max = scores.iter().copied().max().unwrap_or(0).max(0);
        let min = scores.iter().copied().min().unwrap_or(0).min(0);
        let diff = max - min;
        for s in scores {
            *s = if diff > 0 {
                (MAX_NODE_SCORE as f64 * ((*s - min) as f64 / diff as f64)) as i64
            } else {
                0
            };
        }
    }
}

/// What a bound pod's own terms say about the incoming pod, as topology
/// keys and weights: its required affinity (weight 1) and preferred
/// affinity draw the pod to the bound pod's domain, its preferred
/// anti-affinity pushes it away.
fn about<'t>(pod: &PodInfo<'_>, terms: &'t Terms<'_>) -> Vec<(&'t str, i64)> {
    let mut out = Vec::new();
    for (list, sign) in [
        (&terms.affinity, 1),
        (&terms.preferred_affinity, 1),
        (&terms.preferred_anti_affinity, -1),
    ] {
        for t in list {
            if t.matches(pod.namespace, pod.labels) {
                out.push((&*t.topology_key, sign * i64::from(t.weight)));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests;
