//! CUDA C kept in Rust crates, the three shapes in one workspace
//! (`tests/fixtures/cuda-c-crates`): `kernels` and `forge` run bindgen_cuda
//! and cudaforge (from crates.io) on their `.cu` files in build.rs and
//! `include_str!` the PTX;
//! `engine` hands CUDA C to cudarc's NVRTC (`compile_ptx` on a `const`
//! string literal, `compile_ptx_with_opts` on an `include_str!`, and one
//! source built with `format!`). `cargo gpucheck` there, with no
//! configuration, must run the build script, compile the NVRTC sources,
//! and report exactly the findings the `//~` marks name, at the `.cu` and
//! `.rs` lines; `confirm` must run the kernels of both.
//!
//! nvcc comes from `GPUCHECK_NVCC`, target/cuda-tools/cu13 (`.ci/setup`
//! installs PyPI's nvcc 13 and NVRTC there) or PATH; libnvrtc from beside
//! it. Without them, the tests that compile print one line saying they were
//! skipped, unless `GPUCHECK_REQUIRE_NVCC=1` (set by CI) makes that a
//! failure. The tests of a missing nvcc and of the opt-out need neither.

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
        // NVRTC beside it (a CUDA installation's lib or lib64)
        let nvrtc = |n: &Path| {
            let cuda = n.canonicalize().ok().and_then(|n| Some(n.parent()?.parent()?.to_path_buf()));
            cuda.is_some_and(|c| {
                ["lib", "lib64"].iter().any(|l| {
                    std::fs::read_dir(c.join(l))
                        .is_ok_and(|d| d.flatten().any(|e| e.file_name().to_string_lossy().starts_with("libnvrtc.so")))
                })
            })
        };
        let found = found.filter(|n| n.is_absolute() && nvrtc(n) || !n.is_absolute());
        assert!(
            found.is_some() || std::env::var("GPUCHECK_REQUIRE_NVCC").is_err(),
            "GPUCHECK_REQUIRE_NVCC is set but no nvcc with NVRTC beside it was found (GPUCHECK_NVCC, target/cuda-tools/cu13 from `bash .ci/setup`, PATH)"
        );
        found
    });
    if found.is_none() {
        let test = std::thread::current().name().unwrap_or("a build-script test").to_string();
        let _ = writeln!(std::io::stderr(), "{test}: skipped: no nvcc with NVRTC found (run `bash .ci/setup`, or set GPUCHECK_NVCC)");
    }
    found.as_deref()
}

/// A fresh copy of the fixture workspace in the scratch folder `name`.
fn workspace(name: &str) -> PathBuf {
    let dir = scratch("gpucheck-test-cuda-c-crates").join(name);
    let _ = std::fs::remove_dir_all(&dir);
    copy_dir(&repo().join("tests/fixtures/cuda-c-crates"), &dir);
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
    // each copy its own target folder (cargo gives a path package's build script
    // one folder whatever the path, and would find another copy's fresh), kept
    // beside it across test runs so that the builders are compiled once
    let target = dir.with_file_name(format!("{}-target", dir.file_name().unwrap().to_string_lossy()));
    cmd.arg("gpucheck").args(args).current_dir(dir).env("CARGO_TARGET_DIR", target);
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
fn findings_match_marks_exactly_in_cu_and_rs_files() {
    let Some(nvcc) = nvcc() else { return };
    let dir = shared();
    let out = run(dir, &["--message-format", "json"], Some(nvcc));
    let err = String::from_utf8_lossy(&out.stderr);
    // the race is an error
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("Collected 2 PTX files from the build script of `kernels`"), "{err}");
    assert!(err.contains("Collected 1 PTX file from the build script of `forge`"), "{err}");
    assert!(err.contains("`-lineinfo` added"), "{err}");
    assert!(err.contains("Collected 2 CUDA C sources for NVRTC from `engine`'s Rust code"), "{err}");
    // the source built with format! is said to be skipped, with where and why
    let skipped: Vec<&str> = err.lines().filter(|l| l.contains("is not checked")).collect();
    assert_eq!(skipped.len(), 1, "{err}");
    assert!(skipped[0].contains("src/lib.rs:35 in `engine`") && skipped[0].contains("built at run time with `format!`"), "{err}");
    // the kernels table names a kernel of the package (in scale.ptx, not reduce.ptx)
    assert!(!err.contains("names no kernel"), "{err}");
    let mut expected = marks_in(dir, dir, "cu");
    expected.extend(marks_in(dir, &dir.join("engine/src"), "rs"));
    assert_eq!(expected.len(), 5, "the fixture's marks: {expected:?}");
    let mut got = Vec::new();
    for m in json_lines(&out.stdout).iter().filter(|m| m["reason"] == "compiler-message" && m["gpucheck"].is_object()) {
        got.push(mark_of(m));
    }
    assert_marks(expected, got);
    // gather_cols takes its block from the LaunchConfig beside its load in the host code
    let gather = json_lines(&out.stdout).into_iter().find(|m| m["gpucheck"]["kernel"] == "gather_cols").expect("gather_cols' finding");
    let notes = gather["message"]["children"].to_string();
    assert!(notes.contains("block shape 128×1×1 from the `LaunchConfig` of `gather_cols`'s launch at engine/src/lib.rs:41"), "{notes}");
    assert!(notes.contains("4 of 4 warps per block"), "{notes}");
}

