//! `kubectl get` columns of configuration and storage: secrets, service
//! accounts, config maps, persistent volumes and claims, resource quotas
//! and storage classes.

use serde_json::{Value, json};

use super::*;

fn quota(v: &Value, prefix: &str, keep: fn(&str) -> bool) -> Value {
    json!(join(
        v["status"]["hard"]
            .as_object()
            .into_iter()
            .flatten()
            .filter(|(k, _)| keep(k))
            .map(|(k, h)| format!(
                "{}{k}: {}/{}",
                prefix,
                s(&v["status"]["used"][k.as_str()]),
                s(h)
            ))
    ))
}

fn access_modes(v: &Value) -> Value {
    json!(join(v.as_array().into_iter().flatten().map(|m| {
        match s(m) {
            "ReadWriteOnce" => "RWO".to_owned(),
            "ReadOnlyMany" => "ROX".to_owned(),
            "ReadWriteMany" => "RWX".to_owned(),
            "ReadWriteOncePod" => "RWOP".to_owned(),
            other => other.to_owned(),
        }
    })))
}

/// A volume's or a claim's phase, `Terminating` while it is being deleted
/// (its protection finalizer holds it), as kube prints them.
fn phase(v: &Value) -> Value {
    if v["metadata"]["deletionTimestamp"].is_string() {
        return json!("Terminating");
    }
    json!(s(&v["status"]["phase"]))
}

/// Whether a claim names its volume (`spec.volumeName`).
fn bound(claim: &Value) -> bool {
    !s(&claim["spec"]["volumeName"]).is_empty()
}

/// A volume's or claim's `volumeAttributesClassName`, `<unset>` without one.
fn volume_attributes_class(v: &Value) -> Value {
    json!(
        v["spec"]["volumeAttributesClassName"]
            .as_str()
            .unwrap_or("<unset>")
    )
}

/// A volume's or claim's `volumeMode`, `<unset>` without one.
fn volume_mode(v: &Value) -> Value {
    json!(v["spec"]["volumeMode"].as_str().unwrap_or("<unset>"))
}

/// The columns of `group`/`plural` if they are among this file's kinds.
pub(super) fn columns(group: &str, plural: &str) -> Option<Vec<Column>> {
    let cols = match (group, plural) {
        ("", "secrets") => vec![
            col("Name", name),
            col("Type", |v| json!(v["type"].as_str().unwrap_or("Opaque"))),
            int("Data", |v| {
                json!(v["data"].as_object().map_or(0, |m| m.len()))
            }),
            col("Age", age),
        ],
        ("", "serviceaccounts") => vec![
            col("Name", name),
            int("Secrets", |v| {
                json!(v["secrets"].as_array().map_or(0, Vec::len))
            }),
            col("Age", age),
        ],
        ("", "configmaps") => vec![
            col("Name", name),
            int("Data", |v| {
                json!(
                    v["data"].as_object().map_or(0, |m| m.len())
                        + v["binaryData"].as_object().map_or(0, |m| m.len())
                )
            }),
            col("Age", age),
        ],
        ("", "persistentvolumes") => vec![
            col("Name", name),
            col("Capacity", |v| json!(s(&v["spec"]["capacity"]["storage"]))),
            col("Access Modes", |v| access_modes(&v["spec"]["accessModes"])),
            col("Reclaim Policy", |v| {
                json!(
                    v["spec"]["persistentVolumeReclaimPolicy"]
                        .as_str()
                        .unwrap_or("Retain")
                )
            }),
            col("Status", phase),
            col("Claim", |v| {
                let c = &v["spec"]["claimRef"];
                if c.is_object() {
                    json!(format!("{}/{}", s(&c["namespace"]), s(&c["name"])))
                } else {
                    json!("")
                }
            }),
            col("StorageClass", |v| json!(s(&v["spec"]["storageClassName"]))),
            col("VolumeAttributesClass", volume_attributes_class),
            col("Reason", |v| json!(s(&v["status"]["reason"]))),
            col("Age", age),
            wide("VolumeMode", volume_mode),
        ],
        ("", "persistentvolumeclaims") => vec![
            col("Name", name),
            col("Status", phase),
            col("Volume", |v| json!(s(&v["spec"]["volumeName"]))),
            // The bound volume's capacity and modes, none before binding.
            col("Capacity", |v| match bound(v) {
                true => json!(s(&v["status"]["capacity"]["storage"])),
                false => json!(""),
            }),
            col("Access Modes", |v| match bound(v) {
                true => access_modes(&v["status"]["accessModes"]),
                false => json!(""),
            }),
            col("StorageClass", |v| json!(s(&v["spec"]["storageClassName"]))),
            col("VolumeAttributesClass", volume_attributes_class),
            col("Age", age),
            wide("VolumeMode", volume_mode),
        ],
        ("", "resourcequotas") => vec![
            col("Name", name),
            col("Age", age),
            col("Request", |v| quota(v, "", |k| !k.starts_with("limits."))),
            col("Limit", |v| quota(v, "", |k| k.starts_with("limits."))),
        ],
        ("storage.k8s.io", "storageclasses") => vec![
            col("Name", name),
            col("Provisioner", |v| json!(s(&v["provisioner"]))),
            col("ReclaimPolicy", |v| {
                json!(v["reclaimPolicy"].as_str().unwrap_or("Delete"))
            }),
            col("VolumeBindingMode", |v| {
                json!(v["volumeBindingMode"].as_str().unwrap_or("Immediate"))
            }),
            col("AllowVolumeExpansion", |v| {
                json!(
                    v["allowVolumeExpansion"]
                        .as_bool()
                        .unwrap_or(false)
                        .to_string()
                )
            }),
            col("Age", age),
        ],
        _ => return None,
    };
    Some(cols)
}
