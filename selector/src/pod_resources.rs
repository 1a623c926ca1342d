//! What a pod asks for as a whole: its effective requests and limits (app
//! containers summed, init containers as a maximum, sidecars added, pod-level
//! resources and overhead applied) and its QoS class, as the API server's
//! `resourcehelper.PodRequests`/`PodLimits` and `qos.GetPodQOS` compute them.

use std::borrow::Cow;

use serde_json::Value;

use crate::resources::{InvalidQuantity, ResourceList, add_into, parse_list, quantity_from_json};
use crate::{Quantity, resources};

/// The resources pod-level `spec.resources` may set (upstream's supported
/// pod-level resources).
const POD_LEVEL: [&str; 2] = ["cpu", "memory"];

/// A pod's QoS class.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QosClass {
    /// Every container has equal cpu and memory requests and limits.
    Guaranteed,
    /// Some cpu or memory request or limit, not Guaranteed.
    Burstable,
    /// No cpu or memory request or limit anywhere.
    BestEffort,
}

impl QosClass {
    /// The name in `status.qosClass`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Guaranteed => "Guaranteed",
            Self::Burstable => "Burstable",
            Self::BestEffort => "BestEffort",
        }
    }
}

/// One container's requests and limits, parsed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ContainerResources {
    /// `resources.requests`.
    pub requests: ResourceList,
    /// `resources.limits`.
    pub limits: ResourceList,
    /// An init container with `restartPolicy: Always` (a sidecar): it runs
    /// beside the app containers, so what it asks for adds to theirs.
    pub sidecar: bool,
}

/// The resource fields of a pod, parsed once: what its containers ask
/// for, its overhead and its pod-level resources. What a pod is measured
/// by (its effective requests and limits, its QoS class) is computed from
/// these, so a reader that needs several of them parses the pod's
/// quantities once.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PodResources {
    /// `spec.containers`, in order.
    pub containers: Vec<ContainerResources>,
    /// `spec.initContainers`, in order.
    pub init_containers: Vec<ContainerResources>,
    /// `spec.overhead`.
    pub overhead: ResourceList,
    /// Pod-level `spec.resources.requests`, cpu and memory only.
    pub pod_requests: ResourceList,
    /// Pod-level `spec.resources.limits`, cpu and memory only.
    pub pod_limits: ResourceList,
    /// Whether the pod names a pod-level cpu or memory (even one that does
    /// not parse): then those decide its QoS class.
    pub pod_level: bool,
}

/// Which of a container's lists.
#[derive(Clone, Copy)]
enum Which {
    Requests,
    Limits,
}

impl ContainerResources {
    fn list(&self, which: Which) -> &ResourceList {
        match which {
            Which::Requests => &self.requests,
            Which::Limits => &self.limits,
        }
    }
}

/// Reads a resource list; `strict`: the first quantity that does not parse
/// (or a list that is not a map) fails the read, else it is left out.
fn read_list(v: &Value, strict: bool) -> Result<ResourceList, InvalidQuantity> {
    if strict {
        return parse_list(v);
    }
    Ok(v.as_object()
        .into_iter()
        .flatten()
        .filter_map(|(k, q)| Some((k.clone(), quantity_from_json(q).ok()?)))
        .collect())
}

impl PodResources {
    /// Parses a pod's resource fields in the order a decoder meets them
    /// (containers, init containers, overhead, pod-level requests and
    /// limits), failing on the first quantity that does not parse.
    pub fn of(pod: &Value) -> Result<Self, InvalidQuantity> {
        Self::read(pod, true)
    }

    /// As [`PodResources::of`], leaving out quantities that do not parse.
    pub fn lenient(pod: &Value) -> Self {
        Self::read(pod, false).unwrap_or_default()
    }

