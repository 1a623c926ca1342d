//! The informer cache: the current objects of one informer, as the raw JSON
//! text the API server sent (with `managedFields` stripped) plus a small
//! parsed header, indexed by namespace, controller owner uid and labels.
//!
//! One writer (the informer) applies list and watch results with plain
//! synchronous functions that report what changed; any number of cheap
//! [`Cache`] clones read. Keeping text rather than `serde_json::Value` trees
//! costs about a ninth of the memory, and a plugin needs the text anyway.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, RwLock};

use serde::Deserialize;
use windlass_selector::LabelSelector;

/// An object's place in its kind: namespace (none when cluster-scoped), name.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ObjectKey {
    pub namespace: Option<Arc<str>>,
    pub name: Arc<str>,
}

impl ObjectKey {
    pub fn new(namespace: Option<&str>, name: &str) -> Self {
        Self {
            namespace: namespace.filter(|ns| !ns.is_empty()).map(Into::into),
            name: name.into(),
        }
    }
}

impl std::fmt::Display for ObjectKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.namespace {
            Some(ns) => write!(f, "{ns}/{}", self.name),
            None => f.write_str(&self.name),
        }
    }
}

/// An object the cache could not take, with the reason.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("malformed object from the API server: {0}")]
pub struct MalformedObject(String);

/// One cached object: its text and the fields the host routes by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CachedObject {
    text: Arc<str>,
    key: ObjectKey,
    uid: Box<str>,
    resource_version: Box<str>,
    labels: Box<[(Box<str>, Box<str>)]>,
    controller: Option<Controller>,
    deleting: bool,
    finalizers: Box<[Box<str>]>,
}

/// The owner reference marked `controller: true`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Controller {
    pub api_version: Box<str>,
    pub kind: Box<str>,
    pub name: Box<str>,
    pub uid: Box<str>,
}

