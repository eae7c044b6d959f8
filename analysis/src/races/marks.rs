//! Marks on the races found, judged from the function around them: the
//! benign ones (two plain stores of the same uniform value, no racing
//! read), those that come from threads skipping a divergent barrier
//! (reported with that barrier), those that meet one iteration apart, and
//! the samples a witness really rests on (`settle`).
//!
//! Owns: these marks. Does not own: finding the races (`super`), or which
//! barriers are divergent (the facts layer says, `SkippedBarrier`).

use super::Race;
use crate::divergence::eval::Leaves;
use crate::divergence::Divergence;
use crate::ir::dataflow::BitSet;
use crate::ir::{BlockId, FunctionIr, InstId};
use crate::memory::{Access, Evals, Query};

/// For each access, when it is a plain load that only seeds a
/// compare-and-swap loop on the same address (`old = *p; do { assumed =
/// old; old = atomicCAS(p, assumed, f(assumed)); } while (assumed !=
/// old);`, the emulation of an atomic the hardware lacks), that CAS
/// (an index into `accesses`): what the load reads is only compared by
/// the CAS, which retries when another thread changed it, so the load does
/// not race with the atomics on that address. The loaded value must reach
/// nothing but arithmetic, comparisons, joins and that CAS (not a store,
/// another access or a call).
pub fn cas_seeds(f: &FunctionIr<'_>, accesses: &[Access]) -> Vec<Option<usize>> {
    use crate::ir::inst::{AccessKind, AtomOp, Sub};
    let cas: Vec<usize> = (0..accesses.len())
        .filter(|&k| accesses[k].kind == AccessKind::Atomic && f.insts[accesses[k].inst].sub == Sub::Atom(AtomOp::Cas))
        .collect();
    accesses
        .iter()
        .map(|a| {
            if a.kind != AccessKind::Load || cas.is_empty() {
                return None;
            }
            let (v, addr) = (*f.ssa.defs(a.inst).first()?, a.addr_value?);
            let same_place = |c: &Access| c.offset == a.offset && c.addr_value.is_some_and(|x| crate::ir::values::same_value(f, x, addr));
            let mut target = None;
            let mut seen = BitSet::new(f.ssa.values.len());
            let mut stack = vec![v];
            while let Some(x) = stack.pop() {
                if seen.contains(x.index()) {
                    continue;
                }
                seen.insert(x.index());
                for u in &f.ssa.users[x] {
                    match *u {
                        crate::ir::User::Phi(p) => stack.push(f.ssa.phis[p].value),
                        crate::ir::User::Inst(i) => {
                            let inst = &f.insts[i];
                            if let Some(&k) = cas.iter().find(|&&k| accesses[k].inst == i) {
                                // the CAS on the same address, compared or swapped in: its result is the CAS's own
                                if !same_place(&accesses[k]) || target.is_some_and(|t| t != k) {
                                    return None;
                                }
                                target = Some(k);
                            } else if inst.access().is_some() || inst.call_target().is_some() || inst.lane_exchanging() {
                                return None;
                            } else {
                                stack.extend_from_slice(f.ssa.defs(i));
                            }
                        }
                    }
                }
            }
            target
        })
        .collect()
}

/// A barrier that part of the block skips: the block ending in the
/// thread-dependent branch that decides it, and the successors of that
/// branch from which the barrier is not reached (the facts layer's
/// `BarrierCause::Branch`).
#[derive(Clone, Debug)]
pub struct SkippedBarrier {
    /// Its index in the facts' barriers.
    pub barrier: usize,
    pub branch: BlockId,
    pub skips: Vec<BlockId>,
}

/// Races that exist only because threads skip a divergent barrier: with
/// the edges by which its deciding branch skips it cut, the two accesses
/// no longer share an interval. Such a race is the barrier's consequence,
/// reported with it (`Race::through_barrier`).
pub(super) fn attribute_to_barriers(
    f: &FunctionIr<'_>,
    skipped: &[SkippedBarrier],
    sites: &[Access],
    barrier_call: &dyn Fn(InstId) -> bool,
    races: &mut [Race],
) {
    for s in skipped {
        if races.iter().all(|r| r.through_barrier.is_some()) {
            return;
        }
        let cut = |from: BlockId, to: BlockId| from == s.branch && s.skips.contains(&to);
        let kept = super::intervals_cut(f, sites, barrier_call, &cut);
        for r in races.iter_mut().filter(|r| r.through_barrier.is_none()) {
            if !kept.share(r.first, r.second) {
                r.through_barrier = Some(s.barrier);
            }
        }
    }
}

/// A pair in a common loop that shares an interval only through the
/// loop's back edges meets in the next iteration (`Race::next_iteration`:
/// one more intervals problem, without back edges).
pub(super) fn mark_next_iteration(f: &FunctionIr<'_>, sites: &[Access], barrier_call: &dyn Fn(InstId) -> bool, races: &mut [Race]) {
    let in_common_loop = |r: &Race| {
        let (a, b) = (f.cfg.block_of(sites[r.first].inst), f.cfg.block_of(sites[r.second].inst));
        f.cfg.loops_containing(a).iter().any(|&l| f.cfg.in_loop(b, l))
    };
    if races.iter().any(in_common_loop) {
        let back = |a: BlockId, b: BlockId| f.cfg.loops.iter().any(|l| l.header == b && l.latches.contains(&a));
        let within = super::intervals_cut(f, sites, barrier_call, &back);
        let is_bar = |i: InstId| f.insts[i].is_block_barrier() || barrier_call(i);
        for r in races.iter_mut().filter(|r| in_common_loop(r)) {
            if within.share(r.first, r.second) {
                continue;
            }
            r.next_iteration = true;
            // a read and a write: the kind says which one the earlier iteration makes
            let (a, b) = (&sites[r.first], &sites[r.second]);
            if a.kind.writes() != b.kind.writes() {
                let (w, rd) = if a.kind.writes() { (a, b) } else { (b, a) };
                let order =
                    super::one_iteration_apart(super::around_back_edge(f, &is_bar, w.inst), super::around_back_edge(f, &is_bar, rd.inst));
                match order {
                    Some((false, true)) => r.kind = super::RaceKind::WriteAfterRead,
                    Some((true, false)) => r.kind = super::RaceKind::ReadAfterWrite,
                    _ => {}
                }
            }
        }
    }
}

