//! What the controller reads of a Job: its spec's knobs, and the counts and
//! conditions its status already records.

use std::collections::BTreeSet;
use std::time::Duration;

use serde_json::Value;
use windlass_sdk::{Error, Object, Time};

use crate::policy::Policy;
use crate::success::SuccessPolicy;
use crate::tracking::Uncounted;

/// The `spec.managedBy` of Jobs this controller runs (as upstream's, the
/// default when the field is not set).
pub(crate) const JOB_CONTROLLER: &str = "kubernetes.io/job-controller";

/// The controller named in `spec.managedBy` when it is another than this
/// one: such a Job is left to it, as upstream's job controller leaves it.
pub(crate) fn managed_elsewhere(job: &Object) -> Option<&str> {
    job.get_str("spec.managedBy")
        .filter(|m| *m != JOB_CONTROLLER)
}

/// The spec, with the API server's defaults where a field is missing.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Spec {
    pub parallelism: u32,
    /// `None`: a work queue (done when any pod succeeds and none is left).
    pub completions: Option<u32>,
    pub indexed: bool,
    pub backoff_limit: u32,
    /// `backoffLimitPerIndex` (Indexed Jobs): failures allowed each index
    /// before it is failed and not retried.
    pub backoff_limit_per_index: Option<u32>,
    /// `maxFailedIndexes`: more failed indexes fail the Job at once.
    pub max_failed_indexes: Option<u32>,
    /// `podFailurePolicy`, if any.
    pub policy: Option<Policy>,
    /// `successPolicy` (Indexed Jobs), if any.
    pub success_policy: Option<SuccessPolicy>,
    pub active_deadline: Option<Duration>,
    pub suspend: bool,
    pub ttl_after_finished: Option<Duration>,
    /// `podReplacementPolicy: Failed` (always so with a pod failure
    /// policy, as upstream's `onlyReplaceFailedPods`): a terminating pod is
    /// replaced only once it has failed.
    pub replace_only_failed: bool,
    /// The template's `restartPolicy` is `OnFailure`: container restarts
    /// count against `backoffLimit`.
    pub restarts_on_failure: bool,
}

/// What the status already says.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Stored {
    pub succeeded: u32,
    pub failed: u32,
    pub start_time: Option<Time>,
    pub completion_time: Option<Time>,
    /// As stored, so unchanged ones are written back as they were.
    pub conditions: Vec<Value>,
    pub completed_indexes: BTreeSet<u32>,
    pub failed_indexes: BTreeSet<u32>,
    /// `uncountedTerminatedPods`: pods recorded as ended, not yet counted.
    pub uncounted: Uncounted,
}

impl Stored {
    pub(crate) fn condition(&self, type_: &str) -> Option<&Value> {
        self.conditions.iter().find(|c| c["type"] == type_)
    }

    /// True when the condition `type_` is there and true.
    pub(crate) fn holds(&self, type_: &str) -> bool {
        self.condition(type_).is_some_and(|c| c["status"] == "True")
    }

    /// When the Job finished (`Complete` or `Failed`), if it has: its
    /// `completionTime`, else when the condition became true.
    pub(crate) fn finished_at(&self) -> Option<Option<Time>> {
        let done = ["Complete", "Failed"]
            .into_iter()
            .find_map(|t| self.condition(t).filter(|c| c["status"] == "True"))?;
        Some(
            self.completion_time
                .or_else(|| done["lastTransitionTime"].as_str().and_then(Time::parse)),
        )
    }
}

fn count(job: &Object, field: &str, default: u32) -> Result<u32, Error> {
    Ok(optional_count(job, field)?.unwrap_or(default))
}

fn optional_count(job: &Object, field: &str) -> Result<Option<u32>, Error> {
    match job.get(&format!("spec.{field}")) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v
            .as_u64()
            .and_then(|n| u32::try_from(n).ok())
            .map(Some)
            .ok_or_else(|| Error::permanent(format!("spec.{field}: {v} is not a count"))),
    }
}

/// `backoffLimit` when the Job has none: 6, or with `backoffLimitPerIndex`
/// no limit at all (the API's default, `math.MaxInt32`), since the
/// per-index limits are what bounds the retries then.
fn default_backoff_limit(per_index: Option<u32>) -> u32 {
    if per_index.is_some() {
        i32::MAX as u32
    } else {
        6
    }
}

fn seconds(job: &Object, field: &str) -> Result<Option<Duration>, Error> {
    match job.get(&format!("spec.{field}")) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v
            .as_u64()
            .map(|s| Some(Duration::from_secs(s)))
            .ok_or_else(|| Error::permanent(format!("spec.{field}: {v} is not seconds"))),
    }
}

