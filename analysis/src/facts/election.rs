//! Last-block election (CUDA's `threadFenceReduction` idiom): every block
//! takes a ticket from one counter with an atomic add, once; the block that
//! draws the last ticket (`atomicAdd(&count, 1) == gridDim.x - 1`, or
//! `atomicInc(&count, gridDim.x)`) goes on alone to read what the others
//! wrote. The counter orders what each block did before its ticket ahead of
//! what the elected block does after its own: those pairs do not race, and
//! code only the elected block runs does not race with itself between
//! blocks. A write (or read) ordered that way needs a fence
//! (`__threadfence()`) between it and the ticket, or the elected block may
//! draw the last ticket before the write is visible: such pairs are
//! `unfenced` (`missing_threadfence`), not races.
//!
//! Owns: recognising elections (the counter, the ticket comparison with
//! the last ticket for every grid, the code only the elected block runs,
//! also behind a flag passed through shared memory) and judging a pair of
//! accesses of two blocks against them. Does not own: finding the races
//! (`crate::races::find_grid`).

use super::lanes::Lanes;
use crate::divergence::eval::Evaluator;
use crate::divergence::Divergence;
use crate::ir::dataflow::BitSet;
use crate::ir::inst::{AccessKind, AtomOp, Cmp, Opcode, Space, Sub};
use crate::ir::{FunctionIr, InstId, ValueId};
use crate::memory::Access;
use crate::model::Shape;
use crate::races::Race;

/// One election: the counter atomic and the CFG blocks only the block
/// that draws the last ticket runs.
#[derive(Clone, Debug)]
pub struct Election {
    pub atomic: InstId,
    pub elected: BitSet,
}

/// A pair of accesses of two blocks that an election orders but no fence
/// does: `published` (before a block's ticket) and `elected` (after the
/// last ticket), with the race's witness; indices into the accesses.
#[derive(Clone, Debug)]
pub struct Unfenced {
    /// The counter atomic (index into the accesses).
    pub atomic: usize,
    pub published: usize,
    pub elected: usize,
    pub race: Race,
}

/// Grids the last ticket is checked for when the launch's is not given:
/// the comparison must name the last ticket for each.
const GRIDS: [[u32; 3]; 2] = [[4, 1, 1], [6, 3, 2]];

/// The elections of kernel `f`: global atomic adds (`add`, `inc`) on one
/// address for the whole grid, run once per thread that runs them outside
/// loops by a set of threads known in every block alike (`lanes`), whose
/// result is compared for equality with the last ticket (the count of
/// atomics in the grid, less one, times the step) for the launch's grid
/// (`grid`), or for several grids when none is given.
pub(super) fn elections(
    f: &FunctionIr<'_>,
    d: &Divergence,
    shape: &Shape,
    grid: Option<[u32; 3]>,
    lanes: &mut Lanes<'_, '_, '_>,
    accesses: &[Access],
    by_block: &BitSet,
) -> Vec<Election> {
    let mut out = Vec::new();
    for a in accesses.iter().filter(|a| a.kind == AccessKind::Atomic && a.space == Space::Global) {
        let i = a.inst;
        let inst = &f.insts[i];
        let Sub::Atom(op @ (AtomOp::Add | AtomOp::Inc)) = inst.sub else { continue };
        let (Some(&ticket), Some(addr)) = (f.ssa.defs(i).first(), a.addr_value) else { continue };
        // one counter for the whole grid
        if by_block.contains(addr.index()) || !d.vals[addr].is_uniform() {
            continue;
        }
        // run once by the same threads of every block
        let b = f.cfg.block_of(i);
        if !f.cfg.loops_containing(b).is_empty() || decided_by_block(f, b, by_block) {
            continue;
        }
        let Some(threads) = lanes.active_exactly(b) else { continue };
        let per_block = threads.iter().filter(|&&t| t).count() as i64;
        let grids: Vec<[u32; 3]> = grid.map_or_else(|| GRIDS.to_vec(), |g| vec![g]);
        if per_block == 0 {
            continue;
        }
        // the step each ticket adds, and for `inc` a limit the tickets stay under
        let step = match op {
            AtomOp::Add => operand_in(f, d, shape, i, 2, grids[0]),
            _ => Some(1),
        };
        let Some(step) = step.filter(|&s| s > 0) else { continue };
        let last = |g: [u32; 3]| (per_block * g.iter().map(|&x| x as i64).product::<i64>() - 1) * step;
        if op == AtomOp::Inc && !grids.iter().all(|&g| operand_in(f, d, shape, i, 2, g).is_some_and(|limit| limit >= last(g))) {
            continue;
        }
        // the comparisons of the ticket with the last one: `p` true (`eq`) or false (`ne`) in the elected block
        for u in f.ssa.users[ticket].iter().filter_map(|u| match u {
            crate::ir::ssa::User::Inst(x) => Some(*x),
            _ => None,
        }) {
            let cmp = &f.insts[u];
            if cmp.opcode != Opcode::Setp || cmp.bool_op.is_some() || cmp.ast.guard.is_some() {
                continue;
            }
            let elected_when = match cmp.cmp {
                Some(Cmp::Eq) => 1,
                Some(Cmp::Ne) => 0,
                _ => continue,
            };
            let other = if f.operand_value(u, 1) == Some(ticket) { 2 } else { 1 };
            if !grids.iter().all(|&g| operand_in(f, d, shape, u, other, g) == Some(last(g))) {
                continue;
            }
            let Some(&p) = f.ssa.defs(u).first() else { continue };
            let elected = elected_blocks(f, d, shape, grids[0], p, 1 - elected_when);
            if elected.count() > 0 {
                out.push(Election { atomic: i, elected });
            }
        }
    }
    out
}

