//! One cached object: the JSON text the API server sent (without
//! `managedFields`) and where in that text the header fields the host
//! routes by are, so that none of them is copied.
//!
//! A field is kept as a span of the text — its start and length — when its
//! JSON string has no escapes (then the text between the quotes *is* the
//! value); the rare field with an escape (`\"`, `\u00e9`) or longer than a
//! span can say is kept as an owned copy in a side box instead. Labels are
//! kept as the span of the whole `labels` object and read from it on
//! demand, and the controller owner reference as the span of that
//! reference, for the same reason.

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::value::RawValue;

use super::{KeyRef, allocation};

/// An object the cache could not take, with the reason.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("malformed object from the API server: {0}")]
pub struct MalformedObject(String);

/// The header fields, each an index into [`CachedObject`]'s spans.
#[derive(Debug, Clone, Copy)]
enum Field {
    Name,
    Namespace,
    Uid,
    ResourceVersion,
    /// The `metadata.labels` object's text.
    Labels,
    /// The text of the owner reference marked `controller: true`.
    Controller,
}

const FIELDS: usize = 6;
/// The scalar fields, the only ones [`Extra::owned`] can hold.
const SCALARS: usize = 4;
/// A span length that marks a field kept in [`Extra`] instead.
const OWNED: u16 = u16::MAX;

/// One cached object: its text and where its header fields are in it.
///
/// A field's span is `starts[f]..starts[f] + lens[f]`; a length of 0 is an
/// absent (or empty) field; a length of `OWNED` sends the reader to the
/// side box. Spans are `u32` + `u16` so that the whole header is 36 bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CachedObject {
    text: super::Text,
    starts: [u32; FIELDS],
    lens: [u16; FIELDS],
    deleting: bool,
    extra: Option<Box<Extra>>,
}

/// A label key and value, owned.
type Label = (Box<str>, Box<str>);

/// What does not fit the spans: finalizers (rare on most kinds) and owned
/// copies of fields whose JSON text has escapes or that are too long.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
struct Extra {
    owned: [Option<Box<str>>; SCALARS],
    labels: Option<Box<[Label]>>,
    controller: Option<Box<[Box<str>; 4]>>,
    finalizers: Box<[Box<str>]>,
}

impl Extra {
    fn bytes(&self) -> usize {
        let s = |s: &str| allocation(s.len());
        allocation(std::mem::size_of::<Self>())
            + self.owned.iter().flatten().map(|o| s(o)).sum::<usize>()
            + self.labels.as_ref().map_or(0, |l| {
                allocation(std::mem::size_of_val::<[_]>(l))
                    + l.iter().map(|(k, v)| s(k) + s(v)).sum::<usize>()
            })
            + self.controller.as_ref().map_or(0, |c| {
                allocation(std::mem::size_of_val(&**c)) + c.iter().map(|f| s(f)).sum::<usize>()
            })
            + allocation(std::mem::size_of_val::<[_]>(&self.finalizers))
            + self.finalizers.iter().map(|f| s(f)).sum::<usize>()
    }
}

/// The owner reference marked `controller: true`, borrowed from its object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Controller<'a> {
    pub api_version: &'a str,
    pub kind: &'a str,
    pub name: &'a str,
    pub uid: &'a str,
}

#[derive(Deserialize)]
struct Head<'a> {
    #[serde(borrow)]
    metadata: Meta<'a>,
}

/// A JSON string borrowed from the text when it has no escapes. (serde
/// borrows a `Cow<str>` field only when it is the field's own type, not
/// inside an `Option`; this newtype carries the `borrow` into one.)
#[derive(Deserialize)]
struct Text<'a>(#[serde(borrow)] Cow<'a, str>);

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Meta<'a> {
    #[serde(borrow)]
    name: Cow<'a, str>,
    #[serde(borrow, default)]
    namespace: Option<Text<'a>>,
    #[serde(borrow, default)]
    uid: Option<Text<'a>>,
    #[serde(borrow, default)]
    resource_version: Option<Text<'a>>,
    #[serde(borrow, default)]
    labels: Option<&'a RawValue>,
    #[serde(borrow, default)]
    owner_references: Option<Vec<&'a RawValue>>,
    #[serde(borrow, default)]
    deletion_timestamp: Option<Text<'a>>,
    #[serde(borrow, default)]
    finalizers: Option<Vec<Cow<'a, str>>>,
    #[serde(borrow, default)]
    managed_fields: Option<&'a RawValue>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct OwnerRef<'a> {
    #[serde(borrow, default)]
    api_version: Cow<'a, str>,
    #[serde(borrow, default)]
    kind: Cow<'a, str>,
    #[serde(borrow, default)]
    name: Cow<'a, str>,
    #[serde(borrow)]
    uid: Cow<'a, str>,
    #[serde(default)]
    controller: Option<bool>,
}

