//! Kernel IR: one `FunctionIr` per PTX function with a body — the flat
//! list of typed instructions (`inst`) with source locations, the CFG
//! (`cfg`), SSA (`ssa`), address spaces (`space`), and the one scalar
//! semantics every consumer evaluates with (`scalar`).
//!
//! Owns: lowering a parsed `ptx::Function` (flattening nested scopes,
//! resolving labels and `.branchtargets`, attaching `.loc`s, decoding each
//! instruction once). Does not own: any abstract interpretation (see
//! `crate::divergence`).

pub mod cfg;
pub mod dataflow;
pub mod entity;
pub mod inst;
pub mod loops;
pub mod scalar;
pub mod space;
pub mod ssa;
pub mod values;

use crate::ptx::{Function, Loc, Module, Operand, Stmt};
pub use cfg::Cfg;
pub use entity::{BlockId, EntityId, IdVec, InstId, LoopId, PhiId, ValueId};
pub use inst::{decode, Inst, Opcode};
use rustc_hash::{FxHashMap, FxHashSet};
pub use ssa::{Ssa, User, ValueDef};

pub struct FunctionIr<'a> {
    pub func: &'a Function<'a>,
    /// Index of the function in `Module::functions`.
    pub index: usize,
    /// The instructions, decoded.
    pub insts: IdVec<InstId, Inst<'a>>,
    /// The `.loc` in force at each instruction (line 0 entries skipped).
    pub locs: IdVec<InstId, Option<Loc>>,
    /// Instructions after a line-0 `.loc` (code the compiler moved or made,
    /// with no source line of its own): their `locs` entry is earlier
    /// code's.
    pub unplaced: dataflow::BitSet,
    /// Label name → the instruction it precedes (one past the last for a label at the end).
    pub labels: FxHashMap<&'a str, InstId>,
    /// Names of `.shared` variables declared in the function body.
    pub local_shared: FxHashSet<&'a str>,
    /// The `.shared` arrays the function can name (the module's and its
    /// own), with their size in bytes and whether the launch sizes them.
    pub shared_arrays: FxHashMap<&'a str, SharedArray>,
    pub cfg: Cfg,
    pub ssa: Ssa<'a>,
    /// Loop counters and exit tests (`loops`).
    pub loops: loops::Loops,
    /// SSA value read through each top-level operand (`Reg`, `!Reg`, the
    /// base register of an address, the first register of a pair), flat,
    /// indexed through `opval_start`; `NO_VALUE` for other operands.
    opvals: Vec<u32>,
    opval_start: Vec<u32>,
    /// Address space of every pointer value (see `space`).
    pub spaces: space::Spaces,
    /// The source's name of each PTX parameter, by index, where the
    /// driver knows them (a kernel's signature in its CUDA C or Rust
    /// source); empty otherwise. Messages name parameters through
    /// [`FunctionIr::param_label`].
    pub source_params: Vec<String>,
}

/// No SSA value behind an operand (immediates, symbols, special registers).
const NO_VALUE: u32 = u32::MAX;

/// Lower every function with a body. `noreturn` functions end blocks.
pub fn lower<'a>(m: &'a Module<'a>) -> Vec<FunctionIr<'a>> {
    let cx = ModuleCx::new(m);
    m.functions.iter().enumerate().filter(|(_, f)| f.body.is_some()).map(|(i, _)| lower_one(m, i, &cx)).collect()
}

/// Names of the module's `noreturn` functions (calls to them end blocks).
pub fn noreturn<'a>(m: &'a Module<'a>) -> FxHashSet<&'a str> {
    m.functions.iter().filter(|f| f.noreturn).map(|f| f.name).collect()
}

/// What lowering one function needs to know of the whole module: which
/// calls never return, and the spaces device functions' parameters receive.
pub struct ModuleCx<'a> {
    pub noreturn: FxHashSet<&'a str>,
    pub params: space::ParamSpaces,
    /// Functions lowered already (to find the spaces their calls pass),
    /// each taken by the first [`lower_one`] of it.
    lowered: std::sync::Mutex<FxHashMap<usize, FunctionIr<'a>>>,
    /// The other functions' instructions as the module's listing decoded
    /// them ([`bodies`]), each taken by its first lowering (not decoded twice).
    decoded: std::sync::Mutex<FxHashMap<usize, IdVec<InstId, Inst<'a>>>>,
    /// The instructions of the functions [`ModuleCx::keep`] kept, and the
    /// most it keeps: half the module's (one function at least).
    kept: std::sync::atomic::AtomicUsize,
    keep_budget: usize,
}

