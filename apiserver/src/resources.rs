//! The kinds the server serves: built-ins plus those CustomResourceDefinitions add.

use std::collections::BTreeMap;
use std::sync::Arc;

use jsonpath_rust::parser::model::JpQuery;
use serde_json::Value;

use crate::schema::{KindSchema, Schema};

/// Where a scale subresource reads and writes replicas (JSON paths without the leading dot).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ScalePaths {
    pub(crate) spec_replicas: String,
    pub(crate) status_replicas: String,
    pub(crate) label_selector: Option<String>,
}

/// A CRD's `additionalPrinterColumns` entry.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PrinterColumn {
    pub(crate) name: String,
    pub(crate) type_: String,
    pub(crate) format: String,
    pub(crate) description: String,
    /// Above 0: shown only in the wide output (`kubectl get -o wide`).
    pub(crate) priority: i64,
    pub(crate) json_path: String,
    /// The path parsed as JSONPath when it is more than members joined by
    /// dots (`.status.conditions[?(@.type=="Ready")].status`); `None` for a
    /// dotted path, read member by member, and for one that does not parse.
    pub(crate) query: Option<JpQuery>,
}

impl PrinterColumn {
    fn of(c: &Value) -> Self {
        let s = |k: &str| c[k].as_str().unwrap_or_default().to_owned();
        let json_path = s("jsonPath");
        let query = json_path
            .contains(['[', '*', '@', '\'', '"'])
            .then(|| jsonpath_rust::parser::parse_json_path(&format!("${json_path}")).ok())
            .flatten();
        Self {
            name: s("name"),
            type_: c["type"].as_str().unwrap_or("string").to_owned(),
            format: s("format"),
            description: s("description"),
            priority: c["priority"].as_i64().unwrap_or(0),
            json_path,
            query,
        }
    }
}

/// One served resource (a group/version/plural).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Resource {
    pub(crate) group: String,
    /// Versions served, preferred (storage) first.
    pub(crate) versions: Vec<String>,
    pub(crate) plural: String,
    pub(crate) singular: String,
    pub(crate) kind: String,
    pub(crate) namespaced: bool,
    pub(crate) short_names: Vec<String>,
    pub(crate) categories: Vec<String>,
    pub(crate) status: bool,
    pub(crate) scale: Option<ScalePaths>,
    pub(crate) builtin: bool,
    pub(crate) printer_columns: Vec<PrinterColumn>,
    /// Only `create` is served: the object is a question answered at once
    /// and never stored (access and token reviews).
    pub(crate) create_only: bool,
    /// A custom resource's structural schema, per version (built-in kinds
    /// get theirs from the OpenAPI definitions).
    pub(crate) schemas: Vec<(String, KindSchema)>,
    /// A custom resource's `selectableFields`, per version: the paths
    /// (`spec.host`, without the leading dot) a field selector may name
    /// besides `metadata.name` and `metadata.namespace`.
    pub(crate) selectable: Vec<(String, Vec<String>)>,
}

impl Resource {
    /// The registry key, `group/plural`.
    pub(crate) fn key(&self) -> String {
        join(&self.group, &self.plural)
    }

    /// Whether this is `events.k8s.io` Events: as in kube-apiserver, the
    /// same objects as core v1 Events, stored once (in the core form) and
    /// converted on the way in and out (`convert.rs`), so that an event a
    /// client records through either API shows in both.
    pub(crate) fn is_events_api(&self) -> bool {
        self.builtin && self.group == "events.k8s.io" && self.plural == "events"
    }

    /// The table the objects are stored in, `group/plural` of the stored
    /// form: [`Resource::key`] but for `events.k8s.io` Events, stored as
    /// core Events.
    pub(crate) fn storage_key(&self) -> String {
        if self.is_events_api() {
            join("", "events")
        } else {
            self.key()
        }
    }

    /// The `apiVersion` of the stored form.
    pub(crate) fn stored_api_version(&self) -> String {
        if self.is_events_api() {
            "v1".to_owned()
        } else {
            self.api_version(&self.versions[0])
        }
    }

    pub(crate) fn api_version(&self, version: &str) -> String {
        if self.group.is_empty() {
            version.to_owned()
        } else {
            join(&self.group, version)
        }
    }

    pub(crate) fn list_kind(&self) -> String {
        format!("{}List", self.kind)
    }

