//! The one scalar semantics of PTX operations on register bits (one lane):
//! integer operations at their width with wrap-around and exact signedness,
//! IEEE floating point with the rounding modes PTX names (`.rn` exact;
//! `.rz/.rm/.rp`: f32 add/sub/mul computed exactly in f64 and rounded in the
//! asked direction, f64 and division from the sign of the rounding error),
//! comparisons, conversions, bit-field and byte-permute operations, atomics'
//! combining functions. Registers hold values zero-extended to 64 bits.
//!
//! Every consumer calls these functions: the interpreter for each lane,
//! constant folding in the divergence analysis, and the per-lane evaluator
//! of thread-only expressions ([`apply`] with `i64` conversions).
//!
//! Owns: bit-level meaning of one operation. Does not own: lanes, memory,
//! control flow, or which instruction is which (see `inst`).

use super::inst::{AtomOp, BoolOp, Cmp, Flag, Inst, Opcode, Round, Ty};

/// Binary operations (the operation of `add`, `mul.hi`, `shl`…).
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

/// `$body` once for each binary operation, with `$o` that operation as a
/// constant: a lane loop in `$body` is compiled for each operation on its
/// own (with [`bin_int`] inlined) instead of dispatching in every lane.
macro_rules! per_bin_op {
    ($op:expr, $o:ident => $body:expr) => {
        $crate::ir::scalar::per_bin_op!(@each $op, $o => $body; Add, Sub, MulLo, MulHi, MulWide, Div, Rem, And, Or, Xor, Shl, Shr, Min, Max, CopySign)
    };
    (@each $op:expr, $o:ident => $body:expr; $($v:ident),*) => {
        match $op {
            $($crate::ir::scalar::Bin::$v => {
                #[allow(non_upper_case_globals)]
                const $o: $crate::ir::scalar::Bin = $crate::ir::scalar::Bin::$v;
                $body
            })*
        }
    };
}
pub(crate) use per_bin_op;

/// Unary operations.
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

/// The multiplication half of `mul`/`mad` (`.lo` when none is named).
pub fn mul_mode(i: &Inst<'_>) -> Bin {
    if i.has(Flag::HI) {
        Bin::MulHi
    } else if i.has(Flag::WIDE) {
        Bin::MulWide
    } else {
        Bin::MulLo
    }
}

/// The binary operation of an instruction, if it is one.
pub fn bin_op(i: &Inst<'_>) -> Option<Bin> {
    Some(match i.opcode {
        Opcode::Add => Bin::Add,
        Opcode::Sub => Bin::Sub,
        Opcode::Mul | Opcode::Mul24 => mul_mode(i),
        Opcode::Div => Bin::Div,
        Opcode::Rem => Bin::Rem,
        Opcode::And => Bin::And,
        Opcode::Or => Bin::Or,
        Opcode::Xor => Bin::Xor,
        Opcode::Shl => Bin::Shl,
        Opcode::Shr => Bin::Shr,
        Opcode::Min => Bin::Min,
        Opcode::Max => Bin::Max,
        Opcode::Copysign => Bin::CopySign,
        _ => return None,
    })
}

/// The unary operation of an instruction, if it is one.
pub fn un_op(i: &Inst<'_>) -> Option<Un> {
    Some(match i.opcode {
        Opcode::Neg => Un::Neg,
        Opcode::Not => Un::Not,
        Opcode::Cnot => Un::Cnot,
        Opcode::Abs => Un::Abs,
        Opcode::Popc => Un::Popc,
        Opcode::Clz => Un::Clz,
        Opcode::Brev => Un::Brev,
        Opcode::Bfind => Un::Bfind,
        Opcode::Sqrt => Un::Sqrt,
        Opcode::Rsqrt => Un::Rsqrt,
        Opcode::Rcp => Un::Rcp,
        Opcode::Ex2 => Un::Ex2,
        Opcode::Lg2 => Un::Lg2,
        Opcode::Sin => Un::Sin,
        Opcode::Cos => Un::Cos,
        Opcode::Tanh => Un::Tanh,
        _ => return None,
    })
}

#[inline]
pub fn mask(bits: u32) -> u64 {
    if bits >= 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    }
}

/// Sign-extend the low `bits` of `v`.
#[inline]
pub fn sext(v: u64, bits: u32) -> i64 {
    if bits >= 64 {
        v as i64
    } else {
        ((v << (64 - bits)) as i64) >> (64 - bits)
    }
}

#[inline]
fn f32v(x: u64) -> f32 {
    f32::from_bits(x as u32)
}

#[inline]
fn f64v(x: u64) -> f64 {
    f64::from_bits(x)
}

fn ftz32(x: f32) -> f32 {
    if x.is_subnormal() {
        0.0f32.copysign(x)
    } else {
        x
    }
}

/// Round an exact f64 value to f32 in direction `r`.
pub fn round_f32(x: f64, r: Round) -> f32 {
    let n = x as f32;
    if r == Round::Rn || x.is_nan() || (n as f64) == x {
        return n;
    }
    let up = |v: f32| if v == f32::INFINITY { v } else { next_up(v) };
    let down = |v: f32| if v == f32::NEG_INFINITY { v } else { next_down(v) };
    match r {
        Round::Rz => {
            if (n as f64).abs() > x.abs() {
                if n > 0.0 {
                    down(n)
                } else {
                    up(n)
                }
            } else {
                n
            }
        }
        Round::Rm => {
            if (n as f64) > x {
                down(n)
            } else {
                n
            }
        }
        Round::Rp => {
            if (n as f64) < x {
                up(n)
            } else {
                n
            }
        }
        Round::Rn => n,
    }
}

/// The rounding error of `s = x + y` (exact sum − s), Knuth's TwoSum.
fn two_sum_err(x: f64, y: f64, s: f64) -> f64 {
    let t = s - x;
    (x - (s - t)) + (y - t)
}

fn next64(v: f64, up: bool) -> f64 {
    if v.is_nan() || (up && v == f64::INFINITY) || (!up && v == f64::NEG_INFINITY) {
        return v;
    }
    if v == 0.0 {
        let tiny = f64::from_bits(1);
        return if up { tiny } else { -tiny };
    }
    let b = v.to_bits();
    f64::from_bits(if (v > 0.0) == up { b + 1 } else { b - 1 })
}

/// Move a round-to-nearest result `s` whose error (exact − s) is `e` to the directed rounding `r`.
fn adjust64(s: f64, e: f64, r: Round) -> f64 {
    match r {
        _ if e == 0.0 || e.is_nan() => s,
        Round::Rn => s,
        Round::Rm if e < 0.0 => next64(s, false),
        Round::Rp if e > 0.0 => next64(s, true),
        Round::Rz if (s > 0.0 && e < 0.0) || (s < 0.0 && e > 0.0) => next64(s, e > 0.0),
        _ => s,
    }
}

fn adjust32(s: f32, e: f64, r: Round) -> f32 {
    match r {
        _ if e == 0.0 || e.is_nan() => s,
        Round::Rn => s,
        Round::Rm if e < 0.0 => next_down(s),
        Round::Rp if e > 0.0 => next_up(s),
        Round::Rz if (s > 0.0 && e < 0.0) || (s < 0.0 && e > 0.0) => {
            if e > 0.0 {
                next_up(s)
            } else {
                next_down(s)
            }
        }
        _ => s,
    }
}

fn next_up(v: f32) -> f32 {
    if v.is_nan() || v == f32::INFINITY {
        return v;
    }
    if v == 0.0 {
        return f32::from_bits(1);
    }
    let b = v.to_bits();
    f32::from_bits(if v > 0.0 { b + 1 } else { b - 1 })
}

fn next_down(v: f32) -> f32 {
    -next_up(-v)
}

fn fbits(ty: Ty, x: f64, r: Round, ftz: bool) -> u64 {
    match ty {
        Ty::F(32) => {
            let v = round_f32(x, r);
            (if ftz { ftz32(v) } else { v }).to_bits() as u64
        }
        _ => x.to_bits(),
    }
}

fn fval(ty: Ty, x: u64, ftz: bool) -> f64 {
    match ty {
        Ty::F(32) => {
            let v = f32v(x);
            (if ftz { ftz32(v) } else { v }) as f64
        }
        _ => f64v(x),
    }
}

