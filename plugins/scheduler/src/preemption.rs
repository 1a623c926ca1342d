//! `DefaultPreemption`: when a pod fits on no node, kube-scheduler looks
//! for a node where deleting pods of lower priority would make room, and
//! deletes them (the victims), nominating the node for the pod.
//!
//! As upstream's dry run does, per node that failed only for lack of
//! resources: every pod there of lower priority, not already terminating,
//! is a potential victim; if the pod fits with all of them gone (and the
//! node still passes the other filters), as many as can stay are spared,
//! most important first (higher priority, then started earlier), and
//! those whose deletion would violate a PodDisruptionBudget before the
//! rest (`budgets`). Of the nodes that work, the one with the fewest
//! victims that violate a budget wins, then the one whose most important
//! victim is least important, then the lowest sum of priorities, then the
//! fewest victims, then the latest start among the most important victims.
//!
//! When nothing works, the message says why per node, in upstream's
//! words: `Preemption is not helpful for scheduling` (the node failed a
//! filter deleting pods cannot change), `No preemption victims found for
//! incoming pod`, or what the node still lacks with every victim gone.
//!
//! Each victim gets the `DisruptionTarget` condition (`PreemptionByScheduler`)
//! and is deleted with its grace period; the pod is nominated to the node.
//! A pod with `preemptionPolicy: Never` does not preempt, and a pod whose
//! nominated node still has lower-priority pods terminating waits for
//! them rather than preempting more. Until it is bound, the room it waits
//! for is kept from pods of no higher priority (`nominated`); when no node
//! would do any more, its nomination is cleared. Not modelled: victims for
//! pod affinity or topology spread.

use windlass_sdk::Error;

use crate::bound::BoundPod;
use crate::budgets::{self, Budget};
use crate::fit_error;
use crate::keys;
use crate::node::NodeInfo;
use crate::plugins::{Reason, Usage, node_resources};
use crate::pod::PodInfo;
use crate::snapshot::{Cluster, Snapshot};

pub(crate) const NOT_HELPFUL: &str = "Preemption is not helpful for scheduling";
pub(crate) const NO_VICTIMS: &str = "No preemption victims found for incoming pod";
const NEVER: &str = "not eligible due to preemptionPolicy=Never.";
const TERMINATING: &str = "not eligible due to a terminating pod on the nominated node.";

/// A pod to delete so that the preemptor fits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Victim {
    pub(crate) namespace: String,
    pub(crate) name: String,
    pub(crate) uid: String,
}

/// What preemption found.
#[derive(Debug)]
pub(crate) enum Outcome {
    /// Deleting `victims` makes room on `node`.
    Victims { node: String, victims: Vec<Victim> },
    /// No node would do: the message (`preemption: ...`) says why. The
    /// pod's nomination, if any, is void (upstream clears it).
    Failed(String),
    /// The pod may not preempt (now): the message says why. A nomination
    /// stays.
    NotEligible(String),
}

/// How a candidate node ranks: the smallest wins (the victims that
/// violate a budget, the most important victim's priority, the sum of
/// priorities, the number of victims, and the latest start among the most
/// important victims).
type Rank = (usize, i32, i64, usize, std::cmp::Reverse<String>);

/// The rank of a node whose `victims` (most important first) make room,
/// `violations` of them against a budget.
fn rank(victims: &[BoundPod<'_>], violations: usize) -> Rank {
    let top = victims.first().map_or(i32::MIN, |v| v.priority);
    // Shifted so that negative priorities add up as upstream's do.
    let sum = victims
        .iter()
        .map(|v| i64::from(v.priority) + i64::from(i32::MAX) + 1)
        .sum();
    let earliest_top = victims
        .iter()
        .filter(|v| v.priority == top)
        .map(|v| start_key(v.start_time))
        .min()
        .unwrap_or("");
    (
        violations,
        top,
        sum,
        victims.len(),
        std::cmp::Reverse(earliest_top.to_owned()),
    )
}

/// A start time for ordering: unset is the latest (upstream takes now).
fn start_key(start: &str) -> &str {
    if start.is_empty() { "~" } else { start }
}

/// How the pod failed, by node, as far as preemption cares.
pub(crate) struct Failed<'f> {
    /// The nodes that lacked resources only, with their usage.
    pub(crate) short: &'f [(usize, Usage)],
    /// The nodes pod anti-affinity kept the pod out of. Upstream's dry run
    /// looks there too; here they only say whether there were victims to
    /// find (none: `No preemption victims found`), as upstream's message
    /// does in a cluster of one priority.
    pub(crate) repelled: &'f [(usize, Reason)],
    /// How many nodes there are.
    pub(crate) all: usize,
}

