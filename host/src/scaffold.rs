//! `windlass plugin new NAME`: a plugin crate that builds and tests out of
//! the box — a toolchain file with the wasm target, the build settings of
//! `docs/plugin-guide.md`, a small controller and native tests with the
//! SDK's harness, and a sample object to dry-run it with.
//!
//! [`files`] is the pure core (a name and an SDK source in, file contents
//! out); [`create`] writes them into a new directory.

use std::path::{Path, PathBuf};

/// Where the new crate gets `windlass-sdk` from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SdkSource {
    /// A checkout's `guest-sdk` directory.
    Path(PathBuf),
    /// A git repository holding the windlass workspace, at a tag.
    Git { url: String, tag: String },
}

impl SdkSource {
    /// The windlass repository at the release this binary was built from.
    pub fn release() -> Self {
        SdkSource::Git {
            url: env!("CARGO_PKG_REPOSITORY").to_owned(),
            tag: format!("v{}", env!("CARGO_PKG_VERSION")),
        }
    }

    fn dependency(&self) -> String {
        match self {
            SdkSource::Path(path) => format!("{{ path = {:?} }}", path.display().to_string()),
            SdkSource::Git { url, tag } => format!("{{ git = {url:?}, tag = {tag:?} }}"),
        }
    }
}

/// Why a crate could not be made.
#[derive(Debug, thiserror::Error)]
pub enum ScaffoldError {
    #[error(
        "{0:?} cannot name a plugin: use a DNS label that starts with a letter (lowercase letters, digits and '-', at most 63), such as my-plugin"
    )]
    BadName(String),
    #[error("{0:?} is a Rust keyword or a name Cargo reserves: choose another plugin name")]
    Reserved(String),
    #[error("{} already exists: choose another directory (--dir) or remove it", .0.display())]
    Exists(PathBuf),
    #[error("writing {}: {source}", .path.display())]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// Names Cargo or rustc refuse for a package or library.
const RESERVED: &[&str] = &[
    "as",
    "async",
    "await",
    "break",
    "const",
    "continue",
    "crate",
    "dyn",
    "else",
    "enum",
    "extern",
    "false",
    "fn",
    "for",
    "if",
    "impl",
    "in",
    "let",
    "loop",
    "match",
    "mod",
    "move",
    "mut",
    "pub",
    "ref",
    "return",
    "self",
    "static",
    "struct",
    "super",
    "trait",
    "true",
    "type",
    "unsafe",
    "use",
    "where",
    "while",
    "abstract",
    "become",
    "box",
    "do",
    "final",
    "macro",
    "override",
    "priv",
    "try",
    "typeof",
    "unsized",
    "virtual",
    "yield",
    "gen",
    "test",
    "core",
    "std",
    "alloc",
    "proc-macro",
];

/// Checks that `name` works as a manifest name (a DNS label), a package
/// name and a library name.
pub fn check_name(name: &str) -> Result<(), ScaffoldError> {
    let ok = !name.is_empty()
        && name.len() <= 63
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && !name.ends_with('-')
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    if !ok {
        return Err(ScaffoldError::BadName(name.to_owned()));
    }
    if RESERVED.contains(&name) {
        return Err(ScaffoldError::Reserved(name.to_owned()));
    }
    Ok(())
}

/// The crate's files, by path relative to its directory.
pub fn files(name: &str, sdk: &SdkSource) -> Result<Vec<(&'static str, String)>, ScaffoldError> {
    check_name(name)?;
    let fill = |template: &str| {
        template
            .replace("{{name}}", name)
            .replace("{{lib}}", &name.replace('-', "_"))
            .replace("{{type}}", &type_name(name))
            .replace("{{sdk}}", &sdk.dependency())
            .replace("{{sdk_note}}", sdk_note(sdk))
    };
    Ok(vec![
        ("Cargo.toml", fill(CARGO_TOML)),
        ("rust-toolchain.toml", RUST_TOOLCHAIN.to_owned()),
        (".cargo/config.toml", CARGO_CONFIG.to_owned()),
        (".gitignore", "/target\n".to_owned()),
        ("src/lib.rs", fill(LIB_RS)),
        ("example.yaml", fill(EXAMPLE_YAML)),
        ("README.md", fill(README)),
    ])
}

/// Writes the crate into `dir`, which must not exist yet.
pub fn create(dir: &Path, name: &str, sdk: &SdkSource) -> Result<(), ScaffoldError> {
    let files = files(name, sdk)?;
    if dir.exists() {
        return Err(ScaffoldError::Exists(dir.to_owned()));
    }
    for (relative, text) in files {
        let path = dir.join(relative);
        let write = || -> std::io::Result<()> {
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent)?;
            }
            std::fs::write(&path, text)
        };
        write().map_err(|source| ScaffoldError::Write {
            path: path.clone(),
            source,
        })?;
    }
    Ok(())
}

/// `my-plugin` → `MyPlugin`, the controller type's name.
fn type_name(name: &str) -> String {
    name.split('-')
        .filter(|part| !part.is_empty())
        .map(|part| {
            let mut chars = part.chars();
            chars
                .next()
                .map(|c| c.to_ascii_uppercase().to_string() + chars.as_str())
                .unwrap_or_default()
        })
        .collect()
}

