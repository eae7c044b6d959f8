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

pub mod domain;
pub mod eval;
mod transfer;
pub use transfer::name_key;

use crate::ir::inst::{Opcode, Space, Special};
use crate::ir::{FunctionIr, User, ValueDef, ValueId};
use crate::ptx::Operand;
pub use domain::{AbsVal, Coef};
use std::collections::{HashMap, HashSet, VecDeque};

/// Facts about callees that call sites need.
#[derive(Debug, Default, Clone)]
pub struct Summaries<'a> {
    /// Functions whose result depends only on their arguments (no thread
    /// ids, loads of thread-private memory, atomics, clocks; transitively).
    pub thread_invariant: HashSet<&'a str>,
    /// Functions that execute a barrier (transitively).
    pub has_barrier: HashSet<&'a str>,
    /// Functions with a body in the module.
    pub defined: HashSet<&'a str>,
}

impl<'a> Summaries<'a> {
    pub fn compute<L: crate::ir::Listing<'a>>(fns: &[L]) -> Summaries<'a> {
        let mut calls: HashMap<&str, Vec<&str>> = HashMap::new();
        let mut variant: HashSet<&str> = HashSet::new();
        let mut barrier: HashSet<&str> = HashSet::new();
        for f in fns {
            let name = f.func().name;
            for i in f.insts() {
                if let Some(t) = i.call_target() {
                    calls.entry(name).or_default().push(t);
                }
                if i.is_block_barrier() {
                    barrier.insert(name);
                }
                let thread_src = i
                    .operands()
                    .iter()
                    .any(|o| matches!(o, Operand::Reg(r) if Special::parse(r).is_some_and(|s| transfer::special(s).is_divergent())));
                if thread_src || i.lane_exchanging() || (i.opcode == Opcode::Ld && i.space == Some(Space::Local)) || i.is_indirect_call() {
                    variant.insert(name);
                }
            }
        }
        // propagate through the call graph to a fixed point
        loop {
            let mut changed = false;
            for (caller, callees) in &calls {
                for c in callees {
                    if variant.contains(c) && variant.insert(caller) {
                        changed = true;
                    }
                    if barrier.contains(c) && barrier.insert(caller) {
                        changed = true;
                    }
                }
            }
            if !changed {
                break;
            }
        }
        let thread_invariant = fns.iter().map(|f| f.func().name).filter(|n| !variant.contains(n)).collect();
        let defined = fns.iter().map(|f| f.func().name).collect();
        Summaries { thread_invariant, has_barrier: barrier, defined }
    }
}

/// A block ending in a thread-dependent branch (or guarded `ret`/`exit`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DivBranch {
    pub block: usize,
    /// The terminating instruction.
    pub inst: usize,
    /// The predicate value and whether the guard is negated (`@!%p`).
    pub cond: ValueId,
    pub negated: bool,
}

pub struct Divergence {
    pub vals: Vec<AbsVal>,
    /// Divergent branches, in the order found.
    pub branches: Vec<DivBranch>,
    /// Loops with a thread-dependent exit: ⊤, or `WarpUniform` when whole
    /// warps leave at different iterations; `Bottom` when uniform.
    pub divergent_loop: Vec<AbsVal>,
    /// Phis at joins of divergent branches, with what the merge adds
    /// (⊤, or `WarpUniform` for warp-uniform branches); `Bottom` if none.
    pub sync_phi: Vec<AbsVal>,
    def_block: Vec<u32>,
}

const NO_BLOCK: u32 = u32::MAX;

