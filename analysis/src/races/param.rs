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
//! for every thread, and where each thread's moves linearly (`addr(t, s)
//! = addr(t, S) + (s - S)·δ_t`, checked on the three values; δ_t differs
//! between threads where an address joins two parameters), two threads
//! `t ≠ t'` overlap exactly for the `s` with `-w_b < (s - S)(δ_t - δ_t') -
//! (addr_b(t') - addr_a(t)) < w_a`: one interval of `s` per thread pair,
//! intersected with the parameter's type range. The union over thread
//! pairs is the set of values that race. When the two threads' addresses
//! move with two parameters, one each (`a[x]` in thread 0, `a[y]` in
//! thread 1), the race needs a relation between them instead (`y = x`):
//! [`relation`].
//!
//! Owns: that solution. Does not own: which pairs are candidates, the
//! threads that execute each access (the caller's), or the message.

use super::Race;
use crate::divergence::eval::Leaves;
use crate::ir::{FunctionIr, ValueId};
use crate::memory::{Access, Evals, Query, SCALAR_SAMPLE};
use crate::races::RaceKind;
use std::rc::Rc;

/// The parameter values for which a pair races (names as in the PTX).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ParamCondition {
    /// Values of one parameter.
    Values {
        param: String,
        /// Smallest and largest racing value.
        lo: i64,
        hi: i64,
        /// Every value in `lo..=hi` races (otherwise only some do).
        contiguous: bool,
        /// The value the witness is for (the smallest in magnitude).
        example: i64,
    },
    /// `param = other + plus`: the two threads' addresses move with one
    /// parameter each.
    Relation { param: String, other: String, plus: i64 },
    /// The two threads reach their accesses only for these values of one
    /// parameter (a loop bound, a guard: `facts::witness`); the addresses
    /// do not depend on it. `None`: no bound on that side.
    Bound { param: String, lo: Option<i64>, hi: Option<i64>, example: i64 },
}

impl ParamCondition {
    /// The parameters the condition names (as messages name them).
    pub fn params(&self) -> Vec<&str> {
        match self {
            ParamCondition::Values { param, .. } | ParamCondition::Bound { param, .. } => vec![param.as_str()],
            ParamCondition::Relation { param, other, .. } => vec![param.as_str(), other.as_str()],
        }
    }

    /// The value the witness is for (0 for a relation).
    pub fn example(&self) -> i64 {
        match self {
            ParamCondition::Values { example, .. } | ParamCondition::Bound { example, .. } => *example,
            ParamCondition::Relation { .. } => 0,
        }
    }
}

/// The scalar parameters of both accesses' addresses, each once.
fn params_of(per_access: &[Vec<ValueId>], ka: usize, kb: usize) -> Vec<ValueId> {
    let mut params = per_access.get(ka).cloned().unwrap_or_default();
    for &p in per_access.get(kb).map(Vec::as_slice).unwrap_or(&[]) {
        if !params.contains(&p) {
            params.push(p);
        }
    }
    params
}

/// An address affine in the thread index moves alike in every thread
/// when a parameter does: its first thread tells for all.
fn moves_alike(x: &Access) -> bool {
    matches!(x.addr, crate::divergence::AbsVal::Affine { .. })
}

/// The value of `v` for query `q`'s threads with parameter `p` at `s`.
fn pinned(evals: &Evals<'_, '_>, v: ValueId, p: ValueId, s: i64, q: Query) -> Option<std::rc::Rc<Vec<i64>>> {
    evals.eval(v, Query { pin: Some((p, s)), ..q })
}

