//! What a pod requests, as kube-scheduler counts it (`computePodResourceRequest`
//! over `resourcehelper.PodRequests`).
//!
//! Regular containers run together, so their requests add up; init
//! containers run one after another, so only the largest counts — except
//! restartable ("sidecar") init containers, which keep running: each one
//! adds to the pod's total, and to every init container that starts after
//! it. The request is then
//! `max(sum(containers) + sum(sidecars), max_i(init_i + sidecars started before i))`
//! per resource, replaced by pod-level `spec.resources.requests` for cpu and
//! memory when those are set, plus `spec.overhead`.

use crate::api;
use crate::quantity;
use crate::wire::{Reader, Writer};

/// Millicores of CPU a container is taken to request when it names none,
/// for scoring only (`schedutil.DefaultMilliCPURequest`).
pub(crate) const DEFAULT_MILLI_CPU: i64 = 100;
/// Bytes of memory likewise (`schedutil.DefaultMemoryRequest`, 200 MiB).
pub(crate) const DEFAULT_MEMORY: i64 = 200 * 1024 * 1024;

/// Requests of cpu (millicores), memory and ephemeral storage (bytes).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Requests {
    pub(crate) cpu: i64,
    pub(crate) memory: i64,
    pub(crate) ephemeral: i64,
}

impl Requests {
    fn add(&mut self, o: Requests) {
        self.cpu = self.cpu.saturating_add(o.cpu);
        self.memory = self.memory.saturating_add(o.memory);
        self.ephemeral = self.ephemeral.saturating_add(o.ephemeral);
    }

    fn max(&mut self, o: Requests) {
        self.cpu = self.cpu.max(o.cpu);
        self.memory = self.memory.max(o.memory);
        self.ephemeral = self.ephemeral.max(o.ephemeral);
    }

    /// Writes the three amounts into a summary.
    pub(crate) fn write(&self, w: &mut Writer) {
        for r in [self.cpu, self.memory, self.ephemeral] {
            w.ivar(r);
        }
    }

    /// Reads what [`Requests::write`] wrote.
    pub(crate) fn read(r: &mut Reader<'_>) -> Option<Self> {
        Some(Self {
            cpu: r.ivar()?,
            memory: r.ivar()?,
            ephemeral: r.ivar()?,
        })
    }
}

/// A resource list (`requests`, `overhead`) as numbers. With `defaults`, a
/// list that does not name cpu or memory counts the scoring defaults for it
/// (a request written as `0` stays 0).
fn of_list(list: &api::StrMap<'_>, defaults: bool) -> Requests {
    let get = |name: &str, parse: fn(&str) -> Option<i64>, default: i64| match list.get(name) {
        Some(q) => parse(q).unwrap_or(0),
        None if defaults => default,
        None => 0,
    };
    Requests {
        cpu: get("cpu", quantity::milli_value, DEFAULT_MILLI_CPU),
        memory: get("memory", quantity::value, DEFAULT_MEMORY),
        ephemeral: get("ephemeral-storage", quantity::value, 0),
    }
}

fn container_requests(c: &api::Container<'_>, defaults: bool) -> Requests {
    let empty = api::StrMap::default();
    let list = c.resources.as_ref().map_or(&empty, |r| &r.requests);
    of_list(list, defaults)
}

