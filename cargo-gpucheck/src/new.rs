//! `cargo gpucheck new NAME`: write a kernel crate that builds and checks
//! as it is — Cargo.toml with the `[package.metadata.gpucheck]` launch
//! table, the pinned nightly toolchain file (the example kernels' own),
//! `.cargo/config.toml` so rust-analyzer and `cargo build` see the GPU
//! target, and two kernels (a `saxpy`, and a block sum through shared
//! memory) that show the idioms: `#![no_std]`, the panic handler, thread
//! indices, a `.shared` array and its address.
//!
//! Owns: the template and writing it. Does not own: building or checking.

use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};

/// The files of the template: (path in the crate, contents with `{name}`).
const FILES: &[(&str, &str)] = &[
    ("Cargo.toml", include_str!("../templates/new/Cargo.toml.in")),
    ("rust-toolchain.toml", include_str!("../../example-kernels/rust-toolchain.toml")),
    (".cargo/config.toml", include_str!("../templates/new/cargo/config.toml")),
    ("src/lib.rs", include_str!("../templates/new/src/lib.rs")),
];

/// A package name cargo accepts: ASCII letters, digits, `-` and `_`, not
/// starting with a digit.
fn valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_') && chars.all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

/// Write the crate into `path` (default `./NAME`); the folder it wrote.
pub fn run(name: &str, path: Option<&Path>) -> Result<PathBuf> {
    if !valid_name(name) {
        bail!("`{name}` is not a valid package name: use ASCII letters, digits, `-` and `_`, starting with a letter");
    }
    let dir = path.map(Path::to_path_buf).unwrap_or_else(|| PathBuf::from(name));
    if dir.exists() && std::fs::read_dir(&dir).map(|mut d| d.next().is_some()).unwrap_or(true) {
        bail!("destination `{}` already exists and is not empty", dir.display());
    }
    for (file, text) in FILES {
        let p = dir.join(file);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).with_context(|| format!("creating `{}`", parent.display()))?;
        }
        std::fs::write(&p, text.replace("{name}", name)).with_context(|| format!("writing `{}`", p.display()))?;
    }
    Ok(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert!(valid_name("my-kernels") && valid_name("k_2"));
        assert!(!valid_name("2k") && !valid_name("a b") && !valid_name(""));
    }

    #[test]
    fn the_template_pins_the_example_kernels_toolchain() {
        let toolchain = FILES.iter().find(|f| f.0 == "rust-toolchain.toml").unwrap().1;
        assert!(toolchain.contains(&format!("channel = \"{}\"", crate::build::NIGHTLY)), "{toolchain}");
        assert!(toolchain.contains("rust-src"));
    }
}
