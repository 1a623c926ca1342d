//! The host against the embedded API server with the real replicaset plugin:
//! children appear, scaling converges to the last value, deletion collects
//! children, and a 409 storm converges.

use std::time::{Duration, Instant};

use http::Method;
use serde_json::{Value, json};
use windlass::client::ApiClient;
use windlass::host::{Host, HostConfig};
use windlass::runtime::RuntimeConfig;

struct Env {
    server: windlass_apiserver::RunningServer,
    client: ApiClient,
    host: Host,
}

async fn env() -> Env {
    env_with(RuntimeConfig {
        artifact_dir: None,
        ..RuntimeConfig::default()
    })
    .await
}

async fn env_with(runtime: RuntimeConfig) -> Env {
    let server = windlass_apiserver::start(windlass_apiserver::Config::new().in_memory())
        .await
        .expect("API server");
    let client = ApiClient::from_kubeconfig_yaml(&server.kubeconfig())
        .await
        .unwrap();
    let host = Host::new(
        client.clone(),
        HostConfig {
            runtime,
            ..HostConfig::default()
        },
    )
    .unwrap();
    host.load_file(&windlass_tests::plugin("replicaset"))
        .await
        .expect("replicaset loads");
    Env {
        server,
        client,
        host,
    }
}

const RS: &str = "/apis/apps/v1/namespaces/default/replicasets";
const CONFIGMAPS: &str = "/api/v1/namespaces/default/configmaps";

async fn load_fixture(host: &Host, fixture: &str) {
    host.load_file(&windlass_tests::plugin(fixture))
        .await
        .unwrap_or_else(|e| panic!("{fixture} loads: {e}"));
}

/// POSTs `body` to the collection at `path`.
async fn create(client: &ApiClient, path: &str, body: Value) -> Value {
    send(client, Method::POST, path, "application/json", body)
        .await
        .unwrap_or_else(|e| panic!("create in {path}: {e}"))
}

async fn send(
    client: &ApiClient,
    method: Method,
    path: &str,
    ct: &str,
    body: Value,
) -> Result<Value, String> {
    client
        .request(method, path, Some(ct), body.to_string().into_bytes(), None)
        .await
        .map(|b| serde_json::from_slice(&b).unwrap_or(Value::Null))
        .map_err(|e| e.to_string())
}

async fn get(client: &ApiClient, path: &str) -> Value {
    serde_json::from_slice(&client.get(path).await.expect(path)).unwrap()
}

async fn create_rs(client: &ApiClient, name: &str, replicas: u32) -> Value {
    let mut rs = windlass_tests::replicaset(name, replicas);
    let meta = rs["metadata"].as_object_mut().unwrap();
    for server_owned in ["uid", "resourceVersion", "generation"] {
        meta.remove(server_owned);
    }
    send(client, Method::POST, RS, "application/json", rs)
        .await
        .expect("create rs")
}

async fn scale(client: &ApiClient, name: &str, replicas: u32) {
    send(
        client,
        Method::PATCH,
        &format!("{RS}/{name}"),
        "application/merge-patch+json",
        json!({"spec": {"replicas": replicas}}),
    )
    .await
    .expect("scale");
}

