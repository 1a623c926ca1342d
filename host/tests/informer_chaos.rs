//! Informers under failure: a TCP proxy between the informer and the API
//! server cuts connections at random and refuses new ones for a while, the
//! server's watch history is compacted (so resuming gets 410 and the
//! informer must list again), and objects change meanwhile. At quiescence
//! the cache must equal a fresh LIST and every delete must have reached the
//! handlers. Repeated over several seeds, with streaming and paged lists.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use http::Method;
use serde_json::{Value, json};
use tokio::sync::Semaphore;
use windlass::cache::Change;
use windlass::client::ApiClient;
use windlass::discovery::ApiResource;
use windlass::informer::{Informer, InformerConfig, InformerSpec};
use windlass_tests::Proxy;

const CM: &str = "/api/v1/namespaces/default/configmaps";

async fn send(
    client: &ApiClient,
    method: Method,
    path: &str,
    body: Value,
) -> Result<Value, String> {
    let ct = if method == Method::PATCH {
        "application/merge-patch+json"
    } else {
        "application/json"
    };
    client
        .request(method, path, Some(ct), body.to_string().into_bytes(), None)
        .await
        .map(|b| serde_json::from_slice(&b).unwrap_or(Value::Null))
        .map_err(|e| e.to_string())
}

/// An informer of ConfigMaps in `namespace` (or all).
fn configmaps(namespace: Option<&str>) -> InformerSpec {
    InformerSpec {
        resource: ApiResource {
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
            plural: "configmaps".into(),
            namespaced: true,
            has_status: false,
        },
        namespace: namespace.map(str::to_owned),
        label_selector: None,
        field_selector: None,
    }
}

/// name → resourceVersion, from a fresh LIST.
async fn server_state(client: &ApiClient) -> BTreeMap<String, String> {
    let list: Value = serde_json::from_slice(&client.get(CM).await.unwrap()).unwrap();
    list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            (
                o["metadata"]["name"].as_str().unwrap().to_owned(),
                o["metadata"]["resourceVersion"]
                    .as_str()
                    .unwrap()
                    .to_owned(),
            )
        })
        .collect()
}

fn cache_state(informer: &Informer) -> BTreeMap<String, String> {
    informer.cache().read(|s| {
        s.list(
            Some("default"),
            &windlass_selector::LabelSelector::everything(),
        )
        .iter()
        .map(|o| (o.key().name.to_string(), o.resource_version().to_owned()))
        .collect()
    })
}

