//! Durability: acknowledged writes survive `kill -9` of a server process and
//! an in-process drop without shutdown; revisions keep increasing after a
//! restart; the configured durability is the one storage runs with.

mod common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{Http, configmap, rv_of};
use windlass_apiserver::{Config, Durability, start};

const CMS: &str = "/api/v1/namespaces/default/configmaps";
const CHILD_ENV: &str = "WINDLASS_APISERVER_CHILD_DATA";

/// Not a test on its own: the server process the kill -9 test starts (this
/// test binary re-executed with `CHILD_ENV` set). Without it, it returns.
#[test]
fn child_server_process() {
    let Ok(dir) = std::env::var(CHILD_ENV) else {
        return;
    };
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let server = start(Config::new().data_dir(dir.clone().into()))
            .await
            .unwrap();
        let tmp = Path::new(&dir).join("url.tmp");
        std::fs::write(&tmp, server.addr().to_string()).unwrap();
        std::fs::rename(&tmp, Path::new(&dir).join("url")).unwrap();
        std::future::pending::<()>().await;
    });
}

#[allow(
    clippy::zombie_processes,
    reason = "the caller kills and waits for the child"
)]
fn spawn_child(dir: &Path) -> (std::process::Child, std::net::SocketAddr) {
    let _ = std::fs::remove_file(dir.join("url"));
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "child_server_process",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let start = Instant::now();
    loop {
        if let Ok(s) = std::fs::read_to_string(dir.join("url")) {
            return (child, s.parse().unwrap());
        }
        if start.elapsed() > Duration::from_secs(30) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("child server did not start");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn acknowledged_writes_survive_kill_9() {
    let dir = tempfile::tempdir().unwrap();
    let mut max_rv_seen = 0;
    let mut all_acked: Vec<(String, u64)> = Vec::new();
    for round in 0..3 {
        let (mut child, addr) = spawn_child(dir.path());
        let http = Http::new(addr);
        // Everything acknowledged before is still there, unchanged.
        let (c, list) = http.get(CMS).await;
        assert_eq!(c, 200);
        let items = list["items"].as_array().unwrap();
        for (name, rv) in &all_acked {
            let found = items
                .iter()
                .find(|i| i["metadata"]["name"] == name.as_str());
            let found = found
                .unwrap_or_else(|| panic!("round {round}: acknowledged {name} (rv {rv}) lost"));
            assert_eq!(rv_of(found), *rv);
        }
        assert!(rv_of(&list) >= max_rv_seen, "list revision went backwards");
        let acked = Arc::new(Mutex::new(Vec::new()));
        let writers: Vec<_> = (0..8)
            .map(|w| {
                let (http, acked) = (http.clone(), acked.clone());
                tokio::spawn(async move {
                    for i in 0.. {
                        let name = format!("r{round}-w{w}-{i}");
                        let body = configmap(&name, i);
                        let fut = http.send("POST", CMS, "application/json", Some(&body));
                        match tokio::time::timeout(Duration::from_secs(2), fut).await {
                            Ok((201, obj)) => acked.lock().unwrap().push((name, rv_of(&obj))),
                            _ => break,
                        }
                    }
                })
            })
            .collect();
        // Kill once a good number of writes are acknowledged (not after a
        // fixed time: a loaded machine may be slow to get going).
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        while acked.lock().unwrap().len() < 200 && std::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        child.kill().unwrap(); // SIGKILL, mid-write
        child.wait().unwrap();
        for w in writers {
            // Writers fail once the process is gone.
            let _ = tokio::time::timeout(Duration::from_secs(5), w).await;
        }
        let acked = std::mem::take(&mut *acked.lock().unwrap());
        assert!(
            acked.len() > 50,
            "round {round}: only {} writes acknowledged",
            acked.len()
        );
        let round_max = acked.iter().map(|(_, rv)| *rv).max().unwrap();
        assert!(
            round_max > max_rv_seen,
            "revisions increase across restarts"
        );
        max_rv_seen = round_max;
        all_acked.extend(acked);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_without_shutdown_keeps_acknowledged_writes() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(Config::new().data_dir(dir.path().into()))
        .await
        .unwrap();
    let http = Http::new(server.addr());
    let mut rvs = Vec::new();
    for i in 0..20 {
        let (c, o) = http.post(CMS, &configmap(&format!("d{i}"), i)).await;
        assert_eq!(c, 201);
        rvs.push(rv_of(&o));
    }
    http.delete(&format!("{CMS}/d0")).await;
    let before = server.current_revision();
    drop(server);
    tokio::time::sleep(Duration::from_millis(100)).await;
    let server = start(Config::new().data_dir(dir.path().into()))
        .await
        .unwrap();
    let http = Http::new(server.addr());
    let (_, list) = http.get(CMS).await;
    let names: Vec<&str> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["metadata"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names.len(), 19);
    assert!(!names.contains(&"d0"));
    assert!(rv_of(&list) > before);
    let (_, o) = http.post(CMS, &configmap("after", 0)).await;
    assert!(rv_of(&o) > before);
    // System namespaces are not duplicated, and an orderly shutdown flushes.
    let (_, ns) = http.get("/api/v1/namespaces").await;
    assert_eq!(
        ns["items"].as_array().unwrap().len(),
        4,
        "default, kube-system, kube-public, kube-node-lease"
    );
    // Nor is the `kubernetes` Service, which every start brings up to date.
    let (_, svcs) = http.get("/api/v1/namespaces/default/services").await;
    let names: Vec<&str> = svcs["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["metadata"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["kubernetes"]);
    server.shutdown().await;
    let server = start(Config::new().data_dir(dir.path().into()))
        .await
        .unwrap();
    let (_, list) = Http::new(server.addr()).get(CMS).await;
    assert_eq!(list["items"].as_array().unwrap().len(), 20);
    server.shutdown().await;
}

#[tokio::test]
async fn the_configured_durability_is_what_storage_runs_with() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(Config::new().data_dir(dir.path().into()))
        .await
        .unwrap();
    assert_eq!(
        server.durability(),
        Some(Durability::Process),
        "the default"
    );
    server.shutdown().await;
    let server = start(
        Config::new()
            .data_dir(dir.path().into())
            .durability(Durability::PowerLoss),
    )
    .await
    .unwrap();
    assert_eq!(server.durability(), Some(Durability::PowerLoss));
    // Switching modes keeps the data.
    let http = Http::new(server.addr());
    let (c, _) = http.post(CMS, &configmap("full", 0)).await;
    assert_eq!(c, 201);
    server.shutdown().await;
    let server = start(Config::new().data_dir(dir.path().into()))
        .await
        .unwrap();
    let (c, _) = Http::new(server.addr()).get(&format!("{CMS}/full")).await;
    assert_eq!(c, 200);
    server.shutdown().await;
    let server = start(Config::new().in_memory()).await.unwrap();
    assert_eq!(server.durability(), None);
    server.shutdown().await;
}

/// A quota charged by concurrent creates: after `kill -9` mid-burst (charges
/// still in memory, objects stored), its `status.used` counts exactly the
/// objects that survived, never one more or one less (every start recounts
/// quotas from what is stored).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_quota_charge_survives_kill_9_with_exactly_its_objects() {
    let dir = tempfile::tempdir().unwrap();
    let (mut child, addr) = spawn_child(dir.path());
    let http = Http::new(addr);
    let quota = serde_json::json!({
        "apiVersion": "v1", "kind": "ResourceQuota",
        "metadata": {"name": "counts"},
        "spec": {"hard": {"configmaps": "100000", "count/configmaps": "100000"}}
    });
    let (c, q) = http
        .post("/api/v1/namespaces/default/resourcequotas", &quota)
        .await;
    assert_eq!(c, 201, "{q}");
    let acked = Arc::new(Mutex::new(0usize));
    let writers: Vec<_> = (0..8)
        .map(|w| {
            let (http, acked) = (http.clone(), acked.clone());
            tokio::spawn(async move {
                for i in 0.. {
                    let body = configmap(&format!("q-w{w}-{i}"), i);
                    let fut = http.send("POST", CMS, "application/json", Some(&body));
                    match tokio::time::timeout(Duration::from_secs(2), fut).await {
                        Ok((201, _)) => *acked.lock().unwrap() += 1,
                        _ => break,
                    }
                }
            })
        })
        .collect();
    let deadline = Instant::now() + Duration::from_secs(60);
    while *acked.lock().unwrap() < 300 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    child.kill().unwrap();
    child.wait().unwrap();
    for w in writers {
        let _ = tokio::time::timeout(Duration::from_secs(5), w).await;
    }
    let acked = *acked.lock().unwrap();
    let (mut child, addr) = spawn_child(dir.path());
    let http = Http::new(addr);
    let (_, list) = http.get(CMS).await;
    let stored = list["items"].as_array().unwrap().len();
    let (_, q) = http
        .get("/api/v1/namespaces/default/resourcequotas/counts")
        .await;
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(stored >= acked, "{stored} stored, {acked} acknowledged");
    let used = &q["status"]["used"];
    assert_eq!(used["configmaps"], stored.to_string(), "{q}");
    assert_eq!(used["count/configmaps"], stored.to_string(), "{q}");
}

/// A CRD whose schema gains a default and loses a field: its stored
/// objects read back defaulted and pruned by the new schema, at their own
/// resource version (nothing is rewritten), as kube's storage decoder reads
/// them; the same after a restart, which reads the old stored form again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stored_custom_resources_read_through_their_crds_current_schema() {
    use serde_json::json;
    let crd = |spec_props: serde_json::Value| {
        json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced",
                "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
                "versions": [{"name": "v1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                        "spec": {"type": "object", "properties": spec_props}}}}}]}
        })
    };
    const CRDS: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
    const WIDGETS: &str = "/apis/example.com/v1/namespaces/default/widgets";
    let dir = tempfile::tempdir().unwrap();
    let server = start(Config::new().data_dir(dir.path().into()))
        .await
        .unwrap();
    let http = Http::new(server.addr());
    let (c, _) = http
        .post(
            CRDS,
            &crd(json!({"size": {"type": "string"}, "legacy": {"type": "string"}})),
        )
        .await;
    assert_eq!(c, 201);
    let widget = json!({"apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": "w"}, "spec": {"size": "s", "legacy": "x"}});
    let (c, created) = http.post(WIDGETS, &widget).await;
    assert_eq!(c, 201, "{created}");
    let rv = created["metadata"]["resourceVersion"].clone();
    let (c, _) = http
        .merge_patch(
            &format!("{CRDS}/widgets.example.com"),
            &json!({"spec": {"versions": crd(json!({
                "size": {"type": "string"},
                "replicas": {"type": "integer", "default": 3}}))["spec"]["versions"]}}),
        )
        .await;
    assert_eq!(c, 200);
    let want = json!({"size": "s", "replicas": 3});
    let (_, got) = http.get(&format!("{WIDGETS}/w")).await;
    assert_eq!(got["spec"], want);
    assert_eq!(got["metadata"]["resourceVersion"], rv, "nothing rewritten");
    let (_, list) = http.get(WIDGETS).await;
    assert_eq!(list["items"][0]["spec"], want);
    server.shutdown().await;
    let server = start(Config::new().data_dir(dir.path().into()))
        .await
        .unwrap();
    let (_, got) = Http::new(server.addr()).get(&format!("{WIDGETS}/w")).await;
    assert_eq!(got["spec"], want, "after a restart");
    assert_eq!(got["metadata"]["resourceVersion"], rv);
    server.shutdown().await;
}