/// Live (not terminating) pods controlled by the ReplicaSet with `uid`.
async fn live_pods(client: &ApiClient, uid: &str) -> Vec<Value> {
    let list = get(client, "/api/v1/namespaces/default/pods").await;
    list["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["metadata"]["deletionTimestamp"].is_null())
        .filter(|p| {
            p["metadata"]["ownerReferences"]
                .as_array()
                .is_some_and(|refs| {
                    refs.iter()
                        .any(|r| r["uid"] == uid && r["controller"] == true)
                })
        })
        .cloned()
        .collect()
}

/// Polls `check` until it holds, or fails with what it last saw.
async fn eventually<F, Fut>(what: &str, timeout: Duration, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<(), String>>,
{
    let deadline = Instant::now() + timeout;
    loop {
        match check().await {
            Ok(()) => return,
            Err(last) if Instant::now() > deadline => {
                panic!("{what}: not reached within {timeout:?}; last: {last}")
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    }
}

/// The `/plugins` row of the plugin called `name`.
async fn status_row(host: &Host, name: &str) -> windlass::host::PluginStatus {
    host.status()
        .await
        .into_iter()
        .find(|r| r.name.as_deref() == Some(name))
        .unwrap_or_else(|| panic!("no status row for {name}"))
}

async fn expect_pods(client: &ApiClient, uid: &str, want: usize) {
    eventually(&format!("{want} pods"), Duration::from_secs(30), || async {
        let n = live_pods(client, uid).await.len();
        if n == want {
            Ok(())
        } else {
            Err(format!("{n} pods"))
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replicaset_gets_its_pods_and_status() {
    let env = env().await;
    let rs = create_rs(&env.client, "web", 3).await;
    let uid = rs["metadata"]["uid"].as_str().unwrap().to_owned();
    expect_pods(&env.client, &uid, 3).await;
    for pod in live_pods(&env.client, &uid).await {
        let owner = &pod["metadata"]["ownerReferences"][0];
        assert_eq!(
            (owner["kind"].as_str(), owner["name"].as_str()),
            (Some("ReplicaSet"), Some("web"))
        );
        assert_eq!(owner["blockOwnerDeletion"], true);
        assert_eq!(pod["metadata"]["labels"]["app"], "web");
        assert!(
            pod["metadata"]["name"]
                .as_str()
                .unwrap()
                .starts_with("web-")
        );
    }
    eventually("status", Duration::from_secs(30), || async {
        let rs = get(&env.client, &format!("{RS}/web")).await;
        let s = &rs["status"];
        if s["replicas"] == 3 && s["observedGeneration"] == rs["metadata"]["generation"] {
            Ok(())
        } else {
            Err(s.to_string())
        }
    })
    .await;
    // Stays at 3: no duplicate creates from a stale cache.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(live_pods(&env.client, &uid).await.len(), 3);
    let events = get(&env.client, "/api/v1/namespaces/default/events").await;
    assert!(
        events["items"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["reason"] == "SuccessfulCreate"),
        "{events}"
    );
    env.host.shutdown().await;
    env.server.shutdown().await;
}

/// Shutting the host down stops every informer, even one still held
/// elsewhere, so none goes on watching (and logging its retries) after the
/// host said it stopped — `windlass run --embedded` stops its server next.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_stops_every_informer() {
    let env = env().await;
    let informers = env.host.informers().all();
    assert!(informers.len() >= 2, "the replicaset plugin's watches");
    assert!(informers.iter().all(|i| !i.is_stopped()));
    env.host.shutdown().await;
    for informer in &informers {
        assert!(informer.is_stopped(), "{:?} still runs", informer.spec());
    }
    env.server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scaling_back_to_back_ends_at_the_last_value_and_delete_collects() {
    let env = env().await;
    let rs = create_rs(&env.client, "burst", 1).await;
    let uid = rs["metadata"]["uid"].as_str().unwrap().to_owned();
    expect_pods(&env.client, &uid, 1).await;
    scale(&env.client, "burst", 5).await;
    scale(&env.client, "burst", 2).await;
    expect_pods(&env.client, &uid, 2).await;
    // And it stays there.
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(live_pods(&env.client, &uid).await.len(), 2);

    send(
        &env.client,
        Method::DELETE,
        &format!("{RS}/burst"),
        "application/json",
        json!({}),
    )
    .await
    .expect("delete rs");
    expect_pods(&env.client, &uid, 0).await;
    env.host.shutdown().await;
    env.server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_conflict_storm_converges() {
    let env = env().await;
    let rs = create_rs(&env.client, "storm", 2).await;
    let uid = rs["metadata"]["uid"].as_str().unwrap().to_owned();
    // Another writer keeps changing the ReplicaSet (and so its
    // resourceVersion) while the plugin writes status and scales.
    let racer = {
        let client = env.client.clone();
        tokio::spawn(async move {
            for i in 0..200 {
                let _ = send(
                    &client,
                    Method::PATCH,
                    &format!("{RS}/storm"),
                    "application/merge-patch+json",
                    json!({"metadata": {"annotations": {"racer": i.to_string()}}}),
                )
                .await;
                if i % 40 == 0 {
                    let _ = send(
                        &client,
                        Method::PATCH,
                        &format!("{RS}/storm"),
                        "application/merge-patch+json",
                        json!({"spec": {"replicas": 2 + (i / 40) % 3}}),
                    )
                    .await;
                }
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        })
    };
    racer.await.unwrap();
    scale(&env.client, "storm", 4).await;
    expect_pods(&env.client, &uid, 4).await;
    eventually(
        "status after the storm",
        Duration::from_secs(30),
        || async {
            let rs = get(&env.client, &format!("{RS}/storm")).await;
            if rs["status"]["replicas"] == 4
                && rs["status"]["observedGeneration"] == rs["metadata"]["generation"]
            {
                Ok(())
            } else {
                Err(rs["status"].to_string())
            }
        },
    )
    .await;
    let status = env.host.status().await;
    assert_eq!(status.len(), 1);
    assert!(
        status[0].synced && status[0].reconciles_total > 0,
        "{status:?}"
    );
    env.host.shutdown().await;
    env.server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugin_whose_crd_comes_later_starts_once_it_is_served() {
    let Env {
        server: _server,
        client,
        host,
    } = env().await;
    let file = windlass_tests::plugin("test-crd");
    host.load_file(&file)
        .await
        .expect("a plugin whose kind is not served yet is accepted and waits");
    let row = status_row(&host, "test-crd").await;
    let error = row.error.expect("the wait is reported");
    assert!(
        error.contains("does not serve example.com/v1 Widget") && error.contains("retrying"),
        "{error}"
    );
    assert!(!host.is_ready().await, "a waiting plugin is not ready");

    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com", "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]
        }
    });
    send(
        &client,
        Method::POST,
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        "application/json",
        crd,
    )
    .await
    .expect("create the CRD");
    let widget = json!({"apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": "w"}, "spec": {"size": "large"}});
    eventually("the Widget is created", Duration::from_secs(10), || async {
        send(
            &client,
            Method::POST,
            "/apis/example.com/v1/namespaces/default/widgets",
            "application/json",
            widget.clone(),
        )
        .await
        .map(drop)
    })
    .await;
    eventually(
        "the plugin starts and reconciles the Widget",
        Duration::from_secs(30),
        || async {
            let cm = client
                .get("/api/v1/namespaces/default/configmaps/w-widget")
                .await
                .map_err(|e| e.to_string())?;
            let cm: Value = serde_json::from_slice(&cm).unwrap();
            (cm["data"]["size"] == "large")
                .then_some(())
                .ok_or_else(|| cm.to_string())
        },
    )
    .await;
    let row = status_row(&host, "test-crd").await;
    assert_eq!(row.error, None);
    eventually("the host is ready", Duration::from_secs(10), || async {
        host.is_ready()
            .await
            .then_some(())
            .ok_or_else(|| "not ready".to_owned())
    })
    .await;
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_reconcile_is_reported_on_the_object() {
    let Env {
        server: _server,
        client,
        host,
    } = env().await;
    load_fixture(&host, "test-trap").await;
    create(
        &client,
        CONFIGMAPS,
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "boom"}}),
    )
    .await;
    eventually(
        "a repeated Warning event on the ConfigMap",
        Duration::from_secs(30),
        || async {
            let events = get(&client, "/api/v1/namespaces/default/events").await;
            let found = events["items"]
                .as_array()
                .unwrap()
                .iter()
                .find(|e| e["involvedObject"]["name"] == "boom")
                .cloned()
                .ok_or_else(|| events.to_string())?;
            let message = found["message"].as_str().unwrap_or_default();
            assert_eq!(found["type"], "Warning", "{found}");
            assert_eq!(found["reason"], "ReconcileFailed", "{found}");
            assert_eq!(found["involvedObject"]["kind"], "ConfigMap", "{found}");
            assert!(
                message.contains("test-trap") && message.contains("deliberate panic"),
                "{found}"
            );
            (found["count"].as_u64() >= Some(2))
                .then_some(())
                .ok_or_else(|| found.to_string())
        },
    )
    .await;
    host.shutdown().await;
}

/// A plugin that never returns is first tried inline on the async worker,
/// cut off at the inline budget, then run on a blocking thread until the
/// configured timeout stops it; meanwhile another plugin keeps working.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugin_that_never_returns_is_stopped_and_others_keep_working() {
    let Env {
        server: _server,
        client,
        host,
    } = env_with(RuntimeConfig {
        artifact_dir: None,
        call_timeout: Duration::from_millis(300),
        ..RuntimeConfig::default()
    })
    .await;
    load_fixture(&host, "test-spin").await;
    create(
        &client,
        CONFIGMAPS,
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "spin"}}),
    )
    .await;
    let rs = create_rs(&client, "web", 2).await;
    expect_pods(&client, rs["metadata"]["uid"].as_str().unwrap(), 2).await;
    eventually(
        "a Warning event naming the full timeout",
        Duration::from_secs(30),
        || async {
            let events = get(&client, "/api/v1/namespaces/default/events").await;
            let found = events["items"]
                .as_array()
                .unwrap()
                .iter()
                .find(|e| e["involvedObject"]["name"] == "spin")
                .cloned()
                .ok_or_else(|| events.to_string())?;
            let message = found["message"].as_str().unwrap_or_default();
            assert!(
                message.contains("test-spin") && message.contains("within 300ms"),
                "{found}"
            );
            Ok(())
        },
    )
    .await;
    let stats = host.controller_stats().await;
    let spin = stats
        .iter()
        .find(|c| c.name == "test-spin")
        .map(|c| &c.stats)
        .expect("test-spin runs");
    assert!(spin.failures >= 1 && spin.blocking_calls >= 1, "{spin:?}");
    host.shutdown().await;
}

