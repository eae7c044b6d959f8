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
//!
//! A witness whose samples fail the kernel's own uniform tests on the way
//! (`assume::preconditions`), or whose loop the samples end before the
//! witness iteration, is no witness (`consistent`); where the failed test
//! is on one parameter, a value the tests allow is found (`allowed_value`)
//! and the pair looked for again (`crate::races::recheck`).
//!
//! A barrier whose deciding branch compares each thread's value with a
//! parameter (`if (idx >= N) return;`) is solved per thread the same way
//! (`barrier`): the values for which part of a block skips it, less those
//! the kernel's own checks rule out.
//!
//! A racing read whose value the reading thread discards (`discards`: a
//! select takes the other operand for that thread, or everything using it
//! is guarded off or in blocks the thread does not run) is no witness of a
//! race that matters: the pair is looked for again among the threads that
//! keep the value (`crate::races::recheck`), and where none races, the race
//! is benign (`Benign::Discarded`, `benign_race`).
//!
//! Owns: the conditions race and barrier witnesses need from the paths to
//! their accesses and the kernel's own checks. Does not own: which threads
//! run a block (`lanes`), solving addresses for parameters
//! (`crate::races::param`), the comparison's arithmetic (`ir::scalar`).

use super::lanes::Lanes;
use super::BranchFact;
use crate::divergence::eval::Leaves;
use crate::ir::inst::{Cmp, Opcode, Ty};
use crate::ir::{FunctionIr, InstId, ValueId};
use crate::memory::{Evals, Query};
use crate::races::param::ParamCondition;
use crate::races::{Benign, Race};
use std::rc::Rc;

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
    let (ia, ib) = r.iterations();
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

/// Do the samples race `r`'s witness rests on (with `pin`, when given,
/// in place of one) pass the uniform tests the kernel makes of them on
/// the way to its two accesses ([`super::assume::preconditions`], at
/// each access's iteration), and does the loop around an access of a
/// later iteration run that long? A loop unrolled by 4 is entered when
/// `n / k >= 4`: a witness in its body found with `n / k` sampled as 1
/// never runs; nor does a witness one iteration apart in a remainder loop
/// that runs `(n / k) & 3` = 1 times. `Err(Some(p))`: a test on the
/// sampled parameter `p` failed (another value of it may pass).
pub(super) fn consistent(
    evals: &Evals<'_, '_>,
    r: &Race,
    site: &dyn Fn(usize) -> InstId,
    pin: Option<(ValueId, i64)>,
) -> Result<(), Option<ValueId>> {
    let f = evals.f;
    if r.rests_on.is_empty() {
        return Ok(());
    }
    let (ia, ib) = r.iterations();
    let holds = |cond: ValueId, it: usize| {
        let q = Query { leading: Some(1), pin, ..Query::block(it) };
        evals.eval(cond, q).and_then(|x| x.first().copied()).map(|x| x != 0)
    };
    for v in r.rests_on.iter() {
        for &(k, it) in &[(r.first, ia), (r.second, ib)] {
            if !super::assume::preconditions(f, evals.d, v, site(k)).into_iter().all(|(cond, value)| passes(evals, cond, value, it, pin)) {
                let param = f.def_inst(v).and_then(|i| f.insts[i].param_read()).is_some();
                return Err(param.then_some(v));
            }
        }
    }
    // a later iteration's access: the loop around it (its exit test uniform) must run that long
    let runs_long_enough = [(r.first, ia), (r.second, ib)].iter().filter(|x| x.1 > 0).all(|&(k, it)| {
        let Some(l) = f.cfg.loop_of(f.cfg.block_of(site(k))) else { return true };
        f.loops.leaves_before(l, it, holds) != Some(true)
    });
    if runs_long_enough {
        Ok(())
    } else {
        Err(None)
    }
}