/// Preemption for `pod`, which fits on no node (`failed`); `others` checks
/// the rest of the filters on a node once room is made.
pub(crate) fn preempt(
    pod: &PodInfo<'_>,
    snap: &Snapshot<'_>,
    failed: &Failed<'_>,
    others: &dyn Fn(&NodeInfo<'_>) -> Option<Reason>,
    cluster: &mut impl Cluster,
) -> Result<Outcome, Error> {
    let (short, all) = (failed.short, failed.all);
    if !pod.preempts {
        return Ok(Outcome::NotEligible(format!("preemption: {NEVER}")));
    }
    if let Some(nominated) = pod.nominated_node {
        let there = cluster.pods(&keys::node(nominated))?;
        let waiting = there
            .iter()
            .filter_map(|s| BoundPod::decode(s))
            .any(|b| b.terminating && b.priority < pod.priority);
        if waiting {
            return Ok(Outcome::NotEligible(format!("preemption: {TERMINATING}")));
        }
    }
    // A pod of priority 0 or less can only preempt pods below zero.
    let may_find = pod.priority > 0 || !cluster.pods(keys::NEGATIVE_PRIORITY)?.is_empty();
    let potential = short.len() + failed.repelled.len();
    let mut reasons: Vec<String> = vec![NOT_HELPFUL.to_owned(); all.saturating_sub(potential)];
    if !may_find {
        reasons.extend(std::iter::repeat_n(NO_VICTIMS.to_owned(), potential));
        return Ok(nothing(all, reasons));
    }
    for &(i, reason) in failed.repelled {
        let node = &snap.nodes[i];
        let there = cluster.pods(&keys::node(node.name_str()))?;
        let lower = there
            .iter()
            .filter_map(|s| BoundPod::decode(s))
            .any(|b| b.priority < pod.priority && !b.terminating);
        if lower {
            reason.texts(node, &mut reasons);
        } else {
            reasons.push(NO_VICTIMS.to_owned());
        }
    }
    let budget_objects = if short.is_empty() {
        Vec::new()
    } else {
        cluster.budgets()?
    };
    let budgets = (budget_objects.iter())
        .map(Budget::read)
        .collect::<Result<Vec<_>, _>>()?;
    let mut best: Option<(Rank, usize, Vec<Victim>)> = None;
    for &(i, usage) in short {
        let node = &snap.nodes[i];
        let summaries = cluster.pods(&keys::node(node.name_str()))?;
        match dry_run(pod, node, usage, &summaries, &budgets, others) {
            Ok((victims, violations)) => {
                let r = rank(&victims, violations);
                if best.as_ref().is_none_or(|(b, _, _)| r < *b) {
                    best = Some((r, i, victims.iter().map(Victim::of).collect()));
                }
            }
            Err(why) => reasons.extend(why),
        }
    }
    Ok(match best {
        Some((_, i, victims)) => Outcome::Victims {
            node: snap.nodes[i].name_str().to_owned(),
            victims,
        },
        None => nothing(all, reasons),
    })
}

impl Victim {
    fn of(pod: &BoundPod<'_>) -> Self {
        Self {
            namespace: pod.namespace.to_owned(),
            name: pod.name.to_owned(),
            uid: pod.uid.to_owned(),
        }
    }
}

fn nothing(all: usize, reasons: Vec<String>) -> Outcome {
    Outcome::Failed(format!("preemption: {}", fit_error::message(all, reasons)))
}

/// The victims on `node` that make room for `pod`, most important first,
/// and how many of them violate a budget; or why there are none.
fn dry_run<'a>(
    pod: &PodInfo<'_>,
    node: &NodeInfo<'_>,
    usage: Usage,
    summaries: &'a [Vec<u8>],
    budgets: &[Budget<'_>],
    others: &dyn Fn(&NodeInfo<'_>) -> Option<Reason>,
) -> Result<(Vec<BoundPod<'a>>, usize), Vec<String>> {
    let mut potential: Vec<BoundPod<'a>> = summaries
        .iter()
        .filter_map(|s| BoundPod::decode(s))
        .filter(|b| b.priority < pod.priority && !b.terminating)
        .collect();
    if potential.is_empty() {
        return Err(vec![NO_VICTIMS.to_owned()]);
    }
    let mut room = usage;
    for v in &potential {
        release(&mut room, v, -1);
    }
    let still = node_resources::filter(pod, &node.allocatable, &room).or_else(|| others(node));
    if let Some(r) = still {
        let mut texts = Vec::new();
        r.texts(node, &mut texts);
        return Err(texts);
    }
    potential.sort_by(more_important);
    // Spare as many as still leave room, those that would violate a
    // budget first, each group most important first.
    let (violating, fine) = budgets::split(potential, budgets);
    let mixed = !violating.is_empty() && !fine.is_empty();
    let mut victims = Vec::new();
    let mut violations = 0;
    for (v, violates) in
        (violating.into_iter().map(|v| (v, true))).chain(fine.into_iter().map(|v| (v, false)))
    {
        let mut spared = room;
        release(&mut spared, &v, 1);
        if node_resources::filter(pod, &node.allocatable, &spared).is_none() {
            room = spared;
        } else {
            victims.push(v);
            violations += usize::from(violates);
        }
    }
    if mixed {
        victims.sort_by(more_important);
    }
    Ok((victims, violations))
}

/// Upstream's `MoreImportantPod`: higher priority, then started earlier.
fn more_important(a: &BoundPod<'_>, b: &BoundPod<'_>) -> std::cmp::Ordering {
    b.priority
        .cmp(&a.priority)
        .then_with(|| start_key(a.start_time).cmp(start_key(b.start_time)))
}

/// Adds (`sign` 1) or takes away (-1) what `pod` holds on its node.
fn release(usage: &mut Usage, pod: &BoundPod<'_>, sign: i64) {
    let r = &mut usage.requested;
    r.cpu += sign * pod.requests.cpu;
    r.memory += sign * pod.requests.memory;
    r.ephemeral += sign * pod.requests.ephemeral;
    usage.pods += sign;
}

#[cfg(test)]
mod tests;
