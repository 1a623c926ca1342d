//! Why a plugin file could not be loaded ([`LoadError`], naming the file)
//! and why one call into a plugin failed ([`PluginError`], naming the
//! plugin): each message is one line a user can act on.

use std::time::Duration;

use super::bindings::Contract;

/// Why a plugin file could not be loaded. Each message is one line naming
/// the file.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("{file}: cannot read: {error}")]
    Read { file: String, error: std::io::Error },
    #[error("{file}: {reason}")]
    NotAPlugin { file: String, reason: String },
    #[error("{file}: not a WebAssembly file (it does not start with the `\\0asm` header)")]
    NotWasm { file: String },
    #[error(
        "{file}: a core WebAssembly module, not a component; build the plugin with `--target wasm32-wasip2`"
    )]
    CoreModule { file: String },
    #[error("{file}: not a valid WebAssembly component: {reason}")]
    Invalid { file: String, reason: String },
    #[error("{file}: built for {found}, but this host supports {}", supported())]
    WrongVersion { file: String, found: String },
    #[error("{file}: not a windlass controller: {reason}")]
    WrongWorld { file: String, reason: String },
    #[error("{file}: manifest() failed: {error}")]
    Manifest { file: String, error: PluginError },
    #[error("{file}: the plugin refused to load: {reason}")]
    Refused { file: String, reason: String },
    #[error("{file}: invalid manifest: {reason}")]
    BadManifest { file: String, reason: String },
}

/// `0.1.0 and 0.2.0`.
fn supported() -> String {
    let versions: Vec<&str> = Contract::ALL.iter().map(|c| c.version()).collect();
    match versions.split_last() {
        Some((last, [])) => (*last).to_owned(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
        None => String::new(),
    }
}

/// Why one call into a plugin failed. Every message names the plugin.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PluginError {
    #[error("plugin {plugin} trapped in {export}: {message}")]
    Trap {
        plugin: String,
        export: &'static str,
        message: String,
    },
    #[error("plugin {plugin}: {export} did not finish within {limit:?} and was stopped")]
    Timeout {
        plugin: String,
        export: &'static str,
        limit: Duration,
    },
    #[error(
        "plugin {plugin}: {export} exceeded its memory limit of {limit_mib} MiB and was stopped"
    )]
    OutOfMemory {
        plugin: String,
        export: &'static str,
        limit_mib: usize,
    },
    #[error("plugin {plugin}: {message}; nothing was written")]
    Undeclared { plugin: String, message: String },
    #[error("plugin {plugin}: {export} returned an invalid outcome: {reason}; nothing was written")]
    InvalidOutcome {
        plugin: String,
        export: &'static str,
        reason: String,
    },
    #[error("plugin {plugin}: {export} failed: {message}")]
    Failed {
        plugin: String,
        export: &'static str,
        message: String,
        retry: bool,
    },
    #[error("plugin {plugin}: cannot start an instance: {message}")]
    Instantiate { plugin: String, message: String },
}

impl PluginError {
    /// Should the host retry the key with backoff? Everything but a plugin's
    /// own "do not retry" answer is retried: traps and timeouts may depend on
    /// the input, and the plugin may be replaced by a fixed version.
    pub fn retry(&self) -> bool {
        match self {
            PluginError::Failed { retry, .. } => *retry,
            _ => true,
        }
    }
}
