//! The per-kernel facts layer between the analyses and the lints: for one
//! function and its block shape, every divergent branch with the blocks
//! it controls and how many warps it splits, the lane-slots a block issues
//! and those each split leaves idle (`slots`), every global and shared
//! access with its predicted cost (for the threads its guards let through,
//! and with every thread active), the races between accesses (kernels and
//! device functions in a call context; a kernel's own paired with its
//! direct callees' accesses, placed at the calls: `calls`), the races
//! between blocks (kernels: `grid`), the barriers, the calls it makes with
//! what they pass (the contexts its callees are analysed in, `crate::driver`)
//! and, in a call context, the accesses it exports to its caller's race
//! check, and the coverage of its memory instructions (`coverage`).
//! Computed once, eagerly; lint passes only read them.
//!
//! Owns: assembling the facts, which threads run each block (`lanes`), and
//! the judgments that need several analyses at once (a barrier's
//! divergence and the threads that skip it, what a branch decides). Does
//! not own: the analyses (`divergence`, `memory`, `races`) or what is worth
//! a warning (`lints`).

pub mod assume;
pub mod bounds;
mod calls;
mod coverage;
pub mod election;
mod grid;
mod lanes;
pub mod slots;
pub mod uninit;
pub mod witness;

pub use assume::{Assumed, Assumption};
pub use calls::{CallFact, CalleeAccess, Export, Imports};
pub use coverage::{Coverage, Skip};

use crate::divergence::split::{classify, Split};
use crate::divergence::{controlled_blocks, DivBranch, Divergence, Summaries};
use crate::ir::dataflow::BitSet;
use crate::ir::inst::Space;
use crate::ir::{BlockId, FunctionIr, IdVec, InstId};
use crate::memory::footprint::Group;
use crate::memory::{Access, AccessFact, Evals};
use crate::model::Shape;
use crate::races::{Race, SkippedBarrier};
use lanes::Lanes;

/// A divergent branch (or guarded return) of the function.
#[derive(Clone, Debug)]
pub struct BranchFact {
    pub br: DivBranch,
    /// Blocks whose execution the branch decides (reachable from its
    /// successors without passing its immediate post-dominator).
    pub controlled: crate::ir::cfg::BlockSet,
    /// How many warps of a block it splits (lanes that do not reach it —
    /// returned, or skipped by an outer branch — are not counted).
    pub split: Split,
    /// What the code it decides costs.
    pub cost: BranchCost,
}

/// The code a branch decides: instructions on each side (up to its
/// immediate post-dominator), and whether a loop, a call or a barrier is
/// among them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct BranchCost {
    pub taken: u32,
    pub other: u32,
    pub heavy: bool,
    /// A side calls a function (whose instructions are not counted here).
    pub calls: bool,
}

impl BranchCost {
    /// A few straight-line instructions (a guarded store, say): splitting a
    /// warp around them costs little.
    pub fn is_cheap(&self) -> bool {
        !self.heavy && self.taken + self.other <= CHEAP_INSTRUCTIONS
    }
}

/// The most instructions a branch may decide and still be cheap.
pub const CHEAP_INSTRUCTIONS: u32 = 6;

/// A barrier (or a call to a function that executes one), and whether not
/// every thread of the block reaches it.
#[derive(Clone, Debug)]
pub struct BarrierFact {
    pub inst: InstId,
    /// Why part of the block skips it (`None`: every thread reaches it).
    pub divergence: Option<BarrierCause>,
    /// Which threads skip it, when the deciding branch could be evaluated
    /// for every thread (loop counters at their first value).
    pub skipping: Option<Skipping>,
    /// When the deciding branch compares each thread's value with a
    /// parameter: the values for which the block splits, and a witness.
    pub witness: Option<witness::BarrierWitness>,
}

/// The threads of a block that skip a divergent barrier.
#[derive(Clone, Debug, PartialEq)]
pub struct Skipping {
    /// `first[t]`: thread t skips it in the first iteration of the loops around.
    pub first: Vec<bool>,
    /// How the set changes in the second iteration (the condition depends
    /// on a loop counter): `None` when it does not.
    pub later: Option<Later>,
}

/// How the threads skipping a barrier change after the first iteration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Later {
    /// Those, and more.
    More,
    /// Others.
    Others,
}

