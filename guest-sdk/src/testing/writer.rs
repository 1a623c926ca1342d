//! A fake of the host's writer: applies an outcome's writes to the test cache.
//!
//! What an `apply` sends and what `prune-owned` deletes come from
//! `windlass-apply`, the host writer's own rules; this file plays the API
//! server's side of those requests against the fake cache.

use std::collections::HashSet;

use serde_json::Value;
use windlass_apply::{Apply, Child};

use super::State;
use crate::{DeleteOptions, Error, Object, ObjectRef, Outcome, Write};

pub(crate) fn apply(state: &State, key: &ObjectRef, outcome: &Outcome) -> Result<(), Error> {
    let primary = state.store.borrow().get(key).cloned();
    let mut kept = HashSet::new();
    for w in &outcome.writes {
        match w {
            Write::Apply(o) => {
                kept.insert(apply_one(state, primary.as_ref(), o));
            }
            Write::Replace(o) => {
                let r = o.object_ref();
                update(state, &r, |live| {
                    let status = live.remove("status");
                    *live = o.clone();
                    if let Some(s) = status {
                        live.set("status", s);
                    }
                })?;
                kept.insert(r);
            }
            Write::UpdateStatus(o) => {
                let status = o.get("status").cloned().unwrap_or(Value::Null);
                update(state, &o.object_ref(), |live| live.set("status", status))?;
            }
            Write::MergePatch { target, patch, .. } => {
                let target = defaulted(target, primary.as_ref());
                update(state, &target, |live| {
                    windlass_apply::merge_patch(live.value_mut(), patch)
                })?;
            }
            Write::Delete { target, options } => {
                let target = defaulted(target, primary.as_ref());
                delete(state, &target, options)?;
            }
            Write::CreateSubresource {
                target,
                subresource,
                body,
            } => {
                let target = defaulted(target, primary.as_ref());
                create_subresource(state, &target, subresource, body)?;
            }
        }
    }
    if outcome.prune_owned
        && let Some(uid) = primary.as_ref().and_then(Object::uid)
    {
        // The children the host would find in its caches: of owned kinds,
        // with a controller reference to the primary object.
        let owned: Vec<Child<ObjectRef, ()>> = state
            .store
            .borrow()
            .iter()
            .filter(|(r, o)| {
                state.manifest.is_owned_kind(&r.api_version, &r.kind)
                    && o.controller_ref().is_some_and(|c| c.uid == uid)
            })
            .map(|(r, o)| Child {
                key: r.clone(),
                deleting: o.deletion_timestamp().is_some(),
                object: (),
            })
            .collect();
        let mut store = state.store.borrow_mut();
        for child in windlass_apply::pruned(owned, &kept) {
            // The fake server deletes a pruned child at once (a pod's grace
            // period is not played here).
            store.remove(&child.key);
        }
    }
    Ok(())
}

/// The built-in kinds that live outside namespaces, by API version and
/// kind: a write of one gets no namespace from the primary object (the
/// host learns this from discovery; the harness has none).
const CLUSTER_SCOPED: [(&str, &str); 16] = [
    ("v1", "Node"),
    ("v1", "Namespace"),
    ("v1", "PersistentVolume"),
    ("storage.k8s.io/v1", "StorageClass"),
    ("storage.k8s.io/v1", "CSIDriver"),
    ("storage.k8s.io/v1", "CSINode"),
    ("storage.k8s.io/v1", "VolumeAttachment"),
    ("rbac.authorization.k8s.io/v1", "ClusterRole"),
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"),
    ("apiextensions.k8s.io/v1", "CustomResourceDefinition"),
    ("scheduling.k8s.io/v1", "PriorityClass"),
    ("node.k8s.io/v1", "RuntimeClass"),
    ("networking.k8s.io/v1", "IngressClass"),
    ("certificates.k8s.io/v1", "CertificateSigningRequest"),
    (
        "admissionregistration.k8s.io/v1",
        "ValidatingWebhookConfiguration",
    ),
    (
        "admissionregistration.k8s.io/v1",
        "MutatingWebhookConfiguration",
    ),
];

