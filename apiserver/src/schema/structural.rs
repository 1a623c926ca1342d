//! What kube-apiserver requires of a CRD's `openAPIV3Schema` before it
//! stores the CRD (apiextensions-apiserver's `validation.go` and
//! `schema/validation.go`), in its words: every version has a schema; the
//! schema is structural (every node typed, value validations in `allOf` &c.
//! only restrict what the node itself declares, resource meta left alone);
//! it uses only the OpenAPI kube supports, with consistent
//! `x-kubernetes-*` list and map markers; and every `default` survives
//! pruning and passes its own node's validation.
//!
//! Not here: running `x-kubernetes-validations` rules over defaults.

use serde_json::Value;

use super::lists::{go_shown, strings};
use super::values;
use crate::causes::{self as field, Causes};

/// `spec.versions[i].schema.openAPIV3Schema: Required value` for each
/// version of a v1 CRD without a schema.
pub(super) fn missing_schemas(versions: &[Value]) -> Causes {
    let mut errs = Causes::new();
    for (i, v) in versions.iter().enumerate() {
        if !v["schema"]["openAPIV3Schema"].is_object() {
            let path = format!("spec.versions[{i}].schema.openAPIV3Schema");
            field::required(&mut errs, path, "schemas are required");
        }
    }
    errs
}

/// The problems of one `openAPIV3Schema` `s` at `path`, in kube's order:
/// a nullable root; then the structural invariants (sorted by their text,
/// as kube sorts them) or, when there are none, the defaults; then the
/// OpenAPI checks of every node.
pub(super) fn errors(s: &Value, path: &str) -> Causes {
    let mut errs = Causes::new();
    if s["nullable"] == true {
        let p = format!("{path}.nullable");
        field::forbidden(&mut errs, p, "nullable cannot be true at the root");
    }
    // kube cannot even build a structural schema from these; the OpenAPI
    // checks below name what is wrong.
    if convertible(s) {
        let mut structural = Causes::new();
        invariants(s, Level::Root, path, &mut structural);
        composites_complete(s, s, path, path, &mut structural);
        structural.sort_by_cached_key(|(f, m)| format!("{f}: {m}"));
        if structural.is_empty() {
            defaults(s, path, true, false, &mut errs);
        }
        errs.extend(structural);
    }
    openapi(s, path, &Context::default(), true, &mut errs);
    errs
}

fn ty(s: &Value) -> &str {
    s["type"].as_str().unwrap_or_default()
}

fn set(s: &Value, k: &str) -> bool {
    s.get(k).is_some_and(|v| !v.is_null())
}

fn non_empty(s: &Value, k: &str) -> bool {
    match &s[k] {
        Value::Null | Value::Bool(false) => false,
        Value::String(x) => !x.is_empty(),
        Value::Array(x) => !x.is_empty(),
        Value::Object(x) => !x.is_empty(),
        _ => true,
    }
}

fn props(s: &Value) -> impl Iterator<Item = (&String, &Value)> {
    s["properties"].as_object().into_iter().flatten()
}

fn prop(p: &str, k: &str) -> String {
    format!("{p}.properties[{k}]")
}

/// The JSON Schema keywords of `s` kube does not support.
fn unsupported(s: &Value) -> impl Iterator<Item = &'static str> {
    let keys = [
        "id",
        "additionalItems",
        "patternProperties",
        "definitions",
        "dependencies",
        "$ref",
    ];
    keys.into_iter().filter(|k| match *k {
        "id" | "patternProperties" | "definitions" => non_empty(s, k),
        _ => set(s, k),
    })
}

/// No node uses what kube's structural schema has no room for.
fn convertible(s: &Value) -> bool {
    !s["items"].is_array() && unsupported(s).next().is_none() && children(s).all(convertible)
}

/// Every schema directly below `s`.
fn children(s: &Value) -> impl Iterator<Item = &Value> {
    let single = ["items", "additionalProperties", "not"]
        .into_iter()
        .map(|k| &s[k])
        .filter(|c| c.is_object());
    let listed = ["allOf", "anyOf", "oneOf"]
        .into_iter()
        .flat_map(|k| s[k].as_array().into_iter().flatten());
    props(s).map(|(_, c)| c).chain(single).chain(listed)
}

#[derive(Clone, Copy, PartialEq)]
enum Level {
    Root,
    Item,
    Field,
}

