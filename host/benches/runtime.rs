//! Runtime benchmark: the cost of crossing into a plugin, and reconciles per
//! second of the real `replicaset` plugin on a ~4 KiB ReplicaSet, with a
//! fresh instance per call (as the host runs it) and a reused one, both when
//! it must create its 3 pods and in the steady state where they exist.
//!
//! Run with `cargo xtask bench`. Prints a table; asserts only that the
//! steady-state request really needs no change.
//!
//! Knobs, mostly for `valgrind --tool=callgrind` (repeatable instruction
//! counts): `WINDLASS_BENCH_ONLY=<text>` runs only the rows whose name
//! contains the text; `WINDLASS_BENCH_CALLS=<n>` makes exactly `n` calls per
//! row instead of running each for `WINDLASS_BENCH_MS` (default 2000), so two
//! runs with different `n` give the instructions of one call; and
//! `WINDLASS_BENCH_SLOTS=<n>` sizes the instance pool (valgrind cannot map
//! the default pool's address-space reservation; 4 is plenty here).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use windlass::contract::Request;
use windlass::offline::{StaticCache, request_for};
use windlass::runtime::{EmptyCache, Plugin, Runtime, RuntimeConfig};

fn plugin_path(name: &str) -> PathBuf {
    let dir = std::env::var_os("WINDLASS_PLUGINS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/plugins"));
    dir.join(format!("{name}.wasm"))
}

const TEMPLATE_HASH: &str = "5d8f7b9c6";

/// A ReplicaSet of about 4 KiB: a realistic template with two containers,
/// env, probes, resources, volumes and a few annotations.
fn replicaset_4k() -> Value {
    let env: Vec<Value> = (0..40)
        .map(|i| json!({"name": format!("SETTING_NUMBER_{i:02}"), "value": format!("value-{i:02}-abcdef")}))
        .collect();
    let labels = json!({"app": "web", "tier": "frontend", "pod-template-hash": TEMPLATE_HASH});
    json!({
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {
            "name": "web", "namespace": "default", "uid": "0b7c1a52-5c1e-4f38-9d1a-9f0e3c1d2a44",
            "generation": 3, "resourceVersion": "123456",
            "creationTimestamp": "2026-01-12T09:30:00Z",
            "labels": labels,
            "annotations": {
                "deployment.kubernetes.io/revision": "3",
                "deployment.kubernetes.io/desired-replicas": "3",
                "deployment.kubernetes.io/max-replicas": "4",
                "example.com/owner": "team-web"
            },
            "ownerReferences": [{
                "apiVersion": "apps/v1", "kind": "Deployment", "name": "web",
                "uid": "7f3e9a10-2b4c-4d5e-8f60-718293a4b5c6", "controller": true, "blockOwnerDeletion": true
            }]
        },
        "spec": {
            "replicas": 3,
            "selector": {"matchLabels": {"app": "web", "pod-template-hash": TEMPLATE_HASH}},
            "template": {
                "metadata": {
                    "labels": labels,
                    "annotations": {"prometheus.io/scrape": "true", "prometheus.io/port": "9090"}
                },
                "spec": {
                    "containers": [{
                        "name": "web", "image": "registry.example.com/team/web:1.27.3",
                        "ports": [{"containerPort": 8080, "name": "http"}, {"containerPort": 9090, "name": "metrics"}],
                        "env": env,
                        "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"memory": "256Mi"}},
                        "readinessProbe": {"httpGet": {"path": "/healthz", "port": 8080}, "periodSeconds": 5},
                        "livenessProbe": {"httpGet": {"path": "/livez", "port": 8080}, "initialDelaySeconds": 10, "periodSeconds": 10},
                        "volumeMounts": [{"name": "config", "mountPath": "/etc/web", "readOnly": true}]
                    }, {
                        "name": "log-shipper", "image": "registry.example.com/infra/shipper:2.4.0",
                        "args": ["--input=/var/log/web", "--output=collector.logging.svc:24224"],
                        "resources": {"requests": {"cpu": "10m", "memory": "32Mi"}}
                    }],
                    "volumes": [{"name": "config", "configMap": {"name": "web-config"}}],
                    "terminationGracePeriodSeconds": 30
                }
            }
        },
        "status": {
            "replicas": 3, "fullyLabeledReplicas": 3, "readyReplicas": 3,
            "availableReplicas": 3, "observedGeneration": 3
        }
    })
}

