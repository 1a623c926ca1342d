//! The HPA's scale target: which object `spec.scaleTargetRef` names, the
//! scale upstream would read from its `scale` subresource (read here from
//! the cache), the error text upstream would get when it cannot, and the
//! write that sets its replicas.

use serde_json::{Value, json};
use windlass_sdk::{Error, Object, ObjectRef, Write, cache};

/// A kind this plugin scales.
#[derive(Debug)]
pub(crate) struct Scalable {
    group: &'static str,
    /// The version the plugin reads and writes it in.
    pub(crate) api_version: &'static str,
    pub(crate) kind: &'static str,
    resource: &'static str,
}

/// The kinds an HPA can point at here: the built-in ones with a `scale`
/// subresource.
pub(crate) const SCALABLE: [Scalable; 4] = [
    Scalable {
        group: "apps",
        api_version: "apps/v1",
        kind: "Deployment",
        resource: "deployments",
    },
    Scalable {
        group: "apps",
        api_version: "apps/v1",
        kind: "ReplicaSet",
        resource: "replicasets",
    },
    Scalable {
        group: "apps",
        api_version: "apps/v1",
        kind: "StatefulSet",
        resource: "statefulsets",
    },
    Scalable {
        group: "",
        api_version: "v1",
        kind: "ReplicationController",
        resource: "replicationcontrollers",
    },
];

/// Built-in kinds the API server knows but serves no scale for, by group,
/// kind and resource: a scale GET of one is answered 404 without a body.
const UNSCALABLE: [(&str, &str, &str); 4] = [
    ("apps", "DaemonSet", "daemonsets"),
    ("batch", "Job", "jobs"),
    ("batch", "CronJob", "cronjobs"),
    ("", "Pod", "pods"),
];

/// What the `scale` subresource of the target says.
#[derive(Debug, Clone)]
pub(crate) struct Target {
    reference: ObjectRef,
    /// `spec.replicas` of the scale: what upstream calls the current count.
    pub(crate) spec_replicas: i64,
    /// Whether the scale's `status.selector` is non-empty.
    pub(crate) has_selector: bool,
}

/// The outcome of reading the target's scale.
pub(crate) enum Scale {
    Found(Target),
    /// Upstream's error text: the event's message, the condition's cause.
    Failed(String),
}

/// The group of an `apiVersion`, as `schema.ParseGroupVersion` splits it.
fn group_of(api_version: &str) -> Result<&str, String> {
    if api_version == "/" {
        return Ok("");
    }
    match api_version.split_once('/') {
        None => Ok(""),
        Some((group, version)) if !version.contains('/') => Ok(group),
        Some(_) => Err(format!("unexpected GroupVersion string: {api_version}")),
    }
}

/// `deployments.apps`, or `replicationcontrollers` for the core group.
fn qualified(resource: &str, group: &str) -> String {
    if group.is_empty() {
        resource.to_owned()
    } else {
        format!("{resource}.{group}")
    }
}

/// Why a kind that is not one of [`SCALABLE`] has no scale: the REST
/// mapper knows no such kind, or the server has no scale for it.
fn no_scale(group: &str, kind: &str, name: &str) -> String {
    match UNSCALABLE
        .iter()
        .find(|(g, k, _)| *g == group && *k == kind)
    {
        Some((_, _, resource)) => format!(
            "the server could not find the requested resource (get {} {name})",
            qualified(resource, group)
        ),
        None => format!("no matches for kind {kind:?} in group {group:?}"),
    }
}

/// The scalable kind `api_version`/`kind` names, by group and kind (the
/// version does not matter, as upstream's REST mapping).
pub(crate) fn scalable(api_version: &str, kind: &str) -> Option<&'static Scalable> {
    let group = group_of(api_version).ok()?;
    SCALABLE.iter().find(|s| s.group == group && s.kind == kind)
}