/// Binary operation on register bits (every input has a result: integer
/// division by zero gives all ones, remainder by zero the dividend).
pub fn bin(op: Bin, ty: Ty, a: u64, b: u64, r: Round, ftz: bool, sat: bool) -> u64 {
    if ty.is_float() {
        bin_float(op, ty, a, b, r, ftz, sat)
    } else {
        bin_int(op, ty, a, b, sat)
    }
}

fn bin_float(op: Bin, ty: Ty, a: u64, b: u64, r: Round, ftz: bool, sat: bool) -> u64 {
    let (x, y) = (fval(ty, a, ftz), fval(ty, b, ftz));
    let v = match op {
        Bin::Add => x + y,
        Bin::Sub => x - y,
        Bin::MulLo | Bin::MulWide | Bin::MulHi => x * y,
        Bin::Div => x / y,
        Bin::Min => {
            if x.is_nan() {
                y
            } else if y.is_nan() {
                x
            } else {
                x.min(y)
            }
        }
        Bin::Max => {
            if x.is_nan() {
                y
            } else if y.is_nan() {
                x
            } else {
                x.max(y)
            }
        }
        Bin::CopySign => y.copysign(x),
        Bin::Rem => x % y,
        _ => f64::from_bits(a & b),
    };
    // directed rounding of f64 results, and of f32 division, from the sign of the
    // rounding error (error-free transformations); f32 add/sub/mul are exact in f64
    let directed = r != Round::Rn && v.is_finite() && !sat;
    if directed && ty == Ty::F(64) && matches!(op, Bin::Add | Bin::Sub | Bin::MulLo | Bin::MulWide | Bin::MulHi | Bin::Div) {
        let y = if op == Bin::Sub { -y } else { y };
        let e = match op {
            Bin::Add | Bin::Sub => two_sum_err(x, y, v),
            Bin::Div => (-v).mul_add(y, x) * y.signum(),
            _ => x.mul_add(y, -v),
        };
        return adjust64(v, e, r).to_bits();
    }
    if ty == Ty::F(32) && op == Bin::Div {
        let q = f32v(a) / f32v(b);
        let q = if directed {
            let (x, y) = (f32v(a) as f64, f32v(b) as f64);
            adjust32(q, (-(q as f64)).mul_add(y, x) * y.signum(), r)
        } else {
            q
        };
        return (if ftz { ftz32(q) } else { q }).to_bits() as u64;
    }
    let v = if sat { v.clamp(0.0, 1.0) } else { v };
    fbits(ty, v, r, ftz)
}

/// Integer binary operation at the type's width (inlined so that lane
/// loops over a known operation specialise).
#[inline(always)]
pub(crate) fn bin_int(op: Bin, ty: Ty, a: u64, b: u64, sat: bool) -> u64 {
    let bits = ty.bits();
    let m = mask(bits);
    let signed = ty.signed();
    let (sa, sb) = (sext(a, bits), sext(b, bits));
    let (ua, ub) = (a & m, b & m);
    let v = match op {
        Bin::Add => {
            if sat && signed {
                (sa as i128 + sb as i128).clamp(i32::MIN as i128, i32::MAX as i128) as u64
            } else {
                ua.wrapping_add(ub)
            }
        }
        Bin::Sub => {
            if sat && signed {
                (sa as i128 - sb as i128).clamp(i32::MIN as i128, i32::MAX as i128) as u64
            } else {
                ua.wrapping_sub(ub)
            }
        }
        Bin::MulLo => ua.wrapping_mul(ub),
        Bin::MulWide => {
            return if signed { (sa.wrapping_mul(sb)) as u64 & mask(bits * 2) } else { ua.wrapping_mul(ub) & mask(bits * 2) };
        }
        Bin::MulHi => {
            if signed {
                ((sa as i128 * sb as i128) >> bits) as u64
            } else {
                ((ua as u128 * ub as u128) >> bits) as u64
            }
        }
        Bin::Div => {
            if ub == 0 {
                m
            } else if signed {
                sa.wrapping_div(sb) as u64
            } else {
                ua / ub
            }
        }
        Bin::Rem => {
            if ub == 0 {
                ua
            } else if signed {
                sa.wrapping_rem(sb) as u64
            } else {
                ua % ub
            }
        }
        Bin::And => ua & ub,
        Bin::Or => ua | ub,
        Bin::Xor => ua ^ ub,
        Bin::Shl => {
            // (the shift is the operand's low 32 bits)
            if (b & 0xffff_ffff) >= bits as u64 {
                0
            } else {
                ua << (b & 0xffff_ffff)
            }
        }
        Bin::Shr => {
            let s = (b & 0xffff_ffff).min(bits as u64 - 1 + (!signed) as u64);
            if signed {
                (sa >> s.min(63)) as u64
            } else if s >= bits as u64 {
                0
            } else {
                ua >> s
            }
        }
        Bin::Min => {
            if signed {
                sa.min(sb) as u64
            } else {
                ua.min(ub)
            }
        }
        Bin::Max => {
            if signed {
                sa.max(sb) as u64
            } else {
                ua.max(ub)
            }
        }
        Bin::CopySign => ua,
    };
    if ty == Ty::Pred {
        v & 1
    } else {
        v & m
    }
}

pub fn un(op: Un, ty: Ty, a: u64, ftz: bool) -> u64 {
    let bits = ty.bits();
    let m = mask(bits);
    if ty.is_float() {
        let x = fval(ty, a, ftz);
        let v = match op {
            Un::Neg => -x,
            Un::Abs => x.abs(),
            Un::Sqrt => {
                if ty == Ty::F(32) {
                    return fbits(ty, (x as f32).sqrt() as f64, Round::Rn, ftz);
                }
                x.sqrt()
            }
            Un::Rsqrt => 1.0 / x.sqrt(),
            Un::Rcp => 1.0 / x,
            // (the C math library's functions, in Rust: no libm.so to load at every start)
            Un::Ex2 => libm::exp2(x),
            Un::Lg2 => libm::log2(x),
            Un::Sin => libm::sin(x),
            Un::Cos => libm::cos(x),
            Un::Tanh => libm::tanh(x),
            _ => x,
        };
        return fbits(ty, v, Round::Rn, ftz);
    }
    let ua = a & m;
    let v = match op {
        Un::Neg => (ua as i64).wrapping_neg() as u64,
        Un::Not => !ua,
        Un::Cnot => (ua == 0) as u64,
        Un::Abs => sext(ua, bits).unsigned_abs(),
        Un::Popc => ua.count_ones() as u64,
        Un::Clz => (ua.leading_zeros() - (64 - bits)) as u64,
        Un::Brev => ua.reverse_bits() >> (64 - bits),
        Un::Bfind => {
            let v = if ty.signed() && sext(ua, bits) < 0 { !ua & m } else { ua };
            if v == 0 {
                0xffff_ffff
            } else {
                63 - v.leading_zeros() as u64
            }
        }
        _ => ua,
    };
    if ty == Ty::Pred {
        v & 1
    } else if matches!(op, Un::Popc | Un::Clz | Un::Bfind) {
        v & 0xffff_ffff
    } else {
        v & m
    }
}

pub fn cmp(c: Cmp, ty: Ty, a: u64, b: u64, ftz: bool) -> bool {
    if ty.is_float() {
        let (x, y) = (fval(ty, a, ftz), fval(ty, b, ftz));
        let un = x.is_nan() || y.is_nan();
        return match c {
            Cmp::Eq => x == y,
            Cmp::Ne => !un && x != y,
            Cmp::Lt => x < y,
            Cmp::Le => x <= y,
            Cmp::Gt => x > y,
            Cmp::Ge => x >= y,
            Cmp::Equ => un || x == y,
            Cmp::Neu => un || x != y,
            Cmp::Ltu => un || x < y,
            Cmp::Leu => un || x <= y,
            Cmp::Gtu => un || x > y,
            Cmp::Geu => un || x >= y,
            Cmp::Num => !un,
            Cmp::Nan => un,
        };
    }
    cmp_int(c, ty, a, b)
}

/// Integer comparison: both sides sign-extended or zero-extended by `ty`.
#[inline(always)]
fn cmp_int(c: Cmp, ty: Ty, a: u64, b: u64) -> bool {
    let bits = ty.bits();
    let widen = |v: u64| if ty.signed() { sext(v, bits) as i128 } else { (v & mask(bits)) as i128 };
    let (x, y) = (widen(a), widen(b));
    match c {
        Cmp::Eq => x == y,
        Cmp::Ne => x != y,
        Cmp::Lt | Cmp::Ltu => x < y,
        Cmp::Le | Cmp::Leu => x <= y,
        Cmp::Gt | Cmp::Gtu => x > y,
        Cmp::Ge | Cmp::Geu => x >= y,
        _ => false,
    }
}

