//! Concrete evaluation of thread-dependent integer and predicate
//! expressions for every thread of a block at once, for exact warp counts
//! where the affine form is not enough (`tid % 2 == 0`, `tid & 31`,
//! `t % (2*s)` with `s` a loop counter).
//!
//! Each operation is computed with the one scalar semantics
//! (`crate::ir::scalar::apply`), lane by lane, on the register bits, so the
//! width and signedness are exactly PTX's; a value affine in the thread's
//! coordinates (`%tid.x`, `4 * tid.x + base`) is kept as that form, which
//! the operations that keep it compute at once where no lane's value wraps
//! (`crate::ir::scalar::Prepared::apply_affine`), and made a list only when
//! a caller or another operation takes it apart. Each SSA value is evaluated once
//! per leaf assignment, as a vector over the evaluator's threads (a prefix
//! of the block's), kept as one lane when it is the same in every thread
//! (over such sources, computed once); not at all where an evaluator of
//! the first iteration or of no samples, linked to this one, has it
//! already and it cannot differ here; the special registers and the
//! uniform values once for every evaluator over the same threads,
//! `SameThreads`, with the per-thread lists they keep, each once while
//! some kept value holds it. A new assignment of the leaves keeps the
//! values that rest on none of those it changes. Uniform values
//! that are not constants are *leaves*: the caller supplies sample values
//! for them or evaluation stops with `EvalErr::Leaf`.
//!
//! Loop counters (`crate::ir::loops`) evaluate at an asked iteration when
//! they are additive (stepped on from the latest iteration an evaluator
//! over the same threads computed from the same start and step: a trip
//! count asks the iterations in turn), else as leaves whose first values
//! (`samples`) the caller may try.
//!
//! Owns: the per-lane evaluation and its leaves. Does not own: what an
//! operation computes (`crate::ir::scalar`), which values are loop counters
//! (`crate::ir::loops`), choosing samples or counting warps.

use super::Divergence;
use crate::ir::inst::Opcode;
use crate::ir::inst::Special;
use crate::ir::scalar::{self, ThreadPos};
use crate::ir::InstId;
use crate::ir::{FunctionIr, ValueDef, ValueId};
use crate::ptx::Operand;
use rustc_hash::FxHashMap;
use std::cell::RefCell;
use std::rc::Rc;

pub use crate::model::Lane;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EvalErr {
    /// A uniform value of unknown content that needs a sample.
    Leaf(ValueId),
    /// Data-dependent or unsupported: no evaluation possible.
    Opaque,
}

/// The sampled leaves a value was computed from (sorted, each once): the
/// uniform values a caller gave a sample rather than a value the kernel,
/// the query or the memory model fixes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Leaves(Option<Rc<Vec<ValueId>>>);

impl Leaves {
    /// None.
    pub fn none() -> Leaves {
        Leaves(None)
    }

    /// One leaf.
    pub fn one(v: ValueId) -> Leaves {
        Leaves(Some(Rc::new(vec![v])))
    }

    /// These leaves.
    pub fn of(mut vs: Vec<ValueId>) -> Leaves {
        vs.sort_unstable();
        vs.dedup();
        Leaves((!vs.is_empty()).then(|| Rc::new(vs)))
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_none()
    }

    /// Both sets, each leaf once.
    pub fn union(&self, o: &Leaves) -> Leaves {
        match (&self.0, &o.0) {
            (None, _) => o.clone(),
            (_, None) => self.clone(),
            (Some(a), Some(b)) if Rc::ptr_eq(a, b) => self.clone(),
            // (one within the other, as most are, equal ones too: the larger, not a new list)
            (Some(a), Some(b)) if a.len() >= b.len() && b.iter().all(|x| a.binary_search(x).is_ok()) => self.clone(),
            (Some(a), Some(b)) if a.len() < b.len() && a.iter().all(|x| b.binary_search(x).is_ok()) => o.clone(),
            (Some(a), Some(b)) => {
                let mut v: Vec<ValueId> = a.iter().chain(b.iter()).copied().collect();
                v.sort_unstable();
                v.dedup();
                Leaves(Some(Rc::new(v)))
            }
        }
    }

    pub fn iter(&self) -> impl Iterator<Item = ValueId> + '_ {
        self.0.iter().flat_map(|x| x.iter().copied())
    }
}

/// What the evaluators over one set of threads (of one block and grid
/// shape) compute once for all of them ([`Evaluator::share_threads`]):
/// the special registers' values (`%tid.x`, `%laneid`…), and the uniform
/// values by their value, as kept (one lane) and as given to callers
/// (every lane): found without hashing a list, and made without
/// allocating one for every value that is the same in every thread.
#[derive(Clone, Default)]
pub struct SameThreads(Rc<RefCell<Same>>);

#[derive(Default)]
struct Same {
    specials: FxHashMap<Special, Option<Vals>>,
    ones: FxHashMap<i64, Rc<Vec<i64>>>,
    splats: FxHashMap<i64, Rc<Vec<i64>>>,
    /// The per-thread value lists the evaluators keep, each once: a large
    /// function computes the same few lists (`t & 4`, `t < 16`) in
    /// thousands of values, and its evaluators (of other samples, of the
    /// first iteration) many of the same.
    lists: crate::ir::entity::Shared<Rc<Vec<i64>>>,
    /// The per-thread directions of the branches split exactly, each once
    /// ([`Evaluator::kept_directions`]).
    directions: crate::ir::entity::Shared<Rc<[bool]>>,
    /// Stepped loop counters at the latest iteration computed, by counter
    /// and the lists of its start and step ([`Evaluator::induction`]): an
    /// evaluator of iteration `n` steps the counter on from an earlier
    /// iteration's value rather than from its start again (a trip count
    /// asks every iteration in turn).
    counters: FxHashMap<(ValueId, *const Vec<i64>, *const Vec<i64>), Steps>,
    /// Each dimension's lowest and highest coordinate of the threads.
    bounds: Option<[(i64, i64); 3]>,
}