/// Does a branch on a value computed from the block index decide whether
/// block `b` runs (some blocks would take fewer tickets)?
fn decided_by_block(f: &FunctionIr<'_>, b: crate::ir::BlockId, by_block: &BitSet) -> bool {
    f.cfg.blocks.keys().any(|x| {
        f.cfg.blocks[x].last().is_some_and(|j| {
            let inst = &f.insts[j];
            inst.is_jump()
                && inst.ast.guard.is_some_and(|g| f.ssa.use_of(j, g.reg).is_some_and(|c| by_block.contains(c.index())))
                && crate::divergence::controlled_blocks(f, x).contains(&b)
        })
    })
}

/// An evaluator of the first thread for grid `g`, loops at their first iteration.
fn evaluator<'f, 'a>(f: &'f FunctionIr<'a>, d: &'f Divergence, shape: &'f Shape, lanes: usize, g: [u32; 3]) -> Evaluator<'f, 'a> {
    let mut ev = Evaluator::new(f, d, shape.block, &shape.lanes()[..lanes]);
    ev.nctaid = Some(g);
    ev.first_iteration = true;
    ev
}

/// Operand `k` of instruction `i` for grid `g`: one value for the whole
/// block (a constant, or computed from the launch's dimensions).
fn operand_in(f: &FunctionIr<'_>, d: &Divergence, shape: &Shape, i: InstId, k: usize, g: [u32; 3]) -> Option<i64> {
    match (f.insts[i].operand(k)?, f.operand_value(i, k)) {
        (crate::ptx::Operand::Imm(x), _) => Some(*x),
        (_, Some(v)) if d.vals[v].is_uniform() => evaluator(f, d, shape, 1, g).values(v).ok()?.first().copied(),
        _ => None,
    }
}

/// The CFG blocks only the elected block runs: the sides of branches that
/// no thread takes when the ticket comparison `p` holds `not_elected`
/// (directly, or through a flag stored to shared memory from it and
/// loaded back).
fn elected_blocks(f: &FunctionIr<'_>, d: &Divergence, shape: &Shape, g: [u32; 3], p: ValueId, not_elected: i64) -> BitSet {
    let cfg = &f.cfg;
    let mut ev = evaluator(f, d, shape, shape.lanes().len(), g);
    ev.through_data = true;
    ev.bind(p, not_elected);
    let mut fixed = vec![p];
    // a flag: shared stores of a value computed from `p`, whatever else
    // stores to that address storing what they store when not elected
    let from_p = crate::ir::values::derived_from(f, vec![p]);
    // a shared address: its value, or the symbol it names (`[flag]`)
    let address = |j: InstId, k: usize| -> Option<Result<ValueId, &crate::ptx::Operand<'_>>> {
        match f.operand_value(j, k) {
            Some(v) => Some(Ok(v)),
            None => match f.insts[j].operand(k)? {
                o @ crate::ptx::Operand::Addr(x) if matches!(x.base, Some(crate::ptx::Operand::Sym(_))) => Some(Err(o)),
                _ => None,
            },
        }
    };
    let same_address = |x: &Result<ValueId, &crate::ptx::Operand<'_>>, y: &Result<ValueId, &crate::ptx::Operand<'_>>| match (x, y) {
        (Ok(a), Ok(b)) => crate::ir::values::same_value(f, *a, *b),
        (Err(a), Err(b)) => a == b,
        _ => false,
    };
    let stores: Vec<(InstId, Result<ValueId, &crate::ptx::Operand<'_>>, ValueId)> = f
        .insts
        .iter_enumerated()
        .filter(|(_, x)| x.access() == Some(AccessKind::Store) && x.space == Some(Space::Shared) && x.vec == 1)
        .filter_map(|(j, _)| Some((j, address(j, 0)?, f.operand_value(j, 1)?)))
        .collect();
    let uniform_value = |ev: &Evaluator<'_, '_>, v: ValueId| -> Option<i64> {
        let vals = ev.values(v).ok()?;
        vals.iter().all(|x| *x == vals[0]).then(|| vals[0])
    };
    for (j, addr, val) in stores.iter().filter(|s| from_p.contains(s.2.index())) {
        let Some(flag) = uniform_value(&ev, *val) else { continue };
        let width = f.insts[*j].access_width();
        let others_agree = stores
            .iter()
            .filter(|s| same_address(&s.1, addr))
            .all(|s| f.insts[s.0].access_width() == width && uniform_value(&ev, s.2) == Some(flag));
        if !others_agree {
            continue;
        }
        let loads: Vec<ValueId> = f
            .insts
            .iter_enumerated()
            .filter(|(_, x)| {
                x.access() == Some(AccessKind::Load) && x.space == Some(Space::Shared) && x.access_width() == width && x.vec == 1
            })
            .filter(|(l, _)| address(*l, 1).is_some_and(|x| same_address(&x, addr)))
            .filter_map(|(l, _)| f.ssa.defs(l).first().copied())
            .collect();
        for v in loads {
            ev.bind(v, flag);
            fixed.push(v);
        }
    }
    let decided = crate::ir::values::derived_from(f, fixed);
    let mut out = BitSet::new(cfg.len());
    for b in cfg.blocks.keys() {
        let Some(j) = cfg.blocks[b].last() else { continue };
        let inst = &f.insts[j];
        let Some(g) = inst.ast.guard.filter(|_| inst.is_jump()) else { continue };
        let Some(c) = f.ssa.use_of(j, g.reg).filter(|c| decided.contains(c.index())) else { continue };
        let Ok(vals) = ev.values(c) else { continue };
        // every thread goes one way when not elected: the other side is the elected block's
        let taken = |x: i64| (x != 0) != g.negated;
        if !vals.iter().all(|&x| taken(x) == taken(vals[0])) {
            continue;
        }
        let target = f.branch_target(j);
        let (to, away): (Vec<_>, Vec<_>) = cfg.blocks[b].succs.iter().copied().partition(|&s| (Some(s) == target) != taken(vals[0]));
        let stop = cfg.ipdom(b);
        let other = cfg.region(&away, stop);
        for x in cfg.region(&to, stop) {
            if other.binary_search(&x).is_err() {
                out.insert(x.index());
            }
        }
    }
    out
}