impl<'a> ModuleCx<'a> {
    pub fn new(m: &'a Module<'a>) -> ModuleCx<'a> {
        ModuleCx::from_bodies(m, bodies(m))
    }

    /// From the module's bodies, where the caller has them already (their
    /// instructions serve the functions' lowerings).
    pub fn from_bodies(m: &'a Module<'a>, mut bodies: Vec<Body<'a>>) -> ModuleCx<'a> {
        let noreturn = noreturn(m);
        let keep_budget = bodies.iter().map(|b| b.insts.len()).sum::<usize>() / 2;
        // (the functions it lowers take their bodies' instructions)
        let (params, lowered) = space::ParamSpaces::compute(m, &mut bodies, &noreturn);
        let lowered: FxHashMap<usize, FunctionIr<'a>> = lowered.into_iter().map(|f| (f.index, f)).collect();
        let decoded = bodies.into_iter().filter(|b| !lowered.contains_key(&b.index)).map(|b| (b.index, b.insts)).collect();
        ModuleCx {
            noreturn,
            params,
            lowered: std::sync::Mutex::new(lowered),
            decoded: std::sync::Mutex::new(decoded),
            kept: Default::default(),
            keep_budget,
        }
    }

    /// Function `index`'s instructions as the listing decoded them, the
    /// first time they are asked for.
    fn decoded(&self, index: usize) -> Option<IdVec<InstId, Inst<'a>>> {
        self.decoded.lock().unwrap_or_else(|e| e.into_inner()).remove(&index)
    }

    /// Keep function `f`, lowered and analysed, for the next [`lower_one`]
    /// of it (a kernel the replay runs: lowered once, not twice), within
    /// the budget: kernels waiting for their replay do not hold much of
    /// the module twice (the replays come after every analysis).
    pub fn keep(&self, f: FunctionIr<'a>) {
        use std::sync::atomic::Ordering::Relaxed;
        let n = f.insts.len();
        let before = self.kept.fetch_add(n, Relaxed);
        if before > 0 && before + n > self.keep_budget {
            self.kept.fetch_sub(n, Relaxed);
            return;
        }
        self.lowered.lock().unwrap_or_else(|e| e.into_inner()).insert(f.index, f);
    }
}

/// Lower function `index` of the module (it must have a body).
pub fn lower_one<'a>(m: &'a Module<'a>, index: usize, cx: &ModuleCx<'a>) -> FunctionIr<'a> {
    if let Some(f) = cx.lowered.lock().unwrap_or_else(|e| e.into_inner()).remove(&index) {
        return f;
    }
    lower_function_with(m, index, &cx.noreturn, &cx.params, cx.decoded(index))
}

/// Lower device function `index` for one call context: its parameters get
/// the spaces that call passes (`params`, see [`space::ParamSpaces::of_call`]).
pub fn lower_for_call<'a>(m: &'a Module<'a>, index: usize, cx: &ModuleCx<'a>, params: &space::ParamSpaces) -> FunctionIr<'a> {
    lower_function_with(m, index, &cx.noreturn, params, cx.decoded(index))
}

/// `decoded`: the function's instructions, decoded already (else they are decoded here).
fn lower_function_with<'a>(
    m: &'a Module<'a>,
    index: usize,
    noreturn: &FxHashSet<&'a str>,
    params: &space::ParamSpaces,
    decoded: Option<IdVec<InstId, Inst<'a>>>,
) -> FunctionIr<'a> {
    let mut ir = lower_function(&m.functions[index], index, noreturn, decoded);
    ir.spaces = space::Spaces::infer(m, &ir, params);
    ir.shared_arrays = shared_arrays(m, ir.func);
    ir
}

impl FunctionIr<'_> {
    /// Give the arrays sized at launch (`extern .shared`, `[]`) the launch's
    /// dynamic shared bytes, when known.
    pub fn size_dynamic_shared(&mut self, bytes: Option<u64>) {
        if let Some(b) = bytes {
            self.shared_arrays.values_mut().filter(|s| s.dynamic).for_each(|s| s.bytes = Some(b));
        }
    }
}

