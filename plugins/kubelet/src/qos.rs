//! A pod's QoS class (`status.qosClass`), as `ComputePodQOS` in
//! `pkg/apis/core/v1/helper/qos` decides it from cpu and memory.

use std::collections::BTreeMap;

use crate::quantity::{self, Nanos};
use crate::view::PodSpec;

/// `Guaranteed`, `Burstable` or `BestEffort`.
pub(crate) fn class(spec: &PodSpec<'_>) -> &'static str {
    let mut requests: BTreeMap<&str, Nanos> = BTreeMap::new();
    let mut limits: BTreeMap<&str, Nanos> = BTreeMap::new();
    let mut guaranteed = true;
    for c in spec.containers.iter().chain(&spec.init_containers) {
        let positive = |q: &str| quantity::parse(q).filter(|n| *n > 0);
        let mut found_limits = 0;
        for name in ["cpu", "memory"] {
            let limit = c.resources.limits.get(name).and_then(|q| positive(q));
            // The API server defaults a missing request to the limit.
            let request = match c.resources.requests.get(name) {
                Some(q) => positive(q),
                None => limit,
            };
            if let Some(r) = request {
                *requests.entry(name).or_default() += r;
            }
            if let Some(l) = limit {
                *limits.entry(name).or_default() += l;
                found_limits += 1;
            }
        }
        if found_limits < 2 {
            guaranteed = false;
        }
    }
    if requests.is_empty() && limits.is_empty() {
        return "BestEffort";
    }
    if guaranteed
        && requests.len() == limits.len()
        && requests.iter().all(|(k, r)| limits.get(k) == Some(r))
    {
        "Guaranteed"
    } else {
        "Burstable"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes() {
        for (containers, want) in [
            (r#"[{"name":"a"}]"#, "BestEffort"),
            (
                r#"[{"name":"a","resources":{"requests":{"cpu":"0"}}}]"#,
                "BestEffort",
            ),
            (
                r#"[{"name":"a","resources":{"requests":{"cpu":"100m"}}}]"#,
                "Burstable",
            ),
            (
                r#"[{"name":"a","resources":{"limits":{"cpu":"1","memory":"1Gi"}}}]"#,
                "Guaranteed",
            ),
            (
                r#"[{"name":"a","resources":{"requests":{"cpu":"1000m","memory":"1024Mi"},"limits":{"cpu":"1","memory":"1Gi"}}}]"#,
                "Guaranteed",
            ),
            (
                r#"[{"name":"a","resources":{"requests":{"cpu":"500m","memory":"1Gi"},"limits":{"cpu":"1","memory":"1Gi"}}}]"#,
                "Burstable",
            ),
            (
                r#"[{"name":"a","resources":{"limits":{"cpu":"1","memory":"1Gi"}}},{"name":"b"}]"#,
                "Burstable",
            ),
        ] {
            let text = format!(r#"{{"containers":{containers}}}"#);
            let spec: PodSpec<'_> = serde_json::from_str(&text).unwrap();
            assert_eq!(class(&spec), want, "{containers}");
        }
    }
}
