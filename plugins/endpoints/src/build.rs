//! What a Service's Endpoints and EndpointSlices should hold, from its
//! pods: kube-controller-manager's endpoints and endpointslice controllers'
//! rules, as a pure function of the Service and the pods it selects.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::view::{Pod, Service};

/// The most endpoints one EndpointSlice holds (`--max-endpoints-per-slice`).
pub(crate) const MAX_PER_SLICE: usize = 100;
/// The label naming a slice's Service.
pub(crate) const SERVICE_NAME: &str = "kubernetes.io/service-name";
/// The label naming the controller that manages a slice.
pub(crate) const MANAGED_BY: &str = "endpointslice.kubernetes.io/managed-by";
/// What kube's controller writes in [`MANAGED_BY`].
pub(crate) const CONTROLLER: &str = "endpointslice-controller.k8s.io";

/// One resolved port: name, number, protocol, appProtocol.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Port {
    name: String,
    port: i64,
    protocol: String,
    app_protocol: Option<String>,
}

impl Port {
    fn to_json(&self) -> Value {
        let mut p = json!({"name": self.name, "port": self.port, "protocol": self.protocol});
        if let Some(a) = &self.app_protocol {
            p["appProtocol"] = json!(a);
        }
        p
    }
}

/// One pod as an endpoint.
struct Member<'p> {
    pod: &'p Pod,
    ip: &'p str,
    ready: bool,
    serving: bool,
    terminating: bool,
}

impl Member<'_> {
    fn target_ref(&self) -> Value {
        let m = &self.pod.metadata;
        json!({"kind": "Pod", "namespace": m.namespace.as_deref().unwrap_or("default"),
            "name": m.name, "uid": m.uid.as_deref().unwrap_or_default()})
    }

    fn node(&self) -> Option<&str> {
        self.pod.spec.node_name.as_deref().filter(|n| !n.is_empty())
    }
}

/// The Service's ports as `pod` serves them (`targetPort` resolved, by
/// number or by the name of one of its container ports; a name the pod
/// does not have leaves that port out, as upstream).
fn ports_of(svc: &Service, pod: &Pod) -> Vec<Port> {
    let mut out: Vec<Port> = svc
        .spec
        .ports
        .iter()
        .flatten()
        .filter_map(|p| {
            let protocol = p.protocol.clone().unwrap_or_else(|| "TCP".into());
            let port = match &p.target_port {
                None | Some(Value::Null) => p.port,
                Some(Value::Number(n)) => n.as_i64().filter(|n| *n != 0).unwrap_or(p.port),
                Some(Value::String(s)) => match s.parse::<i64>() {
                    Ok(n) => n,
                    Err(_) => pod.find_port(s, &protocol)?,
                },
                Some(_) => return None,
            };
            Some(Port {
                name: p.name.clone().unwrap_or_default(),
                port,
                protocol,
                app_protocol: p.app_protocol.clone(),
            })
        })
        .collect();
    out.sort();
    out
}

/// The pods of `pods` that are endpoints of `svc`, with their ports: not
/// ended, with an IP; terminating ones only when `include_terminating`
/// (`ShouldPodBeInEndpoints`). Grouped by port set, each group ordered by
/// pod name, so that the same pods always give the same objects.
fn members<'p>(
    svc: &Service,
    pods: &'p [Pod],
    include_terminating: bool,
) -> BTreeMap<Vec<Port>, Vec<Member<'p>>> {
    let publish = svc.spec.publish_not_ready_addresses == Some(true);
    let mut groups: BTreeMap<Vec<Port>, Vec<Member<'p>>> = BTreeMap::new();
    for pod in pods {
        let Some(ip) = pod.status.pod_ip.as_deref().filter(|ip| !ip.is_empty()) else {
            continue;
        };
        let terminating = pod.metadata.deletion_timestamp.is_some();
        if pod.is_terminal() || (terminating && !include_terminating) {
            continue;
        }
        let ready = pod.is_ready();
        groups.entry(ports_of(svc, pod)).or_default().push(Member {
            pod,
            ip,
            ready: publish || (ready && !terminating),
            serving: publish || ready,
            terminating,
        });
    }
    for members in groups.values_mut() {
        members.sort_by(|a, b| a.pod.metadata.name.cmp(&b.pod.metadata.name));
    }
    groups
}

/// The Service's labels, which its Endpoints and slices carry (with
/// `service.kubernetes.io/headless` on a headless Service's).
fn labels(svc: &Service, headless: bool) -> serde_json::Map<String, Value> {
    let mut labels: serde_json::Map<String, Value> = svc
        .metadata
        .labels
        .iter()
        .flatten()
        .map(|(k, v)| (k.clone(), json!(v)))
        .collect();
    if headless {
        labels.insert("service.kubernetes.io/headless".into(), json!(""));
    }
    labels
}

