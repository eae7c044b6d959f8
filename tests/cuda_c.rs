//! CUDA C fixtures (tests/fixtures/cuda/*.cu), compiled by the test with
//! clang-19 for sm_80 at -O2 with line tables, as a user's nvcc/clang PTX
//! would be: `cargo gpucheck ptx` must report exactly the findings their
//! `//~` marks name, and `confirm` must confirm every kernel's predictions
//! on the CPU engine.
//!
//! Each fixture says how to check and run it in header comments:
//! `// gpucheck: FLAGS` (flags for `ptx` and `confirm`, e.g. `--block 256`)
//! and `// confirm KERNEL: FLAGS` (grid and arguments, one line per kernel).
//!
//! clang-19 comes from `GPUCHECK_CLANG` or PATH, the CUDA folder for its
//! `--cuda-path` from `GPUCHECK_CUDA_PATH` or target/cuda-tools/root (both
//! installed by `.ci/setup`). Without them the tests print one line saying
//! they were skipped, unless `GPUCHECK_REQUIRE_CUDA_C=1` (set by CI) makes
//! that a failure.

use gpucheck_tests::*;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

struct Toolchain {
    clang: PathBuf,
    cuda: PathBuf,
}

fn toolchain() -> Option<&'static Toolchain> {
    static TC: OnceLock<Option<Toolchain>> = OnceLock::new();
    TC.get_or_init(|| {
        let clang = std::env::var_os("GPUCHECK_CLANG").map(PathBuf::from).unwrap_or_else(|| PathBuf::from("clang-19"));
        let cuda = std::env::var_os("GPUCHECK_CUDA_PATH").map(PathBuf::from).unwrap_or_else(|| repo().join("target/cuda-tools/root"));
        let has_clang = Command::new(&clang).arg("--version").output().is_ok_and(|o| o.status.success());
        let has_cuda = cuda.join("include/cuda_runtime.h").exists();
        if has_clang && has_cuda {
            return Some(Toolchain { clang, cuda });
        }
        let why = match (has_clang, has_cuda) {
            (false, _) => format!("`{}` not found (install clang-19, or set GPUCHECK_CLANG)", clang.display()),
            _ => format!("no CUDA headers in `{}` (run `bash .ci/setup`, or set GPUCHECK_CUDA_PATH)", cuda.display()),
        };
        assert!(std::env::var("GPUCHECK_REQUIRE_CUDA_C").is_err(), "GPUCHECK_REQUIRE_CUDA_C is set but {why}");
        None
    })
    .as_ref()
    .or_else(|| {
        // written past the test harness's capture, so that it shows
        let test = std::thread::current().name().unwrap_or("a CUDA C test").to_string();
        let _ = writeln!(
            std::io::stderr(),
            "{test}: the CUDA C fixtures are skipped: clang-19 or the CUDA headers are missing (run `bash .ci/setup`)"
        );
        None
    })
}

struct Fixture {
    cu: PathBuf,
    ptx: PathBuf,
    flags: Vec<String>,
    /// (kernel, flags) for `confirm`
    runs: Vec<(String, Vec<String>)>,
}

fn words(s: &str) -> Vec<String> {
    s.split_whitespace().map(str::to_string).collect()
}

/// Every fixture, compiled once per test process.
fn fixtures(tc: &Toolchain) -> &'static [Fixture] {
    static FX: OnceLock<Vec<Fixture>> = OnceLock::new();
    FX.get_or_init(|| {
        let dir = repo().join("tests/fixtures/cuda");
        let out = scratch("gpucheck-test-cuda-c");
        std::fs::create_dir_all(&out).unwrap();
        let mut cus: Vec<PathBuf> =
            std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).filter(|p| p.extension().is_some_and(|x| x == "cu")).collect();
        cus.sort();
        cus.into_iter()
            .map(|cu| {
                let ptx = out.join(cu.file_stem().unwrap()).with_extension("ptx");
                let res = Command::new(&tc.clang)
                    .arg(format!("--cuda-path={}", tc.cuda.display()))
                    .args(["--cuda-device-only", "--cuda-gpu-arch=sm_80", "-O2", "-gline-tables-only", "-Wno-unknown-cuda-version", "-S"])
                    .arg(&cu)
                    .arg("-o")
                    .arg(&ptx)
                    .output()
                    .expect("running clang");
                assert!(res.status.success(), "clang {}: {}", cu.display(), String::from_utf8_lossy(&res.stderr));
                let text = std::fs::read_to_string(&cu).unwrap();
                let mut flags = vec![];
                let mut runs = vec![];
                for line in text.lines() {
                    if let Some(f) = line.strip_prefix("// gpucheck: ") {
                        flags = words(f);
                    } else if let Some((k, f)) = line.strip_prefix("// confirm ").and_then(|l| l.split_once(": ")) {
                        runs.push((k.to_string(), words(f)));
                    }
                }
                assert!(!runs.is_empty(), "{}: no `// confirm KERNEL: FLAGS` line", cu.display());
                Fixture { cu, ptx, flags, runs }
            })
            .collect()
    })
}

fn run(args: &[String]) -> std::process::Output {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    gpucheck(&args, &repo())
}

