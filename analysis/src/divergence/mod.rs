//! Divergence analysis (Sampaio et al., seed 002, with the affine domain of
//! §3.4): the abstract value of every SSA value of a function, which
//! branches are thread-dependent, which phis merge values from different
//! paths of a divergent branch (sync dependence), and which loops have
//! thread-dependent exits (values leaving them are divergent, Sampaio's η).
//!
//! Owns: transfer functions (`transfer`), the sparse fixed point, sync and
//! temporal divergence, and per-lane evaluation of thread-only expressions
//! (`eval`). Does not own: deciding what is worth a warning (see
//! `crate::lints`).

pub mod butterfly;
pub mod domain;
pub mod eval;
pub mod split;
mod transfer;
pub use transfer::name_key;

use crate::ir::dataflow::{self, Problem};
use crate::ir::inst::{Opcode, Space, Special};
use crate::ir::{BlockId, FunctionIr, IdVec, InstId, LoopId, PhiId, User, ValueDef, ValueId};
use crate::ptx::Operand;
pub use domain::{AbsVal, Coef};
use rustc_hash::{FxHashMap, FxHashSet};

/// Facts about callees that call sites need.
#[derive(Debug, Default, Clone)]
pub struct Summaries<'a> {
    /// Functions whose result depends only on their arguments (no thread
    /// ids, loads of thread-private memory, atomics, clocks; transitively).
    pub thread_invariant: FxHashSet<&'a str>,
    /// Functions that execute a barrier (transitively).
    pub has_barrier: FxHashSet<&'a str>,
    /// Functions with a body in the module.
    pub defined: FxHashSet<&'a str>,
}

/// A function's own facts, and those it inherits from its callees: a
/// dataflow problem over the call graph.
struct CallFacts {
    /// (thread-variant, executes a barrier) from the function's own code.
    local: Vec<(bool, bool)>,
    callees: Vec<Vec<usize>>,
    callers: Vec<Vec<usize>>,
}

impl Problem for CallFacts {
    type Value = (bool, bool);
    fn transfer(&mut self, f: usize, state: &[(bool, bool)]) -> (bool, bool) {
        self.callees[f].iter().fold(self.local[f], |(v, b), &c| (v || state[c].0, b || state[c].1))
    }
    fn join(&self, a: &(bool, bool), b: &(bool, bool)) -> (bool, bool) {
        (a.0 || b.0, a.1 || b.1)
    }
    fn dependents(&mut self, f: usize, _: &[(bool, bool)], out: &mut Vec<usize>) {
        out.extend(&self.callers[f]);
    }
}

impl<'a> Summaries<'a> {
    pub fn compute<L: crate::ir::Listing<'a>>(fns: &[L]) -> Summaries<'a> {
        let index: FxHashMap<&str, usize> = fns.iter().enumerate().map(|(k, f)| (f.func().name, k)).collect();
        let mut facts = CallFacts { local: Vec::new(), callees: vec![Vec::new(); fns.len()], callers: vec![Vec::new(); fns.len()] };
        for (k, f) in fns.iter().enumerate() {
            let (mut variant, mut barrier) = (false, false);
            for i in f.insts() {
                if let Some(&c) = i.call_target().and_then(|t| index.get(t)) {
                    facts.callees[k].push(c);
                    facts.callers[c].push(k);
                }
                barrier |= i.is_block_barrier();
                let thread_src = i
                    .operands()
                    .iter()
                    .any(|o| matches!(o, Operand::Reg(r) if Special::parse(r).is_some_and(|s| transfer::special(s).is_divergent())));
                variant |=
                    thread_src || i.lane_exchanging() || (i.opcode == Opcode::Ld && i.space == Some(Space::Local)) || i.is_indirect_call();
            }
            facts.local.push((variant, barrier));
        }
        let init = facts.local.clone();
        let order: Vec<usize> = (0..fns.len()).collect();
        let state = dataflow::solve(&mut facts, init, &order);
        let names = || fns.iter().map(|f| f.func().name);
        Summaries {
            thread_invariant: names().zip(&state).filter(|(_, s)| !s.0).map(|(n, _)| n).collect(),
            has_barrier: names().zip(&state).filter(|(_, s)| s.1).map(|(n, _)| n).collect(),
            defined: names().collect(),
        }
    }
}

