//! Each of kube's schema rules, with the path and message kube gives.

use serde_json::{Value, json};

use super::*;

/// The causes of `schema` as `path: message`, its root named `s`.
fn text(schema: &Value) -> Vec<String> {
    errors(schema, "s")
        .iter()
        .map(|(f, m)| format!("{f}: {m}"))
        .collect()
}

/// A root object with these properties.
fn with(props: Value) -> Value {
    json!({"type": "object", "properties": props})
}

fn check(cases: &[(Value, &[&str])]) {
    for (schema, want) in cases {
        assert_eq!(text(schema), *want, "schema {schema}");
    }
}

#[test]
fn a_structural_schema_has_no_causes() {
    check(&[
        (
            with(json!({"spec": {"type": "object", "properties": {
                "a": {"type": "string", "default": "x"},
                "port": {"x-kubernetes-int-or-string": true,
                    "anyOf": [{"type": "integer"}, {"type": "string"}]},
                "free": {"x-kubernetes-preserve-unknown-fields": true},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "pod": {"type": "object", "x-kubernetes-embedded-resource": true,
                    "x-kubernetes-preserve-unknown-fields": true},
                "list": {"type": "array", "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["name"],
                    "items": {"type": "object", "required": ["name"],
                        "properties": {"name": {"type": "string"}}}}}},
                "metadata": {"type": "object", "properties": {
                    "name": {"type": "string", "maxLength": 10}}}})),
            &[],
        ),
        (
            json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}),
            &[],
        ),
    ]);
}

#[test]
fn every_node_has_a_type_and_arrays_their_items() {
    check(&[
        (
            with(json!({"l": {"type": "array"}})),
            &["s.properties[l].items: Required value: must be specified"],
        ),
        (
            json!({"properties": {"a": {}, "l": {"type": "array", "items": {}}}}),
            &[
                "s.properties[a].type: Required value: must not be empty for specified object fields",
                "s.properties[l].items.type: Required value: must not be empty for specified array items",
                "s.type: Required value: must not be empty at the root",
            ],
        ),
    ]);
}

#[test]
fn the_root_is_a_plain_object() {
    check(&[
        (
            json!({"type": "string"}),
            &["s.type: Invalid value: \"string\": must be object at the root"],
        ),
        (
            json!({"type": "object", "additionalProperties": {"type": "string"}}),
            &["s.additionalProperties: Forbidden: must not be used at the root"],
        ),
        (
            json!({"type": "object", "nullable": true}),
            &["s.nullable: Forbidden: nullable cannot be true at the root"],
        ),
    ]);
}

#[test]
fn embedded_resources_and_int_or_string() {
    check(&[
        (
            with(json!({
                "e": {"x-kubernetes-embedded-resource": true},
                "f": {"type": "string", "x-kubernetes-embedded-resource": true,
                    "x-kubernetes-preserve-unknown-fields": true},
                "g": {"type": "object", "x-kubernetes-embedded-resource": true,
                    "additionalProperties": {"type": "string"}},
            })),
            &[
                "s.properties[e].properties: Required value: must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields",
                "s.properties[e].type: Required value: must be object if x-kubernetes-embedded-resource is true",
                "s.properties[f].type: Invalid value: \"string\": must be object if x-kubernetes-embedded-resource is true",
                "s.properties[g].additionalProperties: Forbidden: must not be used if x-kubernetes-embedded-resource is set",
                "s.properties[g].properties: Required value: must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields",
            ],
        ),
        (
            with(json!({"p": {"x-kubernetes-int-or-string": true,
                "x-kubernetes-preserve-unknown-fields": true,
                "x-kubernetes-embedded-resource": true}})),
            &[
                "s.properties[p].type: Required value: must be object if x-kubernetes-embedded-resource is true",
                "s.properties[p].x-kubernetes-embedded-resource: Invalid value: true: must be false if x-kubernetes-int-or-string is true",
                "s.properties[p].x-kubernetes-preserve-unknown-fields: Invalid value: true: must be false if x-kubernetes-int-or-string is true",
            ],
        ),
    ]);
}

