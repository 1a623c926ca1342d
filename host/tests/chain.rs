//! The whole control-loop chain as plugins — deployment → replicaset → pods →
//! scheduler → kubelet — in the real `windlass run` binary, driven with the
//! real `kubectl` as a user drives a cluster, on the simulated nodes of
//! `examples/nodes.yaml` (three zones; `node-c1` has an hdd; `node-gpu1`
//! is tainted `dedicated=gpu:NoSchedule`), with the default StorageClass
//! of `examples/storageclass.yaml`.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use serde_json::Value;
use windlass_tests::{
    Cluster, Proxy, Server, condition, condition_status, example, running_and_ready,
};

const PLUGINS: [&str; 15] = windlass_tests::EXAMPLE_PLUGINS;
const WAIT: Duration = Duration::from_secs(90);

fn cluster() -> Cluster {
    let c = Cluster::start(env!("CARGO_BIN_EXE_windlass"), &PLUGINS, Server::Embedded);
    c.ok(
        &[
            "apply",
            "-f",
            &example("nodes.yaml"),
            "-f",
            &example("storageclass.yaml"),
        ],
        None,
    );
    c.eventually("the simulated nodes are Ready", WAIT, || {
        let ready = c
            .items(&["nodes"])
            .iter()
            .filter(|n| condition_status(n, "Ready") == Some("True"))
            .count();
        (ready == 4).then_some(()).ok_or(format!("{ready}/4 Ready"))
    });
    c
}

fn running(pods: &[Value]) -> Vec<&Value> {
    pods.iter().filter(|p| running_and_ready(p)).collect()
}

