//! Carries out a plugin's outcome against the API server.
//!
//! - `apply` creates the object if the cache does not have it (or when it
//!   only has `generateName`), else sends a JSON merge patch of the given
//!   fields carrying the cached resourceVersion as a precondition; when the
//!   live object already has every given field nothing is sent at all.
//! - Children of `owns` kinds get a controller owner reference to the
//!   primary object (with `blockOwnerDeletion`).
//! - `prune-owned` deletes owned children that no `apply`/`replace` named.
//! - A `409 Conflict` or `404 Not Found` means the cache was behind: the
//!   outcome stops there and the key is reconciled again from fresh state.
//! - Events become core/v1 Events; a repeat bumps the count of the first.
//!
//! Every request carries a field manager and user agent naming the plugin.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use http::Method;
use serde_json::{Map, Value, json};

use crate::client::{ApiClient, ApiError};
use crate::contract::{
    Delete, DeleteOptions, Event, EventType, Manifest, Outcome, Propagation, SubresourceCreate,
    Write,
};
use crate::discovery::{ApiResource, Discovery, DiscoveryError, segment};
use crate::model::{CacheReader, CachedObject, KindRef, ObjectRef};

/// Why an outcome could not be carried out in full.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    /// The cache was behind the server (409 or 404): reconcile again soon.
    #[error("stale: {0}")]
    Stale(ApiError),
    /// A binding would act on index totals that changed since the reconcile
    /// read them (another binding to the same node came first).
    #[error("stale: {0}")]
    Assumed(String),
    #[error("{0}")]
    Api(ApiError),
    #[error("{0}")]
    Discovery(#[from] DiscoveryError),
    #[error("{0}")]
    Invalid(String),
}

impl From<serde_json::Error> for WriteError {
    fn from(e: serde_json::Error) -> Self {
        WriteError::Invalid(e.to_string())
    }
}

impl From<ApiError> for WriteError {
    fn from(e: ApiError) -> Self {
        if e.code == 409 || e.code == 404 {
            WriteError::Stale(e)
        } else {
            WriteError::Api(e)
        }
    }
}

/// What one outcome did, for expectations and metrics.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Applied {
    /// Objects created (named by the server for `generateName`).
    pub created: Vec<ObjectRef>,
    /// The highest resourceVersion the server gave a created object: once a
    /// cache has seen this version, a created object missing from it was
    /// deleted since.
    pub created_version: Option<u64>,
    /// Objects deleted (explicitly or by pruning).
    pub deleted: Vec<ObjectRef>,
    /// Requests sent; a converged apply sends none.
    pub requests: usize,
    /// The position of the write that failed, when one did.
    pub failed_at: Option<u32>,
}

impl Applied {
    /// Notes a create: `r` names the object, `response` is what the server
    /// answered.
    fn created(&mut self, r: ObjectRef, response: &Value) {
        let version = response
            .pointer("/metadata/resourceVersion")
            .and_then(Value::as_str)
            .and_then(|v| v.parse::<u64>().ok());
        self.created_version = self.created_version.max(version);
        self.created.push(r);
        self.requests += 1;
    }
}

/// The context of one outcome.
pub struct Target<'a> {
    pub manifest: &'a Manifest,
    pub key: &'a ObjectRef,
    /// The primary object as cached (owner of created children).
    pub primary: Option<&'a CachedObject>,
    /// Owned children as cached, with their kinds.
    pub owned: &'a [(KindRef, Arc<CachedObject>)],
    /// The plugin's view of the caches, to find live objects.
    pub live: &'a dyn CacheReader,
    /// Told about each binding before it is sent and after it is answered,
    /// so the plugin's index can "assume" it (see `controller.rs`).
    pub assume: Option<&'a dyn Assume>,
}

/// Makes a binding show in the plugin's index before the informer reports
/// it, and refuses one that would act on totals that changed since the
/// reconcile read them.
pub trait Assume: Send + Sync {
    /// Called before `pod` is bound to `node`; an error is a conflict and
    /// nothing is sent.
    fn before_bind(&self, pod: &ObjectRef, node: &str) -> Result<(), String>;
    /// Called with the server's answer to that binding.
    fn after_bind(&self, pod: &ObjectRef, bound: bool);
}