/// How accesses `a` and `b`, in two different blocks, stand against the
/// elections: `Some((election, fenced))` when one orders them — one runs
/// only in the elected block and the other before its block's ticket (or
/// both only in the elected block) — with whether a device fence lies
/// between the earlier one and its ticket; `None` when none does.
/// `is_bar`: the block barriers (and calls that execute one).
pub fn order(f: &FunctionIr<'_>, elections: &[Election], a: InstId, b: InstId, is_bar: &dyn Fn(InstId) -> bool) -> Option<(usize, bool)> {
    let block = |x: InstId| f.cfg.block_of(x).index();
    elections.iter().enumerate().find_map(|(k, e)| {
        let before = match (e.elected.contains(block(a)), e.elected.contains(block(b))) {
            (true, true) => return Some((k, true)),
            (false, true) => a,
            (true, false) => b,
            (false, false) => return None,
        };
        if before == e.atomic {
            return Some((k, true));
        }
        before_ticket(f, before, e.atomic, is_bar)
            .then(|| (k, !f.reaches_avoiding(before, Some(e.atomic), &|i| f.insts[i].fences_device())))
    })
}

/// Does every thread that runs `x` do so before its block takes ticket
/// `atomic`: `x` never follows the atomic, and either every path from `x`
/// to the end passes the atomic, or every one passes a barrier and every
/// path from `x` to the atomic does (the barrier orders the threads).
fn before_ticket(f: &FunctionIr<'_>, x: InstId, atomic: InstId, is_bar: &dyn Fn(InstId) -> bool) -> bool {
    if f.reaches_avoiding(atomic, Some(x), &|_| false) {
        return false;
    }
    let same_thread = !f.reaches_avoiding(x, None, &|i| i == atomic);
    same_thread || (!f.reaches_avoiding(x, None, is_bar) && !f.reaches_avoiding(x, Some(atomic), is_bar))
}

/// The races between blocks that no election orders, and the pairs one
/// orders without a fence ([`Unfenced`]); those it orders with one go.
pub(super) fn settle(
    f: &FunctionIr<'_>,
    elections: &[Election],
    accesses: &[Access],
    races: Vec<Race>,
    is_bar: &dyn Fn(InstId) -> bool,
) -> (Vec<Race>, Vec<Unfenced>) {
    if elections.is_empty() {
        return (races, Vec::new());
    }
    let mut kept = Vec::new();
    let mut unfenced = Vec::new();
    for r in races {
        let (a, b) = (accesses[r.first].inst, accesses[r.second].inst);
        match order(f, elections, a, b, is_bar) {
            None => kept.push(r),
            Some((_, true)) => {}
            Some((k, false)) => {
                let e = &elections[k];
                let Some(atomic) = accesses.iter().position(|x| x.inst == e.atomic) else {
                    kept.push(r);
                    continue;
                };
                let first_elected = e.elected.contains(f.cfg.block_of(a).index());
                let (published, elected) = if first_elected { (r.second, r.first) } else { (r.first, r.second) };
                unfenced.push(Unfenced { atomic, published, elected, race: r });
            }
        }
    }
    (kept, unfenced)
}
