//! The checks a CRD's `openAPIV3Schema` must pass before the CRD is stored,
//! beyond its shape: `uniqueItems` is refused (quadratic to check), and
//! every `x-kubernetes-validations` rule must compile (`rules/check.rs`);
//! and its `selectableFields`, which name fields of that schema. What kube
//! requires of the schema itself (structural, supported, sound defaults)
//! is `structural.rs`.
//! Paths are named as kube names them: `spec.validation.openAPIV3Schema`
//! when every version has the same schema (kube's internal form hoists it
//! there), else `spec.versions[i].schema.openAPIV3Schema`.

use serde_json::Value;

use super::rules::rule_errors;
use super::structural;
use crate::causes::{self as field, Causes};

/// The problems of the schemas of the CRD `crd` (`old` is the CRD an update
/// replaces).
pub(crate) fn errors(crd: &Value, old: Option<&Value>) -> Causes {
    let mut errs = Causes::new();
    // As kube, rules that came after a CRD was stored do not hold an update
    // of it back: one that already breaks them is not held to them.
    if old.is_none_or(|o| kube_schema_errors(o).is_empty()) {
        errs.extend(kube_schema_errors(crd));
    }
    for (path, s) in schemas(crd) {
        node(s, &path, None, &mut errs);
    }
    let versions = versions(crd);
    let schemas: Vec<&Value> = versions
        .iter()
        .map(|v| &v["schema"]["openAPIV3Schema"])
        .collect();
    let selectable: Vec<&Value> = versions.iter().map(|v| &v["selectableFields"]).collect();
    if selectable
        .first()
        .is_some_and(|first| selectable.iter().all(|s| s == first))
    {
        // Hoisted to the spec, as kube's internal form holds them.
        if let Some(s) = schemas.first() {
            selectable_fields(selectable[0], s, "spec.selectableFields", &mut errs);
        }
    } else {
        for (i, (fields, s)) in selectable.iter().zip(&schemas).enumerate() {
            let path = format!("spec.versions[{i}].selectableFields");
            selectable_fields(fields, s, &path, &mut errs);
        }
    }
    errs
}

fn versions(crd: &Value) -> &[Value] {
    crd["spec"]["versions"]
        .as_array()
        .map_or(&[], Vec::as_slice)
}

/// Each distinct schema of the CRD with its path: one at
/// `spec.validation.openAPIV3Schema` when every version has the same.
fn schemas(crd: &Value) -> Vec<(String, &Value)> {
    let schemas: Vec<&Value> = versions(crd)
        .iter()
        .map(|v| &v["schema"]["openAPIV3Schema"])
        .collect();
    let shared = schemas
        .first()
        .is_some_and(|first| first.is_object() && schemas.iter().all(|s| s == first));
    if shared {
        return vec![("spec.validation.openAPIV3Schema".to_owned(), schemas[0])];
    }
    schemas
        .into_iter()
        .enumerate()
        .filter(|(_, s)| s.is_object())
        .map(|(i, s)| (format!("spec.versions[{i}].schema.openAPIV3Schema"), s))
        .collect()
}

/// What kube requires of the schemas themselves (`structural.rs`).
fn kube_schema_errors(crd: &Value) -> Causes {
    let mut errs = structural::missing_schemas(versions(crd));
    for (path, s) in schemas(crd) {
        errs.extend(structural::errors(s, &path));
    }
    errs
}

/// At most this many distinct `selectableFields` a version.
const MAX_SELECTABLE_FIELDS: usize = 8;