/// Executes outcomes; shared by all plugins.
pub struct Writer {
    client: ApiClient,
    discovery: Arc<Discovery>,
    events: Mutex<HashMap<EventKey, (String, String, u32)>>,
}

impl std::fmt::Debug for Writer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Writer").finish_non_exhaustive()
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct EventKey {
    plugin: String,
    regarding: ObjectRef,
    type_: &'static str,
    reason: String,
    message: String,
}

/// Remembered events for aggregation; past this the memory starts over.
const MAX_REMEMBERED_EVENTS: usize = 4096;

impl Writer {
    pub fn new(client: ApiClient, discovery: Arc<Discovery>) -> Self {
        Self {
            client,
            discovery,
            events: Mutex::new(HashMap::new()),
        }
    }

    /// Carries out `outcome` in order; stops at the first failure. What was
    /// done before a failure is in `applied` too.
    pub async fn execute(
        &self,
        t: &Target<'_>,
        outcome: &Outcome,
        applied: &mut Applied,
    ) -> Result<(), WriteError> {
        let plugin = &t.manifest.name;
        let (agent, manager) = identity(plugin);
        let mut kept: HashSet<ObjectRef> = HashSet::new();
        let default_ns = t.key.namespace.as_deref();

        for (i, write) in outcome.writes.iter().enumerate() {
            if let Err(e) = self
                .execute_one(t, write, default_ns, &manager, &agent, &mut kept, applied)
                .await
            {
                applied.failed_at = Some(i as u32);
                return Err(e);
            }
        }

        if outcome.prune_owned {
            for (kind, child) in t.owned {
                let r = ObjectRef {
                    api_version: kind.api_version.clone(),
                    kind: kind.kind.clone(),
                    namespace: child.key().namespace.map(str::to_owned),
                    name: child.key().name.to_string(),
                };
                if child.is_deleting() || kept.contains(&r) {
                    continue;
                }
                let resource = self.discovery.resolve(kind).await?;
                let options = DeleteOptions {
                    uid: Some(child.uid().to_owned()),
                    ..DeleteOptions::default()
                };
                if self
                    .delete(&resource, r.namespace.as_deref(), &r.name, &options, &agent)
                    .await?
                {
                    applied.requests += 1;
                }
                applied.deleted.push(r);
            }
        }

        for event in &outcome.events {
            self.record(t.manifest, t.key, t.primary, event).await;
        }
        Ok(())
    }