/// The JSON records `cargo gpucheck ptx` prints for one fixture (by file
/// stem) with the fixture's flags and `extra` ones.
fn fixture_records(tc: &Toolchain, stem: &str, extra: &str) -> Vec<serde_json::Value> {
    let f = fixtures(tc).iter().find(|f| f.cu.file_stem().unwrap() == stem).unwrap_or_else(|| panic!("the fixture {stem}.cu"));
    let mut args = words("ptx --message-format json");
    args.insert(1, f.ptx.display().to_string());
    args.extend(f.flags.iter().cloned());
    args.extend(words(extra));
    json_lines(&run(&args).stdout)
}

#[test]
fn cuda_c_findings_match_marks_exactly() {
    let Some(tc) = toolchain() else { return };
    let fx = fixtures(tc);
    assert!(fx.len() >= 4, "the CUDA C fixtures are missing");
    let base = repo();
    let expected = marks_in(&base, &base.join("tests/fixtures/cuda"), "cu");
    let mut got = Vec::new();
    for f in fx {
        let mut args = words("ptx --message-format json -W gpucheck::pedantic");
        args.insert(1, f.ptx.display().to_string());
        args.extend(f.flags.iter().cloned());
        let out = run(&args);
        assert!(out.status.code().is_some_and(|c| c <= 1), "{}: {}", f.cu.display(), String::from_utf8_lossy(&out.stderr));
        for m in json_lines(&out.stdout).iter().filter(|m| m["reason"] == "compiler-message") {
            got.push(mark_of(m));
        }
    }
    assert_marks(expected, got);
}

/// Verdicts that agree with the prediction (a sampled branch is `observed`:
/// its split was counted with other values than the run's). Anything else
/// (a mismatch, a race, barrier divergence) fails.
const AGREE: [&str; 11] = [
    "confirmed",
    "confirmed (stride 1)",
    "confirmed (misaligned rows)",
    "confirmed (later iterations)",
    "within bound",
    "observed",
    "benign race (same value)",
    "benign race (the read value is discarded)",
    "CAS retry (the load only seeds the compare-and-swap)",
    // a finding found with a parameter's sample the run gives another value: not shown, as predicted
    "condition not met",
    // an uninitialised read past block 0 (`early_exit`'s last block), which the analysis does not judge
    "seen in a later block (the analysis judges block 0)",
];

#[test]
fn cuda_c_predictions_are_confirmed() {
    let Some(tc) = toolchain() else { return };
    let mut rows = 0;
    for f in fixtures(tc) {
        for (kernel, flags) in &f.runs {
            let mut args = words("confirm --message-format json --ptx");
            args.push(f.ptx.display().to_string());
            args.extend(["--kernel".into(), kernel.clone()]);
            args.extend(f.flags.iter().cloned());
            args.extend(flags.iter().cloned());
            let out = run(&args);
            let err = String::from_utf8_lossy(&out.stderr);
            let recs: Vec<_> = json_lines(&out.stdout).into_iter().filter(|r| r["reason"] == "gpucheck-confirm").collect();
            // exit 1 only for the races and barrier divergence the analysis predicted and the run saw
            let seen_races = recs.iter().any(|r| ["RACE", "BARRIER DIVERGENCE"].contains(&r["verdict"].as_str().unwrap_or("")));
            assert_eq!(out.status.code(), Some(seen_races as i32), "{} {kernel}: {err}", f.cu.display());
            assert!(recs.iter().any(|r| r["verdict"] == "confirmed"), "{kernel}: nothing confirmed: {recs:#?}");
            for r in &recs {
                assert_eq!(r["kernel"], kernel.as_str());
                let v = r["verdict"].as_str().unwrap_or("");
                // a copy the run did not reach (an unrolled loop's remainder) is fine when
                // another copy of the same line was judged
                // a race the analysis predicted, seen by the run, agrees too
                // (the run's shadow names one partner per access: a predicted pair whose
                // access raced with another one is shown as such)
                let judged = |r: &serde_json::Value| {
                    AGREE.contains(&r["verdict"].as_str().unwrap_or(""))
                        || (["RACE", "race seen with another partner"].contains(&r["verdict"].as_str().unwrap_or(""))
                            && r["predicted"]["race"] == true)
                        || (r["verdict"] == "BARRIER DIVERGENCE" && r["predicted"]["divergent"] == true)
                };
                assert!(judged(r) || (v == "not executed" && recs.iter().any(|q| q["line"] == r["line"] && judged(q))), "{kernel}: {r}");
                // every row points at the fixture's source line
                assert!(Path::new(r["file"].as_str().unwrap_or("")).ends_with(f.cu.strip_prefix(repo()).unwrap()), "{r}");
            }
            rows += recs.len();
        }
    }
    assert!(rows >= 30, "only {rows} confirm rows");
}

