//! Shared memory read or written outside its array
//! (`shared_out_of_bounds`), in good and bad twins. `SMEM_A` holds 1024
//! elements: four rows of one element per thread of a 256-thread block.
use crate::gpu::*;
use core::arch::nvptx::_syncthreads;

/// Bad: four rows staged from row 1 instead of row 0 — the last one, row
/// 4, is past the end of the array for every thread (thread 0 writes
/// element 1024).
#[no_mangle]
pub unsafe extern "ptx-kernel" fn stage_rows_past_end(x: *const f32, out: *mut f32) {
    let s = smem_a() as *mut f32;
    let t = tid();
    *s.add(256 + t) = *x.add(t);
    *s.add(512 + t) = *x.add(256 + t);
    *s.add(768 + t) = *x.add(512 + t);
    *s.add(1024 + t) = *x.add(768 + t); //~ ERROR shared_out_of_bounds
    _syncthreads();
    *out.add(gid()) = *s.add(256 + t) + *s.add(1023 - t);
}

/// Good: the same four rows from row 0.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn stage_rows(x: *const f32, out: *mut f32) {
    let s = smem_a() as *mut f32;
    let t = tid();
    *s.add(t) = *x.add(t);
    *s.add(256 + t) = *x.add(256 + t);
    *s.add(512 + t) = *x.add(512 + t);
    *s.add(768 + t) = *x.add(768 + t);
    _syncthreads();
    *out.add(gid()) = *s.add(t) + *s.add(1023 - t);
}

/// Bad: each thread reads its right neighbour's element of the last row;
/// the last thread's neighbour is past the end (element 1024).
#[no_mangle]
pub unsafe extern "ptx-kernel" fn last_row_halo(x: *const f32, out: *mut f32) {
    let s = smem_a() as *mut f32;
    let t = tid();
    *s.add(768 + t) = *x.add(t);
    _syncthreads();
    *out.add(gid()) = *s.add(768 + t) - *s.add(769 + t); //~ ERROR shared_out_of_bounds
}

/// Good: the last thread takes its own element as its neighbour.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn last_row_halo_guarded(x: *const f32, out: *mut f32) {
    let s = smem_a() as *mut f32;
    let t = tid();
    *s.add(768 + t) = *x.add(t);
    _syncthreads();
    let right = if t + 1 < 256 { *s.add(769 + t) } else { *s.add(768 + t) };
    *out.add(gid()) = *s.add(768 + t) - right;
}

/// Bad: a thread's own window of 8 values, kept in local memory because it
/// is indexed by a value known only at run time, read one past its end by
/// every ninth thread (`t % 9` reaches 8).
#[no_mangle]
pub unsafe extern "ptx-kernel" fn local_window_past_end(x: *const f32, out: *mut f32) {
    let t = tid();
    let mut w = [0.0f32; 8];
    for (i, v) in w.iter_mut().enumerate() {
        *v = *x.add(i * 1024 + gid());
    }
    *out.add(gid()) = *w.as_ptr().add(t % 9); //~ ERROR shared_out_of_bounds
}

/// Good: the index stays below 8.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn local_window(x: *const f32, out: *mut f32) {
    let t = tid();
    let mut w = [0.0f32; 8];
    for (i, v) in w.iter_mut().enumerate() {
        *v = *x.add(i * 1024 + gid());
    }
    *out.add(gid()) = *w.as_ptr().add(t % 8);
}
