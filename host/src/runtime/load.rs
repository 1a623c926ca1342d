//! Loading a plugin: read the file, tell a component from anything else,
//! compile it (or take it from the artifact cache), find which contract
//! version it was built against, link it once for full and once for inline
//! calls, and ask it for its manifest, which must validate.

use std::path::Path;
use std::sync::Arc;

use sha2::{Digest, Sha256};
use wasmtime::Engine;
use wasmtime::component::{Component, types::ComponentItem};

use super::bindings::{Contract, Exports, ManifestAnswer, PACKAGE_NAME};
use super::errors::LoadError;
use super::plugin::{Plugin, PluginInner};
use super::{Runtime, hex, inline};
use crate::contract::{Manifest, Watch};
use crate::model::{EmptyCache, KindRef};

impl Runtime {
    /// Reads, compiles, links and validates a plugin file, and asks it for
    /// its manifest. Only a regular file is read: a FIFO or a device could
    /// block or never end.
    pub fn load_file(&self, path: &Path) -> Result<Plugin, LoadError> {
        self.load_file_with(path, None)
    }

    /// [`Runtime::load_file`] for an instance with these settings (a JSON
    /// object's text), which the plugin reads through its `instance` import.
    pub fn load_file_with(&self, path: &Path, settings: Option<&str>) -> Result<Plugin, LoadError> {
        let file = path.display().to_string();
        let read_error = |error| LoadError::Read {
            file: file.clone(),
            error,
        };
        let meta = std::fs::metadata(path).map_err(read_error)?;
        if !meta.is_file() {
            return Err(LoadError::NotAPlugin {
                file,
                reason: "not a regular file (a directory, FIFO, socket or device); only regular files are loaded".into(),
            });
        }
        let bytes = std::fs::read(path).map_err(read_error)?;
        self.load_with(&file, &bytes, settings)
    }

    /// Like [`Runtime::load_file`], for bytes already in memory; `file` names
    /// them in errors.
    pub fn load(&self, file: &str, bytes: &[u8]) -> Result<Plugin, LoadError> {
        self.load_with(file, bytes, None)
    }

    /// [`Runtime::load`] with settings.
    pub fn load_with(
        &self,
        file: &str,
        bytes: &[u8],
        settings: Option<&str>,
    ) -> Result<Plugin, LoadError> {
        let file = file.to_owned();
        match bytes {
            [0, b'a', b's', b'm', 1, 0, 0, 0, ..] => return Err(LoadError::CoreModule { file }),
            [0, b'a', b's', b'm', ..] => {}
            _ => return Err(LoadError::NotWasm { file }),
        }
        let digest = hex(&Sha256::digest(bytes));
        let component = self.compile(&file, bytes, &digest)?;
        let engine = &self.inner.engine;
        let contract = check_world(engine, &file, &component)?;
        let wrong_world = |e: wasmtime::Error| LoadError::WrongWorld {
            file: file.clone(),
            reason: format!("{e:#}"),
        };
        let pre = self
            .inner
            .linker(contract)
            .instantiate_pre(&component)
            .map_err(wrong_world)?;
        let exports = Exports::new(&component, contract).ok_or_else(|| LoadError::WrongWorld {
            file: file.clone(),
            reason: "an export of the world is missing".into(),
        })?;
        let inline = inline::linker(engine, &component, contract)
            .and_then(|linker| linker.instantiate_pre(&component))
            .map_err(|e| {
                tracing::warn!(%file, error = %format!("{e:#}"), "cannot link the plugin for inline calls; all its calls run on a blocking thread");
            })
            .ok();

        // Until it has told us its name, a plugin is known by its file.
        let stem = Path::new(&file)
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| file.clone());
        let plugin = PluginInner {
            runtime: self.inner.clone(),
            pre,
            inline,
            exports,
            manifest: Arc::new(placeholder_manifest(&stem)),
            settings: settings.map(Into::into),
            digest,
            file: file.clone(),
            schedule: Default::default(),
            warm: Default::default(),
        };
        ask_manifest(plugin)
    }

    fn compile(&self, file: &str, bytes: &[u8], digest: &str) -> Result<Component, LoadError> {
        let engine = &self.inner.engine;
        if let Some(component) = self
            .inner
            .artifacts
            .as_ref()
            .and_then(|a| a.load(engine, digest))
        {
            return Ok(component);
        }
        let component = Component::new(engine, bytes).map_err(|e| LoadError::Invalid {
            file: file.to_owned(),
            reason: format!("{e:#}").replace('\n', " "),
        })?;
        if let Some(artifacts) = &self.inner.artifacts {
            artifacts.store(digest, &component);
        }
        Ok(component)
    }
}