/// The twins' numbers: the group of a packed record is ideal, the 3 of 7
/// fields are named, the 8-outputs-per-thread store costs 8× its ideal,
/// the column reduction's stride comes from `strides[0]`, a helper two
/// calls deep names its calls and a helper passed shared memory conflicts.
#[test]
fn cuda_c_twins_carry_their_numbers() {
    let Some(tc) = toolchain() else { return };
    let fx = fixtures(tc);
    let findings = |name: &str| -> Vec<serde_json::Value> {
        let f = fx.iter().find(|f| f.cu.file_stem().unwrap() == name).unwrap();
        let mut args = words("ptx --message-format json -W gpucheck::pedantic");
        args.insert(1, f.ptx.display().to_string());
        args.extend(f.flags.iter().cloned());
        json_lines(&run(&args).stdout).into_iter().filter(|m| m["reason"] == "compiler-message").collect()
    };
    let metric = |m: &serde_json::Value, k: &str| m["gpucheck"][k].clone();
    let pr = findings("packed_records");
    assert_eq!(pr.len(), 1, "{pr:#?}");
    assert_eq!(pr[0]["gpucheck"]["kernel"], "body_norms");
    let text = pr[0]["message"]["rendered"].as_str().unwrap();
    assert!(text.contains("3 fields of each 28-byte record"), "{text}");
    let pairs = findings("pairs");
    let eight = pairs.iter().find(|m| m["gpucheck"]["kernel"] == "eight_per_thread").expect("eight_per_thread warned");
    assert_eq!((metric(eight, "sectors_per_request"), metric(eight, "ideal_sectors_per_request")), (32.into(), 4.into()), "{eight:#}");
    let red = findings("reductions");
    let cols = red.iter().find(|m| m["gpucheck"]["lint"] == "stride_dependent_access").expect("reduce_cols reported");
    assert_eq!(cols["gpucheck"]["kernel"], "reduce_cols");
    let text = cols["message"]["rendered"].as_str().unwrap();
    assert!(text.contains("when the stride read from memory is 1"), "{text}");
    assert!(!red.iter().any(|m| m["gpucheck"]["kernel"] == "reduce_rows" && m["gpucheck"]["lint"] == "stride_dependent_access"));
    // helpers kept as calls: reported at the helper's line, the call (demangled) named
    let calls = findings("calls");
    let inner = calls.iter().find(|m| m["gpucheck"]["kernel"] == "two_levels").expect("the two-level chain warned");
    let text = inner["message"]["rendered"].as_str().unwrap();
    assert!(
        text.contains(
            "in this call from `outer(float const*, unsigned int)` at tests/fixtures/cuda/calls.cu:45:12 (called from kernel `two_levels`)"
        ),
        "{text}"
    );
    assert_eq!(metric(inner, "sectors_per_request"), serde_json::json!(8), "{inner:#}");
    let shared = calls.iter().find(|m| m["gpucheck"]["kernel"] == "column_of_shared").expect("the shared-memory call warned");
    assert_eq!(
        (shared["gpucheck"]["lint"].as_str(), metric(shared, "conflict_degree")),
        (Some("shared_bank_conflict"), serde_json::json!(32)),
        "{shared:#}"
    );
}

/// Item 8 of the coverage issue: `worst` bounds every block. A boundary
/// guard masks the first lane of each row in block 0 only; an interior
/// block's `inp[x - 1]` and `inp[x + 1]` touch 5 sectors, and that is the
/// typical warp (the runs in `cuda_c_predictions_are_confirmed` observe it).
#[test]
fn cuda_c_worst_case_covers_interior_blocks() {
    let Some(tc) = toolchain() else { return };
    let recs: Vec<_> = fixture_records(tc, "stencils", "--all-accesses").into_iter().filter(|r| r["reason"] == "gpucheck-access").collect();
    let at = |kernel: &str, line: u64, col: u64| {
        let r = recs
            .iter()
            .find(|r| r["kernel"] == kernel && r["line"] == line && r["column"] == col)
            .unwrap_or_else(|| panic!("{kernel} {line}:{col}: {recs:#?}"));
        (r["sectors_per_request"].as_u64(), r["worst_sectors_per_request"].as_u64(), r["misaligned_sectors_per_request"].as_u64())
    };
    // the neighbours one element off: 5 in an interior block (block 0 alone gives 4)
    assert_eq!(at("stencil_1d", 13, 18), (Some(5), Some(5), None));
    assert_eq!(at("stencil_1d", 13, 47), (Some(5), Some(5), None));
    assert_eq!(at("stencil_2d", 21, 22), (Some(5), Some(5), None));
    assert_eq!(at("stencil_2d", 22, 23), (Some(5), Some(5), None));
    // the rows above and below: aligned rows 4, misaligned 5
    assert_eq!(at("stencil_2d", 23, 20), (Some(4), Some(4), Some(5)));
}

/// Coverage (issue 13): the address a probing loop over loaded keys ends
/// on is data-dependent (before, it was evaluated as the loop's first
/// value, and a false race followed); a value one side of an `if` passes
/// through a loop to the join is evaluated per thread.
#[test]
fn cuda_c_values_leaving_loops_are_classified() {
    let Some(tc) = toolchain() else { return };
    let recs = fixture_records(tc, "coverage", "--all-accesses");
    let coverage =
        |k: &str| recs.iter().find(|r| r["reason"] == "gpucheck-coverage" && r["function"] == k).cloned().expect("a coverage record");
    let (probe, side) = (coverage("probe"), coverage("side_loop"));
    assert_eq!((probe["not_analysed"].as_u64(), probe["data_dependent"].as_u64()), (Some(0), Some(1)), "{probe:#}");
    assert_eq!((side["not_analysed"].as_u64(), side["data_dependent"].as_u64()), (Some(0), Some(0)), "{side:#}");
    let store = |k: &str, line: u64| {
        recs.iter().find(|r| r["reason"] == "gpucheck-access" && r["kernel"] == k && r["line"] == line).cloned().expect("an access record")
    };
    assert_eq!(store("probe", 14)["predictable"], false);
    let join = store("side_loop", 27);
    assert_eq!((join["predictable"].as_bool(), join["sectors_per_request"].as_u64()), (Some(true), Some(4)), "{join:#}");
    assert!(!recs.iter().any(|r| r["gpucheck"]["lint"] == "global_memory_race"), "no race: every thread stores its own element");
}

