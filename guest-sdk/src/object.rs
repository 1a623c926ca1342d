//! `Object`: a Kubernetes object as JSON, with typed accessors for the fields
//! every object has and dotted-path access for the rest.

use std::cell::OnceCell;
use std::fmt;

use serde_json::{Map, Value};

use crate::{Error, KindRef, ObjectRef};

/// A Kubernetes object: JSON text, a [`serde_json::Value`], or both.
///
/// The JSON the host hands a plugin stays text until a field is read; then
/// it is parsed once, and the accessors borrow from the parsed value.
/// [`Object::deserialize`] reads the text directly (into borrowing views,
/// including `&RawValue` slices of it), and an object that was never changed
/// goes back to the host as the same text. New objects are built with
/// [`Object::new`] and the `with_*` builders, or serialized straight to text
/// with [`Object::from_serialize`].
///
/// ```
/// use windlass_sdk::Object;
/// let pod = Object::new("v1", "Pod")
///     .with_generate_name("web-")
///     .with_namespace("default")
///     .with_label("app", "web")
///     .with("spec.containers", serde_json::json!([{"name": "c", "image": "nginx"}]));
/// assert_eq!(pod.get_str("metadata.labels.app"), Some("web"));
/// assert_eq!(pod.label("app"), Some("web"));
/// assert_eq!(pod.get_str("spec.containers.0.image"), Some("nginx"));
/// ```
#[derive(Clone)]
pub struct Object {
    /// The object as JSON text, while it is unmodified: the text it was read
    /// from, or the serialization of `value` once something needed text.
    raw: OnceCell<String>,
    /// The parsed object, once a field has been read or changed. At least
    /// one of `raw` and `value` is always set; when both are, they describe
    /// the same object (text that does not parse reads as an empty object).
    value: OnceCell<Value>,
}

/// A reference from a child to an owner (`metadata.ownerReferences[]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OwnerRef<'a> {
    /// The owner's `apiVersion`.
    pub api_version: &'a str,
    /// The owner's kind.
    pub kind: &'a str,
    /// The owner's name.
    pub name: &'a str,
    /// The owner's uid.
    pub uid: &'a str,
    /// Whether this owner is the managing controller.
    pub controller: bool,
}

impl Object {
    /// A new, empty object of the given kind (`apiVersion`, `kind` and an
    /// empty `metadata`).
    pub fn new(api_version: &str, kind: &str) -> Self {
        let mut map = Map::with_capacity(4);
        map.insert("apiVersion".into(), Value::String(api_version.into()));
        map.insert("kind".into(), Value::String(kind.into()));
        map.insert("metadata".into(), Value::Object(Map::new()));
        Self::wrap(Value::Object(map))
    }

    /// A new object carrying only the identity of `r` (`apiVersion`, `kind`,
    /// `metadata.name` and `metadata.namespace`). Listing such an object as an
    /// `apply` in a pruning outcome keeps the object without changing it.
    pub fn identity(r: &ObjectRef) -> Self {
        Self::identity_text(&r.api_version, &r.kind, r.namespace.as_deref(), &r.name)
    }

    /// A new object carrying only this object's identity; see
    /// [`Object::identity`].
    pub fn to_identity(&self) -> Self {
        Self::identity_text(
            self.api_version(),
            self.kind(),
            self.namespace(),
            self.name(),
        )
    }

