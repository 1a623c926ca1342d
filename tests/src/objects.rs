//! Reading the objects `kubectl get -o json` returns, as the end-to-end
//! tests check them, and the repository's example manifests.

use serde_json::Value;

/// The path of `examples/<name>`, as `kubectl apply -f` takes it.
pub fn example(name: &str) -> String {
    format!("{}/../examples/{name}", env!("CARGO_MANIFEST_DIR"))
}

/// The object's `metadata.name` (`""` if it has none).
pub fn name(object: &Value) -> String {
    object["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// The condition of `type_` in the object's `status.conditions`.
pub fn condition<'a>(object: &'a Value, type_: &str) -> Option<&'a Value> {
    object["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_)
}

/// The `status` of the condition of `type_` (`"True"`, `"False"`,
/// `"Unknown"`).
pub fn condition_status<'a>(object: &'a Value, type_: &str) -> Option<&'a str> {
    condition(object, type_)?["status"].as_str()
}

/// Whether a pod is running and ready, and not being deleted: what
/// `kubectl get pods` shows as `1/1 Running`.
pub fn running_and_ready(pod: &Value) -> bool {
    pod["metadata"]["deletionTimestamp"].is_null()
        && pod["status"]["phase"] == "Running"
        && condition_status(pod, "Ready") == Some("True")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_conditions_and_pod_state() {
        let pod = json!({
            "metadata": {"name": "p"},
            "status": {"phase": "Running", "conditions": [
                {"type": "PodScheduled", "status": "True"},
                {"type": "Ready", "status": "True"},
            ]},
        });
        assert_eq!(condition_status(&pod, "Ready"), Some("True"));
        assert_eq!(condition(&pod, "Missing"), None);
        assert!(running_and_ready(&pod));
        let mut going = pod.clone();
        going["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
        assert!(!running_and_ready(&going));
        let mut unready = pod;
        unready["status"]["conditions"][1]["status"] = json!("False");
        assert!(!running_and_ready(&unready));
        assert!(std::path::Path::new(&example("nodes.yaml")).is_file());
    }
}
