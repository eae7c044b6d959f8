//! The typed instruction layer: every PTX instruction decoded once into an
//! [`Inst`] — opcode, types, state space, vector width, rounding,
//! comparison, sub-operation and flags — and the facts analyses ask of it:
//! which operands it writes and reads, whether it is a block-wide barrier,
//! where it branches, what memory it touches and how wide, which special
//! register a name denotes and how that register varies between threads.
//!
//! Owns: the meaning of opcode and modifier *text* (nothing after this
//! module matches an opcode string), type sizes, state spaces (every
//! `::cta`, `::cluster`, `::entry`, `::func` form, with `.nc`, `.volatile`,
//! `.relaxed.gpu`… as flags), special registers. Does not own: what an
//! operation computes (see [`super::scalar`]), control-flow graphs or
//! values (see `cfg`, `ssa`).

use crate::ptx::{split_pair, Instruction, Operand};

/// A PTX opcode (the instruction name before its first `.`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Opcode {
    Abs,
    Activemask,
    Add,
    Addc,
    And,
    Atom,
    Bar,
    Barrier,
    Bfe,
    Bfi,
    Bfind,
    Bmsk,
    Bra,
    Brev,
    Brx,
    Call,
    Clz,
    Cnot,
    Copysign,
    Cos,
    Cp,
    Cvt,
    Cvta,
    Discard,
    Div,
    Dp2a,
    Dp4a,
    Elect,
    Ex2,
    Exit,
    Fence,
    Fma,
    Fns,
    Griddepcontrol,
    Isspacep,
    Ld,
    Ldmatrix,
    Ldu,
    Lg2,
    Lop3,
    Mad,
    Mad24,
    Madc,
    Mapa,
    Match,
    Max,
    Mbarrier,
    Membar,
    Min,
    Mma,
    Mov,
    Mul,
    Mul24,
    Multimem,
    Nanosleep,
    Neg,
    Not,
    Or,
    Pmevent,
    Popc,
    Prefetch,
    Prefetchu,
    Prmt,
    Rcp,
    Red,
    Redux,
    Rem,
    Ret,
    Rsqrt,
    Sad,
    Selp,
    Set,
    Setmaxnreg,
    Setp,
    Shf,
    Shfl,
    Shl,
    Shr,
    Sin,
    Slct,
    Sqrt,
    St,
    Stmatrix,
    Sub,
    Subc,
    Suld,
    Suq,
    Sured,
    Sust,
    Szext,
    Tanh,
    Tcgen05,
    Testp,
    Tex,
    Tld4,
    Trap,
    Txq,
    Vote,
    Wgmma,
    Wmma,
    Xor,
    /// Any other instruction: kept with its text, operand 0 taken as the
    /// destination (PTX's general convention).
    Other,
}

impl Opcode {
    /// The opcode a base name denotes (`Other` for names we do not model).
    pub fn parse(name: &str) -> Opcode {
        use Opcode::*;
        match name {
            "abs" => Abs,
            "activemask" => Activemask,
            "add" => Add,
            "addc" => Addc,
            "and" => And,
            "atom" => Atom,
            "bar" => Bar,
            "barrier" => Barrier,
            "bfe" => Bfe,
            "bfi" => Bfi,
            "bfind" => Bfind,
            "bmsk" => Bmsk,
            "bra" => Bra,
            "brev" => Brev,
            "brx" => Brx,
            "call" => Call,
            "clz" => Clz,
            "cnot" => Cnot,
            "copysign" => Copysign,
            "cos" => Cos,
            "cp" => Cp,
            "cvt" => Cvt,
            "cvta" => Cvta,
            "discard" => Discard,
            "div" => Div,
            "dp2a" => Dp2a,
            "dp4a" => Dp4a,
            "elect" => Elect,
            "ex2" => Ex2,
            "exit" => Exit,
            "fence" => Fence,
            "fma" => Fma,
            "fns" => Fns,
            "griddepcontrol" => Griddepcontrol,
            "isspacep" => Isspacep,
            "ld" => Ld,
            "ldmatrix" => Ldmatrix,
            "ldu" => Ldu,
            "lg2" => Lg2,
            "lop3" => Lop3,
            "mad" => Mad,
            "mad24" => Mad24,
            "madc" => Madc,
            "mapa" => Mapa,
            "match" => Match,
            "max" => Max,
            "mbarrier" => Mbarrier,
            "membar" => Membar,
            "min" => Min,
            "mma" => Mma,
            "mov" => Mov,
            "mul" => Mul,
            "mul24" => Mul24,
            "multimem" => Multimem,
            "nanosleep" => Nanosleep,
            "neg" => Neg,
            "not" => Not,
            "or" => Or,
            "pmevent" => Pmevent,
            "popc" => Popc,
            "prefetch" => Prefetch,
            "prefetchu" => Prefetchu,
            "prmt" => Prmt,
            "rcp" => Rcp,
            "red" => Red,
            "redux" => Redux,
            "rem" => Rem,
            "ret" => Ret,
            "rsqrt" => Rsqrt,
            "sad" => Sad,
            "selp" => Selp,
            "set" => Set,
            "setmaxnreg" => Setmaxnreg,
            "setp" => Setp,
            "shf" => Shf,
            "shfl" => Shfl,
            "shl" => Shl,
            "shr" => Shr,
            "sin" => Sin,
            "slct" => Slct,
            "sqrt" => Sqrt,
            "st" => St,
            "stmatrix" => Stmatrix,
            "sub" => Sub,
            "subc" => Subc,
            "suld" => Suld,
            "suq" => Suq,
            "sured" => Sured,
            "sust" => Sust,
            "szext" => Szext,
            "tanh" => Tanh,
            "tcgen05" => Tcgen05,
            "testp" => Testp,
            "tex" => Tex,
            "tld4" => Tld4,
            "trap" => Trap,
            "txq" => Txq,
            "vote" => Vote,
            "wgmma" => Wgmma,
            "wmma" => Wmma,
            "xor" => Xor,
            _ => Other,
        }
    }
}

/// A scalar type of an operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Ty {
    /// Unsigned integer of the given bits.
    U(u8),
    /// Signed integer.
    S(u8),
    /// Untyped bits.
    B(u8),
    /// IEEE binary float: f16, f32, f64.
    F(u8),
    Bf16,
    F16x2,
    Bf16x2,
    Tf32,
    /// 8-bit floats (`.e4m3`, `.e5m2`, and their packed pairs).
    Fp8,
    Fp8x2,
    Pred,
}