impl Same {
    /// `k` in every lane: one list for each value.
    fn one(&mut self, k: i64) -> Rc<Vec<i64>> {
        self.ones.entry(k).or_insert_with(|| Rc::new(vec![k])).clone()
    }

    /// The lanes an operation computed, kept as one when they are all the same.
    fn kept(&mut self, out: Vec<i64>) -> Rc<Vec<i64>> {
        match out.split_first() {
            Some((&k, rest)) if rest.iter().all(|&x| x == k) => self.one(k),
            _ => Rc::new(out),
        }
    }
}

/// A counter's value at the latest iteration computed from one start and
/// step (both kept, so that the lists the key points at stay theirs; only
/// the latest, so that a list per iteration is not: the iterations are asked
/// in order, and one asked before the latest is stepped from the start).
struct Steps {
    start: Rc<Vec<i64>>,
    step: Rc<Vec<i64>>,
    latest: (usize, Rc<Vec<i64>>),
}

impl Steps {
    /// Whether a value other than these steps still holds their start.
    fn start_held(&self) -> bool {
        let own = [&self.start, &self.step, &self.latest.1].into_iter().filter(|x| Rc::ptr_eq(x, &self.start)).count();
        Rc::strong_count(&self.start) > own
    }
}

/// The values an evaluator computed (or failed to), by SSA value.
type Cache = Rc<RefCell<rustc_hash::FxHashMap<ValueId, Result<Vals, EvalErr>>>>;

/// A value in every lane, with the sampled leaves it was computed from.
/// A value the same in every lane (most of a kernel's values) is kept as
/// that one lane: an instruction over such sources is computed once, and
/// one over others takes it in every lane
/// ([`crate::ir::scalar::Prepared::apply_lanes`]); a value affine in the
/// thread's coordinates (`%tid.x`, `4 * tid.x + base`) as that form, which
/// the operations that keep it compute at once
/// ([`crate::ir::scalar::Prepared::apply_affine`]), made a list only when
/// a caller or another operation takes it apart ([`Evaluator::list`]);
/// only the evaluator's callers get it spread over every lane
/// ([`Evaluator::values`]).
#[derive(Clone, Debug)]
struct Vals {
    form: Form,
    leaves: Leaves,
}

#[derive(Clone, Debug)]
enum Form {
    /// One value per lane, or the one value of every lane.
    Lanes(Rc<Vec<i64>>),
    /// Affine in the lane's coordinates, not the same in every lane.
    Affine(Rc<AffineVals>),
}

/// An affine value, and its list once made (held as a computed list is:
/// while a kept value holds it).
#[derive(Debug)]
struct AffineVals {
    form: scalar::Affine,
    list: std::cell::OnceCell<Rc<Vec<i64>>>,
}

impl Vals {
    /// Every lane holds the same value: that value.
    fn one_value(&self) -> Option<i64> {
        match &self.form {
            Form::Lanes(l) if l.len() == 1 => Some(l[0]),
            _ => None,
        }
    }

    /// The value as an affine form, when it is one (one the same in every
    /// lane is too).
    fn affine(&self) -> Option<scalar::Affine> {
        match &self.form {
            Form::Affine(a) => Some(a.form),
            Form::Lanes(_) => self.one_value().map(scalar::Affine::uniform),
        }
    }
}

/// Lane `t`'s value in a list of every lane's, or of one for all.
fn at(lanes: &[i64], t: usize) -> i64 {
    lanes[if lanes.len() == 1 { 0 } else { t }]
}

pub struct Evaluator<'f, 'a> {
    pub f: &'f FunctionIr<'a>,
    pub d: &'f Divergence,
    /// Block dimensions (`%ntid`).
    pub ntid: [i64; 3],
    /// Grid dimensions (`%nctaid`), when the launch is known.
    pub nctaid: Option<[u32; 3]>,
    lanes: &'f [Lane],
    /// Values of uniform leaves, with the sampled leaves each rests on
    /// (itself for a sample; a loop counter's value at an iteration rests
    /// on its start's and step's).
    leaves: FxHashMap<ValueId, (i64, Leaves)>,
    /// Parameters of a call context with their callers' values per thread
    /// (`lanes` is a prefix of the block's threads, as every evaluator's is).
    bound: FxHashMap<ValueId, Vals>,
    cache: Cache,
    /// The values of the same threads' evaluator of the loops' first
    /// iteration, and those computed from a loop header's phi (the others
    /// are the same in every iteration: [`Self::outside_loops`]).
    first: Option<(Cache, Rc<crate::ir::dataflow::BitSet>)>,
    /// The values of the same threads' evaluator that gives parameters no
    /// sample: those it computed are this one's too, but for the few that
    /// rest on a sample of a loop counter ([`Self::unsampled`]).
    unsampled: Option<Cache>,
    /// The values of the same threads' evaluator that gives parameter `.1`
    /// the sample this one pins it away from: those that do not rest on
    /// that sample are this one's too ([`Self::unpinned`]).
    unpinned: Option<(Cache, ValueId)>,
    /// The special registers' values and the uniform lists over `lanes`.
    same: SameThreads,
    /// Evaluate loop-header phis as in the first iteration (their value
    /// from outside the loop) instead of giving up on them.
    pub first_iteration: bool,
    /// Evaluate loop-header phis that step by a loop-invariant amount
    /// (`p = phi(p0, p + s)`: counters, pointers walked along an array) at
    /// this iteration of their loop (1: the second).
    pub iteration: Option<usize>,
    /// Compute values that depend on data too, from their sources (which
    /// must then be bound: [`Self::bind`]).
    pub through_data: bool,
}

/// The most source operands of an instruction the evaluator computes.
const MAX_SOURCES: usize = 5;

/// How deep the evaluation of one value recurses (a guard for the stack,
/// not a walk: each value is computed once and cached).
const MAX_DEPTH: u32 = 48;