/// What one call site says about a device function's parameters: the
/// function is then analysed "in this call" (context-sensitively), its
/// parameters holding the caller's values and only the calling threads
/// active.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct CallArgs {
    /// One per parameter of the callee, in order (`None`: not known at the
    /// call, e.g. a field of a struct passed by value).
    pub params: Vec<Option<ArgValue>>,
    /// The threads of the block that make the call.
    pub active: Vec<bool>,
}

/// A call argument as the callee sees it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ArgValue {
    /// The caller's abstract value without the caller's symbols
    /// ([`AbsVal::without_symbols`]); a uniform value that is not a
    /// constant is the callee's own parameter symbol.
    pub abs: AbsVal,
    /// Its value in every thread of the block (thread-dependent values the
    /// caller could evaluate).
    pub lanes: Option<std::sync::Arc<Vec<i64>>>,
    /// The address space the caller knows it points into.
    pub space: crate::ir::space::Fact,
}

/// The parameters of one call context, bound in the callee's IR.
#[derive(Debug, Default)]
pub struct Bound {
    /// The reads (`ld.param`) of the bound parameters.
    pub values: FxHashMap<ValueId, ArgValue>,
    /// The calling threads (`None`: every thread, no call context).
    pub active: Option<Vec<bool>>,
}

impl Bound {
    /// Bind `args` to the parameter reads of `f`.
    pub fn new(f: &FunctionIr<'_>, args: &CallArgs) -> Bound {
        let mut values = FxHashMap::default();
        for (v, def) in f.ssa.values.iter_enumerated() {
            let ValueDef::Inst { inst, .. } = *def else { continue };
            let Some((p, 0)) = f.insts[inst].param_read() else { continue };
            let Some(k) = f.func.params.iter().position(|x| x.name == p) else { continue };
            if let Some(Some(a)) = args.params.get(k) {
                let abs = match a.abs {
                    x if x.is_uniform() && x.const_value().is_none() => AbsVal::symbol(name_key(p, 0)),
                    x => x,
                };
                values.insert(v, ArgValue { abs, ..a.clone() });
            }
        }
        Bound { values, active: Some(args.active.clone()) }
    }

    /// The values the user declares for a kernel's scalar parameters
    /// (`declared(k, name)`: by index and PTX name), bound as constants:
    /// every analysis takes them as the kernel's, none samples them. Not a
    /// call context (`active` stays `None`).
    pub fn declared(f: &FunctionIr<'_>, declared: &dyn Fn(usize, &str) -> Option<i64>) -> Bound {
        let mut values = FxHashMap::default();
        for (v, def) in f.ssa.values.iter_enumerated() {
            let ValueDef::Inst { inst, .. } = *def else { continue };
            let Some((p, 0)) = f.insts[inst].param_read() else { continue };
            let Some(k) = f.func.params.iter().position(|x| x.name == p) else { continue };
            if let Some(x) = declared(k, p) {
                values.insert(v, ArgValue { abs: AbsVal::konst(x), lanes: None, space: crate::ir::space::Fact::UNKNOWN });
            }
        }
        Bound { values, active: None }
    }
}

/// A block ending in a thread-dependent branch (or guarded `ret`/`exit`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DivBranch {
    pub block: BlockId,
    /// The terminating instruction.
    pub inst: InstId,
    /// The predicate value and whether the guard is negated (`@!%p`).
    pub cond: ValueId,
    pub negated: bool,
}