fn node_of(pod: &Value) -> String {
    pod["spec"]["nodeName"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// Waits until the garbage collector has removed every pod.
fn all_pods_collected(c: &Cluster) {
    c.eventually("every pod is collected", WAIT, || {
        let left = c.items(&["pods"]).len();
        (left == 0).then_some(()).ok_or(format!("{left} pods left"))
    });
}

fn pods(c: &Cluster, ns: &str, selector: &str) -> Vec<Value> {
    c.items(&["pods", "-n", ns, "-l", selector])
}

/// The names of the pods of `default` that `selector` selects.
fn pod_names(c: &Cluster, selector: &str) -> BTreeSet<String> {
    pods(c, "default", selector)
        .iter()
        .map(|p| {
            p["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        })
        .collect()
}

/// A Deployment from the example (three ssd nodes allowed, one pod per
/// node), comes up, refuses a fourth replica with the scheduler's reasons,
/// rolls out a new image without dropping below `replicas - maxUnavailable`
/// available, and rolls back.
#[test]
fn a_deployment_schedules_rolls_out_and_rolls_back() {
    let c = cluster();
    c.ok(
        &[
            "apply",
            "-f",
            &example("namespace.yaml"),
            "-f",
            &example("deployment.yaml"),
        ],
        None,
    );
    c.eventually("3 pods Running on distinct ssd nodes", WAIT, || {
        let all = pods(&c, "shop", "app=web");
        let live = running(&all);
        let nodes: BTreeSet<String> = live.iter().map(|p| node_of(p)).collect();
        if live.len() != 3 || nodes.len() != 3 || all.len() != 3 {
            return Err(format!(
                "{} running of {} on {nodes:?}",
                live.len(),
                all.len()
            ));
        }
        if nodes.contains("node-c1") {
            return Err("a pod on the hdd node".into());
        }
        Ok(())
    });
    // `kubectl describe` finds a pod's events by its uid: the kubelet's,
    // recorded while it reconciles the pod's node, must carry it too.
    let first = pods(&c, "shop", "app=web")[0]["metadata"]["name"]
        .as_str()
        .unwrap()
        .to_owned();
    c.eventually(
        "describe shows the scheduler's and the kubelet's events",
        WAIT,
        || {
            let text = c.ok(&["describe", "pod", &first, "-n", "shop"], None);
            let events = text.split("Events:").nth(1).unwrap_or_default();
            if ["Scheduled", "Pulled", "Created", "Started"]
                .iter()
                .all(|reason| events.contains(reason))
            {
                Ok(())
            } else {
                Err(events.to_owned())
            }
        },
    );
    let status = c.json(&["deploy", "web", "-n", "shop"])["status"].clone();
    assert_eq!(status["availableReplicas"], 3, "{status}");
    assert_eq!(
        condition_status(&c.json(&["deploy", "web", "-n", "shop"]), "Available"),
        Some("True")
    );

    // A fourth replica fits nowhere: Pending, with the reasons counted.
    c.ok(&["-n", "shop", "scale", "deploy/web", "--replicas=4"], None);
    c.eventually("the fourth replica explains why it is Pending", WAIT, || {
        let all = pods(&c, "shop", "app=web");
        let pending: Vec<&Value> = all
            .iter()
            .filter(|p| p["spec"]["nodeName"].is_null())
            .collect();
        let [pod] = pending.as_slice() else {
            return Err(format!("{} pending", pending.len()));
        };
        if condition_status(pod, "PodScheduled") != Some("False") {
            return Err(format!("no PodScheduled=False yet: {}", pod["status"]));
        }
        let name = pod["metadata"]["name"].as_str().unwrap();
        let events = c.items(&[
            "events", "-n", "shop", "--field-selector",
            &format!("involvedObject.name={name},reason=FailedScheduling"),
        ]);
        let message = events
            .first()
            .and_then(|e| e["message"].as_str())
            .unwrap_or_default()
            .to_owned();
        let want = "0/4 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, 3 node(s) didn't match pod anti-affinity rules. \
                    preemption: 0/4 nodes are available: 1 Preemption is not helpful for scheduling, 3 No preemption victims found for incoming pod..";
        (message == want).then_some(()).ok_or(message)
    });
    c.ok(&["-n", "shop", "scale", "deploy/web", "--replicas=3"], None);

    // A new image: a rollout that keeps at least 3 - maxUnavailable(1)
    // pods available at every look.
    c.ok(
        &["-n", "shop", "set", "image", "deploy/web", "web=nginx:1.28"],
        None,
    );
    let mut lowest = usize::MAX;
    c.eventually("the rollout completes", WAIT, || {
        let all = pods(&c, "shop", "app=web");
        let live = running(&all);
        lowest = lowest.min(live.len());
        let updated = live
            .iter()
            .filter(|p| p["spec"]["containers"][0]["image"] == "nginx:1.28")
            .count();
        (updated == 3 && all.len() == 3)
            .then_some(())
            .ok_or(format!("{updated} updated, {} pods", all.len()))
    });
    assert!(lowest >= 2, "availability dropped to {lowest}");
    let out = c.ok(
        &[
            "-n",
            "shop",
            "rollout",
            "status",
            "deploy/web",
            "--timeout=60s",
        ],
        None,
    );
    assert!(out.contains("successfully rolled out"), "{out}");
    let replicasets = c.items(&["rs", "-n", "shop", "-l", "app=web"]);
    assert_eq!(replicasets.len(), 2, "one old and one new ReplicaSet");
    let old = replicasets
        .iter()
        .find(|rs| rs["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.27")
        .expect("the old ReplicaSet is kept for rollback");
    assert_eq!(old["spec"]["replicas"], 0, "{old}");
    let history = c.ok(&["-n", "shop", "rollout", "history", "deploy/web"], None);
    assert!(history.contains('1') && history.contains('2'), "{history}");

    // Undo: back to the first template, on its old ReplicaSet.
    c.ok(&["-n", "shop", "rollout", "undo", "deploy/web"], None);
    c.eventually("the rollback completes", WAIT, || {
        let all = pods(&c, "shop", "app=web");
        let live = running(&all);
        let back = live
            .iter()
            .filter(|p| p["spec"]["containers"][0]["image"] == "nginx:1.27")
            .count();
        (back == 3 && all.len() == 3)
            .then_some(())
            .ok_or(format!("{back} back of {}", all.len()))
    });
    assert_eq!(c.items(&["rs", "-n", "shop", "-l", "app=web"]).len(), 2);
    c.stop();
}

/// What a newcomer types first, scaled in bursts: `kubectl create
/// deployment`, then 1 → 5 → 2 back to back ends at exactly 2 Running;
/// and a Deployment of 3 lands on 3 nodes, exposed as a Service whose
/// endpoints follow its pods.
#[test]
fn scaling_in_bursts_ends_at_the_last_value() {
    let c = cluster();
    c.ok(
        &[
            "create",
            "deployment",
            "web",
            "--image=nginx",
            "--replicas=1",
        ],
        None,
    );
    c.eventually("one pod Running", WAIT, || {
        let n = running(&pods(&c, "default", "app=web")).len();
        (n == 1).then_some(()).ok_or(format!("{n}"))
    });
    c.ok(&["scale", "deploy/web", "--replicas=5"], None);
    c.ok(&["scale", "deploy/web", "--replicas=2"], None);
    c.eventually("exactly 2 Running", WAIT, || {
        let all = pods(&c, "default", "app=web");
        let live = running(&all).len();
        let ready = c.json(&["deploy", "web"])["status"]["readyReplicas"].clone();
        (live == 2 && all.len() == 2 && ready == 2)
            .then_some(())
            .ok_or(format!("{live} running of {} (ready {ready})", all.len()))
    });
    // And it stays there.
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(pods(&c, "default", "app=web").len(), 2);

    // Deleted with `--cascade=orphan` and made again, the Deployment adopts
    // its ReplicaSet, and so its pods: no second set.
    let before = pod_names(&c, "app=web");
    c.ok(&["delete", "deployment", "web", "--cascade=orphan"], None);
    c.eventually("the ReplicaSet is orphaned", WAIT, || {
        let sets = c.items(&["rs", "-l", "app=web"]);
        let orphaned = sets
            .iter()
            .all(|r| r["metadata"]["ownerReferences"].is_null());
        (sets.len() == 1 && orphaned)
            .then_some(())
            .ok_or(format!("{sets:?}"))
    });
    c.ok(
        &[
            "create",
            "deployment",
            "web",
            "--image=nginx",
            "--replicas=2",
        ],
        None,
    );
    c.eventually("the new Deployment adopts its ReplicaSet", WAIT, || {
        let d = c.json(&["deploy", "web"]);
        let sets = c.items(&["rs", "-l", "app=web"]);
        let adopted = sets
            .iter()
            .all(|r| r["metadata"]["ownerReferences"][0]["uid"] == d["metadata"]["uid"]);
        let available = &d["status"]["availableReplicas"];
        (sets.len() == 1 && adopted && *available == 2 && pod_names(&c, "app=web") == before)
            .then_some(())
            .ok_or(format!("{} sets {sets:?}; {available}", sets.len()))
    });

    // Three replicas of another Deployment, with no constraints of their
    // own, go to the three untainted nodes, one each: kube-scheduler's
    // default spread, which outweighs node-b1's larger room.
    c.ok(
        &[
            "create",
            "deployment",
            "spread",
            "--image=nginx",
            "--replicas=3",
        ],
        None,
    );
    c.eventually("3 pods Running on 3 nodes", WAIT, || {
        let all = pods(&c, "default", "app=spread");
        let live = running(&all);
        let nodes: BTreeSet<String> = live.iter().map(|p| node_of(p)).collect();
        (live.len() == 3 && nodes.len() == 3)
            .then_some(())
            .ok_or(format!("{} running on {nodes:?}", live.len()))
    });

    // Exposed, the Service lists its pods' addresses in its Endpoints and
    // EndpointSlice, and follows a scale-down.
    c.ok(
        &[
            "expose",
            "deployment",
            "spread",
            "--port=80",
            "--target-port=8080",
        ],
        None,
    );
    let backends = |want: usize| {
        c.eventually(&format!("{want} endpoints"), WAIT, || {
            let ips: BTreeSet<String> = running(&pods(&c, "default", "app=spread"))
                .iter()
                .map(|p| p["status"]["podIP"].as_str().unwrap_or_default().to_owned())
                .collect();
            let ep = c.json(&["endpoints", "spread"]);
            let listed: BTreeSet<String> = ep["subsets"][0]["addresses"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|a| a["ip"].as_str().unwrap_or_default().to_owned())
                .collect();
            let slices = c.items(&["endpointslices", "-l", "kubernetes.io/service-name=spread"]);
            let sliced: BTreeSet<String> = slices
                .iter()
                .flat_map(|s| s["endpoints"].as_array().cloned().unwrap_or_default())
                .filter(|e| e["conditions"]["ready"] == true)
                .map(|e| e["addresses"][0].as_str().unwrap_or_default().to_owned())
                .collect();
            let port = &ep["subsets"][0]["ports"][0]["port"];
            (ips.len() == want && listed == ips && sliced == ips && *port == 8080)
                .then_some(())
                .ok_or(format!(
                    "pods {ips:?}, endpoints {listed:?} port {port}, slices {sliced:?}"
                ))
        });
    };
    backends(3);
    let svc = c.json(&["service", "spread"]);
    assert!(
        svc["spec"]["clusterIP"]
            .as_str()
            .is_some_and(|ip| ip.starts_with("10.")),
        "{svc}"
    );
    c.ok(&["scale", "deploy/spread", "--replicas=1"], None);
    backends(1);

    // Made from kubectl's protobuf, the template reads as kube-apiserver's
    // JSON would, without `stdin: false` or `tty: false`; so after a change
    // of image, `rollout undo` finds the first ReplicaSet again, whose
    // template kubectl copies back.
    let d = c.json(&["deployment", "spread"]);
    let container = &d["spec"]["template"]["spec"]["containers"][0];
    assert!(
        container.get("stdin").is_none() && container.get("tty").is_none(),
        "{container}"
    );
    let rollout = ["rollout", "status", "deploy/spread", "--timeout=60s"];
    c.ok(&["set", "image", "deploy/spread", "nginx=nginx:1.27"], None);
    c.ok(&rollout, None);
    c.ok(&["rollout", "undo", "deploy/spread"], None);
    c.ok(&rollout, None);
    let replicasets = c.items(&["rs", "-l", "app=spread"]);
    assert_eq!(replicasets.len(), 2, "{replicasets:?}");
    c.stop();
}

/// Pods end and are replaced, `kubectl debug` starts an ephemeral
/// container, a graceful delete shows Terminating first, a pod relabelled
/// out of its ReplicaSet is released and replaced, a bare pod it selects
/// is adopted, and deleting the owner collects everything.
#[test]
fn pods_end_are_replaced_terminate_gracefully_and_are_collected() {
    let c = cluster();
    c.ok(
        &["apply", "-f", "-"],
        Some(
            r#"
apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: exiter}
spec:
  replicas: 2
  selector: {matchLabels: {app: exiter}}
  template:
    metadata:
      labels: {app: exiter}
      annotations: {windlass.dev/exit-after: 3s, windlass.dev/exit-code: "0"}
    spec:
      restartPolicy: Never
      terminationGracePeriodSeconds: 3
      containers: [{name: job, image: busybox}]
"#,
        ),
    );
    let mut first: BTreeSet<String> = BTreeSet::new();
    c.eventually("2 pods Running", WAIT, || {
        let live = running(&pods(&c, "default", "app=exiter"))
            .iter()
            .map(|p| p["metadata"]["name"].as_str().unwrap().to_owned())
            .collect::<BTreeSet<_>>();
        first = live.clone();
        (live.len() == 2).then_some(()).ok_or(format!("{live:?}"))
    });
    c.eventually("the ended pods are replaced by new ones", WAIT, || {
        let live: BTreeSet<String> = running(&pods(&c, "default", "app=exiter"))
            .iter()
            .map(|p| p["metadata"]["name"].as_str().unwrap().to_owned())
            .collect();
        (live.len() == 2 && live.is_disjoint(&first))
            .then_some(())
            .ok_or(format!("{live:?} (first {first:?})"))
    });

    // A graceful delete: Terminating for its grace period, then gone.
    c.ok(
        &["apply", "-f", "-"],
        Some(
            r#"
apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: stayer}
spec:
  replicas: 1
  selector: {matchLabels: {app: stayer}}
  template:
    metadata: {labels: {app: stayer}}
    spec:
      terminationGracePeriodSeconds: 3
      containers: [{name: web, image: nginx}]
"#,
        ),
    );
    let mut victim = String::new();
    c.eventually("the pod runs", WAIT, || {
        let all = pods(&c, "default", "app=stayer");
        let live = running(&all);
        victim = live
            .first()
            .and_then(|p| p["metadata"]["name"].as_str())
            .unwrap_or_default()
            .to_owned();
        (live.len() == 1)
            .then_some(())
            .ok_or(format!("{}", all.len()))
    });
    // `kubectl debug`: the ephemeral container is started by the kubelet,
    // running and never ready, and the pod stays Ready.
    c.ok(
        &[
            "debug",
            &victim,
            "--image=busybox",
            "--container=dbg",
            "--profile=general",
        ],
        None,
    );
    c.eventually("the debug container runs", WAIT, || {
        let pod = c.json(&["pod", &victim]);
        let e = &pod["status"]["ephemeralContainerStatuses"][0];
        let ready = pod["status"]["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|c| c["type"] == "Ready" && c["status"] == "True");
        (e["name"] == "dbg" && e["state"]["running"].is_object() && e["ready"] == false && ready)
            .then_some(())
            .ok_or(format!("{}", pod["status"]))
    });
    c.ok(&["delete", "pod", &victim, "--wait=false"], None);
    let pod = c.json(&["pod", &victim]);
    assert!(
        !pod["metadata"]["deletionTimestamp"].is_null(),
        "a bound pod stays while it terminates: {pod}"
    );
    let table = c.ok(&["get", "pod", &victim], None);
    assert!(table.contains("Terminating"), "{table}");
    c.eventually("the terminated pod is gone and replaced", WAIT, || {
        let gone = !c.kubectl(&["get", "pod", &victim]).status.success();
        let live = running(&pods(&c, "default", "app=stayer")).len();
        (gone && live == 1)
            .then_some(())
            .ok_or(format!("gone {gone}, {live} running"))
    });

    // Isolating a pod for debugging: relabelled out of the selector, it is
    // released (running, owned by no one) and another takes its place.
    let isolated = running(&pods(&c, "default", "app=stayer"))[0]["metadata"]["name"]
        .as_str()
        .unwrap()
        .to_owned();
    c.ok(
        &["label", "pod", &isolated, "app=debug", "--overwrite"],
        None,
    );
    c.eventually("the relabelled pod is released and replaced", WAIT, || {
        let pod = c.json(&["pod", &isolated]);
        let released = pod["metadata"]["ownerReferences"].is_null();
        let live = running(&pods(&c, "default", "app=stayer")).len();
        (released && running_and_ready(&pod) && live == 1)
            .then_some(())
            .ok_or(format!("{live} running; {}", pod["metadata"]))
    });
    // A bare pod the selector selects is adopted, and one of the two goes.
    c.ok(
        &["run", "bare", "--image=nginx", "--labels=app=stayer"],
        None,
    );
    c.eventually("the bare pod is adopted, one of two kept", WAIT, || {
        let all = pods(&c, "default", "app=stayer");
        let live: Vec<&Value> = all
            .iter()
            .filter(|p| p["metadata"]["deletionTimestamp"].is_null())
            .collect();
        let owned = |p: &Value| p["metadata"]["ownerReferences"][0]["name"] == "stayer";
        (live.len() == 1 && all.iter().all(owned))
            .then_some(())
            .ok_or(format!("{all:?}"))
    });

    // Deleting the owners collects everything they owned.
    c.ok(&["delete", "rs", "exiter", "stayer", "--wait=false"], None);
    c.ok(&["delete", "pod", &isolated, "--wait=false"], None);
    all_pods_collected(&c);
    c.stop();
}

/// Jobs through kubectl: `kubectl create job` runs to `Complete` (the API
/// server gives it its selector, the kubelet completes its pod); an
/// Indexed Job runs each index once; a Job whose pods fail goes past its
/// `backoffLimit` to `Failed`; a CronJob makes a Job at the top of the
/// minute, which completes; a CronJob in an IANA time zone is taken and
/// shows it, one in a zone that does not exist is refused with the
/// server's words; deleting them collects their pods.
#[test]
fn jobs_run_to_completion_or_fail_past_their_limit() {
    let c = cluster();
    cronjobs_in_time_zones(&c);
    // A CronJob's first Job comes at the next minute: made first, checked
    // last, so the wait overlaps the rest.
    c.ok(
        &[
            "create",
            "cronjob",
            "tick",
            "--image=busybox",
            "--schedule=*/1 * * * *",
            "--",
            "echo",
            "tick",
        ],
        None,
    );
    c.ok(
        &[
            "create",
            "job",
            "hello",
            "--image=busybox",
            "--",
            "echo",
            "hi",
        ],
        None,
    );
    let job = c.json(&["job", "hello"]);
    let uid = job["metadata"]["uid"].as_str().unwrap().to_owned();
    assert_eq!(
        job["spec"]["selector"]["matchLabels"]["batch.kubernetes.io/controller-uid"],
        uid.as_str(),
        "{job}"
    );
    assert_eq!(job["metadata"]["labels"]["job-name"], "hello", "{job}");
    c.ok(
        &[
            "wait",
            "--for=condition=complete",
            "job/hello",
            "--timeout=60s",
        ],
        None,
    );
    let table = c.ok(&["get", "job", "hello"], None);
    assert!(
        table.contains("Complete") && table.contains("1/1"),
        "{table}"
    );
    let done = pods(&c, "default", "job-name=hello");
    assert_eq!(done.len(), 1, "{done:?}");
    assert_eq!(done[0]["status"]["phase"], "Succeeded");
    let events = c.ok(
        &[
            "get",
            "events",
            "--field-selector",
            "involvedObject.name=hello",
        ],
        None,
    );
    let pod_name = done[0]["metadata"]["name"].as_str().unwrap();
    assert!(
        events.contains(&format!("Created pod: {pod_name}")) && events.contains("Job completed"),
        "{events}"
    );

    c.ok(
        &["apply", "-f", "-"],
        Some(
            r#"
apiVersion: batch/v1
kind: Job
metadata: {name: indexed}
spec:
  completionMode: Indexed
  completions: 3
  parallelism: 2
  template:
    spec:
      restartPolicy: Never
      containers: [{name: work, image: busybox}]
---
apiVersion: batch/v1
kind: Job
metadata: {name: failing}
spec:
  backoffLimit: 0
  template:
    metadata:
      annotations: {windlass.dev/exit-after: 1s, windlass.dev/exit-code: "3"}
    spec:
      restartPolicy: Never
      containers: [{name: work, image: busybox}]
"#,
        ),
    );
    c.ok(
        &[
            "wait",
            "--for=condition=complete",
            "job/indexed",
            "--timeout=60s",
        ],
        None,
    );
    let status = c.json(&["job", "indexed"])["status"].clone();
    assert_eq!(status["completedIndexes"], "0-2", "{status}");
    assert_eq!(status["succeeded"], 3, "{status}");
    let indexes: BTreeSet<String> = pods(&c, "default", "job-name=indexed")
        .iter()
        .map(|p| {
            let i = &p["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"];
            assert_eq!(
                p["spec"]["hostname"],
                format!("indexed-{}", i.as_str().unwrap())
            );
            i.as_str().unwrap().to_owned()
        })
        .collect();
    assert_eq!(indexes, ["0", "1", "2"].map(String::from).into());

    c.ok(
        &[
            "wait",
            "--for=condition=failed",
            "job/failing",
            "--timeout=60s",
        ],
        None,
    );
    let failing = c.json(&["job", "failing"]);
    let failed = condition(&failing, "Failed").expect("a Failed condition");
    assert_eq!(failed["reason"], "BackoffLimitExceeded", "{failing}");
    assert_eq!(failing["status"]["failed"], 1, "{failing}");

    // The CronJob's Job ran to completion at the top of a minute.
    c.eventually(
        "the CronJob's first Job completes",
        Duration::from_secs(100),
        || {
            let cj = c.json(&["cronjob", "tick"]);
            cj["status"]["lastSuccessfulTime"]
                .is_string()
                .then_some(())
                .ok_or(format!("{}", cj["status"]))
        },
    );
    let cj = c.json(&["cronjob", "tick"]);
    let scheduled = cj["status"]["lastScheduleTime"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(scheduled.ends_with(":00Z"), "{cj}");
    let all_jobs = c.items(&["jobs"]);
    let owned: Vec<&Value> = all_jobs
        .iter()
        .filter(|j| j["metadata"]["ownerReferences"][0]["name"] == "tick")
        .collect();
    assert!(!owned.is_empty(), "{all_jobs:?}");
    assert_eq!(
        owned[0]["metadata"]["annotations"]["batch.kubernetes.io/cronjob-scheduled-timestamp"],
        scheduled.as_str(),
        "{:?}",
        owned[0]
    );
    c.ok(&["delete", "cronjob", "tick", "--wait=false"], None);

    // Deleting the Jobs collects their pods.
    c.ok(
        &[
            "delete",
            "job",
            "hello",
            "indexed",
            "failing",
            "--wait=false",
        ],
        None,
    );
    all_pods_collected(&c);
    c.stop();
}

/// A Job whose pod exits with code 42, and a `FailJob` rule on 42: it
/// fails at once with reason `PodFailurePolicy` and upstream's message,
/// though its `backoffLimit` had failures to spare. Beside it, a Job with
/// the same policy whose pod fits nowhere: that pod, deleted before any
/// node took it, is failed by the `podgc` plugin, so the Job counts it
/// and makes another (without it the pod stays `Pending` behind the Job's
/// finalizer, and the Job waits for it forever).
#[test]
fn a_pod_failure_policy_fails_a_job_on_its_exit_code() {
    let c = cluster();
    c.ok(
        &["apply", "-f", "-"],
        Some(
            r#"
apiVersion: batch/v1
kind: Job
metadata: {name: nowhere}
spec:
  backoffLimit: 6
  podFailurePolicy:
    rules:
    - action: Ignore
      onPodConditions: [{type: DisruptionTarget}]
  template:
    spec:
      restartPolicy: Never
      nodeSelector: {disk: floppy}
      containers: [{name: main, image: busybox}]
"#,
        ),
    );
    // The plugin names a Job's pods after its uid, so a replacement may
    // take a name that is free again: pods are told apart by uid.
    let mut first = (String::new(), String::new());
    c.eventually("the unschedulable Job's pod", WAIT, || {
        let p = pods(&c, "default", "job-name=nowhere");
        match p.as_slice() {
            [one] => {
                let m = &one["metadata"];
                first = (m["name"].as_str().unwrap().to_owned(), m["uid"].to_string());
                Ok(())
            }
            other => Err(format!("{} pods", other.len())),
        }
    });
    c.ok(&["delete", "pod", &first.0, "--wait=false"], None);
    c.eventually(
        "the deleted pod counted as failed and replaced",
        WAIT,
        || {
            let job = c.json(&["job", "nowhere"]);
            let pods = pods(&c, "default", "job-name=nowhere");
            let uids: Vec<String> = pods
                .iter()
                .map(|p| p["metadata"]["uid"].to_string())
                .collect();
            (job["status"]["failed"] == 1 && uids.len() == 1 && uids[0] != first.1)
                .then_some(())
                .ok_or(format!("{} {uids:?}, first {first:?}", job["status"]))
        },
    );
    c.ok(&["delete", "job", "nowhere", "--wait=false"], None);
    c.ok(
        &["apply", "-f", "-"],
        Some(
            r#"
apiVersion: batch/v1
kind: Job
metadata: {name: policed}
spec:
  backoffLimit: 6
  podFailurePolicy:
    rules:
    - action: Ignore
      onPodConditions: [{type: DisruptionTarget}]
    - action: FailJob
      onExitCodes: {containerName: main, operator: In, values: [42]}
  template:
    metadata:
      annotations: {windlass.dev/exit-after: 1s, windlass.dev/exit-code: "42"}
    spec:
      restartPolicy: Never
      containers: [{name: main, image: busybox}]
"#,
        ),
    );
    let job = c.json(&["job", "policed"]);
    assert_eq!(job["spec"]["podReplacementPolicy"], "Failed", "{job}");
    c.ok(
        &[
            "wait",
            "--for=condition=failed",
            "job/policed",
            "--timeout=60s",
        ],
        None,
    );
    let job = c.json(&["job", "policed"]);
    let failed = condition(&job, "Failed").expect("a Failed condition");
    let pod = pods(&c, "default", "job-name=policed");
    assert_eq!(pod.len(), 1, "{pod:?}");
    let name = pod[0]["metadata"]["name"].as_str().unwrap();
    assert_eq!(failed["reason"], "PodFailurePolicy", "{job}");
    assert_eq!(
        failed["message"],
        format!(
            "Container main for pod default/{name} failed with exit code 42 matching FailJob rule at index 1"
        ),
        "{job}"
    );
    assert_eq!(job["status"]["failed"], 1, "{job}");
    c.ok(&["delete", "job", "policed", "--wait=false"], None);
    all_pods_collected(&c);
    c.stop();
}

/// A CronJob with `timeZone: <zone>` at 09:00 there, as YAML.
fn zoned_cronjob(name: &str, zone: &str) -> String {
    format!(
        "apiVersion: batch/v1
kind: CronJob
metadata: {{name: {name}}}
spec:
  schedule: '0 9 * * *'
  timeZone: {zone}
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: OnFailure
          containers: [{{name: c, image: busybox}}]
"
    )
}

/// `kubectl apply` of a CronJob in `Europe/Paris` is taken and `get -o
/// wide` shows the zone; one in `Mars/Olympus` is refused with the
/// server's 422, as a cluster refuses it.
fn cronjobs_in_time_zones(c: &Cluster) {
    c.ok(
        &["apply", "-f", "-"],
        Some(&zoned_cronjob("paris", "Europe/Paris")),
    );
    let wide = c.ok(&["get", "cronjob", "paris", "-o", "wide"], None);
    assert!(wide.contains("Europe/Paris"), "{wide}");
    let mars = std::env::temp_dir().join(format!("mars-cronjob-{}.yaml", std::process::id()));
    std::fs::write(&mars, zoned_cronjob("mars", "Mars/Olympus")).unwrap();
    let refused = c.kubectl(&["apply", "-f", mars.to_str().unwrap()]);
    let _ = std::fs::remove_file(&mars);
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success(), "{err}");
    assert!(
        err.contains(
            "The CronJob \"mars\" is invalid: spec.timeZone: Invalid value: \"Mars/Olympus\": unknown time zone Mars/Olympus"
        ),
        "{err}"
    );
    assert!(!c.kubectl(&["get", "cronjob", "mars"]).status.success());
    c.ok(&["delete", "cronjob", "paris"], None);
}

const JOB_TRACKING: &str = "batch.kubernetes.io/job-tracking";

/// A Job named `name` of `n` pods that run for an hour (gone a second
/// after they are deleted).
fn long_job(name: &str, n: u32) -> String {
    format!(
        "apiVersion: batch/v1
kind: Job
metadata: {{name: {name}}}
spec:
  completions: {n}
  parallelism: {n}
  template:
    metadata:
      annotations: {{windlass.dev/exit-after: 1h}}
    spec:
      restartPolicy: Never
      terminationGracePeriodSeconds: 1
      containers: [{{name: work, image: busybox}}]
---
"
    )
}

fn holds_tracking(pod: &Value) -> bool {
    pod["metadata"]["finalizers"]
        .as_array()
        .is_some_and(|f| f.iter().any(|f| f == JOB_TRACKING))
}

/// Waits until the Job `name` has `n` running pods, each carrying the
/// tracking finalizer; returns them.
fn running_tracked(c: &Cluster, name: &str, n: usize) -> Vec<Value> {
    let mut found = Vec::new();
    c.eventually(
        &format!("{n} running pods of {name}, tracked"),
        WAIT,
        || {
            let all = pods(c, "default", &format!("job-name={name}"));
            let live: Vec<Value> = all
                .iter()
                .filter(|p| running_and_ready(p) && p["metadata"]["deletionTimestamp"].is_null())
                .cloned()
                .collect();
            if live.len() != n || !live.iter().all(holds_tracking) {
                return Err(format!("{all:?}"));
            }
            found = live;
            Ok(())
        },
    );
    found
}

/// Pods are tracked with `batch.kubernetes.io/job-tracking` as upstream's
/// Job controller tracks them: a Job that completes leaves its pods without
/// the finalizer and nothing in `uncountedTerminatedPods`; a running pod
/// deleted by hand goes (the finalizer does not hold it for ever), counts
/// as failed once and is replaced; and `kubectl delete job` collects the
/// pods with any cascade (background, foreground), none left Terminating,
/// while `--cascade=orphan` leaves its pods running, released.
#[test]
fn a_jobs_pods_are_tracked_with_its_finalizer_until_counted() {
    let c = cluster();
    let mut manifests = String::from(
        "apiVersion: batch/v1
kind: Job
metadata: {name: done}
spec:
  completions: 3
  parallelism: 3
  template:
    spec:
      restartPolicy: Never
      containers: [{name: work, image: busybox}]
---
",
    );
    for (name, n) in [("bg", 2), ("fg", 2), ("orphaned", 1)] {
        manifests.push_str(&long_job(name, n));
    }
    c.ok(&["apply", "-f", "-"], Some(&manifests));

    c.ok(
        &[
            "wait",
            "--for=condition=complete",
            "job/done",
            "--timeout=60s",
        ],
        None,
    );
    let status = c.json(&["job", "done"])["status"].clone();
    assert_eq!(status["succeeded"], 3, "{status}");
    assert_eq!(
        status["uncountedTerminatedPods"],
        serde_json::json!({}),
        "{status}"
    );
    assert!(status.get("failed").is_none(), "{status}");
    let done = pods(&c, "default", "job-name=done");
    assert_eq!(done.len(), 3, "{done:?}");
    for p in &done {
        assert_eq!(p["status"]["phase"], "Succeeded", "{p}");
        assert!(p["metadata"].get("finalizers").is_none(), "{p}");
    }

    // A running pod deleted by hand: gone (kubectl waits for it), counted
    // as failed once, replaced.
    let bg = running_tracked(&c, "bg", 2);
    let victim = bg[0]["metadata"]["name"].as_str().unwrap().to_owned();
    c.ok(&["delete", "pod", &victim, "--timeout=60s"], None);
    running_tracked(&c, "bg", 2);
    c.eventually("the deleted pod counted as failed", WAIT, || {
        let s = c.json(&["job", "bg"])["status"].clone();
        (s["failed"] == 1 && s["uncountedTerminatedPods"] == serde_json::json!({}))
            .then_some(())
            .ok_or(format!("{s}"))
    });

    // Deleting the Jobs: their pods go, whatever the cascade.
    running_tracked(&c, "fg", 2);
    let orphan = running_tracked(&c, "orphaned", 1)[0]["metadata"]["name"]
        .as_str()
        .unwrap()
        .to_owned();
    c.ok(&["delete", "job", "bg", "--wait=false"], None);
    c.ok(
        &[
            "delete",
            "job",
            "fg",
            "--cascade=foreground",
            "--timeout=60s",
        ],
        None,
    );
    c.ok(
        &[
            "delete",
            "job",
            "orphaned",
            "--cascade=orphan",
            "--timeout=60s",
        ],
        None,
    );
    c.eventually("the deleted Jobs' pods are gone", WAIT, || {
        let left: Vec<Value> = ["bg", "fg"]
            .iter()
            .flat_map(|j| pods(&c, "default", &format!("job-name={j}")))
            .collect();
        left.is_empty().then_some(()).ok_or(format!("{left:?}"))
    });
    assert!(
        c.items(&["jobs"])
            .iter()
            .all(|j| j["metadata"]["name"] == "done")
    );
    // The orphan runs on, let go of: deleting it is not held either.
    c.eventually("the orphan is released", WAIT, || {
        let p = c.json(&["pod", &orphan]);
        (p["metadata"].get("ownerReferences").is_none() && !holds_tracking(&p))
            .then_some(())
            .ok_or(format!("{p}"))
    });
    c.ok(&["delete", "pod", &orphan, "--timeout=60s"], None);
    c.ok(&["delete", "job", "done", "--wait=false"], None);
    all_pods_collected(&c);
    c.stop();
}

/// A DaemonSet through kubectl: a pod on every node but the tainted one,
/// bound there by the scheduler; a new image rolls out node by node
/// (`kubectl rollout status`), `rollout history` lists both revisions and
/// `rollout undo` goes back; a node that joins gets a pod; deleted with
/// `--cascade=orphan` and made again, it adopts its pods; deleting the
/// DaemonSet collects its pods.
#[test]
fn a_daemonset_runs_on_every_node_and_rolls_out() {
    let c = cluster();
    const MANIFEST: &str = r#"
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec:
      terminationGracePeriodSeconds: 1
      containers: [{name: agent, image: "agent:1"}]
"#;
    c.ok(&["apply", "-f", "-"], Some(MANIFEST));
    let on_nodes = |image: &str| -> Result<(), String> {
        let all = pods(&c, "default", "app=agent");
        let live = running(&all);
        let nodes: BTreeSet<String> = live
            .iter()
            .filter(|p| p["spec"]["containers"][0]["image"] == image)
            .map(|p| node_of(p))
            .collect();
        let want: BTreeSet<String> = ["node-a1", "node-b1", "node-c1"].map(String::from).into();
        (nodes == want && all.len() == 3)
            .then_some(())
            .ok_or(format!("{image} running on {nodes:?}, {} pods", all.len()))
    };
    c.eventually("a pod of agent:1 on each untainted node", WAIT, || {
        on_nodes("agent:1")
    });
    c.ok(&["rollout", "status", "ds/agent", "--timeout=60s"], None);
    let status = c.json(&["ds", "agent"])["status"].clone();
    assert_eq!(status["desiredNumberScheduled"], 3, "{status}");
    assert_eq!(status["numberAvailable"], 3, "{status}");

    c.ok(&["set", "image", "ds/agent", "agent=agent:2"], None);
    c.ok(&["rollout", "status", "ds/agent", "--timeout=90s"], None);
    c.eventually("agent:2 on each untainted node", WAIT, || {
        on_nodes("agent:2")
    });
    let history = c.ok(&["rollout", "history", "ds/agent"], None);
    assert!(history.contains('1') && history.contains('2'), "{history}");
    c.ok(&["rollout", "undo", "ds/agent"], None);
    c.eventually("back to agent:1 on each untainted node", WAIT, || {
        on_nodes("agent:1")
    });

    // A node that joins gets its pod.
    c.ok(
        &["apply", "-f", "-"],
        Some(
            r#"
apiVersion: v1
kind: Node
metadata:
  name: node-d1
  labels: {windlass.dev/simulated: "true", kubernetes.io/hostname: node-d1}
"#,
        ),
    );
    c.eventually("the new node runs the agent", WAIT, || {
        let nodes: BTreeSet<String> = running(&pods(&c, "default", "app=agent"))
            .iter()
            .map(|p| node_of(p))
            .collect();
        nodes
            .contains("node-d1")
            .then_some(())
            .ok_or(format!("{nodes:?}"))
    });

    // Deleted with `--cascade=orphan` and made again, the DaemonSet adopts
    // the pods it left: still one a node, the same pods.
    let before = pod_names(&c, "app=agent");
    c.ok(&["delete", "ds", "agent", "--cascade=orphan"], None);
    c.eventually("the agents are orphaned", WAIT, || {
        let all = pods(&c, "default", "app=agent");
        let orphaned = all
            .iter()
            .all(|p| p["metadata"]["ownerReferences"].is_null());
        orphaned.then_some(()).ok_or(format!("{all:?}"))
    });
    c.ok(&["apply", "-f", "-"], Some(MANIFEST));
    c.eventually("the new DaemonSet adopts its agents", WAIT, || {
        let ds = c.json(&["ds", "agent"]);
        let all = pods(&c, "default", "app=agent");
        let adopted = all
            .iter()
            .all(|p| p["metadata"]["ownerReferences"][0]["uid"] == ds["metadata"]["uid"]);
        let available = &ds["status"]["numberAvailable"];
        (adopted && pod_names(&c, "app=agent") == before && *available == 4)
            .then_some(())
            .ok_or(format!("{} pods; available {available}", all.len()))
    });

    c.ok(&["delete", "ds", "agent", "--wait=false"], None);
    all_pods_collected(&c);
    c.stop();
}

/// A StatefulSet through kubectl: pods `web-0`, `web-1`, `web-2` made in
/// order with their claims; `rollout status` waits for them; a new image
/// rolls from the highest ordinal down; `rollout undo` goes back; scaling
/// down removes the highest first; deleted with `--cascade=orphan` and
/// made again, the set adopts its pod; deleting the set collects its pods
/// and keeps its claims.
#[test]
fn a_statefulset_makes_ordered_pods_and_rolls_out() {
    let c = cluster();
    const MANIFEST: &str = r#"
apiVersion: v1
kind: Service
metadata: {name: nginx}
spec:
  clusterIP: None
  selector: {app: nginx}
  ports: [{port: 80}]
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: web}
spec:
  serviceName: nginx
  replicas: 3
  selector: {matchLabels: {app: nginx}}
  template:
    metadata: {labels: {app: nginx}}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: nginx
        image: "nginx:1"
        volumeMounts: [{name: www, mountPath: /usr/share/nginx/html}]
  volumeClaimTemplates:
  - metadata: {name: www}
    spec:
      accessModes: [ReadWriteOnce]
      resources: {requests: {storage: 1Gi}}
"#;
    c.ok(&["apply", "-f", "-"], Some(MANIFEST));
    c.ok(&["rollout", "status", "sts/web", "--timeout=90s"], None);
    let images = |c: &Cluster| -> BTreeMap<String, String> {
        running(&pods(c, "default", "app=nginx"))
            .iter()
            .map(|p| {
                (
                    p["metadata"]["name"].as_str().unwrap().to_owned(),
                    p["spec"]["containers"][0]["image"]
                        .as_str()
                        .unwrap()
                        .to_owned(),
                )
            })
            .collect()
    };
    let all = |image: &str, n: usize| -> BTreeMap<String, String> {
        (0..n)
            .map(|i| (format!("web-{i}"), image.to_owned()))
            .collect()
    };
    assert_eq!(images(&c), all("nginx:1", 3));
    let web0 = c.json(&["pod", "web-0"]);
    assert_eq!(web0["spec"]["hostname"], "web-0", "{web0}");
    assert_eq!(web0["spec"]["subdomain"], "nginx", "{web0}");
    let claims: BTreeSet<String> = c
        .items(&["pvc"])
        .iter()
        .map(|p| p["metadata"]["name"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        claims,
        ["www-web-0", "www-web-1", "www-web-2"]
            .map(String::from)
            .into()
    );
    // Each claim got the default class and a volume on its pod's node.
    for i in 0..3 {
        let claim = c.json(&["pvc", &format!("www-web-{i}")]);
        assert_eq!(claim["status"]["phase"], "Bound", "{claim}");
        assert_eq!(claim["spec"]["storageClassName"], "standard", "{claim}");
        let volume = c.json(&["pv", claim["spec"]["volumeName"].as_str().unwrap()]);
        let pod = c.json(&["pod", &format!("web-{i}")]);
        assert_eq!(
            volume["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"][0]["matchExpressions"]
                [0]["values"][0],
            pod["spec"]["nodeName"],
            "{volume}"
        );
    }
    // In order: web-1 was created after web-0 was ready.
    let created = |name: &str| c.json(&["pod", name])["metadata"]["creationTimestamp"].clone();
    assert!(created("web-0").as_str() <= created("web-1").as_str());

    c.ok(&["set", "image", "sts/web", "nginx=nginx:2"], None);
    c.ok(&["rollout", "status", "sts/web", "--timeout=90s"], None);
    c.eventually("every pod at nginx:2", WAIT, || {
        let now = images(&c);
        (now == all("nginx:2", 3))
            .then_some(())
            .ok_or(format!("{now:?}"))
    });
    let history = c.ok(&["rollout", "history", "sts/web"], None);
    assert!(history.contains('1') && history.contains('2'), "{history}");
    c.ok(&["rollout", "undo", "sts/web"], None);
    c.ok(&["rollout", "status", "sts/web", "--timeout=90s"], None);
    c.eventually("back to nginx:1", WAIT, || {
        let now = images(&c);
        (now == all("nginx:1", 3))
            .then_some(())
            .ok_or(format!("{now:?}"))
    });

    c.ok(&["scale", "sts/web", "--replicas=1"], None);
    c.eventually("only web-0 left", WAIT, || {
        let left: Vec<String> = pods(&c, "default", "app=nginx")
            .iter()
            .map(|p| p["metadata"]["name"].as_str().unwrap().to_owned())
            .collect();
        (left == ["web-0"]).then_some(()).ok_or(format!("{left:?}"))
    });

    // Deleted with `--cascade=orphan` and made again (the way to change
    // what a set may not change), the set adopts web-0 instead of making
    // it again, and makes the two it lacks.
    let first = c.json(&["pod", "web-0"])["metadata"]["uid"].clone();
    let made_web0 = |c: &Cluster| -> u64 {
        c.items(&["events", "--field-selector", "reason=SuccessfulCreate"])
            .iter()
            .filter(|e| e["message"] == "create Pod web-0 in StatefulSet web successful")
            .map(|e| e["count"].as_u64().unwrap_or(1))
            .sum()
    };
    let made_before = made_web0(&c);
    assert!(made_before > 0, "web-0's creation was recorded");
    c.ok(&["delete", "sts", "web", "--cascade=orphan"], None);
    c.eventually("web-0 is orphaned", WAIT, || {
        let refs = c.json(&["pod", "web-0"])["metadata"]["ownerReferences"].clone();
        refs.is_null().then_some(()).ok_or(format!("{refs}"))
    });
    c.ok(&["apply", "-f", "-"], Some(MANIFEST));
    c.eventually("web-0 adopted, three pods running", WAIT, || {
        let set = c.json(&["sts", "web"])["metadata"]["uid"].clone();
        let all = pods(&c, "default", "app=nginx");
        let adopted = all
            .iter()
            .all(|p| p["metadata"]["ownerReferences"][0]["uid"] == set);
        let web0 = c.json(&["pod", "web-0"])["metadata"]["uid"].clone();
        (adopted && running(&all).len() == 3 && web0 == first)
            .then_some(())
            .ok_or(format!("web-0 {web0} (was {first}), {} pods", all.len()))
    });
    // No pod was made for web-0 again: the events recording its creation
    // (aggregated by message, whichever set they name) count as before.
    assert_eq!(made_web0(&c), made_before);

    c.ok(&["delete", "sts", "web", "--wait=false"], None);
    all_pods_collected(&c);
    assert_eq!(c.items(&["pvc"]).len(), 3, "the claims outlive the set");
    c.stop();
}

/// `kubectl drain` under a PodDisruptionBudget: the disruption plugin
/// keeps the budget's status, so a drain the budget forbids waits (and
/// times out), and once the budget allows one disruption the drain evicts
/// the node's pod, whose replacement runs elsewhere.
#[test]
fn kubectl_drain_honours_a_disruption_budget() {
    let c = cluster();
    c.ok(
        &["apply", "-f", "-"],
        Some(
            r#"
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      terminationGracePeriodSeconds: 1
      containers: [{name: web, image: nginx}]
"#,
        ),
    );
    c.eventually("3 pods Running", WAIT, || {
        let live = running(&pods(&c, "default", "app=web")).len();
        (live == 3).then_some(()).ok_or(format!("{live} running"))
    });
    c.ok(
        &[
            "create",
            "pdb",
            "web",
            "--selector=app=web",
            "--min-available=3",
        ],
        None,
    );
    let allowed = |want: i64| {
        c.eventually(&format!("{want} disruption(s) allowed"), WAIT, || {
            let s = c.json(&["pdb", "web"])["status"].clone();
            (s["disruptionsAllowed"] == want && s["currentHealthy"] == 3)
                .then_some(())
                .ok_or(format!("{s}"))
        });
    };
    allowed(0);
    let node = node_of(&pods(&c, "default", "app=web")[0]);
    let refused = c.kubectl(&["drain", &node, "--ignore-daemonsets", "--timeout=4s"]);
    let said = String::from_utf8_lossy(&refused.stderr).to_string()
        + &String::from_utf8_lossy(&refused.stdout);
    assert!(!refused.status.success(), "{said}");
    assert!(said.contains("disruption budget"), "{said}");

    c.ok(
        &[
            "patch",
            "pdb",
            "web",
            "--type=merge",
            "-p",
            r#"{"spec":{"minAvailable":2}}"#,
        ],
        None,
    );
    allowed(1);
    c.ok(
        &["drain", &node, "--ignore-daemonsets", "--timeout=60s"],
        None,
    );
    c.eventually("3 pods Running, none on the drained node", WAIT, || {
        let all = pods(&c, "default", "app=web");
        let live = running(&all);
        let on_node = live.iter().filter(|p| node_of(p) == node).count();
        (live.len() == 3 && on_node == 0)
            .then_some(())
            .ok_or(format!("{} running, {on_node} on {node}", live.len()))
    });
    c.stop();
}

/// A claim and its pod, as a user writes them: the pod created first waits,
/// saying the claim is missing; the claim gets the default class and waits
/// for its pod; the scheduler picks the pod's node and writes it on the
/// claim; the persistentvolume plugin provisions a volume there and binds
/// it; then the pod is bound and runs. Deleting the claim (and its volume)
/// while the pod runs leaves both `Terminating`, held by their protection
/// finalizers; once the pod is deleted they go (reclaim policy `Delete`); a
/// `Retain` volume is kept `Released`.
/// A generic ephemeral volume's claim is made for its pod and goes with it.
#[test]
fn a_claim_gets_a_volume_on_its_pods_node_and_gives_it_back() {
    let c = cluster();
    let pod = r#"
apiVersion: v1
kind: Pod
metadata: {name: db}
spec:
  terminationGracePeriodSeconds: 0
  containers: [{name: db, image: postgres, volumeMounts: [{name: data, mountPath: /data}]}]
  volumes: [{name: data, persistentVolumeClaim: {claimName: data}}]
"#;
    c.ok(&["apply", "-f", "-"], Some(pod));
    c.eventually("the pod waits for its claim", WAIT, || {
        let said = c.ok(&["describe", "pod", "db"], None);
        said.contains(r#"persistentvolumeclaim "data" not found"#)
            .then_some(())
            .ok_or(said)
    });
    // The claim is made while the cluster has no default class, so it
    // names none; the class made the default afterwards is given to it.
    let default = "storageclass.kubernetes.io/is-default-class";
    c.ok(
        &[
            "annotate",
            "storageclass",
            "standard",
            &format!("{default}-"),
        ],
        None,
    );
    c.ok(
        &["apply", "-f", "-"],
        Some(
            r#"
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data}
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 2Gi}}
"#,
        ),
    );
    c.eventually("the claim waits with no class", WAIT, || {
        let said = c.ok(&["describe", "pvc", "data"], None);
        said.contains("no storage class is set")
            .then_some(())
            .ok_or(said)
    });
    assert_eq!(
        c.json(&["pvc", "data"])["spec"]["storageClassName"],
        Value::Null
    );
    c.ok(
        &[
            "annotate",
            "storageclass",
            "standard",
            &format!("{default}=true"),
        ],
        None,
    );
    c.eventually("the pod runs with its claim bound", WAIT, || {
        let pod = c.json(&["pod", "db"]);
        let claim = c.json(&["pvc", "data"]);
        (pod["status"]["phase"] == "Running" && claim["status"]["phase"] == "Bound")
            .then_some(())
            .ok_or(format!("pod {}, claim {}", pod["status"], claim["status"]))
    });
    let claim = c.json(&["pvc", "data"]);
    assert_eq!(claim["spec"]["storageClassName"], "standard", "{claim}");
    assert_eq!(claim["status"]["capacity"]["storage"], "2Gi", "{claim}");
    let node = node_of(&c.json(&["pod", "db"]));
    assert_eq!(
        claim["metadata"]["annotations"]["volume.kubernetes.io/selected-node"],
        node.as_str()
    );
    let name = claim["spec"]["volumeName"].as_str().unwrap().to_owned();
    let volume = c.json(&["pv", &name]);
    assert_eq!(volume["status"]["phase"], "Bound", "{volume}");
    assert_eq!(volume["spec"]["claimRef"]["name"], "data", "{volume}");
    assert_eq!(
        volume["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"][0]["matchExpressions"][0]["values"]
            [0],
        node.as_str(),
        "{volume}"
    );
    let pvcs = c.ok(&["get", "pvc", "data"], None);
    assert!(
        pvcs.contains("Bound") && pvcs.contains("standard"),
        "{pvcs}"
    );

    // Deleted while its pod runs, the claim stays Terminating, held by
    // its protection finalizer; so does its volume, deleted while Bound.
    c.ok(&["delete", "pvc", "data", "--wait=false"], None);
    c.ok(&["delete", "pv", &name, "--wait=false"], None);
    std::thread::sleep(Duration::from_secs(2));
    let claim = c.json(&["pvc", "data"]);
    assert!(
        claim["metadata"]["deletionTimestamp"].is_string(),
        "{claim}"
    );
    assert_eq!(
        claim["metadata"]["finalizers"],
        serde_json::json!(["kubernetes.io/pvc-protection"]),
        "{claim}"
    );
    let shown = c.ok(&["get", "pvc", "data"], None);
    assert!(shown.contains("Terminating"), "{shown}");
    let volume = c.json(&["pv", &name]);
    assert!(
        volume["metadata"]["deletionTimestamp"].is_string(),
        "{volume}"
    );
    assert_eq!(volume["status"]["phase"], "Bound", "{volume}");
    assert_eq!(c.json(&["pod", "db"])["status"]["phase"], "Running");
    // Once the pod is gone, the claim goes, and its volume with it.
    c.ok(&["delete", "pod", "db"], None);
    c.eventually("the claim and its volume go with the pod", WAIT, || {
        let claims = c.items(&["pvc"]).len();
        let volumes = c.items(&["pv"]).len();
        (claims == 0 && volumes == 0)
            .then_some(())
            .ok_or(format!("{claims} claims, {volumes} volumes left"))
    });

    // A class that retains: the volume outlives its claim, Released.
    c.ok(
        &["apply", "-f", "-"],
        Some(
            r#"
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: keep}
provisioner: windlass.dev/simulated
reclaimPolicy: Retain
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: kept}
spec:
  storageClassName: keep
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
"#,
        ),
    );
    c.eventually("an Immediate claim is bound without a pod", WAIT, || {
        let claim = c.json(&["pvc", "kept"]);
        (claim["status"]["phase"] == "Bound")
            .then_some(())
            .ok_or(format!("{}", claim["status"]))
    });
    c.ok(&["delete", "pvc", "kept", "--wait=false"], None);

    // A generic ephemeral volume: its claim is made for the pod, owned by
    // it, and goes (with its volume) when the pod goes.
    c.ok(
        &["apply", "-f", "-"],
        Some(
            r#"
apiVersion: v1
kind: Pod
metadata: {name: scratch}
spec:
  terminationGracePeriodSeconds: 0
  containers: [{name: c, image: busybox, volumeMounts: [{name: tmp, mountPath: /tmp}]}]
  volumes:
  - name: tmp
    ephemeral:
      volumeClaimTemplate:
        spec:
          accessModes: [ReadWriteOnce]
          resources: {requests: {storage: 1Gi}}
"#,
        ),
    );
    c.eventually("the pod runs with its ephemeral claim bound", WAIT, || {
        let pod = c.json(&["pod", "scratch"]);
        let claims: Vec<(String, String)> = c
            .items(&["pvc"])
            .iter()
            .map(|p| {
                let field = |v: &Value| v.as_str().unwrap_or("-").to_owned();
                (field(&p["metadata"]["name"]), field(&p["status"]["phase"]))
            })
            .collect();
        let bound = claims.contains(&("scratch-tmp".to_owned(), "Bound".to_owned()));
        (pod["status"]["phase"] == "Running" && bound)
            .then_some(())
            .ok_or(format!("pod {}, claims {claims:?}", pod["status"]))
    });
    let claim = c.json(&["pvc", "scratch-tmp"]);
    assert_eq!(
        claim["metadata"]["ownerReferences"][0]["name"], "scratch",
        "{claim}"
    );
    c.ok(&["delete", "pod", "scratch"], None);
    c.eventually(
        "the ephemeral claim and its volume go with the pod",
        WAIT,
        || {
            let claims = c.items(&["pvc"]).len();
            let volumes: Vec<String> = c
                .items(&["pv"])
                .iter()
                .map(|v| {
                    v["spec"]["claimRef"]["name"]
                        .as_str()
                        .unwrap_or("-")
                        .to_owned()
                })
                .collect();
            (claims == 0 && volumes == ["kept"])
                .then_some(())
                .ok_or(format!("{claims} claims, volumes for {volumes:?}"))
        },
    );
    c.eventually("the retained volume is Released", WAIT, || {
        let volumes = c.items(&["pv"]);
        let phases: Vec<&str> = volumes
            .iter()
            .map(|v| v["status"]["phase"].as_str().unwrap_or("-"))
            .collect();
        (phases == ["Released"])
            .then_some(())
            .ok_or(format!("{phases:?}"))
    });
    c.stop();
}

/// Priority and preemption: a pod of a high PriorityClass that fits
/// nowhere has the scheduler delete a pod of lower priority where that
/// makes room (`Preempted` on the victim, the node nominated on the pod),
/// then runs there; the victim's replacement waits, as it cannot preempt
/// a pod of higher priority. Then a PodDisruptionBudget: of two pods that
/// could make room, the scheduler spares the one a budget protects, though
/// it is the less important.
#[test]
fn a_pod_of_higher_priority_preempts_a_lower_one() {
    let c = cluster();
    let pod = |name: &str, class: &str, cpu: &str| {
        format!(
            "apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, labels: {{app: {name}}}}}\nspec:\n  {class}\
             terminationGracePeriodSeconds: 1\n  nodeSelector: {{kubernetes.io/hostname: node-c1}}\n  \
             containers: [{{name: c, image: nginx, resources: {{requests: {{cpu: \"{cpu}\"}}}}}}]\n"
        )
    };
    c.ok(&["create", "priorityclass", "high", "--value=1000"], None);
    c.ok(&["apply", "-f", "-"], Some(&pod("filler", "", "1500m")));
    c.eventually("the filler runs on node-c1", WAIT, || {
        let p = c.json(&["pod", "filler"]);
        (p["status"]["phase"] == "Running")
            .then_some(())
            .ok_or(format!("{}", p["status"]))
    });
    c.ok(
        &["apply", "-f", "-"],
        Some(&pod("urgent", "priorityClassName: high\n  ", "1")),
    );
    c.eventually("the urgent pod runs where the filler was", WAIT, || {
        let p = c.json(&["pod", "urgent"]);
        (p["status"]["phase"] == "Running" && node_of(&p) == "node-c1")
            .then_some(())
            .ok_or(format!("{}", p["status"]))
    });
    let urgent = c.json(&["pod", "urgent"]);
    assert_eq!(urgent["spec"]["priority"], 1000);
    assert_eq!(urgent["status"]["nominatedNodeName"], "node-c1", "{urgent}");
    let preempted = c.items(&[
        "events",
        "--field-selector",
        "involvedObject.name=filler,reason=Preempted",
    ]);
    let said = preempted
        .first()
        .and_then(|e| e["message"].as_str())
        .unwrap_or_default()
        .to_owned();
    let uid = urgent["metadata"]["uid"].as_str().unwrap();
    assert_eq!(said, format!("Preempted by pod {uid} on node node-c1"));
    assert!(
        c.items(&["pods"])
            .iter()
            .all(|p| p["metadata"]["name"] != "filler"),
        "the victim is gone"
    );

    // Back again, the filler cannot preempt a pod of higher priority.
    c.ok(&["apply", "-f", "-"], Some(&pod("filler", "", "1500m")));
    c.eventually("the filler waits, with no victims to find", WAIT, || {
        let said = c.ok(&["describe", "pod", "filler"], None);
        said.contains("preemption: 0/4 nodes are available: 1 No preemption victims found for incoming pod, 3 Preemption is not helpful for scheduling..")
            .then_some(())
            .ok_or(said)
    });

    // Two pods could make room for a second urgent one: `guarded` (priority
    // 0, which alone would go) and `plain` (500). A budget with no
    // disruption left protects `guarded`, so `plain` goes instead.
    c.ok(&["delete", "pod", "filler", "urgent", "--wait=true"], None);
    c.ok(&["create", "priorityclass", "medium", "--value=500"], None);
    c.ok(
        &["apply", "-f", "-"],
        Some(&pod("plain", "priorityClassName: medium\n  ", "750m")),
    );
    c.ok(&["apply", "-f", "-"], Some(&pod("guarded", "", "750m")));
    c.ok(
        &[
            "create",
            "pdb",
            "guarded",
            "--selector=app=guarded",
            "--min-available=1",
        ],
        None,
    );
    c.eventually(
        "both run, and the budget allows no disruption",
        WAIT,
        || {
            let pdb = c.json(&["pdb", "guarded"]);
            let both = ["plain", "guarded"]
                .iter()
                .all(|p| c.json(&["pod", p])["status"]["phase"] == "Running");
            (both
                && pdb["status"]["currentHealthy"] == 1
                && pdb["status"]["disruptionsAllowed"] == 0)
                .then_some(())
                .ok_or(format!("{}", pdb["status"]))
        },
    );
    c.ok(
        &["apply", "-f", "-"],
        Some(&pod("urgent2", "priorityClassName: high\n  ", "1")),
    );
    c.eventually("the second urgent pod runs where plain was", WAIT, || {
        let p = c.json(&["pod", "urgent2"]);
        (p["status"]["phase"] == "Running" && node_of(&p) == "node-c1")
            .then_some(())
            .ok_or(format!("{}", p["status"]))
    });
    let names: Vec<String> = c
        .items(&["pods"])
        .iter()
        .map(windlass_tests::name)
        .collect();
    assert!(names.contains(&"guarded".to_owned()), "{names:?}");
    assert!(!names.contains(&"plain".to_owned()), "{names:?}");
    c.stop();
}

/// `kubectl autoscale` as on a cluster without metrics-server: the HPA
/// brings the Deployment up to its minimum through the scale subresource,
/// then reports why it cannot compute a replica count (`kubectl get hpa`
/// shows `cpu: <unknown>/80%` and the replicas).
#[test]
fn an_hpa_keeps_its_target_within_bounds_without_metrics() {
    let c = cluster();
    c.ok(
        &[
            "create",
            "deployment",
            "web",
            "--image=nginx",
            "--replicas=1",
        ],
        None,
    );
    c.ok(
        &[
            "autoscale",
            "deployment",
            "web",
            "--min=2",
            "--max=5",
            "--cpu-percent=80",
        ],
        None,
    );
    c.eventually("two pods Running, as the HPA's minimum", WAIT, || {
        let n = running(&pods(&c, "default", "app=web")).len();
        (n == 2).then_some(()).ok_or(format!("{n} running"))
    });
    c.eventually("the HPA says why it cannot scale on cpu", WAIT, || {
        let hpa = c.json(&["hpa.v2.autoscaling", "web"]);
        let active = hpa["status"]["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|c| c["type"] == "ScalingActive")
            .cloned()
            .unwrap_or_default();
        (hpa["status"]["currentReplicas"] == 2
            && active["status"] == "False"
            && active["reason"] == "FailedGetResourceMetric")
            .then_some(())
            .ok_or(format!("{}", hpa["status"]))
    });
    let table = c.ok(&["get", "hpa", "web"], None);
    assert!(
        table.contains("cpu: <unknown>/80%") && table.contains("Deployment/web"),
        "{table}"
    );
    let said = c.ok(&["describe", "hpa", "web"], None);
    assert!(
        said.contains("New size: 2; reason: Current number of replicas below Spec.MinReplicas"),
        "{said}"
    );
    c.stop();
}

/// A pod that fits on no node stays Pending, saying why per node, and is
/// scheduled (and runs) once a node it fits on is added.
#[test]
fn a_pod_that_fits_nowhere_is_scheduled_once_a_node_fits() {
    let c = cluster();
    c.ok(
        &["apply", "-f", "-"],
        Some(
            r#"
apiVersion: v1
kind: Pod
metadata: {name: big}
spec:
  containers:
  - name: work
    image: busybox
    resources: {requests: {cpu: "24", memory: 1Gi}}
"#,
        ),
    );
    c.eventually("the pod explains why it is Pending", WAIT, || {
        let events = c.items(&[
            "events", "--field-selector", "involvedObject.name=big,reason=FailedScheduling",
        ]);
        let message = events
            .first()
            .and_then(|e| e["message"].as_str())
            .unwrap_or_default()
            .to_owned();
        // kube sorts the counted reasons as strings.
        let want = "0/4 nodes are available: 1 node(s) had untolerated taint {dedicated: gpu}, 3 Insufficient cpu. \
                    preemption: 0/4 nodes are available: 1 Preemption is not helpful for scheduling, 3 No preemption victims found for incoming pod..";
        (message == want).then_some(()).ok_or(message)
    });
    c.ok(
        &["apply", "-f", "-"],
        Some(
            r#"
apiVersion: v1
kind: Node
metadata:
  name: node-big
  labels: {windlass.dev/simulated: "true", kubernetes.io/hostname: node-big}
  annotations: {windlass.dev/capacity: "cpu=32,memory=128Gi,pods=110"}
"#,
        ),
    );
    c.eventually("the pod runs on the new node", WAIT, || {
        let pod = c.json(&["pod", "big"]);
        (node_of(&pod) == "node-big" && pod["status"]["phase"] == "Running")
            .then_some(())
            .ok_or(pod["status"].to_string())
    });
    c.stop();
}

/// The chain converges while the connection between the host and the API
/// server is cut again and again (the TCP proxy of the host tests).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_chain_converges_through_cut_connections() {
    let server = windlass_apiserver::start(windlass_apiserver::Config::new().in_memory())
        .await
        .unwrap();
    let proxy = Proxy::start(server.addr()).await;
    let dir = tempfile::tempdir().unwrap();
    let proxied = dir.path().join("proxied.kubeconfig");
    std::fs::write(
        &proxied,
        proxy.kubeconfig(&server.kubeconfig(), server.addr()),
    )
    .unwrap();
    let direct = dir.path().join("direct.kubeconfig");
    std::fs::write(&direct, server.kubeconfig()).unwrap();
    let c = tokio::task::spawn_blocking(move || {
        Cluster::start(
            env!("CARGO_BIN_EXE_windlass"),
            &PLUGINS,
            Server::Kubeconfig(&proxied),
        )
    })
    .await
    .unwrap();
    let kubectl = |args: &[&str]| windlass_tests::kubectl_ok(&direct, args, None);
    kubectl(&["apply", "-f", &example("nodes.yaml")]);
    kubectl(&[
        "create",
        "deployment",
        "web",
        "--image=nginx",
        "--replicas=6",
    ]);
    // Cut every connection every 400 ms for 6 s while the chain works.
    for _ in 0..15 {
        tokio::time::sleep(Duration::from_millis(400)).await;
        proxy.cut_all();
    }
    let deadline = std::time::Instant::now() + WAIT;
    loop {
        let list: Value =
            serde_json::from_str(&kubectl(&["get", "pods", "-l", "app=web", "-o", "json"]))
                .unwrap();
        let all = list["items"].as_array().cloned().unwrap_or_default();
        let live = running(&all).len();
        if live == 6 && all.len() == 6 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{live} running of {}; log:\n{}",
            all.len(),
            c.log()
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    tokio::task::spawn_blocking(move || c.stop()).await.unwrap();
    server.shutdown().await;
}