/// A parameter's name, as the source writes it where known.
fn param_name(f: &FunctionIr<'_>, p: ValueId) -> Option<String> {
    f.insts[f.def_inst(p)?].param_read().map(|(n, _)| f.param_label(n))
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
    memo: &mut Linear,
) -> Option<Race> {
    let f = evals.f;
    let (a, b) = (&accs[ka], &accs[kb]);
    let (va, vb) = (a.addr_value?, b.addr_value?);
    let (mut on_a, mut on_b) = (None, None);
    let offset_like = |d: i64, w: u32| d == 0 || d.abs() == w.max(1) as i64;
    for p in params_of(per_access, ka, kb).into_iter().take(2) {
        if moves_alike(a) && moves_alike(b) {
            // the first thread tells whether the parameter moves the two apart by whole elements
            let (Some(sa), Some(sb)) = (first_move(evals, memo, va, p, it), first_move(evals, memo, vb, p, it)) else { continue };
            if sa == sb || !offset_like(sa, a.width) || !offset_like(sb, b.width) {
                continue;
            }
        } else if [(a, va), (b, vb)].into_iter().any(|(x, v)| {
            !memo.forms.contains_key(&(v, p, it)) && first_move(evals, memo, v, p, it).is_some_and(|s| !offset_like(s, x.width))
        }) {
            // every thread must move by whole elements (below): the first one does not (asked
            // of a side whose every thread's move is not known yet)
            continue;
        }
        let on_a = on_a.get_or_insert_with(|| on(ka));
        let on_b = on_b.get_or_insert_with(|| on(kb));
        let Some(xa) = linear_in(evals, memo, va, p, it) else { continue };
        let Some(xb) = linear_in(evals, memo, vb, p, it) else { continue };
        // (each thread's address: the value plus the access's constant offset)
        let plus = |x: &[i64], offset: i64| -> Vec<i64> { x.iter().map(|x| x + offset).collect() };
        let (la, da, lb, db) = (plus(&xa.0, a.offset), &xa.1[..], plus(&xb.0, b.offset), &xb.1[..]);
        // an offset in elements (added to an index), not a size or a row pitch that
        // scales one: a pitch smaller than the row it separates is not a launch to judge;
        // a parameter that moves both alike leaves the sampled check to decide
        if !da.iter().all(|&d| offset_like(d, a.width)) || !db.iter().all(|&d| offset_like(d, b.width)) {
            continue;
        }
        let ta: Vec<usize> = (0..la.len()).filter(|&t| on_a.get(t).copied().unwrap_or(true)).collect();
        let tb: Vec<usize> = (0..lb.len()).filter(|&t| on_b.get(t).copied().unwrap_or(true)).collect();
        if ta.len().saturating_mul(tb.len()) > MAX_THREAD_PAIRS {
            continue;
        }
        let (lo_ty, hi_ty) = type_range(f, p);
        let (wa, wb) = (a.width.max(1) as i64, b.width.max(1) as i64);
        let values = racing_values((&la, da, &ta, wa), (&lb, db, &tb, wb), warp_synced, (lo_ty, hi_ty));
        let (Some(&lo), Some(&hi)) = (values.keys().next(), values.keys().next_back()) else { continue };
        let example = *values.keys().min_by_key(|s| (s.abs(), **s < 0)).expect("not empty");
        let (t1, t2) = values[&example];
        let k = example - SCALAR_SAMPLE;
        let (xa, xb) = (la[t1] + k * da[t1], lb[t2] + k * db[t2]);
        let byte = xa.max(xb);
        let param = param_name(f, p)?;
        return Some(Race {
            first: ka,
            second: kb,
            kind: RaceKind::between(a, b),
            threads: (t1, t2),
            offset: byte - byte.rem_euclid(wa),
            through_barrier: None,
            benign: None,
            next_iteration: false,
            between_blocks: None,
            block_apart: 1,
            // (the witness's pair: the other values' pairs are not compared)
            lanes_only: t1 / crate::model::WARP == t2 / crate::model::WARP,
            elements: 1,
            when: Some(ParamCondition::Values { param, lo, hi, contiguous: (hi - lo + 1) as usize == values.len(), example }),
            iteration: None,
            // (the caller records what the solution's evaluations rest on)
            rests_on: crate::divergence::eval::Leaves::none(),
            keyed: None,
            pinned: None,
        });
    }
    None
}

