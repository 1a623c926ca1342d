//! The real `windlass run --embedded` with the real resourcequota plugin and
//! the real `kubectl`: the API server charges what it admits, and the
//! plugin gives usage back: `status.used` returns to the right value after
//! deletes, after pods end, and follows quota edits.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use windlass_tests::{Running, free_port, http_get, kubectl, kubectl_ok as ok};

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

/// Waits until the quota's `status.used` is exactly `want`.
fn wait_for_used(kubeconfig: &Path, want: Value, what: &str) {
    wait_for(what, Duration::from_secs(30), || {
        let out = kubectl(
            kubeconfig,
            &["get", "quota", "team", "-n", "team-a", "-o", "json"],
            None,
        );
        let q: Value = serde_json::from_slice(&out.stdout).map_err(|e| e.to_string())?;
        if q["status"]["used"] == want {
            Ok(())
        } else {
            Err(q["status"].to_string())
        }
    });
}

fn pod(name: &str) -> String {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "team-a"},
        "spec": {"containers": [{"name": "app", "image": "nginx:1.27",
            "resources": {"requests": {"cpu": "500m", "memory": "64Mi"}}}]},
    })
    .to_string()
}

#[test]
fn quota_usage_follows_deletes_ending_pods_and_edits() {
    let dir = tempfile::tempdir().unwrap();
    let plugins = dir.path().join("plugins");
    std::fs::create_dir(&plugins).unwrap();
    std::fs::copy(
        windlass_tests::plugin("resourcequota"),
        plugins.join("resourcequota.wasm"),
    )
    .unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    let admin = free_port();
    let _running = Running(
        Command::new(env!("CARGO_BIN_EXE_windlass"))
            .args(["run", "--embedded", "--listen", "127.0.0.1:0"])
            .arg("--write-kubeconfig")
            .arg(&kubeconfig)
            .arg("--plugins")
            .arg(&plugins)
            .args(["--admin", &format!("127.0.0.1:{admin}")])
            .env("XDG_CACHE_HOME", dir.path().join("cache"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start windlass"),
    );
    wait_for("the plugin is synced", Duration::from_secs(120), || {
        let body = http_get(admin, "/plugins")
            .map(|(_, b)| b)
            .unwrap_or_default();
        let rows: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
        let synced = rows.as_array().is_some_and(|rows| {
            rows.iter()
                .any(|r| r["name"] == "resourcequota" && r["synced"] == true)
        });
        if synced { Ok(()) } else { Err(body) }
    });
    let k = kubeconfig.as_path();
    ok(k, &["create", "namespace", "team-a"], None);
    ok(
        k,
        &["apply", "-f", "-"],
        Some(
            r#"{"apiVersion": "v1", "kind": "ResourceQuota",
                "metadata": {"name": "team", "namespace": "team-a"},
                "spec": {"hard": {"pods": "10", "count/pods": "10", "requests.cpu": "4", "configmaps": "5"}}}"#,
        ),
    );
    for name in ["p1", "p2", "p3"] {
        ok(k, &["apply", "-f", "-"], Some(&pod(name)));
    }
    for name in ["c1", "c2"] {
        ok(k, &["create", "configmap", name, "-n", "team-a"], None);
    }
    // Admission charged all of it.
    wait_for_used(
        k,
        json!({"pods": "3", "count/pods": "3", "requests.cpu": "1500m", "configmaps": "2"}),
        "usage after creates",
    );

    // Only the controller gives usage back: a delete...
    ok(k, &["delete", "pod", "p3", "-n", "team-a"], None);
    ok(k, &["delete", "configmap", "c2", "-n", "team-a"], None);
    wait_for_used(
        k,
        json!({"pods": "2", "count/pods": "2", "requests.cpu": "1", "configmaps": "1"}),
        "usage after deletes",
    );

    // ...and a pod that ended: it is still stored (count/pods), but no
    // longer uses compute quota.
    ok(
        k,
        &[
            "patch",
            "pod",
            "p2",
            "-n",
            "team-a",
            "--subresource=status",
            "--type=merge",
            "-p",
            r#"{"status":{"phase":"Succeeded"}}"#,
        ],
        None,
    );
    wait_for_used(
        k,
        json!({"pods": "1", "count/pods": "2", "requests.cpu": "500m", "configmaps": "1"}),
        "usage after a pod ended",
    );

    // An edit: a new name is counted, a removed one goes.
    ok(
        k,
        &[
            "patch",
            "quota",
            "team",
            "-n",
            "team-a",
            "--type=json",
            "-p",
            r#"[{"op":"remove","path":"/spec/hard/configmaps"},{"op":"add","path":"/spec/hard/limits.cpu","value":"8"}]"#,
        ],
        None,
    );
    wait_for_used(
        k,
        json!({"pods": "1", "count/pods": "2", "requests.cpu": "500m", "limits.cpu": "0"}),
        "usage after an edit",
    );
    let describe = ok(k, &["describe", "quota", "team", "-n", "team-a"], None);
    assert!(
        describe
            .lines()
            .any(|l| l.split_whitespace().eq(["requests.cpu", "500m", "4"])),
        "{describe}"
    );
}
