//! `cargo gpucheck confirm` on the example kernels with the launches in
//! example-kernels/Cargo.toml: for every access site with a static
//! prediction that the run executed, the CPU engine's observed typical
//! value equals the predicted one; the racy kernels' races are seen and
//! were predicted; clean kernels show none; errors are clear.

use gpucheck_tests::*;
use std::collections::BTreeSet;
use std::process::Command;

fn records() -> &'static Vec<serde_json::Value> {
    static OUT: std::sync::OnceLock<Vec<serde_json::Value>> = std::sync::OnceLock::new();
    OUT.get_or_init(|| {
        example_build();
        let out = gpucheck(&["confirm", "-q", "--message-format", "json"], &repo().join("example-kernels"));
        assert_eq!(out.status.code(), Some(1), "races are seen, so exit 1: {}", String::from_utf8_lossy(&out.stderr));
        json_lines(&out.stdout)
    })
}

#[test]
fn every_executed_prediction_is_confirmed() {
    let recs = records();
    assert!(recs.iter().all(|r| r["reason"] == "gpucheck-confirm" && r["engine"] == "cpu"));
    let mut confirmed = 0;
    let mut kernels = BTreeSet::new();
    for r in recs.iter().filter(|r| r["space"] == "global" || r["space"] == "shared") {
        // race rows (seen, or predicted and not seen) are judged in their own test
        if r["observed"].is_null() || r["predicted"].is_null() || r["predicted"]["analysed"] == false || !r["observed"]["race"].is_null() {
            continue;
        }
        let key = if r["space"] == "global" { "sectors_per_request" } else { "conflict_degree" };
        // a lane stride read from memory (ones in Cargo.toml): the prediction for a stride of 1
        if !r["predicted"]["sectors_per_request_at_stride_1"].is_null() {
            assert_eq!(r["observed"]["typical"], r["predicted"]["sectors_per_request_at_stride_1"], "{r}");
            assert_eq!(r["verdict"], "confirmed (stride 1)", "{r}");
            continue;
        }
        // a runtime offset that misaligns the rows in this run: the misaligned prediction
        if r["verdict"] == "confirmed (misaligned rows)" {
            assert_eq!(r["observed"]["typical"], r["predicted"]["misaligned_sectors_per_request"], "{r}");
            continue;
        }
        assert_eq!(r["observed"]["typical"], r["predicted"][key], "{r}");
        assert_eq!(r["verdict"], "confirmed", "{r}");
        assert!(
            r["observed"]["max"].as_u64().unwrap()
                <= r["predicted"][if key == "conflict_degree" { "worst_conflict_degree" } else { "worst_sectors_per_request" }]
                    .as_u64()
                    .unwrap()
                    .max(32),
            "{r}"
        );
        confirmed += 1;
        kernels.insert(r["kernel"].as_str().unwrap().to_string());
    }
    assert!(confirmed >= 150, "only {confirmed} confirmed sites");
    assert!(kernels.len() >= 35, "{kernels:?}");
    assert!(!recs.iter().any(|r| r["verdict"] == "MISMATCH"));
    // the headline twins: bad ones confirmed bad, good ones good
    let typical = |k: &str, space: &str| -> Vec<u64> {
        recs.iter()
            .filter(|r| r["kernel"] == k && r["space"] == space && !r["observed"].is_null())
            .map(|r| r["observed"]["typical"].as_u64().unwrap_or(0))
            .collect()
    };
    assert!(typical("strided_gather", "global").contains(&32));
    assert_eq!(typical("shared_column_unpadded", "shared").iter().max(), Some(&32));
    assert_eq!(typical("shared_column_padded", "shared").iter().max(), Some(&1));
    assert_eq!(typical("reduce_interleaved", "shared").iter().max(), Some(&2));
    // the unrolled up-sweep's worst copy (the one its diagnostic headlines), and the padded twin's
    assert_eq!(typical("scan_upsweep", "shared").iter().max(), Some(&16));
    assert_eq!(typical("scan_upsweep_padded", "shared").iter().max(), Some(&1));
}

