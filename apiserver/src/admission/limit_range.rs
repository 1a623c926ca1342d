//! LimitRange, as the API server enforces it: the defaulting of its items,
//! its validation (a range that contradicts itself is `422 Invalid`), the
//! defaults it fills into new pods, and the bounds it holds pods and claims
//! to (`403 Forbidden`, with upstream's `LimitRanger` messages).

use std::cell::OnceCell;
use std::collections::BTreeSet;
use std::ops::Deref;

use serde_json::{Map, Value};
use windlass_selector::resources::{ResourceList, parse_list};
use windlass_selector::{PodResources, Quantity};

use super::Causes;

const CONTAINER: &str = "Container";
const POD: &str = "Pod";
const CLAIM: &str = "PersistentVolumeClaim";

/// The largest value the API server compares in milli-units (`MaxMilliValue`).
const MAX_MILLI_VALUE: i128 = (i64::MAX / 1000) as i128;

/// The annotation recording which defaults a pod was given.
const ANNOTATION: &str = "kubernetes.io/limit-ranger";

/// One entry of `spec.limits`, its quantities parsed (unparsable ones left
/// out: they were refused when the range was written).
#[derive(Debug, Default, Clone)]
struct Item {
    type_: String,
    max: ResourceList,
    min: ResourceList,
    default: ResourceList,
    default_request: ResourceList,
    ratio: ResourceList,
}

/// One item, defaulted (ranges stored before defaulting existed get the
/// same treatment as new ones).
fn item(raw: &Value) -> Item {
    let list = |v: &Value| parse_list(v).unwrap_or_default();
    let mut l = raw.clone();
    default_item(&mut l);
    Item {
        type_: l["type"].as_str().unwrap_or_default().to_owned(),
        max: list(&l["max"]),
        min: list(&l["min"]),
        default: list(&l["default"]),
        default_request: list(&l["defaultRequest"]),
        ratio: list(&l["maxLimitRequestRatio"]),
    }
}

/// What a range fills into a container's requests or limits: each name,
/// sorted, with its value as stored (canonical) and parsed; and all of
/// them as JSON and parsed, to copy whole into a container that has none
/// (most pods a range defaults).
#[derive(Debug, Clone, Default)]
struct Defaults {
    each: Vec<(String, Value, Quantity)>,
    json: Map<String, Value>,
    list: ResourceList,
}

impl Defaults {
    fn of(list: ResourceList) -> Self {
        let each: Vec<_> = list
            .iter()
            .map(|(k, q)| (k.clone(), Value::String(q.to_string()), *q))
            .collect();
        let json = each
            .iter()
            .map(|(k, v, _)| (k.clone(), v.clone()))
            .collect();
        Self { each, json, list }
    }

    fn is_empty(&self) -> bool {
        self.each.is_empty()
    }
}

/// A stored LimitRange as admission reads it: its items, and the container
/// defaults they give, ready to insert.
#[derive(Debug, Clone)]
pub(super) struct Range {
    items: Vec<Item>,
    default_requests: Defaults,
    default_limits: Defaults,
}

impl Range {
    pub(super) fn of(lr: &Value) -> Self {
        let items: Vec<Item> = lr["spec"]["limits"]
            .as_array()
            .into_iter()
            .flatten()
            .map(item)
            .collect();
        // A later `Container` item's default wins, as upstream's loop does.
        let mut default_requests = ResourceList::new();
        let mut default_limits = ResourceList::new();
        for item in items.iter().filter(|i| i.type_ == CONTAINER) {
            default_requests.extend(item.default_request.clone());
            default_limits.extend(item.default.clone());
        }
        Self {
            items,
            default_requests: Defaults::of(default_requests),
            default_limits: Defaults::of(default_limits),
        }
    }
}

/// Fills a `Container` item's gaps as the API server's defaulting does: a
/// default limit from `max`, a default request from the default limit, else
/// from `min`.
fn default_item(item: &mut Value) {
    if item["type"] != CONTAINER {
        return;
    }
    let copy = |item: &mut Value, from: &str, to: &str| {
        let Some(source) = item[from].as_object().cloned() else {
            return;
        };
        if !item[to].is_object() {
            item[to] = Value::Object(Map::new());
        }
        let target = item[to].as_object_mut().expect("made an object above");
        for (k, v) in source {
            target.entry(k).or_insert(v);
        }
        if target.is_empty() {
            item.as_object_mut().map(|m| m.remove(to));
        }
    };
    copy(item, "max", "default");
    copy(item, "default", "defaultRequest");
    copy(item, "min", "defaultRequest");
}

