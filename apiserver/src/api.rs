//! Routing and the HTTP handlers for every endpoint.

use std::sync::Arc;

use bytes::Bytes;
use hyper::body::Incoming;
use hyper::{Method, Request, Response};
use serde_json::{Value, json};

use crate::filter::Filter;
use crate::list::obj_key;
use crate::object;
use crate::patch::{self, PatchKind};
use crate::request::{self as rq, Query, RespBody};
use crate::resources::Resource;
use crate::server::Shared;
use crate::ssa;
use crate::status::{ApiError, ApiResult, Target};
use crate::store::{Obj, State};
use crate::table;
use crate::update::{self, Next};
use crate::write::{self, DeleteOptions, Part, Propagation, Req, Written};
use crate::{discovery, limits, list, nesting, openapi, subresource, watch, yaml};

/// How long a write waits to be stored before the client gets a 504.
const DURABILITY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// Creates `default`, `kube-system`, `kube-public` and `kube-node-lease`
/// (where kubelets keep their heartbeat Leases) if missing, as a cluster's
/// system namespaces controller does.
pub(crate) fn ensure_system_namespaces(st: &mut State) {
    let Some(res) = st.registry.get_key("/namespaces").cloned() else {
        return;
    };
    for ns in ["default", "kube-system", "kube-public", "kube-node-lease"] {
        if st.get("/namespaces", "", ns).is_none() {
            let req = Req {
                res: &res,
                version: "v1",
                ns: "",
                dry_run: false,
            };
            let obj = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}});
            if let Err(e) = write::create(st, &req, obj) {
                tracing::error!(namespace = ns, error = %e.message, "cannot create system namespace");
            }
        }
    }
}

/// Entry point for every request.
pub(crate) async fn handle(shared: Arc<Shared>, req: Request<Incoming>) -> Response<RespBody> {
    let method = req.method().clone();
    let path = req.uri().path().to_owned();
    match dispatch(shared, req).await {
        Ok(r) => r,
        Err(e) => {
            tracing::debug!(%method, path, code = e.code, reason = e.reason, message = %e.message, "request failed");
            rq::error(&e)
        }
    }
}

/// A parsed resource URL.
#[derive(Debug, Default, PartialEq)]
struct ResPath {
    group: String,
    version: String,
    plural: String,
    ns: Option<String>,
    name: Option<String>,
    sub: Option<String>,
    watch: bool,
}

#[derive(Debug, PartialEq)]
enum Route {
    Text(&'static str),
    Version,
    Api,
    Apis,
    Group(String),
    ResourceList(String, String),
    Res(ResPath),
    OpenApiIndex,
    OpenApi(String),
    NotFound,
}

/// `/healthz`, `/readyz`, `/livez`: `ok`, except that readiness and health
/// report failing storage (500, like kube-apiserver's failed etcd check).
fn health(shared: &Shared, check: &'static str) -> Response<RespBody> {
    if check != "livez"
        && let Some(e) = shared.lock().storage_failure()
    {
        return rq::text_owned(
            500,
            format!("[-]storage failed: {e}\n{check} check failed\n"),
        );
    }
    rq::text(200, "ok")
}

fn route(path: &str) -> Route {
    let segs: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    match segs.as_slice() {
        ["healthz", ..] => Route::Text("healthz"),
        ["readyz", ..] => Route::Text("readyz"),
        ["livez", ..] => Route::Text("livez"),
        ["version"] => Route::Version,
        ["openapi", "v3"] => Route::OpenApiIndex,
        ["openapi", "v3", rest @ ..] => Route::OpenApi(rest.join("/")),
        ["api"] => Route::Api,
        ["apis"] => Route::Apis,
        ["api", v] => Route::ResourceList(String::new(), (*v).into()),
        ["apis", g] => Route::Group((*g).into()),
        ["apis", g, v] => Route::ResourceList((*g).into(), (*v).into()),
        ["api", v, rest @ ..] => res_path("", v, rest),
        ["apis", g, v, rest @ ..] => res_path(g, v, rest),
        _ => Route::NotFound,
    }
}

fn res_path(group: &str, version: &str, rest: &[&str]) -> Route {
    let (watch, rest) = match rest {
        ["watch", r @ ..] => (true, r),
        r => (false, r),
    };
    let s = |x: &&str| Some((*x).to_owned());
    let (plural, ns, name, sub) = match rest {
        [r] => (*r, None, None, None),
        ["namespaces", n, sub @ ("status" | "finalize")] => ("namespaces", None, s(n), s(sub)),
        ["namespaces", ns, r] => (*r, s(ns), None, None),
        [r, n] => (*r, None, s(n), None),
        ["namespaces", ns, r, n] => (*r, s(ns), s(n), None),
        [r, n, sub] => (*r, None, s(n), s(sub)),
        ["namespaces", ns, r, n, sub] => (*r, s(ns), s(n), s(sub)),
        _ => return Route::NotFound,
    };
    Route::Res(ResPath {
        group: group.into(),
        version: version.into(),
        plural: plural.into(),
        ns,
        name,
        sub,
        watch,
    })
}

fn header<'a>(req: &'a Request<Incoming>, name: &str) -> &'a str {
    req.headers()
        .get(name)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
}

