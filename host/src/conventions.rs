//! The metrics Kubernetes dashboards and alerts already know, served beside
//! windlass's own: controller-runtime's `controller_runtime_*`, client-go's
//! `workqueue_*`, `leader_election_master_status`,
//! `rest_client_requests_total` and `rest_client_rate_limiter_duration_seconds`
//! (by plugin: each plugin has its own write limit, where client-go has one
//! per client), with their labels, in seconds.
//!
//! Each plugin is a controller (label `controller`, and `name` on the
//! workqueue series, as controller-runtime labels them). A reconcile's
//! `result` is `success`, `error` (it failed and is retried, or given up),
//! `requeue` (a conflict with fresher state: reconciled again at once) or
//! `requeue_after` (the plugin asked for a later visit) — the four
//! controller-runtime counts.
//!
//! [`Conventional`] is read from the host at scrape time and encodes itself
//! as one Prometheus collector, so nothing is counted twice.

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeGaugeValue, MetricEncoder, NoLabelSet};
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Unit;

use crate::histogram::HistogramSnapshot;
use crate::host::{ControllerMetrics, Host};
use crate::writer::ThrottleStats;

type Labels = Vec<(String, String)>;

/// The conventional series of one host, as of one scrape.
#[derive(Debug, Default)]
pub struct Conventional {
    pub controllers: Vec<ControllerMetrics>,
    /// The leader-election Lease's name and whether this replica holds it.
    pub leadership: Option<(String, bool)>,
    /// The API server's `host:port`, and the requests made to it as
    /// `(code, method, count)`.
    pub requests: (String, Vec<(String, String, u64)>),
    /// Each plugin's write limit and the waits of its requests.
    pub throttles: Vec<ThrottleStats>,
}

impl Conventional {
    /// Reads them from `host`.
    pub async fn of(host: &Host) -> Self {
        let requests = host.client().requests();
        Self {
            controllers: host.controller_metrics().await,
            leadership: host.leadership(),
            requests: (requests.host().to_owned(), requests.snapshot()),
            throttles: host.write_throttles(),
        }
    }
}

