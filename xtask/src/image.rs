//! `cargo xtask image`: the container image of the root `Dockerfile`, built
//! with buildah around a static musl binary, so that nothing is pulled.
//!
//! Steps: install the musl target if missing; build `windlass` for it in
//! release; put the binary alone in `target/image/context/`; `buildah bud`
//! with the vfs storage driver and chroot isolation (they work as root
//! without overlay mounts or user namespaces, in a VM or a container); then
//! write the image as a docker-archive, `target/image/windlass.tar`, which
//! `kind load image-archive`, `docker load`, `podman load` and
//! `ctr images import` all read.

use std::path::Path;
use std::process::Command;

use anyhow::{Context, Result, bail};

use crate::{cargo, ensure_target, root, status, target_dir};

const MUSL_TARGET: &str = "x86_64-unknown-linux-musl";

/// The tag the image gets unless `--tag` says otherwise; `localhost/` is
/// what buildah and containerd call a name with no registry, so the same
/// name works in deploy/kubernetes after `kind load image-archive`.
fn default_tag() -> String {
    format!("localhost/windlass:{}", env!("CARGO_PKG_VERSION"))
}

/// buildah with the storage settings that work everywhere it runs here.
fn buildah() -> Command {
    let mut cmd = Command::new("buildah");
    cmd.args(["--storage-driver", "vfs"]);
    cmd
}

fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|dir| dir.join(program).is_file()))
}

pub fn build(args: &[String]) -> Result<()> {
    let mut tag = default_tag();
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--tag" => tag = args.next().context("--tag needs a value")?.clone(),
            other => match other.strip_prefix("--tag=") {
                Some(t) => tag = t.to_owned(),
                None => bail!("unknown argument {other:?}; usage: cargo xtask image [--tag TAG]"),
            },
        }
    }
    if !on_path("buildah") {
        bail!(
            "buildah is not installed (Debian: apt-get install buildah); or build the context \
             this command prepares with any OCI builder: docker build -f Dockerfile target/image/context"
        );
    }
    let binary = static_binary()?;
    let context = target_dir().join("image").join("context");
    let _ = std::fs::remove_dir_all(&context);
    std::fs::create_dir_all(&context)?;
    std::fs::copy(&binary, context.join("windlass"))
        .with_context(|| format!("copying {}", binary.display()))?;
    status(
        buildah()
            .args(["bud", "--isolation", "chroot", "--pull=false", "-f"])
            .arg(root().join("Dockerfile"))
            .args(["-t", &tag])
            .arg(&context),
    )?;
    let archive = target_dir().join("image").join("windlass.tar");
    let _ = std::fs::remove_file(&archive);
    status(
        buildah()
            .arg("push")
            .arg(&tag)
            .arg(format!("docker-archive:{}:{tag}", archive.display())),
    )?;
    eprintln!(
        "image {tag}: in buildah's storage, and as {}",
        archive.display()
    );
    eprintln!("  kind load image-archive {}", archive.display());
    Ok(())
}

/// Builds `windlass` as a static musl binary; returns its path.
fn static_binary() -> Result<std::path::PathBuf> {
    ensure_target(MUSL_TARGET)?;
    // SQLite (rusqlite's bundled copy) and ring have C parts: they need a C
    // compiler for musl.
    if !on_path("musl-gcc") && std::env::var_os("CC_x86_64_unknown_linux_musl").is_none() {
        bail!(
            "musl-gcc is needed to compile the C parts (SQLite, ring) for {MUSL_TARGET}: \
             apt-get install musl-tools (or set CC_x86_64_unknown_linux_musl)"
        );
    }
    let mut cmd = cargo();
    cmd.args([
        "build",
        "--release",
        "--target",
        MUSL_TARGET,
        "-p",
        "windlass",
        "--bin",
        "windlass",
    ]);
    if std::env::var_os("CC_x86_64_unknown_linux_musl").is_none() {
        cmd.env("CC_x86_64_unknown_linux_musl", "musl-gcc");
    }
    status(&mut cmd)?;
    let binary = target_dir()
        .join(MUSL_TARGET)
        .join("release")
        .join("windlass");
    check_static(&binary)?;
    Ok(binary)
}

/// Refuses a binary that asks for a dynamic loader: in an empty image it
/// would not start.
fn check_static(binary: &Path) -> Result<()> {
    let bytes =
        std::fs::read(binary).with_context(|| format!("{} was not built", binary.display()))?;
    if has_interpreter(&bytes).context("not a 64-bit little-endian ELF file")? {
        bail!(
            "{} is dynamically linked (it names a program interpreter); it would not start in an empty image",
            binary.display()
        );
    }
    Ok(())
}

/// Whether a 64-bit little-endian ELF file has a `PT_INTERP` program
/// header (a dynamic loader); `None` if it is not such a file.
fn has_interpreter(elf: &[u8]) -> Option<bool> {
    const PT_INTERP: u32 = 3;
    if elf.get(..5)? != b"\x7fELF\x02" || *elf.get(5)? != 1 {
        return None;
    }
    let u16_at = |at: usize| Some(u16::from_le_bytes(elf.get(at..at + 2)?.try_into().ok()?));
    let phoff = u64::from_le_bytes(elf.get(0x20..0x28)?.try_into().ok()?) as usize;
    let (size, count) = (u16_at(0x36)? as usize, u16_at(0x38)? as usize);
    let mut found = false;
    for i in 0..count {
        let at = phoff + i * size;
        found |= u32::from_le_bytes(elf.get(at..at + 4)?.try_into().ok()?) == PT_INTERP;
    }
    Some(found)
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_dynamic_executable_names_its_loader() {
        // This test binary is linked the usual (dynamic) way on Linux.
        let me = std::fs::read(std::env::current_exe().unwrap()).unwrap();
        assert_eq!(super::has_interpreter(&me), Some(true));
        assert_eq!(super::has_interpreter(b"#!/bin/sh\n"), None);
    }
}
