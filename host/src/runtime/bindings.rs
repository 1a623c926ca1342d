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
use wasmtime::component::{
    Component, ComponentExportIndex, ComponentType, Func, Instance, Lower, TypedFunc,
};

use crate::contract::{self, KindRef, Manifest, ObjectRef, Watch};

/// The package this host implements; plugins must be built against it.
pub(crate) const PACKAGE: &str = "windlass:controller@0.1.0";
/// The package name without its version, to recognise other versions.
pub(crate) const PACKAGE_NAME: &str = "windlass:controller";
/// The exports the world requires, to name a missing one precisely.
pub(crate) const EXPORTS: [&str; 4] = ["manifest", "reconcile", "finalize", "map"];

/// The world's exports, located once per component and type-checked once,
/// by the first call of every loaded plugin ([`Exports::call_manifest`]).
///
/// `Instance::get_typed_func` would type-check the export's request and
/// outcome types on every call: for a fresh instance per call, thousands of
/// instructions, a quarter of the bare cost of a call. The types are the
/// component's, the same in every instance of it (whichever linker made the
/// instance), so one check covers all of them.
pub(crate) struct Exports {
    manifest: ComponentExportIndex,
    reconcile: ComponentExportIndex,
    finalize: ComponentExportIndex,
    map: ComponentExportIndex,
}

/// A reconcile-shaped export: `reconcile` or `finalize`.
pub(crate) type ReconcileResult = Result<wit::Outcome, wit::ReconcileError>;

type ManifestFn = TypedFunc<(), (wit::Manifest,)>;
type ReconcileFn<'a> = TypedFunc<(RequestParam<'a>,), (ReconcileResult,)>;
type MapFn<'a> = TypedFunc<(&'a str,), (Vec<wit::ObjectRef>,)>;

// The unchecked `TypedFunc`s rest on the check in `call_manifest`.
#[allow(unsafe_code)]
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

    /// Calls `manifest`, after type-checking every export against the
    /// signature its call here uses.
    ///
    /// Loading a plugin calls this before anything else can call the
    /// component, and a plugin that fails it is not loaded: that is what
    /// makes the unchecked `TypedFunc`s of the other calls sound.
    pub(crate) fn call_manifest(
        &self,
        mut store: impl AsContextMut,
        instance: &Instance,
    ) -> wasmtime::Result<wit::Manifest> {
        // The same aliases as the calls below use, so the checked
        // signatures cannot drift from the called ones.
        for index in [&self.reconcile, &self.finalize] {
            let _: ReconcileFn<'_> = instance.get_typed_func(&mut store, index)?;
        }
        let _: MapFn<'_> = instance.get_typed_func(&mut store, self.map)?;
        let f: ManifestFn = instance.get_typed_func(&mut store, self.manifest)?;
        Ok(f.call(store, ())?.0)
    }

    /// Calls `finalize` if `finalize`, else `reconcile`.
    pub(crate) fn call_reconcile(
        &self,
        mut store: impl AsContextMut,
        instance: &Instance,
        finalize: bool,
        request: &contract::Request,
    ) -> wasmtime::Result<ReconcileResult> {
        let index = if finalize {
            &self.finalize
        } else {
            &self.reconcile
        };
        let f = func(&mut store, instance, index)?;
        // SAFETY: both exports were checked as this signature (`call_manifest`).
        let f: ReconcileFn<'_> = unsafe { TypedFunc::new_unchecked(f) };
        Ok(f.call(store, (RequestParam::from(request),))?.0)
    }

    pub(crate) fn call_map(
        &self,
        mut store: impl AsContextMut,
        instance: &Instance,
        changed: &str,
    ) -> wasmtime::Result<Vec<wit::ObjectRef>> {
        let f = func(&mut store, instance, &self.map)?;
        // SAFETY: checked as this signature (`call_manifest`).
        let f: MapFn<'_> = unsafe { TypedFunc::new_unchecked(f) };
        Ok(f.call(store, (changed,))?.0)
    }
}

/// The function exported at `index` (a checked export of the component).
fn func(
    store: impl AsContextMut,
    instance: &Instance,
    index: &ComponentExportIndex,
) -> wasmtime::Result<Func> {
    instance
        .get_func(store, index)
        .ok_or_else(|| wasmtime::format_err!("the instance lacks an export its component has"))
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

/// The WIT `request`, borrowed from the host's [`contract::Request`], so a
/// call copies the strings once, into the guest, and never clones them on
/// the host. `get_typed_func` checks it against the world's `request` field
/// by field, as it checks the generated types.
#[derive(ComponentType, Lower)]
#[component(record)]
struct RequestParam<'a> {
    key: ObjectRefParam<'a>,
    object: Option<&'a str>,
    owned: &'a [String],
    attempt: u32,
}

/// The WIT `object-ref`, borrowed.
#[derive(ComponentType, Lower)]
#[component(record)]
struct ObjectRefParam<'a> {
    #[component(name = "api-version")]
    api_version: &'a str,
    kind: &'a str,
    namespace: Option<&'a str>,
    name: &'a str,
}

impl<'a> From<&'a contract::Request> for RequestParam<'a> {
    fn from(r: &'a contract::Request) -> Self {
        RequestParam {
            key: ObjectRefParam {
                api_version: &r.key.api_version,
                kind: &r.key.kind,
                namespace: r.key.namespace.as_deref(),
                name: &r.key.name,
            },
            object: r.object.as_deref(),
            owned: &r.owned,
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