fn labels(pairs: &[(&str, &str)]) -> Labels {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

/// A family of one metric type: its rows, each labels and a value.
fn family<V>(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    unit: Option<&Unit>,
    metric_type: MetricType,
    rows: impl IntoIterator<Item = (Labels, V)>,
    mut encode: impl FnMut(&mut MetricEncoder<'_>, &V) -> std::fmt::Result,
) -> std::fmt::Result {
    let mut family = encoder.encode_descriptor(name, help, unit, metric_type)?;
    for (labels, value) in rows {
        encode(&mut family.encode_family(&labels)?, &value)?;
    }
    Ok(())
}

fn counter(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    rows: impl IntoIterator<Item = (Labels, u64)>,
) -> std::fmt::Result {
    family(
        encoder,
        name,
        help,
        None,
        MetricType::Counter,
        rows,
        |e, v| e.encode_counter::<NoLabelSet, _, u64>(v, None),
    )
}

fn gauge<V: EncodeGaugeValue>(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    unit: Option<&Unit>,
    rows: impl IntoIterator<Item = (Labels, V)>,
) -> std::fmt::Result {
    family(
        encoder,
        name,
        help,
        unit,
        MetricType::Gauge,
        rows,
        |e, v| e.encode_gauge(v),
    )
}

fn histogram(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    rows: impl IntoIterator<Item = (Labels, HistogramSnapshot)>,
) -> std::fmt::Result {
    family(
        encoder,
        name,
        help,
        Some(&Unit::Seconds),
        MetricType::Histogram,
        rows,
        |e, h| {
            e.encode_histogram::<NoLabelSet>(
                h.sum().as_secs_f64(),
                h.count(),
                &h.exported_buckets(),
                None,
            )
        },
    )
}

impl Collector for Conventional {
    fn encode(&self, mut e: DescriptorEncoder) -> std::fmt::Result {
        let each = |f: &dyn Fn(&ControllerMetrics) -> Vec<(Labels, u64)>| {
            self.controllers.iter().flat_map(f).collect::<Vec<_>>()
        };
        let controller = |c: &ControllerMetrics| labels(&[("controller", &c.name)]);
        let queue = |c: &ControllerMetrics| labels(&[("controller", &c.name), ("name", &c.name)]);

        counter(
            &mut e,
            "controller_runtime_reconcile",
            "Total number of reconciliations per controller",
            each(&|c| {
                let s = &c.stats;
                [
                    ("success", s.successes),
                    ("error", s.failures),
                    ("requeue", s.conflicts),
                    ("requeue_after", s.requeues_after),
                ]
                .into_iter()
                .map(|(result, n)| (labels(&[("controller", &c.name), ("result", result)]), n))
                .collect()
            }),
        )?;
        counter(
            &mut e,
            "controller_runtime_reconcile_errors",
            "Total number of reconciliation errors per controller",
            each(&|c| vec![(controller(c), c.stats.failures)]),
        )?;
        histogram(
            &mut e,
            "controller_runtime_reconcile_time",
            "Length of time per reconciliation per controller",
            self.controllers
                .iter()
                .map(|c| (controller(c), c.stats.reconcile_time.clone())),
        )?;
        gauge(
            &mut e,
            "controller_runtime_max_concurrent_reconciles",
            "Maximum number of concurrent reconciles per controller",
            None,
            self.controllers
                .iter()
                .map(|c| (controller(c), u64::from(c.max_concurrency))),
        )?;
        gauge(
            &mut e,
            "controller_runtime_active_workers",
            "Number of currently used workers per controller",
            None,
            self.controllers
                .iter()
                .map(|c| (controller(c), c.queue.in_flight as u64)),
        )?;

        gauge(
            &mut e,
            "workqueue_depth",
            "Current depth of workqueue",
            None,
            self.controllers
                .iter()
                .map(|c| (queue(c), c.queue.ready as u64)),
        )?;
        counter(
            &mut e,
            "workqueue_adds",
            "Total number of adds handled by workqueue",
            each(&|c| vec![(queue(c), c.queue.adds)]),
        )?;
        histogram(
            &mut e,
            "workqueue_queue_duration",
            "How long in seconds an item stays in workqueue before being requested",
            self.controllers
                .iter()
                .map(|c| (queue(c), c.stats.queue_wait.clone())),
        )?;
        histogram(
            &mut e,
            "workqueue_work_duration",
            "How long in seconds processing an item from workqueue takes",
            self.controllers
                .iter()
                .map(|c| (queue(c), c.stats.reconcile_time.clone())),
        )?;
        gauge(
            &mut e,
            "workqueue_unfinished_work",
            "How many seconds of work has been done that is in progress and hasn't been observed by work_duration",
            Some(&Unit::Seconds),
            self.controllers
                .iter()
                .map(|c| (queue(c), c.queue.unfinished_seconds)),
        )?;
        gauge(
            &mut e,
            "workqueue_longest_running_processor",
            "How many seconds has the longest running processor for workqueue been running",
            Some(&Unit::Seconds),
            self.controllers
                .iter()
                .map(|c| (queue(c), c.queue.longest_running_seconds)),
        )?;
        counter(
            &mut e,
            "workqueue_retries",
            "Total number of retries handled by workqueue",
            each(&|c| vec![(queue(c), c.queue.retries)]),
        )?;

        if let Some((lease, leading)) = &self.leadership {
            gauge(
                &mut e,
                "leader_election_master_status",
                "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates master",
                None,
                [(labels(&[("name", lease)]), u64::from(*leading))],
            )?;
        }
        let (host, requests) = &self.requests;
        counter(
            &mut e,
            "rest_client_requests",
            "Number of HTTP requests, partitioned by status code, method, and host",
            requests.iter().map(|(code, method, n)| {
                (
                    labels(&[("code", code), ("host", host), ("method", method)]),
                    *n,
                )
            }),
        )?;
        // Only plugins with a limit wait for one.
        histogram(
            &mut e,
            "rest_client_rate_limiter_duration",
            "Client side rate limiter latency in seconds, partitioned by plugin and host",
            self.throttles
                .iter()
                .filter(|t| !t.limit.is_unlimited())
                .map(|t| {
                    (
                        labels(&[("host", host), ("plugin", &t.plugin)]),
                        t.waits.clone(),
                    )
                }),
        )?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use prometheus_client::registry::Registry;

    use super::*;
    use crate::controller::StatsSnapshot;
    use crate::histogram::Histogram;
    use crate::queue::QueueMetrics;

    fn text(c: Conventional) -> String {
        let mut r = Registry::default();
        r.register_collector(Box::new(c));
        let mut out = String::new();
        prometheus_client::encoding::text::encode(&mut out, &r).unwrap();
        out
    }

    #[test]
    fn series_carry_controller_runtimes_names_and_labels() {
        let time = Histogram::new();
        time.observe(Duration::from_millis(3));
        time.observe(Duration::from_millis(40));
        let c = ControllerMetrics {
            name: "greeter".into(),
            max_concurrency: 2,
            stats: StatsSnapshot {
                reconciles: 10,
                successes: 6,
                requeues_after: 1,
                failures: 2,
                conflicts: 1,
                reconcile_time: time.snapshot(),
                queue_wait: time.snapshot(),
                ..StatsSnapshot::default()
            },
            queue: QueueMetrics {
                ready: 3,
                delayed: 1,
                in_flight: 1,
                adds: 12,
                retries: 2,
                unfinished_seconds: 1.5,
                longest_running_seconds: 1.5,
            },
        };
        let out = text(Conventional {
            controllers: vec![c],
            leadership: Some(("windlass".into(), true)),
            requests: (
                "10.0.0.1:443".into(),
                vec![
                    ("200".into(), "GET".into(), 7),
                    ("<error>".into(), "PATCH".into(), 1),
                ],
            ),
            throttles: vec![ThrottleStats {
                plugin: "greeter".into(),
                limit: crate::writer::WriteLimit::new(5.0, 10).unwrap(),
                waited: Duration::from_millis(40),
                waits: time.snapshot(),
                events_dropped: 0,
            }],
        });
        for line in [
            r#"controller_runtime_reconcile_total{controller="greeter",result="success"} 6"#,
            r#"controller_runtime_reconcile_total{controller="greeter",result="error"} 2"#,
            r#"controller_runtime_reconcile_total{controller="greeter",result="requeue"} 1"#,
            r#"controller_runtime_reconcile_total{controller="greeter",result="requeue_after"} 1"#,
            r#"controller_runtime_reconcile_errors_total{controller="greeter"} 2"#,
            r#"controller_runtime_reconcile_time_seconds_count{controller="greeter"} 2"#,
            r#"controller_runtime_max_concurrent_reconciles{controller="greeter"} 2"#,
            r#"controller_runtime_active_workers{controller="greeter"} 1"#,
            r#"workqueue_depth{controller="greeter",name="greeter"} 3"#,
            r#"workqueue_adds_total{controller="greeter",name="greeter"} 12"#,
            r#"workqueue_queue_duration_seconds_count{controller="greeter",name="greeter"} 2"#,
            r#"workqueue_work_duration_seconds_count{controller="greeter",name="greeter"} 2"#,
            r#"workqueue_unfinished_work_seconds{controller="greeter",name="greeter"} 1.5"#,
            r#"workqueue_longest_running_processor_seconds{controller="greeter",name="greeter"} 1.5"#,
            r#"workqueue_retries_total{controller="greeter",name="greeter"} 2"#,
            r#"leader_election_master_status{name="windlass"} 1"#,
            r#"rest_client_requests_total{code="200",host="10.0.0.1:443",method="GET"} 7"#,
            r#"rest_client_requests_total{code="<error>",host="10.0.0.1:443",method="PATCH"} 1"#,
            r#"rest_client_rate_limiter_duration_seconds_count{host="10.0.0.1:443",plugin="greeter"} 2"#,
            "# TYPE controller_runtime_reconcile_time_seconds histogram",
            "# TYPE workqueue_depth gauge",
        ] {
            assert!(out.lines().any(|l| l == line), "no line {line} in:\n{out}");
        }
        // The reconcile-time sum is in seconds.
        let sum = out
            .lines()
            .find_map(|l| {
                l.strip_prefix(
                    r#"controller_runtime_reconcile_time_seconds_sum{controller="greeter"} "#,
                )
            })
            .unwrap();
        let sum: f64 = sum.parse().unwrap();
        assert!((sum - 0.043).abs() < 1e-9, "{sum}");
    }

    #[test]
    fn no_leader_election_no_leader_series() {
        let out = text(Conventional::default());
        assert!(!out.contains("leader_election_master_status"), "{out}");
        // Families with no rows still describe themselves.
        assert!(
            out.contains("# TYPE controller_runtime_reconcile counter"),
            "{out}"
        );
    }
}