impl<'a> OwnerRef<'a> {
    fn fields(&self) -> [&Cow<'a, str>; 4] {
        [&self.api_version, &self.kind, &self.name, &self.uid]
    }
}

/// Where `part` (a slice of `text`) starts in `text`.
fn offset(text: &str, part: &str) -> Option<usize> {
    let start = (part.as_ptr() as usize).checked_sub(text.as_ptr() as usize)?;
    (start + part.len() <= text.len()).then_some(start)
}

/// A header being built: spans into the text the header was parsed from.
struct Builder {
    starts: [u32; FIELDS],
    lens: [u16; FIELDS],
    extra: Extra,
}

impl Builder {
    /// Records `value` for `field`: as a span when it is a slice of `text`
    /// (the JSON string had no escapes) that a span can hold, else owned.
    fn set(&mut self, text: &str, field: Field, value: &str) {
        if value.is_empty() {
            return;
        }
        match span(text, value) {
            Some(span) => self.place(field, span),
            None => {
                self.lens[field as usize] = OWNED;
                self.extra.owned[field as usize] = Some(value.into());
            }
        }
    }

    /// Records `field` at `start` with length `len` in the text.
    fn place(&mut self, field: Field, (start, len): (u32, u16)) {
        self.starts[field as usize] = start;
        self.lens[field as usize] = len;
    }
}

/// `value`'s span in `text`, when it is a slice of it a span can hold.
fn span(text: &str, value: &str) -> Option<(u32, u16)> {
    let start = u32::try_from(offset(text, value)?).ok()?;
    let len = u16::try_from(value.len()).ok().filter(|&l| l != OWNED)?;
    Some((start, len))
}

/// A string that borrows from the text, or `None` if it had to be unescaped.
fn borrowed<'a>(value: &Cow<'a, str>) -> Option<&'a str> {
    match value {
        Cow::Borrowed(s) => Some(s),
        Cow::Owned(s) if s.is_empty() => Some(""),
        Cow::Owned(_) => None,
    }
}

impl CachedObject {
    /// Parses one object's JSON text; strips `metadata.managedFields`.
    pub fn parse(text: &str) -> Result<Self, MalformedObject> {
        let head: Head<'_> =
            serde_json::from_str(text).map_err(|e| MalformedObject(e.to_string()))?;
        let m = head.metadata;
        if m.name.is_empty() {
            return Err(MalformedObject("metadata.name is empty".into()));
        }
        let mut b = Builder {
            starts: [0; FIELDS],
            lens: [0; FIELDS],
            extra: Extra::default(),
        };
        b.set(text, Field::Name, &m.name);
        if let Some(Text(ns)) = &m.namespace {
            b.set(text, Field::Namespace, ns);
        }
        if let Some(Text(uid)) = &m.uid {
            b.set(text, Field::Uid, uid);
        }
        if let Some(Text(rv)) = &m.resource_version {
            b.set(text, Field::ResourceVersion, rv);
        }
        if let Some(labels) = m.labels {
            let raw = labels.get();
            match span(text, raw).filter(|_| plain_string_map(raw)) {
                Some(span) => b.place(Field::Labels, span),
                None => {
                    let map: BTreeMap<Cow<'_, str>, Cow<'_, str>> = serde_json::from_str(raw)
                        .map_err(|e| MalformedObject(format!("metadata.labels: {e}")))?;
                    if !map.is_empty() {
                        b.lens[Field::Labels as usize] = OWNED;
                        b.extra.labels = Some(
                            map.iter()
                                .map(|(k, v)| (Box::from(k.as_ref()), Box::from(v.as_ref())))
                                .collect(),
                        );
                    }
                }
            }
        }
        let mut controller = None;
        for raw in m.owner_references.unwrap_or_default() {
            let r: OwnerRef<'_> = serde_json::from_str(raw.get())
                .map_err(|e| MalformedObject(format!("metadata.ownerReferences: {e}")))?;
            if controller.is_none() && r.controller == Some(true) {
                controller = Some((raw.get(), r));
            }
        }
        if let Some((raw, r)) = controller {
            let plain = r.fields().iter().all(|f| borrowed(f).is_some());
            match span(text, raw).filter(|_| plain) {
                Some(span) => b.place(Field::Controller, span),
                None => {
                    b.lens[Field::Controller as usize] = OWNED;
                    b.extra.controller = Some(Box::new(r.fields().map(|f| Box::from(f.as_ref()))));
                }
            }
        }
        b.extra.finalizers = m
            .finalizers
            .unwrap_or_default()
            .iter()
            .map(|f| Box::from(f.as_ref()))
            .collect();
        let deleting = m.deletion_timestamp.is_some();
        let text: super::Text = match m.managed_fields {
            None => text.into(),
            Some(raw) => match cut_member(text, raw.get(), "managedFields") {
                Some((cut, from, to)) => {
                    // Spans after the cut move back by its length; none is
                    // inside it (they are all outside managedFields).
                    for start in &mut b.starts {
                        if *start as usize >= to {
                            *start -= (to - from) as u32;
                        }
                    }
                    cut.into()
                }
                // The text is not laid out as `cut_member` expects: write it
                // out again without managedFields and read that.
                None => return Self::parse(&strip_managed_fields(text)?),
            },
        };
        let extra = b.extra;
        let has_extra = extra != Extra::default();
        Ok(Self {
            text,
            starts: b.starts,
            lens: b.lens,
            deleting,
            extra: has_extra.then(|| Box::new(extra)),
        })
    }

