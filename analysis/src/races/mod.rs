//! Data races within a block (Boyer et al., seed 003; GPUVerify, seed 004).
//!
//! Barrier intervals: from the kernel entry and from every barrier, the
//! memory accesses reachable without crossing another barrier (following
//! loop back edges, so iteration i's last accesses meet iteration i+1's
//! first ones). Two accesses that share an interval may run concurrently in
//! different threads when a barrier-free path leads from one to the other,
//! or a thread-dependent branch leads to each ([`concurrent`]: not through
//! the two sides of a uniform branch). A pair races when, for two different threads of the
//! block that execute them (their thread-only guards, first iteration of
//! loops; loop counters also at their next values, and at every later
//! iteration of a loop whose trip count is known), the byte ranges
//! overlap and at least one access writes; atomics do not race with
//! atomics. Decided over the block's threads, each access's addresses
//! sorted once per address value and swept against the other's (the
//! copies of an access at other constant offsets take the list shifted,
//! [`Sorted`], and two lists at one offset from each other are swept once,
//! [`Sweeps`]); a pair that the
//! sampled parameter values leave apart is solved exactly for a parameter
//! that offsets its index (`param`: the values that race). The accesses
//! of the device functions a kernel calls take part at their calls
//! ([`Imported`]: through the caller's argument, at the callee's per-thread
//! offsets).
//!
//! Owns: intervals, the enumeration of candidate pairs and the conflict
//! check. Does not own: address values and guards (`crate::memory`,
//! `crate::facts`) or messages (lints).

use crate::divergence::eval::Leaves;
use crate::ir::dataflow::{solve, BitSet, Problem};
use crate::ir::space::Space;
use crate::ir::{BlockId, FunctionIr, IdVec, InstId, ValueId};
use crate::memory::{Access, AccessKind, Evals, Query};
use crate::model::{Shape, ShapeSource};
use rustc_hash::{FxHashMap, FxHashSet};
use std::collections::BTreeSet;

mod candidates;
mod lost;
mod marks;
pub mod param;

pub use lost::{lost_updates, read_modify_write};
pub use marks::{cas_seeds, SkippedBarrier};

/// The barrier intervals of a function: the stretches of execution from
/// the entry or a barrier to the next barrier, and the accesses each holds.
#[derive(Clone, Debug, Default)]
pub struct Intervals {
    /// Per interval (0: from the entry; k: after the k-th barrier), its
    /// accesses (indices into the accesses), sorted.
    pub members: Vec<Vec<usize>>,
    /// Per access, its intervals, sorted (the accesses between two
    /// barriers of a block share one list).
    pub of: Vec<std::rc::Rc<[u32]>>,
}

impl Intervals {
    /// Do accesses `a` and `b` share an interval (so may run between the
    /// same two barriers)?
    pub fn share(&self, a: usize, b: usize) -> bool {
        let (x, y) = (&self.of[a], &self.of[b]);
        let (mut i, mut j) = (0, 0);
        while i < x.len() && j < y.len() {
            match x[i].cmp(&y[j]) {
                std::cmp::Ordering::Equal => return true,
                std::cmp::Ordering::Less => i += 1,
                std::cmp::Ordering::Greater => j += 1,
            }
        }
        false
    }
}

/// The barrier intervals of `accesses` (`barrier_calls(i)`: instruction
/// `i` calls a function that executes a barrier), following loop back edges.
pub fn intervals(f: &FunctionIr<'_>, accesses: &[Access], barrier_calls: &dyn Fn(InstId) -> bool) -> Intervals {
    intervals_cut(f, accesses, barrier_calls, &|_, _| false)
}

/// [`intervals`] with the CFG edges `cut(from, to)` not followed: the
/// intervals as they would be if no thread took those edges (the side of a
/// branch that skips a barrier, say). One forward dataflow problem per
/// function: a block's value is the set of intervals that can be open when
/// it ends.
pub fn intervals_cut(
    f: &FunctionIr<'_>,
    accesses: &[Access],
    barrier_calls: &dyn Fn(InstId) -> bool,
    cut: &dyn Fn(BlockId, BlockId) -> bool,
) -> Intervals {
    intervals_between(f, accesses, &|i| f.insts[i].is_block_barrier() || barrier_calls(i), cut)
}

/// The grid's phases: the intervals between the barriers that complete a
/// cooperative `grid.sync()` (`grid_barriers`); accesses of two blocks in
/// different phases do not race.
pub fn grid_phases(f: &FunctionIr<'_>, accesses: &[Access], grid_barriers: &[InstId]) -> Intervals {
    intervals_between(f, accesses, &|i| grid_barriers.contains(&i), &|_, _| false)
}

/// [`intervals_cut`] for the barriers `is_bar` picks.
fn intervals_between(
    f: &FunctionIr<'_>,
    accesses: &[Access],
    is_bar: &dyn Fn(InstId) -> bool,
    cut: &dyn Fn(BlockId, BlockId) -> bool,
) -> Intervals {
    let cfg = &f.cfg;
    // interval k+1 opens after the k-th barrier instruction
    let mut id_of: FxHashMap<InstId, u32> = FxHashMap::default();
    for i in f.insts.keys().filter(|&i| is_bar(i)) {
        let next = id_of.len() as u32 + 1;
        id_of.insert(i, next);
    }
    let n = id_of.len() + 1;
    let last_barrier: IdVec<BlockId, Option<u32>> =
        IdVec::from_vec(cfg.blocks.iter().map(|b| b.insts().filter_map(|i| id_of.get(&i).copied()).next_back()).collect());
    struct Open<'c, 'f> {
        f: &'c FunctionIr<'f>,
        last_barrier: &'c IdVec<BlockId, Option<u32>>,
        cut: &'c dyn Fn(BlockId, BlockId) -> bool,
        n: usize,
    }
    impl Open<'_, '_> {
        /// The intervals open when block `b` starts.
        fn entry(&self, b: BlockId, state: &[BitSet]) -> BitSet {
            let mut v = BitSet::new(self.n);
            if b.index() == 0 {
                v.insert(0);
            }
            for &p in &self.f.cfg.blocks[b].preds {
                if !(self.cut)(p, b) {
                    v.union_with(&state[p.index()]);
                }
            }
            v
        }
    }
    impl Problem for Open<'_, '_> {
        type Value = BitSet;
        fn transfer(&mut self, node: usize, state: &[BitSet]) -> BitSet {
            let b = BlockId::new(node);
            match self.last_barrier[b] {
                Some(k) => {
                    let mut v = BitSet::new(self.n);
                    v.insert(k as usize);
                    v
                }
                None => self.entry(b, state),
            }
        }
        fn join(&self, a: &BitSet, b: &BitSet) -> BitSet {
            let mut v = a.clone();
            v.union_with(b);
            v
        }
        fn dependents(&mut self, node: usize, _: &[BitSet], out: &mut Vec<usize>) {
            let b = BlockId::new(node);
            out.extend(self.f.cfg.blocks[b].succs.iter().filter(|&&s| !(self.cut)(b, s)).map(|s| s.index()));
        }
    }
    let mut problem = Open { f, last_barrier: &last_barrier, cut, n };
    let order: Vec<usize> = cfg.rpo.iter().map(|b| b.index()).collect();
    let state = solve(&mut problem, vec![BitSet::new(n); cfg.len()], &order);
    // each access: the interval of the barrier before it in its block, else those open at the block's start
    let mut out = Intervals { members: vec![Vec::new(); n], of: vec![std::rc::Rc::from([]); accesses.len()] };
    let mut by_inst: FxHashMap<InstId, Vec<usize>> = FxHashMap::default();
    for (k, a) in accesses.iter().enumerate() {
        by_inst.entry(a.inst).or_default().push(k);
    }
    for (b, blk) in cfg.blocks.iter_enumerated() {
        if !cfg.reachable(b) {
            continue;
        }
        let mut current: std::rc::Rc<[u32]> = problem.entry(b, &state).iter().map(|x| x as u32).collect();
        for i in blk.insts() {
            if let Some(&k) = id_of.get(&i) {
                current = std::rc::Rc::from([k]);
            }
            for &a in by_inst.get(&i).map(Vec::as_slice).unwrap_or(&[]) {
                out.of[a] = current.clone();
                for &iv in current.iter() {
                    out.members[iv as usize].push(a);
                }
            }
        }
    }
    out
}

/// An access a called device function makes, as its caller sees it: at
/// the call instruction (`access.inst`: the caller's barrier intervals),
/// through the caller's argument (`access.addr_value`: its root pointer),
/// at each calling thread's byte offset from that argument's value.
#[derive(Clone, Debug)]
pub struct Imported {
    pub access: Access,
    pub offsets: Offsets,
}

/// Per iteration sampled (0, 1): each thread's byte offset from a pointer
/// (`None`: the thread does not execute the access); `None` where the
/// callee could not evaluate it.
pub type Offsets = [Option<std::sync::Arc<Vec<Option<i64>>>>; 2];

/// A witness of a race between two accesses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Race {
    /// Indices into the accesses: `first` is the write (or the first write).
    pub first: usize,
    pub second: usize,
    pub kind: RaceKind,
    /// Threads (linear ids) of `first` and `second`.
    pub threads: (usize, usize),
    /// Byte offset (from the base) both touch.
    pub offset: i64,
    /// The divergent barrier (index in `KernelFacts::barriers`) that
    /// separates the two accesses for the threads that reach it: the race
    /// comes from the threads that skip it.
    pub through_barrier: Option<usize>,
    /// Safe in practice (`benign_race`), and why.
    pub benign: Option<Benign>,
    /// Every barrier-free path between the two goes around a loop's back
    /// edge: one iteration's access meets the next iteration's.
    pub next_iteration: bool,
    /// The race needs these values of a scalar parameter (`None`: it
    /// happens for the sampled values).
    pub when: Option<param::ParamCondition>,
    /// A race between two blocks: `first` in block 0, `second` in the
    /// block `block_apart` along this dimension (0: x, 1: y, 2: z).
    pub between_blocks: Option<u8>,
    /// How far along that dimension the second block is (1: the next).
    pub block_apart: u32,
    /// Every racing pair of threads found is two lanes of one warp (the
    /// race is warp-synchronous code's: `__syncwarp()` would separate it).
    pub lanes_only: bool,
    /// The elements of the first access the race touches, in the sample
    /// that shows it (1: the witness's alone).
    pub elements: usize,
    /// The race shows only in a later iteration of the loop around both
    /// accesses: that iteration (from 0) and how many the loop runs.
    pub iteration: Option<(usize, crate::ir::loops::Trips)>,
    /// The sampled leaves the witness's addresses were evaluated with
    /// (none: it holds for every value of the kernel's parameters, those
    /// `when` names aside).
    pub rests_on: Leaves,
    /// A lost update ([`lost_updates`]): the race needs two threads that
    /// load the same value at this instruction (the key the address is
    /// computed from); `threads` are any two such.
    pub keyed: Option<InstId>,
    /// A sampled value the witness was found with instead of the
    /// evaluator's sample, which the kernel's own checks ruled out
    /// (`facts::witness::consistent`).
    pub pinned: Option<(ValueId, i64)>,
}

