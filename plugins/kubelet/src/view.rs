//! The parts of Nodes, Pods and Leases the kubelet reads, borrowed from
//! their JSON text: a reconcile reads every pod it syncs, so it parses only
//! these fields and skips the rest (annotations such as
//! `last-applied-configuration` included).

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::value::RawValue;
use windlass_sdk::taints::StoredToleration;
pub(crate) use windlass_sdk::view::{Str, nullable};

use crate::status::ContainerStatus;

// ---- pods --------------------------------------------------------------

/// A pod, as the kubelet sees it.
#[derive(Deserialize, Default)]
pub(crate) struct Pod<'a> {
    #[serde(borrow, default)]
    pub kind: Str<'a>,
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
    pub deletion_timestamp: Option<Str<'a>>,
    #[serde(default)]
    pub deletion_grace_period_seconds: Option<i64>,
    #[serde(borrow, default, deserialize_with = "nullable")]
    pub annotations: PodAnnotations<'a>,
    #[serde(borrow, default, deserialize_with = "nullable")]
    pub finalizers: Vec<Str<'a>>,
    #[serde(borrow, default, deserialize_with = "nullable")]
    pub owner_references: Vec<OwnerRef<'a>>,
}

/// What is read of an owner reference: whose kind it is, and whether it
/// is the controller's.
#[derive(Deserialize, Default)]
pub(crate) struct OwnerRef<'a> {
    #[serde(borrow, default)]
    pub kind: Str<'a>,
    #[serde(default)]
    pub controller: Option<bool>,
}

impl PodMeta<'_> {
    /// Whether a Job controls the pod.
    pub(crate) fn job_controlled(&self) -> bool {
        self.owner_references
            .iter()
            .any(|o| o.controller == Some(true) && &*o.kind == "Job")
    }
}

/// The annotations that script a simulated container; every other
/// annotation is skipped unread.
#[derive(Deserialize, Default)]
pub(crate) struct PodAnnotations<'a> {
    /// A Go duration after which the pod's containers exit.
    #[serde(borrow, default, rename = "windlass.dev/exit-after")]
    pub exit_after: Option<Str<'a>>,
    /// The code they exit with (default 0).
    #[serde(borrow, default, rename = "windlass.dev/exit-code")]
    pub exit_code: Option<Str<'a>>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PodSpec<'a> {
    #[serde(borrow, default)]
    pub node_name: Option<Str<'a>>,
    #[serde(borrow, default)]
    pub restart_policy: Option<Str<'a>>,
    #[serde(borrow, default, deserialize_with = "nullable")]
    pub init_containers: Vec<Container<'a>>,
    #[serde(borrow, default, deserialize_with = "nullable")]
    pub containers: Vec<Container<'a>>,
    /// Added by `kubectl debug` to a running pod (`pods/ephemeralcontainers`).
    #[serde(borrow, default, deserialize_with = "nullable")]
    pub ephemeral_containers: Vec<Container<'a>>,
    #[serde(borrow, default, deserialize_with = "nullable")]
    pub readiness_gates: Vec<ReadinessGate<'a>>,
    #[serde(borrow, default, deserialize_with = "nullable")]
    pub tolerations: Vec<StoredToleration<'a>>,
    #[serde(default)]
    pub host_network: Option<bool>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Container<'a> {
    #[serde(borrow, default)]
    pub name: Str<'a>,
    #[serde(borrow, default)]
    pub image: Option<Str<'a>>,
    /// `Always` on an init container makes it a sidecar.
    #[serde(borrow, default)]
    pub restart_policy: Option<Str<'a>>,
    #[serde(borrow, default, deserialize_with = "nullable")]
    pub lifecycle: Lifecycle<'a>,
    #[serde(borrow, default, deserialize_with = "nullable")]
    pub resources: Resources<'a>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Lifecycle<'a> {
    #[serde(borrow, default)]
    pub pre_stop: Option<Handler<'a>>,
}

/// A lifecycle hook; only the parts that say how long it takes are read.
#[derive(Deserialize, Default)]
pub(crate) struct Handler<'a> {
    #[serde(borrow, default)]
    pub exec: Option<Exec<'a>>,
    #[serde(default)]
    pub sleep: Option<Sleep>,
}

#[derive(Deserialize, Default)]
pub(crate) struct Exec<'a> {
    #[serde(borrow, default, deserialize_with = "nullable")]
    pub command: Vec<Str<'a>>,
}

#[derive(Deserialize, Default)]
pub(crate) struct Sleep {
    #[serde(default)]
    pub seconds: i64,
}

#[derive(Deserialize, Default)]
pub(crate) struct Resources<'a> {
    #[serde(borrow, default, deserialize_with = "nullable")]
    pub requests: BTreeMap<Str<'a>, Str<'a>>,
    #[serde(borrow, default, deserialize_with = "nullable")]
    pub limits: BTreeMap<Str<'a>, Str<'a>>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ReadinessGate<'a> {
    #[serde(borrow, default)]
    pub condition_type: Str<'a>,
}

