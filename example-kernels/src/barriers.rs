//! `barrier_divergence`: barriers that not every thread reaches, and twins.
use crate::gpu::*;
use core::arch::nvptx::_syncthreads;

/// Bad: threads 128..255 never reach the barrier.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn barrier_in_branch(out: *mut u32) {
    let s = smem_a();
    let t = tid();
    *s.add(t) = t as u32;
    if t < 128 {
        _syncthreads(); //~ ERROR barrier_divergence
        *out.add(t) = *s.add(t + 1);
    }
}

/// Good twin: the barrier is outside the conditional.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn barrier_outside_branch(out: *mut u32) {
    let s = smem_a();
    let t = tid();
    *s.add(t) = t as u32;
    _syncthreads();
    if t < 128 {
        *out.add(t) = *s.add(t + 1);
    }
}

/// Bad, for some sizes: an early return skips the barrier for threads past
/// `n`, which splits the block when 1 ≤ `n` ≤ 255 (a warning that says so).
#[no_mangle]
pub unsafe extern "ptx-kernel" fn early_return_barrier(out: *mut u32, n: usize) {
    let s = smem_a();
    let t = tid();
    if t >= n {
        return;
    }
    *s.add(t) = t as u32;
    _syncthreads(); //~ WARN barrier_divergence
    *out.add(t) = *s.add((t + 1) % n.min(256));
}

/// Good twin: the kernel's own check rules out every size that would split
/// a block (`n` a multiple of 256, else `trap`), so the early return
/// returns whole blocks or none.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn early_return_checked(out: *mut u32, n: usize) {
    if n % 256 != 0 {
        core::arch::nvptx::trap();
    }
    let s = smem_a();
    let t = tid();
    if t >= n {
        return;
    }
    *s.add(t) = t as u32;
    _syncthreads();
    *out.add(gid()) = *s.add((t + 1) % 256);
}

/// Bad: a tree reduction whose barrier is inside `if t < s`: threads
/// `t ≥ s` skip it, and the races between iterations that follow are
/// notes of this one error, not errors of their own.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn reduce_barrier_in_branch(x: *const f32, out: *mut f32) {
    let s_mem = smem_a() as *mut f32;
    let t = tid();
    *s_mem.add(t) = *x.add(gid());
    _syncthreads();
    let mut s = 128;
    while s > 0 {
        if t < s {
            *s_mem.add(t) += *s_mem.add(t + s);
            _syncthreads(); //~ ERROR barrier_divergence
        }
        s /= 2;
    }
    if t == 0 {
        *out.add(gid() / 256) = *s_mem;
    }
}

/// Bad: the same with the first stride from the block size, so the loop
/// stays a loop: the note names the threads that skip in the first
/// iteration.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn reduce_barrier_in_branch_loop(x: *const f32, out: *mut f32) {
    let s_mem = smem_a() as *mut f32;
    let t = tid();
    *s_mem.add(t) = *x.add(gid());
    _syncthreads();
    let mut s = block_dim() / 2;
    while s > 0 {
        if t < s {
            *s_mem.add(t) += *s_mem.add(t + s);
            _syncthreads(); //~ ERROR barrier_divergence
        }
        s /= 2;
    }
    if t == 0 {
        *out.add(gid() / block_dim()) = *s_mem;
    }
}

/// A barrier wrapper of the kind kernel crates define.
#[inline(always)]
fn sync_block() {
    unsafe { _syncthreads() }
}

/// Bad: the barrier behind the wrapper, which threads 128..255 skip. The
/// finding is at the call in the kernel (the user's line), the wrapper in
/// a note.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn wrapped_barrier_in_branch(out: *mut u32) {
    let s = smem_a();
    let t = tid();
    *s.add(t) = t as u32;
    if t < 128 {
        sync_block(); //~ ERROR barrier_divergence
        *out.add(gid()) = *s.add(t + 1);
    }
}

/// Good twin: the wrapper called where every thread reaches it.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn wrapped_barrier_outside_branch(out: *mut u32) {
    let s = smem_a();
    let t = tid();
    *s.add(t) = t as u32;
    sync_block();
    if t < 128 {
        *out.add(gid()) = *s.add(t + 1);
    }
}
