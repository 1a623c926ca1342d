//! The CronJob controller as a windlass plugin: a Job from
//! `spec.jobTemplate` at each scheduled time, as kube-controller-manager's
//! cronjob controller makes them, so `kubectl create cronjob` and
//! `kubectl get cronjobs,jobs` behave as on a cluster (with the job
//! plugin to run the Jobs).
//!
//! Each reconcile looks at the CronJob and the Jobs it owns:
//! - the most recent scheduled time since the last one (or since the
//!   CronJob was created) that has not had its Job gets one, named
//!   `<cronjob>-<minutes since the epoch>` as upstream names them, with
//!   the `batch.kubernetes.io/cronjob-scheduled-timestamp` annotation;
//!   a time older than `startingDeadlineSeconds` is skipped
//!   (`MissSchedule`), and more than 100 missed times are reported
//!   (`TooManyMissedTimes`), as upstream;
//! - `concurrencyPolicy`: `Allow` runs Jobs side by side, `Forbid` skips a
//!   time while one runs, `Replace` deletes the running ones first;
//! - `suspend` makes no Job;
//! - finished Jobs beyond `successfulJobsHistoryLimit` and
//!   `failedJobsHistoryLimit` are deleted, oldest first;
//! - status: `active` (the running Jobs; one that finishes gets
//!   `SawCompletedJob`), `lastScheduleTime`, `lastSuccessfulTime`; the
//!   outcome asks to be called again at the next scheduled time.
//!
//! Schedules are read on the wall clock of `spec.timeZone` (UTC when
//! unset), with the parser and IANA database the API server validates
//! with (`windlass_selector::cron`, the database bundled into the plugin).
//! As upstream: a zone the database does not know gets an
//! `UnknownTimeZone` warning and no Job (nor a retry: only an edit of the
//! CronJob can fix it), an unparseable schedule an `UnparseableSchedule`
//! warning, and a `TZ=` prefix in the schedule an `UnsupportedSchedule`
//! warning while it is honoured. Job names from the scheduled instant
//! (minutes since the epoch, whatever the zone) make a create idempotent:
//! a reconcile ahead of the cache converges the Job it made.

use std::time::Duration;

use serde_json::{Map, Value, json};
use windlass_sdk::{
    Controller, DeleteOptions, Error, Event, Manifest, Object, ObjectRef, Outcome, Propagation,
    Request, Time, Watch,
};

use windlass_selector::cron::{Schedule, TimeZone};

/// The annotation a Job carries with the time it was scheduled for.
const SCHEDULED: &str = "batch.kubernetes.io/cronjob-scheduled-timestamp";

/// The CronJob controller.
pub struct CronJobController;

impl Controller for CronJobController {
    fn manifest() -> Manifest {
        Manifest::new("cronjob", Watch::kind("batch/v1", "CronJob"))
            .version(env!("CARGO_PKG_VERSION"))
            .owns(Watch::kind("batch/v1", "Job"))
            .max_concurrency(4)
    }

    fn reconcile(req: Request) -> Result<Outcome, Error> {
        reconcile(&req)
    }
}

windlass_sdk::export!(CronJobController);

/// A Job of the CronJob, as the controller weighs it.
struct Child<'a> {
    object: &'a Object,
    /// `Complete` or `Failed`, when it has finished.
    finished: Option<&'static str>,
    finished_at: Option<Time>,
    scheduled: Option<Time>,
}

impl<'a> Child<'a> {
    fn of(object: &'a Object) -> Self {
        let holds = |t: &str| object.condition(t).filter(|c| c["status"] == "True");
        Child {
            object,
            finished: ["Complete", "Failed"]
                .into_iter()
                .find(|t| holds(t).is_some()),
            finished_at: object
                .get_str("status.completionTime")
                .and_then(Time::parse)
                .or_else(|| {
                    holds("Failed")
                        .and_then(|c| c["lastTransitionTime"].as_str())
                        .and_then(Time::parse)
                }),
            scheduled: object.annotation(SCHEDULED).and_then(Time::parse),
        }
    }

    fn sort_time(&self) -> Option<Time> {
        self.scheduled
            .or_else(|| self.object.creation_timestamp().and_then(Time::parse))
    }
}

