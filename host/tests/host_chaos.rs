//! The whole host under failure: the real replicaset plugin and a shared
//! ConfigMap informer run through a TCP proxy that cuts connections and
//! refuses new ones, while the durable API server's watch history is
//! compacted (forcing 410 and relists) and the server itself is restarted on
//! the same data. Meanwhile random writes hit about 1,000 objects:
//! ConfigMaps created, changed and deleted, ReplicaSets created, scaled and
//! deleted, pods deleted from under the plugin.
//!
//! At quiescence every informer's cache equals a fresh LIST, every
//! ReplicaSet has exactly its replicas (and says so in its status), the pods
//! of deleted ReplicaSets are gone, and every delete of an object the
//! handlers had seen reached them.
//!
//! `WINDLASS_CHAOS_SEEDS` (default 2) and `WINDLASS_CHAOS_OBJECTS` (default
//! 1000) scale it up for long runs.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use http::Method;
use serde_json::{Value, json};
use windlass::cache::Change;
use windlass::client::ApiClient;
use windlass::contract::{KindRef, Watch};
use windlass::host::{Host, HostConfig};
use windlass::informer::{Informer, InformerConfig};
use windlass::runtime::RuntimeConfig;
use windlass_apiserver::{Config, RunningServer};
use windlass_tests::Proxy;

const CM: &str = "/api/v1/namespaces/default/configmaps";
const RS: &str = "/apis/apps/v1/namespaces/default/replicasets";

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

/// The durable server, restartable on the same data, behind two proxies:
/// one the host uses (chaos), one the test's own requests use (never cut).
struct World {
    data: tempfile::TempDir,
    server: Option<RunningServer>,
    chaos: Proxy,
    steady: Proxy,
    direct: ApiClient,
    restarts: u32,
}

fn server_config(data: &std::path::Path) -> Config {
    Config::new()
        .data_dir(data.to_path_buf())
        .watch_history(2_000)
        .bookmark_interval(Duration::from_millis(200))
}

impl World {
    async fn start() -> Self {
        let data = tempfile::tempdir().unwrap();
        let server = windlass_apiserver::start(server_config(data.path()))
            .await
            .expect("API server");
        let chaos = Proxy::start(server.addr()).await;
        let steady = Proxy::start(server.addr()).await;
        let direct = ApiClient::from_kubeconfig_yaml(
            &steady.kubeconfig(&server.kubeconfig(), server.addr()),
        )
        .await
        .unwrap();
        Self {
            data,
            server: Some(server),
            chaos,
            steady,
            direct,
            restarts: 0,
        }
    }

    fn server(&self) -> &RunningServer {
        self.server.as_ref().expect("server running")
    }

    /// The host's client: every request goes through the chaos proxy.
    async fn host_client(&self) -> ApiClient {
        let server = self.server();
        ApiClient::from_kubeconfig_yaml(&self.chaos.kubeconfig(&server.kubeconfig(), server.addr()))
            .await
            .unwrap()
    }

    /// Stops the server (its watches end, its history is lost) and starts a
    /// new one on the same data, on a new port behind the same proxies.
    async fn restart(&mut self) {
        let old = self.server.take().expect("server running");
        self.chaos.set_refusing(true);
        self.chaos.cut_all();
        self.steady.cut_all();
        old.shutdown().await;
        let server = windlass_apiserver::start(server_config(self.data.path()))
            .await
            .expect("API server restarts on its data");
        self.chaos.set_upstream(server.addr());
        self.steady.set_upstream(server.addr());
        self.server = Some(server);
        self.restarts += 1;
    }

    async fn send(&self, method: Method, path: &str, body: Value) -> Result<Value, String> {
        let ct = if method == Method::PATCH {
            "application/merge-patch+json"
        } else {
            "application/json"
        };
        self.direct
            .request(method, path, Some(ct), body.to_string().into_bytes(), None)
            .await
            .map(|b| serde_json::from_slice(&b).unwrap_or(Value::Null))
            .map_err(|e| e.to_string())
    }

    async fn list(&self, path: &str) -> Vec<Value> {
        let body = self.direct.get(path).await.expect(path);
        let list: Value = serde_json::from_slice(&body).unwrap();
        list["items"].as_array().cloned().unwrap_or_default()
    }
}

