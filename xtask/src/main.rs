//! `cargo xtask`: build plugins, run, test and bench windlass with one command each.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

mod image;

const WASM_TARGET: &str = "wasm32-wasip2";
/// Folders whose crates are built to plugin components.
const PLUGIN_DIRS: [&str; 2] = ["plugins", "tests/fixtures"];

const USAGE: &str = "usage: cargo xtask <command> [args]

commands:
  build-plugins   build every plugin and test fixture to target/plugins/<name>.wasm
  test [ARGS]     build plugins, then run every test in the workspace (ARGS go to cargo test)
  run [ARGS]      build everything and run windlass with the example plugins (ARGS go to windlass)
  bench           build in release and print the benchmark tables
  image [--tag T] build the container image (Dockerfile) with buildah: a static
                  musl binary in an empty image; also written as an OCI archive
                  to target/image/windlass.oci.tar (for `kind load image-archive`)
  ci              what CI runs: fmt check, clippy -D warnings, then test";

fn main() -> Result<()> {
    let mut args = std::env::args().skip(1);
    let command = args.next().unwrap_or_default();
    let rest: Vec<String> = args.collect();
    match command.as_str() {
        "build-plugins" => build_plugins().map(|_| ()),
        "test" => test(&rest),
        "run" => run(&rest),
        "bench" => bench(&rest),
        "image" => image::build(&rest),
        "ci" => ci(),
        "" | "help" | "--help" | "-h" => {
            println!("{USAGE}");
            Ok(())
        }
        other => bail!("unknown command {other:?}\n\n{USAGE}"),
    }
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask lives in the workspace")
        .to_path_buf()
}

fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .map(|p| if p.is_absolute() { p } else { root().join(p) })
        .unwrap_or_else(|| root().join("target"))
}

/// Where built plugins land; tests find them through `WINDLASS_PLUGINS_DIR`.
fn plugins_out() -> PathBuf {
    target_dir().join("plugins")
}

fn cargo() -> Command {
    let mut cmd = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    cmd.current_dir(root());
    cmd
}

fn status(cmd: &mut Command) -> Result<()> {
    eprintln!("$ {}", describe(cmd));
    let status = cmd
        .status()
        .with_context(|| format!("could not start {}", describe(cmd)))?;
    if !status.success() {
        bail!("{} failed ({status})", describe(cmd));
    }
    Ok(())
}

