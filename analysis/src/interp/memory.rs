//! Memories of the PTX interpreter: device (global) memory shared by all
//! blocks, per-block shared memory, per-thread local memory, and the
//! address windows that generic addresses fall into; shadow memory for
//! races within a block.
//!
//! Owns: the address layout, byte-level loads and stores, atomics on global
//! memory (blocks run in parallel, so global words are atomics), and the
//! race shadow. Does not own: instruction semantics or scheduling.

use crate::races::RaceKind;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::Relaxed};
use std::sync::Mutex;

/// Generic addresses at or above this are shared memory (offset = address - base).
pub const SHARED_WINDOW: u64 = 0x7e00_0000_0000;
/// Generic addresses at or above this are the thread's local memory.
pub const LOCAL_WINDOW: u64 = 0x7f00_0000_0000;
/// First device allocation.
const GLOBAL_START: u64 = 0x1_0000_0000;

/// An access outside every allocation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fault {
    pub addr: u64,
    pub len: u32,
    pub what: &'static str,
}

struct Region {
    base: u64,
    len: u64,
    words: Words,
}

/// A region's words: a vector, or for a large zero-filled buffer pages
/// mapped from the system, which stay untouched (and cost nothing) until a
/// run touches them. (`calloc` would not do: once glibc has freed one such
/// buffer it serves the next from its heap and zeroes all of it.)
enum Words {
    Owned(Vec<AtomicU32>),
    #[cfg(unix)]
    Mapped {
        ptr: std::ptr::NonNull<AtomicU32>,
        len: usize,
    },
}

// SAFETY: the mapping is this value's alone, and its words are atomics
#[cfg(unix)]
unsafe impl Send for Words {}
// SAFETY: as above: shared use goes through the atomics
#[cfg(unix)]
unsafe impl Sync for Words {}

/// Zero-filled buffers of at least this many bytes are mapped.
const MAPPED_BYTES: usize = 1 << 16;

impl Words {
    /// `n` zero words.
    fn zeroed(n: usize) -> Words {
        #[cfg(unix)]
        if n * 4 >= MAPPED_BYTES {
            // SAFETY: a fresh private anonymous mapping of `n` words, read and written only
            // through the atomics `deref` gives, unmapped once in `drop`
            let p = unsafe {
                libc::mmap(std::ptr::null_mut(), n * 4, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1, 0)
            };
            if let Some(ptr) = std::ptr::NonNull::new(p.cast::<AtomicU32>()).filter(|_| p != libc::MAP_FAILED) {
                return Words::Mapped { ptr, len: n };
            }
        }
        Words::Owned((0..n).map(|_| AtomicU32::new(0)).collect())
    }
}

impl std::ops::Deref for Words {
    type Target = [AtomicU32];
    fn deref(&self) -> &[AtomicU32] {
        match self {
            Words::Owned(v) => v,
            // SAFETY: `len` words mapped readable and writable, zero-filled by the system
            // (a valid `AtomicU32` each), alive as long as `self`
            #[cfg(unix)]
            Words::Mapped { ptr, len } => unsafe { std::slice::from_raw_parts(ptr.as_ptr(), *len) },
        }
    }
}

impl Drop for Words {
    fn drop(&mut self) {
        #[cfg(unix)]
        if let Words::Mapped { ptr, len } = self {
            // SAFETY: the mapping `zeroed` made, unmapped once
            unsafe { libc::munmap(ptr.as_ptr().cast(), *len * 4) };
        }
    }
}

/// Device memory: allocations at 256-byte aligned addresses.
pub struct Global {
    regions: Vec<Region>,
    next: u64,
    /// Serialises 64-bit and floating-point read-modify-write atomics.
    rmw: Mutex<()>,
    /// Counts read-modify-writes: each takes the next value as it
    /// succeeds, so two on one address are numbered in their
    /// modification order.
    clock: AtomicU64,
}

impl Default for Global {
    fn default() -> Self {
        Global { regions: Vec::new(), next: GLOBAL_START, rmw: Mutex::new(()), clock: AtomicU64::new(0) }
    }
}

impl Global {
    /// Allocate and fill a buffer; its device address.
    pub fn alloc(&mut self, bytes: &[u8]) -> u64 {
        let mut words: Vec<AtomicU32> = Vec::with_capacity(bytes.len().div_ceil(4));
        for c in bytes.chunks(4) {
            let mut w = [0u8; 4];
            w[..c.len()].copy_from_slice(c);
            words.push(AtomicU32::new(u32::from_le_bytes(w)));
        }
        self.place(bytes.len() as u64, Words::Owned(words))
    }

    /// Put a buffer of `len` bytes held in `words` at the next address.
    fn place(&mut self, len: u64, words: Words) -> u64 {
        let base = self.next;
        self.regions.push(Region { base, len, words });
        // a gap after each buffer so that overruns fault instead of landing in the next one
        self.next = (base + len + 4096 + 255) & !255;
        base
    }

    /// Allocate a zero-filled buffer of `len` bytes; its device address.
    /// A large one costs only the pages a run touches ([`Words::zeroed`]).
    pub fn alloc_zeroed(&mut self, len: u64) -> u64 {
        self.place(len, Words::zeroed(len.div_ceil(4) as usize))
    }

    fn region(&self, addr: u64, len: u32) -> Option<&Region> {
        let i = self.regions.partition_point(|r| r.base <= addr);
        let r = self.regions.get(i.checked_sub(1)?)?;
        (addr + len as u64 <= r.base + r.len).then_some(r)
    }

    /// The bytes of an allocation (for reading results back).
    pub fn read(&self, addr: u64, len: usize) -> Option<Vec<u8>> {
        let r = self.region(addr, len as u32)?;
        let mut out = Vec::with_capacity(len);
        for k in 0..len as u64 {
            let a = addr - r.base + k;
            out.push((r.words[(a / 4) as usize].load(Relaxed) >> ((a % 4) * 8)) as u8);
        }
        Some(out)
    }

    /// Little-endian load of `len` ≤ 8 bytes.
    pub fn load(&self, addr: u64, len: u32) -> Result<u64, Fault> {
        let r = self.region(addr, len).ok_or(Fault { addr, len, what: "global" })?;
        let off = addr - r.base;
        if off % 4 == 0 && len == 4 {
            return Ok(r.words[(off / 4) as usize].load(Relaxed) as u64);
        }
        if off % 4 == 0 && len == 8 {
            let w = (off / 4) as usize;
            return Ok(r.words[w].load(Relaxed) as u64 | (r.words[w + 1].load(Relaxed) as u64) << 32);
        }
        let mut v = 0u64;
        for k in 0..len as u64 {
            let a = off + k;
            let b = (r.words[(a / 4) as usize].load(Relaxed) >> ((a % 4) * 8)) as u8;
            v |= (b as u64) << (8 * k);
        }
        Ok(v)
    }

