//! `divergent_branch`: thread-dependent branches whose splits cost a
//! share of the kernel worth changing.
//!
//! Owns: the decision rule. A branch is a candidate when more than one warp
//! of a block takes both paths (or the only warp does), or when a loop's
//! trip count varies within a warp; single-lane branches and data-dependent
//! ones are not. A candidate is `divergent_branch` when the lane-slots its
//! splits leave idle (`crate::facts::slots`) are at least
//! [`IDLE_SHARE_TO_WARN`] of the kernel's for every trip count the kernel
//! allows (summed over the copies of its source line), or when that cannot
//! be counted for a costly side (a loop, a barrier, a call); a split counted
//! with a sampled parameter or over an unknown bound is the pedantic
//! `conditional_divergent_branch`; one that costs less, or decides a few
//! instructions each warp meets once, the pedantic `cheap_divergent_branch`.

use super::{Findings, LintCx, Metric, Text};
use crate::divergence::sources;
use crate::divergence::split::Split;
use crate::facts::slots::{share, Slots};

declare_lint! {
    /// ### What it does
    /// Finds branches whose condition depends on the thread index in a way that
    /// splits the 32 threads of a warp between the two paths, and loops whose
    /// trip count differs between the lanes of a warp, when the split costs a
    /// share of the kernel worth changing. The cost is counted in lane-slots:
    /// while a split warp runs one side, the lanes on the other side wait, so
    /// each side's instructions cost the other side's lanes, in every execution
    /// that splits (over the iterations of the loop around it), and a loop exit
    /// that lets part of a warp leave costs the remaining iterations times the
    /// lanes that left. The finding is reported when those idle lane-slots are
    /// at least 10 % of the lane-slots one block of the kernel issues (its
    /// warps' instructions times 32), for every trip count of the loops whose
    /// count is not known (a branch inside such a loop: per iteration, the
    /// share it approaches as the loop runs longer). The note gives the share;
    /// JSON gives `idle_share` (and `idle_share_high` where unknown trip counts
    /// make it a range), and the counts when every
    /// trip count is known (`idle_lane_slots`, `kernel_lane_slots`); `confirm`
    /// measures the same share on a run. Counts are for the block shape given in
    /// Cargo.toml (`[package.metadata.gpucheck] block = [x, y, z]`), by
    /// `--block`, or by `.reqntid`.
    ///
    /// The 10 % threshold separates, on our example kernels and fixtures, the
    /// splits worth changing (the interleaved reduction: 24–26 %, an even/odd
    /// branch around a loop: 50 %, lanes running `t` iterations: 19 %) from
    /// those that are not (sequential addressing: 4 %, a boundary guard's
    /// warp: under 1 %). A branch around a few instructions that each warp meets
    /// once (a guarded store) is never reported here, whatever its share of a
    /// small kernel (a one-store guard in a 20-instruction kernel: 14 %).
    ///
    /// ### Why is this bad
    /// A warp executes both paths one after the other with part of its lanes
    /// masked off: `if t % 2 == 0 { a() } else { b() }` costs `a + b` for every
    /// warp, with half the lanes idle throughout. Splits that hold only for some
    /// values of a parameter (`conditional_divergent_branch`), single-lane
    /// branches (`if t == 0`) and branches on loaded data, whose divergence
    /// cannot be known statically, are not reported here.
    ///
    /// ### Example
    /// ```rust
    /// #[no_mangle]
    /// pub unsafe extern "ptx-kernel" fn scale(a: *mut f32) {
    ///     let t = _thread_idx_x() as usize;
    ///     if t % 2 == 0 {             // splits every warp: even and odd lanes
    ///         *a.add(t) = slow_even(*a.add(t));
    ///     } else {
    ///         *a.add(t) = slow_odd(*a.add(t));
    ///     }
    /// }
    /// ```
    /// Use instead: give whole warps the same kind of work, so that the condition
    /// is the same for the 32 consecutive threads of a warp:
    /// ```rust
    ///     // warp w handles the elements of one parity: even warps even elements
    ///     let (w, lane) = (t / 32, t % 32);
    ///     let i = (w / 2) * 64 + lane * 2 + (w % 2);
    ///     if w % 2 == 0 {
    ///         *a.add(i) = slow_even(*a.add(i));
    ///     } else {
    ///         *a.add(i) = slow_odd(*a.add(i));
    ///     }
    /// ```
    pub static DIVERGENT_BRANCH = {
        name: "divergent_branch",
        group: Perf,
        default: Warn,
        summary: "a thread-dependent branch (or a loop whose trip count differs between lanes) leaves at least 10 % of the kernel's lane-slots idle",
    }
}

