//! Reads of shared bytes no thread of the block writes
//! (`uninitialized_shared_read`).
//!
//! A kernel's shared arrays are judged when every write to its shared
//! memory is one of its own stores or atomics based on a declared array
//! (no call, no `cp.async` or other instruction that writes memory
//! otherwise, no store whose array is not known). The bytes an array is
//! written are those the stores and atomics based on it write, in every
//! thread that runs them (`Lanes::active`: guards that cannot be evaluated
//! let every thread through, so they count as writing). A load reads an
//! element no store writes at all, or one written only after it: no store
//! that may run before it (earlier in reverse post-order, which a store on
//! a way to the load is in a reducible CFG, or in a loop around the load)
//! writes it. A store in a
//! loop must write the same bytes in the loop's first two iterations (its
//! address and its threads); one that does not (a strided fill, `s[i]` for
//! `i = t; i < n; i += blockDim.x`) leaves its array unjudged. Every array
//! sized at launch (`extern __shared__`) is the same memory, judged as one,
//! and only when its size is given. A load is judged for the threads that
//! run it when every branch deciding that is evaluated in each thread
//! (`Lanes::active_exactly`), in the first iteration of the loops around
//! it, and in the last of its loop when `bounds::last_iteration` knows it;
//! a thread whose bytes are in the array and not all written is
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
    /// the witness's element, and the thread: one that does not run it, or
    /// (`later`) one that runs it after the load.
    pub writer: Option<(usize, usize)>,
    /// The element is written, but only after the load: no store that may
    /// run before it (earlier in the program, or in a loop around it)
    /// writes it.
    pub later: bool,
    /// The iteration of the loop around it the witness is in, and how many
    /// times the load runs (`None`: the first iteration, or no loop).
    pub iteration: Option<(usize, usize)>,
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
    stores: Vec<Store>,
    rests_on: Leaves,
}

/// A store (or atomic) based on an array: its index into the accesses,
/// its offsets in every thread (guards aside) and the threads that run it.
struct Store {
    access: usize,
    offsets: Vec<i64>,
    active: super::lanes::Threads,
}

impl Store {
    /// Mark the bytes it writes (in the threads that run it) in `bits`.
    fn mark(&self, width: u32, bits: &mut [bool]) {
        for (_, &off) in self.offsets.iter().enumerate().filter(|&(t, _)| self.active.get(t).copied().unwrap_or(false)) {
            for x in off.max(0)..off.saturating_add(width as i64).min(bits.len() as i64) {
                bits[x as usize] = true;
            }
        }
    }

    /// A thread whose bytes cover byte `at` (among those that run it, or
    /// any).
    fn covering(&self, width: u32, at: i64, running: bool) -> Option<usize> {
        let runs = |t: usize| !running || self.active.get(t).copied().unwrap_or(false);
        self.offsets.iter().enumerate().position(|(t, &o)| runs(t) && o <= at && at < o.saturating_add(width as i64))
    }
}