/// Why a barrier is not reached by every thread of the block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BarrierCause {
    /// The barrier instruction is predicated on a thread-dependent value.
    Predicated,
    /// A thread-dependent branch (index in `KernelFacts::branches`) decides
    /// whether it runs: the innermost such branch.
    Branch(usize),
}

/// The instructions each side of a branch runs before its immediate
/// post-dominator, and whether a loop, call or barrier is among them.
fn branch_cost(f: &FunctionIr<'_>, br: &DivBranch) -> BranchCost {
    let cfg = &f.cfg;
    let stop = cfg.ipdom(br.block);
    let target = f.branch_target(br.inst);
    let (mut heavy, mut calls) = (false, false);
    let mut side = |starts: Vec<BlockId>| -> u32 {
        let region = cfg.region(&starts, stop);
        let mut n = 0;
        for &b in &region {
            heavy |= cfg.loop_with_header(b).is_some_and(|l| region.binary_search(&cfg.loops[l].latches[0]).is_ok());
            for i in cfg.blocks[b].insts() {
                let inst = &f.insts[i];
                calls |= inst.call_target().is_some();
                heavy |= inst.is_block_barrier() || calls;
                n += 1;
            }
        }
        n
    };
    let taken = side(target.into_iter().collect());
    let other = side(cfg.blocks[br.block].succs.iter().copied().filter(|&s| Some(s) != target).collect());
    BranchCost { taken, other, heavy, calls }
}

/// The threads that skip barrier `bar` because of branch `k` (`br`), in the
/// first iteration, and whether the second differs.
fn skipping(f: &FunctionIr<'_>, br: &DivBranch, bar: InstId, lanes: &mut Lanes<'_, '_, '_>, k: usize) -> Option<Skipping> {
    let (skip_taken, skip_fall) = skip_sides(f, br, bar);
    let skip = |taken: &[bool]| -> Vec<bool> { taken.iter().map(|&t| if t { skip_taken } else { skip_fall }).collect() };
    let first = skip(&lanes.direction(k, 0)?);
    let later = lanes.direction(k, 1).map(|t| skip(&t)).filter(|second| *second != first).map(|second| {
        if first.iter().zip(&second).all(|(a, b)| !a || *b) {
            Later::More
        } else {
            Later::Others
        }
    });
    Some(Skipping { first, later })
}

/// Does a thread that takes branch `br` skip barrier `bar`, and one that
/// does not?
fn skip_sides(f: &FunctionIr<'_>, br: &DivBranch, bar: InstId) -> (bool, bool) {
    let cfg = &f.cfg;
    let target = f.branch_target(br.inst);
    let stop = cfg.ipdom(br.block);
    let b = cfg.block_of(bar);
    let reaches = |s: BlockId| cfg.region(&[s], stop).binary_search(&b).is_ok();
    let taken_reaches = target.is_some_and(reaches);
    let fall_reaches = cfg.blocks[br.block].succs.iter().filter(|&&s| Some(s) != target).any(|&s| reaches(s))
        || (cfg.blocks[br.block].succs.len() == 1 && target.is_none());
    (!taken_reaches, !fall_reaches)
}

/// Why barrier `i` is not reached by every thread of the block (GPUVerify's
/// barrier divergence): predicated on a thread-dependent value, or decided
/// by a thread-dependent branch. `bar.sync id, count` and `barrier.sync`
/// without `.aligned` take whole warps, possibly from different code, so
/// control that is uniform within each warp is fine for them; a branch
/// evaluated for every thread with all of them on one side is no cause.
fn barrier_divergence(f: &FunctionIr<'_>, d: &Divergence, branches: &[BranchFact], i: InstId, via_call: bool) -> Option<BarrierCause> {
    let inst = &f.insts[i];
    if let Some(g) = inst.ast.guard {
        if d.operand(f, i, &crate::ptx::Operand::Reg(g.reg)).is_divergent() {
            return Some(BarrierCause::Predicated);
        }
    }
    let b = f.cfg.block_of(i);
    let counted = !via_call && inst.is_warp_granular_barrier();
    let splits_warps = |x: &BranchFact| {
        !d.at(f, x.br.cond, x.br.block).is_warp_uniform()
            && !matches!(x.split, Split::Exact { split: 0, .. } | Split::Bounded { split: 0, .. })
    };
    let proven_uniform = |x: &BranchFact| matches!(x.split, Split::Exact { ref taken, .. } if taken.iter().all(|t| *t == taken[0]));
    branches
        .iter()
        .enumerate()
        .filter(|(_, x)| x.controls(b) && (!counted || splits_warps(x)) && !proven_uniform(x))
        .min_by_key(|(_, x)| x.controlled.len())
        .map(|(k, _)| BarrierCause::Branch(k))
}

