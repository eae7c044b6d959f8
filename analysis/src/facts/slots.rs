//! Lane-slots: what one block of the kernel issues, counted as warp
//! instructions times the 32 lanes of a warp, and the slots each
//! divergent branch leaves idle — the lanes of a split warp that wait
//! while the others run their side.
//!
//! A branch that splits a warp costs the instructions of each side times
//! the lanes on the other side, in every execution that splits (over the
//! iterations of the loop around it, where its trip count is known); a
//! loop's exit test that lets part of a warp leave costs the loop's body
//! times the lanes that left, in each iteration the others still run (the
//! tail). Which threads run each block comes from `lanes` (block 0, every
//! thread evaluated); the innermost loop around a block is counted
//! iteration by iteration when its trip count is a constant (at most
//! [`ITERATED`]; a longer one as its first iteration times the count) or
//! its exit test is followed thread by thread, and the loops around it
//! multiply by their whole trip counts (all counters are evaluated at one
//! iteration index, so only the innermost loop is exact); a loop whose
//! trip count is not known is a symbol, so that a share of the kernel is a
//! range over every trip count it may take ([`share`]). A call counts as
//! one instruction. The same counts weigh each access's memory cost
//! ([`MemoryCost`], an access's impact).
//!
//! Owns: the lane-slot model and the weights of the memory cost. Does not
//! own: which threads run a block
//! (`lanes`), trip counts (`crate::ir::loops`), what share is worth a
//! warning (`crate::lints::divergent_branch`).

use super::lanes::Lanes;
use super::BranchFact;
use crate::ir::{BlockId, FunctionIr, IdVec, LoopId};
use crate::memory::Evals;
use crate::model::WARP;
use std::rc::Rc;

/// Loops with a constant trip count up to this many are counted iteration
/// by iteration.
pub const ITERATED: usize = 64;

/// A number of lane-slots: a sum of terms, each a constant times the trip
/// counts of loops whose trip count is not known.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Slots {
    terms: Vec<(f64, Vec<LoopId>)>,
}

impl Slots {
    fn add(&mut self, c: f64, unknown: &[LoopId]) {
        if c == 0.0 {
            return;
        }
        let mut key = unknown.to_vec();
        key.sort_unstable();
        match self.terms.iter_mut().find(|t| t.1 == key) {
            Some(t) => t.0 += c,
            None => self.terms.push((c, key)),
        }
    }

    /// Add `o`'s terms.
    pub fn add_all(&mut self, o: &Slots) {
        self.add_scaled(o, 1.0);
    }

    /// Add `o`'s terms times `c`.
    pub fn add_scaled(&mut self, o: &Slots, c: f64) {
        for (x, l) in &o.terms {
            self.add(x * c, l);
        }
    }

    pub fn is_zero(&self) -> bool {
        self.terms.iter().all(|t| t.0 == 0.0)
    }

    /// The loops whose unknown trip count it depends on, sorted.
    pub fn unknown_loops(&self) -> Vec<LoopId> {
        let mut v: Vec<LoopId> = self.terms.iter().flat_map(|t| t.1.iter().copied()).collect();
        v.sort_unstable();
        v.dedup();
        v
    }

    /// Its value with the unknown loops' trip counts given by `trips`.
    pub fn at(&self, trips: &dyn Fn(LoopId) -> f64) -> f64 {
        self.terms.iter().map(|(c, l)| c * l.iter().map(|&x| trips(x)).product::<f64>()).sum()
    }

    /// Its value when no trip count is unknown.
    pub fn known(&self) -> Option<f64> {
        self.unknown_loops().is_empty().then(|| self.at(&|_| 1.0))
    }
}

/// `part`'s share of `whole` over every trip count (one or more) the
/// loops it does not know may run: the lowest and the highest. A ratio of
/// sums that are linear in each trip count is monotone in each, so the
/// extremes lie where every count is 1 or unbounded; `None` when more than
/// six trip counts are unknown, or `whole` is zero.
pub fn share_range(part: &Slots, whole: &Slots) -> Option<(f64, f64)> {
    corners(part, whole, &[])
}

/// `part`'s share of `whole` per iteration of the loops whose unknown trip
/// count `part` depends on (those counts unbounded: the share the loop
/// approaches as it runs longer), over every trip count of the other
/// unknown loops: the lowest and the highest.
pub fn share(part: &Slots, whole: &Slots) -> Option<(f64, f64)> {
    corners(part, whole, &part.unknown_loops())
}