#[test]
fn resource_meta_is_kubes() {
    let only_names = "Forbidden: must not specify anything other than name and generateName, but metadata is implicitly specified";
    check(&[
        (
            with(
                json!({"kind": {"type": "integer"}, "apiVersion": {"type": "string"},
                "metadata": {"type": "object", "properties": {
                    "name": {"type": "string"}, "generateName": {"type": "string"}}}}),
            ),
            &["s.properties[kind].type: Invalid value: \"integer\": must be string"],
        ),
        (
            with(
                json!({"metadata": {"type": "object", "properties": {"labels": {"type": "object"}}}}),
            ),
            &[&format!("s.properties[metadata]: {only_names}")],
        ),
        (
            with(json!({"metadata": {"type": "object", "description": "the metadata"}})),
            &[&format!("s.properties[metadata]: {only_names}")],
        ),
        (
            with(json!({"metadata": {"type": "string"}})),
            &["s.properties[metadata].type: Invalid value: \"string\": must be object"],
        ),
        // An embedded resource's metadata may say more, but its type meta
        // is still strings.
        (
            with(
                json!({"e": {"type": "object", "x-kubernetes-embedded-resource": true,
                "properties": {"apiVersion": {"type": "integer"},
                    "metadata": {"type": "object", "properties": {"labels": {"type": "object"}}}}}}),
            ),
            &[
                "s.properties[e].properties[apiVersion].type: Invalid value: \"integer\": must be string",
            ],
        ),
    ]);
}

#[test]
fn value_validations_only_restrict() {
    check(&[
        (
            with(json!({"a": {"type": "string", "allOf": [{"type": "string",
                "description": "d", "title": "t", "default": "x", "nullable": true}]}})),
            &[
                "s.properties[a].allOf[0].default: Forbidden: must be undefined to be structural",
                "s.properties[a].allOf[0].description: Forbidden: must be empty to be structural",
                "s.properties[a].allOf[0].nullable: Forbidden: must be false to be structural",
                "s.properties[a].allOf[0].title: Forbidden: must be empty to be structural",
                "s.properties[a].allOf[0].type: Forbidden: must be empty to be structural",
            ],
        ),
        (
            with(json!({"o": {"type": "object",
                "oneOf": [{"x-kubernetes-preserve-unknown-fields": true,
                    "x-kubernetes-embedded-resource": true, "x-kubernetes-int-or-string": true}],
                "not": {"additionalProperties": {"maxLength": 1}},
                "anyOf": [{"properties": {"metadata": {}, "x": {"x-kubernetes-list-type": "set",
                    "x-kubernetes-list-map-keys": ["k"]}}}]}})),
            &[
                "s.properties[o].anyOf[0].properties[metadata]: Forbidden: must not be specified in a nested context",
                "s.properties[o].anyOf[0].properties[x].x-kubernetes-list-map-keys: Forbidden: must be empty to be structural",
                "s.properties[o].anyOf[0].properties[x].x-kubernetes-list-type: Forbidden: must be undefined to be structural",
                "s.properties[o].not.additionalProperties: Forbidden: must be undefined to be structural",
                "s.properties[o].oneOf[0].x-kubernetes-embedded-resource: Forbidden: must be false to be structural",
                "s.properties[o].oneOf[0].x-kubernetes-int-or-string: Forbidden: must be false to be structural",
                "s.properties[o].oneOf[0].x-kubernetes-preserve-unknown-fields: Forbidden: must be false to be structural",
                // The OpenAPI checks see the nested list markers too.
                "s.properties[o].anyOf[0].properties[x].type: Required value: must be array if x-kubernetes-list-type is specified",
                "s.properties[o].anyOf[0].properties[x].x-kubernetes-list-type: Invalid value: \"set\": must be map if x-kubernetes-list-map-keys is non-empty",
            ],
        ),
        (
            with(
                json!({"x": {"type": "object", "allOf": [{"externalDocs": {"url": "u"},
                "x-kubernetes-validations": [{"rule": "true"}],
                "x-kubernetes-map-type": "atomic"}]}}),
            ),
            &[
                "s.properties[x].allOf[0].externalDocs: Forbidden: must be undefined to be structural",
                "s.properties[x].allOf[0].x-kubernetes-map-type: Forbidden: must be undefined to be structural",
                "s.properties[x].allOf[0].x-kubernetes-validations: Forbidden: must be empty to be structural",
                "s.properties[x].allOf[0].type: Required value: must be object if x-kubernetes-map-type is specified",
            ],
        ),
        // kube's two int-or-string exceptions: exactly this anyOf, or as
        // the first allOf's.
        (
            with(json!({"p": {"x-kubernetes-int-or-string": true, "allOf": [
                {"anyOf": [{"type": "integer"}, {"type": "string"}]}, {"type": "string"}]}})),
            &["s.properties[p].allOf[1].type: Forbidden: must be empty to be structural"],
        ),
        (
            with(json!({"p": {"x-kubernetes-int-or-string": true, "anyOf": [
                {"type": "integer"}, {"type": "string", "maxLength": 3}]}})),
            &[
                "s.properties[p].anyOf[0].type: Forbidden: must be empty to be structural",
                "s.properties[p].anyOf[1].type: Forbidden: must be empty to be structural",
            ],
        ),
    ]);
}