/// Reads the scale of the HPA's target from the cache.
pub(crate) fn read(hpa: &Object) -> Result<Scale, Error> {
    let reference = |field: &str| {
        hpa.get_str(&format!("spec.scaleTargetRef.{field}"))
            .unwrap_or_default()
    };
    let (api_version, kind, name) = (
        reference("apiVersion"),
        reference("kind"),
        reference("name"),
    );
    let group = match group_of(api_version) {
        Ok(g) => g,
        Err(e) => return Ok(Scale::Failed(e)),
    };
    let Some(scalable) = SCALABLE.iter().find(|s| s.group == group && s.kind == kind) else {
        return Ok(Scale::Failed(no_scale(group, kind, name)));
    };
    if name.is_empty() {
        // client-go refuses the request before sending it.
        return Ok(Scale::Failed("resource name may not be empty".into()));
    }
    let ns = hpa.namespace().unwrap_or("default");
    let reference = ObjectRef::new(scalable.api_version, scalable.kind, ns, name);
    let Some(object) = cache::get(&reference)? else {
        let resource = qualified(scalable.resource, scalable.group);
        return Ok(Scale::Failed(format!("{resource} {name:?} not found")));
    };
    Ok(Scale::Found(Target {
        reference,
        // The API server defaults a missing `replicas` to 1.
        spec_replicas: object.get_i64("spec.replicas").unwrap_or(1),
        has_selector: has_selector(object.get("spec.selector")),
    }))
}

/// Whether a selector selects by something: a `LabelSelector` with match
/// labels or expressions, or a ReplicationController's plain map.
fn has_selector(selector: Option<&Value>) -> bool {
    let Some(Value::Object(sel)) = selector else {
        return false;
    };
    let non_empty = |k: &str| match sel.get(k) {
        Some(Value::Object(m)) => !m.is_empty(),
        Some(Value::Array(a)) => !a.is_empty(),
        _ => false,
    };
    if sel.contains_key("matchLabels") || sel.contains_key("matchExpressions") {
        non_empty("matchLabels") || non_empty("matchExpressions")
    } else {
        !sel.is_empty()
    }
}

impl Target {
    /// Sets the target's replicas: a merge patch of its `scale`
    /// subresource.
    pub(crate) fn scale_to(&self, replicas: i64) -> Write {
        Write::MergePatch {
            target: self.reference.clone(),
            subresource: Some("scale".to_owned()),
            patch: json!({"spec": {"replicas": replicas}}),
        }
    }
}

/// Whether the HPA's `scaleTargetRef` names `object` (by group, kind,
/// namespace and name).
pub(crate) fn names(hpa: &Object, object: &Object) -> bool {
    let r = |field: &str| hpa.get_str(&format!("spec.scaleTargetRef.{field}"));
    let same_group = match (
        r("apiVersion").map(group_of),
        group_of(object.api_version()),
    ) {
        (Some(Ok(a)), Ok(b)) => a == b,
        _ => false,
    };
    same_group
        && r("kind") == Some(object.kind())
        && r("name") == Some(object.name())
        && hpa.namespace() == object.namespace()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_split_as_kubernetes_parses_them() {
        assert_eq!(group_of("apps/v1"), Ok("apps"));
        assert_eq!(group_of("v1"), Ok(""));
        assert_eq!(group_of(""), Ok(""));
        assert_eq!(
            group_of("a/b/c"),
            Err("unexpected GroupVersion string: a/b/c".into())
        );
    }

    #[test]
    fn a_kind_without_scale_explains_itself_as_the_server_would() {
        assert_eq!(
            no_scale("example.com", "Widget", "w"),
            r#"no matches for kind "Widget" in group "example.com""#
        );
        assert_eq!(
            no_scale("apps", "DaemonSet", "logs"),
            "the server could not find the requested resource (get daemonsets.apps logs)"
        );
    }

    #[test]
    fn selectors_count_only_when_they_select_something() {
        assert!(has_selector(Some(&json!({"matchLabels": {"app": "web"}}))));
        assert!(has_selector(Some(
            &json!({"matchExpressions": [{"key": "a"}]})
        )));
        assert!(has_selector(Some(&json!({"app": "web"}))));
        assert!(!has_selector(Some(&json!({}))));
        assert!(!has_selector(Some(&json!({"matchLabels": {}}))));
        assert!(!has_selector(None));
    }
}
