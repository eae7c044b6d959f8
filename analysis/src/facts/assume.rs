//! What a fact rests on that the kernel does not fix: the uniform values
//! an evaluation gave a sample (a scalar parameter, a value loaded from an
//! address the same in every thread, a loop counter past the values its
//! start and step give; `crate::memory::Evals` records them), the unknown
//! values a lane stride was taken as large for, and the values a branch's
//! split count was found with. A prediction or witness without any holds
//! for every value the kernel allows; one with some holds for the samples
//! named, which its finding carries (`Finding::assumes`).
//!
//! The evaluator says which sampled leaves each value it computes was
//! computed from (`divergence::eval::Leaves`): a prediction or a race
//! witness keeps those of the evaluations it was made from.
//!
//! Owns: naming the assumptions and deciding which a set of values rests
//! on. Does not own: giving samples (`crate::memory`) or what a finding
//! does with them (`crate::lints`).

use crate::divergence::eval::Leaves;
use crate::divergence::Divergence;
use crate::ir::inst::Opcode;
use crate::ir::{FunctionIr, InstId, ValueDef, ValueId};
use crate::memory::{Sampled, StrideSymbol};
use crate::ptx::Operand;

/// A value a prediction or a witness was computed with that the kernel
/// does not fix.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Assumption {
    /// How the PTX names it: a parameter (`n`, or `p+8` for a field of a
    /// struct parameter), else the register holding it.
    pub name: String,
    pub kind: Assumed,
    /// The PTX line that computes it (none for a parameter).
    pub ptx_line: Option<u32>,
    /// The value it was given; for a stride, the bytes between
    /// neighbouring threads it gave.
    pub sample: i64,
    /// It decides only where the warps' addresses start within a sector
    /// (other values give the prediction's misaligned variant).
    pub alignment: bool,
    /// What the kernel itself says about it on every path to the fact: the
    /// uniform tests it passed (`n < 1024`), its own preconditions
    /// (`(C % 256) == 0` after `if (C % 256 != 0) __trap();`, an early
    /// return of the whole block).
    pub known: Vec<String>,
    /// The parameter it is (its index in the function's parameters), with
    /// the byte offset of the field read (0: the whole parameter): a replay
    /// of the witness gives it `sample`. `None`: not a parameter.
    pub param: Option<(u32, u32)>,
}

/// What kind of value an assumption is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Assumed {
    /// A scalar parameter (of the kernel, or of a device function analysed
    /// for every caller) given a sample.
    Parameter,
    /// A value loaded from an address that is the same in every thread,
    /// given a sample.
    Loaded,
    /// A loop counter past the values its start and step give, given one
    /// of its earlier values or a sample.
    Counter,
    /// The grid's size along a dimension (`gridDim`), not given, given a
    /// sample.
    Grid,
    /// Another uniform value not known statically (a call's result, a
    /// value chosen at a join, two registers packed into one…) given a
    /// sample.
    Value,
    /// A lane stride that is a multiple of a value not known statically,
    /// taken as large.
    Stride,
    /// Two threads load the same value (a key an address is computed
    /// from); `sample` is not used.
    SameKey,
    /// A parameter the finding states a condition on (`when C ≥ 129`):
    /// solved, not sampled; `sample` is the value its witness is for.
    Condition,
}

impl Assumed {
    /// A short key for JSON.
    pub fn key(self) -> &'static str {
        match self {
            Assumed::Parameter => "parameter",
            Assumed::Loaded => "loaded",
            Assumed::Counter => "counter",
            Assumed::Grid => "grid",
            Assumed::Value => "value",
            Assumed::Stride => "stride",
            Assumed::SameKey => "same_key",
            Assumed::Condition => "condition",
        }
    }
}

