//! The filters and scores, one file per kube-scheduler framework plugin of
//! the default profile, each with kube's reason strings and table tests.
//!
//! Filters run in the default profile's order (`NodeUnschedulable`,
//! `NodeName`, `TaintToleration`, `NodeAffinity`, `NodeResourcesFit`,
//! `VolumeBinding` (in `crate::volumes`), `PodTopologySpread`,
//! `InterPodAffinity`); a node's first failing filter
//! gives its reasons. Scores are normalized per plugin and weighted as the
//! default profile weighs them.

pub(crate) mod inter_pod_affinity;
pub(crate) mod node_affinity;
pub(crate) mod node_name;
pub(crate) mod node_resources;
pub(crate) mod node_unschedulable;
pub(crate) mod pod_topology_spread;
pub(crate) mod taint_toleration;

use crate::node::NodeInfo;
use crate::requests::Requests;
use crate::volumes;

/// The highest score a plugin gives a node (`framework.MaxNodeScore`).
pub(crate) const MAX_NODE_SCORE: i64 = 100;

/// Score weights of the default profile.
pub(crate) mod weight {
    pub(crate) const TAINT_TOLERATION: i64 = 3;
    pub(crate) const NODE_AFFINITY: i64 = 2;
    pub(crate) const NODE_RESOURCES_FIT: i64 = 1;
    pub(crate) const POD_TOPOLOGY_SPREAD: i64 = 2;
    pub(crate) const INTER_POD_AFFINITY: i64 = 2;
    pub(crate) const NODE_RESOURCES_BALANCED_ALLOCATION: i64 = 1;
}

/// What the pods already bound to a node request there (the sums the host
/// keeps per node key).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Usage {
    pub(crate) requested: Requests,
    pub(crate) pods: i64,
    /// Requests as scoring counts them (`NonZeroRequested`).
    pub(crate) scoring_cpu: i64,
    pub(crate) scoring_memory: i64,
}

impl Usage {
    /// The amounts a bound pod is filed with, in the order `from_totals` reads.
    pub(crate) fn amounts(requests: Requests, scoring: Requests) -> [i64; 6] {
        [
            requests.cpu,
            requests.memory,
            requests.ephemeral,
            1,
            scoring.cpu,
            scoring.memory,
        ]
    }

    /// Reads the sums of `amounts` (missing positions are 0).
    pub(crate) fn from_totals(t: &[i64]) -> Self {
        let at = |i: usize| t.get(i).copied().unwrap_or(0);
        Self {
            requested: Requests {
                cpu: at(0),
                memory: at(1),
                ephemeral: at(2),
            },
            pods: at(3),
            scoring_cpu: at(4),
            scoring_memory: at(5),
        }
    }
}

/// Why a filter rejected a node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Reason {
    /// `NodeUnschedulable`.
    Unschedulable,
    /// `NodeName`.
    NodeName,
    /// `TaintToleration`: the node's taint at this position.
    Taint(u16),
    /// `NodeAffinity`.
    NodeAffinity,
    /// `NodeResourcesFit`: the resources that are short.
    Fit(node_resources::Shortage),
    /// `PodTopologySpread`: the node lacks a topology key.
    SpreadMissingLabel,
    /// `PodTopologySpread`: placing the pod here would exceed `maxSkew`.
    Spread,
    /// `InterPodAffinity`: the pod's affinity rules.
    Affinity,
    /// `InterPodAffinity`: the pod's anti-affinity rules.
    AntiAffinity,
    /// `InterPodAffinity`: other pods' anti-affinity rules.
    ExistingAntiAffinity,
    /// `VolumeBinding`: a bound claim's volume does not admit the node.
    VolumeNodeConflict,
    /// `VolumeBinding`: an unbound claim can get no volume on the node.
    VolumeBindConflict,
    /// `VolumeBinding`: a claim is bound to a volume that does not exist.
    VolumeMissing,
}

impl Reason {
    /// The reason strings kube-scheduler reports for this, in its words.
    pub(crate) fn texts(self, node: &NodeInfo<'_>, out: &mut Vec<String>) {
        let fixed = |s: &str, out: &mut Vec<String>| out.push(s.to_owned());
        match self {
            Reason::Unschedulable => fixed(node_unschedulable::REASON, out),
            Reason::NodeName => fixed(node_name::REASON, out),
            Reason::Taint(i) => {
                if let Some(t) = node.taints().nth(usize::from(i)) {
                    out.push(taint_toleration::reason(&t));
                }
            }
            Reason::NodeAffinity => fixed(node_affinity::REASON, out),
            Reason::Fit(short) => short.texts(out),
            Reason::SpreadMissingLabel => fixed(pod_topology_spread::REASON_MISSING_LABEL, out),
            Reason::Spread => fixed(pod_topology_spread::REASON, out),
            Reason::Affinity => fixed(inter_pod_affinity::REASON_AFFINITY, out),
            Reason::AntiAffinity => fixed(inter_pod_affinity::REASON_ANTI_AFFINITY, out),
            Reason::ExistingAntiAffinity => {
                fixed(inter_pod_affinity::REASON_EXISTING_ANTI_AFFINITY, out)
            }
            Reason::VolumeNodeConflict => fixed(volumes::REASON_NODE_CONFLICT, out),
            Reason::VolumeBindConflict => fixed(volumes::REASON_BIND_CONFLICT, out),
            Reason::VolumeMissing => fixed(volumes::REASON_NO_VOLUME, out),
        }
    }
}

/// `helper.DefaultNormalizeScore`: scales scores to 0..=100 by the highest
/// one, and with `reverse` turns them around (fewer is better).
pub(crate) fn default_normalize(scores: &mut [i64], reverse: bool) {
    let max = scores.iter().copied().max().unwrap_or(0);
    if max == 0 {
        if reverse {
            scores.fill(MAX_NODE_SCORE);
        }
        return;
    }
    for s in scores {
        *s = MAX_NODE_SCORE * *s / max;
        if reverse {
            *s = MAX_NODE_SCORE - *s;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_normalize_scales_and_reverses() {
        let table: &[(&[i64], bool, &[i64])] = &[
            (&[0, 0], false, &[0, 0]),
            (&[0, 0], true, &[100, 100]),
            (&[1, 2, 4], false, &[25, 50, 100]),
            (&[1, 2, 4], true, &[75, 50, 0]),
            (&[3, 0], false, &[100, 0]),
        ];
        for (input, reverse, want) in table {
            let mut s = input.to_vec();
            default_normalize(&mut s, *reverse);
            assert_eq!(&s, want, "{input:?} reverse={reverse}");
        }
    }
}
