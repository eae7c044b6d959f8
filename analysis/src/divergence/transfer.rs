//! Transfer functions: the abstract value an instruction computes from the
//! abstract values of its operands, and the values of special registers.
//! Constants are folded with the one scalar semantics (`crate::ir::scalar`),
//! exact at the instruction's width and signedness; affine arithmetic
//! reads constants as the sign-extended value of the operation's width.
//!
//! Owns: the instruction → lattice-operation table. Does not own: the
//! fixed-point iteration or sync dependence (see the parent module).

use super::domain::AbsVal;
use super::{Summaries, Values};
use crate::ir::inst::{Flag, Inst, Opcode, Space, Special, Sub, Ty, Variation};
use crate::ir::{scalar, FunctionIr, InstId, ValueId};
use crate::ptx::Operand;

/// A stable symbol key for a named uniform thing (a kernel parameter, a
/// special register); SSA values use their own id (below 2^31).
pub fn name_key(name: &str, offset: i64) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    for b in name.bytes().chain(offset.to_le_bytes()) {
        h = (h ^ b as u32).wrapping_mul(0x0100_0193);
    }
    h | 0x8000_0000
}

/// Give an unnamed uniform value the name of the SSA value holding it.
pub fn named(v: AbsVal, id: ValueId) -> AbsVal {
    match v {
        AbsVal::Affine { c, k: None, .. } if c == super::domain::ZERO => AbsVal::symbol(id.index() as u32),
        _ => v,
    }
}

/// Abstract value of a special register.
pub fn special(s: Special) -> AbsVal {
    match s.variation() {
        Variation::ThreadCoord(d) => AbsVal::tid(d as usize),
        Variation::Lane => AbsVal::Top { data: false },
        Variation::Warp => AbsVal::WarpUniform,
        Variation::Unpredictable => AbsVal::Top { data: true },
        Variation::Uniform => AbsVal::uniform(None),
    }
}

/// Value of operand `k` of instruction `i`.
#[inline]
pub fn operand_at<V: Values>(d: &V, f: &FunctionIr<'_>, i: InstId, k: usize) -> AbsVal {
    let Some(o) = f.insts[i].operand(k) else { return AbsVal::Bottom };
    match (o, f.operand_value(i, k)) {
        (Operand::Reg(_) | Operand::Not(_) | Operand::Pair(..), Some(v)) => d.at(f, v, f.cfg.block_of(i)),
        (Operand::Addr(a), Some(v)) if a.extra.is_empty() => d.at(f, v, f.cfg.block_of(i)) + AbsVal::konst(a.offset),
        _ => operand(d, f, i, o),
    }
}

/// Value of one operand as read by instruction `i`.
pub fn operand<V: Values>(d: &V, f: &FunctionIr<'_>, i: InstId, o: &Operand<'_>) -> AbsVal {
    match o {
        Operand::Reg(r) | Operand::Not(r) => match f.ssa.use_of(i, r) {
            Some(v) => d.at(f, v, f.cfg.block_of(i)),
            None => Special::parse(r).map_or(AbsVal::uniform(None), special),
        },
        Operand::Imm(k) => AbsVal::konst(*k),
        Operand::Sym(s) => crate::ir::inst::predefined_constant(s).map_or(AbsVal::uniform(None), AbsVal::konst),
        Operand::Float(_) | Operand::SymOff(..) | Operand::Sink => AbsVal::uniform(None),
        Operand::Addr(a) => {
            let base = a.base.as_ref().map(|b| operand(d, f, i, b)).unwrap_or(AbsVal::konst(0));
            let mut v = base + AbsVal::konst(a.offset);
            for e in &a.extra {
                let ev = operand(d, f, i, e);
                v = AbsVal::uniform_or_top(&[v, ev]).join(v);
            }
            v
        }
        Operand::Vector(xs) | Operand::List(xs) => {
            let vs: Vec<AbsVal> = xs.iter().map(|x| operand(d, f, i, x)).collect();
            AbsVal::uniform_or_top(&vs)
        }
        Operand::Pair(p) => operand(d, f, i, &Operand::Reg(crate::ptx::split_pair(p).0)),
    }
}