/// The bytes a variable declaration holds: element × vector length ×
/// dimensions, saturating (a declared size past `u64` is `u64::MAX`, for
/// the interpreter to refuse); 0 for an array sized at launch (`[]`).
pub fn var_bytes(v: &crate::ptx::VarDecl<'_>) -> u64 {
    let n: u64 = v.dims.iter().map(|d| d.unwrap_or(0)).fold(1u64, u64::saturating_mul);
    let vec = match v.vector {
        Some(".v2") => 2,
        Some(".v4") => 4,
        Some(".v8") => 8,
        _ => 1,
    };
    inst::decl_bytes(v.ty).saturating_mul(n).saturating_mul(vec)
}

/// The `.shared` declarations function `f` sees: the module's, then its
/// own (which hide them).
pub fn shared_decls<'a>(m: &'a Module<'a>, f: &'a Function<'a>) -> impl Iterator<Item = &'a crate::ptx::VarDecl<'a>> {
    m.globals.iter().chain(body_vars(f)).filter(|v| inst::Space::of_decl(v.space) == Some(inst::Space::Shared))
}

/// The `.local` arrays function `f` declares in its body (the depot the
/// compiler keeps a thread's arrays in), with their bytes.
pub fn local_decls<'a>(f: &'a Function<'a>) -> impl Iterator<Item = (&'a crate::ptx::VarDecl<'a>, u64)> {
    body_vars(f).filter(|v| inst::Space::of_decl(v.space) == Some(inst::Space::Local)).map(|v| (v, var_bytes(v)))
}

/// The variables function `f` declares in its body.
fn body_vars<'a>(f: &'a Function<'a>) -> impl Iterator<Item = &'a crate::ptx::VarDecl<'a>> {
    f.body.as_deref().unwrap_or(&[]).iter().filter_map(|s| match s {
        Stmt::Var(v) => Some(v),
        _ => None,
    })
}

/// The bytes a `.shared` array holds, `None` when the launch sizes it
/// (`extern`, `[]`).
pub fn static_bytes(v: &crate::ptx::VarDecl<'_>) -> Option<u64> {
    (!v.dims.iter().any(Option::is_none)).then(|| var_bytes(v))
}

/// A `.shared` array a function can name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SharedArray {
    /// Its bytes (`None`: sized at launch, and that size is not known).
    pub bytes: Option<u64>,
    /// Sized at launch (`extern`, `[]`): every such array of a kernel
    /// starts at the same place, the launch's dynamic shared memory.
    pub dynamic: bool,
}

/// The `.shared` arrays function `f` can name, with their sizes.
fn shared_arrays<'a>(m: &'a Module<'a>, f: &'a Function<'a>) -> FxHashMap<&'a str, SharedArray> {
    shared_decls(m, f)
        .map(|v| {
            let bytes = static_bytes(v);
            (v.name, SharedArray { bytes, dynamic: bytes.is_none() })
        })
        .collect()
}

/// A function body's instructions and labels, in order: what module-wide
/// passes (call summaries, DWARF addresses) need, without CFG or SSA, so
/// that a big module need not hold every function's IR at once.
pub struct Body<'a> {
    pub func: &'a Function<'a>,
    pub index: usize,
    pub insts: IdVec<InstId, Inst<'a>>,
    pub labels: FxHashMap<&'a str, InstId>,
}

/// The bodies of every function that has one (numbered as in `lower`).
pub fn bodies<'a>(m: &'a Module<'a>) -> Vec<Body<'a>> {
    let mut out = Vec::new();
    for (index, func) in m.functions.iter().enumerate() {
        let Some(body) = func.body.as_deref() else { continue };
        let mut insts: IdVec<InstId, Inst<'a>> = IdVec::with_capacity(body.len());
        let mut labels = FxHashMap::default();
        for s in body {
            match s {
                Stmt::Label(l, _) => {
                    labels.insert(*l, InstId::new(insts.len()));
                }
                Stmt::Inst(i) => {
                    insts.push(decode(i));
                }
                _ => {}
            }
        }
        out.push(Body { func, index, insts, labels });
    }
    out
}

