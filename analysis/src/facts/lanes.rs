//! Active lanes: the threads of the block that execute a block of the
//! CFG, as far as thread-only branch conditions tell (evaluated for every
//! thread, loop counters at the iteration asked for; loop exits and
//! conditions that cannot be evaluated do not restrict; a branch restricts
//! only the threads that execute it, not those reaching the block by a path
//! around it), starting from the calling threads in a call context; for
//! block 0, or another block (branches on the block index taken as that
//! block takes them).
//!
//! A witness's way (`passed`): the branch outcomes and loop exit tests a
//! thread goes through to a block in an iteration whose condition is not
//! known for it — what `facts::witness` solves for.
//!
//! Owns: the active-lane computation, memoised per block and iteration, and
//! witnesses' ways.
//! Does not own: evaluating conditions (`crate::memory::Evals`).

use super::BranchFact;
use crate::ir::cfg::BlockSet;
use crate::ir::dataflow::BitSet;
use crate::ir::{BlockId, FunctionIr, IdVec};
use crate::memory::{Evals, Query};
use crate::model::Shape;
use rustc_hash::FxHashMap;
use std::rc::Rc;

/// Which threads execute each block (memoised per block and iteration).
pub(super) struct Lanes<'f, 'a, 'b> {
    f: &'f FunctionIr<'a>,
    shape: &'f Shape,
    evals: &'b Evals<'f, 'a>,
    branches: &'b [BranchFact],
    /// Thread directions of each divergent branch per iteration, where
    /// known (`None`: not evaluable in any thread).
    directions: FxHashMap<(BlockId, usize), Option<Known>>,
    /// Every distinct list in `directions`, kept once: many branches
    /// split the threads alike (`t & 1`, `t < n`).
    distinct_directions: crate::ir::entity::Shared<Known>,
    /// Blocks reachable from each branch's taken side and from its other side.
    sides: FxHashMap<usize, Rc<Sides>>,
    /// The evaluable branches (indices) controlling each block.
    controllers: Option<IdVec<BlockId, Vec<usize>>>,
    /// What [`Self::deciding`] gave a witness's way, per block and iteration.
    on_the_way: FxHashMap<(BlockId, usize), Rc<Vec<Decides>>>,
    memo: FxHashMap<(BlockId, usize), Threads>,
    /// Every distinct set of threads in `memo`, kept once: most blocks
    /// share theirs with others (all threads, one side of a branch).
    distinct: rustc_hash::FxHashSet<Distinct>,
    /// Blocks whose threads are being computed (a branch's own threads are
    /// asked for on the way; a loop may lead back).
    computing: rustc_hash::FxHashSet<(BlockId, usize)>,
    /// The block whose threads these are (its index in each dimension).
    ctaid: [i64; 3],
    /// For a block past the first: the values computed from `%ctaid`
    /// (a condition that is not one is block 0's, evaluated once).
    by_block: Option<BitSet>,
    /// The blocks (and iterations) [`Self::passed`] has been through, kept
    /// between its calls (emptied, not made again: two calls per race).
    way_seen: rustc_hash::FxHashSet<(BlockId, usize)>,
}

/// A branch deciding whether threads execute a block: which
/// (`Lanes::branches` index), the iteration whose test it is, and the side
/// a thread takes to get there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Decides {
    pub branch: usize,
    pub iteration: usize,
    pub side: bool,
}

/// One flag per thread of the block.
pub(super) type Threads = Rc<Vec<bool>>;

/// A set of threads as [`Lanes`] keeps each distinct one: hashed by its
/// flags' bytes at once (a block's thousand flags one by one cost more
/// than the rest of their computation).
#[derive(PartialEq, Eq)]
struct Distinct(Threads);

impl std::hash::Hash for Distinct {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        h.write(bool_bytes(&self.0));
    }
}

/// The flags as bytes (0 or 1 each).
fn bool_bytes(flags: &[bool]) -> &[u8] {
    // SAFETY: `bool` has the size and alignment of `u8`, and every `bool` is a valid `u8`
    unsafe { std::slice::from_raw_parts(flags.as_ptr().cast::<u8>(), flags.len()) }
}

