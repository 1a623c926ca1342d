//! The public face: configuration, `start`, the running server handle and
//! its shutdown; plus the accept loop (plain HTTP on loopback, HTTPS
//! otherwise) and the GC task.

use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::Watcher;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpListener;
use tokio::sync::{Notify, Semaphore, watch};
use tokio::task::JoinHandle;

use crate::durability::Durability;
use crate::shared::Shared;
use crate::state::State;
use crate::storage::{Storage, StorageError};
use crate::tls::TlsError;

/// How to run the server. Defaults: listen on `127.0.0.1:0`, in memory, no
/// token; with a data directory, [`Durability::Process`].
#[derive(Debug, Clone)]
pub struct Config {
    listen: SocketAddr,
    data_dir: Option<PathBuf>,
    durability: Durability,
    token: Option<String>,
    watch_history: usize,
    watch_history_bytes: usize,
    watch_buffer: usize,
    bookmark_interval: Duration,
    streaming_lists: bool,
    max_connections: usize,
    header_read_timeout: Duration,
    request_timeout: Duration,
    commit_backlog: usize,
    max_database_pages: Option<u64>,
    event_ttl: Duration,
}

impl Default for Config {
    fn default() -> Self {
        Self::new()
    }
}

impl Config {
    pub fn new() -> Self {
        Self {
            listen: SocketAddr::from((Ipv4Addr::LOCALHOST, 0)),
            data_dir: None,
            durability: Durability::default(),
            token: None,
            watch_history: 50_000,
            watch_history_bytes: 128 * 1024 * 1024,
            watch_buffer: 16_384,
            bookmark_interval: Duration::from_secs(60),
            streaming_lists: true,
            max_connections: 1024,
            header_read_timeout: Duration::from_secs(32),
            request_timeout: Duration::from_secs(60),
            commit_backlog: 10_000,
            max_database_pages: None,
            event_ttl: crate::event_ttl::DEFAULT,
        }
    }

    /// The address to bind; port 0 picks a free one.
    pub fn listen(mut self, addr: SocketAddr) -> Self {
        self.listen = addr;
        self
    }

    /// Durable storage in `dir` (created if missing).
    pub fn data_dir(mut self, dir: PathBuf) -> Self {
        self.data_dir = Some(dir);
        self
    }

    /// What an acknowledged write survives when a data directory is set
    /// (default [`Durability::Process`]).
    pub fn durability(mut self, durability: Durability) -> Self {
        self.durability = durability;
        self
    }

    /// Keep everything in memory; nothing survives the process.
    pub fn in_memory(mut self) -> Self {
        self.data_dir = None;
        self
    }

    /// The bearer token clients must send. Required (and generated when
    /// `None`) when listening on a non-loopback address, which is then
    /// served over HTTPS (see [`RunningServer::ca_certificate`]).
    pub fn token(mut self, token: Option<String>) -> Self {
        self.token = token;
        self
    }

    /// How many recent events watches can resume from (default 50,000).
    pub fn watch_history(mut self, events: usize) -> Self {
        self.watch_history = events;
        self
    }

    /// How many bytes of events (as serialized for watchers) the watch
    /// history may hold (default 128 MiB); the oldest go first, like the
    /// events past [`Config::watch_history`].
    pub fn watch_history_bytes(mut self, bytes: usize) -> Self {
        self.watch_history_bytes = bytes;
        self
    }

    /// How many client connections are served at once (default 1,024).
    /// Past it, new connections wait in the listen backlog until one closes.
    pub fn max_connections(mut self, connections: usize) -> Self {
        self.max_connections = connections.max(1);
        self
    }

    /// How long a client may take to send a request's headers, and how long
    /// a connection may sit idle between requests (default 32 s, as
    /// kube-apiserver's `ReadHeaderTimeout`). Past it the connection is closed.
    pub fn header_read_timeout(mut self, timeout: Duration) -> Self {
        self.header_read_timeout = timeout;
        self
    }

