//! `windlass plugin rbac` against what the example plugins really do: the
//! chain (deployment, replicaset, scheduler, kubelet, and resourcequota
//! keeping a quota's usage) runs on one embedded
//! API server, each plugin in its own `windlass run` behind its own
//! recording proxy, so every request is attributed to its plugin. Each
//! request must be allowed by the rules generated for that plugin alone (as
//! a cluster's RBAC authorizer would match them), and the rules must be
//! exactly the ones its manifest declares — nothing more.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;
use windlass_tests::authz::{self, Attributes, Role};
use windlass_tests::{Cluster, Recorder, Server, condition_status, example, kubectl, kubectl_ok};

const PLUGINS: [&str; 15] = windlass_tests::EXAMPLE_PLUGINS;
const WAIT: Duration = Duration::from_secs(120);

/// What each example plugin's manifest declares, as rules: `scope group
/// resource verbs`, `*` being the ClusterRole. Written out by hand from the
/// manifests in `plugins/*/src/lib.rs`, so that a change in what
/// `plugin rbac` grants shows up here for review.
fn expected(plugin: &str) -> Vec<&'static str> {
    match plugin {
        // reconciles apps/v1 Deployment, owns apps/v1 ReplicaSet
        "deployment" => vec![
            r#"* "" events create,patch"#,
            r#"* "apps" deployments create,update,patch,delete"#,
            r#"* "apps" deployments get,list,watch"#,
            r#"* "apps" deployments/finalizers update"#,
            r#"* "apps" deployments/status update,patch"#,
            r#"* "apps" replicasets create,update,patch,delete"#,
            r#"* "apps" replicasets get,list,watch"#,
            r#"* "apps" replicasets/status update,patch"#,
        ],
        // reconciles apps/v1 ReplicaSet, owns v1 Pod
        "replicaset" => vec![
            r#"* "" events create,patch"#,
            r#"* "" pods create,update,patch,delete"#,
            r#"* "" pods get,list,watch"#,
            r#"* "" pods/status update,patch"#,
            r#"* "apps" replicasets create,update,patch,delete"#,
            r#"* "apps" replicasets get,list,watch"#,
            r#"* "apps" replicasets/finalizers update"#,
            r#"* "apps" replicasets/status update,patch"#,
        ],
        // reconciles unbound v1 Pods, reads v1 Node and v1 Pod, writes pods/binding;
        // reads claims, volumes and classes, annotates claims (VolumeBinding);
        // reads PodDisruptionBudgets (preemption)
        "scheduler" => vec![
            r#"* "" events create,patch"#,
            r#"* "" nodes get,list,watch"#,
            r#"* "" persistentvolumeclaims create,update,patch,delete"#,
            r#"* "" persistentvolumeclaims get,list,watch"#,
            r#"* "" persistentvolumeclaims/status update,patch"#,
            r#"* "" persistentvolumes get,list,watch"#,
            r#"* "" pods create,update,patch,delete"#,
            r#"* "" pods get,list,watch"#,
            r#"* "" pods/binding create"#,
            r#"* "" pods/status update,patch"#,
            r#"* "policy" poddisruptionbudgets get,list,watch"#,
            r#"* "storage.k8s.io" storageclasses get,list,watch"#,
        ],
        // reconciles simulated v1 Nodes, reads bound v1 Pods and the Leases
        // of kube-node-lease, writes v1 Pod and those Leases
        "kubelet" => vec![
            r#"* "" events create,patch"#,
            r#"* "" nodes create,update,patch,delete"#,
            r#"* "" nodes get,list,watch"#,
            r#"* "" nodes/status update,patch"#,
            r#"* "" pods create,update,patch,delete"#,
            r#"* "" pods get,list,watch"#,
            r#"* "" pods/status update,patch"#,
            r#"kube-node-lease "coordination.k8s.io" leases create,update,patch,delete"#,
            r#"kube-node-lease "coordination.k8s.io" leases get,list,watch"#,
        ],
        // reconciles v1 ResourceQuota, reads what quotas count
        "resourcequota" => vec![
            r#"* "" configmaps get,list,watch"#,
            r#"* "" events create,patch"#,
            r#"* "" persistentvolumeclaims get,list,watch"#,
            r#"* "" pods get,list,watch"#,
            r#"* "" replicationcontrollers get,list,watch"#,
            r#"* "" resourcequotas create,update,patch,delete"#,
            r#"* "" resourcequotas get,list,watch"#,
            r#"* "" resourcequotas/status update,patch"#,
            r#"* "" secrets get,list,watch"#,
            r#"* "" services get,list,watch"#,
            r#"* "apps" daemonsets get,list,watch"#,
            r#"* "apps" deployments get,list,watch"#,
            r#"* "apps" replicasets get,list,watch"#,
            r#"* "apps" statefulsets get,list,watch"#,
            r#"* "batch" cronjobs get,list,watch"#,
            r#"* "batch" jobs get,list,watch"#,
        ],
        // reconciles v1 Service, owns v1 Endpoints and discovery.k8s.io/v1
        // EndpointSlice, reads v1 Pod
        "endpoints" => vec![
            r#"* "" endpoints create,update,patch,delete"#,
            r#"* "" endpoints get,list,watch"#,
            r#"* "" events create,patch"#,
            r#"* "" pods get,list,watch"#,
            r#"* "" services create,update,patch,delete"#,
            r#"* "" services get,list,watch"#,
            r#"* "" services/finalizers update"#,
            r#"* "" services/status update,patch"#,
            r#"* "discovery.k8s.io" endpointslices create,update,patch,delete"#,
            r#"* "discovery.k8s.io" endpointslices get,list,watch"#,
        ],
        // reconciles batch/v1 Job, owns v1 Pod
        "job" => vec![
            r#"* "" events create,patch"#,
            r#"* "" pods create,update,patch,delete"#,
            r#"* "" pods get,list,watch"#,
            r#"* "" pods/status update,patch"#,
            r#"* "batch" jobs create,update,patch,delete"#,
            r#"* "batch" jobs get,list,watch"#,
            r#"* "batch" jobs/finalizers update"#,
            r#"* "batch" jobs/status update,patch"#,
        ],
        // reconciles apps/v1 DaemonSet, owns v1 Pod and apps/v1
        // ControllerRevision, reads v1 Node
        "daemonset" => vec![
            r#"* "" events create,patch"#,
            r#"* "" nodes get,list,watch"#,
            r#"* "" pods create,update,patch,delete"#,
            r#"* "" pods get,list,watch"#,
            r#"* "" pods/status update,patch"#,
            r#"* "apps" controllerrevisions create,update,patch,delete"#,
            r#"* "apps" controllerrevisions get,list,watch"#,
            r#"* "apps" daemonsets create,update,patch,delete"#,
            r#"* "apps" daemonsets get,list,watch"#,
            r#"* "apps" daemonsets/finalizers update"#,
            r#"* "apps" daemonsets/status update,patch"#,
        ],
        // reconciles apps/v1 StatefulSet, owns v1 Pod and apps/v1
        // ControllerRevision, writes v1 PersistentVolumeClaim
        "statefulset" => vec![
            r#"* "" events create,patch"#,
            r#"* "" persistentvolumeclaims create,update,patch,delete"#,
            r#"* "" persistentvolumeclaims/status update,patch"#,
            r#"* "" pods create,update,patch,delete"#,
            r#"* "" pods get,list,watch"#,
            r#"* "" pods/status update,patch"#,
            r#"* "apps" controllerrevisions create,update,patch,delete"#,
            r#"* "apps" controllerrevisions get,list,watch"#,
            r#"* "apps" statefulsets create,update,patch,delete"#,
            r#"* "apps" statefulsets get,list,watch"#,
            r#"* "apps" statefulsets/finalizers update"#,
            r#"* "apps" statefulsets/status update,patch"#,
        ],
        // reconciles batch/v1 CronJob, owns batch/v1 Job
        "cronjob" => vec![
            r#"* "" events create,patch"#,
            r#"* "batch" cronjobs create,update,patch,delete"#,
            r#"* "batch" cronjobs get,list,watch"#,
            r#"* "batch" cronjobs/finalizers update"#,
            r#"* "batch" cronjobs/status update,patch"#,
            r#"* "batch" jobs create,update,patch,delete"#,
            r#"* "batch" jobs get,list,watch"#,
            r#"* "batch" jobs/status update,patch"#,
        ],
        // reconciles policy/v1 PodDisruptionBudget, reads v1 Pod and the
        // controllers whose replicas a percentage is of
        "disruption" => vec![
            r#"* "" events create,patch"#,
            r#"* "" pods get,list,watch"#,
            r#"* "" replicationcontrollers get,list,watch"#,
            r#"* "apps" deployments get,list,watch"#,
            r#"* "apps" replicasets get,list,watch"#,
            r#"* "apps" statefulsets get,list,watch"#,
            r#"* "policy" poddisruptionbudgets create,update,patch,delete"#,
            r#"* "policy" poddisruptionbudgets get,list,watch"#,
            r#"* "policy" poddisruptionbudgets/status update,patch"#,
        ],
        // reconciles v1 PersistentVolumeClaim, reads StorageClass and Pod
        // (ephemeral volumes), reads and writes v1 PersistentVolume
        "persistentvolume" => vec![
            r#"* "" events create,patch"#,
            r#"* "" persistentvolumeclaims create,update,patch,delete"#,
            r#"* "" persistentvolumeclaims get,list,watch"#,
            r#"* "" persistentvolumeclaims/status update,patch"#,
            r#"* "" persistentvolumes create,update,patch,delete"#,
            r#"* "" persistentvolumes get,list,watch"#,
            r#"* "" persistentvolumes/status update,patch"#,
            r#"* "" pods get,list,watch"#,
            r#"* "storage.k8s.io" storageclasses get,list,watch"#,
        ],
        // reconciles autoscaling/v2 HorizontalPodAutoscaler, reads the
        // scalable kinds, writes their scale
        "horizontalpodautoscaler" => vec![
            r#"* "" events create,patch"#,
            r#"* "" replicationcontrollers get,list,watch"#,
            r#"* "" replicationcontrollers/scale patch"#,
            r#"* "apps" deployments get,list,watch"#,
            r#"* "apps" deployments/scale patch"#,
            r#"* "apps" replicasets get,list,watch"#,
            r#"* "apps" replicasets/scale patch"#,
            r#"* "apps" statefulsets get,list,watch"#,
            r#"* "apps" statefulsets/scale patch"#,
            r#"* "autoscaling" horizontalpodautoscalers create,update,patch,delete"#,
            r#"* "autoscaling" horizontalpodautoscalers get,list,watch"#,
            r#"* "autoscaling" horizontalpodautoscalers/status update,patch"#,
        ],
        // reconciles v1 Node; reads bound Pods and the nodes' Leases
        "nodelifecycle" => vec![
            r#"* "" events create,patch"#,
            r#"* "" nodes create,update,patch,delete"#,
            r#"* "" nodes get,list,watch"#,
            r#"* "" nodes/status update,patch"#,
            r#"* "" pods create,update,patch,delete"#,
            r#"* "" pods get,list,watch"#,
            r#"* "" pods/status update,patch"#,
            r#"kube-node-lease "coordination.k8s.io" leases get,list,watch"#,
        ],
        // reconciles pods without a node
        "podgc" => vec![
            r#"* "" events create,patch"#,
            r#"* "" pods create,update,patch,delete"#,
            r#"* "" pods get,list,watch"#,
            r#"* "" pods/status update,patch"#,
        ],
        other => panic!("no expectations for {other}"),
    }
}

