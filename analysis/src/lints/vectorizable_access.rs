//! `vectorizable_access` (pedantic): neighbouring scalar accesses of each
//! lane that one vector access (`.v2`/`.v4`) could serve.
//!
//! Owns: the message. The grouping is `crate::memory::footprint`, read from
//! the facts.

use super::{Findings, LintCx, Metric};

declare_lint! {
    /// ### What it does
    /// Finds 2 or 4 global loads or stores of one warp, in one loop iteration,
    /// that read or write neighbouring elements of each lane (`x[2i]` and
    /// `x[2i+1]`), aligned to their size together: one vector access
    /// (`ld.global.v2`, `float2`) would do what they do.
    ///
    /// ### Why is this bad
    /// It costs instructions, not bandwidth: the sectors are shared (loads
    /// through L1, and stores that together fill their sectors), but the
    /// warp issues two or four memory instructions where one would do.
    ///
    /// ### Example
    /// ```rust
    /// let (re, im) = (*x.add(2 * i), *x.add(2 * i + 1));
    /// ```
    /// Use instead: one aligned 8-byte access:
    /// ```rust
    /// #[repr(C, align(8))]
    /// struct Complex { re: f32, im: f32 }
    /// let c = *(x as *const Complex).add(i);
    /// ```
    pub static VECTORIZABLE_ACCESS = {
        name: "vectorizable_access",
        group: Pedantic,
        default: Allow,
        summary: "2 or 4 scalar accesses of neighbouring elements per lane that one vector access (`.v2`/`.v4`) could serve",
    }
}

pub fn check(cx: &LintCx<'_, '_, '_>, out: &mut Findings) {
    for g in &cx.facts.groups {
        let Some(n) = g.vector else { continue };
        let first = &cx.facts.accesses[g.members[0]].access;
        let verb = if g.kind == crate::ir::inst::AccessKind::Load { "loads" } else { "stores" };
        let message = format!("{n} {verb} of neighbouring {}-byte elements per lane: one `.v{n}` access could do them", first.width);
        let mut fd = cx.finding(&VECTORIZABLE_ACCESS, first.inst, message, format!("1 of {n}"));
        fd.assumes = cx.facts.assumes_all(g.members.iter().map(|&m| &cx.facts.accesses[m]));
        for (k, &m) in g.members.iter().enumerate().skip(1) {
            if let Some(pos) = cx.resolve(cx.facts.accesses[m].access.inst).primary {
                if fd.span.as_ref() != Some(&pos) && !fd.secondary.iter().any(|(q, _)| *q == pos) {
                    fd.secondary.push((pos, format!("{} of {n}", k + 1)));
                }
            }
        }
        fd.help(format!(
            "access the {n} elements with one aligned vector access: in CUDA C++ a `float{n}`-like type, in Rust a `#[repr(C, align({}))]` struct of the {n} elements read through a cast pointer",
            first.width as usize * n as usize
        ));
        fd.metrics.push(("elements", Metric::Int(n as i64)));
        fd.metrics.push(("group_sectors", Metric::Int(g.sectors.0 as i64)));
        fd.metrics.push(("group_ideal_sectors", Metric::Int(g.ideal as i64)));
        out.push(fd);
    }
}
