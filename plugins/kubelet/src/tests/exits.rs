//! `windlass.dev/exit-after`: containers that end, and what
//! `restartPolicy` makes of it, crash-loop back-off included.

use std::time::Duration;

use serde_json::json;

use super::*;

fn exiting(after: &str, code: Option<&str>, policy: Option<&str>) -> Object {
    pod("job-1", |p| {
        p["metadata"]["annotations"] = json!({"windlass.dev/exit-after": after});
        if let Some(code) = code {
            p["metadata"]["annotations"]["windlass.dev/exit-code"] = json!(code);
        }
        if let Some(policy) = policy {
            p["spec"]["restartPolicy"] = json!(policy);
        }
    })
}

#[test]
fn restart_policy_decides_what_an_exit_does() {
    // (restartPolicy, exit code, phase, restarts, state, Ready)
    for (policy, code, phase, restarts, state, ready) in [
        (None, None, "Running", 1, "running", "Ready=True"),
        (
            Some("Always"),
            Some("1"),
            "Running",
            1,
            "running",
            "Ready=True",
        ),
        (
            Some("OnFailure"),
            Some("0"),
            "Succeeded",
            0,
            "terminated",
            "Ready=False(PodCompleted)",
        ),
        (
            Some("OnFailure"),
            Some("2"),
            "Running",
            1,
            "running",
            "Ready=True",
        ),
        (
            Some("Never"),
            None,
            "Succeeded",
            0,
            "terminated",
            "Ready=False(PodCompleted)",
        ),
        (
            Some("Never"),
            Some("3"),
            "Failed",
            0,
            "terminated",
            "Ready=False(PodFailed)",
        ),
    ] {
        let label = format!("{policy:?} exit {code:?}");
        let mut h = harness(node(|_| {}), [exiting("30s", code, policy)]);
        let out = step(&mut h, 0);
        assert_eq!(out.requeue_after, Some(Duration::from_secs(10)), "{label}");
        step(&mut h, 29);
        assert_eq!(status(&h, "job-1")["phase"], "Running", "{label}");
        step(&mut h, 30);
        let s = status(&h, "job-1");
        assert_eq!(s["phase"], phase, "{label}");
        let c = &s["containerStatuses"][0];
        assert_eq!(c["restartCount"], restarts, "{label}");
        assert!(c["state"].get(state).is_some(), "{label}: {c}");
        assert!(
            conditions(&s).contains(&ready.to_owned()),
            "{label}: {:?}",
            conditions(&s)
        );
        let code: i64 = code.map_or(0, |c| c.parse().unwrap());
        let reason = if code == 0 { "Completed" } else { "Error" };
        let exit = if restarts == 1 {
            &c["lastState"]["terminated"]
        } else {
            &c["state"]["terminated"]
        };
        assert_eq!(exit["exitCode"], code, "{label}");
        assert_eq!(exit["reason"], reason, "{label}");
        assert_eq!(exit["startedAt"], json!(ts(0)), "{label}");
        assert_eq!(exit["finishedAt"], json!(ts(30)), "{label}");
        if phase != "Running" {
            assert!(conditions(&s).contains(&"PodReadyToStartContainers=False".to_owned()));
            // An ended pod stays ended: no more writes, nothing due.
            let later = step(&mut h, 600);
            assert!(pod_patches(&later).is_empty(), "{label}");
        } else {
            // The new run has a new container ID.
            assert_ne!(c["containerID"], exit["containerID"], "{label}");
        }
    }
}

#[test]
fn crash_loops_back_off_10s_20s_40s_up_to_5m() {
    let mut h = harness(node(|_| {}), [exiting("10s", Some("1"), None)]);
    step(&mut h, 0);
    // First exit at 10: restarted at once.
    step(&mut h, 10);
    let c = status(&h, "job-1")["containerStatuses"][0].clone();
    assert_eq!(c["restartCount"], 1);
    assert_eq!(c["state"]["running"]["startedAt"], json!(ts(10)));
    // Each later exit waits twice as long before the next start.
    let mut start = 10;
    for (restarts, wait, shown) in [
        // (restarts so far, back-off in seconds, as kubelet prints it)
        (1, 10_i64, "10s"),
        (2, 20, "20s"),
        (3, 40, "40s"),
        (4, 80, "1m20s"),
        (5, 160, "2m40s"),
        (6, 300, "5m0s"),
        (7, 300, "5m0s"),
    ] {
        let exit = start + 10;
        let out = step(&mut h, exit);
        let s = status(&h, "job-1");
        let c = &s["containerStatuses"][0];
        assert_eq!(s["phase"], "Running");
        assert!(conditions(&s).contains(&"Ready=False(ContainersNotReady)".to_owned()));
        assert_eq!(c["restartCount"], restarts);
        assert_eq!(c["state"]["waiting"]["reason"], "CrashLoopBackOff");
        assert_eq!(
            c["state"]["waiting"]["message"],
            json!(format!(
                "back-off {shown} restarting failed container=app pod=job-1_default(uid-job-1)"
            ))
        );
        assert_eq!(c["lastState"]["terminated"]["finishedAt"], json!(ts(exit)));
        assert!(
            events(&out).contains(
                &"BackOff: Back-off restarting failed container app in pod job-1_default(uid-job-1)"
                    .to_owned()
            ),
            "{:?}",
            events(&out)
        );
        assert_eq!(
            out.requeue_after,
            Some(Duration::from_secs(wait.min(10).unsigned_abs()))
        );
        // Not yet: still waiting, and nothing written.
        let early = step(&mut h, exit + wait - 1);
        assert!(pod_patches(&early).is_empty());
        start = exit + wait;
        let out = step(&mut h, start);
        let c = &status(&h, "job-1")["containerStatuses"][0];
        assert_eq!(c["restartCount"], restarts + 1);
        assert_eq!(c["state"]["running"]["startedAt"], json!(ts(start)));
        assert!(events(&out).contains(&"Started: Started container app".to_owned()));
    }
}

