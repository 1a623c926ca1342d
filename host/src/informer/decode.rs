//! Bytes to typed events: a watch stream split into lines ([`LineBuffer`]),
//! each line decoded into an [`Event`], and LIST pages into a [`Page`].
//!
//! An object the informer cannot take (larger than it accepts, or not an
//! object it can read) comes out as a [`Skipped`] — with what could be read
//! of its key and version — never as an error: one bad object must not stop
//! an informer (failing the watch would only bring it back).

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::discovery::ApiResource;
use crate::model::CachedObject;

/// The largest object an informer caches: the API server's own request
/// limit (3 MiB), with room for what it adds.
pub(super) const MAX_OBJECT: usize = 4 << 20;
/// The longest watch event kept whole; a longer one is skipped as it
/// streams by, never buffered.
pub(super) const MAX_LINE: usize = MAX_OBJECT + (64 << 10);

/// One watch event, decoded.
#[derive(Debug)]
pub(super) enum Event {
    /// ADDED, MODIFIED or DELETED: the object, or why it was skipped.
    Object {
        kind: ObjectEvent,
        object: Result<CachedObject, Skipped>,
    },
    /// A BOOKMARK: the version the server is at; `initial_end` when it ends
    /// a streaming list's initial events (`k8s.io/initial-events-end`).
    Bookmark { version: String, initial_end: bool },
    /// An ERROR event's `Status`.
    Error { code: u16, message: String },
    /// An event type the informer does not know.
    Unknown(String),
    /// A line that is not a watch event, or a bookmark that cannot be read.
    Malformed(String),
}

/// The three events that carry an object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ObjectEvent {
    Added,
    Modified,
    Deleted,
}

impl ObjectEvent {
    /// As the API spells it.
    pub(super) fn as_str(self) -> &'static str {
        match self {
            ObjectEvent::Added => "ADDED",
            ObjectEvent::Modified => "MODIFIED",
            ObjectEvent::Deleted => "DELETED",
        }
    }
}

/// An object the informer did not take.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Skipped {
    /// `namespace/name`, or `?` when even that cannot be read.
    pub key: String,
    /// Its resourceVersion, if that can be read: a resumed watch must not
    /// bring the object back.
    pub version: Option<String>,
    pub error: String,
}

/// One page of a paged LIST.
#[derive(Debug)]
pub(super) struct Page {
    pub objects: Vec<CachedObject>,
    pub skipped: Vec<Skipped>,
    /// The next page's token; none on the last page.
    pub continue_token: Option<String>,
    pub version: String,
}

/// Decodes one line of a watch stream.
pub(super) fn event(line: &[u8]) -> Event {
    #[derive(Deserialize)]
    struct WatchEvent<'a> {
        #[serde(rename = "type")]
        kind: &'a str,
        #[serde(borrow)]
        object: &'a RawValue,
    }
    let event: WatchEvent<'_> = match serde_json::from_slice(line) {
        Ok(event) => event,
        Err(e) => return Event::Malformed(format!("malformed watch event: {e}")),
    };
    let object = event.object.get();
    let kind = match event.kind {
        "ADDED" => ObjectEvent::Added,
        "MODIFIED" => ObjectEvent::Modified,
        "DELETED" => ObjectEvent::Deleted,
        "BOOKMARK" => return bookmark(object),
        "ERROR" => {
            #[derive(Deserialize, Default)]
            struct Status {
                #[serde(default)]
                code: u16,
                #[serde(default)]
                message: String,
            }
            let status: Status = serde_json::from_str(object).unwrap_or_default();
            return Event::Error {
                code: status.code,
                message: status.message,
            };
        }
        other => return Event::Unknown(other.to_owned()),
    };
    Event::Object {
        kind,
        object: accept(object),
    }
}

fn bookmark(object: &str) -> Event {
    #[derive(Deserialize)]
    struct Bookmark {
        metadata: BookmarkMeta,
    }
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct BookmarkMeta {
        resource_version: String,
        #[serde(default)]
        annotations: std::collections::HashMap<String, String>,
    }
    match serde_json::from_str::<Bookmark>(object) {
        Ok(b) => Event::Bookmark {
            initial_end: b
                .metadata
                .annotations
                .get("k8s.io/initial-events-end")
                .is_some_and(|v| v == "true"),
            version: b.metadata.resource_version,
        },
        Err(e) => Event::Malformed(format!("malformed bookmark: {e}")),
    }
}

