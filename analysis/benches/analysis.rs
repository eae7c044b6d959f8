//! Criterion benchmarks: parse throughput (MB/s) and whole-module analysis
//! time, on the largest corpus file and on a generated module of over one
//! million instructions; scaling with module size; the generated cliff
//! shapes at two sizes each (cost per instruction flat as N doubles); one
//! corpus file of each class. `cargo bench -p gpucheck-analysis --bench
//! analysis -- cliffs` runs one group.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use gpucheck_analysis::divergence::{Divergence, Summaries};
use gpucheck_analysis::facts::KernelFacts;
use gpucheck_analysis::{check_module, ir, ptx, shape_for, synth, Options};
use std::time::Duration;

/// The PTX corpus (`GPUCHECK_CORPUS`, else `../shared/corpus/ptx` beside
/// the checkout), or `None` after saying that the corpus benchmarks are
/// skipped.
fn corpus_dir() -> Option<std::path::PathBuf> {
    let dir = std::env::var_os("GPUCHECK_CORPUS")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/corpus/ptx"));
    if !dir.is_dir() {
        eprintln!("no PTX corpus at {} (set GPUCHECK_CORPUS): the corpus benchmarks are skipped", dir.display());
        return None;
    }
    Some(dir)
}

/// The largest file of the PTX corpus, when there is one.
fn corpus_largest() -> Option<(String, String)> {
    let entries = std::fs::read_dir(corpus_dir()?).ok()?;
    let best = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "ptx"))
        .max_by_key(|p| p.metadata().map(|m| m.len()).unwrap_or(0))?;
    let name = best.file_name()?.to_string_lossy().to_string();
    Some((name, String::from_utf8_lossy(&std::fs::read(&best).ok()?).into_owned()))
}

fn benches(c: &mut Criterion) {
    let big = synth::module(1000, 60); // ≈ 1.04M instructions
    let big_insts = ptx::parse(&big).unwrap().instruction_count();
    assert!(big_insts >= 1_000_000, "generated module has only {big_insts} instructions");
    eprintln!("generated: {} bytes, {big_insts} instructions", big.len());
    let mut inputs = vec![("generated-1M".to_string(), big)];
    if let Some((name, corpus)) = corpus_largest() {
        eprintln!("{name}: {} bytes, {} instructions", corpus.len(), ptx::parse(&corpus).unwrap().instruction_count());
        inputs.insert(0, (name, corpus));
    }

    let mut g = c.benchmark_group("parse");
    g.sample_size(10).measurement_time(Duration::from_secs(8));
    for (label, src) in &inputs {
        g.throughput(Throughput::Bytes(src.len() as u64));
        g.bench_with_input(BenchmarkId::from_parameter(label), src, |b, s| b.iter(|| ptx::parse(s).unwrap()));
    }
    g.finish();

    let mut g = c.benchmark_group("analyse");
    g.sample_size(10).measurement_time(Duration::from_secs(15));
    for (label, src) in &inputs {
        let m = ptx::parse(src).unwrap();
        let n = m.instruction_count();
        g.throughput(Throughput::Elements(n as u64));
        g.bench_function(BenchmarkId::from_parameter(label), |b| b.iter(|| check_module(&m, &Options::default(), &|_| true)));
    }
    g.finish();
}

/// A shared-memory-heavy module (140 kernels, ≈166 k instructions, ≈42 k
/// shared accesses, two barriers a round, an unrolled 64-load interval per
/// kernel): the whole check. Compare with `ptxas -arch=sm_80` on the same
/// file (`cargo run --release -p gpucheck-analysis --example gen -- 140 80 shared`).
fn shared_heavy(c: &mut Criterion) {
    let src = synth::shared_module(140, 80);
    let m = ptx::parse(&src).unwrap();
    let n = m.instruction_count();
    eprintln!("shared-heavy: {} bytes, {n} instructions", src.len());
    let mut g = c.benchmark_group("shared-heavy");
    g.sample_size(10).measurement_time(Duration::from_secs(10));
    g.throughput(Throughput::Elements(n as u64));
    g.bench_function("check", |b| b.iter(|| check_module(&m, &Options::default(), &|_| true)));
    g.finish();
}

/// The per-kernel facts alone (branch splits, access sites, active lanes,
/// predictions, races), per kernel of the largest corpus file (without the
/// corpus, of a generated module); IR and divergence are set up once.
fn facts(c: &mut Criterion) {
    let (name, corpus) = corpus_largest().unwrap_or_else(|| ("generated-50k".to_string(), synth::module(48, 60)));
    let m = ptx::parse(&corpus).unwrap();
    let fns = ir::lower(&m);
    let sums = Summaries::compute(&fns);
    let divs: Vec<Divergence> = fns.iter().map(|f| Divergence::analyze(f, &sums)).collect();
    let shapes: Vec<_> = fns.iter().map(|f| shape_for(f, &Options::default())).collect();
    let insts: usize = fns.iter().map(|f| f.insts.len()).sum();
    eprintln!("{name}: {} functions, {insts} instructions", fns.len());
    let mut g = c.benchmark_group("facts");
    g.sample_size(10).measurement_time(Duration::from_secs(8));
    g.throughput(Throughput::Elements(insts as u64));
    g.bench_function(BenchmarkId::from_parameter(&name), |b| {
        b.iter(|| {
            let mut n = 0;
            for (k, f) in fns.iter().enumerate() {
                let facts = KernelFacts::compute(f, &divs[k], &sums, &shapes[k]);
                n += facts.accesses.len() + facts.races.len();
            }
            n
        })
    });
    g.finish();
}

