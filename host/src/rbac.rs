//! Least-privilege RBAC for plugins, derived from their manifests: what
//! `windlass plugin rbac` prints.
//!
//! The rules follow what the host does on a plugin's behalf (see
//! `informer.rs` and `writer.rs`), entry by entry of the manifest:
//!
//! | manifest entry | requests the host makes | rule |
//! |---|---|---|
//! | `reconciles`, `owns`, `reads` | list and watch (the informers) | `get`, `list`, `watch` |
//! | `reconciles`, `owns`, `writes` (no subresource) | create, merge patch, server-side apply, replace, delete | `create`, `update`, `patch`, `delete` |
//! | the same, when the resource has a status subresource | `PUT …/status`, a merge patch of status | `update`, `patch` on `<resource>/status` |
//! | `writes` with subresource `binding`, `eviction`, `token` | `POST` | `create` on `<resource>/<sub>` |
//! | `writes` with another subresource | a merge patch | `patch` on `<resource>/<sub>` |
//! | `owns` | children get `blockOwnerDeletion` | `update` on `<reconciled>/finalizers` (the OwnerReferencesPermissionEnforcement admission plugin asks for it) |
//! | `finalizer` | a merge patch of the reconciled object | covered by the reconciled kind's write rule |
//! | every plugin | core/v1 Events (create, then a patch per repeat) | `create`, `patch` on `events`, where its objects are |
//!
//! `get` is never sent by the host (it reads from its caches), but it grants
//! nothing `list` does not already show, and tools expect it beside `list`.
//!
//! Each entry confined to a namespace becomes a rule of a Role in that
//! namespace; the rest (and every cluster-scoped resource) go into one
//! ClusterRole. The host's own needs (discovery, its leader-election Lease)
//! are not here: `deploy/kubernetes` grants them.
//!
//! [`rules`] is the pure core (manifests and a kind lookup in, rules out),
//! [`render`] writes them as YAML with a comment per rule naming the plugins
//! that need it, and [`builtin`] is the offline lookup of Kubernetes' own
//! kinds; [`discover`] asks an API server about the rest.

use std::collections::{BTreeMap, HashMap};

use crate::client::ApiClient;
use crate::contract::{KindRef, Manifest};
use crate::discovery::{ApiResource, Discovery, DiscoveryError};

/// Where a rule applies.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Scope {
    /// Every namespace, and cluster-scoped resources: a ClusterRole.
    Cluster,
    /// One namespace: a Role there.
    Namespace(String),
}

/// One RBAC rule and why it is there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    pub scope: Scope,
    /// The API group (`""` for the core group).
    pub api_group: String,
    /// The resource, or `resource/subresource`.
    pub resource: String,
    pub verbs: Vec<&'static str>,
    /// `plugin: reason`, one per plugin and entry that needs the rule.
    pub reasons: Vec<String>,
}

/// Why no rules could be derived.
#[derive(Debug, thiserror::Error)]
pub enum RbacError {
    /// Kinds the lookup could not resolve to resources.
    #[error(
        "cannot tell which resource serves {}; {}; nothing was printed",
        list_unresolved(.kinds),
        .hint
    )]
    Unresolved {
        /// Each kind with the plugins that declare it.
        kinds: Vec<(KindRef, Vec<String>)>,
        /// What to do about it.
        hint: String,
    },
    #[error("no plugins given")]
    NoPlugins,
}

fn list_unresolved(kinds: &[(KindRef, Vec<String>)]) -> String {
    kinds
        .iter()
        .map(|(kind, plugins)| format!("{kind} (declared by {})", plugins.join(", ")))
        .collect::<Vec<_>>()
        .join(", ")
}

/// What to say about kinds the built-in table does not know.
pub const OFFLINE_HINT: &str = "the built-in table knows only Kubernetes' own kinds: give --kubeconfig FILE to look the others up on an API server that serves them (with their CustomResourceDefinitions installed)";

/// What to say about kinds the API server does not serve either.
pub const SERVER_HINT: &str = "neither the built-in table nor the API server of --kubeconfig knows them: install their CustomResourceDefinitions there first";

