//! Storage validation in kube's order and words: PersistentVolumeClaims
//! (`ValidatePersistentVolumeClaimSpec`, and the update rule that a claim's
//! spec is fixed but for binding it), PersistentVolumes
//! (`ValidatePersistentVolumeSpec`: access modes, capacity, exactly one
//! volume source) and StorageClasses (`ValidateStorageClass`, and the
//! fields an update may not change).

use serde_json::Value;
use windlass_selector::resources::quantity_from_json;

use crate::causes::{self as field, Causes};

const ACCESS_MODES: [&str; 4] = [
    "ReadOnlyMany",
    "ReadWriteMany",
    "ReadWriteOnce",
    "ReadWriteOncePod",
];
const VOLUME_MODES: [&str; 2] = ["Block", "Filesystem"];
const RECLAIM_POLICIES: [&str; 3] = ["Delete", "Recycle", "Retain"];
const CLASS_RECLAIM_POLICIES: [&str; 2] = ["Delete", "Retain"];
const BINDING_MODES: [&str; 2] = ["Immediate", "WaitForFirstConsumer"];

/// The volume sources a PersistentVolume may name, one of them.
const SOURCES: [&str; 22] = [
    "gcePersistentDisk",
    "awsElasticBlockStore",
    "hostPath",
    "glusterfs",
    "nfs",
    "rbd",
    "iscsi",
    "cinder",
    "cephfs",
    "fc",
    "flocker",
    "flexVolume",
    "azureFile",
    "vsphereVolume",
    "quobyte",
    "azureDisk",
    "photonPersistentDisk",
    "portworxVolume",
    "scaleIO",
    "local",
    "storageos",
    "csi",
];

/// Access modes: at least one when `required`, each a known one.
fn access_modes(spec: &Value, required: Option<&str>, errs: &mut Causes) {
    let modes = spec["accessModes"]
        .as_array()
        .map_or(&[][..], Vec::as_slice);
    if modes.is_empty()
        && let Some(detail) = required
    {
        field::required(errs, "spec.accessModes", detail);
    }
    for m in modes {
        if !m.as_str().is_some_and(|m| ACCESS_MODES.contains(&m)) {
            field::not_supported(errs, "spec.accessModes", m, &ACCESS_MODES);
        }
    }
}

/// A quantity that must be above zero, at `path`.
fn positive(q: &Value, path: &str, errs: &mut Causes) {
    match quantity_from_json(q) {
        Ok(v) if !v.is_zero() && !v.is_negative() => {}
        Ok(_) => field::invalid(errs, path, q, "must be greater than zero"),
        // Unparsable quantities are the decoder's 400, before validation.
        Err(_) => {}
    }
}

fn volume_mode(spec: &Value, errs: &mut Causes) {
    let mode = &spec["volumeMode"];
    if !mode.is_null() && !mode.as_str().is_some_and(|m| VOLUME_MODES.contains(&m)) {
        field::not_supported(errs, "spec.volumeMode", mode, &VOLUME_MODES);
    }
}

/// Problems with the PersistentVolumeClaim `claim`.
pub(crate) fn claim_errors(claim: &Value) -> Causes {
    let mut errs = Causes::new();
    let spec = &claim["spec"];
    access_modes(spec, Some("at least 1 access mode is required"), &mut errs);
    match &spec["resources"]["requests"]["storage"] {
        Value::Null => field::required(&mut errs, "spec.resources[storage]", ""),
        q => positive(q, "spec.resources[storage]", &mut errs),
    }
    volume_mode(spec, &mut errs);
    errs
}

/// What an update of a claim may not change: its spec, but for binding it
/// (`volumeName` while it has none), a class given to a claim that had
/// none (`storageClassName`, as the default class is given retroactively),
/// and the storage it requests once it is bound (expansion).
pub(crate) fn claim_update_errors(old: &Value, new: &Value) -> Causes {
    let mut errs = Causes::new();
    let mut was = old["spec"].clone();
    let now = new["spec"].clone();
    // `was` takes `now`'s `key`, absent if `now` has none.
    let take = |was: &mut Value, now: &Value, key: &str| {
        if let Some(m) = was.as_object_mut() {
            match now.get(key) {
                Some(v) => m.insert(key.to_owned(), v.clone()),
                None => m.remove(key),
            };
        }
    };
    if old["spec"]["volumeName"].as_str().is_none_or(str::is_empty) {
        take(&mut was, &now, "volumeName");
        if was["storageClassName"].is_null() {
            take(&mut was, &now, "storageClassName");
        }
    }
    if new["status"]["phase"] == "Bound" {
        let requests = now["resources"]["requests"].clone();
        take(&mut was["resources"]["requests"], &requests, "storage");
    }
    if was != now {
        field::forbidden(
            &mut errs,
            "spec",
            "spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims",
        );
    }
    errs
}

