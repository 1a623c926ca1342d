//! The plugin contract as plain host data: manifest, request, outcome.
//!
//! These mirror `wit/controller@0.2.0` (a superset of 0.1.0, whose plugins
//! the runtime converts into them) but belong to the host: the queue, the
//! writer and the CLI use them without knowing about wasm. They serialize to
//! the camelCase JSON that `windlass plugin inspect|reconcile` prints.
//!
//! `Manifest::validate` and the `may_*` methods are the plugin boundary's
//! rules about kinds and namespaces; `windlass_selector::names` holds the
//! name rules both use.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use windlass_selector::{FieldSelector, LabelSelector, names};

pub use crate::model::{KindRef, ObjectHeader, ObjectRef, ObjectText, Text};

/// A set of objects a plugin is interested in.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Watch {
    #[serde(flatten)]
    pub kind: KindRef,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_selector: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field_selector: Option<String>,
    /// The plugin's `index` files this watch's objects (contract 0.2).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub indexed: bool,
}

impl Watch {
    /// A watch of every object of `kind`.
    pub fn of(kind: KindRef) -> Self {
        Self {
            kind,
            namespace: None,
            label_selector: None,
            field_selector: None,
            indexed: false,
        }
    }

    /// Whether the watch covers `namespace` (`None`: a cluster-scoped object).
    pub fn covers(&self, namespace: Option<&str>) -> bool {
        covers(self.namespace.as_deref(), namespace)
    }
}

/// Whether an entry confined to `mine` (none: everywhere) covers `namespace`.
fn covers(mine: Option<&str>, namespace: Option<&str>) -> bool {
    match (mine, namespace) {
        (None, _) => true,
        (Some(mine), Some(ns)) => mine == ns,
        (Some(_), None) => false,
    }
}

/// Permission to write a kind the plugin does not watch, or a subresource
/// (contract 0.2).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Grant {
    #[serde(flatten)]
    pub kind: KindRef,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subresource: Option<String>,
}

/// What a plugin is and what it may touch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Manifest {
    pub name: String,
    pub version: String,
    pub reconciles: Watch,
    pub owns: Vec<Watch>,
    pub reads: Vec<Watch>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub writes: Vec<Grant>,
    pub resync_seconds: Option<u32>,
    pub finalizer: Option<String>,
    pub max_concurrency: u32,
}

/// The most workers one plugin may ask for.
pub const MAX_CONCURRENCY: u32 = 1024;
/// The most watches (reconciles, owns and reads together) and grants one
/// manifest may declare.
pub const MAX_WATCHES: usize = 64;

/// Finalizer names Kubernetes itself uses: a plugin may not claim them.
const RESERVED_FINALIZERS: [&str; 3] = ["kubernetes", "orphan", "foregroundDeletion"];
/// Domains Kubernetes reserves for its own names (and their subdomains).
const RESERVED_DOMAINS: [&str; 2] = ["kubernetes.io", "k8s.io"];

impl Manifest {
    /// Checks what the host relies on; the error says what to fix. This is
    /// the load-time half of the plugin boundary: every name the manifest
    /// gives will reach URLs and the API server, so each is held to the API
    /// server's rules here.
    pub fn validate(&self) -> Result<(), String> {
        if let Err(e) = names::dns_label(&self.name) {
            return Err(format!(
                "manifest name {:?} must be a DNS label: 1-63 lowercase letters, digits or '-', starting and ending with a letter or digit ({e})",
                self.name
            ));
        }
        if self.version.is_empty() {
            return Err("manifest version is empty".into());
        }
        if self.version.len() > 128 || self.version.chars().any(char::is_control) {
            return Err("manifest version must be at most 128 printable characters".into());
        }
        if !(1..=MAX_CONCURRENCY).contains(&self.max_concurrency) {
            return Err(format!(
                "max-concurrency {} must be between 1 and {MAX_CONCURRENCY}",
                self.max_concurrency
            ));
        }
        if self.resync_seconds == Some(0) {
            return Err("resync-seconds must be at least 1 (or none)".into());
        }
        if let Some(finalizer) = &self.finalizer {
            validate_finalizer(finalizer)?;
        }
        if 1 + self.owns.len() + self.reads.len() + self.writes.len() > MAX_WATCHES {
            return Err(format!(
                "the manifest declares more than {MAX_WATCHES} watches and grants"
            ));
        }
        let mut indexed: Vec<&KindRef> = Vec::new();
        for (role, watch) in self.watches() {
            let what = format!("{role} {}", watch.kind);
            if watch.kind.api_version.is_empty() || watch.kind.kind.is_empty() {
                return Err(format!("a {role} watch has an empty apiVersion or kind"));
            }
            watch
                .kind
                .validate()
                .map_err(|e| format!("{role} watch: {e}"))?;
            if let Some(ns) = &watch.namespace {
                names::dns_label(ns).map_err(|e| format!("{what}: namespace {e}"))?;
            }
            if let Some(sel) = &watch.label_selector {
                LabelSelector::parse(sel).map_err(|e| format!("{what}: {e}"))?;
            }
            if let Some(sel) = &watch.field_selector {
                FieldSelector::parse(sel).map_err(|e| format!("{what}: {e}"))?;
            }
            if watch.indexed {
                if indexed.contains(&&watch.kind) {
                    return Err(format!(
                        "{what}: more than one indexed watch of {}; index one watch per kind",
                        watch.kind
                    ));
                }
                indexed.push(&watch.kind);
            }
        }
        for grant in &self.writes {
            let what = format!("writes {}", grant.kind);
            grant
                .kind
                .validate()
                .map_err(|e| format!("writes grant: {e}"))?;
            if let Some(ns) = &grant.namespace {
                names::dns_label(ns).map_err(|e| format!("{what}: namespace {e}"))?;
            }
            if let Some(sub) = &grant.subresource {
                names::subresource(sub).map_err(|e| format!("{what}: {e}"))?;
            }
        }
        Ok(())
    }

