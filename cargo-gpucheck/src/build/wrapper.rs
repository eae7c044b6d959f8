//! `RUSTC_WRAPPER` mode: cargo-gpucheck standing between cargo and rustc.
//!
//! Both build backends run one `cargo build` with `RUSTC_WRAPPER` set to
//! this binary. For each rustc call that compiles a kernel crate it adds the
//! flags the analysis needs (PTX with debug info), runs rustc (through the
//! wrapper the user already had, e.g. sccache, when there was one), and
//! appends one JSON line to a record file naming the crate, its package
//! directory, `--out-dir`, `CUDA_ARCH` and the PTX the call wrote. This is the
//! only way into Rust-CUDA builds: `cuda_builder` overwrites `RUSTFLAGS`
//! with `CARGO_ENCODED_RUSTFLAGS` in its nested cargo, but `RUSTC_WRAPPER` is
//! inherited.
//!
//! Owns: recognising kernel rustc calls, rewriting their arguments, and the
//! record format. Does not own: which packages to build or the analysis.

use serde::{Deserialize, Serialize};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::SystemTime;

/// Record file (JSON lines); its presence in the environment turns wrapper mode on.
pub const RECORD_ENV: &str = "GPUCHECK_WRAPPER_RECORD";
/// The wrapper that was in `RUSTC_WRAPPER` before us, to chain to.
pub const INNER_ENV: &str = "GPUCHECK_WRAPPER_INNER";
/// nvptx backend: comma-separated crate names (library target names) to emit PTX for.
pub const CRATES_ENV: &str = "GPUCHECK_WRAPPER_CRATES";

/// What kind of kernel build a rustc call is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// rustc's own nvptx64-nvidia-cuda target, a crate named in `CRATES_ENV`.
    Nvptx,
    /// rustc with `-Zcodegen-backend=…rustc_codegen_nvvm…` (Rust-CUDA).
    Nvvm,
}

/// One line of the record file.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Record {
    pub kind: Kind,
    /// `--crate-name`.
    pub crate_name: String,
    /// `CARGO_PKG_NAME` of the call.
    pub package: String,
    /// `CARGO_MANIFEST_DIR` of the call: the kernel crate's directory.
    pub manifest_dir: PathBuf,
    pub out_dir: PathBuf,
    /// `CUDA_ARCH` as `cuda_builder` sets it (e.g. `610`), when set.
    pub cuda_arch: Option<String>,
    /// Arguments the wrapper added or replaced.
    pub added: Vec<String>,
    /// Exit status of rustc (0 = success).
    pub status: i32,
    /// The PTX written by this call, when it succeeded and wrote one.
    pub ptx: Option<PathBuf>,
}

/// A rustc command line after rewriting.
#[derive(Debug, Clone, PartialEq)]
pub struct Rewrite {
    pub kind: Kind,
    pub args: Vec<String>,
    pub added: Vec<String>,
    pub crate_name: String,
    pub out_dir: PathBuf,
    /// `-C extra-filename`, part of output names.
    pub extra_filename: String,
}

/// Value of option `name` given as `name V`, `name=V`, or (for `-C`/`-Z`)
/// as `-Ckey=V` / `-C key=V`.
fn option<'a>(args: &'a [String], name: &str) -> Option<&'a str> {
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if a == name {
            return it.next().map(String::as_str);
        }
        if let Some(v) = a.strip_prefix(name).and_then(|r| r.strip_prefix('=')) {
            return Some(v);
        }
    }
    None
}

/// Values of `-C key=V` / `-Ckey=V` (or `-Z`) for one key, and the indices of
/// the arguments that hold them (one or two each).
fn flag_values(args: &[String], flag: &str, key: &str) -> (Vec<String>, Vec<usize>) {
    let mut vals = vec![];
    let mut idx = vec![];
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        let (body, used) = if a == flag {
            (args.get(i + 1).map(String::as_str).unwrap_or(""), 2)
        } else if let Some(b) = a.strip_prefix(flag) {
            (b, 1)
        } else {
            i += 1;
            continue;
        };
        let body_key = body.split('=').next().unwrap_or("");
        // rustc accepts `-` and `_` alike in option names
        if body_key.replace('_', "-") == key {
            vals.push(body.split_once('=').map(|(_, v)| v.to_string()).unwrap_or_default());
            idx.extend(i..i + used);
        }
        i += used;
    }
    (vals, idx)
}

