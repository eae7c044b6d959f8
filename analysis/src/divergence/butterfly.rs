//! Values that are the same in lanes a fixed XOR apart: a warp shuffle
//! butterfly (`v += __shfl_xor_sync(mask, v, m)` for m = 16, 8, 4, 2, 1)
//! leaves every lane of the warp with the same value, which the affine
//! domain, seeing a shuffle's result as data, cannot tell.
//!
//! For each SSA value, the set of lane bits it is invariant under: bit b
//! set when the value in lane l equals the value in lane l ^ (1 << b). A
//! value uniform across the warp has every bit; a shuffle `bfly` keeps its
//! source's bits; a commutative operation of a value with its own `bfly`
//! by `1 << b` adds bit b; any other operation keeps the bits both
//! operands have. One pass in reverse post-order: a loop's back edge is not
//! followed (a butterfly kept as a loop is not recognised).
//!
//! Owns: these bits. Does not own: which values are uniform (the
//! divergence analysis) or what a same-value store is worth (the races'
//! marks).

use super::Divergence;
use crate::ir::inst::{Opcode, ShflMode, Sub};
use crate::ir::{FunctionIr, IdVec, InstId, ValueDef, ValueId};
use crate::ptx::Operand;

/// Every lane bit of a warp of 32.
const WARP_BITS: u8 = 0b1_1111;

/// The lane bits each value is invariant under.
pub fn invariance(f: &FunctionIr<'_>, d: &Divergence) -> IdVec<ValueId, u8> {
    let mut bits: IdVec<ValueId, u8> = IdVec::filled(f.ssa.values.len(), 0);
    for (v, def) in f.ssa.values.iter_enumerated() {
        if matches!(def, ValueDef::Entry(_)) && d.vals[v].is_warp_uniform() {
            bits[v] = WARP_BITS;
        }
    }
    for &b in &f.cfg.rpo {
        for &p in &f.ssa.block_phis[b] {
            let ph = &f.ssa.phis[p];
            let v = ph.value;
            bits[v] = if d.vals[v].is_warp_uniform() {
                WARP_BITS
            } else if d.sync_phi[p] != super::AbsVal::Bottom {
                // lanes that took different sides of a divergent branch
                0
            } else {
                ph.incoming.iter().fold(WARP_BITS, |acc, (_, x)| acc & bits[*x])
            };
        }
        for i in f.cfg.blocks[b].insts() {
            let defs = f.ssa.defs(i);
            let Some(&v) = defs.first() else { continue };
            bits[v] = if d.vals[v].is_warp_uniform() { WARP_BITS } else { inst_bits(f, i, &bits) };
        }
    }
    bits
}

/// The bits of instruction `i`'s first result, from its operands'.
fn inst_bits(f: &FunctionIr<'_>, i: InstId, bits: &IdVec<ValueId, u8>) -> u8 {
    let inst = &f.insts[i];
    if inst.ast.guard.is_some() {
        return 0;
    }
    let of = |k: usize| -> u8 {
        match inst.operand(k) {
            Some(Operand::Imm(_)) => WARP_BITS,
            _ => f.operand_value(i, k).map_or(0, |v| bits[v]),
        }
    };
    match inst.opcode {
        Opcode::Shfl if butterfly(f, i).is_some() => of(1),
        Opcode::Mov | Opcode::Cvt | Opcode::Neg | Opcode::Abs | Opcode::Not if inst.operands().len() == 2 => of(1),
        Opcode::Add | Opcode::Mul | Opcode::Min | Opcode::Max | Opcode::And | Opcode::Or | Opcode::Xor if inst.operands().len() == 3 => {
            let (a, b) = (f.operand_value(i, 1), f.operand_value(i, 2));
            // `x op bfly(x, 1 << k)`: lanes 1 << k apart now hold the same value
            let paired = |x: Option<ValueId>, y: Option<ValueId>| -> u8 {
                let (Some(x), Some(y)) = (x, y) else { return 0 };
                let Some(s) = f.def_inst(y) else { return 0 };
                match butterfly(f, s) {
                    Some((src, bit)) if src == x => bits[x] | (1 << bit),
                    _ => 0,
                }
            };
            (of(1) & of(2)) | paired(a, b) | paired(b, a)
        }
        _ => 0,
    }
}

/// A full-warp shuffle butterfly by one lane bit: its source value and
/// the bit (`shfl.sync.bfly.b32 d, src, 1 << bit, 31, -1`).
fn butterfly(f: &FunctionIr<'_>, i: InstId) -> Option<(ValueId, u8)> {
    let inst = &f.insts[i];
    if inst.opcode != Opcode::Shfl || inst.sub != Sub::Shfl(ShflMode::Bfly) || inst.ast.guard.is_some() {
        return None;
    }
    let ops = inst.operands();
    let imm = |k: usize| match ops.get(k) {
        Some(Operand::Imm(x)) => Some(*x),
        _ => None,
    };
    let m = imm(2)?;
    let full_members = ops.len() < 5 || imm(4).is_some_and(|x| x as u32 == u32::MAX);
    if !(1..32).contains(&m) || m & (m - 1) != 0 || imm(3)? & 31 != 31 || !full_members {
        return None;
    }
    Some((f.operand_value(i, 1)?, m.trailing_zeros() as u8))
}

impl Divergence {
    /// Is `v` the same in every lane of each warp: warp-uniform in the
    /// affine domain, or by a shuffle butterfly ([`invariance`])?
    pub fn is_warp_uniform(&self, v: ValueId) -> bool {
        self.vals[v].is_warp_uniform() || self.butterfly.get(v).is_some_and(|b| *b == WARP_BITS)
    }
}
