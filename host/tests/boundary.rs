//! The plugin boundary against a hostile plugin (`tests/fixtures/test-hostile`,
//! raw wit-bindgen, contract 0.2): every attack is refused with an error
//! naming the plugin before anything could reach the API server, or cut
//! short by a limit, and the runtime goes on serving other calls.
//!
//! Each test names the limit or rule it checks.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use windlass::contract::Request;
use windlass::offline::request_for;
use windlass::runtime::{EmptyCache, LoadError, Plugin, PluginError, Runtime, RuntimeConfig};

fn runtime(call_timeout: Duration) -> Runtime {
    Runtime::new(RuntimeConfig {
        call_timeout,
        artifact_dir: None,
        ..RuntimeConfig::default()
    })
    .expect("runtime")
}

fn hostile(rt: &Runtime) -> Plugin {
    rt.load_file(&windlass_tests::plugin("test-hostile"))
        .expect("test-hostile loads")
}

fn attack(name: &str) -> Request {
    request_for(
        &json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "a", "namespace": "hostile", "uid": "u1"},
            "data": {"attack": name}}),
        &[],
    )
    .expect("request")
}

fn refused(plugin: &Plugin, name: &str) -> PluginError {
    match plugin.reconcile(&attack(name), Arc::new(EmptyCache)) {
        Ok(outcome) => panic!("{name}: the outcome was accepted: {outcome:?}"),
        Err(e) => {
            assert!(
                e.to_string().contains("test-hostile"),
                "{name}: the error names the plugin: {e}"
            );
            e
        }
    }
}

/// Rule: every namespace and name a plugin supplies is validated before it
/// can reach a URL — in deletes, applies, patches, subresource creates,
/// events and cache reads.
#[test]
fn injected_namespaces_and_names_are_refused_everywhere() {
    let rt = runtime(Duration::from_secs(1));
    let plugin = hostile(&rt);
    for (name, expect) in [
        ("delete-namespace", "namespace"),
        ("delete-name", "name"),
        ("apply-namespace", "namespace"),
        ("replace-name", "name"),
        ("status-namespace", "namespace"),
        ("patch-namespace", "namespace"),
        ("subresource-name", "subresource"),
        ("event-namespace", "namespace"),
        ("cache-namespace", "namespace"),
    ] {
        let e = refused(&plugin, name);
        let text = e.to_string();
        assert!(text.contains(expect), "{name}: {text}");
        assert!(text.contains("nothing was written"), "{name}: {text}");
    }
}

/// Rule: writes stay in the namespaces the manifest gives each kind, and
/// subresources need a grant naming them.
#[test]
fn writes_outside_the_manifest_are_refused() {
    let rt = runtime(Duration::from_secs(1));
    let plugin = hostile(&rt);
    let e = refused(&plugin, "other-namespace");
    assert!(
        matches!(&e, PluginError::Undeclared { message, .. } if message.contains("in namespace default")),
        "{e}"
    );
    let e = refused(&plugin, "undeclared-subresource");
    assert!(
        matches!(&e, PluginError::Undeclared { message, .. } if message.contains("eviction")),
        "{e}"
    );
}

/// Limit: a call is bounded in wall-clock time, host calls included: a
/// plugin that sleeps an hour (a WASI poll on a timer) fails at once with a
/// message saying what to do instead, and frees its slot.
#[test]
fn a_sleeping_plugin_fails_at_once_and_frees_its_slot() {
    let rt = Runtime::new(RuntimeConfig {
        call_timeout: Duration::from_millis(500),
        max_instances: 1,
        artifact_dir: None,
        ..RuntimeConfig::default()
    })
    .unwrap();
    let plugin = hostile(&rt);
    let started = Instant::now();
    for _ in 0..3 {
        let e = refused(&plugin, "sleep");
        assert!(e.to_string().contains("cannot wait"), "{e}");
        assert!(e.to_string().contains("requeue-after"), "{e}");
    }
    // Three calls through the one slot, each well within one deadline.
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(
        plugin
            .reconcile(&attack("none"), Arc::new(EmptyCache))
            .is_ok()
    );
}

/// Limits: writes per outcome (10,000), events per outcome (1,000), bytes
/// per object (3 MiB), keys per `map` (100,000): each refused while lifting,
/// before the host allocates the output.
#[test]
fn output_floods_are_refused_before_they_are_copied() {
    let rt = runtime(Duration::from_secs(10));
    let plugin = hostile(&rt);
    for (name, limit) in [
        ("flood-writes", "more than the limit of 10000"),
        ("flood-events", "more than the limit of 1000"),
        ("big-object", "more than the limit of 3145728"),
    ] {
        let e = refused(&plugin, name);
        assert!(
            matches!(&e, PluginError::InvalidOutcome { reason, .. } if reason.contains(limit)),
            "{name}: {e}"
        );
    }
    let secret = json!({"apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "s", "namespace": "hostile"}, "data": {"attack": "flood-keys"}});
    let e = plugin
        .map(secret.to_string(), Arc::new(EmptyCache))
        .unwrap_err();
    assert!(
        e.to_string().contains("more than the limit of 100000"),
        "{e}"
    );
}

/// Limit: log volume per call (64 KiB kept); the rest is dropped, not an
/// error, and the call succeeds.
#[test]
fn a_log_flood_is_cut_off_and_the_call_goes_on() {
    let rt = runtime(Duration::from_secs(10));
    let plugin = hostile(&rt);
    let outcome = plugin
        .reconcile(&attack("flood-log"), Arc::new(EmptyCache))
        .expect("a chatty plugin still succeeds");
    assert!(outcome.writes.is_empty());
}

/// Rule: the manifest is validated at load: a watch namespace with a path
/// in it, or a finalizer Kubernetes reserves, refuses the plugin.
#[test]
fn a_hostile_manifest_is_refused_at_load() {
    let rt = runtime(Duration::from_secs(1));
    let file = windlass_tests::plugin("test-hostile");
    let bytes = std::fs::read(&file).unwrap();
    for (mode, expect) in [
        ("namespace", "namespace"),
        ("finalizer", "finalizer \"kubernetes\""),
    ] {
        let settings = json!({"manifest": mode}).to_string();
        let err = rt
            .load_with("test-hostile.wasm", &bytes, Some(&settings))
            .expect_err(mode);
        assert!(
            matches!(&err, LoadError::BadManifest { reason, .. } if reason.contains(expect)),
            "{mode}: {err}"
        );
    }
}
