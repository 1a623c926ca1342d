//! Native tests of the ResourceQuota controller, through `windlass_sdk::testing`.

use serde_json::{Value, json};
use windlass_sdk::testing::Harness;
use windlass_sdk::{Object, ObjectRef};

use super::ResourceQuotaController;

type H = Harness<ResourceQuotaController>;

fn quota(name: &str, spec: Value, status: Value) -> Object {
    let mut v = json!({
        "apiVersion": "v1", "kind": "ResourceQuota",
        "metadata": {"name": name, "namespace": "team-a", "uid": format!("uid-{name}"), "resourceVersion": "7"},
        "spec": spec,
    });
    if !status.is_null() {
        v["status"] = status;
    }
    Object::from_value(v).unwrap()
}

fn pod(name: &str, cpu: &str, phase: &str) -> Object {
    Object::from_value(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "team-a"},
        "spec": {"containers": [{"name": "app", "resources": {
            "requests": {"cpu": cpu, "memory": "64Mi"}, "limits": {"cpu": cpu, "memory": "64Mi"}}}]},
        "status": {"phase": phase},
    }))
    .unwrap()
}

fn object(api_version: &str, kind: &str, ns: &str, name: &str) -> Object {
    Object::new(api_version, kind)
        .with_name(name)
        .with_namespace(ns)
}

fn key(name: &str) -> ObjectRef {
    ObjectRef::new("v1", "ResourceQuota", "team-a", name)
}

/// The status the reconcile of `name` writes (`None` if it writes nothing).
fn written(h: &H, name: &str) -> Option<Value> {
    let out = h.reconcile_key(&key(name)).unwrap();
    assert!(out.writes.len() <= 1, "{out:?}");
    out.status_updates().next().map(|o| {
        assert_eq!(
            o.resource_version(),
            Some("7"),
            "writes carry the version read"
        );
        o.value()["status"].clone()
    })
}

fn compute() -> Value {
    json!({"hard": {"pods": "4", "requests.cpu": "2", "limits.memory": "1Gi", "count/pods": "10"}})
}

#[test]
fn manifest_reads_what_quotas_count() {
    let h = H::new();
    let m = h.manifest();
    assert!(m.reconciles.kind.is("v1", "ResourceQuota"));
    for kind in [
        "Pod",
        "Service",
        "PersistentVolumeClaim",
        "ConfigMap",
        "Secret",
    ] {
        assert!(m.may_read("v1", kind), "{kind}");
    }
    assert!(m.may_read("apps/v1", "Deployment"));
    assert!(m.may_read("batch/v1", "Job"));
    assert!(!m.may_write("v1", "Pod"));
    assert_eq!(m.resync_seconds, Some(300));
}

#[test]
fn a_new_quota_gets_hard_and_used() {
    let h = H::new()
        .with_object(quota("compute", compute(), Value::Null))
        .with_object(pod("a", "500m", "Running"))
        .with_object(pod("b", "250m", "Pending"))
        .with_object(object("v1", "Pod", "other", "elsewhere"));
    assert_eq!(
        written(&h, "compute"),
        Some(json!({
            "hard": {"pods": "4", "requests.cpu": "2", "limits.memory": "1Gi", "count/pods": "10"},
            "used": {"pods": "2", "requests.cpu": "750m", "limits.memory": "128Mi", "count/pods": "2"},
        }))
    );
}

#[test]
fn deletes_and_ended_pods_give_usage_back() {
    let status = json!({
        "hard": {"pods": "4", "requests.cpu": "2", "limits.memory": "1Gi", "count/pods": "10"},
        "used": {"pods": "3", "requests.cpu": "1250m", "limits.memory": "192Mi", "count/pods": "3"},
    });
    let mut h = H::new()
        .with_object(quota("compute", compute(), status))
        .with_object(pod("a", "500m", "Running"))
        .with_object(pod("b", "250m", "Running"))
        .with_object(pod("c", "500m", "Running"));
    // In step: nothing to write.
    assert_eq!(written(&h, "compute"), None);
    h.remove(&ObjectRef::new("v1", "Pod", "team-a", "c"));
    assert_eq!(
        written(&h, "compute").unwrap()["used"],
        json!({"pods": "2", "requests.cpu": "750m", "limits.memory": "128Mi", "count/pods": "2"})
    );
    // A finished pod stops using compute quota but is still a stored pod.
    h.insert(pod("b", "250m", "Succeeded"));
    assert_eq!(
        written(&h, "compute").unwrap()["used"],
        json!({"pods": "1", "requests.cpu": "500m", "limits.memory": "64Mi", "count/pods": "2"})
    );
}

