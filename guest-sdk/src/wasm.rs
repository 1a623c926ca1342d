//! The WIT bindings (wasm32 only) and the glue between them and the SDK's
//! plain Rust types. Plugin crates reach this only through `export!`.
#![allow(unsafe_code)] // wit-bindgen's generated code and export glue are `unsafe`.

use crate::WriteFailure;
use crate::{Controller, DeleteOptions, Error, Event, EventType, Grant, IndexEntry, KindRef};
use crate::{Manifest, Object, ObjectRef, Outcome, Propagation, Request, Time, Watch, Write};

/// Everything wit-bindgen generates for `windlass:controller/controller@0.2.0`.
#[allow(clippy::too_many_arguments)] // generated ABI glue
pub mod bindings {
    wit_bindgen::generate!({
        path: "../wit/controller@0.2.0",
        world: "controller",
        pub_export_macro: true,
        export_macro_name: "export_world",
        default_bindings_module: "::windlass_sdk::__private::bindings",
        runtime_path: "::windlass_sdk::__private::wit_bindgen::rt",
    });
}

use bindings::windlass::controller::{
    cache as wit_cache, instance as wit_instance, log as wit_log, types as wit,
};

// ---- SDK -> WIT ------------------------------------------------------------

fn kind_to_wit(k: KindRef) -> wit::KindRef {
    wit::KindRef {
        api_version: k.api_version,
        kind: k.kind,
    }
}

fn ref_to_wit(r: ObjectRef) -> wit::ObjectRef {
    wit::ObjectRef {
        api_version: r.api_version,
        kind: r.kind,
        namespace: r.namespace,
        name: r.name,
    }
}

fn watch_to_wit(w: Watch) -> wit::Watch {
    wit::Watch {
        kind: kind_to_wit(w.kind),
        namespace: w.namespace,
        label_selector: w.label_selector,
        field_selector: w.field_selector,
        indexed: w.indexed,
    }
}

fn grant_to_wit(g: Grant) -> wit::Grant {
    wit::Grant {
        kind: kind_to_wit(g.kind),
        namespace: g.namespace,
        subresource: g.subresource,
    }
}

fn manifest_to_wit(m: Manifest) -> wit::Manifest {
    wit::Manifest {
        name: m.name,
        version: m.version,
        reconciles: watch_to_wit(m.reconciles),
        owns: m.owns.into_iter().map(watch_to_wit).collect(),
        reads: m.reads.into_iter().map(watch_to_wit).collect(),
        writes: m.writes.into_iter().map(grant_to_wit).collect(),
        resync_seconds: m.resync_seconds,
        finalizer: m.finalizer,
        max_concurrency: m.max_concurrency.max(1),
    }
}

fn write_to_wit(w: Write) -> wit::Write {
    match w {
        Write::Apply(o) => wit::Write::Apply(o.into_json()),
        Write::Replace(o) => wit::Write::Replace(o.into_json()),
        Write::UpdateStatus(o) => wit::Write::UpdateStatus(o.into_json()),
        Write::MergePatch {
            target,
            subresource,
            patch,
        } => wit::Write::MergePatch(wit::Patch {
            target: ref_to_wit(target),
            subresource,
            patch: patch.to_string(),
        }),
        Write::Delete { target, options } => wit::Write::Delete(wit::Delete {
            target: ref_to_wit(target),
            options: options_to_wit(options),
        }),
        Write::CreateSubresource {
            target,
            subresource,
            body,
        } => wit::Write::CreateSubresource(wit::SubresourceCreate {
            target: ref_to_wit(target),
            subresource,
            body: body.into_json(),
        }),
    }
}

fn options_to_wit(o: DeleteOptions) -> wit::DeleteOptions {
    wit::DeleteOptions {
        grace_period_seconds: o.grace_period_seconds,
        uid: o.uid,
        resource_version: o.resource_version,
        propagation: o.propagation.map(|p| match p {
            Propagation::Background => wit::Propagation::Background,
            Propagation::Foreground => wit::Propagation::Foreground,
            Propagation::Orphan => wit::Propagation::Orphan,
        }),
    }
}

fn entry_to_wit(e: IndexEntry) -> wit::IndexEntry {
    wit::IndexEntry {
        keys: e.keys,
        amounts: e.amounts,
        summary: e.summary,
    }
}

fn event_to_wit(e: Event) -> wit::Event {
    wit::Event {
        type_: match e.type_ {
            EventType::Normal => wit::EventType::Normal,
            EventType::Warning => wit::EventType::Warning,
        },
        reason: e.reason,
        message: e.message,
        regarding: e.regarding.map(ref_to_wit),
    }
}

fn outcome_to_wit(o: Outcome) -> wit::Outcome {
    wit::Outcome {
        writes: o.writes.into_iter().map(write_to_wit).collect(),
        prune_owned: o.prune_owned,
        requeue_after_ms: o
            .requeue_after
            .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
        events: o.events.into_iter().map(event_to_wit).collect(),
    }
}

fn error_to_wit(e: Error) -> wit::ReconcileError {
    wit::ReconcileError {
        message: e.message,
        retry: e.retry,
    }
}

