//! `spec.successPolicy` (Indexed Jobs): rules that declare a Job succeeded
//! before every index has, as upstream's `matchSuccessPolicy` reads them.

use std::collections::BTreeSet;

use serde_json::Value;
use windlass_sdk::{Error, Object};

use crate::job::parse_indexes;

/// One rule: the indexes that must all have succeeded, and/or how many of
/// them (or of all indexes, without `succeededIndexes`) must have.
#[derive(Debug, Clone, PartialEq)]
struct Rule {
    /// `succeededIndexes`, within the completions; `None` when the rule has
    /// none.
    indexes: Option<BTreeSet<u32>>,
    /// `succeededCount`.
    count: Option<u32>,
}

/// The policy's rules, in order.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SuccessPolicy {
    rules: Vec<Rule>,
}

impl SuccessPolicy {
    /// The Job's policy, if it has one (its indexes cut to those below
    /// `completions`). The API server has validated it; a rule that does
    /// not read as one is a permanent error all the same.
    pub(crate) fn of(job: &Object, completions: u32) -> Result<Option<Self>, Error> {
        let rules = crate::job::policy_rules(job, "successPolicy", |r| Rule::of(r, completions))?;
        Ok(rules.map(|rules| SuccessPolicy { rules }))
    }

    /// The first rule the succeeded indexes `done` meet, as upstream's
    /// condition message says it ("Matched rules at index 0"). Nothing
    /// matches before some index has succeeded.
    pub(crate) fn matched(&self, done: &BTreeSet<u32>) -> Option<String> {
        if done.is_empty() {
            return None;
        }
        let index = self.rules.iter().position(|r| r.met(done))?;
        Some(format!("Matched rules at index {index}"))
    }
}

impl Rule {
    fn of(rule: &Value, completions: u32) -> Option<Self> {
        let indexes = match rule.get("succeededIndexes").filter(|v| !v.is_null()) {
            None => None,
            Some(v) => {
                let mut set = parse_indexes(v.as_str()?);
                set.retain(|&i| i < completions);
                Some(set)
            }
        };
        let count = match rule.get("succeededCount").filter(|v| !v.is_null()) {
            None => None,
            Some(v) => Some(u32::try_from(v.as_u64()?).ok()?),
        };
        Some(Rule { indexes, count })
    }

    /// Whether the rule is met: every one of its indexes succeeded, or
    /// `succeededCount` of them did (of any index, without indexes). A rule
    /// whose indexes are all out of range never is, as upstream skips it.
    fn met(&self, done: &BTreeSet<u32>) -> bool {
        match (&self.indexes, self.count) {
            (Some(indexes), _) if indexes.is_empty() => false,
            (Some(indexes), count) => {
                let hit = indexes.intersection(done).count();
                hit == indexes.len() || count.is_some_and(|c| hit >= c as usize)
            }
            (None, Some(count)) => done.len() >= count as usize,
            (None, None) => false,
        }
    }
}
