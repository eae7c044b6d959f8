//! Replay before report: each correctness finding's witness (the two
//! racing accesses and their blocks, or the barrier part of a block skips,
//! with the parameter values the finding names) is run on the interpreter
//! before the finding is reported at its default level. A run that
//! observes it (or a race at one of its two accesses with another: the
//! run names one partner per byte) makes the finding `Reproduced`; one
//! that executes its accesses and does not, `NotReproduced` (the binary
//! then reports it only as a pedantic finding, saying so); a witness that
//! rests on values a run cannot be given (data loaded from memory, a loop
//! counter's guessed value), a run that does not reach its accesses, or
//! one that cannot be made or finished leaves the finding as it is,
//! `Unable`, saying why.
//!
//! The launch: the block shape the analysis used; the grid the user gave,
//! else the sampled `gridDim` the finding rests on, else just the witness
//! blocks; only the witness blocks run. Scalar parameters take the values
//! the finding names, else the declared ones, else the analysis's sample
//! ([`crate::memory::SCALAR_SAMPLE`]); pointer parameters point into the
//! middle of zero-filled buffers (larger ones when the first run leaves
//! them). Findings of one kernel with the same launch share one run; a run
//! of one block stops at the barrier by which it has seen every one of them
//! ([`interp::Run::until`]), and a run shadows only the memory its race
//! findings are in: none for barrier findings alone ([`interp::Run::races`]).
//!
//! Owns: turning a witness into a launch, and judging what the run saw.
//! Does not own: the witnesses (`crate::lints`, from `crate::facts`),
//! running PTX (`crate::interp`), or levels (the binary).

use crate::facts::Assumed;
use crate::interp::{self, Arg, Global, InterpError, Launch, Observed, SiteKey};
use crate::ir::{self, inst::Opcode, inst::Space, FunctionIr};
use crate::lints::{Finding, Level, Replay, Witness};
use crate::ptx::Module;
use rustc_hash::FxHashMap;
use std::cell::Cell;
use std::collections::BTreeMap;
use std::sync::Arc;

/// The warp instructions the replays of one module may execute together:
/// this many, plus [`BUDGET_PER_INSTRUCTION`] per instruction of the module
/// (a run that needs more stops, and its findings say so). One run takes
/// at most a quarter of it (or [`BUDGET_BASE`]), so that one long loop
/// leaves the others some. Kernels are replayed one after the other, in
/// module order, so that which runs get a share does not depend on timing.
pub const BUDGET_BASE: u64 = 1 << 13;
pub const BUDGET_PER_INSTRUCTION: u64 = 4;

/// Launches replayed per kernel at most (findings that need another are
/// left as they are, saying so).
pub const MAX_RUNS_PER_KERNEL: usize = 8;

/// A grid of at most this many blocks runs whole (a last-block election
/// needs every block's ticket); a larger one runs the witness blocks only.
pub const WHOLE_GRID: u64 = 64;

/// Bytes on each side of where a pointer parameter points: the first
/// run's, then the retry's after an access outside them.
const BUFFER_SIDES: [u64; 2] = [1 << 18, 1 << 24];

/// Bytes of dynamic shared memory (`extern __shared__` arrays) a replay
/// gives when the launch's are not declared: the most a block gets
/// without opting in.
const DYNAMIC_SHARED: u32 = 48 * 1024;

/// A run is not started with less than this per block.
const MIN_SHARE: u64 = 1 << 10;

/// The warp instructions the module's replays may still execute.
struct Budget {
    total: u64,
    left: Cell<u64>,
}

/// What the replay of one kernel's findings needs from the driver.
pub struct Kernel {
    /// Its index in `Module::functions`.
    pub index: usize,
    /// The block shape the analysis used.
    pub block: [u32; 3],
    /// The grid the user gave, if any.
    pub grid: Option<[u32; 3]>,
    /// Per PTX parameter: the declared value, if any.
    pub declared: Vec<Option<i64>>,
    /// Per PTX parameter: the source's name (empty, or none: not known).
    pub names: Vec<String>,
    /// The dynamic shared bytes its launch gives, if declared.
    pub dynamic_shared: Option<u32>,
}

