//! Instances of one plugin (`<stem>.instances.yaml` beside `<stem>.wasm`),
//! through the real `windlass run` binary and kubectl: one component runs
//! under several names, each confined to its own label selector and
//! namespace, each writing as itself; a settings change is hot-reloaded,
//! and settings the plugin refuses leave the running version in place.

use std::time::Duration;

use windlass_tests::{Cluster, Server, free_port, http_get};

const WAIT: Duration = Duration::from_secs(60);

fn replicaset(name: &str, namespace: &str, team: Option<&str>) -> String {
    let labels = team.map(|t| format!("team: {t}")).unwrap_or_default();
    format!(
        r#"apiVersion: apps/v1
kind: ReplicaSet
metadata:
  name: {name}
  namespace: {namespace}
  labels: {{{labels}}}
spec:
  replicas: 2
  selector: {{matchLabels: {{app: {name}}}}}
  template:
    metadata: {{labels: {{app: {name}}}}}
    spec: {{containers: [{{name: c, image: nginx}}]}}
"#
    )
}

/// The field managers that wrote the pods of ReplicaSet `rs`.
fn pod_managers(c: &Cluster, ns: &str, rs: &str) -> Vec<String> {
    let mut managers: Vec<String> = c
        .items(&[
            "pods",
            "-n",
            ns,
            "-l",
            &format!("app={rs}"),
            "--show-managed-fields",
        ])
        .iter()
        .flat_map(|p| {
            p["metadata"]["managedFields"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .filter_map(|m| m["manager"].as_str().map(str::to_owned))
        .collect();
    managers.sort();
    managers.dedup();
    managers
}

fn write_instances(c: &Cluster, stem: &str, text: &str) {
    let dir = c.plugins_dir();
    // Written aside and renamed in, as a careful operator (or a ConfigMap
    // volume) does, so the host never reads half a file.
    let tmp = dir.join(format!(".{stem}.tmp"));
    std::fs::write(&tmp, text).unwrap();
    std::fs::rename(&tmp, dir.join(format!("{stem}.instances.yaml"))).unwrap();
}

/// A sample's value in the `/metrics` text, by its series name and labels.
fn sample(metrics: &str, series: &str) -> Option<f64> {
    metrics
        .lines()
        .find_map(|l| l.strip_prefix(series)?.trim().parse().ok())
}

#[test]
fn two_instances_of_one_component_each_keep_to_their_own() {
    let admin = free_port();
    let c = Cluster::start_with_args(
        env!("CARGO_BIN_EXE_windlass"),
        &["replicaset"],
        &[(
            "replicaset.instances.yaml",
            "instances:\n\
             - name: rs-a\n  labelSelector: team=a\n\
             - name: rs-b\n  labelSelector: team=b\n  namespace: team-b\n  maxConcurrency: 2\n",
        )],
        &["--admin", &format!("127.0.0.1:{admin}")],
        Server::Embedded,
    );
    c.ok(&["create", "namespace", "team-b"], None);
    let manifests = [
        replicaset("a", "default", Some("a")),
        replicaset("b", "team-b", Some("b")),
        // Labelled for rs-b, but outside its namespace; and one for no one.
        replicaset("b-elsewhere", "default", Some("b")),
        replicaset("nobody", "default", None),
    ]
    .join("---\n");
    c.ok(&["apply", "-f", "-"], Some(&manifests));
    for (ns, rs, manager) in [
        ("default", "a", "windlass-rs-a"),
        ("team-b", "b", "windlass-rs-b"),
    ] {
        c.eventually(
            &format!("{ns}/{rs} gets its pods from {manager}"),
            WAIT,
            || {
                let managers = pod_managers(&c, ns, rs);
                let pods = c
                    .items(&["pods", "-n", ns, "-l", &format!("app={rs}")])
                    .len();
                (pods == 2 && managers.iter().any(|m| m == manager))
                    .then_some(())
                    .ok_or(format!("{pods} pods, managers {managers:?}"))
            },
        );
        let managers = pod_managers(&c, ns, rs);
        assert!(
            managers
                .iter()
                .all(|m| m == manager || !m.starts_with("windlass-")),
            "{ns}/{rs}: written by {managers:?}"
        );
    }
    // Both were applied in one go with the two above, which are done: had
    // an instance taken them, their pods would be there by now. Give them
    // two more seconds all the same.
    std::thread::sleep(Duration::from_secs(2));
    for rs in ["b-elsewhere", "nobody"] {
        let pods = c.items(&["pods", "-l", &format!("app={rs}")]);
        assert!(pods.is_empty(), "{rs} got pods: {pods:?}");
    }
    // rs-a watches pods everywhere (one shared pod watch), but indexes
    // only its own: b's two pods, controlled by a ReplicaSet it does not
    // reconcile, are not filed in its index.
    let (_, metrics) = http_get(admin, "/metrics").expect("the admin endpoint answers");
    for (plugin, own) in [("rs-a", 2.0), ("rs-b", 2.0)] {
        let series = format!("windlass_index_objects{{plugin=\"{plugin}\",kind=\"v1 Pod\"}}");
        assert_eq!(
            sample(&metrics, &series),
            Some(own),
            "{series} in\n{metrics}"
        );
    }
    c.stop();
}

fn node(name: &str) -> String {
    format!(
        r#"apiVersion: v1
kind: Node
metadata:
  name: {name}
  labels: {{windlass.dev/simulated: "true", kubernetes.io/hostname: {name}}}
"#
    )
}

fn bound_pod(name: &str) -> String {
    format!(
        r#"apiVersion: v1
kind: Pod
metadata: {{name: {name}}}
spec:
  nodeName: node-1
  containers: [{{name: c, image: nginx}}]
"#
    )
}

fn running(c: &Cluster, pod: &str) {
    c.eventually(&format!("{pod} Running"), WAIT, || {
        let phase = c.json(&["pod", pod])["status"]["phase"].clone();
        (phase == "Running").then_some(()).ok_or(format!("{phase}"))
    });
}

fn started_events(c: &Cluster, pod: &str) -> usize {
    c.items(&[
        "events",
        "--field-selector",
        &format!("involvedObject.name={pod},reason=Started"),
    ])
    .len()
}

/// Creates bound pods until one gets a `Started` event within a few
/// seconds of running, or `WAIT` passes.
fn eventually_started(c: &Cluster, what: &str) {
    let deadline = std::time::Instant::now() + WAIT;
    for i in 0.. {
        let name = format!("{what}-{i}");
        c.ok(&["apply", "-f", "-"], Some(&bound_pod(&name)));
        running(c, &name);
        for _ in 0..20 {
            if started_events(c, &name) > 0 {
                return;
            }
            std::thread::sleep(Duration::from_millis(250));
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{what}: no pod got a Started event within {WAIT:?}\n{}",
            c.log()
        );
    }
}

#[test]
fn a_settings_change_is_reloaded_and_refused_settings_keep_the_old_version() {
    let c = Cluster::start_with(
        env!("CARGO_BIN_EXE_windlass"),
        &["kubelet"],
        &[(
            "kubelet.instances.yaml",
            "instances:\n- name: kubelet\n  settings: {containerStartEvents: false}\n",
        )],
        Server::Embedded,
    );
    c.ok(&["apply", "-f", "-"], Some(&node("node-1")));
    c.ok(&["apply", "-f", "-"], Some(&bound_pod("quiet")));
    running(&c, "quiet");
    std::thread::sleep(Duration::from_secs(1));
    assert_eq!(
        started_events(&c, "quiet"),
        0,
        "containerStartEvents: false"
    );

    // The operator turns the events back on: reloaded without a restart.
    write_instances(
        &c,
        "kubelet",
        "instances:\n- name: kubelet\n  settings: {containerStartEvents: true}\n",
    );
    eventually_started(&c, "loud");

    // Settings the plugin refuses: reported, and the running version (with
    // events) goes on.
    write_instances(
        &c,
        "kubelet",
        "instances:\n- name: kubelet\n  settings: {noSuchSetting: 1}\n",
    );
    c.eventually("the refusal is logged", WAIT, || {
        c.log()
            .contains("noSuchSetting")
            .then_some(())
            .ok_or("not yet".into())
    });
    eventually_started(&c, "after");
    c.stop();
}

/// A ReplicaSet that comes into an instance's selector with pods of its
/// own already running: the instance had not indexed them (they were
/// someone else's then), and files them before its first reconcile of the
/// ReplicaSet reads its index — so it counts them, and creates none.
#[test]
fn a_replicaset_gained_by_an_instance_keeps_the_pods_it_had() {
    let c = Cluster::start_with(
        env!("CARGO_BIN_EXE_windlass"),
        &["replicaset"],
        &[(
            "replicaset.instances.yaml",
            "instances:\n- name: rs-a\n  labelSelector: team=a\n",
        )],
        Server::Embedded,
    );
    c.ok(
        &["apply", "-f", "-"],
        Some(&replicaset("late", "default", None)),
    );
    let uid = c.ok(
        &["get", "rs", "late", "-o", "jsonpath={.metadata.uid}"],
        None,
    );
    for pod in ["late-1", "late-2"] {
        let manifest = format!(
            r#"{{"apiVersion": "v1", "kind": "Pod",
               "metadata": {{"name": "{pod}", "labels": {{"app": "late"}},
                 "ownerReferences": [{{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "late",
                   "uid": "{uid}", "controller": true, "blockOwnerDeletion": true}}]}},
               "spec": {{"containers": [{{"name": "c", "image": "nginx"}}]}}}}"#
        );
        c.ok(&["apply", "-f", "-"], Some(&manifest));
    }
    // The host has seen both pods (and passed over them) before rs-a gets
    // the ReplicaSet: give its pod watch a moment.
    std::thread::sleep(Duration::from_secs(1));
    c.ok(&["label", "rs", "late", "team=a"], None);
    c.eventually("rs-a reports the two pods late had", WAIT, || {
        let rs = c.json(&["rs", "late"]);
        (rs["status"]["replicas"] == 2 && rs["status"]["observedGeneration"] == 1)
            .then_some(())
            .ok_or(format!("status {}", rs["status"]))
    });
    std::thread::sleep(Duration::from_secs(1));
    let pods: Vec<String> = c
        .items(&["pods", "-l", "app=late"])
        .iter()
        .map(windlass_tests::name)
        .collect();
    assert_eq!(pods.len(), 2, "rs-a created pods it already had: {pods:?}");
    c.stop();
}
