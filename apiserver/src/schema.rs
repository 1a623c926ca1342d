//! Structural schemas: which fields an object may have, so that unknown ones
//! are pruned and reported as kube-apiserver does — for built-in kinds from
//! the Kubernetes OpenAPI definitions (`openapi/definitions.json`), for
//! custom resources from their CRD's `openAPIV3Schema`.
//!
//! A schema is an arena of [`Node`]s: built-in definitions refer to each
//! other (and to themselves), so a node points at others by index. Pruning
//! walks a value beside its schema; the values it walks have passed the
//! nesting limit (`nesting.rs`), so the walk's depth is bounded.

mod defaults;
mod definition;
mod lists;
mod rules;
mod structural;
mod values;

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, OnceLock};

use serde_json::{Map, Value};

use crate::custom_lists::CustomLists;

/// One schema node.
#[derive(Debug, Clone, PartialEq)]
enum Node {
    /// Anything goes, kept as sent: `RawExtension`, `JSON`, `FieldsV1`, or
    /// `x-kubernetes-preserve-unknown-fields` without properties.
    Any,
    /// A string, number or boolean (or a null); nothing below it to prune.
    Leaf,
    /// An object: known properties, a schema for every other key (a map),
    /// or neither; unknown keys are pruned unless `preserve`.
    Object {
        props: HashMap<String, usize>,
        additional: Option<usize>,
        preserve: bool,
        /// `x-kubernetes-embedded-resource`: `apiVersion`, `kind` and
        /// `metadata` are allowed too.
        embedded: bool,
    },
    Array(usize),
    /// `ObjectMeta`, pruned with the built-in definition.
    ObjectMeta,
}

/// A set of schema nodes and where each named definition starts.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct Schema {
    nodes: Vec<Node>,
    roots: HashMap<String, usize>,
    /// A CRD schema's `default` values, by the node of their property.
    defaults: HashMap<usize, Value>,
    /// The nodes of a CRD schema marked `nullable`.
    nullable: HashSet<usize>,
}

/// A schema for one kind: the arena and its root node.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct KindSchema {
    schema: Arc<Schema>,
    root: usize,
    /// A CRD version's `openAPIV3Schema` as written, for value validation
    /// (built-in kinds have Go's validation instead: `validate.rs`).
    values: Option<Arc<Value>>,
    /// Its `x-kubernetes-validations`, compiled (`None` when it has none).
    rules: Option<Arc<rules::Rules>>,
    /// How its lists merge in server-side apply (`None`: a built-in kind's,
    /// by strategic merge keys).
    lists: Option<Arc<CustomLists>>,
}

pub(crate) use definition::errors as definition_errors;

const OBJECT_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";

/// The OpenAPI definitions of the built-in kinds, parsed once.
pub(crate) fn definitions() -> &'static Map<String, Value> {
    static DEFS: OnceLock<Map<String, Value>> = OnceLock::new();
    DEFS.get_or_init(|| {
        serde_json::from_str(include_str!("openapi/definitions.json"))
            .expect("openapi/definitions.json is valid JSON")
    })
}

/// The structural schemas of every built-in definition.
fn builtins() -> &'static Arc<Schema> {
    static SCHEMA: OnceLock<Arc<Schema>> = OnceLock::new();
    SCHEMA.get_or_init(|| Arc::new(Schema::from_definitions(definitions())))
}

/// The definition name of the built-in kind `group/version kind`.
pub(crate) fn definition_of(group: &str, version: &str, kind: &str) -> Option<&'static str> {
    static BY_GVK: OnceLock<HashMap<(String, String, String), String>> = OnceLock::new();
    BY_GVK
        .get_or_init(|| {
            let mut m = HashMap::new();
            for (name, d) in definitions() {
                for g in d["x-kubernetes-group-version-kind"]
                    .as_array()
                    .into_iter()
                    .flatten()
                {
                    let s = |k: &str| g[k].as_str().unwrap_or_default().to_owned();
                    m.entry((s("group"), s("version"), s("kind")))
                        .or_insert_with(|| name.clone());
                }
            }
            m
        })
        .get(&(group.to_owned(), version.to_owned(), kind.to_owned()))
        .map(String::as_str)
}

