//! Garbage collection by ownerReferences, foreground/orphan deletion and
//! namespace termination.
//!
//! `plan` is a pure function from a view of all objects to the next actions;
//! `run` applies them under the state lock until nothing is left to do. The
//! server runs a pass after every write that can need one (debounced). A
//! pass reads every object, so the state keeps the common writes — a
//! status update, a binding, the create of a pod whose owner is there — from
//! causing one: only deletes, deletions under way, and owner references
//! that name an absent or departing owner (or were removed) do (see
//! `State::gc_may_need_pass`).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use serde_json::Value;

use crate::object;
use crate::scope::Req;
use crate::state::{Current, Obj, State};
use crate::status::ApiResult;
use crate::write::{self, DeleteOptions, FOREGROUND, ORPHAN, Propagation};

/// What GC needs to know about one object.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct View {
    pub(crate) res: String,
    pub(crate) ns: String,
    pub(crate) name: String,
    pub(crate) uid: String,
    pub(crate) owners: Vec<(String, bool)>,
    pub(crate) deleting: bool,
    pub(crate) finalizers: Vec<String>,
}

/// One step GC takes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Action {
    Delete {
        res: String,
        ns: String,
        name: String,
        policy: Propagation,
    },
    RemoveOwners {
        res: String,
        ns: String,
        name: String,
        uids: Vec<String>,
    },
    RemoveFinalizer {
        res: String,
        ns: String,
        name: String,
        finalizer: String,
    },
    /// Sets `blockOwnerDeletion: false` on every owner reference, to break
    /// an ownership cycle that would block foreground deletion forever.
    UnblockOwners {
        res: String,
        ns: String,
        name: String,
    },
    FinishNamespace {
        name: String,
    },
}

const NAMESPACES: &str = "/namespaces";

fn has(v: &View, f: &str) -> bool {
    v.finalizers.iter().any(|x| x == f)
}

/// Deleting in the foreground: waiting for its blocking dependents.
fn waiting(v: &View) -> bool {
    v.deleting && has(v, FOREGROUND)
}

fn unblock(v: &View) -> Action {
    Action::UnblockOwners {
        res: v.res.clone(),
        ns: v.ns.clone(),
        name: v.name.clone(),
    }
}

