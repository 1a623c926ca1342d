//! `spec.podFailurePolicy`: which rule a failed pod matches, as upstream's
//! `matchPodFailurePolicy` decides it, and what that means for the Job.

use serde_json::Value;
use windlass_sdk::{Error, Object};

/// What a matching rule does with the failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Action {
    /// The Job fails at once.
    FailJob,
    /// The pod's index fails at once (with `backoffLimitPerIndex`).
    FailIndex,
    /// The failure is not counted; the pod is replaced.
    Ignore,
    /// The failure counts, as without a policy.
    Count,
}

/// What a rule looks at.
#[derive(Debug, Clone, PartialEq)]
enum Requirement {
    ExitCodes {
        container: Option<String>,
        /// `NotIn` rather than `In`.
        not_in: bool,
        values: Vec<i64>,
    },
    /// `(type, status)` patterns, any of which matches.
    Conditions(Vec<(String, String)>),
}

#[derive(Debug, Clone, PartialEq)]
struct Rule {
    action: Action,
    on: Requirement,
}

/// The policy's rules, in order.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Policy {
    rules: Vec<Rule>,
}

/// A failed pod's facts the rules look at.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Failure {
    /// Terminated containers' `(name, exit code)`: the regular ones first,
    /// then the init containers, as upstream searches them.
    pub exits: Vec<(String, i64)>,
    /// The pod's conditions, `(type, status)`.
    pub conditions: Vec<(String, String)>,
}

impl Failure {
    pub(crate) fn of(pod: &Object) -> Self {
        let exits = ["status.containerStatuses", "status.initContainerStatuses"]
            .into_iter()
            .filter_map(|f| pod.get(f).and_then(Value::as_array))
            .flatten()
            .filter_map(|s| {
                let code = s["state"]["terminated"]["exitCode"].as_i64()?;
                Some((s["name"].as_str().unwrap_or_default().to_owned(), code))
            })
            .collect();
        let conditions = pod
            .get("status.conditions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|c| {
                Some((
                    c["type"].as_str()?.to_owned(),
                    c["status"].as_str()?.to_owned(),
                ))
            })
            .collect();
        Failure { exits, conditions }
    }
}

/// The rule a failed pod matched: its action, and for `FailJob` the
/// Job's failure message in upstream's words.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Verdict {
    pub action: Action,
    pub message: Option<String>,
}

impl Verdict {
    /// Whether the failure counts towards `backoffLimit`, `status.failed`
    /// and an index's failure count (only `Ignore` does not).
    pub(crate) fn counts(verdict: Option<&Verdict>) -> bool {
        verdict.is_none_or(|v| v.action != Action::Ignore)
    }
}

impl Policy {
    /// The Job's policy, if it has one. The API server has validated it;
    /// what does not read as a rule is a permanent error all the same.
    pub(crate) fn of(job: &Object) -> Result<Option<Self>, Error> {
        let rules = crate::job::policy_rules(job, "podFailurePolicy", Rule::of)?;
        Ok(rules.map(|rules| Policy { rules }))
    }

    /// The first rule `pod` (failed, named `namespace/name`) matches.
    pub(crate) fn judge(&self, namespace: &str, name: &str, pod: &Failure) -> Option<Verdict> {
        self.rules.iter().enumerate().find_map(|(index, rule)| {
            let (action, what) = match &rule.on {
                Requirement::ExitCodes {
                    container,
                    not_in,
                    values,
                } => {
                    let (c, code) = matching_exit(pod, container.as_deref(), *not_in, values)?;
                    (
                        rule.action,
                        format!(
                            "Container {c} for pod {namespace}/{name} failed with exit code {code}"
                        ),
                    )
                }
                Requirement::Conditions(patterns) => {
                    let t = matching_condition(pod, patterns)?;
                    (
                        rule.action,
                        format!("Pod {namespace}/{name} has condition {t}"),
                    )
                }
            };
            let message = (action == Action::FailJob)
                .then(|| format!("{what} matching FailJob rule at index {index}"));
            Some(Verdict { action, message })
        })
    }
}

/// The first terminated container (regular ones, then init ones) whose
/// exit code matches. Exit code 0 never does, whatever the operator: a
/// container that succeeded did not cause the failure.
fn matching_exit<'a>(
    pod: &'a Failure,
    container: Option<&str>,
    not_in: bool,
    values: &[i64],
) -> Option<(&'a str, i64)> {
    pod.exits
        .iter()
        .filter(|(name, code)| *code != 0 && container.is_none_or(|c| c == name))
        .find(|(_, code)| values.contains(code) != not_in)
        .map(|(name, code)| (name.as_str(), *code))
}

/// The first of the pod's conditions that one of the patterns matches.
fn matching_condition<'a>(pod: &'a Failure, patterns: &[(String, String)]) -> Option<&'a str> {
    pod.conditions
        .iter()
        .find(|c| patterns.contains(c))
        .map(|(t, _)| t.as_str())
}

impl Rule {
    fn of(rule: &Value) -> Option<Self> {
        let action = match rule["action"].as_str()? {
            "FailJob" => Action::FailJob,
            "FailIndex" => Action::FailIndex,
            "Ignore" => Action::Ignore,
            "Count" => Action::Count,
            _ => return None,
        };
        let on = if let Some(e) = rule.get("onExitCodes").filter(|e| !e.is_null()) {
            Requirement::ExitCodes {
                container: e["containerName"].as_str().map(str::to_owned),
                not_in: match e["operator"].as_str()? {
                    "In" => false,
                    "NotIn" => true,
                    _ => return None,
                },
                values: e["values"]
                    .as_array()?
                    .iter()
                    .map(Value::as_i64)
                    .collect::<Option<_>>()?,
            }
        } else {
            let patterns = rule["onPodConditions"].as_array()?;
            Requirement::Conditions(
                patterns
                    .iter()
                    .map(|p| {
                        // The server defaults a missing status to True.
                        let status = p["status"].as_str().unwrap_or("True");
                        Some((p["type"].as_str()?.to_owned(), status.to_owned()))
                    })
                    .collect::<Option<_>>()?,
            )
        };
        Some(Rule { action, on })
    }
}