impl Divergence {
    /// Run the analysis on one function.
    pub fn analyze(f: &FunctionIr<'_>, sums: &Summaries<'_>) -> Divergence {
        let nv = f.ssa.values.len();
        let def_block: Vec<u32> = f
            .ssa
            .values
            .iter()
            .map(|d| match d {
                ValueDef::Inst { inst, .. } => f.cfg.block_of[*inst as usize] as u32,
                ValueDef::Phi(p) => f.ssa.phis[*p as usize].block as u32,
                ValueDef::Entry(_) => NO_BLOCK,
            })
            .collect();
        let mut d = Divergence {
            vals: vec![AbsVal::Bottom; nv],
            branches: vec![],
            divergent_loop: vec![AbsVal::Bottom; f.cfg.loops.len()],
            sync_phi: vec![AbsVal::Bottom; f.ssa.phis.len()],
            def_block,
        };
        // entry values first
        for (v, def) in f.ssa.values.iter().enumerate() {
            if let ValueDef::Entry(r) = def {
                d.vals[v] = f.ssa.special_reg(*r).map_or(AbsVal::uniform(None), transfer::special);
            }
        }
        let mut is_header = vec![false; f.cfg.len()];
        for l in &f.cfg.loops {
            is_header[l.header] = true;
        }
        let mut work: VecDeque<User> = VecDeque::new();
        let mut queued_inst = vec![false; f.insts.len()];
        let mut queued_phi = vec![false; f.ssa.phis.len()];
        for &b in &f.cfg.rpo {
            for &p in &f.ssa.block_phis[b] {
                work.push_back(User::Phi(p));
                queued_phi[p as usize] = true;
            }
            for i in f.cfg.blocks[b].start..f.cfg.blocks[b].end {
                work.push_back(User::Inst(i as u32));
                queued_inst[i] = true;
            }
        }
        let mut seen_branch = vec![AbsVal::Bottom; f.cfg.len()];
        // blocks whose terminating branch must be (re)examined
        let is_term: Vec<bool> =
            (0..f.insts.len()).map(|i| f.cfg.blocks[f.cfg.block_of[i]].end == i + 1 && f.insts[i].ast.guard.is_some()).collect();
        let mut dirty: Vec<usize> = (0..f.cfg.len()).collect();
        let mut is_dirty = vec![true; f.cfg.len()];
        loop {
            while let Some(u) = work.pop_front() {
                if let User::Inst(i) = u {
                    let b = f.cfg.block_of[i as usize];
                    if is_term[i as usize] && !is_dirty[b] {
                        is_dirty[b] = true;
                        dirty.push(b);
                    }
                }
                match u {
                    User::Inst(i) => {
                        queued_inst[i as usize] = false;
                        for (slot, &v) in f.ssa.defs(i as usize).iter().enumerate() {
                            // a uniform value of unknown content is named after itself
                            let nv = transfer::named(d.vals[v as usize].join(transfer::inst_value(&d, f, sums, i as usize, slot)), v);
                            if nv != d.vals[v as usize] {
                                d.vals[v as usize] = nv;
                                for &uu in &f.ssa.users[v as usize] {
                                    push(&mut work, &mut queued_inst, &mut queued_phi, uu);
                                }
                            }
                        }
                    }
                    User::Phi(p) => {
                        queued_phi[p as usize] = false;
                        let ph = &f.ssa.phis[p as usize];
                        let v = ph.value;
                        let mut nv = AbsVal::Bottom;
                        for &(pred, iv) in &ph.incoming {
                            if f.cfg.reachable(pred) {
                                nv = nv.join(d.at(f, iv, pred));
                            }
                        }
                        nv = nv.join(d.sync_phi[p as usize]);
                        // widening at loop headers: a uniform counter is named at once,
                        // before its back-edge value is known (keeps `2·s·tid` affine in s)
                        let nv = if is_header[ph.block] && nv.is_uniform() && nv != AbsVal::Bottom { AbsVal::symbol(v) } else { nv };
                        let nv = transfer::named(d.vals[v as usize].join(nv), v);
                        if nv != d.vals[v as usize] {
                            d.vals[v as usize] = nv;
                            for &uu in &f.ssa.users[v as usize] {
                                push(&mut work, &mut queued_inst, &mut queued_phi, uu);
                            }
                        }
                    }
                }
            }
            // newly divergent branches → sync dependence and loop exits
            let mut progress = false;
            let mut scan = std::mem::take(&mut dirty);
            scan.sort_unstable();
            for &b in &scan {
                is_dirty[b] = false;
            }
            for b in scan {
                if !f.cfg.reachable(b) {
                    continue;
                }
                let Some(br) = d.branch_of(f, b) else { continue };
                // what merging the paths of this branch adds: ⊤, or warp-uniform
                let kind = match d.at(f, br.cond, b) {
                    AbsVal::WarpUniform => AbsVal::WarpUniform,
                    _ => AbsVal::Top { data: false },
                };
                if seen_branch[b].join(kind) == seen_branch[b] {
                    continue;
                }
                if seen_branch[b] == AbsVal::Bottom {
                    d.branches.push(br);
                }
                seen_branch[b] = seen_branch[b].join(kind);
                progress = true;
                for j in join_blocks(f, b) {
                    for &p in &f.ssa.block_phis[j] {
                        let ph = &f.ssa.phis[p as usize];
                        let first = ph.incoming.first().map(|x| x.1);
                        let trivial = ph.incoming.iter().all(|x| Some(x.1) == first);
                        let nk = d.sync_phi[p as usize].join(kind);
                        if !trivial && nk != d.sync_phi[p as usize] {
                            d.sync_phi[p as usize] = nk;
                            push(&mut work, &mut queued_inst, &mut queued_phi, User::Phi(p));
                        }
                    }
                }
                for &l in &f.cfg.loops_containing(b) {
                    let exits_loop = f.cfg.blocks[b].succs.iter().any(|&s| !f.cfg.in_loop(s, l)) || f.cfg.blocks[b].succs.len() < 2;
                    let nk = d.divergent_loop[l].join(kind);
                    if exits_loop && nk != d.divergent_loop[l] {
                        d.divergent_loop[l] = nk;
                        // uses outside the loop now see other values (a branch
                        // using one is re-examined when its terminator is processed)
                        let lp = &f.cfg.loops[l];
                        for &lb in &lp.blocks {
                            let blk = &f.cfg.blocks[lb];
                            let phis = f.ssa.block_phis[lb].iter().map(|&p| f.ssa.phis[p as usize].value);
                            let insts = (blk.start..blk.end).flat_map(|i| f.ssa.defs(i).iter().copied());
                            for v in phis.chain(insts) {
                                for &uu in &f.ssa.users[v as usize] {
                                    let ub = match uu {
                                        User::Inst(i) => f.cfg.block_of[i as usize],
                                        User::Phi(p) => f.ssa.phis[p as usize].block,
                                    };
                                    if !f.cfg.in_loop(ub, l) || matches!(uu, User::Phi(_)) {
                                        push(&mut work, &mut queued_inst, &mut queued_phi, uu);
                                    }
                                }
                            }
                        }
                    }
                }
            }
            if !progress && work.is_empty() && dirty.is_empty() {
                break;
            }
        }
        d
    }

