//! Names as the API server validates them: namespaces (DNS labels), object
//! names (path segments; most kinds want DNS subdomains), qualified names
//! (finalizers, label keys), API versions and kinds.
//!
//! The host holds everything a plugin supplies to these rules before it can
//! reach a URL, and the SDK's test harness holds plugins to the same rules,
//! so the two cannot disagree. The messages follow the API server's.

/// Longest DNS label (namespaces, most name parts).
pub const DNS_LABEL_MAX: usize = 63;
/// Longest DNS subdomain (most object names).
pub const DNS_SUBDOMAIN_MAX: usize = 253;

fn is_label_char(c: u8) -> bool {
    c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-'
}

/// `[a-z0-9]([-a-z0-9]*[a-z0-9])?`, at most 63 characters: namespaces.
pub fn dns_label(s: &str) -> Result<(), String> {
    let b = s.as_bytes();
    if b.is_empty() {
        return Err("must not be empty".into());
    }
    if b.len() > DNS_LABEL_MAX {
        return Err(format!("must be no more than {DNS_LABEL_MAX} characters"));
    }
    let ok = b.iter().all(|&c| is_label_char(c)) && b[0] != b'-' && b[b.len() - 1] != b'-';
    if !ok {
        return Err(format!(
            "{s:?}: a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name', or '123-abc')"
        ));
    }
    Ok(())
}

/// Dot-separated DNS labels, at most 253 characters: most object names, API groups.
pub fn dns_subdomain(s: &str) -> Result<(), String> {
    if s.is_empty() {
        return Err("must not be empty".into());
    }
    if s.len() > DNS_SUBDOMAIN_MAX {
        return Err(format!(
            "must be no more than {DNS_SUBDOMAIN_MAX} characters"
        ));
    }
    if s.split('.').any(|part| dns_label(part).is_err()) {
        return Err(format!(
            "{s:?}: a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com')"
        ));
    }
    Ok(())
}

/// What every object name must be, whatever its kind, to stand as one
/// segment of a URL path: not empty, not `.` or `..`, no `/` or `%`, no
/// control characters, at most 253 bytes. (Kinds are stricter; the API
/// server checks those.)
pub fn path_segment(s: &str) -> Result<(), String> {
    if s.is_empty() {
        return Err("must not be empty".into());
    }
    if s.len() > DNS_SUBDOMAIN_MAX {
        return Err(format!(
            "must be no more than {DNS_SUBDOMAIN_MAX} characters"
        ));
    }
    if s == "." || s == ".." {
        return Err(format!("may not be {s:?}"));
    }
    for bad in ["/", "%"] {
        if s.contains(bad) {
            return Err(format!("{s:?}: may not contain {bad:?}"));
        }
    }
    if s.chars().any(char::is_control) {
        return Err(format!("{s:?}: may not contain control characters"));
    }
    Ok(())
}

/// A `generateName` prefix: a path segment once the server appends its
/// five random characters.
pub fn name_prefix(s: &str) -> Result<(), String> {
    path_segment(&format!("{s}xxxxx"))
}

/// `[prefix/]name` where the prefix is a DNS subdomain and the name
/// `[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?` of at most 63 characters:
/// finalizers, label and annotation keys.
pub fn qualified_name(s: &str) -> Result<(), String> {
    let (prefix, name) = match s.split_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, s),
    };
    if let Some(p) = prefix {
        dns_subdomain(p).map_err(|e| format!("prefix part {e}"))?;
    }
    let b = name.as_bytes();
    let ok = !b.is_empty()
        && b.len() <= DNS_LABEL_MAX
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
        && b.iter()
            .all(|&c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'));
    if !ok {
        return Err(format!(
            "{s:?}: name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character, at most {DNS_LABEL_MAX} characters (e.g. 'example.com/my-name')"
        ));
    }
    Ok(())
}

/// `version` (the core group) or `group/version`: a DNS subdomain group and
/// a DNS label version.
pub fn api_version(s: &str) -> Result<(), String> {
    let (group, version) = match s.split_once('/') {
        Some((g, v)) => (Some(g), v),
        None => (None, s),
    };
    if let Some(g) = group {
        dns_subdomain(g).map_err(|e| format!("apiVersion {s:?}: group {e}"))?;
    }
    dns_label(version).map_err(|e| format!("apiVersion {s:?}: version {e}"))
}

/// A kind: `[A-Za-z][A-Za-z0-9]*`, at most 63 characters (`ReplicaSet`).
pub fn kind(s: &str) -> Result<(), String> {
    let b = s.as_bytes();
    let ok = !b.is_empty()
        && b.len() <= DNS_LABEL_MAX
        && b[0].is_ascii_alphabetic()
        && b.iter().all(u8::is_ascii_alphanumeric);
    if ok {
        Ok(())
    } else {
        Err(format!(
            "kind {s:?} must be letters and digits, starting with a letter (e.g. 'ReplicaSet')"
        ))
    }
}

/// A subresource: a DNS label (`status`, `binding`, `eviction`).
pub fn subresource(s: &str) -> Result<(), String> {
    dns_label(s).map_err(|e| format!("subresource {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_and_subdomains() {
        for ok in ["a", "default", "kube-system", "a1", "1a"] {
            assert!(dns_label(ok).is_ok(), "{ok}");
        }
        for bad in ["", "-a", "a-", "A", "a.b", "a/b", "a_b", &"a".repeat(64)] {
            assert!(dns_label(bad).is_err(), "{bad}");
        }
        assert!(dns_subdomain("example.com").is_ok());
        assert!(dns_subdomain("a..b").is_err());
        assert!(dns_subdomain("default/secrets/victim?x=").is_err());
    }

    #[test]
    fn path_segments_refuse_what_would_change_the_url() {
        for ok in ["web-1", "system:node:n1", "a.b", "name with space?"] {
            assert!(path_segment(ok).is_ok(), "{ok}");
        }
        for bad in ["", ".", "..", "a/b", "a%2Fb", "a\nb", &"a".repeat(254)] {
            assert!(path_segment(bad).is_err(), "{bad:?}");
        }
        assert!(name_prefix("web-").is_ok() && name_prefix("a/").is_err());
    }

    #[test]
    fn qualified_names_api_versions_and_kinds() {
        assert!(qualified_name("example.com/cleanup").is_ok());
        assert!(qualified_name("cleanup").is_ok());
        assert!(qualified_name("example.com/").is_err());
        assert!(qualified_name("Bad_/x").is_err());
        assert!(api_version("v1").is_ok() && api_version("apps/v1").is_ok());
        assert!(api_version("../v1").is_err() && api_version("apps/v1/x").is_err());
        assert!(kind("ReplicaSet").is_ok() && kind("Pod/x").is_err() && kind("").is_err());
    }
}