pub struct Divergence {
    pub vals: AbsVals,
    /// Divergent branches, in reverse post-order of their blocks.
    pub branches: Vec<DivBranch>,
    /// Loops with a thread-dependent exit: ⊤, or `WarpUniform` when whole
    /// warps leave at different iterations; `Bottom` when uniform.
    pub divergent_loop: IdVec<LoopId, AbsVal>,
    /// Phis at joins of divergent branches, with what the merge adds
    /// (⊤, or `WarpUniform` for warp-uniform branches); `Bottom` if none.
    pub sync_phi: IdVec<PhiId, AbsVal>,
    def_block: IdVec<ValueId, Option<BlockId>>,
    /// The call context the function was analysed in (empty: none).
    pub call: Bound,
    /// The lane bits each value is invariant under ([`butterfly`]).
    butterfly: IdVec<ValueId, u8>,
}

/// Each SSA value's abstract value, the distinct ones kept once with an
/// index for each value (96 bytes a value otherwise: a large function's
/// values share few of them, ⊤, uniform unknowns, `tid.x`), or each its
/// own when most are distinct. Read as a table, `vals[v]`.
pub struct AbsVals {
    /// Each value's index in `distinct`; empty: `distinct` is by value.
    of: IdVec<ValueId, u32>,
    distinct: Vec<AbsVal>,
}

/// Fewer values than this are each kept as their own: a small function's
/// table is small either way, and finding the distinct ones would cost as
/// much as its analysis.
const SMALL: usize = 64;

impl AbsVals {
    /// The first `n` values of the solver's `state`.
    fn new(state: Vec<AbsVal>, n: usize) -> AbsVals {
        use std::hash::BuildHasher;
        let by_value = |mut state: Vec<AbsVal>| {
            state.truncate(n);
            AbsVals { of: IdVec::new(), distinct: state }
        };
        if n < SMALL {
            return by_value(state);
        }
        let vals = &state[..n];
        // found by their hash (a map of 16-byte entries, not of the values), values of one
        // hash told apart by a map of their own; given up when half of them are distinct
        let mut first: FxHashMap<u64, u32> = FxHashMap::with_capacity_and_hasher(n / 2, Default::default());
        let mut others: FxHashMap<AbsVal, u32> = FxHashMap::default();
        let mut distinct: Vec<AbsVal> = Vec::new();
        let mut of = Vec::with_capacity(n);
        for x in vals {
            // (the value before's, as neighbours often are: no hashing)
            if let Some(&prev) = of.last().filter(|&&p| distinct[p as usize] == *x) {
                of.push(prev);
                continue;
            }
            if distinct.len() > n / 2 {
                return by_value(state);
            }
            let h = rustc_hash::FxBuildHasher.hash_one(x);
            let id = match first.get(&h).copied() {
                Some(i) if distinct[i as usize] == *x => i,
                Some(_) => *others.entry(*x).or_insert_with(|| {
                    distinct.push(*x);
                    (distinct.len() - 1) as u32
                }),
                None => {
                    distinct.push(*x);
                    let i = (distinct.len() - 1) as u32;
                    first.insert(h, i);
                    i
                }
            };
            of.push(id);
        }
        drop((first, others, state));
        distinct.shrink_to_fit();
        AbsVals { of: IdVec::from_vec(of), distinct }
    }
}

impl std::ops::Index<ValueId> for AbsVals {
    type Output = AbsVal;
    fn index(&self, v: ValueId) -> &AbsVal {
        match self.of.is_empty() {
            true => &self.distinct[v.index()],
            false => &self.distinct[self.of[v] as usize],
        }
    }
}

/// Read access to abstract values, during the fixed point (the solver's
/// state) and after it (a [`Divergence`]): what transfer functions see.
pub trait Values {
    fn val(&self, v: ValueId) -> AbsVal;
    /// What leaving loop `l` adds to the values defined in it (`Bottom`
    /// unless its exit is thread-dependent).
    fn loop_exit(&self, l: LoopId) -> AbsVal;
    fn def_block(&self, v: ValueId) -> Option<BlockId>;

