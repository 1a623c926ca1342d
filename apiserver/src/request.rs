//! Request plumbing: query strings, bodies (JSON or YAML, size-limited),
//! content negotiation and responses.

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::{Body, Frame, Incoming};
use hyper::{Request, Response, StatusCode};
use serde_json::Value;
use tokio::sync::mpsc;

use crate::limits::MAX_BODY;
use crate::status::{ApiError, ApiResult};

pub(crate) type RespBody = BoxBody<Bytes, Infallible>;

/// Parsed query parameters.
#[derive(Debug, Default, Clone)]
pub(crate) struct Query(Vec<(String, String)>);

impl Query {
    pub(crate) fn parse(q: Option<&str>) -> Self {
        let mut v = Vec::new();
        for part in q.unwrap_or_default().split('&').filter(|p| !p.is_empty()) {
            let (k, val) = part.split_once('=').unwrap_or((part, ""));
            v.push((decode(k), decode(val)));
        }
        Self(v)
    }

    pub(crate) fn get(&self, k: &str) -> Option<&str> {
        self.0.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str())
    }

    /// Every value of a repeated parameter, in order.
    pub(crate) fn all<'q>(&'q self, k: &'q str) -> impl Iterator<Item = &'q str> + 'q {
        (self.0.iter())
            .filter(move |(n, _)| n == k)
            .map(|(_, v)| v.as_str())
    }

    pub(crate) fn flag(&self, k: &str) -> bool {
        matches!(self.get(k), Some("true" | "1" | "True"))
    }

    pub(crate) fn non_empty(&self, k: &str) -> Option<&str> {
        self.get(k).filter(|s| !s.is_empty())
    }
}

/// Percent-decoding with `+` as space.
pub(crate) fn decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < b.len() => {
                match u8::from_str_radix(std::str::from_utf8(&b[i + 1..i + 3]).unwrap_or("zz"), 16)
                {
                    Ok(c) => {
                        out.push(c);
                        i += 2;
                    }
                    Err(_) => out.push(b'%'),
                }
            }
            c => out.push(c),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Reads the whole body, refusing more than [`MAX_BODY`] and a client that
/// takes longer than `timeout` to send it (kube-apiserver's request
/// timeout, and its message).
pub(crate) async fn read_body(body: Incoming, timeout: std::time::Duration) -> ApiResult<Bytes> {
    match tokio::time::timeout(timeout, Limited::new(body, MAX_BODY).collect()).await {
        Ok(Ok(c)) => Ok(c.to_bytes()),
        Ok(Err(e)) if e.is::<http_body_util::LengthLimitError>() => Err(ApiError::too_large()),
        Ok(Err(e)) => Err(ApiError::bad_request(format!(
            "reading the request body: {e}"
        ))),
        Err(_) => Err(ApiError::timeout(
            "Timeout: request did not complete within requested timeout - context deadline exceeded",
        )),
    }
}

/// Decodes a JSON or YAML object body according to its content type.
pub(crate) fn decode_body(ct: &str, bytes: &[u8]) -> ApiResult<Value> {
    decode_body_as(ct, bytes, None)
}

/// [`decode_body`], where a protobuf envelope without a type is taken to
/// be of `default` (the resource and version of the URL).
pub(crate) fn decode_body_as(
    ct: &str,
    bytes: &[u8],
    default: Option<(&crate::resources::Resource, &str)>,
) -> ApiResult<Value> {
    let default = default.map(|(r, v)| (r.api_version(v), r.kind.clone()));
    decode_body_typed(
        ct,
        bytes,
        default.as_ref().map(|(a, k)| (a.as_str(), k.as_str())),
    )
}