/// The sampled leaves `on` (a prediction's or a witness's, made at the
/// instructions `at`), each with the sample `sampled` says it was given and
/// what the kernel says about it there, but `solved` (the values a finding
/// states its condition on).
pub fn of_leaves(f: &FunctionIr<'_>, d: &Divergence, on: &Leaves, sampled: &Sampled, solved: &[ValueId], at: &[InstId]) -> Vec<Assumption> {
    on.iter()
        .filter(|v| !solved.contains(v))
        .filter_map(|v| {
            let mut a = named(f, v, *sampled.get(&v)?);
            for k in at.iter().flat_map(|&i| known(f, d, v, i)) {
                if !a.known.contains(&k) {
                    a.known.push(k);
                }
            }
            Some(a)
        })
        .collect()
}

/// The uniform tests on `v` the kernel made on every path to instruction
/// `at`, each as it holds there: the branches of the blocks that dominate
/// `at` whose predicate is the same in every thread and computed from `v`
/// (on the side that leads to `at`), and the guarded `trap`, `exit` and
/// `ret` before it (their guard is false past them).
pub fn known(f: &FunctionIr<'_>, d: &Divergence, v: ValueId, at: InstId) -> Vec<String> {
    preconditions(f, d, v, at).into_iter().map(|(cond, value)| condition(f, cond, value)).collect()
}

/// [`known`]'s tests as values: each predicate with the value it has on
/// the way to `at`, outermost first.
pub fn preconditions(f: &FunctionIr<'_>, d: &Divergence, v: ValueId, at: InstId) -> Vec<(ValueId, bool)> {
    let cfg = &f.cfg;
    let home = cfg.block_of(at);
    let mut out = Vec::new();
    let mut p = home;
    while let Some(up) = cfg.idom(p) {
        p = up;
        let Some(last) = cfg.blocks[p].last() else { continue };
        let inst = &f.insts[last];
        let Some(g) = inst.ast.guard else { continue };
        let Some(cond) = f.ssa.use_of(last, g.reg).filter(|&c| d.at(f, c, p).is_uniform() && reads(f, c, v)) else { continue };
        // the predicate's value on the way to `at`
        let value = if inst.is_jump() {
            let target = f.branch_target(last);
            let on_target = target.is_some_and(|t| cfg.dominates(t, home));
            let on_fall = cfg.blocks[p].succs.iter().any(|&s| Some(s) != target && cfg.dominates(s, home));
            match (on_target, on_fall) {
                (true, false) => !g.negated,
                (false, true) => g.negated,
                _ => continue,
            }
        } else if matches!(inst.opcode, Opcode::Trap | Opcode::Exit | Opcode::Ret) {
            g.negated
        } else {
            continue;
        };
        out.push((cond, value));
    }
    out.reverse();
    out
}

/// Does `x` read `v` (through its operands and phis)?
fn reads(f: &FunctionIr<'_>, x: ValueId, v: ValueId) -> bool {
    let mut walk = crate::ir::values::Walk::new([x]);
    while let Some(y) = walk.next_value() {
        if y == v {
            return true;
        }
        match f.ssa.values[y] {
            ValueDef::Inst { inst, .. } => walk.extend(f.ssa.uses(inst).iter().copied()),
            ValueDef::Phi(p) => walk.extend(f.ssa.phis[p].incoming.iter().map(|x| x.1)),
            ValueDef::Entry(_) => {}
        }
    }
    false
}

/// A predicate as C writes it, given the value it has (`n < 1024`; `!(…)`
/// where no inverse comparison says it).
fn condition(f: &FunctionIr<'_>, cond: ValueId, value: bool) -> String {
    let setp = f.def_inst(crate::ir::values::through_copies(f, cond)).filter(|&i| {
        let x = &f.insts[i];
        x.opcode == Opcode::Setp && x.bool_op.is_none() && x.operands().len() == 3
    });
    let Some(i) = setp else {
        let r = f.ssa.reg_of(cond, &f.insts);
        return if value { format!("{r} is true") } else { format!("{r} is false") };
    };
    let x = &f.insts[i];
    let (a, b) = (expr(f, i, 1, 4), expr(f, i, 2, 4));
    match (x.cmp, value) {
        (Some(c), true) => format!("{a} {} {b}", c.symbol()),
        (Some(c), false) => match c.inverse() {
            Some(n) => format!("{a} {} {b}", n.symbol()),
            None => format!("!({a} {} {b})", c.symbol()),
        },
        (None, _) => f.ssa.reg_of(cond, &f.insts).to_string(),
    }
}

