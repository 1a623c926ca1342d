//! Resolves a kind (`apps/v1` `ReplicaSet`) to its REST resource
//! (`/apis/apps/v1/namespaces/{ns}/replicasets`) through API discovery.
//!
//! Answers are cached per group-version; a kind not found is looked up again
//! on the next request, so a CRD created after start is found once it serves.

use std::collections::HashMap;
use std::sync::Mutex;

use serde::Deserialize;

use crate::client::{ApiClient, ApiError};
use crate::model::KindRef;

/// One REST resource: where a kind's objects live and what they support.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ApiResource {
    pub api_version: String,
    pub kind: String,
    /// The URL segment, e.g. `replicasets`.
    pub plural: String,
    pub namespaced: bool,
    /// Whether `<plural>/status` exists.
    pub has_status: bool,
}

impl ApiResource {
    fn prefix(&self) -> String {
        if self.api_version.contains('/') {
            format!("/apis/{}", self.api_version)
        } else {
            format!("/api/{}", self.api_version)
        }
    }

    /// The collection: all namespaces when `namespace` is none.
    pub fn collection_path(&self, namespace: Option<&str>) -> String {
        match namespace {
            Some(ns) if self.namespaced => {
                format!(
                    "{}/namespaces/{}/{}",
                    self.prefix(),
                    segment(ns),
                    self.plural
                )
            }
            _ => format!("{}/{}", self.prefix(), self.plural),
        }
    }

    /// One object.
    pub fn object_path(&self, namespace: Option<&str>, name: &str) -> String {
        format!("{}/{}", self.collection_path(namespace), segment(name))
    }

    /// A subresource of one object, e.g. `.../pods/web-1/binding`.
    pub fn subresource_path(&self, namespace: Option<&str>, name: &str, sub: &str) -> String {
        format!("{}/{}", self.object_path(namespace, name), segment(sub))
    }

    pub fn kind_ref(&self) -> KindRef {
        KindRef::new(&self.api_version, &self.kind)
    }
}

/// `s` as one path segment: the characters that would end or restructure
/// it (`/ ? # %`, spaces, controls, anything outside ASCII) percent-encoded.
/// Names are validated before they get here; this is the second wall.
pub fn segment(s: &str) -> std::borrow::Cow<'_, str> {
    let unsafe_byte =
        |b: u8| !b.is_ascii_graphic() || matches!(b, b'/' | b'?' | b'#' | b'%' | b'\\');
    if !s.bytes().any(unsafe_byte) {
        return s.into();
    }
    let mut out = String::with_capacity(s.len() + 8);
    for b in s.bytes() {
        if unsafe_byte(b) {
            out.push_str(&format!("%{b:02X}"));
        } else {
            out.push(b as char);
        }
    }
    out.into()
}

/// Why a kind could not be resolved.
#[derive(Debug, Clone, thiserror::Error)]
pub enum DiscoveryError {
    #[error("the API server does not serve {0} (is its CustomResourceDefinition installed?)")]
    UnknownKind(KindRef),
    #[error("discovery of {api_version} failed: {error}")]
    Request {
        api_version: String,
        error: ApiError,
    },
    #[error("discovery of {api_version} returned malformed JSON: {message}")]
    Malformed {
        api_version: String,
        message: String,
    },
}

#[derive(Deserialize)]
struct ResourceList {
    #[serde(default)]
    resources: Vec<Resource>,
}

#[derive(Deserialize)]
struct Resource {
    name: String,
    kind: String,
    #[serde(default)]
    namespaced: bool,
}

/// Parses an `APIResourceList` into the top-level resources it lists.
fn parse_resource_list(api_version: &str, body: &[u8]) -> Result<Vec<ApiResource>, String> {
    let list: ResourceList = serde_json::from_slice(body).map_err(|e| e.to_string())?;
    let subresources: Vec<&str> = list
        .resources
        .iter()
        .filter_map(|r| r.name.strip_suffix("/status"))
        .collect();
    Ok(list
        .resources
        .iter()
        .filter(|r| !r.name.contains('/'))
        .map(|r| ApiResource {
            api_version: api_version.to_owned(),
            kind: r.kind.clone(),
            plural: r.name.clone(),
            namespaced: r.namespaced,
            has_status: subresources.contains(&r.name.as_str()),
        })
        .collect())
}

