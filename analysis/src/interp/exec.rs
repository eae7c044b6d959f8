//! Execution: the grid's blocks (in parallel), each block's warps
//! (interleaved between barriers), each warp's reconvergence stack, and the
//! per-lane semantics of every decoded operation, with the observations.
//! A register every lane holds alike is kept as that one value, and an
//! operation over such sources computed once; a register gets a row of
//! lanes only when a run makes them differ (`Regs`).
//!
//! Owns: scheduling, SIMT masks, memory-space resolution of addresses,
//! observation counting. Does not own: decoding or scalar arithmetic.

use super::decode::{self, Addr, Op, Program, Src, Step, Symbols, CALL_PARAM, NO_RPC};
use super::memory::Conflict;
use super::memory::{self, Fault, Global, Shadow, Touch, LOCAL_WINDOW, SHARED_WINDOW};
use super::{Arg, BranchObs, InterpError, Launch, Observed, RaceSeen, SiteKey, SiteObs};
use super::{BarrierObs, Histogram};
use crate::ir::inst::{AtomOp, ShflMode, Space, VoteMode};
use crate::ir::scalar::{self, mask, sext, ThreadPos};
use crate::ptx::Module;
use rayon::prelude::*;
use rustc_hash::FxHashMap;
use std::collections::{BTreeMap, BTreeSet};

/// Warp instructions one block may execute before the run is stopped.
pub(super) const BLOCK_BUDGET: u64 = 1 << 31;

#[derive(Clone, Copy)]
struct Entry {
    pc: usize,
    rpc: usize,
    mask: u32,
    /// A side of a split branch: the branch's site key and the stack index
    /// of the entry its lanes reconverge in (whose lanes not on this side
    /// wait meanwhile).
    origin: Option<(usize, usize)>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum State {
    Running,
    AtBarrier,
    /// Arrived at a cooperative `grid.sync()` (its atomic on the grid
    /// workspace): the block pauses until every block has arrived.
    AtGrid,
    Done,
}

/// Bytes of the grid workspace (its arrival counter).
const WORKSPACE_BYTES: u64 = 16;

/// Blocks of a cooperative launch run at most (each block's state is kept
/// between the phases).
const MAX_COOPERATIVE_BLOCKS: u64 = 4096;

/// The most shared memory one block may have: 227 KiB on sm_90 (163 KiB
/// on sm_80); a larger launch would not start on a GPU.
pub const MAX_SHARED_BYTES: u64 = 227 * 1024;

/// The most module-level global and constant memory a run allocates.
const MAX_MODULE_GLOBAL_BYTES: u64 = 1 << 30;

/// A caller's frame while a device function runs.
struct Saved {
    prog: usize,
    regs: Regs,
    stack: Vec<Entry>,
    scratch: Vec<u8>,
    local_base: u64,
    /// Lanes that made the call (and have not exited since).
    mask: u32,
    /// Where the caller wants the results.
    rets: Vec<(u64, u32)>,
}

/// Calls nested deeper than this stop the run.
const MAX_DEPTH: usize = 64;

struct Warp {
    /// Function (module index) the current frame runs.
    prog: usize,
    /// Where each lane of the current memory instruction's request lands,
    /// in lane order (kept between instructions: not allocated for each).
    places: Vec<(usize, Where)>,
    /// The current frame's registers.
    regs: Regs,
    stack: Vec<Entry>,
    /// Call scratch of the current frame, per lane.
    scratch: Vec<u8>,
    saved: Vec<Saved>,
    /// Local memory of each lane (frames stacked from `local_base`).
    local: Vec<Vec<u8>>,
    local_base: u64,
    state: State,
    /// Per watched group: the sectors its members touched in this instance
    /// (loop iteration) and the members seen.
    footprint: FxHashMap<usize, (BTreeSet<i64>, Vec<usize>)>,
    /// While at a barrier: its site key, the lanes that arrived, and whether
    /// every thread of the block must arrive.
    at_barrier: Option<(usize, u32, bool)>,
    /// Warp index in the block, thread index (linear) of lane 0.
    index: u32,
    first: u32,
}

/// A frame's registers. A register that holds the same value in every
/// lane (every register at the start, at 0; a write of one value to the
/// whole warp makes it so; a lane's own write ends it) is kept as that
/// value: an operation over such sources computes once. A register whose
/// lanes differ has a row of its own, made the first time they do and kept
/// for the frame: a block's warps hold rows only for the registers a run
/// made differ, not for every register of a large kernel.
struct Regs {
    regs: Vec<Reg>,
    /// The rows, one after another.
    lanes: Vec<u64>,
}

/// A register without a row of lanes.
const NO_ROW: u32 = u32::MAX;

#[derive(Clone, Copy)]
struct Reg {
    /// The value of every lane, while they hold one.
    one: u64,
    /// Where the lanes' row starts in [`Regs::lanes`] ([`NO_ROW`]: none yet).
    row: u32,
    uniform: bool,
}

impl Regs {
    fn new(n: usize) -> Regs {
        Regs { regs: vec![Reg { one: 0, row: NO_ROW, uniform: true }; n], lanes: Vec::new() }
    }

    #[inline(always)]
    fn get(&self, r: u32, l: usize) -> u64 {
        let x = self.regs[r as usize];
        if x.uniform {
            x.one
        } else {
            self.lanes[x.row as usize + l]
        }
    }

    /// Register `r`'s row, to write its lanes one by one: made (holding
    /// its value in every lane) while it holds one value.
    #[inline]
    fn row(&mut self, r: u32) -> usize {
        let x = &mut self.regs[r as usize];
        if x.row == NO_ROW {
            x.row = self.lanes.len() as u32;
            self.lanes.resize(self.lanes.len() + 32, 0);
        }
        let row = x.row as usize;
        if x.uniform {
            x.uniform = false;
            self.lanes[row..row + 32].fill(x.one);
        }
        row
    }

    /// Does every lane of `r` hold one value?
    #[inline]
    fn uniform(&self, r: u32) -> bool {
        self.regs[r as usize].uniform
    }

    /// Every lane of `r` holds `v`.
    #[inline]
    fn fill(&mut self, r: u32, v: u64) {
        let x = &mut self.regs[r as usize];
        x.one = v;
        x.uniform = true;
    }
}

impl Warp {
    #[inline(always)]
    fn get(&self, s: Src, l: usize) -> u64 {
        match s {
            Src::Reg(r) => self.regs.get(r, l),
            Src::NotReg(r) => (self.regs.get(r, l) == 0) as u64,
            Src::Imm(v) => v,
            Src::Local(off) => self.local_base + off,
        }
    }

    #[inline]
    fn set(&mut self, r: u32, l: usize, v: u64) {
        let row = self.regs.row(r);
        self.regs.lanes[row + l] = v;
    }

    /// Does `s` hold the same value in every lane?
    #[inline]
    fn uniform(&self, s: Src) -> bool {
        match s {
            Src::Reg(r) | Src::NotReg(r) => self.regs.uniform(r),
            Src::Imm(_) | Src::Local(_) => true,
        }
    }

    /// Lane `l`'s value `v` of an operation over the lanes in `m`: `v` for
    /// all of them when it was computed `once` (over uniform sources).
    #[inline]
    fn write(&mut self, r: u32, l: usize, m: u32, once: bool, v: u64) {
        if once {
            self.put(r, m, v);
        } else {
            self.set(r, l, v);
        }
    }

    /// Write `v` to register `r` in the lanes in `m` (in every lane at
    /// once, which makes it uniform, when `m` is the whole warp).
    #[inline]
    fn put(&mut self, r: u32, m: u32, v: u64) {
        if m == u32::MAX {
            self.regs.fill(r, v);
        } else if m != 0 {
            let row = self.regs.row(r);
            for l in lanes(m) {
                self.regs.lanes[row + l] = v;
            }
        }
    }
}

/// Compute `$v` (over lane `$l`) for the lanes in `$m` and write it to
/// register `$d`: once, in lane 0, when every source in `[…]` is the same
/// in every lane (the operation is a function of its sources alone).
macro_rules! per_lane {
    ($w:ident, $m:expr, [$($s:expr),*], $d:expr, |$l:ident| $v:expr) => {{
        let m = $m;
        if $($w.uniform($s))&&* {
            if m != 0 {
                let $l = 0usize;
                let v = $v;
                $w.put($d, m, v);
            }
        } else {
            let row = $w.regs.row($d);
            for $l in lanes(m) {
                let v = $v;
                $w.regs.lanes[row + $l] = v;
            }
        }
    }};
}

/// Everything the blocks share, read-only.
struct Kernel<'p> {
    /// Decoded functions by module index (the kernel and what it calls).
    progs: FxHashMap<usize, Program>,
    entry: usize,
    /// First site key of each function (site keys are unique across functions).
    bases: FxHashMap<usize, usize>,
    /// PTX line of each site key.
    lines: Vec<u32>,
    /// The instruction each site key stands for.
    keys: Vec<SiteKey>,
    /// Access groups watched (`interp::run_watching`): the group of a site key.
    group_of: FxHashMap<usize, usize>,
    /// The extent in the block's shared memory of the array each shared
    /// access (by site key) is based on.
    bounds: FxHashMap<usize, (u64, u64)>,
    launch: Launch,
    params: Vec<u8>,
    shared_bytes: usize,
    mem: &'p Global,
    /// The grid workspace `%envreg1`/`%envreg2` point at (a cooperative
    /// launch's `grid.sync()` counts arrivals there).
    workspace: u64,
    /// Warp instructions a block may execute.
    budget: u64,
    /// A block that runs out of them stops, and the run goes on.
    partial: bool,
    /// Blocks finished, for progress and the time limit.
    done: std::sync::atomic::AtomicU64,
    /// Blocks the launch runs.
    blocks: u64,
    started: std::time::Instant,
    progress: Option<super::Progress>,
    time_limit: Option<std::time::Duration>,
    /// What a one-block run stops at once it has seen all of it
    /// ([`super::Run::until`]), by site key; empty: none.
    until: Vec<Sought>,
    /// The memory races are looked for in ([`super::Run::races`]).
    races: super::RaceMemory,
}

