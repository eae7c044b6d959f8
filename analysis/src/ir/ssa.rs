//! SSA form over PTX virtual registers (Cytron et al.: phis at iterated
//! dominance frontiers of semi-pruned global names, renaming along the
//! dominator tree).
//!
//! Owns: the mapping from every register read and write to an SSA value,
//! phi nodes, and def-use chains. A guarded write (`@%p mov %r, …`) is a new
//! value that also depends on the value it may leave unchanged (`prior`).
//! Does not own: what values mean (see `crate::divergence`).

use super::cfg::Cfg;
use super::dataflow::{self, BitSet, Problem};
use super::entity::{BlockId, IdLists, InstId};
use super::inst::{Inst, Special};
use rustc_hash::FxHashMap;

pub type RegId = u32;
use super::entity::IdVec;
pub use super::entity::{PhiId, ValueId};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueDef {
    /// Written by instruction `inst` as its `slot`-th destination.
    Inst { inst: InstId, slot: u32 },
    /// A phi node.
    Phi(PhiId),
    /// The value a register has on entry (special registers such as
    /// `%tid.x`, `.reg` parameters of `.func`s, or never-written registers).
    Entry(RegId),
}

#[derive(Debug, Clone)]
pub struct Phi {
    pub block: BlockId,
    pub reg: RegId,
    pub value: ValueId,
    /// `(predecessor block, value)`
    pub incoming: Vec<(BlockId, ValueId)>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum User {
    Inst(InstId),
    Phi(PhiId),
}

pub struct Ssa<'a> {
    pub regs: Vec<&'a str>,
    pub values: IdVec<ValueId, ValueDef>,
    pub phis: IdVec<PhiId, Phi>,
    pub block_phis: IdVec<BlockId, Vec<PhiId>>,
    /// Flat per-instruction lists, indexed through `*_start`.
    use_regs: Vec<RegId>,
    use_vals: Vec<ValueId>,
    use_start: Vec<u32>,
    def_vals: Vec<ValueId>,
    def_prior: Vec<Option<ValueId>>,
    def_start: Vec<u32>,
    /// Each value's readers (`users[v]`: a slice).
    pub users: IdLists<ValueId, User>,
    /// The special register each register is, if any.
    specials: Vec<Option<Special>>,
}

/// Live-in sets of the registers that cross blocks, as one bitset per block.
struct LiveIn {
    /// Dense index of each global register (`u32::MAX` for block-local ones).
    dense: Vec<u32>,
    sets: IdVec<BlockId, BitSet>,
}

impl LiveIn {
    fn contains(&self, block: BlockId, reg: usize) -> bool {
        let d = self.dense[reg];
        d != u32::MAX && self.sets[block].contains(d as usize)
    }
}

/// Backward liveness as a dataflow problem over blocks: live-in =
/// used before written ∪ (live-out − written).
struct Liveness<'c> {
    cfg: &'c Cfg,
    gen: IdVec<BlockId, BitSet>,
    kill: IdVec<BlockId, BitSet>,
}

impl Problem for Liveness<'_> {
    type Value = BitSet;
    fn transfer(&mut self, b: usize, live_in: &[BitSet]) -> BitSet {
        let b = BlockId::new(b);
        let mut out = self.gen[b].clone();
        out.clear();
        for &s in &self.cfg.blocks[b].succs {
            out.union_with(&live_in[s.index()]);
        }
        out.subtract(&self.kill[b]);
        out.union_with(&self.gen[b]);
        out
    }
    fn join(&self, a: &BitSet, b: &BitSet) -> BitSet {
        let mut x = a.clone();
        x.union_with(b);
        x
    }
    fn dependents(&mut self, b: usize, _: &[BitSet], out: &mut Vec<usize>) {
        out.extend(self.cfg.blocks[BlockId::new(b)].preds.iter().map(|p| p.index()));
    }
}