const READ: &[&str] = &["get", "list", "watch"];
const WRITE: &[&str] = &["create", "update", "patch", "delete"];
const STATUS: &[&str] = &["update", "patch"];
const POST_ONLY: &[&str] = &["create"];
const PATCH_ONLY: &[&str] = &["patch"];
const FINALIZERS: &[&str] = &["update"];
const EVENTS: &[&str] = &["create", "patch"];

/// Subresources that only take a `POST` (the host sends them with
/// `create_subresource`).
const POST_SUBRESOURCES: [&str; 3] = ["binding", "eviction", "token"];

/// The rules `manifests` need, merged (a rule several plugins need once,
/// with every reason) and sorted: cluster-wide first, then by namespace,
/// group, resource and verbs. `resolve` maps a kind to its resource; every
/// kind it cannot resolve is named in the error.
pub fn rules(
    manifests: &[Manifest],
    resolve: &dyn Fn(&KindRef) -> Option<ApiResource>,
    hint: &str,
) -> Result<Vec<Rule>, RbacError> {
    if manifests.is_empty() {
        return Err(RbacError::NoPlugins);
    }
    let mut unresolved: BTreeMap<KindRef, Vec<String>> = BTreeMap::new();
    let mut found: HashMap<KindRef, ApiResource> = HashMap::new();
    for m in manifests {
        for kind in m.kinds() {
            match resolve(kind) {
                Some(r) => {
                    found.insert(kind.clone(), r);
                }
                None => {
                    let plugins = unresolved.entry(kind.clone()).or_default();
                    if !plugins.contains(&m.name) {
                        plugins.push(m.name.clone());
                    }
                }
            }
        }
    }
    if !unresolved.is_empty() {
        return Err(RbacError::Unresolved {
            kinds: unresolved.into_iter().collect(),
            hint: hint.to_owned(),
        });
    }
    let mut out = Rules::default();
    for m in manifests {
        plugin_rules(m, &|k| &found[k], &mut out);
    }
    Ok(out.finish())
}

/// Rules being gathered, merged by scope, group, resource and verbs.
#[derive(Default)]
struct Rules {
    by_key: BTreeMap<(Scope, String, String, Vec<&'static str>), Vec<String>>,
}

impl Rules {
    fn add(
        &mut self,
        scope: Scope,
        r: &ApiResource,
        sub: Option<&str>,
        verbs: &'static [&'static str],
        reason: String,
    ) {
        let resource = match sub {
            Some(sub) => format!("{}/{sub}", r.plural),
            None => r.plural.clone(),
        };
        let reasons = self
            .by_key
            .entry((
                scope,
                group_of(&r.api_version).to_owned(),
                resource,
                verbs.to_vec(),
            ))
            .or_default();
        if !reasons.contains(&reason) {
            reasons.push(reason);
        }
    }

    fn finish(self) -> Vec<Rule> {
        self.by_key
            .into_iter()
            .map(|((scope, api_group, resource, verbs), reasons)| Rule {
                scope,
                api_group,
                resource,
                verbs,
                reasons,
            })
            .collect()
    }
}

/// The API group of an apiVersion: `apps` of `apps/v1`, `""` of `v1`.
fn group_of(api_version: &str) -> &str {
    api_version.rsplit_once('/').map_or("", |(g, _)| g)
}

/// The scope of an entry confined to `namespace` (none: every namespace)
/// on resource `r`: cluster-scoped resources are only ever cluster-wide.
fn scope_of(r: &ApiResource, namespace: Option<&str>) -> Scope {
    match namespace {
        Some(ns) if r.namespaced => Scope::Namespace(ns.to_owned()),
        _ => Scope::Cluster,
    }
}

