//! Property tests of the parsers and patchers a client's bytes reach:
//! protobuf, YAML, JSON intake, JSON / merge / strategic merge patches. For
//! any input: no panic, no stack overflow, and output bounded by the input
//! (no unbounded allocation). A few thousand cases each by default;
//! `WINDLASS_PROPTEST_CASES=N` runs N.

use proptest::prelude::*;
use proptest::test_runner::Config as ProptestConfig;
use serde_json::{Map, Value, json};

use crate::limits::{MAX_JSON_PATCH_COPY_BYTES, MAX_OBJECT_BYTES};
use crate::nesting::{self, MAX_DEPTH};

pub(crate) fn config() -> ProptestConfig {
    let cases = std::env::var("WINDLASS_PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2_000);
    ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// Keys that mean something to the patchers, and a few that do not.
fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-c]{1,2}",
        prop::sample::select(vec![
            "name",
            "containers",
            "env",
            "ports",
            "containerPort",
            "port",
            "finalizers",
            "ownerReferences",
            "uid",
            "metadata",
            "spec",
            "$patch",
            "$retainKeys",
            "$setElementOrder/env",
            "$deleteFromPrimitiveList/finalizers",
        ])
        .prop_map(str::to_owned),
    ]
}

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<f64>().prop_map(|f| json!(f)),
        "[a-c0-9/~-]{0,4}".prop_map(Value::String),
        prop::sample::select(vec!["delete", "replace", "merge", "x"]).prop_map(|s| json!(s)),
    ]
}

pub(crate) fn json_value() -> impl Strategy<Value = Value> {
    leaf().prop_recursive(6, 48, 5, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::vec((key(), inner), 0..5)
                .prop_map(|kv| Value::Object(kv.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

/// A JSON pointer into documents like [`json_value`]'s.
fn pointer() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop_oneof![
            key(),
            prop::sample::select(vec!["0", "1", "-", "01", "~1", "~0", "~2", ""])
                .prop_map(str::to_owned),
        ],
        0..4,
    )
    .prop_map(|segs| segs.iter().map(|s| format!("/{s}")).collect())
}

/// JSON patch operations, well-formed or not.
fn json_patch_ops() -> impl Strategy<Value = Value> {
    let op = (
        prop::sample::select(vec![
            "add", "remove", "replace", "move", "copy", "test", "bogus",
        ]),
        pointer(),
        pointer(),
        json_value(),
        0..8u8,
    )
        .prop_map(|(op, path, from, value, drop)| {
            let mut o = json!({"op": op, "path": path, "from": from, "value": value});
            // Leave a field out now and then.
            if drop == 0 {
                o.as_object_mut().unwrap().remove("value");
            } else if drop == 1 {
                o.as_object_mut().unwrap().remove("from");
            }
            o
        });
    prop_oneof![
        9 => prop::collection::vec(op, 0..8).prop_map(Value::Array),
        1 => json_value(),
    ]
}

/// Protobuf fields nested at random, over the wire types the decoder reads.
fn wire_message(depth: u32) -> BoxedStrategy<Vec<u8>> {
    let scalar = prop_oneof![
        (1..20u64, any::<u64>()).prop_map(|(n, v)| [varint(n << 3), varint(v)].concat()),
        (1..20u64, any::<[u8; 8]>()).prop_map(|(n, b)| [varint(n << 3 | 1), b.to_vec()].concat()),
        (1..20u64, any::<[u8; 4]>()).prop_map(|(n, b)| [varint(n << 3 | 5), b.to_vec()].concat()),
        (1..20u64, prop::collection::vec(any::<u8>(), 0..12))
            .prop_map(|(n, b)| length_delimited(n, &b)),
        prop::collection::vec(any::<u8>(), 0..6),
    ];
    if depth == 0 {
        return prop::collection::vec(scalar, 0..6)
            .prop_map(|fs| fs.concat())
            .boxed();
    }
    let nested = (1..20u64, wire_message(depth - 1)).prop_map(|(n, m)| length_delimited(n, &m));
    prop::collection::vec(prop_oneof![3 => scalar, 2 => nested], 0..6)
        .prop_map(|fs| fs.concat())
        .boxed()
}

fn varint(mut v: u64) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let b = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(b);
            return out;
        }
        out.push(b | 0x80);
    }
}

fn length_delimited(n: u64, payload: &[u8]) -> Vec<u8> {
    [
        varint(n << 3 | 2),
        varint(payload.len() as u64),
        payload.to_vec(),
    ]
    .concat()
}

