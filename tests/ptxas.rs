//! The PTX the CUDA engine loads must assemble: the instrumented copy of
//! the example kernels (and of NVVM PTX from the corpus) goes through
//! `ptxas` for sm_70 and sm_90. ptxas comes from PyPI (`.ci/setup` puts it
//! in target/cuda-tools/bin; `GPUCHECK_PTXAS` or `ptxas` on PATH also do).
//! Without one the tests print one line saying they were skipped, unless
//! `GPUCHECK_REQUIRE_PTXAS=1` (set by CI) makes that a failure.

use gpucheck_tests::*;
use std::io::Write;
use std::path::PathBuf;
use std::process::Command;

/// ptxas, or `None` (said once per test; a failure when CI requires it).
fn ptxas() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("GPUCHECK_PTXAS") {
        return Some(PathBuf::from(p));
    }
    let local = repo().join("target/cuda-tools/bin/ptxas");
    if local.exists() {
        return Some(local);
    }
    if Command::new("ptxas").arg("--version").output().is_ok_and(|o| o.status.success()) {
        return Some(PathBuf::from("ptxas"));
    }
    assert!(
        std::env::var("GPUCHECK_REQUIRE_PTXAS").is_err(),
        "GPUCHECK_REQUIRE_PTXAS is set but ptxas was not found: run `bash .ci/setup` (installs it from PyPI into target/cuda-tools/bin), or set GPUCHECK_PTXAS"
    );
    let test = std::thread::current().name().unwrap_or("a ptxas test").to_string();
    let _ = writeln!(std::io::stderr(), "{test}: skipped: ptxas not found (run `bash .ci/setup`, or set GPUCHECK_PTXAS)");
    None
}

fn assemble(ptxas: &std::path::Path, ptx: &std::path::Path, arch: &str) {
    let out_dir = scratch("gpucheck-test-ptxas");
    std::fs::create_dir_all(&out_dir).unwrap();
    let ins = out_dir.join(format!("{}.{arch}.ptx", ptx.file_stem().unwrap().to_string_lossy()));
    let out = gpucheck(&["instrument", ptx.to_str().unwrap(), "--arch", arch, "-o", ins.to_str().unwrap()], &repo());
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let sites: usize = err.split_whitespace().nth(1).unwrap().parse().unwrap();
    assert!(sites > 0, "{err}");
    let text = std::fs::read_to_string(&ins).unwrap();
    assert_eq!(text.matches("// gpucheck site ").count(), sites);
    let res = Command::new(ptxas).arg(format!("-arch={arch}")).arg(&ins).arg("-o").arg(ins.with_extension("cubin")).output().unwrap();
    assert!(res.status.success(), "ptxas -arch={arch} {}: {}", ins.display(), String::from_utf8_lossy(&res.stderr));
}

#[test]
fn instrumented_example_kernels_assemble_for_sm70_and_sm90() {
    let Some(ptxas) = ptxas() else { return };
    let ptx = &example_build().2;
    // rustc's own PTX with debug info does not assemble (its DWARF label differences); ours must
    let raw = Command::new(&ptxas).arg("-arch=sm_70").arg(ptx).arg("-o").arg("/dev/null").output().unwrap();
    assert!(!raw.status.success(), "rustc's debug PTX now assembles as is: the DWARF stripping may no longer be needed");
    for arch in ["sm_70", "sm_90"] {
        assemble(&ptxas, ptx, arch);
    }
}

#[test]
fn instrumented_nvvm_and_nvcc_ptx_assembles() {
    let Some(ptxas) = ptxas() else { return };
    // our own NVVM-style module (calls, slices, a struct parameter), then the corpus's
    for arch in ["sm_70", "sm_90"] {
        assemble(&ptxas, &repo().join("analysis/tests/nvvm/idioms.ptx"), arch);
    }
    let Some(dir) = corpus_dir() else { return };
    for f in ["rust-cuda-add.ptx", "vosen-ZLUDA-vectorAdd_kernel64.ptx"] {
        for arch in ["sm_70", "sm_90"] {
            assemble(&ptxas, &dir.join(f), arch);
        }
    }
    // CUDA 8 PTX uses `shfl` without `.sync`, which PTX ISA 6.4 and later reject: sm_70 (ISA 6.3) only
    assemble(&ptxas, &dir.join("JuliaGPU-CUDA.jl-reduce.cu.ptx"), "sm_70");
}