/// The smallest and largest integer of integer type `ty` (at most 64
/// bits), read as `to_i64` reads its bits.
pub fn int_range(ty: Ty) -> (i128, i128) {
    let bits = ty.bits().min(64);
    if ty.signed() {
        (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
    } else {
        (0, (1i128 << bits) - 1)
    }
}

/// The values `p` of an integer type `ty` for which `cmp(c, ty, x, p)`
/// (`p` on the right; on the left when `p_left`) is `want`, when they are
/// one interval: the smallest and largest, as integers (`to_i64`'s
/// reading of `ty`). `None` for floating-point types and for a set that
/// is not an interval (`p != x`).
pub fn solve_cmp(c: Cmp, ty: Ty, x: u64, p_left: bool, want: bool) -> Option<(i64, i64)> {
    if ty.is_float() || ty.bits() > 64 || !(c.is_ordering() || c.is_equality()) {
        return None;
    }
    let bits = ty.bits();
    let (lo, hi) = int_range(ty);
    let holds = |p: i128| {
        let p = p as u64 & mask(bits);
        (if p_left { cmp(c, ty, p, x, false) } else { cmp(c, ty, x, p, false) }) == want
    };
    if c.is_equality() {
        // `p == x` wanted true, or `p != x` wanted false: x alone
        let xv = to_i64(ty, x) as i128;
        return (holds(xv) && !holds(if xv > lo { xv - 1 } else { xv + 1 })).then_some((xv as i64, xv as i64));
    }
    // an ordering holds on one side of a boundary: find it by bisection
    let (at_lo, at_hi) = (holds(lo), holds(hi));
    let out = match (at_lo, at_hi) {
        (true, true) => (lo, hi),
        (false, false) => return None,
        (first, _) => {
            // the last value with `holds == first`
            let (mut a, mut b) = (lo, hi);
            while b - a > 1 {
                let m = a + (b - a) / 2;
                if holds(m) == first {
                    a = m;
                } else {
                    b = m;
                }
            }
            if first {
                (lo, a)
            } else {
                (b, hi)
            }
        }
    };
    let clamp = |v: i128| v.clamp(i64::MIN as i128, i64::MAX as i128) as i64;
    Some((clamp(out.0), clamp(out.1)))
}

pub fn boolop(op: BoolOp, a: bool, b: bool) -> bool {
    match op {
        BoolOp::And => a && b,
        BoolOp::Or => a || b,
        BoolOp::Xor => a ^ b,
    }
}

fn round_int(x: f64, r: Round) -> f64 {
    match r {
        Round::Rn => x.round_ties_even(),
        Round::Rz => x.trunc(),
        Round::Rm => x.floor(),
        Round::Rp => x.ceil(),
    }
}

/// `cvt.dty.sty`.
#[allow(clippy::too_many_arguments)]
pub fn cvt(dty: Ty, sty: Ty, a: u64, round: Option<Round>, int_round: bool, sat: bool, ftz: bool) -> u64 {
    let dbits = dty.bits();
    match (dty.is_float(), sty.is_float()) {
        (false, false) => cvt_int(dty, sty, a, sat),
        (true, false) => {
            let x = if sty.signed() { sext(a, sty.bits()) as f64 } else { (a & mask(sty.bits())) as f64 };
            // 64-bit integers to float: through i128 for exactness is overkill; f64 rounding is the common case
            let x = if sty.bits() == 64 && !sty.signed() { (a as u128) as f64 } else { x };
            fbits(dty, x, round.unwrap_or(Round::Rn), ftz)
        }
        (false, true) => {
            let x = fval(sty, a, ftz);
            let r = round.unwrap_or(Round::Rz);
            let t = round_int(x, r);
            let v: i128 = if t.is_nan() {
                0
            } else if dty.signed() {
                let lo = -(1i128 << (dbits - 1));
                let hi = (1i128 << (dbits - 1)) - 1;
                (t.clamp(lo as f64, hi as f64)) as i128
            } else {
                (t.clamp(0.0, ((1u128 << dbits) - 1) as f64)) as i128
            };
            (v as u64) & mask(dbits)
        }
        (true, true) => {
            let x = fval(sty, a, ftz);
            let x = if int_round { round_int(x, round.unwrap_or(Round::Rn)) } else { x };
            let x = if sat { x.clamp(0.0, 1.0) } else { x };
            fbits(dty, x, round.filter(|_| !int_round).unwrap_or(Round::Rn), ftz)
        }
    }
}

/// Integer-to-integer `cvt`: extend by the source type, saturate or wrap to the destination.
#[inline(always)]
fn cvt_int(dty: Ty, sty: Ty, a: u64, sat: bool) -> u64 {
    let dbits = dty.bits();
    let v = if sty.signed() { sext(a, sty.bits()) as u64 } else { a & mask(sty.bits()) };
    if sat {
        let (lo, hi): (i128, i128) =
            if dty.signed() { (-(1i128 << (dbits - 1)), (1i128 << (dbits - 1)) - 1) } else { (0, (1i128 << dbits) - 1) };
        let x = if sty.signed() { v as i64 as i128 } else { v as i128 };
        return (x.clamp(lo, hi) as u64) & mask(dbits);
    }
    v & mask(dbits)
}

/// `atom`/`red` combining function.
pub fn atom(op: AtomOp, ty: Ty, old: u64, b: u64, c: u64) -> u64 {
    use AtomOp::*;
    let bits = ty.bits();
    let m = mask(bits);
    match op {
        Add => {
            if ty.is_float() {
                fbits(ty, fval(ty, old, false) + fval(ty, b, false), Round::Rn, false)
            } else {
                old.wrapping_add(b) & m
            }
        }
        Min => bin(Bin::Min, ty, old, b, Round::Rn, false, false),
        Max => bin(Bin::Max, ty, old, b, Round::Rn, false, false),
        Exch => b & m,
        Cas => {
            if old & m == b & m {
                c & m
            } else {
                old
            }
        }
        And => old & b & m,
        Or => (old | b) & m,
        Xor => (old ^ b) & m,
        Inc => {
            if (old & m) >= (b & m) {
                0
            } else {
                (old + 1) & m
            }
        }
        Popc => old.wrapping_add((b & 1 != 0) as u64) & m,
        Dec => {
            if (old & m) == 0 || (old & m) > (b & m) {
                b & m
            } else {
                (old - 1) & m
            }
        }
    }
}

/// `mad`/`fma`: `a·b + c` (the product's half per `mode`; floats fused,
/// rounded once per `r`).
#[allow(clippy::too_many_arguments)]
pub fn mad(ty: Ty, mode: Bin, a: u64, b: u64, c: u64, r: Round, ftz: bool, sat: bool) -> u64 {
    if ty.is_float() {
        if ty == Ty::F(32) {
            let (x, y, z) = (f32v(a), f32v(b), f32v(c));
            let (x, y, z) = if ftz { (ftz32(x), ftz32(y), ftz32(z)) } else { (x, y, z) };
            let out = if r == Round::Rn { x.mul_add(y, z) } else { round_f32(x as f64 * y as f64 + z as f64, r) };
            let out = if sat { out.clamp(0.0, 1.0) } else { out };
            return (if ftz { ftz32(out) } else { out }).to_bits() as u64;
        }
        let out = f64v(a).mul_add(f64v(b), f64v(c));
        return (if sat { out.clamp(0.0, 1.0) } else { out }).to_bits();
    }
    mad_int(ty, mode, a, b, c, sat)
}

/// Integer `mad`: the product's half per `mode`, plus `c`, at the result width.
#[inline(always)]
fn mad_int(ty: Ty, mode: Bin, a: u64, b: u64, c: u64, sat: bool) -> u64 {
    let p = bin_int(mode, ty, a, b, false);
    let bits = if mode == Bin::MulWide { ty.bits() * 2 } else { ty.bits() };
    if sat && ty.signed() && mode == Bin::MulHi {
        let v = sext(p, bits) as i128 + sext(c, bits) as i128;
        return (v.clamp(i32::MIN as i128, i32::MAX as i128) as u64) & mask(bits);
    }
    p.wrapping_add(c) & mask(bits)
}

/// `bfe`: extract `len` bits at `pos` (sign-extended for signed types).
pub fn bfe(ty: Ty, a: u64, pos: u64, len: u64) -> u64 {
    let bits = ty.bits();
    let x = a & mask(bits);
    let (pos, len) = ((pos & 0xff) as u32, (len & 0xff) as u32);
    if len == 0 {
        return 0;
    }
    let raw = if pos >= 64 { 0 } else { (x >> pos) & mask(len) };
    if ty.signed() {
        let sign_pos = (pos + len - 1).min(bits - 1);
        if (x >> sign_pos) & 1 == 1 {
            return (raw | !mask(len)) & mask(bits);
        }
    }
    raw
}

/// `bfi`: insert the low `len` bits of `f` into `b` at `pos`.
pub fn bfi(ty: Ty, f: u64, b: u64, pos: u64, len: u64) -> u64 {
    let bits = ty.bits();
    let (pos, n) = ((pos & 0xff) as u32, (len & 0xff) as u32);
    let base = b & mask(bits);
    let v = if n == 0 || pos >= bits {
        base
    } else {
        let fm = mask(n.min(bits - pos)) << pos;
        (base & !fm) | ((f << pos) & fm)
    };
    v & mask(bits)
}

/// `prmt` (default mode): pick four bytes of `b:a` by the selector `c`.
pub fn prmt(a: u64, b: u64, c: u64) -> u64 {
    let bytes = ((b & 0xffff_ffff) << 32) | (a & 0xffff_ffff);
    let mut v = 0u64;
    for k in 0..4 {
        let s = (c >> (4 * k)) & 0xf;
        let mut byte = (bytes >> (8 * (s & 7))) & 0xff;
        if s & 8 != 0 {
            byte = if byte & 0x80 != 0 { 0xff } else { 0 };
        }
        v |= byte << (8 * k);
    }
    v
}

/// `set`: the comparison as all ones / zero (integers) or 1.0 / 0.0 (f32).
pub fn set(dty: Ty, r: bool) -> u64 {
    match (dty.is_float(), r) {
        (true, true) => 1.0f32.to_bits() as u64,
        (false, true) => mask(dty.bits()),
        (_, false) => 0,
    }
}

/// An instruction's operation resolved once (operation, types, modes),
/// to be applied to the operand bits of many lanes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Prepared {
    Bin {
        op: Bin,
        ty: Ty,
        round: Round,
        ftz: bool,
        sat: bool,
    },
    Un {
        op: Un,
        ty: Ty,
        ftz: bool,
    },
    Copy,
    Mad {
        ty: Ty,
        mode: Bin,
        round: Round,
        ftz: bool,
        sat: bool,
    },
    Cvt {
        dty: Ty,
        sty: Ty,
        round: Option<Round>,
        int_round: bool,
        sat: bool,
        ftz: bool,
    },
    Selp,
    /// `setp` (`negate`: its second destination) and `set` (`dty`: its result type).
    Cmp {
        cmp: Cmp,
        ty: Ty,
        ftz: bool,
        negate: bool,
        combine: Option<BoolOp>,
        set: Option<Ty>,
    },
    Bfe {
        ty: Ty,
    },
    Bfi {
        ty: Ty,
    },
    Prmt,
}

