//! `divergent_branch`: thread-dependent branches that split most warps.
//!
//! Owns: the decision rule. A branch is reported when more than one warp of
//! a block takes both paths (or the only warp does, for a condition that is
//! not a boundary check), or when a loop's trip count varies within a warp.
//! Boundary checks (≤ 1 warp), single-lane branches and data-dependent
//! branches (unpredictable statically) are not reported.

use super::warps::{sources, Split};
use super::{registry::DIVERGENT_BRANCH, Ctx, Finding, Metric};

pub fn check(ctx: &Ctx<'_, '_>, out: &mut Vec<Finding>) {
    let f = ctx.f;
    let warps = ctx.shape.warps();
    for br in &ctx.d.branches {
        if !f.insts[br.inst].is_jump() {
            continue;
        }
        // the same in every lane of a warp: no warp is split
        if ctx.d.at(f, br.cond, br.block).is_warp_uniform() {
            continue;
        }
        let split = ctx.classify(br);
        let report = match &split {
            Split::Exact { split, single_lane, .. } => !single_lane && (*split >= 2 || (warps == 1 && *split == 1)),
            Split::Bounded { split, single_lane } => !single_lane && *split >= 2,
            Split::TripCount => true,
            Split::Unknown { .. } => false,
        };
        if !report {
            continue;
        }
        let n = split.split(warps).unwrap_or(warps);
        let srcs = sources(f, ctx.d, br.cond);
        let on = if srcs.is_empty() { "the thread".to_string() } else { srcs.join(" and ") };
        let (message, label) = match &split {
            Split::TripCount => (
                "loop exit depends on the thread: lanes of a warp run different numbers of iterations".to_string(),
                format!("the iteration count depends on {on}"),
            ),
            _ => (format!("branch splits {n} of {warps} warps in each block"), format!("condition depends on {on}")),
        };
        let mut fd = ctx.finding(&DIVERGENT_BRANCH, br.inst, message, label);
        match &split {
            Split::Exact { witness, .. } if !witness.is_empty() => {
                let w: Vec<String> = witness.iter().map(|(r, v)| format!("`{r}` = {v}")).collect();
                fd.note(format!("counted with {} (a loop counter or block index; other values may split fewer warps)", w.join(", ")));
            }
            Split::Bounded { .. } => {
                fd.note("the bound is not known statically: this is the worst case over all its values");
            }
            Split::TripCount => {
                fd.note("each warp waits for its slowest lane; the lanes that have left the loop idle meanwhile");
            }
            _ => {}
        }
        ctx.shape_note(&mut fd);
        fd.help("make the condition the same for the 32 consecutive threads of a warp (e.g. branch on `threadIdx.x / 32`), or reorder the data so that neighbouring threads take the same path");
        fd.metrics.push(("diverging_warps", Metric::Int(n as i64)));
        fd.metrics.push(("warps_per_block", Metric::Int(warps as i64)));
        fd.metrics.push(("divergent_fraction", Metric::Float(if warps > 0 { n as f64 / warps as f64 } else { 0.0 })));
        fd.metrics.push(("block", Metric::Text(format!("{:?}", ctx.shape.block))));
        out.push(fd);
    }
}
