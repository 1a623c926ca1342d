//! The OpenAPI v2 document as protobuf (gnostic's `openapi_v2.Document`),
//! which is the only form client-go's discovery client reads `/openapi/v2`
//! in: kubectl validates manifests it cannot have the server validate (a
//! `kind: List`) against it. Encoded from the JSON document, for the parts
//! clients read: definitions (types, properties, items, maps, references,
//! required fields, descriptions, formats, enums, defaults and vendor
//! extensions) and the PATCH operations' query parameters. Vendor
//! extensions, defaults and enum values travel as YAML text (JSON is YAML),
//! as gnostic's `Any` carries them.

use serde_json::{Map, Value};

/// A protobuf message being written.
#[derive(Default)]
struct Msg(Vec<u8>);

impl Msg {
    fn varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.0.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.0.push(v as u8);
    }

    fn key(&mut self, field: u32, wire: u32) {
        self.varint(u64::from(field << 3 | wire));
    }

    fn bytes(&mut self, field: u32, b: &[u8]) {
        self.key(field, 2);
        self.varint(b.len() as u64);
        self.0.extend_from_slice(b);
    }

    fn string(&mut self, field: u32, s: &str) {
        if !s.is_empty() {
            self.bytes(field, s.as_bytes());
        }
    }

    fn message(&mut self, field: u32, m: Msg) {
        self.bytes(field, &m.0);
    }

    fn boolean(&mut self, field: u32, b: bool) {
        if b {
            self.key(field, 0);
            self.varint(1);
        }
    }

    fn int(&mut self, field: u32, v: i64) {
        if v != 0 {
            self.key(field, 0);
            self.varint(v as u64);
        }
    }

    fn double(&mut self, field: u32, v: f64) {
        if v != 0.0 {
            self.key(field, 1);
            self.0.extend_from_slice(&v.to_le_bytes());
        }
    }
}

/// gnostic's `Any`: the value as YAML text.
fn any(v: &Value) -> Msg {
    let mut m = Msg::default();
    m.string(2, &serde_json::to_string(v).expect("JSON values serialize"));
    m
}

/// `NamedAny` vendor extensions of a JSON object (its `x-` keys).
fn vendor_extensions(m: &mut Msg, field: u32, obj: &Map<String, Value>) {
    for (k, v) in obj.iter().filter(|(k, _)| k.starts_with("x-")) {
        let mut named = Msg::default();
        named.string(1, k);
        named.message(2, any(v));
        m.message(field, named);
    }
}

/// `NamedSchema { name, value }`.
fn named_schema(name: &str, s: &Value) -> Msg {
    let mut m = Msg::default();
    m.string(1, name);
    m.message(2, schema(s));
    m
}

/// A `Schema` (field numbers from gnostic's OpenAPIv2.proto).
fn schema(s: &Value) -> Msg {
    let mut m = Msg::default();
    let Some(o) = s.as_object() else {
        return m;
    };
    let text = |k: &str| o.get(k).and_then(Value::as_str).unwrap_or_default();
    m.string(1, text("$ref"));
    m.string(2, text("format"));
    m.string(3, text("title"));
    m.string(4, text("description"));
    if let Some(d) = o.get("default") {
        m.message(5, any(d));
    }
    let num = |k: &str| o.get(k).and_then(Value::as_f64).unwrap_or(0.0);
    let int = |k: &str| o.get(k).and_then(Value::as_i64).unwrap_or(0);
    let flag = |k: &str| o.get(k).and_then(Value::as_bool).unwrap_or(false);
    m.double(6, num("multipleOf"));
    m.double(7, num("maximum"));
    m.boolean(8, flag("exclusiveMaximum"));
    m.double(9, num("minimum"));
    m.boolean(10, flag("exclusiveMinimum"));
    m.int(11, int("maxLength"));
    m.int(12, int("minLength"));
    m.string(13, text("pattern"));
    m.int(14, int("maxItems"));
    m.int(15, int("minItems"));
    m.boolean(16, flag("uniqueItems"));
    m.int(17, int("maxProperties"));
    m.int(18, int("minProperties"));
    for r in o
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        m.string(19, r.as_str().unwrap_or_default());
    }
    for e in o
        .get("enum")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        m.message(20, any(e));
    }
    match o.get("additionalProperties") {
        Some(Value::Bool(b)) => {
            let mut a = Msg::default();
            a.key(2, 0);
            a.varint(u64::from(*b));
            m.message(21, a);
        }
        Some(v @ Value::Object(_)) => {
            let mut a = Msg::default();
            a.message(1, schema(v));
            m.message(21, a);
        }
        _ => {}
    }
    if let Some(t) = o.get("type").and_then(Value::as_str) {
        let mut ti = Msg::default();
        ti.string(1, t);
        m.message(22, ti);
    }
    if let Some(items) = o.get("items").filter(|i| i.is_object()) {
        let mut ii = Msg::default();
        ii.message(1, schema(items));
        m.message(23, ii);
    }
    for a in o
        .get("allOf")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        m.message(24, schema(a));
    }
    if let Some(props) = o.get("properties").and_then(Value::as_object) {
        let mut p = Msg::default();
        for (k, v) in props {
            p.message(1, named_schema(k, v));
        }
        m.message(25, p);
    }
    m.boolean(27, flag("readOnly"));
    if let Some(e) = o.get("example") {
        m.message(30, any(e));
    }
    vendor_extensions(&mut m, 31, o);
    m
}

