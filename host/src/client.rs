//! The host's HTTP face to a Kubernetes API server: `kube` supplies the
//! configuration and the authenticated transport; every request and every
//! answer is shaped here, so status codes and `Status` bodies reach the
//! informers and the writer intact. It also counts the requests by method
//! and answer, as client-go's `rest_client_requests_total` does.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use futures::{Stream, StreamExt, TryStreamExt};
use http::{Method, Request, StatusCode};
use http_body_util::BodyExt;
use kube::client::Body;
use serde::Deserialize;
use tokio::sync::Semaphore;

/// A failed API request: the HTTP code and `Status` reason when the server
/// answered, or code 0 when it could not be reached.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{method} {path}: {}", self.describe())]
pub struct ApiError {
    pub method: Method,
    pub path: String,
    /// HTTP status, or 0 for a transport failure.
    pub code: u16,
    /// The `Status` reason (`Conflict`, `NotFound`, `Expired`…), if any.
    pub reason: String,
    pub message: String,
}

impl ApiError {
    fn describe(&self) -> String {
        match self.code {
            0 => format!("cannot reach the API server: {}", self.message),
            code if self.reason.is_empty() => format!("{code}: {}", self.message),
            code => format!("{code} {}: {}", self.reason, self.message),
        }
    }

    pub fn is_conflict(&self) -> bool {
        self.code == 409 && self.reason != "AlreadyExists"
    }

    pub fn is_already_exists(&self) -> bool {
        self.code == 409 && self.reason == "AlreadyExists"
    }

    pub fn is_not_found(&self) -> bool {
        self.code == 404
    }

    /// `410 Gone` / `Expired`: the resourceVersion is too old; relist.
    pub fn is_gone(&self) -> bool {
        self.code == 410
    }

    fn transport(method: &Method, path: &str, message: impl ToString) -> Self {
        Self {
            method: method.clone(),
            path: path.to_owned(),
            code: 0,
            reason: String::new(),
            message: message.to_string(),
        }
    }
}

#[derive(Deserialize, Default)]
struct StatusBody {
    #[serde(default)]
    reason: String,
    #[serde(default)]
    message: String,
}

/// Builds the error for a non-2xx answer from its `Status` body.
fn from_status(method: &Method, path: &str, code: StatusCode, body: &[u8]) -> ApiError {
    let status: StatusBody = serde_json::from_slice(body).unwrap_or_default();
    let message = if status.message.is_empty() {
        String::from_utf8_lossy(&body[..body.len().min(512)])
            .trim()
            .to_owned()
    } else {
        status.message
    };
    ApiError {
        method: method.clone(),
        path: path.to_owned(),
        code: code.as_u16(),
        reason: status.reason,
        message,
    }
}

/// The whole body of a response.
async fn collect(response: http::Response<Body>) -> Result<Vec<u8>, kube::Error> {
    response
        .into_body()
        .into_data_stream()
        .map_ok(|b| b.to_vec())
        .try_concat()
        .await
}

/// Requests one client (and its clones) has in flight at most, watches
/// aside; more wait their turn. Over HTTP/1.1 each request in flight holds
/// a connection of its own, so without a bound a host whose plugins run
/// hundreds of workers opens as many connections at once: past the API
/// server's connection limit (the embedded server's 1,024) new connections
/// wait in the kernel's listen backlog, and a full backlog drops their SYNs,
/// which the kernel retries after 1, 3, 7, 15, 31 s. 256 is past what two
/// cores of server can work on at once and far below those limits.
pub const MAX_REQUESTS_IN_FLIGHT: usize = 256;

/// An authenticated client for one API server; cheap to clone.
#[derive(Clone)]
pub struct ApiClient {
    client: kube::Client,
    requests: Arc<RequestCounts>,
    /// Bounds the requests in flight ([`MAX_REQUESTS_IN_FLIGHT`]).
    in_flight: Arc<Semaphore>,
}

