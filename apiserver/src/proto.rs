//! Decoding of Kubernetes protobuf request bodies into the objects' JSON
//! form, for every kind the server serves: kubectl's typed clients send
//! protobuf (`kubectl create deployment|service|job|role|...`).
//!
//! The envelope is the 4-byte magic `k8s\0` and a `runtime.Unknown`
//! (`typeMeta` = 1 {apiVersion = 1, kind = 2}, `raw` = 2); `raw` is the
//! object's message. Messages are read with the wire schema in
//! `proto/schema.txt` (written by `proto/gen-schema.py` from the Kubernetes
//! `generated.proto` files; its header says how to read it).
//!
//! Go's protobuf encoding writes every field that is not a pointer, zero or
//! not, so the JSON follows what Go's JSON encoding of the same object
//! would say: empty strings, lists and maps are left out, a zero `Time` is
//! absent, and a `false` or `0` is left out where the Go field is a plain
//! value marked `omitempty` (`proto/omitempty.txt`, written by
//! `proto/gen-omitempty.py` from the Go types): `kubectl create deployment`
//! sends `stdin: false`, which kube-apiserver never shows. A pointer's
//! explicit zero (`replicas: 0`) stays. A field the schema does not know is
//! an error unless its value is zero, so nothing the client sent is
//! silently dropped.

mod omit;

use std::collections::HashMap;
use std::sync::OnceLock;

use base64::Engine;
use serde_json::{Map, Value, json};

pub(crate) use omit::omit_empty;

const MAGIC: &[u8] = b"k8s\0";

/// One field of a protobuf message on the wire.
#[derive(Clone, Copy)]
enum Wire<'a> {
    Varint(u64),
    Fixed64(u64),
    Bytes(&'a [u8]),
    Fixed32(u32),
}

impl Wire<'_> {
    /// Whether the value is its type's zero, looking into a payload that is
    /// itself a message of zero fields. A client chooses how deep such
    /// payloads nest, so this walks them with a work list, not recursion
    /// (each field is read once; the list holds at most one entry per field).
    fn is_zero(&self) -> bool {
        let mut todo = vec![*self];
        while let Some(w) = todo.pop() {
            match w {
                Wire::Varint(v) | Wire::Fixed64(v) if v != 0 => return false,
                Wire::Fixed32(v) if v != 0 => return false,
                Wire::Bytes(b) if !b.is_empty() => match fields(b) {
                    Ok(fs) => todo.extend(fs.into_iter().map(|(_, w)| w)),
                    // Not a message: a string or bytes, and not empty.
                    Err(_) => return false,
                },
                _ => {}
            }
        }
        true
    }
}

fn varint(b: &[u8], i: &mut usize) -> Result<u64, String> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = *b.get(*i).ok_or("truncated varint")?;
        *i += 1;
        v |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Ok(v);
        }
    }
    Err("varint too long".into())
}

fn fixed<const N: usize>(b: &[u8], i: &mut usize) -> Result<[u8; N], String> {
    let bytes = b
        .get(*i..*i + N)
        .ok_or("truncated field")?
        .try_into()
        .map_err(|_| "truncated field")?;
    *i += N;
    Ok(bytes)
}

/// The fields of one message, in wire order.
fn fields(b: &[u8]) -> Result<Vec<(u64, Wire<'_>)>, String> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let key = varint(b, &mut i)?;
        let (num, wire) = (key >> 3, key & 7);
        let w = match wire {
            0 => Wire::Varint(varint(b, &mut i)?),
            1 => Wire::Fixed64(u64::from_le_bytes(fixed(b, &mut i)?)),
            2 => {
                let n = usize::try_from(varint(b, &mut i)?).map_err(|_| "field too long")?;
                let end = i
                    .checked_add(n)
                    .filter(|&e| e <= b.len())
                    .ok_or("truncated field")?;
                let s = &b[i..end];
                i = end;
                Wire::Bytes(s)
            }
            5 => Wire::Fixed32(u32::from_le_bytes(fixed(b, &mut i)?)),
            w => return Err(format!("unsupported wire type {w}")),
        };
        out.push((num, w));
    }
    Ok(out)
}