async fn dispatch(shared: Arc<Shared>, req: Request<Incoming>) -> ApiResult<Response<RespBody>> {
    match &shared.token {
        Some(token) => {
            let auth = header(&req, "authorization");
            if !auth
                .strip_prefix("Bearer ")
                .is_some_and(|t| token.matches(t.trim()))
            {
                return Err(ApiError::unauthorized());
            }
        }
        // No token means a loopback listener: only clients on this machine
        // can connect, but a web page can make a browser send requests to
        // a name it controls, resolved to 127.0.0.1 (DNS rebinding). Such
        // requests carry that name in `Host`.
        None => {
            crate::access::check_loopback_host(req.uri(), req.headers().get(hyper::header::HOST))?
        }
    }
    let path = req.uri().path().to_owned();
    let q = Query::parse(req.uri().query());
    let get = req.method() == Method::GET;
    match route(&path) {
        Route::Text(t) => Ok(health(&shared, t)),
        Route::Version if get => Ok(rq::json(200, &discovery::version())),
        Route::Api if get => Ok(rq::json(200, &discovery::api_versions(&shared.server_addr))),
        Route::Apis if get => Ok(rq::json(
            200,
            &discovery::group_list(&shared.lock().registry),
        )),
        Route::Group(g) if get => discovery::group(&shared.lock().registry, &g)
            .map(|v| rq::json(200, &v))
            .ok_or_else(|| ApiError::not_found_path(&path)),
        Route::ResourceList(g, v) if get => {
            discovery::resource_list(&shared.lock().registry, &g, &v)
                .map(|v| rq::json(200, &v))
                .ok_or_else(|| ApiError::not_found_path(&path))
        }
        Route::Res(rp) => resource(shared, req, rp, q, &path).await,
        Route::OpenApiIndex => Ok(rq::json(200, &openapi::index(&shared.lock().registry))),
        Route::OpenApi(gv) => openapi::group_version(&shared.lock().registry, &gv)
            .map(|v| rq::json(200, &v))
            .ok_or_else(|| ApiError::not_found_path(&path)),
        Route::Version | Route::Api | Route::Apis | Route::Group(_) | Route::ResourceList(..) => {
            Err(ApiError::new(
                405,
                "MethodNotAllowed",
                "the server does not allow this method on the requested resource",
            ))
        }
        Route::NotFound => Err(ApiError::not_found_path(&path)),
    }
}

/// Common context of a request on a resource.
pub(crate) struct Ctx {
    pub(crate) shared: Arc<Shared>,
    pub(crate) res: Arc<Resource>,
    pub(crate) version: String,
    pub(crate) ns: String,
    pub(crate) q: Query,
    pub(crate) table: bool,
}