/// Decide whether a rustc call builds a kernel crate and rewrite it.
/// `crates`: the nvptx backend's kernel crates (empty for Rust-CUDA builds).
pub fn rewrite(args: &[String], crates: &[String], primary: bool) -> Option<Rewrite> {
    let crate_name = option(args, "--crate-name")?.to_string();
    let out_dir = PathBuf::from(option(args, "--out-dir")?);
    let (backends, _) = flag_values(args, "-Z", "codegen-backend");
    let nvvm = backends.iter().any(|b| b.contains("rustc_codegen_nvvm"));
    let target = option(args, "--target").unwrap_or("");
    let kind = if nvvm {
        Kind::Nvvm
    } else if target.starts_with("nvptx64-nvidia-cuda") && primary && crates.contains(&crate_name) {
        Kind::Nvptx
    } else {
        return None;
    };
    let extra_filename = flag_values(args, "-C", "extra-filename").0.pop().unwrap_or_default();
    // drop any debuginfo level cargo or cuda_builder chose (ours must be
    // full) and cargo's `-C strip=debuginfo` of release builds
    let (_, mut drop) = flag_values(args, "-C", "debuginfo");
    drop.extend(flag_values(args, "-C", "strip").1);
    let mut out: Vec<String> = args.iter().enumerate().filter(|(i, _)| !drop.contains(i)).map(|(_, a)| a.clone()).collect();
    let added: Vec<String> = match kind {
        Kind::Nvvm => vec!["-Cdebuginfo=2".into(), "-Cllvm-args=-generate-line-info".into()],
        Kind::Nvptx => vec!["--emit=asm".into(), "-Cdebuginfo=2".into(), "-Ccodegen-units=1".into()],
    };
    out.extend(added.iter().cloned());
    Some(Rewrite { kind, args: out, added, crate_name, out_dir, extra_filename })
}

/// The newest file in `dir` named `<crate><extra>.<ext>` (or
/// `<crate>-….<ext>`) modified at or after `since`.
fn output(dir: &Path, crate_name: &str, extra: &str, ext: &str, since: SystemTime) -> Option<PathBuf> {
    let exact = format!("{crate_name}{extra}.{ext}");
    let exact_path = dir.join(&exact);
    if exact_path.exists() {
        return Some(exact_path);
    }
    let mut best: Option<(SystemTime, PathBuf)> = None;
    for e in std::fs::read_dir(dir).ok()?.flatten() {
        let name = e.file_name().to_string_lossy().to_string();
        let stem_ok = name.strip_suffix(&format!(".{ext}")).is_some_and(|s| s == crate_name || s.starts_with(&format!("{crate_name}-")));
        let Ok(t) = e.metadata().and_then(|m| m.modified()) else { continue };
        if stem_ok && t >= since && best.as_ref().is_none_or(|(bt, _)| t > *bt) {
            best = Some((t, e.path()));
        }
    }
    best.map(|(_, p)| p)
}

/// Whether this process was started by cargo as `RUSTC_WRAPPER`.
pub fn active(args: &[OsString]) -> bool {
    std::env::var_os(RECORD_ENV).is_some() && args.get(1).is_some_and(|a| a != "gpucheck")
}