/// Operand `k` of instruction `i` as C writes it: constants, parameters by
/// name, and arithmetic on them, `depth` levels deep (else the register).
fn expr(f: &FunctionIr<'_>, i: InstId, k: usize, depth: u32) -> String {
    match f.insts[i].operand(k) {
        Some(Operand::Imm(c)) => c.to_string(),
        _ => match f.operand_value(i, k) {
            Some(v) => value_expr(f, v, depth),
            None => "?".to_string(),
        },
    }
}

fn value_expr(f: &FunctionIr<'_>, v: ValueId, depth: u32) -> String {
    let v = crate::ir::values::through_copies(f, v);
    let Some(i) = f.def_inst(v) else { return register(f, v) };
    let x = &f.insts[i];
    if let Some((p, off)) = x.param_read() {
        let p = f.param_label(p);
        return if off == 0 { p } else { format!("{p}+{off}") };
    }
    let op = match x.opcode {
        Opcode::Add => "+",
        Opcode::Sub => "-",
        Opcode::Mul => "*",
        Opcode::Div => "/",
        Opcode::Rem => "%",
        Opcode::And => "&",
        Opcode::Or => "|",
        Opcode::Shl => "<<",
        Opcode::Shr => ">>",
        _ => "",
    };
    if op.is_empty() || depth == 0 || x.operands().len() != 3 || x.ast.guard.is_some() {
        return register(f, v);
    }
    format!("({} {op} {})", expr(f, i, 1, depth - 1), expr(f, i, 2, depth - 1))
}

/// Values given samples (a branch's split count was found with them, say)
/// for a fact at instruction `at`, with what the kernel says about them there.
pub fn of_samples(f: &FunctionIr<'_>, d: &Divergence, witness: &[(ValueId, i64)], at: InstId) -> Vec<Assumption> {
    witness.iter().map(|&(v, x)| Assumption { known: known(f, d, v, at), ..named(f, v, x) }).collect()
}

/// Is `v` a block index, or a loop counter whose start and step the kernel
/// fixes (constants, the block shape, declared values, other such
/// counters)? Its sampled values are then the block or the iteration a
/// fact is for, not guesses.
pub fn iteration_or_block(f: &FunctionIr<'_>, d: &Divergence, v: ValueId) -> bool {
    use crate::ir::inst::Special;
    if matches!(f.ssa.special(v), Some(Special::Ctaid(_))) {
        return true;
    }
    let Some(ind) = f.loops.induction(v).filter(|i| i.invariant) else { return false };
    let mut walk = crate::ir::values::Walk::new(ind.init);
    if let crate::ir::loops::Step::Value(s) = ind.step {
        walk.push(s);
    }
    while let Some(x) = walk.next_value() {
        if d.vals[x].const_value().is_some() {
            continue;
        }
        match f.ssa.values[x] {
            ValueDef::Entry(_) if matches!(f.ssa.special(x), Some(Special::Ntid(_))) => {}
            ValueDef::Inst { inst, .. } if f.insts[inst].param_read().is_none() && f.insts[inst].access().is_none() => {
                walk.extend(f.ssa.uses(inst).iter().copied())
            }
            ValueDef::Phi(_) if f.loops.induction(x).is_some() => {
                let i = f.loops.induction(x).expect("a counter");
                walk.extend(i.init);
                if let crate::ir::loops::Step::Value(s) = i.step {
                    walk.push(s);
                }
            }
            _ => return false,
        }
    }
    !walk.cut()
}