impl Ctx {
    pub(crate) fn req(&self) -> Req<'_> {
        Req {
            res: &self.res,
            version: &self.version,
            ns: &self.ns,
            dry_run: self.q.get("dryRun") == Some("All"),
        }
    }

    pub(crate) fn target<'a>(&'a self, name: &'a str) -> Target<'a> {
        Target {
            group: &self.res.group,
            resource: &self.res.plural,
            name,
        }
    }

    /// The object bytes with the requested apiVersion (CRDs can serve several).
    pub(crate) fn render(&self, o: &Obj) -> Bytes {
        let want = self.res.api_version(&self.version);
        if o.value["apiVersion"].as_str().is_none_or(|a| a == want) {
            return o.bytes.clone();
        }
        let mut v = o.value.clone();
        v["apiVersion"] = json!(want);
        Bytes::from(serde_json::to_vec(&v).expect("JSON values serialize"))
    }

    pub(crate) fn respond(&self, code: u16, o: &Obj) -> Response<RespBody> {
        if self.table {
            let t = table::table(
                &self.res,
                std::iter::once(&o.value),
                Some(o.rv.to_string()),
                None,
                true,
            );
            return rq::json(code, &t);
        }
        rq::json_bytes(code, self.render(o))
    }

    /// Waits for durability, wakes GC when it may have work, and responds.
    /// A write not durable within [`DURABILITY_TIMEOUT`] gets a 504.
    pub(crate) async fn finish(&self, w: Written, code: u16) -> ApiResult<Response<RespBody>> {
        if let Some(ack) = w.ack {
            match tokio::time::timeout(DURABILITY_TIMEOUT, ack).await {
                Ok(Ok(Ok(()))) => {}
                Ok(Ok(Err(e))) => return Err(ApiError::internal(e)),
                Ok(Err(_)) => {
                    return Err(ApiError::internal(
                        "storage writer stopped before acknowledging the write",
                    ));
                }
                // As the real server's "request did not complete within the
                // allowed duration": the outcome is unknown to the client.
                Err(_) => {
                    return Err(ApiError::timeout(format!(
                        "the write was not stored within {}s (storage is failing or overloaded); it may still be applied",
                        DURABILITY_TIMEOUT.as_secs()
                    )));
                }
            }
            let v = &w.obj.value;
            if w.gone || object::is_deleting(v) || !object::owners(v).is_empty() {
                self.shared.gc.notify_one();
            }
        }
        Ok(self.respond(code, &w.obj))
    }
}