/// One launch: the grid, and the values given to parameters (index,
/// byte offset of the field, value).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Plan {
    grid: [u32; 3],
    values: Vec<(u32, u32, i64)>,
}

/// Replay the witnesses of `findings` (those of `kernels`' correctness
/// lints that are reported by default), setting each one's `replay`.
/// `instructions`: the module's, for its budget.
pub fn replay<'a>(module: &'a Module<'a>, mcx: &ir::ModuleCx<'a>, kernels: &[Kernel], findings: &mut [Finding], instructions: usize) {
    let total = BUDGET_BASE + BUDGET_PER_INSTRUCTION * instructions as u64;
    let budget = Budget { total, left: Cell::new(total) };
    let by_name: BTreeMap<String, usize> =
        kernels.iter().enumerate().map(|(k, x)| (crate::names::demangle(module.functions[x.index].name), k)).collect();
    // each kernel's findings to replay
    let mut todo: Vec<Vec<usize>> = vec![Vec::new(); kernels.len()];
    for (i, fd) in findings.iter().enumerate() {
        let replayed = fd.lint.group == crate::lints::Group::Correctness && fd.lint.default != Level::Allow && fd.witness.is_some();
        if let (true, Some(&k)) = (replayed, by_name.get(&*fd.kernel)) {
            todo[k].push(i);
        }
    }
    let results: Vec<Vec<(usize, Replay)>> = kernels
        .iter()
        .zip(todo.iter())
        .filter(|(_, t)| !t.is_empty())
        .map(|(k, t)| replay_kernel(module, mcx, k, t.iter().map(|&i| (i, &findings[i])).collect(), &budget))
        .collect();
    // (the findings of one run share its texts: each note is made once per text, and shared; the
    // map holds the text, so that its address names it while the map lives)
    let mut notes: FxHashMap<(u8, *const u8), NoteOf> = FxHashMap::default();
    for (i, r) in results.into_iter().flatten() {
        let fd = &mut findings[i];
        // (a text's note differs by outcome: a run's launch says one thing shown, another partnered)
        let (kind, text) = match &r {
            Replay::Reproduced { launch, partner } => (u8::from(*partner), launch),
            Replay::NotReproduced(how) => (2, how),
            Replay::Unable(why) => (3, why),
            Replay::NotRun => continue,
        };
        let (_, note) = notes.entry((kind, text.as_ptr())).or_insert_with(|| (text.clone(), note_of(&r).into()));
        fd.note(note.clone());
        fd.replay = r;
    }
}

/// A run's text (kept, so that its address names it), and the note made of it.
type NoteOf = (Arc<str>, Arc<str>);

/// The note a replay's outcome adds to its finding.
fn note_of(r: &Replay) -> String {
    match r {
        Replay::Reproduced { launch, partner: false } => format!("reproduced: a run of {launch} shows it"),
        Replay::Reproduced { launch, partner: true } => format!(
            "reproduced: a run of {launch} shows a race at one of its two accesses, with another access (the run names one partner per byte)"
        ),
        Replay::NotReproduced(how) => format!(
            "not reproduced: a run of {how} does not show it, so the witness rests on an approximation of the check (a pedantic finding)"
        ),
        Replay::Unable(why) => format!("not replayed: {why}"),
        Replay::NotRun => String::new(),
    }
}