/// A branch's direction per thread, where known.
type Known = Rc<Vec<Option<bool>>>;

/// The blocks of a branch's taken side and of its other side.
type Sides = (BlockSet, BlockSet);

impl<'f, 'a, 'b> Lanes<'f, 'a, 'b> {
    /// The threads of block 0.
    pub fn new(evals: &'b Evals<'f, 'a>, branches: &'b [BranchFact]) -> Self {
        Self::of_block(evals, branches, [0; 3], None)
    }

    /// The threads of block `ctaid` (its index in each dimension);
    /// `by_block`: the values computed from `%ctaid` ([`block_index_values`]).
    pub fn of_block(evals: &'b Evals<'f, 'a>, branches: &'b [BranchFact], ctaid: [i64; 3], by_block: Option<BitSet>) -> Self {
        let (f, shape) = (evals.f, evals.shape);
        Lanes {
            f,
            shape,
            evals,
            branches,
            directions: FxHashMap::default(),
            distinct_directions: Default::default(),
            sides: FxHashMap::default(),
            controllers: None,
            on_the_way: FxHashMap::default(),
            memo: FxHashMap::default(),
            distinct: Default::default(),
            computing: Default::default(),
            ctaid,
            by_block,
            way_seen: Default::default(),
        }
    }

    /// Which threads take divergent branch `k` in the given iteration of
    /// its loops (`None` unless every thread's direction is known).
    pub fn direction(&mut self, k: usize, iteration: usize) -> Option<Threads> {
        let known = self.direction_where_known(k, iteration)?;
        // (sized once: collected through `Option`, the list would grow from nothing)
        let mut out = Vec::with_capacity(known.len());
        for t in known.iter() {
            out.push((*t)?);
        }
        Some(Rc::new(out))
    }

    /// The direction branch `k` takes in each thread where the condition's
    /// known parts decide it (`t != 0 || !flag` for a loaded `flag`: taken
    /// in every thread but 0), `None` in the others.
    fn direction_where_known(&mut self, k: usize, iteration: usize) -> Option<Known> {
        let br = self.branches[k].br;
        let evals = self.evals;
        let ctaid = match &self.by_block {
            Some(vals) if !vals.contains(br.cond.index()) => [0; 3],
            _ => self.ctaid,
        };
        if let Some(known) = self.directions.get(&(br.block, iteration)) {
            return known.clone();
        }
        let q = Query { leading: None, ctaid, scalar: None, iteration, pin: None };
        let side = |c: i64| (c != 0) != br.negated;
        // known in every thread (most conditions): read as it is, not first made a list of
        // values each known (`eval_partial` gives those where it is not)
        let known: Option<Known> = match evals.eval(br.cond, q) {
            Some(c) => (!c.is_empty()).then(|| Rc::new(c.iter().map(|&c| Some(side(c))).collect())),
            None => evals.eval_partial(br.cond, q).map(|c| Rc::new(c.iter().map(|c| c.map(side)).collect())),
        };
        let known = known.map(|k| self.distinct_directions.share(k));
        self.directions.insert((br.block, iteration), known.clone());
        known
    }

    /// Blocks reachable from branch `k`'s taken side and from its other
    /// side without passing its immediate post-dominator, sorted.
    pub(super) fn side(&mut self, k: usize) -> Rc<Sides> {
        if let Some(s) = self.sides.get(&k) {
            return s.clone();
        }
        let s = Rc::new(self.sides_of(k));
        self.sides.insert(k, s.clone());
        s
    }

    pub(super) fn sides_of(&self, k: usize) -> Sides {
        let cfg = &self.f.cfg;
        let br = self.branches[k].br;
        let stop = cfg.ipdom(br.block);
        let target = self.f.branch_target(br.inst);
        let taken: Vec<BlockId> = target.into_iter().collect();
        let fall: Vec<BlockId> = cfg.blocks[br.block].succs.iter().copied().filter(|&s| Some(s) != target).collect();
        let set = |from: &[BlockId]| BlockSet::new(cfg.region(from, stop), cfg.len());
        (set(&taken), set(&fall))
    }

