//! Criterion benchmarks: parse throughput (MB/s) and whole-module analysis
//! time, on the largest corpus file and on a generated module of over one
//! million instructions.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use gpucheck_analysis::{check_module, ptx, synth, Options};
use std::time::Duration;

fn corpus_largest() -> (String, String) {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared/corpus/ptx");
    let mut best = (0u64, std::path::PathBuf::new());
    for e in std::fs::read_dir(dir).expect("../shared/corpus/ptx") {
        let p = e.unwrap().path();
        let len = p.metadata().unwrap().len();
        if p.extension().is_some_and(|x| x == "ptx") && len > best.0 {
            best = (len, p);
        }
    }
    let name = best.1.file_name().unwrap().to_string_lossy().to_string();
    (name, String::from_utf8_lossy(&std::fs::read(&best.1).unwrap()).into_owned())
}

fn benches(c: &mut Criterion) {
    let (name, corpus) = corpus_largest();
    let big = synth::module(1000, 60); // ≈ 1.04M instructions
    let big_insts = ptx::parse(&big).unwrap().instruction_count();
    assert!(big_insts >= 1_000_000, "generated module has only {big_insts} instructions");
    let corpus_insts = ptx::parse(&corpus).unwrap().instruction_count();
    eprintln!("{name}: {} bytes, {corpus_insts} instructions; generated: {} bytes, {big_insts} instructions", corpus.len(), big.len());

    let mut g = c.benchmark_group("parse");
    g.sample_size(10).measurement_time(Duration::from_secs(8));
    for (label, src) in [(name.as_str(), &corpus), ("generated-1M", &big)] {
        g.throughput(Throughput::Bytes(src.len() as u64));
        g.bench_with_input(BenchmarkId::from_parameter(label), src, |b, s| b.iter(|| ptx::parse(s).unwrap()));
    }
    g.finish();

    let mut g = c.benchmark_group("analyse");
    g.sample_size(10).measurement_time(Duration::from_secs(15));
    for (label, src, n) in [(name.as_str(), &corpus, corpus_insts), ("generated-1M", &big, big_insts)] {
        let m = ptx::parse(src).unwrap();
        g.throughput(Throughput::Elements(n as u64));
        g.bench_function(BenchmarkId::from_parameter(label), |b| b.iter(|| check_module(&m, &Options::default(), &|_| true)));
    }
    g.finish();
}

criterion_group!(analysis, benches);
criterion_main!(analysis);