    /// An identity object, serialized straight to text: plugins list one per
    /// kept child on every reconcile, so it skips the JSON tree.
    fn identity_text(api_version: &str, kind: &str, namespace: Option<&str>, name: &str) -> Self {
        #[derive(serde::Serialize)]
        struct Identity<'a> {
            #[serde(rename = "apiVersion")]
            api_version: &'a str,
            kind: &'a str,
            metadata: Meta<'a>,
        }
        #[derive(serde::Serialize)]
        struct Meta<'a> {
            name: &'a str,
            #[serde(skip_serializing_if = "Option::is_none")]
            namespace: Option<&'a str>,
        }
        let identity = Identity {
            api_version,
            kind,
            metadata: Meta { name, namespace },
        };
        // Serializing string fields cannot fail.
        Self::from_text(serde_json::to_string(&identity).unwrap_or_default())
    }

    pub(crate) fn wrap(value: Value) -> Self {
        Self {
            raw: OnceCell::new(),
            value: OnceCell::from(value),
        }
    }

    fn from_text(text: String) -> Self {
        Self {
            raw: OnceCell::from(text),
            value: OnceCell::new(),
        }
    }

    /// The parsed JSON, parsing the raw text on first use.
    fn v(&self) -> &Value {
        self.value.get_or_init(|| match self.raw.get() {
            Some(raw) => serde_json::from_str(raw).unwrap_or_else(|_| Value::Object(Map::new())),
            None => Value::Object(Map::new()),
        })
    }

    /// The parsed JSON, mutably; the raw text is dropped as it goes stale.
    fn v_mut(&mut self) -> &mut Value {
        self.v();
        self.raw.take();
        self.value.get_mut().expect("initialized by v()")
    }

    /// The JSON text, serializing the value on first use.
    fn text(&self) -> &str {
        // Serializing a `Value` cannot fail: its map keys are strings.
        self.raw
            .get_or_init(|| serde_json::to_string(self.v()).unwrap_or_default())
    }

    /// Wraps JSON text of one object without parsing it yet: fields are
    /// parsed on first access, and an unmodified object is written back
    /// as the same text. This is how objects from the host arrive. Only a
    /// cheap check is made here; text that later fails to parse reads as an
    /// empty object.
    pub fn from_json_lazy(text: String) -> Result<Self, Error> {
        if !text.trim_start().starts_with('{') {
            return Err(Error::permanent(
                "a Kubernetes object must be a JSON object",
            ));
        }
        Ok(Self::from_text(text))
    }

    /// The object as JSON text, consuming it (no copy if it is unmodified).
    pub fn into_json(mut self) -> String {
        self.text();
        self.raw.take().unwrap_or_default()
    }

    /// Deserializes the whole object into a (possibly borrowing) type,
    /// reading its JSON text directly and skipping fields `T` does not have:
    /// much cheaper than building the full JSON tree, so prefer it for large
    /// objects of which only a few fields matter. `T` may borrow strings and
    /// `&RawValue` slices (parts of the object kept as JSON text) from it.
    pub fn deserialize<'a, T: serde::Deserialize<'a>>(&'a self) -> Result<T, Error> {
        Ok(serde_json::from_str(self.text())?)
    }

    /// Parses JSON text (one object).
    pub fn from_json(text: &str) -> Result<Self, Error> {
        let value: Value = serde_json::from_str(text)?;
        Self::from_value(value)
    }

    /// Wraps a JSON value, which must be a JSON object.
    pub fn from_value(value: Value) -> Result<Self, Error> {
        if value.is_object() {
            Ok(Self::wrap(value))
        } else {
            Err(Error::permanent(
                "a Kubernetes object must be a JSON object",
            ))
        }
    }

    /// The object as JSON text.
    pub fn to_json(&self) -> String {
        self.text().to_owned()
    }

    /// The underlying JSON value.
    pub fn value(&self) -> &Value {
        self.v()
    }

    /// The underlying JSON value, mutably.
    pub fn value_mut(&mut self) -> &mut Value {
        self.v_mut()
    }

    /// Unwraps the JSON value.
    pub fn into_value(self) -> Value {
        self.v();
        self.value.into_inner().unwrap_or(Value::Null)
    }

    /// Deserializes the whole object (or use [`Object::get_as`] for a part).
    pub fn to_typed<T: serde::de::DeserializeOwned>(&self) -> Result<T, Error> {
        match (self.raw.get(), self.value.get()) {
            (Some(raw), None) => Ok(serde_json::from_str(raw)?),
            _ => Ok(T::deserialize(self.v())?),
        }
    }

    /// Builds an object from any serializable value (a JSON object). It is
    /// serialized once, straight to the text the host receives, without
    /// building a JSON tree; fields such as `&RawValue` are copied verbatim.
    pub fn from_serialize<T: serde::Serialize>(value: &T) -> Result<Self, Error> {
        let text = serde_json::to_string(value)?;
        if !text.starts_with('{') {
            return Err(Error::permanent(
                "a Kubernetes object must be a JSON object",
            ));
        }
        Ok(Self::from_text(text))
    }

    // ---- identity --------------------------------------------------------

    /// `apiVersion`, or `""`.
    pub fn api_version(&self) -> &str {
        self.v()
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or("")
    }

    /// `kind`, or `""`.
    pub fn kind(&self) -> &str {
        self.v().get("kind").and_then(Value::as_str).unwrap_or("")
    }

    /// The object's kind.
    pub fn kind_ref(&self) -> KindRef {
        KindRef::new(self.api_version(), self.kind())
    }

    /// Whether this object is of kind `api_version`/`kind`.
    pub fn is(&self, api_version: &str, kind: &str) -> bool {
        self.api_version() == api_version && self.kind() == kind
    }

    fn meta(&self) -> Option<&Map<String, Value>> {
        self.v().get("metadata").and_then(Value::as_object)
    }

    fn meta_str(&self, key: &str) -> Option<&str> {
        self.meta().and_then(|m| m.get(key)).and_then(Value::as_str)
    }

    /// `metadata.name`, or `""` (e.g. a new object with only `generateName`).
    pub fn name(&self) -> &str {
        self.meta_str("name").unwrap_or("")
    }

    /// `metadata.namespace`, if any.
    pub fn namespace(&self) -> Option<&str> {
        self.meta_str("namespace")
    }

    /// `metadata.generateName`, if any.
    pub fn generate_name(&self) -> Option<&str> {
        self.meta_str("generateName")
    }

    /// `metadata.uid`, if any.
    pub fn uid(&self) -> Option<&str> {
        self.meta_str("uid")
    }

    /// `metadata.resourceVersion`, if any.
    pub fn resource_version(&self) -> Option<&str> {
        self.meta_str("resourceVersion")
    }

    /// `metadata.generation`, if any.
    pub fn generation(&self) -> Option<i64> {
        self.meta()
            .and_then(|m| m.get("generation"))
            .and_then(Value::as_i64)
    }

    /// `metadata.creationTimestamp` (RFC 3339), if any.
    pub fn creation_timestamp(&self) -> Option<&str> {
        self.meta_str("creationTimestamp")
    }

    /// `metadata.deletionTimestamp` (RFC 3339), if the object is being deleted.
    pub fn deletion_timestamp(&self) -> Option<&str> {
        self.meta_str("deletionTimestamp")
    }

    /// Whether the object is being deleted (`deletionTimestamp` is set).
    pub fn is_being_deleted(&self) -> bool {
        self.deletion_timestamp().is_some()
    }

    /// A reference to this object.
    pub fn object_ref(&self) -> ObjectRef {
        ObjectRef {
            api_version: self.api_version().to_owned(),
            kind: self.kind().to_owned(),
            namespace: self.namespace().map(str::to_owned),
            name: self.name().to_owned(),
        }
    }

    // ---- labels, annotations, owners, finalizers --------------------------

    fn string_map(&self, key: &str) -> impl Iterator<Item = (&str, &str)> {
        self.meta()
            .and_then(|m| m.get(key))
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
            .filter_map(|(k, v)| Some((k.as_str(), v.as_str()?)))
    }

    /// `metadata.labels` as `(key, value)` pairs.
    pub fn labels(&self) -> impl Iterator<Item = (&str, &str)> {
        self.string_map("labels")
    }

    /// One label's value.
    pub fn label(&self, key: &str) -> Option<&str> {
        self.meta()?.get("labels")?.get(key)?.as_str()
    }

    /// `metadata.annotations` as `(key, value)` pairs.
    pub fn annotations(&self) -> impl Iterator<Item = (&str, &str)> {
        self.string_map("annotations")
    }

    /// One annotation's value.
    pub fn annotation(&self, key: &str) -> Option<&str> {
        self.meta()?.get("annotations")?.get(key)?.as_str()
    }

    /// `metadata.finalizers`.
    pub fn finalizers(&self) -> impl Iterator<Item = &str> {
        self.meta()
            .and_then(|m| m.get("finalizers"))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
    }

    /// `metadata.ownerReferences`.
    pub fn owner_refs(&self) -> impl Iterator<Item = OwnerRef<'_>> {
        self.meta()
            .and_then(|m| m.get("ownerReferences"))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|r| {
                let s = |k: &str| r.get(k).and_then(Value::as_str);
                Some(OwnerRef {
                    api_version: s("apiVersion")?,
                    kind: s("kind")?,
                    name: s("name")?,
                    uid: s("uid")?,
                    controller: r.get("controller").and_then(Value::as_bool) == Some(true),
                })
            })
    }

    /// The owner reference with `controller: true`, if any.
    pub fn controller_ref(&self) -> Option<OwnerRef<'_>> {
        self.owner_refs().find(|r| r.controller)
    }

    /// Whether `owner` is this object's controller (by uid).
    pub fn is_controlled_by(&self, owner: &Object) -> bool {
        match (self.controller_ref(), owner.uid()) {
            (Some(r), Some(uid)) => r.uid == uid,
            _ => false,
        }
    }

    /// The JSON merge patch that releases this object from the owner of uid
    /// `owner` (upstream's `ReleasePod`, `ReleaseReplicaSet`): its owner
    /// references without that one (`null` when none are left), with its
    /// uid and resourceVersion as preconditions, so it fails on an object
    /// that changed or was replaced since it was read.
    ///
    /// ```
    /// use windlass_sdk::{Object, json};
    /// let pod = Object::from_json(r#"{"metadata": {"name": "p", "uid": "u", "resourceVersion": "7",
    ///     "ownerReferences": [{"uid": "rs", "controller": true}, {"uid": "cm"}]}}"#).unwrap();
    /// assert_eq!(pod.release_patch("rs"), json!({"metadata": {
    ///     "ownerReferences": [{"uid": "cm"}], "uid": "u", "resourceVersion": "7"}}));
    /// ```
    pub fn release_patch(&self, owner: &str) -> Value {
        let refs: Vec<&Value> = self
            .get("metadata.ownerReferences")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter(|r| r["uid"] != owner)
            .collect();
        let mut meta = serde_json::Map::new();
        let refs = if refs.is_empty() {
            Value::Null
        } else {
            serde_json::json!(refs)
        };
        meta.insert("ownerReferences".into(), refs);
        if let Some(uid) = self.uid() {
            meta.insert("uid".into(), uid.into());
        }
        if let Some(rv) = self.resource_version() {
            meta.insert("resourceVersion".into(), rv.into());
        }
        serde_json::json!({ "metadata": meta })
    }

    // ---- paths -------------------------------------------------------------

    /// The value at a dotted path, e.g. `spec.replicas` or
    /// `spec.containers.0.image` (a number indexes an array). A key that
    /// itself contains dots (like most label keys) cannot be reached this way:
    /// use [`Object::pointer`] or [`Object::label`].
    pub fn get(&self, path: &str) -> Option<&Value> {
        let mut cur = self.v();
        for seg in path.split('.').filter(|s| !s.is_empty()) {
            cur = match cur {
                Value::Object(m) => m.get(seg)?,
                Value::Array(a) => a.get(seg.parse::<usize>().ok()?)?,
                _ => return None,
            };
        }
        Some(cur)
    }

    /// The value at a JSON pointer (RFC 6901), e.g.
    /// `/metadata/labels/app.kubernetes.io~1name`.
    pub fn pointer(&self, pointer: &str) -> Option<&Value> {
        self.v().pointer(pointer)
    }

    /// The string at a dotted path.
    pub fn get_str(&self, path: &str) -> Option<&str> {
        self.get(path)?.as_str()
    }

    /// The integer at a dotted path.
    pub fn get_i64(&self, path: &str) -> Option<i64> {
        self.get(path)?.as_i64()
    }

    /// The condition of type `type_` in `status.conditions`, if it has one.
    ///
    /// ```
    /// use windlass_sdk::{Object, json};
    /// let pod = Object::from_value(json!({"apiVersion": "v1", "kind": "Pod",
    ///     "metadata": {"name": "p"},
    ///     "status": {"conditions": [{"type": "Ready", "status": "True"}]}})).unwrap();
    /// assert_eq!(pod.condition("Ready").unwrap()["status"], "True");
    /// assert!(pod.condition("Initialized").is_none());
    /// ```
    pub fn condition(&self, type_: &str) -> Option<&Value> {
        self.get("status.conditions")?
            .as_array()?
            .iter()
            .find(|c| c["type"] == type_)
    }

    /// Whether the `metav1.LabelSelector` `selector` (`matchLabels`,
    /// `matchExpressions`) picks this object by its labels. An empty
    /// selector picks everything; an unknown operator, nothing.
    pub fn selected_by(&self, selector: &Value) -> bool {
        selects(selector, |k| self.label(k))
    }

    /// When the condition `type_` became `True`: its `lastTransitionTime`,
    /// or `now` if it has none that parses; `None` unless it is `True`.
    /// (A pod's `Ready` since then counts toward `minReadySeconds`.)
    pub fn true_since(&self, type_: &str, now: crate::Time) -> Option<crate::Time> {
        let c = self.condition(type_).filter(|c| c["status"] == "True")?;
        Some(
            c["lastTransitionTime"]
                .as_str()
                .and_then(crate::Time::parse)
                .unwrap_or(now),
        )
    }

    /// The boolean at a dotted path.
    pub fn get_bool(&self, path: &str) -> Option<bool> {
        self.get(path)?.as_bool()
    }

    /// Deserializes the value at a dotted path; `Ok(None)` if absent or null.
    pub fn get_as<T: serde::de::DeserializeOwned>(&self, path: &str) -> Result<Option<T>, Error> {
        match self.get(path) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => T::deserialize(v)
                .map(Some)
                .map_err(|e| Error::permanent(format!("{path}: {e}"))),
        }
    }

    /// Sets the value at a dotted path, creating objects on the way (and
    /// replacing non-objects in the way). A number indexes an existing array.
    pub fn set(&mut self, path: &str, value: impl Into<Value>) {
        let segs: Vec<&str> = path.split('.').filter(|s| !s.is_empty()).collect();
        set_path(self.v_mut(), &segs, value.into());
    }

    /// Removes and returns the value at a dotted path.
    pub fn remove(&mut self, path: &str) -> Option<Value> {
        let (parent, key) = match path.rsplit_once('.') {
            Some((p, k)) => (Some(p), k),
            None => (None, path),
        };
        let parent = match parent {
            Some(p) => self.get_mut(p)?,
            None => self.v_mut(),
        };
        match parent {
            Value::Object(m) => m.remove(key),
            Value::Array(a) => {
                let i = key.parse::<usize>().ok()?;
                (i < a.len()).then(|| a.remove(i))
            }
            _ => None,
        }
    }

    /// The value at a dotted path, mutably.
    pub fn get_mut(&mut self, path: &str) -> Option<&mut Value> {
        let mut cur = self.v_mut();
        for seg in path.split('.').filter(|s| !s.is_empty()) {
            cur = match cur {
                Value::Object(m) => m.get_mut(seg)?,
                Value::Array(a) => a.get_mut(seg.parse::<usize>().ok()?)?,
                _ => return None,
            };
        }
        Some(cur)
    }

    // ---- builders ------------------------------------------------------------

    fn meta_mut(&mut self) -> &mut Map<String, Value> {
        let root = self.v_mut();
        if !root.is_object() {
            *root = Value::Object(Map::new());
        }
        let Value::Object(root) = root else {
            unreachable!("just made an object")
        };
        let meta = root
            .entry("metadata")
            .or_insert_with(|| Value::Object(Map::new()));
        if !meta.is_object() {
            *meta = Value::Object(Map::new());
        }
        match meta {
            Value::Object(m) => m,
            _ => unreachable!("just made an object"),
        }
    }

    fn meta_map_mut(&mut self, key: &str) -> &mut Map<String, Value> {
        let v = self
            .meta_mut()
            .entry(key)
            .or_insert_with(|| Value::Object(Map::new()));
        if !v.is_object() {
            *v = Value::Object(Map::new());
        }
        match v {
            Value::Object(m) => m,
            _ => unreachable!("just made an object"),
        }
    }

    /// Sets `metadata.name`.
    pub fn with_name(mut self, name: &str) -> Self {
        self.meta_mut().insert("name".into(), name.into());
        self
    }

    /// Sets `metadata.generateName` (the server appends a random suffix).
    pub fn with_generate_name(mut self, prefix: &str) -> Self {
        self.meta_mut().insert("generateName".into(), prefix.into());
        self
    }

    /// Sets `metadata.namespace`.
    pub fn with_namespace(mut self, namespace: &str) -> Self {
        self.meta_mut().insert("namespace".into(), namespace.into());
        self
    }

    /// Sets one label.
    pub fn with_label(mut self, key: &str, value: &str) -> Self {
        self.meta_map_mut("labels").insert(key.into(), value.into());
        self
    }

    /// Sets one annotation.
    pub fn with_annotation(mut self, key: &str, value: &str) -> Self {
        self.meta_map_mut("annotations")
            .insert(key.into(), value.into());
        self
    }

    /// Sets `metadata.resourceVersion` (needed by `replace`).
    pub fn with_resource_version(mut self, rv: &str) -> Self {
        self.meta_mut().insert("resourceVersion".into(), rv.into());
        self
    }

    /// Sets the value at a dotted path (see [`Object::set`]).
    pub fn with(mut self, path: &str, value: impl Into<Value>) -> Self {
        self.set(path, value);
        self
    }
}

