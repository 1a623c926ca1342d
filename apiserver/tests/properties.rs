//! Property tests through the server: whatever bytes a client sends, with
//! whatever content type, to create, replace or patch an object, the answer
//! is a success or a `4xx` `Status` (never a 5xx, a hang or a crash), and
//! the server still answers afterwards. A few thousand requests by default;
//! `WINDLASS_PROPTEST_CASES=N` sends N.

mod common;

use bytes::Bytes;
use common::Http;
use proptest::prelude::*;
use proptest::test_runner::{Config as ProptestConfig, TestRunner};
use serde_json::{Map, Value, json};
use windlass_apiserver::{Config, start};

const CMS: &str = "/api/v1/namespaces/default/configmaps";

fn cases() -> u32 {
    std::env::var("WINDLASS_PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2_000)
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        "[a-z0-9./-]{0,6}".prop_map(Value::String),
    ];
    let key = prop::sample::select(vec![
        "apiVersion",
        "kind",
        "metadata",
        "name",
        "namespace",
        "data",
        "spec",
        "op",
        "path",
        "value",
        "from",
        "$patch",
        "finalizers",
        "resourceVersion",
        "a",
    ]);
    leaf.prop_recursive(5, 40, 5, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::vec((key.clone(), inner), 0..5).prop_map(|kv| {
                Value::Object(
                    kv.into_iter()
                        .map(|(k, v)| (k.to_owned(), v))
                        .collect::<Map<_, _>>(),
                )
            }),
        ]
    })
}

/// A body: bytes, JSON (often shaped like a ConfigMap or a patch), YAML-ish
/// text, or a protobuf envelope around random fields.
fn body() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        prop::collection::vec(any::<u8>(), 0..200),
        json_value().prop_map(|v| v.to_string().into_bytes()),
        json_value().prop_map(|v| {
            json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "target", "generateName": "p-", "labels": v.clone()}, "data": v})
            .to_string()
            .into_bytes()
        }),
        prop::collection::vec(json_value(), 0..4).prop_map(|ops| {
            Value::Array(
                ops.into_iter()
                    .map(|v| json!({"op": "add", "path": "/data/x", "value": v}))
                    .collect(),
            )
            .to_string()
            .into_bytes()
        }),
        prop::collection::vec(
            prop::sample::select(vec![
                "a: ", "- ", "[", "]", "{", "}", "\n", "  ", "&x ", "*x", "kind: ConfigMap\n",
                "apiVersion: v1\n", "metadata:\n  name: target\n", "'q'", "~",
            ]),
            0..30
        )
        .prop_map(|parts| parts.concat().into_bytes()),
        prop::collection::vec(any::<u8>(), 0..120).prop_map(|raw| {
            let mut b = b"k8s\0\x0a\x0f\x0a\x02v1\x12\x09ConfigMap\x12".to_vec();
            b.push(raw.len() as u8);
            b.extend(raw);
            b
        }),
    ]
}

fn content_type() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec![
        "application/json",
        "application/yaml",
        "application/vnd.kubernetes.protobuf",
        "application/merge-patch+json",
        "application/json-patch+json",
        "application/strategic-merge-patch+json",
        "application/apply-patch+yaml",
        "text/html",
        "",
    ])
}

/// The limit: every answer to a client's bytes is a success or a 4xx
/// `Status` carrying the same code; the server answers after thousands.
#[test]
fn any_body_gets_a_success_or_a_4xx_status() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let server = rt.block_on(start(Config::new())).unwrap();
    let http = Http::new(server.addr());
    let target = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "target"}, "data": {"k": "v"}});
    assert_eq!(rt.block_on(http.post(CMS, &target)).0, 201);
    let mut runner = TestRunner::new(ProptestConfig {
        cases: cases(),
        failure_persistence: None,
        ..ProptestConfig::default()
    });
    let requests = (
        prop::sample::select(vec!["POST", "PUT", "PATCH"]),
        content_type(),
        body(),
    );
    runner
        .run(&requests, |(method, ct, body)| {
            let path = match method {
                "POST" => CMS.to_owned(),
                _ => format!("{CMS}/target?fieldManager=props"),
            };
            let (code, v) = rt.block_on(http.send_raw(method, &path, ct, Bytes::from(body)));
            prop_assert!(code < 500, "{method} {ct}: {code} {v}");
            if code >= 400 {
                prop_assert_eq!(&v["kind"], "Status", "{} {}: {}", method, ct, v);
                prop_assert_eq!(&v["code"], code, "{}", v);
                prop_assert!(
                    v["message"].as_str().is_some_and(|m| !m.is_empty()),
                    "{}",
                    v
                );
            }
            Ok(())
        })
        .unwrap();
    let (c, _) = rt.block_on(http.get("/version"));
    assert_eq!(c, 200);
    let (c, _) = rt.block_on(http.get(&format!("{CMS}/target")));
    assert!(c == 200 || c == 404, "{c}");
    rt.block_on(server.shutdown());
}
