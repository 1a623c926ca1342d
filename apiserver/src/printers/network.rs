//! `kubectl get` columns of networking: services, endpoints, endpoint
//! slices, ingresses, ingress classes and network policies.

use serde_json::{Value, json};

use super::*;

fn ports(ps: &Value) -> String {
    join(ps.as_array().into_iter().flatten().map(|p| {
        let proto = p["protocol"].as_str().unwrap_or("TCP");
        match p["nodePort"].as_i64() {
            Some(np) => format!("{}:{np}/{proto}", n(&p["port"])),
            None => format!("{}/{proto}", n(&p["port"])),
        }
    }))
}

fn service_external_ip(v: &Value) -> Value {
    let mut ips: Vec<String> = v["spec"]["externalIPs"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|x| s(x).to_owned())
        .collect();
    for i in v["status"]["loadBalancer"]["ingress"]
        .as_array()
        .into_iter()
        .flatten()
    {
        ips.push(
            i["ip"]
                .as_str()
                .or(i["hostname"].as_str())
                .unwrap_or_default()
                .to_owned(),
        );
    }
    if ips.is_empty() && v["spec"]["type"] == "LoadBalancer" {
        return json!("<pending>");
    }
    or_none(&ips.join(","))
}

fn endpoints(v: &Value) -> Value {
    let mut out = Vec::new();
    for sub in v["subsets"].as_array().into_iter().flatten() {
        for a in sub["addresses"].as_array().into_iter().flatten() {
            let ports: Vec<i64> = sub["ports"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|p| n(&p["port"]))
                .collect();
            if ports.is_empty() {
                out.push(s(&a["ip"]).to_owned());
            }
            for p in ports {
                out.push(format!("{}:{p}", s(&a["ip"])));
            }
        }
    }
    or_none(&out.join(","))
}

fn slice_endpoints(v: &Value) -> Value {
    or_none(&join(
        v["endpoints"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|e| e["addresses"].as_array().cloned().unwrap_or_default())
            .map(|a| s(&a).to_owned()),
    ))
}

fn slice_ports(v: &Value) -> Value {
    or_none(&join(
        v["ports"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|p| n(&p["port"]).to_string()),
    ))
}

/// The columns of `group`/`plural` if they are among this file's kinds.
pub(super) fn columns(group: &str, plural: &str) -> Option<Vec<Column>> {
    let cols = match (group, plural) {
        ("", "services") => vec![
            col("Name", name),
            col("Type", |v| {
                json!(v["spec"]["type"].as_str().unwrap_or("ClusterIP"))
            }),
            col("Cluster-IP", |v| or_none(s(&v["spec"]["clusterIP"]))),
            col("External-IP", service_external_ip),
            col("Port(s)", |v| or_none(&ports(&v["spec"]["ports"]))),
            col("Age", age),
            wide("Selector", |v| map_selector(&v["spec"]["selector"])),
        ],
        ("", "endpoints") => vec![
            col("Name", name),
            col("Endpoints", endpoints),
            col("Age", age),
        ],
        ("discovery.k8s.io", "endpointslices") => vec![
            col("Name", name),
            col("AddressType", |v| json!(s(&v["addressType"]))),
            col("Ports", slice_ports),
            col("Endpoints", slice_endpoints),
            col("Age", age),
        ],
        ("networking.k8s.io", "ingresses") => vec![
            col("Name", name),
            col("Class", |v| or_none(s(&v["spec"]["ingressClassName"]))),
            col("Hosts", |v| {
                let h = join(
                    v["spec"]["rules"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .map(|r| s(&r["host"]).to_owned()),
                );
                json!(if h.is_empty() { "*".to_owned() } else { h })
            }),
            col("Address", |v| {
                json!(join(
                    v["status"]["loadBalancer"]["ingress"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .map(|i| {
                            i["ip"]
                                .as_str()
                                .or(i["hostname"].as_str())
                                .unwrap_or_default()
                                .to_owned()
                        })
                ))
            }),
            col("Ports", |v| {
                json!(
                    if v["spec"]["tls"].as_array().is_some_and(|t| !t.is_empty()) {
                        "80, 443"
                    } else {
                        "80"
                    }
                )
            }),
            col("Age", age),
        ],
        ("networking.k8s.io", "ingressclasses") => vec![
            col("Name", name),
            col("Controller", |v| json!(s(&v["spec"]["controller"]))),
            col("Parameters", |v| {
                let p = &v["spec"]["parameters"];
                if p.is_object() {
                    json!(format!("{}/{}", s(&p["kind"]), s(&p["name"])))
                } else {
                    json!("<none>")
                }
            }),
            col("Age", age),
        ],
        ("networking.k8s.io", "networkpolicies") => vec![
            col("Name", name),
            col("Pod-Selector", |v| selector(&v["spec"]["podSelector"])),
            col("Age", age),
        ],
        _ => return None,
    };
    Some(cols)
}