    /// A field's text: its span of the text, or its owned copy.
    fn field(&self, field: Field) -> &str {
        let i = field as usize;
        match self.lens[i] {
            OWNED => self
                .extra
                .as_ref()
                .and_then(|e| e.owned.get(i)?.as_deref())
                .unwrap_or(""),
            len => {
                let start = self.starts[i] as usize;
                self.text.get(start..start + len as usize).unwrap_or("")
            }
        }
    }

    /// The JSON text (without managedFields).
    pub fn text(&self) -> &super::Text {
        &self.text
    }

    /// Namespace (none when cluster-scoped) and name.
    pub fn key(&self) -> KeyRef<'_> {
        KeyRef {
            namespace: self.namespace(),
            name: self.name(),
        }
    }

    pub fn name(&self) -> &str {
        self.field(Field::Name)
    }

    /// The namespace; none when cluster-scoped.
    pub fn namespace(&self) -> Option<&str> {
        Some(self.field(Field::Namespace)).filter(|ns| !ns.is_empty())
    }

    pub fn uid(&self) -> &str {
        self.field(Field::Uid)
    }

    pub fn resource_version(&self) -> &str {
        self.field(Field::ResourceVersion)
    }

    /// The label's value, if the object has it.
    pub fn label(&self, key: &str) -> Option<&str> {
        self.labels().find(|(k, _)| *k == key).map(|(_, v)| v)
    }

    /// Every label, as (key, value).
    pub fn labels(&self) -> Labels<'_> {
        match self.lens[Field::Labels as usize] {
            OWNED => Labels::Owned(
                self.extra
                    .as_ref()
                    .and_then(|e| e.labels.as_deref())
                    .unwrap_or_default()
                    .iter(),
            ),
            _ => Labels::Text(self.field(Field::Labels)),
        }
    }

    /// The owner reference marked `controller: true`.
    pub fn controller(&self) -> Option<Controller<'_>> {
        match self.lens[Field::Controller as usize] {
            0 => None,
            OWNED => {
                let [api_version, kind, name, uid] = &**self.extra.as_ref()?.controller.as_ref()?;
                Some(Controller {
                    api_version,
                    kind,
                    name,
                    uid,
                })
            }
            // Read again from its text, which was checked when parsed:
            // every field there borrows.
            _ => {
                let r: OwnerRef<'_> = serde_json::from_str(self.field(Field::Controller)).ok()?;
                let [api_version, kind, name, uid] = r.fields().map(|f| borrowed(f).unwrap_or(""));
                Some(Controller {
                    api_version,
                    kind,
                    name,
                    uid,
                })
            }
        }
    }

    /// The uid of the owner reference marked `controller: true`.
    pub fn controller_uid(&self) -> Option<&str> {
        self.controller().map(|c| c.uid)
    }

    /// True once `metadata.deletionTimestamp` is set.
    pub fn is_deleting(&self) -> bool {
        self.deleting
    }

    /// The object's finalizers, in order.
    pub fn finalizers(&self) -> impl Iterator<Item = &str> {
        self.extra
            .iter()
            .flat_map(|e| e.finalizers.iter())
            .map(|f| f.as_ref())
    }

    pub fn has_finalizer(&self, finalizer: &str) -> bool {
        self.finalizers().any(|f| f == finalizer)
    }

    /// Heap bytes this entry holds, as the allocator hands them out: the
    /// text's block (its count and bytes, from the C library's allocator),
    /// the `Arc` allocation of this header, and the
    /// side box with whatever it owns.
    pub fn size(&self) -> usize {
        allocation(std::mem::size_of::<usize>() + self.text.len())
            + allocation(2 * std::mem::size_of::<usize>() + std::mem::size_of::<Self>())
            + self.extra.as_ref().map_or(0, |e| e.bytes())
    }
}