/// kube's `validateStructuralInvariants`.
fn invariants(s: &Value, lvl: Level, p: &str, errs: &mut Causes) {
    let t = ty(s);
    let flag = |k: &str| s[k] == true;
    let (embedded, preserve, int_or_string) = (
        flag("x-kubernetes-embedded-resource"),
        flag("x-kubernetes-preserve-unknown-fields"),
        flag("x-kubernetes-int-or-string"),
    );
    if t == "array" && !set(s, "items") {
        field::required(errs, format!("{p}.items"), "must be specified");
    }
    if s["items"].is_object() {
        invariants(&s["items"], Level::Item, &format!("{p}.items"), errs);
    }
    for (k, c) in props(s) {
        invariants(c, Level::Field, &prop(p, k), errs);
    }
    let additional = set(s, "additionalProperties");
    if additional && lvl == Level::Root {
        let at = format!("{p}.additionalProperties");
        field::forbidden(errs, at, "must not be used at the root");
    }
    if s["additionalProperties"].is_object() {
        let at = format!("{p}.additionalProperties");
        invariants(&s["additionalProperties"], Level::Field, &at, errs);
    }
    let because = "must be false if x-kubernetes-int-or-string is true";
    for k in [
        "x-kubernetes-preserve-unknown-fields",
        "x-kubernetes-embedded-resource",
    ] {
        if int_or_string && flag(k) {
            field::invalid(errs, format!("{p}.{k}"), &Value::Bool(true), because);
        }
    }
    value_validation(
        s,
        any_of_is_int_or_string(s),
        all_of_is_int_or_string(s),
        p,
        errs,
    );

    let type_at = format!("{p}.type");
    if embedded && t != "object" {
        let why = "must be object if x-kubernetes-embedded-resource is true";
        required_or_invalid(errs, &type_at, t, why);
    } else if t.is_empty() && !int_or_string && !preserve {
        let why = match lvl {
            Level::Root => "must not be empty at the root",
            Level::Item => "must not be empty for specified array items",
            Level::Field => "must not be empty for specified object fields",
        };
        field::required(errs, &type_at, why);
    }
    if embedded && additional {
        let at = format!("{p}.additionalProperties");
        let why = "must not be used if x-kubernetes-embedded-resource is set";
        field::forbidden(errs, at, why);
    }
    if lvl == Level::Root && !t.is_empty() && t != "object" {
        field::invalid(
            errs,
            &type_at,
            &Value::from(t),
            "must be object at the root",
        );
    }
    let check_meta = lvl == Level::Root || embedded;
    for k in ["kind", "apiVersion"] {
        if let Some(c) = s["properties"].get(k)
            && check_meta
            && ty(c) != "string"
        {
            let at = format!("{}.type", prop(p, k));
            field::invalid(errs, at, &Value::from(ty(c)), "must be string");
        }
    }
    if let Some(m) = s["properties"].get("metadata") {
        metadata(m, check_meta, lvl, &prop(p, "metadata"), errs);
    }
    if embedded && !preserve && !non_empty(s, "properties") {
        let at = format!("{p}.properties");
        let why = "must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields";
        field::required(errs, at, why);
    }
}

/// `Required value` when the node has no type, else `Invalid value`.
fn required_or_invalid(errs: &mut Causes, at: &str, t: &str, why: &str) {
    if t.is_empty() {
        field::required(errs, at, why);
    } else {
        field::invalid(errs, at, &Value::from(t), why);
    }
}

/// A resource's `metadata` is an ObjectMeta whatever the schema says; at
/// the root the schema may only restrict `name` and `generateName`.
fn metadata(m: &Value, check_meta: bool, lvl: Level, p: &str, errs: &mut Causes) {
    if check_meta && ty(m) != "object" {
        field::invalid(
            errs,
            format!("{p}.type"),
            &Value::from(ty(m)),
            "must be object",
        );
    }
    if lvl != Level::Root {
        return;
    }
    let names_only = props(m).all(|(k, _)| k == "name" || k == "generateName");
    // `type` and `default` (checked on its own) aside, and `example`,
    // which kube's structural schema does not keep.
    let other = m.as_object().into_iter().flatten().any(|(k, _)| {
        !matches!(k.as_str(), "type" | "default" | "example" | "properties") && non_empty(m, k)
    });
    if other || !names_only {
        let why = "must not specify anything other than name and generateName, but metadata is implicitly specified";
        field::forbidden(errs, p, why);
    }
}