    pub fn store(&self, addr: u64, len: u32, v: u64) -> Result<(), Fault> {
        let r = self.region(addr, len).ok_or(Fault { addr, len, what: "global" })?;
        let off = addr - r.base;
        if off % 4 == 0 && len == 4 {
            r.words[(off / 4) as usize].store(v as u32, Relaxed);
            return Ok(());
        }
        if off % 4 == 0 && len == 8 {
            r.words[(off / 4) as usize].store(v as u32, Relaxed);
            r.words[(off / 4) as usize + 1].store((v >> 32) as u32, Relaxed);
            return Ok(());
        }
        for k in 0..len as u64 {
            let a = off + k;
            let shift = (a % 4) * 8;
            let byte = ((v >> (8 * k)) & 0xff) as u32;
            let _ = r.words[(a / 4) as usize].fetch_update(Relaxed, Relaxed, |w| Some((w & !(0xff << shift)) | (byte << shift)));
        }
        Ok(())
    }

    /// Atomic read-modify-write of a 4- or 8-byte location; returns the
    /// old value and the update's place in the location's modification
    /// order (a number from [`Global`]'s clock, later for a later update).
    pub fn rmw(&self, addr: u64, len: u32, f: &dyn Fn(u64) -> u64) -> Result<(u64, u64), Fault> {
        let r = self.region(addr, len).ok_or(Fault { addr, len, what: "global" })?;
        let off = addr - r.base;
        if len == 4 && off % 4 == 0 {
            let w = &r.words[(off / 4) as usize];
            // the number taken by the try that succeeds: after the update it read the value of
            let seq = std::cell::Cell::new(0);
            let old = w
                .fetch_update(Relaxed, Relaxed, |old| {
                    seq.set(self.clock.fetch_add(1, Relaxed));
                    Some(f(old as u64) as u32)
                })
                .unwrap_or(0) as u64;
            return Ok((old, seq.get()));
        }
        let _g = self.rmw.lock().unwrap_or_else(|e| e.into_inner());
        let old = self.load(addr, len)?;
        self.store(addr, len, f(old))?;
        Ok((old, self.clock.fetch_add(1, Relaxed)))
    }
}

/// Plain byte memory (shared memory of a block, local memory of a thread).
pub fn load_bytes(mem: &[u8], off: u64, len: u32, what: &'static str, addr: u64) -> Result<u64, Fault> {
    let o = off as usize;
    let b = mem.get(o..o + len as usize).ok_or(Fault { addr, len, what })?;
    let mut v = [0u8; 8];
    v[..b.len()].copy_from_slice(b);
    Ok(u64::from_le_bytes(v))
}

pub fn store_bytes(mem: &mut [u8], off: u64, len: u32, v: u64, what: &'static str, addr: u64) -> Result<(), Fault> {
    let o = off as usize;
    let b = mem.get_mut(o..o + len as usize).ok_or(Fault { addr, len, what })?;
    b.copy_from_slice(&v.to_le_bytes()[..len as usize]);
    Ok(())
}

/// A race seen between two threads of one block in one barrier interval,
/// between the accesses at site keys `first` (earlier) and `second`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Conflict {
    pub kind: RaceKind,
    pub shared: bool,
    pub first: usize,
    pub second: usize,
    /// The earlier access's thread; `None` when several threads read first.
    pub first_thread: Option<u32>,
    pub second_thread: u32,
    /// A write-after-write where every time it was seen the later write
    /// stored the bytes the earlier one had stored (a benign race).
    pub same_value: bool,
}

const NONE: u32 = 0;
/// Bytes of one page of the global shadow (larger pages, 32 and 128 bytes,
/// measured no faster: what a fresh page costs to clear, a lookup saves).
const PAGE: u64 = 8;

/// Bytes of shared memory whose shadow cells are made at once ([`Shadow`]).
const SHARED_RUN: u64 = 512;
const MANY: u32 = u32::MAX;

/// Who touched one byte in the current barrier interval (thread ids + 1).
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
struct Cell {
    epoch: u32,
    writer: u32,
    wsite: u32,
    reader: u32,
    rsite: u32,
    /// The latest reader other than `reader` (a write by `reader` itself
    /// races with this one).
    reader2: u32,
    rsite2: u32,
    atomic: u32,
    asite: u32,
    /// The warp epochs (`__syncwarp()` count of the accessing warp) of the
    /// last write, the latest read and the last atomic, and the warp of the
    /// readers (`MANY`: several warps).
    wwe: u32,
    rwe: u32,
    awe: u32,
    rwarp: u32,
    /// The byte the last write stored.
    wval: u8,
}

/// Who touched one 4-byte global word in a whole block run, for the races
/// between blocks: per kind (write, read, atomic) the bytes touched (a
/// mask) and the first thread (+ 1; 0: nobody) and site.
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub struct GridCell {
    pub writer: (u32, u32),
    pub reader: (u32, u32),
    pub atomic: (u32, u32),
    /// The bytes written, read and used atomically (bits 0..4 each).
    pub masks: [u8; 3],
}

/// Global words one block touched, recorded up to this many.
pub const GRID_BYTES_PER_BLOCK: usize = 1 << 20;

/// A race seen between threads of two blocks: the earlier block's access
/// (`first`, site and thread) and the later block's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GridConflict {
    pub kind: RaceKind,
    pub first: usize,
    pub second: usize,
    pub blocks: (u64, u64),
    pub threads: (u32, u32),
    /// The two accesses are ordered by a ticket (an atomic on one address
    /// that the earlier block updated first), with no device fence between
    /// the earlier access and its block's ticket: that ticket's site.
    pub unfenced: Option<usize>,
}

/// When, in one block's run, a thread made an access: the barrier
/// interval, the thread (+ 1; `MANY`: several threads in that interval)
/// and the thread's count of global accesses, atomics and fences so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Moment {
    pub epoch: u32,
    pub thread: u32,
    pub step: u32,
}

