//! How objects appear in responses, as the request's `Accept` asks: the
//! object itself in the requested version (converted when that is not how
//! it is stored), a `meta.k8s.io` `Table` (what `kubectl get` prints), or
//! only its metadata as `PartialObjectMetadata` (what metadata-only
//! informers ask for).

use bytes::Bytes;
use serde_json::{Value, json};

use crate::resources::Resource;
use crate::state::Obj;

/// What a response carries for each object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Shape {
    Object,
    Table,
    Metadata,
}

/// The shape of the first media range in `accept` this server can serve
/// (it serves JSON only: protobuf ranges are passed over), `Object` when
/// none is recognised.
pub(crate) fn shape(accept: &str) -> Shape {
    for range in accept.split(',') {
        let mut parts = range.split(';').map(str::trim);
        let mime = parts.next().unwrap_or_default();
        if !matches!(
            mime,
            "application/json" | "application/*" | "*/*" | "application/yaml" | ""
        ) {
            continue;
        }
        let (mut as_, mut group) = ("", "");
        for p in parts {
            match p.split_once('=') {
                Some(("as", v)) => as_ = v,
                Some(("g", v)) => group = v,
                _ => {}
            }
        }
        return match (as_, group) {
            ("", _) => Shape::Object,
            ("Table", "meta.k8s.io") => Shape::Table,
            ("PartialObjectMetadata" | "PartialObjectMetadataList", "meta.k8s.io") => {
                Shape::Metadata
            }
            // Another transformation (aggregated discovery, say): not an
            // object shape this range can give; try the next one.
            _ => continue,
        };
    }
    Shape::Object
}

/// The JSON of stored object `o` as `version` of `res` shows it: the stored
/// bytes when nothing differs, else converted.
pub(crate) fn object_bytes(res: &Resource, version: &str, o: &Obj) -> Bytes {
    let want = res.api_version(version);
    if !crate::convert::needed(res, version)
        && (o.attrs.api_version.is_empty() || *o.attrs.api_version == *want)
    {
        return o.bytes.clone();
    }
    let v = crate::convert::to_version(res, version, &o.value());
    Bytes::from(serde_json::to_vec(&v).expect("JSON values serialize"))
}

/// An object's `PartialObjectMetadata`.
pub(crate) fn partial(v: &Value) -> Value {
    json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": v["metadata"]})
}

/// A `PartialObjectMetadataList` of `objects`.
pub(crate) fn partial_list<'a>(
    objects: impl Iterator<Item = &'a Value>,
    rv: String,
    cont: Option<String>,
) -> Value {
    let mut meta = json!({"resourceVersion": rv});
    if let Some(c) = cont {
        meta["continue"] = json!(c);
    }
    let items: Vec<Value> = objects.map(partial).collect();
    json!({"kind": "PartialObjectMetadataList", "apiVersion": "meta.k8s.io/v1", "metadata": meta, "items": items})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accept_headers_choose_the_shape() {
        assert_eq!(
            shape("application/json;as=Table;v=v1;g=meta.k8s.io,application/json"),
            Shape::Table
        );
        assert_eq!(
            shape(
                "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
            ),
            Shape::Metadata
        );
        assert_eq!(
            shape("application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"),
            Shape::Metadata
        );
        assert_eq!(shape("application/json"), Shape::Object);
        assert_eq!(shape(""), Shape::Object);
        assert_eq!(shape("application/vnd.kubernetes.protobuf"), Shape::Object);
    }

    #[test]
    fn partial_metadata_has_only_metadata() {
        let p = partial(&json!({"metadata": {"name": "a"}, "spec": {"x": 1}}));
        assert_eq!(p["kind"], "PartialObjectMetadata");
        assert_eq!(p["apiVersion"], "meta.k8s.io/v1");
        assert!(p.get("spec").is_none());
        let l = partial_list(
            [json!({"metadata": {"name": "a"}})].iter(),
            "7".into(),
            None,
        );
        assert_eq!(l["items"][0]["metadata"]["name"], "a");
        assert_eq!(l["metadata"]["resourceVersion"], "7");
    }
}
