//! The writer against the real embedded API server: independent creates and
//! deletes of one outcome go out in growing batches, ordered writes keep
//! their place, and a failure mid-batch stops the outcome there.

use std::sync::Arc;

use serde_json::value::RawValue;
use serde_json::{Value, json};

use super::{Applied, Target, WriteError, WriteLimit, Writer};
use crate::client::ApiClient;
use crate::contract::{Delete, DeleteOptions, Manifest, Outcome, Patch, Watch, Write};
use crate::discovery::Discovery;
use crate::model::{EmptyCache, KindRef, ObjectRef, ObjectText};

struct Env {
    _server: windlass_apiserver::RunningServer,
    client: ApiClient,
    writer: Writer,
}

async fn env() -> Env {
    let server = windlass_apiserver::start(windlass_apiserver::Config::new().in_memory())
        .await
        .expect("API server");
    let client = ApiClient::from_kubeconfig_yaml(&server.kubeconfig())
        .await
        .unwrap();
    let writer = Writer::new(
        client.clone(),
        Arc::new(Discovery::new(client.clone())),
        WriteLimit::default(),
    );
    Env {
        _server: server,
        client,
        writer,
    }
}

fn manifest() -> Manifest {
    Manifest {
        name: "batcher".into(),
        version: "1".into(),
        reconciles: Watch::of(KindRef::new("v1", "ConfigMap")),
        owns: Vec::new(),
        reads: Vec::new(),
        writes: Vec::new(),
        resync_seconds: None,
        finalizer: None,
        max_concurrency: 1,
    }
}

fn cm_ref(name: &str) -> ObjectRef {
    ObjectRef {
        api_version: "v1".into(),
        kind: "ConfigMap".into(),
        namespace: Some("default".into()),
        name: name.into(),
    }
}

fn create(name: &str) -> Write {
    let text = json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "default"},
        "data": {"n": name},
    });
    Write::Apply(ObjectText::parse(text.to_string(), true).unwrap())
}

fn patch(name: &str, data: &str) -> Write {
    Write::MergePatch(Patch {
        target: cm_ref(name),
        subresource: None,
        patch: RawValue::from_string(json!({"data": {"n": data}}).to_string()).unwrap(),
    })
}

fn delete(name: &str) -> Write {
    Write::Delete(Delete {
        target: cm_ref(name),
        options: DeleteOptions::default(),
    })
}

async fn run(e: &Env, writes: Vec<Write>) -> (Result<(), WriteError>, Applied) {
    let manifest = manifest();
    let key = cm_ref("primary");
    let target = Target {
        manifest: &manifest,
        key: &key,
        primary: None,
        owned: &[],
        // Holds nothing: every named apply is a create.
        live: &EmptyCache,
        assume: None,
    };
    let outcome = Outcome {
        writes,
        ..Outcome::default()
    };
    let mut applied = Applied::default();
    let result = e.writer.execute(&target, &outcome, &mut applied).await;
    (result, applied)
}

/// The names of the ConfigMaps in `default`, sorted, with their `n` value.
async fn stored(e: &Env) -> Vec<(String, String)> {
    let body = e
        .client
        .get("/api/v1/namespaces/default/configmaps")
        .await
        .unwrap();
    let list: Value = serde_json::from_slice(&body).unwrap();
    let mut found: Vec<(String, String)> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["metadata"]["name"] != "kube-root-ca.crt")
        .map(|i| {
            (
                i["metadata"]["name"].as_str().unwrap().to_owned(),
                i["data"]["n"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    found.sort();
    found
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn creates_go_out_together_and_ordered_writes_keep_their_place() {
    let e = env().await;
    let mut writes: Vec<Write> = (0..10).map(|i| create(&format!("c{i}"))).collect();
    // Needs c0 to exist: not part of the run before it.
    writes.push(patch("c0", "patched"));
    // A run of two deletes after it; then a create of a name just deleted,
    // which must wait for that delete (not in the same run).
    writes.push(delete("c1"));
    writes.push(delete("c2"));
    writes.push(delete("c3"));
    writes.push(create("c3"));
    let (result, applied) = run(&e, writes).await;
    result.unwrap();
    assert_eq!(applied.failed_at, None);
    assert_eq!(applied.created.len(), 11, "{:?}", applied.created);
    assert_eq!(applied.deleted.len(), 3);
    assert_eq!(applied.requests, 10 + 1 + 3 + 1);
    let mut want: Vec<(String, String)> = (3..10)
        .map(|i| (format!("c{i}"), format!("c{i}")))
        .collect();
    want.insert(0, ("c0".into(), "patched".into()));
    assert_eq!(stored(&e).await, want);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_conflict_mid_batch_stops_the_outcome_there() {
    let e = env().await;
    // c3 already exists (the cache, empty, is behind): its create is a 409.
    let (result, _) = run(&e, vec![create("c3")]).await;
    result.unwrap();
    let mut writes: Vec<Write> = (0..10).map(|i| create(&format!("c{i}"))).collect();
    writes.push(patch("c0", "never"));
    let (result, applied) = run(&e, writes).await;
    assert!(
        matches!(result, Err(WriteError::Stale(ref err)) if err.code == 409),
        "{result:?}"
    );
    // Batches of 1, 2 and 4: c3 fails in the third, beside c4..c6, which
    // were sent with it and are recorded; c7..c9 and the patch never go out.
    assert_eq!(applied.failed_at, Some(3));
    let mut created: Vec<String> = applied.created.iter().map(|r| r.name.clone()).collect();
    created.sort();
    assert_eq!(created, ["c0", "c1", "c2", "c4", "c5", "c6"]);
    let names: Vec<String> = stored(&e).await.into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["c0", "c1", "c2", "c3", "c4", "c5", "c6"]);
    assert!(stored(&e).await.iter().all(|(_, n)| n != "never"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugins_write_limit_holds_its_requests_back_and_drops_none() {
    let e = env().await;
    let (qps, burst) = (20.0, 2);
    // Before the bucket exists: it can have filled no earlier.
    let started = std::time::Instant::now();
    e.writer
        .set_limit("batcher", Some(WriteLimit::new(qps, burst).unwrap()));
    let n = 12;
    let (result, applied) = run(&e, (0..n).map(|i| create(&format!("t{i}"))).collect()).await;
    let elapsed = started.elapsed();
    result.unwrap();
    // Every write went out, however long it waited.
    assert_eq!(applied.requests, n);
    assert_eq!(stored(&e).await.len(), n);
    // A lower bound on the time taken, which a slow machine only makes
    // easier to meet: past the burst, one request per 1/qps.
    let least = std::time::Duration::from_secs_f64((n - burst as usize) as f64 / qps);
    assert!(
        elapsed >= least,
        "{n} requests in {elapsed:?}, under {least:?}"
    );
    let stats = e.writer.throttle_stats();
    let batcher = stats.iter().find(|t| t.plugin == "batcher").unwrap();
    assert!(batcher.waited > std::time::Duration::ZERO, "{batcher:?}");
    assert_eq!(batcher.waits.count(), n as u64);
}
