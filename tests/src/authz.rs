//! Just enough of kube-apiserver's authorization to check recorded requests
//! against RBAC rules, as a cluster would: a request's attributes derived
//! from its method and path as the server's request-info parser does, and
//! rules matched as its RBAC authorizer matches them. (The embedded API
//! server enforces no RBAC, so a test uses this to ask "would a cluster
//! have allowed this request?".)

use serde::Deserialize;
use serde_json::Value;

/// What a request asks to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Attributes {
    /// A request for a resource.
    Resource {
        verb: String,
        api_group: String,
        namespace: Option<String>,
        resource: String,
        subresource: Option<String>,
        name: Option<String>,
    },
    /// A path outside the resource tree: discovery, `/version`, `/openapi`.
    NonResource { verb: String, path: String },
}

impl std::fmt::Display for Attributes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Attributes::Resource {
                verb,
                api_group,
                namespace,
                resource,
                subresource,
                name,
            } => {
                write!(f, "{verb} {api_group:?} {resource}")?;
                if let Some(sub) = subresource {
                    write!(f, "/{sub}")?;
                }
                if let Some(name) = name {
                    write!(f, " {name}")?;
                }
                match namespace {
                    Some(ns) => write!(f, " in {ns}"),
                    None => write!(f, " (all namespaces or cluster-scoped)"),
                }
            }
            Attributes::NonResource { verb, path } => write!(f, "{verb} {path}"),
        }
    }
}

/// The attributes of `method` on `path_and_query`.
pub fn attributes(method: &str, path_and_query: &str) -> Attributes {
    let (path, query) = path_and_query
        .split_once('?')
        .unwrap_or((path_and_query, ""));
    let lower = method.to_ascii_lowercase();
    let non_resource = || Attributes::NonResource {
        verb: lower.clone(),
        path: path.to_owned(),
    };
    let parts: Vec<&str> = path.trim_matches('/').split('/').collect();
    let (api_group, mut rest) = match parts.as_slice() {
        ["api", _version, rest @ ..] if !rest.is_empty() => (String::new(), rest.to_vec()),
        ["apis", group, _version, rest @ ..] if !rest.is_empty() => {
            ((*group).to_owned(), rest.to_vec())
        }
        _ => return non_resource(),
    };
    let mut watch = query
        .split('&')
        .any(|kv| kv == "watch=true" || kv == "watch=1");
    if rest.first() == Some(&"watch") {
        watch = true;
        rest.remove(0);
    }
    let mut namespace = None;
    if rest.first() == Some(&"namespaces") && rest.len() > 1 {
        namespace = Some(rest[1].to_owned());
        if rest.len() > 2 && !matches!(rest[2], "status" | "finalize") {
            rest.drain(..2);
        }
    }
    let resource = rest.first().copied().unwrap_or_default().to_owned();
    let name = rest.get(1).map(|s| (*s).to_owned());
    let subresource = rest.get(2).map(|s| (*s).to_owned());
    let verb = match (method, &name) {
        ("GET" | "HEAD", _) if watch => "watch",
        ("GET" | "HEAD", Some(_)) => "get",
        ("GET" | "HEAD", None) => "list",
        ("POST", _) => "create",
        ("PUT", _) => "update",
        ("PATCH", _) => "patch",
        ("DELETE", Some(_)) => "delete",
        ("DELETE", None) => "deletecollection",
        _ => return non_resource(),
    };
    Attributes::Resource {
        verb: verb.to_owned(),
        api_group,
        namespace,
        resource,
        subresource,
        name,
    }
}

/// One RBAC rule.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PolicyRule {
    pub api_groups: Vec<String>,
    pub resources: Vec<String>,
    pub verbs: Vec<String>,
    pub resource_names: Vec<String>,
    #[serde(rename = "nonResourceURLs")]
    pub non_resource_urls: Vec<String>,
}

/// A Role (applies in its namespace) or ClusterRole (everywhere, as bound
/// by a ClusterRoleBinding).
#[derive(Debug, Clone)]
pub struct Role {
    pub name: String,
    /// `None` for a ClusterRole.
    pub namespace: Option<String>,
    pub rules: Vec<PolicyRule>,
}