/// Why a race is safe in practice (`benign_race`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Benign {
    /// Two plain stores of the same value, uniform across the block, that
    /// no read races with.
    SameValue,
    /// The racing read's value is discarded by every thread that races
    /// through it: a select picks another operand, or what uses it is
    /// where that thread does not go (`facts::witness::discarded`).
    Discarded,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RaceKind {
    ReadAfterWrite,
    WriteAfterRead,
    WriteAfterWrite,
}

impl RaceKind {
    /// The kind of a race between `a` (the first) and `b`, one of them writing.
    pub fn between(a: &Access, b: &Access) -> RaceKind {
        match (a.kind.writes(), b.kind.writes()) {
            (true, true) => RaceKind::WriteAfterWrite,
            (true, false) => RaceKind::ReadAfterWrite,
            _ => RaceKind::WriteAfterRead,
        }
    }

    pub fn describe(self) -> &'static str {
        match self {
            RaceKind::ReadAfterWrite => "read-after-write",
            RaceKind::WriteAfterRead => "write-after-read",
            RaceKind::WriteAfterWrite => "write-after-write",
        }
    }
}

/// For each iteration sampled, the (byte address, thread) pairs of the
/// threads that execute an access, sorted by address (`None` for an
/// iteration that cannot be evaluated).
pub type Addresses = Vec<Option<Sorted>>;

/// The (byte address, thread) pairs of the threads that execute an
/// access, sorted by address: a list of offsets from the first address,
/// shared by every access whose addresses differ from these by one
/// constant (the accesses of an unrolled loop: one list for thousands),
/// and that constant.
#[derive(Clone, Debug)]
pub struct Sorted {
    list: std::rc::Rc<Vec<(i64, usize)>>,
    shift: i64,
}

/// The address lists made so far, each once ([`Sorted`]).
pub type Lists = crate::ir::entity::Shared<std::rc::Rc<Vec<(i64, usize)>>>;

impl Sorted {
    /// Sort per-thread addresses (`None`: the thread does not execute
    /// it), given thread by thread.
    pub fn new(per_thread: impl IntoIterator<Item = Option<i64>>, lists: &mut Lists) -> Sorted {
        let per_thread = per_thread.into_iter();
        let mut v: Vec<(i64, usize)> = Vec::with_capacity(per_thread.size_hint().0);
        v.extend(per_thread.enumerate().filter_map(|(t, a)| a.map(|a| (a, t))));
        let mut v = by_address(v);
        let shift = v.first().map_or(0, |x| x.0);
        v.iter_mut().for_each(|x| x.0 -= shift);
        Sorted { list: lists.share(std::rc::Rc::new(v)), shift }
    }

    pub fn first(&self) -> Option<(i64, usize)> {
        self.list.first().map(|x| (x.0 + self.shift, x.1))
    }

    pub fn last(&self) -> Option<(i64, usize)> {
        self.list.last().map(|x| (x.0 + self.shift, x.1))
    }

    pub fn len(&self) -> usize {
        self.list.len()
    }

    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// The (address, thread) pairs, in order.
    pub fn iter(&self) -> impl Iterator<Item = (i64, usize)> + '_ {
        self.list.iter().map(|x| (x.0 + self.shift, x.1))
    }

    /// The shared list and the constant its addresses are offset by
    /// (lists made with one [`Lists`] are one allocation when equal).
    fn parts(&self) -> (&[(i64, usize)], i64) {
        (&self.list, self.shift)
    }

    /// The same addresses moved by `by` bytes (none: none, as made).
    fn shifted(&self, by: i64) -> Sorted {
        Sorted { list: self.list.clone(), shift: if self.list.is_empty() { self.shift } else { self.shift + by } }
    }

    /// Every two threads' addresses are at least `width` apart.
    fn apart(&self, width: u32) -> bool {
        self.list.windows(2).all(|w| w[1].0 - w[0].0 >= width as i64)
    }

    /// The same list and shift (a key: lists made with one [`Lists`]).
    fn key(&self) -> (usize, i64) {
        (self.list.as_ptr() as *const u8 as usize, self.shift)
    }
}

/// Pairs of an address and a thread, the threads ascending, sorted by
/// address (then thread). A block's addresses mostly fill a range a few
/// times their number wide, in steps of a power of two (a word or a row
/// per thread, a tile, one address for all): those are placed by counting
/// the threads at each step (two passes, no comparisons); the others are
/// sorted.
fn by_address(mut v: Vec<(i64, usize)>) -> Vec<(i64, usize)> {
    let Some(&(first, _)) = v.first() else { return v };
    // (the step: the power of two every difference from the first is a multiple of, so
    // every difference from the lowest too; differences as unsigned: every pair of `i64`s has one)
    let (mut lo, mut hi, mut ascending, mut bits) = (first, first, true, 0u64);
    for &(a, _) in &v[1..] {
        ascending &= a >= hi;
        (lo, hi) = (lo.min(a), hi.max(a));
        bits |= a.wrapping_sub(first) as u64;
    }
    if ascending {
        return v; // (one address, a row: in thread order already)
    }
    let step = bits.trailing_zeros();
    let at = |a: i64| (a.wrapping_sub(lo) as u64 >> step) as usize;
    let span = hi.wrapping_sub(lo) as u64 >> step;
    if span >= 4 * v.len() as u64 {
        v.sort_unstable();
        return v;
    }
    let steps = span as usize + 1;
    // the first place of each step's pairs, then each pair in its place in thread order
    let mut place = vec![0u32; steps + 1];
    for &(a, _) in &v {
        place[at(a) + 1] += 1;
    }
    for k in 1..=steps {
        place[k] += place[k - 1];
    }
    let mut out = vec![(0, 0); v.len()];
    for &(a, t) in &v {
        let p = &mut place[at(a)];
        out[*p as usize] = (a, t);
        *p += 1;
    }
    out
}

/// Sort per-thread addresses (`None`: the thread does not execute it),
/// in a list of their own.
pub fn sorted(per_thread: &[Option<i64>]) -> Sorted {
    Sorted::new(per_thread.iter().copied(), &mut Lists::default())
}

/// Do accesses `a` (index `ka`) and `b` race? `addrs[k][s][t]` is the
/// address of access k for sample s in thread t (same samples for all).
pub fn conflict(accesses: &[Access], addrs: &[Option<Addresses>], ka: usize, kb: usize) -> Option<Race> {
    conflict_between(accesses, addrs, ka, kb, false, &mut Sweeps::default())
}

/// [`conflict`]; `warp_synced`: a `__syncwarp()` separates the two on every
/// path, so lanes of one warp do not race (threads of different warps do).
fn conflict_between(
    accesses: &[Access],
    addrs: &[Option<Addresses>],
    ka: usize,
    kb: usize,
    warp_synced: bool,
    sweeps: &mut Sweeps,
) -> Option<Race> {
    let (Some(aa), Some(ab)) = (&addrs[ka], &addrs[kb]) else { return None };
    conflict_in(accesses, ka, kb, (aa, ab), warp_synced, sweeps)
}

/// The sweeps made between two address lists, by the lists (where they
/// are kept: the caller keeps every list it asks about while it keeps
/// these), the second's offset from the first's, the widths and whether
/// lanes of one warp are apart. A sweep's witness moves with the lists:
/// the copies of an unrolled loop's accesses (one list at other offsets)
/// meet at a few offsets, each swept once.
#[derive(Default)]
struct Sweeps(FxHashMap<SweepKey, Option<Witness>>);

/// The two lists (where they are kept), the second's offset from the
/// first's, the two widths, lanes of one warp apart.
type SweepKey = (usize, usize, i64, u32, u32, bool);

impl Sweeps {
    /// [`sweep`]'s witness (all of it) between `va` and `vb`, among the
    /// pairs of different threads (of different warps when `warp_synced`).
    fn witness(&mut self, va: &Sorted, vb: &Sorted, wa: u32, wb: u32, warp_synced: bool) -> Option<Witness> {
        let ((la, sa), (lb, sb)) = (va.parts(), vb.parts());
        let ok = |t1: usize, t2: usize| t1 != t2 && !(warp_synced && t1 / crate::model::WARP == t2 / crate::model::WARP);
        // (offsets too far apart to subtract: swept where they are)
        let Some(apart) = sb.checked_sub(sa) else { return sweep((la, sa), (lb, sb), wa, wb, &ok, false) };
        let key = (la.as_ptr() as usize, lb.as_ptr() as usize, apart, wa, wb, warp_synced);
        let found = *self.0.entry(key).or_insert_with(|| sweep((la, 0), (lb, apart), wa, wb, &ok, false));
        found.map(|w| Witness { byte: w.byte + sa, ..w })
    }
}

