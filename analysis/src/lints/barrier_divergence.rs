//! `barrier_divergence`: a barrier not every thread of the block reaches
//! (GPUVerify, seed 004): under a thread-dependent branch, behind a
//! thread-dependent early return, inside a loop with a thread-dependent trip
//! count, or guarded by a thread-dependent predicate. Calls to functions
//! that execute a barrier count as barriers.
//!
//! Owns: saying which threads skip the barrier and why. The decision that
//! a barrier is reached by part of the block is a fact
//! (`crate::facts::BarrierFact`), which `confirm` also judges.

use super::{thread_ranges, Finding, Findings, LintCx, Metric, Place, Text};
use crate::divergence::split::Split;
use crate::divergence::{sources, AbsVal};
use crate::facts::witness::{BarrierWhen, BarrierWitness};
use crate::facts::{BarrierCause, BranchFact, Later, Skipping};
use crate::ir::{BlockId, InstId};

declare_lint! {
    /// ### What it does
    /// Finds `_syncthreads()` (`bar.sync`, `barrier.sync`, or a call to a function
    /// that executes one) under thread-dependent control flow: inside a branch on
    /// the thread index, after a thread-dependent early `return`, predicated on a
    /// thread-dependent value, or inside a loop whose trip count differs between
    /// threads (GPUVerify's barrier divergence). The note names the branch and,
    /// when the block shape is known, the threads that skip the barrier. When
    /// the branch compares each thread's value with a parameter (`if (idx >= N)
    /// return;`), the message states the values that split a block ("when `N` is
    /// not a multiple of 256") and the finding is a warning with a witness; the
    /// kernel's own checks (`if (N % 256 != 0) __trap();`) can rule every such
    /// value out, and then there is no finding.
    ///
    /// Before it is reported, the finding's witness runs on the built-in
    /// interpreter (its blocks, the values it names, zero-filled buffers): a
    /// note says "reproduced", or why it was not replayed; one the run does
    /// not show is pedantic (`-W gpucheck::pedantic`), saying so
    /// (`--no-replay` turns this off).
    ///
    /// ### Why is this bad
    /// All threads of a block must reach the same barrier the same number of
    /// times. Otherwise the behaviour is undefined: the kernel hangs, or silently
    /// computes wrong results, depending on the GPU.
    ///
    /// ### Example
    /// ```rust
    /// #[no_mangle]
    /// pub unsafe extern "ptx-kernel" fn shift(out: *mut u32) {
    ///     let t = _thread_idx_x() as usize;
    ///     let s = shared_buffer();
    ///     *s.add(t) = t as u32;
    ///     if t < 128 {
    ///         _syncthreads();          // threads 128.. never arrive
    ///         *out.add(t) = *s.add(t + 1);
    ///     }
    /// }
    /// ```
    /// Use instead: move the barrier out of the conditional so that every thread
    /// of the block reaches it, and guard only the work:
    /// ```rust
    ///     *s.add(t) = t as u32;
    ///     _syncthreads();
    ///     if t < 128 {
    ///         *out.add(t) = *s.add(t + 1);
    ///     }
    /// ```
    pub static BARRIER_DIVERGENCE = {
        name: "barrier_divergence",
        group: Correctness,
        default: Deny,
        summary: "a barrier (`_syncthreads()`, `bar.sync`, or a call to a function that executes one) is under thread-dependent control flow, behind a thread-dependent early return, predicated on a thread-dependent value, or inside a loop whose trip count differs between threads",
    }
}

pub fn check(cx: &LintCx<'_, '_, '_>, out: &mut Findings) {
    let f = cx.facts.f;
    for (bi, x) in cx.facts.barriers.iter().enumerate() {
        let Some(cause) = x.divergence else { continue };
        let at = out.len();
        let i = x.inst;
        let inst = &f.insts[i];
        let what = if inst.is_block_barrier() { "barrier" } else { "call to a function that executes a barrier" };
        match cause {
            BarrierCause::Predicated => {
                let g = inst.ast.guard.expect("a predicated barrier has a guard");
                let mut fd =
                    cx.finding(&BARRIER_DIVERGENCE, i, format!("{what} reached under thread-dependent control flow"), String::new());
                fd.note(format!(
                    "the barrier is predicated on `{}{}`, which differs between threads",
                    if g.negated { "!" } else { "" },
                    g.reg
                ));
                fd.help("execute the barrier unconditionally; predicate only the work around it");
                out.push(fd);
            }
            BarrierCause::Branch(k) => out.push(report(cx, i, &cx.facts.branches[k], x.skipping.as_ref(), x.witness.as_ref(), what)),
        }
        if let Some(fd) = out.get_mut(at) {
            let block = x.witness.as_ref().map_or(0, |w| w.block as u32);
            fd.witness = Some(Box::new(super::Witness::Barrier { site: (f.index, i.index()), block: [block, 0, 0], call: !inst.is_block_barrier() }));
            consequences(cx, bi, fd);
        }
    }
}

/// The races that exist only because threads skip barrier `bi`: notes of
/// its finding (a few, and how many), not findings of their own.
fn consequences(cx: &LintCx<'_, '_, '_>, bi: usize, fd: &mut Finding) {
    let races: Vec<&crate::races::Race> = cx.facts.races.iter().filter(|r| r.through_barrier == Some(bi)).collect();
    if races.is_empty() {
        return;
    }
    let verb = |k: crate::ir::inst::AccessKind| if k == crate::ir::inst::AccessKind::Load { "reads" } else { "writes" };
    fd.note(format!(
        "{} {} between threads that reach this barrier and threads that skip it follow from it:",
        races.len(),
        if races.len() == 1 { "race" } else { "races" }
    ));
    for r in races.iter().take(3) {
        let (a, b) = (cx.facts.race_site(r.first), cx.facts.race_site(r.second));
        let (t1, t2) = r.threads;
        let elem = r.offset / a.width.max(1) as i64;
        let before = format!("{}: thread {t2} {} element {elem} of {} memory at ", r.kind.describe(), verb(b.kind), b.space.name());
        fd.note_text(Text::at(before, cx.race_place(r.second), format!(" while thread {t1} {} it", verb(a.kind))));
    }
    fd.metrics.push(("races_from_skipping", Metric::Int(races.len() as i64)));
}

