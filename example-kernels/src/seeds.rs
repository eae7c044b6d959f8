//! The seed papers' examples: Sampaio et al.'s avgSquare and sumTriangle
//! (seed 002, Fig. 1) and GPUVerify's scan 1a / 1b (seed 004, Fig. 1).
use crate::gpu::*;
use core::arch::nvptx::_syncthreads;

/// Sampaio's avgSquare: every thread runs the same number of iterations
/// (`N - i` does not depend on the thread), so nothing diverges but the
/// boundary check.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn avg_square(m: *const f32, v: *mut f32, c: usize) {
    let t = tid();
    if t < c {
        let mut d = 0u32;
        let mut sum = 0.0f32;
        let n = t + c * c;
        let mut i = t;
        while i < n {
            sum += *m.add(i); //~ WARN misaligned_global_access
            d += 1;
            i += c;
        }
        *v.add(t) = sum / d as f32;
    }
}

/// Sampaio's sumTriangle: thread `t` runs `t + 1` iterations; `d` is
/// uniform inside the loop (the inner `if` does not diverge) but divergent
/// after it.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn sum_triangle(m: *const f32, v: *mut f32, c: usize) {
    let t = tid();
    if t < c {
        let mut d = 0usize;
        let mut sum = 0.0f32;
        let l = (t + 1) * c;
        let mut i = t;
        while i < l { //~ WARN divergent_branch
            if d % 2 == 1 {
                sum += *m.add(i); //~ WARN misaligned_global_access
            }
            d += 1;
            i += c;
        }
        *v.add(d - 1) = sum;
    }
}

/// GPUVerify Fig. 1a: a correct scan; both barriers are reached by all threads.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn scan_1a(sum: *mut u32) {
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
            *s.add(t) += temp;
        }
        _syncthreads();
        offset *= 2;
    }
    *sum.add(t) = *s.add(t);
}

/// GPUVerify Fig. 1b: thread 0 never enters the loop, so it never reaches
/// the barriers (barrier divergence).
#[no_mangle]
pub unsafe extern "ptx-kernel" fn scan_1b(sum: *mut u32) {
    let s = smem_a();
    let t = tid();
    *s.add(t) = *sum.add(t);
    _syncthreads();
    let mut offset = 1;
    while offset <= t {
        let temp = *s.add(t - offset);
        _syncthreads(); //~ ERROR barrier_divergence
        *s.add(t) += temp;
        _syncthreads(); //~ ERROR barrier_divergence
        offset *= 2;
    }
    *sum.add(t) = *s.add(t);
}
