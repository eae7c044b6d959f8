//! Memory access analysis: for every `ld`/`st`/`atom`/`red` to global or
//! shared memory, its address in thread terms and the cost of one warp
//! request — 32-byte sectors per request for global memory (sm_70+), bank
//! conflict degree for shared memory (32 banks × 4 bytes; 8-byte accesses
//! per half warp, 16-byte per quarter warp).
//!
//! The address is the affine form of the divergence domain (base symbol +
//! constant + `c·tid`). Base pointers (kernel parameters, `.shared` and
//! `.global` symbols) are 256-byte aligned, so a known constant offset
//! counts exactly. Coefficients in a symbol are resolved from the launch
//! shape (`%ntid`) or a loop counter's first value; other symbolic strides
//! are taken as large (4096 bytes) and said so. Non-affine thread-only
//! addresses (`(t & 31) * 33`) are evaluated for every lane. A request
//! that is one counted before moved by whole sectors (global) or words
//! (shared banks), by the same threads, costs what that one did: the
//! copies of an unrolled loop are counted once (`warp_counts`).
//!
//! A generic address whose space is not known is analysed as global and
//! marked `assumed`. In a device function analysed for one call context,
//! its parameters hold the caller's values (`Divergence::call`); addresses
//! computed from parameters no context binds (a function analysed once for
//! every caller, a struct argument) are left out (`from_arguments`), and the
//! facts layer counts them as not analysed.
//!
//! Owns: access sites and their predictions. Does not own: which lanes are
//! active (the caller passes a mask) or deciding what to warn (lints).

pub mod footprint;

use crate::divergence::eval::{EvalErr, Evaluator, Leaves};
use crate::divergence::{AbsVal, Coef, Divergence};
use crate::ir::dataflow::BitSet;
use crate::ir::inst::{Space, Special};
use crate::ir::{FunctionIr, InstId, ValueDef, ValueId};
use crate::model::{conflict_degree, sectors, Shape, WARP};
pub use crate::model::{covered_bytes, SECTOR};
use crate::ptx::Operand;
use std::cell::{OnceCell, RefCell};
use std::rc::Rc;

/// Stride assumed for a coefficient in an unknown symbol (e.g. a row pitch `n`).
pub const SYMBOLIC_STRIDE: i64 = 4096;

pub use crate::ir::inst::AccessKind;

/// One memory access site.
#[derive(Clone, Debug)]
pub struct Access {
    pub inst: InstId,
    pub kind: AccessKind,
    /// The space it is analysed in (global or shared).
    pub space: Space,
    /// No space is known for its generic address: analysed as global.
    pub assumed: bool,
    /// Bytes per lane (type size × vector length).
    pub width: u32,
    /// The address value (register + offset).
    pub addr: AbsVal,
    /// SSA value of the address register, if any.
    pub addr_value: Option<ValueId>,
    pub offset: i64,
}

/// How the per-lane addresses were obtained.
#[derive(Clone, Debug, PartialEq)]
pub enum Method {
    /// From the affine form; `symbolic` names strides taken as large.
    Affine { symbolic: bool },
    /// Evaluated for every lane.
    Evaluated,
}

/// A global access's cost when its warps' base addresses are not aligned
/// to a sector (the worst offset, in steps of the element width).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Misaligned {
    pub sectors: u32,
    pub cause: MisalignCause,
}

/// Why a warp's alignment is known only at run time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MisalignCause {
    /// The stride along `threadIdx.y` or `.z` (a row pitch) is a runtime
    /// value: rows start on a sector only when it is a multiple of 32 bytes.
    RowPitch,
    /// A runtime value (an offset, or a pitch times the block index) is
    /// added to the address.
    Offset,
    /// The base differs between blocks or could not be evaluated.
    UnknownBase,
}

/// A lane stride that is a value read from memory (`x[i * strides[d]]`):
/// known only at run time, the cost depends on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RuntimeStride {
    /// The loaded value the stride is a multiple of.
    pub value: ValueId,
    /// The load that read it.
    pub load: InstId,
    /// Bytes between neighbouring lanes per unit of the value.
    pub bytes_per_unit: i64,
    /// Sectors per request (typical warp) when the value is 1.
    pub sectors_at_one: u32,
}

/// What one warp request of an access costs.
#[derive(Clone, Debug, PartialEq)]
pub struct Prediction {
    pub method: Method,
    /// The lane stride is a value read from memory: `sectors` is for a
    /// large one, `sectors_at_one` for 1.
    pub runtime_stride: Option<RuntimeStride>,
    /// Warps with at least one active lane (requests per block).
    pub requests: usize,
    /// Global: sectors per request, (typical warp, worst warp).
    pub sectors: (u32, u32),
    /// Global: sectors a contiguous aligned access of the same bytes needs (typical warp).
    pub ideal: u32,
    /// Global: the typical warp's sectors when its base is misaligned, if
    /// that costs more and the alignment is known only at run time.
    pub misaligned: Option<Misaligned>,
    /// Shared: conflict degree (typical warp, worst warp).
    pub conflict: (u32, u32),
    /// Byte stride between consecutive lanes along x, when constant.
    pub lane_stride: Option<i64>,
    /// Byte strides along (x, y, z) as used for the prediction.
    pub strides: [i64; 3],
    /// The unknown symbols taken as large for `strides`, each with the
    /// bytes per thread step it gave.
    pub assumed_strides: Vec<(StrideSymbol, i64)>,
    /// The sampled leaves the addresses were evaluated with (none: the
    /// prediction holds for every value of the kernel's parameters).
    pub rests_on: Leaves,
    /// Those that decide only where the warps' addresses start within a
    /// sector (an affine address's base): other values give the misaligned
    /// variant.
    pub aligned_on: Leaves,
    /// Per-thread byte offsets (relative to the base), for reuse analysis.
    pub offsets: Offsets,
}

impl Prediction {
    /// Take in the prediction for an interior block (`q`): the typical warp
    /// is an interior block's, the worst is the worse of both blocks'.
    /// Block 0's lanes and offsets stay (for reuse and races).
    pub fn with_interior(&mut self, q: Prediction) {
        self.sectors = (q.sectors.0, self.sectors.1.max(q.sectors.1));
        self.ideal = q.ideal;
        self.misaligned = q.misaligned;
        self.rests_on = self.rests_on.union(&q.rests_on);
        self.aligned_on = self.aligned_on.union(&q.aligned_on);
    }
}

/// A global or shared access with its predicted cost.
#[derive(Clone, Debug)]
pub struct AccessFact {
    pub access: Access,
    /// One warp request's cost for the threads that execute it (`None`: the
    /// address depends on data, or no thread of the block executes it).
    pub prediction: Option<Prediction>,
    /// Global accesses under a guard that masks threads: (typical sectors,
    /// ideal) with every thread active, to tell waste that comes from the
    /// guard from waste that comes from the address.
    pub unmasked: Option<(u32, u32)>,
    /// The warp footprint group it belongs to (index in `KernelFacts::groups`).
    pub group: Option<usize>,
    /// Some thread of the block shape executes it (as far as guards tell).
    pub reached: bool,
}

/// The global and shared memory accesses of a function (not those whose
/// address a device function computes from its arguments: see
/// [`from_arguments`]).
/// (Given one at a time: a caller that makes more of each does not hold
/// the list of them beside its own.)
pub fn accesses<'f>(f: &'f FunctionIr<'_>, d: &'f Divergence) -> impl Iterator<Item = Access> + 'f {
    accesses_in(f, d, accesses_of(f))
}

/// The `.local` accesses of a function (each thread's own memory: its
/// arrays the compiler could not keep in registers), as [`accesses`] gives
/// the others.
pub fn local_accesses(f: &FunctionIr<'_>, d: &Divergence) -> Vec<Access> {
    accesses_in(f, d, memory_operands(f, |s| s == Space::Local)).collect()
}

fn accesses_in<'f>(
    f: &'f FunctionIr<'_>,
    d: &'f Divergence,
    of: impl Iterator<Item = (InstId, usize)> + 'f,
) -> impl Iterator<Item = Access> + 'f {
    let args = from_arguments(f, d);
    of.filter(move |&(i, k)| !f.operand_value(i, k).zip(args.as_ref()).is_some_and(|(v, a)| a.contains(v.index()))).filter_map(|(i, k)| {
        let inst = &f.insts[i];
        let Some(Operand::Addr(a)) = inst.operand(k) else { return None };
        let addr = d.operand(f, i, &inst.operands()[k]);
        let (kind, (space, assumed)) = (inst.access()?, f.spaces.analysed(f, i));
        Some(Access {
            inst: i,
            kind,
            space,
            assumed,
            width: inst.access_width(),
            addr,
            addr_value: f.operand_value(i, k),
            offset: a.offset,
        })
    })
}