/// For a race found at the sampled parameter values: when its witness
/// threads' addresses move with two different parameters, one each, by
/// whole elements (`a[x]` in thread 0, `a[y]` in thread 1, one store after
/// clang joined the two), the relation the race needs (`y = x`, or
/// `y = x + 1` for `a[x + 1]` against `a[y]`): the addresses are equal
/// exactly then. `None`: the race does not depend on the parameters (or
/// not in that form). The relation must be the same in each of the
/// loop iterations `its` (those the race may have been found in).
pub(super) fn relation(
    evals: &Evals<'_, '_>,
    accs: &[Access],
    per_access: &[Vec<ValueId>],
    r: &Race,
    its: &[usize],
) -> Option<ParamCondition> {
    let f = evals.f;
    let (a, b) = (&accs[r.first], &accs[r.second]);
    let (va, vb) = (a.addr_value?, b.addr_value?);
    // two addresses affine in the thread index through the same parameters move alike in
    // every thread: no relation between parameters separates them
    let (pa, pb) = (per_access.get(r.first)?, per_access.get(r.second)?);
    let same = pa.len() == pb.len() && pa.iter().all(|p| pb.contains(p));
    if moves_alike(a) && moves_alike(b) && same {
        return None;
    }
    let [p, q] = params_of(per_access, r.first, r.second)[..] else { return None };
    let w = a.width.max(1) as i64;
    if b.width.max(1) as i64 != w {
        return None;
    }
    let (t1, t2) = r.threads;
    let mut plus = None;
    for &it in its {
        // thread `t`'s address with `pin` at `s`
        let at = |v: ValueId, t: usize, pin: ValueId, s: i64| pinned(evals, v, pin, s, Query::block(it))?.get(t).copied();
        let moved = |v: ValueId, t: usize, pin: ValueId| Some(at(v, t, pin, SCALAR_SAMPLE + 1)? - at(v, t, pin, SCALAR_SAMPLE)?);
        let (ap, aq, bp, bq) = (moved(va, t1, p)?, moved(va, t1, q)?, moved(vb, t2, p)?, moved(vb, t2, q)?);
        // addr1 - addr2 = (ap - bp)(p - S) + (aq - bq)(q - S) + (a1 - a2): one parameter on each side
        let (cp, cq) = (ap - bp, aq - bq);
        if cp.abs() != w || cq != -cp {
            return None;
        }
        let (a1, a2) = (at(va, t1, p, SCALAR_SAMPLE)? + a.offset, at(vb, t2, p, SCALAR_SAMPLE)? + b.offset);
        // equal when cp·(p - q) = a2 - a1, that is q = p - (a2 - a1)/cp
        if (a2 - a1) % cp != 0 || plus.is_some_and(|x| x != -(a2 - a1) / cp) {
            return None;
        }
        plus = Some(-(a2 - a1) / cp);
    }
    Some(ParamCondition::Relation { param: param_name(f, q)?, other: param_name(f, p)?, plus: plus? })
}

/// One access's side of [`racing_values`]: each thread's address at the
/// sample, how far it moves per unit of the parameter, the threads that
/// execute it (ascending), its width.
type Side<'x> = (&'x [i64], &'x [i64], &'x [usize], i64);

