//! A small HTTP client for the integration tests: JSON requests and watch line streams.
#![allow(dead_code)]

pub mod kubectl;

use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::Request;
use hyper::body::Incoming;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use serde_json::Value;

#[derive(Clone)]
pub struct Http {
    addr: SocketAddr,
    client: Client<HttpConnector, Full<Bytes>>,
    token: Option<String>,
}

impl Http {
    pub fn new(addr: SocketAddr) -> Self {
        Self {
            addr,
            client: Client::builder(TokioExecutor::new()).build_http(),
            token: None,
        }
    }

    pub fn with_token(mut self, token: &str) -> Self {
        self.token = Some(token.to_owned());
        self
    }

    pub async fn send(
        &self,
        method: &str,
        path: &str,
        ct: &str,
        body: Option<&Value>,
    ) -> (u16, Value) {
        let bytes = body
            .map(|b| Bytes::from(serde_json::to_vec(b).unwrap()))
            .unwrap_or_default();
        self.send_raw(method, path, ct, bytes).await
    }

    pub async fn send_raw(&self, method: &str, path: &str, ct: &str, body: Bytes) -> (u16, Value) {
        let mut req = Request::builder()
            .method(method)
            .uri(format!("http://{}{path}", self.addr));
        if let Some(t) = &self.token {
            req = req.header("authorization", format!("Bearer {t}"));
        }
        let req = req
            .header("content-type", ct)
            .body(Full::new(body))
            .unwrap();
        let resp = self.client.request(req).await.expect("request succeeds");
        let code = resp.status().as_u16();
        let body = resp.into_body().collect().await.unwrap().to_bytes();
        let v = serde_json::from_slice(&body).unwrap_or(Value::Null);
        (code, v)
    }

    /// A request with an `Accept` header; the whole reply back.
    pub async fn request(
        &self,
        method: &str,
        path: &str,
        ct: &str,
        accept: &str,
        body: Bytes,
    ) -> Reply {
        let mut req = Request::builder()
            .method(method)
            .uri(format!("http://{}{path}", self.addr));
        if let Some(t) = &self.token {
            req = req.header("authorization", format!("Bearer {t}"));
        }
        if !accept.is_empty() {
            req = req.header("accept", accept);
        }
        let req = req
            .header("content-type", ct)
            .body(Full::new(body))
            .unwrap();
        let resp = self.client.request(req).await.expect("request succeeds");
        let code = resp.status().as_u16();
        let headers = resp.headers().clone();
        let raw = resp.into_body().collect().await.unwrap().to_bytes();
        let body = serde_json::from_slice(&raw).unwrap_or(Value::Null);
        Reply {
            code,
            headers,
            body,
            raw,
        }
    }

    /// A JSON body sent with `method`; the whole reply back.
    pub async fn json(&self, method: &str, path: &str, ct: &str, body: &Value) -> Reply {
        let bytes = Bytes::from(serde_json::to_vec(body).unwrap());
        self.request(method, path, ct, "", bytes).await
    }

    pub async fn get(&self, path: &str) -> (u16, Value) {
        self.send("GET", path, "application/json", None).await
    }

    pub async fn post(&self, path: &str, body: &Value) -> (u16, Value) {
        self.send("POST", path, "application/json", Some(body))
            .await
    }

    pub async fn merge_patch(&self, path: &str, body: &Value) -> (u16, Value) {
        self.send("PATCH", path, "application/merge-patch+json", Some(body))
            .await
    }

    pub async fn delete(&self, path: &str) -> (u16, Value) {
        self.send("DELETE", path, "application/json", None).await
    }

    /// Opens a watch; `None` if the server refuses with a non-200.
    pub async fn watch(&self, path: &str) -> Option<Lines> {
        self.watch_as(path, "").await
    }

    /// Opens a watch asking for `accept`.
    pub async fn watch_as(&self, path: &str, accept: &str) -> Option<Lines> {
        let mut req = Request::builder().uri(format!("http://{}{path}", self.addr));
        if !accept.is_empty() {
            req = req.header("accept", accept);
        }
        let req = req.body(Full::new(Bytes::new())).unwrap();
        let resp = self.client.request(req).await.ok()?;
        if resp.status() != 200 {
            return None;
        }
        Some(Lines {
            body: resp.into_body(),
            buf: Vec::new(),
        })
    }
}

/// A whole reply.
pub struct Reply {
    pub code: u16,
    pub headers: hyper::HeaderMap,
    pub body: Value,
    pub raw: Bytes,
}

impl Reply {
    /// The texts of its `Warning` headers (`299 - "text"`).
    pub fn warnings(&self) -> Vec<String> {
        self.headers
            .get_all("warning")
            .iter()
            .map(|v| {
                let v = v.to_str().unwrap();
                let quoted = v.strip_prefix("299 - ").expect("code 299, no agent");
                serde_json::from_str(quoted).expect("a quoted text")
            })
            .collect()
    }
}

/// JSON lines of a watch response.
pub struct Lines {
    body: Incoming,
    buf: Vec<u8>,
}

impl Lines {
    /// The next event, `None` at end of stream or after `timeout` without one.
    pub async fn next(&mut self, timeout: Duration) -> Option<Value> {
        loop {
            if let Some(i) = self.buf.iter().position(|&b| b == b'\n') {
                let line: Vec<u8> = self.buf.drain(..=i).collect();
                return Some(serde_json::from_slice(&line).expect("watch lines are JSON"));
            }
            let frame = tokio::time::timeout(timeout, self.body.frame())
                .await
                .ok()??
                .ok()?;
            if let Ok(data) = frame.into_data() {
                self.buf.extend_from_slice(&data);
            }
        }
    }
}

pub fn configmap(name: &str, v: u64) -> Value {
    serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "labels": {"v": (v % 2).to_string()}}, "data": {"v": v.to_string()}})
}

pub fn rv_of(v: &Value) -> u64 {
    v["metadata"]["resourceVersion"]
        .as_str()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no resourceVersion in {v}"))
}
