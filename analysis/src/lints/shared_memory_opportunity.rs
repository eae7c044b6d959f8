//! `shared_memory_opportunity` (pedantic): global arrays whose bytes are
//! read several times by the threads of one block (Juravle §5.2): the
//! block's thread-dependent loads of one array request at least twice
//! their footprint (stencils, naive matrix products).
//!
//! Owns: grouping loads by their root pointer and comparing the bytes a
//! block requests with its footprint, from per-thread addresses evaluated
//! with the same values for every load (so relative offsets are exact).

use super::{registry::SHARED_MEMORY_OPPORTUNITY, Ctx, Finding, Metric};
use crate::divergence::eval::{EvalErr, Evaluator};
use crate::ir::space::Space;
use crate::ir::ValueId;
use crate::memory::{covered_bytes, root, symbol_value, AccessKind, SYMBOLIC_STRIDE};
use std::collections::{BTreeMap, HashMap};

pub fn check(ctx: &Ctx<'_, '_>, out: &mut Vec<Finding>) {
    let f = ctx.f;
    let mut groups: BTreeMap<ValueId, Vec<usize>> = BTreeMap::new();
    for (k, (a, p)) in ctx.memory().iter().enumerate() {
        if a.space != Space::Global || a.kind != AccessKind::Load || p.is_none() || a.addr.is_uniform() {
            continue;
        }
        if let Some(v) = a.addr_value {
            groups.entry(root(f, v)).or_default().push(k);
        }
    }
    let lanes = ctx.shape.lanes();
    for (base, members) in groups {
        let mut ev = Evaluator::new(f, ctx.d, ctx.shape.block, lanes.to_vec());
        let mut leaves: HashMap<ValueId, i64> = HashMap::new();
        leaves.insert(base, 0);
        // (thread, start, end): a thread re-reading its own bytes is not reuse
        let mut reads: Vec<(usize, i64, i64)> = Vec::new();
        for &k in &members {
            let (a, p) = &ctx.memory()[k];
            let (Some(v), Some(p)) = (a.addr_value, p) else { continue };
            let vals = loop {
                ev.set_leaves(leaves.clone());
                match ev.values(v) {
                    Ok(x) => break Some(x),
                    Err(EvalErr::Leaf(x)) if !leaves.contains_key(&x) => {
                        // the same value for a leaf in every load of the group
                        let val = symbol_value(f, ctx.d, ctx.shape, x).unwrap_or(SYMBOLIC_STRIDE * 16);
                        leaves.insert(x, val);
                    }
                    _ => break None,
                }
            };
            let Some(vals) = vals else { continue };
            let active: Vec<usize> = (0..vals.len()).filter(|&t| p.offsets.get(t).is_some_and(|o| o.is_some())).collect();
            // the same address in every thread is a broadcast, not a staging opportunity
            if active.iter().all(|&t| vals[t] == vals[active[0]]) {
                continue;
            }
            for t in active {
                let addr = vals[t] + a.offset;
                reads.push((t, addr, addr + a.width as i64));
            }
        }
        reads.sort_unstable();
        reads.dedup();
        let requested: u64 = reads.iter().map(|r| (r.2 - r.1) as u64).sum();
        let footprint = covered_bytes(reads.iter().map(|r| (r.1, r.2)).collect());
        if footprint <= 0 || (requested as i64) < 2 * footprint {
            continue;
        }
        let first = ctx.memory()[members[0]].0.inst;
        let reuse = requested as f64 / footprint as f64;
        let message =
            format!("each block reads {requested} bytes of this array but only {footprint} distinct: every byte is read {reuse:.1} times");
        let label = format!("{} load{} of the same array", members.len(), if members.len() == 1 { "" } else { "s" });
        let mut fd = ctx.finding(&SHARED_MEMORY_OPPORTUNITY, first, message, label);
        ctx.shape_note(&mut fd);
        fd.help(format!("stage the block's {footprint}-byte footprint in shared memory once, synchronise, and read it from there"));
        fd.metrics.push(("footprint_bytes", Metric::Int(footprint)));
        fd.metrics.push(("requested_bytes", Metric::Int(requested as i64)));
        out.push(fd);
    }
}
