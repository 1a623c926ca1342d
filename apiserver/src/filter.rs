//! Which objects a list or watch selects: namespace, name, label and field selectors.

use windlass_selector::{FieldSelector, LabelSelector};

use crate::attrs::Attrs;
use crate::request::Query;
use crate::resources::Resource;
use crate::status::{ApiError, ApiResult};

#[derive(Debug, Clone)]
pub(crate) struct Filter {
    /// The resource's group and plural (which fields mean what).
    group: String,
    plural: String,
    ns: Option<String>,
    labels: LabelSelector,
    fields: FieldSelector,
}

impl Filter {
    /// From `labelSelector` / `fieldSelector`; unknown fields are a 400 like the real server.
    pub(crate) fn parse(
        res: &Resource,
        q: &Query,
        ns: Option<&str>,
        name: Option<&str>,
    ) -> ApiResult<Self> {
        let labels =
            LabelSelector::parse(q.get("labelSelector").unwrap_or_default()).map_err(|e| {
                ApiError::bad_request(format!("unable to parse requirement: {}", e.reason()))
            })?;
        let mut fs = q.get("fieldSelector").unwrap_or_default().to_owned();
        if let Some(n) = name {
            if !fs.is_empty() {
                fs.push(',');
            }
            fs.push_str(&format!("metadata.name={n}"));
        }
        let fields = FieldSelector::parse(&fs).map_err(|e| ApiError::bad_request(e.to_string()))?;
        for r in fields.requirements() {
            crate::fields::check(res, r.field()).map_err(ApiError::bad_request)?;
        }
        // events.k8s.io Events are stored as core ones, and selected by
        // the core fields theirs convert to.
        let (group, plural, fields) = if res.is_events_api() {
            (
                "",
                "events",
                fields.renamed(crate::fields::core_event_field),
            )
        } else {
            (res.group.as_str(), res.plural.as_str(), fields)
        };
        Ok(Self {
            group: group.to_owned(),
            plural: plural.to_owned(),
            ns: ns.map(str::to_owned),
            labels,
            fields,
        })
    }

    /// The namespace the request is limited to.
    pub(crate) fn namespace(&self) -> Option<&str> {
        self.ns.as_deref()
    }

    /// A name pinned by the field selector (`metadata.name=x`), for fast gets.
    pub(crate) fn is_everything(&self) -> bool {
        self.labels.is_empty() && self.fields.is_empty()
    }

    /// Whether a stored object with attributes `a` is selected.
    pub(crate) fn matches(&self, a: &Attrs) -> bool {
        if let Some(ns) = &self.ns
            && *a.namespace != **ns
        {
            return false;
        }
        self.labels.matches(|k| a.label(k))
            && self
                .fields
                .matches(|f| Some(a.field(&self.group, &self.plural, f)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources::builtins;
    use serde_json::json;

    fn pods() -> Resource {
        builtins().into_iter().find(|r| r.plural == "pods").unwrap()
    }

    #[test]
    fn selects_by_labels_and_fields() {
        let q = Query::parse(Some(
            "labelSelector=app%3Dweb&fieldSelector=spec.nodeName%3Dn1",
        ));
        let f = Filter::parse(&pods(), &q, Some("d"), None).unwrap();
        let p = json!({"metadata": {"name": "p", "namespace": "d", "labels": {"app": "web"}}, "spec": {"nodeName": "n1"}});
        let attrs = |v: &serde_json::Value| Attrs::of("", "pods", v);
        assert!(f.matches(&attrs(&p)));
        let mut other = p.clone();
        other["spec"]["nodeName"] = json!("n2");
        assert!(!f.matches(&attrs(&other)));
        other["spec"]["nodeName"] = json!("n1");
        other["metadata"]["namespace"] = json!("e");
        assert!(!f.matches(&attrs(&other)));
        other["metadata"]["namespace"] = json!("d");
        other["metadata"]["labels"]["app"] = json!("db");
        assert!(!f.matches(&attrs(&other)));
    }

    #[test]
    fn unknown_fields_are_rejected() {
        let q = Query::parse(Some("fieldSelector=spec.foo%3D1"));
        let e = Filter::parse(&pods(), &q, None, None).unwrap_err();
        assert_eq!(e.code, 400);
        assert!(e.message.contains("spec.foo"));
    }
}
