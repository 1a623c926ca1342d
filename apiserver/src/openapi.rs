//! OpenAPI documents of the served kinds: `/openapi/v2` (swagger 2.0, JSON
//! or the protobuf client-go reads) and `/openapi/v3` with one document per
//! group-version. Built-in kinds' schemas are the Kubernetes definitions
//! (`openapi/definitions.json`, written by `openapi/gen-definitions.py`
//! from the Kubernetes OpenAPI spec); custom resources' come from their
//! CRD's `openAPIV3Schema`. Every PATCH operation declares
//! `fieldValidation`, so kubectl leaves validation to the server; and the
//! schemas are what `kubectl explain` prints and what kubectl validates a
//! `kind: List` against.

mod v2proto;

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use crate::resources::Resource;
use crate::schema::{definition_of, definitions};
use crate::shared::Shared;

const OBJECT_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";

fn gv_path(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("api/{version}")
    } else {
        format!("apis/{group}/{version}")
    }
}

/// What the documents are built from: the served resources and the CRDs
/// (for their schemas), read under the lock once.
struct Served {
    resources: Vec<std::sync::Arc<Resource>>,
    crds: Vec<Value>,
}

fn served(shared: &Shared) -> Served {
    let st = shared.lock();
    Served {
        resources: st.registry.all().cloned().collect(),
        crds: st
            .list("apiextensions.k8s.io/customresourcedefinitions", None)
            .iter()
            .map(|o| o.value())
            .collect(),
    }
}

/// A hash of what the documents are built from, so clients' caches keyed
/// by it are refreshed when a CRD changes.
fn hash(s: &Served) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut feed = |b: &[u8]| {
        for x in b {
            h = (h ^ u64::from(*x)).wrapping_mul(0x100_0000_01b3);
        }
    };
    for r in &s.resources {
        feed(r.key().as_bytes());
        feed(r.versions.join(",").as_bytes());
    }
    for c in &s.crds {
        feed(
            c["metadata"]["resourceVersion"]
                .as_str()
                .unwrap_or_default()
                .as_bytes(),
        );
    }
    format!("{h:016X}")
}

/// The definition name kube gives a custom resource: the group reversed,
/// then version and kind (`com.example.v1.Widget`).
fn crd_definition_name(group: &str, version: &str, kind: &str) -> String {
    let mut parts: Vec<&str> = group.split('.').collect();
    parts.reverse();
    format!("{}.{version}.{kind}", parts.join("."))
}

/// The definitions of the custom resources of `crd` (one per served
/// version, with its list), as v2 definitions.
fn crd_definitions(crd: &Value, only_version: Option<&str>) -> Vec<(String, Value)> {
    let Ok(res) = crate::resources::from_crd(crd) else {
        return vec![];
    };
    let mut out = Vec::new();
    for v in crd["spec"]["versions"].as_array().into_iter().flatten() {
        let Some(version) = v["name"].as_str() else {
            continue;
        };
        if v["served"] != true || only_version.is_some_and(|o| o != version) {
            continue;
        }
        let mut s = v["schema"]["openAPIV3Schema"].clone();
        if !s.is_object() {
            s = json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true});
        }
        let mut props = s["properties"].as_object().cloned().unwrap_or_default();
        props.insert("apiVersion".into(), json!({"type": "string", "description": "APIVersion defines the versioned schema of this representation of an object."}));
        props.insert("kind".into(), json!({"type": "string", "description": "Kind is a string value representing the REST resource this object represents."}));
        props.insert("metadata".into(), json!({"$ref": format!("#/definitions/{OBJECT_META}"), "description": "Standard object's metadata."}));
        s["properties"] = Value::Object(props);
        s["type"] = json!("object");
        s["x-kubernetes-group-version-kind"] =
            json!([{"group": res.group, "version": version, "kind": res.kind}]);
        let name = crd_definition_name(&res.group, version, &res.kind);
        let list = json!({
            "description": format!("{} is a list of {}", res.list_kind(), res.kind),
            "type": "object", "required": ["items"],
            "properties": {
                "apiVersion": {"type": "string"}, "kind": {"type": "string"},
                "metadata": {"$ref": "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta"},
                "items": {"type": "array", "items": {"$ref": format!("#/definitions/{name}")}},
            },
            "x-kubernetes-group-version-kind": [{"group": res.group, "version": version, "kind": res.list_kind()}],
        });
        out.push((name.clone(), v2_schema(s)));
        out.push((
            crd_definition_name(&res.group, version, &res.list_kind()),
            list,
        ));
    }
    out
}