/// Decides the next GC actions.
pub(crate) fn plan(views: &[View]) -> Vec<Action> {
    let by_uid: HashMap<&str, &View> = views.iter().map(|v| (v.uid.as_str(), v)).collect();
    let mut dependents: HashMap<&str, Vec<&View>> = HashMap::new();
    for v in views {
        for (owner, _) in &v.owners {
            dependents.entry(owner.as_str()).or_default().push(v);
        }
    }
    let mut actions = cycle_breaks(views, &dependents);
    for v in views.iter().filter(|v| !v.owners.is_empty()) {
        let present: Vec<&View> = v
            .owners
            .iter()
            .filter_map(|(u, _)| by_uid.get(u.as_str()).copied())
            .collect();
        let orphaning = |o: &View| o.deleting && has(o, ORPHAN);
        let solid = present.iter().any(|o| !waiting(o) && !orphaning(o));
        if present.is_empty() || (!solid && present.iter().all(|o| waiting(o))) {
            if !v.deleting {
                let policy = if present.is_empty() {
                    Propagation::Background
                } else {
                    Propagation::Foreground
                };
                // kube's garbage collector: an object whose owners wait for
                // it, and which has a dependent that itself waits, may sit
                // on a cycle (A owns B owns A); its references stop
                // blocking before it is deleted in the foreground.
                let deps = dependents.get(v.uid.as_str());
                if policy == Propagation::Foreground
                    && v.owners.iter().any(|(_, blocking)| *blocking)
                    && deps.is_some_and(|ds| ds.iter().any(|d| waiting(d)))
                {
                    actions.push(unblock(v));
                }
                actions.push(Action::Delete {
                    res: v.res.clone(),
                    ns: v.ns.clone(),
                    name: v.name.clone(),
                    policy,
                });
            }
            continue;
        }
        let drop: Vec<String> = v
            .owners
            .iter()
            .filter(|(u, _)| match by_uid.get(u.as_str()) {
                None => true,
                Some(o) => orphaning(o) || (solid && waiting(o)),
            })
            .map(|(u, _)| u.clone())
            .collect();
        if !drop.is_empty() {
            actions.push(Action::RemoveOwners {
                res: v.res.clone(),
                ns: v.ns.clone(),
                name: v.name.clone(),
                uids: drop,
            });
        }
    }
    let blocking: HashSet<&str> = views
        .iter()
        .flat_map(|v| v.owners.iter().filter(|(_, b)| *b).map(|(u, _)| u.as_str()))
        .collect();
    let any_dependent: HashSet<&str> = views
        .iter()
        .flat_map(|v| v.owners.iter().map(|(u, _)| u.as_str()))
        .collect();
    for v in views.iter().filter(|v| v.deleting) {
        if has(v, FOREGROUND) && !blocking.contains(v.uid.as_str()) {
            actions.push(Action::RemoveFinalizer {
                res: v.res.clone(),
                ns: v.ns.clone(),
                name: v.name.clone(),
                finalizer: FOREGROUND.into(),
            });
        }
        if has(v, ORPHAN) && !any_dependent.contains(v.uid.as_str()) {
            actions.push(Action::RemoveFinalizer {
                res: v.res.clone(),
                ns: v.ns.clone(),
                name: v.name.clone(),
                finalizer: ORPHAN.into(),
            });
        }
    }
    for ns in views.iter().filter(|v| v.res == NAMESPACES && v.deleting) {
        let mut empty = true;
        for v in views
            .iter()
            .filter(|v| v.res != NAMESPACES && v.ns == ns.name)
        {
            empty = false;
            if !v.deleting {
                actions.push(Action::Delete {
                    res: v.res.clone(),
                    ns: v.ns.clone(),
                    name: v.name.clone(),
                    policy: Propagation::Background,
                });
            }
        }
        if empty && ns.finalizers.is_empty() {
            actions.push(Action::FinishNamespace {
                name: ns.name.clone(),
            });
        }
    }
    actions
}

/// Objects deleting in the foreground that wait on each other in a cycle:
/// each is blocked by a dependent that is itself waiting, around and back.
/// Nothing inside such a cycle can ever finish (a client can make one by
/// deleting both A and B, owners of each other, in the foreground), so each
/// member's blocking references are dropped, as kube's collector does for
/// the cycles it sees forming; the members then go in turn.
fn cycle_breaks(views: &[View], dependents: &HashMap<&str, Vec<&View>>) -> Vec<Action> {
    let waiters: Vec<&View> = views.iter().filter(|v| waiting(v)).collect();
    let index: HashMap<&str, usize> = waiters
        .iter()
        .enumerate()
        .map(|(i, v)| (v.uid.as_str(), i))
        .collect();
    // Edge w -> d: d blocks w's deletion and waits itself.
    let edges: Vec<Vec<usize>> = waiters
        .iter()
        .map(|w| {
            dependents
                .get(w.uid.as_str())
                .into_iter()
                .flatten()
                .filter(|d| d.owners.iter().any(|(u, b)| *b && *u == w.uid))
                .filter_map(|d| index.get(d.uid.as_str()).copied())
                .collect()
        })
        .collect();
    on_cycles(&edges)
        .into_iter()
        .zip(&waiters)
        .filter(|(cyclic, w)| *cyclic && w.owners.iter().any(|(_, b)| *b))
        .map(|(_, w)| unblock(w))
        .collect()
}