    /// Carries out one write of an outcome.
    #[allow(clippy::too_many_arguments)]
    async fn execute_one(
        &self,
        t: &Target<'_>,
        write: &Write,
        default_ns: Option<&str>,
        manager: &str,
        agent: &str,
        kept: &mut HashSet<ObjectRef>,
        applied: &mut Applied,
    ) -> Result<(), WriteError> {
        let (api_version, kind) = write.kind();
        let kind_ref = KindRef::new(api_version, kind);
        let resource = self.discovery.resolve(&kind_ref).await?;
        let ns_of = |r: Option<&str>| -> Result<Option<String>, Box<WriteError>> {
            if !resource.namespaced {
                return Ok(None);
            }
            r.or(default_ns).map(str::to_owned).map(Some).ok_or_else(|| {
                Box::new(WriteError::Invalid(format!(
                    "{kind} is namespaced, but the write names no namespace (and the reconciled object has none)"
                )))
            })
        };
        match write {
            Write::Apply(object) => {
                let mut desired: Value = parse(object.text())?;
                let namespace = ns_of(object.header().namespace.as_deref()).map_err(|e| *e)?;
                set_meta(
                    &mut desired,
                    "namespace",
                    namespace.clone().map(Value::String),
                );
                let owner = t
                    .manifest
                    .owns_kind(api_version, kind)
                    .then_some(t.primary)
                    .flatten()
                    .map(|p| owner_reference(&t.manifest.reconciles.kind, t.key, p));
                let collection = resource.collection_path(namespace.as_deref());
                let Some(name) = object.header().name.clone() else {
                    let created = self
                        .create(&collection, manager, agent, desired, owner.as_ref())
                        .await?;
                    let name = created
                        .pointer("/metadata/name")
                        .and_then(Value::as_str)
                        .unwrap_or_default();
                    applied.created(
                        ObjectRef {
                            api_version: api_version.to_owned(),
                            kind: kind.to_owned(),
                            namespace,
                            name: name.to_owned(),
                        },
                        &created,
                    );
                    return Ok(());
                };
                let target = ObjectRef {
                    api_version: api_version.to_owned(),
                    kind: kind.to_owned(),
                    namespace: namespace.clone(),
                    name: name.clone(),
                };
                kept.insert(target.clone());
                if !t.live.holds(&kind_ref) {
                    // A kind the plugin only writes: no cache says whether
                    // it exists, so the server converges it (server-side
                    // apply, as the plugin's own field manager).
                    let path = resource.object_path(namespace.as_deref(), &name);
                    self.server_side_apply(&path, manager, agent, &desired)
                        .await?;
                    applied.requests += 1;
                    return Ok(());
                }
                match t.live.get(&target) {
                    None => {
                        let created = self
                            .create(&collection, manager, agent, desired, owner.as_ref())
                            .await?;
                        applied.created(target, &created);
                    }
                    Some(live) => {
                        let live: Value = parse(&live)?;
                        let Some(patch) =
                            converge_patch(desired, &live, owner.as_ref(), resource.has_status)
                        else {
                            return Ok(());
                        };
                        let path = resource.object_path(namespace.as_deref(), &name);
                        self.merge_patch(&path, manager, agent, &patch).await?;
                        applied.requests += 1;
                    }
                }
            }
            Write::Replace(object) => {
                let r = object
                    .object_ref(default_ns)
                    .ok_or_else(|| WriteError::Invalid("replace without a name".into()))?;
                let mut body: Value = parse(object.text())?;
                let namespace = ns_of(object.header().namespace.as_deref()).map_err(|e| *e)?;
                set_meta(&mut body, "namespace", namespace.clone().map(Value::String));
                let path = resource.object_path(namespace.as_deref(), &r.name);
                self.send(
                    Method::PUT,
                    &path,
                    manager,
                    agent,
                    &body,
                    "application/json",
                )
                .await?;
                applied.requests += 1;
                kept.insert(ObjectRef { namespace, ..r });
            }
            Write::UpdateStatus(object) => {
                let r = object
                    .object_ref(default_ns)
                    .ok_or_else(|| WriteError::Invalid("status update without a name".into()))?;
                let body: Value = parse(object.text())?;
                let namespace = ns_of(object.header().namespace.as_deref()).map_err(|e| *e)?;
                self.update_status(
                    &resource,
                    namespace.as_deref(),
                    &r.name,
                    body,
                    manager,
                    agent,
                )
                .await?;
                applied.requests += 1;
            }
            Write::MergePatch(p) => {
                let patch: Value = parse(p.patch.get())?;
                let namespace = ns_of(p.target.namespace.as_deref()).map_err(|e| *e)?;
                let path = match p.subresource.as_deref() {
                    Some("status") if !resource.has_status => {
                        // No status subresource: status is an ordinary field.
                        resource.object_path(namespace.as_deref(), &p.target.name)
                    }
                    Some(sub) => {
                        resource.subresource_path(namespace.as_deref(), &p.target.name, sub)
                    }
                    None => resource.object_path(namespace.as_deref(), &p.target.name),
                };
                self.merge_patch(&path, manager, agent, &patch).await?;
                applied.requests += 1;
            }
            Write::Delete(Delete { target, options }) => {
                let namespace = ns_of(target.namespace.as_deref()).map_err(|e| *e)?;
                if self
                    .delete(
                        &resource,
                        namespace.as_deref(),
                        &target.name,
                        options,
                        agent,
                    )
                    .await?
                {
                    applied.requests += 1;
                }
                applied.deleted.push(ObjectRef {
                    namespace,
                    ..target.clone()
                });
            }
            Write::CreateSubresource(SubresourceCreate {
                target,
                subresource,
                body,
            }) => {
                let namespace = ns_of(target.namespace.as_deref()).map_err(|e| *e)?;
                let body: Value = parse(body.get())?;
                let path =
                    resource.subresource_path(namespace.as_deref(), &target.name, subresource);
                let pod = ObjectRef {
                    namespace: namespace.clone(),
                    ..target.clone()
                };
                let binding = (api_version == "v1" && kind == "Pod" && subresource == "binding")
                    .then(|| body.pointer("/target/name").and_then(Value::as_str))
                    .flatten()
                    .zip(t.assume);
                if let Some((node, assume)) = binding {
                    assume
                        .before_bind(&pod, node)
                        .map_err(WriteError::Assumed)?;
                }
                let sent = self
                    .send(
                        Method::POST,
                        &path,
                        manager,
                        agent,
                        &body,
                        "application/json",
                    )
                    .await;
                if let Some((_, assume)) = binding {
                    assume.after_bind(&pod, sent.is_ok());
                }
                sent?;
                applied.requests += 1;
            }
        }
        Ok(())
    }

