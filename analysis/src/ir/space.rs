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
//! A 64-bit value loaded from memory that is not local (a pointer in a
//! `__constant__` struct, a field of a struct parameter, a pointer stored in
//! global memory, a call's return value) is a global pointer, as CUDA's
//! allocations are global: a *weak* fact that any definite space it meets
//! (`shared_base + n` with `n` loaded) overrides. A device function's
//! parameter takes the join of the spaces its call sites pass
//! (`ParamSpaces`, callers before callees). Solved over the SSA values with
//! the crate's dataflow engine.
//!
//! Owns: the per-SSA-value space and the space of each memory access
//! (`Spaces::access`; `Spaces::assumed` says an access's space is not known
//! and is analysed as global). Does not own: address values (the affine
//! domain) or any lint.

use super::dataflow::{self, Problem};
pub use super::inst::Space;
use super::inst::{Inst, Opcode, Ty};
use super::{FunctionIr, IdVec, InstId, User, ValueDef, ValueId};
use crate::ptx::{Module, Operand};
use rustc_hash::{FxHashMap, FxHashSet};

/// What is known of one pointer value: its space, and whether that is only
/// the default for a value loaded from memory (`weak`: a definite space
/// met in a join wins over it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Fact {
    pub space: Space,
    pub weak: bool,
}

impl Fact {
    pub const UNKNOWN: Fact = Fact { space: Space::Unknown, weak: false };
    const LOADED: Fact = Fact { space: Space::Global, weak: true };
    fn strong(space: Space) -> Fact {
        Fact { space, weak: false }
    }
}

/// Least upper bound of two facts: `Unknown` is bottom, a weak fact gives
/// way to a definite one, two different definite spaces make `Generic`.
pub fn join(a: Fact, b: Fact) -> Fact {
    match (a, b) {
        (Fact { space: Space::Unknown, .. }, x) | (x, Fact { space: Space::Unknown, .. }) => x,
        (a, b) if a.space == b.space => Fact { space: a.space, weak: a.weak && b.weak },
        (a, b) if a.weak && !b.weak => b,
        (a, b) if b.weak && !a.weak => a,
        _ => Fact::strong(Space::Generic),
    }
}

/// Spaces of the pointer values of one function.
pub struct Spaces {
    vals: IdVec<ValueId, Fact>,
}

/// The inference as a dataflow problem over the function's SSA values.
struct Inference<'f, 'a> {
    f: &'f FunctionIr<'a>,
    /// The module's variables (a function names few of them: looked up
    /// where named, not tabled per function).
    globals: &'f [crate::ptx::VarDecl<'a>],
    pointer_params: Vec<&'a str>,
    /// A device function's parameters: the spaces its callers pass.
    own_params: FxHashMap<&'a str, Fact>,
}