#[test]
fn what_the_roots_composites_restrict_is_declared() {
    check(&[
        (
            json!({"type": "object", "properties": {"spec": {"type": "object",
                    "properties": {"l": {"type": "array", "items": {"type": "string"}}}}},
                "anyOf": [{"properties": {"spec": {"properties": {
                    "a": {"minLength": 1}, "l": {"items": {"maxLength": 2}}}}}}],
                "not": {"properties": {"status": {}}},
                "allOf": [{"properties": {"spec": {"properties": {"l": {"items": {"items": {}}}}}}}]}),
            &[
                "s.properties[spec].properties[a]: Required value: because it is defined in s.anyOf[0].properties[spec].properties[a]",
                "s.properties[spec].properties[l].items.items: Required value: because it is defined in s.allOf[0].properties[spec].properties[l].items.items",
                "s.properties[status]: Required value: because it is defined in s.not.properties[status]",
            ],
        ),
        // As kube, only the root's composites are held to it.
        (
            with(json!({"spec": {"type": "object", "anyOf": [{"properties": {"a": {}}}]}})),
            &[],
        ),
    ]);
}

#[test]
fn only_the_openapi_kube_supports() {
    let types =
        "supported values: \"array\", \"boolean\", \"integer\", \"number\", \"object\", \"string\"";
    check(&[(
        with(json!({
            "a": {"type": "foo"},
            "b": {"type": "null"},
            "c": {"type": "string", "id": "x"},
            "d": {"type": "array", "items": [{"type": "string"}]},
            "e": {"type": "object", "properties": {"x": {"type": "string"}},
                "additionalProperties": {"type": "string"}},
            "f": {"type": "object", "properties": {"x": {"type": "string"}},
                "additionalProperties": true},
            "g": {"type": "string", "x-kubernetes-preserve-unknown-fields": false},
            "h": {"type": "object", "patternProperties": {"^x": {"type": "string"}},
                "definitions": {"d": {"type": "string"}}, "dependencies": {"x": ["y"]},
                "$ref": "#/definitions/d", "additionalItems": false},
        })),
        &[
            &format!("s.properties[a].type: Unsupported value: \"foo\": {types}"),
            &format!("s.properties[b].type: Unsupported value: \"null\": {types}"),
            "s.properties[b].type: Forbidden: type cannot be set to null, use nullable as an alternative",
            "s.properties[c].id: Forbidden: id is not supported",
            "s.properties[d].items: Forbidden: items must be a schema object and not an array",
            "s.properties[e].additionalProperties: Forbidden: additionalProperties and properties are mutual exclusive",
            "s.properties[g].x-kubernetes-preserve-unknown-fields: Invalid value: false: must be true or undefined",
            "s.properties[h].additionalItems: Forbidden: additionalItems is not supported",
            "s.properties[h].patternProperties: Forbidden: patternProperties is not supported",
            "s.properties[h].definitions: Forbidden: definitions is not supported",
            "s.properties[h].dependencies: Forbidden: dependencies is not supported",
            "s.properties[h].$ref: Forbidden: $ref is not supported",
        ],
    )]);
}

