//! The host's plugin boundary, as the harness enforces it: every write's
//! kind, namespace, name and subresource, and every event's object, checked
//! against the manifest and the API server's name rules
//! (`windlass_selector::names`, which the host uses too).

use windlass_selector::names;

use crate::{Event, Manifest, ObjectRef, Write};

/// Checks one write; `default_ns` is the primary object's namespace, which
/// the host gives writes that name none.
pub(crate) fn check_write(m: &Manifest, w: &Write, default_ns: Option<&str>) -> Result<(), String> {
    let (api_version, kind) = w.target_kind();
    names::api_version(api_version)?;
    names::kind(kind)?;
    let (namespace, name) = match w {
        Write::Apply(o) | Write::Replace(o) | Write::UpdateStatus(o) => {
            if o.name().is_empty() {
                match (w, o.generate_name()) {
                    (Write::Apply(_), Some(prefix)) => {
                        names::name_prefix(prefix).map_err(|e| format!("generateName {e}"))?
                    }
                    _ => return Err("the object has no metadata.name".into()),
                }
            }
            if matches!(w, Write::Replace(_)) && o.resource_version().is_none() {
                return Err("a replace must carry metadata.resourceVersion".into());
            }
            (o.namespace().or(default_ns), o.name())
        }
        Write::MergePatch { target, patch, .. } => {
            if !patch.is_object() {
                return Err("a merge patch must be a JSON object".into());
            }
            (
                target.namespace.as_deref().or(default_ns),
                target.name.as_str(),
            )
        }
        Write::Delete { target, .. } | Write::CreateSubresource { target, .. } => (
            target.namespace.as_deref().or(default_ns),
            target.name.as_str(),
        ),
    };
    if !name.is_empty() {
        names::path_segment(name).map_err(|e| format!("name {e}"))?;
    }
    if let Some(ns) = namespace {
        names::dns_label(ns).map_err(|e| format!("namespace {e}"))?;
    }
    let sub = match w {
        Write::UpdateStatus(_) => None,
        other => other.subresource(),
    };
    if let Some(s) = sub {
        names::subresource(s)?;
    }
    if !m.may_write_in(api_version, kind, namespace, sub) {
        let place = namespace.map_or(String::new(), |ns| format!(" in namespace {ns:?}"));
        let what = match sub {
            Some(s) if s != "status" => format!("the {s} subresource of {api_version} {kind}"),
            _ => format!("{api_version} {kind}"),
        };
        return Err(format!(
            "its manifest does not allow writing {what}{place} (declare it in reconciles, \
             owns or writes, for that namespace)"
        ));
    }
    Ok(())
}

/// Checks the object an event is about.
pub(crate) fn check_event(m: &Manifest, e: &Event) -> Result<(), String> {
    if e.reason.is_empty() {
        return Err("an event has an empty reason".into());
    }
    let Some(r) = &e.regarding else {
        return Ok(());
    };
    check_ref(r)?;
    if !m.may_read(&r.api_version, &r.kind) {
        return Err(format!(
            "an event is about {r}, a kind its manifest does not declare in reconciles, owns or reads"
        ));
    }
    Ok(())
}

/// Checks the names in a reference.
pub(crate) fn check_ref(r: &ObjectRef) -> Result<(), String> {
    names::api_version(&r.api_version)?;
    names::kind(&r.kind)?;
    names::path_segment(&r.name).map_err(|e| format!("{r}: name {e}"))?;
    if let Some(ns) = &r.namespace {
        names::dns_label(ns).map_err(|e| format!("{r}: namespace {e}"))?;
    }
    Ok(())
}
