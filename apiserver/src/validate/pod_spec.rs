//! Pod spec validation, for pods and for every pod template (Deployments,
//! Jobs, PodTemplates, ...): volumes, containers and init containers (names,
//! images, ports, env, volume mounts, probes and lifecycle handlers), in the
//! order and the words of kube's `ValidatePodSpec`.

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use crate::causes::{self as field, Causes};

/// The volume sources a volume may name, in the order kube checks them, with
/// the field name kube puts in the path when a second one is given (two are
/// spelled differently there, as upstream spells them).
const VOLUME_SOURCES: [(&str, &str); 30] = [
    ("emptyDir", "emptyDir"),
    ("hostPath", "hostPath"),
    ("gitRepo", "gitRepo"),
    ("gcePersistentDisk", "gcePersistentDisk"),
    ("awsElasticBlockStore", "awsElasticBlockStore"),
    ("secret", "secret"),
    ("nfs", "nfs"),
    ("iscsi", "iscsi"),
    ("glusterfs", "glusterfs"),
    ("flocker", "flocker"),
    ("persistentVolumeClaim", "persistentVolumeClaim"),
    ("rbd", "rbd"),
    ("cinder", "cinder"),
    ("cephfs", "cephFS"),
    ("quobyte", "quobyte"),
    ("downwardAPI", "downwarAPI"),
    ("fc", "fc"),
    ("flexVolume", "flexVolume"),
    ("configMap", "configMap"),
    ("azureFile", "azureFile"),
    ("vsphereVolume", "vsphereVolume"),
    ("photonPersistentDisk", "photonPersistentDisk"),
    ("portworxVolume", "portworxVolume"),
    ("azureDisk", "azureDisk"),
    ("storageos", "storageos"),
    ("projected", "projected"),
    ("scaleIO", "scaleIO"),
    ("csi", "csi"),
    ("ephemeral", "ephemeral"),
    ("image", "image"),
];

/// A field's path as kube's `field.Path` builds it (a parent and one step),
/// written out only for a cause that names it: most specs are valid, and
/// formatting every path on the way cost more than the checks themselves.
#[derive(Clone, Copy)]
enum Path<'a> {
    Root(&'a str),
    Child(&'a Path<'a>, &'a str),
    Index(&'a Path<'a>, usize),
}

impl<'a> Path<'a> {
    fn child(&'a self, name: &'a str) -> Path<'a> {
        Path::Child(self, name)
    }

    fn index(&'a self, i: usize) -> Path<'a> {
        Path::Index(self, i)
    }
}

impl std::fmt::Display for Path<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Path::Root(s) => f.write_str(s),
            Path::Child(parent, name) => write!(f, "{parent}.{name}"),
            Path::Index(parent, i) => write!(f, "{parent}[{i}]"),
        }
    }
}

/// A field of an object that is there and not null.
fn set<'a>(v: &'a Value, key: &str) -> Option<&'a Value> {
    v.get(key).filter(|x| !x.is_null())
}

fn str_of<'a>(v: &'a Value, key: &str) -> &'a str {
    v[key].as_str().unwrap_or_default()
}

fn items(v: &Value) -> impl Iterator<Item = (usize, &Value)> {
    v.as_array().into_iter().flatten().enumerate()
}

/// Problems with the pod spec `spec` found at `path` (`spec`,
/// `spec.template.spec`, ...).
pub(crate) fn errors(spec: &Value, path: &str, errs: &mut Causes) {
    let path = Path::Root(path);
    let volumes = volumes(&spec["volumes"], &path.child("volumes"), errs);
    let containers_path = path.child("containers");
    match spec["containers"].as_array() {
        Some(cs) if !cs.is_empty() => {
            let mut names = HashSet::new();
            for (i, c) in cs.iter().enumerate() {
                let at_i = containers_path.index(i);
                container(c, &volumes, &at_i, errs);
                let name = str_of(c, "name");
                if !names.insert(name) {
                    duplicate(errs, &at_i.child("name"), name);
                }
                if let Some(l) = set(c, "lifecycle") {
                    lifecycle(l, &at_i.child("lifecycle"), errs);
                }
                probes(c, &at_i, errs);
                if set(c, "restartPolicy").is_some() {
                    field::forbidden(
                        errs,
                        at_i.child("restartPolicy"),
                        "may not be set for non-init containers",
                    );
                }
            }
        }
        _ => field::required(errs, containers_path, ""),
    }
    init_containers(spec, &volumes, &path.child("initContainers"), errs);
    ephemeral_containers(spec, &volumes, &path.child("ephemeralContainers"), errs);
    one_of(
        errs,
        &path.child("restartPolicy"),
        &spec["restartPolicy"],
        &["Always", "OnFailure", "Never"],
    );
    one_of(
        errs,
        &path.child("dnsPolicy"),
        &spec["dnsPolicy"],
        &["ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"],
    );
}

