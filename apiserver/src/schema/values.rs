//! Value validation of custom resources against their CRD's structural
//! schema, as kube-apiserver's OpenAPI validator words it: `type` (and
//! `nullable`), `format` for the common string formats, `enum`,
//! `minimum`/`maximum` (exclusive too), `multipleOf`, `minLength`/
//! `maxLength`, `pattern`, `minItems`/`maxItems`, `required`,
//! `minProperties`/`maxProperties`. Every problem is one field cause; the
//! caller refuses the object with one `422` listing them all.
//!
//! `allOf`/`anyOf`/`oneOf`/`not` too, in kube-openapi's words.
//!
//! Not here: `x-kubernetes-validations` (CEL rules: `rules.rs`), list-type
//! uniqueness (`lists.rs`) and `uniqueItems` (a CRD may not set it:
//! `definition.rs`).

use serde_json::{Map, Value};

use crate::causes::{self as field, Causes};

/// The problems of `obj` under the schema `schema` (an `openAPIV3Schema`).
pub(crate) fn errors(schema: &Value, obj: &Value) -> Causes {
    let mut errs = Causes::new();
    // The object's own type meta and metadata are the server's to check.
    if let (Some(props), Some(o)) = (schema["properties"].as_object(), obj.as_object()) {
        for (k, s) in props {
            if matches!(k.as_str(), "apiVersion" | "kind" | "metadata") {
                continue;
            }
            if let Some(v) = o.get(k) {
                node(s, v, k, &mut errs);
            }
        }
        required(schema, o, "", &mut errs);
    }
    errs
}

/// The problems of `v` under the schema node `s`, named from `path` (a
/// `default` in a CRD, say), resource meta and all.
pub(super) fn errors_at(s: &Value, v: &Value, path: &str) -> Causes {
    let mut errs = Causes::new();
    node(s, v, path, &mut errs);
    errs
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_owned()
    } else {
        format!("{path}.{key}")
    }
}

/// `<path> in body should ...`, the way the validator names a field.
fn body(path: &str, what: &str) -> String {
    format!("{path} in body {what}")
}

/// The JSON type of a value as the validator names it.
fn type_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if is_integer(n) => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn is_integer(n: &serde_json::Number) -> bool {
    n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0)
}

/// Whether `v` is of the schema's type (`x-kubernetes-int-or-string` is
/// either; an integer is a number).
fn type_matches(s: &Value, v: &Value) -> Result<(), String> {
    let actual = type_of(v);
    if s["x-kubernetes-int-or-string"] == true {
        return match actual {
            "integer" | "string" => Ok(()),
            _ => Err("integer".into()),
        };
    }
    match s["type"].as_str() {
        None | Some("") => Ok(()),
        Some(t) if t == actual || (t == "number" && actual == "integer") => Ok(()),
        Some(t) => Err(t.to_owned()),
    }
}

fn node(s: &Value, v: &Value, path: &str, errs: &mut Causes) {
    if v.is_null() {
        if s["nullable"] != true && !s["type"].as_str().unwrap_or_default().is_empty() {
            let t = s["type"].as_str().unwrap_or_default();
            type_invalid(errs, path, t, "null");
        }
        return;
    }
    if let Err(want) = type_matches(s, v) {
        type_invalid(errs, path, &want, type_of(v));
        return;
    }
    if let Some(allowed) = s["enum"].as_array()
        && !allowed.contains(v)
    {
        let values: Vec<String> = allowed
            .iter()
            .map(|a| match a {
                Value::String(x) => x.clone(),
                other => other.to_string(),
            })
            .collect();
        let values: Vec<&str> = values.iter().map(String::as_str).collect();
        field::not_supported(errs, path, v, &values);
    }
    composite(s, v, path, errs);
    match v {
        Value::Number(n) => number(s, v, n.as_f64().unwrap_or_default(), path, errs),
        Value::String(text) => string(s, v, text, path, errs),
        Value::Array(items) => array(s, v, items, path, errs),
        Value::Object(m) => object(s, m, path, errs),
        _ => {}
    }
}

