//! Build backend for Rust-CUDA projects (`rustc_codegen_nvvm` driven by
//! `cuda_builder` from a host crate's build.rs).
//!
//! Builds the host package with `cargo build` into `<target>/gpucheck-nvvm`
//! with this binary as `RUSTC_WRAPPER`; `cuda_builder`'s nested cargo inherits
//! the wrapper, which adds `-Cdebuginfo=2 -Cllvm-args=-generate-line-info` to
//! every rustc call with the NVVM codegen backend and records the crate,
//! its directory, `--out-dir`, `CUDA_ARCH` and the `.ptx` written. When the
//! build fails it says which piece of the Rust-CUDA toolchain is missing and
//! how to check PTX directly. Does not own: the argument rewriting
//! (`wrapper`), analysis.

use super::wrapper::{self, Kind, Record};
use super::{KernelCrate, Unit, Workspace};
use anyhow::{bail, Context, Result};
use cargo_metadata::Metadata;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The command line, exposed for tests.
pub fn command(host: &KernelCrate, target_dir: &Path, quiet: bool, jobs: Option<u32>) -> Command {
    let mut cmd = super::cargo(&host.root);
    cmd.arg("build");
    if quiet {
        cmd.arg("--quiet");
    }
    cmd.arg("--manifest-path").arg(&host.manifest_path).arg("-p").arg(&host.name);
    if let Some(j) = jobs {
        cmd.arg("-j").arg(j.to_string());
    }
    cmd.arg("--target-dir").arg(target_dir);
    cmd
}

/// Build a host crate; one unit per kernel crate its build compiled with NVVM.
pub fn build(host: &KernelCrate, ws: &Workspace, meta: &Metadata, opts: super::BuildOpts) -> Result<Vec<Unit>> {
    let target_dir = ws.target_dir.join("gpucheck-nvvm");
    std::fs::create_dir_all(&target_dir).with_context(|| format!("creating `{}`", target_dir.display()))?;
    // kept across runs: a fresh host build runs no rustc, and the last records still hold
    let record = target_dir.join("gpucheck-records.jsonl");
    let before = wrapper::read(&record).len();
    let mut cmd = command(host, &target_dir, opts.quiet, opts.jobs);
    super::wrap(&mut cmd, &record)?;
    let status = super::run_cargo(&mut cmd, opts, &format!("`{}`", host.name))?.status;
    let records = wrapper::read(&record);
    let this_run = &records[before.min(records.len())..];
    if !status.success() {
        bail!("{}", failure(host, this_run));
    }
    // the newest successful record of each kernel crate
    let mut latest: Vec<&Record> = Vec::new();
    for r in records.iter().rev().filter(|r| r.kind == Kind::Nvvm && r.status == 0 && r.ptx.as_ref().is_some_and(|p| p.exists())) {
        if !latest.iter().any(|l| l.manifest_dir == r.manifest_dir && l.crate_name == r.crate_name) {
            latest.push(r);
        }
    }
    latest.reverse();
    if latest.is_empty() {
        bail!(
            "`{}` was built, but no rustc call used rustc_codegen_nvvm: does its build.rs run `cuda_builder::CudaBuilder`? (if cargo found it fresh, `cargo clean --target-dir {}` forces a rebuild)",
            host.name,
            target_dir.display()
        );
    }
    Ok(latest.into_iter().map(|r| unit(r, host, meta)).collect())
}

/// The kernel crate a record names: its workspace package when it is one
/// (for block shapes and lint tables), else a crate described by the record.
fn unit(r: &Record, host: &KernelCrate, meta: &Metadata) -> Unit {
    let member =
        meta.workspace_packages().into_iter().find(|p| p.manifest_path.parent().is_some_and(|d| d.as_std_path() == r.manifest_dir));
    let mut k = match member {
        Some(p) => {
            let mut ws = super::workspace(meta, &[p.name.to_string()], Some(super::Backend::Nvvm)).ok();
            ws.as_mut().and_then(|w| w.kernels.pop()).unwrap_or_else(|| host.clone())
        }
        None => KernelCrate {
            name: r.package.clone(),
            package_id: format!("path+file://{}#{}", r.manifest_dir.display(), r.package),
            manifest_path: r.manifest_dir.join("Cargo.toml"),
            root: r.manifest_dir.clone(),
            target_name: r.crate_name.clone(),
            src_path: r.manifest_dir.join("src").join("lib.rs"),
            ..host.clone()
        },
    };
    k.backend = super::Backend::Nvvm;
    let arch = r.cuda_arch.as_deref().map(|a| format!("CUDA_ARCH={a}, ")).unwrap_or_default();
    Unit {
        krate: k,
        ptx: r.ptx.clone().unwrap_or_default(),
        note: Some(format!("Rust-CUDA kernel crate built by `{}` ({arch}rustc flags added: {})", host.name, r.added.join(" "))),
        kind: super::UnitKind::Crate,
    }
}