/// A [`super::Sighting`] by site keys.
#[derive(Clone, Copy)]
enum Sought {
    Race(usize, usize),
    PartialBarrier(usize, bool),
    OutOfBounds(usize),
    Uninitialized(usize),
}

impl Kernel<'_> {
    /// Whether the block has seen everything the run looks for (nothing
    /// when it looks for nothing).
    fn saw_all_sought(&self, obs: &Tally, shadow: &Shadow) -> bool {
        use crate::races::RaceKind::*;
        let partial =
            |x: &usize| obs.barriers.get(x).is_some_and(|b| b.partial > 0) || obs.divergent_barriers.get(x).is_some_and(|&n| n > 0);
        !self.until.is_empty()
            && self.until.iter().all(|s| match *s {
                Sought::Race(a, b) => [(a, b), (b, a)].iter().any(|&(x, y)| {
                    [false, true].iter().any(|&shared| {
                        [ReadAfterWrite, WriteAfterRead, WriteAfterWrite].iter().any(|&k| shadow.races.contains_key(&(shared, k, x, y)))
                    })
                }),
                Sought::PartialBarrier(at, callees) => {
                    partial(&at)
                        || (callees
                            && obs
                                .barriers
                                .keys()
                                .chain(obs.divergent_barriers.keys())
                                .any(|x| self.keys[*x].func != self.entry && partial(x)))
                }
                Sought::OutOfBounds(at) => obs.out_of_bounds.contains_key(&at),
                Sought::Uninitialized(at) => obs.uninitialized.contains_key(&at),
            })
    }

    /// A block finished: say so, and stop a launch past its time limit
    /// (or one its rate so far says would be).
    fn block_done(&self) -> Result<(), InterpError> {
        let done = self.done.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
        if let Some(p) = &self.progress {
            (p.0)(done, self.blocks);
        }
        let Some(limit) = self.time_limit else { return Ok(()) };
        let seconds = self.started.elapsed().as_secs_f64();
        let estimate = seconds / done as f64 * self.blocks as f64;
        let past = seconds > limit.as_secs_f64() || (seconds > super::ESTIMATE_AFTER.as_secs_f64() && estimate > limit.as_secs_f64());
        if past && done < self.blocks {
            return Err(InterpError::TooLong { done, blocks: self.blocks, seconds, estimate: Some(estimate), line: None });
        }
        Ok(())
    }

    /// Inside a block, now and then: stop one past the time limit (a block
    /// that alone takes longer than the limit), at PTX line `line`.
    fn still_in_time(&self, line: u32) -> Result<(), InterpError> {
        let Some(limit) = self.time_limit else { return Ok(()) };
        let seconds = self.started.elapsed().as_secs_f64();
        if seconds <= limit.as_secs_f64() {
            return Ok(());
        }
        let done = self.done.load(std::sync::atomic::Ordering::Relaxed);
        // with blocks done (another worker's), their rate tells how long the launch would take
        let estimate = (done > 0).then(|| seconds / done as f64 * self.blocks as f64);
        Err(InterpError::TooLong { done, blocks: self.blocks, seconds, estimate, line: Some(line) })
    }
}

/// What a run observed, keyed by dense site keys (function base +
/// instruction index); turned into an [`Observed`] at the end.
#[derive(Default)]
struct Tally {
    sites: BTreeMap<usize, SiteObs>,
    branches: BTreeMap<usize, BranchObs>,
    divergent_barriers: BTreeMap<usize, u64>,
    barriers: BTreeMap<usize, BarrierObs>,
    /// Per watched group: the union of its members' sectors per warp instance.
    groups: BTreeMap<usize, Histogram>,
    races: Vec<Conflict>,
    /// Shared and local accesses outside the array their instruction is
    /// based on: the first seen.
    out_of_bounds: BTreeMap<usize, super::SafetyFault>,
    /// Shared reads of bytes no thread of the block had written: the first
    /// seen.
    uninitialized: BTreeMap<usize, super::SafetyFault>,
    /// Each block's global bytes (races between blocks), and whether one
    /// touched more than were recorded.
    footprints: Vec<super::memory::Footprint>,
    /// Races between blocks of the phases of a cooperative launch already
    /// compared (each phase's footprints are compared on their own).
    grid_seen: Vec<super::memory::GridConflict>,
    grid_full: bool,
    /// A block ran out of its budget and stopped there (`Run::partial`).
    timed_out: bool,
    warp_insts: u64,
    lane_insts: u64,
}

impl Tally {
    fn merge(&mut self, o: Tally) {
        for (k, v) in o.sites {
            self.sites.entry(k).or_default().merge(&v);
        }
        for (k, v) in o.branches {
            self.branches.entry(k).or_default().merge(&v);
        }
        for (k, v) in o.divergent_barriers {
            *self.divergent_barriers.entry(k).or_default() += v;
        }
        for (k, v) in o.barriers {
            self.barriers.entry(k).or_default().merge(&v);
        }
        for (k, v) in o.groups {
            self.groups.entry(k).or_default().merge(&v);
        }
        for (mine, theirs) in [(&mut self.out_of_bounds, o.out_of_bounds), (&mut self.uninitialized, o.uninitialized)] {
            for (k, v) in theirs {
                mine.entry(k).and_modify(|x| *x = x.first(v)).or_insert(v);
            }
        }
        for r in o.races {
            if !self.races.iter().any(|x| (x.kind, x.shared, x.first, x.second) == (r.kind, r.shared, r.first, r.second)) {
                self.races.push(r);
            }
        }
        self.footprints.extend(o.footprints);
        self.grid_seen.extend(o.grid_seen);
        self.grid_full |= o.grid_full;
        self.timed_out |= o.timed_out;
        self.warp_insts += o.warp_insts;
        self.lane_insts += o.lane_insts;
    }
}

