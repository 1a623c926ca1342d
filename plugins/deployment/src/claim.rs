//! The Deployment's ReplicaSets, and upstream's `ClaimReplicaSets` (the
//! controller reference manager): a Deployment adopts the orphan
//! ReplicaSets of its namespace that its selector selects — after `kubectl
//! delete deployment --cascade=orphan`, a Deployment made again takes its
//! ReplicaSet and pods back instead of making a second set — and releases
//! the ReplicaSets it controls that its selector no longer selects.
//!
//! The ReplicaSet watch is indexed: each ReplicaSet a Deployment controls
//! is filed under its uid ([`owned`] reads them), and each live orphan is
//! counted under its namespace, so a reconcile learns whether there are
//! orphans at all from one sum and reads them only when there are.
//!
//! A claim goes out on its own, before the rollout is planned: the
//! reconcile the ReplicaSet's change brings then plans with the
//! ReplicaSets as they are. An adoption is an `apply` of the ReplicaSet's
//! identity (the host's writer adds the controller reference, with the
//! resourceVersion as a precondition); a release, `Object::release_patch`.
//! The host wakes the Deployment when an orphan its selector selects
//! appears, loses its controller or is relabelled.

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde::Deserialize;
use windlass_sdk::{Error, IndexEntry, KindRef, Object, ObjectRef, Outcome, cache, selects};

use crate::model::{Deployment, ReplicaSet};

fn replicasets() -> KindRef {
    KindRef::new("apps/v1", "ReplicaSet")
}

/// The index key of the orphan ReplicaSets of `namespace`.
fn orphans_key(namespace: &str) -> String {
    format!("orphans/{namespace}")
}

/// Files a ReplicaSet under the uid of the Deployment that controls it, or
/// counts it among its namespace's orphans when nothing controls it and it
/// is not being deleted.
pub(crate) fn index(object: &Object) -> Option<IndexEntry> {
    let rs: Meta<'_> = object.deserialize().ok()?;
    let m = rs.metadata;
    match m
        .owner_references
        .iter()
        .find(|r| r.controller == Some(true))
    {
        Some(c) if c.kind == "Deployment" => Some(IndexEntry::new().key(&*c.uid)),
        Some(_) => None,
        None if m.deletion_timestamp.is_none() => Some(
            IndexEntry::new()
                .key(orphans_key(m.namespace.as_deref()?))
                .amounts([1]),
        ),
        None => None,
    }
}

/// The ReplicaSets `d` controls, as cached.
pub(crate) fn owned(d: &Deployment) -> Result<Vec<Object>, Error> {
    if d.uid.is_empty() {
        return Ok(Vec::new());
    }
    cache::lookup_objects(&replicasets(), &d.uid)
}

/// The adoptions or releases `d` makes among its ReplicaSets (`rss`, read
/// from `owned`) and the orphan ReplicaSets its selector selects, if any.
pub(crate) fn claim(
    d: &Deployment,
    rss: &[ReplicaSet],
    owned: &[Object],
) -> Result<Option<Outcome>, Error> {
    if d.deleting || d.selects_everything() {
        return Ok(None);
    }
    let mut out = Outcome::new();
    for rs in rss.iter().filter(|rs| !rs.deleting) {
        let selected = selects(&d.selector, |k| rs.labels.get(k).map(String::as_str));
        let object = owned.iter().find(|o| o.name() == rs.name);
        if !selected && let Some(object) = object {
            out = out.merge_patch(object.object_ref(), object.release_patch(&d.uid));
        }
    }
    if !out.is_empty() {
        return Ok(Some(out));
    }
    let key = orphans_key(&d.namespace);
    let orphans = cache::totals(&replicasets(), &[&key])?;
    if orphans
        .first()
        .and_then(|t| t.first())
        .copied()
        .unwrap_or(0)
        == 0
    {
        return Ok(None);
    }
    for rs in cache::lookup_objects(&replicasets(), &key)? {
        let m = rs.deserialize::<Meta<'_>>()?.metadata;
        let controlled = m
            .owner_references
            .iter()
            .any(|r| r.controller == Some(true));
        let selected = selects(&d.selector, |k| m.labels.get(k).map(|v| &**v));
        if selected && !controlled && m.deletion_timestamp.is_none() {
            let target = ObjectRef::new("apps/v1", "ReplicaSet", &*d.namespace, &*m.name);
            out = out.apply(Object::identity(&target));
        }
    }
    Ok((!out.is_empty()).then_some(out))
}

/// What the index and adoption read of a ReplicaSet: its metadata,
/// borrowed.
#[derive(Deserialize)]
struct Meta<'a> {
    #[serde(borrow)]
    metadata: MetaFields<'a>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct MetaFields<'a> {
    #[serde(borrow, default)]
    name: Cow<'a, str>,
    #[serde(borrow, default)]
    namespace: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    deletion_timestamp: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    labels: BTreeMap<Cow<'a, str>, Cow<'a, str>>,
    #[serde(borrow, default)]
    owner_references: Vec<Reference<'a>>,
}

#[derive(Deserialize)]
struct Reference<'a> {
    #[serde(borrow, default)]
    kind: Cow<'a, str>,
    #[serde(borrow, default)]
    uid: Cow<'a, str>,
    #[serde(default)]
    controller: Option<bool>,
}
