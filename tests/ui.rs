//! UI test: build the example kernels with the pinned nightly, run the real
//! binary on them, and require exactly the findings the `//~` marks name —
//! no missing one, no extra one — plus the numbers behind key findings.

use gpucheck_tests::*;
use std::sync::OnceLock;

struct Run {
    code: i32,
    messages: Vec<serde_json::Value>,
    finished: serde_json::Value,
}

fn run_json() -> &'static Run {
    static RUN: OnceLock<Run> = OnceLock::new();
    RUN.get_or_init(|| {
        let ek = repo().join("example-kernels");
        // pedantic lints are allow-by-default: enable them so their marks are checked too
        let out = gpucheck(&["--message-format", "json", "-q", "-W", "gpucheck::pedantic"], &ek);
        let stderr = String::from_utf8_lossy(&out.stderr);
        let lines = json_lines(&out.stdout);
        let finished = lines.last().cloned().unwrap_or_else(|| panic!("no output; stderr:\n{stderr}"));
        assert_eq!(finished["reason"], "build-finished", "stderr:\n{stderr}");
        let messages = lines.into_iter().filter(|v| v["reason"] == "compiler-message").collect();
        Run { code: out.status.code().unwrap_or(-1), messages, finished }
    })
}

fn find<'a>(kernel: &str, lint: &str) -> &'a serde_json::Value {
    run_json()
        .messages
        .iter()
        .find(|m| m["gpucheck"]["kernel"] == kernel && m["gpucheck"]["lint"] == lint)
        .unwrap_or_else(|| panic!("no {lint} finding for {kernel}"))
}

#[test]
fn findings_match_marks_exactly() {
    let r = run_json();
    let ek = repo().join("example-kernels");
    let expected = marks(&ek, &ek.join("src"));
    assert!(expected.len() >= 8, "the example kernels lost their marks");
    let mut got = Vec::new();
    for m in &r.messages {
        let code = m["message"]["code"]["code"].as_str().unwrap();
        let lint = code.strip_prefix("gpucheck::").expect("gpucheck:: code");
        assert_eq!(m["gpucheck"]["lint"], lint);
        got.push(mark_of(m));
    }
    assert_marks(expected, got);
    // error-level findings → exit 1, build-finished success false
    assert_eq!(r.code, 1);
    assert_eq!(r.finished["success"], false);
}

#[test]
fn divergent_branch_numbers() {
    let odd = &find("odd_even_branch", "divergent_branch")["gpucheck"];
    assert_eq!((odd["diverging_warps"].as_i64(), odd["warps_per_block"].as_i64()), (Some(8), Some(8)));
    // 16×16 block from per-kernel metadata: every warp holds two rows
    // (counted with a sampled `n`: a condition on its value, pedantic)
    let narrow = &find("narrow_block_bound", "conditional_divergent_branch");
    assert_eq!(narrow["gpucheck"]["block"], "[16, 16, 1]");
    assert_eq!(narrow["gpucheck"]["diverging_warps"], 8);
    // the lane-slots a split idles: half of every lane-slot of the loop around each side
    let share = odd["idle_share"].as_f64().expect("odd_even_branch's idle share");
    assert!((0.45..=0.55).contains(&share), "{odd}");
    // the interleaved reduction is warned, sequential addressing is not even pedantic-worth at default
    let inter = &find("reduce_modulo_guard", "divergent_branch")["gpucheck"];
    assert!(inter["idle_share"].as_f64().unwrap() >= 0.10, "{inter}");
    assert!(
        !run_json().messages.iter().any(|m| m["gpucheck"]["kernel"] == "reduce_halving" && m["gpucheck"]["lint"] == "divergent_branch"),
        "sequential addressing is not a divergent_branch"
    );
    let tri = &find("sum_triangle", "divergent_branch");
    assert!(tri["message"]["message"].as_str().unwrap().contains("different numbers of iterations"));
}

#[test]
fn barrier_divergence_names_the_branch_and_the_threads() {
    let b = &find("barrier_in_branch", "barrier_divergence")["message"];
    let notes: Vec<&str> = b["children"].as_array().unwrap().iter().map(|c| c["message"].as_str().unwrap()).collect();
    assert!(
        notes
            .iter()
            .any(|n| n
                .contains("the branch at src/barriers.rs:11:8 depends on threadIdx.x; threads 128..255 of each block skip this barrier")),
        "{notes:#?}"
    );
    let secondary: Vec<_> = b["spans"].as_array().unwrap().iter().filter(|s| s["is_primary"] == false).collect();
    assert_eq!(secondary.len(), 1);
    assert_eq!(secondary[0]["line_start"], 11);
    let scan = &find("scan_1b", "barrier_divergence")["message"]["children"];
    assert!(scan.to_string().contains("thread-dependent number of iterations"));
}