/// Early exits that split a block only for some sizes (issue 26, pattern
/// 8): the condition solved for the parameter, a warning; the kernel's own
/// `__trap()` precondition rules it out; a fixed split stays an error.
#[test]
fn cuda_c_early_exits_state_the_sizes_that_split() {
    let Some(tc) = toolchain() else { return };
    let msgs: Vec<(String, String, String)> = fixture_records(tc, "early_exits", "")
        .into_iter()
        .filter(|m| m["reason"] == "compiler-message" && m["gpucheck"]["lint"] == "barrier_divergence")
        .map(|m| {
            let k = m["gpucheck"]["kernel"].as_str().unwrap().to_string();
            (k, m["message"]["level"].as_str().unwrap().to_string(), m["message"]["message"].as_str().unwrap().to_string())
        })
        .collect();
    let of = |k: &str| -> Vec<(String, String)> { msgs.iter().filter(|m| m.0 == k).map(|m| (m.1.clone(), m.2.clone())).collect() };
    let w = |m: &str| vec![("warning".to_string(), m.to_string())];
    assert_eq!(of("early_exit"), w("barrier reached under thread-dependent control flow when `N` is not a multiple of 256"));
    assert_eq!(of("tail_exit"), w("barrier reached under thread-dependent control flow when 1 ≤ `C` ≤ 255"));
    assert!(of("early_exit_checked").is_empty() && of("exit_after_barrier").is_empty(), "{msgs:#?}");
    assert_eq!(of("half_exits"), vec![("error".to_string(), "barrier reached under thread-dependent control flow".to_string())]);
    // a declared size that is a multiple of the block: no split
    let declared: Vec<_> = fixture_records(tc, "early_exits", "--assume N=1024")
        .into_iter()
        .filter(|m| m["reason"] == "compiler-message" && m["gpucheck"]["kernel"] == "early_exit")
        .collect();
    assert!(declared.is_empty(), "{declared:#?}");
    // a run with a size the condition excludes: `confirm` says the condition is not met
    let f = fixtures(tc).iter().find(|f| f.cu.file_stem().unwrap() == "early_exits").expect("the fixture");
    let out = run(&words(&format!(
        "confirm --ptx {} --kernel early_exit --grid 4 --block 256 --arg 0=f32[1024] --arg 1=f32[1024] --arg 2=1024",
        f.ptx.display()
    )));
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(table.contains("(`N` = 1024, and it needs `N` < 1024 not a multiple of 256)  condition not met"), "{table}");
}

/// Witnesses the loop's bound must allow (issue 26, pattern 1): a race
/// whose threads reach their accesses only for some values of a runtime
/// bound says which, as a warning; declared values decide it.
#[test]
fn cuda_c_loop_bounds_state_what_witnesses_need() {
    let Some(tc) = toolchain() else { return };
    let findings = |extra: &str| -> Vec<(String, String, String)> {
        fixture_records(tc, "loop_bounds", extra)
            .into_iter()
            .filter(|m| m["reason"] == "compiler-message" && m["gpucheck"]["lint"] == "shared_memory_race")
            .map(|m| {
                let k = m["gpucheck"]["kernel"].as_str().unwrap().to_string();
                (k, m["message"]["level"].as_str().unwrap().to_string(), m["message"]["message"].as_str().unwrap().to_string())
            })
            .collect()
    };
    let by_kernel = |fs: &[(String, String, String)], k: &str| -> Vec<(String, String)> {
        fs.iter().filter(|f| f.0 == k).map(|f| (f.1.clone(), f.2.clone())).collect()
    };
    let plain = findings("");
    assert!(by_kernel(&plain, "bound_excludes").is_empty(), "{plain:#?}");
    assert_eq!(by_kernel(&plain, "bound_allows").len(), 1, "{plain:#?}");
    assert_eq!(by_kernel(&plain, "bound_allows")[0].0, "error");
    assert_eq!(
        by_kernel(&plain, "bound_param"),
        [(
            "warning".to_string(),
            "write-after-write data race on shared memory when `C` ≥ 129: for `C` = 129, thread 0 writes element 128 while thread 128 writes it, one iteration apart".to_string()
        )]
    );
    assert!(by_kernel(&plain, "strided_records")[0].1.contains("when `C` ≥ 257"), "{plain:#?}");
    // declared values bind the bound: below it no witness, above it an error
    let small = findings("--assume C=128");
    assert!(by_kernel(&small, "bound_param").is_empty() && by_kernel(&small, "strided_records").is_empty(), "{small:#?}");
    let large = findings("--assume C=1024");
    assert_eq!(by_kernel(&large, "bound_param").first().map(|f| f.0.as_str()), Some("error"), "{large:#?}");
    assert_eq!(by_kernel(&large, "strided_records").first().map(|f| f.0.as_str()), Some("error"), "{large:#?}");
    // a 32×4 block: the strided fill's stride is the block's, no two threads meet
    let f = fixtures(tc).iter().find(|f| f.cu.file_stem().unwrap() == "loop_bounds").expect("the fixture");
    let out = run(&words(&format!("ptx {} --message-format json --block 32,4,1", f.ptx.display())));
    let narrow: Vec<_> = json_lines(&out.stdout)
        .into_iter()
        .filter(|m| m["reason"] == "compiler-message" && m["gpucheck"]["kernel"] == "strided_records")
        .collect();
    assert!(narrow.is_empty(), "{narrow:#?}");
    // every race was replayed and reproduced before it was reported
    let replays: Vec<String> = fixture_records(tc, "loop_bounds", "")
        .iter()
        .filter(|m| m["gpucheck"]["lint"] == "shared_memory_race")
        .map(|m| m["gpucheck"]["replay"]["status"].as_str().unwrap_or("none").to_string())
        .collect();
    assert!(!replays.is_empty() && replays.iter().all(|s| s == "reproduced"), "{replays:?}");
    // a run outside the condition the finding states: `confirm` says so, not "not observed"
    let out =
        run(&words(&format!("confirm --ptx {} --kernel bound_param --grid 1 --block 256 --arg 0=i32[256] --arg 1=128", f.ptx.display())));
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(table.contains("no race in this run (`C` = 128, and it needs `C` ≥ 129)") && table.contains("condition not met"), "{table}");
    assert_eq!(out.status.code(), Some(0), "{table}");
}