impl<'f, 'a> Evaluator<'f, 'a> {
    /// An evaluator over the given threads.
    pub fn new(f: &'f FunctionIr<'a>, d: &'f Divergence, ntid: [u32; 3], lanes: &'f [Lane]) -> Self {
        let mut ev = Evaluator {
            bound: FxHashMap::default(),
            f,
            d,
            ntid: ntid.map(|x| x as i64),
            nctaid: None,
            lanes,
            leaves: FxHashMap::default(),
            cache: Default::default(),
            first: None,
            unsampled: None,
            unpinned: None,
            same: SameThreads::default(),
            first_iteration: false,
            iteration: None,
            through_data: false,
        };
        // (kept as every other value is: one lane when the same in every thread)
        ev.bound = d
            .call
            .values
            .iter()
            .filter_map(|(v, a)| {
                a.lanes.as_ref().filter(|x| x.len() >= lanes.len()).map(|x| (*v, ev.widen(x[..lanes.len()].to_vec(), Leaves::none())))
            })
            .collect();
        ev
    }

    /// Replace the sample values of uniform leaves.
    ///
    /// The values computed stay where the samples they rest on are given
    /// the same values again (an assignment explored after another that
    /// differs in one leaf recomputes only what rests on that leaf), when
    /// every leaf had been given a sample of its own (a leaf's value
    /// resting on others, or on nothing, is not among the values' leaves).
    pub fn set_leaves(&mut self, leaves: impl IntoIterator<Item = (ValueId, i64)>) {
        let new: FxHashMap<ValueId, (i64, Leaves)> = leaves.into_iter().map(|(v, x)| (v, (x, Leaves::one(v)))).collect();
        let old = std::mem::replace(&mut self.leaves, new);
        if old.iter().all(|(v, (_, on))| *on == Leaves::one(*v)) {
            let kept = |l: ValueId| old.get(&l).map(|x| x.0).is_some_and(|x| self.leaves.get(&l).map(|y| y.0) == Some(x));
            self.cache.borrow_mut().retain(|_, r| r.as_ref().is_ok_and(|x| x.leaves.iter().all(kept)));
        } else {
            self.cache.borrow_mut().clear();
        }
        self.drop_lists();
    }

    /// Whether `v`'s values are computed and kept.
    #[cfg(test)]
    fn computed(&self, v: ValueId) -> bool {
        self.cache.borrow().get(&v).is_some_and(|r| r.is_ok())
    }

    /// Give one more leaf a sample. Values already computed stay: they did
    /// not need it (only the failures that asked for a leaf are dropped).
    pub fn add_leaf(&mut self, v: ValueId, value: i64) {
        self.add_leaf_resting_on(v, value, Leaves::one(v));
    }

    /// Give one more leaf a value that rests on the sampled leaves `on`
    /// (none: a value the kernel or the query fixes).
    pub fn add_leaf_resting_on(&mut self, v: ValueId, value: i64, on: Leaves) {
        self.leaves.insert(v, (value, on));
        self.cache.borrow_mut().retain(|_, r| r.is_ok());
    }

    /// Give `v` one value in every thread, whatever computes it (a value
    /// the caller fixes: a comparison taken as false); clears the values
    /// computed.
    pub fn bind(&mut self, v: ValueId, k: i64) {
        self.bound.insert(v, self.splat(k));
        self.cache.borrow_mut().clear();
        self.drop_lists();
    }

    /// The value given to a leaf, if any.
    pub fn leaf(&self, v: ValueId) -> Option<i64> {
        self.leaves.get(&v).map(|x| x.0)
    }

    /// Values of `v` for every thread.
    pub fn values(&self, v: ValueId) -> Result<Rc<Vec<i64>>, EvalErr> {
        self.value_d(v, 0).map(|x| self.spread(x))
    }

    /// [`Self::values`], with the sampled leaves they were computed from.
    pub fn values_resting(&self, v: ValueId) -> Result<(Rc<Vec<i64>>, Leaves), EvalErr> {
        self.value_d(v, 0).map(|x| {
            let leaves = x.leaves.clone();
            (self.spread(x), leaves)
        })
    }

    /// Every lane's value (a uniform value's one list for each value).
    fn spread(&self, x: Vals) -> Rc<Vec<i64>> {
        match x.one_value() {
            Some(k) if self.lanes.len() != 1 => {
                self.same.0.borrow_mut().splats.entry(k).or_insert_with(|| Rc::new(vec![k; self.lanes.len()])).clone()
            }
            _ => self.list(&x),
        }
    }

    /// The list a value's lanes are kept in: an affine value's made the
    /// first time it is asked for, shared as every computed list is.
    fn list(&self, x: &Vals) -> Rc<Vec<i64>> {
        match &x.form {
            Form::Lanes(l) => l.clone(),
            Form::Affine(a) => a
                .list
                .get_or_init(|| self.same.0.borrow_mut().lists.share(Rc::new(self.lanes.iter().map(|l| a.form.at(l.tid)).collect())))
                .clone(),
        }
    }

    /// The lowest and highest coordinate of the threads, by dimension.
    fn bounds(&self) -> [(i64, i64); 3] {
        let mut same = self.same.0.borrow_mut();
        *same.bounds.get_or_insert_with(|| {
            let mut b = [(i64::MAX, i64::MIN); 3];
            for l in self.lanes {
                for (b, t) in b.iter_mut().zip(l.tid) {
                    *b = (b.0.min(t), b.1.max(t));
                }
            }
            b
        })
    }

    /// The values of an affine form in every lane: one for all of them
    /// when it is the same in every lane.
    fn affine(&self, a: scalar::Affine, leaves: Leaves) -> Vals {
        match a.range(&self.bounds()) {
            (lo, hi) if lo == hi => self.one(lo as i64, leaves),
            _ => Vals { form: Form::Affine(Rc::new(AffineVals { form: a, list: Default::default() })), leaves },
        }
    }

    fn splat(&self, k: i64) -> Vals {
        self.one(k, Leaves::none())
    }

