//! windlass-sdk: write windlass controller plugins in Rust, and test them natively.
//!
//! A plugin is a type implementing [`Controller`], exported with
//! [`export!`]. Built for `wasm32-wasip2` it becomes a WebAssembly component
//! of the world `windlass:controller/controller@0.2.0`; built natively it is
//! an ordinary library that [`testing::Harness`] runs under `cargo test`
//! against a fake cache loaded from YAML.
//!
//! ```
//! use windlass_sdk::{Controller, Error, Event, Manifest, Object, Outcome, Request, Watch};
//!
//! /// Keeps a ConfigMap `<name>-greeting` holding `Hello, <spec.who>!` for every Greeting.
//! pub struct Greeter;
//!
//! impl Controller for Greeter {
//!     fn manifest() -> Manifest {
//!         Manifest::new("greeter", Watch::kind("example.com/v1", "Greeting"))
//!             .version("0.1.0")
//!             .owns(Watch::kind("v1", "ConfigMap"))
//!     }
//!
//!     fn reconcile(req: Request) -> Result<Outcome, Error> {
//!         // Gone or being deleted: the host's garbage collection removes the children.
//!         let Some(greeting) = req.live_object() else {
//!             return Ok(Outcome::new());
//!         };
//!         let who = greeting.get_str("spec.who").ok_or(Error::permanent("spec.who is required"))?;
//!         let cm = Object::new("v1", "ConfigMap")
//!             .with_name(&format!("{}-greeting", greeting.name()))
//!             .with_namespace(greeting.namespace().unwrap_or("default"))
//!             .with("data.greeting", format!("Hello, {who}!"));
//!         let mut out = Outcome::new().prune_owned();
//!         if req.owned.is_empty() {
//!             out = out.event(Event::normal("Created", format!("created {}", cm.name())));
//!         }
//!         Ok(out.apply(cm))
//!     }
//! }
//!
//! windlass_sdk::export!(Greeter);
//!
//! // Natively, the same code runs under `cargo test`:
//! use windlass_sdk::testing::Harness;
//! let mut h = Harness::<Greeter>::new()
//!     .with_objects(r#"
//! apiVersion: example.com/v1
//! kind: Greeting
//! metadata: {name: world, namespace: default, uid: g-1}
//! spec: {who: World}
//! "#)?;
//! let key = windlass_sdk::ObjectRef::new("example.com/v1", "Greeting", "default", "world");
//! let out = h.reconcile_key(&key)?;
//! let cm = out.applies().next().unwrap();
//! assert_eq!(cm.get_str("data.greeting"), Some("Hello, World!"));
//! assert!(out.prune_owned);
//!
//! // Applying the outcome the way the host would, then reconciling again, converges.
//! h.apply_outcome(&key, &out)?;
//! assert_eq!(h.reconcile_key(&key)?.events.len(), 0);
//! # Ok::<(), windlass_sdk::Error>(())
//! ```
//!
//! Build the component with `cargo build --target wasm32-wasip2 --release`
//! (crate-type `cdylib`); see `docs/plugin-guide.md`.

// Lets the generated bindings name this crate the same way from inside it
// and from the plugin crates that expand `export!`.
extern crate self as windlass_sdk;

#[cfg(any(all(target_arch = "wasm32", feature = "allocator"), test))]
mod alloc;
pub mod cache;
pub mod conditions;
pub mod duration;
mod error;
mod index;
pub mod instance;
pub mod log;
mod manifest;
pub mod nodes;
mod object;
mod outcome;
mod refs;
mod request;
pub mod revision;
pub mod taints;
pub mod template;
#[cfg(not(target_arch = "wasm32"))]
pub mod testing;
mod time;
#[cfg(feature = "k8s-openapi")]
mod typed;
pub mod view;
#[cfg(target_arch = "wasm32")]
mod wasm;

/// The plugin's allocator (see `alloc.rs`); the `allocator` feature, on by
/// default, installs it.
#[cfg(all(target_arch = "wasm32", feature = "allocator"))]
#[global_allocator]
static ALLOCATOR: alloc::SizeClasses = alloc::SizeClasses::new();

pub use error::Error;
pub use index::IndexEntry;
pub use manifest::{DEFAULT_CONCURRENCY, Grant, Manifest, Watch};
pub use object::{Object, OwnerRef, match_labels, selects, selects_everything};
pub use outcome::{DeleteOptions, Event, EventType, Outcome, Propagation, Write};
pub use refs::{KindRef, ObjectRef};
pub use request::{Request, WriteFailure};
pub use serde_json::{self, Value, json};
pub use time::Time;

