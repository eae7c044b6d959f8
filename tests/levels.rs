//! Lint levels end to end: Cargo.toml tables (workspace, package), command
//! line flags, the note saying where a level came from, unknown names.

use gpucheck_tests::*;
use std::path::Path;

/// A kernel workspace under target/ with the given Cargo.toml lint tables,
/// sharing one nvptx target dir with the other level tests.
fn kernel_ws(name: &str, workspace_lints: &str, package_lints: &str) -> std::path::PathBuf {
    let dir = scratch("gpucheck-test-levels").join(name);
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::write(
        dir.join("Cargo.toml"),
        format!(
            "[workspace]\n\n[workspace.metadata.gpucheck.lints]\n{workspace_lints}\n\n[package]\nname = \"{name}\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[package.metadata.gpucheck]\nblock = [128, 1, 1]\n\n[package.metadata.gpucheck.lints]\n{package_lints}\n"
        ),
    )
    .unwrap();
    std::fs::copy(repo().join("example-kernels/rust-toolchain.toml"), dir.join("rust-toolchain.toml")).unwrap();
    std::fs::write(
        dir.join("src/lib.rs"),
        r#"#![no_std]
#![feature(abi_ptx, stdarch_nvptx)]
use core::arch::nvptx::*;
#[panic_handler]
fn p(_: &core::panic::PanicInfo) -> ! { loop {} }
#[no_mangle]
pub unsafe extern "ptx-kernel" fn k(a: *const f32, out: *mut f32, n: usize) {
    let t = _thread_idx_x() as usize;
    if t % 2 == 0 {
        let mut acc = 0.0f32;
        let mut j = 0;
        while j < n { acc += *a.add(j); j += 1; }
        *out.add(t) = acc;
    }
    if t < 64 {
        _syncthreads();
    }
}
"#,
    )
    .unwrap();
    dir
}

fn run(dir: &Path, args: &[&str]) -> (Option<i32>, Vec<serde_json::Value>, String) {
    let target = kernel_target();
    let out = std::process::Command::new(binary())
        .arg("gpucheck")
        .args(["--message-format", "json", "-q"])
        .args(args)
        .current_dir(dir)
        .env("CARGO_TARGET_DIR", &target)
        .output()
        .unwrap();
    let msgs = json_lines(&out.stdout).into_iter().filter(|m| m["reason"] == "compiler-message").collect();
    (out.status.code(), msgs, String::from_utf8_lossy(&out.stderr).to_string())
}

fn level_and_note(msgs: &[serde_json::Value], lint: &str) -> Option<(String, String)> {
    msgs.iter().find(|m| m["gpucheck"]["lint"] == lint).map(|m| {
        let children = m["message"]["children"].as_array().unwrap();
        (m["message"]["level"].as_str().unwrap().to_string(), children.last().unwrap()["message"].as_str().unwrap().to_string())
    })
}

#[test]
fn command_line_over_package_over_workspace_over_default() {
    // workspace allows perf, package denies divergent_branch: the package wins
    let dir = kernel_ws("levels_a", "perf = \"allow\"\nbarrier_divergence = \"warn\"", "divergent_branch = \"deny\"");
    let (code, msgs, err) = run(&dir, &[]);
    assert_eq!(code, Some(1), "{err}");
    let (lvl, note) = level_and_note(&msgs, "divergent_branch").expect("divergent_branch finding");
    assert_eq!(lvl, "error");
    assert_eq!(note, "`divergent_branch` set in `[package.metadata.gpucheck.lints]` of Cargo.toml");
    let (lvl, note) = level_and_note(&msgs, "barrier_divergence").expect("barrier finding");
    assert_eq!(lvl, "warning");
    assert_eq!(note, "`barrier_divergence` set in `[workspace.metadata.gpucheck.lints]` of Cargo.toml");

    // the command line wins over both; the last flag wins
    let (code, msgs, _) = run(&dir, &["-D", "gpucheck::correctness", "-A", "divergent_branch", "-W", "barrier_divergence"]);
    assert_eq!(code, Some(0));
    assert!(level_and_note(&msgs, "divergent_branch").is_none());
    assert_eq!(
        level_and_note(&msgs, "barrier_divergence").unwrap(),
        ("warning".into(), "requested on the command line with `-W gpucheck::barrier_divergence`".into())
    );

    // a group flag names the group in the note
    let (_, msgs, _) = run(&dir, &["-Dperf"]);
    assert_eq!(level_and_note(&msgs, "divergent_branch").unwrap().1, "`-D gpucheck::divergent_branch` implied by `-D gpucheck::perf`");
}

