//! Rust-CUDA projects end to end, without the NVVM toolchain: the fixture in
//! `tests/fixtures/rust-cuda` (a host crate running a stand-in cuda_builder)
//! is built by `cargo gpucheck` with `RUSTC` set to a recording stand-in for
//! rustc + rustc_codegen_nvvm, through a stand-in for the user's own
//! `RUSTC_WRAPPER`. Checks what the wrapper added to the NVVM rustc calls,
//! that the chain reached both, which PTX was collected and analysed, and
//! the messages when the toolchain is missing or NVVM fails.

use gpucheck_tests::*;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

struct Fixture {
    dir: PathBuf,
    rustc_log: PathBuf,
    wrapper_log: PathBuf,
    ptx: PathBuf,
}

impl Fixture {
    fn new() -> Fixture {
        let dir = scratch("gpucheck-test-rust-cuda");
        let _ = std::fs::remove_dir_all(dir.join("host"));
        copy_dir(&repo().join("tests/fixtures/rust-cuda"), &dir);
        Fixture {
            rustc_log: dir.join("rustc.log"),
            wrapper_log: dir.join("wrapper.log"),
            ptx: repo().join("analysis/tests/nvvm/idioms.ptx"),
            dir,
        }
    }

    fn run(&self, args: &[&str], env: &[(&str, &str)]) -> std::process::Output {
        let _ = std::fs::remove_file(&self.rustc_log);
        let _ = std::fs::remove_file(&self.wrapper_log);
        let real = String::from_utf8(Command::new("rustc").args(["--print", "sysroot"]).output().unwrap().stdout).unwrap();
        let mut cmd = Command::new(binary());
        cmd.arg("gpucheck")
            .args(args)
            .current_dir(&self.dir)
            .env("RUSTC", self.dir.join("fake-rustc"))
            .env("FAKE_REAL_RUSTC", Path::new(real.trim()).join("bin/rustc"))
            .env("FAKE_RUSTC_LOG", &self.rustc_log)
            .env("FAKE_NVVM_PTX", &self.ptx)
            .env("RUSTC_WRAPPER", self.dir.join("fake-sccache"))
            .env("FAKE_WRAPPER_LOG", &self.wrapper_log)
            .env_remove("CARGO_TARGET_DIR")
            .env_remove("STUB_CUDA_BUILDER_FAIL")
            .env_remove("FAKE_NVVM_FAIL")
            .env_remove("CUDA_PATH")
            .env_remove("CUDA_HOME")
            .env_remove("CUDA_ROOT");
        for (k, v) in env {
            cmd.env(k, v);
        }
        cmd.output().unwrap()
    }

    /// Logged compile calls (one line each) that used the NVVM backend (not cargo's `--print` probes).
    fn nvvm_calls(log: &Path) -> Vec<String> {
        std::fs::read_to_string(log)
            .unwrap_or_default()
            .lines()
            .filter(|l| l.contains("rustc_codegen_nvvm") && l.contains("--out-dir"))
            .map(str::to_string)
            .collect()
    }
}

fn lint_counts(msgs: &[serde_json::Value]) -> BTreeMap<String, usize> {
    let mut m = BTreeMap::new();
    for v in msgs.iter().filter(|m| m["reason"] == "compiler-message") {
        *m.entry(v["gpucheck"]["lint"].as_str().unwrap().to_string()).or_insert(0) += 1;
    }
    m
}