#[derive(Deserialize)]
struct Head<'a> {
    #[serde(borrow)]
    metadata: Meta<'a>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Meta<'a> {
    #[serde(borrow)]
    name: Cow<'a, str>,
    #[serde(borrow, default)]
    namespace: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    uid: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    resource_version: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    labels: Option<BTreeMap<Cow<'a, str>, Cow<'a, str>>>,
    #[serde(borrow, default)]
    owner_references: Option<Vec<OwnerRef<'a>>>,
    #[serde(borrow, default)]
    deletion_timestamp: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    finalizers: Option<Vec<Cow<'a, str>>>,
    #[serde(borrow, default)]
    managed_fields: Option<&'a serde_json::value::RawValue>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct OwnerRef<'a> {
    #[serde(borrow, default)]
    api_version: Cow<'a, str>,
    #[serde(borrow, default)]
    kind: Cow<'a, str>,
    #[serde(borrow, default)]
    name: Cow<'a, str>,
    #[serde(borrow)]
    uid: Cow<'a, str>,
    #[serde(default)]
    controller: Option<bool>,
}

impl CachedObject {
    /// Parses one object's JSON text; strips `metadata.managedFields`.
    pub fn parse(text: &str) -> Result<Self, MalformedObject> {
        let head: Head<'_> =
            serde_json::from_str(text).map_err(|e| MalformedObject(e.to_string()))?;
        let m = head.metadata;
        if m.name.is_empty() {
            return Err(MalformedObject("metadata.name is empty".into()));
        }
        let boxed = |c: Option<Cow<'_, str>>| c.map(|c| Box::<str>::from(c.as_ref()));
        let object = Self {
            key: ObjectKey::new(m.namespace.as_deref(), &m.name),
            uid: boxed(m.uid).unwrap_or_default(),
            resource_version: boxed(m.resource_version).unwrap_or_default(),
            labels: m
                .labels
                .unwrap_or_default()
                .into_iter()
                .map(|(k, v)| (Box::from(k.as_ref()), Box::from(v.as_ref())))
                .collect(),
            controller: m
                .owner_references
                .unwrap_or_default()
                .into_iter()
                .find(|o| o.controller == Some(true))
                .map(|o| Controller {
                    api_version: Box::from(o.api_version.as_ref()),
                    kind: Box::from(o.kind.as_ref()),
                    name: Box::from(o.name.as_ref()),
                    uid: Box::from(o.uid.as_ref()),
                }),
            deleting: m.deletion_timestamp.is_some(),
            finalizers: m
                .finalizers
                .unwrap_or_default()
                .into_iter()
                .map(|f| Box::from(f.as_ref()))
                .collect(),
            text: match m.managed_fields {
                Some(raw) => match cut_member(text, raw.get(), "managedFields") {
                    Some(cut) => cut.into(),
                    None => strip_managed_fields(text)?.into(),
                },
                None => text.into(),
            },
        };
        Ok(object)
    }

    /// The JSON text (without managedFields).
    pub fn text(&self) -> &Arc<str> {
        &self.text
    }

    pub fn key(&self) -> &ObjectKey {
        &self.key
    }

    pub fn uid(&self) -> &str {
        &self.uid
    }

    pub fn resource_version(&self) -> &str {
        &self.resource_version
    }

    /// The label's value, if the object has it.
    pub fn label(&self, key: &str) -> Option<&str> {
        self.labels
            .iter()
            .find(|(k, _)| k.as_ref() == key)
            .map(|(_, v)| v.as_ref())
    }

    /// The owner reference marked `controller: true`.
    pub fn controller(&self) -> Option<&Controller> {
        self.controller.as_ref()
    }

    /// The uid of the owner reference marked `controller: true`.
    pub fn controller_uid(&self) -> Option<&str> {
        self.controller.as_ref().map(|c| c.uid.as_ref())
    }

    /// True once `metadata.deletionTimestamp` is set.
    pub fn is_deleting(&self) -> bool {
        self.deleting
    }

    /// The object's finalizers, in order.
    pub fn finalizers(&self) -> impl Iterator<Item = &str> {
        self.finalizers.iter().map(|f| f.as_ref())
    }

    pub fn has_finalizer(&self, finalizer: &str) -> bool {
        self.finalizers.iter().any(|f| f.as_ref() == finalizer)
    }

    /// Bytes this entry holds, roughly: the text plus the header.
    pub fn size(&self) -> usize {
        self.text.len()
            + self.uid.len()
            + self.resource_version.len()
            + self
                .labels
                .iter()
                .map(|(k, v)| k.len() + v.len() + 32)
                .sum::<usize>()
            + self.controller.as_ref().map_or(0, |c| {
                c.api_version.len() + c.kind.len() + c.name.len() + c.uid.len()
            })
            + std::mem::size_of::<Self>()
    }
}

/// `text` without the object member `"key": value`, where `value` is the
/// member's value as a slice of `text` — cut out as text, without parsing
/// and re-serializing the whole object. `None` when the text around it is
/// not laid out as expected (say, an escaped key), for the caller to fall
/// back to a full parse.
fn cut_member(text: &str, value: &str, key: &str) -> Option<String> {
    let start = (value.as_ptr() as usize).checked_sub(text.as_ptr() as usize)?;
    let end = start + value.len();
    if end > text.len() {
        return None;
    }
    let before = text[..start].trim_end().strip_suffix(':')?.trim_end();
    let key_start = before
        .strip_suffix('"')?
        .strip_suffix(key)?
        .strip_suffix('"')?
        .len();
    let lead = text[..key_start].trim_end();
    let (cut_from, cut_to) = if let Some(rest) = lead.strip_suffix(',') {
        // `…, "key": value` → `…`
        (rest.len(), end)
    } else if lead.ends_with('{') {
        // `{"key": value, …` → `{…`; `{"key": value}` → `{}`
        let after = &text[end..];
        let trimmed = after.trim_start();
        match trimmed.strip_prefix(',') {
            Some(rest) => (key_start, text.len() - rest.trim_start().len()),
            None if trimmed.starts_with('}') => (key_start, end),
            None => return None,
        }
    } else {
        return None;
    };
    let mut out = String::with_capacity(text.len() - (cut_to - cut_from));
    out.push_str(&text[..cut_from]);
    out.push_str(&text[cut_to..]);
    Some(out)
}

fn strip_managed_fields(text: &str) -> Result<String, MalformedObject> {
    let mut value: serde_json::Value =
        serde_json::from_str(text).map_err(|e| MalformedObject(e.to_string()))?;
    if let Some(meta) = value.get_mut("metadata").and_then(|m| m.as_object_mut()) {
        meta.remove("managedFields");
    }
    Ok(value.to_string())
}

/// What applying something to the store changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    Added(Arc<CachedObject>),
    Modified {
        old: Arc<CachedObject>,
        new: Arc<CachedObject>,
    },
    /// The last state known of a deleted object.
    Deleted(Arc<CachedObject>),
}

