//! The plugin boundary at the end of a call: everything a plugin returned is
//! checked against its manifest and the API server's name rules before
//! anyone acts on it. Pure functions, no wasm.
//!
//! Per write: the object is well-formed JSON with a kind and a name (or a
//! `generateName` for an apply); every namespace is a DNS label and every
//! name a single path segment, so nothing a plugin supplies can change the
//! shape of a URL; the kind (and subresource) is one the manifest lets the
//! plugin write in that namespace — a write without a namespace gets the
//! primary object's, as the writer gives it. Per event: the object it is
//! about is one the plugin may read, where it may read it. `map`'s keys are
//! of the reconciled kind, in namespaces it reconciles.

use std::time::Duration;

use serde_json::value::RawValue;
use windlass_selector::names;

use super::output::{RawEvent, RawOutcome, RawWrite};
use crate::contract::{
    Delete, Event, EventType, IndexEntry, Manifest, Outcome, Patch, SubresourceCreate, Write,
};
use crate::model::{ObjectRef, ObjectText};

/// Why an outcome was refused.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum OutcomeError {
    /// It touches something the manifest does not allow.
    Undeclared(String),
    /// It is malformed.
    Invalid(String),
}

/// Turns a raw outcome into the host's, refusing anything the manifest does
/// not allow or the host cannot act on. `key` is the reconciled object.
pub(crate) fn check_outcome(
    manifest: &Manifest,
    outcome: RawOutcome,
    key: &ObjectRef,
) -> Result<Outcome, OutcomeError> {
    use OutcomeError::Invalid;
    let default_ns = key.namespace.as_deref();
    let mut writes: Vec<Write> = Vec::with_capacity(outcome.writes.len());
    for (i, write) in outcome.writes.into_iter().enumerate() {
        let invalid = |e: String| Invalid(format!("write #{i}: {e}"));
        // A plugin creating several children from one template writes the
        // same text several times in a row; it is parsed once.
        let previous = writes.last().and_then(|w| match w {
            Write::Apply(o) => Some((true, o)),
            Write::Replace(o) | Write::UpdateStatus(o) => Some((false, o)),
            _ => None,
        });
        let object = |text: String, generate: bool| {
            match previous {
                Some((same, o)) if same == generate && o.text() == text => Ok(o.with_text(text)),
                _ => ObjectText::parse(text, generate),
            }
            .map_err(invalid)
        };
        let write = match write {
            RawWrite::Apply(t) => Write::Apply(object(t, true)?),
            RawWrite::Replace(t) => {
                let o = object(t, false)?;
                if o.header().resource_version.is_none() {
                    return Err(invalid(format!(
                        "replace of {} carries no metadata.resourceVersion",
                        o.header().kind
                    )));
                }
                Write::Replace(o)
            }
            RawWrite::UpdateStatus(t) => Write::UpdateStatus(object(t, false)?),
            RawWrite::MergePatch {
                target,
                subresource,
                patch,
            } => Write::MergePatch(Patch {
                target,
                subresource,
                patch: json_object(patch)
                    .ok_or_else(|| invalid("merge patch is not a JSON object".into()))?,
            }),
            RawWrite::Delete { target, options } => Write::Delete(Delete { target, options }),
            RawWrite::CreateSubresource {
                target,
                subresource,
                body,
            } => Write::CreateSubresource(SubresourceCreate {
                target,
                subresource,
                body: json_object(body)
                    .ok_or_else(|| invalid("the subresource body is not a JSON object".into()))?,
            }),
        };
        check_write(manifest, &write, default_ns).map_err(|e| match e {
            OutcomeError::Invalid(m) => invalid(m),
            OutcomeError::Undeclared(m) => OutcomeError::Undeclared(m),
        })?;
        writes.push(write);
    }
    let events = outcome
        .events
        .into_iter()
        .map(|e| check_event(manifest, e, key))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Outcome {
        writes,
        prune_owned: outcome.prune_owned,
        requeue_after: outcome.requeue_after_ms.map(Duration::from_millis),
        events,
        index_reads: Vec::new(),
    })
}

/// `text` as a raw JSON object, if it is one.
fn json_object(text: String) -> Option<Box<RawValue>> {
    RawValue::from_string(text)
        .ok()
        .filter(|raw| raw.get().trim_start().starts_with('{'))
}

