//! Unit tests of `x-kubernetes-validations`: rules run against plain JSON.

use serde_json::{Value, json};

use super::*;

fn widget() -> Value {
    json!({"type": "object", "properties": {
    "spec": {"type": "object",
        "x-kubernetes-validations": [
            {"rule": "self.replicas <= self.maxReplicas", "message": "replicas must be at most maxReplicas"},
            {"rule": "!has(self.mode) || self.mode.startsWith('a')", "fieldPath": ".mode", "reason": "FieldValueForbidden"},
            {"rule": "self.replicas >= oldSelf.replicas", "messageExpression": "'replicas may not shrink below ' + string(oldSelf.replicas)"}
        ],
        "properties": {
            "replicas": {"type": "integer"},
            "maxReplicas": {"type": "integer"},
            "ratio": {"type": "number", "x-kubernetes-validations": [{"rule": "self < 1.0"}]},
            "mode": {"type": "string"},
            "x-name": {"type": "string", "x-kubernetes-validations": [{"rule": "self.matches('^[a-z]+$')"}]},
            "tags": {"type": "array", "items": {"type": "string"},
                "x-kubernetes-validations": [{"rule": "self.all(t, size(t) <= 3)", "reason": "FieldValueDuplicate"}]},
            "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                "items": {"type": "object", "properties": {"name": {"type": "string"}, "port": {"type": "integer"}},
                    "x-kubernetes-validations": [{"rule": "self.port == oldSelf.port", "message": "port is immutable"}]}},
            "labels": {"type": "object", "x-kubernetes-validations": [{"rule": "self['team'] != ''"}], "additionalProperties": {"type": "string",
                "x-kubernetes-validations": [{"rule": "size(self) > 0", "reason": "FieldValueRequired", "message": "must not be empty"}]}},
            "required": {"type": "string", "x-kubernetes-validations": [{"rule": "self.nosuch == 1"}]}
        }}}})
}

fn run(obj: Value, old: Option<Value>) -> Vec<String> {
    let s = widget();
    let rules = Rules::compile(&s).expect("rules compile");
    rules
        .errors(&s, &obj, old.as_ref())
        .iter()
        .map(|(f, m)| format!("{f}: {m}"))
        .collect()
}

#[test]
fn a_valid_object_passes_every_rule() {
    let ok = json!({"spec": {"replicas": 2, "maxReplicas": 3, "ratio": 0.5, "mode": "auto",
        "x-name": "abc", "tags": ["a"], "labels": {"team": "v"}}});
    assert_eq!(run(ok, None), Vec::<String>::new());
}

#[test]
fn failed_rules_read_as_kubes() {
    let bad = json!({"spec": {"replicas": 5, "maxReplicas": 3, "ratio": 2, "mode": "manual",
        "x-name": "ABC", "tags": ["long"], "labels": {"k": ""}, "required": "x"}});
    let e = run(bad, None);
    for want in [
        "spec: Invalid value: \"object\": replicas must be at most maxReplicas",
        "spec.mode: Forbidden: failed rule: !has(self.mode) || self.mode.startsWith('a')",
        "spec.ratio: Invalid value: \"number\": failed rule: self < 1.0",
        "spec.x-name: Invalid value: \"string\": failed rule: self.matches('^[a-z]+$')",
        "spec.tags: Duplicate value: \"array\"",
        "spec.labels[k]: Required value: must not be empty",
        "spec.required: Invalid value: \"string\": 'no such overload': call arguments did not match a supported operator, function or macro signature for rule: self.nosuch == 1",
        "spec.labels: Invalid value: \"object\": no such key: team evaluating rule: self['team'] != ''",
    ] {
        assert!(e.contains(&want.to_owned()), "missing {want}\nin {e:#?}");
    }
    assert_eq!(e.len(), 8, "{e:#?}");
}

#[test]
fn transition_rules_run_only_against_an_old_value() {
    let new = json!({"spec": {"replicas": 1, "maxReplicas": 3,
        "ports": [{"name": "a", "port": 2}, {"name": "b", "port": 9}]}});
    assert_eq!(
        run(new.clone(), None),
        Vec::<String>::new(),
        "create: no oldSelf"
    );
    let old = json!({"spec": {"replicas": 2, "maxReplicas": 3,
        "ports": [{"name": "b", "port": 9}, {"name": "a", "port": 1}]}});
    assert_eq!(
        run(new, Some(old)),
        [
            "spec: Invalid value: \"object\": replicas may not shrink below 2",
            "spec.ports[0]: Invalid value: \"object\": port is immutable",
        ]
    );
}

