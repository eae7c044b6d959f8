//! `uncoalesced_global_access`: global accesses whose warp request touches
//! at least `threshold` times the sectors the same bytes need.
//!
//! Owns: the decision and the message (numbers and the index in thread
//! terms). The prediction itself is `crate::memory`, read from the facts.

use super::{Finding, LintCx, Metric};
use crate::ir::inst::Space;
use crate::memory::Method;

declare_lint! {
    /// ### What it does
    /// Predicts, for every global load, store and atomic, how many 32-byte sectors
    /// one warp request touches (sm_70 and newer), for the lanes that execute it
    /// and the block shape, and compares with the sectors the same bytes need when
    /// contiguous and aligned. Reports when the ratio reaches 2
    /// (`--coalescing-threshold` changes it). Contiguous 8- and 16-byte elements
    /// are ideal; so is a misaligned `x[i + 1]` (5 sectors for 4).
    ///
    /// ### Why is this bad
    /// Memory moves in sectors: a warp whose lanes read 4 bytes each, 128 bytes
    /// apart, moves 32 sectors (1024 bytes) to use 128 — an eighth of the
    /// bandwidth.
    ///
    /// ### Example
    /// ```rust
    /// // each lane reads a row: lanes are `n` elements apart
    /// let i = gid();
    /// let mut s = 0.0;
    /// for k in 0..n { s += *a.add(i * n + k); }
    /// ```
    /// Use instead: make `threadIdx.x` the fastest-varying index of the access
    /// (consecutive lanes read consecutive addresses), transpose through shared
    /// memory, or turn an array of structs into a structure of arrays:
    /// ```rust
    /// // each lane reads a column: consecutive lanes read consecutive elements
    /// for k in 0..n { s += *a.add(k * n + i); }
    /// ```
    pub static UNCOALESCED_GLOBAL_ACCESS = {
        name: "uncoalesced_global_access",
        group: Perf,
        default: Warn,
        summary: "a global access's warp request touches ≥ 2× (`--coalescing-threshold`) the 32-byte sectors its bytes need",
    }
}

/// "stride 32 × 4 bytes along threadIdx.x" from per-dimension byte strides.
pub fn describe_strides(strides: [i64; 3], width: u32, shape_dims: [u32; 3]) -> String {
    let names = ["threadIdx.x", "threadIdx.y", "threadIdx.z"];
    let parts: Vec<String> = (0..3)
        .filter(|&d| strides[d] != 0 && shape_dims[d] > 1)
        .map(|d| {
            let s = strides[d];
            if s % width as i64 == 0 {
                format!("stride {} × {} bytes along {}", s / width as i64, width, names[d])
            } else {
                format!("stride {} bytes along {}", s, names[d])
            }
        })
        .collect();
    if parts.is_empty() {
        "the same address in every lane".to_string()
    } else {
        parts.join(", ")
    }
}

pub fn check(cx: &LintCx<'_, '_, '_>, out: &mut Vec<Finding>) {
    let shape = cx.facts.shape;
    for x in &cx.facts.accesses {
        let (a, Some(p)) = (&x.access, &x.prediction) else { continue };
        if a.space != Space::Global || p.ideal == 0 {
            continue;
        }
        let ratio = p.sectors.0 as f64 / p.ideal as f64;
        if ratio < cx.coalescing_threshold {
            continue;
        }
        // waste that comes only from masked-off lanes is the branch's, not the access's
        if x.unmasked.is_some_and(|(s, ideal)| ideal > 0 && (s as f64 / ideal as f64) < cx.coalescing_threshold) {
            continue;
        }
        let apart = match p.lane_stride {
            Some(s) if s.abs() >= a.width as i64 && shape.block[0] >= 2 => {
                format!(": each lane {} {} bytes apart", a.kind.verb(), s.abs())
            }
            _ => String::new(),
        };
        let message = format!("{} sectors per warp request, ideal {}{}", p.sectors.0, p.ideal, apart);
        let label = describe_strides(p.strides, a.width, shape.block);
        let mut fd = cx.finding(&UNCOALESCED_GLOBAL_ACCESS, a.inst, message, label);
        fd.note(format!(
            "one warp request moves {} bytes to use {} ({} of {} warps per block; worst warp {} sectors)",
            p.sectors.0 as u64 * 32,
            p.ideal as u64 * 32,
            p.requests,
            shape.warps(),
            p.sectors.1
        ));
        if let Method::Affine { symbolic: true } = p.method {
            fd.note(format!(
                "a stride depends on a value not known statically; it was taken as {} bytes or more",
                crate::memory::SYMBOLIC_STRIDE
            ));
        }
        cx.shape_note(&mut fd);
        fd.help("make threadIdx.x the fastest-varying index of the access (consecutive lanes, consecutive addresses); for a transpose, stage the tile through shared memory; for an array of structs, use a structure of arrays");
        fd.metrics.push(("sectors_per_request", Metric::Int(p.sectors.0 as i64)));
        fd.metrics.push(("ideal_sectors_per_request", Metric::Int(p.ideal as i64)));
        fd.metrics.push(("worst_sectors_per_request", Metric::Int(p.sectors.1 as i64)));
        fd.metrics.push(("requests", Metric::Int(p.requests as i64)));
        fd.metrics.push(("bytes_per_lane", Metric::Int(a.width as i64)));
        out.push(fd);
    }
}
