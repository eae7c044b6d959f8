//! Build backends: from a Cargo workspace to PTX files.
//!
//! Owns: finding the kernel packages (`cargo metadata`), their launch-shape
//! metadata, and running the build. Does not own: analysis or rendering.

pub mod host;
pub mod launches;
pub mod nvptx;
pub mod nvrtc;
pub mod nvvm;
pub mod wrapper;

use anyhow::{bail, Context, Result};
use cargo_metadata::{DependencyKind, Metadata, MetadataCommand, Package};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// How a package's kernels become PTX.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Backend {
    /// rustc's own `nvptx64-nvidia-cuda` target: the package is the kernel crate.
    Nvptx,
    /// Rust-CUDA: the package is a host crate whose build.rs runs `cuda_builder`
    /// (rustc_codegen_nvvm); its kernel crates are found while it builds.
    Nvvm,
    /// CUDA C compiled by the package's build script (bindgen_cuda, cudaforge,
    /// nvcc): the build script runs (`cargo check`) and the PTX it writes into
    /// its OUT_DIR is checked.
    BuildScript,
    /// CUDA C that the package's Rust code hands to NVRTC (`cudarc`'s
    /// `compile_ptx`): string literals, `const` items and `include_str!`
    /// files, compiled here with NVRTC.
    Nvrtc,
}

/// One kernel package to build and check.
#[derive(Debug, Clone)]
pub struct KernelCrate {
    pub name: String,
    pub package_id: String,
    pub manifest_path: PathBuf,
    /// Directory holding Cargo.toml: files under it belong to the package.
    pub root: PathBuf,
    /// Library target name (crate name with `_`).
    pub target_name: String,
    pub src_path: PathBuf,
    pub edition: String,
    pub backend: Backend,
    pub block: Option<[u32; 3]>,
    pub kernel_blocks: HashMap<String, [u32; 3]>,
    /// `grid` of `[package.metadata.gpucheck]` and of its kernels' tables
    /// (launches for `confirm`, and the grid races between blocks are checked in).
    pub grid: Option<[u32; 3]>,
    pub kernel_grids: HashMap<String, [u32; 3]>,
    /// `shared_bytes` of `[package.metadata.gpucheck]` and of its kernel
    /// tables: the dynamic shared memory a launch gives.
    pub shared_bytes: Option<u32>,
    pub kernel_shared_bytes: HashMap<String, u32>,
    /// `assume` of `[package.metadata.gpucheck]` and of its kernels' tables:
    /// the values declared for scalar parameters (by Rust or PTX name, or
    /// index).
    pub values: HashMap<String, i64>,
    pub kernel_values: HashMap<String, HashMap<String, i64>>,
    /// `[package.metadata.gpucheck.lints]`
    pub lints: Option<serde_json::Value>,
    /// The whole `[package.metadata.gpucheck]` table (launch specifications for `confirm`).
    pub meta: Option<serde_json::Value>,
    /// Problems with `[package.metadata.gpucheck]` that do not stop the check (unknown keys).
    pub config_warnings: Vec<String>,
    /// A PTX file given without a manifest: every source file it names is
    /// the user's, as `cargo gpucheck ptx` takes it.
    pub any_source_is_local: bool,
    /// It depends on `cudarc`: CUDA C in its Rust code handed to NVRTC is
    /// compiled and checked too (whatever its backend).
    pub nvrtc: bool,
    /// Block shapes of the launches its Rust code writes (`build::launches`).
    pub launch_blocks: HashMap<String, launches::LaunchShape>,
}

impl KernelCrate {
    /// Whether a source file named in the PTX belongs to this package
    /// (findings point into it).
    pub fn is_local(&self, file: &str) -> bool {
        let p = Path::new(file);
        if self.any_source_is_local {
            !toolkit_file(file)
        } else if p.is_absolute() {
            p.starts_with(&self.root)
        } else {
            self.root.join(p).exists()
        }
    }
}

/// A source file of a compiler or toolkit, never the user's: clang's CUDA
/// wrapper headers (`__clang_cuda_*.h`, its resource `include/`), a CUDA
/// installation's `include/` folder (`cuda/`, `cuda-12.9/`, PyPI's `nvidia/`),
/// the system's C headers (`/usr/include/`) and GCC's (`/usr/lib/gcc/`),
/// rustc's standard library sources, and the `cuda_std` crate. In `ptx`
/// mode every other `.loc` file counts as the user's, so that findings land
/// on the user's line the header was inlined at (or the nearest one).
pub fn toolkit_file(file: &str) -> bool {
    let f = file.replace('\\', "/");
    let name = f.rsplit('/').next().unwrap_or(&f);
    if name.starts_with("__clang_cuda_")
        || f.starts_with("/usr/include/")
        || f.starts_with("/usr/lib/gcc/")
        || f.contains("/lib/rustlib/src/rust/")
        || f.starts_with("/rustc/")
        || f.contains("/cuda_std/")
        || f.contains("/cuda_std-")
    {
        return true;
    }
    if f.contains("/lib/clang/") && f.contains("/include/") {
        return true;
    }
    // a CUDA installation's headers: …/cuda/include/…, …/cuda-12.9/include/…,
    // …/nvidia/cuda_runtime/include/… (PyPI), …/targets/x86_64-linux/include/…
    f.match_indices("/include/").any(|(k, _)| {
        let before = &f[..k];
        let dir = before.rsplit('/').next().unwrap_or("");
        dir == "cuda" || dir.starts_with("cuda-") || ["/nvidia/", "/cuda-tools/", "/targets/"].iter().any(|x| before.contains(x))
    })
}

