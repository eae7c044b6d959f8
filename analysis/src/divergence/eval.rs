//! Concrete evaluation of thread-dependent integer and predicate
//! expressions for every thread of a block at once, for exact warp counts
//! where the affine form is not enough (`tid % 2 == 0`, `tid & 31`,
//! `t % (2*s)` with `s` a loop counter).
//!
//! Owns: integer semantics of the PTX operations such expressions use, with
//! PTX's wrap-around at the operand width and signed/unsigned comparisons.
//! Each SSA value is evaluated once per leaf assignment, as a vector over
//! the block's threads. Uniform values that are not constants are *leaves*:
//! the caller supplies sample values for them or evaluation stops with
//! `EvalErr::Leaf`. Does not own: choosing samples or counting warps (see
//! `crate::lints`).

use super::Divergence;
use crate::ir::{FunctionIr, ValueDef, ValueId};
use crate::ptx::{Instruction, Operand};
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

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

type Vals = Rc<[i64]>;

pub struct Evaluator<'f, 'a> {
    pub f: &'f FunctionIr<'a>,
    pub d: &'f Divergence,
    /// Block dimensions (`%ntid`).
    pub ntid: [i64; 3],
    lanes: Vec<Lane>,
    /// Sample values of uniform leaves.
    leaves: HashMap<ValueId, i64>,
    cache: RefCell<HashMap<ValueId, Result<Vals, EvalErr>>>,
    /// Evaluate loop-header phis as in the first iteration (their value
    /// from outside the loop) instead of giving up on them.
    pub first_iteration: bool,
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
    /// An evaluator over the given threads.
    pub fn new(f: &'f FunctionIr<'a>, d: &'f Divergence, ntid: [u32; 3], lanes: Vec<Lane>) -> Self {
        Evaluator {
            f,
            d,
            ntid: ntid.map(|x| x as i64),
            lanes,
            leaves: HashMap::new(),
            cache: RefCell::new(HashMap::new()),
            first_iteration: false,
        }
    }

    /// Replace the sample values of uniform leaves (clears the cache).
    pub fn set_leaves(&mut self, leaves: HashMap<ValueId, i64>) {
        self.leaves = leaves;
        self.cache.borrow_mut().clear();
    }

    /// Values of `v` for every thread.
    pub fn values(&self, v: ValueId) -> Result<Vals, EvalErr> {
        self.value_d(v, 0)
    }

    fn splat(&self, k: i64) -> Vals {
        vec![k; self.lanes.len()].into()
    }

    fn value_d(&self, v: ValueId, depth: u32) -> Result<Vals, EvalErr> {
        if let Some(r) = self.cache.borrow().get(&v) {
            return r.clone();
        }
        let r = self.compute(v, depth);
        self.cache.borrow_mut().insert(v, r.clone());
        r
    }

