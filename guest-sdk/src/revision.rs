//! ControllerRevisions: the history of a workload's pod template, as
//! kube-controller-manager's DaemonSet and StatefulSet controllers keep it,
//! so `kubectl rollout history` lists it and `kubectl rollout undo` patches
//! an old template back.
//!
//! A revision is named `<owner>-<hash>` and holds the template as the
//! strategic merge patch upstream stores (`{"spec":{"template":{…,
//! "$patch":"replace"}}}`); its number follows the newest, and a template
//! that comes back (an undo) is renumbered as the newest. Upstream hashes
//! the Go struct; here the hash is FNV-32a over the template's canonical
//! JSON (keys sorted), in upstream's `SafeEncodeString` alphabet.

use serde_json::{Value, json};

use crate::{DeleteOptions, Error, Object, Write};

/// The label that holds a pod's (and a revision's) template hash.
pub const HASH_LABEL: &str = "controller-revision-hash";

/// The hash of a pod template.
pub fn template_hash(template: &Value) -> String {
    let mut text = String::new();
    canonical(template, &mut text);
    let mut h = Fnv32a::new();
    h.write(text.as_bytes());
    safe_encode(&h.finish().to_string())
}

/// 32-bit FNV-1a (Go's `fnv.New32a`), the hash kube's controllers name
/// templates by.
#[derive(Debug, Clone, Copy)]
pub struct Fnv32a(u32);

impl Default for Fnv32a {
    fn default() -> Self {
        Self::new()
    }
}

impl Fnv32a {
    /// The hash of nothing yet.
    pub fn new() -> Self {
        Self(0x811c_9dc5)
    }

    /// Hashes `bytes` in.
    pub fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 ^= u32::from(*b);
            self.0 = self.0.wrapping_mul(0x0100_0193);
        }
    }

    /// The hash so far.
    pub fn finish(&self) -> u32 {
        self.0
    }
}

/// Upstream's `rand.SafeEncodeString`: each character mapped into an
/// alphabet without vowels or look-alikes, so a name never spells a word.
pub fn safe_encode(s: &str) -> String {
    const ALPHANUMS: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    s.bytes()
        .map(|b| ALPHANUMS[usize::from(b) % ALPHANUMS.len()] as char)
        .collect()
}

fn canonical(v: &Value, out: &mut String) {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(k.clone()).to_string());
                out.push(':');
                canonical(&m[k], out);
            }
            out.push('}');
        }
        Value::Array(a) => {
            out.push('[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                canonical(x, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

/// Where an owner's history stands after [`history`].
#[derive(Debug, Clone, PartialEq)]
pub struct History {
    /// The current template's revision name (`<owner>-<hash>`).
    pub name: String,
    /// Its revision number.
    pub revision: i64,
    /// The writes that bring the history there: the current revision
    /// applied (when new or renumbered), old ones past the limit deleted.
    pub writes: Vec<Write>,
}

/// The history of `owner` (a DaemonSet or StatefulSet) whose template is
/// `template` with hash `hash`, given its ControllerRevisions `revisions`:
/// the current template's revision, numbered after the newest, and the
/// deletes of the oldest that `in_use` does not hold on to beyond `limit`
/// (the owner's `revisionHistoryLimit`).
pub fn history<'a>(
    owner: &Object,
    template: &Value,
    hash: &str,
    revisions: impl IntoIterator<Item = &'a Object>,
    in_use: impl Fn(&Object) -> bool,
    limit: usize,
) -> Result<History, Error> {
    let prefix: String = owner.name().chars().take(200).collect();
    let name = format!("{prefix}-{hash}");
    let mut all: Vec<(i64, &Object)> = revisions
        .into_iter()
        .map(|r| (r.get_i64("revision").unwrap_or(0), r))
        .collect();
    all.sort_by_key(|(n, _)| *n);
    let newest = all.last().map_or(0, |(n, _)| *n);
    let current = all.iter().find(|(_, r)| r.name() == name).map(|(n, _)| *n);
    let revision = match current {
        Some(n) if n == newest => n,
        _ => newest + 1,
    };
    let mut writes = Vec::new();
    if current != Some(revision) {
        let mut labels = template["metadata"]["labels"].clone();
        if !labels.is_object() {
            labels = json!({});
        }
        labels[HASH_LABEL] = json!(hash);
        let mut data = template.clone();
        data["$patch"] = json!("replace");
        writes.push(Write::Apply(Object::from_value(json!({
            "apiVersion": "apps/v1",
            "kind": "ControllerRevision",
            "metadata": {
                "name": name,
                "namespace": owner.namespace().unwrap_or("default"),
                "labels": labels,
            },
            "data": {"spec": {"template": data}},
            "revision": revision,
        }))?));
    }
    let old: Vec<&Object> = all
        .iter()
        .map(|(_, r)| *r)
        .filter(|r| r.name() != name && !in_use(r))
        .collect();
    if old.len() > limit {
        for r in &old[..old.len() - limit] {
            writes.push(Write::Delete {
                target: r.object_ref(),
                options: DeleteOptions::new(),
            });
        }
    }
    Ok(History {
        name,
        revision,
        writes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv_matches_the_reference_values() {
        let mut h = Fnv32a::new();
        h.write(b"");
        assert_eq!(h.finish(), 0x811c_9dc5);
        let mut h = Fnv32a::new();
        h.write(b"a");
        assert_eq!(h.finish(), 0xe40c_292c);
        let mut h = Fnv32a::new();
        h.write(b"foobar");
        assert_eq!(h.finish(), 0xbf9c_f968);
    }
}