/// Races that need a parameter value (issue 14, item 1): the values are
/// solved for, and the twins stay clean.
#[test]
fn cuda_c_parameter_races_name_their_values() {
    let Some(tc) = toolchain() else { return };
    let msgs: Vec<_> = fixture_records(tc, "param_races", "").into_iter().filter(|m| m["reason"] == "compiler-message").collect();
    let text = |k: &str| -> Vec<String> {
        msgs.iter().filter(|m| m["gpucheck"]["kernel"] == k).map(|m| m["message"]["message"].as_str().unwrap().to_string()).collect()
    };
    assert_eq!(
        text("shift_in_place"),
        ["write-after-read data race on global memory when 1 ≤ `offset` ≤ 255: for `offset` = 1, thread 1 writes element 1 while thread 0 reads it"]
    );
    assert_eq!(
        text("two_threads"),
        ["write-after-write data race on global memory when `x` = 185: thread 200 writes element 200 while thread 15 writes it"]
    );
    // two parameters, one in each thread's address: the relation the race needs
    assert_eq!(
        text("two_params_equal"),
        ["write-after-write data race on global memory when `x` = `y`: thread 1 writes element 1024 while thread 0 writes it"]
    );
    assert!(text("shift_to_other").is_empty() && text("two_threads_apart").is_empty() && text("two_params_parity").is_empty(), "{msgs:#?}");
}

/// Races across a call (issue 13, item 2): a kernel's read meets the store
/// its helper made (reported at the read, the helper's store named), two
/// calls of one helper store to overlapping elements (reported in the
/// helper, both calls named); the twins with a barrier or two arrays are clean.
#[test]
fn cuda_c_races_across_calls() {
    let Some(tc) = toolchain() else { return };
    let msgs: Vec<_> = fixture_records(tc, "calls", "").into_iter().filter(|m| m["reason"] == "compiler-message").collect();
    let races = |k: &str| -> Vec<&serde_json::Value> {
        msgs.iter().filter(|m| m["gpucheck"]["kernel"] == k && m["gpucheck"]["lint"] == "global_memory_race").collect()
    };
    let lines = |m: &serde_json::Value| -> Vec<(u64, bool)> {
        m["message"]["spans"].as_array().unwrap().iter().map(|s| (s["line_start"].as_u64().unwrap(), s["is_primary"] == true)).collect()
    };
    let read = races("read_after_call");
    assert_eq!(read.len(), 1, "{read:#?}");
    assert_eq!(
        read[0]["message"]["message"],
        "read-after-write data race on global memory: thread 0 reads element 1 while thread 1 writes it"
    );
    assert_eq!(lines(read[0]), vec![(107, true), (89, false)], "{:#}", read[0]);
    let two = races("two_calls_overlap");
    assert_eq!(two.len(), 1, "{two:#?}");
    let text = two[0]["message"]["rendered"].as_str().unwrap();
    assert_eq!(lines(two[0])[0], (89, true), "{text}");
    for call in ["calls.cu:119:5", "calls.cu:120:5"] {
        assert!(text.contains(call), "{call} named: {text}");
    }
    assert!(races("read_after_call_synced").is_empty() && races("two_calls_apart").is_empty(), "{msgs:#?}");
}

