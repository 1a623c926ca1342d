//! Which objects a list or watch selects: namespace, name, label and field selectors.

use windlass_selector::partial::Fields;
use windlass_selector::{FieldSelector, LabelSelector};

use crate::request::Query;
use crate::resources::Resource;
use crate::state::Obj;
use crate::status::{ApiError, ApiResult};

#[derive(Debug, Clone)]
pub(crate) struct Filter {
    /// The resource's group and plural (which fields mean what).
    group: String,
    plural: String,
    ns: Option<String>,
    labels: LabelSelector,
    fields: FieldSelector,
    /// The custom resource's `selectableFields` the selector names, and
    /// the parts of an object to read for them (they are not among the
    /// stored attributes: a CRD's update may change them).
    custom: Option<(Vec<String>, Fields)>,
}

impl Filter {
    /// From `labelSelector` / `fieldSelector` of a request in `version`;
    /// unknown fields are a 400 like the real server.
    pub(crate) fn parse(
        res: &Resource,
        version: &str,
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
            crate::fields::check(res, version, r.field()).map_err(ApiError::bad_request)?;
        }
        let selectable = res.selectable_fields(version);
        let custom: Vec<String> = fields
            .requirements()
            .iter()
            .map(|r| r.field())
            .filter(|f| selectable.iter().any(|s| s == f))
            .map(str::to_owned)
            .collect();
        let custom = (!custom.is_empty()).then(|| {
            let paths: Vec<&str> = custom.iter().map(String::as_str).collect();
            let read = Fields::of(&paths);
            (custom, read)
        });
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
            custom,
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

    /// Whether stored object `o` is selected: by its attributes, and for a
    /// custom resource's selectable fields by the fields read from it.
    pub(crate) fn matches(&self, o: &Obj) -> bool {
        let a = &o.attrs;
        if let Some(ns) = &self.ns
            && *a.namespace != **ns
        {
            return false;
        }
        if !self.labels.matches(|k| a.label(k)) {
            return false;
        }
        let Some((names, read)) = &self.custom else {
            return self
                .fields
                .matches(|f| Some(a.field(&self.group, &self.plural, f)));
        };
        let part = o.fields(read);
        let values: Vec<(&str, Option<String>)> = names
            .iter()
            .map(|f| (f.as_str(), crate::fields::selectable_value(&part, f)))
            .collect();
        self.fields
            .matches(|f| match values.iter().find(|(n, _)| *n == f) {
                Some((_, v)) => v.as_deref(),
                None => Some(a.field(&self.group, &self.plural, f)),
            })
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
        let f = Filter::parse(&pods(), "v1", &q, Some("d"), None).unwrap();
        let p = json!({"metadata": {"name": "p", "namespace": "d", "labels": {"app": "web"}}, "spec": {"nodeName": "n1"}});
        let attrs = |v: &serde_json::Value| Obj::new("pods", 1, v);
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
    fn custom_resources_are_selected_by_their_selectable_fields() {
        let crd = json!({"metadata": {"name": "routes.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"plural": "routes", "kind": "Route"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "selectableFields": [{"jsonPath": ".spec.host"}, {"jsonPath": ".spec.port"},
                    {"jsonPath": ".spec.tls"}]}]}});
        let routes = crate::resources::from_crd(&crd).unwrap();
        let route = |spec: serde_json::Value| {
            Obj::new(
                "example.com/routes",
                1,
                &json!({"metadata": {"name": "r", "namespace": "d"}, "spec": spec}),
            )
        };
        let select = |fs: &str| {
            let q = Query::parse(Some(&format!("fieldSelector={fs}")));
            Filter::parse(&routes, "v1", &q, None, None)
        };
        let f = select("spec.host%3Da.com,spec.port%3D443,spec.tls%3Dtrue").unwrap();
        assert!(f.matches(&route(json!({"host": "a.com", "port": 443, "tls": true}))));
        assert!(!f.matches(&route(json!({"host": "b.com", "port": 443, "tls": true}))));
        // A missing field is "", as in kube.
        let absent = select("spec.host%21%3Da.com").unwrap();
        assert!(absent.matches(&route(json!({}))));
        assert!(
            select("spec.host%3D")
                .unwrap()
                .matches(&route(json!({"port": 1})))
        );
        // Other fields, and other versions, are refused in kube's words.
        let e = select("spec.other%3Dx").unwrap_err();
        assert_eq!(e.code, 400);
        assert_eq!(
            e.message,
            "\"spec.other\" is not a known field selector: only \"metadata.name\", \"metadata.namespace\""
        );
        let q = Query::parse(Some("fieldSelector=spec.host%3Dx"));
        assert!(Filter::parse(&routes, "v2", &q, None, None).is_err());
    }

    #[test]
    fn unknown_fields_are_rejected() {
        let q = Query::parse(Some("fieldSelector=spec.foo%3D1"));
        let e = Filter::parse(&pods(), "v1", &q, None, None).unwrap_err();
        assert_eq!(e.code, 400);
        assert!(e.message.contains("spec.foo"));
    }
}