    /// The value of `v` as seen by a use in block `use_block`: divergent when
    /// it leaves a loop with a thread-dependent exit (temporal divergence).
    pub fn at(&self, f: &FunctionIr<'_>, v: ValueId, use_block: usize) -> AbsVal {
        let val = self.vals[v as usize];
        let db = self.def_block[v as usize];
        if db == NO_BLOCK || matches!(val, AbsVal::Top { .. }) {
            return val;
        }
        let mut l = f.cfg.loop_of[db as usize];
        while let Some(x) = l {
            if f.cfg.in_loop(use_block, x) {
                break;
            }
            if self.divergent_loop[x] != AbsVal::Bottom {
                return val.join(self.divergent_loop[x]);
            }
            l = f.cfg.loops[x].parent;
        }
        val
    }

    /// Value of a register operand read by instruction `i`.
    pub fn operand(&self, f: &FunctionIr<'_>, i: usize, o: &Operand<'_>) -> AbsVal {
        transfer::operand(self, f, i, o)
    }

    /// If block `b` ends in a thread-dependent branch, describe it.
    fn branch_of(&self, f: &FunctionIr<'_>, b: usize) -> Option<DivBranch> {
        let blk = &f.cfg.blocks[b];
        if blk.end == blk.start {
            return None;
        }
        let i = blk.end - 1;
        let inst = &f.insts[i];
        let g = inst.ast.guard?;
        if !matches!(inst.opcode, Opcode::Bra | Opcode::Brx | Opcode::Ret | Opcode::Exit) {
            return None;
        }
        let v = f.ssa.use_of(i, g.reg)?;
        if self.at(f, v, b).is_divergent() {
            Some(DivBranch { block: b, inst: i, cond: v, negated: g.negated })
        } else {
            None
        }
    }
}

fn push(work: &mut VecDeque<User>, qi: &mut [bool], qp: &mut [bool], u: User) {
    match u {
        User::Inst(i) if !qi[i as usize] => {
            qi[i as usize] = true;
            work.push_back(u);
        }
        User::Phi(p) if !qp[p as usize] => {
            qp[p as usize] = true;
            work.push_back(u);
        }
        _ => {}
    }
}

/// Join points of the branch ending block `b`: blocks reached from two
/// different successors by paths that do not go around a loop back edge
/// (the acyclic sync-dependence of Sampaio et al.), up to its immediate
/// post-dominator.
pub fn join_blocks(f: &FunctionIr<'_>, b: usize) -> Vec<usize> {
    let cfg = &f.cfg;
    let succs = &cfg.blocks[b].succs;
    if succs.len() < 2 {
        return vec![];
    }
    let stop = cfg.ipdom(b);
    let start = cfg.rpo_index[b];
    let end = stop.map(|s| cfg.rpo_index[s]).unwrap_or(cfg.rpo.len().saturating_sub(1));
    if end == usize::MAX || start == usize::MAX || end <= start {
        return vec![];
    }
    // labels indexed by RPO position relative to the branch (usize::MAX: none)
    let span = end - start + 1;
    let mut label = vec![usize::MAX; span];
    let slot = |x: usize| -> Option<usize> {
        let r = cfg.rpo_index[x];
        (r > start && r <= end).then(|| r - start)
    };
    for &s in succs {
        if let Some(k) = slot(s) {
            label[k] = s;
        }
    }
    let mut joins = Vec::new();
    for pos in start + 1..=end {
        let x = cfg.rpo[pos];
        let lx = label[pos - start];
        if lx == usize::MAX || Some(x) == stop {
            continue;
        }
        for &y in &cfg.blocks[x].succs {
            if cfg.rpo_index[y] <= pos {
                continue; // back edge
            }
            let Some(k) = slot(y) else { continue };
            let ly = label[k];
            if ly == usize::MAX {
                label[k] = lx;
            } else if ly != lx && ly != y {
                joins.push(y);
                label[k] = y;
            } else if ly == y && lx != y && succs.contains(&y) {
                // a successor of the branch reached again through the other side
                joins.push(y);
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
pub fn controlled_blocks(f: &FunctionIr<'_>, b: usize) -> Vec<usize> {
    f.cfg.region(&f.cfg.blocks[b].succs, f.cfg.ipdom(b))
}