#[test]
fn races_are_seen_where_predicted_and_nowhere_else() {
    let races: BTreeSet<(String, String)> = records()
        .iter()
        .filter(|r| r["verdict"] == "RACE")
        .map(|r| {
            assert_eq!(r["predicted"]["race"], true, "an observed race the analysis missed: {r}");
            (r["kernel"].as_str().unwrap().to_string(), r["space"].as_str().unwrap().to_string())
        })
        .collect();
    let expected: BTreeSet<(String, String)> = [
        ("all_write_one", "global"),
        ("neighbour_read", "shared"),
        ("scan_no_first_barrier", "shared"),
        ("scan_no_second_barrier", "shared"),
        // offset = 1 (Cargo.toml): inside the racing range the finding names
        ("shift_in_place", "global"),
        // the kernel's read meets the store a helper made (a race across the call)
        ("read_after_helper", "global"),
        // thread 0 of blocks 2k and 2k + 1 write one element (a race between blocks)
        ("pair_blocks_write", "grid"),
        // two values of `data` in one bin: both threads read the old count (a lost update)
        ("histogram_plain", "shared"),
        // c = 256 (Cargo.toml): past the 129 the finding's condition needs, thread 128 enters the loop
        ("fill_strided", "shared"),
        // threads past the clamp store what they read of s[127] while thread 127 rewrites it
        ("scale_head_kept", "shared"),
    ]
    .iter()
    .map(|(a, b)| (a.to_string(), b.to_string()))
    .collect();
    assert_eq!(races, expected);
}

/// Shared and local accesses outside their array: the run sees each one
/// predicted, and none other.
#[test]
fn out_of_bounds_shared_accesses_are_seen_where_predicted() {
    // (`local_window_past_end`'s read leaves its thread's local memory: the run stops there)
    assert_rows("bounds", &[("last_row_halo", "confirmed"), ("stage_rows_past_end", "confirmed"), ("local_window_past_end", "confirmed")]);
}

/// The (kernel, verdict) of every row of `space` in the examples' run are
/// `expected`.
fn assert_rows(space: &str, expected: &[(&str, &str)]) {
    let rows: BTreeSet<(String, String)> = records()
        .iter()
        .filter(|r| r["space"] == space)
        .map(|r| (r["kernel"].as_str().unwrap().to_string(), r["verdict"].as_str().unwrap().to_string()))
        .collect();
    let expected: BTreeSet<(String, String)> = expected.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect();
    assert_eq!(rows, expected);
}

/// Shared reads of elements no thread writes: the run sees each one
/// predicted and none other (in block 0, which the analysis judges) but
/// the racing read of `neighbour_read` (thread 31 reads s[32] before warp 1
/// writes it), which is the race's.
#[test]
fn uninitialised_shared_reads_are_seen_where_predicted() {
    assert_rows(
        "uninit",
        &[
            ("reverse_half_staged", "confirmed"),
            ("stencil_right_halo_missing", "confirmed"),
            ("keep_old_before_staging", "confirmed"),
            ("neighbour_read", "read before the racing write (see the race)"),
        ],
    );
}

/// Impact and idle lane-slots: every share the analysis predicts is
/// measured on the run and judged (none contradicted: the first test checks
/// that no row is a mismatch), and the headline twins come out as predicted.
#[test]
fn shares_are_measured() {
    let recs = records();
    let judged = |what: &str| {
        recs.iter().filter(|r| r["space"] == what && ["confirmed", "within bound"].contains(&r["verdict"].as_str().unwrap_or(""))).count()
    };
    assert!(judged("impact") >= 40, "only {} impact rows judged", judged("impact"));
    assert!(judged("idle lanes") >= 30, "only {} idle-lane rows judged", judged("idle lanes"));
    // the interleaved reduction's guard idles a fifth of its lane-slots or more; sequential addressing a few percent
    let idle = |k: &str| -> f64 {
        recs.iter().filter(|r| r["kernel"] == k && r["space"] == "idle lanes").filter_map(|r| r["observed"]["idle_share"].as_f64()).sum()
    };
    assert!(idle("reduce_modulo_guard") >= 0.2, "{}", idle("reduce_modulo_guard"));
    assert!(idle("reduce_halving") < 0.1, "{}", idle("reduce_halving"));
}

#[test]
fn branch_splits_are_counted() {
    // saxpy: 1000 of 1024 threads in range: one warp execution splits at the bound
    let saxpy: Vec<&serde_json::Value> = records().iter().filter(|r| r["kernel"] == "saxpy" && r["space"] == "branch").collect();
    assert_eq!(saxpy.len(), 1, "{saxpy:?}");
    assert_eq!(saxpy[0]["observed"]["splits"], 1);
    assert_eq!(saxpy[0]["observed"]["executions"], 32);
}

