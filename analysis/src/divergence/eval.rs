//! Per-lane concrete evaluation of thread-dependent integer and predicate
//! expressions, for exact warp counts where the affine form is not enough
//! (`tid % 2 == 0`, `tid & 31`, `t % (2*s)` with `s` a loop counter).
//!
//! Owns: integer semantics of the PTX operations such expressions use, with
//! PTX's wrap-around at the operand width and signed/unsigned comparisons.
//! Uniform values that are not constants are *leaves*: the caller supplies
//! sample values for them or evaluation stops with `EvalErr::Leaf`.
//! Does not own: choosing samples or counting warps (see `crate::lints`).

use super::Divergence;
use crate::ir::{FunctionIr, ValueDef, ValueId};
use crate::ptx::{Instruction, Operand};
use std::collections::HashMap;

/// One thread: its coordinates and lane within the warp.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Lane {
    pub tid: [i64; 3],
    pub lane: i64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EvalErr {
    /// A uniform value of unknown content that needs a sample.
    Leaf(ValueId),
    /// Data-dependent or unsupported: no evaluation possible.
    Opaque,
}

pub struct Evaluator<'f, 'a> {
    pub f: &'f FunctionIr<'a>,
    pub d: &'f Divergence,
    /// Block dimensions (`%ntid`).
    pub ntid: [i64; 3],
    /// Sample values of uniform leaves.
    pub leaves: HashMap<ValueId, i64>,
}

const MAX_DEPTH: u32 = 48;

fn width(inst: &Instruction<'_>) -> (u32, bool) {
    for m in inst.mods() {
        let w = match m {
            "u8" | "s8" | "b8" => 8,
            "u16" | "s16" | "b16" => 16,
            "u32" | "s32" | "b32" => 32,
            "u64" | "s64" | "b64" => 64,
            "pred" => 1,
            _ => continue,
        };
        return (w, m.starts_with('s'));
    }
    (64, true)
}

fn wrap(v: i64, bits: u32, signed: bool) -> i64 {
    match (bits, signed) {
        (1, _) => (v != 0) as i64,
        (64, _) => v,
        (b, true) => (v << (64 - b)) >> (64 - b),
        (b, false) => v & ((1i64 << b) - 1),
    }
}

impl<'f, 'a> Evaluator<'f, 'a> {
    pub fn new(f: &'f FunctionIr<'a>, d: &'f Divergence, ntid: [u32; 3]) -> Self {
        Evaluator { f, d, ntid: ntid.map(|x| x as i64), leaves: HashMap::new() }
    }

    /// Evaluate SSA value `v` for one lane.
    pub fn value(&self, v: ValueId, lane: &Lane) -> Result<i64, EvalErr> {
        self.value_d(v, lane, 0)
    }

    fn value_d(&self, v: ValueId, lane: &Lane, depth: u32) -> Result<i64, EvalErr> {
        if depth > MAX_DEPTH {
            return Err(EvalErr::Opaque);
        }
        let av = self.d.vals[v as usize];
        if av.is_uniform() {
            if let Some(k) = av.const_value() {
                return Ok(k);
            }
            if let Some(k) = self.leaves.get(&v) {
                return Ok(*k);
            }
            // special uniform registers we know
            if let ValueDef::Entry(r) = self.f.ssa.values[v as usize] {
                if let Some(k) = self.special(self.f.ssa.regs[r as usize], lane) {
                    return Ok(k);
                }
            }
            if let ValueDef::Inst { inst, slot } = self.f.ssa.values[v as usize] {
                // uniform computations of known things (e.g. %ntid.x * 2) still evaluate
                match self.inst(inst as usize, slot as usize, lane, depth + 1) {
                    Ok(k) => return Ok(k),
                    Err(EvalErr::Leaf(x)) => return Err(EvalErr::Leaf(x)),
                    Err(EvalErr::Opaque) => {}
                }
            }
            return Err(EvalErr::Leaf(v));
        }
        if av.data() {
            return Err(EvalErr::Opaque);
        }
        match self.f.ssa.values[v as usize] {
            ValueDef::Entry(r) => self.special(self.f.ssa.regs[r as usize], lane).ok_or(EvalErr::Opaque),
            ValueDef::Phi(_) => self.leaves.get(&v).copied().ok_or(EvalErr::Opaque),
            ValueDef::Inst { inst, slot } => self.inst(inst as usize, slot as usize, lane, depth + 1),
        }
    }

