//! The handlers of requests on resources: get, list and watch, create,
//! update, patch (merge, JSON, strategic, apply), delete and
//! deletecollection, and the subresources that route through them.

use std::sync::Arc;

use bytes::Bytes;
use hyper::body::Incoming;
use hyper::{Method, Request, Response};
use serde_json::{Value, json};

use crate::context::Ctx;
use crate::filter::Filter;
use crate::intake::{self, FieldValidation, Options};
use crate::list::obj_key;
use crate::object;
use crate::patch::{self, PatchKind};
use crate::request::header;
use crate::request::{self as rq, Query, RespBody};
use crate::route::ResPath;
use crate::scope::Req;
use crate::shared::Shared;
use crate::ssa;
use crate::state::{Current, Obj};
use crate::status::ApiError;
use crate::status::ApiResult;
use crate::update::{self, Next};
use crate::user::User;
use crate::write::{self, DeleteOptions, Part};
use crate::{convert, custom_lists, limits, list, managed, represent, subresource, watch, yaml};

/// Serves a request on a resource (or one of its subresources), adding the
/// `Warning` headers its handling asked for.
pub(crate) async fn resource(
    shared: Arc<Shared>,
    req: Request<Incoming>,
    rp: ResPath,
    q: Query,
    path: &str,
    user: User,
) -> ApiResult<Response<RespBody>> {
    let res = shared
        .peek()
        .registry
        .lookup(&rp.group, &rp.version, &rp.plural)
        .cloned()
        .ok_or_else(|| ApiError::not_found_path(path))?;
    if res.namespaced != rp.ns.is_some()
        && (rp.name.is_some() || (!res.namespaced && rp.ns.is_some()))
    {
        return Err(ApiError::not_found_path(path));
    }
    let ctx = Ctx {
        shared,
        version: rp.version.clone(),
        ns: rp.ns.clone().unwrap_or_default(),
        sub: rp.sub.clone().unwrap_or_default(),
        res,
        q,
        shape: represent::shape(header(&req, "accept")),
        user,
        warnings: std::sync::Mutex::new(Vec::new()),
    };
    if ctx.shape == represent::Shape::Table {
        crate::table::RowObject::of(&ctx.q)?;
    }
    let method = req.method().clone();
    let ct = header(&req, "content-type").to_owned();
    let ua = header(&req, "user-agent").to_owned();
    let body = if matches!(
        method,
        Method::POST | Method::PUT | Method::PATCH | Method::DELETE
    ) {
        if let Err(b) = ctx.shared.peek().check_writable() {
            return Err(ApiError::new(
                503,
                "ServiceUnavailable",
                format!(
                    "storage is failing ({}) and {} writes are waiting to be stored: this write was not applied; retry once storage recovers (free disk space, or fix the data directory)",
                    b.failing.unwrap_or_default(),
                    b.writes
                ),
            ));
        }
        rq::read_body(req.into_body(), ctx.shared.request_timeout).await?
    } else {
        Bytes::new()
    };
    let mut resp = serve(&ctx, &method, &rp, &ct, &ua, &body, path).await?;
    let warnings = std::mem::take(&mut *ctx.warnings.lock().unwrap_or_else(|e| e.into_inner()));
    for w in intake::capped(warnings) {
        if let Ok(v) = hyper::header::HeaderValue::from_str(&intake::warning_header(&w)) {
            resp.headers_mut().append("warning", v);
        }
    }
    Ok(resp)
}

