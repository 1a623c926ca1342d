//! Events as kube validates them (`ValidateEventCreate`,
//! `ValidateEventUpdate`): every event is held to the legacy rules (its
//! namespace agrees with its object's; one with an `eventTime` names who
//! reported it and what was done), and one written through
//! `events.k8s.io/v1` to the strict ones too (an `eventTime`, a `Normal` or
//! `Warning` type, none of the deprecated fields). The object is in its
//! stored, core form by now, and kube's field paths are the internal
//! type's (`message`, `reportingController`), whichever API was called.

use serde_json::Value;

use crate::causes::{self, Causes};

const REPORTING_INSTANCE_MAX: usize = 128;
const ACTION_MAX: usize = 128;
const REASON_MAX: usize = 128;
const NOTE_MAX: usize = 1024;

fn text(v: &Value) -> &str {
    v.as_str().unwrap_or_default()
}

fn set(v: &Value) -> bool {
    !v.is_null() && v.as_str() != Some("")
}

/// The errors of a created Event; `strict` for one written through
/// `events.k8s.io/v1`.
pub(crate) fn errors(event: &Value, strict: bool) -> Causes {
    let mut errs = legacy(event);
    if !strict {
        return errs;
    }
    series(event, &mut errs);
    if !set(&event["eventTime"]) {
        causes::required(&mut errs, "eventTime", "");
    }
    let type_ = text(&event["type"]);
    if type_ != "Normal" && type_ != "Warning" {
        let detail = format!("has invalid value: {type_}");
        causes::invalid(&mut errs, "type", &Value::from(""), &detail);
    }
    for field in ["firstTimestamp", "lastTimestamp"] {
        if set(&event[field]) {
            causes::invalid(&mut errs, field, &Value::from(""), "needs to be unset");
        }
    }
    if event["count"].as_i64().is_some_and(|c| c != 0) {
        causes::invalid(&mut errs, "count", &Value::from(""), "needs to be unset");
    }
    let source = &event["source"];
    if set(&source["component"]) || set(&source["host"]) {
        causes::invalid(&mut errs, "source", &Value::from(""), "needs to be unset");
    }
    errs
}

/// The errors of an update of `old` to `new` through `events.k8s.io/v1`
/// (through core v1, only the legacy rules hold): what happened, to what
/// and who said so cannot change; a series may grow.
pub(crate) fn update_errors(new: &Value, old: &Value) -> Causes {
    let mut errs = legacy(new);
    if new["series"] != old["series"] {
        series(new, &mut errs);
    }
    for field in [
        "involvedObject",
        "reason",
        "message",
        "source",
        "firstTimestamp",
        "lastTimestamp",
        "count",
        "type",
        "eventTime",
        "action",
        "related",
        "reportingComponent",
        "reportingInstance",
    ] {
        if new[field] != old[field] {
            // kube's paths are its internal type's, which names the
            // reporter as events.k8s.io does.
            let path = match field {
                "reportingComponent" => "reportingController",
                other => other,
            };
            causes::invalid(&mut errs, path, &new[field], "field is immutable");
        }
    }
    errs
}

fn series(event: &Value, errs: &mut Causes) {
    let series = &event["series"];
    if !series.is_object() {
        return;
    }
    if series["count"].as_i64().unwrap_or(0) < 2 {
        causes::invalid(
            errs,
            "series.count",
            &Value::from(""),
            "should be at least 2",
        );
    }
    if !set(&series["lastObservedTime"]) {
        causes::required(errs, "series.lastObservedTime", "");
    }
}

/// kube's `legacyValidateEvent`, which every event passes whichever API
/// wrote it.
fn legacy(event: &Value) -> Causes {
    let mut errs = Causes::new();
    let ns = text(&event["metadata"]["namespace"]);
    let involved_ns = &event["involvedObject"]["namespace"];
    let mismatch = |errs: &mut Causes| {
        let shown = Value::from(text(involved_ns));
        causes::invalid(
            errs,
            "involvedObject.namespace",
            &shown,
            "does not match event.namespace",
        );
    };
    if !set(&event["eventTime"]) {
        // An event about a cluster-scoped object lives in `default` (or
        // nowhere, as old clients wrote it); any other in its object's.
        let agrees = match text(involved_ns) {
            "" => ns.is_empty() || ns == "default",
            theirs => ns == theirs,
        };
        if !agrees {
            mismatch(&mut errs);
        }
    } else {
        if text(involved_ns).is_empty() && ns != "default" && ns != "kube-system" {
            mismatch(&mut errs);
        }
        let controller = &event["reportingComponent"];
        if !set(controller) {
            causes::required(&mut errs, "reportingController", "");
        }
        if let Err(e) = windlass_selector::names::qualified_name(text(controller)) {
            errs.push(("reportingController".into(), format!("Invalid value: {e}")));
        }
        let instance = text(&event["reportingInstance"]);
        if instance.is_empty() {
            causes::required(&mut errs, "reportingInstance", "");
        }
        limit(
            &mut errs,
            "reportingInstance",
            instance,
            REPORTING_INSTANCE_MAX,
        );
        let action = text(&event["action"]);
        if action.is_empty() {
            causes::required(&mut errs, "action", "");
        }
        limit(&mut errs, "action", action, ACTION_MAX);
        let reason = text(&event["reason"]);
        if reason.is_empty() {
            causes::required(&mut errs, "reason", "");
        }
        limit(&mut errs, "reason", reason, REASON_MAX);
        limit(&mut errs, "message", text(&event["message"]), NOTE_MAX);
    }
    if let Err(e) = windlass_selector::names::dns_subdomain(ns) {
        let detail = e.split_once(": ").map_or(e.as_str(), |(_, d)| d);
        causes::invalid(&mut errs, "namespace", &Value::from(ns), detail);
    }
    errs
}