/// The parameter values (`S + k`, within `range`) for which a thread `t1`
/// of side `a` and another `t2 ≠ t1` of side `b` overlap (`-w_b < k·δ −
/// diff < w_a`, δ = the two threads' moves apart, diff = their addresses
/// apart), each with its clearest witness (smallest `(max(t1, t2), t1,
/// t2)`). Where both sides' addresses are lines of one stride over a run
/// of consecutive threads and each side moves alike in all of them (an
/// offset added to an index: the common case), solved per distance
/// `t2 − t1` (the clearest pair at a distance is known), not per pair of
/// threads: the cost no longer grows with the square of the block.
fn racing_values(a: Side<'_>, b: Side<'_>, warp_synced: bool, range: (i64, i64)) -> std::collections::BTreeMap<i64, (usize, usize)> {
    let (la, da, ta, wa) = a;
    let (lb, db, tb, wb) = b;
    let mut values: std::collections::BTreeMap<i64, (usize, usize)> = Default::default();
    let mut found = |k: i64, t1: usize, t2: usize| {
        let s = SCALAR_SAMPLE + k;
        if s < range.0 || s > range.1 {
            return;
        }
        let w = values.entry(s).or_insert((t1, t2));
        if (t1.max(t2), t1, t2) < (w.0.max(w.1), w.0, w.1) {
            *w = (t1, t2);
        }
    };
    // a run of consecutive threads whose addresses step by one stride and move alike
    let line = |l: &[i64], d: &[i64], ts: &[usize]| -> Option<(usize, usize, i64, i64, i64)> {
        let (&first, &last) = (ts.first()?, ts.last()?);
        if last - first + 1 != ts.len() {
            return None;
        }
        let step = if ts.len() > 1 { l[first + 1] - l[first] } else { 0 };
        let straight = ts.iter().all(|&t| l[t] == l[first] + step * (t - first) as i64 && d[t] == d[first]);
        straight.then_some((first, last, l[first] - step * first as i64, step, d[first]))
    };
    match (line(la, da, ta), line(lb, db, tb)) {
        (Some((alo, ahi, ca, sa, dla)), Some((blo, bhi, cb, sb, dlb))) if !warp_synced && (sa == sb || ta.len() == 1 || tb.len() == 1) => {
            let delta = dla - dlb;
            if delta == 0 {
                return values;
            }
            for m in (blo as i64 - ahi as i64)..=(bhi as i64 - alo as i64) {
                if m == 0 {
                    continue;
                }
                // the clearest pair `t2 − t1 = m`: the smallest `t1` both runs allow
                let t1 = alo.max((blo as i64 - m).max(0) as usize);
                let t2 = t1 as i64 + m;
                if t1 > ahi || t2 < blo as i64 || t2 > bhi as i64 {
                    continue;
                }
                // (one stride for both, or one thread on a side: one pair at this distance)
                let diff = (cb + sb * t2) - (ca + sa * t1 as i64);
                let (lo, hi) = open_interval(diff - wb, diff + wa, delta);
                for k in lo..=hi {
                    found(k, t1, t2 as usize);
                }
            }
        }
        _ => {
            for &t1 in ta {
                for &t2 in tb {
                    let delta = da[t1] - db[t2];
                    if t1 == t2 || delta == 0 || (warp_synced && t1 / crate::model::WARP == t2 / crate::model::WARP) {
                        continue;
                    }
                    // -wb < k·delta - diff < wa, k = s - S
                    let diff = lb[t2] - la[t1];
                    let (lo, hi) = open_interval(diff - wb, diff + wa, delta);
                    for k in lo..=hi {
                        found(k, t1, t2);
                    }
                }
            }
        }
    }
    values
}

/// The integers `k` with `lo < k·d < hi` (`d ≠ 0`), as an inclusive range
/// (empty when `lo > hi`).
pub(super) fn open_interval(lo: i64, hi: i64, d: i64) -> (i64, i64) {
    let (lo, hi, d) = if d < 0 { (-hi, -lo, -d) } else { (lo, hi, d) };
    // smallest k with k·d > lo, largest with k·d < hi
    (lo.div_euclid(d) + 1, (hi - 1).div_euclid(d))
}

/// Every thread's value of `v` at `p = S` and the amount it moves per
/// unit of `p` (each thread's own: a join of two parameters moves one
/// thread with one, another with the other), when linear over three
/// values. Asked once per value, parameter and iteration (`memo`: an
/// access is in many pairs), with what its evaluations rest on recorded
/// again at each asking.
fn linear_in(evals: &Evals<'_, '_>, memo: &mut Linear, v: ValueId, p: ValueId, it: usize) -> Option<Rc<LinearForm>> {
    asked(evals, &mut memo.forms, (v, p, it), || {
        let at = |s: i64| pinned(evals, v, p, s, Query::block(it));
        let (x0, x1, x2) = (at(SCALAR_SAMPLE)?, at(SCALAR_SAMPLE + 1)?, at(SCALAR_SAMPLE + 2)?);
        let linear = x0.iter().zip(x1.iter()).zip(x2.iter()).all(|((a, b), c)| b - a == c - b);
        // (the values at the sample: the evaluator's list, not a copy)
        linear.then(|| Rc::new((x0.clone(), x0.iter().zip(x1.iter()).map(|(a, b)| b - a).collect())))
    })
}