/// The names, kind, namespace and subresource of one parsed write.
fn check_write(
    manifest: &Manifest,
    write: &Write,
    default_ns: Option<&str>,
) -> Result<(), OutcomeError> {
    use OutcomeError::{Invalid, Undeclared};
    let (api_version, kind) = write.kind();
    names::api_version(api_version).map_err(Invalid)?;
    names::kind(kind).map_err(Invalid)?;
    let (namespace, name, target) = match write {
        Write::Apply(o) | Write::Replace(o) | Write::UpdateStatus(o) => {
            let h = o.header();
            match (&h.name, &h.generate_name) {
                (Some(name), _) => {
                    names::path_segment(name).map_err(|e| Invalid(format!("{kind} name {e}")))?
                }
                (None, Some(prefix)) => names::name_prefix(prefix)
                    .map_err(|e| Invalid(format!("{kind} generateName {e}")))?,
                (None, None) => return Err(Invalid(format!("{kind} has no name"))),
            }
            let ns = h.namespace.as_deref().or(default_ns);
            let target = o
                .object_ref(default_ns)
                .map(|r| r.to_string())
                .unwrap_or_else(|| format!("a new {kind}"));
            (ns, None, target)
        }
        Write::MergePatch(Patch { target, .. })
        | Write::Delete(Delete { target, .. })
        | Write::CreateSubresource(SubresourceCreate { target, .. }) => {
            let ns = target.namespace.as_deref().or(default_ns);
            (ns, Some(target.name.as_str()), target.to_string())
        }
    };
    if let Some(name) = name {
        if name.is_empty() {
            return Err(Invalid(format!("{} target has no name", write.verb())));
        }
        names::path_segment(name).map_err(|e| Invalid(format!("{kind} name {e}")))?;
    }
    if let Some(ns) = namespace {
        names::dns_label(ns).map_err(|e| Invalid(format!("{kind} namespace {e}")))?;
    }
    let subresource = match write {
        Write::UpdateStatus(_) => Some("status"),
        other => other.subresource(),
    };
    if let Some(sub) = subresource {
        names::subresource(sub).map_err(Invalid)?;
    }
    if !manifest.may_write_in(api_version, kind, namespace, subresource) {
        let what = match subresource {
            Some(sub) if sub != "status" => format!("the {sub} subresource of {target}"),
            _ => target,
        };
        let place = match namespace {
            Some(ns) => format!(" in namespace {ns}"),
            None => String::new(),
        };
        return Err(Undeclared(format!(
            "wants to {} {what} ({api_version} {kind}), but its manifest does not allow writing {api_version} {kind}{}{place} (declare it in reconciles, owns or writes)",
            write.verb(),
            match subresource {
                Some(sub) if sub != "status" => format!(" {sub}"),
                _ => String::new(),
            },
        )));
    }
    Ok(())
}

fn check_event(manifest: &Manifest, e: RawEvent, key: &ObjectRef) -> Result<Event, OutcomeError> {
    use OutcomeError::{Invalid, Undeclared};
    if e.reason.is_empty() {
        return Err(Invalid("an event has an empty reason".into()));
    }
    if e.reason.len() > 128 || !e.reason.chars().all(|c| c.is_ascii_alphanumeric()) {
        return Err(Invalid(format!(
            "event reason {:?} must be UpperCamelCase letters and digits, at most 128",
            e.reason
        )));
    }
    if let Some(r) = &e.regarding {
        r.validate()
            .map_err(|m| Invalid(format!("an event's object: {m}")))?;
        let ns = r.namespace.as_deref().or(key.namespace.as_deref());
        if !manifest.may_read_in(&r.api_version, &r.kind, ns) {
            return Err(Undeclared(format!(
                "records an event about {r}, which its manifest does not let it read"
            )));
        }
    }
    Ok(Event {
        type_: if e.warning {
            EventType::Warning
        } else {
            EventType::Normal
        },
        reason: e.reason,
        message: e.message,
        regarding: e.regarding,
    })
}

