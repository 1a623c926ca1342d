//! Cluster IPs and node ports of Services, allocated as kube-apiserver's
//! service storage allocates them: a Service that needs a cluster IP gets
//! a free one from the service range (10.96.0.0/12, whose first address
//! the `kubernetes` Service holds), one that asks for a given IP or node
//! port gets it only if it is in range and free, and an update keeps what
//! was allocated (an update that leaves them out keeps them; one that
//! changes the cluster IP is refused: `may not change once set`).
//!
//! What is taken is read from the stored Services under the state lock the
//! write holds, so two creates cannot be given one address, and a deleted
//! Service's address and ports are free again at once.
//!
//! As upstream, free addresses and ports are picked at random from the
//! upper part of each range, leaving the lower part (the first 256
//! addresses, the first 86 ports) to those asked for by number.
//! Single-stack IPv4: `ipFamilies: [IPv4]`. Not done: the health-check
//! node port of a `LoadBalancer` with `externalTrafficPolicy: Local`.

use std::collections::HashSet;
use std::net::Ipv4Addr;

use serde_json::{Value, json};

use crate::causes::{self as field, Causes};
use crate::state::State;
use crate::validate::NODE_PORTS;

/// The service range: 10.96.0.0/12.
const RANGE_BASE: u32 = u32::from_be_bytes([10, 96, 0, 0]);
const RANGE_BITS: u32 = 12;
/// What kube-apiserver says the range is.
const RANGE_TEXT: &str = "10.96.0.0/12";
/// Addresses below this offset are allocated only when asked for
/// (`ServiceIPStaticSubrange`: a sixteenth of the range, at most 256).
const STATIC_IPS: u32 = 256;
/// Ports below `NODE_PORTS.start() + STATIC_PORTS` are allocated only when
/// asked for (a thirty-second of the range, between 16 and 128).
const STATIC_PORTS: i64 = 86;

fn size() -> u32 {
    1 << (32 - RANGE_BITS)
}

/// Whether `spec` is of a type that has a cluster IP (all but ExternalName).
fn needs_cluster_ip(spec: &Value) -> bool {
    spec["type"].as_str() != Some("ExternalName")
}

/// Whether `spec` is of a type that has node ports.
fn needs_node_ports(spec: &Value) -> bool {
    match spec["type"].as_str() {
        Some("NodePort") => true,
        Some("LoadBalancer") => spec["allocateLoadBalancerNodePorts"] != false,
        _ => false,
    }
}

/// The cluster IP `spec` asks for: `clusterIP`, else the first of
/// `clusterIPs`; empty when it asks for none.
fn requested_ip(spec: &Value) -> &str {
    match spec["clusterIP"].as_str() {
        Some(ip) if !ip.is_empty() => ip,
        _ => spec["clusterIPs"][0].as_str().unwrap_or_default(),
    }
}

/// The addresses and node ports other Services hold.
struct Taken {
    ips: HashSet<Ipv4Addr>,
    node_ports: HashSet<i64>,
}

impl Taken {
    /// Everything the stored Services hold but `except` (namespace, name).
    fn read(st: &State, except: (&str, &str)) -> Self {
        let mut taken = Taken {
            ips: HashSet::new(),
            node_ports: HashSet::new(),
        };
        for svc in st.list("/services", None) {
            let v = svc.value();
            let meta = &v["metadata"];
            let id = (
                meta["namespace"].as_str().unwrap_or_default(),
                meta["name"].as_str().unwrap_or_default(),
            );
            if except == id {
                continue;
            }
            let spec = &v["spec"];
            for ip in spec["clusterIPs"].as_array().into_iter().flatten() {
                if let Some(ip) = ip.as_str().and_then(|s| s.parse().ok()) {
                    taken.ips.insert(ip);
                }
            }
            if let Some(ip) = spec["clusterIP"].as_str().and_then(|s| s.parse().ok()) {
                taken.ips.insert(ip);
            }
            taken
                .node_ports
                .extend(node_ports_of(spec).filter(|n| *n != 0));
        }
        taken
    }

    /// A free address from the upper part of the range, at random.
    fn free_ip(&self) -> Option<Ipv4Addr> {
        // Offsets 1..size-1: not the network or the broadcast address.
        let (low, high) = (STATIC_IPS, size() - 1);
        let span = high - low;
        let start = fastrand::u32(..span);
        (0..span)
            .map(|i| RANGE_BASE + low + (start + i) % span)
            .map(Ipv4Addr::from)
            .chain((1..low).map(|o| Ipv4Addr::from(RANGE_BASE + o)))
            .find(|ip| !self.ips.contains(ip))
    }