    /// Whether the resource keeps a `metadata.generation`.
    pub(crate) fn has_generation(&self) -> bool {
        !matches!(
            (self.group.as_str(), self.plural.as_str()),
            (
                "",
                "configmaps" | "secrets" | "events" | "serviceaccounts" | "namespaces"
            ) | ("events.k8s.io", "events")
                | ("coordination.k8s.io", "leases")
                | ("", "endpoints" | "podtemplates")
                | ("apps", "controllerrevisions")
                | ("rbac.authorization.k8s.io", _)
                | ("discovery.k8s.io", "endpointslices")
                | ("scheduling.k8s.io", "priorityclasses")
                | ("storage.k8s.io", "storageclasses")
                | ("node.k8s.io", "runtimeclasses")
                | ("networking.k8s.io", "ingressclasses")
        )
    }

    /// The fields of version `version` a field selector may name beyond
    /// the metadata's and the kind's own: a custom resource's
    /// `selectableFields`.
    pub(crate) fn selectable_fields(&self, version: &str) -> &[String] {
        self.selectable
            .iter()
            .find(|(v, _)| v == version)
            .map_or(&[], |(_, f)| f.as_slice())
    }

    /// How a custom resource's lists of `version` merge in server-side
    /// apply and managed fields (`None` for built-in kinds and a CRD
    /// without a schema).
    pub(crate) fn custom_lists(
        &self,
        version: &str,
    ) -> Option<Arc<crate::custom_lists::CustomLists>> {
        self.schema(version).and_then(|s| s.lists())
    }

    /// The schema objects of `version` are pruned with, if any.
    pub(crate) fn schema(&self, version: &str) -> Option<KindSchema> {
        if self.builtin {
            return crate::schema::builtin(&self.group, version, &self.kind);
        }
        self.schemas
            .iter()
            .find(|(v, _)| v == version)
            .map(|(_, s)| s.clone())
    }

    /// Verbs for discovery.
    pub(crate) fn verbs(&self) -> Vec<&'static str> {
        if self.create_only {
            return vec!["create"];
        }
        vec![
            "create",
            "delete",
            "deletecollection",
            "get",
            "list",
            "patch",
            "update",
            "watch",
        ]
    }
}

/// The built-in kinds, one a line: `group/version` (`v1` for the core
/// group; several versions comma-separated, the stored one first), plural,
/// kind, scope, short names (`-` for none) and flags (`-` for none): `all`
/// (in the `all` category), `status` and `scale` (subresources; `scale`
/// reads `spec.replicas`, `status.replicas` and `spec.selector`), `create`
/// (a review: created, answered and never stored).
///
/// The server runs no controller for any of them but garbage collection and
/// namespace deletion: they are stored so that the manifests real workloads
/// ship (RBAC, Jobs, PDBs, Ingresses, ...) apply as on a cluster.
const BUILTINS: &str = "
v1 namespaces Namespace cluster ns status
v1 pods Pod namespaced po all,status
v1 nodes Node cluster no status
v1 configmaps ConfigMap namespaced cm -
v1 secrets Secret namespaced - -
v1 services Service namespaced svc all,status
v1 serviceaccounts ServiceAccount namespaced sa -
v1 events Event namespaced ev -
v1 resourcequotas ResourceQuota namespaced quota status
v1 limitranges LimitRange namespaced limits -
v1 endpoints Endpoints namespaced ep -
v1 persistentvolumeclaims PersistentVolumeClaim namespaced pvc status
v1 persistentvolumes PersistentVolume cluster pv status
v1 podtemplates PodTemplate namespaced - -
v1 replicationcontrollers ReplicationController namespaced rc all,status,scale
events.k8s.io/v1 events Event namespaced ev -
apps/v1 deployments Deployment namespaced deploy all,status,scale
apps/v1 replicasets ReplicaSet namespaced rs all,status,scale
apps/v1 statefulsets StatefulSet namespaced sts all,status,scale
apps/v1 daemonsets DaemonSet namespaced ds all,status
apps/v1 controllerrevisions ControllerRevision namespaced - -
batch/v1 jobs Job namespaced - all,status
batch/v1 cronjobs CronJob namespaced cj all,status
autoscaling/v2,v1 horizontalpodautoscalers HorizontalPodAutoscaler namespaced hpa all,status
policy/v1 poddisruptionbudgets PodDisruptionBudget namespaced pdb status
rbac.authorization.k8s.io/v1 roles Role namespaced - -
rbac.authorization.k8s.io/v1 rolebindings RoleBinding namespaced - -
rbac.authorization.k8s.io/v1 clusterroles ClusterRole cluster - -
rbac.authorization.k8s.io/v1 clusterrolebindings ClusterRoleBinding cluster - -
networking.k8s.io/v1 ingresses Ingress namespaced ing status
networking.k8s.io/v1 ingressclasses IngressClass cluster - -
networking.k8s.io/v1 networkpolicies NetworkPolicy namespaced netpol -
discovery.k8s.io/v1 endpointslices EndpointSlice namespaced - -
scheduling.k8s.io/v1 priorityclasses PriorityClass cluster pc -
storage.k8s.io/v1 storageclasses StorageClass cluster sc -
node.k8s.io/v1 runtimeclasses RuntimeClass cluster - -
coordination.k8s.io/v1 leases Lease namespaced - -
apiextensions.k8s.io/v1 customresourcedefinitions CustomResourceDefinition cluster crd,crds status
apiregistration.k8s.io/v1 apiservices APIService cluster - status
certificates.k8s.io/v1 certificatesigningrequests CertificateSigningRequest cluster csr status
authorization.k8s.io/v1 selfsubjectaccessreviews SelfSubjectAccessReview cluster - create
authorization.k8s.io/v1 selfsubjectrulesreviews SelfSubjectRulesReview namespaced - create
authorization.k8s.io/v1 subjectaccessreviews SubjectAccessReview cluster - create
authorization.k8s.io/v1 localsubjectaccessreviews LocalSubjectAccessReview namespaced - create
authentication.k8s.io/v1 selfsubjectreviews SelfSubjectReview cluster - create
authentication.k8s.io/v1 tokenreviews TokenReview cluster - create
";