/// The schema of a built-in kind, if the definitions have it.
pub(crate) fn builtin(group: &str, version: &str, kind: &str) -> Option<KindSchema> {
    let name = definition_of(group, version, kind)?;
    let schema = builtins().clone();
    let root = *schema.roots.get(name)?;
    Some(KindSchema {
        schema,
        root,
        values: None,
        rules: None,
        lists: None,
    })
}

impl Schema {
    fn push(&mut self, n: Node) -> usize {
        self.nodes.push(n);
        self.nodes.len() - 1
    }

    /// Every definition of an OpenAPI v2 `definitions` map.
    fn from_definitions(defs: &Map<String, Value>) -> Self {
        let mut s = Self::default();
        // Reserve one node per definition first, so that references
        // (including a definition's references to itself) resolve.
        for name in defs.keys() {
            let i = s.push(Node::Any);
            s.roots.insert(name.clone(), i);
        }
        for (name, d) in defs {
            let node = s.builtin_node(d);
            let i = s.roots[name];
            s.nodes[i] = node;
        }
        s
    }

    /// A built-in schema: Go structs decode known fields only, maps any key,
    /// and the few types with no properties at all (`RawExtension`,
    /// `FieldsV1`, `JSON`) anything.
    fn builtin_node(&mut self, d: &Value) -> Node {
        match d["type"].as_str() {
            Some("array") => Node::Array(self.builtin_child(&d["items"])),
            Some("object") | None if d.get("properties").is_some() => {
                let mut props = HashMap::new();
                for (k, p) in d["properties"].as_object().into_iter().flatten() {
                    let c = self.builtin_child(p);
                    props.insert(k.clone(), c);
                }
                Node::Object {
                    props,
                    additional: None,
                    preserve: false,
                    embedded: false,
                }
            }
            Some("object") if d["additionalProperties"].is_object() => Node::Object {
                props: HashMap::new(),
                additional: Some(self.builtin_child(&d["additionalProperties"])),
                preserve: false,
                embedded: false,
            },
            Some("object") | None => Node::Any,
            Some(_) => Node::Leaf,
        }
    }

    /// A property's schema: a reference to a definition, or inline.
    fn builtin_child(&mut self, d: &Value) -> usize {
        if let Some(r) = d["$ref"].as_str() {
            let name = r.rsplit('/').next().unwrap_or_default();
            return match self.roots.get(name) {
                Some(&i) => i,
                None => self.push(Node::Any),
            };
        }
        let n = self.builtin_node(d);
        self.push(n)
    }

    /// The structural schema of a CRD version's `openAPIV3Schema`.
    pub(crate) fn from_crd(root: &Value) -> KindSchema {
        let mut s = Self::default();
        let r = s.crd_node(root, true);
        KindSchema {
            schema: Arc::new(s),
            root: r,
            values: Some(Arc::new(root.clone())),
            rules: rules::Rules::compile(root).map(Arc::new),
            lists: Some(Arc::new(CustomLists::of_schema(root))),
        }
    }