/// A field's value type in the schema.
#[derive(Debug, Clone, PartialEq)]
enum Ty {
    String,
    Int,
    Bool,
    Bytes,
    Float,
    /// `meta.v1.Time`: seconds and nanos, as RFC 3339 to the second.
    Time,
    /// `meta.v1.MicroTime`: as RFC 3339 to the microsecond.
    MicroTime,
    /// `meta.v1.Duration`: nanoseconds, as a Go duration string.
    Duration,
    /// `resource.Quantity`: its string form.
    Quantity,
    /// `intstr.IntOrString`: a number or a string.
    IntOrString,
    /// `runtime.RawExtension` or `meta.v1.FieldsV1`: embedded JSON bytes.
    RawJson,
    Message(String),
}

#[derive(Debug)]
struct FieldSpec {
    name: String,
    ty: Ty,
    repeated: bool,
    map: bool,
    /// Go embeds the message's fields into the parent (`json:",inline"`).
    inline: bool,
    /// A plain Go value marked `omitempty`: `false` or `0` is left out.
    omit_zero: bool,
    /// A Go list or map marked `omitempty`: left out when empty (`omit.rs`).
    omit_empty: bool,
}

type Schema = HashMap<String, HashMap<u64, FieldSpec>>;

fn parse_schema(text: &str) -> Schema {
    let mut schema = Schema::new();
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let mut parts = line.split(' ');
        let Some(message) = parts.next() else {
            continue;
        };
        let mut fields = HashMap::new();
        for spec in parts {
            let mut it = spec.splitn(3, ':');
            let (Some(num), Some(name), Some(ty)) = (it.next(), it.next(), it.next()) else {
                panic!("schema.txt: bad field {spec} of {message}");
            };
            let (map, ty) = ty.strip_prefix('%').map_or((false, ty), |t| (true, t));
            let (repeated, ty) = ty.strip_prefix('*').map_or((false, ty), |t| (true, t));
            let (inline, ty) = ty.strip_suffix('^').map_or((false, ty), |t| (true, t));
            let ty = match ty {
                "s" => Ty::String,
                "i" => Ty::Int,
                "b" => Ty::Bool,
                "y" => Ty::Bytes,
                "d" => Ty::Float,
                "time" => Ty::Time,
                "mtime" => Ty::MicroTime,
                "dur" => Ty::Duration,
                "qty" => Ty::Quantity,
                "ios" => Ty::IntOrString,
                "raw" | "fields" => Ty::RawJson,
                m => Ty::Message(m.to_owned()),
            };
            let num = num.parse().expect("schema.txt: field number");
            fields.insert(
                num,
                FieldSpec {
                    name: name.to_owned(),
                    ty,
                    repeated,
                    map,
                    inline,
                    omit_zero: false,
                    omit_empty: false,
                },
            );
        }
        schema.insert(message.to_owned(), fields);
    }
    schema
}

/// Marks the fields `omitempty.txt` lists in `schema`: scalars (`z`) and
/// lists or maps (`e`).
fn mark_omitempty(schema: &mut Schema, table: &str) {
    for line in table.lines().filter(|l| !l.starts_with('#')) {
        let mut parts = line.split(' ');
        let (Some(message), Some(field), Some(kind)) = (parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        if let Some(spec) =
            (schema.get_mut(message)).and_then(|fs| fs.values_mut().find(|s| s.name == field))
        {
            spec.omit_zero = kind == "z";
            spec.omit_empty = kind == "e";
        }
    }
}

fn schema() -> &'static Schema {
    static SCHEMA: OnceLock<Schema> = OnceLock::new();
    SCHEMA.get_or_init(|| {
        let mut schema = parse_schema(include_str!("proto/schema.txt"));
        mark_omitempty(&mut schema, include_str!("proto/omitempty.txt"));
        schema
    })
}

/// The schema's message for an object of `api_version` and `kind`:
/// `apps/v1` `Deployment` is `apps.v1.Deployment`, a group's first label
/// naming its package (`rbac.authorization.k8s.io` is `rbac`), the core
/// group `core`. `DeleteOptions` is the same message in every group.
fn message_for(api_version: &str, kind: &str) -> String {
    if kind == "DeleteOptions" {
        return "meta.v1.DeleteOptions".into();
    }
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    let package = match group.split('.').next() {
        Some("") | None => "core",
        Some(p) => p,
    };
    format!("{package}.{version}.{kind}")
}

