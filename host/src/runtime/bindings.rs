//! The one `bindgen!` module: the imports of each contract version the host
//! implements (0.1 and 0.2), and the typed calls of their exports.
//!
//! Exports are not called through bindgen's generated types: their results
//! are lifted as the capped types of `output.rs`, and requests are lowered
//! borrowed from the host's `Request` (`RequestV1`, `RequestV2`), so a call
//! copies each string once, into the guest, and no output is allocated past
//! its cap.

pub(crate) mod v1 {
    wasmtime::component::bindgen!({
        path: "../wit/controller@0.1.0",
        world: "windlass:controller/controller@0.1.0",
        imports: { default: trappable },
    });
}

pub(crate) mod v2 {
    wasmtime::component::bindgen!({
        path: "../wit/controller@0.2.0",
        world: "windlass:controller/controller@0.2.0",
        imports: { default: trappable },
    });
}

use wasmtime::AsContextMut;
use wasmtime::component::{
    Component, ComponentExportIndex, ComponentType, Func, Instance, Lower, TypedFunc,
};

use super::output::{self, MapOut, RawResult};
use crate::contract::{self, IndexEntry, Manifest};

/// A contract version the host implements.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Contract {
    /// `windlass:controller@0.1.0`
    V1,
    /// `windlass:controller@0.2.0`
    V2,
}

impl Contract {
    /// Every version, oldest first.
    pub const ALL: [Contract; 2] = [Contract::V1, Contract::V2];

    /// The package name and version, e.g. `windlass:controller@0.2.0`.
    pub fn package(self) -> &'static str {
        match self {
            Contract::V1 => "windlass:controller@0.1.0",
            Contract::V2 => "windlass:controller@0.2.0",
        }
    }

    /// The version alone, e.g. `0.2.0`.
    pub fn version(self) -> &'static str {
        &self.package()[PACKAGE_NAME.len() + 1..]
    }

    /// The exports its world requires.
    pub(crate) fn exports(self) -> &'static [&'static str] {
        match self {
            Contract::V1 => &["manifest", "reconcile", "finalize", "map"],
            Contract::V2 => &["manifest", "reconcile", "finalize", "map", "index"],
        }
    }

    /// The version a package string names, if the host implements it.
    pub(crate) fn of_package(package: &str) -> Option<Contract> {
        Self::ALL.into_iter().find(|c| c.package() == package)
    }
}

impl std::fmt::Display for Contract {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.version())
    }
}

/// The package name without its version, to recognise other versions.
pub(crate) const PACKAGE_NAME: &str = "windlass:controller";

/// The world's exports, located once per component and type-checked once,
/// by the first call of every loaded plugin ([`Exports::call_manifest`]).
///
/// `Instance::get_typed_func` would type-check the export's request and
/// outcome types on every call: for a fresh instance per call, thousands of
/// instructions, a quarter of the bare cost of a call. The types are the
/// component's, the same in every instance of it (whichever linker made the
/// instance), so one check covers all of them.
#[derive(Clone)]
pub(crate) struct Exports {
    contract: Contract,
    manifest: ComponentExportIndex,
    reconcile: ComponentExportIndex,
    finalize: ComponentExportIndex,
    map: ComponentExportIndex,
    /// 0.2 only.
    index: Option<ComponentExportIndex>,
}

type ManifestV1Fn = TypedFunc<(), (output::v1::ManifestOut,)>;
type ManifestV2Fn = TypedFunc<(), (output::v2::ManifestResult,)>;
type ReconcileV1Fn<'a> = TypedFunc<(RequestV1<'a>,), (output::v1::ReconcileOut,)>;
type ReconcileV2Fn<'a> = TypedFunc<(RequestV2<'a>,), (output::v2::ReconcileOut,)>;
type MapFn<'a> = TypedFunc<(&'a str,), (MapOut,)>;
type IndexFn<'a> = TypedFunc<(&'a str,), (output::v2::IndexOut,)>;

/// What `manifest` answered.
pub(crate) enum ManifestAnswer {
    Manifest(Box<Manifest>),
    /// A 0.2 plugin refused to load, with its reason.
    Refused(String),
}

// The unchecked `TypedFunc`s rest on the check in `call_manifest`.
#[allow(unsafe_code)]
impl Exports {
    /// `None` if an export is missing (`check_world` reports which).
    pub(crate) fn new(component: &Component, contract: Contract) -> Option<Self> {
        let index = |name: &str| component.get_export_index(None, name);
        Some(Self {
            contract,
            manifest: index("manifest")?,
            reconcile: index("reconcile")?,
            finalize: index("finalize")?,
            map: index("map")?,
            index: match contract {
                Contract::V1 => None,
                Contract::V2 => Some(index("index")?),
            },
        })
    }

