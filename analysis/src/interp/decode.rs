//! Decoding PTX instructions into the interpreter's compact form: register
//! names become indices into a warp's register file, symbols become
//! addresses, types and modifiers become enums, branch targets become
//! instruction indices with their reconvergence points (immediate
//! post-dominators).
//!
//! Owns: what the interpreter supports and the "unsupported instruction"
//! errors (naming the instruction and its PTX line). Does not own:
//! executing anything.

use super::InterpError;
use crate::ir::inst::{AtomOp, BoolOp, Cmp, Flag, Inst, Opcode, Round, ShflMode, Space, Special, Sub, Ty, VoteMode};
use crate::ir::scalar::{self, Bin, Un};
use crate::ir::{FunctionIr, InstId};
use crate::ptx::Operand;
use rustc_hash::FxHashMap;

/// A value source.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Src {
    Reg(u32),
    /// `!%p`
    NotReg(u32),
    Imm(u64),
    /// A `.local` variable of the function: its offset in the frame (the
    /// frame's base in the thread's local memory is added when read).
    Local(u64),
}

/// Addresses of `.param` variables of device-function calls (a caller's
/// `param0`/`retval0`, a callee's formal parameters) carry this tag: they
/// live in the frame's per-thread call scratch, not in the kernel's
/// parameter buffer.
pub const CALL_PARAM: u64 = 1 << 62;

/// A memory operand `[base+off]`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Addr {
    pub base: Src,
    pub off: i64,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Op {
    Bin {
        op: Bin,
        ty: Ty,
        d: u32,
        a: Src,
        b: Src,
        round: Round,
        ftz: bool,
        sat: bool,
    },
    Mad {
        ty: Ty,
        mode: Bin,
        d: u32,
        a: Src,
        b: Src,
        c: Src,
        round: Round,
        ftz: bool,
        sat: bool,
    },
    Un {
        op: Un,
        ty: Ty,
        d: u32,
        a: Src,
        ftz: bool,
    },
    Setp {
        cmp: Cmp,
        ty: Ty,
        d: u32,
        d2: Option<u32>,
        a: Src,
        b: Src,
        combine: Option<(BoolOp, Src)>,
        ftz: bool,
    },
    Set {
        cmp: Cmp,
        dty: Ty,
        ty: Ty,
        d: u32,
        a: Src,
        b: Src,
    },
    Selp {
        d: u32,
        a: Src,
        b: Src,
        p: Src,
    },
    Mov {
        d: u32,
        a: Src,
    },
    /// `mov.b64 %rd, {%r1, %r2}` (pack) / `mov.b64 {%r1, %r2}, %rd` (unpack): part width in bits.
    Pack {
        d: u32,
        parts: Vec<Src>,
        bits: u32,
    },
    Unpack {
        ds: Vec<Option<u32>>,
        a: Src,
        bits: u32,
    },
    Cvt {
        d: u32,
        dty: Ty,
        sty: Ty,
        a: Src,
        round: Option<Round>,
        int_round: bool,
        sat: bool,
        ftz: bool,
    },
    /// `cvta.SPACE` (to generic) or `cvta.to.SPACE`.
    Cvta {
        d: u32,
        a: Src,
        space: Space,
        to_space: bool,
    },
    Ld {
        space: Space,
        ty: Ty,
        ds: Vec<Option<u32>>,
        addr: Addr,
    },
    St {
        space: Space,
        ty: Ty,
        srcs: Vec<Src>,
        addr: Addr,
    },
    Atom {
        space: Space,
        op: AtomOp,
        ty: Ty,
        d: Option<u32>,
        addr: Addr,
        b: Src,
        c: Src,
        /// `.release`/`.acq_rel` at the device's scope: a fence before the update.
        fences: bool,
    },
    /// A fence for the whole device (`__threadfence()`); other fences do nothing here.
    Fence,
    Bfe {
        ty: Ty,
        d: u32,
        a: Src,
        b: Src,
        c: Src,
    },
    Bfi {
        ty: Ty,
        d: u32,
        f: Src,
        b: Src,
        c: Src,
        l: Src,
    },
    Prmt {
        d: u32,
        a: Src,
        b: Src,
        c: Src,
    },
    Shfl {
        mode: ShflMode,
        d: u32,
        p: Option<u32>,
        a: Src,
        b: Src,
        c: Src,
    },
    Vote {
        mode: VoteMode,
        d: u32,
        a: Src,
    },
    Activemask {
        d: u32,
    },
    MatchAny {
        d: u32,
        a: Src,
        bits: u32,
    },
    /// A barrier; `whole_block`: every thread of the block must arrive (no
    /// thread count operand).
    Bar {
        whole_block: bool,
    },
    /// `call` of function `func` (module index): where the caller keeps
    /// the arguments and wants the results (call-scratch offset, bytes).
    Call {
        func: usize,
        args: Vec<(u64, u32)>,
        rets: Vec<(u64, u32)>,
    },
    /// `ret`: the lanes leave the current function (the kernel: they end).
    Ret,
    /// `bra` to instruction `target`; `rpc`: reconvergence instruction of the branch's block.
    Bra {
        target: usize,
        rpc: usize,
    },
    Exit,
    Trap,
    /// An instruction the interpreter does not execute: the error, raised
    /// when a warp reaches it (a panic path that never runs, an
    /// extended-precision add in a branch the launch does not take, does
    /// not stop the run).
    Unsupported(Box<InterpError>),
    Nop,
    /// `bar.warp.sync -1` (`__syncwarp()`): separates the warp's lanes for the race shadow.
    WarpSync,
}

