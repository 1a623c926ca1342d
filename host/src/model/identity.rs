//! Who an object is, in the three shapes the host needs: [`KindRef`] (a
//! kind: `apps/v1` `ReplicaSet`), [`ObjectRef`] (a kind and a key: how the
//! plugin contract names any object) and [`ObjectKey`] / [`KeyRef`] (a
//! namespace and name within one kind, owned and borrowed: how the caches,
//! indexes and each plugin's queue name objects, since each of them holds
//! one kind).
//!
//! `ObjectKey` and `KeyRef` are one identity in the `String`/`&str` pair of
//! shapes; `ObjectRef` adds the kind and keeps owned strings because it
//! crosses the plugin boundary and prints as JSON. The conversions between
//! them live here, so nobody rebuilds one from another by hand.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use windlass_selector::names;

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

    /// Checks every part against the API server's name rules (a DNS label
    /// namespace, a path-segment name), so that the reference can only ever
    /// name one object; the error says which part is wrong.
    pub fn validate(&self) -> Result<(), String> {
        names::api_version(&self.api_version)?;
        names::kind(&self.kind)?;
        names::path_segment(&self.name).map_err(|e| format!("{self}: name {e}"))?;
        if let Some(ns) = &self.namespace {
            names::dns_label(ns).map_err(|e| format!("{self}: namespace {e}"))?;
        }
        Ok(())
    }
}

impl KindRef {
    /// Checks the apiVersion and kind against the API server's rules.
    pub fn validate(&self) -> Result<(), String> {
        names::api_version(&self.api_version)?;
        names::kind(&self.kind)
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

    /// The key as borrowed strings.
    pub fn as_ref(&self) -> KeyRef<'_> {
        KeyRef {
            namespace: self.namespace.as_deref(),
            name: &self.name,
        }
    }
}

impl std::fmt::Display for ObjectKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.as_ref().fmt(f)
    }
}

/// An object's key, borrowed from the object (or an [`ObjectKey`]); orders
/// as [`ObjectKey`] does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct KeyRef<'a> {
    pub namespace: Option<&'a str>,
    pub name: &'a str,
}

impl std::fmt::Display for KeyRef<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.namespace {
            Some(ns) => write!(f, "{ns}/{}", self.name),
            None => f.write_str(self.name),
        }
    }
}

impl<'a> KeyRef<'a> {
    /// As [`ObjectKey::new`]: an empty namespace is none.
    pub fn new(namespace: Option<&'a str>, name: &'a str) -> Self {
        Self {
            namespace: namespace.filter(|ns| !ns.is_empty()),
            name,
        }
    }
}

impl<'a> From<&'a ObjectKey> for KeyRef<'a> {
    fn from(key: &'a ObjectKey) -> Self {
        key.as_ref()
    }
}

impl From<KeyRef<'_>> for ObjectKey {
    fn from(key: KeyRef<'_>) -> Self {
        ObjectKey::new(key.namespace, key.name)
    }
}

impl ObjectRef {
    /// The object `key` of `kind`.
    pub fn of<'k>(kind: &KindRef, key: impl Into<KeyRef<'k>>) -> Self {
        let key = key.into();
        Self {
            api_version: kind.api_version.clone(),
            kind: kind.kind.clone(),
            namespace: key.namespace.map(str::to_owned),
            name: key.name.to_owned(),
        }
    }

    /// The object's namespace and name, borrowed (an empty namespace is none).
    pub fn key(&self) -> KeyRef<'_> {
        KeyRef::new(self.namespace.as_deref(), &self.name)
    }

    /// Whether the object is of `kind`.
    pub fn is_of(&self, kind: &KindRef) -> bool {
        self.api_version == kind.api_version && self.kind == kind.kind
    }
}

impl<'a> From<&'a ObjectRef> for KeyRef<'a> {
    fn from(r: &'a ObjectRef) -> Self {
        r.key()
    }
}