/// All built-in resources, from [`BUILTINS`].
pub(crate) fn builtins() -> Vec<Resource> {
    BUILTINS
        .lines()
        .filter(|l| !l.is_empty())
        .map(builtin)
        .collect()
}

/// One line of [`BUILTINS`].
fn builtin(line: &str) -> Resource {
    let [group_version, plural, kind, scope, short, flags] = line
        .split(' ')
        .collect::<Vec<_>>()
        .try_into()
        .unwrap_or_else(|_| panic!("BUILTINS: bad line {line:?}"));
    let (group, version) = group_version
        .rsplit_once('/')
        .unwrap_or(("", group_version));
    let list = |s: &str| -> Vec<String> {
        s.split(',')
            .filter(|x| *x != "-")
            .map(str::to_owned)
            .collect()
    };
    let flags = list(flags);
    let flag = |f: &str| flags.iter().any(|x| x == f);
    Resource {
        group: group.into(),
        versions: version.split(',').map(str::to_owned).collect(),
        plural: plural.into(),
        singular: kind.to_lowercase(),
        kind: kind.into(),
        namespaced: scope == "namespaced",
        short_names: list(short),
        categories: if flag("all") {
            vec!["all".into()]
        } else {
            vec![]
        },
        status: flag("status"),
        scale: flag("scale").then(|| ScalePaths {
            spec_replicas: "spec.replicas".into(),
            status_replicas: "status.replicas".into(),
            label_selector: Some("spec.selector".into()),
        }),
        builtin: true,
        printer_columns: vec![],
        create_only: flag("create"),
        schemas: vec![],
        selectable: vec![],
    }
}

/// `a/b`. Several of these are built for every request; `format!` costs
/// several times as much.
fn join(a: &str, b: &str) -> String {
    let mut s = String::with_capacity(a.len() + 1 + b.len());
    s.push_str(a);
    s.push('/');
    s.push_str(b);
    s
}

/// The set of served resources; cheap to clone.
#[derive(Debug, Clone, Default)]
pub(crate) struct Registry {
    /// By `group/plural`.
    by_key: BTreeMap<String, Arc<Resource>>,
}

impl Registry {
    pub(crate) fn with_builtins() -> Self {
        let mut r = Self::default();
        for res in builtins() {
            r.insert(res);
        }
        r
    }

    pub(crate) fn insert(&mut self, res: Resource) {
        self.by_key.insert(res.key(), Arc::new(res));
    }