/// `allOf`, `anyOf`, `oneOf` and `not`, as kube-openapi's validator
/// reports them: a cause with no field and no value naming the path, plus
/// the causes of every failed `allOf` entry, or of the failed `anyOf` /
/// `oneOf` entry that came closest (fewest causes).
fn composite(s: &Value, v: &Value, path: &str, errs: &mut Causes) {
    let run = |sub: &Value| {
        let mut e = Causes::new();
        node(sub, v, path, &mut e);
        e
    };
    let mut say =
        |what: String| field::invalid(errs, "", &Value::from(""), &format!("{path:?} {what}"));
    let closest = |results: Vec<Causes>| {
        results
            .into_iter()
            .filter(|e| !e.is_empty())
            .min_by_key(Vec::len)
    };
    let mut merged = Causes::new();
    if let Some(all) = s["allOf"].as_array() {
        let results: Vec<Causes> = all.iter().map(run).collect();
        let valid = results.iter().filter(|e| e.is_empty()).count();
        merged.extend(results.into_iter().flatten());
        if valid != all.len() {
            let none = if valid == 0 { ". None validated" } else { "" };
            say(format!("must validate all the schemas (allOf){none}"));
        }
    }
    if let Some(any) = s["anyOf"].as_array().filter(|a| !a.is_empty()) {
        let results: Vec<Causes> = any.iter().map(run).collect();
        if results.iter().all(|e| !e.is_empty()) {
            say("must validate at least one schema (anyOf)".into());
            merged.extend(closest(results).into_iter().flatten());
        }
    }
    if let Some(one) = s["oneOf"].as_array().filter(|a| !a.is_empty()) {
        let results: Vec<Causes> = one.iter().map(run).collect();
        match results.iter().filter(|e| e.is_empty()).count() {
            1 => {}
            0 => {
                say("must validate one and only one schema (oneOf). Found none valid".into());
                merged.extend(closest(results).into_iter().flatten());
            }
            n => say(format!(
                "must validate one and only one schema (oneOf). Found {n} valid alternatives"
            )),
        }
    }
    if s["not"].is_object() && run(&s["not"]).is_empty() {
        say("must not validate the schema (not)".into());
    }
    errs.extend(merged);
}

/// `TypeInvalid`: kube shows the actual type as the value.
fn type_invalid(errs: &mut Causes, path: &str, want: &str, actual: &str) {
    field::invalid(
        errs,
        path,
        &Value::from(actual),
        &body(path, &format!("must be of type {want}: {actual:?}")),
    );
}

/// A bound as Go's `%v` prints a float64 (`1`, `1.5`).
fn shown_bound(b: &Value) -> String {
    match b.as_f64() {
        Some(f) if f.fract() == 0.0 && f.abs() < 1e15 => format!("{}", f as i64),
        Some(f) => f.to_string(),
        None => b.to_string(),
    }
}

fn number(s: &Value, v: &Value, x: f64, path: &str, errs: &mut Causes) {
    if let Some(min) = s["minimum"].as_f64() {
        let exclusive = s["exclusiveMinimum"] == true;
        if (exclusive && x <= min) || (!exclusive && x < min) {
            let how = if exclusive {
                "greater than"
            } else {
                "greater than or equal to"
            };
            let what = format!("should be {how} {}", shown_bound(&s["minimum"]));
            field::invalid(errs, path, v, &body(path, &what));
        }
    }
    if let Some(max) = s["maximum"].as_f64() {
        let exclusive = s["exclusiveMaximum"] == true;
        if (exclusive && x >= max) || (!exclusive && x > max) {
            let how = if exclusive {
                "less than"
            } else {
                "less than or equal to"
            };
            let what = format!("should be {how} {}", shown_bound(&s["maximum"]));
            field::invalid(errs, path, v, &body(path, &what));
        }
    }
    if let Some(m) = s["multipleOf"].as_f64().filter(|m| *m > 0.0) {
        let q = x / m;
        if (q - q.round()).abs() > 1e-9 {
            let what = format!("should be a multiple of {}", shown_bound(&s["multipleOf"]));
            field::invalid(errs, path, v, &body(path, &what));
        }
    }
}

fn string(s: &Value, v: &Value, text: &str, path: &str, errs: &mut Causes) {
    // Lengths count characters, as Go's validator counts runes.
    let len = text.chars().count() as u64;
    if let Some(max) = s["maxLength"].as_u64()
        && len > max
    {
        let unit = if max == 1 { "byte" } else { "bytes" };
        errs.push((
            path.to_owned(),
            format!("Too long: may not be more than {max} {unit}"),
        ));
    }
    if let Some(min) = s["minLength"].as_u64()
        && len < min
    {
        let what = format!("should be at least {min} chars long");
        field::invalid(errs, path, v, &body(path, &what));
    }
    if let Some(p) = s["pattern"].as_str() {
        // A pattern that does not compile was refused with its CRD
        // upstream; here it checks nothing rather than failing every write.
        if let Ok(re) = regex::Regex::new(p)
            && !re.is_match(text)
        {
            field::invalid(errs, path, v, &body(path, &format!("should match '{p}'")));
        }
    }
    if let Some(f) = s["format"].as_str()
        && !format_ok(f, text)
    {
        field::invalid(
            errs,
            path,
            &Value::from(f),
            &body(path, &format!("must be of type {f}: {text:?}")),
        );
    }
}

