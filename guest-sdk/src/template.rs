//! Pods from pod templates, as kube's controllers make them
//! (`GetPodFromTemplate`): the template's labels, annotations, finalizers
//! and spec, under the name and namespace given. The caller adds what its
//! controller adds (a revision label, a pinned node, a hostname).

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
