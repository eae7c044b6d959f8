//! Address-space inference for generic pointers.
//!
//! rustc's nvptx back end addresses most memory through generic pointers
//! (`cvta.to.global`, `cvta.shared`, `asm!("cvta.shared.u64 …")`), so which
//! space a plain `ld`/`st` touches must be inferred: kernel pointer
//! parameters and `cvta.to.global` → global; `cvta.shared`/`.to.shared` and
//! `.shared` symbols → shared; `cvta.local`, `__local_depot`, `%SP`/`%SPL`
//! → local; `.const` symbols → const. Pointer arithmetic keeps the space of
//! its pointer operand; merging two different spaces gives `Generic`.
//! Solved over the SSA values with the crate's dataflow engine.
//!
//! Owns: the per-SSA-value space and the space of each memory access. Does
//! not own: address values (the affine domain) or any lint.

use super::dataflow::{self, Problem};
pub use super::inst::Space;
use super::inst::{Inst, Opcode, Ty};
use super::{FunctionIr, IdVec, InstId, User, ValueDef, ValueId};
use crate::ptx::{Module, Operand};
use std::collections::HashMap;

/// Least upper bound of two facts: `Unknown` is bottom, two different
/// spaces make `Generic`.
pub fn join(a: Space, b: Space) -> Space {
    match (a, b) {
        (Space::Unknown, x) | (x, Space::Unknown) => x,
        (a, b) if a == b => a,
        _ => Space::Generic,
    }
}

/// Spaces of the pointer values of one function.
pub struct Spaces {
    vals: IdVec<ValueId, Space>,
}

/// The inference as a dataflow problem over the function's SSA values.
struct Inference<'f, 'a> {
    f: &'f FunctionIr<'a>,
    symbols: HashMap<&'a str, Space>,
    pointer_params: Vec<&'a str>,
}

impl Problem for Inference<'_, '_> {
    type Value = Space;
    fn transfer(&mut self, v: usize, vals: &[Space]) -> Space {
        let f = self.f;
        match f.ssa.values[ValueId::new(v)] {
            ValueDef::Entry(r) if matches!(f.ssa.regs[r as usize], "%SP" | "%SPL") => Space::Local,
            ValueDef::Entry(_) => Space::Unknown,
            ValueDef::Phi(p) => f.ssa.phis[p].incoming.iter().fold(Space::Unknown, |acc, (_, iv)| join(acc, vals[iv.index()])),
            // the space of the first destination (a pointer is a single register)
            ValueDef::Inst { inst, slot: 0 } => self.inst_space(inst, vals),
            ValueDef::Inst { .. } => Space::Unknown,
        }
    }
    fn join(&self, a: &Space, b: &Space) -> Space {
        join(*a, *b)
    }
    fn dependents(&mut self, v: usize, _: &[Space], out: &mut Vec<usize>) {
        let f = self.f;
        for u in &f.ssa.users[ValueId::new(v)] {
            match *u {
                User::Inst(i) if f.cfg.reachable(f.cfg.block_of(i)) => out.extend(f.ssa.defs(i).iter().map(|d| d.index())),
                User::Phi(p) if f.cfg.reachable(f.ssa.phis[p].block) => out.push(f.ssa.phis[p].value.index()),
                _ => {}
            }
        }
    }
}

impl Inference<'_, '_> {
    fn inst_space(&self, i: InstId, vals: &[Space]) -> Space {
        let f = self.f;
        let inst = &f.insts[i];
        let of = |k: usize| -> Space {
            match inst.operand(k) {
                Some(Operand::Sym(s)) | Some(Operand::SymOff(s, _)) => {
                    self.symbols.get(s).copied().unwrap_or(if s.starts_with("__local_depot") { Space::Local } else { Space::Unknown })
                }
                Some(_) => f.operand_value(i, k).map(|v| vals[v.index()]).unwrap_or(Space::Unknown),
                None => Space::Unknown,
            }
        };
        match inst.opcode {
            // cvta.to.global (generic → global window) and cvta.global (global → generic) both keep the space
            Opcode::Cvta => inst.space.unwrap_or(Space::Unknown),
            Opcode::Ld if inst.space == Some(Space::Param) => match inst.param_read() {
                Some((p, _)) if self.pointer_params.contains(&p) && inst.ty.is_some_and(|t| t.bits() == 64 && !t.is_float()) => {
                    Space::Global
                }
                _ => Space::Unknown,
            },
            Opcode::Mov | Opcode::Cvt => of(1),
            Opcode::Add | Opcode::Sub | Opcode::Selp => join(of(1), of(2)),
            Opcode::Mad => join(join(of(1), of(2)), of(3)),
            _ => Space::Unknown,
        }
    }
}