#[test]
fn unknown_lint_names_warn_with_a_suggestion() {
    let dir = kernel_ws("levels_b", "", "divergent_branchs = \"deny\"");
    let (code, msgs, err) = run(&dir, &["-A", "barier_divergence"]);
    assert!(err.contains("warning: unknown lint: `divergent_branchs`; did you mean `gpucheck::divergent_branch`?"), "{err}");
    assert!(err.contains("warning: unknown lint: `barier_divergence`; did you mean `gpucheck::barrier_divergence`?"), "{err}");
    // defaults still apply
    assert_eq!(code, Some(1));
    assert_eq!(level_and_note(&msgs, "barrier_divergence").unwrap().1, "`#[deny(gpucheck::barrier_divergence)]` on by default");
}

/// `-D warnings` (the first thing anyone puts in CI) turns every warning
/// into an error and exits 1; `-A warnings` leaves only errors; neither
/// turns on pedantic lints, and neither does `-D all`.
#[test]
fn warnings_and_all_as_in_rustc_and_clippy() {
    let dir = kernel_ws("levels_c", "", "");
    let levels = |msgs: &[serde_json::Value]| -> Vec<(String, String)> {
        let mut v: Vec<(String, String)> = msgs
            .iter()
            .map(|m| (m["gpucheck"]["lint"].as_str().unwrap().to_string(), m["message"]["level"].as_str().unwrap().to_string()))
            .collect();
        v.sort();
        v
    };
    let (code, default, err) = run(&dir, &["-A", "correctness"]);
    assert_eq!(code, Some(0), "{err}");
    let warned: Vec<String> = levels(&default).into_iter().filter(|(_, l)| l == "warning").map(|(n, _)| n).collect();
    assert!(!warned.is_empty());
    let (code, msgs, err) = run(&dir, &["-A", "correctness", "-D", "warnings"]);
    assert_eq!(code, Some(1), "{err}");
    assert!(!err.contains("unknown lint"), "{err}");
    assert_eq!(levels(&msgs), warned.iter().map(|n| (n.clone(), "error".to_string())).collect::<Vec<_>>());
    let note = level_and_note(&msgs, "divergent_branch").unwrap().1;
    assert_eq!(note, "`#[warn(gpucheck::divergent_branch)]` on by default, and this warning is deny by `-D warnings`");
    // `-A warnings`: only the errors are left
    let (code, msgs, _) = run(&dir, &["-A", "warnings"]);
    assert_eq!(code, Some(1));
    assert!(!msgs.is_empty() && levels(&msgs).iter().all(|(_, l)| l == "error"), "{msgs:?}");
    // `-D all` is every lint that is not pedantic
    let (_, msgs, _) = run(&dir, &["-D", "all"]);
    assert!(
        levels(&msgs).iter().all(|(n, l)| l == "error"
            && !matches!(n.as_str(), "data_dependent_access" | "shared_memory_opportunity" | "misaligned_global_access")),
        "{msgs:?}"
    );
}

/// A level that is not one is an error before anything is built.
#[test]
fn a_bad_level_in_a_table_is_an_error() {
    let dir = kernel_ws("levels_d", "", "perf = \"deyn\"");
    let (code, msgs, err) = run(&dir, &[]);
    assert_eq!(code, Some(2), "{err}");
    assert!(msgs.is_empty());
    assert!(err.contains("error: `perf = \"deyn\"` in `[package.metadata.gpucheck.lints]` of Cargo.toml: expected \"allow\", \"warn\", \"deny\" or \"forbid\""), "{err}");
    assert!(!err.contains("Compiling"), "nothing is built: {err}");
}

/// `[package.metadata.gpucheck]` is checked like cargo's own tables: an
/// unknown key or a kernel table for no kernel is a warning naming the
/// closest, a value of the wrong type an error naming the file and key.
#[test]
fn the_gpucheck_table_is_validated() {
    let dir = kernel_ws("levels_e", "", "");
    let manifest = dir.join("Cargo.toml");
    let original = std::fs::read_to_string(&manifest).unwrap();
    let with = |extra: &str| {
        std::fs::write(&manifest, original.replace("block = [128, 1, 1]\n", &format!("block = [128, 1, 1]\n{extra}\n"))).unwrap();
        run(&dir, &[])
    };
    let (code, msgs, err) = with("blok = [32]\n[package.metadata.gpucheck.kernels.kk]\nblock = [64]");
    assert_eq!(code, Some(1), "{err}");
    assert!(!msgs.is_empty(), "the check still runs");
    assert!(err.contains("warning: unknown key `blok` in `[package.metadata.gpucheck]` of Cargo.toml; did you mean `block`?"), "{err}");
    assert!(
        err.contains("warning: `[package.metadata.gpucheck.kernels.kk]` in Cargo.toml names no kernel of the package; did you mean `k`?"),
        "{err}"
    );
    for (extra, message) in [
        ("kernels = 3", "`kernels = 3` in `[package.metadata.gpucheck]` of Cargo.toml: expected one table per kernel"),
        ("grid = [4, 1.5]", "`1.5` in `grid` is not a positive integer in `[package.metadata.gpucheck]` of Cargo.toml"),
        ("args = \"x\"", "`args = \"x\"` in `[package.metadata.gpucheck]` of Cargo.toml: expected a table"),
    ] {
        let (code, _, err) = with(extra);
        assert_eq!(code, Some(2), "{extra}: {err}");
        assert!(err.contains(message), "{extra}: {err}");
    }
    std::fs::write(&manifest, &original).unwrap();
}