/// A CRD schema as OpenAPI v2 can say it, as kube publishes them: what v2
/// has no words for (`nullable`, `anyOf`, `oneOf`, `allOf`, `not`) is left
/// out, and below `x-kubernetes-preserve-unknown-fields` anything goes.
fn v2_schema(mut s: Value) -> Value {
    if let Some(o) = s.as_object_mut() {
        for k in ["nullable", "anyOf", "oneOf", "allOf", "not"] {
            o.remove(k);
        }
        if o.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true)) {
            for k in ["type", "properties", "additionalProperties", "items"] {
                o.remove(k);
            }
        }
        for k in ["items", "additionalProperties"] {
            if let Some(x) = o.remove(k) {
                o.insert(k.into(), if x.is_object() { v2_schema(x) } else { x });
            }
        }
        if let Some(Value::Object(props)) = o.remove("properties") {
            let props: Map<String, Value> =
                props.into_iter().map(|(k, v)| (k, v2_schema(v))).collect();
            o.insert("properties".into(), Value::Object(props));
        }
    }
    s
}

/// The built-in definitions (and their references) of the kinds `wanted`.
fn closure(wanted: impl IntoIterator<Item = String>) -> BTreeMap<String, Value> {
    let defs = definitions();
    let mut out = BTreeMap::new();
    let mut todo: Vec<String> = wanted.into_iter().collect();
    while let Some(name) = todo.pop() {
        if out.contains_key(&name) {
            continue;
        }
        let Some(d) = defs.get(&name) else {
            continue;
        };
        refs(d, &mut todo);
        out.insert(name, d.clone());
    }
    out
}

/// The definitions `v` refers to.
fn refs(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                match (k.as_str(), x) {
                    ("$ref", Value::String(r)) => {
                        out.push(r.rsplit('/').next().unwrap_or_default().to_owned())
                    }
                    _ => refs(x, out),
                }
            }
        }
        Value::Array(a) => a.iter().for_each(|x| refs(x, out)),
        _ => {}
    }
}

/// The definitions of the built-in kinds of `r` at `version`: the kind and its list.
fn builtin_definitions(r: &Resource, version: &str) -> Vec<String> {
    [r.kind.clone(), r.list_kind()]
        .iter()
        .filter_map(|k| definition_of(&r.group, version, k).map(str::to_owned))
        .collect()
}

/// The operations of a resource's item path, declaring the query
/// parameters kubectl looks for.
fn operations(r: &Resource, version: &str, v3: bool) -> Value {
    let gvk = json!({"group": r.group, "version": version, "kind": r.kind});
    let param = |name: &str| {
        if v3 {
            json!({"name": name, "in": "query", "schema": {"type": "string", "uniqueItems": true}})
        } else {
            json!({"name": name, "in": "query", "type": "string", "uniqueItems": true})
        }
    };
    let params = json!([
        param("fieldValidation"),
        param("fieldManager"),
        param("dryRun")
    ]);
    let op = |verb: &str| json!({"x-kubernetes-group-version-kind": gvk, "x-kubernetes-action": verb, "parameters": params, "responses": {}});
    if r.create_only {
        return json!({"post": op("post")});
    }
    json!({"get": op("get"), "put": op("put"), "patch": op("patch"), "delete": op("delete")})
}

