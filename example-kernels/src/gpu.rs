//! Small wrappers over `core::arch::nvptx` used by the kernels, and shared
//! memory buffers declared with `global_asm!`.
use core::arch::nvptx;

#[inline(always)]
pub fn tid() -> usize {
    unsafe { nvptx::_thread_idx_x() as usize }
}

#[inline(always)]
pub fn tid_y() -> usize {
    unsafe { nvptx::_thread_idx_y() as usize }
}

#[inline(always)]
pub fn block_dim() -> usize {
    unsafe { nvptx::_block_dim_x() as usize }
}

/// `blockIdx.x`.
#[inline(always)]
pub fn block_idx() -> usize {
    unsafe { nvptx::_block_idx_x() as usize }
}

#[inline(always)]
pub fn gid() -> usize {
    unsafe { (nvptx::_block_idx_x() * nvptx::_block_dim_x() + nvptx::_thread_idx_x()) as usize }
}

#[inline(always)]
pub fn grid_stride() -> usize {
    unsafe { (nvptx::_block_dim_x() * nvptx::_grid_dim_x()) as usize }
}

core::arch::global_asm!(".shared .align 4 .b8 SMEM_A[4096];", ".shared .align 4 .b8 TILE_33[4224];");

/// 1024 `u32`s of shared memory.
#[inline(always)]
pub fn smem_a() -> *mut u32 {
    let p: *mut u32;
    unsafe { core::arch::asm!("cvta.shared.u64 {p}, SMEM_A;", p = out(reg64) p) };
    p
}

/// Work that the compiler cannot if-convert: a data-dependent loop. Its
/// reads (pedantic findings): `% n` makes the offset a runtime value (5
/// sectors when it is not a multiple of 8 elements), the block rereads the
/// same kilobyte (worth staging in shared memory), and the unrolled copies
/// read 4 neighbouring elements per lane (one `.v4` load).
#[inline(always)]
pub unsafe fn heavy(a: *const f32, i: usize, n: usize) -> f32 {
    let mut acc = 0.0f32;
    let mut k = 0;
    while k < n {
        acc = acc * 0.5 + *a.add((i + k) % n); //~ WARN misaligned_global_access //~ WARN shared_memory_opportunity //~ WARN vectorizable_access
        k += 1;
    }
    acc
}

/// A 32×33 `f32` tile in shared memory (rows padded by one word).
#[inline(always)]
pub fn tile_33() -> *mut f32 {
    let p: *mut f32;
    unsafe { core::arch::asm!("cvta.shared.u64 {p}, TILE_33;", p = out(reg64) p) };
    p
}
