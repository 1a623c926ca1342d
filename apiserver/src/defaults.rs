//! Defaulting: the fields a Kubernetes API server fills in when a client
//! leaves them out, so controllers written against a cluster find them here
//! too (a Deployment's `strategy`, a container's `imagePullPolicy`, a
//! Service port's `targetPort`, ...). Applied to every create and update
//! before validation, as the API server applies its defaulters on decode;
//! each default only fills a missing (or null, or for strings empty) field,
//! so applying them again changes nothing.

use serde_json::{Value, json};

/// Fills the defaults of the object of resource `group`/`plural`.
pub(crate) fn apply(group: &str, plural: &str, obj: &mut Value) {
    crate::admission::normalize(group, plural, obj);
    apply_normalized(group, plural, obj);
}

/// [`apply`] for an object admission has normalized already (see
/// `admission::early`): normalizing again would change nothing, but would
/// parse and print every quantity its LimitRange defaults added.
pub(crate) fn apply_normalized(group: &str, plural: &str, obj: &mut Value) {
    match (group, plural) {
        ("", "secrets") => set(obj, "type", json!("Opaque")),
        ("storage.k8s.io", "storageclasses") => {
            set(obj, "reclaimPolicy", json!("Delete"));
            set(obj, "volumeBindingMode", json!("Immediate"));
        }
        // A PodTemplate's template is at the top level.
        ("", "podtemplates") => template(obj),
        _ => {}
    }
    let Some(spec) = object_at(obj, &["spec"]) else {
        return;
    };
    match (group, plural) {
        ("", "pods") => pod_spec(spec),
        ("", "replicationcontrollers") | ("apps", "replicasets") => {
            set(spec, "replicas", json!(1));
            template(spec);
        }
        ("", "services") => service(spec),
        ("", "persistentvolumeclaims") => set(spec, "volumeMode", json!("Filesystem")),
        ("", "persistentvolumes") => {
            set(spec, "persistentVolumeReclaimPolicy", json!("Retain"));
            set(spec, "volumeMode", json!("Filesystem"));
        }
        ("apps", "deployments") => deployment(spec),
        ("apps", "statefulsets") => stateful_set(spec),
        ("apps", "daemonsets") => {
            strategy(
                spec,
                "updateStrategy",
                json!({"maxUnavailable": 1, "maxSurge": 0}),
            );
            set(spec, "revisionHistoryLimit", json!(10));
            template(spec);
        }
        ("batch", "jobs") => job(spec),
        ("batch", "cronjobs") => {
            set(spec, "concurrencyPolicy", json!("Allow"));
            set(spec, "suspend", json!(false));
            set(spec, "successfulJobsHistoryLimit", json!(3));
            set(spec, "failedJobsHistoryLimit", json!(1));
            if let Some(job_spec) = object_at(spec, &["jobTemplate", "spec"]) {
                job(job_spec);
            }
        }
        _ => {}
    }
}

/// Sets `key` of the object `v` to `value` if it is missing, null, or an
/// empty string where a string is the default.
fn set(v: &mut Value, key: &str, value: Value) {
    let Some(m) = v.as_object_mut() else {
        return;
    };
    let missing = match m.get(key) {
        None | Some(Value::Null) => true,
        Some(Value::String(s)) => s.is_empty() && value.is_string(),
        Some(_) => false,
    };
    if missing {
        m.insert(key.to_owned(), value);
    }
}

/// The object at `path` below `v`, if there is one.
fn object_at<'a>(v: &'a mut Value, path: &[&str]) -> Option<&'a mut Value> {
    path.iter()
        .try_fold(v, |v, key| v.get_mut(key))
        .filter(|v| v.is_object())
}

/// The objects of the array at `key`, if any.
fn each<'a>(v: &'a mut Value, key: &str) -> impl Iterator<Item = &'a mut Value> {
    v.get_mut(key)
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
        .filter(|x| x.is_object())
}

/// The pod spec at `template.spec` of `v` (a workload's spec).
fn template(v: &mut Value) {
    if let Some(pod) = object_at(v, &["template", "spec"]) {
        pod_spec(pod);
    }
}