/// [`conflict_between`] for the given samples of each access (`aa[s]`
/// against `ab[s]`).
fn conflict_in(
    accesses: &[Access],
    ka: usize,
    kb: usize,
    (aa, ab): (&[Option<Sorted>], &[Option<Sorted>]),
    warp_synced: bool,
    sweeps: &mut Sweeps,
) -> Option<Race> {
    let (a, b) = (&accesses[ka], &accesses[kb]);
    if a.space != b.space || !matches!(a.space, Space::Shared | Space::Global) {
        return None;
    }
    if !a.kind.writes() && !b.kind.writes() {
        return None;
    }
    if a.kind == AccessKind::Atomic && b.kind == AccessKind::Atomic {
        return None;
    }
    for s in 0..aa.len().min(ab.len()) {
        let (Some(va), Some(vb)) = (&aa[s], &ab[s]) else { continue };
        let (Some(fa), Some(la), Some(fb), Some(lb)) = (va.first(), va.last(), vb.first(), vb.last()) else { continue };
        if la.0 + (a.width as i64) <= fb.0 || lb.0 + (b.width as i64) <= fa.0 {
            continue; // disjoint ranges
        }
        // each thread at its own address in both, the next thread's bytes past both widths: no
        // two threads meet (the same addresses twice, as a store and a load of `a[i]` give)
        if va.key() == vb.key() && va.apart(a.width.max(b.width)) {
            continue;
        }
        if let Some(w) = sweeps.witness(va, vb, a.width, b.width, warp_synced) {
            let mut r = race_at(accesses, ka, kb, w.threads, w.byte);
            (r.lanes_only, r.elements) = (!w.cross, w.elements);
            return Some(r);
        }
    }
    None
}

/// The races between `accesses` of `f` for the block `shape`: pairs that
/// share a barrier interval, touch the same space through the same root
/// pointer, and overlap for two different threads. `active(b, it)` gives
/// the threads that execute block `b` in iteration `it` (0 or 1);
/// `barrier_call(i)` says instruction `i` calls a function that executes
/// a barrier. When the shape is only assumed, a race is kept only if it
/// also occurs in small blocks (16 or 32 threads, 8×8 or 16×16), so code
/// written for narrow blocks is not flagged for rows that never overlap.
/// Irreducible control flow is not analysed (no races).
///
/// `imported`: the accesses of the device functions `f` calls, each
/// numbered after `accesses` (a race's `first`/`second` index both):
/// paired with `f`'s own accesses and with other calls' (two accesses of
/// one call are the callee's own pairs, checked in its call context).
///
/// Each race comes out marked: `through_barrier` when it exists only
/// because threads skip one of the `skipped` barriers, `benign`,
/// `next_iteration` (see `marks`).
pub fn find(
    evals: &Evals<'_, '_>,
    own: &[Access],
    imported: &[Imported],
    active: &mut dyn FnMut(BlockId, usize) -> Vec<bool>,
    barrier_call: &dyn Fn(InstId) -> bool,
    skipped: &[SkippedBarrier],
) -> Vec<Race> {
    let mut races = pairs_racing(evals, own, imported, active, barrier_call);
    let f = evals.f;
    // (the function's own accesses, and its callees' after them: copied only when there are such)
    let sites: std::borrow::Cow<'_, [Access]> = match imported {
        [] => own.into(),
        _ => own.iter().chain(imported.iter().map(|x| &x.access)).cloned().collect::<Vec<_>>().into(),
    };
    marks::attribute_to_barriers(f, skipped, &sites, barrier_call, &mut races);
    marks::mark_benign(f, evals.d, own, &mut races, None);
    marks::mark_next_iteration(f, &sites, barrier_call, &mut races);
    for r in races.iter_mut() {
        marks::settle(evals, &sites, own.len(), r);
    }
    races
}

/// [`find`]'s races, before they are marked.
fn pairs_racing(
    evals: &Evals<'_, '_>,
    own: &[Access],
    imported: &[Imported],
    active: &mut dyn FnMut(BlockId, usize) -> Vec<bool>,
    barrier_call: &dyn Fn(InstId) -> bool,
) -> Vec<Race> {
    let (f, d, shape) = (evals.f, evals.d, evals.shape);
    if f.cfg.is_irreducible() {
        return vec![];
    }
    let n = own.len();
    let all: Vec<Access>;
    let accesses = if imported.is_empty() {
        own
    } else {
        all = own.iter().chain(imported.iter().map(|x| &x.access)).cloned().collect();
        &all
    };
    let same_call = |a: usize, b: usize| a >= n && b >= n && accesses[a].inst == accesses[b].inst;
    // a load that only seeds a compare-and-swap loop on its address does not race with the CAS
    let seeds = marks::cas_seeds(f, accesses);
    let seeded = |a: usize, b: usize| seeds[a] == Some(b) || seeds[b] == Some(a);
    let intervals = intervals(f, accesses, barrier_call);
    let roots: Vec<Option<ValueId>> = accesses.iter().map(|a| a.addr_value.map(|v| crate::ir::values::array_root(f, v))).collect();
    // a pair of one interval through one pointer, one of them writing (atomics among themselves excepted)
    let possible = |ka: usize, kb: usize| {
        let (a, b) = (&accesses[ka], &accesses[kb]);
        (a.kind.writes() || b.kind.writes())
            && !(a.kind == AccessKind::Atomic && b.kind == AccessKind::Atomic)
            && a.space == b.space
            && !same_call(ka, kb)
            && !seeded(ka, kb)
    };
    // the accesses of one interval through one pointer, a writer among them
    let mut groups: Vec<Vec<usize>> = Vec::new();
    for members in &intervals.members {
        let mut by_root: FxHashMap<ValueId, Vec<usize>> = FxHashMap::default();
        for &k in members {
            if let Some(r) = roots[k] {
                by_root.entry(r).or_default().push(k);
            }
        }
        groups.extend(by_root.into_values().filter(|ks| ks.iter().any(|&k| accesses[k].kind.writes())));
    }
    // the accesses some possible pair holds (a reader needs a writer beside it)
    let mut in_pair = vec![false; accesses.len()];
    for ks in &groups {
        let writers: Vec<usize> = ks.iter().copied().filter(|&k| accesses[k].kind.writes()).collect();
        for &k in ks {
            if !in_pair[k] {
                let partners = if accesses[k].kind.writes() { ks } else { &writers };
                in_pair[k] = partners.iter().any(|&j| possible(k, j));
            }
        }
    }
    let mut sites = Sites::new(evals, accesses, imported);
    let addrs: Vec<Option<Addresses>> =
        (0..accesses.len()).map(|k| if in_pair[k] { sites.sampled(k, &mut Some(&mut *active)) } else { None }).collect();
    // the scalar parameters of each own access's address that some possible pair holds (a
    // callee's offsets are sampled values: its accesses are not solved for)
    // (accesses at one address, a load and a store of `a[i] += x`, share them)
    let mut of_value: FxHashMap<ValueId, Vec<ValueId>> = FxHashMap::default();
    let params: Vec<Vec<ValueId>> = accesses
        .iter()
        .enumerate()
        .map(|(k, a)| match a.addr_value.filter(|_| k < n && in_pair[k]) {
            Some(v) => of_value.entry(v).or_insert_with(|| crate::ir::values::scalar_parameters(f, v)).clone(),
            None => Vec::new(),
        })
        .collect();
    let mut loops = LaterLoops::default();
    // the pairs to compare: those whose addresses meet at the samples, and those that need other
    // values to meet (a parameter solved for; later iterations of a loop around both)
    let mut pairs: Vec<(usize, usize)> = Vec::new();
    let mut seen: FxHashSet<(usize, usize)> = FxHashSet::default();
    let mut emit = |ka: usize, kb: usize| {
        let p = (ka.min(kb), ka.max(kb));
        if possible(ka, kb) && seen.insert(p) {
            pairs.push(p);
        }
    };
    let mut met = Pairs::default();
    let mut distances = candidates::Distances::default();
    for ks in &groups {
        candidates::meeting(ks, &addrs, &|k| accesses[k].width, &mut distances, &mut |a, b| {
            met.insert((a.min(b), a.max(b)));
            emit(a, b)
        });
        let own: Vec<usize> = ks.iter().copied().filter(|&k| k < n).collect();
        for &ka in own.iter().filter(|&&k| !params[k].is_empty()) {
            for &kb in &own {
                emit(ka, kb);
            }
        }
        // per loop around accesses of the group, the pairs a later iteration compares
        let mut by_loop: FxHashMap<crate::ir::LoopId, Vec<usize>> = FxHashMap::default();
        for &k in &own {
            if let Some(l) = f.cfg.loop_of(f.cfg.block_of(accesses[k].inst)) {
                by_loop.entry(l).or_default().push(k);
            }
        }
        for (l, ks) in by_loop {
            for (x, &ka) in ks.iter().enumerate() {
                for &kb in &ks[x..] {
                    if loops.compares(evals, l, &accesses[ka], &accesses[kb]) {
                        emit(ka, kb);
                    }
                }
            }
        }
    }
    pairs.sort_unstable();
    // pairs a full-warp `__syncwarp()` separates on every path: lanes of one warp are ordered
    let warp_synced: BTreeSet<(usize, usize)> = if f.insts.iter().any(|i| i.is_full_warp_barrier()) {
        let with_warp = self::intervals(f, accesses, &|i| barrier_call(i) || f.insts[i].is_full_warp_barrier());
        pairs.iter().copied().filter(|&(a, b)| !with_warp.share(a, b)).collect()
    } else {
        BTreeSet::new()
    };
    // pairs a thread one iteration ahead of another can meet (the tree reduction without its barrier)
    let is_bar = |i: InstId| f.insts[i].is_block_barrier() || barrier_call(i);
    let mut apart_info: FxHashMap<usize, Option<(crate::ir::LoopId, bool, bool)>> = FxHashMap::default();
    let mut info = |k: usize| *apart_info.entry(k).or_insert_with(|| around_back_edge(f, &is_bar, accesses[k].inst));
    let in_loop = |k: usize| f.cfg.loop_of(f.cfg.block_of(accesses[k].inst)).is_some();
    let cross: Cross = pairs
        .iter()
        .copied()
        .filter(|&(a, b)| b < n && in_loop(a) && in_loop(b))
        .filter_map(|(a, b)| Some(((a, b), one_iteration_apart(info(a), info(b))?)))
        .collect();
    let mut found = races_at(&mut sites, Some((&addrs, &met)), &pairs, &cross, &mut Some(&mut *active), &warp_synced, &mut loops);
    // the pairs the sampled parameter values leave apart: solved for the parameters
    // a race at the sampled values that needs two parameters to meet (`a[x]` against `a[y]`): say so
    // (found in either sampled iteration of a loop: the relation must hold in both)
    for r in found.iter_mut().filter(|r| r.first < n && r.second < n && r.when.is_none()) {
        let its: &[usize] = if in_loop(r.first) || in_loop(r.second) { &[0, 1] } else { &[0] };
        r.when = param::relation(evals, accesses, &params, r, its);
    }
    let raced: BTreeSet<(usize, usize)> = found.iter().map(|r| (r.first.min(r.second), r.first.max(r.second))).collect();
    let apart: Vec<(usize, usize)> = pairs
        .iter()
        .copied()
        .filter(|&(a, b)| !(raced.contains(&(a, b)) || params[a].is_empty() && params[b].is_empty() || b >= n))
        .collect();
    let mut linear = param::Linear::default();
    for (ka, kb) in apart {
        let at = |k: usize| f.cfg.block_of(accesses[k].inst);
        for it in 0..2 {
            let mut on = |k: usize| active(at(k), it);
            let (solved, rests_on) = evals
                .recorded(|| param::solve(evals, accesses, &params, ka, kb, it, &mut on, warp_synced.contains(&(ka, kb)), &mut linear));
            if let Some(mut r) = solved {
                r.rests_on = rests_on;
                // two parameters, one on each side: the relation, not one's value for the other's sample
                if let Some(c) = param::relation(evals, accesses, &params, &r, &[it]) {
                    r.when = Some(c);
                }
                found.push(r);
                break;
            }
        }
    }
    // two accesses that share an interval only through paths no two threads take
    // together (the two sides of a uniform branch: a loop that may run no
    // iteration, say) do not meet
    let divergent: Vec<BlockId> = d.branches.iter().map(|b| b.block).collect();
    // (the blocks each access reaches, once per access: many races share one)
    let mut reach: FxHashMap<InstId, std::rc::Rc<BitSet>> = FxHashMap::default();
    found.retain(|r| concurrent(f, &is_bar, &divergent, accesses[r.first].inst, accesses[r.second].inst, &mut reach));
    // a race with a callee's access is told at the caller's own access
    for r in found.iter_mut().filter(|r| r.first < n && r.second >= n) {
        (r.first, r.second, r.threads) = (r.second, r.first, (r.threads.1, r.threads.0));
        r.kind = RaceKind::between(&accesses[r.first], &accesses[r.second]);
    }
    if !shape.is_assumed() || found.iter().all(|r| r.when.is_some()) {
        return found;
    }
    // an assumed shape may be wrong: keep only races that persist in small blocks (the
    // smallest first: most races of a wrong shape are gone there, and it costs least)
    let uses_y = shape.block[1] > 1 || shape.block[2] > 1;
    let candidates: &[[u32; 3]] = if uses_y { &[[8, 8, 1], [16, 16, 1]] } else { &[[16, 1, 1], [32, 1, 1]] };
    // (a callee's offsets are known for the assumed shape only: its pairs are not kept)
    let mut kept = found;
    kept.retain(|r| r.first < n && r.second < n);
    for c in candidates {
        let small = Shape::new(*c, ShapeSource::Assumed);
        // (a race that holds under a relation of parameters is kept whatever the shape)
        let remaining: Vec<(usize, usize)> = kept.iter().filter(|r| r.when.is_none()).map(|r| (r.first, r.second)).collect();
        if remaining.is_empty() {
            break;
        }
        let small = Evals::new(f, d, &small);
        let again =
            races_at(&mut Sites::new(&small, own, &[]), None, &remaining, &cross, &mut None, &warp_synced, &mut LaterLoops::default());
        let again: FxHashSet<(usize, usize)> = again.iter().map(|x| (x.first, x.second)).collect();
        kept.retain(|r| r.when.is_some() || again.contains(&(r.first, r.second)));
    }
    kept
}

