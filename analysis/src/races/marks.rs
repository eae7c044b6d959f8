//! Marks on the races found, judged from the function around them: the
//! benign ones (two plain stores of the same uniform value, no racing
//! read), those that come from threads skipping a divergent barrier
//! (reported with that barrier), and those that meet one iteration apart.
//!
//! Owns: these marks. Does not own: finding the races (`super`), or which
//! barriers are divergent (the facts layer says, `SkippedBarrier`).

use super::Race;
use crate::divergence::Divergence;
use crate::ir::dataflow::BitSet;
use crate::ir::{BlockId, FunctionIr, InstId};
use crate::memory::Access;

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
        for r in races.iter_mut().filter(|r| in_common_loop(r)) {
            r.next_iteration |= !within.share(r.first, r.second);
        }
    }
}

/// Write-after-write races whose two plain stores write the same value,
/// uniform across the block, at most 8 bytes wide, with no read racing
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
    let stored = |a: &Access| -> Option<Stored> {
        let inst = &f.insts[a.inst];
        if a.kind != crate::ir::inst::AccessKind::Store || inst.vec > 1 || a.width > 8 {
            return None;
        }
        match inst.operand(1)? {
            Operand::Imm(k) => Some(Stored::Imm(*k)),
            Operand::Reg(_) => {
                let v = f.operand_value(a.inst, 1)?;
                let grid_uniform = by_block.is_none_or(|b| !b.contains(v.index()));
                (grid_uniform && d.at(f, v, f.cfg.block_of(a.inst)).is_uniform()).then_some(Stored::Value(v))
            }
            _ => None,
        }
    };
    let read_races: Vec<usize> =
        races.iter().filter(|r| r.kind != crate::races::RaceKind::WriteAfterWrite).flat_map(|r| [r.first, r.second]).collect();
    // (a callee's store is not judged: what it stores is in another function)
    for r in races.iter_mut().filter(|r| r.kind == crate::races::RaceKind::WriteAfterWrite && r.first.max(r.second) < sites.len()) {
        let (a, b) = (&sites[r.first], &sites[r.second]);
        let same = match (stored(a), stored(b)) {
            (Some(Stored::Imm(x)), Some(Stored::Imm(y))) => x == y,
            (Some(Stored::Value(u)), Some(Stored::Value(w))) => crate::ir::values::same_value(f, u, w),
            _ => false,
        };
        r.benign = same && a.width == b.width && !read_races.contains(&r.first) && !read_races.contains(&r.second);
    }
}
