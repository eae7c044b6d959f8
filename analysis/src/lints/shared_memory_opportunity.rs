//! `shared_memory_opportunity` (pedantic): global arrays whose bytes are
//! read several times by the threads of one block (Juravle §5.2): the
//! block's thread-dependent loads of one array request at least twice
//! their footprint (stencils, naive matrix products).
//!
//! Owns: grouping loads by their root pointer and comparing the bytes a
//! block requests with its footprint, from per-thread addresses evaluated
//! with the same values for every load (so relative offsets are exact).

use super::{Findings, LintCx, Metric};
use crate::divergence::eval::{EvalErr, Evaluator};
use crate::ir::inst::{AccessKind, Space};
use crate::ir::ValueId;
use crate::ir::values::root;
use crate::memory::{Evals, SYMBOLIC_STRIDE};
use crate::model::{covered_bytes, merged};
use std::collections::BTreeMap;

declare_lint! {
    /// ### What it does
    /// Finds global loads of one array whose threads, together, read the same
    /// bytes several times within a block (stencils reading `a[i-1]`, `a[i]`,
    /// `a[i+1]`; a naive matrix product reading a row for every column), and
    /// reports the block's footprint: the distinct bytes it needs against the
    /// bytes it requests (Juravle, §5.2).
    ///
    /// ### Why is this bad
    /// Each repeated read goes to the memory system again; loading the footprint
    /// once into shared memory and reading it from there saves bandwidth.
    ///
    /// ### Example
    /// ```rust
    /// let i = gid();
    /// *out.add(i) = *a.add(i - 1) + *a.add(i) + *a.add(i + 1);
    /// ```
    /// Use instead: stage the block's footprint (blockDim.x + 2 elements) in
    /// shared memory, synchronise, then read the neighbours from there.
    pub static SHARED_MEMORY_OPPORTUNITY = {
        name: "shared_memory_opportunity",
        group: Pedantic,
        default: Allow,
        summary: "a block's loads of one array request ≥ 2× their footprint (stencils, naive matmul)",
    }
}

pub fn check(cx: &LintCx<'_, '_, '_>, out: &mut Findings) {
    let (f, d, shape) = (cx.facts.f, cx.facts.d, cx.facts.shape);
    let accesses = &cx.facts.accesses;
    let mut groups: BTreeMap<ValueId, Vec<usize>> = BTreeMap::new();
    for (k, x) in accesses.iter().enumerate() {
        let a = &x.access;
        if a.space != Space::Global || a.kind != AccessKind::Load || x.prediction.is_none() || a.addr.is_uniform() {
            continue;
        }
        if let Some(v) = a.addr_value {
            groups.entry(root(f, v)).or_default().push(k);
        }
    }
    let lanes = shape.lanes();
    let evals = Evals::new(f, d, shape);
    for (base, members) in groups {
        let mut ev = Evaluator::new(f, d, shape.block, lanes);
        ev.add_leaf(base, 0);
        // each load's addresses, offset, width and threads (a thread re-reading its own bytes
        // is not reuse), and the byte ranges they cover
        let mut loaded: Vec<(std::rc::Rc<Vec<i64>>, i64, i64, &crate::memory::Offsets)> = Vec::new();
        let mut runs: Vec<(i64, i64)> = Vec::new();
        let mut seen: rustc_hash::FxHashMap<(usize, i64, i64), Vec<usize>> = Default::default();
        // the leaves no evaluation could give a value, given one here
        let mut guessed: Vec<(ValueId, i64)> = Vec::new();
        for &k in &members {
            let x = &accesses[k];
            let (Some(v), Some(p)) = (x.access.addr_value, &x.prediction) else { continue };
            let vals = loop {
                match ev.values(v) {
                    Ok(x) => break Some(x),
                    Err(EvalErr::Leaf(l)) if ev.leaf(l).is_none() => {
                        // the same value for a leaf in every load of the group
                        let val = evals.uniform_value(l).unwrap_or_else(|| {
                            guessed.push((l, SYMBOLIC_STRIDE * 16));
                            SYMBOLIC_STRIDE * 16
                        });
                        ev.add_leaf(l, val);
                    }
                    _ => break None,
                }
            };
            let Some(vals) = vals else { continue };
            let active: Vec<usize> = (0..vals.len()).filter(|&t| p.offsets.get(t).is_some()).collect();
            // the same address in every thread is a broadcast, not a staging opportunity
            if active.iter().all(|&t| vals[t] == vals[active[0]]) {
                continue;
            }
            let (offset, width) = (x.access.offset, x.access.width as i64);
            // a load of the same bytes in the same threads as one before it adds nothing
            let same = |l: &(std::rc::Rc<Vec<i64>>, i64, i64, &crate::memory::Offsets)| {
                std::rc::Rc::ptr_eq(&l.0, &vals) && l.1 == offset && l.2 == width && *l.3 == p.offsets
            };
            let key = (std::rc::Rc::as_ptr(&vals) as usize, offset, width);
            if seen.get(&key).is_some_and(|ks| ks.iter().any(|&i| same(&loaded[i]))) {
                continue;
            }
            seen.entry(key).or_default().push(loaded.len());
            runs.extend(merged(active.iter().map(|&t| (vals[t] + offset, vals[t] + offset + width)).collect()));
            loaded.push((vals, offset, width, &p.offsets));
        }
        // per thread, the distinct ranges it reads (one thread at a time: the group's loads × the
        // block's threads are never held at once)
        let mut requested: u64 = 0;
        let mut mine: Vec<(i64, i64)> = Vec::new();
        for t in 0..lanes.len() {
            mine.clear();
            mine.extend(loaded.iter().filter(|x| x.3.get(t).is_some()).map(|(vals, offset, width, _)| (vals[t] + offset, vals[t] + offset + width)));
            mine.sort_unstable();
            mine.dedup();
            requested += mine.iter().map(|r| (r.1 - r.0) as u64).sum::<u64>();
        }
        let footprint = covered_bytes(&mut runs);
        if footprint <= 0 || (requested as i64) < 2 * footprint {
            continue;
        }
        let first = accesses[members[0]].access.inst;
        let reuse = requested as f64 / footprint as f64;
        let message =
            format!("each block reads {requested} bytes of this array but only {footprint} distinct: every byte is read {reuse:.1} times");
        let label = format!("{} load{} of the same array", members.len(), if members.len() == 1 { "" } else { "s" });
        let mut fd = cx.finding(&SHARED_MEMORY_OPPORTUNITY, first, message, label);
        fd.assumes = cx.facts.assumes_all(members.iter().map(|&k| &accesses[k]));
        fd.assumes.extend(crate::facts::assume::of_samples(f, d, &guessed, first));
        cx.shape_note(&mut fd);
        fd.help(format!("stage the block's {footprint}-byte footprint in shared memory once, synchronise, and read it from there"));
        fd.metrics.push(("footprint_bytes", Metric::Int(footprint)));
        fd.metrics.push(("requested_bytes", Metric::Int(requested as i64)));
        out.push(fd);
    }
}
