//! CLI behaviour a user sees: help, bad input, exit statuses.

use gpucheck_tests::*;
use std::io::Write;

/// A kernel whose threads below 64 skip a barrier (barrier divergence at
/// every block of more than 64 threads), without line information.
const BARRIER_PTX: &str = ".version 7.0\n.target sm_70\n.address_size 64\n.entry k() {\n  .reg .pred %p<2>;\n  .reg .b32 %r<2>;\n  mov.u32 %r1, %tid.x;\n  setp.lt.u32 %p1, %r1, 64;\n  @%p1 bra $L1;\n  bar.sync 0;\n$L1:\n  ret;\n}\n";

/// A fresh scratch folder for one test, holding `k.ptx` with `text`.
fn ptx_dir(name: &str, text: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("gpucheck-cli-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("k.ptx"), text).unwrap();
    dir
}

#[test]
fn help_explains_every_flag() {
    let out = gpucheck(&["--help"], &repo());
    assert_eq!(out.status.code(), Some(0));
    let h = String::from_utf8_lossy(&out.stdout);
    for flag in [
        "--manifest-path",
        "--package",
        "--block",
        "--message-format",
        "--quiet",
        "ptx",
        "lints",
        "explain",
        "-A <LINT>",
        "-W <LINT>",
        "-D <LINT>",
        "-F <LINT>",
        "--coalescing-threshold",
        "--assume <NAME=VALUE>",
        "--all-accesses",
        "--color",
        "sarif",
    ] {
        assert!(h.contains(flag), "--help does not mention {flag}:\n{h}");
    }
}

#[test]
fn bad_ptx_names_file_line_column() {
    let dir = std::env::temp_dir().join(format!("gpucheck-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("bad.ptx");
    std::fs::write(&f, ".version 7.0\n.target sm_70\n.entry k() {\n  add.s32 %r1, %r2 %r3;\n}\n").unwrap();
    let out = gpucheck(&["ptx", f.to_str().unwrap()], &dir);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("bad.ptx:4:20: expected `,` or `;` after an operand, found `%r3`"), "{err}");
}

#[test]
fn missing_file_and_bad_block_are_errors() {
    let out = gpucheck(&["ptx", "/nonexistent/x.ptx"], &repo());
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot read `/nonexistent/x.ptx`"));
    let out = gpucheck(&["--block", "0,1", "ptx", "x.ptx"], &repo());
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("at least 1"));
}

#[test]
fn no_kernel_package_is_a_clear_error() {
    let out = gpucheck(&["--manifest-path", repo().join("Cargo.toml").to_str().unwrap()], &repo());
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no kernel package found"), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn ptx_findings_without_debug_info_point_into_the_ptx() {
    // a divergent barrier in hand-written PTX without .loc: reported at the PTX line
    let dir = ptx_dir("nodebug", BARRIER_PTX);
    let out = gpucheck(&["ptx", "k.ptx", "--message-format", "json"], &dir);
    assert_eq!(out.status.code(), Some(1));
    let msgs = json_lines(&out.stdout);
    let m = &msgs[0];
    assert_eq!(m["gpucheck"]["lint"], "barrier_divergence");
    assert_eq!(m["message"]["spans"][0]["file_name"], "k.ptx");
    assert_eq!(m["message"]["spans"][0]["line_start"], 10);
    assert!(m["message"]["children"].to_string().contains("threads 0..63 of each block skip this barrier"), "{}", m["message"]);
    // it holds for every value: it rests on nothing the kernel leaves open
    assert_eq!(m["gpucheck"]["assumes"], serde_json::json!([]), "{}", m["gpucheck"]);
    // the status line says how to get source lines
    let out = gpucheck(&["ptx", "k.ptx"], &dir);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no line information in the PTX: findings point at PTX lines; compile with `nvcc -lineinfo`"), "{err}");
}

#[test]
fn maxntid_is_the_block_when_nothing_else_is_given() {
    // `__launch_bounds__(N)` (`.maxntid N`): threads below 64 skip a barrier; with at most
    // 64 threads that is the whole block, with 128 the block splits at it
    let dir = std::env::temp_dir().join(format!("gpucheck-cli-maxntid-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let body = "{\n  .reg .pred %p<2>;\n  .reg .b32 %r<2>;\n  mov.u32 %r1, %tid.x;\n  setp.lt.u32 %p1, %r1, 64;\n  @%p1 bra $L1;\n  bar.sync 0;\n$L1:\n  ret;\n}\n";
    let run = |bounds: &str| {
        std::fs::write(dir.join("k.ptx"), format!(".version 7.0\n.target sm_70\n.address_size 64\n.entry k() {bounds}\n{body}")).unwrap();
        gpucheck(&["ptx", "k.ptx", "--message-format", "json"], &dir)
    };
    let out = run(".maxntid 64, 1, 1");
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(json_lines(&out.stdout).iter().all(|m| m["reason"] != "compiler-message"), "{}", String::from_utf8_lossy(&out.stdout));
    let out = run(".maxntid 128, 1, 1");
    assert_eq!(out.status.code(), Some(1));
    let msgs = json_lines(&out.stdout);
    assert_eq!(msgs[0]["gpucheck"]["lint"], "barrier_divergence");
    let notes = msgs[0]["message"]["children"].to_string();
    assert!(notes.contains("threads 0..63 of each block skip this barrier"), "{notes}");
    assert!(notes.contains("block shape 128×1×1 from .maxntid in the PTX (`__launch_bounds__`"), "{notes}");
    // without it, a block is assumed and said to be
    let out = run("");
    assert!(String::from_utf8_lossy(&out.stdout).contains("no block shape given for `k`: assumed 256×1×1"));
}

#[test]
fn a_closed_pipe_ends_the_output_quietly() {
    // `cargo gpucheck ptx f.ptx --message-format json | head -1`: the reader is gone
    let dir = ptx_dir("pipe", BARRIER_PTX);
    let mut child = std::process::Command::new(binary())
        .args(["gpucheck", "ptx", "k.ptx", "--message-format", "json"])
        .current_dir(&dir)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("panicked") && !err.contains("Broken pipe"), "{err}");
    assert_ne!(out.status.code(), Some(101), "{err}");
}

#[test]
fn ptx_that_ptxas_refuses_is_an_error_at_its_line() {
    let dir = std::env::temp_dir().join(format!("gpucheck-cli-refused-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let head = ".version 7.0\n.target sm_70\n.address_size 64\n";
    for (name, text, said) in [
        ("zero.ptx", ".entry k() .reqntid 0 {\n  ret;\n}\n", "zero.ptx:4:21: expected a positive thread count"),
        ("nolabel.ptx", ".entry k() {\n  bra $NOPE;\n  ret;\n}\n", "nolabel.ptx:5:3: expected a label defined in `k` as the branch target"),
        (
            "twice.ptx",
            ".entry k() {\n$L1:\n  bra $L1;\n$L1:\n  ret;\n}\n",
            "twice.ptx:7:1: expected a label not defined before in this scope of `k`",
        ),
    ] {
        std::fs::write(dir.join(name), format!("{head}{text}")).unwrap();
        for args in [vec!["ptx", name], vec!["confirm", "--ptx", name, "--block", "32"]] {
            let out = gpucheck(&args, &dir);
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
            assert!(err.contains(said), "{args:?}: {err}");
        }
    }
    // a label per scope (inline asm pasted twice) is fine
    let scoped = ".entry k() {\n{\nw:\n  bra w;\n}\n{\nw:\n  bra w;\n}\n  ret;\n}\n";
    std::fs::write(dir.join("scoped.ptx"), format!("{head}{scoped}")).unwrap();
    let out = gpucheck(&["ptx", "scoped.ptx"], &dir);
    assert_ne!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn confirm_refuses_shared_memory_no_block_could_have() {
    let dir = std::env::temp_dir().join(format!("gpucheck-cli-shared-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // 2^64-1 bytes (a capacity overflow), 4 GiB (an abort), 100 MB (5 GB of shadow), one byte over the limit
    for n in ["18446744073709551615", "4294967296", "100000000", "232449"] {
        let ptx = format!(
            ".version 7.0\n.target sm_70\n.address_size 64\n.entry k() {{\n  .shared .align 4 .b8 s[{n}];\n  .reg .b32 %r<3>;\n  mov.u32 %r1, %tid.x;\n  mov.u32 %r2, s;\n  st.shared.u32 [%r2], %r1;\n  ret;\n}}\n"
        );
        std::fs::write(dir.join("big.ptx"), ptx).unwrap();
        let out = gpucheck(&["confirm", "--ptx", "big.ptx", "--block", "32"], &dir);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{n}: {err}");
        assert!(
            err.contains(&format!("`k` declares {n} bytes of shared memory per block: a block has at most 232448 bytes")),
            "{n}: {err}"
        );
    }
}

#[test]
fn confirm_takes_a_cpp_kernel_by_its_source_name() {
    let dir = std::env::temp_dir().join(format!("gpucheck-cli-cpp-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("k.ptx"),
        ".version 7.0\n.target sm_70\n.address_size 64\n.visible .entry _Z9warp_tailPf(.param .u64 _Z9warp_tailPf_param_0) {\n  .reg .b32 %r<2>;\n  .reg .b64 %rd<4>;\n  ld.param.u64 %rd1, [_Z9warp_tailPf_param_0];\n  cvta.to.global.u64 %rd2, %rd1;\n  mov.u32 %r1, %tid.x;\n  mul.wide.u32 %rd3, %r1, 4;\n  add.s64 %rd2, %rd2, %rd3;\n  st.global.u32 [%rd2], %r1;\n  ret;\n}\n",
    )
    .unwrap();
    let out =
        gpucheck(&["confirm", "--ptx", "k.ptx", "--kernel", "warp_tail", "--block", "32", "--arg", "_Z9warp_tailPf_param_0=f32[32]"], &dir);
    let text = String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.contains(" confirmed, 0 failed"), "{text}");
    // a near miss is answered with the source's name
    let out = gpucheck(&["confirm", "--ptx", "k.ptx", "--kernel", "warp_tai", "--block", "32"], &dir);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("did you mean `warp_tail`? kernels: warp_tail"), "{err}");
}

#[test]
fn report_open_says_when_no_browser_opened_it() {
    let dir = ptx_dir("open", BARRIER_PTX);
    std::fs::create_dir_all(dir.join("nothing-on-path")).unwrap();
    let open = |browser: &str| {
        std::process::Command::new(binary())
            .args(["gpucheck", "report", "--ptx", "k.ptx", "-o", "rep", "--open", "-q"])
            .current_dir(&dir)
            .env("PATH", dir.join("nothing-on-path"))
            .env("BROWSER", browser)
            .output()
            .unwrap()
    };
    // a browser that fails (and no xdg-open or gio): said, exit 2, the report still written
    let out = open("/bin/false");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("the report is written, but no browser opened it"), "{err}");
    assert!(dir.join("rep/index.html").exists());
    let out = open("/bin/true");
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn allow_comments_in_a_ptx_files_sources_apply() {
    // `cargo gpucheck ptx` reads `// gpucheck: allow(…)` in the files the PTX's line information names
    let dir = std::env::temp_dir().join(format!("gpucheck-cli-allow-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cu = dir.join("k.cu");
    let ptx = |cu: &std::path::Path| {
        format!(
            ".version 7.0\n.target sm_70\n.address_size 64\n.file 1 \"{}\"\n.entry k() {{\n  .reg .pred %p<2>;\n  .reg .b32 %r<2>;\n  .loc 1 3 5\n  mov.u32 %r1, %tid.x;\n  setp.lt.u32 %p1, %r1, 64;\n  @%p1 bra $L1;\n  .loc 1 5 5\n  bar.sync 0;\n$L1:\n  ret;\n}}\n",
            cu.display()
        )
    };
    std::fs::write(dir.join("k.ptx"), ptx(&cu)).unwrap();
    let body = |comment: &str| {
        format!("__global__ void k() {{\n  int t = threadIdx.x;\n  if (t >= 64) {{\n    // the barrier\n    __syncthreads();{comment}\n  }}\n}}\n")
    };
    std::fs::write(&cu, body("")).unwrap();
    let out = gpucheck(&["ptx", "k.ptx"], &dir);
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    std::fs::write(&cu, body(" // gpucheck: allow(barrier_divergence)")).unwrap();
    let out = gpucheck(&["ptx", "k.ptx"], &dir);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    // a comment that suppresses nothing is said
    std::fs::write(&cu, body(" // gpucheck: allow(barrier_divergence, shared_bank_conflict)")).unwrap();
    let err = String::from_utf8_lossy(&gpucheck(&["ptx", "k.ptx"], &dir).stderr).to_string();
    assert!(err.contains("unused_gpucheck_allow") && err.contains("shared_bank_conflict"), "{err}");
}

#[test]
fn a_race_that_needs_a_sampled_value_is_a_warning_until_declared() {
    // `s[t / n] = t` behind `if (n < 1024)`: every thread writes element 0 for n ≥ 256, no two for n = 1
    let dir = std::env::temp_dir().join(format!("gpucheck-cli-declared-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("k.ptx"),
        ".version 7.0\n.target sm_80\n.address_size 64\n.visible .entry k(.param .u32 k_n) {\n  .reg .pred %p<2>; .reg .b32 %r<6>;\n  .shared .align 4 .b8 s[1024];\n  ld.param.u32 %r1, [k_n];\n  setp.ge.u32 %p1, %r1, 1024;\n  @%p1 bra $D;\n  mov.u32 %r2, %tid.x;\n  div.u32 %r3, %r2, %r1;\n  shl.b32 %r4, %r3, 2;\n  mov.u32 %r5, s;\n  add.s32 %r5, %r5, %r4;\n  st.shared.u32 [%r5], %r2;\n$D:\n  ret;\n}\n",
    )
    .unwrap();
    let run = |extra: &[&str]| {
        let mut args = vec!["ptx", "k.ptx", "--block", "256"];
        args.extend(extra);
        let out = gpucheck(&args, &dir);
        (out.status.code(), String::from_utf8_lossy(&out.stderr).to_string())
    };
    // sampled: a warning that says what it needs, what the kernel tests, and how to decide it;
    // the evaluator's sample (1024) fails the kernel's `n < 1024`: the witness is found again
    // with a value the test allows (512)
    let (code, err) = run(&[]);
    assert_eq!(code, Some(0), "{err}");
    assert!(err.contains("warning: write-after-write data race on shared memory"), "{err}");
    assert!(err.contains("found with `k_n` = 512 (a parameter)") && err.contains("the kernel tests `k_n < 1024`"), "{err}");
    assert!(err.contains("help: declare the value the kernel is launched with to decide it: `--assume k_n=VALUE`"), "{err}");
    // declared: no race for n = 1, an error for n = 512 (by name or by index)
    let (code, err) = run(&["--assume", "k_n=1"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(!err.contains("data race"), "{err}");
    for declared in ["k_n=512", "0=512"] {
        let (code, err) = run(&["--assume", declared]);
        assert_eq!(code, Some(1), "{err}");
        assert!(err.contains("error: write-after-write data race on shared memory") && !err.contains("found with"), "{err}");
    }
    let (code, err) = run(&["--assume", "k_n=many"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("`many` in `k_n=many` is not an integer"), "{err}");
}

#[test]
fn json_says_which_sampled_values_a_finding_rests_on() {
    // `s[t / n] = t` races at the sample n = 1024 (every thread writes element 0), not for n = 1
    let dir = std::env::temp_dir().join(format!("gpucheck-cli-assumes-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("k.ptx"),
        ".version 7.0\n.target sm_80\n.address_size 64\n.visible .entry k(.param .u32 k_n) {\n  .reg .b32 %r<6>;\n  .shared .align 4 .b8 s[1024];\n  ld.param.u32 %r1, [k_n];\n  mov.u32 %r2, %tid.x;\n  div.u32 %r3, %r2, %r1;\n  shl.b32 %r4, %r3, 2;\n  mov.u32 %r5, s;\n  add.s32 %r5, %r5, %r4;\n  st.shared.u32 [%r5], %r2;\n  ret;\n}\n",
    )
    .unwrap();
    let out = gpucheck(&["ptx", "k.ptx", "--block", "256", "--message-format", "json"], &dir);
    let msgs = json_lines(&out.stdout);
    let race = msgs.iter().find(|m| m["gpucheck"]["lint"] == "shared_memory_race").unwrap_or_else(|| panic!("{msgs:#?}"));
    assert_eq!(
        race["gpucheck"]["assumes"],
        serde_json::json!([{"name": "k_n", "kind": "parameter", "ptx_line": null, "sample": 1024, "alignment_only": false, "known": []}]),
        "{}",
        race["gpucheck"]
    );
    // the witness was replayed before the report: the run names its launch
    assert_eq!(
        race["gpucheck"]["replay"],
        serde_json::json!({"status": "reproduced", "launch": "block 0 (grid 1×1×1, block 256×1×1, `k_n` = 1024)", "other_partner": false}),
        "{}",
        race["gpucheck"]
    );
    let human = gpucheck(&["ptx", "k.ptx", "--block", "256"], &dir);
    let err = String::from_utf8_lossy(&human.stderr);
    assert!(err.contains("replayed 1 correctness finding: 1 reproduced"), "{err}");
    assert!(err.contains("= note: reproduced: a run of block 0"), "{err}");
    let off = gpucheck(&["ptx", "k.ptx", "--block", "256", "--message-format", "json", "--no-replay"], &dir);
    let msgs = json_lines(&off.stdout);
    let race = msgs.iter().find(|m| m["gpucheck"]["lint"] == "shared_memory_race").unwrap_or_else(|| panic!("{msgs:#?}"));
    assert!(race["gpucheck"].get("replay").is_none(), "{}", race["gpucheck"]);
}

#[test]
fn build_failure_shows_cargo_errors_and_exits_2() {
    // a kernel crate with a type error, on the pinned nightly
    let dir = scratch("gpucheck-test-broken");
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::write(
        dir.join("Cargo.toml"),
        "[workspace]\n\n[package]\nname = \"broken\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[package.metadata.gpucheck]\nblock = [64, 1, 1]\n",
    )
    .unwrap();
    std::fs::copy(repo().join("example-kernels/rust-toolchain.toml"), dir.join("rust-toolchain.toml")).unwrap();
    std::fs::write(
        dir.join("src/lib.rs"),
        "#![no_std]\n#![feature(abi_ptx)]\n#[panic_handler]\nfn p(_: &core::panic::PanicInfo) -> ! { loop {} }\n#[no_mangle]\npub unsafe extern \"ptx-kernel\" fn k(out: *mut u32) { let x: u32 = \"no\"; *out = x; }\n",
    )
    .unwrap();
    let out = gpucheck_shared(&[], &dir);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("mismatched types"), "cargo's error is not shown:\n{err}");
    assert!(err.contains("could not build kernel crate `broken`"), "{err}");
    // in JSON mode (an editor's check command) rustc's error is a cargo `compiler-message` on stdout
    let out = gpucheck_shared(&["--message-format", "json"], &dir);
    assert_eq!(out.status.code(), Some(2));
    let lines = json_lines(&out.stdout);
    let e = lines.iter().find(|m| m["reason"] == "compiler-message").expect("rustc's error forwarded");
    assert_eq!(e["message"]["level"], "error");
    assert!(e["message"]["message"].as_str().unwrap().contains("mismatched types"), "{e}");
    assert_eq!(e["message"]["spans"][0]["file_name"], "src/lib.rs");
    assert_eq!(e["target"]["name"], "broken");
    let last = lines.last().unwrap();
    assert_eq!((last["reason"].as_str(), last["success"].as_bool()), (Some("build-finished"), Some(false)));
    assert_eq!(lines.iter().filter(|m| m["reason"] == "build-finished").count(), 1, "only our own build-finished");
}

#[test]
fn lints_and_explain() {
    let out = gpucheck(&["lints"], &repo());
    let text = String::from_utf8_lossy(&out.stdout);
    for l in gpucheck_analysis::LINTS {
        assert!(text.contains(&format!("gpucheck::{}", l.name)), "{} missing from `lints`", l.name);
    }
    let out = gpucheck(&["explain", "gpucheck::shared_bank_conflict"], &repo());
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).contains("pad each row by one word"));
    let out = gpucheck(&["explain", "shared_bank_conflicts"], &repo());
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("did you mean `gpucheck::shared_bank_conflict`?"));
}

/// A kernel crate without a nightly toolchain file fails to build with
/// cargo's "`-Z` flag is only accepted on the nightly channel"; the error
/// then says what to do.
#[test]
fn a_build_failure_with_a_known_cause_gets_help() {
    // the toolchain running the tests, pinned in the crate: a stable one cannot -Zbuild-std
    let toolchain = std::env::var("RUSTUP_TOOLCHAIN").unwrap_or_else(|_| "stable".into());
    if toolchain.starts_with("nightly") {
        let _ = writeln!(std::io::stderr(), "a_build_failure_with_a_known_cause_gets_help: skipped, the tests run on a nightly toolchain");
        return;
    }
    let dir = scratch("gpucheck-test-stable");
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::write(
        dir.join("Cargo.toml"),
        "[workspace]\n\n[package]\nname = \"stable_kernels\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[package.metadata.gpucheck]\nblock = [64, 1, 1]\n",
    )
    .unwrap();
    std::fs::write(dir.join("rust-toolchain.toml"), format!("[toolchain]\nchannel = \"{toolchain}\"\n")).unwrap();
    std::fs::write(dir.join("src/lib.rs"), "#![no_std]\n").unwrap();
    let out = gpucheck(&["-q"], &dir);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("only accepted on the nightly channel"), "cargo's own error is shown: {err}");
    assert!(err.contains("help: kernel crates build with a nightly toolchain (-Zbuild-std=core): put a `rust-toolchain.toml`"), "{err}");
}

/// `cargo gpucheck new NAME` writes a kernel crate that builds, checks
/// clean and confirms as it is; it will not overwrite a folder or take a
/// name cargo would reject.
#[test]
fn new_writes_a_kernel_crate_that_checks_and_confirms() {
    let base = scratch("gpucheck-test-new");
    let _ = std::fs::remove_dir_all(&base);
    std::fs::create_dir_all(&base).unwrap();
    let out = gpucheck(&["new", "first-kernels"], &base);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let dir = base.join("first-kernels");
    for f in ["Cargo.toml", "rust-toolchain.toml", ".cargo/config.toml", "src/lib.rs"] {
        assert!(dir.join(f).is_file(), "{f} written");
    }
    assert!(std::fs::read_to_string(dir.join("Cargo.toml")).unwrap().contains("name = \"first-kernels\""));
    // share the level tests' target folder: core is built there already
    let target = kernel_target();
    let run = |args: &[&str]| {
        std::process::Command::new(binary()).arg("gpucheck").args(args).current_dir(&dir).env("CARGO_TARGET_DIR", &target).output().unwrap()
    };
    let out = run(&["--message-format", "json"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let msgs = json_lines(&out.stdout);
    assert!(msgs.iter().all(|m| m["reason"] != "compiler-message"), "the template checks clean: {msgs:?}");
    let out = run(&["confirm", "-q", "--message-format", "json"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let rows = json_lines(&out.stdout);
    let kernels: std::collections::BTreeSet<&str> = rows.iter().map(|r| r["kernel"].as_str().unwrap()).collect();
    assert_eq!(kernels.into_iter().collect::<Vec<_>>(), ["block_sum", "saxpy"]);
    assert!(rows.iter().filter(|r| r["space"] != "branch").all(|r| r["verdict"] == "confirmed"), "{rows:?}");
    // refusals
    let out = gpucheck(&["new", "first-kernels"], &base);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("already exists and is not empty"));
    let out = gpucheck(&["new", "1st"], &base);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("`1st` is not a valid package name"));
}

/// Small things a newcomer hit: `explain` takes groups and suggests by
/// substring, `-q` after `ptx`, an empty PTX file is a warning,
/// `--all-accesses` without JSON says it is ignored, a binary file's bytes
/// are escaped, a PTX file's summary does not call it a `lib`.
#[test]
fn first_hour_messages() {
    let dir = scratch("gpucheck-test-first-hour");
    std::fs::create_dir_all(&dir).unwrap();
    let out = gpucheck(&["explain", "perf"], &dir);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0));
    assert!(text.starts_with("gpucheck::perf is a group of 3 lints") && text.contains("gpucheck::shared_bank_conflict"), "{text}");
    let out = gpucheck(&["explain", "divergent"], &dir);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("did you mean `gpucheck::divergent_branch`?"));
    std::fs::write(dir.join("empty.ptx"), "").unwrap();
    let out = gpucheck(&["ptx", "-q", "empty.ptx", "--all-accesses"], &dir);
    let err = String::from_utf8_lossy(&out.stderr);
    // nothing at all could be checked: exit 2, with what to do
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("warning: no kernels or functions found in `empty.ptx`: nothing was checked; is it PTX"), "{err}");
    assert!(err.contains("error: nothing was checked: no kernel or device function in 1 PTX file"), "{err}");
    assert!(err.contains("warning: `--all-accesses` prints its records only with `--message-format json`; ignored"), "{err}");
    assert!(!err.contains("Checking"), "-q hides the status line: {err}");
    std::fs::write(dir.join("bin.ptx"), b".version 7.0\n.target sm_70\n\x01\x02\x7f junk").unwrap();
    let out = gpucheck(&["ptx", "bin.ptx"], &dir);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2));
    assert!(err.contains("found `\\u{1}") && err.contains("is this a binary file?") && !err.contains('\u{1}'), "{err}");
    std::fs::copy(repo().join("analysis/tests/nvvm/idioms.ptx"), dir.join("file.s")).unwrap();
    let out = gpucheck(&["ptx", "file.s"], &dir);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("error: could not check `file.s` (PTX) due to"), "{err}");
}

/// `--help` says what the tool finds: every analysis, not only branches.
#[test]
fn help_names_every_analysis() {
    let out = gpucheck(&["--help"], &repo());
    // (clap wraps the text: compare with single spaces)
    let text = String::from_utf8_lossy(&out.stdout).split_whitespace().collect::<Vec<_>>().join(" ");
    for what in ["uncoalesced global access", "bank conflict", "divergent branch", "barrier", "data race", "cargo gpucheck new"] {
        assert!(text.contains(what), "--help does not mention {what}:\n{text}");
    }
    // subcommands that take none of the check's options list only their own
    for (args, own) in [
        (&["new", "--help"][..], "--path"),
        (&["instrument", "-h"][..], "--arch"),
        (&["help", "lints"][..], "--markdown"),
        (&["explain", "--help"][..], "<NAME>"),
    ] {
        let out = gpucheck(args, &repo());
        let text = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(0), "{args:?}");
        assert!(text.contains(own) && text.contains(&format!("cargo gpucheck {}", args[0].replace("help", "lints"))), "{args:?}: {text}");
        for global in ["--block", "--message-format", "-W <LINT>", "--grid"] {
            assert!(!text.contains(global), "{args:?} lists {global}: {text}");
        }
    }
    // the check's own help still lists them
    let text = String::from_utf8_lossy(&gpucheck(&["ptx", "--help"], &repo()).stdout).to_string();
    assert!(text.contains("--block") && text.contains("-W <LINT>"), "{text}");
}

/// Nothing skipped in silence: a device function a kernel calls is analysed
/// in that call (its finding names the call); one no kernel calls has its
/// argument-computed address counted as not analysed, said in a human note
/// and in a `gpucheck-coverage` record whose categories add up; a pointer
/// read from a `.const` struct is analysed as global (its uncoalesced
/// store reported).
#[test]
fn coverage_is_reported_per_function() {
    let dir = scratch("coverage");
    std::fs::create_dir_all(&dir).unwrap();
    let ptx = r#".version 7.0
.target sm_80
.address_size 64
.const .align 8 .b8 params[16];
.func store_at(.param .b64 store_at_param_0, .param .b32 store_at_param_1)
{
  .reg .b64 %rd<4>; .reg .b32 %r<2>;
  ld.param.u64 %rd1, [store_at_param_0];
  ld.param.u32 %r1, [store_at_param_1];
  mul.wide.u32 %rd2, %r1, 64;
  add.s64 %rd3, %rd1, %rd2;
  st.u32 [%rd3], %r1;
  ret;
}
.func store_unused(.param .b64 store_unused_param_0, .param .b32 store_unused_param_1)
{
  .reg .b64 %rd<4>; .reg .b32 %r<2>;
  ld.param.u64 %rd1, [store_unused_param_0];
  ld.param.u32 %r1, [store_unused_param_1];
  mul.wide.u32 %rd2, %r1, 64;
  add.s64 %rd3, %rd1, %rd2;
  st.u32 [%rd3], %r1;
  ret;
}
.visible .entry k()
{
  .reg .b64 %rd<5>; .reg .b32 %r<2>;
  ld.const.u64 %rd1, [params+8];
  mov.u32 %r1, %tid.x;
  mul.wide.u32 %rd2, %r1, 64;
  add.s64 %rd3, %rd1, %rd2;
  st.u32 [%rd3], %r1;
  {
  .param .b64 param0;
  st.param.b64 [param0], %rd1;
  .param .b32 param1;
  st.param.b32 [param1], %r1;
  call.uni store_at, (param0, param1);
  }
  ret;
}
"#;
    let f = dir.join("cov.ptx");
    std::fs::write(&f, ptx).unwrap();
    let f = f.to_string_lossy().to_string();
    let human = gpucheck(&["ptx", &f], &dir);
    let err = String::from_utf8_lossy(&human.stderr);
    assert!(
        err.contains(
            "note: 1 of 10 memory instructions in 1 of 3 functions not analysed: 1 in a device function no kernel of the module calls"
        ),
        "{err}"
    );
    // the helper the kernel calls is analysed in that call: the thread index it is passed makes
    // its store 16 elements apart per lane, reported at its line with the call named
    assert!(err.contains("--> cov.ptx:12:3") && err.contains("= note: in this call from `k` at PTX line 38"), "{err}");
    assert!(err.contains("no block shape given for `k`") && !err.contains("no block shape given for `store_at`"), "{err}");
    let json = json_lines(&gpucheck(&["ptx", &f, "--message-format", "json", "--all-accesses"], &dir).stdout);
    let cov: Vec<&serde_json::Value> = json.iter().filter(|v| v["reason"] == "gpucheck-coverage").collect();
    assert_eq!(cov.len(), 3, "{json:?}");
    for c in &cov {
        let sum: u64 = ["predicted", "data_dependent", "other_space", "not_analysed"].iter().map(|k| c[k].as_u64().unwrap()).sum();
        assert_eq!(sum, c["memory_instructions"].as_u64().unwrap(), "{c}");
    }
    let k = cov.iter().find(|c| c["function"] == "k").unwrap();
    // the store through the .const pointer is predicted; ld.const and st.param are other spaces
    assert_eq!((k["predicted"].as_u64(), k["other_space"].as_u64(), k["not_analysed"].as_u64()), (Some(1), Some(3), Some(0)), "{k}");
    let s = cov.iter().find(|c| c["function"] == "store_at").unwrap();
    assert_eq!((s["predicted"].as_u64(), s["not_analysed"].as_u64(), s["call_contexts"].as_u64()), (Some(1), Some(0), Some(1)), "{s}");
    // a helper no kernel calls is analysed once for every caller: its argument-computed address is not
    let u = cov.iter().find(|c| c["function"] == "store_unused").unwrap();
    assert_eq!(u["call_contexts"], 0, "{u}");
    assert_eq!(u["not_analysed_sites"][0]["reason"], "no_caller", "{u}");
    assert_eq!(u["not_analysed_sites"][0]["ptx_line"], 22, "{u}");
    let found: Vec<&serde_json::Value> = json.iter().filter(|v| v["reason"] == "compiler-message").collect();
    assert!(found.iter().any(|m| m["gpucheck"]["lint"] == "uncoalesced_global_access"), "{json:?}");
}

#[test]
fn block_for_one_kernel_by_its_source_name() {
    // threads below 64 skip a barrier: a 64-thread block skips it whole, a 256-thread one splits
    let body = "{\n  .reg .pred %p<2>;\n  .reg .b32 %r<2>;\n  mov.u32 %r1, %tid.x;\n  setp.lt.u32 %p1, %r1, 64;\n  @%p1 bra $L1;\n  bar.sync 0;\n$L1:\n  ret;\n}\n";
    let dir = ptx_dir("kernel-block", &format!(".version 7.0\n.target sm_70\n.address_size 64\n.entry _Z4halfv() {body}.entry k() {body}"));
    // `half` (the C++ source name of `_Z4halfv`) gets 64 threads; `k` keeps the assumed 256
    let out = gpucheck(&["ptx", "k.ptx", "--block", "half=64", "--message-format", "json"], &dir);
    let msgs: Vec<serde_json::Value> = json_lines(&out.stdout).into_iter().filter(|m| m["reason"] == "compiler-message").collect();
    assert_eq!(msgs.len(), 1, "{msgs:?}");
    assert_eq!(msgs[0]["gpucheck"]["kernel"], "k", "{}", msgs[0]);
    // the note names the kernel as the source does, and how to give it a shape alone
    let out = gpucheck(&["ptx", "k.ptx", "--block", "half=64"], &dir);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no block shape given for `k`: assumed 256×1×1 (blockDim.x a multiple of 32); pass `--block k=X,Y,Z`"), "{err}");
    // a named shape wins over the unnamed one for its kernel only
    let out = gpucheck(&["ptx", "k.ptx", "--block", "64", "--block", "k=128", "--message-format", "json"], &dir);
    let msgs: Vec<serde_json::Value> = json_lines(&out.stdout).into_iter().filter(|m| m["reason"] == "compiler-message").collect();
    assert_eq!(msgs.len(), 1, "{msgs:?}");
    assert_eq!(msgs[0]["gpucheck"]["kernel"], "k", "{}", msgs[0]);
    // JSON names a C++ kernel as its source does, with the PTX symbol beside it
    let out = gpucheck(&["ptx", "k.ptx", "--block", "k=64", "--message-format", "json"], &dir);
    let msgs: Vec<serde_json::Value> = json_lines(&out.stdout).into_iter().filter(|m| m["reason"] == "compiler-message").collect();
    assert_eq!(msgs.len(), 1, "{msgs:?}");
    assert_eq!((&msgs[0]["gpucheck"]["kernel"], &msgs[0]["gpucheck"]["ptx_kernel"]), (&"half".into(), &"_Z4halfv".into()), "{}", msgs[0]);
    // a name no kernel has is said, with the nearest one
    let out = gpucheck(&["ptx", "k.ptx", "--block", "halff=64"], &dir);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("`--block halff=…` names no kernel that was checked; did you mean `half`?"), "{err}");
    // confirm launches the shape given for the kernel, and refuses an unknown name
    let out = gpucheck(&["confirm", "--ptx", "k.ptx", "--kernel", "half", "--block", "half=64"], &dir);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("Confirming half on the cpu engine: grid 1×1×1, block 64×1×1"), "{err}");
    let out = gpucheck(&["confirm", "--ptx", "k.ptx", "--block", "halff=64"], &dir);
    assert_ne!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no kernel `halff` in the PTX; did you mean `half`?"));
}