    /// How long a client may take to send a request's body (default 60 s,
    /// kube-apiserver's `--request-timeout`); past it the request gets
    /// `504 Timeout`.
    pub fn request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = timeout;
        self
    }

    /// How many writes may wait to be committed while storage is failing
    /// (a full disk, say) before new writes are refused with `503` (default
    /// 10,000).
    pub fn commit_backlog(mut self, writes: usize) -> Self {
        self.commit_backlog = writes.max(1);
        self
    }

    /// Caps the database at this many pages (SQLite's `max_page_count`; a
    /// page is 4 KiB): commits past it fail as on a full disk. For tests of
    /// what a full disk does.
    #[doc(hidden)]
    pub fn max_database_pages(mut self, pages: u64) -> Self {
        self.max_database_pages = Some(pages);
        self
    }

    /// How far a watcher may fall behind the newest event before it is closed (default 16,384 events).
    pub fn watch_buffer(mut self, events: usize) -> Self {
        self.watch_buffer = events;
        self
    }

    /// How often watches that allow bookmarks get one (default 60 s).
    pub fn bookmark_interval(mut self, every: Duration) -> Self {
        self.bookmark_interval = every;
        self
    }

    /// Whether watches may ask for streaming lists (`sendInitialEvents`;
    /// default yes). Without them the server answers such a watch as an API
    /// server with the WatchList feature off does: 422 Invalid — useful to
    /// test clients' fallback to paged lists.
    pub fn streaming_lists(mut self, enabled: bool) -> Self {
        self.streaming_lists = enabled;
        self
    }

    /// How long an Event lives after it was last written (kube-apiserver's
    /// `--event-ttl`; default an hour); zero keeps events for ever.
    pub fn event_ttl(mut self, ttl: Duration) -> Self {
        self.event_ttl = ttl;
        self
    }
}

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot listen on {addr}: {source} (is another process using the port?)")]
    Bind {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error(transparent)]
    Storage(#[from] StorageError),
    #[error(transparent)]
    Tls(#[from] TlsError),
    #[error(transparent)]
    Token(#[from] crate::token::TokenError),
    #[error(transparent)]
    SigningKey(#[from] crate::satoken::KeyError),
}

/// A running server. Dropping it stops serving at once (the listener and
/// every open connection close) without flushing; call
/// [`RunningServer::shutdown`] for an orderly stop.
pub struct RunningServer {
    addr: SocketAddr,
    durability: Option<Durability>,
    token: Option<String>,
    /// PEM of the CA when serving HTTPS.
    ca_pem: Option<String>,
    shared: Arc<Shared>,
    stop: watch::Sender<bool>,
    kill: watch::Sender<bool>,
    tasks: Vec<JoinHandle<()>>,
}

impl std::fmt::Debug for RunningServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunningServer")
            .field("addr", &self.addr)
            .finish()
    }
}

/// Binds, opens storage and starts serving; returns once connections are accepted.
pub async fn start(config: Config) -> Result<RunningServer, Error> {
    let listener = bind(config.listen).map_err(|source| Error::Bind {
        addr: config.listen,
        source,
    })?;
    let addr = listener.local_addr().map_err(|source| Error::Bind {
        addr: config.listen,
        source,
    })?;
    let token = match config.token {
        Some(t) => Some(t),
        None if !config.listen.ip().is_loopback() => Some(crate::token::generate()?),
        None => None,
    };
    let (storage, loaded) = match &config.data_dir {
        Some(dir) => {
            let (dir, durability) = (dir.clone(), config.durability);
            let pages = config.max_database_pages;
            tokio::task::spawn_blocking(move || Storage::open(&dir, durability, pages))
                .await
                .expect("storage open task panicked")?
        }
        None => Storage::in_memory(),
    };
    // A token is required beyond loopback, and kubectl sends tokens only over TLS.
    let tls = if config.listen.ip().is_loopback() {
        None
    } else {
        let (listen, dir) = (config.listen, config.data_dir.clone());
        Some(
            tokio::task::spawn_blocking(move || crate::tls::setup(listen, dir.as_deref()))
                .await
                .expect("TLS setup task panicked")?,
        )
    };
    let sa_key = match &config.data_dir {
        Some(dir) => {
            let dir = dir.clone();
            tokio::task::spawn_blocking(move || crate::satoken::SigningKey::in_dir(&dir))
                .await
                .expect("signing key task panicked")?
        }
        None => crate::satoken::SigningKey::generate()?,
    };
    let durability = storage.durability();
    let mut state = State::new(
        storage,
        loaded.start_rv,
        loaded.objects,
        crate::state::History {
            events: config.watch_history,
            bytes: config.watch_history_bytes,
            buffer: config.watch_buffer,
            commit_backlog: config.commit_backlog,
        },
    );
    let moved = state.adopt_events_api_rows();
    if moved > 0 {
        tracing::info!(events = moved, "stored events.k8s.io events as core Events");
    }
    crate::admission::recount_quotas(&mut state);
    state.follow_up = Some(crate::system::follow_up);
    crate::system::ensure(&mut state, client_addr(addr));
    let (stop, shutdown) = watch::channel(false);
    let (kill, killed) = watch::channel(false);
    let shared = Arc::new(Shared {
        state: Mutex::new(state),
        gc: Notify::new(),
        shutdown,
        killed,
        token: token.as_deref().map(crate::token::Expected::new),
        sa_key,
        bookmark_interval: config.bookmark_interval,
        streaming_lists: config.streaming_lists,
        server_addr: client_addr(addr).to_string(),
        request_timeout: config.request_timeout,
        connections: AtomicUsize::new(0),
        accept_failures: AtomicU64::new(0),
        charges_pending: AtomicBool::new(false),
    });
    let gc_task = tokio::spawn(gc_loop(shared.clone()));
    shared.gc.notify_one();
    let (acceptor, ca_pem) = match tls {
        Some(t) => (Some(t.acceptor), Some(t.ca_pem)),
        None => (None, None),
    };
    let limits = ConnectionLimits {
        max: config.max_connections,
        header_read_timeout: config.header_read_timeout,
    };
    let accept = tokio::spawn(accept_loop(listener, acceptor, shared.clone(), limits));
    let mut tasks = vec![accept, gc_task];
    if !config.event_ttl.is_zero() {
        tasks.push(tokio::spawn(event_expiry_loop(
            shared.clone(),
            config.event_ttl,
        )));
    }
    tracing::info!(
        %addr,
        durability = durability.map_or("none (in memory)", Durability::as_str),
        tls = ca_pem.is_some(),
        "apiserver listening"
    );
    Ok(RunningServer {
        addr,
        durability,
        token,
        ca_pem,
        shared,
        stop,
        kill,
        tasks,
    })
}

fn client_addr(addr: SocketAddr) -> SocketAddr {
    if addr.ip().is_unspecified() {
        SocketAddr::from((Ipv4Addr::LOCALHOST, addr.port()))
    } else {
        addr
    }
}

/// How long a client may take to complete the TLS handshake.
const TLS_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// A listener with the listen backlog Go gives kube-apiserver's: the
/// kernel's `somaxconn` (4,096 on current Linux), not the 128 of Rust's
/// `TcpListener::bind`. Connections past the backlog have their SYNs
/// dropped, and the client's kernel retries them after 1, 3, 7, 15, 31 s:
/// a burst of new connections (a host starting hundreds of workers) or a
/// moment at [`Config::max_connections`] would stall clients for that long.
fn bind(addr: SocketAddr) -> std::io::Result<TcpListener> {
    let socket = if addr.is_ipv4() {
        tokio::net::TcpSocket::new_v4()?
    } else {
        tokio::net::TcpSocket::new_v6()?
    };
    // As `TcpListener::bind` on Unix: a restarted server can take its port
    // back while old connections linger in TIME_WAIT.
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(listen_backlog())
}

/// The kernel's cap on a listen backlog, as Go reads it (at most 65,535).
fn listen_backlog() -> u32 {
    std::fs::read_to_string("/proc/sys/net/core/somaxconn")
        .ok()
        .and_then(|s| s.trim().parse::<u32>().ok())
        .filter(|&n| n > 0)
        .unwrap_or(4096)
        .min(65_535)
}

/// What one client connection may hold.
#[derive(Debug, Clone, Copy)]
struct ConnectionLimits {
    max: usize,
    header_read_timeout: Duration,
}

/// The pause after `accept` fails, as Go's `http.Server` takes it (and so
/// kube-apiserver): 5 ms, doubling up to 1 s, back to 5 ms once a
/// connection is accepted. Without it, a server out of file descriptors
/// retries `accept` in a tight loop, burning a core while nothing changes.
#[derive(Debug, Default)]
pub(crate) struct AcceptBackoff(Option<Duration>);

impl AcceptBackoff {
    const FIRST: Duration = Duration::from_millis(5);
    const MAX: Duration = Duration::from_secs(1);

    /// How long to wait after one more failure.
    pub(crate) fn failed(&mut self) -> Duration {
        let next = self.0.map_or(Self::FIRST, |d| (d * 2).min(Self::MAX));
        self.0 = Some(next);
        next
    }

    pub(crate) fn succeeded(&mut self) {
        self.0 = None;
    }
}

async fn accept_loop(
    listener: TcpListener,
    tls: Option<tokio_rustls::TlsAcceptor>,
    shared: Arc<Shared>,
    limits: ConnectionLimits,
) {
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let mut shutdown = shared.shutdown.clone();
    // One permit per connection: at the cap, new connections wait in the
    // kernel's listen backlog instead of each taking a task and a socket.
    let permits = Arc::new(Semaphore::new(limits.max));
    let mut backoff = AcceptBackoff::default();
    loop {
        let permit = tokio::select! {
            p = permits.clone().acquire_owned() => p.expect("the semaphore is never closed"),
            _ = shutdown.changed() => break,
        };
        let (stream, peer) = tokio::select! {
            conn = listener.accept() => match conn {
                Ok(conn) => {
                    backoff.succeeded();
                    conn
                }
                Err(e) => {
                    let pause = backoff.failed();
                    shared.accept_failures.fetch_add(1, Ordering::Relaxed);
                    tracing::warn!(error = %e, retry_in = ?pause, "apiserver cannot accept a connection (out of file descriptors? raise `ulimit -n` or lower max_connections)");
                    tokio::select! {
                        _ = tokio::time::sleep(pause) => continue,
                        _ = shutdown.changed() => break,
                    }
                }
            },
            _ = shutdown.changed() => break,
        };
        let _ = stream.set_nodelay(true);
        let (shared, tls) = (shared.clone(), tls.clone());
        let watcher = graceful.watcher();
        tokio::spawn(async move {
            let _permit = permit;
            shared.connections.fetch_add(1, Ordering::Relaxed);
            match &tls {
                None => serve(stream, shared.clone(), watcher, limits).await,
                Some(acceptor) => {
                    match tokio::time::timeout(TLS_HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await
                    {
                        Ok(Ok(stream)) => serve(stream, shared.clone(), watcher, limits).await,
                        Ok(Err(e)) => tracing::debug!(%peer, error = %e, "TLS handshake failed"),
                        Err(_) => tracing::debug!(%peer, "TLS handshake timed out"),
                    }
                }
            }
            shared.connections.fetch_sub(1, Ordering::Relaxed);
        });
    }
    drop(listener);
    let _ = tokio::time::timeout(Duration::from_secs(5), graceful.shutdown()).await;
}

/// Serves HTTP/1.1 on one connection until it closes, idles past the header
/// read timeout, or the server shuts down.
async fn serve<S>(stream: S, shared: Arc<Shared>, watcher: Watcher, limits: ConnectionLimits)
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let mut killed = shared.killed.clone();
    let svc = service_fn(move |req| {
        let shared = shared.clone();
        async move { Ok::<_, std::convert::Infallible>(crate::api::handle(shared, req).await) }
    });
    let conn = http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout)
        .serve_connection(TokioIo::new(stream), svc);
    // A dropped server closes its connections at once (dropping one closes
    // its socket); a shut-down one lets them finish first.
    tokio::select! {
        _ = watcher.watch(conn) => {}
        _ = killed.wait_for(|k| *k) => {}
    }
}

