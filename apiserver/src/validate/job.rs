//! A Job's policies, in kube's words: `podFailurePolicy` (its rules, their
//! actions, exit codes and pod condition patterns), `backoffLimitPerIndex`
//! and `maxFailedIndexes`, `podReplacementPolicy`, `successPolicy` and
//! `managedBy` (upstream's `validatePodFailurePolicy`, the per-index and
//! `managedBy` checks of `validateJobSpec`, `validatePodReplacementPolicy`,
//! `validateSuccessPolicy`; the last two in `job/success.rs`), and the two
//! that may not change on update.

mod success;

use serde_json::Value;

use success::{managed_by_errors, success_policy_errors};

type Errors = Vec<(String, String)>;

const MAX_RULES: usize = 20;
const MAX_EXIT_CODES: usize = 255;
const MAX_CONDITION_PATTERNS: usize = 20;
/// Above this many completions, limits per index need `maxFailedIndexes`.
const COMPLETIONS_SOFT_LIMIT: i64 = 100_000;
const MAX_FAILED_INDEXES: i64 = 100_000;
const HIGH_COMPLETIONS_LIMIT: i64 = 10_000;

const ACTIONS: [&str; 4] = ["Count", "FailIndex", "FailJob", "Ignore"];
const OPERATORS: [&str; 2] = ["In", "NotIn"];
const STATUSES: [&str; 3] = ["False", "True", "Unknown"];
const REPLACEMENT_POLICIES: [&str; 2] = ["Failed", "TerminatingOrFailed"];

/// Checks the policies of the Job spec `spec`, in upstream's order.
pub(super) fn errors(spec: &Value, errs: &mut Errors) {
    managed_by_errors(spec, errs);
    per_index_errors(spec, errs);
    if let Some(policy) = present(spec, "podFailurePolicy") {
        policy_errors(spec, policy, errs);
    }
    if let Some(policy) = present(spec, "successPolicy") {
        success_policy_errors(spec, policy, errs);
    }
    replacement_errors(spec, errs);
}

/// What an update of the Job spec `old` to `new` may not change among the
/// policies: `managedBy` and `successPolicy` (upstream's
/// `ValidateJobSpecUpdate`; the value is printed as JSON where kube prints
/// a Go struct).
pub(super) fn update_errors(old: &Value, new: &Value, errs: &mut Errors) {
    for field in ["managedBy", "successPolicy"] {
        let (a, b) = (&old[field], &new[field]);
        if a != b {
            errs.push((
                format!("spec.{field}"),
                format!("Invalid value: {b}: field is immutable"),
            ));
        }
    }
}

fn present<'a>(v: &'a Value, key: &str) -> Option<&'a Value> {
    v.get(key).filter(|v| !v.is_null())
}

