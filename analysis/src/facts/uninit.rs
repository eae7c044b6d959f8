//! Reads of shared bytes no thread of the block writes
//! (`uninitialized_shared_read`).
//!
//! A kernel's shared arrays are judged when every write to its shared
//! memory is one of its own stores or atomics based on a declared array
//! (no call, no `cp.async` or other instruction that writes memory
//! otherwise, no store whose array is not known). The bytes an array is
//! written are those the stores and atomics based on it write, in every
//! thread that runs them (`Lanes::active`: guards that cannot be evaluated
//! let every thread through, so they count as writing), anywhere in the
//! kernel: a store after the read counts as if it came before. A store in a
//! loop must write the same bytes in the loop's first two iterations (its
//! address and its threads); one that does not (a strided fill, `s[i]` for
//! `i = t; i < n; i += blockDim.x`) leaves its array unjudged. Every array
//! sized at launch (`extern __shared__`) is the same memory, judged as one,
//! and only when its size is given. A load is judged for the threads that
//! run it when every branch deciding that is evaluated in each thread
//! (`Lanes::active_exactly`), in the first iteration of the loops around
//! it; a thread whose bytes are in the array and not all written is
//! reading uninitialised memory. The witness is the first such thread,
//! with a store that would write the element from a thread that does not
//! run it, when one does. What the offsets and the guards rest on that the
//! kernel does not fix (a parameter's sample) is kept (`rests_on`). Only a
//! block shape the kernel is launched with decides (`bounds::launched`).
//!
//! Owns: the judgement. Does not own: offsets (`super::bounds::offsets`),
//! which threads run an access (`super::lanes`) or the message (lints).

use super::bounds::{launched, offsets, Offsets};
use super::lanes::Lanes;
use super::BranchFact;
use crate::divergence::eval::Leaves;
use crate::ir::inst::{AccessKind, Space};
use crate::ir::BlockId;
use crate::memory::{Access, Evals, Query};
use rustc_hash::FxHashMap;

/// A shared load that reads bytes no thread of the block writes, for some
/// thread.
#[derive(Clone, Debug)]
pub struct Uninit {
    /// Index into the function's accesses.
    pub access: usize,
    /// The witness: a thread (linear id) and its byte offset from the
    /// array's start.
    pub thread: usize,
    pub offset: i64,
    /// The threads that read bytes no thread writes, one flag each.
    pub readers: Vec<bool>,
    /// A store (index into the function's accesses) whose address covers
    /// the witness's element in a thread that does not run it, and that
    /// thread.
    pub writer: Option<(usize, usize)>,
    /// The array is the launch's dynamic shared memory.
    pub dynamic: bool,
    /// The sampled values the offsets and guards (the load's and the
    /// stores') rest on.
    pub rests_on: Leaves,
}

/// What the stores based on one array write.
struct Written {
    bytes: Vec<bool>,
    /// Every store based on it is known (else: not judged).
    known: bool,
    /// Each store (index into the accesses) with its offsets in every
    /// thread, guards aside.
    stores: Vec<(usize, Vec<i64>)>,
    rests_on: Leaves,
}

