//! A warp-level PTX interpreter for confirmation runs (`cargo gpucheck
//! confirm --engine cpu`).
//!
//! Executes one kernel over a grid: warps of 32 lanes in lock-step with
//! active masks and a reconvergence stack (a divergent branch reconverges at
//! its block's immediate post-dominator), warps of a block interleaved
//! between barriers, blocks in parallel (rayon); a kernel that reads the
//! grid workspace (`%envreg1`/`%envreg2`: cooperative groups' `grid.sync()`)
//! runs in phases, every block pausing when it arrives at the grid barrier
//! until all have arrived, so its wait ends. Memories: device memory
//! (allocations made by the caller, plus the module's `.global`/`.const`
//! variables, zero-initialised), shared memory per block, local memory per
//! thread, the kernel's parameter buffer. Records per access site the
//! sectors per request (global) or conflict degree (shared) with the same
//! counting as the static prediction, per branch the warp executions and
//! how many split, barriers reached by part of a warp, races between
//! threads of a block within a barrier interval (shadow memory), and shared
//! and local accesses outside the array their instruction is based on
//! (`Observed::out_of_bounds`) or reading bytes no thread of the block
//! wrote (`Observed::uninitialized`; static arrays come before the
//! launch's dynamic shared memory, where every `extern` array starts). A
//! run is
//! bounded: a budget of warp instructions per block (an endless loop stops
//! naming its PTX line) and, when asked, a time limit that also stops a
//! grid whose first blocks' rate says it would outlast it; a progress
//! callback hears of each block. A run of one block given what to look for
//! (`Run::until`: a replay's witnesses) stops at the barrier by which it has
//! seen it all, and the shadow covers only the memory a run asks for
//! (`Run::races`).
//!
//! Owns: running PTX. Does not own: choosing inputs, comparing with
//! predictions or printing (that is `cargo gpucheck confirm`). Device
//! functions run in frames of their own; indirect calls and `.reg`
//! parameters stop the run with an error naming the instruction.

pub mod decode;
mod exec;
pub mod memory;

pub use exec::MAX_SHARED_BYTES;
pub use memory::Global;

use crate::ir::{FunctionIr, ModuleCx};
use crate::ptx::Module;
use rustc_hash::FxHashMap;
use std::collections::BTreeMap;
use std::fmt;

/// Why a run stopped.
#[derive(Debug, Clone, PartialEq)]
pub enum InterpError {
    /// An instruction the interpreter does not execute.
    Unsupported { line: u32, opcode: String, why: String },
    /// A load or store outside every allocation.
    /// `warp_insts`: the warp instructions run until then (by this block
    /// and those run before it on its worker); `array_offset`: for a
    /// shared or local access based on a declared array, the bytes from its
    /// start.
    Fault {
        site: SiteKey,
        line: u32,
        addr: u64,
        len: u32,
        space: &'static str,
        thread: [u32; 3],
        block: [u32; 3],
        warp_insts: u64,
        array_offset: Option<i64>,
    },
    /// `trap` (a Rust panic in the kernel).
    Trap { site: SiteKey, line: u32, thread: [u32; 3], block: [u32; 3] },
    /// The block ran past the instruction budget; the PTX line one of its
    /// warps was at then (inside the loop that did not end).
    Timeout { warp_insts: u64, line: u32 },
    /// The launch ran past [`Run::time_limit`], or would have at the rate
    /// its first blocks ran: blocks done of all, seconds taken, and the
    /// seconds the whole launch would take at that rate.
    /// `line`: the PTX line a warp was at, when a block was stopped midway
    /// (then the estimate is unknown).
    TooLong { done: u64, blocks: u64, seconds: f64, estimate: Option<f64>, line: Option<u32> },
    /// Warps wait at a barrier that the others never reach.
    Deadlock { line: u32 },
    /// Some blocks ended while others wait at `grid.sync()`.
    GridDeadlock { line: u32 },
    /// The launch does not fit the kernel.
    Launch(String),
}