fn cluster_scoped(api_version: &str, kind: &str) -> bool {
    CLUSTER_SCOPED.contains(&(api_version, kind))
}

/// `r` with the primary object's namespace when it names none and its
/// kind is namespaced, as the host fills it in.
fn defaulted(r: &ObjectRef, primary: Option<&Object>) -> ObjectRef {
    let mut r = r.clone();
    if r.namespace.is_none() && !cluster_scoped(&r.api_version, &r.kind) {
        r.namespace = primary.and_then(Object::namespace).map(str::to_owned);
    }
    r
}

/// Deletes as the API server does: preconditions are checked (a mismatch
/// fails like a 409), a pod bound to a node with a grace period left is only
/// marked terminating (`deletionTimestamp`, `deletionGracePeriodSeconds`),
/// anything else goes at once. A missing object is fine.
fn delete(state: &State, r: &ObjectRef, options: &DeleteOptions) -> Result<(), Error> {
    let mut store = state.store.borrow_mut();
    let key = if store.contains_key(r) {
        r.clone()
    } else {
        ObjectRef {
            namespace: None,
            ..r.clone()
        }
    };
    let Some(live) = store.get_mut(&key) else {
        return Ok(());
    };
    if options
        .uid
        .as_deref()
        .is_some_and(|uid| live.uid() != Some(uid))
    {
        return Err(Error::retry(format!("{r}: precondition failed: uid")));
    }
    if let Some(rv) = &options.resource_version
        && live.resource_version() != Some(rv.as_str())
    {
        return Err(Error::retry(format!(
            "{r}: precondition failed: resourceVersion"
        )));
    }
    let grace = options.grace_period_seconds.unwrap_or_else(|| {
        live.get_i64("spec.terminationGracePeriodSeconds")
            .unwrap_or(30)
    });
    let graceful = live.is("v1", "Pod")
        && live.get_str("spec.nodeName").is_some_and(|n| !n.is_empty())
        && !matches!(live.get_str("status.phase"), Some("Succeeded" | "Failed"))
        && grace > 0;
    if graceful {
        if live.deletion_timestamp().is_none() {
            live.set("metadata.deletionTimestamp", "2026-01-01T00:00:00Z");
        }
        let shorter = live
            .get_i64("metadata.deletionGracePeriodSeconds")
            .map_or(grace, |g| g.min(grace));
        live.set("metadata.deletionGracePeriodSeconds", shorter);
        let n = state.next();
        live.set("metadata.resourceVersion", n.to_string());
        return Ok(());
    }
    store.remove(&key);
    Ok(())
}

/// A binding sets the pod's node (and `PodScheduled`), as the API server's
/// binding subresource does; an eviction deletes the pod with its options.
fn create_subresource(
    state: &State,
    r: &ObjectRef,
    subresource: &str,
    body: &Object,
) -> Result<(), Error> {
    match (r.is("v1", "Pod"), subresource) {
        (true, "binding") => {
            let node = body
                .get_str("target.name")
                .ok_or_else(|| Error::permanent("a binding needs target.name"))?
                .to_owned();
            let store = state.store.borrow();
            let bound = store
                .get(r)
                .and_then(|p| p.get_str("spec.nodeName"))
                .is_some_and(|n| !n.is_empty());
            drop(store);
            if bound {
                return Err(Error::retry(format!("{r} is already assigned to a node")));
            }
            update(state, r, |live| {
                live.set("spec.nodeName", node.clone());
                let mut conditions: Vec<serde_json::Value> = live
                    .get("status.conditions")
                    .and_then(|c| c.as_array().cloned())
                    .unwrap_or_default();
                conditions.retain(|c| c["type"] != "PodScheduled");
                conditions.push(serde_json::json!({"type": "PodScheduled", "status": "True"}));
                live.set("status.conditions", serde_json::Value::Array(conditions));
            })
        }
        (true, "eviction") => {
            let mut options = DeleteOptions::new();
            options.grace_period_seconds = body.get_i64("deleteOptions.gracePeriodSeconds");
            options.uid = body
                .get_str("deleteOptions.preconditions.uid")
                .map(str::to_owned);
            delete(state, r, &options)
        }
        _ => Err(Error::permanent(format!(
            "the test harness does not know the {subresource} subresource of {} {}",
            r.api_version, r.kind
        ))),
    }
}