/// One instruction in execution form.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    pub guard: Option<Src>,
    pub op: Op,
}

/// Where named things live, for decoding symbols.
pub struct Symbols<'s> {
    /// Shared variable → offset in the block's shared memory.
    pub shared: &'s FxHashMap<String, u64>,
    /// Global/const variable → device address.
    pub global: &'s FxHashMap<String, u64>,
    /// Kernel parameter → offset in the parameter buffer.
    pub params: &'s FxHashMap<String, u64>,
    /// Function name → index in the module (call targets).
    pub functions: &'s FxHashMap<&'s str, usize>,
}

/// A decoded function.
pub struct Program {
    pub insts: Vec<Step>,
    /// Number of registers (a warp's register file holds 32 × this many values).
    pub nregs: usize,
    pub specials: Vec<(u32, Special)>,
    /// Bytes of `.local` depot per thread.
    pub local_bytes: u64,
    /// The local accesses based on one `.local` array, by instruction
    /// index: the array's offset in the frame and its bytes.
    pub local_extents: FxHashMap<usize, (u64, u64)>,
    /// Bytes of call scratch per thread (formal parameters, `.param` variables).
    pub scratch_bytes: u64,
    /// A device function's formal parameters and results: (scratch offset, bytes).
    pub formals: Vec<(u64, u32)>,
    pub returns: Vec<(u64, u32)>,
}

/// Instruction index meaning "never reconverges before exit".
pub const NO_RPC: usize = usize::MAX;

struct Dec<'f, 'a, 's> {
    f: &'f FunctionIr<'a>,
    regs: FxHashMap<&'a str, u32>,
    specials: Vec<(u32, Special)>,
    syms: &'f Symbols<'s>,
    locals: FxHashMap<&'a str, u64>,
    /// `.param` variables and formals of this function (device functions, call sequences).
    call_params: FxHashMap<&'a str, (u64, u32)>,
}

impl<'a> Dec<'_, 'a, '_> {
    fn reg(&mut self, name: &'a str) -> u32 {
        let n = self.regs.len() as u32;
        let idx = *self.regs.entry(name).or_insert(n);
        if idx == n {
            if let Some(s) = Special::parse(name) {
                self.specials.push((idx, s));
            }
        }
        idx
    }