#[test]
fn list_and_map_markers_agree() {
    let keys = "s.properties[k5].x-kubernetes-list-map-keys: Invalid value: []string{\"a\", \"b\", \"c\", \"z\", \"a\"}";
    let key = "this property is in x-kubernetes-list-map-keys, so it";
    check(&[(
        with(json!({
            "m1": {"type": "string", "x-kubernetes-map-type": "atomic"},
            "m2": {"type": "object", "x-kubernetes-map-type": "x"},
            "l1": {"type": "string", "x-kubernetes-list-type": "atomic"},
            "l2": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "bag"},
            "l3": {"type": "array", "items": {"type": "object"}, "x-kubernetes-list-type": "set"},
            "l4": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "array",
                "items": {"type": "string"}, "x-kubernetes-list-type": "set"}},
            "l5": {"type": "array", "items": {"type": "string", "nullable": true},
                "x-kubernetes-list-type": "set"},
            "k1": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-map-keys": ["a"]},
            "k2": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set",
                "x-kubernetes-list-map-keys": ["a"]},
            "k3": {"type": "array", "x-kubernetes-list-type": "map",
                "items": {"type": "object", "properties": {"a": {"type": "string"}}}},
            "k4": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["a"]},
            "k5": {"type": "array", "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["a", "b", "c", "z", "a"],
                "items": {"type": "object", "required": ["a"], "properties": {
                    "a": {"type": "string"}, "b": {"type": "object"},
                    "c": {"type": "string", "nullable": true}}}},
        })),
        &[
            "s.properties[k1].x-kubernetes-list-type: Required value: must be map if x-kubernetes-list-map-keys is non-empty",
            "s.properties[k2].x-kubernetes-list-type: Invalid value: \"set\": must be map if x-kubernetes-list-map-keys is non-empty",
            "s.properties[k3].x-kubernetes-list-map-keys: Required value: must not be empty if x-kubernetes-list-type is map",
            "s.properties[k4].items.type: Invalid value: \"string\": must be object if parent array's x-kubernetes-list-type is map",
            "s.properties[k5].items.properties[b].type: Invalid value: \"object\": must be a scalar type if parent array's x-kubernetes-list-type is map",
            &format!("{keys}: entries must all be names of item properties"),
            &format!("{keys}: must not contain duplicate entries"),
            &format!(
                "s.properties[k5].items.properties[b].default: Required value: {key} must have a default or be a required property"
            ),
            &format!(
                "s.properties[k5].items.properties[c].default: Required value: {key} must have a default or be a required property"
            ),
            &format!(
                "s.properties[k5].items.properties[c].nullable: Forbidden: {key} cannot be nullable"
            ),
            "s.properties[l1].type: Invalid value: \"string\": must be array if x-kubernetes-list-type is specified",
            "s.properties[l2].x-kubernetes-list-type: Unsupported value: \"bag\": supported values: \"atomic\", \"set\", \"map\"",
            "s.properties[l3].items.x-kubernetes-map-type: Invalid value: \"null\": must be atomic as item of a list with x-kubernetes-list-type=set",
            "s.properties[l4].items.x-kubernetes-list-type: Invalid value: \"set\": must be atomic as item of a list with x-kubernetes-list-type=set",
            "s.properties[l5].items.nullable: Forbidden: cannot be nullable when x-kubernetes-list-type is set",
            "s.properties[m1].type: Invalid value: \"string\": must be object if x-kubernetes-map-type is specified",
            "s.properties[m2].x-kubernetes-map-type: Unsupported value: \"x\": supported values: \"atomic\", \"granular\"",
        ],
    )]);
}