fn sdk_note(sdk: &SdkSource) -> &'static str {
    match sdk {
        SdkSource::Path(_) => {
            "# The SDK from a windlass checkout. To build without one, use the\n# repository: windlass-sdk = { git = \"URL\", tag = \"vX.Y.Z\" }"
        }
        SdkSource::Git { .. } => {
            "# The SDK from the windlass repository, at the release of the `windlass`\n# that made this crate. With a local checkout instead:\n# windlass-sdk = { path = \"../windlass/guest-sdk\" }"
        }
    }
}

const CARGO_TOML: &str = r#"[package]
name = "{{name}}"
version = "0.1.0"
edition = "2024"
publish = false

[lib]
# cdylib: the wasm component; rlib: so that `cargo test` runs it natively.
crate-type = ["cdylib", "rlib"]

[dependencies]
{{sdk_note}}
windlass-sdk = {{sdk}}

[profile.release]
lto = true
codegen-units = 1
opt-level = 3
# Smaller components; the host reports traps by plugin name anyway.
strip = "symbols"

# Its own workspace, wherever the directory is.
[workspace]
"#;

const RUST_TOOLCHAIN: &str = r#"# Plugins are WebAssembly components: rustup installs the target with the
# toolchain.
[toolchain]
channel = "stable"
targets = ["wasm32-wasip2"]
"#;

const CARGO_CONFIG: &str = r#"# Start the component with 2 MiB of linear memory instead of its 1 MiB stack
# and static data only: otherwise nearly every reconcile grows its memory,
# and on a fresh instance per call that costs the host two system calls.
[target.wasm32-wasip2]
rustflags = ["-C", "link-arg=--initial-memory=2097152"]
"#;

const LIB_RS: &str = r#"//! {{name}}: a windlass plugin. For every ConfigMap labelled
//! `example.com/{{name}}=enabled`, it keeps a ConfigMap `NAME-greeting` that
//! says hello to the first one's `data.who`.
//!
//! `cargo test` runs it natively; `cargo build --target wasm32-wasip2
//! --release` builds `target/wasm32-wasip2/release/{{lib}}.wasm`.

use windlass_sdk::{Controller, Error, Event, Manifest, Object, Outcome, Request, Watch};

/// The label that asks this plugin to look after a ConfigMap (`enabled`),
/// and marks the ConfigMaps it writes (`greeting`).
pub const LABEL: &str = "example.com/{{name}}";

pub struct {{type}};

impl Controller for {{type}} {
    /// What the plugin reconciles, owns and reads. The host enforces it:
    /// reading or writing any other kind fails the reconcile, and
    /// `windlass plugin rbac` derives the plugin's RBAC from it.
    fn manifest() -> Manifest {
        Manifest::new(
            "{{name}}",
            Watch::kind("v1", "ConfigMap").labels(&format!("{LABEL}=enabled")),
        )
        .version(env!("CARGO_PKG_VERSION"))
        .owns(Watch::kind("v1", "ConfigMap").labels(&format!("{LABEL}=greeting")))
        .max_concurrency(2)
    }

    fn reconcile(req: Request) -> Result<Outcome, Error> {
        // Gone, or being deleted: the owned greeting is garbage-collected.
        let Some(source) = req.live_object() else {
            return Ok(Outcome::new());
        };
        let who = source
            .get_str("data.who")
            .ok_or(Error::permanent("data.who is required"))?;
        let greeting = Object::new("v1", "ConfigMap")
            .with_name(&format!("{}-greeting", source.name()))
            .with_namespace(source.namespace().unwrap_or("default"))
            .with_label(LABEL, "greeting")
            .with("data.greeting", format!("Hello, {who}!"));

        // Declarative: the writes list every owned child wanted; the host
        // deletes the others and changes only what differs.
        let mut out = Outcome::new().prune_owned();
        if req.owned.is_empty() {
            out = out.event(Event::normal("Created", format!("created {}", greeting.name())));
        }
        Ok(out.apply(greeting))
    }
}

windlass_sdk::export!({{type}});

#[cfg(test)]
mod tests {
    use windlass_sdk::ObjectRef;
    use windlass_sdk::testing::Harness;

    use super::*;

    const SOURCE: &str = include_str!("../example.yaml");

    fn key() -> ObjectRef {
        ObjectRef::new("v1", "ConfigMap", "default", "world")
    }

    #[test]
    fn writes_the_greeting() {
        let h = Harness::<{{type}}>::new().with_objects(SOURCE).unwrap();
        let out = h.reconcile_key(&key()).unwrap();
        let greeting = out.applies().next().expect("one ConfigMap written");
        assert_eq!(greeting.name(), "world-greeting");
        assert_eq!(greeting.get_str("data.greeting"), Some("Hello, World!"));
        assert_eq!(greeting.label(LABEL), Some("greeting"));
        assert!(out.prune_owned);
    }

