//! An object as a plugin writes it: its JSON text, checked whole, and the
//! identity fields the host routes the write by ([`ObjectHeader`]).
//!
//! Distinct from [`super::CachedObject`] on purpose: a cached object comes
//! from the API server, always has a name and a uid, and is held by the
//! hundred thousand, so its header is a few spans of its text; a written
//! object comes from an untrusted plugin, may have only `generateName`,
//! must name its `apiVersion` and `kind`, and lives for one reconcile, so
//! its text is checked byte by byte and its header is owned strings.

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use super::ObjectRef;

/// A Kubernetes object given as JSON text, with its identity parsed out.
///
/// The text is kept as the plugin wrote it; the header is what the host needs
/// to check and route the write without parsing the whole object again.
#[derive(Debug, Clone)]
pub struct ObjectText {
    /// Well-formed JSON (`parse` checked every byte of it), without
    /// surrounding whitespace.
    text: Box<str>,
    header: ObjectHeader,
}

/// The identifying fields of an object.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ObjectHeader {
    pub api_version: String,
    pub kind: String,
    pub namespace: Option<String>,
    pub name: Option<String>,
    pub generate_name: Option<String>,
    pub resource_version: Option<String>,
}

impl ObjectText {
    /// Parses `text` as a JSON object with `apiVersion`, `kind` and a
    /// `metadata.name` (or, when `allow_generate_name`, a `generateName`).
    ///
    /// One pass reads the header and checks the whole text: the fields the
    /// header does not need are skipped by serde_json's validating skip (the
    /// same check `RawValue` makes), and trailing characters are refused.
    pub fn parse(text: String, allow_generate_name: bool) -> Result<Self, String> {
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Meta<'a> {
            #[serde(borrow, default)]
            name: Option<std::borrow::Cow<'a, str>>,
            #[serde(borrow, default)]
            namespace: Option<std::borrow::Cow<'a, str>>,
            #[serde(borrow, default)]
            generate_name: Option<std::borrow::Cow<'a, str>>,
            #[serde(borrow, default)]
            resource_version: Option<std::borrow::Cow<'a, str>>,
        }
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Head<'a> {
            #[serde(borrow, default)]
            api_version: Option<std::borrow::Cow<'a, str>>,
            #[serde(borrow, default)]
            kind: Option<std::borrow::Cow<'a, str>>,
            #[serde(borrow, default)]
            metadata: Option<Meta<'a>>,
        }
        let head: Head<'_> =
            serde_json::from_str(&text).map_err(|e| format!("not a JSON object: {e}"))?;
        let api_version = head
            .api_version
            .filter(|s| !s.is_empty())
            .ok_or("object has no apiVersion")?
            .into_owned();
        let kind = head
            .kind
            .filter(|s| !s.is_empty())
            .ok_or("object has no kind")?
            .into_owned();
        let meta = head
            .metadata
            .ok_or_else(|| format!("{kind} has no metadata"))?;
        let owned = |c: Option<std::borrow::Cow<'_, str>>| c.map(|c| c.into_owned());
        let header = ObjectHeader {
            api_version,
            kind,
            namespace: owned(meta.namespace).filter(|s| !s.is_empty()),
            name: owned(meta.name).filter(|s| !s.is_empty()),
            generate_name: owned(meta.generate_name).filter(|s| !s.is_empty()),
            resource_version: owned(meta.resource_version).filter(|s| !s.is_empty()),
        };
        if header.name.is_none() && !(allow_generate_name && header.generate_name.is_some()) {
            return Err(format!(
                "{} has no metadata.name{}",
                header.kind,
                if allow_generate_name {
                    " or metadata.generateName"
                } else {
                    ""
                }
            ));
        }
        let json_space = |c: char| matches!(c, ' ' | '\t' | '\n' | '\r');
        let text = match text.trim_matches(json_space) {
            trimmed if trimmed.len() == text.len() => text.into_boxed_str(),
            trimmed => trimmed.into(),
        };
        Ok(Self { text, header })
    }

    /// The same object again, from another copy of its text: what `parse`
    /// of `text` would return, without parsing it again. (Returns `self`'s
    /// header with `text`; meant for a text equal to `self.text()`.)
    pub(crate) fn with_text(&self, text: String) -> Self {
        debug_assert_eq!(text, *self.text);
        Self {
            text: text.into_boxed_str(),
            header: self.header.clone(),
        }
    }

    /// The JSON text.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The identity fields.
    pub fn header(&self) -> &ObjectHeader {
        &self.header
    }

    /// The object's reference, when it has a name. `default_namespace`
    /// fills in a missing namespace (writes default to the primary's).
    pub fn object_ref(&self, default_namespace: Option<&str>) -> Option<ObjectRef> {
        Some(ObjectRef {
            api_version: self.header.api_version.clone(),
            kind: self.header.kind.clone(),
            namespace: self
                .header
                .namespace
                .clone()
                .or_else(|| default_namespace.map(str::to_owned)),
            name: self.header.name.clone()?,
        })
    }
}

impl PartialEq for ObjectText {
    fn eq(&self, other: &Self) -> bool {
        self.text == other.text
    }
}

impl Eq for ObjectText {}

impl Serialize for ObjectText {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        // Embedded as JSON, not as a string. `parse` validated the text, so
        // this borrow cannot fail; it is checked again because a `RawValue`
        // can only be made by checking.
        let raw: &RawValue = serde_json::from_str(&self.text).map_err(serde::ser::Error::custom)?;
        raw.serialize(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn object_text_parses_identity_and_rejects_nameless_objects() {
        let o = ObjectText::parse(
            r#"{"apiVersion":"v1","kind":"Pod","metadata":{"generateName":"web-","namespace":"ns"}}"#.into(),
            true,
        )
        .unwrap();
        assert_eq!(o.header().generate_name.as_deref(), Some("web-"));
        assert_eq!(o.object_ref(None), None);
        let err = ObjectText::parse(o.text().to_owned(), false).unwrap_err();
        assert!(err.contains("no metadata.name"), "{err}");
        assert!(
            ObjectText::parse("[1]".into(), true)
                .unwrap_err()
                .contains("not a JSON object")
        );
        // Fields the header skips are still checked, as is what follows.
        let head = r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a","x":[1,{"y":"z"}]}"#;
        for bad in [
            format!(r#"{head},"spec":{{"x":tru}}}}"#),
            format!(r#"{head},"spec":{{"x":"a\qb"}}}}"#),
            format!("{head},\"spec\":\"a\u{1}b\"}}"),
            format!(r#"{head},"spec":01}}"#),
            format!(r#"{head}}} x"#),
            format!(r#"{head},"spec":{{}}"#),
        ] {
            let err = ObjectText::parse(bad.clone(), false).unwrap_err();
            assert!(err.contains("not a JSON object"), "{bad}: {err}");
        }
        let spaced = ObjectText::parse(format!(" \n{head}}}\t "), false).unwrap();
        assert_eq!(spaced.text(), format!("{head}}}"));
        assert_eq!(serde_json::to_string(&spaced).unwrap(), format!("{head}}}"));
        let named = ObjectText::parse(
            r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a"}}"#.into(),
            false,
        )
        .unwrap();
        assert_eq!(
            named.object_ref(Some("default")).unwrap().to_string(),
            "Pod default/a"
        );
    }
}
