//! Field errors in kube's words: each kind of cause (`Required value`,
//! `Invalid value: <v>`, `Duplicate value`, `Unsupported value`, `Forbidden`,
//! `Not found`) worded as apimachinery's `field.Error` prints it, and the
//! shared format checks (RFC 1123 labels, port numbers and names, env var
//! names) with their messages.

use std::fmt::Display;

use serde_json::Value;

/// `(field path, message)` pairs, in the order kube reports them.
pub(crate) type Causes = Vec<(String, String)>;

/// A value as `field.Error` prints it: strings quoted, numbers and booleans
/// bare, `null` for nothing.
pub(crate) fn shown(v: &Value) -> String {
    match v {
        Value::String(s) => format!("{s:?}"),
        Value::Null => "null".into(),
        other => other.to_string(),
    }
}

pub(crate) fn required(errs: &mut Causes, path: impl Display, detail: &str) {
    let msg = if detail.is_empty() {
        "Required value".to_owned()
    } else {
        format!("Required value: {detail}")
    };
    errs.push((path.to_string(), msg));
}

pub(crate) fn invalid(errs: &mut Causes, path: impl Display, value: &Value, detail: &str) {
    errs.push((
        path.to_string(),
        format!("Invalid value: {}: {detail}", shown(value)),
    ));
}

/// `Invalid value` with a value Go prints itself (a struct, with `%#v`).
pub(crate) fn invalid_raw(errs: &mut Causes, path: impl Display, shown: &str, detail: &str) {
    errs.push((
        path.to_string(),
        format!("Invalid value: {shown}: {detail}"),
    ));
}

pub(crate) fn duplicate(errs: &mut Causes, path: impl Display, value: &str) {
    errs.push((path.to_string(), format!("Duplicate value: {value}")));
}

pub(crate) fn forbidden(errs: &mut Causes, path: impl Display, detail: &str) {
    errs.push((path.to_string(), format!("Forbidden: {detail}")));
}

pub(crate) fn not_found(errs: &mut Causes, path: impl Display, value: &Value) {
    errs.push((path.to_string(), format!("Not found: {}", shown(value))));
}

/// `Unsupported value: "x": supported values: "a", "b"` (kube lists them
/// sorted).
pub(crate) fn not_supported(
    errs: &mut Causes,
    path: impl Display,
    value: &Value,
    supported: &[&str],
) {
    let list: Vec<String> = supported.iter().map(|s| format!("{s:?}")).collect();
    errs.push((
        path.to_string(),
        format!(
            "Unsupported value: {}: supported values: {}",
            shown(value),
            list.join(", ")
        ),
    ));
}

const LABEL_MSG: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";

/// `[a-z0-9]([-a-z0-9]*[a-z0-9])?`, whatever its length.
fn label_chars(s: &str) -> bool {
    let alnum = |c: u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    let b = s.as_bytes();
    !b.is_empty()
        && alnum(b[0])
        && alnum(b[b.len() - 1])
        && b.iter().all(|&c| alnum(c) || c == b'-')
}

/// What `IsDNS1123Label` says of `s` (nothing when it is one).
pub(crate) fn dns1123_label(s: &str) -> Vec<&'static str> {
    let mut out = Vec::new();
    if s.len() > 63 {
        out.push("must be no more than 63 characters");
    }
    if !label_chars(s) {
        if !s.is_empty() && s.split('.').all(label_chars) {
            out.push("must not contain dots");
        } else {
            out.push(LABEL_MSG);
        }
    }
    out
}

/// `ValidateDNS1123Label`: one `Invalid value` per problem.
pub(crate) fn check_label(errs: &mut Causes, path: impl Display, s: &str) {
    for msg in dns1123_label(s) {
        invalid(errs, &path, &Value::String(s.to_owned()), msg);
    }
}

pub(crate) const PORT_RANGE: &str = "must be between 1 and 65535, inclusive";

/// What `IsValidPortName` says of `s`.
pub(crate) fn port_name(s: &str) -> Vec<&'static str> {
    let mut out = Vec::new();
    if s.len() > 15 {
        out.push("must be no more than 15 characters");
    }
    if s.is_empty()
        || !s
            .bytes()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-')
    {
        out.push("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)");
    }
    if !s.bytes().any(|c| c.is_ascii_lowercase()) {
        out.push("must contain at least one letter (a-z)");
    }
    if s.contains("--") {
        out.push("must not contain consecutive hyphens");
    }
    if s.starts_with('-') || s.ends_with('-') {
        out.push("must not begin or end with a hyphen");
    }
    out
}

/// `ValidatePortNumOrName`: an int-or-string port.
pub(crate) fn check_port_num_or_name(errs: &mut Causes, path: impl Display, port: &Value) {
    match port {
        Value::String(s) => {
            for msg in port_name(s) {
                invalid(errs, &path, port, msg);
            }
        }
        Value::Number(n) => {
            if !n.as_i64().is_some_and(|p| (1..=65535).contains(&p)) {
                invalid(errs, &path, port, PORT_RANGE);
            }
        }
        // What Go's decoder makes of an absent int-or-string: port 0.
        _ => invalid(errs, &path, &Value::from(0), PORT_RANGE),
    }
}

/// What `IsRelaxedEnvVarName` says of `s` (relaxed names are the default
/// since Kubernetes 1.32): printable ASCII other than `=`.
pub(crate) fn env_var_name(s: &str) -> Option<&'static str> {
    s.chars()
        .any(|c| !c.is_ascii() || c.is_ascii_control() || c == '=')
        .then_some(
            "a valid environment variable name must consist only of printable ASCII characters other than '='",
        )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn values_print_as_go_prints_them() {
        assert_eq!(shown(&json!("a")), "\"a\"");
        assert_eq!(shown(&json!(70000)), "70000");
        assert_eq!(shown(&Value::Null), "null");
        let mut e = Causes::new();
        not_supported(&mut e, "p", &json!("X"), &["SCTP", "TCP", "UDP"]);
        assert_eq!(
            e[0].1,
            "Unsupported value: \"X\": supported values: \"SCTP\", \"TCP\", \"UDP\""
        );
    }

    #[test]
    fn labels_port_names_and_env_names() {
        assert!(dns1123_label("web-1").is_empty());
        assert_eq!(dns1123_label("a.b"), ["must not contain dots"]);
        assert_eq!(dns1123_label("Web"), [LABEL_MSG]);
        assert_eq!(dns1123_label(&"a".repeat(64)).len(), 1);
        assert!(port_name("http").is_empty());
        assert_eq!(
            port_name("8080"),
            ["must contain at least one letter (a-z)"]
        );
        assert_eq!(
            port_name("-a--b-"),
            [
                "must not contain consecutive hyphens",
                "must not begin or end with a hyphen"
            ]
        );
        assert_eq!(port_name("a-very-long-port-name").len(), 1);
        assert!(env_var_name("MY_VAR.x-1").is_none());
        assert!(env_var_name("A=B").is_some());
        let mut e = Causes::new();
        check_port_num_or_name(&mut e, "p", &json!(0));
        check_port_num_or_name(&mut e, "p", &json!("HTTP"));
        assert_eq!(
            e[0].1,
            "Invalid value: 0: must be between 1 and 65535, inclusive"
        );
        assert_eq!(
            e[1].1,
            "Invalid value: \"HTTP\": must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)"
        );
    }
}
