//! Memory access predictions on the example kernels: every access's
//! predicted sectors per request and bank-conflict degree equal a
//! brute-force reference that evaluates each lane's address from the PTX
//! (its own counting code, no affine shortcut); plus the JSON metrics and
//! `--all-accesses` records a user sees.

use gpucheck_analysis::divergence::eval::samples;
use gpucheck_analysis::divergence::eval::{EvalErr, Evaluator};
use gpucheck_analysis::divergence::{Divergence, Summaries};
use gpucheck_analysis::ir::space::Space;
use gpucheck_analysis::ir::{self, ValueDef, ValueId};
use gpucheck_analysis::{ptx, shape_for, Options, Shape};
use gpucheck_tests::*;
use std::collections::HashMap;

fn run() -> &'static Vec<serde_json::Value> {
    &example_build().0
}

fn example_ptx() -> String {
    example_build().1.clone()
}

/// The launch shapes of example-kernels/Cargo.toml (package default and per kernel).
fn options() -> Options {
    let toml = std::fs::read_to_string(repo().join("example-kernels/Cargo.toml")).unwrap();
    let mut o = Options::default();
    let mut section = String::new();
    for line in toml.lines() {
        let l = line.trim();
        if l.starts_with('[') {
            section = l.trim_matches(['[', ']']).to_string();
        } else if let Some(v) = l.strip_prefix("block = ") {
            let b: Vec<u32> = v.trim_matches(['[', ']']).split(',').map(|x| x.trim().parse().unwrap()).collect();
            let b = [b[0], b[1], b[2]];
            match section.strip_prefix("package.metadata.gpucheck.kernels.") {
                Some(k) => {
                    o.kernel_blocks.insert(k.to_string(), b);
                }
                None => o.package_block = Some(b),
            }
        }
    }
    o
}

/// Per-thread address of an access, evaluated from the PTX: pointer
/// parameters at 0 (256-aligned), other parameters 1024, block index 0,
/// loop counters at their first value.
fn lane_addresses(f: &ir::FunctionIr<'_>, d: &Divergence, shape: &Shape, v: ValueId) -> Option<Vec<i64>> {
    let mut ev = Evaluator::new(f, d, shape.block, shape.lanes());
    ev.first_iteration = true;
    let mut leaves: HashMap<ValueId, i64> = HashMap::new();
    for _ in 0..16 {
        ev.set_leaves(leaves.clone());
        match ev.values(v) {
            Ok(x) => return Some(x.to_vec()),
            Err(EvalErr::Leaf(x)) => {
                let val = match f.ssa.values[x] {
                    ValueDef::Phi(_) => samples(f, &ev, x).first().copied().unwrap_or(1024),
                    ValueDef::Entry(_) => 0,
                    // allocations (pointers, by the space inference) are 256-aligned
                    _ if matches!(f.spaces.definite(x), Space::Global | Space::Shared | Space::Generic) => 0,
                    _ => 1024,
                };
                leaves.insert(x, val);
            }
            Err(EvalErr::Opaque) => return None,
        }
    }
    None
}

fn reference_sectors(addrs: &[i64], width: i64) -> (u32, u32) {
    let mut secs = std::collections::BTreeSet::new();
    let mut bytes = std::collections::BTreeSet::new();
    for &a in addrs {
        for b in a..a + width {
            secs.insert(b.div_euclid(32));
            bytes.insert(b);
        }
    }
    (secs.len() as u32, bytes.len().div_ceil(32) as u32)
}

fn reference_conflict(addrs: &[i64], width: i64) -> u32 {
    let group = match width {
        8 => 16,
        16 => 8,
        _ => 32,
    };
    addrs
        .chunks(group)
        .map(|g| {
            let mut words_per_bank: HashMap<i64, std::collections::BTreeSet<i64>> = HashMap::new();
            for &a in g {
                for w in a.div_euclid(4)..=(a + width - 1).div_euclid(4) {
                    words_per_bank.entry(w.rem_euclid(32)).or_default().insert(w);
                }
            }
            words_per_bank.values().map(|s| s.len() as u32).max().unwrap_or(0)
        })
        .max()
        .unwrap_or(0)
}

#[test]
fn every_prediction_matches_a_brute_force_reference() {
    let src = example_ptx();
    let m = ptx::parse(&src).unwrap();
    let fns = ir::lower(&m);
    let sums = Summaries::compute(&fns);
    let opts = options();
    let mut checked = 0;
    let mut unpredictable = 0;
    for f in &fns {
        let d = Divergence::analyze(f, &sums);
        let shape = shape_for(f, &opts);
        let evals = gpucheck_analysis::memory::Evals::new(f, &d, &shape);
        for a in gpucheck_analysis::memory::accesses(f, &d) {
            let all = vec![true; shape.threads()];
            let predicted = gpucheck_analysis::memory::predict(&evals, &a, &all, 0);
            let reference = a.addr_value.and_then(|v| lane_addresses(f, &d, &shape, v));
            let where_ = format!("{} PTX line {}", f.func.name, f.insts[a.inst].ast.pos.line);
            // every address the reference can evaluate has a prediction; the affine
            // model also covers values merged by phis, which per-lane evaluation cannot
            let (Some(p), Some(addrs)) = (&predicted, &reference) else {
                assert!(reference.is_none(), "{where_}: no prediction for an address the reference evaluates");
                unpredictable += 1;
                continue;
            };
            let addrs: Vec<i64> = addrs.iter().map(|x| x + a.offset).collect();
            let per_warp: Vec<&[i64]> = addrs.chunks(32).collect();
            match a.space {
                Space::Global => {
                    let r = reference_sectors(per_warp[0], a.width as i64);
                    assert_eq!((p.sectors.0, p.ideal), r, "{where_}: sectors/ideal");
                }
                _ => {
                    let r = per_warp.iter().map(|w| reference_conflict(w, a.width as i64)).max().unwrap();
                    assert_eq!(p.conflict.1, r, "{where_}: conflict degree");
                }
            }
            checked += 1;
        }
    }
    assert!(checked >= 60, "only {checked} accesses checked");
    // gathers and phi-merged addresses only
    eprintln!("checked {checked}, unevaluable {unpredictable}");
    assert!(unpredictable < checked / 2, "{unpredictable} accesses the reference cannot evaluate");
}