fn item_path(r: &Resource, gv: &str) -> String {
    if r.create_only {
        format!("/{gv}/{}", r.plural)
    } else if r.namespaced {
        format!("/{gv}/namespaces/{{namespace}}/{}/{{name}}", r.plural)
    } else {
        format!("/{gv}/{}/{{name}}", r.plural)
    }
}

/// `/openapi/v2`: every served kind.
pub(crate) fn v2(shared: &Shared) -> Value {
    let s = served(shared);
    let mut wanted = Vec::new();
    let mut paths = Map::new();
    for r in s.resources.iter().filter(|r| r.builtin) {
        for v in &r.versions {
            wanted.extend(builtin_definitions(r, v));
            paths.insert(item_path(r, &gv_path(&r.group, v)), operations(r, v, false));
        }
    }
    wanted.push(OBJECT_META.into());
    wanted.push("io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta".into());
    let mut defs: Map<String, Value> = closure(wanted).into_iter().collect();
    for crd in &s.crds {
        for (name, d) in crd_definitions(crd, None) {
            defs.insert(name, d);
        }
    }
    for r in s.resources.iter().filter(|r| !r.builtin) {
        for v in &r.versions {
            paths.insert(item_path(r, &gv_path(&r.group, v)), operations(r, v, false));
        }
    }
    json!({"swagger": "2.0", "info": {"title": "Kubernetes", "version": crate::discovery::GIT_VERSION},
        "paths": paths, "definitions": defs})
}

/// The protobuf form of [`v2`].
pub(crate) fn v2_protobuf(doc: &Value) -> Vec<u8> {
    v2proto::encode(doc)
}

/// `/openapi/v3`: the index of group-version documents.
pub(crate) fn index(shared: &Shared) -> Value {
    let s = served(shared);
    let h = hash(&s);
    let mut paths = Map::new();
    for r in &s.resources {
        for v in &r.versions {
            let p = gv_path(&r.group, v);
            paths.insert(
                p.clone(),
                json!({"serverRelativeURL": format!("/openapi/v3/{p}?hash={h}")}),
            );
        }
    }
    json!({"paths": paths})
}

/// A schema in OpenAPI v3 form: references into `components/schemas`,
/// each wrapped in `allOf` as kube writes them (so that a reference can
/// have siblings, a description; and `kubectl explain` names the type).
fn to_v3(v: &Value) -> Value {
    match v {
        Value::Object(m) => {
            let reference = m.get("$ref").and_then(Value::as_str);
            let mut out = Map::new();
            for (k, x) in m {
                if k == "$ref" && reference.is_some() {
                    continue;
                }
                out.insert(k.clone(), to_v3(x));
            }
            if let Some(r) = reference {
                let r = json!({"$ref": r.replace("#/definitions/", "#/components/schemas/")});
                out.insert("allOf".into(), json!([r]));
            }
            Value::Object(out)
        }
        Value::Array(a) => Value::Array(a.iter().map(to_v3).collect()),
        other => other.clone(),
    }
}

/// The two types whose OpenAPI v3 form says more than v2 can: kube
/// publishes a Quantity as a string or a number, and an IntOrString as
/// either (so `kubectl explain` names them instead of saying `string`).
fn v3_types(name: &str, d: &mut Value) {
    let Some(o) = d.as_object_mut() else {
        return;
    };
    match name {
        "io.k8s.apimachinery.pkg.api.resource.Quantity" => {
            o.remove("type");
            o.insert(
                "oneOf".into(),
                json!([{"type": "string"}, {"type": "number"}]),
            );
        }
        "io.k8s.apimachinery.pkg.util.intstr.IntOrString" => {
            o.remove("type");
            o.remove("format");
            o.insert("x-kubernetes-int-or-string".into(), json!(true));
            o.insert(
                "anyOf".into(),
                json!([{"type": "integer"}, {"type": "string"}]),
            );
        }
        _ => {}
    }
}