    /// The threads that execute block `b` in the first iteration when
    /// every thread-dependent branch deciding it is evaluated in every
    /// thread (`None` when one is not: [`Self::active`] then includes
    /// threads that may not run it).
    pub fn active_exactly(&mut self, b: BlockId) -> Option<Threads> {
        for k in 0..self.branches.len() {
            if self.branches[k].controls(b) && self.direction(k, 0).is_none() {
                return None;
            }
        }
        Some(self.active(b, 0))
    }

    pub fn active(&mut self, b: BlockId, iteration: usize) -> Threads {
        if let Some(v) = self.memo.get(&(b, iteration)) {
            return v.clone();
        }
        if !self.computing.insert((b, iteration)) {
            // around a loop back to a block being computed: every thread may be there
            return Rc::new(vec![true; self.shape.threads()]);
        }
        let v = Distinct(Rc::new(self.compute(b, iteration)));
        let v = match self.distinct.get(&v) {
            Some(same) => same.0.clone(),
            None => {
                let kept = v.0.clone();
                self.distinct.insert(v);
                kept
            }
        };
        self.computing.remove(&(b, iteration));
        self.memo.insert((b, iteration), v.clone());
        v
    }

    fn compute(&mut self, b: BlockId, iteration: usize) -> Vec<bool> {
        // the calling threads, in a call context
        let threads = self.shape.threads();
        let mut active = self.evals.d.call.active.clone().filter(|a| a.len() == threads).unwrap_or_else(|| vec![true; threads]);
        for &d in self.deciding(b, iteration, false).iter() {
            let Some(taken) = self.direction_where_known(d.branch, d.iteration) else { continue };
            // only the threads that execute the branch chose a side there: another
            // thread may reach `b` by a path around it (`if (t == 0) … else if (t == 1) …`
            // joined in one store)
            let at = self.active(self.branches[d.branch].br.block, d.iteration);
            for ((a, t), at) in active.iter_mut().zip(taken.iter()).zip(at.iter()) {
                *a &= !*at || t.is_none_or(|t| t == d.side);
            }
        }
        active
    }

    /// The branches that decide which threads execute block `b` in
    /// `iteration`: the evaluable branches controlling it (not its own,
    /// not its loops' exits), with the side leading to `b`; with `all`
    /// (a witness's way), also those whose condition cannot be evaluated
    /// in any thread and the exit tests of its innermost loop
    /// ([`Self::exit_tests`]), which the lanes do not apply.
    fn deciding(&mut self, b: BlockId, iteration: usize, all: bool) -> Rc<Vec<Decides>> {
        if all {
            if let Some(d) = self.on_the_way.get(&(b, iteration)) {
                return d.clone();
            }
        }
        let d = Rc::new(self.deciding_now(b, iteration, all));
        if all {
            self.on_the_way.insert((b, iteration), d.clone());
        }
        d
    }

    fn deciding_now(&mut self, b: BlockId, iteration: usize, all: bool) -> Vec<Decides> {
        let cfg = &self.f.cfg;
        if self.controllers.is_none() {
            // only branches whose condition can be evaluated restrict the lanes
            let mut by_block: IdVec<BlockId, Vec<usize>> = IdVec::filled(cfg.len(), Vec::new());
            for k in 0..self.branches.len() {
                if self.direction_where_known(k, 0).is_none() && self.direction_where_known(k, 1).is_none() {
                    continue;
                }
                for x in self.branches[k].controlled() {
                    by_block[x].push(k);
                }
            }
            self.controllers = Some(by_block);
        }
        let controllers: Vec<usize> = match all {
            // a witness passes those that restrict no lanes too (asked once per block: `on_the_way`)
            true => (0..self.branches.len()).filter(|&k| self.branches[k].controls(b)).collect(),
            false => self.controllers.as_ref().map(|c| c[b].clone()).unwrap_or_default(),
        };
        let mut out = Vec::new();
        for k in controllers {
            let br = self.branches[k].br;
            if br.block == b {
                continue;
            }
            let loop_exit = cfg.loops_containing(br.block).iter().any(|&l| cfg.in_loop(b, l) && cfg.leaves(br.block, l));
            if loop_exit {
                continue;
            }
            let sides = self.side(k);
            let (taken_region, fall_region) = sides.as_ref();
            let side = match (taken_region.contains(b), fall_region.contains(b)) {
                (true, false) => true,
                (false, true) => false,
                _ => continue,
            };
            out.push(Decides { branch: k, iteration, side });
        }
        if all {
            out.extend(self.exit_tests(b, iteration).into_iter().map(|(branch, iteration, side)| Decides { branch, iteration, side }));
        }
        out
    }

