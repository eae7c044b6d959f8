//! The coverage of a function's memory instructions: every
//! `ld`/`ldu`/`st`/`atom`/`red` (vector forms included) in exactly one
//! category — predicted, data-dependent, another space, or not analysed
//! with its reason.
//!
//! Owns: the categories and the reasons. Does not own: the predictions
//! (`crate::memory`).

use crate::ir::inst::Space;
use crate::ir::{FunctionIr, InstId};
use crate::memory::AccessFact;
use rustc_hash::FxHashMap;

/// How the memory instructions of a function were analysed: every
/// `ld`/`ldu`/`st`/`atom`/`red` (vector forms included) in exactly one
/// category.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Coverage {
    pub total: usize,
    /// Global or shared, cost predicted.
    pub predicted: usize,
    /// Global or shared, the address depends on loaded data (no prediction possible).
    pub data_dependent: usize,
    /// Local, constant and parameter memory: per-thread or broadcast, no
    /// coalescing or bank question.
    pub other_space: usize,
    /// Not analysed, and why.
    pub skipped: Vec<(InstId, Skip)>,
    /// Of the predicted and data-dependent ones, those whose address
    /// space is not known: analysed as global.
    pub assumed_global: Vec<InstId>,
}

/// Why a memory instruction was not analysed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Skip {
    /// In a device function, its address is computed from the function's
    /// arguments (analysed once for all callers, without their context).
    FromArguments,
    /// Likewise, in a device function no kernel of the module calls.
    NoCaller,
    /// No thread of the block shape executes it (unreachable code, or
    /// guards that exclude every thread of the assumed block).
    Unreached,
    /// Its address could not be evaluated per thread.
    NotEvaluable,
}

impl Skip {
    /// The reason, as printed.
    pub fn reason(self) -> &'static str {
        match self {
            Skip::FromArguments => "address computed from a device function's arguments that no call context gives (recursion, beyond the call depth, a struct argument)",
            Skip::NoCaller => "in a device function no kernel of the module calls",
            Skip::Unreached => "no thread of the block shape executes it",
            Skip::NotEvaluable => "address could not be evaluated per thread",
        }
    }

    /// A short key for JSON.
    pub fn key(self) -> &'static str {
        match self {
            Skip::FromArguments => "from_arguments",
            Skip::NoCaller => "no_caller",
            Skip::Unreached => "unreached",
            Skip::NotEvaluable => "not_evaluable",
        }
    }
}

/// Sort every memory instruction of `f` into one category.
pub(super) fn coverage(f: &FunctionIr<'_>, accesses: &[AccessFact]) -> Coverage {
    let by_inst: FxHashMap<InstId, &AccessFact> = accesses.iter().map(|a| (a.access.inst, a)).collect();
    let mut c = Coverage::default();
    for (i, inst) in f.insts.iter_enumerated() {
        if inst.access().is_none() {
            continue;
        }
        c.total += 1;
        let Some(a) = by_inst.get(&i) else {
            // `memory::accesses` leaves out only the addresses computed from a
            // device function's arguments (`memory::from_arguments`)
            if matches!(f.spaces.analysed(f, i).0, Space::Global | Space::Shared) {
                c.skipped.push((i, if f.cfg.reachable(f.cfg.block_of(i)) { Skip::FromArguments } else { Skip::Unreached }));
            } else {
                c.other_space += 1;
            }
            continue;
        };
        if a.prediction.is_some() {
            c.predicted += 1;
        } else if a.access.addr.data() {
            c.data_dependent += 1;
        } else if !a.reached || !f.cfg.reachable(f.cfg.block_of(i)) {
            c.skipped.push((i, Skip::Unreached));
            continue;
        } else {
            c.skipped.push((i, Skip::NotEvaluable));
            continue;
        }
        if a.access.assumed {
            c.assumed_global.push(i);
        }
    }
    c
}
