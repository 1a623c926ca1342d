//! Hot reload through the plugins directory: a plugin dropped in starts
//! reconciling, a broken replacement leaves the running version in place
//! (and is reported), and removing the file stops the plugin.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use http::Method;
use serde_json::{Value, json};
use windlass::client::ApiClient;
use windlass::host::{Host, HostConfig};
use windlass::plugin_dir::{DEBOUNCE, PluginDir};
use windlass::runtime::RuntimeConfig;
use windlass_apiserver::RunningServer;

const RS: &str = "/apis/apps/v1/namespaces/default/replicasets";

async fn send(client: &ApiClient, method: Method, path: &str, ct: &str, body: Value) -> Value {
    let bytes = client
        .request(method, path, Some(ct), body.to_string().into_bytes(), None)
        .await
        .expect(path);
    serde_json::from_slice(&bytes).unwrap_or(Value::Null)
}

async fn pods(client: &ApiClient) -> usize {
    let list: Value =
        serde_json::from_slice(&client.get("/api/v1/namespaces/default/pods").await.unwrap())
            .unwrap();
    list["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["metadata"]["deletionTimestamp"].is_null())
        .count()
}

async fn until(what: &str, mut check: impl AsyncFnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !check().await {
        assert!(Instant::now() < deadline, "{what}: not within 30 s");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// An in-memory server, a client of it, and a host (with no
/// compiled-artifact cache) reconciling through that client.
async fn started() -> (RunningServer, ApiClient, Arc<Host>) {
    let server = windlass_apiserver::start(windlass_apiserver::Config::new().in_memory())
        .await
        .unwrap();
    let client = ApiClient::from_kubeconfig_yaml(&server.kubeconfig())
        .await
        .unwrap();
    let config = HostConfig {
        runtime: RuntimeConfig {
            artifact_dir: None,
            ..RuntimeConfig::default()
        },
        ..HostConfig::default()
    };
    let host = Arc::new(Host::new(client.clone(), config).unwrap());
    (server, client, host)
}

/// Writes `bytes` to `to` the way deploy tools do: a hidden temp, then a rename.
fn install(dir: &Path, name: &str, bytes: &[u8]) {
    let tmp = dir.join(format!(".{name}.tmp"));
    std::fs::write(&tmp, bytes).unwrap();
    std::fs::rename(&tmp, dir.join(name)).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plugins_come_go_and_survive_broken_updates() {
    let (server, client, host) = started().await;
    let dir = tempfile::tempdir().unwrap();
    let _watch = PluginDir::watch(dir.path(), host.clone()).await.unwrap();

    let mut rs = windlass_tests::replicaset("web", 2);
    for field in ["uid", "resourceVersion", "generation"] {
        rs["metadata"].as_object_mut().unwrap().remove(field);
    }
    send(&client, Method::POST, RS, "application/json", rs).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(pods(&client).await, 0, "no plugin yet, no pods");

    let wasm = std::fs::read(windlass_tests::plugin("replicaset")).unwrap();
    install(dir.path(), "replicaset.wasm", &wasm);
    until("the dropped-in plugin reconciles", async || {
        pods(&client).await == 2
    })
    .await;

    // A broken update: reported, and the running version carries on.
    install(dir.path(), "replicaset.wasm", b"\0asm garbage");
    until("the failed update is reported", async || {
        host.status()
            .await
            .first()
            .is_some_and(|r| r.error.is_some())
    })
    .await;
    let row = host.status().await.remove(0);
    assert_eq!(row.name.as_deref(), Some("replicaset"), "{row:?}");
    assert!(
        row.error
            .unwrap()
            .contains("not a valid WebAssembly component")
    );
    let scale = json!({"spec": {"replicas": 3}});
    send(
        &client,
        Method::PATCH,
        &format!("{RS}/web"),
        "application/merge-patch+json",
        scale,
    )
    .await;
    until("the old version still reconciles", async || {
        pods(&client).await == 3
    })
    .await;

    // A good file again clears the error.
    install(dir.path(), "replicaset.wasm", &wasm);
    until("the good version is back", async || {
        host.status()
            .await
            .first()
            .is_some_and(|r| r.error.is_none() && r.name.is_some())
    })
    .await;

    // Removed: the plugin stops; changes are no longer acted on.
    std::fs::remove_file(dir.path().join("replicaset.wasm")).unwrap();
    until("the plugin is unloaded", async || {
        host.status().await.is_empty()
    })
    .await;
    let scale = json!({"spec": {"replicas": 5}});
    send(
        &client,
        Method::PATCH,
        &format!("{RS}/web"),
        "application/merge-patch+json",
        scale,
    )
    .await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(pods(&client).await, 3);

    host.shutdown().await;
    server.shutdown().await;
}

/// Where plugin files come from in a cluster, and what must not be loaded:
/// a ConfigMap mounted as a volume changes by swapping its hidden `..data`
/// symlink (no event for the plugin file itself), a rename moves a plugin
/// without stopping it, and a symlink leading out of the directory or a
/// FIFO is refused with a reason (reading a FIFO would block forever).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_directory_is_kept_in_step_as_a_whole() {
    use std::os::unix::fs::symlink;
    let (server, _client, host) = started().await;
    let outside = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // The layout kubelet gives a ConfigMap volume.
    std::fs::create_dir(d.join("..2026_11_23_a")).unwrap();
    std::fs::copy(
        windlass_tests::plugin("test-noop"),
        d.join("..2026_11_23_a/plugin.wasm"),
    )
    .unwrap();
    symlink("..2026_11_23_a", d.join("..data")).unwrap();
    symlink("..data/plugin.wasm", d.join("plugin.wasm")).unwrap();
    let _watch = PluginDir::watch(d, host.clone()).await.unwrap();
    let named = |file: &'static str| {
        let host = host.clone();
        async move {
            host.status()
                .await
                .into_iter()
                .find(|r| r.file.ends_with(file))
                .and_then(|r| r.name.filter(|_| r.error.is_none()))
        }
    };
    assert_eq!(named("plugin.wasm").await.as_deref(), Some("test-noop"));

    // A ConfigMap update: new data directory, `..data` swapped atomically.
    std::fs::create_dir(d.join("..2026_11_23_b")).unwrap();
    std::fs::copy(
        windlass_tests::plugin("test-reads"),
        d.join("..2026_11_23_b/plugin.wasm"),
    )
    .unwrap();
    symlink("..2026_11_23_b", d.join("..data_tmp")).unwrap();
    std::fs::rename(d.join("..data_tmp"), d.join("..data")).unwrap();
    std::fs::remove_dir_all(d.join("..2026_11_23_a")).unwrap();
    until("the swap reloads the plugin", async || {
        named("plugin.wasm").await.as_deref() == Some("test-reads")
    })
    .await;
    assert!(
        host.status()
            .await
            .iter()
            .all(|r| r.name.as_deref() != Some("test-noop")),
        "the old plugin stopped"
    );

    // A ConfigMap update with a broken plugin: reported, and the running
    // version carries on, as with a file replaced in place.
    std::fs::create_dir(d.join("..2026_11_23_c")).unwrap();
    std::fs::write(d.join("..2026_11_23_c/plugin.wasm"), b"\0asm garbage").unwrap();
    symlink("..2026_11_23_c", d.join("..data_tmp")).unwrap();
    std::fs::rename(d.join("..data_tmp"), d.join("..data")).unwrap();
    until("the broken swap is reported", async || {
        host.status()
            .await
            .iter()
            .any(|r| r.file.ends_with("plugin.wasm") && r.error.is_some())
    })
    .await;
    let row = host
        .status()
        .await
        .into_iter()
        .find(|r| r.file.ends_with("plugin.wasm"))
        .unwrap();
    assert_eq!(row.name.as_deref(), Some("test-reads"), "{row:?}");
    assert!(
        row.error
            .as_deref()
            .is_some_and(|e| e.contains("not a valid WebAssembly component")),
        "{row:?}"
    );
    // Swapped back to a good version: loaded, the error cleared.
    std::fs::create_dir(d.join("..2026_11_23_d")).unwrap();
    std::fs::copy(
        windlass_tests::plugin("test-reads"),
        d.join("..2026_11_23_d/plugin.wasm"),
    )
    .unwrap();
    symlink("..2026_11_23_d", d.join("..data_tmp")).unwrap();
    std::fs::rename(d.join("..data_tmp"), d.join("..data")).unwrap();
    until("the good swap clears the error", async || {
        named("plugin.wasm").await.as_deref() == Some("test-reads")
    })
    .await;

    // A rename: the plugin moves, and runs throughout.
    std::fs::copy(windlass_tests::plugin("test-rogue"), d.join("a.wasm")).unwrap();
    until("a.wasm runs", async || named("a.wasm").await.is_some()).await;
    std::fs::rename(d.join("a.wasm"), d.join("b.wasm")).unwrap();
    until("the renamed file runs the plugin", async || {
        named("b.wasm").await.as_deref() == Some("test-rogue")
    })
    .await;
    assert!(
        host.status()
            .await
            .iter()
            .all(|r| !r.file.ends_with("a.wasm")),
        "{:?}",
        host.status().await
    );

    // Refused: a symlink out of the directory, and a FIFO.
    std::fs::copy(
        windlass_tests::plugin("test-noop"),
        outside.path().join("x.wasm"),
    )
    .unwrap();
    symlink(outside.path().join("x.wasm"), d.join("escape.wasm")).unwrap();
    let fifo = d.join("fifo.wasm");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    assert!(made.is_ok_and(|s| s.success()), "mkfifo");
    let error_of = |file: &'static str| {
        let host = host.clone();
        async move {
            host.status()
                .await
                .into_iter()
                .find(|r| r.file.ends_with(file))
                .and_then(|r| r.error)
        }
    };
    until("both are refused with a reason", async || {
        error_of("escape.wasm")
            .await
            .is_some_and(|e| e.contains("outside the plugins directory"))
            && error_of("fifo.wasm")
                .await
                .is_some_and(|e| e.contains("not a regular file"))
    })
    .await;
    assert!(named("escape.wasm").await.is_none());

    host.shutdown().await;
    server.shutdown().await;
}

/// A sync reads every plugin file to compare it, and inotify reports those
/// opens and reads. They are not changes: an unchanged directory is not
/// synced again, whoever reads its files (the host itself, or a backup
/// passing by), while a new file still is.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reading_the_plugins_is_not_a_change() {
    let (server, _client, host) = started().await;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::copy(windlass_tests::plugin("test-noop"), d.join("noop.wasm")).unwrap();
    let watch = PluginDir::watch(d, host.clone()).await.unwrap();
    std::fs::read(d.join("noop.wasm")).unwrap();
    tokio::time::sleep(DEBOUNCE * 5).await;
    assert_eq!(
        watch.syncs(),
        0,
        "the first load's reads and another reader's started syncs"
    );

    install(
        d,
        "reads.wasm",
        &std::fs::read(windlass_tests::plugin("test-reads")).unwrap(),
    );
    until("the new file is loaded", async || {
        host.status()
            .await
            .iter()
            .any(|r| r.name.as_deref() == Some("test-reads"))
    })
    .await;
    let after = watch.syncs();
    assert!(after >= 1);
    tokio::time::sleep(DEBOUNCE * 5).await;
    assert_eq!(watch.syncs(), after, "a sync's own reads started another");

    host.shutdown().await;
    server.shutdown().await;
}