/// In a device function, the values computed from its own parameters:
/// what each thread passes is the caller's, and the function is analysed
/// once for all its callers, so their values per thread are not known here.
/// `None` for a kernel. One forward pass over the SSA users.
pub fn from_arguments(f: &FunctionIr<'_>, d: &Divergence) -> Option<BitSet> {
    if f.func.is_entry {
        return None;
    }
    let is_param = |name: &str| f.func.params.iter().any(|p| p.name == name);
    let seeds: Vec<ValueId> = f
        .ssa
        .values
        .iter_enumerated()
        .filter(|&(v, def)| match *def {
            // (a parameter bound to its caller's value in a call context is known)
            ValueDef::Inst { inst, .. } => f.insts[inst].param_read().is_some_and(|(p, _)| is_param(p)) && !d.call.values.contains_key(&v),
            // parameters passed in registers (`.func f(.reg .b64 %a)`)
            ValueDef::Entry(r) => is_param(f.ssa.regs[r as usize]),
            ValueDef::Phi(_) => false,
        })
        .map(|(v, _)| v)
        .collect();
    Some(crate::ir::values::derived_from(f, seeds))
}

/// The global and shared accesses of a function with their address operand.
pub(crate) fn accesses_of<'f>(f: &'f FunctionIr<'_>) -> impl Iterator<Item = (InstId, usize)> + 'f {
    memory_operands(f, |s| matches!(s, Space::Global | Space::Shared))
}

/// The memory instructions of a function analysed in a space `keep`
/// accepts, with their address operand.
fn memory_operands<'f>(f: &'f FunctionIr<'_>, keep: fn(Space) -> bool) -> impl Iterator<Item = (InstId, usize)> + 'f {
    f.insts.iter_enumerated().filter_map(move |(i, inst)| {
        inst.access()?;
        let k = inst.address_operand()?;
        keep(f.spaces.analysed(f, i).0).then_some((i, k))
    })
}

/// Value given to scalar kernel parameters when an address must be
/// evaluated for every lane (a large power of two: aligned, and a large stride).
pub const SCALAR_SAMPLE: i64 = 1024;

/// How many instructions deep [`Evals::eval_partial`] looks for sources
/// that decide a value no evaluation gives.
const PARTIAL_DEPTH: u32 = 4;

/// A value's per-thread values where known, as [`Evals::eval_partial`]
/// works them out: kept whole where the evaluation gave every thread's, a
/// constant gives them or no thread's is known, a list of each thread's
/// (`None`: unknown) otherwise.
enum Partial {
    Known(Rc<Vec<i64>>),
    Const(i64),
    Unknown,
    Threads(Vec<Option<i64>>),
}

impl Partial {
    /// Thread `t`'s value, where known.
    fn get(&self, t: usize) -> Option<i64> {
        match self {
            Partial::Known(x) => Some(x[t]),
            Partial::Const(c) => Some(*c),
            Partial::Unknown => None,
            Partial::Threads(v) => v[t],
        }
    }

    /// Some thread's value is known (of `n` threads).
    fn any_known(&self, n: usize) -> bool {
        match self {
            Partial::Known(x) => !x.is_empty(),
            Partial::Const(_) => n > 0,
            Partial::Unknown => false,
            Partial::Threads(v) => v.iter().any(Option::is_some),
        }
    }

    /// Thread `t` (past the first) holds other than thread `t - 1`.
    fn changes_at(&self, t: usize) -> bool {
        match self {
            Partial::Known(x) => x[t] != x[t - 1],
            Partial::Const(_) | Partial::Unknown => false,
            Partial::Threads(v) => v[t] != v[t - 1],
        }
    }

    /// Every thread holds the same (known or not).
    fn same_in_all(&self) -> bool {
        match self {
            Partial::Known(x) => x.iter().all(|y| *y == x[0]),
            Partial::Const(_) | Partial::Unknown => true,
            Partial::Threads(v) => v.iter().all(|y| *y == v[0]),
        }
    }

    /// Each value mapped by `f` (`!p` of a predicate).
    fn map(self, f: impl Fn(i64) -> i64) -> Partial {
        match self {
            Partial::Known(x) => Partial::Known(Rc::new(x.iter().map(|&y| f(y)).collect())),
            Partial::Const(c) => Partial::Const(f(c)),
            Partial::Unknown => Partial::Unknown,
            Partial::Threads(v) => Partial::Threads(v.into_iter().map(|y| y.map(&f)).collect()),
        }
    }

    /// One entry per thread (of `n`; an evaluation's own list as it is).
    fn into_threads(self, n: usize) -> Vec<Option<i64>> {
        match self {
            Partial::Known(x) => x.iter().map(|&y| Some(y)).collect(),
            Partial::Const(c) => vec![Some(c); n],
            Partial::Unknown => vec![None; n],
            Partial::Threads(v) => v,
        }
    }
}

/// What an evaluation fixes besides the value: the threads (the whole
/// block, or only its first few), `%ctaid`, the value given to other
/// uniform values (`None`: give up on them), one of them pinned to a value
/// of its own, and the loop iteration (loop counters at their
/// `iteration`-th value, first: 0). Pointers (by the space inference) are
/// 0 — allocations are 256-byte aligned — and `%ntid` comes from the shape.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct Query {
    /// Only the block's first this many threads (`None`: every thread):
    /// the first thread's address, or two witness threads' values.
    pub leading: Option<u32>,
    /// `%ctaid` in each dimension.
    pub ctaid: [i64; 3],
    pub scalar: Option<i64>,
    pub iteration: usize,
    /// A uniform leaf given its own value (a parameter whose values the
    /// race check solves for).
    pub pin: Option<(ValueId, i64)>,
}

impl Query {
    /// Every thread of block 0, parameters at [`SCALAR_SAMPLE`].
    pub fn block(iteration: usize) -> Query {
        Query { leading: None, ctaid: [0; 3], scalar: Some(SCALAR_SAMPLE), iteration, pin: None }
    }

    /// The first thread of block `ctaid`, parameters at [`SCALAR_SAMPLE`].
    pub fn first_thread(ctaid: [i64; 3], iteration: usize) -> Query {
        Query { leading: Some(1), ctaid, ..Query::block(iteration) }
    }

    /// How many of the shape's threads the query evaluates.
    pub fn threads(&self, shape: &Shape) -> usize {
        let all = shape.lanes().len();
        self.leading.map_or(all, |n| (n as usize).min(all))
    }

    /// The same query, with leading threads that cover the whole block
    /// asked as the whole block (one evaluator for both).
    fn within(self, shape: &Shape) -> Query {
        match self.leading {
            Some(n) if n as usize >= shape.lanes().len() => Query { leading: None, ..self },
            _ => self,
        }
    }
}

/// Per-thread byte offsets of an access, none for a thread that does not
/// execute it: the offsets from the first thread's, kept once per function
/// for every access whose offsets differ from them by one constant (the
/// accesses of an unrolled loop share one list), that constant, and a bit
/// per thread (a prediction is kept for every access of a function).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Offsets {
    vals: std::sync::Arc<[i64]>,
    shift: i64,
    active: Vec<u64>,
}

/// The offset lists made so far, each once ([`Offsets`]).
pub type OffsetLists = crate::ir::entity::Shared<std::sync::Arc<[i64]>>;

impl Offsets {
    /// The offsets `vals` of the threads, those past `active` running the
    /// access.
    pub fn new(vals: Vec<i64>, active: &[bool], lists: &mut OffsetLists) -> Offsets {
        let (vals, shift) = relative(vals, lists);
        Offsets::moved(vals, shift, active)
    }

    /// The offsets `vals` (a list kept once) moved by `shift`.
    fn moved(vals: std::sync::Arc<[i64]>, shift: i64, active: &[bool]) -> Offsets {
        let active = (0..vals.len().div_ceil(64)).map(|k| thread_bits(active, k * 64..(k * 64 + 64).min(vals.len()))).collect();
        Offsets { vals, shift, active }
    }

    /// Thread `t`'s offset, if it executes the access.
    pub fn get(&self, t: usize) -> Option<i64> {
        self.vals.get(t).map(|x| x + self.shift).filter(|_| self.runs(t))
    }

    /// Does thread `t` execute the access?
    fn runs(&self, t: usize) -> bool {
        self.active.get(t / 64).is_some_and(|w| w >> (t % 64) & 1 == 1)
    }

