//! Fairness between plugins, through the real `windlass run` binary: the
//! `test-noisy` fixture (requeues itself at once and sends a merge patch
//! and eight events on every pass) runs as an instance with a write limit
//! beside the replicaset plugin, behind a recording proxy that attributes
//! every request to its plugin by user agent. The quiet plugin still
//! converges its ReplicaSets while the noisy one floods; the noisy one's
//! requests stay within its limit over the whole measured window; and
//! `/metrics` shows the limits and the time spent waiting for them. And
//! with no limit at all, the noisy plugin's events are held to client-go's
//! correlator rules.
//!
//! Nothing here is timed: the bound `requests ≤ burst + qps × elapsed`
//! holds however slow the machine is (a slower machine only lengthens the
//! window), and everything else is an outcome waited for.

use std::sync::Arc;
use std::time::{Duration, Instant};

use windlass_tests::{Cluster, Recorder, Server, free_port, http_get};

const WAIT: Duration = Duration::from_secs(120);
const QPS: f64 = 10.0;
const BURST: u32 = 5;
const RS: usize = 5;
const REPLICAS: usize = 3;

fn replicaset(name: &str) -> String {
    format!(
        r#"apiVersion: apps/v1
kind: ReplicaSet
metadata: {{name: {name}, namespace: default}}
spec:
  replicas: {REPLICAS}
  selector: {{matchLabels: {{app: {name}}}}}
  template:
    metadata: {{labels: {{app: {name}}}}}
    spec: {{containers: [{{name: c, image: nginx}}]}}
"#
    )
}

fn noisy_configmap(name: &str) -> String {
    format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {name}, namespace: default, labels: {{noise: 'on'}}}}\n"
    )
}

/// Requests the noisy instance has sent so far.
fn noisy_requests(recorder: &Recorder) -> usize {
    recorder
        .requests()
        .iter()
        .filter(|r| r.user_agent == "windlass/noisy")
        .count()
}

/// The value of the series `line_start` (name and labels) in `metrics`.
fn sample(metrics: &str, line_start: &str) -> Option<f64> {
    metrics
        .lines()
        .find_map(|l| l.strip_prefix(line_start)?.trim().parse().ok())
}