/// `[{type: integer}, {type: string}]`, the one `anyOf` (also as the
/// first `allOf`'s) whose entries may have a type.
fn is_int_or_string(any_of: &Value) -> bool {
    *any_of == serde_json::json!([{"type": "integer"}, {"type": "string"}])
}

fn any_of_is_int_or_string(s: &Value) -> bool {
    is_int_or_string(&s["anyOf"])
}

fn all_of_is_int_or_string(s: &Value) -> bool {
    is_int_or_string(&s["allOf"][0]["anyOf"])
}

/// kube's `validateValueValidation`: the composites of a node, and its
/// `pattern`.
fn value_validation(
    s: &Value,
    skip_any_of: bool,
    skip_first_any_of: bool,
    p: &str,
    errs: &mut Causes,
) {
    let list = |k: &str| s[k].as_array().into_iter().flatten().enumerate();
    if !skip_any_of {
        for (i, c) in list("anyOf") {
            nested(c, false, &format!("{p}.anyOf[{i}]"), errs);
        }
    }
    for (i, c) in list("allOf") {
        nested(
            c,
            skip_first_any_of && i == 0,
            &format!("{p}.allOf[{i}]"),
            errs,
        );
    }
    for (i, c) in list("oneOf") {
        nested(c, false, &format!("{p}.oneOf[{i}]"), errs);
    }
    if s["not"].is_object() {
        nested(&s["not"], false, &format!("{p}.not"), errs);
    }
    if let Some(pattern) = s["pattern"].as_str().filter(|x| !x.is_empty())
        && let Err(e) = regex::Regex::new(pattern)
    {
        let why = format!(
            "must be a valid regular expression, but isn't: {}",
            regex_error(&e)
        );
        field::invalid(errs, format!("{p}.pattern"), &Value::from(pattern), &why);
    }
}

/// The regex crate's error on one line, shaped as Go's `regexp` starts
/// its own (`error parsing regexp: <what>`); the words of `<what>` are the
/// regex crate's, as is the judgement (both engines are RE2-like).
fn regex_error(e: &regex::Error) -> String {
    let text = e.to_string();
    let what = text
        .lines()
        .find_map(|l| l.strip_prefix("error: "))
        .unwrap_or(text.as_str());
    format!("error parsing regexp: {what}")
}

/// kube's `validateNestedValueValidation`: inside `allOf` &c. a schema
/// may only restrict values, never declare them.
fn nested(v: &Value, skip_any_of: bool, p: &str, errs: &mut Causes) {
    value_validation(v, skip_any_of, false, p, errs);
    if v["items"].is_object() {
        nested(&v["items"], false, &format!("{p}.items"), errs);
    }
    for (k, c) in props(v) {
        nested(c, false, &prop(p, k), errs);
    }
    // Grouped by kube's words for them; the caller sorts the causes.
    let empty = [
        "type",
        "title",
        "description",
        "x-kubernetes-list-map-keys",
        "x-kubernetes-validations",
    ];
    let undefined = [
        "additionalProperties",
        "default",
        "externalDocs",
        "x-kubernetes-list-type",
        "x-kubernetes-map-type",
    ];
    let falses = [
        "nullable",
        "x-kubernetes-preserve-unknown-fields",
        "x-kubernetes-embedded-resource",
        "x-kubernetes-int-or-string",
    ];
    let bad = (empty.iter().filter(|k| non_empty(v, k)))
        .map(|k| (k, "must be empty to be structural"))
        .chain(
            (undefined.iter().filter(|k| set(v, k)))
                .map(|k| (k, "must be undefined to be structural")),
        )
        .chain(
            (falses.iter().filter(|k| v[**k] == true))
                .map(|k| (k, "must be false to be structural")),
        );
    for (k, why) in bad {
        field::forbidden(errs, format!("{p}.{k}"), why);
    }
    if v["properties"].get("metadata").is_some() {
        let at = prop(p, "metadata");
        field::forbidden(errs, at, "must not be specified in a nested context");
    }
}

