//! What a cluster always has, made at start as its control plane makes it:
//! the system namespaces, a `default` ServiceAccount in each namespace, the
//! `kubernetes` Service in `default` with its Endpoints and EndpointSlice
//! pointing at this server (kept current when its address changes), a
//! local APIService for every built-in group and version and every group
//! and version CRDs serve, and the system PriorityClasses.

use std::net::SocketAddr;

use serde_json::{Value, json};

use crate::object;
use crate::resources::Resource;
use crate::scope::Req;
use crate::state::{Current, FollowUp, State};
use crate::write;

/// The cluster IP a cluster gives the `kubernetes` Service (the first of
/// the default service range).
const KUBERNETES_SERVICE_IP: &str = "10.96.0.1";

/// Makes (or brings up to date) everything above. Failures are logged:
/// the server still serves what it stores.
pub(crate) fn ensure(st: &mut State, addr: SocketAddr) {
    for ns in ["default", "kube-system", "kube-public", "kube-node-lease"] {
        let obj = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}});
        upsert(st, "/namespaces", "", obj, false);
    }
    for ns in st.list("/namespaces", None) {
        if !ns.attrs.deleting {
            ensure_default_service_account(st, &ns.attrs.name);
        }
    }
    for obj in kubernetes_service(addr) {
        let key = match obj["kind"].as_str() {
            Some("Service") => "/services",
            Some("Endpoints") => "/endpoints",
            _ => "discovery.k8s.io/endpointslices",
        };
        upsert(st, key, "default", obj, true);
    }
    for obj in api_services(st) {
        upsert(st, API_SERVICES, "", obj, true);
    }
    for obj in crate::admission::priority::system_classes() {
        upsert(
            st,
            crate::admission::priority::PRIORITY_CLASSES,
            "",
            obj,
            false,
        );
    }
    sync_crd_api_services(st);
}

/// Carries out what a stored write set off (wired into the state at start,
/// so that the write path reaches this module without importing it).
pub(crate) fn follow_up(st: &mut State, what: FollowUp<'_>) {
    match what {
        FollowUp::NamespaceCreated(ns) => ensure_default_service_account(st, ns),
        FollowUp::ServedApisChanged => sync_crd_api_services(st),
    }
}

/// Creates the `default` ServiceAccount of namespace `ns` if it is missing,
/// as kube's service account controller does for every namespace.
pub(crate) fn ensure_default_service_account(st: &mut State, ns: &str) {
    if st.get("/serviceaccounts", ns, "default").is_none() {
        let obj = json!({"apiVersion": "v1", "kind": "ServiceAccount",
            "metadata": {"name": "default", "namespace": ns}});
        upsert(st, "/serviceaccounts", ns, obj, false);
    }
}

/// The `kubernetes` Service, Endpoints and EndpointSlice for a server at `addr`.
fn kubernetes_service(addr: SocketAddr) -> [Value; 3] {
    let (ip, port) = (addr.ip().to_string(), addr.port());
    let family = if addr.is_ipv4() { "IPv4" } else { "IPv6" };
    [
        json!({"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "kubernetes", "namespace": "default",
                "labels": {"component": "apiserver", "provider": "kubernetes"}},
            "spec": {"type": "ClusterIP", "clusterIP": KUBERNETES_SERVICE_IP,
                "clusterIPs": [KUBERNETES_SERVICE_IP], "ipFamilies": ["IPv4"],
                "ipFamilyPolicy": "SingleStack", "internalTrafficPolicy": "Cluster",
                "sessionAffinity": "None",
                "ports": [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": port}]}}),
        json!({"apiVersion": "v1", "kind": "Endpoints",
            "metadata": {"name": "kubernetes", "namespace": "default",
                "labels": {"endpointslice.kubernetes.io/skip-mirror": "true"}},
            "subsets": [{"addresses": [{"ip": ip}],
                "ports": [{"name": "https", "port": port, "protocol": "TCP"}]}]}),
        json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"name": "kubernetes", "namespace": "default",
                "labels": {"kubernetes.io/service-name": "kubernetes"}},
            "addressType": family,
            "endpoints": [{"addresses": [ip], "conditions": {"ready": true}}],
            "ports": [{"name": "https", "port": port, "protocol": "TCP"}]}),
    ]
}

const API_SERVICES: &str = "apiregistration.k8s.io/apiservices";
const AUTOMANAGED: &str = "kube-aggregator.kubernetes.io/automanaged";

fn api_service(
    group: &str,
    version: &str,
    priority: i64,
    version_priority: i64,
    managed: &str,
) -> Value {
    json!({"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
        "metadata": {"name": format!("{version}.{group}"), "labels": {AUTOMANAGED: managed}},
        "spec": {"group": group, "version": version,
            "groupPriorityMinimum": priority, "versionPriority": version_priority},
        "status": {"conditions": [{"type": "Available", "status": "True", "reason": "Local",
            "message": "Local APIServices are always available",
            "lastTransitionTime": crate::time::now_rfc3339()}]}})
}