/// The rules of `roles` in the form of [`expected`].
fn summary(roles: &[Role]) -> Vec<String> {
    let mut out: Vec<String> = roles
        .iter()
        .flat_map(|role| {
            let scope = role.namespace.clone().unwrap_or_else(|| "*".into());
            role.rules.iter().flat_map(move |rule| {
                let scope = scope.clone();
                rule.api_groups.iter().flat_map(move |group| {
                    let scope = scope.clone();
                    rule.resources.iter().map(move |resource| {
                        format!("{scope} {group:?} {resource} {}", rule.verbs.join(","))
                    })
                })
            })
        })
        .collect();
    out.sort();
    out
}

/// `windlass plugin rbac` of one plugin file (and any instances file
/// beside it): its YAML and documents.
fn generated(wasm: &Path) -> (String, Vec<Value>) {
    let out = Command::new(env!("CARGO_BIN_EXE_windlass"))
        .args(["plugin", "rbac"])
        .arg(wasm)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "plugin rbac {}: {}",
        wasm.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let yaml = String::from_utf8(out.stdout).unwrap();
    let docs = serde_yaml_ng::Deserializer::from_str(&yaml)
        .map(|d| serde::Deserialize::deserialize(d).expect("plugin rbac prints YAML"))
        .collect();
    (yaml, docs)
}