/// `/* gpucheck: allow(…) */` block comments suppress like line comments.
#[test]
fn block_comment_allows() {
    let dir = kernel_ws("levels_f", "", "");
    let (_, before, _) = run(&dir, &[]);
    assert!(level_and_note(&before, "divergent_branch").is_some());
    let src = std::fs::read_to_string(dir.join("src/lib.rs")).unwrap();
    std::fs::write(dir.join("src/lib.rs"), src.replace("if t % 2 == 0 {", "if t % 2 == 0 { /* gpucheck: allow(divergent_branch) */"))
        .unwrap();
    let (_, after, err) = run(&dir, &[]);
    assert!(level_and_note(&after, "divergent_branch").is_none(), "{after:?} {err}");
    assert!(after.iter().all(|m| m["gpucheck"]["lint"] != "unused_gpucheck_allow"), "{after:?}");
}

/// `#[allow(gpucheck::…)]` and its kin on statements and kernels, as
/// clippy's: the innermost wins, `#[expect]` that meets nothing and an
/// unknown name are said, a forbidden lint stays, and the first finding
/// that can be allowed says how.
#[test]
fn lint_attributes_as_clippys() {
    let dir = kernel_ws("levels_g", "", "");
    let lib = dir.join("src/lib.rs");
    let original = std::fs::read_to_string(&lib).unwrap();
    let (_, before, _) = run(&dir, &[]);
    let branch = before.iter().find(|m| m["gpucheck"]["lint"] == "divergent_branch").expect("the twin without attributes warns");
    let helps: Vec<&str> = before
        .iter()
        .flat_map(|m| m["message"]["children"].as_array().unwrap().iter())
        .filter_map(|c| c["message"].as_str().filter(|t| t.starts_with("to allow it here")))
        .collect();
    assert_eq!(helps.len(), 1, "said once: {helps:?}");
    assert!(helps[0].contains("#![register_tool(gpucheck)]"), "{helps:?}");
    let _ = branch;
    let registered = original
        .replace("#![feature(abi_ptx, stdarch_nvptx)]", "#![feature(abi_ptx, stdarch_nvptx, register_tool)]\n#![register_tool(gpucheck)]");
    let with = |from: &str, to: &str, args: &[&str]| {
        std::fs::write(&lib, registered.replace(from, to)).unwrap();
        run(&dir, args)
    };
    // on the statement: that finding only
    let (_, msgs, err) = with("    if t % 2 == 0 {", "    #[allow(gpucheck::divergent_branch)]\n    if t % 2 == 0 {", &[]);
    assert!(level_and_note(&msgs, "divergent_branch").is_none(), "{msgs:?} {err}");
    assert!(level_and_note(&msgs, "barrier_divergence").is_some(), "{msgs:?}");
    assert!(msgs.iter().all(|m| m["gpucheck"]["lint"] != "unused_gpucheck_allow"), "{msgs:?}");
    // on the kernel, raising the level; a group allowed on the crate, the lint denied inside
    let (code, msgs, err) = with(
        "#[no_mangle]",
        "#[no_mangle]\n#[deny(gpucheck::divergent_branch)]\n#[expect(gpucheck::shared_bank_conflict, gpucheck::divergent_branchs)]",
        &[],
    );
    assert_eq!(code, Some(1), "{err}");
    let (level, note) = level_and_note(&msgs, "divergent_branch").unwrap();
    assert_eq!(level, "error");
    assert_eq!(note, "`#[deny(gpucheck::divergent_branch)]` at src/lib.rs:8:1");
    let unused: Vec<&str> = msgs
        .iter()
        .filter(|m| m["gpucheck"]["lint"] == "unused_gpucheck_allow")
        .map(|m| m["message"]["message"].as_str().unwrap())
        .collect();
    assert_eq!(
        unused,
        vec![
            "unfulfilled `#[expect(gpucheck::shared_bank_conflict)]`: no `shared_bank_conflict` finding here",
            "unknown lint `gpucheck::divergent_branchs`"
        ],
        "{msgs:?}"
    );
    // forbidden on the command line: the attribute cannot lower it
    let (_, msgs, _) =
        with("    if t % 2 == 0 {", "    #[allow(gpucheck::divergent_branch)]\n    if t % 2 == 0 {", &["-F", "divergent_branch"]);
    let (level, note) = level_and_note(&msgs, "divergent_branch").expect("still reported");
    assert_eq!(level, "error");
    assert!(note.contains("has no effect: the lint is forbidden"), "{note}");
    // without the tool registered the build fails, and the help says what to add
    let (code, _, err) = {
        std::fs::write(&lib, original.replace("    if t % 2 == 0 {", "    #[allow(gpucheck::divergent_branch)]\n    if t % 2 == 0 {"))
            .unwrap();
        run(&dir, &[])
    };
    assert_ne!(code, Some(0));
    assert!(err.contains("help: `#[allow(gpucheck::…)]` needs the tool registered"), "{err}");
    std::fs::write(&lib, &original).unwrap();
}

