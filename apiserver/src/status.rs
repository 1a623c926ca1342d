//! API errors and the `Status` objects the real API server sends for them.

use serde_json::{Value, json};

/// A failed request, rendered as a `metav1.Status` with the real server's
/// reason and code.
#[derive(Debug, Clone)]
pub(crate) struct ApiError {
    pub(crate) code: u16,
    pub(crate) reason: &'static str,
    pub(crate) message: String,
    pub(crate) details: Option<Value>,
}

/// Which object an error is about: group, resource (plural) and name.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Target<'a> {
    pub(crate) group: &'a str,
    pub(crate) resource: &'a str,
    pub(crate) name: &'a str,
}

impl Target<'_> {
    fn qualified(&self) -> String {
        if self.group.is_empty() {
            self.resource.to_owned()
        } else {
            format!("{}.{}", self.resource, self.group)
        }
    }

    fn details(&self) -> Value {
        json!({"name": self.name, "group": self.group, "kind": self.resource})
    }
}

pub(crate) type ApiResult<T> = Result<T, ApiError>;

impl ApiError {
    pub(crate) fn new(code: u16, reason: &'static str, message: impl Into<String>) -> Self {
        Self {
            code,
            reason,
            message: message.into(),
            details: None,
        }
    }

    pub(crate) fn with_details(mut self, details: Value) -> Self {
        self.details = Some(details);
        self
    }

    pub(crate) fn bad_request(message: impl Into<String>) -> Self {
        Self::new(400, "BadRequest", message)
    }

    pub(crate) fn not_found(t: Target<'_>) -> Self {
        Self::new(
            404,
            "NotFound",
            format!("{} \"{}\" not found", t.qualified(), t.name),
        )
        .with_details(t.details())
    }

    pub(crate) fn not_found_path(path: &str) -> Self {
        Self::new(404, "NotFound", format!("the server could not find the requested resource ({path})"))
            .with_details(json!({"causes": [{"reason": "UnexpectedServerResponse", "message": "404 page not found"}]}))
    }

    pub(crate) fn already_exists(t: Target<'_>) -> Self {
        Self::new(
            409,
            "AlreadyExists",
            format!("{} \"{}\" already exists", t.qualified(), t.name),
        )
        .with_details(t.details())
    }

    pub(crate) fn conflict(t: Target<'_>, why: &str) -> Self {
        Self::new(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {} \"{}\": {why}",
                t.qualified(),
                t.name
            ),
        )
        .with_details(t.details())
    }

    pub(crate) fn stale(t: Target<'_>) -> Self {
        Self::conflict(
            t,
            "the object has been modified; please apply your changes to the latest version and try again",
        )
    }

    /// 422 with one cause per `(field, message)`.
    pub(crate) fn invalid(kind: &str, t: Target<'_>, causes: &[(String, String)]) -> Self {
        // As kube's aggregate error prints a list: each text once, and in
        // brackets when there is more than one.
        let mut text: Vec<String> = Vec::new();
        for (f, m) in causes {
            let t = format!("{f}: {m}");
            if !text.contains(&t) {
                text.push(t);
            }
        }
        let text = if text.len() > 1 {
            format!("[{}]", text.join(", "))
        } else {
            text.concat()
        };
        let group_kind = if t.group.is_empty() {
            kind.to_owned()
        } else {
            format!("{kind}.{}", t.group)
        };
        let causes: Vec<Value> = causes
            .iter()
            .map(|(f, m)| json!({"reason": cause_type(m), "message": m, "field": f}))
            .collect();
        Self::new(
            422,
            "Invalid",
            format!("{group_kind} \"{}\" is invalid: {text}", t.name,),
        )
        .with_details(json!({"name": t.name, "group": t.group, "kind": kind, "causes": causes}))
    }

    pub(crate) fn forbidden(t: Target<'_>, why: &str) -> Self {
        Self::new(
            403,
            "Forbidden",
            format!("{} \"{}\" is forbidden: {why}", t.qualified(), t.name),
        )
        .with_details(t.details())
    }

    pub(crate) fn method_not_supported(t: Target<'_>, verb: &str) -> Self {
        Self::new(
            405,
            "MethodNotAllowed",
            format!(
                "{verb} is not supported on resources of kind \"{}\"",
                t.qualified()
            ),
        )
        .with_details(t.details())
    }

    pub(crate) fn gone(message: impl Into<String>) -> Self {
        Self::new(410, "Expired", message)
    }

    pub(crate) fn too_large() -> Self {
        Self::new(
            413,
            "RequestEntityTooLarge",
            "Request entity too large: limit is 3145728",
        )
    }

    pub(crate) fn unsupported_media(ct: &str) -> Self {
        Self::new(
            415,
            "UnsupportedMediaType",
            format!(
                "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/merge-patch+json, application/json-patch+json, application/strategic-merge-patch+json, application/apply-patch+yaml (got {ct:?})"
            ),
        )
    }

    pub(crate) fn unauthorized() -> Self {
        Self::new(401, "Unauthorized", "Unauthorized")
    }

    pub(crate) fn internal(message: impl Into<String>) -> Self {
        Self::new(500, "InternalError", message)
    }

    pub(crate) fn timeout(message: impl Into<String>) -> Self {
        Self::new(504, "Timeout", message)
    }

    /// The `Status` object.
    pub(crate) fn to_status(&self) -> Value {
        let mut s = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        });
        if let Some(d) = &self.details {
            s["details"] = d.clone();
        }
        s
    }
}