pub fn run(
    module: &Module<'_>,
    name: &str,
    launch: &Launch,
    args: &[Arg],
    mem: &mut Global,
    how: &super::Run,
    lowered: Option<&super::Lowered<'_>>,
) -> Result<Observed, InterpError> {
    let groups = &how.groups;
    let Some(index) = module.functions.iter().position(|f| f.name == name && f.is_entry && f.body.is_some()) else {
        let kernels: Vec<&str> = module.functions.iter().filter(|f| f.is_entry).map(|f| f.name).collect();
        return Err(InterpError::Launch(format!("no kernel `{name}` in the PTX (kernels: {})", kernels.join(", "))));
    };
    let threads: u64 = launch.block.iter().map(|&x| x as u64).product();
    if threads == 0 || threads > 1024 || launch.grid.contains(&0) {
        return Err(InterpError::Launch(format!("bad launch: block {:?} (1 to 1024 threads), grid {:?}", launch.block, launch.grid)));
    }
    // (lowered here when the caller did not)
    let own;
    let lowered = match lowered {
        Some(l) if l.entry == index => l,
        _ => {
            own = super::Lowered::new(module, &crate::ir::ModuleCx::new(module), index);
            &own
        }
    };
    let func = lowered.kernel().func;
    // module variables: shared ones get offsets in the block's shared memory, others device memory
    let mut shared: FxHashMap<String, u64> = FxHashMap::default();
    let mut global: FxHashMap<String, u64> = FxHashMap::default();
    let mut shared_bytes = 0u64;
    // (each array's extent in the block's shared memory: the accesses based on it are checked against it)
    let mut extents: FxHashMap<String, (u64, u64)> = FxHashMap::default();
    let align_of = |v: &crate::ptx::VarDecl<'_>| v.align.unwrap_or(crate::ir::inst::decl_bytes(v.ty) as u32).max(1) as u64;
    // the static arrays one after the other, then the launch's dynamic shared memory, where every
    // array sized at launch starts (they alias, as on the device)
    let (dynamic, fixed): (Vec<_>, Vec<_>) = crate::ir::shared_decls(module, func).partition(|v| crate::ir::static_bytes(v).is_none());
    for v in fixed {
        let align = align_of(v);
        shared_bytes = shared_bytes.div_ceil(align) * align;
        shared.insert(v.name.to_string(), shared_bytes);
        let size = crate::ir::var_bytes(v);
        extents.insert(v.name.to_string(), (shared_bytes, shared_bytes.saturating_add(size)));
        shared_bytes = shared_bytes.saturating_add(size);
    }
    if !dynamic.is_empty() {
        let align = dynamic.iter().map(|v| align_of(v)).max().unwrap_or(1);
        shared_bytes = shared_bytes.div_ceil(align) * align;
        let size = launch.dynamic_shared as u64;
        for v in dynamic {
            shared.insert(v.name.to_string(), shared_bytes);
            extents.insert(v.name.to_string(), (shared_bytes, shared_bytes.saturating_add(size)));
        }
        shared_bytes = shared_bytes.saturating_add(size);
    }
    let mut global_bytes = 0u64;
    for v in module.globals.iter().filter(|v| matches!(Space::of_decl(v.space), Some(Space::Global | Space::Const))) {
        let size = crate::ir::var_bytes(v).max(1);
        global_bytes = global_bytes.saturating_add(size);
        if global_bytes > MAX_MODULE_GLOBAL_BYTES {
            return Err(InterpError::Launch(format!(
                "the module's global and constant variables take more than {} MiB (`{}`: {size} bytes): more than a run here allocates",
                MAX_MODULE_GLOBAL_BYTES >> 20,
                v.name
            )));
        }
        global.insert(v.name.to_string(), mem.alloc_zeroed(size));
    }
    if shared_bytes > MAX_SHARED_BYTES {
        return Err(InterpError::Launch(format!(
            "`{name}` declares {shared_bytes} bytes of shared memory per block: a block has at most {MAX_SHARED_BYTES} bytes (227 KiB on sm_90, 163 KiB on sm_80), so no GPU would start this launch"
        )));
    }
    // parameter buffer
    let mut params: FxHashMap<String, u64> = FxHashMap::default();
    let mut pbuf: Vec<u8> = Vec::new();
    if args.len() != func.params.len() {
        return Err(InterpError::Launch(format!("kernel `{name}` takes {} parameters, {} given", func.params.len(), args.len())));
    }
    for (p, a) in func.params.iter().zip(args) {
        let size = crate::ir::inst::decl_bytes(p.ty) * p.array.unwrap_or(1);
        let align = p.align.map(|x| x as u64).unwrap_or(crate::ir::inst::decl_bytes(p.ty)).max(1);
        let off = (pbuf.len() as u64).div_ceil(align) * align;
        pbuf.resize(off as usize, 0);
        params.insert(p.name.to_string(), off);
        let bytes = match a {
            Arg::Bits(b) => b.to_le_bytes()[..size.min(8) as usize].to_vec(),
            Arg::Bytes(b) => b.clone(),
        };
        let mut bytes = bytes;
        bytes.resize(size as usize, 0);
        pbuf.extend_from_slice(&bytes);
    }
    let functions: FxHashMap<&str, usize> =
        module.functions.iter().enumerate().filter(|(_, f)| f.body.is_some()).map(|(i, f)| (f.name, i)).collect();
    let syms = Symbols { shared: &shared, global: &global, params: &params, functions: &functions };
    // the kernel and every function it can call
    let mut progs: FxHashMap<usize, Program> = FxHashMap::default();
    let mut bases: FxHashMap<usize, usize> = FxHashMap::default();
    let mut lines: Vec<u32> = Vec::new();
    let mut keys: Vec<SiteKey> = Vec::new();
    let mut bounds: FxHashMap<usize, (u64, u64)> = FxHashMap::default();
    let mut todo = vec![index];
    while let Some(fi) = todo.pop() {
        if progs.contains_key(&fi) {
            continue;
        }
        let fir_ref = lowered.get(fi).ok_or_else(|| InterpError::Launch(format!("function {fi} is called but was not lowered")))?;
        let prog = decode::decode(fir_ref, &syms)?;
        for inst in &prog.insts {
            if let Op::Call { func, .. } = inst.op {
                todo.push(func);
            }
        }
        // the shared accesses based on one array: its extent, by instruction
        for (i, inst) in fir_ref.insts.iter_enumerated() {
            let extent = inst.access().and_then(|_| crate::memory::base_symbol_at(fir_ref, i)).and_then(|s| extents.get(s));
            if let Some(&e) = extent {
                bounds.insert(lines.len() + i.index(), e);
            }
        }
        bases.insert(fi, lines.len());
        lines.extend(fir_ref.insts.iter().map(|i| i.ast.pos.line));
        keys.extend((0..fir_ref.insts.len()).map(|inst| SiteKey { func: fi, inst }));
        progs.insert(fi, prog);
    }
    let workspace = mem.alloc_zeroed(WORKSPACE_BYTES);
    let mem: &Global = mem;
    // the access groups to watch: site key → group
    let dense: FxHashMap<SiteKey, usize> = keys.iter().enumerate().map(|(i, k)| (*k, i)).collect();
    let group_of: FxHashMap<usize, usize> =
        groups.iter().enumerate().flat_map(|(g, members)| members.iter().filter_map(|m| dense.get(m)).map(move |&d| (d, g))).collect();
    let mut k = Kernel {
        progs,
        entry: index,
        bases,
        lines,
        keys,
        launch: *launch,
        params: pbuf,
        shared_bytes: shared_bytes as usize,
        mem,
        group_of,
        bounds,
        workspace,
        budget: how.budget,
        partial: how.partial,
        done: Default::default(),
        blocks: how.blocks.as_ref().map_or(launch.grid.iter().map(|&x| x as u64).product(), |b| b.len() as u64),
        started: std::time::Instant::now(),
        progress: how.progress.clone(),
        time_limit: how.time_limit,
        until: Vec::new(),
        races: how.races,
    };
    let [gx, gy, gz] = launch.grid;
    let nblocks = gx as u64 * gy as u64 * gz as u64;
    // a kernel that reads the grid workspace synchronises its grid (`grid.sync()`): its blocks run in phases
    let cooperative = k.progs.values().any(|p| p.specials.iter().any(|(_, s)| matches!(s, crate::ir::inst::Special::GridWorkspace { .. })));
    // (only a run of one block stops at what it looks for: another block's part is not seen until it runs)
    let one_block = !cooperative && how.blocks.as_ref().map_or(nblocks == 1, |b| b.len() == 1);
    if one_block {
        let at = |s: &SiteKey| dense.get(s).copied();
        // (one it cannot see, at an instruction the run does not execute, and it goes to its end)
        k.until = how
            .until
            .iter()
            .map(|s| match s {
                super::Sighting::Race(a, b) => Some(Sought::Race(at(a)?, at(b)?)),
                super::Sighting::PartialBarrier(a, callees) => Some(Sought::PartialBarrier(at(a)?, *callees)),
                super::Sighting::OutOfBounds(a) => Some(Sought::OutOfBounds(at(a)?)),
                super::Sighting::Uninitialized(a) => Some(Sought::Uninitialized(at(a)?)),
            })
            .collect::<Option<Vec<Sought>>>()
            .unwrap_or_default();
    }
    if cooperative && nblocks > MAX_COOPERATIVE_BLOCKS {
        // every block's state is held at once (on a GPU every block must be resident too)
        return Err(InterpError::Launch(format!(
            "`{name}` synchronises its grid (`grid.sync()`): a cooperative launch of {nblocks} blocks; at most {MAX_COOPERATIVE_BLOCKS} run here (a GPU runs only as many as fit on it at once)"
        )));
    }
    // (a cooperative launch runs every block: each waits for all at `grid.sync()`)
    let tally = match &how.blocks {
        _ if cooperative => run_phases(&k, nblocks)?,
        Some(only) => {
            if let Some(b) = only.iter().find(|&&b| b >= nblocks) {
                return Err(InterpError::Launch(format!("block {b} is not in a grid of {nblocks} blocks")));
            }
            match only[..] {
                [b] => run_one_block(&k, 1, b)?,
                _ => run_blocks(&k, only.len() as u64, only.par_iter().copied(), only.iter().copied())?,
            }
        }
        None if nblocks == 1 => run_one_block(&k, 1, 0)?,
        None => run_blocks(&k, nblocks, (0..nblocks).into_par_iter(), 0..nblocks)?,
    };
    let key = |x: usize| k.keys[x];
    let mut races: Vec<RaceSeen> = tally
        .races
        .iter()
        .map(|r| RaceSeen {
            kind: r.kind,
            shared: r.shared,
            first: key(r.first),
            second: key(r.second),
            first_thread: r.first_thread,
            second_thread: r.second_thread,
            blocks: None,
            same_value: r.same_value,
            unfenced: None,
        })
        .collect();
    let grid_full = tally.grid_full;
    let mut seen = tally.grid_seen;
    seen.extend(super::memory::grid_conflicts(tally.footprints));
    races.extend(seen.into_iter().map(|c| RaceSeen {
        kind: c.kind,
        shared: false,
        first: key(c.first),
        second: key(c.second),
        first_thread: Some(c.threads.0),
        second_thread: c.threads.1,
        blocks: Some(c.blocks),
        same_value: false,
        unfenced: c.unfenced.map(key),
    }));
    races.sort();
    let mut lines: BTreeMap<usize, Vec<u32>> = BTreeMap::new();
    for (x, l) in k.keys.iter().zip(&k.lines) {
        lines.entry(x.func).or_default().push(*l);
    }
    Ok(Observed {
        sites: tally.sites.into_iter().map(|(x, v)| (key(x), v)).collect(),
        branches: tally.branches.into_iter().map(|(x, v)| (key(x), v)).collect(),
        divergent_barriers: tally.divergent_barriers.into_iter().map(|(x, v)| (key(x), v)).collect(),
        barriers: tally.barriers.into_iter().map(|(x, v)| (key(x), v)).collect(),
        groups: tally.groups,
        out_of_bounds: tally.out_of_bounds.into_iter().map(|(x, v)| (key(x), v)).collect(),
        uninitialized: tally.uninitialized.into_iter().map(|(x, v)| (key(x), v)).collect(),
        races,
        grid_full,
        timed_out: tally.timed_out,
        warp_insts: tally.warp_insts,
        lane_insts: tally.lane_insts,
        lines,
        globals: global.into_iter().collect(),
    })
}

/// Block `b`'s index (linear order: x fastest).
fn ctaid_of(k: &Kernel<'_>, b: u64) -> [u32; 3] {
    let [gx, gy, _] = k.launch.grid;
    [(b % gx as u64) as u32, ((b / gx as u64) % gy as u64) as u32, (b / (gx as u64 * gy as u64)) as u32]
}

/// A block's shadow memory for a launch of `nblocks` blocks.
fn shadow_for(k: &Kernel<'_>, nblocks: u64) -> Shadow {
    let mut shadow = Shadow::default();
    shadow.track_grid = nblocks > 1 && k.races.global;
    // the grid workspace's arrivals and polls synchronise blocks: they do not race
    shadow.skip = k.workspace..k.workspace + WORKSPACE_BYTES;
    shadow
}