/// The shared loads of kernel `own` that read bytes no thread writes.
pub(super) fn shared(evals: &Evals<'_, '_>, own: &[Access], branches: &[BranchFact], lanes: &mut Lanes<'_, '_, '_>) -> Vec<Uninit> {
    let f = evals.f;
    // a device function's caller may have written them; a shape not launched with decides nothing
    if !f.func.is_entry || !launched(evals) || f.insts.iter().any(|i| i.writes_memory_otherwise()) {
        return Vec::new();
    }
    // the array an access is based on (every dynamic one is one: ""), with its bytes
    let array = |a: &Access| -> Option<(&str, u64, bool)> {
        let sym = crate::memory::base_symbol(f, a)?;
        let arr = f.shared_arrays.get(sym)?;
        Some((if arr.dynamic { "" } else { sym }, arr.bytes?, arr.dynamic))
    };
    let loads = || own.iter().enumerate().filter(|(_, a)| a.kind == AccessKind::Load && a.space == Space::Shared);
    let read: Vec<&str> = loads().filter_map(|(_, a)| Some(array(a)?.0)).collect();
    let mut written: FxHashMap<&str, Written> = FxHashMap::default();
    for (k, a) in own.iter().enumerate().filter(|(_, a)| a.kind.writes()) {
        let Some((key, size, _)) = array(a) else {
            // a store that may write shared memory, to an array not known: nothing is judged
            if a.space == Space::Shared || a.assumed {
                return Vec::new();
            }
            continue;
        };
        // (an array no load reads, or one already not judged, needs no more)
        if !read.contains(&key) || written.get(key).is_some_and(|w| !w.known) {
            continue;
        }
        let w = written.entry(key).or_insert_with(|| Written {
            bytes: vec![false; size as usize],
            known: true,
            stores: Vec::new(),
            rests_on: Leaves::none(),
        });
        let b = f.cfg.block_of(a.inst);
        let Some(Offsets { bytes, rests_on }) = offsets(evals, a, 0) else {
            w.known = false;
            continue;
        };
        let active = lanes.active(b, 0);
        // in a loop: the same bytes in every iteration, or not known
        if f.cfg.loop_of(b).is_some() && (offsets(evals, a, 1).is_none_or(|o| o.bytes != bytes) || lanes.active(b, 1) != active) {
            w.known = false;
            continue;
        }
        for (_, &off) in bytes.iter().enumerate().filter(|&(t, _)| active.get(t).copied().unwrap_or(false)) {
            for x in off.max(0)..off.saturating_add(a.width as i64).min(size as i64) {
                w.bytes[x as usize] = true;
            }
        }
        w.rests_on = w.rests_on.union(&rests_on).union(&guards(evals, branches, b));
        w.stores.push((k, bytes));
    }
    let mut out = Vec::new();
    for (k, a) in loads() {
        let Some((key, size, dynamic)) = array(a) else { continue };
        let none = Written { bytes: vec![false; size as usize], known: true, stores: Vec::new(), rests_on: Leaves::none() };
        let w = written.get(key).unwrap_or(&none);
        let b = f.cfg.block_of(a.inst);
        let (Some(active), Some(Offsets { bytes, rests_on })) = (w.known.then(|| lanes.active_exactly(b)).flatten(), offsets(evals, a, 0))
        else {
            continue;
        };
        let width = a.width as i64;
        // bytes outside the array are `shared_out_of_bounds`'s
        let unwritten = |off: i64| off >= 0 && off.saturating_add(width) <= size as i64 && (off..off + width).any(|x| !w.bytes[x as usize]);
        let readers: Vec<bool> =
            bytes.iter().enumerate().map(|(t, &off)| active.get(t).copied().unwrap_or(false) && unwritten(off)).collect();
        let Some(thread) = readers.iter().position(|&r| r) else { continue };
        let offset = bytes[thread];
        let writer = w.stores.iter().find_map(|(s, offs)| {
            let width = own[*s].width as i64;
            let u = offs.iter().position(|&o| o <= offset && offset < o.saturating_add(width))?;
            Some((*s, u))
        });
        let rests_on = rests_on.union(&guards(evals, branches, b)).union(&w.rests_on);
        out.push(Uninit { access: k, thread, offset, readers, writer, dynamic, rests_on });
    }
    out
}

/// The sampled values the thread-dependent branches deciding whether
/// threads run block `b` rest on.
fn guards(evals: &Evals<'_, '_>, branches: &[BranchFact], b: BlockId) -> Leaves {
    branches
        .iter()
        .filter(|x| x.controls(b))
        .filter_map(|x| evals.eval_resting(x.br.cond, Query::block(0)).map(|(_, on)| on))
        .fold(Leaves::none(), |acc, on| acc.union(&on))
}