/// A plugin that `reads` Secrets: a change to the Secret alone reaches the
/// ConfigMap that `map` names, and the reconcile sees the Secret through
/// the cache.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_to_a_read_kind_reconciles_what_map_returns() {
    let Env {
        server: _server,
        client,
        host,
    } = env().await;
    load_fixture(&host, "test-reads").await;
    let secrets = "/api/v1/namespaces/default/secrets";
    create(
        &client,
        secrets,
        json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "app"},
               "data": {"b": "eA==", "a": "eA=="}}),
    )
    .await;
    create(
        &client,
        CONFIGMAPS,
        json!({"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": "app", "labels": {"windlass.dev/test": "reads"}}}),
    )
    .await;
    let keys = |want: &'static str| {
        let client = client.clone();
        async move {
            eventually(
                &format!("secretKeys {want}"),
                Duration::from_secs(30),
                || async {
                    let cm = get(&client, &format!("{CONFIGMAPS}/app")).await;
                    (cm["data"]["secretKeys"] == want)
                        .then_some(())
                        .ok_or_else(|| cm.to_string())
                },
            )
            .await
        }
    };
    keys("a,b").await;
    send(
        &client,
        Method::PATCH,
        &format!("{secrets}/app"),
        "application/merge-patch+json",
        json!({"data": {"c": "eA=="}}),
    )
    .await
    .expect("change the Secret");
    keys("a,b,c").await;
    host.shutdown().await;
}