impl Change {
    /// The object as it now is, or as it last was when deleted.
    pub fn object(&self) -> &Arc<CachedObject> {
        match self {
            Change::Added(o) | Change::Deleted(o) | Change::Modified { new: o, .. } => o,
        }
    }
}

/// The objects of one informer and their indexes.
#[derive(Debug, Default)]
pub struct Store {
    /// Ordered by namespace then name, which is also the namespace index.
    objects: BTreeMap<ObjectKey, Arc<CachedObject>>,
    by_controller: HashMap<Box<str>, BTreeSet<ObjectKey>>,
    by_label: HashMap<(Box<str>, Box<str>), BTreeSet<ObjectKey>>,
    bytes: usize,
    /// The resourceVersion the store reflects (the last list, event or
    /// bookmark), when the server's versions are numbers.
    version: Option<u64>,
}

impl Store {
    pub fn new() -> Self {
        Self::default()
    }

    /// Records the resourceVersion the store now reflects: everything the
    /// server did up to it is in the store. Versions that are not numbers
    /// (the API allows opaque ones) leave it unknown.
    pub fn set_version(&mut self, version: &str) {
        self.version = version.parse().ok();
    }

    /// The resourceVersion the store reflects, when known.
    pub fn version(&self) -> Option<u64> {
        self.version
    }

    /// Inserts or replaces an object, returning what changed: nothing when
    /// the cached copy has the same resourceVersion; when the name now
    /// belongs to a new object (another uid: deleted and recreated while we
    /// were not watching), the old one's delete and then the new one's add,
    /// so that nobody mistakes a new object for an update of the old one.
    pub fn upsert(&mut self, object: CachedObject) -> Vec<Change> {
        let mut changes = Vec::new();
        self.upsert_into(object, &mut changes);
        changes
    }

    /// [`Store::upsert`], appending to `changes`.
    fn upsert_into(&mut self, object: CachedObject, changes: &mut Vec<Change>) {
        let new = Arc::new(object);
        let key = new.key.clone();
        if let Some(old) = self.objects.get(&key) {
            if old.resource_version == new.resource_version && !old.resource_version.is_empty() {
                return;
            }
            if old.uid != new.uid && !old.uid.is_empty() && !new.uid.is_empty() {
                changes.extend(self.remove(&key, None));
            }
        }
        self.index(&new);
        changes.push(match self.objects.insert(key, new.clone()) {
            Some(old) => {
                self.unindex(&old, Some(&new));
                Change::Modified { old, new }
            }
            None => Change::Added(new),
        });
    }

    /// Removes an object. `last` is its final state from the DELETED event,
    /// when there is one; it is what the change reports.
    pub fn remove(&mut self, key: &ObjectKey, last: Option<CachedObject>) -> Option<Change> {
        let old = self.objects.remove(key)?;
        self.unindex(&old, None);
        Some(Change::Deleted(last.map(Arc::new).unwrap_or(old)))
    }

    /// Replaces everything with a fresh list: objects missing from it are
    /// reported deleted (deletes missed while disconnected), new or changed
    /// ones added or modified.
    pub fn replace_all(&mut self, objects: Vec<CachedObject>) -> Vec<Change> {
        let mut seen = BTreeSet::new();
        let mut changes = Vec::new();
        for object in objects {
            seen.insert(object.key.clone());
            self.upsert_into(object, &mut changes);
        }
        let gone: Vec<ObjectKey> = self
            .objects
            .keys()
            .filter(|k| !seen.contains(*k))
            .cloned()
            .collect();
        for key in gone {
            changes.extend(self.remove(&key, None));
        }
        changes
    }