fn array(s: &Value, v: &Value, items: &[Value], path: &str, errs: &mut Causes) {
    let n = items.len() as u64;
    if let Some(max) = s["maxItems"].as_u64()
        && n > max
    {
        let unit = if max == 1 { "item" } else { "items" };
        errs.push((
            path.to_owned(),
            format!("Too many: {n}: must have at most {max} {unit}"),
        ));
    }
    if let Some(min) = s["minItems"].as_u64()
        && n < min
    {
        let what = format!("should have at least {min} items");
        field::invalid(errs, path, &Value::from(n), &body(path, &what));
    }
    let _ = v;
    if s["items"].is_object() {
        for (i, x) in items.iter().enumerate() {
            node(&s["items"], x, &format!("{path}[{i}]"), errs);
        }
    }
}

fn object(s: &Value, m: &Map<String, Value>, path: &str, errs: &mut Causes) {
    let n = m.len() as u64;
    if let Some(max) = s["maxProperties"].as_u64()
        && n > max
    {
        let unit = if max == 1 { "item" } else { "items" };
        errs.push((
            path.to_owned(),
            format!("Too many: {n}: must have at most {max} {unit}"),
        ));
    }
    if let Some(min) = s["minProperties"].as_u64()
        && n < min
    {
        let what = format!("should have at least {min} properties");
        field::invalid(errs, path, &Value::from(n), &body(path, &what));
    }
    let props = s["properties"].as_object();
    for (k, x) in m {
        let child = match props.and_then(|p| p.get(k)) {
            Some(c) => c,
            None if s["additionalProperties"].is_object() => &s["additionalProperties"],
            // Pruned already, or kept as any value.
            None => continue,
        };
        node(child, x, &join(path, k), errs);
    }
    required(s, m, path, errs);
}

fn required(s: &Value, m: &Map<String, Value>, path: &str, errs: &mut Causes) {
    for r in s["required"].as_array().into_iter().flatten() {
        if let Some(k) = r.as_str()
            && !m.contains_key(k)
        {
            field::required(errs, join(path, k), "");
        }
    }
}

/// The string formats kube's validator knows that CRDs commonly use; any
/// other format is not checked (as kube ignores formats it does not know).
fn format_ok(f: &str, s: &str) -> bool {
    match f {
        "date-time" | "datetime" => is_date_time(s),
        "date" => is_date(s),
        "uuid" => is_uuid(s),
        "ipv4" => s.parse::<std::net::Ipv4Addr>().is_ok(),
        "ipv6" => s.parse::<std::net::Ipv6Addr>().is_ok(),
        "cidr" => is_cidr(s),
        "hostname" => is_hostname(s),
        "byte" => {
            use base64::Engine;
            base64::engine::general_purpose::STANDARD.decode(s).is_ok()
        }
        "email" => s
            .split_once('@')
            .is_some_and(|(u, d)| !u.is_empty() && d.contains('.') && !d.starts_with('.')),
        _ => true,
    }
}

fn digits(s: &str, n: usize) -> bool {
    s.len() == n && s.bytes().all(|b| b.is_ascii_digit())
}

fn is_date(s: &str) -> bool {
    let p: Vec<&str> = s.split('-').collect();
    p.len() == 3
        && digits(p[0], 4)
        && digits(p[1], 2)
        && digits(p[2], 2)
        && (1..=12).contains(&p[1].parse::<u8>().unwrap_or(0))
        && (1..=31).contains(&p[2].parse::<u8>().unwrap_or(0))
}

