//! A workspace with several kernel crates: built by one cargo run (`-j`
//! bounds it), analysed in parallel, reported in package order.

use gpucheck_tests::*;

#[test]
fn many_kernel_crates_build_together() {
    let dir = scratch("gpucheck-test-workspace");
    let names = ["kc_one", "kc_two", "kc_three"];
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("Cargo.toml"), format!("[workspace]\nresolver = \"2\"\nmembers = {names:?}\n")).unwrap();
    std::fs::copy(repo().join("example-kernels/rust-toolchain.toml"), dir.join("rust-toolchain.toml")).unwrap();
    for (i, n) in names.iter().enumerate() {
        std::fs::create_dir_all(dir.join(n).join("src")).unwrap();
        std::fs::write(
            dir.join(n).join("Cargo.toml"),
            format!(
                "[package]\nname = \"{n}\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[package.metadata.gpucheck]\nblock = [256, 1, 1]\n"
            ),
        )
        .unwrap();
        // crate i splits warps at 2^(i+1) threads per group
        std::fs::write(
            dir.join(n).join("src/lib.rs"),
            format!(
                r#"#![no_std]
#![feature(abi_ptx, stdarch_nvptx)]
use core::arch::nvptx::*;
#[panic_handler]
fn p(_: &core::panic::PanicInfo) -> ! {{ loop {{}} }}
#[no_mangle]
pub unsafe extern "ptx-kernel" fn k_{n}(out: *mut u32, n: usize) {{
    let t = _thread_idx_x() as usize;
    if t % {m} == 0 {{
        // a loop: work worth a warning when warps split around it
        let mut j = 0;
        while j < n {{
            *out.add(j * 256 + t) = 1;
            j += 1;
        }}
    }}
}}
"#,
                m = 2 << i
            ),
        )
        .unwrap();
    }
    let target = kernel_target();
    let out = std::process::Command::new(binary())
        .args(["gpucheck", "-j", "2", "--message-format", "json"])
        .current_dir(&dir)
        .env("CARGO_TARGET_DIR", &target)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let msgs: Vec<serde_json::Value> = json_lines(&out.stdout).into_iter().filter(|m| m["reason"] == "compiler-message").collect();
    let order: Vec<&str> = msgs.iter().map(|m| m["target"]["name"].as_str().unwrap()).collect();
    assert_eq!(order, names, "one divergent_branch finding per crate, in package order: {err}");
    for m in &msgs {
        assert_eq!(m["gpucheck"]["lint"], "divergent_branch");
        let file = m["message"]["spans"][0]["file_name"].as_str().unwrap();
        assert!(file.ends_with(&format!("{}/src/lib.rs", m["target"]["name"].as_str().unwrap())), "{file}");
    }
    // inside one member's folder: that member only, said; `--workspace` (or the root) checks all
    let in_member = |args: &[&str], cwd: &std::path::Path| {
        let out = std::process::Command::new(binary())
            .arg("gpucheck")
            .args(["--message-format", "json"])
            .args(args)
            .current_dir(cwd)
            .env("CARGO_TARGET_DIR", &target)
            .output()
            .unwrap();
        let names: Vec<String> = json_lines(&out.stdout)
            .into_iter()
            .filter(|m| m["reason"] == "compiler-message")
            .map(|m| m["target"]["name"].as_str().unwrap().to_string())
            .collect();
        (names, String::from_utf8_lossy(&out.stderr).to_string())
    };
    let (only, err) = in_member(&[], &dir.join("kc_two/src"));
    assert_eq!(only, ["kc_two"], "{err}");
    assert!(
        err.contains(
            "note: checking `kc_two` only, the package in the current folder (as cargo does); `--workspace` checks all 3 kernel crates"
        ),
        "{err}"
    );
    assert_eq!(in_member(&["--workspace"], &dir.join("kc_two")).0, names);
    let manifest = dir.join("kc_three/Cargo.toml");
    assert_eq!(in_member(&["--manifest-path", manifest.to_str().unwrap()], &dir).0, ["kc_three"]);
    // -j must be a positive number
    let bad = gpucheck(&["-j", "0"], &dir);
    assert_eq!(bad.status.code(), Some(2));
}
