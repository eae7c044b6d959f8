//! Links the binary as a position-dependent executable on Linux with
//! glibc: a position-independent one has about 3,700 addresses that the
//! dynamic loader rewrites at every start, in some 20 pages each copied on
//! write. That start-up cost is paid by every run, and a PTX file of one
//! kernel takes little more than the start-up to check. Each page fault costs
//! about 3 µs on the virtual machines we measure on.
//! Other targets link as their defaults say.

fn main() {
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    if os == "linux" && env == "gnu" {
        println!("cargo:rustc-link-arg-bins=-no-pie");
    }
    println!("cargo:rerun-if-changed=build.rs");
}