/// Decodes a LIST page of `resource`; an error says why the body is not one.
pub(super) fn page(body: &[u8], resource: &ApiResource) -> Result<Page, String> {
    #[derive(Deserialize)]
    struct ListPage<'a> {
        #[serde(default)]
        metadata: ListMeta,
        #[serde(borrow, default)]
        items: Vec<&'a RawValue>,
    }
    #[derive(Deserialize, Default)]
    #[serde(rename_all = "camelCase")]
    struct ListMeta {
        #[serde(default)]
        resource_version: Option<String>,
        #[serde(default, rename = "continue")]
        continue_token: Option<String>,
    }
    let page: ListPage<'_> =
        serde_json::from_slice(body).map_err(|e| format!("malformed list response: {e}"))?;
    let mut objects = Vec::with_capacity(page.items.len());
    let mut skipped = Vec::new();
    for item in page.items {
        let text = with_type_meta(item.get(), &resource.api_version, &resource.kind);
        match accept(&text) {
            Ok(o) => objects.push(o),
            Err(s) => skipped.push(s),
        }
    }
    Ok(Page {
        objects,
        skipped,
        continue_token: page.metadata.continue_token.filter(|t| !t.is_empty()),
        version: page.metadata.resource_version.unwrap_or_default(),
    })
}

/// `text` as a cached object, unless it is larger than the informer
/// accepts or cannot be parsed.
fn accept(text: &str) -> Result<CachedObject, Skipped> {
    let refused = if text.len() > MAX_OBJECT {
        format!(
            "{} bytes, more than the {MAX_OBJECT} an informer accepts",
            text.len()
        )
    } else {
        match CachedObject::parse(text) {
            Ok(o) => return Ok(o),
            Err(e) => e.to_string(),
        }
    };
    let id = identity(text);
    Err(Skipped {
        key: match (id.namespace, id.name) {
            (Some(ns), Some(name)) => format!("{ns}/{name}"),
            (None, Some(name)) => name,
            _ => "?".into(),
        },
        version: id.resource_version.filter(|rv| !rv.is_empty()),
        error: refused,
    })
}

/// List items come without `apiVersion`/`kind`; plugins get whole objects.
fn with_type_meta<'a>(item: &'a str, api_version: &str, kind: &str) -> std::borrow::Cow<'a, str> {
    #[derive(Deserialize)]
    struct TypeMeta {
        #[serde(default)]
        kind: Option<serde::de::IgnoredAny>,
    }
    let has_kind = serde_json::from_str::<TypeMeta>(item).is_ok_and(|t| t.kind.is_some());
    if has_kind {
        return item.into();
    }
    let rest = item
        .trim_start()
        .strip_prefix('{')
        .unwrap_or(item)
        .trim_start();
    let sep = if rest.starts_with('}') { "" } else { "," };
    format!(
        "{{\"apiVersion\":{},\"kind\":{}{sep}{rest}",
        serde_json::Value::from(api_version),
        serde_json::Value::from(kind)
    )
    .into()
}

/// Splits a watch stream into events. An event longer than [`MAX_LINE`] is
/// dropped as its bytes arrive (and counted), so neither memory nor the
/// watch is held by it.
#[derive(Default)]
pub(super) struct LineBuffer {
    buf: Vec<u8>,
    /// Inside an event too long to keep: drop bytes up to its newline.
    skipping: bool,
}

impl LineBuffer {
    /// Adds a chunk; returns how many over-long events began being skipped.
    pub(super) fn push(&mut self, mut chunk: &[u8]) -> usize {
        if self.skipping {
            match chunk.iter().position(|&b| b == b'\n') {
                Some(end) => {
                    self.skipping = false;
                    chunk = &chunk[end + 1..];
                }
                None => return 0,
            }
        }
        self.buf.extend_from_slice(chunk);
        // What follows the last newline is the event still arriving.
        let complete = self
            .buf
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |n| n + 1);
        if self.buf.len() - complete <= MAX_LINE {
            return 0;
        }
        self.buf.truncate(complete);
        self.skipping = true;
        1
    }

    pub(super) fn next_line(&mut self) -> Option<Vec<u8>> {
        loop {
            let end = self.buf.iter().position(|&b| b == b'\n')?;
            let line: Vec<u8> = self.buf.drain(..=end).collect();
            let trimmed = line.trim_ascii();
            if !trimmed.is_empty() {
                return Some(trimmed.to_vec());
            }
        }
    }
}

/// What an object's text says of its identity, read leniently: for logs of
/// objects that are skipped.
#[derive(serde::Deserialize, Default)]
struct Identity {
    #[serde(default)]
    metadata: IdentityMeta,
}

#[derive(serde::Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct IdentityMeta {
    #[serde(default)]
    namespace: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    resource_version: Option<String>,
}