/// Why a Rust-CUDA build failed, and what to do.
fn failure(host: &KernelCrate, this_run: &[Record]) -> String {
    let check_ptx = "to check PTX you already have, run `cargo gpucheck ptx path/to/kernels.ptx`";
    if let Some(r) = this_run.iter().find(|r| r.kind == Kind::Nvvm && r.status != 0) {
        return format!(
            "rustc_codegen_nvvm failed on kernel crate `{}` while building `{}` (rustc exited with {}); see its errors above; {check_ptx}",
            r.package, host.name, r.status
        );
    }
    let pieces = toolchain_pieces(&host.root);
    let missing: Vec<&str> = pieces.iter().filter(|(_, ok)| !ok).map(|(s, _)| s.as_str()).collect();
    let found: Vec<&str> = pieces.iter().filter(|(_, ok)| *ok).map(|(s, _)| s.as_str()).collect();
    format!(
        "could not build Rust-CUDA host crate `{}` (the build failed before rustc_codegen_nvvm compiled a kernel). A Rust-CUDA build needs the toolchain the project pins, rustc_codegen_nvvm's LLVM and CUDA's libnvvm.\n  missing: {}\n  found: {}\n{check_ptx}",
        host.name,
        if missing.is_empty() { "nothing detectable; see cargo's errors above".to_string() } else { missing.join("; ") },
        if found.is_empty() { "none".to_string() } else { found.join("; ") }
    )
}

/// The pieces a Rust-CUDA build needs, each with whether it was found.
pub fn toolchain_pieces(dir: &Path) -> Vec<(String, bool)> {
    let mut out = Vec::new();
    if let Some(file) = super::toolchain_file(dir) {
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        let channel = text
            .lines()
            .find_map(|l| {
                l.trim().strip_prefix("channel").and_then(|r| r.trim().strip_prefix('=')).map(|c| c.trim().trim_matches('"').to_string())
            })
            .unwrap_or_else(|| text.trim().to_string());
        let installed = Command::new("rustup")
            .args(["toolchain", "list"])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).lines().any(|l| l.starts_with(&channel)))
            .unwrap_or(false);
        let hint = if installed { String::new() } else { format!(" (`rustup toolchain install {channel}`)") };
        out.push((format!("toolchain `{channel}` from `{}`{hint}", file.display()), installed));
    }
    let nvvm = libnvvm();
    out.push(match &nvvm {
        Some(p) => (format!("CUDA libnvvm at `{}`", p.display()), true),
        None => ("CUDA libnvvm (looked in $CUDA_PATH, $CUDA_HOME, $CUDA_ROOT, /usr/local/cuda, /opt/cuda under nvvm/lib64)".into(), false),
    });
    let llvm = std::env::var_os("LLVM_CONFIG").map(PathBuf::from).or_else(|| which("llvm-config"));
    out.push(match llvm {
        Some(p) => (format!("LLVM for rustc_codegen_nvvm (`{}`)", p.display()), true),
        None => ("LLVM for rustc_codegen_nvvm (no $LLVM_CONFIG and no llvm-config on PATH; rustc_codegen_nvvm then downloads a prebuilt LLVM 7, which needs network access)".into(), false),
    });
    out
}

fn libnvvm() -> Option<PathBuf> {
    let roots = ["CUDA_PATH", "CUDA_HOME", "CUDA_ROOT", "CUDA_TOOLKIT_ROOT_DIR"]
        .iter()
        .filter_map(std::env::var_os)
        .map(PathBuf::from)
        .chain(["/usr/local/cuda", "/opt/cuda"].map(PathBuf::from));
    for r in roots {
        for lib in ["nvvm/lib64", "nvvm/lib", "nvvm/bin"] {
            let d = r.join(lib);
            if let Ok(rd) = std::fs::read_dir(&d) {
                if let Some(e) = rd.flatten().find(|e| e.file_name().to_string_lossy().contains("nvvm")) {
                    return Some(e.path());
                }
            }
        }
    }
    None
}

fn which(program: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?).map(|d| d.join(program)).find(|p| p.is_file())
}
