//! The context every handler of a request on a resource gets (`Ctx`): the
//! resource, version and namespace addressed, the query, the response
//! shape, the user; and the common steps of a handler (decoding the body,
//! rendering the object, waiting for durability).

use std::sync::Arc;

use bytes::Bytes;
use hyper::Response;
use serde_json::Value;

use crate::convert;
use crate::intake::{self, FieldValidation, Options};
use crate::represent::{self, Shape};
use crate::request::{self as rq, Query, RespBody};
use crate::resources::Resource;
use crate::scope::Req;
use crate::shared::Shared;
use crate::state::Obj;
use crate::status::{ApiError, ApiResult, Target};
use crate::table;
use crate::user::User;
use crate::write::Written;

/// How long a write waits to be stored before the client gets a 504.
const DURABILITY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// Common context of a request on a resource.
pub(crate) struct Ctx {
    pub(crate) shared: Arc<Shared>,
    pub(crate) res: Arc<Resource>,
    pub(crate) version: String,
    pub(crate) ns: String,
    /// The subresource addressed (`status`, `binding`, ...), empty for the
    /// object itself.
    pub(crate) sub: String,
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
            sub: &self.sub,
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
                    std::iter::once(&o.value()),
                    table::RowObject::of(&self.q).unwrap_or(table::RowObject::Metadata),
                    Some(o.rv.to_string()),
                    None,
                    true,
                );
                rq::json(code, &t)
            }
            Shape::Metadata => rq::json(code, &represent::partial(&o.value())),
            Shape::Object => rq::json_bytes(code, self.render(o)),
        }
    }

    /// A request object from its body: decoded, with `apiVersion` and
    /// `kind` defaulted from the URL, pruned of unknown fields as
    /// `fieldValidation` says, given a custom resource's schema defaults,
    /// and converted to its stored version.
    pub(crate) fn intake(&self, ct: &str, body: &[u8], options: Options) -> ApiResult<Value> {
        let fv = FieldValidation::parse(&self.q, options)?;
        let (mut v, repeated) = intake::decode(ct, body, &self.res, &self.version)?;
        intake::default_type_meta(&self.res, &self.version, &mut v);
        let unknown = intake::coerce(&self.res, &self.version, &mut v);
        let problems = intake::problems(body, &unknown, repeated);
        self.warn(intake::body_outcome(
            &self.res,
            &self.version,
            fv,
            &problems,
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
            let a = &w.obj.attrs;
            if w.gone || a.deleting || !a.owners.is_empty() {
                self.shared.gc.notify_one();
            }
        }
        Ok(self.respond(code, &w.obj))
    }
}
