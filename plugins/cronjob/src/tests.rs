//! Native tests of the CronJob controller, through `windlass_sdk::testing`.

use std::time::Duration;

use serde_json::{Value, json};
use windlass_sdk::testing::Harness;
use windlass_sdk::{Object, ObjectRef, Outcome, Time, Write};

use super::CronJobController;

type H = Harness<CronJobController>;

/// `t(s)`: `s` seconds after 2026-03-01T10:00:00Z, when the CronJob is made.
fn t(secs: i64) -> Time {
    let base = Time::parse("2026-03-01T10:00:00Z").unwrap();
    Time::from_millis(base.millis() + secs * 1000)
}

fn cj_ref() -> ObjectRef {
    ObjectRef::new("batch/v1", "CronJob", "default", "tick")
}

fn cronjob(spec: Value) -> Object {
    let mut c = json!({
        "apiVersion": "batch/v1", "kind": "CronJob",
        "metadata": {"name": "tick", "namespace": "default", "uid": "cj-uid",
                     "resourceVersion": "1", "creationTimestamp": t(0).to_rfc3339()},
        "spec": {
            "schedule": "*/1 * * * *",
            "concurrencyPolicy": "Allow",
            "suspend": false,
            "successfulJobsHistoryLimit": 3,
            "failedJobsHistoryLimit": 1,
            "jobTemplate": {
                "metadata": {"labels": {"app": "tick"}},
                "spec": {"template": {"spec": {"restartPolicy": "OnFailure",
                    "containers": [{"name": "c", "image": "busybox"}]}}}
            }
        }
    });
    for (k, v) in spec.as_object().unwrap() {
        c["spec"][k] = v.clone();
    }
    Object::from_value(c).unwrap()
}

fn step(h: &mut H, secs: i64) -> Outcome {
    h.set_now(t(secs));
    let out = h.reconcile_key(&cj_ref()).unwrap();
    h.apply_outcome(&cj_ref(), &out).unwrap();
    out
}

fn jobs(h: &H) -> Vec<String> {
    let mut j: Vec<String> = h
        .list("batch/v1", "Job")
        .iter()
        .map(|j| j.name().to_owned())
        .collect();
    j.sort();
    j
}

fn job_name(minute: i64) -> String {
    format!("tick-{}", t(minute * 60).millis() / 60_000)
}

fn finish(h: &mut H, name: &str, how: &str, secs: i64) {
    let r = ObjectRef::new("batch/v1", "Job", "default", name);
    let mut j = h.get(&r).unwrap();
    j.value_mut()["status"] = json!({
        "conditions": [{"type": how, "status": "True",
                        "lastTransitionTime": t(secs).to_rfc3339()}],
        "completionTime": if how == "Complete" { json!(t(secs).to_rfc3339()) } else { Value::Null },
    });
    h.insert(j);
}

fn events(out: &Outcome) -> Vec<String> {
    out.events.iter().map(ToString::to_string).collect()
}

fn status(h: &H) -> Value {
    h.get(&cj_ref())
        .unwrap()
        .get("status")
        .cloned()
        .unwrap_or(Value::Null)
}