fn apply_one(state: &State, primary: Option<&Object>, o: &Object) -> ObjectRef {
    let mut obj = o.clone();
    if obj.namespace().is_none()
        && !cluster_scoped(obj.api_version(), obj.kind())
        && let Some(ns) = primary.and_then(Object::namespace)
    {
        obj.set("metadata.namespace", ns);
    }
    if obj.name().is_empty() {
        let prefix = obj.generate_name().unwrap_or("").to_owned();
        let n = state.next();
        obj.set("metadata.name", format!("{prefix}{}", suffix(n)));
    }
    let r = obj.object_ref();
    let owner = primary
        .filter(|_| state.manifest.is_owned_kind(obj.api_version(), obj.kind()))
        .and_then(|p| {
            let uid = p.uid()?;
            Some(windlass_apply::owner_reference(
                p.api_version(),
                p.kind(),
                p.name(),
                uid,
            ))
        });
    let live = state.store.borrow().get(&r).map(|l| l.value().clone());
    // The fake cache knows no kind's subresources: status is an ordinary
    // field here, as for a kind without a status subresource.
    match windlass_apply::apply(obj.into_value(), live.as_ref(), owner.as_ref(), false) {
        Apply::Converged => {}
        Apply::Patch(patch) => {
            let _ = update(state, &r, |live| {
                windlass_apply::merge_patch(live.value_mut(), &patch)
            });
        }
        Apply::Create(value) => {
            let mut obj = Object::wrap(value);
            let n = state.next();
            obj.set("metadata.uid", format!("uid-{n}"));
            obj.set("metadata.resourceVersion", n.to_string());
            obj.set("metadata.generation", 1);
            obj.set(
                "metadata.creationTimestamp",
                format!(
                    "2026-01-01T{:02}:{:02}:{:02}Z",
                    n / 3600 % 24,
                    n / 60 % 60,
                    n % 60
                ),
            );
            state.store.borrow_mut().insert(r.clone(), obj);
        }
    }
    r
}

/// Runs `f` on the live object; bumps resourceVersion (and generation, if the
/// spec changed) only when something changed.
fn update(state: &State, r: &ObjectRef, f: impl FnOnce(&mut Object)) -> Result<(), Error> {
    let mut store = state.store.borrow_mut();
    let Some(live) = store.get_mut(r) else {
        return Err(Error::retry(format!("{r} not found")));
    };
    let before = live.clone();
    f(live);
    // The object's identity and bookkeeping are the server's.
    for key in ["uid", "creationTimestamp", "resourceVersion", "generation"] {
        match before.get(&format!("metadata.{key}")) {
            Some(v) => live.set(&format!("metadata.{key}"), v.clone()),
            None => {
                live.remove(&format!("metadata.{key}"));
            }
        }
    }
    if *live != before {
        if live.get("spec") != before.get("spec") {
            let g = before.generation().unwrap_or(0) + 1;
            live.set("metadata.generation", g);
        }
        live.set("metadata.resourceVersion", state.next().to_string());
    }
    Ok(())
}

/// A 5-character lowercase suffix like the API server's, but deterministic.
fn suffix(mut n: u64) -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let mut s = String::with_capacity(5);
    for _ in 0..5 {
        s.push(ALPHABET[(n % ALPHABET.len() as u64) as usize] as char);
        n /= ALPHABET.len() as u64;
    }
    s
}
