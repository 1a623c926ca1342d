//! The embedded server as a test backend for kube-rs code: what such a test
//! looks like (`start`, `client`, drop), and the kube-rs calls controllers
//! make — typed create/get/patch, server-side apply, metadata-only lists,
//! watches, errors — answered as a cluster answers them.

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Node, Service};
use kube::api::{
    Api, DeleteParams, ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams,
};
use serde_json::json;
use windlass_apiserver::{Config, start};

/// A test as a kube-rs user writes it: a fresh server in milliseconds,
/// a client for it, nothing to clean up.
#[tokio::test]
async fn a_kube_rs_test() {
    let server = start(Config::new()).await.unwrap();
    let client = server.client().await.unwrap();
    let cms: Api<ConfigMap> = Api::default_namespaced(client.clone());

    let cm: ConfigMap = serde_json::from_value(json!({
        "metadata": {"name": "settings", "labels": {"app": "demo"}},
        "data": {"level": "debug"}
    }))
    .unwrap();
    let created = cms.create(&PostParams::default(), &cm).await.unwrap();
    assert!(created.metadata.uid.is_some());

    // The create's manager owns `data.level`: applying another value is a
    // conflict, as on a cluster, unless forced (as controllers apply).
    let apply = Patch::Apply(json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "settings"}, "data": {"level": "info"}}));
    let err = cms
        .patch("settings", &PatchParams::apply("my-controller"), &apply)
        .await
        .unwrap_err();
    assert!(
        matches!(&err, kube::Error::Api(s) if s.code == 409 && s.reason == "Conflict"),
        "{err}"
    );
    let applied = cms
        .patch(
            "settings",
            &PatchParams::apply("my-controller").force(),
            &apply,
        )
        .await
        .unwrap();
    assert_eq!(applied.data.unwrap()["level"], "info");
    let managers = applied.metadata.managed_fields.unwrap();
    assert!(
        managers
            .iter()
            .any(|m| m.manager.as_deref() == Some("my-controller")
                && m.operation.as_deref() == Some("Apply"))
    );

    let listed = cms
        .list(&ListParams::default().labels("app=demo"))
        .await
        .unwrap();
    assert_eq!(listed.items.len(), 1);

    // Errors are the cluster's.
    let err = cms.get("missing").await.unwrap_err();
    assert!(
        matches!(&err, kube::Error::Api(s) if s.code == 404),
        "{err}"
    );
    let err = cms.create(&PostParams::default(), &cm).await.unwrap_err();
    assert!(
        matches!(&err, kube::Error::Api(s) if s.code == 409 && s.reason == "AlreadyExists"),
        "{err}"
    );

    // What a cluster always has.
    let svcs: Api<Service> = Api::default_namespaced(client);
    let kubernetes = svcs.get("kubernetes").await.unwrap();
    assert_eq!(kubernetes.spec.unwrap().ports.unwrap()[0].port, 443);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metadata_lists_and_watches() {
    let server = start(Config::new()).await.unwrap();
    let client = server.client().await.unwrap();
    let deploys: Api<Deployment> = Api::default_namespaced(client.clone());
    let mut stream = deploys
        .watch(&WatchParams::default(), "0")
        .await
        .unwrap()
        .boxed();
    let d: Deployment = serde_json::from_value(json!({
        "metadata": {"name": "web"},
        "spec": {"selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "web", "image": "nginx"}]}}}
    }))
    .unwrap();
    deploys.create(&PostParams::default(), &d).await.unwrap();
    let first = stream.try_next().await.unwrap().unwrap();
    assert!(matches!(first, WatchEvent::Added(d) if d.metadata.name.as_deref() == Some("web")));
    // Defaults, as a cluster fills them in.
    let got = deploys.get("web").await.unwrap();
    assert_eq!(got.spec.replicas, Some(1));

    let meta = deploys.list_metadata(&ListParams::default()).await.unwrap();
    assert_eq!(meta.items[0].metadata.name.as_deref(), Some("web"));
    assert_eq!(
        meta.items[0].types.as_ref().unwrap().kind,
        "PartialObjectMetadata"
    );

    let nodes: Api<Node> = Api::all(client);
    for (name, unschedulable) in [("a", false), ("b", true)] {
        let n: Node = serde_json::from_value(
            json!({"metadata": {"name": name}, "spec": {"unschedulable": unschedulable}}),
        )
        .unwrap();
        nodes.create(&PostParams::default(), &n).await.unwrap();
    }
    let schedulable = nodes
        .list(&ListParams::default().fields("spec.unschedulable=false"))
        .await
        .unwrap();
    assert_eq!(schedulable.items.len(), 1);
    nodes.delete("a", &DeleteParams::default()).await.unwrap();
}