    /// Thread `t`'s offset, whether it executes the access or not.
    fn at(&self, t: usize) -> i64 {
        self.vals[t] + self.shift
    }

    pub fn len(&self) -> usize {
        self.vals.len()
    }

    pub fn is_empty(&self) -> bool {
        self.vals.is_empty()
    }

    /// Every thread's offset, in order.
    pub fn iter(&self) -> impl Iterator<Item = Option<i64>> + '_ {
        (0..self.vals.len()).map(|t| self.get(t))
    }
}

/// Per-thread values as those from the first thread's (a list kept once)
/// and the first thread's.
type Relative = (std::sync::Arc<[i64]>, i64);

/// [`Relative`] values of `vals`.
fn relative(mut vals: Vec<i64>, lists: &mut OffsetLists) -> Relative {
    let shift = vals.first().copied().unwrap_or(0);
    vals.iter_mut().for_each(|x| *x -= shift);
    (lists.share(vals.into()), shift)
}

/// The threads of `range` (at most 64) that run an access, a bit each
/// (those past `active` run it): eight flags at a time, gathered by one
/// multiplication, where `active` holds all of them.
fn thread_bits(active: &[bool], range: std::ops::Range<usize>) -> u64 {
    let start = range.start;
    match active.get(range.clone()) {
        Some(flags) => flags.chunks(8).enumerate().fold(0u64, |w, (k, c)| {
            let mut bytes = [0u8; 8];
            bytes.iter_mut().zip(c).for_each(|(b, &on)| *b = on as u8);
            // (byte i's low bit lands at bit 56 + i)
            w | (u64::from_le_bytes(bytes).wrapping_mul(0x0102_0408_1020_4080) >> 56) << (8 * k)
        }),
        None => range.fold(0u64, |w, t| w | (active.get(t).copied().unwrap_or(true) as u64) << (t - start)),
    }
}

/// The evaluators of one function and block shape, one per [`Query`],
/// kept across every access, branch condition and race check of the
/// function, so that the values they share are computed once.
pub struct Evals<'f, 'a> {
    pub f: &'f FunctionIr<'a>,
    pub d: &'f Divergence,
    pub shape: &'f Shape,
    pool: RefCell<rustc_hash::FxHashMap<Query, Evaluator<'f, 'a>>>,
    /// What the pool's evaluators over the block's threads, and those over
    /// its first thread alone, compute once for all of them (those over
    /// other leading threads compute it for themselves).
    same: [crate::divergence::eval::SameThreads; 2],
    /// The loaded pointers addresses are computed from
    /// ([`crate::ir::values::loaded_pointers`]).
    pointers: OnceCell<rustc_hash::FxHashSet<ValueId>>,
    /// The uniform values some evaluation gave a sample (not fixed by the
    /// kernel, the query or the memory model), with the first sample given.
    sampled: RefCell<Sampled>,
    /// While [`Evals::recorded`] runs: the sampled leaves of the values
    /// evaluated so far.
    recording: RefCell<Option<Leaves>>,
    /// The grid's dimensions (`%nctaid`), when the launch is known.
    grid: Option<[u32; 3]>,
    /// The predictions' per-thread offsets, each list once.
    offset_lists: RefCell<OffsetLists>,
    /// The values computed from a loop header's phi (they differ from one
    /// iteration to the next), once asked for.
    varying: OnceCell<Rc<BitSet>>,
    /// Each loop's trip count, as far as [`Evals::trips`] was asked.
    trips: RefCell<rustc_hash::FxHashMap<crate::ir::LoopId, Option<crate::ir::loops::Trips>>>,
    /// Whether a runtime value moves an address value's first thread by
    /// other than whole sectors, by the value and the loop around the
    /// access ([`moved_by_runtime_value`]: the access's constant offset
    /// cancels out), as far as asked.
    moved: RefCell<rustc_hash::FxHashMap<(ValueId, Option<crate::ir::LoopId>), bool>>,
    /// What the warps of the accesses predicted so far cost, each request
    /// once up to a move that costs nothing ([`warp_counts`]).
    counted: RefCell<rustc_hash::FxHashMap<CountKey, Option<WarpCounts>>>,
    /// The per-thread offsets of affine addresses, by their byte strides
    /// ([`Evals::affine_offsets`]).
    affine: RefCell<rustc_hash::FxHashMap<[i64; 3], Relative>>,
}

/// The most iterations [`Evals::trips`] follows a loop's exit test for.
pub const MAX_TRIPS: usize = 1024;

/// Uniform values given a sample, with the value given (the first, when
/// several queries gave several).
pub type Sampled = std::collections::BTreeMap<ValueId, i64>;

impl<'f, 'a> Evals<'f, 'a> {
    pub fn new(f: &'f FunctionIr<'a>, d: &'f Divergence, shape: &'f Shape) -> Self {
        Evals {
            f,
            d,
            shape,
            pool: RefCell::new(Default::default()),
            same: Default::default(),
            pointers: OnceCell::new(),
            sampled: RefCell::new(Sampled::new()),
            recording: RefCell::new(None),
            grid: None,
            offset_lists: RefCell::new(OffsetLists::default()),
            varying: OnceCell::new(),
            trips: RefCell::new(Default::default()),
            moved: RefCell::new(Default::default()),
            counted: RefCell::new(Default::default()),
            affine: RefCell::new(Default::default()),
        }
    }

    /// The offsets `st · tid` of an affine address with byte strides `st`
    /// from the first thread's (a list kept once), and the first thread's:
    /// made once for every access with those strides.
    fn affine_offsets(&self, st: [i64; 3]) -> Relative {
        if let Some(x) = self.affine.borrow().get(&st) {
            return x.clone();
        }
        let vals = self.shape.lanes().iter().map(|l| st[0] * l.tid[0] + st[1] * l.tid[1] + st[2] * l.tid[2]).collect();
        let x = relative(vals, &mut self.offset_lists.borrow_mut());
        self.affine.borrow_mut().insert(st, x.clone());
        x
    }

    /// How many iterations loop `l` runs (`crate::ir::loops::Loops::trip_count`
    /// with its exit test evaluated in the first thread, parameters not
    /// given a value), up to [`MAX_TRIPS`]; asked once per loop.
    pub fn trips(&self, l: crate::ir::LoopId) -> Option<crate::ir::loops::Trips> {
        if let Some(t) = self.trips.borrow().get(&l) {
            return *t;
        }
        let t = self.f.loops.trip_count(self.f, l, MAX_TRIPS, |c, n| Some(self.uniform_at(c, n)? != 0));
        self.trips.borrow_mut().insert(l, t);
        t
    }

    /// What the pool's evaluators over the block's threads compute once
    /// for all of them (for an evaluator over the same threads and grid).
    pub fn block_threads(&self) -> &crate::divergence::eval::SameThreads {
        &self.same[0]
    }

    /// The grid's dimensions, when the launch is known.
    pub fn grid(&self) -> Option<[u32; 3]> {
        self.grid
    }

    /// The evaluators of a kernel whose grid is known: `%nctaid` is its
    /// dimensions, not a sample.
    pub fn with_grid(mut self, grid: Option<[u32; 3]>) -> Self {
        self.grid = grid;
        self
    }

    /// Run `work`, and say which sampled leaves the values it evaluated
    /// rest on (an outer recording gets them too).
    pub fn recorded<T>(&self, work: impl FnOnce() -> T) -> (T, Leaves) {
        let outer = self.recording.replace(Some(Leaves::none()));
        let out = work();
        let got = self.recording.replace(outer).unwrap_or_default();
        self.note(&got);
        (out, got)
    }

    /// Record `leaves` as what the values evaluated so far rest on (in a
    /// recording, if one runs: a value evaluated, an inner recording's
    /// leaves, a result computed before and used again).
    pub fn note(&self, leaves: &Leaves) {
        if let Some(r) = self.recording.borrow_mut().as_mut() {
            *r = r.union(leaves);
        }
    }

    /// Run `work` without recording what its values rest on (a variant
    /// explored on purpose, not what the prediction says).
    pub fn unrecorded<T>(&self, work: impl FnOnce() -> T) -> T {
        let outer = self.recording.replace(None);
        let out = work();
        *self.recording.borrow_mut() = outer;
        out
    }

    /// The uniform values the evaluations so far gave a sample.
    pub fn sampled(&self) -> Sampled {
        self.sampled.borrow().clone()
    }

    /// The sample given to `v`, if it was given one.
    pub fn sampled_value(&self, v: ValueId) -> Option<i64> {
        self.sampled.borrow().get(&v).copied()
    }

