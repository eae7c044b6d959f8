//! Races between blocks, as facts: the grid dimensions that hold two
//! blocks or more, the code each block reaches through uniform branches on
//! `blockIdx`, which accesses can be compared between blocks, the grid's
//! phases between cooperative `grid.sync()`s, and the threads of another
//! block.
//!
//! Owns: those facts. Does not own: the comparison (`crate::races::find_grid`).

use super::lanes::{Lanes, Threads};
use super::BranchFact;
use crate::divergence::Divergence;
use crate::ir::dataflow::BitSet;
use crate::ir::inst::{AccessKind, Space, Special};
use crate::ir::{BlockId, FunctionIr, InstId, ValueId};
use crate::memory::{Access, Evals, Query};
use crate::races::Race;
use rustc_hash::FxHashMap;
use std::rc::Rc;

/// The races between threads of two blocks of a kernel, along the grid's
/// dimensions of two blocks or more (`grid`: the grid shape when given),
/// and those dimensions with whether they are assumed.
#[allow(clippy::too_many_arguments)]
pub(super) fn races(
    f: &FunctionIr<'_>,
    d: &Divergence,
    evals: &Evals<'_, '_>,
    branches: &[BranchFact],
    lanes: &mut Lanes<'_, '_, '_>,
    own: &[Access],
    by_block: &BitSet,
    grid: Option<[u32; 3]>,
) -> (Vec<Race>, Vec<u8>, bool) {
    let (grid_dims, grid_assumed) = if f.func.is_entry { grid_dimensions(f, grid, own) } else { (Vec::new(), false) };
    if grid_dims.is_empty() {
        return (Vec::new(), grid_dims, grid_assumed);
    }
    // the grid workspace's arrivals and polls synchronise (acquire/release): not compared
    let workspace = derived_from_specials(f, &|s| matches!(s, Special::GridWorkspace { .. }));
    let mut comparable = comparable_between_blocks(f, by_block, own);
    for (c, a) in comparable.iter_mut().zip(own) {
        *c &= a.addr_value.is_none_or(|v| !workspace.contains(v.index()));
    }
    let gbars = grid_barriers(f, own, &workspace);
    let phases = (!gbars.is_empty()).then(|| crate::races::grid_phases(f, own, &gbars));
    // another block's threads differ from block 0's only through branches on the block index
    let by_block_branches = branches.iter().any(|b| by_block.contains(b.br.cond.index()));
    let mut next: FxHashMap<u8, (Option<Lanes<'_, '_, '_>>, BitSet)> = FxHashMap::default();
    let home = reached_in_block(f, d, evals, by_block, [0; 3]);
    let mut active = |dim: Option<u8>, b: BlockId, it: usize| -> Threads {
        let (on, reached) = match dim {
            None => (lanes.active(b, it), home.contains(b.index())),
            Some(x) => {
                let mut ctaid = [0; 3];
                ctaid[x as usize] = 1;
                let (l, r) = next.entry(x).or_insert_with(|| {
                    let r = reached_in_block(f, d, evals, by_block, ctaid);
                    (by_block_branches.then(|| Lanes::of_block(evals, branches, ctaid, Some(by_block.clone()))), r)
                });
                let on = match l {
                    Some(l) => l.active(b, it),
                    None => lanes.active(b, it),
                };
                (on, r.contains(b.index()))
            }
        };
        if reached {
            on
        } else {
            Rc::new(vec![false; on.len()])
        }
    };
    // blocks further along run the next block's code when no branch tests blockIdx
    let far = grid.filter(|_| !grid_assumed && !by_block_branches);
    let check =
        crate::races::GridCheck { accesses: own, comparable: &comparable, phases: phases.as_ref(), dims: &grid_dims, far, by_block };
    let found = crate::races::find_grid(evals, &check, &mut active);
    (found, grid_dims, grid_assumed)
}

/// The CFG blocks the threads of block `ctaid` can reach: a uniform
/// branch on a value computed from the block index (`by_block`: `if
/// (blockIdx.x == 0)`) goes the way that block's value says; other
/// branches both ways.
fn reached_in_block(f: &FunctionIr<'_>, d: &Divergence, evals: &Evals<'_, '_>, by_block: &BitSet, ctaid: [i64; 3]) -> BitSet {
    let cfg = &f.cfg;
    let mut seen = BitSet::new(cfg.len());
    let mut stack = vec![BlockId::new(0)];
    while let Some(b) = stack.pop() {
        if seen.contains(b.index()) {
            continue;
        }
        seen.insert(b.index());
        let decided = cfg.blocks[b].last().and_then(|i| {
            let inst = &f.insts[i];
            let g = inst.ast.guard.filter(|_| inst.is_jump())?;
            let cond = f.ssa.use_of(i, g.reg)?;
            if !by_block.contains(cond.index()) || !d.at(f, cond, b).is_uniform() {
                return None;
            }
            let q = Query::first_thread(ctaid, 0);
            let taken = (*evals.eval(cond, q)?.first()? != 0) != g.negated;
            let target = f.branch_target(i)?;
            Some(if taken { vec![target] } else { cfg.blocks[b].succs.iter().copied().filter(|&s| s != target).collect() })
        });
        stack.extend(decided.unwrap_or_else(|| cfg.blocks[b].succs.clone()));
    }
    seen
}

/// The grid dimensions that hold two blocks or more: those of `grid` when
/// given, else (assumed: `true`) those some global address is computed
/// from the block index (`%ctaid`, `%nctaid`) along: a kernel whose
/// addresses do not depend on its block index is taken to run as one block
/// along that dimension.
fn grid_dimensions(f: &FunctionIr<'_>, grid: Option<[u32; 3]>, accesses: &[Access]) -> (Vec<u8>, bool) {
    match grid {
        Some(g) => ((0..3u8).filter(|&d| g[d as usize] > 1).collect(), false),
        None => {
            let global: Vec<ValueId> = accesses.iter().filter(|a| a.space == Space::Global).filter_map(|a| a.addr_value).collect();
            let along = |d: u8| {
                let vals = derived_from_specials(f, &|s| matches!(s, Special::Ctaid(x) | Special::Nctaid(x) if x == d));
                global.iter().any(|v| vals.contains(v.index()))
            };
            ((0..3u8).filter(|&d| along(d)).collect(), true)
        }
    }
}

/// The values computed from `%ctaid` (through instructions and phis, and
/// the joins of branches on such values): the others are block 0's in
/// every block.
pub(super) fn block_index_values(f: &FunctionIr<'_>) -> BitSet {
    crate::ir::values::derived_through_joins(f, specials(f, &|s| matches!(s, Special::Ctaid(_))))
}

/// The values computed from the special registers `which` picks.
fn derived_from_specials(f: &FunctionIr<'_>, which: &dyn Fn(Special) -> bool) -> BitSet {
    crate::ir::values::derived_from(f, specials(f, which))
}

/// The reads of the special registers `which` picks (a read is the use of
/// the register's entry value).
fn specials(f: &FunctionIr<'_>, which: &dyn Fn(Special) -> bool) -> Vec<ValueId> {
    f.ssa.values.keys().filter(|&v| f.ssa.special(v).is_some_and(which)).collect()
}

/// The barriers that complete a cooperative `grid.sync()`: for each atomic
/// on the grid workspace (`workspace`: the values computed from
/// `%envreg1`/`%envreg2`; the block's master thread arrives there, then
/// polls the count until every block has arrived), the first block barrier
/// on every path after it (`cooperative_groups` ends the wait with
/// `__syncthreads()`, so no thread of the block passes it before the grid
/// has arrived). A `grid.sync()` inside a device function that is not
/// inlined is not seen.
fn grid_barriers(f: &FunctionIr<'_>, accesses: &[Access], workspace: &BitSet) -> Vec<InstId> {
    let mut out: Vec<InstId> = Vec::new();
    for a in accesses.iter().filter(|a| a.kind == AccessKind::Atomic) {
        if !a.addr_value.is_some_and(|v| workspace.contains(v.index())) {
            continue;
        }
        // the rest of the arrival's block, then each post-dominator from its start
        let b = f.cfg.block_of(a.inst);
        let rest = f.cfg.blocks[b].insts().skip_while(|&i| i != a.inst).skip(1);
        let later = std::iter::successors(f.cfg.ipdom(b), |&p| f.cfg.ipdom(p)).flat_map(|p| f.cfg.blocks[p].insts());
        if let Some(i) = rest.chain(later).find(|&i| f.insts[i].is_block_barrier()).filter(|i| !out.contains(i)) {
            out.push(i);
        }
    }
    out
}

/// The accesses whose addresses can be compared between blocks: not
/// computed from a value the evaluator cannot compute from its operands
/// (a block's start read from a table, a vector unpacked), scalar
/// parameters aside: such a value gets one sample, the same in every block,
/// and a product of samples with the block index may wrap around to the
/// same address. A value loaded from an address that does not depend on
/// the block index (`by_block`) is the same in every block.
fn comparable_between_blocks(f: &FunctionIr<'_>, by_block: &BitSet, accesses: &[Access]) -> Vec<bool> {
    let opaque: Vec<ValueId> = f
        .insts
        .iter_enumerated()
        .filter(|(_, inst)| inst.param_read().is_none())
        .flat_map(|(i, inst)| {
            f.ssa.defs(i).iter().enumerate().filter_map(move |(slot, &v)| {
                let computed = crate::ir::scalar::prepare(inst, slot).is_some() && !inst.is_float();
                // a value loaded from an address that is the same in every block is the same in every block
                let same_load = inst.access().is_some() && !by_block.contains(v.index());
                (!computed && !same_load).then_some(v)
            })
        })
        .collect();
    let tainted = crate::ir::values::derived_from(f, opaque);
    accesses.iter().map(|a| a.addr_value.is_some_and(|v| !tainted.contains(v.index()))).collect()
}
