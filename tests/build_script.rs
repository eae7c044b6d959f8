//! CUDA C compiled by a build script: `tests/fixtures/cuda-build-script`
//! is a workspace whose `kernels` crate runs bindgen_cuda (from crates.io)
//! on its `.cu` files in build.rs and `include_str!`s the PTX. `cargo
//! gpucheck` there, with no configuration, must run the build script, check
//! the PTX it wrote and report exactly the findings the `//~` marks name, at
//! the `.cu` lines; `confirm` must run its kernels with the launch shapes of
//! the package's table.
//!
//! nvcc comes from `GPUCHECK_NVCC`, target/cuda-tools/cu13 (`.ci/setup`
//! installs PyPI's nvcc 13 there) or PATH. Without one, the tests that
//! compile print one line saying they were skipped, unless
//! `GPUCHECK_REQUIRE_NVCC=1` (set by CI) makes that a failure. The tests of
//! a missing nvcc and of the opt-out need none.

use gpucheck_tests::*;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

/// The nvcc to build the fixture with, or `None` (said once per test).
fn nvcc() -> Option<&'static Path> {
    static NVCC: OnceLock<Option<PathBuf>> = OnceLock::new();
    let found = NVCC.get_or_init(|| {
        let tools = repo().join("target/cuda-tools/cu13");
        let mut candidates: Vec<PathBuf> = std::env::var_os("GPUCHECK_NVCC").map(PathBuf::from).into_iter().collect();
        candidates.push(tools.join("site/nvidia/cu13/bin/nvcc"));
        if let Ok(lib) = std::fs::read_dir(tools.join("venv/lib")) {
            candidates.extend(lib.flatten().map(|e| e.path().join("site-packages/nvidia/cu13/bin/nvcc")));
        }
        candidates.push(PathBuf::from("nvcc"));
        let found = candidates.into_iter().find(|n| Command::new(n).arg("--version").output().is_ok_and(|o| o.status.success()));
        assert!(
            found.is_some() || std::env::var("GPUCHECK_REQUIRE_NVCC").is_err(),
            "GPUCHECK_REQUIRE_NVCC is set but no nvcc was found (GPUCHECK_NVCC, target/cuda-tools/cu13 from `bash .ci/setup`, PATH)"
        );
        found
    });
    if found.is_none() {
        let test = std::thread::current().name().unwrap_or("a build-script test").to_string();
        let _ = writeln!(std::io::stderr(), "{test}: skipped: no nvcc found (run `bash .ci/setup`, or set GPUCHECK_NVCC)");
    }
    found.as_deref()
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let p = e.unwrap().path();
        let dest = to.join(p.file_name().unwrap());
        if p.is_dir() {
            if p.file_name().is_some_and(|n| n != "target") {
                copy_dir(&p, &dest);
            }
        } else {
            std::fs::copy(&p, &dest).unwrap();
        }
    }
}

/// A fresh copy of the fixture workspace in the scratch folder `name`.
fn workspace(name: &str) -> PathBuf {
    let dir = scratch("gpucheck-test-build-script").join(name);
    let _ = std::fs::remove_dir_all(&dir);
    copy_dir(&repo().join("tests/fixtures/cuda-build-script"), &dir);
    dir
}

/// The copy the tests with nvcc share (built by the first that runs).
fn shared() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| workspace("with-nvcc"))
}

/// `cargo gpucheck ARGS` in `dir`, with the CUDA installation of `nvcc`
/// (its folder above `bin`) as CUDA_HOME when given, and none otherwise.
fn run(dir: &Path, args: &[&str], nvcc: Option<&Path>) -> Output {
    let mut cmd = Command::new(binary());
    // each copy its own target folder: cargo gives a path package's build
    // script one folder whatever the path, and would find another copy's fresh
    cmd.arg("gpucheck").args(args).current_dir(dir).env("CARGO_TARGET_DIR", dir.join("target"));
    for v in ["CUDA_HOME", "CUDA_PATH", "CUDA_ROOT", "NVCC_APPEND_FLAGS", "CUDA_COMPUTE_CAP"] {
        cmd.env_remove(v);
    }
    match nvcc.map(|n| n.canonicalize().unwrap_or_else(|_| n.to_path_buf())) {
        Some(n) if n.parent().is_some_and(|b| b.ends_with("bin")) && n.is_absolute() => {
            cmd.env("CUDA_HOME", n.parent().unwrap().parent().unwrap());
        }
        Some(_) => {}
        // nvcc taken off PATH
        None => {
            let path = std::env::var_os("PATH").unwrap_or_default();
            let kept: Vec<PathBuf> = std::env::split_paths(&path).filter(|d| !d.join("nvcc").exists()).collect();
            cmd.env("PATH", std::env::join_paths(kept).unwrap());
        }
    }
    cmd.output().expect("running cargo-gpucheck")
}

