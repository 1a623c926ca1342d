//! The Markdown table the bench prints, and its number formats.

use std::time::Duration;

use windlass::histogram::HistogramSnapshot;
pub(crate) use windlass_tests::thousands;

use super::REPLICAS;
use super::converge::{Converged, Rounds, median};
use super::density::{Density, DensitySide, expected_pods};
use super::fairness::{FairRun, Fairness, LIMIT_BURST, LIMIT_QPS, SERVER_NICE};
use super::latency::Latency;
use super::sync::{Scale, Sync, SyncResult};

#[derive(Default)]
pub(crate) struct Table {
    rows: Vec<[String; 5]>,
}

impl Table {
    fn row(&mut self, what: String, windlass: String, peer: String, target: &str) {
        self.rows
            .push([what, windlass, peer, String::new(), target.to_owned()]);
    }

    fn ratio_row(
        &mut self,
        what: String,
        windlass: String,
        peer: String,
        ratio: String,
        target: &str,
    ) {
        self.rows
            .push([what, windlass, peer, ratio, target.to_owned()]);
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
                    "event → reconcile start, p50 / p99: {} ConfigMap creates at {} /s, {} workers a side (reached {:.0} / {:.0} /s)",
                    thousands(w.events),
                    thousands(w.target),
                    super::latency::concurrency(),
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

    pub(crate) fn converge(&mut self, r: &Rounds) {
        let n = r.replicasets;
        let show = |runs: &[Converged]| {
            let secs: Vec<f64> = runs.iter().map(|c| c.seconds).collect();
            let m = median(&secs);
            let each: Vec<String> = secs.iter().map(|s| format!("{s:.2}")).collect();
            let wrong: Vec<String> = runs
                .iter()
                .filter(|c| c.pods != n * REPLICAS)
                .map(|c| thousands(c.pods))
                .collect();
            let extra = if wrong.is_empty() {
                String::new()
            } else {
                format!(", pods: {}!", wrong.join(", "))
            };
            let cpu: Vec<String> = runs
                .iter()
                .filter_map(|c| c.cpu)
                .map(|c| format!("{c:.1}"))
                .collect();
            format!(
                "{m:.2} s ({:.0} pods/s; runs {} s; CPU s of server and side together {}{extra})",
                (n * REPLICAS) as f64 / m,
                each.join(", "),
                cpu.join(", ")
            )
        };
        let ratio = median(&r.windlass.iter().map(|c| c.seconds).collect::<Vec<_>>())
            / median(&r.peer.iter().map(|c| c.seconds).collect::<Vec<_>>());
        self.ratio_row(
            format!(
                "{} ReplicaSets × {REPLICAS}: create → all pods exist and every status says {REPLICAS} (durable server, alternated, median)",
                thousands(n)
            ),
            show(&r.windlass),
            show(&r.peer),
            format!("{ratio:.2}"),
            "≤ 0.7",
        );
    }

    pub(crate) fn density(&mut self, ds: &[Density]) {
        if ds.is_empty() {
            return;
        }
        let ns = ds
            .iter()
            .map(|d| d.n.to_string())
            .collect::<Vec<_>>()
            .join(" / ");
        let last = ds.last().expect("not empty").n;
        let cells = |f: &dyn Fn(&DensitySide) -> String| {
            let w: Vec<String> = ds.iter().map(|d| f(&d.windlass)).collect();
            let p: Vec<String> = ds.iter().map(|d| f(&d.peer)).collect();
            (w.join(" / "), p.join(" / "))
        };
        let ratios = |f: &dyn Fn(&DensitySide) -> f64| {
            ds.iter()
                .map(|d| format!("{:.2}", f(&d.windlass) / f(&d.peer)))
                .collect::<Vec<_>>()
                .join(" / ")
        };
        for d in ds {
            for (side, s) in [("windlass", &d.windlass), ("peer", &d.peer)] {
                if s.pods != expected_pods(d) {
                    eprintln!(
                        "density N = {}: {side} left {} pods, not {}",
                        d.n,
                        s.pods,
                        expected_pods(d)
                    );
                }
            }
        }
        let (w, p) = cells(&|s| format!("{:.0} MiB", s.rss as f64 / MIB));
        self.ratio_row(
            format!(
                "density, N = {ns} ReplicaSet controllers, each selecting its own label ({} pods of other workloads preloaded): total resident memory after convergence (one host / N processes)",
                thousands(ds[0].preloaded)
            ),
            w,
            p,
            ratios(&|s| s.rss as f64),
            &format!("≤ 0.1 at N = {last}"),
        );
        let (w, p) = cells(&|s| format!("{} ({} distinct)", s.open_watches(), s.watches.len()));
        self.row(
            format!("density, N = {ns}: watches held on the server (distinct (kind, selector))"),
            w,
            p,
            "one per distinct (kind, selector)",
        );
        let (w, p) = cells(&|s| format!("{:.2} s", s.sync_secs));
        self.ratio_row(
            format!("density, N = {ns}: initial sync, start → every instance synced"),
            w,
            p,
            ratios(&|s| s.sync_secs),
            "",
        );
        let (w, p) = cells(&|s| format!("{:.2} s", s.converge_secs));
        self.ratio_row(
            format!(
                "density, N = {ns}: convergence of {} ReplicaSets × {REPLICAS}, split among the N",
                thousands(ds[0].replicasets)
            ),
            w,
            p,
            ratios(&|s| s.converge_secs),
            &format!("≤ 1.0 at N = {last}"),
        );
        let (w, p) = cells(&|s| thousands(s.reconciles));
        self.ratio_row(
            format!(
                "density, N = {ns}: reconciles run, from start to stop (every instance / process)"
            ),
            w,
            p,
            ratios(&|s| s.reconciles as f64),
            "",
        );
    }

    pub(crate) fn fairness(&mut self, f: &Fairness) {
        let p99 = |runs: &[FairRun]| -> Vec<f64> {
            runs.iter()
                .map(|r| r.wait.quantile(0.99).map_or(f64::NAN, |d| d.as_secs_f64()))
                .collect()
        };
        let show = |runs: &[FairRun]| {
            let m = median(&p99(runs));
            let each: Vec<String> = runs
                .iter()
                .map(|r| {
                    format!(
                        "{} / {}",
                        micros(r.wait.quantile(0.5)),
                        micros(r.wait.quantile(0.99))
                    )
                })
                .collect();
            format!(
                "p99 {} (runs, p50 / p99: {})",
                micros(Some(Duration::from_secs_f64(m))),
                each.join("; ")
            )
        };
        let noise = |runs: &[FairRun]| {
            runs.iter()
                .map(|r| {
                    format!(
                        "{:.0} reconciles/s, {:.0} writes/s",
                        r.noisy_reconciles, r.noisy_writes
                    )
                })
                .collect::<Vec<_>>()
                .join("; ")
        };
        let alone = median(&p99(&f.alone));
        self.row(
            format!(
                "fairness: a quiet plugin's event → reconcile start at {} /s ({} events), alone",
                thousands(f.rate),
                thousands(f.events),
            ),
            show(&f.alone),
            "-".into(),
            "",
        );
        for (runs, how) in [
            (
                &f.noisy,
                "with the host's defaults (no write limit)".to_owned(),
            ),
            (
                &f.limited,
                format!("held to writeQPS {LIMIT_QPS}, writeBurst {LIMIT_BURST}"),
            ),
        ] {
            self.ratio_row(
                format!(
                    "… beside test-noisy requeueing 8 keys in a loop, {how} ({})",
                    noise(runs)
                ),
                show(runs),
                "-".into(),
                format!("{:.2} (p99 beside ÷ alone)", median(&p99(runs)) / alone),
                "≤ 2",
            );
        }
        // The same without the co-located server's CPU (see fairness.rs).
        let host_alone = median(&p99(&f.host_alone));
        self.row(
            format!("… alone, the embedded server's threads at nice {SERVER_NICE}"),
            show(&f.host_alone),
            "-".into(),
            "",
        );
        self.ratio_row(
            format!(
                "… beside test-noisy with the host's defaults, the server's threads at nice {SERVER_NICE}: the host's own share ({})",
                noise(&f.host_noisy)
            ),
            show(&f.host_noisy),
            "-".into(),
            format!(
                "{:.2} (p99 beside ÷ alone)",
                median(&p99(&f.host_noisy)) / host_alone
            ),
            "≤ 2",
        );
    }

    pub(crate) fn scale(&mut self, sc: &Scale, reflector: Option<(u64, &SyncResult)>) {
        let gb = |b: Option<u64>| b.map_or("-".to_owned(), |b| format!("{:.2} GB", b as f64 / 1e9));
        let w = &sc.windlass;
        let short = if sc.pods < sc.asked {
            format!(
                " ({} asked: the embedded server, at {} a pod, does not fit in this machine's memory)",
                thousands(sc.asked),
                sc.server_per_pod.map_or("-".into(), bytes)
            )
        } else {
            String::new()
        };
        let per_pod = w.rss_growth.map(|g| g as f64 / sc.pods as f64);
        let at_asked = match (per_pod, w.rss, w.rss_growth) {
            (Some(p), Some(rss), Some(g)) if sc.pods < sc.asked => format!(
                "; at {} pods that rate gives {:.2} GB",
                thousands(sc.asked),
                (rss - g) as f64 / 1e9 + p * sc.asked as f64 / 1e9
            ),
            _ => String::new(),
        };
        self.row(
            format!(
                "scale: initial sync of {} pods into one host{short}: informer start → synced; the process's resident memory then",
                thousands(sc.pods)
            ),
            format!(
                "{:.2} s, {} ({} a pod{at_asked})",
                w.seconds,
                gb(w.rss),
                per_pod.map_or("-".into(), bytes)
            ),
            match reflector {
                Some((n, r)) => format!(
                    "a kube-rs reflector at {} pods (the sync rows): {:.2} s, {}",
                    thousands(n),
                    r.seconds,
                    gb(r.rss)
                ),
                None => "-".into(),
            },
            "≤ 1.5 GB at 1,000,000",
        );
    }

    pub(crate) fn print(&self) {
        println!("| benchmark | windlass | kube-rs peer | windlass / peer | target |");
        println!("|---|---|---|---|---|");
        for [a, b, c, r, d] in &self.rows {
            println!("| {a} | {b} | {c} | {r} | {d} |");
        }
    }
}

const MIB: f64 = 1024.0 * 1024.0;

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