/// An object's labels, read from its text (or its owned copy).
#[derive(Debug, Clone)]
pub enum Labels<'a> {
    Text(&'a str),
    Owned(std::slice::Iter<'a, (Box<str>, Box<str>)>),
}

impl<'a> Iterator for Labels<'a> {
    type Item = (&'a str, &'a str);

    fn next(&mut self) -> Option<Self::Item> {
        match self {
            // Checked by `plain_string_map` when parsed: between strings
            // there are only `{`, `:`, `,`, `}` and whitespace, and no
            // string has an escape, so each quote opens or closes one.
            Labels::Text(rest) => {
                let key = next_string(rest)?;
                let value = next_string(rest)?;
                Some((key, value))
            }
            Labels::Owned(it) => it.next().map(|(k, v)| (k.as_ref(), v.as_ref())),
        }
    }
}

/// The next string in `rest`, without its quotes; `rest` moves past it.
fn next_string<'a>(rest: &mut &'a str) -> Option<&'a str> {
    let open = rest.find('"')?;
    let after = &rest[open + 1..];
    let close = after.find('"')?;
    *rest = &after[close + 1..];
    Some(&after[..close])
}

/// True when `raw` (valid JSON) is an object whose values are all strings
/// and none of whose strings has an escape: then [`Labels::Text`] can read
/// it by looking for quotes.
fn plain_string_map(raw: &str) -> bool {
    let b = raw.as_bytes();
    let mut i = 0;
    let skip_ws = |i: &mut usize| {
        while b.get(*i).is_some_and(u8::is_ascii_whitespace) {
            *i += 1;
        }
    };
    // A string without escapes, at `i`; moves past it.
    let string = |i: &mut usize| -> bool {
        if b.get(*i) != Some(&b'"') {
            return false;
        }
        *i += 1;
        loop {
            match b.get(*i) {
                Some(b'"') => {
                    *i += 1;
                    return true;
                }
                Some(b'\\') | None => return false,
                Some(_) => *i += 1,
            }
        }
    };
    skip_ws(&mut i);
    if b.get(i) != Some(&b'{') {
        return false;
    }
    i += 1;
    skip_ws(&mut i);
    if b.get(i) == Some(&b'}') {
        return true;
    }
    loop {
        skip_ws(&mut i);
        if !string(&mut i) {
            return false;
        }
        skip_ws(&mut i);
        if b.get(i) != Some(&b':') {
            return false;
        }
        i += 1;
        skip_ws(&mut i);
        if !string(&mut i) {
            return false;
        }
        skip_ws(&mut i);
        match b.get(i) {
            Some(b',') => i += 1,
            Some(b'}') => return true,
            _ => return false,
        }
    }
}