/// Replay one kernel's findings: group them by launch, run each launch once.
fn replay_kernel<'a>(
    module: &'a Module<'a>,
    mcx: &ir::ModuleCx<'a>,
    k: &Kernel,
    findings: Vec<(usize, &Finding)>,
    budget: &Budget,
) -> Vec<(usize, Replay)> {
    let mut out = Vec::new();
    let mut plans: BTreeMap<Plan, Vec<(usize, &Witness)>> = BTreeMap::new();
    for (i, fd) in findings {
        match plan(k, fd) {
            Ok(p) => plans.entry(p).or_default().push((i, fd.witness.as_deref().expect("replayed findings have a witness"))),
            Err(why) => out.push((i, Replay::Unable(why.into()))),
        }
    }
    if plans.is_empty() {
        return out;
    }
    // (lowered once for every launch of the kernel)
    let mut lowered = interp::Lowered::new(module, mcx, k.index);
    lowered.kernel_mut().source_params = k.names.clone();
    let f = lowered.kernel();
    // (a kernel whose run ran out of budget would with other values too)
    let mut cut_short: Option<Arc<str>> = None;
    for (n, (plan, ws)) in plans.into_iter().enumerate() {
        let skip = match &cut_short {
            Some(how) => {
                Some(format!("a run of {how} used its share of the module's replay budget, so its kernel's other launches were not run"))
            }
            None if n >= MAX_RUNS_PER_KERNEL => {
                Some(format!("its kernel's findings need more than {MAX_RUNS_PER_KERNEL} different launches; the others were replayed"))
            }
            None => None,
        };
        if let Some(why) = skip {
            let why: Arc<str> = why.into();
            out.extend(ws.iter().map(|(i, _)| (*i, Replay::Unable(why.clone()))));
            continue;
        }
        let blocks = blocks_of(&plan, &ws);
        let how: Arc<str> = describe(f, k, &plan, &blocks).into();
        // this run's share of what is left: every block may use it
        let share = budget.left.get().min((budget.total / 4).max(BUDGET_BASE)) / blocks.len().max(1) as u64;
        if share < MIN_SHARE {
            let why: Arc<str> =
                format!("the replays of this module used their budget ({} warp instructions) before this one", budget.total).into();
            out.extend(ws.iter().map(|(i, _)| (*i, Replay::Unable(why.clone()))));
            continue;
        }
        // (on the calling thread: a replay runs a block or two, a short way, and waking the pool's
        // threads for it costs more than it saves)
        let result = crate::par::alone(|| run(module, &lowered, k, &plan, &blocks, &ws, share));
        let used = match &result {
            Ok(obs) => obs.warp_insts,
            // a fault stops the run where it is: what ran until then
            Err(InterpError::Fault { warp_insts, .. }) => (*warp_insts).min(share * blocks.len() as u64),
            Err(_) => share * blocks.len() as u64,
        };
        budget.left.set(budget.left.get().saturating_sub(used));
        if let Ok(obs) = &result {
            if obs.timed_out {
                cut_short = Some(how.clone());
            }
        }
        // (the texts the run's findings share, made once)
        let texts = RunTexts::default();
        match result {
            Ok(obs) => out.extend(ws.iter().map(|(i, w)| {
                let r = match observed(&obs, w, k.index) {
                    Shown::It => Replay::Reproduced { launch: how.clone(), partner: false },
                    Shown::Partner => Replay::Reproduced { launch: how.clone(), partner: true },
                    // a run cut short proves nothing by what it did not see (or reach)
                    Shown::No | Shown::NotReached if obs.timed_out => Replay::Unable(texts.get(0, || format!(
                        "a run of {how} did not show it before it used its share of the module's replay budget ({share} warp instructions per block)"
                    ))),
                    Shown::No => Replay::NotReproduced(how.clone()),
                    Shown::NotReached => Replay::Unable(texts.get(1, || format!(
                        "a run of {how} did not execute its accesses: the way there rests on data or values the run was not given"
                    ))),
                };
                (*i, r)
            })),
            Err(InterpError::Deadlock { line }) => out.extend(ws.iter().map(|(i, w)| match w {
                // warps that wait at a barrier the rest never reaches: that is the divergence
                Witness::Barrier { .. } => {
                    (*i, Replay::Reproduced { launch: texts.get(0, || format!("{how}, which hangs at the barrier on PTX line {line},")), partner: false })
                }
                Witness::Race { .. } | Witness::Bounds { .. } | Witness::Uninit { .. } => (*i, Replay::Unable(texts.get(1, || format!("a run of {how} stops: PTX line {line}: warps wait at a barrier the rest of the block never reaches")))),
            })),
            // a shared access past every array of the block (a local one past the thread's local
            // memory) stops the run where the witness is
            Err(InterpError::Fault { site, space: space @ ("shared" | "local"), .. })
                if ws.iter().any(|(_, w)| matches!(w, Witness::Bounds { .. })) =>
            {
                let whose = if space == "shared" { "the block's" } else { "the thread's" };
                out.extend(ws.iter().map(|(i, w)| match w {
                    Witness::Bounds { site: s } if SiteKey { func: s.0, inst: s.1 } == site => {
                        (*i, Replay::Reproduced { launch: texts.get(0, || format!("{how}, which stops at the access,")), partner: false })
                    }
                    _ => (*i, Replay::Unable(texts.get(1, || format!("a run of {how} stops at a {space} access outside {whose} {space} memory")))),
                }))
            }
            // (a cooperative launch runs its blocks in phases, and stops when one runs out)
            Err(InterpError::Timeout { warp_insts, .. }) => {
                let why: Arc<str> = format!("a run of {how} did not finish within its share of the module's replay budget ({warp_insts} warp instructions per block)").into();
                out.extend(ws.iter().map(|(i, _)| (*i, Replay::Unable(why.clone()))));
            }
            Err(e) => {
                let why: Arc<str> = format!("a run of {how} stops: {e}").into();
                out.extend(ws.iter().map(|(i, _)| (*i, Replay::Unable(why.clone()))));
            }
        }
    }
    out
}