fn set_path(cur: &mut Value, segs: &[&str], value: Value) {
    let Some((seg, rest)) = segs.split_first() else {
        *cur = value;
        return;
    };
    if let Value::Array(a) = cur
        && let Some(slot) = seg.parse::<usize>().ok().and_then(|i| a.get_mut(i))
    {
        return set_path(slot, rest, value);
    }
    if !cur.is_object() {
        *cur = Value::Object(Map::new());
    }
    if let Value::Object(m) = cur {
        set_path(m.entry(*seg).or_insert(Value::Null), rest, value);
    }
}

impl From<Object> for Value {
    fn from(o: Object) -> Value {
        o.into_value()
    }
}

impl Default for Object {
    /// An empty JSON object.
    fn default() -> Self {
        Self::wrap(Value::Object(Map::new()))
    }
}

impl PartialEq for Object {
    fn eq(&self, other: &Self) -> bool {
        self.v() == other.v()
    }
}

impl fmt::Debug for Object {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Object").field(self.v()).finish()
    }
}

impl TryFrom<Value> for Object {
    type Error = Error;
    fn try_from(v: Value) -> Result<Self, Error> {
        Self::from_value(v)
    }
}

impl std::str::FromStr for Object {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self, Error> {
        Self::from_json(s)
    }
}

