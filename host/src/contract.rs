//! The plugin contract as plain host data: manifest, request, outcome.
//!
//! These mirror `wit/controller@0.1.0` but belong to the host: the queue, the
//! writer and the CLI use them without knowing about wasm. They serialize to
//! the camelCase JSON that `windlass plugin inspect|reconcile` prints.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use windlass_selector::{FieldSelector, LabelSelector};

/// A kind of object: `apps/v1` `ReplicaSet`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct KindRef {
    pub api_version: String,
    pub kind: String,
}

impl KindRef {
    pub fn new(api_version: impl Into<String>, kind: impl Into<String>) -> Self {
        Self {
            api_version: api_version.into(),
            kind: kind.into(),
        }
    }
}

impl std::fmt::Display for KindRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.api_version, self.kind)
    }
}

/// One object: kind, namespace (none when cluster-scoped) and name.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectRef {
    pub api_version: String,
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    pub name: String,
}

impl ObjectRef {
    /// The object's kind.
    pub fn kind_ref(&self) -> KindRef {
        KindRef::new(&self.api_version, &self.kind)
    }
}

impl std::fmt::Display for ObjectRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.namespace {
            Some(ns) => write!(f, "{} {}/{}", self.kind, ns, self.name),
            None => write!(f, "{} {}", self.kind, self.name),
        }
    }
}

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
    pub resync_seconds: Option<u32>,
    pub finalizer: Option<String>,
    pub max_concurrency: u32,
}

/// The most workers one plugin may ask for.
pub const MAX_CONCURRENCY: u32 = 1024;