/// A query parameter of an operation.
fn query_parameter(p: &Value) -> Msg {
    let mut q = Msg::default();
    q.string(2, "query");
    q.string(3, p["description"].as_str().unwrap_or_default());
    q.string(4, p["name"].as_str().unwrap_or_default());
    q.string(6, p["type"].as_str().unwrap_or_default());
    q.boolean(20, p["uniqueItems"].as_bool().unwrap_or(false));
    let mut non_body = Msg::default();
    non_body.message(3, q);
    let mut param = Msg::default();
    param.message(2, non_body);
    let mut item = Msg::default();
    item.message(1, param);
    item
}

fn operation(op: &Value) -> Msg {
    let mut m = Msg::default();
    m.string(3, op["description"].as_str().unwrap_or_default());
    m.string(5, op["operationId"].as_str().unwrap_or_default());
    for p in op["parameters"].as_array().into_iter().flatten() {
        if p["in"] == "query" {
            m.message(8, query_parameter(p));
        }
    }
    if let Some(o) = op.as_object() {
        vendor_extensions(&mut m, 13, o);
    }
    m
}

/// The protobuf of a swagger 2.0 JSON document.
pub(crate) fn encode(doc: &Value) -> Vec<u8> {
    let mut d = Msg::default();
    d.string(1, doc["swagger"].as_str().unwrap_or("2.0"));
    let mut info = Msg::default();
    info.string(1, doc["info"]["title"].as_str().unwrap_or_default());
    info.string(2, doc["info"]["version"].as_str().unwrap_or_default());
    d.message(2, info);
    let mut paths = Msg::default();
    for (path, item) in doc["paths"].as_object().into_iter().flatten() {
        let mut pi = Msg::default();
        for (verb, field) in [
            ("get", 2),
            ("put", 3),
            ("post", 4),
            ("delete", 5),
            ("patch", 8),
        ] {
            if let Some(op) = item.get(verb) {
                pi.message(field, operation(op));
            }
        }
        let mut named = Msg::default();
        named.string(1, path);
        named.message(2, pi);
        paths.message(2, named);
    }
    d.message(8, paths);
    let mut defs = Msg::default();
    for (name, s) in doc["definitions"].as_object().into_iter().flatten() {
        defs.message(1, named_schema(name, s));
    }
    d.message(9, defs);
    d.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Reads a message's fields back: `(field, wire type, payload or value)`.
    fn fields(mut b: &[u8]) -> Vec<(u32, u8, Vec<u8>)> {
        fn varint(b: &mut &[u8]) -> u64 {
            let (mut v, mut shift) = (0u64, 0);
            loop {
                let byte = b[0];
                *b = &b[1..];
                v |= u64::from(byte & 0x7f) << shift;
                if byte < 0x80 {
                    return v;
                }
                shift += 7;
            }
        }
        let mut out = Vec::new();
        while !b.is_empty() {
            let key = varint(&mut b);
            let (field, wire) = ((key >> 3) as u32, (key & 7) as u8);
            let payload = match wire {
                0 => varint(&mut b).to_le_bytes().to_vec(),
                1 => {
                    let p = b[..8].to_vec();
                    b = &b[8..];
                    p
                }
                2 => {
                    let n = varint(&mut b) as usize;
                    let p = b[..n].to_vec();
                    b = &b[n..];
                    p
                }
                w => panic!("wire type {w}"),
            };
            out.push((field, wire, payload));
        }
        out
    }

    fn field(b: &[u8], n: u32) -> Vec<Vec<u8>> {
        fields(b)
            .into_iter()
            .filter(|f| f.0 == n)
            .map(|f| f.2)
            .collect()
    }

    #[test]
    fn definitions_encode_as_gnostic_reads_them() {
        let doc = json!({"swagger": "2.0", "info": {"title": "Kubernetes", "version": "v1"},
            "paths": {},
            "definitions": {"io.k8s.api.core.v1.ConfigMap": {
                "type": "object", "description": "ConfigMap holds data",
                "required": ["a"],
                "properties": {
                    "data": {"type": "object", "additionalProperties": {"type": "string"}},
                    "metadata": {"$ref": "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"},
                    "list": {"type": "array", "items": {"type": "string"}}},
                "x-kubernetes-group-version-kind": [{"group": "", "kind": "ConfigMap", "version": "v1"}]}}});
        let b = encode(&doc);
        assert_eq!(field(&b, 1), [b"2.0".to_vec()]);
        let defs = &field(&b, 9)[0];
        let named = &field(defs, 1)[0];
        assert_eq!(field(named, 1), [b"io.k8s.api.core.v1.ConfigMap".to_vec()]);
        let s = &field(named, 2)[0];
        assert_eq!(field(&field(s, 22)[0], 1), [b"object".to_vec()]);
        assert_eq!(field(s, 19), [b"a".to_vec()]);
        let ext = &field(s, 31)[0];
        assert_eq!(field(ext, 1), [b"x-kubernetes-group-version-kind".to_vec()]);
        let yaml = String::from_utf8(field(&field(ext, 2)[0], 2)[0].clone()).unwrap();
        assert_eq!(
            serde_json::from_str::<Value>(&yaml).unwrap()[0]["kind"],
            "ConfigMap"
        );
        let props = &field(s, 25)[0];
        let names: Vec<String> = field(props, 1)
            .iter()
            .map(|p| String::from_utf8(field(p, 1)[0].clone()).unwrap())
            .collect();
        assert_eq!(names, ["data", "list", "metadata"]);
        let data = &field(&field(props, 1)[0], 2)[0];
        let additional = &field(data, 21)[0];
        assert_eq!(
            field(&field(&field(additional, 1)[0], 22)[0], 1),
            [b"string".to_vec()]
        );
        let meta = &field(&field(props, 1)[2], 2)[0];
        assert_eq!(
            field(meta, 1),
            [b"#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta".to_vec()]
        );
        let list = &field(&field(props, 1)[1], 2)[0];
        assert_eq!(field(&field(list, 23)[0], 1).len(), 1);
    }
}