    /// A free node port from the upper part of the range, at random.
    fn free_node_port(&self, also: &HashSet<i64>) -> Option<i64> {
        let low = NODE_PORTS.start() + STATIC_PORTS;
        let span = NODE_PORTS.end() + 1 - low;
        let start = fastrand::i64(0..span);
        (0..span)
            .map(|i| low + (start + i) % span)
            .chain(*NODE_PORTS.start()..low)
            .find(|p| !self.node_ports.contains(p) && !also.contains(p))
    }
}

/// Whether `ip` is an address of the range other than its network and
/// broadcast addresses.
fn in_range(ip: Ipv4Addr) -> bool {
    let offset = u32::from(ip).wrapping_sub(RANGE_BASE);
    offset > 0 && offset < size() - 1
}

/// Allocates what a new Service needs; the errors are `spec` field causes.
pub(crate) fn on_create(st: &State, namespace: &str, name: &str, svc: &mut Value) -> Causes {
    let mut errs = Causes::new();
    allocate(
        st,
        (namespace, name),
        &mut svc["spec"],
        false,
        &HashSet::new(),
        &mut errs,
    );
    errs
}

/// Carries what `old` was allocated into `new` where `new` leaves it out,
/// frees what `new`'s type no longer has, and allocates what it newly
/// needs; the errors are `spec` field causes.
pub(crate) fn on_update(
    st: &State,
    namespace: &str,
    name: &str,
    old: &Value,
    new: &mut Value,
) -> Causes {
    let mut errs = Causes::new();
    let (old_spec, spec) = (&old["spec"], &mut new["spec"]);
    drop_type_dependent_fields(old_spec, spec);
    let had_ip = needs_cluster_ip(old_spec) && !requested_ip(old_spec).is_empty();
    if needs_cluster_ip(spec) && had_ip {
        let before = requested_ip(old_spec).to_owned();
        let asked = requested_ip(spec).to_owned();
        if asked.is_empty() {
            spec["clusterIP"] = old_spec["clusterIP"].clone();
            spec["clusterIPs"] = old_spec["clusterIPs"].clone();
        } else if asked != before {
            let shown = spec["clusterIPs"]
                .as_array()
                .filter(|a| !a.is_empty())
                .map_or_else(|| json!([asked]), |a| Value::Array(a.clone()));
            field::invalid(
                &mut errs,
                "spec.clusterIPs[0]",
                &shown,
                "may not change once set",
            );
            return errs;
        } else if spec["clusterIPs"].as_array().is_none_or(Vec::is_empty) {
            spec["clusterIPs"] = json!([asked]);
        }
        for f in ["ipFamilies", "ipFamilyPolicy"] {
            if spec[f].is_null() && !old_spec[f].is_null() {
                spec[f] = old_spec[f].clone();
            }
        }
        ip_families(spec);
    }
    let held: HashSet<i64> = if needs_node_ports(spec) && needs_node_ports(old_spec) {
        keep_node_ports(old_spec, spec);
        node_ports_of(old_spec).collect()
    } else {
        HashSet::new()
    };
    // From ExternalName (or stored before addresses were allocated), the
    // cluster IP is allocated as on a create.
    allocate(st, (namespace, name), spec, had_ip, &held, &mut errs);
    errs
}

/// What a Service is allocated that it does not hold yet: a cluster IP
/// unless it `had_ip`, node ports where it has none or asks for one not
/// `held` already. What other Services hold is read only then: most
/// updates (labels, status) need none of it.
fn allocate(
    st: &State,
    service: (&str, &str),
    spec: &mut Value,
    had_ip: bool,
    held: &HashSet<i64>,
    errs: &mut Causes,
) {
    let taken = std::cell::OnceCell::new();
    let taken = || taken.get_or_init(|| Taken::read(st, service));
    if needs_cluster_ip(spec) && !had_ip {
        cluster_ip(taken(), spec, errs);
        ip_families(spec);
    }
    if errs.is_empty()
        && needs_node_ports(spec)
        && node_ports_of(spec).any(|n| n == 0 || !held.contains(&n))
    {
        node_ports(taken(), spec, errs);
    }
}

/// The node port of each port of `spec` (0 where it has none).
fn node_ports_of(spec: &Value) -> impl Iterator<Item = i64> + '_ {
    spec["ports"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|p| p["nodePort"].as_i64().unwrap_or(0))
}

