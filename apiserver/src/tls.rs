//! TLS for non-loopback listeners: a CA (kept in the data directory, or made
//! per run when in memory) and a server certificate signed by it at every start.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::Path;
use std::sync::Arc;

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose, SanType,
};
use rustls::ServerConfig;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio_rustls::TlsAcceptor;

/// The CA certificate and key files in the data directory.
pub(crate) const CA_CERT_FILE: &str = "ca.crt";
pub(crate) const CA_KEY_FILE: &str = "ca.key";

/// What serving TLS needs: the acceptor and the CA clients should trust.
pub(crate) struct Tls {
    pub(crate) acceptor: TlsAcceptor,
    /// PEM of the CA certificate (for `certificate-authority-data`).
    pub(crate) ca_pem: String,
}

/// Why TLS could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("TLS CA in {dir}: {source}")]
    Io { dir: String, source: std::io::Error },
    #[error("TLS CA in {dir}: {what}")]
    BadCa { dir: String, what: String },
    #[error("generating TLS certificate: {0}")]
    Generate(#[from] rcgen::Error),
    #[error("TLS configuration: {0}")]
    Rustls(#[from] rustls::Error),
}

fn ca_params() -> CertificateParams {
    let mut p = CertificateParams::default();
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, "windlass-apiserver CA");
    p.distinguished_name = dn;
    p.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    p.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    p
}

/// Loads the CA from `dir` (both files present), or makes a new one and
/// stores it there. `None`: a fresh CA for this run only.
fn load_or_create_ca(dir: Option<&Path>) -> Result<(KeyPair, String), TlsError> {
    let Some(dir) = dir else {
        let key = KeyPair::generate()?;
        let cert = ca_params().self_signed(&key)?;
        return Ok((key, cert.pem()));
    };
    let io = |source| TlsError::Io {
        dir: dir.display().to_string(),
        source,
    };
    let bad = |what: String| TlsError::BadCa {
        dir: dir.display().to_string(),
        what,
    };
    let (cert_path, key_path) = (dir.join(CA_CERT_FILE), dir.join(CA_KEY_FILE));
    if cert_path.exists() && key_path.exists() {
        let key_pem = std::fs::read_to_string(&key_path).map_err(io)?;
        let cert_pem = std::fs::read_to_string(&cert_path).map_err(io)?;
        let key = KeyPair::from_pem(&key_pem).map_err(|e| bad(format!("{CA_KEY_FILE}: {e}")))?;
        CertificateDer::from_pem_slice(cert_pem.as_bytes())
            .map_err(|e| bad(format!("{CA_CERT_FILE}: {e}")))?;
        return Ok((key, cert_pem));
    }
    std::fs::create_dir_all(dir).map_err(io)?;
    let key = KeyPair::generate()?;
    let cert_pem = ca_params().self_signed(&key)?.pem();
    crate::files::write_atomically(&key_path, key.serialize_pem().as_bytes(), 0o600).map_err(io)?;
    crate::files::write_atomically(&cert_path, cert_pem.as_bytes(), 0o644).map_err(io)?;
    Ok((key, cert_pem))
}

/// This machine's host name, if it can be read and is a plausible DNS name.
fn hostname() -> Option<String> {
    let name = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())?;
    let name = name.trim().to_owned();
    let valid = !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.');
    valid.then_some(name)
}

/// The names the server certificate covers for a listener on `ip`.
pub(crate) fn subject_alt_names(ip: IpAddr) -> Vec<SanType> {
    let mut ips = vec![
        IpAddr::V4(Ipv4Addr::LOCALHOST),
        IpAddr::V6(Ipv6Addr::LOCALHOST),
    ];
    if !ip.is_unspecified() && !ips.contains(&ip) {
        ips.insert(0, ip);
    }
    let mut sans: Vec<SanType> = ips.into_iter().map(SanType::IpAddress).collect();
    let mut names = vec!["localhost".to_owned()];
    if ip.is_unspecified()
        && let Some(h) = hostname()
        && h != "localhost"
    {
        names.push(h);
    }
    for n in names {
        if let Ok(n) = n.try_into() {
            sans.push(SanType::DnsName(n));
        }
    }
    sans
}

/// Sets up TLS for a server listening on `listen`.
pub(crate) fn setup(listen: SocketAddr, data_dir: Option<&Path>) -> Result<Tls, TlsError> {
    let (ca_key, ca_pem) = load_or_create_ca(data_dir)?;
    let ca_der =
        CertificateDer::from_pem_slice(ca_pem.as_bytes()).map_err(|e| TlsError::BadCa {
            dir: data_dir
                .map(|d| d.display().to_string())
                .unwrap_or_default(),
            what: format!("{CA_CERT_FILE}: {e}"),
        })?;
    let issuer = Issuer::new(ca_params(), &ca_key);

    let mut params = CertificateParams::default();
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, "windlass-apiserver");
    params.distinguished_name = dn;
    params.subject_alt_names = subject_alt_names(listen.ip());
    params.is_ca = IsCa::ExplicitNoCa;
    params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    params.use_authority_key_identifier_extension = true;
    let key = KeyPair::generate()?;
    let cert = params.signed_by(&key, &issuer)?;

    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_single_cert(
            vec![cert.der().clone(), ca_der],
            PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
        )?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Tls {
        acceptor: TlsAcceptor::from(Arc::new(config)),
        ca_pem,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_cover_the_listen_ip_and_loopback() {
        let sans = subject_alt_names("10.1.2.3".parse().unwrap());
        assert_eq!(sans[0], SanType::IpAddress("10.1.2.3".parse().unwrap()));
        assert!(sans.contains(&SanType::IpAddress("127.0.0.1".parse().unwrap())));
        assert!(sans.contains(&SanType::IpAddress("::1".parse().unwrap())));
        assert!(sans.contains(&SanType::DnsName("localhost".try_into().unwrap())));
        let any = subject_alt_names("0.0.0.0".parse().unwrap());
        assert!(!any.contains(&SanType::IpAddress("0.0.0.0".parse().unwrap())));
        assert!(any.contains(&SanType::IpAddress("127.0.0.1".parse().unwrap())));
        if let Some(h) = hostname() {
            assert!(any.contains(&SanType::DnsName(h.try_into().unwrap())));
        }
    }

    #[test]
    fn the_ca_is_kept_in_the_data_dir() {
        let dir = tempfile::tempdir().unwrap();
        let addr: SocketAddr = "0.0.0.0:0".parse().unwrap();
        let a = setup(addr, Some(dir.path())).unwrap();
        let b = setup(addr, Some(dir.path())).unwrap();
        assert_eq!(a.ca_pem, b.ca_pem);
        assert!(a.ca_pem.starts_with("-----BEGIN CERTIFICATE-----"));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(dir.path().join(CA_KEY_FILE))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o077, 0, "the CA key is private");
        }
        let c = setup(addr, None).unwrap();
        assert_ne!(a.ca_pem, c.ca_pem);
    }
}
