//! Build backend for rustc's own `nvptx64-nvidia-cuda` target.
//!
//! Runs, in the kernel package's directory (so rustup honours its
//! `rust-toolchain.toml`), `cargo rustc --lib --target nvptx64-nvidia-cuda
//! -Zbuild-std=core --release -- --emit=asm -C debuginfo=2 -C
//! codegen-units=1` into `<target>/gpucheck`, leaving the user's own build
//! cache alone, and returns the PTX (`.s`) it wrote. cargo's progress goes
//! to stderr as usual. Does not own: analysis.

use super::KernelCrate;
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::SystemTime;

pub const TARGET: &str = "nvptx64-nvidia-cuda";

/// The `cargo` to run: the rustup proxy, so that the kernel crate's
/// toolchain file is honoured (rustup started us with `RUSTUP_TOOLCHAIN` and
/// `CARGO` set to the caller's toolchain).
fn cargo_program() -> PathBuf {
    let home =
        std::env::var_os("CARGO_HOME").map(PathBuf::from).or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")));
    if let Some(h) = home {
        let p = h.join("bin").join("cargo");
        if p.exists() {
            return p;
        }
    }
    PathBuf::from("cargo")
}

/// The command line, exposed for tests.
pub fn command(k: &KernelCrate, target_dir: &Path, quiet: bool) -> Command {
    let mut cmd = Command::new(cargo_program());
    cmd.current_dir(&k.root);
    for v in ["RUSTUP_TOOLCHAIN", "RUSTC", "CARGO", "RUSTC_WORKSPACE_WRAPPER", "CARGO_TARGET_DIR", "CARGO_BUILD_TARGET"] {
        cmd.env_remove(v);
    }
    cmd.arg("rustc");
    if quiet {
        cmd.arg("--quiet");
    }
    cmd.args(["--lib", "--release", "--target", TARGET, "-Zbuild-std=core", "--manifest-path"]);
    cmd.arg(&k.manifest_path);
    cmd.arg("--target-dir").arg(target_dir);
    cmd.args(["--", "--emit=asm", "-C", "debuginfo=2", "-C", "codegen-units=1"]);
    cmd
}

/// Build one kernel crate; return the path of its PTX.
pub fn build(k: &KernelCrate, target_dir: &Path, quiet: bool) -> Result<PathBuf> {
    let mut cmd = command(k, target_dir, quiet);
    cmd.stdout(Stdio::null()).stderr(Stdio::inherit()).stdin(Stdio::null());
    let status = cmd.status().with_context(|| format!("could not run `{}` to build `{}`", cmd.get_program().to_string_lossy(), k.name))?;
    if !status.success() {
        bail!("could not build kernel crate `{}` for {TARGET} (cargo exited with {status}); see cargo's errors above", k.name);
    }
    let deps = target_dir.join(TARGET).join("release").join("deps");
    let prefix = format!("{}-", k.target_name);
    let mut best: Option<(SystemTime, PathBuf)> = None;
    for e in std::fs::read_dir(&deps).with_context(|| format!("reading `{}`", deps.display()))? {
        let e = e?;
        let name = e.file_name().to_string_lossy().to_string();
        if name.starts_with(&prefix) && name.ends_with(".s") {
            let t = e.metadata()?.modified()?;
            if best.as_ref().is_none_or(|(bt, _)| t > *bt) {
                best = Some((t, e.path()));
            }
        }
    }
    match best {
        // the newest `.s`: also right when cargo found the crate fresh and did not re-run rustc
        Some((_, p)) => Ok(p),
        None => bail!("cargo built `{}` but wrote no PTX (`{}*.s`) in `{}`", k.name, prefix, deps.display()),
    }
}
