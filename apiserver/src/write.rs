//! Write semantics shared by every endpoint: create, update, delete with
//! generation, no-op detection, optimistic concurrency and finalizers.
//!
//! All functions run under the state lock and return the storage
//! acknowledgement for the caller to await after releasing it.

use std::sync::Arc;

use serde_json::{Value, json};

use crate::admission::{self, Review};
use crate::object::{self, meta_mut};
use crate::request::{self as rq, Query};
use crate::resources;
use crate::scope::Req;
use crate::state::{AckRx, Current, FollowUp, Obj, State};
use crate::status::{ApiError, ApiResult, Target};
use crate::time::now_rfc3339;
use crate::validate;

/// The result of a write.
#[derive(Debug)]
pub(crate) struct Written {
    pub(crate) obj: Arc<Obj>,
    pub(crate) ack: Option<AckRx>,
    /// The object no longer exists after this write.
    pub(crate) gone: bool,
}

/// How dependents are treated when their owner is deleted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Propagation {
    #[default]
    Background,
    Foreground,
    Orphan,
}

impl Propagation {
    pub(crate) fn parse(s: &str) -> Option<Self> {
        match s {
            "Background" => Some(Self::Background),
            "Foreground" => Some(Self::Foreground),
            "Orphan" => Some(Self::Orphan),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, Default)]
pub(crate) struct DeleteOptions {
    pub(crate) propagation: Propagation,
    pub(crate) uid: Option<String>,
    pub(crate) resource_version: Option<String>,
    /// `gracePeriodSeconds`: for pods, how long the kubelet gets.
    pub(crate) grace_period: Option<i64>,
}

impl DeleteOptions {
    /// The `DeleteOptions` of a delete: its body's (JSON, YAML or protobuf, as
    /// client-go's typed clients send it), else its query's.
    pub(crate) fn read(q: &Query, ct: &str, body: &[u8]) -> ApiResult<Self> {
        let b: Value = if body.iter().all(u8::is_ascii_whitespace) {
            json!({})
        } else {
            rq::decode_body_typed(ct, body, Some(("v1", "DeleteOptions"))).map_err(|e| {
                ApiError::new(
                    e.code,
                    e.reason,
                    format!("invalid DeleteOptions: {}", e.message),
                )
            })?
        };
        Self::of(q, &b)
    }