/// A value of parameter `p` that the kernel's tests of it on the way to
/// race `r`'s accesses allow: within the bounds of those comparing it with
/// a value known exactly (`n < 1024`), the nearest power of two to the
/// evaluator's sample, or another of a few spread over the bounds, that
/// passes every test (`n % 256 == 0` too).
pub(super) fn allowed_value(evals: &Evals<'_, '_>, p: ValueId, r: &Race, site: &dyn Fn(usize) -> InstId) -> Option<i64> {
    let f = evals.f;
    let (mut lo, mut hi) = (i64::MIN, i64::MAX);
    let tests: Vec<(ValueId, bool)> =
        [r.first, r.second].iter().flat_map(|&k| super::assume::preconditions(f, evals.d, p, site(k))).collect();
    for &(cond, value) in &tests {
        let Some((c, ty, _, p_left, other)) = comparison(f, cond).filter(|x| x.2 == p) else { continue };
        let Some((vals, leaves)) = evals.eval_resting(other, Query { leading: Some(1), ..Query::block(0) }) else { continue };
        let Some(&x) = vals.first().filter(|_| leaves.is_empty()) else { continue };
        let (l, h) = crate::ir::scalar::solve_cmp(c, ty, x as u64, p_left, value)?;
        (lo, hi) = (lo.max(l), hi.min(h));
    }
    if lo > hi {
        return None;
    }
    let sample = crate::memory::SCALAR_SAMPLE.clamp(lo, hi);
    let powers = (0..31).map(|b| 1i64 << b).filter(|&x| x >= lo && x <= sample).rev();
    let mut candidates: Vec<i64> = std::iter::once(sample).chain(powers).chain(spread(lo.max(-(1 << 31)), hi.min(1 << 31), 16)).collect();
    candidates.dedup();
    candidates.into_iter().find(|&v| tests.iter().all(|&(cond, value)| passes(evals, cond, value, 0, Some((p, v)))))
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
    let (c, ty, p, p_left, other) = comparison(f, cond)?;
    // the thread's side: known exactly, resting on no sample
    let (vals, leaves) = evals.eval_resting(other, q)?;
    if !leaves.is_empty() {
        return None;
    }
    let (lo, hi) = crate::ir::scalar::solve_cmp(c, ty, *vals.get(t)? as u64, p_left, want)?;
    let (tmin, tmax) = ty_range(ty);
    Some((p, lo, hi, tmin, tmax))
}

/// `cond` as a comparison of a scalar parameter with another value (not a
/// constant): the comparison, its type, the parameter, whether it is the
/// left operand, and the other value.
fn comparison(f: &FunctionIr<'_>, cond: ValueId) -> Option<(Cmp, Ty, ValueId, bool, ValueId)> {
    let i = f.def_inst(crate::ir::values::through_copies(f, cond))?;
    let x = &f.insts[i];
    if x.opcode != Opcode::Setp || x.bool_op.is_some() || x.operands().len() != 3 {
        return None;
    }
    let param = |k: usize| {
        let v = crate::ir::values::through_copies(f, f.operand_value(i, k)?);
        matches!(f.insts[f.def_inst(v)?].param_read(), Some((_, 0))).then_some(v)
    };
    let (p_left, p, other) = match (param(1), param(2)) {
        (Some(p), None) => (true, p, 2),
        (None, Some(p)) => (false, p, 1),
        _ => return None,
    };
    if matches!(x.operand(other), Some(crate::ptx::Operand::Imm(_))) {
        return None;
    }
    Some((x.cmp?, x.ty?, p, p_left, f.operand_value(i, other)?))
}

/// The smallest and largest integer of type `ty` that an `i64` holds.
fn ty_range(ty: Ty) -> (i64, i64) {
    let (lo, hi) = crate::ir::scalar::int_range(ty);
    (lo.max(i64::MIN as i128) as i64, hi.min(i64::MAX as i128) as i64)
}

/// Does uniform predicate `cond` have `value` in the first thread at
/// iteration `it` (with `pin`'s parameter at its value)? An unknown one
/// passes.
fn passes(evals: &Evals<'_, '_>, cond: ValueId, value: bool, it: usize, pin: Option<(ValueId, i64)>) -> bool {
    let q = Query { leading: Some(1), pin, ..Query::block(it) };
    evals.eval(cond, q).and_then(|x| x.first().copied()).is_none_or(|x| (x != 0) == value)
}

/// What a barrier's divergence needs of a parameter, when the branch
/// deciding it compares each thread's value with one (`if (idx >= N)
/// return;` before `__syncthreads()`): the values for which some threads
/// of a block skip the barrier and others reach it, solved per thread.
#[derive(Clone, Debug, PartialEq)]
pub struct BarrierWitness {
    /// The parameter, as messages name it.
    pub param: String,
    pub when: BarrierWhen,
    /// A value the kernel's own checks allow that splits the block, and
    /// the block it splits.
    pub example: i64,
    pub block: i64,
    /// The threads of that block that skip the barrier for `example`.
    pub skip: Vec<bool>,
}

/// The values of a parameter for which a barrier diverges.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BarrierWhen {
    /// `lo ≤ p ≤ hi` (in the block of the witness; the thread values do
    /// not depend on the block).
    Range { lo: i64, hi: i64 },
    /// `p` is not a multiple of `period` (each block's threads are the
    /// previous block's shifted by it), below `below` when the grid is known.
    NotMultiple { period: i64, below: Option<i64> },
}

/// The outcome of solving a barrier's deciding branch for a parameter.
pub(super) enum Solved {
    /// No value the kernel's own checks allow splits a block.
    Never,
    When(BarrierWitness),
}