pub struct Workspace {
    pub root: PathBuf,
    pub target_dir: PathBuf,
    pub kernels: Vec<KernelCrate>,
    /// `[workspace.metadata.gpucheck.lints]`
    pub lints: Option<serde_json::Value>,
}

/// Inside a member package's folder (or with `--manifest-path` naming its
/// Cargo.toml), cargo acts on that package only: keep only it when it is
/// one of the kernel crates, and say so (the note). At the workspace root,
/// or in a package that is not a kernel crate, every kernel crate stays.
pub fn scope_to_current(ws: &mut Workspace, meta: &Metadata, from: &Path) -> Option<String> {
    let canon = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    let from = canon(from);
    let root_manifest = canon(&meta.workspace_root.join("Cargo.toml").into_std_path_buf());
    let here = meta
        .workspace_packages()
        .into_iter()
        .map(|p| canon(p.manifest_path.as_std_path()))
        .filter(|m| m.parent().is_some_and(|d| from.starts_with(d)))
        .max_by_key(|m| m.components().count())?;
    if here == root_manifest || ws.kernels.len() < 2 {
        return None;
    }
    let k = ws.kernels.iter().position(|k| canon(&k.manifest_path) == here)?;
    let all = ws.kernels.len();
    let k = ws.kernels.swap_remove(k);
    let note = format!(
        "checking `{}` only, the package in the current folder (as cargo does); `--workspace` checks all {all} kernel crates of the workspace",
        k.name
    );
    ws.kernels = vec![k];
    Some(note)
}

pub fn metadata(manifest_path: Option<&Path>) -> Result<Metadata> {
    let mut cmd = MetadataCommand::new();
    cmd.no_deps();
    if let Some(p) = manifest_path {
        if !p.exists() {
            bail!("manifest `{}` does not exist", p.display());
        }
        cmd.manifest_path(p);
    }
    cmd.exec().map_err(|e| {
        let why = e.to_string();
        let help = if why.contains("could not find `Cargo.toml`") {
            "help: not in a Cargo project: check PTX files directly with `cargo gpucheck ptx FILE.ptx`, or start a kernel crate with `cargo gpucheck new NAME`"
        } else {
            "help: cargo could not read the manifest (its error is above); `cargo gpucheck ptx FILE.ptx` checks PTX files without one"
        };
        anyhow::anyhow!("`cargo metadata` failed: {}\n{help}", why.trim_end())
    })
}

/// A Rust-CUDA host crate: its build script depends on `cuda_builder`.
fn builds_with_cuda_builder(p: &Package) -> bool {
    p.dependencies.iter().any(|d| d.kind == DependencyKind::Build && d.name == "cuda_builder")
}

/// The build-dependencies that compile CUDA C to PTX in a build script.
pub const CUDA_C_BUILDERS: [&str; 2] = ["bindgen_cuda", "cudaforge"];

/// The package's build script, if it has one.
fn build_script(p: &Package) -> Option<&cargo_metadata::Target> {
    p.targets.iter().find(|t| t.is_custom_build())
}

/// Whether the package's build script compiles CUDA C: it has a
/// build-dependency of [`CUDA_C_BUILDERS`] or its source runs `nvcc`.
/// `Some(false)`: it does, but `build-script = false` in its
/// `[package.metadata.gpucheck]` leaves it out; `build-script = true` takes
/// any build script.
fn cuda_c_build_script(p: &Package) -> Option<bool> {
    let script = build_script(p)?;
    let said = p.metadata.get("gpucheck").and_then(|g| g.get("build-script")).and_then(|v| v.as_bool());
    if said == Some(true) {
        return Some(true);
    }
    let cuda = p.dependencies.iter().any(|d| d.kind == DependencyKind::Build && CUDA_C_BUILDERS.contains(&d.name.as_str()))
        || std::fs::read_to_string(&script.src_path).is_ok_and(|s| s.contains("nvcc"));
    cuda.then_some(said != Some(false))
}

/// A package that depends on `cudarc`, whose Rust code may hand CUDA C to NVRTC.
fn uses_nvrtc(p: &Package) -> bool {
    p.dependencies.iter().any(|d| d.kind == DependencyKind::Normal && d.name == "cudarc")
}