    /// Values of `v` (one per thread of the query), `None` when they depend
    /// on data or on a uniform value the query gives up on.
    pub fn eval(&self, v: ValueId, q: Query) -> Option<Rc<Vec<i64>>> {
        self.eval_resting(v, q).map(|x| x.0)
    }

    /// Values of `v` per thread where they are known (`None` in a thread
    /// whose value depends on data): [`Self::eval`]'s where it gives them;
    /// otherwise, for a value an instruction computes, what its sources'
    /// known values decide whatever the others hold
    /// ([`crate::ir::scalar::Prepared::apply_partial`]): `t != 0 || !flag`
    /// is true in every thread but 0 however `flag` was loaded.
    pub fn eval_partial(&self, v: ValueId, q: Query) -> Option<Vec<Option<i64>>> {
        let n = q.threads(self.shape);
        let out = self.partial_at(v, q, PARTIAL_DEPTH)?;
        out.any_known(n).then(|| out.into_threads(n))
    }

    fn partial_at(&self, v: ValueId, q: Query, depth: u32) -> Option<Partial> {
        use crate::ir::scalar;
        if let Some(x) = self.eval(v, q) {
            return Some(Partial::Known(x));
        }
        let f = self.f;
        let ValueDef::Inst { inst: i, slot } = f.ssa.values[v] else { return None };
        let inst = &f.insts[i];
        if depth == 0 || inst.ast.guard.is_some() || inst.is_float() {
            return None;
        }
        let op = scalar::prepare(inst, slot as usize)?;
        let ty = scalar::dest_ty(inst, slot as usize)?;
        let n = q.threads(self.shape);
        // a source's values at this use (a value leaving a loop whose exits
        // diverge is not the one it had inside: unknown)
        let at_use = |x: ValueId| -> Partial {
            let seen = self.d.at(f, x, f.cfg.block_of(i));
            (seen == self.d.vals[x]).then(|| self.partial_at(x, q, depth - 1)).flatten().unwrap_or(Partial::Unknown)
        };
        // a register source as the instruction reads it (`!p`: negated)
        let read = |o: &Operand<'_>, vals: Partial| match o {
            Operand::Not(_) => vals.map(|b| (b == 0) as i64),
            _ => vals,
        };
        let ops = inst.operands();
        // the needed sources the same in every thread first: one unknown in every thread (a
        // parameter with no value) leaves the result unknown, whatever the others cost
        let mut srcs: Vec<Option<Partial>> = (1..ops.len()).map(|_| None).collect();
        for (k, o) in ops.iter().enumerate().skip(1) {
            let uniform = |x: &ValueId| self.d.vals[*x].is_uniform() && self.d.at(f, *x, f.cfg.block_of(i)) == self.d.vals[*x];
            let Some(x) = f.operand_value(i, k).filter(|x| matches!(o, Operand::Reg(_) | Operand::Not(_)) && op.needs(k - 1) && uniform(x))
            else {
                continue;
            };
            let vals = self.partial_at(x, q, depth - 1).filter(|s| s.any_known(n))?;
            srcs[k - 1] = Some(read(o, vals));
        }
        let srcs: Vec<Partial> = srcs
            .into_iter()
            .zip(ops.iter().enumerate().skip(1))
            .map(|(done, (k, o))| match (done, o, f.operand_value(i, k)) {
                (Some(s), ..) => Some(s),
                (None, Operand::Reg(_) | Operand::Not(_), Some(x)) => Some(read(o, at_use(x))),
                (None, Operand::Imm(c), _) => Some(Partial::Const(*c)),
                _ => None,
            })
            .collect::<Option<_>>()?;
        // a source unknown in every thread that the operation cannot do without
        if srcs.iter().enumerate().any(|(k, s)| op.needs(k) && !s.any_known(n)) {
            return None;
        }
        let mut args: Vec<Option<u64>> = Vec::with_capacity(srcs.len());
        let mut at = |t: usize| {
            args.clear();
            args.extend(srcs.iter().map(|s| s.get(t).map(|x| x as u64)));
            op.apply_partial(&args).map(|bits| scalar::to_i64(ty, bits))
        };
        // sources the same in every thread (known or not): one thread's result in all
        if srcs.iter().all(Partial::same_in_all) && n > 0 {
            return Some(match at(0) {
                Some(c) => Partial::Const(c),
                None => Partial::Unknown,
            });
        }
        // (a thread whose sources are the thread before's takes its result: predicates and
        // values known in a few threads repeat)
        let mut out: Vec<Option<i64>> = Vec::with_capacity(n);
        for t in 0..n {
            let result = match out.last() {
                Some(&before) if !srcs.iter().any(|s| s.changes_at(t)) => before,
                _ => at(t),
            };
            out.push(result);
        }
        Some(Partial::Threads(out))
    }

    /// [`Self::eval`], with the sampled leaves the values rest on.
    pub fn eval_resting(&self, v: ValueId, q: Query) -> Option<(Rc<Vec<i64>>, Leaves)> {
        let (f, d, shape) = (self.f, self.d, self.shape);
        let q = q.within(shape);
        let mut pool = self.pool.borrow_mut();
        if !pool.contains_key(&q) {
            let make = |q: Query| {
                let mut ev = Evaluator::new(f, d, shape.block, &shape.lanes()[..q.threads(shape)]);
                ev.nctaid = self.grid;
                // (the block's threads and its first thread are asked for most: their
                // evaluators share what they compute alike)
                match q.leading {
                    None => ev.share_threads(&self.same[0]),
                    Some(1) => ev.share_threads(&self.same[1]),
                    Some(_) => {}
                }
                ev.first_iteration = q.iteration == 0;
                ev.iteration = (q.iteration > 0).then_some(q.iteration);
                ev
            };
            let mut ev = make(q);
            // a later iteration: what the first computed outside the loops' counters is its too
            if q.iteration > 0 {
                let varying = self.varying.get_or_init(|| {
                    let headers = f.ssa.phis.iter().filter(|p| f.cfg.loop_with_header(p.block).is_some()).map(|p| p.value).collect();
                    Rc::new(crate::ir::values::derived_through_joins(f, headers))
                });
                let first = Query { iteration: 0, ..q };
                ev.outside_loops(pool.entry(first).or_insert_with(|| make(first)), varying.clone());
            }
            // parameters sampled: what the same query without samples computed (the lanes
            // model asks that first) is this one's too
            if let (Some(_), None) = (q.scalar, q.pin) {
                if let Some(other) = pool.get(&Query { scalar: None, ..q }) {
                    ev.unsampled(other);
                }
            }
            // a parameter pinned: what the same query with its sample computed without resting
            // on that sample is this one's too
            if let Some((p, _)) = q.pin {
                if let Some(other) = pool.get(&Query { pin: None, ..q }) {
                    ev.unpinned(other, p);
                }
            }
            pool.insert(q, ev);
        }
        let ev = pool.get_mut(&q).expect("made above");
        let pointers =
            self.pointers.get_or_init(|| crate::ir::values::loaded_pointers(f, accesses_of(f).filter_map(|(i, k)| f.operand_value(i, k))));
        let out = evaluate_with(ev, pointers, &mut self.sampled.borrow_mut(), v, q)?;
        self.note(&out.1);
        Some(out)
    }

    /// The value of a uniform SSA value for the prediction (see [`symbol_value`]).
    pub fn uniform_value(&self, v: ValueId) -> Option<i64> {
        self.uniform_at(v, 0)
    }

    /// The value of `v` in the first thread of block 0 at an iteration of
    /// the loops around, with no value given to unknown parameters.
    pub fn uniform_at(&self, v: ValueId, iteration: usize) -> Option<i64> {
        self.eval(v, Query { scalar: None, ..Query::first_thread([0; 3], iteration) })?.first().copied()
    }
}

