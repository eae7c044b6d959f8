//! What a function's SSA values are built from, asked in one place: plain
//! copies (`through_copies`), the values computed from given ones
//! (`derived_from`), value numbering (`same_value`), the pointer an address
//! is computed from (`root`), the loaded values addresses add to as
//! pointers (`loaded_pointers`) and the scalar parameters an address reads
//! (`scalar_parameters`).
//!
//! Every walk back along definitions that is not a pass over the whole
//! function is a [`Walk`]: each value once, at most [`WALK_BUDGET`] of
//! them. Passes over the whole function (`derived_from`,
//! `loaded_pointers`) visit each value once and need no budget.
//!
//! Owns: these questions about values. Does not own: what a value is in
//! thread terms (`crate::divergence`) or loop counters (`super::loops`).

use super::dataflow::BitSet;
use super::inst::{self, Opcode, Space};
use super::{FunctionIr, Inst, User, ValueDef, ValueId};
use crate::ptx::Operand;
use rustc_hash::FxHashSet;

/// The most values one walk back along definitions visits (a chain of
/// copies, the operands of an address, a loop's exit test, the sources of a
/// thread-dependent value). Past it the walk stops, and the question it
/// answers says what it does with an incomplete answer.
pub const WALK_BUDGET: usize = 256;

/// A bounded walk over SSA values: each value is visited once, at most
/// [`WALK_BUDGET`] of them.
pub struct Walk {
    seen: FxHashSet<ValueId>,
    stack: Vec<ValueId>,
    cut: bool,
}

impl Walk {
    /// A walk starting from `seeds`.
    pub fn new(seeds: impl IntoIterator<Item = ValueId>) -> Walk {
        Walk { seen: FxHashSet::default(), stack: seeds.into_iter().collect(), cut: false }
    }

    /// The next value not visited yet; `None` when none is left or the
    /// budget is spent ([`Walk::cut`] tells which).
    pub fn next_value(&mut self) -> Option<ValueId> {
        while let Some(v) = self.stack.pop() {
            if self.seen.contains(&v) {
                continue;
            }
            if self.seen.len() >= WALK_BUDGET {
                self.cut = true;
                self.stack.clear();
                return None;
            }
            self.seen.insert(v);
            return Some(v);
        }
        None
    }

    /// Visit `v` later.
    pub fn push(&mut self, v: ValueId) {
        self.stack.push(v);
    }

    pub fn extend(&mut self, vs: impl IntoIterator<Item = ValueId>) {
        self.stack.extend(vs);
    }

    /// Did the walk stop at the budget (its answer is incomplete)?
    pub fn cut(&self) -> bool {
        self.cut
    }
}

/// Follow plain copies (`mov`, `cvt` between integers, unguarded) back to
/// the value copied.
pub fn through_copies(f: &FunctionIr<'_>, mut v: ValueId) -> ValueId {
    for _ in 0..WALK_BUDGET {
        let Some(i) = f.def_inst(v) else { return v };
        let inst = &f.insts[i];
        if !matches!(inst.opcode, Opcode::Mov | Opcode::Cvt) || inst.ast.guard.is_some() || inst.is_float() {
            return v;
        }
        match f.operand_value(i, 1) {
            Some(x) => v = x,
            None => return v,
        }
    }
    v
}

/// The values computed from `seeds` (the seeds included), through
/// instructions and phis: one forward pass over the SSA users.
pub fn derived_from(f: &FunctionIr<'_>, stack: Vec<ValueId>) -> BitSet {
    derive(f, stack, &rustc_hash::FxHashMap::default())
}

