//! Service validation in kube's order and words (`ValidateService`): ports
//! (range, protocol, target port, names required when there are several,
//! unique names and protocol/port pairs), node ports by type, the type,
//! session affinity, traffic policies and ExternalName; then, as the node
//! port allocator would, a node port outside 30000-32767.

use std::collections::HashSet;

use serde_json::Value;

use crate::causes::{self as field, Causes};

/// The node ports a cluster's default `--service-node-port-range` allows.
pub(crate) const NODE_PORTS: std::ops::RangeInclusive<i64> = 30000..=32767;

fn str_of<'a>(v: &'a Value, key: &str) -> &'a str {
    v[key].as_str().unwrap_or_default()
}

/// A Go int32 field: absent is 0.
fn int_of(v: &Value, key: &str) -> i64 {
    v[key].as_i64().unwrap_or_default()
}

/// Problems with the Service `svc`.
pub(crate) fn errors(svc: &Value) -> Causes {
    let mut errs = Causes::new();
    let spec = &svc["spec"];
    let kind = str_of(spec, "type");
    let ports: Vec<&Value> = spec["ports"].as_array().into_iter().flatten().collect();
    let headless = spec["clusterIP"] == "None" || spec["clusterIPs"][0] == "None";
    if ports.is_empty() && !headless && kind != "ExternalName" {
        field::required(&mut errs, "spec.ports", "");
    }
    match kind {
        "LoadBalancer" | "NodePort" if headless => field::invalid(
            &mut errs,
            "spec.clusterIPs[0]",
            &Value::from("None"),
            &format!("may not be set to 'None' for {kind} services"),
        ),
        "ExternalName" => {
            if !str_of(spec, "clusterIP").is_empty()
                || spec["clusterIPs"].as_array().is_some_and(|a| !a.is_empty())
            {
                field::forbidden(
                    &mut errs,
                    "spec.clusterIPs",
                    "may not be set for ExternalName services",
                );
            }
            let cname = str_of(spec, "externalName");
            let cname = cname.strip_suffix('.').unwrap_or(cname);
            if cname.is_empty() {
                field::required(&mut errs, "spec.externalName", "");
            } else if !super::is_dns1123_subdomain(cname) {
                field::invalid(
                    &mut errs,
                    "spec.externalName",
                    &Value::from(cname),
                    super::SUBDOMAIN_MSG,
                );
            }
        }
        _ => {}
    }
    let mut names = HashSet::new();
    for (i, p) in ports.iter().enumerate() {
        port(
            p,
            ports.len() > 1,
            &mut names,
            &format!("spec.ports[{i}]"),
            &mut errs,
        );
    }
    one_of(
        &mut errs,
        "spec.sessionAffinity",
        &spec["sessionAffinity"],
        &["ClientIP", "None"],
    );
    one_of(
        &mut errs,
        "spec.type",
        &spec["type"],
        &["ClusterIP", "ExternalName", "LoadBalancer", "NodePort"],
    );
    if kind == "ClusterIP" {
        for (i, p) in ports.iter().enumerate() {
            if int_of(p, "nodePort") != 0 {
                field::forbidden(
                    &mut errs,
                    format!("spec.ports[{i}].nodePort"),
                    "may not be used when `type` is 'ClusterIP'",
                );
            }
        }
    }
    let mut node_ports = HashSet::new();
    for (i, p) in ports.iter().enumerate() {
        let n = int_of(p, "nodePort");
        if n != 0 && !node_ports.insert((str_of(p, "protocol"), n)) {
            field::duplicate(
                &mut errs,
                format!("spec.ports[{i}].nodePort"),
                &n.to_string(),
            );
        }
    }
    let mut pairs = HashSet::new();
    for (i, p) in ports.iter().enumerate() {
        let (protocol, number) = (str_of(p, "protocol"), int_of(p, "port"));
        if !pairs.insert((protocol, number)) {
            // kube prints the key it compares, a Go struct.
            let key = format!(
                "core.ServicePort{{Name:\"\", Protocol:{protocol:?}, AppProtocol:(*string)(nil), Port:{number}, TargetPort:intstr.IntOrString{{Type:0, IntVal:0, StrVal:\"\"}}, NodePort:0}}"
            );
            field::duplicate(&mut errs, format!("spec.ports[{i}]"), &key);
        }
    }
    traffic_policies(spec, kind, &mut errs);
    if errs.is_empty() && matches!(kind, "NodePort" | "LoadBalancer") {
        node_port_range(&ports, &mut errs);
    }
    errs
}

fn one_of(errs: &mut Causes, path: &str, v: &Value, supported: &[&str]) {
    match v {
        Value::Null => field::required(errs, path, ""),
        Value::String(s) if s.is_empty() => field::required(errs, path, ""),
        Value::String(s) if supported.contains(&s.as_str()) => {}
        other => field::not_supported(errs, path, other, supported),
    }
}

/// `validateServicePort`.
fn port<'a>(
    p: &'a Value,
    require_name: bool,
    names: &mut HashSet<&'a str>,
    path: &str,
    errs: &mut Causes,
) {
    let name = str_of(p, "name");
    let name_path = format!("{path}.name");
    if require_name && name.is_empty() {
        field::required(errs, &name_path, "");
    } else if !name.is_empty() {
        field::check_label(errs, &name_path, name);
        if !names.insert(name) {
            field::duplicate(errs, &name_path, &format!("{name:?}"));
        }
    }
    let number = p.get("port").cloned().unwrap_or(Value::from(0));
    if !number.as_i64().is_some_and(|n| (1..=65535).contains(&n)) {
        field::invalid(errs, format!("{path}.port"), &number, field::PORT_RANGE);
    }
    one_of(
        errs,
        &format!("{path}.protocol"),
        &p["protocol"],
        &["SCTP", "TCP", "UDP"],
    );
    field::check_port_num_or_name(errs, format!("{path}.targetPort"), &p["targetPort"]);
}