/// The value instruction `i` writes to its `slot`-th destination.
pub fn inst_value<V: Values>(d: &V, f: &FunctionIr<'_>, sums: &Summaries<'_>, i: InstId, slot: usize) -> AbsVal {
    let inst = &f.insts[i];
    let v = raw_value(d, f, sums, inst, i, slot);
    match inst.ast.guard {
        None => v,
        Some(g) => {
            let gv = operand(d, f, i, &Operand::Reg(g.reg));
            let prior = f.ssa.prior(i, slot).map(|p| d.at(f, p, f.cfg.block_of(i))).unwrap_or(AbsVal::Bottom);
            if gv.is_uniform() || v == prior {
                v.join(prior)
            } else {
                AbsVal::top_of(&[v, prior, gv])
            }
        }
    }
}

/// The exact value of an integer instruction whose sources are all known
/// constants.
fn fold(inst: &Inst<'_>, slot: usize, srcs: &[AbsVal]) -> Option<i64> {
    if inst.is_float() || inst.operands().iter().any(|o| matches!(o, Operand::Vector(_) | Operand::List(_))) {
        return None;
    }
    let args: Option<Vec<u64>> = srcs.iter().map(|v| v.const_value().map(|k| k as u64)).collect();
    let bits = scalar::apply(inst, slot, &args?)?;
    Some(scalar::to_i64(scalar::dest_ty(inst, slot)?, bits))
}

/// A constant operand of a narrow integer operation as the affine domain
/// reads it: the sign-extended value at the operation's width (so that a
/// folded `0xffffffff` added to a thread index is `tid - 1`).
fn narrow(v: AbsVal, ty: Option<Ty>) -> AbsVal {
    match (v.const_value(), ty) {
        (Some(k), Some(t)) if t.bits() < 64 && !t.is_float() => AbsVal::konst(scalar::sext(k as u64, t.bits())),
        _ => v,
    }
}

