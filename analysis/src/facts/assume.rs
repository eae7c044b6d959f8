//! What a fact rests on that the kernel does not fix: the uniform values
//! an evaluation gave a sample (a scalar parameter, a value loaded from an
//! address the same in every thread, a loop counter past the values its
//! start and step give; `crate::memory::Evals` records them), the unknown
//! values a lane stride was taken as large for, and the values a branch's
//! split count was found with. A prediction or witness without any holds
//! for every value the kernel allows; one with some holds for the samples
//! named, which its finding carries (`Finding::assumes`).
//!
//! The evaluator says which sampled leaves each value it computes was
//! computed from (`divergence::eval::Leaves`): a prediction or a race
//! witness keeps those of the evaluations it was made from.
//!
//! Owns: naming the assumptions and deciding which a set of values rests
//! on. Does not own: giving samples (`crate::memory`) or what a finding
//! does with them (`crate::lints`).

use crate::divergence::eval::Leaves;
use crate::ir::{FunctionIr, ValueDef, ValueId};
use crate::memory::{Sampled, StrideSymbol};

/// A value a prediction or a witness was computed with that the kernel
/// does not fix.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Assumption {
    /// How the PTX names it: a parameter (`n`, or `p+8` for a field of a
    /// struct parameter), else the register holding it.
    pub name: String,
    pub kind: Assumed,
    /// The PTX line that computes it (none for a parameter).
    pub ptx_line: Option<u32>,
    /// The value it was given; for a stride, the bytes between
    /// neighbouring threads it gave.
    pub sample: i64,
    /// It decides only where the warps' addresses start within a sector
    /// (other values give the prediction's misaligned variant).
    pub alignment: bool,
}

/// What kind of value an assumption is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Assumed {
    /// A scalar parameter (of the kernel, or of a device function analysed
    /// for every caller) given a sample.
    Parameter,
    /// A value loaded from an address that is the same in every thread,
    /// given a sample.
    Loaded,
    /// A loop counter past the values its start and step give, given one
    /// of its earlier values or a sample.
    Counter,
    /// The grid's size along a dimension (`gridDim`), not given, given a
    /// sample.
    Grid,
    /// Another uniform value not known statically (a call's result, a
    /// value chosen at a join, two registers packed into one…) given a
    /// sample.
    Value,
    /// A lane stride that is a multiple of a value not known statically,
    /// taken as large.
    Stride,
}

impl Assumed {
    /// A short key for JSON.
    pub fn key(self) -> &'static str {
        match self {
            Assumed::Parameter => "parameter",
            Assumed::Loaded => "loaded",
            Assumed::Counter => "counter",
            Assumed::Grid => "grid",
            Assumed::Value => "value",
            Assumed::Stride => "stride",
        }
    }
}

/// The sampled leaves `on` (a prediction's or a witness's), each with the
/// sample `sampled` says it was given, but `solved` (the values a finding
/// states its condition on).
pub fn of_leaves(f: &FunctionIr<'_>, on: &Leaves, sampled: &Sampled, solved: &[ValueId]) -> Vec<Assumption> {
    on.iter().filter(|v| !solved.contains(v)).filter_map(|v| Some(named(f, v, *sampled.get(&v)?))).collect()
}

/// Values given samples (a branch's split count was found with them, say).
pub fn of_samples(f: &FunctionIr<'_>, witness: &[(ValueId, i64)]) -> Vec<Assumption> {
    witness.iter().map(|&(v, x)| named(f, v, x)).collect()
}

/// The unknown values a prediction's lane strides were taken as large for.
pub fn of_strides(f: &FunctionIr<'_>, strides: &[(StrideSymbol, i64)]) -> Vec<Assumption> {
    strides
        .iter()
        .map(|&(s, bytes)| {
            let (name, ptx_line) = match s {
                StrideSymbol::Named(sym) if (sym as usize) < f.ssa.values.len() => {
                    let a = named(f, ValueId::new(sym as usize), 0);
                    (a.name, a.ptx_line)
                }
                // a parameter of a call context, by name
                StrideSymbol::Named(sym) => match f.func.params.iter().find(|p| crate::divergence::name_key(p.name, 0) == sym) {
                    Some(p) => (p.name.to_string(), None),
                    None => ("a uniform value".to_string(), None),
                },
                StrideSymbol::Several => ("a product of uniform values".to_string(), None),
            };
            Assumption { name, kind: Assumed::Stride, ptx_line, sample: bytes, alignment: false }
        })
        .collect()
}

/// Value `v` given sample `x`, named as the PTX names it.
pub fn named(f: &FunctionIr<'_>, v: ValueId, x: i64) -> Assumption {
    let line = |i: crate::ir::InstId| Some(f.insts[i].ast.pos.line);
    let reg = || f.ssa.reg_of(v, &f.insts).to_string();
    let (name, kind, ptx_line) = match f.ssa.values[v] {
        ValueDef::Inst { inst, .. } => match f.insts[inst].param_read() {
            Some((p, 0)) => (p.to_string(), Assumed::Parameter, None),
            Some((p, off)) => (format!("{p}+{off}"), Assumed::Parameter, None),
            None if f.insts[inst].access().is_some() => (reg(), Assumed::Loaded, line(inst)),
            None => (reg(), Assumed::Value, line(inst)),
        },
        ValueDef::Phi(p) if f.cfg.loop_with_header(f.ssa.phis[p].block).is_some() => {
            (reg(), Assumed::Counter, f.loops.induction(v).and_then(|i| line(i.update)))
        }
        ValueDef::Phi(_) => (reg(), Assumed::Value, None),
        ValueDef::Entry(_) => match f.ssa.special(v) {
            Some(crate::ir::inst::Special::Nctaid(d)) => (format!("gridDim.{}", ["x", "y", "z"][d as usize % 3]), Assumed::Grid, None),
            _ => (reg(), Assumed::Value, None),
        },
    };
    Assumption { name, kind, ptx_line, sample: x, alignment: false }
}