/// Applies [`default_item`] to every item of a LimitRange being written.
pub(super) fn default_range(lr: &mut Value) {
    if let Some(limits) = lr["spec"]["limits"].as_array_mut() {
        limits.iter_mut().for_each(default_item);
    }
}

fn is_standard_container_resource(name: &str) -> bool {
    matches!(name, "cpu" | "memory" | "ephemeral-storage") || name.starts_with("hugepages-")
}

/// Resources whose request must equal their limit (no overcommit).
fn overcommit_allowed(name: &str) -> bool {
    !(name.starts_with("hugepages-") || (name.contains('/') && !name.contains("kubernetes.io/")))
}

/// LimitRange validation, after defaulting (`ValidateLimitRange`).
pub(super) fn errors(lr: &Value, errs: &mut Causes) {
    let mut seen = BTreeSet::new();
    for (i, raw) in lr["spec"]["limits"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        let at = format!("spec.limits[{i}]");
        let item = item(raw);
        let t = item.type_.as_str();
        if !matches!(t, CONTAINER | POD | CLAIM) && !t.contains('/') {
            errs.push((
                format!("{at}.type"),
                format!("Invalid value: {t:?}: must be a standard limit type or fully qualified"),
            ));
        }
        if !seen.insert(t.to_owned()) {
            errs.push((format!("{at}.type"), format!("Duplicate value: {t:?}")));
        }
        let mut names = BTreeSet::new();
        let mut check_names = |field: &str, list: &ResourceList, errs: &mut Causes| {
            for k in list.keys() {
                names.insert(k.clone());
                if matches!(t, POD | CONTAINER)
                    && !k.contains('/')
                    && !is_standard_container_resource(k)
                {
                    errs.push((
                        format!("{at}.{field}[{k}]"),
                        format!("Invalid value: {k:?}: must be a standard resource for containers"),
                    ));
                }
            }
        };
        check_names("max", &item.max, errs);
        check_names("min", &item.min, errs);
        if t == POD {
            for (field, list) in [
                ("default", &item.default),
                ("defaultRequest", &item.default_request),
            ] {
                if !list.is_empty() {
                    errs.push((
                        format!("{at}.{field}"),
                        "Forbidden: may not be specified when `type` is 'Pod'".into(),
                    ));
                }
            }
        } else {
            check_names("default", &item.default, errs);
            check_names("defaultRequest", &item.default_request, errs);
        }
        if t == CLAIM && !item.min.contains_key("storage") && !item.max.contains_key("storage") {
            errs.push((
                format!("{at}.limits"),
                "Required value: either minimum or maximum storage value is required, but neither was provided".into(),
            ));
        }
        check_names("maxLimitRequestRatio", &item.ratio, errs);
        for k in &names {
            bound_errors(&at, k, &item, t == POD, errs);
        }
    }
}

/// The comparisons between one resource's bounds in one item.
fn bound_errors(at: &str, k: &str, item: &Item, pod: bool, errs: &mut Causes) {
    let min = item.min.get(k);
    let max = item.max.get(k);
    let (default, default_request) = if pod {
        (None, None)
    } else {
        (item.default.get(k), item.default_request.get(k))
    };
    let ratio = item.ratio.get(k);
    let mut invalid = |field: &str, value: &Quantity, why: String| {
        errs.push((
            format!("{at}.{field}[{k}]"),
            format!("Invalid value: \"{value}\": {why}"),
        ));
    };
    if let (Some(min), Some(max)) = (min, max)
        && min > max
    {
        invalid(
            "min",
            min,
            format!("min value {min} is greater than max value {max}"),
        );
    }
    if let (Some(dr), Some(min)) = (default_request, min)
        && min > dr
    {
        invalid(
            "defaultRequest",
            dr,
            format!("min value {min} is greater than default request value {dr}"),
        );
    }
    if let (Some(dr), Some(max)) = (default_request, max)
        && dr > max
    {
        invalid(
            "defaultRequest",
            dr,
            format!("default request value {dr} is greater than max value {max}"),
        );
    }
    if let (Some(dr), Some(d)) = (default_request, default)
        && dr > d
    {
        invalid(
            "defaultRequest",
            dr,
            format!("default request value {dr} is greater than default limit value {d}"),
        );
    }
    if let (Some(d), Some(min)) = (default, min)
        && min > d
    {
        invalid(
            "default",
            min,
            format!("min value {min} is greater than default value {d}"),
        );
    }
    if let (Some(d), Some(max)) = (default, max)
        && d > max
    {
        invalid(
            "default",
            max,
            format!("default value {d} is greater than max value {max}"),
        );
    }
    if let Some(r) = ratio {
        if *r < Quantity::from_units(1) {
            invalid(
                "maxLimitRequestRatio",
                r,
                format!("ratio {r} is less than 1"),
            );
        }
        if let (Some(min), Some(max)) = (min, max) {
            let (mut rv, mut minv, mut maxv) = (r.value() as f64, min.value(), max.value());
            if r.value() < MAX_MILLI_VALUE && minv < MAX_MILLI_VALUE && maxv < MAX_MILLI_VALUE {
                rv = r.milli_value() as f64 / 1000.0;
                minv = min.milli_value();
                maxv = max.milli_value();
            }
            let limit = maxv as f64 / minv as f64;
            if rv > limit {
                invalid(
                    "maxLimitRequestRatio",
                    r,
                    format!("ratio {r} is greater than max/min = {limit:.6}"),
                );
            }
        }
    }
    if let (Some(d), Some(dr)) = (default, default_request)
        && !overcommit_allowed(k)
        && d != dr
    {
        invalid(
            "defaultRequest",
            dr,
            format!("default value {d} must equal to defaultRequest value {dr} in {k}"),
        );
    }
}

