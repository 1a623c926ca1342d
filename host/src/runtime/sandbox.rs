//! What a plugin sees of WASI: no directories, environment, arguments or
//! network; a clock frozen at the call's start; stdout and stderr that go
//! to the host's logs, bounded; and nothing that waits.
//!
//! The last point is what bounds a call in wall-clock time. The epoch
//! deadline stops running wasm, but not a host function that blocks: a
//! `std::thread::sleep(1 hour)` is a WASI `poll` on a timer, and it held
//! its thread and pool slot for the hour. Here every import returns at
//! once: `poll` and `pollable.block` report what is ready now, and when
//! nothing is (a timer, which can never fire under a frozen clock) the call
//! fails with [`WouldWait`], a message that tells the author what to do
//! instead. Together with the epoch deadline this bounds a whole call —
//! wasm and host functions — by the deadline plus the longest single
//! (non-blocking) host function.

use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use futures::FutureExt;
use wasmtime::component::{Resource, ResourceTable};
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};
use wasmtime_wasi::p2::bindings::io::poll as async_poll;
use wasmtime_wasi::p2::bindings::sync::io::poll as sync_poll;
use wasmtime_wasi::p2::{DynPollable, OutputStream, Pollable, StreamError};
use wasmtime_wasi::{HostMonotonicClock, HostWallClock, WasiCtx};

use super::lift;
use super::state::CallState;

/// A plugin tried to wait (sleep, or poll something not ready).
#[derive(Debug, thiserror::Error)]
#[error(
    "it tried to wait ({0}, e.g. std::thread::sleep), but a plugin cannot wait: the host's clock is frozen for the call; return requeue-after to be called again later"
)]
pub(crate) struct WouldWait(&'static str);

/// The sandboxed WASI context of one call.
pub(crate) fn wasi(output: &GuestOutput, started: SystemTime) -> WasiCtx {
    WasiCtx::builder()
        .stdout(output.stream(false))
        .stderr(output.stream(true))
        .allow_tcp(false)
        .allow_udp(false)
        .allow_ip_name_lookup(false)
        .wall_clock(FrozenClock::at(started))
        .monotonic_clock(FrozenClock::at(started))
        .build()
}

/// Replaces the full linker's `wasi:io/poll` with [`NoWait`].
pub(crate) fn add_no_wait_poll(
    linker: &mut wasmtime::component::Linker<CallState>,
) -> wasmtime::Result<()> {
    linker.allow_shadowing(true);
    sync_poll::add_to_linker::<CallState, NoWaitIo>(linker, |t| NoWait(t.table()))?;
    linker.allow_shadowing(false);
    Ok(())
}

struct NoWaitIo;

impl wasmtime::component::HasData for NoWaitIo {
    type Data<'a> = NoWait<'a>;
}

/// `wasi:io/poll` that never blocks.
pub(crate) struct NoWait<'a>(&'a mut ResourceTable);

/// A Tokio context for looking at readiness: WASI's timers are Tokio
/// sleeps, which need a runtime's timer to exist (never to run: nothing here
/// waits on it), also when a call runs outside any runtime.
fn tokio_context() -> &'static tokio::runtime::Runtime {
    static RUNTIME: std::sync::OnceLock<tokio::runtime::Runtime> = std::sync::OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .expect("a Tokio runtime with a timer can be built")
    })
}

impl NoWait<'_> {
    /// Whether `pollable` is ready now. A timer already due yields once
    /// before it reports ready, hence two looks.
    fn ready_now(&mut self, rep: u32) -> wasmtime::Result<bool> {
        let _context = tokio_context().enter();
        for _ in 0..2 {
            let ready = async_poll::HostPollable::ready(&mut *self.0, Resource::new_borrow(rep))
                .now_or_never()
                .unwrap_or(Ok(false))?;
            if ready {
                return Ok(true);
            }
        }
        Ok(false)
    }
}

impl sync_poll::Host for NoWait<'_> {
    fn poll(&mut self, pollables: Vec<Resource<DynPollable>>) -> wasmtime::Result<Vec<u32>> {
        if pollables.is_empty() {
            return Err(wasmtime::format_err!("empty poll list"));
        }
        let mut ready = Vec::new();
        for (i, p) in pollables.iter().enumerate() {
            if self.ready_now(p.rep())? {
                ready.push(i as u32);
            }
        }
        if ready.is_empty() {
            return Err(WouldWait("a poll with nothing ready").into());
        }
        Ok(ready)
    }
}

impl sync_poll::HostPollable for NoWait<'_> {
    fn ready(&mut self, pollable: Resource<DynPollable>) -> wasmtime::Result<bool> {
        self.ready_now(pollable.rep())
    }

    fn block(&mut self, pollable: Resource<DynPollable>) -> wasmtime::Result<()> {
        if self.ready_now(pollable.rep())? {
            Ok(())
        } else {
            Err(WouldWait("blocked on a pollable that is not ready").into())
        }
    }

    fn drop(&mut self, pollable: Resource<DynPollable>) -> wasmtime::Result<()> {
        async_poll::HostPollable::drop(&mut *self.0, pollable)
    }
}