#[test]
fn confirm_runs_both_forms_with_the_tables_shape() {
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
    // a kernel NVRTC compiled from a Rust string literal: its rows at the Rust line
    let out = run(
        dir,
        &["confirm", "--kernel", "gather_cols", "--grid", "2", "--arg", "x=f32[32768]", "--arg", "y=f32[512]", "--arg", "n=512"],
        Some(nvcc),
    );
    let text = String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{text}");
    // (its block, 128×1×1, from the host code's LaunchConfig)
    assert!(text.contains("grid 2×1×1, block 128×1×1"), "{text}");
    assert!(text.contains("engine/src/lib.rs:20:9") && text.contains("gather_cols: ") && text.contains(" confirmed, 0 failed"), "{text}");
}

#[test]
fn cudaforge_kernels_confirm_and_the_report_shows_every_source() {
    let Some(nvcc) = nvcc() else { return };
    let dir = shared();
    let out = run(
        dir,
        &[
            "confirm",
            "--kernel",
            "row_sums_by_thread",
            "--grid",
            "1",
            "--block",
            "32",
            "--arg",
            "x=f32[1024]",
            "--arg",
            "out=f32[32]",
            "--arg",
            "n=32",
        ],
        Some(nvcc),
    );
    let text = String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(
        text.contains("forge/src/reduce_rows.cu:17") && text.contains("row_sums_by_thread: ") && text.contains(" confirmed, 0 failed"),
        "{text}"
    );
    let out = run(dir, &["report"], Some(nvcc));
    let err = String::from_utf8_lossy(&out.stderr);
    let index = err.lines().find_map(|l| l.split("): ").nth(1).filter(|p| p.ends_with("index.html"))).unwrap_or_else(|| panic!("{err}"));
    let html = std::fs::read_to_string(index).unwrap();
    for src in ["kernels/src/reduce.cu", "kernels/src/scale.cu", "engine/src/lib.rs", "engine/src/transpose.cu", "forge/src/reduce_rows.cu"]
    {
        assert!(html.contains(src), "{src} is not in the report");
    }
}

#[test]
fn nvcc_and_nvrtc_of_a_pypi_wheel_are_found_through_python() {
    let Some(nvcc) = nvcc() else { return };
    // PyPI's layout: …/site/nvidia/cu13/bin/nvcc, `site` on python3's path
    let Some(site) = nvcc.canonicalize().ok().and_then(|n| Some(n.parent()?.parent()?.parent()?.parent()?.to_path_buf())) else { return };
    if !site.join("nvidia/cu13/bin/nvcc").exists() || Command::new("python3").arg("--version").output().is_err() {
        eprintln!(
            "nvcc_and_nvrtc_of_a_pypi_wheel_are_found_through_python: skipped: nvcc is not from a PyPI wheel here, or there is no python3"
        );
        return;
    }
    let dir = workspace("pypi");
    let ws = dir.join("Cargo.toml");
    let text =
        std::fs::read_to_string(&ws).unwrap().replace(r#"members = ["kernels", "engine", "forge"]"#, r#"members = ["kernels", "engine"]"#);
    std::fs::write(&ws, text).unwrap();
    // no CUDA_HOME, nvcc off PATH: only python3's path leads to the wheel
    let mut cmd = Command::new(binary());
    let path = std::env::var_os("PATH").unwrap_or_default();
    let kept: Vec<PathBuf> = std::env::split_paths(&path).filter(|d| !d.join("nvcc").exists()).collect();
    cmd.arg("gpucheck")
        .current_dir(&dir)
        .env("CARGO_TARGET_DIR", dir.with_file_name("pypi-target"))
        .env("PATH", std::env::join_paths(kept).unwrap())
        .env("PYTHONPATH", &site);
    for v in ["CUDA_HOME", "CUDA_PATH", "CUDA_ROOT", "NVCC_APPEND_FLAGS", "CUDA_COMPUTE_CAP"] {
        cmd.env_remove(v);
    }
    let out = cmd.output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("Collected 2 PTX files from the build script of `kernels` (nvcc 13."), "{err}");
    assert!(err.contains("Collected 2 CUDA C sources for NVRTC from `engine`'s Rust code (NVRTC 13."), "{err}");
}

#[test]
fn a_build_script_without_nvcc_gets_one_clear_error() {
    if ["/usr/local/cuda/bin/nvcc", "/opt/cuda/bin/nvcc", "/usr/lib/cuda/bin/nvcc"].iter().any(|n| Path::new(n).exists()) {
        eprintln!("a_build_script_without_nvcc_gets_one_clear_error: skipped: this machine has nvcc in a usual CUDA folder");
        return;
    }
    let dir = workspace("no-nvcc");
    // bindgen_cuda's crate alone (cudaforge is not compiled for this)
    let manifest = dir.join("Cargo.toml");
    let text =
        std::fs::read_to_string(&manifest).unwrap().replace(r#"members = ["kernels", "engine", "forge"]"#, r#"members = ["kernels"]"#);
    std::fs::write(&manifest, text).unwrap();
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
    // (without forge, whose build script would run)
    let ws = dir.join("Cargo.toml");
    let text =
        std::fs::read_to_string(&ws).unwrap().replace(r#"members = ["kernels", "engine", "forge"]"#, r#"members = ["kernels", "engine"]"#);
    std::fs::write(&ws, text).unwrap();
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
    // kernels' build script is not run; engine's NVRTC sources are still taken (and NVRTC
    // is not found without a CUDA installation, unless this machine has one of its own)
    assert!(!err.contains("Compiling kernels") && !err.contains("from the build script"), "kernels is not built: {err}");
    assert!(err.contains("Collected 2 CUDA C sources for NVRTC") || err.contains("libnvrtc was not found: looked in"), "{err}");
    // a value that is not a boolean is said, with the file
    std::fs::write(&manifest, with("\"yes\"")).unwrap();
    let out = run(&dir, &[], None);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("`build-script = \"yes\"`") && err.contains("kernels/Cargo.toml") && err.contains("expected `true`"), "{err}");
}