    fn compute(&self, v: ValueId, depth: u32) -> Result<Vals, EvalErr> {
        if depth > MAX_DEPTH {
            return Err(EvalErr::Opaque);
        }
        let av = self.d.vals[v as usize];
        if av.is_uniform() {
            if let Some(k) = av.const_value() {
                return Ok(self.splat(k));
            }
            if let Some(k) = self.leaves.get(&v) {
                return Ok(self.splat(*k));
            }
            if let ValueDef::Entry(r) = self.f.ssa.values[v as usize] {
                if let Some(x) = self.special(self.f.ssa.regs[r as usize]) {
                    return Ok(x);
                }
            }
            if let (true, Some(x)) = (self.first_iteration, self.header_phi_entry(v)) {
                return self.value_d(x, depth + 1);
            }
            if let ValueDef::Inst { inst, slot } = self.f.ssa.values[v as usize] {
                // uniform computations of known things (e.g. %ntid.x * 2) still evaluate
                match self.inst(inst as usize, slot as usize, depth + 1) {
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
            ValueDef::Entry(r) => self.special(self.f.ssa.regs[r as usize]).ok_or(EvalErr::Opaque),
            ValueDef::Phi(_) => {
                if let Some(k) = self.leaves.get(&v) {
                    return Ok(self.splat(*k));
                }
                match self.header_phi_entry(v).filter(|_| self.first_iteration) {
                    Some(x) => self.value_d(x, depth + 1),
                    None => Err(EvalErr::Opaque),
                }
            }
            ValueDef::Inst { inst, slot } => self.inst(inst as usize, slot as usize, depth + 1),
        }
    }

    /// For a loop-header phi: its single value from outside the loop.
    fn header_phi_entry(&self, v: ValueId) -> Option<ValueId> {
        let ValueDef::Phi(p) = self.f.ssa.values[v as usize] else { return None };
        let ph = &self.f.ssa.phis[p as usize];
        let cfg = &self.f.cfg;
        let l = cfg.loops.iter().position(|l| l.header == ph.block)?;
        let outside: Vec<ValueId> = ph.incoming.iter().filter(|(pred, _)| !cfg.in_loop(*pred, l)).map(|x| x.1).collect();
        match outside.as_slice() {
            [x] => Some(*x),
            _ => None,
        }
    }

    fn special(&self, name: &str) -> Option<Vals> {
        let per = |g: &dyn Fn(&Lane) -> i64| -> Vals { self.lanes.iter().map(g).collect() };
        Some(match name {
            "%tid.x" => per(&|l| l.tid[0]),
            "%tid.y" => per(&|l| l.tid[1]),
            "%tid.z" => per(&|l| l.tid[2]),
            "%ntid.x" => self.splat(self.ntid[0]),
            "%ntid.y" => self.splat(self.ntid[1]),
            "%ntid.z" => self.splat(self.ntid[2]),
            "%laneid" => per(&|l| l.lane),
            "%lanemask_eq" => per(&|l| 1i64 << l.lane),
            "%lanemask_lt" => per(&|l| (1i64 << l.lane) - 1),
            "%lanemask_le" => per(&|l| (1i64 << (l.lane + 1)) - 1),
            "%lanemask_gt" => per(&|l| !((1i64 << (l.lane + 1)) - 1) & 0xffff_ffff),
            "%lanemask_ge" => per(&|l| !((1i64 << l.lane) - 1) & 0xffff_ffff),
            _ => return None,
        })
    }

    /// A register value read by instruction `i`.
    fn reg_value(&self, i: usize, v: ValueId, depth: u32) -> Result<Vals, EvalErr> {
        // values leaving a loop with divergent exits are not evaluable
        let seen = self.d.at(self.f, v, self.f.cfg.block_of[i]);
        if seen != self.d.vals[v as usize] {
            return Err(EvalErr::Opaque);
        }
        self.value_d(v, depth)
    }

    fn operand(&self, i: usize, o: &Operand<'_>, depth: u32) -> Result<Vals, EvalErr> {
        match o {
            Operand::Reg(r) => match self.f.ssa.use_of(i, r) {
                Some(v) => self.reg_value(i, v, depth),
                None => self.special(r).ok_or(EvalErr::Opaque),
            },
            Operand::Not(r) => {
                let x = self.operand(i, &Operand::Reg(r), depth)?;
                Ok(x.iter().map(|v| (*v == 0) as i64).collect())
            }
            Operand::Imm(k) => Ok(self.splat(*k)),
            _ => Err(EvalErr::Opaque),
        }
    }

    fn inst(&self, i: usize, slot: usize, depth: u32) -> Result<Vals, EvalErr> {
        let inst = self.f.insts[i];
        if self.f.float[i] {
            return Err(EvalErr::Opaque);
        }
        if slot != 0 && !(inst.op() == "setp" && slot == 1) {
            return Err(EvalErr::Opaque);
        }
        let value = self.unguarded(inst, i, slot, depth)?;
        let Some(g) = inst.guard else { return Ok(value) };
        let gv = self.operand(i, &Operand::Reg(g.reg), depth)?;
        let prior = match self.f.ssa.prior(i, slot) {
            Some(p) => self.value_d(p, depth)?,
            None => return Err(EvalErr::Opaque),
        };
        Ok((0..self.lanes.len()).map(|t| if (gv[t] != 0) != g.negated { value[t] } else { prior[t] }).collect())
    }

    fn unguarded(&self, inst: &Instruction<'_>, i: usize, slot: usize, depth: u32) -> Result<Vals, EvalErr> {
        let ops = &inst.operands;
        let src = |k: usize| -> Result<Vals, EvalErr> {
            match (ops.get(k), self.f.operand_value(i, k)) {
                (Some(Operand::Reg(_)), Some(v)) => self.reg_value(i, v, depth),
                (Some(o), _) => self.operand(i, o, depth),
                (None, _) => Err(EvalErr::Opaque),
            }
        };
        let (bits, signed) = width(inst);
        let n = self.lanes.len();
        let un = |a: &[i64], f: &dyn Fn(i64) -> i64| -> Vals { a.iter().map(|x| f(*x)).collect() };
        let bin = |a: &[i64], b: &[i64], f: &dyn Fn(i64, i64) -> i64| -> Vals { (0..n).map(|t| f(a[t], b[t])).collect() };
        let w = move |v: i64| wrap(v, bits, signed);
        let pred = inst.has_mod("pred");
        let r: Vals = match inst.op() {
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
                let tw = |t: &str| (t[1..].parse::<u32>().unwrap_or(64), t.starts_with('s'));
                let (dst, srcw) = (tys.first().map(|t| tw(t)), tys.get(1).map(|t| tw(t)));
                un(&src(1)?, &|v| {
                    let v = srcw.map(|(b, s)| wrap(v, b, s)).unwrap_or(v);
                    dst.map(|(b, s)| wrap(v, b, s)).unwrap_or(v)
                })
            }
            "add" => bin(&src(1)?, &src(2)?, &|a, b| w(a.wrapping_add(b))),
            "sub" => bin(&src(1)?, &src(2)?, &|a, b| w(a.wrapping_sub(b))),
            "mul" if inst.has_mod("wide") => bin(&src(1)?, &src(2)?, &|a, b| wrap(a, bits, signed).wrapping_mul(wrap(b, bits, signed))),
            "mul" if !inst.has_mod("hi") => bin(&src(1)?, &src(2)?, &|a, b| w(a.wrapping_mul(b))),
            "mad" if inst.has_mod("wide") || inst.has_mod("lo") => {
                let (a, b, c) = (src(1)?, src(2)?, src(3)?);
                let wide = inst.has_mod("wide");
                (0..n)
                    .map(|t| {
                        if wide {
                            wrap(a[t], bits, signed).wrapping_mul(wrap(b[t], bits, signed)).wrapping_add(c[t])
                        } else {
                            w(a[t].wrapping_mul(b[t]).wrapping_add(c[t]))
                        }
                    })
                    .collect()
            }
            "neg" => un(&src(1)?, &|a| w(a.wrapping_neg())),
            "shl" => bin(&src(1)?, &src(2)?, &|a, s| if (0..bits as i64).contains(&s) { w(a << s) } else { 0 }),
            "shr" => bin(&src(1)?, &src(2)?, &|a, s| {
                let a = wrap(a, bits, signed);
                let s = s.clamp(0, 63);
                if signed {
                    a >> s
                } else {
                    ((a as u64) >> s) as i64
                }
            }),
            "and" => bin(&src(1)?, &src(2)?, &|a, b| w(a & b)),
            "or" => bin(&src(1)?, &src(2)?, &|a, b| w(a | b)),
            "xor" => bin(&src(1)?, &src(2)?, &|a, b| w(a ^ b)),
            "not" if pred => un(&src(1)?, &|a| (a == 0) as i64),
            "not" => un(&src(1)?, &|a| w(!a)),
            "rem" | "div" => {
                let (a, b) = (src(1)?, src(2)?);
                let rem = inst.op() == "rem";
                let mut out = Vec::with_capacity(n);
                for t in 0..n {
                    let (x, y) = (wrap(a[t], bits, signed), wrap(b[t], bits, signed));
                    if y == 0 {
                        return Err(EvalErr::Opaque);
                    }
                    out.push(w(match (rem, signed) {
                        (true, true) => x.wrapping_rem(y),
                        (false, true) => x.wrapping_div(y),
                        (true, false) => ((x as u64) % (y as u64)) as i64,
                        (false, false) => ((x as u64) / (y as u64)) as i64,
                    }));
                }
                out.into()
            }
            "min" | "max" => {
                let is_min = inst.op() == "min";
                bin(&src(1)?, &src(2)?, &|a, b| {
                    let (a, b) = (wrap(a, bits, signed), wrap(b, bits, signed));
                    let lt = if signed { a < b } else { (a as u64) < (b as u64) };
                    if is_min == lt {
                        a
                    } else {
                        b
                    }
                })
            }
            "selp" => {
                let (a, b, p) = (src(1)?, src(2)?, src(3)?);
                (0..n).map(|t| if p[t] != 0 { a[t] } else { b[t] }).collect()
            }
            "setp" => {
                let cmp = inst.mods().next().unwrap_or("");
                let unsigned_cmp = !signed || matches!(cmp, "lo" | "ls" | "hi" | "hs");
                let f: fn(i64, i64, u64, u64, bool) -> bool = match cmp {
                    "eq" => |a, b, _, _, _| a == b,
                    "ne" => |a, b, _, _, _| a != b,
                    "lt" | "lo" => |a, b, ua, ub, u| if u { ua < ub } else { a < b },
                    "le" | "ls" => |a, b, ua, ub, u| if u { ua <= ub } else { a <= b },
                    "gt" | "hi" => |a, b, ua, ub, u| if u { ua > ub } else { a > b },
                    "ge" | "hs" => |a, b, ua, ub, u| if u { ua >= ub } else { a >= b },
                    _ => return Err(EvalErr::Opaque),
                };
                let (a, b) = (src(1)?, src(2)?);
                // setp.cmp.bool: combine with a third predicate
                let combine = inst.mods().nth(1).filter(|m| matches!(*m, "and" | "or" | "xor"));
                let c = match (combine, ops.get(3)) {
                    (Some(_), Some(o)) => Some(self.operand(i, o, depth)?),
                    _ => None,
                };
                (0..n)
                    .map(|t| {
                        let (x, y) = (wrap(a[t], bits, signed), wrap(b[t], bits, signed));
                        let mut res = f(x, y, x as u64, y as u64, unsigned_cmp);
                        if let (Some(m), Some(c)) = (combine, &c) {
                            res = match m {
                                "and" => res && c[t] != 0,
                                "or" => res || c[t] != 0,
                                _ => res ^ (c[t] != 0),
                            };
                        }
                        (if slot == 1 { !res } else { res }) as i64
                    })
                    .collect()
            }
            _ => return Err(EvalErr::Opaque),
        };
        Ok(r)
    }
}