    pub(crate) fn remove(&mut self, key: &str) {
        self.by_key.remove(key);
    }

    pub(crate) fn get_key(&self, key: &str) -> Option<&Arc<Resource>> {
        self.by_key.get(key)
    }

    /// The resource served at `group/version/plural`.
    pub(crate) fn lookup(
        &self,
        group: &str,
        version: &str,
        plural: &str,
    ) -> Option<&Arc<Resource>> {
        self.by_key
            .get(&join(group, plural))
            .filter(|r| r.versions.iter().any(|v| v == version))
    }

    pub(crate) fn all(&self) -> impl Iterator<Item = &Arc<Resource>> {
        self.by_key.values()
    }

    /// Groups with their versions (preferred first), core group excluded, sorted
    /// with the built-in groups first like the real server.
    pub(crate) fn groups(&self) -> Vec<(String, Vec<String>)> {
        let mut out: Vec<(String, Vec<String>)> = Vec::new();
        let mut builtin_first: Vec<&Arc<Resource>> = self
            .by_key
            .values()
            .filter(|r| !r.group.is_empty())
            .collect();
        builtin_first.sort_by_key(|r| !r.builtin);
        for r in builtin_first {
            match out.iter_mut().find(|(g, _)| *g == r.group) {
                Some((_, vs)) => {
                    for v in &r.versions {
                        if !vs.contains(v) {
                            vs.push(v.clone());
                        }
                    }
                }
                None => out.push((r.group.clone(), r.versions.clone())),
            }
        }
        out
    }
}

fn str_at<'a>(v: &'a Value, path: &[&str]) -> Option<&'a str> {
    let mut cur = v;
    for p in path {
        cur = cur.get(p)?;
    }
    cur.as_str()
}

/// Whether `group`/`plural` is one of the [`BUILTINS`].
pub(crate) fn is_builtin(group: &str, plural: &str) -> bool {
    static KEYS: std::sync::OnceLock<Vec<(String, String)>> = std::sync::OnceLock::new();
    KEYS.get_or_init(|| {
        builtins()
            .into_iter()
            .map(|r| (r.group, r.plural))
            .collect()
    })
    .iter()
    .any(|(g, p)| g == group && p == plural)
}

/// Whether `group` is served by a built-in kind.
pub(crate) fn is_builtin_group(group: &str) -> bool {
    builtins().iter().any(|r| r.group == group)
}

/// The annotation kube-apiserver requires on CRDs in the Kubernetes
/// community's groups (`*.k8s.io`, `*.kubernetes.io`).
const API_APPROVED: &str = "api-approved.kubernetes.io";

/// kube-apiserver's rule for CRDs in protected groups: the annotation is
/// required, and must be a URL or start with `unapproved`. Checked on
/// create, and on update only when the annotation changes (`old` is the
/// stored CRD), as kube-apiserver does.
pub(crate) fn crd_approval_errors(crd: &Value, old: Option<&Value>) -> Vec<(String, String)> {
    let group = str_at(crd, &["spec", "group"]).unwrap_or_default();
    let protected = ["k8s.io", "kubernetes.io"]
        .iter()
        .any(|g| group == *g || group.ends_with(&format!(".{g}")));
    let approval = |v: &Value| {
        v["metadata"]["annotations"][API_APPROVED]
            .as_str()
            .map(str::to_owned)
    };
    let value = approval(crd);
    if !protected || old.is_some_and(|o| approval(o) == value) {
        return vec![];
    }
    let field = format!("metadata.annotations[{API_APPROVED}]");
    let see = "see https://github.com/kubernetes/enhancements/pull/1111";
    match value.as_deref() {
        None | Some("") => vec![(
            field,
            format!(
                "Required value: protected groups must have approval annotation {API_APPROVED:?}, {see}"
            ),
        )],
        Some(v) if v.starts_with("unapproved") || is_url(v) => vec![],
        Some(v) => vec![(
            field,
            format!(
                "Invalid value: {v:?}: protected groups must have approval annotation {API_APPROVED:?} with either a URL or a reason starting with \"unapproved\", {see}"
            ),
        )],
    }
}

/// A URL with a scheme and a host, as Go's `url.ParseRequestURI` accepts it.
fn is_url(v: &str) -> bool {
    v.split_once("://").is_some_and(|(scheme, rest)| {
        !scheme.is_empty()
            && scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
            && !rest
                .split(['/', '?', '#'])
                .next()
                .unwrap_or_default()
                .is_empty()
            && !v.contains(char::is_whitespace)
    })
}

