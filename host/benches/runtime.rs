//! Runtime benchmark: the cost of crossing into a plugin, and reconciles per
//! second of the real `replicaset` plugin with a fresh and a reused instance.
//!
//! Run with `cargo xtask bench`. Prints a table; asserts nothing.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use windlass::contract::Request;
use windlass::offline::request_for;
use windlass::runtime::{EmptyCache, Plugin, Runtime, RuntimeConfig};

fn plugin_path(name: &str) -> PathBuf {
    let dir = std::env::var_os("WINDLASS_PLUGINS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/plugins"));
    dir.join(format!("{name}.wasm"))
}

/// A ReplicaSet of about 4 KiB: a realistic template with env, probes,
/// resources and a few annotations.
fn replicaset_4k() -> Value {
    let env: Vec<Value> = (0..40)
        .map(|i| json!({"name": format!("SETTING_NUMBER_{i:02}"), "value": format!("value-{i:02}-abcdef")}))
        .collect();
    json!({
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {
            "name": "web", "namespace": "default", "uid": "0b7c1a52-5c1e-4f38-9d1a-9f0e3c1d2a44",
            "generation": 3, "resourceVersion": "123456",
            "labels": {"app": "web", "tier": "frontend", "pod-template-hash": "5d8f7b9c6"},
            "annotations": {"deployment.kubernetes.io/revision": "3", "example.com/owner": "team-web"}
        },
        "spec": {
            "replicas": 3,
            "selector": {"matchLabels": {"app": "web", "pod-template-hash": "5d8f7b9c6"}},
            "template": {
                "metadata": {"labels": {"app": "web", "tier": "frontend", "pod-template-hash": "5d8f7b9c6"}},
                "spec": {"containers": [{
                    "name": "web", "image": "registry.example.com/team/web:1.27.3",
                    "ports": [{"containerPort": 8080, "name": "http"}],
                    "env": env,
                    "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"memory": "256Mi"}},
                    "readinessProbe": {"httpGet": {"path": "/healthz", "port": 8080}, "periodSeconds": 5}
                }]}
            }
        },
        "status": {"replicas": 3, "readyReplicas": 3, "availableReplicas": 3, "observedGeneration": 3}
    })
}

struct Row {
    name: &'static str,
    value: String,
    target: &'static str,
}

/// Runs `f` repeatedly for about `budget` and returns calls per second.
fn rate(budget: Duration, mut f: impl FnMut()) -> f64 {
    for _ in 0..50 {
        f();
    }
    let started = Instant::now();
    let mut n = 0u64;
    while started.elapsed() < budget {
        for _ in 0..100 {
            f();
        }
        n += 100;
    }
    n as f64 / started.elapsed().as_secs_f64()
}

fn load(rt: &Runtime, name: &str) -> Plugin {
    let path = plugin_path(name);
    rt.load_file(&path).unwrap_or_else(|e| {
        panic!("{e}\n(run `cargo xtask build-plugins` first, or use `cargo xtask bench`)")
    })
}

fn main() {
    let budget = Duration::from_millis(
        std::env::var("WINDLASS_BENCH_MS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(2000),
    );
    let rt = Runtime::new(RuntimeConfig {
        artifact_dir: None,
        ..RuntimeConfig::default()
    })
    .expect("runtime");
    let noop = load(&rt, "test-noop");
    let replicaset = load(&rt, "replicaset");
    let cache = Arc::new(EmptyCache);
    let tiny: Request = request_for(
        &json!({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"default"}}),
        &[],
    )
    .unwrap();
    let rs = replicaset_4k();
    let rs_bytes = rs.to_string().len();
    let rs_request = request_for(&rs, &[]).unwrap();

    let mut rows = Vec::new();

    let mut session = noop.session(cache.clone()).expect("session");
    let per_sec = rate(budget, || {
        session.reconcile(tiny.clone()).expect("noop");
    });
    rows.push(Row {
        name: "no-op call, reused instance (boundary overhead)",
        value: format!("{:.2} µs/call", 1e6 / per_sec),
        target: "≤ 1 µs",
    });

    let per_sec = rate(budget, || {
        noop.reconcile(tiny.clone(), cache.clone()).expect("noop");
    });
    rows.push(Row {
        name: "no-op call, fresh instance",
        value: format!("{:.2} µs/call", 1e6 / per_sec),
        target: "",
    });

    let per_sec = rate(budget, || {
        replicaset
            .reconcile(rs_request.clone(), cache.clone())
            .expect("reconcile");
    });
    rows.push(Row {
        name: "replicaset reconciles/s, fresh instance, 1 thread",
        value: format!("{per_sec:.0}/s"),
        target: "≥ 20,000/s",
    });

    let mut session = replicaset.session(cache.clone()).expect("session");
    let per_sec = rate(budget, || {
        session.reconcile(rs_request.clone()).expect("reconcile");
    });
    rows.push(Row {
        name: "replicaset reconciles/s, reused instance, 1 thread",
        value: format!("{per_sec:.0}/s"),
        target: "",
    });

    println!();
    println!("## plugin runtime (replicaset object: {rs_bytes} bytes of JSON)");
    println!();
    println!("| benchmark | result | target |");
    println!("|---|---|---|");
    for row in rows {
        println!("| {} | {} | {} |", row.name, row.value, row.target);
    }
}