    /// `k` in every lane, resting on `leaves` (one list for each value).
    fn one(&self, k: i64, leaves: Leaves) -> Vals {
        Vals { form: Form::Lanes(self.same.0.borrow_mut().one(k)), leaves }
    }

    /// The values of every lane from those an operation computed: one
    /// for all of them when its sources were uniform.
    fn widen(&self, out: Vec<i64>, leaves: Leaves) -> Vals {
        Vals { form: Form::Lanes(self.same.0.borrow_mut().kept(out)), leaves }
    }

    /// A leaf's value in every lane, resting on what it rests on.
    fn leaf_vals(&self, v: ValueId) -> Option<Vals> {
        let (k, on) = self.leaves.get(&v)?;
        Some(self.one(*k, on.clone()))
    }

    /// Take the values `first` (the same threads' evaluator of the loops'
    /// first iteration) computed that no loop header's phi goes into
    /// (`varying`: those it does), rather than computing them again.
    pub fn outside_loops(&mut self, first: &Evaluator<'_, '_>, varying: Rc<crate::ir::dataflow::BitSet>) {
        self.first = Some((first.cache.clone(), varying));
    }

    /// Take the values `other` (the same threads, block index and
    /// iteration, no sample given to a parameter) computed resting on no
    /// sample, rather than computing them again.
    pub fn unsampled(&mut self, other: &Evaluator<'_, '_>) {
        self.unsampled = Some(other.cache.clone());
    }

    /// Take the values `other` (the same threads, block index, iteration
    /// and samples) computed without resting on the sample it gave `pinned`
    /// (a leaf this evaluator gives another value): they are this one's
    /// too, rather than computing them again.
    pub fn unpinned(&mut self, other: &Evaluator<'_, '_>, pinned: ValueId) {
        self.unpinned = Some((other.cache.clone(), pinned));
    }

    fn value_d(&self, v: ValueId, depth: u32) -> Result<Vals, EvalErr> {
        if let Some(r) = self.cache.borrow().get(&v) {
            return r.clone();
        }
        if let Some((cache, pinned)) = &self.unpinned {
            if let Some(Ok(x)) = cache.borrow().get(&v) {
                if !x.leaves.iter().any(|l| l == *pinned) {
                    return Ok(x.clone());
                }
            }
        }
        if let Some(Some(Ok(x))) = self.unsampled.as_ref().map(|c| c.borrow().get(&v).cloned()) {
            if x.leaves.is_empty() {
                return Ok(x);
            }
        }
        if let Some((cache, _)) = self.first.as_ref().filter(|(_, varying)| !varying.contains(v.index())) {
            if let Some(Ok(x)) = cache.borrow().get(&v) {
                return Ok(x.clone());
            }
        }
        let mut r = self.compute(v, depth);
        if let Ok(Vals { form: Form::Lanes(l), .. }) = &mut r {
            if l.len() != 1 {
                *l = self.same.0.borrow_mut().lists.share(l.clone());
            }
        }
        self.cache.borrow_mut().insert(v, r.clone());
        r
    }

    fn compute(&self, v: ValueId, depth: u32) -> Result<Vals, EvalErr> {
        if depth > MAX_DEPTH {
            return Err(EvalErr::Opaque);
        }
        if let Some(x) = self.bound.get(&v) {
            return Ok(x.clone());
        }
        let av = self.d.vals[v];
        if av.is_uniform() {
            if let Some(k) = av.const_value() {
                return Ok(self.splat(k));
            }
            if let Some(x) = self.leaf_vals(v) {
                return Ok(x);
            }
            if let Some(x) = self.f.ssa.special(v).and_then(|s| self.special(s)) {
                return Ok(x);
            }
            if let (true, Some(x)) = (self.first_iteration, crate::ir::loops::entry_value(self.f, v)) {
                return self.value_d(x, depth + 1);
            }
            if let Some(r) = self.induction(v, depth) {
                return r;
            }
            match self.f.ssa.values[v] {
                // uniform computations of known things (e.g. %ntid.x * 2) still evaluate
                ValueDef::Inst { inst, slot } => match self.inst(inst, slot as usize, depth + 1) {
                    Ok(k) => return Ok(k),
                    Err(EvalErr::Leaf(x)) => return Err(EvalErr::Leaf(x)),
                    Err(EvalErr::Opaque) => {}
                },
                // a join of a uniform branch (or of one value computed on each side)
                ValueDef::Phi(_) if self.f.cfg.loop_with_header(self.f.def_block(v).expect("a phi's block")).is_none() => {
                    match self.join_phi(v, depth) {
                        Ok(k) => return Ok(k),
                        Err(EvalErr::Leaf(x)) => return Err(EvalErr::Leaf(x)),
                        Err(EvalErr::Opaque) => {}
                    }
                }
                _ => {}
            }
            return Err(EvalErr::Leaf(v));
        }
        if av.data() && !self.through_data {
            return Err(EvalErr::Opaque);
        }
        match self.f.ssa.values[v] {
            ValueDef::Entry(_) => self.f.ssa.special(v).and_then(|s| self.special(s)).ok_or(EvalErr::Opaque),
            ValueDef::Phi(_) => {
                if let Some(x) = self.leaf_vals(v) {
                    return Ok(x);
                }
                if let Some(r) = self.induction(v, depth) {
                    return r;
                }
                match crate::ir::loops::entry_value(self.f, v).filter(|_| self.first_iteration) {
                    Some(x) => self.value_d(x, depth + 1),
                    None => self.join_phi(v, depth),
                }
            }
            ValueDef::Inst { inst, slot } => self.inst(inst, slot as usize, depth + 1),
        }
    }

