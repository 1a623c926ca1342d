//! Name and metadata validation with the real server's messages.

use serde_json::Value;

const SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const LABEL_MSG: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";

fn alnum(c: u8) -> bool {
    c.is_ascii_lowercase() || c.is_ascii_digit()
}

/// RFC 1123 label: `[a-z0-9]([-a-z0-9]*[a-z0-9])?`, at most 63 characters.
pub(crate) fn is_dns1123_label(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= 63
        && alnum(b[0])
        && alnum(b[b.len() - 1])
        && b.iter().all(|&c| alnum(c) || c == b'-')
}

/// RFC 1123 subdomain: dot-separated labels, at most 253 characters.
pub(crate) fn is_dns1123_subdomain(s: &str) -> bool {
    s.len() <= 253 && s.split('.').all(is_dns1123_label)
}

/// Problems with a name for this kind: `(field, message)` pairs.
pub(crate) fn name_errors(name: &str, label_only: bool) -> Vec<(String, String)> {
    let ok = if label_only {
        is_dns1123_label(name)
    } else {
        is_dns1123_subdomain(name)
    };
    if ok {
        vec![]
    } else {
        let msg = if label_only { LABEL_MSG } else { SUBDOMAIN_MSG };
        vec![(
            "metadata.name".into(),
            format!("Invalid value: {name:?}: {msg}"),
        )]
    }
}

fn is_label_value(v: &str) -> bool {
    let b = v.as_bytes();
    let ok = |c: u8| c.is_ascii_alphanumeric();
    b.is_empty()
        || (b.len() <= 63
            && ok(b[0])
            && ok(b[b.len() - 1])
            && b.iter().all(|&c| ok(c) || matches!(c, b'-' | b'_' | b'.')))
}

fn is_qualified_name(k: &str) -> bool {
    let (prefix, name) = match k.rsplit_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, k),
    };
    prefix.is_none_or(is_dns1123_subdomain) && !name.is_empty() && is_label_value(name)
}

/// Checks metadata shapes: labels, annotations, finalizers, ownerReferences.
pub(crate) fn metadata_errors(obj: &Value) -> Vec<(String, String)> {
    let mut errs = Vec::new();
    let meta = &obj["metadata"];
    if let Some(labels) = meta.get("labels").filter(|l| !l.is_null()) {
        match labels.as_object() {
            Some(m) => {
                for (k, v) in m {
                    if !is_qualified_name(k) {
                        errs.push(("metadata.labels".to_string(), format!("Invalid value: {k:?}: name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character")));
                    }
                    match v.as_str() {
                        Some(s) if is_label_value(s) => {}
                        _ => errs.push((
                            "metadata.labels".into(),
                            format!("Invalid value: {v}: a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"),
                        )),
                    }
                }
            }
            None => errs.push((
                "metadata.labels".into(),
                "Invalid value: must be a map of strings".into(),
            )),
        }
    }
    if let Some(a) = meta.get("annotations").filter(|a| !a.is_null())
        && !a
            .as_object()
            .is_some_and(|m| m.values().all(Value::is_string))
    {
        errs.push((
            "metadata.annotations".into(),
            "Invalid value: must be a map of strings".into(),
        ));
    }
    if let Some(f) = meta.get("finalizers").filter(|f| !f.is_null())
        && !f.as_array().is_some_and(|a| a.iter().all(Value::is_string))
    {
        errs.push((
            "metadata.finalizers".into(),
            "Invalid value: must be a list of strings".into(),
        ));
    }
    if let Some(o) = meta.get("ownerReferences").filter(|o| !o.is_null()) {
        match o.as_array() {
            Some(refs) => {
                for (i, r) in refs.iter().enumerate() {
                    for f in ["apiVersion", "kind", "name", "uid"] {
                        if r[f].as_str().is_none_or(str::is_empty) {
                            errs.push((
                                format!("metadata.ownerReferences[{i}].{f}"),
                                "Required value".into(),
                            ));
                        }
                    }
                }
            }
            None => errs.push((
                "metadata.ownerReferences".into(),
                "Invalid value: must be a list".into(),
            )),
        }
    }
    errs
}

/// Minimal per-kind checks for the built-ins, on the fields controllers rely on.
pub(crate) fn kind_errors(group: &str, plural: &str, obj: &Value) -> Vec<(String, String)> {
    let mut errs = crate::admission::validation_errors(group, plural, obj);
    match (group, plural) {
        ("", "pods") => match obj["spec"]["containers"].as_array() {
            Some(cs) if !cs.is_empty() => {
                for (i, c) in cs.iter().enumerate() {
                    if c["name"].as_str().is_none_or(str::is_empty) {
                        errs.push((
                            format!("spec.containers[{i}].name"),
                            "Required value".into(),
                        ));
                    }
                    if c["image"].as_str().is_none_or(str::is_empty) {
                        errs.push((
                            format!("spec.containers[{i}].image"),
                            "Required value".into(),
                        ));
                    }
                }
            }
            _ => errs.push(("spec.containers".into(), "Required value".into())),
        },
        ("apps", "deployments" | "replicasets") => {
            let sel = &obj["spec"]["selector"];
            if !sel.is_object() {
                errs.push(("spec.selector".into(), "Required value".into()));
            } else if let Some(ml) = sel["matchLabels"].as_object() {
                let labels = &obj["spec"]["template"]["metadata"]["labels"];
                if ml.iter().any(|(k, v)| labels.get(k) != Some(v)) {
                    errs.push((
                        "spec.template.metadata.labels".into(),
                        format!(
                            "Invalid value: {}: `selector` does not match template `labels`",
                            labels
                        ),
                    ));
                }
            }
            if let Some(r) = obj["spec"].get("replicas")
                && r.as_i64().is_none_or(|n| n < 0)
            {
                errs.push((
                    "spec.replicas".into(),
                    format!("Invalid value: {r}: must be greater than or equal to 0"),
                ));
            }
        }
        ("", "configmaps" | "secrets") => {
            for f in ["data", "binaryData", "stringData"] {
                if let Some(d) = obj.get(f).filter(|d| !d.is_null())
                    && !d
                        .as_object()
                        .is_some_and(|m| m.values().all(Value::is_string))
                {
                    errs.push((f.into(), "Invalid value: must be a map of strings".into()));
                }
            }
        }
        _ => {}
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names() {
        assert!(is_dns1123_subdomain("web-1.example"));
        assert!(!is_dns1123_subdomain("Web"));
        assert!(!is_dns1123_subdomain("-a"));
        assert!(is_dns1123_label("default"));
        assert!(!is_dns1123_label("a.b"));
        assert_eq!(name_errors("Bad_Name", false)[0].0, "metadata.name");
    }

    #[test]
    fn metadata_shapes() {
        assert!(
            metadata_errors(&json!({"metadata": {"labels": {"app": "web", "x.io/y": ""}}}))
                .is_empty()
        );
        assert_eq!(
            metadata_errors(&json!({"metadata": {"labels": {"app": "no spaces"}}})).len(),
            1
        );
        assert_eq!(
            metadata_errors(&json!({"metadata": {"ownerReferences": [{"kind": "X"}]}})).len(),
            3
        );
    }

    #[test]
    fn deployment_selector_must_match() {
        let d = json!({"spec": {"selector": {"matchLabels": {"app": "a"}}, "template": {"metadata": {"labels": {"app": "b"}}}}});
        assert_eq!(kind_errors("apps", "deployments", &d).len(), 1);
        assert_eq!(
            kind_errors("", "pods", &json!({"spec": {}}))[0].0,
            "spec.containers"
        );
    }
}