/// The extremes of `part / whole` with the loops in `large` unbounded and
/// every other unknown loop at 1 or unbounded.
fn corners(part: &Slots, whole: &Slots, large: &[LoopId]) -> Option<(f64, f64)> {
    let mut loops = part.unknown_loops();
    loops.extend(whole.unknown_loops());
    loops.sort_unstable();
    loops.dedup();
    loops.retain(|l| !large.contains(l));
    if loops.len() > 6 {
        return None;
    }
    // "unbounded": large enough that the lower terms vanish
    const LARGE: f64 = 1e9;
    let (mut low, mut high) = (f64::INFINITY, f64::NEG_INFINITY);
    for corner in 0..1u32 << loops.len() {
        let trips = |l: LoopId| match loops.iter().position(|&x| x == l) {
            Some(k) if corner & (1 << k) != 0 => LARGE,
            Some(_) => 1.0,
            None => LARGE,
        };
        let w = whole.at(&trips);
        if w <= 0.0 {
            return None;
        }
        let r = (part.at(&trips) / w).clamp(0.0, 1.0) + 0.0;
        low = low.min(r);
        high = high.max(r);
    }
    Some((low, high))
}

/// The kernel's lane-slots and what each branch leaves idle.
#[derive(Clone, Debug, Default)]
pub struct LaneSlots {
    /// What one block issues: its warps' instructions times 32 lanes.
    pub kernel: Slots,
    /// Per branch (`KernelFacts::branches` index): the slots its splits
    /// leave idle in one block; `None` where the threads taking it are not
    /// known in every iteration.
    pub idle: Vec<Option<Slots>>,
    /// The blocks asked for (those holding a memory access), sorted, each
    /// with how often its instructions issue in one block of the kernel,
    /// in warps (over the iterations of the loops around it).
    pub issued: Vec<(BlockId, Slots)>,
}

impl LaneSlots {
    /// How often block `b` issues, in warps, if it was asked for.
    pub fn issued(&self, b: BlockId) -> Option<&Slots> {
        self.issued.binary_search_by_key(&b, |x| x.0).ok().map(|k| &self.issued[k].1)
    }

    /// Branch `k`'s idle slots as a share of the kernel's (lowest, highest
    /// over the unknown trip counts: [`share_range`]).
    pub fn share_range(&self, k: usize) -> Option<(f64, f64)> {
        share_range(self.idle.get(k)?.as_ref()?, &self.kernel)
    }
}

/// How often the blocks of a loop run: per iteration, the threads in it.
enum Runs {
    /// A constant trip count: iterations (counted one by one up to
    /// [`ITERATED`]) and a factor for the rest.
    Known { iterations: usize, factor: f64 },
    /// An exit test whose threads are all known, followed until every
    /// thread has left: the threads that stay in each iteration.
    Tracked(Vec<Rc<Vec<bool>>>),
    /// Not known: a symbol, its first iteration standing for each.
    Unknown,
}

struct Model<'m, 'f, 'a, 'b> {
    f: &'f FunctionIr<'a>,
    branches: &'b [BranchFact],
    lanes: &'m mut Lanes<'f, 'a, 'b>,
    runs: IdVec<LoopId, Runs>,
}

/// Count the kernel's lane-slots, each branch's idle ones, and how often
/// each block of `asked` issues (sorted, without repeats).
pub(super) fn lane_slots<'f, 'a, 'b>(
    evals: &'b Evals<'f, 'a>,
    branches: &'b [BranchFact],
    lanes: &mut Lanes<'f, 'a, 'b>,
    asked: &[BlockId],
) -> LaneSlots {
    let f = evals.f;
    let cfg = &f.cfg;
    let mut runs = IdVec::with_capacity(cfg.loops.len());
    for l in cfg.loops.keys() {
        let r = match tracked(f, branches, lanes, l) {
            Some(t) => Runs::Tracked(t),
            None => match evals.trips(l) {
                Some(crate::ir::loops::Trips::Known(n)) if n <= ITERATED => Runs::Known { iterations: n, factor: 1.0 },
                Some(crate::ir::loops::Trips::Known(n)) => Runs::Known { iterations: 1, factor: n as f64 },
                _ => Runs::Unknown,
            },
        };
        runs.push(r);
    }
    let mut m = Model { f, branches, lanes, runs };
    let mut kernel = Slots::default();
    let mut issued = Vec::with_capacity(asked.len());
    for b in cfg.blocks.keys().filter(|&b| cfg.reachable(b)) {
        let (count, unknown) = m.issued(b);
        kernel.add(count * WARP as f64 * insts(f, b), &unknown);
        if asked.binary_search(&b).is_ok() {
            let mut x = Slots::default();
            x.add(count, &unknown);
            issued.push((b, x));
        }
        if let Some(l) = cfg.loop_of(b) {
            let n = m.iterations(l);
            m.lanes.forget_later_iterations(b, n);
        }
    }
    let idle = (0..branches.len()).map(|k| m.idle(k)).collect();
    LaneSlots { kernel, idle, issued }
}