#[test]
fn rust_cuda_project_is_built_through_the_wrapper_chain() {
    let fx = Fixture::new();

    // 1. the build fails before rustc_codegen_nvvm runs: say what is missing
    let out = fx.run(&["-q"], &[("STUB_CUDA_BUILDER_FAIL", "1")]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("could not build Rust-CUDA host crate `host`"), "{err}");
    assert!(err.contains("CUDA libnvvm"), "{err}");
    assert!(err.contains("cargo gpucheck ptx"), "{err}");

    // 2. rustc_codegen_nvvm fails on the kernel crate
    let out = fx.run(&["-q"], &[("FAKE_NVVM_FAIL", "kernels")]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("rustc_codegen_nvvm failed on kernel crate `kernels` while building `host`"), "{err}");

    // 3. the build works: the host is detected (no table, no -p), the kernel crate's NVVM call rewritten
    let _ = std::fs::remove_dir_all(fx.dir.join("target/gpucheck-nvvm/cuda-builder"));
    // (the fixture PTX has a deliberate shared-memory race: correctness lints allowed, so exit 0)
    let out = fx.run(&["--message-format", "json", "-A", "correctness"], &[]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    // cuda_builder's rustflags reach every crate of the nested build: cuda_std and the kernel crate
    let calls = Fixture::nvvm_calls(&fx.rustc_log);
    assert_eq!(calls.len(), 2, "NVVM rustc calls for cuda_std and kernels: {calls:#?}");
    assert!(calls[0].contains("--crate-name cuda_std"), "{}", calls[0]);
    let call = &calls[1];
    assert!(call.contains("--crate-name kernels"), "{call}");
    assert!(call.ends_with("-Cllvm-args=-arch=compute_61 -Cdebuginfo=2 -Cllvm-args=-generate-line-info"), "{call}");
    assert!(!call.contains("-Cdebuginfo=1"), "cuda_builder's debuginfo level is replaced: {call}");
    assert!(!call.contains("strip="), "cargo's `-C strip=debuginfo` is dropped: {call}");
    // every other rustc call (build scripts, the host, cuda_std) is untouched
    let all = std::fs::read_to_string(&fx.rustc_log).unwrap();
    assert_eq!(all.matches("-generate-line-info").count(), 2, "{all}");
    // the user's own wrapper was chained: it ran the NVVM calls with our flags added
    let wrapped = Fixture::nvvm_calls(&fx.wrapper_log);
    assert_eq!(wrapped.len(), 2, "{wrapped:#?}");
    assert!(wrapped[1].contains("fake-rustc") && wrapped[1].contains("-generate-line-info"), "{}", wrapped[1]);

    // the collected PTX is the one rustc_codegen_nvvm would have written, analysed as `kernels`
    let msgs = json_lines(&out.stdout);
    let finding = msgs.iter().find(|m| m["reason"] == "compiler-message").expect("findings from the NVVM-style PTX");
    assert_eq!(finding["target"]["name"], "kernels");
    assert!(finding["package_id"].as_str().unwrap().contains("kernels"), "{}", finding["package_id"]);
    let rendered = finding["message"]["rendered"].as_str().unwrap();
    assert!(rendered.contains("cuda-builder/release/deps/kernels.ptx"), "{rendered}");
    // block shape from the kernel crate's own [package.metadata.gpucheck]
    assert!(rendered.contains("block shape 32×8×1 from [package.metadata.gpucheck]"), "{rendered}");
    // the same verdicts as checking that PTX file directly with the same block
    let direct =
        gpucheck(&["ptx", fx.ptx.to_str().unwrap(), "--block", "32,8,1", "--message-format", "json", "-A", "correctness"], &fx.dir);
    let expected = lint_counts(&json_lines(&direct.stdout));
    assert!(!expected.is_empty());
    assert_eq!(lint_counts(&msgs), expected);

    // 4. a fresh build runs no rustc; the recorded PTX still holds
    let out = fx.run(&["-A", "correctness"], &[]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(Fixture::nvvm_calls(&fx.rustc_log).is_empty(), "cargo found everything fresh");
    assert!(err.contains("Checking kernels (3 kernels, 71 PTX instructions, no DWARF inline info)"), "{err}");
    assert!(
        err.contains(
            "Rust-CUDA kernel crate built by `host` (CUDA_ARCH=610, rustc flags added: -Cdebuginfo=2 -Cllvm-args=-generate-line-info)"
        ),
        "{err}"
    );
}

#[test]
fn kernel_crate_alone_points_to_its_host() {
    let fx = Fixture::new();
    let out = fx.run(&["-p", "kernels"], &[]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("package `kernels` is a Rust-CUDA kernel crate") && err.contains("`-p host`"), "{err}");
}
