//! Events a plugin's outcome records, and the Warning event a failed
//! reconcile leaves on its object: core/v1 Events, where a repeat of the
//! same event bumps `count` and `lastTimestamp` of the first instead of
//! making another (as client-go's event correlator aggregates them).

use std::time::SystemTime;

use http::Method;
use k8s_openapi::jiff::Timestamp;
use serde_json::json;

use super::Writer;
use crate::contract::{Event, EventType, Manifest};
use crate::discovery::segment;
use crate::model::{CachedObject, ObjectRef};

/// What makes two events the same event, for aggregation.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) struct EventKey {
    plugin: String,
    regarding: ObjectRef,
    type_: &'static str,
    reason: String,
    message: String,
}

/// Remembered events for aggregation; past this the memory starts over.
const MAX_REMEMBERED_EVENTS: usize = 4096;

impl Writer {
    /// Records a Warning event on `key` for a failed reconcile, so that
    /// `kubectl describe` shows it next to the object. Repeats aggregate.
    pub async fn report_failure(
        &self,
        manifest: &Manifest,
        key: &ObjectRef,
        primary: Option<&CachedObject>,
        message: String,
    ) {
        let event = Event {
            type_: EventType::Warning,
            reason: "ReconcileFailed".into(),
            message,
            regarding: None,
        };
        self.record(manifest, key, primary, &event).await;
    }

    /// Records an event; failures are logged, never returned.
    pub(super) async fn record(
        &self,
        manifest: &Manifest,
        key: &ObjectRef,
        primary: Option<&CachedObject>,
        event: &Event,
    ) {
        let regarding = event.regarding.clone().unwrap_or_else(|| key.clone());
        let uid = (regarding == *key)
            .then(|| primary.map(|p| p.uid().to_owned()))
            .flatten();
        let type_ = match event.type_ {
            EventType::Normal => "Normal",
            EventType::Warning => "Warning",
        };
        let event_key = EventKey {
            plugin: manifest.name.clone(),
            regarding: regarding.clone(),
            type_,
            reason: event.reason.clone(),
            message: event.message.clone(),
        };
        let namespace = regarding
            .namespace
            .clone()
            .unwrap_or_else(|| "default".into());
        let who = self.caller(&manifest.name);
        let now = rfc3339(SystemTime::now());
        let previous = self
            .events
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&event_key)
            .cloned();
        if let Some((ns, name, count)) = previous {
            let path = format!(
                "/api/v1/namespaces/{}/events/{}",
                segment(&ns),
                segment(&name)
            );
            let patch = json!({"count": count + 1, "lastTimestamp": now});
            match self.merge_patch(&path, &who, &patch).await {
                Ok(_) => {
                    self.remember(event_key, ns, name, count + 1);
                    return;
                }
                Err(e) if e.is_not_found() => {}
                Err(e) => {
                    tracing::warn!(plugin = %manifest.name, error = %e, "could not update event");
                    return;
                }
            }
        }
        let mut involved = json!({"apiVersion": regarding.api_version, "kind": regarding.kind, "name": regarding.name});
        if let Some(ns) = &regarding.namespace {
            involved["namespace"] = json!(ns);
        }
        if let Some(uid) = uid {
            involved["uid"] = json!(uid);
        }
        let component = format!("windlass/{}", manifest.name);
        let body = json!({
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"generateName": format!("{}.", regarding.name), "namespace": namespace},
            "involvedObject": involved,
            "type": type_, "reason": event.reason, "message": event.message,
            "source": {"component": component},
            "reportingComponent": component, "reportingInstance": component,
            "firstTimestamp": now, "lastTimestamp": now, "count": 1,
        });
        let path = format!("/api/v1/namespaces/{}/events", segment(&namespace));
        match self
            .send(Method::POST, &path, &who, &body, "application/json")
            .await
        {
            Ok(answer) => {
                let created = super::Created::read(&answer);
                if !created.name.is_empty() {
                    self.remember(event_key, namespace, created.name, 1);
                }
            }
            Err(e) => {
                tracing::warn!(plugin = %manifest.name, error = %e, "could not record event")
            }
        }
    }

    fn remember(&self, key: EventKey, namespace: String, name: String, count: u32) {
        let mut events = self.events.lock().unwrap_or_else(|e| e.into_inner());
        if events.len() >= MAX_REMEMBERED_EVENTS && !events.contains_key(&key) {
            events.clear();
        }
        events.insert(key, (namespace, name, count));
    }
}

/// `SystemTime` as an RFC 3339 UTC timestamp with second precision (the
/// `Time` of an Event's timestamps), through the same `jiff` that the
/// Lease's `MicroTime` uses.
fn rfc3339(t: SystemTime) -> String {
    Timestamp::try_from(t)
        .unwrap_or(Timestamp::UNIX_EPOCH)
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn timestamps_are_rfc3339() {
        assert_eq!(rfc3339(SystemTime::UNIX_EPOCH), "1970-01-01T00:00:00Z");
        let t = SystemTime::UNIX_EPOCH + Duration::from_secs(1_795_000_000);
        assert_eq!(rfc3339(t), "2026-11-18T11:06:40Z");
        let leap = SystemTime::UNIX_EPOCH + Duration::from_secs(951_782_400);
        assert_eq!(rfc3339(leap), "2000-02-29T00:00:00Z");
    }
}