    /// The value of `v` as seen by a use in block `use_block`: divergent when
    /// it leaves a loop with a thread-dependent exit (temporal divergence).
    fn at(&self, f: &FunctionIr<'_>, v: ValueId, use_block: BlockId) -> AbsVal {
        let val = self.val(v);
        let Some(db) = self.def_block(v) else { return val };
        // (a thread-dependent value leaving a loop whose exit depends on loaded
        // data is the value of a data-dependent iteration)
        if matches!(val, AbsVal::Top { data: true }) {
            return val;
        }
        let mut l = f.cfg.loop_of(db);
        while let Some(x) = l {
            if f.cfg.in_loop(use_block, x) {
                break;
            }
            let k = self.loop_exit(x);
            if k != AbsVal::Bottom {
                return val.join(k);
            }
            l = f.cfg.loops[x].parent;
        }
        val
    }
}

impl Values for Divergence {
    fn val(&self, v: ValueId) -> AbsVal {
        self.vals[v]
    }
    fn loop_exit(&self, l: LoopId) -> AbsVal {
        self.divergent_loop[l]
    }
    fn def_block(&self, v: ValueId) -> Option<BlockId> {
        self.def_block[v]
    }
}

/// The solver's state seen as values: nodes are the SSA values, then one
/// node per block (its terminating branch: `Bottom`, or what its
/// divergence adds), then one per loop (its exit's divergence).
struct Nodes<'s> {
    state: &'s [AbsVal],
    nv: usize,
    nb: usize,
    def_block: &'s IdVec<ValueId, Option<BlockId>>,
}

impl Values for Nodes<'_> {
    fn val(&self, v: ValueId) -> AbsVal {
        self.state[v.index()]
    }
    fn loop_exit(&self, l: LoopId) -> AbsVal {
        self.state[self.nv + self.nb + l.index()]
    }
    fn def_block(&self, v: ValueId) -> Option<BlockId> {
        self.def_block[v]
    }
}

/// Sampaio et al.'s analysis as one dataflow problem (see [`Nodes`]).
struct Problem_<'f, 'a, 's> {
    f: &'f FunctionIr<'a>,
    sums: &'s Summaries<'a>,
    def_block: IdVec<ValueId, Option<BlockId>>,
    is_header: IdVec<BlockId, bool>,
    /// Blocks of each loop whose branch may leave it.
    exit_blocks: IdVec<LoopId, Vec<BlockId>>,
    /// Non-trivial phis at the joins of each branch (computed when the branch first diverges).
    joins: FxHashMap<BlockId, Vec<PhiId>>,
    /// The divergent branches whose joins hold each phi.
    sync_sources: IdVec<PhiId, Vec<BlockId>>,
    /// Whether each instruction is the guarded terminator of its block.
    is_term: IdVec<InstId, bool>,
    /// Parameter reads bound to a call's arguments.
    bound: &'s FxHashMap<ValueId, ArgValue>,
}

impl Problem_<'_, '_, '_> {
    fn nodes<'s>(&'s self, state: &'s [AbsVal]) -> Nodes<'s> {
        Nodes { state, nv: self.f.ssa.values.len(), nb: self.f.cfg.len(), def_block: &self.def_block }
    }
    fn branch_node(&self, b: BlockId) -> usize {
        self.f.ssa.values.len() + b.index()
    }
    /// The nodes that read what instruction `i` writes or decides.
    fn inst_dependents(&self, i: InstId, out: &mut Vec<usize>) {
        let f = self.f;
        out.extend(f.ssa.defs(i).iter().map(|v| v.index()));
        // an argument stored for a call: the reads of its return value later in the block
        if f.insts[i].opcode == Opcode::St && f.insts[i].space == Some(Space::Param) {
            let b = f.cfg.block_of(i);
            for j in f.cfg.blocks[b].insts().filter(|j| j.index() > i.index()) {
                if f.insts[j].param_read().is_some() {
                    out.extend(f.ssa.defs(j).iter().map(|v| v.index()));
                }
            }
        }
        if self.is_term[i] {
            out.push(self.branch_node(self.f.cfg.block_of(i)));
        }
    }
    fn user_dependents(&self, u: User, out: &mut Vec<usize>) {
        match u {
            User::Inst(i) => self.inst_dependents(i, out),
            User::Phi(p) => out.push(self.f.ssa.phis[p].value.index()),
        }
    }
}

