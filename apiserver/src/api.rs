//! Routing, authentication and the context every handler gets; the
//! handlers of resources are in `handlers.rs`.

use std::sync::Arc;

use bytes::Bytes;
use hyper::body::Incoming;
use hyper::{Method, Request, Response};
use serde_json::Value;

use crate::intake::{self, FieldValidation, Options};
use crate::represent::{self, Shape};
use crate::request::{self as rq, Query, RespBody};
use crate::resources::Resource;
use crate::reviews::User;
use crate::server::Shared;
use crate::status::{ApiError, ApiResult, Target};
use crate::store::Obj;
use crate::table;
use crate::write::{Req, Written};
use crate::{convert, discovery, object, openapi};

/// How long a write waits to be stored before the client gets a 504.
const DURABILITY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

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
pub(crate) struct ResPath {
    pub(crate) group: String,
    pub(crate) version: String,
    pub(crate) plural: String,
    pub(crate) ns: Option<String>,
    pub(crate) name: Option<String>,
    pub(crate) sub: Option<String>,
    pub(crate) watch: bool,
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
    OpenApiV2,
    OpenApiIndex,
    OpenApi(String),
    NotFound,
}

/// `/healthz`, `/readyz`, `/livez`: `ok`, except that readiness and health
/// report failing storage (500, like kube-apiserver's failed etcd check).
fn health(shared: &Shared, check: &'static str) -> Response<RespBody> {
    if check != "livez"
        && let Some(e) = shared.peek().storage_failure()
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
        ["openapi", "v2"] => Route::OpenApiV2,
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

pub(crate) fn header<'a>(req: &'a Request<Incoming>, name: &str) -> &'a str {
    req.headers()
        .get(name)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
}

/// Who sent `req`: refuses it (`401`) when the server has a token and the
/// request carries neither it nor a service account token this server
/// signed; on loopback without a token, refuses requests addressed to
/// other hosts.
fn authenticate(shared: &Shared, req: &Request<Incoming>) -> ApiResult<User> {
    let bearer = header(req, "authorization")
        .strip_prefix("Bearer ")
        .map(str::trim)
        .filter(|t| !t.is_empty());
    let admin = match (&shared.token, bearer) {
        (Some(token), Some(t)) => token.matches(t),
        (Some(_), None) => false,
        (None, _) => true,
    };
    // Only what looks like a JSON Web Token is checked for a signature.
    let account = match bearer {
        Some(t) if !(admin && shared.token.is_some()) && t.matches('.').count() == 2 => {
            shared.service_account(t, crate::satoken::ISSUER).ok()
        }
        _ => None,
    };
    if shared.token.is_none() {
        // No token means a loopback listener: only clients on this machine
        // can connect, but a web page can make a browser send requests to
        // a name it controls, resolved to 127.0.0.1 (DNS rebinding). Such
        // requests carry that name in `Host`.
        crate::access::check_loopback_host(req.uri(), req.headers().get(hyper::header::HOST))?;
    }
    match account {
        Some(sa) => Ok(User::ServiceAccount(sa)),
        None if admin => Ok(User::Admin),
        None => Err(ApiError::unauthorized()),
    }
}