/// `text` without the object member `"key": value`, where `value` is the
/// member's value as a slice of `text` — cut out as text, without parsing
/// and re-serializing the whole object — and the byte range cut out of
/// `text`. `None` when the text around it is not laid out as expected (say,
/// an escaped key), for the caller to fall back to a full parse.
fn cut_member(text: &str, value: &str, key: &str) -> Option<(String, usize, usize)> {
    let start = offset(text, value)?;
    let end = start + value.len();
    let before = text[..start].trim_end().strip_suffix(':')?.trim_end();
    let key_start = before
        .strip_suffix('"')?
        .strip_suffix(key)?
        .strip_suffix('"')?
        .len();
    let lead = text[..key_start].trim_end();
    let (cut_from, cut_to) = if let Some(rest) = lead.strip_suffix(',') {
        // `…, "key": value` → `…`
        (rest.len(), end)
    } else if lead.ends_with('{') {
        // `{"key": value, …` → `{…`; `{"key": value}` → `{}`
        let after = &text[end..];
        let trimmed = after.trim_start();
        match trimmed.strip_prefix(',') {
            Some(rest) => (key_start, text.len() - rest.trim_start().len()),
            None if trimmed.starts_with('}') => (key_start, end),
            None => return None,
        }
    } else {
        return None;
    };
    let mut out = String::with_capacity(text.len() - (cut_to - cut_from));
    out.push_str(&text[..cut_from]);
    out.push_str(&text[cut_to..]);
    Some((out, cut_from, cut_to))
}