/// kube's `validateSelectableFields`: each `jsonPath` a simple path
/// (`.spec.host`, no array notation) to a property of `schema` of type
/// string, boolean or integer, outside `metadata`, named once.
fn selectable_fields(fields: &Value, schema: &Value, path: &str, errs: &mut Causes) {
    let mut seen: Vec<&str> = Vec::new();
    for (i, f) in fields.as_array().into_iter().flatten().enumerate() {
        let at = format!("{path}[{i}].jsonPath");
        let json_path = f["jsonPath"].as_str().unwrap_or_default();
        if json_path.is_empty() {
            field::required(errs, at, "");
            continue;
        }
        let shown = Value::String(json_path.to_owned());
        let names: Vec<&str> = match json_path.strip_prefix('.') {
            Some(p) if p.contains(['[', ']']) => {
                let detail = "is an invalid path: array notation is not allowed";
                field::invalid(errs, at, &shown, detail);
                continue;
            }
            Some(p) => p.split('.').collect(),
            None => {
                let first = json_path.split(['.', '[']).next().unwrap_or_default();
                let detail = format!("is an invalid path: expected [ or . but got: {first}");
                field::invalid(errs, at, &shown, &detail);
                continue;
            }
        };
        let Some(found) = names
            .iter()
            .try_fold(schema, |s, name| s["properties"].get(*name))
        else {
            field::invalid(
                errs,
                at,
                &shown,
                "is an invalid path: does not refer to a valid field",
            );
            continue;
        };
        if names[0] == "metadata" {
            field::invalid(errs, &at, &shown, "must not point to fields in metadata");
        }
        if !matches!(
            found["type"].as_str(),
            Some("string" | "boolean" | "integer")
        ) {
            field::invalid(
                errs,
                &at,
                &shown,
                "must point to a field of type string, boolean or integer. Enum string fields and strings with formats are allowed.",
            );
        }
        let key = &json_path[1..];
        if seen.contains(&key) {
            field::duplicate(errs, &at, &format!("{json_path:?}"));
        } else {
            seen.push(key);
        }
    }
    if seen.len() > MAX_SELECTABLE_FIELDS {
        errs.push((
            path.to_owned(),
            format!(
                "Too many: {}: must have at most {MAX_SELECTABLE_FIELDS} items",
                seen.len()
            ),
        ));
    }
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

    fn check(crd: &Value) -> Causes {
        errors(crd, None)
    }

    fn crd(versions: Value) -> Value {
        json!({"spec": {"versions": versions}})
    }

    #[test]
    fn selectable_fields_name_scalar_fields_of_the_schema() {
        let schema = json!({"type": "object", "properties": {
            "metadata": {"type": "object", "properties": {"name": {"type": "string"}}},
            "spec": {"type": "object", "properties": {
                "host": {"type": "string"}, "port": {"type": "integer"}, "tls": {"type": "boolean"},
                "ratio": {"type": "number"}, "rules": {"type": "array", "items": {"type": "string"}}}}}});
        let with = |fields: Value| {
            check(&crd(
                json!([{"name": "v1", "schema": {"openAPIV3Schema": schema.clone()},
                "selectableFields": fields}]),
            ))
        };
        let paths = |fs: &[&str]| Value::Array(fs.iter().map(|p| json!({"jsonPath": p})).collect());
        assert!(with(paths(&[".spec.host", ".spec.port", ".spec.tls"])).is_empty());
        let errs = with(paths(&[
            ".spec.ratio",
            ".spec.nope",
            "spec.host",
            ".spec.rules[0]",
            ".metadata.name",
            ".spec.host",
            "",
        ]));
        let at = |i: usize| format!("spec.selectableFields[{i}].jsonPath");
        assert_eq!(
            errs,
            [
                (at(0), "Invalid value: \".spec.ratio\": must point to a field of type string, boolean or integer. Enum string fields and strings with formats are allowed.".into()),
                (at(1), "Invalid value: \".spec.nope\": is an invalid path: does not refer to a valid field".into()),
                (at(2), "Invalid value: \"spec.host\": is an invalid path: expected [ or . but got: spec".into()),
                (at(3), "Invalid value: \".spec.rules[0]\": is an invalid path: array notation is not allowed".into()),
                (at(4), "Invalid value: \".metadata.name\": must not point to fields in metadata".into()),
                (at(6), "Required value".into()),
            ]
        );
        assert_eq!(
            with(paths(&[".spec.host", ".spec.host"])),
            [(at(1), "Duplicate value: \".spec.host\"".to_owned())]
        );
        let nine: Vec<String> = (0..9).map(|i| format!(".spec.f{i}")).collect();
        let mut many = schema.clone();
        for i in 0..9 {
            many["properties"]["spec"]["properties"][format!("f{i}")] = json!({"type": "string"});
        }
        let errs = check(&crd(
            json!([{"name": "v1", "schema": {"openAPIV3Schema": many},
            "selectableFields": paths(&nine.iter().map(String::as_str).collect::<Vec<_>>())}]),
        ));
        assert_eq!(
            errs,
            [(
                "spec.selectableFields".to_owned(),
                "Too many: 9: must have at most 8 items".to_owned()
            )]
        );
        // Versions that differ are named by index.
        let errs = check(&crd(json!([
            {"name": "v1", "schema": {"openAPIV3Schema": schema.clone()}, "selectableFields": paths(&[".spec.host"])},
            {"name": "v2", "schema": {"openAPIV3Schema": schema.clone()}, "selectableFields": paths(&[".spec.x"])},
        ])));
        assert_eq!(errs.len(), 1);
        assert_eq!(errs[0].0, "spec.versions[1].selectableFields[0].jsonPath");
    }

    #[test]
    fn unique_items_and_bad_rules_are_refused_with_kubes_paths() {
        let schema = json!({"type": "object", "properties": {"spec": {"type": "object",
            "properties": {"tags": {"type": "array", "uniqueItems": true, "items": {"type": "string"}},
                "list": {"type": "array", "items": {"type": "object",
                    "x-kubernetes-validations": [{"rule": "self == oldSelf"}]}}},
            "x-kubernetes-validations": [{"rule": "self.a ||"}]}}});
        let e = check(&crd(
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
    fn an_update_is_held_to_kubes_schema_rules_only_if_the_stored_crd_was() {
        let schema = |s: Value| crd(json!([{"name": "v1", "schema": {"openAPIV3Schema": s}}]));
        let untyped = schema(json!({"properties": {"a": {"type": "string"}}}));
        let typed = schema(json!({"type": "object"}));
        let want = [(
            "spec.validation.openAPIV3Schema.type".to_owned(),
            "Required value: must not be empty at the root".to_owned(),
        )];
        assert_eq!(check(&untyped), want);
        assert_eq!(errors(&untyped, Some(&typed)), want);
        assert!(errors(&untyped, Some(&untyped)).is_empty());
        let missing = crd(json!([{"name": "v1"}]));
        assert_eq!(
            check(&missing),
            [(
                "spec.versions[0].schema.openAPIV3Schema".to_owned(),
                "Required value: schemas are required".to_owned()
            )]
        );
        assert!(errors(&untyped, Some(&missing)).is_empty());
    }

    #[test]
    fn versions_with_different_schemas_are_named_by_index() {
        let good = json!({"type": "object"});
        let bad = json!({"type": "object", "x-kubernetes-validations": [{"rule": ""}]});
        let e = check(&crd(json!([
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