    /// Every watch with its role: `reconciles`, `owns` or `reads`.
    pub fn watches(&self) -> impl Iterator<Item = (&'static str, &Watch)> {
        std::iter::once(("reconciles", &self.reconciles))
            .chain(self.owns.iter().map(|w| ("owns", w)))
            .chain(self.reads.iter().map(|w| ("reads", w)))
    }

    /// Every kind the manifest names: watched, then only written.
    pub fn kinds(&self) -> impl Iterator<Item = &KindRef> {
        self.watches()
            .map(|(_, w)| &w.kind)
            .chain(self.writes.iter().map(|g| &g.kind))
    }

    /// May the plugin read this kind through the cache?
    pub fn may_read(&self, api_version: &str, kind: &str) -> bool {
        self.watches()
            .any(|(_, w)| same_kind(&w.kind, api_version, kind))
    }

    /// May the plugin write this kind (in some namespace)?
    pub fn may_write(&self, api_version: &str, kind: &str) -> bool {
        same_kind(&self.reconciles.kind, api_version, kind)
            || self
                .owns
                .iter()
                .any(|w| same_kind(&w.kind, api_version, kind))
            || self
                .writes
                .iter()
                .any(|g| same_kind(&g.kind, api_version, kind) && g.subresource.is_none())
    }

    /// May the plugin write this kind in `namespace` (`None`: a cluster-scoped
    /// object), or its `subresource`? The boundary's rule: a `reconciles`,
    /// `owns` or `writes` entry of the kind must cover the namespace (an
    /// entry with no namespace covers all); `status` goes with the object;
    /// any other subresource needs a `writes` grant that names it.
    pub fn may_write_in(
        &self,
        api_version: &str,
        kind: &str,
        namespace: Option<&str>,
        subresource: Option<&str>,
    ) -> bool {
        let watched = |w: &Watch| same_kind(&w.kind, api_version, kind) && w.covers(namespace);
        let granted = |g: &Grant, sub: Option<&str>| {
            same_kind(&g.kind, api_version, kind)
                && g.subresource.as_deref() == sub
                && covers(g.namespace.as_deref(), namespace)
        };
        match subresource {
            None | Some("status") => {
                watched(&self.reconciles)
                    || self.owns.iter().any(watched)
                    || self.writes.iter().any(|g| granted(g, None))
                    || self.writes.iter().any(|g| granted(g, subresource))
            }
            Some(sub) => self.writes.iter().any(|g| granted(g, Some(sub))),
        }
    }

    /// May the plugin see objects of this kind in `namespace` (through any
    /// of its watches)?
    pub fn may_read_in(&self, api_version: &str, kind: &str, namespace: Option<&str>) -> bool {
        self.watches()
            .any(|(_, w)| same_kind(&w.kind, api_version, kind) && w.covers(namespace))
    }

    /// The watch of `kind` the plugin's `index` files, if one is indexed.
    pub fn indexed_watch(&self, kind: &KindRef) -> Option<&Watch> {
        self.watches()
            .map(|(_, w)| w)
            .find(|w| w.indexed && w.kind == *kind)
    }

    /// Is this kind one of the plugin's `owns` kinds?
    pub fn owns_kind(&self, api_version: &str, kind: &str) -> bool {
        self.owns
            .iter()
            .any(|w| same_kind(&w.kind, api_version, kind))
    }
}

fn same_kind(k: &KindRef, api_version: &str, kind: &str) -> bool {
    k.api_version == api_version && k.kind == kind
}