#[test]
fn confirm_stops_endless_loops_and_launches_too_long_to_run() {
    let head = ".version 7.0\n.target sm_70\n.address_size 64\n";
    let spin = "{\n  .reg .b32 %r<3>;\n  mov.u32 %r1, 0;\n$L1:\n  add.u32 %r1, %r1, 1;\n  bra $L1;\n}\n";
    let dir = ptx_dir("endless", &format!("{head}.entry spin() {spin}"));
    // an endless loop stops at the per-thread step budget, naming the line it was at
    let out = gpucheck(&["confirm", "--ptx", "k.ptx", "--block", "32", "--max-steps", "100000"], &dir);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("PTX line 9: a block did not finish within 100000 warp instructions (an endless loop around this line?)"),
        "{err}"
    );
    assert!(err.contains("raise it with --max-steps N"), "{err}");
    // a block that alone outlasts the time limit stops at it (with steps enough for hours:
    // a fast build would run out of the default's first)
    let out = gpucheck(&["confirm", "--ptx", "k.ptx", "--block", "32", "--time-limit", "1", "--max-steps", "1000000000000"], &dir);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("with 0 of 1 blocks run, a block still running at PTX line"), "{err}");
    // a grid whose first blocks say it would outlast the limit stops, with the estimate
    let count = "{\n  .reg .pred %p<2>;\n  .reg .b32 %r<3>;\n  mov.u32 %r1, 0;\n$L1:\n  add.u32 %r1, %r1, 1;\n  setp.lt.u32 %p1, %r1, 200;\n  @%p1 bra $L1;\n  ret;\n}\n";
    let dir = ptx_dir("too-long", &format!("{head}.entry count() {count}"));
    let out = gpucheck(&["confirm", "--ptx", "k.ptx", "--block", "1024", "--grid", "2000000", "--time-limit", "1"], &dir);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("blocks run: the whole launch would take about"), "{err}");
    assert!(err.contains("run a smaller --grid, or pass --time-limit 0"), "{err}");
}