/// kube's `validateStructuralCompleteness`: what the root's `allOf`,
/// `anyOf`, `oneOf` and `not` restrict (properties, items) the node they
/// sit on declares too. `v` holds the composites, `s` is the node, at
/// `vp` and `sp`. (kube looks at the root's composites only.)
fn composites_complete(v: &Value, s: &Value, sp: &str, vp: &str, errs: &mut Causes) {
    if v["not"].is_object() {
        nested_complete(&v["not"], Some(s), sp, &format!("{vp}.not"), errs);
    }
    for k in ["allOf", "anyOf", "oneOf"] {
        for (i, c) in v[k].as_array().into_iter().flatten().enumerate() {
            nested_complete(c, Some(s), sp, &format!("{vp}.{k}[{i}]"), errs);
        }
    }
}

fn nested_complete(v: &Value, s: Option<&Value>, sp: &str, vp: &str, errs: &mut Causes) {
    let Some(s) = s else {
        field::required(errs, sp, &format!("because it is defined in {vp}"));
        return;
    };
    composites_complete(v, s, sp, vp, errs);
    if v["items"].is_object() {
        let items = s["items"].is_object().then_some(&s["items"]);
        let (sp, vp) = (format!("{sp}.items"), format!("{vp}.items"));
        nested_complete(&v["items"], items, &sp, &vp, errs);
    }
    for (k, c) in props(v) {
        let (sp, vp) = (prop(sp, k), prop(vp, k));
        match s["properties"].get(k) {
            Some(sf) => nested_complete(c, Some(sf), &sp, &vp, errs),
            None => field::required(errs, &sp, &format!("because it is defined in {vp}")),
        }
    }
}

/// kube's `ValidateDefaults`: each `default` outside resource meta loses
/// nothing to pruning by its node and passes its node's validation.
/// `resource` is a node whose values are resources (the root, or
/// `x-kubernetes-embedded-resource`); `meta` is inside one's
/// `apiVersion`, `kind` or `metadata`, whose defaults kube checks as
/// metadata (those at the top level are refused outright, in `openapi`).
fn defaults(s: &Value, p: &str, resource: bool, meta: bool, errs: &mut Causes) {
    let resource = resource || s["x-kubernetes-embedded-resource"] == true;
    let meta = meta && !resource;
    if let Some(d) = s.get("default").filter(|d| !d.is_null())
        && !meta
    {
        let at = format!("{p}.default");
        if super::prunes(s, resource, d) {
            field::invalid_raw(errs, &at, &go_shown(d), "must not have unknown fields");
        }
        errs.extend(values::errors_at(s, d, &at));
    }
    // As kube: not into `additionalProperties`.
    if s["items"].is_object() {
        defaults(&s["items"], &format!("{p}.items"), false, meta, errs);
    }
    for (k, c) in props(s) {
        let into_meta =
            meta || (resource && matches!(k.as_str(), "metadata" | "apiVersion" | "kind"));
        defaults(c, &prop(p, k), false, into_meta, errs);
    }
}

/// What kube's OpenAPI walk carries down: why defaults are refused here
/// (if they are), and whether this is inside a resource's meta.
#[derive(Clone, Default)]
struct Context {
    no_defaults: Option<String>,
    in_meta: bool,
}

const TYPES: [&str; 6] = ["array", "boolean", "integer", "number", "object", "string"];

