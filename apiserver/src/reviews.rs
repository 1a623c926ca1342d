//! The questions a client asks the server about access and identity,
//! answered at once and never stored: `SelfSubjectAccessReview`,
//! `SubjectAccessReview`, `LocalSubjectAccessReview` and
//! `SelfSubjectRulesReview` (`kubectl auth can-i`), `SelfSubjectReview`
//! (`kubectl auth whoami`), `TokenReview`; and the token request
//! subresource of service accounts (`kubectl create token`).
//!
//! There is no authorization here: whoever the server lets in may do
//! everything, so every access review is allowed, and the rules review
//! lists one rule allowing everything.

use hyper::Response;
use serde_json::{Value, json};

use crate::context::Ctx;
use crate::intake::Options;
use crate::request::{self as rq, RespBody};
use crate::satoken;
use crate::status::{ApiError, ApiResult};
use crate::user::User;

const ALLOWED: &str = "windlass has no authorization: every request it lets in is allowed";

/// `POST` of a review: the body, with its answer in `status`.
pub(crate) fn create(ctx: &Ctx, ct: &str, body: &[u8]) -> ApiResult<Response<RespBody>> {
    let mut v = ctx.intake(ct, body, Options::Create)?;
    if v["kind"].as_str() != Some(ctx.res.kind.as_str()) {
        return Err(ApiError::bad_request(format!(
            "the API version in the data ({}) does not match the expected API version ({}) or the kind ({}) is not {}",
            v["apiVersion"].as_str().unwrap_or_default(),
            ctx.res.api_version(&ctx.version),
            v["kind"].as_str().unwrap_or_default(),
            ctx.res.kind
        )));
    }
    if !v["metadata"].is_object() {
        v["metadata"] = json!({});
    }
    v["metadata"]["creationTimestamp"] = Value::Null;
    v["status"] = match ctx.res.kind.as_str() {
        "SelfSubjectAccessReview" | "SubjectAccessReview" | "LocalSubjectAccessReview" => {
            if !v["spec"]["resourceAttributes"].is_object()
                && !v["spec"]["nonResourceAttributes"].is_object()
            {
                return Err(ApiError::invalid(
                    &ctx.res.kind,
                    ctx.target(""),
                    &[(
                        "spec.resourceAttributes".into(),
                        "Invalid value: \"null\": exactly one of nonResourceAttributes or resourceAttributes must be specified".into(),
                    )],
                ));
            }
            json!({"allowed": true, "reason": ALLOWED})
        }
        "SelfSubjectRulesReview" => json!({
            "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}],
            "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
            "incomplete": false,
        }),
        "SelfSubjectReview" => json!({"userInfo": ctx.user.info()}),
        "TokenReview" => token_review(ctx, &v),
        other => {
            return Err(ApiError::internal(format!(
                "no review is answered for {other}"
            )));
        }
    };
    Ok(rq::json(201, &v))
}

fn token_review(ctx: &Ctx, review: &Value) -> Value {
    let token = review["spec"]["token"].as_str().unwrap_or_default();
    let wanted: Vec<String> = review["spec"]["audiences"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|x| x.as_str().map(str::to_owned))
                .collect()
        })
        .filter(|a: &Vec<String>| !a.is_empty())
        .unwrap_or_else(|| vec![satoken::ISSUER.into()]);
    let mut last_error = "invalid bearer token".to_owned();
    for audience in &wanted {
        match ctx.shared.service_account(token, audience) {
            Ok(sa) => {
                return json!({"authenticated": true,
                    "user": User::ServiceAccount(sa).info(), "audiences": [audience]});
            }
            Err(e) => last_error = e,
        }
    }
    json!({"authenticated": false, "error": last_error})
}

/// `POST serviceaccounts/<name>/token`: a `TokenRequest` answered with a
/// token signed for that service account.
pub(crate) async fn token_request(
    ctx: &Ctx,
    name: &str,
    ct: &str,
    body: &[u8],
) -> ApiResult<Response<RespBody>> {
    let mut v = if body.iter().all(u8::is_ascii_whitespace) {
        json!({})
    } else {
        rq::decode_body_as(ct, body, None)?
    };
    if !v.is_object() {
        return Err(ApiError::bad_request(
            "the request body must be a TokenRequest object",
        ));
    }
    let sa = ctx
        .shared
        .lock()
        .get("/serviceaccounts", &ctx.ns, name)
        .ok_or_else(|| ApiError::not_found(ctx.target(name)))?;
    let seconds = match &v["spec"]["expirationSeconds"] {
        Value::Null => 3600,
        x => x.as_i64().unwrap_or(0),
    };
    let target = crate::status::Target {
        group: "authentication.k8s.io",
        resource: "tokenrequests",
        name,
    };
    if seconds < 600 {
        return Err(ApiError::invalid(
            "TokenRequest",
            target,
            &[(
                "spec.expirationSeconds".into(),
                format!(
                    "Invalid value: {seconds}: may not specify a duration less than 10 minutes"
                ),
            )],
        ));
    }
    if seconds > 1 << 32 {
        return Err(ApiError::invalid(
            "TokenRequest",
            target,
            &[(
                "spec.expirationSeconds".into(),
                format!(
                    "Invalid value: {seconds}: may not specify a duration larger than 2^32 seconds"
                ),
            )],
        ));
    }
    let audiences: Vec<String> = match v["spec"]["audiences"].as_array() {
        Some(a) if !a.is_empty() => a
            .iter()
            .filter_map(|x| x.as_str().map(str::to_owned))
            .collect(),
        _ => vec![satoken::ISSUER.into()],
    };
    let now = crate::time::now_secs();
    let uid = &sa.attrs.uid;
    let claims = satoken::claims(&ctx.ns, name, uid, &audiences, now, seconds);
    let token = ctx.shared.sa_key.sign(&claims);
    v["apiVersion"] = json!("authentication.k8s.io/v1");
    v["kind"] = json!("TokenRequest");
    v["metadata"] = json!({"name": name, "namespace": ctx.ns, "creationTimestamp": null});
    v["spec"]["audiences"] = json!(audiences);
    v["spec"]["expirationSeconds"] = json!(seconds);
    if v["spec"].get("boundObjectRef").is_none() {
        v["spec"]["boundObjectRef"] = Value::Null;
    }
    v["status"] = json!({"token": token,
        "expirationTimestamp": crate::time::format_rfc3339(now + seconds)});
    Ok(rq::json(201, &v))
}