impl Ty {
    /// The type a modifier names (`u32`, `f16x2`, `pred`…).
    pub fn parse(m: &str) -> Option<Ty> {
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
            "b128" => Ty::B(128),
            "f16" => Ty::F(16),
            "f32" => Ty::F(32),
            "f64" => Ty::F(64),
            "bf16" => Ty::Bf16,
            "f16x2" => Ty::F16x2,
            "bf16x2" => Ty::Bf16x2,
            "tf32" => Ty::Tf32,
            "e4m3" | "e5m2" => Ty::Fp8,
            "e4m3x2" | "e5m2x2" => Ty::Fp8x2,
            "pred" => Ty::Pred,
            _ => return None,
        })
    }
    /// The type of a declaration (`.u32`, with its leading dot).
    pub fn of_decl(ty: &str) -> Option<Ty> {
        Ty::parse(ty.trim_start_matches('.'))
    }
    pub fn bits(self) -> u32 {
        match self {
            Ty::U(b) | Ty::S(b) | Ty::B(b) | Ty::F(b) => b as u32,
            Ty::Bf16 => 16,
            Ty::F16x2 | Ty::Bf16x2 | Ty::Tf32 => 32,
            Ty::Fp8 => 8,
            Ty::Fp8x2 => 16,
            Ty::Pred => 1,
        }
    }
    /// Size in memory (a predicate occupies a byte).
    pub fn bytes(self) -> u32 {
        self.bits().div_ceil(8)
    }
    pub fn is_float(self) -> bool {
        !matches!(self, Ty::U(_) | Ty::S(_) | Ty::B(_) | Ty::Pred)
    }
    pub fn signed(self) -> bool {
        matches!(self, Ty::S(_))
    }
    /// The integer type twice as wide (`mul.wide`, `mad.wide` results).
    pub fn widened(self) -> Ty {
        match self {
            Ty::S(b) => Ty::S(b.saturating_mul(2)),
            Ty::U(b) => Ty::U(b.saturating_mul(2)),
            Ty::B(b) => Ty::B(b.saturating_mul(2)),
            t => t,
        }
    }
}

/// The value of a PTX predefined constant named as an operand (`WARP_SZ`:
/// the warp size, 32); `None` for other names.
pub fn predefined_constant(name: &str) -> Option<i64> {
    (name == "WARP_SZ").then_some(32)
}

/// Bytes of a variable or parameter declared with type `ty` (`.u32`,
/// `.b8`…): the type's size, 8 for names we do not know (pointers in old
/// PTX spell `.u64` anyway).
pub fn decl_bytes(ty: &str) -> u64 {
    Ty::of_decl(ty).map_or(8, |t| t.bytes() as u64)
}

/// A PTX state space. `Unknown` is never decoded: it is the address-space
/// inference's "nothing known yet" (see `super::space`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Space {
    Unknown,
    Global,
    /// `.shared` and `.shared::cta`: the block's own shared memory.
    Shared,
    /// `.shared::cluster`: shared memory of any block of the cluster.
    SharedCluster,
    Local,
    Const,
    /// `.param`, `.param::entry`, `.param::func`.
    Param,
    /// Generic addressing: no state space named, or more than one possible.
    Generic,
}

impl Space {
    /// The state space a modifier names.
    pub fn parse(m: &str) -> Option<Space> {
        Some(match m {
            "global" => Space::Global,
            "shared" | "shared::cta" => Space::Shared,
            "shared::cluster" => Space::SharedCluster,
            "local" => Space::Local,
            "const" => Space::Const,
            "param" | "param::entry" | "param::func" => Space::Param,
            _ => return None,
        })
    }
    /// The state space of a declaration (`.shared`, with its leading dot).
    pub fn of_decl(s: &str) -> Option<Space> {
        Space::parse(s.trim_start_matches('.'))
    }
    pub fn name(self) -> &'static str {
        match self {
            Space::Unknown => "unknown",
            Space::Global => "global",
            Space::Shared => "shared",
            Space::SharedCluster => "shared::cluster",
            Space::Local => "local",
            Space::Const => "const",
            Space::Param => "param",
            Space::Generic => "generic",
        }
    }
}

impl std::fmt::Display for Space {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Rounding modifiers (`.rn`, `.rz`, `.rm`, `.rp`; the `…i` forms round to
/// an integer and set [`Flag::INT_ROUND`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Round {
    Rn,
    Rz,
    Rm,
    Rp,
}

/// Comparison operators of `setp`, `set`, `slct`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
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

impl Cmp {
    fn parse(m: &str) -> Option<Cmp> {
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
    /// True for the ordered inequalities (`<`, `<=`, `>`, `>=`).
    pub fn is_ordering(self) -> bool {
        matches!(self, Cmp::Lt | Cmp::Le | Cmp::Gt | Cmp::Ge | Cmp::Ltu | Cmp::Leu | Cmp::Gtu | Cmp::Geu)
    }
    pub fn is_equality(self) -> bool {
        matches!(self, Cmp::Eq | Cmp::Ne | Cmp::Equ | Cmp::Neu)
    }

    /// The comparison that holds exactly when this one does not (integer
    /// comparisons; `None` for the floating-point ones, where NaN holds
    /// neither).
    pub fn inverse(self) -> Option<Cmp> {
        Some(match self {
            Cmp::Eq => Cmp::Ne,
            Cmp::Ne => Cmp::Eq,
            Cmp::Lt => Cmp::Ge,
            Cmp::Ge => Cmp::Lt,
            Cmp::Le => Cmp::Gt,
            Cmp::Gt => Cmp::Le,
            _ => return None,
        })
    }

    /// How C writes it (`<`, `==`…), for messages.
    pub fn symbol(self) -> &'static str {
        match self {
            Cmp::Eq | Cmp::Equ => "==",
            Cmp::Ne | Cmp::Neu => "!=",
            Cmp::Lt | Cmp::Ltu => "<",
            Cmp::Le | Cmp::Leu => "<=",
            Cmp::Gt | Cmp::Gtu => ">",
            Cmp::Ge | Cmp::Geu => ">=",
            Cmp::Num => "is a number and",
            Cmp::Nan => "is NaN or",
        }
    }
}

/// How `setp`/`set` combine their comparison with a predicate operand.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BoolOp {
    And,
    Or,
    Xor,
}

/// Read-modify-write operations of `atom`, `red`, `redux`, `bar.red`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
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
    Popc,
}

/// `shfl` modes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ShflMode {
    Up,
    Down,
    Bfly,
    Idx,
}

/// `vote` modes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum VoteMode {
    All,
    Any,
    Uni,
    Ballot,
}

/// The sub-operation an opcode carries in a modifier.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Sub {
    None,
    Atom(AtomOp),
    Shfl(ShflMode),
    Vote(VoteMode),
    /// `match.any` (`false`) or `match.all` (`true`).
    Match {
        all: bool,
    },
}

/// Boolean modifiers, as bits of [`Inst::flags`].
pub struct Flag;

