//! Transfer functions: the abstract value an instruction computes from the
//! abstract values of its operands, and the values of special registers.
//!
//! Owns: the instruction → lattice-operation table. Does not own: the
//! fixed-point iteration or sync dependence (see the parent module).

use super::domain::AbsVal;
use super::{Divergence, Summaries};
use crate::ir::FunctionIr;
use crate::ptx::{Instruction, Operand};

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
pub fn named(v: AbsVal, id: u32) -> AbsVal {
    match v {
        AbsVal::Affine { c, k: None, .. } if c == super::domain::ZERO => AbsVal::symbol(id),
        _ => v,
    }
}

/// Abstract value of a special register, `None` for ordinary registers.
pub fn special(name: &str) -> Option<AbsVal> {
    if !name.starts_with('%') {
        return None;
    }
    let base = name.split('.').next().unwrap_or(name);
    Some(match name {
        "%tid.x" => AbsVal::tid(0),
        "%tid.y" => AbsVal::tid(1),
        "%tid.z" => AbsVal::tid(2),
        _ => match base {
            "%tid" | "%laneid" | "%lanemask_eq" | "%lanemask_le" | "%lanemask_lt" | "%lanemask_ge" | "%lanemask_gt" => {
                AbsVal::Top { data: false }
            }
            "%clock" | "%clock64" | "%clock_hi" | "%globaltimer" | "%globaltimer_lo" | "%globaltimer_hi" => AbsVal::Top { data: true },
            "%ntid"
            | "%ctaid"
            | "%nctaid"
            | "%warpid"
            | "%nwarpid"
            | "%smid"
            | "%nsmid"
            | "%gridid"
            | "%dynamic_smem_size"
            | "%total_smem_size"
            | "%aggr_smem_size"
            | "%is_explicit_cluster"
            | "%clusterid"
            | "%nclusterid"
            | "%cluster_ctaid"
            | "%cluster_nctaid"
            | "%cluster_ctarank"
            | "%cluster_nctarank"
            | "%current_graph_exec"
            | "%reserved_smem_offset_begin"
            | "%reserved_smem_offset_end"
            | "%reserved_smem_offset_cap" => AbsVal::uniform(None),
            _ if base.starts_with("%envreg") => AbsVal::uniform(None),
            _ if base.starts_with("%pm") => AbsVal::Top { data: true },
            _ => return None,
        },
    })
}

/// Value of operand `k` of instruction `i`.
#[inline]
pub fn operand_at(d: &Divergence, f: &FunctionIr<'_>, i: usize, k: usize) -> AbsVal {
    let inst = f.insts[i];
    let Some(o) = inst.operands.get(k) else { return AbsVal::Bottom };
    match (o, f.operand_value(i, k)) {
        (Operand::Reg(_) | Operand::Not(_) | Operand::Pair(..), Some(v)) => d.at(f, v, f.cfg.block_of[i]),
        (Operand::Addr(a), Some(v)) if a.extra.is_empty() => d.at(f, v, f.cfg.block_of[i]).add(AbsVal::konst(a.offset)),
        _ => operand(d, f, i, o),
    }
}

/// Value of one operand as read by instruction `i`.
pub fn operand(d: &Divergence, f: &FunctionIr<'_>, i: usize, o: &Operand<'_>) -> AbsVal {
    match o {
        Operand::Reg(r) | Operand::Not(r) => match f.ssa.use_of(i, r) {
            Some(v) => d.at(f, v, f.cfg.block_of[i]),
            None => special(r).unwrap_or(AbsVal::uniform(None)),
        },
        Operand::Imm(k) => AbsVal::konst(*k),
        Operand::Float(_) | Operand::Sym(_) | Operand::SymOff(..) | Operand::Sink => AbsVal::uniform(None),
        Operand::Addr(a) => {
            let base = a.base.as_ref().map(|b| operand(d, f, i, b)).unwrap_or(AbsVal::konst(0));
            let mut v = base.add(AbsVal::konst(a.offset));
            for e in &a.extra {
                let ev = operand(d, f, i, e);
                v = AbsVal::uniform_or_top(&[v, ev], |_| None).join(v);
            }
            v
        }
        Operand::Vector(xs) | Operand::List(xs) => {
            let vs: Vec<AbsVal> = xs.iter().map(|x| operand(d, f, i, x)).collect();
            AbsVal::uniform_or_top(&vs, |_| None)
        }
        Operand::Pair(p) => operand(d, f, i, &Operand::Reg(crate::ptx::split_pair(p).0)),
    }
}

/// The value instruction `i` writes to its `slot`-th destination.
pub fn inst_value(d: &Divergence, f: &FunctionIr<'_>, sums: &Summaries<'_>, i: usize, slot: usize) -> AbsVal {
    let inst = f.insts[i];
    let v = raw_value(d, f, sums, inst, i);
    match inst.guard {
        None => v,
        Some(g) => {
            let gv = operand(d, f, i, &Operand::Reg(g.reg));
            let prior = f.ssa.prior(i, slot).map(|p| d.at(f, p, f.cfg.block_of[i])).unwrap_or(AbsVal::Bottom);
            if gv.is_uniform() || v == prior {
                v.join(prior)
            } else {
                AbsVal::top_of(&[v, prior, gv])
            }
        }
    }
}

