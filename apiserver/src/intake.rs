//! Request objects as kube-apiserver decodes them: `apiVersion` and `kind`
//! defaulted from the URL when a body leaves them out, unknown fields pruned
//! by the kind's schema (then a custom resource's schema defaults filled),
//! and the request's `fieldValidation` deciding what happens to them
//! (`Ignore`: dropped silently; `Warn`, the default: dropped with a
//! `Warning` header each; `Strict`: the request is refused), and to fields a
//! JSON body repeats (`duplicates.rs`).

mod duplicates;

use std::collections::HashMap;

use serde_json::{Value, json};

use crate::request::Query;
use crate::resources::Resource;
use crate::status::{ApiError, ApiResult, Target};

/// What a request asks the server to do with unknown fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FieldValidation {
    Ignore,
    Warn,
    Strict,
}

/// Which options a request's query parameters are (for error messages).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Options {
    Create,
    Update,
    Patch,
}

impl Options {
    fn kind(self) -> &'static str {
        match self {
            Self::Create => "CreateOptions",
            Self::Update => "UpdateOptions",
            Self::Patch => "PatchOptions",
        }
    }
}

impl FieldValidation {
    /// `fieldValidation` of a query; `Warn` when absent, as kube since 1.27.
    pub(crate) fn parse(q: &Query, options: Options) -> ApiResult<Self> {
        match q.get("fieldValidation").unwrap_or_default() {
            "" | "Warn" => Ok(Self::Warn),
            "Ignore" => Ok(Self::Ignore),
            "Strict" => Ok(Self::Strict),
            other => Err(ApiError::invalid(
                options.kind(),
                Target {
                    group: "meta.k8s.io",
                    resource: "",
                    name: "",
                },
                &[(
                    "fieldValidation".into(),
                    format!(
                        "Unsupported value: {other:?}: supported values: \"\", \"Ignore\", \"Strict\", \"Warn\""
                    ),
                )],
            )),
        }
    }
}

/// Fills `apiVersion` and `kind` from the URL when the body has none, as
/// kube's decoder defaults them from the request's group, version and kind.
/// A body that names another kind keeps it (and is refused later).
pub(crate) fn default_type_meta(res: &Resource, version: &str, v: &mut Value) {
    let Some(m) = v.as_object_mut() else {
        return;
    };
    let empty = |x: Option<&Value>| x.and_then(Value::as_str).is_none_or(str::is_empty);
    if empty(m.get("kind")) {
        m.insert("kind".into(), json!(res.kind));
    }
    if empty(m.get("apiVersion")) {
        m.insert("apiVersion".into(), json!(res.api_version(version)));
    }
}

/// Whether `v` is of the kind served at the URL (the only kind whose
/// schema can prune it).
fn is_of(res: &Resource, version: &str, v: &Value) -> bool {
    v["kind"].as_str() == Some(res.kind.as_str())
        && v["apiVersion"].as_str() == Some(res.api_version(version).as_str())
}

/// Prunes the fields the kind's schema does not have from `v` and returns
/// their paths, then fills a custom resource's schema defaults, as kube's
/// decoder coerces a body to its schema; nothing for kinds without a schema
/// (a CRD without one) or a body of another kind.
pub(crate) fn coerce(res: &Resource, version: &str, v: &mut Value) -> Vec<String> {
    if !is_of(res, version, v) {
        return vec![];
    }
    match res.schema(version) {
        Some(s) => {
            let unknown = s.prune(v);
            s.default(v);
            unknown
        }
        None => vec![],
    }
}

/// A stored custom resource as kube's storage decoder reads it back: pruned
/// and defaulted by the schema of the version it is stored in, so that a
/// CRD whose schema changed since the object was written shows the new
/// defaults (and drops fields it no longer has) on every read, while the
/// stored object itself stays as written. `None` when nothing changes.
pub(crate) fn coerce_stored(res: &Resource, v: &Value) -> Option<Value> {
    let version = v["apiVersion"].as_str()?.rsplit_once('/')?.1;
    let schema = res.schema(version)?;
    let mut coerced = v.clone();
    schema.prune(&mut coerced);
    schema.default(&mut coerced);
    (coerced != *v).then_some(coerced)
}