/// The texts the findings of one run share, each made the first time
/// one of them needs it (by its number in the run's arm).
#[derive(Default)]
struct RunTexts([std::cell::OnceCell<Arc<str>>; 2]);

impl RunTexts {
    fn get(&self, k: usize, make: impl FnOnce() -> String) -> Arc<str> {
        self.0[k].get_or_init(|| make().into()).clone()
    }
}

/// The launch finding `fd`'s witness needs, or why none can be made.
fn plan(k: &Kernel, fd: &Finding) -> Result<Plan, String> {
    let mut values: Vec<(u32, u32, i64)> = Vec::new();
    let grid = k.grid;
    let mut sampled_grid = [0u32; 3];
    for a in fd.assumes.iter().filter(|a| !a.alignment) {
        let line = a.ptx_line.map(|l| format!(" (PTX line {l})")).unwrap_or_default();
        match (a.kind, &a.param) {
            (Assumed::Parameter | Assumed::Condition, Some((p, off))) => values.push((*p, *off, a.sample)),
            (Assumed::Parameter | Assumed::Condition, None) => {
                return Err(format!("it rests on `{}`, which is not a parameter of the kernel a run can be given", a.name))
            }
            (Assumed::Grid, _) => {
                let d = ["gridDim.x", "gridDim.y", "gridDim.z"].iter().position(|n| *n == a.name).unwrap_or(0);
                sampled_grid[d] = a.sample.clamp(1, 65535) as u32;
            }
            // equal keys: zero-filled buffers give every thread the same one
            (Assumed::SameKey, _) => {}
            (Assumed::Loaded, _) => {
                return Err(format!("it rests on `{}`{line}, a value loaded from memory, which a run is not given", a.name))
            }
            (Assumed::Counter, _) => {
                return Err(format!("it rests on a guessed value of the loop counter `{}`{line}, which a run does not choose", a.name))
            }
            (Assumed::Value, _) => return Err(format!("it rests on a sampled value of `{}`{line}, which a run does not choose", a.name)),
            (Assumed::Stride, _) => return Err(format!("it rests on `{}` taken as large, which a run does not choose", a.name)),
        }
    }
    values.sort();
    values.dedup();
    let blocks = fd.witness.as_deref().map(witness_blocks).unwrap_or_default();
    // the grid given, else the sampled one, else just enough blocks for the witness
    let grid = grid.unwrap_or_else(|| {
        let mut g = [1u32; 3];
        for d in 0..3 {
            g[d] = blocks.iter().map(|b| b[d] + 1).chain([g[d], sampled_grid[d]]).max().unwrap_or(1);
        }
        g
    });
    if let Some(b) = blocks.iter().find(|b| (0..3).any(|d| b[d] >= grid[d])) {
        return Err(format!("its witness block ({}, {}, {}) is outside the grid {}×{}×{}", b[0], b[1], b[2], grid[0], grid[1], grid[2]));
    }
    Ok(Plan { grid, values })
}