fn finding<'a>(kernel: &str, lint: &str) -> &'a serde_json::Value {
    run()
        .iter()
        .find(|m| m["reason"] == "compiler-message" && m["gpucheck"]["kernel"] == kernel && m["gpucheck"]["lint"] == lint)
        .unwrap_or_else(|| panic!("no {lint} for {kernel}"))
}

#[test]
fn findings_carry_the_numbers() {
    let g = &finding("strided_gather", "uncoalesced_global_access")["gpucheck"];
    assert_eq!(
        (g["sectors_per_request"].as_i64(), g["ideal_sectors_per_request"].as_i64(), g["requests"].as_i64()),
        (Some(32), Some(4), Some(8))
    );
    let aos = &finding("aos_field_read", "uncoalesced_global_access");
    assert_eq!(aos["gpucheck"]["sectors_per_request"], 16);
    assert_eq!(aos["message"]["message"], "16 sectors per warp request, ideal 4: each lane reads 16 bytes apart");
    assert_eq!(aos["message"]["spans"][0]["label"], "stride 4 × 4 bytes along threadIdx.x");
    let col = &finding("shared_column_unpadded", "shared_bank_conflict");
    assert_eq!(col["gpucheck"]["conflict_degree"], 32);
    assert!(col["message"]["children"].to_string().contains("pad the row to 33 words"));
    assert_eq!(finding("reduce_interleaved", "shared_bank_conflict")["gpucheck"]["conflict_degree"], 2);
    // 32×8 blocks: the naive transpose's column write
    let t = &finding("transpose_naive", "uncoalesced_global_access");
    assert_eq!(t["gpucheck"]["sectors_per_request"], 32);
    assert!(t["message"]["children"].to_string().contains("block shape 32×8×1"));
    let st = &finding("stencil3", "shared_memory_opportunity")["gpucheck"];
    assert_eq!((st["requested_bytes"].as_i64(), st["footprint_bytes"].as_i64()), (Some(3072), Some(1032)));
}

#[test]
fn every_access_has_a_record() {
    let recs: Vec<&serde_json::Value> = run().iter().filter(|m| m["reason"] == "gpucheck-access").collect();
    assert!(recs.len() >= 60);
    let rec = |kernel: &str, space: &str, kind: &str| -> &serde_json::Value {
        recs.iter()
            .copied()
            .find(|r| r["kernel"] == kernel && r["space"] == space && r["kind"] == kind)
            .unwrap_or_else(|| panic!("no {space} {kind} record for {kernel}"))
    };
    // clean twins carry their (good) numbers too
    let f64copy = rec("copy_f64", "global", "load");
    assert_eq!(
        (f64copy["sectors_per_request"].as_i64(), f64copy["ideal_sectors_per_request"].as_i64(), f64copy["width"].as_i64()),
        (Some(8), Some(8), Some(8))
    );
    let shifted = rec("shifted_read", "global", "load");
    assert_eq!((shifted["sectors_per_request"].as_i64(), shifted["ideal_sectors_per_request"].as_i64()), (Some(5), Some(4)));
    let padded = recs.iter().find(|r| r["kernel"] == "shared_column_padded" && r["space"] == "shared" && r["kind"] == "load").unwrap();
    assert_eq!(padded["conflict_degree"], 1);
    assert_eq!(rec("gather", "global", "load")["kernel"], "gather");
    assert!(recs.iter().any(|r| r["kernel"] == "gather" && r["predictable"] == false));
    // reduce_sequential: `if t < half` with half = 128 in the first iteration: 4 of 8 warps
    let seq =
        recs.iter().find(|r| r["kernel"] == "reduce_sequential" && r["space"] == "shared" && r["kind"] == "store" && r["requests"] == 4);
    assert!(seq.is_some(), "{:?}", recs.iter().filter(|r| r["kernel"] == "reduce_sequential").collect::<Vec<_>>());
    // every record points at a Rust line of the example kernels
    assert!(recs.iter().all(|r| r["file"].as_str().is_some_and(|f| f.starts_with("src/"))));
}

#[test]
fn the_threshold_is_configurable() {
    let out = gpucheck(&["--message-format", "json", "-q", "--coalescing-threshold", "1.2"], &repo().join("example-kernels"));
    let msgs = json_lines(&out.stdout);
    assert!(msgs.iter().any(|m| m["gpucheck"]["kernel"] == "shifted_read" && m["gpucheck"]["lint"] == "uncoalesced_global_access"));
    let bad = gpucheck(&["--coalescing-threshold", "0.5", "ptx", "x.ptx"], &repo());
    assert_eq!(bad.status.code(), Some(2));
}
