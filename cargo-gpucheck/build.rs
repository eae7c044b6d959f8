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
//! runs are also placed first and together (`link-order.txt`, made by
//! `link-order.sh`): the code one small file's check runs is about 1.4 MB
//! of the binary's 6 MB, and laid out in the compiler's order it is spread
//! over most of it (rust-cuda's add: 62 page faults for code, 20 with the
//! order). A name the list has and the binary does not (another toolchain,
//! other dependencies, a function renamed) is passed over; the binary is
//! the same either way, only laid out otherwise.
//! Other targets link as their defaults say.

fn main() {
    let var = |k: &str| std::env::var(k).unwrap_or_default();
    let (arch, os, env) = (var("CARGO_CFG_TARGET_ARCH"), var("CARGO_CFG_TARGET_OS"), var("CARGO_CFG_TARGET_ENV"));
    if os == "linux" && env == "gnu" {
        println!("cargo:rustc-link-arg-bins=-no-pie");
        let order = std::path::Path::new(&var("CARGO_MANIFEST_DIR")).join("link-order.txt");
        if arch == "x86_64" && order.is_file() && links_with_rust_lld() {
            println!("cargo:rustc-link-arg-bins=-Wl,--symbol-ordering-file={}", order.display());
            println!("cargo:rustc-link-arg-bins=-Wl,--no-warn-symbol-ordering");
        }
    }
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=link-order.txt");
    println!("cargo:rerun-if-env-changed=RUSTC_LINKER");
}

/// Whether the binary is linked by the toolchain's LLD, which reads a
/// symbol ordering file: Rust 1.90 and later on x86-64 Linux, unless a
/// linker is configured (`RUSTC_LINKER`, or one in the flags).
fn links_with_rust_lld() -> bool {
    if std::env::var_os("RUSTC_LINKER").is_some() {
        return false;
    }
    let flags = std::env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default();
    if flags.contains("linker") || flags.contains("link-self-contained") {
        return false;
    }
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let Ok(out) = std::process::Command::new(rustc).arg("-vV").output() else { return false };
    let text = String::from_utf8_lossy(&out.stdout);
    let release = text.lines().find_map(|l| l.strip_prefix("release: ")).unwrap_or("");
    let mut parts = release.split(['.', '-']).map(|p| p.parse::<u32>().unwrap_or(0));
    let (major, minor) = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    (major, minor) >= (1, 90)
}