/// Requests made through one client (and its clones), by method and by
/// answer: the HTTP code, or `<error>` when none came (as client-go labels
/// `rest_client_requests_total`).
#[derive(Debug, Default)]
pub struct RequestCounts {
    /// The API server's `host:port`.
    host: String,
    counts: Mutex<BTreeMap<(String, String), u64>>,
}

impl RequestCounts {
    fn count(&self, code: Option<StatusCode>, method: &Method) {
        let code = code.map_or_else(|| "<error>".to_owned(), |c| c.as_u16().to_string());
        *self
            .counts
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry((code, method.as_str().to_owned()))
            .or_default() += 1;
    }

    /// The API server's `host:port` (empty when the client was made from
    /// a kube client, whose URL is not known here).
    pub fn host(&self) -> &str {
        &self.host
    }

    /// `(code, method, requests)`, in order.
    pub fn snapshot(&self) -> Vec<(String, String, u64)> {
        self.counts
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .map(|((code, method), n)| (code.clone(), method.clone(), *n))
            .collect()
    }
}

impl std::fmt::Debug for ApiClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ApiClient")
    }
}

impl ApiClient {
    /// From a kubeconfig file, or else the usual places: `KUBECONFIG`,
    /// `~/.kube/config`, then the in-cluster service account.
    pub async fn from_kubeconfig(path: Option<&Path>) -> anyhow::Result<Self> {
        Self::from_kubeconfig_context(path, None).await
    }

    /// As [`ApiClient::from_kubeconfig`], with the kubeconfig's `context`
    /// instead of its current one (as kubectl's `--context`).
    pub async fn from_kubeconfig_context(
        path: Option<&Path>,
        context: Option<&str>,
    ) -> anyhow::Result<Self> {
        let options = kube::config::KubeConfigOptions {
            context: context.map(str::to_owned),
            ..Default::default()
        };
        let config = match (path, context) {
            (Some(path), _) => {
                let kubeconfig = kube::config::Kubeconfig::read_from(path)?;
                kube::Config::from_custom_kubeconfig(kubeconfig, &options).await?
            }
            (None, Some(_)) => kube::Config::from_kubeconfig(&options).await?,
            (None, None) => kube::Config::infer().await?,
        };
        Self::from_config(config)
    }

