//! PodDisruptionBudgets as preemption weighs them (upstream's
//! `filterPodsWithPDBViolation`): a victim whose deletion would take a
//! budget below zero violates it. Preemption deletes pods directly, so a
//! budget is never enforced here, only preferred: victims that violate one
//! are spared first, and the node with the fewest violations wins.

use serde::Deserialize;
use windlass_sdk::view::{Str, nullable};
use windlass_sdk::{Error, Object};

use crate::api::{LabelSelector, StrMap};
use crate::bound::BoundPod;
use crate::selector::Selector;

/// One budget: its namespace, whom it selects, how many more disruptions
/// it allows, and the pods already being disrupted under it.
pub(crate) struct Budget<'a> {
    namespace: Str<'a>,
    selector: Selector<'a>,
    allowed: i64,
    disrupted: StrMap<'a>,
}

#[derive(Deserialize, Default)]
struct View<'a> {
    #[serde(borrow, default, deserialize_with = "nullable")]
    metadata: Meta<'a>,
    #[serde(borrow, default, deserialize_with = "nullable")]
    spec: Spec<'a>,
    #[serde(borrow, default, deserialize_with = "nullable")]
    status: Status<'a>,
}

#[derive(Deserialize, Default)]
struct Meta<'a> {
    #[serde(borrow, default)]
    namespace: Str<'a>,
}

#[derive(Deserialize, Default)]
struct Spec<'a> {
    #[serde(borrow, default)]
    selector: Option<LabelSelector<'a>>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct Status<'a> {
    #[serde(default)]
    disruptions_allowed: i64,
    #[serde(borrow, default, deserialize_with = "nullable")]
    disrupted_pods: StrMap<'a>,
}

impl<'a> Budget<'a> {
    /// Reads a PodDisruptionBudget.
    pub(crate) fn read(object: &'a Object) -> Result<Self, Error> {
        let v: View<'a> = object.deserialize()?;
        Ok(Self {
            namespace: v.metadata.namespace,
            selector: Selector::from_view(v.spec.selector.as_ref()),
            allowed: v.status.disruptions_allowed,
            disrupted: v.status.disrupted_pods,
        })
    }

    /// Whether the budget counts `pod`: same namespace, and a selector that
    /// selects it (a missing or empty selector selects nothing here, as
    /// upstream's preemption reads it). A pod the API server already
    /// recorded as being disrupted under it is not counted twice.
    fn counts(&self, pod: &BoundPod<'_>) -> bool {
        self.namespace == pod.namespace
            && !self.selector.is_nothing()
            && !self.selector.is_everything()
            && self.selector.matches(&pod.labels)
            && self.disrupted.get(pod.name).is_none()
    }
}

/// Splits `pods` (most important first) into those whose deletion would
/// violate a budget and those whose would not, spending each budget's
/// allowance in that order.
pub(crate) fn split<'p>(
    pods: Vec<BoundPod<'p>>,
    budgets: &[Budget<'_>],
) -> (Vec<BoundPod<'p>>, Vec<BoundPod<'p>>) {
    let mut allowed: Vec<i64> = budgets.iter().map(|b| b.allowed).collect();
    let mut violating = Vec::new();
    let mut fine = Vec::new();
    for pod in pods {
        let mut violates = false;
        // A pod without labels matches no budget.
        if pod.labels.iter_bytes().next().is_some() {
            for (budget, left) in budgets.iter().zip(&mut allowed) {
                if budget.counts(&pod) {
                    *left -= 1;
                    violates |= *left < 0;
                }
            }
        }
        if violates {
            violating.push(pod);
        } else {
            fine.push(pod);
        }
    }
    (violating, fine)
}