/// `"a", "b"`: the supported values as kube's `NotSupported` lists them.
fn quoted_list(values: &[&str]) -> String {
    values
        .iter()
        .map(|v| format!("\"{v}\""))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `["a" "b"]`: the valid values as kube's `Required` details print them
/// (Go's `%q` of a slice).
fn go_list(values: &[&str]) -> String {
    let quoted: Vec<String> = values.iter().map(|v| format!("\"{v}\"")).collect();
    format!("[{}]", quoted.join(" "))
}

fn unsupported(value: &str, supported: &[&str]) -> String {
    format!(
        "Unsupported value: \"{value}\": supported values: {}",
        quoted_list(supported)
    )
}

fn too_many(n: usize, max: usize) -> String {
    format!("Too many: {n}: must have at most {max} items")
}

/// `backoffLimitPerIndex` and `maxFailedIndexes`: only for Indexed Jobs,
/// the latter only with the former and within the completions.
fn per_index_errors(spec: &Value, errs: &mut Errors) {
    let per_index = present(spec, "backoffLimitPerIndex");
    let max_failed = present(spec, "maxFailedIndexes");
    if max_failed.is_some() && per_index.is_none() {
        errs.push((
            "spec.backoffLimitPerIndex".into(),
            "Required value: when maxFailedIndexes is specified".into(),
        ));
    }
    if spec["completionMode"].as_str() != Some("Indexed") {
        for (field, v) in [
            ("backoffLimitPerIndex", per_index),
            ("maxFailedIndexes", max_failed),
        ] {
            if let Some(v) = v {
                errs.push((
                    format!("spec.{field}"),
                    format!("Invalid value: {v}: requires indexed completion mode"),
                ));
            }
        }
        return;
    }
    let completions = spec["completions"].as_i64();
    let max_failed_n = max_failed.and_then(Value::as_i64);
    if let (Some(c), Some(m)) = (completions, max_failed_n)
        && m > c
    {
        errs.push((
            "spec.maxFailedIndexes".into(),
            format!("Invalid value: {m}: must be less than or equal to completions"),
        ));
    }
    if let Some(m) = max_failed_n.filter(|&m| m > MAX_FAILED_INDEXES) {
        errs.push((
            "spec.maxFailedIndexes".into(),
            format!("Invalid value: {m}: must be less than or equal to {MAX_FAILED_INDEXES}"),
        ));
    }
    if per_index.is_some() && completions.is_some_and(|c| c > COMPLETIONS_SOFT_LIMIT) {
        high_completions_errors(spec, max_failed_n, errs);
    }
}

/// Limits per index with more than 100 000 completions: bounded failed
/// indexes and parallelism, so the status stays small.
fn high_completions_errors(spec: &Value, max_failed: Option<i64>, errs: &mut Errors) {
    let tail = format!(
        "when completions are above {COMPLETIONS_SOFT_LIMIT} and used with backoff limit per index"
    );
    match max_failed {
        None => errs.push((
            "spec.maxFailedIndexes".into(),
            format!("Required value: must be specified when completions is above {COMPLETIONS_SOFT_LIMIT}"),
        )),
        Some(m) if m > HIGH_COMPLETIONS_LIMIT => errs.push((
            "spec.maxFailedIndexes".into(),
            format!("Invalid value: {m}: must be less than or equal to {HIGH_COMPLETIONS_LIMIT} {tail}"),
        )),
        Some(_) => {}
    }
    if let Some(p) = spec["parallelism"]
        .as_i64()
        .filter(|&p| p > HIGH_COMPLETIONS_LIMIT)
    {
        errs.push((
            "spec.parallelism".into(),
            format!(
                "Invalid value: {p}: must be less than or equal to {HIGH_COMPLETIONS_LIMIT} {tail}"
            ),
        ));
    }
}

/// `podReplacementPolicy`: a known value, and `Failed` with a pod failure
/// policy.
fn replacement_errors(spec: &Value, errs: &mut Errors) {
    let Some(policy) = present(spec, "podReplacementPolicy") else {
        return;
    };
    let value = policy.as_str().unwrap_or_default();
    let supported: &[&str] = if present(spec, "podFailurePolicy").is_some() {
        &["Failed"]
    } else {
        &REPLACEMENT_POLICIES
    };
    if !supported.contains(&value) {
        errs.push((
            "spec.podReplacementPolicy".into(),
            unsupported(value, supported),
        ));
    }
}

/// The pod failure policy: `restartPolicy: Never`, at most 20 rules, each
/// well formed.
fn policy_errors(spec: &Value, policy: &Value, errs: &mut Errors) {
    let restart = &spec["template"]["spec"]["restartPolicy"];
    // Other values than these two are refused on their own already.
    if restart == "OnFailure" {
        errs.push((
            "spec.template.spec.restartPolicy".into(),
            "Invalid value: \"OnFailure\": only \"Never\" is supported when podFailurePolicy is specified".into(),
        ));
    }
    let rules = policy["rules"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    let path = "spec.podFailurePolicy.rules";
    if rules.len() > MAX_RULES {
        errs.push((path.into(), too_many(rules.len(), MAX_RULES)));
    }
    let pod = &spec["template"]["spec"];
    let containers: Vec<&str> = ["containers", "initContainers"]
        .iter()
        .filter_map(|list| pod[*list].as_array())
        .flatten()
        .filter_map(|c| c["name"].as_str())
        .collect();
    let per_index = present(spec, "backoffLimitPerIndex").is_some();
    for (i, rule) in rules.iter().enumerate() {
        rule_errors(rule, &format!("{path}[{i}]"), &containers, per_index, errs);
    }
}

fn rule_errors(rule: &Value, path: &str, containers: &[&str], per_index: bool, errs: &mut Errors) {
    let action_path = format!("{path}.action");
    match rule["action"].as_str().unwrap_or_default() {
        "" => errs.push((
            action_path,
            format!("Required value: valid values: {}", go_list(&ACTIONS)),
        )),
        "FailIndex" if !per_index => errs.push((
            action_path,
            "Invalid value: \"FailIndex\": requires the backoffLimitPerIndex to be set".into(),
        )),
        a if !ACTIONS.contains(&a) => errs.push((action_path, unsupported(a, &ACTIONS))),
        _ => {}
    }
    let exit_codes = present(rule, "onExitCodes");
    let patterns = rule["onPodConditions"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    if let Some(e) = exit_codes {
        exit_codes_errors(e, &format!("{path}.onExitCodes"), containers, errs);
    }
    if !patterns.is_empty() {
        patterns_errors(patterns, &format!("{path}.onPodConditions"), errs);
    }
    let shape = match (exit_codes.is_some(), !patterns.is_empty()) {
        (true, true) => Some("specifying both OnExitCodes and OnPodConditions is not supported"),
        (false, false) => Some("specifying one of OnExitCodes and OnPodConditions is required"),
        _ => None,
    };
    if let Some(detail) = shape {
        errs.push((path.into(), format!("Invalid value: {detail}")));
    }
}

/// Go's `%#v` of the `[]int32` values, as kube prints them in an error.
fn go_int32s(values: Option<&Vec<Value>>) -> String {
    match values {
        None => "[]int32(nil)".into(),
        Some(vs) => {
            let items: Vec<String> = vs.iter().map(Value::to_string).collect();
            format!("[]int32{{{}}}", items.join(", "))
        }
    }
}

fn exit_codes_errors(e: &Value, path: &str, containers: &[&str], errs: &mut Errors) {
    let operator = e["operator"].as_str().unwrap_or_default();
    match operator {
        "" => errs.push((
            format!("{path}.operator"),
            format!("Required value: valid values: {}", go_list(&OPERATORS)),
        )),
        o if !OPERATORS.contains(&o) => {
            errs.push((format!("{path}.operator"), unsupported(o, &OPERATORS)));
        }
        _ => {}
    }
    if let Some(name) = e["containerName"].as_str()
        && !containers.contains(&name)
    {
        errs.push((
            format!("{path}.containerName"),
            format!("Invalid value: \"{name}\": must be one of the container or initContainer names in the pod template"),
        ));
    }
    let values_path = format!("{path}.values");
    let values = e["values"].as_array();
    let list = values.map(Vec::as_slice).unwrap_or_default();
    if list.is_empty() {
        errs.push((
            values_path.clone(),
            format!(
                "Invalid value: {}: at least one value is required",
                go_int32s(values)
            ),
        ));
    } else if list.len() > MAX_EXIT_CODES {
        errs.push((values_path.clone(), too_many(list.len(), MAX_EXIT_CODES)));
    }
    let mut seen = Vec::with_capacity(list.len());
    for (j, v) in list.iter().enumerate() {
        let code = v.as_i64().unwrap_or_default();
        if operator == "In" && code == 0 {
            errs.push((
                format!("{values_path}[{j}]"),
                "Invalid value: 0: must not be 0 for the In operator".into(),
            ));
        }
        if seen.contains(&code) {
            errs.push((
                format!("{values_path}[{j}]"),
                format!("Duplicate value: {code}"),
            ));
        } else {
            seen.push(code);
        }
    }
    let ordered = list
        .windows(2)
        .all(|w| w[0].as_i64().unwrap_or_default() <= w[1].as_i64().unwrap_or_default());
    if !ordered {
        errs.push((
            values_path,
            format!("Invalid value: {}: must be ordered", go_int32s(values)),
        ));
    }
}

const QUALIFIED_NAME_MSG: &str = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";

fn patterns_errors(patterns: &[Value], path: &str, errs: &mut Errors) {
    if patterns.len() > MAX_CONDITION_PATTERNS {
        errs.push((
            path.into(),
            too_many(patterns.len(), MAX_CONDITION_PATTERNS),
        ));
    }
    for (j, p) in patterns.iter().enumerate() {
        let type_ = p["type"].as_str().unwrap_or_default();
        if type_.is_empty() {
            errs.push((
                format!("{path}[{j}].type"),
                "Invalid value: \"\": name part must be non-empty".into(),
            ));
        } else if !super::is_qualified_name(type_) {
            errs.push((
                format!("{path}[{j}].type"),
                format!("Invalid value: \"{type_}\": {QUALIFIED_NAME_MSG}"),
            ));
        }
        let status_path = format!("{path}[{j}].status");
        match p["status"].as_str().unwrap_or_default() {
            "" => errs.push((
                status_path,
                format!("Required value: valid values: {}", go_list(&STATUSES)),
            )),
            s if !STATUSES.contains(&s) => errs.push((status_path, unsupported(s, &STATUSES))),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    /// The errors of a valid Job's spec with `extra` merged over it, as
    /// `field: message` lines.
    fn text(extra: Value) -> Vec<String> {
        let mut spec = json!({
            "selector": {"matchLabels": {"job-name": "pi"}},
            "completions": 4,
            "template": {"metadata": {"labels": {"job-name": "pi"}}, "spec": {
                "restartPolicy": "Never",
                "initContainers": [{"name": "setup", "image": "busybox"}],
                "containers": [{"name": "main", "image": "perl"}]}}
        });
        for (k, v) in extra.as_object().unwrap() {
            spec[k] = v.clone();
        }
        let mut errs = Vec::new();
        super::super::job_errors(&json!({ "spec": spec }), &mut errs);
        errs.iter().map(|(f, m)| format!("{f}: {m}")).collect()
    }

    fn policy(rules: Value) -> Value {
        json!({"podFailurePolicy": {"rules": rules}, "podReplacementPolicy": "Failed"})
    }

    fn with(mut a: Value, b: Value) -> Value {
        for (k, v) in b.as_object().unwrap() {
            a[k] = v.clone();
        }
        a
    }

    #[test]
    fn well_formed_policies_and_limits_pass() {
        let indexed = json!({"completionMode": "Indexed", "backoffLimitPerIndex": 1,
                             "maxFailedIndexes": 4});
        let rules = json!([
            {"action": "FailJob", "onExitCodes": {"containerName": "main", "operator": "In",
                                                 "values": [1, 42]}},
            {"action": "Ignore", "onExitCodes": {"containerName": "setup", "operator": "NotIn",
                                                "values": [0, 3]}},
            {"action": "FailIndex", "onPodConditions": [{"type": "DisruptionTarget",
                                                         "status": "True"}]},
            {"action": "Count", "onPodConditions": [{"type": "example.com/Broken",
                                                     "status": "Unknown"}]}
        ]);
        assert_eq!(text(with(policy(rules), indexed)), Vec::<String>::new());
        assert_eq!(
            text(json!({"podReplacementPolicy": "TerminatingOrFailed"})),
            Vec::<String>::new()
        );
    }

    #[test]
    fn rules_are_held_to_kubes_words() {
        let exit = |action: &str, op: &str, values: Value| json!({"action": action, "onExitCodes": {"operator": op, "values": values}});
        let r = "spec.podFailurePolicy.rules[0]";
        let cases: Vec<(Value, Vec<String>)> = vec![
            (
                json!([{"onExitCodes": {"operator": "In", "values": [1]}}]),
                vec![format!(
                    r#"{r}.action: Required value: valid values: ["Count" "FailIndex" "FailJob" "Ignore"]"#
                )],
            ),
            (
                json!([exit("Retry", "In", json!([1]))]),
                vec![format!(
                    r#"{r}.action: Unsupported value: "Retry": supported values: "Count", "FailIndex", "FailJob", "Ignore""#
                )],
            ),
            (
                json!([exit("FailIndex", "In", json!([1]))]),
                vec![format!(
                    r#"{r}.action: Invalid value: "FailIndex": requires the backoffLimitPerIndex to be set"#
                )],
            ),
            (
                json!([exit("FailJob", "Has", json!([1]))]),
                vec![format!(
                    r#"{r}.onExitCodes.operator: Unsupported value: "Has": supported values: "In", "NotIn""#
                )],
            ),
            (
                json!([{"action": "FailJob", "onExitCodes": {"values": [1]}}]),
                vec![format!(
                    r#"{r}.onExitCodes.operator: Required value: valid values: ["In" "NotIn"]"#
                )],
            ),
            (
                json!([exit("FailJob", "In", json!([0, 2, 2, 1]))]),
                vec![
                    format!(
                        "{r}.onExitCodes.values[0]: Invalid value: 0: must not be 0 for the In operator"
                    ),
                    format!("{r}.onExitCodes.values[2]: Duplicate value: 2"),
                    format!(
                        "{r}.onExitCodes.values: Invalid value: []int32{{0, 2, 2, 1}}: must be ordered"
                    ),
                ],
            ),
            (json!([exit("FailJob", "NotIn", json!([0]))]), vec![]),
            (
                json!([exit("FailJob", "In", json!([]))]),
                vec![format!(
                    "{r}.onExitCodes.values: Invalid value: []int32{{}}: at least one value is required"
                )],
            ),
            (
                json!([exit(
                    "FailJob",
                    "NotIn",
                    json!((1..=256).collect::<Vec<_>>())
                )]),
                vec![format!(
                    "{r}.onExitCodes.values: Too many: 256: must have at most 255 items"
                )],
            ),
            (
                json!([{"action": "FailJob", "onExitCodes": {"containerName": "other",
                                                             "operator": "In", "values": [1]}}]),
                vec![format!(
                    r#"{r}.onExitCodes.containerName: Invalid value: "other": must be one of the container or initContainer names in the pod template"#
                )],
            ),
            (
                json!([{"action": "Ignore", "onExitCodes": {"operator": "In", "values": [1]},
                        "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]}]),
                vec![format!(
                    "{r}: Invalid value: specifying both OnExitCodes and OnPodConditions is not supported"
                )],
            ),
            (
                json!([{"action": "Ignore"}]),
                vec![format!(
                    "{r}: Invalid value: specifying one of OnExitCodes and OnPodConditions is required"
                )],
            ),
            (
                json!([{"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget",
                                                                 "status": "Maybe"}]}]),
                vec![format!(
                    r#"{r}.onPodConditions[0].status: Unsupported value: "Maybe": supported values: "False", "True", "Unknown""#
                )],
            ),
            (
                json!([{"action": "Ignore", "onPodConditions": [{"type": "Disruption Target",
                                                                 "status": "True"}]}]),
                vec![format!(
                    r#"{r}.onPodConditions[0].type: Invalid value: "Disruption Target": {}"#,
                    super::QUALIFIED_NAME_MSG
                )],
            ),
            (
                json!(vec![exit("Count", "In", json!([1])); 21]),
                vec![
                    "spec.podFailurePolicy.rules: Too many: 21: must have at most 20 items"
                        .to_owned(),
                ],
            ),
        ];
        for (rules, want) in cases {
            assert_eq!(text(policy(rules.clone())), want, "{rules}");
        }
    }

    #[test]
    fn a_pod_failure_policy_needs_never_and_failed() {
        let rules = json!([{"action": "Ignore", "onPodConditions": [
            {"type": "DisruptionTarget", "status": "True"}]}]);
        let mut on_failure = policy(rules.clone());
        on_failure["template"] = json!({"metadata": {"labels": {"job-name": "pi"}},
            "spec": {"restartPolicy": "OnFailure", "containers": [{"name": "main"}]}});
        assert_eq!(
            text(on_failure),
            [
                r#"spec.template.spec.restartPolicy: Invalid value: "OnFailure": only "Never" is supported when podFailurePolicy is specified"#
            ]
        );
        let terminating = with(
            policy(rules),
            json!({"podReplacementPolicy": "TerminatingOrFailed"}),
        );
        assert_eq!(
            text(terminating),
            [
                r#"spec.podReplacementPolicy: Unsupported value: "TerminatingOrFailed": supported values: "Failed""#
            ]
        );
        assert_eq!(
            text(json!({"podReplacementPolicy": "Never"})),
            [
                r#"spec.podReplacementPolicy: Unsupported value: "Never": supported values: "Failed", "TerminatingOrFailed""#
            ]
        );
    }

    #[test]
    fn limits_per_index_are_for_indexed_jobs_within_their_completions() {
        let cases = [
            (
                json!({"backoffLimitPerIndex": 1, "maxFailedIndexes": 1}),
                vec![
                    "spec.backoffLimitPerIndex: Invalid value: 1: requires indexed completion mode",
                    "spec.maxFailedIndexes: Invalid value: 1: requires indexed completion mode",
                ],
            ),
            (
                json!({"completionMode": "Indexed", "maxFailedIndexes": 1}),
                vec![
                    "spec.backoffLimitPerIndex: Required value: when maxFailedIndexes is specified",
                ],
            ),
            (
                json!({"completionMode": "Indexed", "backoffLimitPerIndex": 1, "maxFailedIndexes": 5}),
                vec![
                    "spec.maxFailedIndexes: Invalid value: 5: must be less than or equal to completions",
                ],
            ),
            (
                json!({"completionMode": "Indexed", "backoffLimitPerIndex": -1}),
                vec![
                    "spec.backoffLimitPerIndex: Invalid value: -1: must be greater than or equal to 0",
                ],
            ),
            (
                json!({"completionMode": "Indexed", "backoffLimitPerIndex": 1,
                       "completions": 200_000, "parallelism": 20_000}),
                vec![
                    "spec.maxFailedIndexes: Required value: must be specified when completions is above 100000",
                    "spec.parallelism: Invalid value: 20000: must be less than or equal to 10000 when completions are above 100000 and used with backoff limit per index",
                ],
            ),
        ];
        for (extra, want) in cases {
            assert_eq!(text(extra.clone()), want, "{extra}");
        }
    }

    fn indexed(extra: Value) -> Value {
        with(json!({"completionMode": "Indexed"}), extra)
    }

    #[test]
    fn success_policies_are_held_to_kubes_words() {
        let policy = |rules: Value| indexed(json!({"successPolicy": {"rules": rules}}));
        let r = "spec.successPolicy.rules[0]";
        let cases: Vec<(Value, Vec<String>)> = vec![
            (
                policy(json!([{"succeededIndexes": "0,2-3", "succeededCount": 2},
                              {"succeededCount": 4}, {"succeededIndexes": ""}])),
                vec![],
            ),
            (
                json!({"successPolicy": {"rules": [{"succeededCount": 1}]}}),
                vec![
                    r#"spec.successPolicy: Invalid value: {"rules":[{"succeededCount":1}]}: requires indexed completion mode"#.into(),
                ],
            ),
            (
                policy(json!([])),
                vec!["spec.successPolicy.rules: Required value: at least one rules must be specified when the successPolicy is specified".into()],
            ),
            (
                policy(json!(vec![json!({"succeededCount": 1}); 21])),
                vec!["spec.successPolicy.rules: Too many: 21: must have at most 20 items".into()],
            ),
            (
                policy(json!([{}])),
                vec![format!("{r}: Required value: at least one of succeededCount or succeededIndexes must be specified")],
            ),
            (
                policy(json!([{"succeededIndexes": "0,x"}])),
                vec![format!(r#"{r}.succeededIndexes: Invalid value: "0,x": error parsing succeededIndexes: cannot convert string to integer for index: "x""#)],
            ),
            (
                policy(json!([{"succeededIndexes": "1-2-3"}])),
                vec![format!(r#"{r}.succeededIndexes: Invalid value: "1-2-3": error parsing succeededIndexes: the fragment "1-2-3" violates the requirement that an index interval can have at most two parts separated by '-'"#)],
            ),
            (
                policy(json!([{"succeededIndexes": "0-4"}])),
                vec![format!(r#"{r}.succeededIndexes: Invalid value: "0-4": error parsing succeededIndexes: too large index: "4""#)],
            ),
            (
                policy(json!([{"succeededIndexes": "2,1"}])),
                vec![format!(r#"{r}.succeededIndexes: Invalid value: "2,1": error parsing succeededIndexes: non-increasing order, previous: 2, current: 1"#)],
            ),
            (
                policy(json!([{"succeededIndexes": "2-2"}])),
                vec![format!(r#"{r}.succeededIndexes: Invalid value: "2-2": error parsing succeededIndexes: non-increasing order, previous: 2, current: 2"#)],
            ),
            (
                policy(json!([{"succeededCount": 5}])),
                vec![format!("{r}.succeededCount: Invalid value: 5: must be less than or equal to 4 (the number of specified completions)")],
            ),
            (
                policy(json!([{"succeededIndexes": "0-1", "succeededCount": 3}])),
                vec![format!("{r}.succeededCount: Invalid value: 3: must be less than or equal to 2 (the number of indexes in the specified succeededIndexes field)")],
            ),
            (
                policy(json!([{"succeededCount": -1}])),
                vec![format!("{r}.succeededCount: Invalid value: -1: must be greater than or equal to 0")],
            ),
            // Indexes that do not read count as none.
            (
                policy(json!([{"succeededIndexes": "-1", "succeededCount": 1}])),
                vec![
                    format!(r#"{r}.succeededIndexes: Invalid value: "-1": error parsing succeededIndexes: cannot convert string to integer for index: """#),
                    format!("{r}.succeededCount: Invalid value: 1: must be less than or equal to 0 (the number of indexes in the specified succeededIndexes field)"),
                ],
            ),
        ];
        for (extra, want) in cases {
            assert_eq!(text(extra.clone()), want, "{extra}");
        }
    }

    #[test]
    fn managed_by_is_a_short_domain_prefixed_path() {
        let long = format!("example.com/{}", "a".repeat(52));
        let cases: Vec<(&str, Vec<String>)> = vec![
            ("kubernetes.io/job-controller", vec![]),
            ("example.com/queue/v1:main~1", vec![]),
            ("", vec!["spec.managedBy: Required value".into()]),
            (
                "queue",
                vec![r#"spec.managedBy: Invalid value: "queue": must be a domain-prefixed path (such as "acme.io/foo")"#.into()],
            ),
            (
                "/queue",
                vec![r#"spec.managedBy: Invalid value: "/queue": must be a domain-prefixed path (such as "acme.io/foo")"#.into()],
            ),
            (
                "Example.com/queue",
                vec![format!(r#"spec.managedBy: Invalid value: "Example.com": {}"#, super::super::SUBDOMAIN_MSG)],
            ),
            (
                "example.com/a queue",
                vec![r#"spec.managedBy: Invalid value: "a queue": Invalid path (regex used for validation is '[A-Za-z0-9/\-._~%!$&'()*+,;=:]+')"#.into()],
            ),
            (&long, vec!["spec.managedBy: Too long: may not be more than 63 bytes".into()]),
        ];
        for (managed_by, want) in cases {
            assert_eq!(text(json!({"managedBy": managed_by})), want, "{managed_by}");
        }
    }

    #[test]
    fn managed_by_and_the_success_policy_may_not_change() {
        let job = |spec: Value| json!({"spec": spec});
        let rules = json!({"rules": [{"succeededCount": 1}]});
        let old = job(json!({"managedBy": "example.com/queue", "successPolicy": rules}));
        let errs = |new: &Value| -> Vec<String> {
            super::super::update_errors("batch", "jobs", &old, new, "")
                .iter()
                .map(|(f, m)| format!("{f}: {m}"))
                .collect()
        };
        assert_eq!(errs(&old), Vec::<String>::new());
        assert_eq!(
            errs(&job(
                json!({"managedBy": "example.com/other", "successPolicy": rules})
            )),
            [r#"spec.managedBy: Invalid value: "example.com/other": field is immutable"#]
        );
        assert_eq!(
            errs(&job(json!({"managedBy": "example.com/queue"}))),
            ["spec.successPolicy: Invalid value: null: field is immutable"]
        );
        assert_eq!(
            errs(&job(
                json!({"successPolicy": {"rules": [{"succeededCount": 2}]}})
            )),
            [
                "spec.managedBy: Invalid value: null: field is immutable",
                r#"spec.successPolicy: Invalid value: {"rules":[{"succeededCount":2}]}: field is immutable"#,
            ]
        );
    }
}
