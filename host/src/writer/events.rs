//! Events a plugin's outcome records, and the Warning event a failed
//! reconcile leaves on its object: core/v1 Events, correlated as client-go's
//! event recorder correlates them (`correlate.rs`: repeats bump the count of
//! the first, similar events combine, a flood about one object is dropped).

use std::time::SystemTime;

use http::Method;
use k8s_openapi::jiff::Timestamp;
use serde_json::json;

use super::Writer;
use super::correlate::{Recorded, Send, Source};
use crate::contract::{Event, EventType, Manifest};
use crate::discovery::segment;
use crate::model::{CacheReader, CachedObject, ObjectRef};

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
        self.record(manifest, key, primary, None, std::slice::from_ref(&event))
            .await;
    }

    /// Records the events of one outcome about `key` (or the objects they
    /// name), as the correlator decides, each request at once; failures are
    /// logged, never returned.
    ///
    /// An event names its object's uid, as client-go's recorder does, when
    /// the object is the primary or is in one of the plugin's caches
    /// (`live`): `kubectl describe` finds an object's events by uid, and
    /// shows none of those that lack it (a kubelet's `Started` about a pod
    /// it reconciles under its node, say).
    pub(super) async fn record(
        &self,
        manifest: &Manifest,
        key: &ObjectRef,
        primary: Option<&CachedObject>,
        live: Option<&dyn CacheReader>,
        events: &[Event],
    ) {
        if events.is_empty() {
            return;
        }
        let primary_uid = primary.map(|p| p.uid().to_owned());
        let proposed = events.iter().map(|event| {
            let regarding = event.regarding.clone().unwrap_or_else(|| key.clone());
            let uid = if regarding == *key {
                primary_uid.clone()
            } else {
                live.and_then(|l| l.get_object(&regarding))
                    .map(|o| o.uid().to_owned())
            }
            .filter(|uid| !uid.is_empty());
            let source = Source {
                plugin: manifest.name.clone(),
                regarding,
                uid,
            };
            (
                source,
                type_name(event.type_),
                event.reason.clone(),
                event.message.clone(),
            )
        });
        let sends = self
            .correlator()
            .decide_all(proposed, tokio::time::Instant::now());
        futures::future::join_all(sends.into_iter().map(|s| self.send_event(manifest, s))).await;
    }

    /// Creates or bumps one Event, and remembers it.
    async fn send_event(&self, manifest: &Manifest, send: Send) {
        let Send {
            key,
            existing,
            mut count,
            message,
        } = send;
        let who = self.caller(&manifest.name);
        let now = rfc3339(SystemTime::now());
        let similar = key.similar();
        if let Some(existing) = existing {
            let path = format!(
                "/api/v1/namespaces/{}/events/{}",
                segment(&existing.namespace),
                segment(&existing.name)
            );
            let patch = json!({"count": count, "lastTimestamp": now, "message": message});
            match self.merge_patch(&path, &who, &patch).await {
                Ok(_) => {
                    self.correlator()
                        .remember(key, Recorded { count, ..existing });
                    return;
                }
                Err(e) if e.is_not_found() => {
                    // Deleted since (or expired): start it again.
                    self.correlator().forget(&key);
                    count -= existing.count;
                }
                Err(e) => {
                    tracing::warn!(plugin = %manifest.name, error = %e, "could not update event");
                    return;
                }
            }
        }
        let regarding = &similar.source.regarding;
        let namespace = regarding
            .namespace
            .clone()
            .unwrap_or_else(|| "default".into());
        let mut involved = json!({"apiVersion": regarding.api_version, "kind": regarding.kind, "name": regarding.name});
        if let Some(ns) = &regarding.namespace {
            involved["namespace"] = json!(ns);
        }
        if let Some(uid) = &similar.source.uid {
            involved["uid"] = json!(uid);
        }
        // As client-go's recorder: the reporting controller is the source's
        // component, and the reporting instance its host, which a
        // controller's events have none of (`kubectl get events -o wide`
        // prints them as `component, instance`).
        let component = format!("windlass/{}", manifest.name);
        let body = json!({
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"generateName": format!("{}.", regarding.name), "namespace": namespace},
            "involvedObject": involved,
            "type": similar.type_, "reason": similar.reason, "message": message,
            "source": {"component": component},
            "reportingComponent": component,
            "firstTimestamp": now, "lastTimestamp": now, "count": count,
        });
        let path = format!("/api/v1/namespaces/{}/events", segment(&namespace));
        match self
            .send(Method::POST, &path, &who, &body, "application/json")
            .await
        {
            Ok(answer) => {
                let created = super::Created::read(&answer);
                if !created.name.is_empty() {
                    self.correlator().remember(
                        key,
                        Recorded {
                            namespace,
                            name: created.name,
                            count,
                        },
                    );
                }
            }
            Err(e) => {
                tracing::warn!(plugin = %manifest.name, error = %e, "could not record event")
            }
        }
    }
}

fn type_name(t: EventType) -> &'static str {
    match t {
        EventType::Normal => "Normal",
        EventType::Warning => "Warning",
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
