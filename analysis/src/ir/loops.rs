//! Loop counters and exit tests, recognised once per function (with the
//! CFG and SSA): the one place that says which loop-header phi is a
//! counter, how it steps, where it starts, what a loop's exit tests and how
//! many iterations it runs.
//!
//! An [`Induction`] is a header phi `p = phi(init, p op s)`: every value it
//! gets around the loop is computed by one instruction (through plain
//! copies) from `p` itself and a step `s` — an integer addition,
//! subtraction, multiplication, shift or division; `s` an immediate or a
//! register. The questions passes ask are methods: [`Induction::additive`]
//! (`init ± n·s`, a step that does not change between iterations: the
//! counters the evaluator steps exactly to any iteration),
//! [`Induction::next`] (one step, by the update's own semantics).
//!
//! Owns: the recognition and the exit-test walk. Does not own: the values
//! of counters for a launch (`crate::divergence::eval` evaluates them; the
//! trip count asks its caller to evaluate the exit test at an iteration).

use super::inst::{Opcode, Special};
use super::values::{through_copies, Walk};
use super::{BlockId, FunctionIr, IdVec, InstId, LoopId, ValueDef, ValueId};
use crate::ptx::Operand;
use rustc_hash::FxHashMap;

/// What a counter steps by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    Imm(i64),
    Value(ValueId),
}

/// A loop counter: a header phi updated by one instruction from itself and
/// a step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Induction {
    pub phi: ValueId,
    pub lp: LoopId,
    /// Its one value from outside the loop (`None`: several).
    pub init: Option<ValueId>,
    /// The instruction computing its next value.
    pub update: InstId,
    /// The update's operand holding the step (1 or 2; the other is the counter).
    pub step_operand: usize,
    pub step: Step,
    /// The step is the same in every iteration: an immediate, or a value
    /// defined outside the loop.
    pub invariant: bool,
}

impl Induction {
    /// The update's operation.
    pub fn op(&self, f: &FunctionIr<'_>) -> Opcode {
        f.insts[self.update].opcode
    }

    /// `init ± n·step`: an addition or subtraction of a step that does not
    /// change, with one starting value (its value at any iteration is
    /// known from those two).
    pub fn additive(&self, f: &FunctionIr<'_>) -> bool {
        matches!(self.op(f), Opcode::Add | Opcode::Sub) && self.invariant && self.init.is_some()
    }

    /// Its start with one operation by a step that does not change applied
    /// once per iteration (`k += s`, `k *= 2`, `k >>= 1`, `k /= 2`): its
    /// value at any iteration is known from those two.
    pub fn stepped(&self, f: &FunctionIr<'_>) -> bool {
        matches!(self.op(f), Opcode::Add | Opcode::Sub | Opcode::Mul | Opcode::Shl | Opcode::Shr | Opcode::Div)
            && self.invariant
            && self.init.is_some()
    }

    /// The counter's next value after `x`, stepping by `step`, by the
    /// update's own semantics (`None`: it traps, e.g. a division by 0).
    pub fn next(&self, f: &FunctionIr<'_>, x: i64, step: i64) -> Option<i64> {
        let inst = &f.insts[self.update];
        let ty = super::scalar::dest_ty(inst, 0)?;
        let args = if self.step_operand == 2 { [x as u64, step as u64] } else { [step as u64, x as u64] };
        Some(super::scalar::to_i64(ty, super::scalar::apply(inst, 0, &args)?))
    }
}

/// A loop's one exit test.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExitTest {
    /// The block ending in the exit branch.
    pub block: BlockId,
    pub branch: InstId,
    /// The branch's predicate, and whether the guard negates it.
    pub cond: ValueId,
    pub negated: bool,
    /// Taking the branch leaves the loop (else falling through does).
    pub taken_leaves: bool,
    /// The test is at the top, before the body (the header, when the
    /// header is not also the block that jumps back): a test that leaves at
    /// iteration n ran n bodies (at the bottom: n + 1).
    pub at_top: bool,
}

impl ExitTest {
    /// Does the loop end when the predicate is `value`?
    pub fn leaves_when(&self, value: bool) -> bool {
        (value != self.negated) == self.taken_leaves
    }
}