/// Evaluate `v` with an evaluator made for the query's threads and
/// iteration, giving the leaves it asks for their query values (the
/// leaves stay for later values); the leaves given a sample (a scalar
/// parameter or a value loaded from a lane-invariant address at the
/// query's `scalar`, a loop counter past the values its start and step
/// give) are recorded in `sampled`. The block index (the query's), a
/// pinned parameter (the solver's) and a pointer (an offset from its own
/// base, 256-byte aligned) are not samples.
fn evaluate_with(
    ev: &mut Evaluator<'_, '_>,
    pointers: &rustc_hash::FxHashSet<ValueId>,
    sampled: &mut Sampled,
    v: ValueId,
    q: Query,
) -> Option<(Rc<Vec<i64>>, Leaves)> {
    let f = ev.f;
    for _ in 0..crate::ir::values::WALK_BUDGET {
        match ev.values_resting(v) {
            Ok(x) => return Some(x),
            Err(EvalErr::Leaf(x)) => {
                if ev.leaf(x).is_some() {
                    return None;
                }
                // the value, and what it rests on (`None`: a sample of its own)
                let (val, on) = match f.ssa.values[x] {
                    _ if q.pin.is_some_and(|(p, _)| p == x) => (q.pin.map_or(0, |p| p.1), Some(Leaves::none())),
                    ValueDef::Phi(_) => {
                        // a counter's value at the iteration, from its start and step
                        let (samples, on) = crate::divergence::eval::counter_samples(f, ev, x);
                        match samples.get(q.iteration) {
                            Some(&k) => (k, Some(on)),
                            None => (samples.first().copied().or(q.scalar)?, None),
                        }
                    }
                    ValueDef::Entry(_) if matches!(f.ssa.special(x), Some(Special::Ctaid(_))) => match f.ssa.special(x) {
                        Some(Special::Ctaid(d)) => (q.ctaid[d as usize % 3], Some(Leaves::none())),
                        _ => (0, Some(Leaves::none())),
                    },
                    // a pointer is an offset from its own base, and so is a loaded
                    // pointer an address is computed from; another generic value (an
                    // untyped 64-bit parameter: pointer or length) is not known
                    _ if matches!(f.spaces.definite(x), Space::Global | Space::Shared) || pointers.contains(&x) => {
                        (0, Some(Leaves::none()))
                    }
                    _ => (q.scalar?, None),
                };
                let on = on.unwrap_or_else(|| {
                    sampled.entry(x).or_insert(val);
                    Leaves::one(x)
                });
                ev.add_leaf_resting_on(x, val, on);
            }
            Err(EvalErr::Opaque) => return None,
        }
    }
    None
}

/// The declared variable (`.shared` array, `.global`) an access is based
/// on, when its address is that symbol plus offsets.
pub fn base_symbol<'a>(f: &FunctionIr<'a>, a: &Access) -> Option<&'a str> {
    base_symbol_of(f, a.inst, a.addr_value)
}

/// [`base_symbol`] of the memory instruction `i` (the interpreter's
/// bounds check asks it of every access).
pub fn base_symbol_at<'a>(f: &FunctionIr<'a>, i: InstId) -> Option<&'a str> {
    let k = f.insts[i].operands().iter().position(|o| matches!(o, crate::ptx::Operand::Addr(_)))?;
    base_symbol_of(f, i, f.operand_value(i, k))
}

fn base_symbol_of<'a>(f: &FunctionIr<'a>, i: InstId, addr_value: Option<ValueId>) -> Option<&'a str> {
    let sym_of = |o: &crate::ptx::Operand<'a>| match o {
        crate::ptx::Operand::Sym(s) | crate::ptx::Operand::SymOff(s, _) => Some(*s),
        _ => None,
    };
    for o in f.insts[i].operands() {
        if let crate::ptx::Operand::Addr(ad) = o {
            if let Some(s) = ad.base.as_ref().and_then(sym_of) {
                return Some(s);
            }
        }
    }
    let ValueDef::Inst { inst, .. } = f.ssa.values[crate::ir::values::root(f, addr_value?)] else { return None };
    f.insts[inst].operands().iter().skip(1).find_map(sym_of)
}

/// Value of a uniform symbol for the prediction: computed from `%ntid`
/// (the shape), loop counters (first iteration) and constants; `None` for
/// anything else (a parameter: an unknown, taken as a large stride).
pub fn symbol_value(ev: &Evals<'_, '_>, sym: u32) -> Option<i64> {
    // symbols below the value count name SSA values; others name parameters
    if (sym as usize) >= ev.f.ssa.values.len() {
        return None;
    }
    ev.uniform_value(ValueId::new(sym as usize))
}

/// A coefficient as a number of bytes per thread step, and the unknown
/// symbol taken as large to get it, if one was.
fn resolve(c: Coef, ev: &Evals<'_, '_>) -> (i64, Option<StrideSymbol>) {
    match c {
        Coef::Const(k) => (k, None),
        Coef::Lin { k, m, sym } => match symbol_value(ev, sym) {
            Some(v) => (k + m * v, None),
            None => (k + m.signum() * SYMBOLIC_STRIDE, Some(StrideSymbol::Named(sym))),
        },
        Coef::Sym => (SYMBOLIC_STRIDE, Some(StrideSymbol::Several)),
    }
}

/// A uniform value a lane stride is a multiple of, unknown statically and
/// taken as large ([`SYMBOLIC_STRIDE`]) for the prediction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StrideSymbol {
    /// One symbol of the affine domain (an SSA value, or a parameter of a
    /// call context by name: `divergence::name_key`).
    Named(u32),
    /// A product of several.
    Several,
}

/// An access's per-thread byte addresses (relative to a 256-aligned base),
/// how they were obtained, the byte strides along (x, y, z) with the
/// unknown symbols taken as large for them, the sampled leaves the base's
/// alignment rests on (affine addresses), and why the warps' alignment may
/// differ from the one evaluated (`None`: it is known).
type LaneAddresses = (Relative, Method, [i64; 3], Vec<(StrideSymbol, i64)>, Leaves, Option<MisalignCause>);

/// Per-thread byte addresses for the whole block `ctaid` (the same index
/// in each dimension), or `None` when they depend on data.
fn lane_addresses(ev: &Evals<'_, '_>, a: &Access, ctaid: i64) -> Option<LaneAddresses> {
    let block = ev.shape.block;
    match a.addr {
        AbsVal::Affine { c, .. } => {
            let mut symbolic = [false; 3];
            let mut st = [0i64; 3];
            let mut taken = Vec::new();
            for k in 0..3 {
                let (bytes, sym) = resolve(c[k], ev);
                st[k] = bytes;
                symbolic[k] = sym.is_some();
                // (a dimension no warp spans two indices of moves nothing within a request:
                // its stride decides where each warp's row starts, the misaligned variant)
                let span: u32 = block[..k].iter().product();
                taken.extend(sym.filter(|_| block[k] > 1 && span < WARP as u32).map(|s| (s, bytes)));
            }
            // the uniform part modulo 256: exact when it is a base symbol + constant
            // (what it rests on decides the alignment only: recorded apart)
            let ((base, unknown), aligned_on) = ev.unrecorded(|| {
                ev.recorded(|| match a.addr.uniform_part() {
                    Some((_, k)) => (k.rem_euclid(256), false),
                    // e.g. `a + 4·(blockIdx·blockDim + t + 1)`: unknown, but the same
                    // modulo 256 in every block when the block offset is a multiple of it
                    None => match base_offset(ev, a) {
                        Some(b) => (b, false),
                        // sectors are what matters for the alignment of global accesses:
                        // this block's offset in its sector is every block's
                        None if a.space == Space::Global && same_sector_offset(ev, a) => {
                            (first_thread_address(ev, a, ctaid, SCALAR_SAMPLE).map_or(0, |b| b.rem_euclid(256)), false)
                        }
                        None => (0, true),
                    },
                })
            });
            // (the misaligned variant tries other values on purpose: not what the prediction rests on)
            let cause = ev.unrecorded(|| {
                if (1..3).any(|d| symbolic[d] && block[d] > 1 && may_misalign(c[d], ev)) {
                    Some(MisalignCause::RowPitch)
                } else if moved_by_runtime_value(ev, a) {
                    Some(MisalignCause::Offset)
                } else {
                    unknown.then_some(MisalignCause::UnknownBase)
                }
            });
            let (vals, first) = ev.affine_offsets(st);
            Some(((vals, base + first), Method::Affine { symbolic: symbolic.contains(&true) }, st, taken, aligned_on, cause))
        }
        AbsVal::Top { data: false } | AbsVal::WarpUniform => {
            let vals = ev.eval(a.addr_value?, Query { ctaid: [ctaid; 3], ..Query::block(0) })?;
            let addrs: Vec<i64> = vals.iter().map(|x| x.wrapping_add(a.offset)).collect();
            let st = [addrs.get(1).zip(addrs.first()).map(|(b, a)| b - a).unwrap_or(0), 0, 0];
            let cause =
                ev.unrecorded(|| moved_by_runtime_value(ev, a) || warps_moved_by_runtime_value(ev, a)).then_some(MisalignCause::Offset);
            Some((relative(addrs, &mut ev.offset_lists.borrow_mut()), Method::Evaluated, st, Vec::new(), Leaves::none(), cause))
        }
        _ => None,
    }
}