impl Problem for Inference<'_, '_> {
    type Value = Fact;
    fn transfer(&mut self, v: usize, vals: &[Fact]) -> Fact {
        let f = self.f;
        match f.ssa.values[ValueId::new(v)] {
            ValueDef::Entry(r) if matches!(f.ssa.regs[r as usize], "%SP" | "%SPL") => Fact::strong(Space::Local),
            ValueDef::Entry(_) => Fact::UNKNOWN,
            ValueDef::Phi(p) => f.ssa.phis[p].incoming.iter().fold(Fact::UNKNOWN, |acc, (_, iv)| join(acc, vals[iv.index()])),
            // the space of the first destination (a pointer is a single register)
            ValueDef::Inst { inst, slot: 0 } => self.inst_space(inst, vals),
            ValueDef::Inst { .. } => Fact::UNKNOWN,
        }
    }
    fn join(&self, a: &Fact, b: &Fact) -> Fact {
        join(*a, *b)
    }
    fn dependents(&mut self, v: usize, _: &[Fact], out: &mut Vec<usize>) {
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
    /// The space of a variable the function names: its own `.shared`
    /// arrays, the module's variables (the last declaration of a name
    /// with a space), the local depot.
    fn symbol_space(&self, s: &str) -> Space {
        if self.f.local_shared.contains(s) {
            return Space::Shared;
        }
        match self.globals.iter().rev().filter(|g| g.name == s).find_map(|g| Space::of_decl(g.space)) {
            Some(space) => space,
            None if s.starts_with("__local_depot") => Space::Local,
            None => Space::Unknown,
        }
    }

    fn inst_space(&self, i: InstId, vals: &[Fact]) -> Fact {
        let f = self.f;
        let inst = &f.insts[i];
        let of = |k: usize| -> Fact {
            match inst.operand(k) {
                Some(Operand::Sym(s)) | Some(Operand::SymOff(s, _)) => Fact::strong(self.symbol_space(s)),
                Some(_) => f.operand_value(i, k).map(|v| vals[v.index()]).unwrap_or(Fact::UNKNOWN),
                None => Fact::UNKNOWN,
            }
        };
        let pointer_sized = inst.ty.is_some_and(|t| t.bits() == 64 && !t.is_float()) && inst.vec <= 1;
        match inst.opcode {
            // cvta.to.global (generic → global window) and cvta.global (global → generic) both keep the space
            Opcode::Cvta => Fact::strong(inst.space.unwrap_or(Space::Unknown)),
            Opcode::Ld | Opcode::Ldu if inst.space == Some(Space::Param) => match inst.param_read() {
                Some((p, _)) if pointer_sized && self.pointer_params.contains(&p) => Fact::strong(Space::Global),
                Some((p, 0)) if self.own_params.contains_key(p) => self.own_params[p],
                // a struct parameter's field, a call's return value (a scalar
                // parameter that is not a pointer parameter is a length or index)
                Some((p, _)) if pointer_sized && f.func.params.iter().all(|q| q.name != p || q.array.is_some()) => Fact::LOADED,
                _ => Fact::UNKNOWN,
            },
            // a pointer read from memory other than the thread's own stack
            Opcode::Ld | Opcode::Ldu if pointer_sized => {
                let from = inst.space.unwrap_or_else(|| inst.address_operand().map_or(Space::Unknown, |k| of(k).space));
                if matches!(from, Space::Local) {
                    Fact::UNKNOWN
                } else {
                    Fact::LOADED
                }
            }
            Opcode::Mov | Opcode::Cvt => of(1),
            // `or.b64 %rd, %SP, 8`: a compiler's add of an offset to an aligned base
            Opcode::Add | Opcode::Sub | Opcode::Selp | Opcode::Or => join(of(1), of(2)),
            // `and.b64 %rd, %rd, -16`: the same pointer, aligned down
            Opcode::And if matches!(inst.operand(2), Some(Operand::Imm(_))) => of(1),
            Opcode::Mad => join(join(of(1), of(2)), of(3)),
            _ => Fact::UNKNOWN,
        }
    }
}

impl Spaces {
    pub fn infer<'a>(m: &Module<'a>, f: &FunctionIr<'a>, params: &ParamSpaces) -> Spaces {
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
        let own_params: FxHashMap<&str, Fact> = if f.func.is_entry {
            FxHashMap::default()
        } else {
            f.func
                .params
                .iter()
                .enumerate()
                .map(|(k, p)| {
                    let declared = p.ptr_space.and_then(Space::parse).map(Fact::strong);
                    (p.name, declared.unwrap_or_else(|| params.get(f.index, k)))
                })
                .collect()
        };
        let mut problem = Inference { f, globals: &m.globals, pointer_params, own_params };
        let vals = dataflow::solve(&mut problem, vec![Fact::UNKNOWN; f.ssa.values.len()], &order);
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
            Some(v) => match self.vals[v].space {
                Space::Unknown => Space::Generic,
                s => s,
            },
            None => Space::Generic,
        }
    }

    /// The space a memory access is analysed in: `Generic` (no space known,
    /// or several) is analysed as global, CUDA's default for memory that
    /// is not a block's or a thread's own; `assumed` says so.
    pub fn analysed(&self, f: &FunctionIr<'_>, i: InstId) -> (Space, bool) {
        match self.access(f, i) {
            Space::Generic | Space::Unknown => (Space::Global, true),
            s => (s, false),
        }
    }

    /// The space of a value, a weak one (a loaded 64-bit value) included.
    pub fn of(&self, v: ValueId) -> Space {
        self.vals[v].space
    }

    /// The fact about a value (its space, and whether it is only a loaded value's default).
    pub fn fact(&self, v: ValueId) -> Fact {
        self.vals[v]
    }

    /// The space of a value known to be a pointer (not a weak fact: a
    /// loaded 64-bit value may as well be a length).
    pub fn definite(&self, v: ValueId) -> Space {
        match self.vals[v] {
            Fact { weak: true, .. } => Space::Unknown,
            x => x.space,
        }
    }
}