impl Flag {
    pub const WIDE: u32 = 1 << 0;
    pub const HI: u32 = 1 << 1;
    pub const LO: u32 = 1 << 2;
    /// `.cc`: writes or reads the carry flag.
    pub const CC: u32 = 1 << 3;
    pub const SAT: u32 = 1 << 4;
    pub const FTZ: u32 = 1 << 5;
    /// `.rni`, `.rzi`, `.rmi`, `.rpi`: round to an integer value.
    pub const INT_ROUND: u32 = 1 << 6;
    /// `cvta.to.SPACE` (generic to space) rather than `cvta.SPACE`.
    pub const TO: u32 = 1 << 7;
    /// `.uni`: the branch or call is non-divergent by the producer's word.
    pub const UNI: u32 = 1 << 8;
    /// `.nc`: through the non-coherent (read-only) cache.
    pub const NC: u32 = 1 << 9;
    pub const VOLATILE: u32 = 1 << 10;
    /// `.relaxed`, `.acquire`, `.release`, `.acq_rel`, `.mmio`: a strong
    /// (memory-model) operation.
    pub const STRONG: u32 = 1 << 11;
    pub const SYNC: u32 = 1 << 12;
    pub const ALIGNED: u32 = 1 << 13;
    pub const ARRIVE: u32 = 1 << 14;
    /// `bar.red`: a barrier that also reduces a predicate.
    pub const RED: u32 = 1 << 15;
    /// `bar.warp.sync`: a warp-level barrier.
    pub const WARP: u32 = 1 << 16;
    /// `barrier.cluster`, or a `.cluster` scope.
    pub const CLUSTER: u32 = 1 << 17;
    pub const APPROX: u32 = 1 << 18;
    /// `wmma.store`, `tcgen05.st`, `mbarrier.init`…: a form without a destination register.
    pub const NO_DEST: u32 = 1 << 19;
    /// `shf.l` (left) rather than `shf.r`.
    pub const LEFT: u32 = 1 << 20;
    /// `prmt` in one of its special modes (`.f4e`, `.b4e`, `.rc8`, `.ecl`, `.ecr`, `.rc16`).
    pub const PRMT_MODE: u32 = 1 << 21;
    /// A cache operator that does not keep the line in L1: `.cg` (L2 only),
    /// `.cs` (streaming, evict first), `.cv` (fetch again).
    pub const NO_L1: u32 = 1 << 22;
    /// A scope of the whole device or system: `membar.gl`/`.sys`,
    /// `fence….gpu`/`.sys`, `atom….gpu`.
    pub const DEVICE_SCOPE: u32 = 1 << 23;
    /// Release ordering: `.release`, `.acq_rel`, `.sc` (`fence.sc`).
    pub const RELEASE: u32 = 1 << 24;
    /// The scope of one block: `.cta`.
    pub const CTA_SCOPE: u32 = 1 << 25;
}

/// One decoded PTX instruction, with the syntax it came from.
#[derive(Clone, Copy, Debug)]
pub struct Inst<'a> {
    /// The parsed instruction: operands, guard, position, opcode text.
    pub ast: &'a Instruction<'a>,
    pub opcode: Opcode,
    /// The operation's type: the last type modifier (`.f32` of
    /// `ld.global.f32`, the source type of `cvt.f32.s32`).
    pub ty: Option<Ty>,
    /// The first type modifier when there are two (the destination type of
    /// `cvt` and `set`); else equal to `ty`.
    pub dty: Option<Ty>,
    /// The state space named by a modifier (the first one, for `cp` and `cvta`).
    pub space: Option<Space>,
    /// Vector length of `.v2`/`.v4`/`.v8` (1 without one).
    pub vec: u8,
    pub round: Option<Round>,
    pub cmp: Option<Cmp>,
    pub bool_op: Option<BoolOp>,
    pub sub: Sub,
    pub flags: u32,
}

/// What kind of memory access an instruction makes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AccessKind {
    Load,
    Store,
    Atomic,
}

impl AccessKind {
    pub fn verb(self) -> &'static str {
        match self {
            AccessKind::Load => "reads",
            AccessKind::Store => "writes",
            AccessKind::Atomic => "updates",
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            AccessKind::Load => "load",
            AccessKind::Store => "store",
            AccessKind::Atomic => "atomic",
        }
    }
    pub fn writes(self) -> bool {
        self != AccessKind::Load
    }
}

impl std::fmt::Display for AccessKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// How an instruction ends a basic block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Flow<'a> {
    /// Falls through to the next instruction.
    Next,
    /// `bra L` (conditional when guarded).
    Branch(&'a str),
    /// `brx.idx r, table` (targets resolved from `.branchtargets`).
    Indirect(&'a str),
    /// `ret`, `exit`, `trap` (conditional when guarded).
    Exit,
}

/// The instruction's opcode alone (its modifiers not decoded): for a scan
/// that looks for one kind of instruction before decoding it.
pub fn opcode_of(ast: &Instruction<'_>) -> Opcode {
    Opcode::parse(split_dot(ast.opcode).0)
}

/// `text` cut at its first dot: before it, and after it if there is one
/// (a byte scan: opcodes and register names are short).
fn split_dot(text: &str) -> (&str, Option<&str>) {
    match text.bytes().position(|b| b == b'.') {
        Some(dot) => (&text[..dot], Some(&text[dot + 1..])),
        None => (text, None),
    }
}

/// What an instruction's dotted opcode means: [`Inst`] without the syntax.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Decoded {
    opcode: Opcode,
    ty: Option<Ty>,
    dty: Option<Ty>,
    space: Option<Space>,
    vec: u8,
    round: Option<Round>,
    cmp: Option<Cmp>,
    bool_op: Option<BoolOp>,
    sub: Sub,
    flags: u32,
}

/// Opcode texts a thread keeps decoded at most (a module spells a few
/// hundred; past this many the table starts again).
const DECODED_KEPT: usize = 4096;

/// Decode one instruction. Its meaning comes from its opcode text alone,
/// which a module repeats for most of its instructions (and lowering,
/// the call summaries and the interpreter each decode every instruction):
/// each thread keeps the texts it has decoded.
pub fn decode<'a>(ast: &'a Instruction<'a>) -> Inst<'a> {
    thread_local! {
        static KEPT: std::cell::RefCell<rustc_hash::FxHashMap<Box<str>, Decoded>> = Default::default();
    }
    let d = KEPT.with(|kept| {
        if let Some(d) = kept.borrow().get(ast.opcode) {
            return *d;
        }
        let d = decode_opcode(ast.opcode);
        let mut kept = kept.borrow_mut();
        if kept.len() >= DECODED_KEPT {
            kept.clear();
        }
        kept.insert(ast.opcode.into(), d);
        d
    });
    let Decoded { opcode, ty, dty, space, vec, round, cmp, bool_op, sub, flags } = d;
    Inst { ast, opcode, ty, dty, space, vec, round, cmp, bool_op, sub, flags }
}