/// RFC 3339: `2006-01-02T15:04:05Z`, optional fraction, `Z` or an offset.
fn is_date_time(s: &str) -> bool {
    let Some((date, rest)) = s.split_once(['T', 't', ' ']) else {
        return false;
    };
    if !is_date(date) || rest.len() < 8 {
        return false;
    }
    let (time, zone) = rest.split_at(8);
    let t: Vec<&str> = time.split(':').collect();
    if t.len() != 3 || !t.iter().all(|x| digits(x, 2)) {
        return false;
    }
    let zone = match zone.strip_prefix('.') {
        Some(z) => {
            let frac = z.bytes().take_while(u8::is_ascii_digit).count();
            if frac == 0 {
                return false;
            }
            &z[frac..]
        }
        None => zone,
    };
    match zone {
        "Z" | "z" => true,
        z => {
            z.len() == 6
                && matches!(z.as_bytes()[0], b'+' | b'-')
                && digits(&z[1..3], 2)
                && &z[3..4] == ":"
                && digits(&z[4..6], 2)
        }
    }
}

fn is_uuid(s: &str) -> bool {
    let groups: Vec<&str> = s.split('-').collect();
    groups.len() == 5
        && groups
            .iter()
            .zip([8, 4, 4, 4, 12])
            .all(|(g, n)| g.len() == n && g.bytes().all(|b| b.is_ascii_hexdigit()))
}

fn is_cidr(s: &str) -> bool {
    let Some((ip, bits)) = s.split_once('/') else {
        return false;
    };
    let Ok(bits) = bits.parse::<u8>() else {
        return false;
    };
    match ip.parse::<std::net::IpAddr>() {
        Ok(std::net::IpAddr::V4(_)) => bits <= 32,
        Ok(std::net::IpAddr::V6(_)) => bits <= 128,
        Err(_) => false,
    }
}