/// Fills missing container requests and limits from the ranges'
/// `defaultRequest` and `default` (`PodMutateLimitFunc`), range by range,
/// recording what was set in the `kubernetes.io/limit-ranger` annotation.
/// `parsed` (the pod's resources as read before) gets the same defaults.
pub(super) fn default_pod<R: Deref<Target = Range>>(
    ranges: &[R],
    pod: &mut Value,
    parsed: &mut PodResources,
) {
    const PREFIX: &str = "LimitRanger plugin set: ";
    for lr in ranges {
        let (requests, limits) = (&lr.default_requests, &lr.default_limits);
        if requests.is_empty() && limits.is_empty() {
            continue;
        }
        // `a, b request for container x; c limit for container x; ...`,
        // written as the defaults are set (room for a container or two
        // made at once: the note is kept as the annotation's value).
        let mut notes = String::with_capacity(128);
        notes.push_str(PREFIX);
        for (key, label, containers) in [
            ("containers", "container", &mut parsed.containers),
            (
                "initContainers",
                "init container",
                &mut parsed.init_containers,
            ),
        ] {
            let Some(cs) = pod
                .get_mut("spec")
                .and_then(|s| s.get_mut(key))
                .and_then(Value::as_array_mut)
            else {
                continue;
            };
            // `parsed` was read from these very arrays, one entry each.
            for (c, read) in cs.iter_mut().zip(containers.iter_mut()) {
                let Some(c) = c.as_object_mut() else {
                    continue;
                };
                let resources = c
                    .entry("resources")
                    .or_insert_with(|| Value::Object(Map::new()));
                if resources.is_null() {
                    *resources = Value::Object(Map::new());
                }
                let Some(resources) = resources.as_object_mut() else {
                    continue;
                };
                // Requests are noted before limits; each list is filled
                // on its own, so the order of filling changes nothing else.
                let mut note = Note {
                    text: &mut notes,
                    empty: PREFIX.len(),
                };
                if fill(
                    resources,
                    "requests",
                    requests,
                    &mut read.requests,
                    &mut note,
                ) {
                    note_container(&mut notes, " request for ", label, c);
                }
                let Some(resources) = c.get_mut("resources").and_then(Value::as_object_mut) else {
                    continue;
                };
                let mut note = Note {
                    text: &mut notes,
                    empty: PREFIX.len(),
                };
                if fill(resources, "limits", limits, &mut read.limits, &mut note) {
                    note_container(&mut notes, " limit for ", label, c);
                }
            }
        }
        if notes.len() > PREFIX.len() {
            annotations_mut(pod).insert(ANNOTATION.to_owned(), Value::String(notes));
        }
    }
}

/// The pod's annotations, made an object if they are not one. (Looked up
/// without naming a key it has: an `IndexMut` look-up copies its key.)
fn annotations_mut(pod: &mut Value) -> &mut Map<String, Value> {
    if !pod.get("metadata").is_some_and(Value::is_object) {
        crate::object::meta_mut(pod);
    }
    let meta = pod
        .get_mut("metadata")
        .and_then(Value::as_object_mut)
        .expect("made an object above");
    if !meta.get("annotations").is_some_and(Value::is_object) {
        meta.insert("annotations".into(), Value::Object(Map::new()));
    }
    meta.get_mut("annotations")
        .and_then(Value::as_object_mut)
        .expect("made an object above")
}

