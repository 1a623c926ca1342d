//! Discovery documents: `/api`, `/apis`, group and resource lists,
//! `/version`, and the aggregated form of `/api` and `/apis`
//! (`apidiscovery.k8s.io` `APIGroupDiscoveryList`) that kubectl and client
//! libraries ask for first.

use serde_json::{Value, json};

use crate::resources::{Registry, Resource};
use crate::subresource::NODE_PROXIED;

pub(crate) fn api_versions(server: &str) -> Value {
    json!({"kind": "APIVersions", "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server}]})
}

fn group_json(name: &str, versions: &[String]) -> Value {
    let vs: Vec<Value> = versions
        .iter()
        .map(|v| json!({"groupVersion": format!("{name}/{v}"), "version": v}))
        .collect();
    json!({"name": name, "versions": vs, "preferredVersion": vs.first().cloned().unwrap_or(Value::Null)})
}

pub(crate) fn group_list(reg: &Registry) -> Value {
    let groups: Vec<Value> = reg
        .groups()
        .iter()
        .map(|(g, vs)| group_json(g, vs))
        .collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

pub(crate) fn group(reg: &Registry, name: &str) -> Option<Value> {
    let groups = reg.groups();
    let (g, vs) = groups.iter().find(|(g, _)| g == name)?;
    let mut v = group_json(g, vs);
    v["kind"] = json!("APIGroup");
    v["apiVersion"] = json!("v1");
    Some(v)
}

/// The APIResourceList of one group/version, or `None` if nothing is served there.
pub(crate) fn resource_list(reg: &Registry, group: &str, version: &str) -> Option<Value> {
    let mut resources = Vec::new();
    for r in reg
        .all()
        .filter(|r| r.group == group && r.versions.iter().any(|v| v == version))
    {
        let mut main = json!({
            "name": r.plural, "singularName": r.singular, "namespaced": r.namespaced,
            "kind": r.kind, "verbs": r.verbs(),
        });
        if !r.short_names.is_empty() {
            main["shortNames"] = json!(r.short_names);
        }
        if !r.categories.is_empty() {
            main["categories"] = json!(r.categories);
        }
        resources.push(main);
        for sub in subresources(r) {
            let mut v = json!({"name": format!("{}/{}", r.plural, sub.name), "singularName": "",
                "namespaced": r.namespaced, "kind": sub.kind, "verbs": sub.verbs});
            if let Some((g, ver)) = sub.group_version {
                v["group"] = json!(g);
                v["version"] = json!(ver);
            }
            resources.push(v);
        }
    }
    if resources.is_empty() {
        return None;
    }
    let gv = if group.is_empty() {
        version.to_owned()
    } else {
        format!("{group}/{version}")
    };
    Some(
        json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": resources}),
    )
}

/// A subresource as discovery lists it.
struct Sub {
    name: &'static str,
    kind: String,
    /// When its kind is of another group and version than the resource's.
    group_version: Option<(&'static str, &'static str)>,
    verbs: Vec<&'static str>,
}

/// The subresources `r` serves.
fn subresources(r: &Resource) -> Vec<Sub> {
    let mut out = Vec::new();
    let read_write = || vec!["get", "patch", "update"];
    if r.status {
        out.push(Sub {
            name: "status",
            kind: r.kind.clone(),
            group_version: None,
            verbs: read_write(),
        });
    }
    if r.scale.is_some() {
        out.push(Sub {
            name: "scale",
            kind: "Scale".into(),
            group_version: Some(("autoscaling", "v1")),
            verbs: read_write(),
        });
    }
    match (r.group.as_str(), r.plural.as_str()) {
        ("", "pods") => out.extend(
            [
                Sub {
                    name: "binding",
                    kind: "Binding".into(),
                    group_version: None,
                    verbs: vec!["create"],
                },
                Sub {
                    name: "ephemeralcontainers",
                    kind: "Pod".into(),
                    group_version: None,
                    verbs: read_write(),
                },
                Sub {
                    name: "eviction",
                    kind: "Eviction".into(),
                    group_version: Some(("policy", "v1")),
                    verbs: vec!["create"],
                },
            ]
            .into_iter()
            // Served with a 400 that says no kubelet is reached
            // (`subresource::node_proxied`), but listed as kube-apiserver lists
            // them, so that clients that look before they ask get that answer.
            .chain(NODE_PROXIED.iter().map(|&(name, kind, verbs)| Sub {
                name,
                kind: kind.into(),
                group_version: None,
                verbs: verbs.to_vec(),
            })),
        ),
        ("", "serviceaccounts") => out.push(Sub {
            name: "token",
            kind: "TokenRequest".into(),
            group_version: Some(("authentication.k8s.io", "v1")),
            verbs: vec!["create"],
        }),
        ("certificates.k8s.io", "certificatesigningrequests") => out.push(Sub {
            name: "approval",
            kind: r.kind.clone(),
            group_version: None,
            verbs: read_write(),
        }),
        _ => {}
    }
    out
}

/// Which aggregated discovery version `accept` asks for, if any (kubectl
/// asks for `v2`, then `v2beta1`, then the legacy documents).
pub(crate) fn aggregated(accept: &str) -> Option<&'static str> {
    for range in accept.split(',') {
        let params: Vec<&str> = range.split(';').map(str::trim).collect();
        let has = |p: &str| params.contains(&p);
        if has("g=apidiscovery.k8s.io") && has("as=APIGroupDiscoveryList") {
            if has("v=v2") {
                return Some("v2");
            }
            if has("v=v2beta1") {
                return Some("v2beta1");
            }
        }
    }
    None
}

/// The `APIGroupDiscoveryList` of `/api` (`core`) or `/apis`, in `version`
/// of `apidiscovery.k8s.io`.
pub(crate) fn aggregated_list(reg: &Registry, core: bool, version: &str) -> Value {
    let groups: Vec<(String, Vec<String>)> = if core {
        vec![(String::new(), vec!["v1".into()])]
    } else {
        reg.groups()
    };
    let items: Vec<Value> = groups
        .iter()
        .map(|(g, versions)| {
            let vs: Vec<Value> = versions
                .iter()
                .map(|v| {
                    let resources: Vec<Value> = reg
                        .all()
                        .filter(|r| r.group == *g && r.versions.iter().any(|x| x == v))
                        .map(|r| aggregated_resource(r, v))
                        .collect();
                    json!({"version": v, "resources": resources, "freshness": "Current"})
                })
                .collect();
            let mut meta = json!({"creationTimestamp": null});
            if !g.is_empty() {
                meta["name"] = json!(g);
            }
            json!({"metadata": meta, "versions": vs})
        })
        .collect();
    json!({"kind": "APIGroupDiscoveryList", "apiVersion": format!("apidiscovery.k8s.io/{version}"),
        "metadata": {}, "items": items})
}

fn aggregated_resource(r: &Resource, version: &str) -> Value {
    let mut v = json!({
        "resource": r.plural,
        "responseKind": {"group": r.group, "version": version, "kind": r.kind},
        "scope": if r.namespaced { "Namespaced" } else { "Cluster" },
        "singularResource": r.singular,
        "verbs": r.verbs(),
    });
    if !r.short_names.is_empty() {
        v["shortNames"] = json!(r.short_names);
    }
    if !r.categories.is_empty() {
        v["categories"] = json!(r.categories);
    }
    let subs: Vec<Value> = subresources(r)
        .into_iter()
        .map(|s| {
            let (g, ver) = s.group_version.unwrap_or((r.group.as_str(), version));
            json!({"subresource": s.name, "responseKind": {"group": g, "version": ver, "kind": s.kind}, "verbs": s.verbs})
        })
        .collect();
    if !subs.is_empty() {
        v["subresources"] = json!(subs);
    }
    v
}

/// The Kubernetes version the server says it is.
pub(crate) const GIT_VERSION: &str = "v1.32.0-windlass";

pub(crate) fn version() -> Value {
    json!({
        "major": "1", "minor": "32", "gitVersion": GIT_VERSION, "gitCommit": "windlass",
        "gitTreeState": "clean", "buildDate": "2026-01-01T00:00:00Z", "goVersion": "n/a",
        "compiler": "rustc", "platform": format!("{}/{}", std::env::consts::OS, if cfg!(target_arch = "x86_64") { "amd64" } else { std::env::consts::ARCH }),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn core_resources_are_listed_with_subresources() {
        let reg = Registry::with_builtins();
        let l = resource_list(&reg, "", "v1").unwrap();
        let names: Vec<&str> = l["resources"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["name"].as_str().unwrap())
            .collect();
        assert!(
            names.contains(&"pods")
                && names.contains(&"pods/status")
                && names.contains(&"pods/binding")
        );
        // Every subresource served for a kubelet is listed, and only those.
        let proxied: Vec<&str> = names
            .iter()
            .filter_map(|n| n.strip_prefix("pods/"))
            .filter(|s| crate::subresource::is_node_proxied(s))
            .collect();
        assert_eq!(proxied.len(), NODE_PROXIED.len());
        let apps = resource_list(&reg, "apps", "v1").unwrap();
        assert!(
            apps["resources"]
                .as_array()
                .unwrap()
                .iter()
                .any(|r| r["name"] == "deployments/scale")
        );
        assert!(resource_list(&reg, "apps", "v2").is_none());
        let sa = resource_list(&reg, "", "v1").unwrap();
        assert!(
            sa["resources"]
                .as_array()
                .unwrap()
                .iter()
                .any(|r| r["name"] == "serviceaccounts/token"
                    && r["group"] == "authentication.k8s.io"
                    && r["kind"] == "TokenRequest")
        );
        assert!(
            group_list(&reg)["groups"]
                .as_array()
                .unwrap()
                .iter()
                .any(|g| g["name"] == "apps")
        );
    }

    #[test]
    fn aggregated_discovery_lists_groups_with_their_resources() {
        let accept = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";
        assert_eq!(aggregated(accept), Some("v2"));
        assert_eq!(aggregated("application/json"), None);
        let reg = Registry::with_builtins();
        let apis = aggregated_list(&reg, false, "v2");
        assert_eq!(apis["apiVersion"], "apidiscovery.k8s.io/v2");
        let apps = apis["items"]
            .as_array()
            .unwrap()
            .iter()
            .find(|g| g["metadata"]["name"] == "apps")
            .unwrap();
        let deploy = apps["versions"][0]["resources"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["resource"] == "deployments")
            .unwrap();
        assert_eq!(deploy["scope"], "Namespaced");
        assert_eq!(deploy["responseKind"]["kind"], "Deployment");
        assert!(deploy["subresources"].as_array().unwrap().iter().any(|s| s["subresource"] == "scale"
            && s["responseKind"]["group"] == "autoscaling"));
        let core = aggregated_list(&reg, true, "v2");
        assert_eq!(core["items"][0]["versions"][0]["version"], "v1");
        assert!(core["items"][0]["metadata"].get("name").is_none());
        let hpa = apis["items"]
            .as_array()
            .unwrap()
            .iter()
            .find(|g| g["metadata"]["name"] == "autoscaling")
            .unwrap();
        let versions: Vec<&str> = hpa["versions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v["version"].as_str().unwrap())
            .collect();
        assert_eq!(versions, ["v2", "v1"]);
    }
}