/// Wrapper mode: `args` = [us, rustc, rustc args…]. Returns rustc's exit code.
pub fn run(args: &[OsString]) -> i32 {
    let program = &args[1];
    let rest: Vec<String> = args[2..].iter().map(|a| a.to_string_lossy().to_string()).collect();
    let crates: Vec<String> =
        std::env::var(CRATES_ENV).unwrap_or_default().split(',').filter(|s| !s.is_empty()).map(str::to_string).collect();
    let primary = std::env::var_os("CARGO_PRIMARY_PACKAGE").is_some();
    let rw = rewrite(&rest, &crates, primary);
    let mut cmd = match std::env::var_os(INNER_ENV).filter(|w| !w.is_empty()) {
        Some(inner) => {
            let mut c = Command::new(inner);
            c.arg(program);
            c
        }
        None => Command::new(program),
    };
    match &rw {
        Some(r) => cmd.args(&r.args),
        None => cmd.args(&args[2..]),
    };
    // the chained wrapper and rustc must not see us
    cmd.env_remove(RECORD_ENV).env_remove(INNER_ENV).env_remove(CRATES_ENV);
    let started = SystemTime::now() - std::time::Duration::from_secs(2);
    let status = match cmd.status() {
        Ok(s) => s.code().unwrap_or(101),
        Err(e) => {
            eprintln!("error: cargo-gpucheck (as RUSTC_WRAPPER) could not run `{}`: {e}", cmd.get_program().to_string_lossy());
            return 101;
        }
    };
    if let (Some(r), Some(file)) = (rw, std::env::var_os(RECORD_ENV)) {
        let ext = if r.kind == Kind::Nvvm { "ptx" } else { "s" };
        let ptx = if status == 0 { output(&r.out_dir, &r.crate_name, &r.extra_filename, ext, started) } else { None };
        let rec = Record {
            kind: r.kind,
            crate_name: r.crate_name,
            package: std::env::var("CARGO_PKG_NAME").unwrap_or_default(),
            manifest_dir: std::env::var_os("CARGO_MANIFEST_DIR").map(PathBuf::from).unwrap_or_default(),
            out_dir: r.out_dir,
            cuda_arch: std::env::var("CUDA_ARCH").ok(),
            added: r.added,
            status,
            ptx,
        };
        append(Path::new(&file), &rec);
    }
    status
}

/// Append one record as a single write (records from parallel rustc calls do not interleave).
fn append(file: &Path, rec: &Record) {
    use std::io::Write;
    let mut line = serde_json::to_string(rec).unwrap_or_default();
    line.push('\n');
    let res = std::fs::OpenOptions::new().create(true).append(true).open(file).and_then(|mut f| f.write_all(line.as_bytes()));
    if let Err(e) = res {
        eprintln!("warning: cargo-gpucheck could not write its build record `{}`: {e}", file.display());
    }
}

