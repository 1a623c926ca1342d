//! The HTTP requests a write becomes: create, server-side apply, merge
//! patch, status update, delete, each as the plugin's field manager and
//! user agent and within its write limit; and what is read back from the
//! answers (a created object's name and version, a binding's node).

use bytes::Bytes;
use http::Method;
use serde_json::{Map, Value, json};
use windlass_apply::set_meta;

use super::{Caller, WriteError, Writer};
use crate::client::ApiError;
use crate::contract::{DeleteOptions, Propagation};
use crate::discovery::ApiResource;

impl Writer {
    /// Creates `desired` in `collection`; returns what the server named it.
    pub(super) async fn create(
        &self,
        collection: &str,
        who: &Caller,
        desired: &Value,
    ) -> Result<Created, ApiError> {
        let answer = self
            .send(Method::POST, collection, who, desired, "application/json")
            .await?;
        Ok(Created::read(&answer))
    }

    /// Server-side apply of `desired` (JSON is YAML) as the plugin's field
    /// manager, taking fields over from other managers.
    pub(super) async fn server_side_apply(
        &self,
        path: &str,
        who: &Caller,
        desired: &Value,
    ) -> Result<Bytes, ApiError> {
        self.send(
            Method::PATCH,
            &format!("{path}?force=true"),
            who,
            desired,
            "application/apply-patch+yaml",
        )
        .await
    }

    pub(super) async fn merge_patch(
        &self,
        path: &str,
        who: &Caller,
        patch: &Value,
    ) -> Result<Bytes, ApiError> {
        self.send(
            Method::PATCH,
            path,
            who,
            patch,
            "application/merge-patch+json",
        )
        .await
    }

    pub(super) async fn send(
        &self,
        method: Method,
        path: &str,
        who: &Caller,
        body: &Value,
        content_type: &str,
    ) -> Result<Bytes, ApiError> {
        self.send_text(
            method,
            path,
            who,
            body.to_string().into_bytes(),
            content_type,
        )
        .await
    }

    /// [`Writer::send`] of a body already in JSON text (a plugin's patch or
    /// subresource body, sent as it wrote it: no tree is built).
    pub(super) async fn send_text(
        &self,
        method: Method,
        path: &str,
        who: &Caller,
        body: Vec<u8>,
        content_type: &str,
    ) -> Result<Bytes, ApiError> {
        let sep = if path.contains('?') { '&' } else { '?' };
        let _turn = who.throttle.wait().await;
        self.client
            .request(
                method,
                &format!("{path}{sep}{}", who.manager),
                Some(content_type),
                body,
                Some(&who.agent),
            )
            .await
    }

    pub(super) async fn update_status(
        &self,
        resource: &ApiResource,
        namespace: Option<&str>,
        name: &str,
        mut body: Value,
        who: &Caller,
    ) -> Result<(), WriteError> {
        let path = resource.object_path(namespace, name);
        if resource.has_status {
            set_meta(
                &mut body,
                "namespace",
                namespace.map(|n| Value::String(n.to_owned())),
            );
            self.send(
                Method::PUT,
                &format!("{path}/status"),
                who,
                &body,
                "application/json",
            )
            .await?;
        } else {
            // No status subresource: status is an ordinary field.
            let mut patch = json!({"status": body.get("status").cloned().unwrap_or(Value::Null)});
            if let Some(rv) = body.pointer("/metadata/resourceVersion") {
                patch["metadata"] = json!({"resourceVersion": rv});
            }
            self.merge_patch(&path, who, &patch).await?;
        }
        Ok(())
    }

    /// Deletes one object (in the background unless the options say
    /// otherwise); a 404 is success. Returns whether the server still had it.
    pub(super) async fn delete(
        &self,
        resource: &ApiResource,
        namespace: Option<&str>,
        name: &str,
        o: &DeleteOptions,
        who: &Caller,
    ) -> Result<bool, WriteError> {
        let propagation = match o.propagation.unwrap_or(Propagation::Background) {
            Propagation::Background => "Background",
            Propagation::Foreground => "Foreground",
            Propagation::Orphan => "Orphan",
        };
        let mut options =
            json!({"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": propagation});
        if let Some(grace) = o.grace_period_seconds {
            options["gracePeriodSeconds"] = json!(grace);
        }
        let mut pre = Map::new();
        if let Some(uid) = &o.uid {
            pre.insert("uid".into(), json!(uid));
        }
        if let Some(rv) = &o.resource_version {
            pre.insert("resourceVersion".into(), json!(rv));
        }
        if !pre.is_empty() {
            options["preconditions"] = Value::Object(pre);
        }
        let path = resource.object_path(namespace, name);
        let _turn = who.throttle.wait().await;
        match self
            .client
            .request(
                Method::DELETE,
                &path,
                Some("application/json"),
                options.to_string().into_bytes(),
                Some(&who.agent),
            )
            .await
        {
            Ok(_) => Ok(true),
            Err(e) if e.is_not_found() => Ok(false),
            Err(e) => Err(e.into()),
        }
    }
}

/// What the server named a created object, read from its answer without
/// building the whole object (the answer is the full object, and only
/// these two fields are needed).
#[derive(Debug, Default)]
pub(super) struct Created {
    pub(super) name: String,
    pub(super) version: Option<u64>,
}

impl Created {
    pub(super) fn read(answer: &[u8]) -> Self {
        #[derive(serde::Deserialize)]
        struct Answer<'a> {
            #[serde(borrow, default)]
            metadata: Meta<'a>,
        }
        #[derive(serde::Deserialize, Default)]
        struct Meta<'a> {
            #[serde(borrow, default)]
            name: std::borrow::Cow<'a, str>,
            #[serde(rename = "resourceVersion", borrow, default)]
            resource_version: std::borrow::Cow<'a, str>,
        }
        let answer: Answer<'_> = serde_json::from_slice(answer).unwrap_or(Answer {
            metadata: Meta::default(),
        });
        Created {
            name: answer.metadata.name.into_owned(),
            version: answer.metadata.resource_version.parse().ok(),
        }
    }
}

/// The node a Binding's text names (`target.name`), read without building
/// the whole body.
pub(super) fn binding_target(text: &str) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Binding<'a> {
        #[serde(borrow)]
        target: Option<Node<'a>>,
    }
    #[derive(serde::Deserialize)]
    struct Node<'a> {
        #[serde(borrow)]
        name: Option<std::borrow::Cow<'a, str>>,
    }
    let b: Binding<'_> = serde_json::from_str(text).ok()?;
    b.target?.name.map(std::borrow::Cow::into_owned)
}

/// Parses JSON text the runtime already checked; a failure is a bug upstream.
pub(super) fn parse(text: &str) -> Result<Value, serde_json::Error> {
    serde_json::from_str(text)
}