/// Keeps one APIService per group and version that CRDs serve (labelled
/// `automanaged: "true"`, as kube's CRD registration controller makes
/// them), removing those no CRD serves any more.
pub(crate) fn sync_crd_api_services(st: &mut State) {
    let mut wanted: Vec<(String, String)> = st
        .registry
        .all()
        .filter(|r| !r.builtin)
        .flat_map(|r| r.versions.iter().map(|v| (r.group.clone(), v.clone())))
        .collect();
    wanted.sort();
    wanted.dedup();
    for (g, v) in &wanted {
        upsert(
            st,
            API_SERVICES,
            "",
            api_service(g, v, 1000, 100, "true"),
            false,
        );
    }
    let Some(res) = st.registry.get_key(API_SERVICES).cloned() else {
        return;
    };
    for o in st.list(API_SERVICES, None) {
        let o = o.value();
        let spec = &o["spec"];
        let key = (
            spec["group"].as_str().unwrap_or_default().to_owned(),
            spec["version"].as_str().unwrap_or_default().to_owned(),
        );
        if o["metadata"]["labels"][AUTOMANAGED] == "true" && !wanted.contains(&key) {
            let req = Req {
                res: &res,
                version: &res.versions[0],
                ns: "",
                dry_run: false,
                sub: "",
            };
            let name = object::name(&o).to_owned();
            if let Err(e) = write::delete(st, &req, &name, &Default::default()) {
                tracing::error!(name, error = %e.message, "cannot delete a CRD's APIService");
            }
        }
    }
}

/// One local APIService per built-in group and version, named and
/// prioritised as kube-aggregator's autoregistration names them.
fn api_services(st: &State) -> Vec<Value> {
    let mut out = Vec::new();
    let mut groups: Vec<(String, Vec<String>)> = vec![(String::new(), vec!["v1".into()])];
    groups.extend(
        st.registry
            .groups()
            .into_iter()
            .filter(|(g, _)| crate::resources::is_builtin_group(g)),
    );
    for (i, (group, versions)) in groups.iter().enumerate() {
        let priority = 18_000 - 100 * i64::try_from(i).unwrap_or(0);
        for (j, version) in versions.iter().enumerate() {
            let version_priority = if j == 0 { 15 } else { 9 };
            out.push(api_service(
                group,
                version,
                priority,
                version_priority,
                "onstart",
            ));
        }
    }
    out
}

/// Creates `obj`, or, when `update` and it exists with other contents than
/// these, replaces them (its metadata is kept, its labels merged).
fn upsert(st: &mut State, key: &str, ns: &str, obj: Value, update: bool) {
    let Some(res) = st.registry.get_key(key).cloned() else {
        return;
    };
    let name = object::name(&obj).to_owned();
    let req = Req {
        res: &res,
        version: &res.versions[0],
        ns,
        dry_run: false,
        sub: "",
    };
    let result = match st.get(key, ns, &name).map(Current::of) {
        None => write::create(st, &req, obj.clone(), None).and_then(|w| {
            // `create` leaves out a status the client sends; these have one.
            match obj.get("status") {
                Some(status) => {
                    let old = Current::of(w.obj);
                    let mut with = old.value.clone();
                    with["status"] = status.clone();
                    write::commit_update(st, &req, &old, with).map(|_| ())
                }
                None => Ok(()),
            }
        }),
        Some(old) if update && differs(&res, &old.value, &obj) => {
            let mut new = old.value.clone();
            for (k, v) in obj.as_object().into_iter().flatten() {
                if k == "metadata" {
                    for (l, lv) in v["labels"].as_object().into_iter().flatten() {
                        new["metadata"]["labels"][l] = lv.clone();
                    }
                } else if !(k == "status" && res.plural == "apiservices") {
                    new[k] = v.clone();
                }
            }
            write::commit_update(st, &req, &old, new).map(|_| ())
        }
        Some(_) => Ok(()),
    };
    if let Err(e) = result {
        tracing::error!(resource = key, namespace = ns, name, error = %e.message, "cannot create a system object");
    }
}

/// Whether `old` lacks what `want` says (its labels, or any other field).
fn differs(res: &Resource, old: &Value, want: &Value) -> bool {
    want.as_object()
        .into_iter()
        .flatten()
        .any(|(k, v)| match k.as_str() {
            "metadata" => v["labels"]
                .as_object()
                .into_iter()
                .flatten()
                .any(|(l, lv)| old["metadata"]["labels"][l] != *lv),
            "status" if res.plural == "apiservices" => false,
            _ => old.get(k) != Some(v),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kubernetes_service_points_at_the_server() {
        let [svc, ep, slice] = kubernetes_service("127.0.0.1:6443".parse().unwrap());
        assert_eq!(svc["spec"]["ports"][0]["targetPort"], 6443);
        assert_eq!(ep["subsets"][0]["addresses"][0]["ip"], "127.0.0.1");
        assert_eq!(slice["ports"][0]["port"], 6443);
        assert_eq!(
            slice["metadata"]["labels"]["kubernetes.io/service-name"],
            "kubernetes"
        );
        let [_, _, v6] = kubernetes_service("[::1]:1".parse().unwrap());
        assert_eq!(v6["addressType"], "IPv6");
    }
}