    fn crd_node(&mut self, d: &Value, top: bool) -> usize {
        let flag = |k: &str| d[k].as_bool() == Some(true);
        let preserve = flag("x-kubernetes-preserve-unknown-fields");
        let node = if flag("x-kubernetes-int-or-string") {
            Node::Leaf
        } else if d["type"] == "array" || d.get("items").is_some_and(Value::is_object) {
            let item = if d["items"].is_object() {
                self.crd_node(&d["items"], false)
            } else {
                self.push(Node::Any)
            };
            Node::Array(item)
        } else {
            let props_v = d["properties"].as_object();
            let additional_v = d["additionalProperties"].as_object();
            let embedded = flag("x-kubernetes-embedded-resource");
            let is_object = d["type"] == "object" || props_v.is_some() || additional_v.is_some();
            if !is_object && !top && !embedded {
                if preserve { Node::Any } else { Node::Leaf }
            } else if preserve && props_v.is_none() && additional_v.is_none() && !embedded && !top {
                Node::Any
            } else {
                let mut props = HashMap::new();
                for (k, p) in props_v.into_iter().flatten() {
                    // A custom resource's own metadata is an ObjectMeta
                    // whatever its schema says (kube allows only name and
                    // generateName constraints there).
                    let c = if (top || embedded) && k == "metadata" {
                        self.push(Node::ObjectMeta)
                    } else {
                        self.crd_node(p, false)
                    };
                    props.insert(k.clone(), c);
                }
                if top || embedded {
                    for k in ["apiVersion", "kind"] {
                        if !props.contains_key(k) {
                            let leaf = self.push(Node::Leaf);
                            props.insert(k.into(), leaf);
                        }
                    }
                    if !props.contains_key("metadata") {
                        let m = self.push(Node::ObjectMeta);
                        props.insert("metadata".into(), m);
                    }
                }
                let additional = match &d["additionalProperties"] {
                    Value::Object(_) => Some(self.crd_node(&d["additionalProperties"], false)),
                    Value::Bool(true) => Some(self.push(Node::Any)),
                    _ => None,
                };
                Node::Object {
                    props,
                    additional,
                    preserve,
                    embedded,
                }
            }
        };
        let i = self.push(node);
        if let Some(default) = d.get("default") {
            self.defaults.insert(i, default.clone());
        }
        if flag("nullable") {
            self.nullable.insert(i);
        }
        i
    }
}

/// Whether pruning `v` by the CRD schema node `s` would drop anything
/// (`resource`: `s` is a resource's root, whose `apiVersion`, `kind` and
/// `metadata` stay).
fn prunes(s: &Value, resource: bool, v: &Value) -> bool {
    let mut arena = Schema::default();
    let root = arena.crd_node(s, resource);
    let mut unknown = Vec::new();
    prune_node(
        &arena,
        root,
        &mut v.clone(),
        &mut String::new(),
        &mut unknown,
    );
    !unknown.is_empty()
}

impl KindSchema {
    /// Removes the fields `v` may not have, and returns their paths as kube
    /// reports them (`spec.template.spec.containers[0].bogus`).
    pub(crate) fn prune(&self, v: &mut Value) -> Vec<String> {
        let mut unknown = Vec::new();
        prune_node(&self.schema, self.root, v, &mut String::new(), &mut unknown);
        unknown.sort();
        unknown
    }

    /// How a custom resource's lists merge (`None` for a built-in kind).
    pub(crate) fn lists(&self) -> Option<Arc<CustomLists>> {
        self.lists.clone()
    }

    /// Defaults a custom resource as kube does on decode (`schema/defaults.rs`):
    /// nulls the schema does not allow dropped, missing fields with a
    /// `default` filled. Built-in kinds have their defaulters instead
    /// (`defaults.rs`), so nothing happens to them here.
    pub(crate) fn default(&self, v: &mut Value) {
        if self.values.is_none() {
            return;
        }
        defaults::prune_nulls(&self.schema, self.root, v);
        defaults::fill(&self.schema, self.root, v);
    }

    /// What the values of `v` break of a CRD schema's value validations
    /// (`minimum`, `pattern`, `enum`, `required`, ...) and of its
    /// `x-kubernetes-validations` rules (`old` is the object an update
    /// replaces, for transition rules): one cause each.
    pub(crate) fn value_errors(&self, v: &Value, old: Option<&Value>) -> Vec<(String, String)> {
        let Some(s) = &self.values else {
            return vec![];
        };
        let mut errs = values::errors(s, v);
        errs.extend(lists::errors(s, v));
        if let Some(r) = &self.rules {
            // As kube: rules are not run over values of the wrong type.
            if errs
                .iter()
                .any(|(_, m)| m.contains(" in body must be of type "))
            {
                errs.push((
                    "<nil>".into(),
                    "Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation".into(),
                ));
            } else {
                errs.extend(r.errors(s, v, old));
            }
        }
        errs
    }

    /// Paths of the fields `v` may not have, without changing it.
    pub(crate) fn unknown_fields(&self, v: &Value) -> Vec<String> {
        let mut copy = v.clone();
        self.prune(&mut copy)
    }
}

/// `path` extended by the member `key`, as kube prints a field's path.
fn push_key(path: &mut String, key: &str) {
    if !path.is_empty() {
        path.push('.');
    }
    path.push_str(key);
}

