//! Accesses outside the statically sized `.shared` array, or the `.local`
//! depot, they are based on (`shared_out_of_bounds`).
//!
//! An access is judged when its address is one declared `.shared` array
//! (or a function's `.local` depot, which holds all its thread's arrays)
//! (`crate::memory::base_symbol`) plus offsets the analysis evaluates for
//! every thread of the block: the offset of each thread that executes it
//! (its guards decide, `Lanes::active`) in the first iteration of the
//! loops around it, and in the last iteration of its loop when that loop
//! is the only one around it, runs a constant number of times
//! (`Evals::trips`) and the access is on every way through its body (it
//! dominates every latch), against the array's declared bytes: an
//! off-by-one bound (`k <= 16` over a row of 16) leaves in the last
//! iteration. The first thread
//! whose bytes fall outside is the witness, and the count of threads that
//! do is kept. Offsets that rest on sampled values (a parameter) make the
//! fact conditional on them (`rests_on`). Only a block shape the kernel is
//! launched with decides: with none given (assumed) or only `.maxntid`'s
//! largest, nothing is judged (a 16×16 tiled kernel is not flagged for
//! the threads of an assumed 32×8 block). Arrays sized at launch (`extern
//! __shared__`) have the launch's dynamic shared bytes when given
//! (`FunctionIr::size_dynamic_shared`), and are not judged otherwise.
//!
//! Owns: the judgement. Does not own: address values (`crate::memory`),
//! which threads run an access (`super::lanes`) or the message (lints).

use super::lanes::Lanes;
use crate::divergence::eval::Leaves;
use crate::ir::inst::Space;
use crate::memory::{Access, Evals, Query};
use crate::model::ShapeSource;

/// One access that leaves its array for some thread of the block.
#[derive(Clone, Debug)]
pub struct OutOfBounds {
    /// The access: a shared one of the function's accesses, or a `.local`
    /// one.
    pub access: Access,
    /// The declared bytes of the array it is based on.
    pub size: u64,
    /// The witness: a thread (linear id) and its byte offset from the
    /// array's start (in the iteration `iteration` says).
    pub thread: usize,
    pub offset: i64,
    /// How many threads of the block are outside.
    pub threads: usize,
    /// The iteration of the loop around it the witness is in, and the
    /// loop's trip count (`None`: the first iteration of the loops around,
    /// or no loop).
    pub iteration: Option<(usize, usize)>,
    /// The sampled values the offsets rest on (none: every launch).
    pub rests_on: Leaves,
}

/// The shared accesses of `own`, and the `.local` accesses `local`, that
/// leave their array for some thread.
pub(super) fn outside(evals: &Evals<'_, '_>, own: &[Access], local: &[Access], lanes: &mut Lanes<'_, '_, '_>) -> Vec<OutOfBounds> {
    let f = evals.f;
    // a shape the kernel may not be launched with decides nothing
    if !launched(evals) {
        return Vec::new();
    }
    let locals: rustc_hash::FxHashMap<&str, u64> = crate::ir::local_decls(f.func).map(|(v, size)| (v.name, size)).collect();
    let size_of = |a: &Access| {
        let sym = crate::memory::base_symbol(f, a)?;
        match a.space {
            Space::Shared => f.shared_arrays.get(sym)?.bytes,
            Space::Local => locals.get(sym).copied(),
            _ => None,
        }
    };
    let mut out = Vec::new();
    for a in own.iter().filter(|a| a.space == Space::Shared).chain(local) {
        let Some(size) = size_of(a) else { continue };
        let b = f.cfg.block_of(a.inst);
        let last = last_iteration(evals, b);
        for (iteration, trips) in [(0, None)].into_iter().chain(last.map(|(it, n)| (it, Some(n)))) {
            let Some(Offsets { bytes, rests_on }) = offsets(evals, a, iteration) else { continue };
            let active = lanes.active(b, iteration);
            let outside = |t: usize| {
                let off = bytes[t];
                (off < 0 || off.saturating_add(a.width as i64) > size as i64).then_some(off)
            };
            let threads: Vec<(usize, i64)> =
                (0..bytes.len().min(active.len())).filter(|&t| active[t]).filter_map(|t| Some((t, outside(t)?))).collect();
            if let Some(&(thread, offset)) = threads.first() {
                let iteration = trips.map(|n| (iteration, n));
                out.push(OutOfBounds { access: a.clone(), size, thread, offset, threads: threads.len(), iteration, rests_on });
                break;
            }
        }
    }
    out
}

/// The last iteration block `b` runs in of the loop around it, and how
/// many times it runs, when that loop is the only one around `b`, runs a
/// constant number of times and every iteration passes `b` (it dominates
/// the loop's latches): every thread that runs the loop runs `b` then. A
/// header that ends in the exit test runs once more than the loop's trip
/// count: its instructions before the test run in the iteration that
/// leaves.
pub(super) fn last_iteration(evals: &Evals<'_, '_>, b: crate::ir::BlockId) -> Option<(usize, usize)> {
    let (cfg, loops) = (&evals.f.cfg, &evals.f.loops);
    let l = cfg.loop_of(b)?;
    if cfg.loops[l].parent.is_some() || !cfg.loops[l].latches.iter().all(|&x| cfg.dominates(b, x)) {
        return None;
    }
    let crate::ir::loops::Trips::Known(n) = evals.trips(l)? else { return None };
    let e = loops.exit(l)?;
    let runs = if e.at_top && e.block == b { n + 1 } else { n };
    (runs >= 2).then_some((runs - 1, runs))
}

/// Whether the block shape is one the kernel is launched with (given, or
/// `.reqntid`'s): an assumed shape, or only `.maxntid`'s largest, decides
/// nothing about which elements its threads touch.
pub(super) fn launched(evals: &Evals<'_, '_>) -> bool {
    !matches!(evals.shape.source, ShapeSource::Assumed | ShapeSource::Maxntid)
}

/// An access's byte offsets from the start of the array its address is
/// based on, per thread of the block.
pub(super) struct Offsets {
    pub bytes: Vec<i64>,
    /// The sampled values they rest on (the array's own address is none:
    /// offsets are taken from it).
    pub rests_on: Leaves,
}

/// [`Offsets`] of access `a` in `iteration` of the loops around it (`None`
/// when its address or its base cannot be evaluated per thread).
pub(super) fn offsets(evals: &Evals<'_, '_>, a: &Access, iteration: usize) -> Option<Offsets> {
    let Some(v) = a.addr_value else {
        // `[s]`, `[s+8]`: the array's own address, in every thread
        crate::memory::base_symbol(evals.f, a)?;
        return Some(Offsets { bytes: vec![a.offset; evals.shape.threads()], rests_on: Leaves::none() });
    };
    let root = crate::ir::values::array_root(evals.f, v);
    let (addrs, on) = evals.eval_resting(v, Query::block(iteration))?;
    let (base, base_on) = evals.eval_resting(root, Query::block(iteration))?;
    let rests_on = Leaves::of(on.iter().filter(|l| !base_on.iter().any(|b| b == *l)).collect());
    // (wrapping: sampled values may be anything; a wrapped offset is far outside, as it should be)
    let bytes = addrs.iter().zip(base.iter()).map(|(x, b)| x.wrapping_add(a.offset).wrapping_sub(*b)).collect();
    Some(Offsets { bytes, rests_on })
}