impl Problem for Problem_<'_, '_, '_> {
    type Value = AbsVal;

    fn transfer(&mut self, node: usize, state: &[AbsVal]) -> AbsVal {
        let f = self.f;
        let (nv, nb) = (f.ssa.values.len(), f.cfg.len());
        let view = self.nodes(state);
        if node < nv {
            return match f.ssa.values[ValueId::new(node)] {
                ValueDef::Entry(_) => state[node],
                ValueDef::Inst { .. } if self.bound.contains_key(&ValueId::new(node)) => self.bound[&ValueId::new(node)].abs,
                ValueDef::Inst { inst, slot } => transfer::inst_value(&view, f, self.sums, inst, slot as usize),
                ValueDef::Phi(p) => {
                    let ph = &f.ssa.phis[p];
                    let mut nv = AbsVal::Bottom;
                    for &(pred, iv) in &ph.incoming {
                        if f.cfg.reachable(pred) {
                            nv = nv.join(view.at(f, iv, pred));
                        }
                    }
                    // sync dependence: merging the paths of a divergent branch
                    for &b in &self.sync_sources[p] {
                        nv = nv.join(state[self.branch_node(b)]);
                    }
                    nv
                }
            };
        }
        if node < nv + nb {
            let b = BlockId::new(node - nv);
            // what merging the paths of this branch adds: ⊤, or warp-uniform
            return match branch_of(&view, f, b) {
                Some(br) if view.at(f, br.cond, b) == AbsVal::WarpUniform => AbsVal::WarpUniform,
                // a value chosen by a branch on loaded data depends on that data
                Some(br) => AbsVal::Top { data: view.at(f, br.cond, b).data() },
                None => AbsVal::Bottom,
            };
        }
        let l = LoopId::new(node - nv - nb);
        self.exit_blocks[l].iter().fold(AbsVal::Bottom, |acc, &b| acc.join(state[self.branch_node(b)]))
    }

    fn join(&self, a: &AbsVal, b: &AbsVal) -> AbsVal {
        a.join(*b)
    }

    fn widen(&self, node: usize, _old: &AbsVal, joined: AbsVal) -> AbsVal {
        let f = self.f;
        if node >= f.ssa.values.len() {
            return joined;
        }
        // widening at loop headers: a uniform counter is named at once,
        // before its back-edge value is known (keeps `2·s·tid` affine in s)
        if let ValueDef::Phi(p) = f.ssa.values[ValueId::new(node)] {
            if self.is_header[f.ssa.phis[p].block] && joined.is_uniform() && joined != AbsVal::Bottom {
                return AbsVal::symbol(node as u32);
            }
        }
        // a uniform value of unknown content is named after itself
        transfer::named(joined, ValueId::new(node))
    }

    fn dependents(&mut self, node: usize, _: &[AbsVal], out: &mut Vec<usize>) {
        let f = self.f;
        let (nv, nb) = (f.ssa.values.len(), f.cfg.len());
        if node < nv {
            for &u in &f.ssa.users[ValueId::new(node)] {
                self.user_dependents(u, out);
            }
        } else if node < nv + nb {
            let b = BlockId::new(node - nv);
            // the phis at its joins (sync dependence)
            if !self.joins.contains_key(&b) {
                let mut phis = Vec::new();
                for j in join_blocks(f, b) {
                    for &p in &f.ssa.block_phis[j] {
                        let ph = &f.ssa.phis[p];
                        // a join of one value (the same register copy, or the same special
                        // register read on each side) is that value, whichever side ran
                        let first = ph.incoming.first().map(|x| x.1);
                        if !first.is_some_and(|v0| ph.incoming.iter().all(|x| crate::ir::values::same_value(f, x.1, v0))) {
                            phis.push(p);
                            self.sync_sources[p].push(b);
                        }
                    }
                }
                self.joins.insert(b, phis);
            }
            out.extend(self.joins[&b].iter().map(|&p| f.ssa.phis[p].value.index()));
            // the loops it may leave
            for l in f.cfg.loops_containing(b) {
                if self.exit_blocks[l].contains(&b) {
                    out.push(nv + nb + l.index());
                }
            }
        } else {
            // values leaving the loop now look different to uses outside it
            let l = LoopId::new(node - nv - nb);
            let lp = &f.cfg.loops[l];
            for &lb in &lp.blocks {
                let blk = &f.cfg.blocks[lb];
                let phis = f.ssa.block_phis[lb].iter().map(|&p| f.ssa.phis[p].value);
                let insts = blk.insts().flat_map(|i| f.ssa.defs(i).iter().copied());
                for v in phis.chain(insts) {
                    for &u in &f.ssa.users[v] {
                        let ub = match u {
                            User::Inst(i) => f.cfg.block_of(i),
                            User::Phi(p) => f.ssa.phis[p].block,
                        };
                        if !f.cfg.in_loop(ub, l) || matches!(u, User::Phi(_)) {
                            self.user_dependents(u, out);
                        }
                    }
                }
            }
        }
    }
}