/// Which nodes of a directed graph lie on a cycle: Tarjan's strongly
/// connected components, with an explicit stack (chains of owners can be
/// long, and the graph is the clients' to shape).
fn on_cycles(edges: &[Vec<usize>]) -> Vec<bool> {
    let n = edges.len();
    let mut index = vec![usize::MAX; n];
    let mut low = vec![0; n];
    let mut on_stack = vec![false; n];
    let mut stack = Vec::new();
    let mut cyclic = vec![false; n];
    let mut next = 0;
    for root in 0..n {
        if index[root] != usize::MAX {
            continue;
        }
        // (node, position in its edge list)
        let mut work = vec![(root, 0)];
        index[root] = next;
        low[root] = next;
        next += 1;
        stack.push(root);
        on_stack[root] = true;
        while let Some(&mut (v, ref mut pos)) = work.last_mut() {
            if let Some(&w) = edges[v].get(*pos) {
                *pos += 1;
                if w == v {
                    cyclic[v] = true;
                } else if index[w] == usize::MAX {
                    index[w] = next;
                    low[w] = next;
                    next += 1;
                    stack.push(w);
                    on_stack[w] = true;
                    work.push((w, 0));
                } else if on_stack[w] {
                    low[v] = low[v].min(index[w]);
                }
                continue;
            }
            work.pop();
            if let Some(&(parent, _)) = work.last() {
                low[parent] = low[parent].min(low[v]);
            }
            if low[v] == index[v] {
                let mut members = Vec::new();
                while let Some(w) = stack.pop() {
                    on_stack[w] = false;
                    members.push(w);
                    if w == v {
                        break;
                    }
                }
                if members.len() > 1 {
                    for m in members {
                        cyclic[m] = true;
                    }
                }
            }
        }
    }
    cyclic
}

fn views(st: &State) -> Vec<View> {
    st.all_objects()
        .into_iter()
        .map(|(res, o)| View {
            ns: o.attrs.namespace.to_string(),
            name: o.attrs.name.to_string(),
            uid: o.attrs.uid.to_string(),
            owners: o.attrs.owner_uids(),
            deleting: o.attrs.deleting,
            finalizers: o.attrs.finalizers.iter().map(|f| f.to_string()).collect(),
            res,
        })
        .collect()
}

/// Runs GC to a fixed point (bounded); returns how many actions were applied.
/// Does nothing when no write since the last pass could have given it work.
pub(crate) fn run(st: &mut State) -> usize {
    if !std::mem::take(&mut st.gc_pending) {
        return 0;
    }
    let mut applied = 0;
    for _ in 0..64 {
        let actions = plan(&views(st));
        if actions.is_empty() {
            break;
        }
        let mut progressed = false;
        for a in actions {
            progressed |= apply(st, &a);
            applied += 1;
        }
        if !progressed {
            break;
        }
    }
    applied
}

