//! Kubernetes label and field selectors: parsing, canonical printing and matching;
//! resource quantities (`100m`, `2Gi`): exact parsing, arithmetic and
//! canonical printing; what objects cost a `ResourceQuota` ([`quota`]); and,
//! with the `cron` feature, CronJob schedules in IANA time zones (`cron`).
//!
//! Shared by the host (cache lists), the embedded API server (list/watch
//! filtering, validation) and the guest SDK's test cache, so that all three
//! agree on what `app=web,tier in (a,b),!canary` means; and by the API
//! server and the cronjob plugin, so that a schedule the server accepts is
//! the schedule the controller runs. The `cron` feature bundles the time
//! zone database, so only the crates that schedule pay for it.
//!
//! ```
//! use windlass_selector::LabelSelector;
//! let sel: LabelSelector = "app=web,tier in (front, back),!canary".parse().unwrap();
//! let labels = [("app", "web"), ("tier", "front")];
//! assert!(sel.matches(|k| labels.iter().find(|(n, _)| *n == k).map(|(_, v)| *v)));
//! ```

pub mod civil;
#[cfg(feature = "cron")]
pub mod cron;
mod field;
mod label;
pub mod names;
pub mod partial;
mod pod_resources;
mod quantity;
pub mod quota;
pub mod resources;

pub use field::{FieldRequirement, FieldSelector};
pub use label::{LabelSelector, Operator, Requirement, selector_text};
pub use pod_resources::{
    ContainerResources, PodResources, QosClass, has_pod_level_resources, pod_limits, pod_requests,
    qos_class,
};
pub use quantity::{Format, Quantity, QuantityError};

/// A selector string that does not parse, with the reason.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid {kind} selector {input:?}: {reason}")]
pub struct SelectorError {
    kind: &'static str,
    input: String,
    reason: String,
}

impl SelectorError {
    fn label(input: &str, reason: impl Into<String>) -> Self {
        Self {
            kind: "label",
            input: input.to_owned(),
            reason: reason.into(),
        }
    }

    fn field(input: &str, reason: impl Into<String>) -> Self {
        Self {
            kind: "field",
            input: input.to_owned(),
            reason: reason.into(),
        }
    }

    /// Why the selector was rejected, without the input.
    pub fn reason(&self) -> &str {
        &self.reason
    }
}