/// Solve a barrier's divergence through branch `k` for the parameter its
/// condition compares the thread's value with; `skips`: does a thread
/// that takes the branch, and one that does not, skip the barrier. `None`:
/// the condition is not such a comparison, or the thread's side is not
/// known exactly.
pub(super) fn barrier(
    evals: &Evals<'_, '_>,
    branches: &[BranchFact],
    lanes: &mut Lanes<'_, '_, '_>,
    k: usize,
    skips: (bool, bool),
) -> Option<Solved> {
    let f = evals.f;
    let br = branches[k].br;
    // a thread skips when it takes the side that skips: the condition's value then
    let skip_taken = match skips {
        (true, false) => true,
        (false, true) => false,
        _ => return None,
    };
    let want = skip_taken != br.negated;
    let (c, ty, p, p_left, other) = comparison(f, br.cond)?;
    let on = lanes.active(br.block, 0);
    // the thread's side in block 0 and in block 1, known exactly
    let side_in = |block: i64| -> Option<Rc<Vec<i64>>> {
        let q = Query { ctaid: [block, 0, 0], ..Query::block(0) };
        let (vals, leaves) = evals.eval_resting(other, q)?;
        leaves.is_empty().then_some(vals)
    };
    let (x0, x1) = (side_in(0)?, side_in(1)?);
    // each running thread skips for one interval of the parameter: where do some, not all?
    let mut events: Vec<(i64, i32)> = Vec::new();
    let mut running = 0;
    for t in (0..x0.len()).filter(|&t| on.get(t) == Some(&true)) {
        running += 1;
        let Some((lo, hi)) = crate::ir::scalar::solve_cmp(c, ty, x0[t] as u64, p_left, want) else { continue };
        events.push((lo, 1));
        if hi < i64::MAX {
            events.push((hi + 1, -1));
        }
    }
    events.sort_unstable();
    let mut split: Vec<(i64, i64)> = Vec::new();
    let (tmin, tmax) = ty_range(ty);
    let (mut count, mut from) = (0, tmin);
    let mut i = 0;
    while i < events.len() {
        let at = events[i].0;
        // values in [from, at - 1] have `count` skipping
        if at > from && count > 0 && count < running {
            match split.last_mut() {
                Some(last) if last.1 + 1 == from => last.1 = at - 1,
                _ => split.push((from, at - 1)),
            }
        }
        while i < events.len() && events[i].0 == at {
            count += events[i].1;
            i += 1;
        }
        from = at;
    }
    if count > 0 && count < running && from <= tmax {
        match split.last_mut() {
            Some(last) if last.1 + 1 == from => last.1 = tmax,
            _ => split.push((from, tmax)),
        }
    }
    let Some(&(lo, hi)) = split.first() else { return Some(Solved::Never) };
    // each block the previous one shifted by `period`: all but one residue split some block
    let shift = x1.iter().zip(x0.iter()).map(|(a, b)| a - b).collect::<Vec<_>>();
    let period = shift.first().copied().filter(|&d| d > 0 && shift.iter().all(|&s| s == d));
    let name = f.param_label(f.insts[f.def_inst(p)?].param_read()?.0);
    let below = evals.grid().map(|g| g[0] as i64 * period.unwrap_or(0));
    let (when, candidates): (BarrierWhen, Vec<(i64, i64)>) = match period {
        Some(d) if split.len() == 1 && hi - lo + 1 == d - 1 => {
            let blocks = below.map_or(4, |b| (b / d).clamp(1, 4));
            let within = spread(lo, hi, 4);
            (BarrierWhen::NotMultiple { period: d, below }, (0..blocks).flat_map(|b| within.iter().map(move |&v| (v + b * d, b))).collect())
        }
        // values the same in every block, or block-dependent ones that do not shift by a
        // period: block 0's range
        _ => (BarrierWhen::Range { lo, hi }, spread(lo, hi, 16).into_iter().map(|v| (v, 0)).collect()),
    };
    // the kernel's own checks on the parameter on the way to the branch
    let pre = super::assume::preconditions(f, evals.d, p, br.inst);
    let allowed = |v: i64| pre.iter().all(|&(cond, value)| passes(evals, cond, value, 0, Some((p, v))));
    let Some(&(example, block)) = candidates.iter().find(|&&(v, _)| allowed(v)) else { return Some(Solved::Never) };
    let skip = (0..x0.len())
        .map(|t| {
            let x = x0[t] + block * period.unwrap_or(0);
            on.get(t) == Some(&true)
                && crate::ir::scalar::solve_cmp(c, ty, x as u64, p_left, want).is_some_and(|(l, h)| l <= example && example <= h)
        })
        .collect();
    Some(Solved::When(BarrierWitness { param: name, when, example, block, skip }))
}

