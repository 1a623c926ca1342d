//! CronJobs held to kube's rules, cause by cause, on create and update.

use serde_json::{Value, json};

use super::errors;

/// A valid CronJob, as the server has defaulted it, with `spec` merged in
/// (a null removes a field).
fn cronjob(spec: Value) -> Value {
    let mut cj = json!({
        "apiVersion": "batch/v1", "kind": "CronJob",
        "metadata": {"name": "tick", "namespace": "default"},
        "spec": {
            "schedule": "*/5 * * * *",
            "concurrencyPolicy": "Allow",
            "suspend": false,
            "successfulJobsHistoryLimit": 3,
            "failedJobsHistoryLimit": 1,
            "jobTemplate": {"spec": {"template": {"spec": {
                "restartPolicy": "OnFailure",
                "containers": [{"name": "c", "image": "busybox"}]}}}}
        }
    });
    for (k, v) in spec.as_object().unwrap() {
        if v.is_null() {
            cj["spec"].as_object_mut().unwrap().remove(k);
        } else {
            cj["spec"][k] = v.clone();
        }
    }
    cj
}

fn messages(cj: &Value, old: Option<&Value>) -> Vec<String> {
    errors(cj, old)
        .into_iter()
        .map(|(f, m)| format!("{f}: {m}"))
        .collect()
}

#[test]
fn a_valid_cronjob_has_no_errors() {
    assert_eq!(messages(&cronjob(json!({})), None), Vec::<String>::new());
    for zone in ["Europe/Paris", "Asia/Kolkata", "Etc/GMT+5", "UTC"] {
        let cj = cronjob(json!({"timeZone": zone, "schedule": "@every 1h30m"}));
        assert_eq!(messages(&cj, None), Vec::<String>::new(), "{zone}");
    }
}

#[test]
fn each_rule_in_kubes_words() {
    let table = [
        (json!({"schedule": null}), "spec.schedule: Required value"),
        (
            json!({"schedule": "* * *"}),
            "spec.schedule: Invalid value: \"* * *\": expected exactly 5 fields, found 3: [* * *]",
        ),
        (
            json!({"schedule": "61 * * * *"}),
            "spec.schedule: Invalid value: \"61 * * * *\": end of range (61) above maximum (59): 61",
        ),
        (
            json!({"schedule": "TZ=Europe/Paris 0 9 * * *"}),
            "spec.schedule: Invalid value: \"TZ=Europe/Paris 0 9 * * *\": cannot use TZ or CRON_TZ in schedule, use timeZone field instead",
        ),
        (
            json!({"startingDeadlineSeconds": -1}),
            "spec.startingDeadlineSeconds: Invalid value: -1: must be greater than or equal to 0",
        ),
        (
            json!({"timeZone": ""}),
            "spec.timeZone: Invalid value: \"\": timeZone must be nil or non-empty string",
        ),
        (
            json!({"timeZone": "Mars/Olympus"}),
            "spec.timeZone: Invalid value: \"Mars/Olympus\": unknown time zone Mars/Olympus",
        ),
        (
            json!({"timeZone": "Europe/../etc"}),
            "spec.timeZone: Invalid value: \"Europe/../etc\": unknown time zone Europe/../etc",
        ),
        (
            json!({"timeZone": "America/Argentina_Buenos_Aires"}),
            "spec.timeZone: Invalid value: \"America/Argentina_Buenos_Aires\": unknown time zone America/Argentina_Buenos_Aires",
        ),
        (
            json!({"timeZone": "Local"}),
            "spec.timeZone: Invalid value: \"Local\": timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones",
        ),
        (
            json!({"timeZone": "europe/paris"}),
            "spec.timeZone: Invalid value: \"europe/paris\": unknown time zone europe/paris",
        ),
        (
            json!({"concurrencyPolicy": "Sometimes"}),
            "spec.concurrencyPolicy: Unsupported value: \"Sometimes\": supported values: \"Allow\", \"Forbid\", \"Replace\"",
        ),
        (
            json!({"concurrencyPolicy": ""}),
            "spec.concurrencyPolicy: Required value",
        ),
        (
            json!({"successfulJobsHistoryLimit": -1}),
            "spec.successfulJobsHistoryLimit: Invalid value: -1: must be greater than or equal to 0",
        ),
        (
            json!({"failedJobsHistoryLimit": -2}),
            "spec.failedJobsHistoryLimit: Invalid value: -2: must be greater than or equal to 0",
        ),
    ];
    for (spec, says) in table {
        assert_eq!(messages(&cronjob(spec.clone()), None), [says], "{spec}");
    }
    // `local` is both: not explicit, and not a zone Go can open.
    assert_eq!(
        messages(&cronjob(json!({"timeZone": "local"})), None),
        [
            "spec.timeZone: Invalid value: \"local\": timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones",
            "spec.timeZone: Invalid value: \"local\": unknown time zone local",
        ]
    );
}

