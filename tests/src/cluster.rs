//! A one-machine cluster for end-to-end tests: the real `windlass run`
//! binary with a plugins directory, and the real `kubectl` against it.
//!
//! [`Cluster::start`] runs `windlass run --embedded` (or `--kubeconfig` for
//! a server the test runs itself, behind a proxy say), waits until it is
//! up, and gives back a handle that runs kubectl with the right kubeconfig.
//! The process is killed when the handle drops; `stop` asks it to stop
//! with SIGTERM and returns its log.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

/// A running `windlass run` and its kubectl.
pub struct Cluster {
    child: Option<Child>,
    kubeconfig: PathBuf,
    _dir: tempfile::TempDir,
}

/// Where the windlass under test talks to.
pub enum Server<'a> {
    /// Its own embedded API server.
    Embedded,
    /// A server the test runs, by kubeconfig.
    Kubeconfig(&'a Path),
}

impl Cluster {
    /// Starts `binary run` (the test's `env!("CARGO_BIN_EXE_windlass")`)
    /// with the built plugins named in `plugins`, against `server`.
    pub fn start(binary: &str, plugins: &[&str], server: Server<'_>) -> Cluster {
        Self::start_with(binary, plugins, &[], server)
    }

    /// [`Cluster::start`] with more files in the plugins directory from the
    /// start: `(file name, content)`, e.g. an instances file.
    pub fn start_with(
        binary: &str,
        plugins: &[&str],
        files: &[(&str, &str)],
        server: Server<'_>,
    ) -> Cluster {
        Self::start_with_args(binary, plugins, files, &[], server)
    }

    /// [`Cluster::start_with`] with more `windlass run` flags, e.g.
    /// `--admin`.
    pub fn start_with_args(
        binary: &str,
        plugins: &[&str],
        files: &[(&str, &str)],
        args: &[&str],
        server: Server<'_>,
    ) -> Cluster {
        let dir = tempfile::tempdir().expect("a temp dir");
        let plugins_dir = dir.path().join("plugins");
        std::fs::create_dir(&plugins_dir).unwrap();
        for (name, content) in files {
            std::fs::write(plugins_dir.join(name), content).unwrap();
        }
        for name in plugins {
            std::fs::copy(
                crate::plugin(name),
                plugins_dir.join(format!("{name}.wasm")),
            )
            .unwrap();
        }
        let mut cmd = Command::new(binary);
        cmd.arg("run").arg("--plugins").arg(&plugins_dir).args(args);
        let kubeconfig = match server {
            Server::Embedded => {
                let k = dir.path().join("kubeconfig");
                cmd.args([
                    "--embedded",
                    "--listen",
                    "127.0.0.1:0",
                    "--write-kubeconfig",
                ])
                .arg(&k);
                k
            }
            Server::Kubeconfig(k) => {
                cmd.arg("--kubeconfig").arg(k);
                k.to_path_buf()
            }
        };
        let log = std::fs::File::create(dir.path().join("windlass.log")).unwrap();
        let child = cmd
            .env("XDG_CACHE_HOME", dir.path().join("cache"))
            .env("RUST_LOG", "info")
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("start windlass");
        let mut cluster = Cluster {
            child: Some(child),
            kubeconfig,
            _dir: dir,
        };
        let up = Instant::now();
        while !cluster.kubeconfig.is_file() || !cluster.kubectl(&["get", "ns"]).status.success() {
            if let Some(status) = cluster
                .child
                .as_mut()
                .and_then(|c| c.try_wait().ok())
                .flatten()
            {
                panic!(
                    "windlass exited at start ({status}); log:\n{}",
                    cluster.log()
                );
            }
            assert!(
                up.elapsed() < Duration::from_secs(60),
                "windlass not up within a minute; log:\n{}",
                cluster.log()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        cluster
    }

    /// The plugins directory windlass watches (files written here are
    /// hot-reloaded).
    pub fn plugins_dir(&self) -> PathBuf {
        self._dir.path().join("plugins")
    }

    /// The kubeconfig kubectl uses.
    pub fn kubeconfig(&self) -> &Path {
        &self.kubeconfig
    }

    /// What windlass has logged so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self._dir.path().join("windlass.log")).unwrap_or_default()
    }

    /// Runs kubectl with `args`.
    pub fn kubectl(&self, args: &[&str]) -> Output {
        crate::process::kubectl(&self.kubeconfig, args, None)
    }

    /// Runs kubectl with `args` and `stdin`; fails the test, with kubectl's
    /// error, unless it succeeds. Returns its stdout.
    pub fn ok(&self, args: &[&str], stdin: Option<&str>) -> String {
        crate::process::kubectl_ok(&self.kubeconfig, args, stdin)
    }

    /// `kubectl get ARGS -o json`, parsed.
    pub fn json(&self, args: &[&str]) -> Value {
        let mut all = vec!["get"];
        all.extend_from_slice(args);
        all.extend_from_slice(&["-o", "json"]);
        serde_json::from_str(&self.ok(&all, None)).expect("kubectl printed JSON")
    }

    /// The items of `kubectl get ARGS -o json`.
    pub fn items(&self, args: &[&str]) -> Vec<Value> {
        self.json(args)["items"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    }

    /// Polls `check` every 200 ms until it holds; fails the test with what
    /// it last saw (and windlass's log) after `timeout`.
    pub fn eventually(
        &self,
        what: &str,
        timeout: Duration,
        mut check: impl FnMut() -> Result<(), String>,
    ) {
        let deadline = Instant::now() + timeout;
        loop {
            match check() {
                Ok(()) => return,
                Err(last) if Instant::now() > deadline => {
                    let log = self.log();
                    let tail: Vec<&str> = log.lines().rev().take(40).collect();
                    panic!(
                        "{what}: not within {timeout:?}; last: {last}\nwindlass log (last lines, newest first):\n{}",
                        tail.join("\n")
                    )
                }
                Err(_) => std::thread::sleep(Duration::from_millis(200)),
            }
        }
    }

    /// SIGTERM, then waits (up to 30 s) for the exit; returns the log.
    pub fn stop(mut self) -> String {
        if let Some(mut child) = self.child.take() {
            let _ = Command::new("kill")
                .args(["-TERM", &child.id().to_string()])
                .status();
            let deadline = Instant::now() + Duration::from_secs(30);
            while child.try_wait().ok().flatten().is_none() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        self.log()
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}