#[test]
fn build_script_findings_match_marks_exactly() {
    let Some(nvcc) = nvcc() else { return };
    let dir = shared();
    let out = run(dir, &["--message-format", "json", "-W", "gpucheck::pedantic"], Some(nvcc));
    let err = String::from_utf8_lossy(&out.stderr);
    // the race is an error
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("Collected 2 PTX files from the build script of `kernels`"), "{err}");
    assert!(err.contains("`-lineinfo` added"), "{err}");
    // the kernels table names a kernel of the package (in scale.ptx, not reduce.ptx)
    assert!(!err.contains("names no kernel"), "{err}");
    let expected = marks_in(dir, &dir.join("kernels/src"), "cu");
    assert_eq!(expected.len(), 2, "the fixture's marks");
    let mut got = Vec::new();
    for m in json_lines(&out.stdout).iter().filter(|m| m["reason"] == "compiler-message" && m["gpucheck"].is_object()) {
        let msg = &m["message"];
        let span = msg["spans"].as_array().unwrap().iter().find(|s| s["is_primary"] == true).expect("a primary span");
        got.push(Mark {
            file: span["file_name"].as_str().unwrap().to_string(),
            line: span["line_start"].as_u64().unwrap() as u32,
            level: if msg["level"] == "error" { "ERROR" } else { "WARN" }.into(),
            lint: m["gpucheck"]["lint"].as_str().unwrap().to_string(),
        });
    }
    assert_marks(expected, got);
}

#[test]
fn confirm_runs_the_build_scripts_ptx_with_the_tables_shape() {
    let Some(nvcc) = nvcc() else { return };
    let dir = shared();
    // scale_rows: block 128×1×1 from `[package.metadata.gpucheck.kernels.scale_rows]`
    let out = run(dir, &["confirm", "--kernel", "scale_rows", "--grid", "2", "--arg", "x=f32[256]"], Some(nvcc));
    let text = String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.contains("grid 2×1×1, block 128×1×1"), "{text}");
    assert!(text.contains("kernels/src/scale.cu:21:5") && text.contains("scale_rows: 2 confirmed, 0 failed"), "{text}");
    // the strided twin: 32 sectors per request, predicted and observed
    let out = run(
        dir,
        &["confirm", "--kernel", "scale_strided", "--grid", "4", "--block", "256", "--arg", "x=f32[32768]", "--arg", "n=1024"],
        Some(nvcc),
    );
    let text = String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.contains("kernels/src/scale.cu:14:9") && text.contains("5 confirmed, 0 failed"), "{text}");
}

#[test]
fn a_build_script_without_nvcc_gets_one_clear_error() {
    if ["/usr/local/cuda/bin/nvcc", "/opt/cuda/bin/nvcc", "/usr/lib/cuda/bin/nvcc"].iter().any(|n| Path::new(n).exists()) {
        eprintln!("a_build_script_without_nvcc_gets_one_clear_error: skipped: this machine has nvcc in a usual CUDA folder");
        return;
    }
    let dir = workspace("no-nvcc");
    let out = run(&dir, &[], None);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "{err}");
    let ours: Vec<&str> = err.lines().filter(|l| l.starts_with("error: the build script of `kernels` runs `nvcc`")).collect();
    assert_eq!(ours.len(), 1, "{err}");
    for said in ["was not found: looked on PATH", "/usr/local/cuda/bin", "pip install nvidia-cuda-nvcc", "CUDA_HOME"] {
        assert!(ours[0].contains(said), "{said}: {}", ours[0]);
    }
}

#[test]
fn build_script_false_leaves_the_package_out() {
    let dir = workspace("opt-out");
    let manifest = dir.join("kernels/Cargo.toml");
    let text = std::fs::read_to_string(&manifest).unwrap();
    let with = |value: &str| {
        text.replace(
            "[package.metadata.gpucheck.kernels.scale_rows]",
            &format!("[package.metadata.gpucheck]\nbuild-script = {value}\n\n[package.metadata.gpucheck.kernels.scale_rows]"),
        )
    };
    std::fs::write(&manifest, with("false")).unwrap();
    let out = run(&dir, &[], None);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("no kernel package found") && err.contains("bindgen_cuda"), "{err}");
    assert!(!err.contains("Compiling") && !err.contains("Collected"), "nothing is built: {err}");
    // a value that is not a boolean is said, with the file
    std::fs::write(&manifest, with("\"yes\"")).unwrap();
    let out = run(&dir, &[], None);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("`build-script = \"yes\"`") && err.contains("kernels/Cargo.toml") && err.contains("expected `true`"), "{err}");
}
