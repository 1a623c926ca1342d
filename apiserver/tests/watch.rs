//! Watch and list properties over real HTTP: ordering, no gaps or duplicates
//! across disconnects and resumes, bookmarks, 410 after compaction, selector
//! transitions, paging and resourceVersion semantics.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{Http, configmap, rv_of};
use serde_json::{Value, json};
use windlass_apiserver::{Config, start};

const CMS: &str = "/api/v1/namespaces/default/configmaps";
const T: Duration = Duration::from_secs(10);

#[derive(Debug, Clone, PartialEq)]
struct Ev {
    rv: u64,
    typ: String,
    name: String,
}

fn ev(line: &Value) -> Ev {
    Ev {
        rv: rv_of(&line["object"]),
        typ: line["type"].as_str().unwrap().to_owned(),
        name: line["object"]["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
    }
}

async fn writer(http: Http, seed: u64, ops: usize) {
    let mut rng = fastrand::Rng::with_seed(seed);
    for i in 0..ops {
        let name = format!("cm-{}", rng.usize(..6));
        match rng.u8(..3) {
            0 => {
                let (c, _) = http.post(CMS, &configmap(&name, i as u64)).await;
                assert!(c == 201 || c == 409, "create: {c}");
            }
            1 => {
                let (c, _) = http
                    .merge_patch(
                        &format!("{CMS}/{name}"),
                        &json!({"data": {"v": format!("{seed}-{i}")}}),
                    )
                    .await;
                assert!(c == 200 || c == 404, "patch: {c}");
            }
            _ => {
                let (c, _) = http.delete(&format!("{CMS}/{name}")).await;
                assert!(c == 200 || c == 404, "delete: {c}");
            }
        }
    }
}

/// Reads a watch from `from` until revision `until` is reached, disconnecting
/// at random and resuming from a random revision already seen. Returns the
/// segments `(resumed_from, events)` it saw.
async fn flaky_watcher(
    http: Http,
    seed: u64,
    from: u64,
    until: Arc<std::sync::atomic::AtomicU64>,
) -> Vec<(u64, Vec<Ev>)> {
    let mut rng = fastrand::Rng::with_seed(seed);
    let mut segments: Vec<(u64, Vec<Ev>)> = Vec::new();
    let mut seen_rvs = vec![from];
    let mut start = from;
    let deadline = Instant::now() + Duration::from_secs(60);
    'outer: loop {
        assert!(Instant::now() < deadline, "watcher {seed} did not finish");
        let mut lines = http
            .watch(&format!(
                "{CMS}?watch=true&resourceVersion={start}&allowWatchBookmarks=true"
            ))
            .await
            .expect("watch opens");
        let mut events = Vec::new();
        let budget = rng.usize(1..25);
        let mut last = start;
        while let Some(line) = lines.next(Duration::from_millis(500)).await {
            let typ = line["type"].as_str().unwrap().to_owned();
            assert_ne!(typ, "ERROR", "watch from {start} failed: {line}");
            let rv = rv_of(&line["object"]);
            assert!(rv >= last, "revisions go backwards: {rv} after {last}");
            last = rv;
            seen_rvs.push(rv);
            if typ != "BOOKMARK" {
                events.push(ev(&line));
            }
            let target = until.load(std::sync::atomic::Ordering::SeqCst);
            if target > 0 && rv >= target {
                segments.push((start, events));
                break 'outer;
            }
            if events.len() >= budget {
                break;
            }
        }
        segments.push((start, events));
        start = seen_rvs[rng.usize(..seen_rvs.len())];
    }
    segments
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_writers_and_resuming_watchers_see_exact_history() {
    for seed in [1u64, 7, 42] {
        let server = start(Config::new().bookmark_interval(Duration::from_millis(50)))
            .await
            .unwrap();
        let http = Http::new(server.addr());
        let (_, list) = http.get(CMS).await;
        let from = rv_of(&list);
        let until = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let watchers: Vec<_> = (0..3)
            .map(|w| {
                tokio::spawn(flaky_watcher(
                    http.clone(),
                    seed * 100 + w,
                    from,
                    until.clone(),
                ))
            })
            .collect();
        let writers: Vec<_> = (0..4)
            .map(|w| tokio::spawn(writer(http.clone(), seed * 10 + w, 60)))
            .collect();
        for w in writers {
            w.await.unwrap();
        }
        let last = server.current_revision();
        until.store(last, std::sync::atomic::Ordering::SeqCst);
        // One marker write so every watcher sees a revision >= `last` even if
        // the last writes were failed no-ops.
        http.post(CMS, &configmap("marker", 0)).await;
        let last = server.current_revision();
        until.store(last, std::sync::atomic::Ordering::SeqCst);

        // The full history, read in one go.
        let mut lines = http
            .watch(&format!("{CMS}?watch=true&resourceVersion={from}"))
            .await
            .unwrap();
        let mut history = Vec::new();
        while let Some(line) = lines.next(T).await {
            let e = ev(&line);
            let done = e.rv >= last;
            history.push(e);
            if done {
                break;
            }
        }
        assert!(
            history.windows(2).all(|w| w[0].rv < w[1].rv),
            "history is strictly ordered"
        );
        assert_eq!(history.last().unwrap().rv, last);
        assert!(
            history.len() > 50,
            "seed {seed}: only {} events",
            history.len()
        );

        for w in watchers {
            let segments = w.await.unwrap();
            assert!(
                segments.len() > 1,
                "seed {seed}: the watcher should have resumed"
            );
            for (start, events) in segments {
                let expected: Vec<Ev> = history
                    .iter()
                    .filter(|e| e.rv > start)
                    .take(events.len())
                    .cloned()
                    .collect();
                assert_eq!(events, expected, "seed {seed}: resumed from {start}");
            }
        }
        server.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compaction_gives_410_and_relist_recovers() {
    let server = start(Config::new()).await.unwrap();
    let http = Http::new(server.addr());
    let (c, created) = http.post(CMS, &configmap("a", 1)).await;
    assert_eq!(c, 201);
    let old = rv_of(&created);
    http.merge_patch(&format!("{CMS}/a"), &json!({"data": {"x": "1"}}))
        .await;
    server.compact();
    let mut lines = http
        .watch(&format!("{CMS}?watch=true&resourceVersion={}", old - 1))
        .await
        .unwrap();
    let err = lines.next(T).await.unwrap();
    assert_eq!(err["type"], "ERROR");
    assert_eq!(err["object"]["code"], 410);
    assert_eq!(err["object"]["reason"], "Expired");
    assert!(
        lines.next(T).await.is_none(),
        "the stream ends after the error"
    );
    // A list at an exact old revision is gone too.
    let (c, s) = http
        .get(&format!(
            "{CMS}?resourceVersion={old}&resourceVersionMatch=Exact"
        ))
        .await;
    assert_eq!((c, s["reason"].as_str()), (410, Some("Expired")));
    // Relist and watch from the list revision works.
    let (_, list) = http.get(CMS).await;
    let rv = rv_of(&list);
    let mut lines = http
        .watch(&format!("{CMS}?watch=true&resourceVersion={rv}"))
        .await
        .unwrap();
    http.delete(&format!("{CMS}/a")).await;
    let e = lines.next(T).await.unwrap();
    assert_eq!(e["type"], "DELETED");
    assert!(rv_of(&e["object"]) > rv);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_without_revision_starts_with_current_objects_and_selectors_transition() {
    let server = start(Config::new()).await.unwrap();
    let http = Http::new(server.addr());
    http.post(CMS, &configmap("even", 0)).await;
    http.post(CMS, &configmap("odd", 1)).await;
    let mut all = http.watch(&format!("{CMS}?watch=true")).await.unwrap();
    let names: Vec<String> = [all.next(T).await.unwrap(), all.next(T).await.unwrap()]
        .iter()
        .map(|l| {
            assert_eq!(l["type"], "ADDED");
            l["object"]["metadata"]["name"].as_str().unwrap().to_owned()
        })
        .collect();
    assert_eq!(names, vec!["even", "odd"]);
    let mut sel = http
        .watch(&format!("{CMS}?watch=true&labelSelector=v%3D0"))
        .await
        .unwrap();
    assert_eq!(
        sel.next(T).await.unwrap()["object"]["metadata"]["name"],
        "even"
    );
    http.merge_patch(
        &format!("{CMS}/even"),
        &json!({"metadata": {"labels": {"v": "1"}}}),
    )
    .await;
    http.merge_patch(
        &format!("{CMS}/odd"),
        &json!({"metadata": {"labels": {"v": "0"}}}),
    )
    .await;
    let left = sel.next(T).await.unwrap();
    assert_eq!(
        (
            left["type"].as_str(),
            left["object"]["metadata"]["name"].as_str()
        ),
        (Some("DELETED"), Some("even"))
    );
    let entered = sel.next(T).await.unwrap();
    assert_eq!(
        (
            entered["type"].as_str(),
            entered["object"]["metadata"]["name"].as_str()
        ),
        (Some("ADDED"), Some("odd"))
    );
    // A no-op update writes nothing and emits nothing.
    let (_, before) = http.get(&format!("{CMS}/odd")).await;
    let (c, after) = http
        .merge_patch(&format!("{CMS}/odd"), &json!({"data": {"v": "1"}}))
        .await;
    assert_eq!(c, 200);
    assert_eq!(rv_of(&before), rv_of(&after));
    assert!(sel.next(Duration::from_millis(300)).await.is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streaming_list_ends_with_initial_events_bookmark() {
    let server = start(Config::new()).await.unwrap();
    let http = Http::new(server.addr());
    for i in 0..3 {
        http.post(CMS, &configmap(&format!("c{i}"), i)).await;
    }
    let (c, _) = http
        .get(&format!("{CMS}?watch=true&sendInitialEvents=true"))
        .await;
    assert_eq!(
        c, 422,
        "sendInitialEvents needs resourceVersionMatch=NotOlderThan"
    );
    let mut lines = http
        .watch(&format!("{CMS}?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true"))
        .await
        .unwrap();
    for _ in 0..3 {
        assert_eq!(lines.next(T).await.unwrap()["type"], "ADDED");
    }
    let b = lines.next(T).await.unwrap();
    assert_eq!(b["type"], "BOOKMARK");
    assert_eq!(
        b["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"],
        "true"
    );
    assert_eq!(rv_of(&b["object"]), server.current_revision());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paging_is_consistent_and_rv_semantics_hold() {
    let server = start(Config::new()).await.unwrap();
    let http = Http::new(server.addr());
    for i in 0..5 {
        http.post(CMS, &configmap(&format!("p{i}"), i)).await;
    }
    let (_, page1) = http.get(&format!("{CMS}?limit=2")).await;
    assert_eq!(page1["items"].as_array().unwrap().len(), 2);
    let list_rv = rv_of(&page1);
    let cont = page1["metadata"]["continue"].as_str().unwrap().to_owned();
    // Writes between pages do not show up in later pages.
    http.delete(&format!("{CMS}/p3")).await;
    http.post(CMS, &configmap("p9", 9)).await;
    let (_, page2) = http.get(&format!("{CMS}?limit=10&continue={cont}")).await;
    let names: Vec<&str> = page2["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["metadata"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, vec!["p2", "p3", "p4"]);
    assert_eq!(rv_of(&page2), list_rv);
    assert!(page2["metadata"].get("continue").is_none());
    server.compact();
    let (c, s) = http.get(&format!("{CMS}?limit=1&continue={cont}")).await;
    assert_eq!((c, s["reason"].as_str()), (410, Some("Expired")));
    let (c, _) = http
        .get(&format!(
            "{CMS}?resourceVersion={}",
            server.current_revision() + 100
        ))
        .await;
    assert_eq!(c, 504);
    let (c, l) = http.get(&format!("{CMS}?resourceVersion=0")).await;
    assert_eq!(c, 200);
    assert_eq!(rv_of(&l), server.current_revision());
    let (c, s) = http
        .get(&format!("{CMS}?fieldSelector=spec.nope%3Dx"))
        .await;
    assert_eq!((c, s["reason"].as_str()), (400, Some("BadRequest")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_watcher_that_stops_reading_is_closed_not_buffered() {
    let server = start(Config::new().watch_buffer(16)).await.unwrap();
    let http = Http::new(server.addr());
    let mut stalled = http
        .watch(&format!(
            "{CMS}?watch=true&resourceVersion={}",
            server.current_revision()
        ))
        .await
        .unwrap();
    let total = 3000;
    let big = "x".repeat(8 * 1024);
    let writers: Vec<_> = (0..8)
        .map(|w| {
            let (http, big) = (http.clone(), big.clone());
            tokio::spawn(async move {
                for i in (w..total).step_by(8) {
                    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": format!("big-{i}")}, "data": {"x": big}});
                    assert_eq!(http.post(CMS, &cm).await.0, 201);
                }
            })
        })
        .collect();
    for w in writers {
        w.await.unwrap();
    }
    // The stalled watcher fell behind by far more than its buffer: it gets
    // what was already in flight, then the stream ends.
    let mut got = 0;
    let deadline = Instant::now() + Duration::from_secs(30);
    while let Some(line) = stalled.next(Duration::from_secs(15)).await {
        assert_ne!(line["type"], "ERROR");
        got += 1;
        assert!(
            Instant::now() < deadline,
            "the stalled watch was never closed"
        );
    }
    assert!(
        got < total,
        "all {got} events were buffered for a watcher that did not read"
    );
    // A fresh watch still works.
    let mut fresh = http
        .watch(&format!(
            "{CMS}?watch=true&resourceVersion={}",
            server.current_revision()
        ))
        .await
        .unwrap();
    http.delete(&format!("{CMS}/big-0")).await;
    assert_eq!(fresh.next(T).await.unwrap()["type"], "DELETED");
}