/// Discovery with a cache, shared by the host's informers and writer.
#[derive(Debug)]
pub struct Discovery {
    client: ApiClient,
    known: Mutex<HashMap<String, Vec<ApiResource>>>,
}

impl Discovery {
    pub fn new(client: ApiClient) -> Self {
        Self {
            client,
            known: Mutex::new(HashMap::new()),
        }
    }

    fn cached(&self, kind: &KindRef) -> Option<ApiResource> {
        let known = self.known.lock().unwrap_or_else(|e| e.into_inner());
        known
            .get(&kind.api_version)?
            .iter()
            .find(|r| r.kind == kind.kind)
            .cloned()
    }

    /// The resource serving `kind`.
    pub async fn resolve(&self, kind: &KindRef) -> Result<ApiResource, DiscoveryError> {
        if let Some(found) = self.cached(kind) {
            return Ok(found);
        }
        let api_version = &kind.api_version;
        // Manifests and writes are validated, so this is a group/version;
        // the check here keeps any other caller from reaching another URL.
        if let Err(message) = windlass_selector::names::api_version(api_version) {
            return Err(DiscoveryError::Malformed {
                api_version: api_version.clone(),
                message,
            });
        }
        let path = if api_version.contains('/') {
            format!("/apis/{api_version}")
        } else {
            format!("/api/{api_version}")
        };
        let body = match self.client.get(&path).await {
            Ok(body) => body,
            Err(e) if e.is_not_found() => return Err(DiscoveryError::UnknownKind(kind.clone())),
            Err(error) => {
                return Err(DiscoveryError::Request {
                    api_version: api_version.clone(),
                    error,
                });
            }
        };
        let resources = parse_resource_list(api_version, &body).map_err(|message| {
            DiscoveryError::Malformed {
                api_version: api_version.clone(),
                message,
            }
        })?;
        self.known
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(api_version.clone(), resources);
        self.cached(kind)
            .ok_or_else(|| DiscoveryError::UnknownKind(kind.clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_resources_and_their_status_subresource() {
        let body = br#"{"kind":"APIResourceList","groupVersion":"apps/v1","resources":[
            {"name":"replicasets","singularName":"replicaset","namespaced":true,"kind":"ReplicaSet","verbs":["get"]},
            {"name":"replicasets/status","namespaced":true,"kind":"ReplicaSet","verbs":["get"]},
            {"name":"replicasets/scale","namespaced":true,"group":"autoscaling","version":"v1","kind":"Scale","verbs":["get"]},
            {"name":"controllerrevisions","namespaced":true,"kind":"ControllerRevision","verbs":["get"]}]}"#;
        let list = parse_resource_list("apps/v1", body).unwrap();
        assert_eq!(list.len(), 2);
        let rs = &list[0];
        assert!(rs.has_status && rs.namespaced && !list[1].has_status);
        assert_eq!(
            rs.collection_path(Some("ns")),
            "/apis/apps/v1/namespaces/ns/replicasets"
        );
        assert_eq!(rs.collection_path(None), "/apis/apps/v1/replicasets");
        assert_eq!(
            rs.object_path(Some("ns"), "web"),
            "/apis/apps/v1/namespaces/ns/replicasets/web"
        );
        let node = ApiResource {
            api_version: "v1".into(),
            kind: "Node".into(),
            plural: "nodes".into(),
            namespaced: false,
            has_status: true,
        };
        assert_eq!(node.object_path(Some("ignored"), "n1"), "/api/v1/nodes/n1");
        assert_eq!(
            rs.object_path(Some("a/b"), "x?y=z#w"),
            "/apis/apps/v1/namespaces/a%2Fb/replicasets/x%3Fy=z%23w"
        );
    }
}