/// `externalTrafficPolicy` only where traffic comes from outside, and the
/// values both policies may take.
fn traffic_policies(spec: &Value, kind: &str, errs: &mut Causes) {
    let external = matches!(kind, "NodePort" | "LoadBalancer")
        || (kind == "ClusterIP"
            && spec["externalIPs"]
                .as_array()
                .is_some_and(|a| !a.is_empty()));
    let policy = &spec["externalTrafficPolicy"];
    if !external {
        if policy.as_str().is_some_and(|s| !s.is_empty()) {
            field::invalid(
                errs,
                "spec.externalTrafficPolicy",
                policy,
                "may only be set for externally-accessible services",
            );
        }
    } else {
        one_of(
            errs,
            "spec.externalTrafficPolicy",
            policy,
            &["Cluster", "Local"],
        );
    }
    let internal = &spec["internalTrafficPolicy"];
    if !internal.is_null() && !matches!(internal.as_str(), Some("Cluster" | "Local")) {
        field::not_supported(
            errs,
            "spec.internalTrafficPolicy",
            internal,
            &["Cluster", "Local"],
        );
    }
}

/// The node port allocator's refusal of a port outside the range (the
/// first one; kube stops there).
fn node_port_range(ports: &[&Value], errs: &mut Causes) {
    for (i, p) in ports.iter().enumerate() {
        let n = int_of(p, "nodePort");
        if n != 0 && !NODE_PORTS.contains(&n) {
            field::invalid(
                errs,
                format!("spec.ports[{i}].nodePort"),
                &Value::from(n),
                "provided port is not in the valid range. The range of valid ports is 30000-32767",
            );
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn text(svc: Value) -> Vec<String> {
        errors(&svc)
            .iter()
            .map(|(f, m)| format!("{f}: {m}"))
            .collect()
    }

    fn svc(kind: &str, ports: Value) -> Value {
        json!({"spec": {"type": kind, "sessionAffinity": "None", "ports": ports}})
    }

    #[test]
    fn a_plain_service_is_valid() {
        let ports = json!([{"name": "http", "port": 80, "protocol": "TCP", "targetPort": "http"},
            {"name": "https", "port": 443, "protocol": "TCP", "targetPort": 8443}]);
        assert!(text(svc("ClusterIP", ports.clone())).is_empty());
        let mut np = svc("NodePort", ports);
        np["spec"]["ports"][0]["nodePort"] = json!(30080);
        np["spec"]["externalTrafficPolicy"] = json!("Cluster");
        assert!(text(np).is_empty());
    }

    #[test]
    fn ports() {
        let e = text(svc(
            "ClusterIP",
            json!([{"port": 0, "protocol": "TCP", "targetPort": 0},
                {"name": "a", "port": 80, "protocol": "TCP", "targetPort": 80, "nodePort": 30001},
                {"name": "a", "port": 80, "protocol": "TCP", "targetPort": "Web"}]),
        ));
        assert_eq!(
            e,
            [
                "spec.ports[0].name: Required value",
                "spec.ports[0].port: Invalid value: 0: must be between 1 and 65535, inclusive",
                "spec.ports[0].targetPort: Invalid value: 0: must be between 1 and 65535, inclusive",
                "spec.ports[2].name: Duplicate value: \"a\"",
                "spec.ports[2].targetPort: Invalid value: \"Web\": must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)",
                "spec.ports[1].nodePort: Forbidden: may not be used when `type` is 'ClusterIP'",
                "spec.ports[2]: Duplicate value: core.ServicePort{Name:\"\", Protocol:\"TCP\", AppProtocol:(*string)(nil), Port:80, TargetPort:intstr.IntOrString{Type:0, IntVal:0, StrVal:\"\"}, NodePort:0}",
            ]
        );
    }

    #[test]
    fn types_and_node_ports() {
        assert_eq!(
            text(svc(
                "Bogus",
                json!([{"port": 80, "protocol": "TCP", "targetPort": 80}])
            )),
            [
                "spec.type: Unsupported value: \"Bogus\": supported values: \"ClusterIP\", \"ExternalName\", \"LoadBalancer\", \"NodePort\""
            ]
        );
        let mut np = svc(
            "NodePort",
            json!([{"name": "a", "port": 80, "protocol": "TCP", "targetPort": 80, "nodePort": 80},
                {"name": "b", "port": 81, "protocol": "TCP", "targetPort": 81, "nodePort": 80}]),
        );
        np["spec"]["externalTrafficPolicy"] = json!("Cluster");
        assert_eq!(
            text(np.clone()),
            ["spec.ports[1].nodePort: Duplicate value: 80"]
        );
        np["spec"]["ports"][1]["nodePort"] = json!(30001);
        assert_eq!(
            text(np),
            [
                "spec.ports[0].nodePort: Invalid value: 80: provided port is not in the valid range. The range of valid ports is 30000-32767"
            ]
        );
        let ext = json!({"spec": {"type": "ExternalName", "sessionAffinity": "None", "externalTrafficPolicy": "Local"}});
        assert_eq!(
            text(ext),
            [
                "spec.externalName: Required value",
                "spec.externalTrafficPolicy: Invalid value: \"Local\": may only be set for externally-accessible services",
            ]
        );
        assert_eq!(
            text(svc("ClusterIP", json!([]))),
            ["spec.ports: Required value"]
        );
    }
}
