//! HTTPS beyond loopback: the real kubectl with the generated kubeconfig (CA
//! and token), a rustls client checking every name the certificate covers,
//! plain HTTP refused, the CA kept across restarts; loopback stays plain HTTP.

mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use bytes::Bytes;
use common::Http;
use http_body_util::{BodyExt, Empty};
use hyper_util::rt::TokioIo;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use serde_json::Value;
use windlass_apiserver::{Config, start};

const KUBECTL: &str = "/usr/bin/kubectl";

fn kubectl(home: &Path, kubeconfig: &Path, args: &[&str], stdin: Option<&str>) -> Output {
    let mut child = Command::new(KUBECTL)
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(args)
        .env("HOME", home)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("kubectl runs");
    if let Some(input) = stdin {
        child
            .stdin
            .take()
            .unwrap()
            .write_all(input.as_bytes())
            .unwrap();
    }
    drop(child.stdin.take());
    child.wait_with_output().unwrap()
}

fn ok(home: &Path, kubeconfig: &Path, args: &[&str], stdin: Option<&str>) -> String {
    let out = kubectl(home, kubeconfig, args, stdin);
    assert!(
        out.status.success(),
        "kubectl {args:?} failed:\nstdout: {}\nstderr: {}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn any_addr() -> SocketAddr {
    "0.0.0.0:0".parse().unwrap()
}

/// `GET path` over TLS to `addr`, verifying the certificate for `name`
/// against `ca_pem` (what kube-rs does with `certificate-authority-data`).
async fn https_get(
    addr: SocketAddr,
    ca_pem: &str,
    name: &str,
    token: Option<&str>,
    path: &str,
) -> Result<(u16, Value), String> {
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(CertificateDer::from_pem_slice(ca_pem.as_bytes()).unwrap())
        .unwrap();
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    let tcp = tokio::net::TcpStream::connect(addr)
        .await
        .map_err(|e| e.to_string())?;
    let name = ServerName::try_from(name.to_owned()).map_err(|e| e.to_string())?;
    let tls = connector
        .connect(name, tcp)
        .await
        .map_err(|e| e.to_string())?;
    let (mut send, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
        .await
        .map_err(|e| e.to_string())?;
    tokio::spawn(conn);
    let mut req = hyper::Request::get(path).header("host", addr.to_string());
    if let Some(t) = token {
        req = req.header("authorization", format!("Bearer {t}"));
    }
    let resp = send
        .send_request(req.body(Empty::<Bytes>::new()).unwrap())
        .await
        .map_err(|e| e.to_string())?;
    let code = resp.status().as_u16();
    let body = resp.into_body().collect().await.unwrap().to_bytes();
    Ok((code, serde_json::from_slice(&body).unwrap_or(Value::Null)))
}

/// Sends a plain HTTP request to `addr` and returns whatever comes back.
fn plain_http(addr: SocketAddr) -> Vec<u8> {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(
        format!("GET /api HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").as_bytes(),
    )
    .unwrap();
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    out
}

const CM: &str = "
apiVersion: v1
kind: ConfigMap
metadata:
  name: over-tls
data:
  greeting: hello
";

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn kubectl_works_over_https_with_the_generated_token() {
    let server = start(Config::new().in_memory().listen(any_addr()))
        .await
        .expect("server starts");
    let port = server.addr().port();
    let token = server
        .bearer_token()
        .expect("a token is generated")
        .to_owned();
    let ca = server.ca_certificate().expect("HTTPS beyond loopback");
    assert_eq!(server.url(), format!("https://127.0.0.1:{port}"));

    let dir = tempfile::tempdir().unwrap();
    let home = dir.path();
    let kc = home.join("kubeconfig");
    server.write_kubeconfig(&kc).unwrap();
    let text = std::fs::read_to_string(&kc).unwrap();
    assert!(
        text.contains(&format!("server: https://127.0.0.1:{port}\n")),
        "{text}"
    );
    assert!(text.contains(&format!("token: {token}")), "{text}");
    let ca_data = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("certificate-authority-data: "))
        .expect("the kubeconfig carries the CA");
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(ca_data)
        .unwrap();
    assert_eq!(String::from_utf8(decoded).unwrap(), ca);

    let ns = ok(home, &kc, &["get", "ns"], None);
    assert!(ns.contains("default") && ns.contains("kube-system"), "{ns}");
    ok(home, &kc, &["apply", "-f", "-"], Some(CM));
    let cm: Value = serde_json::from_str(&ok(
        home,
        &kc,
        &["get", "cm", "over-tls", "-o", "json"],
        None,
    ))
    .unwrap();
    assert_eq!(cm["data"]["greeting"], "hello");
    assert_eq!(cm["metadata"]["namespace"], "default");

    // Without the token: 401 from the server, over a verified TLS connection.
    let anonymous = home.join("anonymous");
    let stripped = text.replace(&format!("\n    token: {token}"), " {}");
    assert!(!stripped.contains(&token));
    std::fs::write(&anonymous, stripped).unwrap();
    // With no credentials at all over HTTPS, kubectl (client-go) prompts for
    // a username and password and, stdin not being a terminal, gives up
    // before sending anything.
    let out = kubectl(home, &anonymous, &["get", "cm"], None);
    assert!(!out.status.success(), "succeeded without a token");
    // With other credentials in place of the token (basic auth, which needs
    // no prompt) the request reaches the server, which answers 401.
    let basic = home.join("basic");
    std::fs::write(
        &basic,
        text.replace(
            &format!("\n    token: {token}"),
            "\n    username: admin\n    password: admin",
        ),
    )
    .unwrap();
    let out = kubectl(home, &basic, &["get", "cm"], None);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "succeeded without a token");
    assert!(err.contains("Unauthorized"), "{err}");
    assert!(!err.contains("certificate"), "{err}");
    // A wrong token: the same, without a prompt.
    let wrong = home.join("wrong");
    std::fs::write(&wrong, text.replace(&token, "not-the-token")).unwrap();
    let out = kubectl(home, &wrong, &["get", "cm"], None);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "succeeded with a wrong token");
    assert!(err.contains("Unauthorized"), "{err}");

    // Plain HTTP to the HTTPS port gets no HTTP answer.
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let reply = plain_http(addr);
    assert!(
        !reply.starts_with(b"HTTP/"),
        "{}",
        String::from_utf8_lossy(&reply)
    );
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_certificate_covers_loopback_names_and_survives_restarts() {
    let dir = tempfile::tempdir().unwrap();
    let config = || {
        Config::new()
            .data_dir(dir.path().to_owned())
            .listen(any_addr())
    };
    let server = start(config()).await.unwrap();
    let ca = server.ca_certificate().unwrap().to_owned();
    let token = server.bearer_token().unwrap().to_owned();
    let addr = SocketAddr::from(([127, 0, 0, 1], server.addr().port()));
    let mut names = vec!["127.0.0.1".to_owned(), "::1".into(), "localhost".into()];
    if let Ok(h) = std::fs::read_to_string("/proc/sys/kernel/hostname") {
        let h = h.trim();
        if !h.is_empty()
            && h.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.')
        {
            names.push(h.to_owned());
        }
    }
    for name in &names {
        let (c, _) = https_get(addr, &ca, name, Some(&token), "/api")
            .await
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(c, 200, "{name}");
    }
    let (c, s) = https_get(addr, &ca, "localhost", None, "/api")
        .await
        .unwrap();
    assert_eq!((c, s["reason"].as_str()), (401, Some("Unauthorized")));
    let err = https_get(addr, &ca, "example.com", Some(&token), "/api")
        .await
        .unwrap_err();
    assert!(err.contains("certificate"), "{err}");
    server.shutdown().await;

    // A restart keeps the CA (and so old kubeconfigs' trust).
    let again = start(config()).await.unwrap();
    assert_eq!(again.ca_certificate(), Some(ca.as_str()));
    let addr = SocketAddr::from(([127, 0, 0, 1], again.addr().port()));
    let token = again.bearer_token().unwrap().to_owned();
    let (c, _) = https_get(addr, &ca, "127.0.0.1", Some(&token), "/api")
        .await
        .unwrap();
    assert_eq!(c, 200);
    again.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn loopback_stays_plain_http() {
    let server = start(Config::new().in_memory()).await.unwrap();
    assert!(server.url().starts_with("http://127.0.0.1:"));
    assert!(server.ca_certificate().is_none());
    assert!(server.bearer_token().is_none());
    let kc = server.kubeconfig();
    assert!(!kc.contains("certificate-authority"), "{kc}");
    assert!(kc.contains("server: http://127.0.0.1:"), "{kc}");
    let (c, _) = Http::new(server.addr()).get("/api").await;
    assert_eq!(c, 200);
    let reply = plain_http(server.addr());
    assert!(reply.starts_with(b"HTTP/1.1 200"));
    server.shutdown().await;
}

/// What the host's `windlass run --embedded` does with [`RunningServer::kubeconfig`].
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kube_rs_accepts_the_kubeconfig() {
    use k8s_openapi::api::core::v1::Namespace;
    let server = start(Config::new().in_memory().listen(any_addr()))
        .await
        .unwrap();
    let kubeconfig = kube::config::Kubeconfig::from_yaml(&server.kubeconfig()).unwrap();
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
        .await
        .unwrap();
    let client = kube::Client::try_from(config).unwrap();
    let ns = kube::Api::<Namespace>::all(client)
        .list(&Default::default())
        .await
        .expect("kube-rs lists over HTTPS with the CA and token");
    assert!(
        ns.items
            .iter()
            .any(|n| n.metadata.name.as_deref() == Some("default"))
    );
    server.shutdown().await;
}