/// [`derived_from`], and through the branches that join: a phi at a join
/// (not a loop header) takes, in each thread, the value of the side the
/// thread came from, which the branch ending the join's immediate
/// dominator decides ([`join_branch`]); where that branch's condition is
/// derived from the seeds, so is the phi. What reuses a value computed
/// under other seeds' values (another loop iteration, another block)
/// needs this.
pub fn derived_through_joins(f: &FunctionIr<'_>, seeds: Vec<ValueId>) -> BitSet {
    // each join's phis by the condition that decides them
    let mut decided: rustc_hash::FxHashMap<ValueId, Vec<ValueId>> = Default::default();
    for p in f.ssa.phis.iter().filter(|p| f.cfg.loop_with_header(p.block).is_none()) {
        if let Some((_, cond)) = join_branch(f, p.block) {
            decided.entry(cond).or_default().push(p.value);
        }
    }
    derive(f, seeds, &decided)
}

/// The branch that decides which side reaches `join` (the last
/// instruction of its immediate dominator, a guarded jump) and the value
/// of its condition.
pub fn join_branch(f: &FunctionIr<'_>, join: crate::ir::BlockId) -> Option<(crate::ir::InstId, ValueId)> {
    let br = f.cfg.blocks[f.cfg.idom(join)?].last()?;
    let g = f.insts[br].ast.guard.filter(|_| f.insts[br].is_jump())?;
    Some((br, f.ssa.use_of(br, g.reg)?))
}

/// The values computed from `stack`, and the phis `decided` gives for each
/// of them (one forward pass).
fn derive(f: &FunctionIr<'_>, mut stack: Vec<ValueId>, decided: &rustc_hash::FxHashMap<ValueId, Vec<ValueId>>) -> BitSet {
    let mut out = BitSet::new(f.ssa.values.len());
    while let Some(v) = stack.pop() {
        if out.contains(v.index()) {
            continue;
        }
        out.insert(v.index());
        if let Some(phis) = decided.get(&v) {
            stack.extend_from_slice(phis);
        }
        for u in &f.ssa.users[v] {
            match *u {
                User::Inst(i) => stack.extend_from_slice(f.ssa.defs(i)),
                User::Phi(p) => stack.push(f.ssa.phis[p].value),
            }
        }
    }
    out
}

/// Do `a` and `b` hold the same bits in every thread, whichever path
/// reached them (value numbering): the same value through copies (the
/// same special register read twice, say), or the same pure operation on
/// the same operands (constants, kernel parameters, equal values). At most
/// [`WALK_BUDGET`] pairs of values are compared.
pub fn same_value(f: &FunctionIr<'_>, a: ValueId, b: ValueId) -> bool {
    let mut budget = WALK_BUDGET;
    same_value_within(f, a, b, &mut budget)
}

fn same_value_within(f: &FunctionIr<'_>, a: ValueId, b: ValueId, budget: &mut usize) -> bool {
    let (a, b) = (through_copies(f, a), through_copies(f, b));
    if a == b {
        return true;
    }
    let (ValueDef::Inst { inst: ia, slot: sa }, ValueDef::Inst { inst: ib, slot: sb }) = (f.ssa.values[a], f.ssa.values[b]) else {
        return false;
    };
    if *budget == 0 || sa != sb {
        return false;
    }
    *budget -= 1;
    let (x, y) = (&f.insts[ia], &f.insts[ib]);
    // no memory, no other lanes, no calls: the result depends on the operands only
    // (kernel parameters and constants are the same memory everywhere)
    let pure = |i: &Inst<'_>| {
        i.ast.guard.is_none()
            && i.call_target().is_none()
            && !i.lane_exchanging()
            && match i.access() {
                None => !i.is_block_barrier(),
                Some(inst::AccessKind::Load) => matches!(i.space, Some(Space::Param) | Some(Space::Const)),
                Some(_) => false,
            }
    };
    let same_op = (x.opcode, x.ty, x.dty, x.cmp, x.bool_op, x.sub, x.flags, x.round, x.space, x.vec)
        == (y.opcode, y.ty, y.dty, y.cmp, y.bool_op, y.sub, y.flags, y.round, y.space, y.vec);
    let (ox, oy) = (x.operands(), y.operands());
    if !pure(x) || !pure(y) || !same_op || ox.len() != oy.len() {
        return false;
    }
    // the sources (operand 0 is the destination of an instruction that writes one)
    (usize::from(x.has_dest())..ox.len()).all(|k| match (f.operand_value(ia, k), f.operand_value(ib, k)) {
        (Some(u), Some(v)) => {
            let offsets = match (&ox[k], &oy[k]) {
                (Operand::Addr(p), Operand::Addr(q)) => p.offset == q.offset,
                _ => true,
            };
            offsets && same_value_within(f, u, v, budget)
        }
        (None, None) => ox[k] == oy[k],
        _ => false,
    })
}