    /// From kubeconfig text (e.g. the embedded server's).
    pub async fn from_kubeconfig_yaml(yaml: &str) -> anyhow::Result<Self> {
        let kubeconfig = kube::config::Kubeconfig::from_yaml(yaml)?;
        let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default()).await?;
        Self::from_config(config)
    }

    fn from_config(config: kube::Config) -> anyhow::Result<Self> {
        let host = config
            .cluster_url
            .authority()
            .map(|a| a.to_string())
            .unwrap_or_default();
        Ok(Self {
            requests: Arc::new(RequestCounts {
                host,
                ..RequestCounts::default()
            }),
            ..Self::new(kube::Client::try_from(config)?)
        })
    }

    /// Wraps an existing kube client.
    pub fn new(client: kube::Client) -> Self {
        Self {
            client,
            requests: Arc::default(),
            in_flight: Arc::new(Semaphore::new(MAX_REQUESTS_IN_FLIGHT)),
        }
    }

    /// The requests made so far through this client and its clones.
    pub fn requests(&self) -> &RequestCounts {
        &self.requests
    }

    async fn send(
        &self,
        method: Method,
        path: &str,
        content_type: Option<&str>,
        body: Vec<u8>,
        agent: Option<&str>,
    ) -> Result<http::Response<Body>, ApiError> {
        let mut request = Request::builder().method(method.clone()).uri(path);
        if let Some(ct) = content_type {
            request = request.header(http::header::CONTENT_TYPE, ct);
        }
        if let Some(agent) = agent {
            request = request.header(http::header::USER_AGENT, agent);
        }
        request = request.header(http::header::ACCEPT, "application/json");
        let request = request
            .body(Body::from(body))
            .map_err(|e| ApiError::transport(&method, path, e))?;
        let sent = self.client.send(request).await;
        self.requests
            .count(sent.as_ref().ok().map(|r| r.status()), &method);
        sent.map_err(|e| ApiError::transport(&method, path, e))
    }

    /// One request with a JSON answer; non-2xx answers become [`ApiError`].
    pub async fn request(
        &self,
        method: Method,
        path: &str,
        content_type: Option<&str>,
        body: Vec<u8>,
        agent: Option<&str>,
    ) -> Result<Bytes, ApiError> {
        // Held until the answer is read: the connection is busy till then.
        let _turn = self
            .in_flight
            .acquire()
            .await
            .expect("the semaphore is never closed");
        let response = self
            .send(method.clone(), path, content_type, body, agent)
            .await?;
        let status = response.status();
        let bytes = collect(response)
            .await
            .map_err(|e| ApiError::transport(&method, path, e))?;
        if status.is_success() {
            Ok(Bytes::from(bytes))
        } else {
            Err(from_status(&method, path, status, &bytes))
        }
    }

    /// GET with a JSON answer.
    pub async fn get(&self, path: &str) -> Result<Bytes, ApiError> {
        self.request(Method::GET, path, None, Vec::new(), None)
            .await
    }

    /// Starts a watch (or any streaming GET): the body's chunks as they come.
    pub async fn stream(
        &self,
        path: &str,
    ) -> Result<impl Stream<Item = Result<Bytes, ApiError>> + Send + use<>, ApiError> {
        let response = self.send(Method::GET, path, None, Vec::new(), None).await?;
        let status = response.status();
        if !status.is_success() {
            let body = collect(response).await.unwrap_or_default();
            return Err(from_status(&Method::GET, path, status, &body));
        }
        let path = path.to_owned();
        Ok(response
            .into_body()
            .into_data_stream()
            .map(move |chunk| chunk.map_err(|e| ApiError::transport(&Method::GET, &path, e))))
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    /// Past [`MAX_REQUESTS_IN_FLIGHT`] a request waits for a turn instead
    /// of opening one more connection: a server that takes connections
    /// and never answers sees exactly that many.
    #[tokio::test]
    async fn requests_in_flight_are_bounded() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let accepted = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let count = accepted.clone();
        tokio::spawn(async move {
            let mut held = Vec::new();
            while let Ok((stream, _)) = listener.accept().await {
                count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                held.push(stream);
            }
        });
        let url = format!("http://{addr}").parse().unwrap();
        let client = ApiClient::from_config(kube::Config::new(url)).unwrap();
        let asked = MAX_REQUESTS_IN_FLIGHT + 100;
        let requests: Vec<_> = (0..asked)
            .map(|i| {
                let client = client.clone();
                tokio::spawn(async move { client.get(&format!("/api/v1/namespaces/n{i}")).await })
            })
            .collect();
        let started = std::time::Instant::now();
        while accepted.load(std::sync::atomic::Ordering::SeqCst) < MAX_REQUESTS_IN_FLIGHT
            && started.elapsed() < Duration::from_secs(20)
        {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        // Time for any request past the bound to connect, were it let out.
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert_eq!(
            accepted.load(std::sync::atomic::Ordering::SeqCst),
            MAX_REQUESTS_IN_FLIGHT
        );
        for r in requests {
            r.abort();
        }
    }

    #[test]
    fn status_bodies_become_typed_errors() {
        let body = br#"{"kind":"Status","status":"Failure","reason":"Conflict","message":"the object has been modified","code":409}"#;
        let e = from_status(&Method::PUT, "/api/v1/x", StatusCode::CONFLICT, body);
        assert!(e.is_conflict() && !e.is_already_exists());
        assert_eq!(
            e.to_string(),
            "PUT /api/v1/x: 409 Conflict: the object has been modified"
        );
        let e = from_status(&Method::GET, "/x", StatusCode::GONE, b"gone");
        assert!(e.is_gone());
        assert_eq!(e.message, "gone");
        let e = ApiError::transport(&Method::GET, "/x", "connection refused");
        assert_eq!(e.code, 0);
        assert!(e.to_string().contains("cannot reach the API server"));
    }
}