    pub(crate) fn contract(&self) -> Contract {
        self.contract
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
    ) -> wasmtime::Result<ManifestAnswer> {
        // The same aliases as the calls below use, so the checked
        // signatures cannot drift from the called ones.
        let _: MapFn<'_> = instance.get_typed_func(&mut store, self.map)?;
        match self.contract {
            Contract::V1 => {
                for index in [&self.reconcile, &self.finalize] {
                    let _: ReconcileV1Fn<'_> = instance.get_typed_func(&mut store, index)?;
                }
                let f: ManifestV1Fn = instance.get_typed_func(&mut store, self.manifest)?;
                Ok(ManifestAnswer::Manifest(Box::new(
                    f.call(store, ())?.0.into(),
                )))
            }
            Contract::V2 => {
                for index in [&self.reconcile, &self.finalize] {
                    let _: ReconcileV2Fn<'_> = instance.get_typed_func(&mut store, index)?;
                }
                if let Some(index) = &self.index {
                    let _: IndexFn<'_> = instance.get_typed_func(&mut store, index)?;
                }
                let f: ManifestV2Fn = instance.get_typed_func(&mut store, self.manifest)?;
                Ok(match f.call(store, ())?.0 {
                    Ok(m) => ManifestAnswer::Manifest(Box::new(m.into())),
                    Err(reason) => ManifestAnswer::Refused(reason.0),
                })
            }
        }
    }

    /// Calls `finalize` if `finalize`, else `reconcile`.
    pub(crate) fn call_reconcile(
        &self,
        mut store: impl AsContextMut,
        instance: &Instance,
        finalize: bool,
        request: &contract::Request,
    ) -> wasmtime::Result<RawResult> {
        let index = if finalize {
            &self.finalize
        } else {
            &self.reconcile
        };
        let f = func(&mut store, instance, index)?;
        match self.contract {
            Contract::V1 => {
                // SAFETY: both exports were checked as this signature (`call_manifest`).
                let f: ReconcileV1Fn<'_> = unsafe { TypedFunc::new_unchecked(f) };
                Ok(output::v1::raw(
                    f.call(store, (RequestV1::from(request),))?.0,
                ))
            }
            Contract::V2 => {
                // SAFETY: as above.
                let f: ReconcileV2Fn<'_> = unsafe { TypedFunc::new_unchecked(f) };
                Ok(output::v2::raw(
                    f.call(store, (RequestV2::from(request),))?.0,
                ))
            }
        }
    }

    pub(crate) fn call_map(
        &self,
        mut store: impl AsContextMut,
        instance: &Instance,
        changed: &str,
    ) -> wasmtime::Result<Vec<contract::ObjectRef>> {
        let f = func(&mut store, instance, &self.map)?;
        // SAFETY: checked as this signature (`call_manifest`).
        let f: MapFn<'_> = unsafe { TypedFunc::new_unchecked(f) };
        Ok(f.call(store, (changed,))?
            .0
            .0
            .into_iter()
            .map(Into::into)
            .collect())
    }

    /// Calls `index` (0.2); a 0.1 plugin files nothing.
    pub(crate) fn call_index(
        &self,
        mut store: impl AsContextMut,
        instance: &Instance,
        object: &str,
    ) -> wasmtime::Result<Option<IndexEntry>> {
        let Some(index) = &self.index else {
            return Ok(None);
        };
        let f = func(&mut store, instance, index)?;
        // SAFETY: checked as this signature (`call_manifest`).
        let f: IndexFn<'_> = unsafe { TypedFunc::new_unchecked(f) };
        Ok(f.call(store, (object,))?.0.map(Into::into))
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

impl<'a> From<&'a contract::ObjectRef> for ObjectRefParam<'a> {
    fn from(r: &'a contract::ObjectRef) -> Self {
        ObjectRefParam {
            api_version: &r.api_version,
            kind: &r.kind,
            namespace: r.namespace.as_deref(),
            name: &r.name,
        }
    }
}

/// The 0.1 WIT `request`, borrowed from the host's [`contract::Request`].
/// `get_typed_func` checks it against the world's `request` field by field.
#[derive(ComponentType, Lower)]
#[component(record)]
struct RequestV1<'a> {
    key: ObjectRefParam<'a>,
    object: Option<&'a str>,
    owned: Vec<&'a str>,
    attempt: u32,
}

impl<'a> From<&'a contract::Request> for RequestV1<'a> {
    fn from(r: &'a contract::Request) -> Self {
        RequestV1 {
            key: (&r.key).into(),
            object: r.object.as_deref(),
            owned: r.owned.iter().map(|t| &**t).collect(),
            attempt: r.attempt,
        }
    }
}

/// The 0.2 WIT `write-failure`, borrowed.
#[derive(ComponentType, Lower)]
#[component(record)]
struct WriteFailureParam<'a> {
    write: u32,
    code: u16,
    reason: &'a str,
    message: &'a str,
}

/// The 0.2 WIT `request`, borrowed.
#[derive(ComponentType, Lower)]
#[component(record)]
struct RequestV2<'a> {
    key: ObjectRefParam<'a>,
    object: Option<&'a str>,
    owned: Vec<&'a str>,
    attempt: u32,
    #[component(name = "now-ms")]
    now_ms: u64,
    #[component(name = "last-failure")]
    last_failure: Option<WriteFailureParam<'a>>,
}

impl<'a> From<&'a contract::Request> for RequestV2<'a> {
    fn from(r: &'a contract::Request) -> Self {
        RequestV2 {
            key: (&r.key).into(),
            object: r.object.as_deref(),
            owned: r.owned.iter().map(|t| &**t).collect(),
            attempt: r.attempt,
            now_ms: r.now_ms,
            last_failure: r.last_failure.as_ref().map(|f| WriteFailureParam {
                write: f.write,
                code: f.code,
                reason: &f.reason,
                message: &f.message,
            }),
        }
    }
}