    fn special(&self, name: &str, lane: &Lane) -> Option<i64> {
        Some(match name {
            "%tid.x" => lane.tid[0],
            "%tid.y" => lane.tid[1],
            "%tid.z" => lane.tid[2],
            "%ntid.x" => self.ntid[0],
            "%ntid.y" => self.ntid[1],
            "%ntid.z" => self.ntid[2],
            "%laneid" => lane.lane,
            "%lanemask_eq" => 1i64 << lane.lane,
            "%lanemask_lt" => (1i64 << lane.lane) - 1,
            "%lanemask_le" => (1i64 << (lane.lane + 1)) - 1,
            "%lanemask_gt" => !((1i64 << (lane.lane + 1)) - 1) & 0xffff_ffff,
            "%lanemask_ge" => !((1i64 << lane.lane) - 1) & 0xffff_ffff,
            _ => return None,
        })
    }

    fn operand(&self, i: usize, o: &Operand<'_>, lane: &Lane, depth: u32) -> Result<i64, EvalErr> {
        match o {
            Operand::Reg(r) => match self.f.ssa.use_of(i, r) {
                Some(v) => {
                    // values leaving a loop with divergent exits are not evaluable
                    let seen = self.d.at(self.f, v, self.f.cfg.block_of[i]);
                    if seen != self.d.vals[v as usize] {
                        return Err(EvalErr::Opaque);
                    }
                    self.value_d(v, lane, depth)
                }
                None => self.special(r, lane).ok_or(EvalErr::Opaque),
            },
            Operand::Not(r) => self.operand(i, &Operand::Reg(r), lane, depth).map(|v| (v == 0) as i64),
            Operand::Imm(k) => Ok(*k),
            _ => Err(EvalErr::Opaque),
        }
    }

