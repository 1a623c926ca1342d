//! CronJob validation in kube's order and words (`ValidateCronJobCreate`,
//! `ValidateCronJobUpdate`, `validateCronJobSpec` of
//! `pkg/apis/batch/validation`): the schedule parsed by the parser the
//! cronjob plugin runs (`windlass_selector::cron`, robfig/cron's rules and
//! messages), the time zone looked up in the database the plugin bundles,
//! the concurrency policy, counts that are not negative, the job template
//! held to a Job's rules less the selector the controller generates, and
//! the name short enough for the Jobs named after it. The template's pod
//! spec is checked where every template's is (`kind_errors`).

use serde_json::Value;
use windlass_selector::cron::{Schedule, TimeZone};

use crate::causes::{self as field, Causes};

/// The longest CronJob name: its Jobs append `-<minutes since the epoch>`
/// (11 characters) and must stay within a 63-character label.
const MAX_NAME: usize = 52;

/// Problems with the CronJob `cj`. `old` is the stored CronJob an update
/// replaces (`None` on create): an update may keep a `TZ=` schedule and
/// a time zone it already had, and a name past the limit, as upstream's
/// update validation lets old objects be edited and deleted.
pub(crate) fn errors(cj: &Value, old: Option<&Value>) -> Causes {
    let mut errs = Causes::new();
    let spec = &cj["spec"];
    schedule_errors(spec, old.map(|o| &o["spec"]), &mut errs);
    non_negative(spec, "startingDeadlineSeconds", &mut errs);
    if old.is_none_or(|o| o["spec"].get("timeZone") != spec.get("timeZone")) {
        time_zone_errors(&spec["timeZone"], &mut errs);
    }
    concurrency_errors(&spec["concurrencyPolicy"], &mut errs);
    template_errors(&spec["jobTemplate"], &mut errs);
    non_negative(spec, "successfulJobsHistoryLimit", &mut errs);
    non_negative(spec, "failedJobsHistoryLimit", &mut errs);
    let name = cj["metadata"]["name"].as_str().unwrap_or_default();
    if old.is_none() && name.len() > MAX_NAME {
        field::invalid(
            &mut errs,
            "metadata.name",
            &Value::from(name),
            "must be no more than 52 characters",
        );
    }
    errs
}

/// `spec.schedule` (`validateScheduleFormat`): required, parseable, and no
/// `TZ=` prefix unless the stored schedule had one (and then no
/// `timeZone` beside it).
fn schedule_errors(spec: &Value, old: Option<&Value>, errs: &mut Causes) {
    let path = "spec.schedule";
    let schedule = spec["schedule"].as_str().unwrap_or_default();
    if schedule.is_empty() {
        field::required(errs, path, "");
        return;
    }
    let shown = Value::from(schedule);
    if let Err(e) = Schedule::parse(schedule) {
        field::invalid(errs, path, &shown, &e.to_string());
    }
    let had_tz = old.is_some_and(|o| o["schedule"].as_str().is_some_and(|s| s.contains("TZ")));
    let has_zone = !spec["timeZone"].is_null();
    if schedule.contains("TZ") {
        if !had_tz {
            field::invalid(
                errs,
                path,
                &shown,
                "cannot use TZ or CRON_TZ in schedule, use timeZone field instead",
            );
        } else if has_zone {
            field::invalid(
                errs,
                path,
                &shown,
                "cannot use both timeZone field and TZ or CRON_TZ in schedule",
            );
        }
    }
}

/// One part of a zone name as upstream's `validTimeZoneCharacters` allows
/// it: the IANA naming rules, with digits and `+` tolerated for legacy
/// names (`Etc/GMT+5`).
fn zone_part_ok(part: &str) -> bool {
    (1..=14).contains(&part.len())
        && part != "."
        && part != ".."
        && !part.starts_with('-')
        && part
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'-' | b'_' | b'+'))
}