fn identity(text: &str) -> IdentityMeta {
    serde_json::from_str::<Identity>(text)
        .unwrap_or_default()
        .metadata
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `namespace/name` of an object, or `?` when even that cannot be read.
    fn key_of(text: &str) -> String {
        accept(text).map_or_else(|s| s.key, |o| o.key().to_string())
    }

    /// The resourceVersion an object's text carries, if it can be read.
    fn version_of(text: &str) -> Option<String> {
        identity(text).resource_version.filter(|rv| !rv.is_empty())
    }

    #[test]
    fn list_items_get_their_type_meta() {
        let item = r#"{"metadata":{"name":"a"}}"#;
        let full = with_type_meta(item, "v1", "Pod");
        let v: serde_json::Value = serde_json::from_str(&full).unwrap();
        assert_eq!(
            (v["apiVersion"].as_str(), v["kind"].as_str()),
            (Some("v1"), Some("Pod"))
        );
        assert_eq!(v["metadata"]["name"], "a");
        let typed = r#"{"kind":"Pod","apiVersion":"v1","metadata":{"name":"a"}}"#;
        assert!(matches!(
            with_type_meta(typed, "v1", "Pod"),
            std::borrow::Cow::Borrowed(_)
        ));
        assert_eq!(
            with_type_meta("{}", "v1", "Pod"),
            r#"{"apiVersion":"v1","kind":"Pod"}"#
        );
    }

    #[test]
    fn lines_are_split_across_chunks() {
        let mut lines = LineBuffer::default();
        assert_eq!(lines.push(b"{\"a\":1}\n{\"b\""), 0);
        assert_eq!(lines.next_line().unwrap(), b"{\"a\":1}");
        assert_eq!(lines.next_line(), None);
        lines.push(b":2}\n\n");
        assert_eq!(lines.next_line().unwrap(), b"{\"b\":2}");
        assert_eq!(lines.next_line(), None);
    }

    /// Limit: a watch event over `MAX_LINE` is skipped as it streams by
    /// (never buffered whole), and the events around it still arrive.
    #[test]
    fn an_over_long_event_is_skipped_not_fatal() {
        let mut lines = LineBuffer::default();
        let big = vec![b'x'; MAX_LINE / 2];
        assert_eq!(lines.push(b"{\"before\":1}\n"), 0);
        assert_eq!(lines.push(&big), 0);
        assert_eq!(lines.push(&big), 0);
        assert_eq!(lines.push(&big), 1, "the third piece passes the limit");
        assert!(lines.buf.len() < 64, "nothing of it is kept");
        assert_eq!(lines.push(&big), 0);
        assert_eq!(lines.push(b"xx\n{\"after\":2}\n"), 0);
        assert_eq!(lines.next_line().unwrap(), b"{\"before\":1}");
        assert_eq!(lines.next_line().unwrap(), b"{\"after\":2}");
        assert_eq!(lines.next_line(), None);
    }

    #[test]
    fn skipped_objects_are_known_by_their_key_and_version() {
        let text =
            r#"{"metadata":{"name":"p","namespace":"ns","resourceVersion":"42","labels":7}}"#;
        assert_eq!(key_of(text), "ns/p");
        assert_eq!(version_of(text).as_deref(), Some("42"));
        assert_eq!(key_of("not json"), "?");
        assert_eq!(version_of("[]"), None);
    }

    #[test]
    fn watch_lines_become_typed_events() {
        let added = br#"{"type":"ADDED","object":{"metadata":{"name":"a","resourceVersion":"3"}}}"#;
        assert!(matches!(
            event(added),
            Event::Object { kind: ObjectEvent::Added, object: Ok(o) } if o.resource_version() == "3"
        ));
        let bad = br#"{"type":"DELETED","object":{"metadata":{"name":"a","resourceVersion":"4","labels":1}}}"#;
        assert!(matches!(
            event(bad),
            Event::Object { kind: ObjectEvent::Deleted, object: Err(Skipped { version: Some(v), .. }) } if v == "4"
        ));
        let end = br#"{"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"9","annotations":{"k8s.io/initial-events-end":"true"}}}}"#;
        assert!(matches!(
            event(end),
            Event::Bookmark { initial_end: true, version } if version == "9"
        ));
        let gone = br#"{"type":"ERROR","object":{"kind":"Status","code":410,"message":"too old"}}"#;
        assert!(matches!(event(gone), Event::Error { code: 410, .. }));
        assert!(matches!(
            event(br#"{"type":"WHAT","object":{}}"#),
            Event::Unknown(t) if t == "WHAT"
        ));
        assert!(
            matches!(event(b"nope"), Event::Malformed(m) if m.starts_with("malformed watch event"))
        );
        assert!(matches!(
            event(br#"{"type":"BOOKMARK","object":{}}"#),
            Event::Malformed(m) if m.starts_with("malformed bookmark")
        ));
    }

    #[test]
    fn a_page_keeps_what_it_can_and_skips_the_rest() {
        let resource = ApiResource {
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
            plural: "configmaps".into(),
            namespaced: true,
            has_status: false,
        };
        let body = br#"{"metadata":{"resourceVersion":"7","continue":"next"},"items":[
            {"metadata":{"name":"a","namespace":"ns"}},
            {"metadata":{"name":"b","namespace":"ns","labels":[1]}}]}"#;
        let page = page(body, &resource).unwrap();
        assert_eq!(page.objects.len(), 1);
        assert!(page.objects[0].text().contains(r#""kind":"ConfigMap""#));
        assert_eq!(page.skipped[0].key, "ns/b");
        assert_eq!(
            (page.continue_token.as_deref(), page.version.as_str()),
            (Some("next"), "7")
        );
        let err = super::page(b"<html>", &resource).unwrap_err();
        assert!(err.starts_with("malformed list response"), "{err}");
    }
}