/// `dropTypeDependentFields`: when an update changes a Service's type, the
/// fields the new type has no use for go, if the update left them as they
/// were (the server may have set them; a value the user changed stays, for
/// validation to judge).
fn drop_type_dependent_fields(old: &Value, new: &mut Value) {
    let same = |new: &Value, f: &str| new[f] == old[f];
    let remove = |new: &mut Value, f: &str| {
        if let Some(m) = new.as_object_mut() {
            m.remove(f);
        }
    };
    if needs_cluster_ip(old) && !needs_cluster_ip(new) {
        if same(new, "clusterIP") && same(new, "clusterIPs") {
            remove(new, "clusterIP");
            remove(new, "clusterIPs");
        }
        for f in ["ipFamilies", "ipFamilyPolicy"] {
            if same(new, f) {
                remove(new, f);
            }
        }
    }
    let node_ports = |v: &Value| -> Vec<Value> {
        v["ports"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|p| p["nodePort"].clone())
            .collect()
    };
    if needs_node_ports(old) && !needs_node_ports(new) && node_ports(old) == node_ports(new) {
        for p in ports_mut(new) {
            if let Some(m) = p.as_object_mut() {
                m.remove("nodePort");
            }
        }
    }
    if new["type"] != "LoadBalancer" {
        for f in ["allocateLoadBalancerNodePorts", "loadBalancerClass"] {
            if same(new, f) {
                remove(new, f);
            }
        }
    }
    let external = match new["type"].as_str() {
        Some("NodePort" | "LoadBalancer") => true,
        _ => new["externalIPs"].as_array().is_some_and(|a| !a.is_empty()),
    };
    if !external && same(new, "externalTrafficPolicy") {
        remove(new, "externalTrafficPolicy");
    }
}

/// The cluster IP of a Service that has none yet: the one it asks for,
/// checked, or a free one; "None" makes it headless.
fn cluster_ip(taken: &Taken, spec: &mut Value, errs: &mut Causes) {
    let asked = requested_ip(spec).to_owned();
    let ip = match asked.as_str() {
        "None" => "None".to_owned(),
        "" => match taken.free_ip() {
            Some(ip) => ip.to_string(),
            None => {
                field::invalid(
                    errs,
                    "spec.clusterIPs",
                    &json!([]),
                    "failed to allocate a serviceIP: range is full",
                );
                return;
            }
        },
        text => {
            let list = json!([text]);
            let Ok(ip) = text.parse::<Ipv4Addr>() else {
                field::invalid(
                    errs,
                    "spec.clusterIPs[0]",
                    &Value::from(text),
                    "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
                );
                return;
            };
            let problem = if !in_range(ip) {
                format!(
                    "the provided IP ({ip}) is not in the valid range. The range of valid IPs is {RANGE_TEXT}"
                )
            } else if taken.ips.contains(&ip) {
                "provided IP is already allocated".to_owned()
            } else {
                String::new()
            };
            if !problem.is_empty() {
                field::invalid(
                    errs,
                    "spec.clusterIPs",
                    &list,
                    &format!("failed to allocate IP {ip}: {problem}"),
                );
                return;
            }
            ip.to_string()
        }
    };
    spec["clusterIP"] = json!(ip);
    spec["clusterIPs"] = json!([ip]);
}

/// The families a single-stack IPv4 cluster gives a Service with a
/// cluster IP (or a headless one), unless it says otherwise.
fn ip_families(spec: &mut Value) {
    if spec["ipFamilies"].as_array().is_none_or(Vec::is_empty) {
        spec["ipFamilies"] = json!(["IPv4"]);
    }
    if spec["ipFamilyPolicy"].as_str().is_none_or(str::is_empty) {
        // A headless Service without a selector may have addresses of
        // either family.
        let headless = spec["clusterIP"] == "None";
        let selector = spec["selector"].as_object().is_some_and(|m| !m.is_empty());
        let policy = if headless && !selector {
            "RequireDualStack"
        } else {
            "SingleStack"
        };
        spec["ipFamilyPolicy"] = json!(policy);
    }
}

fn ports_mut(spec: &mut Value) -> impl Iterator<Item = &mut Value> {
    spec["ports"].as_array_mut().into_iter().flatten()
}