/// Runs one seed; returns (relists, watch restarts) the informer went through.
async fn run_seed(seed: u64) -> (u64, u64) {
    let mut rng = fastrand::Rng::with_seed(seed);
    let server = windlass_apiserver::start(
        windlass_apiserver::Config::new()
            .in_memory()
            .bookmark_interval(Duration::from_millis(200))
            // Seeds take turns: streaming lists (0), paged lists because the
            // informer asks for them (1), or because the server refuses to
            // stream (2), so the informer must fall back.
            .streaming_lists(seed % 3 != 2),
    )
    .await
    .unwrap();
    let direct = ApiClient::from_kubeconfig_yaml(&server.kubeconfig())
        .await
        .unwrap();
    let proxy = Proxy::start(server.addr()).await;
    let proxied =
        ApiClient::from_kubeconfig_yaml(&proxy.kubeconfig(&server.kubeconfig(), server.addr()))
            .await
            .unwrap();

    for i in 0..60 {
        send(&direct, Method::POST, CM, json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": format!("cm-{i}")}, "data": {"v": "0"}}))
            .await
            .unwrap();
    }
    let informer = Informer::start(
        proxied,
        configmaps(Some("default")),
        InformerConfig {
            page_size: 7, // several pages per list
            idle_timeout: Duration::from_secs(2),
            base_backoff: Duration::from_millis(20),
            max_backoff: Duration::from_millis(300),
            streaming_lists: seed % 3 != 1,
            ..InformerConfig::default()
        },
        Arc::new(Semaphore::new(2)),
    );
    // Every object the handlers were told exists, and every delete they got.
    let known: Arc<Mutex<BTreeSet<String>>> = Arc::default();
    let deleted_seen: Arc<Mutex<BTreeSet<String>>> = Arc::default();
    let (k, seen) = (known.clone(), deleted_seen.clone());
    informer.subscribe(Arc::new(move |change: &Change| {
        let name = change.object().key().name.to_string();
        match change {
            Change::Deleted(_) => seen.lock().unwrap().insert(name),
            _ => k.lock().unwrap().insert(name),
        };
    }));
    tokio::time::timeout(Duration::from_secs(20), informer.wait_synced())
        .await
        .expect("first list");

    let mut deleted = BTreeSet::new();
    let mut next = 60;
    for round in 0..6 {
        // Chaos: cut, maybe refuse for a while, maybe compact the history.
        match rng.u8(0..4) {
            0 => proxy.cut_all(),
            1 => {
                proxy.set_refusing(true);
                proxy.cut_all();
            }
            2 => {
                proxy.cut_all();
                server.compact();
            }
            _ => {}
        }
        for _ in 0..rng.usize(5..20) {
            let existing: Vec<String> = server_state(&direct).await.into_keys().collect();
            match rng.u8(0..3) {
                0 => {
                    send(&direct, Method::POST, CM, json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": format!("cm-{next}")}}))
                        .await
                        .unwrap();
                    next += 1;
                }
                1 if !existing.is_empty() => {
                    let name = &existing[rng.usize(0..existing.len())];
                    if send(&direct, Method::DELETE, &format!("{CM}/{name}"), json!({}))
                        .await
                        .is_ok()
                    {
                        deleted.insert(name.clone());
                    }
                }
                _ if !existing.is_empty() => {
                    let name = &existing[rng.usize(0..existing.len())];
                    let _ = send(
                        &direct,
                        Method::PATCH,
                        &format!("{CM}/{name}"),
                        json!({"data": {"v": format!("{round}-{}", rng.u32(..))}}),
                    )
                    .await;
                }
                _ => {}
            }
        }
        if rng.bool() {
            server.compact();
        }
        tokio::time::sleep(Duration::from_millis(rng.u64(50..400))).await;
        proxy.set_refusing(false);
    }

    // Quiescence: the cache converges to a fresh LIST.
    let want = server_state(&direct).await;
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let have = cache_state(&informer);
        if have == want {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "seed {seed}: cache never matched the server\nmissing: {:?}\nextra: {:?}",
            want.iter()
                .filter(|(k, v)| have.get(*k) != Some(v))
                .collect::<Vec<_>>(),
            have.iter()
                .filter(|(k, v)| want.get(*k) != Some(v))
                .collect::<Vec<_>>()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // An object created and deleted while the informer was cut off was never
    // known, so no delete is owed for it; every other delete must arrive.
    let seen = deleted_seen.lock().unwrap().clone();
    let known = known.lock().unwrap().clone();
    let missed: Vec<&String> = deleted
        .iter()
        .filter(|n| known.contains(*n) && !seen.contains(*n))
        .collect();
    assert!(
        missed.is_empty(),
        "seed {seed}: deletes never delivered: {missed:?}"
    );
    let stats = informer.stats();
    let streamed = stats.streamed_lists.load(Ordering::Relaxed);
    let lists = stats.lists.load(Ordering::Relaxed);
    if seed.is_multiple_of(3) {
        assert_eq!(
            streamed, lists,
            "seed {seed}: every full state was streamed"
        );
    } else {
        assert_eq!(streamed, 0, "seed {seed}: paged lists only");
    }
    let stats = (
        stats.relists.load(Ordering::Relaxed),
        stats.watch_restarts.load(Ordering::Relaxed),
    );
    informer.stop();
    server.shutdown().await;
    stats
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn informers_converge_through_cuts_compaction_and_missed_deletes() {
    let seeds: u64 = std::env::var("WINDLASS_CHAOS_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(4);
    let (mut relists, mut restarts) = (0, 0);
    for seed in 0..seeds {
        let (l, r) = run_seed(seed).await;
        relists += l;
        restarts += r;
    }
    // The chaos really happened: watches were resumed and 410s forced lists.
    assert!(
        restarts > 0 && relists > 0,
        "restarts {restarts}, relists {relists}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_informer_that_cannot_list_says_why_until_it_can() {
    let server = windlass_apiserver::start(windlass_apiserver::Config::new().in_memory())
        .await
        .unwrap();
    let proxy = Proxy::start(server.addr()).await;
    proxy.set_refusing(true);
    let client =
        ApiClient::from_kubeconfig_yaml(&proxy.kubeconfig(&server.kubeconfig(), server.addr()))
            .await
            .unwrap();
    let informer = Informer::start(
        client,
        configmaps(None),
        InformerConfig {
            base_backoff: Duration::from_millis(20),
            max_backoff: Duration::from_millis(100),
            ..InformerConfig::default()
        },
        Arc::new(Semaphore::new(1)),
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    let error = loop {
        if let Some(e) = informer.stats().last_error() {
            break e;
        }
        assert!(Instant::now() < deadline, "no error reported");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert!(error.contains("failed"), "{error}");
    assert!(!informer.is_synced());
    proxy.set_refusing(false);
    tokio::time::timeout(Duration::from_secs(10), informer.wait_synced())
        .await
        .expect("synced once the server is reachable");
    assert_eq!(informer.stats().last_error(), None);
}
