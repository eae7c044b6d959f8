//! gpucheck-analysis: from PTX text to findings.
//!
//! Pipeline: [`ptx::parse`] → [`ir::lower`] (typed instructions, CFG,
//! dominators, loops and their counters, SSA, address spaces) →
//! [`divergence`] (affine thread-dependence of every value) → [`memory`]
//! (sectors per request, bank conflicts) and [`races`] → [`facts`] (per
//! kernel) → [`lints`] → [`Finding`]s with PTX positions and Rust source
//! spans ([`srcmap`]); the [`driver`] runs it per function, called device
//! functions once per call context their kernels give them, and returns the
//! [`Report`] ([`report`]). [`model`] (block shape, warps, sectors, banks)
//! sits below all of them; [`interp`] runs kernels for confirmation.
//!
//! This crate is usable alone: given PTX text and a launch configuration it
//! returns findings. It spawns no process, touches no file and prints nothing;
//! Cargo, files and rendering belong to the `cargo-gpucheck` binary.

pub mod divergence;
pub mod driver;
pub mod facts;
pub mod interp;
pub mod ir;
pub mod lints;
pub mod memory;
pub mod meter;
pub mod model;
pub mod names;
pub mod par;
pub mod producer;
pub mod ptx;
pub mod races;
pub mod replay;
pub mod report;
pub mod srcmap;
pub mod synth;

/// Deterministic pseudo-random numbers for the tests (xorshift64 from
/// `seed`): each call gives the next one, below `n`.
#[cfg(test)]
pub(crate) fn xorshift(mut seed: u64) -> impl FnMut(u64) -> u64 {
    move |n| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n
    }
}

pub use driver::{check, check_module, given_shape, grid_for, shape_for, Options};
pub use lints::{Finding, Level, Lint, Metric, Note, NoteKind, Place, Text, LINTS};
pub use model::{Shape, ShapeSource};
pub use names::demangle;
pub use producer::producer;
pub use ptx::ParseError;
pub use report::{
    AccessReport, BarrierReport, BranchPrediction, BranchReport, Condition, CoverageReport, GroupReport, Needs, RaceReport, Report, Site,
    SkippedSite,
};
pub use srcmap::{IsLocal, SrcPos};