/// `Duplicate value` of a name.
fn duplicate(errs: &mut Causes, path: &Path<'_>, name: &str) {
    field::duplicate(errs, path, &format!("{name:?}"));
}

/// A string field that must be one of `supported` when set (defaulting has
/// filled it in when the client left it out).
fn one_of(errs: &mut Causes, path: &Path<'_>, v: &Value, supported: &[&str]) {
    match v {
        Value::Null => {}
        Value::String(s) if s.is_empty() => field::required(errs, path, ""),
        Value::String(s) if supported.contains(&s.as_str()) => {}
        other => field::not_supported(errs, path, other, supported),
    }
}

/// Checks the volumes and returns the valid ones by name, with their
/// source, which volume mounts may then refer to.
fn volumes<'a>(vols: &'a Value, path: &Path<'_>, errs: &mut Causes) -> HashMap<&'a str, &'a str> {
    let mut valid = HashMap::new();
    for (i, v) in items(vols) {
        let at_i = path.index(i);
        let mut own = Causes::new();
        let source = volume_source(v, &at_i, &mut own);
        let name = str_of(v, "name");
        let name_path = at_i.child("name");
        if name.is_empty() {
            field::required(&mut own, name_path, "");
        } else {
            field::check_label(&mut own, name_path, name);
        }
        if valid.contains_key(name) {
            duplicate(&mut own, &name_path, name);
        }
        if own.is_empty() {
            valid.insert(name, source.unwrap_or_default());
        } else {
            errs.extend(own);
        }
    }
    valid
}

/// Exactly one source, and the required field of the common ones.
fn volume_source<'a>(v: &'a Value, path: &Path<'_>, errs: &mut Causes) -> Option<&'a str> {
    let mut found = None;
    for (key, shown) in VOLUME_SOURCES {
        let Some(src) = set(v, key) else { continue };
        if found.is_some() {
            field::forbidden(
                errs,
                path.child(shown),
                "may not specify more than 1 volume type",
            );
            continue;
        }
        found = Some(key);
        let required_field = match key {
            "configMap" => "name",
            "secret" => "secretName",
            "persistentVolumeClaim" => "claimName",
            "hostPath" => "path",
            _ => continue,
        };
        if str_of(src, required_field).is_empty() {
            field::required(errs, path.child(key).child(required_field), "");
        }
    }
    if found.is_none() {
        field::required(errs, path, "must specify a volume type");
    }
    found
}

/// What every container, init container or not, is checked for.
fn container(c: &Value, volumes: &HashMap<&str, &str>, path: &Path<'_>, errs: &mut Causes) {
    let name = str_of(c, "name");
    let name_path = path.child("name");
    if name.is_empty() {
        field::required(errs, name_path, "");
    } else {
        field::check_label(errs, name_path, name);
    }
    if str_of(c, "image").is_empty() {
        field::required(errs, path.child("image"), "");
    }
    one_of(
        errs,
        &path.child("terminationMessagePolicy"),
        &c["terminationMessagePolicy"],
        &["File", "FallbackToLogsOnError"],
    );
    ports(&c["ports"], &path.child("ports"), errs);
    env(&c["env"], &path.child("env"), errs);
    volume_mounts(
        &c["volumeMounts"],
        volumes,
        &path.child("volumeMounts"),
        errs,
    );
    one_of(
        errs,
        &path.child("imagePullPolicy"),
        &c["imagePullPolicy"],
        &["Always", "IfNotPresent", "Never"],
    );
}