/// `spec.timeZone` (`validateTimeZone`): unset, or a name the database
/// knows that is not `Local`.
fn time_zone_errors(zone: &Value, errs: &mut Causes) {
    let path = "spec.timeZone";
    let Some(name) = zone.as_str() else {
        return;
    };
    if name.is_empty() {
        field::invalid(errs, path, zone, "timeZone must be nil or non-empty string");
        return;
    }
    if !name.split('/').all(zone_part_ok) {
        field::invalid(errs, path, zone, &format!("unknown time zone {name}"));
        return;
    }
    if name.eq_ignore_ascii_case("Local") {
        field::invalid(
            errs,
            path,
            zone,
            "timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones",
        );
    }
    if let Err(e) = TimeZone::load(name) {
        field::invalid(errs, path, zone, &e.to_string());
    }
}

/// `spec.concurrencyPolicy` (`validateConcurrencyPolicy`; the server
/// defaults an empty one to `Allow`).
fn concurrency_errors(policy: &Value, errs: &mut Causes) {
    let path = "spec.concurrencyPolicy";
    match policy.as_str().unwrap_or_default() {
        "Allow" | "Forbid" | "Replace" => {}
        "" => field::required(errs, path, ""),
        _ => field::not_supported(errs, path, policy, &["Allow", "Forbid", "Replace"]),
    }
}

fn non_negative(spec: &Value, key: &str, errs: &mut Causes) {
    if let Some(v) = spec.get(key).filter(|v| !v.is_null())
        && v.as_i64().is_none_or(|n| n < 0)
    {
        field::invalid(
            errs,
            format!("spec.{key}"),
            v,
            "must be greater than or equal to 0",
        );
    }
}

/// `spec.jobTemplate` (`ValidateJobTemplateSpec`): the Job's own rules
/// (`job_errors`) except its selector, which the controller's Jobs get
/// generated, so a template may not set one nor ask for a manual one.
fn template_errors(template: &Value, errs: &mut Causes) {
    let spec = &template["spec"];
    let mut job = Causes::new();
    super::job_errors(&serde_json::json!({"spec": spec}), &mut job);
    errs.extend(
        job.into_iter()
            .filter(|(f, _)| {
                !f.starts_with("spec.selector") && f != "spec.template.metadata.labels"
            })
            .map(|(f, m)| (format!("spec.jobTemplate.{f}"), m)),
    );
    let selector = &spec["selector"];
    if !selector.is_null() {
        field::invalid_raw(
            errs,
            "spec.jobTemplate.spec.selector",
            &go_selector(selector),
            "`selector` will be auto-generated",
        );
    }
    if spec["manualSelector"] == true {
        field::not_supported(
            errs,
            "spec.jobTemplate.spec.manualSelector",
            &Value::Bool(true),
            &["nil", "false"],
        );
    }
}

/// A label selector as Go's `%#v` prints the `metav1.LabelSelector`.
fn go_selector(selector: &Value) -> String {
    let quoted = |v: &Value| format!("{:?}", v.as_str().unwrap_or_default());
    let labels = match selector["matchLabels"].as_object() {
        // Go prints a map's keys sorted; serde_json's map is sorted too.
        Some(m) => {
            let pairs: Vec<String> = m
                .iter()
                .map(|(k, v)| format!("{k:?}:{}", quoted(v)))
                .collect();
            format!("map[string]string{{{}}}", pairs.join(", "))
        }
        None => "map[string]string(nil)".into(),
    };
    let exprs = match selector["matchExpressions"].as_array() {
        Some(list) => {
            let items: Vec<String> = list
                .iter()
                .map(|r| {
                    let values = match r["values"].as_array() {
                        Some(vs) => format!(
                            "[]string{{{}}}",
                            vs.iter().map(quoted).collect::<Vec<_>>().join(", ")
                        ),
                        None => "[]string(nil)".into(),
                    };
                    format!(
                        "v1.LabelSelectorRequirement{{Key:{}, Operator:{}, Values:{values}}}",
                        quoted(&r["key"]),
                        quoted(&r["operator"])
                    )
                })
                .collect();
            format!("[]v1.LabelSelectorRequirement{{{}}}", items.join(", "))
        }
        None => "[]v1.LabelSelectorRequirement(nil)".into(),
    };
    format!("v1.LabelSelector{{MatchLabels:{labels}, MatchExpressions:{exprs}}}")
}

#[cfg(test)]
mod tests;