impl fmt::Display for InterpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InterpError::Unsupported { line, opcode, why } => write!(f, "PTX line {line}: `{opcode}`: {why}"),
            InterpError::Fault { line, addr, len, space, thread, block, .. } => write!(
                f,
                "PTX line {line}: out-of-bounds {space} access of {len} bytes at {addr:#x} by thread ({}, {}, {}) of block ({}, {}, {})",
                thread[0], thread[1], thread[2], block[0], block[1], block[2]
            ),
            InterpError::Trap { line, thread, block, .. } => write!(
                f,
                "PTX line {line}: `trap` (a panic in the kernel) by thread ({}, {}, {}) of block ({}, {}, {})",
                thread[0], thread[1], thread[2], block[0], block[1], block[2]
            ),
            InterpError::Timeout { warp_insts, line } => {
                write!(
                    f,
                    "PTX line {line}: a block did not finish within {warp_insts} warp instructions (an endless loop around this line?)"
                )
            }
            InterpError::TooLong { done, blocks, seconds, estimate, line } => {
                write!(f, "stopped after {seconds:.1} s with {done} of {blocks} blocks run")?;
                match (estimate, line) {
                    (Some(e), _) => write!(f, ": the whole launch would take about {} here", duration_words(*e)),
                    (None, Some(l)) => write!(f, ", a block still running at PTX line {l} (an endless loop around this line?)"),
                    (None, None) => Ok(()),
                }
            }
            InterpError::Deadlock { line } => write!(f, "PTX line {line}: warps wait at a barrier the rest of the block never reaches"),
            InterpError::GridDeadlock { line } => {
                write!(f, "PTX line {line}: blocks wait at `grid.sync()` that other blocks of the grid ended without reaching")
            }
            InterpError::Launch(s) => write!(f, "{s}"),
        }
    }
}

impl std::error::Error for InterpError {}

/// A kernel argument: the bits of a scalar or pointer, or the bytes of a
/// `.param .b8 x[n]` aggregate.
#[derive(Debug, Clone, PartialEq)]
pub enum Arg {
    Bits(u64),
    Bytes(Vec<u8>),
}

/// Grid and block shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Launch {
    pub grid: [u32; 3],
    pub block: [u32; 3],
    /// Bytes of dynamic shared memory (`.extern .shared` arrays).
    pub dynamic_shared: u32,
}

/// An instruction of the module: its function (index in
/// `Module::functions`) and its index in that function's instructions —
/// the same numbering as `ir::FunctionIr::insts`, so that observations join
/// the static predictions by identity, not by line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SiteKey {
    pub func: usize,
    pub inst: usize,
}

/// How often each value was seen (`counts[k]`: times the value was `k`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Histogram {
    pub counts: Vec<u64>,
}

impl Histogram {
    /// The most frequent value (ties: the larger), as a prediction's "typical".
    pub fn mode(&self) -> u32 {
        let mut best = (0u64, 0u32);
        for (k, &c) in self.counts.iter().enumerate() {
            if c > 0 && (c, k as u32) >= best {
                best = (c, k as u32);
            }
        }
        best.1
    }
    pub fn max(&self) -> u32 {
        self.counts.iter().rposition(|&c| c > 0).unwrap_or(0) as u32
    }
    pub fn total(&self) -> u64 {
        self.counts.iter().sum()
    }
    pub fn mean(&self) -> f64 {
        let sum: u64 = self.counts.iter().enumerate().map(|(k, &c)| k as u64 * c).sum();
        sum as f64 / self.total().max(1) as f64
    }
    pub fn add(&mut self, v: u32) {
        let k = v as usize;
        if self.counts.len() <= k {
            self.counts.resize(k + 1, 0);
        }
        self.counts[k] += 1;
    }
    fn merge(&mut self, o: &Histogram) {
        if self.counts.len() < o.counts.len() {
            self.counts.resize(o.counts.len(), 0);
        }
        for (k, &c) in o.counts.iter().enumerate() {
            self.counts[k] += c;
        }
    }
}

/// What one memory access site did over the run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SiteObs {
    /// `global` or `shared` (as resolved at run time).
    pub space: &'static str,
    /// Per warp request (at least one active lane): sectors touched
    /// (global) or conflict degree (shared).
    pub hist: Histogram,
}

impl SiteObs {
    pub fn requests(&self) -> u64 {
        self.hist.total()
    }
    fn merge(&mut self, o: &SiteObs) {
        self.hist.merge(&o.hist);
        if self.space.is_empty() {
            self.space = o.space;
        }
    }
}

/// What one conditional branch did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BranchObs {
    /// Warp executions (at least one active lane).
    pub executions: u64,
    /// Executions where the active lanes went both ways.
    pub splits: u64,
    /// Per block that executed the branch: how many of its warps split
    /// there at least once.
    pub warps_split: Histogram,
    /// Lane-slots idle while one side of a split ran: per warp
    /// instruction executed on a side, the lanes of the warp that reached
    /// the branch and wait on the other side (or left the loop, for an
    /// exit), those of enclosing splits counted to their own branches.
    pub idle_lane_slots: u64,
}

