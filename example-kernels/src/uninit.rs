//! Shared memory read where no thread of the block wrote
//! (`uninitialized_shared_read`), in good and bad twins, on the 256-thread
//! block of the package's metadata.
use crate::gpu::*;
use core::arch::nvptx::_syncthreads;

/// Bad: only the first half of the block stages the tile, and every thread
/// reads it reversed: threads 0..127 read elements 255..128, which no
/// thread wrote.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn reverse_half_staged(x: *const f32, out: *mut f32) {
    let s = smem_a() as *mut f32;
    let t = tid();
    if t < 128 {
        *s.add(t) = *x.add(gid());
    }
    _syncthreads();
    *out.add(gid()) = *s.add(255 - t); //~ WARN uninitialized_shared_read
}

/// Good: every thread stages its element.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn reverse_staged(x: *const f32, out: *mut f32) {
    let s = smem_a() as *mut f32;
    let t = tid();
    *s.add(t) = *x.add(gid());
    _syncthreads();
    *out.add(gid()) = *s.add(255 - t);
}

/// Bad: a three-point stencil whose tile has a halo element at each end;
/// thread 0 loads the left one, no thread the right one (element 257),
/// which the last thread reads.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn stencil_right_halo_missing(x: *const f32, out: *mut f32) {
    let s = smem_a() as *mut f32;
    let (t, i) = (tid(), gid());
    *s.add(t + 1) = *x.add(i + 1);
    if t == 0 {
        *s.add(0) = *x.add(i);
    }
    _syncthreads();
    *out.add(i) = *s.add(t) + *s.add(t + 1) + *s.add(t + 2); //~ WARN uninitialized_shared_read
}

/// Good: the last thread loads the right halo element.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn stencil_both_halos(x: *const f32, out: *mut f32) {
    let s = smem_a() as *mut f32;
    let (t, i) = (tid(), gid());
    *s.add(t + 1) = *x.add(i + 1);
    if t == 0 {
        *s.add(0) = *x.add(i);
    }
    if t == 255 {
        *s.add(257) = *x.add(i + 2);
    }
    _syncthreads();
    *out.add(i) = *s.add(t) + *s.add(t + 1) + *s.add(t + 2);
}

/// Bad: each thread keeps its element's old value, read before any thread
/// has staged the tile.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn keep_old_before_staging(x: *const f32, out: *mut f32) {
    let s = smem_a() as *mut f32;
    let t = tid();
    let old = *s.add(t); //~ WARN uninitialized_shared_read
    *s.add(t) = *x.add(gid());
    _syncthreads();
    *out.add(gid()) = *s.add(255 - t) - old;
}

/// Good: the old value is the staged one, read after the barrier.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn keep_staged(x: *const f32, out: *mut f32) {
    let s = smem_a() as *mut f32;
    let t = tid();
    *s.add(t) = *x.add(gid());
    _syncthreads();
    let old = *s.add(t);
    *out.add(gid()) = *s.add(255 - t) - old;
}