    /// A loop counter stepped the same way each iteration
    /// ([`crate::ir::loops::Induction::stepped`]) at [`Self::iteration`]:
    /// its start stepped that many times by the update's own semantics.
    /// `None`: not such a counter, or no iteration asked for.
    fn induction(&self, v: ValueId, depth: u32) -> Option<Result<Vals, EvalErr>> {
        let n = self.iteration?;
        let ind = self.f.loops.induction(v).filter(|i| i.stepped(self.f))?;
        let inst = &self.f.insts[ind.update];
        let op = scalar::prepare(inst, 0)?;
        let ty = scalar::dest_ty(inst, 0)?;
        Some((|| {
            let start = self.value_d(ind.init.ok_or(EvalErr::Opaque)?, depth + 1)?;
            let step = self.operand(ind.update, inst.operand(ind.step_operand).ok_or(EvalErr::Opaque)?, depth + 1)?;
            let leaves = if n == 0 { start.leaves.clone() } else { start.leaves.union(&step.leaves) };
            let (start, step) = (self.list(&start), self.list(&step));
            let key = (v, Rc::as_ptr(&start), Rc::as_ptr(&step));
            let mut same = self.same.0.borrow_mut();
            let (mut k, mut x) = match same.counters.get(&key) {
                Some(s) if s.latest.0 <= n => s.latest.clone(),
                _ => (0, start.clone()),
            };
            while k < n {
                let mut out = Vec::with_capacity(x.len().max(step.len()));
                let args: [&[i64]; 2] = if ind.step_operand == 2 { [&x, &step] } else { [&step, &x] };
                op.apply_lanes(&args, ty, &mut out).ok_or(EvalErr::Opaque)?;
                (k, x) = (k + 1, same.kept(out));
            }
            same.counters.insert(key, Steps { start, step, latest: (n, x.clone()) });
            Ok(Vals { form: Form::Lanes(x), leaves })
        })())
    }

    /// A phi at the join of an `if`/`else` (or `if` without `else`): in
    /// each thread, the value from the side the thread's branch condition
    /// chose (one value computed alike on every side: that value). Only for the simple shape: the join's immediate dominator ends
    /// in the branch, each incoming edge comes from one side (a side may
    /// hold nested branches or whole loops, but then passes one value that
    /// is defined outside them), and the branch and the join are in the
    /// same loop.
    fn join_phi(&self, v: ValueId, depth: u32) -> Result<Vals, EvalErr> {
        let (f, cfg) = (self.f, &self.f.cfg);
        let ValueDef::Phi(p) = f.ssa.values[v] else { return Err(EvalErr::Opaque) };
        let ph = &f.ssa.phis[p];
        // one value computed on each side (`shl %r11, %ctaid.x, 8` on both arms): that value,
        // whichever side ran
        let reachable: Vec<ValueId> = ph.incoming.iter().filter(|(pred, _)| cfg.reachable(*pred)).map(|x| x.1).collect();
        if let Some(&first) = reachable.first() {
            let inside = |x: ValueId| f.def_block(x).is_some_and(|b| cfg.loops_containing(b).iter().any(|&l| !cfg.in_loop(ph.block, l)));
            if reachable.iter().all(|&x| !inside(x) && crate::ir::values::same_value(f, x, first)) {
                return self.value_d(first, depth + 1);
            }
        }
        let join = ph.block;
        // (the branch `derived_through_joins` follows, so that reusing a value computed under
        // other seeds' values is sound)
        let (br, cond) = crate::ir::values::join_branch(f, join).ok_or(EvalErr::Opaque)?;
        let d = cfg.idom(join).ok_or(EvalErr::Opaque)?;
        let g = f.insts[br].ast.guard.ok_or(EvalErr::Opaque)?;
        let succs = &cfg.blocks[d].succs;
        let taken = f.branch_target(br).ok_or(EvalErr::Opaque)?;
        let fall = succs.iter().copied().find(|&s| s != taken).ok_or(EvalErr::Opaque)?;
        if succs.len() != 2 || cfg.loop_with_header(join).is_some() || cfg.loop_of(d) != cfg.loop_of(join) {
            return Err(EvalErr::Opaque);
        }
        // the value each side passes to the join
        let (mut on_taken, mut on_fall) = (None, None);
        for &(pred, x) in &ph.incoming {
            if !cfg.reachable(pred) {
                continue;
            }
            // a value leaving a loop (its last iteration's) is not what the evaluator computes
            let leaves_loop = f.def_block(x).is_some_and(|b| cfg.loops_containing(b).iter().any(|&l| !cfg.in_loop(join, l)));
            // a side may hold a loop (the edge may leave it) when the value
            // passed is defined outside it: the same in every iteration
            if leaves_loop || self.d.at(f, x, pred) != self.d.vals[x] {
                return Err(EvalErr::Opaque);
            }
            let side = if pred == d {
                if taken == join {
                    &mut on_taken
                } else {
                    &mut on_fall
                }
            } else if taken != join && cfg.dominates(taken, pred) {
                &mut on_taken
            } else if fall != join && cfg.dominates(fall, pred) {
                &mut on_fall
            } else {
                return Err(EvalErr::Opaque);
            };
            match *side {
                Some(y) if y != x => return Err(EvalErr::Opaque),
                _ => *side = Some(x),
            }
        }
        let (Some(a), Some(b)) = (on_taken, on_fall) else { return Err(EvalErr::Opaque) };
        let cond = self.reg_value(br, cond, depth + 1)?;
        let (xa, xb) = (self.value_d(a, depth + 1)?, self.value_d(b, depth + 1)?);
        let leaves = cond.leaves.union(&xa.leaves).union(&xb.leaves);
        let (cond, xa, xb) = (self.list(&cond), self.list(&xa), self.list(&xb));
        let n = cond.len().max(xa.len()).max(xb.len());
        Ok(self.widen((0..n).map(|t| if (at(&cond, t) != 0) != g.negated { at(&xa, t) } else { at(&xb, t) }).collect(), leaves))
    }