/// Decode a dotted opcode text (`ld.global.nc.v2.f32`).
fn decode_opcode(text: &str) -> Decoded {
    let mut parts = text.split('.');
    let opcode = Opcode::parse(parts.next().unwrap_or(""));
    let mut inst =
        Decoded { opcode, ty: None, dty: None, space: None, vec: 1, round: None, cmp: None, bool_op: None, sub: Sub::None, flags: 0 };
    let comparing = matches!(opcode, Opcode::Setp | Opcode::Set | Opcode::Slct);
    let halves = matches!(opcode, Opcode::Mul | Opcode::Mad | Opcode::Mul24 | Opcode::Mad24 | Opcode::Madc);
    let rmw = matches!(opcode, Opcode::Atom | Opcode::Red | Opcode::Redux | Opcode::Multimem)
        || (matches!(opcode, Opcode::Bar | Opcode::Barrier) && text.contains(".red"));
    for m in parts {
        if let Some(t) = Ty::parse(m) {
            if inst.dty.is_none() {
                inst.dty = Some(t);
            }
            inst.ty = Some(t);
            continue;
        }
        if let Some(s) = Space::parse(m) {
            if inst.space.is_none() {
                inst.space = Some(s);
            }
            continue;
        }
        if comparing {
            if let Some(c) = Cmp::parse(m).filter(|_| inst.cmp.is_none()) {
                inst.cmp = Some(c);
                continue;
            }
            let b = match m {
                "and" => Some(BoolOp::And),
                "or" => Some(BoolOp::Or),
                "xor" => Some(BoolOp::Xor),
                _ => None,
            };
            if b.is_some() {
                inst.bool_op = b;
                continue;
            }
        }
        if halves {
            let f = match m {
                "wide" => Flag::WIDE,
                "hi" => Flag::HI,
                "lo" => Flag::LO,
                _ => 0,
            };
            if f != 0 {
                inst.flags |= f;
                continue;
            }
        }
        if rmw {
            let op = match m {
                "add" => Some(AtomOp::Add),
                "min" => Some(AtomOp::Min),
                "max" => Some(AtomOp::Max),
                "exch" => Some(AtomOp::Exch),
                "cas" => Some(AtomOp::Cas),
                "and" => Some(AtomOp::And),
                "or" => Some(AtomOp::Or),
                "xor" => Some(AtomOp::Xor),
                "inc" => Some(AtomOp::Inc),
                "dec" => Some(AtomOp::Dec),
                "popc" => Some(AtomOp::Popc),
                _ => None,
            };
            if let Some(op) = op {
                inst.sub = Sub::Atom(op);
                continue;
            }
        }
        match (opcode, m) {
            (Opcode::Shfl, "up") => inst.sub = Sub::Shfl(ShflMode::Up),
            (Opcode::Shfl, "down") => inst.sub = Sub::Shfl(ShflMode::Down),
            (Opcode::Shfl, "bfly") => inst.sub = Sub::Shfl(ShflMode::Bfly),
            (Opcode::Shfl, "idx") => inst.sub = Sub::Shfl(ShflMode::Idx),
            (Opcode::Vote, "all") => inst.sub = Sub::Vote(VoteMode::All),
            (Opcode::Vote, "any") => inst.sub = Sub::Vote(VoteMode::Any),
            (Opcode::Vote, "uni") => inst.sub = Sub::Vote(VoteMode::Uni),
            (Opcode::Vote, "ballot") => inst.sub = Sub::Vote(VoteMode::Ballot),
            (Opcode::Match, "any") => inst.sub = Sub::Match { all: false },
            (Opcode::Match, "all") => inst.sub = Sub::Match { all: true },
            (Opcode::Shf, "l") => inst.flags |= Flag::LEFT,
            (Opcode::Prmt, "f4e" | "b4e" | "rc8" | "ecl" | "ecr" | "rc16") => inst.flags |= Flag::PRMT_MODE,
            (Opcode::Wmma, "store")
            | (Opcode::Tcgen05, "st" | "cp" | "shift" | "mma" | "commit" | "dealloc" | "relinquish_alloc_permit" | "fence" | "wait") => {
                inst.flags |= Flag::NO_DEST
            }
            (Opcode::Mbarrier, "init" | "inval" | "expect_tx" | "complete_tx") => inst.flags |= Flag::NO_DEST,
            (_, "v2") => inst.vec = 2,
            (_, "v4") => inst.vec = 4,
            (_, "v8") => inst.vec = 8,
            (_, "rn" | "rna") => inst.round = Some(Round::Rn),
            (_, "rz") => inst.round = Some(Round::Rz),
            (_, "rm") => inst.round = Some(Round::Rm),
            (_, "rp") => inst.round = Some(Round::Rp),
            (_, "rni") => (inst.round, inst.flags) = (Some(Round::Rn), inst.flags | Flag::INT_ROUND),
            (_, "rzi") => (inst.round, inst.flags) = (Some(Round::Rz), inst.flags | Flag::INT_ROUND),
            (_, "rmi") => (inst.round, inst.flags) = (Some(Round::Rm), inst.flags | Flag::INT_ROUND),
            (_, "rpi") => (inst.round, inst.flags) = (Some(Round::Rp), inst.flags | Flag::INT_ROUND),
            (_, "cc") => inst.flags |= Flag::CC,
            (_, "sat" | "satfinite") => inst.flags |= Flag::SAT,
            (_, "ftz") => inst.flags |= Flag::FTZ,
            (_, "to") => inst.flags |= Flag::TO,
            (_, "uni") => inst.flags |= Flag::UNI,
            (_, "nc") => inst.flags |= Flag::NC,
            (Opcode::Ld | Opcode::Ldu, "cg" | "cs" | "cv") => inst.flags |= Flag::NO_L1,
            (_, "volatile") => inst.flags |= Flag::VOLATILE,
            (_, "release" | "acq_rel") => inst.flags |= Flag::STRONG | Flag::RELEASE,
            (_, "relaxed" | "acquire" | "mmio") => inst.flags |= Flag::STRONG,
            (Opcode::Fence, "sc") => inst.flags |= Flag::RELEASE,
            (Opcode::Membar, "gl" | "sys") | (_, "gpu" | "sys") => inst.flags |= Flag::DEVICE_SCOPE,
            (_, "cta") => inst.flags |= Flag::CTA_SCOPE,
            (_, "sync") => inst.flags |= Flag::SYNC,
            (_, "aligned") => inst.flags |= Flag::ALIGNED,
            (_, "arrive") => inst.flags |= Flag::ARRIVE,
            (Opcode::Bar | Opcode::Barrier, "red") => inst.flags |= Flag::RED,
            (_, "warp") => inst.flags |= Flag::WARP,
            (_, "cluster") => inst.flags |= Flag::CLUSTER,
            (_, "approx") => inst.flags |= Flag::APPROX,
            _ => {}
        }
    }
    if inst.ty.is_some() && inst.dty.is_none() {
        inst.dty = inst.ty;
    }
    inst
}

