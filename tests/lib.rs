//! Helpers shared by the integration tests: locating (and building) the
//! `cargo-gpucheck` binary, the example kernels and the shared PTX corpus,
//! and reading `//~ WARN lint` marks.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// Root of the repository.
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// The external PTX corpus: the folder `GPUCHECK_CORPUS` names, else
/// `../shared/corpus/ptx` beside the checkout. `None` when there is none (a
/// clone of the repository alone): the calling test then prints one line
/// saying it was skipped and why, and returns. A `GPUCHECK_CORPUS` that
/// names no folder is a failure, not a skip.
pub fn corpus_dir() -> Option<PathBuf> {
    if let Some(d) = std::env::var_os("GPUCHECK_CORPUS") {
        let d = PathBuf::from(d);
        assert!(d.is_dir(), "GPUCHECK_CORPUS names `{}`, which is not a folder", d.display());
        return Some(d);
    }
    let d = repo().join("../shared/corpus/ptx");
    if d.is_dir() {
        return Some(d);
    }
    // written past the test harness's capture, so that it shows
    let test = std::thread::current().name().unwrap_or("a corpus test").to_string();
    let _ = writeln!(
        std::io::stderr(),
        "{test}: the checks over the PTX corpus are skipped: none found (set GPUCHECK_CORPUS to a folder of .ptx files, or put `shared/corpus/ptx` beside the checkout)"
    );
    None
}

/// The `.ptx` files of the corpus, sorted (`None`: skipped, see [`corpus_dir`]).
pub fn corpus_files() -> Option<Vec<PathBuf>> {
    let dir = corpus_dir()?;
    let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("reading the PTX corpus at {}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "ptx"))
        .collect();
    v.sort();
    Some(v)
}

/// One corpus file's text (`None`: skipped, see [`corpus_dir`]).
pub fn corpus_file(name: &str) -> Option<String> {
    let p = corpus_dir()?.join(name);
    Some(std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display())))
}

/// The folder cargo builds the workspace at `dir` into, as cargo says
/// (`CARGO_TARGET_DIR`, `build.target-dir`), never assumed.
pub fn target_dir_of(dir: &Path) -> PathBuf {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args(["metadata", "--no-deps", "--format-version", "1"])
        .current_dir(dir)
        .output()
        .expect("running cargo metadata");
    assert!(out.status.success(), "cargo metadata in {}: {}", dir.display(), String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("cargo metadata's JSON");
    PathBuf::from(v["target_directory"].as_str().expect("target_directory"))
}

/// The root workspace's target folder (see [`target_dir_of`]).
pub fn target_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| target_dir_of(&repo()))
}

/// A scratch folder for one test's files, inside the target folder.
pub fn scratch(name: &str) -> PathBuf {
    target_dir().join(name)
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
        let exe = target_dir().join("debug").join(format!("cargo-gpucheck{}", std::env::consts::EXE_SUFFIX));
        assert!(exe.exists(), "{} missing after build", exe.display());
        exe
    })
}

/// The target folder the tests' small kernel crates share (`core` is
/// built for the GPU target once for all of them).
pub fn kernel_target() -> PathBuf {
    scratch("gpucheck-test-levels").join("target")
}

/// `cargo-gpucheck gpucheck ARGS…` building into [`kernel_target`].
pub fn gpucheck_shared(args: &[&str], cwd: &Path) -> std::process::Output {
    Command::new(binary())
        .arg("gpucheck")
        .args(args)
        .current_dir(cwd)
        .env("CARGO_TARGET_DIR", kernel_target())
        .output()
        .expect("running cargo-gpucheck")
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
    marks_in(base, dir, "rs")
}

/// Every mark in the files with extension `ext` under `dir` (paths relative to `base`).
pub fn marks_in(base: &Path, dir: &Path, ext: &str) -> Vec<Mark> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == ext) {
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

/// Compare the diagnostics found with the marks, counting: a line with
/// two marks of one lint wants two diagnostics, and a second diagnostic
/// of a lint on a line with one mark is extra (one bug, one diagnostic).
pub fn assert_marks(expected: Vec<Mark>, got: Vec<Mark>) {
    let count = |v: Vec<Mark>| {
        let mut m = std::collections::BTreeMap::<Mark, usize>::new();
        for x in v {
            *m.entry(x).or_default() += 1;
        }
        m
    };
    let (want, have) = (count(expected), count(got));
    let short = |a: &std::collections::BTreeMap<Mark, usize>, b: &std::collections::BTreeMap<Mark, usize>| -> Vec<String> {
        a.iter()
            .filter(|(m, n)| b.get(*m).copied().unwrap_or(0) < **n)
            .map(|(m, n)| {
                format!(
                    "{}:{} {} {} (×{} marked or found, ×{} the other side)",
                    m.file,
                    m.line,
                    m.level,
                    m.lint,
                    n,
                    b.get(m).copied().unwrap_or(0)
                )
            })
            .collect()
    };
    let (missing, extra) = (short(&want, &have), short(&have, &want));
    assert!(missing.is_empty() && extra.is_empty(), "missing findings: {missing:#?}\nextra findings: {extra:#?}");
}

/// The mark one of our diagnostics (a `compiler-message` record with a
/// `gpucheck` part) stands for: its primary span's file and line, its
/// level, its lint.
pub fn mark_of(m: &serde_json::Value) -> Mark {
    let msg = &m["message"];
    let span = msg["spans"].as_array().unwrap().iter().find(|s| s["is_primary"] == true).expect("a primary span");
    let level = match msg["level"].as_str().unwrap() {
        "error" => "ERROR",
        "warning" => "WARN",
        other => panic!("unexpected level {other}"),
    };
    Mark {
        file: span["file_name"].as_str().unwrap().to_string(),
        line: span["line_start"].as_u64().unwrap() as u32,
        level: level.into(),
        lint: m["gpucheck"]["lint"].as_str().expect("a gpucheck lint").to_string(),
    }
}

/// Copy a folder and everything under it, `target` folders left out.
pub fn copy_dir(from: &Path, to: &Path) {
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
        let deps = target_dir_of(&repo().join("example-kernels")).join("gpucheck/nvptx64-nvidia-cuda/release/deps");
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
