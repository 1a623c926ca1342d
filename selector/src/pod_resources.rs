//! What a pod asks for as a whole: its effective requests and limits (app
//! containers summed, init containers as a maximum, sidecars added, pod-level
//! resources and overhead applied) and its QoS class, as the API server's
//! `resourcehelper.PodRequests`/`PodLimits` and `qos.GetPodQOS` compute them.

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

/// `spec.containers` and `spec.initContainers` of a pod (or a pod spec).
fn containers<'a>(spec: &'a Value, key: &str) -> impl Iterator<Item = &'a Value> {
    spec[key].as_array().into_iter().flatten()
}

fn resources_of(c: &Value, which: &str) -> Result<ResourceList, InvalidQuantity> {
    parse_list(&c["resources"][which])
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

/// Whether pod-level `spec.resources.<which>` sets cpu or memory.
fn pod_level(spec: &Value, which: &str) -> Result<ResourceList, InvalidQuantity> {
    let all = parse_list(&spec["resources"][which])?;
    Ok(resources::mask(&all, POD_LEVEL))
}

/// Whether the pod sets pod-level requests or limits (`spec.resources`).
pub fn has_pod_level_resources(pod: &Value) -> bool {
    let r = &pod["spec"]["resources"];
    ["requests", "limits"].iter().any(|w| {
        r[w].as_object()
            .is_some_and(|m| POD_LEVEL.iter().any(|k| m.contains_key(*k)))
    })
}

/// Sums app containers, takes init containers as a running maximum
/// (restartable ones, sidecars, also add to the app total), then lets
/// pod-level values win.
fn aggregate(pod: &Value, which: &str) -> Result<ResourceList, InvalidQuantity> {
    let spec = &pod["spec"];
    let mut total = ResourceList::new();
    for c in containers(spec, "containers") {
        add_into(&mut total, &resources_of(c, which)?);
    }
    let mut sidecars = ResourceList::new();
    let mut init_max = ResourceList::new();
    for c in containers(spec, "initContainers") {
        let own = resources_of(c, which)?;
        let effective = if c["restartPolicy"].as_str() == Some("Always") {
            add_into(&mut total, &own);
            add_into(&mut sidecars, &own);
            sidecars.clone()
        } else {
            resources::add(&own, &sidecars)
        };
        max_into(&mut init_max, &effective);
    }
    max_into(&mut total, &init_max);
    for (k, q) in pod_level(spec, which)? {
        total.insert(k, q);
    }
    Ok(total)
}

/// The pod's effective requests, overhead included.
pub fn pod_requests(pod: &Value) -> Result<ResourceList, InvalidQuantity> {
    let mut reqs = aggregate(pod, "requests")?;
    add_into(&mut reqs, &parse_list(&pod["spec"]["overhead"])?);
    Ok(reqs)
}

/// The pod's effective limits; overhead is added only to limits that are set.
pub fn pod_limits(pod: &Value) -> Result<ResourceList, InvalidQuantity> {
    let mut limits = aggregate(pod, "limits")?;
    for (k, q) in parse_list(&pod["spec"]["overhead"])? {
        if let Some(l) = limits.get_mut(&k) {
            l.add(&q);
        }
    }
    Ok(limits)
}

/// The pod's QoS class. Unparsable quantities count as unset (validation
/// refuses them before a pod is stored).
pub fn qos_class(pod: &Value) -> QosClass {
    // Sums of positive cpu and memory requests and limits, by POD_LEVEL index.
    let mut requests: [Option<Quantity>; 2] = [None, None];
    let mut limits: [Option<Quantity>; 2] = [None, None];
    let mut guaranteed = true;
    // Adds the positive cpu and memory of one resource map; returns which were set.
    let add = |sums: &mut [Option<Quantity>; 2], m: &Value| -> [bool; 2] {
        let mut set = [false; 2];
        for (i, name) in POD_LEVEL.iter().enumerate() {
            if let Some(q) = m.get(*name).and_then(|q| quantity_from_json(q).ok())
                && q > Quantity::ZERO
            {
                sums[i].get_or_insert(Quantity::ZERO).add(&q);
                set[i] = true;
            }
        }
        set
    };
    let spec = &pod["spec"];
    if has_pod_level_resources(pod) {
        add(&mut requests, &spec["resources"]["requests"]);
        guaranteed = add(&mut limits, &spec["resources"]["limits"]) == [true, true];
    } else {
        for c in containers(spec, "containers").chain(containers(spec, "initContainers")) {
            add(&mut requests, &c["resources"]["requests"]);
            if add(&mut limits, &c["resources"]["limits"]) != [true, true] {
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