impl<'a> Inst<'a> {
    pub fn has(&self, flag: u32) -> bool {
        self.flags & flag != 0
    }
    pub fn operands(&self) -> &'a [Operand<'a>] {
        &self.ast.operands
    }
    pub fn operand(&self, k: usize) -> Option<&'a Operand<'a>> {
        self.ast.operands.get(k)
    }
    /// The opcode as written (for messages only).
    pub fn text(&self) -> &'a str {
        self.ast.opcode
    }
    /// Operates on floating-point values (any of its types is a float).
    pub fn is_float(&self) -> bool {
        self.ty.is_some_and(Ty::is_float) || self.dty.is_some_and(Ty::is_float)
    }

    /// Whether operand 0 is written (PTX's convention), as opposed to
    /// stores, branches, barriers and other instructions without one.
    pub fn has_dest(&self) -> bool {
        use Opcode::*;
        if self.has(Flag::NO_DEST) {
            return false;
        }
        match self.opcode {
            St | Red | Membar | Fence | Bra | Brx | Ret | Exit | Trap | Prefetch | Prefetchu | Discard | Cp | Pmevent | Nanosleep
            | Stmatrix | Griddepcontrol | Sust | Sured | Multimem | Setmaxnreg => false,
            // `bar.red.popc.u32 d, …` writes; plain barriers do not
            Bar | Barrier => self.has(Flag::RED),
            // `call (results), f, (args)`: results are a list first
            Call => matches!(self.operand(0), Some(Operand::List(_))) && self.operands().len() >= 2,
            _ => true,
        }
    }

    /// Registers written, in order (vector and pair destinations expand to several).
    pub fn defs(&self, out: &mut Vec<&'a str>) {
        out.clear();
        if !self.has_dest() {
            return;
        }
        match self.operand(0) {
            Some(Operand::Reg(r)) => out.push(r),
            Some(Operand::Pair(p)) => {
                let (a, b) = split_pair(p);
                out.push(a);
                if b != "_" {
                    out.push(b);
                }
            }
            Some(Operand::Vector(v)) | Some(Operand::List(v)) => {
                for o in v.iter() {
                    if let Operand::Reg(r) = o {
                        out.push(r);
                    }
                }
            }
            _ => {}
        }
    }

    /// Registers read (the guard first).
    pub fn uses(&self, out: &mut Vec<&'a str>) {
        out.clear();
        if let Some(g) = self.ast.guard {
            out.push(g.reg);
        }
        let skip_first =
            self.has_dest() && matches!(self.operand(0), Some(Operand::Reg(_) | Operand::Pair(..) | Operand::Vector(_) | Operand::List(_)));
        for (i, o) in self.operands().iter().enumerate() {
            if i == 0 && skip_first {
                continue;
            }
            collect_regs(o, out);
        }
    }

    /// How the instruction ends a basic block.
    pub fn flow(&self) -> Flow<'a> {
        match self.opcode {
            Opcode::Bra => match self.operands().last() {
                Some(Operand::Sym(l)) => Flow::Branch(l),
                _ => Flow::Exit,
            },
            Opcode::Brx => match self.operand(1) {
                Some(Operand::Sym(l)) => Flow::Indirect(l),
                _ => Flow::Exit,
            },
            Opcode::Ret | Opcode::Exit | Opcode::Trap => Flow::Exit,
            _ => Flow::Next,
        }
    }

    /// `bra`/`brx`: a jump (not a return).
    pub fn is_jump(&self) -> bool {
        matches!(self.opcode, Opcode::Bra | Opcode::Brx)
    }

    /// The label a `bra` jumps to.
    pub fn branch_label(&self) -> Option<&'a str> {
        match self.flow() {
            Flow::Branch(l) => Some(l),
            _ => None,
        }
    }

    /// Name of the called function of a direct `call`.
    pub fn call_target(&self) -> Option<&'a str> {
        if self.opcode != Opcode::Call {
            return None;
        }
        self.operands().iter().find_map(|o| if let Operand::Sym(s) = o { Some(*s) } else { None })
    }

    /// The argument list of a `call` (`call (r), f, (a, b)` → `a, b`):
    /// the list after the target; empty for other instructions.
    pub fn call_args(&self) -> &'a [Operand<'a>] {
        self.call_lists().1
    }

    /// The return list of a `call` (`call (r), f, (a)` → `r`): the list
    /// before the target; empty for other instructions.
    pub fn call_returns(&self) -> &'a [Operand<'a>] {
        self.call_lists().0
    }

    /// A `call`'s (return list, argument list): the lists before and after
    /// its target (a symbol, or a register for an indirect call).
    fn call_lists(&self) -> (&'a [Operand<'a>], &'a [Operand<'a>]) {
        if self.opcode != Opcode::Call {
            return (&[], &[]);
        }
        let ops = self.operands();
        let Some(t) = ops.iter().position(|o| matches!(o, Operand::Sym(_) | Operand::Reg(_))) else { return (&[], &[]) };
        let list =
            |part: &'a [Operand<'a>]| part.iter().find_map(|o| if let Operand::List(l) = o { Some(&l[..]) } else { None }).unwrap_or(&[]);
        (list(&ops[..t]), list(&ops[t + 1..]))
    }

    /// A `call` through a register (an indirect call).
    pub fn is_indirect_call(&self) -> bool {
        self.opcode == Opcode::Call && self.call_target().is_none()
    }

    /// `bar.warp.sync` with a full mask (`__syncwarp()`): the lanes of the
    /// warp synchronise (memory ordered among them).
    pub fn is_full_warp_barrier(&self) -> bool {
        matches!(self.opcode, Opcode::Bar | Opcode::Barrier)
            && self.has(Flag::WARP)
            && matches!(self.operand(0), Some(crate::ptx::Operand::Imm(k)) if *k as u32 == u32::MAX)
    }

    /// A barrier every thread of the block must reach (`bar.sync`,
    /// `barrier.sync`, `bar.red`); not `bar.warp.sync`, `bar.arrive` or
    /// `barrier.cluster`.
    pub fn is_block_barrier(&self) -> bool {
        matches!(self.opcode, Opcode::Bar | Opcode::Barrier) && !self.has(Flag::WARP) && !self.has(Flag::ARRIVE) && !self.has(Flag::CLUSTER)
    }

    /// `bar.sync id, count` / `barrier.sync` without `.aligned`: only part
    /// of the block (whole warps), or warps arriving from different code,
    /// take part, so warp-uniform control around it is fine.
    pub fn is_warp_granular_barrier(&self) -> bool {
        self.is_block_barrier()
            && !self.has(Flag::RED)
            && (self.operands().len() >= 2 || (self.opcode == Opcode::Barrier && !self.has(Flag::ALIGNED)))
    }

    /// A load whose sectors stay in L1 for the warp's next loads (a global
    /// load without `.cg`/`.cs`/`.cv`, `.volatile` or a memory-ordering
    /// qualifier): loads of one warp that share sectors then move them
    /// from L2 once.
    pub fn through_l1(&self) -> bool {
        matches!(self.opcode, Opcode::Ld | Opcode::Ldu) && !self.has(Flag::NO_L1) && !self.has(Flag::VOLATILE) && !self.has(Flag::STRONG)
    }

    /// Orders the thread's earlier memory accesses before its later ones
    /// for every thread of the device (`__threadfence()`): `membar.gl` or
    /// `.sys`, `fence.sc`/`fence.acq_rel` at `.gpu`/`.sys` scope, an atomic
    /// with `.release`/`.acq_rel` at those scopes (or none named: `.gpu`).
    pub fn fences_device(&self) -> bool {
        match self.opcode {
            Opcode::Membar => self.has(Flag::DEVICE_SCOPE),
            Opcode::Fence => self.has(Flag::DEVICE_SCOPE) && self.has(Flag::RELEASE),
            Opcode::Atom | Opcode::Red => self.has(Flag::RELEASE) && !self.has(Flag::CTA_SCOPE) && !self.has(Flag::CLUSTER),
            _ => false,
        }
    }

    /// The memory access an instruction makes (`ld`, `ldu`, `st`, `atom`, `red`).
    pub fn access(&self) -> Option<AccessKind> {
        match self.opcode {
            Opcode::Ld | Opcode::Ldu => Some(AccessKind::Load),
            Opcode::St => Some(AccessKind::Store),
            Opcode::Atom | Opcode::Red => Some(AccessKind::Atomic),
            _ => None,
        }
    }

    /// May write memory (shared memory among it) other than through
    /// [`Self::access`]: a call, `cp.async` and its bulk forms, `stmatrix`,
    /// `mbarrier` (its object is in shared memory), `tcgen05`, `sust`/`sured`,
    /// `multimem`, and any instruction not modelled.
    pub fn writes_memory_otherwise(&self) -> bool {
        use Opcode::*;
        matches!(self.opcode, Call | Cp | Stmatrix | Mbarrier | Tcgen05 | Sust | Sured | Multimem | Other)
    }

    /// Bytes one lane accesses: type size × vector length (at least 1).
    pub fn access_width(&self) -> u32 {
        (self.ty.map_or(0, Ty::bytes) * self.vec as u32).max(1)
    }

    /// Index of the `[address]` operand.
    pub fn address_operand(&self) -> Option<usize> {
        self.operands().iter().position(|o| matches!(o, Operand::Addr(_)))
    }

    /// `ld.param [name+off]`: a read of parameter `name`.
    pub fn param_read(&self) -> Option<(&'a str, i64)> {
        if !matches!(self.opcode, Opcode::Ld | Opcode::Ldu) || self.space != Some(Space::Param) {
            return None;
        }
        match self.operand(1) {
            Some(Operand::Addr(a)) => match &a.base {
                Some(Operand::Sym(p)) => Some((p, a.offset)),
                _ => None,
            },
            _ => None,
        }
    }

    /// A result that differs between lanes whatever the operands: atomics
    /// return the old value each lane saw, shuffles and matches exchange
    /// values between lanes.
    pub fn lane_exchanging(&self) -> bool {
        matches!(self.opcode, Opcode::Atom | Opcode::Shfl | Opcode::Match)
    }

    /// A result other lanes or threads see: a lane exchange, a vote, a
    /// warp reduction, a barrier that reduces over the block.
    pub fn shares_with_other_threads(&self) -> bool {
        self.lane_exchanging() || matches!(self.opcode, Opcode::Vote | Opcode::Redux | Opcode::Bar | Opcode::Barrier)
    }

    /// For a select (`selp d, a, b, c`: `a` where predicate `c` holds,
    /// else `b`), the operand indices of `a`, `b` and `c`.
    pub fn selects(&self) -> Option<(usize, usize, usize)> {
        (self.opcode == Opcode::Selp && self.operands().len() == 4).then_some((1, 2, 3))
    }
}