/// How many iterations a loop runs, as far as its counters tell.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Trips {
    /// A constant.
    Known(usize),
    /// The exit tests a counter against a scalar parameter (`i < n`): the
    /// counters' values in any iteration are exact, how many run is not.
    Runtime,
}

/// The loop facts of one function.
#[derive(Debug, Default)]
pub struct Loops {
    inductions: Vec<Induction>,
    by_phi: FxHashMap<ValueId, u32>,
    exits: IdVec<LoopId, Option<ExitTest>>,
}

impl Loops {
    /// Recognise the counters and exit tests of every loop of `f` (its
    /// CFG and SSA are built).
    pub fn compute(f: &FunctionIr<'_>) -> Loops {
        let cfg = &f.cfg;
        let mut out = Loops { exits: IdVec::filled(cfg.loops.len(), None), ..Default::default() };
        for (l, lp) in cfg.loops.iter_enumerated() {
            for &p in &f.ssa.block_phis[lp.header] {
                if let Some(ind) = induction(f, f.ssa.phis[p].value, l) {
                    out.by_phi.insert(ind.phi, out.inductions.len() as u32);
                    out.inductions.push(ind);
                }
            }
            out.exits[l] = exit_test(f, l);
        }
        out
    }

    /// The counter a value is, if it is one.
    pub fn induction(&self, v: ValueId) -> Option<&Induction> {
        self.by_phi.get(&v).map(|&k| &self.inductions[k as usize])
    }

    /// Loop `l`'s exit test, when it has exactly one exit block ending in
    /// a conditional jump.
    pub fn exit(&self, l: LoopId) -> Option<&ExitTest> {
        self.exits[l].as_ref()
    }

    /// The iterations loop `l` runs, when that is a constant of at most
    /// `max`: its exit test reads only its stepped counters, constants and
    /// the block shape (not data, another loop's counter or another value
    /// of the loop), and `test(cond, n)` (the test's predicate `cond` at
    /// iteration n, as the caller evaluates it) leaves at some n below `max`;
    /// [`Trips::Runtime`] when the test also reads a scalar parameter.
    pub fn trip_count(
        &self,
        f: &FunctionIr<'_>,
        l: LoopId,
        max: usize,
        mut test: impl FnMut(ValueId, usize) -> Option<bool>,
    ) -> Option<Trips> {
        let e = self.exit(l)?;
        if self.exit_reads_parameter(f, l, e)? {
            return Some(Trips::Runtime);
        }
        for n in 0..max {
            if e.leaves_when(test(e.cond, n)?) {
                // a test at the top leaves before iteration n's body, one at the bottom after it
                return Some(Trips::Known(if e.at_top { n } else { n + 1 }));
            }
        }
        None
    }

    /// Does loop `l` leave before iteration `n`'s body runs, its exit test
    /// `test(cond, k)` at iteration k as the caller evaluates it (with the
    /// samples of a witness, say)? `None`: no single exit test, or one the
    /// caller cannot evaluate.
    pub fn leaves_before(&self, l: LoopId, n: usize, mut test: impl FnMut(ValueId, usize) -> Option<bool>) -> Option<bool> {
        let e = self.exit(l)?;
        for k in 0..=n {
            // a test at the top leaves before iteration k's body, one at the bottom after it
            if (e.at_top || k < n) && e.leaves_when(test(e.cond, k)?) {
                return Some(true);
            }
        }
        Some(false)
    }

