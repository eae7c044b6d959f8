//! `shared_memory_opportunity` (pedantic): global arrays whose bytes are
//! read several times by the threads of one block (Juravle §5.2): the block
//! requests at least twice its footprint.
//!
//! Owns: grouping loads by base and computing footprint vs requested bytes.

use super::{registry::SHARED_MEMORY_OPPORTUNITY, Ctx, Finding, Metric};
use crate::divergence::AbsVal;
use crate::ir::space::Space;
use crate::memory::AccessKind;
use std::collections::BTreeMap;

pub fn check(ctx: &Ctx<'_, '_>, out: &mut Vec<Finding>) {
    // loads grouped by their base symbol (a kernel parameter, a global)
    let mut groups: BTreeMap<u32, Vec<usize>> = BTreeMap::new();
    for (k, (a, p)) in ctx.memory().iter().enumerate() {
        if a.space != Space::Global || a.kind != AccessKind::Load || p.is_none() {
            continue;
        }
        if let AbsVal::Affine { s: Some(sym), k: Some(_), .. } = a.addr {
            groups.entry(sym).or_default().push(k);
        }
    }
    for members in groups.values() {
        let mut requested = 0u64;
        let mut bytes: Vec<(i64, i64)> = Vec::new();
        for &k in members {
            let (a, p) = &ctx.memory()[k];
            let Some(p) = p else { continue };
            for off in p.offsets.iter().flatten() {
                requested += a.width as u64;
                bytes.push((*off, *off + a.width as i64));
            }
        }
        bytes.sort_unstable();
        let mut footprint = 0i64;
        let mut cur: Option<(i64, i64)> = None;
        for (s, e) in bytes {
            cur = match cur {
                Some((cs, ce)) if s <= ce => Some((cs, ce.max(e))),
                Some((cs, ce)) => {
                    footprint += ce - cs;
                    Some((s, e))
                }
                None => Some((s, e)),
            };
        }
        if let Some((cs, ce)) = cur {
            footprint += ce - cs;
        }
        if footprint <= 0 || (requested as i64) < 2 * footprint {
            continue;
        }
        let first = ctx.memory()[members[0]].0.inst;
        let reuse = requested as f64 / footprint as f64;
        let message = format!("each block reads {requested} bytes of this array but only {footprint} distinct: every byte is read {reuse:.1} times");
        let mut fd = ctx.finding(&SHARED_MEMORY_OPPORTUNITY, first, message, format!("{} load{} of the same array", members.len(), if members.len() == 1 { "" } else { "s" }));
        ctx.shape_note(&mut fd);
        fd.help(format!("stage the block's {footprint}-byte footprint in shared memory once, synchronise, and read it from there"));
        fd.metrics.push(("footprint_bytes", Metric::Int(footprint)));
        fd.metrics.push(("requested_bytes", Metric::Int(requested as i64)));
        out.push(fd);
    }
}
