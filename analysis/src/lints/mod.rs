//! Lint passes and the `Finding` they produce.
//!
//! Owns: the finding type (message, spans, notes, metrics), the per-function
//! context passes share (`Ctx`), and the list of passes. Each lint's logic
//! lives in its own module; metadata in `registry`. Does not own: levels
//! from configuration or rendering (the binary).

mod barrier_divergence;
mod data_dependent_access;
mod divergent_branch;
mod global_memory_race;
pub mod registry;
mod shared_bank_conflict;
mod shared_memory_opportunity;
mod shared_memory_race;
mod uncoalesced_global_access;
pub mod warps;

use crate::divergence::{Divergence, Summaries};
use crate::ir::FunctionIr;
use crate::srcmap::{Resolved, SourceMap, SrcPos};
pub use registry::{Level, Lint, LINTS};
pub use warps::Shape;

#[derive(Clone, Debug, PartialEq)]
pub enum Metric {
    Int(i64),
    Float(f64),
    Text(String),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NoteKind {
    Note,
    Help,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Note {
    pub kind: NoteKind,
    pub text: String,
}

/// One diagnostic, before levels are applied.
#[derive(Clone, Debug)]
pub struct Finding {
    pub lint: &'static Lint,
    pub kernel: String,
    pub ptx_line: u32,
    pub ptx_col: u32,
    /// Where to report in Rust (innermost frame in the package).
    pub span: Option<SrcPos>,
    /// Label under the primary span.
    pub label: String,
    pub message: String,
    /// Other source positions with labels (e.g. the branch causing a barrier divergence).
    pub secondary: Vec<(SrcPos, String)>,
    pub notes: Vec<Note>,
    /// Numbers behind the message (`diverging_warps`, `warps_per_block`, …).
    pub metrics: Vec<(&'static str, Metric)>,
}

impl Finding {
    pub fn note(&mut self, t: impl Into<String>) {
        self.notes.push(Note { kind: NoteKind::Note, text: t.into() });
    }
    pub fn help(&mut self, t: impl Into<String>) {
        self.notes.push(Note { kind: NoteKind::Help, text: t.into() });
    }
}

/// Everything a pass needs for one function.
pub struct Ctx<'c, 'a> {
    pub f: &'c FunctionIr<'a>,
    pub d: &'c Divergence,
    pub sums: &'c Summaries<'a>,
    pub shape: &'c Shape,
    pub srcmap: &'c SourceMap<'a>,
    pub is_local: &'c crate::IsLocal<'c>,
    /// Classification of each divergent branch (by block), computed once.
    pub classified: std::cell::RefCell<std::collections::HashMap<usize, warps::Split>>,
    /// Blocks each divergent branch controls, computed once.
    controlled: std::cell::OnceCell<Vec<(crate::divergence::DivBranch, Vec<usize>)>>,
    /// Memory accesses with their predictions, computed once.
    memory: std::cell::OnceCell<Vec<(crate::memory::Access, Option<crate::memory::Prediction>)>>,
    /// `predicted / ideal` sectors at or above which a global access is reported.
    pub coalescing_threshold: f64,
    /// Races between the accesses of `memory`, computed once.
    races: std::cell::OnceCell<Vec<crate::races::Race>>,
    /// Side regions of each divergent branch (see `sides`).
    sides: std::cell::RefCell<std::collections::HashMap<usize, std::rc::Rc<(Vec<usize>, Vec<usize>)>>>,
    /// Divergent branches (indices into `controlled`) controlling each block.
    controllers: std::cell::OnceCell<Vec<Vec<usize>>>,
    /// Thread directions of each divergent branch per iteration (`None`: not evaluable).
    conditions: std::cell::RefCell<std::collections::HashMap<(usize, usize), Option<std::rc::Rc<Vec<bool>>>>>,
    /// Active lanes per (block, iteration), computed once each.
    lanes: std::cell::RefCell<std::collections::HashMap<(usize, usize), std::rc::Rc<Vec<bool>>>>,
}

impl<'c, 'a> Ctx<'c, 'a> {
    pub fn new(
        f: &'c FunctionIr<'a>,
        d: &'c Divergence,
        sums: &'c Summaries<'a>,
        shape: &'c Shape,
        srcmap: &'c SourceMap<'a>,
        is_local: &'c crate::IsLocal<'c>,
    ) -> Self {
        Ctx {
            f,
            d,
            sums,
            shape,
            srcmap,
            is_local,
            classified: Default::default(),
            controlled: Default::default(),
            memory: Default::default(),
            coalescing_threshold: 2.0,
            races: Default::default(),
            lanes: Default::default(),
            controllers: Default::default(),
            conditions: Default::default(),
            sides: Default::default(),
        }
    }

    /// Which threads take divergent branch `br` in the given iteration of
    /// its loops (`None`: not evaluable), memoised.
    fn direction(&self, br: &crate::divergence::DivBranch, iteration: usize) -> Option<std::rc::Rc<Vec<bool>>> {
        self.conditions
            .borrow_mut()
            .entry((br.block, iteration))
            .or_insert_with(|| {
                crate::memory::evaluate_at(self.f, self.d, self.shape, self.shape.lanes(), br.cond, 0, None, iteration)
                    .map(|c| std::rc::Rc::new(c.iter().map(|c| (*c != 0) != br.negated).collect()))
            })
            .clone()
    }

    /// For divergent branch `k` (as in `controlled`): the blocks reachable
    /// from its taken side and from its other side without passing its
    /// immediate post-dominator, sorted (computed on first use).
    fn side(&self, k: usize) -> std::rc::Rc<(Vec<usize>, Vec<usize>)> {
        if let Some(x) = self.sides.borrow().get(&k) {
            return x.clone();
        }
        let cfg = &self.f.cfg;
        let br = &self.d.branches[k];
        let stop = cfg.ipdom(br.block);
        let target = barrier_divergence::branch_target(self, br.inst);
        let taken: Vec<usize> = target.into_iter().collect();
        let fall: Vec<usize> = cfg.blocks[br.block].succs.iter().copied().filter(|&s| Some(s) != target).collect();
        let x = std::rc::Rc::new((cfg.region(&taken, stop), cfg.region(&fall, stop)));
        self.sides.borrow_mut().insert(k, x.clone());
        x
    }

    /// Each divergent branch with the blocks it controls.
    pub fn controlled(&self) -> &[(crate::divergence::DivBranch, Vec<usize>)] {
        self.controlled
            .get_or_init(|| self.d.branches.iter().map(|br| (*br, crate::divergence::controlled_blocks(self.f, br.block))).collect())
    }

    /// Threads of the block that execute block `b`, as far as thread-only
    /// branch conditions tell (loop exits and unknown conditions do not
    /// restrict).
    pub fn active_lanes(&self, b: usize) -> Vec<bool> {
        self.active_lanes_at(b, 0)
    }

    /// [`Self::active_lanes`] with loop counters at their `iteration`-th value.
    pub fn active_lanes_at(&self, b: usize, iteration: usize) -> Vec<bool> {
        if let Some(v) = self.lanes.borrow().get(&(b, iteration)) {
            return v.as_ref().clone();
        }
        let v = self.compute_active_lanes(b, iteration);
        self.lanes.borrow_mut().insert((b, iteration), std::rc::Rc::new(v.clone()));
        v
    }

    fn compute_active_lanes(&self, b: usize, iteration: usize) -> Vec<bool> {
        let cfg = &self.f.cfg;
        let mut active = vec![true; self.shape.threads()];
        let controllers = self.controllers.get_or_init(|| {
            // only branches whose condition can be evaluated restrict the lanes
            let mut by_block: Vec<Vec<usize>> = vec![Vec::new(); cfg.len()];
            for (k, br) in self.d.branches.iter().enumerate() {
                if self.direction(br, 0).is_none() && self.direction(br, 1).is_none() {
                    continue;
                }
                for x in crate::divergence::controlled_blocks(self.f, br.block) {
                    by_block[x].push(k);
                }
            }
            by_block
        });
        for &k in &controllers[b] {
            let br = &self.d.branches[k];
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
            // the first iteration of every loop, as the address predictions use
            let Some(taken) = self.direction(br, iteration) else { continue };
            let sides = self.side(k);
            let (taken_region, fall_region) = sides.as_ref();
            let taken_side = taken_region.binary_search(&b).is_ok();
            let fall_side = fall_region.binary_search(&b).is_ok();
            match (taken_side, fall_side) {
                (true, false) => active.iter_mut().zip(taken.iter()).for_each(|(a, t)| *a &= *t),
                (false, true) => active.iter_mut().zip(taken.iter()).for_each(|(a, t)| *a &= !*t),
                _ => {}
            }
        }
        active
    }

    /// Pairs of accesses that race (empty for irreducible control flow,
    /// which the interval computation does not support).
    pub fn races(&self) -> &[crate::races::Race] {
        self.races.get_or_init(|| {
            let f = self.f;
            if f.cfg.irreducible {
                return vec![];
            }
            let accs: Vec<crate::memory::Access> = self.memory().iter().map(|(a, _)| a.clone()).collect();
            let calls = |i: usize| f.insts[i].call_target().is_some_and(|t| self.sums.has_barrier.contains(t));
            let intervals = crate::races::intervals(f, &accs, &calls);
            let roots: Vec<Option<crate::ir::ValueId>> = accs.iter().map(|a| a.addr_value.map(|v| crate::memory::root(f, v))).collect();
            let mut pairs = Vec::new();
            for (ka, set) in intervals.iter().enumerate() {
                for &kb in set.iter().filter(|&&kb| kb >= ka) {
                    let (a, b) = (&accs[ka], &accs[kb]);
                    let writes = |x: &crate::memory::Access| x.kind != crate::memory::AccessKind::Load;
                    let possible = (writes(a) || writes(b))
                        && !(a.kind == crate::memory::AccessKind::Atomic && b.kind == crate::memory::AccessKind::Atomic)
                        && a.space == b.space;
                    if possible && roots[ka].is_some() && roots[ka] == roots[kb] {
                        pairs.push((ka, kb));
                    }
                }
            }
            let found = self.races_at(&accs, &pairs, self.shape);
            if !self.shape.is_assumed() || found.is_empty() {
                return found;
            }
            // an assumed shape may be wrong: keep only races that persist in
            // small blocks too (code written for 16-wide blocks would
            // otherwise show races between rows that never exist)
            let uses_y = self.shape.block[1] > 1 || self.shape.block[2] > 1;
            let candidates: &[[u32; 3]] = if uses_y { &[[16, 16, 1], [8, 8, 1]] } else { &[[32, 1, 1], [16, 1, 1]] };
            let mut kept: Vec<crate::races::Race> = found;
            for c in candidates {
                let shape = Shape::new(*c, "assumed");
                let remaining: Vec<(usize, usize)> = kept.iter().map(|r| (r.first, r.second)).collect();
                let again = self.races_at(&accs, &remaining, &shape);
                kept.retain(|r| again.iter().any(|x| (x.first, x.second) == (r.first, r.second)));
            }
            kept
        })
    }

    /// Races among `pairs` of accesses for one block shape.
    fn races_at(&self, accs: &[crate::memory::Access], pairs: &[(usize, usize)], shape: &Shape) -> Vec<crate::races::Race> {
        let f = self.f;
        let lanes = shape.lanes();
        let needed: std::collections::BTreeSet<usize> = pairs.iter().flat_map(|p| [p.0, p.1]).collect();
        // one evaluator per iteration, shared by every access of the function
        let mut evs: Vec<crate::divergence::eval::Evaluator> = (0..2)
            .map(|it| {
                let mut ev = crate::divergence::eval::Evaluator::new(f, self.d, shape.block, lanes.to_vec());
                ev.first_iteration = it == 0;
                ev
            })
            .collect();
        let addrs: Vec<Option<crate::races::Addresses>> = accs
            .iter()
            .enumerate()
            .map(|(k, a)| {
                if !needed.contains(&k) {
                    return None;
                }
                let v = a.addr_value?;
                let b = f.cfg.block_of[a.inst];
                let per_iteration: crate::races::Addresses = (0..2)
                    .map(|it| {
                        let vals = crate::memory::evaluate_with(&mut evs[it], v, 0, Some(crate::memory::SCALAR_SAMPLE), it)?;
                        let active = if std::ptr::eq(shape, self.shape) { self.active_lanes_at(b, it) } else { vec![true; lanes.len()] };
                        let per_thread: Vec<Option<i64>> = vals.iter().zip(active).map(|(x, on)| on.then_some(x + a.offset)).collect();
                        Some(crate::races::sorted(&per_thread))
                    })
                    .collect();
                per_iteration.iter().any(|x| x.is_some()).then_some(per_iteration)
            })
            .collect();
        pairs.iter().filter_map(|&(ka, kb)| crate::races::conflict(accs, &addrs, ka, kb)).collect()
    }

    /// Global and shared accesses with their predicted cost.
    pub fn memory(&self) -> &[(crate::memory::Access, Option<crate::memory::Prediction>)] {
        self.memory.get_or_init(|| {
            let mut masks: std::collections::HashMap<usize, Vec<bool>> = Default::default();
            crate::memory::accesses(self.f, self.d)
                .into_iter()
                .map(|a| {
                    let b = self.f.cfg.block_of[a.inst];
                    let mask = masks.entry(b).or_insert_with(|| self.active_lanes(b));
                    let p = crate::memory::predict(self.f, self.d, &a, self.shape, mask);
                    (a, p)
                })
                .collect()
        })
    }

    /// How many warps the branch splits (memoised).
    pub fn classify(&self, br: &crate::divergence::DivBranch) -> warps::Split {
        if let Some(s) = self.classified.borrow().get(&br.block) {
            return s.clone();
        }
        let s = warps::classify(self.f, self.d, br, self.shape);
        self.classified.borrow_mut().insert(br.block, s.clone());
        s
    }
}

impl Ctx<'_, '_> {
    pub fn resolve(&self, i: usize) -> Resolved {
        self.srcmap.resolve(self.f, i, self.is_local)
    }

    /// A finding at instruction `i` with the position notes filled in.
    pub fn finding(&self, lint: &'static Lint, i: usize, message: String, label: String) -> Finding {
        let r = self.resolve(i);
        let inst = self.f.insts[i].ast;
        let mut fd = Finding {
            lint,
            kernel: crate::demangle(self.f.func.name),
            ptx_line: inst.pos.line,
            ptx_col: inst.pos.col,
            span: r.primary.clone(),
            label,
            message,
            secondary: vec![],
            notes: vec![],
            metrics: vec![],
        };
        if let Some(p) = &r.primary {
            for fr in r.frames.iter().skip_while(|x| *x != p).skip(1) {
                fd.note(format!("inlined into {fr}"));
            }
            let inner: Vec<&SrcPos> = r.frames.iter().take_while(|x| *x != p).collect();
            if let Some(first) = inner.first() {
                fd.note(format!("the instruction comes from {first}, inlined here"));
            }
        }
        if r.approximate {
            fd.note("no inline information in the PTX: this is the nearest line of the package before the instruction");
        }
        fd
    }

    pub fn shape_note(&self, fd: &mut Finding) {
        let [x, y, z] = self.shape.block;
        if self.shape.is_assumed() {
            fd.note(format!(
                "no block shape given for `{}`: assumed {x}×{y}×{z} (blockDim.x a multiple of 32); set `block = [x, y, z]` under `[package.metadata.gpucheck]` or pass `--block`",
                crate::demangle(self.f.func.name)
            ));
        } else {
            fd.note(format!("block shape {x}×{y}×{z} from {}", self.shape.source));
        }
    }
}

/// Run every pass on one function.
pub fn run(ctx: &Ctx<'_, '_>) -> Vec<Finding> {
    let mut out = Vec::new();
    divergent_branch::check(ctx, &mut out);
    barrier_divergence::check(ctx, &mut out);
    uncoalesced_global_access::check(ctx, &mut out);
    shared_bank_conflict::check(ctx, &mut out);
    data_dependent_access::check(ctx, &mut out);
    shared_memory_race::check(ctx, &mut out);
    global_memory_race::check(ctx, &mut out);
    shared_memory_opportunity::check(ctx, &mut out);
    out
}