/// Polls `check` until it holds; fails with what it last said after [`WAIT`].
async fn eventually(
    what: &str,
    hosts: &[(&str, Recorder, Cluster)],
    mut check: impl FnMut() -> Result<(), String>,
) {
    let deadline = Instant::now() + WAIT;
    loop {
        match check() {
            Ok(()) => return,
            Err(last) if Instant::now() > deadline => {
                let logs: Vec<String> = hosts
                    .iter()
                    .map(|(name, _, c)| format!("--- {name}:\n{}", c.log()))
                    .collect();
                panic!(
                    "{what}: not within {WAIT:?}; last: {last}\n{}",
                    logs.join("\n")
                );
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(300)).await,
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn generated_rbac_allows_what_each_example_plugin_does_and_no_more() {
    let server = windlass_apiserver::start(windlass_apiserver::Config::new().in_memory())
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let direct = dir.path().join("direct.kubeconfig");
    std::fs::write(&direct, server.kubeconfig()).unwrap();

    // One host per plugin, each behind its own recorder.
    let mut hosts = Vec::new();
    for plugin in PLUGINS {
        let recorder = Recorder::start(server.addr()).await;
        let kubeconfig = dir.path().join(format!("{plugin}.kubeconfig"));
        std::fs::write(
            &kubeconfig,
            recorder.kubeconfig(&server.kubeconfig(), server.addr()),
        )
        .unwrap();
        let cluster = tokio::task::spawn_blocking(move || {
            Cluster::start(
                env!("CARGO_BIN_EXE_windlass"),
                &[plugin],
                Server::Kubeconfig(&kubeconfig),
            )
        })
        .await
        .unwrap();
        hosts.push((plugin, recorder, cluster));
    }

    // Drive the chain through what each plugin does: create, schedule and
    // run pods, fail to schedule one, roll out (scale down, delete pods),
    // and delete the Deployment.
    let k = |args: &[&str]| kubectl_ok(&direct, args, None);
    let pods = |k: &dyn Fn(&[&str]) -> String| -> Vec<Value> {
        let list: Value =
            serde_json::from_str(&k(&["get", "pods", "-n", "shop", "-o", "json"])).unwrap();
        list["items"].as_array().cloned().unwrap_or_default()
    };
    let no_pods_left = |what: &'static str| {
        let (hosts, k, pods) = (&hosts, &k, &pods);
        async move {
            eventually(what, hosts, || {
                let n = pods(k).len();
                (n == 0).then_some(()).ok_or(format!("{n} pods"))
            })
            .await
        }
    };
    k(&[
        "apply",
        "-f",
        &example("nodes.yaml"),
        "-f",
        &example("storageclass.yaml"),
    ]);
    k(&["apply", "-f", &example("namespace.yaml")]);
    // A CronJob's first Job comes at the next minute: made now (in
    // `default`, away from the pods counted in `shop`), checked at the end.
    k(&[
        "-n",
        "default",
        "create",
        "cronjob",
        "tick",
        "--image=busybox",
        "--schedule=*/1 * * * *",
        "--",
        "echo",
        "tick",
    ]);
    // A quota the resourcequota plugin keeps the usage of (roomy enough
    // for the rollout's surge).
    k(&["-n", "shop", "create", "quota", "shop", "--hard=pods=20"]);
    k(&["apply", "-f", &example("deployment.yaml")]);
    eventually("the quota's usage is kept", &hosts, || {
        let quota: Value =
            serde_json::from_str(&k(&["-n", "shop", "get", "quota", "shop", "-o", "json"]))
                .unwrap();
        quota["status"]["used"]["pods"]
            .is_string()
            .then_some(())
            .ok_or(format!("{}", quota["status"]))
    })
    .await;
    eventually("3 pods Running", &hosts, || {
        let all = pods(&k);
        let running = all
            .iter()
            .filter(|p| {
                p["status"]["phase"] == "Running" && condition_status(p, "Ready") == Some("True")
            })
            .count();
        (running == 3 && all.len() == 3)
            .then_some(())
            .ok_or(format!("{running} running of {}", all.len()))
    })
    .await;
    // A disruption budget over them: the disruption plugin keeps its status.
    k(&[
        "-n",
        "shop",
        "create",
        "pdb",
        "web",
        "--selector=app=web",
        "--min-available=2",
    ]);
    eventually("the budget allows one disruption", &hosts, || {
        let pdb: Value =
            serde_json::from_str(&k(&["-n", "shop", "get", "pdb", "web", "-o", "json"])).unwrap();
        (pdb["status"]["disruptionsAllowed"] == 1)
            .then_some(())
            .ok_or(format!("{}", pdb["status"]))
    })
    .await;
    // Exposed: the endpoints plugin lists the three pods.
    k(&["-n", "shop", "expose", "deploy/web", "--port=80"]);
    eventually("the Service's endpoints", &hosts, || {
        let out = kubectl(
            &direct,
            &["-n", "shop", "get", "endpoints", "web", "-o", "json"],
            None,
        );
        let ep: Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
        let n = ep["subsets"][0]["addresses"].as_array().map_or(0, Vec::len);
        (n == 3).then_some(()).ok_or(format!("{n} addresses"))
    })
    .await;
    k(&["-n", "shop", "scale", "deploy/web", "--replicas=4"]);
    eventually("a fourth pod that cannot be scheduled", &hosts, || {
        let all = pods(&k);
        all.iter()
            .any(|p| condition_status(p, "PodScheduled") == Some("False"))
            .then_some(())
            .ok_or_else(|| {
                // Where each pod is, to tell a pod never tried from one
                // placed where it should not be.
                let each: Vec<String> = all
                    .iter()
                    .map(|p| {
                        format!(
                            "{} on {} ({}, PodScheduled {:?})",
                            p["metadata"]["name"].as_str().unwrap_or("?"),
                            p["spec"]["nodeName"].as_str().unwrap_or("-"),
                            p["status"]["phase"].as_str().unwrap_or("?"),
                            condition_status(p, "PodScheduled"),
                        )
                    })
                    .collect();
                format!("{} pods: {}", all.len(), each.join("; "))
            })
    })
    .await;
    k(&["-n", "shop", "scale", "deploy/web", "--replicas=3"]);
    k(&["-n", "shop", "set", "image", "deploy/web", "web=nginx:1.28"]);
    eventually("the rollout completes", &hosts, || {
        let all = pods(&k);
        let updated = all
            .iter()
            .filter(|p| {
                p["spec"]["containers"][0]["image"] == "nginx:1.28"
                    && p["status"]["phase"] == "Running"
            })
            .count();
        (updated == 3 && all.len() == 3)
            .then_some(())
            .ok_or(format!("{updated} updated of {}", all.len()))
    })
    .await;
    k(&["-n", "shop", "delete", "deploy/web", "--wait=false"]);
    no_pods_left("the pods are gone").await;
    // A Job runs its pod to completion, and its deletion collects it.
    k(&[
        "-n",
        "shop",
        "create",
        "job",
        "hello",
        "--image=busybox",
        "--",
        "echo",
        "hi",
    ]);
    eventually("the Job completes", &hosts, || {
        let job: Value =
            serde_json::from_str(&k(&["-n", "shop", "get", "job", "hello", "-o", "json"])).unwrap();
        (condition_status(&job, "Complete") == Some("True"))
            .then_some(())
            .ok_or(format!("{}", job["status"]))
    })
    .await;
    k(&["-n", "shop", "delete", "job", "hello", "--wait=false"]);
    no_pods_left("the Job's pod is gone").await;
    // A DaemonSet runs a pod on each node it tolerates (not the GPU
    // node's taint), and its deletion collects them.
    kubectl_ok(
        &direct,
        &["-n", "shop", "apply", "-f", "-"],
        Some(
            "apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: agent}\nspec:\n  \
             selector: {matchLabels: {app: agent}}\n  template:\n    \
             metadata: {labels: {app: agent}}\n    \
             spec: {containers: [{name: agent, image: agent}]}\n",
        ),
    );
    eventually(
        "a daemon pod Running on each untainted node",
        &hosts,
        || {
            let all = pods(&k);
            let running = all
                .iter()
                .filter(|p| p["status"]["phase"] == "Running" && p["spec"]["nodeName"].is_string())
                .count();
            (running == 3 && all.len() == 3)
                .then_some(())
                .ok_or(format!("{running} running of {}", all.len()))
        },
    )
    .await;
    k(&["-n", "shop", "delete", "ds", "agent", "--wait=false"]);
    no_pods_left("the daemon pods are gone").await;
    // A StatefulSet makes its pods in order, with their claims.
    kubectl_ok(
        &direct,
        &["-n", "shop", "apply", "-f", "-"],
        Some(
            "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: db}\nspec:\n  \
             replicas: 2\n  serviceName: db\n  selector: {matchLabels: {app: db}}\n  \
             template:\n    metadata: {labels: {app: db}}\n    \
             spec: {containers: [{name: db, image: db, \
             volumeMounts: [{name: data, mountPath: /data}]}]}\n  \
             volumeClaimTemplates: [{metadata: {name: data}, spec: {accessModes: \
             [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}}]\n",
        ),
    );
    eventually("db-0 and db-1 Running", &hosts, || {
        let running: Vec<String> = pods(&k)
            .iter()
            .filter(|p| p["status"]["phase"] == "Running")
            .map(windlass_tests::name)
            .collect();
        (running == ["db-0", "db-1"])
            .then_some(())
            .ok_or(format!("{running:?}"))
    })
    .await;
    // An HPA brings the set up to its minimum through its scale.
    k(&["-n", "shop", "autoscale", "sts", "db", "--min=3", "--max=4"]);
    eventually("db-2 Running, as the HPA asks", &hosts, || {
        let running = pods(&k)
            .iter()
            .filter(|p| p["status"]["phase"] == "Running")
            .count();
        (running == 3)
            .then_some(())
            .ok_or(format!("{running} running"))
    })
    .await;
    k(&["-n", "shop", "delete", "hpa", "db"]);
    // And a Deployment, a ReplicaSet and a ReplicationController, each
    // through its own scale.
    kubectl_ok(
        &direct,
        &["-n", "shop", "apply", "-f", "-"],
        Some(
            "apiVersion: apps/v1\nkind: ReplicaSet\nmetadata: {name: bare}\nspec:\n  \
             replicas: 1\n  selector: {matchLabels: {app: bare}}\n  template:\n    \
             metadata: {labels: {app: bare}}\n    spec: {containers: [{name: c, image: c}]}\n\
             ---\napiVersion: v1\nkind: ReplicationController\nmetadata: {name: legacy}\n\
             spec:\n  replicas: 1\n  selector: {app: legacy}\n  template:\n    \
             metadata: {labels: {app: legacy}}\n    spec: {containers: [{name: c, image: c}]}\n",
        ),
    );
    k(&[
        "-n",
        "shop",
        "create",
        "deployment",
        "auto",
        "--image=nginx",
        "--replicas=1",
    ]);
    for target in ["deployment/auto", "rs/bare", "rc/legacy"] {
        k(&["-n", "shop", "autoscale", target, "--min=2", "--max=3"]);
    }
    eventually("each target scaled to its HPA's minimum", &hosts, || {
        let replicas: Vec<i64> = ["deployment/auto", "rs/bare", "rc/legacy"]
            .iter()
            .map(|t| {
                let o: Value =
                    serde_json::from_str(&k(&["-n", "shop", "get", t, "-o", "json"])).unwrap();
                o["spec"]["replicas"].as_i64().unwrap_or(0)
            })
            .collect();
        (replicas == [2, 2, 2])
            .then_some(())
            .ok_or(format!("{replicas:?}"))
    })
    .await;
    k(&["-n", "shop", "delete", "hpa", "--all"]);
    k(&[
        "-n",
        "shop",
        "delete",
        "deployment/auto",
        "rs/bare",
        "rc/legacy",
        "--wait=false",
    ]);
    k(&["-n", "shop", "delete", "sts", "db", "--wait=false"]);
    no_pods_left("the set's pods are gone").await;
    eventually("the CronJob's Job completes", &hosts, || {
        let cj: Value = serde_json::from_str(&k(&[
            "-n", "default", "get", "cronjob", "tick", "-o", "json",
        ]))
        .unwrap();
        cj["status"]["lastSuccessfulTime"]
            .is_string()
            .then_some(())
            .ok_or(format!("{}", cj["status"]))
    })
    .await;
    k(&["-n", "default", "delete", "cronjob", "tick", "--wait=false"]);
    eventually("the CronJob's pods are gone", &hosts, || {
        let list: Value =
            serde_json::from_str(&k(&["get", "pods", "-n", "default", "-o", "json"])).unwrap();
        let n = list["items"].as_array().map_or(0, Vec::len);
        (n == 0).then_some(()).ok_or(format!("{n} pods"))
    })
    .await;

    let mut failures = Vec::new();
    for (plugin, recorder, cluster) in hosts {
        tokio::task::spawn_blocking(move || cluster.stop())
            .await
            .unwrap();
        let (yaml, docs) = generated(&windlass_tests::plugin(plugin));
        let roles = Role::from_documents(&docs);

        // The rules are exactly what the manifest declares.
        let mut want: Vec<String> = expected(plugin).into_iter().map(str::to_owned).collect();
        want.sort();
        assert_eq!(
            summary(&roles),
            want,
            "plugin rbac {plugin} printed:\n{yaml}"
        );
        // Every rule says who needs it, and every role is bound.
        for doc in docs
            .iter()
            .filter(|d| matches!(d["kind"].as_str(), Some("Role" | "ClusterRole")))
        {
            let binding = format!("{}Binding", doc["kind"].as_str().unwrap());
            assert!(
                docs.iter().any(|b| b["kind"] == binding.as_str()
                    && b["roleRef"]["name"] == doc["metadata"]["name"]),
                "{plugin}: no {binding} for {}",
                doc["metadata"]["name"]
            );
        }
        let rules = yaml.matches("- apiGroups:").count();
        let comments = yaml.matches(&format!("\n# {plugin}: ")).count();
        assert!(
            comments >= rules,
            "{plugin}: {rules} rules but {comments} comments:\n{yaml}"
        );
        // And a real API server takes them as RBAC objects.
        kubectl_ok(
            &direct,
            &["apply", "--dry-run=server", "-f", "-"],
            Some(&yaml),
        );

        // Every request the plugin's host made is allowed by them.
        let requests: Vec<_> = recorder
            .requests()
            .into_iter()
            .filter(|r| !r.user_agent.starts_with("kubectl"))
            .collect();
        assert!(!requests.is_empty(), "{plugin}: no requests recorded");
        let mut touched: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for r in &requests {
            let attributes = authz::attributes(&r.method, &r.path);
            match &attributes {
                // Discovery: the host's own need, granted by deploy/kubernetes.
                Attributes::NonResource { verb, path } => {
                    assert!(
                        verb == "get"
                            && (path == "/api"
                                || path == "/apis"
                                || path.starts_with("/api/")
                                || path.starts_with("/apis/")),
                        "{plugin}: an unexpected non-resource request {verb} {path}"
                    );
                    continue;
                }
                Attributes::Resource {
                    verb,
                    resource,
                    subresource,
                    ..
                } => {
                    let key = match subresource {
                        Some(sub) => format!("{resource}/{sub}"),
                        None => resource.clone(),
                    };
                    touched.entry(key).or_default().push(verb.clone());
                    // Writes name their plugin; reads are the shared informers'.
                    if !matches!(verb.as_str(), "get" | "list" | "watch") {
                        assert_eq!(
                            r.user_agent,
                            format!("windlass/{plugin}"),
                            "{} {}",
                            r.method,
                            r.path
                        );
                    }
                }
            }
            if !authz::allows(&roles, &attributes) {
                failures.push(format!(
                    "{plugin}: {} {} ({attributes}) is not allowed by:\n{yaml}",
                    r.method, r.path
                ));
            }
        }
        // Every rule was needed: its resource was touched. Not checked: the
        // finalizers rule (admission checks it, no request names it), the
        // status of a writable kind (the manifest lets the plugin write it,
        // whether or not this one does: `deployment` never writes a
        // ReplicaSet's status), and events (every plugin's failed reconciles
        // are recorded; `resourcequota` has none here).
        for role in &roles {
            for rule in &role.rules {
                let checked = |r: &&String| {
                    !r.ends_with("/finalizers") && !r.ends_with("/status") && *r != "events"
                };
                for resource in rule.resources.iter().filter(checked) {
                    assert!(
                        touched.contains_key(resource),
                        "{plugin}: the rule for {resource} was never used; touched: {touched:?}"
                    );
                }
            }
        }
        eprintln!(
            "{plugin}: {} requests, all allowed; touched {touched:?}",
            requests.len()
        );
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    server.shutdown().await;
}

/// A plugin run as several instances (`NAME.instances.yaml` beside it) gets
/// the rules of each instance, under the instance's name: one confined to a
/// namespace gets a Role there, not a ClusterRole.
#[test]
fn instances_get_rules_of_their_own() {
    let dir = tempfile::tempdir().unwrap();
    let wasm = dir.path().join("replicaset.wasm");
    std::fs::copy(windlass_tests::plugin("replicaset"), &wasm).unwrap();
    std::fs::write(
        dir.path().join("replicaset.instances.yaml"),
        "instances:\n- name: rs-team-a\n  namespace: team-a\n- name: rs-team-b\n  namespace: team-b\n  labelSelector: tier=web\n",
    )
    .unwrap();
    let (yaml, docs) = generated(&wasm);
    let roles = Role::from_documents(&docs);
    let mut want: Vec<String> = ["team-a", "team-b"]
        .iter()
        .flat_map(|ns| {
            [
                r#""" events create,patch"#,
                r#""" pods create,update,patch,delete"#,
                r#""" pods get,list,watch"#,
                r#""" pods/status update,patch"#,
                r#""apps" replicasets create,update,patch,delete"#,
                r#""apps" replicasets get,list,watch"#,
                r#""apps" replicasets/finalizers update"#,
                r#""apps" replicasets/status update,patch"#,
            ]
            .map(|rule| format!("{ns} {rule}"))
        })
        .collect();
    want.sort();
    assert_eq!(summary(&roles), want, "{yaml}");
    assert!(
        yaml.contains("# rs-team-b: reconciles apps/v1 ReplicaSet (tier=web)\n"),
        "{yaml}"
    );
    assert!(!yaml.contains("kind: ClusterRole"), "{yaml}");

    // A broken instances file is named, and nothing is printed.
    std::fs::write(
        dir.path().join("replicaset.instances.yaml"),
        "instances: []\n",
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_windlass"))
        .args(["plugin", "rbac"])
        .arg(&wasm)
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(out.stdout.is_empty());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("replicaset.instances.yaml: `instances` is empty"),
        "{stderr}"
    );
}