/// The v1 Endpoints of `svc`: a subset per port set, ready pods under
/// `addresses`, the others under `notReadyAddresses`.
pub(crate) fn endpoints(svc: &Service, pods: &[Pod], headless: bool) -> Value {
    let publish = svc.spec.publish_not_ready_addresses == Some(true);
    let subsets: Vec<Value> = members(svc, pods, publish)
        .into_iter()
        .map(|(ports, members)| {
            let address = |m: &Member<'_>| {
                let mut a = json!({"ip": m.ip, "targetRef": m.target_ref()});
                if let Some(node) = m.node() {
                    a["nodeName"] = json!(node);
                }
                a
            };
            let mut ready: Vec<&Member<'_>> = members.iter().filter(|m| m.ready).collect();
            let mut not_ready: Vec<&Member<'_>> = members.iter().filter(|m| !m.ready).collect();
            let by_ip = |a: &&Member<'_>, b: &&Member<'_>| ip_key(a.ip).cmp(&ip_key(b.ip));
            ready.sort_by(by_ip);
            not_ready.sort_by(by_ip);
            let mut subset = json!({"ports": ports.iter().map(Port::to_json).collect::<Vec<_>>()});
            if !ready.is_empty() {
                subset["addresses"] = ready.into_iter().map(address).collect();
            }
            if !not_ready.is_empty() {
                subset["notReadyAddresses"] = not_ready.into_iter().map(address).collect();
            }
            subset
        })
        .collect();
    let m = &svc.metadata;
    // No subsets is written as `null`, so that an apply removes the ones
    // there were.
    json!({"apiVersion": "v1", "kind": "Endpoints",
        "metadata": {"name": m.name, "namespace": m.namespace.as_deref().unwrap_or("default"),
            "labels": labels(svc, headless)},
        "subsets": (!subsets.is_empty()).then_some(subsets)})
}

/// An IPv4 address as a number for ordering (others after, as text).
fn ip_key(ip: &str) -> (u8, u32, &str) {
    match ip.parse::<std::net::Ipv4Addr>() {
        Ok(v4) => (0, u32::from(v4), ""),
        Err(_) => (1, 0, ip),
    }
}

/// The EndpointSlices of `svc`: per port set, up to [`MAX_PER_SLICE`]
/// endpoints each; one empty slice when there are none, as upstream keeps
/// a placeholder.
pub(crate) fn slices(svc: &Service, pods: &[Pod], headless: bool) -> Vec<Value> {
    let m = &svc.metadata;
    let namespace = m.namespace.as_deref().unwrap_or("default");
    let mut labels = labels(svc, headless);
    labels.insert(SERVICE_NAME.into(), json!(m.name));
    labels.insert(MANAGED_BY.into(), json!(CONTROLLER));
    let slice = |n: usize, ports: Option<&[Port]>, members: &[Member<'_>]| {
        // What a slice has none of is `null`, so that an apply removes it.
        let ports: Option<Vec<Value>> = ports.map(|p| p.iter().map(Port::to_json).collect());
        let endpoints: Option<Vec<Value>> = (!members.is_empty()).then(|| {
            members
                .iter()
                .map(|e| {
                    let mut v = json!({"addresses": [e.ip],
                        "conditions": {"ready": e.ready, "serving": e.serving, "terminating": e.terminating},
                        "targetRef": e.target_ref()});
                    if let Some(node) = e.node() {
                        v["nodeName"] = json!(node);
                    }
                    v
                })
                .collect()
        });
        json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"name": slice_name(&m.name, m.uid.as_deref().unwrap_or_default(), n),
                "namespace": namespace, "labels": labels},
            "addressType": "IPv4", "ports": ports, "endpoints": endpoints})
    };
    let mut out = Vec::new();
    for (ports, members) in members(svc, pods, true) {
        for chunk in members.chunks(MAX_PER_SLICE) {
            out.push(slice(out.len(), Some(&ports), chunk));
        }
    }
    if out.is_empty() {
        out.push(slice(0, None, &[]));
    }
    out
}

/// The name of a Service's `n`th slice: its name (cut to leave room) and
/// five letters from its uid and `n`, as a generated name looks, but the
/// same on every reconcile.
fn slice_name(service: &str, uid: &str, n: usize) -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in uid.bytes().chain(n.to_le_bytes()) {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    let suffix: String = (0..5)
        .map(|i| ALPHABET[((h >> (i * 8)) % ALPHABET.len() as u64) as usize] as char)
        .collect();
    let prefix: String = service.chars().take(57).collect();
    format!("{prefix}-{suffix}")
}
