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
//! - Events become core/v1 Events, correlated as client-go does: a repeat
//!   bumps the count of the first, similar ones combine, a flood is dropped.
//!
//! Every request carries a field manager and user agent naming the plugin,
//! and waits for the plugin's write limit (`throttle.rs`) before it is sent.
//!
//! The rooms: this file carries out writes; what an `apply` sends and what
//! `prune-owned` deletes are plain functions over object JSON in the
//! `windlass-apply` crate, which the SDK's test harness uses too;
//! `events.rs` records events, as `correlate.rs` decides; `throttle.rs` holds each
//! plugin to its write limit.

mod correlate;
mod events;
mod throttle;

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use http::Method;
use serde_json::{Value, json};

use crate::client::{ApiClient, ApiError};
use crate::contract::{Delete, DeleteOptions, Manifest, Outcome, SubresourceCreate, Write};
use crate::discovery::{Discovery, DiscoveryError};
use crate::model::{CacheReader, CachedObject, KindRef, ObjectRef};
use correlate::Correlator;
use throttle::{Throttle, Throttles};
pub use throttle::{ThrottleStats, WriteLimit};
use windlass_apply::{Apply, Child, owner_reference, set_meta};

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
    /// Adds what another part of the same outcome did.
    fn absorb(&mut self, other: Applied) {
        self.created.extend(other.created);
        self.created_version = self.created_version.max(other.created_version);
        self.deleted.extend(other.deleted);
        self.requests += other.requests;
    }

    /// Notes a create: `r` names the object, `response` is what the server
    /// answered.
    fn created(&mut self, r: ObjectRef, created: &Created) {
        self.created_version = self.created_version.max(created.version);
        self.created.push(r);
        self.requests += 1;
    }
}

/// The largest batch of independent writes sent at once.
const MAX_BATCH: usize = 64;

/// What an independent write touches: one object by kind, namespace and
/// name, or a fresh one (a create with only a `generateName`).
#[derive(Debug, PartialEq, Eq, Hash)]
enum Touches {
    Object(String, String, Option<String>, String),
    Fresh,
}

/// Whether `write` may go out beside its neighbours: a create (an apply of
/// an object the cache holds no copy of) or a delete. Everything else —
/// patches, replacements, status, bindings, and applies that converge a
/// live object — keeps its place in the order.
fn independent(t: &Target<'_>, write: &Write, default_ns: Option<&str>) -> Option<Touches> {
    let object = |api_version: &str, kind: &str, ns: Option<&str>, name: &str| {
        Touches::Object(
            api_version.to_owned(),
            kind.to_owned(),
            ns.or(default_ns).map(str::to_owned),
            name.to_owned(),
        )
    };
    match write {
        Write::Apply(o) => {
            let h = o.header();
            let (api_version, kind) = write.kind();
            if !t.live.holds(&KindRef::new(api_version, kind)) {
                return None;
            }
            let Some(name) = &h.name else {
                return Some(Touches::Fresh);
            };
            let r = ObjectRef {
                api_version: api_version.to_owned(),
                kind: kind.to_owned(),
                namespace: h.namespace.clone().or(default_ns.map(str::to_owned)),
                name: name.clone(),
            };
            // Absent from the cache: a create.
            t.live
                .get(&r)
                .is_none()
                .then(|| object(api_version, kind, r.namespace.as_deref(), name))
        }
        Write::Delete(d) => Some(object(
            &d.target.api_version,
            &d.target.kind,
            d.target.namespace.as_deref(),
            &d.target.name,
        )),
        _ => None,
    }
}

/// The end of the run of independent writes starting at `start`, each
/// touching a different object (at least `start + 1`).
fn independent_run(
    t: &Target<'_>,
    writes: &[Write],
    start: usize,
    default_ns: Option<&str>,
) -> usize {
    // A lone write goes out on its own: no need to look at the cache twice.
    if start + 1 >= writes.len() {
        return start + 1;
    }
    let mut seen = HashSet::new();
    let mut end = start;
    while end < writes.len() {
        let fresh_or_new = match independent(t, &writes[end], default_ns) {
            Some(Touches::Fresh) => true,
            Some(touches) => seen.insert(touches),
            None => false,
        };
        if !fresh_or_new {
            break;
        }
        end += 1;
    }
    end.max(start + 1)
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
    /// so the plugin's index can "assume" it (see `controller/indexing.rs`).
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
    correlator: Mutex<Correlator>,
    throttles: Throttles,
}

