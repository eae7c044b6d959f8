//! Build backend for rustc's own `nvptx64-nvidia-cuda` target.
//!
//! Runs one `cargo build --lib --release --target nvptx64-nvidia-cuda
//! -Zbuild-std=core -p K1 -p K2 …` for kernel crates that share a toolchain,
//! in the first crate's directory (so rustup honours its
//! `rust-toolchain.toml`), into `<target>/gpucheck` (the user's own build
//! cache is left alone), with this binary as `RUSTC_WRAPPER` adding
//! `--emit=asm -Cdebuginfo=2 -Ccodegen-units=1` to the kernel crates' rustc
//! calls (see `wrapper`). cargo's progress goes to stderr as usual; `-j`
//! bounds how many crates build at once. Does not own: analysis.

use super::wrapper::{self, Kind};
use super::KernelCrate;
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::SystemTime;

pub const TARGET: &str = "nvptx64-nvidia-cuda";

/// Whether a build into `target_dir` compiled `core` for the target already.
fn core_built(target_dir: &Path) -> bool {
    let deps = target_dir.join(TARGET).join("release").join("deps");
    std::fs::read_dir(deps).is_ok_and(|mut d| d.any(|e| e.is_ok_and(|e| e.file_name().to_string_lossy().starts_with("libcore-"))))
}

/// The command line, exposed for tests.
pub fn command(ks: &[&KernelCrate], target_dir: &Path, quiet: bool, jobs: Option<u32>) -> Command {
    let mut cmd = super::cargo(&ks[0].root);
    cmd.env_remove("RUSTC");
    cmd.arg("build");
    if quiet {
        cmd.arg("--quiet");
    }
    cmd.args(["--lib", "--release", "--target", TARGET, "-Zbuild-std=core", "--manifest-path"]);
    cmd.arg(&ks[0].manifest_path);
    for k in ks {
        cmd.arg("-p").arg(&k.name);
    }
    if let Some(j) = jobs {
        cmd.arg("-j").arg(j.to_string());
    }
    cmd.arg("--target-dir").arg(target_dir);
    let names: Vec<&str> = ks.iter().map(|k| k.target_name.as_str()).collect();
    cmd.env(wrapper::CRATES_ENV, names.join(","));
    cmd
}

/// Build kernel crates that share a toolchain; the PTX of each.
pub fn build<'k>(ks: &[&'k KernelCrate], target_dir: &Path, opts: super::BuildOpts) -> Result<Vec<(&'k KernelCrate, PathBuf)>> {
    std::fs::create_dir_all(target_dir).with_context(|| format!("creating `{}`", target_dir.display()))?;
    let record = target_dir.join("gpucheck-records.jsonl");
    let _ = std::fs::remove_file(&record);
    if !opts.quiet && !core_built(target_dir) {
        eprintln!(
            "{:>12} `core` for {TARGET} first, once (the target has no prebuilt standard library: -Zbuild-std); it stays in `{}` for the next checks",
            "Building",
            target_dir.display()
        );
    }
    let mut cmd = command(ks, target_dir, opts.quiet, opts.jobs);
    super::wrap(&mut cmd, &record)?;
    let names: Vec<&str> = ks.iter().map(|k| k.name.as_str()).collect();
    let run = super::run_cargo(&mut cmd, opts, &format!("`{}`", names.join("`, `")))?;
    if !run.status.success() {
        let hints: String = super::build_hints(&run.stderr).iter().map(|h| format!("\nhelp: {h}")).collect();
        bail!(
            "could not build kernel crate `{}` for {TARGET} (cargo exited with {}); see cargo's errors above{hints}",
            names.join("`, `"),
            run.status
        );
    }
    let records = wrapper::read(&record);
    let deps = target_dir.join(TARGET).join("release").join("deps");
    let mut out = Vec::new();
    for k in ks {
        let recorded = records.iter().rev().find(|r| r.kind == Kind::Nvptx && r.crate_name == k.target_name && r.status == 0);
        // a crate cargo found fresh ran no rustc: its newest `.s` is still right
        let ptx = match recorded.and_then(|r| r.ptx.clone()) {
            Some(p) => p,
            None => newest_asm(&deps, &k.target_name)
                .with_context(|| format!("cargo built `{}` but wrote no PTX (`{}-*.s`) in `{}`", k.name, k.target_name, deps.display()))?,
        };
        out.push((*k, ptx));
    }
    Ok(out)
}

fn newest_asm(deps: &Path, target_name: &str) -> Option<PathBuf> {
    let prefix = format!("{target_name}-");
    let mut best: Option<(SystemTime, PathBuf)> = None;
    for e in std::fs::read_dir(deps).ok()?.flatten() {
        let name = e.file_name().to_string_lossy().to_string();
        if name.starts_with(&prefix) && name.ends_with(".s") {
            let t = e.metadata().and_then(|m| m.modified()).ok()?;
            if best.as_ref().is_none_or(|(bt, _)| t > *bt) {
                best = Some((t, e.path()));
            }
        }
    }
    best.map(|(_, p)| p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_build_of_core_is_known_beforehand() {
        let dir = std::env::temp_dir().join(format!("gpucheck-core-built-{}", std::process::id()));
        let deps = dir.join(TARGET).join("release").join("deps");
        std::fs::create_dir_all(&deps).unwrap();
        assert!(!core_built(&dir), "nothing built yet");
        std::fs::write(deps.join("libcompiler_builtins-1.rlib"), "").unwrap();
        assert!(!core_built(&dir));
        std::fs::write(deps.join("libcore-0a1b.rlib"), "").unwrap();
        assert!(core_built(&dir));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