fn raw_value<V: Values>(d: &V, f: &FunctionIr<'_>, sums: &Summaries<'_>, inst: &Inst<'_>, i: InstId, slot: usize) -> AbsVal {
    let n = inst.operands().len();
    let src = |k: usize| operand_at(d, f, i, k);
    let all_src = || -> Vec<AbsVal> { (1..n).map(src).collect() };
    let srcs = all_src();
    if srcs.iter().all(|v| v.const_value().is_some()) {
        if let Some(k) = fold(inst, slot, &srcs) {
            return AbsVal::konst(k);
        }
    }
    let float = inst.is_float();
    let arith = |k: usize| narrow(src(k), inst.ty);
    match inst.opcode {
        Opcode::Mov => match (inst.operand(0), inst.operand(1)) {
            (_, Some(Operand::Vector(_))) | (Some(Operand::Vector(_)), _) => AbsVal::uniform_or_top(&[src(1)]),
            _ => src(1),
        },
        Opcode::Cvta => src(1),
        Opcode::Cvt if !float => src(1),
        Opcode::Add if !float && !inst.has(Flag::CC) => arith(1) + arith(2),
        Opcode::Sub if !float && !inst.has(Flag::CC) => arith(1) - arith(2),
        Opcode::Neg if !float => -arith(1),
        Opcode::Mul if !float && !inst.has(Flag::HI) => arith(1) * arith(2),
        Opcode::Mad if !float && (inst.has(Flag::LO) || inst.has(Flag::WIDE)) => {
            let c = if inst.has(Flag::WIDE) { narrow(src(3), inst.ty.map(Ty::widened)) } else { arith(3) };
            arith(1) * arith(2) + c
        }
        Opcode::Shl => match src(2).const_value() {
            Some(k) if (0..63).contains(&k) => arith(1) * AbsVal::konst(1i64 << k),
            _ => AbsVal::uniform_or_top(&srcs),
        },
        Opcode::Selp => {
            let p = src(3);
            if p.is_uniform() {
                src(1).join(src(2))
            } else {
                AbsVal::top_of(&[src(1), src(2), p])
            }
        }
        Opcode::Ld | Opcode::Ldu => {
            if let Some(call) = inst.param_read().and_then(|(p, _)| f.call_returning(i, p)) {
                // a call's return value: uniform when the callee computes it from its
                // arguments alone and every argument is uniform
                let c = &f.insts[call];
                let pure = c.call_target().is_some_and(|t| sums.thread_invariant.contains(t) || !sums.defined.contains(t));
                let args = c.call_args().iter().map(|a| match a {
                    Operand::Sym(name) => f.call_argument(call, name).map(|v| d.at(f, v, f.cfg.block_of(call))),
                    Operand::Imm(_) => Some(AbsVal::konst(0)),
                    _ => None,
                });
                if pure && args.into_iter().all(|a| a.is_some_and(|a| a.is_uniform())) {
                    AbsVal::uniform(None)
                } else {
                    AbsVal::Top { data: true }
                }
            } else if let Some((p, off)) = inst.param_read() {
                // reloads of the same parameter are the same symbol
                AbsVal::symbol(name_key(p, off))
            } else if inst.space == Some(Space::Param) {
                AbsVal::uniform(None)
            } else if f.spaces.access(f, i) == Space::Local {
                // thread-private memory (also through generic pointers into the local depot)
                AbsVal::Top { data: true }
            } else if src(1).is_uniform() {
                AbsVal::uniform(None)
            } else if src(1).is_warp_uniform() {
                // every lane of a warp reads the same address
                AbsVal::WarpUniform
            } else {
                AbsVal::Top { data: true }
            }
        }
        // every lane reads the value of the same source lane
        Opcode::Shfl if matches!(inst.sub, Sub::Shfl(crate::ir::inst::ShflMode::Idx)) && src(2).is_uniform() => {
            if src(1).is_uniform() {
                AbsVal::uniform(None)
            } else {
                AbsVal::WarpUniform
            }
        }
        Opcode::Tex | Opcode::Tld4 | Opcode::Suld if srcs.iter().all(|v| v.is_uniform()) => AbsVal::uniform(None),
        Opcode::Atom | Opcode::Shfl | Opcode::Match | Opcode::Tex | Opcode::Tld4 | Opcode::Suld | Opcode::Txq => AbsVal::Top { data: true },
        // same in every lane of the warp, not across warps
        Opcode::Vote | Opcode::Activemask | Opcode::Redux => AbsVal::WarpUniform,
        // bar.red: a block-wide reduction
        Opcode::Bar | Opcode::Barrier => AbsVal::uniform(None),
        Opcode::Call => {
            let args: Vec<AbsVal> = inst.operands().iter().skip(1).map(|o| operand(d, f, i, o)).collect();
            // external declarations (libdevice, vprintf) are pure functions of their arguments
            let pure = inst.call_target().is_some_and(|t| sums.thread_invariant.contains(t) || !sums.defined.contains(t));
            if pure && args.iter().all(|a| a.is_uniform()) {
                AbsVal::uniform(None)
            } else {
                AbsVal::Top { data: true }
            }
        }
        // a comparison of two values whose difference is uniform has the same
        // outcome in every thread (Sampaio et al.'s affine analysis)
        Opcode::Setp | Opcode::Set if !float && (src(1) - src(2)).is_uniform() => {
            let rest: Vec<AbsVal> = (3..n).map(src).collect();
            AbsVal::uniform_or_top(&rest).join(AbsVal::uniform(None))
        }
        _ => AbsVal::uniform_or_top(&srcs),
    }
}
