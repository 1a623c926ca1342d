//! A volume's node affinity, as the binder evaluates it against a node (a
//! claim's label selector is `Object::selected_by`).
//!
//! The binder knows a node only by name (from the claim's
//! `volume.kubernetes.io/selected-node`), so node affinity is checked
//! against the one label every node has, `kubernetes.io/hostname` = its
//! name, and the one field, `metadata.name`.

use serde_json::Value;
use windlass_sdk::Object;

use crate::fields::HOSTNAME_LABEL;

/// Whether `volume`'s `spec.nodeAffinity.required` admits the node `node`.
/// No required affinity admits every node; otherwise one of the terms
/// must hold, and a term with no requirements holds for none (as
/// upstream's node selector).
pub(crate) fn admits_node(volume: &Object, node: &str) -> bool {
    let Some(terms) = volume
        .get("spec.nodeAffinity.required.nodeSelectorTerms")
        .and_then(Value::as_array)
    else {
        return true;
    };
    terms.iter().any(|term| {
        let requirements = |field: &str| term[field].as_array().map(Vec::as_slice).unwrap_or(&[]);
        let (labels, fields) = (
            requirements("matchExpressions"),
            requirements("matchFields"),
        );
        let label = |r: &Value| (key_of(r) == HOSTNAME_LABEL).then_some(node);
        let field = |r: &Value| (key_of(r) == "metadata.name").then_some(node);
        !(labels.is_empty() && fields.is_empty())
            && labels.iter().all(|r| holds(r, label(r)))
            && fields.iter().all(|r| holds(r, field(r)))
    })
}

fn key_of(requirement: &Value) -> &str {
    requirement["key"].as_str().unwrap_or_default()
}

/// Whether one `{key, operator, values}` requirement holds for `value`,
/// the value of its key (none if the key is absent). `Gt` and `Lt` compare
/// integers (node selectors only); an unknown operator never holds.
fn holds(requirement: &Value, value: Option<&str>) -> bool {
    let values: Vec<&str> = requirement["values"]
        .as_array()
        .map(|v| v.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let compare = |want: fn(i64, i64) -> bool| {
        let parse = |s: &str| s.parse::<i64>().ok();
        match (value.and_then(parse), values.as_slice()) {
            (Some(have), [bound]) => parse(bound).is_some_and(|bound| want(have, bound)),
            _ => false,
        }
    };
    match requirement["operator"].as_str().unwrap_or_default() {
        "In" => value.is_some_and(|v| values.contains(&v)),
        "NotIn" => value.is_none_or(|v| !values.contains(&v)),
        "Exists" => value.is_some(),
        "DoesNotExist" => value.is_none(),
        "Gt" => compare(|have, bound| have > bound),
        "Lt" => compare(|have, bound| have < bound),
        _ => false,
    }
}