#[test]
fn a_reqntid_no_block_can_have_is_said() {
    // ptxas accepts it; no launch can run it (a block has at most 1024 threads)
    let dir = ptx_dir("reqntid-too-big", &BARRIER_PTX.replace(".entry k()", ".entry k() .reqntid 1024, 1024, 64"));
    let out = gpucheck(&["ptx", "k.ptx"], &dir);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("`.reqntid 1024, 1024, 64` of kernel `k` asks for 67108864 threads per block, and a block has at most 1024"),
        "{err}"
    );
    let out = gpucheck(&["ptx", "k.ptx"], &ptx_dir("reqntid-ok", &BARRIER_PTX.replace(".entry k()", ".entry k() .reqntid 128")));
    assert!(!String::from_utf8_lossy(&out.stderr).contains("threads per block, and a block"));
}

#[test]
fn an_out_of_bounds_access_names_the_buffer_and_element() {
    let ptx = ".version 7.0\n.target sm_70\n.address_size 64\n.entry rd(.param .u64 rd_param_0)\n{\n  .reg .b32 %r<3>;\n  .reg .b64 %rd<5>;\n  .reg .f32 %f<2>;\n  ld.param.u64 %rd1, [rd_param_0];\n  cvta.to.global.u64 %rd2, %rd1;\n  mov.u32 %r1, %tid.x;\n  mul.wide.u32 %rd3, %r1, 4;\n  add.s64 %rd4, %rd2, %rd3;\n  ld.global.f32 %f1, [%rd4];\n  ret;\n}\n";
    let dir = ptx_dir("oob-buffer", ptx);
    let out = gpucheck(&["confirm", "--ptx", "k.ptx", "--block", "32", "--arg", "rd_param_0=f32[10]", "--message-format", "json"], &dir);
    let err = String::from_utf8_lossy(&out.stderr);
    // a failing row, not an error: the run stops at the access, which is compared alone
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("thread (10, 0, 0) of block (0, 0, 0) accesses element 10 of `rd_param_0` (10 elements given)"), "{err}");
    let recs = json_lines(&out.stdout);
    let row = recs.iter().find(|r| r["space"] == "bounds").unwrap_or_else(|| panic!("{recs:?}"));
    assert_eq!((row["verdict"].as_str(), row["observed"]["offset"].as_i64()), (Some("OUT OF BOUNDS"), Some(40)), "{row}");
    // one that only a later block reaches fails too (the analysis judges no global buffer)
    let later = ptx.replace("mov.u32 %r1, %tid.x;", "mov.u32 %r2, %ctaid.x;\n  mad.lo.u32 %r1, %r2, 32, %tid.x;");
    std::fs::write(dir.join("k.ptx"), later).unwrap();
    let out = gpucheck(
        &["confirm", "--ptx", "k.ptx", "--block", "32", "--grid", "2", "--arg", "rd_param_0=f32[32]", "--message-format", "json"],
        &dir,
    );
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    let recs = json_lines(&out.stdout);
    let row = recs.iter().find(|r| r["space"] == "bounds").unwrap_or_else(|| panic!("{recs:?}"));
    assert_eq!((row["verdict"].as_str(), row["observed"]["block"][0].as_u64()), (Some("OUT OF BOUNDS"), Some(1)), "{row}");
    // an address far from every buffer is still an error that names it
    let far = ptx.replace("mul.wide.u32 %rd3, %r1, 4;", "mul.wide.u32 %rd3, %r1, 1048576;");
    std::fs::write(dir.join("k.ptx"), far).unwrap();
    let out = gpucheck(&["confirm", "--ptx", "k.ptx", "--block", "32", "--arg", "rd_param_0=f32[10]"], &dir);
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn outside_a_project_or_with_a_broken_manifest_the_way_on_is_said() {
    let dir = std::env::temp_dir().join(format!("gpucheck-cli-no-project-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = gpucheck(&[], &dir);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("not in a Cargo project: check PTX files directly with `cargo gpucheck ptx FILE.ptx`, or start a kernel crate with `cargo gpucheck new NAME`"), "{err}");
    std::fs::write(dir.join("Cargo.toml"), "[package\nname = \"x\"\n").unwrap();
    let out = gpucheck(&[], &dir);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("unclosed table") && err.contains("`cargo gpucheck ptx FILE.ptx` checks PTX files without one"), "{err}");
}

#[test]
fn a_hint_quotes_a_path_with_spaces() {
    let dir = std::env::temp_dir().join(format!("gpucheck-cli-quote-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = gpucheck(&["new", "demo", "--path", "sub dir"], &dir);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("`cd 'sub dir' && cargo gpucheck`"), "{err}");
}

/// Dynamic shared memory: unchecked and said so without `--shared`; with
/// it, checked against that size, and `confirm` gives the launch those
/// bytes (without them it says how to).
#[test]
fn dynamic_shared_memory_is_checked_against_the_size_given() {
    let text = ".version 7.0\n.target sm_70\n.address_size 64\n.extern .shared .align 4 .b8 s[];\n.visible .entry k() {\n  .reg .b32 %r<2>;\n  .reg .b64 %rd<4>;\n  mov.u32 %r1, %tid.x;\n  mul.wide.u32 %rd1, %r1, 4;\n  mov.u64 %rd2, s;\n  add.s64 %rd3, %rd2, %rd1;\n  st.shared.u32 [%rd3+4], %r1;\n  ret;\n}\n";
    let dir = ptx_dir("dynamic-shared", text);
    let run = |args: &[&str]| {
        let out = gpucheck(args, &dir);
        (out.status.code(), String::from_utf8_lossy(&out.stderr).to_string())
    };
    let (code, err) = run(&["ptx", "k.ptx", "--block", "64"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        err.contains("dynamic shared memory (`s`) is not checked for out-of-bounds or uninitialised reads: pass `--shared BYTES`"),
        "{err}"
    );
    let (code, err) = run(&["ptx", "k.ptx", "--block", "64", "--shared", "256"]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("out-of-bounds shared memory write: thread 63 writes element 64 of `s`, which has 64"), "{err}");
    assert!(!err.contains("is not checked for"), "{err}");
    let (code, err) = run(&["ptx", "k.ptx", "--block", "64", "--shared", "260"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(!err.contains("out-of-bounds"), "{err}");
    // a run needs the bytes
    let (code, err) = run(&["confirm", "--ptx", "k.ptx", "--block", "64"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("the kernel's dynamic shared memory (`s`) has no bytes in this launch: pass `--shared BYTES`"), "{err}");
    let (code, err) = run(&["confirm", "--ptx", "k.ptx", "--block", "64", "--shared", "260"]);
    assert_eq!(code, Some(0), "{err}");
    // more than a block can have is refused
    let (code, err) = run(&["ptx", "k.ptx", "--shared", "1000000"]);
    assert_eq!(code, Some(2), "{err}");
}

/// A shared access that leaves its array where the analysis does not look
/// (the last iteration of a loop whose count is a parameter) is a failing
/// `OUT OF BOUNDS` row in `confirm`: nothing a run sees goes unsaid. With a
/// constant count, the last iteration is judged: predicted, and confirmed.
#[test]
fn confirm_says_out_of_bounds_shared_accesses_it_did_not_predict() {
    // for k in (0..n).step_by(128): s[t + k] on an array of 256 words, 256 threads: k = 128 leaves it for t >= 128
    let kernel = |bound: &str| {
        format!(".version 7.0\n.target sm_70\n.address_size 64\n.shared .align 4 .b8 s[1024];\n.shared .align 4 .b8 pad[1024];\n.visible .entry k(.param .u32 n) {{\n  .reg .pred %p<2>;\n  .reg .b32 %r<6>;\n  .reg .b64 %rd<5>;\n  ld.param.u32 %r5, [n];\n  mov.u32 %r1, %tid.x;\n  mov.u32 %r2, 0;\n$L:\n  add.u32 %r3, %r1, %r2;\n  mul.wide.u32 %rd1, %r3, 4;\n  mov.u64 %rd2, s;\n  add.s64 %rd3, %rd2, %rd1;\n  st.shared.u32 [%rd3], %r1;\n  add.u32 %r2, %r2, 128;\n  setp.lt.u32 %p1, %r2, {bound};\n  @%p1 bra $L;\n  ret;\n}}\n")
    };
    let dir = ptx_dir("confirm-bounds", &kernel("%r5"));
    let out = gpucheck(&["ptx", "k.ptx", "--block", "256", "--message-format", "json"], &dir);
    assert!(
        json_lines(&out.stdout).iter().all(|m| m["gpucheck"]["lint"] != "shared_out_of_bounds"),
        "not predicted (a loop whose count is a parameter: its first iteration only)"
    );
    let out = gpucheck(&["confirm", "--ptx", "k.ptx", "--block", "256", "--arg", "n=256", "--message-format", "json"], &dir);
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    let recs = json_lines(&out.stdout);
    let row = recs.iter().find(|r| r["space"] == "bounds").unwrap_or_else(|| panic!("{recs:?}"));
    assert_eq!(row["verdict"], "OUT OF BOUNDS", "{row}");
    assert_eq!(row["observed"]["thread"], serde_json::json!([128, 0, 0]), "{row}");
    // a constant count: its last iteration is judged
    let dir = ptx_dir("confirm-bounds-constant", &kernel("256"));
    let out = gpucheck(&["ptx", "k.ptx", "--block", "256", "--message-format", "json"], &dir);
    let msgs: Vec<String> = json_lines(&out.stdout)
        .iter()
        .filter(|m| m["gpucheck"]["lint"] == "shared_out_of_bounds")
        .map(|m| m["message"]["message"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        msgs,
        ["out-of-bounds shared memory write: thread 128 writes element 256 of `s`, which has 256, in iteration 2 of 2 of the loop"]
    );
    let out = gpucheck(&["confirm", "--ptx", "k.ptx", "--block", "256", "--arg", "n=0", "--message-format", "json"], &dir);
    let recs = json_lines(&out.stdout);
    let row = recs.iter().find(|r| r["space"] == "bounds").unwrap_or_else(|| panic!("{recs:?}"));
    assert_eq!(row["verdict"], "confirmed", "{row}");
}