#[test]
fn an_edited_quota_gets_its_new_hard() {
    let spec = json!({"hard": {"configmaps": "20", "secrets": "5"}});
    let status = json!({"hard": {"configmaps": "10"}, "used": {"configmaps": "2"}});
    let h = H::new()
        .with_object(quota("counts", spec, status))
        .with_object(object("v1", "ConfigMap", "team-a", "a"))
        .with_object(object("v1", "ConfigMap", "team-a", "b"))
        .with_object(object("v1", "Secret", "team-a", "s"));
    assert_eq!(
        written(&h, "counts"),
        Some(
            json!({"hard": {"configmaps": "20", "secrets": "5"}, "used": {"configmaps": "2", "secrets": "1"}})
        )
    );
}

#[test]
fn scopes_choose_the_pods_counted() {
    let spec = json!({"hard": {"pods": "5"}, "scopes": ["BestEffort"]});
    let bare = Object::from_value(json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "bare", "namespace": "team-a"}, "spec": {"containers": [{"name": "a"}]}}))
    .unwrap();
    let h = H::new()
        .with_object(quota("be", spec, Value::Null))
        .with_object(bare)
        .with_object(pod("sized", "1", "Running"));
    assert_eq!(written(&h, "be").unwrap()["used"], json!({"pods": "1"}));
}

#[test]
fn services_claims_and_workloads() {
    let spec = json!({"hard": {
        "services": "5", "services.loadbalancers": "1", "persistentvolumeclaims": "2",
        "requests.storage": "10Gi", "count/deployments.apps": "3", "count/jobs.batch": "3"}});
    let lb = Object::from_value(json!({"apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "lb", "namespace": "team-a"},
        "spec": {"type": "LoadBalancer", "ports": [{"port": 80}]}}))
    .unwrap();
    let claim = Object::from_value(json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
        "metadata": {"name": "data", "namespace": "team-a"},
        "spec": {"resources": {"requests": {"storage": "1536Mi"}}}}))
    .unwrap();
    let h = H::new()
        .with_object(quota("mixed", spec, Value::Null))
        .with_object(lb)
        .with_object(claim)
        .with_object(object("apps/v1", "Deployment", "team-a", "web"));
    assert_eq!(
        written(&h, "mixed").unwrap()["used"],
        json!({"services": "1", "services.loadbalancers": "1", "persistentvolumeclaims": "1",
               "requests.storage": "1536Mi", "count/deployments.apps": "1", "count/jobs.batch": "0"})
    );
}

#[test]
fn kinds_it_cannot_watch_keep_what_the_server_computed() {
    let spec = json!({"hard": {"count/widgets.example.com": "3", "configmaps": "3"}});
    let status = json!({"hard": spec["hard"], "used": {"count/widgets.example.com": "2", "configmaps": "9"}});
    let h = H::new()
        .with_object(quota("widgets", spec, status))
        .with_object(object("v1", "ConfigMap", "team-a", "only"));
    assert_eq!(
        written(&h, "widgets").unwrap()["used"],
        json!({"count/widgets.example.com": "2", "configmaps": "1"})
    );
}

#[test]
fn values_are_compared_not_spellings() {
    // The server wrote 1Gi; the recount sums to 1073741824 bytes: no rewrite.
    let spec = json!({"hard": {"limits.memory": "2Gi"}});
    let status = json!({"hard": {"limits.memory": "2048Mi"}, "used": {"limits.memory": "1024Mi"}});
    let mut h = H::new().with_object(quota("mem", spec, status));
    for i in 0..16 {
        h.insert(pod(&format!("p{i}"), "1", "Running"));
    }
    assert_eq!(written(&h, "mem"), None);
}

#[test]
fn gone_or_deleting_quotas_are_left_alone() {
    let h = H::new();
    assert!(h.reconcile_key(&key("gone")).unwrap().is_empty());
    let mut deleting = quota("old", compute(), Value::Null);
    deleting.set("metadata.deletionTimestamp", "2024-01-01T00:00:00Z");
    let h = H::new().with_object(deleting);
    assert!(h.reconcile_key(&key("old")).unwrap().is_empty());
}

#[test]
fn a_change_requeues_every_quota_of_its_namespace() {
    let h = H::new()
        .with_object(quota("a", compute(), Value::Null))
        .with_object(quota("b", compute(), Value::Null))
        .with_object(
            Object::from_value(json!({"apiVersion": "v1", "kind": "ResourceQuota",
            "metadata": {"name": "c", "namespace": "team-b"}, "spec": {}}))
            .unwrap(),
        );
    let keys = h.map(&pod("x", "1", "Running")).unwrap();
    assert_eq!(keys, [key("a"), key("b")]);
    // Cluster-scoped objects are in no quota's namespace.
    assert!(
        h.map(&Object::new("v1", "Node").with_name("n"))
            .unwrap()
            .is_empty()
    );
}

#[test]
fn converges_in_one_write() {
    let mut h = H::new()
        .with_object(quota("compute", compute(), Value::Null))
        .with_object(pod("a", "500m", "Running"));
    assert_eq!(h.converge(&key("compute"), 3).unwrap(), 1);
    let q = h.get(&key("compute")).unwrap();
    assert_eq!(q.value()["status"]["used"]["requests.cpu"], "500m");
}