/// The blocks witness `w` names.
fn witness_blocks(w: &Witness) -> Vec<[u32; 3]> {
    match w {
        Witness::Race { other, .. } => [[0; 3]].into_iter().chain(*other).collect(),
        Witness::Barrier { block, .. } => vec![*block],
        Witness::Bounds { .. } | Witness::Uninit { .. } => vec![[0; 3]],
    }
}

/// The linear indices of the blocks the witnesses of one launch need:
/// every block of a small grid, else the witnesses'.
fn blocks_of(plan: &Plan, ws: &[(usize, &Witness)]) -> Vec<u64> {
    let [gx, gy, gz] = plan.grid;
    let all = gx as u64 * gy as u64 * gz as u64;
    if all <= WHOLE_GRID {
        return (0..all).collect();
    }
    let linear = |b: &[u32; 3]| b[0] as u64 + gx as u64 * (b[1] as u64 + gy as u64 * b[2] as u64);
    let mut out: Vec<u64> = ws.iter().flat_map(|(_, w)| witness_blocks(w).iter().map(linear).collect::<Vec<_>>()).collect();
    out.sort_unstable();
    out.dedup();
    out
}

/// The launch in words: "block 0 (grid 1×1×1, block 256×1×1, `n` = 129)".
fn describe(f: &FunctionIr<'_>, k: &Kernel, plan: &Plan, blocks: &[u64]) -> String {
    let [gx, gy, gz] = plan.grid;
    let [bx, by, bz] = k.block;
    let all = gx as u64 * gy as u64 * gz as u64;
    let which = match blocks {
        _ if blocks.len() as u64 == all && all > 1 => "every block".to_string(),
        [b] => format!("block {b}"),
        _ => format!("blocks {}", blocks.iter().map(|b| b.to_string()).collect::<Vec<_>>().join(" and ")),
    };
    let mut values: Vec<String> = plan
        .values
        .iter()
        .map(|&(p, off, v)| {
            // parameters as messages name them
            let name = f.func.params.get(p as usize).map_or_else(|| format!("parameter {p}"), |x| f.param_label(x.name));
            if off == 0 {
                format!("`{name}` = {v}")
            } else {
                format!("`{name}+{off}` = {v}")
            }
        })
        .collect();
    values.dedup();
    let with = if values.is_empty() { String::new() } else { format!(", {}", values.join(", ")) };
    format!("{which} (grid {gx}×{gy}×{gz}, block {bx}×{by}×{bz}{with})")
}

/// Run the launch: arguments made, buffers retried larger once when a
/// global access falls outside them.
fn run(
    module: &Module<'_>,
    lowered: &interp::Lowered<'_>,
    k: &Kernel,
    plan: &Plan,
    blocks: &[u64],
    ws: &[(usize, &Witness)],
    budget: u64,
) -> Result<Observed, InterpError> {
    let f = lowered.kernel();
    let fields = param_fields(f);
    // (the memory its races are in is shadowed, every byte its threads touch there: none for
    // barriers alone)
    let races = ws.iter().fold(interp::RaceMemory::NONE, |m, (_, w)| match w {
        Witness::Race { memory: Some(Space::Shared), .. } => interp::RaceMemory { shared: true, ..m },
        Witness::Race { memory: Some(Space::Global), .. } => interp::RaceMemory { global: true, ..m },
        Witness::Race { .. } => interp::RaceMemory::ALL,
        _ => m,
    });
    let launch = Launch { grid: plan.grid, block: k.block, dynamic_shared: k.dynamic_shared.unwrap_or(DYNAMIC_SHARED) };
    let how = interp::Run { blocks: Some(blocks.to_vec()), budget, partial: true, until: sought(ws), races, ..interp::Run::default() };
    let mut last = None;
    for side in BUFFER_SIDES {
        let mut mem = Global::default();
        let args = arguments(f, k, plan, &fields, &mut mem, side);
        match interp::run_lowered(module, lowered, &launch, &args, &mut mem, &how) {
            // a fault in the arguments' buffers: retried with larger ones (a fault in shared
            // or local memory would fault again, whatever their size)
            Err(e @ InterpError::Fault { space: "global", .. }) => last = Some(e),
            r => return r,
        }
    }
    Err(last.expect("a run was made"))
}