fn ports(ports: &Value, path: &Path<'_>, errs: &mut Causes) {
    let mut names = HashSet::new();
    for (i, p) in items(ports) {
        let at_i = path.index(i);
        let name = str_of(p, "name");
        if !name.is_empty() {
            let problems = field::port_name(name);
            if !problems.is_empty() {
                for msg in problems {
                    field::invalid(errs, at_i.child("name"), &p["name"], msg);
                }
            } else if !names.insert(name) {
                duplicate(errs, &at_i.child("name"), name);
            }
        }
        let container_port = at_i.child("containerPort");
        match set(p, "containerPort") {
            None => field::required(errs, container_port, ""),
            Some(n) if n.as_i64() == Some(0) => field::required(errs, container_port, ""),
            Some(n) => port_number(errs, &container_port, n),
        }
        if let Some(n) = set(p, "hostPort").filter(|n| n.as_i64() != Some(0)) {
            port_number(errs, &at_i.child("hostPort"), n);
        }
        let protocol = at_i.child("protocol");
        match &p["protocol"] {
            Value::Null => field::required(errs, protocol, ""),
            v => one_of(errs, &protocol, v, &["SCTP", "TCP", "UDP"]),
        }
    }
}

fn port_number(errs: &mut Causes, path: &Path<'_>, n: &Value) {
    if !n.as_i64().is_some_and(|p| (1..=65535).contains(&p)) {
        field::invalid(errs, path, n, field::PORT_RANGE);
    }
}

fn env(vars: &Value, path: &Path<'_>, errs: &mut Causes) {
    for (i, ev) in items(vars) {
        let at_i = path.index(i);
        let name = str_of(ev, "name");
        if name.is_empty() {
            field::required(errs, at_i.child("name"), "");
        } else if let Some(msg) = field::env_var_name(name) {
            field::invalid(errs, at_i.child("name"), &ev["name"], msg);
        }
        let Some(from) = set(ev, "valueFrom") else {
            continue;
        };
        let sources = [
            "fieldRef",
            "resourceFieldRef",
            "configMapKeyRef",
            "secretKeyRef",
        ]
        .iter()
        .filter(|k| set(from, k).is_some())
        .count();
        let from_path = at_i.child("valueFrom");
        let empty = Value::String(String::new());
        if sources == 0 {
            field::invalid(
                errs,
                from_path,
                &empty,
                "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`",
            );
        } else if !str_of(ev, "value").is_empty() {
            field::invalid(
                errs,
                from_path,
                &empty,
                "may not be specified when `value` is not empty",
            );
        } else if sources > 1 {
            field::invalid(
                errs,
                from_path,
                &empty,
                "may not have more than one field specified at a time",
            );
        }
    }
}

fn volume_mounts(
    mounts: &Value,
    volumes: &HashMap<&str, &str>,
    path: &Path<'_>,
    errs: &mut Causes,
) {
    let mut points = HashSet::new();
    for (i, m) in items(mounts) {
        let at_i = path.index(i);
        let name = str_of(m, "name");
        if name.is_empty() {
            field::required(errs, at_i.child("name"), "");
        }
        if !volumes.contains_key(name) {
            field::not_found(errs, at_i.child("name"), &Value::String(name.into()));
        }
        let mount_path = str_of(m, "mountPath");
        if mount_path.is_empty() {
            field::required(errs, at_i.child("mountPath"), "");
        }
        if !points.insert(mount_path) {
            field::invalid(
                errs,
                at_i.child("mountPath"),
                &m["mountPath"],
                "must be unique",
            );
        }
    }
}