/// `patchAllocatedValues`: a port of `new` without a node port gets the one
/// `old`'s port of the same name had, unless another port of `new` uses it.
fn keep_node_ports(old: &Value, new: &mut Value) {
    let node_port = |p: &Value| p["nodePort"].as_i64().unwrap_or(0);
    let old_ports: Vec<(String, i64)> = old["ports"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|p| {
            (
                p["name"].as_str().unwrap_or_default().to_owned(),
                node_port(p),
            )
        })
        .collect();
    let used: HashSet<i64> = node_ports_of(new).filter(|n| *n != 0).collect();
    for p in ports_mut(new) {
        if node_port(p) != 0 {
            continue;
        }
        let name = p["name"].as_str().unwrap_or_default();
        if let Some((_, n)) = old_ports.iter().find(|(o, n)| o == name && *n != 0)
            && !used.contains(n)
        {
            p["nodePort"] = json!(n);
        }
    }
}

/// Node ports for every port of `spec`: the one asked for, checked against
/// other Services, or a free one. One Service may use a node port for two
/// protocols.
fn node_ports(taken: &Taken, spec: &mut Value, errs: &mut Causes) {
    let mut own: HashSet<i64> = HashSet::new();
    for (i, p) in ports_mut(spec).enumerate() {
        let asked = p["nodePort"].as_i64().unwrap_or(0);
        if asked == 0 {
            continue;
        }
        if taken.node_ports.contains(&asked) {
            field::invalid(
                errs,
                format!("spec.ports[{i}].nodePort"),
                &Value::from(asked),
                "provided port is already allocated",
            );
            return;
        }
        own.insert(asked);
    }
    for p in ports_mut(spec) {
        if p["nodePort"].as_i64().unwrap_or(0) != 0 {
            continue;
        }
        let Some(n) = taken.free_node_port(&own) else {
            field::invalid(
                errs,
                "spec.ports",
                &Value::Null,
                "failed to allocate a nodePort: range is full",
            );
            return;
        };
        own.insert(n);
        p["nodePort"] = json!(n);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_range_excludes_its_network_and_broadcast_addresses() {
        assert!(!in_range(Ipv4Addr::new(10, 96, 0, 0)));
        assert!(in_range(Ipv4Addr::new(10, 96, 0, 1)));
        assert!(in_range(Ipv4Addr::new(10, 111, 255, 254)));
        assert!(!in_range(Ipv4Addr::new(10, 111, 255, 255)));
        assert!(!in_range(Ipv4Addr::new(10, 112, 0, 1)));
        assert!(!in_range(Ipv4Addr::new(192, 168, 0, 1)));
    }

    #[test]
    fn free_addresses_and_ports_come_from_the_upper_part_and_skip_what_is_taken() {
        let mut taken = Taken {
            ips: HashSet::new(),
            node_ports: HashSet::new(),
        };
        for _ in 0..200 {
            let ip = taken.free_ip().unwrap();
            let offset = u32::from(ip) - RANGE_BASE;
            assert!((STATIC_IPS..size() - 1).contains(&offset), "{ip}");
            assert!(taken.ips.insert(ip), "{ip} given twice");
            let port = taken.free_node_port(&HashSet::new()).unwrap();
            assert!(
                port >= NODE_PORTS.start() + STATIC_PORTS && port <= *NODE_PORTS.end(),
                "{port}"
            );
            assert!(taken.node_ports.insert(port), "{port} given twice");
        }
        // With the upper part taken, the lower part is used.
        let all_upper: HashSet<i64> =
            (NODE_PORTS.start() + STATIC_PORTS..=*NODE_PORTS.end()).collect();
        let full = Taken {
            ips: HashSet::new(),
            node_ports: all_upper,
        };
        let port = full.free_node_port(&HashSet::new()).unwrap();
        assert!(port < NODE_PORTS.start() + STATIC_PORTS);
    }

    #[test]
    fn an_update_keeps_node_ports_by_port_name() {
        let old = json!({"type": "NodePort", "ports": [
            {"name": "http", "port": 80, "nodePort": 30080},
            {"name": "https", "port": 443, "nodePort": 30443}]});
        let mut new = json!({"type": "NodePort", "ports": [
            {"name": "https", "port": 8443},
            {"name": "http", "port": 80, "nodePort": 30443}]});
        keep_node_ports(&old, &mut new);
        // https's old port is used by http now, so https gets none here.
        assert_eq!(new["ports"][0]["nodePort"], Value::Null);
        assert_eq!(new["ports"][1]["nodePort"], 30443);
    }
}
