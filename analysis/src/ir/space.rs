//! Address-space inference for generic pointers.
//!
//! rustc's nvptx back end addresses most memory through generic pointers
//! (`cvta.to.global`, `cvta.shared`, `asm!("cvta.shared.u64 …")`), so which
//! space a plain `ld`/`st` touches must be inferred: kernel pointer
//! parameters and `cvta.to.global` → global; `cvta.shared`/`.to.shared` and
//! `.shared` symbols → shared; `cvta.local`, `__local_depot`, `%SP`/`%SPL`
//! → local; `.const` symbols → const. Pointer arithmetic keeps the space of
//! its pointer operand; merging two different spaces gives `Generic`.
//!
//! Owns: the per-SSA-value space and the space of each memory access. Does
//! not own: address values (the affine domain) or any lint.

use super::{FunctionIr, ValueDef, ValueId};
use crate::ptx::{Module, Operand};
use std::collections::HashMap;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Space {
    /// Not a pointer we know anything about (yet).
    Unknown,
    Global,
    Shared,
    Local,
    Const,
    Param,
    /// Could be more than one space.
    Generic,
}

impl Space {
    fn join(self, o: Space) -> Space {
        match (self, o) {
            (Space::Unknown, x) | (x, Space::Unknown) => x,
            (a, b) if a == b => a,
            _ => Space::Generic,
        }
    }

    /// The space named by an instruction modifier, if any.
    pub fn from_mod(m: &str) -> Option<Space> {
        Some(match m {
            "global" => Space::Global,
            "shared" => Space::Shared,
            "local" => Space::Local,
            "const" => Space::Const,
            "param" => Space::Param,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            Space::Unknown => "unknown",
            Space::Global => "global",
            Space::Shared => "shared",
            Space::Local => "local",
            Space::Const => "const",
            Space::Param => "param",
            Space::Generic => "generic",
        }
    }
}

/// Spaces of the pointer values of one function.
pub struct Spaces {
    pub vals: Vec<Space>,
}

impl Spaces {
    pub fn infer(m: &Module<'_>, f: &FunctionIr<'_>) -> Spaces {
        let mut symbols: HashMap<&str, Space> = HashMap::new();
        for g in &m.globals {
            if let Some(s) = Space::from_mod(g.space.trim_start_matches('.')) {
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
                .filter(|p| if marked { p.is_ptr } else { matches!(p.ty, ".u64" | ".b64" | ".s64") && !length_like(f, p.name) })
                .map(|p| p.name)
                .collect()
        } else {
            vec![]
        };
        let mut vals = vec![Space::Unknown; f.ssa.values.len()];
        for (v, d) in f.ssa.values.iter().enumerate() {
            if let ValueDef::Entry(r) = d {
                let r = f.ssa.regs[*r as usize];
                if r == "%SP" || r == "%SPL" {
                    vals[v] = Space::Local;
                }
            }
        }
        // iterate to a fixed point (spaces only grow; a few passes suffice)
        for _ in 0..8 {
            let mut changed = false;
            for &b in &f.cfg.rpo {
                for &p in &f.ssa.block_phis[b] {
                    let ph = &f.ssa.phis[p as usize];
                    let s = ph.incoming.iter().fold(Space::Unknown, |acc, (_, iv)| acc.join(vals[*iv as usize]));
                    let nv = vals[ph.value as usize].join(s);
                    if nv != vals[ph.value as usize] {
                        vals[ph.value as usize] = nv;
                        changed = true;
                    }
                }
                for i in f.cfg.blocks[b].start..f.cfg.blocks[b].end {
                    let Some(&v) = f.ssa.defs(i).first() else { continue };
                    let s = inst_space(f, i, &vals, &symbols, &pointer_params);
                    let nv = vals[v as usize].join(s);
                    if nv != vals[v as usize] {
                        vals[v as usize] = nv;
                        changed = true;
                    }
                }
            }
            if !changed {
                break;
            }
        }
        Spaces { vals }
    }

    /// The space a memory instruction accesses: its explicit modifier, else
    /// the inferred space of its address.
    pub fn access(&self, f: &FunctionIr<'_>, i: usize) -> Space {
        let inst = f.insts[i];
        if let Some(s) = inst.mods().find_map(Space::from_mod) {
            return s;
        }
        let k = inst.operands.iter().position(|o| matches!(o, Operand::Addr(_)));
        match k.and_then(|k| f.operand_value(i, k)) {
            Some(v) => match self.vals[v as usize] {
                Space::Unknown => Space::Generic,
                s => s,
            },
            None => Space::Generic,
        }
    }

    pub fn of(&self, v: ValueId) -> Space {
        self.vals[v as usize]
    }
}

/// An unmarked 64-bit kernel parameter that is compared (`setp`) but never
/// converted to a window address (`cvta`) is a length or index, not a
/// pointer: NVVM and clang pass slices as (pointer, length) pairs of `.u64`.
fn length_like(f: &FunctionIr<'_>, param: &str) -> bool {
    let loads_param = |x: &crate::ptx::Instruction<'_>| {
        x.op() == "ld"
            && x.has_mod("param")
            && matches!(x.operands.get(1), Some(Operand::Addr(a)) if matches!(a.base, Some(Operand::Sym(p)) if p == param))
    };
    let regs: Vec<&str> = f
        .insts
        .iter()
        .filter(|x| loads_param(x))
        .filter_map(|x| match x.operands.first() {
            Some(Operand::Reg(r)) => Some(*r),
            _ => None,
        })
        .collect();
    if regs.is_empty() {
        return false;
    }
    let reads = |x: &crate::ptx::Instruction<'_>| {
        x.operands.iter().skip(1).any(|o| match o {
            Operand::Reg(r) => regs.contains(r),
            Operand::Addr(a) => matches!(a.base, Some(Operand::Reg(r)) if regs.contains(&r)),
            _ => false,
        })
    };
    let mut compared = false;
    for x in f.insts.iter().filter(|x| reads(x)) {
        match x.op() {
            "setp" => compared = true,
            "cvta" | "ld" | "st" | "atom" | "red" => return false,
            _ => {}
        }
    }
    compared
}