impl std::fmt::Debug for Writer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Writer").finish_non_exhaustive()
    }
}

impl Writer {
    /// A writer whose plugins' requests are held to `limit` unless
    /// [`Writer::set_limit`] gives one its own.
    pub fn new(client: ApiClient, discovery: Arc<Discovery>, limit: WriteLimit) -> Self {
        Self {
            client,
            discovery,
            correlator: Mutex::default(),
            throttles: Throttles::new(limit),
        }
    }

    /// Sets `plugin`'s write limit (`None`: the host's default). An
    /// unchanged limit keeps its tokens.
    pub fn set_limit(&self, plugin: &str, limit: Option<WriteLimit>) {
        self.throttles.set(plugin, limit);
    }

    /// The limit of a plugin not given its own.
    pub fn default_limit(&self) -> WriteLimit {
        self.throttles.default
    }

    /// Forgets the limit of a plugin that no longer runs.
    pub fn forget(&self, plugin: &str) {
        self.throttles.remove(plugin);
        self.correlator().forget_plugin(plugin);
    }

    /// Every plugin's write limit, the time its requests waited and the
    /// events the spam filter dropped.
    pub fn throttle_stats(&self) -> Vec<ThrottleStats> {
        let mut stats = self.throttles.stats();
        let correlator = self.correlator();
        for s in &mut stats {
            s.events_dropped = correlator.dropped(&s.plugin);
        }
        stats
    }