    fn sym(&self, name: &str) -> Option<u64> {
        if let Some(k) = crate::ir::inst::predefined_constant(name) {
            return Some(k as u64);
        }
        if let Some((off, _)) = self.call_params.get(name) {
            return Some(CALL_PARAM + off);
        }
        self.syms.shared.get(name).or_else(|| self.syms.global.get(name)).or_else(|| self.syms.params.get(name)).copied()
    }

    fn src(&mut self, o: &Operand<'a>, ty: Ty, i: InstId) -> Result<Src, InterpError> {
        Ok(match o {
            Operand::Reg(r) => Src::Reg(self.reg(r)),
            Operand::Not(r) => Src::NotReg(self.reg(r)),
            Operand::Imm(v) => Src::Imm(*v as u64),
            Operand::Float(x) => Src::Imm(match ty {
                Ty::F(32) => (*x as f32).to_bits() as u64,
                Ty::F(64) => x.to_bits(),
                // a float literal given for an integer-typed operand: its bits
                _ => (*x as f32).to_bits() as u64,
            }),
            Operand::Sym(s) if self.locals.contains_key(s) => Src::Local(self.locals[s]),
            Operand::SymOff(s, off) if self.locals.contains_key(s) => Src::Local(self.locals[s].wrapping_add(*off as i64 as u64)),
            Operand::Sym(s) => Src::Imm(self.sym(s).ok_or_else(|| self.err(i, &format!("unknown symbol `{s}`")))?),
            Operand::SymOff(s, off) => {
                Src::Imm(self.sym(s).ok_or_else(|| self.err(i, &format!("unknown symbol `{s}`")))?.wrapping_add(*off as i64 as u64))
            }
            _ => return Err(self.err(i, "unsupported operand")),
        })
    }

    fn dst(&mut self, o: &Operand<'a>, i: InstId) -> Result<u32, InterpError> {
        match o {
            Operand::Reg(r) => Ok(self.reg(r)),
            _ => Err(self.err(i, "expected a register destination")),
        }
    }

    fn opt_dst(&mut self, o: &Operand<'a>, i: InstId) -> Result<Option<u32>, InterpError> {
        match o {
            Operand::Sink => Ok(None),
            _ => self.dst(o, i).map(Some),
        }
    }

    fn addr(&mut self, o: &Operand<'a>, i: InstId) -> Result<Addr, InterpError> {
        match o {
            Operand::Addr(a) => {
                let base = match &a.base {
                    Some(b) => self.src(b, Ty::U(64), i)?,
                    None => Src::Imm(0),
                };
                Ok(Addr { base, off: a.offset })
            }
            _ => Err(self.err(i, "expected an address `[…]`")),
        }
    }

    fn err(&self, i: InstId, why: &str) -> InterpError {
        let inst = &self.f.insts[i];
        InterpError::Unsupported { line: inst.ast.pos.line, opcode: inst.text().to_string(), why: why.to_string() }
    }
}

