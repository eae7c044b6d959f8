//! `uncoalesced_global_access`: global accesses whose warp request touches
//! at least `threshold` times the sectors the same bytes need.
//!
//! Owns: the decision and the message (numbers and the index in thread
//! terms). The prediction itself is `crate::memory`.

use super::{registry::UNCOALESCED_GLOBAL_ACCESS, Ctx, Finding, Metric};
use crate::ir::space::Space;
use crate::memory::Method;

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

pub fn check(ctx: &Ctx<'_, '_>, out: &mut Vec<Finding>) {
    for (a, p) in ctx.memory() {
        let Some(p) = p else { continue };
        if a.space != Space::Global || p.ideal == 0 {
            continue;
        }
        let ratio = p.sectors.0 as f64 / p.ideal as f64;
        if ratio < ctx.coalescing_threshold {
            continue;
        }
        // waste that comes only from masked-off lanes is the branch's, not the access's
        let full = crate::memory::predict(ctx.f, ctx.d, a, ctx.shape, &vec![true; ctx.shape.threads()]);
        if full.is_some_and(|q| q.ideal > 0 && (q.sectors.0 as f64 / q.ideal as f64) < ctx.coalescing_threshold) {
            continue;
        }
        let apart = match p.lane_stride {
            Some(s) if s.abs() >= a.width as i64 && ctx.shape.block[0] >= 2 => {
                format!(": each lane {} {} bytes apart", a.kind.verb(), s.abs())
            }
            _ => String::new(),
        };
        let message = format!("{} sectors per warp request, ideal {}{}", p.sectors.0, p.ideal, apart);
        let label = describe_strides(p.strides, a.width, ctx.shape.block);
        let mut fd = ctx.finding(&UNCOALESCED_GLOBAL_ACCESS, a.inst, message, label);
        fd.note(format!(
            "one warp request moves {} bytes to use {} ({} of {} warps per block; worst warp {} sectors)",
            p.sectors.0 as u64 * 32,
            p.ideal as u64 * 32,
            p.requests,
            ctx.shape.warps(),
            p.sectors.1
        ));
        if let Method::Affine { symbolic: true } = p.method {
            fd.note(format!(
                "a stride depends on a value not known statically; it was taken as {} bytes or more",
                crate::memory::SYMBOLIC_STRIDE
            ));
        }
        ctx.shape_note(&mut fd);
        fd.help("make threadIdx.x the fastest-varying index of the access (consecutive lanes, consecutive addresses); for a transpose, stage the tile through shared memory; for an array of structs, use a structure of arrays");
        fd.metrics.push(("sectors_per_request", Metric::Int(p.sectors.0 as i64)));
        fd.metrics.push(("ideal_sectors_per_request", Metric::Int(p.ideal as i64)));
        fd.metrics.push(("worst_sectors_per_request", Metric::Int(p.sectors.1 as i64)));
        fd.metrics.push(("requests", Metric::Int(p.requests as i64)));
        fd.metrics.push(("bytes_per_lane", Metric::Int(a.width as i64)));
        out.push(fd);
    }
}
