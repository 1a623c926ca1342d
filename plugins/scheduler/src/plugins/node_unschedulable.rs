//! `NodeUnschedulable`: a cordoned node (`spec.unschedulable`) takes only
//! pods that tolerate the `node.kubernetes.io/unschedulable:NoSchedule`
//! taint, which is how kube-scheduler lets them through too.

use super::Reason;
use crate::node::{Effect, NodeInfo, Taint};
use crate::pod::PodInfo;

pub(crate) const REASON: &str = "node(s) were unschedulable";

/// The taint a cordoned node stands for.
const TAINT: Taint<'static> = Taint {
    key: "node.kubernetes.io/unschedulable",
    value: "",
    effect: Effect::NoSchedule,
};

pub(crate) fn filter(pod: &PodInfo<'_>, node: &NodeInfo<'_>) -> Option<Reason> {
    (node.unschedulable && !pod.tolerates(&TAINT)).then_some(Reason::Unschedulable)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{node, unschedulable_node, with_pod};

    #[test]
    fn cordoned_nodes_take_only_pods_that_tolerate_it() {
        // (pod spec, node cordoned?, result)
        let table: &[(&str, bool, Option<Reason>)] = &[
            (r#"{}"#, false, None),
            (r#"{}"#, true, Some(Reason::Unschedulable)),
            (
                r#"{"tolerations":[{"key":"node.kubernetes.io/unschedulable","operator":"Exists","effect":"NoSchedule"}]}"#,
                true,
                None,
            ),
            (r#"{"tolerations":[{"operator":"Exists"}]}"#, true, None),
            (
                r#"{"tolerations":[{"key":"node.kubernetes.io/unschedulable","operator":"Exists","effect":"NoExecute"}]}"#,
                true,
                Some(Reason::Unschedulable),
            ),
            (
                r#"{"tolerations":[{"key":"node.kubernetes.io/unschedulable","value":"true"}]}"#,
                true,
                Some(Reason::Unschedulable),
            ),
        ];
        for (spec, cordoned, want) in table {
            let n = if *cordoned {
                unschedulable_node("n1")
            } else {
                node("n1", &[], &[])
            };
            let got = with_pod("p", &[], spec, |p| filter(p, &n.info()));
            assert_eq!(got, *want, "{spec} cordoned={cordoned}");
        }
    }
}
