//! How many warps of a block a divergent branch splits.
//!
//! A branch is classified exactly by evaluating its condition for every
//! thread (sampling loop counters and block indices where needed, at most
//! three of them: a condition that needs a fourth is given up on, as every
//! assignment would need it; one evaluator serves every branch of a
//! function), or, when
//! the condition is `affine(tid) CMP uniform` with an unknown uniform side,
//! bounded by the worst threshold; loop exits whose trip count varies between
//! lanes are recognised separately.
//!
//! Owns: these counts. Does not own: deciding whether they are worth a
//! warning (the lint passes) or warp formation (`crate::model`).

use super::eval::{samples, EvalErr, Evaluator};
use super::{AbsVal, Coef, DivBranch, Divergence};
use crate::ir::inst::{Cmp, Opcode};
use crate::ir::{FunctionIr, InstId, LoopId, ValueDef, ValueId};
use crate::model::{Shape, WARP};

/// How a divergent branch splits the warps of a block.
#[derive(Clone, Debug, PartialEq)]
pub enum Split {
    /// Evaluated for every thread. `taken[t]`: thread t takes the branch;
    /// `witness`: the uniform values sampled for it (none: it holds for
    /// every value), each with its sample.
    Exact { split: usize, single_lane: bool, taken: std::rc::Rc<[bool]>, witness: Vec<(ValueId, i64)> },
    /// Condition `affine(tid) CMP unknown`: worst case over thresholds.
    Bounded { split: usize, single_lane: bool },
    /// Loop exit whose iteration count differs between lanes of a warp.
    TripCount,
    /// Depends on data or on something we cannot evaluate.
    Unknown { data: bool },
}

impl Split {
    pub fn split(&self, warps: usize) -> Option<usize> {
        match self {
            Split::Exact { split, .. } | Split::Bounded { split, .. } => Some(*split),
            Split::TripCount => Some(warps),
            Split::Unknown { .. } => None,
        }
    }
}

/// The `setp` that defines a predicate, with the comparison and operands.
fn setp_of(f: &FunctionIr<'_>, v: ValueId) -> Option<(InstId, Cmp)> {
    let i = f.def_inst(v)?;
    let inst = &f.insts[i];
    if inst.opcode != Opcode::Setp || inst.ast.guard.is_some() || inst.operands().len() != 3 {
        return None;
    }
    Some((i, inst.cmp?))
}

/// How branch `br` splits warps. `ev`: an evaluator over the block's
/// threads, the same for every branch of the function (the values its
/// conditions share, and those that rest on no sample, computed once).
pub fn classify(f: &FunctionIr<'_>, d: &Divergence, br: &DivBranch, shape: &Shape, ev: &mut Evaluator<'_, '_>) -> Split {
    let setp = setp_of(f, br.cond);
    let diff = setp.map(|(i, _)| {
        let ops = f.insts[i].operands();
        d.operand(f, i, &ops[1]) - d.operand(f, i, &ops[2])
    });
    // loop exits: does the iteration count vary within a warp?
    let cfg = &f.cfg;
    if let (Some(l), Some((si, _)), Some(AbsVal::Affine { c, .. })) = (cfg.loop_of(br.block), setp, diff) {
        let exits = cfg.leaves(br.block, l);
        if exits && c.iter().any(|x| !x.is_zero()) && trip_count_varies(f, d, si, l, c, shape) {
            return Split::TripCount;
        }
    }
    match exact(f, br, ev) {
        Ok(s) => return s,
        Err(EvalErr::Opaque) | Err(EvalErr::Leaf(_)) => {}
    }
    if let (Some((_, cmp)), Some(AbsVal::Affine { c, .. })) = (setp, diff) {
        if let Some(s) = bounded(c, cmp, shape) {
            return s;
        }
    }
    Split::Unknown { data: d.vals[br.cond].data() }
}

/// Does the trip count of a loop whose exit compares `a(t) + k·step`
/// against 0 differ between lanes of a warp? The count is
/// `ceil(-a(t)/step)`: it varies when the spread of `a` over a warp reaches
/// the step. With a symbolic step, only a thread coefficient in the same
/// symbol (Sampaio's sumTriangle: `(t+1)·c` stepping by `c`) makes it vary;
/// an unrelated uniform step is the strided-loop idiom (grid- or
/// block-stride), which splits at most the last iteration's warp.
fn trip_count_varies(f: &FunctionIr<'_>, d: &Divergence, setp: InstId, l: LoopId, c: [Coef; 3], shape: &Shape) -> bool {
    match iv_step(f, d, setp, l) {
        Some(step) => match (step.const_value(), step.sym()) {
            (Some(0), _) => false,
            (Some(delta), _) => {
                let Some(cc) = const_coefs(c) else { return true };
                let spread = (0..shape.warps())
                    .map(|w| {
                        let vals: Vec<i64> = shape.lanes()[w * WARP..((w + 1) * WARP).min(shape.threads())]
                            .iter()
                            .map(|l| cc[0] * l.tid[0] + cc[1] * l.tid[1] + cc[2] * l.tid[2])
                            .collect();
                        vals.iter().max().unwrap_or(&0) - vals.iter().min().unwrap_or(&0)
                    })
                    .max()
                    .unwrap_or(0);
                spread >= delta.abs()
            }
            (None, Some(sym)) => c.iter().any(|x| matches!(x, Coef::Lin { m, sym: s, .. } if *s == sym && *m != 0)),
            (None, None) => false,
        },
        // no recognisable counter: a symbolic thread coefficient may change anything
        None => c.iter().any(|x| !matches!(x, Coef::Const(_))),
    }
}

