#![no_std]
#![feature(abi_ptx)]
#![feature(stdarch_nvptx)]

use core::arch::nvptx;

#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    loop {}
}

#[inline(always)]
fn tid() -> u32 {
    unsafe { nvptx::_thread_idx_x() as u32 }
}

#[no_mangle]
pub unsafe extern "ptx-kernel" fn odd_even(out: *mut f32, n: u32) {
    let t = tid();
    if t % 2 == 0 {
        *out.add(t as usize) = 1.0;
    } else {
        *out.add(t as usize) = 2.0;
    }
    if t < n {
        nvptx::_syncthreads();
    }
}