/// Can a stride in a runtime value (a row pitch) be other than a whole
/// number of sectors? Its value with the non-pointer parameters at two
/// samples tells: a pitch padded as `(w + 7) & !7` floats is a multiple of
/// 32 bytes for both, a plain `w` is not for one of them.
fn may_misalign(c: Coef, ev: &Evals<'_, '_>) -> bool {
    let Coef::Lin { k, m, sym } = c else { return false };
    if (sym as usize) >= ev.f.ssa.values.len() {
        return true;
    }
    [SCALAR_SAMPLE, SCALAR_SAMPLE + 1].into_iter().any(|scalar| {
        let q = Query { scalar: Some(scalar), ..Query::first_thread([0; 3], 0) };
        // a pitch that cannot be evaluated (loaded, packed) is not judged
        ev.eval(ValueId::new(sym as usize), q).and_then(|x| x.first().copied()).is_some_and(|x| (k + m * x).rem_euclid(SECTOR) != 0)
    })
}

/// The address of the first thread modulo 256 when it is the same in blocks 0 and 1.
fn base_offset(ev: &Evals<'_, '_>, a: &Access) -> Option<i64> {
    let b0 = first_thread_address(ev, a, 0, SCALAR_SAMPLE)?;
    let b1 = first_thread_address(ev, a, 1, SCALAR_SAMPLE)?;
    (b0.rem_euclid(256) == b1.rem_euclid(256)).then_some(b0.rem_euclid(256))
}

/// Is the first thread's address at the same offset in a sector in blocks 0 and 1?
pub fn same_sector_offset(ev: &Evals<'_, '_>, a: &Access) -> bool {
    let at = |ctaid| first_thread_address(ev, a, ctaid, SCALAR_SAMPLE).map(|x| x.rem_euclid(SECTOR));
    matches!((at(0), at(1)), (Some(x), Some(y)) if x == y)
}

/// The address of the first thread of block `ctaid`, with `scalar` for the
/// non-pointer parameters.
fn first_thread_address(ev: &Evals<'_, '_>, a: &Access, ctaid: i64, scalar: i64) -> Option<i64> {
    first_thread_address_at(ev, a, ctaid, scalar, 0)
}

/// [`first_thread_address`] in the given iteration of the loops around.
fn first_thread_address_at(ev: &Evals<'_, '_>, a: &Access, ctaid: i64, scalar: i64, iteration: usize) -> Option<i64> {
    let q = Query { scalar: Some(scalar), ..Query::first_thread([ctaid; 3], iteration) };
    Some(ev.eval(a.addr_value?, q)?.first()? + a.offset)
}

/// Does a runtime value (a parameter that is not a pointer: a row pitch,
/// an offset) move the first thread's address, in block 0 or 1, by other
/// than a whole number of sectors? Then its alignment is only known at
/// run time.
fn moved_by_runtime_value(ev: &Evals<'_, '_>, a: &Access) -> bool {
    let Some(v) = a.addr_value else { return false };
    // (the accesses through one address at other offsets, an unrolled loop's: asked once)
    let key = (v, ev.f.cfg.loop_of(ev.f.cfg.block_of(a.inst)));
    if let Some(&moved) = ev.moved.borrow().get(&key) {
        return moved;
    }
    let moved = (0..2).any(|ctaid| {
        let at = |scalar| first_thread_address(ev, a, ctaid, scalar);
        matches!((at(SCALAR_SAMPLE), at(SCALAR_SAMPLE + 1)), (Some(x), Some(y)) if (x - y).rem_euclid(SECTOR) != 0)
    }) || moved_by_iteration(ev, a);
    ev.moved.borrow_mut().insert(key, moved);
    moved
}

/// Does a runtime value move where a warp other than the first starts, by
/// other than a whole number of sectors (`inp + r * cols` with `r` the
/// warp's row: each warp's row starts `cols` elements after the last)?
fn warps_moved_by_runtime_value(ev: &Evals<'_, '_>, a: &Access) -> bool {
    let Some(v) = a.addr_value else { return false };
    let at = |scalar| ev.eval(v, Query { scalar: Some(scalar), ..Query::block(0) });
    let (Some(x), Some(y)) = (at(SCALAR_SAMPLE), at(SCALAR_SAMPLE + 1)) else { return false };
    x.iter().zip(y.iter()).step_by(WARP).any(|(x, y)| (x - y).rem_euclid(SECTOR) != 0)
}

/// Does the next iteration of the loop around move the first thread's
/// address by other than a whole number of sectors (`x[k * s + t]` with
/// `s` a runtime value, `x[k + t]`)? Then the first iteration's alignment
/// is not every iteration's.
fn moved_by_iteration(ev: &Evals<'_, '_>, a: &Access) -> bool {
    let f = ev.f;
    if f.cfg.loop_of(f.cfg.block_of(a.inst)).is_none() {
        return false;
    }
    [SCALAR_SAMPLE, SCALAR_SAMPLE + 1].into_iter().any(|scalar| {
        let at = |iteration| first_thread_address_at(ev, a, 0, scalar, iteration);
        matches!((at(0), at(1)), (Some(x), Some(y)) if (x - y).rem_euclid(SECTOR) != 0)
    })
}

/// Is request `b` request `a` moved by a whole number of `unit`s (the same
/// lanes' widths, every address by the same multiple of `unit` bytes)?
fn moved_by(a: &[(i64, u32)], b: &[(i64, u32)], unit: i64) -> bool {
    let Some(d) = a.first().zip(b.first()).and_then(|(x, y)| y.0.checked_sub(x.0)) else { return false };
    a.len() == b.len() && d.rem_euclid(unit) == 0 && a.iter().zip(b).all(|(x, y)| x.1 == y.1 && y.0.checked_sub(x.0) == Some(d))
}

/// The lane stride of an affine global access when it is a multiple of a
/// value loaded from memory, with the cost when that value is 1.
fn runtime_stride(ev: &Evals<'_, '_>, a: &Access, addrs: &Offsets, stride: i64) -> Option<RuntimeStride> {
    let f = ev.f;
    let AbsVal::Affine { c, .. } = a.addr else { return None };
    let Coef::Lin { k: 0, m, sym } = c[0] else { return None };
    if a.space != Space::Global || (sym as usize) >= f.ssa.values.len() {
        return None;
    }
    let value = ValueId::new(sym as usize);
    let load = f.def_inst(crate::ir::values::through_copies(f, value)).filter(|&i| f.insts[i].access() == Some(AccessKind::Load))?;
    // the same lanes with neighbouring lanes `m` bytes apart (the value at 1)
    let lanes = ev.shape.lanes();
    let sectors_at_one = typical_sectors(ev, a, addrs, |t| addrs.at(t) - stride * lanes[t].tid[0] + m * lanes[t].tid[0]);
    Some(RuntimeStride { value, load, bytes_per_unit: m, sectors_at_one })
}

/// The typical warp's sectors per request of access `a` with thread `t` at
/// address `addr(t)`, for the threads that run it (`on`'s).
fn typical_sectors(ev: &Evals<'_, '_>, a: &Access, on: &Offsets, addr: impl Fn(usize) -> i64) -> u32 {
    let n = ev.shape.lanes().len();
    let mut per_warp = Vec::new();
    for w in 0..ev.shape.warps() {
        let warp: Vec<(i64, u32)> = (w * WARP..((w + 1) * WARP).min(n)).filter(|&t| on.runs(t)).map(|t| (addr(t), a.width)).collect();
        if !warp.is_empty() {
            per_warp.push(sectors(&warp));
        }
    }
    mode(&per_warp).0
}

