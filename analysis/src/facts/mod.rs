//! The per-kernel facts layer between the analyses and the lints: for one
//! function and its block shape, every divergent branch with the blocks
//! it controls and how many warps it splits, every global and shared
//! access with its predicted cost (for the threads its guards let through,
//! and with every thread active), the races between accesses (kernels and
//! device functions in a call context; benign ones and those meeting one
//! iteration apart marked; a kernel's own paired with its direct callees'
//! accesses, `Imports`, placed at the calls), the races between blocks
//! (kernels: the grid dimensions, each block's reached code and threads),
//! the barriers, the calls it makes with what they pass (the contexts its
//! callees are analysed in, `crate::driver`) and, in a call context, the
//! accesses it exports to its caller's race check, and the coverage of its
//! memory instructions (each in one category, with the reason when not
//! analysed).
//! Computed once, eagerly; lint passes only read them.
//!
//! Active lanes: the threads of the block that execute a block of the CFG,
//! as far as thread-only branch conditions tell (evaluated for every
//! thread, loop counters at the iteration asked for; loop exits and
//! conditions that cannot be evaluated do not restrict; a branch restricts
//! only the threads that execute it, not those reaching the block by a path
//! around it), starting from the calling threads in a call context.
//!
//! Owns: assembling the facts and the active-lane computation. Does not
//! own: the analyses (`divergence`, `memory`, `races`) or what is worth a
//! warning (`lints`).

use crate::divergence::split::{classify, Split};
use crate::divergence::{controlled_blocks, AbsVal, ArgValue, CallArgs, DivBranch, Divergence, Summaries};
use crate::ir::dataflow::BitSet;
use crate::ir::inst::{AccessKind, Space, Special};
use crate::ir::{BlockId, FunctionIr, IdVec, InstId, ValueId};
use crate::memory::footprint::Group;
use crate::memory::{Access, Evals, Prediction, Query};
use crate::model::Shape;
use crate::races::Race;
use std::collections::HashMap;
use std::rc::Rc;

/// A divergent branch (or guarded return) of the function.
#[derive(Clone, Debug)]
pub struct BranchFact {
    pub br: DivBranch,
    /// Blocks whose execution the branch decides (reachable from its
    /// successors without passing its immediate post-dominator).
    pub controlled: BitSet,
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

/// How the memory instructions of a function were analysed: every
/// `ld`/`ldu`/`st`/`atom`/`red` (vector forms included) in exactly one
/// category.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Coverage {
    pub total: usize,
    /// Global or shared, cost predicted.
    pub predicted: usize,
    /// Global or shared, the address depends on loaded data (no prediction possible).
    pub data_dependent: usize,
    /// Local, constant and parameter memory: per-thread or broadcast, no
    /// coalescing or bank question.
    pub other_space: usize,
    /// Not analysed, and why.
    pub skipped: Vec<(InstId, Skip)>,
    /// Of the predicted and data-dependent ones, those whose address
    /// space is not known: analysed as global.
    pub assumed_global: Vec<InstId>,
}

/// Why a memory instruction was not analysed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Skip {
    /// In a device function, its address is computed from the function's
    /// arguments (analysed once for all callers, without their context).
    FromArguments,
    /// Likewise, in a device function no kernel of the module calls.
    NoCaller,
    /// No thread of the block shape executes it (unreachable code, or
    /// guards that exclude every thread of the assumed block).
    Unreached,
    /// Its address could not be evaluated per thread.
    NotEvaluable,
}

impl Skip {
    /// The reason, as printed.
    pub fn reason(self) -> &'static str {
        match self {
            Skip::FromArguments => "address computed from a device function's arguments that no call context gives (recursion, beyond the call depth, a struct argument)",
            Skip::NoCaller => "in a device function no kernel of the module calls",
            Skip::Unreached => "no thread of the block shape executes it",
            Skip::NotEvaluable => "address could not be evaluated per thread",
        }
    }

    /// A short key for JSON.
    pub fn key(self) -> &'static str {
        match self {
            Skip::FromArguments => "from_arguments",
            Skip::NoCaller => "no_caller",
            Skip::Unreached => "unreached",
            Skip::NotEvaluable => "not_evaluable",
        }
    }
}