impl Divergence {
    /// Run the analysis on one function.
    pub fn analyze(f: &FunctionIr<'_>, sums: &Summaries<'_>) -> Divergence {
        Divergence::analyze_in(f, sums, None)
    }

    /// The analysis of a device function in one call context (`None`: for
    /// every caller at once, its parameters uniform unknowns).
    pub fn analyze_in(f: &FunctionIr<'_>, sums: &Summaries<'_>, args: Option<&CallArgs>) -> Divergence {
        Divergence::analyze_bound(f, sums, args.map(|a| Bound::new(f, a)).unwrap_or_default())
    }

    /// The analysis with parameters bound (a call context's arguments, or
    /// the values declared for a kernel).
    pub fn analyze_bound(f: &FunctionIr<'_>, sums: &Summaries<'_>, call: Bound) -> Divergence {
        let (nv, nb, nl) = (f.ssa.values.len(), f.cfg.len(), f.cfg.loops.len());
        let def_block: IdVec<ValueId, Option<BlockId>> = f
            .ssa
            .values
            .iter()
            .map(|d| match d {
                ValueDef::Inst { inst, .. } => Some(f.cfg.block_of(*inst)),
                ValueDef::Phi(p) => Some(f.ssa.phis[*p].block),
                ValueDef::Entry(_) => None,
            })
            .collect();
        let mut is_header: IdVec<BlockId, bool> = IdVec::filled(nb, false);
        for l in &f.cfg.loops {
            is_header[l.header] = true;
        }
        let exit_blocks: IdVec<LoopId, Vec<BlockId>> = f
            .cfg
            .loops
            .keys()
            .map(|l| {
                f.cfg.loops[l]
                    .blocks
                    .iter()
                    .copied()
                    .filter(|&b| {
                        let succs = &f.cfg.blocks[b].succs;
                        succs.iter().any(|&s| !f.cfg.in_loop(s, l)) || succs.len() < 2
                    })
                    .collect()
            })
            .collect();
        let is_term = f.insts.keys().map(|i| f.cfg.blocks[f.cfg.block_of(i)].last() == Some(i) && f.insts[i].ast.guard.is_some()).collect();
        // entry values: special registers, or uniform unknowns; everything else starts at ⊥
        let mut init = vec![AbsVal::Bottom; nv + nb + nl];
        for (v, def) in f.ssa.values.iter_enumerated() {
            if let ValueDef::Entry(r) = def {
                init[v.index()] = f.ssa.special_reg(*r).map_or(AbsVal::uniform(None), transfer::special);
            }
        }
        // reverse post-order: each block's phis, its values, its branch
        let mut order = Vec::with_capacity(nv + nb);
        for &b in &f.cfg.rpo {
            order.extend(f.ssa.block_phis[b].iter().map(|&p| f.ssa.phis[p].value.index()));
            for i in f.cfg.blocks[b].insts() {
                order.extend(f.ssa.defs(i).iter().map(|v| v.index()));
            }
            order.push(nv + b.index());
        }
        let mut problem = Problem_ {
            f,
            sums,
            def_block,
            is_header,
            exit_blocks,
            joins: FxHashMap::default(),
            sync_sources: IdVec::filled(f.ssa.phis.len(), Vec::new()),
            is_term,
            bound: &call.values,
        };
        let state = dataflow::solve(&mut problem, init, &order);
        drop(order);
        let view = problem.nodes(&state);
        let branches =
            f.cfg.rpo.iter().filter(|&&b| state[nv + b.index()] != AbsVal::Bottom).filter_map(|&b| branch_of(&view, f, b)).collect();
        let sync_phi =
            problem.sync_sources.iter().map(|bs| bs.iter().fold(AbsVal::Bottom, |acc, &b| acc.join(state[nv + b.index()]))).collect();
        let divergent_loop = IdVec::from_vec(state[nv + nb..].to_vec());
        // the values are the state's first `nv` nodes
        let vals = AbsVals::new(state, nv);
        let def_block = problem.def_block;
        let mut d = Divergence { vals, branches, divergent_loop, sync_phi, def_block, call, butterfly: IdVec::new() };
        d.butterfly = butterfly::invariance(f, &d);
        d
    }

