//! `shared_memory_opportunity` (pedantic): global arrays whose bytes are
//! read several times by the threads of one block (Juravle §5.2): the
//! block's thread-dependent loads of one array request at least twice
//! their footprint (stencils, naive matrix products).
//!
//! Owns: grouping loads by their root pointer and comparing the bytes a
//! block requests with its footprint, from per-thread addresses evaluated
//! with the same values for every load (so relative offsets are exact).

use super::{Finding, LintCx, Metric};
use crate::divergence::eval::{EvalErr, Evaluator};
use crate::ir::inst::{AccessKind, Space};
use crate::ir::ValueId;
use crate::ir::values::root;
use crate::memory::{Evals, SYMBOLIC_STRIDE};
use crate::model::covered_bytes;
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

pub fn check(cx: &LintCx<'_, '_, '_>, out: &mut Vec<Finding>) {
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
        // (thread, start, end): a thread re-reading its own bytes is not reuse
        let mut reads: Vec<(usize, i64, i64)> = Vec::new();
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
            for t in active {
                let addr = vals[t] + x.access.offset;
                reads.push((t, addr, addr + x.access.width as i64));
            }
        }
        reads.sort_unstable();
        reads.dedup();
        let requested: u64 = reads.iter().map(|r| (r.2 - r.1) as u64).sum();
        let footprint = covered_bytes(reads.iter().map(|r| (r.1, r.2)).collect());
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