fn configmap(i: u64) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": format!("cm-{i}")}, "data": {"v": "0"}})
}

fn replicaset(i: u64, replicas: u64) -> Value {
    let name = format!("rs-{i}");
    let mut rs = windlass_tests::replicaset(&name, replicas as u32);
    let meta = rs["metadata"].as_object_mut().unwrap();
    for server_owned in ["uid", "resourceVersion", "generation"] {
        meta.remove(server_owned);
    }
    rs
}

fn name_of(o: &Value) -> String {
    o["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// "namespace/name" → resourceVersion of every object of an informer.
fn cache_state(informer: &Informer) -> BTreeMap<String, String> {
    informer.cache().read(|s| {
        s.keys()
            .into_iter()
            .filter_map(|k| s.get(&k))
            .map(|o| (o.key().to_string(), o.resource_version().to_owned()))
            .collect()
    })
}

async fn server_state(world: &World, informer: &Informer) -> BTreeMap<String, String> {
    let spec = informer.spec();
    let path = spec.resource.collection_path(spec.namespace.as_deref());
    world
        .list(&path)
        .await
        .iter()
        .map(|o| {
            let ns = o["metadata"]["namespace"].as_str();
            let name = o["metadata"]["name"].as_str().unwrap();
            (
                windlass::cache::ObjectKey::new(ns, name).to_string(),
                o["metadata"]["resourceVersion"]
                    .as_str()
                    .unwrap()
                    .to_owned(),
            )
        })
        .collect()
}

/// What the handlers of one informer were told.
#[derive(Default)]
struct Seen {
    known: BTreeSet<String>,
    deleted: BTreeSet<String>,
}

fn record(informer: &Informer) -> Arc<Mutex<Seen>> {
    let seen: Arc<Mutex<Seen>> = Arc::default();
    let s = seen.clone();
    informer.subscribe(Arc::new(move |change: &Change| {
        let key = change.object().key().to_string();
        let mut s = s.lock().unwrap();
        match change {
            Change::Deleted(_) => s.deleted.insert(key),
            _ => s.known.insert(key),
        };
    }));
    seen
}

/// Checks the end state once; `Err` says what is still wrong.
async fn check(
    world: &World,
    informers: &[Arc<Informer>],
    deleted_rs: &BTreeSet<String>,
) -> Result<(), String> {
    for informer in informers {
        let (want, have) = (server_state(world, informer).await, cache_state(informer));
        if want != have {
            let missing: Vec<_> = want
                .iter()
                .filter(|(k, v)| have.get(*k) != Some(v))
                .collect();
            let extra: Vec<_> = have
                .iter()
                .filter(|(k, v)| want.get(*k) != Some(v))
                .collect();
            return Err(format!(
                "{} cache differs from a fresh LIST: missing or stale {missing:?}, extra {extra:?}",
                informer.spec()
            ));
        }
    }
    let pods = world.list("/api/v1/namespaces/default/pods").await;
    let mut live_by_owner: BTreeMap<String, usize> = BTreeMap::new();
    for pod in &pods {
        let owner = pod["metadata"]["ownerReferences"][0]["name"]
            .as_str()
            .unwrap_or("none")
            .to_owned();
        if deleted_rs.contains(&owner) {
            return Err(format!(
                "pod {} of deleted {owner} still exists",
                name_of(pod)
            ));
        }
        if pod["metadata"]["deletionTimestamp"].is_null() {
            *live_by_owner.entry(owner).or_default() += 1;
        }
    }
    for rs in world.list(RS).await {
        let name = name_of(&rs);
        let want = rs["spec"]["replicas"].as_u64().unwrap() as usize;
        let have = live_by_owner.get(&name).copied().unwrap_or(0);
        if have != want {
            return Err(format!("{name} wants {want} pods, has {have}"));
        }
        if rs["status"]["replicas"].as_u64() != Some(want as u64)
            || rs["status"]["observedGeneration"] != rs["metadata"]["generation"]
        {
            return Err(format!("{name} status is not current: {}", rs["status"]));
        }
    }
    Ok(())
}

/// Runs one seed; returns (relists, watch restarts) over all informers.
async fn run_seed(seed: u64, objects: u64) -> (u64, u64) {
    let mut rng = fastrand::Rng::with_seed(seed);
    let started = Instant::now();
    let mut world = World::start().await;

    // About a tenth of the objects are ReplicaSets and their pods.
    let n_rs = (objects / 30).max(2);
    let mut n_cm = objects.saturating_sub(n_rs * 4).max(10);
    let creates: Vec<(String, Value)> = (0..n_cm)
        .map(|i| (CM.to_owned(), configmap(i)))
        .chain((0..n_rs).map(|i| (RS.to_owned(), replicaset(i, rng.u64(1..=5)))))
        .collect();
    for chunk in creates.chunks(16) {
        let sends = chunk
            .iter()
            .map(|(path, body)| world.send(Method::POST, path, body.clone()));
        for result in futures::future::join_all(sends).await {
            result.expect("initial create");
        }
    }

    let host = Host::new(
        world.host_client().await,
        HostConfig {
            runtime: RuntimeConfig {
                artifact_dir: None,
                ..RuntimeConfig::default()
            },
            informer: InformerConfig {
                page_size: 250,
                idle_timeout: Duration::from_secs(2),
                base_backoff: Duration::from_millis(20),
                max_backoff: Duration::from_millis(500),
                ..InformerConfig::default()
            },
            max_relists: 2,
            ..HostConfig::default()
        },
    )
    .unwrap();
    // The first load may itself meet a cut connection; it is retried.
    host.load_file(&windlass_tests::plugin("replicaset"))
        .await
        .expect("replicaset loads");
    let configmaps = host
        .informers()
        .get(&Watch {
            kind: KindRef {
                api_version: "v1".into(),
                kind: "ConfigMap".into(),
            },
            namespace: Some("default".into()),
            label_selector: None,
            field_selector: None,
            indexed: false,
        })
        .await
        .expect("ConfigMap informer");
    let informers = host.informers().all();
    assert_eq!(informers.len(), 3, "ReplicaSets, Pods and ConfigMaps");
    let seen: Vec<Arc<Mutex<Seen>>> = informers.iter().map(|i| record(i)).collect();
    for informer in &informers {
        tokio::time::timeout(Duration::from_secs(60), informer.wait_synced())
            .await
            .unwrap_or_else(|_| panic!("{} never synced", informer.spec()));
    }

    eprintln!(
        "seed {seed}: {} objects created and synced in {:.1}s",
        n_cm + n_rs,
        started.elapsed().as_secs_f64()
    );
    let mut deleted_rs = BTreeSet::new();
    let mut next_rs = n_rs;
    let rounds = 6;
    let restart_round = rng.usize(1..rounds - 1);
    for round in 0..rounds {
        // Chaos first, then writes the host may or may not see live.
        if round == restart_round {
            world.restart().await;
        } else {
            match rng.u8(0..4) {
                0 => world.chaos.cut_all(),
                1 => {
                    world.chaos.set_refusing(true);
                    world.chaos.cut_all();
                }
                2 => {
                    world.chaos.cut_all();
                    world.server().compact();
                }
                _ => {}
            }
        }
        let configmaps_now: Vec<String> = world.list(CM).await.iter().map(name_of).collect();
        let replicasets_now: Vec<String> = world
            .list(RS)
            .await
            .iter()
            .map(name_of)
            .filter(|n| !deleted_rs.contains(n))
            .collect();
        let pods_now: Vec<String> = world
            .list("/api/v1/namespaces/default/pods")
            .await
            .iter()
            .map(name_of)
            .collect();
        for _ in 0..rng.usize(20..60) {
            let pick = |rng: &mut fastrand::Rng, v: &[String]| v[rng.usize(0..v.len())].clone();
            let _ = match rng.u8(0..8) {
                0 => {
                    n_cm += 1;
                    world.send(Method::POST, CM, configmap(n_cm)).await
                }
                1 if !configmaps_now.is_empty() => {
                    let name = pick(&mut rng, &configmaps_now);
                    world
                        .send(Method::DELETE, &format!("{CM}/{name}"), json!({}))
                        .await
                }
                2 if !configmaps_now.is_empty() => {
                    let name = pick(&mut rng, &configmaps_now);
                    let patch = json!({"data": {"v": format!("{round}-{}", rng.u32(..))}});
                    world
                        .send(Method::PATCH, &format!("{CM}/{name}"), patch)
                        .await
                }
                3 | 4 if !replicasets_now.is_empty() => {
                    let name = pick(&mut rng, &replicasets_now);
                    let patch = json!({"spec": {"replicas": rng.u64(0..=5)}});
                    world
                        .send(Method::PATCH, &format!("{RS}/{name}"), patch)
                        .await
                }
                5 if !pods_now.is_empty() => {
                    let name = pick(&mut rng, &pods_now);
                    let path = format!("/api/v1/namespaces/default/pods/{name}");
                    world.send(Method::DELETE, &path, json!({})).await
                }
                6 if !replicasets_now.is_empty() && rng.u8(0..3) == 0 => {
                    let name = pick(&mut rng, &replicasets_now);
                    let result = world
                        .send(Method::DELETE, &format!("{RS}/{name}"), json!({}))
                        .await;
                    if result.is_ok() {
                        deleted_rs.insert(name);
                    }
                    result
                }
                7 => {
                    next_rs += 1;
                    world
                        .send(Method::POST, RS, replicaset(next_rs, rng.u64(1..=5)))
                        .await
                }
                _ => Ok(Value::Null),
            };
        }
        if rng.bool() {
            world.server().compact();
        }
        tokio::time::sleep(Duration::from_millis(rng.u64(50..400))).await;
        world.chaos.set_refusing(false);
    }

    // Quiescence.
    let quiet = Instant::now();
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        match check(&world, &informers, &deleted_rs).await {
            Ok(()) => break,
            Err(e) if Instant::now() > deadline => {
                panic!("seed {seed} (restarts {}): {e}", world.restarts)
            }
            Err(e) => {
                if std::env::var_os("WINDLASS_CHAOS_VERBOSE").is_some() {
                    eprintln!("{:.1}s: {e}", quiet.elapsed().as_secs_f64());
                }
                tokio::time::sleep(Duration::from_millis(200)).await
            }
        }
    }
    eprintln!(
        "seed {seed}: quiescent {:.1}s after the last write",
        quiet.elapsed().as_secs_f64()
    );
    // Every delete of an object the handlers had been told about reached
    // them (an object created and deleted while the host was cut off was
    // never known, so no delete is owed for it).
    for (informer, seen) in informers.iter().zip(&seen) {
        let cached = cache_state(informer);
        let seen = seen.lock().unwrap();
        let missed: Vec<&String> = seen
            .known
            .iter()
            .filter(|k| !cached.contains_key(*k) && !seen.deleted.contains(*k))
            .collect();
        assert!(
            missed.is_empty(),
            "seed {seed}: {} deletes never delivered: {missed:?}",
            informer.spec()
        );
    }
    let stats = informers.iter().fold((0, 0), |(l, r), i| {
        (
            l + i.stats().relists.load(Ordering::Relaxed),
            r + i.stats().watch_restarts.load(Ordering::Relaxed),
        )
    });
    drop(configmaps);
    host.shutdown().await;
    if let Some(server) = world.server.take() {
        server.shutdown().await;
    }
    stats
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn host_converges_through_cuts_compaction_restarts_and_random_writes() {
    let seeds = env_or("WINDLASS_CHAOS_SEEDS", 2);
    let objects = env_or("WINDLASS_CHAOS_OBJECTS", 1000);
    let (mut relists, mut restarts) = (0, 0);
    for seed in 0..seeds {
        let started = Instant::now();
        let (l, r) = run_seed(seed, objects).await;
        eprintln!(
            "seed {seed}: converged in {:.1}s ({l} relists, {r} watch restarts)",
            started.elapsed().as_secs_f64()
        );
        relists += l;
        restarts += r;
    }
    assert!(
        restarts > 0 && relists > 0,
        "the chaos did not happen: restarts {restarts}, relists {relists}"
    );
}
