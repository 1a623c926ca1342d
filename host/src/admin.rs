//! The admin endpoint: `/healthz`, `/readyz` (every informer synced),
//! `/plugins` (JSON) and `/metrics` (Prometheus text); or a part of it on
//! an address of its own (`--metrics-bind-address`,
//! `--health-probe-bind-address`), as controller-runtime serves them.
//!
//! Metrics are read from the host's counters at scrape time into a fresh
//! registry, so nothing is kept twice.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::Relaxed;

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, NoLabelSet};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::{Registry, Unit};
use tokio::net::TcpListener;

use crate::histogram::HistogramSnapshot;
use crate::host::{ControllerStats, Host};

type Labels = Vec<(String, String)>;

/// Which paths one listener serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endpoints {
    /// Everything: the `--admin` endpoint.
    All,
    /// `/metrics` only.
    Metrics,
    /// `/healthz`, `/livez` and `/readyz` only.
    Probes,
}

impl Endpoints {
    fn paths(self) -> &'static str {
        match self {
            Endpoints::All => "/healthz, /livez, /readyz, /plugins and /metrics",
            Endpoints::Metrics => "/metrics",
            Endpoints::Probes => "/healthz, /livez and /readyz",
        }
    }

    fn serves(self, path: &str) -> bool {
        match self {
            Endpoints::All => true,
            Endpoints::Metrics => path == "/metrics",
            Endpoints::Probes => matches!(path, "/healthz" | "/livez" | "/readyz"),
        }
    }
}

/// Serves the admin endpoint until the task is dropped; returns the bound
/// address once listening.
pub async fn serve(
    addr: SocketAddr,
    host: Arc<Host>,
) -> std::io::Result<(SocketAddr, tokio::task::JoinHandle<()>)> {
    serve_endpoints(addr, host, Endpoints::All).await
}