/// Problems with the PersistentVolume `volume` (after its defaults).
pub(crate) fn volume_errors(volume: &Value) -> Causes {
    let mut errs = Causes::new();
    let spec = &volume["spec"];
    access_modes(spec, Some(""), &mut errs);
    let capacity = spec["capacity"].as_object();
    if capacity.is_none_or(|c| c.is_empty()) {
        field::required(&mut errs, "spec.capacity", "");
    }
    if let Some(c) = capacity.filter(|c| !c.is_empty()) {
        if !c.contains_key("storage") || c.len() > 1 {
            field::not_supported(&mut errs, "spec.capacity", &spec["capacity"], &["storage"]);
        }
        for (name, q) in c {
            positive(q, &format!("spec.capacity[{name}]"), &mut errs);
        }
    }
    let policy = &spec["persistentVolumeReclaimPolicy"];
    if !policy
        .as_str()
        .is_some_and(|p| RECLAIM_POLICIES.contains(&p))
    {
        field::not_supported(
            &mut errs,
            "spec.persistentVolumeReclaimPolicy",
            policy,
            &RECLAIM_POLICIES,
        );
    }
    volume_mode(spec, &mut errs);
    let sources: Vec<&str> = SOURCES.into_iter().filter(|s| !spec[s].is_null()).collect();
    match sources[..] {
        [] => field::required(&mut errs, "spec", "must specify a volume type"),
        ["local"] if spec["nodeAffinity"].is_null() => field::required(
            &mut errs,
            "spec.nodeAffinity",
            "Local volume requires node affinity",
        ),
        [_] => {}
        [_, second, ..] => field::forbidden(
            &mut errs,
            format!("spec.{second}"),
            "may not specify more than 1 volume type",
        ),
    }
    errs
}

/// Problems with the StorageClass `class` (after its defaults).
pub(crate) fn class_errors(class: &Value) -> Causes {
    let mut errs = Causes::new();
    if class["provisioner"].as_str().is_none_or(str::is_empty) {
        field::required(&mut errs, "provisioner", "");
    }
    let policy = &class["reclaimPolicy"];
    if !policy
        .as_str()
        .is_some_and(|p| CLASS_RECLAIM_POLICIES.contains(&p))
    {
        field::not_supported(&mut errs, "reclaimPolicy", policy, &CLASS_RECLAIM_POLICIES);
    }
    let mode = &class["volumeBindingMode"];
    if !mode.as_str().is_some_and(|m| BINDING_MODES.contains(&m)) {
        field::not_supported(&mut errs, "volumeBindingMode", mode, &BINDING_MODES);
    }
    errs
}

