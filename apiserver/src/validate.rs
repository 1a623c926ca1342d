//! Name and metadata validation with the real server's messages, and the
//! per-kind rules (`pod_spec.rs`, `service.rs`, `storage.rs`) in kube's words
//! (`field.rs`).

mod cronjob;
mod event;
mod job;
mod pod_spec;
mod pod_update;
mod service;
mod storage;
pub(crate) use service::NODE_PORTS;

use serde_json::{Value, json};

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

/// How a kind's names are checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NameRule {
    /// An RFC 1123 label (namespaces).
    Label,
    /// An RFC 1123 subdomain (most kinds).
    Subdomain,
    /// Anything that can be one URL path segment (RBAC objects, whose
    /// names hold colons, and APIServices, `v1.` among them).
    PathSegment,
}

/// kube's rule for the names of `group`/`plural`.
pub(crate) fn name_rule(group: &str, plural: &str) -> NameRule {
    match (group, plural) {
        ("", "namespaces") => NameRule::Label,
        ("rbac.authorization.k8s.io", _) | ("apiregistration.k8s.io", "apiservices") => {
            NameRule::PathSegment
        }
        _ => NameRule::Subdomain,
    }
}

/// Problems with a name under `rule`: `(field, message)` pairs, in kube's words.
pub(crate) fn name_errors_for(name: &str, rule: NameRule) -> Vec<(String, String)> {
    match rule {
        NameRule::Label => name_errors(name, true),
        NameRule::Subdomain => name_errors(name, false),
        NameRule::PathSegment => {
            let why = match name {
                "" => {
                    return vec![(
                        "metadata.name".into(),
                        "Required value: name or generateName is required".into(),
                    )];
                }
                "." => "may not be '.'",
                ".." => "may not be '..'",
                n if n.contains('/') => "may not contain '/'",
                n if n.contains('%') => "may not contain '%'",
                _ => return vec![],
            };
            vec![(
                "metadata.name".into(),
                format!("Invalid value: {name:?}: {why}"),
            )]
        }
    }
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

fn set_list(v: &Value) -> bool {
    v.as_array().is_some_and(|a| !a.is_empty())
}

/// Where the pod spec of an object of `group`/`plural` is: a pod's own, or
/// the template of a workload.
fn pod_spec_path(group: &str, plural: &str) -> Option<&'static [&'static str]> {
    Some(match (group, plural) {
        ("", "pods") => &["spec"],
        ("", "podtemplates") => &["template", "spec"],
        ("", "replicationcontrollers")
        | ("apps", "deployments" | "replicasets" | "statefulsets" | "daemonsets")
        | ("batch", "jobs") => &["spec", "template", "spec"],
        ("batch", "cronjobs") => &["spec", "jobTemplate", "spec", "template", "spec"],
        _ => return None,
    })
}

/// The pod spec of a StatefulSet's template with a volume for each of its
/// `volumeClaimTemplates` (as its pods get them), so mounts of a claim
/// validate as they do on its pods.
fn with_claim_volumes(set: &Value, spec: &Value) -> Value {
    let mut spec = spec.clone();
    let Some(claims) = set["spec"]["volumeClaimTemplates"].as_array() else {
        return spec;
    };
    if !spec["volumes"].is_array() {
        spec["volumes"] = json!([]);
    }
    if let Some(volumes) = spec["volumes"].as_array_mut() {
        for claim in claims {
            let name = &claim["metadata"]["name"];
            if !volumes.iter().any(|v| &v["name"] == name) {
                volumes.push(json!({"name": name, "persistentVolumeClaim": {"claimName": name}}));
            }
        }
    }
    spec
}