/// The rules of the policy at `field` of the Job's spec (`podFailurePolicy`,
/// `successPolicy`), each read by `read`; `None` without the policy. The
/// API server has validated it; a rule that does not read as one is a
/// permanent error all the same.
pub(crate) fn policy_rules<R>(
    job: &Object,
    field: &str,
    read: impl Fn(&Value) -> Option<R>,
) -> Result<Option<Vec<R>>, Error> {
    let Some(policy) = job.get(&format!("spec.{field}")).filter(|p| !p.is_null()) else {
        return Ok(None);
    };
    let rules = policy["rules"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    rules
        .iter()
        .enumerate()
        .map(|(i, r)| {
            read(r).ok_or_else(|| {
                Error::permanent(format!("spec.{field}.rules[{i}]: not a rule: {r}"))
            })
        })
        .collect::<Result<_, _>>()
        .map(Some)
}

/// `ttlSecondsAfterFinished`, read on its own for a Job another controller
/// runs (the TTL-after-finished controller still deletes it once finished).
pub(crate) fn ttl_after_finished(job: &Object) -> Result<Option<Duration>, Error> {
    seconds(job, "ttlSecondsAfterFinished")
}

impl Spec {
    pub(crate) fn of(job: &Object) -> Result<Self, Error> {
        let parallelism = count(job, "parallelism", 1)?;
        let completions = match job.get("spec.completions") {
            None | Some(Value::Null) => None,
            Some(_) => Some(count(job, "completions", 1)?),
        };
        let indexed = job.get_str("spec.completionMode") == Some("Indexed");
        if indexed && completions.is_none() {
            return Err(Error::permanent(
                "spec.completions is required when completionMode is Indexed",
            ));
        }
        let backoff_limit_per_index =
            optional_count(job, "backoffLimitPerIndex")?.filter(|_| indexed);
        let policy = Policy::of(job)?;
        let replacement = job.get_str("spec.podReplacementPolicy");
        Ok(Spec {
            parallelism,
            completions,
            indexed,
            backoff_limit: count(
                job,
                "backoffLimit",
                default_backoff_limit(backoff_limit_per_index),
            )?,
            backoff_limit_per_index,
            max_failed_indexes: optional_count(job, "maxFailedIndexes")?
                .filter(|_| backoff_limit_per_index.is_some()),
            replace_only_failed: replacement == Some("Failed") || policy.is_some(),
            policy,
            success_policy: match completions.filter(|_| indexed) {
                Some(c) => SuccessPolicy::of(job, c)?,
                None => None,
            },
            active_deadline: seconds(job, "activeDeadlineSeconds")?,
            suspend: job.get_bool("spec.suspend") == Some(true),
            ttl_after_finished: ttl_after_finished(job)?,
            restarts_on_failure: job.get_str("spec.template.spec.restartPolicy")
                == Some("OnFailure"),
        })
    }
}

impl Stored {
    pub(crate) fn of(job: &Object) -> Self {
        let n = |f: &str| {
            job.get_i64(&format!("status.{f}"))
                .and_then(|n| u32::try_from(n).ok())
                .unwrap_or(0)
        };
        let time = |f: &str| job.get_str(&format!("status.{f}")).and_then(Time::parse);
        let conditions = job
            .get("status.conditions")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        Stored {
            succeeded: n("succeeded"),
            failed: n("failed"),
            start_time: time("startTime"),
            completion_time: time("completionTime"),
            conditions,
            completed_indexes: job
                .get_str("status.completedIndexes")
                .map(parse_indexes)
                .unwrap_or_default(),
            failed_indexes: job
                .get_str("status.failedIndexes")
                .map(parse_indexes)
                .unwrap_or_default(),
            uncounted: Uncounted::of(job),
        }
    }
}

/// The indexes of `status.completedIndexes` ("1,3-5"); what does not parse
/// is skipped.
pub(crate) fn parse_indexes(text: &str) -> BTreeSet<u32> {
    let mut out = BTreeSet::new();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                if let (Ok(a), Ok(b)) = (a.parse::<u32>(), b.parse::<u32>())
                    && a <= b
                    && b - a < 1_000_000
                {
                    out.extend(a..=b);
                }
            }
            None => {
                if let Ok(i) = part.parse() {
                    out.insert(i);
                }
            }
        }
    }
    out
}

/// Indexes as `status.completedIndexes` and `status.failedIndexes` write
/// them: ascending, runs of three or more as ranges, a pair as two numbers
/// ("0-2,5,7,8"), as upstream prints its intervals.
pub(crate) fn format_indexes(indexes: &BTreeSet<u32>) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut run: Option<(u32, u32)> = None;
    let flush = |run: (u32, u32), parts: &mut Vec<String>| {
        parts.push(match run.1 - run.0 {
            0 => run.0.to_string(),
            1 => format!("{},{}", run.0, run.1),
            _ => format!("{}-{}", run.0, run.1),
        })
    };
    for &i in indexes {
        run = match run {
            Some((a, b)) if i == b + 1 => Some((a, i)),
            Some(r) => {
                flush(r, &mut parts);
                Some((i, i))
            }
            None => Some((i, i)),
        };
    }
    if let Some(r) = run {
        flush(r, &mut parts);
    }
    parts.join(",")
}
