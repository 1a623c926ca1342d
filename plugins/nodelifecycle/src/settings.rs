//! The operator's settings for one instance (a JSON object beside the
//! plugin file), e.g. `{"nodeMonitorGracePeriod": "40s"}`, in Kubernetes
//! duration strings as kube-controller-manager's flags take them.

use std::time::Duration;

use serde::{Deserialize, Deserializer};
use windlass_sdk::{Error, instance};

use windlass_sdk::duration;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub(crate) struct Settings {
    /// How long a node may go without a heartbeat (its `Ready` condition's
    /// or its Lease's) before its conditions become `Unknown`
    /// (`--node-monitor-grace-period`, 50 s since 1.32).
    #[serde(deserialize_with = "positive")]
    pub node_monitor_grace_period: Duration,
    /// How long a new node may go without posting any status
    /// (`--node-startup-grace-period`).
    #[serde(deserialize_with = "positive")]
    pub node_startup_grace_period: Duration,
    /// How long a pod stays bound to a node that does not exist before it
    /// is deleted (PodGC's quarantine).
    #[serde(deserialize_with = "go_duration")]
    pub orphaned_pod_quarantine: Duration,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            node_monitor_grace_period: Duration::from_secs(50),
            node_startup_grace_period: Duration::from_secs(60),
            orphaned_pod_quarantine: Duration::from_secs(40),
        }
    }
}

impl Settings {
    /// This instance's settings (the defaults when it has none).
    pub(crate) fn get() -> Result<Self, Error> {
        instance::settings()
    }
}

fn go_duration<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
    let text = String::deserialize(d)?;
    duration::parse(&text).ok_or_else(|| {
        serde::de::Error::custom(format!(
            "{text:?} is not a duration such as \"50s\" or \"1m30s\""
        ))
    })
}

fn positive<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
    let grace = go_duration(d)?;
    if grace.is_zero() {
        return Err(serde::de::Error::custom(
            "a grace period must be more than 0s",
        ));
    }
    Ok(grace)
}