fn describe(cmd: &Command) -> String {
    std::iter::once(cmd.get_program())
        .chain(cmd.get_args())
        .map(|s| s.to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Installs the wasm target through rustup when it is missing.
fn ensure_wasm_target() -> Result<()> {
    ensure_target(WASM_TARGET)
}

/// Installs a compilation target through rustup when it is missing.
fn ensure_target(target: &str) -> Result<()> {
    let installed = Command::new("rustup")
        .args(["target", "list", "--installed"])
        .output()
        .with_context(|| format!("rustup is needed to install the {target} target"))?;
    if String::from_utf8_lossy(&installed.stdout)
        .lines()
        .any(|l| l.trim() == target)
    {
        return Ok(());
    }
    status(Command::new("rustup").args(["target", "add", target]))
}

/// Every crate under the plugin folders, by package name.
fn plugin_crates() -> Result<Vec<String>> {
    crates_in(&PLUGIN_DIRS)
}

/// Every crate under the given folders, by package name.
fn crates_in(dirs: &[&str]) -> Result<Vec<String>> {
    let mut names = Vec::new();
    for dir in dirs {
        let Ok(entries) = std::fs::read_dir(root().join(dir)) else {
            continue;
        };
        for entry in entries {
            let manifest = entry?.path().join("Cargo.toml");
            if !manifest.is_file() {
                continue;
            }
            let text = std::fs::read_to_string(&manifest)?;
            let name = text
                .lines()
                .find_map(|l| {
                    let (key, value) = l.split_once('=')?;
                    (key.trim() == "name").then(|| value.trim().trim_matches('"').to_owned())
                })
                .with_context(|| format!("{} has no package name", manifest.display()))?;
            names.push(name);
        }
    }
    names.sort();
    Ok(names)
}

fn build_plugins() -> Result<Vec<PathBuf>> {
    ensure_wasm_target()?;
    let crates = plugin_crates()?;
    let mut cmd = cargo();
    cmd.args(["build", "--target", WASM_TARGET, "--profile", "plugin"]);
    for name in &crates {
        cmd.args(["-p", name]);
    }
    status(&mut cmd)?;
    let built = target_dir().join(WASM_TARGET).join("plugin");
    let out = plugins_out();
    std::fs::create_dir_all(&out)?;
    let mut files = Vec::new();
    for name in &crates {
        let from = built.join(format!("{}.wasm", name.replace('-', "_")));
        let to = out.join(format!("{name}.wasm"));
        // Copy to a temp name and rename, so a watching host never sees half a file.
        let tmp = out.join(format!(".{name}.wasm.tmp"));
        std::fs::copy(&from, &tmp).with_context(|| format!("{} was not built", from.display()))?;
        std::fs::rename(&tmp, &to)?;
        files.push(to);
    }
    eprintln!("built {} plugins into {}", files.len(), out.display());
    Ok(files)
}

fn test(args: &[String]) -> Result<()> {
    build_plugins()?;
    let mut cmd = cargo();
    cmd.args(["test", "--workspace"])
        .args(args)
        .env("WINDLASS_PLUGINS_DIR", plugins_out());
    eprintln!("$ {}", describe(&cmd));
    // Pass the output through, and total the per-binary results so the run
    // ends with one line saying what ran overall.
    let mut child = cmd
        .stdout(std::process::Stdio::piped())
        .spawn()
        .context("could not start cargo test")?;
    let stdout = child.stdout.take().context("cargo test has no stdout")?;
    let (mut passed, mut failed, mut ignored) = (0u64, 0u64, 0u64);
    for line in std::io::BufRead::lines(std::io::BufReader::new(stdout)) {
        let line = line?;
        println!("{line}");
        if let Some(rest) = line.trim().strip_prefix("test result: ") {
            passed += count(rest, " passed");
            failed += count(rest, " failed");
            ignored += count(rest, " ignored");
        }
    }
    let status = child.wait()?;
    println!();
    println!("tests: {passed} passed, {failed} failed, {ignored} skipped");
    if !status.success() {
        bail!("cargo test failed ({status})");
    }
    Ok(())
}

/// The number before `label` in a `test result:` line.
fn count(line: &str, label: &str) -> u64 {
    line.split(';')
        .find_map(|part| part.trim().strip_suffix(label.trim_start()))
        .and_then(|n| n.trim().rsplit(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

fn run(args: &[String]) -> Result<()> {
    build_plugins()?;
    status(cargo().args(["build", "-p", "windlass"]))?;
    // Only the example plugins: the test fixtures misbehave on purpose.
    let dir = target_dir().join("run").join("plugins");
    std::fs::create_dir_all(&dir)?;
    for name in crates_in(&["plugins"])? {
        let file = format!("{name}.wasm");
        let tmp = dir.join(format!(".{file}.tmp"));
        std::fs::copy(plugins_out().join(&file), &tmp)?;
        std::fs::rename(&tmp, dir.join(&file))?;
    }
    let windlass = target_dir().join("debug").join("windlass");
    let kubeconfig = target_dir().join("windlass.kubeconfig");
    // A kubeconfig left by an earlier run names an old port.
    let _ = std::fs::remove_file(&kubeconfig);
    let mut cmd = Command::new(windlass);
    cmd.current_dir(root())
        .args([
            "run",
            "--embedded",
            "--listen",
            "127.0.0.1:0",
            "--write-kubeconfig",
        ])
        .arg(&kubeconfig)
        .arg("--plugins")
        .arg(&dir);
    // Precompiled plugins kept between runs: compiling the example plugins
    // takes seconds, loading them from here a fraction of one.
    if !args.iter().any(|a| a.starts_with("--cache-dir")) {
        cmd.arg("--cache-dir")
            .arg(target_dir().join("run").join("cache"));
    }
    cmd.args(args);
    eprintln!("$ {}", describe(&cmd));
    let mut child = cmd.spawn().context("could not start windlass")?;
    let started = std::time::Instant::now();
    while !kubeconfig.is_file() {
        if let Some(status) = child.try_wait()? {
            bail!("windlass exited before it was up ({status})");
        }
        if started.elapsed() > std::time::Duration::from_secs(60) {
            eprintln!(
                "windlass did not write {} within a minute",
                kubeconfig.display()
            );
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let k = kubeconfig.display();
    seed(&kubeconfig);
    eprintln!();
    eprintln!("windlass: embedded API server; kubeconfig at {k}");
    eprintln!("plugins:  {}", dir.display());
    eprintln!("try:");
    for line in [
        "get nodes".to_owned(),
        "create deployment web --image=nginx --replicas=3".to_owned(),
        "get deploy,rs,pods -o wide".to_owned(),
        "expose deployment web --port=80 && kubectl --kubeconfig {k} get svc,endpoints web".to_owned(),
        "create job hello --image=busybox -- echo hi && kubectl --kubeconfig {k} wait --for=condition=complete job/hello".to_owned(),
        "apply -f examples/namespace.yaml -f examples/deployment.yaml".to_owned(),
        "-n shop get pods -o wide".to_owned(),
        "-n shop scale deploy/web --replicas=4   # the 4th stays Pending: see `describe pod`".to_owned(),
        "-n shop set image deploy/web web=nginx:1.28 && kubectl --kubeconfig {k} -n shop rollout status deploy/web".to_owned(),
        "apply -f examples/statefulset.yaml && kubectl --kubeconfig {k} get sts,pods,pvc -o wide".to_owned(),
    ] {
        eprintln!("  kubectl --kubeconfig {k} {}", line.replace("{k}", &k.to_string()));
    }
    eprintln!();
    let status = child.wait()?;
    if !status.success() {
        bail!("windlass exited with {status}");
    }
    Ok(())
}

/// Creates what the examples need and is absent: the simulated nodes of
/// `examples/nodes.yaml` and the default StorageClass of
/// `examples/storageclass.yaml`, with the real kubectl; without kubectl,
/// says how to do it by hand.
fn seed(kubeconfig: &Path) {
    for (what, file) in [
        ("example nodes", "nodes.yaml"),
        ("default storage class", "storageclass.yaml"),
    ] {
        let path = root().join("examples").join(file);
        let out = Command::new("kubectl")
            .arg("--kubeconfig")
            .arg(kubeconfig)
            .args(["create", "-f"])
            .arg(&path)
            .output();
        match out {
            Ok(out) => {
                // Existing objects are left as they are ("AlreadyExists").
                let text = String::from_utf8_lossy(&out.stdout);
                let created = text.lines().filter(|l| l.contains("created")).count();
                eprintln!("{what}: {created} created (examples/{file})");
            }
            Err(e) => eprintln!(
                "could not run kubectl ({e}); create the {what} with: kubectl --kubeconfig {} apply -f {}",
                kubeconfig.display(),
                path.display()
            ),
        }
    }
}

fn bench(args: &[String]) -> Result<()> {
    build_plugins()?;
    for (package, bench) in [
        ("windlass", "runtime"),
        ("windlass-apiserver", "apiserver"),
        ("windlass", "host"),
        ("windlass", "chain"),
    ] {
        status(
            cargo()
                .args(["bench", "-p", package, "--bench", bench, "--"])
                .args(args)
                .env("WINDLASS_PLUGINS_DIR", plugins_out()),
        )?;
    }
    Ok(())
}

fn ci() -> Result<()> {
    status(cargo().args(["fmt", "--all", "--", "--check"]))?;
    status(cargo().args([
        "clippy",
        "--workspace",
        "--all-targets",
        "--",
        "-D",
        "warnings",
    ]))?;
    test(&[])
}

#[cfg(test)]
mod tests {
    #[test]
    fn counts_are_read_from_cargo_test_summaries() {
        let line =
            "ok. 12 passed; 1 failed; 3 ignored; 0 measured; 0 filtered out; finished in 0.00s";
        assert_eq!(super::count(line, " passed"), 12);
        assert_eq!(super::count(line, " failed"), 1);
        assert_eq!(super::count(line, " ignored"), 3);
        assert_eq!(super::count("garbage", " passed"), 0);
    }
}