    fn read(pod: &Value, strict: bool) -> Result<Self, InvalidQuantity> {
        let spec = &pod["spec"];
        let containers = |key: &str| -> Result<Vec<ContainerResources>, InvalidQuantity> {
            spec[key]
                .as_array()
                .into_iter()
                .flatten()
                .map(|c| {
                    Ok(ContainerResources {
                        requests: read_list(&c["resources"]["requests"], strict)?,
                        limits: read_list(&c["resources"]["limits"], strict)?,
                        sidecar: c["restartPolicy"].as_str() == Some("Always"),
                    })
                })
                .collect()
        };
        let containers_read = containers("containers")?;
        let init_containers = containers("initContainers")?;
        let overhead = read_list(&spec["overhead"], strict)?;
        let pod_requests = read_list(&spec["resources"]["requests"], strict)?;
        let pod_limits = read_list(&spec["resources"]["limits"], strict)?;
        Ok(Self {
            containers: containers_read,
            init_containers,
            overhead,
            pod_requests: resources::mask(&pod_requests, POD_LEVEL),
            pod_limits: resources::mask(&pod_limits, POD_LEVEL),
            pod_level: has_pod_level_resources(pod),
        })
    }

    /// Sums app containers, takes init containers as a running maximum
    /// (sidecars also add to the app total), then lets pod-level values win.
    fn aggregate(&self, which: Which) -> ResourceList {
        let mut total = ResourceList::new();
        for c in &self.containers {
            add_into(&mut total, c.list(which));
        }
        // Without init containers (most pods) there is nothing to compare.
        if !self.init_containers.is_empty() {
            let mut sidecars = ResourceList::new();
            let mut init_max = ResourceList::new();
            for c in &self.init_containers {
                let own = c.list(which);
                let effective = if c.sidecar {
                    add_into(&mut total, own);
                    add_into(&mut sidecars, own);
                    sidecars.clone()
                } else {
                    resources::add(own, &sidecars)
                };
                max_into(&mut init_max, &effective);
            }
            max_into(&mut total, &init_max);
        }
        let level = match which {
            Which::Requests => &self.pod_requests,
            Which::Limits => &self.pod_limits,
        };
        for (k, q) in level {
            total.insert(k.clone(), *q);
        }
        total
    }

    /// The pod's effective requests, overhead included.
    pub fn requests(&self) -> ResourceList {
        let mut reqs = self.aggregate(Which::Requests);
        add_into(&mut reqs, &self.overhead);
        reqs
    }

    /// [`PodResources::requests`], borrowed from the one container when
    /// that is all there is to add up (most pods): no copy per read.
    pub fn effective_requests(&self) -> Cow<'_, ResourceList> {
        match self.alone(Which::Requests) {
            Some(c) => Cow::Borrowed(c.list(Which::Requests)),
            None => Cow::Owned(self.requests()),
        }
    }

    /// [`PodResources::limits`], borrowed as [`PodResources::effective_requests`].
    pub fn effective_limits(&self) -> Cow<'_, ResourceList> {
        match self.alone(Which::Limits) {
            Some(c) => Cow::Borrowed(c.list(Which::Limits)),
            None => Cow::Owned(self.limits()),
        }
    }

    /// Whether the pod's totals are its one container's lists (then
    /// [`PodResources::effective_requests`] and `effective_limits` copy
    /// nothing).
    pub fn is_one_container(&self) -> bool {
        self.alone(Which::Requests).is_some() && self.alone(Which::Limits).is_some()
    }

    /// The one container whose list is the pod's total: no other container,
    /// no overhead, no pod-level list. (Adding a list to nothing gives the
    /// same quantities, formats included.)
    fn alone(&self, which: Which) -> Option<&ContainerResources> {
        let level = match which {
            Which::Requests => &self.pod_requests,
            Which::Limits => &self.pod_limits,
        };
        match self.containers.as_slice() {
            [c] if self.init_containers.is_empty()
                && self.overhead.is_empty()
                && level.is_empty() =>
            {
                Some(c)
            }
            _ => None,
        }
    }

    /// The pod's effective limits; overhead is added only to limits that are set.
    pub fn limits(&self) -> ResourceList {
        let mut limits = self.aggregate(Which::Limits);
        for (k, q) in &self.overhead {
            if let Some(l) = limits.get_mut(k) {
                l.add(q);
            }
        }
        limits
    }

    /// The pod's QoS class.
    pub fn qos_class(&self) -> QosClass {
        // Sums of positive cpu and memory requests and limits, by POD_LEVEL index.
        let mut requests: [Option<Quantity>; 2] = [None, None];
        let mut limits: [Option<Quantity>; 2] = [None, None];
        let mut guaranteed = true;
        // Adds the positive cpu and memory of one list; returns which were set.
        let add = |sums: &mut [Option<Quantity>; 2], m: &ResourceList| -> [bool; 2] {
            let mut set = [false; 2];
            for (i, name) in POD_LEVEL.iter().enumerate() {
                if let Some(q) = m.get(*name)
                    && *q > Quantity::ZERO
                {
                    sums[i].get_or_insert(Quantity::ZERO).add(q);
                    set[i] = true;
                }
            }
            set
        };
        if self.pod_level {
            add(&mut requests, &self.pod_requests);
            guaranteed = add(&mut limits, &self.pod_limits) == [true, true];
        } else {
            for c in self.containers.iter().chain(&self.init_containers) {
                add(&mut requests, &c.requests);
                if add(&mut limits, &c.limits) != [true, true] {
                    guaranteed = false;
                }
            }
        }
        if requests.iter().chain(&limits).all(Option::is_none) {
            return QosClass::BestEffort;
        }
        // Guaranteed: every request has an equal limit, and no limit lacks a request.
        if guaranteed && requests == limits {
            QosClass::Guaranteed
        } else {
            QosClass::Burstable
        }
    }
}