fn strip_managed_fields(text: &str) -> Result<String, MalformedObject> {
    let mut value: serde_json::Value =
        serde_json::from_str(text).map_err(|e| MalformedObject(e.to_string()))?;
    if let Some(meta) = value.get_mut("metadata").and_then(|m| m.as_object_mut()) {
        meta.remove("managedFields");
    }
    Ok(value.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn managed_fields_are_cut_out_wherever_they_stand() {
        let mf = r#"[{"manager":"kubectl","fieldsV1":{"f:data":{}}}]"#;
        for (meta, want) in [
            (
                format!(r#"{{"name":"a","managedFields":{mf},"uid":"u"}}"#),
                r#"{"name":"a","uid":"u"}"#,
            ),
            (
                format!(r#"{{"managedFields":{mf},"name":"a"}}"#),
                r#"{"name":"a"}"#,
            ),
            (
                format!(r#"{{"name":"a","managedFields":{mf}}}"#),
                r#"{"name":"a"}"#,
            ),
            (
                format!("{{ \"name\": \"a\" ,\n  \"managedFields\" : {mf} \n}}"),
                "{ \"name\": \"a\"  \n}",
            ),
        ] {
            let text = format!(
                r#"{{"kind":"ConfigMap","metadata":{meta},"data":{{"managedFields":"kept"}}}}"#
            );
            let o = CachedObject::parse(&text).unwrap();
            let want = format!(
                r#"{{"kind":"ConfigMap","metadata":{want},"data":{{"managedFields":"kept"}}}}"#
            );
            assert_eq!(o.text().as_ref(), want);
            let v: serde_json::Value = serde_json::from_str(o.text()).unwrap();
            assert_eq!(v["metadata"]["name"], "a");
            assert_eq!(o.name(), "a");
        }
        // An escaped key is still found, by the slow path.
        let text = format!(r#"{{"metadata":{{"name":"a","managed\u0046ields":{mf}}}}}"#);
        let o = CachedObject::parse(&text).unwrap();
        assert_eq!(o.text().as_ref(), r#"{"metadata":{"name":"a"}}"#);
        assert_eq!(o.name(), "a");
    }

    #[test]
    fn parses_the_header_and_strips_managed_fields() {
        let text = json!({"apiVersion":"v1","kind":"Pod","metadata":{
            "name":"a","namespace":"ns","uid":"u1","resourceVersion":"5","labels":{"app":"web"},
            "finalizers":["example.com/x"],"deletionTimestamp":"2026-01-01T00:00:00Z",
            "managedFields":[{"manager":"kubectl","fieldsV1":{"f:spec":{}}}],
            "ownerReferences":[{"uid":"o1","controller":false},{"uid":"o2","controller":true}]}})
        .to_string();
        let o = CachedObject::parse(&text).unwrap();
        assert_eq!(o.key().to_string(), "ns/a");
        assert_eq!((o.uid(), o.resource_version()), ("u1", "5"));
        assert_eq!(o.label("app"), Some("web"));
        assert_eq!(o.controller_uid(), Some("o2"));
        assert_eq!(o.controller().map(|c| c.kind), Some(""));
        assert!(o.is_deleting() && o.has_finalizer("example.com/x"));
        assert!(!o.text().contains("managedFields"));
        assert!(o.text().len() < text.len());
        assert!(CachedObject::parse("{\"metadata\":{}}").is_err());
        assert!(CachedObject::parse("nope").is_err());
        assert!(CachedObject::parse(r#"{"metadata":{"name":"a","labels":{"n":1}}}"#).is_err());
        assert!(
            CachedObject::parse(r#"{"metadata":{"name":"a","ownerReferences":[{"name":"x"}]}}"#)
                .is_err()
        );
    }

    /// Fields after managedFields move when it is cut out; each must still
    /// read right, whatever the order and spacing.
    #[test]
    fn spans_follow_the_cut() {
        let text = r#"{"metadata": {"managedFields": [{"manager": "m"}], "name": "a",
            "namespace" : "ns", "uid":"u","resourceVersion":"9",
            "labels": { "app" : "web" , "tier":"" },
            "ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"rs","uid":"o","controller":true}]},
            "spec": {}}"#;
        let o = CachedObject::parse(text).unwrap();
        assert!(!o.text().contains("managedFields"));
        assert_eq!(o.key().to_string(), "ns/a");
        assert_eq!((o.uid(), o.resource_version()), ("u", "9"));
        assert_eq!(
            o.labels().collect::<Vec<_>>(),
            [("app", "web"), ("tier", "")]
        );
        assert_eq!(
            o.controller(),
            Some(Controller {
                api_version: "apps/v1",
                kind: "ReplicaSet",
                name: "rs",
                uid: "o"
            })
        );
        assert!(
            o.extra.is_none(),
            "nothing needed an owned copy: {:?}",
            o.extra
        );
    }

    /// A field whose JSON string has an escape is not its own text: it is
    /// kept as an owned, unescaped copy, and so are labels and the
    /// controller reference when any of their strings has one.
    #[test]
    fn escaped_fields_are_owned_and_unescaped() {
        let text = r#"{"metadata":{"name":"a\"b","namespace":"caf\u00e9","uid":"u\\1",
            "resourceVersion":"7","labels":{"app":"w\u00e9b","plain":"x"},
            "ownerReferences":[{"apiVersion":"v1","kind":"K\"ind","name":"n","uid":"o\u0031","controller":true}],
            "managedFields":[{}]}}"#;
        let o = CachedObject::parse(text).unwrap();
        assert_eq!(o.name(), "a\"b");
        assert_eq!(o.namespace(), Some("café"));
        assert_eq!(o.uid(), "u\\1");
        assert_eq!(o.resource_version(), "7");
        assert_eq!(o.label("app"), Some("wéb"));
        assert_eq!(o.label("plain"), Some("x"));
        assert_eq!(o.labels().count(), 2);
        let c = o.controller().unwrap();
        assert_eq!((c.kind, c.uid, c.name), ("K\"ind", "o1", "n"));
        assert!(o.size() > o.text().len() + 64);
        // Escapes in one field leave the others as spans.
        let text = r#"{"metadata":{"name":"\u00e9","labels":{"app":"web"}}}"#;
        let o = CachedObject::parse(text).unwrap();
        assert_eq!((o.name(), o.label("app")), ("é", Some("web")));
        let extra = o.extra.as_deref().unwrap();
        assert!(extra.owned[Field::Name as usize].is_some() && extra.labels.is_none());
        // A key with an escaped quote is read whole.
        let o = CachedObject::parse(r#"{"metadata":{"name":"a","labels":{"k\"":"v"}}}"#).unwrap();
        assert_eq!(o.label("k\""), Some("v"));
        assert_eq!(o.label("k"), None);
    }

    #[test]
    fn plain_maps_are_told_from_others() {
        for plain in [
            r#"{}"#,
            r#" { } "#,
            r#"{"a":"b"}"#,
            "{ \"a\" :\n\"\" , \"c\":\"d\" }",
        ] {
            assert!(plain_string_map(plain), "{plain}");
        }
        for not in [
            r#"{"a":1}"#,
            r#"{"a":"\n"}"#,
            r#"{"a\"":"b"}"#,
            r#"["a"]"#,
            r#"{"a":"b",}"#,
            r#"{"a":null}"#,
        ] {
            assert!(!plain_string_map(not), "{not}");
        }
    }
}