/// What a run of the witnesses `ws` looks for, each as [`observed`] judges
/// it shown: the run stops once it has seen them all. A race between
/// blocks is seen only once both blocks have run: with one, nothing is
/// looked for, and the run goes to its end.
fn sought(ws: &[(usize, &Witness)]) -> Vec<interp::Sighting> {
    let key = |s: &(usize, usize)| SiteKey { func: s.0, inst: s.1 };
    ws.iter()
        .map(|(_, w)| match w {
            Witness::Race { sites: [a, b], other: None, .. } => Some(interp::Sighting::Race(key(a), key(b))),
            Witness::Race { other: Some(_), .. } => None,
            Witness::Barrier { site, call, .. } => Some(interp::Sighting::PartialBarrier(key(site), *call)),
            Witness::Bounds { site } => Some(interp::Sighting::OutOfBounds(key(site))),
            Witness::Uninit { site } => Some(interp::Sighting::Uninitialized(key(site))),
        })
        .collect::<Option<Vec<_>>>()
        .unwrap_or_default()
}

/// A field of a parameter the kernel reads (the whole parameter at offset
/// 0 for a scalar): its parameter's index, byte offset and width, and
/// whether it is a pointer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Field {
    param: usize,
    offset: usize,
    width: usize,
    pointer: bool,
}

/// The PTX parameters' bytes: each field the kernel reads set to the value
/// the plan gives, else the declared one, else the analysis's sample; a
/// pointer field to the middle of a zero-filled buffer of `2 × side` bytes.
fn arguments(f: &FunctionIr<'_>, k: &Kernel, plan: &Plan, fields: &[Field], mem: &mut Global, side: u64) -> Vec<Arg> {
    f.func
        .params
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let size = (crate::ir::inst::decl_bytes(p.ty) * p.array.unwrap_or(1)) as usize;
            let len = size.max(8);
            let mut bytes = vec![0u8; len];
            for x in fields.iter().filter(|x| x.param == i && x.offset + x.width <= len) {
                let given = plan.values.iter().find(|(n, off, _)| *n as usize == i && *off as usize == x.offset).map(|v| v.2);
                let declared = if x.offset == 0 { k.declared.get(i).copied().flatten() } else { None };
                let value = match given.or(declared) {
                    Some(v) => v as u64,
                    None if x.pointer => mem.alloc_zeroed(2 * side) + side,
                    None => crate::memory::SCALAR_SAMPLE as u64,
                };
                bytes[x.offset..x.offset + x.width].copy_from_slice(&value.to_le_bytes()[..x.width.min(8)]);
            }
            match p.array {
                Some(_) => Arg::Bytes(bytes[..size].to_vec()),
                None => Arg::Bits(u64::from_le_bytes(bytes[..8].try_into().expect("8 bytes"))),
            }
        })
        .collect()
}

