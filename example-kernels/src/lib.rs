//! Example kernels for cargo-gpucheck: one kernel per pattern, in good and
//! bad twins. Lines that must produce a finding carry `//~ WARN lint` or
//! `//~ ERROR lint` marks; the UI test (`tests/ui.rs`) fails on any missing
//! or extra finding. Built for `nvptx64-nvidia-cuda` with the pinned nightly.
#![no_std]
#![feature(abi_ptx, stdarch_nvptx, asm_experimental_arch)]
#![allow(clippy::missing_safety_doc)]

pub mod barriers;
pub mod bounds;
pub mod branches;
pub mod memory;
pub mod races;
pub mod seeds;
pub mod uninit;
mod gpu;

#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    loop {}
}
