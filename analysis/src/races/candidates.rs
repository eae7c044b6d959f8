//! Which pairs of accesses to one pointer in one barrier interval are worth
//! comparing thread by thread, found without looking at every pair.
//!
//! Fully unrolled loops put thousands of accesses through one pointer
//! between two barriers; comparing every pair thread by thread costs
//! pairs × threads. Here the accesses are first grouped into classes of
//! identical addresses (the same bytes in the same threads in both sampled
//! iterations: a row of 16 elements a thread revisits is 16 classes,
//! whatever the unrolling), the classes are swept in order of their byte
//! ranges (only classes whose ranges overlap are compared), and two
//! classes are compared exactly: when both address lists are lines of one
//! stride in the thread index (`c + s·t`, the common case) by solving
//! `−w_b < (c_b − c_a) − s·(t_a − t_b) < w_a` for `t_a ≠ t_b`, which costs
//! nothing per thread; two copies of one list at other offsets (an
//! unrolled loop's access at permuted addresses), once the list has been
//! compared often enough to pay for it, by looking their offsets'
//! difference up among the distances between two threads' addresses
//! ([`Distances`]); otherwise by the sorted sweep. A pair of classes
//! that meets for two different threads yields its members' pairs; one
//! that does not yields none, which is exactly when no member pair could
//! race at the samples (the same or consecutive iterations).
//!
//! Owns: the classes, the sweep over their ranges, the line test. Does
//! not own: which pairs are possible at all (kinds, spaces: the caller's
//! `emit`), pairs that need other samples (parameters, later iterations:
//! the caller adds them), or the witness (the thread-by-thread check).

use super::{sweep, Addresses, Sorted};
use rustc_hash::FxHashMap;

/// Addresses that lie on a line in the thread index: `c + s·t` for every
/// thread `t` that executes the access, all of them in `lo..=hi`;
/// `dense`: every thread of `lo..=hi` executes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Line {
    c: i64,
    s: i64,
    lo: usize,
    hi: usize,
    dense: bool,
}

/// The line through a sorted address list, when there is one.
fn line(v: &Sorted) -> Option<Line> {
    let mut all = v.iter();
    let (a0, t0) = all.next()?;
    let (mut lo, mut hi) = (t0, t0);
    let mut s: Option<i64> = None;
    let mut prev = (a0, t0);
    for (a, t) in all {
        let dt = t as i64 - prev.1 as i64;
        let da = a - prev.0;
        if dt == 0 || da % dt != 0 {
            return None;
        }
        match s {
            None => s = Some(da / dt),
            Some(s) if s * dt == da => {}
            Some(_) => return None,
        }
        (lo, hi) = (lo.min(t), hi.max(t));
        prev = (a, t);
    }
    let s = s.unwrap_or(0);
    Some(Line { c: a0 - s * t0 as i64, s, lo, hi, dense: hi - lo + 1 == v.len() })
}

/// Can two threads `t_a ≠ t_b` of lines `a` and `b` of one stride touch a
/// common byte (`a` `wa` bytes wide, `b` `wb`)? `Some(answer)` where the
/// hulls of the threads decide it exactly (`false` always does: the hull
/// holds every thread), `None` where a sweep must.
fn lines_meet(a: Line, wa: i64, b: Line, wb: i64) -> Option<bool> {
    if a.s != b.s {
        return None;
    }
    // B − A = (c_b − c_a) − s·δ with δ = t_a − t_b; −wb < B − A < wa
    let dc = b.c - a.c;
    let (dlo, dhi) = (a.lo as i64 - b.hi as i64, a.hi as i64 - b.lo as i64);
    let (klo, khi) = if a.s == 0 {
        if -wb < dc && dc < wa {
            (dlo, dhi)
        } else {
            return Some(false);
        }
    } else {
        // s·δ in (dc − wa, dc + wb)
        super::param::open_interval(dc - wa, dc + wb, a.s)
    };
    let (lo, hi) = (klo.max(dlo), khi.min(dhi));
    let some_nonzero = lo <= hi && !(lo == 0 && hi == 0);
    if !some_nonzero {
        return Some(false);
    }
    // every thread of both hulls runs it: any δ in range is two real threads
    (a.dense && b.dense).then_some(true)
}