/// The first branch whose target is no label of its function (ptxas:
/// "Unknown symbol"), as an error at the branch.
pub fn undefined_branch_target(m: &Module<'_>) -> Option<crate::ptx::ParseError> {
    for f in &m.functions {
        let Some(body) = f.body.as_deref() else { continue };
        // (the labels are gathered at the function's first branch: many functions have none)
        let mut labels: Option<FxHashSet<&str>> = None;
        for s in body {
            let Stmt::Inst(i) = s else { continue };
            if inst::opcode_of(i) != inst::Opcode::Bra {
                continue;
            }
            let labels =
                labels.get_or_insert_with(|| body.iter().filter_map(|s| if let Stmt::Label(l, _) = s { Some(*l) } else { None }).collect());
            if let Some(l) = decode(i).branch_label().filter(|l| !labels.contains(l)) {
                return Some(crate::ptx::ParseError {
                    line: i.pos.line,
                    col: i.pos.col,
                    expected: format!("a label defined in `{}` as the branch target (ptxas: unknown symbol)", f.name),
                    found: format!("`{l}`"),
                });
            }
        }
    }
    None
}

/// What [`Body`] and [`FunctionIr`] share: a function's instruction listing.
pub trait Listing<'a> {
    fn func(&self) -> &'a Function<'a>;
    fn index(&self) -> usize;
    fn insts(&self) -> &IdVec<InstId, Inst<'a>>;
    fn labels(&self) -> &FxHashMap<&'a str, InstId>;
}

/// Both types keep the listing in fields of the same names.
macro_rules! listing {
    ($t:ident) => {
        impl<'a> Listing<'a> for $t<'a> {
            fn func(&self) -> &'a Function<'a> {
                self.func
            }
            fn index(&self) -> usize {
                self.index
            }
            fn insts(&self) -> &IdVec<InstId, Inst<'a>> {
                &self.insts
            }
            fn labels(&self) -> &FxHashMap<&'a str, InstId> {
                &self.labels
            }
        }
    };
}
listing!(Body);
listing!(FunctionIr);

fn lower_function<'a>(
    f: &'a Function<'a>,
    index: usize,
    noreturn: &FxHashSet<&str>,
    decoded: Option<IdVec<InstId, Inst<'a>>>,
) -> FunctionIr<'a> {
    let body: &'a [Stmt<'a>] = f.body.as_deref().unwrap_or(&[]);
    // (the listing's decoding, when given, is this body's: `bodies` decodes each `Stmt::Inst` in order)
    debug_assert!(decoded.as_ref().is_none_or(|d| d.len() == body.iter().filter(|s| matches!(s, Stmt::Inst(_))).count()));
    let mut insts = IdVec::with_capacity(body.len());
    let mut locs = IdVec::with_capacity(body.len());
    let mut labels = FxHashMap::default();
    let mut tables: FxHashMap<&str, Vec<&str>> = FxHashMap::default();
    let mut local_shared = FxHashSet::default();
    let mut cur_loc: Option<Loc> = None;
    let mut line_zero = false;
    let mut zero: Vec<usize> = Vec::new();
    let mut last_label: Option<&str> = None;
    for s in body {
        match s {
            Stmt::Label(l, _) => {
                labels.insert(*l, InstId::new(insts.len()));
                last_label = Some(l);
            }
            Stmt::Inst(i) => {
                if line_zero {
                    zero.push(insts.len());
                }
                insts.push(match &decoded {
                    Some(d) => d[InstId::new(insts.len())],
                    None => decode(i),
                });
                locs.push(cur_loc);
                last_label = None;
            }
            Stmt::Loc(l) => {
                line_zero = l.line == 0;
                if l.line > 0 {
                    cur_loc = Some(*l);
                }
            }
            Stmt::BranchTargets(t, _) => {
                if let Some(l) = last_label {
                    tables.insert(l, t.clone());
                }
            }
            Stmt::Var(v) if inst::Space::of_decl(v.space) == Some(inst::Space::Shared) => {
                local_shared.insert(v.name);
            }
            _ => {}
        }
    }
    let is_noreturn = |i: &Inst<'_>| i.call_target().is_some_and(|t| noreturn.contains(t));
    let cfg = Cfg::build(&insts, &labels, &tables, is_noreturn);
    let ssa = Ssa::build(&insts, &cfg);
    let mut opvals = Vec::with_capacity(insts.len() * 3);
    let mut opval_start = Vec::with_capacity(insts.len() + 1);
    for (i, inst) in insts.iter_enumerated() {
        opval_start.push(opvals.len() as u32);
        for o in inst.operands() {
            let reg = match o {
                Operand::Reg(r) | Operand::Not(r) => Some(*r),
                Operand::Pair(p) => Some(crate::ptx::split_pair(p).0),
                Operand::Addr(a) => match &a.base {
                    Some(Operand::Reg(r)) => Some(*r),
                    _ => None,
                },
                _ => None,
            };
            opvals.push(reg.and_then(|r| ssa.use_of(i, r)).map_or(NO_VALUE, |v| v.index() as u32));
        }
    }
    opval_start.push(opvals.len() as u32);
    let insts_len = insts.len();
    let mut ir = FunctionIr {
        func: f,
        index,
        insts,
        unplaced: {
            let mut u = dataflow::BitSet::new(insts_len);
            zero.into_iter().for_each(|k| u.insert(k));
            u
        },
        locs,
        labels,
        local_shared,
        shared_arrays: FxHashMap::default(),
        cfg,
        ssa,
        loops: loops::Loops::default(),
        opvals,
        opval_start,
        spaces: space::Spaces::empty(),
        source_params: Vec::new(),
    };
    ir.loops = loops::Loops::compute(&ir);
    ir
}