/// One plugin's rules into `out`.
fn plugin_rules<'a>(m: &Manifest, resource: &dyn Fn(&KindRef) -> &'a ApiResource, out: &mut Rules) {
    let name = &m.name;
    for (role, watch) in m.watches() {
        let r = resource(&watch.kind);
        let scope = scope_of(r, watch.namespace.as_deref());
        let what = format!("{name}: {role} {}{}", watch.kind, selectors(watch));
        out.add(scope.clone(), r, None, READ, what.clone());
        if role != "reads" {
            writable(out, scope, r, &what);
        }
    }
    if let Some(finalizer) = &m.finalizer {
        let r = resource(&m.reconciles.kind);
        let scope = scope_of(r, m.reconciles.namespace.as_deref());
        out.add(
            scope,
            r,
            None,
            WRITE,
            format!("{name}: adds and removes its finalizer {finalizer}"),
        );
    }
    if !m.owns.is_empty() {
        let r = resource(&m.reconciles.kind);
        let owned: Vec<String> = m.owns.iter().map(|w| w.kind.to_string()).collect();
        out.add(
            scope_of(r, m.reconciles.namespace.as_deref()),
            r,
            Some("finalizers"),
            FINALIZERS,
            format!(
                "{name}: the {} it owns carry blockOwnerDeletion (OwnerReferencesPermissionEnforcement)",
                owned.join(", ")
            ),
        );
    }
    for grant in &m.writes {
        let r = resource(&grant.kind);
        let scope = scope_of(r, grant.namespace.as_deref());
        match grant.subresource.as_deref() {
            None => writable(out, scope, r, &format!("{name}: writes {}", grant.kind)),
            Some("status") => status(
                out,
                scope,
                r,
                &format!("{name}: writes {} status", grant.kind),
            ),
            Some(sub) => {
                let verbs = if POST_SUBRESOURCES.contains(&sub) {
                    POST_ONLY
                } else {
                    PATCH_ONLY
                };
                out.add(
                    scope,
                    r,
                    Some(sub),
                    verbs,
                    format!("{name}: writes {} {sub}", grant.kind),
                );
            }
        }
    }
    for scope in event_scopes(m, resource) {
        out.add(
            scope,
            &events(),
            None,
            EVENTS,
            format!("{name}: records events about the objects it watches"),
        );
    }
}

/// The write rules of a writable entry: the object, and its status
/// subresource if it has one (else status is a field of the object).
fn writable(out: &mut Rules, scope: Scope, r: &ApiResource, why: &str) {
    out.add(scope.clone(), r, None, WRITE, why.to_owned());
    if r.has_status {
        status(out, scope, r, &format!("{why} (its status)"));
    }
}

/// The status rule: the subresource where there is one, else the object
/// itself (its status is an ordinary field, written by a merge patch).
fn status(out: &mut Rules, scope: Scope, r: &ApiResource, why: &str) {
    if r.has_status {
        out.add(scope, r, Some("status"), STATUS, why.to_owned());
    } else {
        out.add(scope, r, None, PATCH_ONLY, why.to_owned());
    }
}

/// The label and field selectors of a watch, for a reason line.
fn selectors(w: &crate::contract::Watch) -> String {
    let parts: Vec<&str> = [w.label_selector.as_deref(), w.field_selector.as_deref()]
        .into_iter()
        .flatten()
        .collect();
    if parts.is_empty() {
        String::new()
    } else {
        format!(" ({})", parts.join(", "))
    }
}

/// Where a plugin's events go: an event is about an object the plugin may
/// read, in that object's namespace, or `default` for a cluster-scoped one
/// (as `writer.rs` records them).
fn event_scopes<'a>(m: &Manifest, resource: &dyn Fn(&KindRef) -> &'a ApiResource) -> Vec<Scope> {
    let mut scopes: Vec<Scope> = Vec::new();
    for (_, w) in m.watches() {
        let scope = match (resource(&w.kind).namespaced, &w.namespace) {
            (false, _) => Scope::Namespace("default".into()),
            (true, None) => Scope::Cluster,
            (true, Some(ns)) => Scope::Namespace(ns.clone()),
        };
        if !scopes.contains(&scope) {
            scopes.push(scope);
        }
    }
    if scopes.contains(&Scope::Cluster) {
        return vec![Scope::Cluster];
    }
    scopes.sort();
    scopes
}

fn events() -> ApiResource {
    resource("v1", "Event", "events", true, false)
}

fn resource(
    api_version: &str,
    kind: &str,
    plural: &str,
    namespaced: bool,
    has_status: bool,
) -> ApiResource {
    ApiResource {
        api_version: api_version.to_owned(),
        kind: kind.to_owned(),
        plural: plural.to_owned(),
        namespaced,
        has_status,
    }
}