    /// The value of `v` as seen by a use in block `use_block` (see [`Values::at`]).
    pub fn at(&self, f: &FunctionIr<'_>, v: ValueId, use_block: BlockId) -> AbsVal {
        Values::at(self, f, v, use_block)
    }

    /// Value of a register operand read by instruction `i`.
    pub fn operand(&self, f: &FunctionIr<'_>, i: InstId, o: &Operand<'_>) -> AbsVal {
        transfer::operand(self, f, i, o)
    }
}

/// If block `b` ends in a thread-dependent branch (or guarded `ret`/`exit`), describe it.
fn branch_of<V: Values>(d: &V, f: &FunctionIr<'_>, b: BlockId) -> Option<DivBranch> {
    if !f.cfg.reachable(b) {
        return None;
    }
    let i = f.cfg.blocks[b].last()?;
    let inst = &f.insts[i];
    let g = inst.ast.guard?;
    if !matches!(inst.opcode, Opcode::Bra | Opcode::Brx | Opcode::Ret | Opcode::Exit) {
        return None;
    }
    let v = f.ssa.use_of(i, g.reg)?;
    if d.at(f, v, b).is_divergent() {
        Some(DivBranch { block: b, inst: i, cond: v, negated: g.negated })
    } else {
        None
    }
}

/// Join points of the branch ending block `b`: blocks reached from two
/// different successors by paths that do not go around a loop back edge
/// (the acyclic sync-dependence of Sampaio et al.), up to its immediate
/// post-dominator.
pub fn join_blocks(f: &FunctionIr<'_>, b: BlockId) -> Vec<BlockId> {
    let cfg = &f.cfg;
    let succs = &cfg.blocks[b].succs;
    if succs.len() < 2 {
        return vec![];
    }
    let stop = cfg.ipdom(b);
    let Some(start) = cfg.rpo_pos(b) else { return vec![] };
    let end = match stop {
        Some(s) => match cfg.rpo_pos(s) {
            Some(e) => e,
            None => return vec![],
        },
        None => cfg.rpo.len().saturating_sub(1),
    };
    if end <= start {
        return vec![];
    }
    // labels indexed by RPO position relative to the branch
    let span = end - start + 1;
    let mut label: Vec<Option<BlockId>> = vec![None; span];
    let slot = |x: BlockId| -> Option<usize> { cfg.rpo_pos(x).filter(|&r| r > start && r <= end).map(|r| r - start) };
    for &s in succs {
        if let Some(k) = slot(s) {
            label[k] = Some(s);
        }
    }
    let mut joins = Vec::new();
    for pos in start + 1..=end {
        let x = cfg.rpo[pos];
        let Some(lx) = label[pos - start] else { continue };
        if Some(x) == stop {
            continue;
        }
        for &y in &cfg.blocks[x].succs {
            if cfg.rpo_pos(y).is_some_and(|r| r <= pos) {
                continue; // back edge
            }
            let Some(k) = slot(y) else { continue };
            match label[k] {
                None => label[k] = Some(lx),
                Some(ly) if ly != lx && ly != y => {
                    joins.push(y);
                    label[k] = Some(y);
                }
                // a successor of the branch reached again through the other side
                Some(ly) if ly == y && lx != y && succs.contains(&y) => joins.push(y),
                _ => {}
            }
        }
    }
    joins.sort_unstable();
    joins.dedup();
    joins
}

