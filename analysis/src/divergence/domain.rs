//! The shared abstract domain: an affine form over thread coordinates.
//!
//! `v = c_x·tid.x + c_y·tid.y + c_z·tid.z + u` with exact integer
//! coefficients (or `Sym`, a coefficient that is uniform but unknown) and a
//! uniform remainder `u` (exact when known), or ⊤ (thread-dependent in a way
//! the form cannot express). ⊤ remembers whether loaded data or other
//! unpredictable sources are involved (`data`), which decides whether a
//! per-lane evaluation can still be attempted.
//!
//! Owns: the lattice and its arithmetic. Does not own: which instruction maps
//! to which operation (see `transfer`).

/// A coefficient of a thread coordinate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Coef {
    Const(i64),
    /// `k + m·s` for one uniform symbol `s` (a kernel parameter, a special
    /// register or another uniform value), so that `ty·wA - ty·wA` cancels.
    Lin {
        k: i64,
        m: i64,
        sym: u32,
    },
    /// Uniform across the block but unknown (several symbols).
    Sym,
}

impl Coef {
    pub fn is_zero(self) -> bool {
        self == Coef::Const(0)
    }
    fn lin(k: i64, m: i64, sym: u32) -> Coef {
        if m == 0 {
            Coef::Const(k)
        } else {
            Coef::Lin { k, m, sym }
        }
    }
    fn add(self, o: Coef) -> Coef {
        match (self, o) {
            (Coef::Const(a), Coef::Const(b)) => Coef::Const(a.wrapping_add(b)),
            (Coef::Const(a), Coef::Lin { k, m, sym }) | (Coef::Lin { k, m, sym }, Coef::Const(a)) => Coef::lin(k.wrapping_add(a), m, sym),
            (Coef::Lin { k: k1, m: m1, sym: s1 }, Coef::Lin { k: k2, m: m2, sym: s2 }) if s1 == s2 => {
                Coef::lin(k1.wrapping_add(k2), m1.wrapping_add(m2), s1)
            }
            _ => Coef::Sym,
        }
    }
    /// Multiply by a uniform value `sym + k` (`k` unknown when `None`).
    fn scale(self, k: Option<i64>, sym: Option<u32>) -> Coef {
        if self.is_zero() {
            return Coef::Const(0);
        }
        match (sym, k) {
            (None, Some(0)) => Coef::Const(0),
            (None, Some(b)) => match self {
                Coef::Const(a) => Coef::Const(a.wrapping_mul(b)),
                Coef::Lin { k, m, sym } => Coef::lin(k.wrapping_mul(b), m.wrapping_mul(b), sym),
                Coef::Sym => Coef::Sym,
            },
            (Some(s), Some(0)) => match self {
                Coef::Const(a) => Coef::lin(0, a, s),
                _ => Coef::Sym,
            },
            _ => Coef::Sym,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AbsVal {
    /// Not yet computed (unreachable or before the fixed point reaches it).
    Bottom,
    /// Affine in thread coordinates; uniform when all coefficients are 0.
    /// The uniform part is `s + k`: a symbol (a kernel parameter, a special
    /// register, another uniform value) when `s` is set, plus the constant
    /// `k`; unknown when `k` is `None` (and then `s` is `None`).
    Affine { c: [Coef; 3], k: Option<i64>, s: Option<u32> },
    /// Thread-dependent, not affine. `data`: depends on loaded data, atomics,
    /// clocks or other sources no static evaluation can know.
    Top { data: bool },
    /// The same in every lane of a warp, possibly different between warps
    /// (votes, `shfl.idx` from one lane, `%warpid`). Branching on it splits
    /// no warp but whole warps may skip a block-wide barrier.
    WarpUniform,
}

pub const ZERO: [Coef; 3] = [Coef::Const(0); 3];

impl AbsVal {
    pub fn uniform(k: Option<i64>) -> AbsVal {
        AbsVal::Affine { c: ZERO, k, s: None }
    }
    /// A uniform value known only by name.
    pub fn symbol(s: u32) -> AbsVal {
        AbsVal::Affine { c: ZERO, k: Some(0), s: Some(s) }
    }
    /// The uniform symbol this value is, if it is exactly one.
    pub fn sym(&self) -> Option<u32> {
        match self {
            AbsVal::Affine { c, k: Some(0), s } if *c == ZERO => *s,
            _ => None,
        }
    }
    /// The uniform part as (symbol, constant), when known.
    pub fn uniform_part(&self) -> Option<(Option<u32>, i64)> {
        match self {
            AbsVal::Affine { k: Some(k), s, .. } => Some((*s, *k)),
            _ => None,
        }
    }
    /// The value as another function sees it (a call's argument in the
    /// callee): the caller's symbols mean nothing there, so a coefficient
    /// or remainder that names one becomes uniform-but-unknown.
    pub fn without_symbols(self) -> AbsVal {
        match self {
            AbsVal::Affine { c, k, s } => {
                let c = c.map(|x| match x {
                    Coef::Lin { .. } => Coef::Sym,
                    x => x,
                });
                AbsVal::Affine { c, k: if s.is_some() { None } else { k }, s: None }
            }
            AbsVal::Bottom => AbsVal::Top { data: true },
            x => x,
        }
    }

    pub fn konst(k: i64) -> AbsVal {
        AbsVal::uniform(Some(k))
    }
    pub fn tid(dim: usize) -> AbsVal {
        let mut c = ZERO;
        c[dim] = Coef::Const(1);
        AbsVal::Affine { c, k: Some(0), s: None }
    }
    pub fn is_uniform(&self) -> bool {
        matches!(self, AbsVal::Affine { c, .. } if *c == ZERO) || *self == AbsVal::Bottom
    }
    pub fn is_divergent(&self) -> bool {
        !self.is_uniform()
    }
    /// Same value in all lanes of each warp (block-uniform or warp-uniform).
    pub fn is_warp_uniform(&self) -> bool {
        self.is_uniform() || *self == AbsVal::WarpUniform
    }
    pub fn data(&self) -> bool {
        matches!(self, AbsVal::Top { data: true })
    }
    pub fn const_value(&self) -> Option<i64> {
        match self {
            AbsVal::Affine { c, k, s: None } if *c == ZERO => *k,
            _ => None,
        }
    }
    pub fn coefs(&self) -> Option<[Coef; 3]> {
        match self {
            AbsVal::Affine { c, .. } => Some(*c),
            _ => None,
        }
    }

    /// ⊤ inheriting the `data` flag of the operands.
    pub fn top_of(ops: &[AbsVal]) -> AbsVal {
        AbsVal::Top { data: ops.iter().any(|o| o.data()) }
    }

    /// Uniform (of unknown content) if every operand is; otherwise ⊤ (for
    /// non-affine operations; exact constants are folded by the caller).
    pub fn uniform_or_top(ops: &[AbsVal]) -> AbsVal {
        if ops.contains(&AbsVal::Bottom) {
            return AbsVal::Bottom;
        }
        if ops.iter().all(|o| o.is_uniform()) {
            AbsVal::uniform(None)
        } else if ops.iter().all(|o| o.is_warp_uniform()) {
            AbsVal::WarpUniform
        } else {
            AbsVal::top_of(ops)
        }
    }

    /// Least upper bound (phi merge without sync dependence).
    pub fn join(self, o: AbsVal) -> AbsVal {
        match (self, o) {
            (AbsVal::Bottom, x) | (x, AbsVal::Bottom) => x,
            (AbsVal::Top { data: a }, AbsVal::Top { data: b }) => AbsVal::Top { data: a || b },
            (AbsVal::Top { data }, _) | (_, AbsVal::Top { data }) => AbsVal::Top { data },
            (AbsVal::WarpUniform, x) | (x, AbsVal::WarpUniform) => {
                if x.is_warp_uniform() {
                    AbsVal::WarpUniform
                } else {
                    AbsVal::Top { data: false }
                }
            }
            (AbsVal::Affine { c: c1, k: k1, s: s1 }, AbsVal::Affine { c: c2, k: k2, s: s2 }) => {
                // merged on a uniform path: still affine, with a coefficient
                // that is uniform but unknown where the two differ
                let c = [0, 1, 2].map(|d| if c1[d] == c2[d] { c1[d] } else { Coef::Sym });
                let same = c1 == c2 && k1 == k2 && s1 == s2;
                AbsVal::Affine { c, k: if same { k1 } else { None }, s: if same { s1 } else { None } }
            }
        }
    }

    fn add_affine(self, o: AbsVal) -> AbsVal {
        match (self, o) {
            (AbsVal::Bottom, _) | (_, AbsVal::Bottom) => AbsVal::Bottom,
            (AbsVal::Affine { c: c1, k: k1, s: s1 }, AbsVal::Affine { c: c2, k: k2, s: s2 }) => {
                let c = [c1[0].add(c2[0]), c1[1].add(c2[1]), c1[2].add(c2[2])];
                let (k, s) = match (k1, k2, s1, s2) {
                    (Some(a), Some(b), x, None) | (Some(a), Some(b), None, x) => (Some(a.wrapping_add(b)), x),
                    _ => (None, None),
                };
                AbsVal::Affine { c, k, s }
            }
            (a, b) => AbsVal::uniform_or_top(&[a, b]),
        }
    }

    fn mul_affine(self, o: AbsVal) -> AbsVal {
        match (self, o) {
            (AbsVal::Bottom, _) | (_, AbsVal::Bottom) => AbsVal::Bottom,
            (AbsVal::Affine { c: c1, k: k1, s: s1 }, AbsVal::Affine { c: c2, k: k2, s: s2 }) => {
                // (s1 + k1) · (s2 + k2) stays known when one side is a plain constant
                let (k, s) = match (s1, k1, s2, k2) {
                    (None, Some(a), None, Some(b)) => (Some(a.wrapping_mul(b)), None),
                    (None, Some(0), _, _) | (_, _, None, Some(0)) => (Some(0), None),
                    (None, Some(1), x, y) | (x, y, None, Some(1)) => (y, x),
                    _ => (None, None),
                };
                if c1 == ZERO {
                    AbsVal::Affine { c: c2.map(|x| x.scale(k1, s1)), k, s }
                } else if c2 == ZERO {
                    AbsVal::Affine { c: c1.map(|x| x.scale(k2, s2)), k, s }
                } else {
                    AbsVal::Top { data: false }
                }
            }
            (a, b) => AbsVal::uniform_or_top(&[a, b]),
        }
    }
}

/// Affine arithmetic: `a + b`, `a - b`, `-a`, `a * b` (⊤ when both
/// factors depend on the thread).
impl std::ops::Add for AbsVal {
    type Output = AbsVal;
    fn add(self, o: AbsVal) -> AbsVal {
        self.add_affine(o)
    }
}

impl std::ops::Mul for AbsVal {
    type Output = AbsVal;
    fn mul(self, o: AbsVal) -> AbsVal {
        self.mul_affine(o)
    }
}

impl std::ops::Neg for AbsVal {
    type Output = AbsVal;
    fn neg(self) -> AbsVal {
        self * AbsVal::konst(-1)
    }
}

impl std::ops::Sub for AbsVal {
    type Output = AbsVal;
    fn sub(self, o: AbsVal) -> AbsVal {
        self + -o
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn affine_arithmetic_cancels_thread_ids() {
        // Sampaio's avgSquare: N = tid + c*c, i = tid + k*c → N - i is uniform
        let tid = AbsVal::tid(0);
        let c = AbsVal::uniform(None);
        let n = tid + c * c;
        let i = tid + c;
        assert!((n - i).is_uniform());
        // gid = ctaid*ntid + tid is affine with coefficient 1
        let gid = AbsVal::uniform(None) * AbsVal::uniform(None) + tid;
        assert_eq!(gid.coefs(), Some([Coef::Const(1), Coef::Const(0), Coef::Const(0)]));
        // (tid+1)*c has a symbolic coefficient
        let l = (tid + AbsVal::konst(1)) * c;
        assert_eq!(l.coefs().unwrap()[0], Coef::Sym);
        assert_eq!(tid * tid, AbsVal::Top { data: false });
        assert_eq!(
            tid * AbsVal::konst(4) + AbsVal::konst(8),
            AbsVal::Affine { c: [Coef::Const(4), Coef::Const(0), Coef::Const(0)], k: Some(8), s: None }
        );
        // matrixMul's loop bound: ty·wA + tx + u1 compared with ty·wA + tx + u2
        let (ty, wa) = (AbsVal::tid(1), AbsVal::symbol(7));
        let a = ty * wa + tid + AbsVal::uniform(None);
        let b = wa * ty + AbsVal::symbol(9) + tid;
        assert!((a - b).is_uniform(), "{:?}", (a - b));
        // (tid + 1) * c with a named c: coefficient 1·c
        let l = (tid + AbsVal::konst(1)) * AbsVal::symbol(3);
        assert_eq!(l.coefs().unwrap()[0], Coef::Lin { k: 0, m: 1, sym: 3 });
        // different symbols do not cancel
        assert!(!(ty * AbsVal::symbol(1) - ty * AbsVal::symbol(2)).is_uniform());
    }

    #[test]
    fn join_rules() {
        let a = AbsVal::tid(0) + AbsVal::konst(1);
        let b = AbsVal::tid(0) + AbsVal::konst(5);
        assert_eq!(a.join(b), AbsVal::Affine { c: AbsVal::tid(0).coefs().unwrap(), k: None, s: None });
        // a uniform value and tid+1 merged on a uniform path: affine, unknown coefficient
        assert_eq!(a.join(AbsVal::konst(0)), AbsVal::Affine { c: [Coef::Sym, Coef::Const(0), Coef::Const(0)], k: None, s: None });
        assert!(a.join(AbsVal::konst(0)).is_divergent());
        assert_eq!(AbsVal::Top { data: true }.join(a), AbsVal::Top { data: true });
        assert_eq!(AbsVal::Bottom.join(a), a);
    }
}