async fn resource(
    shared: Arc<Shared>,
    req: Request<Incoming>,
    rp: ResPath,
    q: Query,
    path: &str,
) -> ApiResult<Response<RespBody>> {
    let res = shared
        .lock()
        .registry
        .lookup(&rp.group, &rp.version, &rp.plural)
        .cloned()
        .ok_or_else(|| ApiError::not_found_path(path))?;
    if res.namespaced != rp.ns.is_some()
        && (rp.name.is_some() || (!res.namespaced && rp.ns.is_some()))
    {
        return Err(ApiError::not_found_path(path));
    }
    let table = rq::wants_table(header(&req, "accept"));
    let ctx = Ctx {
        shared,
        version: rp.version.clone(),
        ns: rp.ns.clone().unwrap_or_default(),
        res,
        q,
        table,
    };
    let method = req.method().clone();
    let ct = header(&req, "content-type").to_owned();
    let ua = header(&req, "user-agent").to_owned();
    let body = if matches!(
        method,
        Method::POST | Method::PUT | Method::PATCH | Method::DELETE
    ) {
        if let Err(b) = ctx.shared.lock().check_writable() {
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
    let watching = rp.watch || ctx.q.flag("watch");
    match (&method, rp.name.as_deref(), rp.sub.as_deref()) {
        (&Method::GET, None, None) if watching => {
            let f = Filter::parse(&ctx.res, &ctx.q, rp.ns.as_deref(), None)?;
            watch::serve(
                &ctx.shared,
                ctx.res.clone(),
                &ctx.version,
                f,
                &ctx.q,
                ctx.table,
            )
        }
        (&Method::GET, Some(name), None) if watching => {
            let f = Filter::parse(&ctx.res, &ctx.q, rp.ns.as_deref(), Some(name))?;
            watch::serve(
                &ctx.shared,
                ctx.res.clone(),
                &ctx.version,
                f,
                &ctx.q,
                ctx.table,
            )
        }
        (&Method::GET, None, None) => list::list(&ctx, rp.ns.as_deref()),
        (&Method::GET, Some(name), None) => get(&ctx, name),
        (&Method::GET, Some(name), Some("status")) if ctx.res.status => get(&ctx, name),
        (&Method::POST, None, None) => {
            let mut obj = rq::decode_body(&ct, &body)?;
            if obj.is_object() {
                ssa::record_update(
                    &Value::Null,
                    &mut obj,
                    &field_manager(&ctx.q, &ua),
                    &ctx.res.api_version(&ctx.version),
                );
            }
            let w = write::create(&mut ctx.shared.lock(), &ctx.req(), obj)?;
            ctx.finish(w, 201).await
        }
        (&Method::PUT, Some(name), sub @ (None | Some("status"))) => {
            let part = object_part(sub, ctx.res.status, path)?;
            let obj = rq::decode_body(&ct, &body)?;
            let (manager, api_version) = (
                field_manager(&ctx.q, &ua),
                ctx.res.api_version(&ctx.version),
            );
            let (w, _) = update::guaranteed(&ctx, name, |old| {
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
        (&Method::PATCH, Some(name), sub @ (None | Some("status"))) => {
            let part = object_part(sub, ctx.res.status, path)?;
            patch_object(&ctx, name, &ct, &body, part, &ua).await
        }
        (&Method::DELETE, Some(name), None) => {
            let opts = delete_options(&ctx.q, &body)?;
            let w = write::delete(&mut ctx.shared.lock(), &ctx.req(), name, &opts)?;
            ctx.finish(w, 200).await
        }
        (&Method::DELETE, None, None) => delete_collection(&ctx, rp.ns.as_deref(), &body).await,
        (m, Some(name), Some("scale")) if ctx.res.scale.is_some() => {
            subresource::scale(&ctx, m, name, &ct, &body).await
        }
        (&Method::POST, Some(name), Some("binding"))
            if ctx.res.group.is_empty() && ctx.res.plural == "pods" =>
        {
            subresource::binding(&ctx, name, &ct, &body).await
        }
        (_, _, Some(_)) => Err(ApiError::not_found_path(path)),
        (m, _, None) => Err(ApiError::method_not_supported(ctx.target(""), m.as_str())),
    }
}

fn get(ctx: &Ctx, name: &str) -> ApiResult<Response<RespBody>> {
    let o = ctx
        .shared
        .lock()
        .get(&ctx.res.key(), &ctx.ns, name)
        .ok_or_else(|| ApiError::not_found(ctx.target(name)))?;
    Ok(ctx.respond(200, &o))
}

fn delete_options(q: &Query, body: &[u8]) -> ApiResult<DeleteOptions> {
    let mut opts = DeleteOptions::default();
    let b: Value = if body.iter().all(u8::is_ascii_whitespace) {
        json!({})
    } else {
        serde_json::from_slice(body)
            .map_err(|e| ApiError::bad_request(format!("invalid DeleteOptions: {e}")))?
    };
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

async fn delete_collection(
    ctx: &Ctx,
    ns: Option<&str>,
    body: &[u8],
) -> ApiResult<Response<RespBody>> {
    let filter = Filter::parse(&ctx.res, &ctx.q, ns, None)?;
    let opts = delete_options(&ctx.q, body)?;
    let mut items = Vec::new();
    let mut last_ack = None;
    {
        let mut st = ctx.shared.lock();
        for o in st.list(&ctx.res.key(), filter.namespace()) {
            if !filter.matches(&o.value) {
                continue;
            }
            let (ns, name) = obj_key(&o);
            let (ns, name) = (ns.to_owned(), name.to_owned());
            let req = Req {
                ns: &ns,
                ..ctx.req()
            };
            let w = write::delete(&mut st, &req, &name, &opts)?;
            items.push(w.obj.value.clone());
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
    let (manager, api_version) = (field_manager(&ctx.q, ua), ctx.res.api_version(&ctx.version));
    let req = ctx.req();
    // Patched without the store's lock; `guaranteed` commits the result if
    // the object is still the one it was computed from, or patches again.
    let (w, code) = update::guaranteed(ctx, name, |existing| {
        if let Some(applier) = apply_manager {
            let existing = existing.map(|o| &**o);
            return ssa::apply(
                &req,
                name,
                existing,
                patch.clone(),
                applier,
                ctx.q.flag("force"),
                part,
            );
        }
        let old = existing.ok_or_else(|| ApiError::not_found(ctx.target(name)))?;
        let mut v = old.value.clone();
        match kind {
            PatchKind::Merge => patch::merge(&mut v, &patch),
            PatchKind::Json => json_patched(&mut v, patch.clone())?,
            PatchKind::Strategic => {
                patch::strategic(&mut v, &patch).map_err(ApiError::bad_request)?
            }
            PatchKind::Apply => unreachable!("handled above"),
        }
        if let Some(rv) = v["metadata"]["resourceVersion"].as_str()
            && rv != old.rv.to_string()
        {
            return Err(ApiError::stale(ctx.target(name)));
        }
        write::check_identity(&req, &mut v)?;
        if object::name(&v) != name {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({}) does not match the name on the URL ({name})",
                object::name(&v)
            )));
        }
        let mut new = write::merge_parts(&req, &old.value, v, part);
        ssa::record_update(&old.value, &mut new, &manager, &api_version);
        Ok(Next::Update(new))
    })?;
    ctx.finish(w, code).await
}

/// Applies a JSON patch to `v`, with kube-apiserver's status codes: 400
/// for a patch that is not a list of operations, 413 past 10,000
/// operations, 422 for an operation that fails or a result nested deeper
/// than an object may be. On error `v` (which may be nested arbitrarily
/// deep by then) is dropped without recursion.
pub(crate) fn json_patched(v: &mut Value, patch: Value) -> ApiResult<()> {
    let err = match patch::json_patch(v, patch) {
        Ok(()) => match nesting::too_deep(v, nesting::MAX_DEPTH) {
            None => return Ok(()),
            Some(path) => format!(
                "the patched object nests deeper than {} levels at {path}",
                nesting::MAX_DEPTH
            ),
        },
        Err(e @ patch::JsonPatchError::Decode(_)) => {
            return Err(ApiError::bad_request(e.to_string()));
        }
        Err(e @ patch::JsonPatchError::TooManyOperations(_)) => {
            return Err(ApiError::new(413, "RequestEntityTooLarge", e.to_string()));
        }
        Err(e) => e.to_string(),
    };
    nesting::drop(std::mem::take(v));
    Err(ApiError::new(
        422,
        "Invalid",
        format!("the server rejected our request due to an error in our request: {err}"),
    ))
}

/// Which part of an object a request addresses: the object, or its status
/// subresource (a 404 for kinds without one).
fn object_part(sub: Option<&str>, has_status: bool, path: &str) -> Result<Part, ApiError> {
    match sub {
        Some(_) if !has_status => Err(ApiError::not_found_path(path)),
        Some(_) => Ok(Part::Status),
        None => Ok(Part::Main),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes() {
        assert_eq!(route("/api"), Route::Api);
        assert_eq!(
            route("/apis/apps/v1"),
            Route::ResourceList("apps".into(), "v1".into())
        );
        let Route::Res(r) = route("/api/v1/namespaces/d/pods/p/status") else {
            panic!()
        };
        assert_eq!(
            (
                r.plural.as_str(),
                r.ns.as_deref(),
                r.name.as_deref(),
                r.sub.as_deref()
            ),
            ("pods", Some("d"), Some("p"), Some("status"))
        );
        let Route::Res(r) = route("/api/v1/namespaces/d") else {
            panic!()
        };
        assert_eq!(
            (r.plural.as_str(), r.ns, r.name.as_deref()),
            ("namespaces", None, Some("d"))
        );
        let Route::Res(r) = route("/api/v1/watch/namespaces/d/configmaps") else {
            panic!()
        };
        assert!(r.watch);
        assert_eq!(
            (r.plural.as_str(), r.ns.as_deref()),
            ("configmaps", Some("d"))
        );
        let Route::Res(r) = route("/api/v1/namespaces/d/finalize") else {
            panic!()
        };
        assert_eq!(
            (r.plural.as_str(), r.name.as_deref(), r.sub.as_deref()),
            ("namespaces", Some("d"), Some("finalize"))
        );
        assert_eq!(route("/nope"), Route::NotFound);
    }
}
