//! `NodeName`: a pod that names a node fits only that node.
//!
//! Pods this scheduler reconciles have no `spec.nodeName` (a pod naming a
//! node is not the scheduler's to place), so this filter never rejects one
//! of them; it is kept so that a decision reads like kube-scheduler's.

use super::Reason;
use crate::node::NodeInfo;
use crate::pod::PodInfo;

pub(crate) const REASON: &str = "node(s) didn't match the requested node name";

pub(crate) fn filter(pod: &PodInfo<'_>, node: &NodeInfo<'_>) -> Option<Reason> {
    pod.node_name
        .is_some_and(|n| n.as_bytes() != node.name)
        .then_some(Reason::NodeName)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{node, with_pod};

    #[test]
    fn only_the_named_node_fits() {
        let table: &[(&str, Option<Reason>)] = &[
            (r#"{}"#, None),
            (r#"{"nodeName":""}"#, None),
            (r#"{"nodeName":"n1"}"#, None),
            (r#"{"nodeName":"n2"}"#, Some(Reason::NodeName)),
        ];
        let n1 = node("n1", &[], &[]);
        for (spec, want) in table {
            let got = with_pod("p", &[], spec, |p| filter(p, &n1.info()));
            assert_eq!(got, *want, "{spec}");
        }
    }
}