/// Races between blocks (issue 14, item 4): with the grid given, and with
/// none (two blocks or more assumed along x, which the finding says); the
/// twins (one element per block, a second array, a grid-stride loop) are
/// clean either way.
#[test]
fn cuda_c_races_between_blocks() {
    let Some(tc) = toolchain() else { return };
    for extra in ["", "--grid 1"] {
        let f = fixtures(tc).iter().find(|f| f.cu.file_stem().unwrap() == "grid_races").unwrap();
        let mut args = words("ptx --message-format json");
        args.insert(1, f.ptx.display().to_string());
        // the fixture's flags without its `--grid X`
        let grid_at = f.flags.iter().position(|x| x == "--grid");
        args.extend(f.flags.iter().enumerate().filter(|(i, _)| grid_at.is_none_or(|g| *i != g && *i != g + 1)).map(|(_, x)| x.clone()));
        args.extend(words(extra));
        let msgs: Vec<_> = json_lines(&run(&args).stdout).into_iter().filter(|m| m["reason"] == "compiler-message").collect();
        let grid: Vec<(String, String)> = msgs
            .iter()
            .filter(|m| m["gpucheck"]["lint"] == "grid_memory_race")
            .map(|m| (m["gpucheck"]["kernel"].as_str().unwrap().to_string(), m["message"]["rendered"].as_str().unwrap().to_string()))
            .collect();
        if extra == "--grid 1" {
            assert!(grid.is_empty(), "one block: no race between blocks: {grid:#?}");
            continue;
        }
        let kernels: Vec<&str> = grid.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(kernels, ["pair_blocks_write", "neighbour_block_read"], "{grid:#?}");
        assert!(grid[0].1.contains("write-after-write data race between blocks on global memory: thread 0 of block 1 writes element 0 while thread 0 of block 0 writes it"), "{}", grid[0].1);
        assert!(grid[1].1.contains("thread 0 of block 1 writes element 256 while thread 0 of block 0 reads it"), "{}", grid[1].1);
        assert!(
            grid.iter().all(|(_, t)| t.contains("no grid shape given") && t.contains("assumed two blocks or more along x")),
            "{grid:#?}"
        );
    }
}

/// One missing barrier, one error: the tile loop without its second
/// `__syncthreads()` races on `As` and on `Bs` in one statement; the one
/// diagnostic labels both reads and both writes and names the second race
/// in a note. The synced twin has none.
#[test]
fn cuda_c_one_missing_barrier_is_one_error() {
    let Some(tc) = toolchain() else { return };
    let msgs: Vec<_> = fixture_records(tc, "tiled", "").into_iter().filter(|m| m["gpucheck"]["lint"] == "shared_memory_race").collect();
    let kernels: Vec<&str> = msgs.iter().map(|m| m["gpucheck"]["kernel"].as_str().unwrap()).collect();
    assert_eq!(kernels, ["matmul_missing_sync"], "{msgs:#?}");
    let m = &msgs[0]["message"];
    let labels: Vec<(u64, &str)> =
        m["spans"].as_array().unwrap().iter().map(|s| (s["line_start"].as_u64().unwrap(), s["label"].as_str().unwrap_or(""))).collect();
    // the lines of the statements, from the fixture
    let cu = std::fs::read_to_string(repo().join("tests/fixtures/cuda/tiled.cu")).unwrap();
    let line_of = |s: &str| cu.lines().position(|l| l.contains(s)).unwrap() as u64 + 1;
    let (read, as_write, bs_write) = (line_of("acc += As[ty][k] * Bs[k][tx]; //~"), line_of("As[ty][tx] = A["), line_of("Bs[ty][tx] = B["));
    let reads = labels.iter().filter(|(l, t)| *l == read && t.contains("reads here")).count();
    let writes: Vec<u64> = labels.iter().filter(|(_, t)| t.contains("writes here")).map(|(l, _)| *l).collect();
    assert_eq!((reads, writes), (2, vec![as_write, bs_write]), "{labels:?}");
    let text = m["rendered"].as_str().unwrap();
    assert!(
        text.contains("element 0 of `matmul_missing_sync::As`") && text.contains("and at column 56: write-after-read data race"),
        "{text}"
    );
}

/// The worst copy headlines (performance findings, item 4): the unrolled
/// up-sweep's copies of one line go from 2-way to 32-way bank conflicts;
/// the diagnostic is the 32-way copy's, with the range in JSON and in its
/// note, and the run observes that degree at one of those copies.
#[test]
fn cuda_c_the_worst_copy_headlines() {
    let Some(tc) = toolchain() else { return };
    let recs = fixture_records(tc, "scan_copies", "");
    let msgs: Vec<_> = recs.iter().filter(|m| m["reason"] == "compiler-message").collect();
    assert_eq!(msgs.len(), 2, "{msgs:#?}");
    for m in &msgs {
        let g = &m["gpucheck"];
        assert_eq!(g["kernel"], "blelloch_upsweep");
        assert_eq!((g["conflict_degree"].as_i64(), g["worst_conflict_degree"].as_i64()), (Some(32), Some(32)), "{m:#}");
        assert_eq!((g["copies_range"]["low"].as_i64(), g["copies_range"]["high"].as_i64()), (Some(2), Some(32)), "{m:#}");
        let text = m["message"]["rendered"].as_str().unwrap();
        assert!(text.starts_with("warning: 32-way shared memory bank conflict"), "{text}");
        assert!(text.contains("this is the worst of them, which range from 2-way to 32-way"), "{text}");
    }
    let f = fixtures(tc).iter().find(|f| f.cu.file_stem().unwrap() == "scan_copies").unwrap();
    let mut args = words("confirm --message-format json --kernel blelloch_upsweep --grid 1 --arg 0=f32[1024] --arg 1=f32[1024] --ptx");
    args.push(f.ptx.display().to_string());
    args.extend(f.flags.iter().cloned());
    let seen: Vec<u64> = json_lines(&run(&args).stdout)
        .iter()
        .filter(|r| r["reason"] == "gpucheck-confirm" && r["space"] == "shared" && r["line"].as_u64() == Some(22))
        .filter_map(|r| r["observed"]["max"].as_u64())
        .collect();
    assert_eq!(seen.iter().max(), Some(&32), "{seen:?}");
}

