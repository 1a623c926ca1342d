//! A pod's conditions as the kubelet writes them (`generateAPIPodStatus`
//! and `pkg/kubelet/status/generate.go`): other components' conditions
//! first, as they are, then the kubelet's own in its order, each keeping
//! its `lastTransitionTime` while its status stays the same.

use std::borrow::Cow;

use windlass_sdk::Time;

use crate::status::{Cond, Condition, ContainerStatus, Status, type_of};
use crate::timeline::whole_seconds;
use crate::view::{Pod, Str};

/// The pod's conditions: other components' as they are, then the kubelet's
/// (`generateAPIPodStatus`), each keeping its `lastTransitionTime` while its
/// status stays the same.
pub(crate) fn conditions<'a>(
    stored: &Status<'a>,
    pod: &Pod<'a>,
    phase: &str,
    statuses: &[&ContainerStatus<'_>],
    now: Time,
) -> Vec<Cond<'a>> {
    let terminal = matches!(phase, "Succeeded" | "Failed");
    let completed = phase == "Succeeded";
    let unready: Vec<&str> = statuses
        .iter()
        .filter(|s| !s.ready)
        .map(|s| &*s.name)
        .collect();
    let containers_ready: (bool, Option<&str>, Option<String>) = match phase {
        "Succeeded" => (false, Some("PodCompleted"), None),
        "Failed" => (false, Some("PodFailed"), None),
        _ if !unready.is_empty() => (
            false,
            Some("ContainersNotReady"),
            Some(format!(
                "containers with unready status: [{}]",
                unready.join(" ")
            )),
        ),
        _ => (true, None, None),
    };
    let ready = if containers_ready.0 {
        readiness_gates(stored, pod)
    } else {
        containers_ready.clone()
    };
    let mut out: Vec<Cond<'a>> = stored
        .conditions
        .iter()
        .filter(|c| matches!(c, Cond::Other(_)))
        .cloned()
        .collect();
    let now = whole_seconds(now).to_rfc3339();
    let mut own =
        |type_: &'static str, (status, reason, message): (bool, Option<&str>, Option<String>)| {
            let status = if status { "True" } else { "False" };
            let since = stored
                .condition(type_)
                .filter(|c| c.status == status)
                .and_then(|c| c.last_transition_time.clone())
                .unwrap_or_else(|| Cow::Owned(now.clone()));
            out.push(Cond::Own(Condition {
                type_: Cow::Borrowed(type_),
                status: Cow::Borrowed(status),
                last_transition_time: Some(since),
                reason: reason.map(|r| Cow::Owned(r.to_owned())),
                message: message.map(Cow::Owned),
            }));
        };
    own("PodReadyToStartContainers", (!terminal, None, None));
    own(
        "Initialized",
        (true, completed.then_some("PodCompleted"), None),
    );
    own("Ready", ready);
    own("ContainersReady", containers_ready);
    own("PodScheduled", (true, None, None));
    out
}

/// `Ready` when the containers are: true unless a readiness gate is not.
fn readiness_gates(
    stored: &Status<'_>,
    pod: &Pod<'_>,
) -> (bool, Option<&'static str>, Option<String>) {
    let mut unready = Vec::new();
    for gate in &pod.spec.readiness_gates {
        let found = stored
            .conditions
            .iter()
            .find(|c| type_of(c).is_some_and(|t| t == gate.condition_type));
        let status = found.map(|c| match c {
            Cond::Own(c) => c.status.to_string(),
            Cond::Other(raw) => classify_status(raw.get()).unwrap_or_default(),
        });
        match status.as_deref() {
            None => unready.push(format!(
                "corresponding condition of pod readiness gate {:?} does not exist.",
                &*gate.condition_type
            )),
            Some("True") => {}
            Some(s) => unready.push(format!(
                "the status of pod readiness gate {:?} is not \"True\", but {s}",
                &*gate.condition_type
            )),
        }
    }
    if unready.is_empty() {
        (true, None, None)
    } else {
        (
            false,
            Some("ReadinessGatesNotReady"),
            Some(unready.join(", ")),
        )
    }
}

/// The `status` of a condition given as JSON text.
fn classify_status(raw: &str) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct S<'a> {
        #[serde(borrow)]
        status: Str<'a>,
    }
    serde_json::from_str::<S<'_>>(raw)
        .ok()
        .map(|s| s.status.into_owned())
}