    /// Adds the plugin's finalizer to the primary object.
    pub async fn add_finalizer(
        &self,
        manifest: &Manifest,
        key: &ObjectRef,
        object: &CachedObject,
        finalizer: &str,
    ) -> Result<(), WriteError> {
        let mut list: Vec<&str> = object.finalizers().collect();
        list.push(finalizer);
        self.set_finalizers(manifest, key, object, list).await
    }

    /// Removes the plugin's finalizer from the primary object.
    pub async fn remove_finalizer(
        &self,
        manifest: &Manifest,
        key: &ObjectRef,
        object: &CachedObject,
        finalizer: &str,
    ) -> Result<(), WriteError> {
        let list: Vec<&str> = object.finalizers().filter(|f| *f != finalizer).collect();
        self.set_finalizers(manifest, key, object, list).await
    }

    /// Sets the finalizer list, with the cached resourceVersion as a
    /// precondition so nobody else's change is overwritten.
    async fn set_finalizers(
        &self,
        manifest: &Manifest,
        key: &ObjectRef,
        object: &CachedObject,
        finalizers: Vec<&str>,
    ) -> Result<(), WriteError> {
        let resource = self.discovery.resolve(&key.kind_ref()).await?;
        let path = resource.object_path(key.namespace.as_deref(), &key.name);
        let patch = json!({"metadata": {"finalizers": finalizers, "resourceVersion": object.resource_version()}});
        let (agent, manager) = identity(&manifest.name);
        self.merge_patch(&path, &manager, &agent, &patch).await?;
        Ok(())
    }

    /// Creates `desired` in `collection`, with the controller owner
    /// reference when there is one; returns the server's answer.
    async fn create(
        &self,
        collection: &str,
        manager: &str,
        agent: &str,
        mut desired: Value,
        owner: Option<&Value>,
    ) -> Result<Value, ApiError> {
        if let Some(owner) = owner {
            add_owner(&mut desired, owner);
        }
        self.send(
            Method::POST,
            collection,
            manager,
            agent,
            &desired,
            "application/json",
        )
        .await
    }

    /// Server-side apply of `desired` (JSON is YAML) as the plugin's field
    /// manager, taking fields over from other managers.
    async fn server_side_apply(
        &self,
        path: &str,
        manager: &str,
        agent: &str,
        desired: &Value,
    ) -> Result<Value, ApiError> {
        self.send(
            Method::PATCH,
            &format!("{path}?force=true"),
            manager,
            agent,
            desired,
            "application/apply-patch+yaml",
        )
        .await
    }

    async fn merge_patch(
        &self,
        path: &str,
        manager: &str,
        agent: &str,
        patch: &Value,
    ) -> Result<Value, ApiError> {
        self.send(
            Method::PATCH,
            path,
            manager,
            agent,
            patch,
            "application/merge-patch+json",
        )
        .await
    }

    async fn send(
        &self,
        method: Method,
        path: &str,
        manager: &str,
        agent: &str,
        body: &Value,
        content_type: &str,
    ) -> Result<Value, ApiError> {
        let sep = if path.contains('?') { '&' } else { '?' };
        let bytes = self
            .client
            .request(
                method,
                &format!("{path}{sep}{manager}"),
                Some(content_type),
                body.to_string().into_bytes(),
                Some(agent),
            )
            .await?;
        Ok(serde_json::from_slice(&bytes).unwrap_or(Value::Null))
    }