/// What an update of a StorageClass may not change.
pub(crate) fn class_update_errors(old: &Value, new: &Value) -> Causes {
    let mut errs = Causes::new();
    for f in ["parameters", "provisioner", "reclaimPolicy"] {
        if old[f] != new[f] {
            field::forbidden(&mut errs, f, &format!("updates to {f} are forbidden."));
        }
    }
    if old["volumeBindingMode"] != new["volumeBindingMode"] {
        field::invalid(
            &mut errs,
            "volumeBindingMode",
            &new["volumeBindingMode"],
            "field is immutable",
        );
    }
    errs
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn messages(errs: Causes) -> Vec<String> {
        errs.into_iter().map(|(f, m)| format!("{f}: {m}")).collect()
    }

    #[test]
    fn claims_need_access_modes_and_a_positive_request() {
        let table = [
            (
                json!({}),
                vec![
                    "spec.accessModes: Required value: at least 1 access mode is required",
                    "spec.resources[storage]: Required value",
                ],
            ),
            (
                json!({"accessModes": ["ReadWriteOnce", "Sometimes"],
                       "resources": {"requests": {"storage": "0"}}, "volumeMode": "Tape"}),
                vec![
                    r#"spec.accessModes: Unsupported value: "Sometimes": supported values: "ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod""#,
                    r#"spec.resources[storage]: Invalid value: "0": must be greater than zero"#,
                    r#"spec.volumeMode: Unsupported value: "Tape": supported values: "Block", "Filesystem""#,
                ],
            ),
            (
                json!({"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}),
                vec![],
            ),
        ];
        for (spec, want) in table {
            assert_eq!(
                messages(claim_errors(&json!({"spec": spec}))),
                want,
                "{spec}"
            );
        }
    }

    #[test]
    fn a_claims_spec_changes_only_to_bind_it() {
        let claim = |spec: Value, phase: &str| json!({"spec": spec, "status": {"phase": phase}});
        let base = json!({"accessModes": ["ReadWriteOnce"],
                          "resources": {"requests": {"storage": "1Gi"}}});
        let with = |k: &str, v: Value| {
            let mut s = base.clone();
            s[k] = v;
            s
        };
        let bigger = json!({"requests": {"storage": "2Gi"}});
        // (old, new, allowed)
        let table = [
            (
                claim(base.clone(), "Pending"),
                claim(with("volumeName", json!("pv-1")), "Bound"),
                true,
            ),
            (
                claim(base.clone(), "Pending"),
                claim(with("storageClassName", json!("standard")), "Pending"),
                true,
            ),
            (
                claim(with("volumeName", json!("pv-1")), "Bound"),
                claim(with("volumeName", json!("pv-2")), "Bound"),
                false,
            ),
            (
                claim(with("storageClassName", json!("a")), "Pending"),
                claim(with("storageClassName", json!("b")), "Pending"),
                false,
            ),
            (
                claim(base.clone(), "Pending"),
                claim(with("accessModes", json!(["ReadWriteMany"])), "Pending"),
                false,
            ),
            (
                claim(base.clone(), "Pending"),
                claim(with("resources", bigger.clone()), "Pending"),
                false,
            ),
            (
                claim(base.clone(), "Bound"),
                claim(with("resources", bigger), "Bound"),
                true,
            ),
        ];
        for (old, new, allowed) in table {
            let errs = claim_update_errors(&old, &new);
            assert_eq!(errs.is_empty(), allowed, "{old} -> {new}: {errs:?}");
        }
    }

    #[test]
    fn volumes_need_modes_capacity_and_one_source() {
        let table = [
            (
                json!({"persistentVolumeReclaimPolicy": "Retain"}),
                vec![
                    "spec.accessModes: Required value",
                    "spec.capacity: Required value",
                    "spec: Required value: must specify a volume type",
                ],
            ),
            (
                json!({"accessModes": ["ReadWriteOnce"], "capacity": {"storage": "1Gi", "cpu": "1"},
                       "persistentVolumeReclaimPolicy": "Shred",
                       "hostPath": {"path": "/a"}, "nfs": {"server": "s", "path": "/"}}),
                vec![
                    r#"spec.capacity: Unsupported value: {"cpu":"1","storage":"1Gi"}: supported values: "storage""#,
                    r#"spec.persistentVolumeReclaimPolicy: Unsupported value: "Shred": supported values: "Delete", "Recycle", "Retain""#,
                    "spec.nfs: Forbidden: may not specify more than 1 volume type",
                ],
            ),
            (
                json!({"accessModes": ["ReadWriteOnce"], "capacity": {"storage": "1Gi"},
                       "persistentVolumeReclaimPolicy": "Delete", "local": {"path": "/d"}}),
                vec!["spec.nodeAffinity: Required value: Local volume requires node affinity"],
            ),
            (
                json!({"accessModes": ["ReadWriteOnce"], "capacity": {"storage": "1Gi"},
                       "persistentVolumeReclaimPolicy": "Retain", "hostPath": {"path": "/a"}}),
                vec![],
            ),
        ];
        for (spec, want) in table {
            assert_eq!(
                messages(volume_errors(&json!({"spec": spec}))),
                want,
                "{spec}"
            );
        }
    }

    #[test]
    fn classes_need_a_provisioner_and_keep_it() {
        let class = json!({"provisioner": "windlass.dev/simulated", "reclaimPolicy": "Delete",
                           "volumeBindingMode": "Immediate"});
        assert!(class_errors(&class).is_empty());
        assert_eq!(
            messages(class_errors(
                &json!({"reclaimPolicy": "Recycle", "volumeBindingMode": "Later"})
            )),
            [
                "provisioner: Required value",
                r#"reclaimPolicy: Unsupported value: "Recycle": supported values: "Delete", "Retain""#,
                r#"volumeBindingMode: Unsupported value: "Later": supported values: "Immediate", "WaitForFirstConsumer""#,
            ]
        );
        let mut changed = class.clone();
        changed["provisioner"] = json!("other");
        changed["volumeBindingMode"] = json!("WaitForFirstConsumer");
        assert_eq!(
            messages(class_update_errors(&class, &changed)),
            [
                "provisioner: Forbidden: updates to provisioner are forbidden.",
                r#"volumeBindingMode: Invalid value: "WaitForFirstConsumer": field is immutable"#,
            ]
        );
        let mut labelled = class.clone();
        labelled["metadata"] = json!({"labels": {"a": "b"}});
        assert!(class_update_errors(&class, &labelled).is_empty());
    }
}