/// `-q` hides the kernel build's compiler warnings, not its errors (as
/// `cargo -q` would if it could).
#[test]
fn quiet_hides_the_kernel_builds_warnings_not_its_errors() {
    let dir = kernel_ws("levels_h", "", "");
    let lib = dir.join("src/lib.rs");
    let original = std::fs::read_to_string(&lib).unwrap();
    let text = |src: &str, args: &[&str]| {
        std::fs::write(&lib, src).unwrap();
        let out = std::process::Command::new(binary())
            .arg("gpucheck")
            .args(args)
            .current_dir(&dir)
            .env("CARGO_TARGET_DIR", kernel_target())
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stderr).to_string()
    };
    let warned = original.replace("let t = _thread_idx_x() as usize;", "let t = _thread_idx_x() as usize;\n    let unused_here = 1;");
    assert!(text(&warned, &[]).contains("unused variable: `unused_here`"), "the warning is shown without -q");
    let quiet = text(&format!("{warned}\n"), &["-q"]);
    assert!(!quiet.contains("unused variable"), "{quiet}");
    assert!(quiet.contains("divergent_branch"), "the check's own findings stay: {quiet}");
    let broken = text(&warned.replace("let unused_here = 1;", "let unused_here: u32 = 1.5;"), &["-q"]);
    assert!(broken.contains("mismatched types"), "{broken}");
    std::fs::write(&lib, &original).unwrap();
}