/// `type` of a strategy object at `key` (RollingUpdate), and its
/// `rollingUpdate` parameters when it is a rolling update.
fn strategy(spec: &mut Value, key: &str, rolling: Value) {
    set(spec, key, json!({}));
    let s = &mut spec[key];
    set(s, "type", json!("RollingUpdate"));
    if s["type"] == "RollingUpdate" {
        set(s, "rollingUpdate", json!({}));
        if let (Some(r), Value::Object(defaults)) = (s.get_mut("rollingUpdate"), rolling) {
            for (k, v) in defaults {
                set(r, &k, v);
            }
        }
    }
}

fn deployment(spec: &mut Value) {
    set(spec, "replicas", json!(1));
    strategy(
        spec,
        "strategy",
        json!({"maxUnavailable": "25%", "maxSurge": "25%"}),
    );
    set(spec, "revisionHistoryLimit", json!(10));
    set(spec, "progressDeadlineSeconds", json!(600));
    template(spec);
}

fn stateful_set(spec: &mut Value) {
    set(spec, "replicas", json!(1));
    set(spec, "podManagementPolicy", json!("OrderedReady"));
    strategy(spec, "updateStrategy", json!({"partition": 0}));
    set(spec, "revisionHistoryLimit", json!(10));
    set(
        spec,
        "persistentVolumeClaimRetentionPolicy",
        json!({"whenDeleted": "Retain", "whenScaled": "Retain"}),
    );
    template(spec);
}

/// A Job's defaults, as kube's `SetDefaults_Job`: with
/// `backoffLimitPerIndex` the Job-wide `backoffLimit` is no limit at all
/// (`MaxInt32`), with a pod failure policy only failed pods are replaced,
/// and a pod condition pattern without a status means `True`.
fn job(spec: &mut Value) {
    if spec.get("completions").is_none_or(Value::is_null)
        && spec.get("parallelism").is_none_or(Value::is_null)
    {
        set(spec, "completions", json!(1));
    }
    set(spec, "parallelism", json!(1));
    let per_index = spec
        .get("backoffLimitPerIndex")
        .is_some_and(|v| !v.is_null());
    set(
        spec,
        "backoffLimit",
        json!(if per_index { i32::MAX } else { 6 }),
    );
    set(spec, "completionMode", json!("NonIndexed"));
    set(spec, "suspend", json!(false));
    let policy = object_at(spec, &["podFailurePolicy"]).is_some();
    set(
        spec,
        "podReplacementPolicy",
        json!(if policy {
            "Failed"
        } else {
            "TerminatingOrFailed"
        }),
    );
    if let Some(policy) = object_at(spec, &["podFailurePolicy"]) {
        for rule in each(policy, "rules") {
            for pattern in each(rule, "onPodConditions") {
                set(pattern, "status", json!("True"));
            }
        }
    }
    template(spec);
}

/// A Job's generated selector, as kube's job strategy gives every Job
/// whose `spec.manualSelector` is not true: its template is labelled with
/// the Job's uid and name (the `batch.kubernetes.io/` labels and the
/// legacy `controller-uid` and `job-name`), and `spec.selector` selects
/// the uid, so no two Jobs share a pod. Labels the client set are kept (a
/// conflicting one fails validation). A Job without labels of its own
/// gets its template's, as the API server's defaulting gives it. The uid
/// is the one `metadata.uid` already holds.
pub(crate) fn job_selector(obj: &mut Value) {
    let meta = |key: &str| obj["metadata"][key].as_str().unwrap_or_default().to_owned();
    let (name, uid) = (meta("name"), meta("uid"));
    let uid = uid.as_str();
    let Some(spec) = object_at(obj, &["spec"]) else {
        return;
    };
    if spec["manualSelector"] == true {
        return;
    }
    if let Some(template) = spec.get_mut("template").filter(|t| t.is_object()) {
        let labels = &mut template["metadata"]["labels"];
        if !labels.is_object() {
            *labels = json!({});
        }
        for (key, value) in [
            ("batch.kubernetes.io/controller-uid", uid),
            ("batch.kubernetes.io/job-name", name.as_str()),
            ("controller-uid", uid),
            ("job-name", name.as_str()),
        ] {
            set(labels, key, json!(value));
        }
    }
    let selector = &mut spec["selector"];
    if !selector.is_object() {
        *selector = json!({});
    }
    let match_labels = &mut selector["matchLabels"];
    if !match_labels.is_object() {
        *match_labels = json!({});
    }
    set(
        match_labels,
        "batch.kubernetes.io/controller-uid",
        json!(uid),
    );
    let template_labels = obj["spec"]["template"]["metadata"]["labels"].clone();
    let labels = &mut obj["metadata"]["labels"];
    if labels.as_object().is_none_or(|l| l.is_empty()) && template_labels.is_object() {
        *labels = template_labels;
    }
}

