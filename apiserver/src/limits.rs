//! The bounds on what one request can make the server hold: the size and
//! nesting of a stored object, and what a JSON patch may copy. Each is
//! kube-apiserver's where it has one (see `docs/security.md` for the table
//! of every limit and the test that proves it).

use serde_json::Value;

use crate::nesting::{self, MAX_DEPTH};
use crate::status::{ApiError, ApiResult, Target};

/// Bodies larger than this get 413, like the real server's 3 MiB limit.
pub(crate) const MAX_BODY: usize = 3 * 1024 * 1024;

/// The largest object stored, as JSON: the request body limit, so that
/// nothing a client cannot send whole can be built up by patches. (A
/// cluster refuses objects past etcd's 1.5 MiB request limit, about
/// this much JSON.)
pub(crate) const MAX_OBJECT_BYTES: usize = MAX_BODY;

/// kube-apiserver's `maxJSONPatchOperations`.
pub(crate) const MAX_JSON_PATCH_OPERATIONS: usize = 10_000;

/// kube-apiserver's `JSONPatchMaxCopyBytes`: how much JSON the `copy`
/// operations of one patch may add in total.
pub(crate) const MAX_JSON_PATCH_COPY_BYTES: usize = 3 * 1024 * 1024;

/// Refuses a decoded request body nested deeper than [`MAX_DEPTH`] (JSON's
/// parser already stops at 127 levels).
pub(crate) fn check_body_depth(v: &Value) -> ApiResult<()> {
    match nesting::too_deep(v, MAX_DEPTH) {
        None => Ok(()),
        Some(path) => Err(ApiError::bad_request(format!(
            "the object nests deeper than {MAX_DEPTH} levels at {}",
            display_path(&path)
        ))),
    }
}

/// Refuses an object about to be stored that nests deeper than
/// [`MAX_DEPTH`] (422, naming the field) or is larger than
/// [`MAX_OBJECT_BYTES`] (413).
pub(crate) fn check_stored(kind: &str, target: Target<'_>, obj: &Value) -> ApiResult<()> {
    let (depth, len_bound) = nesting::depth_and_len_bound(obj);
    if depth > MAX_DEPTH
        && let Some(path) = nesting::too_deep(obj, MAX_DEPTH)
    {
        return Err(ApiError::invalid(
            kind,
            target,
            &[(
                display_path(&path).to_owned(),
                format!(
                    "Invalid value: nested deeper than {MAX_DEPTH} levels, the most every client can read back in a list or watch"
                ),
            )],
        ));
    }
    if len_bound <= MAX_OBJECT_BYTES {
        return Ok(());
    }
    let len = nesting::json_len(obj);
    if len > MAX_OBJECT_BYTES {
        return Err(ApiError::new(
            413,
            "RequestEntityTooLarge",
            format!(
                "Request entity too large: the object would be {len} bytes of JSON; limit is {MAX_OBJECT_BYTES}"
            ),
        ));
    }
    Ok(())
}

fn display_path(path: &str) -> &str {
    if path.is_empty() { "<root>" } else { path }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn target() -> Target<'static> {
        Target {
            group: "",
            resource: "configmaps",
            name: "c",
        }
    }

    #[test]
    fn stored_objects_are_held_to_depth_and_size() {
        let mut deep = json!("leaf");
        for _ in 0..MAX_DEPTH {
            deep = json!({ "a": deep });
        }
        assert!(check_stored("ConfigMap", target(), &deep).is_ok());
        let deeper = json!({ "data": deep });
        let e = check_stored("ConfigMap", target(), &deeper).unwrap_err();
        assert_eq!(e.code, 422);
        assert!(e.message.contains("data.a.a.a"), "{}", e.message);
        let big = json!({"data": {"k": "x".repeat(MAX_OBJECT_BYTES)}});
        let e = check_stored("ConfigMap", target(), &big).unwrap_err();
        assert_eq!((e.code, e.reason), (413, "RequestEntityTooLarge"));
        assert_eq!(check_body_depth(&deeper).unwrap_err().code, 400);
    }
}