/// The resource a CustomResourceDefinition declares, or why it is invalid
/// (`(field, message)` pairs).
pub(crate) fn from_crd(crd: &Value) -> Result<Resource, Vec<(String, String)>> {
    let mut errs = Vec::new();
    let group = str_at(crd, &["spec", "group"])
        .unwrap_or_default()
        .to_owned();
    let plural = str_at(crd, &["spec", "names", "plural"])
        .unwrap_or_default()
        .to_owned();
    let kind = str_at(crd, &["spec", "names", "kind"])
        .unwrap_or_default()
        .to_owned();
    let name = str_at(crd, &["metadata", "name"]).unwrap_or_default();
    if group.is_empty() || !group.contains('.') {
        errs.push((
            "spec.group".into(),
            format!("Invalid value: {group:?}: should be a domain with at least one dot"),
        ));
    }
    if plural.is_empty() {
        errs.push(("spec.names.plural".into(), "Required value".into()));
    }
    if kind.is_empty() {
        errs.push(("spec.names.kind".into(), "Required value".into()));
    }
    if is_builtin(&group, &plural) {
        errs.push((
            "spec.names.plural".into(),
            format!(
                "Invalid value: {plural:?}: {plural}.{group} is a built-in resource of this server; a CustomResourceDefinition cannot replace it"
            ),
        ));
    }
    if name != format!("{plural}.{group}") {
        errs.push((
            "metadata.name".into(),
            format!("Invalid value: {name:?}: must be spec.names.plural+\".\"+spec.group"),
        ));
    }
    let scope = str_at(crd, &["spec", "scope"]).unwrap_or("Namespaced");
    if scope != "Namespaced" && scope != "Cluster" {
        errs.push((
            "spec.scope".into(),
            format!("Unsupported value: {scope:?}: supported values: \"Cluster\", \"Namespaced\""),
        ));
    }
    let versions = crd["spec"]["versions"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let served: Vec<&Value> = versions
        .iter()
        .filter(|v| v["served"].as_bool().unwrap_or(false))
        .collect();
    if versions
        .iter()
        .filter(|v| v["storage"].as_bool().unwrap_or(false))
        .count()
        != 1
    {
        errs.push((
            "spec.versions".into(),
            "Invalid value: must have exactly one version marked as storage version".into(),
        ));
    }
    if !errs.is_empty() {
        return Err(errs);
    }
    let mut names: Vec<String> = Vec::new();
    let storage = versions
        .iter()
        .find(|v| v["storage"].as_bool().unwrap_or(false));
    if let Some(s) = storage.filter(|s| s["served"].as_bool().unwrap_or(false)) {
        names.push(s["name"].as_str().unwrap_or_default().to_owned());
    }
    for v in &served {
        let n = v["name"].as_str().unwrap_or_default().to_owned();
        if !names.contains(&n) {
            names.push(n);
        }
    }
    let first = storage
        .or(served.first().copied())
        .cloned()
        .unwrap_or(Value::Null);
    let schemas = served
        .iter()
        .filter_map(|v| {
            let s = &v["schema"]["openAPIV3Schema"];
            let name = v["name"].as_str()?;
            s.is_object()
                .then(|| (name.to_owned(), Schema::from_crd(s)))
        })
        .collect();
    let selectable = served
        .iter()
        .filter_map(|v| {
            let paths = v["selectableFields"]
                .as_array()?
                .iter()
                .filter_map(|f| f["jsonPath"].as_str())
                .map(|p| p.trim_start_matches('.').to_owned())
                .collect();
            Some((v["name"].as_str()?.to_owned(), paths))
        })
        .collect();
    let sub = &first["subresources"];
    let scale = sub
        .get("scale")
        .filter(|s| s.is_object())
        .map(|s| ScalePaths {
            spec_replicas: s["specReplicasPath"]
                .as_str()
                .unwrap_or(".spec.replicas")
                .trim_start_matches('.')
                .into(),
            status_replicas: s["statusReplicasPath"]
                .as_str()
                .unwrap_or(".status.replicas")
                .trim_start_matches('.')
                .into(),
            label_selector: s["labelSelectorPath"]
                .as_str()
                .map(|p| p.trim_start_matches('.').to_owned()),
        });
    let printer_columns = first["additionalPrinterColumns"]
        .as_array()
        .map(|cols| cols.iter().map(PrinterColumn::of).collect())
        .unwrap_or_default();
    let strings = |p: &str| -> Vec<String> {
        crd["spec"]["names"][p]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|s| s.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    };
    Ok(Resource {
        group,
        versions: names,
        singular: str_at(crd, &["spec", "names", "singular"])
            .map(str::to_owned)
            .unwrap_or_else(|| kind.to_lowercase()),
        plural,
        kind,
        namespaced: scope == "Namespaced",
        short_names: strings("shortNames"),
        categories: strings("categories"),
        status: sub.get("status").is_some_and(Value::is_object),
        scale,
        builtin: false,
        printer_columns,
        create_only: false,
        schemas,
        selectable,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn crd_becomes_a_resource() {
        let crd = json!({
            "metadata": {"name": "widgets.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced",
                "names": {"plural": "widgets", "kind": "Widget", "shortNames": ["wd"]},
                "versions": [{"name": "v1", "served": true, "storage": true,
                    "subresources": {"status": {}, "scale": {"specReplicasPath": ".spec.size", "statusReplicasPath": ".status.size"}}}]}
        });
        let r = from_crd(&crd).unwrap();
        assert_eq!(r.key(), "example.com/widgets");
        assert!(r.status && r.namespaced);
        assert_eq!(r.scale.unwrap().spec_replicas, "spec.size");
        assert_eq!(r.short_names, vec!["wd"]);
    }

    #[test]
    fn crd_name_must_match() {
        let crd = json!({"metadata": {"name": "x.example.com"},
            "spec": {"group": "example.com", "names": {"plural": "widgets", "kind": "Widget"},
                "versions": [{"name": "v1", "served": true, "storage": true}]}});
        let errs = from_crd(&crd).unwrap_err();
        assert_eq!(errs[0].0, "metadata.name");
    }

    fn crd(group: &str, plural: &str, annotations: Value) -> Value {
        json!({"metadata": {"name": format!("{plural}.{group}"), "annotations": annotations},
            "spec": {"group": group, "names": {"plural": plural, "kind": "K"},
                "versions": [{"name": "v1", "served": true, "storage": true}]}})
    }

    /// A CRD for a built-in resource would replace it (and deleting the
    /// CRD would delete every object of the built-in kind).
    #[test]
    fn crds_cannot_shadow_built_ins() {
        for (group, plural) in [
            ("storage.k8s.io", "storageclasses"),
            ("apps", "deployments"),
        ] {
            let errs = from_crd(&crd(group, plural, json!({}))).unwrap_err();
            assert!(
                errs.iter()
                    .any(|(f, m)| f == "spec.names.plural" && m.contains("built-in")),
                "{errs:?}"
            );
        }
        assert!(from_crd(&crd("example.com", "deployments", json!({}))).is_ok());
    }

    #[test]
    fn protected_groups_need_approval() {
        let missing = crd("snapshot.storage.k8s.io", "volumesnapshots", json!({}));
        let errs = crd_approval_errors(&missing, None);
        assert_eq!(
            errs[0].0,
            "metadata.annotations[api-approved.kubernetes.io]"
        );
        assert!(
            errs[0]
                .1
                .starts_with("Required value: protected groups must have approval annotation")
        );
        let ok = crd(
            "snapshot.storage.k8s.io",
            "volumesnapshots",
            json!({API_APPROVED: "https://github.com/kubernetes-csi/external-snapshotter/pull/419"}),
        );
        assert!(crd_approval_errors(&ok, None).is_empty());
        let bypass = crd(
            "x.k8s.io",
            "things",
            json!({API_APPROVED: "unapproved, testing"}),
        );
        assert!(crd_approval_errors(&bypass, None).is_empty());
        let bad = crd("x.kubernetes.io", "things", json!({API_APPROVED: "soon"}));
        assert!(
            crd_approval_errors(&bad, None)[0]
                .1
                .starts_with("Invalid value: \"soon\"")
        );
        // Unchanged on update: not checked again.
        assert!(crd_approval_errors(&bad, Some(&bad)).is_empty());
        assert!(crd_approval_errors(&crd("example.com", "things", json!({})), None).is_empty());
    }
}