fn init_containers(
    spec: &Value,
    volumes: &HashMap<&str, &str>,
    path: &Path<'_>,
    errs: &mut Causes,
) {
    let mut names: HashSet<&str> = items(&spec["containers"])
        .map(|(_, c)| str_of(c, "name"))
        .collect();
    for (i, c) in items(&spec["initContainers"]) {
        let at_i = path.index(i);
        container(c, volumes, &at_i, errs);
        let restart_always = match set(c, "restartPolicy") {
            None => false,
            Some(p) => {
                one_of(errs, &at_i.child("restartPolicy"), p, &["Always"]);
                p == "Always"
            }
        };
        let name = str_of(c, "name");
        if names.contains(name) {
            duplicate(errs, &at_i.child("name"), name);
        } else if !name.is_empty() {
            names.insert(name);
        }
        if restart_always {
            if let Some(l) = set(c, "lifecycle") {
                lifecycle(l, &at_i.child("lifecycle"), errs);
            }
            probes(c, &at_i, errs);
        } else {
            for key in [
                "lifecycle",
                "livenessProbe",
                "readinessProbe",
                "startupProbe",
            ] {
                if set(c, key).is_some() {
                    field::forbidden(
                        errs,
                        at_i.child(key),
                        "may not be set for init containers without restartPolicy=Always",
                    );
                }
            }
        }
    }
}

/// The fields an ephemeral container may not have (kube's allow list
/// turned around): it serves no traffic, holds no resources and has no
/// part in the pod's lifecycle.
const NOT_FOR_EPHEMERAL: [&str; 8] = [
    "ports",
    "resources",
    "resizePolicy",
    "restartPolicy",
    "livenessProbe",
    "readinessProbe",
    "startupProbe",
    "lifecycle",
];

/// kube's `validateEphemeralContainers`: each a container, named uniquely
/// among all the pod's containers, its `targetContainerName` one of the
/// others, without the fields of [`NOT_FOR_EPHEMERAL`] or mounts of sub
/// paths.
fn ephemeral_containers(
    spec: &Value,
    volumes: &HashMap<&str, &str>,
    path: &Path<'_>,
    errs: &mut Causes,
) {
    let others: HashSet<&str> = items(&spec["containers"])
        .chain(items(&spec["initContainers"]))
        .map(|(_, c)| str_of(c, "name"))
        .collect();
    let mut names = others.clone();
    for (i, c) in items(&spec["ephemeralContainers"]) {
        let at_i = path.index(i);
        container(c, volumes, &at_i, errs);
        let name = str_of(c, "name");
        if !names.insert(name) {
            duplicate(errs, &at_i.child("name"), name);
        }
        let target = str_of(c, "targetContainerName");
        if !target.is_empty() && !others.contains(target) {
            field::not_found(
                errs,
                at_i.child("targetContainerName"),
                &c["targetContainerName"],
            );
        }
        for key in NOT_FOR_EPHEMERAL {
            // What Go leaves at its zero value (`resources: {}`) is not set.
            if set(c, key).is_some_and(|v| !super::pod_update::is_zero(v)) {
                field::forbidden(
                    errs,
                    at_i.child(key),
                    "cannot be set for an Ephemeral Container",
                );
            }
        }
        let mounts = at_i.child("volumeMounts");
        for (j, m) in items(&c["volumeMounts"]) {
            let at_j = mounts.index(j);
            for key in ["subPath", "subPathExpr"] {
                if !str_of(m, key).is_empty() {
                    let at = at_j.child(key);
                    field::forbidden(errs, at, "cannot be set for an Ephemeral Container");
                }
            }
        }
    }
}

fn lifecycle(l: &Value, path: &Path<'_>, errs: &mut Causes) {
    for hook in ["postStart", "preStop"] {
        if let Some(h) = set(l, hook) {
            handler(
                h,
                &["exec", "httpGet", "tcpSocket", "sleep"],
                &path.child(hook),
                errs,
            );
        }
    }
}