#[test]
fn branch_predictions_are_judged() {
    let branches: Vec<&serde_json::Value> = records().iter().filter(|r| r["space"] == "branch").collect();
    assert!(branches.len() >= 20, "{}", branches.len());
    for r in &branches {
        let v = r["verdict"].as_str().unwrap();
        assert!(matches!(v, "confirmed" | "within bound" | "observed" | "not executed"), "{r}");
        // a deterministic count is judged, a bound must hold, samples are shown
        match r["predicted"]["kind"].as_str() {
            Some("exact") if !r["observed"].is_null() => {
                assert_eq!(r["observed"]["warps_split"], r["predicted"]["warps_split"], "{r}");
                assert_eq!(v, "confirmed", "{r}");
            }
            Some("at_most") if !r["observed"].is_null() => {
                assert!(r["observed"]["max_warps_split"].as_u64() <= r["predicted"]["warps_split"].as_u64(), "{r}");
                assert_eq!(v, "within bound", "{r}");
            }
            _ => {}
        }
    }
    // the headline: odd/even lanes split all 8 warps of a 256-thread block, predicted and seen
    let odd = branches.iter().find(|r| r["kernel"] == "odd_even_branch").expect("odd_even_branch's branch row");
    assert_eq!((odd["predicted"]["warps_split"].as_u64(), odd["observed"]["warps_split"].as_u64()), (Some(8), Some(8)));
    assert_eq!(odd["verdict"], "confirmed");
    // rows name the instruction they join on
    assert!(branches.iter().all(|r| r["function"].is_u64() && r["inst"].is_u64()));
}

#[test]
fn launch_errors_are_clear() {
    let dir = repo().join("example-kernels");
    example_build();
    // a kernel without a grid and no arguments for it
    let out = gpucheck(&["confirm", "-q", "--kernel", "saxpy", "--arg", "x=f32"], &dir);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("argument `x` is a pointer (`*const f32`): give a buffer such as `x=f32[1024]`"), "{err}");
    // a bad value names itself
    let out = gpucheck(&["confirm", "-q", "--kernel", "fan2_fixed", "--arg", "a=f32[0x]"], &dir);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("`0x` is not a length in `f32[0x]`"));
    // an out-of-bounds access is reported with the thread, not a crash: a failing row
    let out = gpucheck(&["confirm", "-q", "--kernel", "contiguous_read", "--arg", "a=f32[64]"], &dir);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    // `a` holds 64 floats: thread 64 reads past it, at the Rust line of the read
    assert!(err.contains("src/memory.rs:19:19: the run of `contiguous_read` stopped at PTX line"), "{err}");
    assert!(err.contains("thread (64, 0, 0) of block (0, 0, 0) accesses element 64 of `a` (64 elements given)"), "{err}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("OUT OF BOUNDS"));
    // an unknown kernel is an error naming the closest and listing the kernels
    let out = gpucheck(&["confirm", "-q", "--kernel", "saxpi", "--grid", "1"], &dir);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2));
    assert!(err.contains("no kernel `saxpi` in the PTX; did you mean `saxpy`? kernels: accepted_divergence, "), "{err}");
    // an argument that names no parameter of the kernels to run
    let out = gpucheck(&["confirm", "-q", "--kernel", "saxpy", "--arg", "bogus=3"], &dir);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2));
    assert!(err.contains("argument `bogus` names no parameter of the kernels to run (parameters: saxpy(a, x, y, n); "), "{err}");
    // confirm prints tables or JSON, not SARIF
    let out = gpucheck(&["confirm", "-q", "--message-format", "sarif"], &dir);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("SARIF is for findings"));
    // sizes are checked before anything is allocated, numbers against the parameter's type
    let out = gpucheck(&["confirm", "-q", "--kernel", "saxpy", "--arg", "x=f32[99999999999]"], &dir);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("`f32[99999999999]` would take 399999999996 bytes; a buffer holds at most 1073741824 bytes"), "{err}");
    let out = gpucheck(&["confirm", "-q", "--kernel", "saxpy", "--arg", "n=-5"], &dir);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("argument `n`: `-5` is negative, but the parameter is a `usize`"), "{err}");
}

