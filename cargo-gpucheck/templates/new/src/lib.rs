//! GPU kernels for rustc's `nvptx64-nvidia-cuda` target. `cargo gpucheck`
//! checks them; `cargo gpucheck confirm` runs them with the launch in
//! Cargo.toml and compares what they do with what it predicted.
#![no_std]
#![feature(abi_ptx, stdarch_nvptx, asm_experimental_arch, register_tool)]
// `#[allow(gpucheck::LINT)]` (and `expect`, `warn`, `deny`) on a statement or
// a kernel sets a cargo-gpucheck lint's level there, as clippy's do.
#![register_tool(gpucheck)]

use core::arch::nvptx::{_block_dim_x, _block_idx_x, _syncthreads, _thread_idx_x};

#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    unsafe { core::arch::nvptx::trap() }
}

/// This thread's index in the whole grid (x).
#[inline(always)]
fn global_index() -> usize {
    unsafe { (_block_idx_x() * _block_dim_x() + _thread_idx_x()) as usize }
}

// Shared memory: a `.shared` array declared in PTX, and its generic
// address. 256 `f32`s, one per thread of a 256-thread block.
core::arch::global_asm!(".shared .align 4 .b8 TILE[1024];");

#[inline(always)]
fn tile() -> *mut f32 {
    let p: *mut f32;
    unsafe { core::arch::asm!("cvta.shared.u64 {p}, TILE;", p = out(reg64) p) };
    p
}

/// `y[i] = a * x[i] + y[i]`: consecutive threads touch consecutive floats
/// (4 sectors per warp request, the ideal).
#[no_mangle]
pub unsafe extern "ptx-kernel" fn saxpy(a: f32, x: *const f32, y: *mut f32, n: usize) {
    let i = global_index();
    if i < n {
        *y.add(i) = a * *x.add(i) + *y.add(i);
    }
}

/// The sum of each block's 256 elements of `x` into `sums[block]`: a tree
/// reduction in shared memory, with a barrier that every thread reaches
/// between the steps.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn block_sum(x: *const f32, sums: *mut f32, n: usize) {
    let t = _thread_idx_x() as usize;
    let i = global_index();
    let tile = tile();
    *tile.add(t) = if i < n { *x.add(i) } else { 0.0 };
    _syncthreads();
    let mut s = 128;
    while s > 0 {
        if t < s {
            *tile.add(t) += *tile.add(t + s);
        }
        _syncthreads();
        s /= 2;
    }
    if t == 0 {
        *sums.add(_block_idx_x() as usize) = *tile;
    }
}
