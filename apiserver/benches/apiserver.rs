//! Benchmark of the embedded API server: durable creates with each
//! durability side by side, watch fan-out, a 100,000-object list, the
//! cost of namespace governance (pod creates under a LimitRange and three
//! ResourceQuotas against the same without), and the time from starting a
//! server (the library, and the `windlass apiserver` binary) to its first
//! answer, printed as tables (`cargo bench -p windlass-apiserver --bench
//! apiserver`; `-- --governance` or `-- --startup` for one table alone;
//! `-- --governance --only <namespace>` creates pods in one governance
//! namespace only, for a profiler).

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::Request;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use windlass_apiserver::{Config, Durability, RunningServer, start};

type HttpClient = Client<HttpConnector, Full<Bytes>>;

const CMS: &str = "/api/v1/namespaces/default/configmaps";

fn client() -> HttpClient {
    Client::builder(TokioExecutor::new()).build_http()
}

async fn create(c: &HttpClient, addr: SocketAddr, name: &str) -> bool {
    let body = format!(
        r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"{name}"}},"data":{{"k":"v"}}}}"#
    );
    post(c, addr, CMS, body).await
}

/// POSTs `body` to the collection at `path`; whether it was created.
async fn post(c: &HttpClient, addr: SocketAddr, path: &str, body: String) -> bool {
    let req = Request::post(format!("http://{addr}{path}"))
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(body)))
        .expect("valid request");
    match c.request(req).await {
        Ok(r) => {
            let ok = r.status() == 201;
            let _ = r.into_body().collect().await;
            ok
        }
        Err(_) => false,
    }
}

/// A pod with one container that sets no resources, in `ns`.
async fn create_pod(c: &HttpClient, addr: SocketAddr, ns: &str, name: &str) -> bool {
    let body = format!(
        r#"{{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"{name}"}},"spec":{{"containers":[{{"name":"app","image":"nginx:1.27"}}]}}}}"#
    );
    post(c, addr, &format!("/api/v1/namespaces/{ns}/pods"), body).await
}