impl<'a> FunctionIr<'a> {
    /// A parameter as messages name it: its source name where known (`n`
    /// for `kernel_param_2`), else its PTX name.
    pub fn param_label(&self, ptx_name: &str) -> String {
        let k = self.func.params.iter().position(|p| p.name == ptx_name);
        match k.and_then(|k| self.source_params.get(k)).filter(|n| !n.is_empty()) {
            Some(n) => n.clone(),
            None => ptx_name.to_string(),
        }
    }

    /// The index of the parameter messages name `label` ([`Self::param_label`]).
    pub fn param_of_label(&self, label: &str) -> Option<u32> {
        self.func.params.iter().position(|p| self.param_label(p.name) == label).map(|k| k as u32)
    }

    /// The index of the parameter the PTX names `name`.
    pub fn param_index(&self, name: &str) -> Option<u32> {
        self.func.params.iter().position(|p| p.name == name).map(|k| k as u32)
    }

    /// The source name of parameter `k`, if known.
    pub fn source_param(&self, k: usize) -> Option<&str> {
        self.source_params.get(k).map(String::as_str).filter(|n| !n.is_empty())
    }

    /// The instruction that defines `v`, if any.
    pub fn def_inst(&self, v: ValueId) -> Option<InstId> {
        match self.ssa.values[v] {
            ValueDef::Inst { inst, .. } => Some(inst),
            _ => None,
        }
    }

    /// The block where `v` is defined (`None`: on entry, before every block).
    pub fn def_block(&self, v: ValueId) -> Option<BlockId> {
        match self.ssa.values[v] {
            ValueDef::Inst { inst, .. } => Some(self.cfg.block_of(inst)),
            ValueDef::Phi(p) => Some(self.ssa.phis[p].block),
            ValueDef::Entry(_) => None,
        }
    }

    /// From just after instruction `from`, does some path reach instruction
    /// `to` (`None`: the function's end — a `ret`/`exit`, guarded or not,
    /// or a block without successors) without passing an instruction
    /// `stop` accepts? Around loops too (`to` may come before `from`).
    pub fn reaches_avoiding(&self, from: InstId, to: Option<InstId>, stop: &dyn Fn(InstId) -> bool) -> bool {
        let cfg = &self.cfg;
        // scan a run of instructions: Some(true) reached, Some(false) stopped, None went on
        let scan = |insts: &mut dyn Iterator<Item = InstId>| -> Option<bool> {
            for i in insts {
                if Some(i) == to || (to.is_none() && matches!(self.insts[i].flow(), inst::Flow::Exit) && !self.insts[i].is_jump()) {
                    return Some(true);
                }
                if stop(i) {
                    return Some(false);
                }
            }
            None
        };
        let home = cfg.block_of(from);
        let mut rest = cfg.blocks[home].insts().skip_while(|&i| i != from).skip(1);
        match scan(&mut rest) {
            Some(r) => return r,
            None if to.is_none() && cfg.blocks[home].succs.is_empty() => return true,
            None => {}
        }
        let mut seen = dataflow::BitSet::new(cfg.len());
        let mut stack: Vec<BlockId> = cfg.blocks[home].succs.clone();
        while let Some(b) = stack.pop() {
            if seen.contains(b.index()) {
                continue;
            }
            seen.insert(b.index());
            match scan(&mut cfg.blocks[b].insts()) {
                Some(true) => return true,
                Some(false) => {}
                None if to.is_none() && cfg.blocks[b].succs.is_empty() => return true,
                None => stack.extend(cfg.blocks[b].succs.iter().copied()),
            }
        }
        false
    }

