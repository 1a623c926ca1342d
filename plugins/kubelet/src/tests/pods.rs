//! Starting pods: Running with every condition, an IP and container
//! statuses; init containers first; nothing written once right.

use serde_json::json;

use super::*;

#[test]
fn a_bound_pod_becomes_running_with_conditions_ip_and_statuses() {
    let mut h = harness(node(|_| {}), [pod("web-1", |_| {})]);
    let out = step(&mut h, 0);
    let patches = pod_patches(&out);
    assert_eq!(patches.len(), 1);
    let (name, patch) = patches[0];
    assert_eq!(name, "web-1");
    // All the kubelet's own: written unconditionally.
    assert!(patch.get("metadata").is_none());

    let s = status(&h, "web-1");
    assert_eq!(s["phase"], "Running");
    assert_eq!(
        conditions(&s),
        [
            "PodReadyToStartContainers=True",
            "Initialized=True",
            "Ready=True",
            "ContainersReady=True",
            "PodScheduled=True",
        ]
    );
    for c in s["conditions"].as_array().unwrap() {
        let want = if c["type"] == "PodScheduled" {
            ts(-1)
        } else {
            ts(0)
        };
        assert_eq!(c["lastTransitionTime"], json!(want), "{c}");
    }
    assert_eq!(s["hostIP"], "172.16.0.3");
    assert_eq!(s["hostIPs"], json!([{"ip": "172.16.0.3"}]));
    let ip = s["podIP"].as_str().unwrap();
    assert!(ip.starts_with("10.244.1."), "{ip}");
    assert_eq!(s["podIPs"], json!([{ "ip": ip }]));
    assert_eq!(s["startTime"], json!(ts(0)));
    assert_eq!(s["qosClass"], "BestEffort");
    let c = &s["containerStatuses"][0];
    assert_eq!(c["name"], "app");
    assert_eq!(c["image"], "nginx:1.27");
    assert!(
        c["imageID"]
            .as_str()
            .unwrap()
            .starts_with("docker.io/library/nginx@sha256:")
    );
    assert!(
        c["containerID"]
            .as_str()
            .unwrap()
            .starts_with("containerd://")
    );
    assert_eq!(c["ready"], true);
    assert_eq!(c["started"], true);
    assert_eq!(c["restartCount"], 0);
    assert_eq!(c["state"], json!({"running": {"startedAt": ts(0)}}));
    assert_eq!(c["lastState"], json!({}));

    assert_eq!(
        events(&out),
        [
            // The node's, on its first report.
            "Starting: Starting kubelet.",
            "NodeHasSufficientMemory: Node node-1 status is now: NodeHasSufficientMemory",
            "NodeHasNoDiskPressure: Node node-1 status is now: NodeHasNoDiskPressure",
            "NodeHasSufficientPID: Node node-1 status is now: NodeHasSufficientPID",
            "NodeAllocatableEnforced: Updated Node Allocatable limit across pods",
            "NodeReady: Node node-1 status is now: NodeReady",
            "Pulled: Container image \"nginx:1.27\" already present on machine",
            "Created: Created container app",
            "Started: Started container app",
        ]
    );
    let about = out.events[6].regarding.as_ref().unwrap();
    assert_eq!(about, &pod_key("web-1"));
}

#[test]
fn init_containers_complete_first_one_after_another() {
    let p = pod("web-1", |p| {
        p["spec"]["initContainers"] = json!([
            {"name": "migrate", "image": "busybox"},
            {"name": "proxy", "image": "envoy", "restartPolicy": "Always"},
            {"name": "warm", "image": "busybox"},
        ]);
    });
    let mut h = harness(node(|_| {}), [p]);
    let out = step(&mut h, 0);
    let s = status(&h, "web-1");
    assert_eq!(s["phase"], "Running");
    let init = s["initContainerStatuses"].as_array().unwrap();
    let names: Vec<&str> = init.iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["migrate", "proxy", "warm"]);
    for c in [&init[0], &init[2]] {
        let done = &c["state"]["terminated"];
        assert_eq!(done["exitCode"], 0);
        assert_eq!(done["reason"], "Completed");
        assert_eq!(c["ready"], true);
        assert_eq!(c["started"], false);
    }
    // A sidecar keeps running.
    assert_eq!(init[1]["state"], json!({"running": {"startedAt": ts(0)}}));
    assert_eq!(init[1]["ready"], true);
    assert_eq!(
        s["containerStatuses"][0]["state"]["running"]["startedAt"],
        json!(ts(0))
    );
    // Started in order: the init containers, then the app.
    let started: Vec<String> = events(&out)
        .into_iter()
        .filter(|e| e.starts_with("Started"))
        .collect();
    assert_eq!(
        started,
        [
            "Started: Started container migrate",
            "Started: Started container proxy",
            "Started: Started container warm",
            "Started: Started container app",
        ]
    );
}