    /// The branch outcomes thread `t` passes on its way to block `b` in
    /// `iteration` whose condition is not known for it (an unknown
    /// parameter: the lanes let it through): among the deciding branches
    /// ([`Self::deciding`]) it executes and those on its way to each of
    /// them.
    pub fn passed(&mut self, b: BlockId, iteration: usize, t: usize) -> Vec<Decides> {
        let mut out: Vec<Decides> = Vec::new();
        let mut todo = vec![(b, iteration)];
        let mut seen = std::mem::take(&mut self.way_seen);
        seen.clear();
        while let Some((b, it)) = todo.pop() {
            if !seen.insert((b, it)) {
                continue;
            }
            for &d in self.deciding(b, it, true).iter() {
                let block = self.branches[d.branch].br.block;
                let known = self.direction_where_known(d.branch, d.iteration).and_then(|x| x.get(t).copied().flatten());
                if known.is_none_or(|k| k == d.side) && self.active(block, d.iteration).get(t) == Some(&true) {
                    // (a condition known without samples needs nothing: only the way on)
                    if known.is_none() && !out.contains(&d) {
                        out.push(d);
                    }
                    todo.push((block, d.iteration));
                }
            }
        }
        self.way_seen = seen;
        out
    }

    /// Drop block `b`'s threads in iterations past the first, once counted
    /// (`slots` asks for every block in every iteration of its loop: kept,
    /// they would hold a thread flag per block, iteration and thread).
    pub fn forget_later_iterations(&mut self, b: BlockId, iterations: usize) {
        for it in 1..iterations {
            self.memo.remove(&(b, it));
        }
    }

    /// Drop branch `k`'s directions in iterations past the first, once
    /// followed (`slots` follows a loop's exit test through its iterations).
    pub fn forget_later_directions(&mut self, k: usize, iterations: usize) {
        let b = self.branches[k].br.block;
        for it in 1..iterations {
            // (a list no other direction holds, nor a caller, leaves the distinct ones too)
            if let Some(Some(list)) = self.directions.remove(&(b, it)) {
                if Rc::strong_count(&list) <= 2 {
                    self.distinct_directions.forget(&list);
                }
            }
        }
    }

    /// Drop what witnesses' ways kept ([`Self::passed`]), once they are found.
    pub fn forget_ways(&mut self) {
        self.on_the_way = FxHashMap::default();
    }

    /// The exit tests of the innermost loop around block `b` that a thread
    /// executing `b` in `iteration` has passed: the divergent
    /// branches leaving the loop that run in every iteration (they
    /// dominate its latches), each with the iteration whose test it is
    /// (this one's when it comes before `b`, the previous one's otherwise)
    /// and the direction that stays in the loop.
    fn exit_tests(&self, b: BlockId, iteration: usize) -> Vec<(usize, usize, bool)> {
        let cfg = &self.f.cfg;
        let Some(l) = cfg.loop_of(b) else { return Vec::new() };
        let lp = &cfg.loops[l];
        let mut out = Vec::new();
        for (k, fact) in self.branches.iter().enumerate() {
            let x = fact.br.block;
            let leaves = cfg.leaves(x, l);
            if cfg.loop_of(x) != Some(l) || !leaves || !lp.latches.iter().all(|&la| cfg.dominates(x, la)) {
                continue;
            }
            let stay = self.f.branch_target(fact.br.inst).is_some_and(|t| cfg.in_loop(t, l));
            let it = if x != b && cfg.dominates(x, b) {
                iteration
            } else if iteration >= 1 {
                iteration - 1
            } else {
                continue;
            };
            out.push((k, it, stay));
        }
        out
    }
}