impl Moment {
    /// Ordered before `o` in the block: an earlier barrier interval, or
    /// earlier in the same thread.
    fn before(self, o: Moment) -> bool {
        self.epoch < o.epoch || (self.epoch == o.epoch && self.thread == o.thread && self.thread != MANY && self.step < o.step)
    }
    /// `self` for a first or a last moment, with `m` seen too (`latest`:
    /// keep the latest interval, else the earliest).
    fn widen(self, m: Moment, latest: bool) -> Moment {
        let replace = if latest { m.epoch > self.epoch } else { m.epoch < self.epoch };
        if replace {
            m
        } else if m.epoch == self.epoch && m.thread != self.thread {
            Moment { thread: MANY, ..self }
        } else if m.epoch == self.epoch && latest {
            Moment { step: self.step.max(m.step), ..self }
        } else {
            self
        }
    }
}

/// A global atomic a block made, for the order it sets between blocks.
#[derive(Clone, Copy, Debug)]
pub struct Ticket {
    pub addr: u64,
    /// Its place in the address's modification order.
    pub seq: u64,
    pub at: Moment,
    pub site: u32,
}

/// What orders one block's global accesses for other blocks: the first
/// and last moment of each access site, its global atomics and its device
/// fences (up to [`ORDER_EVENTS`] each; `full`: more, and no order is
/// taken from this block).
#[derive(Clone, Debug, Default)]
pub struct BlockOrder {
    pub sites: rustc_hash::FxHashMap<u32, (Moment, Moment)>,
    pub tickets: Vec<Ticket>,
    pub fences: Vec<Moment>,
    pub full: bool,
}

/// Atomics and fences one block's order keeps, at most each.
pub const ORDER_EVENTS: usize = 64;

/// How block `p`'s access at site `sp` stands before block `q`'s at `sq`
/// through tickets: `None` unordered; `Some(None)` ordered (a ticket of
/// `p`'s after the access, fenced from it or the access itself, numbered
/// before a ticket of `q`'s on the same address that comes before `q`'s
/// access); `Some(Some(t))` ordered by ticket site `t` with no fence between.
fn through_ticket(p: &BlockOrder, sp: u32, q: &BlockOrder, sq: u32) -> Option<Option<u32>> {
    if p.full || q.full {
        return None;
    }
    let last = p.sites.get(&sp)?.1;
    let first = q.sites.get(&sq)?.0;
    let mut unfenced = None;
    for tq in q.tickets.iter().filter(|t| t.at.before(first)) {
        for tp in p.tickets.iter().filter(|t| t.addr == tq.addr && t.seq < tq.seq) {
            if tp.site == sp {
                return Some(None);
            }
            if !last.before(tp.at) {
                continue;
            }
            if p.fences.iter().any(|f| last.before(*f) && (f.before(tp.at) || *f == tp.at)) {
                return Some(None);
            }
            unfenced = Some(tp.site);
        }
    }
    unfenced.map(Some)
}

/// One block's record for the races between blocks: its index, its
/// global words, and what orders its accesses.
pub type Footprint = (u64, rustc_hash::FxHashMap<u64, GridCell>, BlockOrder);

/// The races between blocks, from each block's [`GridCell`]s merged in
/// block order (`footprints`), less the pairs a ticket orders with a fence
/// (those it orders without one are kept, marked `unfenced`).
pub fn grid_conflicts(mut footprints: Vec<Footprint>) -> Vec<GridConflict> {
    footprints.sort_by_key(|(b, _, _)| *b);
    let orders: rustc_hash::FxHashMap<u64, BlockOrder> = footprints.iter_mut().map(|(b, _, o)| (*b, std::mem::take(o))).collect();
    // per word: the first block to touch it, and per kind the first (thread, site, block) and the bytes
    type Slot = (u32, u32, u64);
    let mut seen: rustc_hash::FxHashMap<u64, (u64, [Slot; 3], [u8; 3])> = Default::default();
    let mut out: std::collections::BTreeMap<(RaceKind, usize, usize), GridConflict> = Default::default();
    for (block, cells, _) in footprints {
        let mut addrs: Vec<&u64> = cells.keys().collect();
        addrs.sort_unstable();
        for addr in addrs {
            let cur = cells[addr];
            let entry = seen.entry(*addr).or_insert((block, [(0, 0, 0); 3], [0; 3]));
            let (first_block, prev, masks) = *entry;
            let mine_of = [cur.writer, cur.reader, cur.atomic];
            if first_block != block {
                // a conflict with an earlier block on bytes both touched: (kind, earlier slot, mine)
                let (w, r, a) = (0, 1, 2);
                let hit = |m: usize, t: usize, kind| {
                    (cur.masks[m] & masks[t] != 0 && prev[t].0 != 0).then_some((kind, prev[t], (mine_of[m].0, mine_of[m].1, block)))
                };
                let found = hit(w, w, RaceKind::WriteAfterWrite)
                    .or_else(|| hit(w, r, RaceKind::WriteAfterRead))
                    .or_else(|| hit(w, a, RaceKind::WriteAfterWrite))
                    .or_else(|| hit(r, w, RaceKind::ReadAfterWrite))
                    .or_else(|| hit(r, a, RaceKind::ReadAfterWrite))
                    .or_else(|| hit(a, w, RaceKind::WriteAfterWrite))
                    .or_else(|| hit(a, r, RaceKind::WriteAfterRead));
                if let Some((kind, theirs, mine)) = found {
                    // a ticket may order the pair, either way round
                    let (p, q) = (&orders[&theirs.2], &orders[&mine.2]);
                    let judged = match (through_ticket(p, theirs.1, q, mine.1), through_ticket(q, mine.1, p, theirs.1)) {
                        (Some(None), _) | (_, Some(None)) => None,
                        (Some(Some(t)), _) | (_, Some(Some(t))) => Some(Some(t as usize)),
                        (None, None) => Some(None),
                    };
                    if let Some(unfenced) = judged {
                        out.entry((kind, theirs.1 as usize, mine.1 as usize)).or_insert(GridConflict {
                            kind,
                            first: theirs.1 as usize,
                            second: mine.1 as usize,
                            blocks: (theirs.2, mine.2),
                            threads: (theirs.0 - 1, mine.0 - 1),
                            unfenced,
                        });
                    }
                }
            }
            // the bytes every block so far touched, the first of each kind named
            let e = seen.get_mut(addr).expect("just inserted");
            for (k, mine) in mine_of.iter().enumerate() {
                if e.1[k].0 == 0 && mine.0 != 0 {
                    e.1[k] = (mine.0, mine.1, block);
                }
                e.2[k] |= cur.masks[k];
            }
        }
    }
    out.into_values().collect()
}

