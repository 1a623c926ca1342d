//! A second linking of each plugin, for calls made inline on an async
//! worker thread (see [`super::Plugin::try_reconcile`]).
//!
//! wasmtime-wasi's synchronous bindings run the WASI functions that may wait
//! (stream writes and flushes, `poll`, stream and socket drops) through
//! Tokio's `block_on`, which panics on a thread that is already driving
//! async tasks. An inline call therefore gets only the plugin's own imports
//! and the WASI functions that never wait (random numbers, the wall clock,
//! environment, exit); every other import is a function that stops the call
//! with [`NeedsThread`], and the caller repeats the call on a blocking
//! thread with the full WASI linker. A reconcile that only computes — the
//! common case — never notices.

use wasmtime::Engine;
use wasmtime::component::{Component, Linker, ResourceType, types::ComponentItem};
use wasmtime_wasi::WasiView;
use wasmtime_wasi::cli::{WasiCli, WasiCliView};
use wasmtime_wasi::clocks::{WasiClocks, WasiClocksView};
use wasmtime_wasi::p2::bindings::{cli, clocks, random};
use wasmtime_wasi::random::WasiRandom;

use super::bindings::Contract;
use super::state::{self, CallState};

/// An inline call reached an import that needs a blocking thread.
#[derive(Debug, thiserror::Error)]
#[error("{0} needs a blocking thread")]
pub(crate) struct NeedsThread(String);

/// Interfaces linked for real in an inline call, by name without version.
const NON_BLOCKING: [&str; 10] = [
    "windlass:controller/types",
    "windlass:controller/cache",
    "windlass:controller/log",
    "windlass:controller/instance",
    "wasi:clocks/wall-clock",
    "wasi:random/random",
    "wasi:random/insecure",
    "wasi:random/insecure-seed",
    "wasi:cli/environment",
    "wasi:cli/exit",
];

/// The stand-in type of resources of stubbed interfaces: no handle of one
/// can ever be made, since every function that would return one stops the
/// call.
struct Stubbed;

/// The inline linker for `component`, built against `contract`.
pub(crate) fn linker(
    engine: &Engine,
    component: &Component,
    contract: Contract,
) -> wasmtime::Result<Linker<CallState>> {
    let mut l = Linker::<CallState>::new(engine);
    state::add_imports(&mut l, contract)?;
    clocks::wall_clock::add_to_linker::<_, WasiClocks>(&mut l, CallState::clocks)?;
    random::random::add_to_linker::<_, WasiRandom>(&mut l, |s| s.ctx().ctx.random())?;
    random::insecure::add_to_linker::<_, WasiRandom>(&mut l, |s| s.ctx().ctx.random())?;
    random::insecure_seed::add_to_linker::<_, WasiRandom>(&mut l, |s| s.ctx().ctx.random())?;
    cli::environment::add_to_linker::<_, WasiCli>(&mut l, CallState::cli)?;
    cli::exit::add_to_linker::<_, WasiCli>(&mut l, CallState::cli)?;

    for (name, item) in component.component_type().imports(engine) {
        let unversioned = name.split_once('@').map_or(name, |(n, _)| n);
        if NON_BLOCKING.contains(&unversioned) {
            continue;
        }
        let ComponentItem::ComponentInstance(instance) = item.ty else {
            continue; // the world imports only interfaces
        };
        let mut stubs = l.instance(name)?;
        for (export, item) in instance.exports(engine) {
            match item.ty {
                ComponentItem::ComponentFunc(_) => {
                    let called = format!("{unversioned}#{export}");
                    stubs.func_new(export, move |_, _, _, _| {
                        Err(NeedsThread(called.clone()).into())
                    })?;
                }
                ComponentItem::Resource(_) => {
                    stubs.resource(export, ResourceType::host::<Stubbed>(), |_, _| Ok(()))?;
                }
                _ => {}
            }
        }
    }
    Ok(l)
}
