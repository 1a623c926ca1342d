//! Namespace governance through the whole chain: the real `windlass run`
//! binary with the replicaset, scheduler, kubelet and resourcequota
//! plugins, driven with the real `kubectl`. A ReplicaSet held back by a
//! quota reports `FailedCreate` as a cluster's does, and completes once
//! the quota is raised.

use std::time::Duration;

use serde_json::json;
use windlass_tests::{Cluster, Server, condition, example, running_and_ready};

const PLUGINS: [&str; 4] = ["replicaset", "scheduler", "kubelet", "resourcequota"];
const WAIT: Duration = Duration::from_secs(120);

fn running(c: &Cluster) -> usize {
    c.items(&["pods", "-n", "team-a", "-l", "app=web"])
        .iter()
        .filter(|p| running_and_ready(p))
        .count()
}

/// The seed notes' compute quota and the LimitRange that fills in what
/// pods leave out: each bare pod of the ReplicaSet gets `cpu: 500m`
/// requested and `cpu: 1` as its limit, so the quota's `requests.cpu: "1"`
/// and `limits.cpu: "2"` hold two of the three replicas. The third is
/// refused with upstream's message, which the ReplicaSet shows as a
/// `FailedCreate` event and a `ReplicaFailure` condition; raising the quota
/// lets it complete, and the condition goes.
#[test]
fn a_replicaset_held_back_by_a_quota_completes_once_it_is_raised() {
    let c = Cluster::start(env!("CARGO_BIN_EXE_windlass"), &PLUGINS, Server::Embedded);
    c.ok(&["apply", "-f", &example("nodes.yaml")], None);
    c.ok(&["create", "namespace", "team-a"], None);
    c.ok(
        &[
            "apply",
            "-n",
            "team-a",
            "-f",
            &example("mem-cpu-res-limit-fixed.yaml"),
            "-f",
            &example("compute-resources.yaml"),
        ],
        None,
    );
    let rs = json!({
        "apiVersion": "apps/v1", "kind": "ReplicaSet",
        "metadata": {"name": "web", "namespace": "team-a"},
        "spec": {
            "replicas": 3,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]}
            }
        }
    });
    c.ok(&["apply", "-f", "-"], Some(&rs.to_string()));

    let refusal = "pods \"web-\" is forbidden: exceeded quota: compute-resources, \
        requested: limits.cpu=1,requests.cpu=500m, used: limits.cpu=2,requests.cpu=1, \
        limited: limits.cpu=2,requests.cpu=1";
    c.eventually("the third replica is refused, and says so", WAIT, || {
        let rs = c.json(&["rs", "web", "-n", "team-a"]);
        let failure = condition(&rs, "ReplicaFailure").cloned();
        let Some(failure) = failure else {
            return Err(format!("no ReplicaFailure yet: {}", rs["status"]));
        };
        if failure["status"] != "True" || failure["reason"] != "FailedCreate" {
            return Err(failure.to_string());
        }
        if failure["message"] != refusal {
            return Err(format!("condition message: {}", failure["message"]));
        }
        let events = c.items(&[
            "events",
            "-n",
            "team-a",
            "--field-selector",
            "involvedObject.kind=ReplicaSet,involvedObject.name=web,reason=FailedCreate",
        ]);
        let messages: Vec<&str> = events
            .iter()
            .filter_map(|e| e["message"].as_str())
            .collect();
        if !messages.contains(&format!("Error creating: {refusal}").as_str()) {
            return Err(format!("FailedCreate events: {messages:?}"));
        }
        let live = running(&c);
        (live == 2 && rs["status"]["readyReplicas"] == 2)
            .then_some(())
            .ok_or(format!("{live} running; status {}", rs["status"]))
    });
    // It stays held back: the quota is full, not slow.
    let all = c.items(&["pods", "-n", "team-a"]);
    assert_eq!(all.len(), 2, "only what the quota holds was created");
    for pod in &all {
        let resources = &pod["spec"]["containers"][0]["resources"];
        assert_eq!(
            resources,
            &json!({"requests": {"cpu": "500m", "memory": "256Mi"},
                    "limits": {"cpu": "1", "memory": "512Mi"}}),
            "the LimitRange's defaults"
        );
    }
    let describe = c.ok(
        &["describe", "quota", "compute-resources", "-n", "team-a"],
        None,
    );
    for row in [
        ["requests.cpu", "1", "1"],
        ["limits.cpu", "2", "2"],
        ["pods", "2", "4"],
    ] {
        assert!(
            describe.lines().any(|l| l.split_whitespace().eq(row)),
            "{row:?} in\n{describe}"
        );
    }

    c.ok(
        &[
            "patch",
            "quota",
            "compute-resources",
            "-n",
            "team-a",
            "--type=merge",
            "-p",
            r#"{"spec":{"hard":{"requests.cpu":"2","limits.cpu":"4"}}}"#,
        ],
        None,
    );
    c.eventually("the ReplicaSet completes", WAIT, || {
        let rs = c.json(&["rs", "web", "-n", "team-a"]);
        let status = &rs["status"];
        let live = running(&c);
        let done = live == 3
            && status["replicas"] == 3
            && status["readyReplicas"] == 3
            && condition(&rs, "ReplicaFailure").is_none();
        done.then_some(())
            .ok_or(format!("{live} running; status {status}"))
    });
    c.eventually("the quota counts all three", WAIT, || {
        let used =
            c.json(&["quota", "compute-resources", "-n", "team-a"])["status"]["used"].clone();
        let want = json!({"pods": "3", "requests.cpu": "1500m", "requests.memory": "768Mi",
            "limits.cpu": "3", "limits.memory": "1536Mi"});
        (used == want).then_some(()).ok_or(used.to_string())
    });
    c.stop();
}