/// An access of a device function, in one call context, for its caller's
/// race check ([`crate::races::Imported`]): through parameter `param`, at
/// each calling thread's offset from that parameter's value. Exported only
/// where the function executes no barrier and calls nothing, and the
/// address depends on no scalar parameter the call passes a uniform
/// variable for (the callee's own symbol: its sampled value is not the
/// caller's).
#[derive(Clone, Debug)]
pub struct Export {
    pub access: Access,
    pub param: usize,
    pub offsets: crate::races::Offsets,
}

/// A callee's access as its caller sees it: the export, and where it is.
#[derive(Clone, Debug)]
pub struct CalleeAccess {
    /// The callee (index in the module) and its name as written.
    pub function: usize,
    pub callee: String,
    pub ptx_line: u32,
    pub ptx_col: u32,
    pub span: Option<crate::srcmap::SrcPos>,
    pub export: Export,
}

/// The accesses of the device functions a function calls, by call
/// instruction (from the callees' call contexts).
pub type Imports = HashMap<InstId, Vec<CalleeAccess>>;

/// A direct call of a device function defined in the module, with what
/// it passes: the context the callee is analysed in for this call.
#[derive(Clone, Debug)]
pub struct CallFact<'a> {
    pub inst: InstId,
    pub callee: &'a str,
    pub args: CallArgs,
}

/// The calls `f` makes (reachable ones): each argument's abstract value
/// and, when it is thread-dependent, its value in every thread (block 0,
/// first iteration; parameters the caller cannot evaluate stay unknown),
/// and the threads that reach the call.
fn call_facts<'a>(
    f: &FunctionIr<'a>,
    d: &Divergence,
    sums: &Summaries<'a>,
    evals: &Evals<'_, 'a>,
    lanes: &mut Lanes<'_, 'a, '_>,
) -> Vec<CallFact<'a>> {
    let mut out = Vec::new();
    for (i, inst) in f.insts.iter_enumerated() {
        let Some(callee) = inst.call_target().filter(|t| sums.defined.contains(t)) else { continue };
        let b = f.cfg.block_of(i);
        if !f.cfg.reachable(b) {
            continue;
        }
        let konst = |k: i64| Some(ArgValue { abs: AbsVal::konst(k), lanes: None, space: crate::ir::space::Fact::UNKNOWN });
        let params = inst
            .call_args()
            .iter()
            .map(|a| match a {
                crate::ptx::Operand::Sym(name) => {
                    let store = f.call_argument_store(i, name)?;
                    match f.insts[store].operand(1) {
                        // a constant stored for the call
                        Some(crate::ptx::Operand::Imm(k)) => konst(*k),
                        _ => {
                            let v = argument_value(f, i, name)?;
                            let abs = d.at(f, v, b);
                            let q = Query { first_thread_only: false, ctaid: [0; 3], scalar: None, iteration: 0, pin: None };
                            let lanes = if abs.is_uniform() || abs.data() { None } else { evals.eval(v, q) };
                            Some(ArgValue {
                                abs: abs.without_symbols(),
                                lanes: lanes.map(|x| std::sync::Arc::new(x.as_ref().clone())),
                                space: f.spaces.fact(v),
                            })
                        }
                    }
                }
                crate::ptx::Operand::Imm(k) => konst(*k),
                _ => None,
            })
            .collect();
        out.push(CallFact { inst: i, callee, args: CallArgs { params, active: lanes.active(b, 0).as_ref().clone() } });
    }
    out
}

/// The value call `i` passes for its argument `name` (stored into the
/// `.param` variable just before the call), if a register.
fn argument_value(f: &FunctionIr<'_>, i: InstId, name: &str) -> Option<ValueId> {
    f.operand_value(f.call_argument_store(i, name)?, 1)
}

