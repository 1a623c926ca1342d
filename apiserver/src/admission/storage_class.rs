//! The `DefaultStorageClass` admission plugin: a claim created without a
//! storage class gets the cluster's default one, as the real API server
//! does it (so `kubectl apply` of a bare claim is provisioned by the
//! default class's provisioner, and quotas per class count it there).

use serde_json::Value;

use crate::state::State;

/// Where StorageClasses are stored.
const STORAGE_CLASSES: &str = "storage.k8s.io/storageclasses";

/// The annotation that makes a class the default, and its beta form.
const IS_DEFAULT: [&str; 2] = [
    "storageclass.kubernetes.io/is-default-class",
    "storageclass.beta.kubernetes.io/is-default-class",
];

/// The annotation that named a claim's class before `storageClassName`.
const BETA_CLASS: &str = "volume.beta.kubernetes.io/storage-class";

/// Sets `spec.storageClassName` of `claim`, a claim being created, to the
/// default class when it names none: neither the field (an explicit `""`
/// asks for no class and is kept) nor the beta annotation. With several
/// default classes, the newest wins (then the first by name), as upstream
/// since 1.28; with none, the claim is left as it is.
pub(super) fn default_claim(st: &State, claim: &mut Value) {
    let named = !claim["spec"]["storageClassName"].is_null()
        || !claim["metadata"]["annotations"][BETA_CLASS].is_null();
    if named || !claim["spec"].is_object() {
        return;
    }
    if let Some(class) = default_class(st) {
        claim["spec"]["storageClassName"] = Value::String(class);
    }
}

/// The name of the default StorageClass, if any.
fn default_class(st: &State) -> Option<String> {
    let classes = st.list(STORAGE_CLASSES, None);
    let defaults = classes.iter().map(|o| o.value()).filter(|class| {
        IS_DEFAULT
            .iter()
            .any(|a| class["metadata"]["annotations"][a].as_str() == Some("true"))
    });
    // RFC 3339 timestamps in UTC compare as strings.
    defaults
        .map(|class| {
            let created = class["metadata"]["creationTimestamp"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            let name = class["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            (created, name)
        })
        .min_by(|(ca, na), (cb, nb)| cb.cmp(ca).then_with(|| na.cmp(nb)))
        .map(|(_, name)| name)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn class(name: &str, created: &str, default: Option<&str>) -> Value {
        let mut c = json!({
            "apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
            "metadata": {"name": name, "creationTimestamp": created},
            "provisioner": "windlass.dev/simulated",
        });
        if let Some(d) = default {
            c["metadata"]["annotations"] = json!({IS_DEFAULT[0]: d});
        }
        c
    }

    fn state(classes: &[Value]) -> State {
        let mut st = super::super::empty_state();
        for c in classes {
            let name = c["metadata"]["name"].as_str().unwrap();
            st.write(STORAGE_CLASSES, "", name, Some(c.clone()));
        }
        st
    }

    fn claim(spec: Value) -> Value {
        json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
               "metadata": {"name": "data", "namespace": "default"}, "spec": spec})
    }

    #[test]
    fn a_claim_without_a_class_gets_the_newest_default() {
        let st = state(&[
            class("old", "2026-01-01T00:00:00Z", Some("true")),
            class("new-b", "2026-02-01T00:00:00Z", Some("true")),
            class("new-a", "2026-02-01T00:00:00Z", Some("true")),
            class(
                "newest-but-not-default",
                "2026-03-01T00:00:00Z",
                Some("false"),
            ),
            class("plain", "2026-04-01T00:00:00Z", None),
        ]);
        let mut c = claim(json!({"accessModes": ["ReadWriteOnce"]}));
        default_claim(&st, &mut c);
        assert_eq!(c["spec"]["storageClassName"], "new-a");
    }

    #[test]
    fn a_named_class_an_empty_class_or_no_default_is_kept() {
        let st = state(&[class("standard", "2026-01-01T00:00:00Z", Some("true"))]);
        for spec in [
            json!({"storageClassName": "fast"}),
            json!({"storageClassName": ""}),
        ] {
            let mut c = claim(spec.clone());
            default_claim(&st, &mut c);
            assert_eq!(c["spec"], spec);
        }
        let mut beta = claim(json!({}));
        beta["metadata"]["annotations"] = json!({BETA_CLASS: "fast"});
        default_claim(&st, &mut beta);
        assert!(beta["spec"]["storageClassName"].is_null());

        let mut none = claim(json!({}));
        default_claim(&state(&[]), &mut none);
        assert!(none["spec"]["storageClassName"].is_null());
    }
}
