//! Service account tokens (`serviceaccounts/<name>/token`, what `kubectl
//! create token` asks for): JSON Web Tokens with kube's claims, signed with
//! HMAC-SHA-256 under a key only this server knows, and accepted back as
//! bearer tokens while they are unexpired, meant for this server (their
//! audience) and their service account still exists with the same uid.
//!
//! The key is 256 bits from the OS generator, kept in the data directory
//! (`sa.key`, mode 0600) so that tokens outlive a restart, or for the run
//! when in memory. kube signs with RS256 or ES256 so that others can verify
//! its tokens from its public keys; clients treat tokens as opaque, and
//! only this server verifies these.

use std::path::Path;

use base64::Engine;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

/// The issuer and default audience, as a cluster with default flags has them.
pub(crate) const ISSUER: &str = "https://kubernetes.default.svc.cluster.local";

/// Why the signing key could not be made or read.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    #[error(
        "cannot read the operating system's random number generator for the token signing key: {0}"
    )]
    Random(getrandom::Error),
    #[error("cannot read or write the token signing key {path}: {source}")]
    File {
        path: String,
        source: std::io::Error,
    },
}

/// The key tokens are signed with.
#[derive(Clone)]
pub(crate) struct SigningKey([u8; 32]);

impl std::fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SigningKey(..)")
    }
}

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// HMAC-SHA-256 (RFC 2104).
fn hmac(key: &[u8; 32], message: &[u8]) -> [u8; 32] {
    let mut block = [0u8; 64];
    block[..32].copy_from_slice(key);
    let pad = |byte: u8| -> Vec<u8> { block.iter().map(|b| b ^ byte).collect() };
    let inner = Sha256::new()
        .chain_update(pad(0x36))
        .chain_update(message)
        .finalize();
    Sha256::new()
        .chain_update(pad(0x5c))
        .chain_update(inner)
        .finalize()
        .into()
}

impl SigningKey {
    pub(crate) fn generate() -> Result<Self, KeyError> {
        let mut k = [0u8; 32];
        getrandom::fill(&mut k).map_err(KeyError::Random)?;
        Ok(Self(k))
    }

    /// The key kept in `dir/sa.key`, made on first use.
    pub(crate) fn in_dir(dir: &Path) -> Result<Self, KeyError> {
        let path = dir.join("sa.key");
        let err = |source| KeyError::File {
            path: path.display().to_string(),
            source,
        };
        match std::fs::read(&path) {
            Ok(bytes) if bytes.len() == 32 => {
                let mut k = [0u8; 32];
                k.copy_from_slice(&bytes);
                Ok(Self(k))
            }
            Ok(_) => Err(err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                "not a 32-byte key; delete it to make a new one (tokens signed with it stop working)",
            ))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let key = Self::generate()?;
                crate::files::write_atomically(&path, &key.0, 0o600).map_err(err)?;
                Ok(key)
            }
            Err(e) => Err(err(e)),
        }
    }

    /// A signed token carrying `claims`.
    pub(crate) fn sign(&self, claims: &Value) -> String {
        let header = b64(br#"{"alg":"HS256","typ":"JWT"}"#);
        let payload = b64(&serde_json::to_vec(claims).expect("JSON values serialize"));
        let signed = format!("{header}.{payload}");
        let sig = b64(&hmac(&self.0, signed.as_bytes()));
        format!("{signed}.{sig}")
    }

    /// The claims of `token` if this key signed it (compared without early
    /// exit); expiry and the rest are [`check`]'s.
    pub(crate) fn verify(&self, token: &str) -> Option<Value> {
        let (signed, sig) = token.rsplit_once('.')?;
        let (_, payload) = signed.split_once('.')?;
        let presented = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(sig)
            .ok()?;
        let expected = hmac(&self.0, signed.as_bytes());
        if presented.len() != expected.len() {
            return None;
        }
        let diff = presented
            .iter()
            .zip(expected.iter())
            .fold(0u8, |acc, (a, b)| acc | (a ^ b));
        if std::hint::black_box(diff) != 0 {
            return None;
        }
        let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(payload)
            .ok()?;
        serde_json::from_slice(&bytes).ok()
    }
}