impl BranchObs {
    fn merge(&mut self, o: &BranchObs) {
        self.executions += o.executions;
        self.splits += o.splits;
        self.warps_split.merge(&o.warps_split);
        self.idle_lane_slots += o.idle_lane_slots;
    }
}

/// What one barrier instruction saw: each time the warps of a block were
/// released from it (an episode), how many of the block's threads had
/// arrived.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BarrierObs {
    pub episodes: u64,
    /// Episodes of a whole-block barrier that part of the block did not
    /// reach (it had exited, or waited at another barrier): barrier
    /// divergence.
    pub partial: u64,
    /// The fewest threads that arrived in one episode.
    pub fewest: u32,
    /// Threads of a block.
    pub block_threads: u32,
}

impl BarrierObs {
    fn merge(&mut self, o: &BarrierObs) {
        self.fewest = if self.episodes == 0 {
            o.fewest
        } else if o.episodes == 0 {
            self.fewest
        } else {
            self.fewest.min(o.fewest)
        };
        self.episodes += o.episodes;
        self.partial += o.partial;
        self.block_threads = self.block_threads.max(o.block_threads);
    }
}

/// A race seen between two threads of one block in one barrier interval,
/// or between threads of two blocks (`blocks`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RaceSeen {
    pub kind: crate::races::RaceKind,
    pub shared: bool,
    /// The earlier and the later access.
    pub first: SiteKey,
    pub second: SiteKey,
    /// The earlier access's thread (`None`: several threads made it atomically).
    pub first_thread: Option<u32>,
    pub second_thread: u32,
    /// Between blocks: the earlier block (linear index) and the later one;
    /// the threads are in those blocks.
    pub blocks: Option<(u64, u64)>,
    /// A write-after-write within a block whose later write stored, each
    /// time it was seen, the bytes the earlier one had (the value is the
    /// same: a benign race). Not judged between blocks.
    pub same_value: bool,
    /// Between blocks: the pair was ordered by a ticket (a global atomic
    /// the earlier block made first), with no device fence between the
    /// earlier access and its ticket; the ticket's site. Not a race.
    pub unfenced: Option<SiteKey>,
}

/// Everything a run observed, by instruction.
#[derive(Debug, Clone, Default)]
pub struct Observed {
    pub sites: BTreeMap<SiteKey, SiteObs>,
    pub branches: BTreeMap<SiteKey, BranchObs>,
    /// Barriers reached while part of the warp was elsewhere: executions.
    pub divergent_barriers: BTreeMap<SiteKey, u64>,
    /// Per barrier instruction: how many threads of the block arrived.
    pub barriers: BTreeMap<SiteKey, BarrierObs>,
    /// Per watched access group (index in the list given to
    /// [`run_watching`]): the sectors of the union of its members' bytes,
    /// per warp and loop iteration.
    pub groups: BTreeMap<usize, Histogram>,
    pub races: Vec<RaceSeen>,
    /// Shared and local accesses outside the array their instruction is
    /// based on: the first seen.
    pub out_of_bounds: BTreeMap<SiteKey, SafetyFault>,
    /// Shared loads of bytes no thread of the block had stored to (or
    /// updated) before: the first seen (its offset from the block's shared
    /// memory's start when the instruction is based on no array).
    pub uninitialized: BTreeMap<SiteKey, SafetyFault>,
    /// A block touched more global bytes than the races between blocks
    /// record ([`memory::GRID_BYTES_PER_BLOCK`]): those are not checked.
    pub grid_full: bool,
    /// A block ran out of its budget and stopped there (only with
    /// [`Run::partial`]): what it did until then is in the rest.
    pub timed_out: bool,
    pub warp_insts: u64,
    pub lane_insts: u64,
    /// PTX line of each instruction of each function the run decoded.
    pub lines: BTreeMap<usize, Vec<u32>>,
    /// Device address of each module `.global`/`.const` variable (to read results such as counters).
    pub globals: BTreeMap<String, u64>,
}

/// A shared or local access a run saw leave its array, or a shared read of
/// bytes no thread had written: the first block that did (in the grid's order), the first
/// thread of that block seen, and its byte offset from the array's start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SafetyFault {
    pub block: [u32; 3],
    pub thread: [u32; 3],
    pub offset: i64,
}

impl SafetyFault {
    /// The one of the two in the earlier block (blocks run in parallel:
    /// what a run reports does not depend on which finished first).
    pub fn first(self, o: SafetyFault) -> SafetyFault {
        let order = |f: &SafetyFault| [f.block[2], f.block[1], f.block[0]];
        if order(&o) < order(&self) {
            o
        } else {
            self
        }
    }
}

