//! The wasm runtime against real built components: manifests, reconciles,
//! and every misbehaving fixture contained with the right typed error.

use std::sync::Arc;
use std::time::{Duration, Instant};

use windlass::contract::{Request, Write};
use windlass::offline::{StaticCache, request_for};
use windlass::runtime::{
    Attempt, EmptyCache, LoadError, Plugin, PluginError, Runtime, RuntimeConfig,
};

fn runtime() -> Runtime {
    Runtime::new(RuntimeConfig {
        artifact_dir: None,
        ..RuntimeConfig::default()
    })
    .expect("runtime")
}

fn load(rt: &Runtime, name: &str) -> Plugin {
    rt.load_file(&windlass_tests::plugin(name))
        .unwrap_or_else(|e| panic!("loading {name}: {e}"))
}

fn request(object: &serde_json::Value) -> Request {
    request_for(object, &[]).expect("request")
}

fn reconcile_rs(plugin: &Plugin, replicas: u32) -> windlass::contract::Outcome {
    plugin
        .reconcile(
            &request(&windlass_tests::replicaset("web", replicas)),
            Arc::new(EmptyCache),
        )
        .expect("replicaset reconcile")
}

#[test]
fn replicaset_manifest_declares_its_kinds() {
    let rt = runtime();
    let plugin = load(&rt, "replicaset");
    let m = plugin.manifest();
    assert_eq!(m.name, "replicaset");
    assert_eq!(
        (
            m.reconciles.kind.api_version.as_str(),
            m.reconciles.kind.kind.as_str()
        ),
        ("apps/v1", "ReplicaSet")
    );
    assert!(m.owns_kind("v1", "Pod"));
    assert!(m.max_concurrency >= 1);
    assert_eq!(plugin.digest().len(), 64);
}

#[test]
fn three_replicas_yield_three_pod_applies() {
    let rt = runtime();
    let outcome = reconcile_rs(&load(&rt, "replicaset"), 3);
    // Nothing is to go, so nothing is pruned (a prune comes with the list
    // of pods kept only when some must go).
    assert!(!outcome.prune_owned, "nothing to prune: {outcome:#?}");
    let pods: Vec<_> = outcome
        .writes
        .iter()
        .filter_map(|w| match w {
            Write::Apply(o) if o.header().kind == "Pod" => Some(o),
            _ => None,
        })
        .collect();
    assert_eq!(pods.len(), 3, "{outcome:#?}");
    for pod in pods {
        assert_eq!(pod.header().generate_name.as_deref(), Some("web-"));
        let value: serde_json::Value = serde_json::from_str(pod.text()).unwrap();
        assert_eq!(value["metadata"]["labels"]["app"], "web");
        assert_eq!(value["spec"]["containers"][0]["image"], "nginx:1.27");
    }
}

#[test]
fn existing_children_are_kept_and_extras_pruned() {
    let rt = runtime();
    let plugin = load(&rt, "replicaset");
    let rs = windlass_tests::replicaset("web", 2);
    let owned: Vec<_> = (0..4)
        .map(|i| windlass_tests::owned_pod("web", &format!("web-{i}"), i % 2 == 0))
        .collect();
    // The plugin reads its pods through its index (an indexed `owns`
    // watch), filed as the host files them.
    let mut cache = StaticCache::new();
    for pod in &owned {
        cache.insert(pod.clone());
    }
    cache.index_for(&plugin).unwrap();
    let outcome = plugin
        .reconcile(&request_for(&rs, &[]).unwrap(), Arc::new(cache))
        .unwrap();
    let kept: Vec<String> = outcome
        .writes
        .iter()
        .filter_map(|w| match w {
            Write::Apply(o) if o.header().kind == "Pod" => o.header().name.clone(),
            _ => None,
        })
        .collect();
    assert_eq!(kept.len(), 2, "{outcome:#?}");
    // The ready pods (even indexes) are the ones worth keeping.
    assert!(
        kept.iter().all(|n| n == "web-0" || n == "web-2"),
        "{kept:?}"
    );
}