/// What a device function analysed in a call context gives its caller's
/// race check: its global and shared accesses through a pointer
/// parameter, at each calling thread's offset from the pointer (see
/// [`Export`] for when there are none).
fn exports(
    f: &FunctionIr<'_>,
    d: &Divergence,
    sums: &Summaries<'_>,
    evals: &Evals<'_, '_>,
    lanes: &mut Lanes<'_, '_, '_>,
    accesses: &[AccessFact],
) -> Vec<Export> {
    let calls = f.insts.iter().any(|i| i.call_target().is_some());
    if d.call.active.is_none() || calls || sums.has_barrier.contains(f.func.name) || f.cfg.is_irreducible() {
        return Vec::new();
    }
    let mut out = Vec::new();
    for x in accesses.iter().filter(|x| x.reached && matches!(x.access.space, Space::Global | Space::Shared)) {
        let a = &x.access;
        let Some(v) = a.addr_value else { continue };
        let root = crate::ir::values::root(f, v);
        let crate::ir::ValueDef::Inst { inst, .. } = f.ssa.values[root] else { continue };
        let Some((p, 0)) = f.insts[inst].param_read() else { continue };
        let Some(param) = f.func.params.iter().position(|x| x.name == p) else { continue };
        // a uniform argument is the callee's own symbol, sampled apart from the caller's value
        let known = |p: &ValueId| d.call.values.get(p).is_some_and(|a| a.lanes.is_some() || a.abs.const_value().is_some());
        if !crate::ir::values::scalar_parameters(f, v).iter().all(known) {
            continue;
        }
        let block = f.cfg.block_of(a.inst);
        let offsets = [0, 1].map(|it| {
            let q = Query::block(it);
            let (addr, base) = (evals.eval(v, q)?, evals.eval(root, q)?);
            let on = lanes.active(block, it);
            Some(std::sync::Arc::new(
                addr.iter().zip(base.iter()).zip(on.iter()).map(|((x, r), &on)| on.then_some(x - r + a.offset)).collect(),
            ))
        });
        if offsets.iter().any(Option::is_some) {
            out.push(Export { access: a.clone(), param, offsets });
        }
    }
    out
}

/// Write-after-write races whose two plain stores write the same value,
/// uniform across the block, at most 8 bytes wide, with no read racing
/// with either store: benign in practice (`benign_race`).
/// Between blocks (`by_block`: the values computed from `%ctaid`), the value
/// must not be one of those either.
fn mark_benign(f: &FunctionIr<'_>, d: &Divergence, sites: &[Access], races: &mut [Race], by_block: Option<&BitSet>) {
    use crate::ptx::Operand;
    #[derive(PartialEq)]
    enum Stored {
        Imm(i64),
        Value(crate::ir::ValueId),
    }
    let stored = |a: &Access| -> Option<Stored> {
        let inst = &f.insts[a.inst];
        if a.kind != crate::ir::inst::AccessKind::Store || inst.vec > 1 || a.width > 8 {
            return None;
        }
        match inst.operand(1)? {
            Operand::Imm(k) => Some(Stored::Imm(*k)),
            Operand::Reg(_) => {
                let v = f.operand_value(a.inst, 1)?;
                let grid_uniform = by_block.is_none_or(|b| !b.contains(v.index()));
                (grid_uniform && d.at(f, v, f.cfg.block_of(a.inst)).is_uniform()).then_some(Stored::Value(v))
            }
            _ => None,
        }
    };
    let read_races: Vec<usize> =
        races.iter().filter(|r| r.kind != crate::races::RaceKind::WriteAfterWrite).flat_map(|r| [r.first, r.second]).collect();
    // (a callee's store is not judged: what it stores is in another function)
    for r in races.iter_mut().filter(|r| r.kind == crate::races::RaceKind::WriteAfterWrite && r.first.max(r.second) < sites.len()) {
        let (a, b) = (&sites[r.first], &sites[r.second]);
        let same = match (stored(a), stored(b)) {
            (Some(Stored::Imm(x)), Some(Stored::Imm(y))) => x == y,
            (Some(Stored::Value(u)), Some(Stored::Value(w))) => crate::ir::values::same_value(f, u, w),
            _ => false,
        };
        r.benign = same && a.width == b.width && !read_races.contains(&r.first) && !read_races.contains(&r.second);
    }
}

