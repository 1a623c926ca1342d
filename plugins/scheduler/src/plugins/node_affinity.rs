//! `NodeAffinity`: `spec.nodeSelector` and required node affinity filter
//! nodes; preferred node affinity scores them (the sum of the weights of
//! the terms a node matches, scaled to the best node).
//!
//! Its pre-filter narrows the nodes to look at when every required term
//! pins node names with `matchFields` `metadata.name In`; the others are
//! then reported as not satisfying the plugin, as kube-scheduler does.

use super::{Reason, default_normalize};
use crate::node::NodeInfo;
use crate::pod::PodInfo;
use crate::selector::Labels;

pub(crate) const REASON: &str = "node(s) didn't match Pod's node affinity/selector";
pub(crate) const REASON_NOT_PRE_FILTERED: &str = "node(s) didn't satisfy plugin(s) [NodeAffinity]";
/// The pre-filter's message when the pinned names of all terms are empty.
pub(crate) const REASON_CONFLICT: &str = "pod affinity terms conflict";

/// Which nodes the pre-filter leaves.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum PreFilter<'a> {
    All,
    Names(Vec<&'a str>),
    Conflict,
}

pub(crate) fn pre_filter<'a>(pod: &'a PodInfo<'_>) -> PreFilter<'a> {
    let Some(terms) = &pod.required_node_affinity else {
        return PreFilter::All;
    };
    if terms.is_empty() {
        return PreFilter::All;
    }
    let mut names: Vec<&str> = Vec::new();
    for t in terms {
        // A term that does not pin names lets every node through (terms are ORed).
        let Some(pinned) = t.pinned_names() else {
            return PreFilter::All;
        };
        for n in pinned {
            if !names.contains(&n) {
                names.push(n);
            }
        }
    }
    if names.is_empty() {
        PreFilter::Conflict
    } else {
        PreFilter::Names(names)
    }
}

/// Whether the node matches the pod's node selector and required node
/// affinity (`RequiredNodeAffinity.Match`).
pub(crate) fn required_matches(pod: &PodInfo<'_>, node: &NodeInfo<'_>) -> bool {
    let selector_ok = pod
        .node_selector
        .iter()
        .all(|(k, v)| node.label(k) == Some(v.as_bytes()));
    selector_ok
        && pod
            .required_node_affinity
            .as_ref()
            .is_none_or(|terms| terms.iter().any(|t| t.matches(node.name, node)))
}

pub(crate) fn filter(pod: &PodInfo<'_>, node: &NodeInfo<'_>) -> Option<Reason> {
    (!required_matches(pod, node)).then_some(Reason::NodeAffinity)
}

/// The sum of the weights of the preferred terms the node matches.
pub(crate) fn score(pod: &PodInfo<'_>, node: &NodeInfo<'_>) -> i64 {
    pod.preferred_node_affinity
        .iter()
        .filter(|(_, t)| t.matches(node.name, node))
        .map(|(w, _)| i64::from(*w))
        .sum()
}