/// The liveness, readiness and startup probes of a container at `path`.
fn probes(c: &Value, path: &Path<'_>, errs: &mut Causes) {
    for kind in ["livenessProbe", "readinessProbe", "startupProbe"] {
        let Some(p) = set(c, kind) else { continue };
        let at_kind = path.child(kind);
        handler(p, &["exec", "httpGet", "tcpSocket", "grpc"], &at_kind, errs);
        for f in [
            "initialDelaySeconds",
            "timeoutSeconds",
            "periodSeconds",
            "successThreshold",
            "failureThreshold",
        ] {
            if let Some(n) = set(p, f)
                && n.as_i64().is_none_or(|n| n < 0)
            {
                field::invalid(
                    errs,
                    at_kind.child(f),
                    n,
                    "must be greater than or equal to 0",
                );
            }
        }
        let grace_path = at_kind.child("terminationGracePeriodSeconds");
        let grace = set(p, "terminationGracePeriodSeconds");
        if let Some(g) = grace
            && g.as_i64().is_none_or(|g| g <= 0)
        {
            field::invalid(errs, grace_path, g, "must be greater than 0");
        }
        match kind {
            "readinessProbe" => {
                if let Some(g) = grace {
                    field::invalid(errs, grace_path, g, "must not be set for readinessProbes");
                }
            }
            _ => {
                let threshold = p.get("successThreshold").cloned().unwrap_or(Value::from(0));
                if threshold.as_i64() != Some(1) {
                    field::invalid(
                        errs,
                        at_kind.child("successThreshold"),
                        &threshold,
                        "must be 1",
                    );
                }
            }
        }
    }
}