fn const_coefs(c: [Coef; 3]) -> Option<[i64; 3]> {
    let mut out = [0; 3];
    for k in 0..3 {
        out[k] = match c[k] {
            Coef::Const(x) => x,
            _ => return None,
        };
    }
    Some(out)
}

/// Per-iteration step of the loop counter the exit condition (instruction
/// `i`) compares, if it is a counter of loop `l` updated as `p ± step`
/// ([`crate::ir::loops::Induction`]) that the operand reaches through
/// copies and additions of uniform values, and the step is uniform.
fn iv_step(f: &FunctionIr<'_>, d: &Divergence, i: InstId, l: LoopId) -> Option<AbsVal> {
    for k in 1..f.insts[i].operands().len() {
        let Some(start) = f.operand_value(i, k) else { continue };
        let mut walk = crate::ir::values::Walk::new([start]);
        while let Some(v) = walk.next_value() {
            if let Some(ind) = f.loops.induction(v).filter(|x| x.lp == l) {
                let update = &f.insts[ind.update];
                if !matches!(update.opcode, Opcode::Add | Opcode::Sub) {
                    return None;
                }
                let step = d.operand(f, ind.update, update.operand(ind.step_operand)?);
                if !step.is_uniform() {
                    return None;
                }
                return Some(if update.opcode == Opcode::Sub { -step } else { step });
            }
            let ValueDef::Inst { inst: di, .. } = f.ssa.values[v] else { break };
            let dinst = &f.insts[di];
            if !matches!(dinst.opcode, Opcode::Mov | Opcode::Cvt | Opcode::Add | Opcode::Sub) {
                break;
            }
            // follow the thread-dependent (or phi) operand
            let next = (1..dinst.operands().len())
                .filter_map(|k| f.operand_value(di, k))
                .find(|x| !d.vals[*x].is_uniform() || matches!(f.ssa.values[*x], ValueDef::Phi(_)));
            match next {
                Some(x) => walk.push(x),
                None => break,
            }
        }
    }
    None
}

fn exact(f: &FunctionIr<'_>, br: &DivBranch, ev: &mut Evaluator<'_, '_>) -> Result<Split, EvalErr> {
    let mut best: Option<Split> = None;
    // assignments of sampled leaves, explored depth-first (at most 3 leaves, 64 tries)
    let mut pending: Vec<Vec<(ValueId, i64)>> = vec![vec![]];
    let mut tries = 0;
    while let Some(assign) = pending.pop() {
        tries += 1;
        if tries > 64 {
            break;
        }
        ev.set_leaves(assign.iter().copied());
        let (taken, failed) = match ev.values(br.cond) {
            Ok(p) => (p.iter().map(|x| (*x != 0) != br.negated).collect::<Vec<bool>>(), None),
            Err(e) => (vec![], Some(e)),
        };
        match failed {
            Some(EvalErr::Opaque) => return Err(EvalErr::Opaque),
            Some(EvalErr::Leaf(v)) => {
                if assign.len() >= 3 {
                    // which leaves a value needs is its expression's, whatever they are
                    // given: no other assignment of three leaves gives the condition either
                    if best.is_none() {
                        return Err(EvalErr::Opaque);
                    }
                    continue;
                }
                let s = samples(f, ev, v);
                if s.is_empty() {
                    if best.is_none() {
                        return Err(EvalErr::Leaf(v));
                    }
                    continue;
                }
                for x in s.into_iter().rev() {
                    let mut a = assign.clone();
                    a.push((v, x));
                    pending.push(a);
                }
            }
            None => {
                let (split, single_lane) = count(&taken);
                let witness = assign.clone();
                let better = match &best {
                    None => true,
                    Some(Split::Exact { split: s, .. }) => split > *s,
                    _ => false,
                };
                if better {
                    best = Some(Split::Exact { split, single_lane, taken: taken.into(), witness });
                }
            }
        }
    }
    // (the directions kept, those alike once)
    if let Some(Split::Exact { taken, .. }) = &mut best {
        *taken = ev.kept_directions(taken.clone());
    }
    best.ok_or(EvalErr::Opaque)
}