pub(crate) fn normalize(scores: &mut [i64]) {
    default_normalize(scores, false);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{node, with_pod};

    fn required(exprs: &str) -> String {
        format!(
            r#"{{"affinity":{{"nodeAffinity":{{"requiredDuringSchedulingIgnoredDuringExecution":
                {{"nodeSelectorTerms":[{exprs}]}}}}}}}}"#
        )
    }

    #[test]
    fn selector_and_required_affinity_filter_nodes() {
        let labels = [("zone", "a"), ("disk", "ssd"), ("cores", "8")];
        // (pod spec, passes?)
        let table: Vec<(String, bool)> = vec![
            (r#"{}"#.into(), true),
            (r#"{"nodeSelector":{"zone":"a"}}"#.into(), true),
            (
                r#"{"nodeSelector":{"zone":"a","disk":"hdd"}}"#.into(),
                false,
            ),
            (r#"{"nodeSelector":{"gpu":"true"}}"#.into(), false),
            (
                required(
                    r#"{"matchExpressions":[{"key":"zone","operator":"In","values":["a","b"]}]}"#,
                ),
                true,
            ),
            (
                required(
                    r#"{"matchExpressions":[{"key":"zone","operator":"NotIn","values":["a"]}]}"#,
                ),
                false,
            ),
            (
                required(r#"{"matchExpressions":[{"key":"gpu","operator":"DoesNotExist"}]}"#),
                true,
            ),
            (
                required(r#"{"matchExpressions":[{"key":"disk","operator":"Exists"}]}"#),
                true,
            ),
            (
                required(
                    r#"{"matchExpressions":[{"key":"cores","operator":"Gt","values":["4"]}]}"#,
                ),
                true,
            ),
            (
                required(
                    r#"{"matchExpressions":[{"key":"cores","operator":"Lt","values":["4"]}]}"#,
                ),
                false,
            ),
            (
                required(
                    r#"{"matchFields":[{"key":"metadata.name","operator":"In","values":["n1"]}]}"#,
                ),
                true,
            ),
            (
                required(
                    r#"{"matchFields":[{"key":"metadata.name","operator":"NotIn","values":["n1"]}]}"#,
                ),
                false,
            ),
            // Terms are ORed, expressions ANDed.
            (
                required(
                    r#"{"matchExpressions":[{"key":"zone","operator":"In","values":["b"]}]},
                            {"matchExpressions":[{"key":"disk","operator":"In","values":["ssd"]}]}"#,
                ),
                true,
            ),
            (
                required(
                    r#"{"matchExpressions":[{"key":"zone","operator":"In","values":["a"]},
                                                 {"key":"disk","operator":"In","values":["hdd"]}]}"#,
                ),
                false,
            ),
            // An empty term matches nothing; so does an empty list of terms.
            (required(r#"{}"#), false),
            (required(""), false),
            // Both the node selector and the affinity must hold.
            (
                format!(
                    r#"{{"nodeSelector":{{"zone":"b"}},{}"#,
                    &required(r#"{"matchExpressions":[{"key":"disk","operator":"Exists"}]}"#)[1..]
                ),
                false,
            ),
        ];
        let n = node("n1", &labels, &[]);
        for (spec, pass) in &table {
            let got = with_pod("p", &[], spec, |p| filter(p, &n.info()));
            let want = (!pass).then_some(Reason::NodeAffinity);
            assert_eq!(got, want, "{spec}");
        }
    }

    #[test]
    fn pre_filter_narrows_to_pinned_names() {
        let table: Vec<(String, &str)> = vec![
            (r#"{}"#.into(), "All"),
            (
                required(
                    r#"{"matchFields":[{"key":"metadata.name","operator":"In","values":["n1"]}]}"#,
                ),
                r#"Names(["n1"])"#,
            ),
            (
                required(
                    r#"{"matchFields":[{"key":"metadata.name","operator":"In","values":["n1"]}]},
                            {"matchFields":[{"key":"metadata.name","operator":"In","values":["n2"]}]}"#,
                ),
                r#"Names(["n1", "n2"])"#,
            ),
            (
                required(
                    r#"{"matchFields":[{"key":"metadata.name","operator":"In","values":["n1"]}]},
                            {"matchExpressions":[{"key":"zone","operator":"Exists"}]}"#,
                ),
                "All",
            ),
            (
                required(
                    r#"{"matchFields":[{"key":"metadata.name","operator":"In","values":["n1"]},
                                            {"key":"metadata.name","operator":"In","values":["n2"]}]}"#,
                ),
                "Conflict",
            ),
        ];
        for (spec, want) in &table {
            let got = with_pod("p", &[], spec, |p| format!("{:?}", pre_filter(p)));
            assert_eq!(&got, want, "{spec}");
        }
    }

    #[test]
    fn score_sums_the_weights_of_matching_preferred_terms() {
        let spec = r#"{"affinity":{"nodeAffinity":{"preferredDuringSchedulingIgnoredDuringExecution":[
            {"weight":5,"preference":{"matchExpressions":[{"key":"zone","operator":"In","values":["a"]}]}},
            {"weight":3,"preference":{"matchExpressions":[{"key":"disk","operator":"In","values":["ssd"]}]}},
            {"weight":7,"preference":{}}]}}}"#;
        // (node labels, raw score)
        let table: &[(&[(&str, &str)], i64)] = &[
            (&[], 0),
            (&[("zone", "a")], 5),
            (&[("disk", "ssd")], 3),
            (&[("zone", "a"), ("disk", "ssd")], 8),
        ];
        for (labels, want) in table {
            let n = node("n1", labels, &[]);
            let got = with_pod("p", &[], spec, |p| score(p, &n.info()));
            assert_eq!(got, *want, "{labels:?}");
        }
        let mut scores = [0, 5, 3, 8];
        normalize(&mut scores);
        assert_eq!(scores, [0, 62, 37, 100]);
    }
}
