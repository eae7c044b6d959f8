//! A warp's footprint: the global accesses one warp makes to the same
//! array in the same loop iteration, judged together.
//!
//! The memory model (sm_70 and later, NVIDIA's CUDA C++ Programming Guide,
//! "Compute Capability 7.x / 8.x: Global Memory", and the CUDA C++ Best
//! Practices Guide, "Coalesced Access to Global Memory"):
//! * a warp's request is served in 32-byte sectors; the L1 cache (unified
//!   with shared memory) keeps the 128-byte lines of global loads unless
//!   the load says otherwise (`ld.global.cg` caches in L2 only, `.cs` is
//!   evicted first, `.cv`/`.volatile` and memory-ordering loads fetch
//!   again: PTX ISA, "Cache Operators"), so loads of one warp that touch
//!   sectors an earlier load of the same warp brought move them from L2
//!   once: what the warp moves is the union of the sectors its loads touch;
//! * stores are write-through to L2 (L1 does not merge them), so each
//!   store request costs its own sectors, as a single request is judged;
//! * L1 holds 128–256 KB per SM shared with shared memory, and an SM runs
//!   up to 64 warps: a warp's fair share is about 4 KB, so a group whose
//!   footprint per warp is larger ([`L1_SHARE`]) is not assumed to stay in
//!   L1 between its loads.
//!
//! A group is the loads through L1 (or the stores) of one function with
//! the same base pointer in the same innermost loop. Its footprint is
//! computed for every warp of the block from the members' per-thread
//! addresses: sectors of the union against the sectors the bytes used
//! would need contiguous and aligned. Members that are neighbouring
//! elements of each lane (`x[2i]`, `x[2i+1]`) are also marked as one
//! vector access's worth (`.v2`/`.v4`).
//!
//! Owns: grouping and the group numbers. Does not own: which accesses are
//! reported (`lints`), the per-access predictions (`predict`).

use super::AccessFact;
use super::{AccessKind, Evals, Query};
use crate::ir::inst::Space;
use crate::ir::values::root;
use crate::ir::{LoopId, ValueId};
use crate::model::{sectors_and_bytes, SECTOR, WARP};

/// The footprint per warp (bytes) up to which a group's loads are assumed
/// to find each other's sectors in L1.
pub const L1_SHARE: u32 = 4096;

/// Accesses of one warp to one array in one loop iteration.
#[derive(Clone, Debug, PartialEq)]
pub struct Group {
    /// Indices into the function's access facts, in instruction order.
    pub members: Vec<usize>,
    pub kind: AccessKind,
    /// Sectors of the union of the members' bytes, per warp: (typical, worst).
    pub sectors: (u32, u32),
    /// In a loop whose step moves the members off their first iteration's
    /// alignment: the typical sectors in the second iteration, when they differ.
    pub later: Option<u32>,
    /// Sectors those bytes need, contiguous and aligned (typical warp).
    pub ideal: u32,
    /// Bytes the members read or write in a typical warp.
    pub bytes_used: u32,
    /// Each lane's members are `n` neighbouring elements, aligned to their
    /// size together: one `.vN` access could serve them.
    pub vector: Option<u8>,
}

impl Group {
    /// Loads whose footprint per warp fits the warp's share of L1: they are
    /// judged together.
    pub fn shares_l1(&self) -> bool {
        self.kind == AccessKind::Load && self.sectors.0 * SECTOR as u32 <= L1_SHARE
    }
}

/// The groups of two or more accesses among `accesses` (the function's
/// access facts, predicted ones only).
pub fn groups(ev: &Evals<'_, '_>, accesses: &[AccessFact]) -> Vec<Group> {
    let f = ev.f;
    type Key = (ValueId, Option<LoopId>, bool);
    let mut by_key: Vec<(Key, Vec<usize>)> = Vec::new();
    for (k, x) in accesses.iter().enumerate() {
        let a = &x.access;
        // (a lane stride read from memory has no single footprint: its cost is conditional)
        if a.space != Space::Global || x.prediction.as_ref().is_none_or(|p| p.runtime_stride.is_some()) {
            continue;
        }
        let load = match a.kind {
            AccessKind::Load if f.insts[a.inst].through_l1() => true,
            AccessKind::Store => false,
            _ => continue,
        };
        let Some(v) = a.addr_value else { continue };
        let key = (root(f, v), f.cfg.loop_of(f.cfg.block_of(a.inst)), load);
        match by_key.iter_mut().find(|g| g.0 == key) {
            Some(g) => g.1.push(k),
            None => by_key.push((key, vec![k])),
        }
    }
    by_key
        .into_iter()
        .filter(|g| g.1.len() >= 2)
        .filter_map(|(key, members)| footprint(ev, accesses, members, key.2, key.1.is_some()))
        .collect()
}

/// Per-thread byte addresses of an access (pointers at their aligned base,
/// other runtime values at `scalar`), `None` for a thread that does not
/// execute it.
fn addresses<'x>(ev: &Evals<'_, '_>, x: &'x AccessFact, scalar: i64, iteration: usize) -> Option<Member<'x>> {
    let a = &x.access;
    let vals = ev.eval(a.addr_value?, Query { scalar: Some(scalar), ..Query::block(iteration) })?;
    let p = x.prediction.as_ref()?;
    Some(Member { vals, offset: a.offset, on: &p.offsets })
}

/// A member's per-thread byte addresses: the evaluator's values of its
/// address (shared by every access through that value), its constant
/// offset, and the threads that execute it (the prediction's).
struct Member<'x> {
    vals: std::rc::Rc<Vec<i64>>,
    offset: i64,
    on: &'x super::Offsets,
}