    /// Reads `DeleteOptions` from `b` (a body's, or an eviction's), with the
    /// query's where the body leaves a field out.
    pub(crate) fn of(q: &Query, b: &Value) -> ApiResult<Self> {
        let mut opts = Self::default();
        let policy = b["propagationPolicy"]
            .as_str()
            .or(q.non_empty("propagationPolicy"));
        if let Some(p) = policy {
            opts.propagation = Propagation::parse(p).ok_or_else(|| {
                ApiError::bad_request(format!("propagationPolicy: Unsupported value: {p:?}: supported values: \"Foreground\", \"Background\", \"Orphan\""))
            })?;
        } else if b["orphanDependents"].as_bool() == Some(true) || q.flag("orphanDependents") {
            opts.propagation = Propagation::Orphan;
        }
        opts.grace_period = match b.get("gracePeriodSeconds") {
            Some(v) if !v.is_null() => Some(v.as_i64().ok_or_else(|| {
                ApiError::bad_request(format!("gracePeriodSeconds must be an integer, not {v}"))
            })?),
            _ => q
                .non_empty("gracePeriodSeconds")
                .map(|v| {
                    v.parse::<i64>().map_err(|_| {
                        ApiError::bad_request(format!(
                            "gracePeriodSeconds must be an integer, not {v:?}"
                        ))
                    })
                })
                .transpose()?,
        };
        opts.uid = b["preconditions"]["uid"].as_str().map(str::to_owned);
        opts.resource_version = b["preconditions"]["resourceVersion"]
            .as_str()
            .map(str::to_owned);
        Ok(opts)
    }
}

/// A pod's graceful-deletion period for this delete, as the real server
/// decides it: the request's `gracePeriodSeconds`, else the pod's
/// `terminationGracePeriodSeconds`, else 30; but 0 (delete now) for a pod
/// no node runs — never scheduled, or already finished. 0 for every other
/// kind, which is deleted at once.
fn grace_period(req: &Req<'_>, pod: &Value, opts: &DeleteOptions) -> i64 {
    if !(req.res.group.is_empty() && req.res.plural == "pods") {
        return 0;
    }
    let requested = opts
        .grace_period
        .or_else(|| pod["spec"]["terminationGracePeriodSeconds"].as_i64())
        .unwrap_or(30);
    let unscheduled = pod["spec"]["nodeName"].as_str().is_none_or(str::is_empty);
    let finished = matches!(
        pod["status"]["phase"].as_str(),
        Some("Succeeded" | "Failed")
    );
    if unscheduled || finished {
        0
    } else {
        requested.max(0)
    }
}

/// Marks `o` as being deleted, `grace` seconds from now.
fn mark_deleting(o: &mut Value, grace: i64) {
    let meta = meta_mut(o);
    meta.insert(
        "deletionTimestamp".into(),
        Value::String(crate::time::format_rfc3339(crate::time::now_secs() + grace)),
    );
    meta.insert("deletionGracePeriodSeconds".into(), json!(grace));
}

/// The grace period a deleting object still has, from its
/// `deletionGracePeriodSeconds` (0 when unset).
fn deletion_grace(o: &Value) -> i64 {
    o["metadata"]["deletionGracePeriodSeconds"]
        .as_i64()
        .unwrap_or(0)
}

pub(crate) const FOREGROUND: &str = "foregroundDeletion";
pub(crate) const ORPHAN: &str = "orphan";
const PROTECTED_NAMESPACES: [&str; 3] = ["default", "kube-system", "kube-public"];

/// Checks `apiVersion`/`kind` against the URL and the namespace; fills the
/// namespace for namespaced kinds.
pub(crate) fn check_identity(req: &Req<'_>, body: &mut Value) -> ApiResult<()> {
    if !body.is_object() {
        return Err(ApiError::bad_request(
            "the request body must be a JSON or YAML object",
        ));
    }
    let want_av = req.res.api_version(req.version);
    let av = body["apiVersion"].as_str().unwrap_or_default();
    let kind = body["kind"].as_str().unwrap_or_default();
    if kind.is_empty() {
        return Err(ApiError::bad_request(
            "Object 'Kind' is missing in the request body",
        ));
    }
    // An object converted from the requested version is in the stored one.
    let converted =
        crate::convert::needed(req.res, req.version) && av == req.res.stored_api_version();
    if kind != req.res.kind || (av != want_av && !converted) {
        return Err(ApiError::bad_request(format!(
            "the API version in the data ({av}) does not match the expected API version ({want_av}) or the kind ({kind}) is not {}",
            req.res.kind
        )));
    }
    let meta = meta_mut(body);
    if req.res.namespaced {
        match meta.get("namespace").and_then(Value::as_str) {
            Some(ns) if !ns.is_empty() && ns != req.ns => {
                return Err(ApiError::bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request",
                ));
            }
            _ => {
                meta.insert("namespace".into(), Value::String(req.ns.to_owned()));
            }
        }
    } else {
        meta.remove("namespace");
    }
    Ok(())
}

/// A built-in object as kube-apiserver's round trip through Go leaves it
/// (`proto/omit.rs`): `stdin: false`, `taints: []` and the like are left
/// out. Custom resources keep what was written.
fn omit_empty(req: &Req<'_>, obj: &mut Value) {
    if req.res.builtin {
        // The object is in its stored form by now (an `autoscaling/v1`
        // HPA is a v2 one, an `events.k8s.io` Event a core one).
        crate::proto::omit_empty(&req.res.stored_api_version(), &req.res.kind, obj);
    }
}