/// The pointer an address is computed from: follow additions through the
/// operand that is itself a pointer, up to a parameter load, a symbol or
/// a phi (a pointer a loop steps is its own root: accesses grouped by
/// root are those of one walk).
pub fn root(f: &FunctionIr<'_>, v: ValueId) -> ValueId {
    let mut budget = WALK_BUDGET;
    root_within(f, v, false, &mut budget, &mut Vec::new())
}

/// [`root`], and through a phi whose incoming values have one root apart
/// from those computed from the phi itself (`p = a; … p += 16`: `a`): the
/// array a stepped pointer walks, for the races, which pair any two
/// accesses of one array.
pub fn array_root(f: &FunctionIr<'_>, v: ValueId) -> ValueId {
    let mut budget = WALK_BUDGET;
    root_within(f, v, true, &mut budget, &mut Vec::new())
}

fn root_within(f: &FunctionIr<'_>, mut v: ValueId, phis_too: bool, budget: &mut usize, phis: &mut Vec<ValueId>) -> ValueId {
    while *budget > 0 {
        *budget -= 1;
        match f.ssa.values[v] {
            ValueDef::Phi(_) if !phis_too => return v,
            ValueDef::Phi(p) => {
                if phis.contains(&v) {
                    return v;
                }
                phis.push(v);
                let mut common = None;
                for &(_, x) in &f.ssa.phis[p].incoming {
                    let r = root_within(f, x, true, budget, phis);
                    if phis.contains(&r) {
                        continue;
                    }
                    if common.is_some_and(|c| c != r) {
                        common = None;
                        break;
                    }
                    common = Some(r);
                }
                phis.pop();
                return common.unwrap_or(v);
            }
            ValueDef::Inst { inst: i, .. } => {
                if !matches!(f.insts[i].opcode, Opcode::Add | Opcode::Sub | Opcode::Mad | Opcode::Cvta | Opcode::Mov | Opcode::Cvt) {
                    return v;
                }
                let next = (1..f.insts[i].operands().len())
                    .filter_map(|k| f.operand_value(i, k))
                    .find(|&x| matches!(f.spaces.of(x), Space::Global | Space::Shared | Space::Local | Space::Generic));
                match next {
                    Some(x) => v = x,
                    None => return v,
                }
            }
            ValueDef::Entry(_) => return v,
        }
    }
    v
}

/// The 64-bit loaded values (parameters, pointers read from a struct or
/// from memory) that the addresses of `addresses` add to: the pointers.
/// Followed back through additions (both sides), subtractions (the
/// minuend), `mad` (the addend) and copies, not through scaling, so a
/// length that indexes an array is not taken for a pointer. Each value is
/// visited once.
pub fn loaded_pointers(f: &FunctionIr<'_>, addresses: impl IntoIterator<Item = ValueId>) -> FxHashSet<ValueId> {
    let mut out = FxHashSet::default();
    let mut seen = BitSet::new(f.ssa.values.len());
    let mut stack: Vec<ValueId> = addresses.into_iter().collect();
    while let Some(v) = stack.pop() {
        if seen.contains(v.index()) {
            continue;
        }
        seen.insert(v.index());
        let Some(i) = f.def_inst(v) else { continue };
        let inst = &f.insts[i];
        let sources: &[usize] = match inst.opcode {
            Opcode::Ld if inst.ty.is_some_and(|t| t.bits() == 64) => {
                out.insert(v);
                &[]
            }
            Opcode::Add => &[1, 2],
            Opcode::Sub | Opcode::Cvta | Opcode::Mov | Opcode::Cvt => &[1],
            Opcode::Mad => &[3],
            _ => &[],
        };
        stack.extend(sources.iter().filter_map(|&k| f.operand_value(i, k)));
    }
    out
}