/// The share of a kernel's lane-slots a split must leave idle to be worth
/// changing (the lowest share over the trip counts the kernel allows): see
/// the lint's documentation for how it was chosen.
pub const IDLE_SHARE_TO_WARN: f64 = 0.10;

pub fn check(cx: &LintCx<'_, '_, '_>, out: &mut Findings) {
    let (f, d) = (cx.facts.f, cx.facts.d);
    let warps = cx.facts.shape.warps();
    let slots = &cx.facts.lane_slots;
    // the idle slots of each source line, summed over the copies the compiler made of it
    // (an unrolled loop: one copy per iteration)
    let lines: Vec<Option<crate::srcmap::SrcPos>> = cx
        .facts
        .branches
        .iter()
        .enumerate()
        .map(|(k, b)| (slots.idle[k].is_some() && f.insts[b.br.inst].is_jump()).then(|| cx.resolve(b.br.inst).primary).flatten())
        .collect();
    let mut per_line: rustc_hash::FxHashMap<&crate::srcmap::SrcPos, (Slots, usize)> = Default::default();
    for (k, p) in lines.iter().enumerate() {
        if let (Some(p), Some(idle)) = (p, &slots.idle[k]) {
            let e = per_line.entry(p).or_default();
            e.0.add_all(idle);
            e.1 += 1;
        }
    }
    for (k, (b, line)) in cx.facts.branches.iter().zip(&lines).enumerate() {
        let br = &b.br;
        if !f.insts[br.inst].is_jump() {
            continue;
        }
        // the same in every lane of a warp: no warp is split
        if d.at(f, br.cond, br.block).is_warp_uniform() {
            continue;
        }
        let split = &b.split;
        let (idle, copies) = match line.as_ref().and_then(|p| per_line.get(p)) {
            Some((idle, copies)) => (Some(idle), *copies),
            None => (slots.idle[k].as_ref(), 1),
        };
        let share = idle.and_then(|i| share(i, &slots.kernel));
        let report = match split {
            Split::Exact { split, single_lane, .. } => !single_lane && (*split >= 2 || (warps == 1 && *split == 1)),
            Split::Bounded { split, single_lane } => !single_lane && *split >= 2,
            Split::TripCount => true,
            Split::Unknown { .. } => false,
        };
        if !report {
            continue;
        }
        let n = split.split(warps).unwrap_or(warps);
        let srcs = sources(f, d, br.cond);
        let on = if srcs.is_empty() { "the thread".to_string() } else { srcs.join(" and ") };
        let exit = f.cfg.loop_of(br.block).is_some_and(|l| f.cfg.leaves(br.block, l));
        let (message, label) = match split {
            Split::TripCount => (
                "loop exit depends on the thread: lanes of a warp run different numbers of iterations".to_string(),
                format!("the iteration count depends on {on}"),
            ),
            _ if exit => (
                format!("loop exit splits {n} of {warps} warps in each block: lanes that leave wait for the others' iterations"),
                format!("the exit depends on {on}"),
            ),
            _ => (format!("branch splits {n} of {warps} warps in each block"), format!("condition depends on {on}")),
        };
        // a split counted with a sampled parameter or block index holds for that sample only
        let sampled = match split {
            Split::Exact { witness, .. } => {
                witness.iter().any(|(r, _)| crate::divergence::split::counter_update(f, *r).is_none())
            }
            _ => false,
        };
        // a split around a few instructions that each warp meets once (a guarded store)
        // costs those few instructions, whatever its share of a small kernel
        let once = f.cfg.loop_of(br.block).is_none() && copies == 1;
        let lint = match (split, share) {
            (Split::Bounded { .. }, _) => &super::CONDITIONAL_DIVERGENT_BRANCH,
            _ if sampled => &super::CONDITIONAL_DIVERGENT_BRANCH,
            _ if b.cost.is_cheap() && once => &super::CHEAP_DIVERGENT_BRANCH,
            // the calls a side makes are not counted: a call under a split is worth a look
            _ if b.cost.calls => &DIVERGENT_BRANCH,
            (_, Some((low, _))) if low >= IDLE_SHARE_TO_WARN => &DIVERGENT_BRANCH,
            (_, Some(_)) => &super::CHEAP_DIVERGENT_BRANCH,
            // a cost that cannot be counted: a loop whose lanes leave at different
            // iterations, or sides with a loop or a barrier
            (Split::TripCount, None) => &DIVERGENT_BRANCH,
            (_, None) if b.cost.is_cheap() => &super::CHEAP_DIVERGENT_BRANCH,
            (_, None) => &DIVERGENT_BRANCH,
        };
        let mut fd = cx.finding(lint, br.inst, message, label);
        fd.assumes = cx.facts.branch_assumes(b);
        if let (Some((low, high)), Some(idle)) = (share, idle) {
            let range = super::percent_range(low, high);
            let copies = if copies > 1 { format!(", over the {copies} copies the compiler made of this line") } else { String::new() };
            let what = format!("lanes waiting for the other side leave {range} of the kernel's lane-slots idle{copies}");
            let others = if slots.kernel.unknown_loops().iter().any(|l| !idle.unknown_loops().contains(l)) {
                ", whatever the trip counts of its other loops"
            } else {
                ""
            };
            // a loop whose count is not known: the share as it runs longer
            match idle.unknown_loops().first() {
                Some(&l) => {
                    let header = f.cfg.blocks[f.cfg.loops[l].header].insts().next().unwrap_or(br.inst);
                    let after = format!(" runs longer (its trip count is not known){others}");
                    fd.note_text(Text::at(format!("{what} as the loop at "), cx.place(header), after));
                }
                None => fd.note(format!("{what}{others}")),
            }
            fd.metrics.push(("idle_share", Metric::Float(low)));
            if high > low {
                fd.metrics.push(("idle_share_high", Metric::Float(high)));
            }
            if let (Some(i), Some(t)) = (idle.known(), slots.kernel.known()) {
                fd.metrics.push(("idle_lane_slots", Metric::Int(i as i64)));
                fd.metrics.push(("kernel_lane_slots", Metric::Int(t as i64)));
            }
            // each copy ranks by its own idle slots: the worst headlines
            let own = slots.idle[k].as_ref().and_then(|i| crate::facts::slots::share(i, &slots.kernel)).map_or(low, |s| s.0);
            fd.rank = Some(super::Rank { value: (own * 1000.0).round() as i64, unit: "‰ of the kernel's lane-slots idle" });
        }
        match split {
            Split::Exact { witness, .. } if !witness.is_empty() => {
                use crate::divergence::split::{counter_update, describe_value};
                let f = cx.facts.f;
                // a loop's counter by the source line that updates it; the others by name
                let (counters, named): (Vec<_>, Vec<_>) = witness.iter().partition(|(r, _)| counter_update(f, *r).is_some());
                let w: Vec<String> = named.iter().map(|(r, v)| format!("`{}` = {v}", describe_value(f, *r))).collect();
                let why = "sampled values of a loop counter, block index or parameter; other values may split fewer warps";
                if !w.is_empty() {
                    fd.note(format!("counted with {} ({why})", w.join(", ")));
                }
                for (r, v) in counters {
                    let at = counter_update(f, r).expect("partitioned on it");
                    fd.note_text(Text::at("counted with the loop counter updated at ".into(), cx.place(at), format!(" = {v} ({why})")));
                }
            }
            Split::Bounded { .. } => {
                fd.note("the bound is not known statically: this is the worst case over all its values");
            }
            Split::TripCount => {
                fd.note("each warp waits for its slowest lane; the lanes that have left the loop idle meanwhile");
            }
            _ => {}
        }
        cx.shape_note(&mut fd);
        fd.help("make the condition the same for the 32 consecutive threads of a warp (e.g. branch on `threadIdx.x / 32`), or reorder the data so that neighbouring threads take the same path");
        fd.rank.get_or_insert(super::Rank { value: n as i64, unit: " warps split" });
        fd.metrics.push(("diverging_warps", Metric::Int(n as i64)));
        fd.metrics.push(("warps_per_block", Metric::Int(warps as i64)));
        fd.metrics.push(("divergent_fraction", Metric::Float(if warps > 0 { n as f64 / warps as f64 } else { 0.0 })));
        fd.metrics.push(("block", Metric::Text(format!("{:?}", cx.facts.shape.block))));
        fd.metrics.push(("instructions_decided", Metric::Int((b.cost.taken + b.cost.other) as i64)));
        out.push(fd);
    }
}