/// Local stays local (pattern 7): the struct `local_struct` builds on its
/// stack reaches the helper as a generic pointer; the helper's update of it
/// is a race in `global_struct`'s call only (the run shows none in
/// `local_struct`, and the analysis predicts none there).
#[test]
fn cuda_c_local_structs_stay_local() {
    let Some(tc) = toolchain() else { return };
    let f = fixtures(tc).iter().find(|f| f.cu.file_stem().unwrap() == "local_structs").unwrap();
    let mut args =
        words("confirm --message-format json --kernel local_struct --arg 0=f32[256] --arg 1=f32[2048] --arg 2=i32[256] --arg 3=2 --ptx");
    args.push(f.ptx.display().to_string());
    args.extend(f.flags.iter().cloned());
    let out = run(&args);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let recs = json_lines(&out.stdout);
    assert!(recs.iter().any(|r| r["verdict"] == "confirmed"), "{recs:#?}");
    assert!(!recs.iter().any(|r| r["predicted"]["race"] == true || !r["observed"]["race"].is_null()), "{recs:#?}");
    let races: Vec<_> = fixture_records(tc, "local_structs", "")
        .into_iter()
        .filter(|m| m["reason"] == "compiler-message" && m["gpucheck"]["lint"] == "global_memory_race")
        .collect();
    assert_eq!(races.len(), 1, "{races:#?}");
    let text = races[0]["message"]["rendered"].as_str().unwrap();
    assert!(text.contains("in this call from `global_struct`") && !text.contains("from `local_struct`"), "{text}");
}

/// Divergence as lost lane-slots: the interleaved reduction's guard leaves
/// about a quarter of the kernel's lane-slots idle over the eight copies of
/// its line (warned), sequential addressing's a few percent (not warned);
/// a run measures the same shares copy by copy.
#[test]
fn cuda_c_divergence_is_weighed_in_lane_slots() {
    let Some(tc) = toolchain() else { return };
    let recs = fixture_records(tc, "reduce_steps", "");
    let msgs: Vec<_> = recs.iter().filter(|m| m["reason"] == "compiler-message").collect();
    let inter: Vec<_> = msgs.iter().filter(|m| m["gpucheck"]["lint"] == "divergent_branch").collect();
    assert!(!inter.is_empty() && inter.iter().all(|m| m["gpucheck"]["kernel"] == "reduce_interleaved"), "{msgs:#?}");
    for m in &inter {
        let share = m["gpucheck"]["idle_share"].as_f64().unwrap();
        assert!((0.2..0.3).contains(&share), "{m:#}");
        assert!(m["message"]["rendered"].as_str().unwrap().contains("of the kernel's lane-slots idle, over the 8 copies"), "{m:#}");
    }
    let f = fixtures(tc).iter().find(|f| f.cu.file_stem().unwrap() == "reduce_steps").unwrap();
    for (kernel, low, high) in [("reduce_interleaved", 0.2, 0.3), ("reduce_sequential", 0.0, 0.1)] {
        let mut args = words("confirm --message-format json --arg 0=f32[2] --arg 1=f32[512] --kernel");
        args.push(kernel.into());
        args.push("--ptx".into());
        args.push(f.ptx.display().to_string());
        args.extend(f.flags.iter().cloned());
        let rows: Vec<_> = json_lines(&run(&args).stdout).into_iter().filter(|r| r["space"] == "idle lanes").collect();
        assert!(!rows.is_empty(), "{kernel}: no idle-lane rows");
        let (mut predicted, mut observed) = (0.0, 0.0);
        for r in &rows {
            assert_eq!(r["verdict"], "confirmed", "{kernel}: {r}");
            if r["line"] == 18 || r["line"] == 30 {
                predicted += r["predicted"]["idle_share"].as_f64().unwrap();
                observed += r["observed"]["idle_share"].as_f64().unwrap();
            }
        }
        assert!((low..high).contains(&observed) && (predicted - observed).abs() < 0.02, "{kernel}: {predicted} against {observed}");
    }
}

/// A load the compiler hoisted out of its loop (it has no line of its own)
/// is placed where its value is used, in the loop's body, and says so.
#[test]
fn cuda_c_hoisted_loads_say_so() {
    let Some(tc) = toolchain() else { return };
    let recs = fixture_records(tc, "hoisted_loads", "");
    let m = recs.iter().find(|m| m["gpucheck"]["lint"] == "uncoalesced_global_access").expect("the hoisted load's finding");
    let text = m["message"]["rendered"].as_str().unwrap();
    assert!(
        text.contains("--> tests/fixtures/cuda/hoisted_loads.cu:13:")
            && text.contains("the compiler hoisted this access out of the loop at tests/fixtures/cuda/hoisted_loads.cu:12:")
            && text.contains("it runs once before the loop; the line shown is where its value is used"),
        "{text}"
    );
}

