//! The one input seam: every source of PTX — the workspace's kernel crates
//! (rustc's nvptx target, Rust-CUDA), the PTX build scripts write into
//! OUT_DIR, the CUDA C Rust code hands to NVRTC, and PTX files given on the
//! command line — becomes a `build::Unit`, and every command (the check, `ptx`,
//! `confirm`, `report`) takes its units from here and sends each down the
//! same path: levels, suppression comments, rendering, confirm, report.
//!
//! Owns: turning a source into units (metadata, workspace, build; or the
//! files' own units with a manifest's launch settings), the folder paths
//! are shown relative to, and the target folder. Does not own: building
//! (`build`) or what a command does with the units.

use crate::build::{self, BuildOpts, KernelCrate, Unit};
use anyhow::Result;
use std::path::{Path, PathBuf};

/// Where the PTX to check comes from.
#[derive(Clone, Copy)]
pub enum Source<'a> {
    /// The kernel crates of a workspace, built (`--manifest-path`, `-p`,
    /// `--backend`; `all`: `--workspace`, else those of the member package
    /// the command runs in, as cargo's).
    Workspace { manifest_path: Option<&'a Path>, packages: &'a [String], backend: Option<build::Backend>, all: bool },
    /// PTX files from any producer, with the launch settings of a manifest's
    /// `[package.metadata.gpucheck]` table when one is given.
    Files { files: &'a [PathBuf], manifest: Option<&'a Path> },
}

impl<'a> Source<'a> {
    /// The source the build flags and `--ptx` files of a command name.
    pub fn of(b: &'a crate::cli::BuildArgs, ptx: &'a [PathBuf]) -> Source<'a> {
        if ptx.is_empty() {
            Source::Workspace { manifest_path: b.manifest_path.as_deref(), packages: &b.packages, backend: b.backend, all: b.workspace }
        } else {
            Source::Files { files: ptx, manifest: b.manifest_path.as_deref() }
        }
    }
}

/// What a source gives, before anything is built.
pub struct Plan {
    /// The folder paths are shown relative to: the workspace root, the
    /// manifest's folder, or the current folder for PTX files given alone.
    pub root: PathBuf,
    /// The target folder (reports are written under it).
    pub target_dir: PathBuf,
    /// `[workspace.metadata.gpucheck.lints]`.
    pub lints: Option<serde_json::Value>,
    /// The crates the units will come from (their configuration can be
    /// checked before a build).
    pub kernels: Vec<KernelCrate>,
    /// Inputs that cannot be used (a PTX file that does not exist), each
    /// said as an error: the command fails after checking the others.
    pub errors: Vec<String>,
    pending: Pending,
    /// Which packages were left out because the command runs inside one
    /// member (a note for the user), if any.
    pub scope: Option<String>,
}

enum Pending {
    Build(Box<(build::Workspace, cargo_metadata::Metadata)>),
    Ready(Vec<Unit>),
}

/// The plan of a source: the workspace's kernel crates (from `cargo
/// metadata`), or the files' units.
pub fn plan(src: Source<'_>) -> Result<Plan> {
    match src {
        Source::Workspace { manifest_path, packages, backend, all } => {
            let meta = build::metadata(manifest_path)?;
            let mut ws = build::workspace(&meta, packages, backend)?;
            let here = match manifest_path {
                Some(m) => std::path::absolute(m)?.parent().map(Path::to_path_buf).unwrap_or_default(),
                None => std::env::current_dir().unwrap_or_default(),
            };
            let scope = if all || !packages.is_empty() { None } else { build::scope_to_current(&mut ws, &meta, &here) };
            Ok(Plan {
                scope,
                root: ws.root.clone(),
                target_dir: ws.target_dir.clone(),
                lints: ws.lints.clone(),
                kernels: ws.kernels.clone(),
                errors: Vec::new(),
                pending: Pending::Build(Box::new((ws, meta))),
            })
        }
        Source::Files { files, manifest } => {
            let cwd = std::env::current_dir().unwrap_or_default();
            let mut units = Vec::new();
            let mut errors = Vec::new();
            for f in files {
                match build::ptx_unit(f, manifest) {
                    Ok(u) => units.push(u),
                    Err(e) => errors.push(format!("{e:#}")),
                }
            }
            let root = match manifest {
                Some(m) => std::path::absolute(m)?.parent().map(Path::to_path_buf).unwrap_or_default(),
                None => cwd.clone(),
            };
            let target_dir = std::env::var_os("CARGO_TARGET_DIR").map(|t| cwd.join(t)).unwrap_or_else(|| cwd.join("target"));
            Ok(Plan {
                scope: None,
                root,
                target_dir,
                lints: None,
                kernels: units.iter().map(|u| u.krate.clone()).collect(),
                errors,
                pending: Pending::Ready(units),
            })
        }
    }
}

impl Plan {
    /// The units: the workspace built (packages in workspace order), or the files'.
    pub fn units(self, opts: BuildOpts) -> Result<Vec<Unit>> {
        match self.pending {
            Pending::Build(b) => build::build_all(&b.0, &b.1, opts),
            Pending::Ready(units) => Ok(units),
        }
    }
}