/// The lane stride of a global access whose addresses are evaluated (not
/// affine: a strided-tensor index, `idx % dims[d] * strides[d]` in a loop
/// over the dimensions) when it scales with a value read from memory that
/// the addresses rest on (`rests_on`, at its sample): the first such value
/// that every lane's address moves with linearly (evaluated with it at 1, 2
/// and 3) and that moves neighbouring lanes apart, with the cost when it
/// is one. A loaded value that does not (a dimension taken modulo) keeps
/// its sample.
fn loaded_lane_stride(ev: &Evals<'_, '_>, a: &Access, rests_on: &Leaves, on: &Offsets, ctaid: i64) -> Option<RuntimeStride> {
    let f = ev.f;
    let v = a.addr_value?;
    if a.space != Space::Global || matches!(a.addr, AbsVal::Affine { .. }) {
        return None;
    }
    let lanes = ev.shape.lanes();
    let first_lanes = (0..lanes.len()).find(|&t| on.runs(t) && t + 1 < lanes.len() && on.runs(t + 1))?;
    for leaf in rests_on.iter() {
        let Some(load) = f.def_inst(leaf).filter(|&i| f.insts[i].access() == Some(AccessKind::Load)) else { continue };
        let at = |x: i64| ev.eval(v, Query { pin: Some((leaf, x)), ctaid: [ctaid; 3], ..Query::block(0) });
        let (Some(one), Some(two), Some(three)) = (at(1), at(2), at(3)) else { continue };
        // a stride: every lane's address moves linearly with it (a dimension taken modulo does not)
        if one.iter().zip(two.iter()).zip(three.iter()).any(|((x, y), z)| y - x != z - y) {
            continue;
        }
        let apart = |x: &[i64]| x[first_lanes + 1] - x[first_lanes];
        let bytes_per_unit = apart(&two) - apart(&one);
        if bytes_per_unit == 0 {
            continue;
        }
        let sectors_at_one = typical_sectors(ev, a, on, |t| one[t] + a.offset);
        return Some(RuntimeStride { value: leaf, load, bytes_per_unit, sectors_at_one });
    }
    None
}

/// Most frequent value (ties: the larger).
fn mode(v: &[(u32, u32)]) -> (u32, u32) {
    // few distinct values: a list beats a hash map
    let mut counts: Vec<((u32, u32), usize)> = Vec::new();
    for x in v {
        match counts.iter_mut().find(|c| c.0 == *x) {
            Some(c) => c.1 += 1,
            None => counts.push((*x, 1)),
        }
    }
    counts.into_iter().max_by_key(|(k, c)| (*c, *k)).map(|x| x.0).unwrap_or((0, 0))
}

/// Predict the cost of one access in block `ctaid` (the same index in
/// each dimension) for the given active lanes (`active[t]` for every
/// thread of that block).
pub fn predict(ev: &Evals<'_, '_>, a: &Access, active: &[bool], ctaid: i64) -> Option<Prediction> {
    let shape = ev.shape;
    let (addresses, rests_on) = ev.recorded(|| lane_addresses(ev, a, ctaid));
    let ((vals, shift), method, strides, assumed_strides, aligned_on, cause) = addresses?;
    let offsets = Offsets::moved(vals, shift, active);
    let counts = warp_counts(ev, a, &offsets, cause.is_some())?;
    let lane_stride = if shape.block[0] >= 2 { Some(strides[0]) } else { None };
    let runtime_stride = runtime_stride(ev, a, &offsets, strides[0])
        // (only where the sample makes it cost more than the ideal: the question is whether it must)
        .or_else(|| (counts.typical.0 > counts.typical.1).then(|| loaded_lane_stride(ev, a, &rests_on, &offsets, ctaid)).flatten());
    Some(Prediction {
        method,
        runtime_stride,
        requests: counts.requests,
        sectors: (counts.typical.0, counts.worst_sectors),
        ideal: counts.typical.1,
        misaligned: cause
            .zip(counts.misaligned)
            .map(|(cause, sectors)| Misaligned { sectors, cause })
            .filter(|m| m.sectors > counts.typical.0),
        conflict: counts.conflict,
        lane_stride,
        strides,
        assumed_strides,
        rests_on,
        aligned_on,
        offsets,
    })
}

/// What the warps of one access's request cost ([`predict`]).
#[derive(Clone, Copy, Debug, PartialEq)]
struct WarpCounts {
    /// Warps with at least one active lane.
    requests: usize,
    /// Global: the typical warp's sectors and ideal sectors.
    typical: (u32, u32),
    /// Global: the worst warp's sectors.
    worst_sectors: u32,
    /// Shared: conflict degree (typical warp, worst warp).
    conflict: (u32, u32),
    /// Global, with an offset known only at run time: the typical warp's
    /// sectors at the worst alignment.
    misaligned: Option<u32>,
}

/// The accesses whose warps were counted, by what decides the counts:
/// their per-thread offsets (the list kept once, and kept as long as the
/// evaluators, `Evals::offset_lists`: its address), the first
/// thread's offset modulo the unit a request moved by costs the same
/// (words for shared banks, sectors for global), the threads that run them,
/// their width and space, and whether the worst alignment is asked.
type CountKey = (usize, i64, Vec<u64>, u32, bool, bool);

/// [`WarpCounts`] of access `a` at `offsets`: an access whose request is
/// one counted before moved by whole words (shared) or sectors (global),
/// with the same threads, width and space, costs what that one did (the
/// copies of an unrolled loop, the accesses through one address at other
/// constant offsets); `None` when no thread runs it.
fn warp_counts(ev: &Evals<'_, '_>, a: &Access, offsets: &Offsets, worst: bool) -> Option<WarpCounts> {
    let shared = a.space == Space::Shared;
    let unit = if shared { 4 } else { SECTOR };
    let key: CountKey = (
        std::sync::Arc::as_ptr(&offsets.vals) as *const i64 as usize,
        offsets.shift.rem_euclid(unit),
        offsets.active.clone(),
        a.width,
        shared,
        worst,
    );
    if let Some(c) = ev.counted.borrow().get(&key) {
        return *c;
    }
    let c = count_warps(ev.shape, a, offsets, worst);
    ev.counted.borrow_mut().insert(key, c);
    c
}