async fn serve(
    ctx: &Ctx,
    method: &Method,
    rp: &ResPath,
    ct: &str,
    ua: &str,
    body: &Bytes,
    path: &str,
) -> ApiResult<Response<RespBody>> {
    if ctx.res.create_only {
        return match (method, rp.name.as_deref()) {
            (&Method::POST, None) => crate::reviews::create(ctx, ct, body),
            _ => Err(ApiError::method_not_supported(
                ctx.target(""),
                method.as_str(),
            )),
        };
    }
    let watching = rp.watch || ctx.q.flag("watch");
    let (ct, ua) = (ct.to_owned(), ua.to_owned());
    match (method, rp.name.as_deref(), rp.sub.as_deref()) {
        // A watch of the collection, or of one object by name.
        (&Method::GET, name, None) if watching => {
            let f = Filter::parse(&ctx.res, &ctx.version, &ctx.q, rp.ns.as_deref(), name)?;
            watch::serve(
                &ctx.shared,
                ctx.res.clone(),
                &ctx.version,
                f,
                &ctx.q,
                ctx.shape,
            )
        }
        (&Method::GET, None, None) => list::list(ctx, rp.ns.as_deref()),
        (&Method::GET, Some(name), None) => get(ctx, name),
        (&Method::GET, Some(name), Some(sub)) if object_part(Some(sub), &ctx.res, path).is_ok() => {
            get(ctx, name)
        }
        (&Method::POST, None, None) => {
            let mut obj = ctx.intake(&ct, body, Options::Create)?;
            if ctx.res.group == "certificates.k8s.io" {
                crate::certificates::set_requester(&mut obj, &ctx.user);
            }
            if obj.is_object() {
                custom_lists::with(ctx.res.custom_lists(&ctx.version), || {
                    managed::record_update(
                        &Value::Null,
                        &mut obj,
                        &field_manager(&ctx.q, &ua),
                        &ctx.res.api_version(&ctx.version),
                    );
                });
            }
            // Admission's work that needs no lock is done before it.
            let req = ctx.req();
            let governing = crate::admission::governing(|| ctx.shared.peek(), &req, &obj);
            let early = governing.map(|g| crate::admission::early(&req, g, &mut obj));
            let (w, pending) = {
                let mut st = ctx.shared.lock_for_create();
                let w = write::create(&mut st, &req, obj, early);
                (w, crate::admission::Charges::pending(&st))
            };
            ctx.shared.schedule_charge_flush(pending);
            ctx.finish(w?, 201).await
        }
        (&Method::PUT, Some(name), sub) if sub.is_none() || !matches!(sub, Some("scale")) => {
            let part = object_part(sub, &ctx.res, path)?;
            let obj = ctx.intake(&ct, body, Options::Update)?;
            let (manager, api_version) = (
                field_manager(&ctx.q, &ua),
                ctx.res.api_version(&ctx.version),
            );
            let (w, _) = update::guaranteed(ctx, name, |old| {
                let old = old.ok_or_else(|| ApiError::not_found(ctx.target(name)))?;
                let new = write::replacement(
                    &ctx.req(),
                    old,
                    name,
                    obj.clone(),
                    part,
                    Some((&manager, &api_version)),
                )?;
                Ok(Next::Update(new))
            })?;
            ctx.finish(w, 200).await
        }
        (&Method::PATCH, Some(name), sub) if sub.is_none() || !matches!(sub, Some("scale")) => {
            let part = object_part(sub, &ctx.res, path)?;
            patch_object(ctx, name, &ct, body, part, &ua).await
        }
        (&Method::DELETE, Some(name), None) => {
            let opts = DeleteOptions::read(&ctx.q, &ct, body)?;
            let w = write::delete(&mut ctx.shared.lock(), &ctx.req(), name, &opts)?;
            ctx.finish(w, 200).await
        }
        (&Method::DELETE, None, None) => delete_collection(ctx, rp.ns.as_deref(), &ct, body).await,
        (m, Some(name), Some("scale")) if ctx.res.scale.is_some() => {
            subresource::scale(ctx, m, name, &ct, body).await
        }
        (&Method::POST, Some(name), Some("binding"))
            if ctx.res.group.is_empty() && ctx.res.plural == "pods" =>
        {
            subresource::binding(ctx, name, &ct, body).await
        }
        (&Method::POST, Some(name), Some("eviction"))
            if ctx.res.group.is_empty() && ctx.res.plural == "pods" =>
        {
            crate::eviction::evict(ctx, name, &ct, body).await
        }
        (&Method::POST, Some(name), Some("token"))
            if ctx.res.group.is_empty() && ctx.res.plural == "serviceaccounts" =>
        {
            crate::reviews::token_request(ctx, name, &ct, body).await
        }
        (_, Some(name), Some(sub))
            if ctx.res.group.is_empty()
                && ctx.res.plural == "pods"
                && subresource::is_node_proxied(sub) =>
        {
            Err(subresource::node_proxied(ctx, name, sub))
        }
        (_, _, Some(_)) => Err(ApiError::not_found_path(path)),
        (m, _, None) => Err(ApiError::method_not_supported(ctx.target(""), m.as_str())),
    }
}

fn get(ctx: &Ctx, name: &str) -> ApiResult<Response<RespBody>> {
    let o = ctx
        .shared
        .lock()
        .get(&ctx.res.storage_key(), &ctx.ns, name)
        .ok_or_else(|| ApiError::not_found(ctx.target(name)))?;
    Ok(ctx.respond(200, &o))
}