    #[test]
    fn converges_to_one_greeting() {
        let mut h = Harness::<{{type}}>::new().with_objects(SOURCE).unwrap();
        // Reconcile, apply the writes to the fake cache as the host would,
        // and repeat until nothing changes.
        h.converge(&key(), 5).unwrap();
        let greetings: Vec<_> = h
            .list("v1", "ConfigMap")
            .into_iter()
            .filter(|cm| cm.label(LABEL) == Some("greeting"))
            .collect();
        assert_eq!(greetings.len(), 1);
    }

    #[test]
    fn a_source_without_who_is_refused_until_it_changes() {
        let h = Harness::<{{type}}>::new()
            .with_objects(&SOURCE.replace("who: World", "someone: else"))
            .unwrap();
        let e = h.reconcile_key(&key()).unwrap_err();
        assert!(e.to_string().contains("data.who is required"), "{e}");
    }

    #[test]
    fn gone_means_nothing_to_do() {
        let h = Harness::<{{type}}>::new();
        assert!(h.reconcile_key(&key()).unwrap().is_empty());
    }
}
"#;

const EXAMPLE_YAML: &str = r#"apiVersion: v1
kind: ConfigMap
metadata:
  name: world
  namespace: default
  uid: 6f1c0c2e-0000-4000-8000-000000000001
  labels:
    example.com/{{name}}: enabled
data:
  who: World
"#;

const README: &str = r#"# {{name}}

A [windlass](https://example.invalid/windlass) plugin: for every ConfigMap
labelled `example.com/{{name}}=enabled`, it keeps a ConfigMap `NAME-greeting`.

```sh
cargo test                                       # natively, with the SDK's harness
cargo build --target wasm32-wasip2 --release     # the component
windlass plugin inspect target/wasm32-wasip2/release/{{lib}}.wasm
windlass plugin reconcile target/wasm32-wasip2/release/{{lib}}.wasm --object example.yaml
windlass plugin rbac target/wasm32-wasip2/release/{{lib}}.wasm   # its least-privilege RBAC
```

Deploy: copy the `.wasm` file into the directory `windlass run --plugins DIR`
watches, or into the plugins ConfigMap of `deploy/kubernetes` (see the
windlass docs, `operations.md`).
"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_must_work_as_manifest_package_and_library_names() {
        for good in ["greeter", "my-plugin", "a1"] {
            check_name(good).unwrap();
        }
        for bad in [
            "",
            "My",
            "1st",
            "-x",
            "x-",
            "with_underscore",
            "dots.no",
            &"x".repeat(64),
        ] {
            assert!(
                matches!(check_name(bad), Err(ScaffoldError::BadName(_))),
                "{bad}"
            );
        }
        assert!(matches!(
            check_name("test"),
            Err(ScaffoldError::Reserved(_))
        ));
        assert!(matches!(check_name("fn"), Err(ScaffoldError::Reserved(_))));
    }

    #[test]
    fn the_crate_names_its_sdk_and_plugin_everywhere() {
        let sdk = SdkSource::Path("/src/windlass/guest-sdk".into());
        let files = files("my-plugin", &sdk).unwrap();
        let get = |p: &str| &files.iter().find(|(path, _)| *path == p).unwrap().1;
        assert!(get("Cargo.toml").contains("name = \"my-plugin\""));
        assert!(
            get("Cargo.toml").contains("windlass-sdk = { path = \"/src/windlass/guest-sdk\" }")
        );
        assert!(get("Cargo.toml").contains("crate-type = [\"cdylib\", \"rlib\"]"));
        assert!(get("rust-toolchain.toml").contains("targets = [\"wasm32-wasip2\"]"));
        assert!(get(".cargo/config.toml").contains("--initial-memory=2097152"));
        let lib = get("src/lib.rs");
        assert!(lib.contains("pub struct MyPlugin;"));
        assert!(lib.contains("Manifest::new(\n            \"my-plugin\""));
        assert!(lib.contains("windlass_sdk::export!(MyPlugin);"));
        assert!(!lib.contains("{{"), "an unfilled placeholder:\n{lib}");
        assert!(get("README.md").contains("release/my_plugin.wasm"));
        assert!(get("example.yaml").contains("example.com/my-plugin: enabled"));

        let git = SdkSource::release();
        let files = super::files("greeter", &git).unwrap();
        let cargo = &files[0].1;
        assert!(
            cargo.contains(&format!("tag = \"v{}\"", env!("CARGO_PKG_VERSION"))),
            "{cargo}"
        );
        assert!(
            cargo.lines().any(|l| l == "[workspace]"),
            "its own workspace: {cargo}"
        );
    }

    #[test]
    fn an_existing_directory_is_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let e = create(dir.path(), "greeter", &SdkSource::release()).unwrap_err();
        assert!(matches!(e, ScaffoldError::Exists(_)), "{e}");
        let fresh = dir.path().join("greeter");
        create(&fresh, "greeter", &SdkSource::release()).unwrap();
        assert!(fresh.join("src/lib.rs").is_file() && fresh.join(".cargo/config.toml").is_file());
    }
}