/// Serves some of the admin endpoint's paths, as [`serve`] does.
pub async fn serve_endpoints(
    addr: SocketAddr,
    host: Arc<Host>,
    endpoints: Endpoints,
) -> std::io::Result<(SocketAddr, tokio::task::JoinHandle<()>)> {
    let listener = TcpListener::bind(addr).await?;
    let bound = listener.local_addr()?;
    let task = tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            let host = host.clone();
            tokio::spawn(async move {
                let service = service_fn(move |req: Request<Incoming>| {
                    let host = host.clone();
                    async move {
                        if endpoints.serves(req.uri().path()) {
                            handle(host, req).await
                        } else {
                            Ok(reply(
                                StatusCode::NOT_FOUND,
                                "text/plain; charset=utf-8",
                                format!("not found: this address serves {}\n", endpoints.paths()),
                            ))
                        }
                    }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    Ok((bound, task))
}

fn reply(code: StatusCode, content_type: &str, body: String) -> Response<Full<Bytes>> {
    Response::builder()
        .status(code)
        .header(http::header::CONTENT_TYPE, content_type)
        .body(Full::new(Bytes::from(body)))
        .expect("static response parts are valid")
}

async fn handle(
    host: Arc<Host>,
    req: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let text = "text/plain; charset=utf-8";
    Ok(match req.uri().path() {
        "/healthz" | "/livez" => reply(StatusCode::OK, text, "ok\n".into()),
        "/readyz" => {
            if host.is_ready().await {
                reply(StatusCode::OK, text, "ok\n".into())
            } else {
                reply(
                    StatusCode::SERVICE_UNAVAILABLE,
                    text,
                    "informers have not synced yet\n".into(),
                )
            }
        }
        "/plugins" => {
            let body = serde_json::to_string_pretty(&host.status().await).unwrap_or_default();
            reply(StatusCode::OK, "application/json", body)
        }
        "/metrics" => reply(
            StatusCode::OK,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
            metrics(&host).await,
        ),
        _ => reply(
            StatusCode::NOT_FOUND,
            text,
            "not found: try /healthz, /readyz, /plugins or /metrics\n".into(),
        ),
    })
}

fn counter(registry: &mut Registry, name: &str, help: &str) -> Family<Labels, Counter> {
    let family = Family::<Labels, Counter>::default();
    registry.register(name, help, family.clone());
    family
}

fn gauge(registry: &mut Registry, name: &str, help: &str) -> Family<Labels, Gauge> {
    let family = Family::<Labels, Gauge>::default();
    registry.register(name, help, family.clone());
    family
}

/// One histogram per plugin, read from the host's own (lock-free)
/// histograms at scrape time and encoded as a Prometheus histogram family.
#[derive(Debug)]
struct Histograms {
    name: &'static str,
    help: &'static str,
    rows: Vec<(Labels, HistogramSnapshot)>,
}

impl Collector for Histograms {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let mut family = encoder.encode_descriptor(
            self.name,
            self.help,
            Some(&Unit::Seconds),
            MetricType::Histogram,
        )?;
        for (labels, h) in &self.rows {
            family
                .encode_family(labels)?
                .encode_histogram::<NoLabelSet>(
                    h.sum().as_secs_f64(),
                    h.count(),
                    &h.exported_buckets(),
                    None,
                )?;
        }
        Ok(())
    }
}

/// Each plugin's write limit and the time its requests waited for it.
fn write_limits(r: &mut Registry, host: &Host) {
    let qps = Family::<Labels, Gauge<f64, AtomicU64>>::default();
    r.register(
        "windlass_plugin_write_qps",
        "The write rate limit a plugin's requests are held to, in requests a second (0: unlimited), by plugin",
        qps.clone(),
    );
    let burst = gauge(
        r,
        "windlass_plugin_write_burst",
        "The burst of a plugin's write rate limit, by plugin",
    );
    let waited = Family::<Labels, Counter<f64, AtomicU64>>::default();
    r.register_with_unit(
        "windlass_write_throttle",
        "Time a plugin's requests waited for its write rate limit, by plugin",
        Unit::Seconds,
        waited.clone(),
    );
    let dropped = counter(
        r,
        "windlass_events_dropped",
        "Events a plugin recorded that were dropped as spam (client-go's limit: 25 about one object, then one every 5 minutes), by plugin",
    );
    for t in host.write_throttles() {
        let l = vec![("plugin".to_owned(), t.plugin.clone())];
        qps.get_or_create(&l).set(t.limit.qps);
        burst.get_or_create(&l).set(i64::from(t.limit.burst));
        waited.get_or_create(&l).inc_by(t.waited.as_secs_f64());
        dropped.get_or_create(&l).inc_by(t.events_dropped);
    }
}

/// The Prometheus text of the host's current counters.
pub async fn metrics(host: &Host) -> String {
    let mut r = Registry::default();
    let reconciles = counter(&mut r, "windlass_reconciles", "Reconciles run, by plugin");
    let failures = counter(
        &mut r,
        "windlass_reconcile_errors",
        "Reconciles that failed, by plugin",
    );
    let conflicts = counter(
        &mut r,
        "windlass_reconcile_conflicts",
        "Reconciles that met a 409/404 and ran again",
    );
    let writes = counter(
        &mut r,
        "windlass_writes",
        "API requests made by the writer, by plugin",
    );
    let busy = counter(
        &mut r,
        "windlass_reconcile_microseconds",
        "Time spent reconciling, by plugin",
    );
    let blocking = counter(
        &mut r,
        "windlass_plugin_blocking_calls",
        "Plugin calls run on a blocking thread (slow plugins, or a call over the inline budget) rather than on the async worker, by plugin",
    );
    let queue = gauge(
        &mut r,
        "windlass_queue_depth",
        "Keys in a plugin's queue, by state",
    );
    let indexed = gauge(
        &mut r,
        "windlass_index_objects",
        "Objects filed in a plugin's index of an indexed watch, by plugin and kind",
    );
    let loaded = gauge(
        &mut r,
        "windlass_plugin_loaded",
        "1 when a plugin file is loaded, 0 when it failed",
    );
    let mut queue_wait = Histograms {
        name: "windlass_queue_wait",
        help: "Time from a key's enqueue (informer event, or requeue due) to the start of its reconcile, by plugin",
        rows: Vec::new(),
    };
    let mut reconcile_time = Histograms {
        name: "windlass_reconcile_duration",
        help: "Time one reconcile takes (request, plugin call, writes), by plugin",
        rows: Vec::new(),
    };
    let mut stages = Histograms {
        name: "windlass_reconcile_stage",
        help: "Time a reconcile spends in each stage, by plugin: queue (enqueue to start), call (the plugin in a fresh instance, with its teardown and the outcome's checks), writes (carrying out the outcome)",
        rows: Vec::new(),
    };
    for ControllerStats {
        name,
        file,
        stats,
        depth,
        indexes,
    } in host.controller_stats().await
    {
        let l = vec![("plugin".to_owned(), name.clone())];
        queue_wait.rows.push((l.clone(), stats.queue_wait.clone()));
        reconcile_time.rows.push((l.clone(), stats.reconcile_time));
        for (stage, h) in [
            ("queue", &stats.queue_wait),
            ("call", &stats.call_time),
            ("writes", &stats.write_time),
        ] {
            let mut labels = l.clone();
            labels.push(("stage".to_owned(), stage.to_owned()));
            stages.rows.push((labels, h.clone()));
        }
        reconciles.get_or_create(&l).inc_by(stats.reconciles);
        failures.get_or_create(&l).inc_by(stats.failures);
        conflicts.get_or_create(&l).inc_by(stats.conflicts);
        writes.get_or_create(&l).inc_by(stats.writes);
        busy.get_or_create(&l).inc_by(stats.busy_micros);
        blocking.get_or_create(&l).inc_by(stats.blocking_calls);
        for (state, n) in [
            ("ready", depth.ready),
            ("delayed", depth.delayed),
            ("in_flight", depth.in_flight),
        ] {
            queue
                .get_or_create(&vec![
                    ("plugin".to_owned(), name.clone()),
                    ("state".to_owned(), state.to_owned()),
                ])
                .set(n as i64);
        }
        for (kind, n) in indexes {
            indexed
                .get_or_create(&vec![
                    ("plugin".to_owned(), name.clone()),
                    ("kind".to_owned(), kind),
                ])
                .set(n as i64);
        }
        loaded
            .get_or_create(&vec![("file".to_owned(), file.display().to_string())])
            .set(1);
    }
    r.register_collector(Box::new(queue_wait));
    r.register_collector(Box::new(reconcile_time));
    r.register_collector(Box::new(stages));
    write_limits(&mut r, host);
    // The names Kubernetes dashboards know, beside windlass's own.
    r.register_collector(Box::new(crate::conventions::Conventional::of(host).await));
    for row in host.status().await.into_iter().filter(|r| r.name.is_none()) {
        loaded
            .get_or_create(&vec![("file".to_owned(), row.file)])
            .set(0);
    }

    let lists = counter(&mut r, "windlass_informer_lists", "Full lists, by informer");
    let relists = counter(
        &mut r,
        "windlass_informer_relists",
        "Lists after the first (410 Gone or errors), by informer",
    );
    let restarts = counter(
        &mut r,
        "windlass_informer_watch_restarts",
        "Watch connections ended and resumed, by informer",
    );
    let events = counter(
        &mut r,
        "windlass_informer_events",
        "Watch events applied, by informer",
    );
    let errors = counter(
        &mut r,
        "windlass_informer_errors",
        "List and watch failures, by informer",
    );
    let skipped = counter(
        &mut r,
        "windlass_informer_skipped_objects",
        "Objects skipped because they could not be parsed or were too large, by informer",
    );
    let objects = gauge(
        &mut r,
        "windlass_cache_objects",
        "Objects cached, by informer",
    );
    let bytes = gauge(
        &mut r,
        "windlass_cache_bytes",
        "Bytes cached (JSON text and headers), by informer",
    );
    let mut informer_stages = Histograms {
        name: "windlass_informer_stage",
        help: "Time per watch event in each stage, by informer: decode (its line into an object), fanout (into the cache and to every subscriber)",
        rows: Vec::new(),
    };
    for informer in host.informers().all() {
        let l = vec![("informer".to_owned(), informer.spec().to_string())];
        let s = informer.stats();
        for (stage, h) in [("decode", &s.decode_time), ("fanout", &s.fanout_time)] {
            let mut labels = l.clone();
            labels.push(("stage".to_owned(), stage.to_owned()));
            informer_stages.rows.push((labels, h.snapshot()));
        }
        lists.get_or_create(&l).inc_by(s.lists.load(Relaxed));
        relists.get_or_create(&l).inc_by(s.relists.load(Relaxed));
        restarts
            .get_or_create(&l)
            .inc_by(s.watch_restarts.load(Relaxed));
        events.get_or_create(&l).inc_by(s.events.load(Relaxed));
        errors.get_or_create(&l).inc_by(s.errors.load(Relaxed));
        skipped.get_or_create(&l).inc_by(s.skipped.load(Relaxed));
        let (n, b) = informer.cache().read(|s| (s.len(), s.bytes()));
        objects.get_or_create(&l).set(n as i64);
        bytes.get_or_create(&l).set(b as i64);
    }
    r.register_collector(Box::new(informer_stages));
    let mut out = String::new();
    let _ = prometheus_client::encoding::text::encode(&mut out, &r);
    out
}