async fn delete_collection(
    ctx: &Ctx,
    ns: Option<&str>,
    ct: &str,
    body: &[u8],
) -> ApiResult<Response<RespBody>> {
    let filter = Filter::parse(&ctx.res, &ctx.version, &ctx.q, ns, None)?;
    let opts = DeleteOptions::read(&ctx.q, ct, body)?;
    let mut items = Vec::new();
    let mut last_ack = None;
    {
        let mut st = ctx.shared.lock();
        for o in st.list(&ctx.res.storage_key(), filter.namespace()) {
            if !filter.matches(&o) {
                continue;
            }
            let (ns, name) = obj_key(&o);
            let (ns, name) = (ns.to_owned(), name.to_owned());
            let req = Req {
                ns: &ns,
                ..ctx.req()
            };
            let w = write::delete(&mut st, &req, &name, &opts)?;
            items.push(w.obj.value());
            if w.ack.is_some() {
                last_ack = w.ack;
            }
        }
    }
    if let Some(ack) = last_ack {
        ack.await
            .map_err(|_| ApiError::internal("storage writer stopped"))?
            .map_err(ApiError::internal)?;
        ctx.shared.gc.notify_one();
    }
    let rv = ctx.shared.lock().rv;
    Ok(rq::json(
        200,
        &json!({"kind": ctx.res.list_kind(), "apiVersion": ctx.res.api_version(&ctx.version),
            "metadata": {"resourceVersion": rv.to_string()}, "items": items}),
    ))
}

fn field_manager(q: &Query, ua: &str) -> String {
    q.non_empty("fieldManager")
        .map(str::to_owned)
        .unwrap_or_else(|| ua.split('/').next().unwrap_or("unknown").to_owned())
}

async fn patch_object(
    ctx: &Ctx,
    name: &str,
    ct: &str,
    body: &[u8],
    part: Part,
    ua: &str,
) -> ApiResult<Response<RespBody>> {
    let kind = PatchKind::from_content_type(ct).ok_or_else(|| ApiError::unsupported_media(ct))?;
    if kind == PatchKind::Strategic && !ctx.res.builtin {
        return Err(ApiError::unsupported_media(ct));
    }
    let patch: Value = if kind == PatchKind::Apply {
        let v = yaml::from_slice(body).map_err(|e| e.to_api())?;
        limits::check_body_depth(&v)?;
        v
    } else {
        serde_json::from_slice(body)
            .map_err(|e| ApiError::bad_request(format!("error decoding patch: {e}")))?
    };
    let apply_manager = match kind {
        PatchKind::Apply => Some(ctx.q.non_empty("fieldManager").ok_or_else(|| {
            ApiError::bad_request("PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch")
        })?),
        _ => None,
    };
    let fv = FieldValidation::parse(&ctx.q, Options::Patch)?;
    if kind == PatchKind::Apply {
        ctx.warn(intake::apply_patch_repeats(fv, body)?);
        check_applied(ctx, name, &patch)?;
    }
    let (manager, api_version) = (field_manager(&ctx.q, ua), ctx.res.api_version(&ctx.version));
    let req = ctx.req();
    let mut warnings = Vec::new();
    // Patched without the store's lock; `guaranteed` commits the result if
    // the object is still the one it was computed from, or patches again.
    let (w, code) = update::guaranteed(ctx, name, |existing| {
        if let Some(applier) = apply_manager {
            let force = ctx.q.flag("force");
            if convert::needed(&ctx.res, &ctx.version) {
                return apply_converted(ctx, &req, name, existing, &patch, applier, force, part);
            }
            return ssa::apply(&req, name, existing, patch.clone(), applier, force, part);
        }
        let old = existing.ok_or_else(|| ApiError::not_found(ctx.target(name)))?;
        // Patched as the client sees the object: in the requested version.
        let mut v = convert::to_version(&ctx.res, &ctx.version, &old.value);
        match kind {
            PatchKind::Merge => patch::merge(&mut v, &patch),
            PatchKind::Json => patch::json_patched(&mut v, patch.clone())?,
            PatchKind::Strategic => {
                patch::strategic(&mut v, &patch).map_err(ApiError::bad_request)?
            }
            PatchKind::Apply => unreachable!("handled above"),
        }
        if let Some(rv) = v["metadata"]["resourceVersion"].as_str()
            && rv != old.obj.rv.to_string()
        {
            return Err(ApiError::stale(ctx.target(name)));
        }
        intake::default_type_meta(&ctx.res, &ctx.version, &mut v);
        let unknown = intake::coerce(&ctx.res, &ctx.version, &mut v);
        warnings = intake::patch_outcome(fv, &v, &unknown)?;
        write::check_identity(&req, &mut v)?;
        if object::name(&v) != name {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({}) does not match the name on the URL ({name})",
                object::name(&v)
            )));
        }
        let v = convert::from_version(&ctx.res, &ctx.version, v);
        let mut new = write::merge_parts(&req, &old.value, v, part);
        custom_lists::with(ctx.res.custom_lists(&ctx.version), || {
            managed::record_update(&old.value, &mut new, &manager, &api_version);
        });
        Ok(Next::Update(new))
    })?;
    ctx.warn(warnings);
    ctx.finish(w, code).await
}