async fn dispatch(shared: Arc<Shared>, req: Request<Incoming>) -> ApiResult<Response<RespBody>> {
    let user = authenticate(&shared, &req)?;
    let path = req.uri().path().to_owned();
    let q = Query::parse(req.uri().query());
    let get = req.method() == Method::GET;
    let accept = header(&req, "accept").to_owned();
    match route(&path) {
        Route::Text(t) => Ok(health(&shared, t)),
        Route::Version if get => Ok(rq::json(200, &discovery::version())),
        Route::Api | Route::Apis if get && discovery::aggregated(&accept).is_some() => {
            let version = discovery::aggregated(&accept).unwrap_or("v2");
            let core = route(&path) == Route::Api;
            let doc = discovery::aggregated_list(&shared.peek().registry, core, version);
            Ok(rq::json_typed(
                200,
                &doc,
                &format!(
                    "application/json;g=apidiscovery.k8s.io;v={version};as=APIGroupDiscoveryList"
                ),
            ))
        }
        Route::Api if get => Ok(rq::json(200, &discovery::api_versions(&shared.server_addr))),
        Route::Apis if get => Ok(rq::json(
            200,
            &discovery::group_list(&shared.peek().registry),
        )),
        Route::Group(g) if get => discovery::group(&shared.peek().registry, &g)
            .map(|v| rq::json(200, &v))
            .ok_or_else(|| ApiError::not_found_path(&path)),
        Route::ResourceList(g, v) if get => {
            discovery::resource_list(&shared.peek().registry, &g, &v)
                .map(|v| rq::json(200, &v))
                .ok_or_else(|| ApiError::not_found_path(&path))
        }
        Route::Res(rp) => crate::handlers::resource(shared, req, rp, q, &path, user).await,
        Route::OpenApiV2 if get => {
            let doc = openapi::v2(&shared);
            if accept.contains("protobuf") {
                Ok(rq::bytes_typed(
                    200,
                    openapi::v2_protobuf(&doc),
                    "application/com.github.proto-openapi.spec.v2.v1.0+protobuf",
                ))
            } else {
                Ok(rq::json(200, &doc))
            }
        }
        Route::OpenApiIndex if get => Ok(rq::json(200, &openapi::index(&shared))),
        Route::OpenApi(gv) if get => openapi::group_version(&shared, &gv)
            .map(|v| rq::json(200, &v))
            .ok_or_else(|| ApiError::not_found_path(&path)),
        Route::Version
        | Route::Api
        | Route::Apis
        | Route::Group(_)
        | Route::ResourceList(..)
        | Route::OpenApiV2
        | Route::OpenApiIndex
        | Route::OpenApi(_) => Err(ApiError::new(
            405,
            "MethodNotAllowed",
            "the server does not allow this method on the requested resource",
        )),
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
    pub(crate) shape: Shape,
    pub(crate) user: User,
    /// `Warning` headers for the response (unknown fields dropped, say).
    pub(crate) warnings: std::sync::Mutex<Vec<String>>,
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

    /// The object bytes in the requested version (CRDs can serve several;
    /// HorizontalPodAutoscaler is converted).
    pub(crate) fn render(&self, o: &Obj) -> Bytes {
        represent::object_bytes(&self.res, &self.version, o)
    }

    /// Adds `Warning` headers for the response.
    pub(crate) fn warn(&self, warnings: impl IntoIterator<Item = String>) {
        self.warnings
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .extend(warnings);
    }

    pub(crate) fn respond(&self, code: u16, o: &Obj) -> Response<RespBody> {
        match self.shape {
            Shape::Table => {
                let t = table::table(
                    &self.res,
                    std::iter::once(&o.value),
                    Some(o.rv.to_string()),
                    None,
                    true,
                );
                rq::json(code, &t)
            }
            Shape::Metadata => rq::json(code, &represent::partial(&o.value)),
            Shape::Object => rq::json_bytes(code, self.render(o)),
        }
    }

    /// A request object from its body: decoded, with `apiVersion` and
    /// `kind` defaulted from the URL, converted to its stored version and
    /// pruned of unknown fields as `fieldValidation` says.
    pub(crate) fn intake(&self, ct: &str, body: &[u8], options: Options) -> ApiResult<Value> {
        let fv = FieldValidation::parse(&self.q, options)?;
        let mut v = rq::decode_body_as(ct, body, Some((&self.res, &self.version)))?;
        intake::default_type_meta(&self.res, &self.version, &mut v);
        let unknown = intake::prune(&self.res, &self.version, &mut v);
        self.warn(intake::body_outcome(
            &self.res,
            &self.version,
            fv,
            &unknown,
        )?);
        Ok(convert::from_version(&self.res, &self.version, v))
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