// ---- WIT -> SDK ------------------------------------------------------------

fn ref_from_wit(r: wit::ObjectRef) -> ObjectRef {
    ObjectRef {
        api_version: r.api_version,
        kind: r.kind,
        namespace: r.namespace,
        name: r.name,
    }
}

fn request_from_wit(req: wit::Request) -> Result<Request, Error> {
    // Parsed lazily: a plugin pays only for the fields it reads.
    let object = req.object.map(Object::from_json_lazy).transpose()?;
    let owned = req
        .owned
        .into_iter()
        .map(Object::from_json_lazy)
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Request {
        key: ref_from_wit(req.key),
        object,
        owned,
        attempt: req.attempt,
        now: Time::from_millis(i64::try_from(req.now_ms).unwrap_or(i64::MAX)),
        last_failure: req.last_failure.map(|f| WriteFailure {
            write: f.write,
            code: f.code,
            reason: f.reason,
            message: f.message,
        }),
    })
}

// ---- the exports, generic over the plugin's `Controller` ---------------------

/// `manifest` export.
pub fn manifest<C: Controller>() -> Result<wit::Manifest, String> {
    C::try_manifest()
        .map(manifest_to_wit)
        .map_err(|e| e.message)
}

/// `reconcile` export.
pub fn reconcile<C: Controller>(req: wit::Request) -> Result<wit::Outcome, wit::ReconcileError> {
    request_from_wit(req)
        .and_then(C::reconcile)
        .map(outcome_to_wit)
        .map_err(error_to_wit)
}

/// `finalize` export.
pub fn finalize<C: Controller>(req: wit::Request) -> Result<wit::Outcome, wit::ReconcileError> {
    request_from_wit(req)
        .and_then(C::finalize)
        .map(outcome_to_wit)
        .map_err(error_to_wit)
}

/// `map` export. Unparseable input maps to no keys.
pub fn map<C: Controller>(changed: String) -> Vec<wit::ObjectRef> {
    match Object::from_json_lazy(changed) {
        Ok(obj) => C::map(&obj).into_iter().map(ref_to_wit).collect(),
        Err(_) => Vec::new(),
    }
}

/// `index` export. Unparseable input is filed nowhere.
pub fn index<C: Controller>(object: String) -> Option<wit::IndexEntry> {
    let obj = Object::from_json_lazy(object).ok()?;
    C::index(&obj).map(entry_to_wit)
}

// ---- imports -------------------------------------------------------------------

pub(crate) fn cache_get(r: &ObjectRef) -> Result<Option<Object>, Error> {
    let r = ref_to_wit(r.clone());
    match wit_cache::get(&r) {
        Ok(Some(json)) => Object::from_json_lazy(json).map(Some),
        Ok(None) => Ok(None),
        Err(e) => Err(cache_error(e)),
    }
}

fn cache_error(e: wit_cache::CacheError) -> Error {
    match e {
        wit_cache::CacheError::Undeclared(m)
        | wit_cache::CacheError::InvalidSelector(m)
        | wit_cache::CacheError::Invalid(m) => Error::permanent(m),
    }
}

pub(crate) fn cache_list(
    kind: &KindRef,
    namespace: Option<&str>,
    label_selector: Option<&str>,
) -> Result<Vec<Object>, Error> {
    let kind = kind_to_wit(kind.clone());
    match wit_cache::list(&kind, namespace, label_selector) {
        Ok(items) => items.into_iter().map(Object::from_json_lazy).collect(),
        Err(e) => Err(cache_error(e)),
    }
}

pub(crate) fn cache_lookup(kind: &KindRef, key: &str) -> Result<Vec<Vec<u8>>, Error> {
    let kind = kind_to_wit(kind.clone());
    wit_cache::lookup(&kind, key).map_err(cache_error)
}

pub(crate) fn cache_lookup_objects(kind: &KindRef, key: &str) -> Result<Vec<Object>, Error> {
    let kind = kind_to_wit(kind.clone());
    match wit_cache::lookup_objects(&kind, key) {
        Ok(items) => items.into_iter().map(Object::from_json_lazy).collect(),
        Err(e) => Err(cache_error(e)),
    }
}

pub(crate) fn cache_totals(kind: &KindRef, keys: &[&str]) -> Result<Vec<Vec<i64>>, Error> {
    let kind = kind_to_wit(kind.clone());
    let keys: Vec<String> = keys.iter().map(|k| (*k).to_owned()).collect();
    wit_cache::totals(&kind, &keys).map_err(cache_error)
}

pub(crate) fn settings() -> Option<String> {
    wit_instance::settings()
}

pub(crate) fn log(level: crate::log::Level, message: &str) {
    use crate::log::Level;
    let level = match level {
        Level::Trace => wit_log::Level::Trace,
        Level::Debug => wit_log::Level::Debug,
        Level::Info => wit_log::Level::Info,
        Level::Warn => wit_log::Level::Warn,
        Level::Error => wit_log::Level::Error,
    };
    wit_log::log(level, message);
}