/// Warps that take both sides, and whether every split leaves a single lane
/// on one side.
pub fn count(taken: &[bool]) -> (usize, bool) {
    let mut split = 0;
    let mut single = true;
    for w in taken.chunks(WARP) {
        let t = w.iter().filter(|x| **x).count();
        if t > 0 && t < w.len() {
            split += 1;
            if t != 1 && w.len() - t != 1 {
                single = false;
            }
        }
    }
    (split, single && split > 0)
}

/// [`count`] over the lanes that reach the branch (`active[t]`).
pub fn count_active(taken: &[bool], active: &[bool]) -> (usize, bool) {
    let mut split = 0;
    let mut single = true;
    for (w, on) in taken.chunks(WARP).zip(active.chunks(WARP)) {
        let (t, n) = w.iter().zip(on).filter(|x| *x.1).fold((0, 0), |(t, n), (x, _)| (t + *x as usize, n + 1));
        if t > 0 && t < n {
            split += 1;
            if t != 1 && n - t != 1 {
                single = false;
            }
        }
    }
    (split, single && split > 0)
}

/// Worst case over an unknown threshold θ of `f(tid) CMP θ`, f affine.
fn bounded(c: [Coef; 3], cmp: Cmp, shape: &Shape) -> Option<Split> {
    let dims_used = (0..3).filter(|&k| !c[k].is_zero()).count();
    let mut cc = [0i64; 3];
    for k in 0..3 {
        cc[k] = match c[k] {
            Coef::Const(x) => x,
            // an unknown uniform stride along a single dimension is monotone
            Coef::Sym | Coef::Lin { .. } if dims_used == 1 => 1,
            Coef::Sym | Coef::Lin { .. } => return None,
        };
    }
    let vals: Vec<i64> = shape.lanes().iter().map(|l| cc[0] * l.tid[0] + cc[1] * l.tid[1] + cc[2] * l.tid[2]).collect();
    match cmp {
        _ if cmp.is_equality() => {
            let mut counts: rustc_hash::FxHashMap<i64, usize> = rustc_hash::FxHashMap::default();
            let mut single = true;
            for w in vals.chunks(WARP) {
                let mut seen: Vec<i64> = w.to_vec();
                seen.sort_unstable();
                let all_same = seen.first() == seen.last();
                let mut prev = None;
                for (i, &v) in seen.iter().enumerate() {
                    if i + 1 < seen.len() && seen[i + 1] == v {
                        single = false;
                    }
                    if prev != Some(v) && !all_same {
                        *counts.entry(v).or_default() += 1;
                    }
                    prev = Some(v);
                }
            }
            let split = counts.values().copied().max().unwrap_or(0);
            Some(Split::Bounded { split, single_lane: single && split > 0 })
        }
        _ => {
            // warp w splits for θ in (min_w, max_w]; count the deepest overlap
            let mut ev: Vec<(i64, i32)> = Vec::new();
            for w in vals.chunks(WARP) {
                let (lo, hi) = (*w.iter().min()?, *w.iter().max()?);
                if lo < hi {
                    ev.push((lo, 1));
                    ev.push((hi, -1));
                }
            }
            ev.sort_unstable();
            let (mut cur, mut best) = (0i32, 0i32);
            for (_, e) in ev {
                cur += e;
                best = best.max(cur);
            }
            Some(Split::Bounded { split: best as usize, single_lane: false })
        }
    }
}

/// A short name for a value in messages: the kernel parameter it is read
/// from, the CUDA name of a block or grid index, a loop's counter (by the
/// PTX line of its update; [`counter_update`] gives the update to name it by
/// its source line), or its register.
pub fn describe_value(f: &FunctionIr<'_>, v: ValueId) -> String {
    use crate::ir::inst::Special;
    let xyz = |d: u8| ["x", "y", "z"][d as usize % 3];
    if let Some((p, off)) = f.def_inst(v).and_then(|i| f.insts[i].param_read()) {
        return if off == 0 { f.param_label(p) } else { format!("{}+{off}", f.param_label(p)) };
    }
    match f.ssa.special(v) {
        Some(Special::Ctaid(d)) => return format!("blockIdx.{}", xyz(d)),
        Some(Special::Nctaid(d)) => return format!("gridDim.{}", xyz(d)),
        Some(Special::Ntid(d)) => return format!("blockDim.{}", xyz(d)),
        _ => {}
    }
    match counter_update(f, v) {
        Some(i) => format!("the loop counter updated at PTX line {}", f.insts[i].ast.pos.line),
        None => f.ssa.reg_of(v, &f.insts).to_string(),
    }
}

/// For a loop counter, the instruction that updates it (`k *= 2`: the
/// line that names the counter in the source).
pub fn counter_update(f: &FunctionIr<'_>, v: ValueId) -> Option<crate::ir::InstId> {
    Some(f.loops.induction(v)?.update)
}