/// The operation instruction `i` performs for destination `slot`, for the
/// instructions that compute from their operands alone: arithmetic, logic,
/// comparisons, selects, conversions, moves (`cvta` keeps an address in the
/// numbering of its state space; generic windows are the interpreter's).
pub fn prepare(i: &Inst<'_>, slot: usize) -> Option<Prepared> {
    let ty = i.ty?;
    if i.has(Flag::CC) || (slot > 0 && !(i.opcode == Opcode::Setp && slot == 1)) {
        return None;
    }
    let round = i.round.unwrap_or(Round::Rn);
    let (ftz, sat) = (i.has(Flag::FTZ), i.has(Flag::SAT));
    if let Some(op) = bin_op(i) {
        return Some(Prepared::Bin { op, ty, round, ftz, sat });
    }
    if let Some(op) = un_op(i) {
        return Some(Prepared::Un { op, ty, ftz });
    }
    Some(match i.opcode {
        Opcode::Mov | Opcode::Cvta => Prepared::Copy,
        Opcode::Mad | Opcode::Fma | Opcode::Mad24 => Prepared::Mad { ty, mode: mul_mode(i), round, ftz, sat },
        Opcode::Cvt => Prepared::Cvt { dty: i.dty?, sty: ty, round: i.round, int_round: i.has(Flag::INT_ROUND), sat, ftz },
        Opcode::Selp => Prepared::Selp,
        Opcode::Setp => Prepared::Cmp { cmp: i.cmp?, ty, ftz, negate: slot == 1, combine: i.bool_op, set: None },
        Opcode::Set => Prepared::Cmp { cmp: i.cmp?, ty, ftz, negate: false, combine: i.bool_op, set: Some(i.dty?) },
        Opcode::Bfe => Prepared::Bfe { ty },
        Opcode::Bfi => Prepared::Bfi { ty },
        Opcode::Prmt if !i.has(Flag::PRMT_MODE) => Prepared::Prmt,
        _ => return None,
    })
}

impl Prepared {
    /// The result from the bits of the source operands in order
    /// (predicates as 0/1); `None` where PTX leaves it undefined (integer
    /// division by zero) or an operand is missing.
    #[inline]
    pub fn apply(&self, args: &[u64]) -> Option<u64> {
        let arg = |k: usize| args.get(k).copied();
        Some(match *self {
            Prepared::Bin { op, ty, round, ftz, sat } => {
                let (a, b) = (arg(0)?, arg(1)?);
                if matches!(op, Bin::Div | Bin::Rem) && !ty.is_float() && b & mask(ty.bits()) == 0 {
                    return None;
                }
                bin(op, ty, a, b, round, ftz, sat)
            }
            Prepared::Un { op, ty, ftz } => un(op, ty, arg(0)?, ftz),
            Prepared::Copy if args.len() == 1 => arg(0)?,
            Prepared::Copy => return None,
            Prepared::Mad { ty, mode, round, ftz, sat } => mad(ty, mode, arg(0)?, arg(1)?, arg(2)?, round, ftz, sat),
            Prepared::Cvt { dty, sty, round, int_round, sat, ftz } => cvt(dty, sty, arg(0)?, round, int_round, sat, ftz),
            Prepared::Selp => {
                if arg(2)? & 1 != 0 {
                    arg(0)?
                } else {
                    arg(1)?
                }
            }
            Prepared::Cmp { cmp: c, ty, ftz, negate, combine, set: dty } => {
                let mut r = cmp(c, ty, arg(0)?, arg(1)?, ftz) != negate;
                if let Some(b) = combine {
                    r = boolop(b, r, arg(2)? & 1 != 0);
                }
                match dty {
                    Some(d) => set(d, r),
                    None => r as u64,
                }
            }
            Prepared::Bfe { ty } => bfe(ty, arg(0)?, arg(1)?, arg(2)?),
            Prepared::Bfi { ty } => bfi(ty, arg(0)?, arg(1)?, arg(2)?, arg(3)?),
            Prepared::Prmt => prmt(arg(0)?, arg(1)?, arg(2)?),
        })
    }
}

impl Prepared {
    /// Whether [`Self::apply_partial`] gives `None` whenever source `k`
    /// is unknown (no other source can decide the result without it).
    pub fn needs(&self, k: usize) -> bool {
        match *self {
            Prepared::Bin { op: Bin::And | Bin::Or | Bin::MulLo, ty, .. } if !ty.is_float() => false,
            Prepared::Selp | Prepared::Cmp { combine: Some(_), .. } => k == 2,
            _ => true,
        }
    }

