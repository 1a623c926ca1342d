//! What a kubelet reports about its node: the status (conditions,
//! capacity, addresses, versions) and the well-known labels.
//!
//! Like a kubelet with node leases (`pkg/kubelet/kubelet_node_status.go`),
//! the status is written when something in it changes, or when the last
//! heartbeat is older than `nodeStatusReportFrequency` (5 min); liveness in
//! between is the Lease's job. Capacity comes from the node's
//! `windlass.dev/capacity` annotation, else from what its status already
//! says, else from defaults; allocatable equals capacity (nothing is
//! reserved on a simulated node).

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use windlass_sdk::{Event, Time};

use crate::ids;
use crate::network::Ipv4;
use crate::quantity;
use crate::status::Entry;
use crate::timeline::whole_seconds;
use crate::view::{ConditionType, Node, Str, nullable};

/// The version `kubectl get nodes` shows.
pub(crate) const KUBELET_VERSION: &str = "v1.31.0-windlass";
/// Kubelet's `nodeStatusReportFrequency`.
pub(crate) const REPORT_EVERY: Duration = Duration::from_secs(300);
/// What a node has when neither its annotation nor its status says.
const DEFAULT_CAPACITY: [(&str, &str); 4] = [
    ("cpu", "4"),
    ("ephemeral-storage", "100Gi"),
    ("memory", "16Gi"),
    ("pods", "110"),
];
/// The conditions a kubelet owns, in its order, with what it says when all
/// is well.
const CONDITIONS: [(&str, &str, &str, &str); 4] = [
    (
        "MemoryPressure",
        "False",
        "KubeletHasSufficientMemory",
        "kubelet has sufficient memory available",
    ),
    (
        "DiskPressure",
        "False",
        "KubeletHasNoDiskPressure",
        "kubelet has no disk pressure",
    ),
    (
        "PIDPressure",
        "False",
        "KubeletHasSufficientPID",
        "kubelet has sufficient PID available",
    ),
    (
        "Ready",
        "True",
        "KubeletReady",
        "kubelet is posting ready status",
    ),
];

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Default)]
pub(crate) struct Address<'a> {
    #[serde(borrow, rename = "type", default)]
    pub type_: Str<'a>,
    #[serde(borrow, default)]
    pub address: Str<'a>,
}

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Default)]
pub(crate) struct DaemonEndpoints {
    #[serde(rename = "kubeletEndpoint", default, deserialize_with = "nullable")]
    pub kubelet_endpoint: Endpoint,
}

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Default)]
pub(crate) struct Endpoint {
    #[serde(rename = "Port", default)]
    pub port: i64,
}

/// `status.nodeInfo`, the fields a kubelet fills in.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub(crate) struct NodeInfo<'a> {
    #[serde(borrow, rename = "machineID", default)]
    pub machine_id: Str<'a>,
    #[serde(borrow, rename = "systemUUID", default)]
    pub system_uuid: Str<'a>,
    #[serde(borrow, rename = "bootID", default)]
    pub boot_id: Str<'a>,
    #[serde(borrow, default)]
    pub kernel_version: Str<'a>,
    #[serde(borrow, default)]
    pub os_image: Str<'a>,
    #[serde(borrow, default)]
    pub container_runtime_version: Str<'a>,
    #[serde(borrow, default)]
    pub kubelet_version: Str<'a>,
    #[serde(borrow, default)]
    pub operating_system: Str<'a>,
    #[serde(borrow, default)]
    pub architecture: Str<'a>,
}

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub(crate) struct NodeCondition<'a> {
    #[serde(borrow, rename = "type")]
    pub type_: Str<'a>,
    #[serde(borrow)]
    pub status: Str<'a>,
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    pub last_heartbeat_time: Option<Str<'a>>,
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<Str<'a>>,
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<Str<'a>>,
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    pub message: Option<Str<'a>>,
}

/// A node condition: the kubelet's own, or another component's as it is.
pub(crate) type NodeCond<'a> = Entry<'a, NodeCondition<'a>>;

