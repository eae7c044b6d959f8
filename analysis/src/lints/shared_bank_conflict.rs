//! `shared_bank_conflict`: shared accesses with a predicted conflict degree
//! of 2 or more.
//!
//! Owns: the decision and the message (degree, stride, padding advice).

use super::uncoalesced_global_access::describe_strides;
use super::{registry::SHARED_BANK_CONFLICT, Ctx, Finding, Metric};
use crate::ir::space::Space;

pub fn check(ctx: &Ctx<'_, '_>, out: &mut Vec<Finding>) {
    for (a, p) in ctx.memory() {
        let Some(p) = p else { continue };
        if a.space != Space::Shared || p.conflict.0 < 2 {
            continue;
        }
        let stride = p.lane_stride.unwrap_or(0).abs();
        let how = if stride > 0 { format!(": lanes stride {stride} bytes") } else { String::new() };
        let message = format!("{}-way shared memory bank conflict{how}", p.conflict.0);
        let label = describe_strides(p.strides, a.width, ctx.shape.block);
        let mut fd = ctx.finding(&SHARED_BANK_CONFLICT, a.inst, message, label);
        fd.note(format!(
            "each warp request is split into {} transactions ({} warps per block; worst warp {}-way)",
            p.conflict.0, p.requests, p.conflict.1
        ));
        ctx.shape_note(&mut fd);
        if stride > 0 && stride % 128 == 0 {
            let words = stride / 4;
            fd.help(format!("pad the row to {} words so that consecutive lanes fall in different banks", words + 1));
        } else {
            fd.help("make consecutive lanes access consecutive 4-byte words (or the same word), e.g. by padding rows by one word");
        }
        fd.metrics.push(("conflict_degree", Metric::Int(p.conflict.0 as i64)));
        fd.metrics.push(("worst_conflict_degree", Metric::Int(p.conflict.1 as i64)));
        fd.metrics.push(("requests", Metric::Int(p.requests as i64)));
        fd.metrics.push(("bytes_per_lane", Metric::Int(a.width as i64)));
        out.push(fd);
    }
}