/// Per address list (by where it is kept), how often two copies of it at
/// other offsets were compared, and, once that has cost more than the
/// list's pairs, the distances between two threads' addresses in it: the
/// copies of an unrolled loop's access at permuted addresses (no line)
/// are then compared by looking their offsets' difference up, not swept.
#[derive(Default)]
pub(super) struct Distances(FxHashMap<usize, (usize, Option<Distance>)>);

/// The distances `x − y` between the addresses `x`, `y` of two different
/// threads of one list: a bit per distance from `-span` to `span`.
struct Distance {
    span: i64,
    bits: crate::ir::dataflow::BitSet,
}

/// The widest list span whose distances are kept (its bits: 2 × span, 16
/// KB: a block's shared memory, a tile of a global array).
const MAX_SPAN: i64 = 1 << 16;

impl Distances {
    /// Do two copies of one list, moved by `sx` (`wx` bytes wide) and `sy`
    /// (`wy`), touch a common byte in two different threads? `None` while
    /// a sweep is cheaper than the list's distances.
    fn meet(&mut self, list: &[(i64, usize)], (sx, wx): (i64, i64), (sy, wy): (i64, i64)) -> Option<bool> {
        let n = list.len();
        let (first, last) = (list.first()?.0, list.last()?.0);
        let span = last.checked_sub(first).filter(|&s| s <= MAX_SPAN)?;
        let (asked, made) = self.0.entry(list.as_ptr() as usize).or_default();
        *asked += 1;
        // (a sweep costs about the list's length; the distances its square, once)
        if made.is_none() && *asked * n * 8 >= n * n {
            let mut bits = crate::ir::dataflow::BitSet::new(2 * span as usize + 1);
            for (i, &(x, _)) in list.iter().enumerate() {
                for (j, &(y, _)) in list.iter().enumerate() {
                    if i != j {
                        bits.insert((x - y + span) as usize);
                    }
                }
            }
            *made = Some(Distance { span, bits });
        }
        let d = made.as_ref()?;
        // x + sx < y + sy + wy and y + sy < x + sx + wx: sy − sx − wx < x − y < sy − sx + wy
        let apart = sy.checked_sub(sx)?.clamp(-2 * MAX_SPAN, 2 * MAX_SPAN);
        let (lo, hi) = ((apart - wx + 1).max(-d.span), (apart + wy - 1).min(d.span));
        Some((lo..=hi).any(|k| d.bits.contains((k + d.span) as usize)))
    }
}

/// One sample of a class: the addresses and their line.
type Sample<'x> = Option<(&'x Sorted, Option<Line>)>;

/// Accesses with identical addresses and width.
struct Class<'x> {
    members: Vec<usize>,
    width: i64,
    samples: [Sample<'x>; 2],
    /// First byte and past the last, over both samples.
    lo: i64,
    hi: i64,
}

/// Do two samples touch a common byte in two different threads?
fn samples_meet(x: Sample<'_>, wx: i64, y: Sample<'_>, wy: i64, distances: &mut Distances) -> bool {
    let (Some((vx, lx)), Some((vy, ly))) = (x, y) else { return false };
    let (Some(fx), Some(lastx), Some(fy), Some(lasty)) = (vx.first(), vx.last(), vy.first(), vy.last()) else { return false };
    if lastx.0 + wx <= fy.0 || lasty.0 + wy <= fx.0 {
        return false;
    }
    if let (Some(a), Some(b)) = (lx, ly) {
        if let Some(answer) = lines_meet(a, wx, b, wy) {
            return answer;
        }
    }
    let ((xs, sx), (ys, sy)) = (vx.parts(), vy.parts());
    if std::ptr::eq(xs, ys) {
        if let Some(answer) = distances.meet(xs, (sx, wx), (sy, wy)) {
            return answer;
        }
    }
    sweep((xs, sx), (ys, sy), wx as u32, wy as u32, &|t1, t2| t1 != t2, true).is_some()
}