/// `old` is the stored object an update replaces (`None` on create).
fn validate_all(
    req: &Req<'_>,
    review: &Review,
    obj: &Value,
    name: &str,
    old: Option<&Value>,
) -> ApiResult<()> {
    crate::limits::check_stored(&req.res.kind, req.target(name), obj)?;
    let mut errs =
        validate::name_errors_for(name, validate::name_rule(&req.res.group, &req.res.plural));
    errs.extend(validate::metadata_errors(obj));
    errs.extend(validate::kind_errors(
        &req.res.group,
        &req.res.plural,
        obj,
        review.pod(),
        old,
    ));
    if let Some(old) = old {
        errs.extend(validate::update_errors(
            &req.res.group,
            &req.res.plural,
            old,
            obj,
            req.sub,
        ));
    }
    if !req.res.builtin
        && let Some(schema) = req.res.schema(req.version)
    {
        errs.extend(schema.value_errors(obj, old));
    }
    if req.res.group == "certificates.k8s.io" {
        errs.extend(crate::certificates::errors(obj, old));
    }
    if req.res.group == "apiextensions.k8s.io" {
        if let Err(e) = resources::from_crd(obj) {
            errs.extend(e);
        }
        errs.extend(crate::schema::definition_errors(obj, old));
        errs.extend(resources::crd_approval_errors(obj, old));
    }
    if errs.is_empty() {
        Ok(())
    } else {
        Err(ApiError::invalid(&req.res.kind, req.target(name), &errs))
    }
}

/// What the server sets on an object before it is validated, as kube's
/// storage strategies do: a Service's cluster IP and node ports, a new
/// Job's selector.
fn allocate(
    st: &State,
    req: &Req<'_>,
    name: &str,
    old: Option<&Value>,
    obj: &mut Value,
) -> ApiResult<()> {
    if req.res.group == "batch" && req.res.plural == "jobs" && old.is_none() {
        crate::defaults::job_selector(obj);
        return Ok(());
    }
    if !(req.res.group.is_empty() && req.res.plural == "services") {
        return Ok(());
    }
    let errs = match old {
        None => crate::service_alloc::on_create(st, req.ns, name, obj),
        Some(old) => crate::service_alloc::on_update(st, req.ns, name, old, obj),
    };
    if errs.is_empty() {
        Ok(())
    } else {
        Err(ApiError::invalid(&req.res.kind, req.target(name), &errs))
    }
}

fn check_namespace(st: &State, req: &Req<'_>, name: &str) -> ApiResult<()> {
    if !req.res.namespaced {
        return Ok(());
    }
    match st.get("/namespaces", "", req.ns) {
        None => Err(ApiError::not_found(Target {
            group: "",
            resource: "namespaces",
            name: req.ns,
        })),
        Some(ns) if ns.attrs.deleting => Err(ApiError::forbidden(
            req.target(name),
            &format!(
                "unable to create new content in namespace {} because it is being terminated",
                req.ns
            ),
        )),
        Some(_) => Ok(()),
    }
}

/// Status handling and server-set fields on create (defaults of the
/// spec are `defaults::apply`).
fn prepare_create(req: &Req<'_>, review: &Review, obj: &mut Value) {
    let (g, p) = (req.res.group.as_str(), req.res.plural.as_str());
    if req.res.status {
        match (g, p) {
            ("", "pods") => {
                let qos = review.qos_class(obj).as_str();
                obj["status"] = json!({"phase": "Pending", "qosClass": qos});
            }
            ("", "namespaces") => obj["status"] = json!({"phase": "Active"}),
            // As the API server's defaulting reads them back: a claim or a
            // volume nothing has bound yet is Pending.
            ("", "persistentvolumeclaims" | "persistentvolumes") => {
                obj["status"] = json!({"phase": "Pending"})
            }
            ("", "nodes") => {}
            _ => {
                if let Some(m) = obj.as_object_mut() {
                    m.remove("status");
                }
            }
        }
    }
    match (g, p) {
        ("", "namespaces") => {
            let name = object::name(obj).to_owned();
            let meta = meta_mut(obj);
            if !meta.get("labels").is_some_and(Value::is_object) {
                meta.insert("labels".into(), json!({}));
            }
            meta["labels"]["kubernetes.io/metadata.name"] = Value::String(name);
        }
        ("apiextensions.k8s.io", _) => crd_status(obj),
        _ => {}
    }
}