/// Kubernetes' own kinds: apiVersion, kind, resource, scope, whether it has
/// a status subresource. As kube-apiserver 1.33 serves them.
const BUILTIN: &str = "
v1 Binding bindings namespaced -
v1 ConfigMap configmaps namespaced -
v1 Endpoints endpoints namespaced -
v1 Event events namespaced -
v1 LimitRange limitranges namespaced -
v1 Namespace namespaces cluster status
v1 Node nodes cluster status
v1 PersistentVolume persistentvolumes cluster status
v1 PersistentVolumeClaim persistentvolumeclaims namespaced status
v1 Pod pods namespaced status
v1 PodTemplate podtemplates namespaced -
v1 ReplicationController replicationcontrollers namespaced status
v1 ResourceQuota resourcequotas namespaced status
v1 Secret secrets namespaced -
v1 Service services namespaced status
v1 ServiceAccount serviceaccounts namespaced -
admissionregistration.k8s.io/v1 MutatingWebhookConfiguration mutatingwebhookconfigurations cluster -
admissionregistration.k8s.io/v1 ValidatingAdmissionPolicy validatingadmissionpolicies cluster status
admissionregistration.k8s.io/v1 ValidatingAdmissionPolicyBinding validatingadmissionpolicybindings cluster -
admissionregistration.k8s.io/v1 ValidatingWebhookConfiguration validatingwebhookconfigurations cluster -
apiextensions.k8s.io/v1 CustomResourceDefinition customresourcedefinitions cluster status
apiregistration.k8s.io/v1 APIService apiservices cluster status
apps/v1 ControllerRevision controllerrevisions namespaced -
apps/v1 DaemonSet daemonsets namespaced status
apps/v1 Deployment deployments namespaced status
apps/v1 ReplicaSet replicasets namespaced status
apps/v1 StatefulSet statefulsets namespaced status
autoscaling/v1 HorizontalPodAutoscaler horizontalpodautoscalers namespaced status
autoscaling/v2 HorizontalPodAutoscaler horizontalpodautoscalers namespaced status
batch/v1 CronJob cronjobs namespaced status
batch/v1 Job jobs namespaced status
certificates.k8s.io/v1 CertificateSigningRequest certificatesigningrequests cluster status
coordination.k8s.io/v1 Lease leases namespaced -
discovery.k8s.io/v1 EndpointSlice endpointslices namespaced -
events.k8s.io/v1 Event events namespaced -
flowcontrol.apiserver.k8s.io/v1 FlowSchema flowschemas cluster status
flowcontrol.apiserver.k8s.io/v1 PriorityLevelConfiguration prioritylevelconfigurations cluster status
networking.k8s.io/v1 Ingress ingresses namespaced status
networking.k8s.io/v1 IngressClass ingressclasses cluster -
networking.k8s.io/v1 NetworkPolicy networkpolicies namespaced -
node.k8s.io/v1 RuntimeClass runtimeclasses cluster -
policy/v1 PodDisruptionBudget poddisruptionbudgets namespaced status
rbac.authorization.k8s.io/v1 ClusterRole clusterroles cluster -
rbac.authorization.k8s.io/v1 ClusterRoleBinding clusterrolebindings cluster -
rbac.authorization.k8s.io/v1 Role roles namespaced -
rbac.authorization.k8s.io/v1 RoleBinding rolebindings namespaced -
scheduling.k8s.io/v1 PriorityClass priorityclasses cluster -
storage.k8s.io/v1 CSIDriver csidrivers cluster -
storage.k8s.io/v1 CSINode csinodes cluster -
storage.k8s.io/v1 CSIStorageCapacity csistoragecapacities namespaced -
storage.k8s.io/v1 StorageClass storageclasses cluster -
storage.k8s.io/v1 VolumeAttachment volumeattachments cluster status
";

/// The resource of one of Kubernetes' own kinds, with no server to ask.
pub fn builtin(kind: &KindRef) -> Option<ApiResource> {
    BUILTIN.lines().find_map(|line| {
        let [api_version, k, plural, scope, flags] =
            <[&str; 5]>::try_from(line.split(' ').collect::<Vec<_>>()).ok()?;
        (api_version == kind.api_version && k == kind.kind).then(|| {
            resource(
                api_version,
                k,
                plural,
                scope == "namespaced",
                flags == "status",
            )
        })
    })
}

