//! `windlass apiserver` as a test backend for other languages: the
//! kubeconfig it writes works for kubectl as soon as it exists (always
//! run), and the official Python client and a Kopf operator pass
//! `examples/testing/python` with pytest (opt-in, see below and
//! docs/testing-with-windlass.md).
//!
//! The Python part needs the `kubernetes`, `kopf` and `pytest` packages,
//! which CI does not have. It runs when `WINDLASS_PYTHON_TESTS=1`: it
//! installs them from PyPI into a temporary virtual environment (or uses
//! the Python named by `WINDLASS_PYTHON`, which must have them). Without
//! it the test prints that it was skipped and how to run it, and passes.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The server process, killed when the test ends however it ends.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn kubectl(kubeconfig: &Path, args: &[&str]) -> Output {
    Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(args)
        .output()
        .expect("kubectl is installed")
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// What a pytest fixture in any language does: start the binary on a free
/// port, wait for the kubeconfig (written only once the server listens),
/// then use it. No polling of the server itself: the file's existence is
/// the promise.
#[test]
fn the_binary_writes_a_kubeconfig_clients_can_use_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    let mut server = Server(
        Command::new(env!("CARGO_BIN_EXE_windlass"))
            .args(["apiserver", "--in-memory", "--listen", "127.0.0.1:0"])
            .arg("--write-kubeconfig")
            .arg(&kubeconfig)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("windlass runs"),
    );
    let started = Instant::now();
    while !kubeconfig.exists() {
        assert!(
            server.0.try_wait().unwrap().is_none(),
            "windlass apiserver exited before writing its kubeconfig"
        );
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "no kubeconfig written"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let config = std::fs::read_to_string(&kubeconfig).unwrap();
    assert!(
        !config.contains("127.0.0.1:0"),
        "the kubeconfig names the real port:\n{config}"
    );

    let out = kubectl(
        &kubeconfig,
        &[
            "get",
            "service",
            "kubernetes",
            "-n",
            "default",
            "-o",
            "name",
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "service/kubernetes"
    );

    let out = kubectl(
        &kubeconfig,
        &["create", "configmap", "c", "--from-literal=a=1"],
    );
    assert!(out.status.success(), "{}", text(&out));
    let out = kubectl(
        &kubeconfig,
        &["get", "configmap", "c", "-o", "jsonpath={.data.a}"],
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), "1", "{}", text(&out));
}

/// A Python with `kubernetes`, `kopf` and `pytest`: `$WINDLASS_PYTHON`,
/// else a new virtual environment in `dir` with them installed from PyPI.
fn python_with_packages(dir: &Path) -> PathBuf {
    if let Some(p) = std::env::var_os("WINDLASS_PYTHON") {
        return p.into();
    }
    let venv = dir.join("venv");
    let out = Command::new("python3")
        .args(["-m", "venv"])
        .arg(&venv)
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "python3 -m venv failed:\n{}",
        text(&out)
    );
    let python = venv.join("bin/python");
    let out = Command::new(&python)
        .args([
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "kubernetes",
            "kopf",
            "pytest",
        ])
        .output()
        .expect("pip runs");
    assert!(
        out.status.success(),
        "installing kubernetes, kopf and pytest from PyPI failed:\n{}",
        text(&out)
    );
    python
}

#[test]
fn python_client_and_kopf_operator() {
    if std::env::var("WINDLASS_PYTHON_TESTS").as_deref() != Ok("1") {
        // Straight to stderr: the test harness captures `eprintln!` of a
        // passing test, and this must be seen.
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED python_client_and_kopf_operator: it needs the Python packages \
             kubernetes, kopf and pytest. Run it with\n    \
             WINDLASS_PYTHON_TESTS=1 cargo test -p windlass --test python_clients\n\
             (installs them from PyPI into a temporary venv; set WINDLASS_PYTHON=/path/to/python \
             to use a Python that has them)"
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let python = python_with_packages(dir.path());
    let tests = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/testing/python");
    let out = Command::new(&python)
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider"])
        .arg(&tests)
        .env("WINDLASS_BIN", env!("CARGO_BIN_EXE_windlass"))
        .output()
        .expect("python runs");
    let text = text(&out);
    assert!(out.status.success(), "pytest failed:\n{text}");
    assert!(!text.contains("skipped"), "pytest skipped tests:\n{text}");
    assert!(text.contains("4 passed"), "{text}");
}
