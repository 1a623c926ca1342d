//! References to kinds and objects: `KindRef` and `ObjectRef`.

use std::fmt;

/// A kind of object, e.g. `KindRef::new("apps/v1", "ReplicaSet")`.
///
/// Core kinds use the bare version: `KindRef::new("v1", "Pod")`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct KindRef {
    /// `group/version`, or just `version` for the core group.
    pub api_version: String,
    /// The kind, e.g. `Pod`.
    pub kind: String,
}

impl KindRef {
    /// A kind from its `apiVersion` and `kind`.
    pub fn new(api_version: impl Into<String>, kind: impl Into<String>) -> Self {
        Self {
            api_version: api_version.into(),
            kind: kind.into(),
        }
    }

    /// Whether this is the kind `api_version`/`kind`.
    pub fn is(&self, api_version: &str, kind: &str) -> bool {
        self.api_version == api_version && self.kind == kind
    }
}

impl fmt::Display for KindRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.api_version, self.kind)
    }
}

/// One object, by kind, namespace (none for cluster-scoped kinds) and name.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ObjectRef {
    /// `group/version`, or just `version` for the core group.
    pub api_version: String,
    /// The kind, e.g. `Pod`.
    pub kind: String,
    /// The namespace, or none for cluster-scoped kinds.
    pub namespace: Option<String>,
    /// The object's name.
    pub name: String,
}

impl ObjectRef {
    /// A namespaced object.
    pub fn new(
        api_version: impl Into<String>,
        kind: impl Into<String>,
        namespace: impl Into<String>,
        name: impl Into<String>,
    ) -> Self {
        Self {
            api_version: api_version.into(),
            kind: kind.into(),
            namespace: Some(namespace.into()),
            name: name.into(),
        }
    }

    /// A cluster-scoped object.
    pub fn cluster(
        api_version: impl Into<String>,
        kind: impl Into<String>,
        name: impl Into<String>,
    ) -> Self {
        Self {
            api_version: api_version.into(),
            kind: kind.into(),
            namespace: None,
            name: name.into(),
        }
    }

    /// The object's kind.
    pub fn kind_ref(&self) -> KindRef {
        KindRef::new(self.api_version.clone(), self.kind.clone())
    }

    /// Whether the object is of kind `api_version`/`kind`.
    pub fn is(&self, api_version: &str, kind: &str) -> bool {
        self.api_version == api_version && self.kind == kind
    }

    /// Whether the object is of kind `kind`.
    pub fn is_kind(&self, kind: &KindRef) -> bool {
        self.is(&kind.api_version, &kind.kind)
    }
}

/// `apps/v1 ReplicaSet default/web`, or `v1 Namespace web` when cluster-scoped.
impl fmt::Display for ObjectRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.namespace {
            Some(ns) => write!(f, "{} {} {}/{}", self.api_version, self.kind, ns, self.name),
            None => write!(f, "{} {} {}", self.api_version, self.kind, self.name),
        }
    }
}