    fn correlator(&self) -> std::sync::MutexGuard<'_, Correlator> {
        self.correlator.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The identity and write limit `plugin`'s requests go out with.
    fn caller(&self, plugin: &str) -> Caller {
        Caller {
            agent: format!("windlass/{plugin}"),
            manager: format!("fieldManager=windlass-{plugin}"),
            throttle: self.throttles.of(plugin),
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
        let who = self.caller(plugin);
        let mut kept: HashSet<ObjectRef> = HashSet::new();
        let default_ns = t.key.namespace.as_deref();

        let writes = &outcome.writes;
        let mut i = 0;
        while i < writes.len() {
            let end = independent_run(t, writes, i, default_ns);
            if end == i + 1 {
                if let Err(e) = self
                    .execute_one(t, &writes[i], default_ns, &who, &mut kept, applied)
                    .await
                {
                    applied.failed_at = Some(i as u32);
                    return Err(e);
                }
                i = end;
                continue;
            }
            // Independent creates and deletes go out together, in batches
            // growing 1, 2, 4, … while every write of a batch succeeds (as
            // kube-controller-manager's slow start): a create the server
            // refuses costs one request, not a storm. Every answer of a
            // batch is recorded; the first failure stops the outcome there.
            let mut size = 1;
            while i < end {
                let batch = i..(i + size).min(end);
                let who = &who;
                let answers = futures::future::join_all(batch.clone().map(|k| async move {
                    let (mut done, mut named) = (Applied::default(), HashSet::new());
                    let result = self
                        .execute_one(t, &writes[k], default_ns, who, &mut named, &mut done)
                        .await;
                    (k, result, done, named)
                }))
                .await;
                let mut failed = None;
                for (k, result, done, named) in answers {
                    applied.absorb(done);
                    kept.extend(named);
                    if let Err(e) = result
                        && failed.is_none()
                    {
                        failed = Some((k, e));
                    }
                }
                if let Some((k, e)) = failed {
                    applied.failed_at = Some(k as u32);
                    return Err(e);
                }
                i = batch.end;
                size = (size * 2).min(MAX_BATCH);
            }
        }

        if outcome.prune_owned {
            let owned = t.owned.iter().map(|(kind, child)| Child {
                key: ObjectRef {
                    api_version: kind.api_version.clone(),
                    kind: kind.kind.clone(),
                    namespace: child.key().namespace.map(str::to_owned),
                    name: child.key().name.to_string(),
                },
                deleting: child.is_deleting(),
                object: (kind, child),
            });
            for Child {
                key: r,
                object: (kind, child),
                ..
            } in windlass_apply::pruned(owned, &kept)
            {
                let resource = self.discovery.resolve(kind).await?;
                let options = DeleteOptions {
                    uid: Some(child.uid().to_owned()),
                    ..DeleteOptions::default()
                };
                if self
                    .delete(&resource, r.namespace.as_deref(), &r.name, &options, &who)
                    .await?
                {
                    applied.requests += 1;
                }
                applied.deleted.push(r);
            }
        }

        self.record(t.manifest, t.key, t.primary, Some(t.live), &outcome.events)
            .await;
        Ok(())
    }

    /// Carries out one write of an outcome.
    #[allow(clippy::too_many_arguments)]
    async fn execute_one(
        &self,
        t: &Target<'_>,
        write: &Write,
        default_ns: Option<&str>,
        who: &Caller,
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
                    .map(|p| {
                        let kind = &t.manifest.reconciles.kind;
                        owner_reference(&kind.api_version, &kind.kind, &t.key.name, p.uid())
                    });
                let collection = resource.collection_path(namespace.as_deref());
                let Some(name) = object.header().name.clone() else {
                    let desired = windlass_apply::created(desired, owner.as_ref());
                    let created = self.create(&collection, who, &desired).await?;
                    applied.created(
                        ObjectRef {
                            api_version: api_version.to_owned(),
                            kind: kind.to_owned(),
                            namespace,
                            name: created.name.clone(),
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
                    self.server_side_apply(&path, who, &desired).await?;
                    applied.requests += 1;
                    return Ok(());
                }
                // An apply that names the object and nothing else (a plugin
                // keeping a child from its prune) is converged when the
                // cache holds the object and there is no owner reference to
                // add (none wanted, or a controller already there): decided
                // from the cached header, without parsing the object.
                if is_identity(&desired)
                    && t.live
                        .get_object(&target)
                        .is_some_and(|live| owner.is_none() || live.controller().is_some())
                {
                    return Ok(());
                }
                let live: Option<Value> = t.live.get(&target).map(|l| parse(&l)).transpose()?;
                match windlass_apply::apply(
                    desired,
                    live.as_ref(),
                    owner.as_ref(),
                    resource.has_status,
                ) {
                    Apply::Create(desired) => {
                        let created = self.create(&collection, who, &desired).await?;
                        applied.created(target, &created);
                    }
                    Apply::Patch(patch) => {
                        let path = resource.object_path(namespace.as_deref(), &name);
                        self.merge_patch(&path, who, &patch).await?;
                        applied.requests += 1;
                    }
                    Apply::Converged => {}
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
                self.send(Method::PUT, &path, who, &body, "application/json")
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
                self.update_status(&resource, namespace.as_deref(), &r.name, body, who)
                    .await?;
                applied.requests += 1;
            }
            Write::MergePatch(p) => {
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
                self.send_text(
                    Method::PATCH,
                    &path,
                    who,
                    p.patch.get().as_bytes().to_vec(),
                    "application/merge-patch+json",
                )
                .await?;
                applied.requests += 1;
            }
            Write::Delete(Delete { target, options }) => {
                let namespace = ns_of(target.namespace.as_deref()).map_err(|e| *e)?;
                if self
                    .delete(&resource, namespace.as_deref(), &target.name, options, who)
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
                let path =
                    resource.subresource_path(namespace.as_deref(), &target.name, subresource);
                let pod = ObjectRef {
                    namespace: namespace.clone(),
                    ..target.clone()
                };
                let node = (api_version == "v1" && kind == "Pod" && subresource == "binding")
                    .then(|| binding_target(body.get()))
                    .flatten();
                let binding = node.as_deref().zip(t.assume);
                if let Some((node, assume)) = binding {
                    assume
                        .before_bind(&pod, node)
                        .map_err(WriteError::Assumed)?;
                }
                let sent = self
                    .send_text(
                        Method::POST,
                        &path,
                        who,
                        body.get().as_bytes().to_vec(),
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
        let who = self.caller(&manifest.name);
        self.merge_patch(&path, &who, &patch).await?;
        Ok(())
    }
}

/// Who a request is sent for: the user agent and field-manager query
/// parameter naming the plugin, and the plugin's write limit.
pub(super) struct Caller {
    agent: String,
    manager: String,
    throttle: Arc<Throttle>,
}

mod requests;

/// Whether `desired` names an object and says nothing else about it.
fn is_identity(desired: &Value) -> bool {
    let Some(object) = desired.as_object() else {
        return false;
    };
    object.iter().all(|(k, v)| match k.as_str() {
        "apiVersion" | "kind" => true,
        "metadata" => v
            .as_object()
            .is_some_and(|m| m.keys().all(|k| k == "name" || k == "namespace")),
        _ => false,
    })
}

use requests::{Created, binding_target, parse};

#[cfg(test)]
mod tests;