/// Up to `n` values from `lo` to `hi`, both ends included, evenly spread.
fn spread(lo: i64, hi: i64, n: i64) -> Vec<i64> {
    let width = (hi as i128 - lo as i128).max(0);
    let mut out: Vec<i64> = (0..n as i128).map(|k| (lo as i128 + width * k / (n as i128 - 1).max(1)) as i64).collect();
    out.dedup();
    out
}

/// Whether thread `t` discards the value load `load` gives it in
/// iteration `it`: nothing that thread runs depends on it. A select whose
/// predicate takes the other operand in that thread, an instruction guarded
/// off for it, and an instruction in a block it does not run (`lanes`) do
/// not use it; an access, a call, a branch, a value other threads see
/// (shuffles, votes, atomics) do, and so does whatever is computed from
/// it. Predicates count only where the thread alone decides them (no
/// parameter at a sample).
pub(super) fn discards(evals: &Evals<'_, '_>, lanes: &mut Lanes<'_, '_, '_>, load: InstId, t: usize, it: usize) -> bool {
    use crate::ir::User;
    use crate::ptx::Operand;
    let f = evals.f;
    let q = Query { scalar: None, ..Query::block(it) };
    let holds = |p: ValueId| evals.eval(p, q).and_then(|v| v.get(t).copied()).map(|x| x != 0);
    let mut seen = crate::ir::dataflow::BitSet::new(f.ssa.values.len());
    let mut stack: Vec<ValueId> = f.ssa.defs(load).to_vec();
    while let Some(x) = stack.pop() {
        if seen.contains(x.index()) {
            continue;
        }
        seen.insert(x.index());
        for u in &f.ssa.users[x] {
            let i = match *u {
                User::Phi(p) => {
                    stack.push(f.ssa.phis[p].value);
                    continue;
                }
                User::Inst(i) => i,
            };
            let inst = &f.insts[i];
            if !lanes.active(f.cfg.block_of(i), it).get(t).copied().unwrap_or(true) {
                continue;
            }
            if let (Some(g), Some(&gv)) = (inst.ast.guard, f.ssa.uses(i).first()) {
                if gv != x && holds(gv) == Some(g.negated) {
                    continue;
                }
            }
            if let Some((a, b, c)) = inst.selects() {
                let negated = matches!(inst.operand(c), Some(Operand::Not(_)));
                let cond = f.operand_value(i, c).filter(|&v| v != x).and_then(holds).map(|h| h != negated);
                if let Some(h) = cond {
                    if f.operand_value(i, if h { a } else { b }) != Some(x) {
                        continue;
                    }
                }
            }
            if inst.access().is_some() || inst.call_target().is_some() || inst.shares_with_other_threads() || !inst.has_dest() {
                return false;
            }
            stack.extend_from_slice(f.ssa.defs(i));
        }
    }
    true
}

/// Race `r` again when the thread reading in it discards what it reads
/// (`discards`): among the threads that keep the value (found again, its
/// witness's way bounded anew), or benign when none of them races. A race
/// whose read is used, or that needs a parameter value, is left as it is.
pub(super) fn unless_discarded(
    evals: &Evals<'_, '_>,
    branches: &[BranchFact],
    lanes: &mut Lanes<'_, '_, '_>,
    own: &[crate::memory::Access],
    r: &mut Race,
    site: &dyn Fn(usize) -> InstId,
) {
    use crate::ir::inst::AccessKind;
    if r.benign.is_some() || r.when.is_some() || r.first.max(r.second) >= own.len() {
        return;
    }
    let (ia, ib) = r.iterations();
    let read = [(r.first, r.threads.0, ia), (r.second, r.threads.1, ib)].into_iter().find(|&(k, _, _)| own[k].kind == AccessKind::Load);
    let Some((k, t, it)) = read else { return };
    if !discards(evals, lanes, own[k].inst, t, it) {
        return;
    }
    let mut keeping = |x: usize, b: crate::ir::BlockId, it: usize| -> Vec<bool> {
        let mut on = lanes.active(b, it).as_ref().clone();
        if x == k {
            for (t, on) in on.iter_mut().enumerate().filter(|(_, on)| **on) {
                *on = !discards(evals, lanes, own[k].inst, t, it);
            }
        }
        on
    };
    match crate::races::recheck(evals, own, r, None, &mut keeping) {
        Some(mut again) => {
            again.rests_on = r.rests_on.clone();
            bound(evals, branches, lanes, &mut again, site);
            *r = again;
        }
        None => r.benign = Some(Benign::Discarded),
    }
}