fn inst_space(f: &FunctionIr<'_>, i: usize, vals: &[Space], symbols: &HashMap<&str, Space>, pointer_params: &[&str]) -> Space {
    let inst = f.insts[i];
    let ops = &inst.operands;
    let of = |k: usize| -> Space {
        match ops.get(k) {
            Some(Operand::Sym(s)) | Some(Operand::SymOff(s, _)) => {
                symbols.get(s).copied().unwrap_or(if s.starts_with("__local_depot") { Space::Local } else { Space::Unknown })
            }
            Some(_) => f.operand_value(i, k).map(|v| vals[v as usize]).unwrap_or(Space::Unknown),
            None => Space::Unknown,
        }
    };
    match inst.op() {
        "cvta" => {
            // cvta.to.global (generic → global window) and cvta.global (global → generic) both keep the space
            inst.mods().find_map(Space::from_mod).unwrap_or(Space::Unknown)
        }
        "ld" if inst.has_mod("param") => match ops.get(1) {
            Some(Operand::Addr(a)) => match &a.base {
                Some(Operand::Sym(p))
                    if pointer_params.contains(p) && (inst.has_mod("u64") || inst.has_mod("b64") || inst.has_mod("s64")) =>
                {
                    Space::Global
                }
                _ => Space::Unknown,
            },
            _ => Space::Unknown,
        },
        "mov" | "cvt" => of(1),
        "add" | "sub" | "mad" | "selp" => {
            let a = of(1).join(of(2));
            if inst.op() == "mad" {
                a.join(of(3))
            } else {
                a
            }
        }
        _ => Space::Unknown,
    }
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
            let i = f.insts.iter().enumerate().filter(|(_, x)| matches!(x.op(), "ld" | "st") && !x.has_mod("param")).nth(nth).unwrap().0;
            sp.access(f, i)
        };
        assert_eq!(access(0), Space::Global);
        assert_eq!(access(1), Space::Shared);
        assert_eq!(access(2), Space::Local);
        assert_eq!(access(3), Space::Generic);
        assert_eq!(access(4), Space::Global);
    }
}
