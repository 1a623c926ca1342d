//! The Markdown table the bench prints, and its number formats.

use std::time::Duration;

use windlass::histogram::HistogramSnapshot;

use super::REPLICAS;
use super::converge::Converged;
use super::latency::Latency;
use super::sync::{Sync, SyncResult};

#[derive(Default)]
pub(crate) struct Table {
    rows: Vec<[String; 4]>,
}

impl Table {
    fn row(&mut self, what: String, windlass: String, peer: String, target: &str) {
        self.rows.push([what, windlass, peer, target.to_owned()]);
    }

    pub(crate) fn sync(&mut self, s: &Sync) {
        let per_pod = |r: &SyncResult| {
            r.rss_growth
                .map_or("-".to_owned(), |b| bytes(b as f64 / s.pods as f64))
        };
        self.row(
            format!(
                "initial sync of {} pods: informer start → synced",
                thousands(s.pods)
            ),
            format!("{:.2} s", s.windlass.seconds),
            format!("{:.2} s", s.peer.seconds),
            "",
        );
        let cache = s.windlass.cache_bytes.unwrap_or(0) as f64 / s.pods as f64;
        self.row(
            format!(
                "cache bytes per pod (JSON per pod: {} as served, {} without managedFields)",
                bytes(s.raw_per_pod),
                bytes(s.stripped_per_pod)
            ),
            format!(
                "{} ({:.2}× served, {:.2}× without managedFields)",
                bytes(cache),
                cache / s.raw_per_pod,
                cache / s.stripped_per_pod
            ),
            "-".into(),
            "≤ 1.25× raw",
        );
        self.row(
            "resident memory growth per pod during the sync".into(),
            per_pod(&s.windlass),
            per_pod(&s.peer),
            "",
        );
        self.row(
            "(the server alone: answering a paged list of every pod, 500 a page)".into(),
            format!("{:.2} s", s.list_secs),
            format!("{:.2} s", s.list_secs),
            "",
        );
        self.row(
            "(preloading the server over HTTP, 32 clients)".into(),
            format!("{:.0} pods/s", s.preload_per_sec),
            "-".into(),
            "",
        );
    }

    pub(crate) fn latency(&mut self, windlass: &[Latency], peer: &[Latency]) {
        let q = |h: &HistogramSnapshot| {
            format!("{} / {}", micros(h.quantile(0.5)), micros(h.quantile(0.99)))
        };
        for (i, (w, p)) in windlass.iter().zip(peer).enumerate() {
            let target = if i + 1 == windlass.len() {
                "p99 ≤ 1 ms"
            } else {
                ""
            };
            self.row(
                format!(
                    "event → reconcile start, p50 / p99: {} ConfigMap creates at {} /s (reached {:.0} / {:.0} /s)",
                    thousands(w.events),
                    thousands(w.target),
                    w.rate,
                    p.rate
                ),
                q(&w.wait),
                q(&p.wait),
                target,
            );
        }
        if let (Some(w), Some(p)) = (windlass.last(), peer.last()) {
            self.row(
                format!(
                    "no-op reconciles/s sustained at that rate ({} events ÷ first create → last reconcile start)",
                    thousands(w.events)
                ),
                format!("{:.0} /s", w.events as f64 / w.drained),
                format!("{:.0} /s", p.events as f64 / p.drained),
                "",
            );
            if let Some(r) = &w.reconcile {
                self.row(
                    "no-op reconcile duration, p50 / p99 (request, fresh instance, outcome)".into(),
                    q(r),
                    "-".into(),
                    "",
                );
            }
        }
    }

    pub(crate) fn converge(&mut self, n: u64, w: &Converged, p: &Converged) {
        let show = |c: &Converged| {
            let extra = if c.pods == n * REPLICAS {
                String::new()
            } else {
                format!(", {} pods!", thousands(c.pods))
            };
            format!(
                "{:.2} s ({:.0} pods/s{extra})",
                c.seconds,
                (n * REPLICAS) as f64 / c.seconds
            )
        };
        self.row(
            format!(
                "{} ReplicaSets × {REPLICAS}: create → all pods exist and every status says {REPLICAS}",
                thousands(n)
            ),
            show(w),
            show(p),
            "",
        );
    }

    pub(crate) fn print(&self) {
        println!("| benchmark | windlass | kube-rs peer | target |");
        println!("|---|---|---|---|");
        for [a, b, c, d] in &self.rows {
            println!("| {a} | {b} | {c} | {d} |");
        }
    }
}

pub(crate) fn micros(d: Option<Duration>) -> String {
    match d {
        None => "-".into(),
        Some(d) if d >= Duration::from_millis(10) => format!("{:.0} ms", d.as_secs_f64() * 1e3),
        Some(d) if d >= Duration::from_millis(1) => format!("{:.2} ms", d.as_secs_f64() * 1e3),
        Some(d) => format!("{:.0} µs", d.as_secs_f64() * 1e6),
    }
}

pub(crate) fn bytes(b: f64) -> String {
    if b >= 10_240.0 {
        format!("{:.1} KiB", b / 1024.0)
    } else {
        format!("{b:.0} B")
    }
}

pub(crate) fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}