/// Can members of the two classes race at the samples: in the same
/// iteration, or one iteration apart?
fn classes_meet(x: &Class<'_>, y: &Class<'_>, distances: &mut Distances) -> bool {
    let (wx, wy) = (x.width, y.width);
    [(0, 0), (1, 1), (0, 1), (1, 0)].into_iter().any(|(i, j)| samples_meet(x.samples[i], wx, y.samples[j], wy, distances))
}

/// Every pair `(a, b)` of `ks` (an access with itself too) whose
/// addresses (`addrs`, `width`) meet for two different threads at the
/// samples, each once, to `emit`. Cost: the classes' sweep, plus the
/// pairs emitted.
pub(super) fn meeting(
    ks: &[usize],
    addrs: &[Option<Addresses>],
    width: &dyn Fn(usize) -> u32,
    distances: &mut Distances,
    emit: &mut dyn FnMut(usize, usize),
) {
    // (lists made together are one allocation when equal: their pointers and shifts are the key)
    type Key = (u32, [Option<(usize, i64)>; 2]);
    let mut index: FxHashMap<Key, usize> = FxHashMap::default();
    let mut classes: Vec<Class<'_>> = Vec::new();
    for &k in ks {
        let Some(a) = addrs[k].as_ref() else { continue };
        let w = width(k);
        let key = |s: usize| a.get(s).and_then(|x| x.as_ref()).map(Sorted::key);
        let c = *index.entry((w, [key(0), key(1)])).or_insert_with(|| {
            let sample = |s: usize| -> Sample<'_> { a.get(s)?.as_ref().map(|v| (v, line(v))) };
            let samples = [sample(0), sample(1)];
            let (lo, hi) = samples.iter().flatten().fold((i64::MAX, i64::MIN), |(lo, hi), (v, _)| {
                (lo.min(v.first().map_or(i64::MAX, |x| x.0)), hi.max(v.last().map_or(i64::MIN, |x| x.0 + w as i64)))
            });
            classes.push(Class { members: Vec::new(), width: w as i64, samples, lo, hi });
            classes.len() - 1
        });
        classes[c].members.push(k);
    }
    classes.retain(|c| c.lo < c.hi);
    classes.sort_by_key(|c| (c.lo, c.hi));
    let pairs_of = |x: &Class<'_>, y: &Class<'_>, emit: &mut dyn FnMut(usize, usize)| {
        for &a in &x.members {
            for &b in &y.members {
                emit(a, b);
            }
        }
    };
    // the classes whose ranges are still open at the current class's start
    let mut open: Vec<usize> = Vec::new();
    for i in 0..classes.len() {
        let x = &classes[i];
        open.retain(|&j| classes[j].hi > x.lo);
        for &j in &open {
            if classes_meet(&classes[j], x, distances) {
                pairs_of(&classes[j], x, emit);
            }
        }
        if classes_meet(x, x, distances) {
            for (p, &a) in x.members.iter().enumerate() {
                for &b in &x.members[p..] {
                    emit(a, b);
                }
            }
        }
        open.push(i);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn brute(a: &Sorted, wa: i64, b: &Sorted, wb: i64) -> bool {
        a.iter().any(|(x, t1)| b.iter().any(|(y, t2)| t1 != t2 && x < y + wb && y < x + wa))
    }

    thread_local! {
        static LISTS: std::cell::RefCell<super::super::Lists> = Default::default();
    }

    fn list(c: i64, s: i64, threads: impl Iterator<Item = usize>) -> Sorted {
        let mut per_thread = vec![None; 64];
        threads.for_each(|t| per_thread[t] = Some(c + s * t as i64));
        LISTS.with(|l| Sorted::new(per_thread.iter().copied(), &mut l.borrow_mut()))
    }

    #[test]
    fn lines_decide_as_the_threads_do() {
        let mut decided = 0;
        for s in [-8, -4, -1, 0, 1, 2, 4, 12] {
            for c in [-70, -33, -4, -1, 0, 1, 3, 4, 8, 64, 200] {
                for (wa, wb) in [(4, 4), (1, 4), (8, 4), (2, 2)] {
                    for (alo, ahi, blo, bhi) in [(0, 15, 0, 15), (0, 0, 0, 0), (3, 3, 5, 5), (0, 7, 8, 15), (2, 9, 0, 3)] {
                        let a = list(0, s, alo..=ahi);
                        let b = list(c, s, blo..=bhi);
                        let want = brute(&a, wa, &b, wb);
                        let got = samples_meet(Some((&a, line(&a))), wa, Some((&b, line(&b))), wb, &mut Distances::default());
                        assert_eq!(got, want, "s {s} c {c} w {wa}/{wb} threads {alo}..={ahi} / {blo}..={bhi}");
                        // and the sweep alone (no line test), which stops at the first pair
                        let swept = samples_meet(Some((&a, None)), wa, Some((&b, None)), wb, &mut Distances::default());
                        assert_eq!(swept, want, "swept: s {s} c {c} w {wa}/{wb} threads {alo}..={ahi} / {blo}..={bhi}");
                        decided += lines_meet(line(&a).unwrap(), wa, line(&b).unwrap(), wb).is_some() as usize;
                    }
                }
            }
        }
        // most of them without a sweep
        assert!(decided > 1000, "{decided}");
        // threads with a gap: the hull is not the set, a sweep decides
        let a = list(0, 4, [0, 2, 4].into_iter());
        let b = list(4, 4, [0, 2, 4].into_iter());
        assert!(!samples_meet(Some((&a, line(&a))), 4, Some((&b, line(&b))), 4, &mut Distances::default()));
        let mut bent = [None; 4];
        (bent[1], bent[2], bent[3]) = (Some(0), Some(5), Some(7));
        assert!(line(&LISTS.with(|l| Sorted::new(bent, &mut l.borrow_mut()))).is_none());
    }

    #[test]
    fn copies_of_one_list_meet_by_their_distances_as_the_sweep_finds() {
        // permuted addresses (no line), some threads at one address, copies at other offsets
        let mut next = crate::xorshift(0x2545_f491_4f6c_dd1d);
        let mut looked_up = 0;
        for _ in 0..40 {
            let n = 4 + next(40) as usize;
            let per_thread: Vec<Option<i64>> = (0..n).map(|_| (next(5) != 0).then(|| 4 * next(2 * n as u64) as i64)).collect();
            let base = LISTS.with(|l| Sorted::new(per_thread.iter().copied(), &mut l.borrow_mut()));
            let mut distances = Distances::default();
            for _ in 0..60 {
                let (a, b) = (base.shifted(4 * next(8) as i64 - 16), base.shifted(4 * next(8) as i64 - 16));
                let (wa, wb) = ([1, 2, 4, 8][next(4) as usize], [1, 4, 8, 16][next(4) as usize]);
                let got = samples_meet(Some((&a, None)), wa, Some((&b, None)), wb, &mut distances);
                assert_eq!(got, brute(&a, wa, &b, wb), "{per_thread:?} {:?}/{wa} {:?}/{wb}", a.first(), b.first());
                looked_up += distances.0.values().filter(|x| x.1.is_some()).count();
            }
        }
        // (most answers came from the distances once made)
        assert!(looked_up > 1000, "{looked_up}");
    }

    #[test]
    fn only_classes_that_meet_yield_pairs() {
        // three rows of a thread's own 4 elements, each access twice, and one store to every
        // thread's element 0 from thread 0 (a broadcast that meets every row-0 access)
        let own = |i: i64| Some(vec![Some(list(4 * i, 16, 0..8)), Some(list(4 * i, 16, 0..8))]);
        let mut addrs: Vec<Option<Addresses>> = (0..8).map(|k| own(k % 4)).collect();
        addrs.push(Some(vec![Some(list(16, 0, 0..1)), None]));
        let mut got = Vec::new();
        meeting(&(0..9).collect::<Vec<_>>(), &addrs, &|_| 4, &mut Distances::default(), &mut |a, b| got.push((a.min(b), a.max(b))));
        got.sort_unstable();
        // thread 0 writes element 0 of thread 1's row: rows 0 (accesses 0, 4) meet it
        assert_eq!(got, vec![(0, 8), (4, 8)]);
    }
}