    /// Per-lane values of a special register (`None`: not known per lane,
    /// e.g. the block index, which is a leaf).
    fn special(&self, s: Special) -> Option<Vals> {
        if let Some(v) = self.same.0.borrow().specials.get(&s) {
            return v.clone();
        }
        // (a thread's coordinate is its own affine form)
        if let (Special::Tid(d), true) = (s, self.lanes.len() > 1) {
            let mut c = [0; 3];
            c[d as usize] = 1;
            let v = Some(self.affine(scalar::Affine { k: 0, c }, Leaves::none()));
            self.same.0.borrow_mut().specials.insert(s, v.clone());
            return v;
        }
        let mut pos = ThreadPos { ntid: self.ntid.map(|x| x as u32), nctaid: self.nctaid, ..ThreadPos::default() };
        let mut lanes = Vec::with_capacity(self.lanes.len());
        let all = self.lanes.iter().all(|l| {
            (pos.tid, pos.lane) = (l.tid.map(|x| x as u32), l.lane as u32);
            scalar::special_value(s, &pos).map(|x| lanes.push(x as i64)).is_some()
        });
        let v = all.then(|| self.widen(lanes, Leaves::none()));
        self.same.0.borrow_mut().specials.insert(s, v.clone());
        v
    }

    /// `taken`, or the same directions of threads kept before: a
    /// function's thread-dependent branches mostly split the threads
    /// alike.
    pub fn kept_directions(&self, taken: Rc<[bool]>) -> Rc<[bool]> {
        self.same.0.borrow_mut().directions.share(taken)
    }

    /// Forget the kept lists no value holds any more.
    fn drop_lists(&self) {
        let mut same = self.same.0.borrow_mut();
        same.counters.retain(|_, s| s.start_held());
        same.lists.retain(|l| Rc::strong_count(l) > 1);
    }

    /// Take what evaluators over the same threads compute once from (and
    /// give it to) the others of `same`: only those over the same threads,
    /// block shape and grid may share one.
    pub fn share_threads(&mut self, same: &SameThreads) {
        self.same = same.clone();
    }

    /// A register value read by instruction `i`.
    fn reg_value(&self, i: InstId, v: ValueId, depth: u32) -> Result<Vals, EvalErr> {
        // values leaving a loop with divergent exits are not evaluable
        let seen = self.d.at(self.f, v, self.f.cfg.block_of(i));
        if seen != self.d.vals[v] {
            return Err(EvalErr::Opaque);
        }
        self.value_d(v, depth)
    }

    fn operand(&self, i: InstId, o: &Operand<'_>, depth: u32) -> Result<Vals, EvalErr> {
        match o {
            Operand::Reg(r) => match self.f.ssa.use_of(i, r) {
                Some(v) => self.reg_value(i, v, depth),
                None => Special::parse(r).and_then(|s| self.special(s)).ok_or(EvalErr::Opaque),
            },
            Operand::Not(r) => {
                let x = self.operand(i, &Operand::Reg(r), depth)?;
                Ok(self.widen(self.list(&x).iter().map(|v| (*v == 0) as i64).collect(), x.leaves.clone()))
            }
            Operand::Imm(k) => Ok(self.splat(*k)),
            Operand::Sym(s) => crate::ir::inst::predefined_constant(s).map(|k| self.splat(k)).ok_or(EvalErr::Opaque),
            _ => Err(EvalErr::Opaque),
        }
    }

    fn inst(&self, i: InstId, slot: usize, depth: u32) -> Result<Vals, EvalErr> {
        let inst = &self.f.insts[i];
        let Some(op) = scalar::prepare(inst, slot).filter(|_| !inst.is_float()) else {
            return Err(EvalErr::Opaque);
        };
        let value = self.unguarded(i, slot, op, depth)?;
        let Some(g) = inst.ast.guard else { return Ok(value) };
        let gv = self.operand(i, &Operand::Reg(g.reg), depth)?;
        let prior = match self.f.ssa.prior(i, slot) {
            Some(p) => self.value_d(p, depth)?,
            None => return Err(EvalErr::Opaque),
        };
        let leaves = value.leaves.union(&gv.leaves).union(&prior.leaves);
        let (gv, value, prior) = (self.list(&gv), self.list(&value), self.list(&prior));
        let n = gv.len().max(value.len()).max(prior.len());
        Ok(self.widen((0..n).map(|t| if (at(&gv, t) != 0) != g.negated { at(&value, t) } else { at(&prior, t) }).collect(), leaves))
    }

    /// The instruction's value in every lane, from its sources' values, by
    /// the scalar semantics.
    fn unguarded(&self, i: InstId, slot: usize, op: scalar::Prepared, depth: u32) -> Result<Vals, EvalErr> {
        let inst = &self.f.insts[i];
        let ty = scalar::dest_ty(inst, slot).ok_or(EvalErr::Opaque)?;
        // (the sources on the stack: no instruction the scalar semantics computes has more)
        let mut srcs: [Option<Vals>; MAX_SOURCES] = Default::default();
        let ops = inst.operands();
        if ops.len() > MAX_SOURCES + 1 {
            return Err(EvalErr::Opaque);
        }
        for (k, o) in ops.iter().enumerate().skip(1) {
            srcs[k - 1] = Some(match (o, self.f.operand_value(i, k)) {
                (Operand::Reg(_), Some(v)) => self.reg_value(i, v, depth)?,
                (o, _) => self.operand(i, o, depth)?,
            });
        }
        let srcs = &srcs[..ops.len().saturating_sub(1)];
        let leaves = || srcs.iter().flatten().fold(Leaves::none(), |acc, s| acc.union(&s.leaves));
        // affine or uniform sources, one of them affine: the affine result, when the operation keeps it
        if srcs.iter().flatten().any(|s| matches!(s.form, Form::Affine(_))) {
            let mut forms = [scalar::Affine::uniform(0); MAX_SOURCES];
            let affine = srcs.iter().flatten().zip(forms.iter_mut()).all(|(s, f)| s.affine().map(|a| *f = a).is_some());
            if let Some(a) = affine.then(|| op.apply_affine(&forms[..srcs.len()], &self.bounds(), ty)).flatten() {
                return Ok(self.affine(a, leaves()));
            }
        }
        // (the lists of affine sources, made: held here while the operation reads them)
        let mut held: [Option<Rc<Vec<i64>>>; MAX_SOURCES] = Default::default();
        for (h, s) in held.iter_mut().zip(srcs.iter().flatten()) {
            *h = Some(self.list(s));
        }
        let n = held.iter().flatten().map(|l| l.len()).max().unwrap_or(0);
        let mut refs: [&[i64]; MAX_SOURCES] = [&[]; MAX_SOURCES];
        for (r, h) in refs.iter_mut().zip(held.iter().flatten()) {
            *r = h;
        }
        if n == 1 {
            // every source one lane: the one value, computed in a list kept for it (most of a
            // kernel's values; their value is kept once, `Self::one`)
            thread_local! {
                static ONE: RefCell<Vec<i64>> = const { RefCell::new(Vec::new()) };
            }
            let k = ONE.with(|c| {
                let out = &mut *c.borrow_mut();
                out.clear();
                op.apply_lanes(&refs[..srcs.len()], ty, out)?;
                out.first().copied().filter(|_| out.len() == 1)
            });
            if let Some(k) = k {
                return Ok(self.one(k, leaves()));
            }
        }
        let mut out = Vec::with_capacity(n);
        op.apply_lanes(&refs[..srcs.len()], ty, &mut out).ok_or(EvalErr::Opaque)?;
        Ok(self.widen(out, leaves()))
    }
}