impl Manifest {
    /// Checks what the host relies on; the error says what to fix.
    pub fn validate(&self) -> Result<(), String> {
        if !is_dns_label(&self.name) {
            return Err(format!(
                "manifest name {:?} must be a DNS label: 1-63 lowercase letters, digits or '-', starting and ending with a letter or digit",
                self.name
            ));
        }
        if self.version.is_empty() {
            return Err("manifest version is empty".into());
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
        if let Some(finalizer) = &self.finalizer
            && (finalizer.is_empty()
                || finalizer.len() > 253
                || finalizer.contains(char::is_whitespace))
        {
            return Err(format!(
                "finalizer {finalizer:?} must be a qualified name such as example.com/cleanup"
            ));
        }
        for (role, watch) in self.watches() {
            if watch.kind.api_version.is_empty() || watch.kind.kind.is_empty() {
                return Err(format!("a {role} watch has an empty apiVersion or kind"));
            }
            if let Some(sel) = &watch.label_selector {
                LabelSelector::parse(sel).map_err(|e| format!("{role} {}: {e}", watch.kind))?;
            }
            if let Some(sel) = &watch.field_selector {
                FieldSelector::parse(sel).map_err(|e| format!("{role} {}: {e}", watch.kind))?;
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

    /// May the plugin read this kind through the cache?
    pub fn may_read(&self, api_version: &str, kind: &str) -> bool {
        self.watches()
            .any(|(_, w)| same_kind(&w.kind, api_version, kind))
    }

    /// May the plugin write this kind?
    pub fn may_write(&self, api_version: &str, kind: &str) -> bool {
        same_kind(&self.reconciles.kind, api_version, kind)
            || self
                .owns
                .iter()
                .any(|w| same_kind(&w.kind, api_version, kind))
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

fn is_dns_label(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= 63
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
        && b.iter()
            .all(|&c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-')
}

/// One reconcile request: the key and the current state around it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    pub key: ObjectRef,
    /// The primary object as JSON text, or none if it is gone.
    pub object: Option<String>,
    /// Owned children as JSON text.
    pub owned: Vec<String>,
    pub attempt: u32,
}

/// A Kubernetes object given as JSON text, with its identity parsed out.
///
/// The text is kept as the plugin wrote it; the header is what the host needs
/// to check and route the write without parsing the whole object again.
#[derive(Debug, Clone)]
pub struct ObjectText {
    /// Well-formed JSON (`parse` checked every byte of it), without
    /// surrounding whitespace.
    text: Box<str>,
    header: ObjectHeader,
}

/// The identifying fields of an object.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ObjectHeader {
    pub api_version: String,
    pub kind: String,
    pub namespace: Option<String>,
    pub name: Option<String>,
    pub generate_name: Option<String>,
    pub resource_version: Option<String>,
}

impl ObjectText {
    /// Parses `text` as a JSON object with `apiVersion`, `kind` and a
    /// `metadata.name` (or, when `allow_generate_name`, a `generateName`).
    ///
    /// One pass reads the header and checks the whole text: the fields the
    /// header does not need are skipped by serde_json's validating skip (the
    /// same check `RawValue` makes), and trailing characters are refused.
    pub fn parse(text: String, allow_generate_name: bool) -> Result<Self, String> {
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Meta<'a> {
            #[serde(borrow, default)]
            name: Option<std::borrow::Cow<'a, str>>,
            #[serde(borrow, default)]
            namespace: Option<std::borrow::Cow<'a, str>>,
            #[serde(borrow, default)]
            generate_name: Option<std::borrow::Cow<'a, str>>,
            #[serde(borrow, default)]
            resource_version: Option<std::borrow::Cow<'a, str>>,
        }
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Head<'a> {
            #[serde(borrow, default)]
            api_version: Option<std::borrow::Cow<'a, str>>,
            #[serde(borrow, default)]
            kind: Option<std::borrow::Cow<'a, str>>,
            #[serde(borrow, default)]
            metadata: Option<Meta<'a>>,
        }
        let head: Head<'_> =
            serde_json::from_str(&text).map_err(|e| format!("not a JSON object: {e}"))?;
        let api_version = head
            .api_version
            .filter(|s| !s.is_empty())
            .ok_or("object has no apiVersion")?
            .into_owned();
        let kind = head
            .kind
            .filter(|s| !s.is_empty())
            .ok_or("object has no kind")?
            .into_owned();
        let meta = head
            .metadata
            .ok_or_else(|| format!("{kind} has no metadata"))?;
        let owned = |c: Option<std::borrow::Cow<'_, str>>| c.map(|c| c.into_owned());
        let header = ObjectHeader {
            api_version,
            kind,
            namespace: owned(meta.namespace).filter(|s| !s.is_empty()),
            name: owned(meta.name).filter(|s| !s.is_empty()),
            generate_name: owned(meta.generate_name).filter(|s| !s.is_empty()),
            resource_version: owned(meta.resource_version).filter(|s| !s.is_empty()),
        };
        if header.name.is_none() && !(allow_generate_name && header.generate_name.is_some()) {
            return Err(format!(
                "{} has no metadata.name{}",
                header.kind,
                if allow_generate_name {
                    " or metadata.generateName"
                } else {
                    ""
                }
            ));
        }
        let json_space = |c: char| matches!(c, ' ' | '\t' | '\n' | '\r');
        let text = match text.trim_matches(json_space) {
            trimmed if trimmed.len() == text.len() => text.into_boxed_str(),
            trimmed => trimmed.into(),
        };
        Ok(Self { text, header })
    }

    /// The same object again, from another copy of its text: what `parse`
    /// of `text` would return, without parsing it again. (Returns `self`'s
    /// header with `text`; meant for a text equal to `self.text()`.)
    pub(crate) fn with_text(&self, text: String) -> Self {
        debug_assert_eq!(text, *self.text);
        Self {
            text: text.into_boxed_str(),
            header: self.header.clone(),
        }
    }

    /// The JSON text.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The identity fields.
    pub fn header(&self) -> &ObjectHeader {
        &self.header
    }

    /// The object's reference, when it has a name. `default_namespace`
    /// fills in a missing namespace (writes default to the primary's).
    pub fn object_ref(&self, default_namespace: Option<&str>) -> Option<ObjectRef> {
        Some(ObjectRef {
            api_version: self.header.api_version.clone(),
            kind: self.header.kind.clone(),
            namespace: self
                .header
                .namespace
                .clone()
                .or_else(|| default_namespace.map(str::to_owned)),
            name: self.header.name.clone()?,
        })
    }
}

impl PartialEq for ObjectText {
    fn eq(&self, other: &Self) -> bool {
        self.text == other.text
    }
}

impl Eq for ObjectText {}

impl Serialize for ObjectText {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        // Embedded as JSON, not as a string. `parse` validated the text, so
        // this borrow cannot fail; it is checked again because a `RawValue`
        // can only be made by checking.
        let raw: &RawValue = serde_json::from_str(&self.text).map_err(serde::ser::Error::custom)?;
        raw.serialize(s)
    }
}

/// A JSON merge patch against one object.
#[derive(Debug, Clone, Serialize)]
pub struct Patch {
    pub target: ObjectRef,
    pub patch: Box<RawValue>,
}

impl PartialEq for Patch {
    fn eq(&self, other: &Self) -> bool {
        self.target == other.target && self.patch.get() == other.patch.get()
    }
}

impl Eq for Patch {}

/// A write a plugin asks for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Write {
    Apply(ObjectText),
    Replace(ObjectText),
    UpdateStatus(ObjectText),
    MergePatch(Patch),
    Delete(ObjectRef),
}

impl Write {
    /// The apiVersion and kind this write touches.
    pub fn kind(&self) -> (&str, &str) {
        match self {
            Write::Apply(o) | Write::Replace(o) | Write::UpdateStatus(o) => {
                (&o.header.api_version, &o.header.kind)
            }
            Write::MergePatch(p) => (&p.target.api_version, &p.target.kind),
            Write::Delete(r) => (&r.api_version, &r.kind),
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
        }
    }
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
}

fn as_millis<S: serde::Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
    d.map(|d| d.as_millis() as u64).serialize(s)
}