/// Server-side apply in a version the kind is not stored in (HPA
/// `autoscaling/v1`): as kube does, the stored object is converted to that
/// version, the patch applied to it there, and the result converted back.
#[allow(clippy::too_many_arguments)]
fn apply_converted(
    ctx: &Ctx,
    req: &Req<'_>,
    name: &str,
    existing: Option<&Current>,
    patch: &Value,
    applier: &str,
    force: bool,
    part: Part,
) -> ApiResult<Next> {
    let shown = existing.map(|o| {
        let value = convert::to_version(&ctx.res, &ctx.version, &o.value);
        Current {
            obj: Arc::new(Obj::new(&ctx.res.storage_key(), o.obj.rv, &value)),
            value,
        }
    });
    let back = |v| convert::from_version(&ctx.res, &ctx.version, v);
    Ok(
        match ssa::apply(
            req,
            name,
            shown.as_ref(),
            patch.clone(),
            applier,
            force,
            part,
        )? {
            Next::Create(v) => Next::Create(back(v)),
            Next::Update(v) => Next::Update(back(v)),
        },
    )
}

/// What kube's field manager refuses in an apply patch before applying it:
/// a missing or other `apiVersion` or `kind`, and fields the kind's schema
/// does not have (whatever `fieldValidation` says).
fn check_applied(ctx: &Ctx, name: &str, patch: &Value) -> ApiResult<()> {
    let want = ctx.res.api_version(&ctx.version);
    let av = patch["apiVersion"].as_str().unwrap_or_default();
    if av != want {
        return Err(ApiError::bad_request(format!(
            "Incorrect version specified in apply patch. Specified patch version: {av}, expected: {want}"
        )));
    }
    if patch["kind"].as_str().is_none_or(str::is_empty) {
        return Err(ApiError::bad_request(
            "Object 'Kind' is missing in the request body",
        ));
    }
    let unknown = match ctx.res.schema(&ctx.version) {
        Some(s) if patch["kind"].as_str() == Some(ctx.res.kind.as_str()) => s.unknown_fields(patch),
        _ => vec![],
    };
    if unknown.is_empty() {
        return Ok(());
    }
    // kube answers this with a 500 (kubernetes/kubernetes#122480): it is
    // the client's mistake, so here it is a 400 with kube's words.
    let (group, version) = want.rsplit_once('/').unwrap_or(("", &want));
    let fields: Vec<String> = unknown
        .iter()
        .map(|f| format!(".{f}: field not declared in schema"))
        .collect();
    let detail = if fields.len() == 1 {
        fields[0].clone()
    } else {
        format!("errors:\n  {}", fields.join("\n  "))
    };
    Err(ApiError::bad_request(format!(
        "failed to create typed patch object ({}/{name}; {group}/{version}, Kind={}): {detail}",
        ctx.ns, ctx.res.kind
    )))
}

/// Which part of an object a request addresses: the object, its status
/// subresource, a CertificateSigningRequest's approval, or a pod's
/// ephemeral containers (a 404 for kinds without them).
fn object_part(
    sub: Option<&str>,
    res: &crate::resources::Resource,
    path: &str,
) -> Result<Part, ApiError> {
    match sub {
        None => Ok(Part::Main),
        Some("status") if res.status => Ok(Part::Status),
        Some("approval") if res.group == "certificates.k8s.io" => Ok(Part::Approval),
        Some("ephemeralcontainers") if res.group.is_empty() && res.plural == "pods" => {
            Ok(Part::EphemeralContainers)
        }
        Some(_) => Err(ApiError::not_found_path(path)),
    }
}