/// An in-memory server behind a recording proxy, and a kubeconfig (in the
/// returned directory) that goes through the proxy.
async fn recorded_server() -> (
    windlass_apiserver::RunningServer,
    Arc<Recorder>,
    tempfile::TempDir,
    std::path::PathBuf,
) {
    let server = windlass_apiserver::start(windlass_apiserver::Config::new().in_memory())
        .await
        .unwrap();
    let recorder = Arc::new(Recorder::start(server.addr()).await);
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    std::fs::write(
        &kubeconfig,
        recorder.kubeconfig(&server.kubeconfig(), server.addr()),
    )
    .unwrap();
    (server, recorder, dir, kubeconfig)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_noisy_plugin_is_held_to_its_write_limit_and_a_quiet_one_still_converges() {
    let (_server, recorder, _dir, kubeconfig) = recorded_server().await;
    let admin = free_port();
    let recorded = recorder.clone();
    tokio::task::spawn_blocking(move || {
        let recorder = recorded;
        // The window opens before the host (and so the noisy plugin's
        // bucket) exists.
        let opened = Instant::now();
        let instances =
            format!("instances:\n- name: noisy\n  writeQPS: {QPS}\n  writeBurst: {BURST}\n");
        let c = Cluster::start_with_args(
            env!("CARGO_BIN_EXE_windlass"),
            &["replicaset", "test-noisy"],
            &[("test-noisy.instances.yaml", &instances)],
            &["--admin", &format!("127.0.0.1:{admin}")],
            Server::Kubeconfig(&kubeconfig),
        );

        // The noise starts, and outruns its burst at once.
        let noise: String = (0..4)
            .map(|i| noisy_configmap(&format!("noise-{i}")))
            .collect::<Vec<_>>()
            .join("---\n");
        c.ok(&["apply", "-f", "-"], Some(&noise));
        c.eventually("the noisy plugin floods", WAIT, || {
            let n = noisy_requests(&recorder);
            (n > 2 * BURST as usize)
                .then_some(())
                .ok_or(format!("{n} noisy requests"))
        });
        // Its passes succeed (no failure is what keeps it busy): the stamp
        // is on its ConfigMaps.
        c.eventually("the noisy plugin stamps its ConfigMaps", WAIT, || {
            let stamped = c
                .items(&["configmaps", "-l", "noise=on"])
                .iter()
                .filter(|cm| cm["metadata"]["annotations"]["noise/at"].is_string())
                .count();
            (stamped == 4)
                .then_some(())
                .ok_or(format!("{stamped} stamped"))
        });

        // The quiet plugin converges its ReplicaSets meanwhile.
        let sets: String = (0..RS)
            .map(|i| replicaset(&format!("quiet-{i}")))
            .collect::<Vec<_>>()
            .join("---\n");
        c.ok(&["apply", "-f", "-"], Some(&sets));
        c.eventually("every quiet ReplicaSet converges", WAIT, || {
            let mut behind = Vec::new();
            for i in 0..RS {
                let name = format!("quiet-{i}");
                let pods = c.items(&["pods", "-l", &format!("app={name}")]).len();
                let status = c.json(&["replicaset", &name])["status"]["replicas"].as_u64();
                if pods != REPLICAS || status != Some(REPLICAS as u64) {
                    behind.push(format!("{name}: {pods} pods, status {status:?}"));
                }
            }
            behind.is_empty().then_some(()).ok_or(behind.join("; "))
        });
        // And the noise went on all along.
        let at_convergence = noisy_requests(&recorder);
        c.eventually("the noisy plugin is still flooding", WAIT, || {
            let n = noisy_requests(&recorder);
            (n > at_convergence)
                .then_some(())
                .ok_or(format!("{n} noisy requests"))
        });

        // Held to its limit over the whole window: read the count first,
        // then close the window, so the bound can only be generous.
        let sent = noisy_requests(&recorder);
        let elapsed = opened.elapsed().as_secs_f64();
        let bound = f64::from(BURST) + QPS * elapsed;
        assert!(
            sent as f64 <= bound,
            "the noisy plugin sent {sent} requests in {elapsed:.1}s; its limit allows {bound:.0}"
        );

        // /metrics shows each plugin's limit and the noisy one's waiting.
        let (code, metrics) = http_get(admin, "/metrics").expect("the admin endpoint answers");
        assert_eq!(code, 200);
        assert_eq!(
            sample(&metrics, r#"windlass_plugin_write_qps{plugin="noisy"}"#),
            Some(QPS)
        );
        assert_eq!(
            sample(&metrics, r#"windlass_plugin_write_burst{plugin="noisy"}"#),
            Some(f64::from(BURST))
        );
        assert_eq!(
            sample(
                &metrics,
                r#"windlass_plugin_write_qps{plugin="replicaset"}"#
            ),
            Some(0.0),
            "the quiet plugin has the host's default, unlimited"
        );
        // It sent more than its burst, so some requests waited.
        let waited = sample(
            &metrics,
            r#"windlass_write_throttle_seconds_total{plugin="noisy"}"#,
        )
        .expect("a throttle counter for the noisy plugin");
        assert!(waited > 0.0, "{metrics}");
        // client-go's histogram of those waits, for the limited plugin.
        let limited = metrics.lines().find_map(|l| {
            (l.starts_with("rest_client_rate_limiter_duration_seconds_count{")
                && l.contains(r#"plugin="noisy""#))
            .then(|| l.rsplit(' ').next()?.parse::<f64>().ok())
            .flatten()
        });
        assert!(limited.is_some_and(|n| n >= sent as f64), "{metrics}");
        c.stop();
    })
    .await
    .unwrap();
}

/// Without a write limit, the noisy plugin's events are still held to
/// client-go's correlator rules: at most 25 Event requests about one
/// object (nine distinct messages, then one combined event whose count
/// keeps rising), the rest dropped and counted on `/metrics`, while its
/// patches go on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugin_recording_events_in_a_loop_is_held_to_25_about_an_object() {
    let (_server, recorder, _dir, kubeconfig) = recorded_server().await;
    let admin = free_port();
    tokio::task::spawn_blocking(move || {
        let started = Instant::now();
        let c = Cluster::start_with_args(
            env!("CARGO_BIN_EXE_windlass"),
            &["test-noisy"],
            &[],
            &["--admin", &format!("127.0.0.1:{admin}")],
            Server::Kubeconfig(&kubeconfig),
        );
        c.ok(&["apply", "-f", "-"], Some(&noisy_configmap("noise-0")));
        let dropped = |metrics: &str| {
            sample(
                metrics,
                r#"windlass_events_dropped_total{plugin="test-noisy"}"#,
            )
        };
        c.eventually(
            "the spam filter drops the noisy plugin's events",
            WAIT,
            || {
                let (_, metrics) = http_get(admin, "/metrics").ok_or("no answer on /metrics")?;
                let n = dropped(&metrics).unwrap_or(0.0);
                (n > 100.0).then_some(()).ok_or(format!("{n} dropped"))
            },
        );
        let stamp = |c: &Cluster| {
            c.json(&["configmap", "noise-0"])["metadata"]["annotations"]["noise/at"]
                .as_str()
                .map(str::to_owned)
        };
        let before = stamp(&c);
        c.eventually("its patches go on", WAIT, || {
            let now = stamp(&c);
            (now != before)
                .then_some(())
                .ok_or(format!("stamp {now:?}"))
        });

        // Requests about Events the noisy plugin sent: at most 25 (one
        // request may carry several occurrences of the combined event), and
        // one more every five minutes.
        let sent = recorder
            .requests()
            .iter()
            .filter(|r| r.user_agent == "windlass/test-noisy" && r.path.contains("/events"))
            .count() as u64;
        let allowed = 25 + started.elapsed().as_secs() / 300 + 1;
        assert!(
            (10..=allowed).contains(&sent),
            "{sent} event requests (allowed {allowed})"
        );
        // Nine distinct messages, then one combined event counting the rest,
        // the dropped occurrences too.
        let events: Vec<_> = c
            .items(&["events"])
            .into_iter()
            .filter(|e| e["involvedObject"]["name"] == "noise-0")
            .collect();
        let combined: Vec<_> = events
            .iter()
            .filter(|e| {
                e["message"]
                    .as_str()
                    .is_some_and(|m| m.starts_with("(combined from similar events): noise "))
            })
            .collect();
        assert_eq!(combined.len(), 1, "{events:#?}");
        assert_eq!(events.len(), 10, "{events:#?}");
        let count = combined[0]["count"].as_u64().unwrap_or(0);
        assert!(count > sent - 9, "{count}: {events:#?}");
        c.stop();
    })
    .await
    .unwrap();
}