/// The keys `map` returned: each valid, of the reconciled kind, in a
/// namespace the plugin reconciles.
pub(crate) fn check_map_keys(manifest: &Manifest, keys: &[ObjectRef]) -> Result<(), String> {
    let primary = &manifest.reconciles;
    for r in keys {
        r.validate()?;
        if r.api_version != primary.kind.api_version || r.kind != primary.kind.kind {
            return Err(format!(
                "{r} is not of the reconciled kind {}",
                primary.kind
            ));
        }
        if !primary.covers(r.namespace.as_deref()) {
            return Err(format!(
                "{r} is outside the namespace the plugin reconciles"
            ));
        }
    }
    Ok(())
}

/// An index entry's keys: none may be empty.
pub(crate) fn check_index_entry(entry: &IndexEntry) -> Result<(), String> {
    if entry.keys.iter().any(String::is_empty) {
        return Err("an index key is empty".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::{DeleteOptions, Grant, Watch};
    use crate::model::KindRef;

    fn manifest() -> Manifest {
        Manifest {
            name: "rs".into(),
            version: "1".into(),
            reconciles: Watch::of(KindRef::new("apps/v1", "ReplicaSet")),
            owns: vec![Watch {
                namespace: Some("team-a".into()),
                ..Watch::of(KindRef::new("v1", "Pod"))
            }],
            reads: vec![Watch::of(KindRef::new("v1", "Node"))],
            writes: vec![
                Grant {
                    kind: KindRef::new("v1", "Pod"),
                    namespace: None,
                    subresource: Some("binding".into()),
                },
                Grant {
                    kind: KindRef::new("coordination.k8s.io/v1", "Lease"),
                    namespace: Some("kube-node-lease".into()),
                    subresource: None,
                },
            ],
            resync_seconds: None,
            finalizer: None,
            max_concurrency: 1,
        }
    }

    fn key(ns: &str) -> ObjectRef {
        ObjectRef {
            api_version: "apps/v1".into(),
            kind: "ReplicaSet".into(),
            namespace: Some(ns.into()),
            name: "web".into(),
        }
    }

    fn pod_ref(ns: Option<&str>, name: &str) -> ObjectRef {
        ObjectRef {
            api_version: "v1".into(),
            kind: "Pod".into(),
            namespace: ns.map(Into::into),
            name: name.into(),
        }
    }

    fn check(writes: Vec<RawWrite>, ns: &str) -> Result<Outcome, OutcomeError> {
        let outcome = RawOutcome {
            writes,
            prune_owned: true,
            ..RawOutcome::default()
        };
        check_outcome(&manifest(), outcome, &key(ns))
    }

    fn delete(target: ObjectRef) -> RawWrite {
        RawWrite::Delete {
            target,
            options: DeleteOptions::default(),
        }
    }

    /// Repeated identical texts are checked once, but each write is still
    /// held to the rules of its own kind of write.
    #[test]
    fn repeated_writes_are_checked_as_if_parsed_again() {
        let pod = r#"{"apiVersion":"v1","kind":"Pod","metadata":{"generateName":"web-"}}"#;
        let out = check(vec![RawWrite::Apply(pod.into()); 3], "team-a").unwrap();
        assert_eq!(out.writes.len(), 3);
        let err = check(
            vec![RawWrite::Apply(pod.into()), RawWrite::Replace(pod.into())],
            "team-a",
        );
        assert!(matches!(err, Err(OutcomeError::Invalid(m)) if m.contains("write #1")));
        let secret = r#"{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s"}}"#;
        let err = check(vec![RawWrite::Apply(secret.into()); 2], "team-a");
        assert!(matches!(err, Err(OutcomeError::Undeclared(m)) if m.contains("v1 Secret")));
    }

    /// The first hostile write ever seen: a namespace carrying a path.
    #[test]
    fn injected_namespaces_and_names_never_pass() {
        for (ns, name) in [
            ("default/secrets/victim?x=", "y"),
            ("team-a", "../secrets/victim"),
            ("team-a", "a/b"),
            ("team-a", "%2e%2e"),
            ("Team-A", "x"),
            ("team-a", ""),
            ("team-a", ".."),
        ] {
            let err = check(vec![delete(pod_ref(Some(ns), name))], "team-a");
            assert!(
                matches!(err, Err(OutcomeError::Invalid(_))),
                "{ns:?} {name:?}: {err:?}"
            );
        }
        let object = r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"default/secrets/x"}}"#;
        assert!(matches!(
            check(vec![RawWrite::Apply(object.into())], "team-a"),
            Err(OutcomeError::Invalid(m)) if m.contains("namespace")
        ));
        let kind = r#"{"apiVersion":"v1/../x","kind":"Pod","metadata":{"name":"p"}}"#;
        assert!(check(vec![RawWrite::Apply(kind.into())], "team-a").is_err());
    }

    #[test]
    fn writes_stay_in_the_namespaces_the_manifest_gives() {
        // Pods are owned in team-a only: not in team-b, by name or by default.
        assert!(check(vec![delete(pod_ref(Some("team-a"), "p"))], "team-a").is_ok());
        assert!(check(vec![delete(pod_ref(None, "p"))], "team-a").is_ok());
        for (target_ns, key_ns) in [(Some("team-b"), "team-a"), (None, "team-b")] {
            let err = check(vec![delete(pod_ref(target_ns, "p"))], key_ns);
            assert!(
                matches!(&err, Err(OutcomeError::Undeclared(m)) if m.contains("in namespace team-b")),
                "{err:?}"
            );
        }
        // A grant confines its kind; ReplicaSets are reconciled everywhere.
        let lease = |ns: &str| {
            RawWrite::Apply(format!(
                r#"{{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{{"name":"n1","namespace":"{ns}"}}}}"#
            ))
        };
        assert!(check(vec![lease("kube-node-lease")], "x").is_ok());
        assert!(check(vec![lease("default")], "x").is_err());
    }

    #[test]
    fn subresources_need_their_grant() {
        let bind = |sub: &str| RawWrite::CreateSubresource {
            target: pod_ref(Some("team-b"), "p"),
            subresource: sub.into(),
            body: r#"{"apiVersion":"v1","kind":"Binding"}"#.into(),
        };
        assert!(check(vec![bind("binding")], "x").is_ok());
        let err = check(vec![bind("eviction")], "x");
        assert!(
            matches!(&err, Err(OutcomeError::Undeclared(m)) if m.contains("eviction")),
            "{err:?}"
        );
        assert!(matches!(
            check(vec![bind("../x")], "x"),
            Err(OutcomeError::Invalid(_))
        ));
        // status goes with the object.
        let status = RawWrite::MergePatch {
            target: pod_ref(Some("team-a"), "p"),
            subresource: Some("status".into()),
            patch: "{}".into(),
        };
        assert!(check(vec![status], "team-a").is_ok());
    }

    #[test]
    fn events_are_about_what_the_plugin_may_read() {
        let event = |regarding: Option<ObjectRef>, reason: &str| RawOutcome {
            events: vec![RawEvent {
                warning: false,
                reason: reason.into(),
                message: "m".into(),
                regarding,
            }],
            ..RawOutcome::default()
        };
        let m = manifest();
        let k = key("team-a");
        assert!(check_outcome(&m, event(None, "Synced"), &k).is_ok());
        let node = ObjectRef {
            api_version: "v1".into(),
            kind: "Node".into(),
            namespace: None,
            name: "n1".into(),
        };
        assert!(check_outcome(&m, event(Some(node), "Synced"), &k).is_ok());
        let secret = ObjectRef {
            kind: "Secret".into(),
            ..pod_ref(Some("team-a"), "s")
        };
        assert!(matches!(
            check_outcome(&m, event(Some(secret), "Synced"), &k),
            Err(OutcomeError::Undeclared(_))
        ));
        let sneaky = pod_ref(Some("default/events/x?"), "p");
        assert!(check_outcome(&m, event(Some(sneaky), "Synced"), &k).is_err());
        assert!(check_outcome(&m, event(None, "Not a reason/x"), &k).is_err());
    }

    #[test]
    fn map_keys_are_primary_keys_the_plugin_reconciles() {
        let mut m = manifest();
        let rs = |ns: &str, name: &str| ObjectRef {
            namespace: Some(ns.into()),
            name: name.into(),
            ..key("x")
        };
        assert!(check_map_keys(&m, &[rs("a", "web")]).is_ok());
        assert!(check_map_keys(&m, &[pod_ref(Some("a"), "p")]).is_err());
        assert!(check_map_keys(&m, &[rs("a/b", "web")]).is_err());
        m.reconciles.namespace = Some("a".into());
        assert!(check_map_keys(&m, &[rs("b", "web")]).is_err());
    }
}