    /// [`Prepared::apply`] when some sources are unknown (`None`): the
    /// result where the known ones decide it whatever the others hold
    /// (`and` with zero, `or` with all ones, a product with zero, a select
    /// whose predicate picks a known source, a comparison combined by `and`
    /// with false or by `or` with true); `None` where they do not.
    pub fn apply_partial(&self, args: &[Option<u64>]) -> Option<u64> {
        if args.len() <= 8 && args.iter().all(Option::is_some) {
            // (on the stack: this runs once per instruction and lane)
            let mut all = [0u64; 8];
            for (a, x) in all.iter_mut().zip(args) {
                *a = x.unwrap_or(0);
            }
            return self.apply(&all[..args.len()]);
        }
        if let Some(all) = args.iter().copied().collect::<Option<Vec<u64>>>() {
            return self.apply(&all);
        }
        let arg = |k: usize| args.get(k).copied().flatten();
        match *self {
            Prepared::Bin { op, ty, .. } if !ty.is_float() && args.len() == 2 => {
                let m = mask(ty.bits());
                let decides = |x: u64| match op {
                    Bin::And | Bin::MulLo => x & m == 0,
                    Bin::Or => x & m == m,
                    _ => false,
                };
                // the operation of the deciding value with itself: its result, in `apply`'s form
                args.iter().flatten().copied().find(|&x| decides(x)).and_then(|x| self.apply(&[x, x]))
            }
            Prepared::Selp => {
                if arg(2)? & 1 != 0 {
                    arg(0)
                } else {
                    arg(1)
                }
            }
            Prepared::Cmp { combine: Some(b), set: dty, .. } => {
                let c = arg(2)? & 1 != 0;
                let r = match b {
                    BoolOp::And if !c => false,
                    BoolOp::Or if c => true,
                    _ => return None,
                };
                Some(match dty {
                    Some(d) => set(d, r),
                    None => r as u64,
                })
            }
            _ => None,
        }
    }

    /// [`Prepared::apply`] over many lanes: `srcs[k][t]` is source `k` of
    /// lane `t` (as the integers the evaluator keeps; a source of one lane
    /// holds it in every lane); each result is pushed as [`to_i64`] of
    /// `ty`. `None` if some lane is undefined.
    /// Integer binary operations run in a loop specialised to the
    /// operation (the same [`bin`] semantics, inlined).
    pub fn apply_lanes(&self, srcs: &[&[i64]], ty: Ty, out: &mut Vec<i64>) -> Option<()> {
        let n = srcs.iter().map(|x| x.len()).max().unwrap_or(0);
        // a source of one lane holds that value in every lane
        let at = |s: &[i64], t: usize| s[if s.len() == 1 { 0 } else { t }];
        if let (Prepared::Bin { op, ty: oty, sat, .. }, [a, b]) = (*self, srcs) {
            if !oty.is_float() {
                if matches!(op, Bin::Div | Bin::Rem) && b.iter().any(|&x| x as u64 & mask(oty.bits()) == 0) {
                    return None;
                }
                // (a loop for each way the sources hold their lanes)
                macro_rules! lanes {
                    (|$x:ident, $y:ident| $e:expr) => {
                        match (a.len() == n, b.len() == n) {
                            (true, true) => out.extend(a.iter().zip(b.iter()).map(|(&$x, &$y)| $e)),
                            (false, _) => {
                                let $x = a[0];
                                out.extend(b.iter().map(|&$y| $e))
                            }
                            (true, false) => {
                                let $y = b[0];
                                out.extend(a.iter().map(|&$x| $e))
                            }
                        }
                    };
                }
                macro_rules! every_op {
                    ($oty:expr, $ty:expr) => {
                        per_bin_op!(op, o => lanes!(|x, y| to_i64($ty, bin_int(o, $oty, x as u64, y as u64, sat))))
                    };
                }
                // the common types as constants: each loop is compiled for its width and signedness
                match (oty, ty) {
                    (Ty::U(32), Ty::U(32)) => every_op!(Ty::U(32), Ty::U(32)),
                    (Ty::S(32), Ty::S(32)) => every_op!(Ty::S(32), Ty::S(32)),
                    (Ty::B(32), Ty::B(32)) => every_op!(Ty::B(32), Ty::B(32)),
                    (Ty::U(64), Ty::U(64)) => every_op!(Ty::U(64), Ty::U(64)),
                    (Ty::S(64), Ty::S(64)) => every_op!(Ty::S(64), Ty::S(64)),
                    (Ty::B(64), Ty::B(64)) => every_op!(Ty::B(64), Ty::B(64)),
                    (Ty::U(32), Ty::U(64)) => every_op!(Ty::U(32), Ty::U(64)),
                    (Ty::S(32), Ty::S(64)) => every_op!(Ty::S(32), Ty::S(64)),
                    _ => every_op!(oty, ty),
                }
                return Some(());
            }
        }
        let out_of = |bits: u64| to_i64(ty, bits);
        match (*self, srcs) {
            (Prepared::Copy, [a]) => out.extend(a.iter().map(|&x| out_of(x as u64))),
            (Prepared::Cvt { dty, sty, sat, .. }, [a]) if !dty.is_float() && !sty.is_float() => {
                out.extend(a.iter().map(|&x| out_of(cvt_int(dty, sty, x as u64, sat))))
            }
            (Prepared::Mad { ty: mty, mode, sat, .. }, [a, b, c]) if !mty.is_float() => {
                out.extend((0..n).map(|t| out_of(mad_int(mty, mode, at(a, t) as u64, at(b, t) as u64, at(c, t) as u64, sat))))
            }
            (Prepared::Cmp { cmp: c, ty: cty, negate, combine: None, set: None, .. }, [a, b]) if !cty.is_float() => {
                out.extend((0..n).map(|t| (cmp_int(c, cty, at(a, t) as u64, at(b, t) as u64) != negate) as i64))
            }
            _ => {
                let mut args = [0u64; 5];
                let k = srcs.len().min(args.len());
                for t in 0..n {
                    for (x, s) in args.iter_mut().zip(srcs) {
                        *x = at(s, t) as u64;
                    }
                    out.push(out_of(self.apply(&args[..k])?));
                }
            }
        }
        Some(())
    }
}

/// A value per thread that is affine in the thread's coordinates,
/// `k + c·tid`, as the integer each thread holds ([`to_i64`] of its bits):
/// `%tid.x`, `4 * tid.x + base`, a row's start `ntid.x * tid.y`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Affine {
    pub k: i64,
    pub c: [i64; 3],
}

impl Affine {
    /// The same `k` in every thread.
    pub fn uniform(k: i64) -> Affine {
        Affine { k, c: [0; 3] }
    }

    /// The value of the thread at `tid`.
    pub fn at(&self, tid: [i64; 3]) -> i64 {
        (0..3).fold(self.k, |v, d| v.wrapping_add(self.c[d].wrapping_mul(tid[d])))
    }

    /// The lowest and highest value over the threads whose coordinates lie
    /// within `bounds` (each dimension's lowest and highest).
    pub fn range(&self, bounds: &[(i64, i64); 3]) -> (i128, i128) {
        (0..3).fold((self.k as i128, self.k as i128), |(lo, hi), d| {
            let (a, b) = (self.c[d] as i128 * bounds[d].0 as i128, self.c[d] as i128 * bounds[d].1 as i128);
            (lo + a.min(b), hi + a.max(b))
        })
    }

    fn plus(self, o: Affine) -> Option<Affine> {
        let c = [self.c[0].checked_add(o.c[0])?, self.c[1].checked_add(o.c[1])?, self.c[2].checked_add(o.c[2])?];
        Some(Affine { k: self.k.checked_add(o.k)?, c })
    }

    fn times(self, m: i64) -> Option<Affine> {
        let c = [self.c[0].checked_mul(m)?, self.c[1].checked_mul(m)?, self.c[2].checked_mul(m)?];
        Some(Affine { k: self.k.checked_mul(m)?, c })
    }

    /// The product, when one side is the same in every thread.
    fn product(self, o: Affine) -> Option<Affine> {
        match (self.c == [0; 3], o.c == [0; 3]) {
            (true, _) => o.times(self.k),
            (_, true) => self.times(o.k),
            _ => None,
        }
    }
}

/// The integers an integer type's bits denote where [`to_i64`] gives each
/// unchanged and every operation reads it as that integer (an unsigned
/// 64-bit value from 2⁶³ up is not one: its `i64` is negative).
fn exact_range(ty: Ty) -> Option<(i128, i128)> {
    match ty {
        Ty::S(b) if (1..=64).contains(&b) => Some((-(1i128 << (b - 1)), (1i128 << (b - 1)) - 1)),
        Ty::U(b) | Ty::B(b) if (1..=64).contains(&b) => Some((0, (1i128 << b.min(63)) - 1)),
        _ => None,
    }
}

