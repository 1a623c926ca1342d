//! The one `bindgen!` of the plugin world, and conversions from its types to
//! the host's plain contract types.

mod generated {
    wasmtime::component::bindgen!({
        path: "../wit/controller@0.1.0",
        world: "windlass:controller/controller@0.1.0",
    });
}

pub(crate) use generated::windlass::controller::types as wit;
pub(crate) use generated::windlass::controller::{cache, log};
pub(crate) use generated::{Controller, ControllerPre};

use wasmtime::AsContextMut;
use wasmtime::component::{Component, ComponentExportIndex, Instance};

use crate::contract::{self, KindRef, Manifest, ObjectRef, Watch};

/// The package this host implements; plugins must be built against it.
pub(crate) const PACKAGE: &str = "windlass:controller@0.1.0";
/// The package name without its version, to recognise other versions.
pub(crate) const PACKAGE_NAME: &str = "windlass:controller";
/// The exports the world requires, to name a missing one precisely.
pub(crate) const EXPORTS: [&str; 4] = ["manifest", "reconcile", "finalize", "map"];

/// The world's exports, located once per component. `ControllerPre::new`
/// type-checks all four at load; a call then looks up (and type-checks)
/// only the one export it uses, where `ControllerPre::instantiate` would
/// check all four on every instantiation.
pub(crate) struct Exports {
    manifest: ComponentExportIndex,
    reconcile: ComponentExportIndex,
    finalize: ComponentExportIndex,
    map: ComponentExportIndex,
}

/// A reconcile-shaped export: `reconcile` or `finalize`.
pub(crate) type ReconcileResult = Result<wit::Outcome, wit::ReconcileError>;

impl Exports {
    /// `None` if an export is missing (`check_world` reports which).
    pub(crate) fn new(component: &Component) -> Option<Self> {
        let index = |name: &str| component.get_export_index(None, name);
        Some(Self {
            manifest: index("manifest")?,
            reconcile: index("reconcile")?,
            finalize: index("finalize")?,
            map: index("map")?,
        })
    }

    pub(crate) fn call_manifest(
        &self,
        mut store: impl AsContextMut,
        instance: &Instance,
    ) -> wasmtime::Result<wit::Manifest> {
        let f = instance.get_typed_func::<(), (wit::Manifest,)>(&mut store, &self.manifest)?;
        Ok(f.call(store, ())?.0)
    }

    /// Calls `finalize` if `finalize`, else `reconcile`.
    pub(crate) fn call_reconcile(
        &self,
        mut store: impl AsContextMut,
        instance: &Instance,
        finalize: bool,
        request: &wit::Request,
    ) -> wasmtime::Result<ReconcileResult> {
        let index = if finalize {
            &self.finalize
        } else {
            &self.reconcile
        };
        let f =
            instance.get_typed_func::<(&wit::Request,), (ReconcileResult,)>(&mut store, index)?;
        Ok(f.call(store, (request,))?.0)
    }

    pub(crate) fn call_map(
        &self,
        mut store: impl AsContextMut,
        instance: &Instance,
        changed: &str,
    ) -> wasmtime::Result<Vec<wit::ObjectRef>> {
        let f =
            instance.get_typed_func::<(&str,), (Vec<wit::ObjectRef>,)>(&mut store, &self.map)?;
        Ok(f.call(store, (changed,))?.0)
    }
}

impl From<wit::KindRef> for KindRef {
    fn from(k: wit::KindRef) -> Self {
        KindRef::new(k.api_version, k.kind)
    }
}

impl From<wit::ObjectRef> for ObjectRef {
    fn from(r: wit::ObjectRef) -> Self {
        ObjectRef {
            api_version: r.api_version,
            kind: r.kind,
            namespace: r.namespace.filter(|ns| !ns.is_empty()),
            name: r.name,
        }
    }
}

impl From<ObjectRef> for wit::ObjectRef {
    fn from(r: ObjectRef) -> Self {
        wit::ObjectRef {
            api_version: r.api_version,
            kind: r.kind,
            namespace: r.namespace,
            name: r.name,
        }
    }
}

impl From<wit::Watch> for Watch {
    fn from(w: wit::Watch) -> Self {
        let non_empty = |s: Option<String>| s.filter(|s| !s.trim().is_empty());
        Watch {
            kind: w.kind.into(),
            namespace: non_empty(w.namespace),
            label_selector: non_empty(w.label_selector),
            field_selector: non_empty(w.field_selector),
        }
    }
}

impl From<wit::Manifest> for Manifest {
    fn from(m: wit::Manifest) -> Self {
        Manifest {
            name: m.name,
            version: m.version,
            reconciles: m.reconciles.into(),
            owns: m.owns.into_iter().map(Into::into).collect(),
            reads: m.reads.into_iter().map(Into::into).collect(),
            resync_seconds: m.resync_seconds,
            finalizer: m.finalizer.filter(|f| !f.is_empty()),
            max_concurrency: m.max_concurrency,
        }
    }
}

impl From<contract::Request> for wit::Request {
    fn from(r: contract::Request) -> Self {
        wit::Request {
            key: r.key.into(),
            object: r.object,
            owned: r.owned,
            attempt: r.attempt,
        }
    }
}

impl From<wit::Request> for contract::Request {
    fn from(r: wit::Request) -> Self {
        contract::Request {
            key: r.key.into(),
            object: r.object,
            owned: r.owned,
            attempt: r.attempt,
        }
    }
}

impl From<wit::EventType> for contract::EventType {
    fn from(t: wit::EventType) -> Self {
        match t {
            wit::EventType::Normal => contract::EventType::Normal,
            wit::EventType::Warning => contract::EventType::Warning,
        }
    }
}