fn service(spec: &mut Value) {
    set(spec, "type", json!("ClusterIP"));
    set(spec, "sessionAffinity", json!("None"));
    let external = matches!(spec["type"].as_str(), Some("NodePort" | "LoadBalancer"));
    if external {
        set(spec, "externalTrafficPolicy", json!("Cluster"));
    }
    if spec["type"] == "LoadBalancer" {
        set(spec, "allocateLoadBalancerNodePorts", json!(true));
    }
    if spec["type"] != "ExternalName" {
        set(spec, "internalTrafficPolicy", json!("Cluster"));
    }
    for port in each(spec, "ports") {
        set(port, "protocol", json!("TCP"));
        let target_unset = match port.get("targetPort") {
            None | Some(Value::Null) => true,
            Some(Value::Number(n)) => n.as_i64() == Some(0),
            Some(Value::String(s)) => s.is_empty(),
            Some(_) => false,
        };
        if target_unset && let Some(p) = port.get("port").cloned() {
            port["targetPort"] = p;
        }
    }
}

fn pod_spec(spec: &mut Value) {
    set(spec, "restartPolicy", json!("Always"));
    set(spec, "dnsPolicy", json!("ClusterFirst"));
    set(spec, "schedulerName", json!("default-scheduler"));
    set(spec, "terminationGracePeriodSeconds", json!(30));
    set(spec, "securityContext", json!({}));
    set(spec, "enableServiceLinks", json!(true));
    for key in ["containers", "initContainers"] {
        for c in each(spec, key) {
            container(c);
        }
    }
    for v in each(spec, "volumes") {
        for source in ["configMap", "secret"] {
            if let Some(s) = object_at(v, &[source]) {
                set(s, "defaultMode", json!(420));
            }
        }
    }
}

fn container(c: &mut Value) {
    set(c, "terminationMessagePath", json!("/dev/termination-log"));
    set(c, "terminationMessagePolicy", json!("File"));
    let pull = if c["image"].as_str().is_some_and(pulls_always) {
        "Always"
    } else {
        "IfNotPresent"
    };
    set(c, "imagePullPolicy", json!(pull));
    set(c, "resources", json!({}));
    for port in each(c, "ports") {
        set(port, "protocol", json!("TCP"));
    }
    for probe in ["livenessProbe", "readinessProbe", "startupProbe"] {
        if let Some(p) = object_at(c, &[probe]) {
            set(p, "timeoutSeconds", json!(1));
            set(p, "periodSeconds", json!(10));
            set(p, "successThreshold", json!(1));
            set(p, "failureThreshold", json!(3));
            if let Some(h) = object_at(p, &["httpGet"]) {
                set(h, "path", json!("/"));
                set(h, "scheme", json!("HTTP"));
            }
        }
    }
    // Requests default to the limits given (copying only those missing:
    // for a pod, admission's normalization did this already).
    if let Some(limits) = c["resources"].get("limits").and_then(Value::as_object) {
        let requests = c["resources"].get("requests").and_then(Value::as_object);
        let missing: Vec<(String, Value)> = limits
            .iter()
            .filter(|(k, _)| !requests.is_some_and(|r| r.contains_key(*k)))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        // Requests that are there and lack nothing are left as they are
        // (without the look-up by `IndexMut`, which copies its key).
        if (!missing.is_empty() || requests.is_none())
            && let Some(resources) = c.get_mut("resources")
        {
            set(resources, "requests", json!({}));
            if let Some(requests) = resources.get_mut("requests").and_then(Value::as_object_mut) {
                requests.extend(missing);
            }
        }
    }
}

