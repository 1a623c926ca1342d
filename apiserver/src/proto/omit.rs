//! A built-in object's JSON as kube-apiserver stores and serves it after
//! its round trip through Go: fields Go's JSON encoding leaves out are left
//! out here too. A plain (non-pointer) `omitempty` value at `false`, `0` or
//! `""`, and an `omitempty` list or map that is empty, go; a pointer's
//! explicit zero, a field without `omitempty` and a struct stay. A client
//! that writes `hostNetwork: false` or `taints: []` reads back what it
//! would from a cluster: neither.
//!
//! The fields are those `schema()` marks from `omitempty.txt` (from the Go
//! types); where a field's value is a message, the walk goes into it by
//! `schema.txt`.

use std::collections::HashMap;
use std::sync::OnceLock;

use serde_json::{Map, Value};

use super::{Ty, message_for, schema};

/// What the walk does with one field of a message.
#[derive(Debug, Default)]
struct Rule {
    /// Left out at `false`, `0` or `""`.
    zero: bool,
    /// Left out when an empty list or map.
    empty: bool,
    /// The message its value (or each item, or each map value) is.
    nested: Option<String>,
    /// A map of them (keyed by string), not one.
    map: bool,
}

/// Each message's fields by JSON name, inlined messages' fields folded
/// into their parent's, as Go's JSON has them.
type Rules = HashMap<String, HashMap<String, Rule>>;

fn rules() -> &'static Rules {
    static RULES: OnceLock<Rules> = OnceLock::new();
    RULES.get_or_init(|| {
        let mut rules = Rules::new();
        for message in schema().keys() {
            let mut fields = HashMap::new();
            fold(message, &mut fields, 0);
            rules.insert(message.clone(), fields);
        }
        rules
    })
}

/// Adds `message`'s fields (and those of the messages it inlines) to
/// `fields`.
fn fold(message: &str, fields: &mut HashMap<String, Rule>, depth: usize) {
    let Some(specs) = schema().get(message) else {
        return;
    };
    for spec in specs.values() {
        let nested = match &spec.ty {
            Ty::Message(m) => Some(m.clone()),
            _ => None,
        };
        if spec.inline {
            if let Some(m) = nested.filter(|_| depth < 4) {
                fold(&m, fields, depth + 1);
            }
            continue;
        }
        fields.insert(
            spec.name.clone(),
            Rule {
                zero: spec.omit_zero,
                empty: spec.omit_empty,
                nested,
                map: spec.map,
            },
        );
    }
}

/// Leaves out of `obj` (a built-in object of `api_version` and `kind`) what
/// Go's JSON encoding would. Kinds without a schema are left alone.
pub(crate) fn omit_empty(api_version: &str, kind: &str, obj: &mut Value) {
    let rules = rules();
    if let (Some(fields), Value::Object(map)) = (rules.get(&message_for(api_version, kind)), obj) {
        walk(rules, fields, map, 0);
    }
}

fn walk(rules: &Rules, fields: &HashMap<String, Rule>, obj: &mut Map<String, Value>, depth: usize) {
    // Objects nest only so deep (the server refuses deeper ones first);
    // this bound keeps a schema's recursion (JSON schema props) finite.
    if depth > 64 {
        return;
    }
    obj.retain(|name, value| {
        let Some(rule) = fields.get(name) else {
            return true;
        };
        if rule.zero && is_zero(value) || rule.empty && is_empty(value) {
            return false;
        }
        if let Some(inner) = rule.nested.as_deref().and_then(|m| rules.get(m)) {
            match value {
                Value::Object(o) if !rule.map => walk(rules, inner, o, depth + 1),
                Value::Object(o) => {
                    for v in o.values_mut() {
                        if let Value::Object(item) = v {
                            walk(rules, inner, item, depth + 1);
                        }
                    }
                }
                Value::Array(items) => {
                    for v in items {
                        if let Value::Object(item) = v {
                            walk(rules, inner, item, depth + 1);
                        }
                    }
                }
                _ => {}
            }
        }
        true
    });
}

fn is_zero(v: &Value) -> bool {
    match v {
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::String(s) => s.is_empty(),
        _ => false,
    }
}

fn is_empty(v: &Value) -> bool {
    match v {
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
        Value::String(s) => s.is_empty(),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn what_go_leaves_out_goes_and_the_rest_stays() {
        let mut d = json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "labels": {}, "generation": 0},
            "spec": {
                "replicas": 0, "paused": false, "minReadySeconds": 0,
                "template": {"spec": {
                    "hostNetwork": false, "tolerations": [], "nodeSelector": {},
                    "containers": [{"name": "c", "image": "nginx", "stdin": false,
                        "ports": [], "resources": {"limits": {}},
                        "securityContext": {"privileged": false}}],
                }},
            },
            "status": {"replicas": 0, "conditions": []},
        });
        omit_empty("apps/v1", "Deployment", &mut d);
        assert_eq!(
            d,
            json!({
                "apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": "web"},
                "spec": {
                    // A pointer's zero stays, and so do structs.
                    "replicas": 0,
                    "template": {"spec": {
                        // Not `omitempty`: stays, empty or not.
                        "containers": [{"name": "c", "image": "nginx",
                            "resources": {},
                            // `privileged` is a pointer.
                            "securityContext": {"privileged": false}}],
                    }},
                },
                "status": {},
            })
        );
    }

    #[test]
    fn zeros_go_never_omits_stay() {
        let mut rs = json!({"status": {"replicas": 0, "readyReplicas": 0}});
        omit_empty("apps/v1", "ReplicaSet", &mut rs);
        assert_eq!(rs, json!({"status": {"replicas": 0}}));
        let mut pod = json!({"status": {"containerStatuses": [
            {"name": "c", "ready": false, "restartCount": 0, "image": "", "imageID": "",
             "started": false}]}});
        omit_empty("v1", "Pod", &mut pod);
        assert_eq!(
            pod["status"]["containerStatuses"][0],
            json!({"name": "c", "ready": false, "restartCount": 0, "image": "", "imageID": "",
                   "started": false})
        );
        // A node's `taints: []` goes, as `kubectl taint ... -` leaves it.
        let mut node = json!({"spec": {"taints": [], "unschedulable": false}});
        omit_empty("v1", "Node", &mut node);
        assert_eq!(node, json!({"spec": {}}));
        // Kinds the schema does not know are left alone.
        let mut cr = json!({"spec": {"x": false, "y": []}});
        omit_empty("example.com/v1", "Thing", &mut cr);
        assert_eq!(cr, json!({"spec": {"x": false, "y": []}}));
    }
}