fn utf8(b: &[u8], field: &str) -> Result<String, String> {
    String::from_utf8(b.to_vec()).map_err(|_| format!("invalid UTF-8 in field {field}"))
}

fn bytes_of<'a>(w: Wire<'a>, field: &str) -> Result<&'a [u8], String> {
    match w {
        Wire::Bytes(b) => Ok(b),
        _ => Err(format!("field {field}: expected a length-delimited value")),
    }
}

fn int_of(w: Wire<'_>, field: &str) -> Result<i64, String> {
    match w {
        // Negative int32s and int64s are sent as ten-byte two's complement.
        Wire::Varint(v) | Wire::Fixed64(v) => Ok(v as i64),
        Wire::Fixed32(v) => Ok(i64::from(v as i32)),
        Wire::Bytes(_) => Err(format!("field {field}: expected a number")),
    }
}

/// The value of field 1 of the message `b` (the last, if repeated): the one
/// field of a `Quantity`, `Duration`, `RawExtension` or `FieldsV1`.
fn first_field<'a>(b: &'a [u8]) -> Result<Option<Wire<'a>>, String> {
    Ok(fields(b)?
        .into_iter()
        .rev()
        .find(|(n, _)| *n == 1)
        .map(|(_, w)| w))
}

/// `seconds` and `nanos` of a `Time` or `MicroTime` message.
fn timestamp(b: &[u8], field: &str) -> Result<(i64, i64), String> {
    let (mut secs, mut nanos) = (0, 0);
    for (n, w) in fields(b)? {
        match n {
            1 => secs = int_of(w, field)?,
            2 => nanos = int_of(w, field)?,
            _ => {}
        }
    }
    Ok((secs, nanos))
}

/// A Go `time.Duration` string, as `metav1.Duration` marshals to JSON.
fn go_duration(nanos: i64) -> String {
    if nanos == 0 {
        return "0s".into();
    }
    let sign = if nanos < 0 { "-" } else { "" };
    let n = nanos.unsigned_abs();
    if n < 1_000_000_000 {
        let (unit, div) = match n {
            0..1_000 => ("ns", 1),
            1_000..1_000_000 => ("µs", 1_000),
            _ => ("ms", 1_000_000),
        };
        return format!("{sign}{}{unit}", trim_fraction(n, div));
    }
    let (h, rest) = (n / 3_600_000_000_000, n % 3_600_000_000_000);
    let (m, rest) = (rest / 60_000_000_000, rest % 60_000_000_000);
    let s = trim_fraction(rest, 1_000_000_000);
    match (h, m) {
        (0, 0) => format!("{sign}{s}s"),
        (0, m) => format!("{sign}{m}m{s}s"),
        (h, m) => format!("{sign}{h}h{m}m{s}s"),
    }
}

/// `n / div` with the fraction's trailing zeros removed (`1.5`, `2`).
fn trim_fraction(n: u64, div: u64) -> String {
    let (whole, frac) = (n / div, n % div);
    if frac == 0 {
        return whole.to_string();
    }
    let width = div.ilog10() as usize;
    let frac = format!("{frac:0width$}");
    format!("{whole}.{}", frac.trim_end_matches('0'))
}