/// A `k8s\0` envelope around `raw`, for one of a few served kinds.
fn envelope(kind: usize, raw: &[u8]) -> Vec<u8> {
    let (api_version, kind) = [
        ("v1", "ConfigMap"),
        ("v1", "Pod"),
        ("apps/v1", "Deployment"),
        ("batch/v1", "CronJob"),
        ("networking.k8s.io/v1", "Ingress"),
    ][kind % 5];
    let typ = [
        length_delimited(1, api_version.as_bytes()),
        length_delimited(2, kind.as_bytes()),
    ]
    .concat();
    [
        b"k8s\0".to_vec(),
        length_delimited(1, &typ),
        length_delimited(2, raw),
    ]
    .concat()
}

/// YAML-like text: indicators, anchors, aliases, quotes and nesting.
fn yaml_text() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop::sample::select(vec![
            "a", "b: ", "- ", "[", "]", "{", "}", ", ", ": ", "\n", "  ", "&x ", "*x", "&y ", "*y",
            "'q'", "\"q\\n\"", "# c\n", "? ", "|\n  t\n", "!!str ", "~", "1", "-2.5", "true",
            "---\n", "...\n", "<<: *x\n",
        ]),
        0..40,
    )
    .prop_map(|parts| parts.concat())
}

/// A document of `levels` anchors, each a list of `fanout` aliases of the
/// previous one: expands to `fanout^levels` leaves.
fn alias_tree(levels: usize, fanout: usize) -> String {
    let mut doc = String::from("l0: &a0 [x]\n");
    for i in 1..=levels {
        let items = vec![format!("*a{}", i - 1); fanout].join(", ");
        doc.push_str(&format!("l{i}: &a{i} [{items}]\n"));
    }
    doc
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn protobuf_decoding_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..64)) {
        let _ = crate::proto::decode(&bytes);
        let _ = crate::proto::decode(&[b"k8s\0".as_slice(), &bytes].concat());
    }

    /// Output bounded by input: at most 16 bytes of JSON per byte of protobuf.
    #[test]
    fn protobuf_messages_decode_within_bounds(kind in 0..5usize, raw in wire_message(4)) {
        let body = envelope(kind, &raw);
        if let Ok(v) = crate::proto::decode(&body) {
            prop_assert!(nesting::json_len(&v) <= 16 * body.len() + 256);
        }
    }

    #[test]
    fn yaml_decoding_is_bounded(text in yaml_text()) {
        if let Ok(v) = crate::yaml::from_slice(text.as_bytes()) {
            prop_assert!(nesting::json_len(&v) <= MAX_OBJECT_BYTES + text.len());
        }
    }

    /// Alias expansion stops at the limits, however the aliases nest.
    #[test]
    fn yaml_aliases_are_bounded(levels in 1..12usize, fanout in 1..12usize) {
        let doc = alias_tree(levels, fanout);
        match crate::yaml::from_slice_within(doc.as_bytes(), 64 * 1024) {
            Ok(v) => prop_assert!(nesting::json_len(&v) <= 64 * 1024 + doc.len()),
            Err(crate::yaml::YamlError::Syntax(e)) => prop_assert!(false, "{e}"),
            Err(_) => {}
        }
    }

    /// Whatever the content type and bytes, intake gives a value within the
    /// depth limit or a 4xx Status.
    #[test]
    fn request_bodies_decode_or_get_a_4xx(
        ct in prop::sample::select(vec!["application/json", "application/yaml", "application/vnd.kubernetes.protobuf", "text/plain", ""]),
        text in prop_oneof![yaml_text(), json_value().prop_map(|v| v.to_string())],
    ) {
        match crate::request::decode_body(ct, text.as_bytes()) {
            Ok(v) => prop_assert!(nesting::depth(&v) <= MAX_DEPTH),
            Err(e) => prop_assert!((400..500).contains(&e.code), "{}", e.code),
        }
    }

    /// The result of a JSON patch is at most the document, the patch and
    /// the copy allowance put together.
    #[test]
    fn json_patches_are_bounded(doc in json_value(), patch in json_patch_ops()) {
        let bound = nesting::json_len(&doc) + nesting::json_len(&patch) + MAX_JSON_PATCH_COPY_BYTES;
        let mut v = doc;
        if crate::patch::json_patch(&mut v, patch).is_ok() {
            prop_assert!(nesting::json_len(&v) <= bound);
        }
        nesting::drop(v);
    }

    /// Merge and strategic merge patches never add more than the patch.
    #[test]
    fn merge_patches_are_bounded(doc in json_value(), patch in json_value()) {
        let bound = nesting::json_len(&doc) + nesting::json_len(&patch) + 16;
        let mut merged = doc.clone();
        crate::patch::merge(&mut merged, &patch);
        prop_assert!(nesting::json_len(&merged) <= bound);
        let mut strategic = doc;
        if crate::patch::strategic(&mut strategic, &patch).is_ok() {
            prop_assert!(nesting::json_len(&strategic) <= bound);
        }
    }
}