impl serde::Serialize for Object {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.v().serialize(s)
    }
}

impl<'de> serde::Deserialize<'de> for Object {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = Value::deserialize(d)?;
        Object::from_value(v).map_err(|e| serde::de::Error::custom(e.message))
    }
}

/// A `metav1.LabelSelector`'s `matchLabels` as selector text
/// (`app=web,tier=db`), for [`cache::list`](crate::cache::list) to narrow
/// by with the host's label index; `None` when it has none. What it
/// returns is then checked against the whole selector with [`selects`]
/// (or [`Object::selected_by`]).
///
/// ```
/// use windlass_sdk::{json, match_labels};
/// let selector = json!({"matchLabels": {"app": "web", "tier": "db"},
///     "matchExpressions": [{"key": "track", "operator": "Exists"}]});
/// assert_eq!(match_labels(&selector).as_deref(), Some("app=web,tier=db"));
/// assert_eq!(match_labels(&json!({"matchLabels": {}})), None);
/// ```
pub fn match_labels(selector: &Value) -> Option<String> {
    let pairs: Vec<String> = selector["matchLabels"]
        .as_object()?
        .iter()
        .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
        .collect();
    (!pairs.is_empty()).then(|| pairs.join(","))
}

/// Whether the `metav1.LabelSelector` `selector` is empty (no
/// `matchLabels`, no `matchExpressions`): it would select everything, which
/// kube's controllers refuse to act on.
///
/// ```
/// use windlass_sdk::{json, selects_everything};
/// assert!(selects_everything(&json!({"matchLabels": {}, "matchExpressions": null})));
/// assert!(!selects_everything(&json!({"matchLabels": {"app": "web"}})));
/// ```
pub fn selects_everything(selector: &Value) -> bool {
    let empty = |key: &str| {
        selector.get(key).is_none_or(|v| {
            v.is_null()
                || v.as_object().is_some_and(|m| m.is_empty())
                || v.as_array().is_some_and(|a| a.is_empty())
        })
    };
    empty("matchLabels") && empty("matchExpressions")
}

