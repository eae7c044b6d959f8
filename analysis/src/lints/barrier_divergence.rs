//! `barrier_divergence`: a barrier not every thread of the block reaches
//! (GPUVerify, seed 004): under a thread-dependent branch, behind a
//! thread-dependent early return, inside a loop with a thread-dependent trip
//! count, or guarded by a thread-dependent predicate. Calls to functions
//! that execute a barrier count as barriers.
//!
//! Owns: finding the controlling branch and saying which threads skip.

use super::warps::{sources, Split};
use super::{registry::BARRIER_DIVERGENCE, Ctx, Finding, Metric};
use crate::divergence::DivBranch;
use crate::ptx::Operand;

pub fn check(ctx: &Ctx<'_, '_>, out: &mut Vec<Finding>) {
    let f = ctx.f;
    let has_barrier = f.insts.iter().any(|i| i.is_block_barrier() || i.call_target().is_some_and(|t| ctx.sums.has_barrier.contains(t)));
    if !has_barrier {
        return;
    }
    let controlled = ctx.controlled();
    for (i, inst) in f.insts.iter().enumerate() {
        let barrier = inst.is_block_barrier() || inst.call_target().is_some_and(|t| ctx.sums.has_barrier.contains(t));
        if !barrier {
            continue;
        }
        let b = f.cfg.block_of[i];
        if !f.cfg.reachable(b) {
            continue;
        }
        let via_call = !inst.is_block_barrier();
        let what = if via_call { "call to a function that executes a barrier" } else { "barrier" };
        // a predicated barrier
        if let Some(g) = inst.ast.guard {
            let gv = ctx.d.operand(f, i, &Operand::Reg(g.reg));
            if gv.is_divergent() {
                let mut fd =
                    ctx.finding(&BARRIER_DIVERGENCE, i, format!("{what} reached under thread-dependent control flow"), String::new());
                fd.note(format!(
                    "the barrier is predicated on `{}{}`, which differs between threads",
                    if g.negated { "!" } else { "" },
                    g.reg
                ));
                fd.help("execute the barrier unconditionally; predicate only the work around it");
                out.push(fd);
                continue;
            }
        }
        // `bar.sync id, count`: only `count` threads (whole warps) take part, so
        // control that is uniform within each warp is fine
        // `barrier.sync` without `.aligned`: warps may arrive from different
        // code locations (warp specialization), also fine under warp-uniform control
        let counted = !via_call && inst.is_warp_granular_barrier();
        let splits_warps = |br: &DivBranch| {
            !ctx.d.at(f, br.cond, br.block).is_warp_uniform()
                && !matches!(ctx.classify(br), Split::Exact { split: 0, .. } | Split::Bounded { split: 0, .. })
        };
        // evaluated for every thread of the block, all take the same side: no one skips
        let proven_uniform =
            |br: &DivBranch| matches!(ctx.classify(br), Split::Exact { ref taken, .. } if taken.iter().all(|t| *t == taken[0]));
        let cause = controlled
            .iter()
            .filter(|(br, cs)| cs.binary_search(&b).is_ok() && (!counted || splits_warps(br)) && !proven_uniform(br))
            .min_by_key(|(_, cs)| cs.len());
        let Some((br, _)) = cause else { continue };
        out.push(report(ctx, i, br, what));
    }
}

fn report(ctx: &Ctx<'_, '_>, i: usize, br: &DivBranch, what: &str) -> Finding {
    let f = ctx.f;
    let cfg = &f.cfg;
    let b = cfg.block_of[i];
    let mut fd = ctx.finding(&BARRIER_DIVERGENCE, i, format!("{what} reached under thread-dependent control flow"), String::new());
    let srcs = sources(f, ctx.d, br.cond);
    let mut on = if srcs.is_empty() { "the thread".to_string() } else { srcs.join(" and ") };
    if ctx.d.at(f, br.cond, br.block) == crate::divergence::AbsVal::WarpUniform {
        on = format!("{on}, which is the same within a warp but differs between warps, so whole warps");
    }
    let cause_pos = ctx.resolve(br.inst).primary;
    let at = cause_pos
        .as_ref()
        .map(|p| format!("the branch at {p}"))
        .unwrap_or_else(|| format!("the branch at PTX line {}", f.insts[br.inst].ast.pos.line));
    let in_loop_exit =
        cfg.loop_of[br.block].filter(|&l| cfg.in_loop(b, l) && cfg.blocks[br.block].succs.iter().any(|&s| !cfg.in_loop(s, l)));
    let split = ctx.classify(br);
    let who = if in_loop_exit.is_some() {
        "the loop around the barrier runs a thread-dependent number of iterations, so threads reach it different numbers of times"
            .to_string()
    } else {
        match &split {
            Split::Exact { taken, .. } => {
                // which side of the branch can reach the barrier?
                let target = branch_target(ctx, br.inst);
                let reaches = |s: usize| reach_without(ctx, s, b, cfg.ipdom(br.block));
                let taken_reaches = target.is_some_and(reaches);
                let fall_reaches = cfg.blocks[br.block].succs.iter().filter(|&&s| Some(s) != target).any(|&s| reaches(s))
                    || (cfg.blocks[br.block].succs.len() == 1 && target.is_none());
                let skip: Vec<bool> = taken.iter().map(|&t| if t { !taken_reaches } else { !fall_reaches }).collect();
                if skip.iter().any(|x| *x) {
                    format!("{} of each block skip this barrier", super::warps::thread_ranges(&skip))
                } else {
                    "some threads skip this barrier".to_string()
                }
            }
            _ => {
                "the threads that take its other side skip this barrier (which ones depends on a value known only at run time)".to_string()
            }
        }
    };
    fd.note(format!("{at} depends on {on}; {who}"));
    if let Some(p) = cause_pos {
        fd.secondary.push((p, "thread-dependent branch".to_string()));
    }
    ctx.shape_note(&mut fd);
    fd.help("move the barrier out of the conditional so that every thread of the block reaches it");
    if let Some(n) = split.split(ctx.shape.warps()) {
        fd.metrics.push(("diverging_warps", Metric::Int(n as i64)));
    }
    fd.metrics.push(("warps_per_block", Metric::Int(ctx.shape.warps() as i64)));
    fd
}

/// Block a `bra` jumps to.
pub(super) fn branch_target(ctx: &Ctx<'_, '_>, i: usize) -> Option<usize> {
    let l = ctx.f.insts[i].branch_label()?;
    ctx.f.labels.get(l).filter(|&&x| x < ctx.f.insts.len()).map(|&x| ctx.f.cfg.block_of[x])
}

/// Can block `from` reach block `to` without passing `stop`?
pub(super) fn reach_without(ctx: &Ctx<'_, '_>, from: usize, to: usize, stop: Option<usize>) -> bool {
    ctx.f.cfg.region(&[from], stop).binary_search(&to).is_ok()
}