/// A package that depends on `cudarc` and whose Rust code calls one of
/// [`nvrtc::CALLS`] (with a source that can be read or one said to be
/// skipped).
fn hands_cuda_c_to_nvrtc(p: &Package) -> bool {
    uses_nvrtc(p)
        && p.manifest_path.parent().is_some_and(|d| {
            let (found, skipped) = nvrtc::scan(d.as_std_path());
            !found.is_empty() || !skipped.is_empty()
        })
}

/// A Rust-CUDA kernel crate: it depends on `cuda_std`.
fn uses_cuda_std(p: &Package) -> bool {
    p.dependencies.iter().any(|d| d.kind == DependencyKind::Normal && d.name == "cuda_std")
}

/// The packages to build: those with `[package.metadata.gpucheck]` and the
/// Rust-CUDA host crates, or those named in `packages`; with the backend
/// each needs (`forced` overrides the detection).
pub fn workspace(meta: &Metadata, packages: &[String], forced: Option<Backend>) -> Result<Workspace> {
    let members: Vec<&Package> = meta.workspace_packages();
    let mut chosen: Vec<(&Package, Backend)> = Vec::new();
    let detect = |p: &Package| {
        forced.unwrap_or(if builds_with_cuda_builder(p) {
            Backend::Nvvm
        } else if cuda_c_build_script(p).is_some() {
            Backend::BuildScript
        } else if p.metadata.get("gpucheck").is_none() && hands_cuda_c_to_nvrtc(p) {
            Backend::Nvrtc
        } else {
            Backend::Nvptx
        })
    };
    if packages.is_empty() {
        for p in members.iter().copied() {
            let backend = detect(p);
            let table = p.metadata.get("gpucheck").is_some();
            let take = match backend {
                Backend::Nvvm => true,
                // (one whose build script is left out by `build-script = false` is not checked)
                Backend::BuildScript => cuda_c_build_script(p) == Some(true) || (forced.is_some() && build_script(p).is_some()),
                Backend::Nvrtc => forced.is_none() || hands_cuda_c_to_nvrtc(p),
                // a cuda_std kernel crate is built by its host crate, not on its own
                Backend::Nvptx => table && (forced == Some(Backend::Nvptx) || !uses_cuda_std(p)),
            };
            if take {
                chosen.push((p, backend));
            }
        }
        if chosen.is_empty() {
            bail!(
                "no kernel package found in workspace `{}`: add a `[package.metadata.gpucheck]` table to the kernel crate's Cargo.toml, or name it with `-p` (Rust-CUDA host crates, those with a `cuda_builder` build-dependency, packages whose build script compiles CUDA C with nvcc, bindgen_cuda or cudaforge, and packages that depend on cudarc (CUDA C for NVRTC in their Rust code) are found by themselves)",
                meta.workspace_root
            );
        }
    } else {
        for spec in packages {
            match members.iter().find(|p| p.name.as_str() == spec.as_str()) {
                Some(p) => {
                    let backend = detect(p);
                    if backend == Backend::Nvptx && forced.is_none() && uses_cuda_std(p) {
                        let hosts: Vec<&str> = members.iter().filter(|h| builds_with_cuda_builder(h)).map(|h| h.name.as_str()).collect();
                        bail!(
                            "package `{spec}` is a Rust-CUDA kernel crate (it depends on `cuda_std`): it is built by the host crate whose build.rs runs `cuda_builder`; check that one instead ({}), or pass `--backend nvptx` to build it with rustc's nvptx target",
                            if hosts.is_empty() { "none in this workspace".to_string() } else { format!("`-p {}`", hosts.join("` or `-p ")) }
                        );
                    }
                    chosen.push((p, backend));
                }
                None => {
                    let names: Vec<&str> = members.iter().map(|p| p.name.as_str()).collect();
                    bail!("package `{spec}` is not a member of the workspace (members: {})", names.join(", "));
                }
            }
        }
    }
    let mut kernels = Vec::new();
    for (p, backend) in chosen {
        let lib =
            p.targets.iter().find(|t| t.kind.iter().any(|k| matches!(k.to_string().as_str(), "lib" | "rlib" | "cdylib" | "staticlib")));
        // a Rust-CUDA host crate may be a binary: its kernels come from its build script
        if backend == Backend::BuildScript && build_script(p).is_none() {
            bail!("package `{}` has no build script: `--backend build-script` checks the PTX a build script writes", p.name);
        }
        let lib = match (lib, backend) {
            (Some(l), _) => l,
            (None, Backend::Nvvm | Backend::BuildScript | Backend::Nvrtc) if !p.targets.is_empty() => &p.targets[0],
            _ => bail!("package `{}` has no library target: GPU kernels must live in a library crate", p.name),
        };
        let gm = p.metadata.get("gpucheck");
        let manifest = display_manifest(p.manifest_path.as_std_path(), &meta.workspace_root);
        let config_warnings =
            gm.map(|g| crate::config::validate(g, &manifest)).transpose().map_err(anyhow::Error::msg)?.unwrap_or_default();
        let (block, kernel_blocks) = launch_blocks(gm, &manifest, "block")?;
        let (grid, kernel_grids) = launch_blocks(gm, &manifest, "grid")?;
        let (shared_bytes, kernel_shared_bytes) = launch_shared(gm, &manifest)?;
        let (values, kernel_values) = launch_values(gm, &manifest)?;
        let manifest_path: PathBuf = p.manifest_path.clone().into();
        let root = manifest_path.parent().map(Path::to_path_buf).unwrap_or_default();
        let (launch_blocks, launch_said) = launches::scan(&root);
        let mut config_warnings = config_warnings;
        config_warnings.extend(launch_said.into_iter().map(|w| format!("{w} (in `{}`)", p.name)));
        kernels.push(KernelCrate {
            name: p.name.to_string(),
            package_id: p.id.repr.clone(),
            manifest_path,
            root,
            target_name: lib.name.replace('-', "_"),
            src_path: lib.src_path.clone().into(),
            edition: lib.edition.to_string(),
            backend,
            block,
            kernel_blocks,
            grid,
            kernel_grids,
            shared_bytes,
            kernel_shared_bytes,
            values,
            kernel_values,
            lints: gm.and_then(|g| g.get("lints")).cloned(),
            meta: gm.cloned(),
            config_warnings,
            any_source_is_local: false,
            nvrtc: uses_nvrtc(p) || backend == Backend::Nvrtc,
            launch_blocks,
        });
    }
    let lints = meta.workspace_metadata.get("gpucheck").and_then(|g| g.get("lints")).cloned();
    Ok(Workspace { root: meta.workspace_root.clone().into(), target_dir: meta.target_directory.clone().into(), kernels, lints })
}