/// The parameter fields the kernel reads, each once. A field is a pointer
/// when an access's address is computed from it, `cvta` converts it, or
/// (64 bits wide) it is passed to a call (stored to a call's parameter).
fn param_fields(f: &FunctionIr<'_>) -> Vec<Field> {
    let mut out: Vec<Field> = Vec::new();
    let mut at: BTreeMap<ir::ValueId, usize> = BTreeMap::new();
    for (i, inst) in f.insts.iter_enumerated() {
        let Some((p, off)) = inst.param_read() else { continue };
        let (Some(param), Ok(offset)) = (f.func.params.iter().position(|x| x.name == p), usize::try_from(off)) else { continue };
        let width = (inst.access_width() as usize).min(8);
        let k = match out.iter().position(|x| x.param == param && x.offset == offset) {
            Some(k) => k,
            None => {
                out.push(Field { param, offset, width, pointer: false });
                out.len() - 1
            }
        };
        out[k].width = out[k].width.max(width);
        for &v in f.ssa.defs(i) {
            at.insert(v, k);
        }
    }
    let field = |v: ir::ValueId| at.get(&v).copied();
    for (i, k) in crate::memory::accesses_of(f) {
        if let Some(x) = f.operand_value(i, k).and_then(|v| field(ir::values::root(f, v))) {
            out[x].pointer = true;
        }
    }
    for (i, inst) in f.insts.iter_enumerated() {
        let cvta = inst.opcode == Opcode::Cvta;
        let passed = inst.opcode == Opcode::Call || (inst.opcode == Opcode::St && inst.space == Some(crate::ir::inst::Space::Param));
        if !cvta && !passed {
            continue;
        }
        for &v in f.ssa.uses(i) {
            if let Some(x) = field(ir::values::through_copies(f, v)) {
                out[x].pointer |= cvta || out[x].width == 8;
            }
        }
    }
    out
}

/// What a run showed of a witness.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Shown {
    /// The race between its two accesses, or the barrier reached by part
    /// of the block.
    It,
    /// A race at one of its two accesses with another access (the shadow
    /// memory keeps one writer and two readers per byte: it names one
    /// partner per access).
    Partner,
    /// Nothing, though the run executed its accesses (or its barrier).
    No,
    /// The run did not execute one of its accesses (or its barrier): the
    /// way there rests on something the run was not given.
    NotReached,
}

/// What the run showed of witness `w`.
fn observed(obs: &Observed, w: &Witness, kernel: usize) -> Shown {
    match w {
        Witness::Race { sites: [a, b], other, .. } => {
            let key = |s: &(usize, usize)| SiteKey { func: s.0, inst: s.1 };
            let (a, b) = (key(a), key(b));
            // races of the witness's kind (within a block or between blocks); a pair a ticket orders is none
            let races = || obs.races.iter().filter(|r| r.unfenced.is_none() && r.blocks.is_some() == other.is_some());
            let ran = |k: &SiteKey| obs.sites.get(k).is_some_and(|s| s.requests() > 0);
            if races().any(|r| (r.first == a && r.second == b) || (r.first == b && r.second == a)) {
                Shown::It
            } else if races().any(|r| [r.first, r.second].iter().any(|x| *x == a || *x == b)) {
                Shown::Partner
            } else if ran(&a) && ran(&b) {
                Shown::No
            } else {
                Shown::NotReached
            }
        }
        Witness::Bounds { site } | Witness::Uninit { site } => {
            let key = SiteKey { func: site.0, inst: site.1 };
            let seen = match w {
                Witness::Bounds { .. } => &obs.out_of_bounds,
                _ => &obs.uninitialized,
            };
            if seen.contains_key(&key) {
                Shown::It
            } else if obs.sites.get(&key).is_some_and(|s| s.requests() > 0) {
                Shown::No
            } else {
                Shown::NotReached
            }
        }
        Witness::Barrier { site, call, .. } => {
            let key = SiteKey { func: site.0, inst: site.1 };
            let partial =
                |k: &SiteKey| obs.barriers.get(k).is_some_and(|b| b.partial > 0) || obs.divergent_barriers.get(k).is_some_and(|&n| n > 0);
            // a barrier in a called function is seen where it is
            let seen = partial(&key)
                || (*call && obs.barriers.keys().chain(obs.divergent_barriers.keys()).any(|k| k.func != kernel && partial(k)));
            if seen {
                Shown::It
            } else {
                Shown::No
            }
        }
    }
}