/// [`decode_body`], where a protobuf envelope without a type is taken to
/// be of `default` (`apiVersion`, `kind`).
pub(crate) fn decode_body_typed(
    ct: &str,
    bytes: &[u8],
    default: Option<(&str, &str)>,
) -> ApiResult<Value> {
    let mime = ct.split(';').next().unwrap_or("").trim();
    let v = if mime == "application/vnd.kubernetes.protobuf" {
        crate::proto::decode(bytes, default)
            .map_err(|e| ApiError::new(415, "UnsupportedMediaType", e))?
    } else if mime.ends_with("yaml") {
        crate::yaml::from_slice(bytes).map_err(|e| e.to_api())?
    } else if mime.is_empty() || mime.ends_with("json") || mime == "*/*" {
        serde_json::from_slice(bytes).map_err(|e| {
            ApiError::bad_request(format!("couldn't get version/kind; json parse error: {e}"))
        })?
    } else {
        return Err(ApiError::unsupported_media(ct));
    };
    // JSON's parser stops at the limit; YAML's and protobuf's do not.
    crate::limits::check_body_depth(&v)?;
    Ok(v)
}

pub(crate) fn full(b: impl Into<Bytes>) -> RespBody {
    Full::new(b.into()).boxed()
}

pub(crate) fn json_bytes(code: u16, bytes: Bytes) -> Response<RespBody> {
    Response::builder()
        .status(StatusCode::from_u16(code).unwrap_or(StatusCode::OK))
        .header("content-type", "application/json")
        .body(full(bytes))
        .expect("static response parts are valid")
}

/// A response of `bytes` with content type `ct`.
pub(crate) fn bytes_typed(code: u16, bytes: impl Into<Bytes>, ct: &str) -> Response<RespBody> {
    Response::builder()
        .status(StatusCode::from_u16(code).unwrap_or(StatusCode::OK))
        .header("content-type", ct)
        .body(full(bytes))
        .expect("static response parts are valid")
}

/// JSON with a content type that says which transformation it is.
pub(crate) fn json_typed(code: u16, v: &Value, ct: &str) -> Response<RespBody> {
    bytes_typed(
        code,
        serde_json::to_vec(v).expect("JSON values serialize"),
        ct,
    )
}

pub(crate) fn json(code: u16, v: &Value) -> Response<RespBody> {
    json_bytes(
        code,
        Bytes::from(serde_json::to_vec(v).expect("JSON values serialize")),
    )
}

pub(crate) fn error(e: &ApiError) -> Response<RespBody> {
    let mut r = json(e.code, &e.to_status());
    if e.code == 429 {
        // As kube-apiserver: client-go waits this long, then retries.
        r.headers_mut()
            .insert("retry-after", hyper::header::HeaderValue::from_static("1"));
    }
    r
}

pub(crate) fn text_owned(code: u16, t: String) -> Response<RespBody> {
    Response::builder()
        .status(code)
        .header("content-type", "text/plain; charset=utf-8")
        .body(full(Bytes::from(t)))
        .expect("static response parts are valid")
}

/// A streaming body fed by a channel (watch responses).
pub(crate) struct ChannelBody(pub(crate) mpsc::Receiver<Bytes>);

impl Body for ChannelBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        self.0.poll_recv(cx).map(|o| o.map(|b| Ok(Frame::data(b))))
    }
}

/// The value of header `name`, or `""` when absent or not text.
pub(crate) fn header<'a>(req: &'a Request<Incoming>, name: &str) -> &'a str {
    req.headers()
        .get(name)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_decode() {
        let q = Query::parse(Some("labelSelector=app%3Dweb%2Ctier+in+(a)&watch=1&limit="));
        assert_eq!(q.get("labelSelector"), Some("app=web,tier in (a)"));
        assert!(q.flag("watch"));
        assert_eq!(q.non_empty("limit"), None);
        assert_eq!(decode("100%"), "100%");
    }

    #[test]
    fn bodies_decode() {
        assert_eq!(decode_body("application/yaml", b"a: 1").unwrap()["a"], 1);
        assert_eq!(
            decode_body("application/json", b"{bad").unwrap_err().code,
            400
        );
        assert_eq!(
            decode_body("application/xml", b"<a/>").unwrap_err().code,
            415
        );
    }
}