/// The first hole found in the boundary, end to end: a plugin that declares
/// only ConfigMaps in its own namespace returns deletes, applies and
/// patches whose namespaces and names carry paths. Each reconcile fails
/// with a ReconcileFailed event naming the problem, the Secret the paths
/// pointed at is still there, and the other plugin keeps working.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hostile_plugin_reaches_nothing_it_did_not_declare() {
    let Env {
        server: _server,
        client,
        host,
    } = env().await;
    load_fixture(&host, "test-hostile").await;
    create(
        &client,
        "/api/v1/namespaces",
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "hostile"}}),
    )
    .await;
    let victim = "/api/v1/namespaces/default/secrets/victim";
    create(
        &client,
        "/api/v1/namespaces/default/secrets",
        json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "victim"}}),
    )
    .await;
    create(
        &client,
        CONFIGMAPS,
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "victim"}}),
    )
    .await;
    let attacks = [
        "delete-namespace",
        "delete-name",
        "apply-namespace",
        "patch-namespace",
        "other-namespace",
        "event-namespace",
    ];
    for attack in attacks {
        create(
            &client,
            "/api/v1/namespaces/hostile/configmaps",
            json!({"apiVersion": "v1", "kind": "ConfigMap",
                   "metadata": {"name": attack}, "data": {"attack": attack}}),
        )
        .await;
    }
    eventually(
        "a ReconcileFailed event per attack",
        Duration::from_secs(30),
        || async {
            let events = get(&client, "/api/v1/namespaces/hostile/events").await;
            let failed: Vec<&Value> = events["items"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|e| e["reason"] == "ReconcileFailed")
                .collect();
            for attack in attacks {
                let Some(e) = failed
                    .iter()
                    .find(|e| e["involvedObject"]["name"] == attack)
                else {
                    return Err(format!("no event for {attack} yet"));
                };
                let message = e["message"].as_str().unwrap_or_default();
                if !message.contains("test-hostile") || !message.contains("nothing was written") {
                    return Err(format!("{attack}: {message}"));
                }
            }
            Ok(())
        },
    )
    .await;
    assert_eq!(get(&client, victim).await["metadata"]["name"], "victim");
    assert_eq!(
        get(&client, &format!("{CONFIGMAPS}/victim")).await["metadata"]["name"],
        "victim"
    );
    let rs = create_rs(&client, "still-works", 2).await;
    let uid = rs["metadata"]["uid"].as_str().unwrap().to_owned();
    eventually(
        "the replicaset plugin still works",
        Duration::from_secs(30),
        || async {
            let n = live_pods(&client, &uid).await.len();
            (n == 2).then_some(()).ok_or(format!("{n} pods"))
        },
    )
    .await;
    host.shutdown().await;
}

