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

/// A kernel whose stored address is affine in the thread index and two
/// scalar parameters, `4·(t·q + p)` (`%r1` = p, `%r2` = q, `%r4` = t·q,
/// `%r5` = t·q + p, `%r6` the address), for the tests.
#[cfg(test)]
pub(crate) const AFFINE_IN_TWO_PARAMS: &str = r#"
.version 7.0
.target sm_80
.address_size 64
.visible .entry k(.param .u32 k_p, .param .u32 k_q) {
    .reg .b32 %r<8>;
    ld.param.u32 %r1, [k_p];
    ld.param.u32 %r2, [k_q];
    mov.u32 %r3, %tid.x;
    mul.lo.s32 %r4, %r3, %r2;
    add.s32 %r5, %r4, %r1;
    shl.b32 %r6, %r5, 2;
    st.global.u32 [%r6], %r3;
    ret;
}"#;

/// [`AFFINE_IN_TWO_PARAMS`]'s kernel, lowered, and its divergence, for
/// the tests (kept for the test process's life).
#[cfg(test)]
pub(crate) fn affine_in_two_params() -> (&'static ir::FunctionIr<'static>, divergence::Divergence) {
    let m: &'static ptx::Module<'static> = Box::leak(Box::new(ptx::parse(AFFINE_IN_TWO_PARAMS).expect("the test kernel parses")));
    let fs: &'static [ir::FunctionIr<'static>] = Box::leak(ir::lower(m).into_boxed_slice());
    let sums = divergence::Summaries::compute(fs);
    (&fs[0], divergence::Divergence::analyze(&fs[0], &sums))
}

/// The value an instruction of `f` writes to register `reg`, for the tests.
#[cfg(test)]
pub(crate) fn value_written(f: &ir::FunctionIr<'_>, reg: &str) -> ir::ValueId {
    (0..f.ssa.values.len())
        .map(ir::ValueId::new)
        .find(|&v| matches!(f.ssa.values[v], ir::ValueDef::Inst { .. }) && f.ssa.reg_of(v, &f.insts) == reg)
        .expect("a value written to the register")
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