/// How far the first thread's value of `v` moves per unit of `p` (one
/// thread's evaluation: cheap), asked once per value, parameter and
/// iteration as [`linear_in`] is.
fn first_move(evals: &Evals<'_, '_>, memo: &mut Linear, v: ValueId, p: ValueId, it: usize) -> Option<i64> {
    asked(evals, &mut memo.first, (v, p, it), || {
        let at = |s: i64| pinned(evals, v, p, s, Query::first_thread([0; 3], it))?.first().copied();
        Some(at(SCALAR_SAMPLE + 1)? - at(SCALAR_SAMPLE)?)
    })
}

/// `work`'s answer for `key`, computed the first time it is asked and
/// kept in `memo`, with what its evaluations rested on recorded again at
/// each asking.
fn asked<T: Clone>(evals: &Evals<'_, '_>, memo: &mut Asked<T>, key: (ValueId, ValueId, usize), work: impl FnOnce() -> T) -> T {
    if let Some((x, on)) = memo.get(&key) {
        evals.note(on);
        return x.clone();
    }
    let (x, on) = evals.recorded(work);
    memo.insert(key, (x.clone(), on));
    x
}

/// [`linear_in`]'s and [`first_move`]'s answers so far, by value,
/// parameter and iteration, with what their evaluations rested on.
#[derive(Default)]
pub(super) struct Linear {
    forms: Asked<Option<Rc<LinearForm>>>,
    first: Asked<Option<i64>>,
}

/// Answers by value, parameter and iteration, with what they rested on.
type Asked<T> = rustc_hash::FxHashMap<(ValueId, ValueId, usize), (T, Leaves)>;