/// A plugin's finalizer: a domain-qualified name (`example.com/cleanup`),
/// neither one Kubernetes uses itself nor one in a domain it reserves.
fn validate_finalizer(finalizer: &str) -> Result<(), String> {
    let bad = |why: &str| {
        Err(format!(
            "finalizer {finalizer:?} {why}; use a qualified name in your own domain, such as example.com/cleanup"
        ))
    };
    if RESERVED_FINALIZERS.contains(&finalizer) {
        return bad("is a finalizer Kubernetes itself uses");
    }
    if let Err(e) = names::qualified_name(finalizer) {
        return bad(&format!("is not a qualified name: {e}"));
    }
    let Some((domain, _)) = finalizer.split_once('/') else {
        return bad("has no domain");
    };
    if RESERVED_DOMAINS
        .iter()
        .any(|d| domain == *d || domain.ends_with(&format!(".{d}")))
    {
        return bad(&format!("is in {domain}, a domain Kubernetes reserves"));
    }
    Ok(())
}

/// One reconcile request: the key and the current state around it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    pub key: ObjectRef,
    /// The primary object as JSON text, or none if it is gone (shared with
    /// the cache that holds it, not copied).
    pub object: Option<Text>,
    /// Owned children as JSON text.
    pub owned: Vec<Text>,
    pub attempt: u32,
    /// The host's clock when the request was built, in milliseconds since
    /// the Unix epoch (0.2; a 0.1 plugin reads the same instant from WASI).
    pub now_ms: u64,
    /// Why the previous attempt's writes failed, if they did (0.2).
    pub last_failure: Option<WriteFailure>,
}

impl Request {
    /// A first-attempt request made now.
    pub fn new(key: ObjectRef, object: Option<String>, owned: Vec<String>) -> Self {
        Self {
            key,
            object: object.map(Text::from),
            owned: owned.into_iter().map(Text::from).collect(),
            attempt: 0,
            now_ms: now_ms(),
            last_failure: None,
        }
    }
}

/// Milliseconds since the Unix epoch, now.
pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// Why one write of an attempt failed, as the next attempt's request tells
/// the plugin.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WriteFailure {
    /// The position of the failed write in its outcome.
    pub write: u32,
    pub code: u16,
    pub reason: String,
    pub message: String,
}

/// A JSON merge patch against one object (or its status).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Patch {
    pub target: ObjectRef,
    /// `status` for the status subresource; none for the object.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subresource: Option<String>,
    pub patch: Box<RawValue>,
}

impl PartialEq for Patch {
    fn eq(&self, other: &Self) -> bool {
        self.target == other.target
            && self.subresource == other.subresource
            && self.patch.get() == other.patch.get()
    }
}

impl Eq for Patch {}

/// How a delete propagates to dependents.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Propagation {
    Background,
    Foreground,
    Orphan,
}

/// Options of a delete, as Kubernetes `DeleteOptions`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DeleteOptions {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub grace_period_seconds: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub uid: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resource_version: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub propagation: Option<Propagation>,
}

/// A delete of one object. Prints as the target with any options beside
/// it, as 0.1's delete printed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Delete {
    #[serde(flatten)]
    pub target: ObjectRef,
    #[serde(flatten)]
    pub options: DeleteOptions,
}

/// A body created at a subresource of one object (a binding, an eviction).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SubresourceCreate {
    pub target: ObjectRef,
    pub subresource: String,
    pub body: Box<RawValue>,
}

impl PartialEq for SubresourceCreate {
    fn eq(&self, other: &Self) -> bool {
        self.target == other.target
            && self.subresource == other.subresource
            && self.body.get() == other.body.get()
    }
}

impl Eq for SubresourceCreate {}

/// A write a plugin asks for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Write {
    Apply(ObjectText),
    Replace(ObjectText),
    UpdateStatus(ObjectText),
    MergePatch(Patch),
    Delete(Delete),
    CreateSubresource(SubresourceCreate),
}

impl Write {
    /// The apiVersion and kind this write touches.
    pub fn kind(&self) -> (&str, &str) {
        match self {
            Write::Apply(o) | Write::Replace(o) | Write::UpdateStatus(o) => {
                (&o.header().api_version, &o.header().kind)
            }
            Write::MergePatch(Patch { target, .. })
            | Write::Delete(Delete { target, .. })
            | Write::CreateSubresource(SubresourceCreate { target, .. }) => {
                (&target.api_version, &target.kind)
            }
        }
    }

    /// The subresource written: `status` for status writes, the named one
    /// for subresource creates and patches.
    pub fn subresource(&self) -> Option<&str> {
        match self {
            Write::UpdateStatus(_) => Some("status"),
            Write::MergePatch(p) => p.subresource.as_deref(),
            Write::CreateSubresource(c) => Some(&c.subresource),
            _ => None,
        }
    }