fn limit(errs: &mut Causes, path: &str, value: &str, max: usize) {
    if value.len() > max {
        let detail = format!("can have at most {max} characters");
        causes::invalid(errs, path, &Value::from(""), &detail);
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn paths(errs: &Causes) -> Vec<&str> {
        errs.iter().map(|(p, _)| p.as_str()).collect()
    }

    /// What kube-rs's `Recorder` sends (through events.k8s.io, converted).
    fn recorded() -> Value {
        json!({"metadata": {"name": "web.1", "namespace": "shop"},
            "involvedObject": {"kind": "Deployment", "namespace": "shop", "name": "web"},
            "eventTime": "2026-01-01T00:00:00.000000Z", "type": "Normal", "reason": "Synced",
            "action": "Reconcile", "message": "all good",
            "reportingComponent": "example.com/operator", "reportingInstance": "operator-0"})
    }

    #[test]
    fn a_recorder_event_passes_both_rule_sets() {
        assert_eq!(errors(&recorded(), true), Causes::new());
        assert_eq!(errors(&recorded(), false), Causes::new());
    }

    #[test]
    fn the_strict_rules_want_the_new_fields_and_none_of_the_old() {
        let mut e = recorded();
        e["eventTime"] = Value::Null;
        e["type"] = json!("Odd");
        e["count"] = json!(3);
        e["firstTimestamp"] = json!("2026-01-01T00:00:00Z");
        e["source"] = json!({"component": "kubelet"});
        e["series"] = json!({"count": 1});
        let errs = errors(&e, true);
        assert_eq!(
            paths(&errs),
            [
                "series.count",
                "series.lastObservedTime",
                "eventTime",
                "type",
                "firstTimestamp",
                "count",
                "source"
            ],
            "{errs:?}"
        );
        assert_eq!(errs[3].1, "Invalid value: \"\": has invalid value: Odd");
        // Without an eventTime the legacy rules ask nothing more of it.
        assert_eq!(errors(&e, false), Causes::new());
    }

    #[test]
    fn the_legacy_rules_hold_namespaces_and_reporters() {
        let core = json!({"metadata": {"namespace": "shop"},
            "involvedObject": {"kind": "Pod", "namespace": "other", "name": "p"}});
        let errs = errors(&core, false);
        assert_eq!(
            errs,
            [(
                "involvedObject.namespace".to_owned(),
                "Invalid value: \"other\": does not match event.namespace".to_owned()
            )]
        );
        let node = json!({"metadata": {"namespace": "default"}, "involvedObject": {"kind": "Node", "name": "n"}});
        assert_eq!(errors(&node, false), Causes::new());

        let mut e = recorded();
        for f in [
            "reportingComponent",
            "reportingInstance",
            "action",
            "reason",
        ] {
            e[f] = json!("");
        }
        e["message"] = json!("x".repeat(NOTE_MAX + 1));
        let errs = errors(&e, false);
        assert_eq!(
            paths(&errs),
            [
                "reportingController",
                "reportingController",
                "reportingInstance",
                "action",
                "reason",
                "message"
            ],
            "{errs:?}"
        );
    }

    #[test]
    fn an_update_may_grow_a_series_but_not_change_the_event() {
        let old = recorded();
        let mut new = old.clone();
        new["series"] = json!({"count": 2, "lastObservedTime": "2026-01-01T00:01:00.000000Z"});
        assert_eq!(update_errors(&new, &old), Causes::new());
        new["message"] = json!("changed");
        assert_eq!(
            update_errors(&new, &old),
            [(
                "message".to_owned(),
                "Invalid value: \"changed\": field is immutable".to_owned()
            )]
        );
    }
}