#[test]
fn a_long_absence_is_caught_up_in_one_write() {
    let mut h = harness(node(|_| {}), [exiting("10s", Some("1"), None)]);
    step(&mut h, 0);
    // Runs 0-10 (restarted at once), 10-20 (10 s back-off), 30-40 (20 s),
    // 60-70 (40 s): at 100 it waits to start again at 110.
    let out = step(&mut h, 100);
    assert_eq!(pod_patches(&out).len(), 1);
    let c = &status(&h, "job-1")["containerStatuses"][0];
    assert_eq!(c["restartCount"], 3);
    assert_eq!(c["state"]["waiting"]["reason"], "CrashLoopBackOff");
    assert_eq!(c["lastState"]["terminated"]["finishedAt"], json!(ts(70)));
    assert_eq!(out.requeue_after, Some(Duration::from_secs(10)));
    // Stepping through gives the same status.
    let mut stepped = harness(node(|_| {}), [exiting("10s", Some("1"), None)]);
    for at in [0, 10, 20, 30, 40, 50, 60, 80, 100] {
        step(&mut stepped, at);
    }
    assert_eq!(
        status(&stepped, "job-1")["containerStatuses"],
        status(&h, "job-1")["containerStatuses"]
    );
}

#[test]
fn sub_second_exits_and_bad_annotations() {
    let mut h = harness(node(|_| {}), [exiting("500ms", None, Some("Never"))]);
    let out = step(&mut h, 0);
    // Due half a second after the start.
    assert_eq!(out.requeue_after, Some(Duration::from_millis(500)));
    h.set_now(t(0) + Duration::from_millis(500));
    let out = h.reconcile_key(&node_key()).unwrap();
    h.apply_outcome(&node_key(), &out).unwrap();
    assert_eq!(status(&h, "job-1")["phase"], "Succeeded");

    // Not a Go duration: the containers run on.
    let mut h = harness(
        node(|_| {}),
        [exiting("thirty seconds", None, Some("Never"))],
    );
    step(&mut h, 0);
    step(&mut h, 3600);
    assert_eq!(status(&h, "job-1")["phase"], "Running");
}

#[test]
fn requeue_after_is_the_earliest_due_time() {
    let mut h = harness(node(|_| {}), [exiting("17s", None, Some("Never"))]);
    // The Lease is due in 10 s, the exit in 17 s.
    assert_eq!(step(&mut h, 0).requeue_after, Some(Duration::from_secs(10)));
    // Lease renewed at 10: next at 20, exit at 17.
    assert_eq!(step(&mut h, 10).requeue_after, Some(Duration::from_secs(7)));
    assert_eq!(step(&mut h, 17).requeue_after, Some(Duration::from_secs(3)));
    assert_eq!(status(&h, "job-1")["phase"], "Succeeded");
}

#[test]
fn a_jobs_pod_runs_to_completion_unless_its_annotations_say_otherwise() {
    let owned_by = |kind: &str, p: &mut serde_json::Value| {
        p["spec"]["restartPolicy"] = json!("Never");
        p["metadata"]["ownerReferences"] = json!([{
            "apiVersion": "batch/v1", "kind": kind, "name": "pi",
            "uid": "u-1", "controller": true
        }]);
    };
    let job_pod = pod("job-1", |p| owned_by("Job", p));
    let mut h = harness(node(|_| {}), [job_pod]);
    step(&mut h, 0);
    assert_eq!(status(&h, "job-1")["phase"], "Running");
    step(&mut h, 1);
    let s = status(&h, "job-1");
    assert_eq!(s["phase"], "Succeeded");
    assert_eq!(
        s["containerStatuses"][0]["state"]["terminated"]["reason"],
        "Completed"
    );

    // The annotations still script it.
    let scripted = pod("job-1", |p| {
        owned_by("Job", p);
        p["metadata"]["annotations"] =
            json!({"windlass.dev/exit-after": "5s", "windlass.dev/exit-code": "2"});
    });
    let mut h = harness(node(|_| {}), [scripted]);
    step(&mut h, 0);
    step(&mut h, 1);
    assert_eq!(status(&h, "job-1")["phase"], "Running");
    step(&mut h, 5);
    assert_eq!(status(&h, "job-1")["phase"], "Failed");

    // Another controller's pod runs until deleted.
    let mut h = harness(node(|_| {}), [pod("job-1", |p| owned_by("ReplicaSet", p))]);
    step(&mut h, 0);
    step(&mut h, 600);
    assert_eq!(status(&h, "job-1")["phase"], "Running");
}
