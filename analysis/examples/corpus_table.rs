//! The corpus table of the closing notes: per PTX file, producer, kernels,
//! instructions, findings by lint and analysis time (parse + check, best
//! of 5 runs). `cargo run --release -p gpucheck-analysis --example corpus_table [DIR]`.
mod common;
use gpucheck_analysis::*;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

fn main() {
    let files = common::corpus_files();
    println!("| file | producer | kernels | instructions | findings by lint | time (ms) |");
    println!("|---|---|---:|---:|---|---:|");
    let mut total = Duration::ZERO;
    let mut insts = 0;
    for p in files {
        let src = String::from_utf8_lossy(&std::fs::read(&p).unwrap()).into_owned();
        let mut best = Duration::MAX;
        let mut report = None;
        for _ in 0..5 {
            let t = Instant::now();
            let r = check(&src, &Options::default(), &|_| true).unwrap();
            best = best.min(t.elapsed());
            report = Some(r);
        }
        let r = report.unwrap();
        total += best;
        insts += r.instructions;
        // counted as the command line reports them: one per lint, position and message
        let mut seen = std::collections::HashSet::new();
        let mut by: BTreeMap<&str, usize> = BTreeMap::new();
        for f in &r.findings {
            let pos = f.span.as_ref().map(|s| (s.file.clone(), s.line, s.col)).unwrap_or(("".into(), f.ptx_line, f.ptx_col));
            if seen.insert((f.lint.name, pos, f.message.clone())) {
                *by.entry(f.lint.name).or_default() += 1;
            }
        }
        let lints: Vec<String> = by.iter().map(|(k, v)| format!("{k} {v}")).collect();
        println!(
            "| {} | {} | {} | {} | {} | {:.2} |",
            p.file_name().unwrap().to_string_lossy(),
            producer(&src),
            r.kernels,
            r.instructions,
            if lints.is_empty() { "—".into() } else { lints.join(", ") },
            best.as_secs_f64() * 1e3
        );
    }
    println!("\ntotal: {insts} instructions, {:.1} ms", total.as_secs_f64() * 1e3);
}
