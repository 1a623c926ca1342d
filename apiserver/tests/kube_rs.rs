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

/// An operator built on kube-rs records events through `events.k8s.io/v1`
/// (`kube::runtime::events::Recorder`); `kubectl describe` looks for an
/// object's events through core v1, by the object's uid. As in a cluster,
/// the two APIs are one store: each sees what the other wrote.
#[tokio::test]
async fn events_recorded_through_either_api_are_one_set() {
    use k8s_openapi::api::core::v1::Event as CoreEvent;
    use k8s_openapi::api::events::v1::Event;
    use kube::Resource;
    use kube::runtime::events::{Event as Record, EventType, Recorder, Reporter};

    let server = start(Config::new()).await.unwrap();
    let client = server.client().await.unwrap();
    let cms: Api<ConfigMap> = Api::default_namespaced(client.clone());
    let cm: ConfigMap = serde_json::from_value(json!({"metadata": {"name": "settings"}})).unwrap();
    let cm = cms.create(&PostParams::default(), &cm).await.unwrap();
    let uid = cm.metadata.uid.clone().unwrap();

    let reporter = Reporter {
        controller: "example.com/operator".into(),
        instance: Some("operator-0".into()),
    };
    let recorder = Recorder::new(client.clone(), reporter);
    let record = Record {
        type_: EventType::Normal,
        reason: "Synced".into(),
        note: Some("settings are in place".into()),
        action: "Reconcile".into(),
        secondary: None,
    };
    // The second time is a series: a merge patch of the first.
    for _ in 0..2 {
        recorder
            .publish(&record, &cm.object_ref(&()))
            .await
            .unwrap();
    }

    // What `kubectl describe configmap settings` asks for.
    let core: Api<CoreEvent> = Api::default_namespaced(client.clone());
    let selector = format!(
        "involvedObject.kind=ConfigMap,involvedObject.name=settings,involvedObject.uid={uid}"
    );
    let found = core
        .list(&ListParams::default().fields(&selector))
        .await
        .unwrap();
    let [event] = found.items.as_slice() else {
        panic!("{found:?}");
    };
    assert_eq!(event.reason.as_deref(), Some("Synced"));
    assert_eq!(event.message.as_deref(), Some("settings are in place"));
    assert_eq!(
        event.reporting_component.as_deref(),
        Some("example.com/operator")
    );
    assert_eq!(event.series.as_ref().and_then(|s| s.count), Some(2));

    // A core event (as client-go's recorder writes one) through events.k8s.io.
    let legacy: CoreEvent = serde_json::from_value(json!({"metadata": {"name": "settings.1"},
        "involvedObject": {"kind": "ConfigMap", "name": "settings", "namespace": "default", "uid": uid},
        "reason": "Updated", "message": "by hand", "type": "Warning", "count": 3,
        "source": {"component": "kubelet", "host": "node-1"}}))
    .unwrap();
    core.create(&PostParams::default(), &legacy).await.unwrap();
    let events: Api<Event> = Api::default_namespaced(client.clone());
    let by_name = events
        .list(&ListParams::default().fields("regarding.name=settings,reason=Updated"))
        .await
        .unwrap();
    let [event] = by_name.items.as_slice() else {
        panic!("{by_name:?}");
    };
    assert_eq!(event.note.as_deref(), Some("by hand"));
    assert_eq!(event.deprecated_count, Some(3));
    assert_eq!(
        event.regarding.as_ref().and_then(|r| r.uid.clone()),
        Some(uid.clone())
    );
    assert_eq!(
        event
            .deprecated_source
            .as_ref()
            .and_then(|s| s.host.clone()),
        Some("node-1".into())
    );
    assert_eq!(
        events
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .len(),
        2
    );

    // The events.k8s.io field selectors are kube's: `regarding.*`, not `involvedObject.*`.
    let err = events
        .list(&ListParams::default().fields("involvedObject.name=settings"))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, kube::Error::Api(s) if s.code == 400
            && s.message.contains("\"involvedObject.name\" is not a known field selector")),
        "{err:?}"
    );

    // Written through events.k8s.io, an event is held to its strict rules.
    let bare: Event = serde_json::from_value(json!({"metadata": {"name": "bare"},
        "regarding": {"kind": "ConfigMap", "name": "settings", "namespace": "default"},
        "reason": "Synced", "type": "Normal", "deprecatedCount": 1}))
    .unwrap();
    let err = events
        .create(&PostParams::default(), &bare)
        .await
        .unwrap_err();
    let kube::Error::Api(status) = &err else {
        panic!("{err:?}");
    };
    assert_eq!(status.code, 422, "{status:?}");
    for cause in ["eventTime: Required value", "count: Invalid value"] {
        assert!(status.message.contains(cause), "{}", status.message);
    }
}
