//! The real `windlass run --embedded` binary with the real `kubectl`: a
//! ReplicaSet applied with kubectl gets its pods, the admin endpoint reports
//! readiness, plugins (a broken one included) and metrics, and SIGTERM
//! stops the host cleanly.

use std::ffi::OsStr;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use windlass_tests::{Running, free_port, http_get, kubectl};

fn wait_for(what: &str, timeout: Duration, mut check: impl FnMut() -> Result<(), String>) {
    let deadline = Instant::now() + timeout;
    loop {
        match check() {
            Ok(()) => return,
            Err(last) if Instant::now() > deadline => {
                panic!("{what}: not within {timeout:?}; last: {last}")
            }
            Err(_) => std::thread::sleep(Duration::from_millis(100)),
        }
    }
}

/// A plugins directory in `dir` holding the replicaset plugin.
fn plugins_dir(dir: &Path) -> PathBuf {
    let plugins = dir.join("plugins");
    std::fs::create_dir(&plugins).unwrap();
    std::fs::copy(
        windlass_tests::plugin("replicaset"),
        plugins.join("replicaset.wasm"),
    )
    .unwrap();
    plugins
}

/// `windlass run ARGS --plugins PLUGINS --admin 127.0.0.1:ADMIN`, with its
/// artifact cache in `dir` and its log on a pipe.
fn windlass_run(dir: &Path, plugins: &Path, admin: u16, args: &[&OsStr]) -> Running {
    let child = Command::new(env!("CARGO_BIN_EXE_windlass"))
        .arg("run")
        .args(args)
        .arg("--plugins")
        .arg(plugins)
        .args(["--admin", &format!("127.0.0.1:{admin}")])
        .env("XDG_CACHE_HOME", dir.join("cache"))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start windlass");
    Running(child)
}