/// The status a CRD gets once its names are accepted and it is served.
fn crd_status(crd: &mut Value) {
    let now = now_rfc3339();
    let names = crd["spec"]["names"].clone();
    let stored: Vec<Value> = crd["spec"]["versions"]
        .as_array()
        .map(|vs| {
            vs.iter()
                .filter(|v| v["storage"].as_bool() == Some(true))
                .map(|v| v["name"].clone())
                .collect()
        })
        .unwrap_or_default();
    crd["status"] = json!({
        "acceptedNames": names,
        "storedVersions": stored,
        "conditions": [
            {"type": "NamesAccepted", "status": "True", "reason": "NoConflicts", "message": "no conflicts found", "lastTransitionTime": now},
            {"type": "Established", "status": "True", "reason": "InitialNamesAccepted", "message": "the initial names have been accepted", "lastTransitionTime": now},
        ]
    });
}

fn register_crd(st: &mut State, obj: &Value) {
    if let Ok(r) = resources::from_crd(obj) {
        let key = r.key();
        let changed = st
            .registry
            .get_key(&key)
            .is_none_or(|old| old.schemas != r.schemas);
        if changed {
            st.recoerce(&key, |v| crate::intake::coerce_stored(&r, v));
        }
        st.registry.insert(r);
        st.follow_up(FollowUp::ServedApisChanged);
    }
}

/// Creates an object (POST on a collection). `early`: what
/// `admission::early` did before the state lock was taken, if anything.
pub(crate) fn create(
    st: &mut State,
    req: &Req<'_>,
    mut obj: Value,
    early: Option<ApiResult<Review>>,
) -> ApiResult<Written> {
    check_identity(req, &mut obj)?;
    let mut name = object::name(&obj).to_owned();
    let generate = obj["metadata"]["generateName"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    if name.is_empty() {
        if generate.is_empty() {
            return Err(ApiError::invalid(
                &req.res.kind,
                req.target(""),
                &[(
                    "metadata.name".into(),
                    "Required value: name or generateName is required".into(),
                )],
            ));
        }
        let prefix: String = generate.chars().take(58).collect();
        name = format!("{prefix}{}", object::name_suffix());
        for _ in 0..8 {
            if st.get(&req.res.storage_key(), req.ns, &name).is_none() {
                break;
            }
            name = format!("{prefix}{}", object::name_suffix());
        }
        meta_mut(&mut obj).insert("name".into(), Value::String(name.clone()));
    }
    if early.is_some() {
        crate::defaults::apply_normalized(&req.res.group, &req.res.plural, &mut obj);
    } else {
        crate::defaults::apply(&req.res.group, &req.res.plural, &mut obj);
    }
    let review = admission::mutate(st, req, None, &mut obj, early)?;
    match (req.res.group.as_str(), req.res.plural.as_str()) {
        ("", "pods") => admission::priority::admit_pod(st, req, &mut obj)?,
        ("scheduling.k8s.io", "priorityclasses") => {
            admission::priority::admit_class(st, req, &obj)?;
        }
        _ => {}
    }
    // Given before the strategy's step and validation, as kube's storage
    // fills the system fields (a Job's selector is made of the uid).
    meta_mut(&mut obj).insert("uid".into(), Value::String(object::new_uid()));
    allocate(st, req, &name, None, &mut obj)?;
    omit_empty(req, &mut obj);
    validate_all(req, &review, &obj, &name, None)?;
    check_namespace(st, req, &name)?;
    // Admission names a generated object by its prefix, as upstream does.
    let shown = if generate.is_empty() {
        &name
    } else {
        &generate
    };
    let admitted = admission::validate(st, req, &review, None, &obj, shown)?;
    if st.get(&req.res.storage_key(), req.ns, &name).is_some() {
        return Err(ApiError::already_exists(req.target(&name)));
    }
    {
        let meta = meta_mut(&mut obj);
        meta.insert("creationTimestamp".into(), Value::String(now_rfc3339()));
        for f in [
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "resourceVersion",
            "selfLink",
        ] {
            meta.remove(f);
        }
        if req.res.has_generation() {
            meta.insert("generation".into(), json!(1));
        } else {
            meta.remove("generation");
        }
    }
    prepare_create(req, &review, &mut obj);
    if req.dry_run {
        return Ok(Written {
            obj: Arc::new(Obj::new(&req.res.storage_key(), st.rv, &obj)),
            ack: None,
            gone: false,
        });
    }
    if req.res.group == "apiextensions.k8s.io" {
        register_crd(st, &obj);
    }
    let (o, ack) = admitted.store(st, req, &name, Some(obj));
    if req.res.group.is_empty() && req.res.plural == "namespaces" {
        st.follow_up(FollowUp::NamespaceCreated(&name));
    }
    Ok(Written {
        obj: o,
        ack: Some(ack),
        gone: false,
    })
}

/// Which part of an object an update may change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Part {
    /// The main endpoint: everything but `status` when there is a status subresource.
    Main,
    /// `/status`: only `status`.
    Status,
    /// A CertificateSigningRequest's `/approval`: only its conditions.
    Approval,
    /// A pod's `/ephemeralcontainers` (`kubectl debug`): only
    /// `spec.ephemeralContainers`.
    EphemeralContainers,
}