#[test]
fn the_job_template_is_held_to_a_jobs_rules_less_the_selector() {
    let template = |spec: Value| cronjob(json!({"jobTemplate": {"spec": spec}}));
    let pod = json!({"spec": {"restartPolicy": "Always",
        "containers": [{"name": "c", "image": "busybox"}]}});
    assert_eq!(
        messages(&template(json!({"template": pod, "parallelism": -1})), None),
        [
            "spec.jobTemplate.spec.template.spec.restartPolicy: Unsupported value: \"Always\": supported values: \"OnFailure\", \"Never\"",
            "spec.jobTemplate.spec.parallelism: Invalid value: -1: must be greater than or equal to 0",
        ]
    );
    let ok_pod = json!({"spec": {"restartPolicy": "Never",
        "containers": [{"name": "c", "image": "busybox"}]}});
    assert_eq!(
        messages(
            &template(json!({"template": ok_pod, "manualSelector": true,
                "selector": {"matchLabels": {"app": "x"}}})),
            None
        ),
        [
            "spec.jobTemplate.spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string{\"app\":\"x\"}, MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: `selector` will be auto-generated",
            "spec.jobTemplate.spec.manualSelector: Unsupported value: true: supported values: \"nil\", \"false\"",
        ]
    );
}

#[test]
fn a_new_name_must_leave_room_for_the_job_suffix() {
    let mut cj = cronjob(json!({}));
    cj["metadata"]["name"] = json!("a".repeat(52));
    assert_eq!(messages(&cj, None), Vec::<String>::new());
    let long = "a".repeat(53);
    cj["metadata"]["name"] = json!(long);
    assert_eq!(
        messages(&cj, None),
        [format!(
            "metadata.name: Invalid value: \"{long}\": must be no more than 52 characters"
        )]
    );
    // An update lets an old CronJob keep its name.
    assert_eq!(messages(&cj, Some(&cj)), Vec::<String>::new());
}

#[test]
fn an_update_may_keep_what_an_old_cronjob_had() {
    // A TZ= schedule stored before it was refused: kept, but not beside a timeZone.
    let old = cronjob(json!({"schedule": "TZ=UTC 0 * * * *"}));
    let new = cronjob(json!({"schedule": "TZ=UTC 30 * * * *"}));
    assert_eq!(messages(&new, Some(&old)), Vec::<String>::new());
    let both = cronjob(json!({"schedule": "TZ=UTC 30 * * * *", "timeZone": "UTC"}));
    assert_eq!(
        messages(&both, Some(&old)),
        [
            "spec.schedule: Invalid value: \"TZ=UTC 30 * * * *\": cannot use both timeZone field and TZ or CRON_TZ in schedule"
        ]
    );
    // A zone is checked when it changes, not when it stays.
    let stale = cronjob(json!({"timeZone": "Mars/Olympus"}));
    let mut suspended = stale.clone();
    suspended["spec"]["suspend"] = json!(true);
    assert_eq!(messages(&suspended, Some(&stale)), Vec::<String>::new());
    let moved = cronjob(json!({"timeZone": "Mars/Tharsis"}));
    assert_eq!(
        messages(&moved, Some(&stale)),
        ["spec.timeZone: Invalid value: \"Mars/Tharsis\": unknown time zone Mars/Tharsis"]
    );
}

#[test]
fn kind_errors_runs_the_cronjob_rules() {
    let cj = cronjob(json!({"timeZone": "Mars/Olympus"}));
    assert_eq!(
        crate::validate::kind_errors("batch", "cronjobs", &cj, None, None),
        [(
            "spec.timeZone".to_owned(),
            "Invalid value: \"Mars/Olympus\": unknown time zone Mars/Olympus".to_owned()
        )]
    );
}