impl BranchFact {
    /// Does the branch decide whether block `b` runs?
    pub fn controls(&self, b: BlockId) -> bool {
        self.controlled.contains(b)
    }
    /// The blocks it controls.
    pub fn controlled(&self) -> impl Iterator<Item = BlockId> + '_ {
        self.controlled.iter()
    }
}

/// Everything the lint passes read about one function.
pub struct KernelFacts<'f, 'a> {
    pub f: &'f FunctionIr<'a>,
    pub d: &'f Divergence,
    pub sums: &'f Summaries<'a>,
    pub shape: &'f Shape,
    /// One per divergent branch, in the order of `d.branches`.
    pub branches: Vec<BranchFact>,
    /// The kernel's lane-slots and those each branch leaves idle.
    pub lane_slots: slots::LaneSlots,
    /// What its accesses cost the memory system, weighted by how often
    /// each issues.
    pub memory_cost: slots::MemoryCost,
    pub accesses: Vec<AccessFact>,
    /// Loads of one warp to one array in one loop iteration (through L1),
    /// and stores likewise, judged together (`crate::memory::footprint`).
    pub groups: Vec<Group>,
    /// Races between accesses (`first`, `second` index `accesses`, then
    /// `imported`).
    pub races: Vec<Race>,
    /// The accesses of the device functions this one calls that its race
    /// check paired with its own ([`Imports`]), each at its call.
    pub imported: Vec<CalleeAccess>,
    /// `imported`'s accesses as this function sees them: at the call,
    /// through the caller's argument ([`Self::race_site`]).
    pub placed: Vec<Access>,
    /// In a call context: the accesses the caller's race check pairs.
    pub exports: Vec<Export>,
    /// Races between threads of two blocks (`first`, `second` index
    /// `accesses`; kernels only), along `grid_dims`.
    pub grid_races: Vec<Race>,
    /// The grid dimensions checked, and whether they are assumed (no grid
    /// shape given: those global addresses take the block index from).
    pub grid_dims: Vec<u8>,
    pub grid_assumed: bool,
    /// Instructions every thread of the block must reach: barriers, and
    /// calls to functions that execute one (reachable ones), with whether
    /// they are reached by part of the block.
    pub barriers: Vec<BarrierFact>,
    /// Every memory instruction, by how it was analysed.
    pub coverage: Coverage,
    /// Direct calls of the module's device functions, with what they pass.
    pub calls: Vec<CallFact<'a>>,
    /// The uniform values the predictions and witnesses were evaluated
    /// with samples of, each with its sample.
    pub sampled: crate::memory::Sampled,
    /// Plain loads that only seed a compare-and-swap loop on their address,
    /// each with that CAS (indices into `accesses`): not races.
    pub cas_seeds: Vec<(usize, usize)>,
    /// Pairs of accesses of two blocks that a last-block election orders
    /// with no fence between the earlier one and its block's ticket.
    pub unfenced: Vec<election::Unfenced>,
    /// Shared and `.local` accesses that leave their array for some thread
    /// of the block (kernels, and device functions in a call context).
    pub out_of_bounds: Vec<bounds::OutOfBounds>,
    /// Shared loads that read bytes no thread of the block writes, for
    /// some thread (kernels).
    pub uninitialized: Vec<uninit::Uninit>,
    /// The index in `branches` of the branch ending each block.
    branch_at: IdVec<BlockId, Option<u32>>,
}

impl<'f, 'a> KernelFacts<'f, 'a> {
    pub fn compute(f: &'f FunctionIr<'a>, d: &'f Divergence, sums: &'f Summaries<'a>, shape: &'f Shape) -> KernelFacts<'f, 'a> {
        Self::compute_with(f, d, sums, shape, None, &mut |_| Imports::default())
    }