fn collect_regs<'a>(o: &Operand<'a>, out: &mut Vec<&'a str>) {
    match o {
        Operand::Reg(r) | Operand::Not(r) => out.push(r),
        Operand::Pair(p) => {
            let (a, b) = split_pair(p);
            out.push(a);
            out.push(b);
        }
        Operand::Addr(a) => {
            if let Some(b) = &a.base {
                collect_regs(b, out);
            }
            for e in &a.extra {
                collect_regs(e, out);
            }
        }
        Operand::Vector(v) | Operand::List(v) => v.iter().for_each(|x| collect_regs(x, out)),
        _ => {}
    }
}

/// Lane masks of `%lanemask_*`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LaneMask {
    Eq,
    Lt,
    Le,
    Gt,
    Ge,
}

/// A special register.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Special {
    Tid(u8),
    Ntid(u8),
    Ctaid(u8),
    Nctaid(u8),
    LaneId,
    WarpId,
    NWarpId,
    LaneMask(LaneMask),
    /// `%clock`, `%clock64`, `%clock_hi`, `%globaltimer*`, `%pm*`: values no
    /// static evaluation can know.
    Clock,
    SmId,
    NSmId,
    GridId,
    /// Cluster geometry and identity (`%clusterid`, `%cluster_ctarank`…).
    Cluster,
    /// Shared-memory sizes and reservations (`%dynamic_smem_size`…).
    SmemSize,
    /// `%envreg0`, `%envreg3`…`%envreg31`, `%current_graph_exec`.
    Env,
    /// `%envreg1` (`high`) and `%envreg2`: the two halves of the address of
    /// the grid workspace the driver gives a cooperative launch (CUDA's
    /// driver ABI; `cooperative_groups` arrives at `grid.sync()` with an
    /// atomic on it).
    GridWorkspace {
        high: bool,
    },
    /// The whole `%tid` vector (a `.v4` move): differs between lanes.
    TidVector,
}

/// How a special register varies across the threads of a block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variation {
    /// `tid.x/y/z`: an affine thread coordinate.
    ThreadCoord(u8),
    /// Differs between the lanes of a warp in a known way (`%laneid`, lane masks).
    Lane,
    /// The same in every lane of a warp, different between warps (`%warpid`).
    Warp,
    /// The same for the whole block.
    Uniform,
    /// Not known to any static evaluation (clocks, counters).
    Unpredictable,
}

