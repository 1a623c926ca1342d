//! Every request's way in: authentication, then the endpoint its path
//! names (`route.rs`): discovery, OpenAPI and health answered here, a
//! resource handed to `handlers.rs` with its context (`context.rs`).

use std::sync::Arc;

use hyper::body::Incoming;
use hyper::{Method, Request, Response};

use crate::request::{self as rq, Query, RespBody, header};
use crate::route::{Route, route};
use crate::shared::Shared;
use crate::status::{ApiError, ApiResult};
use crate::user::User;
use crate::{discovery, openapi};

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

/// `/healthz`, `/readyz`, `/livez` (`health.rs`): readiness and health
/// report failing storage (500, like kube-apiserver's failed etcd check).
fn health(shared: &Shared, endpoint: &str, check: Option<&str>, q: &Query) -> Response<RespBody> {
    let failure = shared.peek().storage_failure().map(|e| e.to_string());
    let ask = crate::health::Ask {
        endpoint,
        check,
        verbose: q.get("verbose").is_some(),
        exclude: q.all("exclude").collect(),
    };
    let state = crate::health::State {
        storage_failure: failure.as_deref(),
    };
    let (code, text) = crate::health::answer(&ask, &state);
    rq::text_owned(code, text)
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
        Route::Health(endpoint, check) => Ok(health(&shared, endpoint, check.as_deref(), &q)),
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