/// Shadow memory for one block (Boyer et al.): per byte, the writer,
/// reader(s) and atomic user of the current barrier interval.
#[derive(Default)]
pub struct Shadow {
    /// Shared bytes' cells, per aligned run of [`SHARED_RUN`] bytes of the
    /// block's shared memory, made when a byte of it is first touched (a
    /// block declaring much shared memory and touching some holds cells only
    /// for what it touches).
    shared: Vec<Option<Box<[Cell]>>>,
    shared_len: u64,
    /// Global bytes' cells in aligned pages of [`PAGE`] bytes, all in one
    /// vector (`pages`), found by page number; `last_page`: the page the
    /// last global access was on (a warp's lanes touch neighbouring bytes).
    global: rustc_hash::FxHashMap<u64, u32>,
    pages: Vec<[Cell; PAGE as usize]>,
    last_page: Option<(u64, u32)>,
    pub epoch: u32,
    pub races: rustc_hash::FxHashMap<(bool, RaceKind, usize, usize), Conflict>,
    /// `__syncwarp()`s each warp has executed: accesses of one warp's lanes
    /// on either side of one do not race with each other.
    warp_epoch: Vec<u32>,
    /// The global words the block touched in its whole run (races between
    /// blocks), up to [`GRID_BYTES_PER_BLOCK`]; `grid_full`: more were touched.
    pub grid: rustc_hash::FxHashMap<u64, GridCell>,
    pub grid_full: bool,
    /// Record `grid` (a launch of more than one block).
    pub track_grid: bool,
    /// Global bytes not recorded at all (the grid workspace, whose atomics
    /// and polls synchronise).
    pub skip: std::ops::Range<u64>,
    /// What orders the block's global accesses for other blocks (with `grid`).
    pub order: BlockOrder,
    /// Per thread: its global accesses, atomics and fences so far.
    steps: Vec<u32>,
    /// The shared bytes some thread of the block has stored to or updated
    /// so far, one bit each (reads of the others are uninitialised).
    written: Vec<u64>,
}

/// Kind of an access for the shadow.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Touch {
    Read,
    Write,
    Atomic,
}

impl Shadow {
    pub fn reset(&mut self, shared_bytes: usize) {
        self.shared.clear();
        self.shared.resize((shared_bytes as u64).div_ceil(SHARED_RUN) as usize, None);
        self.shared_len = shared_bytes as u64;
        self.global.clear();
        self.pages.clear();
        self.last_page = None;
        self.epoch = 1;
        self.warp_epoch.clear();
        self.grid.clear();
        self.order = BlockOrder::default();
        self.steps.clear();
        self.written.clear();
        self.written.resize(shared_bytes.div_ceil(64), 0);
    }

    /// Some thread stored to (or updated) `len` shared bytes at `addr`.
    pub fn mark_written(&mut self, addr: u64, len: u32) {
        for b in addr..addr.saturating_add(len as u64) {
            if let Some(w) = self.written.get_mut((b / 64) as usize) {
                *w |= 1 << (b % 64);
            }
        }
    }

    /// Whether one of the `len` shared bytes at `addr` has been written by
    /// no thread of the block yet.
    pub fn unwritten(&self, addr: u64, len: u32) -> bool {
        (addr..addr.saturating_add(len as u64)).any(|b| self.written.get((b / 64) as usize).is_some_and(|w| w & (1 << (b % 64)) == 0))
    }

    /// Thread `tid`'s next moment (see [`Moment`]).
    fn moment(&mut self, tid: u32) -> Moment {
        let t = tid as usize;
        if self.steps.len() <= t {
            self.steps.resize(t + 1, 0);
        }
        self.steps[t] += 1;
        Moment { epoch: self.epoch, thread: tid + 1, step: self.steps[t] }
    }

    /// Thread `tid` made a global atomic at `addr` (site `site`), numbered
    /// `seq` in the address's modification order; `fences`: with release
    /// semantics at the device's scope.
    pub fn ticket(&mut self, addr: u64, seq: u64, tid: u32, site: usize, fences: bool) {
        if !self.track_grid || self.skip.contains(&addr) {
            return;
        }
        let at = self.moment(tid);
        if fences {
            self.fence_at(at);
        }
        if self.order.tickets.len() >= ORDER_EVENTS {
            self.order.full = true;
            return;
        }
        self.order.tickets.push(Ticket { addr, seq, at, site: site as u32 });
    }

    /// Thread `tid` executed a device fence (`__threadfence()`).
    pub fn fence(&mut self, tid: u32) {
        if self.track_grid {
            let at = self.moment(tid);
            self.fence_at(at);
        }
    }

    fn fence_at(&mut self, at: Moment) {
        if self.order.fences.len() >= ORDER_EVENTS {
            self.order.full = true;
        } else {
            self.order.fences.push(at);
        }
    }

    /// Warp `w` executed `__syncwarp()`.
    pub fn warp_sync(&mut self, w: u32) {
        let w = w as usize;
        if self.warp_epoch.len() <= w {
            self.warp_epoch.resize(w + 1, 0);
        }
        self.warp_epoch[w] += 1;
    }

    /// Record a global access for the races between blocks: per 4-byte
    /// word, the bytes of each kind and the first thread (`me`: id + 1).
    fn grid_touch(&mut self, addr: u64, len: u32, me: u32, site: usize, t: Touch) {
        let (first, last) = (addr / 4, (addr + len.max(1) as u64 - 1) / 4);
        for word in first..=last {
            if self.grid.len() >= GRID_BYTES_PER_BLOCK && !self.grid.contains_key(&word) {
                self.grid_full = true;
                return;
            }
            // the bytes of this word the access covers
            let lo = addr.max(word * 4) - word * 4;
            let hi = (addr + len as u64).min(word * 4 + 4) - word * 4;
            let mask = ((1u16 << hi) - (1u16 << lo)) as u8;
            let c = self.grid.entry(word).or_default();
            let (slot, k) = match t {
                Touch::Write => (&mut c.writer, 0),
                Touch::Read => (&mut c.reader, 1),
                Touch::Atomic => (&mut c.atomic, 2),
            };
            if slot.0 == 0 {
                *slot = (me, site as u32);
            }
            c.masks[k] |= mask;
        }
    }

