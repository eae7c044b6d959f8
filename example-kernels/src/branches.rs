//! `divergent_branch`: branches that split warps, and the twins that do not.
use crate::gpu::*;

/// Bad: even and odd lanes take different paths in every warp.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn odd_even_branch(a: *const f32, out: *mut f32, n: usize) {
    let t = tid();
    if t % 2 == 0 { //~ WARN divergent_branch
        *out.add(t) = heavy(a, t, n);
    } else {
        *out.add(t) = heavy(a, t + 1, n) * 2.0;
    }
}

/// Good twin: the condition is the same for the 32 threads of a warp.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn warp_uniform_branch(a: *const f32, out: *mut f32, n: usize) {
    let t = tid();
    if (t / 32) % 2 == 0 {
        *out.add(t) = heavy(a, t, n);
    } else {
        *out.add(t) = heavy(a, t + 1, n) * 2.0;
    }
}

/// Good: a boundary check splits at most one warp.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn boundary_check(a: *const f32, out: *mut f32, n: usize) {
    let i = gid();
    if i < n {
        *out.add(i) = heavy(a, i, n);
    }
}

/// Good: one lane on purpose.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn single_lane(a: *const f32, out: *mut f32, n: usize) {
    if tid() == 0 {
        *out = heavy(a, 0, n); //~ WARN benign_race
    }
}

/// Good: a grid-stride loop; only the last iteration splits one warp.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn grid_stride_loop(a: *const f32, out: *mut f32, n: usize) {
    let mut i = gid();
    while i < n {
        *out.add(i) = *a.add(i) * 2.0;
        i += grid_stride();
    }
}

/// Not reported: the branch depends on data, which no static analysis can count.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn data_dependent_branch(a: *const f32, out: *mut f32, n: usize) {
    let i = gid();
    if *a.add(i) > 0.0 { //~ WARN shared_memory_opportunity
        *out.add(i) = heavy(a, i, n);
    }
}

/// Conditional: a 16×16 block has two rows per warp, so `x < n` splits every
/// warp when `n` < 16, none when `n` ≥ 16 (GPUDrano's blind spot): pedantic.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn narrow_block_bound(a: *const f32, out: *mut f32, n: usize) {
    let x = tid();
    let y = tid_y();
    if x < n { //~ WARN conditional_divergent_branch
        *out.add(y * 16 + x) = heavy(a, x, n);
    }
}

/// Bad: lanes run `t` iterations each.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn thread_dependent_loop(a: *const f32, out: *mut f32) {
    let t = tid();
    let mut acc = 0.0f32;
    let mut k = 0;
    while k < t { //~ WARN divergent_branch
        acc += *a.add(k);
        k += 1;
    }
    *out.add(t) = acc;
}

/// Suppressed: the author accepts the divergence of this branch.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn accepted_divergence(a: *const f32, out: *mut f32, n: usize) {
    let t = tid();
    // gpucheck: allow(divergent_branch)
    if t % 4 == 0 {
        *out.add(t) = heavy(a, t, n);
    }
}

/// Suppressed for the whole kernel on its `fn` line.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn accepted_kernel(a: *const f32, out: *mut f32, n: usize) { // gpucheck: allow(perf)
    let t = tid();
    if t % 3 == 0 {
        *out.add(t) = heavy(a, t, n);
    }
}

/// A stale suppression: a boundary check is never reported.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn stale_allow(a: *const f32, out: *mut f32, n: usize) {
    let i = gid();
    if i < n { // gpucheck: allow(divergent_branch) //~ WARN unused_gpucheck_allow
        *out.add(i) = heavy(a, i, n);
    }
}

/// A divergent helper inlined twice: one finding at its line, folded.
#[inline(always)]
unsafe fn odd_lanes_work(a: *const f32, out: *mut f32, t: usize, k: usize, n: usize) {
    if (t + k) % 2 == 1 { //~ WARN divergent_branch
        *out.add(t) = heavy(a, t, n);
    }
}

/// Bad twice over, through the helper above.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn twice_inlined(a: *const f32, out: *mut f32, n: usize) {
    let t = tid();
    odd_lanes_work(a, out, t, 0, n);
    odd_lanes_work(a, out.add(256), t, 1, n);
}

/// Good at the default level: every warp splits, but around one store (a
/// few instructions): only the pedantic `cheap_divergent_branch`.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn quarter_store(a: *const f32, out: *mut f32) {
    let i = gid();
    let v = *a.add(i) * 2.0;
    *out.add(i) = v;
    if tid() % 4 == 0 { //~ WARN cheap_divergent_branch
        *out.add(65536 + i / 4) = v;
    }
}

/// Good: a loop's tail. Each warp sums a row of `cols` with its 32 lanes;
/// only the last iteration can split, and only when `cols` is not a
/// multiple of 32: nothing that holds for every `cols` (at the sample it is
/// counted with, one lane per warp stays: not reported at all).
#[no_mangle]
pub unsafe extern "ptx-kernel" fn row_sums_tail(a: *const f32, out: *mut f32, cols: usize) {
    let t = tid();
    let (row, lane) = (t / 32, t % 32);
    let mut acc = 0.0f32;
    let mut c = lane;
    while c < cols {
        acc += *a.add(row * cols + c); //~ WARN misaligned_global_access
        c += 32;
    }
    *out.add(gid()) = acc;
}

/// The same tail with a row length that is a multiple of 32: no lane
/// leaves early, nothing to report.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn row_sums_whole(a: *const f32, out: *mut f32) {
    let t = tid();
    let (row, lane) = (t / 32, t % 32);
    let mut acc = 0.0f32;
    let mut c = lane;
    while c < 768 {
        acc += *a.add(row * 768 + c);
        c += 32;
    }
    *out.add(gid()) = acc;
}
