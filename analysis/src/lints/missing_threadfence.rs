//! `missing_threadfence`: a last-block election whose counter orders a
//! block's earlier write (or read) ahead of the elected block's access with
//! no fence between that write and the block's ticket. The election and the
//! ordering are `crate::facts::election`, read from the facts
//! (`KernelFacts::unfenced`); owns the message.

use super::{Findings, LintCx};
use crate::ir::inst::AccessKind;

declare_lint! {
    /// ### What it does
    /// Recognises the last-block election (CUDA's `threadFenceReduction`
    /// sample): every block writes its partial result, takes a ticket from one
    /// counter (`atomicAdd(&count, 1)` or `atomicInc(&count, gridDim.x)`, once
    /// per block), and the block that draws the last ticket
    /// (`== gridDim.x - 1`, for the grid given or, without one, for every grid)
    /// reads every block's partial result, also when the comparison reaches the
    /// branch through a flag in shared memory (`__shared__ bool is_last`). The
    /// counter orders what a block does before its ticket ahead of what the
    /// elected block does after its own, so those pairs are not reported as
    /// `grid_memory_race`; but only a fence (`__threadfence()`: `membar.gl`,
    /// `fence.sc.gpu`, or an atomic with release semantics) between the write
    /// and the ticket makes the write visible to the elected block in that order.
    /// This lint reports the atomic of an election that lacks it, naming the
    /// write and the elected block's access.
    ///
    /// ### Known problems
    /// Only counters that count up from zero are recognised (the last ticket is
    /// the number of atomics in the grid less one, times the step); a
    /// comparison with a kernel parameter (`== num_blocks - 1`) is not, and its
    /// pairs stay `grid_memory_race`. The elected block's own reads are not
    /// required to be fenced (CUDA's sample does not fence them).
    ///
    /// ### Why is this bad
    /// Without the fence the memory system may make the counter's update visible
    /// before the write: the elected block can draw the last ticket and read the
    /// old value of another block's partial result. It shows rarely, under
    /// load, on some GPUs only.
    ///
    /// ### Example
    /// ```rust
    /// partial[block] = sum;
    /// let ticket = atomic_add(count, 1);        // no fence before the ticket
    /// ```
    /// Use instead:
    /// ```rust
    /// partial[block] = sum;
    /// core::sync::atomic::fence(Ordering::SeqCst); // __threadfence() in CUDA C++
    /// let ticket = atomic_add(count, 1);
    /// ```
    pub static MISSING_THREADFENCE = {
        name: "missing_threadfence",
        group: Correctness,
        default: Warn,
        summary: "a last-block election (every block takes a ticket from one counter; the last one reads the others' results) with no fence between a block's write and its ticket: the last block may read a stale value",
        one_per_line: true,
    }
}

pub fn check(cx: &LintCx<'_, '_, '_>, out: &mut Findings) {
    let facts = cx.facts;
    let mut seen = Vec::new();
    for u in &facts.unfenced {
        // one finding per ticket: the first pair it leaves unfenced
        if seen.contains(&u.atomic) {
            continue;
        }
        seen.push(u.atomic);
        let atomic = &facts.accesses[u.atomic].access;
        let (p, e) = (&facts.accesses[u.published].access, &facts.accesses[u.elected].access);
        let verb = |k: AccessKind| if k == AccessKind::Load { "reads" } else { "writes" };
        let message = format!(
            "no fence between a block's {} and the ticket it takes: the block that draws the last ticket may see the ticket before the {}",
            if p.kind == AccessKind::Load { "read" } else { "write" },
            if p.kind == AccessKind::Load { "read is done" } else { "write" }
        );
        // at the atomic, where its own line is known (clang's inlined `atomicAdd` has
        // none: the write, which the fence must follow, stands in for it)
        let own_line = cx.resolve(atomic.inst).primary.is_some() && !cx.resolve(atomic.inst).approximate;
        let (at, label) = if own_line {
            (atomic.inst, "each block takes its ticket here".to_string())
        } else {
            (p.inst, format!("each block {} here, then takes its ticket with no fence between", verb(p.kind)))
        };
        let mut fd = cx.finding(&MISSING_THREADFENCE, at, message, label);
        if own_line {
            if let Some(x) = cx.resolve(p.inst).primary {
                fd.secondary.push((x, format!("each block {} here, before its ticket, with no fence between", verb(p.kind))));
            }
        }
        if let Some(x) = cx.resolve(e.inst).primary {
            fd.secondary.push((x, format!("the block with the last ticket {} the same bytes here", verb(e.kind))));
        }
        let base = super::base_name(facts.f, p);
        fd.note(format!(
            "the counter orders the two accesses (element {} of {base}: thread {} of one block, thread {} of the block that draws the last ticket), but only a fence makes the first visible to other blocks before the ticket",
            u.race.offset / p.width.max(1) as i64,
            if u.published == u.race.first { u.race.threads.0 } else { u.race.threads.1 },
            if u.elected == u.race.first { u.race.threads.0 } else { u.race.threads.1 },
        ));
        cx.shape_note(&mut fd);
        fd.help("put `__threadfence()` between the access and the atomic (Rust: `core::sync::atomic::fence(Ordering::SeqCst)`)");
        out.push(fd);
    }
}