/// Ends a list of names in the note: ` request for container app`.
fn note_container(notes: &mut String, what: &str, label: &str, c: &Map<String, Value>) {
    let name = c.get("name").and_then(Value::as_str).unwrap_or_default();
    for part in [what, label, " ", name] {
        notes.push_str(part);
    }
}

/// The note [`fill`] adds the names it set to: `; ` before a list when
/// something precedes it (past `empty` bytes), `, ` between names.
struct Note<'a> {
    text: &'a mut String,
    empty: usize,
}

impl Note<'_> {
    /// Notes the names set, in order; whether there were any.
    fn names<'k>(&mut self, names: impl IntoIterator<Item = &'k String>) -> bool {
        let mut set = false;
        for k in names {
            let separator = match (set, self.text.len() > self.empty) {
                (true, _) => ", ",
                (false, true) => "; ",
                (false, false) => "",
            };
            self.text.push_str(separator);
            self.text.push_str(k);
            set = true;
        }
        set
    }
}

/// Sets the missing names of `resources.<which>` (and of `parsed`, the
/// same list read), noting them, sorted; returns whether it set any.
fn fill(
    resources: &mut Map<String, Value>,
    which: &str,
    defaults: &Defaults,
    parsed: &mut ResourceList,
    note: &mut Note<'_>,
) -> bool {
    if defaults.is_empty() {
        return false;
    }
    let target = resources
        .entry(which)
        .or_insert_with(|| Value::Object(Map::new()));
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    let target = target.as_object_mut().expect("made above");
    if target.is_empty() && parsed.is_empty() {
        // Nothing set: all the defaults, copied whole.
        *target = defaults.json.clone();
        *parsed = defaults.list.clone();
        return note.names(defaults.list.keys());
    }
    let missing: Vec<_> = defaults
        .each
        .iter()
        .filter(|(k, _, _)| !target.contains_key(k))
        .collect();
    for (k, v, q) in &missing {
        target.insert(k.clone(), v.clone());
        parsed.insert(k.clone(), *q);
    }
    note.names(missing.iter().map(|(k, _, _)| k))
}

/// Requests, limits and the bound at a common precision: milli-units when
/// nothing is too large for them, else units (`requestLimitEnforcedValues`).
fn comparable(
    req: Option<&Quantity>,
    lim: Option<&Quantity>,
    bound: &Quantity,
) -> (i128, i128, i128) {
    let zero = Quantity::ZERO;
    let (req, lim) = (req.unwrap_or(&zero), lim.unwrap_or(&zero));
    if req.value() <= MAX_MILLI_VALUE
        && lim.value() <= MAX_MILLI_VALUE
        && bound.value() <= MAX_MILLI_VALUE
    {
        (req.milli_value(), lim.milli_value(), bound.milli_value())
    } else {
        (req.value(), lim.value(), bound.value())
    }
}

fn min_violation(
    t: &str,
    k: &str,
    bound: &Quantity,
    requests: &ResourceList,
    limits: &ResourceList,
) -> Option<String> {
    let (req, lim) = (requests.get(k), limits.get(k));
    let (r, l, b) = comparable(req, lim, bound);
    match (req, lim) {
        (None, _) => Some(format!(
            "minimum {k} usage per {t} is {bound}.  No request is specified"
        )),
        (Some(req), _) if r < b => Some(format!(
            "minimum {k} usage per {t} is {bound}, but request is {req}"
        )),
        (_, Some(lim)) if l < b => Some(format!(
            "minimum {k} usage per {t} is {bound}, but limit is {lim}"
        )),
        _ => None,
    }
}

fn max_violation(
    t: &str,
    k: &str,
    bound: &Quantity,
    requests: &ResourceList,
    limits: &ResourceList,
) -> Option<String> {
    let (req, lim) = (requests.get(k), limits.get(k));
    let (r, l, b) = comparable(req, lim, bound);
    match (req, lim) {
        (_, None) => Some(format!(
            "maximum {k} usage per {t} is {bound}.  No limit is specified"
        )),
        (_, Some(lim)) if l > b => Some(format!(
            "maximum {k} usage per {t} is {bound}, but limit is {lim}"
        )),
        (Some(req), _) if r > b => Some(format!(
            "maximum {k} usage per {t} is {bound}, but request is {req}"
        )),
        _ => None,
    }
}

