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
use crate::ir::FunctionIr;
use crate::ptx::{Instruction, Operand};
use std::collections::HashMap;

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

/// Scalar type of an operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ty {
    U(u8),
    S(u8),
    B(u8),
    F(u8),
    Pred,
}

impl Ty {
    pub fn bits(self) -> u32 {
        match self {
            Ty::U(b) | Ty::S(b) | Ty::B(b) | Ty::F(b) => b as u32,
            Ty::Pred => 1,
        }
    }
    pub fn bytes(self) -> u32 {
        self.bits().div_ceil(8)
    }
    pub fn is_float(self) -> bool {
        matches!(self, Ty::F(_))
    }
    pub fn signed(self) -> bool {
        matches!(self, Ty::S(_))
    }
}

fn ty_of(m: &str) -> Option<Ty> {
    Some(match m {
        "u8" => Ty::U(8),
        "u16" => Ty::U(16),
        "u32" => Ty::U(32),
        "u64" => Ty::U(64),
        "s8" => Ty::S(8),
        "s16" => Ty::S(16),
        "s32" => Ty::S(32),
        "s64" => Ty::S(64),
        "b8" => Ty::B(8),
        "b16" => Ty::B(16),
        "b32" => Ty::B(32),
        "b64" => Ty::B(64),
        "f32" => Ty::F(32),
        "f64" => Ty::F(64),
        "pred" => Ty::Pred,
        _ => return None,
    })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Space {
    Global,
    Shared,
    Local,
    Param,
    Const,
    Generic,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Round {
    Rn,
    Rz,
    Rm,
    Rp,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bin {
    Add,
    Sub,
    MulLo,
    MulHi,
    MulWide,
    Div,
    Rem,
    And,
    Or,
    Xor,
    Shl,
    Shr,
    Min,
    Max,
    /// `copysign`
    CopySign,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Un {
    Neg,
    Not,
    Cnot,
    Abs,
    Popc,
    Clz,
    Brev,
    Bfind,
    Sqrt,
    Rsqrt,
    Rcp,
    Ex2,
    Lg2,
    Sin,
    Cos,
    Tanh,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cmp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    Equ,
    Neu,
    Ltu,
    Leu,
    Gtu,
    Geu,
    Num,
    Nan,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BoolOp {
    And,
    Or,
    Xor,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AtomOp {
    Add,
    Min,
    Max,
    Exch,
    Cas,
    And,
    Or,
    Xor,
    Inc,
    Dec,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shfl {
    Up,
    Down,
    Bfly,
    Idx,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Vote {
    All,
    Any,
    Uni,
    Ballot,
}

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
        float: bool,
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
    },
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
        mode: Shfl,
        d: u32,
        p: Option<u32>,
        a: Src,
        b: Src,
        c: Src,
    },
    Vote {
        mode: Vote,
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
    Bar,
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
    Nop,
}

/// One decoded instruction.
#[derive(Debug, Clone, PartialEq)]
pub struct Inst {
    pub guard: Option<Src>,
    pub op: Op,
}

/// Special registers a warp initialises.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Special {
    Tid(usize),
    Ntid(usize),
    Ctaid(usize),
    Nctaid(usize),
    LaneId,
    WarpId,
    NWarpId,
    LaneMaskEq,
    LaneMaskLt,
    LaneMaskLe,
    LaneMaskGt,
    LaneMaskGe,
    Zero,
}

fn special(name: &str) -> Option<Special> {
    let dim = |s: &str| match s {
        "x" => Some(0),
        "y" => Some(1),
        "z" => Some(2),
        _ => None,
    };
    if let Some((base, d)) = name.split_once('.') {
        let d = dim(d)?;
        return Some(match base {
            "%tid" => Special::Tid(d),
            "%ntid" => Special::Ntid(d),
            "%ctaid" => Special::Ctaid(d),
            "%nctaid" => Special::Nctaid(d),
            _ => return None,
        });
    }
    Some(match name {
        "%laneid" => Special::LaneId,
        "%warpid" => Special::WarpId,
        "%nwarpid" => Special::NWarpId,
        "%lanemask_eq" => Special::LaneMaskEq,
        "%lanemask_lt" => Special::LaneMaskLt,
        "%lanemask_le" => Special::LaneMaskLe,
        "%lanemask_gt" => Special::LaneMaskGt,
        "%lanemask_ge" => Special::LaneMaskGe,
        "%clock" | "%clock64" | "%smid" | "%nsmid" | "%gridid" | "%globaltimer" => Special::Zero,
        _ => return None,
    })
}

/// Where named things live, for decoding symbols.
pub struct Symbols<'s> {
    /// Shared variable → offset in the block's shared memory.
    pub shared: &'s HashMap<String, u64>,
    /// Global/const variable → device address.
    pub global: &'s HashMap<String, u64>,
    /// Kernel parameter → offset in the parameter buffer.
    pub params: &'s HashMap<String, u64>,
    /// Function name → index in the module (call targets).
    pub functions: &'s HashMap<String, usize>,
}

/// A decoded function.
pub struct Program {
    pub insts: Vec<Inst>,
    /// Number of registers (a warp's register file holds 32 × this many values).
    pub nregs: usize,
    pub specials: Vec<(u32, Special)>,
    /// Bytes of `.local` depot per thread.
    pub local_bytes: u64,
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
    regs: HashMap<&'a str, u32>,
    specials: Vec<(u32, Special)>,
    syms: &'f Symbols<'s>,
    locals: HashMap<&'a str, u64>,
    /// `.param` variables and formals of this function (device functions, call sequences).
    call_params: HashMap<&'a str, (u64, u32)>,
}

impl<'a> Dec<'_, 'a, '_> {
    fn reg(&mut self, name: &'a str) -> u32 {
        let n = self.regs.len() as u32;
        let idx = *self.regs.entry(name).or_insert(n);
        if idx == n {
            if let Some(s) = special(name) {
                self.specials.push((idx, s));
            }
        }
        idx
    }

    fn sym(&self, name: &str) -> Option<u64> {
        if name == "WARP_SZ" {
            return Some(32);
        }
        if let Some((off, _)) = self.call_params.get(name) {
            return Some(CALL_PARAM + off);
        }
        self.syms.shared.get(name).or_else(|| self.syms.global.get(name)).or_else(|| self.syms.params.get(name)).copied()
    }

    fn src(&mut self, o: &Operand<'a>, ty: Ty, i: usize) -> Result<Src, InterpError> {
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

    fn dst(&mut self, o: &Operand<'a>, i: usize) -> Result<u32, InterpError> {
        match o {
            Operand::Reg(r) => Ok(self.reg(r)),
            _ => Err(self.err(i, "expected a register destination")),
        }
    }

    fn opt_dst(&mut self, o: &Operand<'a>, i: usize) -> Result<Option<u32>, InterpError> {
        match o {
            Operand::Sink => Ok(None),
            _ => self.dst(o, i).map(Some),
        }
    }

    fn addr(&mut self, o: &Operand<'a>, i: usize) -> Result<Addr, InterpError> {
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

    fn err(&self, i: usize, why: &str) -> InterpError {
        let inst = self.f.insts[i];
        InterpError::Unsupported { line: inst.pos.line, opcode: inst.opcode.to_string(), why: why.to_string() }
    }
}

fn round_of(inst: &Instruction<'_>) -> Option<Round> {
    inst.mods().find_map(|m| match m {
        "rn" | "rni" => Some(Round::Rn),
        "rz" | "rzi" => Some(Round::Rz),
        "rm" | "rmi" => Some(Round::Rm),
        "rp" | "rpi" => Some(Round::Rp),
        _ => None,
    })
}

fn space_of(inst: &Instruction<'_>) -> Space {
    for m in inst.mods() {
        match m {
            "global" => return Space::Global,
            "shared" | "shared::cta" => return Space::Shared,
            "local" => return Space::Local,
            "param" => return Space::Param,
            "const" => return Space::Const,
            _ => {}
        }
    }
    Space::Generic
}

fn cmp_of(m: &str) -> Option<Cmp> {
    Some(match m {
        "eq" => Cmp::Eq,
        "ne" => Cmp::Ne,
        "lt" | "lo" => Cmp::Lt,
        "le" | "ls" => Cmp::Le,
        "gt" | "hi" => Cmp::Gt,
        "ge" | "hs" => Cmp::Ge,
        "equ" => Cmp::Equ,
        "neu" => Cmp::Neu,
        "ltu" => Cmp::Ltu,
        "leu" => Cmp::Leu,
        "gtu" => Cmp::Gtu,
        "geu" => Cmp::Geu,
        "num" => Cmp::Num,
        "nan" => Cmp::Nan,
        _ => return None,
    })
}

/// Decode one function (the kernel, or a device function it calls).
pub fn decode<'a>(f: &FunctionIr<'a>, syms: &Symbols<'_>) -> Result<Program, InterpError> {
    let mut d = Dec { f, regs: HashMap::new(), specials: Vec::new(), syms, locals: HashMap::new(), call_params: HashMap::new() };
    // call scratch: a device function's results and formals, then every `.param` variable of the body
    let mut scratch = 0u64;
    let mut place = |d: &mut Dec<'_, 'a, '_>, name: &'a str, ty: &str, n: u64, align: Option<u32>| -> (u64, u32) {
        let size = ty_of(ty.trim_start_matches('.')).map(|t| t.bytes() as u64).unwrap_or(8) * n.max(1);
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
            return Err(InterpError::Unsupported {
                line: f.func.pos.line,
                opcode: format!(".func {}", f.func.name),
                why: "`.reg` parameters of device functions are not interpreted".into(),
            });
        }
    }
    for s in f.func.body.iter().flatten() {
        if let crate::ptx::Stmt::Var(v) = s {
            if v.space == ".param" {
                let n: u64 = v.dims.iter().map(|x| x.unwrap_or(1)).product::<u64>().max(1);
                place(&mut d, v.name, v.ty, n, v.align);
            }
        }
    }
    let mut local_bytes = 0u64;
    for s in f.func.body.iter().flatten() {
        if let crate::ptx::Stmt::Var(v) = s {
            if v.space == ".local" {
                let n: u64 = v.dims.iter().map(|x| x.unwrap_or(1)).product::<u64>().max(1);
                let size = ty_of(v.ty.trim_start_matches('.')).map(|t| t.bytes() as u64).unwrap_or(1) * n;
                let align = v.align.unwrap_or(8) as u64;
                local_bytes = local_bytes.div_ceil(align) * align;
                d.locals.insert(v.name, local_bytes);
                local_bytes += size;
            }
        }
    }
    let mut insts = Vec::with_capacity(f.insts.len());
    for i in 0..f.insts.len() {
        let inst = f.insts[i];
        let guard = match &inst.guard {
            Some(g) => {
                let r = d.reg(g.reg);
                Some(if g.negated { Src::NotReg(r) } else { Src::Reg(r) })
            }
            None => None,
        };
        let op = decode_one(&mut d, i)?;
        insts.push(Inst { guard, op });
    }
    Ok(Program { insts, nregs: d.regs.len(), specials: d.specials, local_bytes, scratch_bytes: scratch, formals, returns })
}

fn decode_one<'a>(d: &mut Dec<'_, 'a, '_>, i: usize) -> Result<Op, InterpError> {
    let inst: &Instruction<'a> = d.f.insts[i];
    let ops = &inst.operands[..];
    let types: Vec<Ty> = inst.mods().filter_map(ty_of).collect();
    let ty = types.last().copied().unwrap_or(Ty::B(32));
    let ftz = inst.has_mod("ftz");
    let sat = inst.has_mod("sat");
    let op = inst.op();
    let need = |n: usize, d: &Dec<'_, 'a, '_>| if ops.len() < n { Err(d.err(i, &format!("expected {n} operands"))) } else { Ok(()) };
    let bin = |d: &mut Dec<'_, 'a, '_>, b: Bin, round: Round| -> Result<Op, InterpError> {
        need(3, d)?;
        Ok(Op::Bin { op: b, ty, d: d.dst(&ops[0], i)?, a: d.src(&ops[1], ty, i)?, b: d.src(&ops[2], ty, i)?, round, ftz, sat })
    };
    let round = round_of(inst).unwrap_or(Round::Rn);
    Ok(match op {
        "add" => bin(d, Bin::Add, round)?,
        "sub" => bin(d, Bin::Sub, round)?,
        "mul" | "mul24" => {
            let m = if inst.has_mod("hi") {
                Bin::MulHi
            } else if inst.has_mod("wide") {
                Bin::MulWide
            } else {
                Bin::MulLo
            };
            bin(d, m, round)?
        }
        "div" => bin(d, Bin::Div, round)?,
        "rem" => bin(d, Bin::Rem, round)?,
        "and" => bin(d, Bin::And, round)?,
        "or" => bin(d, Bin::Or, round)?,
        "xor" => bin(d, Bin::Xor, round)?,
        "shl" => bin(d, Bin::Shl, round)?,
        "shr" => bin(d, Bin::Shr, round)?,
        "min" => bin(d, Bin::Min, round)?,
        "max" => bin(d, Bin::Max, round)?,
        "copysign" => bin(d, Bin::CopySign, round)?,
        "mad" | "fma" | "mad24" => {
            need(4, d)?;
            let float = ty.is_float();
            let mode = if inst.has_mod("hi") {
                Bin::MulHi
            } else if inst.has_mod("wide") {
                Bin::MulWide
            } else {
                Bin::MulLo
            };
            let (dd, a, b) = (d.dst(&ops[0], i)?, d.src(&ops[1], ty, i)?, d.src(&ops[2], ty, i)?);
            let cty = if mode == Bin::MulWide {
                match ty {
                    Ty::S(b) => Ty::S(b * 2),
                    Ty::U(b) => Ty::U(b * 2),
                    t => t,
                }
            } else {
                ty
            };
            Op::Mad { ty, mode, d: dd, a, b, c: d.src(&ops[3], cty, i)?, round, ftz, float }
        }
        "neg" | "not" | "cnot" | "abs" | "popc" | "clz" | "brev" | "bfind" | "sqrt" | "rsqrt" | "rcp" | "ex2" | "lg2" | "sin" | "cos"
        | "tanh" => {
            need(2, d)?;
            let u = match op {
                "neg" => Un::Neg,
                "not" => Un::Not,
                "cnot" => Un::Cnot,
                "abs" => Un::Abs,
                "popc" => Un::Popc,
                "clz" => Un::Clz,
                "brev" => Un::Brev,
                "bfind" => Un::Bfind,
                "sqrt" => Un::Sqrt,
                "rsqrt" => Un::Rsqrt,
                "rcp" => Un::Rcp,
                "ex2" => Un::Ex2,
                "lg2" => Un::Lg2,
                "sin" => Un::Sin,
                "cos" => Un::Cos,
                _ => Un::Tanh,
            };
            Op::Un { op: u, ty, d: d.dst(&ops[0], i)?, a: d.src(&ops[1], ty, i)?, ftz }
        }
        "setp" => {
            need(3, d)?;
            let cmp = inst.mods().find_map(cmp_of).ok_or_else(|| d.err(i, "comparison operator"))?;
            let cty = types.first().copied().unwrap_or(ty);
            let (dd, d2) = match &ops[0] {
                Operand::Pair(p) => {
                    let (a, b) = crate::ptx::split_pair(p);
                    (d.reg(a), if b == "_" { None } else { Some(d.reg(b)) })
                }
                o => (d.dst(o, i)?, None),
            };
            let bop = inst.mods().find_map(|m| match m {
                "and" => Some(BoolOp::And),
                "or" => Some(BoolOp::Or),
                "xor" => Some(BoolOp::Xor),
                _ => None,
            });
            let combine = match (bop, ops.get(3)) {
                (Some(b), Some(o)) => Some((b, d.src(o, Ty::Pred, i)?)),
                _ => None,
            };
            Op::Setp { cmp, ty: cty, d: dd, d2, a: d.src(&ops[1], cty, i)?, b: d.src(&ops[2], cty, i)?, combine, ftz }
        }
        "set" => {
            need(3, d)?;
            let cmp = inst.mods().find_map(cmp_of).ok_or_else(|| d.err(i, "comparison operator"))?;
            let (dty, sty) = (types.first().copied().unwrap_or(Ty::U(32)), types.get(1).copied().unwrap_or(ty));
            Op::Set { cmp, dty, ty: sty, d: d.dst(&ops[0], i)?, a: d.src(&ops[1], sty, i)?, b: d.src(&ops[2], sty, i)? }
        }
        "selp" => {
            need(4, d)?;
            Op::Selp { d: d.dst(&ops[0], i)?, a: d.src(&ops[1], ty, i)?, b: d.src(&ops[2], ty, i)?, p: d.src(&ops[3], Ty::Pred, i)? }
        }
        "mov" => {
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
        "cvt" => {
            need(2, d)?;
            let dty = types.first().copied().ok_or_else(|| d.err(i, "destination type"))?;
            let sty = types.get(1).copied().ok_or_else(|| d.err(i, "source type"))?;
            let int_round = inst.mods().any(|m| matches!(m, "rni" | "rzi" | "rmi" | "rpi"));
            Op::Cvt { d: d.dst(&ops[0], i)?, dty, sty, a: d.src(&ops[1], sty, i)?, round: round_of(inst), int_round, sat, ftz }
        }
        "cvta" => {
            need(2, d)?;
            let to_space = inst.has_mod("to");
            Op::Cvta { d: d.dst(&ops[0], i)?, a: d.src(&ops[1], Ty::U(64), i)?, space: space_of(inst), to_space }
        }
        "ld" | "ldu" => {
            need(2, d)?;
            let ds = match &ops[0] {
                Operand::Vector(parts) => parts.iter().map(|p| d.opt_dst(p, i)).collect::<Result<Vec<_>, _>>()?,
                o => vec![Some(d.dst(o, i)?)],
            };
            Op::Ld { space: space_of(inst), ty, ds, addr: d.addr(&ops[1], i)? }
        }
        "st" => {
            need(2, d)?;
            let srcs = match &ops[1] {
                Operand::Vector(parts) => parts.iter().map(|p| d.src(p, ty, i)).collect::<Result<Vec<_>, _>>()?,
                o => vec![d.src(o, ty, i)?],
            };
            Op::St { space: space_of(inst), ty, srcs, addr: d.addr(&ops[0], i)? }
        }
        "atom" | "red" => {
            let aop = inst
                .mods()
                .find_map(|m| {
                    Some(match m {
                        "add" => AtomOp::Add,
                        "min" => AtomOp::Min,
                        "max" => AtomOp::Max,
                        "exch" => AtomOp::Exch,
                        "cas" => AtomOp::Cas,
                        "and" => AtomOp::And,
                        "or" => AtomOp::Or,
                        "xor" => AtomOp::Xor,
                        "inc" => AtomOp::Inc,
                        "dec" => AtomOp::Dec,
                        _ => return None,
                    })
                })
                .ok_or_else(|| d.err(i, "atomic operation"))?;
            let (dd, rest) = if op == "atom" {
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
            Op::Atom { space: space_of(inst), op: aop, ty, d: dd, addr, b, c }
        }
        "bfe" => {
            need(4, d)?;
            Op::Bfe {
                ty,
                d: d.dst(&ops[0], i)?,
                a: d.src(&ops[1], ty, i)?,
                b: d.src(&ops[2], Ty::U(32), i)?,
                c: d.src(&ops[3], Ty::U(32), i)?,
            }
        }
        "bfi" => {
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
        "prmt" => {
            need(4, d)?;
            if inst.mods().any(|m| matches!(m, "f4e" | "b4e" | "rc8" | "ecl" | "ecr" | "rc16")) {
                return Err(d.err(i, "prmt modes other than the default"));
            }
            Op::Prmt { d: d.dst(&ops[0], i)?, a: d.src(&ops[1], ty, i)?, b: d.src(&ops[2], ty, i)?, c: d.src(&ops[3], ty, i)? }
        }
        "shfl" => {
            need(4, d)?;
            let mode = if inst.has_mod("up") {
                Shfl::Up
            } else if inst.has_mod("down") {
                Shfl::Down
            } else if inst.has_mod("bfly") {
                Shfl::Bfly
            } else {
                Shfl::Idx
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
        "vote" => {
            need(2, d)?;
            let mode = if inst.has_mod("all") {
                Vote::All
            } else if inst.has_mod("any") {
                Vote::Any
            } else if inst.has_mod("uni") {
                Vote::Uni
            } else {
                Vote::Ballot
            };
            Op::Vote { mode, d: d.dst(&ops[0], i)?, a: d.src(&ops[1], Ty::Pred, i)? }
        }
        "activemask" => {
            need(1, d)?;
            Op::Activemask { d: d.dst(&ops[0], i)? }
        }
        "match" if inst.has_mod("any") => {
            need(2, d)?;
            Op::MatchAny { d: d.dst(&ops[0], i)?, a: d.src(&ops[1], ty, i)?, bits: ty.bits() }
        }
        "bar" | "barrier" if inst.has_mod("warp") => Op::Nop,
        "bar" | "barrier" if !inst.has_mod("red") && !inst.has_mod("arrive") => Op::Bar,
        "bra" | "brx" => {
            let label = match ops.first() {
                Some(Operand::Sym(s)) => *s,
                _ => return Err(d.err(i, "indirect branches")),
            };
            let target = *d.f.labels.get(label).ok_or_else(|| d.err(i, &format!("unknown label `{label}`")))?;
            let b = d.f.cfg.block_of[i];
            let rpc = d.f.cfg.ipdom(b).map(|p| d.f.cfg.blocks[p].start).unwrap_or(NO_RPC);
            Op::Bra { target, rpc }
        }
        "ret" => Op::Ret,
        "exit" => Op::Exit,
        "trap" => Op::Trap,
        "membar" | "fence" | "prefetch" | "prefetchu" | "pmevent" | "nanosleep" => Op::Nop,
        "call" => {
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
