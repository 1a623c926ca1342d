//! Who may talk to a server without a token: only requests addressed to a
//! loopback name or address. A loopback listener keeps other machines out,
//! but not a web page: it can make the browser send requests to a name the
//! page's owner controls and resolves to 127.0.0.1 (DNS rebinding), and the
//! browser then writes that name in `Host`.

use hyper::Uri;
use hyper::header::HeaderValue;

use crate::status::{ApiError, ApiResult};

/// Refuses a request whose `Host` (or absolute URI) is not `localhost`, an
/// address in 127.0.0.0/8, or `[::1]`, with any port.
pub(crate) fn check_loopback_host(uri: &Uri, host: Option<&HeaderValue>) -> ApiResult<()> {
    let authority = match (uri.authority(), host) {
        (Some(a), _) => Some(a.as_str().to_owned()),
        (None, Some(h)) => h.to_str().ok().map(str::to_owned),
        (None, None) => None,
    };
    match authority {
        Some(a) if is_loopback_authority(&a) => Ok(()),
        Some(a) => Err(ApiError::new(
            403,
            "Forbidden",
            format!(
                "forbidden: the request is addressed to host {a:?}, which is not a loopback name or address; this server has no authentication and answers only requests for localhost, 127.0.0.1 or [::1] (protection against DNS rebinding); connect through one of those, or give the server a token"
            ),
        )),
        None => Err(ApiError::new(
            403,
            "Forbidden",
            "forbidden: the request has no Host header; this server has no authentication and answers only requests addressed to localhost, 127.0.0.1 or [::1] (protection against DNS rebinding)",
        )),
    }
}

/// `host[:port]` where host is a loopback name or address.
fn is_loopback_authority(authority: &str) -> bool {
    let host = match authority.strip_prefix('[') {
        // `[::1]` or `[::1]:port`.
        Some(rest) => match rest.split_once(']') {
            Some((ip, port)) if port.is_empty() || is_port(port) => ip,
            _ => return false,
        },
        None => match authority.rsplit_once(':') {
            Some((h, port)) if is_port(port) => h,
            Some(_) => return false,
            None => authority,
        },
    };
    let host = host.strip_suffix('.').unwrap_or(host);
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// `:1234`.
fn is_port(s: &str) -> bool {
    s.strip_prefix(':').unwrap_or(s).parse::<u16>().is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_names_and_addresses_only() {
        for ok in [
            "localhost",
            "localhost:6443",
            "LOCALHOST:1",
            "localhost.:80",
            "127.0.0.1",
            "127.0.0.1:43211",
            "127.1.2.3:80",
            "[::1]",
            "[::1]:8080",
        ] {
            assert!(is_loopback_authority(ok), "{ok}");
        }
        for bad in [
            "evil.example",
            "evil.example:6443",
            "localhost.evil.example",
            "127.0.0.1.nip.io",
            "10.0.0.1:80",
            "[::2]:80",
            "[::1]x",
            "localhost:notaport",
            "",
            "0.0.0.0:80",
        ] {
            assert!(!is_loopback_authority(bad), "{bad}");
        }
    }

    #[test]
    fn requests_for_other_hosts_are_forbidden() {
        let uri: Uri = "/api".parse().unwrap();
        let ok = HeaderValue::from_static("127.0.0.1:6443");
        assert!(check_loopback_host(&uri, Some(&ok)).is_ok());
        let bad = HeaderValue::from_static("rebind.example:6443");
        let e = check_loopback_host(&uri, Some(&bad)).unwrap_err();
        assert_eq!((e.code, e.reason), (403, "Forbidden"));
        assert!(e.message.contains("DNS rebinding"), "{}", e.message);
        assert_eq!(check_loopback_host(&uri, None).unwrap_err().code, 403);
        let absolute: Uri = "http://evil.example/api".parse().unwrap();
        assert!(check_loopback_host(&absolute, Some(&ok)).is_err());
    }
}