/// Hand block `b`'s global words (races between blocks) to `obs`, when
/// the shadow recorded them (a launch of more than one block).
fn keep_footprint(obs: &mut Tally, shadow: &mut Shadow, b: u64) {
    if shadow.track_grid {
        obs.footprints.push((b, std::mem::take(&mut shadow.grid), std::mem::take(&mut shadow.order)));
        obs.grid_full |= std::mem::take(&mut shadow.grid_full);
    }
}

impl Kernel<'_> {
    /// The PTX line warp `w` stands at.
    fn line_of(&self, w: &Warp) -> Option<u32> {
        w.stack.last().map(|e| self.lines.get(self.bases[&w.prog] + e.pc).copied().unwrap_or(0))
    }
}

/// Blocks `which` (`nblocks` of them, in increasing order) run to their
/// end, in parallel. (`here`: the same blocks, run on the calling thread
/// where work is not shared out: [`crate::par::alone`].) A run that stops
/// (a fault) reports the lowest block's stop, as the blocks in order
/// would, whichever thread came to its stop first: a block above one that
/// stopped is not started.
fn run_blocks(
    k: &Kernel<'_>,
    nblocks: u64,
    which: impl ParallelIterator<Item = u64>,
    mut here: impl Iterator<Item = u64>,
) -> Result<Tally, InterpError> {
    if !crate::par::parallel() {
        return here.try_fold((Tally::default(), shadow_for(k, nblocks)), |acc, b| block_into(k, acc, b)).map(tally_of);
    }
    let lowest = std::sync::atomic::AtomicU64::new(u64::MAX);
    let stopped = |b: u64| b > lowest.load(std::sync::atomic::Ordering::Relaxed);
    which
        .try_fold(
            || (Tally::default(), shadow_for(k, nblocks)),
            |acc, b| {
                if stopped(b) {
                    return Ok(acc);
                }
                block_into(k, acc, b).map_err(|e| {
                    lowest.fetch_min(b, std::sync::atomic::Ordering::Relaxed);
                    (b, e)
                })
            },
        )
        .map(|r| r.map(tally_of))
        .reduce(
            || Ok(Tally::default()),
            |a, b| match (a, b) {
                (Ok(mut a), Ok(b)) => {
                    a.merge(b);
                    Ok(a)
                }
                (Err(x), Err(y)) => Err(if x.0 <= y.0 { x } else { y }),
                (Err(e), Ok(_)) | (Ok(_), Err(e)) => Err(e),
            },
        )
        .map_err(|(_, e)| e)
}

/// One block of a launch, run on the calling thread (a one-block launch
/// does not start the thread pool).
fn run_one_block(k: &Kernel<'_>, nblocks: u64, b: u64) -> Result<Tally, InterpError> {
    block_into(k, (Tally::default(), shadow_for(k, nblocks)), b).map(tally_of)
}

/// Run block `b`, adding what it does to a tally and its shadow.
fn block_into(k: &Kernel<'_>, (mut obs, mut shadow): (Tally, Shadow), b: u64) -> Result<(Tally, Shadow), InterpError> {
    run_block(k, ctaid_of(k, b), &mut obs, &mut shadow)?;
    keep_footprint(&mut obs, &mut shadow, b);
    k.block_done()?;
    Ok((obs, shadow))
}

/// A tally with the races its shadow saw.
fn tally_of((mut obs, shadow): (Tally, Shadow)) -> Tally {
    obs.races = shadow.races.into_values().collect();
    obs
}

/// The blocks of a cooperative launch in phases: every block runs until
/// it arrives at `grid.sync()` (or ends), the phase's races between blocks
/// are compared, then every block goes on (the grid workspace's count has
/// flipped, so each block's wait ends).
fn run_phases(k: &Kernel<'_>, nblocks: u64) -> Result<Tally, InterpError> {
    let mut blocks: Vec<(BlockRun, Shadow, bool)> = (0..nblocks)
        .map(|b| {
            let mut shadow = shadow_for(k, nblocks);
            shadow.reset(k.shared_bytes);
            (start_block(k, ctaid_of(k, b)), shadow, false)
        })
        .collect();
    let mut total = Tally::default();
    loop {
        let mut phase = blocks
            .par_iter_mut()
            .enumerate()
            .filter(|(_, (_, _, done))| !*done)
            .map(|(b, (run, shadow, done))| {
                let mut obs = Tally::default();
                for w in run.warps.iter_mut().filter(|w| w.state == State::AtGrid) {
                    w.state = State::Running;
                }
                *done = resume_block(k, run, &mut obs, shadow)? == Stop::Done;
                keep_footprint(&mut obs, shadow, b as u64);
                Ok::<_, InterpError>(obs)
            })
            .try_reduce(Tally::default, |mut a, b| {
                a.merge(b);
                Ok(a)
            })?;
        phase.grid_seen.extend(super::memory::grid_conflicts(std::mem::take(&mut phase.footprints)));
        total.merge(phase);
        let waiting: Vec<&BlockRun> = blocks.iter().filter(|x| !x.2).map(|x| &x.0).collect();
        if waiting.is_empty() {
            break;
        }
        if waiting.len() < blocks.len() {
            // some blocks ended without arriving: the others would wait for them forever
            let line = waiting[0].warps.iter().filter(|w| w.state == State::AtGrid).find_map(|w| k.line_of(w)).unwrap_or(0);
            return Err(InterpError::GridDeadlock { line });
        }
    }
    for (_, shadow, _) in blocks {
        total.merge(Tally { races: shadow.races.into_values().collect(), ..Tally::default() });
    }
    Ok(total)
}

/// A block's state while it runs, kept between the phases of a
/// cooperative launch.
struct BlockRun {
    ctaid: [u32; 3],
    warps: Vec<Warp>,
    shared: Vec<u8>,
    budget: u64,
    /// Per branch this block executed: the warps that executed it and those that split there.
    branch_warps: FxHashMap<usize, (u32, u32)>,
}

/// Why a block stopped.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Stop {
    Done,
    /// Every warp still alive waits at `grid.sync()` (its master thread
    /// arrived, the others wait at the barrier that ends it).
    AtGrid,
}

fn run_block(k: &Kernel<'_>, ctaid: [u32; 3], obs: &mut Tally, shadow: &mut Shadow) -> Result<(), InterpError> {
    shadow.reset(k.shared_bytes);
    let mut run = start_block(k, ctaid);
    match resume_block(k, &mut run, obs, shadow) {
        // what the block did before it ran out is kept
        Err(InterpError::Timeout { .. }) if k.partial => {
            obs.timed_out = true;
            Ok(())
        }
        Err(e) => Err(e),
        Ok(Stop::Done) => Ok(()),
        // (only a kernel that reads the grid workspace arrives, and it runs in phases)
        Ok(Stop::AtGrid) => Err(InterpError::Launch("a block arrived at a grid barrier in a launch that is not cooperative".into())),
    }
}

/// A block's warps at the kernel's start.
fn start_block(k: &Kernel<'_>, ctaid: [u32; 3]) -> BlockRun {
    let [bx, by, bz] = k.launch.block;
    let n = bx * by * bz;
    let nwarps = n.div_ceil(32);
    let prog = &k.progs[&k.entry];
    let warps: Vec<Warp> = (0..nwarps)
        .map(|w| {
            let first = w * 32;
            let lanes = (n - first).min(32);
            let valid = if lanes == 32 { u32::MAX } else { (1u32 << lanes) - 1 };
            let mut warp = Warp {
                prog: k.entry,
                regs: Regs::new(prog.nregs),
                stack: vec![Entry { pc: 0, rpc: NO_RPC, mask: valid, origin: None }],
                scratch: vec![0u8; 32 * prog.scratch_bytes as usize],
                saved: Vec::new(),
                local: vec![vec![0u8; prog.local_bytes as usize]; 32],
                local_base: 0,
                state: State::Running,
                footprint: FxHashMap::default(),
                places: Vec::with_capacity(crate::model::WARP),
                at_barrier: None,
                index: w,
                first,
            };
            init_specials(k, prog, &mut warp, ctaid, nwarps);
            warp
        })
        .collect();
    BlockRun { ctaid, warps, shared: vec![0u8; k.shared_bytes], budget: k.budget, branch_warps: FxHashMap::default() }
}

/// Run a block's warps (interleaved between barriers) until the block ends
/// or waits at `grid.sync()`.
fn resume_block(k: &Kernel<'_>, run: &mut BlockRun, obs: &mut Tally, shadow: &mut Shadow) -> Result<Stop, InterpError> {
    let [bx, by, bz] = k.launch.block;
    let n = bx * by * bz;
    let BlockRun { ctaid, warps, shared, budget, branch_warps } = run;
    loop {
        let mut progressed = false;
        for warp in warps.iter_mut() {
            if warp.state == State::Running {
                let mut cx = Cx { k, ctaid: *ctaid, shared, shadow, obs, branch_warps, budget, arrived: false };
                cx.run_warp(warp)?;
                progressed = true;
            }
        }
        // per branch this block executed: how many of its warps split there
        let ended = |obs: &mut Tally, branch_warps: &mut FxHashMap<usize, (u32, u32)>| {
            for (key, (_, split)) in branch_warps.drain() {
                obs.branches.entry(key).or_default().warps_split.add(split.count_ones());
            }
            Ok(Stop::Done)
        };
        if warps.iter().all(|w| w.state == State::Done) {
            return ended(obs, branch_warps);
        }
        if warps.iter().all(|w| w.state != State::Running) {
            if warps.iter().any(|w| w.state == State::AtGrid) {
                return Ok(Stop::AtGrid);
            }
            // every warp still alive waits at a barrier: how many threads of the
            // block arrived at each barrier instruction, then release them
            let mut arrived: BTreeMap<usize, (u32, bool)> = BTreeMap::new();
            for w in warps.iter_mut().filter(|w| w.state == State::AtBarrier) {
                if let Some((key, mask, whole)) = w.at_barrier.take() {
                    let e = arrived.entry(key).or_insert((0, whole));
                    e.0 += mask.count_ones();
                }
                w.state = State::Running;
            }
            for (key, (threads, whole)) in arrived {
                let e = obs.barriers.entry(key).or_default();
                e.episodes += 1;
                e.fewest = if e.episodes == 1 { threads } else { e.fewest.min(threads) };
                if whole && threads < n {
                    e.partial += 1;
                }
                e.block_threads = n;
            }
            shadow.epoch += 1;
            if k.saw_all_sought(obs, shadow) {
                // (the rest of the block cannot take back what it saw)
                return ended(obs, branch_warps);
            }
        } else if !progressed {
            let line = warps.iter().find_map(|w| k.line_of(w)).unwrap_or(0);
            return Err(InterpError::Deadlock { line });
        }
    }
}