/// Analysis time against module size, generated modules of about 1k, 10k,
/// 100k and 1M instructions; after measuring, fits time = a + b·n to
/// criterion's mean estimates and prints the slope and R².
fn scaling(c: &mut Criterion) {
    let sizes = [1usize, 10, 96, 960];
    let mut points = Vec::new();
    let mut g = c.benchmark_group("scaling");
    g.sample_size(10).measurement_time(Duration::from_secs(10)).warm_up_time(Duration::from_secs(1));
    for k in sizes {
        let src = synth::module(k, 60);
        let m = ptx::parse(&src).unwrap();
        let n = m.instruction_count();
        points.push(n);
        g.throughput(Throughput::Elements(n as u64));
        g.bench_function(BenchmarkId::from_parameter(n), |b| b.iter(|| check_module(&m, &Options::default(), &|_| true)));
    }
    g.finish();
    let mut xy = Vec::new();
    for n in points {
        let Some(t) = mean_seconds("scaling", &n.to_string()) else { continue };
        xy.push((n as f64, t));
    }
    if xy.len() >= 2 {
        let len = xy.len() as f64;
        let (mx, my) = (xy.iter().map(|p| p.0).sum::<f64>() / len, xy.iter().map(|p| p.1).sum::<f64>() / len);
        let sxy: f64 = xy.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
        let sxx: f64 = xy.iter().map(|p| (p.0 - mx).powi(2)).sum();
        let b = sxy / sxx;
        let a = my - b * mx;
        let ss_res: f64 = xy.iter().map(|p| (p.1 - a - b * p.0).powi(2)).sum();
        let ss_tot: f64 = xy.iter().map(|p| (p.1 - my).powi(2)).sum();
        eprintln!(
            "scaling fit over {:?}: time = {:.3} ms + {:.3} µs × instructions, R² = {:.5}",
            xy,
            a * 1e3,
            b * 1e6,
            1.0 - ss_res / ss_tot
        );
    }
}

/// Criterion's mean estimate (seconds) of benchmark `id` in `group`, once
/// measured (criterion writes under the target folder, `CARGO_TARGET_DIR`
/// when set).
fn mean_seconds(group: &str, id: &str) -> Option<f64> {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../target"));
    let est = std::fs::read_to_string(target.join("criterion").join(group).join(id).join("new/estimates.json")).ok()?;
    let v: serde_json::Value = serde_json::from_str(&est).ok()?;
    Some(v["mean"]["point_estimate"].as_f64()? / 1e9)
}

/// The shapes that once cost far more than `ptxas` (issue 28's table:
/// unrolled accesses through one pointer, jump tables, chains of
/// diamonds, many tiny kernels), each at half its size and at its size:
/// the whole check. After measuring, prints each shape's cost per
/// instruction at both sizes and their ratio, which stays near 1 when the
/// cost is linear (`GROWS` past 1.5). Compare with `ptxas -arch=sm_80` on
/// the same files (`cargo run --release -p gpucheck-analysis --example gen -- cliffs DIR`).
fn cliffs(c: &mut Criterion) {
    let mut measured = Vec::new();
    let mut g = c.benchmark_group("cliffs");
    g.sample_size(10).measurement_time(Duration::from_secs(5)).warm_up_time(Duration::from_millis(500));
    for (shape, n) in synth::Cliff::ALL {
        for size in [n / 2, n] {
            let src = synth::cliff(shape, size);
            let m = ptx::parse(&src).unwrap();
            let insts = m.instruction_count();
            let id = format!("{}-{size}", shape.name());
            g.throughput(Throughput::Elements(insts as u64));
            g.bench_function(BenchmarkId::from_parameter(&id), |b| b.iter(|| check_module(&m, &Options::default(), &|_| true)));
            measured.push((shape, size, id, insts));
        }
    }
    g.finish();
    for pair in measured.chunks(2) {
        let [(shape, half, a, na), (_, full, b, nb)] = pair else { continue };
        let (Some(ta), Some(tb)) = (mean_seconds("cliffs", a), mean_seconds("cliffs", b)) else { continue };
        let (pa, pb) = (ta / *na as f64, tb / *nb as f64);
        let ratio = pb / pa;
        eprintln!(
            "{:18} {half:>7} → {full:>7}: {:.3} → {:.3} µs per instruction, ×{ratio:.2}{}",
            shape.name(),
            pa * 1e6,
            pb * 1e6,
            if ratio > 1.5 { "  GROWS" } else { "" }
        );
    }
}

/// The whole check on one file of each class of the corpus issue 28
/// measured against `ptxas` (many small functions; unrolled histogram
/// code; one large Rust kernel crate; a reduction with a grid fence; a
/// one-kernel file), when the corpus is there.
fn corpus_classes(c: &mut Criterion) {
    let Some(dir) = corpus_dir() else { return };
    let mut g = c.benchmark_group("corpus");
    g.sample_size(10).measurement_time(Duration::from_secs(5));
    for name in [
        "gtcasl-gpuocelot-complex",
        "gtcasl-gpuocelot-histogram",
        "dimforge-sparkl-sparkl2d-kernels",
        "gtcasl-gpuocelot-threadFenceReduction",
        "rust-cuda-add",
    ] {
        let Ok(bytes) = std::fs::read(dir.join(format!("{name}.ptx"))) else {
            eprintln!("{name}.ptx is not in the corpus: skipped");
            continue;
        };
        let src = String::from_utf8_lossy(&bytes).into_owned();
        let m = ptx::parse(&src).unwrap();
        g.throughput(Throughput::Bytes(src.len() as u64));
        g.bench_function(BenchmarkId::from_parameter(name), |b| b.iter(|| check_module(&m, &Options::default(), &|_| true)));
    }
    g.finish();
}

criterion_group!(analysis, benches, facts, scaling, shared_heavy, cliffs, corpus_classes);
criterion_main!(analysis);