fn expect_contained(
    rt: &Runtime,
    fixture: &str,
    check: impl Fn(&PluginError) -> bool,
) -> PluginError {
    let plugin = load(rt, fixture);
    let started = Instant::now();
    let err = plugin
        .reconcile(
            &request(&windlass_tests::configmap("cm", "write")),
            Arc::new(EmptyCache),
        )
        .expect_err("the fixture misbehaves");
    assert!(check(&err), "{fixture}: unexpected error {err:?}");
    assert!(
        err.to_string().contains(fixture),
        "the error names the plugin: {err}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{fixture} was not stopped promptly: {:?}",
        started.elapsed()
    );
    err
}

#[test]
fn a_panicking_plugin_fails_with_a_trap_carrying_its_message() {
    let rt = runtime();
    let err = expect_contained(&rt, "test-trap", |e| matches!(e, PluginError::Trap { .. }));
    assert!(err.to_string().contains("deliberate panic"), "{err}");
    assert!(err.retry());
}

#[test]
fn an_endless_loop_is_stopped_at_the_deadline() {
    let rt = Runtime::new(RuntimeConfig {
        call_timeout: Duration::from_millis(200),
        artifact_dir: None,
        ..RuntimeConfig::default()
    })
    .unwrap();
    let started = Instant::now();
    expect_contained(&rt, "test-spin", |e| {
        matches!(e, PluginError::Timeout { .. })
    });
    assert!(
        started.elapsed() >= Duration::from_millis(200),
        "stopped before its deadline"
    );
}

#[test]
fn a_memory_hog_is_stopped_at_its_limit() {
    let rt = Runtime::new(RuntimeConfig {
        memory_limit: 32 << 20,
        artifact_dir: None,
        ..RuntimeConfig::default()
    })
    .unwrap();
    let err = expect_contained(&rt, "test-hog", |e| {
        matches!(e, PluginError::OutOfMemory { limit_mib: 32, .. })
    });
    assert!(err.to_string().contains("memory limit of 32 MiB"), "{err}");
}

#[test]
fn undeclared_writes_and_reads_are_refused() {
    let rt = runtime();
    let err = expect_contained(&rt, "test-rogue", |e| {
        matches!(e, PluginError::Undeclared { .. })
    });
    let text = err.to_string();
    assert!(
        text.contains("v1 Secret") && text.contains("nothing was written"),
        "{text}"
    );

    let plugin = load(&rt, "test-rogue");
    let err = plugin
        .reconcile(
            &request(&windlass_tests::configmap("cm", "read")),
            Arc::new(EmptyCache),
        )
        .expect_err("undeclared read");
    assert!(matches!(err, PluginError::Undeclared { .. }), "{err:?}");
    assert!(err.to_string().contains("read v1 Secret"), "{err}");
}

#[test]
fn other_plugins_keep_working_after_and_during_misbehaviour() {
    let rt = Runtime::new(RuntimeConfig {
        call_timeout: Duration::from_secs(3),
        artifact_dir: None,
        ..RuntimeConfig::default()
    })
    .unwrap();
    let replicaset = load(&rt, "replicaset");
    let spin = load(&rt, "test-spin");
    // A spinning call on another thread does not hold up a healthy plugin.
    let spinning = std::thread::spawn(move || {
        spin.reconcile(
            &request(&windlass_tests::configmap("cm", "x")),
            Arc::new(EmptyCache),
        )
    });
    let started = Instant::now();
    assert_eq!(
        reconcile_rs(&replicaset, 2)
            .writes
            .iter()
            .filter(|w| matches!(w, Write::Apply(_)))
            .count(),
        2
    );
    // Blocked behind the spinner would mean waiting out its 3 s deadline.
    assert!(
        started.elapsed() < Duration::from_millis(1500),
        "blocked behind the spinning plugin: {:?}",
        started.elapsed()
    );
    assert!(matches!(
        spinning.join().unwrap(),
        Err(PluginError::Timeout { .. })
    ));

    for fixture in ["test-trap", "test-hog", "test-rogue"] {
        let _ = load(&rt, fixture).reconcile(
            &request(&windlass_tests::configmap("cm", "write")),
            Arc::new(EmptyCache),
        );
    }
    assert_eq!(
        reconcile_rs(&replicaset, 3)
            .writes
            .iter()
            .filter(|w| matches!(w, Write::Apply(_)))
            .count(),
        3
    );
}