/// The space each parameter of each device function receives from its
/// call sites, joined over them. Computed once per module, callers before
/// callees; recursive calls add nothing beyond one pass (said in the
/// coverage note as context-insensitive).
#[derive(Default)]
pub struct ParamSpaces {
    by_param: FxHashMap<(usize, usize), Fact>,
}

impl ParamSpaces {
    /// The fact for parameter `k` of function `index` (unknown when no call
    /// passes it).
    pub fn get(&self, index: usize, k: usize) -> Fact {
        self.by_param.get(&(index, k)).copied().unwrap_or(Fact::UNKNOWN)
    }

    /// The spaces one call passes to function `index` (a call context):
    /// parameter `k` gets `facts[k]`, unknown where `None`.
    pub fn of_call(index: usize, facts: impl IntoIterator<Item = Option<Fact>>) -> ParamSpaces {
        let by_param = facts.into_iter().enumerate().filter_map(|(k, f)| Some(((index, k), f?))).collect();
        ParamSpaces { by_param }
    }

    /// Lower each function that calls a defined function with arguments,
    /// callers first, and join the space of each argument into its callee
    /// (the call graph from the module's decoded `bodies`). With the
    /// spaces, the functions lowered on the way whose own parameters'
    /// spaces did not change after (every caller came first): the
    /// analysis takes them rather than lowering them again.
    /// The bodies of the functions it lowers give their instructions to
    /// the lowering (taken: each function is lowered from them once).
    pub fn compute<'a>(
        m: &'a Module<'a>,
        bodies: &mut [super::Body<'a>],
        noreturn: &FxHashSet<&'a str>,
    ) -> (ParamSpaces, Vec<FunctionIr<'a>>) {
        let index: FxHashMap<&str, usize> = bodies.iter().map(|b| (b.func.name, b.index)).collect();
        let mut callees: Vec<Vec<usize>> = vec![Vec::new(); m.functions.len()];
        for b in bodies.iter() {
            for x in b.insts.iter().filter(|x| !x.call_args().is_empty()) {
                if let Some(&t) = x.call_target().and_then(|t| index.get(t)) {
                    if !callees[b.index].contains(&t) {
                        callees[b.index].push(t);
                    }
                }
            }
        }
        let mut out = ParamSpaces::default();
        if callees.iter().all(|c| c.is_empty()) {
            return (out, Vec::new());
        }
        // reverse post-order of the call graph: callers before callees
        let mut order = Vec::new();
        let mut seen = vec![false; m.functions.len()];
        fn visit(i: usize, callees: &[Vec<usize>], seen: &mut [bool], order: &mut Vec<usize>) {
            seen[i] = true;
            for &c in &callees[i] {
                if !seen[c] {
                    visit(c, callees, seen, order);
                }
            }
            order.push(i);
        }
        let mut roots: Vec<usize> = index.values().copied().filter(|&i| m.functions[i].is_entry).collect();
        roots.sort_unstable();
        roots.extend(0..m.functions.len());
        for r in roots {
            if !seen[r] && m.functions[r].body.is_some() {
                visit(r, &callees, &mut seen, &mut order);
            }
        }
        let mut lowered = Vec::new();
        let own = |out: &ParamSpaces, i: usize| -> Vec<Fact> { (0..m.functions[i].params.len()).map(|k| out.get(i, k)).collect() };
        for &i in order.iter().rev().filter(|&&i| !callees[i].is_empty()) {
            // (the bodies are in the module's order)
            let decoded = bodies.binary_search_by_key(&i, |b| b.index).ok().map(|k| std::mem::take(&mut bodies[k].insts));
            let f = super::lower_function_with(m, i, noreturn, &out, decoded);
            out.add_calls(&f, &index);
            lowered.push((own(&out, i), f));
        }
        // (a recursive call may have given a function's parameters more after it was lowered: it
        // is lowered again later, from its listing, which it gives back)
        let mut kept = Vec::with_capacity(lowered.len());
        for (then, f) in lowered {
            if then == own(&out, f.index) {
                kept.push(f);
            } else if let Ok(k) = bodies.binary_search_by_key(&f.index, |b| b.index) {
                bodies[k].insts = f.insts;
            }
        }
        (out, kept)
    }