/// Blocks whose execution the branch ending block `b` decides: reachable
/// from its successors (around loops too) without passing its immediate
/// post-dominator.
pub fn controlled_blocks(f: &FunctionIr<'_>, b: BlockId) -> Vec<BlockId> {
    f.cfg.region(&f.cfg.blocks[b].succs, f.cfg.ipdom(b))
}

/// Thread-varying sources an expression depends on, in CUDA terms
/// (`threadIdx.x`, `the lane id`, `loaded data`).
pub fn sources(f: &FunctionIr<'_>, d: &Divergence, v: ValueId) -> Vec<&'static str> {
    let mut out: Vec<&'static str> = Vec::new();
    let mut walk = crate::ir::values::Walk::new([v]);
    while let Some(x) = walk.next_value() {
        if d.vals[x].is_uniform() {
            continue;
        }
        let add = |s: &'static str, out: &mut Vec<&'static str>| {
            if !out.contains(&s) {
                out.push(s)
            }
        };
        match f.ssa.values[x] {
            ValueDef::Entry(_) => match f.ssa.special(x) {
                Some(s @ (Special::Tid(_) | Special::LaneId | Special::Clock)) => add(s.cuda_name(), &mut out),
                _ => add("a thread-dependent register", &mut out),
            },
            ValueDef::Phi(p) => {
                let ph = &f.ssa.phis[p];
                if d.sync_phi[p] != AbsVal::Bottom {
                    add("the path taken at an earlier divergent branch", &mut out);
                }
                walk.extend(ph.incoming.iter().map(|x| x.1));
            }
            ValueDef::Inst { inst, .. } => {
                let i = &f.insts[inst];
                match i.opcode {
                    Opcode::Ld | Opcode::Ldu | Opcode::Tex | Opcode::Suld => add("loaded data", &mut out),
                    Opcode::Atom => add("an atomic's result", &mut out),
                    Opcode::Shfl | Opcode::Match => add("a warp shuffle", &mut out),
                    Opcode::Call => add("a call's result", &mut out),
                    _ => {}
                }
                if !matches!(i.opcode, Opcode::Ld | Opcode::Ldu | Opcode::Atom) {
                    walk.extend(f.ssa.uses(inst).iter().copied());
                }
            }
        }
    }
    out.sort_by_key(|s| if s.starts_with("threadIdx") { 0 } else { 1 });
    out
}

#[cfg(test)]
mod tests {
    use super::{AbsVal, AbsVals};
    use crate::ir::ValueId;

    /// Each value reads back as it was given, whether the distinct ones are
    /// kept once (few distinct: an index each) or each its own (most
    /// distinct), over random values (a fixed seed).
    #[test]
    fn abstract_values_read_back_as_given() {
        let mut next = crate::xorshift(0x2545_f491_4f6c_dd1d);
        let (mut indexed, mut by_value) = (0, 0);
        for round in 0..400 {
            let n = next(300) as usize;
            let kinds = if round % 2 == 0 { 4 } else { 1_000 };
            let state: Vec<AbsVal> = (0..n + 7)
                .map(|_| match next(kinds) {
                    0 => AbsVal::Bottom,
                    1 => AbsVal::Top { data: next(2) == 0 },
                    2 => AbsVal::WarpUniform,
                    k => AbsVal::uniform(Some(k as i64)),
                })
                .collect();
            let vals = AbsVals::new(state.clone(), n);
            if vals.of.is_empty() && n > 0 {
                by_value += 1;
            } else {
                indexed += 1;
            }
            for (i, x) in state[..n].iter().enumerate() {
                assert_eq!(vals[ValueId::new(i)], *x, "value {i} of {n}");
            }
        }
        assert!(indexed > 100 && by_value > 100, "{indexed} indexed, {by_value} by value");
    }
}