/// A manifest's path as messages show it: relative to the workspace root.
fn display_manifest(manifest: &Path, root: &cargo_metadata::camino::Utf8Path) -> String {
    manifest.strip_prefix(root.as_std_path()).unwrap_or(manifest).display().to_string()
}

/// Block shapes by kernel name.
pub type KernelBlocks = HashMap<String, [u32; 3]>;

/// The package's block (or grid: `key`) shape and the kernels' own, from
/// its `[package.metadata.gpucheck]` table (`block`, `kernels.NAME.block`).
pub fn launch_blocks(gm: Option<&serde_json::Value>, manifest: &str, key: &str) -> Result<(Option<[u32; 3]>, KernelBlocks)> {
    let read = |v: &serde_json::Value| if key == "block" { crate::config::block(v) } else { crate::config::dims(v, key) };
    let block = match gm.and_then(|g| g.get(key)) {
        Some(v) => Some(read(v).map_err(|e| anyhow::anyhow!("{e} in `[package.metadata.gpucheck]` of {manifest}"))?),
        None => None,
    };
    let mut kernel_blocks = HashMap::new();
    if let Some(ks) = gm.and_then(|g| g.get("kernels")).and_then(|k| k.as_object()) {
        for (name, k) in ks {
            if let Some(b) = k.get(key) {
                let b = read(b).map_err(|e| anyhow::anyhow!("{e} in `[package.metadata.gpucheck.kernels.{name}]` of {manifest}"))?;
                kernel_blocks.insert(name.clone(), b);
            }
        }
    }
    Ok((block, kernel_blocks))
}

/// The package's `shared_bytes` and the kernels' own, from its
/// `[package.metadata.gpucheck]` table.
pub fn launch_shared(gm: Option<&serde_json::Value>, manifest: &str) -> Result<(Option<u32>, HashMap<String, u32>)> {
    let read = |v: &serde_json::Value, table: &str| {
        crate::config::shared_bytes(v).map_err(|e| anyhow::anyhow!("{e} in `[{table}]` of {manifest}"))
    };
    let package = gm.and_then(|g| g.get("shared_bytes")).map(|v| read(v, "package.metadata.gpucheck")).transpose()?;
    let mut kernels = HashMap::new();
    for (name, k) in gm.and_then(|g| g.get("kernels")).and_then(|k| k.as_object()).into_iter().flatten() {
        if let Some(v) = k.get("shared_bytes") {
            kernels.insert(name.clone(), read(v, &format!("package.metadata.gpucheck.kernels.{name}"))?);
        }
    }
    Ok((package, kernels))
}

/// The package's `assume` values and the kernels' own, from its
/// `[package.metadata.gpucheck]` table.
pub fn launch_values(gm: Option<&serde_json::Value>, manifest: &str) -> Result<KernelValues> {
    let read = |v: &serde_json::Value, table: &str| -> Result<HashMap<String, i64>> {
        Ok(crate::config::assume(v).map_err(|e| anyhow::anyhow!("{e} in `[{table}]` of {manifest}"))?.into_iter().collect())
    };
    let values = match gm.and_then(|g| g.get("assume")) {
        Some(v) => read(v, "package.metadata.gpucheck")?,
        None => HashMap::new(),
    };
    let mut kernel_values = HashMap::new();
    if let Some(ks) = gm.and_then(|g| g.get("kernels")).and_then(|k| k.as_object()) {
        for (name, k) in ks {
            if let Some(v) = k.get("assume") {
                kernel_values.insert(name.clone(), read(v, &format!("package.metadata.gpucheck.kernels.{name}"))?);
            }
        }
    }
    Ok((values, kernel_values))
}