/// The fields a body repeats: a JSON body's by path and place, a YAML
/// body's in go-yaml's words (`line 9: key "foo" already set in map`).
#[derive(Debug, Default)]
pub(crate) struct Repeated {
    pub json: Vec<(usize, String)>,
    pub yaml: Vec<String>,
}

/// A create or update body decoded as `request::decode_body_as` decodes it,
/// with the fields it repeats (protobuf bodies: none).
pub(crate) fn decode(
    ct: &str,
    bytes: &[u8],
    res: &Resource,
    version: &str,
) -> ApiResult<(Value, Repeated)> {
    let mime = ct.split(';').next().unwrap_or("").trim();
    if !(mime.is_empty() || mime == "*/*" || mime.ends_with("json")) {
        let value = crate::request::decode_body_as(ct, bytes, Some((res, version)))?;
        let yaml = if mime.ends_with("yaml") {
            crate::yaml::duplicates::find(bytes)
        } else {
            Vec::new()
        };
        return Ok((value, Repeated { json: vec![], yaml }));
    }
    let d = duplicates::decode(bytes).map_err(|e| {
        ApiError::bad_request(format!("couldn't get version/kind; json parse error: {e}"))
    })?;
    crate::limits::check_body_depth(&d.value)?;
    Ok((
        d.value,
        Repeated {
            json: d.duplicates,
            yaml: vec![],
        },
    ))
}

/// What kube's strict decoder says of a body: `unknown field "a"` for each
/// pruned field, `duplicate field "b"` for each repeated one (a field both
/// unknown and repeated is only unknown, as for kube's typed objects), in
/// the order of the document when both are there.
pub(crate) fn problems(body: &[u8], unknown: &[String], repeated: Repeated) -> Vec<String> {
    if !repeated.yaml.is_empty() {
        // go-yaml's error comes first, as one problem (kube's YAML decoder
        // fails before the JSON one looks for unknown fields).
        let mut all = vec![crate::yaml::duplicates::error_text(&repeated.yaml)];
        all.extend(warnings(unknown));
        return all;
    }
    json_problems(body, unknown, repeated.json)
}

fn json_problems(body: &[u8], unknown: &[String], duplicates: Vec<(usize, String)>) -> Vec<String> {
    let below_unknown = |p: &str| {
        unknown.iter().any(|u| {
            p.strip_prefix(u.as_str())
                .is_some_and(|rest| rest.is_empty() || rest.starts_with(['.', '[']))
        })
    };
    let repeated: Vec<(usize, String)> = duplicates
        .into_iter()
        .filter(|(_, p)| !below_unknown(p))
        .collect();
    if repeated.is_empty() {
        return warnings(unknown);
    }
    let at = if unknown.is_empty() {
        HashMap::new()
    } else {
        duplicates::places(body, unknown)
    };
    let mut all: Vec<(usize, String)> = unknown
        .iter()
        .map(|u| {
            let place = at.get(u).copied().unwrap_or(usize::MAX);
            (place, format!("unknown field {u:?}"))
        })
        .collect();
    all.extend(
        repeated
            .into_iter()
            .map(|(place, p)| (place, format!("duplicate field {p:?}"))),
    );
    all.sort_by_key(|(place, _)| *place);
    all.into_iter().map(|(_, text)| text).collect()
}

/// kube's strict decoding error text: `unknown field "a", duplicate field "b"`.
pub(crate) fn strict_text(problems: &[String]) -> String {
    format!("strict decoding error: {}", problems.join(", "))
}

/// The warnings kube sends for pruned fields, one a field.
pub(crate) fn warnings(unknown: &[String]) -> Vec<String> {
    unknown
        .iter()
        .map(|f| format!("unknown field {f:?}"))
        .collect()
}