/// Every thread's value at the sample (the evaluator's list) and the
/// amount it moves per unit of the parameter.
pub(super) type LinearForm = (Rc<Vec<i64>>, Vec<i64>);

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
    use super::{open_interval, racing_values, Side, SCALAR_SAMPLE};

    /// An address `4·(t·q + p)` moves by 4 bytes per unit of `p` in every
    /// thread; found again from the memo, it records the sample of `q` it
    /// rests on as the first asking did; the values pinned at `p` = S + 1
    /// and S + 2 that do not rest on `p` (`t·q`) are the unpinned
    /// evaluator's.
    #[test]
    fn linear_in_once_per_value_with_what_it_rests_on() {
        use crate::memory::{Evals, Query};
        let (f, d) = crate::affine_in_two_params();
        let value = |reg: &str| crate::value_written(f, reg);
        let (p, q, tq, addr) = (value("%r1"), value("%r2"), value("%r4"), value("%r6"));
        let shape = crate::model::Shape::new([64, 1, 1], crate::model::ShapeSource::Cli);
        let evals = Evals::new(f, &d, &shape);
        let unpinned = evals.eval(tq, Query::block(0)).unwrap();
        let mut memo = super::Linear::default();
        let (first, on_first) = evals.recorded(|| super::linear_in(&evals, &mut memo, addr, p, 0));
        let (again, on_again) = evals.recorded(|| super::linear_in(&evals, &mut memo, addr, p, 0));
        let (first, again) = (first.unwrap(), again.unwrap());
        assert!(std::rc::Rc::ptr_eq(&first, &again));
        assert_eq!(first.1, vec![4; 64]);
        assert_eq!(first.0[..3], [4 * SCALAR_SAMPLE, 4 * (SCALAR_SAMPLE + SCALAR_SAMPLE), 4 * (2 * SCALAR_SAMPLE + SCALAR_SAMPLE)]);
        assert_eq!(on_first.iter().collect::<Vec<_>>(), vec![q]);
        assert_eq!(on_again, on_first);
        let pinned = evals.eval(tq, Query { pin: Some((p, SCALAR_SAMPLE + 1)), ..Query::block(0) }).unwrap();
        assert!(std::rc::Rc::ptr_eq(&pinned, &unpinned), "t·q computed again where `p` is pinned");
    }

    /// The first thread of `4·(t·q + p)` moves by 4 bytes per unit of `p`
    /// and not at all with `q` (`t` = 0); asked again, the answer comes
    /// from the memo, with the samples it rested on recorded as the first
    /// asking recorded them.
    #[test]
    fn the_first_threads_move_once_per_value_with_what_it_rests_on() {
        use crate::memory::Evals;
        let (f, d) = crate::affine_in_two_params();
        let value = |reg: &str| crate::value_written(f, reg);
        let (p, q, addr) = (value("%r1"), value("%r2"), value("%r6"));
        let shape = crate::model::Shape::new([64, 1, 1], crate::model::ShapeSource::Cli);
        let evals = Evals::new(f, &d, &shape);
        let mut memo = super::Linear::default();
        let (first, on_first) = evals.recorded(|| super::first_move(&evals, &mut memo, addr, p, 0));
        let (again, on_again) = evals.recorded(|| super::first_move(&evals, &mut memo, addr, p, 0));
        assert_eq!((first, again), (Some(4), Some(4)));
        assert_eq!(on_again, on_first);
        assert_eq!(super::first_move(&evals, &mut memo, addr, q, 0), Some(0));
        assert_eq!(memo.first.len(), 2, "one answer per value, parameter and iteration");
        assert!(memo.forms.is_empty(), "no thread but the first evaluated");
    }

    /// The integers k with lo < k·d < hi, by brute force.
    fn brute(lo: i64, hi: i64, d: i64) -> Vec<i64> {
        (-200..=200).filter(|k| lo < k * d && k * d < hi).collect()
    }

    /// The thread-pair loop [`racing_values`] falls back to.
    fn racing_brute(a: Side<'_>, b: Side<'_>, range: (i64, i64)) -> std::collections::BTreeMap<i64, (usize, usize)> {
        let (la, da, ta, wa) = a;
        let (lb, db, tb, wb) = b;
        let mut values: std::collections::BTreeMap<i64, (usize, usize)> = Default::default();
        for &t1 in ta {
            for &t2 in tb {
                let delta = da[t1] - db[t2];
                if t1 == t2 || delta == 0 {
                    continue;
                }
                let diff = lb[t2] - la[t1];
                let (lo, hi) = open_interval(diff - wb, diff + wa, delta);
                for s in (lo..=hi).map(|k| SCALAR_SAMPLE + k).filter(|s| (range.0..=range.1).contains(s)) {
                    let w = values.entry(s).or_insert((t1, t2));
                    if (t1.max(t2), t1, t2) < (w.0.max(w.1), w.0, w.1) {
                        *w = (t1, t2);
                    }
                }
            }
        }
        values
    }

    #[test]
    fn racing_values_per_distance_are_the_thread_pairs() {
        let n = 48;
        let lines = |c: i64, s: i64| -> Vec<i64> { (0..n as i64).map(|t| c + s * t).collect() };
        let mut solved = 0;
        for (ca, cb, s) in [(0, 0, 4), (0, 12, 4), (8, 0, 4), (0, 4, 8), (0, 0, 0), (3, 0, 2), (0, -40, 4)] {
            for (dla, dlb) in [(4, 0), (0, 4), (-4, 0), (8, 4), (4, 4)] {
                for (wa, wb) in [(4, 4), (8, 4), (4, 8)] {
                    for (ta, tb) in [(0..n, 0..n), (0..16, 8..40), (5..6, 0..n), (0..n, 30..31), (20..21, 20..21)] {
                        let (la, lb) = (lines(ca, s), lines(cb, s));
                        let (da, db) = (vec![dla; n], vec![dlb; n]);
                        let (ta, tb): (Vec<usize>, Vec<usize>) = (ta.collect(), tb.collect());
                        let range = (-1000, 1000);
                        let want = racing_brute((&la, &da, &ta, wa), (&lb, &db, &tb, wb), range);
                        let got = racing_values((&la, &da, &ta, wa), (&lb, &db, &tb, wb), false, range);
                        assert_eq!(got, want, "c {ca}/{cb} s {s} moves {dla}/{dlb} w {wa}/{wb} threads {ta:?} {tb:?}");
                        solved += !want.is_empty() as usize;
                    }
                }
            }
        }
        assert!(solved > 100, "{solved}");
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