/// The object a PUT of `body` makes of `old`, with the `resourceVersion`
/// precondition; computed without the store's lock (see `update.rs`).
pub(crate) fn replacement(
    req: &Req<'_>,
    old: &Current,
    name: &str,
    mut body: Value,
    part: Part,
    manager: Option<(&str, &str)>,
) -> ApiResult<Value> {
    check_identity(req, &mut body)?;
    let body_name = object::name(&body);
    if body_name.is_empty() {
        meta_mut(&mut body).insert("name".into(), Value::String(name.to_owned()));
    } else if body_name != name {
        return Err(ApiError::bad_request(format!(
            "the name of the object ({body_name}) does not match the name on the URL ({name})"
        )));
    }
    if let Some(rv) = body["metadata"]["resourceVersion"]
        .as_str()
        .filter(|s| !s.is_empty())
        && rv != old.obj.rv.to_string()
    {
        return Err(ApiError::stale(req.target(name)));
    }
    let mut new = merge_parts(req, &old.value, body, part);
    if let Some((manager, api_version)) = manager {
        crate::custom_lists::with(req.res.custom_lists(req.version), || {
            crate::managed::record_update(&old.value, &mut new, manager, api_version);
        });
    }
    Ok(new)
}

/// Combines an incoming object with the stored one according to `part`, and
/// restores the fields clients cannot change.
pub(crate) fn merge_parts(req: &Req<'_>, old: &Value, body: Value, part: Part) -> Value {
    let mut new = match part {
        Part::Main => {
            let mut n = body;
            if req.res.status {
                match old.get("status") {
                    Some(s) => n["status"] = s.clone(),
                    None => {
                        if let Some(m) = n.as_object_mut() {
                            m.remove("status");
                        }
                    }
                }
            }
            n
        }
        Part::Status => {
            // A status write's body is mostly the stored object with a new
            // status (a patch applied to it, or what a controller read): then
            // it is the result itself, and the stored one is not copied.
            let mut n = if object::same_outside_status(old, &body) {
                body
            } else {
                let mut body = body;
                let mut n = old.clone();
                match body.as_object_mut().and_then(|m| m.remove("status")) {
                    Some(s) => n["status"] = s,
                    None => {
                        if let Some(m) = n.as_object_mut() {
                            m.remove("status");
                        }
                    }
                }
                n
            };
            if req.res.group == "certificates.k8s.io" {
                crate::certificates::keep_approval(old, &mut n);
            }
            n
        }
        Part::Approval => {
            let mut n = old.clone();
            n["status"]["conditions"] = body["status"]["conditions"].clone();
            n
        }
        Part::EphemeralContainers => {
            let mut n = old.clone();
            match body["spec"].get("ephemeralContainers") {
                Some(e) => n["spec"]["ephemeralContainers"] = e.clone(),
                None => {
                    if let Some(spec) = n["spec"].as_object_mut() {
                        spec.remove("ephemeralContainers");
                    }
                }
            }
            n
        }
    };
    let old_meta = &old["metadata"];
    let meta = meta_mut(&mut new);
    for f in [
        "uid",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "generation",
        "namespace",
        "name",
    ] {
        match old_meta.get(f) {
            Some(v) => {
                meta.insert(f.into(), v.clone());
            }
            None => {
                meta.remove(f);
            }
        }
    }
    if meta.get("managedFields").is_none()
        && let Some(mf) = old_meta.get("managedFields")
    {
        meta.insert("managedFields".into(), mf.clone());
    }
    meta.insert(
        "resourceVersion".into(),
        old_meta["resourceVersion"].clone(),
    );
    if req.res.group == "apiextensions.k8s.io" && part == Part::Main {
        crd_status(&mut new);
        if let (Some(a), Some(b)) = (old.get("status"), new.get("status")) {
            // Keep condition timestamps stable so an unchanged CRD stays unchanged.
            if a["acceptedNames"] == b["acceptedNames"]
                && a["storedVersions"] == b["storedVersions"]
            {
                new["status"] = a.clone();
            }
        }
    }
    new
}