impl Serialize for Request {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let raw = |t: &str| RawValue::from_string(t.to_owned()).map_err(serde::ser::Error::custom);
        let mut st = s.serialize_struct("Request", 4)?;
        st.serialize_field("key", &self.key)?;
        st.serialize_field("object", &self.object.as_deref().map(raw).transpose()?)?;
        let owned: Result<Vec<_>, _> = self.owned.iter().map(|t| raw(t)).collect();
        st.serialize_field("owned", &owned?)?;
        st.serialize_field("attempt", &self.attempt)?;
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
            reconciles: Watch {
                kind: KindRef::new("apps/v1", "ReplicaSet"),
                namespace: None,
                label_selector: None,
                field_selector: None,
            },
            owns: vec![Watch {
                kind: KindRef::new("v1", "Pod"),
                namespace: None,
                label_selector: None,
                field_selector: None,
            }],
            reads: vec![Watch {
                kind: KindRef::new("v1", "Node"),
                namespace: None,
                label_selector: Some("role=worker".into()),
                field_selector: None,
            }],
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
    fn object_text_parses_identity_and_rejects_nameless_objects() {
        let o = ObjectText::parse(
            r#"{"apiVersion":"v1","kind":"Pod","metadata":{"generateName":"web-","namespace":"ns"}}"#.into(),
            true,
        )
        .unwrap();
        assert_eq!(o.header().generate_name.as_deref(), Some("web-"));
        assert_eq!(o.object_ref(None), None);
        let err = ObjectText::parse(o.text().to_owned(), false).unwrap_err();
        assert!(err.contains("no metadata.name"), "{err}");
        assert!(
            ObjectText::parse("[1]".into(), true)
                .unwrap_err()
                .contains("not a JSON object")
        );
        // Fields the header skips are still checked, as is what follows.
        let head = r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a","x":[1,{"y":"z"}]}"#;
        for bad in [
            format!(r#"{head},"spec":{{"x":tru}}}}"#),
            format!(r#"{head},"spec":{{"x":"a\qb"}}}}"#),
            format!("{head},\"spec\":\"a\u{1}b\"}}"),
            format!(r#"{head},"spec":01}}"#),
            format!(r#"{head}}} x"#),
            format!(r#"{head},"spec":{{}}"#),
        ] {
            let err = ObjectText::parse(bad.clone(), false).unwrap_err();
            assert!(err.contains("not a JSON object"), "{bad}: {err}");
        }
        let spaced = ObjectText::parse(format!(" \n{head}}}\t "), false).unwrap();
        assert_eq!(spaced.text(), format!("{head}}}"));
        assert_eq!(serde_json::to_string(&spaced).unwrap(), format!("{head}}}"));
        let named = ObjectText::parse(
            r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a"}}"#.into(),
            false,
        )
        .unwrap();
        assert_eq!(
            named.object_ref(Some("default")).unwrap().to_string(),
            "Pod default/a"
        );
    }

    #[test]
    fn outcome_prints_as_documented() {
        let outcome = Outcome {
            writes: vec![Write::Delete(ObjectRef {
                api_version: "v1".into(),
                kind: "Pod".into(),
                namespace: Some("ns".into()),
                name: "p".into(),
            })],
            prune_owned: true,
            requeue_after: Some(Duration::from_millis(1500)),
            events: vec![],
        };
        let json = serde_json::to_value(&outcome).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"writes":[{"delete":{"apiVersion":"v1","kind":"Pod","namespace":"ns","name":"p"}}],
                "pruneOwned":true,"requeueAfterMs":1500,"events":[]})
        );
    }
}
