//! `misaligned_global_access`: global accesses that are coalesced when
//! their rows (or offsets) start on a 32-byte sector, but whose alignment
//! is a runtime value — a row pitch along `threadIdx.y`, an offset added
//! to the base, a loop's runtime step — and that touch more sectors when it
//! is not.
//!
//! Owns: the decision and the message. Does not own: the misaligned
//! prediction (`crate::memory::Prediction::misaligned`), read from the facts.

use super::{Findings, LintCx, Metric};
use crate::ir::inst::{Space, Ty};
use crate::memory::{MisalignCause, SECTOR};

declare_lint! {
    /// ### What it does
    /// Predicts, for a global access whose rows have a runtime pitch
    /// (`a[y * w + x]` with `w` a parameter) or whose address adds a runtime
    /// offset (`a[i + off]`), or that a loop walks by a runtime number of
    /// elements (`a[k * s + t]`, `i += c`), the sectors one warp request
    /// touches when the row, offset or iteration does not start on a
    /// 32-byte sector, and reports when that is more than when it does
    /// (e.g. 5 instead of 4 for 32 `f32`). The typical prediction of other
    /// lints assumes aligned rows and the loop's first iteration.
    ///
    /// ### Why is this bad
    /// A warp reading 128 contiguous bytes that start in the middle of a
    /// sector moves 5 sectors instead of 4: up to 25 % more memory traffic on
    /// every row whose start is not a multiple of 32 bytes. Whether that
    /// happens depends on the data's dimensions, so it shows up only on some
    /// inputs.
    ///
    /// ### Example
    /// ```rust
    /// // rows of `w` floats: aligned only when w is a multiple of 8
    /// let (x, y) = (thread::thread_idx_x() as usize, thread::thread_idx_y() as usize);
    /// *out.add(y * w + x) = *a.add(y * w + x) * 2.0;
    /// ```
    /// Use instead: pad each row to a multiple of 32 bytes (8 `f32`) and pass
    /// the padded pitch, as `cudaMallocPitch` does:
    /// ```rust
    /// let pitch = (w + 7) / 8 * 8;
    /// *out.add(y * pitch + x) = *a.add(y * pitch + x) * 2.0;
    /// ```
    pub static MISALIGNED_GLOBAL_ACCESS = {
        name: "misaligned_global_access",
        group: Pedantic,
        default: Allow,
        summary: "a global access touches more sectors when a runtime row pitch, offset or loop step moves it off a 32-byte boundary",
    }
}

pub fn check(cx: &LintCx<'_, '_, '_>, out: &mut Findings) {
    let f = cx.facts.f;
    for x in &cx.facts.accesses {
        let (a, Some(p)) = (&x.access, &x.prediction) else { continue };
        let Some(m) = p.misaligned.filter(|_| a.space == Space::Global) else { continue };
        // an access already reported as uncoalesced has a bigger problem than its alignment
        if p.ideal == 0 || (p.sectors.0 as f64 / p.ideal as f64) >= cx.coalescing_threshold {
            continue;
        }
        let what = match m.cause {
            MisalignCause::RowPitch => "the row pitch",
            MisalignCause::Offset => "an offset added to the address",
            MisalignCause::UnknownBase => continue,
        };
        let inst = &f.insts[a.inst];
        let elem = (a.width / inst.vec.max(1) as u32).max(1) as i64;
        let per_sector = SECTOR / elem;
        let elems = match inst.ty {
            Some(Ty::F(b)) => format!("{per_sector} `f{b}`"),
            Some(Ty::U(b)) => format!("{per_sector} `u{b}`"),
            Some(Ty::S(b)) => format!("{per_sector} `i{b}`"),
            _ => format!("{per_sector} elements of {elem} bytes"),
        };
        let message = format!(
            "{} sectors per warp request when {what} is not a multiple of {SECTOR} bytes, {} when it is",
            m.sectors, p.sectors.0
        );
        let label = format!("{what} is a runtime value");
        let mut fd = cx.finding(&super::MISALIGNED_GLOBAL_ACCESS, a.inst, message, label);
        fd.assumes = cx.facts.access_assumes(x);
        fd.note(format!(
            "each misaligned warp request moves {} bytes more ({} of {} warps per block request this access)",
            (m.sectors - p.sectors.0) as u64 * SECTOR as u64,
            p.requests,
            cx.facts.shape.warps()
        ));
        cx.shape_note(&mut fd);
        fd.help(match m.cause {
            MisalignCause::RowPitch => format!("pad each row to a multiple of {elems} (32 bytes) and pass the padded pitch"),
            _ => format!("keep the offset a multiple of {elems} (32 bytes)"),
        });
        fd.rank = Some(super::Rank { value: m.sectors as i64, unit: " sectors per warp request when misaligned" });
        fd.metrics.push(("sectors_per_request", Metric::Int(p.sectors.0 as i64)));
        fd.metrics.push(("misaligned_sectors_per_request", Metric::Int(m.sectors as i64)));
        fd.metrics.push(("ideal_sectors_per_request", Metric::Int(p.ideal as i64)));
        fd.metrics.push(("bytes_per_lane", Metric::Int(a.width as i64)));
        out.push(fd);
    }
}
