//! The kube-rs peer against the embedded API server: a ReplicaSet gets its
//! pods (each with a controller reference) and its status, and scaling down
//! deletes the extras.

use std::time::{Duration, Instant};

use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use serde_json::json;

async fn eventually<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<(), String>>,
{
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        match check().await {
            Ok(()) => return,
            Err(last) if Instant::now() > deadline => panic!("{what}: not reached; last: {last}"),
            Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    }
}

/// Live pods controlled by the ReplicaSet with `uid`.
async fn live_pods(pods: &Api<Pod>, uid: &str) -> Vec<Pod> {
    pods.list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .filter(|p| windlass_peer::plan::controller_uid(p) == Some(uid))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replicaset_converges_and_scales_down() {
    let server = windlass_apiserver::start(windlass_apiserver::Config::new().in_memory())
        .await
        .expect("API server");
    let client = windlass_peer::client_from_kubeconfig_yaml(&server.kubeconfig())
        .await
        .unwrap();
    let peer = windlass_peer::replicaset::start(
        client.clone(),
        windlass_peer::replicaset::Config {
            namespace: Some("default".into()),
            label_selector: None,
            concurrency: 2,
        },
    )
    .await;

    let rs_api: Api<ReplicaSet> = Api::namespaced(client.clone(), "default");
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let rs: ReplicaSet = serde_json::from_value(json!({
        "apiVersion": "apps/v1", "kind": "ReplicaSet",
        "metadata": {"name": "web"},
        "spec": {
            "replicas": 3,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]}
            }
        }
    }))
    .unwrap();
    let rs = rs_api.create(&PostParams::default(), &rs).await.unwrap();
    let uid = rs.metadata.uid.clone().unwrap();

    eventually("3 pods and status.replicas 3", || async {
        let n = live_pods(&pods, &uid).await.len();
        let status = rs_api.get("web").await.unwrap().status.unwrap_or_default();
        if n == 3 && status.replicas == 3 && status.observed_generation == Some(1) {
            Ok(())
        } else {
            Err(format!("{n} pods, status {status:?}"))
        }
    })
    .await;
    let pod = &live_pods(&pods, &uid).await[0];
    assert!(pod.metadata.name.as_deref().unwrap().starts_with("web-"));
    let owner = &pod.metadata.owner_references.as_ref().unwrap()[0];
    assert_eq!(
        (owner.kind.as_str(), owner.block_owner_deletion),
        ("ReplicaSet", Some(true))
    );

    rs_api
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 1}})),
        )
        .await
        .unwrap();
    eventually("1 pod and status.replicas 1", || async {
        let n = live_pods(&pods, &uid).await.len();
        let status = rs_api.get("web").await.unwrap().status.unwrap_or_default();
        if n == 1 && status.replicas == 1 && status.observed_generation == Some(2) {
            Ok(())
        } else {
            Err(format!("{n} pods, status {status:?}"))
        }
    })
    .await;
    // Settled: no pod churn afterwards.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(live_pods(&pods, &uid).await.len(), 1);
    assert!(peer.reconciles() >= 2);
    peer.shutdown().await;
    server.shutdown().await;
}