    fn inst(&self, i: usize, slot: usize, lane: &Lane, depth: u32) -> Result<i64, EvalErr> {
        let inst = self.f.insts[i];
        if super::transfer::is_float(inst) {
            return Err(EvalErr::Opaque);
        }
        if let Some(g) = inst.guard {
            let gv = self.operand(i, &Operand::Reg(g.reg), lane, depth)?;
            if (gv != 0) == g.negated {
                return match self.f.ssa.prior(i, slot) {
                    Some(p) => self.value_d(p, lane, depth),
                    None => Err(EvalErr::Opaque),
                };
            }
        }
        if slot != 0 && !(inst.op() == "setp" && slot == 1) {
            return Err(EvalErr::Opaque);
        }
        let ops = &inst.operands;
        let src =
            |k: usize| -> Result<i64, EvalErr> { ops.get(k).map(|o| self.operand(i, o, lane, depth)).unwrap_or(Err(EvalErr::Opaque)) };
        let (bits, signed) = width(inst);
        let w = |v: i64| wrap(v, bits, signed);
        let pred = inst.has_mod("pred");
        let r = match inst.op() {
            "mov" | "cvta" => src(1)?,
            "cvt" => {
                // cvt.dst.src: wrap to the source type, then to the destination type
                let tys: Vec<&str> = inst
                    .mods()
                    .filter(|m| m.len() >= 2 && matches!(&m[..1], "u" | "s" | "b" | "f") && m[1..].bytes().all(|b| b.is_ascii_digit()))
                    .collect();
                if tys.iter().any(|t| t.starts_with('f')) {
                    return Err(EvalErr::Opaque);
                }
                let v = src(1)?;
                let tw = |t: &str| (t[1..].parse::<u32>().unwrap_or(64), t.starts_with('s'));
                let v = tys.get(1).map(|t| wrap(v, tw(t).0, tw(t).1)).unwrap_or(v);
                tys.first().map(|t| wrap(v, tw(t).0, tw(t).1)).unwrap_or(v)
            }
            "add" => w(src(1)?.wrapping_add(src(2)?)),
            "sub" => w(src(1)?.wrapping_sub(src(2)?)),
            "mul" if inst.has_mod("wide") => {
                let (a, b) = (wrap(src(1)?, bits, signed), wrap(src(2)?, bits, signed));
                a.wrapping_mul(b)
            }
            "mul" if !inst.has_mod("hi") => w(src(1)?.wrapping_mul(src(2)?)),
            "mad" if inst.has_mod("wide") => wrap(src(1)?, bits, signed).wrapping_mul(wrap(src(2)?, bits, signed)).wrapping_add(src(3)?),
            "mad" if inst.has_mod("lo") => w(src(1)?.wrapping_mul(src(2)?).wrapping_add(src(3)?)),
            "neg" => w(src(1)?.wrapping_neg()),
            "shl" => {
                let s = src(2)?;
                if !(0..bits as i64).contains(&s) {
                    0
                } else {
                    w(src(1)? << s)
                }
            }
            "shr" => {
                let a = wrap(src(1)?, bits, signed);
                let s = src(2)?.clamp(0, 63);
                if signed {
                    a >> s
                } else {
                    ((a as u64) >> s) as i64
                }
            }
            "and" => w(src(1)? & src(2)?),
            "or" => w(src(1)? | src(2)?),
            "xor" => w(src(1)? ^ src(2)?),
            "not" if pred => (src(1)? == 0) as i64,
            "not" => w(!src(1)?),
            "rem" | "div" => {
                let (a, b) = (wrap(src(1)?, bits, signed), wrap(src(2)?, bits, signed));
                if b == 0 {
                    return Err(EvalErr::Opaque);
                }
                let r = match (inst.op(), signed) {
                    ("rem", true) => a.wrapping_rem(b),
                    ("div", true) => a.wrapping_div(b),
                    ("rem", false) => ((a as u64) % (b as u64)) as i64,
                    _ => ((a as u64) / (b as u64)) as i64,
                };
                w(r)
            }
            "min" | "max" => {
                let (a, b) = (wrap(src(1)?, bits, signed), wrap(src(2)?, bits, signed));
                let lt = if signed { a < b } else { (a as u64) < (b as u64) };
                if (inst.op() == "min") == lt {
                    a
                } else {
                    b
                }
            }
            "selp" => {
                if src(3)? != 0 {
                    src(1)?
                } else {
                    src(2)?
                }
            }
            "setp" => {
                let cmp = inst.mods().next().unwrap_or("");
                let (a, b) = (wrap(src(1)?, bits, signed), wrap(src(2)?, bits, signed));
                let (ua, ub) = (a as u64, b as u64);
                let unsigned_cmp = !signed || matches!(cmp, "lo" | "ls" | "hi" | "hs");
                let res = match cmp {
                    "eq" => a == b,
                    "ne" => a != b,
                    "lt" | "lo" => {
                        if unsigned_cmp {
                            ua < ub
                        } else {
                            a < b
                        }
                    }
                    "le" | "ls" => {
                        if unsigned_cmp {
                            ua <= ub
                        } else {
                            a <= b
                        }
                    }
                    "gt" | "hi" => {
                        if unsigned_cmp {
                            ua > ub
                        } else {
                            a > b
                        }
                    }
                    "ge" | "hs" => {
                        if unsigned_cmp {
                            ua >= ub
                        } else {
                            a >= b
                        }
                    }
                    _ => return Err(EvalErr::Opaque),
                };
                // setp.cmp.bool: combine with a third predicate
                let res = match (inst.mods().nth(1), ops.get(3)) {
                    (Some("and"), Some(o)) => res && self.operand(i, o, lane, depth)? != 0,
                    (Some("or"), Some(o)) => res || self.operand(i, o, lane, depth)? != 0,
                    (Some("xor"), Some(o)) => res ^ (self.operand(i, o, lane, depth)? != 0),
                    _ => res,
                };
                (if slot == 1 { !res } else { res }) as i64
            }
            _ => return Err(EvalErr::Opaque),
        };
        Ok(r)
    }
}