    /// The write's verb, as printed.
    pub fn verb(&self) -> &'static str {
        match self {
            Write::Apply(_) => "apply",
            Write::Replace(_) => "replace",
            Write::UpdateStatus(_) => "updateStatus",
            Write::MergePatch(_) => "mergePatch",
            Write::Delete(_) => "delete",
            Write::CreateSubresource(_) => "createSubresource",
        }
    }
}

/// How a plugin's `index` files one object (contract 0.2).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct IndexEntry {
    pub keys: Vec<String>,
    pub amounts: Vec<i64>,
    #[serde(serialize_with = "as_bytes_list")]
    pub summary: std::sync::Arc<[u8]>,
}

fn as_bytes_list<S: serde::Serializer>(b: &std::sync::Arc<[u8]>, s: S) -> Result<S::Ok, S::Error> {
    b.as_ref().serialize(s)
}

/// Severity of an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum EventType {
    Normal,
    Warning,
}

/// A Kubernetes Event to record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Event {
    #[serde(rename = "type")]
    pub type_: EventType,
    pub reason: String,
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub regarding: Option<ObjectRef>,
}

/// What a successful reconcile asks for.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Outcome {
    pub writes: Vec<Write>,
    pub prune_owned: bool,
    #[serde(rename = "requeueAfterMs", serialize_with = "as_millis")]
    pub requeue_after: Option<Duration>,
    pub events: Vec<Event>,
    /// The index keys the call read, at the versions it saw: a binding that
    /// would change a key read at an older version is a conflict.
    #[serde(skip)]
    pub index_reads: Vec<crate::model::IndexRead>,
}

fn as_millis<S: serde::Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
    d.map(|d| d.as_millis() as u64).serialize(s)
}

impl Serialize for Request {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let raw = |t: &str| RawValue::from_string(t.to_owned()).map_err(serde::ser::Error::custom);
        let mut st = s.serialize_struct("Request", 6)?;
        st.serialize_field("key", &self.key)?;
        st.serialize_field("object", &self.object.as_deref().map(raw).transpose()?)?;
        let owned: Result<Vec<_>, _> = self.owned.iter().map(|t| raw(t)).collect();
        st.serialize_field("owned", &owned?)?;
        st.serialize_field("attempt", &self.attempt)?;
        st.serialize_field("nowMs", &self.now_ms)?;
        st.serialize_field("lastFailure", &self.last_failure)?;
        st.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest() -> Manifest {
        Manifest {
            name: "replicaset".into(),
            version: "0.1.0".into(),
            reconciles: Watch::of(KindRef::new("apps/v1", "ReplicaSet")),
            owns: vec![Watch::of(KindRef::new("v1", "Pod"))],
            reads: vec![Watch {
                label_selector: Some("role=worker".into()),
                ..Watch::of(KindRef::new("v1", "Node"))
            }],
            writes: Vec::new(),
            resync_seconds: Some(300),
            finalizer: None,
            max_concurrency: 4,
        }
    }

    #[test]
    fn access_follows_the_manifest() {
        let m = manifest();
        assert!(m.validate().is_ok());
        assert!(m.may_read("v1", "Node") && !m.may_write("v1", "Node"));
        assert!(m.may_write("v1", "Pod") && m.may_write("apps/v1", "ReplicaSet"));
        assert!(!m.may_read("v1", "Secret") && !m.may_write("v1", "Secret"));
        assert!(m.owns_kind("v1", "Pod") && !m.owns_kind("apps/v1", "ReplicaSet"));
    }

    #[test]
    fn invalid_manifests_say_what_is_wrong() {
        let mut m = manifest();
        m.name = "Bad_Name".into();
        assert!(m.validate().unwrap_err().contains("DNS label"));
        let mut m = manifest();
        m.max_concurrency = 0;
        assert!(m.validate().unwrap_err().contains("max-concurrency"));
        let mut m = manifest();
        m.reads[0].label_selector = Some("a in (".into());
        assert!(m.validate().unwrap_err().contains("invalid label selector"));
    }

    #[test]
    fn outcome_prints_as_documented() {
        let outcome = Outcome {
            writes: vec![Write::Delete(Delete {
                target: ObjectRef {
                    api_version: "v1".into(),
                    kind: "Pod".into(),
                    namespace: Some("ns".into()),
                    name: "p".into(),
                },
                options: DeleteOptions::default(),
            })],
            prune_owned: true,
            requeue_after: Some(Duration::from_millis(1500)),
            events: vec![],
            index_reads: Vec::new(),
        };
        let json = serde_json::to_value(&outcome).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"writes":[{"delete":{"apiVersion":"v1","kind":"Pod","namespace":"ns","name":"p"}}],
                "pruneOwned":true,"requeueAfterMs":1500,"events":[]})
        );
    }
}
