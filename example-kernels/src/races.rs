//! `shared_memory_race` and `global_memory_race`: Boyer et al.'s neighbour
//! read, GPUVerify's scan with a barrier removed, reductions, a histogram.
use crate::gpu::*;
use core::arch::nvptx::_syncthreads;
use core::sync::atomic::{AtomicU32, Ordering};

/// Bad (Boyer et al.): thread t reads what thread t + 1 writes, unsynchronised.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn neighbour_read(input: *const u32, out: *mut u32) {
    let s = smem_a();
    let t = tid();
    *s.add(t) = *input.add(gid());
    *out.add(gid()) = *s.add((t + 1) % 256); //~ ERROR shared_memory_race
}

/// Good twin: a barrier between the write and the read.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn neighbour_read_synced(input: *const u32, out: *mut u32) {
    let s = smem_a();
    let t = tid();
    *s.add(t) = *input.add(gid());
    _syncthreads();
    *out.add(gid()) = *s.add((t + 1) % 256);
}

/// GPUVerify Fig. 1a without its first barrier: thread t reads s[t - offset]
/// while thread t - offset writes it.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn scan_no_first_barrier(sum: *mut u32) {
    let s = smem_a();
    let t = tid();
    *s.add(t) = *sum.add(t);
    _syncthreads();
    let mut offset = 1;
    let mut temp = 0;
    while offset < block_dim() {
        if t >= offset {
            temp = *s.add(t - offset);
        }
        if t >= offset {
            *s.add(t) += temp; //~ ERROR shared_memory_race
        }
        _syncthreads();
        offset *= 2;
    }
    *sum.add(t) = *s.add(t);
}

/// GPUVerify Fig. 1a without its second barrier: iteration i's write of s[t]
/// meets iteration i + 1's read of s[t - offset] by another thread.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn scan_no_second_barrier(sum: *mut u32) {
    let s = smem_a();
    let t = tid();
    *s.add(t) = *sum.add(t);
    _syncthreads();
    let mut offset = 1;
    let mut temp = 0;
    while offset < block_dim() {
        if t >= offset {
            temp = *s.add(t - offset);
        }
        _syncthreads();
        if t >= offset {
            *s.add(t) += temp; //~ ERROR shared_memory_race
        }
        offset *= 2;
    }
    *sum.add(t) = *s.add(t);
}

/// Clean as to races, but divergent: the interleaved reduction's
/// `t % (2k) == 0` guard.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn reduce_modulo_guard(input: *const u32, out: *mut u32) {
    let s = smem_a();
    let t = tid();
    *s.add(t) = *input.add(gid());
    _syncthreads();
    let mut k = 1;
    while k < block_dim() {
        if t % (2 * k) == 0 { //~ WARN divergent_branch
            *s.add(t) += *s.add(t + k);
        }
        _syncthreads();
        k *= 2;
    }
    if t == 0 {
        *out.add(core::arch::nvptx::_block_idx_x() as usize) = *s;
    }
}

/// Good twin of `reduce_modulo_guard`: sequential addressing (`t < k`).
/// Whole warps skip the add until the last five steps, where one warp
/// splits: a few idle lane-slots, not worth a warning.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn reduce_halving(input: *const u32, out: *mut u32) {
    let s = smem_a();
    let t = tid();
    *s.add(t) = *input.add(gid());
    _syncthreads();
    let mut k = block_dim() / 2;
    while k > 0 {
        if t < k {
            *s.add(t) += *s.add(t + k);
        }
        _syncthreads();
        k /= 2;
    }
    if t == 0 {
        *out.add(core::arch::nvptx::_block_idx_x() as usize) = *s;
    }
}

/// Bad: every thread writes `out[0]`.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn all_write_one(out: *mut u32) {
    *out = tid() as u32; //~ WARN global_memory_race
}

/// Clean as to races: a shared histogram with atomic increments between
/// barriers. (rustc narrows `data[i] % 256` to a one-byte load, so each lane
/// uses 1 byte of every 4 moved: 4 sectors for 32 useful bytes, which is
/// what a coalesced 4-byte read costs: not uncoalesced.)
#[no_mangle]
pub unsafe extern "ptx-kernel" fn histogram(data: *const u32, bins: *mut u32) {
    let s = smem_a();
    let t = tid();
    *s.add(t) = 0;
    _syncthreads();
    let b = (*data.add(gid()) % 256) as usize;
    (*(s.add(b) as *const AtomicU32)).fetch_add(1, Ordering::Relaxed); //~ WARN data_dependent_access
    _syncthreads();
    (*(bins.add(t) as *const AtomicU32)).fetch_add(*s.add(t), Ordering::Relaxed);
}

/// Bad: the same histogram with plain increments: two threads whose values
/// fall in one bin both read its old count, and one increment is lost
/// (`lost_update`, a warning: it needs two values in one bin).
#[no_mangle]
pub unsafe extern "ptx-kernel" fn histogram_plain(data: *const u32, bins: *mut u32) {
    let s = smem_a();
    let t = tid();
    *s.add(t) = 0;
    _syncthreads();
    let b = (*data.add(gid()) % 256) as usize;
    *s.add(b) += 1; //~ WARN lost_update //~ WARN data_dependent_access
    _syncthreads();
    (*(bins.add(t) as *const AtomicU32)).fetch_add(*s.add(t), Ordering::Relaxed);
}

/// Pedantic: every thread sets the flag to the same constant. A race in
/// the strict sense (two threads write the word in one interval), benign
/// in practice: whichever writes last, the flag holds 1.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn set_flag(flag: *mut u32) {
    *flag = 1; //~ WARN benign_race
}