/// The scalar parameters (`ld.param` values that are not pointers) an
/// address is computed from, its root pointer aside (a [`Walk`]: past the
/// budget, those found so far).
pub fn scalar_parameters(f: &FunctionIr<'_>, addr: ValueId) -> Vec<ValueId> {
    let root = root(f, addr);
    let mut out = Vec::new();
    let mut walk = Walk::new([addr]);
    while let Some(v) = walk.next_value() {
        if v == root {
            continue;
        }
        // a join of parameters (`a[x]` and `a[y]` in one store after the two sides of a
        // branch); not a loop's counter (its step is not an offset to solve for)
        if let ValueDef::Phi(p) = f.ssa.values[v] {
            let ph = &f.ssa.phis[p];
            if f.cfg.loop_with_header(ph.block).is_none() {
                walk.extend(ph.incoming.iter().map(|x| x.1));
            }
            continue;
        }
        let Some(i) = f.def_inst(v) else { continue };
        let inst = &f.insts[i];
        if inst.param_read().is_some() {
            if !matches!(f.spaces.definite(v), Space::Global | Space::Shared) && !out.contains(&v) {
                out.push(v);
            }
            continue;
        }
        walk.extend((1..inst.operands().len()).filter_map(|k| f.operand_value(i, k)));
    }
    out
}

#[cfg(test)]
mod tests {
    use crate::ir::{lower, ValueDef, ValueId};
    use crate::memory::{Evals, Query};

    /// A join inside a loop on the counter's parity: `x` is `2 t` in even
    /// iterations and `t` in odd ones. It is no data user of the counter,
    /// but it is derived from it through the join, so a later iteration's
    /// evaluator computes it again instead of taking the first's.
    #[test]
    fn a_join_on_a_derived_condition_is_derived() {
        let ptx = r#"
.version 7.0
.target sm_80
.address_size 64
.visible .entry k(.param .u64 k_param_0)
{
    .reg .pred %p<3>;
    .reg .b32 %r<10>;
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, 0;
$loop:
    and.b32 %r3, %r2, 1;
    setp.eq.u32 %p1, %r3, 0;
    @%p1 bra $even;
    mov.u32 %r4, %r1;
    bra.uni $join;
$even:
    shl.b32 %r4, %r1, 1;
$join:
    add.s32 %r5, %r4, 0;
    add.s32 %r2, %r2, 1;
    setp.lt.u32 %p2, %r2, 4;
    @%p2 bra $loop;
    ret;
}"#;
        let m = crate::ptx::parse(ptx).unwrap();
        let fs = lower(&m);
        let f = &fs[0];
        let value = |reg: &str, phi: bool| {
            (0..f.ssa.values.len())
                .map(ValueId::new)
                .find(|&v| matches!(f.ssa.values[v], ValueDef::Phi(_)) == phi && f.ssa.reg_of(v, &f.insts) == reg)
                .unwrap()
        };
        let (counter, x) = (value("%r2", true), value("%r5", false));
        assert!(!super::derived_from(f, vec![counter]).contains(x.index()));
        assert!(super::derived_through_joins(f, vec![counter]).contains(x.index()));
        let sums = crate::divergence::Summaries::compute(&fs);
        let d = crate::divergence::Divergence::analyze(f, &sums);
        let shape = crate::model::Shape::new([64, 1, 1], crate::model::ShapeSource::Cli);
        let evals = Evals::new(f, &d, &shape);
        let at = |iteration| evals.eval(x, Query::block(iteration)).map(|v| v[..3].to_vec());
        assert_eq!(at(0), Some(vec![0, 2, 4]));
        assert_eq!(at(1), Some(vec![0, 1, 2]), "the second iteration's own value, not the first's");
    }
}