/// Shared reads of elements no thread writes (issue 31, item 2): each bad
/// twin's read is reported once, reproduced, and confirmed by a run that
/// marks every stored byte; an early exit's last block, which the analysis
/// does not judge, is told apart.
#[test]
fn cuda_c_uninitialised_reads_are_reproduced_and_confirmed() {
    let Some(tc) = toolchain() else { return };
    let found: Vec<(String, String)> = fixture_records(tc, "uninit_shared", "")
        .into_iter()
        .filter(|m| m["reason"] == "compiler-message" && m["gpucheck"]["lint"] == "uninitialized_shared_read")
        .map(|m| {
            assert_eq!(m["gpucheck"]["replay"]["status"], "reproduced", "{m:#}");
            (m["gpucheck"]["kernel"].as_str().unwrap().to_string(), m["message"]["message"].as_str().unwrap().to_string())
        })
        .collect();
    let no_writer = "which no thread of the block writes";
    let expect = [
        ("reverse_half_tile", format!("thread 0 reads element 255 of `reverse_half_tile::s`, {no_writer}")),
        ("halo_left_only", format!("thread 255 reads element 257 of `halo_left_only::s`, {no_writer}")),
        ("dyn_reverse_first_half", format!("thread 0 reads element 255 of `d`, {no_writer}")),
        ("read_before_stage", "thread 0 reads element 0 of `read_before_stage::s` before any thread of the block writes it".to_string()),
        (
            "window_tail_unstaged",
            format!("thread 240 reads element 256 of `window_tail_unstaged::s`, {no_writer}, in iteration 17 of 17 of the loop"),
        ),
    ];
    assert_eq!(found.len(), expect.len(), "{found:#?}");
    for (k, m) in &expect {
        assert!(found.iter().any(|(fk, fm)| fk == k && fm.ends_with(m.as_str())), "{k}: {found:#?}");
    }
    // without the dynamic size the dynamic tile is not judged, and the status line says so
    let f = fixtures(tc).iter().find(|f| f.cu.file_stem().unwrap() == "uninit_shared").expect("the fixture");
    let out = run(&words(&format!("ptx {} --block 256", f.ptx.display())));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("dynamic shared memory (`d`) is not checked for out-of-bounds or uninitialised reads"), "{err}");
    assert!(!err.contains("of `d`, which no thread"), "{err}");
    // a run of each bad twin sees the read where it was predicted
    for (k, args) in [
        ("reverse_half_tile", "f32[256]"),
        ("halo_left_only", "f32[258]"),
        ("dyn_reverse_first_half", "f32[256]"),
        ("read_before_stage", "f32[256]"),
        ("window_tail_unstaged", "f32[272]"),
    ] {
        let out = run(&words(&format!(
            "confirm --ptx {} --kernel {k} --grid 1 --block 256 --shared 1024 --message-format json --arg 0={args} --arg 1=f32[256]",
            f.ptx.display()
        )));
        let rows: Vec<_> = json_lines(&out.stdout).into_iter().filter(|r| r["space"] == "uninit").collect();
        assert_eq!(rows.len(), 1, "{k}: {rows:#?}");
        assert_eq!((rows[0]["verdict"].as_str(), rows[0]["observed"]["uninitialized"].as_bool()), (Some("confirmed"), Some(true)), "{k}");
        assert_eq!(out.status.code(), Some(0), "{k}: {}", String::from_utf8_lossy(&out.stderr));
    }
    // `early_exit` with N = 1000: threads 0..23 of block 3 read what its exited threads did not write
    let f = fixtures(tc).iter().find(|f| f.cu.file_stem().unwrap() == "early_exits").expect("the fixture");
    let out = run(&words(&format!(
        "confirm --ptx {} --kernel early_exit --grid 4 --block 256 --message-format json --arg 0=f32[1024] --arg 1=f32[1024] --arg 2=1000",
        f.ptx.display()
    )));
    let row = json_lines(&out.stdout).into_iter().find(|r| r["space"] == "uninit").expect("an uninit row");
    assert_eq!(row["verdict"], "seen in a later block (the analysis judges block 0)", "{row:#}");
    assert_eq!((row["observed"]["block"][0].as_u64(), row["observed"]["thread"][0].as_u64()), (Some(3), Some(0)), "{row:#}");
}

/// A thread's local array read past its end (issue 31, item 1): reported
/// against the `.local` depot, reproduced, and `confirm` compares the access
/// its run stops at.
#[test]
fn cuda_c_local_arrays_are_bounds_checked() {
    let Some(tc) = toolchain() else { return };
    let found: Vec<_> = fixture_records(tc, "local_bounds", "")
        .into_iter()
        .filter(|m| m["reason"] == "compiler-message" && m["gpucheck"]["lint"] == "shared_out_of_bounds")
        .collect();
    assert_eq!(found.len(), 1, "{found:#?}");
    assert_eq!(
        found[0]["message"]["message"],
        "out-of-bounds local memory read: thread 8 reads element 8 of its local memory, which has 8"
    );
    assert_eq!(found[0]["gpucheck"]["replay"]["status"], "reproduced", "{:#}", found[0]);
    let f = fixtures(tc).iter().find(|f| f.cu.file_stem().unwrap() == "local_bounds").expect("the fixture");
    let out = run(&words(&format!(
        "confirm --ptx {} --kernel local_pick_past_end --grid 1 --block 256 --message-format json --arg 0=f32[2048] --arg 1=f32[256]",
        f.ptx.display()
    )));
    let rows: Vec<_> = json_lines(&out.stdout).into_iter().filter(|r| r["space"] == "bounds").collect();
    assert_eq!(rows.len(), 1, "{rows:#?}");
    assert_eq!((rows[0]["verdict"].as_str(), rows[0]["observed"]["offset"].as_i64()), (Some("confirmed"), Some(32)), "{:#}", rows[0]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("stopped at PTX line"), "{}", String::from_utf8_lossy(&out.stderr));
}
