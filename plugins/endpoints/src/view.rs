//! The parts of Services and Pods the controller reads.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct Meta {
    pub(crate) name: String,
    pub(crate) namespace: Option<String>,
    pub(crate) uid: Option<String>,
    pub(crate) deletion_timestamp: Option<String>,
    pub(crate) labels: Option<BTreeMap<String, String>>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
pub(crate) struct Service {
    pub(crate) metadata: Meta,
    pub(crate) spec: ServiceSpec,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct ServiceSpec {
    #[serde(rename = "type")]
    pub(crate) type_: Option<String>,
    #[serde(rename = "clusterIP")]
    pub(crate) cluster_ip: Option<String>,
    pub(crate) selector: Option<BTreeMap<String, String>>,
    pub(crate) ports: Option<Vec<ServicePort>>,
    pub(crate) publish_not_ready_addresses: Option<bool>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct ServicePort {
    pub(crate) name: Option<String>,
    pub(crate) port: i64,
    /// A number or a container port's name; the port itself when absent.
    pub(crate) target_port: Option<Value>,
    pub(crate) protocol: Option<String>,
    pub(crate) app_protocol: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
pub(crate) struct Pod {
    pub(crate) metadata: Meta,
    pub(crate) spec: PodSpec,
    pub(crate) status: PodStatus,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct PodSpec {
    pub(crate) node_name: Option<String>,
    pub(crate) containers: Option<Vec<Container>>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
pub(crate) struct Container {
    pub(crate) ports: Option<Vec<ContainerPort>>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct ContainerPort {
    pub(crate) name: Option<String>,
    pub(crate) container_port: i64,
    pub(crate) protocol: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct PodStatus {
    pub(crate) phase: Option<String>,
    #[serde(rename = "podIP")]
    pub(crate) pod_ip: Option<String>,
    pub(crate) conditions: Option<Vec<Condition>>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
pub(crate) struct Condition {
    #[serde(rename = "type")]
    pub(crate) type_: String,
    pub(crate) status: String,
}

impl Pod {
    /// `Ready=True`.
    pub(crate) fn is_ready(&self) -> bool {
        self.status
            .conditions
            .iter()
            .flatten()
            .any(|c| c.type_ == "Ready" && c.status == "True")
    }

    /// `Succeeded` or `Failed`: it will not run again.
    pub(crate) fn is_terminal(&self) -> bool {
        matches!(self.status.phase.as_deref(), Some("Succeeded" | "Failed"))
    }

    /// The container port a Service port's `targetPort` names, for
    /// `protocol` (kube's `FindPort`).
    pub(crate) fn find_port(&self, name: &str, protocol: &str) -> Option<i64> {
        self.spec
            .containers
            .iter()
            .flatten()
            .flat_map(|c| c.ports.iter().flatten())
            .find(|p| {
                p.name.as_deref() == Some(name)
                    && p.protocol.as_deref().unwrap_or("TCP") == protocol
            })
            .map(|p| p.container_port)
    }
}

/// Whether every pair of `selector` is among `labels` (a Service's selector
/// is a plain map).
pub(crate) fn selects(
    selector: &BTreeMap<String, String>,
    labels: Option<&BTreeMap<String, String>>,
) -> bool {
    selector
        .iter()
        .all(|(k, v)| labels.and_then(|l| l.get(k)) == Some(v))
}