    fn index(&mut self, o: &Arc<CachedObject>) {
        self.bytes += o.size();
        if let Some(uid) = o.controller_uid() {
            self.by_controller
                .entry(uid.into())
                .or_default()
                .insert(o.key.clone());
        }
        for (k, v) in o.labels.iter() {
            self.by_label
                .entry((k.clone(), v.clone()))
                .or_default()
                .insert(o.key.clone());
        }
    }

    /// Drops `old`'s index entries, keeping those `replacement` still has.
    fn unindex(&mut self, old: &CachedObject, replacement: Option<&CachedObject>) {
        self.bytes -= old.size();
        if let Some(uid) = old.controller_uid()
            && replacement.and_then(|r| r.controller_uid()) != Some(uid)
        {
            remove_from(&mut self.by_controller, uid, &old.key);
        }
        for (k, v) in old.labels.iter() {
            if replacement.and_then(|r| r.label(k)) != Some(v.as_ref()) {
                remove_from(&mut self.by_label, &(k.clone(), v.clone()), &old.key);
            }
        }
    }

    pub fn get(&self, key: &ObjectKey) -> Option<Arc<CachedObject>> {
        self.objects.get(key).cloned()
    }

    /// Objects in `namespace` (or all) matching `selector`, ordered by
    /// namespace then name. Uses the label index when the selector pins a
    /// label to one value.
    pub fn list(
        &self,
        namespace: Option<&str>,
        selector: &LabelSelector,
    ) -> Vec<Arc<CachedObject>> {
        let matches = |o: &CachedObject| {
            namespace.is_none_or(|ns| o.key.namespace.as_deref() == Some(ns))
                && selector.matches(|k| o.label(k))
        };
        let pinned = selector.requirements().iter().find_map(|r| {
            selector
                .pinned_value(r.key())
                .map(|v| (Box::<str>::from(r.key()), Box::<str>::from(v)))
        });
        if let Some(pin) = pinned {
            return self
                .by_label
                .get(&pin)
                .into_iter()
                .flatten()
                .filter_map(|k| self.objects.get(k))
                .filter(|o| matches(o))
                .cloned()
                .collect();
        }
        match namespace {
            Some(ns) => {
                let start = ObjectKey {
                    namespace: Some(ns.into()),
                    name: "".into(),
                };
                self.objects
                    .range(start..)
                    .take_while(|(k, _)| k.namespace.as_deref() == Some(ns))
                    .map(|(_, o)| o)
                    .filter(|o| matches(o))
                    .cloned()
                    .collect()
            }
            None => self
                .objects
                .values()
                .filter(|o| matches(o))
                .cloned()
                .collect(),
        }
    }

    /// Objects whose controller owner reference has this uid.
    pub fn controlled_by(&self, uid: &str) -> Vec<Arc<CachedObject>> {
        self.by_controller
            .get(uid)
            .into_iter()
            .flatten()
            .filter_map(|k| self.objects.get(k).cloned())
            .collect()
    }

    /// Every key, in order (for resync and for comparing with a fresh list).
    pub fn keys(&self) -> Vec<ObjectKey> {
        self.objects.keys().cloned().collect()
    }

    pub fn len(&self) -> usize {
        self.objects.len()
    }

    pub fn is_empty(&self) -> bool {
        self.objects.is_empty()
    }

    /// Approximate bytes held by cached objects and their headers.
    pub fn bytes(&self) -> usize {
        self.bytes
    }
}

fn remove_from<K, Q>(index: &mut HashMap<K, BTreeSet<ObjectKey>>, at: &Q, key: &ObjectKey)
where
    K: Eq + std::hash::Hash + std::borrow::Borrow<Q>,
    Q: Eq + std::hash::Hash + ?Sized,
{
    if let Some(set) = index.get_mut(at) {
        set.remove(key);
        if set.is_empty() {
            index.remove(at);
        }
    }
}

/// A shared handle on one informer's store: cheap to clone, read by plugins
/// and request building, written only by its informer.
#[derive(Debug, Clone, Default)]
pub struct Cache {
    store: Arc<RwLock<Store>>,
}

impl Cache {
    pub fn new() -> Self {
        Self::default()
    }

    /// Reads the store.
    pub fn read<R>(&self, f: impl FnOnce(&Store) -> R) -> R {
        f(&self.store.read().unwrap_or_else(|e| e.into_inner()))
    }

