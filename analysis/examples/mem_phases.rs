//! Peak heap by phase on one module (generated with N kernels, or a file):
//! parse, lower, then for the largest function divergence, the kernel's
//! facts (predictions, races) and lints (development aid).
use gpucheck_analysis::meter::{self, PeakAlloc};
use gpucheck_analysis::*;

#[global_allocator]
static A: PeakAlloc = PeakAlloc;

fn main() {
    let k: usize = std::env::args().nth(1).map(|s| s.parse().unwrap()).unwrap_or(1);
    let src = match std::env::args().nth(2) {
        Some(p) => std::fs::read_to_string(p).unwrap(),
        None => synth::module(k, 60),
    };
    let base = meter::live();
    meter::reset();
    let m = ptx::parse(&src).unwrap();
    let n = m.instruction_count();
    let show = |what: &str| {
        println!(
            "{what:12} live {:>9} B  peak {:>9} B  ({:>5} B/inst peak)",
            meter::live() - base,
            meter::peak() - base,
            (meter::peak() - base) / n
        )
    };
    show("parse");
    let fns = ir::lower(&m);
    show("lower");
    let sums = divergence::Summaries::compute(&fns);
    let sm = srcmap::SourceMap::new(&m, &fns);
    let f = fns.iter().max_by_key(|f| f.insts.len()).unwrap();
    println!("largest function: {} insts", f.insts.len());
    meter::reset();
    let d = divergence::Divergence::analyze(f, &sums);
    show("divergence");
    let shape = shape_for(f, &Options::default());
    meter::reset();
    let facts = facts::KernelFacts::compute(f, &d, &sums, &shape);
    show("facts");
    meter::reset();
    let cx = lints::LintCx::new(&facts, &sm, &|_| true, 2.0);
    let r = lints::run(&cx);
    show("lints");
    println!("{} findings", r.len());
}