#[test]
fn nothing_is_written_once_the_status_is_right() {
    let pods = (1..=3).map(|i| pod(&format!("web-{i}"), |_| {}));
    let mut h = harness(node(|_| {}), pods);
    assert_eq!(h.converge(&node_key(), 5).unwrap(), 1);
    for at in [0, 3, 9] {
        h.set_now(t(at));
        let out = h.reconcile_key(&node_key()).unwrap();
        assert!(pod_patches(&out).is_empty(), "at {at}: {:?}", out.writes);
        assert!(out.events.is_empty());
    }
    // Someone else's change to the status is put right.
    let mut p = h.get(&pod_key("web-2")).unwrap();
    p.set("status.containerStatuses.0.ready", false);
    h.insert(p);
    let out = step(&mut h, 9);
    assert_eq!(pod_patches(&out).len(), 1);
    assert_eq!(status(&h, "web-2")["containerStatuses"][0]["ready"], true);
}

#[test]
fn pods_on_a_node_get_distinct_addresses_in_its_cidr() {
    let pods = (0..20).map(|i| pod(&format!("web-{i}"), |_| {}));
    let mut h = harness(
        node(|n| n["spec"] = json!({"podCIDR": "10.9.8.0/26"})),
        pods,
    );
    step(&mut h, 0);
    let mut ips: Vec<String> = (0..20)
        .map(|i| {
            status(&h, &format!("web-{i}"))["podIP"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert!(ips.iter().all(|ip| ip.starts_with("10.9.8.")), "{ips:?}");
    ips.sort();
    ips.dedup();
    assert_eq!(ips.len(), 20);
    // A pod that already has an address keeps it.
    let before = status(&h, "web-3")["podIP"].clone();
    let mut p = h.get(&pod_key("web-3")).unwrap();
    p.set("status.containerStatuses", json!([]));
    h.insert(p);
    step(&mut h, 1);
    assert_eq!(status(&h, "web-3")["podIP"], before);
}

#[test]
fn host_network_pods_use_the_node_address_and_qos_follows_resources() {
    let p = pod("web-1", |p| {
        p["spec"]["hostNetwork"] = json!(true);
        p["spec"]["containers"][0]["resources"] =
            json!({"limits": {"cpu": "500m", "memory": "256Mi"}});
    });
    let mut h = harness(node(|_| {}), [p]);
    step(&mut h, 0);
    let s = status(&h, "web-1");
    assert_eq!(s["podIP"], "172.16.0.3");
    assert_eq!(s["qosClass"], "Guaranteed");
}

#[test]
fn readiness_gates_hold_ready_back() {
    let p = pod("web-1", |p| {
        p["spec"]["readinessGates"] = json!([{"conditionType": "example.com/lb"}]);
    });
    let mut h = harness(node(|_| {}), [p]);
    step(&mut h, 0);
    let s = status(&h, "web-1");
    assert!(conditions(&s).contains(&"Ready=False(ReadinessGatesNotReady)".to_owned()));
    assert!(conditions(&s).contains(&"ContainersReady=True".to_owned()));
    // The gate's controller sets its condition: Ready follows, and the
    // gate's condition is kept.
    let mut p = h.get(&pod_key("web-1")).unwrap();
    let mut cs = s["conditions"].as_array().unwrap().clone();
    cs.insert(0, json!({"type": "example.com/lb", "status": "True"}));
    p.set("status.conditions", json!(cs));
    let rv = p.resource_version().unwrap().to_owned();
    h.insert(p);
    let out = step(&mut h, 1);
    // With another component's condition in the list, the patch applies
    // only to the pod as read.
    assert_eq!(
        pod_patches(&out)[0].1["metadata"]["resourceVersion"],
        json!(rv)
    );
    let s = status(&h, "web-1");
    assert_eq!(
        conditions(&s)[..4],
        [
            "example.com/lb=True",
            "PodReadyToStartContainers=True",
            "Initialized=True",
            "Ready=True",
        ]
    );
}

/// `kubectl debug`: an ephemeral container added to a running pod starts
/// when the kubelet next sees the pod (`Pulled`, `Created`, `Started`), and
/// runs from then on, never ready; the pod's own containers are untouched.
#[test]
fn an_ephemeral_container_starts_once_and_is_never_ready() {
    let mut h = harness(node(|_| {}), [pod("web-1", |_| {})]);
    step(&mut h, 0);
    let mut debugged = h.get(&pod_key("web-1")).unwrap().clone().into_value();
    debugged["spec"]["ephemeralContainers"] =
        json!([{"name": "dbg", "image": "busybox", "targetContainerName": "app"}]);
    h.insert(Object::from_value(debugged).unwrap());
    let out = step(&mut h, 5);
    assert_eq!(
        events(&out),
        [
            "Pulled: Container image \"busybox\" already present on machine",
            "Created: Created container dbg",
            "Started: Started container dbg",
        ]
    );
    let s = status(&h, "web-1");
    let e = &s["ephemeralContainerStatuses"][0];
    assert_eq!(e["name"], "dbg");
    assert_eq!(e["image"], "busybox");
    assert_eq!(e["ready"], false);
    assert_eq!(e["state"]["running"]["startedAt"], json!(ts(5)));
    assert_eq!(s["containerStatuses"][0]["ready"], true);
    assert_eq!(
        s["containerStatuses"][0]["state"]["running"]["startedAt"],
        json!(ts(0))
    );
    // Nothing changes after.
    let out = step(&mut h, 10);
    assert!(pod_patches(&out).is_empty() && events(&out).is_empty());
}