    /// Changes the store (the informer's side).
    pub fn write<R>(&self, f: impl FnOnce(&mut Store) -> R) -> R {
        f(&mut self.store.write().unwrap_or_else(|e| e.into_inner()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(ns: &str, name: &str, rv: u32, app: &str, owner: Option<&str>) -> CachedObject {
        let mut meta = json!({"name": name, "namespace": ns, "uid": format!("u-{name}"),
            "resourceVersion": rv.to_string(), "labels": {"app": app}});
        if let Some(owner) = owner {
            meta["ownerReferences"] = json!([{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"rs","uid":owner,"controller":true}]);
        }
        CachedObject::parse(&json!({"apiVersion":"v1","kind":"Pod","metadata":meta}).to_string())
            .unwrap()
    }

    fn names(objects: &[Arc<CachedObject>]) -> Vec<String> {
        objects.iter().map(|o| o.key().to_string()).collect()
    }

    #[test]
    fn managed_fields_are_cut_out_wherever_they_stand() {
        let mf = r#"[{"manager":"kubectl","fieldsV1":{"f:data":{}}}]"#;
        for (meta, want) in [
            (
                format!(r#"{{"name":"a","managedFields":{mf},"uid":"u"}}"#),
                r#"{"name":"a","uid":"u"}"#,
            ),
            (
                format!(r#"{{"managedFields":{mf},"name":"a"}}"#),
                r#"{"name":"a"}"#,
            ),
            (
                format!(r#"{{"name":"a","managedFields":{mf}}}"#),
                r#"{"name":"a"}"#,
            ),
            (
                format!("{{ \"name\": \"a\" ,\n  \"managedFields\" : {mf} \n}}"),
                "{ \"name\": \"a\"  \n}",
            ),
        ] {
            let text = format!(
                r#"{{"kind":"ConfigMap","metadata":{meta},"data":{{"managedFields":"kept"}}}}"#
            );
            let o = CachedObject::parse(&text).unwrap();
            let want = format!(
                r#"{{"kind":"ConfigMap","metadata":{want},"data":{{"managedFields":"kept"}}}}"#
            );
            assert_eq!(o.text().as_ref(), want);
            let v: serde_json::Value = serde_json::from_str(o.text()).unwrap();
            assert_eq!(v["metadata"]["name"], "a");
        }
        // An escaped key is still found, by the slow path.
        let text = format!(r#"{{"metadata":{{"name":"a","managed\u0046ields":{mf}}}}}"#);
        let o = CachedObject::parse(&text).unwrap();
        assert_eq!(o.text().as_ref(), r#"{"metadata":{"name":"a"}}"#);
    }

    #[test]
    fn parses_the_header_and_strips_managed_fields() {
        let text = json!({"apiVersion":"v1","kind":"Pod","metadata":{
            "name":"a","namespace":"ns","uid":"u1","resourceVersion":"5","labels":{"app":"web"},
            "finalizers":["example.com/x"],"deletionTimestamp":"2026-01-01T00:00:00Z",
            "managedFields":[{"manager":"kubectl","fieldsV1":{"f:spec":{}}}],
            "ownerReferences":[{"uid":"o1","controller":false},{"uid":"o2","controller":true}]}})
        .to_string();
        let o = CachedObject::parse(&text).unwrap();
        assert_eq!(o.key().to_string(), "ns/a");
        assert_eq!((o.uid(), o.resource_version()), ("u1", "5"));
        assert_eq!(o.label("app"), Some("web"));
        assert_eq!(o.controller_uid(), Some("o2"));
        assert_eq!(o.controller().map(|c| c.kind.as_ref()), Some(""));
        assert!(o.is_deleting() && o.has_finalizer("example.com/x"));
        assert!(!o.text().contains("managedFields"));
        assert!(o.text().len() < text.len());
        assert!(CachedObject::parse("{\"metadata\":{}}").is_err());
        assert!(CachedObject::parse("nope").is_err());
    }

    #[test]
    fn upsert_reports_changes_and_ignores_same_version() {
        let mut s = Store::new();
        assert!(matches!(
            s.upsert(pod("a", "p", 1, "web", None))[..],
            [Change::Added(_)]
        ));
        assert!(s.upsert(pod("a", "p", 1, "web", None)).is_empty());
        assert!(matches!(
            s.upsert(pod("a", "p", 2, "web", None))[..],
            [Change::Modified { .. }]
        ));
        assert_eq!(s.len(), 1);
        let gone = s.remove(&ObjectKey::new(Some("a"), "p"), None).unwrap();
        assert!(matches!(gone, Change::Deleted(ref o) if o.resource_version() == "2"));
        assert!(s.is_empty() && s.bytes() == 0);
    }

    #[test]
    fn lists_by_namespace_and_labels_in_order() {
        let mut s = Store::new();
        for (ns, name, app) in [
            ("b", "x", "web"),
            ("a", "z", "db"),
            ("a", "y", "web"),
            ("c", "w", "web"),
        ] {
            s.upsert(pod(ns, name, 1, app, None));
        }
        let all = LabelSelector::everything();
        assert_eq!(names(&s.list(None, &all)), ["a/y", "a/z", "b/x", "c/w"]);
        assert_eq!(names(&s.list(Some("a"), &all)), ["a/y", "a/z"]);
        let web = LabelSelector::parse("app=web").unwrap();
        assert_eq!(names(&s.list(None, &web)), ["a/y", "b/x", "c/w"]);
        assert_eq!(names(&s.list(Some("b"), &web)), ["b/x"]);
        let not_web = LabelSelector::parse("app!=web").unwrap();
        assert_eq!(names(&s.list(None, &not_web)), ["a/z"]);
    }

    #[test]
    fn indexes_follow_label_and_owner_changes() {
        let mut s = Store::new();
        s.upsert(pod("a", "p", 1, "web", Some("rs1")));
        assert_eq!(names(&s.controlled_by("rs1")), ["a/p"]);
        // Relabelled and adopted by another owner.
        s.upsert(pod("a", "p", 2, "db", Some("rs2")));
        assert!(s.controlled_by("rs1").is_empty());
        assert_eq!(names(&s.controlled_by("rs2")), ["a/p"]);
        assert!(
            s.list(None, &LabelSelector::parse("app=web").unwrap())
                .is_empty()
        );
        assert_eq!(
            s.list(None, &LabelSelector::parse("app=db").unwrap()).len(),
            1
        );
        s.remove(&ObjectKey::new(Some("a"), "p"), None);
        assert!(s.controlled_by("rs2").is_empty());
        assert!(s.by_label.is_empty() && s.by_controller.is_empty());
    }

    #[test]
    fn a_relist_reports_missed_deletes_and_changes() {
        let mut s = Store::new();
        s.upsert(pod("a", "keep", 1, "web", None));
        s.upsert(pod("a", "gone", 1, "web", None));
        s.upsert(pod("a", "changed", 1, "web", None));
        let changes = s.replace_all(vec![
            pod("a", "keep", 1, "web", None),
            pod("a", "changed", 2, "web", None),
            pod("a", "new", 1, "web", None),
        ]);
        let summary: Vec<String> = changes
            .iter()
            .map(|c| match c {
                Change::Added(o) => format!("+{}", o.key()),
                Change::Modified { new, .. } => format!("~{}", new.key()),
                Change::Deleted(o) => format!("-{}", o.key()),
            })
            .collect();
        assert_eq!(summary, ["~a/changed", "+a/new", "-a/gone"]);
        assert_eq!(s.len(), 3);
    }

    #[test]
    fn a_name_reused_by_a_new_object_is_a_delete_then_an_add() {
        let mut s = Store::new();
        s.upsert(pod("a", "p", 1, "web", Some("rs1")));
        let mut recreated = pod("a", "p", 7, "web", Some("rs2"));
        recreated.uid = "u-other".into();
        let changes = s.replace_all(vec![recreated]);
        assert!(
            matches!(&changes[..], [Change::Deleted(old), Change::Added(new)]
                if old.uid() == "u-p" && new.uid() == "u-other"),
            "{changes:?}"
        );
        assert!(s.controlled_by("rs1").is_empty());
        assert_eq!(names(&s.controlled_by("rs2")), ["a/p"]);
        assert_eq!(s.len(), 1);
    }
}