/// Whether the `metav1.LabelSelector` `selector` (`matchLabels`,
/// `matchExpressions`) picks an object whose labels `label` looks up. An
/// empty selector picks everything; an unknown operator, nothing. For
/// labels read into a view of one's own, without an [`Object`]:
///
/// ```
/// use windlass_sdk::{json, selects};
/// let selector = json!({"matchLabels": {"app": "web"},
///     "matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["db"]}]});
/// assert!(selects(&selector, |k| (k == "app").then_some("web")));
/// assert!(!selects(&selector, |k| Some(if k == "app" { "web" } else { "db" })));
/// ```
pub fn selects<'a>(selector: &Value, label: impl Fn(&str) -> Option<&'a str>) -> bool {
    let labels_ok = selector["matchLabels"]
        .as_object()
        .is_none_or(|m| m.iter().all(|(k, v)| label(k) == v.as_str()));
    let expressions_ok = selector["matchExpressions"].as_array().is_none_or(|es| {
        es.iter().all(|e| {
            let value = label(e["key"].as_str().unwrap_or_default());
            let values: Vec<&str> = e["values"]
                .as_array()
                .map(|v| v.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            match e["operator"].as_str().unwrap_or_default() {
                "In" => value.is_some_and(|v| values.contains(&v)),
                "NotIn" => value.is_none_or(|v| !values.contains(&v)),
                "Exists" => value.is_some(),
                "DoesNotExist" => value.is_none(),
                _ => false,
            }
        })
    });
    labels_ok && expressions_ok
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn pod() -> Object {
        Object::from_value(json!({
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": "p", "namespace": "ns", "uid": "u1", "generation": 2,
                "resourceVersion": "7", "labels": {"app.kubernetes.io/name": "web", "x": "1"},
                "annotations": {"a": "b"}, "finalizers": ["f1"],
                "deletionTimestamp": "2026-01-01T00:00:00Z",
                "ownerReferences": [
                    {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "o1"},
                    {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs2", "uid": "o2", "controller": true}
                ]
            },
            "spec": {"containers": [{"name": "c", "image": "i"}]}
        }))
        .unwrap()
    }

    #[test]
    fn metadata_accessors() {
        let p = pod();
        assert_eq!(p.object_ref(), ObjectRef::new("v1", "Pod", "ns", "p"));
        assert_eq!(
            (p.uid(), p.generation(), p.resource_version()),
            (Some("u1"), Some(2), Some("7"))
        );
        assert!(p.is_being_deleted());
        assert_eq!(p.label("app.kubernetes.io/name"), Some("web"));
        assert_eq!(p.labels().count(), 2);
        assert_eq!(p.annotation("a"), Some("b"));
        assert_eq!(p.finalizers().collect::<Vec<_>>(), ["f1"]);
        assert_eq!(p.owner_refs().count(), 2);
        assert_eq!(p.controller_ref().map(|r| r.name), Some("rs2"));
        let owner = Object::new("apps/v1", "ReplicaSet").with("metadata.uid", "o2");
        assert!(p.is_controlled_by(&owner));
    }

    #[test]
    fn paths() {
        let mut p = pod();
        assert_eq!(p.get_str("spec.containers.0.image"), Some("i"));
        assert_eq!(p.get("spec.containers.1"), None);
        assert_eq!(p.get("metadata.name.x"), None);
        assert_eq!(
            p.pointer("/metadata/labels/app.kubernetes.io~1name"),
            Some(&json!("web"))
        );
        p.set("spec.containers.0.image", "j");
        p.set("status.phase", "Running");
        p.set("spec.replicas.nested", 3);
        assert_eq!(p.get_str("spec.containers.0.image"), Some("j"));
        assert_eq!(p.get_str("status.phase"), Some("Running"));
        assert_eq!(p.get_i64("spec.replicas.nested"), Some(3));
        assert_eq!(p.remove("status.phase"), Some(json!("Running")));
        assert_eq!(
            p.remove("spec.containers.0"),
            Some(json!({"name": "c", "image": "j"}))
        );
        assert_eq!(
            p.get_as::<Vec<Value>>("spec.containers").unwrap(),
            Some(vec![])
        );
        assert!(p.get_as::<u32>("metadata.name").is_err());
    }

    #[test]
    fn builders_and_json() {
        let o = Object::new("v1", "ConfigMap")
            .with_name("a")
            .with_namespace("ns")
            .with_label("k", "v")
            .with_annotation("x", "y")
            .with_resource_version("5")
            .with("data.key", "value");
        let back = Object::from_json(&o.to_json()).unwrap();
        assert_eq!(back, o);
        assert_eq!(back.resource_version(), Some("5"));
        let id = Object::identity(&o.object_ref());
        assert_eq!(
            id.to_json(),
            r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"ns"}}"#
        );
        assert!(Object::from_json("[1]").is_err());
        assert!(!Object::from_json("{").unwrap_err().retry);
    }

    #[test]
    fn lazy_objects() {
        let text = r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","labels":{"a":"b"}},"spec":{"x":1}}"#;
        let lazy = Object::from_json_lazy(text.to_owned()).unwrap();
        #[derive(serde::Deserialize)]
        struct Meta<'a> {
            name: &'a str,
        }
        #[derive(serde::Deserialize)]
        struct View<'a> {
            #[serde(borrow)]
            metadata: Meta<'a>,
        }
        assert_eq!(lazy.deserialize::<View<'_>>().unwrap().metadata.name, "p");
        assert_eq!(lazy.clone().into_json(), text);
        assert_eq!(lazy.label("a"), Some("b"));
        assert_eq!(lazy.deserialize::<View<'_>>().unwrap().metadata.name, "p");
        assert_eq!(lazy, Object::from_json(text).unwrap());
        let mut changed = lazy.clone();
        changed.set("spec.x", 2);
        assert!(changed.into_json().contains(r#""x":2"#));
        assert!(Object::from_json_lazy("[]".into()).is_err());
    }
}
