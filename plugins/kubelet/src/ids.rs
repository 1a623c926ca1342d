//! Identifiers a real node makes up (container and image IDs, machine and
//! boot IDs), made up here deterministically from names so that a reconcile
//! depends only on what it reads.

/// FNV-1a over `parts` (each followed by a separator), from `seed`.
pub(crate) fn fnv(seed: u64, parts: &[&str]) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325 ^ seed;
    for part in parts {
        for b in part.bytes().chain([0xff]) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    h
}

/// `n` hex digits (at most 64) derived from `parts`.
pub(crate) fn hex(parts: &[&str], n: usize) -> String {
    let mut out = String::with_capacity(64);
    for seed in 0..4u64 {
        out.push_str(&format!("{:016x}", fnv(seed, parts)));
    }
    out.truncate(n);
    out
}

/// A UUID-shaped identifier (`8-4-4-4-12` hex digits) derived from `parts`.
pub(crate) fn uuid(parts: &[&str]) -> String {
    let h = hex(parts, 32);
    format!(
        "{}-{}-{}-{}-{}",
        &h[..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..]
    )
}

/// The runtime's ID of one run of a container: `containerd://` and 64 hex
/// digits, new for every restart.
pub(crate) fn container_id(pod_uid: &str, container: &str, run: i64) -> String {
    format!(
        "containerd://{}",
        hex(&[pod_uid, container, &run.to_string()], 64)
    )
}

/// The image digest a runtime reports for `image`, as containerd spells it:
/// the fully qualified repository and a `sha256` digest
/// (`docker.io/library/nginx@sha256:…` for `nginx:1.27`). An image already
/// pinned by digest is reported as it is.
pub(crate) fn image_id(image: &str) -> String {
    if image.contains("@sha256:") {
        return qualified(image);
    }
    let repo = match image.rfind(':') {
        // A colon after the last slash starts the tag, not a registry port.
        Some(i) if !image[i..].contains('/') => &image[..i],
        _ => image,
    };
    format!("{}@sha256:{}", qualified(repo), hex(&[image], 64))
}

/// `repo` with Docker Hub's implicit registry and `library/` made explicit.
fn qualified(repo: &str) -> String {
    match repo.split_once('/') {
        None => format!("docker.io/library/{repo}"),
        Some((first, _)) if first.contains(['.', ':']) || first == "localhost" => repo.to_owned(),
        Some(_) => format!("docker.io/{repo}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn image_ids_look_like_containerd_ones() {
        let id = image_id("nginx:1.27");
        assert!(id.starts_with("docker.io/library/nginx@sha256:"), "{id}");
        assert_eq!(id.len(), "docker.io/library/nginx@sha256:".len() + 64);
        assert!(image_id("bitnami/redis").starts_with("docker.io/bitnami/redis@sha256:"));
        assert!(image_id("registry.k8s.io/pause:3.9").starts_with("registry.k8s.io/pause@sha256:"));
        assert!(image_id("localhost:5000/app").starts_with("localhost:5000/app@sha256:"));
        assert_eq!(
            image_id("nginx@sha256:abc"),
            "docker.io/library/nginx@sha256:abc"
        );
        assert_ne!(image_id("nginx:1.27"), image_id("nginx:1.28"));
    }

    #[test]
    fn ids_are_stable_and_distinct() {
        assert_eq!(container_id("u", "c", 0), container_id("u", "c", 0));
        assert_ne!(container_id("u", "c", 0), container_id("u", "c", 1));
        assert_eq!(container_id("u", "c", 0).len(), "containerd://".len() + 64);
        assert_eq!(uuid(&["n"]).len(), 36);
    }
}