/// A running, ready pod created from the ReplicaSet's template, as the API
/// server and a kubelet would have filled it in.
fn pod_of(rs: &Value, suffix: &str) -> Value {
    let template = &rs["spec"]["template"];
    let name = format!("web-{suffix}");
    let mut spec = template["spec"].clone();
    spec["nodeName"] = json!("node-1");
    spec["restartPolicy"] = json!("Always");
    spec["schedulerName"] = json!("default-scheduler");
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name, "generateName": "web-", "namespace": "default",
            "uid": format!("5a1c0e2d-0000-4000-8000-0000000{suffix}"),
            "resourceVersion": "123470", "creationTimestamp": "2026-01-12T09:30:01Z",
            "labels": template["metadata"]["labels"],
            "annotations": template["metadata"]["annotations"],
            "ownerReferences": [{
                "apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web",
                "uid": rs["metadata"]["uid"], "controller": true, "blockOwnerDeletion": true
            }]
        },
        "spec": spec,
        "status": {
            "phase": "Running", "hostIP": "10.0.0.11", "podIP": "10.244.1.17",
            "startTime": "2026-01-12T09:30:01Z",
            "conditions": [
                {"type": "PodScheduled", "status": "True", "lastTransitionTime": "2026-01-12T09:30:01Z"},
                {"type": "Initialized", "status": "True", "lastTransitionTime": "2026-01-12T09:30:02Z"},
                {"type": "ContainersReady", "status": "True", "lastTransitionTime": "2026-01-12T09:30:05Z"},
                {"type": "Ready", "status": "True", "lastTransitionTime": "2026-01-12T09:30:05Z"}
            ],
            "containerStatuses": [
                {"name": "web", "ready": true, "restartCount": 0, "started": true,
                 "image": "registry.example.com/team/web:1.27.3", "state": {"running": {"startedAt": "2026-01-12T09:30:03Z"}}},
                {"name": "log-shipper", "ready": true, "restartCount": 0, "started": true,
                 "image": "registry.example.com/infra/shipper:2.4.0", "state": {"running": {"startedAt": "2026-01-12T09:30:03Z"}}}
            ]
        }
    })
}

struct Row {
    name: String,
    value: String,
    target: &'static str,
}

/// How long, or how many calls, each row runs.
#[derive(Clone, Copy)]
enum Run {
    For(Duration),
    Calls(u64),
}

/// Calls `f` as `run` says (after a warm-up, when timed) and returns calls per
/// second.
fn rate(run: Run, mut f: impl FnMut()) -> f64 {
    let (budget, calls) = match run {
        Run::For(budget) => {
            for _ in 0..50 {
                f();
            }
            (budget, u64::MAX)
        }
        Run::Calls(n) => (Duration::MAX, n),
    };
    let started = Instant::now();
    let mut n = 0u64;
    while n < calls && started.elapsed() < budget {
        let batch = (calls - n).min(100);
        for _ in 0..batch {
            f();
        }
        n += batch;
    }
    n as f64 / started.elapsed().as_secs_f64()
}

fn load(rt: &Runtime, name: &str) -> Plugin {
    let path = plugin_path(name);
    rt.load_file(&path).unwrap_or_else(|e| {
        panic!("{e}\n(run `cargo xtask build-plugins` first, or use `cargo xtask bench`)")
    })
}

fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.parse().ok())
}