/// Special registers of a frame's register file.
fn init_specials(k: &Kernel<'_>, prog: &Program, w: &mut Warp, ctaid: [u32; 3], nwarps: u32) {
    let [bx, by, _] = k.launch.block;
    let mut vals = [0u64; 32];
    for &(r, s) in &prog.specials {
        for (l, v) in (0u32..).zip(vals.iter_mut()) {
            let t = w.first + l;
            let pos = ThreadPos {
                tid: [t % bx, (t / bx) % by, t / (bx * by)],
                ntid: k.launch.block,
                ctaid: Some(ctaid),
                nctaid: Some(k.launch.grid),
                lane: l,
                warp: Some(w.index),
                nwarps: Some(nwarps),
                workspace: Some(k.workspace),
            };
            // clocks, the SM and other registers a run cannot know read as 0
            *v = scalar::special_value(s, &pos).unwrap_or(0);
        }
        // (one value in every lane, `%ntid.x` or `%ctaid.x`: held once, as any register every lane
        // was given one value is, not in a row of lanes)
        if vals.iter().all(|&v| v == vals[0]) {
            w.put(r, u32::MAX, vals[0]);
        } else {
            for (l, &v) in vals.iter().enumerate() {
                w.set(r, l, v);
            }
        }
    }
}

struct Cx<'a, 'k> {
    k: &'a Kernel<'k>,
    ctaid: [u32; 3],
    shared: &'a mut Vec<u8>,
    shadow: &'a mut Shadow,
    obs: &'a mut Tally,
    /// Per branch executed in this block: the warps that executed it and those that split there.
    branch_warps: &'a mut FxHashMap<usize, (u32, u32)>,
    budget: &'a mut u64,
    /// The last atomic touched the grid workspace (`grid.sync()`'s arrival).
    arrived: bool,
}

/// Iterate the set bits of a lane mask.
#[inline]
fn lanes(m: u32) -> impl Iterator<Item = usize> {
    let mut m = m;
    std::iter::from_fn(move || {
        if m == 0 {
            None
        } else {
            let l = m.trailing_zeros() as usize;
            m &= m - 1;
            Some(l)
        }
    })
}

/// Where an address of an access lands.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Where {
    Global(u64),
    Shared(u64),
    Local(u64),
    Param(u64),
    /// The current frame's call scratch.
    CallParam(u64),
}

impl Where {
    /// Memory every lane sees alike (not a thread's own local or call memory).
    fn alike(self) -> bool {
        matches!(self, Where::Global(_) | Where::Shared(_) | Where::Param(_))
    }
}

/// One warp request of a memory instruction: where each lane of it lands
/// (`at`, in lane order; with `one_place`, lane 0's place, where every lane
/// of the warp is) and the bytes each lane touches.
#[derive(Clone, Copy)]
struct Request<'r> {
    at: &'r [(usize, Where)],
    len: u32,
    one_place: bool,
}

impl Cx<'_, '_> {
    fn thread(&self, w: &Warp, l: usize) -> [u32; 3] {
        let [bx, by, _] = self.k.launch.block;
        let t = w.first + l as u32;
        [t % bx, (t / bx) % by, t / (bx * by)]
    }

    /// Lane `l` of warp `w` at byte `x` of memory whose array starts at `lo`.
    fn seen_at(&self, w: &Warp, l: usize, x: u64, lo: u64) -> super::SafetyFault {
        super::SafetyFault { block: self.ctaid, thread: self.thread(w, l), offset: (x as i64).wrapping_sub(lo as i64) }
    }

    fn fault(&self, w: &Warp, l: usize, pc: usize, f: Fault) -> InterpError {
        // where it is from the start of the array the access is based on
        let start = match f.what {
            "shared" => self.k.bounds.get(&pc).map(|b| b.0),
            "local" => self.k.progs[&w.prog].local_extents.get(&(pc - self.k.bases[&w.prog])).map(|e| w.local_base + e.0),
            _ => None,
        };
        InterpError::Fault {
            array_offset: start.map(|s| (f.addr as i64).wrapping_sub(s as i64)),
            site: self.k.keys[pc],
            line: self.k.lines.get(pc).copied().unwrap_or(0),
            addr: f.addr,
            len: f.len,
            space: f.what,
            thread: self.thread(w, l),
            block: self.ctaid,
            warp_insts: self.obs.warp_insts,
        }
    }

    fn resolve(space: Space, a: u64) -> Where {
        match space {
            Space::Global | Space::Const => Where::Global(a),
            Space::Shared => Where::Shared(a & 0xffff_ffff),
            Space::Local => Where::Local(a),
            Space::Param if a >= CALL_PARAM => Where::CallParam(a - CALL_PARAM),
            Space::Param => Where::Param(a),
            // the decoder turns `Unknown` into `Generic` and rejects `::cluster`
            Space::Generic | Space::Unknown | Space::SharedCluster => {
                if a >= LOCAL_WINDOW {
                    Where::Local(a - LOCAL_WINDOW)
                } else if a >= SHARED_WINDOW {
                    Where::Shared(a - SHARED_WINDOW)
                } else {
                    Where::Global(a)
                }
            }
        }
    }

    fn load(&mut self, w: &Warp, l: usize, pc: usize, at: Where, len: u32) -> Result<u64, InterpError> {
        let r = match at {
            Where::Global(a) => self.k.mem.load(a, len),
            Where::Shared(a) => memory::load_bytes(self.shared, a, len, "shared", a),
            Where::Local(a) => memory::load_bytes(&w.local[l], a, len, "local", a),
            Where::Param(a) => memory::load_bytes(&self.k.params, a, len, "param", a),
            Where::CallParam(a) => {
                let sb = self.k.progs[&w.prog].scratch_bytes;
                if a + len as u64 > sb {
                    Err(Fault { addr: a, len, what: "param" })
                } else {
                    memory::load_bytes(&w.scratch, l as u64 * sb + a, len, "param", a)
                }
            }
        };
        r.map_err(|f| self.fault(w, l, pc, f))
    }

    fn store(&mut self, w: &mut Warp, l: usize, pc: usize, at: Where, len: u32, v: u64) -> Result<(), InterpError> {
        let r = match at {
            Where::Global(a) => self.k.mem.store(a, len, v),
            Where::Shared(a) => memory::store_bytes(self.shared, a, len, v, "shared", a),
            Where::Local(a) => memory::store_bytes(&mut w.local[l], a, len, v, "local", a),
            Where::Param(a) => Err(Fault { addr: a, len, what: "param (read-only)" }),
            Where::CallParam(a) => {
                let sb = self.k.progs[&w.prog].scratch_bytes;
                if a + len as u64 > sb {
                    Err(Fault { addr: a, len, what: "param" })
                } else {
                    memory::store_bytes(&mut w.scratch, l as u64 * sb + a, len, v, "param", a)
                }
            }
        };
        r.map_err(|f| self.fault(w, l, pc, f))
    }

