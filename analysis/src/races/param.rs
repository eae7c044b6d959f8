//! Races that need a particular value of a scalar kernel parameter
//! (`a[t] += a[t + offset]`: every `offset` in `1..blockDim`; `a[t + x]`
//! by thread 15 and `a[t]` by thread 200: `x = 185`). Only parameters
//! that offset an index by whole elements are solved for: a size or row
//! pitch that scales an index races only when it is smaller than what it
//! separates, which is not a launch to report.
//!
//! For a pair of accesses that the sampled parameter values leave apart,
//! each scalar parameter `s` their addresses depend on is solved for
//! exactly, not sampled: the addresses are evaluated at `s = S, S+1, S+2`
//! for every thread, and where each moves by the same amount per unit of
//! `s` (`addr(t, s) = addr(t, S) + (s - S)·δ`, checked on the three
//! values), two threads `t ≠ t'` overlap exactly for the `s` with
//! `-w_b < (s - S)(δ_a - δ_b) - (addr_b(t') - addr_a(t)) < w_a`: one
//! interval of `s` per thread pair, intersected with the parameter's type
//! range. The union over thread pairs is the set of values that race.
//!
//! Owns: that solution. Does not own: which pairs are candidates, the
//! threads that execute each access (the caller's), or the message.

use super::Race;
use crate::ir::{FunctionIr, ValueId};
use crate::memory::{Access, Evals, Query, SCALAR_SAMPLE};
use crate::races::RaceKind;

/// The values of one parameter for which a pair races.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParamCondition {
    /// The parameter's name in the PTX.
    pub param: String,
    /// Smallest and largest racing value.
    pub lo: i64,
    pub hi: i64,
    /// Every value in `lo..=hi` races (otherwise only some do).
    pub contiguous: bool,
    /// The value the witness is for (the smallest in magnitude).
    pub example: i64,
}

/// At most this many thread pairs are examined per access pair.
const MAX_THREAD_PAIRS: usize = 1 << 20;

/// Solve pair (`ka`, `kb`) for the scalar parameters of their addresses;
/// `on(k)` gives the threads that execute access `k` (in iteration `it`).
/// `per_access[k]`: the scalar parameters of access `k`'s address
/// ([`crate::memory::scalar_parameters`]).
#[allow(clippy::too_many_arguments)]
pub(super) fn solve(
    evals: &Evals<'_, '_>,
    accs: &[Access],
    per_access: &[Vec<ValueId>],
    ka: usize,
    kb: usize,
    it: usize,
    on: &mut dyn FnMut(usize) -> Vec<bool>,
    warp_synced: bool,
) -> Option<Race> {
    let f = evals.f;
    let (a, b) = (&accs[ka], &accs[kb]);
    let (va, vb) = (a.addr_value?, b.addr_value?);
    let mut params = per_access[ka].clone();
    for &p in &per_access[kb] {
        if !params.contains(&p) {
            params.push(p);
        }
    }
    let (mut on_a, mut on_b) = (None, None);
    for p in params.into_iter().take(2) {
        // the first thread tells cheaply whether the parameter moves the two apart by whole elements
        let step = |v: ValueId| {
            let at = |s: i64| evals.eval(v, Query { pin: Some((p, s)), ..Query::first_thread([0; 3], it) })?.first().copied();
            Some(at(SCALAR_SAMPLE + 1)? - at(SCALAR_SAMPLE)?)
        };
        let (Some(sa), Some(sb)) = (step(va), step(vb)) else { continue };
        let offset_like = |d: i64, w: u32| d == 0 || d.abs() == w.max(1) as i64;
        if sa == sb || !offset_like(sa, a.width) || !offset_like(sb, b.width) {
            continue;
        }
        let on_a = on_a.get_or_insert_with(|| on(ka));
        let on_b = on_b.get_or_insert_with(|| on(kb));
        let Some((la, da)) = linear_in(evals, va, a.offset, p, it) else { continue };
        let Some((lb, db)) = linear_in(evals, vb, b.offset, p, it) else { continue };
        let delta = da - db;
        // an offset in elements (added to an index), not a size or a row pitch that
        // scales one: a pitch smaller than the row it separates is not a launch to judge;
        // a parameter that moves both alike leaves the sampled check to decide
        if delta == 0 || !offset_like(da, a.width) || !offset_like(db, b.width) {
            continue;
        }
        let ta: Vec<usize> = (0..la.len()).filter(|&t| on_a.get(t).copied().unwrap_or(true)).collect();
        let tb: Vec<usize> = (0..lb.len()).filter(|&t| on_b.get(t).copied().unwrap_or(true)).collect();
        if ta.len().saturating_mul(tb.len()) > MAX_THREAD_PAIRS {
            continue;
        }
        let (lo_ty, hi_ty) = type_range(f, p);
        let (wa, wb) = (a.width.max(1) as i64, b.width.max(1) as i64);
        // racing values, each with its clearest witness (t1 of `a`, t2 of `b`)
        let mut values: std::collections::BTreeMap<i64, (usize, usize)> = Default::default();
        for &t1 in &ta {
            for &t2 in &tb {
                if t1 == t2 || (warp_synced && t1 / crate::model::WARP == t2 / crate::model::WARP) {
                    continue;
                }
                // -wb < k·delta - diff < wa, k = s - S
                let diff = lb[t2] - la[t1];
                let (lo, hi) = open_interval(diff - wb, diff + wa, delta);
                for k in lo..=hi {
                    let s = SCALAR_SAMPLE + k;
                    if s < lo_ty || s > hi_ty {
                        continue;
                    }
                    let w = values.entry(s).or_insert((t1, t2));
                    if (t1.max(t2), t1, t2) < (w.0.max(w.1), w.0, w.1) {
                        *w = (t1, t2);
                    }
                }
            }
        }
        let (&lo, &hi) = (values.keys().next()?, values.keys().next_back()?);
        let example = *values.keys().min_by_key(|s| (s.abs(), **s < 0)).expect("not empty");
        let (t1, t2) = values[&example];
        let k = example - SCALAR_SAMPLE;
        let (xa, xb) = (la[t1] + k * da, lb[t2] + k * db);
        let byte = xa.max(xb);
        let param = f.insts[f.def_inst(p)?].param_read().map(|(n, _)| n.to_string())?;
        return Some(Race {
            first: ka,
            second: kb,
            kind: RaceKind::between(a, b),
            threads: (t1, t2),
            offset: byte - byte.rem_euclid(wa),
            through_barrier: None,
            benign: false,
            next_iteration: false,
            between_blocks: None,
            // (the witness's pair: the other values' pairs are not compared)
            lanes_only: t1 / crate::model::WARP == t2 / crate::model::WARP,
            elements: 1,
            when: Some(ParamCondition { param, lo, hi, contiguous: (hi - lo + 1) as usize == values.len(), example }),
            iteration: None,
        });
    }
    None
}