/// Exactly one of `kinds` (a probe's or a lifecycle hook's handlers), and
/// what that one needs.
fn handler(h: &Value, kinds: &[&str], path: &Path<'_>, errs: &mut Causes) {
    let mut found = false;
    for &kind in kinds {
        let Some(a) = set(h, kind) else { continue };
        let at_kind = path.child(kind);
        if found {
            field::forbidden(errs, at_kind, "may not specify more than 1 handler type");
            continue;
        }
        found = true;
        let port = at_kind.child("port");
        match kind {
            "exec" if a["command"].as_array().is_none_or(Vec::is_empty) => {
                field::required(errs, at_kind.child("command"), "");
            }
            "httpGet" => {
                if str_of(a, "path").is_empty() {
                    field::required(errs, at_kind.child("path"), "");
                }
                field::check_port_num_or_name(errs, port, &a["port"]);
                one_of(
                    errs,
                    &at_kind.child("scheme"),
                    &a["scheme"],
                    &["HTTP", "HTTPS"],
                );
            }
            "tcpSocket" => field::check_port_num_or_name(errs, port, &a["port"]),
            "grpc" => {
                let number = a.get("port").cloned().unwrap_or(Value::from(0));
                field::check_port_num_or_name(errs, port, &number);
            }
            _ => {}
        }
    }
    if !found {
        field::required(errs, path, "must specify a handler type");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn check(spec: Value) -> Causes {
        let mut errs = Causes::new();
        errors(&spec, "spec", &mut errs);
        errs
    }

    fn text(errs: &Causes) -> Vec<String> {
        errs.iter().map(|(f, m)| format!("{f}: {m}")).collect()
    }

    #[test]
    fn a_plain_spec_is_valid() {
        let ok = check(json!({"containers": [{"name": "web", "image": "nginx",
            "ports": [{"name": "http", "containerPort": 80, "protocol": "TCP"}],
            "env": [{"name": "A", "value": "1"}, {"name": "B", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
            "volumeMounts": [{"name": "data", "mountPath": "/data"}],
            "readinessProbe": {"httpGet": {"path": "/", "port": "http", "scheme": "HTTP"}, "periodSeconds": 10}}],
            "volumes": [{"name": "data", "emptyDir": {}}]}));
        assert!(ok.is_empty(), "{ok:?}");
    }

    #[test]
    fn container_ports() {
        let e = check(json!({"containers": [{"name": "c", "image": "i", "ports": [
            {"name": "http", "containerPort": 70000, "protocol": "TCP"},
            {"name": "http", "containerPort": 81, "protocol": "ICMP"},
            {"containerPort": 0, "protocol": "UDP", "hostPort": 99999}]}]}));
        assert_eq!(
            text(&e),
            [
                "spec.containers[0].ports[0].containerPort: Invalid value: 70000: must be between 1 and 65535, inclusive",
                "spec.containers[0].ports[1].name: Duplicate value: \"http\"",
                "spec.containers[0].ports[1].protocol: Unsupported value: \"ICMP\": supported values: \"SCTP\", \"TCP\", \"UDP\"",
                "spec.containers[0].ports[2].containerPort: Required value",
                "spec.containers[0].ports[2].hostPort: Invalid value: 99999: must be between 1 and 65535, inclusive",
            ]
        );
    }

    #[test]
    fn probes_need_exactly_one_handler_and_sane_timings() {
        let e = check(json!({"containers": [{"name": "c", "image": "i",
            "livenessProbe": {"exec": {"command": ["true"]}, "tcpSocket": {"port": 80}, "periodSeconds": -1, "successThreshold": 2},
            "readinessProbe": {"periodSeconds": 10},
            "startupProbe": {"httpGet": {"path": "/", "port": 0, "scheme": "FTP"}, "successThreshold": 1}}]}));
        assert_eq!(
            text(&e),
            [
                "spec.containers[0].livenessProbe.tcpSocket: Forbidden: may not specify more than 1 handler type",
                "spec.containers[0].livenessProbe.periodSeconds: Invalid value: -1: must be greater than or equal to 0",
                "spec.containers[0].livenessProbe.successThreshold: Invalid value: 2: must be 1",
                "spec.containers[0].readinessProbe: Required value: must specify a handler type",
                "spec.containers[0].startupProbe.httpGet.port: Invalid value: 0: must be between 1 and 65535, inclusive",
                "spec.containers[0].startupProbe.httpGet.scheme: Unsupported value: \"FTP\": supported values: \"HTTP\", \"HTTPS\"",
            ]
        );
    }

    #[test]
    fn volumes_and_mounts() {
        let e = check(
            json!({"containers": [{"name": "c", "image": "i", "volumeMounts": [
                {"name": "data", "mountPath": "/d"}, {"name": "missing", "mountPath": "/d"}]}],
            "volumes": [{"name": "data", "emptyDir": {}, "configMap": {"name": "x"}},
                {"name": "Data"}, {"name": "cm", "configMap": {}}, {"name": "ok", "secret": {"secretName": "s"}},
                {"name": "ok", "emptyDir": {}}]}),
        );
        assert_eq!(
            text(&e),
            [
                "spec.volumes[0].configMap: Forbidden: may not specify more than 1 volume type",
                "spec.volumes[1]: Required value: must specify a volume type",
                "spec.volumes[1].name: Invalid value: \"Data\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
                "spec.volumes[2].configMap.name: Required value",
                "spec.volumes[4].name: Duplicate value: \"ok\"",
                "spec.containers[0].volumeMounts[0].name: Not found: \"data\"",
                "spec.containers[0].volumeMounts[1].name: Not found: \"missing\"",
                "spec.containers[0].volumeMounts[1].mountPath: Invalid value: \"/d\": must be unique",
            ]
        );
    }

    #[test]
    fn container_names_env_and_init_containers() {
        let e = check(json!({"containers": [
                {"name": "web", "image": "i", "env": [{"name": ""}, {"name": "A=B"},
                    {"name": "C", "value": "x", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}},
                    {"name": "D", "valueFrom": {}}]},
                {"name": "web", "image": "i"}, {"name": "Bad_Name", "image": ""}],
            "initContainers": [{"name": "web", "image": "i", "livenessProbe": {"exec": {"command": ["x"]}}}]}));
        assert_eq!(
            text(&e),
            [
                "spec.containers[0].env[0].name: Required value",
                "spec.containers[0].env[1].name: Invalid value: \"A=B\": a valid environment variable name must consist only of printable ASCII characters other than '='",
                "spec.containers[0].env[2].valueFrom: Invalid value: \"\": may not be specified when `value` is not empty",
                "spec.containers[0].env[3].valueFrom: Invalid value: \"\": must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`",
                "spec.containers[1].name: Duplicate value: \"web\"",
                "spec.containers[2].name: Invalid value: \"Bad_Name\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
                "spec.containers[2].image: Required value",
                "spec.initContainers[0].name: Duplicate value: \"web\"",
                "spec.initContainers[0].livenessProbe: Forbidden: may not be set for init containers without restartPolicy=Always",
            ]
        );
        assert_eq!(
            text(&check(json!({"containers": []}))),
            ["spec.containers: Required value"]
        );
    }
}
