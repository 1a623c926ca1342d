//! The annotations that make `kubectl rollout history` and `undo` work:
//! the revision a ReplicaSet serves, the revisions it served before, the
//! Deployment's annotations copied onto it (`kubernetes.io/change-cause`
//! among them), and the sizes it was last scaled for.

use crate::model::{
    DESIRED_REPLICAS, Deployment, MAX_REPLICAS, REVISION, REVISION_HISTORY, ReplicaSet,
};

/// Upstream keeps `revision-history` under this many characters.
const MAX_HISTORY_CHARS: usize = 2000;

/// Deployment annotations never copied to its ReplicaSets (`annotationsToSkip`).
const NOT_COPIED: [&str; 6] = [
    "kubectl.kubernetes.io/last-applied-configuration",
    REVISION,
    REVISION_HISTORY,
    DESIRED_REPLICAS,
    MAX_REPLICAS,
    "deprecated.deployment.rollback.to",
];

/// The highest revision among `rss` (unreadable ones skipped; 0 if none).
pub(crate) fn max_revision<'a>(rss: impl IntoIterator<Item = &'a ReplicaSet>) -> i64 {
    rss.into_iter()
        .filter_map(|rs| rs.revision().ok())
        .fold(0, i64::max)
}

/// Sets a ReplicaSet's annotations for serving the Deployment's template
/// as `new_revision` (`SetNewReplicaSetAnnotations`): the Deployment's
/// annotations are copied; a lower revision is raised, and the one it
/// replaces appended to `revision-history` (a rollback to this ReplicaSet);
/// a ReplicaSet about to be created also gets its replica annotations.
/// Returns whether anything changed.
pub(crate) fn set_new_rs_annotations(
    d: &Deployment,
    rs: &mut ReplicaSet,
    new_revision: i64,
    exists: bool,
    max_surge: i64,
) -> bool {
    let old = rs.annotations.get(REVISION).cloned();
    let old_revision = match old.as_deref() {
        None | Some("") => 0,
        Some(v) => match v.parse::<i64>() {
            Ok(n) => n,
            // Upstream leaves a ReplicaSet with a garbled revision alone.
            Err(_) => return false,
        },
    };
    let mut changed = false;
    for (k, v) in &d.annotations {
        if !NOT_COPIED.contains(&k.as_str()) {
            changed |= rs.set_annotation(k, v);
        }
    }
    if old_revision < new_revision {
        changed |= rs.set_annotation(REVISION, &new_revision.to_string());
        if let Some(old) = old {
            let history = rs
                .annotations
                .get(REVISION_HISTORY)
                .cloned()
                .unwrap_or_default();
            if let Some(history) = append_history(&history, &old) {
                changed |= rs.set_annotation(REVISION_HISTORY, &history);
            }
        }
    }
    if !exists {
        changed |= set_replicas_annotations(rs, d.replicas, d.replicas + max_surge);
    }
    changed
}

/// `history` with `old` appended, dropping the oldest entries to stay
/// within the limit; `None` if even that does not fit.
fn append_history(history: &str, old: &str) -> Option<String> {
    if history.is_empty() {
        return Some(old.to_owned());
    }
    let entries: Vec<&str> = history.split(',').collect();
    let mut total = history.len() + old.len() + 1;
    let mut start = 0;
    while total > MAX_HISTORY_CHARS && start < entries.len() {
        total -= entries[start].len() + 1;
        start += 1;
    }
    if total > MAX_HISTORY_CHARS {
        return None;
    }
    let mut kept = entries[start..].to_vec();
    kept.push(old);
    Some(kept.join(","))
}

/// Whether the replica annotations differ from these counts.
pub(crate) fn replicas_annotations_need_update(rs: &ReplicaSet, desired: i64, max: i64) -> bool {
    rs.annotations.get(DESIRED_REPLICAS) != Some(&desired.to_string())
        || rs.annotations.get(MAX_REPLICAS) != Some(&max.to_string())
}

/// Sets `desired-replicas` and `max-replicas`; returns whether they changed.
pub(crate) fn set_replicas_annotations(rs: &mut ReplicaSet, desired: i64, max: i64) -> bool {
    let a = rs.set_annotation(DESIRED_REPLICAS, &desired.to_string());
    let b = rs.set_annotation(MAX_REPLICAS, &max.to_string());
    a || b
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn history_appends_and_trims() {
        assert_eq!(append_history("", "3").as_deref(), Some("3"));
        assert_eq!(append_history("1,3", "5").as_deref(), Some("1,3,5"));
        // Near the limit the oldest entries go.
        let long = vec!["123456789"; 200].join(",");
        assert_eq!(long.len(), 1999);
        let appended = append_history(&long, "77").unwrap();
        assert!(appended.len() <= MAX_HISTORY_CHARS);
        assert!(appended.ends_with(",77"));
        assert_eq!(appended.split(',').count(), 200);
    }
}