impl Plugin {
    /// Another instance of the same component, with these settings: the
    /// compiled and linked code is shared, and `manifest()` is asked again,
    /// since a plugin may shape its manifest from its settings.
    pub fn instance(&self, settings: Option<&str>) -> Result<Plugin, LoadError> {
        let inner = &self.inner;
        ask_manifest(inner.sibling(inner.manifest.clone(), settings.map(Into::into)))
    }

    /// The same plugin under a manifest the host reshaped (an instance's
    /// name, namespace, selector or concurrency), validated as a plugin's
    /// own manifest is.
    pub fn with_manifest(&self, manifest: Manifest) -> Result<Plugin, LoadError> {
        let inner = &self.inner;
        manifest
            .validate()
            .map_err(|reason| LoadError::BadManifest {
                file: inner.file.clone(),
                reason,
            })?;
        Ok(Plugin {
            inner: Arc::new(inner.sibling(Arc::new(manifest), inner.settings.clone())),
        })
    }
}

impl PluginInner {
    /// Another plugin over the same compiled and linked code, with this
    /// manifest and these settings. It runs under its own controller, so
    /// its calls are scheduled, and counted, on their own.
    fn sibling(&self, manifest: Arc<Manifest>, settings: Option<Arc<str>>) -> PluginInner {
        PluginInner {
            runtime: self.runtime.clone(),
            pre: self.pre.clone(),
            inline: self.inline.clone(),
            exports: self.exports.clone(),
            manifest,
            settings,
            digest: self.digest.clone(),
            file: self.file.clone(),
            schedule: Default::default(),
            warm: Default::default(),
        }
    }
}

/// Calls `manifest()` (with the plugin's settings) and validates the answer.
fn ask_manifest(mut plugin: PluginInner) -> Result<Plugin, LoadError> {
    let file = plugin.file.clone();
    let answer = plugin
        .call("manifest", false, Arc::new(EmptyCache), |e, i, s| {
            e.call_manifest(s, i)
        })
        .map_err(|error| LoadError::Manifest {
            file: file.clone(),
            error,
        })?;
    let manifest = match answer {
        ManifestAnswer::Manifest(m) => *m,
        ManifestAnswer::Refused(reason) => return Err(LoadError::Refused { file, reason }),
    };
    manifest
        .validate()
        .map_err(|reason| LoadError::BadManifest { file, reason })?;
    plugin.manifest = Arc::new(manifest);
    Ok(Plugin {
        inner: Arc::new(plugin),
    })
}

/// The contract version a component was built against, from the versions
/// of the `windlass:controller` interfaces it imports; names the problem
/// when that is not one the host implements, or an export is missing,
/// before the linker's generic message.
fn check_world(engine: &Engine, file: &str, component: &Component) -> Result<Contract, LoadError> {
    let ty = component.component_type();
    let mut found: Option<(String, Option<Contract>)> = None;
    for (name, _) in ty.imports(engine) {
        let Some(rest) = name.strip_prefix(PACKAGE_NAME) else {
            continue;
        };
        let Some((_, version)) = rest.split_once('@') else {
            continue;
        };
        let package = format!("{PACKAGE_NAME}@{version}");
        let contract = Contract::of_package(&package);
        match &found {
            Some((other, _)) if *other != package => {
                return Err(LoadError::WrongWorld {
                    file: file.to_owned(),
                    reason: format!("it imports both {other} and {package}"),
                });
            }
            _ => found = Some((package, contract)),
        }
    }
    let exports: Vec<(String, bool)> = ty
        .exports(engine)
        .map(|(name, item)| {
            (
                name.to_owned(),
                matches!(item.ty, ComponentItem::ComponentFunc(_)),
            )
        })
        .collect();
    let contract = match found {
        Some((_, Some(contract))) => contract,
        Some((package, None)) => {
            return Err(LoadError::WrongVersion {
                file: file.to_owned(),
                found: package,
            });
        }
        // No import names a version: tell by the exports.
        None if exports.iter().any(|(n, _)| n == "index") => Contract::V2,
        None => Contract::V1,
    };
    for wanted in contract.exports() {
        if !exports
            .iter()
            .any(|(name, is_func)| name == wanted && *is_func)
        {
            let has: Vec<&str> = exports.iter().map(|(n, _)| n.as_str()).collect();
            return Err(LoadError::WrongWorld {
                file: file.to_owned(),
                reason: format!(
                    "it does not export the function `{wanted}` of world {}/controller (its exports: {})",
                    contract.package(),
                    if has.is_empty() {
                        "none".to_owned()
                    } else {
                        has.join(", ")
                    }
                ),
            });
        }
    }
    Ok(contract)
}

fn placeholder_manifest(name: &str) -> Manifest {
    Manifest {
        name: name.to_owned(),
        version: String::new(),
        reconciles: Watch::of(KindRef::new("", "")),
        owns: Vec::new(),
        reads: Vec::new(),
        writes: Vec::new(),
        resync_seconds: None,
        finalizer: None,
        max_concurrency: 1,
    }
}
