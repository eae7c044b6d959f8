//! Build backend for CUDA C that a workspace member's build script compiles
//! to PTX in its `OUT_DIR` (`bindgen_cuda`, `cudaforge`, a hand-written
//! `nvcc --ptx`), the PTX the crate then `include_str!`s.
//!
//! Runs `cargo check` on those packages into `<target>/gpucheck-host`: the
//! build scripts run, the host code is only checked. nvcc gets `-lineinfo`
//! through `NVCC_APPEND_FLAGS` (findings land on `.cu` lines without editing
//! the build script); `CUDA_COMPUTE_CAP` is set to 80 when unset (builders
//! otherwise ask `nvidia-smi`, and no GPU is needed here); nvcc's folder is
//! put on PATH when nvcc is found in a CUDA installation PATH does not name.
//! Every `*.ptx` under each package's `out_dir` (cargo's
//! `build-script-executed` messages) becomes a unit of that package. Does
//! not own: which packages are host packages (`super::workspace`), analysis.

use super::{BuildOpts, KernelCrate, Unit, UnitKind, Workspace};
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The compute capability builders are given when the environment names
/// none (`CUDA_COMPUTE_CAP`): sm_80, the architecture the analysis models.
pub const COMPUTE_CAP: &str = "80";

/// Where nvcc is looked for after PATH: the CUDA installations `CUDA_HOME`,
/// `CUDA_PATH` and `CUDA_ROOT` name (their `bin`), the usual folders, then
/// PyPI's wheels in Python's paths ([`pypi_cuda_dirs`]).
pub fn nvcc_places() -> Vec<PathBuf> {
    let mut out = Vec::new();
    for v in ["CUDA_HOME", "CUDA_PATH", "CUDA_ROOT"] {
        if let Some(d) = std::env::var_os(v).filter(|d| !d.is_empty()) {
            out.push(PathBuf::from(d).join("bin"));
        }
    }
    out.extend(["/usr/local/cuda/bin", "/opt/cuda/bin", "/usr/lib/cuda/bin"].map(PathBuf::from));
    out.extend(pypi_cuda_dirs().iter().map(|d| d.join("bin")));
    out
}

/// The CUDA folders of PyPI's wheels (`nvidia-cuda-nvcc`, `nvidia-cuda-nvrtc`:
/// `nvidia/cu13`, or CUDA 12's `nvidia/cuda_nvcc` and `nvidia/cuda_nvrtc`) in
/// the folders `python3` imports from (site-packages, `PYTHONPATH`); asked
/// once, and only when nothing else was found first.
pub fn pypi_cuda_dirs() -> &'static [PathBuf] {
    static DIRS: std::sync::OnceLock<Vec<PathBuf>> = std::sync::OnceLock::new();
    DIRS.get_or_init(|| {
        let Ok(out) = Command::new("python3").args(["-c", "import sys; print(chr(10).join(p for p in sys.path if p))"]).output() else {
            return Vec::new();
        };
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .flat_map(|sp| ["cu13", "cuda_nvcc", "cuda_nvrtc"].map(|d| Path::new(sp).join("nvidia").join(d)))
            .filter(|d| d.is_dir())
            .collect()
    })
}

/// The nvcc the host build will run, if one is found: on PATH, else in
/// one of [`nvcc_places`].
pub fn find_nvcc() -> Option<PathBuf> {
    let exe = format!("nvcc{}", std::env::consts::EXE_SUFFIX);
    let path: Vec<PathBuf> = std::env::var_os("PATH").map(|p| std::env::split_paths(&p).collect()).unwrap_or_default();
    path.into_iter()
        .map(|d| d.join(&exe))
        .find(|p| p.is_file())
        .or_else(|| nvcc_places().into_iter().map(|d| d.join(&exe)).find(|p| p.is_file()))
}

/// nvcc's `release X.Y` line, for the progress line.
fn nvcc_version(nvcc: &Path) -> Option<String> {
    let out = Command::new(nvcc).arg("--version").output().ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines().find_map(|l| l.split("release ").nth(1).map(|r| r.split(',').next().unwrap_or(r).trim().to_string()))
}

/// The `cargo check` of the host packages, exposed for tests.
pub fn command(hosts: &[&KernelCrate], root: &Path, target_dir: &Path, opts: BuildOpts, nvcc: Option<&Path>) -> Command {
    let mut cmd = super::cargo(root);
    cmd.arg("check").arg("--message-format=json-diagnostic-rendered-ansi");
    if opts.quiet {
        cmd.arg("--quiet");
    }
    for h in hosts {
        cmd.arg("-p").arg(&h.name);
    }
    if let Some(j) = opts.jobs {
        cmd.arg("-j").arg(j.to_string());
    }
    cmd.arg("--target-dir").arg(target_dir);
    let flags = std::env::var("NVCC_APPEND_FLAGS").unwrap_or_default();
    if !flags.split_whitespace().any(|f| f == "-lineinfo" || f == "--generate-line-info") {
        cmd.env("NVCC_APPEND_FLAGS", format!("{flags} -lineinfo").trim());
    }
    if std::env::var_os("CUDA_COMPUTE_CAP").is_none() {
        cmd.env("CUDA_COMPUTE_CAP", COMPUTE_CAP);
    }
    // nvcc found outside PATH: builders run plain `nvcc`
    if let Some(dir) = nvcc.and_then(Path::parent) {
        let path: Vec<PathBuf> = std::env::var_os("PATH").map(|p| std::env::split_paths(&p).collect()).unwrap_or_default();
        if !path.iter().any(|p| p == dir) {
            let joined = std::env::join_paths(std::iter::once(dir.to_path_buf()).chain(path)).unwrap_or_default();
            cmd.env("PATH", joined);
        }
        // (bindgen_cuda finds CUDA's headers through these; nvcc's folder is `…/bin`)
        if let Some(cuda) = dir.parent().filter(|c| c.join("include").join("cuda.h").is_file()) {
            if std::env::var_os("CUDA_PATH").is_none() && std::env::var_os("CUDA_ROOT").is_none() {
                cmd.env("CUDA_PATH", cuda);
            }
        }
    }
    cmd
}