/// `/openapi/v3/<api/v1 | apis/g/v>`, or `None` when nothing is served there.
pub(crate) fn group_version(shared: &Shared, gv: &str) -> Option<Value> {
    let s = served(shared);
    let mut paths = Map::new();
    let mut wanted = Vec::new();
    let mut custom = Vec::new();
    for r in &s.resources {
        for v in r.versions.iter().filter(|v| gv_path(&r.group, v) == gv) {
            paths.insert(item_path(r, gv), operations(r, v, true));
            if r.builtin {
                wanted.extend(builtin_definitions(r, v));
            } else if let Some(crd) = s
                .crds
                .iter()
                .find(|c| crate::resources::from_crd(c).is_ok_and(|x| x.key() == r.key()))
            {
                custom.extend(crd_definitions(crd, Some(v)));
                wanted.push(OBJECT_META.into());
                wanted.push("io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta".into());
            }
        }
    }
    if paths.is_empty() {
        return None;
    }
    let mut schemas = Map::new();
    for (name, d) in closure(wanted).into_iter().chain(custom) {
        let mut d = to_v3(&d);
        v3_types(&name, &mut d);
        schemas.insert(name, d);
    }
    Some(json!({"openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": crate::discovery::GIT_VERSION},
        "paths": paths, "components": {"schemas": schemas}}))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v3_references_point_into_components() {
        let d = to_v3(&json!({"properties": {
            "spec": {"$ref": "#/definitions/io.k8s.api.apps.v1.DeploymentSpec", "description": "Spec"},
            "items": {"type": "array", "items": {"$ref": "#/definitions/X"}}}}));
        assert_eq!(
            d["properties"]["spec"]["allOf"][0]["$ref"],
            "#/components/schemas/io.k8s.api.apps.v1.DeploymentSpec"
        );
        assert_eq!(d["properties"]["spec"]["description"], "Spec");
        assert_eq!(
            d["properties"]["items"]["items"]["allOf"][0]["$ref"],
            "#/components/schemas/X"
        );
    }

    #[test]
    fn built_in_kinds_come_with_everything_they_refer_to() {
        let defs = closure(["io.k8s.api.apps.v1.Deployment".to_owned()]);
        for name in [
            "io.k8s.api.apps.v1.DeploymentStrategy",
            "io.k8s.api.core.v1.PodSpec",
            OBJECT_META,
        ] {
            assert!(defs.contains_key(name), "{name}");
        }
        assert!(defs["io.k8s.api.apps.v1.DeploymentStrategy"]["description"].is_string());
    }

    #[test]
    fn every_served_kind_has_a_definition() {
        for r in crate::resources::builtins() {
            for v in &r.versions {
                assert!(
                    definition_of(&r.group, v, &r.kind).is_some(),
                    "{}/{v} {}",
                    r.group,
                    r.kind
                );
            }
        }
    }

    #[test]
    fn crd_schemas_become_definitions() {
        let crd = json!({"metadata": {"name": "widgets.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced",
                "names": {"plural": "widgets", "kind": "Widget"},
                "versions": [{"name": "v1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                        "spec": {"type": "object", "description": "The widget.", "properties": {"size": {"type": "integer", "nullable": true}}},
                        "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": true, "properties": {"a": {"type": "string"}}}}}}}]}});
        let defs: BTreeMap<String, Value> = crd_definitions(&crd, None).into_iter().collect();
        let w = &defs["com.example.v1.Widget"];
        assert_eq!(w["x-kubernetes-group-version-kind"][0]["kind"], "Widget");
        assert_eq!(w["properties"]["spec"]["description"], "The widget.");
        assert!(
            w["properties"]["spec"]["properties"]["size"]
                .get("nullable")
                .is_none()
        );
        assert!(w["properties"]["extra"].get("properties").is_none());
        assert_eq!(
            w["properties"]["metadata"]["$ref"],
            format!("#/definitions/{OBJECT_META}")
        );
        assert!(defs.contains_key("com.example.v1.WidgetList"));
    }
}