/// A controller: the plugin's logic, as associated functions (a plugin keeps
/// no state between calls; the host may use a fresh instance for each).
pub trait Controller {
    /// Describes the plugin. Called once per load.
    fn manifest() -> Manifest;

    /// Describes the plugin, or refuses to load (the host reports the
    /// message): override it to check [`instance::settings`] or shape the
    /// manifest from them. The default returns [`Controller::manifest`].
    fn try_manifest() -> Result<Manifest, Error> {
        Ok(Self::manifest())
    }

    /// Drives the world toward the desired state for `req.key`, returning the
    /// writes that get it there. Depend only on `req` and the cache: the host
    /// may call this any number of times for the same state.
    fn reconcile(req: Request) -> Result<Outcome, Error>;

    /// Called instead of `reconcile` while the primary object is being deleted
    /// and still carries the manifest's finalizer. On success the host
    /// removes the finalizer. The default does nothing.
    fn finalize(req: Request) -> Result<Outcome, Error> {
        let _ = req;
        Ok(Outcome::new())
    }

    /// A `reads` object changed: which primary keys should be reconciled?
    /// The default requeues nothing.
    fn map(changed: &Object) -> Vec<ObjectRef> {
        let _ = changed;
        Vec::new()
    }

    /// Files an object of an [indexed](Watch::indexed) watch: the keys it is
    /// found under with [`cache::lookup`], the amounts [`cache::totals`]
    /// adds up, and a compact summary. `None` leaves it out of the index.
    /// Must be a pure function of the object. The default files nothing.
    fn index(object: &Object) -> Option<IndexEntry> {
        let _ = object;
        None
    }
}

/// Exports a [`Controller`] as the plugin's component exports.
///
/// Call it once, at the top level of the plugin crate, with the name of the
/// type. On `wasm32` it generates the `windlass:controller/controller`
/// exports; natively it only checks that the type implements `Controller`.
#[cfg(target_arch = "wasm32")]
#[macro_export]
macro_rules! export {
    ($ty:ident) => {
        impl $crate::__private::bindings::Guest for $ty {
            fn manifest() -> ::core::result::Result<
                $crate::__private::bindings::Manifest,
                $crate::__private::String,
            > {
                $crate::__private::manifest::<$ty>()
            }
            fn reconcile(
                req: $crate::__private::bindings::Request,
            ) -> ::core::result::Result<
                $crate::__private::bindings::Outcome,
                $crate::__private::bindings::ReconcileError,
            > {
                $crate::__private::reconcile::<$ty>(req)
            }
            fn finalize(
                req: $crate::__private::bindings::Request,
            ) -> ::core::result::Result<
                $crate::__private::bindings::Outcome,
                $crate::__private::bindings::ReconcileError,
            > {
                $crate::__private::finalize::<$ty>(req)
            }
            fn map(
                changed: $crate::__private::bindings::Json,
            ) -> $crate::__private::Vec<$crate::__private::bindings::ObjectRef> {
                $crate::__private::map::<$ty>(changed)
            }
            fn index(
                object: $crate::__private::bindings::Json,
            ) -> ::core::option::Option<$crate::__private::bindings::IndexEntry> {
                $crate::__private::index::<$ty>(object)
            }
        }
        $crate::__export_controller_impl!($ty with_types_in $crate::__private::bindings);
    };
}

/// Exports a [`Controller`] as the plugin's component exports.
///
/// Call it once, at the top level of the plugin crate, with the name of the
/// type. On `wasm32` it generates the `windlass:controller/controller`
/// exports; natively it only checks that the type implements `Controller`.
#[cfg(not(target_arch = "wasm32"))]
#[macro_export]
macro_rules! export {
    ($ty:ident) => {
        const _: fn() = || {
            fn is_controller<C: $crate::Controller>() {}
            is_controller::<$ty>();
        };
    };
}

/// Used by `export!`; not part of the API.
#[doc(hidden)]
#[cfg(target_arch = "wasm32")]
pub mod __private {
    pub use crate::wasm::{bindings, finalize, index, manifest, map, reconcile};
    pub use std::string::String;
    pub use std::vec::Vec;
    pub use wit_bindgen;
}