fn main() {
    let run = match env_u64("WINDLASS_BENCH_CALLS") {
        Some(n) => Run::Calls(n),
        None => Run::For(Duration::from_millis(
            env_u64("WINDLASS_BENCH_MS").unwrap_or(2000),
        )),
    };
    let only = std::env::var("WINDLASS_BENCH_ONLY").unwrap_or_default();
    let defaults = RuntimeConfig::default();
    let rt = Runtime::new(RuntimeConfig {
        artifact_dir: None,
        max_instances: env_u64("WINDLASS_BENCH_SLOTS").map_or(defaults.max_instances, |n| n as u32),
        ..defaults
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
    // No pods yet: three are created and the status is written.
    let create = request_for(&rs, &[]).unwrap();
    // Steady state: the three pods exist and the status says so; nothing is
    // to go, so the outcome is empty (kept pods are listed only for a prune).
    let pods: Vec<Value> = ["x7k2p", "m4q9z", "t8v3c"]
        .iter()
        .map(|s| pod_of(&rs, s))
        .collect();
    let pod_bytes = pods[0].to_string().len();
    let steady = request_for(&rs, &pods).unwrap();
    // The plugin reads its pods through its index of them (contract 0.2), as
    // the host's index would hold them.
    let mut with_pods = StaticCache::new();
    with_pods.insert(rs.clone());
    for pod in &pods {
        with_pods.insert(pod.clone());
    }
    with_pods.index_for(&replicaset).expect("index the pods");
    let with_pods = Arc::new(with_pods);
    let steady_outcome = replicaset
        .reconcile(&steady, with_pods.clone())
        .expect("steady-state reconcile");
    assert!(
        steady_outcome.events.is_empty() && steady_outcome.writes.is_empty(),
        "the steady-state request should need no change: {steady_outcome:?}"
    );

    let mut rows = Vec::new();
    let mut bench = |name: String, target: &'static str, per_call: bool, f: &mut dyn FnMut()| {
        if !name.contains(&only) {
            return;
        }
        let per_sec = rate(run, f);
        let value = if per_call {
            format!("{:.2} µs/call", 1e6 / per_sec)
        } else {
            format!("{per_sec:.0}/s ({:.1} µs/call)", 1e6 / per_sec)
        };
        rows.push(Row {
            name,
            value,
            target,
        });
    };

    let mut session = noop.session(cache.clone()).expect("session");
    bench(
        "no-op call, reused instance (boundary overhead)".into(),
        "≤ 1 µs",
        true,
        &mut || {
            session.reconcile(&tiny).expect("noop");
        },
    );
    bench("no-op call, fresh instance".into(), "", true, &mut || {
        noop.reconcile(&tiny, cache.clone()).expect("noop");
    });
    bench(
        "replicaset reconciles/s, creates 3 pods, fresh instance, 1 thread".into(),
        "≥ 20,000/s",
        false,
        &mut || {
            replicaset
                .reconcile(&create, cache.clone())
                .expect("reconcile");
        },
    );
    let mut session = replicaset.session(cache.clone()).expect("session");
    bench(
        "replicaset reconciles/s, creates 3 pods, reused instance, 1 thread".into(),
        "",
        false,
        &mut || {
            session.reconcile(&create).expect("reconcile");
        },
    );
    bench(
        "replicaset reconciles/s, steady state (3 pods, no change), fresh instance, 1 thread"
            .into(),
        "",
        false,
        &mut || {
            replicaset
                .reconcile(&steady, with_pods.clone())
                .expect("reconcile");
        },
    );

    println!();
    println!(
        "## plugin runtime (replicaset object: {rs_bytes} bytes of JSON; each pod: {pod_bytes} bytes)"
    );
    println!();
    println!("| benchmark | result | target |");
    println!("|---|---|---|");
    for row in rows {
        println!("| {} | {} | {} |", row.name, row.value, row.target);
    }
}
