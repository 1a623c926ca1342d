//! What the controller keeps of each pod — the index summary it ranks and
//! counts by — upstream's ranking of which pods to keep when there are
//! too many, and when a ready pod counts as available (`minReadySeconds`).

use std::borrow::Cow;
use std::cmp::Ordering;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use windlass_sdk::Time;

use crate::view::{Labels, PodView};

/// One pod as the index keeps it: what upstream ranks pods by, and what
/// the counts need. Short field names: a ReplicaSet's reconcile reads one
/// of these per pod, so their size is the cost of a reconcile.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct PodRank<'a> {
    #[serde(borrow, rename = "n")]
    pub name: Cow<'a, str>,
    #[serde(
        borrow,
        rename = "ns",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub namespace: Option<Cow<'a, str>>,
    #[serde(
        borrow,
        rename = "l",
        default,
        skip_serializing_if = "Labels::is_empty"
    )]
    pub labels: Labels<'a>,
    /// `Succeeded` or `Failed`: no longer counts.
    #[serde(rename = "e", default, skip_serializing_if = "is_false")]
    pub ended: bool,
    /// Being deleted.
    #[serde(rename = "t", default, skip_serializing_if = "is_false")]
    pub terminating: bool,
    #[serde(rename = "s", default, skip_serializing_if = "is_false")]
    scheduled: bool,
    #[serde(rename = "p", default)]
    phase: u8,
    #[serde(rename = "r", default, skip_serializing_if = "is_false")]
    pub ready: bool,
    /// When the pod became ready (`Ready` condition's `lastTransitionTime`).
    #[serde(
        borrow,
        rename = "rs",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub ready_since: Option<Cow<'a, str>>,
    #[serde(rename = "x", default, skip_serializing_if = "is_zero")]
    restarts: i64,
    #[serde(borrow, rename = "c", default, skip_serializing_if = "Option::is_none")]
    created: Option<Cow<'a, str>>,
}

fn is_false(b: &bool) -> bool {
    !b
}

fn is_zero(n: &i64) -> bool {
    *n == 0
}

impl<'a> PodRank<'a> {
    pub fn of(mut pod: PodView<'a>) -> Self {
        let ready_condition = pod
            .status
            .conditions
            .iter_mut()
            .find(|c| c.type_ == "Ready");
        let ready = ready_condition.as_ref().is_some_and(|c| c.status == "True");
        let ready_since = ready_condition
            .filter(|_| ready)
            .and_then(|c| c.last_transition_time.take());
        Self {
            ended: pod.has_ended(),
            terminating: pod.is_terminating(),
            scheduled: pod.spec.node_name.as_deref().is_some_and(|n| !n.is_empty()),
            phase: match pod.status.phase.as_deref() {
                Some("Running") => 2,
                Some("Unknown") => 1,
                _ => 0,
            },
            ready,
            ready_since,
            restarts: pod
                .status
                .container_statuses
                .iter()
                .map(|s| s.restart_count)
                .sum(),
            name: pod.metadata.name,
            namespace: pod.metadata.namespace,
            labels: pod.metadata.labels,
            created: pod.metadata.creation_timestamp,
        }
    }

    /// Orders pods best-to-keep first: scheduled, running, ready, ready for
    /// longer, fewer restarts, older; the name breaks ties so the choice is
    /// deterministic. (RFC 3339 timestamps in one format compare as strings.)
    pub fn keep_first(a: &Self, b: &Self) -> Ordering {
        b.scheduled
            .cmp(&a.scheduled)
            .then(b.phase.cmp(&a.phase))
            .then(b.ready.cmp(&a.ready))
            .then_with(|| older_first(a.ready_since.as_deref(), b.ready_since.as_deref()))
            .then(a.restarts.cmp(&b.restarts))
            .then_with(|| older_first(a.created.as_deref(), b.created.as_deref()))
            .then_with(|| a.name.cmp(&b.name))
    }

    /// Whether the pod is available at `now`, and if it is ready but not
    /// yet available, how long until it will be. As upstream's
    /// `IsPodAvailable`: ready, and with `minReadySeconds`, ready since a
    /// time strictly more than that long before `now` (a ready pod without
    /// a transition time never becomes available).
    pub fn availability(&self, min_ready: Duration, now: Time) -> Availability {
        if !self.ready {
            return Availability::No;
        }
        if min_ready.is_zero() {
            return Availability::Yes;
        }
        let Some(since) = self.ready_since.as_deref().and_then(Time::parse) else {
            return Availability::No;
        };
        let at = since + min_ready;
        if at < now {
            Availability::Yes
        } else {
            // At `at` itself the pod is still not available: look just after.
            Availability::After(now.until(at) + Duration::from_millis(1))
        }
    }
}

/// Whether a pod counts as available.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Availability {
    Yes,
    No,
    /// Ready, and available once this much more time has passed.
    After(Duration),
}

/// Earlier timestamps first; a missing one last.
fn older_first(a: Option<&str>, b: Option<&str>) -> Ordering {
    match (a, b) {
        (Some(a), Some(b)) => a.cmp(b),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => Ordering::Equal,
    }
}