impl Prepared {
    /// [`Prepared::apply_lanes`] over sources affine in the thread's
    /// coordinates (one the same in every thread is too), as an affine
    /// result, for the operations that keep the form: moves, integer
    /// conversions, `add`, `sub`, `mul.lo`/`mul.wide` and `mad.lo`/`mad.wide`
    /// by a value the same in every thread, `shl` by a constant. Exact: only
    /// where no thread's value wraps or is read otherwise (the result, over
    /// the threads within `bounds`, an integer its type holds as it is; and
    /// the sources of `.wide` operations and conversions, which read them
    /// by their type: `add`, `sub`, `mul.lo` and `shl` compute the low bits
    /// alike whatever the sources' upper ones), so that each thread's value
    /// is the one `apply_lanes` computes; `None` otherwise (and for
    /// saturation), for the caller to compute thread by thread.
    pub fn apply_affine(&self, srcs: &[Affine], bounds: &[(i64, i64); 3], ty: Ty) -> Option<Affine> {
        let within = |x: &Affine, t: Ty| -> Option<()> {
            let (lo, hi) = exact_range(t)?;
            let (a, b) = x.range(bounds);
            (lo <= a && b <= hi).then_some(())
        };
        let r = match (*self, srcs) {
            (Prepared::Copy, [a]) => *a,
            (Prepared::Cvt { dty, sty, sat: false, .. }, [a]) if !dty.is_float() && !sty.is_float() => {
                within(a, sty)?;
                *a
            }
            (Prepared::Bin { op, ty: oty, sat: false, .. }, [a, b]) if !oty.is_float() => match op {
                Bin::Add => a.plus(*b)?,
                Bin::Sub => a.plus(b.times(-1)?)?,
                Bin::MulLo => a.product(*b)?,
                Bin::MulWide => {
                    within(a, oty)?;
                    within(b, oty)?;
                    a.product(*b)?
                }
                Bin::Shl if b.c == [0; 3] && (0..(oty.bits() as i64).min(63)).contains(&b.k) => a.times(1 << b.k)?,
                _ => return None,
            },
            (Prepared::Mad { ty: mty, mode, sat: false, .. }, [a, b, c]) if !mty.is_float() => {
                match mode {
                    Bin::MulLo => {}
                    Bin::MulWide => {
                        within(a, mty)?;
                        within(b, mty)?;
                    }
                    _ => return None,
                }
                a.product(*b)?.plus(*c)?
            }
            _ => return None,
        };
        within(&r, ty)?;
        Some(r)
    }
}

/// The value instruction `i` writes to destination `slot`, from the bits
/// of its source operands in order ([`prepare`] then [`Prepared::apply`]).
pub fn apply(i: &Inst<'_>, slot: usize, args: &[u64]) -> Option<u64> {
    prepare(i, slot)?.apply(args)
}

/// The type of the value written to destination `slot` (predicates for
/// `setp`, the destination type of `cvt`/`set`, twice the width for
/// `.wide`).
pub fn dest_ty(i: &Inst<'_>, slot: usize) -> Option<Ty> {
    match i.opcode {
        Opcode::Setp => Some(Ty::Pred),
        _ if slot > 0 => None,
        Opcode::Cvt | Opcode::Set => i.dty,
        _ if i.has(Flag::WIDE) => i.ty.map(Ty::widened),
        _ => i.ty,
    }
}

/// Register bits of type `ty` as the integer they denote: sign-extended
/// for signed types, zero-extended otherwise.
pub fn to_i64(ty: Ty, bits: u64) -> i64 {
    if ty.signed() {
        sext(bits, ty.bits())
    } else {
        (bits & mask(ty.bits())) as i64
    }
}

/// Where a thread is, for the values of special registers. Fields a
/// caller does not know are `None` (the static evaluator knows neither the
/// block index nor the grid).
#[derive(Clone, Copy, Debug, Default)]
pub struct ThreadPos {
    pub tid: [u32; 3],
    pub ntid: [u32; 3],
    pub ctaid: Option<[u32; 3]>,
    pub nctaid: Option<[u32; 3]>,
    /// Lane in the warp, warp in the block, warps per block.
    pub lane: u32,
    pub warp: Option<u32>,
    pub nwarps: Option<u32>,
    /// The grid workspace of a cooperative launch (`%envreg1`/`%envreg2`).
    pub workspace: Option<u64>,
}