/// Declared values: the package's, and each kernel's.
pub type KernelValues = (HashMap<String, i64>, HashMap<String, HashMap<String, i64>>);

/// A PTX file as a unit to run without building: its launch settings from
/// the `[package.metadata.gpucheck]` table of `manifest` (read directly,
/// without cargo) when given, its sources local when under the manifest's
/// folder (else the PTX file's).
pub fn ptx_unit(ptx: &Path, manifest: Option<&Path>) -> Result<Unit> {
    match std::fs::metadata(ptx) {
        Err(e) => bail!("cannot read `{}`: {e}", ptx.display()),
        Ok(m) if m.is_dir() => bail!("cannot read `{}`: it is a folder; name the PTX files in it", ptx.display()),
        Ok(_) => {}
    }
    let stem = ptx.file_stem().map(|s| s.to_string_lossy().to_string()).unwrap_or_default();
    let (name, manifest_path, meta) = match manifest {
        Some(m) => {
            let text = std::fs::read_to_string(m).with_context(|| format!("reading `{}`", m.display()))?;
            let doc: toml::Table = text.parse().with_context(|| format!("`{}` is not valid TOML", m.display()))?;
            let package = doc.get("package");
            let name = package.and_then(|p| p.get("name")).and_then(|n| n.as_str()).unwrap_or(&stem).to_string();
            let gm = package.and_then(|p| p.get("metadata")).and_then(|x| x.get("gpucheck"));
            (name, m.to_path_buf(), gm.map(serde_json::to_value).transpose()?)
        }
        None => (stem, ptx.to_path_buf(), None),
    };
    let shown = manifest_path.display().to_string();
    let config_warnings =
        meta.as_ref().map(|g| crate::config::validate(g, &shown)).transpose().map_err(anyhow::Error::msg)?.unwrap_or_default();
    let (block, kernel_blocks) = launch_blocks(meta.as_ref(), &shown, "block")?;
    let (grid, kernel_grids) = launch_blocks(meta.as_ref(), &shown, "grid")?;
    let (shared_bytes, kernel_shared_bytes) = launch_shared(meta.as_ref(), &shown)?;
    let (values, kernel_values) = launch_values(meta.as_ref(), &shown)?;
    let root = std::path::absolute(&manifest_path)?.parent().map(Path::to_path_buf).unwrap_or_default();
    let krate = KernelCrate {
        name: name.clone(),
        package_id: name.clone(),
        manifest_path,
        root: root.clone(),
        target_name: name.replace('-', "_"),
        src_path: root.join("src/lib.rs"),
        edition: String::new(),
        backend: Backend::Nvptx,
        block,
        kernel_blocks,
        grid,
        kernel_grids,
        shared_bytes,
        kernel_shared_bytes,
        values,
        kernel_values,
        lints: meta.as_ref().and_then(|g| g.get("lints")).cloned(),
        any_source_is_local: manifest.is_none(),
        nvrtc: false,
        launch_blocks: HashMap::new(),
        meta,
        config_warnings,
    };
    let kind = if manifest.is_some() { UnitKind::PtxWithManifest } else { UnitKind::PtxFile };
    Ok(Unit { krate, ptx: ptx.to_path_buf(), note: None, kind })
}

/// `cargo`, the rustup proxy, so that the package's toolchain file is
/// honoured (rustup started us with `RUSTUP_TOOLCHAIN` and `CARGO` set to the
/// caller's toolchain), run in `dir`, with the variables that would pin
/// another toolchain or target removed.
pub fn cargo(dir: &Path) -> Command {
    let home =
        std::env::var_os("CARGO_HOME").map(PathBuf::from).or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")));
    let program = home.map(|h| h.join("bin").join("cargo")).filter(|p| p.exists()).unwrap_or_else(|| PathBuf::from("cargo"));
    let mut cmd = Command::new(program);
    cmd.current_dir(dir);
    for v in ["RUSTUP_TOOLCHAIN", "CARGO", "RUSTC_WORKSPACE_WRAPPER", "CARGO_TARGET_DIR", "CARGO_BUILD_TARGET"] {
        cmd.env_remove(v);
    }
    cmd
}

/// Make `cmd` (a `cargo build`) run rustc through this binary in wrapper
/// mode, recording into `record`, chained to the user's own `RUSTC_WRAPPER`.
pub fn wrap(cmd: &mut Command, record: &Path) -> Result<()> {
    let me = std::env::current_exe().context("locating the cargo-gpucheck binary to use as RUSTC_WRAPPER")?;
    let inner = std::env::var_os("RUSTC_WRAPPER").filter(|w| !w.is_empty() && Path::new(w) != me);
    cmd.env("RUSTC_WRAPPER", &me).env(wrapper::RECORD_ENV, record);
    match inner {
        Some(w) => cmd.env(wrapper::INNER_ENV, w),
        None => cmd.env_remove(wrapper::INNER_ENV),
    };
    Ok(())
}

