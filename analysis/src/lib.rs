//! gpucheck-analysis: from PTX text to findings.
//!
//! Pipeline: [`ptx::parse`] → [`ir::lower`] (CFG, dominators, loops, SSA) →
//! [`divergence`] (affine thread-dependence of every value) → [`lints`] →
//! [`Finding`]s with PTX positions and Rust source spans ([`srcmap`]).
//!
//! This crate is usable alone: given PTX text and a launch configuration it
//! returns findings. It spawns no process, touches no file and prints nothing;
//! Cargo, files and rendering belong to the `cargo-gpucheck` binary.

pub mod ir;
pub mod ptx;
