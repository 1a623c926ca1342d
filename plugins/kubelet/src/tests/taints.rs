//! `NoExecute` taints: eviction at once, or when `tolerationSeconds` run
//! out from the taint's `timeAdded`.

use std::time::Duration;

use serde_json::json;

use super::*;

fn tainted(time_added: Option<i64>) -> Object {
    node(|n| {
        let mut taint = json!({"key": "maintenance", "value": "now", "effect": "NoExecute"});
        if let Some(at) = time_added {
            taint["timeAdded"] = json!(ts(at));
        }
        n["spec"]["taints"] = json!([taint, {"key": "soft", "effect": "NoSchedule"}]);
    })
}

fn tolerating(name: &str, seconds: Option<i64>) -> Object {
    pod(name, |p| {
        let mut t = json!({"key": "maintenance", "operator": "Exists", "effect": "NoExecute"});
        if let Some(s) = seconds {
            t["tolerationSeconds"] = json!(s);
        }
        p["spec"]["tolerations"] = json!([t]);
    })
}

#[test]
fn pods_that_do_not_tolerate_a_noexecute_taint_are_evicted_at_once() {
    let h = harness(
        tainted(Some(0)),
        [pod("web-1", |_| {}), tolerating("stays", None)],
    );
    let out = h.reconcile_key(&node_key()).unwrap();
    let patches = pod_patches(&out);
    let evicted: Vec<&(&str, &Value)> = patches.iter().filter(|(n, _)| *n == "web-1").collect();
    assert_eq!(evicted.len(), 1);
    let condition = evicted[0].1["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "DisruptionTarget")
        .cloned()
        .unwrap();
    assert_eq!(condition["reason"], "DeletionByTaintManager");
    assert_eq!(
        condition["message"],
        "Taint manager: deleting due to NoExecute taint"
    );
    // A delete with the pod's own grace period, and only that pod.
    assert_eq!(
        pod_deletes(&out),
        [("web-1", &DeleteOptions::new().uid("uid-web-1"))]
    );
    assert!(
        events(&out)
            .contains(&"TaintManagerEviction: Marking for deletion Pod default/web-1".to_owned())
    );
    // The tolerating pod starts as usual.
    assert!(
        patches
            .iter()
            .any(|(n, p)| *n == "stays" && p["status"]["phase"] == "Running")
    );
}

#[test]
fn toleration_seconds_run_out_from_the_taints_time_added() {
    let mut h = harness(tainted(Some(-20)), [tolerating("web-1", Some(60))]);
    let out = step(&mut h, 0);
    assert!(pod_deletes(&out).is_empty());
    // The Lease (10 s) comes first; the eviction is due at 40.
    assert_eq!(out.requeue_after, Some(Duration::from_secs(10)));
    let out = step(&mut h, 35);
    assert!(pod_deletes(&out).is_empty());
    assert_eq!(out.requeue_after, Some(Duration::from_secs(5)));
    let out = step(&mut h, 40);
    assert_eq!(pod_deletes(&out).len(), 1);
    let s = status(&h, "web-1");
    assert!(conditions(&s).contains(&"DisruptionTarget=True(DeletionByTaintManager)".to_owned()));
    // Deleted gracefully (the harness marks it with a fixed timestamp; set
    // it as the API server would): the kubelet terminates it and does not
    // evict it again.
    let mut p = h.get(&pod_key("web-1")).unwrap();
    p.set("metadata.deletionTimestamp", ts(70));
    p.set("metadata.deletionGracePeriodSeconds", 30);
    h.insert(p);
    let out = step(&mut h, 41);
    assert!(pod_deletes(&out).is_empty());
    assert_eq!(events(&out), ["Killing: Stopping container app"]);
    assert!(
        !events(&out)
            .iter()
            .any(|e| e.starts_with("TaintManagerEviction"))
    );
}

#[test]
fn a_taint_without_time_added_gets_one_to_count_from() {
    let mut h = harness(tainted(None), [tolerating("web-1", Some(60))]);
    let out = step(&mut h, 0);
    assert!(pod_deletes(&out).is_empty());
    let patch = out
        .writes
        .iter()
        .find_map(|w| match w {
            Write::MergePatch {
                target,
                subresource: None,
                patch,
            } if target.is("v1", "Node") => Some(patch),
            _ => None,
        })
        .expect("a node patch");
    // Conditional on the taints being as read, and only the NoExecute one.
    assert_eq!(patch["metadata"]["resourceVersion"], "1");
    assert_eq!(patch["spec"]["taints"][0]["timeAdded"], json!(ts(0)));
    assert!(patch["spec"]["taints"][1].get("timeAdded").is_none());
    let out = step(&mut h, 59);
    assert!(pod_deletes(&out).is_empty());
    assert_eq!(pod_deletes(&step(&mut h, 60)).len(), 1);
}

#[test]
fn pods_tolerating_forever_stay() {
    let mut h = harness(tainted(Some(0)), [tolerating("web-1", None)]);
    for at in [0, 100, 10_000] {
        let out = step(&mut h, at);
        assert!(pod_deletes(&out).is_empty());
    }
    assert_eq!(status(&h, "web-1")["phase"], "Running");
}