/// The node status fields a kubelet owns.
#[derive(Serialize, Debug, Clone)]
#[serde(rename_all = "camelCase")]
pub(crate) struct NodeStatus<'a> {
    pub capacity: BTreeMap<Str<'a>, Str<'a>>,
    pub allocatable: BTreeMap<Str<'a>, Str<'a>>,
    pub conditions: Vec<NodeCond<'a>>,
    pub addresses: Vec<Address<'a>>,
    pub daemon_endpoints: DaemonEndpoints,
    pub node_info: NodeInfo<'a>,
}

impl PartialEq for NodeStatus<'_> {
    /// Quantities compare as amounts: the API server may respell them.
    fn eq(&self, other: &Self) -> bool {
        let same = |a: &BTreeMap<Str<'_>, Str<'_>>, b: &BTreeMap<Str<'_>, Str<'_>>| {
            a.len() == b.len()
                && a.iter()
                    .zip(b)
                    .all(|((ka, va), (kb, vb))| ka == kb && quantity::same(va, vb))
        };
        same(&self.capacity, &other.capacity)
            && same(&self.allocatable, &other.allocatable)
            && self.conditions == other.conditions
            && self.addresses == other.addresses
            && self.daemon_endpoints == other.daemon_endpoints
            && self.node_info == other.node_info
    }
}

/// What the node's status should be, and when it is next due.
pub(crate) struct Report<'a> {
    /// The status to write, when it changed or the heartbeat is due.
    pub status: Option<NodeStatus<'a>>,
    /// When the status is next written unless something changes first.
    pub due: Time,
    /// The events a kubelet records as this status is written: `Starting`,
    /// each condition's state and `NodeAllocatableEnforced` when the node
    /// has never been reported, and `NodeReady` when it was not reported
    /// ready before (every report says ready).
    pub events: Vec<Event>,
}

/// The node's status as its kubelet reports it at `now`.
pub(crate) fn report<'a>(node: &'a Node<'a>, node_ip: Ipv4, now: Time) -> Report<'a> {
    let stored = stored(node);
    let ready = stored.conditions.iter().find_map(|c| match c {
        NodeCond::Own(c) if c.type_ == "Ready" => Some(c),
        _ => None,
    });
    let heartbeat = ready.and_then(|c| c.last_heartbeat_time.as_deref().and_then(Time::parse));
    if let Some(beat) = heartbeat
        && now < beat + REPORT_EVERY
        && desired(node, &stored, node_ip, beat, now) == stored
    {
        return Report {
            status: None,
            due: beat + REPORT_EVERY,
            events: Vec::new(),
        };
    }
    let name = &*node.metadata.name;
    let now_is = |state: &str| Event::normal(state, format!("Node {name} status is now: {state}"));
    let now_ready = now_is("NodeReady");
    let events = match ready.map(|c| c.status == "True") {
        // As a kubelet's first status: each condition's initial state, the
        // allocatable it enforces, then ready.
        None => vec![
            Event::normal("Starting", "Starting kubelet."),
            now_is("NodeHasSufficientMemory"),
            now_is("NodeHasNoDiskPressure"),
            now_is("NodeHasSufficientPID"),
            Event::normal(
                "NodeAllocatableEnforced",
                "Updated Node Allocatable limit across pods",
            ),
            now_ready,
        ],
        Some(false) => vec![now_ready],
        Some(true) => Vec::new(),
    };
    let now = whole_seconds(now);
    Report {
        status: Some(desired(node, &stored, node_ip, now, now)),
        due: now + REPORT_EVERY,
        events,
    }
}

/// The stored status, in the same terms.
fn stored<'a>(node: &'a Node<'a>) -> NodeStatus<'a> {
    let s = &node.status;
    NodeStatus {
        capacity: s.capacity.clone(),
        allocatable: s.allocatable.clone(),
        conditions: s.conditions.iter().map(|raw| classify(raw)).collect(),
        addresses: s.addresses.clone(),
        daemon_endpoints: s.daemon_endpoints.clone(),
        node_info: s.node_info.clone(),
    }
}

fn classify(raw: &RawValue) -> NodeCond<'_> {
    let owned = serde_json::from_str::<ConditionType<'_>>(raw.get())
        .is_ok_and(|t| CONDITIONS.iter().any(|(type_, ..)| *type_ == t.type_));
    match owned.then(|| serde_json::from_str::<NodeCondition<'_>>(raw.get())) {
        Some(Ok(c)) => NodeCond::Own(c),
        _ => NodeCond::Other(raw),
    }
}