/// A pod's status as stored. Conditions stay JSON text: the kubelet
/// rewrites its own and passes the others through untouched.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PodStatus<'a> {
    #[serde(borrow, default)]
    pub phase: Option<Str<'a>>,
    #[serde(borrow, default, deserialize_with = "nullable")]
    pub conditions: Vec<&'a RawValue>,
    #[serde(borrow, default, rename = "hostIP")]
    pub host_ip: Option<Str<'a>>,
    #[serde(borrow, default, rename = "hostIPs", deserialize_with = "nullable")]
    pub host_ips: Vec<Ip<'a>>,
    #[serde(borrow, default, rename = "podIP")]
    pub pod_ip: Option<Str<'a>>,
    #[serde(borrow, default, rename = "podIPs", deserialize_with = "nullable")]
    pub pod_ips: Vec<Ip<'a>>,
    #[serde(borrow, default)]
    pub start_time: Option<Str<'a>>,
    #[serde(borrow, default, deserialize_with = "nullable")]
    pub init_container_statuses: Vec<ContainerStatus<'a>>,
    #[serde(borrow, default, deserialize_with = "nullable")]
    pub container_statuses: Vec<ContainerStatus<'a>>,
    #[serde(borrow, default)]
    pub qos_class: Option<Str<'a>>,
    #[serde(borrow, default, deserialize_with = "nullable")]
    pub ephemeral_container_statuses: Vec<ContainerStatus<'a>>,
}

/// One entry of `hostIPs` or `podIPs`.
#[derive(Deserialize, serde::Serialize, Default, Debug, Clone, PartialEq)]
pub(crate) struct Ip<'a> {
    #[serde(borrow, default)]
    pub ip: Str<'a>,
}

/// The `type` of a condition, to tell the kubelet's own from the others.
#[derive(Deserialize)]
pub(crate) struct ConditionType<'a> {
    #[serde(borrow, rename = "type", default)]
    pub type_: Str<'a>,
}

// ---- nodes -------------------------------------------------------------

/// A node, as its kubelet sees it.
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
    pub uid: Option<Str<'a>>,
    #[serde(borrow, default)]
    pub resource_version: Option<Str<'a>>,
    #[serde(borrow, default)]
    pub deletion_timestamp: Option<Str<'a>>,
    #[serde(borrow, default, deserialize_with = "nullable")]
    pub labels: NodeLabels<'a>,
    #[serde(borrow, default, deserialize_with = "nullable")]
    pub annotations: NodeAnnotations<'a>,
}

/// The well-known labels a kubelet puts on its node; others are skipped.
#[derive(Deserialize, Default)]
pub(crate) struct NodeLabels<'a> {
    #[serde(borrow, default, rename = "kubernetes.io/hostname")]
    pub hostname: Option<Str<'a>>,
    #[serde(borrow, default, rename = "kubernetes.io/os")]
    pub os: Option<Str<'a>>,
    #[serde(borrow, default, rename = "kubernetes.io/arch")]
    pub arch: Option<Str<'a>>,
    #[serde(borrow, default, rename = "beta.kubernetes.io/os")]
    pub beta_os: Option<Str<'a>>,
    #[serde(borrow, default, rename = "beta.kubernetes.io/arch")]
    pub beta_arch: Option<Str<'a>>,
}

#[derive(Deserialize, Default)]
pub(crate) struct NodeAnnotations<'a> {
    /// `cpu=8,memory=32Gi,pods=110,ephemeral-storage=100Gi`.
    #[serde(borrow, default, rename = "windlass.dev/capacity")]
    pub capacity: Option<Str<'a>>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub(crate) struct NodeSpec<'a> {
    /// Kept as text: a taint may gain `timeAdded` and be written back.
    #[serde(borrow, default, deserialize_with = "nullable")]
    pub taints: Vec<&'a RawValue>,
    #[serde(borrow, default, rename = "podCIDR")]
    pub pod_cidr: Option<Str<'a>>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub(crate) struct NodeStatus<'a> {
    #[serde(borrow, default, deserialize_with = "nullable")]
    pub capacity: BTreeMap<Str<'a>, Str<'a>>,
    #[serde(borrow, default, deserialize_with = "nullable")]
    pub allocatable: BTreeMap<Str<'a>, Str<'a>>,
    #[serde(borrow, default, deserialize_with = "nullable")]
    pub conditions: Vec<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "nullable")]
    pub addresses: Vec<crate::node_status::Address<'a>>,
    #[serde(default, deserialize_with = "nullable")]
    pub daemon_endpoints: crate::node_status::DaemonEndpoints,
    #[serde(borrow, default, deserialize_with = "nullable")]
    pub node_info: crate::node_status::NodeInfo<'a>,
}

// ---- leases ------------------------------------------------------------

/// A node's heartbeat Lease.
#[derive(Deserialize, Default)]
pub(crate) struct Lease<'a> {
    #[serde(borrow, default, deserialize_with = "nullable")]
    pub spec: LeaseSpec<'a>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub(crate) struct LeaseSpec<'a> {
    #[serde(borrow, default)]
    pub holder_identity: Option<Str<'a>>,
    #[serde(default)]
    pub lease_duration_seconds: Option<i64>,
    #[serde(borrow, default)]
    pub renew_time: Option<Str<'a>>,
}