impl Observed {
    /// The PTX line of an instruction the run decoded (0 if unknown).
    pub fn line(&self, k: SiteKey) -> u32 {
        self.lines.get(&k.func).and_then(|l| l.get(k.inst)).copied().unwrap_or(0)
    }
}

/// Run kernel `name` of `module` with `args` (one per PTX parameter) over
/// `launch`, with device memory `mem` (allocate the buffers the pointer
/// arguments point to before). Returns what it observed; results are in `mem`.
pub fn run(module: &Module<'_>, name: &str, launch: &Launch, args: &[Arg], mem: &mut Global) -> Result<Observed, InterpError> {
    exec::run(module, name, launch, args, mem, &Run::default(), None)
}

/// A kernel and every function it can call, lowered once for the runs
/// that launch it ([`run_lowered`]): a caller that runs one kernel several
/// times (the replays) pays for the lowering once.
pub struct Lowered<'a> {
    entry: usize,
    funcs: FxHashMap<usize, FunctionIr<'a>>,
}

impl<'a> Lowered<'a> {
    /// Lower kernel `entry` (an index into the module's functions, with a
    /// body) and the functions it calls, directly or not.
    pub fn new(module: &'a Module<'a>, mcx: &ModuleCx<'a>, entry: usize) -> Lowered<'a> {
        // (the functions with a body by name, made at the first call: most kernels call none)
        let mut with_body: Option<FxHashMap<&str, usize>> = None;
        let mut funcs = FxHashMap::default();
        let mut todo = vec![entry];
        while let Some(i) = todo.pop() {
            if funcs.contains_key(&i) {
                continue;
            }
            let f = crate::ir::lower_one(module, i, mcx);
            for t in f.insts.iter().filter_map(|x| x.call_target()) {
                let by_name = with_body.get_or_insert_with(|| {
                    module.functions.iter().enumerate().filter(|(_, f)| f.body.is_some()).map(|(i, f)| (f.name, i)).collect()
                });
                todo.extend(by_name.get(t).copied());
            }
            funcs.insert(i, f);
        }
        Lowered { entry, funcs }
    }

    /// The kernel's IR.
    pub fn kernel(&self) -> &FunctionIr<'a> {
        &self.funcs[&self.entry]
    }

    /// The kernel's IR, to name its parameters as the source does.
    pub fn kernel_mut(&mut self) -> &mut FunctionIr<'a> {
        self.funcs.get_mut(&self.entry).expect("the kernel is lowered")
    }

    /// Function `index`'s IR, when the kernel can call it.
    pub(crate) fn get(&self, index: usize) -> Option<&FunctionIr<'a>> {
        self.funcs.get(&index)
    }
}

/// [`run_with`] on a kernel lowered before ([`Lowered`]).
pub fn run_lowered(
    module: &Module<'_>,
    lowered: &Lowered<'_>,
    launch: &Launch,
    args: &[Arg],
    mem: &mut Global,
    how: &Run,
) -> Result<Observed, InterpError> {
    exec::run(module, lowered.kernel().func.name, launch, args, mem, how, Some(lowered))
}

/// [`run`], also watching access groups (each a list of global access
/// sites): per warp, the sectors of the union of a group's bytes in each
/// loop iteration (a member executed again starts the next), to confirm
/// a footprint prediction.
pub fn run_watching(
    module: &Module<'_>,
    name: &str,
    launch: &Launch,
    args: &[Arg],
    mem: &mut Global,
    groups: &[Vec<SiteKey>],
) -> Result<Observed, InterpError> {
    exec::run(module, name, launch, args, mem, &Run { groups: groups.to_vec(), ..Run::default() }, None)
}

/// Does kernel `name` synchronise its grid (`grid.sync()`: it reads the
/// grid workspace, `%envreg1`/`%envreg2`, itself or in a function it
/// calls)? On a GPU such a kernel needs a cooperative launch; the
/// interpreter runs its blocks in phases.
pub fn synchronises_grid(module: &Module<'_>, name: &str) -> bool {
    use crate::ir::inst::Special;
    use crate::ptx::Operand;
    let bodies = crate::ir::bodies(module);
    let index: rustc_hash::FxHashMap<&str, usize> = bodies.iter().enumerate().map(|(k, b)| (b.func.name, k)).collect();
    let mut todo: Vec<usize> = index.get(name).copied().into_iter().collect();
    let mut seen = rustc_hash::FxHashSet::default();
    while let Some(k) = todo.pop() {
        if !seen.insert(k) {
            continue;
        }
        for i in bodies[k].insts.iter() {
            let workspace =
                |o: &Operand<'_>| matches!(o, Operand::Reg(r) if matches!(Special::parse(r), Some(Special::GridWorkspace { .. })));
            if i.operands().iter().any(workspace) {
                return true;
            }
            todo.extend(i.call_target().and_then(|t| index.get(t)).copied());
        }
    }
    false
}