/// One value of a field; `null` for a zero timestamp or an empty embedded
/// object (what Go writes as `null`).
fn value(spec: &FieldSpec, w: Wire<'_>, schema: &Schema) -> Result<Value, String> {
    let f = spec.name.as_str();
    Ok(match &spec.ty {
        Ty::String => json!(utf8(bytes_of(w, f)?, f)?),
        Ty::Int => json!(int_of(w, f)?),
        Ty::Bool => json!(int_of(w, f)? != 0),
        Ty::Float => match w {
            Wire::Fixed64(v) => json!(f64::from_bits(v)),
            Wire::Fixed32(v) => json!(f32::from_bits(v)),
            _ => return Err(format!("field {f}: expected a floating-point number")),
        },
        Ty::Bytes => json!(base64::engine::general_purpose::STANDARD.encode(bytes_of(w, f)?)),
        Ty::Time | Ty::MicroTime => {
            let (secs, nanos) = timestamp(bytes_of(w, f)?, f)?;
            if secs == 0 && nanos == 0 {
                return Ok(Value::Null);
            }
            let text = crate::time::format_rfc3339(secs);
            if spec.ty == Ty::MicroTime {
                let micros = nanos / 1_000;
                json!(format!("{}.{micros:06}Z", text.trim_end_matches('Z')))
            } else {
                json!(text)
            }
        }
        Ty::Duration => match first_field(bytes_of(w, f)?)? {
            Some(w) => json!(go_duration(int_of(w, f)?)),
            None => json!(go_duration(0)),
        },
        Ty::Quantity => match first_field(bytes_of(w, f)?)? {
            Some(w) => json!(utf8(bytes_of(w, f)?, f)?),
            None => json!(""),
        },
        Ty::IntOrString => {
            let (mut is_string, mut int, mut string) = (false, 0, String::new());
            for (n, w) in fields(bytes_of(w, f)?)? {
                match n {
                    1 => is_string = int_of(w, f)? == 1,
                    2 => int = int_of(w, f)?,
                    3 => string = utf8(bytes_of(w, f)?, f)?,
                    _ => {}
                }
            }
            if is_string { json!(string) } else { json!(int) }
        }
        Ty::RawJson => match first_field(bytes_of(w, f)?)? {
            Some(w) if !bytes_of(w, f)?.is_empty() => {
                serde_json::from_slice(bytes_of(w, f)?).map_err(|_| {
                    format!("field {f} embeds an object that is not JSON; send the whole body as JSON or YAML")
                })?
            }
            _ => Value::Null,
        },
        Ty::Message(m) => Value::Object(message(m, bytes_of(w, f)?, schema)?),
    })
}

/// Decodes one message of the schema into its JSON object.
fn message(name: &str, b: &[u8], schema: &Schema) -> Result<Map<String, Value>, String> {
    let specs = schema
        .get(name)
        .ok_or_else(|| format!("no schema for the message {name}"))?;
    let mut obj = Map::new();
    for (num, w) in fields(b)? {
        let Some(spec) = specs.get(&num) else {
            if w.is_zero() {
                continue;
            }
            return Err(format!(
                "field {num} of {name} is not one this server knows; send JSON or YAML"
            ));
        };
        if spec.map {
            let (mut key, mut val) = (String::new(), None);
            for (n, w) in fields(bytes_of(w, &spec.name)?)? {
                match n {
                    1 => key = utf8(bytes_of(w, &spec.name)?, &spec.name)?,
                    2 => val = Some(value(spec, w, schema)?),
                    _ => {}
                }
            }
            let val = val.unwrap_or_else(|| match spec.ty {
                Ty::String | Ty::Bytes | Ty::Quantity => json!(""),
                _ => Value::Null,
            });
            let entry = obj.entry(spec.name.clone()).or_insert_with(|| json!({}));
            if let Value::Object(m) = entry {
                m.insert(key, val);
            }
        } else if spec.repeated {
            let items: Vec<Value> = match (&spec.ty, w) {
                // Packed numbers: one length-delimited run of varints.
                (Ty::Int | Ty::Bool, Wire::Bytes(b)) => {
                    let mut i = 0;
                    let mut v = Vec::new();
                    while i < b.len() {
                        v.push(value(spec, Wire::Varint(varint(b, &mut i)?), schema)?);
                    }
                    v
                }
                _ => vec![value(spec, w, schema)?],
            };
            let entry = obj.entry(spec.name.clone()).or_insert_with(|| json!([]));
            if let Value::Array(a) = entry {
                a.extend(items);
            }
        } else {
            // A map's or list's items are kept whatever their value (the
            // key or the position matters); a field is left out as
            // `omitempty` would.
            let v = value(spec, w, schema)?;
            if v.is_null() || v == "" || (spec.omit_zero && (v == false || v == 0 || v == 0.0)) {
                continue;
            }
            match (spec.inline, v) {
                (true, Value::Object(inner)) => obj.extend(inner),
                (_, v) => _ = obj.insert(spec.name.clone(), v),
            }
        }
    }
    Ok(obj)
}