fn apply(st: &mut State, a: &Action) -> bool {
    let (res_key, ns, name) = match a {
        Action::Delete { res, ns, name, .. }
        | Action::RemoveOwners { res, ns, name, .. }
        | Action::RemoveFinalizer { res, ns, name, .. }
        | Action::UnblockOwners { res, ns, name } => (res.as_str(), ns.as_str(), name.as_str()),
        Action::FinishNamespace { name } => (NAMESPACES, "", name.as_str()),
    };
    let Some(res) = st.registry.get_key(res_key).cloned() else {
        // A kind whose CRD is gone: drop the object directly.
        if st.get(res_key, ns, name).is_some() {
            st.write(res_key, ns, name, None);
            return true;
        }
        return false;
    };
    let req = Req {
        res: &res,
        version: &res.versions[0],
        ns,
        dry_run: false,
        sub: "",
    };
    let Some(old) = st.get(res_key, ns, name) else {
        return false;
    };
    let result = match a {
        Action::Delete { policy, .. } => write::delete(
            st,
            &req,
            name,
            &DeleteOptions {
                propagation: *policy,
                ..Default::default()
            },
        )
        .map(|_| ()),
        Action::RemoveOwners { uids, .. } => edit(st, &req, old, |new| {
            if let Some(refs) = new["metadata"]["ownerReferences"].as_array_mut() {
                refs.retain(|r| !uids.iter().any(|u| r["uid"].as_str() == Some(u)));
                if refs.is_empty() {
                    object::meta_mut(new).remove("ownerReferences");
                }
            }
        }),
        Action::RemoveFinalizer { finalizer, .. } => edit(st, &req, old, |new| {
            let f = object::finalizers(new)
                .into_iter()
                .filter(|x| x != finalizer)
                .collect();
            object::set_finalizers(new, f);
        }),
        Action::UnblockOwners { .. } => edit(st, &req, old, |new| {
            if let Some(refs) = new["metadata"]["ownerReferences"].as_array_mut() {
                for r in refs.iter_mut().filter(|r| r["blockOwnerDeletion"] == true) {
                    r["blockOwnerDeletion"] = serde_json::json!(false);
                }
            }
        }),
        Action::FinishNamespace { .. } => {
            st.write(NAMESPACES, "", name, None);
            Ok(())
        }
    };
    if let Err(e) = &result {
        tracing::warn!(resource = res_key, namespace = ns, name, error = %e.message, "garbage collection step failed");
    }
    result.is_ok()
}