/// What the host build gave: a unit per PTX file, and a progress line per
/// package saying what its build script wrote.
pub struct Built {
    pub units: Vec<Unit>,
    pub said: Vec<String>,
}

/// Run the host packages' build scripts; a unit per `.ptx` they wrote.
pub fn build(hosts: &[&KernelCrate], ws: &Workspace, opts: BuildOpts) -> Result<Built> {
    let target_dir = ws.target_dir.join("gpucheck-host");
    std::fs::create_dir_all(&target_dir).with_context(|| format!("creating `{}`", target_dir.display()))?;
    let nvcc = find_nvcc();
    let mut cmd = command(hosts, &ws.root, &target_dir, opts, nvcc.as_deref());
    let names: Vec<String> = hosts.iter().map(|h| format!("`{}`", h.name)).collect();
    let run = super::run_cargo_records(&mut cmd, opts, &format!("the build scripts of {}", names.join(", ")))?;
    if !run.status.success() {
        bail!("{}", failure(hosts, &run.stderr, nvcc.as_deref()));
    }
    let mut units = Vec::new();
    let mut said = Vec::new();
    let producer = match &nvcc {
        Some(n) => format!("nvcc {} at `{}`", nvcc_version(n).unwrap_or_else(|| "(version unknown)".into()), n.display()),
        None => "no nvcc found".to_string(),
    };
    for h in hosts {
        let out_dirs: Vec<PathBuf> = run
            .records
            .iter()
            .filter(|r| r["reason"] == "build-script-executed" && r["package_id"].as_str() == Some(h.package_id.as_str()))
            .filter_map(|r| r["out_dir"].as_str().map(PathBuf::from))
            .collect();
        let mut ptx: Vec<PathBuf> = out_dirs.iter().flat_map(|d| ptx_files(d)).collect();
        ptx.sort();
        ptx.dedup();
        if ptx.is_empty() {
            said.push(format!(
                "     Skipped `{}`: its build script wrote no PTX into its OUT_DIR{} (`build-script = false` in its `[package.metadata.gpucheck]` leaves it out)",
                h.name,
                out_dirs.first().map(|d| format!(" `{}`", d.display())).unwrap_or_default()
            ));
            continue;
        }
        said.push(format!(
            "   Collected {} PTX file{} from the build script of `{}` ({producer}; `-lineinfo` added through NVCC_APPEND_FLAGS)",
            ptx.len(),
            if ptx.len() == 1 { "" } else { "s" },
            h.name,
        ));
        for p in ptx {
            let file = p.file_name().map(|f| f.to_string_lossy().to_string()).unwrap_or_default();
            units.push(Unit {
                krate: (*h).clone(),
                note: Some(format!("`{file}`, written by the build script of `{}` into its OUT_DIR", h.name)),
                ptx: p,
                kind: UnitKind::Crate,
            });
        }
    }
    Ok(Built { units, said })
}

/// Every `.ptx` file under `dir`, at any depth.
fn ptx_files(dir: &Path) -> Vec<PathBuf> {
    super::files_with_extension(dir, "ptx", |_| true)
}

/// Why the host build failed, and what to do.
fn failure(hosts: &[&KernelCrate], stderr: &str, nvcc: Option<&Path>) -> String {
    let names: Vec<String> = hosts.iter().map(|h| format!("`{}`", h.name)).collect();
    let lower = stderr.to_lowercase();
    let no_nvcc = nvcc.is_none()
        && lower.contains("nvcc")
        && ["not found", "no such file", "failed to start", "notfound", "failed to run", "in your path"].iter().any(|s| lower.contains(s));
    if no_nvcc {
        let places: Vec<String> = nvcc_places().iter().map(|p| format!("`{}`", p.display())).collect();
        return format!(
            "the build script of {} runs `nvcc`, which was not found: looked on PATH, then in {} (CUDA_HOME, CUDA_PATH or CUDA_ROOT name a CUDA installation; PyPI's wheels are looked for in the folders python3 imports from). Install the CUDA toolkit, or get one from PyPI without a GPU: `pip install nvidia-cuda-nvcc nvidia-cuda-cccl nvidia-cuda-runtime nvidia-cuda-crt` (found by itself in python3's site-packages; elsewhere set CUDA_HOME to its `nvidia/cu13` folder; a host C++ compiler, e.g. g++, is needed too)",
            names.join(", "),
            places.join(", ")
        );
    }
    if lower.contains("could not find cuda") || lower.contains("cuda.h") {
        return format!(
            "the build script of {} did not find CUDA's headers (`include/cuda.h`): set CUDA_PATH to the CUDA installation (the folder above nvcc's `bin`); see its errors above",
            names.join(", ")
        );
    }
    format!(
        "the build script of {} failed (see cargo's errors above); to check PTX you already have, run `cargo gpucheck ptx path/to/kernels.ptx`, or set `build-script = false` in the package's `[package.metadata.gpucheck]` to leave its build script out",
        names.join(", ")
    )
}
