//! The pod status the kubelet writes, as typed values that compare with what
//! is stored: a pod whose status already says this gets no write.

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::view::{ConditionType, Ip, PodStatus, Str, nullable};

/// The condition types the kubelet owns; it rewrites these and leaves every
/// other condition (`DisruptionTarget`, readiness gates) as it finds it.
pub(crate) const KUBELET_CONDITIONS: [&str; 5] = [
    "PodReadyToStartContainers",
    "Initialized",
    "Ready",
    "ContainersReady",
    "PodScheduled",
];

/// One pod condition, as the kubelet writes it.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Condition<'a> {
    #[serde(borrow, rename = "type")]
    pub type_: Str<'a>,
    #[serde(borrow)]
    pub status: Str<'a>,
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<Str<'a>>,
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<Str<'a>>,
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    pub message: Option<Str<'a>>,
}

/// An entry of a list the kubelet shares with other components (a pod's or
/// a node's conditions): one it owns, typed and rewritten, or another's,
/// carried through as the text it is.
#[derive(Serialize, Debug, Clone)]
#[serde(untagged)]
pub(crate) enum Entry<'a, T> {
    Own(T),
    Other(&'a RawValue),
}

impl<T: PartialEq> PartialEq for Entry<'_, T> {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Entry::Own(a), Entry::Own(b)) => a == b,
            (Entry::Other(a), Entry::Other(b)) => a.get() == b.get(),
            _ => false,
        }
    }
}

/// A condition in a pod's list.
pub(crate) type Cond<'a> = Entry<'a, Condition<'a>>;

/// `running`, `waiting` or `terminated`.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Default)]
pub(crate) struct ContainerState<'a> {
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    pub running: Option<Running<'a>>,
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    pub waiting: Option<Waiting<'a>>,
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    pub terminated: Option<Terminated<'a>>,
}

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Running<'a> {
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<Str<'a>>,
}

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Default)]
pub(crate) struct Waiting<'a> {
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<Str<'a>>,
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    pub message: Option<Str<'a>>,
}

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Terminated<'a> {
    #[serde(default)]
    pub exit_code: i64,
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<Str<'a>>,
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<Str<'a>>,
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<Str<'a>>,
    #[serde(
        borrow,
        default,
        rename = "containerID",
        skip_serializing_if = "Option::is_none"
    )]
    pub container_id: Option<Str<'a>>,
}

/// One entry of `containerStatuses` or `initContainerStatuses`.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ContainerStatus<'a> {
    #[serde(borrow, default)]
    pub name: Str<'a>,
    #[serde(borrow, default, deserialize_with = "nullable")]
    pub state: ContainerState<'a>,
    #[serde(borrow, default, deserialize_with = "nullable")]
    pub last_state: ContainerState<'a>,
    #[serde(default)]
    pub ready: bool,
    #[serde(default)]
    pub restart_count: i64,
    #[serde(borrow, default)]
    pub image: Str<'a>,
    #[serde(borrow, default, rename = "imageID")]
    pub image_id: Str<'a>,
    #[serde(
        borrow,
        default,
        rename = "containerID",
        skip_serializing_if = "Option::is_none"
    )]
    pub container_id: Option<Str<'a>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started: Option<bool>,
}

/// The status fields the kubelet owns, in the order the API server writes
/// them.
#[derive(Serialize, Debug, Clone, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Status<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub phase: Option<Str<'a>>,
    pub conditions: Vec<Cond<'a>>,
    #[serde(rename = "hostIP", skip_serializing_if = "Option::is_none")]
    pub host_ip: Option<Str<'a>>,
    #[serde(rename = "hostIPs", skip_serializing_if = "Vec::is_empty")]
    pub host_ips: Vec<Ip<'a>>,
    #[serde(rename = "podIP", skip_serializing_if = "Option::is_none")]
    pub pod_ip: Option<Str<'a>>,
    #[serde(rename = "podIPs", skip_serializing_if = "Vec::is_empty")]
    pub pod_ips: Vec<Ip<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start_time: Option<Str<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub init_container_statuses: Vec<ContainerStatus<'a>>,
    pub container_statuses: Vec<ContainerStatus<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub qos_class: Option<Str<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub ephemeral_container_statuses: Vec<ContainerStatus<'a>>,
}

impl<'a> Status<'a> {
    /// The stored status, in the same terms (a condition the kubelet owns
    /// that does not parse is treated as another component's).
    pub(crate) fn stored(s: &PodStatus<'a>) -> Self {
        Status {
            phase: s.phase.clone(),
            conditions: s.conditions.iter().map(|raw| classify(raw)).collect(),
            host_ip: s.host_ip.clone(),
            host_ips: s.host_ips.clone(),
            pod_ip: s.pod_ip.clone(),
            pod_ips: s.pod_ips.clone(),
            start_time: s.start_time.clone(),
            init_container_statuses: s.init_container_statuses.clone(),
            container_statuses: s.container_statuses.clone(),
            qos_class: s.qos_class.clone(),
            ephemeral_container_statuses: s.ephemeral_container_statuses.clone(),
        }
    }

    /// The kubelet-owned condition of `type_`, if present.
    pub(crate) fn condition(&self, type_: &str) -> Option<&Condition<'a>> {
        self.conditions.iter().find_map(|c| match c {
            Cond::Own(c) if c.type_ == type_ => Some(c),
            _ => None,
        })
    }
}

/// Reads one stored condition as the kubelet's own or another's.
pub(crate) fn classify(raw: &RawValue) -> Cond<'_> {
    let owned = serde_json::from_str::<ConditionType<'_>>(raw.get())
        .is_ok_and(|t| KUBELET_CONDITIONS.contains(&&*t.type_));
    match owned.then(|| serde_json::from_str::<Condition<'_>>(raw.get())) {
        Some(Ok(c)) => Cond::Own(c),
        _ => Cond::Other(raw),
    }
}

/// The type of a condition in the list.
pub(crate) fn type_of<'b>(c: &'b Cond<'_>) -> Option<Str<'b>> {
    match c {
        Cond::Own(c) => Some(Str::Borrowed(&c.type_)),
        Cond::Other(raw) => serde_json::from_str::<ConditionType<'_>>(raw.get())
            .ok()
            .map(|t| Str::Owned(t.type_.into_owned())),
    }
}
