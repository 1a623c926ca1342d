//! The message of a pod that fits nowhere, worded and ordered as
//! kube-scheduler's `FitError.Error()`: `0/3 nodes are available: 1 node(s)
//! had untolerated taint {dedicated: gpu}, 2 node(s) didn't match Pod's
//! node affinity/selector.` — each reason counted over the nodes that gave
//! it (a node short of cpu and memory counts for both), the
//! `"<count> <reason>"` strings sorted as strings, joined by `, `.
//!
//! kube-scheduler then appends what preemption found (`preemption: 0/3
//! nodes are available: 3 Preemption is not helpful for scheduling.`,
//! see `preemption`).

use std::collections::HashMap;

/// The message when there are no nodes at all (`ErrNoNodesAvailable`).
pub(crate) const NO_NODES: &str = "no nodes available to schedule pods";

/// Event notes and condition messages longer than this are cut
/// (`validation.NoteLengthLimit`).
const NOTE_LENGTH_LIMIT: usize = 1024;

/// The message for `nodes` nodes that failed with `reasons` (one entry per
/// node and reason).
pub(crate) fn message(nodes: usize, reasons: impl IntoIterator<Item = String>) -> String {
    let mut counts: HashMap<String, usize> = HashMap::new();
    for r in reasons {
        *counts.entry(r).or_insert(0) += 1;
    }
    let mut parts: Vec<String> = counts
        .into_iter()
        .map(|(reason, n)| format!("{n} {reason}"))
        .collect();
    parts.sort();
    let mut msg = format!("0/{nodes} nodes are available:");
    if !parts.is_empty() {
        msg.push(' ');
        msg.push_str(&parts.join(", "));
        msg.push('.');
    }
    msg
}

/// `message` with what a post-filter (preemption) said, as upstream
/// appends it (`<message> <post>.`, so a `post` ending in a full stop
/// ends in two, as kube-scheduler's do).
pub(crate) fn with_post_filter(message: String, post: &str) -> String {
    format!("{message} {post}.")
}

/// The message when a pre-filter rejects the pod outright, with what
/// preemption says of it (no node can help).
pub(crate) fn pre_filter_rejection(nodes: usize, reason: &str) -> String {
    let helpless = std::iter::repeat_n(crate::preemption::NOT_HELPFUL.to_owned(), nodes);
    let post = format!("preemption: {}", message(nodes, helpless));
    with_post_filter(pre_filter_message(nodes, reason), &post)
}

/// The message when a pre-filter rejects the pod outright.
pub(crate) fn pre_filter_message(nodes: usize, reason: &str) -> String {
    format!("0/{nodes} nodes are available: {reason}.")
}

/// Cuts a message to what an Event note may hold, as kube-scheduler does.
pub(crate) fn truncate(message: &str) -> String {
    if message.len() <= NOTE_LENGTH_LIMIT {
        return message.to_owned();
    }
    let suffix = " ...";
    let mut end = NOTE_LENGTH_LIMIT - suffix.len();
    while !message.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}{suffix}", &message[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owned(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn counts_and_orders_reasons_like_kube_scheduler() {
        // (nodes, one reason per failed node and reason, message)
        let table: &[(usize, &[&str], &str)] = &[
            (
                3,
                &[
                    "node(s) didn't match Pod's node affinity/selector",
                    "node(s) had untolerated taint {dedicated: gpu}",
                    "node(s) didn't match Pod's node affinity/selector",
                ],
                "0/3 nodes are available: 1 node(s) had untolerated taint {dedicated: gpu}, \
                 2 node(s) didn't match Pod's node affinity/selector.",
            ),
            (
                2,
                &[
                    "Insufficient cpu",
                    "Insufficient memory",
                    "Insufficient cpu",
                ],
                "0/2 nodes are available: 1 Insufficient memory, 2 Insufficient cpu.",
            ),
            (
                1,
                &["node(s) didn't match pod anti-affinity rules"],
                "0/1 nodes are available: 1 node(s) didn't match pod anti-affinity rules.",
            ),
            // Sorted as strings, as upstream does: "12 …" before "3 …".
            (
                15,
                &[
                    &["Too many pods"; 12][..],
                    &["node(s) were unschedulable"; 3][..],
                ]
                .concat(),
                "0/15 nodes are available: 12 Too many pods, 3 node(s) were unschedulable.",
            ),
            (0, &[], "0/0 nodes are available:"),
        ];
        for (nodes, reasons, want) in table {
            assert_eq!(message(*nodes, owned(reasons)), *want);
        }
    }

    #[test]
    fn pre_filter_messages() {
        assert_eq!(
            pre_filter_message(4, "pod affinity terms conflict"),
            "0/4 nodes are available: pod affinity terms conflict."
        );
    }

    #[test]
    fn long_messages_are_cut() {
        let long = "x".repeat(2000);
        let cut = truncate(&long);
        assert_eq!(cut.len(), 1024);
        assert!(cut.ends_with(" ..."));
        assert_eq!(truncate("short"), "short");
    }
}