    /// Count one warp request of a memory site and feed the race shadow
    /// (`bytes`: for a store, what each lane of `at` stored, `len` bytes
    /// each, in order). With `one_place`, `at` is lane 0's place, and every
    /// lane of the warp is there (a load of the whole warp through one
    /// address): the request counts as lane 0's bytes alone, since the
    /// sectors a request touches and its bank conflicts are those of its
    /// distinct addresses (`model::tests::one_place_counts_as_its_first_lane`).
    fn observe(&mut self, w: &mut Warp, pc: usize, req: Request<'_>, touch: Touch, bytes: &[u8]) {
        let Request { at, len, one_place } = req;
        let Some(&(_, first)) = at.first() else { return };
        // the lanes of the request
        let count = if one_place { crate::model::WARP } else { at.len() };
        // the lanes' addresses in `first`'s space (a warp's lanes at most: on the stack)
        let mut buf = [(0i64, 0u32); crate::model::WARP];
        let mut n = 0;
        for &(_, a) in at {
            if let (Where::Global(x), Where::Global(_)) | (Where::Shared(x), Where::Shared(_)) = (a, first) {
                if let Some(slot) = buf.get_mut(n) {
                    (*slot, n) = ((x as i64, len), n + 1);
                }
            }
        }
        let addrs = &buf[..n];
        match first {
            Where::Global(_) => {
                let s = crate::model::sectors(addrs).0;
                let site = self.obs.sites.entry(pc).or_default();
                site.space = "global";
                site.hist.add(s);
                // a watched group: the union of its members' sectors in one instance (a member seen
                // again starts the next: the next loop iteration)
                if let Some(&g) = self.k.group_of.get(&pc) {
                    let (sectors, seen) = w.footprint.entry(g).or_default();
                    if seen.contains(&pc) {
                        self.obs.groups.entry(g).or_default().add(sectors.len() as u32);
                        sectors.clear();
                        seen.clear();
                    }
                    seen.push(pc);
                    for &(a, n) in addrs {
                        sectors.extend(a.div_euclid(crate::model::SECTOR)..=(a + n as i64 - 1).div_euclid(crate::model::SECTOR));
                    }
                }
            }
            Where::Shared(_) => {
                let c = crate::model::conflict_degree(addrs, len);
                let site = self.obs.sites.entry(pc).or_default();
                site.space = "shared";
                site.hist.add(c);
                // a lane outside the array the instruction is based on
                let (lo, hi) = self.k.bounds.get(&pc).copied().unwrap_or((0, u64::MAX));
                // (no collection: this runs at every shared warp access)
                let shared_at = || at.iter().filter_map(|&(l, a)| if let Where::Shared(x) = a { Some((l, x)) } else { None });
                let inside = |x: u64| x >= lo && x.saturating_add(len as u64) <= hi;
                if let Some(f) = shared_at().find(|&(_, x)| !inside(x)).map(|(l, x)| self.seen_at(w, l, x, lo)) {
                    self.obs.out_of_bounds.entry(pc).or_insert(f);
                }
                // bytes of its array no thread of the block has written (initcheck; one outside
                // it is out of bounds), and those written now
                match touch {
                    Touch::Read => {
                        let unwritten = shared_at().find(|&(_, x)| inside(x) && self.shadow.unwritten(x, len));
                        if let Some(f) = unwritten.map(|(l, x)| self.seen_at(w, l, x, lo)) {
                            self.obs.uninitialized.entry(pc).or_insert(f);
                        }
                    }
                    Touch::Write | Touch::Atomic => shared_at().for_each(|(_, x)| self.shadow.mark_written(x, len)),
                }
            }
            Where::Local(_) => {
                // a lane outside the `.local` array the instruction is based on (in its frame)
                let prog = &self.k.progs[&w.prog];
                if let Some(&(off, size)) = prog.local_extents.get(&(pc - self.k.bases[&w.prog])) {
                    let lo = w.local_base + off;
                    let outside = at.iter().find_map(|&(l, a)| match a {
                        Where::Local(x) if x < lo || x.saturating_add(len as u64) > lo + size => Some(self.seen_at(w, l, x, lo)),
                        _ => None,
                    });
                    if let Some(f) = outside {
                        self.obs.out_of_bounds.entry(pc).or_insert(f);
                    }
                }
            }
            _ => {}
        }
        // (each lane's bytes in the memory the run shadows: a generic access may reach both)
        let races = self.k.races;
        let watched = |a: Where| match a {
            Where::Global(_) => races.global,
            Where::Shared(_) => races.shared,
            _ => false,
        };
        if !races.global && !races.shared {
            return;
        }
        // a load every lane makes from the same bytes: recorded at once when no write can race with it
        if touch == Touch::Read && count > 1 && (one_place || at.iter().all(|&(_, a)| a == first)) {
            if !watched(first) {
                return;
            }
            let mut tids = [0u32; crate::model::WARP];
            let tids = &mut tids[..count.min(crate::model::WARP)];
            match one_place {
                true => tids.iter_mut().enumerate().for_each(|(l, t)| *t = w.first + l as u32),
                false => tids.iter_mut().zip(at).for_each(|(t, &(l, _))| *t = w.first + l as u32),
            }
            let done = match first {
                Where::Global(x) => self.shadow.read_by_all(false, x, len, tids, pc),
                Where::Shared(x) => self.shadow.read_by_all(true, x, len, tids, pc),
                _ => true,
            };
            if done {
                return;
            }
        }
        let shadow = &mut *self.shadow;
        let mut each = |k: usize, l: usize, a: Where| {
            let tid = w.first + l as u32;
            let stored = bytes.get(k * len as usize..(k + 1) * len as usize).unwrap_or(&[]);
            match a {
                Where::Global(x) if watched(a) => shadow.touch(false, x, len, tid, pc, touch, stored),
                Where::Shared(x) if watched(a) => shadow.touch(true, x, len, tid, pc, touch, stored),
                _ => {}
            }
        };
        match one_place {
            true => (0..count).for_each(|l| each(l, l, first)),
            false => at.iter().enumerate().for_each(|(k, &(l, a))| each(k, l, a)),
        }
    }

    fn addr_of(w: &Warp, a: &Addr, l: usize) -> u64 {
        w.get(a.base, l).wrapping_add(a.off as u64)
    }

    fn run_warp(&mut self, w: &mut Warp) -> Result<(), InterpError> {
        let progs = &self.k.progs;
        let mut prog = &progs[&w.prog];
        let mut base = self.k.bases[&w.prog];
        loop {
            let Some(top) = w.stack.last().copied() else {
                // the function is done: back to its caller, or the warp is done
                if let Some(sv) = w.saved.pop() {
                    self.return_to(w, sv);
                    prog = &progs[&w.prog];
                    base = self.k.bases[&w.prog];
                    continue;
                }
                w.state = State::Done;
                // the last instance of each group the warp was in
                for (g, (sectors, _)) in w.footprint.drain() {
                    self.obs.groups.entry(g).or_default().add(sectors.len() as u32);
                }
                return Ok(());
            };
            if top.mask == 0 || top.pc == top.rpc {
                w.stack.pop();
                continue;
            }
            let pc = top.pc;
            let key = base + pc;
            let Some(inst) = prog.insts.get(pc) else {
                // fell off the end (or reached "reconverge at exit"): these lanes leave
                self.leave(w, top.mask, false);
                continue;
            };
            let Step { guard, op } = inst;
            let mut m = top.mask;
            if let Some(g) = guard {
                if w.uniform(*g) {
                    m = if w.get(*g, 0) & 1 != 0 { m } else { 0 };
                } else {
                    let mut gm = 0u32;
                    for l in lanes(m) {
                        if w.get(*g, l) & 1 != 0 {
                            gm |= 1 << l;
                        }
                    }
                    m = gm;
                }
            }
            self.obs.warp_insts += 1;
            self.obs.lane_insts += m.count_ones() as u64;
            // the lanes waiting for this side of each split around it, counted to its branch
            let mut at = top.origin;
            let mut lanes_here = top.mask.count_ones();
            while let Some((branch, parent)) = at {
                let e = &w.stack[parent];
                let waiting = e.mask.count_ones().saturating_sub(lanes_here);
                if let Some(b) = self.obs.branches.get_mut(&branch) {
                    b.idle_lane_slots += waiting as u64;
                }
                (at, lanes_here) = (e.origin, e.mask.count_ones());
            }
            if *self.budget == 0 || *self.budget % (1 << 16) == 0 {
                let line = self.k.lines.get(self.k.bases[&w.prog] + pc).copied().unwrap_or(0);
                if *self.budget == 0 {
                    return Err(InterpError::Timeout { warp_insts: self.k.budget, line });
                }
                self.k.still_in_time(line)?;
            }
            *self.budget -= 1;
            let next = pc + 1;
            match op {
                Op::Bra { target, rpc } => {
                    let target = *target;
                    if guard.is_none() {
                        w.stack.last_mut().unwrap().pc = target;
                        continue;
                    }
                    let taken = m;
                    let fall = top.mask & !m;
                    let b = self.obs.branches.entry(key).or_default();
                    b.executions += 1;
                    let seen = self.branch_warps.entry(key).or_default();
                    seen.0 |= 1 << w.index;
                    if taken != 0 && fall != 0 {
                        b.splits += 1;
                        seen.1 |= 1 << w.index;
                        let rpc = *rpc;
                        w.stack.last_mut().unwrap().pc = rpc;
                        let origin = Some((key, w.stack.len() - 1));
                        w.stack.push(Entry { pc: next, rpc, mask: fall, origin });
                        w.stack.push(Entry { pc: target, rpc, mask: taken, origin });
                    } else if taken != 0 {
                        w.stack.last_mut().unwrap().pc = target;
                    } else {
                        w.stack.last_mut().unwrap().pc = next;
                    }
                    continue;
                }
                Op::Exit | Op::Ret => {
                    w.stack.last_mut().unwrap().pc = next;
                    self.leave(w, m, matches!(op, Op::Exit));
                    continue;
                }
                Op::Call { func, args, rets } => {
                    w.stack.last_mut().unwrap().pc = next;
                    if m == 0 {
                        continue;
                    }
                    if w.saved.len() >= MAX_DEPTH {
                        return Err(InterpError::Launch(format!("PTX line {}: calls nested deeper than {MAX_DEPTH}", self.k.lines[key])));
                    }
                    self.call(w, *func, args, rets.clone(), m);
                    prog = &progs[&w.prog];
                    base = self.k.bases[&w.prog];
                    continue;
                }
                Op::Unsupported(e) => {
                    if m != 0 {
                        return Err((**e).clone());
                    }
                }
                Op::Trap => {
                    if m != 0 {
                        let l = m.trailing_zeros() as usize;
                        return Err(InterpError::Trap {
                            site: self.k.keys[key],
                            line: self.k.lines[key],
                            thread: self.thread(w, l),
                            block: self.ctaid,
                        });
                    }
                }
                Op::Bar { whole_block } => {
                    w.stack.last_mut().unwrap().pc = next;
                    if m == 0 {
                        continue;
                    }
                    let alive = w.stack.iter().fold(0u32, |a, e| a | e.mask);
                    if m != alive {
                        *self.obs.divergent_barriers.entry(key).or_default() += 1;
                    }
                    w.state = State::AtBarrier;
                    w.at_barrier = Some((key, m, *whole_block));
                    return Ok(());
                }
                _ => self.exec(w, key, op, m)?,
            }
            w.stack.last_mut().unwrap().pc = next;
            if self.arrived {
                // `grid.sync()`'s arrival: the block waits for the grid
                self.arrived = false;
                w.state = State::AtGrid;
                return Ok(());
            }
        }
    }