#[test]
fn optional_old_self_sees_none_on_create() {
    let s = json!({"type": "object", "properties": {"spec": {"type": "object",
        "properties": {"v": {"type": "string"}},
        "x-kubernetes-validations": [{"rule": "!oldSelf.hasValue() || oldSelf.value().v == self.v",
            "optionalOldSelf": true, "message": "v is immutable"}]}}});
    let rules = Rules::compile(&s).unwrap();
    let obj = json!({"spec": {"v": "b"}});
    assert!(rules.errors(&s, &obj, None).is_empty());
    let old = json!({"spec": {"v": "a"}});
    assert_eq!(
        rules.errors(&s, &obj, Some(&old)),
        [(
            "spec".to_owned(),
            "Invalid value: \"object\": v is immutable".to_owned()
        )]
    );
}

#[test]
fn a_rule_at_the_root_sees_name_and_kind() {
    let s = json!({"type": "object",
        "x-kubernetes-validations": [{"rule": "self.metadata.name.startsWith('w-') && self.kind == 'Widget'"},
            {"rule": "!has(self.metadata.labels)"}]});
    let rules = Rules::compile(&s).unwrap();
    let obj = json!({"kind": "Widget", "metadata": {"name": "x", "labels": {"a": "b"}}});
    assert_eq!(
        rules.errors(&s, &obj, None),
        [(
            "<nil>".to_owned(),
            "Invalid value: \"object\": failed rule: self.metadata.name.startsWith('w-') && self.kind == 'Widget'".to_owned()
        )]
    );
}

#[test]
fn crd_rules_that_do_not_compile_are_named() {
    let s = json!({"x-kubernetes-validations": [
        {"rule": "self.a <"},
        {"rule": "slef.a > 0"},
        {"rule": "self.all(x, x > y)"},
        {"rule": "self.all(x, x > 0)", "reason": "Nope", "fieldPath": ".missing"},
        {"rule": "  "},
        {"rule": "oldSelf == self"},
        {"rule": "self.a\n> 0"},
        {"rule": "self.a > 0", "messageExpression": "'x' +"}
    ], "type": "object", "properties": {"a": {"type": "integer"}}});
    let mut e = Causes::new();
    rule_errors(&s, "p", Some("p.items"), &mut e);
    let e: Vec<String> = e.iter().map(|(f, m)| format!("{f}: {m}")).collect();
    let starts = [
        "p.x-kubernetes-validations[0].rule: Invalid value: apiextensions.ValidationRule{Rule:\"self.a <\", Message:\"\", MessageExpression:\"\", Reason:(*apiextensions.FieldValueErrorReason)(nil), FieldPath:\"\", OptionalOldSelf:(*bool)(nil)}: compilation failed: ERROR: <input>:1:",
        "p.x-kubernetes-validations[1].rule: Invalid value: apiextensions.ValidationRule{Rule:\"slef.a > 0\"",
        "p.x-kubernetes-validations[2].rule: Invalid value: apiextensions.ValidationRule{",
        "p.x-kubernetes-validations[3].reason: Unsupported value: \"Nope\": supported values: \"FieldValueDuplicate\", \"FieldValueForbidden\", \"FieldValueInvalid\", \"FieldValueRequired\"",
        "p.x-kubernetes-validations[3].fieldPath: Invalid value: \".missing\": fieldPath must be a valid path",
        "p.x-kubernetes-validations[4].rule: Required value: rule is not specified",
        "p.x-kubernetes-validations[5].rule: Invalid value: \"oldSelf == self\": oldSelf cannot be used on the uncorrelatable portion of the schema within p.items",
        "p.x-kubernetes-validations[6].message: Required value: message must be specified if rule contains line breaks",
        "p.x-kubernetes-validations[7].messageExpression: Invalid value: apiextensions.ValidationRule{",
    ];
    for want in starts {
        assert!(
            e.iter().any(|x| x.starts_with(want)),
            "missing {want}\nin {e:#?}"
        );
    }
    assert!(e.iter().any(|x| x.contains("compilation failed: ERROR: <input>:1:1: undeclared reference to 'slef' (in container '')")), "{e:#?}");
    assert!(
        e.iter().any(|x| x.contains("undeclared reference to 'y'")),
        "{e:#?}"
    );
    assert_eq!(e.len(), starts.len(), "{e:#?}");
}
