//! A Job's `successPolicy` and `managedBy`, in kube's words (upstream's
//! `validateSuccessPolicy` and the `managedBy` check of `validateJobSpec`);
//! the tests are beside the rest of the Job's in `job.rs`.

use serde_json::Value;

use super::{Errors, present, too_many};

const MAX_SUCCESS_RULES: usize = 20;
/// The longest `succeededIndexes`, in bytes.
const MAX_SUCCEEDED_INDEXES: usize = 64 * 1024;
const MAX_MANAGED_BY: usize = 63;

/// `managedBy`: a domain-prefixed path (`IsDomainPrefixedPath`) of at most
/// 63 characters.
pub(super) fn managed_by_errors(spec: &Value, errs: &mut Errors) {
    let Some(v) = present(spec, "managedBy") else {
        return;
    };
    let path = "spec.managedBy";
    let value = v.as_str().unwrap_or_default();
    if value.is_empty() {
        errs.push((path.into(), "Required value".into()));
        return;
    }
    let mut invalid = |shown: &str, detail: &str| {
        errs.push((path.into(), format!("Invalid value: {shown:?}: {detail}")));
    };
    match value.split_once('/') {
        Some((host, rest)) if !host.is_empty() && !rest.is_empty() => {
            if host.len() > 253 {
                invalid(host, "must be no more than 253 characters");
            }
            if !subdomain_shaped(host) {
                invalid(host, crate::validate::SUBDOMAIN_MSG);
            }
            if !rest.bytes().all(is_path_byte) {
                invalid(
                    rest,
                    &format!("Invalid path (regex used for validation is '{HTTP_PATH}')"),
                );
            }
        }
        _ => invalid(
            value,
            "must be a domain-prefixed path (such as \"acme.io/foo\")",
        ),
    }
    if value.len() > MAX_MANAGED_BY {
        errs.push((
            path.into(),
            format!("Too long: may not be more than {MAX_MANAGED_BY} bytes"),
        ));
    }
}

/// The characters of an HTTP path (RFC 3986), as kube's regex lists them.
const HTTP_PATH: &str = r"[A-Za-z0-9/\-._~%!$&'()*+,;=:]+";

fn is_path_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"/-._~%!$&'()*+,;=:".contains(&b)
}

/// kube's subdomain regex, without its length limits (checked apart):
/// dot-separated runs of `[a-z0-9-]` that start and end alphanumeric.
fn subdomain_shaped(s: &str) -> bool {
    let alnum = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    s.split('.').all(|label| {
        let b = label.as_bytes();
        !b.is_empty()
            && alnum(b[0])
            && alnum(b[b.len() - 1])
            && b.iter().all(|&c| alnum(c) || c == b'-')
    })
}

/// The success policy: Indexed Jobs only, 1 to 20 rules, each with
/// `succeededIndexes` and/or `succeededCount` within the completions.
pub(super) fn success_policy_errors(spec: &Value, policy: &Value, errs: &mut Errors) {
    let path = "spec.successPolicy";
    if spec["completionMode"].as_str() != Some("Indexed") {
        errs.push((
            path.into(),
            format!("Invalid value: {policy}: requires indexed completion mode"),
        ));
        return;
    }
    let rules = policy["rules"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    let rules_path = format!("{path}.rules");
    if rules.is_empty() {
        errs.push((
            rules_path.clone(),
            "Required value: at least one rules must be specified when the successPolicy is specified".into(),
        ));
    }
    if rules.len() > MAX_SUCCESS_RULES {
        errs.push((rules_path.clone(), too_many(rules.len(), MAX_SUCCESS_RULES)));
    }
    // Without completions (refused on its own), nothing to hold them to.
    let Some(completions) = spec["completions"].as_i64() else {
        return;
    };
    for (i, rule) in rules.iter().enumerate() {
        success_rule_errors(rule, &format!("{rules_path}[{i}]"), completions, errs);
    }
}

fn success_rule_errors(rule: &Value, path: &str, completions: i64, errs: &mut Errors) {
    let indexes = present(rule, "succeededIndexes");
    let count = present(rule, "succeededCount");
    if indexes.is_none() && count.is_none() {
        errs.push((
            path.into(),
            "Required value: at least one of succeededCount or succeededIndexes must be specified"
                .into(),
        ));
    }
    let mut total = 0;
    if let Some(v) = indexes {
        let indexes_path = format!("{path}.succeededIndexes");
        let text = v.as_str().unwrap_or_default();
        if text.len() > MAX_SUCCEEDED_INDEXES {
            errs.push((
                indexes_path.clone(),
                format!("Too long: may not be more than {MAX_SUCCEEDED_INDEXES} bytes"),
            ));
        }
        match indexes_total(text, completions) {
            Ok(n) => total = n,
            Err(why) => errs.push((
                indexes_path,
                format!("Invalid value: {text:?}: error parsing succeededIndexes: {why}"),
            )),
        }
    }
    if let Some(v) = count {
        let count_path = format!("{path}.succeededCount");
        let n = v.as_i64().unwrap_or_default();
        let mut invalid = |detail: String| {
            errs.push((count_path.clone(), format!("Invalid value: {n}: {detail}")));
        };
        if n < 0 {
            invalid("must be greater than or equal to 0".into());
        }
        if n > completions {
            invalid(format!(
                "must be less than or equal to {completions} (the number of specified completions)"
            ));
        }
        if indexes.is_some() && n > total {
            invalid(format!(
                "must be less than or equal to {total} (the number of indexes in the specified succeededIndexes field)"
            ));
        }
    }
}

/// How many indexes an interval list ("0,2-4") names, each below
/// `completions`, in increasing order; or why it does not read, in
/// upstream's words (`validateIndexesFormat`).
fn indexes_total(text: &str, completions: i64) -> Result<i64, String> {
    if text.is_empty() {
        return Ok(0);
    }
    let mut last: Option<i64> = None;
    let mut total = 0;
    for interval in text.split(',') {
        let (first, end) = index_interval(interval, completions)?;
        if let Some(previous) = last.filter(|&l| l >= first) {
            return Err(format!(
                "non-increasing order, previous: {previous}, current: {first}"
            ));
        }
        total += end - first + 1;
        last = Some(end);
    }
    Ok(total)
}

/// One interval, "3" or "3-5", as upstream's `parseIndexInterval` reads it.
fn index_interval(interval: &str, completions: i64) -> Result<(i64, i64), String> {
    let limits: Vec<&str> = interval.split('-').collect();
    if limits.len() > 2 {
        return Err(format!(
            "the fragment {interval:?} violates the requirement that an index interval can have at most two parts separated by '-'"
        ));
    }
    let index = |text: &str| -> Result<i64, String> {
        let n: i64 = text
            .parse()
            .map_err(|_| format!("cannot convert string to integer for index: {text:?}"))?;
        if n >= completions {
            return Err(format!("too large index: {text:?}"));
        }
        Ok(n)
    };
    let first = index(limits[0])?;
    let Some(&end) = limits.get(1) else {
        return Ok((first, first));
    };
    let end = index(end)?;
    if first >= end {
        return Err(format!(
            "non-increasing order, previous: {first}, current: {end}"
        ));
    }
    Ok((first, end))
}
