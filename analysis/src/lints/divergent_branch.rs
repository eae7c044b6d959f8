//! `divergent_branch`: thread-dependent branches that split most warps.
//!
//! Owns: the decision rule. A branch is reported when more than one warp of
//! a block takes both paths (or the only warp does, for a condition that is
//! not a boundary check), or when a loop's trip count varies within a warp.
//! Boundary checks (≤ 1 warp), single-lane branches and data-dependent
//! branches (unpredictable statically) are not reported; a branch that
//! decides only a few straight-line instructions is reported as the
//! pedantic `cheap_divergent_branch`.

use super::{Finding, LintCx, Metric, Text};
use crate::divergence::sources;
use crate::divergence::split::Split;

declare_lint! {
    /// ### What it does
    /// Finds branches whose condition depends on the thread index in a way that
    /// splits the 32 threads of a warp between the two paths, in more than one warp
    /// of a block, and loops whose trip count differs between the lanes of a warp.
    /// The message says how many warps of a block are split, for the block shape
    /// given in Cargo.toml (`[package.metadata.gpucheck] block = [x, y, z]`), by
    /// `--block`, or by `.reqntid`.
    ///
    /// ### Why is this bad
    /// A warp executes both paths one after the other with part of its lanes
    /// masked off: `if t % 2 == 0 { a() } else { b() }` costs `a + b` for every
    /// warp. Boundary checks (`if gid < n`) split at most one warp and are not
    /// reported; nor are single-lane branches (`if t == 0`) or branches on loaded
    /// data, whose divergence cannot be known statically.
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
        summary: "a thread-dependent branch splits more than one warp of a block, or a loop's trip count differs between the lanes of a warp",
    }
}

/// A cheap branch's warp executions that split, and those that reach it:
/// over the iterations of the loop around it where its trip count is known,
/// else this one execution per warp of the block.
fn executions(b: &crate::facts::BranchFact, warps: usize) -> Option<(usize, usize)> {
    let Split::Exact { split, .. } = b.split else { return None };
    Some(match b.repeated {
        Some(r) => (r.warp_iterations_split, r.warp_iterations),
        None => (split, warps),
    })
}

pub fn check(cx: &LintCx<'_, '_, '_>, out: &mut Vec<Finding>) {
    let (f, d) = (cx.facts.f, cx.facts.d);
    let warps = cx.facts.shape.warps();
    // a cheap branch's executions summed over the copies the compiler made of its line (an
    // unrolled loop: one copy per iteration): (split, reaching, copies)
    // (each cheap branch's line, resolved once)
    let lines: Vec<Option<crate::srcmap::SrcPos>> = cx
        .facts
        .branches
        .iter()
        .map(|b| (b.cost.is_cheap() && f.insts[b.br.inst].is_jump()).then(|| cx.resolve(b.br.inst).primary).flatten())
        .collect();
    let mut per_line: std::collections::HashMap<&crate::srcmap::SrcPos, (usize, usize, usize)> = Default::default();
    for (b, p) in cx.facts.branches.iter().zip(&lines) {
        if let (Some(p), Some((split, reach))) = (p, executions(b, warps)) {
            let e = per_line.entry(p).or_default();
            *e = (e.0 + split, e.1 + reach, e.2 + 1);
        }
    }
    for (b, line) in cx.facts.branches.iter().zip(&lines) {
        let br = &b.br;
        if !f.insts[br.inst].is_jump() {
            continue;
        }
        // the same in every lane of a warp: no warp is split
        if d.at(f, br.cond, br.block).is_warp_uniform() {
            continue;
        }
        let split = &b.split;
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
        let (message, label) = match split {
            Split::TripCount => (
                "loop exit depends on the thread: lanes of a warp run different numbers of iterations".to_string(),
                format!("the iteration count depends on {on}"),
            ),
            _ => (format!("branch splits {n} of {warps} warps in each block"), format!("condition depends on {on}")),
        };
        // a few straight-line instructions decided: real, but cheap (pedantic)
        // (unless the split repeats in most executions of its line, over the iterations of the loop
        // around it or the copies of an unrolled one: the idle lanes add up)
        let line = line.as_ref().and_then(|p| per_line.get(p).copied());
        let repeats = match (line, executions(b, warps)) {
            (Some((split, reach, copies)), _) if copies > 1 => Some((split, reach)),
            (_, Some(own)) if b.repeated.is_some() => Some(own),
            _ => None,
        }
        .filter(|&(split, reach)| reach > warps && 2 * split >= reach);
        let cheap = b.cost.is_cheap() && !matches!(split, Split::TripCount) && repeats.is_none();
        let lint = if cheap { &super::CHEAP_DIVERGENT_BRANCH } else { &DIVERGENT_BRANCH };
        let mut fd = cx.finding(lint, br.inst, message, label);
        fd.assumes = cx.facts.branch_assumes(b);
        if let Some((split, reach)) = repeats {
            fd.note(format!(
                "the guarded code is only {} instructions, but the split repeats: over the loop's iterations (and the copies the compiler unrolled), {split} of the {reach} warp executions of this line split, each running that code with part of its lanes idle",
                b.cost.taken + b.cost.other,
            ));
            fd.metrics.push(("warp_executions_split", Metric::Int(split as i64)));
            fd.metrics.push(("warp_executions", Metric::Int(reach as i64)));
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
                    fd.note_text(Text::At {
                        before: "counted with the loop counter updated at ".into(),
                        at: cx.place(at),
                        after: format!(" = {v} ({why})"),
                    });
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
        fd.rank = Some(super::Rank { value: n as i64, unit: " warps split" });
        fd.metrics.push(("diverging_warps", Metric::Int(n as i64)));
        fd.metrics.push(("warps_per_block", Metric::Int(warps as i64)));
        fd.metrics.push(("divergent_fraction", Metric::Float(if warps > 0 { n as f64 / warps as f64 } else { 0.0 })));
        fd.metrics.push(("block", Metric::Text(format!("{:?}", cx.facts.shape.block))));
        fd.metrics.push(("instructions_decided", Metric::Int((b.cost.taken + b.cost.other) as i64)));
        out.push(fd);
    }
}