#[test]
fn human_output_is_rustc_style() {
    let ek = repo().join("example-kernels");
    let out = gpucheck(&["-q"], &ek);
    let err = String::from_utf8_lossy(&out.stderr);
    let expected = "error: barrier reached under thread-dependent control flow
  --> src/barriers.rs:12:9
   |
11 |     if t < 128 {
   |        ------- thread-dependent branch
12 |         _syncthreads(); //~ ERROR barrier_divergence
   |         ^^^^^^^^^^^^^^^
   |
   = note: the branch at src/barriers.rs:11:8 depends on threadIdx.x; threads 128..255 of each block skip this barrier
   = note: block shape 256×1×1 from [package.metadata.gpucheck]
   = help: move the barrier out of the conditional so that every thread of the block reaches it
   = note: reproduced: a run of block 0 (grid 1×1×1, block 256×1×1) shows it
   = help: to allow it here, put `#[allow(gpucheck::barrier_divergence)]` on the statement or the kernel's `fn` (the crate root needs `#![feature(register_tool)]` and `#![register_tool(gpucheck)]`), or a `// gpucheck: allow(barrier_divergence)` comment on the line
   = note: `#[deny(gpucheck::barrier_divergence)]` on by default
";
    assert!(err.contains(expected), "human output differs; got:\n{err}");
    assert!(
        err.contains(
            "error: could not check `example-kernels` (lib) due to 13 previous errors; 32 warnings emitted (47 PTX copies folded)"
        ),
        "{err}"
    );
    assert_eq!(out.status.code(), Some(1));
    // names are the source's: no PTX register in any message (a loop counter is named by
    // the line that updates it)
    let register = err.split('`').skip(1).step_by(2).find(|name| name.starts_with('%'));
    assert!(register.is_none(), "a PTX register named: {register:?}\n{err}");
    assert!(err.contains("counted with the loop counter updated at src/races.rs:"), "{err}");
}

#[test]
fn block_flag_overrides_metadata() {
    // with 32-thread blocks the 16-wide bound check still splits the one warp,
    // and the odd/even branch splits 1 of 1
    let ek = repo().join("example-kernels");
    let out = gpucheck(&["--message-format", "json", "-q", "--block", "32"], &ek);
    let msgs = json_lines(&out.stdout);
    let odd = msgs.iter().find(|m| m["gpucheck"]["kernel"] == "odd_even_branch").expect("odd_even_branch finding");
    assert_eq!(odd["gpucheck"]["warps_per_block"], 1);
    assert_eq!(odd["gpucheck"]["diverging_warps"], 1);
    assert!(odd["message"]["children"].to_string().contains("block shape 32×1×1 from --block"));
}

/// Every line of the JSON output is a message cargo_metadata (hence
/// rust-analyzer) understands, with the span fields editors need.
#[test]
fn json_lines_are_cargo_messages() {
    let ek = repo().join("example-kernels");
    let out = gpucheck(&["--message-format", "json", "-q", "-W", "pedantic"], &ek);
    let text = String::from_utf8_lossy(&out.stdout);
    let mut findings = 0;
    let mut finished = false;
    for line in text.lines() {
        let msg: cargo_metadata::Message = serde_json::from_str(line).unwrap_or_else(|e| panic!("not a cargo message: {e}: {line}"));
        match msg {
            cargo_metadata::Message::CompilerMessage(m) => {
                findings += 1;
                let d = &m.message;
                assert!(d.code.as_ref().is_some_and(|c| c.code.starts_with("gpucheck::")));
                let p = d.spans.iter().find(|s| s.is_primary).expect("primary span");
                assert!(p.file_name.starts_with("src/") && p.line_start > 0 && p.column_start > 0 && p.column_end > p.column_start);
                // byte offsets point at the same text as line/column
                let src = std::fs::read_to_string(ek.join(&p.file_name)).unwrap();
                let line = src.lines().nth(p.line_start - 1).unwrap();
                let by_col: String = line.chars().skip(p.column_start - 1).take(p.column_end - p.column_start).collect();
                assert_eq!(&src[p.byte_start as usize..p.byte_end as usize], by_col);
                assert!(d
                    .rendered
                    .as_ref()
                    .is_some_and(|r| r.contains(&format!("--> {}:{}:{}", p.file_name, p.line_start, p.column_start))));
                assert_eq!(m.target.name, "example_kernels");
            }
            cargo_metadata::Message::BuildFinished(b) => {
                finished = true;
                assert!(!b.success);
            }
            other => panic!("unexpected message {other:?}"),
        }
    }
    assert!(finished);
    // one message per mark (a line with two marks of a lint has two findings)
    assert_eq!(findings, marks(&ek, &ek.join("src")).len());
}

/// Snapshots of the human output of a few findings (insta).
#[test]
fn human_snapshots() {
    let ek = repo().join("example-kernels");
    let out = gpucheck(&["-q", "--color", "never"], &ek);
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    let blocks: Vec<&str> = err.split("\n\n").collect();
    let find =
        |needle: &str| blocks.iter().find(|b| b.contains(needle)).unwrap_or_else(|| panic!("no block with {needle}:\n{err}")).to_string();
    insta::assert_snapshot!("barrier_in_branch", find("src/barriers.rs:12:9"));
    insta::assert_snapshot!("odd_even_branch", find("src/branches.rs:8:8"));
    insta::assert_snapshot!("sum_triangle", find("src/seeds.rs:37:15"));
    insta::assert_snapshot!("stale_allow", find("unused `gpucheck: allow"));
}

#[test]
fn colour_is_controlled() {
    let ek = repo().join("example-kernels");
    let always = gpucheck(&["-q", "--color", "always"], &ek);
    assert!(String::from_utf8_lossy(&always.stderr).contains("\u{1b}["));
    let never =
        std::process::Command::new(binary()).args(["gpucheck", "-q"]).current_dir(&ek).env("CARGO_TERM_COLOR", "never").output().unwrap();
    assert!(!String::from_utf8_lossy(&never.stderr).contains("\u{1b}["));
    let env_always =
        std::process::Command::new(binary()).args(["gpucheck", "-q"]).current_dir(&ek).env("CARGO_TERM_COLOR", "always").output().unwrap();
    assert!(String::from_utf8_lossy(&env_always.stderr).contains("\u{1b}["));
}

#[test]
fn compiler_duplicates_are_folded_into_one_finding() {
    let m = find("twice_inlined", "divergent_branch");
    assert_eq!(m["gpucheck"]["duplicates"], 1);
    let notes = m["message"]["children"].to_string();
    assert!(notes.contains("also at 1 other place in the PTX"), "{notes}");
    assert!(notes.contains("inlined into src/branches.rs:"), "{notes}");
}

#[test]
fn forbid_overrules_allow_comments() {
    let ek = repo().join("example-kernels");
    let out = gpucheck(&["--message-format", "json", "-q", "-F", "divergent_branch"], &ek);
    let msgs = json_lines(&out.stdout);
    let accepted = msgs.iter().find(|m| m["gpucheck"]["kernel"] == "accepted_divergence").expect("the suppressed finding is back");
    assert_eq!(accepted["message"]["level"], "error");
    assert!(accepted["message"]["children"].to_string().contains("has no effect: the lint is forbidden"));
    // and the comment counts as used: no unused_gpucheck_allow for it
    assert!(!msgs.iter().any(|m| m["gpucheck"]["lint"] == "unused_gpucheck_allow" && m["message"]["spans"][0]["line_start"] != 109));
}

/// Races that exist only because threads skip a divergent barrier are
/// notes of that one `barrier_divergence` error, not errors of their own.
#[test]
fn races_from_a_skipped_barrier_are_its_notes() {
    let r = run_json();
    let of_kernel: Vec<&serde_json::Value> = r.messages.iter().filter(|m| m["gpucheck"]["kernel"] == "reduce_barrier_in_branch").collect();
    let lints: std::collections::BTreeSet<&str> = of_kernel.iter().map(|m| m["gpucheck"]["lint"].as_str().unwrap()).collect();
    assert_eq!(lints.into_iter().collect::<Vec<_>>(), ["barrier_divergence"], "{of_kernel:#?}");
    let b = find("reduce_barrier_in_branch", "barrier_divergence");
    assert!(b["gpucheck"]["races_from_skipping"].as_u64().unwrap() >= 1, "{b}");
    let notes = b["message"]["children"].to_string();
    assert!(notes.contains("between threads that reach this barrier and threads that skip it follow from it"), "{notes}");
    assert!(notes.contains("read-after-write: thread 0 reads element"), "{notes}");
}

/// An access finding underlines its one operand, not the statement: on
/// `*output.add(…) = *input.add(…)` the store and the load each get theirs.
#[test]
fn access_spans_are_the_operand() {
    let text = |kernel: &str, lint: &str| -> String {
        let s = &find(kernel, lint)["message"]["spans"][0];
        let line = s["text"][0]["text"].as_str().unwrap();
        let (a, b) = (s["column_start"].as_u64().unwrap() as usize, s["column_end"].as_u64().unwrap() as usize);
        line.chars().skip(a - 1).take(b - a).collect()
    };
    assert_eq!(text("transpose_naive", "uncoalesced_global_access"), "*output.add(x * height + y + j)");
    assert_eq!(text("transpose_naive", "misaligned_global_access"), "*input.add((y + j) * width + x)");
}

/// A barrier note names the threads of the iteration it describes: with a
/// loop counter in the condition, the first iteration's, and that later
/// iterations skip more.
#[test]
fn barrier_notes_name_the_iteration() {
    let notes = find("reduce_barrier_in_branch_loop", "barrier_divergence")["message"]["children"].to_string();
    assert!(
        notes.contains("in the first iteration, threads 128..255 of each block skip this barrier; in later iterations, more"),
        "{notes}"
    );
}

/// The fields of one array of structs read in one loop are one diagnostic:
/// the first field's access, the others as secondary spans.
#[test]
fn fields_of_one_record_array_are_one_finding() {
    let r = run_json();
    let of: Vec<&serde_json::Value> = r.messages.iter().filter(|m| m["gpucheck"]["kernel"] == "aos_norms").collect();
    assert_eq!(of.len(), 1, "{of:#?}");
    let g = &of[0]["gpucheck"];
    // vx, vy, vz of a 28-byte body: 12 bytes used of each 28, 28 sectors per warp where 12 would do
    assert_eq!((g["fields"].as_u64(), g["record_bytes"].as_u64(), g["accesses"].as_u64()), (Some(3), Some(28), Some(3)), "{g}");
    assert_eq!(
        (g["group_sectors"].as_u64(), g["group_ideal_sectors"].as_u64(), g["group_bytes_used"].as_u64()),
        (Some(28), Some(12), Some(384)),
        "{g}"
    );
    let spans = of[0]["message"]["spans"].as_array().unwrap();
    let labels: Vec<&str> = spans.iter().map(|s| s["label"].as_str().unwrap_or("")).collect();
    assert_eq!(labels, ["the field at byte 12", "the field at byte 16", "the field at byte 20"]);
}

/// A load that is not inlined says nothing about inlining (a DWARF range
/// the instruction was only scheduled into is not a frame of it).
#[test]
fn no_inline_note_on_a_load_that_is_not_inlined() {
    let children = find("transpose_naive", "misaligned_global_access")["message"]["children"].to_string();
    assert!(!children.contains("inlined into"), "{children}");
}

/// A helper kept as a call (`#[inline(never)]`) is analysed in its
/// kernel's call: the thread index it is passed makes its read 64 elements
/// apart per lane, reported at the helper's line with the call named; the
/// twin helper passed the same index to read `p[i]` is clean.
#[test]
fn callee_findings_name_their_call() {
    let m = find("helper_strided", "uncoalesced_global_access");
    // the helper's read and the kernel's call, found in the source
    let src = std::fs::read_to_string(repo().join("example-kernels/src/memory.rs")).unwrap();
    let line_of = |text: &str| src.lines().position(|l| l.contains(text)).map(|k| k as u64 + 1).unwrap();
    let (read, call) = (line_of("*p.add(i * 64)"), line_of("load_row_start(a, t)"));
    let span = &m["message"]["spans"][0];
    assert_eq!((span["file_name"].as_str(), span["line_start"].as_u64()), (Some("src/memory.rs"), Some(read)), "{m}");
    assert_eq!(m["gpucheck"]["sectors_per_request"], 32, "{m}");
    let children = m["message"]["children"].to_string();
    assert!(children.contains(&format!("in this call from `helper_strided` at src/memory.rs:{call}:19")), "{children}");
    assert!(!run_json().messages.iter().any(|m| m["gpucheck"]["kernel"] == "helper_contiguous"));
}