fn insts(f: &FunctionIr<'_>, b: BlockId) -> f64 {
    f.cfg.blocks[b].insts().len() as f64
}

/// Warps with a thread set in `threads`, counted per warp.
fn warps_with(threads: &[bool]) -> impl Iterator<Item = &[bool]> {
    threads.chunks(WARP).filter(|w| w.iter().any(|&x| x))
}

/// A loop's exit test that is a divergent branch whose direction is known
/// in every thread and iteration: the threads that stay in the loop after
/// each iteration's test, until none does (at most [`ITERATED`]
/// iterations; the directions asked for on the way are forgotten).
fn tracked(f: &FunctionIr<'_>, branches: &[BranchFact], lanes: &mut Lanes<'_, '_, '_>, l: LoopId) -> Option<Vec<Rc<Vec<bool>>>> {
    let e = f.loops.exit(l)?;
    let k = branches.iter().position(|b| b.br.block == e.block)?;
    let target_leaves = f.branch_target(branches[k].br.inst).is_some_and(|t| !f.cfg.in_loop(t, l));
    let mut inside: Vec<bool> = lanes.active(e.block, 0).as_ref().clone();
    let mut out = Vec::new();
    let mut done = false;
    for it in 0..ITERATED {
        let Some(taken) = lanes.direction(k, it) else { break };
        for (x, t) in inside.iter_mut().zip(taken.iter()) {
            *x &= *t != target_leaves;
        }
        if !inside.iter().any(|&x| x) {
            done = true;
            break;
        }
        out.push(Rc::new(inside.clone()));
    }
    lanes.forget_later_directions(k, ITERATED);
    done.then_some(out)
}

impl Model<'_, '_, '_, '_> {
    /// How often block `b`'s instructions issue in one block of the
    /// kernel, in warps (each warp with a thread running it, over the
    /// iterations of the loops around), times the listed unknown trip
    /// counts.
    fn issued(&mut self, b: BlockId) -> (f64, Vec<LoopId>) {
        let loops = self.f.cfg.loops_containing(b);
        let (mut factor, mut unknown) = self.around(&loops);
        let count = match loops.first() {
            None => warps_with(&self.lanes.active(b, 0)).count() as f64,
            Some(&l) => {
                let mut n = 0.0;
                for it in 0..self.iterations(l) {
                    n += warps_with(&self.in_iteration(b, l, it)).count() as f64;
                }
                self.outer(l, &mut factor, &mut unknown);
                n
            }
        };
        (count * factor, unknown)
    }

    /// Iterations of loop `l` counted one by one.
    fn iterations(&self, l: LoopId) -> usize {
        match &self.runs[l] {
            Runs::Known { iterations, .. } => *iterations,
            Runs::Tracked(t) => t.len(),
            Runs::Unknown => 1,
        }
    }

    /// What loop `l` multiplies beyond the iterations counted one by one.
    fn outer(&self, l: LoopId, factor: &mut f64, unknown: &mut Vec<LoopId>) {
        match &self.runs[l] {
            Runs::Known { factor: x, .. } => *factor *= x,
            Runs::Tracked(_) => {}
            Runs::Unknown => unknown.push(l),
        }
    }

