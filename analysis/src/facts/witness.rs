//! Feasible witnesses: a race's two threads reach its two accesses only
//! through the branch outcomes on their way (guards, and a loop's tests at
//! the witness iterations: [`Lanes::passed`]). Where such an outcome
//! compares a thread's value with a scalar parameter that the check gave a
//! sample (`i < C`), the comparison is solved for the parameter
//! ([`crate::ir::scalar::solve_cmp`]) at the witness thread's value: the
//! race then states the values it needs (`when C ≥ 129`) and holds for
//! every one of them, instead of resting on the sample. An outcome that
//! cannot be solved (two parameters, arithmetic on one) adds the samples it
//! rests on to the witness's (`Race::rests_on`): the finding names them.
//!
//! Owns: the conditions a race witness needs from the paths to its
//! accesses. Does not own: which threads run a block (`lanes`), solving
//! addresses for parameters (`crate::races::param`).

use super::lanes::Lanes;
use super::BranchFact;
use crate::divergence::eval::Leaves;
use crate::ir::inst::Opcode;
use crate::ir::{FunctionIr, InstId, ValueId};
use crate::memory::{Evals, Query};
use crate::races::param::ParamCondition;
use crate::races::Race;

/// State the parameter range race `r`'s witness needs on the way to its
/// accesses (`site(k)`: the instruction of access `k`), or add what those
/// ways rest on to its samples.
pub(super) fn bound(
    evals: &Evals<'_, '_>,
    branches: &[BranchFact],
    lanes: &mut Lanes<'_, '_, '_>,
    r: &mut Race,
    site: &dyn Fn(usize) -> InstId,
) {
    let f = evals.f;
    // the iteration each thread is in at its access
    let (ia, ib) = match (r.iteration, r.next_iteration) {
        (Some((it, _)), _) => (it, it),
        (None, true) => (0, 1),
        (None, false) => (0, 0),
    };
    let mut solved: Vec<(ValueId, i64, i64, i64, i64)> = Vec::new();
    let mut unsolved = Leaves::none();
    for (k, t, it) in [(r.first, r.threads.0, ia), (r.second, r.threads.1, ib)] {
        let block = f.cfg.block_of(site(k));
        for d in lanes.passed(block, it, t) {
            let br = branches[d.branch].br;
            // unknown parameters at their samples: the leaves say which
            let q = Query::block(d.iteration);
            let Some((_, leaves)) = evals.eval_resting(br.cond, q) else { continue };
            if leaves.is_empty() {
                continue;
            }
            // the condition's value on the way: taken = (cond != 0) != negated
            let want = d.side != br.negated;
            match solve(f, evals, br.cond, t, q, want) {
                Some(c) => solved.push(c),
                None => unsolved = unsolved.union(&leaves),
            }
        }
    }
    let Some(&(p, ..)) = solved.first() else {
        r.rests_on = r.rests_on.union(&unsolved);
        return;
    };
    let one_param = solved.iter().all(|c| c.0 == p);
    let in_address = r.rests_on.iter().any(|v| v == p);
    let (lo, hi) = solved.iter().fold((i64::MIN, i64::MAX), |(lo, hi), c| (lo.max(c.1), hi.min(c.2)));
    let (tmin, tmax) = (solved[0].3, solved[0].4);
    let name = f.def_inst(p).and_then(|i| f.insts[i].param_read()).map(|(n, _)| f.param_label(n));
    match name {
        Some(param) if one_param && !in_address && r.when.is_none() && lo <= hi => {
            let (lo, hi) = ((lo > tmin).then_some(lo), (hi < tmax).then_some(hi));
            if lo.is_some() || hi.is_some() {
                let example = lo.or(hi).unwrap_or(0);
                r.when = Some(ParamCondition::Bound { param, lo, hi, example });
            }
            r.rests_on = r.rests_on.union(&unsolved);
        }
        _ => {
            let params = Leaves::of(solved.iter().map(|c| c.0).collect());
            r.rests_on = r.rests_on.union(&unsolved).union(&params);
        }
    }
}

/// Condition `cond` (a `setp` comparing a scalar parameter with a value
/// known exactly in thread `t`) solved for the parameter's values that
/// give it `want`: (parameter, lowest, highest, the type's lowest, the
/// type's highest).
fn solve(
    f: &FunctionIr<'_>,
    evals: &Evals<'_, '_>,
    cond: ValueId,
    t: usize,
    q: Query,
    want: bool,
) -> Option<(ValueId, i64, i64, i64, i64)> {
    let i = f.def_inst(crate::ir::values::through_copies(f, cond))?;
    let x = &f.insts[i];
    if x.opcode != Opcode::Setp || x.bool_op.is_some() || x.operands().len() != 3 {
        return None;
    }
    let (c, ty) = (x.cmp?, x.ty?);
    let param = |k: usize| {
        let v = crate::ir::values::through_copies(f, f.operand_value(i, k)?);
        matches!(f.insts[f.def_inst(v)?].param_read(), Some((_, 0))).then_some(v)
    };
    let (p_left, p, other) = match (param(1), param(2)) {
        (Some(p), None) => (true, p, 2),
        (None, Some(p)) => (false, p, 1),
        _ => return None,
    };
    // the thread's side: known exactly, resting on no sample
    let known = match x.operand(other) {
        Some(crate::ptx::Operand::Imm(_)) => return None,
        _ => {
            let (vals, leaves) = evals.eval_resting(f.operand_value(i, other)?, q)?;
            if !leaves.is_empty() {
                return None;
            }
            *vals.get(t)?
        }
    };
    let (lo, hi) = crate::ir::scalar::solve_cmp(c, ty, known as u64, p_left, want)?;
    let (tmin, tmax) = ty_range(ty);
    Some((p, lo, hi, tmin, tmax))
}

/// The smallest and largest integer of type `ty`, as `solve_cmp` reads them.
fn ty_range(ty: crate::ir::inst::Ty) -> (i64, i64) {
    let bits = ty.bits().min(64);
    if ty.signed() {
        ((-(1i128 << (bits - 1))) as i64, ((1i128 << (bits - 1)) - 1) as i64)
    } else {
        (0, ((1i128 << bits) - 1).min(i64::MAX as i128) as i64)
    }
}