/// Candidate sample values for a uniform leaf: the first values of a loop
/// counter `phi(init, phi op k)`, or a few block indices.
pub fn samples(f: &FunctionIr<'_>, ev: &Evaluator<'_, '_>, v: ValueId) -> Vec<i64> {
    match f.ssa.values[v] {
        ValueDef::Entry(_) => {
            if matches!(f.ssa.special(v), Some(Special::Ctaid(_))) {
                vec![0, 1, 3]
            } else {
                vec![]
            }
        }
        ValueDef::Phi(_) => counter_samples(f, ev, v).0,
        ValueDef::Inst { .. } => threshold_samples(f, v),
    }
}

/// The first values of a loop counter (at most six, until it reaches 0
/// or repeats), when its start and step evaluate, and the sampled leaves
/// those rest on.
pub fn counter_samples(f: &FunctionIr<'_>, ev: &Evaluator<'_, '_>, v: ValueId) -> (Vec<i64>, Leaves) {
    let Some(ind) = f.loops.induction(v).filter(|i| i.invariant) else { return (vec![], Leaves::none()) };
    let first = |x: ValueId| ev.values_resting(x).ok().and_then(|(x, on)| Some((*x.first()?, on)));
    let Some((mut x, on_init)) = ind.init.and_then(first) else { return (vec![], Leaves::none()) };
    let (step, on_step) = match ind.step {
        crate::ir::loops::Step::Imm(k) => (k, Leaves::none()),
        crate::ir::loops::Step::Value(s) => match first(s) {
            Some(k) => k,
            None => return (vec![], Leaves::none()),
        },
    };
    let mut out = vec![];
    for _ in 0..6 {
        out.push(x);
        x = match ind.next(f, x, step) {
            Some(y) => y,
            None => break,
        };
        if x == 0 || out.contains(&x) {
            break;
        }
    }
    (out, on_init.union(&on_step))
}

/// Samples for a uniform value of unknown content (a kernel parameter, a
/// value loaded from a lane-invariant address) that is compared against
/// constants: each constant and its neighbours, so that a condition such as
/// `t % 2 == 1 && n >= 1` is evaluated on both sides of `n`'s own test.
/// The caller keeps the worst case and names the value it used.
fn threshold_samples(f: &FunctionIr<'_>, v: ValueId) -> Vec<i64> {
    let mut out = vec![];
    for u in &f.ssa.users[v] {
        let crate::ir::User::Inst(i) = *u else { continue };
        let inst = &f.insts[i];
        if inst.opcode != Opcode::Setp || inst.operands().len() != 3 || f.ssa.uses(i).len() != 1 {
            continue;
        }
        for o in &inst.operands()[1..] {
            if let Operand::Imm(k) = o {
                for x in [*k - 1, *k, *k + 1] {
                    if !out.contains(&x) && out.len() < 6 {
                        out.push(x);
                    }
                }
            }
        }
    }
    out
}

impl Drop for Evaluator<'_, '_> {
    fn drop(&mut self) {
        // its values gone, the lists only they held
        drop(std::mem::take(&mut self.cache));
        self.drop_lists();
    }
}

#[cfg(test)]
mod tests {
    use super::Evaluator;

    /// Leaves given again: what rests on a leaf whose sample changed is
    /// computed anew (`t·q + p` with `q` 3, then 5), what rests only on
    /// those that kept theirs stays computed (`t·q` when `p` alone
    /// changes), and a leaf no longer given makes its values need it again.
    #[test]
    fn set_leaves_keeps_what_rests_on_unchanged_samples() {
        let (f, d) = crate::affine_in_two_params();
        let value = |reg: &str| crate::value_written(f, reg);
        let (p, q, tq, sum) = (value("%r1"), value("%r2"), value("%r4"), value("%r5"));
        let shape = crate::model::Shape::new([8, 1, 1], crate::model::ShapeSource::Cli);
        let mut ev = Evaluator::new(f, &d, shape.block, shape.lanes());
        let at = |ev: &Evaluator<'_, '_>, v| ev.values(v).map(|x| x.to_vec());
        let expect = |a: i64, b: i64| Ok((0..8).map(|t| t * a + b).collect::<Vec<i64>>());
        ev.set_leaves([(q, 3), (p, 10)]);
        assert_eq!(at(&ev, sum), expect(3, 10));
        ev.set_leaves([(q, 3), (p, 20)]);
        assert!(ev.computed(tq), "t·q dropped though q kept its sample");
        assert!(!ev.computed(sum), "t·q + p kept though p changed");
        assert_eq!(at(&ev, sum), expect(3, 20));
        ev.set_leaves([(q, 5), (p, 20)]);
        assert_eq!(at(&ev, sum), expect(5, 20));
        assert_eq!(at(&ev, tq), expect(5, 0));
        ev.set_leaves([(p, 20)]);
        assert_eq!(at(&ev, tq), Err(super::EvalErr::Leaf(q)));
        assert_eq!(at(&ev, sum), Err(super::EvalErr::Leaf(q)));
    }