/// The races between threads of two blocks on global memory (no barrier
/// orders them): block 0 and the block next to it along each dimension in
/// `dims`, each access in either. Pairs through one root pointer, one of
/// them writing (atomics among themselves excepted), an access with itself
/// too (`comparable` ones: see the facts layer); compared at the same loop
/// iteration (0, 1) in both blocks, and only within one phase of the grid
/// (`phases`: between the barriers of cooperative `grid.sync()`s).
/// `active(dim, b, it)`: the threads of block 0 (`dim` `None`) or of the
/// next block along `dim` that execute block `b`. When the shape is only
/// assumed, a race is kept only if it also occurs (every thread active)
/// for blocks of one thread: not one that needs the block
/// to be larger than the stride the addresses give each block.
/// `far`: the grid's extent when it is given and the blocks run the same
/// code (no branch on `blockIdx`): block 0 is then also compared with the
/// nearest block further along a dimension whose byte ranges meet its own
/// ([`FAR_BLOCKS`] of them at most, per pair).
/// `by_block`: the values computed from `%ctaid` (a stored value that is
/// one is not the same in both blocks: no `benign_race`).
pub fn find_grid(evals: &Evals<'_, '_>, g: &GridCheck<'_>, active: BlockLanes<'_>) -> Vec<Race> {
    let mut found = grid_pairs(evals, g, active);
    marks::mark_benign(evals.f, evals.d, g.accesses, &mut found, Some(g.by_block));
    for r in found.iter_mut() {
        marks::settle(evals, g.accesses, g.accesses.len(), r);
    }
    found
}

/// What the races between blocks are looked for in (see [`find_grid`]).
#[derive(Clone, Copy)]
pub struct GridCheck<'x> {
    pub accesses: &'x [Access],
    pub comparable: &'x [bool],
    pub phases: Option<&'x Intervals>,
    pub dims: &'x [u8],
    pub far: Option<[u32; 3]>,
    pub by_block: &'x BitSet,
}

/// [`find_grid`]'s races, before they are marked.
fn grid_pairs(evals: &Evals<'_, '_>, g: &GridCheck<'_>, active: BlockLanes<'_>) -> Vec<Race> {
    let GridCheck { accesses, comparable, phases, dims, far, .. } = *g;
    let (f, d, shape) = (evals.f, evals.d, evals.shape);
    if dims.is_empty() || f.cfg.is_irreducible() {
        return vec![];
    }
    // the candidates: global accesses (`comparable` ones) through one root pointer,
    // one of them writing, not both atomic (an access with itself too)
    let roots: Vec<Option<ValueId>> = accesses
        .iter()
        .enumerate()
        .map(|(k, a)| {
            a.addr_value
                .filter(|_| a.space == Space::Global && !a.addr.data() && comparable[k])
                .map(|v| crate::ir::values::array_root(f, v))
        })
        .collect();
    let seeds = marks::cas_seeds(f, accesses);
    let candidate = |ka: usize, kb: usize| {
        let (a, b) = (&accesses[ka], &accesses[kb]);
        roots[ka].is_some()
            && roots[ka] == roots[kb]
            && (a.kind.writes() || b.kind.writes())
            && !(a.kind == AccessKind::Atomic && b.kind == AccessKind::Atomic)
            && phases.is_none_or(|p| p.share(ka, kb))
            && seeds[ka] != Some(kb)
            && seeds[kb] != Some(ka)
    };
    let writer_roots: FxHashSet<ValueId> = (0..accesses.len()).filter(|&k| accesses[k].kind.writes()).filter_map(|k| roots[k]).collect();
    let needed: Vec<usize> = (0..accesses.len()).filter(|&k| roots[k].is_some_and(|r| writer_roots.contains(&r))).collect();
    if needed.is_empty() {
        return vec![];
    }
    let found = grid_races_at(evals, accesses, &needed, &candidate, dims, far, Some(active));
    if !shape.is_assumed() || found.is_empty() {
        return found;
    }
    // a block shape that is only assumed may be larger than the stride the
    // addresses give each block (`blockIdx.x * 16 + t` for 16-thread blocks):
    // keep the races that blocks of one thread have too
    let one = Shape::new([1, 1, 1], ShapeSource::Assumed);
    let pair = |r: &Race| (r.first.min(r.second), r.first.max(r.second));
    let remaining: BTreeSet<(usize, usize)> = found.iter().map(pair).collect();
    let again_needed: Vec<usize> = remaining.iter().flat_map(|p| [p.0, p.1]).collect::<BTreeSet<_>>().into_iter().collect();
    let again =
        grid_races_at(&Evals::new(f, d, &one), accesses, &again_needed, &|a, b| remaining.contains(&(a.min(b), a.max(b))), dims, far, None);
    found.into_iter().filter(|r| again.iter().any(|x| pair(x) == pair(r))).collect()
}

/// Which threads of block 0 (`None`) or of the block next to it along a
/// dimension execute a CFG block in an iteration.
pub type BlockLanes<'x> = &'x mut dyn FnMut(Option<u8>, BlockId, usize) -> std::rc::Rc<Vec<bool>>;

/// An access's byte range in one block: (first byte, past the last, access).
type Span = (i64, i64, usize);

/// Exact overlap checks per access (as the later block's) before giving
/// up on finding it a partner: bounds the work when many accesses' ranges
/// overlap without their bytes meeting.
const GRID_CHECKS_PER_ACCESS: usize = 32;

/// Blocks further than the next one compared per pair of accesses, at most.
const FAR_BLOCKS: usize = 4;

