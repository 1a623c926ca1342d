//! The real `kubectl` against a server started in the test's process.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use windlass_apiserver::{Config, RunningServer, start};

pub const KUBECTL: &str = "/usr/bin/kubectl";

/// A server in this process and the real kubectl pointed at it (with a
/// HOME of its own, so no cache is shared between tests).
pub struct Kube {
    pub dir: tempfile::TempDir,
    pub kubeconfig: PathBuf,
    pub server: RunningServer,
}

impl Kube {
    pub async fn new() -> Self {
        Self::with(Config::new().in_memory()).await
    }

    pub async fn with(config: Config) -> Self {
        let server = start(config).await.expect("server starts");
        let dir = tempfile::tempdir().unwrap();
        let kubeconfig = dir.path().join("kubeconfig");
        server.write_kubeconfig(&kubeconfig).unwrap();
        Self {
            dir,
            kubeconfig,
            server,
        }
    }

    pub fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new(KUBECTL);
        c.arg("--kubeconfig").arg(&self.kubeconfig).args(args);
        c.env("HOME", self.dir.path());
        c
    }

    pub fn run(&self, args: &[&str], stdin: Option<&str>) -> Output {
        let mut c = self.cmd(args);
        c.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = c.spawn().expect("kubectl runs");
        if let Some(input) = stdin {
            child
                .stdin
                .take()
                .unwrap()
                .write_all(input.as_bytes())
                .unwrap();
        }
        drop(child.stdin.take());
        child.wait_with_output().unwrap()
    }

    /// Runs and asserts success; returns stdout.
    pub fn ok(&self, args: &[&str]) -> String {
        self.ok_in(args, None)
    }

    pub fn ok_in(&self, args: &[&str], stdin: Option<&str>) -> String {
        let out = self.run(args, stdin);
        let (so, se) = (
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
        );
        assert!(
            out.status.success(),
            "kubectl {args:?} failed:\nstdout: {so}\nstderr: {se}"
        );
        so.into_owned()
    }

    /// Runs and asserts failure; returns stderr.
    pub fn fail(&self, args: &[&str], stdin: Option<&str>) -> String {
        let out = self.run(args, stdin);
        assert!(
            !out.status.success(),
            "kubectl {args:?} unexpectedly succeeded: {}",
            String::from_utf8_lossy(&out.stdout)
        );
        String::from_utf8_lossy(&out.stderr).into_owned()
    }

    /// Applies a CustomResourceDefinition and waits until its kind is
    /// served (`Established`), as a user's `kubectl wait` would.
    pub fn apply_crd(&self, yaml: &str) {
        self.ok_in(&["apply", "-f", "-"], Some(yaml));
        let name = yaml
            .lines()
            .find_map(|l| l.trim().strip_prefix("metadata: {name: "))
            .and_then(|n| n.strip_suffix('}'))
            .expect("the CRD's metadata on one line: `metadata: {name: ...}`");
        self.ok(&[
            "wait",
            "--for=condition=Established",
            &format!("crd/{name}"),
            "--timeout=10s",
        ]);
    }

    pub fn json(&self, args: &[&str]) -> Value {
        let mut a = args.to_vec();
        a.extend(["-o", "json"]);
        serde_json::from_str(&self.ok(&a)).unwrap()
    }

    pub fn exists(&self, args: &[&str]) -> bool {
        self.run(args, None).status.success()
    }

    /// Polls until `f` holds (GC runs asynchronously).
    pub fn eventually(&self, what: &str, f: impl Fn() -> bool) {
        let start = Instant::now();
        while !f() {
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "timed out waiting for {what}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}