    /// Threads `tids` (lanes of one warp, in lane order) all read the same
    /// `len` bytes at `addr` at instruction `site` (a broadcast load), as
    /// [`Shadow::touch`] for each in turn would record it, where none of the
    /// bytes has a writer or atomic user in this interval (then none of the
    /// reads can race, and only the readers change). `false`: nothing done
    /// (a byte with a writer, outside shared memory, a launch of several
    /// blocks, the skipped range): the caller touches each thread's read.
    pub fn read_by_all(&mut self, shared: bool, addr: u64, len: u32, tids: &[u32], site: usize) -> bool {
        let Some(&t0) = tids.first() else { return true };
        if !shared && (self.track_grid || self.skip.contains(&addr)) {
            return false;
        }
        if shared && addr.saturating_add(len as u64) > self.shared_len {
            return false;
        }
        let epoch = self.epoch;
        let my_warp = t0 / 32;
        debug_assert!(tids.iter().all(|t| t / 32 == my_warp), "lanes of one warp");
        let cur = self.warp_epoch.get(my_warp as usize).copied().unwrap_or(0);
        let quiet = |c: &Cell| c.epoch != epoch || (c.writer == NONE && c.atomic == NONE);
        if shared {
            if !(0..len as u64).all(|k| self.shared_cell(addr + k).is_none_or(&quiet)) {
                return false;
            }
        } else if !(0..len as u64).all(|k| self.global_cell(addr + k).is_none_or(&quiet)) {
            return false;
        }
        let first = t0 + 1;
        for k in 0..len as u64 {
            let cell = match shared {
                true => self.shared_cell_mut(addr + k).expect("a shared byte (the range was checked)"),
                false => self.global_cell_mut(addr + k),
            };
            if cell.epoch != epoch {
                *cell = Cell { epoch, ..Cell::default() };
            }
            // the first reader of the cell, then the last of the others (the lanes are distinct)
            let rest_from = if cell.reader == NONE {
                (cell.reader, cell.rsite, cell.rwarp) = (first, site as u32, my_warp);
                1
            } else {
                0
            };
            let reader = cell.reader;
            if let Some(&t) = tids[rest_from..].iter().rev().find(|&&t| t + 1 != reader) {
                (cell.reader2, cell.rsite2) = (t + 1, site as u32);
                if cell.rwarp != my_warp {
                    cell.rwarp = MANY;
                }
            }
            cell.rwe = cell.rwe.max(cur);
        }
        true
    }

    /// Where in `pages` the page of global byte `a` is, if it exists.
    fn page_of(&self, a: u64) -> Option<u32> {
        match self.last_page {
            Some((p, at)) if p == a / PAGE => Some(at),
            _ => self.global.get(&(a / PAGE)).copied(),
        }
    }

    /// The cell of global byte `a`, if its page exists.
    fn global_cell(&self, a: u64) -> Option<&Cell> {
        Some(&self.pages[self.page_of(a)? as usize][(a % PAGE) as usize])
    }

    /// The cell of shared byte `a`, if its run of cells exists.
    fn shared_cell(&self, a: u64) -> Option<&Cell> {
        self.shared.get((a / SHARED_RUN) as usize)?.as_ref().map(|run| &run[(a % SHARED_RUN) as usize])
    }

    /// The cell of shared byte `a` (its run of cells made if new); `None`
    /// past the block's shared bytes.
    fn shared_cell_mut(&mut self, a: u64) -> Option<&mut Cell> {
        if a >= self.shared_len {
            return None;
        }
        let run =
            self.shared[(a / SHARED_RUN) as usize].get_or_insert_with(|| vec![Cell::default(); SHARED_RUN as usize].into_boxed_slice());
        Some(&mut run[(a % SHARED_RUN) as usize])
    }

    /// The cell of global byte `a` (its page made if new, and kept as the last).
    fn global_cell_mut(&mut self, a: u64) -> &mut Cell {
        let at = self.page_of(a).unwrap_or_else(|| {
            self.pages.push([Cell::default(); PAGE as usize]);
            let at = (self.pages.len() - 1) as u32;
            self.global.insert(a / PAGE, at);
            at
        });
        self.last_page = Some((a / PAGE, at));
        &mut self.pages[at as usize][(a % PAGE) as usize]
    }

