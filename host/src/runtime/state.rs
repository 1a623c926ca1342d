//! Per-call store state: the sandboxed WASI context, the memory limiter, and
//! the host side of the `cache` and `log` imports.
//!
//! Every reconcile gets a fresh `CallState`, so nothing a plugin does in one
//! call can be seen in the next.

use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use wasmtime::ResourceLimiter;
use wasmtime::component::ResourceTable;
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};
use wasmtime_wasi::p2::{OutputStream, Pollable, StreamError};
use wasmtime_wasi::{HostMonotonicClock, HostWallClock, WasiCtx, WasiCtxView, WasiView};
use windlass_selector::LabelSelector;

use super::CacheReader;
use super::bindings::wit;
use super::bindings::{cache, log};
use crate::contract::{KindRef, Manifest, ObjectRef};

/// At most this much guest stdout/stderr/log text is kept per call; the rest
/// is counted and dropped so a chatty plugin cannot flood the host's logs.
const MAX_LOG_BYTES: usize = 64 * 1024;

pub(crate) struct CallState {
    /// Built on the first WASI call: most calls make none, and building
    /// one (streams, clocks, a seeded RNG) is a good part of a small call.
    wasi: Option<WasiCtx>,
    /// The instant the call started, which is all the clock ever reads.
    started: SystemTime,
    table: ResourceTable,
    pub(crate) limiter: MemoryLimiter,
    pub(crate) plugin: Arc<str>,
    /// None while `manifest()` runs: nothing is declared yet, so no reads.
    manifest: Option<Arc<Manifest>>,
    cache: Arc<dyn CacheReader>,
    /// Undeclared reads: each fails the call after it returns.
    pub(crate) violations: Vec<String>,
    pub(crate) output: GuestOutput,
}

impl CallState {
    pub(crate) fn new(
        plugin: Arc<str>,
        manifest: Option<Arc<Manifest>>,
        cache: Arc<dyn CacheReader>,
        memory_limit: usize,
        now: SystemTime,
    ) -> Self {
        Self {
            wasi: None,
            started: now,
            table: ResourceTable::new(),
            limiter: MemoryLimiter::new(memory_limit),
            plugin,
            manifest,
            cache,
            violations: Vec::new(),
            output: GuestOutput::default(),
        }
    }

    /// No preopened directories, no environment, no arguments, no network,
    /// and a clock frozen at the start of the call: all a plugin can see is
    /// what it is handed.
    fn sandboxed_wasi(output: &GuestOutput, started: SystemTime) -> WasiCtx {
        WasiCtx::builder()
            .stdout(output.stream("stdout"))
            .stderr(output.stream("stderr"))
            .allow_tcp(false)
            .allow_udp(false)
            .allow_ip_name_lookup(false)
            .wall_clock(FrozenClock::at(started))
            .monotonic_clock(FrozenClock::at(started))
            .build()
    }

    fn check_read(&mut self, api_version: &str, kind: &str) -> Result<(), wit_cache::CacheError> {
        let declared = self
            .manifest
            .as_ref()
            .is_some_and(|m| m.may_read(api_version, kind));
        if declared {
            return Ok(());
        }
        let message = match &self.manifest {
            Some(_) => format!(
                "read {api_version} {kind}, which its manifest does not declare in reconciles, owns or reads"
            ),
            None => {
                format!("read {api_version} {kind} during manifest(), before declaring anything")
            }
        };
        self.violations.push(message.clone());
        Err(wit_cache::CacheError::Undeclared(message))
    }
}

use cache as wit_cache;

impl WasiView for CallState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        let (output, started) = (&self.output, self.started);
        WasiCtxView {
            ctx: self
                .wasi
                .get_or_insert_with(|| Self::sandboxed_wasi(output, started)),
            table: &mut self.table,
        }
    }
}

impl wit::Host for CallState {}

impl cache::Host for CallState {
    fn get(&mut self, r: wit::ObjectRef) -> Result<Option<String>, cache::CacheError> {
        self.check_read(&r.api_version, &r.kind)?;
        let r = ObjectRef::from(r);
        Ok(self.cache.get(&r).map(|o| o.to_string()))
    }