/// kube's `ValidateCustomResourceDefinitionOpenAPISchema`, less what
/// `definition.rs` checks (`uniqueItems`, `x-kubernetes-validations`).
fn openapi(s: &Value, p: &str, cx: &Context, root: bool, errs: &mut Causes) {
    supported(s, p, cx, errs);
    let t = ty(s);
    let embedded = s["x-kubernetes-embedded-resource"] == true;
    if set(s, "additionalProperties") {
        if non_empty(s, "properties") && s["additionalProperties"] != true {
            let at = format!("{p}.additionalProperties");
            field::forbidden(
                errs,
                at,
                "additionalProperties and properties are mutual exclusive",
            );
        }
        if s["additionalProperties"].is_object() {
            let mut sub = cx.clone();
            if cx.in_meta {
                // Pruning without a value to go by would be ambiguous.
                sub.no_defaults =
                    Some("inside additionalProperties applying to object metadata".into());
            }
            let at = format!("{p}.additionalProperties");
            openapi(&s["additionalProperties"], &at, &sub, false, errs);
        }
    }
    for (k, c) in props(s) {
        let mut sub = cx.clone();
        if (root || embedded) && matches!(k.as_str(), "metadata" | "kind" | "apiVersion") {
            sub.in_meta = true;
            if root {
                sub.no_defaults = Some(format!("in top-level {k}"));
            }
        }
        openapi(c, &prop(p, k), &sub, false, errs);
    }
    if s["not"].is_object() {
        openapi(&s["not"], &format!("{p}.not"), cx, false, errs);
    }
    for k in ["allOf", "oneOf", "anyOf"] {
        for (i, c) in s[k].as_array().into_iter().flatten().enumerate() {
            openapi(c, &format!("{p}.{k}[{i}]"), cx, false, errs);
        }
    }
    for (k, c) in s["definitions"].as_object().into_iter().flatten() {
        openapi(c, &format!("{p}.definitions[{k}]"), cx, false, errs);
    }
    match &s["items"] {
        Value::Object(_) => openapi(&s["items"], &format!("{p}.items"), cx, false, errs),
        Value::Array(items) => {
            for (i, c) in items.iter().enumerate() {
                openapi(c, &format!("{p}.items[{i}]"), cx, false, errs);
            }
        }
        _ => {}
    }
    for (k, c) in s["dependencies"].as_object().into_iter().flatten() {
        if c.is_object() {
            openapi(c, &format!("{p}.dependencies[{k}]"), cx, false, errs);
        }
    }
    if s["x-kubernetes-preserve-unknown-fields"] == false {
        let at = format!("{p}.x-kubernetes-preserve-unknown-fields");
        field::invalid(errs, at, &Value::Bool(false), "must be true or undefined");
    }
    markers(s, t, p, errs);
}

/// kube's `specStandardValidatorV3.validate`: what one node may not use.
fn supported(s: &Value, p: &str, cx: &Context, errs: &mut Causes) {
    let t = ty(s);
    if !t.is_empty() && !TYPES.contains(&t) {
        field::not_supported(errs, format!("{p}.type"), &Value::from(t), &TYPES);
    }
    if let Some(reason) = &cx.no_defaults
        && set(s, "default")
    {
        field::forbidden(
            errs,
            format!("{p}.default"),
            &format!("must not be set {reason}"),
        );
    }
    for k in unsupported(s) {
        field::forbidden(errs, format!("{p}.{k}"), &format!("{k} is not supported"));
    }
    if t == "null" {
        let why = "type cannot be set to null, use nullable as an alternative";
        field::forbidden(errs, format!("{p}.type"), why);
    }
    if s["items"].as_array().is_some_and(|a| !a.is_empty()) {
        let why = "items must be a schema object and not an array";
        field::forbidden(errs, format!("{p}.items"), why);
    }
    if cx.in_meta && s["x-kubernetes-embedded-resource"] == true {
        let at = format!("{p}.x-kubernetes-embedded-resource");
        field::forbidden(errs, at, "must not be used inside of resource meta");
    }
}