    /// Lanes `m` leave the current function (`ret`), or end (`exit`, or
    /// `ret` from the kernel): removed from its reconvergence stack, and
    /// when they end, from every caller's too.
    fn leave(&mut self, w: &mut Warp, m: u32, end: bool) {
        for e in w.stack.iter_mut() {
            e.mask &= !m;
        }
        while w.stack.last().is_some_and(|e| e.mask == 0) {
            w.stack.pop();
        }
        if end {
            for sv in w.saved.iter_mut() {
                sv.mask &= !m;
                for e in sv.stack.iter_mut() {
                    e.mask &= !m;
                }
            }
        }
    }

    /// Enter device function `func` with lanes `m`: its frame gets the
    /// arguments copied into its formal parameters.
    fn call(&mut self, w: &mut Warp, func: usize, args: &[(u64, u32)], rets: Vec<(u64, u32)>, m: u32) {
        let callee = &self.k.progs[&func];
        let caller_sb = self.k.progs[&w.prog].scratch_bytes as usize;
        let sb = callee.scratch_bytes as usize;
        let mut scratch = vec![0u8; 32 * sb];
        for l in lanes(m) {
            for (&(off, size), &(aoff, asize)) in callee.formals.iter().zip(args) {
                let n = size.min(asize) as usize;
                let from = l * caller_sb + aoff as usize;
                let to = l * sb + off as usize;
                if let (Some(src), true) = (w.scratch.get(from..from + n), to + n <= scratch.len()) {
                    scratch[to..to + n].copy_from_slice(src);
                }
            }
        }
        let local_base = w.local_base + self.k.progs[&w.prog].local_bytes;
        let need = (local_base + callee.local_bytes) as usize;
        for lm in w.local.iter_mut() {
            if lm.len() < need {
                lm.resize(need, 0);
            }
        }
        let saved = Saved {
            prog: w.prog,
            regs: std::mem::replace(&mut w.regs, Regs::new(callee.nregs)),
            stack: std::mem::replace(&mut w.stack, vec![Entry { pc: 0, rpc: NO_RPC, mask: m, origin: None }]),
            scratch: std::mem::replace(&mut w.scratch, scratch),
            local_base: w.local_base,
            mask: m,
            rets,
        };
        w.saved.push(saved);
        w.prog = func;
        w.local_base = local_base;
        let nwarps = self.k.launch.block.iter().product::<u32>().div_ceil(32);
        init_specials(self.k, callee, w, self.ctaid, nwarps);
    }

    /// The callee is done: copy its results to the caller's scratch and resume the caller.
    fn return_to(&mut self, w: &mut Warp, sv: Saved) {
        let callee = &self.k.progs[&w.prog];
        let sb = callee.scratch_bytes as usize;
        let caller_sb = self.k.progs[&sv.prog].scratch_bytes as usize;
        let mut caller_scratch = sv.scratch;
        for l in lanes(sv.mask) {
            for (&(off, size), &(roff, rsize)) in callee.returns.iter().zip(&sv.rets) {
                let n = size.min(rsize) as usize;
                let from = l * sb + off as usize;
                let to = l * caller_sb + roff as usize;
                if let (Some(src), true) = (w.scratch.get(from..from + n), to + n <= caller_scratch.len()) {
                    caller_scratch[to..to + n].copy_from_slice(src);
                }
            }
        }
        w.prog = sv.prog;
        w.regs = sv.regs;
        w.stack = sv.stack;
        w.scratch = caller_scratch;
        w.local_base = sv.local_base;
    }

    /// One non-control operation over the lanes in `m`.
    fn exec(&mut self, w: &mut Warp, pc: usize, op: &Op, m: u32) -> Result<(), InterpError> {
        match op {
            // one loop per operation, the integer semantics inlined for it
            Op::Bin { op, ty, d, a, b, sat, .. } if !ty.is_float() => scalar::per_bin_op!(*op, o => {
                per_lane!(w, m, [*a, *b], *d, |l| scalar::bin_int(o, *ty, w.get(*a, l), w.get(*b, l), *sat))
            }),
            Op::Bin { op, ty, d, a, b, round, ftz, sat } => {
                per_lane!(w, m, [*a, *b], *d, |l| scalar::bin(*op, *ty, w.get(*a, l), w.get(*b, l), *round, *ftz, *sat))
            }
            Op::Mad { ty, mode, d, a, b, c, round, ftz, sat } => {
                per_lane!(w, m, [*a, *b, *c], *d, |l| scalar::mad(*ty, *mode, w.get(*a, l), w.get(*b, l), w.get(*c, l), *round, *ftz, *sat))
            }
            Op::Un { op, ty, d, a, ftz } => per_lane!(w, m, [*a], *d, |l| scalar::un(*op, *ty, w.get(*a, l), *ftz)),
            Op::Setp { cmp, ty, d, d2, a, b, combine, ftz } => {
                // over uniform sources lane 0 alone (when any lane runs), written to every lane
                let once = w.uniform(*a) && w.uniform(*b) && combine.is_none_or(|(_, c)| w.uniform(c));
                for l in lanes(if once { (m != 0) as u32 } else { m }) {
                    let mut r = scalar::cmp(*cmp, *ty, w.get(*a, l), w.get(*b, l), *ftz);
                    let mut r2 = !r;
                    if let Some((op, c)) = combine {
                        let cv = w.get(*c, l) & 1 != 0;
                        r = scalar::boolop(*op, r, cv);
                        r2 = scalar::boolop(*op, r2, cv);
                    }
                    w.write(*d, l, m, once, r as u64);
                    if let Some(d2) = d2 {
                        w.write(*d2, l, m, once, r2 as u64);
                    }
                }
            }
            Op::Set { cmp, dty, ty, d, a, b } => {
                per_lane!(w, m, [*a, *b], *d, |l| scalar::set(*dty, scalar::cmp(*cmp, *ty, w.get(*a, l), w.get(*b, l), false)))
            }
            Op::Selp { d, a, b, p } => {
                per_lane!(w, m, [*a, *b, *p], *d, |l| if w.get(*p, l) & 1 != 0 { w.get(*a, l) } else { w.get(*b, l) })
            }
            Op::Mov { d, a } => per_lane!(w, m, [*a], *d, |l| w.get(*a, l)),
            Op::Pack { d, parts, bits } => {
                for l in lanes(m) {
                    let mut v = 0u64;
                    for (k, p) in parts.iter().enumerate() {
                        v |= (w.get(*p, l) & mask(*bits)) << (k as u32 * bits);
                    }
                    w.set(*d, l, v);
                }
            }
            Op::Unpack { ds, a, bits } => {
                for l in lanes(m) {
                    let v = w.get(*a, l);
                    for (k, dd) in ds.iter().enumerate() {
                        if let Some(dd) = dd {
                            w.set(*dd, l, (v >> (k as u32 * bits)) & mask(*bits));
                        }
                    }
                }
            }
            Op::Cvt { d, dty, sty, a, round, int_round, sat, ftz } => {
                per_lane!(w, m, [*a], *d, |l| scalar::cvt(*dty, *sty, w.get(*a, l), *round, *int_round, *sat, *ftz))
            }
            Op::Cvta { d, a, space, to_space } => {
                let window = |x: u64| match (space, to_space) {
                    (Space::Shared, false) => x.wrapping_add(SHARED_WINDOW),
                    (Space::Shared, true) => x.wrapping_sub(SHARED_WINDOW),
                    (Space::Local, false) => x.wrapping_add(LOCAL_WINDOW),
                    (Space::Local, true) => x.wrapping_sub(LOCAL_WINDOW),
                    _ => x,
                };
                per_lane!(w, m, [*a], *d, |l| window(w.get(*a, l)))
            }
            Op::Ld { space, ty, ds, addr } => {
                let len = ty.bytes();
                let mut at = std::mem::take(&mut w.places);
                at.clear();
                // what the lane before loaded from memory every lane sees alike (not a thread's
                // own local or call memory): a lane at the same place takes it again (one request)
                let mut before: Option<(Where, [u64; 8])> = None;
                // the whole warp at one address every lane sees alike: one load, written to every lane
                let whole =
                    m == u32::MAX && w.uniform(addr.base) && ds.len() <= 8 && Self::resolve(*space, Self::addr_of(w, addr, 0)).alike();
                let mm = if whole { 1 } else { m };
                for l in lanes(mm) {
                    let a = Self::addr_of(w, addr, l);
                    let wh = Self::resolve(*space, a);
                    let common = wh.alike() && ds.len() <= 8;
                    let again = before.filter(|(p, _)| common && *p == wh).map(|(_, v)| v);
                    let mut loaded = [0u64; 8];
                    for (k, dd) in ds.iter().enumerate() {
                        let part = shift(wh, k as u64 * len as u64);
                        let v = match again {
                            Some(vs) => vs[k],
                            None => self.load(w, l, pc, part, len)?,
                        };
                        if common {
                            loaded[k] = v;
                        }
                        let v = if ty.signed() { sext(v, ty.bits()) as u64 & mask(64) } else { v };
                        match dd {
                            Some(dd) if whole => w.put(*dd, m, v),
                            Some(dd) => w.set(*dd, l, v),
                            None => {}
                        }
                    }
                    if common {
                        before = Some((wh, loaded));
                    }
                    at.push((l, wh));
                }
                // (the whole warp at one place: lane 0's alone, for every lane)
                self.observe(w, pc, Request { at: &at, len: len * ds.len() as u32, one_place: whole }, Touch::Read, &[]);
                w.places = at;
            }
            Op::St { space, ty, srcs, addr } => {
                let len = ty.bytes();
                let mut at = std::mem::take(&mut w.places);
                at.clear();
                // what each lane stores, byte by byte (the race shadow tells a same-value write)
                let mut bytes: Vec<u8> = Vec::with_capacity(32 * len as usize * srcs.len());
                for l in lanes(m) {
                    let a = Self::addr_of(w, addr, l);
                    let wh = Self::resolve(*space, a);
                    for (k, s) in srcs.iter().enumerate() {
                        let v = w.get(*s, l) & mask(ty.bits());
                        self.store(w, l, pc, shift(wh, k as u64 * len as u64), len, v)?;
                        bytes.extend_from_slice(&v.to_le_bytes()[..len as usize]);
                    }
                    at.push((l, wh));
                }
                self.observe(w, pc, Request { at: &at, len: len * srcs.len() as u32, one_place: false }, Touch::Write, &bytes);
                w.places = at;
            }
            Op::Atom { space, op, ty, d, addr, b, c, fences } => {
                let len = ty.bytes();
                let mut at = std::mem::take(&mut w.places);
                at.clear();
                for l in lanes(m) {
                    let a = Self::addr_of(w, addr, l);
                    let wh = Self::resolve(*space, a);
                    let (bv, cv) = (w.get(*b, l), w.get(*c, l));
                    let f = |old: u64| scalar::atom(*op, *ty, old, bv, cv);
                    let old = match wh {
                        Where::Global(x) => {
                            self.arrived |= (self.k.workspace..self.k.workspace + WORKSPACE_BYTES).contains(&x);
                            let (old, seq) = self.k.mem.rmw(x, len, &f).map_err(|e| self.fault(w, l, pc, e))?;
                            self.shadow.ticket(x, seq, w.first + l as u32, pc, *fences);
                            old
                        }
                        _ => {
                            let old = self.load(w, l, pc, wh, len)?;
                            self.store(w, l, pc, wh, len, f(old))?;
                            old
                        }
                    };
                    if let Some(d) = d {
                        let old = if ty.signed() && *op != AtomOp::Cas { sext(old, ty.bits()) as u64 } else { old };
                        w.set(*d, l, old);
                    }
                    at.push((l, wh));
                }
                self.observe(w, pc, Request { at: &at, len, one_place: false }, Touch::Atomic, &[]);
                w.places = at;
            }
            Op::Bfe { ty, d, a, b, c } => {
                for l in lanes(m) {
                    let v = scalar::bfe(*ty, w.get(*a, l), w.get(*b, l), w.get(*c, l));
                    w.set(*d, l, v);
                }
            }
            Op::Bfi { ty, d, f, b, c, l: len } => {
                for l in lanes(m) {
                    let v = scalar::bfi(*ty, w.get(*f, l), w.get(*b, l), w.get(*c, l), w.get(*len, l));
                    w.set(*d, l, v);
                }
            }
            Op::Prmt { d, a, b, c } => {
                for l in lanes(m) {
                    let v = scalar::prmt(w.get(*a, l), w.get(*b, l), w.get(*c, l));
                    w.set(*d, l, v);
                }
            }
            Op::Shfl { mode, d, p, a, b, c } => {
                let src: Vec<u64> = (0..32).map(|l| w.get(*a, l)).collect();
                for l in lanes(m) {
                    let bval = (w.get(*b, l) & 0x1f) as i64;
                    let cv = w.get(*c, l);
                    let cval = (cv & 0x1f) as i64;
                    let seg = ((cv >> 8) & 0x1f) as i64;
                    let lane = l as i64;
                    let max_lane = (lane & seg) | (cval & !seg);
                    let min_lane = lane & seg;
                    let (j, ok) = match mode {
                        ShflMode::Up => (lane - bval, lane - bval >= max_lane),
                        ShflMode::Down => (lane + bval, lane + bval <= max_lane),
                        ShflMode::Bfly => (lane ^ bval, (lane ^ bval) <= max_lane),
                        ShflMode::Idx => (min_lane | (bval & !seg), (min_lane | (bval & !seg)) <= max_lane),
                    };
                    let j = if ok && (0..32).contains(&j) { j as usize } else { l };
                    w.set(*d, l, src[j]);
                    if let Some(p) = p {
                        w.set(*p, l, ok as u64);
                    }
                }
            }
            Op::Vote { mode, d, a } => {
                let mut ballot = 0u32;
                for l in lanes(m) {
                    if w.get(*a, l) & 1 != 0 {
                        ballot |= 1 << l;
                    }
                }
                let v = match mode {
                    VoteMode::Ballot => ballot as u64,
                    VoteMode::All => (ballot == m) as u64,
                    VoteMode::Any => (ballot != 0) as u64,
                    VoteMode::Uni => (ballot == 0 || ballot == m) as u64,
                };
                for l in lanes(m) {
                    w.set(*d, l, v);
                }
            }
            Op::Activemask { d } => {
                for l in lanes(m) {
                    w.set(*d, l, m as u64);
                }
            }
            Op::MatchAny { d, a, bits } => {
                let vals: Vec<u64> = (0..32).map(|l| w.get(*a, l) & mask(*bits)).collect();
                for l in lanes(m) {
                    let same = lanes(m).filter(|&j| vals[j] == vals[l]).fold(0u32, |acc, j| acc | 1 << j);
                    w.set(*d, l, same as u64);
                }
            }
            Op::Nop => {}
            Op::Fence => {
                for l in lanes(m) {
                    self.shadow.fence(w.first + l as u32);
                }
            }
            Op::WarpSync => self.shadow.warp_sync(w.first / 32),
            Op::Bar { .. } | Op::Bra { .. } | Op::Exit | Op::Ret | Op::Trap | Op::Unsupported(_) | Op::Call { .. } => {}
        }
        Ok(())
    }
}

