//! A host-owned directory of precompiled plugin artifacts, keyed by content
//! hash and engine settings, so a restart does not recompile every plugin.
//!
//! Only files this cache wrote are ever deserialized, and each is checked
//! against a digest recorded beside it first: precompiled code is trusted
//! native code, so nothing found in the plugins directory is loaded this way.

use std::fs;
use std::hash::{Hash, Hasher};
use std::io::Write as _;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use wasmtime::Engine;
use wasmtime::component::Component;

/// The cache directory and the engine fingerprint that namespaces it.
pub(crate) struct ArtifactCache {
    dir: PathBuf,
    engine_key: String,
}

impl ArtifactCache {
    /// Opens (creating it, private, if needed) the cache in `dir`, which
    /// must be a directory owned by this process's user that no one else
    /// may write: whoever can write there can make the host run their
    /// native code.
    pub(crate) fn new(dir: PathBuf, engine: &Engine) -> std::io::Result<Self> {
        {
            use std::os::unix::fs::DirBuilderExt;
            fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(&dir)?;
        }
        check_private(&dir)?;
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        engine.precompile_compatibility_hash().hash(&mut hasher);
        Ok(Self {
            dir,
            engine_key: format!("{:016x}", hasher.finish()),
        })
    }

    fn paths(&self, digest: &str) -> (PathBuf, PathBuf) {
        let stem = format!("{digest}-{}", self.engine_key);
        (
            self.dir.join(format!("{stem}.cwasm")),
            self.dir.join(format!("{stem}.sha256")),
        )
    }

    /// A component compiled earlier from the wasm with this digest, if the
    /// cache holds an intact artifact for it.
    pub(crate) fn load(&self, engine: &Engine, digest: &str) -> Option<Component> {
        let (artifact, checksum) = self.paths(digest);
        let bytes = fs::read(&artifact).ok()?;
        let expected = fs::read_to_string(&checksum).ok()?;
        if hex(&Sha256::digest(&bytes)) != expected.trim() {
            tracing::warn!(path = %artifact.display(), "precompiled artifact is corrupt; recompiling");
            let _ = fs::remove_file(&artifact);
            return None;
        }
        deserialize(engine, &bytes, &artifact)
    }

    /// Records a freshly compiled component. Failures only cost a recompile
    /// next time, so they are logged, not returned.
    pub(crate) fn store(&self, digest: &str, component: &Component) {
        let (artifact, checksum) = self.paths(digest);
        let result = component
            .serialize()
            .map_err(std::io::Error::other)
            .and_then(|bytes| {
                write_atomically(&artifact, &bytes)?;
                write_atomically(&checksum, hex(&Sha256::digest(&bytes)).as_bytes())
            });
        if let Err(e) = result {
            tracing::warn!(path = %artifact.display(), error = %e, "could not cache precompiled plugin");
        }
    }
}

#[allow(unsafe_code)]
fn deserialize(engine: &Engine, bytes: &[u8], path: &Path) -> Option<Component> {
    // SAFETY: `bytes` were produced by `Component::serialize` of this same
    // engine configuration (the file name carries the engine's compatibility
    // hash), were written by this process into a directory the host owns,
    // and match the digest recorded when they were written.
    match unsafe { Component::deserialize(engine, bytes) } {
        Ok(c) => Some(c),
        Err(e) => {
            tracing::warn!(path = %path.display(), error = %e, "precompiled artifact unusable; recompiling");
            None
        }
    }
}

fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    tmp.write_all(bytes)?;
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// Refuses a cache directory that is not a directory, is writable by group
/// or others, or belongs to another user (told by a probe file this process
/// creates in it, whose owner is this process's user).
fn check_private(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let refuse = |why: String| {
        Err(std::io::Error::other(format!(
            "{} {why}; precompiled code is loaded from it as native code, so it must be a directory only this user can write (e.g. chmod 700)",
            dir.display()
        )))
    };
    let meta = fs::metadata(dir)?;
    if !meta.is_dir() {
        return refuse("is not a directory".into());
    }
    let mode = meta.permissions().mode();
    if mode & 0o022 != 0 {
        return refuse(format!(
            "is writable by group or others (mode {:o})",
            mode & 0o777
        ));
    }
    let probe = dir.join(format!(".owner-probe-{}", std::process::id()));
    fs::write(&probe, b"")?;
    let mine = fs::metadata(&probe).map(|m| m.uid());
    let _ = fs::remove_file(&probe);
    if meta.uid() != mine? {
        return refuse(format!("belongs to another user (uid {})", meta.uid()));
    }
    Ok(())
}

/// Lowercase hex of a digest.
pub fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    bytes
        .iter()
        .fold(String::with_capacity(bytes.len() * 2), |mut s, b| {
            let _ = write!(s, "{b:02x}");
            s
        })
}

/// The default cache directory: `$XDG_CACHE_HOME/windlass/artifacts`, else
/// `$HOME/.cache/windlass/artifacts`, else one under the temp directory.
pub(crate) fn default_dir() -> PathBuf {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(std::env::temp_dir);
    base.join("windlass").join("artifacts")
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_cache_others_may_write_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let cache = dir.path().join("artifacts");
        std::fs::create_dir(&cache).unwrap();
        std::fs::set_permissions(&cache, std::fs::Permissions::from_mode(0o777)).unwrap();
        let err = super::check_private(&cache).unwrap_err().to_string();
        assert!(err.contains("writable by group or others"), "{err}");
        std::fs::set_permissions(&cache, std::fs::Permissions::from_mode(0o700)).unwrap();
        assert!(super::check_private(&cache).is_ok());
        let file = dir.path().join("file");
        std::fs::write(&file, b"").unwrap();
        assert!(super::check_private(&file).is_err());
    }
}
