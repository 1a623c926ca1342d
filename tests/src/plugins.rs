//! Where built plugins are, and sample objects the tests feed them.

use std::path::PathBuf;

use serde_json::{Value, json};

/// The built component of a plugin or fixture, as `cargo xtask build-plugins`
/// leaves it. Panics with the command to run when it is missing, so a test
/// never passes by not testing.
pub fn plugin(name: &str) -> PathBuf {
    let dir = std::env::var_os("WINDLASS_PLUGINS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/plugins"));
    let path = dir.join(format!("{name}.wasm"));
    assert!(
        path.is_file(),
        "{} is missing: run `cargo xtask build-plugins` (or `cargo xtask test`)",
        path.display()
    );
    path
}

/// The example plugins: every crate under `plugins/`, as `cargo xtask run`
/// and the `example-plugins` overlay run them.
pub const EXAMPLE_PLUGINS: [&str; 15] = [
    "deployment",
    "replicaset",
    "scheduler",
    "kubelet",
    "resourcequota",
    "endpoints",
    "job",
    "daemonset",
    "statefulset",
    "cronjob",
    "disruption",
    "persistentvolume",
    "horizontalpodautoscaler",
    "nodelifecycle",
    "podgc",
];

/// A ReplicaSet with `replicas` replicas and a realistic pod template.
pub fn replicaset(name: &str, replicas: u32) -> Value {
    json!({
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {
            "name": name,
            "namespace": "default",
            "uid": format!("uid-{name}"),
            "generation": 1,
            "resourceVersion": "7",
            "labels": {"app": name}
        },
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]}
            }
        }
    })
}

/// A pod owned (as controller) by the ReplicaSet `owner`.
pub fn owned_pod(owner: &str, name: &str, ready: bool) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "default",
            "uid": format!("uid-{name}"),
            "labels": {"app": owner},
            "ownerReferences": [{
                "apiVersion": "apps/v1", "kind": "ReplicaSet", "name": owner,
                "uid": format!("uid-{owner}"), "controller": true, "blockOwnerDeletion": true
            }]
        },
        "spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]},
        "status": {
            "phase": "Running",
            "conditions": [{"type": "Ready", "status": if ready { "True" } else { "False" }}]
        }
    })
}

/// A ConfigMap, the kind the misbehaving fixtures reconcile.
pub fn configmap(name: &str, mode: &str) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "default", "uid": format!("uid-{name}")},
        "data": {"mode": mode}
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A plugin added under `plugins/` is added here too, so that the
    /// chain, RBAC and deploy tests run it.
    #[test]
    fn example_plugins_are_the_crates_under_plugins() {
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../plugins");
        let mut crates: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .flatten()
            .filter(|e| e.path().join("Cargo.toml").is_file())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        crates.sort();
        let mut listed: Vec<&str> = EXAMPLE_PLUGINS.to_vec();
        listed.sort();
        assert_eq!(crates, listed, "plugins/ and EXAMPLE_PLUGINS differ");
    }
}
