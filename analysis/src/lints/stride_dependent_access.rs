//! `stride_dependent_access` (pedantic): global accesses whose lanes are a
//! stride apart that the kernel reads from memory (`x[i * strides[d]]`):
//! their cost is known only for a given stride, so it is said with the
//! condition, not as an uncoalesced access.
//!
//! Owns: the message. The prediction is `crate::memory`
//! (`Prediction::runtime_stride`), read from the facts.

use super::{Findings, LintCx, Metric, Text};
use crate::memory::SECTOR;

declare_lint! {
    /// ### What it does
    /// Finds global accesses where neighbouring lanes are `s` elements apart and
    /// `s` is a value the kernel reads from memory (a strides array of a generic
    /// tensor kernel, a field of a descriptor), and says what a warp request
    /// costs in both cases: when `s` is 1 (neighbouring lanes, neighbouring
    /// elements) and when it is large (every lane its own sector). The note
    /// names where the stride is read. A strided-tensor index (`(i % n) *
    /// strides[1] + (i / n) * strides[0]`, or a loop over `dims` and
    /// `strides`) is one too: the stride is the value read from memory that
    /// every lane's address moves with linearly.
    ///
    /// ### Why is this bad
    /// It is bad when the stride is large at run time: a reduction over a
    /// non-innermost dimension makes neighbouring lanes read `C` elements apart,
    /// eight times the memory traffic of a contiguous read for `f32`. Whether it
    /// is depends on the data's layout, which only the caller knows.
    ///
    /// ### Example
    /// ```rust
    /// // thread i reduces row i: lanes are `strides[0]` elements apart
    /// let s = *strides.add(0);
    /// for k in 0..len { acc += *x.add(i * s + k); }
    /// ```
    /// Use instead: let neighbouring lanes walk the dimension with stride 1, and
    /// loop over the strided one:
    /// ```rust
    /// let s = *strides.add(0);
    /// for k in 0..len { acc += *x.add(k * s + i); }
    /// ```
    pub static STRIDE_DEPENDENT_ACCESS = {
        name: "stride_dependent_access",
        group: Pedantic,
        default: Allow,
        summary: "a global access's lanes are a stride apart that the kernel reads from memory: its cost depends on the stride (said for 1 and for large)",
    }
}

pub fn check(cx: &LintCx<'_, '_, '_>, out: &mut Findings) {
    for x in &cx.facts.accesses {
        let (a, Some(p)) = (&x.access, &x.prediction) else { continue };
        let Some(rs) = p.runtime_stride else { continue };
        // no difference between a small and a large stride: nothing to say
        if rs.sectors_at_one >= p.sectors.0 {
            continue;
        }
        let large = (SECTOR / rs.bytes_per_unit.abs().max(1)).max(1);
        let message = format!(
            "{} sectors per warp request when the stride read from memory is 1, {} when it is {large} or more: lanes are {}·s bytes apart",
            rs.sectors_at_one,
            p.sectors.0,
            rs.bytes_per_unit.abs()
        );
        let mut fd = cx.finding(&STRIDE_DEPENDENT_ACCESS, a.inst, message, "lanes `s` elements apart".to_string());
        fd.assumes = cx.facts.access_assumes(x);
        fd.note_text(Text::at("the stride `s` is the value read at ".into(), cx.place(rs.load), String::new()));
        cx.shape_note(&mut fd);
        fd.help("let neighbouring lanes walk the dimension whose stride is 1 and loop over the strided one, or stage the tile through shared memory");
        fd.metrics.push(("sectors_per_request_at_stride_1", Metric::Int(rs.sectors_at_one as i64)));
        fd.metrics.push(("sectors_per_request_large_stride", Metric::Int(p.sectors.0 as i64)));
        fd.metrics.push(("large_stride_from", Metric::Int(large)));
        fd.metrics.push(("bytes_per_stride_unit", Metric::Int(rs.bytes_per_unit.abs())));
        out.push(fd);
    }
}