/// Stores `new` as the successor of `old`: generation, no-op detection,
/// finalizer-driven deletion.
pub(crate) fn commit_update(
    st: &mut State,
    req: &Req<'_>,
    old: &Current,
    mut new: Value,
) -> ApiResult<Written> {
    let name = object::name(&old.value).to_owned();
    crate::defaults::apply(&req.res.group, &req.res.plural, &mut new);
    let review = admission::mutate(st, req, Some(&old.value), &mut new, None)?;
    if req.res.group == "scheduling.k8s.io" && req.res.plural == "priorityclasses" {
        admission::priority::admit_class(st, req, &new)?;
    }
    allocate(st, req, &name, Some(&old.value), &mut new)?;
    omit_empty(req, &mut new);
    validate_all(req, &review, &new, &name, Some(&old.value))?;
    if old.obj.attrs.deleting {
        let before = object::finalizers(&old.value);
        let mut added: Vec<String> = object::finalizers(&new)
            .into_iter()
            .filter(|f| !before.contains(f))
            .collect();
        if !added.is_empty() {
            // kube's `ValidateNoNewFinalizers`, which prints the set Go's way.
            added.sort();
            added.dedup();
            let list: Vec<String> = added.iter().map(|f| format!("{f:?}")).collect();
            return Err(ApiError::invalid(
                &req.res.kind,
                req.target(&name),
                &[(
                    "metadata.finalizers".into(),
                    format!(
                        "Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{{{}}}",
                        list.join(", ")
                    ),
                )],
            ));
        }
    }
    let admitted = admission::validate(st, req, &review, Some(&old.value), &new, &name)?;
    if req.res.has_generation() {
        let generation = old.value["metadata"]["generation"].as_i64().unwrap_or(1);
        let bump = object::spec_differs(&old.value, &new);
        meta_mut(&mut new).insert(
            "generation".into(),
            json!(if bump { generation + 1 } else { generation }),
        );
    }
    meta_mut(&mut new).insert(
        "resourceVersion".into(),
        old.value["metadata"]["resourceVersion"].clone(),
    );
    if new == old.value {
        return Ok(Written {
            obj: old.obj.clone(),
            ack: None,
            gone: false,
        });
    }
    let deleting = object::is_deleting(&new);
    // A pod in its grace period stays until the kubelet's final delete.
    let gone = deleting && object::finalizers(&new).is_empty() && deletion_grace(&new) == 0;
    if req.dry_run {
        return Ok(Written {
            obj: Arc::new(Obj::new(&req.res.storage_key(), old.obj.rv, &new)),
            ack: None,
            gone,
        });
    }
    if req.res.group == "apiextensions.k8s.io" {
        if gone {
            return Ok(remove_crd(st, req, &name));
        }
        register_crd(st, &new);
    }
    let (o, ack) = admitted.store(st, req, &name, (!gone).then_some(new));
    Ok(Written {
        obj: o,
        ack: Some(ack),
        gone,
    })
}