/// One PTX file to analyse and the crate whose sources it comes from.
#[derive(Debug, Clone)]
pub struct Unit {
    pub krate: KernelCrate,
    pub ptx: PathBuf,
    /// Set for Rust-CUDA builds: `CUDA_ARCH` and the flags the wrapper added.
    pub note: Option<String>,
    pub kind: UnitKind,
}

/// Where a unit's PTX comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnitKind {
    /// A kernel crate's library, built (its sources: the package's files).
    Crate,
    /// A PTX file given on the command line alone (its sources: the files
    /// its line information names, toolkit headers aside).
    PtxFile,
    /// A PTX file given with a manifest, whose table gives the launch
    /// settings and whose folder holds the sources.
    PtxWithManifest,
}

/// The files named `*.EXT` under `root`, sorted, descending into the
/// folders `enter` accepts.
pub fn files_with_extension(root: &Path, ext: &str, enter: impl Fn(&Path) -> bool) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else { continue };
        for p in entries.flatten().map(|e| e.path()) {
            if p.is_dir() {
                if enter(&p) {
                    stack.push(p);
                }
            } else if p.extension().is_some_and(|x| x == ext) {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// The nearest `rust-toolchain.toml` / `rust-toolchain` at or above `dir`.
pub fn toolchain_file(dir: &Path) -> Option<PathBuf> {
    dir.ancestors().flat_map(|d| [d.join("rust-toolchain.toml"), d.join("rust-toolchain")]).find(|p| p.is_file())
}

/// How to run the builds.
#[derive(Debug, Clone, Copy, Default)]
pub struct BuildOpts {
    /// Hide cargo's progress and the compiler's text output.
    pub quiet: bool,
    /// `-j N`.
    pub jobs: Option<u32>,
    /// Build with `--message-format=json` and pass the compiler's messages
    /// (errors and warnings, as cargo's `compiler-message` records) through
    /// to stdout, so that an editor reading our JSON shows them.
    pub json: bool,
}

/// What a `cargo build` did: its status and what it wrote on stderr.
pub struct CargoRun {
    pub status: std::process::ExitStatus,
    pub stderr: String,
    /// `build-script-executed` records ([`run_cargo_records`] only).
    pub records: Vec<serde_json::Value>,
}

/// Run a `cargo build`: its progress and the compiler's text on our stderr
/// (copied as it comes, colours and progress bar kept on a terminal, and
/// kept for [`build_hints`]); in JSON mode its `compiler-message` records
/// forwarded to stdout and its other records dropped (ours end the
/// stream), otherwise its stdout dropped.
pub fn run_cargo(cmd: &mut Command, opts: BuildOpts, what: &str) -> Result<CargoRun> {
    run_cargo_with(cmd, opts, what, false)
}

/// Run a `cargo` command that was given `--message-format=json…`: like
/// [`run_cargo`], with its `build-script-executed` records kept, and its
/// compiler messages forwarded in JSON mode, else shown on stderr as
/// rendered (unless quiet).
pub fn run_cargo_records(cmd: &mut Command, opts: BuildOpts, what: &str) -> Result<CargoRun> {
    run_cargo_with(cmd, opts, what, true)
}

fn run_cargo_with(cmd: &mut Command, opts: BuildOpts, what: &str, records: bool) -> Result<CargoRun> {
    use std::io::{BufRead, IsTerminal, Read, Write};
    if std::io::stderr().is_terminal() {
        // cargo writes into a pipe now: ask for what it would show on the terminal
        if std::env::var_os("CARGO_TERM_COLOR").is_none() && std::env::var_os("NO_COLOR").is_none() {
            cmd.env("CARGO_TERM_COLOR", "always");
        }
        cmd.env("CARGO_TERM_PROGRESS_WHEN", "always")
            .env("CARGO_TERM_PROGRESS_WIDTH", std::env::var("COLUMNS").unwrap_or_else(|_| "100".into()));
    }
    // quiet: the compiler's errors only, so its messages come as JSON and the errors' text is shown
    let quiet_text = opts.quiet && !opts.json && !records;
    if quiet_text {
        let ansi = std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none();
        cmd.arg(if ansi { "--message-format=json-diagnostic-rendered-ansi" } else { "--message-format=json" });
    } else if opts.json && !records {
        cmd.arg("--message-format=json");
    }
    let piped = opts.json || records || quiet_text;
    cmd.stdin(Stdio::null()).stdout(if piped { Stdio::piped() } else { Stdio::null() }).stderr(Stdio::piped());
    let mut child = cmd.spawn().with_context(|| format!("could not run `{}` to build {what}", cmd.get_program().to_string_lossy()))?;
    let err = child.stderr.take();
    let copier = std::thread::spawn(move || {
        let mut kept = Vec::new();
        let Some(mut err) = err else { return kept };
        let mut buf = [0u8; 8192];
        while let Ok(n) = err.read(&mut buf) {
            if n == 0 {
                break;
            }
            let _ = std::io::stderr().write_all(&buf[..n]);
            kept.extend_from_slice(&buf[..n]);
            if kept.len() > 1 << 20 {
                kept.drain(..kept.len() - (1 << 19));
            }
        }
        kept
    });
    let mut kept = Vec::new();
    // the errors' text, for the hints (in JSON it is not on stderr)
    let mut errors = String::new();
    if let Some(out) = child.stdout.take() {
        let stdout = std::io::stdout();
        for line in std::io::BufReader::new(out).lines().map_while(Result::ok) {
            let Ok(v) = serde_json::from_str::<serde_json::Value>(&line) else { continue };
            if v["reason"] == "compiler-message" {
                let error = v["message"]["level"].as_str().is_some_and(|l| l.starts_with("error"));
                let text = v["message"]["rendered"].as_str().unwrap_or_default();
                if error {
                    errors.push_str(text);
                }
                if opts.json {
                    let _ = writeln!(stdout.lock(), "{line}");
                } else if !opts.quiet || error {
                    let _ = write!(std::io::stderr(), "{text}");
                }
            } else if records && v["reason"] == "build-script-executed" {
                kept.push(v);
            }
        }
    }
    let status = child.wait().with_context(|| format!("waiting for cargo to build {what}"))?;
    let stderr = String::from_utf8_lossy(&copier.join().unwrap_or_default()).into_owned() + &errors;
    Ok(CargoRun { status, stderr, records: kept })
}

/// `help:` lines for build failures with a known cause, from cargo's stderr.
pub fn build_hints(stderr: &str) -> Vec<String> {
    let mut out = Vec::new();
    if stderr.contains("is only accepted on the nightly channel") {
        out.push(format!(
            "kernel crates build with a nightly toolchain (-Zbuild-std=core): put a `rust-toolchain.toml` beside Cargo.toml with `channel = \"{NIGHTLY}\"` and `components = [\"rust-src\"]` (`cargo gpucheck new NAME` writes a kernel crate with one)"
        ));
    }
    if stderr.contains("llvm-bitcode-linker") {
        out.push("a `cdylib` kernel crate is linked by rustc's bitcode linker, which is not installed; cargo gpucheck reads the library's own PTX and needs no linking: leave `crate-type` at the default (`rlib`), or install the linker with `rustup component add llvm-bitcode-linker llvm-tools`".to_string());
    }
    if stderr.contains("can't find crate for `std`") {
        out.push("nvptx64-nvidia-cuda has no standard library: put `#![no_std]` at the top of the kernel crate's lib.rs, with a `#[panic_handler]` (`cargo gpucheck new NAME` writes a kernel crate with both)".to_string());
    } else if stderr.contains("`#[panic_handler]` function required") {
        out.push("a `#![no_std]` kernel crate needs a panic handler: `#[panic_handler] fn panic(_: &core::panic::PanicInfo) -> ! { loop {} }` in its lib.rs".to_string());
    }
    if stderr.contains("unknown tool name `gpucheck`") {
        out.push("`#[allow(gpucheck::…)]` needs the tool registered: put `#![feature(register_tool)]` and `#![register_tool(gpucheck)]` at the top of the kernel crate's lib.rs (or use a `// gpucheck: allow(…)` comment)".to_string());
    }
    if stderr.contains("rust-src") && (stderr.contains("component") || stderr.contains("does not exist")) {
        out.push("-Zbuild-std needs the standard library's sources: add `components = [\"rust-src\"]` to rust-toolchain.toml, or run `rustup component add rust-src` for the crate's toolchain".to_string());
    }
    out
}

/// The nightly the example kernels and `cargo gpucheck new` pin.
pub const NIGHTLY: &str = "nightly-2026-05-20";

/// Build every package of the workspace; the PTX files to analyse, in
/// package order. Packages that share a toolchain file are built by one
/// cargo run (`-j` bounds its parallelism).
pub fn build_all(ws: &Workspace, meta: &Metadata, opts: BuildOpts) -> Result<Vec<Unit>> {
    let mut units = Vec::new();
    let nvptx: Vec<&KernelCrate> = ws.kernels.iter().filter(|k| k.backend == Backend::Nvptx).collect();
    let mut groups: Vec<(Option<PathBuf>, Vec<&KernelCrate>)> = Vec::new();
    for k in nvptx {
        let tc = toolchain_file(&k.root);
        match groups.iter_mut().find(|(t, _)| *t == tc) {
            Some((_, g)) => g.push(k),
            None => groups.push((tc, vec![k])),
        }
    }
    for (_, group) in &groups {
        for (k, ptx) in nvptx::build(group, &ws.target_dir.join("gpucheck"), opts)? {
            units.push(Unit { krate: k.clone(), ptx, note: None, kind: UnitKind::Crate });
        }
    }
    for host in ws.kernels.iter().filter(|k| k.backend == Backend::Nvvm) {
        units.extend(nvvm::build(host, ws, meta, opts)?);
    }
    let hosts: Vec<&KernelCrate> = ws.kernels.iter().filter(|k| k.backend == Backend::BuildScript).collect();
    if !hosts.is_empty() {
        let built = host::build(&hosts, ws, opts)?;
        if !opts.quiet {
            for line in &built.said {
                eprintln!("{line}");
            }
        }
        units.extend(built.units);
    }
    // CUDA C for NVRTC in the packages' Rust code (libnvrtc loaded once, when needed)
    let mut lib = None;
    for k in ws.kernels.iter().filter(|k| k.nvrtc) {
        let (found, said) = nvrtc::build(k, &ws.target_dir, &mut lib)?;
        for line in said.iter().filter(|l| !opts.quiet || l.starts_with("warning:")) {
            eprintln!("{line}");
        }
        units.extend(found);
    }
    // the order of the packages in the workspace, whatever the build order
    let pos = |u: &Unit| ws.kernels.iter().position(|k| k.root == u.krate.root).unwrap_or(usize::MAX);
    units.sort_by_key(|u| (pos(u), u.krate.name.clone()));
    Ok(units)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_build_failures_get_help() {
        let stable = "error: the `-Z` flag is only accepted on the nightly channel of Cargo, but this is the `stable` channel";
        assert!(build_hints(stable)[0].contains("rust-toolchain.toml"), "{:?}", build_hints(stable));
        let cdylib = "error: linker `llvm-bitcode-linker` not found\n  |\n  = note: No such file or directory (os error 2)";
        assert!(build_hints(cdylib)[0].contains("crate-type"));
        let src = "error: \"/root/.rustup/toolchains/nightly/lib/rustlib/src/rust/library/Cargo.lock\" does not exist, unable to build with the standard library, try:\n        rustup component add rust-src --toolchain nightly";
        assert!(build_hints(src)[0].contains("rust-src"));
        assert!(build_hints("error[E0308]: mismatched types").is_empty());
        let std =
            "error[E0463]: can't find crate for `std`\n  = note: the `nvptx64-nvidia-cuda` target may not support the standard library";
        assert!(build_hints(std)[0].contains("`#![no_std]`"), "{:?}", build_hints(std));
        assert!(build_hints("error: `#[panic_handler]` function required, but not found")[0].contains("#[panic_handler]"));
        let tool = "error[E0710]: unknown tool name `gpucheck` found in scoped lint: `gpucheck::divergent_branch`";
        assert!(build_hints(tool)[0].contains("#![register_tool(gpucheck)]"), "{:?}", build_hints(tool));
    }

    /// The binary links GCC's static unwinder where the C compiler has one
    /// (build.rs): a panic still unwinds to `catch_unwind` (as `main`'s does,
    /// which reports it), and a backtrace still walks the frames. This test
    /// binary is linked as the binary is.
    #[test]
    fn a_panic_unwinds_to_its_catch_with_the_linked_unwinder() {
        // (the panic's message goes to this test's captured output; the hook, which every test
        // of the binary shares, is left as it is)
        let caught = std::panic::catch_unwind(|| -> u32 { panic!("unwound on purpose") });
        assert!(caught.is_err());
        let frames = std::backtrace::Backtrace::force_capture().to_string();
        assert!(frames.contains("a_panic_unwinds_to_its_catch_with_the_linked_unwinder"), "{frames}");
    }

    #[test]
    fn toolkit_files_are_not_the_users() {
        for f in [
            "/usr/lib/llvm-19/lib/clang/19/include/__clang_cuda_device_functions.h",
            "/usr/local/cuda-12.9/include/sm_20_atomic_functions.hpp",
            "/work/target/cuda-tools/root/include/cuda_fp16.hpp",
            "/venv/site-packages/nvidia/cuda_runtime/include/vector_types.h",
            "/root/.rustup/toolchains/nightly/lib/rustlib/src/rust/library/core/src/ptr/mod.rs",
            "/rustc/59807616e1fa2540724bfbac14d7976d7e4a3860/library/core/src/ptr/mod.rs",
            "/home/u/.cargo/registry/src/index.crates.io-x/cuda_std-0.2.2/src/thread.rs",
            // (nvcc's PTX names the host compiler's headers: read for nothing, at every check)
            "/usr/include/time.h",
            "/usr/include/bits/types.h",
            "/usr/lib/gcc/x86_64-linux-gnu/4.4.3/include/stddef.h",
        ] {
            assert!(toolkit_file(f), "{f}");
        }
        for f in
            ["/tmp/hdr.cu", "/home/u/proj/include/my_kernels.cuh", "/home/u/cuda_proj/include/k.cuh", "src/lib.rs", "/usr/local/src/k.cu"]
        {
            assert!(!toolkit_file(f), "{f}");
        }
    }
}