#[test]
fn plugins_read_declared_kinds_through_the_cache() {
    // The replicaset plugin owns pods; a cache read of pods is allowed, and
    // the noop fixture proves a plain call round-trips.
    let rt = runtime();
    let mut cache = StaticCache::new();
    cache.insert(windlass_tests::owned_pod("web", "web-a", true));
    let outcome = load(&rt, "test-noop")
        .reconcile(
            &request(&windlass_tests::configmap("cm", "x")),
            Arc::new(cache),
        )
        .unwrap();
    assert!(outcome.writes.is_empty() && outcome.events.is_empty());
}

#[test]
fn bad_components_are_rejected_with_a_reason() {
    let rt = runtime();
    let err = rt
        .load_file(&windlass_tests::plugin("test-badmanifest"))
        .unwrap_err();
    assert!(matches!(err, LoadError::Manifest { .. }), "{err:?}");
    assert!(err.to_string().contains("manifest() failed"), "{err}");

    let err = rt
        .load_file(&windlass_tests::plugin("test-wrongversion"))
        .unwrap_err();
    assert!(matches!(err, LoadError::WrongVersion { .. }), "{err:?}");
    assert!(
        err.to_string().contains("windlass:controller@0.9.0"),
        "{err}"
    );

    let err = rt
        .load_file(&windlass_tests::plugin("test-missing-export"))
        .unwrap_err();
    assert!(matches!(err, LoadError::WrongWorld { .. }), "{err:?}");
    assert!(err.to_string().contains("`map`"), "{err}");

    let err = rt.load("core.wasm", b"\0asm\x01\0\0\0").unwrap_err();
    assert!(matches!(err, LoadError::CoreModule { .. }), "{err:?}");
    let err = rt.load("notes.txt", b"hello").unwrap_err();
    assert!(matches!(err, LoadError::NotWasm { .. }), "{err:?}");
    let err = rt
        .load("truncated.wasm", b"\0asm\x0d\0\x01\0\x01")
        .unwrap_err();
    assert!(matches!(err, LoadError::Invalid { .. }), "{err:?}");
}

#[test]
fn precompiled_artifacts_are_reused_and_corruption_is_survived() {
    let dir = tempfile::tempdir().unwrap();
    let rt = Runtime::new(RuntimeConfig {
        artifact_dir: Some(dir.path().to_path_buf()),
        ..RuntimeConfig::default()
    })
    .unwrap();
    let first = load(&rt, "replicaset");
    let artifacts: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "cwasm"))
        .collect();
    assert_eq!(artifacts.len(), 1, "one artifact per component");
    assert!(
        artifacts[0]
            .file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with(first.digest())
    );

    // A second runtime (a restart) loads from the cache and still works.
    let again = Runtime::new(RuntimeConfig {
        artifact_dir: Some(dir.path().to_path_buf()),
        ..RuntimeConfig::default()
    })
    .unwrap();
    assert!(
        !reconcile_rs(&load(&again, "replicaset"), 1)
            .writes
            .is_empty()
    );

    // A corrupted artifact is detected and replaced, never executed.
    let mut bytes = std::fs::read(&artifacts[0]).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0xff;
    std::fs::write(&artifacts[0], bytes).unwrap();
    let third = Runtime::new(RuntimeConfig {
        artifact_dir: Some(dir.path().to_path_buf()),
        ..RuntimeConfig::default()
    })
    .unwrap();
    assert_eq!(
        reconcile_rs(&load(&third, "replicaset"), 2)
            .writes
            .iter()
            .filter(|w| matches!(w, Write::Apply(_)))
            .count(),
        2
    );
}