/// Creates `n` pods in `ns` with `clients` concurrent clients; returns the
/// seconds taken.
async fn create_pods(addr: SocketAddr, ns: &str, prefix: &str, n: u64, clients: u64) -> f64 {
    let next = Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let tasks: Vec<_> = (0..clients)
        .map(|_| {
            let (next, ns, prefix) = (next.clone(), ns.to_owned(), prefix.to_owned());
            tokio::spawn(async move {
                let c = client();
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= n {
                        break;
                    }
                    let name = format!("{prefix}-{i}");
                    assert!(create_pod(&c, addr, &ns, &name).await, "pod create failed");
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.expect("client task");
    }
    start.elapsed().as_secs_f64()
}

const LIMIT_RANGE: &str = r#"{"apiVersion":"v1","kind":"LimitRange","metadata":{"name":"mem-cpu-res-limit"},
    "spec":{"limits":[{"type":"Container","default":{"cpu":"1","memory":"512Mi"},"defaultRequest":{"cpu":"500m","memory":"256Mi"},
    "max":{"cpu":"2","memory":"1024Mi"},"min":{"cpu":"100m","memory":"100Mi"}}]}}"#;

/// The namespaces of the governance rows, each with its LimitRange and
/// quotas (limits high enough never to refuse): `plain` has none;
/// `notes` has the seed notes' `compute-resources` (charged by every pod)
/// and `object-counts` (not charged by pods) and a quota on best-effort
/// pods (the range makes every pod Burstable, so not charged either);
/// `charged` has three quotas that every pod is charged to; `lronly` has
/// only the LimitRange and `qonly` only one quota, to tell their costs apart.
async fn governance_namespaces(addr: SocketAddr) {
    let c = client();
    let quota = |name: &str, spec: &str| {
        format!(
            r#"{{"apiVersion":"v1","kind":"ResourceQuota","metadata":{{"name":"{name}"}},"spec":{spec}}}"#
        )
    };
    let compute = quota(
        "compute-resources",
        r#"{"hard":{"requests.cpu":"1M","requests.memory":"1Ei","limits.cpu":"1M","limits.memory":"1Ei","pods":"1M"}}"#,
    );
    let mut objects = vec![];
    for ns in ["plain", "notes", "charged", "lronly", "qonly"] {
        objects.push((
            "/api/v1/namespaces".to_owned(),
            format!(r#"{{"apiVersion":"v1","kind":"Namespace","metadata":{{"name":"{ns}"}}}}"#),
        ));
    }
    let governed = [
        ("notes", LIMIT_RANGE.to_owned(), "limitranges"),
        ("notes", compute.clone(), "resourcequotas"),
        (
            "notes",
            quota(
                "object-counts",
                r#"{"hard":{"configmaps":"10","persistentvolumeclaims":"4","replicationcontrollers":"20","secrets":"10","services":"10","services.loadbalancers":"2"}}"#,
            ),
            "resourcequotas",
        ),
        (
            "notes",
            quota(
                "best-effort",
                r#"{"hard":{"pods":"1M"},"scopes":["BestEffort"]}"#,
            ),
            "resourcequotas",
        ),
        ("lronly", LIMIT_RANGE.to_owned(), "limitranges"),
        (
            "qonly",
            quota("pod-count", r#"{"hard":{"pods":"1M"}}"#),
            "resourcequotas",
        ),
        ("charged", LIMIT_RANGE.to_owned(), "limitranges"),
        ("charged", compute, "resourcequotas"),
        (
            "charged",
            quota("pod-count", r#"{"hard":{"count/pods":"1M"}}"#),
            "resourcequotas",
        ),
        (
            "charged",
            quota(
                "not-best-effort",
                r#"{"hard":{"pods":"1M"},"scopes":["NotBestEffort"]}"#,
            ),
            "resourcequotas",
        ),
    ];
    for (ns, body, plural) in governed {
        objects.push((format!("/api/v1/namespaces/{ns}/{plural}"), body));
    }
    for (path, body) in objects {
        assert!(post(&c, addr, &path, body.clone()).await, "setup: {body}");
    }
}

/// Creates `n` objects with `clients` concurrent clients; returns the seconds taken.
async fn create_many(addr: SocketAddr, prefix: &str, n: u64, clients: u64) -> f64 {
    let next = Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let tasks: Vec<_> = (0..clients)
        .map(|_| {
            let (next, prefix) = (next.clone(), prefix.to_owned());
            tokio::spawn(async move {
                let c = client();
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= n {
                        break;
                    }
                    assert!(
                        create(&c, addr, &format!("{prefix}-{i}")).await,
                        "create failed"
                    );
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.expect("client task");
    }
    start.elapsed().as_secs_f64()
}

/// Opens a watch from `rv` and counts events until `want` arrived.
async fn watch_count(addr: SocketAddr, rv: u64, want: u64) -> u64 {
    let req = Request::get(format!(
        "http://{addr}{CMS}?watch=true&resourceVersion={rv}"
    ))
    .body(Full::new(Bytes::new()))
    .expect("valid request");
    let resp = client().request(req).await.expect("watch opens");
    let mut body = resp.into_body();
    let mut seen = 0;
    while seen < want {
        match body.frame().await {
            Some(Ok(f)) => {
                if let Ok(d) = f.into_data() {
                    seen += d.iter().filter(|&&b| b == b'\n').count() as u64;
                }
            }
            _ => break,
        }
    }
    seen
}

/// One table row: a value per durability, or one measured once for a path
/// that does not touch storage.
fn row(metric: &str, values: &[String], target: &str) {
    match values {
        [memory] => println!("| {metric} | {memory} | (same: served from memory) | {target} |"),
        values => println!("| {metric} | {} | {target} |", values.join(" | ")),
    }
}

/// A server keeping its state in a fresh temporary directory.
async fn durable_server(durability: Durability) -> (RunningServer, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("temp dir");
    let server = start(
        Config::new()
            .data_dir(dir.path().into())
            .durability(durability)
            .watch_history(120_000),
    )
    .await
    .expect("server starts");
    (server, dir)
}

#[tokio::main]
async fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    if std::env::args().any(|a| a == "--startup") {
        startup().await;
        return;
    }
    if let Some(ops) = std::env::args().find_map(|a| a.strip_prefix("--ops=").map(str::to_owned)) {
        pod_ops(&ops).await;
        return;
    }
    let n = if quick { 2_000 } else { 10_000 };
    println!("| metric | process | power-loss | target |");
    println!("|---|---|---|---|");
    if std::env::args().any(|a| a == "--governance") {
        governance(n).await;
        return;
    }

    // Both durabilities on the same machine in the same run, each on a fresh
    // database, interleaved so that a noisy neighbour hurts both alike.
    let (full, full_dir) = durable_server(Durability::PowerLoss).await;
    let (server, dir) = durable_server(Durability::Process).await;
    let mut rates = [[0.0; 2]; 2];
    for (i, clients) in [8, 64].into_iter().enumerate() {
        for (j, s) in [&server, &full].into_iter().enumerate() {
            let secs = create_many(s.addr(), &format!("c{clients}"), n, clients).await;
            rates[i][j] = n as f64 / secs;
        }
    }
    full.shutdown().await;
    drop(full_dir);
    row(
        "durable creates/s (8 clients)",
        &[format!("{:.0}", rates[0][0]), format!("{:.0}", rates[0][1])],
        ">= 5,000",
    );
    row(
        "durable creates/s (64 clients, group commit)",
        &[format!("{:.0}", rates[1][0]), format!("{:.0}", rates[1][1])],
        "-",
    );
    let ms = fsync_ms(dir.path());
    row(
        "fsync latency of this disk; the 8-client bound",
        &["-".into(), format!("{ms:.2} ms; <= {:.0}/s", 8000.0 / ms)],
        "-",
    );
    let addr = server.addr();

    // Fan-out: 10 watchers replay the last 2n events (the same path live
    // events take), all at once.
    let events = 2 * n;
    let from = server.current_revision() - events;
    let start = Instant::now();
    let watchers: Vec<_> = (0..10)
        .map(|_| tokio::spawn(watch_count(addr, from, events)))
        .collect();
    let mut delivered = 0;
    for w in watchers {
        delivered += w.await.expect("watcher");
    }
    let secs = start.elapsed().as_secs_f64();
    row(
        "watch events/s delivered (10 watchers)",
        &[format!("{:.0}", delivered as f64 / secs)],
        ">= 100,000",
    );

    let total: u64 = if quick { 10_000 } else { 100_000 };
    create_many(addr, "l", total - 2 * n, 64).await;
    let c = client();
    let mut best = Duration::MAX;
    let mut items = 0;
    for _ in 0..3 {
        let start = Instant::now();
        let req = Request::get(format!("http://{addr}{CMS}"))
            .body(Full::new(Bytes::new()))
            .expect("valid request");
        let body = c
            .request(req)
            .await
            .expect("list")
            .into_body()
            .collect()
            .await
            .expect("body")
            .to_bytes();
        best = best.min(start.elapsed());
        let v: serde_json::Value = serde_json::from_slice(&body).expect("list is JSON");
        items = v["items"].as_array().map_or(0, Vec::len);
    }
    assert_eq!(items as u64, total, "list returned every object");
    row(
        &format!("list {total} objects (s)"),
        &[format!("{:.3}", best.as_secs_f64())],
        "<= 1.0 (100k)",
    );

    server.shutdown().await;
    governance(n).await;
    startup().await;
}

/// Pod creates in a namespace with a LimitRange and three quotas against
/// the same in one without, on a fresh durable server (`--governance`
/// runs only this row).
async fn governance(n: u64) {
    let (server, _dir) = durable_server(Durability::Process).await;
    let addr = server.addr();
    // Pod creates with and without governance, alternated so that all
    // see the same noise.
    governance_namespaces(addr).await;
    if let Some(ns) = only() {
        // For a profiler: one namespace's creates, so that two runs'
        // instruction counts differ by that namespace's admission alone.
        let secs = create_pods(addr, &ns, "p", n, 8).await;
        row(
            &format!("pod creates/s in {ns} alone (8 clients)"),
            &[format!("{:.0}", n as f64 / secs), "-".into()],
            "-",
        );
        server.shutdown().await;
        return;
    }
    let mut secs = [0.0; 5];
    let namespaces = ["plain", "notes", "charged", "lronly", "qonly"];
    // Rounds of a thousand creates a namespace (a tenth of that with
    // `--quick`), each namespace's turn rotating, so that every namespace
    // takes every place in the order equally often: the store grows
    // through the run (later creates are a little slower), and a burst of
    // load from elsewhere falls on all of them alike. A full run is 30
    // rounds (150,000 creates, ~20 s): the row compares two rates ~15%
    // apart, and ten rounds of an eighth of a second each moved a run's
    // ratio by ±0.05 on a shared machine.
    let rounds: u64 = if n >= 10_000 { 30 } else { 10 };
    let per_round = n / 10;
    for round in 0..rounds {
        for k in 0..namespaces.len() {
            let i = (k + round as usize) % namespaces.len();
            let prefix = format!("r{round}");
            secs[i] += create_pods(addr, namespaces[i], &prefix, per_round, 8).await;
        }
    }
    let [plain, notes, charged, lronly, qonly] = secs.map(|s| (per_round * rounds) as f64 / s);
    for (what, rate, target) in [
        (
            "1 LimitRange + 3 ResourceQuotas (seed notes' quotas, 1 charged per pod)",
            notes,
            ">= 0.8",
        ),
        (
            "1 LimitRange + 3 ResourceQuotas (3 quotas charged per pod)",
            charged,
            ">= 0.8",
        ),
        // The two halves of admission apart, to see which one costs.
        ("1 LimitRange alone", lronly, "-"),
        ("1 ResourceQuota alone (charged per pod)", qonly, "-"),
    ] {
        row(
            &format!("pod creates/s, {what} vs none (8 clients)"),
            &[
                format!("{rate:.0} vs {plain:.0} = {:.2}", rate / plain),
                "-".into(),
            ],
            target,
        );
    }
    quota_edit(addr, "charged", per_round * rounds).await;
    server.shutdown().await;
}

/// A person editing a quota's `spec.hard` in namespace `ns`, which holds
/// `pods` pods: the write recounts the quota's usage from every pod, under
/// the state lock (each edit changes the hard limit, so each recounts).
async fn quota_edit(addr: SocketAddr, ns: &str, pods: u64) {
    let c = client();
    let mut took = vec![];
    for i in 0..7 {
        let body = format!(r#"{{"spec":{{"hard":{{"pods":"{}"}}}}}}"#, 2_000_000 + i);
        let req = Request::patch(format!(
            "http://{addr}/api/v1/namespaces/{ns}/resourcequotas/compute-resources"
        ))
        .header("content-type", "application/merge-patch+json")
        .body(Full::new(Bytes::from(body)))
        .expect("valid request");
        let start = Instant::now();
        let r = c.request(req).await.expect("quota patch");
        assert_eq!(r.status(), 200, "quota patch");
        let _ = r.into_body().collect().await;
        took.push(start.elapsed().as_secs_f64() * 1e3);
    }
    took.sort_by(f64::total_cmp);
    row(
        &format!("a quota's spec.hard edited, {pods} pods recounted: ms (median of 7)"),
        &[format!("{:.1}", took[took.len() / 2]), "-".into()],
        "-",
    );
}

/// `--only <namespace>`: the governance namespace to profile alone.
fn only() -> Option<String> {
    let args: Vec<String> = std::env::args().collect();
    let at = args.iter().position(|a| a == "--only")?;
    args.get(at + 1).cloned()
}

/// The writes one pod costs the server in the control-loop chain, each
/// kind in turn for `n` pods, with the chain's three pod watches reading
/// every change: `--ops=create,bind,status,event[:n]` runs the phases
/// named (in that order, one client), for measuring one phase's cost by
/// difference under `valgrind --tool=callgrind` (instruction counts are
/// repeatable where times are not). Prints the seconds each phase took.
async fn pod_ops(spec: &str) {
    let (phases, n) = match spec.split_once(':') {
        Some((p, n)) => (p, n.parse().expect("--ops=phases:n")),
        None => (spec, 200),
    };
    let server = start(Config::new().in_memory().watch_history(100_000))
        .await
        .expect("server starts");
    let addr = server.addr();
    let c = client();
    let owner = r#"{"apiVersion":"apps/v1","kind":"ReplicaSet","metadata":{"name":"bench-5d8f"},"spec":{"replicas":1,"selector":{"matchLabels":{"app":"bench"}},"template":{"metadata":{"labels":{"app":"bench"}},"spec":{"containers":[{"name":"web","image":"nginx"}]}}}}"#;
    assert!(
        post(
            &c,
            addr,
            "/apis/apps/v1/namespaces/default/replicasets",
            owner.into()
        )
        .await,
        "the owner is created"
    );
    let rs = get_json(
        &c,
        addr,
        "/apis/apps/v1/namespaces/default/replicasets/bench-5d8f",
    )
    .await;
    let uid = rs["metadata"]["uid"].as_str().expect("a uid").to_owned();
    let rv = server.current_revision();
    let mut watches = Vec::new();
    for selector in ["spec.nodeName%3D", "spec.nodeName!%3D", ""] {
        let path = format!("/api/v1/pods?watch=true&resourceVersion={rv}&fieldSelector={selector}");
        watches.push(tokio::spawn(async move {
            let req = Request::get(format!("http://{addr}{path}"))
                .body(Full::new(Bytes::new()))
                .expect("valid request");
            let mut body = client()
                .request(req)
                .await
                .expect("watch opens")
                .into_body();
            while let Some(Ok(_)) = body.frame().await {}
        }));
    }
    let pods = "/api/v1/namespaces/default/pods";
    let manager = "fieldManager=windlass-replicaset";
    for phase in phases.split(',') {
        let t = Instant::now();
        for i in 0..n {
            let name = format!("bench-5d8f-{i:05}");
            let (method, path, body, content_type) = match phase {
                "create" => (
                    "POST",
                    format!("{pods}?{manager}"),
                    format!(
                        r#"{{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"{name}","labels":{{"app":"bench","pod-template-hash":"5d8f"}},"ownerReferences":[{{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"bench-5d8f","uid":"{uid}","controller":true,"blockOwnerDeletion":true}}]}},"spec":{{"containers":[{{"name":"web","image":"nginx","resources":{{"requests":{{"cpu":"100m","memory":"64Mi"}}}}}}],"terminationGracePeriodSeconds":1}}}}"#
                    ),
                    "application/json",
                ),
                "bind" => (
                    "POST",
                    format!("{pods}/{name}/binding?fieldManager=windlass-scheduler"),
                    format!(
                        r#"{{"apiVersion":"v1","kind":"Binding","metadata":{{"name":"{name}"}},"target":{{"apiVersion":"v1","kind":"Node","name":"node-{}"}}}}"#,
                        i % 1000
                    ),
                    "application/json",
                ),
                "status" => (
                    "PATCH",
                    format!("{pods}/{name}/status?fieldManager=windlass-kubelet"),
                    format!(
                        r#"{{"status":{{"phase":"Running","hostIP":"10.0.0.1","podIP":"10.1.0.{}","startTime":"2026-01-01T00:00:00Z","conditions":[{{"type":"PodScheduled","status":"True","lastTransitionTime":"2026-01-01T00:00:00Z"}},{{"type":"Initialized","status":"True","lastTransitionTime":"2026-01-01T00:00:00Z"}},{{"type":"ContainersReady","status":"True","lastTransitionTime":"2026-01-01T00:00:00Z"}},{{"type":"Ready","status":"True","lastTransitionTime":"2026-01-01T00:00:00Z"}}],"containerStatuses":[{{"name":"web","image":"nginx","imageID":"docker.io/library/nginx@sha256:0","containerID":"containerd://{i}","ready":true,"started":true,"restartCount":0,"state":{{"running":{{"startedAt":"2026-01-01T00:00:00Z"}}}}}}]}}}}"#,
                        i % 250
                    ),
                    "application/merge-patch+json",
                ),
                "event" => (
                    "POST",
                    "/api/v1/namespaces/default/events?fieldManager=windlass-kubelet".to_owned(),
                    format!(
                        r#"{{"apiVersion":"v1","kind":"Event","metadata":{{"generateName":"{name}.","namespace":"default"}},"involvedObject":{{"apiVersion":"v1","kind":"Pod","name":"{name}","namespace":"default","uid":"{uid}"}},"type":"Normal","reason":"Pulled","message":"Container image \"nginx\" already present on machine","source":{{"component":"windlass/kubelet"}},"reportingComponent":"windlass/kubelet","reportingInstance":"windlass/kubelet","firstTimestamp":"2026-01-01T00:00:00Z","lastTimestamp":"2026-01-01T00:00:00Z","count":1}}"#
                    ),
                    "application/json",
                ),
                other => panic!("unknown phase {other}"),
            };
            let req = Request::builder()
                .method(method)
                .uri(format!("http://{addr}{path}"))
                .header("content-type", content_type)
                .body(Full::new(Bytes::from(body)))
                .expect("valid request");
            let resp = c.request(req).await.expect("request");
            let status = resp.status();
            let answer = resp.into_body().collect().await.expect("body").to_bytes();
            assert!(status.is_success(), "{phase} {name}: {status}: {answer:?}");
        }
        println!("{phase}: {n} in {:.3}s", t.elapsed().as_secs_f64());
    }
    server.shutdown().await;
    for w in watches {
        let _ = w.await;
    }
}

async fn get_json(c: &HttpClient, addr: SocketAddr, path: &str) -> serde_json::Value {
    let req = Request::get(format!("http://{addr}{path}"))
        .body(Full::new(Bytes::new()))
        .expect("valid request");
    let body = c
        .request(req)
        .await
        .expect("get")
        .into_body()
        .collect()
        .await
        .expect("body");
    serde_json::from_slice(&body.to_bytes()).expect("JSON")
}

/// How many starts each startup figure is the median of.
const STARTS: usize = 20;

/// `GET /api/v1/namespaces` on a new connection: whether it answered 200.
async fn namespaces(addr: SocketAddr) -> bool {
    let req = Request::get(format!("http://{addr}/api/v1/namespaces"))
        .body(Full::new(Bytes::new()))
        .expect("valid request");
    match client().request(req).await {
        Ok(r) => {
            let ok = r.status() == 200;
            ok && r.into_body().collect().await.is_ok()
        }
        Err(_) => false,
    }
}

fn median_ms(mut times: Vec<Duration>) -> String {
    times.sort();
    format!("{:.1}", times[times.len() / 2].as_secs_f64() * 1000.0)
}

/// From starting a server to the first successful `GET /api/v1/namespaces`:
/// in this process (in memory, and on a fresh data directory), and as the
/// `windlass apiserver` binary (a new process, polled until it answers).
async fn startup() {
    println!();
    println!("| start to the first `GET /api/v1/namespaces` (median of {STARTS}) | ms | target |");
    println!("|---|---|---|");
    let mut memory = Vec::new();
    let mut disk = Vec::new();
    for _ in 0..STARTS {
        let t = Instant::now();
        let s = start(Config::new()).await.expect("server starts");
        assert!(namespaces(s.addr()).await, "the server answers");
        memory.push(t.elapsed());
        s.shutdown().await;
        let dir = tempfile::tempdir().expect("temp dir");
        let t = Instant::now();
        let s = start(Config::new().data_dir(dir.path().into()))
            .await
            .expect("server starts");
        assert!(namespaces(s.addr()).await, "the server answers");
        disk.push(t.elapsed());
        s.shutdown().await;
    }
    println!("| library, in memory | {} | <= 50 |", median_ms(memory));
    println!(
        "| library, new data directory (SQLite) | {} | <= 50 |",
        median_ms(disk)
    );
    match windlass_binary() {
        Some((bin, build)) => {
            let mut times = Vec::new();
            for _ in 0..STARTS {
                times.push(binary_start(&bin).await);
            }
            println!(
                "| `windlass apiserver --in-memory` ({build}), spawned | {} | <= 50 |",
                median_ms(times)
            );
        }
        None => println!(
            "| `windlass apiserver` | not measured: build it first (`cargo build -p windlass --release`, or set WINDLASS_BIN) | <= 50 |"
        ),
    }
}

/// The `windlass` binary and which build it is: `$WINDLASS_BIN`, else the
/// workspace's release build, else its debug build.
fn windlass_binary() -> Option<(std::path::PathBuf, &'static str)> {
    if let Some(b) = std::env::var_os("WINDLASS_BIN") {
        return Some((b.into(), "$WINDLASS_BIN"));
    }
    let target = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../target");
    [("release", "release build"), ("debug", "debug build")]
        .into_iter()
        .map(|(dir, build)| (target.join(dir).join("windlass"), build))
        .find(|(p, _)| p.is_file())
}

/// Starts the binary on a free port and polls until it answers.
async fn binary_start(bin: &std::path::Path) -> Duration {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let t = Instant::now();
    let mut child = std::process::Command::new(bin)
        .args(["apiserver", "--in-memory", "--listen", &addr.to_string()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("windlass starts");
    while !namespaces(addr).await {
        assert!(
            t.elapsed() < Duration::from_secs(30),
            "windlass apiserver never answered"
        );
        tokio::time::sleep(Duration::from_micros(200)).await;
    }
    let took = t.elapsed();
    let _ = child.kill();
    let _ = child.wait();
    took
}

/// Average latency of a small write plus fsync in `dir`.
fn fsync_ms(dir: &std::path::Path) -> f64 {
    use std::io::Write;
    let path = dir.join("fsync-probe");
    let mut f = std::fs::File::create(&path).expect("probe file");
    let start = Instant::now();
    for _ in 0..50 {
        f.write_all(b"probe").expect("write");
        f.sync_data().expect("fsync");
    }
    let ms = start.elapsed().as_secs_f64() * 1000.0 / 50.0;
    let _ = std::fs::remove_file(path);
    ms
}