/// `a = max(a, b)` per name.
fn max_into(a: &mut ResourceList, b: &ResourceList) {
    for (k, q) in b {
        let e = a.entry(k.clone()).or_insert(*q);
        if q > e {
            *e = *q;
        }
    }
}

/// Whether the pod sets pod-level requests or limits (`spec.resources`).
pub fn has_pod_level_resources(pod: &Value) -> bool {
    let r = &pod["spec"]["resources"];
    ["requests", "limits"].iter().any(|w| {
        r[w].as_object()
            .is_some_and(|m| POD_LEVEL.iter().any(|k| m.contains_key(*k)))
    })
}

/// The pod's effective requests, overhead included.
pub fn pod_requests(pod: &Value) -> Result<ResourceList, InvalidQuantity> {
    Ok(PodResources::of(pod)?.requests())
}

/// The pod's effective limits; overhead is added only to limits that are set.
pub fn pod_limits(pod: &Value) -> Result<ResourceList, InvalidQuantity> {
    Ok(PodResources::of(pod)?.limits())
}

/// The pod's QoS class. Unparsable quantities count as unset (validation
/// refuses them before a pod is stored).
pub fn qos_class(pod: &Value) -> QosClass {
    PodResources::lenient(pod).qos_class()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::resources::list_to_json;

    fn pod(spec: Value) -> Value {
        json!({"spec": spec})
    }

    fn c(name: &str, requests: Value, limits: Value) -> Value {
        json!({"name": name, "resources": {"requests": requests, "limits": limits}})
    }

    #[test]
    fn containers_sum_and_init_containers_take_the_maximum() {
        let p = pod(json!({
            "containers": [
                c("a", json!({"cpu": "100m", "memory": "64Mi"}), json!({"cpu": "1"})),
                c("b", json!({"cpu": "200m"}), json!({"cpu": "500m"})),
            ],
            "initContainers": [
                c("init", json!({"cpu": "1", "memory": "32Mi"}), json!({})),
            ],
        }));
        assert_eq!(
            list_to_json(&pod_requests(&p).unwrap()),
            json!({"cpu": "1", "memory": "64Mi"})
        );
        assert_eq!(
            list_to_json(&pod_limits(&p).unwrap()),
            json!({"cpu": "1500m"})
        );
    }

    #[test]
    fn sidecars_add_and_overhead_counts() {
        let mut sidecar = c("log", json!({"cpu": "100m"}), json!({}));
        sidecar["restartPolicy"] = json!("Always");
        let p = pod(json!({
            "containers": [c("app", json!({"cpu": "200m"}), json!({"cpu": "1"}))],
            "initContainers": [sidecar, c("late", json!({"cpu": "250m"}), json!({}))],
            "overhead": {"cpu": "10m", "memory": "1Mi"},
        }));
        // app 200m + sidecar 100m = 300m; the later init container needs
        // 250m + the sidecar's 100m = 350m, which wins; plus 10m overhead.
        assert_eq!(
            list_to_json(&pod_requests(&p).unwrap()),
            json!({"cpu": "360m", "memory": "1Mi"})
        );
        // Overhead only raises limits that exist.
        assert_eq!(
            list_to_json(&pod_limits(&p).unwrap()),
            json!({"cpu": "1010m"})
        );
    }

    /// The borrowed totals are the summed ones, whichever shape the pod has.
    #[test]
    fn effective_totals_equal_the_summed_ones() {
        let one = pod(
            json!({"containers": [c("a", json!({"cpu": "100m", "memory": "0"}), json!({"cpu": "1Gi"}))]}),
        );
        let two = pod(json!({"containers": [
            c("a", json!({"cpu": "100m"}), json!({"cpu": "1"})),
            c("b", json!({"cpu": "200m"}), json!({"memory": "1Gi"})),
        ]}));
        let overhead = pod(
            json!({"containers": [c("a", json!({"cpu": "100m"}), json!({"cpu": "1"}))],
            "overhead": {"cpu": "10m"}}),
        );
        let level = pod(
            json!({"containers": [c("a", json!({"cpu": "100m"}), json!({"cpu": "1"}))],
            "resources": {"limits": {"cpu": "2"}}}),
        );
        let none = pod(json!({"containers": []}));
        for (p, borrowed) in [
            (one, (true, true)),
            (two, (false, false)),
            (overhead, (false, false)),
            // Only the limits are set at the pod's level.
            (level, (true, false)),
            (none, (false, false)),
        ] {
            let r = PodResources::of(&p).unwrap();
            let (req, lim) = (r.effective_requests(), r.effective_limits());
            assert_eq!(*req, r.requests(), "{p}");
            assert_eq!(*lim, r.limits(), "{p}");
            // Same quantities printed the same: formats agree too.
            assert_eq!(list_to_json(&req), list_to_json(&r.requests()), "{p}");
            assert_eq!(list_to_json(&lim), list_to_json(&r.limits()), "{p}");
            let shown = (
                matches!(req, Cow::Borrowed(_)),
                matches!(lim, Cow::Borrowed(_)),
            );
            assert_eq!(shown, borrowed, "{p}");
            assert_eq!(r.is_one_container(), borrowed == (true, true), "{p}");
        }
    }

    #[test]
    fn pod_level_resources_win() {
        let p = pod(json!({
            "resources": {"requests": {"cpu": "2"}},
            "containers": [c("a", json!({"cpu": "100m", "memory": "1Gi"}), json!({}))],
        }));
        assert_eq!(
            list_to_json(&pod_requests(&p).unwrap()),
            json!({"cpu": "2", "memory": "1Gi"})
        );
        assert!(has_pod_level_resources(&p));
    }

    #[test]
    fn qos_classes() {
        let both = json!({"cpu": "1", "memory": "1Gi"});
        let g = pod(json!({"containers": [c("a", both.clone(), both.clone())]}));
        assert_eq!(qos_class(&g), QosClass::Guaranteed);
        let b = pod(json!({"containers": [c("a", json!({"cpu": "500m"}), both.clone())]}));
        assert_eq!(qos_class(&b), QosClass::Burstable);
        let half = pod(json!({"containers": [
            c("a", both.clone(), both.clone()),
            c("b", json!({}), json!({})),
        ]}));
        assert_eq!(qos_class(&half), QosClass::Burstable);
        let e = pod(
            json!({"containers": [c("a", json!({"cpu": "0"}), json!({"example.com/gpu": "1"}))]}),
        );
        assert_eq!(qos_class(&e), QosClass::BestEffort);
        assert_eq!(
            qos_class(&pod(json!({"containers": [{"name": "a"}]}))),
            QosClass::BestEffort
        );
        assert!(
            pod_requests(&pod(
                json!({"containers": [c("a", json!({"cpu": "x"}), json!({}))]})
            ))
            .is_err()
        );
    }
}
