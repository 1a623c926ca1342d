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
use windlass::plugin_dir::PluginDir;
use windlass::runtime::RuntimeConfig;

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

/// Writes `bytes` to `to` the way deploy tools do: a hidden temp, then a rename.
fn install(dir: &Path, name: &str, bytes: &[u8]) {
    let tmp = dir.join(format!(".{name}.tmp"));
    std::fs::write(&tmp, bytes).unwrap();
    std::fs::rename(&tmp, dir.join(name)).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plugins_come_go_and_survive_broken_updates() {
    let server = windlass_apiserver::start(windlass_apiserver::Config::new().in_memory())
        .await
        .unwrap();
    let client = ApiClient::from_kubeconfig_yaml(&server.kubeconfig())
        .await
        .unwrap();
    let host = Arc::new(
        Host::new(
            client.clone(),
            HostConfig {
                runtime: RuntimeConfig {
                    artifact_dir: None,
                    ..RuntimeConfig::default()
                },
                ..HostConfig::default()
            },
        )
        .unwrap(),
    );
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
