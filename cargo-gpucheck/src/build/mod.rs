//! Build backends: from a Cargo workspace to PTX files.
//!
//! Owns: finding the kernel packages (`cargo metadata`), their launch-shape
//! metadata, and running the build. Does not own: analysis or rendering.

pub mod nvptx;

use anyhow::{bail, Context, Result};
use cargo_metadata::{Metadata, MetadataCommand, Package};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

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
    pub block: Option<[u32; 3]>,
    pub kernel_blocks: HashMap<String, [u32; 3]>,
    /// `[package.metadata.gpucheck.lints]`
    pub lints: Option<serde_json::Value>,
}

pub struct Workspace {
    pub root: PathBuf,
    pub target_dir: PathBuf,
    pub kernels: Vec<KernelCrate>,
    /// `[workspace.metadata.gpucheck.lints]`
    pub lints: Option<serde_json::Value>,
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
    cmd.exec().context("`cargo metadata` failed: is this a Cargo project?")
}

/// The kernel packages of the workspace: those with
/// `[package.metadata.gpucheck]`, or those named in `packages`.
pub fn workspace(meta: &Metadata, packages: &[String]) -> Result<Workspace> {
    let members: Vec<&Package> = meta.workspace_packages();
    let mut chosen = Vec::new();
    if packages.is_empty() {
        chosen.extend(members.iter().copied().filter(|p| p.metadata.get("gpucheck").is_some()));
        if chosen.is_empty() {
            bail!(
                "no kernel package found in workspace `{}`: add a `[package.metadata.gpucheck]` table to the kernel crate's Cargo.toml, or name it with `-p`",
                meta.workspace_root
            );
        }
    } else {
        for spec in packages {
            match members.iter().find(|p| p.name.as_str() == spec.as_str()) {
                Some(p) => chosen.push(*p),
                None => {
                    let names: Vec<&str> = members.iter().map(|p| p.name.as_str()).collect();
                    bail!("package `{spec}` is not a member of the workspace (members: {})", names.join(", "));
                }
            }
        }
    }
    let mut kernels = Vec::new();
    for p in chosen {
        let lib =
            p.targets.iter().find(|t| t.kind.iter().any(|k| matches!(k.to_string().as_str(), "lib" | "rlib" | "cdylib" | "staticlib")));
        let Some(lib) = lib else {
            bail!("package `{}` has no library target: GPU kernels must live in a library crate", p.name);
        };
        let gm = p.metadata.get("gpucheck");
        let block = match gm.and_then(|g| g.get("block")) {
            Some(v) => Some(block_value(v).with_context(|| format!("in `[package.metadata.gpucheck] block` of `{}`", p.manifest_path))?),
            None => None,
        };
        let mut kernel_blocks = HashMap::new();
        if let Some(ks) = gm.and_then(|g| g.get("kernels")).and_then(|k| k.as_object()) {
            for (name, k) in ks {
                if let Some(b) = k.get("block") {
                    let b = block_value(b)
                        .with_context(|| format!("in `[package.metadata.gpucheck.kernels.{name}] block` of `{}`", p.manifest_path))?;
                    kernel_blocks.insert(name.clone(), b);
                }
            }
        }
        let manifest_path: PathBuf = p.manifest_path.clone().into();
        let root = manifest_path.parent().map(Path::to_path_buf).unwrap_or_default();
        kernels.push(KernelCrate {
            name: p.name.to_string(),
            package_id: p.id.repr.clone(),
            manifest_path,
            root,
            target_name: lib.name.replace('-', "_"),
            src_path: lib.src_path.clone().into(),
            edition: lib.edition.to_string(),
            block,
            kernel_blocks,
            lints: gm.and_then(|g| g.get("lints")).cloned(),
        });
    }
    let lints = meta.workspace_metadata.get("gpucheck").and_then(|g| g.get("lints")).cloned();
    Ok(Workspace { root: meta.workspace_root.clone().into(), target_dir: meta.target_directory.clone().into(), kernels, lints })
}

/// `[x, y, z]`, `[x]` or `x` from Cargo.toml metadata.
pub fn block_value(v: &serde_json::Value) -> Result<[u32; 3]> {
    let nums: Vec<u64> = match v {
        serde_json::Value::Number(n) => vec![n.as_u64().unwrap_or(0)],
        serde_json::Value::Array(a) => a.iter().map(|x| x.as_u64().unwrap_or(0)).collect(),
        _ => bail!("expected `block = [x, y, z]` (an array of 1 to 3 positive integers), found `{v}`"),
    };
    let s: Vec<String> = nums.iter().map(|n| n.to_string()).collect();
    crate::cli::parse_block(&s.join(",")).map_err(|e| anyhow::anyhow!("expected `block = [x, y, z]` of positive integers: {e}"))
}