/// [`find_grid`] for one block shape (every thread active when `active`
/// is not given), over the `needed` accesses and the pairs `candidate`
/// accepts: for each access in the later block, its first partner (one
/// race per pair, the first dimension that shows it). Each access's byte
/// range in block 0 and in the next block is computed first (the next
/// block's addresses are block 0's shifted by the first thread's
/// difference when the address is affine in the thread index); only pairs
/// whose ranges overlap are compared thread by thread.
fn grid_races_at(
    evals: &Evals<'_, '_>,
    accs: &[Access],
    needed: &[usize],
    candidate: &dyn Fn(usize, usize) -> bool,
    dims: &[u8],
    far: Option<[u32; 3]>,
    mut active: Option<BlockLanes<'_>>,
) -> Vec<Race> {
    let (f, lanes) = (evals.f, evals.shape.lanes());
    let all = std::rc::Rc::new(vec![true; lanes.len()]);
    // an access's addresses in block 0 (`at` `None`) or in the block `(dim, apart)`, that
    // many along `dim`, iteration `it`: the values, a shift added to each, the threads that
    // execute it
    type Parts = (std::rc::Rc<Vec<i64>>, i64, std::rc::Rc<Vec<bool>>);
    // (an access outside loops is the same in every iteration: its first one stands for both)
    let looped: Vec<bool> = accs.iter().map(|a| f.cfg.loop_of(f.cfg.block_of(a.inst)).is_some()).collect();
    // each access's sampled leaves, over the blocks and iterations compared
    let mut rests: FxHashMap<usize, Leaves> = FxHashMap::default();
    let mut parts_at = |k: usize, at: Option<(u8, i64)>, it: usize| -> Option<Parts> {
        let a = &accs[k];
        let v = a.addr_value?;
        let it = if looped[k] { it } else { 0 };
        let mut ctaid = [0i64; 3];
        if let Some((x, apart)) = at {
            ctaid[x as usize] = apart;
        }
        let dim = at.map(|x| x.0);
        let affine = matches!(a.addr, crate::divergence::AbsVal::Affine { c, .. } if c.iter().all(|x| matches!(x, crate::divergence::Coef::Const(_))));
        let (vals, shift) = match dim {
            Some(_) if affine => {
                // block 0's addresses, shifted by the first thread's difference
                let home = evals.eval(v, Query::block(it))?;
                let q = Query::first_thread(ctaid, it);
                let shift = evals.eval(v, q)?.first()? - home.first()?;
                (home, shift)
            }
            _ => (evals.eval(v, Query { ctaid, ..Query::block(it) })?, 0),
        };
        // (a block further along runs the code the next one runs: no branch on blockIdx)
        let on = match active.as_mut() {
            Some(act) => act(dim, f.cfg.block_of(a.inst), it),
            None => all.clone(),
        };
        Some((vals, shift + a.offset, on))
    };
    let mut parts = |k: usize, at: Option<(u8, i64)>, it: usize| -> Option<Parts> {
        let (out, on) = evals.recorded(|| parts_at(k, at, it));
        let r = rests.entry(k).or_default();
        *r = r.union(&on);
        out
    };
    let range = |(vals, shift, on): &Parts, w: u32| -> Option<(i64, i64)> {
        let (lo, hi) =
            vals.iter().zip(on.iter()).filter(|(_, on)| **on).fold((i64::MAX, i64::MIN), |(lo, hi), (x, _)| (lo.min(*x), hi.max(*x)));
        (lo <= hi).then(|| (lo + shift, hi + shift + w as i64))
    };
    let list = |(vals, shift, on): &Parts| -> Vec<(i64, usize)> {
        let v: Vec<(i64, usize)> =
            vals.iter().zip(on.iter()).enumerate().filter(|(_, (_, on))| **on).map(|(t, (x, _))| (x + shift, t)).collect();
        by_address(v)
    };
    let mut found: Vec<Race> = Vec::new();
    let mut raced: BTreeSet<(usize, usize)> = BTreeSet::new();
    for &dim in dims {
        // the byte ranges: (lo, hi, access) in block 0 and in the next block, per iteration
        let (mut home0, mut next0): (Vec<Span>, Vec<Span>) = (Vec::new(), Vec::new());
        for it in 0..2 {
            let (mut home, mut next) = (Vec::new(), Vec::new());
            for &k in needed {
                if it == 1 && !looped[k] {
                    continue;
                }
                let w = accs[k].width;
                let Some(h) = parts(k, None, it) else { continue };
                let Some(r) = range(&h, w) else { continue };
                home.push((r.0, r.1, k));
                // the same values and threads shifted: the same range shifted
                let Some(x) = parts(k, Some((dim, 1)), it) else { continue };
                let same = std::rc::Rc::ptr_eq(&x.0, &h.0) && (std::rc::Rc::ptr_eq(&x.2, &h.2) || x.2 == h.2);
                let shifted = if same { Some((r.0 + x.1 - h.1, r.1 + x.1 - h.1)) } else { range(&x, w) };
                if let Some(r) = shifted {
                    next.push((r.0, r.1, k));
                }
            }
            if it == 0 {
                (home0, next0) = (home.clone(), next.clone());
            } else if home.is_empty() && next.is_empty() {
                break; // no access in a loop: the second iteration is the first
            } else {
                home.extend(home0.iter().filter(|x| !looped[x.2]));
                next.extend(next0.iter().filter(|x| !looped[x.2]));
            }
            home.sort_unstable();
            let widest = home.iter().map(|x| x.1 - x.0).max().unwrap_or(0);
            // each access's sorted addresses, computed once when first compared
            let mut home_sorted: FxHashMap<usize, Option<Vec<(i64, usize)>>> = FxHashMap::default();
            for &(lo, hi, kb) in &next {
                let mut checks = 0;
                let mut xb: Option<Option<Vec<(i64, usize)>>> = None;
                // the accesses of block 0 whose ranges overlap [lo, hi): they start
                // before `hi`, and no earlier than the widest range before `lo`
                let (start, end) = (home.partition_point(|x| x.0 <= lo.saturating_sub(widest)), home.partition_point(|x| x.0 < hi));
                for &(_, ahi, ka) in &home[start.min(end)..end] {
                    let pair = (ka.min(kb), ka.max(kb));
                    if ahi <= lo || !candidate(ka, kb) || raced.contains(&pair) {
                        continue;
                    }
                    if checks == GRID_CHECKS_PER_ACCESS {
                        break;
                    }
                    checks += 1;
                    let xb = xb.get_or_insert_with(|| parts(kb, Some((dim, 1)), it).map(|p| list(&p)));
                    let xa = home_sorted.entry(ka).or_insert_with(|| parts(ka, None, it).map(|p| list(&p)));
                    let (Some(xa), Some(xb)) = (xa.as_ref(), xb.as_ref()) else { continue };
                    if let Some(mut r) = overlap(accs, xa, xb, ka, kb) {
                        r.between_blocks = Some(dim);
                        raced.insert(pair);
                        found.push(r);
                        // one partner per access is one finding to act on
                        break;
                    }
                }
            }
            // blocks further along: where an access's range moves by the same amount per
            // block, the blocks whose range meets a block-0 range are solved for
            let Some(extent) = far.map(|g| g[dim as usize] as i64).filter(|&e| e > 2) else { continue };
            let starts: FxHashMap<usize, (i64, i64)> = home.iter().map(|x| (x.2, (x.0, x.1))).collect();
            for &(lo1, _, kb) in &next {
                let Some(&(lo0, hi0)) = starts.get(&kb) else { continue };
                let step = lo1 - lo0;
                let Some(p2) = parts(kb, Some((dim, 2)), it) else { continue };
                let Some((lo2, _)) = range(&p2, accs[kb].width) else { continue };
                if step == 0 || lo2 - lo0 != 2 * step {
                    continue;
                }
                for &(alo, ahi, ka) in &home {
                    let pair = (ka.min(kb), ka.max(kb));
                    if !candidate(ka, kb) || raced.contains(&pair) {
                        continue;
                    }
                    // lo0 + k·step < ahi and hi0 + k·step > alo
                    let (first, last) = param::open_interval(alo - hi0, ahi - lo0, step);
                    for apart in (first.max(2)..=last.min(extent - 1)).take(FAR_BLOCKS) {
                        let xa = home_sorted.entry(ka).or_insert_with(|| parts(ka, None, it).map(|p| list(&p)));
                        let (Some(xa), Some(xb)) = (xa.as_ref(), parts(kb, Some((dim, apart)), it).map(|p| list(&p))) else { break };
                        if let Some(mut r) = overlap(accs, xa, &xb, ka, kb) {
                            (r.between_blocks, r.block_apart) = (Some(dim), apart as u32);
                            raced.insert(pair);
                            found.push(r);
                            break;
                        }
                    }
                }
            }
        }
    }
    for r in found.iter_mut() {
        r.rests_on = rests_of(&rests, r);
    }
    found
}

/// A byte access `ka` touches in block 0 (`va`, sorted addresses and
/// threads) and access `kb` in the other block (`vb`): the witness with
/// the smallest threads.
fn overlap(accs: &[Access], va: &[(i64, usize)], vb: &[(i64, usize)], ka: usize, kb: usize) -> Option<Race> {
    let w = sweep((va, 0), (vb, 0), accs[ka].width, accs[kb].width, &|_, _| true, false)?;
    let mut r = race_at(accs, ka, kb, w.threads, w.byte);
    r.elements = w.elements;
    Some(r)
}

/// The witness of overlapping bytes [`sweep`] found.
#[derive(Clone, Copy)]
struct Witness {
    threads: (usize, usize),
    /// The first byte both touch.
    byte: i64,
    /// Some racing pair is of two warps.
    cross: bool,
    /// The elements of the first access that race (distinct addresses).
    elements: usize,
}