impl Role {
    /// The Roles and ClusterRoles among `documents` (parsed YAML or JSON).
    pub fn from_documents(documents: &[Value]) -> Vec<Role> {
        documents
            .iter()
            .filter(|d| matches!(d["kind"].as_str(), Some("Role" | "ClusterRole")))
            .map(|d| Role {
                name: d["metadata"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
                namespace: (d["kind"] == "Role").then(|| {
                    d["metadata"]["namespace"]
                        .as_str()
                        .unwrap_or_default()
                        .to_owned()
                }),
                rules: serde_json::from_value(d["rules"].clone()).unwrap_or_default(),
            })
            .collect()
    }
}

/// Whether any rule of `roles` allows the request.
pub fn allows(roles: &[Role], attributes: &Attributes) -> bool {
    roles.iter().any(|role| {
        role.rules.iter().any(|rule| match attributes {
            Attributes::NonResource { verb, path } => {
                role.namespace.is_none()
                    && has(&rule.verbs, verb)
                    && rule.non_resource_urls.iter().any(|u| {
                        u == "*"
                            || u == path
                            || u.strip_suffix('*').is_some_and(|p| path.starts_with(p))
                    })
            }
            Attributes::Resource {
                verb,
                api_group,
                namespace,
                resource,
                subresource,
                name,
            } => {
                let in_scope = match &role.namespace {
                    None => true,
                    Some(ns) => namespace.as_ref() == Some(ns),
                };
                let combined = match subresource {
                    Some(sub) => format!("{resource}/{sub}"),
                    None => resource.clone(),
                };
                let resource_matches = rule.resources.iter().any(|r| {
                    r == "*"
                        || *r == combined
                        || subresource.as_ref().is_some_and(|sub| {
                            *r == format!("*/{sub}") || *r == format!("{resource}/*")
                        })
                });
                let name_matches = rule.resource_names.is_empty()
                    || name
                        .as_ref()
                        .is_some_and(|n| rule.resource_names.contains(n));
                in_scope
                    && has(&rule.verbs, verb)
                    && has(&rule.api_groups, api_group)
                    && resource_matches
                    && name_matches
            }
        })
    })
}

fn has(list: &[String], item: &str) -> bool {
    list.iter().any(|x| x == "*" || x == item)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resource(
        verb: &str,
        group: &str,
        ns: Option<&str>,
        res: &str,
        sub: Option<&str>,
        name: Option<&str>,
    ) -> Attributes {
        Attributes::Resource {
            verb: verb.into(),
            api_group: group.into(),
            namespace: ns.map(Into::into),
            resource: res.into(),
            subresource: sub.map(Into::into),
            name: name.map(Into::into),
        }
    }

    #[test]
    fn paths_become_attributes_as_the_api_server_derives_them() {
        assert_eq!(
            attributes(
                "GET",
                "/api/v1/pods?fieldSelector=spec.nodeName%3D&watch=true&resourceVersion=5"
            ),
            resource("watch", "", None, "pods", None, None)
        );
        assert_eq!(
            attributes("GET", "/apis/apps/v1/namespaces/shop/replicasets?limit=500"),
            resource("list", "apps", Some("shop"), "replicasets", None, None)
        );
        assert_eq!(
            attributes(
                "POST",
                "/api/v1/namespaces/shop/pods/web-1/binding?fieldManager=x"
            ),
            resource(
                "create",
                "",
                Some("shop"),
                "pods",
                Some("binding"),
                Some("web-1")
            )
        );
        assert_eq!(
            attributes(
                "PUT",
                "/apis/apps/v1/namespaces/shop/deployments/web/status"
            ),
            resource(
                "update",
                "apps",
                Some("shop"),
                "deployments",
                Some("status"),
                Some("web")
            )
        );
        assert_eq!(
            attributes("PATCH", "/api/v1/nodes/n1/status"),
            resource("patch", "", None, "nodes", Some("status"), Some("n1"))
        );
        assert_eq!(
            attributes("DELETE", "/api/v1/namespaces/shop/pods/web-1"),
            resource("delete", "", Some("shop"), "pods", None, Some("web-1"))
        );
        assert_eq!(
            attributes("GET", "/api/v1/namespaces/shop"),
            resource("get", "", Some("shop"), "namespaces", None, Some("shop"))
        );
        assert_eq!(
            attributes("PUT", "/api/v1/namespaces/shop/finalize"),
            resource(
                "update",
                "",
                Some("shop"),
                "namespaces",
                Some("finalize"),
                Some("shop")
            )
        );
        assert_eq!(
            attributes("GET", "/apis/apps/v1"),
            Attributes::NonResource {
                verb: "get".into(),
                path: "/apis/apps/v1".into()
            }
        );
    }

    #[test]
    fn rules_match_as_the_rbac_authorizer_matches_them() {
        let docs: Vec<Value> = vec![
            serde_json::json!({"kind": "ClusterRole", "metadata": {"name": "c"}, "rules": [
                {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]},
                {"apiGroups": [""], "resources": ["pods/binding"], "verbs": ["create"]},
                {"nonResourceURLs": ["/apis/*"], "verbs": ["get"]}
            ]}),
            serde_json::json!({"kind": "Role", "metadata": {"name": "r", "namespace": "kube-node-lease"}, "rules": [
                {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["create", "update"]}
            ]}),
        ];
        let roles = Role::from_documents(&docs);
        let ok = |m: &str, p: &str| allows(&roles, &attributes(m, p));
        assert!(ok("GET", "/api/v1/pods?watch=1"));
        assert!(ok("GET", "/api/v1/namespaces/a/pods"));
        assert!(!ok("DELETE", "/api/v1/namespaces/a/pods/x"));
        assert!(ok("POST", "/api/v1/namespaces/a/pods/x/binding"));
        assert!(!ok("POST", "/api/v1/namespaces/a/pods/x/eviction"));
        assert!(
            !ok("PUT", "/api/v1/namespaces/a/pods/x/status"),
            "status is not the object"
        );
        assert!(ok(
            "POST",
            "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases"
        ));
        assert!(
            !ok(
                "POST",
                "/apis/coordination.k8s.io/v1/namespaces/default/leases"
            ),
            "a Role is its namespace's only"
        );
        assert!(
            !ok("GET", "/apis/coordination.k8s.io/v1/leases"),
            "nor cluster-wide"
        );
        assert!(ok("GET", "/apis/apps/v1"));
        assert!(!ok("GET", "/api"));
    }
}