/// What a create or update body's [`problems`] come to under `fv`: an
/// error under `Strict` (kube's 400 for a body that cannot be decoded
/// strictly), else the warnings to send (none under `Ignore`).
pub(crate) fn body_outcome(
    res: &Resource,
    version: &str,
    fv: FieldValidation,
    problems: &[String],
) -> ApiResult<Vec<String>> {
    if problems.is_empty() || fv == FieldValidation::Ignore {
        return Ok(vec![]);
    }
    if fv == FieldValidation::Strict {
        return Err(ApiError::bad_request(format!(
            "{kind} in version {version:?} cannot be handled as a {kind}: {}",
            strict_text(problems),
            kind = res.kind,
        )));
    }
    Ok(problems.iter().flat_map(|p| yaml_warnings(p)).collect())
}

/// One warning per line of go-yaml's error, as kube's `parseYAMLWarnings`
/// splits it; any other problem as it is.
fn yaml_warnings(problem: &str) -> Vec<String> {
    match problem.strip_prefix("yaml: unmarshal errors:\n") {
        Some(lines) => lines.lines().map(|l| l.trim().to_owned()).collect(),
        None => vec![problem.to_owned()],
    }
}

/// Repeated keys in an apply patch (YAML, or JSON read as YAML): under
/// `Strict` kube's 400, under `Warn` a warning each.
pub(crate) fn apply_patch_repeats(fv: FieldValidation, body: &[u8]) -> ApiResult<Vec<String>> {
    if fv == FieldValidation::Ignore {
        return Ok(vec![]);
    }
    let found = crate::yaml::duplicates::find(body);
    if found.is_empty() {
        return Ok(vec![]);
    }
    if fv == FieldValidation::Strict {
        return Err(ApiError::bad_request(format!(
            "error strict decoding YAML: error converting YAML to JSON: {}",
            crate::yaml::duplicates::error_text(&found)
        )));
    }
    Ok(found)
}

/// The same for a patch: kube refuses a strictly validated patch whose
/// result has unknown fields with `422 Invalid` on the field `patch`.
pub(crate) fn patch_outcome(
    fv: FieldValidation,
    patched: &Value,
    unknown: &[String],
) -> ApiResult<Vec<String>> {
    if unknown.is_empty() || fv == FieldValidation::Ignore {
        return Ok(vec![]);
    }
    if fv == FieldValidation::Strict {
        let shown = serde_json::to_string(patched).unwrap_or_default();
        return Err(ApiError::invalid(
            "",
            Target {
                group: "",
                resource: "",
                name: "",
            },
            &[(
                "patch".into(),
                format!(
                    "Invalid value: {shown:?}: {}",
                    strict_text(&warnings(unknown))
                ),
            )],
        ));
    }
    Ok(warnings(unknown))
}

/// How much warning text one response carries, in characters, and what
/// each warning is cut to once that is exceeded: kube's warning recorder's
/// limits, so that a body full of unknown fields cannot make the response's
/// headers grow without bound.
const MAX_WARNING_CHARS: usize = 4 * 1024;
const TRUNCATED_WARNING_CHARS: usize = 256;

/// The warnings a response carries, as kube's recorder keeps them: each
/// text once; all of them whole while they fit in 4,096 characters; once
/// they do not, every one (those already kept too) cut to 256 characters
/// and further ones kept only while fewer than 4,096 have been written.
pub(crate) fn capped(warnings: Vec<String>) -> Vec<String> {
    let cut = |w: &str| -> String { w.chars().take(TRUNCATED_WARNING_CHARS).collect() };
    let mut seen = std::collections::HashSet::new();
    let mut kept: Vec<String> = Vec::new();
    let mut written = 0;
    let mut truncating = false;
    for text in warnings {
        if text.is_empty() || (truncating && written >= MAX_WARNING_CHARS) {
            continue;
        }
        if !seen.insert(text.clone()) {
            continue;
        }
        let item = if truncating { cut(&text) } else { text };
        let len = item.chars().count();
        if truncating || written + len <= MAX_WARNING_CHARS {
            written += len;
            kept.push(item);
            continue;
        }
        // The first to overflow: start again with every warning so far cut.
        truncating = true;
        kept.push(item);
        kept = kept.iter().map(|w| cut(w)).collect();
        written = kept.iter().map(|w| w.chars().count()).sum();
    }
    kept
}