/// Asks the API server about the kinds of `manifests` the built-in table
/// does not know. A kind the server does not serve is left out (so
/// [`rules`] names it); any other failure is an error.
pub async fn discover(
    client: ApiClient,
    manifests: &[Manifest],
) -> Result<HashMap<KindRef, ApiResource>, DiscoveryError> {
    let discovery = Discovery::new(client);
    let mut found = HashMap::new();
    for m in manifests {
        for kind in m.kinds() {
            if builtin(kind).is_some() || found.contains_key(kind) {
                continue;
            }
            match discovery.resolve(kind).await {
                Ok(r) => {
                    found.insert(kind.clone(), r);
                }
                Err(DiscoveryError::UnknownKind(_)) => {}
                Err(e) => return Err(e),
            }
        }
    }
    Ok(found)
}

/// Who the generated roles are bound to, and their names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Binding {
    /// The name of the ClusterRole, the Roles and their bindings.
    pub name: String,
    /// The ServiceAccount the host runs as, and its namespace.
    pub service_account: String,
    pub namespace: String,
}

impl Binding {
    /// `windlass-plugin-NAME` for one plugin, `windlass-plugins` for more,
    /// bound to the ServiceAccount `deploy/kubernetes` creates.
    pub fn for_plugins(manifests: &[Manifest]) -> Self {
        let name = match manifests {
            [one] => format!("windlass-plugin-{}", one.name),
            _ => "windlass-plugins".to_owned(),
        };
        Self {
            name,
            service_account: "windlass".into(),
            namespace: "windlass".into(),
        }
    }
}

/// The rules as YAML documents: a ClusterRole (when any rule is
/// cluster-wide) and a Role per namespace, each with its binding to the
/// host's ServiceAccount; a comment above each rule names who needs it.
pub fn render(manifests: &[Manifest], rules: &[Rule], binding: &Binding) -> String {
    let mut out = String::from(
        "# RBAC for windlass plugins, derived from their manifests by `windlass plugin rbac`:\n",
    );
    for m in manifests {
        out.push_str(&format!("#   {} {}\n", m.name, m.version));
    }
    out.push_str(&format!(
        "# Bound to the ServiceAccount {}/{} the host runs as. The host's own needs\n# (discovery, its leader-election Lease) are granted by deploy/kubernetes.\n",
        binding.namespace, binding.service_account
    ));
    let mut scopes: Vec<&Scope> = rules.iter().map(|r| &r.scope).collect();
    scopes.dedup();
    for (i, scope) in scopes.into_iter().enumerate() {
        if i > 0 {
            out.push_str("---\n");
        }
        let (kind, namespace) = match scope {
            Scope::Cluster => ("ClusterRole", None),
            Scope::Namespace(ns) => ("Role", Some(ns.as_str())),
        };
        out.push_str(&header(kind, &binding.name, namespace));
        out.push_str("rules:\n");
        for rule in rules.iter().filter(|r| &r.scope == scope) {
            for reason in &rule.reasons {
                out.push_str(&format!("# {reason}\n"));
            }
            out.push_str(&format!(
                "- apiGroups: [{}]\n  resources: [{}]\n  verbs: [{}]\n",
                quote(&rule.api_group),
                quote(&rule.resource),
                rule.verbs.join(", ")
            ));
        }
        out.push_str("---\n");
        out.push_str(&header(&format!("{kind}Binding"), &binding.name, namespace));
        out.push_str(&format!(
            "roleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: {kind}\n  name: {}\nsubjects:\n- kind: ServiceAccount\n  name: {}\n  namespace: {}\n",
            quote(&binding.name),
            quote(&binding.service_account),
            quote(&binding.namespace)
        ));
    }
    out
}

fn header(kind: &str, name: &str, namespace: Option<&str>) -> String {
    let mut out = format!(
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: {kind}\nmetadata:\n  name: {}\n",
        quote(name)
    );
    if let Some(ns) = namespace {
        out.push_str(&format!("  namespace: {}\n", quote(ns)));
    }
    out.push_str("  labels:\n    app.kubernetes.io/name: windlass\n    app.kubernetes.io/component: plugins\n");
    out
}

/// A YAML scalar for names that are validated DNS labels and subdomains,
/// except the empty core group, which must be quoted.
fn quote(s: &str) -> String {
    if s.is_empty()
        || !s
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '/'))
    {
        format!("{s:?}")
    } else {
        s.to_owned()
    }
}

#[cfg(test)]
mod tests;