impl Member<'_> {
    /// Thread `t`'s address, if it executes the access.
    fn get(&self, t: usize) -> Option<i64> {
        self.on.get(t).and(self.vals.get(t).map(|v| v + self.offset))
    }

    fn len(&self) -> usize {
        self.vals.len()
    }
}

fn footprint(ev: &Evals<'_, '_>, accesses: &[AccessFact], members: Vec<usize>, load: bool, in_loop: bool) -> Option<Group> {
    let at = |scalar: i64, iteration: usize| -> Option<Vec<Member<'_>>> {
        members.iter().map(|&k| addresses(ev, &accesses[k], scalar, iteration)).collect()
    };
    let addrs = at(super::SCALAR_SAMPLE, 0)?;
    // members whose distance from each other is a runtime value (`x[k*s + i]` for several k) have
    // no footprint that holds for every value: no group
    let other = at(super::SCALAR_SAMPLE + 1, 0)?;
    let apart = |a: &[Member<'_>]| -> Vec<Option<i64>> {
        a.iter().map(|m| (0..m.len().min(a[0].len())).find_map(|t| Some(m.get(t)? - a[0].get(t)?))).collect()
    };
    if apart(&addrs) != apart(&other) {
        return None;
    }
    let widths: Vec<i64> = members.iter().map(|&k| accesses[k].access.width as i64).collect();
    let per_warp = warps(ev, &addrs, &widths);
    let typical = mode(&per_warp)?;
    // the second iteration of a loop that steps the members off their alignment
    let second = if in_loop { at(super::SCALAR_SAMPLE, 1).map(|a| warps(ev, &a, &widths)).unwrap_or_default() } else { vec![] };
    let later = mode(&second).map(|x| x.0).filter(|&s| s != typical.0);
    Some(Group {
        kind: if load { AccessKind::Load } else { AccessKind::Store },
        sectors: (typical.0, per_warp.iter().chain(&second).map(|x| x.0).max().unwrap_or(0)),
        later,
        ideal: typical.1,
        bytes_used: typical.2,
        vector: vector(&addrs, &widths),
        members,
    })
}

/// A warp's byte ranges are merged into their union once there are this
/// many (what is counted is the union's: [`crate::model::merge_in_place`]).
const MERGE_FROM: usize = 1024;

/// Per warp: (sectors of the union, sectors the bytes need, bytes used).
fn warps(ev: &Evals<'_, '_>, addrs: &[Member<'_>], widths: &[i64]) -> Vec<(u32, u32, u32)> {
    let threads = ev.shape.threads();
    let mut per_warp: Vec<(u32, u32, u32)> = Vec::new();
    // (one warp's byte ranges, and where they spread wide its sectors, in lists kept for every warp)
    let (mut sectors, mut bytes): (Vec<i64>, Vec<(i64, i64)>) = (Vec::new(), Vec::new());
    for w in 0..threads.div_ceil(WARP) {
        bytes.clear();
        // (a group of thousands of members: its ranges merged as they come, the list as long
        // as their union rather than a range per member and lane)
        let mut merge_at = MERGE_FROM;
        for (m, a) in addrs.iter().enumerate() {
            for addr in (w * WARP..((w + 1) * WARP).min(threads)).filter_map(|t| a.get(t)) {
                bytes.push((addr, addr + widths[m]));
            }
            if bytes.len() >= merge_at {
                crate::model::merge_in_place(&mut bytes);
                merge_at = (2 * bytes.len()).max(MERGE_FROM);
            }
        }
        if bytes.is_empty() {
            continue;
        }
        let (count, used) = sectors_and_bytes(&mut bytes, &mut sectors);
        per_warp.push((count, used.div_ceil(SECTOR as u32), used));
    }
    per_warp
}

/// The most frequent (sectors, ideal, bytes) (ties: the larger).
fn mode(v: &[(u32, u32, u32)]) -> Option<(u32, u32, u32)> {
    let mut counts: Vec<((u32, u32, u32), usize)> = Vec::new();
    for x in v {
        match counts.iter_mut().find(|c| c.0 == *x) {
            Some(c) => c.1 += 1,
            None => counts.push((*x, 1)),
        }
    }
    counts.into_iter().max_by_key(|(k, c)| (*c, *k)).map(|x| x.0)
}

/// `Some(n)` when, in every thread that runs them, the `n` (2 or 4)
/// members are neighbouring elements of one width starting at a multiple
/// of `n` elements: what one `.vN` access reads or writes.
fn vector(addrs: &[Member<'_>], widths: &[i64]) -> Option<u8> {
    let n = addrs.len();
    let w = widths[0];
    if !(n == 2 || n == 4) || widths.iter().any(|x| *x != w) || w > 8 {
        return None;
    }
    let threads = addrs[0].len();
    let mut seen = false;
    for t in 0..threads {
        let mut lane: Vec<i64> = match addrs.iter().map(|a| a.get(t)).collect::<Option<Vec<i64>>>() {
            Some(v) => v,
            None if addrs.iter().all(|a| a.get(t).is_none()) => continue,
            None => return None,
        };
        lane.sort_unstable();
        let base = lane[0];
        if base.rem_euclid(w * n as i64) != 0 || lane.iter().enumerate().any(|(k, x)| *x != base + k as i64 * w) {
            return None;
        }
        seen = true;
    }
    seen.then_some(n as u8)
}