#[test]
fn a_job_at_each_scheduled_time() {
    let mut h = H::new().with_object(cronjob(json!({})));
    let out = step(&mut h, 30);
    assert!(jobs(&h).is_empty());
    assert_eq!(out.requeue_after, Some(Duration::from_millis(30_100)));
    let out = step(&mut h, 61);
    assert_eq!(jobs(&h), [job_name(1)]);
    assert!(events(&out).contains(&format!("SuccessfulCreate: Created job {}", job_name(1))));
    let job = h
        .get(&ObjectRef::new("batch/v1", "Job", "default", job_name(1)))
        .unwrap();
    assert_eq!(job.label("app"), Some("tick"));
    assert_eq!(
        job.annotation("batch.kubernetes.io/cronjob-scheduled-timestamp"),
        Some(t(60).to_rfc3339().as_str())
    );
    assert_eq!(job.controller_ref().unwrap().kind, "CronJob");
    assert_eq!(status(&h)["lastScheduleTime"], json!(t(60).to_rfc3339()));
    // The same minute again: nothing new; the Job shows as active.
    step(&mut h, 70);
    assert_eq!(jobs(&h).len(), 1);
    assert_eq!(status(&h)["active"][0]["name"], job_name(1));
    // It completes: lastSuccessfulTime, and no longer active.
    finish(&mut h, &job_name(1), "Complete", 80);
    let out = step(&mut h, 90);
    assert!(events(&out).contains(&format!(
        "SawCompletedJob: Saw completed job: {}, status: Complete",
        job_name(1)
    )));
    assert!(
        !events(&step(&mut h, 95))
            .iter()
            .any(|e| e.starts_with("SawCompletedJob"))
    );
    let s = status(&h);
    assert!(s.get("active").is_none(), "{s}");
    assert_eq!(s["lastSuccessfulTime"], json!(t(80).to_rfc3339()));
    step(&mut h, 121);
    assert_eq!(jobs(&h), [job_name(1), job_name(2)]);
}

#[test]
fn concurrency_policies() {
    // Forbid: a running Job holds the next time off.
    let mut h = H::new().with_object(cronjob(json!({"concurrencyPolicy": "Forbid"})));
    step(&mut h, 61);
    step(&mut h, 121);
    assert_eq!(jobs(&h), [job_name(1)]);
    // Replace: the running one is deleted for the new one.
    let mut h = H::new().with_object(cronjob(json!({"concurrencyPolicy": "Replace"})));
    step(&mut h, 61);
    let out = step(&mut h, 121);
    assert_eq!(jobs(&h), [job_name(2)]);
    assert!(events(&out).contains(&format!("SuccessfulDelete: Deleted job {}", job_name(1))));
    // Allow: side by side.
    let mut h = H::new().with_object(cronjob(json!({})));
    step(&mut h, 61);
    step(&mut h, 121);
    assert_eq!(jobs(&h).len(), 2);
}

#[test]
fn suspended_makes_nothing() {
    let mut h = H::new().with_object(cronjob(json!({"suspend": true})));
    let out = step(&mut h, 600);
    assert!(jobs(&h).is_empty());
    assert_eq!(out.requeue_after, None);
}

#[test]
fn finished_jobs_beyond_the_limits_are_deleted_oldest_first() {
    let mut h = H::new().with_object(cronjob(json!({"successfulJobsHistoryLimit": 2})));
    for minute in 1..=4 {
        step(&mut h, minute * 60 + 1);
        finish(&mut h, &job_name(minute), "Complete", minute * 60 + 30);
    }
    let out = step(&mut h, 4 * 60 + 40);
    let deleted: Vec<String> = out
        .writes
        .iter()
        .filter_map(|w| match w {
            Write::Delete { target, .. } => Some(target.name.clone()),
            _ => None,
        })
        .collect();
    // The first went when the fourth was made; now the second.
    assert_eq!(deleted, [job_name(2)]);
    assert_eq!(jobs(&h), [job_name(3), job_name(4)]);
}

#[test]
fn too_many_missed_times_are_reported_and_the_latest_is_run() {
    let mut h = H::new().with_object(cronjob(json!({})));
    let out = step(&mut h, 3 * 3600 + 5);
    assert!(
        events(&out)
            .iter()
            .any(|e| e.starts_with("TooManyMissedTimes"))
    );
    assert_eq!(jobs(&h), [job_name(180)]);
    // A starting deadline bounds the look back: no report.
    let mut h = H::new().with_object(cronjob(json!({"startingDeadlineSeconds": 200})));
    let out = step(&mut h, 3 * 3600 + 5);
    assert!(
        !events(&out)
            .iter()
            .any(|e| e.starts_with("TooManyMissedTimes"))
    );
    assert_eq!(jobs(&h), [job_name(180)]);
}