/// Decodes a protobuf-encoded object into its JSON form. An envelope that
/// leaves out its type is taken to be of `default` (`apiVersion`, `kind`),
/// as kube's decoder defaults it from the URL.
pub(crate) fn decode(b: &[u8], default: Option<(&str, &str)>) -> Result<Value, String> {
    let rest = b
        .strip_prefix(MAGIC)
        .ok_or("missing the k8s protobuf magic prefix")?;
    let (mut api_version, mut kind, mut raw) = (String::new(), String::new(), None);
    for (n, w) in fields(rest)? {
        match (n, w) {
            (1, Wire::Bytes(tm)) => {
                for (n, w) in fields(tm)? {
                    match (n, w) {
                        (1, Wire::Bytes(s)) => api_version = utf8(s, "apiVersion")?,
                        (2, Wire::Bytes(s)) => kind = utf8(s, "kind")?,
                        _ => {}
                    }
                }
            }
            (2, Wire::Bytes(s)) => raw = Some(s),
            (4, Wire::Bytes(s)) if !s.is_empty() && s != b"application/vnd.kubernetes.protobuf" => {
                return Err(format!(
                    "the protobuf envelope says its object is {}, which this server does not read; send JSON or YAML",
                    String::from_utf8_lossy(s)
                ));
            }
            _ => {}
        }
    }
    if let Some((a, k)) = default {
        if api_version.is_empty() {
            api_version = a.to_owned();
        }
        if kind.is_empty() {
            kind = k.to_owned();
        }
    }
    let schema = schema();
    let name = message_for(&api_version, &kind);
    if !schema.contains_key(&name) {
        return Err(format!(
            "protobuf bodies are not supported for {api_version} {kind}; send JSON or YAML"
        ));
    }
    let mut obj = message(&name, raw.unwrap_or_default(), schema)
        .map_err(|e| format!("decoding the protobuf {api_version} {kind}: {e}"))?;
    obj.insert("apiVersion".into(), json!(api_version));
    obj.insert("kind".into(), json!(kind));
    Ok(Value::Object(obj))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Field `n` with a length-delimited payload.
    fn field(n: u64, payload: &[u8]) -> Vec<u8> {
        let mut v = key(n, 2);
        v.extend(encode_varint(payload.len() as u64));
        v.extend_from_slice(payload);
        v
    }

    fn key(n: u64, wire: u64) -> Vec<u8> {
        encode_varint(n << 3 | wire)
    }

    fn encode_varint(mut v: u64) -> Vec<u8> {
        let mut out = Vec::new();
        loop {
            let byte = (v & 0x7f) as u8;
            v >>= 7;
            if v == 0 {
                out.push(byte);
                return out;
            }
            out.push(byte | 0x80);
        }
    }

    /// Field `n` as a varint.
    fn int(n: u64, v: i64) -> Vec<u8> {
        let mut out = key(n, 0);
        out.extend(encode_varint(v as u64));
        out
    }

    fn envelope(api_version: &str, kind: &str, raw: &[u8]) -> Vec<u8> {
        let tm = [field(1, api_version.as_bytes()), field(2, kind.as_bytes())].concat();
        let mut msg = MAGIC.to_vec();
        msg.extend([field(1, &tm), field(2, raw)].concat());
        msg
    }

    /// `ObjectMeta` as Go writes it: every plain field, even when empty.
    fn meta(name: &str, labels: &[(&str, &str)]) -> Vec<u8> {
        let mut m = [
            field(1, name.as_bytes()),
            field(2, b""),
            field(3, b""),
            field(5, b""),
            field(6, b""),
            int(7, 0),
            field(8, &[int(1, 0), int(2, 0)].concat()),
        ]
        .concat();
        for (k, v) in labels {
            m.extend(field(
                11,
                &[field(1, k.as_bytes()), field(2, v.as_bytes())].concat(),
            ));
        }
        m
    }

    #[test]
    fn every_served_kind_has_a_message() {
        for r in crate::resources::builtins() {
            let api_version = r.api_version(&r.versions[0]);
            let name = message_for(&api_version, &r.kind);
            assert!(
                r.group == "apiextensions.k8s.io" || schema().contains_key(&name),
                "{api_version} {} has no message {name}",
                r.kind
            );
        }
    }

    #[test]
    fn decodes_a_configmap() {
        let raw = [
            field(1, &meta("cm", &[("app", "web")])),
            field(2, &[field(1, b"k"), field(2, b"v")].concat()),
            field(2, &[field(1, b"empty"), field(2, b"")].concat()),
            field(3, &[field(1, b"b"), field(2, b"\x00\x01")].concat()),
        ]
        .concat();
        let v = decode(&envelope("v1", "ConfigMap", &raw), None).unwrap();
        assert_eq!(
            v,
            json!({
                "apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "cm", "labels": {"app": "web"}},
                "data": {"k": "v", "empty": ""},
                "binaryData": {"b": "AAE="},
            })
        );
    }

    /// What `kubectl create deployment web --image=nginx --replicas=0
    /// --port=80` sends, in essence: nested messages, a pointer field at
    /// zero, a repeated message, an empty status.
    #[test]
    fn decodes_a_deployment() {
        let container = [
            field(1, b"nginx"),
            field(2, b"nginx"),
            field(5, b""),
            field(6, &[int(3, 80), field(4, b"TCP")].concat()),
            field(8, b""),
            int(16, 0),
        ]
        .concat();
        let pod_spec = [field(2, &container), field(3, b"")].concat();
        let template = [field(1, &meta("", &[("app", "web")])), field(2, &pod_spec)].concat();
        let selector = field(1, &[field(1, b"app"), field(2, b"web")].concat());
        let strategy = field(
            2,
            &[field(1, &[int(1, 1), field(3, b"25%")].concat())].concat(),
        );
        let spec = [
            int(1, 0),
            field(2, &selector),
            field(3, &template),
            field(4, &strategy),
            int(5, 0),
        ]
        .concat();
        let raw = [
            field(1, &meta("web", &[("app", "web")])),
            field(2, &spec),
            field(3, b""),
        ]
        .concat();
        let v = decode(&envelope("apps/v1", "Deployment", &raw), None).unwrap();
        assert_eq!(v["spec"]["replicas"], 0, "{v:#}");
        assert_eq!(v["spec"]["selector"]["matchLabels"]["app"], "web");
        assert_eq!(
            v["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"], "25%",
            "{v:#}"
        );
        let c = &v["spec"]["template"]["spec"]["containers"][0];
        assert_eq!(c["image"], "nginx");
        assert_eq!(
            c["ports"],
            json!([{"containerPort": 80, "protocol": "TCP"}])
        );
        assert_eq!(c["resources"], json!({}));
        assert!(c.get("workingDir").is_none(), "{c}");
        // Plain `omitempty` values at zero are left out, as Go's JSON
        // leaves them (`stdin: false`, `minReadySeconds: 0`); the pointer
        // `replicas` keeps its explicit 0 (above).
        assert!(c.get("stdin").is_none(), "{c}");
        assert!(v["spec"].get("minReadySeconds").is_none(), "{v:#}");
        assert!(v["metadata"].get("creationTimestamp").is_none(), "{v:#}");
        assert_eq!(v["status"], json!({}));
    }

    /// A plain value without `omitempty` keeps its zero: a container
    /// status's `ready: false` and `restartCount: 0`.
    #[test]
    fn required_zeros_stay() {
        let status = [field(1, b"c"), int(4, 0), int(5, 0), field(6, b"nginx")].concat();
        let raw = [field(1, &meta("p", &[])), field(3, &field(8, &status))].concat();
        let v = decode(&envelope("v1", "Pod", &raw), None).unwrap();
        let c = &v["status"]["containerStatuses"][0];
        assert_eq!(c["ready"], false, "{v:#}");
        assert_eq!(c["restartCount"], 0, "{v:#}");
    }

    #[test]
    fn inlined_and_special_fields() {
        // An Ingress rule's value is inlined into the rule; a backend port
        // by number.
        let backend = field(4, &[field(1, b"svc"), field(2, &int(2, 8080))].concat());
        let path = [field(1, b"/bar"), field(2, &backend), field(3, b"Prefix")].concat();
        let rule = [field(1, b"foo.com"), field(2, &field(1, &field(1, &path)))].concat();
        let raw = [field(1, &meta("i", &[])), field(2, &field(3, &rule))].concat();
        let v = decode(&envelope("networking.k8s.io/v1", "Ingress", &raw), None).unwrap();
        let rule = &v["spec"]["rules"][0];
        assert_eq!(rule["host"], "foo.com");
        assert_eq!(
            rule["http"]["paths"][0]["backend"]["service"]["port"]["number"],
            8080
        );
        // A negative number and a timestamp.
        let raw = [field(1, &meta("pc", &[])), int(2, -5), field(4, b"low")].concat();
        let v = decode(
            &envelope("scheduling.k8s.io/v1", "PriorityClass", &raw),
            None,
        )
        .unwrap();
        assert_eq!(v["value"], -5);
        let mut m = meta("t", &[]);
        m.extend(field(9, &[int(1, 1_700_000_000), int(2, 0)].concat()));
        let v = decode(&envelope("v1", "ConfigMap", &field(1, &m)), None).unwrap();
        assert_eq!(v["metadata"]["deletionTimestamp"], "2023-11-14T22:13:20Z");
        assert_eq!(go_duration(90 * 60 * 1_000_000_000), "1h30m0s");
        assert_eq!(go_duration(1_500_000_000), "1.5s");
        assert_eq!(go_duration(2_000_000), "2ms");
    }

    #[test]
    fn refuses_what_it_cannot_read_whole() {
        // A field this server does not know, with a value: refused, not lost.
        let raw = [field(1, &meta("cm", &[])), field(99, b"x")].concat();
        let err = decode(&envelope("v1", "ConfigMap", &raw), None).unwrap_err();
        assert!(err.contains("field 99 of core.v1.ConfigMap"), "{err}");
        // The same field at its zero value is what an older schema omits.
        let raw = [field(1, &meta("cm", &[])), int(99, 0)].concat();
        assert!(decode(&envelope("v1", "ConfigMap", &raw), None).is_ok());
        let err = decode(&envelope("example.com/v1", "Widget", b""), None).unwrap_err();
        assert!(
            err.contains("not supported for example.com/v1 Widget"),
            "{err}"
        );
        assert!(decode(b"nope", None).is_err());
        assert!(decode(b"k8s\0\x0a\xff", None).is_err());
        // A string field that is not UTF-8.
        let raw = field(1, &field(1, b"\xff"));
        assert!(decode(&envelope("v1", "ConfigMap", &raw), None).is_err());
    }

    /// `depth` messages nested in field 1 of each other, around `leaf`,
    /// written outside in (nesting by concatenation would copy the
    /// payload once per level).
    pub(crate) fn nested(depth: usize, leaf: &[u8]) -> Vec<u8> {
        let mut lengths = vec![leaf.len()];
        for i in 0..depth {
            let inner = lengths[i];
            lengths.push(key(1, 2).len() + encode_varint(inner as u64).len() + inner);
        }
        let mut out = Vec::with_capacity(lengths[depth]);
        for i in (0..depth).rev() {
            out.extend(key(1, 2));
            out.extend(encode_varint(lengths[i] as u64));
        }
        out.extend_from_slice(leaf);
        out
    }

    /// Issue 12: an unknown field nested 100,000 deep (about 300 KB) blew
    /// the stack while the decoder checked whether its value was zero. The
    /// check is iterative: the body is refused (the innermost value is not
    /// zero) or skipped (it is), without recursion.
    #[test]
    fn deeply_nested_unknown_fields_do_not_recurse() {
        let deep = nested(100_000, &int(1, 7));
        let raw = [field(1, &meta("cm", &[])), field(99, &deep)].concat();
        let err = decode(&envelope("v1", "ConfigMap", &raw), None).unwrap_err();
        assert!(err.contains("field 99 of core.v1.ConfigMap"), "{err}");
        let zero = nested(100_000, &int(1, 0));
        let raw = [field(1, &meta("cm", &[])), field(99, &zero)].concat();
        assert_eq!(
            decode(&envelope("v1", "ConfigMap", &raw), None).unwrap()["metadata"]["name"],
            "cm"
        );
    }
}