/// Deletes expired events every so often (see `event_ttl.rs`).
async fn event_expiry_loop(shared: Arc<Shared>, ttl: Duration) {
    let mut shutdown = shared.shutdown.clone();
    loop {
        tokio::select! {
            _ = tokio::time::sleep(crate::event_ttl::sweep_every(ttl)) => {}
            _ = shutdown.changed() => return,
        }
        let now = crate::time::now_secs();
        let events = crate::event_ttl::all(&shared.lock());
        let Ok(expired) =
            tokio::task::spawn_blocking(move || crate::event_ttl::expired(&events, now, ttl)).await
        else {
            continue;
        };
        if expired.is_empty() {
            continue;
        }
        let n = crate::event_ttl::delete(&mut shared.lock(), &expired);
        if n > 0 {
            tracing::debug!(events = n, "expired events deleted");
        }
    }
}

async fn gc_loop(shared: Arc<Shared>) {
    let mut shutdown = shared.shutdown.clone();
    loop {
        tokio::select! {
            _ = shared.gc.notified() => {}
            _ = shutdown.changed() => return,
        }
        // Debounce: let a burst of deletes land first.
        tokio::time::sleep(Duration::from_millis(50)).await;
        let n = crate::gc::run(&mut shared.lock());
        if n > 0 {
            tracing::debug!(actions = n, "garbage collection pass");
        }
    }
}