/// The value of special register `s` in the thread at `t`; `None` when it
/// depends on something `t` does not know (clocks, the SM, the block index
/// when not given).
pub fn special_value(s: super::inst::Special, t: &ThreadPos) -> Option<u64> {
    use super::inst::{LaneMask, Special};
    let l = t.lane as u64;
    Some(match s {
        Special::Tid(d) => t.tid[d as usize] as u64,
        Special::Ntid(d) => t.ntid[d as usize] as u64,
        Special::Ctaid(d) => t.ctaid?[d as usize] as u64,
        Special::Nctaid(d) => t.nctaid?[d as usize] as u64,
        Special::LaneId => l,
        Special::WarpId => t.warp? as u64,
        Special::NWarpId => t.nwarps? as u64,
        Special::LaneMask(LaneMask::Eq) => 1u64 << l,
        Special::LaneMask(LaneMask::Lt) => (1u64 << l) - 1,
        Special::LaneMask(LaneMask::Le) => (1u64 << (l + 1)) - 1,
        Special::LaneMask(LaneMask::Gt) => !((1u64 << (l + 1)) - 1) & 0xffff_ffff,
        Special::LaneMask(LaneMask::Ge) => !((1u64 << l) - 1) & 0xffff_ffff,
        Special::GridWorkspace { high: true } => t.workspace? >> 32,
        Special::GridWorkspace { high: false } => t.workspace? & 0xffff_ffff,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    /// An affine result is every lane's value `apply_lanes` computes, over
    /// random operations, types and forms (thread coordinates from a block
    /// of 8×4×2 threads and one of 300×1×1); and it is found for the common
    /// address arithmetic.
    #[test]
    fn affine_results_are_the_lanes_values() {
        use super::{Affine, Bin, Prepared, Round, Ty};
        let rng = std::cell::RefCell::new(crate::xorshift(0x9e37_79b9_7f4a_7c15));
        let next = |n: u64| (rng.borrow_mut())(n);
        let tys = [Ty::U(32), Ty::S(32), Ty::B(32), Ty::U(64), Ty::S(64), Ty::B(64), Ty::U(16), Ty::S(16)];
        let (mut exact, mut checked) = (0, 0);
        for block in [[8i64, 4, 2], [300, 1, 1]] {
            let tids: Vec<[i64; 3]> =
                (0..block[2]).flat_map(|z| (0..block[1]).flat_map(move |y| (0..block[0]).map(move |x| [x, y, z]))).collect();
            let bounds = [(0, block[0] - 1), (0, block[1] - 1), (0, block[2] - 1)];
            for _ in 0..4_000 {
                let pick = |n: usize| next(n as u64) as usize;
                let ty = tys[pick(tys.len())];
                let sty = tys[pick(tys.len())];
                let small = |wide: bool| -> i64 {
                    let k = next(if wide { 1 << 40 } else { 1 << 12 }) as i64;
                    if next(3) == 0 {
                        -k
                    } else {
                        k
                    }
                };
                let form = |uniform: bool| Affine {
                    k: small(next(4) == 0),
                    c: if uniform { [0; 3] } else { [small(false) % 64, small(false) % 64, small(false) % 8] },
                };
                let op = match pick(8) {
                    0 => Prepared::Copy,
                    1 => Prepared::Cvt { dty: ty, sty, round: None, int_round: false, sat: false, ftz: false },
                    2 | 3 => {
                        let op = [Bin::Add, Bin::Sub, Bin::MulLo, Bin::MulWide, Bin::Shl, Bin::MulHi][pick(6)];
                        Prepared::Bin { op, ty, round: Round::Rn, ftz: false, sat: false }
                    }
                    4 => Prepared::Mad { ty, mode: [Bin::MulLo, Bin::MulWide][pick(2)], round: Round::Rn, ftz: false, sat: false },
                    _ => Prepared::Bin { op: Bin::Add, ty, round: Round::Rn, ftz: false, sat: false },
                };
                let n = match op {
                    Prepared::Copy | Prepared::Cvt { .. } => 1,
                    Prepared::Mad { .. } => 3,
                    _ => 2,
                };
                let mut srcs: Vec<Affine> = (0..n).map(|k| form(k == 1 && pick(3) != 0)).collect();
                if let Prepared::Bin { op: Bin::Shl, .. } = op {
                    srcs[1] = Affine::uniform(next(40) as i64);
                }
                let dty = match op {
                    Prepared::Bin { op: Bin::MulWide, ty, .. } | Prepared::Mad { mode: Bin::MulWide, ty, .. } => ty.widened(),
                    _ => ty,
                };
                let Some(r) = op.apply_affine(&srcs, &bounds, dty) else { continue };
                let lists: Vec<Vec<i64>> = srcs.iter().map(|a| tids.iter().map(|&t| a.at(t)).collect()).collect();
                let refs: Vec<&[i64]> = lists.iter().map(|l| l.as_slice()).collect();
                let mut out = Vec::new();
                op.apply_lanes(&refs, dty, &mut out).unwrap();
                assert_eq!(out, tids.iter().map(|&t| r.at(t)).collect::<Vec<_>>(), "{op:?} {dty:?} over {srcs:?}");
                exact += 1;
                checked += 1;
            }
        }
        assert!(exact > 2_000, "found for {exact} of {checked}");
        // `4 * tid.x + base` in 64 bits, `ntid.x * tid.y + tid.x` in 32: affine
        let b = [(0, 255), (0, 3), (0, 0)];
        let tid = Affine { k: 0, c: [1, 0, 0] };
        let add64 = Prepared::Bin { op: Bin::Add, ty: Ty::S(64), round: Round::Rn, ftz: false, sat: false };
        let wide = Prepared::Bin { op: Bin::MulWide, ty: Ty::U(32), round: Round::Rn, ftz: false, sat: false };
        let off = wide.apply_affine(&[tid, Affine::uniform(4)], &b, Ty::U(64)).unwrap();
        assert_eq!(add64.apply_affine(&[Affine::uniform(1 << 40), off], &b, Ty::S(64)), Some(Affine { k: 1 << 40, c: [4, 0, 0] }));
        let mad = Prepared::Mad { ty: Ty::S(32), mode: Bin::MulLo, round: Round::Rn, ftz: false, sat: false };
        let row = mad.apply_affine(&[Affine::uniform(256), Affine { k: 0, c: [0, 1, 0] }, tid], &b, Ty::S(32));
        assert_eq!(row, Some(Affine { k: 0, c: [1, 256, 0] }));
        // a value that wraps in some thread is not: `tid.x - 1` as u32 in thread 0
        let sub = Prepared::Bin { op: Bin::Sub, ty: Ty::U(32), round: Round::Rn, ftz: false, sat: false };
        assert_eq!(sub.apply_affine(&[tid, Affine::uniform(1)], &b, Ty::U(32)), None);
    }

    #[test]
    fn comparisons_solve_for_their_unknown_side() {
        use super::{solve_cmp, Cmp, Ty};
        let (u32t, s32t, u64t) = (Ty::parse("u32").unwrap(), Ty::parse("s32").unwrap(), Ty::parse("u64").unwrap());
        // 128 < C: C in 129..=u32::MAX
        assert_eq!(solve_cmp(Cmp::Lt, u32t, 128, false, true), Some((129, u32::MAX as i64)));
        // !(128 < C): C <= 128
        assert_eq!(solve_cmp(Cmp::Lt, u32t, 128, false, false), Some((0, 128)));
        // C > -5 (signed, C on the left)
        assert_eq!(solve_cmp(Cmp::Gt, s32t, (-5i64) as u64, true, true), Some((-4, i32::MAX as i64)));
        assert_eq!(solve_cmp(Cmp::Eq, u32t, 7, false, true), Some((7, 7)));
        assert_eq!(solve_cmp(Cmp::Ne, u32t, 7, false, true), None);
        // a 64-bit bound past i64::MAX is clamped
        assert_eq!(solve_cmp(Cmp::Lt, u64t, 3, false, true), Some((4, i64::MAX)));
        // nothing holds
        assert_eq!(solve_cmp(Cmp::Lt, u32t, u32::MAX as u64, false, true), None);
    }

    use super::*;
    use crate::ir::inst::{Cmp, Ty};

    /// The lane loops, specialised to the common types or not, compute
    /// what [`Prepared::apply`] computes lane by lane.
    #[test]
    fn lane_loops_agree_with_one_lane_at_a_time() {
        let ops = [
            Bin::Add,
            Bin::Sub,
            Bin::MulLo,
            Bin::MulHi,
            Bin::MulWide,
            Bin::Div,
            Bin::Rem,
            Bin::And,
            Bin::Or,
            Bin::Xor,
            Bin::Shl,
            Bin::Shr,
            Bin::Min,
            Bin::Max,
        ];
        let values: Vec<i64> =
            vec![0, 1, 2, 3, 7, 31, 32, 33, -1, -2, -7, i32::MAX as i64, i32::MIN as i64, u32::MAX as i64, i64::MAX, i64::MIN];
        let a: Vec<i64> = values.iter().flat_map(|&x| values.iter().map(move |_| x)).collect();
        let b: Vec<i64> = values.iter().flat_map(|_| values.iter().copied()).collect();
        for oty in [Ty::U(32), Ty::S(32), Ty::B(32), Ty::U(64), Ty::S(64), Ty::B(64), Ty::U(16), Ty::S(16)] {
            for op in ops {
                for sat in [false, true] {
                    let p = Prepared::Bin { op, ty: oty, round: Round::Rn, ftz: false, sat };
                    let ty = if op == Bin::MulWide { oty.widened() } else { oty };
                    // a lane of a division by zero leaves the whole list undefined
                    let b: Vec<i64> = b
                        .iter()
                        .map(|&x| if matches!(op, Bin::Div | Bin::Rem) && x as u64 & mask(oty.bits()) == 0 { 1 } else { x })
                        .collect();
                    let mut out = Vec::new();
                    p.apply_lanes(&[&a, &b], ty, &mut out).unwrap();
                    let one: Vec<i64> = (0..a.len()).map(|t| to_i64(ty, p.apply(&[a[t] as u64, b[t] as u64]).unwrap())).collect();
                    assert_eq!(out, one, "{op:?} {oty:?} sat {sat}");
                    // a source of one lane holds it in every lane, on either side
                    for (k, &x) in values.iter().enumerate().step_by(5) {
                        let spread = vec![x; b.len()];
                        let mut out = Vec::new();
                        p.apply_lanes(&[&[x], &b], ty, &mut out).unwrap();
                        let mut want = Vec::new();
                        p.apply_lanes(&[&spread, &b], ty, &mut want).unwrap();
                        assert_eq!(out, want, "{op:?} {oty:?} sat {sat}: lane 0 {x} on the left");
                        let y = b[k];
                        let mut out = Vec::new();
                        p.apply_lanes(&[&a, &[y]], ty, &mut out).unwrap();
                        let mut want = Vec::new();
                        p.apply_lanes(&[&a, &vec![y; a.len()]], ty, &mut want).unwrap();
                        assert_eq!(out, want, "{op:?} {oty:?} sat {sat}: lane 0 {y} on the right");
                    }
                }
            }
        }
    }

    /// Sources of one lane among others (a value the same in every
    /// thread, kept once) hold it in every lane: `mad`, comparisons and
    /// the lane-by-lane loop (`selp`) as over the value spread.
    #[test]
    fn one_lane_sources_hold_in_every_lane() {
        let full: Vec<i64> = vec![5, -3, 0, 17, 1 << 40, -1];
        let n = full.len();
        let u32t = Ty::U(32);
        let cases = [
            Prepared::Mad { ty: u32t, mode: Bin::MulLo, round: Round::Rn, ftz: false, sat: false },
            Prepared::Selp,
            Prepared::Cmp { cmp: Cmp::Lt, ty: Ty::S(32), ftz: false, negate: false, combine: None, set: None },
        ];
        for p in cases {
            let arity = if matches!(p, Prepared::Mad { .. } | Prepared::Selp) { 3 } else { 2 };
            // every way of keeping some sources as one lane (not all of them)
            for shape in 0..(1u32 << arity) - 1 {
                let srcs: Vec<Vec<i64>> = (0..arity)
                    .map(|k| if shape >> k & 1 == 1 { vec![7 - k as i64] } else { full.iter().map(|x| x + k as i64).collect() })
                    .collect();
                let spread: Vec<Vec<i64>> = srcs.iter().map(|s| if s.len() == 1 { vec![s[0]; n] } else { s.clone() }).collect();
                let (mut out, mut want) = (Vec::new(), Vec::new());
                let refs: Vec<&[i64]> = srcs.iter().map(|s| &s[..]).collect();
                p.apply_lanes(&refs, u32t, &mut out).unwrap();
                let refs: Vec<&[i64]> = spread.iter().map(|s| &s[..]).collect();
                p.apply_lanes(&refs, u32t, &mut want).unwrap();
                let one: Vec<i64> =
                    (0..n).map(|t| to_i64(u32t, p.apply(&spread.iter().map(|s| s[t] as u64).collect::<Vec<_>>()).unwrap())).collect();
                assert_eq!(want, one, "{p:?}");
                assert_eq!(out, want, "{p:?} with sources {shape:b} of one lane");
            }
        }
    }

    #[test]
    fn integers() {
        assert_eq!(bin(Bin::Add, Ty::U(32), 0xffff_ffff, 1, Round::Rn, false, false), 0);
        assert_eq!(bin(Bin::MulWide, Ty::S(32), (-3i32) as u32 as u64, 5, Round::Rn, false, false), (-15i64) as u64);
        assert_eq!(bin(Bin::MulHi, Ty::U(32), 0x8000_0000, 4, Round::Rn, false, false), 2);
        assert_eq!(bin(Bin::Shr, Ty::S(32), 0x8000_0000, 31, Round::Rn, false, false), 0xffff_ffff);
        assert_eq!(bin(Bin::Shr, Ty::U(32), 0x8000_0000, 31, Round::Rn, false, false), 1);
        assert_eq!(bin(Bin::Shl, Ty::B(32), 1, 32, Round::Rn, false, false), 0);
        assert_eq!(bin(Bin::Rem, Ty::S(32), (-7i32) as u32 as u64, 3, Round::Rn, false, false), (-1i32) as u32 as u64);
        assert_eq!(bin(Bin::Min, Ty::S(32), (-1i32) as u32 as u64, 1, Round::Rn, false, false), 0xffff_ffff);
        assert_eq!(un(Un::Clz, Ty::B(32), 1, false), 31);
        assert_eq!(un(Un::Brev, Ty::B(32), 1, false), 0x8000_0000);
        assert_eq!(un(Un::Neg, Ty::S(32), 5, false), (-5i32) as u32 as u64);
        assert!(cmp(Cmp::Lt, Ty::S(32), 0xffff_ffff, 0, false));
        assert!(!cmp(Cmp::Lt, Ty::U(32), 0xffff_ffff, 0, false));
    }

    #[test]
    fn known_sources_that_decide_the_result() {
        let or_p = Prepared::Bin { op: Bin::Or, ty: Ty::Pred, round: Round::Rn, ftz: false, sat: false };
        assert_eq!(or_p.apply_partial(&[Some(1), None]), Some(1));
        assert_eq!(or_p.apply_partial(&[None, Some(0)]), None);
        let and32 = Prepared::Bin { op: Bin::And, ty: Ty::B(32), round: Round::Rn, ftz: false, sat: false };
        assert_eq!(and32.apply_partial(&[None, Some(0)]), Some(0));
        assert_eq!(and32.apply_partial(&[None, Some(1)]), None);
        assert_eq!(and32.apply_partial(&[Some(6), Some(3)]), Some(2));
        assert_eq!(Prepared::Selp.apply_partial(&[Some(7), None, Some(1)]), Some(7));
        assert_eq!(Prepared::Selp.apply_partial(&[Some(7), None, Some(0)]), None);
        let setp_and = Prepared::Cmp { cmp: Cmp::Lt, ty: Ty::U(32), ftz: false, negate: false, combine: Some(BoolOp::And), set: None };
        assert_eq!(setp_and.apply_partial(&[None, Some(4), Some(0)]), Some(0));
        assert_eq!(setp_and.apply_partial(&[None, Some(4), Some(1)]), None);
    }

    #[test]
    fn floats_and_rounding() {
        let f = |x: f32| x.to_bits() as u64;
        assert_eq!(bin(Bin::Add, Ty::F(32), f(1.0), f(2.0), Round::Rn, false, false), f(3.0));
        // 1 + 2^-30: rn gives 1, rp the next float above 1
        let tiny = f(2f32.powi(-30));
        assert_eq!(bin(Bin::Add, Ty::F(32), f(1.0), tiny, Round::Rn, false, false), f(1.0));
        assert_eq!(bin(Bin::Add, Ty::F(32), f(1.0), tiny, Round::Rp, false, false), f(1.0 + f32::EPSILON));
        assert_eq!(bin(Bin::Sub, Ty::F(32), f(1.0), tiny, Round::Rz, false, false), f(1.0 - f32::EPSILON / 2.0));
        assert!(cmp(Cmp::Leu, Ty::F(32), f(f32::NAN), f(0.0), false));
        assert!(!cmp(Cmp::Le, Ty::F(32), f(f32::NAN), f(0.0), false));
        // f64 directed rounding: 1 + 2^-60 is between 1 and the next double
        let d = |x: f64| x.to_bits();
        let tiny64 = d(2f64.powi(-60));
        assert_eq!(bin(Bin::Add, Ty::F(64), d(1.0), tiny64, Round::Rn, false, false), d(1.0));
        assert_eq!(bin(Bin::Add, Ty::F(64), d(1.0), tiny64, Round::Rp, false, false), d(1.0 + f64::EPSILON));
        assert_eq!(bin(Bin::Add, Ty::F(64), d(1.0), tiny64, Round::Rm, false, false), d(1.0));
        assert_eq!(bin(Bin::Sub, Ty::F(64), d(1.0), tiny64, Round::Rz, false, false), d(1.0 - f64::EPSILON / 2.0));
        assert_eq!(bin(Bin::Sub, Ty::F(64), d(-1.0), tiny64, Round::Rz, false, false), d(-1.0));
        // 1/3: rm below rp, one ulp apart, rn one of them
        let (lo, hi) = (
            bin(Bin::Div, Ty::F(64), d(1.0), d(3.0), Round::Rm, false, false),
            bin(Bin::Div, Ty::F(64), d(1.0), d(3.0), Round::Rp, false, false),
        );
        assert_eq!(hi - lo, 1);
        assert!([lo, hi].contains(&bin(Bin::Div, Ty::F(64), d(1.0), d(3.0), Round::Rn, false, false)));
        assert_eq!(bin(Bin::Div, Ty::F(64), d(1.0), d(3.0), Round::Rz, false, false), lo);
        let (lo, hi) = (
            bin(Bin::Div, Ty::F(32), f(1.0), f(3.0), Round::Rm, false, false),
            bin(Bin::Div, Ty::F(32), f(1.0), f(3.0), Round::Rp, false, false),
        );
        assert_eq!(hi - lo, 1);
        assert_eq!(bin(Bin::Div, Ty::F(32), f(-1.0), f(3.0), Round::Rz, false, false), f(-(f32::from_bits(lo as u32))));
        // 0.1 × 3 in f64: exact product above the rounded one, so rp rounds up
        let p_rn = bin(Bin::MulLo, Ty::F(64), d(0.1), d(3.0), Round::Rn, false, false);
        let p_rp = bin(Bin::MulLo, Ty::F(64), d(0.1), d(3.0), Round::Rp, false, false);
        let e = 0.1f64.mul_add(3.0, -f64::from_bits(p_rn));
        assert_eq!(p_rp - p_rn, (e > 0.0) as u64);
        // conversions
        assert_eq!(cvt(Ty::S(32), Ty::F(32), f(-2.7), Some(Round::Rz), true, false, false), (-2i32) as u32 as u64);
        assert_eq!(cvt(Ty::S(32), Ty::F(32), f(2.5), Some(Round::Rn), true, false, false), 2);
        assert_eq!(cvt(Ty::S(32), Ty::F(32), f(3.5), Some(Round::Rn), true, false, false), 4);
        assert_eq!(cvt(Ty::U(32), Ty::F(32), f(-1.0), Some(Round::Rz), true, false, false), 0);
        assert_eq!(cvt(Ty::F(32), Ty::U(32), 7, Some(Round::Rn), false, false, false), f(7.0));
        assert_eq!(cvt(Ty::S(64), Ty::S(32), 0xffff_fffe, None, false, false, false), (-2i64) as u64);
        assert_eq!(cvt(Ty::U(16), Ty::U(32), 0x1_0005, None, false, false, false), 5);
        assert_eq!(cvt(Ty::U(8), Ty::S(32), 300, None, false, true, false), 255);
    }
}
