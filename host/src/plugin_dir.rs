//! Watches the plugins directory and hot-reloads plugins.
//!
//! Strategy (as Spin's `watch`): collect file events, wait until the
//! directory has been quiet for a short debounce (editors and `cp` write in
//! pieces), then act once per changed file: a `*.wasm` that exists is
//! (re)loaded — beside the running version, which keeps running if the new
//! one fails — and one that is gone is unloaded after its in-flight work
//! drains. Hidden files (temporaries) and other extensions are ignored.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use notify::{RecursiveMode, Watcher};
use sha2::{Digest, Sha256};
use tokio::sync::mpsc;

use crate::host::{Host, is_plugin_file};

/// Quiet time before changed files are acted on.
pub const DEBOUNCE: Duration = Duration::from_millis(300);

/// A running directory watcher; dropping it stops watching.
pub struct PluginDir {
    _watcher: notify::RecommendedWatcher,
    task: tokio::task::JoinHandle<()>,
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
                Ok(event) => {
                    for path in event.paths {
                        let _ = tx.send(path);
                    }
                }
                Err(e) => tracing::warn!(error = %e, "plugin directory watch error"),
            })?;
        // Watch before the first scan, so nothing written in between is lost.
        watcher.watch(&dir, RecursiveMode::NonRecursive)?;
        let loaded = host.load_dir(&dir).await;
        tracing::info!(dir = %dir.display(), loaded, "watching plugins directory");
        let task = tokio::spawn(apply_changes(host, rx));
        Ok(Self {
            _watcher: watcher,
            task,
        })
    }
}

async fn apply_changes(host: Arc<Host>, mut rx: mpsc::UnboundedReceiver<PathBuf>) {
    while let Some(first) = rx.recv().await {
        let mut changed = BTreeSet::from([first]);
        // Debounce: keep collecting until the directory is quiet.
        while let Ok(Some(path)) = tokio::time::timeout(DEBOUNCE, rx.recv()).await {
            changed.insert(path);
        }
        for path in changed.into_iter().filter(|p| is_plugin_file(p)) {
            if path.is_file() {
                // Unchanged content (a touch, a copy of the same build) is
                // not reloaded.
                if let Ok(bytes) = std::fs::read(&path)
                    && host
                        .is_running(&path, &crate::runtime::hex(&Sha256::digest(&bytes)))
                        .await
                {
                    continue;
                }
                // A failure is logged and recorded by the host; the previous
                // version, if any, keeps running.
                if let Ok(name) = host.load_file(&path).await {
                    tracing::info!(plugin = %name, file = %path.display(), "plugin loaded");
                }
            } else {
                tracing::info!(file = %path.display(), "plugin file removed; stopping it");
                host.unload_file(&path).await;
            }
        }
    }
}