/// The claims of a token for service account `namespace/name` (uid `uid`)
/// from `now` for `seconds`, for `audiences`.
pub(crate) fn claims(
    namespace: &str,
    name: &str,
    uid: &str,
    audiences: &[String],
    now: i64,
    seconds: i64,
) -> Value {
    json!({
        "aud": audiences,
        "exp": now + seconds,
        "iat": now,
        "iss": ISSUER,
        "jti": crate::object::new_uid(),
        "kubernetes.io": {"namespace": namespace, "serviceaccount": {"name": name, "uid": uid}},
        "nbf": now,
        "sub": format!("system:serviceaccount:{namespace}:{name}"),
    })
}

/// Who a verified token speaks for.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ServiceAccount {
    pub(crate) namespace: String,
    pub(crate) name: String,
    pub(crate) uid: String,
}

/// Why verified claims are not accepted.
pub(crate) fn check(claims: &Value, now: i64, audience: &str) -> Result<ServiceAccount, String> {
    if claims["iss"] != ISSUER {
        return Err("token has an unknown issuer".into());
    }
    if claims["exp"].as_i64().is_none_or(|e| e <= now) {
        return Err("token has expired".into());
    }
    if claims["nbf"].as_i64().is_some_and(|n| n > now + 60) {
        return Err("token is not valid yet".into());
    }
    let auds = claims["aud"].as_array().cloned().unwrap_or_default();
    if !auds.iter().any(|a| a == audience) {
        return Err("token audiences do not include this server".into());
    }
    let k = &claims["kubernetes.io"];
    let s = |v: &Value| v.as_str().unwrap_or_default().to_owned();
    Ok(ServiceAccount {
        namespace: s(&k["namespace"]),
        name: s(&k["serviceaccount"]["name"]),
        uid: s(&k["serviceaccount"]["uid"]),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 4231 test case 2 needs a short key; case 1 (20 bytes of 0x0b)
    /// fits ours when zero-padded, which HMAC does anyway.
    #[test]
    fn hmac_matches_rfc_4231() {
        let mut key = [0u8; 32];
        key[..20].copy_from_slice(&[0x0b; 20]);
        let mac = hmac(&key, b"Hi There");
        let hex: String = mac.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(
            hex,
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"
        );
    }

    #[test]
    fn tokens_verify_only_unaltered_and_with_their_key() {
        let key = SigningKey::generate().unwrap();
        let c = claims("default", "default", "u1", &[ISSUER.into()], 1_000, 3_600);
        let t = key.sign(&c);
        assert_eq!(t.split('.').count(), 3);
        let back = key.verify(&t).unwrap();
        assert_eq!(back["sub"], "system:serviceaccount:default:default");
        let sa = check(&back, 2_000, ISSUER).unwrap();
        assert_eq!(
            (sa.namespace.as_str(), sa.name.as_str(), sa.uid.as_str()),
            ("default", "default", "u1")
        );
        assert!(check(&back, 5_000, ISSUER).unwrap_err().contains("expired"));
        assert!(
            check(&back, 2_000, "vault")
                .unwrap_err()
                .contains("audiences")
        );
        assert!(SigningKey::generate().unwrap().verify(&t).is_none());
        let (head, rest) = t.split_once('.').unwrap();
        let (_, sig) = rest.rsplit_once('.').unwrap();
        let forged = format!("{head}.{}.{sig}", b64(br#"{"sub":"system:admin"}"#));
        assert!(key.verify(&forged).is_none());
        assert!(key.verify("not-a-jwt").is_none());
    }

    #[test]
    fn the_key_is_kept_in_the_data_directory() {
        let dir = tempfile::tempdir().unwrap();
        let a = SigningKey::in_dir(dir.path()).unwrap();
        let b = SigningKey::in_dir(dir.path()).unwrap();
        let t = a.sign(&json!({"x": 1}));
        assert!(b.verify(&t).is_some());
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(dir.path().join("sa.key"))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }
}