/// A Rust kernel without `#[no_mangle]` answers to its `fn` name, and its
/// parameters to their Rust names; an unknown argument lists them.
#[test]
fn a_kernel_without_no_mangle_answers_to_its_fn_name() {
    let dir = kernel_ws("levels_i", "", "");
    let lib = dir.join("src/lib.rs");
    let src = std::fs::read_to_string(&lib).unwrap();
    let extra = "\npub unsafe extern \"ptx-kernel\" fn unmangled(x: *mut f32, n: u32) {\n    let t = _thread_idx_x();\n    if t < n { *x.add(t as usize) = 1.0; }\n}\n";
    std::fs::write(&lib, format!("{src}{extra}")).unwrap();
    let target = kernel_target();
    let confirm = |args: &[&str]| {
        let out = std::process::Command::new(binary())
            .args(["gpucheck", "confirm", "-q", "--kernel", "unmangled"])
            .args(args)
            .current_dir(&dir)
            .env("CARGO_TARGET_DIR", &target)
            .output()
            .unwrap();
        (out.status.code(), String::from_utf8_lossy(&out.stderr).to_string() + &String::from_utf8_lossy(&out.stdout))
    };
    let (code, err) = confirm(&["--arg", "nn=1"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("argument `nn` names no parameter of the kernels to run; did you mean `n`? (parameters: levels_i::unmangled(x, n);"),
        "{err}"
    );
    let (code, err) = confirm(&["--arg", "n=100", "--arg", "x=f32[128]"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(err.contains("levels_i::unmangled: ") && err.contains(" confirmed"), "{err}");
}

/// A kernel crate without a kernel: its device functions are checked
/// on their own, and a warning says so and what a kernel is.
#[test]
fn a_crate_without_a_kernel_is_said() {
    let dir = kernel_ws("levels_j", "", "");
    let lib = dir.join("src/lib.rs");
    let src = std::fs::read_to_string(&lib).unwrap();
    std::fs::write(&lib, src.replace("#[no_mangle]\npub unsafe extern \"ptx-kernel\" fn k(", "#[inline(never)]\npub unsafe fn k("))
        .unwrap();
    let (_, msgs, err) = run(&dir, &[]);
    assert!(err.contains("warning: no kernel in `levels_j`: "), "{err}");
    assert!(err.contains("a Rust kernel is a `#[no_mangle] pub unsafe extern \"ptx-kernel\" fn`"), "{err}");
    assert!(msgs.iter().any(|m| m["gpucheck"]["lint"] == "divergent_branch"), "the device function is checked: {msgs:?}");
    std::fs::write(&lib, &src).unwrap();
    let (_, _, err) = run(&dir, &[]);
    assert!(!err.contains("no kernel in"), "{err}");
}

/// `shared_bytes` in a kernel's table is its launch's dynamic shared
/// memory: its `extern` shared arrays are checked against it, and
/// `confirm` gives the run those bytes.
#[test]
fn shared_bytes_in_cargo_toml_sizes_dynamic_shared_memory() {
    let dir = kernel_ws("levels_k", "", "");
    std::fs::write(
        dir.join("src/lib.rs"),
        r#"#![no_std]
#![feature(abi_ptx, stdarch_nvptx, asm_experimental_arch)]
use core::arch::nvptx::*;
#[panic_handler]
fn p(_: &core::panic::PanicInfo) -> ! { loop {} }
core::arch::global_asm!(".extern .shared .align 4 .b8 DYN[];");
#[no_mangle]
pub unsafe extern "ptx-kernel" fn dyn_halo(x: *const f32, out: *mut f32) {
    let s: *mut f32;
    core::arch::asm!("cvta.shared.u64 {p}, DYN;", p = out(reg64) s);
    let t = _thread_idx_x() as usize;
    *s.add(t) = *x.add(t);
    _syncthreads();
    *out.add(t) = *s.add(t) + *s.add(t + 1);
}
"#,
    )
    .unwrap();
    let manifest = dir.join("Cargo.toml");
    let original = std::fs::read_to_string(&manifest).unwrap();
    let with = |table: &str| std::fs::write(&manifest, format!("{original}\n{table}\n")).unwrap();
    // no size: said to be unchecked (on the status line, which -q hides)
    with("");
    let (_, msgs, _) = run(&dir, &[]);
    assert!(msgs.iter().all(|m| m["gpucheck"]["lint"] != "shared_out_of_bounds"), "{msgs:?}");
    let out =
        std::process::Command::new(binary()).arg("gpucheck").current_dir(&dir).env("CARGO_TARGET_DIR", kernel_target()).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("dynamic shared memory (`DYN`) is not checked for out-of-bounds"), "{err}");
    // 128 floats for 128 threads: the last one's halo is past the end
    with("[package.metadata.gpucheck.kernels.dyn_halo]\nshared_bytes = 512\ngrid = [1, 1, 1]\nargs = { x = \"f32[128]\", out = \"f32[128]\" }");
    let (code, msgs, err) = run(&dir, &[]);
    assert_eq!(code, Some(1), "{err}");
    let oob = msgs.iter().find(|m| m["gpucheck"]["lint"] == "shared_out_of_bounds").expect("the halo read");
    assert_eq!(oob["message"]["message"], "out-of-bounds shared memory read: thread 127 reads element 128 of `DYN`, which has 128");
    // the interpreter checks shared accesses against their array: the replay shows it
    assert!(oob["message"]["children"].to_string().contains("reproduced: a run of block 0"), "{oob}");
    // one more float: clean, and the run has the bytes
    with("[package.metadata.gpucheck.kernels.dyn_halo]\nshared_bytes = 516\ngrid = [1, 1, 1]\nargs = { x = \"f32[128]\", out = \"f32[128]\" }");
    let (code, msgs, err) = run(&dir, &[]);
    assert_eq!(code, Some(0), "{err}");
    assert!(msgs.iter().all(|m| m["gpucheck"]["lint"] != "shared_out_of_bounds"), "{msgs:?}");
    let out = std::process::Command::new(binary())
        .args(["gpucheck", "confirm", "-q"])
        .current_dir(&dir)
        .env("CARGO_TARGET_DIR", kernel_target())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    // a size no block has is an error naming the table
    with("[package.metadata.gpucheck.kernels.dyn_halo]\nshared_bytes = 0");
    let (code, _, err) = run(&dir, &[]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("`shared_bytes = 0`: a block has from 1 to 232448 bytes of shared memory"), "{err}");
    std::fs::write(&manifest, &original).unwrap();
}