/// The shared loads of kernel `own` that read bytes no thread writes.
pub(super) fn shared(evals: &Evals<'_, '_>, own: &[Access], branches: &[BranchFact], lanes: &mut Lanes<'_, '_, '_>) -> Vec<Uninit> {
    let f = evals.f;
    // a device function's caller may have written them; a shape not launched with decides nothing
    if !f.func.is_entry || !launched(evals) || f.cfg.is_irreducible() || f.insts.iter().any(|i| i.writes_memory_otherwise()) {
        return Vec::new();
    }
    // the array an access is based on (every dynamic one is one: ""), with its bytes
    let array = |a: &Access| -> Option<(&str, u64, bool)> {
        let sym = crate::memory::base_symbol(f, a)?;
        let arr = f.shared_arrays.get(sym)?;
        Some((if arr.dynamic { "" } else { sym }, arr.bytes?, arr.dynamic))
    };
    let loads = || own.iter().enumerate().filter(|(_, a)| a.kind == AccessKind::Load && a.space == Space::Shared);
    // the arrays some load reads, each once
    let mut read: Vec<&str> = loads().filter_map(|(_, a)| Some(array(a)?.0)).collect();
    read.sort_unstable();
    read.dedup();
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
        if read.binary_search(&key).is_err() || written.get(key).is_some_and(|w| !w.known) {
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
        let store = Store { access: k, offsets: bytes, active };
        store.mark(a.width, &mut w.bytes);
        w.rests_on = w.rests_on.union(&rests_on).union(&guards(evals, branches, b));
        w.stores.push(store);
    }
    // where an access is in the program: a store that may run before a load comes earlier in
    // this order (the CFG is reducible), or is in a loop around the load
    let place = |k: usize| (f.cfg.rpo_pos(f.cfg.block_of(own[k].inst)).unwrap_or(usize::MAX), own[k].inst.index());
    let mut out = Vec::new();
    for key in read {
        let w = written.get(key);
        if w.is_some_and(|w| !w.known) {
            continue;
        }
        let stores: &[Store] = w.map_or(&[], |w| &w.stores);
        // the loads of this array and its stores, in program order
        let mut events: Vec<(usize, bool)> =
            loads().filter(|(_, a)| array(a).is_some_and(|x| x.0 == key)).map(|(k, _)| (k, false)).collect();
        events.extend((0..stores.len()).map(|s| (s, true)));
        events.sort_by_key(|&(x, store)| place(if store { stores[x].access } else { x }));
        let Some(&(first, _)) = events.iter().find(|e| !e.1) else { continue };
        let Some((_, size, dynamic)) = array(&own[first]) else { continue };
        let union = w.map_or_else(|| vec![false; size as usize], |w| w.bytes.clone());
        // the bytes the stores of each loop write (a load in the loop may follow them)
        let mut in_loop: FxHashMap<crate::ir::LoopId, Vec<bool>> = FxHashMap::default();
        for s in stores {
            for l in f.cfg.loops_containing(f.cfg.block_of(own[s.access].inst)) {
                s.mark(own[s.access].width, in_loop.entry(l).or_insert_with(|| vec![false; size as usize]));
            }
        }
        let mut before = vec![false; size as usize];
        for (x, is_store) in events {
            if is_store {
                stores[x].mark(own[stores[x].access].width, &mut before);
                continue;
            }
            let (k, a) = (x, &own[x]);
            let b = f.cfg.block_of(a.inst);
            let Some(active) = lanes.active_exactly(b) else { continue };
            let loops: Vec<&Vec<bool>> = f.cfg.loops_containing(b).into_iter().filter_map(|l| in_loop.get(&l)).collect();
            let width = a.width as i64;
            // bytes outside the array are `shared_out_of_bounds`'s
            let inside = |off: i64| off >= 0 && off.saturating_add(width) <= size as i64;
            let never = |off: i64| inside(off) && (off..off + width).any(|x| !union[x as usize]);
            let not_yet = |off: i64| inside(off) && (off..off + width).any(|x| !before[x as usize] && !loops.iter().any(|l| l[x as usize]));
            let runs = |t: usize| active.get(t).copied().unwrap_or(false);
            // the first iteration of the loops around, and the last of its loop when that is known
            // (every thread that runs the loop runs the load then)
            let last = super::bounds::last_iteration(evals, b);
            let judged = [(0, None)].into_iter().chain(last.map(|(it, n)| (it, Some(n)))).find_map(|(it, trips)| {
                let Offsets { bytes, rests_on } = offsets(evals, a, it)?;
                let mut readers: Vec<bool> = bytes.iter().enumerate().map(|(t, &off)| runs(t) && never(off)).collect();
                let mut later = false;
                if !readers.contains(&true) {
                    // every element read is written somewhere: before the read?
                    readers = bytes.iter().enumerate().map(|(t, &off)| runs(t) && not_yet(off)).collect();
                    later = true;
                }
                let thread = readers.iter().position(|&r| r)?;
                Some((bytes[thread], thread, readers, later, trips.map(|n| (it, n)), rests_on))
            });
            let Some((offset, thread, readers, later, iteration, rests_on)) = judged else { continue };
            // the store that writes the element: later, from a thread that runs it; else from a
            // thread that does not run it
            let writer = stores.iter().find_map(|s| Some((s.access, s.covering(own[s.access].width, offset, later)?)));
            let rests_on = rests_on.union(&guards(evals, branches, b)).union(&w.map_or_else(Leaves::none, |w| w.rests_on.clone()));
            out.push(Uninit { access: k, thread, offset, readers, writer, later, iteration, dynamic, rests_on });
        }
    }
    out.sort_by_key(|u| u.access);
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