/// Seconds as a person reads them ("40 s", "12 min", "3.5 h").
pub fn duration_words(s: f64) -> String {
    match s {
        s if s < 120.0 => format!("{s:.0} s"),
        s if s < 7200.0 => format!("{:.0} min", s / 60.0),
        s => format!("{:.1} h", s / 3600.0),
    }
}

/// Told after each block of a launch: blocks done, blocks in all.
#[derive(Clone)]
pub struct Progress(pub std::sync::Arc<dyn Fn(u64, u64) + Send + Sync>);

impl fmt::Debug for Progress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Progress")
    }
}

/// How much of a launch to run and what to watch.
#[derive(Clone, Debug)]
pub struct Run {
    /// Access groups to watch ([`run_watching`]).
    pub groups: Vec<Vec<SiteKey>>,
    /// Run only these blocks (linear indices, x fastest, in increasing
    /// order: a run that stops reports the first one's stop) of the
    /// launch's grid; the others are not run (`%nctaid` is still the whole
    /// grid). `None`: every block.
    pub blocks: Option<Vec<u64>>,
    /// Warp instructions one block may execute before the run stops with
    /// [`InterpError::Timeout`].
    pub budget: u64,
    /// A block that runs out of its budget stops there and the run goes
    /// on (`Observed::timed_out`), instead of the run stopping with
    /// [`InterpError::Timeout`].
    pub partial: bool,
    /// Told after each block.
    pub progress: Option<Progress>,
    /// A launch still running after this long, or one whose blocks so far
    /// (after [`ESTIMATE_AFTER`]) say it would take longer, stops with
    /// [`InterpError::TooLong`].
    pub time_limit: Option<std::time::Duration>,
    /// What the run looks for (a replay's witnesses): a run of one block
    /// that has seen every one at a barrier stops there, as if its block
    /// had ended (what it would do later cannot take a sighting back).
    /// Empty: the run goes to its end.
    pub until: Vec<Sighting>,
    /// The memory whose every byte the run shadows, which races are seen
    /// by ([`Observed::races`]): a run that looks only for races in shared
    /// memory does not need global memory's, one that looks only for a
    /// barrier part of the block skips neither.
    pub races: RaceMemory,
}

/// The memory a run sees races in ([`Run::races`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RaceMemory {
    pub shared: bool,
    pub global: bool,
}

impl RaceMemory {
    pub const ALL: RaceMemory = RaceMemory { shared: true, global: true };
    pub const NONE: RaceMemory = RaceMemory { shared: false, global: false };
}

/// Something a run can see, which stays seen ([`Run::until`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sighting {
    /// A race within the block between these two accesses, in either order.
    Race(SiteKey, SiteKey),
    /// Part of the block does not arrive with the rest at this barrier
    /// (or part of a warp arrives without the rest); `true`: or at one in
    /// a function the kernel calls.
    PartialBarrier(SiteKey, bool),
    /// A shared or local access outside its array ([`Observed::out_of_bounds`]).
    OutOfBounds(SiteKey),
    /// A shared read of bytes no thread wrote ([`Observed::uninitialized`]).
    Uninitialized(SiteKey),
}

/// How long a limited launch runs before its rate is taken as what the
/// rest will take.
pub const ESTIMATE_AFTER: std::time::Duration = std::time::Duration::from_secs(2);

impl Default for Run {
    fn default() -> Self {
        Run {
            groups: Vec::new(),
            blocks: None,
            budget: exec::BLOCK_BUDGET,
            partial: false,
            progress: None,
            time_limit: None,
            until: Vec::new(),
            races: RaceMemory::ALL,
        }
    }
}

/// [`run`] as `how` says: only some blocks, a smaller budget.
pub fn run_with(
    module: &Module<'_>,
    name: &str,
    launch: &Launch,
    args: &[Arg],
    mem: &mut Global,
    how: &Run,
) -> Result<Observed, InterpError> {
    exec::run(module, name, launch, args, mem, how, None)
}