/// Reconciles at `now` (an RFC 3339 instant) and applies the outcome.
fn step_at(h: &mut H, now: &str) -> Outcome {
    h.set_now(Time::parse(now).unwrap());
    let out = h.reconcile_key(&cj_ref()).unwrap();
    h.apply_outcome(&cj_ref(), &out).unwrap();
    out
}

#[test]
fn an_unknown_zone_or_bad_schedule_is_reported_and_not_retried() {
    // A zone the plugin's database lacks (the server's may be newer).
    let mut h = H::new().with_object(cronjob(json!({"timeZone": "Mars/Olympus"})));
    let out = step(&mut h, 3600);
    assert_eq!(
        events(&out),
        ["UnknownTimeZone: invalid timeZone: \"Mars/Olympus\": unknown time zone Mars/Olympus"]
    );
    assert!(jobs(&h).is_empty());
    assert_eq!(out.requeue_after, None);
    // Checked even while suspended, as upstream does.
    let mut h = H::new().with_object(cronjob(
        json!({"timeZone": "europe/paris", "suspend": true}),
    ));
    assert_eq!(
        events(&step(&mut h, 60)),
        ["UnknownTimeZone: invalid timeZone: \"europe/paris\": unknown time zone europe/paris"]
    );
    // A schedule stored before the server validated them.
    let mut h = H::new().with_object(cronjob(json!({"schedule": "* * *"})));
    let out = step(&mut h, 3600);
    assert_eq!(
        events(&out),
        [
            "UnparseableSchedule: unparseable schedule: \"* * *\" : expected exactly 5 fields, found 3: [* * *]"
        ]
    );
    assert!(jobs(&h).is_empty());
    assert_eq!(out.requeue_after, None);
    // UTC by another name is UTC.
    let mut h = H::new().with_object(cronjob(json!({"timeZone": "Etc/UTC"})));
    step(&mut h, 61);
    assert_eq!(jobs(&h), [job_name(1)]);
}

#[test]
fn a_zone_moves_the_utc_instant_with_daylight_saving() {
    // 09:00 in Paris: 08:00 UTC in winter (the CronJob is made on
    // 2026-03-01), 07:00 UTC from 2026-03-29.
    let mut h = H::new().with_object(cronjob(
        json!({"schedule": "0 9 * * *", "timeZone": "Europe/Paris"}),
    ));
    let out = step_at(&mut h, "2026-03-02T07:59:00Z");
    assert!(jobs(&h).is_empty());
    assert_eq!(out.requeue_after, Some(Duration::from_millis(60_100)));
    step_at(&mut h, "2026-03-02T08:00:01Z");
    let winter = Time::parse("2026-03-02T08:00:00Z").unwrap();
    let name = |at: Time| format!("tick-{}", at.millis() / 60_000);
    assert_eq!(jobs(&h), [name(winter)]);
    assert_eq!(
        status(&h)["lastScheduleTime"],
        json!("2026-03-02T08:00:00Z")
    );
    let job = h
        .get(&ObjectRef::new("batch/v1", "Job", "default", name(winter)))
        .unwrap();
    assert_eq!(
        job.annotation("batch.kubernetes.io/cronjob-scheduled-timestamp"),
        Some("2026-03-02T08:00:00Z")
    );
    // Summer time: the day it starts, and after.
    for (now, at) in [
        ("2026-03-29T07:00:05Z", "2026-03-29T07:00:00Z"),
        ("2026-06-15T07:00:05Z", "2026-06-15T07:00:00Z"),
    ] {
        step_at(&mut h, now);
        let at = Time::parse(at).unwrap();
        assert!(jobs(&h).contains(&name(at)), "{:?}", jobs(&h));
        assert_eq!(status(&h)["lastScheduleTime"], json!(at.to_rfc3339()));
    }
}
