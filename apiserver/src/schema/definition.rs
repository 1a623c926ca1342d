//! The checks a CRD's `openAPIV3Schema` must pass before the CRD is stored,
//! beyond its shape: `uniqueItems` is refused (quadratic to check), and
//! every `x-kubernetes-validations` rule must compile (`rules/check.rs`).
//! Paths are named as kube names them: `spec.validation.openAPIV3Schema`
//! when every version has the same schema (kube's internal form hoists it
//! there), else `spec.versions[i].schema.openAPIV3Schema`.

use serde_json::Value;

use super::rules::rule_errors;
use crate::causes::{self as field, Causes};

/// The problems of the schemas of the CRD `crd`.
pub(crate) fn errors(crd: &Value) -> Causes {
    let mut errs = Causes::new();
    let versions = crd["spec"]["versions"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let schemas: Vec<&Value> = versions
        .iter()
        .map(|v| &v["schema"]["openAPIV3Schema"])
        .collect();
    let shared = schemas
        .first()
        .is_some_and(|first| first.is_object() && schemas.iter().all(|s| s == first));
    if shared {
        node(
            schemas[0],
            "spec.validation.openAPIV3Schema",
            None,
            &mut errs,
        );
    } else {
        for (i, s) in schemas.iter().enumerate().filter(|(_, s)| s.is_object()) {
            let path = format!("spec.versions[{i}].schema.openAPIV3Schema");
            node(s, &path, None, &mut errs);
        }
    }
    errs
}

/// One schema node and everything below it. `uncorrelatable` is the path
/// of the items of the nearest list whose old items cannot be matched to
/// new ones (any list but `x-kubernetes-list-type: map`).
fn node(s: &Value, path: &str, uncorrelatable: Option<&str>, errs: &mut Causes) {
    if s["uniqueItems"] == true {
        field::forbidden(
            errs,
            format!("{path}.uniqueItems"),
            "uniqueItems cannot be set to true since the runtime complexity becomes quadratic",
        );
    }
    rule_errors(s, path, uncorrelatable, errs);
    for (k, c) in s["properties"].as_object().into_iter().flatten() {
        node(c, &format!("{path}.properties[{k}]"), uncorrelatable, errs);
    }
    if s["additionalProperties"].is_object() {
        let p = format!("{path}.additionalProperties");
        node(&s["additionalProperties"], &p, uncorrelatable, errs);
    }
    if s["items"].is_object() {
        let p = format!("{path}.items");
        let below = if s["x-kubernetes-list-type"] == "map" {
            uncorrelatable.map(str::to_owned)
        } else {
            Some(uncorrelatable.unwrap_or(&p).to_owned())
        };
        node(&s["items"], &p, below.as_deref(), errs);
    }
    for k in ["allOf", "anyOf", "oneOf"] {
        for (i, c) in s[k].as_array().into_iter().flatten().enumerate() {
            node(c, &format!("{path}.{k}[{i}]"), uncorrelatable, errs);
        }
    }
    if s["not"].is_object() {
        node(&s["not"], &format!("{path}.not"), uncorrelatable, errs);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn crd(versions: Value) -> Value {
        json!({"spec": {"versions": versions}})
    }

    #[test]
    fn unique_items_and_bad_rules_are_refused_with_kubes_paths() {
        let schema = json!({"type": "object", "properties": {"spec": {"type": "object",
            "properties": {"tags": {"type": "array", "uniqueItems": true, "items": {"type": "string"}},
                "list": {"type": "array", "items": {"type": "object",
                    "x-kubernetes-validations": [{"rule": "self == oldSelf"}]}}},
            "x-kubernetes-validations": [{"rule": "self.a ||"}]}}});
        let e = errors(&crd(
            json!([{"name": "v1", "schema": {"openAPIV3Schema": schema}}]),
        ));
        let text: Vec<String> = e.iter().map(|(f, m)| format!("{f}: {m}")).collect();
        assert_eq!(text.len(), 3, "{text:#?}");
        assert!(
            text[0].starts_with("spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule: Invalid value: apiextensions.ValidationRule{Rule:\"self.a ||\""),
            "{text:#?}"
        );
        assert!(
            text[0].contains(": compilation failed: ERROR: <input>:1:10: Syntax error: mismatched input '<EOF>' expecting "),
            "{text:#?}"
        );
        assert!(
            text[0].ends_with("\n | self.a ||\n | .........^"),
            "{text:#?}"
        );
        assert_eq!(
            text[1],
            "spec.validation.openAPIV3Schema.properties[spec].properties[list].items.x-kubernetes-validations[0].rule: Invalid value: \"self == oldSelf\": oldSelf cannot be used on the uncorrelatable portion of the schema within spec.validation.openAPIV3Schema.properties[spec].properties[list].items"
        );
        assert_eq!(
            text[2],
            "spec.validation.openAPIV3Schema.properties[spec].properties[tags].uniqueItems: Forbidden: uniqueItems cannot be set to true since the runtime complexity becomes quadratic"
        );
    }

    #[test]
    fn versions_with_different_schemas_are_named_by_index() {
        let good = json!({"type": "object"});
        let bad = json!({"type": "object", "x-kubernetes-validations": [{"rule": ""}]});
        let e = errors(&crd(json!([
            {"name": "v1", "schema": {"openAPIV3Schema": good}},
            {"name": "v2", "schema": {"openAPIV3Schema": bad}}])));
        assert_eq!(
            e,
            [(
                "spec.versions[1].schema.openAPIV3Schema.x-kubernetes-validations[0].rule"
                    .to_owned(),
                "Required value: rule is not specified".to_owned()
            )]
        );
    }
}