/// The space an access resolves through at run time (generic addresses
/// by their window; `Unknown` is never decoded).
fn space_of(inst: &Inst<'_>) -> Result<Space, &'static str> {
    match inst.space {
        None | Some(Space::Unknown) => Ok(Space::Generic),
        Some(Space::SharedCluster) => Err("distributed shared memory (`.shared::cluster`) is not interpreted"),
        Some(s) => Ok(s),
    }
}

/// Decode one function (the kernel, or a device function it calls).
pub fn decode<'a>(f: &FunctionIr<'a>, syms: &Symbols<'_>) -> Result<Program, InterpError> {
    // (the registers' map sized once: the lowering counted them)
    let mut d = Dec {
        f,
        regs: FxHashMap::with_capacity_and_hasher(f.ssa.regs.len(), Default::default()),
        specials: Vec::new(),
        syms,
        locals: FxHashMap::default(),
        call_params: FxHashMap::default(),
    };
    // call scratch: a device function's results and formals, then every `.param` variable of the body
    let mut scratch = 0u64;
    let mut place = |d: &mut Dec<'_, 'a, '_>, name: &'a str, ty: &str, n: u64, align: Option<u32>| -> (u64, u32) {
        let size = crate::ir::inst::decl_bytes(ty) * n.max(1);
        // the same name declared again (one `param0` per call sequence) keeps its slot when it fits
        if let Some(&(off, have)) = d.call_params.get(name) {
            if size <= have as u64 {
                return (off, size as u32);
            }
        }
        let align = align.map(|a| a as u64).unwrap_or(size.min(8)).max(1);
        scratch = scratch.div_ceil(align) * align;
        let at = (scratch, size as u32);
        d.call_params.insert(name, at);
        scratch += size;
        at
    };
    let mut formals = Vec::new();
    let mut returns = Vec::new();
    if !f.func.is_entry {
        for p in &f.func.returns {
            returns.push(place(&mut d, p.name, p.ty, p.array.unwrap_or(1), p.align));
        }
        for p in &f.func.params {
            formals.push(place(&mut d, p.name, p.ty, p.array.unwrap_or(1), p.align));
        }
        if f.func.params.iter().chain(&f.func.returns).any(|p| p.space == ".reg") {
            // a register parameter (`.func f(.reg .b32 x)`) is passed in no memory we model
            return Err(InterpError::Unsupported {
                line: f.func.pos.line,
                opcode: format!(".func {}", f.func.name),
                why: "`.reg` parameters of device functions are not interpreted".into(),
            });
        }
    }
    for s in f.func.body.iter().flatten() {
        if let crate::ptx::Stmt::Var(v) = s {
            if Space::of_decl(v.space) == Some(Space::Param) {
                let n: u64 = v.dims.iter().map(|x| x.unwrap_or(1)).product::<u64>().max(1);
                place(&mut d, v.name, v.ty, n, v.align);
            }
        }
    }
    let mut local_bytes = 0u64;
    let mut local_sizes: FxHashMap<&str, u64> = FxHashMap::default();
    for (v, size) in crate::ir::local_decls(f.func) {
        let align = v.align.unwrap_or(8) as u64;
        local_bytes = local_bytes.div_ceil(align) * align;
        d.locals.insert(v.name, local_bytes);
        local_sizes.insert(v.name, size);
        local_bytes += size;
    }
    // the local accesses based on one array: its extent in the frame, by instruction
    let local_extents = f
        .insts
        .iter_enumerated()
        .filter(|(_, inst)| inst.access().is_some())
        .filter_map(|(i, _)| {
            let s = crate::memory::base_symbol_at(f, i)?;
            Some((i.index(), (*d.locals.get(s)?, *local_sizes.get(s)?)))
        })
        .collect();
    let mut insts = Vec::with_capacity(f.insts.len());
    for i in f.insts.keys() {
        let guard = match &f.insts[i].ast.guard {
            Some(g) => {
                let r = d.reg(g.reg);
                Some(if g.negated { Src::NotReg(r) } else { Src::Reg(r) })
            }
            None => None,
        };
        let op = match decode_one(&mut d, i) {
            Ok(op) => op,
            Err(e @ InterpError::Unsupported { .. }) => Op::Unsupported(Box::new(e)),
            Err(e) => return Err(e),
        };
        insts.push(Step { guard, op });
    }
    Ok(Program { insts, nregs: d.regs.len(), specials: d.specials, local_bytes, local_extents, scratch_bytes: scratch, formals, returns })
}