/// A kernel whose launch cannot be made is skipped with a warning; the
/// others run.
#[test]
fn a_kernel_that_cannot_launch_is_skipped() {
    example_build();
    // `a = 2.5` for saxpy's scalar is also given to fan2's pointer `a`: fan2 cannot launch
    let out = gpucheck(
        &["confirm", "-q", "--message-format", "json", "--kernel", "fan2", "--kernel", "saxpy", "--arg", "a=2.5"],
        &repo().join("example-kernels"),
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("warning: skipping kernel `fan2`: argument `a` is a pointer (`*mut f32`)"), "{err}");
    let kernels: std::collections::BTreeSet<String> =
        json_lines(&out.stdout).iter().map(|r| r["kernel"].as_str().unwrap().to_string()).collect();
    assert_eq!(kernels.into_iter().collect::<Vec<_>>(), ["saxpy"]);
}

#[test]
fn cuda_engine_says_when_there_is_no_driver() {
    // this test machine has no NVIDIA driver; with one, the engine runs (see README)
    if std::path::Path::new("/dev/nvidiactl").exists() {
        return;
    }
    example_build();
    let out = gpucheck(&["confirm", "-q", "--kernel", "saxpy", "--engine", "cuda"], &repo().join("example-kernels"));
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no CUDA driver found"), "{err}");
}

/// `--engine cuda` runs each kernel in a process of this program's own:
/// started that way, it reads the job file and answers in the result
/// format on stdout, a bad job included (the GPU runs are in README).
#[test]
fn the_cuda_engines_kernel_process_answers_in_its_format() {
    let dir = scratch("gpucheck-cuda-job");
    std::fs::create_dir_all(&dir).unwrap();
    let job = dir.join("not-a-job");
    std::fs::write(&job, "gpucheck-cuda-job 0\n").unwrap();
    for (file, said) in [(job.clone(), "not a job of this version"), (dir.join("missing"), "reading the job file")] {
        let out = Command::new(binary()).arg("__gpucheck-cuda-job").arg(&file).output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
        assert!(text.starts_with("error\n") && text.contains(said), "{text}");
    }
}

/// The instrumented PTX of the CUDA engine, run on the interpreter
/// (`--engine cuda-on-cpu`): the counters it leaves give, for every access
/// site of every example kernel, the same numbers as the interpreter's own
/// observation. This checks the instrumentation (sector grouping with
/// `match.any.sync`, conflict degrees with ballots) without a GPU.
#[test]
fn instrumented_counters_equal_direct_observation() {
    example_build();
    let out = gpucheck(&["confirm", "-q", "--engine", "cuda-on-cpu", "--message-format", "json"], &repo().join("example-kernels"));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.code() == Some(0) || out.status.code() == Some(1), "{err}");
    let sites = |recs: &[serde_json::Value]| -> std::collections::BTreeMap<(String, u64, String), serde_json::Value> {
        recs.iter()
            // the instrumented copy counts the sites the analysis knows (not those it could not analyse)
            .filter(|r| {
                (r["space"] == "global" || r["space"] == "shared")
                    && !r["observed"].is_null()
                    && r["observed"]["race"].is_null()
                    && r["predicted"]["analysed"] != false
            })
            .map(|r| {
                (
                    (r["kernel"].as_str().unwrap().to_string(), r["ptx_line"].as_u64().unwrap(), r["space"].as_str().unwrap().to_string()),
                    r["observed"].clone(),
                )
            })
            .collect()
    };
    let instrumented = sites(&json_lines(&out.stdout));
    let direct = sites(records());
    assert!(direct.len() >= 200, "{}", direct.len());
    assert_eq!(instrumented.len(), direct.len());
    for (k, v) in &direct {
        assert_eq!(instrumented.get(k), Some(v), "{k:?}");
    }
}

/// A runtime row pitch: with `width = 256` floats the rows are aligned and
/// the run shows the typical prediction; with 257 most rows start inside a
/// sector and the run shows the misaligned prediction. The padded twin has
/// no misaligned prediction and stays at 4 sectors either way.
#[test]
fn misaligned_rows_are_predicted_and_seen() {
    example_build();
    let ek = repo().join("example-kernels");
    let run = |kernel: &str, width: u32| -> Vec<serde_json::Value> {
        let arg = format!("width={width}");
        let out = gpucheck(&["confirm", "-q", "--message-format", "json", "--kernel", kernel, "--arg", &arg], &ek);
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
        json_lines(&out.stdout).into_iter().filter(|r| r["space"] == "global").collect()
    };
    for (width, verdict, typical) in [(256, "confirmed", 4), (257, "confirmed (misaligned rows)", 5)] {
        let recs = run("scale_rows", width);
        assert_eq!(recs.len(), 2, "{recs:?}");
        for r in &recs {
            assert_eq!(
                (r["predicted"]["sectors_per_request"].as_u64(), r["predicted"]["misaligned_sectors_per_request"].as_u64()),
                (Some(4), Some(5)),
                "{r}"
            );
            assert_eq!((r["observed"]["typical"].as_u64(), r["verdict"].as_str()), (Some(typical), Some(verdict)), "{r}");
        }
    }
    for r in run("scale_rows_padded", 257) {
        assert!(r["predicted"]["misaligned_sectors_per_request"].is_null(), "{r}");
        assert_eq!((r["observed"]["typical"].as_u64(), r["verdict"].as_str()), (Some(4), Some("confirmed")), "{r}");
    }
}