/// The pod's requests. `defaults`: as scoring counts them, with the
/// default cpu and memory for containers that request none
/// (`NonMissingContainerRequests`).
pub(crate) fn pod_requests(spec: &api::PodSpec<'_>, defaults: bool) -> Requests {
    let mut total = Requests::default();
    for c in &spec.containers {
        total.add(container_requests(c, defaults));
    }
    let mut sidecars = Requests::default();
    let mut init = Requests::default();
    for c in &spec.init_containers {
        let own = container_requests(c, defaults);
        if c.restart_policy.as_deref() == Some("Always") {
            total.add(own);
            sidecars.add(own);
            init.max(sidecars);
        } else {
            let mut with_sidecars = own;
            with_sidecars.add(sidecars);
            init.max(with_sidecars);
        }
    }
    total.max(init);
    if let Some(pod_level) = &spec.resources {
        let r = &pod_level.requests;
        if let Some(cpu) = r.get("cpu") {
            total.cpu = quantity::milli_value(cpu).unwrap_or(0);
        }
        if let Some(memory) = r.get("memory") {
            total.memory = quantity::value(memory).unwrap_or(0);
        }
    }
    total.add(of_list(&spec.overhead, false));
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(json: &str) -> api::PodSpec<'_> {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn requests_follow_compute_pod_resource_request() {
        // (pod spec, requests, requests with scoring defaults)
        type Row<'a> = (&'a str, (i64, i64, i64), (i64, i64));
        let table: &[Row<'_>] = &[
            // No containers at all.
            (r#"{}"#, (0, 0, 0), (0, 0)),
            // A container without requests: 0, or the defaults for scoring.
            (
                r#"{"containers":[{}]}"#,
                (0, 0, 0),
                (DEFAULT_MILLI_CPU, DEFAULT_MEMORY),
            ),
            // Explicit zero stays zero even for scoring.
            (
                r#"{"containers":[{"resources":{"requests":{"cpu":"0","memory":"0"}}}]}"#,
                (0, 0, 0),
                (0, 0),
            ),
            // Containers add up.
            (
                r#"{"containers":[
                    {"resources":{"requests":{"cpu":"2","memory":"1G","ephemeral-storage":"1Gi"}}},
                    {"resources":{"requests":{"cpu":"1","memory":"1G"}}}]}"#,
                (3000, 2_000_000_000, 1 << 30),
                (3000, 2_000_000_000),
            ),
            // The example of computePodResourceRequest: CPU 3, memory 3G.
            (
                r#"{"initContainers":[
                      {"resources":{"requests":{"cpu":"2","memory":"1G"}}},
                      {"resources":{"requests":{"cpu":"2","memory":"3G"}}}],
                    "containers":[
                      {"resources":{"requests":{"cpu":"2","memory":"1G"}}},
                      {"resources":{"requests":{"cpu":"1","memory":"1G"}}}]}"#,
                (3000, 3_000_000_000, 0),
                (3000, 3_000_000_000),
            ),
            // A sidecar keeps running: it adds to the containers, and to the
            // init containers that start after it (but not to those before).
            (
                r#"{"initContainers":[
                      {"resources":{"requests":{"cpu":"4"}}},
                      {"restartPolicy":"Always","resources":{"requests":{"cpu":"1"}}},
                      {"resources":{"requests":{"cpu":"3"}}}],
                    "containers":[{"resources":{"requests":{"cpu":"1"}}}]}"#,
                (4000, 0, 0),
                (4000, 2 * DEFAULT_MEMORY),
            ),
            (
                r#"{"initContainers":[
                      {"restartPolicy":"Always","resources":{"requests":{"cpu":"1"}}},
                      {"resources":{"requests":{"cpu":"3500m"}}}],
                    "containers":[{"resources":{"requests":{"cpu":"1"}}}]}"#,
                (4500, 0, 0),
                (4500, 2 * DEFAULT_MEMORY),
            ),
            // Overhead is added on top.
            (
                r#"{"containers":[{"resources":{"requests":{"cpu":"100m"}}}],
                    "overhead":{"cpu":"250m","memory":"120Mi"}}"#,
                (350, 120 << 20, 0),
                (350, DEFAULT_MEMORY + (120 << 20)),
            ),
            // Pod-level requests replace the containers' for cpu and memory.
            (
                r#"{"resources":{"requests":{"cpu":"2","memory":"1Gi"}},
                    "containers":[{"resources":{"requests":{"cpu":"100m","ephemeral-storage":"1G"}}}]}"#,
                (2000, 1 << 30, 1_000_000_000),
                (2000, 1 << 30),
            ),
        ];
        for (json, (cpu, memory, ephemeral), (nz_cpu, nz_memory)) in table {
            let s = spec(json);
            assert_eq!(
                pod_requests(&s, false),
                Requests {
                    cpu: *cpu,
                    memory: *memory,
                    ephemeral: *ephemeral
                },
                "{json}"
            );
            let nz = pod_requests(&s, true);
            assert_eq!((nz.cpu, nz.memory), (*nz_cpu, *nz_memory), "{json}");
        }
    }
}