fn decode_one<'a>(d: &mut Dec<'_, 'a, '_>, i: InstId) -> Result<Op, InterpError> {
    let inst: Inst<'a> = d.f.insts[i];
    let ops = inst.operands();
    let ty = inst.ty.unwrap_or(Ty::B(32));
    let ftz = inst.has(Flag::FTZ);
    let sat = inst.has(Flag::SAT);
    let need = |n: usize, d: &Dec<'_, 'a, '_>| if ops.len() < n { Err(d.err(i, &format!("expected {n} operands"))) } else { Ok(()) };
    let space = |d: &Dec<'_, 'a, '_>| space_of(&inst).map_err(|why| d.err(i, why));
    if inst.has(Flag::CC) || matches!(inst.opcode, Opcode::Addc | Opcode::Subc | Opcode::Madc) {
        return Err(d.err(i, "extended-precision arithmetic (carry flag) is not interpreted"));
    }
    // arithmetic: its meaning (operation, type, rounding, flags) as the scalar layer prepares it
    match scalar::prepare(&inst, 0) {
        Some(scalar::Prepared::Bin { op, ty, round, ftz, sat }) => {
            need(3, d)?;
            return Ok(Op::Bin { op, ty, d: d.dst(&ops[0], i)?, a: d.src(&ops[1], ty, i)?, b: d.src(&ops[2], ty, i)?, round, ftz, sat });
        }
        Some(scalar::Prepared::Un { op, ty, ftz }) => {
            need(2, d)?;
            return Ok(Op::Un { op, ty, d: d.dst(&ops[0], i)?, a: d.src(&ops[1], ty, i)?, ftz });
        }
        Some(scalar::Prepared::Mad { ty, mode, round, ftz, sat }) => {
            need(4, d)?;
            let (dd, a, b) = (d.dst(&ops[0], i)?, d.src(&ops[1], ty, i)?, d.src(&ops[2], ty, i)?);
            let cty = if mode == Bin::MulWide { ty.widened() } else { ty };
            return Ok(Op::Mad { ty, mode, d: dd, a, b, c: d.src(&ops[3], cty, i)?, round, ftz, sat });
        }
        _ => {}
    }
    Ok(match inst.opcode {
        Opcode::Setp => {
            need(3, d)?;
            let cmp = inst.cmp.ok_or_else(|| d.err(i, "comparison operator"))?;
            let (dd, d2) = match &ops[0] {
                Operand::Pair(p) => {
                    let (a, b) = crate::ptx::split_pair(p);
                    (d.reg(a), if b == "_" { None } else { Some(d.reg(b)) })
                }
                o => (d.dst(o, i)?, None),
            };
            let combine = match (inst.bool_op, ops.get(3)) {
                (Some(b), Some(o)) => Some((b, d.src(o, Ty::Pred, i)?)),
                _ => None,
            };
            Op::Setp { cmp, ty, d: dd, d2, a: d.src(&ops[1], ty, i)?, b: d.src(&ops[2], ty, i)?, combine, ftz }
        }
        Opcode::Set => {
            need(3, d)?;
            let cmp = inst.cmp.ok_or_else(|| d.err(i, "comparison operator"))?;
            let dty = inst.dty.unwrap_or(Ty::U(32));
            Op::Set { cmp, dty, ty, d: d.dst(&ops[0], i)?, a: d.src(&ops[1], ty, i)?, b: d.src(&ops[2], ty, i)? }
        }
        Opcode::Selp => {
            need(4, d)?;
            Op::Selp { d: d.dst(&ops[0], i)?, a: d.src(&ops[1], ty, i)?, b: d.src(&ops[2], ty, i)?, p: d.src(&ops[3], Ty::Pred, i)? }
        }
        Opcode::Mov => {
            need(2, d)?;
            match (&ops[0], &ops[1]) {
                (Operand::Vector(parts), src) => {
                    let bits = ty.bits() / parts.len().max(1) as u32;
                    let ds = parts.iter().map(|p| d.opt_dst(p, i)).collect::<Result<Vec<_>, _>>()?;
                    Op::Unpack { ds, a: d.src(src, ty, i)?, bits }
                }
                (dst, Operand::Vector(parts)) => {
                    let bits = ty.bits() / parts.len().max(1) as u32;
                    let parts = parts.iter().map(|p| d.src(p, Ty::B(bits as u8), i)).collect::<Result<Vec<_>, _>>()?;
                    Op::Pack { d: d.dst(dst, i)?, parts, bits }
                }
                (dst, src) => Op::Mov { d: d.dst(dst, i)?, a: d.src(src, ty, i)? },
            }
        }
        Opcode::Cvt => {
            need(2, d)?;
            let (Some(dty), Some(sty)) = (inst.dty, inst.ty) else { return Err(d.err(i, "destination and source types")) };
            Op::Cvt {
                d: d.dst(&ops[0], i)?,
                dty,
                sty,
                a: d.src(&ops[1], sty, i)?,
                round: inst.round,
                int_round: inst.has(Flag::INT_ROUND),
                sat,
                ftz,
            }
        }
        Opcode::Cvta => {
            need(2, d)?;
            Op::Cvta { d: d.dst(&ops[0], i)?, a: d.src(&ops[1], Ty::U(64), i)?, space: space(d)?, to_space: inst.has(Flag::TO) }
        }
        Opcode::Ld | Opcode::Ldu => {
            need(2, d)?;
            let ds = match &ops[0] {
                Operand::Vector(parts) => parts.iter().map(|p| d.opt_dst(p, i)).collect::<Result<Vec<_>, _>>()?,
                o => vec![Some(d.dst(o, i)?)],
            };
            Op::Ld { space: space(d)?, ty, ds, addr: d.addr(&ops[1], i)? }
        }
        Opcode::St => {
            need(2, d)?;
            let srcs = match &ops[1] {
                Operand::Vector(parts) => parts.iter().map(|p| d.src(p, ty, i)).collect::<Result<Vec<_>, _>>()?,
                o => vec![d.src(o, ty, i)?],
            };
            Op::St { space: space(d)?, ty, srcs, addr: d.addr(&ops[0], i)? }
        }
        Opcode::Atom | Opcode::Red => {
            let Sub::Atom(aop) = inst.sub else { return Err(d.err(i, "atomic operation")) };
            if aop == AtomOp::Popc {
                return Err(d.err(i, "atomic operation"));
            }
            let (dd, rest) = if inst.opcode == Opcode::Atom {
                need(3, d)?;
                (Some(d.dst(&ops[0], i)?), &ops[1..])
            } else {
                need(2, d)?;
                (None, ops)
            };
            let addr = d.addr(&rest[0], i)?;
            let b = d.src(&rest[1], ty, i)?;
            let c = match rest.get(2) {
                Some(o) => d.src(o, ty, i)?,
                None => Src::Imm(0),
            };
            Op::Atom { space: space(d)?, op: aop, ty, d: dd, addr, b, c, fences: inst.fences_device() }
        }
        Opcode::Bfe => {
            need(4, d)?;
            Op::Bfe {
                ty,
                d: d.dst(&ops[0], i)?,
                a: d.src(&ops[1], ty, i)?,
                b: d.src(&ops[2], Ty::U(32), i)?,
                c: d.src(&ops[3], Ty::U(32), i)?,
            }
        }
        Opcode::Bfi => {
            need(5, d)?;
            Op::Bfi {
                ty,
                d: d.dst(&ops[0], i)?,
                f: d.src(&ops[1], ty, i)?,
                b: d.src(&ops[2], ty, i)?,
                c: d.src(&ops[3], Ty::U(32), i)?,
                l: d.src(&ops[4], Ty::U(32), i)?,
            }
        }
        Opcode::Prmt => {
            need(4, d)?;
            if inst.has(Flag::PRMT_MODE) {
                return Err(d.err(i, "prmt modes other than the default"));
            }
            Op::Prmt { d: d.dst(&ops[0], i)?, a: d.src(&ops[1], ty, i)?, b: d.src(&ops[2], ty, i)?, c: d.src(&ops[3], ty, i)? }
        }
        Opcode::Shfl => {
            need(4, d)?;
            let mode = match inst.sub {
                Sub::Shfl(m) => m,
                _ => ShflMode::Idx,
            };
            let (dd, p) = match &ops[0] {
                Operand::Pair(x) => {
                    let (a, b) = crate::ptx::split_pair(x);
                    (d.reg(a), if b == "_" { None } else { Some(d.reg(b)) })
                }
                o => (d.dst(o, i)?, None),
            };
            Op::Shfl { mode, d: dd, p, a: d.src(&ops[1], ty, i)?, b: d.src(&ops[2], Ty::U(32), i)?, c: d.src(&ops[3], Ty::U(32), i)? }
        }
        Opcode::Vote => {
            need(2, d)?;
            let mode = match inst.sub {
                Sub::Vote(m) => m,
                _ => VoteMode::Ballot,
            };
            Op::Vote { mode, d: d.dst(&ops[0], i)?, a: d.src(&ops[1], Ty::Pred, i)? }
        }
        Opcode::Activemask => {
            need(1, d)?;
            Op::Activemask { d: d.dst(&ops[0], i)? }
        }
        Opcode::Match if inst.sub == (Sub::Match { all: false }) => {
            need(2, d)?;
            Op::MatchAny { d: d.dst(&ops[0], i)?, a: d.src(&ops[1], ty, i)?, bits: ty.bits() }
        }
        Opcode::Bar | Opcode::Barrier if inst.is_full_warp_barrier() => Op::WarpSync,
        Opcode::Bar | Opcode::Barrier if inst.has(Flag::WARP) => Op::Nop,
        Opcode::Bar | Opcode::Barrier if !inst.has(Flag::RED) && !inst.has(Flag::ARRIVE) => Op::Bar { whole_block: ops.len() < 2 },
        Opcode::Bra | Opcode::Brx => {
            let label = match ops.first() {
                Some(Operand::Sym(s)) => *s,
                _ => return Err(d.err(i, "indirect branches")),
            };
            let target = d.f.labels.get(label).ok_or_else(|| d.err(i, &format!("unknown label `{label}`")))?.index();
            let b = d.f.cfg.block_of(i);
            let rpc = d.f.cfg.ipdom(b).map(|p| d.f.cfg.blocks[p].start.index()).unwrap_or(NO_RPC);
            Op::Bra { target, rpc }
        }
        Opcode::Ret => Op::Ret,
        Opcode::Exit => Op::Exit,
        Opcode::Trap => Op::Trap,
        Opcode::Membar | Opcode::Fence if inst.fences_device() => Op::Fence,
        Opcode::Membar | Opcode::Fence | Opcode::Prefetch | Opcode::Prefetchu | Opcode::Pmevent | Opcode::Nanosleep => Op::Nop,
        Opcode::Call => {
            // call[.uni] [(results),] target, [(arguments)]
            let mut lists = Vec::new();
            let mut target = None;
            for o in ops {
                match o {
                    Operand::List(l) => lists.push((target.is_some(), l)),
                    Operand::Sym(s) if target.is_none() => target = Some(*s),
                    _ => return Err(d.err(i, "indirect calls are not interpreted")),
                }
            }
            let target = target.ok_or_else(|| d.err(i, "call without a target"))?;
            let func = *d.syms.functions.get(target).ok_or_else(|| {
                d.err(i, &format!("`{target}` has no body in this PTX (declared only: defined in another module or a library)"))
            })?;
            let slots = |l: &[Operand<'a>]| -> Result<Vec<(u64, u32)>, InterpError> {
                l.iter()
                    .map(|o| match o {
                        Operand::Sym(s) => {
                            d.call_params.get(s).copied().ok_or_else(|| d.err(i, &format!("argument `{s}` is not a `.param` variable")))
                        }
                        _ => Err(d.err(i, "register arguments to calls are not interpreted")),
                    })
                    .collect()
            };
            let mut args = Vec::new();
            let mut rets = Vec::new();
            for (after, l) in lists {
                if after {
                    args = slots(l)?;
                } else {
                    rets = slots(l)?;
                }
            }
            Op::Call { func, args, rets }
        }
        _ => return Err(d.err(i, "not supported by the interpreter")),
    })
}