fn reconcile(req: &Request) -> Result<Outcome, Error> {
    // Gone, or being deleted: its Jobs are garbage-collected.
    let Some(cj) = req.live_object() else {
        return Ok(Outcome::new());
    };
    let now = req.now;
    let children: Vec<Child> = req.owned_of("batch/v1", "Job").map(Child::of).collect();
    let mut out = Outcome::new();
    let mut events: Vec<Event> = Vec::new();
    let suspended = cj.get_bool("spec.suspend") == Some(true);
    // Upstream's order: the zone is checked even when suspended, the
    // schedule only when not.
    let schedule = zone_of(cj, &mut events)
        .filter(|_| !suspended)
        .and_then(|zone| schedule_of(cj, zone, &mut events));

    let mut last_schedule = cj.get_str("status.lastScheduleTime").and_then(Time::parse);
    let mut last_success = cj
        .get_str("status.lastSuccessfulTime")
        .and_then(Time::parse);
    for c in &children {
        if c.finished == Some("Complete")
            && let Some(at) = c.finished_at
            && last_success.is_none_or(|l| at > l)
        {
            last_success = Some(at);
        }
    }
    // Jobs the status still lists as active that have finished: upstream
    // says so once, as it drops them from the list.
    let listed: Vec<&str> = cj
        .get("status.active")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(|r| r["name"].as_str()).collect())
        .unwrap_or_default();
    for c in &children {
        if let Some(how) = c.finished
            && listed.contains(&c.object.name())
        {
            events.push(Event::normal(
                "SawCompletedJob",
                format!("Saw completed job: {}, status: {how}", c.object.name()),
            ));
        }
    }
    let mut active: Vec<&Child> = children
        .iter()
        .filter(|c| c.finished.is_none() && !c.object.is_being_deleted())
        .collect();

    if let Some(schedule) = &schedule {
        let created = cj.creation_timestamp().and_then(Time::parse).unwrap_or(now);
        let mut earliest = last_schedule.unwrap_or(created);
        let deadline = cj
            .get_i64("spec.startingDeadlineSeconds")
            .map(|s| Duration::from_secs(s.max(0) as u64));
        if let Some(d) = deadline
            && now - d > earliest
        {
            earliest = now - d;
        }
        // The most recent time due, and how many were missed.
        let mut due = None;
        let mut missed = 0u32;
        let mut t = earliest;
        while let Some(next) = next_after(schedule, t).filter(|n| *n <= now) {
            missed += 1;
            due = Some(next);
            t = next;
            if missed > 100 {
                due = latest_by(schedule, now);
                break;
            }
        }
        if missed > 100 {
            events.push(Event::warning(
                "TooManyMissedTimes",
                "too many missed start times. Set or decrease .spec.startingDeadlineSeconds or \
                 check clock skew",
            ));
        }
        if let Some(at) = due {
            let name = format!("{}-{}", cj.name(), at.millis().div_euclid(60_000));
            let exists = children.iter().any(|c| c.object.name() == name);
            let late = deadline.is_some_and(|d| at + d < now);
            let policy = cj.get_str("spec.concurrencyPolicy").unwrap_or("Allow");
            if exists {
                // Made already (the status write may have been lost).
                last_schedule = Some(at);
            } else if late {
                events.push(Event::warning(
                    "MissSchedule",
                    format!("Missed scheduled time to start a job: {}", at.to_rfc3339()),
                ));
            } else if policy == "Forbid" && !active.is_empty() {
                // Skipped while one runs; tried again at the next time.
            } else {
                if policy == "Replace" {
                    for c in active.drain(..) {
                        out = delete_job(out, &mut events, c);
                    }
                }
                out = out.apply(new_job(cj, &name, at)?);
                events.push(Event::normal(
                    "SuccessfulCreate",
                    format!("Created job {name}"),
                ));
                last_schedule = Some(at);
            }
        }
        if let Some(next) = next_after(schedule, now) {
            // A little after the minute, so the clock has passed it.
            out = out.requeue_after(now.until(next) + Duration::from_millis(100));
        }
    }

    out = prune_history(cj, &children, out, &mut events);

    let status = status(cj, &active, last_schedule, last_success);
    if cj.get("status") != Some(&status) {
        let mut updated = cj.clone();
        updated.value_mut()["status"] = status;
        out = out.update_status(updated);
    }
    for e in events {
        out = out.event(e);
    }
    Ok(out)
}

/// The zone of `spec.timeZone` (UTC when unset), or `None` with upstream's
/// `UnknownTimeZone` warning when the database does not know it (the API
/// server refuses such zones: one gets here from a server whose database
/// is newer than the plugin's, or was stored before the server checked).
fn zone_of(cj: &Object, events: &mut Vec<Event>) -> Option<TimeZone> {
    let Some(name) = cj.get_str("spec.timeZone") else {
        return Some(TimeZone::utc());
    };
    match TimeZone::load(name) {
        Ok(zone) => Some(zone),
        Err(e) => {
            events.push(Event::warning(
                "UnknownTimeZone",
                format!("invalid timeZone: {name:?}: {e}"),
            ));
            None
        }
    }
}