fn report(
    cx: &LintCx<'_, '_, '_>,
    i: InstId,
    cause: &BranchFact,
    skipping: Option<&Skipping>,
    witness: Option<&BarrierWitness>,
    what: &str,
) -> Finding {
    let (f, d) = (cx.facts.f, cx.facts.d);
    let cfg = &f.cfg;
    let br = &cause.br;
    let b = cfg.block_of(i);
    // a split that needs some values of a parameter says which
    let when = witness.map(|w| {
        let p = format!("`{}`", crate::names::demangle(&w.param));
        match w.when {
            BarrierWhen::Range { lo, hi } if lo == hi => format!(" when {p} = {lo}"),
            BarrierWhen::Range { lo, hi } => format!(" when {lo} ≤ {p} ≤ {hi}"),
            BarrierWhen::NotMultiple { period, below: None } => format!(" when {p} is not a multiple of {period}"),
            BarrierWhen::NotMultiple { period, below: Some(b) } => format!(" when {p} < {b} is not a multiple of {period}"),
        }
    });
    // at the barrier's line in the function the branch is in (a wrapper's call, not its body)
    let mut fd = cx.finding_beside(
        &BARRIER_DIVERGENCE,
        i,
        br.inst,
        format!("{what} reached under thread-dependent control flow{}", when.unwrap_or_default()),
        String::new(),
    );
    fd.assumes = cx.facts.branch_assumes(cause);
    if let Some(w) = witness {
        fd.assumes.push(crate::facts::Assumption {
            name: w.param.clone(),
            kind: crate::facts::Assumed::Condition,
            ptx_line: None,
            sample: w.example,
            alignment: false,
            known: Vec::new(),
            param: f.param_of_label(&w.param).map(|p| (p, 0)),
        });
    }
    let srcs = sources(f, d, br.cond);
    let mut on = if srcs.is_empty() { "the thread".to_string() } else { srcs.join(" and ") };
    if d.at(f, br.cond, br.block) == AbsVal::WarpUniform {
        on = format!("{on}, which is the same within a warp but differs between warps, so whole warps");
    }
    let in_loop_exit =
        cfg.loop_of(br.block).filter(|&l| cfg.in_loop(b, l) && cfg.leaves(br.block, l));
    let split = &cause.split;
    let who = if in_loop_exit.is_some() {
        "the loop around the barrier runs a thread-dependent number of iterations, so threads reach it different numbers of times"
            .to_string()
    } else if let Some(w) = witness {
        let p = crate::names::demangle(&w.param);
        format!(
            "for `{p}` = {}, {} of block {} skip this barrier (its condition compares `{p}` with each thread's value: solved for every value, not sampled)",
            w.example,
            thread_ranges(&w.skip),
            w.block
        )
    } else if let Some(s) = skipping.filter(|s| s.first.iter().any(|x| *x)) {
        // evaluated for every thread, loop counters at their first value
        if let Some(later) = s.later {
            format!(
                "in the first iteration, {} of each block skip this barrier; in later iterations, {}",
                thread_ranges(&s.first),
                if later == Later::More { "more" } else { "others" }
            )
        } else {
            format!("{} of each block skip this barrier", thread_ranges(&s.first))
        }
    } else {
        match split {
            Split::Exact { taken, .. } => {
                // which side of the branch can reach the barrier?
                let target = cx.facts.f.branch_target(br.inst);
                let reaches = |s: BlockId| reach_without(cx, s, b, cfg.ipdom(br.block));
                let taken_reaches = target.is_some_and(reaches);
                let fall_reaches = cfg.blocks[br.block].succs.iter().filter(|&&s| Some(s) != target).any(|&s| reaches(s))
                    || (cfg.blocks[br.block].succs.len() == 1 && target.is_none());
                let skip: Vec<bool> = taken.iter().map(|&t| if t { !taken_reaches } else { !fall_reaches }).collect();
                if skip.iter().any(|x| *x) {
                    format!("{} of each block skip this barrier", thread_ranges(&skip))
                } else {
                    "some threads skip this barrier".to_string()
                }
            }
            _ => {
                "the threads that take its other side skip this barrier (which ones depends on a value known only at run time)".to_string()
            }
        }
    };
    let at = cx.place(br.inst);
    fd.note_text(Text::at("the branch at ".into(), at.clone(), format!(" depends on {on}; {who}")));
    if let Place::Source(p) = at {
        fd.secondary.push((p, "thread-dependent branch".to_string()));
    }
    cx.shape_note(&mut fd);
    fd.help("move the barrier out of the conditional so that every thread of the block reaches it");
    if let Some(n) = split.split(cx.facts.shape.warps()) {
        fd.metrics.push(("diverging_warps", Metric::Int(n as i64)));
    }
    fd.metrics.push(("warps_per_block", Metric::Int(cx.facts.shape.warps() as i64)));
    fd
}

/// Can block `from` reach block `to` without passing `stop`?
fn reach_without(cx: &LintCx<'_, '_, '_>, from: BlockId, to: BlockId, stop: Option<BlockId>) -> bool {
    cx.facts.f.cfg.region(&[from], stop).binary_search(&to).is_ok()
}