/// Sends SIGTERM and waits for the exit; returns the status and the log.
fn sigterm(running: &mut Running) -> (ExitStatus, String) {
    let pid = running.0.id().to_string();
    assert!(
        Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success()
    );
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(status) = running.0.try_wait().unwrap() {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "windlass did not stop after SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut log = String::new();
    if let Some(mut stderr) = running.0.stderr.take() {
        stderr.read_to_string(&mut log).unwrap();
    }
    (status, log)
}

fn apply_example(kubeconfig: &Path) {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/replicaset.yaml");
    let out = kubectl(
        kubeconfig,
        &["apply", "-f", manifest.to_str().unwrap()],
        None,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn wait_for_pods(kubeconfig: &Path, want: usize, what: &str) {
    wait_for(what, Duration::from_secs(30), || match pods(kubeconfig) {
        n if n == want => Ok(()),
        n => Err(format!("{n} pods")),
    });
}

/// Live pods labelled `app=web`, as kubectl sees them.
#[test]
fn windlass_run_reconciles_what_kubectl_applies() {
    let dir = tempfile::tempdir().unwrap();
    let plugins = plugins_dir(dir.path());
    std::fs::write(plugins.join("broken.wasm"), "not a component").unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    let admin = free_port();
    let mut running = windlass_run(
        dir.path(),
        &plugins,
        admin,
        &[
            "--embedded".as_ref(),
            "--listen".as_ref(),
            "127.0.0.1:0".as_ref(),
            "--write-kubeconfig".as_ref(),
            kubeconfig.as_os_str(),
        ],
    );

    wait_for("readiness", Duration::from_secs(60), || {
        match http_get(admin, "/readyz") {
            Some((200, _)) => Ok(()),
            other => Err(format!("{other:?}")),
        }
    });
    assert!(kubeconfig.is_file());

    apply_example(&kubeconfig);
    wait_for_pods(&kubeconfig, 3, "3 pods");
    wait_for("status.replicas", Duration::from_secs(30), || {
        let out = kubectl(
            &kubeconfig,
            &["get", "rs", "web", "-o", "jsonpath={.status.replicas}"],
            None,
        );
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        if text == "3" { Ok(()) } else { Err(text) }
    });

    let (code, body) = http_get(admin, "/plugins").expect("/plugins");
    assert_eq!(code, 200);
    let rows: serde_json::Value = serde_json::from_str(&body).unwrap();
    let rows = rows.as_array().unwrap();
    assert!(
        rows.iter()
            .any(|r| r["name"] == "replicaset" && r["synced"] == true),
        "{body}"
    );
    let broken = rows
        .iter()
        .find(|r| r["file"].as_str().unwrap().ends_with("broken.wasm"))
        .expect("broken listed");
    assert!(
        broken["error"]
            .as_str()
            .unwrap()
            .contains("not a WebAssembly file"),
        "{broken}"
    );

    let (code, metrics) = http_get(admin, "/metrics").expect("/metrics");
    assert_eq!(code, 200);
    assert!(
        metrics.contains("windlass_reconciles_total{plugin=\"replicaset\"}"),
        "{metrics}"
    );
    assert!(
        metrics.contains("windlass_cache_objects{informer=\"pods\"} 3"),
        "{metrics}"
    );
    // Latency histograms, per plugin: at least the first reconcile is in them.
    for family in [
        "windlass_queue_wait_seconds",
        "windlass_reconcile_duration_seconds",
    ] {
        assert!(
            metrics.contains(&format!("# TYPE {family} histogram")),
            "{metrics}"
        );
        let count = metrics
            .lines()
            .find(|l| l.starts_with(&format!("{family}_count{{plugin=\"replicaset\"}}")))
            .and_then(|l| l.rsplit(' ').next()?.parse::<u64>().ok());
        assert!(count.is_some_and(|n| n >= 1), "{family}: {metrics}");
    }
    // Where the time goes, stage by stage: per plugin, and per informer
    // for each watch event (the ReplicaSet's pods came as events).
    let count_of = |series: &str| {
        metrics
            .lines()
            .find(|l| l.starts_with(&format!("{series} ")))
            .and_then(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
    };
    for stage in ["queue", "call", "writes"] {
        let series = format!(
            "windlass_reconcile_stage_seconds_count{{plugin=\"replicaset\",stage=\"{stage}\"}}"
        );
        assert!(
            count_of(&series).is_some_and(|n| n >= 1),
            "{series}: {metrics}"
        );
    }
    for stage in ["decode", "fanout"] {
        let series =
            format!("windlass_informer_stage_seconds_count{{informer=\"pods\",stage=\"{stage}\"}}");
        assert!(
            count_of(&series).is_some_and(|n| n >= 1),
            "{series}: {metrics}"
        );
    }

    let table = Command::new(env!("CARGO_BIN_EXE_windlass"))
        .args(["plugins", "--admin", &format!("127.0.0.1:{admin}")])
        .output()
        .unwrap();
    let table = String::from_utf8_lossy(&table.stdout);
    assert!(
        table.starts_with("NAME") && table.contains("replicaset"),
        "{table}"
    );

    // SIGTERM: in-flight work finishes, the process exits 0.
    let (status, stderr) = sigterm(&mut running);
    assert!(status.success(), "exit {status}; log:\n{stderr}");
    assert!(stderr.contains("shutting down"), "{stderr}");
}

/// The holder of the `windlass` Lease, as kubectl sees it.
fn lease_holder(kubeconfig: &Path) -> String {
    let out = kubectl(
        kubeconfig,
        &[
            "get",
            "lease",
            "windlass",
            "-n",
            "default",
            "-o",
            "jsonpath={.spec.holderIdentity}",
        ],
        None,
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn pods(kubeconfig: &Path) -> usize {
    let out = kubectl(
        kubeconfig,
        &["get", "pods", "-l", "app=web", "-o", "json"],
        None,
    );
    serde_json::from_slice::<serde_json::Value>(&out.stdout)
        .ok()
        .and_then(|l| l["items"].as_array().map(Vec::len))
        .unwrap_or(0)
}

/// Waits until `running` holds the `windlass` Lease.
fn wait_for_leader(kubeconfig: &Path, running: &Running, what: &str, timeout: Duration) {
    wait_for(what, timeout, || {
        let holder = lease_holder(kubeconfig);
        holder
            .contains(&format!("_{}_", running.0.id()))
            .then_some(())
            .ok_or(holder)
    });
}

#[test]
fn replicas_elect_one_leader_and_hand_over_on_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let plugins = plugins_dir(dir.path());
    let kubeconfig = dir.path().join("kubeconfig");
    let _server = Running(
        Command::new(env!("CARGO_BIN_EXE_windlass"))
            .args([
                "apiserver",
                "--in-memory",
                "--listen",
                "127.0.0.1:0",
                "--write-kubeconfig",
            ])
            .arg(&kubeconfig)
            .stderr(Stdio::null())
            .spawn()
            .expect("start the API server"),
    );
    wait_for("the kubeconfig", Duration::from_secs(30), || {
        kubeconfig
            .is_file()
            .then_some(())
            .ok_or_else(|| "missing".to_owned())
    });
    let replica = |admin: u16| {
        windlass_run(
            dir.path(),
            &plugins,
            admin,
            &[
                "--kubeconfig".as_ref(),
                kubeconfig.as_os_str(),
                "--leader-elect".as_ref(),
            ],
        )
    };
    let (admin_a, admin_b) = (free_port(), free_port());
    let mut a = replica(admin_a);
    wait_for_leader(&kubeconfig, &a, "a leads", Duration::from_secs(60));
    let b = replica(admin_b);
    wait_for("b is up", Duration::from_secs(60), || {
        match http_get(admin_b, "/healthz") {
            Some((200, _)) => Ok(()),
            other => Err(format!("{other:?}")),
        }
    });

    apply_example(&kubeconfig);
    wait_for_pods(&kubeconfig, 3, "3 pods");
    // Only the leader runs plugins; the standby has loaded none.
    let (_, standby) = http_get(admin_b, "/plugins").expect("/plugins of b");
    assert_eq!(standby.trim(), "[]", "{standby}");
    let (_, leader) = http_get(admin_a, "/plugins").expect("/plugins of a");
    assert!(leader.contains("\"replicaset\""), "{leader}");

    // SIGTERM the leader: it releases the lease, and b takes over at once.
    let (status, log) = sigterm(&mut a);
    assert!(status.success(), "exit {status}; log:\n{log}");
    assert!(log.contains("released the lease"), "{log}");
    wait_for_leader(&kubeconfig, &b, "b leads", Duration::from_secs(10));
    let out = kubectl(&kubeconfig, &["scale", "rs", "web", "--replicas=1"], None);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    wait_for_pods(&kubeconfig, 1, "1 pod, reconciled by b");
}