/// A write the manifest allows that fails with 404 every time (a binding of
/// a pod that does not exist) is not retried every few milliseconds: after
/// a few quick tries it backs off like a failure and says so in an event.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_that_keeps_failing_backs_off_with_an_event() {
    let Env {
        server: _server,
        client,
        host,
    } = env().await;
    load_fixture(&host, "test-hostile").await;
    create(
        &client,
        "/api/v1/namespaces",
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "hostile"}}),
    )
    .await;
    create(
        &client,
        "/api/v1/namespaces/hostile/configmaps",
        json!({"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": "ghost"}, "data": {"attack": "bind-missing"}}),
    )
    .await;
    eventually(
        "a warning that the write keeps failing",
        Duration::from_secs(30),
        || async {
            let events = get(&client, "/api/v1/namespaces/hostile/events").await;
            events["items"]
                .as_array()
                .unwrap()
                .iter()
                .find(|e| {
                    e["involvedObject"]["name"] == "ghost"
                        && e["type"] == "Warning"
                        && e["message"]
                            .as_str()
                            .is_some_and(|m| m.contains("keeps failing") && m.contains("404"))
                })
                .map(|_| ())
                .ok_or_else(|| events.to_string())
        },
    )
    .await;
    // Backing off: over the next two seconds a 20 ms retry loop would make
    // about a hundred attempts; backoff makes a handful.
    let attempts = || async {
        host.controller_stats()
            .await
            .into_iter()
            .find(|c| c.name == "test-hostile")
            .map(|c| c.stats.reconciles)
            .unwrap_or(0)
    };
    let before = attempts().await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let after = attempts().await;
    assert!(after - before < 20, "{} attempts in 2 s", after - before);
    host.shutdown().await;
}

/// Finalizer names are unique across loaded plugins: a second plugin
/// declaring a finalizer another uses is refused with a message naming it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_plugins_cannot_share_a_finalizer() {
    let Env {
        server: _server,
        client: _client,
        host,
    } = env().await;
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (
        dir.path().join("twin-a.wasm"),
        dir.path().join("twin-b.wasm"),
    );
    std::fs::copy(windlass_tests::plugin("test-hostile"), &a).unwrap();
    std::fs::copy(windlass_tests::plugin("test-hostile"), &b).unwrap();
    let settings = |name: &str| Some(json!({"manifest": "twin", "name": name}).to_string());
    host.load_file_with(&a, settings("twin-a"))
        .await
        .expect("the first twin loads");
    let err = host
        .load_file_with(&b, settings("twin-b"))
        .await
        .expect_err("the second twin is refused")
        .to_string();
    assert!(
        err.contains("\"example.com/twin\"") && err.contains("twin-a"),
        "{err}"
    );
    host.shutdown().await;
}

/// Contract versions side by side: a plugin built against the released 0.1
/// contract loads and reconciles in the same host as 0.2 plugins (the
/// replicaset plugin is built with the SDK, which builds 0.2).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_0_1_plugin_runs_beside_0_2_plugins() {
    let Env {
        server: _server,
        client,
        host,
    } = env().await;
    load_fixture(&host, "test-v01").await;
    let contracts: Vec<String> = host
        .status()
        .await
        .into_iter()
        .map(|r| {
            format!(
                "{}={}",
                r.name.unwrap_or_default(),
                r.contract.unwrap_or_default()
            )
        })
        .collect();
    assert!(
        contracts.contains(&"test-v01=0.1.0".to_owned())
            && contracts.contains(&"replicaset=0.2.0".to_owned()),
        "{contracts:?}"
    );
    create(
        &client,
        CONFIGMAPS,
        json!({"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": "old", "labels": {"windlass.dev/test": "v01"}}}),
    )
    .await;
    let rs = create_rs(&client, "beside", 2).await;
    let uid = rs["metadata"]["uid"].as_str().unwrap().to_owned();
    eventually(
        "both plugins reconcile",
        Duration::from_secs(30),
        || async {
            let cm = get(&client, &format!("{CONFIGMAPS}/old")).await;
            let pods = live_pods(&client, &uid).await.len();
            (cm["data"]["contract"] == "0.1" && pods == 2)
                .then_some(())
                .ok_or(format!("{cm} / {pods} pods"))
        },
    )
    .await;
    host.shutdown().await;
}