impl Special {
    /// The special register a register name denotes.
    pub fn parse(name: &str) -> Option<Special> {
        let rest = name.strip_prefix('%')?;
        // (most names asked about are the compilers' registers, `%r12`, `%rd3`, `%f1`, `%p2`: no
        // special register starts with these letters, nor with `r` or `p` but `%reserved_…` and `%pm…`)
        match rest.as_bytes().first()? {
            b'f' | b'h' | b'b' | b'q' | b'u' | b'v' | b'x' | b'y' | b'z' => return None,
            b'r' if !rest.starts_with("reserved_") => return None,
            b'p' if !rest.starts_with("pm") => return None,
            _ => {}
        }
        let dim = |s: &str| match s {
            "x" => Some(0u8),
            "y" => Some(1),
            "z" => Some(2),
            _ => None,
        };
        if let (base, Some(d)) = split_dot(rest) {
            let d = dim(d)?;
            return Some(match base {
                "tid" => Special::Tid(d),
                "ntid" => Special::Ntid(d),
                "ctaid" => Special::Ctaid(d),
                "nctaid" => Special::Nctaid(d),
                "clusterid" | "nclusterid" | "cluster_ctaid" | "cluster_nctaid" => Special::Cluster,
                _ => return None,
            });
        }
        Some(match rest {
            "tid" => Special::TidVector,
            "laneid" => Special::LaneId,
            "warpid" => Special::WarpId,
            "nwarpid" => Special::NWarpId,
            "lanemask_eq" => Special::LaneMask(LaneMask::Eq),
            "lanemask_lt" => Special::LaneMask(LaneMask::Lt),
            "lanemask_le" => Special::LaneMask(LaneMask::Le),
            "lanemask_gt" => Special::LaneMask(LaneMask::Gt),
            "lanemask_ge" => Special::LaneMask(LaneMask::Ge),
            "clock" | "clock64" | "clock_hi" | "globaltimer" | "globaltimer_lo" | "globaltimer_hi" => Special::Clock,
            "smid" => Special::SmId,
            "nsmid" => Special::NSmId,
            "gridid" => Special::GridId,
            "is_explicit_cluster" | "cluster_ctarank" | "cluster_nctarank" => Special::Cluster,
            "dynamic_smem_size"
            | "total_smem_size"
            | "aggr_smem_size"
            | "reserved_smem_offset_begin"
            | "reserved_smem_offset_end"
            | "reserved_smem_offset_cap"
            | "reserved_smem_offset_0"
            | "reserved_smem_offset_1" => Special::SmemSize,
            "current_graph_exec" => Special::Env,
            "envreg1" => Special::GridWorkspace { high: true },
            "envreg2" => Special::GridWorkspace { high: false },
            r if r.starts_with("envreg") => Special::Env,
            r if r.starts_with("pm") => Special::Clock,
            _ => return None,
        })
    }

    /// How the register varies across the block's threads.
    pub fn variation(self) -> Variation {
        match self {
            Special::Tid(d) => Variation::ThreadCoord(d),
            Special::LaneId | Special::LaneMask(_) | Special::TidVector => Variation::Lane,
            Special::WarpId => Variation::Warp,
            Special::Clock => Variation::Unpredictable,
            Special::Ntid(_)
            | Special::Ctaid(_)
            | Special::Nctaid(_)
            | Special::NWarpId
            | Special::SmId
            | Special::NSmId
            | Special::GridId
            | Special::Cluster
            | Special::SmemSize
            | Special::Env
            | Special::GridWorkspace { .. } => Variation::Uniform,
        }
    }

    /// The CUDA name of a thread-varying register, for messages.
    pub fn cuda_name(self) -> &'static str {
        match self {
            Special::Tid(0) => "threadIdx.x",
            Special::Tid(1) => "threadIdx.y",
            Special::Tid(_) => "threadIdx.z",
            Special::TidVector => "threadIdx",
            Special::Ntid(_) => "blockDim",
            Special::Ctaid(_) => "blockIdx",
            Special::Nctaid(_) => "gridDim",
            Special::LaneId | Special::LaneMask(_) => "the lane id",
            Special::WarpId | Special::NWarpId => "the warp id",
            Special::Clock => "the clock",
            _ => "a special register",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ptx::{parse, Stmt};

    fn insts(body: &str) -> Vec<Instruction<'static>> {
        let src = format!(".entry k() {{ {body} }}");
        let src: &'static str = Box::leak(src.into_boxed_str());
        let m = Box::leak(Box::new(parse(src).unwrap()));
        let f = std::mem::take(&mut m.functions[0].body).unwrap();
        f.into_iter().filter_map(|s| if let Stmt::Inst(i) = s { Some(i) } else { None }).collect()
    }

    #[test]
    fn special_registers_parse_and_the_compilers_registers_do_not() {
        let specials = "%tid %tid.x %ntid.y %ctaid.z %nctaid.x %clusterid.x %nclusterid.y %cluster_ctaid.z \
            %cluster_nctaid.x %laneid %warpid %nwarpid %lanemask_eq %lanemask_lt %lanemask_le %lanemask_gt \
            %lanemask_ge %clock %clock64 %clock_hi %globaltimer %globaltimer_lo %globaltimer_hi %smid %nsmid \
            %gridid %is_explicit_cluster %cluster_ctarank %cluster_nctarank %dynamic_smem_size %total_smem_size \
            %aggr_smem_size %reserved_smem_offset_begin %reserved_smem_offset_end %reserved_smem_offset_cap \
            %reserved_smem_offset_0 %reserved_smem_offset_1 %current_graph_exec %envreg0 %envreg1 %envreg2 \
            %envreg31 %pm0 %pm7 %pm4_64";
        for s in specials.split_whitespace() {
            assert!(Special::parse(s).is_some(), "{s} is a special register");
        }
        let registers = "%r1 %rd12 %rs3 %rl4 %f0 %fd9 %p1 %p12 %h2 %hh1 %b3 %q1 %u5 %v1 %x %y.z %tid.w %tidx %lane r1 % %reserved";
        for r in registers.split_whitespace() {
            assert!(Special::parse(r).is_none(), "{r} is no special register");
        }
    }