    /// The value stored to call parameter `name` before call `call`
    /// (`st.param.b64 [param0], %rd5`), searched back in the call's block.
    pub fn call_argument(&self, call: InstId, name: &str) -> Option<ValueId> {
        self.operand_value(self.call_argument_store(call, name)?, 1)
    }

    /// The store of call parameter `name` for call `call` (the nearest
    /// before it in its block: each call sequence stores its own).
    pub fn call_argument_store(&self, call: InstId, name: &str) -> Option<InstId> {
        let start = self.cfg.blocks[self.cfg.block_of(call)].insts().next()?;
        (start.index()..call.index()).rev().map(InstId::new).find(|&i| {
            let x = &self.insts[i];
            x.opcode == inst::Opcode::St
                && x.space == Some(inst::Space::Param)
                && matches!(x.operand(0), Some(Operand::Addr(a)) if matches!(a.base, Some(Operand::Sym(s)) if s == name) && a.offset == 0)
        })
    }

    /// For `ld.param` of a name that is not one of the function's own
    /// parameters: the call (earlier in its block) that returns it.
    pub fn call_returning(&self, ld: InstId, name: &str) -> Option<InstId> {
        if self.func.params.iter().any(|p| p.name == name) {
            return None;
        }
        let start = self.cfg.blocks[self.cfg.block_of(ld)].insts().next()?;
        (start.index()..ld.index())
            .rev()
            .map(InstId::new)
            .find(|&i| self.insts[i].call_returns().iter().any(|o| matches!(o, Operand::Sym(s) if *s == name)))
    }

    /// SSA value read through operand `k` of instruction `i` (see `opvals`).
    #[inline]
    pub fn operand_value(&self, i: InstId, k: usize) -> Option<ValueId> {
        let i = i.index();
        let s = self.opval_start[i] as usize + k;
        if s < self.opval_start[i + 1] as usize && self.opvals[s] != NO_VALUE {
            Some(ValueId::new(self.opvals[s] as usize))
        } else {
            None
        }
    }

    /// Block containing instruction `i`.
    pub fn block_of(&self, i: InstId) -> BlockId {
        self.cfg.block_of(i)
    }