/// Prunes `v` by schema node `node`. `path` is where `v` is, kept in one
/// buffer that each level extends and truncates again: a path is only
/// copied out for a field that is dropped, so a body with nothing unknown
/// (nearly every write) costs no allocation per field.
fn prune_node(
    s: &Schema,
    node: usize,
    v: &mut Value,
    path: &mut String,
    unknown: &mut Vec<String>,
) {
    let Some(n) = s.nodes.get(node) else {
        return;
    };
    let at = path.len();
    match (n, v) {
        (Node::ObjectMeta, v) => {
            let meta = builtins();
            if let Some(&root) = meta.roots.get(OBJECT_META) {
                prune_node(meta, root, v, path, unknown);
            }
        }
        (Node::Array(item), Value::Array(items)) => {
            for (i, x) in items.iter_mut().enumerate() {
                use std::fmt::Write as _;
                let _ = write!(path, "[{i}]");
                prune_node(s, *item, x, path, unknown);
                path.truncate(at);
            }
        }
        (
            Node::Object {
                props,
                additional,
                preserve,
                ..
            },
            Value::Object(m),
        ) => {
            let mut drop = Vec::new();
            for (k, x) in m.iter_mut() {
                let child = match props.get(k) {
                    Some(c) => Some(*c),
                    None => match additional {
                        Some(a) => Some(*a),
                        None if *preserve => None,
                        None => {
                            drop.push(k.clone());
                            continue;
                        }
                    },
                };
                if let Some(c) = child {
                    push_key(path, k);
                    prune_node(s, c, x, path, unknown);
                    path.truncate(at);
                }
            }
            for k in drop {
                m.remove(&k);
                push_key(path, &k);
                unknown.push(path.clone());
                path.truncate(at);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn built_in_kinds_lose_unknown_fields_everywhere() {
        let s = builtin("apps", "v1", "Deployment").unwrap();
        let mut d = json!({"apiVersion": "apps/v1", "kind": "Deployment", "bogus": 1,
            "metadata": {"name": "web", "labels": {"any": "key"}, "nope": true},
            "spec": {"replicas": 1, "extra": {},
                "template": {"spec": {"containers": [{"name": "c", "image": "i", "imagePullPolicy": "x", "wat": 1}]}}},
            "status": {"replicas": 1}});
        let unknown = s.prune(&mut d);
        assert_eq!(
            unknown,
            [
                "bogus",
                "metadata.nope",
                "spec.extra",
                "spec.template.spec.containers[0].wat"
            ]
        );
        assert!(d.get("bogus").is_none() && d["spec"].get("extra").is_none());
        assert_eq!(d["metadata"]["labels"]["any"], "key");
        assert_eq!(
            d["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"],
            "x"
        );
        assert_eq!(d["status"]["replicas"], 1);
    }

    #[test]
    fn raw_values_and_maps_keep_every_key() {
        let s = builtin("apps", "v1", "ControllerRevision").unwrap();
        let mut r = json!({"metadata": {"managedFields": [{"fieldsV1": {"f:a": {}}, "x": 1}]},
            "data": {"anything": {"goes": [1]}}, "revision": 1});
        assert_eq!(s.prune(&mut r), ["metadata.managedFields[0].x"]);
        assert_eq!(r["data"]["anything"]["goes"][0], 1);
        assert_eq!(
            r["metadata"]["managedFields"][0]["fieldsV1"]["f:a"],
            json!({})
        );
        let cm = builtin("", "v1", "ConfigMap").unwrap();
        assert!(
            cm.unknown_fields(&json!({"data": {"k": "v"}, "binaryData": {}}))
                .is_empty()
        );
    }

    #[test]
    fn custom_resources_are_pruned_by_their_structural_schema() {
        let s = Schema::from_crd(&json!({"type": "object", "properties": {
        "spec": {"type": "object", "properties": {
            "size": {"type": "integer"},
            "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
            "open": {"type": "object", "x-kubernetes-preserve-unknown-fields": true,
                "properties": {"known": {"type": "object", "properties": {"a": {"type": "string"}}}}},
            "labels": {"type": "object", "additionalProperties": {"type": "object", "properties": {"v": {"type": "string"}}}},
            "items": {"type": "array", "items": {"type": "object", "properties": {"n": {"type": "string"}}}},
            "port": {"x-kubernetes-int-or-string": true},
            "pod": {"type": "object", "x-kubernetes-embedded-resource": true, "properties": {"spec": {"type": "object"}}}
        }}}}));
        let mut cr = json!({"apiVersion": "example.com/v1", "kind": "Widget", "top": 1,
            "metadata": {"name": "w", "bogus": 1},
            "spec": {"size": 1, "gone": true,
                "free": {"x": {"y": 1}},
                "open": {"kept": 1, "known": {"a": "b", "c": "d"}},
                "labels": {"k": {"v": "1", "w": "2"}},
                "items": [{"n": "a", "m": "b"}],
                "port": "http",
                "pod": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "x": 1}, "spec": {"a": 1}, "status": {}}}});
        let unknown = s.prune(&mut cr);
        assert_eq!(
            unknown,
            [
                "metadata.bogus",
                "spec.gone",
                "spec.items[0].m",
                "spec.labels.k.w",
                "spec.open.known.c",
                "spec.pod.metadata.x",
                "spec.pod.spec.a",
                "spec.pod.status",
                "top",
            ]
        );
        assert_eq!(cr["spec"]["free"]["x"]["y"], 1);
        assert_eq!(cr["spec"]["open"]["kept"], 1);
        assert_eq!(cr["spec"]["pod"]["kind"], "Pod");
        assert_eq!(cr["metadata"]["name"], "w");
    }

    #[test]
    fn custom_resources_get_their_schema_defaults() {
        let s = Schema::from_crd(&json!({"type": "object", "properties": {
        "spec": {"type": "object", "properties": {
            "replicas": {"type": "integer", "default": 1},
            "mode": {"type": "string", "default": "fast"},
            "note": {"type": "string"},
            "maybe": {"type": "string", "nullable": true},
            "nullish": {"type": "string", "nullable": true, "default": "d"},
            "limits": {"type": "object", "default": {},
                "properties": {"cpu": {"type": "string", "default": "1"}}},
            "ports": {"type": "array", "items": {"type": "object",
                "properties": {"port": {"type": "integer", "default": 80}, "name": {"type": "string"}}}},
            "sizes": {"type": "object", "additionalProperties": {"type": "integer", "default": 3}},
            "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
        }}}}));
        let mut cr = json!({"apiVersion": "example.com/v1", "kind": "Widget",
            "metadata": {"name": "w"},
            "spec": {"mode": null, "note": null, "maybe": null, "nullish": null,
                "ports": [{"name": "a"}, {"port": 81}],
                "sizes": {"a": null, "b": 5},
                "free": {"x": null}}});
        s.default(&mut cr);
        assert_eq!(
            cr["spec"],
            json!({
                // Missing, and a disallowed null: defaulted.
                "replicas": 1, "mode": "fast",
                // A disallowed null without a default goes; an allowed one stays.
                "maybe": null, "nullish": null,
                // A defaulted object's own properties are defaulted too.
                "limits": {"cpu": "1"},
                "ports": [{"name": "a", "port": 80}, {"port": 81}],
                "sizes": {"a": 3, "b": 5},
                "free": {"x": null},
            })
        );
        // Defaulting again changes nothing; built-in kinds are left alone.
        let before = cr.clone();
        s.default(&mut cr);
        assert_eq!(cr, before);
        let mut cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "data": null});
        builtin("", "v1", "ConfigMap").unwrap().default(&mut cm);
        assert!(cm["data"].is_null() && cm.get("data").is_some());
    }

    #[test]
    fn a_root_that_preserves_unknown_fields_keeps_them() {
        let s = Schema::from_crd(
            &json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}),
        );
        let mut cr = json!({"apiVersion": "a/v1", "kind": "K", "metadata": {"name": "x", "no": 1}, "anything": {"at": "all"}});
        assert_eq!(s.prune(&mut cr), ["metadata.no"]);
        assert_eq!(cr["anything"]["at"], "all");
    }
}
