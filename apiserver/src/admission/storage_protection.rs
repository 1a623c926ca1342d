//! The `StorageObjectInUseProtection` admission plugin: a claim or a
//! volume being created gets its protection finalizer, as kube-apiserver
//! gives it (`kubernetes.io/pvc-protection`, `kubernetes.io/pv-protection`).
//! Deleting one then leaves it `Terminating` until the protection
//! controllers (the `persistentvolume` plugin) see that no pod uses the
//! claim, or that the volume is no longer `Bound`, and take the finalizer
//! off: a server with no controllers keeps it, as a cluster without its
//! controller manager does.

use serde_json::Value;

/// The finalizer of claims.
const CLAIM_FINALIZER: &str = "kubernetes.io/pvc-protection";

/// The finalizer of volumes.
const VOLUME_FINALIZER: &str = "kubernetes.io/pv-protection";

/// Adds the protection finalizer of its kind to `obj`, a core `plural`
/// object being created, unless it has it already (a client that sends it
/// does not get it twice). Other kinds are left alone.
pub(super) fn protect(plural: &str, obj: &mut Value) {
    let finalizer = match plural {
        "persistentvolumeclaims" => CLAIM_FINALIZER,
        "persistentvolumes" => VOLUME_FINALIZER,
        _ => return,
    };
    let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) else {
        return;
    };
    let list = meta
        .entry("finalizers")
        .or_insert_with(|| Value::Array(Vec::new()));
    if list.is_null() {
        *list = Value::Array(Vec::new());
    }
    // A list that is not one is validation's to refuse, as it is.
    if let Some(list) = list.as_array_mut()
        && !list.iter().any(|f| f.as_str() == Some(finalizer))
    {
        list.push(Value::String(finalizer.to_owned()));
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn claims_and_volumes_get_their_finalizer_once() {
        let mut claim = json!({"metadata": {"name": "data"}});
        protect("persistentvolumeclaims", &mut claim);
        assert_eq!(claim["metadata"]["finalizers"], json!([CLAIM_FINALIZER]));
        protect("persistentvolumeclaims", &mut claim);
        assert_eq!(claim["metadata"]["finalizers"], json!([CLAIM_FINALIZER]));

        let mut volume = json!({"metadata": {"name": "pv-1", "finalizers": ["example.com/keep", VOLUME_FINALIZER]}});
        protect("persistentvolumes", &mut volume);
        assert_eq!(
            volume["metadata"]["finalizers"],
            json!(["example.com/keep", VOLUME_FINALIZER])
        );
        let mut null = json!({"metadata": {"name": "pv-2", "finalizers": null}});
        protect("persistentvolumes", &mut null);
        assert_eq!(null["metadata"]["finalizers"], json!([VOLUME_FINALIZER]));

        let mut pod = json!({"metadata": {"name": "web"}});
        protect("pods", &mut pod);
        assert!(pod["metadata"].get("finalizers").is_none());
    }
}