    /// [`Self::compute`]; `grid`: the grid shape, when known (races between
    /// blocks); `imports(calls)`: given the calls the function makes (with
    /// what each passes), the accesses of their callees, which the race
    /// check pairs with the function's own (the caller analyses the callees
    /// in those contexts first).
    pub fn compute_with(
        f: &'f FunctionIr<'a>,
        d: &'f Divergence,
        sums: &'f Summaries<'a>,
        shape: &'f Shape,
        grid: Option<[u32; 3]>,
        imports: &mut dyn FnMut(&[CallFact<'a>]) -> Imports,
    ) -> KernelFacts<'f, 'a> {
        let evals = Evals::new(f, d, shape).with_grid(grid);
        let mut ev = crate::divergence::eval::Evaluator::new(f, d, shape.block, shape.lanes());
        if grid.is_none() {
            // (the same threads, and no grid: the same special registers)
            ev.share_threads(evals.block_threads());
        }
        let mut branches: Vec<BranchFact> = d
            .branches
            .iter()
            .map(|br| {
                let controlled = crate::ir::cfg::BlockSet::new(controlled_blocks(f, br.block), f.cfg.len());
                BranchFact { br: *br, controlled, split: classify(f, d, br, shape, &mut ev), cost: branch_cost(f, br) }
            })
            .collect();
        drop(ev);
        let barrier_call = |i: InstId| f.insts[i].call_target().is_some_and(|t| sums.has_barrier.contains(t));
        let mut barriers: Vec<BarrierFact> = f
            .insts
            .keys()
            .filter(|&i| (f.insts[i].is_block_barrier() || barrier_call(i)) && f.cfg.reachable(f.cfg.block_of(i)))
            .map(|inst| BarrierFact {
                inst,
                divergence: barrier_divergence(f, d, &branches, inst, barrier_call(inst)),
                skipping: None,
                witness: None,
            })
            .collect();
        let mut lanes = Lanes::new(&evals, &branches);
        // lanes that never reach a branch (returned, or outside an outer guard) do not split it
        let recount: Vec<Option<(usize, bool)>> = branches
            .iter()
            .map(|b| match &b.split {
                Split::Exact { taken, .. } => Some(crate::divergence::split::count_active(taken, &lanes.active(b.br.block, 0))),
                _ => None,
            })
            .collect();
        for b in barriers.iter_mut() {
            if let Some(BarrierCause::Branch(k)) = b.divergence {
                b.skipping = skipping(f, &branches[k].br, b.inst, &mut lanes, k);
                // a branch on a parameter: the values that split the block, if the kernel allows any
                if b.skipping.is_none() {
                    match witness::barrier(&evals, &branches, &mut lanes, k, skip_sides(f, &branches[k].br, b.inst)) {
                        Some(witness::Solved::Never) => b.divergence = None,
                        Some(witness::Solved::When(w)) => b.witness = Some(w),
                        None => {}
                    }
                }
            }
        }
        let by_block = grid::block_index_values(f);
        let accesses = access_facts(f, d, &evals, &branches, &mut lanes, &by_block);
        let own: Vec<Access> = accesses.iter().map(|a| a.access.clone()).collect();
        // the calls, and their callees' accesses at them, through the arguments the calls pass
        let calls = calls::call_facts(f, d, sums, &evals, &mut lanes);
        let (placed, imported) = calls::place(f, d, &imports(&calls));
        // which threads run a device function, and with what arguments, is its
        // callers' to say: its accesses are not paired without that context
        let races = if f.func.is_entry || d.call.active.is_some() {
            let skipped = skipped_barriers(f, &branches, &barriers);
            let mut found =
                crate::races::find(&evals, &own, &placed, &mut |b, it| lanes.active(b, it).as_ref().clone(), &barrier_call, &skipped);
            // what the witnesses need on the way to their accesses
            let site = |k: usize| own.get(k).map_or_else(|| placed[k - own.len()].access.inst, |a| a.inst);
            for r in found.iter_mut() {
                witness::bound(&evals, &branches, &mut lanes, r, &site);
            }
            lanes.forget_ways();
            // a witness its own samples take past a test the kernel makes on the way is no
            // witness: found again with a value those tests allow, or dropped
            let mut active = |_: usize, b: BlockId, it: usize| lanes.active(b, it).as_ref().clone();
            found = found
                .into_iter()
                .filter_map(|r| match witness::consistent(&evals, &r, &site, None) {
                    Ok(()) => Some(r),
                    Err(None) => None,
                    Err(Some(p)) => {
                        let v = witness::allowed_value(&evals, p, &r, &site)?;
                        let again = crate::races::recheck(&evals, &own, &r, Some((p, v)), &mut active)?;
                        witness::consistent(&evals, &again, &site, Some((p, v))).is_ok().then_some(again)
                    }
                })
                .collect();
            // a racing read whose thread throws the value away: the threads that keep it
            for r in found.iter_mut() {
                witness::unless_discarded(&evals, &branches, &mut lanes, &own, r, &site);
            }
            // lost updates: the store run by two threads or more
            let mut two_or_more = |k: usize| lanes.active(f.cfg.block_of(own[k].inst), 0).iter().filter(|&&t| t).count() >= 2;
            found.extend(crate::races::lost_updates(f, d, &own).into_iter().filter(|r| two_or_more(r.first)));
            found
        } else {
            Vec::new()
        };
        let out_of_bounds = if f.func.is_entry || d.call.active.is_some() {
            bounds::outside(&evals, &own, &crate::memory::local_accesses(f, d), &mut lanes)
        } else {
            Vec::new()
        };
        let uninitialized = uninit::shared(&evals, &own, &branches, &mut lanes);
        let mut branch_at = IdVec::from_vec(vec![None; f.cfg.len()]);
        for (k, x) in branches.iter().enumerate() {
            branch_at[x.br.block] = Some(k as u32);
        }
        // races between blocks: kernels, along the grid's dimensions of two blocks or more
        let (grid_races, grid_dims, grid_assumed) = grid::races(f, d, &evals, &branches, &mut lanes, &own, &by_block, grid);
        // last-block elections order some of them (fenced, or not: `unfenced`)
        let elections =
            if grid_races.is_empty() { Vec::new() } else { election::elections(f, d, shape, grid, &mut lanes, &own, &by_block) };
        let is_bar = |i: InstId| f.insts[i].is_block_barrier() || barrier_call(i);
        let (mut grid_races, unfenced) = election::settle(f, &elections, &own, grid_races, &is_bar);
        // a lost update in global memory loses updates between blocks too (one finding: the block's)
        if let Some(&dim) = grid_dims.first() {
            let global_keyed = races.iter().filter(|r| r.keyed.is_some() && own.get(r.first).is_some_and(|a| a.space == Space::Global));
            grid_races.extend(global_keyed.map(|r| crate::races::Race { between_blocks: Some(dim), ..r.clone() }).collect::<Vec<_>>());
        }
        let exports = calls::exports(f, d, sums, &evals, &mut lanes, &accesses);
        let mut asked: Vec<BlockId> = accesses.iter().map(|a| f.cfg.block_of(a.access.inst)).collect();
        asked.sort_unstable();
        asked.dedup();
        let lane_slots = slots::lane_slots(&evals, &branches, &mut lanes, &asked);
        drop(lanes);
        for (b, r) in branches.iter_mut().zip(recount) {
            if let (Split::Exact { split, single_lane, .. }, Some((n, single))) = (&mut b.split, r) {
                (*split, *single_lane) = (n, single);
            }
        }
        let groups = crate::memory::footprint::groups(&evals, &accesses);
        let mut accesses = accesses;
        for (gi, g) in groups.iter().enumerate() {
            for &k in &g.members {
                accesses[k].group = Some(gi);
            }
        }
        let coverage = coverage::coverage(f, &accesses);
        let memory_cost = slots::memory_cost(f, &accesses, &lane_slots);
        let sampled = evals.sampled();
        let cas_seeds = crate::races::cas_seeds(f, &own).into_iter().enumerate().filter_map(|(k, c)| Some((k, c?))).collect();
        KernelFacts {
            f,
            d,
            sums,
            shape,
            branches,
            lane_slots,
            memory_cost,
            accesses,
            groups,
            races,
            imported,
            placed: placed.into_iter().map(|x| x.access).collect(),
            exports,
            grid_races,
            grid_dims,
            grid_assumed,
            barriers,
            coverage,
            calls,
            sampled,
            cas_seeds,
            unfenced,
            out_of_bounds,
            uninitialized,
            branch_at,
        }
    }

    /// What an out-of-bounds fact rests on: the samples its offsets were
    /// evaluated with.
    pub fn bounds_assumes(&self, o: &bounds::OutOfBounds) -> Vec<Assumption> {
        self.rests_on(o.access.inst, &o.rests_on)
    }

    /// What an uninitialised read rests on: the samples its offsets and
    /// guards, and those of the stores to its array, were evaluated with.
    pub fn uninit_assumes(&self, u: &uninit::Uninit) -> Vec<Assumption> {
        self.rests_on(self.accesses[u.access].access.inst, &u.rests_on)
    }

    fn rests_on(&self, at: InstId, on: &crate::divergence::eval::Leaves) -> Vec<Assumption> {
        assume::of_leaves(self.f, self.d, on, &self.sampled, &[], &[at])
    }

    /// What an access's prediction rests on: the samples its address was
    /// evaluated with (those of its base's alignment marked so), and the
    /// unknown strides taken as large.
    pub fn access_assumes(&self, a: &AccessFact) -> Vec<Assumption> {
        let Some(p) = &a.prediction else { return Vec::new() };
        let at = [a.access.inst];
        let mut out = assume::of_leaves(self.f, self.d, &p.rests_on, &self.sampled, &[], &at);
        // (a base's leaves that the addresses do not read otherwise decide the alignment only)
        let aligned = p.aligned_on.iter().filter(|v| !p.rests_on.iter().any(|x| x == *v)).collect::<Vec<_>>();
        for v in aligned {
            if let Some(&x) = self.sampled.get(&v) {
                let known = assume::known(self.f, self.d, v, a.access.inst);
                out.push(Assumption { alignment: true, known, ..assume::named(self.f, v, x) });
            }
        }
        out.extend(assume::of_strides(self.f, &p.assumed_strides));
        out
    }

    /// What the predictions of several accesses rest on, each once.
    pub fn assumes_all<'x>(&self, xs: impl IntoIterator<Item = &'x AccessFact>) -> Vec<Assumption> {
        let mut out: Vec<Assumption> = xs.into_iter().flat_map(|x| self.access_assumes(x)).collect();
        out.sort();
        out.dedup();
        out
    }

    /// What a race's witness rests on: the samples its two addresses were
    /// evaluated with, but the parameters its condition names.
    pub fn race_assumes(&self, r: &Race) -> Vec<Assumption> {
        let named: Vec<&str> = r.when.as_ref().map(|w| w.params()).unwrap_or_default();
        // (a race that names no parameter solved none: the function's values are not scanned)
        let solved: Vec<crate::ir::ValueId> = if named.is_empty() {
            Vec::new()
        } else {
            let f = self.f;
            let named_param = |v: crate::ir::ValueId| {
                f.def_inst(v).and_then(|i| f.insts[i].param_read()).is_some_and(|(p, _)| named.contains(&f.param_label(p).as_str()))
            };
            f.ssa.values.keys().filter(|&v| named_param(v)).collect()
        };
        let at: Vec<InstId> = [r.first, r.second].iter().map(|&k| self.race_site(k).inst).collect();
        // (a witness found again with a value the kernel's checks allow names that value)
        let pinned;
        let sampled = match r.pinned {
            Some((p, v)) => {
                pinned = self.sampled.iter().map(|(&k, &x)| (k, x)).chain([(p, v)]).collect();
                &pinned
            }
            None => &self.sampled,
        };
        let mut out = assume::of_leaves(self.f, self.d, &r.rests_on, sampled, &solved, &at);
        out.extend(r.keyed.map(|key| assume::same_key(self.f, key)));
        // a stated condition: the finding holds for the values it names, not for every launch
        out.extend(r.when.iter().flat_map(|w| w.params().into_iter().map(|p| (p.to_string(), w.example()))).map(|(name, sample)| {
            let param = self.f.param_of_label(&name).map(|p| (p, 0));
            Assumption { name, kind: Assumed::Condition, ptx_line: None, sample, alignment: false, known: Vec::new(), param }
        }));
        out
    }

    /// What a branch's split count rests on: the values it was found with,
    /// but a block index (the count is for that block) and a loop
    /// counter's value from a start and step the kernel fixes (the count
    /// is for that iteration: a value the counter takes, not a guess).
    pub fn branch_assumes(&self, b: &BranchFact) -> Vec<Assumption> {
        let Split::Exact { witness, .. } = &b.split else { return Vec::new() };
        let guessed: Vec<(crate::ir::ValueId, i64)> =
            witness.iter().copied().filter(|&(v, _)| !assume::iteration_or_block(self.f, self.d, v)).collect();
        assume::of_samples(self.f, self.d, &guessed, b.br.inst)
    }

    /// The access a race's `first` or `second` names: one of `accesses`,
    /// then one of `placed`.
    pub fn race_site(&self, k: usize) -> &Access {
        match k.checked_sub(self.accesses.len()) {
            Some(x) => &self.placed[x],
            None => &self.accesses[k].access,
        }
    }

    /// The fact of the divergent branch ending block `b`, if any.
    pub fn branch_of_block(&self, b: BlockId) -> Option<&BranchFact> {
        self.branch_at[b].map(|k| &self.branches[k as usize])
    }

    /// How often access `x` issues in one block of the kernel, in warp
    /// requests (the warps running its block, over the iterations of the
    /// loops around it; loops of unknown trip count as symbols).
    pub fn issued(&self, x: &AccessFact) -> Option<&slots::Slots> {
        self.lane_slots.issued(self.f.cfg.block_of(x.access.inst))
    }

    /// Access `x`'s cost beyond its ideal as a share of its space's
    /// predicted cost in one block of the kernel (global sectors, shared
    /// transactions): lowest and highest over the trip counts not known,
    /// per iteration of those around it ([`slots::share`]).
    pub fn impact(&self, x: &AccessFact) -> Option<(f64, f64)> {
        let (extra, total) = slots::excess(x, &self.memory_cost)?;
        let mut part = slots::Slots::default();
        part.add_scaled(self.issued(x)?, extra);
        slots::share(&part, total)
    }

    /// The share of the kernel's lane-slots the branch ending block `b`
    /// leaves idle (lowest, highest over unknown trip counts).
    pub fn idle_share_of_block(&self, b: BlockId) -> Option<(f64, f64)> {
        self.lane_slots.share_range(self.branch_at[b]? as usize)
    }
}

/// Every global and shared access of `f` with its prediction for the
/// threads that run it. Global accesses are also predicted in a block past
/// the first (`by_block`: the values computed from `%ctaid`): an interior
/// one, where a boundary guard may let through lanes that block 0 masks, or
/// the block's offset may move the addresses within their sectors.
fn access_facts(
    f: &FunctionIr<'_>,
    d: &Divergence,
    evals: &Evals<'_, '_>,
    branches: &[BranchFact],
    lanes: &mut Lanes<'_, '_, '_>,
    by_block: &BitSet,
) -> Vec<AccessFact> {
    let shape = evals.shape;
    let mut interior = (by_block.count() > 0).then(|| Lanes::of_block(evals, branches, [1; 3], Some(by_block.clone())));
    // (sized for every access: a device function's through its arguments are not among them)
    let mut out = Vec::with_capacity(crate::memory::accesses_of(f).count());
    out.extend(crate::memory::accesses(f, d).map(|access| {
        let block = f.cfg.block_of(access.inst);
        let mask = lanes.active(block, 0);
        let mut prediction = crate::memory::predict(evals, &access, &mask, 0);
        if let (Some(p), Some(inner), Space::Global) = (&mut prediction, &mut interior, access.space) {
            // the same lanes at the same offset in their sectors cost the same
            let inner_mask = inner.active(block, 0);
            if inner_mask != mask || !crate::memory::same_sector_offset(evals, &access) {
                if let Some(q) = crate::memory::predict(evals, &access, &inner_mask, 1) {
                    p.with_interior(q);
                }
            }
        }
        let masked = mask.iter().any(|on| !on);
        let unmasked = (masked && access.space == Space::Global)
            .then(|| crate::memory::predict(evals, &access, &vec![true; shape.threads()], 0))
            .flatten()
            .map(|p| (p.sectors.0, p.ideal));
        let reached = mask.iter().any(|&on| on);
        AccessFact { access, prediction, unmasked, group: None, reached }
    }));
    out.shrink_to_fit();
    out
}

/// The divergent barriers a thread-dependent branch decides, with the
/// branch's successors from which the barrier is not reached: the races
/// check attributes the races that come from skipping them.
fn skipped_barriers(f: &FunctionIr<'_>, branches: &[BranchFact], barriers: &[BarrierFact]) -> Vec<SkippedBarrier> {
    let cfg = &f.cfg;
    barriers
        .iter()
        .enumerate()
        .filter_map(|(barrier, bar)| {
            let BarrierCause::Branch(k) = bar.divergence? else { return None };
            let br = branches[k].br;
            let target = cfg.block_of(bar.inst);
            let stop = cfg.ipdom(br.block);
            let skips: Vec<BlockId> =
                cfg.blocks[br.block].succs.iter().copied().filter(|&s| cfg.region(&[s], stop).binary_search(&target).is_err()).collect();
            (!skips.is_empty()).then_some(SkippedBarrier { barrier, branch: br.block, skips })
        })
        .collect()
}
