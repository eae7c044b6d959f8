//! `shared_bank_conflict`: shared accesses with a predicted conflict degree
//! of 2 or more.
//!
//! Owns: the decision and the message (degree, stride, padding advice).

use super::uncoalesced_global_access::describe_addresses;
use super::{Findings, LintCx, Metric};
use crate::ir::inst::Space;

declare_lint! {
    /// ### What it does
    /// Predicts the bank-conflict degree of every shared memory access: shared
    /// memory has 32 banks of 4-byte words; the degree is the largest number of
    /// distinct words a warp request needs from one bank (lanes reading the same
    /// word are served by one broadcast). 8-byte accesses are served per half
    /// warp, 16-byte per quarter warp. Reports degree 2 and more, with its
    /// impact: its replays (degree less one, per request) as a share of the
    /// shared-memory transactions the kernel's accesses are predicted to make,
    /// each access weighted by how often it runs (the warps that run it, over
    /// the iterations of its loops; per iteration where a trip count is not
    /// known). JSON `impact_share`; `confirm` measures the same share.
    ///
    /// ### Why is this bad
    /// An n-way conflict serialises the request into n transactions. Reading a
    /// column of a 32×32 `f32` tile puts all 32 lanes in one bank: 32 times slower.
    ///
    /// ### Example
    /// ```rust
    /// // tile: [[f32; 32]; 32] in shared memory
    /// let v = tile[tx][ty];      // lanes stride 128 bytes: 32-way conflict
    /// ```
    /// Use instead: pad each row by one word so a column spreads over 32 banks:
    /// ```rust
    /// // tile: [[f32; 33]; 32]
    /// let v = tile[tx][ty];      // lanes stride 132 bytes: conflict-free
    /// ```
    pub static SHARED_BANK_CONFLICT = {
        name: "shared_bank_conflict",
        group: Perf,
        default: Warn,
        summary: "a shared access's lanes need two or more distinct words from one of the 32 banks",
    }
}

pub fn check(cx: &LintCx<'_, '_, '_>, out: &mut Findings) {
    for x in &cx.facts.accesses {
        let (a, Some(p)) = (&x.access, &x.prediction) else { continue };
        if a.space != Space::Shared || p.conflict.0 < 2 {
            continue;
        }
        let stride = p.lane_stride.unwrap_or(0).abs();
        let how = if stride > 0 { format!(": lanes stride {stride} bytes") } else { String::new() };
        let message = format!("{}-way shared memory bank conflict{how}", p.conflict.0);
        let label = describe_addresses(p, a.width, cx.facts.shape);
        let mut fd = cx.finding(&SHARED_BANK_CONFLICT, a.inst, message, label);
        fd.assumes = cx.facts.access_assumes(x);
        fd.note(format!(
            "each warp request is split into {} transactions ({} warp{} per block; worst warp {}-way)",
            p.conflict.0,
            p.requests,
            if p.requests == 1 { "" } else { "s" },
            p.conflict.1
        ));
        cx.impact_note(&mut fd, x, "its replays", "shared-memory transactions");
        cx.shape_note(&mut fd);
        if stride > 0 && stride % 128 == 0 {
            let words = stride / 4;
            fd.help(format!("pad the row to {} words so that consecutive lanes fall in different banks", words + 1));
        } else {
            fd.help("make consecutive lanes access consecutive 4-byte words (or the same word), e.g. by padding rows by one word");
        }
        fd.rank = Some(super::Rank { value: p.conflict.0 as i64, unit: "-way" });
        fd.metrics.push(("conflict_degree", Metric::Int(p.conflict.0 as i64)));
        fd.metrics.push(("worst_conflict_degree", Metric::Int(p.conflict.1 as i64)));
        fd.metrics.push(("requests", Metric::Int(p.requests as i64)));
        fd.metrics.push(("bytes_per_lane", Metric::Int(a.width as i64)));
        out.push(fd);
    }
}