/// Sort every memory instruction of `f` into one category.
fn coverage(f: &FunctionIr<'_>, accesses: &[AccessFact]) -> Coverage {
    let by_inst: HashMap<InstId, &AccessFact> = accesses.iter().map(|a| (a.access.inst, a)).collect();
    let mut c = Coverage::default();
    for (i, inst) in f.insts.iter_enumerated() {
        if inst.access().is_none() {
            continue;
        }
        c.total += 1;
        let Some(a) = by_inst.get(&i) else {
            // `memory::accesses` leaves out only the addresses computed from a
            // device function's arguments (`memory::from_arguments`)
            if matches!(f.spaces.analysed(f, i).0, Space::Global | Space::Shared) {
                c.skipped.push((i, if f.cfg.reachable(f.cfg.block_of(i)) { Skip::FromArguments } else { Skip::Unreached }));
            } else {
                c.other_space += 1;
            }
            continue;
        };
        if a.prediction.is_some() {
            c.predicted += 1;
        } else if a.access.addr.data() {
            c.data_dependent += 1;
        } else if !a.reached || !f.cfg.reachable(f.cfg.block_of(i)) {
            c.skipped.push((i, Skip::Unreached));
            continue;
        } else {
            c.skipped.push((i, Skip::NotEvaluable));
            continue;
        }
        if a.access.assumed {
            c.assumed_global.push(i);
        }
    }
    c
}

/// Everything the lint passes read about one function.
pub struct KernelFacts<'f, 'a> {
    pub f: &'f FunctionIr<'a>,
    pub d: &'f Divergence,
    pub sums: &'f Summaries<'a>,
    pub shape: &'f Shape,
    /// One per divergent branch, in the order of `d.branches`.
    pub branches: Vec<BranchFact>,
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
    /// The index in `branches` of the branch ending each block.
    branch_at: IdVec<BlockId, Option<u32>>,
}

