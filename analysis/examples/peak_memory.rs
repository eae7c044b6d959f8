//! Peak heap of parse + check relative to PTX size, generated modules of 1k
//! to 1M instructions and every corpus file (numbers for the notes).
//! `cargo run --release -p gpucheck-analysis --example peak_memory [--replay] [FILE…]`
//! (files given: those alone; `--replay`: as the binary checks, with the
//! replays of the correctness findings' witnesses and without the
//! per-site records, `Options::findings_only`).
mod common;
use gpucheck_analysis::meter::{self, PeakAlloc};
use gpucheck_analysis::{check, synth, Options};

#[global_allocator]
static A: PeakAlloc = PeakAlloc;

fn measure(label: &str, src: &str, replay: bool) -> f64 {
    meter::reset();
    let before = meter::live();
    let r = check(src, &Options { replay, findings_only: replay, ..Options::default() }, &|_| true).unwrap();
    let peak = meter::peak() - before;
    let x = peak as f64 / src.len() as f64;
    println!("{label:55} {:>9} insts {:>11} B PTX {:>12} B peak {x:5.1}×", r.instructions, src.len(), peak);
    x
}

fn main() {
    let mut worst: f64 = 0.0;
    let mut given: Vec<String> = std::env::args().skip(1).collect();
    let replay = given.first().is_some_and(|a| a == "--replay");
    if replay {
        given.remove(0);
    }
    if !given.is_empty() {
        for p in given {
            let src = String::from_utf8_lossy(&std::fs::read(&p).unwrap()).into_owned();
            worst = worst.max(measure(&p, &src, replay));
        }
        println!("worst: {worst:.1}×");
        return;
    }
    for kernels in [1, 10, 96, 960] {
        worst = worst.max(measure(&format!("generated, {kernels} kernels"), &synth::module(kernels, 60), replay));
    }
    let files = common::corpus_files();
    for p in files {
        let src = String::from_utf8_lossy(&std::fs::read(&p).unwrap()).into_owned();
        worst = worst.max(measure(&p.file_name().unwrap().to_string_lossy(), &src, replay));
    }
    println!("worst: {worst:.1}×");
}
