//! A fake of the host's writer: applies an outcome's writes to the test cache.

use serde_json::{Map, Value};

use super::State;
use crate::{DeleteOptions, Error, Object, ObjectRef, Outcome, Write};

pub(crate) fn apply(state: &State, key: &ObjectRef, outcome: &Outcome) -> Result<(), Error> {
    let primary = state.store.borrow().get(key).cloned();
    let mut kept = Vec::new();
    for w in &outcome.writes {
        match w {
            Write::Apply(o) => kept.push(apply_one(state, primary.as_ref(), o)),
            Write::Replace(o) => {
                let r = o.object_ref();
                update(state, &r, |live| {
                    let status = live.remove("status");
                    *live = o.clone();
                    if let Some(s) = status {
                        live.set("status", s);
                    }
                })?;
                kept.push(r);
            }
            Write::UpdateStatus(o) => {
                let status = o.get("status").cloned().unwrap_or(Value::Null);
                update(state, &o.object_ref(), |live| live.set("status", status))?;
            }
            Write::MergePatch { target, patch, .. } => {
                let target = defaulted(target, primary.as_ref());
                update(state, &target, |live| merge(live.value_mut(), patch))?;
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
        state.store.borrow_mut().retain(|r, o| {
            !state.manifest.is_owned_kind(&r.api_version, &r.kind)
                || o.controller_ref().is_none_or(|c| c.uid != uid)
                || kept.contains(r)
        });
    }
    Ok(())
}

/// `r` with the primary object's namespace when it names none, as the host
/// fills it in.
fn defaulted(r: &ObjectRef, primary: Option<&Object>) -> ObjectRef {
    let mut r = r.clone();
    if r.namespace.is_none() {
        r.namespace = primary.and_then(Object::namespace).map(str::to_owned);
        // A cluster-scoped target stays without one if that is how it is stored.
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
    let exists = state.store.borrow().contains_key(&r);
    if exists {
        // Converge the given fields onto the live object.
        let _ = update(state, &r, |live| merge(live.value_mut(), obj.value()));
        return r;
    }
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
    if let Some(p) = primary {
        let owned = state.manifest.is_owned_kind(obj.api_version(), obj.kind());
        if owned
            && obj.controller_ref().is_none()
            && let Some(uid) = p.uid()
        {
            let owner = serde_json::json!({
                "apiVersion": p.api_version(), "kind": p.kind(), "name": p.name(),
                "uid": uid, "controller": true, "blockOwnerDeletion": true,
            });
            let refs = match obj.get_mut("metadata.ownerReferences") {
                Some(Value::Array(a)) => a,
                _ => {
                    obj.set("metadata.ownerReferences", Value::Array(Vec::new()));
                    match obj.get_mut("metadata.ownerReferences") {
                        Some(Value::Array(a)) => a,
                        _ => unreachable!("just set"),
                    }
                }
            };
            refs.push(owner);
        }
    }
    state.store.borrow_mut().insert(r.clone(), obj);
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

/// RFC 7386 JSON merge patch.
fn merge(target: &mut Value, patch: &Value) {
    let Value::Object(p) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    let Value::Object(t) = target else { return };
    for (k, v) in p {
        if v.is_null() {
            t.remove(k);
        } else {
            merge(t.entry(k.as_str()).or_insert(Value::Null), v);
        }
    }
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
