//! The container image (`Dockerfile`, `cargo xtask image`) and what it
//! relies on: `--cache-dir` keeps precompiled plugins in a private
//! directory under a writable volume.
//!
//! Building the image compiles windlass in release for musl (minutes) and
//! needs buildah (Debian: `apt-get install buildah`) and musl-gcc
//! (`apt-get install musl-tools`). It runs wherever both are installed;
//! where they are missing it says it was skipped (a fresh machine has
//! neither). `WINDLASS_TEST_IMAGE=1` makes it required (a missing tool then
//! fails it), `WINDLASS_TEST_IMAGE=0` skips it.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|dir| dir.join(program).is_file()))
}

fn buildah(args: &[&str]) -> Output {
    Command::new("buildah")
        .args(["--storage-driver", "vfs"])
        .args(args)
        .output()
        .expect("buildah runs")
}

fn ok(out: Output, what: &str) -> String {
    assert!(
        out.status.success(),
        "{what}: {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Removes the test's container and image, however the test ends.
struct Cleanup {
    container: Option<String>,
    tag: &'static str,
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        if let Some(c) = &self.container {
            let _ = buildah(&["rm", c]);
        }
        let _ = buildah(&["rmi", "-f", self.tag]);
    }
}

#[test]
fn the_image_holds_only_the_static_binary_and_runs_it_as_non_root() {
    let tools = [("buildah", "buildah"), ("musl-gcc", "musl-tools")];
    let installed = tools.iter().all(|(tool, _)| on_path(tool));
    match std::env::var("WINDLASS_TEST_IMAGE").as_deref() {
        Ok("0") => {
            eprintln!("skipped: WINDLASS_TEST_IMAGE=0");
            return;
        }
        Ok(v) if !v.is_empty() => {
            // Asked for: a missing tool fails the test rather than skipping it.
            for (tool, package) in tools {
                assert!(
                    on_path(tool),
                    "WINDLASS_TEST_IMAGE is set, but {tool} is not installed (apt-get install {package})"
                );
            }
        }
        _ if !installed => {
            eprintln!(
                "skipped: building the image needs buildah and musl-gcc (apt-get install buildah musl-tools)"
            );
            return;
        }
        _ => {}
    }
    let tag = "localhost/windlass:image-test";
    let mut cleanup = Cleanup {
        container: None,
        tag,
    };
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args(["xtask", "image", "--tag", tag])
        .current_dir(workspace())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    ok(out, "cargo xtask image");
    let archive = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace().join("target"))
        .join("image/windlass.tar");
    assert!(archive.is_file(), "{} was not written", archive.display());

    // The image's configuration: a non-root user, the binary as entrypoint,
    // the host defaults a pod relies on.
    let inspect: serde_json::Value = serde_json::from_str(&ok(
        buildah(&["inspect", "--type", "image", tag]),
        "inspect",
    ))
    .unwrap();
    let config = &inspect["OCIv1"]["config"];
    assert_eq!(config["User"], "65532:65532", "{config}");
    assert_eq!(
        config["Entrypoint"],
        serde_json::json!(["/usr/local/bin/windlass"]),
        "{config}"
    );
    let cmd = config["Cmd"].to_string();
    assert!(
        cmd.contains("--cache-dir=/var/cache/windlass/artifacts")
            && cmd.contains("--plugins=/plugins"),
        "{cmd}"
    );

    // Its filesystem holds the binary and nothing else.
    let container = ok(buildah(&["from", "--pull=false", tag]), "from")
        .trim()
        .to_owned();
    cleanup.container = Some(container.clone());
    let root = ok(buildah(&["mount", &container]), "mount")
        .trim()
        .to_owned();
    let mut files = Vec::new();
    let mut stack = vec![PathBuf::from(&root)];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                files.push(path.strip_prefix(&root).unwrap().display().to_string());
            }
        }
    }
    let _ = buildah(&["umount", &container]);
    assert_eq!(files, ["usr/local/bin/windlass"]);

    // The binary runs in that empty root (so it is static), as the image's user.
    let run = |extra: &[&str], args: &[&str]| {
        let mut all = vec!["run", "--isolation", "chroot"];
        all.extend_from_slice(extra);
        all.push(&container);
        all.push("--");
        all.extend_from_slice(args);
        buildah(&all)
    };
    let version = ok(
        run(&[], &["/usr/local/bin/windlass", "--version"]),
        "windlass --version",
    );
    assert_eq!(
        version.trim(),
        format!("windlass {}", env!("CARGO_PKG_VERSION"))
    );
    let plugins = windlass_tests::plugin("replicaset");
    let mount = format!("{}:/plugins:ro", plugins.parent().unwrap().display());
    let manifest = ok(
        run(
            &["-v", &mount],
            &[
                "/usr/local/bin/windlass",
                "plugin",
                "inspect",
                "/plugins/replicaset.wasm",
            ],
        ),
        "windlass plugin inspect",
    );
    let manifest: serde_json::Value = serde_json::from_str(&manifest).unwrap();
    assert_eq!(manifest["name"], "replicaset");
}

/// `--cache-dir` under a world-writable volume (an emptyDir is mode 777):
/// the host creates the directory itself, private, and fills it.
#[test]
fn the_cache_dir_flag_keeps_precompiled_plugins_private() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let volume = dir.path().join("volume");
    std::fs::create_dir(&volume).unwrap();
    std::fs::set_permissions(&volume, std::fs::Permissions::from_mode(0o777)).unwrap();
    let plugins = dir.path().join("plugins");
    std::fs::create_dir(&plugins).unwrap();
    std::fs::copy(
        windlass_tests::plugin("replicaset"),
        plugins.join("replicaset.wasm"),
    )
    .unwrap();
    let cache = volume.join("artifacts");

    let log = std::fs::File::create(dir.path().join("log")).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_windlass"))
        .args(["run", "--embedded", "--listen", "127.0.0.1:0", "--plugins"])
        .arg(&plugins)
        .arg("--cache-dir")
        .arg(&cache)
        // Nowhere else to write: the default cache is not used.
        .env("XDG_CACHE_HOME", "/nonexistent")
        .env("HOME", "/nonexistent")
        .stderr(log)
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    let filled = loop {
        let n = std::fs::read_dir(&cache).map(|d| d.count()).unwrap_or(0);
        if n > 0 || Instant::now() > deadline || child.try_wait().unwrap().is_some() {
            break n > 0;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let _ = child.kill();
    let _ = child.wait();
    let log = std::fs::read_to_string(dir.path().join("log")).unwrap();
    assert!(filled, "nothing cached in {}; log:\n{log}", cache.display());
    let mode = std::fs::metadata(&cache).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o700, "the cache directory is private");
    assert!(!log.contains("artifact cache disabled"), "{log}");

    // The volume's root itself is refused (anyone could plant native code
    // there): the host says so and runs without a cache.
    let out = Command::new(env!("CARGO_BIN_EXE_windlass"))
        .args(["run", "--embedded", "--listen", "127.0.0.1:0", "--plugins"])
        .arg(dir.path().join("missing"))
        .arg("--cache-dir")
        .arg(&volume)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("artifact cache disabled")
            && stderr.contains("writable by group or others"),
        "{stderr}"
    );
}