    /// A stepped counter asked at iterations in any order, by evaluators
    /// over the same threads that each step it from the latest one
    /// computed (or from its start when asked for an earlier one), has
    /// the value it has when stepped from its start alone.
    #[test]
    fn a_counter_at_any_iteration_as_stepped_from_its_start() {
        const LOOP: &str = r#"
.version 7.0
.target sm_80
.address_size 64
.visible .entry k(.param .u32 k_n) {
    .reg .pred %p<2>;
    .reg .b32 %r<8>;
    ld.param.u32 %r1, [k_n];
    mov.u32 %r2, %tid.x;
    mov.u32 %r3, 0;
L:
    add.s32 %r2, %r2, 7;
    add.s32 %r3, %r3, 1;
    setp.lt.u32 %p1, %r3, %r1;
    @%p1 bra L;
    st.global.u32 [%r2], %r3;
    ret;
}"#;
        let m: &'static crate::ptx::Module<'static> = Box::leak(Box::new(crate::ptx::parse(LOOP).unwrap()));
        let fs: &'static [crate::ir::FunctionIr<'static>] = Box::leak(crate::ir::lower(m).into_boxed_slice());
        let f = &fs[0];
        let d = crate::divergence::Divergence::analyze(f, &crate::divergence::Summaries::compute(fs));
        let counter = f.ssa.phis.iter().map(|p| p.value).find(|&v| f.ssa.reg_of(v, &f.insts) == "%r2").expect("the counter's phi");
        let shape = crate::model::Shape::new([8, 1, 1], crate::model::ShapeSource::Cli);
        let same = super::SameThreads::default();
        let at = |n: usize, shared: bool| {
            let mut ev = Evaluator::new(f, &d, shape.block, shape.lanes());
            if shared {
                ev.share_threads(&same);
            }
            ev.iteration = Some(n);
            ev.values(counter).map(|x| x.to_vec())
        };
        for n in [3, 5, 2, 2, 6, 1, 9] {
            let want: Vec<i64> = (0..8).map(|t| t + 7 * n as i64).collect();
            assert_eq!(at(n, false), Ok(want.clone()), "iteration {n}, alone");
            assert_eq!(at(n, true), Ok(want), "iteration {n}, after the others");
        }
    }

    /// Evaluators over the same threads keep one copy of a list they both
    /// give out (`t·q` for the same `q`), and a list stays kept only while
    /// something holds it: not after its holders are gone. Affine values
    /// (`%tid.x`, `t·q`) are kept as their forms, made lists only when
    /// given out.
    #[test]
    fn evaluators_over_the_same_threads_keep_a_list_once() {
        let (f, d) = crate::affine_in_two_params();
        let (q, tq) = (crate::value_written(f, "%r2"), crate::value_written(f, "%r4"));
        let shape = crate::model::Shape::new([8, 1, 1], crate::model::ShapeSource::Cli);
        let same = super::SameThreads::default();
        let kept = || same.0.borrow().lists.len();
        let mut a = Evaluator::new(f, &d, shape.block, shape.lanes());
        let mut b = Evaluator::new(f, &d, shape.block, shape.lanes());
        a.share_threads(&same);
        b.share_threads(&same);
        a.set_leaves([(q, 3)]);
        b.set_leaves([(q, 3)]);
        let (x, y) = (a.values(tq).unwrap(), b.values(tq).unwrap());
        assert!(std::rc::Rc::ptr_eq(&x, &y), "the same list made twice");
        assert_eq!(kept(), 1, "t·3 given out (`%tid.x` and t·q kept as forms)");
        a.set_leaves([(q, 5)]);
        let z = a.values(tq).unwrap();
        assert_eq!(z.to_vec(), (0..8).map(|t| 5 * t).collect::<Vec<i64>>());
        assert_eq!(kept(), 2, "t·3 still held by its callers");
        drop((x, y));
        drop(b);
        assert_eq!(kept(), 1, "t·5 alone, after t·3's last holder went");
        drop(z);
        drop(a);
        assert_eq!(kept(), 0, "nothing holds a list");
    }

    /// The union of two leaf sets is the set union, each leaf once and in
    /// order; where one holds the other it is that one, not a new list.
    #[test]
    fn leaf_unions_are_set_unions() {
        use crate::ir::ValueId;
        let mut next = crate::xorshift(0x3c6e_f372_fe94_f82b);
        let mut reused = 0;
        for _ in 0..2_000 {
            let mut set = |n: u64| super::Leaves::of((0..next(n)).map(|_| ValueId::new(next(12) as usize)).collect());
            let (a, b) = (set(6), set(6));
            let want: std::collections::BTreeSet<ValueId> = a.iter().chain(b.iter()).collect();
            let u = a.union(&b);
            assert_eq!(u.iter().collect::<Vec<_>>(), want.iter().copied().collect::<Vec<_>>(), "{a:?} ∪ {b:?}");
            let holds_all = |x: &super::Leaves| x.iter().count() == want.len();
            if !want.is_empty() && (holds_all(&a) || holds_all(&b)) {
                let same = |x: &super::Leaves| matches!((&x.0, &u.0), (Some(p), Some(q)) if std::rc::Rc::ptr_eq(p, q));
                assert!(same(&a) || same(&b), "{a:?} ∪ {b:?} made a new list");
                reused += 1;
            }
        }
        assert!(reused > 500, "{reused}");
    }
}