/// A `Warning` header value (RFC 7234: code 299, no agent, quoted text).
pub(crate) fn warning_header(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 10);
    out.push_str("299 - \"");
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources::builtins;

    fn res(plural: &str) -> Resource {
        builtins()
            .into_iter()
            .find(|r| r.plural == plural && r.group.is_empty())
            .unwrap()
    }

    #[test]
    fn type_meta_defaults_from_the_url() {
        let mut v = json!({"metadata": {"name": "x"}});
        default_type_meta(&res("configmaps"), "v1", &mut v);
        assert_eq!(
            (v["apiVersion"].as_str(), v["kind"].as_str()),
            (Some("v1"), Some("ConfigMap"))
        );
        let mut other = json!({"kind": "Secret"});
        default_type_meta(&res("configmaps"), "v1", &mut other);
        assert_eq!(other["kind"], "Secret");
        assert_eq!(other["apiVersion"], "v1");
    }

    #[test]
    fn the_three_modes() {
        let cm = res("configmaps");
        let mut v =
            json!({"apiVersion": "v1", "kind": "ConfigMap", "bogus": 1, "metadata": {"name": "x"}});
        let unknown = coerce(&cm, "v1", &mut v);
        assert_eq!(unknown, ["bogus"]);
        let texts = problems(b"", &unknown, Repeated::default());
        assert!(v.get("bogus").is_none());
        assert!(
            body_outcome(&cm, "v1", FieldValidation::Ignore, &texts)
                .unwrap()
                .is_empty()
        );
        assert_eq!(
            body_outcome(&cm, "v1", FieldValidation::Warn, &texts).unwrap(),
            ["unknown field \"bogus\""]
        );
        let e = body_outcome(&cm, "v1", FieldValidation::Strict, &texts).unwrap_err();
        assert_eq!((e.code, e.reason), (400, "BadRequest"));
        assert_eq!(
            e.message,
            "ConfigMap in version \"v1\" cannot be handled as a ConfigMap: strict decoding error: unknown field \"bogus\""
        );
        let e = patch_outcome(FieldValidation::Strict, &v, &unknown).unwrap_err();
        assert_eq!((e.code, e.reason), (422, "Invalid"));
        assert!(
            e.message
                .starts_with(" \"\" is invalid: patch: Invalid value: "),
            "{}",
            e.message
        );
        assert!(
            e.message
                .ends_with("strict decoding error: unknown field \"bogus\"")
        );
    }

    #[test]
    fn bad_directives_are_refused_as_kube_does() {
        let e =
            FieldValidation::parse(&Query::parse(Some("fieldValidation=Loud")), Options::Create)
                .unwrap_err();
        assert_eq!(e.code, 422);
        assert_eq!(
            e.message,
            "CreateOptions.meta.k8s.io \"\" is invalid: fieldValidation: Unsupported value: \"Loud\": supported values: \"\", \"Ignore\", \"Strict\", \"Warn\""
        );
    }

    #[test]
    fn warnings_are_capped_as_kube_caps_them() {
        // Whole while they fit, duplicates once.
        let few = vec!["a".repeat(300), "b".into(), "b".into()];
        assert_eq!(capped(few), vec!["a".repeat(300), "b".to_owned()]);
        // Past 4,096 characters: each cut to 256, earlier ones too, and
        // more kept only while fewer than 4,096 are written.
        let many: Vec<String> = (0..100)
            .map(|i| format!("{i:03}{}", "x".repeat(297)))
            .collect();
        let kept = capped(many);
        assert!(kept.iter().all(|w| w.chars().count() == 256));
        assert_eq!(kept.len(), 16, "4,096 / 256");
        assert!(kept[0].starts_with("000") && kept[15].starts_with("015"));
        // Characters, not bytes.
        let wide = capped(vec!["é".repeat(5000)]);
        assert_eq!(wide[0].chars().count(), 256);
    }

    #[test]
    fn warning_headers_quote_their_text() {
        assert_eq!(
            warning_header("unknown field \"a\\b\""),
            "299 - \"unknown field \\\"a\\\\b\\\"\""
        );
    }
}