/// The integers `k` with `lo < k·d < hi` (`d ≠ 0`), as an inclusive range
/// (empty when `lo > hi`).
fn open_interval(lo: i64, hi: i64, d: i64) -> (i64, i64) {
    let (lo, hi, d) = if d < 0 { (-hi, -lo, -d) } else { (lo, hi, d) };
    // smallest k with k·d > lo, largest with k·d < hi
    (lo.div_euclid(d) + 1, (hi - 1).div_euclid(d))
}

/// Every thread's address at `p = S` and the amount it moves per unit of
/// `p`, when that amount is the same in every thread and linear over three
/// values.
fn linear_in(evals: &Evals<'_, '_>, v: ValueId, offset: i64, p: ValueId, it: usize) -> Option<(Vec<i64>, i64)> {
    let at = |s: i64| evals.eval(v, Query { pin: Some((p, s)), ..Query::block(it) });
    let (x0, x1, x2) = (at(SCALAR_SAMPLE)?, at(SCALAR_SAMPLE + 1)?, at(SCALAR_SAMPLE + 2)?);
    let d = *x1.first()? - *x0.first()?;
    let linear = x0.iter().zip(x1.iter()).zip(x2.iter()).all(|((a, b), c)| b - a == d && c - b == d);
    linear.then(|| (x0.iter().map(|x| x + offset).collect(), d))
}

/// The values a parameter of its PTX type can hold.
fn type_range(f: &FunctionIr<'_>, p: ValueId) -> (i64, i64) {
    let ty = f.def_inst(p).and_then(|i| f.insts[i].ty);
    match ty {
        Some(t) if t.signed() && t.bits() < 64 => (-(1i64 << (t.bits() - 1)), (1i64 << (t.bits() - 1)) - 1),
        Some(t) if t.bits() < 64 => (0, (1i64 << t.bits()) - 1),
        _ => (i64::MIN, i64::MAX),
    }
}

#[cfg(test)]
mod tests {
    use super::open_interval;

    /// The integers k with lo < k·d < hi, by brute force.
    fn brute(lo: i64, hi: i64, d: i64) -> Vec<i64> {
        (-200..=200).filter(|k| lo < k * d && k * d < hi).collect()
    }

    #[test]
    fn open_interval_is_exact_for_both_signs() {
        for d in [-8, -4, -3, -1, 1, 2, 4, 5] {
            for lo in -40..40 {
                for hi in lo..lo + 20 {
                    let (a, b) = open_interval(lo, hi, d);
                    let got: Vec<i64> = (a..=b).collect();
                    assert_eq!(got, brute(lo, hi, d), "lo {lo} hi {hi} d {d}");
                }
            }
        }
    }
}