    async fn update_status(
        &self,
        resource: &ApiResource,
        namespace: Option<&str>,
        name: &str,
        mut body: Value,
        manager: &str,
        agent: &str,
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
                manager,
                agent,
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
            self.merge_patch(&path, manager, agent, &patch).await?;
        }
        Ok(())
    }

    /// Deletes one object (in the background unless the options say
    /// otherwise); a 404 is success. Returns whether the server still had it.
    async fn delete(
        &self,
        resource: &ApiResource,
        namespace: Option<&str>,
        name: &str,
        o: &DeleteOptions,
        agent: &str,
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
        match self
            .client
            .request(
                Method::DELETE,
                &path,
                Some("application/json"),
                options.to_string().into_bytes(),
                Some(agent),
            )
            .await
        {
            Ok(_) => Ok(true),
            Err(e) if e.is_not_found() => Ok(false),
            Err(e) => Err(e.into()),
        }
    }

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
    async fn record(
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
        let (agent, manager) = identity(&manifest.name);
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
            match self.merge_patch(&path, &manager, &agent, &patch).await {
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
            .send(
                Method::POST,
                &path,
                &manager,
                &agent,
                &body,
                "application/json",
            )
            .await
        {
            Ok(created) => {
                if let Some(name) = created.pointer("/metadata/name").and_then(Value::as_str) {
                    self.remember(event_key, namespace, name.to_owned(), 1);
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

/// The user agent and field-manager query parameter naming a plugin.
fn identity(plugin: &str) -> (String, String) {
    (
        format!("windlass/{plugin}"),
        format!("fieldManager=windlass-{plugin}"),
    )
}

/// Parses JSON text the runtime already checked; a failure is a bug upstream.
fn parse(text: &str) -> Result<Value, serde_json::Error> {
    serde_json::from_str(text)
}

/// The controller owner reference children of `key` get.
fn owner_reference(kind: &KindRef, key: &ObjectRef, primary: &CachedObject) -> Value {
    json!({
        "apiVersion": kind.api_version,
        "kind": kind.kind,
        "name": key.name,
        "uid": primary.uid(),
        "controller": true,
        "blockOwnerDeletion": true,
    })
}

fn set_meta(object: &mut Value, field: &str, value: Option<Value>) {
    let (Some(value), Some(obj)) = (value, object.as_object_mut()) else {
        return;
    };
    let meta = obj
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Some(meta) = meta.as_object_mut() {
        meta.insert(field.to_owned(), value);
    }
}

/// Adds `owner` to the object's owner references unless one with its uid is
/// there; never adds a second controller.
fn add_owner(object: &mut Value, owner: &Value) {
    let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) else {
        return;
    };
    let refs = meta
        .entry("ownerReferences")
        .or_insert_with(|| Value::Array(Vec::new()));
    let Some(refs) = refs.as_array_mut() else {
        return;
    };
    let has_controller = refs.iter().any(|r| r["controller"] == json!(true));
    if refs.iter().any(|r| r["uid"] == owner["uid"]) || has_controller {
        return;
    }
    refs.push(owner.clone());
}

/// The merge patch that brings `live` to have every field of `desired`, or
/// `None` when it already has them. The patch carries the live
/// resourceVersion as a precondition, and keeps the live owner references
/// (a merge patch replaces lists whole).
fn converge_patch(
    mut desired: Value,
    live: &Value,
    owner: Option<&Value>,
    has_status: bool,
) -> Option<Value> {
    let obj = desired.as_object_mut()?;
    if has_status {
        // The main endpoint ignores status; `update-status` is for that.
        obj.remove("status");
    }
    if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        for server_owned in [
            "resourceVersion",
            "uid",
            "creationTimestamp",
            "generation",
            "managedFields",
            "selfLink",
            "deletionTimestamp",
        ] {
            meta.remove(server_owned);
        }
        let mut refs = live
            .pointer("/metadata/ownerReferences")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let wanted: Vec<Value> = meta
            .remove("ownerReferences")
            .and_then(|v| v.as_array().cloned())
            .unwrap_or_default()
            .into_iter()
            .chain(owner.cloned())
            .collect();
        let before = refs.len();
        for r in wanted {
            let dup = refs.iter().any(|l| l["uid"] == r["uid"]);
            let second_controller = r["controller"] == json!(true)
                && refs.iter().any(|l| l["controller"] == json!(true));
            if !dup && !second_controller {
                refs.push(r);
            }
        }
        if refs.len() != before {
            meta.insert("ownerReferences".into(), Value::Array(refs));
        }
    }
    if is_subset(&desired, live) {
        return None;
    }
    if let Some(rv) = live.pointer("/metadata/resourceVersion") {
        set_meta(&mut desired, "resourceVersion", Some(rv.clone()));
    }
    Some(desired)
}

/// True when every field of `want` is in `have` with the same value; lists
/// match element by element (so server-side defaults inside list items do
/// not count as a difference).
fn is_subset(want: &Value, have: &Value) -> bool {
    match (want, have) {
        (Value::Object(w), Value::Object(h)) => w.iter().all(|(k, v)| {
            h.get(k).is_some_and(|hv| is_subset(v, hv)) || (v.is_null() && !h.contains_key(k))
        }),
        (Value::Array(w), Value::Array(h)) => {
            w.len() == h.len() && w.iter().zip(h).all(|(a, b)| is_subset(a, b))
        }
        (w, h) => w == h,
    }
}

/// `SystemTime` as an RFC 3339 UTC timestamp with second precision.
pub(crate) fn rfc3339(t: SystemTime) -> String {
    let secs = t
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn subset_ignores_server_defaults_in_list_items() {
        let want = json!({"spec": {"containers": [{"name": "web", "image": "nginx"}]}});
        let have = json!({"spec": {"containers": [{"name": "web", "image": "nginx", "terminationMessagePath": "/dev/termination-log"}], "dnsPolicy": "ClusterFirst"}});
        assert!(is_subset(&want, &have));
        let changed = json!({"spec": {"containers": [{"name": "web", "image": "nginx:2"}]}});
        assert!(!is_subset(&changed, &have));
        let more = json!({"spec": {"containers": [{"name": "a"}, {"name": "b"}]}});
        assert!(!is_subset(&more, &have));
        assert!(is_subset(&json!({"x": null}), &json!({})));
    }

    #[test]
    fn a_converged_apply_sends_nothing() {
        let live = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "d", "resourceVersion": "9", "uid": "u",
            "ownerReferences": [{"uid": "rs1", "controller": true}]}, "spec": {"x": 1}, "status": {"phase": "Running"}});
        let identity =
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "d"}});
        let owner = json!({"uid": "rs1", "controller": true});
        assert_eq!(converge_patch(identity, &live, Some(&owner), true), None);
    }

    #[test]
    fn a_drifted_apply_patches_with_the_live_version_and_keeps_owners() {
        let live = json!({"metadata": {"name": "p", "resourceVersion": "9", "ownerReferences": [{"uid": "other", "controller": false}]}, "spec": {"x": 1}});
        let desired = json!({"metadata": {"name": "p", "resourceVersion": "1"}, "spec": {"x": 2}, "status": {"y": 1}});
        let owner = json!({"uid": "rs1", "controller": true});
        let patch = converge_patch(desired, &live, Some(&owner), true).unwrap();
        assert_eq!(patch["metadata"]["resourceVersion"], "9");
        assert_eq!(patch["spec"]["x"], 2);
        assert!(
            patch.get("status").is_none(),
            "status goes through update-status"
        );
        let refs = patch["metadata"]["ownerReferences"].as_array().unwrap();
        assert_eq!(
            refs.len(),
            2,
            "the live reference is kept and ours added: {refs:?}"
        );
    }

    #[test]
    fn never_a_second_controller() {
        let mut obj = json!({"metadata": {"ownerReferences": [{"uid": "a", "controller": true}]}});
        add_owner(&mut obj, &json!({"uid": "b", "controller": true}));
        assert_eq!(
            obj["metadata"]["ownerReferences"].as_array().unwrap().len(),
            1
        );
        let mut obj = json!({"metadata": {}});
        add_owner(&mut obj, &json!({"uid": "b", "controller": true}));
        assert_eq!(obj["metadata"]["ownerReferences"][0]["uid"], "b");
    }

    #[test]
    fn timestamps_are_rfc3339() {
        assert_eq!(rfc3339(SystemTime::UNIX_EPOCH), "1970-01-01T00:00:00Z");
        let t = SystemTime::UNIX_EPOCH + Duration::from_secs(1_795_000_000);
        assert_eq!(rfc3339(t), "2026-11-18T11:06:40Z");
        let leap = SystemTime::UNIX_EPOCH + Duration::from_secs(951_782_400);
        assert_eq!(rfc3339(leap), "2000-02-29T00:00:00Z");
    }
}