/// Per-kind checks for the built-ins, in kube's words: pod specs (of pods
/// and of every template), Services, workloads' selectors and replicas,
/// ConfigMap and Secret data, CronJobs. `pod`: a pod's resources as
/// admission parsed them, if it has; `old`: the stored object an update
/// replaces (a CronJob's update rules are looser).
pub(crate) fn kind_errors(
    group: &str,
    plural: &str,
    obj: &Value,
    pod: Option<&windlass_selector::PodResources>,
    old: Option<&Value>,
) -> Vec<(String, String)> {
    let mut errs = crate::admission::validation_errors(group, plural, obj, pod);
    if let Some(at) = pod_spec_path(group, plural) {
        let spec = at.iter().fold(obj, |v, k| &v[*k]);
        // A StatefulSet's pods mount its claim templates as volumes.
        let with_claims = (plural == "statefulsets").then(|| with_claim_volumes(obj, spec));
        let spec = with_claims.as_ref().unwrap_or(spec);
        let path = at.join(".");
        pod_spec::errors(spec, &path, &mut errs);
        if plural == "pods" && old.is_none() && set_list(&spec["ephemeralContainers"]) {
            errs.push((
                "spec.ephemeralContainers".into(),
                "Forbidden: cannot be set on create".into(),
            ));
        }
        if plural != "pods" {
            // A template's containers are held to what a pod's are:
            // requests at most limits, known resource names.
            let prefix = &path[..path.len() - "spec".len()];
            let as_pod =
                crate::admission::validation_errors("", "pods", &json!({"spec": spec}), None);
            errs.extend(as_pod.into_iter().map(|(f, m)| (format!("{prefix}{f}"), m)));
        }
    }
    match (group, plural) {
        ("", "services") => errs.extend(service::errors(obj)),
        ("", "persistentvolumeclaims") => errs.extend(storage::claim_errors(obj)),
        ("", "persistentvolumes") => errs.extend(storage::volume_errors(obj)),
        ("storage.k8s.io", "storageclasses") => errs.extend(storage::class_errors(obj)),
        ("scheduling.k8s.io", "priorityclasses") => {
            errs.extend(crate::admission::priority::class_errors(obj));
        }
        ("apps", "deployments" | "replicasets") => {
            selector_errors(&obj["spec"], &mut errs);
            if let Some(r) = obj["spec"].get("replicas")
                && r.as_i64().is_none_or(|n| n < 0)
            {
                errs.push((
                    "spec.replicas".into(),
                    format!("Invalid value: {r}: must be greater than or equal to 0"),
                ));
            }
        }
        ("batch", "jobs") => job_errors(obj, &mut errs),
        ("batch", "cronjobs") => errs.extend(cronjob::errors(obj, old)),
        ("", "events") => errs.extend(event::errors(obj, false)),
        // An update's are all in `update_errors`.
        ("events.k8s.io", "events") if old.is_none() => errs.extend(event::errors(obj, true)),
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

/// A workload's selector, in kube's words: required, and its
/// `matchLabels` matching the template's labels.
fn selector_errors(spec: &Value, errs: &mut Vec<(String, String)>) {
    let selector = &spec["selector"];
    if !selector.is_object() {
        errs.push(("spec.selector".into(), "Required value".into()));
    } else if let Some(ml) = selector["matchLabels"].as_object() {
        let labels = &spec["template"]["metadata"]["labels"];
        if ml.iter().any(|(k, v)| labels.get(k) != Some(v)) {
            errs.push((
                "spec.template.metadata.labels".into(),
                format!("Invalid value: {labels}: `selector` does not match template `labels`"),
            ));
        }
    }
}

/// A Job's own rules, in kube's words: a selector its template's labels
/// match (the server generates both unless `spec.manualSelector`), a
/// restart policy of `OnFailure` or `Never`, a known completion mode
/// (`Indexed` with `completions`), counts that are not negative, and its
/// policies (`job.rs`).
fn job_errors(obj: &Value, errs: &mut Vec<(String, String)>) {
    let spec = &obj["spec"];
    selector_errors(spec, errs);
    let policy = &spec["template"]["spec"]["restartPolicy"];
    if !matches!(policy.as_str(), Some("OnFailure" | "Never")) {
        errs.push((
            "spec.template.spec.restartPolicy".into(),
            match policy.as_str() {
                Some(p) if !p.is_empty() => format!(
                    "Unsupported value: \"{p}\": supported values: \"OnFailure\", \"Never\""
                ),
                _ => "Required value: valid values: \"OnFailure\", \"Never\"".into(),
            },
        ));
    }
    match spec["completionMode"].as_str() {
        None | Some("NonIndexed") => {}
        Some("Indexed") => {
            if spec["completions"].is_null() {
                errs.push((
                    "spec.completions".into(),
                    "Required value: when completion mode is Indexed".into(),
                ));
            }
        }
        Some(other) => errs.push((
            "spec.completionMode".into(),
            format!(
                "Unsupported value: \"{other}\": supported values: \"NonIndexed\", \"Indexed\""
            ),
        )),
    }
    for field in [
        "parallelism",
        "completions",
        "backoffLimit",
        "activeDeadlineSeconds",
        "ttlSecondsAfterFinished",
        "backoffLimitPerIndex",
        "maxFailedIndexes",
    ] {
        if let Some(v) = spec.get(field).filter(|v| !v.is_null())
            && v.as_i64().is_none_or(|n| n < 0)
        {
            errs.push((
                format!("spec.{field}"),
                format!("Invalid value: {v}: must be greater than or equal to 0"),
            ));
        }
    }
    job::errors(spec, errs);
}

/// The StatefulSet spec fields an update may change, and kube's words for
/// changing any other.
const STATEFULSET_MUTABLE: [&str; 6] = [
    "replicas",
    "ordinals",
    "template",
    "updateStrategy",
    "persistentVolumeClaimRetentionPolicy",
    "minReadySeconds",
];
const STATEFULSET_FORBIDDEN: &str = "Forbidden: updates to statefulset spec for fields other than \
    'replicas', 'ordinals', 'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' \
    and 'minReadySeconds' are forbidden";

/// What an update may not change, as kube's update validations say it
/// (`old` is the stored object): workload selectors, a StatefulSet's spec
/// beyond the fields kube lets change, a Job's template, the contents of an
/// immutable ConfigMap or Secret.
pub(crate) fn update_errors(
    group: &str,
    plural: &str,
    old: &Value,
    new: &Value,
    sub: &str,
) -> Vec<(String, String)> {
    let mut errs = Vec::new();
    let immutable = |field: &str, a: &Value, b: &Value, errs: &mut Vec<(String, String)>| {
        if a != b {
            errs.push((
                field.to_owned(),
                format!("Invalid value: {b}: field is immutable"),
            ));
        }
    };
    match (group, plural) {
        // A status write keeps the spec as stored (`write::merge_parts`);
        // kube holds it to the status rules alone.
        ("", "pods") if sub != "status" => errs.extend(pod_update::errors(old, new, sub)),
        ("apps", "deployments" | "replicasets" | "daemonsets") => {
            immutable(
                "spec.selector",
                &old["spec"]["selector"],
                &new["spec"]["selector"],
                &mut errs,
            );
        }
        ("apps", "statefulsets") => {
            let fixed = |spec: &Value| {
                let mut spec = spec.clone();
                if let Some(m) = spec.as_object_mut() {
                    for f in STATEFULSET_MUTABLE {
                        m.remove(f);
                    }
                }
                spec
            };
            if fixed(&old["spec"]) != fixed(&new["spec"]) {
                errs.push(("spec".into(), STATEFULSET_FORBIDDEN.into()));
            }
        }
        ("batch", "jobs") => {
            immutable(
                "spec.selector",
                &old["spec"]["selector"],
                &new["spec"]["selector"],
                &mut errs,
            );
            immutable(
                "spec.template",
                &old["spec"]["template"],
                &new["spec"]["template"],
                &mut errs,
            );
            job::update_errors(&old["spec"], &new["spec"], &mut errs);
        }
        ("", "persistentvolumeclaims") => errs.extend(storage::claim_update_errors(old, new)),
        ("events.k8s.io", "events") => errs.extend(event::update_errors(new, old)),
        ("storage.k8s.io", "storageclasses") => {
            errs.extend(storage::class_update_errors(old, new));
        }
        ("scheduling.k8s.io", "priorityclasses") => {
            errs.extend(crate::admission::priority::class_update_errors(old, new));
        }
        ("", "configmaps" | "secrets") if old["immutable"] == true => {
            if new["immutable"] != true {
                errs.push((
                    "immutable".into(),
                    "Forbidden: field is immutable when `immutable` is set".into(),
                ));
            }
            for f in ["data", "binaryData"] {
                if old.get(f) != new.get(f) {
                    errs.push((
                        f.into(),
                        "Forbidden: field is immutable when `immutable` is set".into(),
                    ));
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
    fn a_statefulsets_mounts_may_name_its_claim_templates() {
        let sts = |claims: Value| {
            json!({"spec": {
                "selector": {"matchLabels": {"app": "db"}},
                "template": {"metadata": {"labels": {"app": "db"}}, "spec": {
                    "restartPolicy": "Always", "dnsPolicy": "ClusterFirst",
                    "containers": [{"name": "db", "image": "db",
                        "volumeMounts": [{"name": "data", "mountPath": "/data"}]}]}},
                "volumeClaimTemplates": claims
            }})
        };
        let mount_errors = |v: &Value| {
            kind_errors("apps", "statefulsets", v, None, None)
                .into_iter()
                .filter(|(f, _)| f.contains("volumeMounts"))
                .collect::<Vec<_>>()
        };
        assert!(mount_errors(&sts(json!([{"metadata": {"name": "data"}}]))).is_empty());
        assert_eq!(
            mount_errors(&sts(json!([]))),
            [(
                "spec.template.spec.containers[0].volumeMounts[0].name".to_owned(),
                "Not found: \"data\"".to_owned()
            )]
        );
    }

    #[test]
    fn jobs_are_held_to_kubes_rules() {
        let job = |spec: Value| json!({"spec": spec});
        let base = || {
            json!({"selector": {"matchLabels": {"job-name": "pi"}},
                   "template": {"metadata": {"labels": {"job-name": "pi"}},
                                "spec": {"restartPolicy": "Never"}}})
        };
        let errs = |spec: Value| -> Vec<(String, String)> {
            let mut e = Vec::new();
            job_errors(&job(spec), &mut e);
            e
        };
        assert!(errs(base()).is_empty());
        let mut always = base();
        always["template"]["spec"]["restartPolicy"] = json!("Always");
        assert_eq!(
            errs(always),
            [(
                "spec.template.spec.restartPolicy".to_owned(),
                r#"Unsupported value: "Always": supported values: "OnFailure", "Never""#.to_owned()
            )]
        );
        let mut other = base();
        other["template"]["metadata"]["labels"] = json!({"job-name": "other"});
        assert_eq!(errs(other)[0].0, "spec.template.metadata.labels");
        let mut indexed = base();
        indexed["completionMode"] = json!("Indexed");
        assert_eq!(
            errs(indexed),
            [(
                "spec.completions".to_owned(),
                "Required value: when completion mode is Indexed".to_owned()
            )]
        );
        let mut negative = base();
        negative["parallelism"] = json!(-1);
        assert_eq!(
            errs(negative),
            [(
                "spec.parallelism".to_owned(),
                "Invalid value: -1: must be greater than or equal to 0".to_owned()
            )]
        );
    }

    #[test]
    fn names() {
        assert!(is_dns1123_subdomain("web-1.example"));
        assert!(!is_dns1123_subdomain("Web"));
        assert!(!is_dns1123_subdomain("-a"));
        assert!(is_dns1123_label("default"));
        assert!(!is_dns1123_label("a.b"));
        assert_eq!(name_errors("Bad_Name", false)[0].0, "metadata.name");
        let rbac = name_rule("rbac.authorization.k8s.io", "clusterroles");
        assert!(name_errors_for("system:aggregate-to-admin", rbac).is_empty());
        assert!(
            name_errors_for("v1.", name_rule("apiregistration.k8s.io", "apiservices")).is_empty()
        );
        assert_eq!(
            name_errors_for("a/b", rbac)[0].1,
            "Invalid value: \"a/b\": may not contain '/'"
        );
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
    fn what_updates_may_not_change() {
        let d = |app: &str| json!({"spec": {"selector": {"matchLabels": {"app": app}}}});
        let e = update_errors("apps", "deployments", &d("a"), &d("b"), "");
        assert_eq!(e[0].0, "spec.selector");
        assert!(e[0].1.ends_with("field is immutable"));
        assert!(update_errors("apps", "deployments", &d("a"), &d("a"), "").is_empty());
        let sts = |sel: &str, replicas: u32| {
            json!({"spec": {"replicas": replicas, "serviceName": "s",
                "selector": {"matchLabels": {"app": sel}}}})
        };
        assert!(update_errors("apps", "statefulsets", &sts("a", 1), &sts("a", 3), "").is_empty());
        let e = update_errors("apps", "statefulsets", &sts("a", 1), &sts("b", 1), "");
        assert_eq!(e[0].0, "spec");
        assert!(e[0].1.starts_with("Forbidden: updates to statefulset spec"));
        let cm = |v: &str| json!({"immutable": true, "data": {"k": v}});
        assert_eq!(
            update_errors("", "configmaps", &cm("1"), &cm("2"), "")[0].0,
            "data"
        );
        assert!(update_errors("", "configmaps", &cm("1"), &cm("1"), "").is_empty());
    }

    #[test]
    fn deployment_selector_must_match() {
        let d = json!({"spec": {"selector": {"matchLabels": {"app": "a"}}, "template": {"metadata": {"labels": {"app": "b"}},
            "spec": {"containers": [{"name": "c", "image": "i"}]}}}});
        assert_eq!(kind_errors("apps", "deployments", &d, None, None).len(), 1);
        assert_eq!(
            kind_errors("", "pods", &json!({"spec": {}}), None, None)[0].0,
            "spec.containers"
        );
    }

    #[test]
    fn templates_are_held_to_what_pods_are() {
        let d = json!({"spec": {"selector": {"matchLabels": {"app": "a"}},
            "template": {"metadata": {"labels": {"app": "a"}}, "spec": {"containers": [{
                "name": "c", "image": "i", "ports": [{"containerPort": 70000, "protocol": "TCP"}],
                "resources": {"requests": {"cpu": "2"}, "limits": {"cpu": "1"}}}]}}}});
        let e = kind_errors("apps", "deployments", &d, None, None);
        assert_eq!(
            e,
            [
                (
                    "spec.template.spec.containers[0].ports[0].containerPort".to_owned(),
                    "Invalid value: 70000: must be between 1 and 65535, inclusive".to_owned()
                ),
                (
                    "spec.template.spec.containers[0].resources.requests".to_owned(),
                    "Invalid value: \"2\": must be less than or equal to cpu limit of 1".to_owned()
                ),
            ]
        );
        let cj =
            json!({"spec": {"jobTemplate": {"spec": {"template": {"spec": {"containers": []}}}}}});
        assert_eq!(
            kind_errors("batch", "cronjobs", &cj, None, None)[0].0,
            "spec.jobTemplate.spec.template.spec.containers"
        );
    }
}
