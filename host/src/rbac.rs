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
        let kinds = m
            .watches()
            .map(|(_, w)| &w.kind)
            .chain(m.writes.iter().map(|g| &g.kind));
        for kind in kinds {
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
        let kinds = m
            .watches()
            .map(|(_, w)| &w.kind)
            .chain(m.writes.iter().map(|g| &g.kind));
        for kind in kinds {
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
mod tests {
    use super::*;
    use crate::contract::{Grant, Watch};

    fn manifest(name: &str, reconciles: Watch) -> Manifest {
        Manifest {
            name: name.into(),
            version: "0.1.0".into(),
            reconciles,
            owns: vec![],
            reads: vec![],
            writes: vec![],
            resync_seconds: None,
            finalizer: None,
            max_concurrency: 1,
        }
    }

    fn watch(api_version: &str, kind: &str) -> Watch {
        Watch::of(KindRef::new(api_version, kind))
    }

    fn in_ns(mut w: Watch, ns: &str) -> Watch {
        w.namespace = Some(ns.into());
        w
    }

    fn grant(api_version: &str, kind: &str, ns: Option<&str>, sub: Option<&str>) -> Grant {
        Grant {
            kind: KindRef::new(api_version, kind),
            namespace: ns.map(Into::into),
            subresource: sub.map(Into::into),
        }
    }

    /// `scope group resource verbs` per rule, for compact assertions.
    fn summary(rules: &[Rule]) -> Vec<String> {
        rules
            .iter()
            .map(|r| {
                let scope = match &r.scope {
                    Scope::Cluster => "*".to_owned(),
                    Scope::Namespace(ns) => ns.clone(),
                };
                format!(
                    "{scope} {:?} {} {}",
                    r.api_group,
                    r.resource,
                    r.verbs.join(",")
                )
            })
            .collect()
    }

    fn derive(manifests: &[Manifest]) -> Vec<Rule> {
        rules(manifests, &builtin, OFFLINE_HINT).unwrap()
    }

    #[test]
    fn a_replicaset_controller_reads_and_writes_its_kinds_and_nothing_else() {
        let mut m = manifest("replicaset", watch("apps/v1", "ReplicaSet"));
        m.owns.push(watch("v1", "Pod"));
        assert_eq!(
            summary(&derive(&[m])),
            [
                r#"* "" events create,patch"#,
                r#"* "" pods create,update,patch,delete"#,
                r#"* "" pods get,list,watch"#,
                r#"* "" pods/status update,patch"#,
                r#"* "apps" replicasets create,update,patch,delete"#,
                r#"* "apps" replicasets get,list,watch"#,
                r#"* "apps" replicasets/finalizers update"#,
                r#"* "apps" replicasets/status update,patch"#,
            ]
        );
    }

    #[test]
    fn grants_name_their_subresources_and_nothing_more() {
        let mut m = manifest("scheduler", watch("v1", "Pod"));
        m.reads.push(watch("v1", "Node"));
        m.writes.push(grant("v1", "Pod", None, Some("binding")));
        m.writes
            .push(grant("apps/v1", "Deployment", None, Some("scale")));
        m.writes.push(grant("v1", "Node", None, Some("status")));
        let rules = summary(&derive(&[m]));
        assert!(
            rules.contains(&r#"* "" pods/binding create"#.to_owned()),
            "{rules:#?}"
        );
        assert!(
            rules.contains(&r#"* "apps" deployments/scale patch"#.to_owned()),
            "{rules:#?}"
        );
        assert!(
            rules.contains(&r#"* "" nodes/status update,patch"#.to_owned()),
            "{rules:#?}"
        );
        // The Node grant is of its status only; the Deployment one of its scale only.
        assert!(
            !rules.iter().any(|r| r.contains(" nodes create")),
            "{rules:#?}"
        );
        assert!(
            !rules.iter().any(|r| r.contains("deployments ")),
            "{rules:#?}"
        );
        // No owned kinds: no blockOwnerDeletion, no finalizers rule.
        assert!(
            !rules.iter().any(|r| r.contains("finalizers")),
            "{rules:#?}"
        );
    }

    #[test]
    fn a_plugin_confined_to_a_namespace_gets_a_role_there() {
        let mut m = manifest("greeter", in_ns(watch("v1", "ConfigMap"), "team-a"));
        m.owns.push(in_ns(watch("v1", "Secret"), "team-a"));
        m.writes.push(grant(
            "coordination.k8s.io/v1",
            "Lease",
            Some("team-b"),
            None,
        ));
        let rules = derive(&[m]);
        assert!(
            rules.iter().all(|r| r.scope != Scope::Cluster),
            "{:#?}",
            summary(&rules)
        );
        assert_eq!(
            summary(&rules),
            [
                r#"team-a "" configmaps create,update,patch,delete"#,
                r#"team-a "" configmaps get,list,watch"#,
                r#"team-a "" configmaps/finalizers update"#,
                r#"team-a "" events create,patch"#,
                r#"team-a "" secrets create,update,patch,delete"#,
                r#"team-a "" secrets get,list,watch"#,
                r#"team-b "coordination.k8s.io" leases create,update,patch,delete"#,
            ]
        );
    }

    #[test]
    fn cluster_scoped_kinds_are_cluster_wide_and_their_events_go_to_default() {
        let mut m = manifest("kubelet", in_ns(watch("v1", "Node"), "ignored"));
        m.reads.push(in_ns(watch("v1", "Pod"), "team-a"));
        let rules = summary(&derive(&[m]));
        assert!(
            rules.contains(&r#"* "" nodes get,list,watch"#.to_owned()),
            "{rules:#?}"
        );
        assert!(
            rules.contains(&r#"default "" events create,patch"#.to_owned()),
            "{rules:#?}"
        );
        assert!(
            rules.contains(&r#"team-a "" events create,patch"#.to_owned()),
            "{rules:#?}"
        );
        assert!(
            !rules.contains(&r#"* "" events create,patch"#.to_owned()),
            "{rules:#?}"
        );
    }

    #[test]
    fn rules_several_plugins_share_are_merged_with_every_reason() {
        let mut deployment = manifest("deployment", watch("apps/v1", "Deployment"));
        deployment.owns.push(watch("apps/v1", "ReplicaSet"));
        let mut replicaset = manifest("replicaset", watch("apps/v1", "ReplicaSet"));
        replicaset.owns.push(watch("v1", "Pod"));
        let rules = derive(&[deployment, replicaset]);
        let read = rules
            .iter()
            .find(|r| r.resource == "replicasets" && r.verbs == READ)
            .unwrap();
        assert_eq!(
            read.reasons,
            [
                "deployment: owns apps/v1 ReplicaSet",
                "replicaset: reconciles apps/v1 ReplicaSet"
            ]
        );
        let events: Vec<&Rule> = rules.iter().filter(|r| r.resource == "events").collect();
        assert_eq!(events.len(), 1);
        assert_eq!(events[0].reasons.len(), 2);
    }

    #[test]
    fn a_finalizer_is_written_through_the_reconciled_object() {
        let mut m = manifest("cleaner", watch("v1", "ConfigMap"));
        m.finalizer = Some("example.com/cleanup".into());
        let rules = derive(&[m]);
        let write = rules
            .iter()
            .find(|r| r.resource == "configmaps" && r.verbs == WRITE)
            .unwrap();
        assert!(
            write.reasons.contains(
                &"cleaner: adds and removes its finalizer example.com/cleanup".to_owned()
            ),
            "{:?}",
            write.reasons
        );
        // ConfigMaps have no status subresource: nothing more than the object.
        let rules = summary(&rules);
        assert!(
            !rules.iter().any(|r| r.contains("configmaps/status")),
            "{rules:#?}"
        );
        // A grant of the status of a kind with no status subresource is a
        // patch of the object.
        let mut m = manifest("labeller", watch("v1", "Secret"));
        m.writes
            .push(grant("v1", "ConfigMap", None, Some("status")));
        let rules = summary(&derive(&[m]));
        assert!(
            rules.contains(&r#"* "" configmaps patch"#.to_owned()),
            "{rules:#?}"
        );
        assert!(
            !rules.iter().any(|r| r.contains("configmaps create")),
            "{rules:#?}"
        );
    }

    #[test]
    fn unknown_kinds_are_named_with_their_plugins_and_nothing_is_derived() {
        let mut m = manifest("greeter", watch("example.com/v1", "Greeting"));
        m.owns.push(watch("v1", "ConfigMap"));
        m.reads.push(watch("example.com/v1", "Greeting"));
        let e = rules(&[m], &builtin, OFFLINE_HINT).unwrap_err();
        let text = e.to_string();
        assert!(
            text.starts_with("cannot tell which resource serves example.com/v1 Greeting (declared by greeter); the built-in table knows only"),
            "{text}"
        );
        assert!(text.contains("--kubeconfig"), "{text}");
        // A lookup that knows the kind (as a server would) resolves it.
        let lookup = |k: &KindRef| {
            builtin(k).or_else(|| {
                (k.kind == "Greeting")
                    .then(|| resource("example.com/v1", "Greeting", "greetings", true, true))
            })
        };
        let mut m = manifest("greeter", watch("example.com/v1", "Greeting"));
        m.owns.push(watch("v1", "ConfigMap"));
        let rules = summary(&rules(&[m], &lookup, OFFLINE_HINT).unwrap());
        assert!(
            rules.contains(&r#"* "example.com" greetings/status update,patch"#.to_owned()),
            "{rules:#?}"
        );
        assert!(matches!(
            super::rules(&[], &builtin, OFFLINE_HINT),
            Err(RbacError::NoPlugins)
        ));
    }

    #[test]
    fn the_builtin_table_reads_every_line() {
        let lines = BUILTIN.lines().filter(|l| !l.is_empty()).count();
        let parsed = BUILTIN
            .lines()
            .filter(|l| !l.is_empty())
            .filter(|l| {
                let mut parts = l.split(' ');
                let (av, kind) = (parts.next().unwrap(), parts.next().unwrap());
                builtin(&KindRef::new(av, kind)).is_some()
            })
            .count();
        assert_eq!(parsed, lines);
        let pod = builtin(&KindRef::new("v1", "Pod")).unwrap();
        assert!(pod.namespaced && pod.has_status && pod.plural == "pods");
        let node = builtin(&KindRef::new("v1", "Node")).unwrap();
        assert!(!node.namespaced);
        assert!(builtin(&KindRef::new("v2", "Pod")).is_none());
    }

    #[test]
    fn renders_roles_and_bindings_with_a_comment_per_rule() {
        let mut m = manifest("kubelet", watch("v1", "Node"));
        m.writes.push(grant(
            "coordination.k8s.io/v1",
            "Lease",
            Some("kube-node-lease"),
            None,
        ));
        let rules = derive(std::slice::from_ref(&m));
        let binding = Binding::for_plugins(std::slice::from_ref(&m));
        let yaml = render(&[m], &rules, &binding);
        assert!(
            yaml.contains("kind: ClusterRole\nmetadata:\n  name: windlass-plugin-kubelet\n"),
            "{yaml}"
        );
        assert!(yaml.contains("kind: Role\nmetadata:\n  name: windlass-plugin-kubelet\n  namespace: kube-node-lease\n"), "{yaml}");
        assert!(
            yaml.contains("# kubelet: writes coordination.k8s.io/v1 Lease\n- apiGroups: [coordination.k8s.io]\n  resources: [leases]\n  verbs: [create, update, patch, delete]\n"),
            "{yaml}"
        );
        assert!(
            yaml.contains("- apiGroups: [\"\"]\n  resources: [nodes]\n"),
            "{yaml}"
        );
        assert_eq!(
            yaml.matches("kind: ClusterRoleBinding").count(),
            1,
            "{yaml}"
        );
        // A Role where its Leases are, and one in `default` for its events
        // about Nodes (cluster-scoped: client-go records those there).
        assert!(
            yaml.contains(
                "kind: Role\nmetadata:\n  name: windlass-plugin-kubelet\n  namespace: default\n"
            ),
            "{yaml}"
        );
        assert_eq!(yaml.matches("kind: RoleBinding").count(), 2, "{yaml}");
        assert!(
            yaml.contains(
                "subjects:\n- kind: ServiceAccount\n  name: windlass\n  namespace: windlass\n"
            ),
            "{yaml}"
        );
        // Every document parses as YAML, and each role has rules.
        let docs: Vec<serde_json::Value> = serde_yaml_ng::Deserializer::from_str(&yaml)
            .map(|d| serde::Deserialize::deserialize(d).unwrap())
            .collect();
        assert_eq!(docs.len(), 6);
        for doc in docs
            .iter()
            .filter(|d| d["kind"].as_str().unwrap().ends_with("Role"))
        {
            assert!(!doc["rules"].as_array().unwrap().is_empty(), "{doc}");
        }
    }
}