    /// How many times loop `l` runs its body (for warp `w` alone: the
    /// iterations in which a thread of it is still in the loop), as a
    /// factor or, unknown, a symbol.
    fn trips(&self, l: LoopId, w: Option<usize>, factor: &mut f64, unknown: &mut Vec<LoopId>) {
        match (&self.runs[l], w) {
            (Runs::Known { iterations, factor: x }, _) => *factor *= *iterations as f64 * x,
            (Runs::Tracked(t), None) => *factor *= t.len() as f64,
            (Runs::Tracked(t), Some(w)) => {
                *factor *= t.iter().filter(|s| s.chunks(WARP).nth(w).is_some_and(|x| x.iter().any(|&y| y))).count() as f64
            }
            (Runs::Unknown, _) => unknown.push(l),
        }
    }

    /// The whole trip counts of the loops around the innermost of `loops`
    /// (innermost first, as `Cfg::loops_containing` gives them).
    fn around(&self, loops: &[LoopId]) -> (f64, Vec<LoopId>) {
        let (mut factor, mut unknown) = (1.0, Vec::new());
        for &l in loops.iter().skip(1) {
            self.trips(l, None, &mut factor, &mut unknown);
        }
        (factor, unknown)
    }

    /// The threads running block `b` (in loop `l`) in iteration `it`.
    fn in_iteration(&mut self, b: BlockId, l: LoopId, it: usize) -> Vec<bool> {
        let mut on = self.lanes.active(b, it).as_ref().clone();
        if let Runs::Tracked(t) = &self.runs[l] {
            for (x, y) in on.iter_mut().zip(t[it].iter()) {
                *x &= *y;
            }
        }
        on
    }

    /// Branch `k`'s idle lane-slots in one block.
    fn idle(&mut self, k: usize) -> Option<Slots> {
        let f = self.f;
        let cfg = &f.cfg;
        let br = self.branches[k].br;
        let a = br.block;
        let l = cfg.loop_of(a);
        // a loop's exit: the lanes that left wait through the others' iterations
        if let Some(l) = l.filter(|&l| cfg.leaves(a, l)) {
            let Runs::Tracked(t) = &self.runs[l] else { return None };
            if f.loops.exit(l).map(|e| e.block) != Some(a) {
                return None;
            }
            let stays = t.clone();
            let entered = self.lanes.active(a, 0);
            let (factor, unknown) = self.around(&cfg.loops_containing(a));
            let body: Vec<BlockId> = cfg.loops[l].blocks.clone();
            let mut idle = Slots::default();
            for (it, stay) in stays.iter().enumerate() {
                for (w, (e, s)) in entered.chunks(WARP).zip(stay.chunks(WARP)).enumerate() {
                    let (entered, staying) = (e.iter().filter(|&&x| x).count(), s.iter().filter(|&&x| x).count());
                    if staying == 0 || staying == entered {
                        continue;
                    }
                    for &b in &body {
                        let (c, mut u) = self.inner(b, Some(l), w, it);
                        u.extend(&unknown);
                        idle.add(c * factor * (entered - staying) as f64, &u);
                    }
                }
            }
            return Some(idle);
        }
        let crate::divergence::split::Split::Exact { .. } = self.branches[k].split else { return None };
        let sides = self.lanes.sides_of(k);
        let (mut factor, mut unknown) = self.around(&cfg.loops_containing(a));
        let iterations = match l {
            Some(l) => {
                self.outer(l, &mut factor, &mut unknown);
                self.iterations(l)
            }
            None => 1,
        };
        let mut idle = Slots::default();
        for it in 0..iterations {
            let taken = self.lanes.direction(k, it).or_else(|| self.lanes.direction(k, 0))?;
            let at = match l {
                Some(l) => self.in_iteration(a, l, it),
                None => self.lanes.active(a, 0).as_ref().clone(),
            };
            for (w, (t, on)) in taken.chunks(WARP).zip(at.chunks(WARP)).enumerate() {
                let yes = t.iter().zip(on).filter(|(t, on)| **t && **on).count();
                let no = on.iter().filter(|&&x| x).count() - yes;
                if yes == 0 || no == 0 {
                    continue;
                }
                // each side's instructions, with the other side's lanes idle
                for (region, waiting) in [(&sides.0, no), (&sides.1, yes)] {
                    for b in region.iter() {
                        let (c, mut u) = self.inner(b, l, w, it);
                        u.extend(&unknown);
                        idle.add(c * factor * waiting as f64, &u);
                    }
                }
            }
        }
        // (what the iterations past the first asked for is not asked again)
        self.lanes.forget_later_directions(k, iterations);
        for b in sides.0.iter().chain(sides.1.iter()) {
            self.lanes.forget_later_iterations(b, iterations);
        }
        Some(idle)
    }