/// Bad: an in-place shift by a runtime offset. Thread t reads element
/// t + offset while thread t + offset writes it: a race for every offset
/// in 1..=255 (256 threads), which the finding names.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn shift_in_place(a: *mut f32, offset: usize) {
    let t = tid();
    *a.add(t) += *a.add(t + offset); //~ WARN global_memory_race //~ WARN misaligned_global_access
}

/// Good twin: the shift writes a second buffer.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn shift_to_other(a: *const f32, out: *mut f32, offset: usize) {
    let t = tid();
    *out.add(t) = *a.add(t) + *a.add(t + offset); //~ WARN misaligned_global_access
}

/// A helper the compiler keeps as a call: each calling thread stores `v`
/// to `p[i]`.
#[inline(never)]
unsafe fn put(p: *mut f32, i: usize, v: f32) {
    *p.add(i) = v;
}

/// Bad: thread t reads, with no barrier after the call, the element thread
/// t + 1 stored inside the helper: a race across the call.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn read_after_helper(a: *mut f32, out: *mut f32) {
    let t = tid();
    put(a, t, 1.0);
    *out.add(t) = *a.add(t + 1); //~ WARN global_memory_race
}

/// Good twin: a barrier between the call and the read.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn read_after_helper_synced(a: *mut f32, out: *mut f32) {
    let t = tid();
    put(a, t, 1.0);
    _syncthreads();
    *out.add(t) = *a.add(t + 1);
}

/// Bad (between blocks): thread 0 of blocks 2k and 2k + 1 both write
/// `out[k]`; which block's value stays depends on which runs last.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn pair_blocks_write(x: *const f32, out: *mut f32) {
    if tid() == 0 {
        *out.add(block_idx() / 2) = *x.add(block_idx() * block_dim()); //~ WARN grid_memory_race
    }
}

/// Good twin: one element per block.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn one_per_block(x: *const f32, out: *mut f32) {
    if tid() == 0 {
        *out.add(block_idx()) = *x.add(block_idx() * block_dim());
    }
}

/// Good: a grid-stride loop touches each element from one thread of one block.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn grid_stride_scale(x: *const f32, out: *mut f32, n: usize) {
    let mut i = gid();
    while i < n {
        *out.add(i) = 2.0 * *x.add(i);
        i += grid_stride();
    }
}

/// Bad, for some sizes (a loop bound the witness must pass): thread t fills
/// `s[t]`, `s[t + 128]`, … below `c`, so thread 0's second iteration writes
/// `s[128]`, which thread 128 writes in its first: a race when `c` ≥ 129 (a
/// warning that says so; for `c` ≤ 128 thread 128 never enters the loop).
#[no_mangle]
pub unsafe extern "ptx-kernel" fn fill_strided(out: *mut u32, c: usize) {
    let s = smem_a();
    let t = tid();
    let mut i = t;
    while i < c {
        *s.add(i) = t as u32; //~ WARN shared_memory_race
        i += 128;
    }
    _syncthreads();
    *out.add(gid()) = *s.add(t);
}

/// Good twin: the step is the block's size, so no two threads meet.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn fill_block_strided(out: *mut u32, c: usize) {
    let s = smem_a();
    let t = tid();
    let mut i = t;
    while i < c {
        *s.add(i) = t as u32;
        i += block_dim();
    }
    _syncthreads();
    *out.add(gid()) = *s.add(t);
}

/// Bad: threads past 127 read the clamped element `s[127]`, which thread
/// 127 rewrites in the same barrier interval, and keep what they read (the
/// other arm of the select stores it): they store 2·v or v depending on
/// which of the two threads ran first.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn scale_head_kept(out: *mut f32, x: *const f32) {
    let s = smem_a() as *mut f32;
    let t = tid();
    *s.add(t) = *x.add(gid());
    _syncthreads();
    let v = *s.add(core::cmp::min(t, 127));
    *s.add(t) = if t < 128 { v * 2.0 } else { v }; //~ ERROR shared_memory_race
    _syncthreads();
    *out.add(gid()) = *s.add(t);
}

/// Good twin: the same clamped read, but threads past 127 throw the value
/// away (they store 0.0). rustc moves the read under `t < 128`, so there is
/// no race at all; where a compiler keeps it and selects (clang on the
/// CUDA C twin, `clamped_reads.cu`), the race is benign (pedantic).
#[no_mangle]
pub unsafe extern "ptx-kernel" fn scale_head_discarded(out: *mut f32, x: *const f32) {
    let s = smem_a() as *mut f32;
    let t = tid();
    *s.add(t) = *x.add(gid());
    _syncthreads();
    let v = *s.add(core::cmp::min(t, 127));
    *s.add(t) = if t < 128 { v * 2.0 } else { 0.0 };
    _syncthreads();
    *out.add(gid()) = *s.add(t);
}

/// Good (a parameter stride, not a sample): block b copies row b, `ncols`
/// elements from `b * ncols`; blocks would meet only if `ncols` were 0, when
/// no thread passes the guard. (Pedantic: a row starts off a 32-byte sector
/// when `ncols` is not a multiple of 8.)
#[no_mangle]
pub unsafe extern "ptx-kernel" fn copy_rows(x: *const f32, out: *mut f32, ncols: usize) {
    let t = tid();
    if t < ncols {
        let i = block_idx() * ncols + t;
        *out.add(i) = *x.add(i); //~ WARN misaligned_global_access //~ WARN misaligned_global_access
    }
}
