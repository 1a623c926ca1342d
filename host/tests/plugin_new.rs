//! `windlass plugin new` as a plugin author uses it, in a directory outside
//! this workspace: scaffold → `cargo test` → `cargo build --target
//! wasm32-wasip2 --release` → `windlass plugin inspect` and `plugin
//! reconcile`, with no hand edits. The crate takes the SDK from this
//! workspace's `guest-sdk` (`--sdk-path`); its other dependencies come from
//! crates.io as for any user.

use std::path::{Path, PathBuf};
use std::process::Command;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

fn run(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn a_new_plugin_tests_builds_and_loads_with_no_edits() {
    let dir = tempfile::tempdir().unwrap();
    let windlass = env!("CARGO_BIN_EXE_windlass");
    run(Command::new(windlass)
        .args(["plugin", "new", "hello-world", "--sdk-path"])
        .arg(workspace().join("guest-sdk"))
        .current_dir(dir.path()));
    let krate = dir.path().join("hello-world");

    // The crate's own target directory would rebuild its dependencies on
    // every run of this test; one kept under this workspace's target is
    // reused. Everything else is as a user runs it.
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace().join("target"))
        .join("plugin-new");
    let cargo = || {
        let mut cmd = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
        cmd.current_dir(&krate)
            .env("CARGO_TARGET_DIR", &target)
            // This test's own cargo settings must not leak into the user's build.
            .env_remove("RUSTFLAGS")
            .env_remove("CARGO_ENCODED_RUSTFLAGS")
            .env_remove("RUSTC_WRAPPER");
        cmd
    };
    let tested = run(cargo().arg("test"));
    assert!(tested.contains("test result: ok. 4 passed"), "{tested}");
    run(cargo().args(["build", "--target", "wasm32-wasip2", "--release"]));
    let wasm = target.join("wasm32-wasip2/release/hello_world.wasm");
    assert!(wasm.is_file(), "{} was not built", wasm.display());

    let manifest: serde_json::Value = serde_json::from_str(&run(Command::new(windlass)
        .args(["plugin", "inspect"])
        .arg(&wasm)))
    .unwrap();
    assert_eq!(manifest["name"], "hello-world");
    assert_eq!(manifest["reconciles"]["kind"], "ConfigMap");
    assert_eq!(
        manifest["reconciles"]["labelSelector"],
        "example.com/hello-world=enabled"
    );

    // The sample object dry-runs as the README says.
    let outcome: serde_json::Value = serde_json::from_str(&run(Command::new(windlass)
        .args(["plugin", "reconcile"])
        .arg(&wasm)
        .arg("--object")
        .arg(krate.join("example.yaml"))))
    .unwrap();
    let written = &outcome["writes"][0]["apply"];
    assert_eq!(written["metadata"]["name"], "world-greeting", "{outcome}");
    assert_eq!(written["data"]["greeting"], "Hello, World!", "{outcome}");

    // And its RBAC derives offline.
    let rbac = run(Command::new(windlass).args(["plugin", "rbac"]).arg(&wasm));
    assert!(
        rbac.contains("# hello-world: reconciles v1 ConfigMap (example.com/hello-world=enabled)"),
        "{rbac}"
    );
}