impl<'f, 'a> KernelFacts<'f, 'a> {
    pub fn compute(f: &'f FunctionIr<'a>, d: &'f Divergence, sums: &'f Summaries<'a>, shape: &'f Shape) -> KernelFacts<'f, 'a> {
        Self::compute_with(f, d, sums, shape, None, &mut |_| Imports::new())
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
        let branches: Vec<BranchFact> = d
            .branches
            .iter()
            .map(|br| {
                let mut controlled = BitSet::new(f.cfg.len());
                controlled_blocks(f, br.block).into_iter().for_each(|b| controlled.insert(b.index()));
                BranchFact { br: *br, controlled, split: classify(f, d, br, shape), cost: branch_cost(f, br) }
            })
            .collect();
        let barrier_call = |i: InstId| f.insts[i].call_target().is_some_and(|t| sums.has_barrier.contains(t));
        let barriers: Vec<BarrierFact> = f
            .insts
            .keys()
            .filter(|&i| (f.insts[i].is_block_barrier() || barrier_call(i)) && f.cfg.reachable(f.cfg.block_of(i)))
            .map(|inst| BarrierFact { inst, divergence: barrier_divergence(f, d, &branches, inst, barrier_call(inst)), skipping: None })
            .collect();
        let evals = Evals::new(f, d, shape);
        let mut lanes = Lanes::new(&evals, &branches);
        // lanes that never reach a branch (returned, or outside an outer guard) do not split it
        let recount: Vec<Option<(usize, bool)>> = branches
            .iter()
            .map(|b| match &b.split {
                Split::Exact { taken, .. } => Some(crate::divergence::split::count_active(taken, &lanes.active(b.br.block, 0))),
                _ => None,
            })
            .collect();
        let mut barriers = barriers;
        for b in barriers.iter_mut() {
            if let Some(BarrierCause::Branch(k)) = b.divergence {
                b.skipping = skipping(f, &branches[k].br, b.inst, &mut lanes, k);
            }
        }
        // global accesses in a block past the first: an interior one, where a
        // boundary guard may let through lanes that block 0 masks, or the
        // block's offset may move the addresses within their sectors
        let by_block = block_index_values(f);
        let mut interior = (by_block.count() > 0).then(|| Lanes::of_block(&evals, &branches, [1; 3], Some(by_block.clone())));
        let accesses: Vec<AccessFact> = crate::memory::accesses(f, d)
            .into_iter()
            .map(|access| {
                let block = f.cfg.block_of(access.inst);
                let mask = lanes.active(block, 0);
                let mut prediction = crate::memory::predict(&evals, &access, &mask, 0);
                if let (Some(p), Some(inner), Space::Global) = (&mut prediction, &mut interior, access.space) {
                    // the same lanes at the same offset in their sectors cost the same
                    let inner_mask = inner.active(block, 0);
                    if inner_mask != mask || !crate::memory::same_sector_offset(&evals, &access) {
                        if let Some(q) = crate::memory::predict(&evals, &access, &inner_mask, 1) {
                            p.with_interior(q);
                        }
                    }
                }
                let masked = mask.iter().any(|on| !on);
                let unmasked = (masked && access.space == Space::Global)
                    .then(|| crate::memory::predict(&evals, &access, &vec![true; shape.threads()], 0))
                    .flatten()
                    .map(|p| (p.sectors.0, p.ideal));
                let reached = mask.iter().any(|&on| on);
                AccessFact { access, prediction, unmasked, group: None, reached }
            })
            .collect();
        let own: Vec<Access> = accesses.iter().map(|a| a.access.clone()).collect();
        // the calls, and their callees' accesses at them, through the arguments the calls pass
        let calls = call_facts(f, d, sums, &evals, &mut lanes);
        let imports = imports(&calls);
        let mut imported: Vec<CalleeAccess> = Vec::new();
        let mut placed: Vec<crate::races::Imported> = Vec::new();
        let mut calls_sorted: Vec<(&InstId, &Vec<CalleeAccess>)> = imports.iter().collect();
        calls_sorted.sort_by_key(|(i, _)| **i);
        for (&call, xs) in calls_sorted {
            let args = f.insts[call].call_args();
            for x in xs {
                let Some(crate::ptx::Operand::Sym(name)) = args.get(x.export.param) else { continue };
                let Some(v) = argument_value(f, call, name) else { continue };
                let access = Access {
                    inst: call,
                    addr: d.at(f, v, f.cfg.block_of(call)),
                    addr_value: Some(v),
                    offset: 0,
                    ..x.export.access.clone()
                };
                placed.push(crate::races::Imported { access, offsets: x.export.offsets.clone() });
                imported.push(x.clone());
            }
        }
        let mut sites = own.clone();
        sites.extend(placed.iter().map(|x| x.access.clone()));
        // which threads run a device function, and with what arguments, is its
        // callers' to say: its accesses are not paired without that context
        let mut races = if f.func.is_entry || d.call.active.is_some() {
            crate::races::find(&evals, &own, &placed, &mut |b, it| lanes.active(b, it).as_ref().clone(), &barrier_call)
        } else {
            Vec::new()
        };
        attribute_to_barriers(f, &branches, &barriers, &sites, &barrier_call, &mut races);
        mark_benign(f, d, &own, &mut races, None);
        // a pair in a common loop that shares an interval only through the loop's back
        // edges meets in the next iteration (one more intervals problem, without back edges)
        let in_common_loop = |r: &Race| {
            let (a, b) = (f.cfg.block_of(sites[r.first].inst), f.cfg.block_of(sites[r.second].inst));
            f.cfg.loops_containing(a).iter().any(|&l| f.cfg.in_loop(b, l))
        };
        if races.iter().any(in_common_loop) {
            let back = |a: BlockId, b: BlockId| f.cfg.loops.iter().any(|l| l.header == b && l.latches.contains(&a));
            let within = crate::races::intervals_cut(f, &sites, &barrier_call, &back);
            for r in races.iter_mut().filter(|r| in_common_loop(r)) {
                r.next_iteration |= !within.share(r.first, r.second);
            }
        }
        let mut branch_at = IdVec::from_vec(vec![None; f.cfg.len()]);
        for (k, x) in branches.iter().enumerate() {
            branch_at[x.br.block] = Some(k as u32);
        }
        // races between blocks: kernels, along the grid's dimensions of two blocks or more
        let (grid_dims, grid_assumed) = if f.func.is_entry { grid_dimensions(f, grid, &own) } else { (Vec::new(), false) };
        let mut grid_races = if !grid_dims.is_empty() {
            // the grid workspace's arrivals and polls synchronise (acquire/release): not compared
            let workspace = derived_from_specials(f, &|s| matches!(s, Special::GridWorkspace { .. }));
            let mut comparable = comparable_between_blocks(f, &by_block, &own);
            for (c, a) in comparable.iter_mut().zip(&own) {
                *c &= a.addr_value.is_none_or(|v| !workspace.contains(v.index()));
            }
            let gbars = grid_barriers(f, &own, &workspace);
            let phases = (!gbars.is_empty()).then(|| crate::races::grid_phases(f, &own, &gbars));
            // another block's threads differ from block 0's only through branches on the block index
            let by_block_branches = branches.iter().any(|b| by_block.contains(b.br.cond.index()));
            let mut next: HashMap<u8, (Option<Lanes<'_, '_, '_>>, BitSet)> = HashMap::new();
            let home = reached_in_block(f, d, &evals, &by_block, [0; 3]);
            let mut active = |dim: Option<u8>, b: BlockId, it: usize| -> Threads {
                let (on, reached) = match dim {
                    None => (lanes.active(b, it), home.contains(b.index())),
                    Some(x) => {
                        let mut ctaid = [0; 3];
                        ctaid[x as usize] = 1;
                        let (l, r) = next.entry(x).or_insert_with(|| {
                            let r = reached_in_block(f, d, &evals, &by_block, ctaid);
                            (by_block_branches.then(|| Lanes::of_block(&evals, &branches, ctaid, Some(by_block.clone()))), r)
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
            crate::races::find_grid(&evals, &own, &comparable, phases.as_ref(), &grid_dims, far, &mut active)
        } else {
            Vec::new()
        };
        mark_benign(f, d, &own, &mut grid_races, Some(&by_block));
        let exports = exports(f, d, sums, &evals, &mut lanes, &accesses);
        drop(lanes);
        let mut branches = branches;
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
        let coverage = coverage(f, &accesses);
        KernelFacts {
            f,
            d,
            sums,
            shape,
            branches,
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
            branch_at,
        }
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
}

/// The instructions each side of a branch runs before its immediate
/// post-dominator, and whether a loop, call or barrier is among them.
fn branch_cost(f: &FunctionIr<'_>, br: &DivBranch) -> BranchCost {
    let cfg = &f.cfg;
    let stop = cfg.ipdom(br.block);
    let target = f.branch_target(br.inst);
    let mut heavy = false;
    let mut side = |starts: Vec<BlockId>| -> u32 {
        let region = cfg.region(&starts, stop);
        let mut n = 0;
        for &b in &region {
            heavy |= cfg.loop_with_header(b).is_some_and(|l| region.binary_search(&cfg.loops[l].latches[0]).is_ok());
            for i in cfg.blocks[b].insts() {
                let inst = &f.insts[i];
                heavy |= inst.is_block_barrier() || inst.call_target().is_some();
                n += 1;
            }
        }
        n
    };
    let taken = side(target.into_iter().collect());
    let other = side(cfg.blocks[br.block].succs.iter().copied().filter(|&s| Some(s) != target).collect());
    BranchCost { taken, other, heavy }
}

/// The threads that skip barrier `bar` because of branch `k` (`br`), in the
/// first iteration, and whether the second differs.
fn skipping(f: &FunctionIr<'_>, br: &DivBranch, bar: InstId, lanes: &mut Lanes<'_, '_, '_>, k: usize) -> Option<Skipping> {
    let cfg = &f.cfg;
    let target = f.branch_target(br.inst);
    let stop = cfg.ipdom(br.block);
    let b = cfg.block_of(bar);
    let reaches = |s: BlockId| cfg.region(&[s], stop).binary_search(&b).is_ok();
    let taken_reaches = target.is_some_and(reaches);
    let fall_reaches = cfg.blocks[br.block].succs.iter().filter(|&&s| Some(s) != target).any(|&s| reaches(s))
        || (cfg.blocks[br.block].succs.len() == 1 && target.is_none());
    let skip = |taken: &[bool]| -> Vec<bool> { taken.iter().map(|&t| if t { !taken_reaches } else { !fall_reaches }).collect() };
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

/// Races that exist only because threads skip a divergent barrier: with
/// the edges by which its deciding branch skips it cut, the two accesses
/// no longer share an interval. Such a race is the barrier's consequence,
/// reported with it.
fn attribute_to_barriers(
    f: &FunctionIr<'_>,
    branches: &[BranchFact],
    barriers: &[BarrierFact],
    sites: &[Access],
    barrier_call: &dyn Fn(InstId) -> bool,
    races: &mut [Race],
) {
    let cfg = &f.cfg;
    for (bi, bar) in barriers.iter().enumerate() {
        let Some(BarrierCause::Branch(k)) = bar.divergence else { continue };
        if races.iter().all(|r| r.through_barrier.is_some()) {
            return;
        }
        let br = branches[k].br;
        let target = cfg.block_of(bar.inst);
        let stop = cfg.ipdom(br.block);
        let skips: Vec<BlockId> =
            cfg.blocks[br.block].succs.iter().copied().filter(|&s| cfg.region(&[s], stop).binary_search(&target).is_err()).collect();
        if skips.is_empty() {
            continue;
        }
        let cut = |from: BlockId, to: BlockId| from == br.block && skips.contains(&to);
        let kept = crate::races::intervals_cut(f, sites, barrier_call, &cut);
        for r in races.iter_mut().filter(|r| r.through_barrier.is_none()) {
            if !kept.share(r.first, r.second) {
                r.through_barrier = Some(bi);
            }
        }
    }
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
        .min_by_key(|(_, x)| x.controlled.count())
        .map(|(k, _)| BarrierCause::Branch(k))
}

impl BranchFact {
    /// Does the branch decide whether block `b` runs?
    pub fn controls(&self, b: BlockId) -> bool {
        self.controlled.contains(b.index())
    }
    /// The blocks it controls.
    pub fn controlled(&self) -> impl Iterator<Item = BlockId> + '_ {
        self.controlled.iter().map(BlockId::new)
    }
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

/// The values computed from `%ctaid` (through instructions and phis).
fn block_index_values(f: &FunctionIr<'_>) -> BitSet {
    derived_from_specials(f, &|s| matches!(s, Special::Ctaid(_)))
}

/// The values computed from the special registers `which` picks.
fn derived_from_specials(f: &FunctionIr<'_>, which: &dyn Fn(Special) -> bool) -> BitSet {
    // a special register read is the use of its entry value
    crate::ir::values::derived_from(f, f.ssa.values.keys().filter(|&v| f.ssa.special(v).is_some_and(which)).collect())
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

/// Which threads execute each block (memoised per block and iteration).
struct Lanes<'f, 'a, 'b> {
    f: &'f FunctionIr<'a>,
    shape: &'f Shape,
    evals: &'b Evals<'f, 'a>,
    branches: &'b [BranchFact],
    /// Thread directions of each divergent branch per iteration (`None`: not evaluable).
    directions: HashMap<(BlockId, usize), Option<Threads>>,
    /// Blocks reachable from each branch's taken side and from its other side.
    sides: HashMap<usize, Rc<Sides>>,
    /// The evaluable branches (indices) controlling each block.
    controllers: Option<IdVec<BlockId, Vec<usize>>>,
    memo: HashMap<(BlockId, usize), Threads>,
    /// Blocks whose threads are being computed (a branch's own threads are
    /// asked for on the way; a loop may lead back).
    computing: std::collections::HashSet<(BlockId, usize)>,
    /// The block whose threads these are (its index in each dimension).
    ctaid: [i64; 3],
    /// For a block past the first: the values computed from `%ctaid`
    /// (a condition that is not one is block 0's, evaluated once).
    by_block: Option<BitSet>,
}

/// One flag per thread of the block.
type Threads = Rc<Vec<bool>>;

/// The blocks of a branch's taken side and of its other side, sorted.
type Sides = (Vec<BlockId>, Vec<BlockId>);

impl<'f, 'a, 'b> Lanes<'f, 'a, 'b> {
    /// The threads of block 0.
    fn new(evals: &'b Evals<'f, 'a>, branches: &'b [BranchFact]) -> Self {
        Self::of_block(evals, branches, [0; 3], None)
    }

    /// The threads of block `ctaid` (its index in each dimension);
    /// `by_block`: the values computed from `%ctaid` ([`block_index_values`]).
    fn of_block(evals: &'b Evals<'f, 'a>, branches: &'b [BranchFact], ctaid: [i64; 3], by_block: Option<BitSet>) -> Self {
        let (f, shape) = (evals.f, evals.shape);
        Lanes {
            f,
            shape,
            evals,
            branches,
            directions: HashMap::new(),
            sides: HashMap::new(),
            controllers: None,
            memo: HashMap::new(),
            computing: Default::default(),
            ctaid,
            by_block,
        }
    }

    /// Which threads take divergent branch `k` in the given iteration of its loops.
    fn direction(&mut self, k: usize, iteration: usize) -> Option<Threads> {
        let br = self.branches[k].br;
        let evals = self.evals;
        let ctaid = match &self.by_block {
            Some(vals) if !vals.contains(br.cond.index()) => [0; 3],
            _ => self.ctaid,
        };
        self.directions
            .entry((br.block, iteration))
            .or_insert_with(|| {
                evals
                    .eval(br.cond, Query { first_thread_only: false, ctaid, scalar: None, iteration, pin: None })
                    .map(|c| Rc::new(c.iter().map(|c| (*c != 0) != br.negated).collect()))
            })
            .clone()
    }

    /// Blocks reachable from branch `k`'s taken side and from its other
    /// side without passing its immediate post-dominator, sorted.
    fn side(&mut self, k: usize) -> Rc<Sides> {
        let cfg = &self.f.cfg;
        let br = self.branches[k].br;
        self.sides
            .entry(k)
            .or_insert_with(|| {
                let stop = cfg.ipdom(br.block);
                let target = self.f.branch_target(br.inst);
                let taken: Vec<BlockId> = target.into_iter().collect();
                let fall: Vec<BlockId> = cfg.blocks[br.block].succs.iter().copied().filter(|&s| Some(s) != target).collect();
                Rc::new((cfg.region(&taken, stop), cfg.region(&fall, stop)))
            })
            .clone()
    }

    fn active(&mut self, b: BlockId, iteration: usize) -> Threads {
        if let Some(v) = self.memo.get(&(b, iteration)) {
            return v.clone();
        }
        if !self.computing.insert((b, iteration)) {
            // around a loop back to a block being computed: every thread may be there
            return Rc::new(vec![true; self.shape.threads()]);
        }
        let v = Rc::new(self.compute(b, iteration));
        self.computing.remove(&(b, iteration));
        self.memo.insert((b, iteration), v.clone());
        v
    }

    fn compute(&mut self, b: BlockId, iteration: usize) -> Vec<bool> {
        let cfg = &self.f.cfg;
        // the calling threads, in a call context
        let threads = self.shape.threads();
        let mut active = self.evals.d.call.active.clone().filter(|a| a.len() == threads).unwrap_or_else(|| vec![true; threads]);
        if self.controllers.is_none() {
            // only branches whose condition can be evaluated restrict the lanes
            let mut by_block: IdVec<BlockId, Vec<usize>> = IdVec::filled(cfg.len(), Vec::new());
            for k in 0..self.branches.len() {
                if self.direction(k, 0).is_none() && self.direction(k, 1).is_none() {
                    continue;
                }
                for x in self.branches[k].controlled() {
                    by_block[x].push(k);
                }
            }
            self.controllers = Some(by_block);
        }
        let controllers = self.controllers.as_ref().map(|c| c[b].clone()).unwrap_or_default();
        for k in controllers {
            let br = self.branches[k].br;
            if br.block == b {
                continue;
            }
            let loop_exit = cfg
                .loops_containing(br.block)
                .iter()
                .any(|&l| cfg.in_loop(b, l) && cfg.blocks[br.block].succs.iter().any(|&s| !cfg.in_loop(s, l)));
            if loop_exit {
                continue;
            }
            let Some(taken) = self.direction(k, iteration) else { continue };
            let sides = self.side(k);
            let (taken_region, fall_region) = sides.as_ref();
            let side = match (taken_region.binary_search(&b).is_ok(), fall_region.binary_search(&b).is_ok()) {
                (true, false) => true,
                (false, true) => false,
                _ => continue,
            };
            // only the threads that execute the branch chose a side there: another
            // thread may reach `b` by a path around it (`if (t == 0) … else if (t == 1) …`
            // joined in one store)
            let at = self.active(br.block, iteration);
            for ((a, t), at) in active.iter_mut().zip(taken.iter()).zip(at.iter()) {
                *a &= !*at || *t == side;
            }
        }
        active
    }
}