/// The status with heartbeat `beat`; a condition that changes status
/// changes at `now`.
fn desired<'a>(
    node: &'a Node<'a>,
    stored: &NodeStatus<'a>,
    node_ip: Ipv4,
    beat: Time,
    now: Time,
) -> NodeStatus<'a> {
    let beat = beat.to_rfc3339();
    let now = whole_seconds(now).to_rfc3339();
    let own = |(type_, status, reason, message): (
        &'static str,
        &'static str,
        &'static str,
        &'static str,
    )| {
        let since = stored
            .conditions
            .iter()
            .find_map(|c| match c {
                NodeCond::Own(c) if c.type_ == type_ && c.status == status => {
                    c.last_transition_time.clone()
                }
                _ => None,
            })
            .unwrap_or_else(|| Cow::Owned(now.clone()));
        NodeCond::Own(NodeCondition {
            type_: Cow::Borrowed(type_),
            status: Cow::Borrowed(status),
            last_heartbeat_time: Some(Cow::Owned(beat.clone())),
            last_transition_time: Some(since),
            reason: Some(Cow::Borrowed(reason)),
            message: Some(Cow::Borrowed(message)),
        })
    };
    // Others' conditions stay where they are; the kubelet's are updated in
    // place, or added in its order.
    let mut conditions: Vec<NodeCond<'a>> = stored
        .conditions
        .iter()
        .map(|c| match c {
            NodeCond::Own(c) => own(*CONDITIONS
                .iter()
                .find(|k| k.0 == c.type_)
                .expect("classified as own")),
            other => other.clone(),
        })
        .collect();
    for k in CONDITIONS {
        let present = stored
            .conditions
            .iter()
            .any(|c| matches!(c, NodeCond::Own(c) if c.type_ == k.0));
        if !present {
            conditions.push(own(k));
        }
    }
    let (capacity, allocatable) = resources(node);
    let labels = &node.metadata.labels;
    let name = &*node.metadata.name;
    let addresses = if stored.addresses.is_empty() {
        vec![
            Address {
                type_: Cow::Borrowed("InternalIP"),
                address: Cow::Owned(node_ip.to_string()),
            },
            Address {
                type_: Cow::Borrowed("Hostname"),
                address: Cow::Borrowed(name),
            },
        ]
    } else {
        // Others' addresses stay; one this kubelet derived follows the
        // node's block (see [`node_ip`]).
        stored
            .addresses
            .iter()
            .map(|a| Address {
                type_: a.type_.clone(),
                address: if derived_internal_ip(a) {
                    Cow::Owned(node_ip.to_string())
                } else {
                    a.address.clone()
                },
            })
            .collect()
    };
    NodeStatus {
        capacity,
        allocatable,
        conditions,
        addresses,
        daemon_endpoints: DaemonEndpoints {
            kubelet_endpoint: Endpoint { port: 10250 },
        },
        node_info: NodeInfo {
            machine_id: Cow::Owned(ids::hex(&["machine", name], 32)),
            system_uuid: Cow::Owned(ids::uuid(&["system", name])),
            boot_id: Cow::Owned(ids::uuid(&[
                "boot",
                node.metadata.uid.as_deref().unwrap_or(name),
            ])),
            kernel_version: Cow::Borrowed("6.8.0-windlass"),
            os_image: Cow::Borrowed("windlass simulated node"),
            container_runtime_version: Cow::Borrowed(concat!(
                "windlass://",
                env!("CARGO_PKG_VERSION")
            )),
            kubelet_version: Cow::Borrowed(KUBELET_VERSION),
            operating_system: labels.os.clone().unwrap_or(Cow::Borrowed("linux")),
            architecture: labels.arch.clone().unwrap_or(Cow::Borrowed("amd64")),
        },
    }
}

type Resources<'a> = BTreeMap<Str<'a>, Str<'a>>;