    /// What loop `l`'s exit test reads, walked back to its leaves: `None`
    /// when it reads something other than the loop's stepped counters
    /// (and what they start from and step by), constants, `%ntid` and
    /// scalar parameters; else whether it reads a parameter.
    fn exit_reads_parameter(&self, f: &FunctionIr<'_>, l: LoopId, e: &ExitTest) -> Option<bool> {
        let cfg = &f.cfg;
        let header = cfg.loops[l].header;
        let mut walk = Walk::new([e.cond]);
        let mut parameter = false;
        while let Some(v) = walk.next_value() {
            match f.ssa.values[v] {
                ValueDef::Phi(p) if f.ssa.phis[p].block == header => {
                    let ind = self.induction(v).filter(|i| i.stepped(f))?;
                    walk.extend(f.ssa.uses(ind.update).iter().copied().filter(|&x| x != v));
                    // where it starts (`n` for a count down from `n`)
                    walk.extend(ind.init);
                }
                // one value computed alike on every path (`mov %r13, %ntid.x` on both arms)
                ValueDef::Phi(p) => {
                    let ins: Vec<ValueId> = f.ssa.phis[p].incoming.iter().map(|x| x.1).collect();
                    let first = *ins.first()?;
                    if !ins.iter().all(|&x| super::values::same_value(f, x, first)) {
                        return None;
                    }
                    walk.extend([first]);
                }
                ValueDef::Entry(_) => {
                    if !matches!(f.ssa.special(v), Some(Special::Ntid(_))) {
                        return None;
                    }
                }
                ValueDef::Inst { inst, .. } if f.insts[inst].param_read().is_some() => parameter = true,
                ValueDef::Inst { inst, .. } => {
                    if f.insts[inst].access().is_some() {
                        return None;
                    }
                    walk.extend(f.ssa.uses(inst).iter().copied());
                }
            }
        }
        (!walk.cut()).then_some(parameter)
    }
}

/// For a loop-header phi: its single value from outside the loop.
pub fn entry_value(f: &FunctionIr<'_>, v: ValueId) -> Option<ValueId> {
    let ValueDef::Phi(p) = f.ssa.values[v] else { return None };
    let ph = &f.ssa.phis[p];
    let l = f.cfg.loop_with_header(ph.block)?;
    let mut outside = ph.incoming.iter().filter(|(pred, _)| !f.cfg.in_loop(*pred, l)).map(|x| x.1);
    match (outside.next(), outside.next()) {
        (Some(x), None) => Some(x),
        _ => None,
    }
}

/// Header phi `v` of loop `l` as a counter, if it is one.
fn induction(f: &FunctionIr<'_>, v: ValueId, l: LoopId) -> Option<Induction> {
    let cfg = &f.cfg;
    let ValueDef::Phi(p) = f.ssa.values[v] else { return None };
    // every value from around the loop computed by one instruction
    let mut update = None;
    for &(pred, iv) in &f.ssa.phis[p].incoming {
        if cfg.in_loop(pred, l) {
            let li = f.def_inst(through_copies(f, iv))?;
            if update.is_some_and(|u| u != li) {
                return None;
            }
            update = Some(li);
        }
    }
    let update = update?;
    let inst = &f.insts[update];
    let commutative = matches!(inst.opcode, Opcode::Add | Opcode::Mul);
    if !matches!(inst.opcode, Opcode::Add | Opcode::Sub | Opcode::Mul | Opcode::Shl | Opcode::Shr | Opcode::Div)
        || inst.ast.guard.is_some()
        || inst.is_float()
        || inst.operands().len() != 3
    {
        return None;
    }
    // the counter itself (through copies), and the step in the other operand
    let is_phi = |k: usize| f.operand_value(update, k).is_some_and(|x| through_copies(f, x) == v);
    let step_operand = if is_phi(1) {
        2
    } else if commutative && is_phi(2) {
        1
    } else {
        return None;
    };
    let (step, invariant) = match inst.operand(step_operand)? {
        Operand::Imm(k) => (Step::Imm(*k), true),
        Operand::Reg(_) => {
            let s = f.operand_value(update, step_operand)?;
            (Step::Value(s), f.def_block(s).is_none_or(|b| !cfg.in_loop(b, l)))
        }
        _ => return None,
    };
    Some(Induction { phi: v, lp: l, init: entry_value(f, v), update, step_operand, step, invariant })
}

/// Loop `l`'s exit test: its one exit block's conditional jump.
fn exit_test(f: &FunctionIr<'_>, l: LoopId) -> Option<ExitTest> {
    let cfg = &f.cfg;
    let lp = &cfg.loops[l];
    let mut exits = lp.blocks.iter().copied().filter(|&b| cfg.leaves(b, l));
    let (Some(block), None) = (exits.next(), exits.next()) else { return None };
    let branch = cfg.blocks[block].last()?;
    let inst = &f.insts[branch];
    let g = inst.ast.guard.filter(|_| inst.is_jump())?;
    let cond = f.ssa.use_of(branch, g.reg)?;
    let taken_leaves = !cfg.in_loop(f.branch_target(branch)?, l);
    let at_top = block == lp.header && !lp.latches.contains(&block);
    Some(ExitTest { block, branch, cond, negated: g.negated, taken_leaves, at_top })
}