    /// The block a branch instruction `i` jumps to (`None`: no label, or a
    /// label past the last instruction).
    pub fn branch_target(&self, i: InstId) -> Option<BlockId> {
        let l = self.insts[i].branch_label()?;
        self.labels.get(l).filter(|x| x.index() < self.insts.len()).map(|&x| self.cfg.block_of(x))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ptx::parse;

    /// GPUVerify's Fig. 3 (seed 004): the CFG of scan 1a — a loop whose body
    /// has two guarded regions, each followed by a barrier.
    const SCAN_1A: &str = r#"
.entry scan(.param .u64 sum) {
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, 1;
$L_head:
    setp.ge.u32 %p1, %r2, 256;
    @%p1 bra $L_exit;
    setp.lt.u32 %p2, %r1, %r2;
    @%p2 bra $L_b1;
    ld.shared.u32 %r3, [%r1];
$L_b1:
    bar.sync 0;
    @%p2 bra $L_b2;
    st.shared.u32 [%r1], %r3;
$L_b2:
    bar.sync 0;
    shl.b32 %r2, %r2, 1;
    bra.uni $L_head;
$L_exit:
    ret;
}"#;

    #[test]
    fn shared_arrays_and_their_sizes() {
        let m = parse(
            ".version 7.0\n.target sm_80\n.address_size 64\n.shared .align 4 .b8 tile[1024];\n.extern .shared .align 4 .b8 dyn[];\n.entry k() {\n    .shared .align 8 .v2 .f32 pairs[16][2];\n    .shared .align 4 .b8 tile[64];\n    ret;\n}\n",
        )
        .unwrap();
        let f = &lower(&m)[0];
        let mut got: Vec<(&str, Option<u64>)> = f.shared_arrays.iter().map(|(k, v)| (*k, v.bytes)).collect();
        got.sort();
        // the function's own `tile` hides the module's; a `[]` array is sized at launch
        assert_eq!(got, [("dyn", None), ("pairs", Some(256)), ("tile", Some(64))]);
    }

    #[test]
    fn cfg_dominators_loops_ssa() {
        let m = parse(SCAN_1A).unwrap();
        let fs = lower(&m);
        let f = &fs[0];
        let c = &f.cfg;
        // blocks: entry, head, guard1, load, b1(bar), store, b2(bar+latch), exit
        assert_eq!(c.len(), 8);
        assert_eq!(c.loops.len(), 1);
        let b = BlockId::new;
        let l = &c.loops[LoopId::new(0)];
        assert_eq!(l.header, b(1));
        assert_eq!(l.blocks, [1, 2, 3, 4, 5, 6].map(b));
        assert_eq!(l.latches, vec![b(6)]);
        assert_eq!(l.exits, vec![(b(1), b(7))]);
        assert!(c.dominates(b(1), b(6)));
        assert!(!c.dominates(b(3), b(4)));
        assert_eq!(c.ipdom(b(2)), Some(b(4)));
        assert_eq!(c.ipdom(b(4)), Some(b(6)));
        assert_eq!(c.ipdom(b(1)), Some(b(7)));
        assert!(!c.is_irreducible());
        // %r2 gets a phi at the header; %r3 at b1 (merge of load and skip)
        let phi_regs: Vec<(usize, &str)> = f.ssa.phis.iter().map(|p| (p.block.index(), f.ssa.regs[p.reg as usize])).collect();
        assert!(phi_regs.contains(&(1, "%r2")), "{phi_regs:?}");
        assert!(phi_regs.contains(&(4, "%r3")), "{phi_regs:?}");
        // the shl reads the header phi
        let shl = f.insts.iter_enumerated().find(|(_, i)| i.opcode == Opcode::Shl).unwrap().0;
        let v = f.ssa.use_of(shl, "%r2").unwrap();
        assert!(matches!(f.ssa.values[v], ValueDef::Phi(_)));
    }

    #[test]
    fn irreducible_is_detected() {
        let src = ".entry k() { @%p1 bra $A; $B: @%p2 bra $A; ret; $A: @%p3 bra $B; ret; }";
        let m = parse(src).unwrap();
        let fs = lower(&m);
        assert!(fs[0].cfg.is_irreducible());
    }

    /// A kept function is the next lowering of it (once), and what is kept
    /// stays within half the module's instructions, though the
    /// first function kept may be larger.
    #[test]
    fn kept_functions_within_the_budget_are_lowered_once() {
        let body = |n: usize| "    add.s32 %r1, %r1, 1;\n".repeat(n);
        let src = format!(
            ".version 7.0\n.target sm_80\n.visible .entry big() {{\n    .reg .b32 %r<2>;\n{}    ret;\n}}\n.visible .entry small() {{\n    .reg .b32 %r<2>;\n{}    ret;\n}}\n.visible .entry other() {{\n    .reg .b32 %r<2>;\n{}    ret;\n}}\n",
            body(60),
            body(5),
            body(20)
        );
        let m = parse(&src).unwrap();
        fn marked<'a>(m: &'a crate::ptx::Module<'a>, cx: &ModuleCx<'a>, i: usize) -> FunctionIr<'a> {
            let mut f = lower_one(m, i, cx);
            f.source_params = vec![format!("kept {i}")];
            f
        }
        fn kept<'a>(m: &'a crate::ptx::Module<'a>, cx: &ModuleCx<'a>) -> Vec<bool> {
            (0..3).map(|i| !lower_one(m, i, cx).source_params.is_empty()).collect()
        }
        // (88 instructions: half is 44) the small one and the other fit, the big one does not beside them
        let cx = ModuleCx::new(&m);
        for i in [1, 2, 0] {
            cx.keep(marked(&m, &cx, i));
        }
        assert_eq!(kept(&m, &cx), [false, true, true]);
        // the first kept is kept whatever its size, and then nothing more
        let cx = ModuleCx::new(&m);
        for i in [0, 1, 2] {
            cx.keep(marked(&m, &cx, i));
        }
        assert_eq!(kept(&m, &cx), [true, false, false]);
        assert!(lower_one(&m, 0, &cx).source_params.is_empty(), "kept for one lowering only");
    }
}
