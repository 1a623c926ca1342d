//! Pods from pod templates, as kube's controllers make them
//! (`GetPodFromTemplate`): the template's labels, annotations, finalizers
//! and spec, under the name and namespace given. The caller adds what its
//! controller adds (a revision label, a pinned node, a hostname). And
//! names as the API server generates them from a `generateName`, for a
//! controller that names its pods itself (so that its events can say which
//! pod it created, as upstream's "Created pod: web-7c5dd-x2x4k").

use serde_json::{Value, json};

/// A pod (as JSON) named `name` in `namespace` from the pod template
/// `template` (`{metadata, spec}`); `labels` is always an object, so the
/// caller can add to it.
///
/// ```
/// use windlass_sdk::{json, template};
/// let t = json!({"metadata": {"labels": {"app": "web"}}, "spec": {"containers": []}});
/// let mut pod = template::pod(&t, "shop", "web-0");
/// pod["metadata"]["labels"]["tier"] = json!("front");
/// assert_eq!(pod["metadata"], json!({"name": "web-0", "namespace": "shop",
///     "labels": {"app": "web", "tier": "front"}}));
/// assert_eq!(pod["kind"], "Pod");
/// ```
pub fn pod(template: &Value, namespace: &str, name: &str) -> Value {
    let meta = &template["metadata"];
    let mut labels = meta["labels"].clone();
    if !labels.is_object() {
        labels = json!({});
    }
    let mut metadata = json!({"name": name, "namespace": namespace, "labels": labels});
    for key in ["annotations", "finalizers"] {
        if !meta[key].is_null() {
            metadata[key] = meta[key].clone();
        }
    }
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": template["spec"].clone(),
    })
}

/// The characters of a generated name's suffix (the API server's
/// `utilrand` alphabet: no vowels, no look-alikes).
const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

/// A name as the API server completes `generateName: prefix`: the prefix
/// cut to 58 characters (`maxGeneratedNameLength`) and five characters of
/// its alphabet, drawn from `seed` rather than at random.
///
/// ```
/// use windlass_sdk::template::{generated_name, name_seed};
/// let name = generated_name("web-7c5dd-", name_seed(&[b"uid-1", &7u32.to_le_bytes()]));
/// assert_eq!(name.len(), "web-7c5dd-".len() + 5);
/// assert!(name.starts_with("web-7c5dd-"));
/// assert_eq!(name, generated_name("web-7c5dd-", name_seed(&[b"uid-1", &7u32.to_le_bytes()])));
/// ```
pub fn generated_name(prefix: &str, seed: u64) -> String {
    let mut out: String = prefix.chars().take(58).collect();
    let mut h = seed;
    for _ in 0..5 {
        out.push(ALPHABET[(h % ALPHABET.len() as u64) as usize] as char);
        h /= ALPHABET.len() as u64;
    }
    out
}

/// A seed for [`generated_name`]: FNV-1a (64 bits) over `parts` in order.
pub fn name_seed(parts: &[&[u8]]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in parts.iter().flat_map(|p| p.iter()) {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}
