//! CertificateSigningRequests (`certificates.k8s.io/v1`) as kube keeps
//! them: the requester recorded from the request's user, approval through
//! `/approval` (the `Approved` and `Denied` conditions, which `/status`
//! cannot change and no update can remove), and kube's validation. Nothing
//! here signs: that is a controller's job (kube-controller-manager's CSR
//! signer), and this server runs none.

use base64::Engine;
use serde_json::{Value, json};

use crate::user::User;

const APPROVAL: [&str; 2] = ["Approved", "Denied"];

/// Records who asks, as kube does on create (whatever the client sent).
pub(crate) fn set_requester(csr: &mut Value, user: &User) {
    let info = user.info();
    if !csr["spec"].is_object() {
        return;
    }
    for (k, v) in [
        ("username", &info["username"]),
        ("uid", &info["uid"]),
        ("groups", &info["groups"]),
    ] {
        match v {
            Value::Null => {
                if let Some(spec) = csr["spec"].as_object_mut() {
                    spec.remove(k);
                }
            }
            v => csr["spec"][k] = v.clone(),
        }
    }
}

fn is_approval(c: &Value) -> bool {
    c["type"].as_str().is_some_and(|t| APPROVAL.contains(&t))
}

/// A `/status` update keeps the approval conditions as they were.
pub(crate) fn keep_approval(old: &Value, new: &mut Value) {
    let kept: Vec<Value> = old["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|c| is_approval(c))
        .cloned()
        .collect();
    let mut conditions: Vec<Value> = new["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|c| !is_approval(c))
        .cloned()
        .collect();
    conditions.extend(kept);
    if conditions.is_empty() {
        if let Some(s) = new["status"].as_object_mut() {
            s.remove("conditions");
        }
    } else {
        new["status"]["conditions"] = json!(conditions);
    }
}

/// kube's validation of a CSR (`old` is the stored one on update).
pub(crate) fn errors(csr: &Value, old: Option<&Value>) -> Vec<(String, String)> {
    let mut errs = Vec::new();
    let spec = &csr["spec"];
    match spec["request"].as_str() {
        None | Some("") => errs.push(("spec.request".into(), "Required value".into())),
        Some(r) => {
            let pem = base64::engine::general_purpose::STANDARD
                .decode(r)
                .ok()
                .and_then(|b| String::from_utf8(b).ok())
                .unwrap_or_default();
            if !pem.contains("-----BEGIN CERTIFICATE REQUEST-----") {
                errs.push((
                    "spec.request".into(),
                    "Invalid value: []byte{...}: PEM block type must be CERTIFICATE REQUEST".into(),
                ));
            }
        }
    }
    if spec["signerName"].as_str().is_none_or(str::is_empty) {
        errs.push(("spec.signerName".into(), "Required value".into()));
    }
    let conditions = csr["status"]["conditions"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let has = |t: &str| conditions.iter().any(|c| c["type"] == t);
    if has("Approved") && has("Denied") {
        errs.push((
            "status.conditions".into(),
            "Invalid value: \"Denied\": Approved and Denied conditions are mutually exclusive"
                .into(),
        ));
    }
    for (i, c) in conditions.iter().enumerate() {
        if c["type"].as_str().is_none_or(str::is_empty) {
            errs.push((
                format!("status.conditions[{i}].type"),
                "Required value".into(),
            ));
        }
        if is_approval(c) && c["status"] != "True" {
            errs.push((
                format!("status.conditions[{i}].status"),
                format!(
                    "Unsupported value: {}: supported values: \"True\"",
                    c["status"]
                ),
            ));
        }
    }
    if let Some(old) = old {
        for t in APPROVAL {
            let had = old["status"]["conditions"]
                .as_array()
                .is_some_and(|cs| cs.iter().any(|c| c["type"] == t));
            if had && !has(t) {
                errs.push((
                    "status.conditions".into(),
                    format!("Forbidden: updates may not remove a condition of type {t:?}"),
                ));
            }
        }
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn csr(conditions: Value) -> Value {
        let request = base64::engine::general_purpose::STANDARD.encode(
            "-----BEGIN CERTIFICATE REQUEST-----\nMII\n-----END CERTIFICATE REQUEST-----\n",
        );
        json!({"spec": {"request": request, "signerName": "kubernetes.io/kube-apiserver-client", "usages": ["client auth"]},
            "status": {"conditions": conditions}})
    }

    #[test]
    fn approval_rules() {
        assert!(errors(&csr(json!([])), None).is_empty());
        let approved = csr(json!([{"type": "Approved", "status": "True"}]));
        assert!(errors(&approved, None).is_empty());
        let both = csr(
            json!([{"type": "Approved", "status": "True"}, {"type": "Denied", "status": "True"}]),
        );
        assert!(errors(&both, None)[0].1.contains("mutually exclusive"));
        let removed = errors(&csr(json!([])), Some(&approved));
        assert!(
            removed[0]
                .1
                .starts_with("Forbidden: updates may not remove")
        );
        let bad = json!({"spec": {"request": "bm90IGEgY3Ny"}});
        let e = errors(&bad, None);
        assert!(
            e.iter()
                .any(|(f, m)| f == "spec.request" && m.contains("CERTIFICATE REQUEST"))
        );
        assert!(e.iter().any(|(f, _)| f == "spec.signerName"));
    }

    #[test]
    fn status_updates_cannot_change_approval() {
        let old = csr(json!([{"type": "Approved", "status": "True"}]));
        let mut new = csr(json!([{"type": "Failed", "status": "True"}]));
        keep_approval(&old, &mut new);
        let types: Vec<&str> = new["status"]["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["type"].as_str().unwrap())
            .collect();
        assert_eq!(types, ["Failed", "Approved"]);
    }
}