/// Every record in a record file, oldest first; lines that do not parse are skipped.
pub fn read(file: &Path) -> Vec<Record> {
    std::fs::read_to_string(file).unwrap_or_default().lines().filter_map(|l| serde_json::from_str(l).ok()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_string).collect()
    }

    /// A rustc call as cuda_builder's nested cargo makes it (DESIGN §2: the
    /// flags from `CARGO_ENCODED_RUSTFLAGS` come last).
    const NVVM_CALL: &str = "--crate-name kernels --edition=2021 kernels/src/lib.rs --error-format=json \
        --json=diagnostic-rendered-ansi,artifacts,future-incompat --crate-type cdylib --crate-type rlib \
        --emit=dep-info,metadata,link -C opt-level=3 -C embed-bitcode=no -C metadata=8e0f35c1f0b1f6c3 \
        -C extra-filename=-3ae3b50e0b6b1f1f -C strip=debuginfo --out-dir /w/target/cuda-builder/nvptx64-nvidia-cuda/release/deps \
        --target nvptx64-nvidia-cuda -L dependency=/w/target/cuda-builder/nvptx64-nvidia-cuda/release/deps \
        -L dependency=/w/target/cuda-builder/release/deps --extern cuda_std=/w/target/cuda-builder/nvptx64-nvidia-cuda/release/deps/libcuda_std-0c1d.rlib \
        -Zcodegen-backend=/home/u/.cargo/git/checkouts/rust-cuda/target/release/librustc_codegen_nvvm.so \
        -Zcrate-attr=feature(register_tool) -Zcrate-attr=register_tool(nvvm_internal) -Zcrate-attr=no_std \
        -Zsaturating_float_casts=false -Cdebuginfo=1 -Cllvm-args=-arch=compute_61";

    #[test]
    fn nvvm_call_gets_full_debug_info_and_line_info() {
        let args = split(NVVM_CALL);
        let r = rewrite(&args, &[], false).expect("a Rust-CUDA kernel call");
        assert_eq!(r.kind, Kind::Nvvm);
        assert_eq!(r.crate_name, "kernels");
        assert_eq!(r.out_dir, PathBuf::from("/w/target/cuda-builder/nvptx64-nvidia-cuda/release/deps"));
        assert_eq!(r.extra_filename, "-3ae3b50e0b6b1f1f");
        assert_eq!(r.added, ["-Cdebuginfo=2", "-Cllvm-args=-generate-line-info"]);
        // cuda_builder's -Cdebuginfo=1 is replaced, everything else kept in order
        assert!(!r.args.contains(&"-Cdebuginfo=1".to_string()));
        assert!(!r.args.contains(&"strip=debuginfo".to_string()));
        assert_eq!(r.args.len(), args.len() - 3 + 2);
        let kept: Vec<&String> = args.iter().filter(|a| *a != "-Cdebuginfo=1" && *a != "strip=debuginfo").collect();
        let kept: Vec<&String> = kept
            .iter()
            .enumerate()
            .filter(|(i, a)| !(**a == "-C" && kept.get(i + 1).is_none_or(|n| !n.contains('='))))
            .map(|(_, a)| *a)
            .collect();
        assert_eq!(r.args[..r.args.len() - 2].iter().collect::<Vec<_>>(), kept);
        assert_eq!(&r.args[r.args.len() - 2..], ["-Cdebuginfo=2", "-Cllvm-args=-generate-line-info"]);
    }

    #[test]
    fn spaced_forms_are_recognised() {
        let args = split(
            "--crate-name k --out-dir=/o -Z codegen-backend=/x/librustc_codegen_nvvm.dylib -C debuginfo=0 -C extra-filename=-1 --crate-type cdylib",
        );
        let r = rewrite(&args, &[], false).unwrap();
        assert_eq!(r.kind, Kind::Nvvm);
        assert_eq!(r.out_dir, PathBuf::from("/o"));
        assert!(!r.args.iter().any(|a| a == "debuginfo=0"), "{:?}", r.args);
        assert_eq!(r.args.iter().filter(|a| *a == "-C").count(), 1, "only `-C extra-filename` stays spaced: {:?}", r.args);
    }

    #[test]
    fn other_calls_pass_through() {
        // the host crate, build scripts, core for nvptx, version probes
        assert!(rewrite(&split("--crate-name host --out-dir /o --crate-type bin"), &[], true).is_none());
        assert!(rewrite(&split("--crate-name build_script_build --out-dir /o"), &["k".into()], true).is_none());
        assert!(rewrite(&split("--crate-name core --out-dir /o --target nvptx64-nvidia-cuda"), &["k".into()], false).is_none());
        assert!(rewrite(&split("-vV"), &[], true).is_none());
        // a kernel crate of the nvptx backend that is not a primary package is a dependency: untouched
        assert!(rewrite(&split("--crate-name k --out-dir /o --target nvptx64-nvidia-cuda"), &["k".into()], false).is_none());
    }

    #[test]
    fn nvptx_kernel_crate_emits_ptx() {
        let args = split("--crate-name k --edition=2021 src/lib.rs --crate-type lib --emit=dep-info,metadata,link -C opt-level=3 -C debuginfo=1 --out-dir /o --target nvptx64-nvidia-cuda");
        let r = rewrite(&args, &["k".into()], true).unwrap();
        assert_eq!(r.kind, Kind::Nvptx);
        assert_eq!(r.added, ["--emit=asm", "-Cdebuginfo=2", "-Ccodegen-units=1"]);
        assert!(!r.args.windows(2).any(|w| w[0] == "-C" && w[1] == "debuginfo=1"));
    }

    #[test]
    fn records_round_trip() {
        let dir = std::env::temp_dir().join(format!("gpucheck-record-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("r.jsonl");
        let _ = std::fs::remove_file(&file);
        let rec = Record {
            kind: Kind::Nvvm,
            crate_name: "k".into(),
            package: "k".into(),
            manifest_dir: "/m".into(),
            out_dir: "/o".into(),
            cuda_arch: Some("610".into()),
            added: vec!["-Cdebuginfo=2".into()],
            status: 0,
            ptx: Some("/o/k.ptx".into()),
        };
        append(&file, &rec);
        append(&file, &Record { status: 1, ptx: None, ..rec.clone() });
        let back = read(&file);
        assert_eq!(back.len(), 2);
        assert_eq!(back[0], rec);
        assert_eq!(back[1].status, 1);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