/// Updates `old` to what `change` makes of it (the object parsed once, for
/// both the update and the old value it is checked against).
fn edit(
    st: &mut State,
    req: &Req<'_>,
    old: Arc<Obj>,
    change: impl FnOnce(&mut Value),
) -> ApiResult<()> {
    let old = Current::of(old);
    let mut new = old.value.clone();
    change(&mut new);
    write::commit_update(st, req, &old, new).map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(res: &str, ns: &str, name: &str, owners: &[(&str, bool)]) -> View {
        View {
            res: res.into(),
            ns: ns.into(),
            name: name.into(),
            uid: format!("uid-{name}"),
            owners: owners.iter().map(|(u, b)| (u.to_string(), *b)).collect(),
            deleting: false,
            finalizers: vec![],
        }
    }

    #[test]
    fn orphans_of_a_missing_owner_are_deleted() {
        let views = vec![v("apps/replicasets", "d", "rs", &[("uid-gone", true)])];
        assert_eq!(
            plan(&views),
            vec![Action::Delete {
                res: "apps/replicasets".into(),
                ns: "d".into(),
                name: "rs".into(),
                policy: Propagation::Background
            }]
        );
    }

    #[test]
    fn live_owner_keeps_dependents() {
        let views = vec![
            v("apps/deployments", "d", "dep", &[]),
            v("apps/replicasets", "d", "rs", &[("uid-dep", true)]),
        ];
        assert!(plan(&views).is_empty());
    }

    #[test]
    fn foreground_waits_for_blocking_dependents() {
        let mut owner = v("apps/deployments", "d", "dep", &[]);
        owner.deleting = true;
        owner.finalizers = vec![FOREGROUND.into()];
        let dep = v("apps/replicasets", "d", "rs", &[("uid-dep", true)]);
        let actions = plan(&[owner.clone(), dep]);
        assert_eq!(actions.len(), 1);
        assert!(
            matches!(&actions[0], Action::Delete { name, policy: Propagation::Foreground, .. } if name == "rs")
        );
        // Once the dependent is gone the finalizer goes.
        assert!(
            matches!(&plan(&[owner])[0], Action::RemoveFinalizer { finalizer, .. } if finalizer == FOREGROUND)
        );
    }

    #[test]
    fn orphan_removes_references_then_finalizer() {
        let mut owner = v("apps/deployments", "d", "dep", &[]);
        owner.deleting = true;
        owner.finalizers = vec![ORPHAN.into()];
        let dep = v("apps/replicasets", "d", "rs", &[("uid-dep", true)]);
        let actions = plan(&[owner.clone(), dep]);
        assert!(
            matches!(&actions[0], Action::RemoveOwners { uids, .. } if uids == &vec!["uid-dep".to_string()])
        );
        assert!(
            matches!(&plan(&[owner])[0], Action::RemoveFinalizer { finalizer, .. } if finalizer == ORPHAN)
        );
    }

    #[test]
    fn terminating_namespace_empties_then_goes() {
        let mut ns = v(NAMESPACES, "", "team", &[]);
        ns.deleting = true;
        let cm = v("/configmaps", "team", "c", &[]);
        assert!(matches!(&plan(&[ns.clone(), cm])[0], Action::Delete { name, .. } if name == "c"));
        assert_eq!(
            plan(&[ns]),
            vec![Action::FinishNamespace {
                name: "team".into()
            }]
        );
    }

    fn deleting_foreground(mut v: View) -> View {
        v.deleting = true;
        v.finalizers = vec![FOREGROUND.into()];
        v
    }

    /// Kube's rule: B is about to be deleted in the foreground for its
    /// waiting owner A, and B's own dependent (A) waits too: B's references
    /// stop blocking first.
    #[test]
    fn a_forming_cycle_is_unblocked_as_kube_does() {
        let a = deleting_foreground(v("/configmaps", "d", "a", &[("uid-b", true)]));
        let b = v("/configmaps", "d", "b", &[("uid-a", true)]);
        let actions = plan(&[a, b]);
        assert_eq!(
            actions,
            vec![
                Action::UnblockOwners {
                    res: "/configmaps".into(),
                    ns: "d".into(),
                    name: "b".into()
                },
                Action::Delete {
                    res: "/configmaps".into(),
                    ns: "d".into(),
                    name: "b".into(),
                    policy: Propagation::Foreground
                },
            ]
        );
    }

    /// Both deleted in the foreground by a client: each waits on the other.
    /// The cycle is found and every member unblocked; a plain chain is not.
    #[test]
    fn a_cycle_of_waiting_objects_is_broken() {
        let a = deleting_foreground(v("/configmaps", "d", "a", &[("uid-b", true)]));
        let b = deleting_foreground(v("/configmaps", "d", "b", &[("uid-a", true)]));
        let mut actions = plan(&[a, b]);
        actions.sort_by_key(|a| format!("{a:?}"));
        assert!(
            matches!(&actions[..], [Action::UnblockOwners { name: a, .. }, Action::UnblockOwners { name: b, .. }] if a == "a" && b == "b"),
            "{actions:?}"
        );
        let self_owned = deleting_foreground(v("/configmaps", "d", "s", &[("uid-s", true)]));
        assert!(plan(&[self_owned]).contains(&Action::UnblockOwners {
            res: "/configmaps".into(),
            ns: "d".into(),
            name: "s".into()
        }));
        // A chain waiting on a waiting dependent is no cycle.
        let top = deleting_foreground(v("/configmaps", "d", "top", &[]));
        let mid = deleting_foreground(v("/configmaps", "d", "mid", &[("uid-top", true)]));
        let leaf = v("/configmaps", "d", "leaf", &[("uid-mid", true)]);
        assert!(
            !plan(&[top, mid, leaf])
                .iter()
                .any(|a| matches!(a, Action::UnblockOwners { .. }))
        );
    }

    #[test]
    fn cycles_in_long_chains_without_recursion() {
        // 0 -> 1 -> ... -> 99999 -> 50000: only the tail loop is cyclic.
        let n = 100_000;
        let mut edges: Vec<Vec<usize>> = (0..n)
            .map(|i| if i + 1 < n { vec![i + 1] } else { vec![] })
            .collect();
        edges[n - 1].push(n / 2);
        let c = on_cycles(&edges);
        assert!(!c[0] && !c[n / 2 - 1]);
        assert!(c[n / 2] && c[n - 1]);
    }
}