    /// Block `b`'s instructions that warp `w` issues in iteration `it` of
    /// loop `l` (`None`: outside any loop): none when no thread of the warp
    /// runs it, times the trip counts of the loops inside `l` around it.
    fn inner(&mut self, b: BlockId, l: Option<LoopId>, w: usize, it: usize) -> (f64, Vec<LoopId>) {
        let cfg = &self.f.cfg;
        let on = self.lanes.active(b, it);
        if !on.chunks(WARP).nth(w).is_some_and(|x| x.iter().any(|&x| x)) {
            return (0.0, Vec::new());
        }
        let (mut factor, mut unknown) = (1.0, Vec::new());
        for &x in cfg.loops_containing(b).iter().take_while(|&&x| Some(x) != l) {
            self.trips(x, Some(w), &mut factor, &mut unknown);
        }
        (insts(self.f, b) * factor, unknown)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_range_over_unknown_trip_counts() {
        let (l, m) = (LoopId::new(0), LoopId::new(1));
        // 10 idle slots per iteration of loop l; the kernel: 100 outside it, 40 per iteration
        let mut idle = Slots::default();
        idle.add(10.0, &[l]);
        let mut kernel = Slots::default();
        kernel.add(100.0, &[]);
        kernel.add(40.0, &[l]);
        let close = |a: f64, b: f64| (a - b).abs() < 1e-6;
        // one iteration: 10 / 140; unbounded: 10 / 40
        let (lo, hi) = share_range(&idle, &kernel).unwrap();
        assert!(close(lo, 10.0 / 140.0) && close(hi, 0.25), "{lo} {hi}");
        // as the loop the idle slots depend on runs longer: its limit
        let (lo, hi) = share(&idle, &kernel).unwrap();
        assert!(close(lo, 0.25) && close(hi, 0.25), "{lo} {hi}");
        // another loop of unknown count in the kernel: the range over its counts
        kernel.add(50.0, &[m]);
        let (lo, hi) = share(&idle, &kernel).unwrap();
        assert!(close(lo, 10.0 / 90.0) && close(hi, 0.25), "{lo} {hi}");
        assert_eq!(kernel.known(), None);
        assert_eq!(kernel.unknown_loops(), [l, m]);
    }
}

/// What the accesses of one block of the kernel cost the memory system,
/// each weighted by how often it issues ([`LaneSlots::issued`]): global
/// sectors and shared-memory transactions (a conflict's replays
/// included), over the accesses with a prediction.
#[derive(Clone, Debug, Default)]
pub struct MemoryCost {
    pub global_sectors: Slots,
    pub shared_transactions: Slots,
}

/// An access's cost beyond its ideal (sectors past the ideal, a
/// conflict's replays), per request; and its space's total, to take a
/// share of.
pub fn excess<'c>(x: &crate::memory::AccessFact, cost: &'c MemoryCost) -> Option<(f64, &'c Slots)> {
    let p = x.prediction.as_ref()?;
    match x.access.space {
        crate::ir::inst::Space::Global => Some((p.sectors.0.saturating_sub(p.ideal) as f64, &cost.global_sectors)),
        crate::ir::inst::Space::Shared => Some((p.conflict.0.saturating_sub(1) as f64, &cost.shared_transactions)),
        _ => None,
    }
}

/// The memory cost of `accesses`, each weighted by how often its block
/// issues.
pub(super) fn memory_cost(f: &FunctionIr<'_>, accesses: &[crate::memory::AccessFact], slots: &LaneSlots) -> MemoryCost {
    let mut cost = MemoryCost::default();
    for x in accesses {
        let (Some(p), Some(n)) = (&x.prediction, slots.issued(f.cfg.block_of(x.access.inst))) else { continue };
        match x.access.space {
            crate::ir::inst::Space::Global => cost.global_sectors.add_scaled(n, p.sectors.0 as f64),
            crate::ir::inst::Space::Shared => cost.shared_transactions.add_scaled(n, p.conflict.0.max(1) as f64),
            _ => {}
        }
    }
    cost
}
