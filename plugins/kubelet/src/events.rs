//! The events a kubelet records about a pod's containers: `Pulled`,
//! `Created` and `Started` for each run, `BackOff` when a restart waits,
//! `Killing` when a deleted pod's containers are stopped. Each is derived
//! from the difference between the stored status and the one being
//! written, so it is recorded once.

use windlass_sdk::{Event, ObjectRef};

use crate::pod::pod_ref;
use crate::status::Status;
use crate::view::Pod;

/// Kubelet's events for what changed between `old` and `new`.
pub(crate) fn events(
    old: &Status<'_>,
    new: &Status<'_>,
    pod: &Pod<'_>,
    start_events: bool,
) -> Vec<Event> {
    let regarding = pod_ref(pod);
    let mut out = Vec::new();
    let previous = |name: &str| {
        old.init_container_statuses
            .iter()
            .chain(&old.container_statuses)
            .chain(&old.ephemeral_container_statuses)
            .find(|s| s.name == name)
    };
    let statuses = new
        .init_container_statuses
        .iter()
        .zip(&pod.spec.init_containers)
        .chain(new.container_statuses.iter().zip(&pod.spec.containers))
        .chain(new.ephemeral_container_statuses.iter().filter_map(|s| {
            let spec = pod
                .spec
                .ephemeral_containers
                .iter()
                .find(|c| c.name == s.name);
            spec.map(|spec| (s, spec))
        }));
    for (s, spec) in statuses {
        let was = previous(&s.name);
        let new_run = was.is_none_or(|w| w.container_id != s.container_id);
        if start_events && new_run {
            let image = spec.image.as_deref().unwrap_or_default();
            for (reason, message) in [
                (
                    "Pulled",
                    format!("Container image {image:?} already present on machine"),
                ),
                ("Created", format!("Created container {}", s.name)),
                ("Started", format!("Started container {}", s.name)),
            ] {
                out.push(Event::normal(reason, message).regarding(regarding.clone()));
            }
        }
        let backing_off = s.state.waiting.is_some();
        let newly =
            was.is_none_or(|w| w.state.waiting.is_none() || w.restart_count != s.restart_count);
        if backing_off && newly {
            out.push(
                Event::warning(
                    "BackOff",
                    format!(
                        "Back-off restarting failed container {} in pod {}_{}({})",
                        s.name,
                        pod.metadata.name,
                        pod.metadata.namespace.as_deref().unwrap_or_default(),
                        pod.metadata.uid.as_deref().unwrap_or_default(),
                    ),
                )
                .regarding(regarding.clone()),
            );
        }
        if pod.metadata.deletion_timestamp.is_some()
            && s.state.running.is_some()
            && was.is_some_and(|w| w.ready && w.state.running.is_some())
        {
            out.push(killing_event(&s.name, &regarding));
        }
    }
    out
}

/// `Killing` for every container that was running and ready when the pod
/// is removed without a terminating status having been written.
pub(crate) fn killing(old: &Status<'_>, pod: &Pod<'_>) -> Vec<Event> {
    let regarding = pod_ref(pod);
    old.init_container_statuses
        .iter()
        .chain(&old.container_statuses)
        .filter(|s| s.ready && s.state.running.is_some())
        .map(|s| killing_event(&s.name, &regarding))
        .collect()
}

fn killing_event(container: &str, regarding: &ObjectRef) -> Event {
    Event::normal("Killing", format!("Stopping container {container}")).regarding(regarding.clone())
}