/// The unknown values a prediction's lane strides were taken as large for.
pub fn of_strides(f: &FunctionIr<'_>, strides: &[(StrideSymbol, i64)]) -> Vec<Assumption> {
    strides
        .iter()
        .map(|&(s, bytes)| {
            let (name, ptx_line) = match s {
                StrideSymbol::Named(sym) if (sym as usize) < f.ssa.values.len() => {
                    let a = named(f, ValueId::new(sym as usize), 0);
                    (a.name, a.ptx_line)
                }
                // a parameter of a call context, by name
                StrideSymbol::Named(sym) => match f.func.params.iter().find(|p| crate::divergence::name_key(p.name, 0) == sym) {
                    Some(p) => (f.param_label(p.name), None),
                    None => ("a uniform value".to_string(), None),
                },
                StrideSymbol::Several => ("a product of uniform values".to_string(), None),
            };
            Assumption { name, kind: Assumed::Stride, ptx_line, sample: bytes, alignment: false, known: Vec::new(), param: None }
        })
        .collect()
}

/// Value `v` given sample `x`, named as the PTX names it.
pub fn named(f: &FunctionIr<'_>, v: ValueId, x: i64) -> Assumption {
    let line = |i: crate::ir::InstId| Some(f.insts[i].ast.pos.line);
    let reg = || f.ssa.reg_of(v, &f.insts).to_string();
    let param = f.def_inst(v).and_then(|i| f.insts[i].param_read()).and_then(|(p, off)| Some((f.param_index(p)?, off as u32)));
    let (name, kind, ptx_line) = match f.ssa.values[v] {
        ValueDef::Inst { inst, .. } => match f.insts[inst].param_read() {
            Some((p, 0)) => (f.param_label(p), Assumed::Parameter, None),
            Some((p, off)) => (format!("{}+{off}", f.param_label(p)), Assumed::Parameter, None),
            None if f.insts[inst].access().is_some() => (reg(), Assumed::Loaded, line(inst)),
            None => (reg(), Assumed::Value, line(inst)),
        },
        ValueDef::Phi(p) if f.cfg.loop_with_header(f.ssa.phis[p].block).is_some() => {
            (reg(), Assumed::Counter, f.loops.induction(v).and_then(|i| line(i.update)))
        }
        ValueDef::Phi(_) => (reg(), Assumed::Value, None),
        ValueDef::Entry(_) => match f.ssa.special(v) {
            Some(crate::ir::inst::Special::Nctaid(d)) => (format!("gridDim.{}", ["x", "y", "z"][d as usize % 3]), Assumed::Grid, None),
            _ => (reg(), Assumed::Value, None),
        },
    };
    Assumption { name, kind, ptx_line, sample: x, alignment: false, known: Vec::new(), param }
}

/// The witness of a lost update: two threads load the same value at
/// instruction `key` (named by its register, or the array it reads).
pub fn same_key(f: &FunctionIr<'_>, key: crate::ir::InstId) -> Assumption {
    let name = f.ssa.defs(key).first().map_or_else(|| "?".to_string(), |&v| f.ssa.reg_of(v, &f.insts).to_string());
    Assumption {
        name,
        kind: Assumed::SameKey,
        ptx_line: Some(f.insts[key].ast.pos.line),
        sample: 0,
        alignment: false,
        known: Vec::new(),
        param: None,
    }
}

/// A value no expression says: a special register as CUDA names it
/// (`blockIdx.x`), else its register.
fn register(f: &FunctionIr<'_>, v: ValueId) -> String {
    use crate::ir::inst::Special;
    let dim = |d: u8| ["x", "y", "z"][d as usize % 3];
    match f.ssa.special(v) {
        Some(Special::Tid(d)) => format!("threadIdx.{}", dim(d)),
        Some(Special::Ntid(d)) => format!("blockDim.{}", dim(d)),
        Some(Special::Ctaid(d)) => format!("blockIdx.{}", dim(d)),
        Some(Special::Nctaid(d)) => format!("gridDim.{}", dim(d)),
        _ => f.ssa.reg_of(v, &f.insts).to_string(),
    }
}