impl Spaces {
    pub fn infer(m: &Module<'_>, f: &FunctionIr<'_>) -> Spaces {
        let mut symbols: HashMap<&str, Space> = HashMap::new();
        for g in &m.globals {
            if let Some(s) = Space::of_decl(g.space) {
                symbols.insert(g.name, s);
            }
        }
        for n in &f.local_shared {
            symbols.insert(n, Space::Shared);
        }
        // rustc marks pointer parameters `.ptr`; where a kernel uses it, trust
        // it (a `usize` is then not a pointer), else any 64-bit parameter may be one
        let marked = f.func.params.iter().any(|p| p.is_ptr);
        let pointer_params: Vec<&str> = if f.func.is_entry {
            f.func
                .params
                .iter()
                .filter(|p| {
                    if marked {
                        p.is_ptr
                    } else {
                        Ty::of_decl(p.ty).is_some_and(|t| t.bits() == 64 && !t.is_float()) && !length_like(f, p.name)
                    }
                })
                .map(|p| p.name)
                .collect()
        } else {
            vec![]
        };
        // every value defined in a reachable block, in reverse post-order
        let mut order = Vec::with_capacity(f.ssa.values.len());
        for &b in &f.cfg.rpo {
            order.extend(f.ssa.block_phis[b].iter().map(|&p| f.ssa.phis[p].value.index()));
            for i in f.cfg.blocks[b].insts() {
                order.extend(f.ssa.defs(i).iter().map(|v| v.index()));
            }
        }
        order.extend(f.ssa.values.iter_enumerated().filter(|(_, d)| matches!(d, ValueDef::Entry(_))).map(|(v, _)| v.index()));
        let mut problem = Inference { f, symbols, pointer_params };
        let vals = dataflow::solve(&mut problem, vec![Space::Unknown; f.ssa.values.len()], &order);
        Spaces { vals: IdVec::from_vec(vals) }
    }

    /// No inference (before `infer` has run).
    pub fn empty() -> Spaces {
        Spaces { vals: IdVec::new() }
    }

    /// The space a memory instruction accesses: its explicit modifier, else
    /// the inferred space of its address.
    pub fn access(&self, f: &FunctionIr<'_>, i: InstId) -> Space {
        let inst = &f.insts[i];
        if let Some(s) = inst.space {
            return s;
        }
        match inst.address_operand().and_then(|k| f.operand_value(i, k)) {
            Some(v) => match self.vals[v] {
                Space::Unknown => Space::Generic,
                s => s,
            },
            None => Space::Generic,
        }
    }

    pub fn of(&self, v: ValueId) -> Space {
        self.vals[v]
    }
}

/// An unmarked 64-bit kernel parameter that is compared (`setp`) but never
/// converted to a window address (`cvta`) is a length or index, not a
/// pointer: NVVM and clang pass slices as (pointer, length) pairs of `.u64`.
fn length_like(f: &FunctionIr<'_>, param: &str) -> bool {
    let regs: Vec<&str> = f
        .insts
        .iter()
        .filter(|x| x.param_read().is_some_and(|(p, _)| p == param))
        .filter_map(|x| match x.operand(0) {
            Some(Operand::Reg(r)) => Some(*r),
            _ => None,
        })
        .collect();
    if regs.is_empty() {
        return false;
    }
    let reads = |x: &Inst<'_>| {
        x.operands().iter().skip(1).any(|o| match o {
            Operand::Reg(r) => regs.contains(r),
            Operand::Addr(a) => matches!(a.base, Some(Operand::Reg(r)) if regs.contains(&r)),
            _ => false,
        })
    };
    let mut compared = false;
    for x in f.insts.iter().filter(|x| reads(x)) {
        if x.opcode == Opcode::Setp {
            compared = true;
        } else if x.opcode == Opcode::Cvta || x.access().is_some() {
            return false;
        }
    }
    compared
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ptx::parse;

    #[test]
    fn generic_pointers_get_their_space() {
        let src = r#"
.shared .align 4 .b8 TILE[1024];
.visible .entry k(.param .u64 .ptr .align 1 k_param_0) {
  .local .align 8 .b8 __local_depot0[16];
  .reg .b64 %rd<12>; .reg .b32 %r<4>; .reg .pred %p<2>;
  mov.u64 %SPL, __local_depot0;
  ld.param.b64 %rd1, [k_param_0];
  cvta.to.global.u64 %rd2, %rd1;
  mov.u32 %r1, %tid.x;
  mul.wide.u32 %rd3, %r1, 4;
  add.s64 %rd4, %rd2, %rd3;
  ld.b32 %r2, [%rd4];
  // begin inline asm
  cvta.shared.u64 %rd5, TILE;
  // end inline asm
  add.s64 %rd6, %rd5, %rd3;
  st.b32 [%rd6], %r2;
  add.u64 %rd7, %SPL, 8;
  st.u32 [%rd7], %r2;
  setp.eq.u32 %p1, %r1, 0;
  selp.b64 %rd8, %rd4, %rd6, %p1;
  ld.b32 %r3, [%rd8];
  ld.global.nc.u32 %r3, [%rd4+4];
  ret;
}"#;
        let m = parse(src).unwrap();
        let fns = crate::ir::lower(&m);
        let f = &fns[0];
        let sp = Spaces::infer(&m, f);
        let access = |nth: usize| {
            let i = f
                .insts
                .iter_enumerated()
                .filter(|(_, x)| matches!(x.opcode, Opcode::Ld | Opcode::St) && x.space != Some(Space::Param))
                .nth(nth)
                .unwrap()
                .0;
            sp.access(f, i)
        };
        assert_eq!(access(0), Space::Global);
        assert_eq!(access(1), Space::Shared);
        assert_eq!(access(2), Space::Local);
        assert_eq!(access(3), Space::Generic);
        assert_eq!(access(4), Space::Global);
    }
}