/// Backward liveness over blocks (registers read before being written in a
/// block are used; unguarded writes kill).
fn live_in_sets(
    insts: &[Inst<'_>],
    cfg: &Cfg,
    global: &[bool],
    use_regs: &[RegId],
    use_start: &[u32],
    def_regs: &[RegId],
    def_start: &[u32],
) -> LiveIn {
    let mut dense = vec![u32::MAX; global.len()];
    let mut ng = 0usize;
    for (r, g) in global.iter().enumerate() {
        if *g {
            dense[r] = ng as u32;
            ng += 1;
        }
    }
    let nb = cfg.len();
    let mut gen: IdVec<BlockId, BitSet> = IdVec::filled(nb, BitSet::new(ng));
    let mut kill: IdVec<BlockId, BitSet> = IdVec::filled(nb, BitSet::new(ng));
    for (b, blk) in cfg.blocks.iter_enumerated() {
        for i in blk.start.index()..blk.end.index() {
            for &r in &use_regs[use_start[i] as usize..use_start[i + 1] as usize] {
                let d = dense[r as usize];
                if d != u32::MAX && !kill[b].contains(d as usize) {
                    gen[b].insert(d as usize);
                }
            }
            if insts[i].ast.guard.is_none() {
                for &r in &def_regs[def_start[i] as usize..def_start[i + 1] as usize] {
                    let d = dense[r as usize];
                    if d != u32::MAX {
                        kill[b].insert(d as usize);
                    }
                }
            }
        }
    }
    let init = gen.clone();
    // post-order: successors before predecessors
    let order: Vec<usize> = cfg.rpo.iter().rev().map(|b| b.index()).collect();
    let sets = dataflow::solve(&mut Liveness { cfg, gen, kill }, init.into_vec(), &order);
    LiveIn { dense, sets: IdVec::from_vec(sets) }
}

/// Phis at the iterated dominance frontiers of the `nr` registers'
/// names written in one block and read in another (semi-pruned global
/// names), where the register is live on entry (pruned); each phi's value
/// is the one of its own index (phis are the first values).
fn place_phis(
    insts: &[Inst<'_>],
    cfg: &Cfg,
    nr: usize,
    (use_regs, use_start): (&[RegId], &[u32]),
    (def_regs, def_start): (&[RegId], &[u32]),
) -> IdVec<PhiId, Phi> {
    let nb = cfg.len();
    let mut phis: IdVec<PhiId, Phi> = IdVec::new();
    let mut def_pairs: Vec<(RegId, BlockId)> = Vec::with_capacity(def_regs.len());
    let mut last_def: Vec<Option<BlockId>> = vec![None; nr];
    let mut global = vec![false; nr];
    let mut killed: Vec<Option<BlockId>> = vec![None; nr];
    for (b, blk) in cfg.blocks.iter_enumerated() {
        for i in blk.start.index()..blk.end.index() {
            for &r in &use_regs[use_start[i] as usize..use_start[i + 1] as usize] {
                if killed[r as usize] != Some(b) {
                    global[r as usize] = true;
                }
            }
            for &r in &def_regs[def_start[i] as usize..def_start[i + 1] as usize] {
                // a guarded write does not kill the previous value
                if insts[i].ast.guard.is_none() {
                    killed[r as usize] = Some(b);
                } else {
                    global[r as usize] = true;
                }
                if last_def[r as usize] != Some(b) {
                    last_def[r as usize] = Some(b);
                    def_pairs.push((r, b));
                }
            }
        }
    }
    let def_blocks: IdLists<RegId, BlockId> = IdLists::from_pairs(nr, &def_pairs);
    // dominance frontiers
    let mut df: IdVec<BlockId, Vec<BlockId>> = IdVec::filled(nb, Vec::new());
    for b in cfg.blocks.keys() {
        if cfg.blocks[b].preds.len() < 2 || !cfg.reachable(b) {
            continue;
        }
        let Some(idom_b) = cfg.idom(b) else { continue };
        for &p in &cfg.blocks[b].preds {
            if !cfg.reachable(p) {
                continue;
            }
            let mut runner = p;
            while runner != idom_b {
                if df[runner].last() != Some(&b) {
                    df[runner].push(b);
                }
                match cfg.idom(runner) {
                    Some(x) if x != runner => runner = x,
                    _ => break,
                }
            }
        }
    }
    let live_in = live_in_sets(insts, cfg, &global, use_regs, use_start, def_regs, def_start);
    // phi placement (pruned: only where the register is live on entry)
    let mut has_phi: IdVec<BlockId, usize> = IdVec::filled(nb, usize::MAX);
    let mut in_work: IdVec<BlockId, usize> = IdVec::filled(nb, usize::MAX);
    let mut work = Vec::new();
    for r in 0..nr {
        if !global[r] || def_blocks[r as RegId].is_empty() {
            continue;
        }
        work.clear();
        for &b in &def_blocks[r as RegId] {
            in_work[b] = r;
            work.push(b);
        }
        while let Some(x) = work.pop() {
            for &y in &df[x] {
                if has_phi[y] != r && live_in.contains(y, r) {
                    has_phi[y] = r;
                    let value = ValueId::new(phis.len());
                    phis.push(Phi { block: y, reg: r as RegId, value, incoming: Vec::new() });
                    if in_work[y] != r {
                        in_work[y] = r;
                        work.push(y);
                    }
                }
            }
        }
    }
    phis
}

impl<'a> Ssa<'a> {
    pub fn build(insts: &IdVec<InstId, Inst<'a>>, cfg: &Cfg) -> Ssa<'a> {
        let insts = insts.as_slice();
        let n = insts.len();
        let nb = cfg.len();
        // (about a register per instruction: sized once, not grown)
        let mut reg_index: FxHashMap<&'a str, RegId> = FxHashMap::with_capacity_and_hasher(n, Default::default());
        let mut regs: Vec<&'a str> = Vec::with_capacity(n);
        let mut intern = |r: &'a str, regs: &mut Vec<&'a str>| -> RegId {
            *reg_index.entry(r).or_insert_with(|| {
                regs.push(r);
                (regs.len() - 1) as RegId
            })
        };
        let mut use_regs = Vec::with_capacity(n * 2);
        let mut use_start = Vec::with_capacity(n + 1);
        let mut def_regs = Vec::with_capacity(n);
        let mut def_start = Vec::with_capacity(n + 1);
        let mut tmp = Vec::new();
        for inst in insts {
            use_start.push(use_regs.len() as u32);
            def_start.push(def_regs.len() as u32);
            inst.uses(&mut tmp);
            for r in &tmp {
                use_regs.push(intern(r, &mut regs));
            }
            inst.defs(&mut tmp);
            for r in &tmp {
                def_regs.push(intern(r, &mut regs));
            }
        }
        use_start.push(use_regs.len() as u32);
        def_start.push(def_regs.len() as u32);
        let nr = regs.len();
        let specials: Vec<Option<Special>> = regs.iter().map(|r| Special::parse(r)).collect();
        // phis go where paths join: a function with no block of two predecessors (most
        // device functions are one block) has none
        let mut phis = if cfg.blocks.iter().any(|b| b.preds.len() >= 2) {
            place_phis(insts, cfg, nr, (&use_regs, &use_start), (&def_regs, &def_start))
        } else {
            IdVec::new()
        };
        let mut values: IdVec<ValueId, ValueDef> = IdVec::with_capacity(n + phis.len() + 16);
        let mut block_phis: IdVec<BlockId, Vec<PhiId>> = IdVec::filled(nb, Vec::new());
        for (p, ph) in phis.iter_enumerated() {
            values.push(ValueDef::Phi(p));
            block_phis[ph.block].push(p);
        }
        // renaming along the dominator tree
        let mut children: IdVec<BlockId, Vec<BlockId>> = IdVec::filled(nb, Vec::new());
        for b in cfg.blocks.keys() {
            if b.index() != 0 && cfg.reachable(b) {
                if let Some(d) = cfg.idom(b) {
                    children[d].push(b);
                }
            }
        }
        let mut entry_val: Vec<Option<ValueId>> = vec![None; nr];
        // each register's stack of values, as links in one stack (pushes and pops are
        // last in, first out over all registers): the value and the register's entry below
        const BOTTOM: u32 = u32::MAX;
        let mut stacks: Vec<u32> = vec![BOTTOM; nr];
        let mut links: Vec<(ValueId, u32)> = Vec::with_capacity(def_regs.len() + phis.len());
        let mut use_vals = vec![ValueId::default(); use_regs.len()];
        let mut def_vals = vec![ValueId::default(); def_regs.len()];
        let mut def_prior = vec![None; def_regs.len()];
        let mut top = |r: RegId, stacks: &[u32], links: &[(ValueId, u32)], values: &mut IdVec<ValueId, ValueDef>| -> ValueId {
            match stacks[r as usize] {
                BOTTOM => *entry_val[r as usize].get_or_insert_with(|| values.push(ValueDef::Entry(r))),
                k => links[k as usize].0,
            }
        };
        let push = |r: RegId, v: ValueId, stacks: &mut [u32], links: &mut Vec<(ValueId, u32)>| {
            links.push((v, stacks[r as usize]));
            stacks[r as usize] = (links.len() - 1) as u32;
        };
        // (block, entered?) stack; pushed registers logged for undo
        let mut dfs: Vec<(BlockId, bool)> = vec![(BlockId::new(0), false)];
        let mut log: Vec<RegId> = Vec::new();
        let mut marks: Vec<usize> = Vec::new();
        // unreachable blocks are renamed too (from an empty state) so every use has a value
        let mut roots: Vec<BlockId> = cfg.blocks.keys().skip(1).filter(|&b| !cfg.reachable(b)).collect();
        roots.reverse();
        loop {
            let Some((b, entered)) = dfs.pop() else {
                match roots.pop() {
                    Some(r) => {
                        dfs.push((r, false));
                        continue;
                    }
                    None => break,
                }
            };
            if entered {
                let m = marks.pop().unwrap_or(0);
                while log.len() > m {
                    if let (Some(r), Some((_, below))) = (log.pop(), links.pop()) {
                        stacks[r as usize] = below;
                    }
                }
                continue;
            }
            marks.push(log.len());
            dfs.push((b, true));
            for &p in &block_phis[b] {
                let ph = &phis[p];
                push(ph.reg, ph.value, &mut stacks, &mut links);
                log.push(ph.reg);
            }
            let blk = &cfg.blocks[b];
            for i in blk.start.index()..blk.end.index() {
                for k in use_start[i] as usize..use_start[i + 1] as usize {
                    use_vals[k] = top(use_regs[k], &stacks, &links, &mut values);
                }
                for k in def_start[i] as usize..def_start[i + 1] as usize {
                    let r = def_regs[k];
                    if insts[i].ast.guard.is_some() {
                        def_prior[k] = Some(top(r, &stacks, &links, &mut values));
                    }
                    let v = values.push(ValueDef::Inst { inst: InstId::new(i), slot: (k - def_start[i] as usize) as u32 });
                    def_vals[k] = v;
                    push(r, v, &mut stacks, &mut links);
                    log.push(r);
                }
            }
            for &s in &blk.succs {
                for &p in &block_phis[s] {
                    let r = phis[p].reg;
                    let v = top(r, &stacks, &links, &mut values);
                    phis[p].incoming.push((b, v));
                }
            }
            if cfg.reachable(b) {
                for &c in children[b].iter().rev() {
                    dfs.push((c, false));
                }
            }
        }
        // users: an instruction once per value it reads (and once more per guarded write
        // that keeps it), then the phis
        let mut user_pairs: Vec<(ValueId, User)> = Vec::with_capacity(use_vals.len() + phis.len());
        let mut last_user: IdVec<ValueId, u32> = IdVec::filled(values.len(), u32::MAX);
        for i in 0..n {
            for &v in &use_vals[use_start[i] as usize..use_start[i + 1] as usize] {
                if last_user[v] != i as u32 {
                    last_user[v] = i as u32;
                    user_pairs.push((v, User::Inst(InstId::new(i))));
                }
            }
            for p in def_prior[def_start[i] as usize..def_start[i + 1] as usize].iter().flatten() {
                last_user[*p] = i as u32;
                user_pairs.push((*p, User::Inst(InstId::new(i))));
            }
        }
        for (pi, p) in phis.iter_enumerated() {
            for &(_, v) in &p.incoming {
                user_pairs.push((v, User::Phi(pi)));
            }
        }
        let users = IdLists::from_pairs(values.len(), &user_pairs);
        regs.shrink_to_fit();
        Ssa { regs, values, phis, block_phis, use_regs, use_vals, use_start, def_vals, def_prior, def_start, users, specials }
    }

    /// SSA value read by instruction `inst` for register `reg` (by name).
    pub fn use_of(&self, inst: InstId, reg: &str) -> Option<ValueId> {
        let inst = inst.index();
        let (s, e) = (self.use_start[inst] as usize, self.use_start[inst + 1] as usize);
        (s..e).find(|&k| self.regs[self.use_regs[k] as usize] == reg).map(|k| self.use_vals[k])
    }

    /// Values read by instruction `inst` (guard first, then operands in order).
    pub fn uses(&self, inst: InstId) -> &[ValueId] {
        let inst = inst.index();
        &self.use_vals[self.use_start[inst] as usize..self.use_start[inst + 1] as usize]
    }

    /// Values written by instruction `inst`, in destination order.
    pub fn defs(&self, inst: InstId) -> &[ValueId] {
        let inst = inst.index();
        &self.def_vals[self.def_start[inst] as usize..self.def_start[inst + 1] as usize]
    }

    /// For a guarded write: the value the register keeps when the guard is false.
    pub fn prior(&self, inst: InstId, slot: usize) -> Option<ValueId> {
        self.def_prior.get(self.def_start[inst.index()] as usize + slot).copied().flatten()
    }

    /// The special register (`%tid.x`, `%ctaid.y`…) an entry value holds.
    pub fn special(&self, v: ValueId) -> Option<Special> {
        match self.values[v] {
            ValueDef::Entry(r) => self.specials[r as usize],
            _ => None,
        }
    }

    /// The special register a register name denotes, if it is one read by this function.
    pub fn special_reg(&self, r: RegId) -> Option<Special> {
        self.specials[r as usize]
    }

    /// Register of an SSA value.
    pub fn reg_of(&self, v: ValueId, insts: &IdVec<InstId, Inst<'a>>) -> &'a str {
        match self.values[v] {
            ValueDef::Entry(r) => self.regs[r as usize],
            ValueDef::Phi(p) => self.regs[self.phis[p].reg as usize],
            ValueDef::Inst { inst, slot } => {
                let mut tmp = Vec::new();
                insts[inst].defs(&mut tmp);
                tmp.get(slot as usize).copied().unwrap_or("?")
            }
        }
    }
}
