//! Watches the plugins directory and hot-reloads plugins.
//!
//! Strategy (as Spin's `watch`): collect file events, wait until the
//! directory has been quiet for a short debounce (editors and `cp` write in
//! pieces), then bring the host in step with the whole directory
//! ([`Host::sync_dir`]): a plugin file whose content changed is reloaded —
//! beside the running version, which keeps running if the new one fails —
//! and one that is gone is unloaded after its in-flight work drains.
//!
//! Any event in the directory starts a sync, hidden names included: a
//! ConfigMap mounted as a volume changes by swapping its hidden `..data`
//! symlink, which changes every plugin file behind it without an event for
//! any of them. Files are compared by content, so a sync that finds nothing
//! new does nothing. Opening or reading a file is not a change: a sync
//! reads every plugin file to compare it, and inotify reports those opens,
//! so were they to start a sync, the host would read its plugins again and
//! again, forever.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use notify::event::{AccessKind, AccessMode};
use notify::{EventKind, RecursiveMode, Watcher};
use tokio::sync::mpsc;

use crate::host::Host;

/// Quiet time before changed files are acted on.
pub const DEBOUNCE: Duration = Duration::from_millis(300);

/// A running directory watcher; dropping it stops watching.
pub struct PluginDir {
    _watcher: notify::RecommendedWatcher,
    task: tokio::task::JoinHandle<()>,
    syncs: Arc<AtomicU64>,
}

impl std::fmt::Debug for PluginDir {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PluginDir")
    }
}

impl Drop for PluginDir {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl PluginDir {
    /// Loads every plugin in `dir`, then keeps the host in step with it.
    pub async fn watch(dir: &Path, host: Arc<Host>) -> notify::Result<Self> {
        let dir = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
        let (tx, rx) = mpsc::unbounded_channel::<PathBuf>();
        let mut watcher =
            notify::recommended_watcher(move |event: notify::Result<notify::Event>| match event {
                Ok(event) if can_change(&event.kind) => {
                    for path in event.paths {
                        let _ = tx.send(path);
                    }
                }
                Ok(_) => {}
                Err(e) => tracing::warn!(error = %e, "plugin directory watch error"),
            })?;
        // Watch before the first scan, so nothing written in between is lost.
        watcher.watch(&dir, RecursiveMode::NonRecursive)?;
        let loaded = host.load_dir(&dir).await;
        tracing::info!(dir = %dir.display(), loaded, "watching plugins directory");
        let syncs = Arc::new(AtomicU64::new(0));
        let task = tokio::spawn(apply_changes(host, dir, rx, syncs.clone()));
        Ok(Self {
            _watcher: watcher,
            task,
            syncs,
        })
    }

    /// How many times the directory has been synced since the first load.
    pub fn syncs(&self) -> u64 {
        self.syncs.load(Ordering::Relaxed)
    }
}

/// Whether an event of this kind can change what the directory holds: not
/// an open, a read or a close after reading (a file closed after writing
/// can).
fn can_change(kind: &EventKind) -> bool {
    match kind {
        EventKind::Access(AccessKind::Close(AccessMode::Write)) => true,
        EventKind::Access(_) => false,
        _ => true,
    }
}

async fn apply_changes(
    host: Arc<Host>,
    dir: PathBuf,
    mut rx: mpsc::UnboundedReceiver<PathBuf>,
    syncs: Arc<AtomicU64>,
) {
    while rx.recv().await.is_some() {
        // Debounce: keep collecting until the directory is quiet.
        while let Ok(Some(_)) = tokio::time::timeout(DEBOUNCE, rx.recv()).await {}
        host.sync_dir(&dir).await;
        syncs.fetch_add(1, Ordering::Relaxed);
    }
}