/// Capacity and allocatable: from the annotation, else as the status has
/// them, else the defaults; a default fills in any of cpu, memory, pods
/// and ephemeral-storage that is missing.
fn resources<'a>(node: &'a Node<'a>) -> (Resources<'a>, Resources<'a>) {
    let fill = |mut r: Resources<'a>| {
        for (k, v) in DEFAULT_CAPACITY {
            r.entry(Cow::Borrowed(k)).or_insert(Cow::Borrowed(v));
        }
        r
    };
    let annotated = node
        .metadata
        .annotations
        .capacity
        .as_deref()
        .map(parse_capacity)
        .unwrap_or_default();
    if !annotated.is_empty() {
        let capacity = fill(annotated);
        return (capacity.clone(), capacity);
    }
    let s = &node.status;
    let capacity = fill(s.capacity.clone());
    let allocatable = if s.allocatable.is_empty() {
        capacity.clone()
    } else {
        let mut a = s.allocatable.clone();
        for (k, v) in &capacity {
            a.entry(k.clone()).or_insert_with(|| v.clone());
        }
        a
    };
    (capacity, allocatable)
}

/// `cpu=8,memory=32Gi,pods=110`: the well-formed entries (a resource name
/// and a quantity); others are left out, as the API server would refuse
/// the whole status for one of them.
pub(crate) fn parse_capacity(text: &str) -> Resources<'static> {
    text.split(',')
        .filter_map(|entry| {
            let (k, v) = entry.split_once('=')?;
            let (k, v) = (k.trim(), v.trim());
            let name_ok = !k.is_empty()
                && k.len() <= 253
                && k.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'/' | b'_'));
            (name_ok && quantity::parse(v).is_some_and(|q| q >= 0))
                .then(|| (Cow::Owned(k.to_owned()), Cow::Owned(v.to_owned())))
        })
        .collect()
}

/// The well-known labels a kubelet sets on its node that it lacks
/// (`kubernetes.io/hostname`, `kubernetes.io/os`, `kubernetes.io/arch` and
/// their `beta.` forms), so that scheduling by `kubernetes.io/hostname`
/// works on simulated nodes. Labels already set are left as they are.
pub(crate) fn missing_labels(node: &Node<'_>) -> Vec<(&'static str, String)> {
    let l = &node.metadata.labels;
    let os = l.os.as_deref().unwrap_or("linux");
    let arch = l.arch.as_deref().unwrap_or("amd64");
    [
        ("kubernetes.io/hostname", &l.hostname, &*node.metadata.name),
        ("kubernetes.io/os", &l.os, os),
        ("kubernetes.io/arch", &l.arch, arch),
        ("beta.kubernetes.io/os", &l.beta_os, os),
        ("beta.kubernetes.io/arch", &l.beta_arch, arch),
    ]
    .into_iter()
    .filter(|(_, have, _)| have.is_none())
    .map(|(k, _, v)| (k, v.to_owned()))
    .collect()
}

/// The node's IP: `derived` (from its pod CIDR), unless its status lists
/// an InternalIP someone else reported. An address in the range the
/// simulated nodes' are derived in (`172.16.0.0/12`) is this kubelet's own,
/// from a block the node held before: two nodes that claimed one block at
/// once can both report from it before the later name moves, and the
/// moved node's address must move with its block.
pub(crate) fn node_ip(node: &Node<'_>, derived: Ipv4) -> Ipv4 {
    node.status
        .addresses
        .iter()
        .find(|a| a.type_ == "InternalIP")
        .filter(|a| !derived_internal_ip(a))
        .and_then(|a| Ipv4::parse(&a.address))
        .unwrap_or(derived)
}

/// Whether `a` is an InternalIP in the range this kubelet derives nodes'
/// addresses in, so its own (see [`node_ip`]).
fn derived_internal_ip(a: &Address<'_>) -> bool {
    a.type_ == "InternalIP" && Ipv4::parse(&a.address).is_some_and(crate::network::is_derived_ip)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capacity_annotation() {
        let r = parse_capacity("cpu=8, memory=32Gi,pods=110,nvidia.com/gpu=2,bad,x=1Q,=3");
        let got: Vec<(&str, &str)> = r.iter().map(|(k, v)| (&**k, &**v)).collect();
        assert_eq!(
            got,
            [
                ("cpu", "8"),
                ("memory", "32Gi"),
                ("nvidia.com/gpu", "2"),
                ("pods", "110")
            ]
        );
    }
}