#[test]
fn defaults_in_resource_meta_are_refused() {
    let meta = "s.properties[spec].properties[e].properties[metadata].properties";
    check(&[(
        with(json!({
            "kind": {"type": "string", "default": "K"},
            "metadata": {"type": "object", "default": {"name": "x"}},
            "spec": {"type": "object", "properties": {"e": {"type": "object",
                "x-kubernetes-embedded-resource": true,
                "properties": {"metadata": {"type": "object", "properties": {
                    "annotations": {"type": "object",
                        "additionalProperties": {"type": "string", "default": "a"}},
                    "labels": {"type": "object", "x-kubernetes-embedded-resource": true,
                        "x-kubernetes-preserve-unknown-fields": true}}}}}}},
        })),
        &[
            "s.properties[kind].default: Forbidden: must not be set in top-level kind",
            "s.properties[metadata].default: Forbidden: must not be set in top-level metadata",
            &format!(
                "{meta}[annotations].additionalProperties.default: Forbidden: must not be set inside additionalProperties applying to object metadata"
            ),
            &format!(
                "{meta}[labels].x-kubernetes-embedded-resource: Forbidden: must not be used inside of resource meta"
            ),
        ],
    )]);
}

#[test]
fn defaults_are_pruned_and_valid() {
    let at = |k: &str| format!("s.properties[spec].properties[{k}].default");
    check(&[
        (
            with(json!({"spec": {"type": "object", "properties": {
                "n": {"type": "integer", "default": "x"},
                "o": {"type": "object", "properties": {"a": {"type": "string"}},
                    "default": {"a": "x", "b": 1}},
                "p": {"type": "object", "properties": {"a": {"type": "string", "maxLength": 2}},
                    "default": {"a": "xyz"}},
                "q": {"type": "object", "required": ["a"],
                    "properties": {"a": {"type": "string"}}, "default": {}},
                "r": {"type": "string", "enum": ["ok"], "default": "ok"},
                "u": {"type": "object", "x-kubernetes-preserve-unknown-fields": true,
                    "default": {"any": 1}},
            }}})),
            &[
                &format!(
                    "{}: Invalid value: \"string\": {} in body must be of type integer: \"string\"",
                    at("n"),
                    at("n")
                ),
                &format!(
                    "{}: Invalid value: map[string]interface {{}}{{\"a\":\"x\", \"b\":1}}: must not have unknown fields",
                    at("o")
                ),
                &format!("{}.a: Too long: may not be more than 2 bytes", at("p")),
                &format!("{}.a: Required value", at("q")),
            ],
        ),
        // Not while the schema is not structural.
        (
            with(json!({"a": {"type": "integer", "default": "x"}, "b": {}})),
            &[
                "s.properties[b].type: Required value: must not be empty for specified object fields",
            ],
        ),
    ]);
}

#[test]
fn patterns_compile() {
    let e = text(&with(json!({"a": {"type": "string", "pattern": "[a"}})));
    assert_eq!(
        e,
        [
            "s.properties[a].pattern: Invalid value: \"[a\": must be a valid regular expression, but isn't: error parsing regexp: unclosed character class"
        ]
    );
}

#[test]
fn every_version_has_a_schema() {
    let versions = json!([
        {"name": "v1", "schema": {"openAPIV3Schema": {"type": "object"}}},
        {"name": "v2"},
    ]);
    assert_eq!(
        missing_schemas(versions.as_array().unwrap()),
        [(
            "spec.versions[1].schema.openAPIV3Schema".to_owned(),
            "Required value: schemas are required".to_owned()
        )]
    );
}