    #[test]
    fn roles() {
        let v = insts(
            "st.global.f32 [%rd1], %f1; setp.lt.s32 %p1|%p2, %r1, %r2; @%p1 ld.global.v2.f32 {%f1,%f2}, [%rd2+4]; call.uni (%r9), f, (%r3); call.uni g, (%r4); bar.red.and.pred %p3, 0, %p4; atom.global.add.u32 %r5, [%rd3], 1;",
        );
        let mut d = vec![];
        let mut u = vec![];
        let expect: [(&[&str], &[&str]); 7] = [
            (&[], &["%rd1", "%f1"]),
            (&["%p1", "%p2"], &["%r1", "%r2"]),
            (&["%f1", "%f2"], &["%p1", "%rd2"]),
            (&["%r9"], &["%r3"]),
            (&[], &["%r4"]),
            (&["%p3"], &["%p4"]),
            (&["%r5"], &["%rd3"]),
        ];
        for (i, (ed, eu)) in v.iter().zip(expect) {
            let x = decode(i);
            x.defs(&mut d);
            x.uses(&mut u);
            assert_eq!((&d[..], &u[..]), (ed, eu), "{}", i.opcode);
        }
        assert!(decode(&v[5]).is_block_barrier());
        assert_eq!(decode(&v[3]).call_target(), Some("f"));
        assert_eq!(decode(&v[2]).access_width(), 8);
    }

    #[test]
    fn kept_decodings_are_each_texts_own() {
        let v = insts("setp.lt.s32 %p1, %r1, %r2; setp.gt.u64 %p1, %rd1, %rd2; atom.global.cas.b32 %r1, [%rd1], %r2, %r3; bar.red.or.pred %p1, 0, %p2; ld.global.nc.v4.f32 {%f1,%f2,%f3,%f4}, [%rd1]; mul.wide.s32 %rd1, %r1, %r2;");
        let fields = |x: Inst<'_>| Decoded {
            opcode: x.opcode,
            ty: x.ty,
            dty: x.dty,
            space: x.space,
            vec: x.vec,
            round: x.round,
            cmp: x.cmp,
            bool_op: x.bool_op,
            sub: x.sub,
            flags: x.flags,
        };
        // decoded afresh, then from what the thread kept, then after the table started again
        for round in 0..3 {
            for i in &v {
                assert_eq!(fields(decode(i)), decode_opcode(i.opcode), "{} (round {round})", i.opcode);
            }
            if round == 1 {
                let many: Vec<String> = (0..DECODED_KEPT + 1).map(|k| format!("add.s32.x{k}")).collect();
                many.iter().for_each(|t| assert_eq!(decode_opcode(t).opcode, Opcode::Add));
                let asts = insts(&many.iter().map(|t| format!("{t} %r1, %r2, %r3;")).collect::<String>());
                asts.iter().for_each(|i| assert_eq!(decode(i).ty, Some(Ty::S(32))));
            }
        }
        assert_ne!(decode_opcode(v[0].opcode).cmp, decode_opcode(v[1].opcode).cmp);
    }

    #[test]
    fn device_fences() {
        let v = insts(
            "membar.gl; membar.cta; membar.sys; fence.sc.gpu; fence.acq_rel.cta; fence.proxy.async; atom.release.gpu.global.add.u32 %r1, [%rd1], 1; atom.global.add.u32 %r1, [%rd1], 1; atom.acq_rel.cta.shared.add.u32 %r1, [%r2], 1; fence.acq_rel.sys;",
        );
        let x: Vec<bool> = v.iter().map(|i| decode(i).fences_device()).collect();
        assert_eq!(x, [true, false, true, true, false, false, true, false, false, true]);
    }

    #[test]
    fn modifiers() {
        let v = insts(
            "ld.shared::cta.u32 %r1, [%r2]; ld.shared::cluster.u32 %r1, [%r2]; ld.global.nc.L1::evict_last.v4.f32 {%f1,%f2,%f3,%f4}, [%rd1]; ld.relaxed.gpu.global.u32 %r1, [%rd1]; ld.param::entry.u64 %rd1, [p]; mul.lo.s32 %r1, %r2, %r3; setp.lo.u32 %p1, %r1, %r2; setp.lt.and.s32 %p1, %r1, %r2, %p2; cvt.rzi.s32.f32 %r1, %f1; cvta.to.global.u64 %rd1, %rd2; atom.global.cas.b32 %r1, [%rd1], %r2, %r3; shfl.sync.bfly.b32 %r1, %r2, 1, 31, -1; bar.warp.sync -1; barrier.cluster.arrive; bar.sync 1, 64; mbarrier.init.shared.b64 [%r1], 1; tcgen05.ld.sync.aligned.32x32b.x1.b32 {%r1}, [%r2];",
        );
        let x: Vec<Inst<'_>> = v.iter().map(decode).collect();
        assert_eq!(x[0].space, Some(Space::Shared));
        assert_eq!(x[1].space, Some(Space::SharedCluster));
        assert_eq!((x[2].space, x[2].vec, x[2].has(Flag::NC), x[2].access_width()), (Some(Space::Global), 4, true, 16));
        assert!(x[3].has(Flag::STRONG) && x[3].space == Some(Space::Global));
        assert_eq!(x[4].param_read(), Some(("p", 0)));
        assert!(x[5].has(Flag::LO) && x[5].cmp.is_none());
        assert_eq!(x[6].cmp, Some(Cmp::Lt));
        assert_eq!((x[7].cmp, x[7].bool_op), (Some(Cmp::Lt), Some(BoolOp::And)));
        assert_eq!((x[8].dty, x[8].ty, x[8].round, x[8].has(Flag::INT_ROUND)), (Some(Ty::S(32)), Some(Ty::F(32)), Some(Round::Rz), true));
        assert!(x[9].has(Flag::TO) && x[9].space == Some(Space::Global));
        assert_eq!(x[10].sub, Sub::Atom(AtomOp::Cas));
        assert_eq!(x[11].sub, Sub::Shfl(ShflMode::Bfly));
        assert!(!x[12].is_block_barrier() && !x[13].is_block_barrier());
        assert!(x[14].is_block_barrier() && x[14].is_warp_granular_barrier());
        assert!(!x[15].has_dest());
        assert!(x[16].has_dest());
    }

    #[test]
    fn special_registers() {
        assert_eq!(Special::parse("%tid.y"), Some(Special::Tid(1)));
        assert_eq!(Special::parse("%tid.y").map(Special::variation), Some(Variation::ThreadCoord(1)));
        assert_eq!(Special::parse("%warpid").map(Special::variation), Some(Variation::Warp));
        assert_eq!(Special::parse("%clock64").map(Special::variation), Some(Variation::Unpredictable));
        assert_eq!(Special::parse("%envreg3").map(Special::variation), Some(Variation::Uniform));
        // the grid workspace of a cooperative launch: high half, low half
        assert_eq!(Special::parse("%envreg1"), Some(Special::GridWorkspace { high: true }));
        assert_eq!(Special::parse("%envreg2"), Some(Special::GridWorkspace { high: false }));
        assert_eq!(Special::parse("%r1"), None);
        assert_eq!(Special::parse("%tid").map(Special::variation), Some(Variation::Lane));
    }
}
