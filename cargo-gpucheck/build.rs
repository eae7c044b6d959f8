//! Links the binary as a position-dependent executable on Linux with
//! glibc: a position-independent one has about 3,700 addresses that the
//! dynamic loader rewrites at every start, in some 20 pages each copied on
//! write. That start-up cost is paid by every run, and a PTX file of one
//! kernel takes little more than the start-up to check. Each page fault costs
//! about 3 µs on the virtual machines we measure on (5 µs for one of the
//! binary's code, which maps the 64 KB around it).
//!
//! Where the linker is the toolchain's own LLD (x86-64 Linux with glibc,
//! Rust 1.90 or later, no other linker configured), the functions a check
//! runs are also placed first and together, by a linker script made here
//! (`link_order.rs`) from `link-order.txt`: their mangled names, which
//! `link-order.sh` writes from callgrind runs of the release binary. The
//! code one small file's check runs is about 1.4 MB of the binary's 6 MB,
//! and in the compiler's order it is spread over most of it: rust-cuda's
//! add faulted in 62 pages of code, 18 with the order. A name's hash
//! changes with the toolchain and with a crate's dependencies; the same
//! names without it come next in the script, so an old list still places
//! the functions, with the other copies of a generic function of the same
//! name (45 pages). A name no function has is passed over; the binary is
//! the same either way, only laid out otherwise.
//!
//! The unwinder (panics are caught at the top and reported) is GCC's
//! static one, `libgcc_eh.a`, where the C compiler finds it: the standard
//! library asks for the shared `libgcc_s.so` otherwise, and loading it
//! costs a C program 0.25–0.3 ms of CPU time at every start here, more
//! than a small file's analysis. With the unwinder linked in, the linker
//! resolves the standard library's calls to it there and leaves the shared
//! one out (`--as-needed`).
//! Other targets link as their defaults say.

mod link_order;

fn main() {
    let var = |k: &str| std::env::var(k).unwrap_or_default();
    let (arch, os, env) = (var("CARGO_CFG_TARGET_ARCH"), var("CARGO_CFG_TARGET_OS"), var("CARGO_CFG_TARGET_ENV"));
    if os == "linux" && env == "gnu" {
        println!("cargo:rustc-link-arg-bins=-no-pie");
        // the unwinder linked in (GCC's libgcc_eh.a, where the C compiler has one), not
        // libgcc_s.so loaded at every start
        if let Some(dir) = link_order::static_unwinder_dir() {
            println!("cargo:rustc-link-search=native={}", dir.display());
            println!("cargo:rustc-link-lib=static=gcc_eh");
        }
        let order = std::path::Path::new(&var("CARGO_MANIFEST_DIR")).join("link-order.txt");
        if arch == "x86_64" && link_order::links_with_rust_lld() {
            if let Ok(list) = std::fs::read_to_string(&order) {
                let script = std::path::Path::new(&var("OUT_DIR")).join("hot-text.ld");
                std::fs::write(&script, link_order::hot_text_script(&list)).expect("OUT_DIR is writable");
                println!("cargo:rustc-link-arg-bins=-Wl,-T,{}", script.display());
            }
        }
    }
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=link_order.rs");
    println!("cargo:rerun-if-changed=link-order.txt");
    println!("cargo:rerun-if-env-changed=RUSTC_LINKER");
}