/// A claim's max applies to what it requests (`maxRequestConstraint`).
fn max_request_violation(
    t: &str,
    k: &str,
    bound: &Quantity,
    requests: &ResourceList,
) -> Option<String> {
    let req = requests.get(k);
    let (r, _, b) = comparable(req, None, bound);
    match req {
        None => Some(format!(
            "maximum {k} usage per {t} is {bound}.  No request is specified"
        )),
        Some(req) if r > b => Some(format!(
            "maximum {k} usage per {t} is {bound}, but request is {req}"
        )),
        _ => None,
    }
}

fn ratio_violation(
    t: &str,
    k: &str,
    bound: &Quantity,
    requests: &ResourceList,
    limits: &ResourceList,
) -> Option<String> {
    let (req, lim) = (requests.get(k), limits.get(k));
    let (r, l, _) = comparable(req, lim, bound);
    if req.is_none() || r == 0 {
        return Some(format!(
            "{k} max limit to request ratio per {t} is {bound}, but no request is specified or request is 0"
        ));
    }
    if lim.is_none() || l == 0 {
        return Some(format!(
            "{k} max limit to request ratio per {t} is {bound}, but no limit is specified or limit is 0"
        ));
    }
    let shown = l as f64 / r as f64;
    let (observed, allowed) = if bound.value() <= MAX_MILLI_VALUE {
        (shown * 1000.0, bound.milli_value() as f64)
    } else {
        (shown, bound.value() as f64)
    };
    (observed > allowed).then(|| {
        format!(
            "{k} max limit to request ratio per {t} is {bound}, but provided ratio is {shown:.6}"
        )
    })
}

/// Every bound of one item on one set of requests and limits.
fn item_violations(
    t: &str,
    item: &Item,
    requests: &ResourceList,
    limits: &ResourceList,
    out: &mut Vec<String>,
) {
    out.extend(
        item.min
            .iter()
            .filter_map(|(k, b)| min_violation(t, k, b, requests, limits)),
    );
    out.extend(
        item.max
            .iter()
            .filter_map(|(k, b)| max_violation(t, k, b, requests, limits)),
    );
    out.extend(
        item.ratio
            .iter()
            .filter_map(|(k, b)| ratio_violation(t, k, b, requests, limits)),
    );
}

/// Upstream's aggregate error text: one message as is, several (without
/// repeats) as `[a, b]`.
fn aggregate(mut messages: Vec<String>) -> Option<String> {
    let mut seen = BTreeSet::new();
    messages.retain(|m| seen.insert(m.clone()));
    match messages.len() {
        0 => None,
        1 => messages.pop(),
        _ => Some(format!("[{}]", messages.join(", "))),
    }
}

/// The first range a pod breaks, as the reason it is forbidden
/// (`PodValidateLimitFunc`).
pub(super) fn pod_violation<R: Deref<Target = Range>>(
    ranges: &[R],
    pod: &PodResources,
) -> Option<String> {
    // The pod's totals, worked out only if a `Pod` item asks.
    let totals = OnceCell::new();
    ranges.iter().find_map(|lr| {
        let mut out = Vec::new();
        for item in &lr.items {
            match item.type_.as_str() {
                CONTAINER => {
                    for c in pod.containers.iter().chain(&pod.init_containers) {
                        item_violations(CONTAINER, item, &c.requests, &c.limits, &mut out);
                    }
                }
                POD => {
                    let (requests, limits) = totals.get_or_init(|| (pod.requests(), pod.limits()));
                    item_violations(POD, item, requests, limits, &mut out);
                }
                _ => {}
            }
        }
        aggregate(out)
    })
}

/// The first range a claim breaks (`PersistentVolumeClaimValidateLimitFunc`):
/// `min` and `max` apply to its requests.
pub(super) fn claim_violation<R: Deref<Target = Range>>(
    ranges: &[R],
    pvc: &Value,
) -> Option<String> {
    let requests = parse_list(&pvc["spec"]["resources"]["requests"]).unwrap_or_default();
    ranges.iter().find_map(|lr| {
        let mut out = Vec::new();
        for item in lr.items.iter().filter(|i| i.type_ == CLAIM) {
            out.extend(
                item.min.iter().filter_map(|(k, b)| {
                    min_violation(CLAIM, k, b, &requests, &ResourceList::new())
                }),
            );
            out.extend(
                item.max
                    .iter()
                    .filter_map(|(k, b)| max_request_violation(CLAIM, k, b, &requests)),
            );
        }
        aggregate(out)
    })
}

#[cfg(test)]
mod tests;