/// The pair of threads with the smallest ids (the clearest witness) among
/// those of `va` (bytes `wa` wide from each address, sorted, each offset
/// by the shift beside it) and `vb` (`wb` wide) whose bytes overlap and
/// that `ok` accepts; with `first`, the first such pair (whether there is
/// one at all).
fn sweep<F: Fn(usize, usize) -> bool + ?Sized>(
    (va, sa): (&[(i64, usize)], i64),
    (vb, sb): (&[(i64, usize)], i64),
    wa: u32,
    wb: u32,
    ok: &F,
    first: bool,
) -> Option<Witness> {
    thread_local! {
        // the elements a sweep hits (a buffer each thread keeps for its sweeps)
        static HIT: std::cell::RefCell<Vec<i64>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    HIT.with(|cell| {
        let hit = &mut *cell.borrow_mut();
        hit.clear();
        let mut best: Option<(usize, usize, i64)> = None;
        let mut cross = false;
        let mut lo = 0;
        for &(y, t2) in vb {
            let y = y + sb;
            // accesses of `va` overlapping [y, y + wb)
            while lo < va.len() && va[lo].0 + sa + (wa as i64) <= y {
                lo += 1;
            }
            let mut i = lo;
            while i < va.len() && va[i].0 + sa < y + wb as i64 {
                let (x, t1) = (va[i].0 + sa, va[i].1);
                if ok(t1, t2) {
                    cross |= t1 / crate::model::WARP != t2 / crate::model::WARP;
                    if first {
                        return Some(Witness { threads: (t1, t2), byte: x.max(y), cross, elements: 1 });
                    }
                    // (the same element again, as most are: counted once below anyway)
                    if hit.last() != Some(&x) {
                        hit.push(x);
                    }
                    if best.is_none_or(|(u, w, _)| (t1.max(t2), t1, t2) < (u.max(w), u, w)) {
                        best = Some((t1, t2, x.max(y)));
                    }
                    // the later threads at this address (ascending) give no better pair with
                    // `t2`, nor another element: past them, once a pair of two warps is seen
                    // (a broadcast address read by the whole block is not n² pairs)
                    if cross {
                        i = run_end(va, i) - 1;
                    }
                }
                i += 1;
            }
        }
        hit.sort_unstable();
        hit.dedup();
        best.map(|(t1, t2, byte)| Witness { threads: (t1, t2), byte, cross, elements: hit.len() })
    })
}

/// Where the run of pairs at `v[i]`'s address ends (`v` sorted by address):
/// by steps that double, then halving, so that a few threads at one address
/// cost a few steps and a whole block at one address its logarithm.
fn run_end(v: &[(i64, usize)], i: usize) -> usize {
    let at = v[i].0;
    let (mut lo, mut step) = (i + 1, 1);
    // every pair before `lo` is at the address; the run ends at `lo + step` or before
    while lo + step <= v.len() && v[lo + step - 1].0 == at {
        lo += step;
        step *= 2;
    }
    let hi = (lo + step).min(v.len());
    lo + v[lo..hi].partition_point(|e| e.0 == at)
}

/// The race between accesses `ka` (first) and `kb` at the witness threads
/// and byte.
fn race_at(accs: &[Access], ka: usize, kb: usize, threads: (usize, usize), byte: i64) -> Race {
    Race {
        first: ka,
        second: kb,
        kind: RaceKind::between(&accs[ka], &accs[kb]),
        threads,
        offset: byte - byte.rem_euclid(accs[ka].width.max(1) as i64),
        through_barrier: None,
        benign: None,
        next_iteration: false,
        when: None,
        between_blocks: None,
        block_apart: 1,
        lanes_only: false,
        elements: 1,
        iteration: None,
        rests_on: Leaves::none(),
        keyed: None,
        pinned: None,
    }
}

/// Race `r`'s pair of `own` accesses again, at the same iterations, with
/// uniform leaf `pin.0` given the value `pin.1` (a sample the kernel's own
/// checks allow, where the evaluator's contradicted them), or with fewer
/// threads; `active(k, b, it)`: the threads that execute access `k` in
/// block `b` in iteration `it`. The race with its new witness, marked as
/// the first was, or `None` when the pair does not meet then.
pub fn recheck(
    evals: &Evals<'_, '_>,
    own: &[Access],
    r: &Race,
    pin: Option<(ValueId, i64)>,
    active: &mut dyn FnMut(usize, BlockId, usize) -> Vec<bool>,
) -> Option<Race> {
    if r.first >= own.len() || r.second >= own.len() || r.when.is_some() {
        return None;
    }
    let (ia, ib) = r.iterations();
    let mut rests = Leaves::none();
    let mut lists = Lists::default();
    let mut at = |k: usize, it: usize| -> Option<Sorted> {
        let a = &own[k];
        let (vals, on) = evals.eval_resting(a.addr_value?, Query { pin, ..Query::block(it) })?;
        rests = rests.union(&on);
        let act = active(k, evals.f.cfg.block_of(a.inst), it);
        Some(Sorted::new(vals.iter().zip(act).map(|(x, on)| on.then_some(x + a.offset)), &mut lists))
    };
    let (xa, xb) = (at(r.first, ia)?, at(r.second, ib)?);
    let n = conflict_in(own, r.first, r.second, (&[Some(xa)], &[Some(xb)]), false, &mut Sweeps::default())?;
    Some(Race {
        threads: n.threads,
        offset: n.offset,
        lanes_only: n.lanes_only,
        elements: n.elements,
        rests_on: Leaves::of(rests.iter().chain(pin.map(|p| p.0)).collect()),
        pinned: pin.or(r.pinned),
        ..r.clone()
    })
}

impl Race {
    /// The iteration each of the two threads is in at its access (0 and
    /// 1 for a race one iteration apart).
    pub fn iterations(&self) -> (usize, usize) {
        match (self.iteration, self.next_iteration) {
            (Some((it, _)), _) => (it, it),
            (None, true) => (0, 1),
            (None, false) => (0, 0),
        }
    }
}

/// The blocks from whose start instruction `x` is reached without a barrier.
fn reaching(f: &FunctionIr<'_>, is_bar: &dyn Fn(InstId) -> bool, x: InstId) -> BitSet {
    let cfg = &f.cfg;
    let mut r = BitSet::new(cfg.len());
    let home = cfg.block_of(x);
    let mut stack = Vec::new();
    if !cfg.blocks[home].insts().take_while(|&i| i != x).any(is_bar) {
        r.insert(home.index());
        stack.push(home);
    }
    // a predecessor passes on to the block when it holds no barrier at all
    let clear = |b: BlockId| !cfg.blocks[b].insts().any(is_bar);
    while let Some(b) = stack.pop() {
        for &p in &cfg.blocks[b].preds {
            if !r.contains(p.index()) && clear(p) {
                r.insert(p.index());
                stack.push(p);
            }
        }
    }
    r
}

/// For a thread one iteration ahead of another: per access, when it is in
/// one loop nested in no other (the samples of the next iteration move
/// every loop's counter), that loop, whether a barrier-free path leads
/// from the access to the end of a latch, and whether one leads from the
/// loop header's start to the access.
fn around_back_edge(f: &FunctionIr<'_>, is_bar: &dyn Fn(InstId) -> bool, x: InstId) -> Option<(crate::ir::LoopId, bool, bool)> {
    let cfg = &f.cfg;
    let home = cfg.block_of(x);
    let [l] = cfg.loops_containing(home)[..] else { return None };
    let lp = &cfg.loops[l];
    let to_latch = !cfg.blocks[home].insts().skip_while(|&i| i != x).skip(1).any(is_bar) && {
        let mut seen = BitSet::new(cfg.len());
        let mut stack = vec![home];
        let mut found = false;
        while let Some(blk) = stack.pop() {
            if lp.latches.contains(&blk) {
                found = true;
                break;
            }
            for &s in &cfg.blocks[blk].succs {
                if !seen.contains(s.index()) && cfg.in_loop(s, l) && s != lp.header && !cfg.blocks[s].insts().any(is_bar) {
                    seen.insert(s.index());
                    stack.push(s);
                }
            }
        }
        found
    };
    Some((l, to_latch, reaching(f, is_bar, x).contains(lp.header.index())))
}

/// Can a thread one iteration ahead meet another at access `b` while
/// that one is still at `a` (or the other way round), from
/// [`around_back_edge`] of each: one loop, and a barrier-free path from
/// one through the back edge to the other. `Some((a then b, b then a))`:
/// which of the two can be the earlier iteration's.
fn one_iteration_apart(a: Option<(crate::ir::LoopId, bool, bool)>, b: Option<(crate::ir::LoopId, bool, bool)>) -> Option<(bool, bool)> {
    match (a, b) {
        (Some((la, a_out, a_in)), Some((lb, b_out, b_in))) if la == lb && ((a_out && b_in) || (b_out && a_in)) => {
            Some((a_out && b_in, b_out && a_in))
        }
        _ => None,
    }
}

/// Pairs a thread one iteration ahead of another can meet, with which of
/// the two can be the earlier iteration's ([`one_iteration_apart`]).
type Cross = FxHashMap<(usize, usize), (bool, bool)>;

/// Can two threads be at instructions `a` and `b` between the same two
/// barriers? Yes when a path from one to the other crosses no barrier
/// (also around loop back edges: one thread an iteration ahead), or when a
/// thread-dependent branch (`divergent`: the blocks ending in one) leads to
/// each by another successor without a barrier. Two accesses that are only
/// reachable from a common barrier on the two sides of a uniform branch
/// (which every thread takes the same way) are not.
/// `reach`: [`reaching`] of the instructions asked so far.
fn concurrent(
    f: &FunctionIr<'_>,
    is_bar: &dyn Fn(InstId) -> bool,
    divergent: &[BlockId],
    a: InstId,
    b: InstId,
    reach: &mut FxHashMap<InstId, std::rc::Rc<BitSet>>,
) -> bool {
    if a == b {
        return true;
    }
    let cfg = &f.cfg;
    let mut reaching_from = |x: InstId| reach.entry(x).or_insert_with(|| std::rc::Rc::new(reaching(f, is_bar, x))).clone();
    let (ra, rb) = (reaching_from(a), reaching_from(b));
    // from `x` on to the end of its block, then into a block that reaches `y`
    let path = |x: InstId, y: InstId, ry: &BitSet| {
        let blk = &cfg.blocks[cfg.block_of(x)];
        // `y` later in the block before a barrier; a barrier first ends the path
        for i in (x.index() + 1..blk.end.index()).map(InstId::new) {
            if is_bar(i) {
                return false;
            }
            if i == y {
                return true;
            }
        }
        blk.succs.iter().any(|s| ry.contains(s.index()))
    };
    if path(a, b, &rb) || path(b, a, &ra) {
        return true;
    }
    divergent.iter().any(|&d| {
        let succs = &cfg.blocks[d].succs;
        succs.iter().any(|x| ra.contains(x.index()) && succs.iter().any(|y| y != x && rb.contains(y.index())))
    })
}

/// The accesses races are looked for among (a function's own, then those
/// of the callees it imports), with their per-thread addresses evaluated
/// on demand and the sampled leaves each access's evaluations rested on.
struct Sites<'e, 'f, 'a, 'x> {
    evals: &'e Evals<'f, 'a>,
    accs: &'x [Access],
    imported: &'x [Imported],
    rests: FxHashMap<usize, Leaves>,
    lists: Lists,
    /// An own address value's sorted list, by its values (kept here, so
    /// that their place names them) and the threads that run it (a block
    /// in an iteration, or every thread): the accesses through one address
    /// at other constant offsets (an unrolled loop's) take it shifted.
    through: FxHashMap<Through, (std::rc::Rc<Vec<i64>>, Sorted)>,
}

/// The values of an address (where they are kept) and the threads that
/// run it: a block in an iteration, or every thread.
type Through = (usize, Option<(BlockId, usize)>);

/// The threads that execute a CFG block in an iteration (every thread when
/// not given).
type Active<'x> = Option<&'x mut dyn FnMut(BlockId, usize) -> Vec<bool>>;

impl<'e, 'f, 'a, 'x> Sites<'e, 'f, 'a, 'x> {
    fn new(evals: &'e Evals<'f, 'a>, accs: &'x [Access], imported: &'x [Imported]) -> Self {
        Sites { evals, accs, imported, rests: FxHashMap::default(), lists: Lists::default(), through: FxHashMap::default() }
    }

    /// Access `k`'s (address, thread) pairs in iteration `it`, sorted.
    fn at(&mut self, k: usize, it: usize, active: &mut Active<'_>) -> Option<Sorted> {
        let (evals, a) = (self.evals, &self.accs[k]);
        let n = self.accs.len() - self.imported.len();
        let (vals, on) = evals.eval_resting(a.addr_value?, Query::block(it))?;
        let r = self.rests.entry(k).or_default();
        *r = r.union(&on);
        let block = evals.f.cfg.block_of(a.inst);
        let key = (std::rc::Rc::as_ptr(&vals) as usize, active.is_some().then_some((block, it)));
        if k < n {
            if let Some((_, s)) = self.through.get(&key) {
                return Some(s.shifted(a.offset));
            }
        }
        let on = match active.as_mut() {
            Some(act) => act(block, it),
            None => vec![true; evals.shape.lanes().len()],
        };
        // (given thread by thread, not first made a list)
        let s = match k.checked_sub(n) {
            // a callee's access: the argument plus the callee's offset, in the threads that run it
            Some(x) => {
                let offsets = self.imported[x].offsets[it].as_ref()?;
                let per_thread = vals.iter().zip(on).zip(offsets.iter()).map(|((v, on), o)| o.filter(|_| on).map(|o| v + o));
                Sorted::new(per_thread, &mut self.lists)
            }
            None => Sorted::new(vals.iter().zip(on).map(|(x, on)| on.then_some(*x)), &mut self.lists),
        };
        if k >= n {
            return Some(s);
        }
        // (sorted by address, a list moved by a constant is the same list)
        self.through.insert(key, (vals, s.clone()));
        Some(s.shifted(a.offset))
    }

    /// Access `k`'s addresses in the two sampled iterations.
    fn sampled(&mut self, k: usize, active: &mut Active<'_>) -> Option<Addresses> {
        let per_iteration: Addresses = (0..2).map(|it| self.at(k, it, active)).collect();
        per_iteration.iter().any(|x| x.is_some()).then_some(per_iteration)
    }
}

/// Per loop, whether later iterations than the two sampled are compared:
/// its trip count (more than two, or a runtime bound), the values that
/// move with its counters, and whether a thread-dependent branch inside
/// tests one. Computed once per loop.
#[derive(Default)]
struct LaterLoops(FxHashMap<crate::ir::LoopId, Option<(crate::ir::loops::Trips, BitSet, bool)>>);

impl LaterLoops {
    fn get(&mut self, evals: &Evals<'_, '_>, l: crate::ir::LoopId) -> Option<&(crate::ir::loops::Trips, BitSet, bool)> {
        use crate::ir::loops::Trips;
        let f = evals.f;
        self.0
            .entry(l)
            .or_insert_with(|| {
                // (two iterations or fewer: compared already)
                let test = |cond, n| Some(evals.uniform_at(cond, n)? != 0);
                let t = f.loops.trip_count(f, l, MAX_ITERATIONS, test).filter(|t| !matches!(t, Trips::Known(..=2)))?;
                let header = f.cfg.loops[l].header;
                let moving =
                    crate::ir::values::derived_through_joins(f, f.ssa.block_phis[header].iter().map(|&p| f.ssa.phis[p].value).collect());
                let guards = evals.d.branches.iter().any(|b| f.cfg.in_loop(b.block, l) && moving.contains(b.cond.index()));
                Some((t, moving, guards))
            })
            .as_ref()
    }

    /// Are accesses `a` and `b`, both in loop `l`, compared at its later
    /// iterations? Only a thread-dependent guard on the counter (`if (t ==
    /// i)`, `t > i`) picks threads iteration by iteration under a runtime
    /// bound; addresses that move alike with it meet early.
    fn compares(&mut self, evals: &Evals<'_, '_>, l: crate::ir::LoopId, a: &Access, b: &Access) -> bool {
        let Some((trips, moving, guards_move)) = self.get(evals, l) else { return false };
        let moves = |x: &Access| x.addr_value.is_some_and(|v| moving.contains(v.index()));
        *guards_move || (matches!(trips, crate::ir::loops::Trips::Known(_)) && (moves(a) || moves(b)))
    }
}

/// Pairs of accesses (the lower index first).
type Pairs = FxHashSet<(usize, usize)>;

/// Races among `pairs` of `sites`' accesses for one block shape; `sampled`:
/// their addresses in the sampled iterations where computed already, and
/// the pairs that meet there (in the same iteration or one apart: the
/// others are compared at later iterations only). The pairs in `cross` (a
/// thread may be one iteration ahead of the other) are also compared across
/// the two iterations sampled.
fn races_at(
    sites: &mut Sites<'_, '_, '_, '_>,
    sampled: Option<(&[Option<Addresses>], &Pairs)>,
    pairs: &[(usize, usize)],
    cross: &Cross,
    active: &mut Active<'_>,
    warp_synced: &BTreeSet<(usize, usize)>,
    loops: &mut LaterLoops,
) -> Vec<Race> {
    let (evals, accs) = (sites.evals, sites.accs);
    let f = evals.f;
    let n = accs.len() - sites.imported.len();
    let computed: Vec<Option<Addresses>>;
    let (addrs, met) = match sampled {
        Some((a, met)) => (a, Some(met)),
        None => {
            let needed: BTreeSet<usize> = pairs.iter().flat_map(|p| [p.0, p.1]).collect();
            computed = (0..accs.len()).map(|k| if needed.contains(&k) { sites.sampled(k, active) } else { None }).collect();
            (&computed[..], None)
        }
    };
    // (every list asked about is kept by `sites` while these are)
    let mut sweeps = Sweeps::default();
    let mut found: Vec<Race> = pairs
        .iter()
        .filter(|p| met.is_none_or(|m| m.contains(p)))
        .filter_map(|&(ka, kb)| {
            let synced = warp_synced.contains(&(ka, kb));
            conflict_between(accs, addrs, ka, kb, synced, &mut sweeps).or_else(|| {
                // a thread one iteration ahead of another: the samples of iterations 0 and 1 against each other
                let &(a_first, b_first) = cross.get(&(ka, kb))?;
                let (aa, ab) = (addrs[ka].as_ref()?, addrs[kb].as_ref()?);
                // (the access of iteration 0 comes first: it names the kind)
                [(a_first, ka, kb, aa, ab), (b_first, kb, ka, ab, aa)].into_iter().filter(|o| o.0).find_map(|(_, k0, k1, x0, x1)| {
                    let mut r = conflict_in(accs, k0, k1, (x0.get(..1)?, x1.get(1..2)?), synced, &mut sweeps)?;
                    r.next_iteration = true;
                    Some(r)
                })
            })
        })
        .collect();
    // later iterations: a pair in one loop whose trip count is a known constant is compared
    // at each of them too, when its addresses or the loop's guards move with the counters
    // (`if (t == i) s[t + 4] = …` meets thread 7's `s[t]` at i = 3 only)
    use crate::ir::loops::Trips;
    let raced: BTreeSet<(usize, usize)> = found.iter().map(|r| (r.first.min(r.second), r.first.max(r.second))).collect();
    // each access's addresses in a later iteration, computed once
    let mut later: FxHashMap<(usize, usize), Option<Sorted>> = FxHashMap::default();
    for &(ka, kb) in pairs {
        // (a callee's offsets are known for the first two iterations only)
        if raced.contains(&(ka, kb)) || ka >= n || kb >= n {
            continue;
        }
        let loop_of = |k: usize| f.cfg.loop_of(f.cfg.block_of(accs[k].inst));
        let Some(l) = loop_of(ka).filter(|&l| loop_of(kb) == Some(l)) else { continue };
        if !loops.compares(evals, l, &accs[ka], &accs[kb]) {
            continue;
        }
        let Some(&(trips, ..)) = loops.get(evals, l) else { continue };
        let last = match trips {
            Trips::Known(t) => t,
            Trips::Runtime => RUNTIME_ITERATIONS,
        };
        let synced = warp_synced.contains(&(ka, kb));
        for it in 2..last {
            for k in [ka, kb] {
                if let std::collections::hash_map::Entry::Vacant(e) = later.entry((k, it)) {
                    e.insert(sites.at(k, it, active));
                }
            }
            let (xa, xb) = (std::slice::from_ref(&later[&(ka, it)]), std::slice::from_ref(&later[&(kb, it)]));
            if let Some(mut r) = conflict_in(accs, ka, kb, (xa, xb), synced, &mut sweeps) {
                r.iteration = Some((it, trips));
                found.push(r);
                break;
            }
        }
    }
    for r in found.iter_mut() {
        r.rests_on = rests_of(&sites.rests, r);
    }
    found
}

/// What a race's witness rests on: the sampled leaves its two accesses'
/// addresses were evaluated with (`rests`, per access).
fn rests_of(rests: &FxHashMap<usize, Leaves>, r: &Race) -> Leaves {
    [r.first, r.second].iter().filter_map(|k| rests.get(k)).fold(Leaves::none(), |acc, x| acc.union(x))
}

/// Iterations of a loop compared one by one, at most (a loop that runs
/// longer keeps its first two).
const MAX_ITERATIONS: usize = 64;

/// Iterations compared in a loop whose bound is a runtime value (a race
/// in iteration k then needs the loop to run k times).
pub const RUNTIME_ITERATIONS: usize = 16;

#[cfg(test)]
mod tests {
    use super::{by_address, sweep, Lists, Sorted, Sweeps};

    /// The sweep against every pair of threads: the pair with the
    /// smallest (larger thread, first, second) whose bytes overlap, the
    /// byte both touch first, whether some pair is of two warps, and the
    /// distinct addresses of the first list in a pair; for lists with
    /// broadcasts, shifts and wide accesses, and each kind of pair the
    /// race check asks for (any two, two threads, threads of two warps).
    #[test]
    fn sweep_finds_what_every_pair_gives() {
        let kinds: [&dyn Fn(usize, usize) -> bool; 3] = [&|_, _| true, &|t1, t2| t1 != t2, &|t1, t2| t1 / 32 != t2 / 32];
        let mut next = crate::xorshift(0x51_7cc1_b727_220a);
        for round in 0..4_000 {
            let list = |next: &mut dyn FnMut(u64) -> u64| {
                let n = 1 + next(96) as usize;
                let (group, stride) = (1 + next(40) as usize, [0i64, 1, 4, 8, 16][next(5) as usize]);
                let mut v: Vec<(i64, usize)> = Vec::new();
                for t in 0..n {
                    if next(6) != 0 {
                        // rows of `group` threads at one address, a few threads off their row
                        let off = if next(4) == 0 { 4 * next(3) as i64 } else { 0 };
                        v.push((stride * (t / group) as i64 + off, t));
                    }
                }
                v.sort_unstable();
                v
            };
            let (va, vb) = (list(&mut next), list(&mut next));
            let (sa, sb) = (next(9) as i64 - 4, next(9) as i64 - 4);
            let (wa, wb) = ([1u32, 4, 8][next(3) as usize], [1u32, 4, 8][next(3) as usize]);
            let ok = kinds[round % 3];
            let mut want: Option<(usize, usize, i64)> = None;
            let (mut cross, mut xs) = (false, Vec::new());
            for &(x, t1) in &va {
                for &(y, t2) in &vb {
                    let (x, y) = (x + sa, y + sb);
                    if x < y + wb as i64 && y < x + wa as i64 && ok(t1, t2) {
                        cross |= t1 / 32 != t2 / 32;
                        xs.push(x);
                        if want.is_none_or(|(u, w, _)| (t1.max(t2), t1, t2) < (u.max(w), u, w)) {
                            want = Some((t1, t2, x.max(y)));
                        }
                    }
                }
            }
            xs.sort_unstable();
            xs.dedup();
            let got = sweep((&va, sa), (&vb, sb), wa, wb, ok, false).map(|w| (w.threads.0, w.threads.1, w.byte, w.cross, w.elements));
            assert_eq!(got, want.map(|(t1, t2, byte)| (t1, t2, byte, cross, xs.len())), "{} {va:?}+{sa} {vb:?}+{sb} {wa} {wb}", round % 3);
            assert_eq!(sweep((&va, sa), (&vb, sb), wa, wb, ok, true).is_some(), want.is_some());
        }
    }

    /// A sweep kept is the sweep made again: copies of lists at other
    /// offsets (a kept one among them), lanes of one warp apart or not.
    #[test]
    fn a_sweep_kept_moves_with_its_lists() {
        let mut next = crate::xorshift(0x2545_f491_4f6c_dd1d);
        let mut lists = Lists::default();
        let made: Vec<Sorted> = (0..6)
            .map(|_| {
                let n = 1 + next(80) as usize;
                let per_thread: Vec<Option<i64>> = (0..n).map(|_| (next(5) != 0).then(|| 4 * next(n as u64) as i64)).collect();
                Sorted::new(per_thread.iter().copied(), &mut lists)
            })
            .collect();
        let mut sweeps = Sweeps::default();
        let mut kept = 0;
        for _ in 0..3_000 {
            let (x, y) = (&made[next(6) as usize], &made[next(6) as usize]);
            let (va, vb) = (x.shifted(4 * next(6) as i64 - 8), y.shifted(4 * next(6) as i64 - 8));
            let (wa, wb, synced) = ([1u32, 4, 8][next(3) as usize], [1u32, 4, 8][next(3) as usize], next(2) == 0);
            let ok = |t1: usize, t2: usize| t1 != t2 && !(synced && t1 / 32 == t2 / 32);
            let want = sweep(va.parts(), vb.parts(), wa, wb, &ok, false).map(|w| (w.threads, w.byte, w.cross, w.elements));
            kept += sweeps.0.len();
            let got = sweeps.witness(&va, &vb, wa, wb, synced).map(|w| (w.threads, w.byte, w.cross, w.elements));
            assert_eq!(got, want, "{:?} {:?} {wa} {wb} {synced}", va.first(), vb.first());
        }
        // (most came from a sweep kept)
        assert!(sweeps.0.len() < 3_000 && kept > 0, "{}", sweeps.0.len());
    }

    /// Placing by counting gives the order a sort gives: rows, strides,
    /// broadcasts, a few threads off, negative and far-apart addresses.
    #[test]
    fn placed_by_address_as_a_sort_orders() {
        let mut next = crate::xorshift(0x9e37_79b9_7f4a_7c15);
        let mut counted = 0;
        for round in 0..3_000 {
            let n = 1 + next(300) as usize;
            let stride = [0i64, 1, 4, 8, 64, -4, 12][next(7) as usize];
            let base = next(1 << 20) as i64 - (1 << 19);
            let wrap = 1 + next(40) as usize;
            let mut v: Vec<(i64, usize)> = Vec::new();
            for t in 0..n {
                if next(5) == 0 {
                    continue; // a thread that does not run it
                }
                let a = match round % 4 {
                    0 => base + stride * t as i64,
                    1 => base + stride * (t % wrap) as i64 + 256 * (t / wrap) as i64,
                    2 => base + next(4 * n as u64) as i64,
                    _ if next(100) == 0 => [i64::MIN, i64::MAX, 0][next(3) as usize],
                    _ => base - stride * t as i64,
                };
                v.push((a, t));
            }
            let mut want = v.clone();
            want.sort_unstable();
            let lo = v.iter().map(|x| x.0).min().unwrap_or(0);
            let step = v.iter().fold(0u64, |acc, x| acc | x.0.wrapping_sub(lo) as u64).trailing_zeros().min(63);
            counted +=
                usize::from(v.iter().any(|x| x.0 != lo) && v.iter().all(|x| x.0.wrapping_sub(lo) as u64 >> step < 4 * v.len() as u64));
            assert_eq!(by_address(v.clone()), want, "{v:?}");
        }
        assert!(counted > 1_000, "{counted}");
    }

    /// Two accesses at the same addresses in every thread whose threads'
    /// addresses are at least both widths apart meet in no two threads
    /// ([`super::Sorted::apart`], the check's shortcut): the sweep finds
    /// none either; where they are closer it may.
    #[test]
    fn threads_apart_at_the_same_addresses_never_meet() {
        let mut next = crate::xorshift(0x2545_f491_4f6c_dd1d);
        let (mut apart, mut met) = (0, 0);
        for _ in 0..3_000 {
            let n = 1 + next(64) as usize;
            let stride = [0i64, 1, 2, 4, 8, 16, -8][next(7) as usize];
            let per_thread: Vec<Option<i64>> =
                (0..n).map(|t| (next(6) != 0).then(|| stride * t as i64 + if next(8) == 0 { next(5) as i64 } else { 0 })).collect();
            let v = super::Sorted::new(per_thread.iter().copied(), &mut Default::default());
            let (wa, wb) = ([1u32, 4, 8][next(3) as usize], [1u32, 4, 8][next(3) as usize]);
            let found = sweep(v.parts(), v.parts(), wa, wb, &|t1, t2| t1 != t2, false).is_some();
            if v.apart(wa.max(wb)) {
                apart += 1;
                assert!(!found, "{per_thread:?} {wa} {wb}");
            }
            met += usize::from(found);
        }
        assert!(apart > 500 && met > 500, "{apart} {met}");
    }

    /// An address list moved by a constant is the list made from the moved
    /// addresses (what the race check's sites reuse for the accesses of one
    /// address at other offsets): the same shared list, the shift moved,
    /// for rows, strides, broadcasts, threads that do not run it, and none.
    #[test]
    fn a_list_moved_is_the_list_of_the_moved_addresses() {
        let mut next = crate::xorshift(0x6a09_e667_f3bc_c908);
        let mut lists = super::Lists::default();
        for round in 0..2_000 {
            let n = next(80) as usize;
            let stride = [0i64, 1, 4, 8, 64, -4, 12][next(7) as usize];
            let per_thread: Vec<Option<i64>> = (0..n)
                .map(|t| match round % 3 {
                    _ if next(5) == 0 => None,
                    0 => Some(stride * t as i64),
                    1 => Some(stride * (t % 7) as i64 + 256 * (t / 7) as i64),
                    _ => Some(next(4 * n as u64 + 1) as i64),
                })
                .collect();
            let by = next(1 << 12) as i64 - (1 << 11);
            let moved: Vec<Option<i64>> = per_thread.iter().map(|a| a.map(|a| a + by)).collect();
            let (a, b) = (
                super::Sorted::new(per_thread.iter().copied(), &mut lists).shifted(by),
                super::Sorted::new(moved.iter().copied(), &mut lists),
            );
            assert_eq!(a.key(), b.key(), "{per_thread:?} + {by}");
            assert_eq!(a.iter().collect::<Vec<_>>(), b.iter().collect::<Vec<_>>());
        }
    }

    /// The run of pairs at an address ends where a search of the whole
    /// list says, for runs of every length at every place.
    #[test]
    fn runs_end_where_the_address_changes() {
        let mut next = crate::xorshift(0xbb67_ae85_84ca_a73b);
        for _ in 0..3_000 {
            let mut v: Vec<(i64, usize)> = Vec::new();
            while v.len() < 1 + next(300) as usize {
                let run = 1 + if next(4) == 0 { next(200) } else { next(5) } as usize;
                let a = v.last().map_or(0, |x| x.0 + 1 + next(3) as i64);
                v.extend((0..run).map(|t| (a, t)));
            }
            let i = next(v.len() as u64) as usize;
            assert_eq!(super::run_end(&v, i), i + v[i..].partition_point(|e| e.0 == v[i].0), "{i} in {} pairs", v.len());
        }
    }
}