/// `x-kubernetes-map-type`, `x-kubernetes-list-type` and
/// `x-kubernetes-list-map-keys`: each on the right type, with a value
/// kube knows, agreeing with each other and with the items.
fn markers(s: &Value, t: &str, p: &str, errs: &mut Causes) {
    let type_at = format!("{p}.type");
    let map_type = s.get("x-kubernetes-map-type").filter(|v| !v.is_null());
    if map_type.is_some() && t != "object" {
        required_or_invalid(
            errs,
            &type_at,
            t,
            "must be object if x-kubernetes-map-type is specified",
        );
    }
    if let Some(m) = map_type
        && !matches!(m.as_str(), Some("atomic" | "granular"))
    {
        let at = format!("{p}.x-kubernetes-map-type");
        field::not_supported(errs, at, m, &["atomic", "granular"]);
    }
    let list_type = s.get("x-kubernetes-list-type").filter(|v| !v.is_null());
    let lt = list_type.and_then(Value::as_str);
    let items = s["items"].is_object().then_some(&s["items"]);
    let it = items.map(ty).unwrap_or_default();
    let set_why = "must be atomic as item of a list with x-kubernetes-list-type=set";
    if list_type.is_some() && t != "array" {
        required_or_invalid(
            errs,
            &type_at,
            t,
            "must be array if x-kubernetes-list-type is specified",
        );
    } else if let (Some("set"), Some(is)) = (lt, items) {
        let item_list = is["x-kubernetes-list-type"].as_str();
        if it == "array" && item_list.is_some_and(|x| x != "atomic") {
            let at = format!("{p}.items.x-kubernetes-list-type");
            field::invalid(errs, at, &Value::from(item_list), set_why);
        }
        if it == "object" && is["x-kubernetes-map-type"] != "atomic" {
            // kube shows the item's list type here, `"null"` when unset.
            let shown = Value::from(item_list.unwrap_or("null"));
            field::invalid(
                errs,
                format!("{p}.items.x-kubernetes-map-type"),
                &shown,
                set_why,
            );
        }
    }
    if let Some(l) = list_type
        && !matches!(lt, Some("atomic" | "set" | "map"))
    {
        let at = format!("{p}.x-kubernetes-list-type");
        field::not_supported(errs, at, l, &["atomic", "set", "map"]);
    }
    let keys = strings(&s["x-kubernetes-list-map-keys"]);
    let map_why = "must be map if x-kubernetes-list-map-keys is non-empty";
    let lt_at = format!("{p}.x-kubernetes-list-type");
    match (keys.is_empty(), list_type) {
        (false, None) => field::required(errs, &lt_at, map_why),
        (false, Some(l)) if lt != Some("map") => field::invalid(errs, &lt_at, l, map_why),
        _ => {}
    }
    let keys_at = format!("{p}.x-kubernetes-list-map-keys");
    let shown_keys = format!(
        "[]string{{{}}}",
        keys.iter()
            .map(|k| format!("{k:?}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    if lt == Some("map") {
        if keys.is_empty() {
            field::required(
                errs,
                &keys_at,
                "must not be empty if x-kubernetes-list-type is map",
            );
        }
        if !set(s, "items") {
            field::required(
                errs,
                format!("{p}.items"),
                "must have a schema if x-kubernetes-list-type is map",
            );
        }
        if let Some(is) = items {
            if it != "object" {
                let at = format!("{p}.items.type");
                let why = "must be object if parent array's x-kubernetes-list-type is map";
                field::invalid(errs, at, &Value::from(it), why);
            } else {
                for (i, k) in keys.iter().enumerate() {
                    match is["properties"].get(*k) {
                        Some(c) if matches!(ty(c), "array" | "object") => {
                            let at = format!("{}.type", prop(&format!("{p}.items"), k));
                            let why = "must be a scalar type if parent array's x-kubernetes-list-type is map";
                            // kube shows the items' type, not the key's.
                            field::invalid(errs, at, &Value::from(it), why);
                        }
                        Some(_) => {}
                        None => field::invalid_raw(
                            errs,
                            &keys_at,
                            &shown_keys,
                            "entries must all be names of item properties",
                        ),
                    }
                    if keys[..i].contains(k) {
                        field::invalid_raw(
                            errs,
                            &keys_at,
                            &shown_keys,
                            "must not contain duplicate entries",
                        );
                    }
                }
            }
        }
    }
    if let (Some(l @ ("set" | "map")), Some(is)) = (lt, items) {
        if is["nullable"] == true {
            let why = format!("cannot be nullable when x-kubernetes-list-type is {l}");
            field::forbidden(errs, format!("{p}.items.nullable"), &why);
        }
        if l == "map" {
            map_keys(is, &keys, &format!("{p}.items"), errs);
        }
    }
}

/// kube's `validateMapListKeysMapSet` for a map list's keys: each always
/// there (required or defaulted), and never null.
fn map_keys(items: &Value, keys: &[&str], p: &str, errs: &mut Causes) {
    let required = strings(&items["required"]);
    let why = "this property is in x-kubernetes-list-map-keys, so it";
    for k in keys {
        let Some(c) = items["properties"].get(*k) else {
            continue;
        };
        if !required.contains(k) && !set(c, "default") {
            let at = format!("{}.default", prop(p, k));
            field::required(
                errs,
                at,
                &format!("{why} must have a default or be a required property"),
            );
        }
        if c["nullable"] == true {
            let at = format!("{}.nullable", prop(p, k));
            field::forbidden(errs, at, &format!("{why} cannot be nullable"));
        }
    }
}

#[cfg(test)]
mod tests;