#[cfg(test)]
mod tests {
    use super::{Step, Trips};
    use crate::ir::{lower, FunctionIr, Opcode, ValueId};

    /// Four loops: a counter copied at the header before its update (as
    /// nvcc writes a pointer walked along an array), a step on the left of
    /// a commutative addition, a halving counter, and a value that is no
    /// counter (updated by a load); the first runs a constant count, the
    /// second up to a parameter.
    const PTX: &str = r#"
.entry k(.param .u64 k_p, .param .u32 k_n) {
    ld.param.u64 %rd1, [k_p];
    ld.param.u32 %r9, [k_n];
    mov.u64 %rd2, 0;
$copied:
    mov.u64 %rd3, %rd2;
    add.s64 %rd2, %rd3, 280;
    setp.lt.u64 %p1, %rd2, 2800;
    @%p1 bra $copied;
    mov.u32 %r1, 0;
$left:
    add.s32 %r1, 4, %r1;
    setp.lt.u32 %p2, %r1, %r9;
    @%p2 bra $left;
    mov.u32 %r2, %ntid.x;
$halving:
    shr.u32 %r2, %r2, 1;
    setp.ne.u32 %p3, %r2, 0;
    @%p3 bra $halving;
    mov.u64 %rd4, %rd1;
$chased:
    ld.global.u64 %rd4, [%rd4];
    setp.ne.u64 %p4, %rd4, 0;
    @%p4 bra $chased;
    ret;
}"#;

    fn counter<'f>(f: &'f FunctionIr<'_>, reg: &str) -> Option<&'f super::Induction> {
        let v = (0..f.ssa.values.len())
            .map(ValueId::new)
            .find(|&v| matches!(f.ssa.values[v], crate::ir::ValueDef::Phi(_)) && f.ssa.reg_of(v, &f.insts) == reg)?;
        f.loops.induction(v)
    }

    #[test]
    fn counters_are_recognised_through_copies_and_either_operand() {
        let m = crate::ptx::parse(PTX).unwrap();
        let fs = lower(&m);
        let f = &fs[0];
        let copied = counter(f, "%rd2").expect("the copied counter");
        assert_eq!((copied.op(f), copied.step, copied.additive(f)), (Opcode::Add, Step::Imm(280), true));
        let left = counter(f, "%r1").expect("the counter on the right of its addition");
        assert_eq!((left.step_operand, left.step, left.additive(f)), (1, Step::Imm(4), true));
        assert_eq!(left.next(f, 8, 4), Some(12));
        let halving = counter(f, "%r2").expect("the halving counter");
        assert_eq!(
            (halving.op(f), halving.additive(f), halving.stepped(f), halving.next(f, 256, 1)),
            (Opcode::Shr, false, true, Some(128))
        );
        assert!(counter(f, "%rd4").is_none(), "a pointer chased through memory is no counter");
    }

    #[test]
    fn trip_counts_constant_and_runtime() {
        let m = crate::ptx::parse(PTX).unwrap();
        let fs = lower(&m);
        let f = &fs[0];
        let sums = crate::divergence::Summaries::compute(&fs);
        let d = crate::divergence::Divergence::analyze(f, &sums);
        let shape = crate::model::Shape::new([256, 1, 1], crate::model::ShapeSource::Cli);
        let evals = crate::memory::Evals::new(f, &d, &shape);
        let trips = |l: usize| f.loops.trip_count(f, crate::ir::LoopId::new(l), 64, |c, n| Some(evals.uniform_at(c, n)? != 0));
        let by_header = |reg: &str| {
            let l = counter(f, reg).unwrap().lp;
            trips(l.index())
        };
        // 0, 280, … 2520 run; the test after 2800 leaves: ten iterations
        assert_eq!(by_header("%rd2"), Some(Trips::Known(10)));
        assert_eq!(by_header("%r1"), Some(Trips::Runtime));
        // a halving counter is stepped the same way each iteration: 256, 128, … 1
        assert_eq!(by_header("%r2"), Some(Trips::Known(9)));
    }
}
