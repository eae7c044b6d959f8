//! `uncoalesced_global_access`: global accesses whose warp request touches
//! at least `threshold` times the sectors the same bytes need.
//!
//! Owns: the decision and the message (numbers and the index in thread
//! terms). The prediction itself is `crate::memory`, read from the facts.

use super::{Finding, Findings, LintCx, Metric};
use crate::ir::inst::Space;
use crate::memory::{Access, Method, Prediction};

declare_lint! {
    /// ### What it does
    /// Predicts, for every global load, store and atomic, how many 32-byte sectors
    /// one warp request touches (sm_70 and newer), for the lanes that execute it
    /// and the block shape, and compares with the sectors the same bytes need when
    /// contiguous and aligned. Reports when the ratio reaches 2
    /// (`--coalescing-threshold` changes it). Contiguous 8- and 16-byte elements
    /// are ideal; so is a misaligned `x[i + 1]` (5 sectors for 4). A request that
    /// touches no more sectors than a coalesced 4-byte-per-lane request would (4
    /// for a full warp), in every warp, is never reported, whatever its ratio: a
    /// byte read from each 4-byte word (`data[i] & 255` narrowed by the compiler)
    /// or one value per row read by a 16×16 block costs what a coalesced read does.
    ///
    /// Loads are judged with the warp's other loads of the same array in the same
    /// loop iteration: global loads are cached in L1 by default on sm_70 and later
    /// (CUDA C++ Programming Guide, "Compute Capability 7.x: Global Memory"), so the
    /// sectors a warp's loads share move from L2 once, and what counts is the union
    /// of the sectors they touch against the bytes they use. A packed struct read
    /// field by field, or `x[2i]` with `x[2i+1]`, is then ideal. Not so for loads that
    /// skip L1 (`.cg`, `.cs`, `.cv`, `.volatile`, ordered loads: PTX ISA, "Cache
    /// Operators"), for a group whose footprint exceeds a warp's share of L1 (4 KB:
    /// 128–256 KB per SM for up to 64 warps), and for stores, which L1 writes
    /// through to L2 request by request (CUDA C++ Best Practices Guide, "Coalesced
    /// Access to Global Memory"): a thread writing 8 consecutive outputs stays
    /// reported. Several fields of one array of structs read in one loop are one
    /// diagnostic naming the fields.
    ///
    /// Each finding says its impact: the sectors it moves beyond the ideal as a
    /// share of the global sectors the kernel's accesses are predicted to move,
    /// each access weighted by how often it runs (the warps that run it, over the
    /// iterations of its loops; per iteration where a trip count is not known).
    /// JSON `impact_share` (and `impact_share_high` where unknown trip counts make
    /// it a range); `confirm` measures the same share on a run.
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

/// The label of an access: its strides in thread terms when the address is
/// affine; when it was evaluated lane by lane (`tid / 2`, `tid & 31`…),
/// the pattern of the first warp's addresses, so that "the same address
/// in every lane" is said only when it is true.
pub fn describe_addresses(p: &Prediction, width: u32, shape: &crate::model::Shape) -> String {
    if !matches!(p.method, Method::Evaluated) {
        return describe_strides(p.strides, width, shape.block);
    }
    let warp: Vec<i64> = p.offsets.iter().take(crate::model::WARP).flatten().collect();
    let mut distinct = warp.clone();
    distinct.sort_unstable();
    distinct.dedup();
    match distinct.len() {
        0 | 1 => "the same address in every lane".to_string(),
        n => {
            let gaps: Vec<i64> = distinct.windows(2).map(|w| w[1] - w[0]).collect();
            let even = gaps.iter().all(|g| *g == gaps[0]) && warp.len() % n == 0;
            match (even, warp.len() / n) {
                (true, 1) => format!("lanes {} bytes apart", gaps[0]),
                (true, per) => format!("{per} lanes share each address: {n} addresses, {} bytes apart", gaps[0]),
                (false, _) => format!("{n} distinct addresses in a warp of {} lanes", warp.len()),
            }
        }
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

pub fn check(cx: &LintCx<'_, '_, '_>, out: &mut Findings) {
    let shape = cx.facts.shape;
    let mut reported: Vec<(&crate::memory::AccessFact, &Access, &Prediction)> = Vec::new();
    for x in &cx.facts.accesses {
        let (a, Some(p)) = (&x.access, &x.prediction) else { continue };
        // a lane stride read from memory: its cost is said with the condition (`stride_dependent_access`)
        if a.space != Space::Global || p.ideal == 0 || p.runtime_stride.is_some() {
            continue;
        }
        let ratio = p.sectors.0 as f64 / p.ideal as f64;
        if ratio < cx.coalescing_threshold {
            continue;
        }
        // no more sectors than a coalesced request of 4 bytes per lane (4 for a full warp):
        // narrow elements at a word stride, a few rows' values: small, whatever the ratio
        let coalesced_words = (shape.threads().min(crate::model::WARP) as u32 * 4).div_ceil(crate::model::SECTOR as u32);
        if p.sectors.1 <= coalesced_words {
            continue;
        }
        // waste that comes only from masked-off lanes is the branch's, not the access's
        if x.unmasked.is_some_and(|(s, ideal)| ideal > 0 && (s as f64 / ideal as f64) < cx.coalescing_threshold) {
            continue;
        }
        // judged with the warp's other loads of the array (L1 keeps what the first brought),
        // or, for a store pair one vector store would make, left to `vectorizable_access`
        if let Some(g) = x.group.map(|g| &cx.facts.groups[g]) {
            let group_ratio = g.sectors.0 as f64 / g.ideal.max(1) as f64;
            match g.kind {
                crate::ir::inst::AccessKind::Load if g.shares_l1() && group_ratio < cx.coalescing_threshold => continue,
                crate::ir::inst::AccessKind::Store if g.vector.is_some() && g.sectors.0 <= g.ideal && ratio <= 2.0 => continue,
                _ => {}
            }
        }
        reported.push((x, a, p));
    }
    // the fields of one array of structs read (or written) in one loop: one diagnostic
    let mut groups: Vec<(RecordKey, Vec<Member>)> = Vec::new();
    for &(x, a, p) in &reported {
        let key = record_key(cx, a, p);
        let field = key.as_ref().and_then(|k| field_offset(shape, p, k.stride));
        match (key, field) {
            (Some(k), Some(off)) => match groups.iter_mut().find(|g| g.0 == k) {
                Some(g) => g.1.push((x, p, off)),
                None => groups.push((k, vec![(x, p, off)])),
            },
            _ => out.push(single(cx, x, p)),
        }
    }
    for (k, members) in groups {
        let mut fields: Vec<i64> = members.iter().map(|m| m.2).collect();
        fields.sort_unstable();
        fields.dedup();
        if fields.len() < 2 {
            out.extend(members.iter().map(|m| single(cx, m.0, m.1)));
            continue;
        }
        out.push(record(cx, &k, &members, &fields));
    }
}

/// An access of a group, its prediction and its field's byte offset.
type Member<'x> = (&'x crate::memory::AccessFact, &'x Prediction, i64);

/// What groups accesses as fields of one array of records: the pointer,
/// the record size (the lanes' stride), the byte strides along y and z,
/// reads or writes, and the innermost loop.
#[derive(Clone, Debug, PartialEq)]
struct RecordKey {
    root: crate::ir::ValueId,
    stride: i64,
    strides_yz: [i64; 2],
    load: bool,
    in_loop: Option<crate::ir::LoopId>,
}

fn record_key(cx: &LintCx<'_, '_, '_>, a: &Access, p: &Prediction) -> Option<RecordKey> {
    let f = cx.facts.f;
    let stride = p.lane_stride?.abs();
    // a record holds more than the one element read, and its size is known (a stride
    // taken as large for an unknown row pitch is no record size)
    if stride < 2 * a.width as i64 || cx.facts.shape.block[0] < 2 || matches!(p.method, Method::Affine { symbolic: true }) {
        return None;
    }
    Some(RecordKey {
        root: crate::ir::values::root(f, a.addr_value?),
        stride,
        strides_yz: [p.strides[1], p.strides[2]],
        load: a.kind == crate::ir::inst::AccessKind::Load,
        in_loop: f.cfg.loop_of(f.cfg.block_of(a.inst)),
    })
}

/// The byte offset of the access in its record: the first active thread's
/// offset less its steps along x, y and z, modulo the record size.
fn field_offset(shape: &crate::model::Shape, p: &Prediction, record: i64) -> Option<i64> {
    let (t, off) = p.offsets.iter().enumerate().find_map(|(t, o)| o.map(|o| (t, o)))?;
    let lane = shape.lanes().get(t)?;
    let base = off - p.strides[0] * lane.tid[0] - p.strides[1] * lane.tid[1] - p.strides[2] * lane.tid[2];
    Some(base.rem_euclid(record))
}

/// One access.
fn single(cx: &LintCx<'_, '_, '_>, x: &crate::memory::AccessFact, p: &Prediction) -> Finding {
    let shape = cx.facts.shape;
    let a = &x.access;
    let apart = match p.lane_stride {
        Some(s) if s.abs() >= a.width as i64 && shape.block[0] >= 2 => {
            format!(": each lane {} {} bytes apart", a.kind.verb(), s.abs())
        }
        _ => String::new(),
    };
    let message = format!("{} sectors per warp request, ideal {}{}", p.sectors.0, p.ideal, apart);
    let label = describe_addresses(p, a.width, shape);
    let mut fd = cx.finding(&UNCOALESCED_GLOBAL_ACCESS, a.inst, message, label);
    fd.assumes = cx.facts.access_assumes(x);
    explain_cost(cx, &mut fd, p);
    cx.impact_note(&mut fd, x, "the sectors it moves beyond the ideal", "global-memory sectors");
    fd.help("make threadIdx.x the fastest-varying index of the access (consecutive lanes, consecutive addresses); for a transpose, stage the tile through shared memory; for an array of structs, use a structure of arrays");
    metrics(cx, &mut fd, x, p);
    fd
}

/// Several fields of one array of records: one finding at the first, the
/// others as secondary spans.
fn record(cx: &LintCx<'_, '_, '_>, k: &RecordKey, members: &[Member], fields: &[i64]) -> Finding {
    let (x, p, _) = members.iter().min_by_key(|m| m.0.access.inst).copied().expect("a group has members");
    let a = &x.access;
    let verb = if k.load { "reads" } else { "writes" };
    // every byte of the "record" accessed, element by element: a run of
    // consecutive elements per lane (`y[8 * t + l]` for l in 0..8), not a struct
    let w = a.width as i64;
    let run = members.iter().all(|m| m.0.access.width == a.width) && fields.iter().enumerate().all(|(i, &o)| o == i as i64 * w) && fields.len() as i64 * w == k.stride;
    let name = |off: i64| if run { format!("element {} of each lane's run", off / w) } else { format!("the field at byte {off}") };
    let message = if run {
        format!(
            "each lane {verb} {} consecutive {w}-byte elements: lanes are {} bytes apart, {} sectors per warp request where {} would do",
            fields.len(),
            k.stride,
            p.sectors.0,
            p.ideal
        )
    } else {
        format!(
            "{verb} {} fields of each {}-byte record of one array: lanes are {} bytes apart, {} sectors per warp request where {} would do",
            fields.len(),
            k.stride,
            k.stride,
            p.sectors.0,
            p.ideal
        )
    };
    let label = name(field_offset(cx.facts.shape, p, k.stride).unwrap_or(0));
    let mut fd = cx.finding(&UNCOALESCED_GLOBAL_ACCESS, a.inst, message, label);
    fd.assumes = cx.facts.assumes_all(members.iter().map(|m| m.0));
    for (m, _, off) in members.iter().filter(|m| m.0.access.inst != a.inst) {
        if let Some(pos) = cx.resolve(m.access.inst).primary {
            if !fd.secondary.iter().any(|(q, _)| *q == pos) && fd.span.as_ref() != Some(&pos) {
                fd.secondary.push((pos, name(*off)));
            }
        }
    }
    explain_cost(cx, &mut fd, p);
    if let Some(g) = x.group.map(|g| &cx.facts.groups[g]).filter(|g| g.shares_l1()) {
        fd.note(format!(
            "together the warp's {} loads of the array move {} bytes to use {} ({} sectors where {} would do)",
            g.members.len(),
            g.sectors.0 as u64 * 32,
            g.bytes_used,
            g.sectors.0,
            g.ideal
        ));
    }
    if run {
        fd.note(format!("the {} accesses of the run are one layout problem: each request of the warp touches one element per lane, {} bytes apart", members.len(), k.stride));
        fd.help(format!(
            "let neighbouring lanes {} neighbouring elements: make the lane's index the fastest-varying one (`y[l * blockDim.x + t]` rather than `y[{} * t + l]`), or stage the run through shared memory",
            if k.load { "read" } else { "write" },
            fields.len()
        ));
    } else {
        fd.note(format!(
            "fields at bytes {} of each record; the {} accesses of the group are one layout problem",
            fields.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(", "),
            members.len()
        ));
        fd.help("store the fields as a structure of arrays (one array per field), so that consecutive lanes read consecutive elements; or stage whole records through shared memory");
    }
    metrics(cx, &mut fd, x, p);
    fd.metrics.push(("fields", Metric::Int(fields.len() as i64)));
    fd.metrics.push(("record_bytes", Metric::Int(k.stride)));
    fd.metrics.push(("accesses", Metric::Int(members.len() as i64)));
    fd
}

fn explain_cost(cx: &LintCx<'_, '_, '_>, fd: &mut Finding, p: &Prediction) {
    let shape = cx.facts.shape;
    fd.note(format!(
        "one warp request moves {} bytes to use {} ({} of {} warps per block; worst warp {} sectors)",
        p.sectors.0 as u64 * 32,
        p.ideal as u64 * 32,
        p.requests,
        shape.warps(),
        p.sectors.1
    ));
    if let Method::Affine { symbolic: true } = p.method {
        fd.note(format!("a stride depends on a value not known statically; it was taken as {} bytes or more", crate::memory::SYMBOLIC_STRIDE));
    }
    cx.shape_note(fd);
}

fn metrics(cx: &LintCx<'_, '_, '_>, fd: &mut Finding, x: &crate::memory::AccessFact, p: &Prediction) {
    let a = &x.access;
    // the warp's footprint with the other accesses of its group
    if let Some(g) = x.group.map(|g| &cx.facts.groups[g]) {
        fd.metrics.push(("group_sectors", Metric::Int(g.sectors.0 as i64)));
        fd.metrics.push(("group_ideal_sectors", Metric::Int(g.ideal as i64)));
        fd.metrics.push(("group_bytes_used", Metric::Int(g.bytes_used as i64)));
        fd.metrics.push(("group_members", Metric::Int(g.members.len() as i64)));
    }
    fd.rank = Some(super::Rank { value: p.sectors.0 as i64, unit: " sectors per warp request" });
    fd.metrics.push(("sectors_per_request", Metric::Int(p.sectors.0 as i64)));
    fd.metrics.push(("ideal_sectors_per_request", Metric::Int(p.ideal as i64)));
    fd.metrics.push(("worst_sectors_per_request", Metric::Int(p.sectors.1 as i64)));
    fd.metrics.push(("requests", Metric::Int(p.requests as i64)));
    fd.metrics.push(("bytes_per_lane", Metric::Int(a.width as i64)));
}