/// `confirm --ptx FILE` runs a PTX file without building (no cargo: a
/// machine with a GPU but no Rust toolchain): with the package's Cargo.toml
/// for the launch settings and Rust parameter names, or with none, naming
/// PTX parameters; the verdicts are those of the built package.
#[test]
fn confirm_runs_a_ptx_file_without_building() {
    let (_, _, ptx) = example_build();
    let ptx = ptx.to_str().unwrap();
    let manifest = repo().join("example-kernels/Cargo.toml");
    let elsewhere = std::env::temp_dir();
    let verdicts = |out: &std::process::Output| -> Vec<String> {
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
        json_lines(&out.stdout).iter().filter(|r| r["space"] == "global").map(|r| r["verdict"].as_str().unwrap().to_string()).collect()
    };
    let with_manifest = gpucheck(
        &[
            "confirm",
            "--message-format",
            "json",
            "--ptx",
            ptx,
            "--manifest-path",
            manifest.to_str().unwrap(),
            "--kernel",
            "scale_rows",
            "--arg",
            "width=257",
        ],
        &elsewhere,
    );
    assert_eq!(verdicts(&with_manifest), ["confirmed (misaligned rows)"; 2]);
    let bare = gpucheck(
        &[
            "confirm",
            "--message-format",
            "json",
            "--ptx",
            ptx,
            "--kernel",
            "scale_rows",
            "--block",
            "32,8",
            "--grid",
            "8,8",
            "--arg",
            "scale_rows_param_0=f32[131072]",
            "--arg",
            "scale_rows_param_1=f32[131072]",
            "--arg",
            "scale_rows_param_2=256",
        ],
        &elsewhere,
    );
    assert_eq!(verdicts(&bare), ["confirmed"; 2]);
    // what is missing is named, by PTX parameter
    let out = gpucheck(&["confirm", "--ptx", ptx, "--kernel", "scale_rows", "--block", "32,8"], &elsewhere);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("`scale_rows_param_0` (.u64): --arg scale_rows_param_0=VALUE"), "{err}");
    let out = gpucheck(&["confirm", "--ptx", "no/such.ptx"], &elsewhere);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot read `no/such.ptx`"), "{}", String::from_utf8_lossy(&out.stderr));
}

/// Barrier divergence observed by the interpreter: a barrier part of the
/// block skips is a failing row (exit 1), predicted or not; a barrier
/// predicted divergent that every thread reached in this run is listed
/// as not observed; the others are confirmed.
#[test]
fn barrier_divergence_is_observed() {
    let recs = records();
    let row =
        |k: &str| recs.iter().find(|r| r["kernel"] == k && r["space"] == "barrier").unwrap_or_else(|| panic!("no barrier row for {k}"));
    let r = row("barrier_in_branch");
    assert_eq!((r["verdict"].as_str(), r["predicted"]["divergent"].as_bool()), (Some("BARRIER DIVERGENCE"), Some(true)), "{r}");
    assert_eq!((r["observed"]["fewest_threads"].as_u64(), r["observed"]["block_threads"].as_u64()), (Some(128), Some(256)), "{r}");
    assert_eq!(row("barrier_outside_branch")["verdict"], "confirmed");
    // `n` = 1000 in Cargo.toml: no thread of a 256-thread block returns early, and the finding
    // says it needs 1 ≤ `n` ≤ 255
    let r = row("early_return_barrier");
    assert_eq!(r["verdict"], "condition not met", "{r}");
    assert!(recs.iter().filter(|r| r["space"] == "barrier").all(|r| r["verdict"] != "MISMATCH"));
    // with n = 100, threads 100..255 return before the barrier
    example_build();
    let out = gpucheck(
        &["confirm", "-q", "--message-format", "json", "--kernel", "early_return_barrier", "--arg", "n=100"],
        &repo().join("example-kernels"),
    );
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    let rows = json_lines(&out.stdout);
    let b = rows.iter().find(|r| r["space"] == "barrier").unwrap();
    assert_eq!((b["verdict"].as_str(), b["observed"]["fewest_threads"].as_u64()), (Some("BARRIER DIVERGENCE"), Some(100)), "{b}");
}