    /// Join the spaces `f` passes to the parameters of the functions it calls.
    fn add_calls(&mut self, f: &FunctionIr<'_>, index: &FxHashMap<&str, usize>) {
        for (i, inst) in f.insts.iter_enumerated() {
            let Some(&t) = inst.call_target().and_then(|t| index.get(t)) else { continue };
            for (k, arg) in inst.call_args().iter().enumerate() {
                let Operand::Sym(name) = arg else { continue };
                let Some(v) = f.call_argument(i, name) else { continue };
                let e = self.by_param.entry((t, k)).or_insert(Fact::UNKNOWN);
                *e = join(*e, f.spaces.vals[v]);
            }
        }
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
        let sp = Spaces::infer(&m, f, &ParamSpaces::default());
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

    /// `f` is lowered first (the kernel passes it a global pointer), then
    /// `g`, which passes it a shared one: `f`'s lowering is dropped and `f`
    /// is lowered again, from the instructions it took from the listing.
    #[test]
    fn a_function_whose_parameters_grow_after_its_lowering_is_lowered_again_whole() {
        let src = r#"
.shared .align 4 .b8 S[64];
.func g(.param .b64 g_p);
.func f(.param .b64 f_p) {
  .reg .b64 %rd<3>; .reg .b32 %r<2>;
  ld.param.b64 %rd1, [f_p];
  ld.u32 %r1, [%rd1];
  { .param .b64 a; st.param.b64 [a], %rd1; call.uni g, (a); }
  ret;
}
.func g(.param .b64 g_p) {
  .reg .b64 %rd<3>;
  cvta.shared.u64 %rd2, S;
  { .param .b64 a; st.param.b64 [a], %rd2; call.uni f, (a); }
  ret;
}
.visible .entry k(.param .u64 k_p) {
  .reg .b64 %rd<3>;
  ld.param.u64 %rd1, [k_p];
  cvta.to.global.u64 %rd2, %rd1;
  { .param .b64 a; st.param.b64 [a], %rd2; call.uni f, (a); }
  ret;
}"#;
        let m = parse(src).unwrap();
        let fi = m.functions.iter().position(|x| x.name == "f" && x.body.is_some()).unwrap();
        let cx = crate::ir::ModuleCx::new(&m);
        let f = crate::ir::lower_one(&m, fi, &cx);
        assert_eq!(f.insts.len(), crate::ir::lower(&m).iter().find(|x| x.index == fi).unwrap().insts.len());
        // its load reads through a pointer that is global from the kernel and shared from `g`
        let load = f.insts.iter_enumerated().find(|(_, x)| x.opcode == Opcode::Ld && x.space != Some(Space::Param)).unwrap().0;
        assert_eq!(f.spaces.access(&f, load), Space::Generic);
    }
}