    /// Record `len` bytes at `addr` (shared offset or global address)
    /// touched by thread `tid` at instruction `site`; a write's `bytes`
    /// (what it stored) tell a write-after-write of the same value.
    #[allow(clippy::too_many_arguments)]
    pub fn touch(&mut self, shared: bool, addr: u64, len: u32, tid: u32, site: usize, t: Touch, bytes: &[u8]) {
        let me = tid + 1;
        if !shared && self.skip.contains(&addr) {
            return;
        }
        if !shared && self.track_grid {
            let m = self.moment(tid);
            let e = self.order.sites.entry(site as u32).or_insert((m, m));
            *e = (e.0.widen(m, false), e.1.widen(m, true));
            self.grid_touch(addr, len, me, site, t);
        }
        let epoch = self.epoch;
        let my_warp = tid / 32;
        let cur = self.warp_epoch.get(my_warp as usize).copied().unwrap_or(0);
        // an access of a lane of my warp before my warp's last `__syncwarp()`
        let synced = |x: u32, we: u32| x != MANY && (x - 1) / 32 == my_warp && we < cur;
        for k in 0..len as u64 {
            let a = addr + k;
            let cell = if shared {
                match self.shared_cell_mut(a) {
                    Some(c) => c,
                    None => return,
                }
            } else {
                self.global_cell_mut(a)
            };
            if cell.epoch != epoch {
                *cell = Cell { epoch, ..Cell::default() };
            }
            let other = |x: u32| x != NONE && x != me;
            let readers_synced = cell.rwarp == my_warp && cell.rwe < cur;
            let mut seen: Option<(RaceKind, u32, u32)> = None;
            let byte = bytes.get(k as usize).copied();
            let mut same = false;
            match t {
                Touch::Read => {
                    if other(cell.writer) && !synced(cell.writer, cell.wwe) {
                        seen = Some((RaceKind::ReadAfterWrite, cell.wsite, cell.writer));
                    } else if other(cell.atomic) && !synced(cell.atomic, cell.awe) {
                        seen = Some((RaceKind::ReadAfterWrite, cell.asite, cell.atomic));
                    }
                    if cell.reader == NONE {
                        cell.reader = me;
                        cell.rsite = site as u32;
                        cell.rwarp = my_warp;
                    } else if cell.reader != me {
                        (cell.reader2, cell.rsite2) = (me, site as u32);
                        if cell.rwarp != my_warp {
                            cell.rwarp = MANY;
                        }
                    }
                    cell.rwe = cell.rwe.max(cur);
                }
                Touch::Write | Touch::Atomic => {
                    if other(cell.writer) && !synced(cell.writer, cell.wwe) {
                        seen = Some((RaceKind::WriteAfterWrite, cell.wsite, cell.writer));
                        same = t == Touch::Write && byte == Some(cell.wval);
                    } else if !readers_synced && (other(cell.reader) || other(cell.reader2)) {
                        // a reader other than the writer, one of another warp first (a
                        // lane of mine may be ordered by `__syncwarp()`)
                        let readers = [(cell.reader, cell.rsite), (cell.reader2, cell.rsite2)];
                        let mut others = readers.iter().filter(|(x, _)| other(*x));
                        let first = *others.clone().next().unwrap_or(&readers[0]);
                        let (who, s) = *others.find(|(x, _)| (x - 1) / 32 != my_warp).unwrap_or(&first);
                        seen = Some((RaceKind::WriteAfterRead, s, who));
                    } else if t == Touch::Write && other(cell.atomic) && !synced(cell.atomic, cell.awe) {
                        seen = Some((RaceKind::WriteAfterWrite, cell.asite, cell.atomic));
                    }
                    if t == Touch::Write {
                        cell.writer = me;
                        cell.wsite = site as u32;
                        cell.wwe = cur;
                        cell.wval = byte.unwrap_or(0);
                    } else {
                        cell.atomic = if cell.atomic == NONE || cell.atomic == me { me } else { MANY };
                        cell.asite = site as u32;
                        cell.awe = cur;
                    }
                }
            }
            if let Some((kind, s, who)) = seen {
                let first = s as usize;
                // (one write of another value makes the race a real one)
                self.races.entry((shared, kind, first, site)).and_modify(|c| c.same_value &= same).or_insert(Conflict {
                    kind,
                    shared,
                    first,
                    second: site,
                    first_thread: if who == MANY { None } else { Some(who - 1) },
                    second_thread: tid,
                    same_value: same,
                });
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_write_after_write_of_the_same_bytes_is_told_apart() {
        let mut s = Shadow::default();
        s.reset(64);
        s.touch(true, 0, 4, 0, 10, Touch::Write, &[1, 0, 0, 0]);
        s.touch(true, 0, 4, 1, 10, Touch::Write, &[1, 0, 0, 0]);
        s.touch(true, 8, 4, 0, 11, Touch::Write, &[1, 0, 0, 0]);
        s.touch(true, 8, 4, 1, 11, Touch::Write, &[2, 0, 0, 0]);
        let mut same: Vec<(usize, bool)> = s.races.values().map(|c| (c.first, c.same_value)).collect();
        same.sort_unstable();
        assert_eq!(same, [(10, true), (11, false)]);
    }

    /// A broadcast read recorded at once leaves the shadow as each lane's
    /// read in turn does, after any history of reads, writes, atomics,
    /// barriers and `__syncwarp()`s (random, a fixed seed), in shared and
    /// global memory.
    #[test]
    fn a_read_by_all_lanes_is_each_lanes_read() {
        let mut next = crate::xorshift(0x9e37_79b9_7f4a_7c15);
        let (mut at_once, mut fallbacks) = (0, 0);
        for _ in 0..200 {
            let (mut a, mut b) = (Shadow::default(), Shadow::default());
            a.reset(16);
            b.reset(16);
            for step in 0..60 {
                let shared = next(2) == 0;
                let base = if shared { 0 } else { 1 << 20 };
                let (addr, len) = (base + next(12), [1, 2, 4][next(3) as usize]);
                let site = next(5) as usize;
                match next(10) {
                    0 => {
                        a.epoch += 1;
                        b.epoch += 1;
                    }
                    1 => {
                        let w = next(2) as u32;
                        a.warp_sync(w);
                        b.warp_sync(w);
                    }
                    2..=5 => {
                        let (t, tid) = ([Touch::Read, Touch::Write, Touch::Atomic][next(3) as usize], next(64) as u32);
                        let bytes = [next(3) as u8; 4];
                        a.touch(shared, addr, len, tid, site, t, &bytes);
                        b.touch(shared, addr, len, tid, site, t, &bytes);
                    }
                    _ => {
                        let warp = next(2) as u32;
                        let tids: Vec<u32> = (0..32).filter(|_| next(3) > 0).map(|l| warp * 32 + l).collect();
                        if a.read_by_all(shared, addr, len, &tids, site) {
                            at_once += 1;
                        } else {
                            fallbacks += 1;
                            tids.iter().for_each(|&t| a.touch(shared, addr, len, t, site, Touch::Read, &[]));
                        }
                        tids.iter().for_each(|&t| b.touch(shared, addr, len, t, site, Touch::Read, &[]));
                    }
                }
                assert_eq!(a.shared, b.shared, "step {step}");
                for x in (1u64 << 20)..(1 << 20) + 16 {
                    assert_eq!(a.global_cell(x), b.global_cell(x), "step {step}, byte {x}");
                }
                assert_eq!(a.races, b.races, "step {step}");
            }
        }
        assert!(at_once > 100 && fallbacks > 100, "both ways taken: {at_once} at once, {fallbacks} lane by lane");
    }

    /// Every byte of one access is judged: a race at a later byte than the
    /// first is seen, and each byte keeps the value written to it.
    #[test]
    fn bytes_of_one_access_are_each_judged() {
        for shared in [true, false] {
            let base = if shared { 0 } else { 1 << 20 };
            let mut s = Shadow::default();
            s.reset(64);
            // bytes 0 and 1 untouched, 2 and 3 written by thread 0: a read of all four races at byte 2
            s.touch(shared, base + 2, 2, 0, 5, Touch::Write, &[1, 1]);
            s.touch(shared, base, 4, 1, 6, Touch::Read, &[]);
            let seen: Vec<(usize, usize)> = s.races.values().map(|c| (c.first, c.second)).collect();
            assert_eq!(seen, [(5, 6)], "shared: {shared}");
            // four bytes written alike but for their values: each keeps its own
            s.epoch += 1;
            s.races.clear();
            s.touch(shared, base + 8, 4, 0, 10, Touch::Write, &[7, 7, 7, 9]);
            s.touch(shared, base + 11, 1, 1, 11, Touch::Write, &[9]);
            s.touch(shared, base + 10, 1, 1, 12, Touch::Write, &[9]);
            let mut same: Vec<(usize, bool)> = s.races.values().map(|c| (c.second, c.same_value)).collect();
            same.sort_unstable();
            assert_eq!(same, [(11, true), (12, false)], "shared: {shared}");
        }
    }

    /// Shared bytes are judged as global ones are wherever they lie in the
    /// block's shared memory (their cells made when first touched, runs of
    /// them apart), reads of all a warp's lanes at once included; bytes past
    /// its end are not judged.
    #[test]
    fn shared_bytes_are_judged_as_global_ones() {
        let mut next = crate::xorshift(0x6a09_e667_f3bc_c908);
        for size in [5u64, 512, 513, 3000] {
            let (mut sh, mut gl) = (Shadow::default(), Shadow::default());
            sh.reset(size as usize);
            gl.reset(0);
            for step in 0..400 {
                // (most touches near a few places, so that threads meet)
                let addr = [0, size / 2, size.saturating_sub(3), 511, 1024][next(5) as usize] + next(6);
                let len = [1u32, 2, 4, 8][next(4) as usize];
                let (tid, site) = (next(64) as u32, step);
                let kind = [Touch::Read, Touch::Write, Touch::Atomic][next(3) as usize];
                let bytes: Vec<u8> = (0..len).map(|_| next(2) as u8).collect();
                let inside = size.saturating_sub(addr).min(len as u64) as u32;
                if kind == Touch::Read && next(4) == 0 {
                    let tids: Vec<u32> = (0..4).map(|l| (tid / 32) * 32 + l).collect();
                    let at_once = sh.read_by_all(true, addr, len, &tids, site);
                    let global = addr + len as u64 <= size && gl.read_by_all(false, addr, len, &tids, site);
                    assert_eq!(at_once, global, "{size}: read by all at {addr}");
                    if at_once {
                        continue;
                    }
                    for &t in &tids {
                        sh.touch(true, addr, len, t, site, kind, &bytes);
                        if inside > 0 {
                            gl.touch(false, addr, inside, t, site, kind, &bytes);
                        }
                    }
                    continue;
                }
                sh.touch(true, addr, len, tid, site, kind, &bytes);
                if inside > 0 {
                    gl.touch(false, addr, inside, tid, site, kind, &bytes);
                }
                if next(20) == 0 {
                    sh.epoch += 1;
                    gl.epoch += 1;
                }
            }
            let races = |s: &Shadow| {
                let mut r: Vec<_> =
                    s.races.values().map(|c| (c.kind as u8, c.first, c.second, c.first_thread, c.second_thread, c.same_value)).collect();
                r.sort_unstable();
                r
            };
            assert!(!sh.races.is_empty(), "{size}: some races");
            assert_eq!(races(&sh), races(&gl), "{size} shared bytes");
            // (0, 511 and 1024 in the first three runs, the middle and the end)
            assert!(sh.shared.iter().filter(|r| r.is_some()).count() <= 4, "{size}: runs made only where touched");
        }
    }

    /// A zero-filled buffer, small (a vector) or large (mapped pages),
    /// reads zero until written and keeps what is written.
    #[test]
    fn zero_filled_buffers_small_and_large() {
        let mut g = Global::default();
        for len in [12u64, 3 << 20] {
            let a = g.alloc_zeroed(len);
            let owned = matches!(g.regions.last().map(|r| &r.words), Some(Words::Owned(_)));
            assert_eq!(owned, len < MAPPED_BYTES as u64, "{len} bytes");
            assert_eq!(g.load(a + len - 4, 4).unwrap(), 0);
            g.store(a + len - 8, 8, 0x1122334455667788).unwrap();
            assert_eq!(g.load(a + len - 8, 8).unwrap(), 0x1122334455667788);
            assert_eq!(g.rmw(a, 4, &|x| x + 5).unwrap().0, 0);
            assert_eq!(g.read(a, 4).unwrap(), [5, 0, 0, 0]);
            assert!(g.load(a + len, 1).is_err(), "past the end");
        }
    }

    #[test]
    fn global_bytes_words_and_faults() {
        let mut g = Global::default();
        let a = g.alloc(&[1, 2, 3, 4, 5, 6, 7]);
        let b = g.alloc(&[0; 8]);
        assert_eq!(a % 256, 0);
        assert!(b >= a + 7 + 4096);
        assert_eq!(g.load(a, 4).unwrap(), 0x04030201);
        assert_eq!(g.load(a + 1, 2).unwrap(), 0x0302);
        assert_eq!(g.load(a + 4, 3).unwrap(), 0x070605);
        assert!(g.load(a + 4, 4).is_err(), "past the end");
        g.store(b + 3, 2, 0xbeef).unwrap();
        assert_eq!(g.read(b, 8).unwrap(), [0, 0, 0, 0xef, 0xbe, 0, 0, 0]);
        g.store(b, 8, 0x1122334455667788).unwrap();
        assert_eq!(g.load(b, 8).unwrap(), 0x1122334455667788);
        let (old, first) = g.rmw(b, 4, &|x| x + 1).unwrap();
        assert_eq!(old, 0x55667788);
        let (old, second) = g.rmw(b, 8, &|x| x + 1).unwrap();
        assert_eq!(old, 0x1122334455667789);
        assert!(second > first, "numbered in modification order");
        assert_eq!(g.load(b, 8).unwrap(), 0x112233445566778a);
    }

    #[test]
    fn shadow_kinds() {
        let mut s = Shadow::default();
        s.reset(64);
        s.touch(true, 0, 4, 0, 10, Touch::Write, &[]);
        s.touch(true, 0, 4, 0, 11, Touch::Read, &[]); // own write: fine
        s.touch(true, 4, 4, 1, 12, Touch::Read, &[]);
        s.touch(true, 4, 4, 2, 13, Touch::Write, &[]); // thread 1 read it
        s.touch(true, 0, 4, 1, 14, Touch::Read, &[]); // thread 0 wrote it
        let mut kinds: Vec<_> = s.races.values().map(|r| (r.kind, r.first, r.second, r.first_thread, r.second_thread)).collect();
        kinds.sort();
        assert_eq!(kinds, [(RaceKind::ReadAfterWrite, 10, 14, Some(0), 1), (RaceKind::WriteAfterRead, 12, 13, Some(1), 2)]);
        // a barrier starts a new interval
        s.epoch += 1;
        s.races.clear();
        s.touch(true, 0, 4, 3, 15, Touch::Write, &[]);
        assert!(s.races.is_empty());
        // atomics among themselves do not race
        s.touch(false, 100, 4, 1, 20, Touch::Atomic, &[]);
        s.touch(false, 100, 4, 2, 20, Touch::Atomic, &[]);
        assert!(s.races.is_empty());
        s.touch(false, 100, 4, 3, 21, Touch::Read, &[]);
        assert_eq!(s.races.len(), 1);
    }

    /// A write by the first reader of a byte races with the other reader,
    /// named with its own site (the unrolled warp tail: `vs[t] += vs[t + 16]`).
    #[test]
    fn a_write_by_the_first_reader_names_the_other() {
        let mut s = Shadow::default();
        s.reset(256);
        s.touch(true, 64, 4, 16, 40, Touch::Read, &[]); // lane 16 reads its own element
        s.touch(true, 64, 4, 0, 41, Touch::Read, &[]); // lane 0 reads it too
        s.touch(true, 64, 4, 16, 42, Touch::Write, &[]); // lane 16 writes it
        let seen: Vec<_> = s.races.values().map(|r| (r.first, r.first_thread, r.second, r.second_thread)).collect();
        assert_eq!(seen, [(41, Some(0), 42, 16)]);
    }

    /// Two blocks writing one byte race; reading it, or touching their own
    /// bytes, or both atomically, do not.
    #[test]
    fn blocks_race_on_shared_global_bytes() {
        let run = |b: u64, accesses: &[(u64, u32, usize, Touch)]| {
            let mut s = Shadow { track_grid: true, ..Default::default() };
            s.reset(0);
            for &(addr, tid, site, t) in accesses {
                s.touch(false, addr, 4, tid, site, t, &[]);
            }
            (b, std::mem::take(&mut s.grid), BlockOrder::default())
        };
        let got = grid_conflicts(vec![
            run(1, &[(100, 0, 7, Touch::Write), (200, 3, 8, Touch::Read), (300, 0, 9, Touch::Atomic), (404, 0, 10, Touch::Write)]),
            run(0, &[(100, 0, 7, Touch::Write), (200, 5, 8, Touch::Read), (300, 0, 9, Touch::Atomic), (400, 0, 10, Touch::Write)]),
        ]);
        // (bytes 400..404 and 404..408: two words apart, no race)
        assert_eq!(
            got,
            [GridConflict { kind: RaceKind::WriteAfterWrite, first: 7, second: 7, blocks: (0, 1), threads: (0, 0), unfenced: None }]
        );
        // bytes of one word: two blocks writing different bytes do not race, the same byte does
        let bytes = |b: u64, addr: u64, len: u32| {
            let mut s = Shadow { track_grid: true, ..Default::default() };
            s.reset(0);
            s.touch(false, addr, len, 0, 5, Touch::Write, &[]);
            (b, std::mem::take(&mut s.grid), BlockOrder::default())
        };
        assert!(grid_conflicts(vec![bytes(0, 1000, 1), bytes(1, 1001, 1), bytes(2, 1002, 2)]).is_empty());
        assert_eq!(grid_conflicts(vec![bytes(0, 1000, 2), bytes(1, 1001, 1)]).len(), 1);
    }

    /// A last-block election: each block writes its partial result (site
    /// 1), takes a ticket on one counter (site 2), and the block with the
    /// later ticket reads the other's partial result (site 3) after a
    /// barrier. With a fence between the write and the ticket the pair is
    /// ordered; without one it is kept, marked unfenced; the other way
    /// round (the reader's ticket first) it is a race.
    #[test]
    fn a_ticket_orders_blocks() {
        let block = |b: u64, seq: u64, fenced: bool, reads: bool| {
            let mut s = Shadow { track_grid: true, ..Default::default() };
            s.reset(0);
            s.touch(false, 1000 + 4 * b, 4, 0, 1, Touch::Write, &[]);
            if fenced {
                s.fence(0);
            }
            s.ticket(2000, seq, 0, 2, false);
            s.touch(false, 2000, 4, 0, 2, Touch::Atomic, &[]);
            s.epoch += 1;
            if reads {
                s.touch(false, 1000, 4, 0, 3, Touch::Read, &[]);
            }
            (b, std::mem::take(&mut s.grid), std::mem::take(&mut s.order))
        };
        assert!(grid_conflicts(vec![block(0, 5, true, false), block(1, 9, true, true)]).is_empty());
        let got = grid_conflicts(vec![block(0, 5, false, false), block(1, 9, false, true)]);
        assert_eq!(got.iter().map(|c| (c.first, c.second, c.unfenced)).collect::<Vec<_>>(), [(1, 3, Some(2))]);
        let got = grid_conflicts(vec![block(0, 9, true, false), block(1, 5, true, true)]);
        assert_eq!(got.iter().map(|c| (c.first, c.second, c.unfenced)).collect::<Vec<_>>(), [(1, 3, None)]);
    }

    /// `__syncwarp()` orders the lanes of its warp, not other warps.
    #[test]
    fn warp_sync_separates_lanes_of_one_warp() {
        let mut s = Shadow::default();
        s.reset(256);
        s.touch(true, 64, 4, 0, 30, Touch::Read, &[]); // lane 0 reads element 16
        s.touch(true, 64, 4, 40, 31, Touch::Read, &[]); // thread 40 (warp 1) too
        s.warp_sync(0);
        // lane 16 writes it after the warp's sync: still a race with warp 1's read, none with lane 0's
        s.touch(true, 64, 4, 16, 32, Touch::Write, &[]);
        let seen: Vec<_> = s.races.values().map(|r| (r.first_thread, r.second_thread)).collect();
        assert_eq!(seen, [(Some(40), 16)]);
        s.races.clear();
        s.touch(true, 128, 4, 1, 33, Touch::Read, &[]); // lane 1 reads element 32
        s.touch(true, 128, 4, 17, 34, Touch::Write, &[]); // lane 17 writes it, no sync between
        assert_eq!(s.races.len(), 1);
        s.races.clear();
        s.warp_sync(0);
        s.touch(true, 128, 4, 2, 35, Touch::Write, &[]); // lane 2 writes after the sync: ordered after lane 17's write
        assert!(s.races.is_empty());
    }
}