/// Whether an image reference pulls `Always` by default: no tag and no
/// digest, or the tag `latest`.
fn pulls_always(image: &str) -> bool {
    if image.contains('@') {
        return false;
    }
    // The tag is after the last ':' that comes after the last '/' (a
    // registry host may have a port).
    let last = image.rsplit('/').next().unwrap_or(image);
    match last.rsplit_once(':') {
        Some((_, tag)) => tag == "latest",
        None => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bare_deployment_gets_what_a_cluster_gives_it() {
        let mut d = json!({"spec": {
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"spec": {"containers": [
                {"name": "web", "image": "nginx", "ports": [{"containerPort": 80}],
                 "resources": {"limits": {"cpu": "1"}},
                 "readinessProbe": {"httpGet": {"port": 80}}}
            ]}}
        }});
        apply("apps", "deployments", &mut d);
        let spec = &d["spec"];
        assert_eq!(spec["replicas"], 1);
        assert_eq!(
            spec["strategy"],
            json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}})
        );
        assert_eq!(spec["revisionHistoryLimit"], 10);
        assert_eq!(spec["progressDeadlineSeconds"], 600);
        let pod = &spec["template"]["spec"];
        assert_eq!(pod["restartPolicy"], "Always");
        assert_eq!(pod["dnsPolicy"], "ClusterFirst");
        assert_eq!(pod["terminationGracePeriodSeconds"], 30);
        let c = &pod["containers"][0];
        assert_eq!(c["imagePullPolicy"], "Always");
        assert_eq!(c["ports"][0]["protocol"], "TCP");
        assert_eq!(c["resources"]["requests"]["cpu"], "1");
        assert_eq!(c["readinessProbe"]["httpGet"]["scheme"], "HTTP");
        assert_eq!(c["readinessProbe"]["periodSeconds"], 10);
        // Applying them again changes nothing.
        let once = d.clone();
        apply("apps", "deployments", &mut d);
        assert_eq!(d, once);
    }

    #[test]
    fn what_the_client_set_is_kept() {
        let mut d = json!({"spec": {
            "replicas": 0,
            "strategy": {"type": "Recreate"},
            "template": {"spec": {"restartPolicy": "Never", "containers": [
                {"name": "c", "image": "registry:5000/app:1.2", "imagePullPolicy": "Never"}
            ]}}
        }});
        apply("apps", "deployments", &mut d);
        assert_eq!(d["spec"]["replicas"], 0);
        assert_eq!(d["spec"]["strategy"], json!({"type": "Recreate"}));
        let pod = &d["spec"]["template"]["spec"];
        assert_eq!(pod["restartPolicy"], "Never");
        assert_eq!(pod["containers"][0]["imagePullPolicy"], "Never");
    }

    #[test]
    fn image_pull_policy_follows_the_tag() {
        for (image, always) in [
            ("nginx", true),
            ("nginx:latest", true),
            ("nginx:1.27", false),
            ("registry:5000/nginx", true),
            ("registry:5000/nginx:1", false),
            ("nginx@sha256:abc", false),
        ] {
            assert_eq!(pulls_always(image), always, "{image}");
        }
    }

    #[test]
    fn a_jobs_failure_knobs_default_as_kubes() {
        let mut j = json!({"spec": {
            "completionMode": "Indexed", "completions": 3, "backoffLimitPerIndex": 1,
            "podFailurePolicy": {"rules": [
                {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"},
                    {"type": "ConfigIssue", "status": "False"}]}]},
            "template": {"spec": {"restartPolicy": "Never"}}}});
        apply("batch", "jobs", &mut j);
        let spec = &j["spec"];
        assert_eq!(spec["backoffLimit"], i32::MAX);
        assert_eq!(spec["podReplacementPolicy"], "Failed");
        let patterns = &spec["podFailurePolicy"]["rules"][0]["onPodConditions"];
        assert_eq!(patterns[0]["status"], "True");
        assert_eq!(patterns[1]["status"], "False");
        // What the client set stays.
        let mut own = json!({"spec": {"backoffLimitPerIndex": 1, "backoffLimit": 2,
            "podReplacementPolicy": "TerminatingOrFailed",
            "template": {"spec": {"restartPolicy": "Never"}}}});
        apply("batch", "jobs", &mut own);
        assert_eq!(own["spec"]["backoffLimit"], 2);
        assert_eq!(own["spec"]["podReplacementPolicy"], "TerminatingOrFailed");
    }

    #[test]
    fn services_jobs_and_secrets() {
        let mut s = json!({"spec": {"type": "NodePort", "ports": [{"port": 80}, {"port": 81, "targetPort": "http"}]}});
        apply("", "services", &mut s);
        assert_eq!(s["spec"]["ports"][0]["targetPort"], 80);
        assert_eq!(s["spec"]["ports"][1]["targetPort"], "http");
        assert_eq!(s["spec"]["ports"][0]["protocol"], "TCP");
        assert_eq!(s["spec"]["externalTrafficPolicy"], "Cluster");
        assert_eq!(s["spec"]["sessionAffinity"], "None");
        let mut j =
            json!({"spec": {"parallelism": 3, "template": {"spec": {"restartPolicy": "Never"}}}});
        apply("batch", "jobs", &mut j);
        assert!(j["spec"].get("completions").is_none(), "{j}");
        assert_eq!(j["spec"]["backoffLimit"], 6);
        assert_eq!(j["spec"]["podReplacementPolicy"], "TerminatingOrFailed");
        assert_eq!(j["spec"]["template"]["spec"]["restartPolicy"], "Never");
        let mut secret = json!({"data": {}});
        apply("", "secrets", &mut secret);
        assert_eq!(secret["type"], "Opaque");
    }

    #[test]
    fn a_job_gets_a_selector_of_its_uid_unless_it_chose_its_own() {
        let mut j =
            json!({"metadata": {"name": "pi", "uid": "u-1"}, "spec": {"template": {"spec": {}}}});
        job_selector(&mut j);
        let labels = &j["spec"]["template"]["metadata"]["labels"];
        for (k, v) in [
            ("batch.kubernetes.io/controller-uid", "u-1"),
            ("batch.kubernetes.io/job-name", "pi"),
            ("controller-uid", "u-1"),
            ("job-name", "pi"),
        ] {
            assert_eq!(labels[k], v, "{j}");
        }
        assert_eq!(
            j["spec"]["selector"],
            json!({"matchLabels": {"batch.kubernetes.io/controller-uid": "u-1"}})
        );
        // The Job itself is labelled as its template, when it has none.
        assert_eq!(&j["metadata"]["labels"], labels);
        assert!(
            crate::validate::kind_errors("batch", "jobs", &j, None, None)
                .iter()
                .all(|(f, _)| f != "spec.selector" && f != "spec.template.metadata.labels")
        );

        // Own labels stay; a manual selector is left alone.
        let mut own = json!({"metadata": {"name": "pi", "uid": "u-2", "labels": {"team": "a"}},
            "spec": {"template": {"metadata": {"labels": {"app": "x"}}}}});
        job_selector(&mut own);
        assert_eq!(own["metadata"]["labels"], json!({"team": "a"}));
        assert_eq!(own["spec"]["template"]["metadata"]["labels"]["app"], "x");
        let mut manual = json!({"metadata": {"name": "pi", "uid": "u-3"}, "spec": {"manualSelector": true,
            "template": {"metadata": {"labels": {"app": "x"}}}}});
        job_selector(&mut manual);
        assert!(manual["spec"].get("selector").is_none());
        let errs = crate::validate::kind_errors("batch", "jobs", &manual, None, None);
        assert!(
            errs.contains(&("spec.selector".into(), "Required value".into())),
            "{errs:?}"
        );
    }
}
