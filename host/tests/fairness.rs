//! Fairness between plugins, through the real `windlass run` binary: the
//! `test-noisy` fixture (requeues itself at once and sends a merge patch
//! and eight events on every pass) runs as an instance with a write limit
//! beside the replicaset plugin, behind a recording proxy that attributes
//! every request to its plugin by user agent. The quiet plugin still
//! converges its ReplicaSets while the noisy one floods; the noisy one's
//! requests stay within its limit over the whole measured window; and
//! `/metrics` shows the limits and the time spent waiting for them.
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_noisy_plugin_is_held_to_its_write_limit_and_a_quiet_one_still_converges() {
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
