//! The parts of Nodes, Pods and Leases this plugin reads, borrowed from
//! their JSON text; the rest of each object is skipped unread. Conditions
//! and taints stay text until one is rewritten, so that what another
//! component wrote passes through untouched.

use serde::Deserialize;
use serde_json::value::RawValue;
use windlass_sdk::taints::StoredToleration;
pub(crate) use windlass_sdk::view::{Str, nullable};

// ---- nodes -------------------------------------------------------------

#[derive(Deserialize, Default)]
pub(crate) struct Node<'a> {
    #[serde(borrow, default, deserialize_with = "nullable")]
    pub metadata: NodeMeta<'a>,
    #[serde(borrow, default, deserialize_with = "nullable")]
    pub spec: NodeSpec<'a>,
    #[serde(borrow, default, deserialize_with = "nullable")]
    pub status: NodeStatus<'a>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub(crate) struct NodeMeta<'a> {
    #[serde(borrow, default)]
    pub name: Str<'a>,
    #[serde(borrow, default)]
    pub resource_version: Option<Str<'a>>,
    #[serde(borrow, default)]
    pub creation_timestamp: Option<Str<'a>>,
    #[serde(borrow, default)]
    pub deletion_timestamp: Option<Str<'a>>,
    #[serde(borrow, default, deserialize_with = "nullable")]
    pub labels: NodeLabels<'a>,
}

/// The one label read: whether the `kubelet` plugin simulates the node.
#[derive(Deserialize, Default)]
pub(crate) struct NodeLabels<'a> {
    #[serde(borrow, default, rename = "windlass.dev/simulated")]
    pub simulated: Option<Str<'a>>,
}

#[derive(Deserialize, Default)]
pub(crate) struct NodeSpec<'a> {
    #[serde(borrow, default, deserialize_with = "nullable")]
    pub taints: Vec<&'a RawValue>,
    #[serde(default, deserialize_with = "nullable")]
    pub unschedulable: bool,
}

#[derive(Deserialize, Default)]
pub(crate) struct NodeStatus<'a> {
    #[serde(borrow, default, deserialize_with = "nullable")]
    pub conditions: Vec<&'a RawValue>,
}

// ---- pods --------------------------------------------------------------

#[derive(Deserialize, Default)]
pub(crate) struct Pod<'a> {
    #[serde(borrow, default, deserialize_with = "nullable")]
    pub metadata: PodMeta<'a>,
    #[serde(borrow, default, deserialize_with = "nullable")]
    pub spec: PodSpec<'a>,
    #[serde(borrow, default, deserialize_with = "nullable")]
    pub status: PodStatus<'a>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PodMeta<'a> {
    #[serde(borrow, default)]
    pub name: Str<'a>,
    #[serde(borrow, default)]
    pub namespace: Option<Str<'a>>,
    #[serde(borrow, default)]
    pub uid: Option<Str<'a>>,
    #[serde(borrow, default)]
    pub resource_version: Option<Str<'a>>,
    #[serde(borrow, default)]
    pub creation_timestamp: Option<Str<'a>>,
    #[serde(borrow, default)]
    pub deletion_timestamp: Option<Str<'a>>,
    #[serde(default)]
    pub deletion_grace_period_seconds: Option<i64>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PodSpec<'a> {
    #[serde(borrow, default)]
    pub node_name: Option<Str<'a>>,
    #[serde(borrow, default, deserialize_with = "nullable")]
    pub tolerations: Vec<StoredToleration<'a>>,
}

#[derive(Deserialize, Default)]
pub(crate) struct PodStatus<'a> {
    #[serde(borrow, default)]
    pub phase: Option<Str<'a>>,
    #[serde(borrow, default, deserialize_with = "nullable")]
    pub conditions: Vec<&'a RawValue>,
}

impl Pod<'_> {
    /// `Succeeded` or `Failed`.
    pub(crate) fn ended(&self) -> bool {
        matches!(self.status.phase.as_deref(), Some("Succeeded" | "Failed"))
    }

    /// Deleted with no grace left: already on its way out for good.
    pub(crate) fn force_deleted(&self) -> bool {
        self.metadata.deletion_timestamp.is_some()
            && self.metadata.deletion_grace_period_seconds == Some(0)
    }
}

// ---- leases ------------------------------------------------------------

#[derive(Deserialize, Default)]
pub(crate) struct Lease<'a> {
    #[serde(borrow, default, deserialize_with = "nullable")]
    pub spec: LeaseSpec<'a>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub(crate) struct LeaseSpec<'a> {
    #[serde(borrow, default)]
    pub renew_time: Option<Str<'a>>,
}

// ---- what `map` and `index` need -----------------------------------------

/// Just enough of a Pod or Lease to route and file it.
#[derive(Deserialize, Default)]
pub(crate) struct Routing<'a> {
    #[serde(borrow, default)]
    pub kind: Str<'a>,
    #[serde(borrow, default, deserialize_with = "nullable")]
    pub metadata: RoutingMeta<'a>,
    #[serde(borrow, default, deserialize_with = "nullable")]
    pub spec: RoutingSpec<'a>,
    #[serde(borrow, default, deserialize_with = "nullable")]
    pub status: RoutingStatus<'a>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RoutingMeta<'a> {
    #[serde(borrow, default)]
    pub name: Str<'a>,
    #[serde(borrow, default)]
    pub deletion_timestamp: Option<Str<'a>>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RoutingSpec<'a> {
    #[serde(borrow, default)]
    pub node_name: Option<Str<'a>>,
}

#[derive(Deserialize, Default)]
pub(crate) struct RoutingStatus<'a> {
    #[serde(borrow, default)]
    pub phase: Option<Str<'a>>,
    #[serde(borrow, default, deserialize_with = "nullable")]
    pub conditions: Vec<ConditionStatus<'a>>,
}

/// A condition's type and status, nothing else.
#[derive(Deserialize, Default)]
pub(crate) struct ConditionStatus<'a> {
    #[serde(borrow, default, rename = "type")]
    pub type_: Str<'a>,
    #[serde(borrow, default)]
    pub status: Str<'a>,
}

impl Routing<'_> {
    /// A pod's index summary: `R` if it is ready, `D` if it is being
    /// deleted, `E` if it has ended. These are what a node's reconcile acts
    /// on, so a change of one wakes the node; other changes do not.
    pub(crate) fn flags(&self) -> Vec<u8> {
        let mut flags = Vec::with_capacity(3);
        if (self.status.conditions.iter()).any(|c| c.type_ == "Ready" && c.status == "True") {
            flags.push(b'R');
        }
        if self.metadata.deletion_timestamp.is_some() {
            flags.push(b'D');
        }
        if matches!(self.status.phase.as_deref(), Some("Succeeded" | "Failed")) {
            flags.push(b'E');
        }
        flags
    }
}
