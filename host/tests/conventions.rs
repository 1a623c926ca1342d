//! What a cluster operator expects of a controller, on the real binary:
//! every flag from a `WINDLASS_*` environment variable, `/metrics` on
//! `--metrics-bind-address` with controller-runtime's and client-go's
//! names and labels after some reconciles, probes on
//! `--health-probe-bind-address`, and `--log-format=json` lines that parse
//! as JSON and carry the reconcile's plugin and key.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use windlass_tests::{Running, free_port, http_get, kubectl_ok};

fn wait_for(what: &str, log: &Path, mut check: impl FnMut() -> Result<(), String>) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        match check() {
            Ok(()) => return,
            Err(last) if Instant::now() > deadline => panic!(
                "{what}: not within a minute; last: {last}\nlog:\n{}",
                std::fs::read_to_string(log).unwrap_or_default()
            ),
            Err(_) => std::thread::sleep(Duration::from_millis(100)),
        }
    }
}

/// The value of the series `line_prefix` (its name and labels) in a
/// Prometheus text exposition.
fn sample(metrics: &str, series: &str) -> Option<f64> {
    metrics
        .lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

#[test]
fn flags_from_the_environment_conventional_metrics_probes_and_json_logs() {
    let dir = tempfile::tempdir().unwrap();
    let plugins = dir.path().join("plugins");
    std::fs::create_dir(&plugins).unwrap();
    // The replicaset plugin, and one whose every reconcile fails.
    for plugin in ["replicaset", "test-trap"] {
        std::fs::copy(
            windlass_tests::plugin(plugin),
            plugins.join(format!("{plugin}.wasm")),
        )
        .unwrap();
    }
    let kubeconfig = dir.path().join("kubeconfig");
    let log = dir.path().join("windlass.log");
    let (admin, metrics, probes) = (free_port(), free_port(), free_port());

    // Nothing on the command line but the command: every setting from the
    // environment, as a Deployment's `env` gives them.
    let _host = Running(
        Command::new(env!("CARGO_BIN_EXE_windlass"))
            .arg("run")
            .env("WINDLASS_PLUGINS", &plugins)
            .env("WINDLASS_EMBEDDED", "true")
            .env("WINDLASS_LISTEN", "127.0.0.1:0")
            .env("WINDLASS_WRITE_KUBECONFIG", &kubeconfig)
            .env("WINDLASS_ADMIN", admin.to_string())
            .env(
                "WINDLASS_METRICS_BIND_ADDRESS",
                format!("127.0.0.1:{metrics}"),
            )
            .env(
                "WINDLASS_HEALTH_PROBE_BIND_ADDRESS",
                format!("127.0.0.1:{probes}"),
            )
            .env("WINDLASS_LEADER_ELECT", "true")
            .env("WINDLASS_LEADER_ELECT_NAME", "conventions")
            .env("WINDLASS_LEADER_ELECT_LEASE_DURATION", "20s")
            .env("WINDLASS_GRACE", "5s")
            .env("WINDLASS_LOG_FORMAT", "json")
            .env("WINDLASS_CACHE_DIR", dir.path().join("cache"))
            .env("RUST_LOG", "info")
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .expect("start windlass"),
    );

    wait_for(
        "the host is ready on the probe address",
        &log,
        || match http_get(probes, "/readyz") {
            Some((200, _)) if kubeconfig.is_file() => Ok(()),
            other => Err(format!("{other:?}")),
        },
    );
    let kubectl = |args: &[&str]| {
        kubectl_ok(&kubeconfig, args, None);
    };
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/replicaset.yaml");
    kubectl(&["apply", "-f", manifest.to_str().unwrap()]);
    kubectl(&["create", "configmap", "boom", "-n", "default"]);

    // After some reconciles, the names Kubernetes dashboards know.
    let mut text = String::new();
    wait_for("a success and a retried failure in /metrics", &log, || {
        text = http_get(metrics, "/metrics")
            .map(|(_, b)| b)
            .unwrap_or_default();
        let success = sample(
            &text,
            r#"controller_runtime_reconcile_total{controller="replicaset",result="success"}"#,
        );
        let retried = sample(
            &text,
            r#"workqueue_retries_total{controller="test-trap",name="test-trap"}"#,
        );
        match (success, retried) {
            (Some(s), Some(r)) if s >= 1.0 && r >= 1.0 => Ok(()),
            other => Err(format!("{other:?}")),
        }
    });
    let q = r#"{controller="replicaset",name="replicaset"}"#;
    for (series, at_least) in [
        (
            r#"controller_runtime_reconcile_total{controller="replicaset",result="error"}"#
                .to_owned(),
            0.0,
        ),
        (
            r#"controller_runtime_reconcile_total{controller="test-trap",result="error"}"#
                .to_owned(),
            1.0,
        ),
        (
            r#"controller_runtime_reconcile_errors_total{controller="test-trap"}"#.to_owned(),
            1.0,
        ),
        (
            r#"controller_runtime_reconcile_total{controller="test-trap",result="success"}"#
                .to_owned(),
            0.0,
        ),
        (
            r#"controller_runtime_reconcile_time_seconds_count{controller="replicaset"}"#
                .to_owned(),
            1.0,
        ),
        (
            r#"controller_runtime_max_concurrent_reconciles{controller="replicaset"}"#.to_owned(),
            1.0,
        ),
        (
            r#"controller_runtime_active_workers{controller="replicaset"}"#.to_owned(),
            0.0,
        ),
        (format!("workqueue_depth{q}"), 0.0),
        (format!("workqueue_adds_total{q}"), 1.0),
        (format!("workqueue_queue_duration_seconds_count{q}"), 1.0),
        (format!("workqueue_work_duration_seconds_count{q}"), 1.0),
        (format!("workqueue_unfinished_work_seconds{q}"), 0.0),
        (
            format!("workqueue_longest_running_processor_seconds{q}"),
            0.0,
        ),
        (format!("workqueue_retries_total{q}"), 0.0),
        (
            r#"leader_election_master_status{name="conventions"}"#.to_owned(),
            1.0,
        ),
        // windlass's own names are still there.
        (
            r#"windlass_reconciles_total{plugin="replicaset"}"#.to_owned(),
            1.0,
        ),
    ] {
        let value = sample(&text, &series);
        assert!(
            value.is_some_and(|v| v >= at_least),
            "{series} = {value:?}, want at least {at_least}:\n{text}"
        );
    }
    // The pods were created (POST, 201) through the API server the host
    // talks to; reads are there too.
    let created = text
        .lines()
        .find(|l| {
            l.starts_with("rest_client_requests_total{")
                && l.contains(r#"code="201""#)
                && l.contains(r#"method="POST""#)
                && l.contains(r#"host="127.0.0.1:"#)
        })
        .unwrap_or_else(|| panic!("no POST 201 in rest_client_requests_total:\n{text}"));
    assert!(!created.ends_with(" 0"), "{created}");
    assert!(
        text.lines()
            .any(|l| l.starts_with("rest_client_requests_total{code=\"200\"")
                && l.contains(r#"method="GET""#)),
        "{text}"
    );

    // Each address serves its part only; --admin serves everything.
    assert_eq!(http_get(metrics, "/readyz").map(|r| r.0), Some(404));
    assert_eq!(http_get(probes, "/metrics").map(|r| r.0), Some(404));
    assert_eq!(http_get(probes, "/healthz").map(|r| r.0), Some(200));
    assert_eq!(http_get(probes, "/livez").map(|r| r.0), Some(200));
    assert_eq!(http_get(admin, "/plugins").map(|r| r.0), Some(200));
    assert_eq!(http_get(admin, "/metrics").map(|r| r.0), Some(200));

    // Every log line is a JSON object with a level, a time and a message;
    // a reconcile's lines name its plugin and key.
    let log_text = std::fs::read_to_string(&log).unwrap();
    let lines: Vec<Value> = log_text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    assert!(lines.len() >= 3, "{log_text}");
    for line in &lines {
        assert!(
            line["level"].is_string()
                && line["timestamp"].is_string()
                && line["message"].is_string(),
            "{line}"
        );
    }
    assert!(
        lines
            .iter()
            .any(|l| l["message"] == "controller started" && l["plugin"] == "replicaset"),
        "{log_text}"
    );
    assert!(
        lines.iter().any(|l| l["level"] == "WARN"
            && l["spans"]
                .as_array()
                .is_some_and(|spans| spans.iter().any(|s| s["plugin"] == "test-trap"
                    && s["key"].as_str().is_some_and(|k| k.contains("boom"))))),
        "no warning from within the failing reconcile of ConfigMap boom:\n{log_text}"
    );
}

#[test]
fn durations_and_sizes_are_written_as_kubernetes_writes_them() {
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_windlass"))
            .args(args)
            .output()
            .unwrap()
    };
    let refused = run(&["plugin", "inspect", "x.wasm", "--call-timeout", "10"]);
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("\"10\" is missing a unit"), "{stderr}");
    let refused = run(&["plugin", "inspect", "x.wasm", "--memory-limit", "64MB"]);
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        stderr.contains("\"64MB\" is not a quantity of bytes, such as 64Mi"),
        "{stderr}"
    );
    // Accepted: the error is about the file, past the flags.
    let accepted = run(&[
        "plugin",
        "inspect",
        "/nonexistent.wasm",
        "--call-timeout",
        "1m30s",
        "--memory-limit",
        "128Mi",
    ]);
    let stderr = String::from_utf8_lossy(&accepted.stderr);
    assert!(stderr.contains("/nonexistent.wasm"), "{stderr}");
    // Leader-election timings must nest as client-go requires.
    let refused = run(&[
        "run",
        "--embedded",
        "--listen",
        "127.0.0.1:0",
        "--plugins",
        "/nonexistent",
        "--leader-elect",
        "--leader-elect-lease-duration",
        "5s",
        "--leader-elect-renew-deadline",
        "10s",
    ]);
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        stderr.contains("--leader-elect-lease-duration (5s) must be longer than --leader-elect-renew-deadline (10s)"),
        "{stderr}"
    );
}

#[test]
fn completions_are_printed_for_each_shell() {
    for shell in ["bash", "zsh", "fish"] {
        let out = Command::new(env!("CARGO_BIN_EXE_windlass"))
            .args(["completions", shell])
            .output()
            .unwrap();
        assert!(out.status.success(), "{shell}");
        let script = String::from_utf8(out.stdout).unwrap();
        assert!(
            script.contains("leader-elect-lease-duration") && script.contains("windlass"),
            "{shell}:\n{script}"
        );
    }
}

/// `--context` picks a kubeconfig context other than the current one, as
/// kubectl's flag does: here the current one names a server nobody serves.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_context_flag_picks_the_kubeconfig_context() {
    let server = windlass_apiserver::start(windlass_apiserver::Config::new().in_memory())
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    // The server's own context stays as it is; a broken one is made current.
    let text = server
        .kubeconfig()
        .replace("current-context: windlass\n", "current-context: nowhere\n");
    let text = text.replacen(
        "contexts:\n",
        "contexts:\n- name: nowhere\n  context:\n    cluster: nowhere\n    user: windlass\n",
        1,
    );
    let text = text.replacen(
        "clusters:\n",
        "clusters:\n- name: nowhere\n  cluster:\n    server: http://127.0.0.1:1\n",
        1,
    );
    std::fs::write(&kubeconfig, &text).unwrap();
    let plugins = dir.path().join("plugins");
    std::fs::create_dir(&plugins).unwrap();
    std::fs::copy(
        windlass_tests::plugin("test-noop"),
        plugins.join("test-noop.wasm"),
    )
    .unwrap();
    let admin = free_port();
    let log = dir.path().join("windlass.log");
    let _host = Running(
        Command::new(env!("CARGO_BIN_EXE_windlass"))
            .arg("run")
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .args(["--context", "windlass", "--admin", &admin.to_string()])
            .arg("--plugins")
            .arg(&plugins)
            .env("XDG_CACHE_HOME", dir.path().join("cache"))
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap(),
    );
    // Ready once its informer has listed ConfigMaps on the server of that
    // context.
    let check_log = log.clone();
    tokio::task::spawn_blocking(move || {
        wait_for(
            "the plugin syncs through --context windlass",
            &check_log,
            || match http_get(admin, "/plugins") {
                Some((200, body)) if body.contains("\"synced\": true") => Ok(()),
                other => Err(format!("{other:?}")),
            },
        )
    })
    .await
    .unwrap();
    server.shutdown().await;
}