/// A struct passed by value is filled by field: from a nested table in
/// Cargo.toml (`p = { src = "f32[2048]", … }`) or `--arg p.n=…`; a missing
/// field is named.
#[test]
fn struct_parameters_are_filled_by_field() {
    example_build();
    let ek = repo().join("example-kernels");
    let out = gpucheck(&["confirm", "-q", "--message-format", "json", "--kernel", "gather_struct", "--arg", "p.n=512"], &ek);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let rows = json_lines(&out.stdout);
    let typical: Vec<u64> = rows.iter().filter(|r| r["space"] == "global").filter_map(|r| r["observed"]["typical"].as_u64()).collect();
    // the load reads every other float (8 sectors per request), the store writes contiguous ones (4)
    assert_eq!(typical, [8, 4], "{rows:?}");
    // 512 threads pass `i < p.n`: 16 warp requests per access
    assert!(rows.iter().filter(|r| r["space"] == "global").all(|r| r["observed"]["requests"] == 16), "{rows:?}");
    let out = gpucheck(
        &[
            "confirm",
            "-q",
            "--ptx",
            example_build().2.to_str().unwrap(),
            "--kernel",
            "gather_struct",
            "--block",
            "256",
            "--grid",
            "4",
            "--manifest-path",
            ek.join("Cargo.toml").to_str().unwrap(),
            "--arg",
            "p.src=2.5",
        ],
        &ek,
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("warning: skipping kernel `gather_struct`: field `p.src` is a pointer (`*const f32`): give a buffer such as `p.src=f32[1024]`, not `2.5`"), "{err}");
}

/// Two calls of one inlined helper are told apart: each row of the helper's
/// code names the call site it was inlined at (JSON `inlined_at`).
#[test]
fn call_sites_of_an_inlined_helper_are_told_apart() {
    let rows: Vec<&serde_json::Value> =
        records().iter().filter(|r| r["kernel"] == "twice_inlined" && r["space"] == "global" && r["line"] == 118).collect();
    let sites: std::collections::BTreeSet<u64> = rows.iter().filter_map(|r| r["inlined_at"]["line"].as_u64()).collect();
    assert_eq!(sites.into_iter().collect::<Vec<_>>(), [126, 127], "{rows:?}");
}

/// Every access group's footprint (the union of the sectors a warp's loads
/// of one array touch in one loop iteration) is what the interpreter sees.
#[test]
fn every_group_footprint_is_confirmed() {
    let groups: Vec<&serde_json::Value> = records().iter().filter(|r| r["space"] == "group" && !r["observed"].is_null()).collect();
    assert!(groups.len() >= 10, "{}", groups.len());
    for r in &groups {
        // a loop stepping the loads off their first alignment: the run's mode may be the later iterations'
        if r["verdict"] == "confirmed (later iterations)" {
            assert_eq!(r["observed"]["typical"], r["predicted"]["later_group_sectors"], "{r}");
            continue;
        }
        assert_eq!(r["observed"]["typical"], r["predicted"]["group_sectors"], "{r}");
        assert_eq!(r["verdict"], "confirmed", "{r}");
    }
    // `heavy`'s four loads a[(t + k) % n] in a loop stepping k by 4 (16 bytes): aligned in
    // even iterations, 5 sectors in odd ones; the run alternates
    let h = groups.iter().find(|r| r["kernel"] == "accepted_divergence").expect("heavy's group");
    assert_eq!((h["predicted"]["group_sectors"].as_u64(), h["predicted"]["later_group_sectors"].as_u64()), (Some(4), Some(5)), "{h}");
    let kernel = |k: &str| groups.iter().find(|r| r["kernel"] == k).unwrap_or_else(|| panic!("no group row for {k}"));
    // 3 of 7 fields: 28 sectors per warp where 12 would do; 18-byte blocks read field by field: ideal
    assert_eq!(
        (kernel("aos_norms")["predicted"]["group_sectors"].as_u64(), kernel("aos_norms")["predicted"]["group_ideal_sectors"].as_u64()),
        (Some(28), Some(12))
    );
    let pb = &kernel("packed_blocks")["predicted"];
    assert_eq!(pb["group_sectors"], pb["group_ideal_sectors"]);
}
