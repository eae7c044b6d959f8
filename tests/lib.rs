//! Helpers shared by the integration tests: locating (and building) the
//! `cargo-gpucheck` binary, the example kernels and the shared PTX corpus,
//! and reading `//~ WARN lint` marks.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// Root of the repository.
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// `../shared/corpus/ptx` beside the checkout.
pub fn corpus_dir() -> PathBuf {
    repo().join("../shared/corpus/ptx")
}

pub fn corpus_files() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(corpus_dir())
        .unwrap_or_else(|e| panic!("the PTX corpus must be at {}: {e}", corpus_dir().display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "ptx"))
        .collect();
    v.sort();
    v
}

/// The `cargo-gpucheck` binary, built once per test process with the same
/// profile as the tests.
pub fn binary() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let status = Command::new(cargo)
            .args(["build", "-q", "-p", "cargo-gpucheck", "--bin", "cargo-gpucheck"])
            .current_dir(repo())
            .status()
            .expect("running cargo build for cargo-gpucheck");
        assert!(status.success(), "building cargo-gpucheck failed");
        let target = std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from).unwrap_or_else(|| repo().join("target"));
        let exe = target.join("debug").join(format!("cargo-gpucheck{}", std::env::consts::EXE_SUFFIX));
        assert!(exe.exists(), "{} missing after build", exe.display());
        exe
    })
}

/// `cargo-gpucheck gpucheck ARGS…`
pub fn gpucheck(args: &[&str], cwd: &Path) -> std::process::Output {
    Command::new(binary()).arg("gpucheck").args(args).current_dir(cwd).output().expect("running cargo-gpucheck")
}

/// A `//~ LEVEL lint` mark: (file relative to the package, line, level, lint).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Mark {
    pub file: String,
    pub line: u32,
    pub level: String,
    pub lint: String,
}

/// Every mark in the `.rs` files under `dir` (paths relative to `base`).
pub fn marks(base: &Path, dir: &Path) -> Vec<Mark> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                let text = std::fs::read_to_string(&p).unwrap();
                let rel = p.strip_prefix(base).unwrap().to_string_lossy().to_string();
                for (i, line) in text.lines().enumerate() {
                    let doc = line.trim_start().starts_with("//!") || line.trim_start().starts_with("///");
                    // one or more `//~ LEVEL lint` marks at the end of the line
                    for mark in line.split("//~ ").skip(1).filter(|_| !doc) {
                        let mut w = mark.split_whitespace();
                        let level = w.next().unwrap_or("").to_string();
                        let lint = w.next().unwrap_or("").to_string();
                        assert!(level == "WARN" || level == "ERROR", "bad mark in {rel}:{}: {line}", i + 1);
                        out.push(Mark { file: rel.clone(), line: i as u32 + 1, level, lint });
                    }
                }
            }
        }
    }
    out.sort();
    out
}

/// JSON lines of stdout.
pub fn json_lines(out: &[u8]) -> Vec<serde_json::Value> {
    String::from_utf8_lossy(out)
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON: {e}: {l}")))
        .collect()
}

/// The example kernels built through the binary once per test process:
/// its JSON lines (every access recorded), the PTX text, and its path.
pub fn example_build() -> &'static (Vec<serde_json::Value>, String, PathBuf) {
    static OUT: OnceLock<(Vec<serde_json::Value>, String, PathBuf)> = OnceLock::new();
    OUT.get_or_init(|| {
        let out = gpucheck(&["--message-format", "json", "-q", "--all-accesses", "-W", "pedantic"], &repo().join("example-kernels"));
        let deps = repo().join("example-kernels/target/gpucheck/nvptx64-nvidia-cuda/release/deps");
        // the newest `.s`: older builds of the crate may still lie there
        let f = std::fs::read_dir(&deps)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "s") && p.file_name().unwrap().to_string_lossy().starts_with("example_kernels-"))
            .max_by_key(|p| p.metadata().unwrap().modified().unwrap())
            .expect("example kernels PTX");
        (json_lines(&out.stdout), std::fs::read_to_string(&f).unwrap(), f)
    })
}
