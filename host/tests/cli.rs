//! The real `windlass` binary: `plugin inspect` and `plugin reconcile`,
//! including every kind of bad plugin file.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

fn windlass(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_windlass"))
        .args(args)
        .env(
            "XDG_CACHE_HOME",
            std::env::temp_dir().join("windlass-cli-tests"),
        )
        .env_remove("RUST_LOG")
        .output()
        .expect("run windlass")
}

fn stdout_json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}): {}\nstderr: {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

fn write_json(dir: &Path, name: &str, value: &Value) -> String {
    let path = dir.join(name);
    std::fs::write(&path, serde_json::to_string_pretty(value).unwrap()).unwrap();
    path.display().to_string()
}

#[test]
fn inspect_prints_the_manifest() {
    let file = windlass_tests::plugin("replicaset");
    let out = windlass(&["plugin", "inspect", file.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let manifest = stdout_json(&out);
    assert_eq!(manifest["name"], "replicaset");
    assert_eq!(manifest["reconciles"]["apiVersion"], "apps/v1");
    assert_eq!(manifest["reconciles"]["kind"], "ReplicaSet");
    assert_eq!(manifest["owns"][0]["kind"], "Pod");
}

#[test]
fn reconcile_prints_the_outcome_for_yaml_input() {
    let dir = tempfile::tempdir().unwrap();
    let rs = dir.path().join("rs.yaml");
    std::fs::write(
        &rs,
        "apiVersion: apps/v1\nkind: ReplicaSet\nmetadata:\n  name: web\n  namespace: default\n  uid: u1\n  generation: 2\nspec:\n  replicas: 3\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec: {containers: [{name: web, image: nginx}]}\n",
    )
    .unwrap();
    let file = windlass_tests::plugin("replicaset");
    let out = windlass(&[
        "plugin",
        "reconcile",
        file.to_str().unwrap(),
        "--object",
        rs.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let outcome = stdout_json(&out);
    let applies: Vec<&Value> = outcome["writes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|w| w.get("apply"))
        .filter(|o| o["kind"] == "Pod")
        .collect();
    assert_eq!(applies.len(), 3, "{outcome:#}");
    assert_eq!(applies[0]["metadata"]["generateName"], "web-");
    // Nothing is to go, so nothing is pruned.
    assert_eq!(outcome["pruneOwned"], false);
}

#[test]
fn reconcile_passes_owned_children() {
    let dir = tempfile::tempdir().unwrap();
    let rs = write_json(dir.path(), "rs.json", &windlass_tests::replicaset("web", 1));
    let pods = Value::Array(
        (0..3)
            .map(|i| windlass_tests::owned_pod("web", &format!("web-{i}"), true))
            .collect(),
    );
    let pods = write_json(dir.path(), "pods.json", &pods);
    let file = windlass_tests::plugin("replicaset");
    let out = windlass(&[
        "plugin",
        "reconcile",
        file.to_str().unwrap(),
        "--object",
        &rs,
        "--owned",
        &pods,
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let outcome = stdout_json(&out);
    let pod_applies = outcome["writes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|w| w.get("apply").is_some_and(|o| o["kind"] == "Pod"))
        .count();
    assert_eq!(
        pod_applies, 1,
        "scale 3 -> 1 keeps exactly one: {outcome:#}"
    );
}

#[test]
fn a_failing_reconcile_prints_the_error_and_exits_non_zero() {
    let dir = tempfile::tempdir().unwrap();
    let cm = write_json(
        dir.path(),
        "cm.json",
        &windlass_tests::configmap("cm", "write"),
    );
    let file = windlass_tests::plugin("test-trap");
    let out = windlass(&[
        "plugin",
        "reconcile",
        file.to_str().unwrap(),
        "--object",
        &cm,
    ]);
    assert!(!out.status.success());
    let body = stdout_json(&out);
    let message = body["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("test-trap") && message.contains("deliberate panic"),
        "{message}"
    );
    assert_eq!(body["error"]["retry"], true);
}

/// A bad file exits non-zero with exactly one line naming it and the problem.
fn assert_rejected(file: &Path, expect: &str) {
    let out = windlass(&["plugin", "inspect", file.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{} was accepted", file.display());
    assert!(
        out.stdout.is_empty(),
        "nothing on stdout: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "one line, got:\n{stderr}");
    assert!(
        lines[0].contains(&file.display().to_string()),
        "names the file: {}",
        lines[0]
    );
    assert!(lines[0].contains(expect), "says {expect:?}: {}", lines[0]);
}

#[test]
fn every_kind_of_bad_file_gets_one_clear_line() {
    let dir = tempfile::tempdir().unwrap();
    let text = dir.path().join("notes.wasm");
    std::fs::write(&text, "not wasm at all").unwrap();
    assert_rejected(&text, "not a WebAssembly file");

    let core = dir.path().join("core.wasm");
    std::fs::write(&core, b"\0asm\x01\0\0\0").unwrap();
    assert_rejected(&core, "core WebAssembly module, not a component");

    let missing = dir.path().join("missing.wasm");
    assert_rejected(&missing, "cannot read");

    assert_rejected(
        &windlass_tests::plugin("test-wrongversion"),
        "built for windlass:controller@0.9.0",
    );
    assert_rejected(
        &windlass_tests::plugin("test-missing-export"),
        "does not export the function `map`",
    );
    assert_rejected(
        &windlass_tests::plugin("test-badmanifest"),
        "manifest() failed",
    );
}

#[test]
fn bad_object_files_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.yaml");
    std::fs::write(&bad, "kind: ReplicaSet\nmetadata: {name: x}\n").unwrap();
    let file = windlass_tests::plugin("replicaset");
    let out = windlass(&[
        "plugin",
        "reconcile",
        file.to_str().unwrap(),
        "--object",
        bad.to_str().unwrap(),
    ]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("bad.yaml") && stderr.contains("no apiVersion"),
        "{stderr}"
    );
}
