//! Lists: selectors, paging with continue tokens, resourceVersion semantics.

use std::sync::Arc;

use base64::Engine;
use bytes::Bytes;
use hyper::Response;
use serde_json::json;

use crate::context::Ctx;
use crate::filter::Filter;
use crate::represent::{self, Shape};
use crate::request::{self as rq, RespBody};
use crate::state::{Obj, RvError};
use crate::status::{ApiError, ApiResult};
use crate::table;

/// What a continue token carries: the list revision and the last key returned.
#[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize)]
struct ContinueToken {
    rv: u64,
    ns: String,
    name: String,
}

impl ContinueToken {
    fn encode(&self) -> String {
        base64::engine::general_purpose::STANDARD
            .encode(serde_json::to_vec(self).expect("token serializes"))
    }

    fn decode(s: &str) -> Option<Self> {
        let b = base64::engine::general_purpose::STANDARD.decode(s).ok()?;
        serde_json::from_slice(&b).ok()
    }
}

pub(crate) fn list(ctx: &Ctx, ns: Option<&str>) -> ApiResult<Response<RespBody>> {
    let filter = Filter::parse(&ctx.res, &ctx.version, &ctx.q, ns, None)?;
    let limit = match ctx.q.non_empty("limit") {
        Some(l) => l
            .parse::<usize>()
            .map_err(|_| ApiError::bad_request(format!("invalid limit: {l}")))?,
        None => 0,
    };
    let token = match ctx.q.non_empty("continue") {
        Some(c) => Some(ContinueToken::decode(c).ok_or_else(|| ApiError::bad_request("continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)"))?),
        None => None,
    };
    let rv = ctx.q.non_empty("resourceVersion");
    let rvm = ctx.q.non_empty("resourceVersionMatch");
    if token.is_some() && rv.is_some_and(|r| r != "0") {
        return Err(ApiError::bad_request(
            "specifying resource version is not allowed when using continue",
        ));
    }
    let key = ctx.res.storage_key();
    let (at, objs) = {
        let st = ctx.shared.lock();
        let at = match (&token, rv, rvm) {
            (Some(t), _, _) => t.rv,
            (None, None | Some("0"), None | Some("NotOlderThan")) => st.rv,
            (None, Some(r), m @ (None | Some("NotOlderThan") | Some("Exact"))) => {
                let n: u64 = r
                    .parse()
                    .map_err(|_| ApiError::bad_request(format!("invalid resource version: {r}")))?;
                if n > st.rv {
                    return Err(ApiError::timeout(format!(
                        "Too large resource version: {n}, current: {}",
                        st.rv
                    )));
                }
                if m == Some("Exact") { n } else { st.rv }
            }
            (None, None, Some(_)) => {
                return Err(ApiError::bad_request(
                    "resourceVersionMatch is forbidden unless resourceVersion is provided",
                ));
            }
            (None, _, Some(m)) => {
                return Err(ApiError::bad_request(format!(
                    "unsupported resourceVersionMatch: {m}"
                )));
            }
        };
        let after = token.as_ref().map(|t| (t.ns.clone(), t.name.clone()));
        let objs: Vec<Arc<Obj>> = if at == st.rv {
            let all = st.list(&key, filter.namespace());
            match &after {
                None => all,
                Some(a) => {
                    let start = all.partition_point(|o| obj_key(o) <= (a.0.as_str(), a.1.as_str()));
                    all[start..].to_vec()
                }
            }
        } else {
            match st.snapshot(&key, filter.namespace(), at, after.as_ref()) {
                Ok(v) => v.into_iter().map(|(_, o)| o).collect(),
                Err(RvError::Expired) if token.is_some() => {
                    return Err(ApiError::gone(
                        "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.",
                    ));
                }
                Err(RvError::Expired) => {
                    return Err(ApiError::gone(format!("too old resource version: {at}")));
                }
                Err(RvError::TooLarge) => {
                    return Err(ApiError::timeout(format!(
                        "Too large resource version: {at}"
                    )));
                }
            }
        };
        (at, objs)
    };
    let everything = filter.is_everything();
    let mut selected: Vec<&Arc<Obj>> = Vec::new();
    let mut cont = None;
    for o in &objs {
        if everything || filter.matches(o) {
            if limit > 0 && selected.len() == limit {
                let last = selected.last().expect("limit > 0");
                let (ns, name) = obj_key(last);
                cont = Some(
                    ContinueToken {
                        rv: at,
                        ns: ns.into(),
                        name: name.into(),
                    }
                    .encode(),
                );
                break;
            }
            selected.push(o);
        }
    }
    match ctx.shape {
        Shape::Table => {
            let values: Vec<_> = selected.iter().map(|o| o.value()).collect();
            let rows = table::RowObject::of(&ctx.q)?;
            let t = table::table(
                &ctx.res,
                values.iter(),
                rows,
                Some(at.to_string()),
                cont,
                true,
            );
            return Ok(rq::json(200, &t));
        }
        Shape::Metadata => {
            let values: Vec<_> = selected.iter().map(|o| o.value()).collect();
            let l = represent::partial_list(values.iter(), at.to_string(), cont);
            return Ok(rq::json(200, &l));
        }
        Shape::Object => {}
    }
    let mut meta = json!({"resourceVersion": at.to_string()});
    if let Some(c) = cont {
        meta["continue"] = json!(c);
    }
    let head = format!(
        "{{\"kind\":\"{}\",\"apiVersion\":\"{}\",\"metadata\":{},\"items\":[",
        ctx.res.list_kind(),
        ctx.res.api_version(&ctx.version),
        meta
    );
    let mut out = Vec::with_capacity(
        head.len() + selected.iter().map(|o| o.bytes.len() + 1).sum::<usize>() + 2,
    );
    out.extend_from_slice(head.as_bytes());
    for (i, o) in selected.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(&ctx.render(o));
    }
    out.extend_from_slice(b"]}");
    Ok(rq::json_bytes(200, Bytes::from(out)))
}

pub(crate) fn obj_key(o: &Obj) -> (&str, &str) {
    (&o.attrs.namespace, &o.attrs.name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn continue_tokens_round_trip() {
        let t = ContinueToken {
            rv: 42,
            ns: "d".into(),
            name: "x".into(),
        };
        assert_eq!(ContinueToken::decode(&t.encode()), Some(t));
        assert_eq!(ContinueToken::decode("not base64!"), None);
    }
}