/// The `StatusCause` type of a field error, from the words its message
/// starts with (kube's `field.ErrorType` strings).
fn cause_type(message: &str) -> &'static str {
    const TYPES: [(&str, &str); 9] = [
        ("Not found", "FieldValueNotFound"),
        ("Required value", "FieldValueRequired"),
        ("Duplicate value", "FieldValueDuplicate"),
        ("Invalid value", "FieldValueInvalid"),
        ("Unsupported value", "FieldValueNotSupported"),
        ("Forbidden", "FieldValueForbidden"),
        ("Too long", "FieldValueTooLong"),
        ("Too many", "FieldValueTooMany"),
        ("Internal error", "InternalError"),
    ];
    TYPES
        .iter()
        .find(|(words, _)| message.starts_with(words))
        .map_or("FieldValueInvalid", |(_, t)| t)
}

/// A successful `Status` (e.g. for a binding or a delete without an object).
pub(crate) fn success(details: Option<Value>) -> Value {
    let mut s = json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 200});
    if let Some(d) = details {
        s["details"] = d;
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn not_found_matches_real_server_text() {
        let e = ApiError::not_found(Target {
            group: "apps",
            resource: "deployments",
            name: "web",
        });
        let s = e.to_status();
        assert_eq!(s["message"], "deployments.apps \"web\" not found");
        assert_eq!(s["code"], 404);
        assert_eq!(s["details"]["kind"], "deployments");
    }

    #[test]
    fn invalid_lists_causes() {
        let t = Target {
            group: "",
            resource: "pods",
            name: "Bad",
        };
        let s = ApiError::invalid(
            "Pod",
            t,
            &[("metadata.name".into(), "Invalid value".into())],
        )
        .to_status();
        assert_eq!(s["reason"], "Invalid");
        assert_eq!(s["details"]["causes"][0]["field"], "metadata.name");
        assert_eq!(s["details"]["causes"][0]["reason"], "FieldValueInvalid");
        let forbidden = ApiError::invalid(
            "Pod",
            t,
            &[("metadata.finalizers".into(), "Forbidden: no".into())],
        )
        .to_status();
        assert_eq!(
            forbidden["details"]["causes"][0]["reason"],
            "FieldValueForbidden"
        );
        let two = ApiError::invalid(
            "Pod",
            t,
            &[
                ("a".into(), "Required value".into()),
                ("b".into(), "Required value".into()),
                ("a".into(), "Required value".into()),
            ],
        );
        assert_eq!(
            two.message,
            "Pod \"Bad\" is invalid: [a: Required value, b: Required value]"
        );
        let required = ApiError::invalid("Pod", t, &[("spec".into(), "Required value".into())]);
        assert_eq!(
            required.to_status()["details"]["causes"][0]["reason"],
            "FieldValueRequired"
        );
    }
}