/// An inline attempt, made on a Tokio worker thread as the host makes it:
/// a computing plugin finishes; one that writes to stderr (a panic message)
/// or runs past the budget hands the call back, without
/// panicking the worker, and the full call then reports what went wrong.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inline_attempts_finish_or_hand_the_call_back() {
    let rt = runtime();
    let budget = Duration::from_millis(5);
    let rs = request(&windlass_tests::replicaset("web", 3));
    match load(&rt, "replicaset").try_reconcile(false, &rs, Arc::new(EmptyCache), budget) {
        Attempt::Done(Ok(outcome)) => assert_eq!(outcome.writes.len(), 4, "{outcome:?}"),
        other => panic!("replicaset did not finish inline: {other:?}"),
    }
    for fixture in ["test-trap", "test-spin"] {
        let plugin = load(&rt, fixture);
        let cm = request(&windlass_tests::configmap("cm", "write"));
        let started = Instant::now();
        let attempt = plugin.try_reconcile(false, &cm, Arc::new(EmptyCache), budget);
        assert!(
            matches!(attempt, Attempt::Unfinished),
            "{fixture} finished inline: {attempt:?}"
        );
        assert!(
            started.elapsed() < Duration::from_secs(1),
            "{fixture}: {:?}",
            started.elapsed()
        );
    }
    let trap = tokio::task::spawn_blocking(move || {
        load(&rt, "test-trap").reconcile(
            &request(&windlass_tests::configmap("cm", "write")),
            Arc::new(EmptyCache),
        )
    })
    .await
    .unwrap()
    .expect_err("test-trap traps");
    assert!(trap.to_string().contains("deliberate panic"), "{trap}");
}

/// `index` and `map` may share an instance between calls (they are pure),
/// on terms a plugin that keeps state anyway cannot stretch: `test-hostile`
/// counts its `index` calls in a static and files objects under the count.
/// An instance is kept only after a call that ended cleanly, made no WASI
/// call, grew no more than a few MiB, made no refused read and returned
/// nothing the boundary refuses; it is
/// retired after a thousand calls; and `reconcile` never gets one.
#[test]
fn pure_calls_share_an_instance_only_while_it_stays_clean() {
    let rt = runtime();
    let plugin = load(&rt, "test-hostile");
    let budget = Duration::from_millis(500);
    let object = |attack: &str| {
        serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "namespace": "hostile"}, "data": {"attack": attack}})
        .to_string()
    };
    let index = |attack: &str| -> Result<Option<String>, PluginError> {
        let entry = plugin
            .try_index(&object(attack), Arc::new(EmptyCache), budget)
            .expect("the call finishes inline")?;
        Ok(entry.map(|e| e.keys.concat()))
    };
    let count = || index("stateful").expect("a clean call").expect("an entry");

    assert_eq!(count(), "calls-1");
    assert_eq!(count(), "calls-2", "the instance was kept");
    assert_eq!(count(), "calls-3");

    // A reconcile gets a fresh instance: it saw no index call.
    let seen = plugin
        .reconcile(
            &request(&serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "c", "namespace": "hostile"}, "data": {"attack": "stateful"}})),
            Arc::new(EmptyCache),
        )
        .expect("reconcile");
    assert_eq!(seen.events[0].message, "calls-0", "{seen:?}");

    // A trap, a refused read, a WASI call or a grown memory ends the
    // instance: the next call starts from nothing.
    let err = index("index-trap").expect_err("the trap fails the call");
    assert!(err.to_string().contains("unreachable"), "{err}");
    assert_eq!(count(), "calls-1", "not kept after a trap");
    assert_eq!(count(), "calls-2");
    let err = index("index-refused").expect_err("the refused read fails the call");
    assert!(err.to_string().contains("Pod"), "{err}");
    assert_eq!(count(), "calls-1", "not kept after a refused read");
    assert_eq!(index("index-clock").unwrap().as_deref(), Some("calls-2"));
    assert_eq!(count(), "calls-1", "not kept after a WASI call");
    assert_eq!(index("index-grow").unwrap().as_deref(), Some("calls-2"));
    assert_eq!(count(), "calls-1", "not kept past its memory bound");
    let err = index("index-empty-key").expect_err("the boundary refuses the entry");
    assert!(err.to_string().contains("empty"), "{err}");
    assert_eq!(count(), "calls-1", "not kept after a refused entry");

    // Retired after a thousand calls.
    for n in 2..=1000 {
        assert_eq!(count(), format!("calls-{n}"));
    }
    assert_eq!(count(), "calls-1", "retired after 1,000 calls");

    // Another load of the same component keeps its own.
    let other = load(&rt, "test-hostile");
    let entry = other
        .try_index(&object("stateful"), Arc::new(EmptyCache), budget)
        .expect("inline")
        .expect("clean")
        .expect("an entry");
    assert_eq!(entry.keys, ["calls-1"]);
    assert_eq!(count(), "calls-2");
}