/// Deletes a CRD with all its custom resources.
fn remove_crd(st: &mut State, req: &Req<'_>, name: &str) -> Written {
    if let Some(crd) = st.get(&req.res.storage_key(), req.ns, name)
        && let Ok(r) = resources::from_crd(&crd.value())
    {
        let key = r.key();
        for o in st.list(&key, None) {
            st.write(&key, &o.attrs.namespace, &o.attrs.name, None);
        }
        st.registry.remove(&key);
        st.follow_up(FollowUp::ServedApisChanged);
    }
    let (o, ack) = st.write(&req.res.storage_key(), req.ns, name, None);
    Written {
        obj: o,
        ack: Some(ack),
        gone: true,
    }
}

/// Deletes an object, or marks it for deletion when finalizers remain.
pub(crate) fn delete(
    st: &mut State,
    req: &Req<'_>,
    name: &str,
    opts: &DeleteOptions,
) -> ApiResult<Written> {
    let old = st
        .get(&req.res.storage_key(), req.ns, name)
        .ok_or_else(|| ApiError::not_found(req.target(name)))?;
    if let Some(uid) = &opts.uid
        && **uid != *old.attrs.uid
    {
        return Err(ApiError::conflict(
            req.target(name),
            &format!(
                "Precondition failed: UID in precondition: {uid}, UID in object meta: {}",
                old.attrs.uid
            ),
        ));
    }
    if let Some(rv) = &opts.resource_version
        && *rv != old.rv.to_string()
    {
        return Err(ApiError::conflict(
            req.target(name),
            &format!(
                "Precondition failed: ResourceVersion in precondition: {rv}, ResourceVersion in object meta: {}",
                old.rv
            ),
        ));
    }
    let is_namespace = req.res.group.is_empty() && req.res.plural == "namespaces";
    if is_namespace && PROTECTED_NAMESPACES.contains(&name) {
        return Err(ApiError::forbidden(
            req.target(name),
            "this namespace may not be deleted",
        ));
    }
    if req.res.group == "scheduling.k8s.io"
        && req.res.plural == "priorityclasses"
        && admission::priority::is_system_class(name)
    {
        return Err(ApiError::forbidden(
            req.target(name),
            "this is a system priority class and cannot be deleted",
        ));
    }
    let mut new = old.value();
    // `new` is still the stored object here.
    let grace = grace_period(req, &new, opts);
    // A deleting pod's grace period can only shrink; once it is 0 (the
    // kubelet's final delete) the pod goes as soon as no finalizer holds it.
    let graceful = if old.attrs.deleting {
        let current = deletion_grace(&new);
        if grace < current {
            mark_deleting(&mut new, grace);
        }
        grace.min(current) > 0
    } else {
        grace > 0
    };
    let mut fins = object::finalizers(&new);
    match opts.propagation {
        Propagation::Foreground if !fins.iter().any(|f| f == FOREGROUND) => {
            fins.push(FOREGROUND.into())
        }
        Propagation::Orphan if !fins.iter().any(|f| f == ORPHAN) => fins.push(ORPHAN.into()),
        _ => {}
    }
    if is_namespace {
        new["status"]["phase"] = json!("Terminating");
    }
    if fins.is_empty() && !is_namespace && !graceful {
        if req.dry_run {
            return Ok(Written {
                obj: old.clone(),
                ack: None,
                gone: true,
            });
        }
        if req.res.group == "apiextensions.k8s.io" {
            return Ok(remove_crd(st, req, name));
        }
        let (o, ack) = st.write(&req.res.storage_key(), req.ns, name, None);
        return Ok(Written {
            obj: o,
            ack: Some(ack),
            gone: true,
        });
    }
    object::set_finalizers(&mut new, fins);
    if !object::is_deleting(&new) {
        mark_deleting(&mut new, grace);
    }
    if new == old.value() {
        return Ok(Written {
            obj: old,
            ack: None,
            gone: false,
        });
    }
    if req.dry_run {
        return Ok(Written {
            obj: Arc::new(Obj::new(&req.res.storage_key(), old.rv, &new)),
            ack: None,
            gone: false,
        });
    }
    let (o, ack) = st.write(&req.res.storage_key(), req.ns, name, Some(new));
    Ok(Written {
        obj: o,
        ack: Some(ack),
        gone: false,
    })
}
