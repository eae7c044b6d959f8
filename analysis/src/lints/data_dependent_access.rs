//! `data_dependent_access` (pedantic): global or shared accesses whose
//! address depends on loaded data, so no prediction is possible.
//!
//! Owns: the decision and the message.

use super::{Findings, LintCx};
use crate::divergence::sources;

declare_lint! {
    /// ### What it does
    /// Points out global and shared accesses whose address depends on data loaded
    /// from memory (indirection, gather, scatter), so their cost cannot be
    /// predicted statically.
    ///
    /// ### Why is this bad
    /// It is not necessarily bad: gathers are sometimes the algorithm. But their
    /// coalescing depends on the data: measure them with a profiler, or sort the
    /// indices so that neighbouring lanes read neighbouring elements.
    ///
    /// ### Example
    /// ```rust
    /// let j = *idx.add(i) as usize;
    /// let v = *a.add(j);          // address from loaded data
    /// ```
    /// Use instead, where possible, an access computed from the thread index:
    /// ```rust
    /// let v = *a.add(i);
    /// ```
    pub static DATA_DEPENDENT_ACCESS = {
        name: "data_dependent_access",
        group: Pedantic,
        default: Allow,
        summary: "a global/shared address depends on loaded data (gather/scatter): no prediction possible",
    }
}

pub fn check(cx: &LintCx<'_, '_, '_>, out: &mut Findings) {
    for x in &cx.facts.accesses {
        let a = &x.access;
        if x.prediction.is_some() || !a.addr.data() {
            continue;
        }
        let srcs = a.addr_value.map(|v| sources(cx.facts.f, cx.facts.d, v)).unwrap_or_default();
        let on = if srcs.is_empty() { "loaded data".to_string() } else { srcs.join(" and ") };
        let message = format!("{} address depends on {on}: its cost cannot be predicted", a.space.name());
        let mut fd = cx.finding(&DATA_DEPENDENT_ACCESS, a.inst, message, "gather/scatter".to_string());
        fd.help("if the indices allow, sort them so that neighbouring lanes access neighbouring elements");
        out.push(fd);
    }
}