fn shift(w: Where, by: u64) -> Where {
    match w {
        Where::CallParam(a) => Where::CallParam(a + by),
        Where::Global(a) => Where::Global(a + by),
        Where::Shared(a) => Where::Shared(a + by),
        Where::Local(a) => Where::Local(a + by),
        Where::Param(a) => Where::Param(a + by),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Registers read what was last written to each lane, whichever way:
    /// one value to the whole warp, one to some lanes, a lane's own; a
    /// register is uniform exactly while its lanes were last written by
    /// one value to the whole warp (or never), and has a row only once a
    /// write made its lanes differ.
    #[test]
    fn registers_read_what_each_lane_was_given() {
        let mut next = crate::xorshift(0x2545_f491_4f6c_dd1d);
        for n in [1usize, 3, 40] {
            let mut regs = Regs::new(n);
            let mut model = vec![[0u64; 32]; n];
            let mut uniform = vec![true; n];
            for _ in 0..4000 {
                let r = next(n as u64) as u32;
                let v = next(5);
                match next(3) {
                    0 => {
                        regs.fill(r, v);
                        model[r as usize] = [v; 32];
                        uniform[r as usize] = true;
                    }
                    1 => {
                        let l = next(32) as usize;
                        let row = regs.row(r);
                        regs.lanes[row + l] = v;
                        model[r as usize][l] = v;
                        uniform[r as usize] = false;
                    }
                    _ => {
                        let row = regs.row(r);
                        regs.lanes[row..row + 32].fill(v);
                        model[r as usize] = [v; 32];
                        uniform[r as usize] = false;
                    }
                }
                for (k, lanes) in model.iter().enumerate() {
                    assert_eq!(regs.regs[k].uniform, uniform[k], "register {k}");
                    assert!(regs.regs[k].uniform || regs.regs[k].row != NO_ROW);
                    for (l, &x) in lanes.iter().enumerate() {
                        assert_eq!(regs.get(k as u32, l), x, "register {k} lane {l}");
                    }
                }
            }
            assert!(regs.lanes.len() <= n * 32, "{} rows for {n} registers", regs.lanes.len() / 32);
        }
    }

    /// A run whose blocks stop (each but the first reads past its buffer)
    /// reports the first stop in block order (block 1's), as a run of the
    /// blocks in order would, though the later blocks stop sooner on the
    /// other threads while the first runs a long loop (a first stop used
    /// to keep the blocks not yet started from starting: block 1 among them).
    #[test]
    fn a_parallel_run_reports_the_first_blocks_stop() {
        let src = r#"
.version 7.0
.target sm_80
.address_size 64
.visible .entry k(.param .u64 p) {
    .reg .pred %p<2>; .reg .b32 %r<6>; .reg .b64 %rd<5>;
    mov.u32 %r1, %ctaid.x;
    setp.ne.u32 %p1, %r1, 0;
    @%p1 bra $READ;
    mov.u32 %r4, 0;
$L:
    add.u32 %r4, %r4, 1;
    setp.lt.u32 %p1, %r4, 200000;
    @%p1 bra $L;
    ret;
$READ:
    ld.param.u64 %rd1, [p];
    mul.wide.u32 %rd2, %r1, 1048576;
    add.s64 %rd3, %rd1, %rd2;
    ld.global.u32 %r5, [%rd3+1073741824];
    st.global.u32 [%rd1], %r5;
    ret;
}
"#;
        let m = crate::ptx::parse(src).unwrap();
        let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
        for _ in 0..3 {
            let mut mem = Global::default();
            let out = mem.alloc(&[0u8; 16]);
            let launch = Launch { grid: [8, 1, 1], block: [32, 1, 1], dynamic_shared: 0 };
            let r = pool.install(|| crate::interp::run(&m, "k", &launch, &[crate::interp::Arg::Bits(out)], &mut mem));
            assert!(matches!(r, Err(InterpError::Fault { block: [1, 0, 0], .. })), "{r:?}");
        }
    }
}