/// `spec.schedule` on the wall clock of `zone`, as upstream's
/// `formatSchedule` and `cron.ParseStandard` make it: a `TZ=`/`CRON_TZ=`
/// prefix wins over the zone (with a warning), and a schedule that does
/// not parse is reported and not run.
fn schedule_of(cj: &Object, zone: TimeZone, events: &mut Vec<Event>) -> Option<Schedule> {
    let text = cj.get_str("spec.schedule").unwrap_or_default();
    let prefixed = text.contains("TZ");
    if prefixed {
        events.push(Event::warning(
            "UnsupportedSchedule",
            format!(
                "CRON_TZ or TZ used in schedule {text:?} is not officially supported, see \
                 https://kubernetes.io/docs/concepts/workloads/controllers/cron-jobs/ for more \
                 details"
            ),
        ));
    }
    match Schedule::parse(text) {
        Ok(s) if prefixed => Some(s),
        Ok(s) => Some(s.with_zone(zone)),
        Err(e) => {
            events.push(Event::warning(
                "UnparseableSchedule",
                format!("unparseable schedule: {text:?} : {e}"),
            ));
            None
        }
    }
}

/// The first scheduled time after `t` (schedules count whole seconds).
fn next_after(schedule: &Schedule, t: Time) -> Option<Time> {
    schedule
        .next(t.millis().div_euclid(1000))
        .map(|s| Time::from_millis(s * 1000))
}

/// The last scheduled time at or before `t`.
fn latest_by(schedule: &Schedule, t: Time) -> Option<Time> {
    schedule
        .prev(t.millis().div_euclid(1000))
        .map(|s| Time::from_millis(s * 1000))
}

/// Deletes the oldest finished Jobs beyond the history limits.
fn prune_history(
    cj: &Object,
    children: &[Child],
    mut out: Outcome,
    events: &mut Vec<Event>,
) -> Outcome {
    for (kind, field, default) in [
        ("Complete", "spec.successfulJobsHistoryLimit", 3),
        ("Failed", "spec.failedJobsHistoryLimit", 1),
    ] {
        let limit = cj.get_i64(field).unwrap_or(default).max(0) as usize;
        let mut done: Vec<&Child> = children
            .iter()
            .filter(|c| c.finished == Some(kind) && !c.object.is_being_deleted())
            .collect();
        if done.len() <= limit {
            continue;
        }
        done.sort_by_key(|c| c.sort_time());
        for c in &done[..done.len() - limit] {
            out = delete_job(out, events, c);
        }
    }
    out
}

/// Deletes the Job of `c` with its pods, saying so as upstream does.
fn delete_job(out: Outcome, events: &mut Vec<Event>, c: &Child) -> Outcome {
    events.push(Event::normal(
        "SuccessfulDelete",
        format!("Deleted job {}", c.object.name()),
    ));
    out.delete_with(
        c.object.object_ref(),
        DeleteOptions::new().propagation(Propagation::Background),
    )
}

/// A Job for the time `at` from `spec.jobTemplate`.
fn new_job(cj: &Object, name: &str, at: Time) -> Result<Object, Error> {
    let template = cj
        .get("spec.jobTemplate")
        .filter(|t| t.is_object())
        .ok_or_else(|| Error::permanent("spec.jobTemplate is required"))?;
    let meta = &template["metadata"];
    let mut annotations = meta["annotations"].clone();
    if !annotations.is_object() {
        annotations = json!({});
    }
    annotations[SCHEDULED] = json!(at.to_rfc3339());
    let mut metadata = json!({
        "name": name,
        "namespace": cj.namespace().unwrap_or("default"),
        "annotations": annotations,
    });
    if !meta["labels"].is_null() {
        metadata["labels"] = meta["labels"].clone();
    }
    Object::from_value(json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": metadata,
        "spec": template["spec"].clone(),
    }))
}

fn status(
    cj: &Object,
    active: &[&Child],
    last_schedule: Option<Time>,
    last_success: Option<Time>,
) -> Value {
    let mut s: Map<String, Value> = cj
        .get("status")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let mut refs: Vec<Value> = active
        .iter()
        .map(|c| {
            let r: ObjectRef = c.object.object_ref();
            json!({
                "apiVersion": "batch/v1",
                "kind": "Job",
                "name": r.name,
                "namespace": r.namespace,
                "uid": c.object.uid(),
            })
        })
        .collect();
    refs.sort_by(|a, b| a["name"].as_str().cmp(&b["name"].as_str()));
    if refs.is_empty() {
        s.remove("active");
    } else {
        s.insert("active".into(), Value::Array(refs));
    }
    for (key, t) in [
        ("lastScheduleTime", last_schedule),
        ("lastSuccessfulTime", last_success),
    ] {
        if let Some(t) = t {
            s.insert(key.into(), json!(t.to_rfc3339()));
        }
    }
    Value::Object(s)
}

#[cfg(test)]
mod tests;