    fn list(
        &mut self,
        kind: wit::KindRef,
        namespace: Option<String>,
        label_selector: Option<String>,
    ) -> Result<Vec<String>, cache::CacheError> {
        self.check_read(&kind.api_version, &kind.kind)?;
        let selector = match label_selector.as_deref().map(str::trim) {
            None | Some("") => LabelSelector::everything(),
            Some(s) => LabelSelector::parse(s)
                .map_err(|e| cache::CacheError::InvalidSelector(e.to_string()))?,
        };
        let kind = KindRef::from(kind);
        let namespace = namespace.filter(|ns| !ns.is_empty());
        Ok(self
            .cache
            .list(&kind, namespace.as_deref(), &selector)
            .into_iter()
            .map(|o| o.to_string())
            .collect())
    }
}

impl log::Host for CallState {
    fn log(&mut self, level: log::Level, message: String) {
        self.output.log(&self.plugin, level, &message);
    }
}

/// Caps the linear memory a plugin may hold, and remembers when it tried to
/// go over, so the resulting trap can be reported as memory exhaustion.
pub(crate) struct MemoryLimiter {
    limit: usize,
    used: usize,
    pub(crate) exceeded: bool,
}

impl MemoryLimiter {
    fn new(limit: usize) -> Self {
        Self {
            limit,
            used: 0,
            exceeded: false,
        }
    }
}

/// The error a refused memory growth traps with.
#[derive(Debug, thiserror::Error)]
#[error("memory limit of {0} bytes exceeded")]
pub(crate) struct MemoryLimitExceeded(pub usize);

impl ResourceLimiter for MemoryLimiter {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        let grow = desired.saturating_sub(current);
        if self.used.saturating_add(grow) > self.limit {
            self.exceeded = true;
            // An error (rather than `Ok(false)`) traps at once: a Rust guest
            // would otherwise abort in its allocator with a vaguer message.
            return Err(MemoryLimitExceeded(self.limit).into());
        }
        self.used += grow;
        Ok(true)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        Ok(desired <= 100_000)
    }
}

/// A clock that always reads the instant the call started.
#[derive(Clone, Copy)]
struct FrozenClock {
    since_epoch: Duration,
}

impl FrozenClock {
    fn at(now: SystemTime) -> Self {
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

/// Everything a plugin printed or logged during one call, bounded.
#[derive(Clone, Default)]
pub(crate) struct GuestOutput {
    inner: Arc<Mutex<OutputBuffer>>,
}

#[derive(Default)]
struct OutputBuffer {
    stdout: Vec<u8>,
    stderr: Vec<u8>,
    kept: usize,
    dropped: usize,
}

impl GuestOutput {
    fn stream(&self, name: &'static str) -> GuestStream {
        GuestStream {
            output: self.clone(),
            stderr: name == "stderr",
        }
    }

    fn append(&self, stderr: bool, bytes: &[u8]) {
        let mut buf = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let room = MAX_LOG_BYTES.saturating_sub(buf.kept);
        let keep = bytes.len().min(room);
        buf.kept += keep;
        buf.dropped += bytes.len() - keep;
        let target = if stderr {
            &mut buf.stderr
        } else {
            &mut buf.stdout
        };
        target.extend_from_slice(&bytes[..keep]);
    }

    fn log(&self, plugin: &str, level: log::Level, message: &str) {
        {
            let mut buf = self.inner.lock().unwrap_or_else(|e| e.into_inner());
            if buf.kept + message.len() > MAX_LOG_BYTES {
                buf.dropped += message.len();
                return;
            }
            buf.kept += message.len();
        }
        match level {
            log::Level::Trace => tracing::trace!(plugin, "{message}"),
            log::Level::Debug => tracing::debug!(plugin, "{message}"),
            log::Level::Info => tracing::info!(plugin, "{message}"),
            log::Level::Warn => tracing::warn!(plugin, "{message}"),
            log::Level::Error => tracing::error!(plugin, "{message}"),
        }
    }

    /// Sends what the guest printed to `tracing`, line by line, and returns
    /// the tail of stderr (a Rust panic message lands there) for error
    /// reports. After a failed call that tail is part of the error, so the
    /// lines are logged at debug level only, not twice.
    pub(crate) fn flush(&self, plugin: &str, failed: bool) -> String {
        let mut buf = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        if buf.stdout.is_empty() && buf.stderr.is_empty() && buf.dropped == 0 {
            // The common case: the guest printed nothing.
            buf.kept = 0;
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
        if buf.dropped > 0 {
            tracing::warn!(
                plugin,
                dropped_bytes = buf.dropped,
                "plugin output over {MAX_LOG_BYTES} bytes in one call was dropped"
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
