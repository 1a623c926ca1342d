//! A DaemonSet's pods: what each one is (its node, its template's hash,
//! whether it is available), and new pods from the template.

use std::time::Duration;

use serde_json::{Value, json};
use windlass_sdk::{Error, Object, ObjectRef, Time, template};

use crate::nodes;

pub(crate) use windlass_sdk::revision::HASH_LABEL;

/// One daemon pod, as the controller weighs it.
#[derive(Debug, Clone)]
pub(crate) struct DaemonPod {
    pub name: String,
    pub namespace: String,
    /// The node it runs on, or is pinned to.
    pub node: Option<String>,
    pub deleting: bool,
    pub failed: bool,
    /// Made from the current template.
    pub updated: bool,
    pub ready: bool,
    /// Ready for `minReadySeconds`.
    pub available: bool,
    /// When it becomes available, if it is ready but not yet.
    pub available_at: Option<Time>,
    pub created: Option<Time>,
}

impl DaemonPod {
    pub(crate) fn of(o: &Object, hash: &str, min_ready: Duration, now: Time) -> Self {
        let ready_since = o.true_since("Ready", now);
        let deleting = o.is_being_deleted();
        let failed = matches!(o.get_str("status.phase"), Some("Failed" | "Succeeded"));
        let ready = ready_since.is_some() && !deleting && !failed;
        let available_at = ready_since.map(|t| t + min_ready).filter(|_| ready);
        DaemonPod {
            name: o.name().to_owned(),
            namespace: o.namespace().unwrap_or("default").to_owned(),
            node: nodes::target_of(o),
            deleting,
            failed,
            updated: o.label(HASH_LABEL) == Some(hash),
            ready,
            available: available_at.is_some_and(|at| at <= now),
            available_at: available_at.filter(|&at| at > now),
            created: o.creation_timestamp().and_then(Time::parse),
        }
    }

    pub(crate) fn object_ref(&self) -> ObjectRef {
        ObjectRef::new("v1", "Pod", &self.namespace, &self.name)
    }
}

/// The name of the daemon pod for `node`: `<ds>-<5 characters>`, as a
/// generated name looks, derived from the DaemonSet's uid, the node, the
/// template's hash and `n`. A reconcile that runs again before its create
/// reaches the cache names the same pod, and so does not make a second.
pub(crate) fn name(ds: &str, uid: &str, node: &str, hash: &str, n: u32) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in uid
        .bytes()
        .chain([0])
        .chain(node.bytes())
        .chain([0])
        .chain(hash.bytes())
        .chain(n.to_le_bytes())
    {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let mut out: String = ds.chars().take(57).collect();
    out.push('-');
    for _ in 0..5 {
        out.push(ALPHABET[(h % ALPHABET.len() as u64) as usize] as char);
        h /= ALPHABET.len() as u64;
    }
    out
}

/// A new daemon pod named `name` for `node`: the template with the hash
/// and generation labels, the daemon tolerations (`spec`, already with
/// them) and the node pinned in its required node affinity.
pub(crate) fn new_pod(
    ds: &Object,
    template: &Value,
    spec: &Value,
    name: &str,
    node: &str,
    hash: &str,
) -> Result<Object, Error> {
    let mut pod = template::pod(template, ds.namespace().unwrap_or("default"), name);
    let labels = &mut pod["metadata"]["labels"];
    labels[HASH_LABEL] = json!(hash);
    labels["pod-template-generation"] = json!(ds.generation().unwrap_or(1).to_string());
    pod["spec"] = spec.clone();
    nodes::pin_to_node(&mut pod["spec"], node);
    Object::from_value(pod)
}