/// A clock that always reads the instant the call started.
#[derive(Clone, Copy)]
pub(crate) struct FrozenClock {
    since_epoch: Duration,
}

impl FrozenClock {
    pub(crate) fn at(now: SystemTime) -> Self {
        Self {
            since_epoch: now
                .duration_since(SystemTime::UNIX_EPOCH)
                .unwrap_or_default(),
        }
    }
}

impl HostWallClock for FrozenClock {
    fn resolution(&self) -> Duration {
        Duration::from_millis(1)
    }

    fn now(&self) -> Duration {
        self.since_epoch
    }
}

impl HostMonotonicClock for FrozenClock {
    fn resolution(&self) -> u64 {
        1_000_000
    }

    fn now(&self) -> u64 {
        self.since_epoch.as_nanos() as u64
    }
}

/// Everything a plugin printed during one call, bounded by the call's log
/// budget (shared with the `log` import; see `lift.rs`).
#[derive(Clone, Default)]
pub(crate) struct GuestOutput {
    inner: Arc<Mutex<OutputBuffer>>,
}

#[derive(Default)]
struct OutputBuffer {
    stdout: Vec<u8>,
    stderr: Vec<u8>,
}

impl GuestOutput {
    fn stream(&self, stderr: bool) -> GuestStream {
        GuestStream {
            output: self.clone(),
            stderr,
        }
    }

    fn append(&self, stderr: bool, bytes: &[u8]) {
        if !lift::log_room(bytes.len()) {
            return;
        }
        let mut buf = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let target = if stderr {
            &mut buf.stderr
        } else {
            &mut buf.stdout
        };
        target.extend_from_slice(bytes);
    }

    /// Sends what the guest printed to `tracing`, line by line, and returns
    /// the tail of stderr (a Rust panic message lands there) for error
    /// reports. After a failed call that tail is part of the error, so the
    /// lines are logged at debug level only, not twice.
    pub(crate) fn flush(&self, plugin: &str, failed: bool) -> String {
        let dropped = lift::log_dropped();
        let mut buf = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        if buf.stdout.is_empty() && buf.stderr.is_empty() && dropped == 0 {
            // The common case: the guest printed nothing.
            return String::new();
        }
        for line in String::from_utf8_lossy(&buf.stdout).lines() {
            tracing::info!(plugin, stream = "stdout", "{line}");
        }
        let stderr = String::from_utf8_lossy(&buf.stderr).into_owned();
        for line in stderr.lines() {
            if failed {
                tracing::debug!(plugin, stream = "stderr", "{line}");
            } else {
                tracing::warn!(plugin, stream = "stderr", "{line}");
            }
        }
        if dropped > 0 {
            tracing::warn!(
                plugin,
                dropped_bytes = dropped,
                "plugin output past the per-call log limit was dropped"
            );
        }
        *buf = OutputBuffer::default();
        panic_summary(&stderr)
    }
}

/// The last few meaningful lines of a guest's stderr, on one line. A Rust
/// panic reads `thread '<unnamed>' (1) panicked at src/lib.rs:3:5:` then the
/// message, then a hint about RUST_BACKTRACE that means nothing here.
fn panic_summary(stderr: &str) -> String {
    let lines: Vec<String> = stderr
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("note: run with `RUST_BACKTRACE"))
        .map(
            |l| match (l.starts_with("thread '"), l.find("panicked at ")) {
                (true, Some(at)) => l[at..].to_owned(),
                _ => l.to_owned(),
            },
        )
        .collect();
    lines[lines.len().saturating_sub(4)..].join(" ")
}

/// One of the guest's stdout/stderr streams: always writable, bounded.
struct GuestStream {
    output: GuestOutput,
    stderr: bool,
}

impl IsTerminal for GuestStream {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdoutStream for GuestStream {
    fn p2_stream(&self) -> Box<dyn OutputStream> {
        Box::new(GuestStream {
            output: self.output.clone(),
            stderr: self.stderr,
        })
    }

    fn async_stream(&self) -> Box<dyn tokio::io::AsyncWrite + Send + Sync> {
        Box::new(tokio::io::sink())
    }
}

#[wasmtime_wasi::async_trait]
impl Pollable for GuestStream {
    async fn ready(&mut self) {}
}

impl OutputStream for GuestStream {
    fn write(&mut self, bytes: bytes::Bytes) -> Result<(), StreamError> {
        self.output.append(self.stderr, &bytes);
        Ok(())
    }

    fn flush(&mut self) -> Result<(), StreamError> {
        Ok(())
    }

    fn check_write(&mut self) -> Result<usize, StreamError> {
        Ok(64 * 1024)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn panic_summary_keeps_the_message_and_drops_the_noise() {
        let stderr = "thread '<unnamed>' (1) panicked at src/lib.rs:14:9:\nboom\nnote: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n";
        assert_eq!(
            super::panic_summary(stderr),
            "panicked at src/lib.rs:14:9: boom"
        );
        assert_eq!(super::panic_summary(""), "");
    }
}
