//! The operator's settings for one kubelet instance (a JSON object beside
//! the plugin file), e.g. `{"containerStartEvents": false}`.

use serde::Deserialize;
use windlass_sdk::{Error, instance};

#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub(crate) struct Settings {
    /// Record `Pulled`, `Created` and `Started` for every container start,
    /// as a kubelet does (three events per container; a benchmark starting
    /// thousands of pods may turn them off). `Killing` and `BackOff` are
    /// always recorded.
    pub container_start_events: bool,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            container_start_events: true,
        }
    }
}

impl Settings {
    /// This instance's settings (the defaults when it has none).
    pub(crate) fn get() -> Result<Self, Error> {
        instance::settings()
    }
}