/// [`warp_counts`], counted.
fn count_warps(shape: &Shape, a: &Access, offsets: &Offsets, worst: bool) -> Option<WarpCounts> {
    let n = offsets.len();
    let mut per_warp: Vec<(u32, u32)> = Vec::with_capacity(shape.warps());
    let mut per_warp_conf: Vec<(u32, u32)> = Vec::new();
    let mut misaligned: Vec<(u32, u32)> = Vec::new();
    // one warp's active lanes' addresses, and the same moved (buffers for every warp)
    let mut act: Vec<(i64, u32)> = Vec::with_capacity(WARP);
    let mut moved: Vec<(i64, u32)> = Vec::with_capacity(WARP);
    // the last warp whose sectors (or bank conflicts) were counted, with its counts and worst
    // alignment: a warp whose request is that one moved by whole sectors (words) has the same
    let mut counted: Vec<(i64, u32)> = Vec::with_capacity(WARP);
    let mut counts = ((0u32, 0u32), 0u32);
    for w in 0..shape.warps() {
        let range = w * WARP..((w + 1) * WARP).min(n);
        act.clear();
        act.extend(range.filter_map(|t| offsets.get(t)).map(|x| (x, a.width)));
        if act.is_empty() {
            continue;
        }
        match a.space {
            Space::Shared => {
                // (banks are words: a request moved by whole words has its degree)
                if !moved_by(&counted, &act, 4) {
                    counts.0 = (conflict_degree(&act, a.width), 0);
                    std::mem::swap(&mut counted, &mut act);
                }
                per_warp_conf.push(counts.0);
            }
            _ => {
                if !moved_by(&counted, &act, SECTOR) {
                    let here = sectors(&act);
                    // worst alignment of an offset known only at run time, in steps of the element width
                    // (moved by none: `here`)
                    let worst = if worst {
                        (0..SECTOR).step_by(a.width.max(1) as usize).skip(1).fold(here.0, |worst, s| {
                            moved.clear();
                            moved.extend(act.iter().map(|&(x, w)| (x + s, w)));
                            worst.max(sectors(&moved).0)
                        })
                    } else {
                        0
                    };
                    counts = (here, worst);
                    std::mem::swap(&mut counted, &mut act);
                }
                per_warp.push(counts.0);
                if worst {
                    misaligned.push((counts.1, 0));
                }
            }
        }
    }
    let requests = per_warp.len().max(per_warp_conf.len());
    (requests > 0).then(|| WarpCounts {
        requests,
        typical: mode(&per_warp),
        worst_sectors: per_warp.iter().map(|x| x.0).max().unwrap_or(0),
        conflict: (mode(&per_warp_conf).0, per_warp_conf.iter().map(|x| x.0).max().unwrap_or(0)),
        misaligned: (!misaligned.is_empty()).then(|| mode(&misaligned).0),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A query of the block's first threads gives those threads' values of
    /// the whole block's query, pinned or not (fewer than asked for in a
    /// smaller block).
    #[test]
    fn leading_threads_are_the_blocks_first() {
        let (f, d) = crate::affine_in_two_params();
        let (p, addr) = (crate::value_written(f, "%r1"), crate::value_written(f, "%r6"));
        let shape = Shape::new([64, 1, 1], crate::model::ShapeSource::Cli);
        let evals = Evals::new(f, &d, &shape);
        for pin in [None, Some((p, 7))] {
            let all = evals.eval(addr, Query { pin, ..Query::block(0) }).unwrap();
            for n in [1, 2, 33, 64, 100] {
                let some = evals.eval(addr, Query { pin, leading: Some(n), ..Query::block(0) }).unwrap();
                assert_eq!(some[..], all[..(n as usize).min(64)], "{n} threads, pin {pin:?}");
            }
        }
    }

    /// A thread's offset is its own where it runs the access (flagged, or
    /// past the flags), none where it does not; lists equal but for a
    /// constant are one.
    #[test]
    fn offsets_keep_each_threads_own() {
        let mut next = crate::xorshift(0x2f6b_1d3c);
        let mut lists = OffsetLists::default();
        for n in [0usize, 1, 63, 64, 65, 130, 256] {
            let vals: Vec<i64> = (0..n).map(|_| next(1000) as i64 - 500).collect();
            // (flags for every thread, and for the first few: the others run it)
            for known in [n, n / 3, n.saturating_sub(9)] {
                let on: Vec<bool> = (0..known).map(|_| next(3) != 0).collect();
                let o = Offsets::new(vals.clone(), &on, &mut lists);
                assert_eq!(o.len(), n);
                for t in 0..n + 70 {
                    assert_eq!(o.get(t), vals.get(t).copied().filter(|_| on.get(t).copied().unwrap_or(true)), "{n} {known} {t}");
                }
            }
            let on: Vec<bool> = (0..n).map(|_| next(3) != 0).collect();
            let o = Offsets::new(vals.clone(), &on, &mut lists);
            let moved = Offsets::new(vals.iter().map(|x| x + 12).collect(), &on, &mut lists);
            assert!(n == 0 || std::sync::Arc::ptr_eq(&o.vals, &moved.vals));
        }
    }

    /// What `predict` takes from the warp before: a request moved by whole
    /// sectors touches as many sectors (and as many at its worst alignment),
    /// and one moved by whole words has as many bank conflicts; a request
    /// moved by less, or with another lane's width or count, is not taken.
    #[test]
    fn requests_moved_by_whole_units_count_alike() {
        let mut next = crate::xorshift(0x9e37_79b9);
        let widths = [1u32, 2, 4, 8, 16];
        for _ in 0..400 {
            let w = widths[next(5) as usize];
            let lanes = 1 + next(32) as usize;
            let stride = next(3) as i64 * w as i64 * (1 + next(40) as i64);
            let a: Vec<(i64, u32)> = (0..lanes).map(|l| ((l as i64 * stride + next(4) as i64 * w as i64) & !(w as i64 - 1), w)).collect();
            for unit in [SECTOR, 4] {
                let d = unit * (next(1000) as i64 - 500);
                let b: Vec<(i64, u32)> = a.iter().map(|&(x, w)| (x + d, w)).collect();
                assert!(moved_by(&a, &b, unit));
                if unit == SECTOR {
                    assert_eq!(sectors(&a), sectors(&b), "{a:?} moved by {d}");
                    for s in (0..SECTOR).step_by(w as usize) {
                        let shift = |r: &[(i64, u32)]| r.iter().map(|&(x, w)| (x + s, w)).collect::<Vec<_>>();
                        assert_eq!(sectors(&shift(&a)).0, sectors(&shift(&b)).0);
                    }
                } else {
                    assert_eq!(conflict_degree(&a, w), conflict_degree(&b, w), "{a:?} moved by {d}");
                }
            }
            // moved by less than a unit, a lane's width changed, a lane more
            let off: Vec<(i64, u32)> = a.iter().map(|&(x, w)| (x + 2, w)).collect();
            assert!(!moved_by(&a, &off, 4) && !moved_by(&a, &off, SECTOR));
            let mut wider = a.clone();
            wider[0].1 *= 2;
            assert!(!moved_by(&a, &wider, SECTOR));
            let mut more = a.clone();
            more.push((a[0].0, w));
            assert!(!moved_by(&a, &more, SECTOR) && !moved_by(&a, &[], SECTOR) && !moved_by(&[], &a, SECTOR));
        }
    }

    /// The warps of an access counted before at offsets moved by whole
    /// words (shared) or sectors (global), with the same threads, width and
    /// space, are what counting its own gives; moved by other amounts they
    /// are counted again.
    #[test]
    fn warps_counted_once_are_every_moved_requests() {
        let (f, d) = crate::affine_in_two_params();
        let mut next = crate::xorshift(0x51ed_270b);
        for n in [32usize, 96, 256] {
            let shape = Shape::new([n as u32, 1, 1], crate::model::ShapeSource::Cli);
            let ev = Evals::new(f, &d, &shape);
            let lists: Vec<Vec<i64>> = (0..6)
                .map(|k| {
                    let stride = [1i64, 4, 8, 12, 32, 0][k];
                    (0..n).map(|t| t as i64 * stride + if next(6) == 0 { 4 * next(8) as i64 } else { 0 }).collect()
                })
                .collect();
            let masks: Vec<Vec<bool>> = (0..3).map(|k| (0..n).map(|t| k == 0 || next(k as u64 + 1) != 0 || t > n - 8).collect()).collect();
            let mut calls = 0;
            for _ in 0..600 {
                let width = [1u32, 2, 4, 8, 16][next(5) as usize];
                let space = if next(2) == 0 { Space::Shared } else { Space::Global };
                let a = Access {
                    inst: InstId::new(0),
                    kind: AccessKind::Load,
                    space,
                    assumed: false,
                    width,
                    addr: AbsVal::Top { data: false },
                    addr_value: None,
                    offset: 0,
                };
                // (mostly whole sectors: most requests were counted before)
                let shift = 32 * (next(12) as i64 - 6) + if next(4) == 0 { next(32) as i64 } else { 0 };
                let mask = &masks[next(3) as usize];
                let vals: Vec<i64> = lists[next(6) as usize].iter().map(|x| x * width as i64 + shift).collect();
                let offsets = Offsets::new(vals, mask, &mut ev.offset_lists.borrow_mut());
                let worst = next(2) == 0;
                assert_eq!(warp_counts(&ev, &a, &offsets, worst), count_warps(&shape, &a, &offsets, worst), "{n} threads, {a:?}");
                calls += 1;
            }
            assert!(ev.counted.borrow().len() < calls * 2 / 3, "{} requests counted of {calls}", ev.counted.borrow().len());
        }
    }

    /// Accesses through one address at other constant offsets are moved
    /// by a runtime value alike (an offset parameter `x[t + off]` moves
    /// them by other than whole sectors; `x[t + 8·off]` by whole sectors
    /// does not), asked once or each with evaluators of its own.
    #[test]
    fn accesses_through_one_address_are_moved_alike() {
        for (scale, moved) in [("1", true), ("8", false)] {
            let src = format!(
                r#"
.version 7.0
.target sm_80
.address_size 64
.visible .entry k(.param .u64 k_x, .param .u32 k_off) {{
    .reg .b32 %r<8>;
    .reg .b64 %rd<8>;
    ld.param.u64 %rd1, [k_x];
    cvta.to.global.u64 %rd2, %rd1;
    ld.param.u32 %r1, [k_off];
    mov.u32 %r2, %tid.x;
    mul.lo.s32 %r3, %r1, {scale};
    add.s32 %r4, %r2, %r3;
    mul.wide.s32 %rd3, %r4, 4;
    add.s64 %rd4, %rd2, %rd3;
    ld.global.u32 %r5, [%rd4];
    ld.global.u32 %r6, [%rd4+4];
    ld.global.u32 %r7, [%rd4+36];
    add.s32 %r5, %r5, %r6;
    add.s32 %r5, %r5, %r7;
    st.global.u32 [%rd4], %r5;
    ret;
}}
"#
            );
            let m = crate::ptx::parse(&src).expect("the test kernel parses");
            let fs = crate::ir::lower(&m);
            let d = Divergence::analyze(&fs[0], &crate::divergence::Summaries::compute(&fs));
            let shape = Shape::new([64, 1, 1], crate::model::ShapeSource::Cli);
            let accs: Vec<_> = accesses(&fs[0], &d).collect();
            assert_eq!(accs.len(), 4);
            let shared = Evals::new(&fs[0], &d, &shape);
            for a in &accs {
                let alone = Evals::new(&fs[0], &d, &shape);
                assert_eq!(
                    (moved_by_runtime_value(&shared, a), moved_by_runtime_value(&alone, a)),
                    (moved, moved),
                    "×{scale} +{}",
                    a.offset
                );
            }
        }
    }
}
