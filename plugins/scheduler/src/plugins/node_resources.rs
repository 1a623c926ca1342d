//! `NodeResourcesFit` and `NodeResourcesBalancedAllocation`.
//!
//! Fit filters nodes whose allocatable cpu, memory, ephemeral storage or pod
//! count, minus what the pods bound there request, cannot hold the pod; it
//! scores with its default `LeastAllocated` strategy (cpu and memory,
//! weight 1 each, counting default requests for containers that name
//! none). Balanced allocation favours nodes whose cpu and memory would be
//! used in equal fractions; it skips pods that request nothing.

use super::{MAX_NODE_SCORE, Reason, Usage};
use crate::node::Allocatable;
use crate::pod::PodInfo;

/// Which resources a node is short of, in kube-scheduler's order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Shortage(u8);

impl Shortage {
    const PODS: u8 = 1;
    const CPU: u8 = 2;
    const MEMORY: u8 = 4;
    const EPHEMERAL: u8 = 8;
    const TEXTS: [(u8, &'static str); 4] = [
        (Self::PODS, "Too many pods"),
        (Self::CPU, "Insufficient cpu"),
        (Self::MEMORY, "Insufficient memory"),
        (Self::EPHEMERAL, "Insufficient ephemeral-storage"),
    ];

    /// Every reason, as the filter reports them all.
    pub(crate) fn texts(self, out: &mut Vec<String>) {
        for (bit, text) in Self::TEXTS {
            if self.0 & bit != 0 {
                out.push(text.to_owned());
            }
        }
    }
}

/// `fitsRequest`: the pod count always counts; resources only when the pod
/// requests them.
pub(crate) fn filter(pod: &PodInfo<'_>, alloc: &Allocatable, usage: &Usage) -> Option<Reason> {
    let mut short = 0;
    if usage.pods + 1 > alloc.pods {
        short |= Shortage::PODS;
    }
    let req = &pod.requests;
    let used = &usage.requested;
    if req.cpu > 0 && req.cpu > alloc.cpu - used.cpu {
        short |= Shortage::CPU;
    }
    if req.memory > 0 && req.memory > alloc.memory - used.memory {
        short |= Shortage::MEMORY;
    }
    if req.ephemeral > 0 && req.ephemeral > alloc.ephemeral - used.ephemeral {
        short |= Shortage::EPHEMERAL;
    }
    (short != 0).then_some(Reason::Fit(Shortage(short)))
}

/// `leastRequestedScore`: the unused share of a resource, 0..=100.
fn least_requested(requested: i64, capacity: i64) -> i64 {
    if capacity == 0 || requested > capacity {
        return 0;
    }
    (capacity - requested) * MAX_NODE_SCORE / capacity
}

/// The `LeastAllocated` score: the average unused share of cpu and memory
/// once the pod is placed (resources the node has none of are left out).
pub(crate) fn least_allocated(pod: &PodInfo<'_>, alloc: &Allocatable, usage: &Usage) -> i64 {
    let resources = [
        (alloc.cpu, usage.scoring_cpu + pod.scoring_requests.cpu),
        (
            alloc.memory,
            usage.scoring_memory + pod.scoring_requests.memory,
        ),
    ];
    let (mut sum, mut weights) = (0, 0);
    for (capacity, requested) in resources {
        if capacity == 0 {
            continue;
        }
        sum += least_requested(requested, capacity);
        weights += 1;
    }
    if weights == 0 { 0 } else { sum / weights }
}

/// Whether balanced allocation scores this pod (it skips best-effort pods,
/// which would otherwise all pile onto the same node).
pub(crate) fn balanced_applies(pod: &PodInfo<'_>) -> bool {
    pod.requests.cpu != 0 || pod.requests.memory != 0
}

/// The balanced allocation score: `(1 - std) × 100` of the used fractions of
/// cpu and memory once the pod is placed (for two resources the standard
/// deviation is half their difference).
pub(crate) fn balanced_allocation(pod: &PodInfo<'_>, alloc: &Allocatable, usage: &Usage) -> i64 {
    let resources = [
        (alloc.cpu, usage.requested.cpu + pod.requests.cpu),
        (alloc.memory, usage.requested.memory + pod.requests.memory),
    ];
    let mut fractions = [0.0f64; 2];
    let mut n = 0;
    for (capacity, requested) in resources {
        if capacity == 0 {
            continue;
        }
        fractions[n] = (requested as f64 / capacity as f64).min(1.0);
        n += 1;
    }
    let std = if n == 2 {
        ((fractions[0] - fractions[1]) / 2.0).abs()
    } else {
        0.0
    };
    ((1.0 - std) * MAX_NODE_SCORE as f64) as i64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::requests::Requests;
    use crate::testutil::with_pod;

    const GI: i64 = 1 << 30;

    fn alloc(cpu: i64, memory: i64, pods: i64) -> Allocatable {
        Allocatable {
            cpu,
            memory,
            ephemeral: 10 * GI,
            pods,
        }
    }

    fn usage(cpu: i64, memory: i64, pods: i64) -> Usage {
        Usage {
            requested: Requests {
                cpu,
                memory,
                ephemeral: 0,
            },
            pods,
            scoring_cpu: cpu,
            scoring_memory: memory,
        }
    }

    fn texts(r: Option<Reason>) -> Vec<String> {
        let mut out = Vec::new();
        if let Some(Reason::Fit(s)) = r {
            s.texts(&mut out);
        }
        out
    }

    #[test]
    fn fit_reports_every_shortage() {
        let pod = |cpu: &str, mem: &str| {
            format!(
                r#"{{"containers":[{{"resources":{{"requests":{{"cpu":"{cpu}","memory":"{mem}"}}}}}}]}}"#
            )
        };
        let node = alloc(4000, 8 * GI, 10);
        // (pod spec, usage, reasons)
        let table: Vec<(String, Usage, &[&str])> = vec![
            (pod("1", "1Gi"), usage(0, 0, 0), &[]),
            (pod("1", "1Gi"), usage(3000, 7 * GI, 9), &[]),
            (pod("1", "1Gi"), usage(3001, 0, 0), &["Insufficient cpu"]),
            (
                pod("1", "1Gi"),
                usage(0, 7 * GI + 1, 0),
                &["Insufficient memory"],
            ),
            (pod("1", "1Gi"), usage(0, 0, 10), &["Too many pods"]),
            (
                pod("5", "9Gi"),
                usage(0, 0, 10),
                &["Too many pods", "Insufficient cpu", "Insufficient memory"],
            ),
            // A pod requesting nothing only needs a pod slot.
            (r#"{"containers":[{}]}"#.into(), usage(4000, 8 * GI, 9), &[]),
            (
                r#"{"containers":[{}]}"#.into(),
                usage(4000, 8 * GI, 10),
                &["Too many pods"],
            ),
            // Ephemeral storage counts too.
            (
                r#"{"containers":[{"resources":{"requests":{"ephemeral-storage":"11Gi"}}}]}"#
                    .into(),
                usage(0, 0, 0),
                &["Insufficient ephemeral-storage"],
            ),
        ];
        for (spec, u, want) in &table {
            let got = with_pod("p", &[], spec, |p| texts(filter(p, &node, u)));
            assert_eq!(got, *want, "{spec} {u:?}");
        }
    }

    #[test]
    fn least_allocated_prefers_free_nodes() {
        let spec = r#"{"containers":[{"resources":{"requests":{"cpu":"1","memory":"2Gi"}}}]}"#;
        // (allocatable, usage, score)
        let table: &[(Allocatable, Usage, i64)] = &[
            // cpu (4-1)/4 = 75, memory (8-2)/8 = 75.
            (alloc(4000, 8 * GI, 110), usage(0, 0, 0), 75),
            // cpu (4-3)/4 = 25, memory (8-4)/8 = 50: (25+50)/2.
            (alloc(4000, 8 * GI, 110), usage(2000, 2 * GI, 2), 37),
            // Over capacity scores 0 for that resource.
            (alloc(4000, 8 * GI, 110), usage(4000, 0, 1), 37),
            // A resource the node has none of is left out.
            (alloc(0, 8 * GI, 110), usage(0, 0, 0), 75),
            (alloc(0, 0, 110), usage(0, 0, 0), 0),
        ];
        for (a, u, want) in table {
            let got = with_pod("p", &[], spec, |p| least_allocated(p, a, u));
            assert_eq!(got, *want, "{a:?} {u:?}");
        }
        // Containers without requests count 100m and 200Mi.
        let got = with_pod("p", &[], r#"{"containers":[{}]}"#, |p| {
            least_allocated(p, &alloc(1000, 2000 << 20, 110), &usage(0, 0, 0))
        });
        assert_eq!(got, (90 + 90) / 2);
    }

    #[test]
    fn balanced_allocation_prefers_even_use() {
        let spec = r#"{"containers":[{"resources":{"requests":{"cpu":"1","memory":"2Gi"}}}]}"#;
        let table: &[(Allocatable, Usage, i64)] = &[
            // 1/4 cpu and 2/8 memory: perfectly even.
            (alloc(4000, 8 * GI, 110), usage(0, 0, 0), 100),
            // 3/4 cpu and 2/8 memory: std 0.25.
            (alloc(4000, 8 * GI, 110), usage(2000, 0, 0), 75),
            // Fractions are capped at 1: 1 and 2/8.
            (alloc(1000, 8 * GI, 110), usage(1000, 0, 0), 62),
        ];
        for (a, u, want) in table {
            let got = with_pod("p", &[], spec, |p| balanced_allocation(p, a, u));
            assert_eq!(got, *want, "{a:?} {u:?}");
        }
        assert!(!with_pod("p", &[], r#"{"containers":[{}]}"#, |p| {
            balanced_applies(p)
        }));
        assert!(with_pod("p", &[], spec, balanced_applies));
    }
}
