//! Just enough OpenAPI v3 for kubectl: per group-version documents whose PATCH
//! operations declare `fieldValidation`, so kubectl leaves validation to the
//! server instead of downloading full schemas. There are no schemas.

use serde_json::{Map, Value, json};

use crate::resources::Registry;

fn gv_path(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("api/{version}")
    } else {
        format!("apis/{group}/{version}")
    }
}

fn hash(reg: &Registry) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for r in reg.all() {
        for b in r.key().bytes().chain(r.versions.join(",").bytes()) {
            h = (h ^ b as u64).wrapping_mul(0x100_0000_01b3);
        }
    }
    format!("{h:016X}")
}

/// `/openapi/v3`: the index of group-version documents.
pub(crate) fn index(reg: &Registry) -> Value {
    let h = hash(reg);
    let mut paths = Map::new();
    for r in reg.all() {
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

/// `/openapi/v3/<api/v1 | apis/g/v>`, or `None` when nothing is served there.
pub(crate) fn group_version(reg: &Registry, gv: &str) -> Option<Value> {
    let mut paths = Map::new();
    for r in reg.all() {
        for v in r.versions.iter().filter(|v| gv_path(&r.group, v) == gv) {
            let base = if r.namespaced {
                format!("/{gv}/namespaces/{{namespace}}/{}/{{name}}", r.plural)
            } else {
                format!("/{gv}/{}/{{name}}", r.plural)
            };
            let gvk = json!({"group": r.group, "version": v, "kind": r.kind});
            let params = json!([
                {"name": "fieldValidation", "in": "query", "schema": {"type": "string", "uniqueItems": true}},
                {"name": "fieldManager", "in": "query", "schema": {"type": "string", "uniqueItems": true}},
                {"name": "dryRun", "in": "query", "schema": {"type": "string", "uniqueItems": true}},
            ]);
            let op = |verb: &str| json!({"x-kubernetes-group-version-kind": gvk, "x-kubernetes-action": verb, "parameters": params, "responses": {}});
            paths.insert(base, json!({"get": op("get"), "put": op("put"), "patch": op("patch"), "delete": op("delete")}));
        }
    }
    if paths.is_empty() {
        return None;
    }
    Some(
        json!({"openapi": "3.0.0", "info": {"title": "Kubernetes", "version": "v1.32.0"}, "paths": paths, "components": {"schemas": {}}}),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patch_declares_field_validation() {
        let reg = Registry::with_builtins();
        let idx = index(&reg);
        assert!(
            idx["paths"]["apis/apps/v1"]["serverRelativeURL"]
                .as_str()
                .unwrap()
                .starts_with("/openapi/v3/apis/apps/v1?hash=")
        );
        let doc = group_version(&reg, "apis/apps/v1").unwrap();
        let p = &doc["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"]["patch"];
        assert_eq!(p["x-kubernetes-group-version-kind"]["kind"], "Deployment");
        assert_eq!(p["parameters"][0]["name"], "fieldValidation");
        assert!(group_version(&reg, "apis/nope/v1").is_none());
    }
}