fn raw_value(d: &Divergence, f: &FunctionIr<'_>, sums: &Summaries<'_>, inst: &Instruction<'_>, i: usize) -> AbsVal {
    let ops = &inst.operands;
    let src = |k: usize| operand_at(d, f, i, k);
    let all_src = || -> Vec<AbsVal> { (1..ops.len()).map(src).collect() };
    let float = f.float[i];
    match inst.op() {
        "mov" => match ops.get(1) {
            Some(Operand::Vector(_)) => AbsVal::uniform_or_top(&[src(1)], |_| None),
            _ if matches!(ops.first(), Some(Operand::Vector(_))) => AbsVal::uniform_or_top(&[src(1)], |_| None),
            _ => src(1),
        },
        "cvta" => src(1),
        "cvt" if !float => src(1),
        "add" if !float && !inst.has_mod("cc") => src(1).add(src(2)),
        "sub" if !float && !inst.has_mod("cc") => src(1).sub(src(2)),
        "neg" if !float => src(1).neg(),
        "mul" if !float && (inst.has_mod("lo") || inst.has_mod("wide") || inst.mods().count() == 1) => src(1).mul(src(2)),
        "mad" if !float && (inst.has_mod("lo") || inst.has_mod("wide")) => src(1).mul(src(2)).add(src(3)),
        "shl" => match src(2).const_value() {
            Some(k) if (0..63).contains(&k) => src(1).mul(AbsVal::konst(1i64 << k)),
            _ => AbsVal::uniform_or_top(&all_src(), |_| None),
        },
        "selp" => {
            let p = src(3);
            if p.is_uniform() {
                src(1).join(src(2))
            } else {
                AbsVal::top_of(&[src(1), src(2), p])
            }
        }
        "ld" | "ldu" => {
            if inst.has_mod("param") {
                // reloads of the same parameter are the same symbol
                match ops.get(1) {
                    Some(Operand::Addr(a)) => match &a.base {
                        Some(Operand::Sym(p)) => AbsVal::symbol(name_key(p, a.offset)),
                        _ => AbsVal::uniform(None),
                    },
                    _ => AbsVal::uniform(None),
                }
            } else if inst.has_mod("local") || f.spaces.access(f, i) == crate::ir::space::Space::Local {
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
        "shfl" if inst.has_mod("idx") && src(2).is_uniform() => {
            if src(1).is_uniform() {
                AbsVal::uniform(None)
            } else {
                AbsVal::WarpUniform
            }
        }
        "atom" | "shfl" | "match" | "tex" | "tld4" | "suld" | "txq" => {
            if matches!(inst.op(), "tex" | "tld4" | "suld") && all_src().iter().all(|v| v.is_uniform()) {
                AbsVal::uniform(None)
            } else {
                AbsVal::Top { data: true }
            }
        }
        // same in every lane of the warp, not across warps
        "vote" | "activemask" | "redux" => AbsVal::WarpUniform,
        "bar" | "barrier" => AbsVal::uniform(None), // bar.red: block-wide reduction
        "call" => {
            let args: Vec<AbsVal> = ops.iter().skip(1).map(|o| operand(d, f, i, o)).collect();
            // external declarations (libdevice, vprintf) are pure functions of their arguments
            let pure =
                crate::ir::semantics::call_target(inst).is_some_and(|t| sums.thread_invariant.contains(t) || !sums.defined.contains(t));
            if pure && args.iter().all(|a| a.is_uniform()) {
                AbsVal::uniform(None)
            } else {
                AbsVal::Top { data: true }
            }
        }
        // a comparison of two values whose difference is uniform has the same
        // outcome in every thread (Sampaio et al.'s affine analysis)
        "setp" | "set" if !float && src(1).sub(src(2)).is_uniform() => {
            let rest: Vec<AbsVal> = (3..ops.len()).map(src).collect();
            AbsVal::uniform_or_top(&rest, |_| None).join(AbsVal::uniform(None))
        }
        "and" | "or" | "xor" | "not" | "shr" | "rem" | "div" | "min" | "max" | "abs" | "setp" | "set" | "slct" | "bfe" | "bfi" | "popc"
        | "clz" | "brev" | "prmt" | "shf" | "cnot" | "sad" => AbsVal::uniform_or_top(&all_src(), |k| const_fold(inst.op(), k)),
        _ => AbsVal::uniform_or_top(&all_src(), |_| None),
    }
}

fn const_fold(op: &str, k: &[i64]) -> Option<i64> {
    Some(match (op, k) {
        ("and", [a, b]) => a & b,
        ("or", [a, b]) => a | b,
        ("xor", [a, b]) => a ^ b,
        ("not", [a]) => !a,
        ("rem", [a, b]) if *b != 0 => a.wrapping_rem(*b),
        ("div", [a, b]) if *b != 0 => a.wrapping_div(*b),
        ("min", [a, b]) => *a.min(b),
        ("max", [a, b]) => *a.max(b),
        _ => return None,
    })
}