/// Write-after-write races whose two plain stores write the same value,
/// uniform across the block (or across each warp, when every racing pair
/// is two lanes of one warp), at most 8 bytes wide, with no read racing
/// with either store: benign in practice (`benign_race`).
/// Between blocks (`by_block`: the values computed from `%ctaid`), the value
/// must not be one of those either.
pub(super) fn mark_benign(f: &FunctionIr<'_>, d: &Divergence, sites: &[Access], races: &mut [Race], by_block: Option<&BitSet>) {
    use crate::ptx::Operand;
    #[derive(PartialEq)]
    enum Stored {
        Imm(i64),
        Value(crate::ir::ValueId),
    }
    // (`lanes`: every racing pair is two lanes of one warp, so a value the same in every
    // lane of each warp — a shuffle butterfly's sum, a broadcast — is the same in both)
    let stored = |a: &Access, lanes: bool| -> Option<Stored> {
        let inst = &f.insts[a.inst];
        if a.kind != crate::ir::inst::AccessKind::Store || inst.vec > 1 || a.width > 8 {
            return None;
        }
        match inst.operand(1)? {
            Operand::Imm(k) => Some(Stored::Imm(*k)),
            Operand::Reg(_) => {
                let v = f.operand_value(a.inst, 1)?;
                let grid_uniform = by_block.is_none_or(|b| !b.contains(v.index()));
                let at = d.at(f, v, f.cfg.block_of(a.inst));
                let same = at.is_uniform() || (lanes && at == d.vals[v] && d.is_warp_uniform(v));
                (grid_uniform && same).then_some(Stored::Value(v))
            }
            _ => None,
        }
    };
    let read_races: Vec<usize> =
        races.iter().filter(|r| r.kind != crate::races::RaceKind::WriteAfterWrite).flat_map(|r| [r.first, r.second]).collect();
    // (a callee's store is not judged: what it stores is in another function)
    for r in races.iter_mut().filter(|r| r.kind == crate::races::RaceKind::WriteAfterWrite && r.first.max(r.second) < sites.len()) {
        let (a, b) = (&sites[r.first], &sites[r.second]);
        let lanes = r.lanes_only && r.between_blocks.is_none();
        let same = match (stored(a, lanes), stored(b, lanes)) {
            (Some(Stored::Imm(x)), Some(Stored::Imm(y))) => x == y,
            (Some(Stored::Value(u)), Some(Stored::Value(w))) => crate::ir::values::same_value(f, u, w),
            _ => false,
        };
        let benign = same && a.width == b.width && !read_races.contains(&r.first) && !read_races.contains(&r.second);
        r.benign = benign.then_some(super::Benign::SameValue);
    }
}

/// The samples a race's witness rests on, settled: its two threads'
/// addresses are evaluated again with each sampled leaf at other values
/// (the sample + 1 and + 2, and small values, 1 and 3); a leaf at whose
/// every other value the two threads still touch the same bytes is not
/// what the race rests on, and is dropped from `Race::rests_on`. A race
/// whose witness does not reproduce at its own sample (an iteration or a
/// callee's offsets this check does not follow) keeps its leaves.
pub(super) fn settle(evals: &Evals<'_, '_>, accesses: &[Access], own: usize, r: &mut Race) {
    if r.rests_on.is_empty() || r.first >= own || r.second >= own {
        return;
    }
    let (a, b) = (&accesses[r.first], &accesses[r.second]);
    let (Some(va), Some(vb)) = (a.addr_value, b.addr_value) else { return };
    let it = r.iteration.map_or(0, |x| x.0);
    let mut other = [0i64; 3];
    if let Some(dim) = r.between_blocks {
        other[dim as usize % 3] = r.block_apart as i64;
    }
    let (t1, t2) = r.threads;
    // do the witness threads touch the same bytes, with `pin` given? (a parameter pinned:
    // the block's first threads up to the two alone, not every thread of the block)
    let leading = Some(t1.max(t2) as u32 + 1);
    let overlap = |pin: Option<(crate::ir::ValueId, i64)>| -> Option<bool> {
        let qa = Query { pin, leading: if pin.is_some() { leading } else { None }, ..Query::block(it) };
        let qb = Query { ctaid: other, ..qa };
        let x = evals.eval(va, qa)?.get(t1)? + a.offset;
        let y = evals.eval(vb, qb)?.get(t2)? + b.offset;
        Some(x < y + b.width as i64 && y < x + a.width as i64)
    };
    if overlap(None) != Some(true) {
        return;
    }
    let kept: Vec<crate::ir::ValueId> = r
        .rests_on
        .iter()
        .filter(|v| {
            let Some(sample) = evals.sampled_value(*v) else { return true };
            ![sample + 1, sample + 2, 1, 3].iter().all(|&x| overlap(Some((*v, x))) == Some(true))
        })
        .collect();
    r.rests_on = Leaves::of(kept);
}