impl RunningServer {
    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:PORT` on loopback; `https://ADDR:PORT` otherwise
    /// (`https://127.0.0.1:PORT` when bound to an unspecified address).
    pub fn url(&self) -> String {
        let scheme = if self.ca_pem.is_some() {
            "https"
        } else {
            "http"
        };
        format!("{scheme}://{}", client_addr(self.addr))
    }

    /// The PEM certificate of the CA that signed the server's certificate,
    /// when serving HTTPS (listening beyond loopback). Persisted in the data
    /// directory (`ca.crt`, `ca.key`), so restarts keep the same CA.
    pub fn ca_certificate(&self) -> Option<&str> {
        self.ca_pem.as_deref()
    }

    /// What acknowledged writes survive, as read back from the database
    /// (SQLite's `PRAGMA synchronous`); `None` when running in memory.
    pub fn durability(&self) -> Option<Durability> {
        self.durability
    }

    /// The bearer token clients must send, if any.
    pub fn bearer_token(&self) -> Option<&str> {
        self.token.as_deref()
    }

    /// A kubeconfig for this server, with the token when one is required
    /// and the CA (`certificate-authority-data`) when serving HTTPS.
    pub fn kubeconfig(&self) -> String {
        use base64::Engine as _;
        let user = match &self.token {
            Some(t) => format!("\n    token: {t}"),
            None => " {}".to_owned(),
        };
        let ca = match &self.ca_pem {
            Some(pem) => format!(
                "\n    certificate-authority-data: {}",
                base64::engine::general_purpose::STANDARD.encode(pem)
            ),
            None => String::new(),
        };
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: windlass\n  cluster:\n    server: {}{ca}\ncontexts:\n- name: windlass\n  context:\n    cluster: windlass\n    user: windlass\n    namespace: default\ncurrent-context: windlass\nusers:\n- name: windlass\n  user:{user}\n",
            self.url()
        )
    }

    /// A kube-rs client for this server (its URL, and its CA and token when
    /// it has them; namespace `default`), for tests written with kube-rs.
    #[cfg(feature = "kube")]
    pub async fn client(&self) -> Result<kube::Client, kube::Error> {
        let kubeconfig = kube::config::Kubeconfig::from_yaml(&self.kubeconfig())?;
        let config = kube::Config::from_custom_kubeconfig(
            kubeconfig,
            &kube::config::KubeConfigOptions::default(),
        )
        .await?;
        kube::Client::try_from(config)
    }

    /// Writes [`RunningServer::kubeconfig`] to `path`, readable by its
    /// owner only (mode 0600 from the moment it is created; it may hold the
    /// token), replacing any file there atomically.
    pub fn write_kubeconfig(&self, path: &Path) -> std::io::Result<()> {
        crate::files::write_atomically(path, self.kubeconfig().as_bytes(), 0o600)
    }

    /// Client connections being served now.
    pub fn open_connections(&self) -> usize {
        self.shared.connections.load(Ordering::Relaxed)
    }

    /// How many times accepting a connection has failed (the process out of
    /// file descriptors, say); each failure is logged and waited out.
    pub fn accept_failures(&self) -> u64 {
        self.shared.accept_failures.load(Ordering::Relaxed)
    }

    /// Drops the watch history: resuming from any earlier revision gets `410 Expired`.
    pub fn compact(&self) {
        self.shared.lock().compact();
    }

    /// The newest resourceVersion handed out.
    pub fn current_revision(&self) -> u64 {
        self.shared.lock().rv
    }

    /// Stops accepting, closes watches, lets in-flight requests finish (5 s
    /// at most) and flushes storage.
    pub async fn shutdown(mut self) {
        let _ = self.stop.send(true);
        for t in self.tasks.drain(..) {
            let _ = t.await;
        }
        let shared = self.shared.clone();
        let _ = tokio::task::spawn_blocking(move || shared.lock().close_storage()).await;
    }
}

impl Drop for RunningServer {
    fn drop(&mut self) {
        let _ = self.kill.send(true);
        let _ = self.stop.send(true);
        for t in &self.tasks {
            t.abort();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The limit: 5 ms after the first failed `accept`, doubling to at most
    /// 1 s, as Go's `http.Server`; a success starts over.
    #[test]
    fn accept_backs_off_like_go() {
        let mut b = AcceptBackoff::default();
        let ms: Vec<u128> = (0..10).map(|_| b.failed().as_millis()).collect();
        assert_eq!(ms, [5, 10, 20, 40, 80, 160, 320, 640, 1000, 1000]);
        b.succeeded();
        assert_eq!(b.failed(), Duration::from_millis(5));
    }
}