fn is_hostname(s: &str) -> bool {
    let s = s.strip_suffix('.').unwrap_or(s);
    !s.is_empty()
        && s.len() <= 255
        && s.split('.').all(|l| {
            let b = l.as_bytes();
            !b.is_empty()
                && b.len() <= 63
                && b[0].is_ascii_alphanumeric()
                && b[b.len() - 1].is_ascii_alphanumeric()
                && b.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'-')
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Value {
        json!({"type": "object", "required": ["spec"], "properties": {
        "spec": {"type": "object", "required": ["replicas", "mode"], "properties": {
            "replicas": {"type": "integer", "minimum": 1, "maximum": 10},
            "ratio": {"type": "number", "minimum": 0, "exclusiveMinimum": true, "maximum": 1, "exclusiveMaximum": true},
            "step": {"type": "integer", "multipleOf": 5},
            "mode": {"type": "string", "enum": ["a", "b"]},
            "name": {"type": "string", "minLength": 2, "maxLength": 5, "pattern": "^[a-z]+$"},
            "when": {"type": "string", "format": "date-time"},
            "id": {"type": "string", "format": "uuid"},
            "note": {"type": "string", "nullable": true},
            "port": {"x-kubernetes-int-or-string": true},
            "tags": {"type": "array", "minItems": 1, "maxItems": 2, "items": {"type": "string", "maxLength": 3}},
            "labels": {"type": "object", "additionalProperties": {"type": "integer"}},
            "items": {"type": "array", "items": {"type": "object", "required": ["n"], "properties": {"n": {"type": "string"}}}}
        }}}})
    }

    fn text(obj: Value) -> Vec<String> {
        errors(&schema(), &obj)
            .iter()
            .map(|(f, m)| format!("{f}: {m}"))
            .collect()
    }

    #[test]
    fn a_valid_object_has_no_causes() {
        let ok = json!({"apiVersion": "x/v1", "kind": "K", "metadata": {"name": "n"},
            "spec": {"replicas": 3, "ratio": 0.5, "step": 10, "mode": "a", "name": "abc",
                "when": "2024-01-02T03:04:05.123+01:00", "id": "0f8fad5b-d9cb-469f-a165-70867728950e",
                "note": null, "port": "http", "tags": ["x"], "labels": {"a": 1}, "items": [{"n": "x"}]}});
        assert!(text(ok.clone()).is_empty(), "{:?}", text(ok));
    }

    #[test]
    fn every_rule_in_kubes_words() {
        let e = text(
            json!({"spec": {"replicas": 0, "ratio": 1, "step": 7, "mode": "x",
            "name": "ABCDEFG", "when": "yesterday", "tags": [], "labels": {"a": "1"},
            "items": [{}], "note": 1, "port": true}}),
        );
        for want in [
            "spec.replicas: Invalid value: 0: spec.replicas in body should be greater than or equal to 1",
            "spec.ratio: Invalid value: 1: spec.ratio in body should be less than 1",
            "spec.step: Invalid value: 7: spec.step in body should be a multiple of 5",
            "spec.mode: Unsupported value: \"x\": supported values: \"a\", \"b\"",
            "spec.name: Too long: may not be more than 5 bytes",
            "spec.name: Invalid value: \"ABCDEFG\": spec.name in body should match '^[a-z]+$'",
            "spec.when: Invalid value: \"date-time\": spec.when in body must be of type date-time: \"yesterday\"",
            "spec.tags: Invalid value: 0: spec.tags in body should have at least 1 items",
            "spec.labels.a: Invalid value: \"string\": spec.labels.a in body must be of type integer: \"string\"",
            "spec.items[0].n: Required value",
            "spec.note: Invalid value: \"integer\": spec.note in body must be of type string: \"integer\"",
            "spec.port: Invalid value: \"boolean\": spec.port in body must be of type integer: \"boolean\"",
        ] {
            assert!(e.contains(&want.to_owned()), "missing {want}\nin {e:#?}");
        }
        assert_eq!(e.len(), 12, "{e:#?}");
        assert_eq!(
            text(
                json!({"spec": {"replicas": 11, "mode": "a", "name": "a", "tags": ["a", "b", "c"]}})
            ),
            [
                "spec.name: Invalid value: \"a\": spec.name in body should be at least 2 chars long",
                "spec.replicas: Invalid value: 11: spec.replicas in body should be less than or equal to 10",
                "spec.tags: Too many: 3: must have at most 2 items",
            ]
        );
        assert_eq!(
            text(json!({"spec": {"ratio": 0, "name": null}})),
            [
                "spec.name: Invalid value: \"null\": spec.name in body must be of type string: \"null\"",
                "spec.ratio: Invalid value: 0: spec.ratio in body should be greater than 0",
                "spec.replicas: Required value",
                "spec.mode: Required value",
            ]
        );
        assert_eq!(text(json!({})), ["spec: Required value"]);
    }

    #[test]
    fn composites_in_kube_openapis_words() {
        let s = json!({"type": "object", "properties": {"spec": {"type": "object",
            "properties": {"a": {"type": "string"}, "b": {"type": "string"}, "n": {"type": "integer"}},
            "oneOf": [{"required": ["a"]}, {"required": ["b"]}],
            "anyOf": [{"properties": {"n": {"minimum": 5}}}, {"required": ["a", "b"]}],
            "allOf": [{"properties": {"n": {"maximum": 10}}}],
            "not": {"required": ["n"], "properties": {"n": {"maximum": 0}}}}}});
        let text = |o: Value| -> Vec<String> {
            errors(&s, &o)
                .iter()
                .map(|(f, m)| format!("{f}: {m}"))
                .collect()
        };
        assert!(text(json!({"spec": {"a": "x", "n": 7}})).is_empty());
        assert_eq!(
            text(json!({"spec": {"n": 11}})),
            [
                ": Invalid value: \"\": \"spec\" must validate all the schemas (allOf). None validated",
                ": Invalid value: \"\": \"spec\" must validate one and only one schema (oneOf). Found none valid",
                "spec.n: Invalid value: 11: spec.n in body should be less than or equal to 10",
                "spec.a: Required value",
            ]
        );
        assert_eq!(
            text(json!({"spec": {"a": "x", "b": "y", "n": -1}})),
            [
                ": Invalid value: \"\": \"spec\" must validate one and only one schema (oneOf). Found 2 valid alternatives",
                ": Invalid value: \"\": \"spec\" must not validate the schema (not)",
            ]
        );
        assert_eq!(
            text(json!({"spec": {"a": "x", "n": 1}})),
            [
                ": Invalid value: \"\": \"spec\" must validate at least one schema (anyOf)",
                "spec.n: Invalid value: 1: spec.n in body should be greater than or equal to 5",
            ]
        );
    }

    #[test]
    fn formats() {
        assert!(is_date_time("2024-01-02T03:04:05Z"));
        assert!(!is_date_time("2024-01-02"));
        assert!(is_date("2024-12-31") && !is_date("2024-13-01"));
        assert!(is_cidr("10.0.0.0/8") && !is_cidr("10.0.0.0/33"));
        assert!(is_hostname("a-b.example.com") && !is_hostname("-a"));
        assert!(format_ok("ipv4", "1.2.3.4") && !format_ok("ipv4", "1.2.3"));
        assert!(format_ok("anything-else", "x"));
    }
}
