//! Time each phase of the analysis on one PTX file (development aid).
use gpucheck_analysis::*;
use std::time::Instant;
fn main() {
    let p = std::env::args().nth(1).unwrap();
    let src = String::from_utf8_lossy(&std::fs::read(p).unwrap()).into_owned();
    let t = Instant::now();
    let m = ptx::parse(&src).unwrap();
    eprintln!("parse {:?}", t.elapsed());
    let t = Instant::now();
    let fns = ir::lower(&m);
    eprintln!("lower {:?} ({} fns)", t.elapsed(), fns.len());
    let t = Instant::now();
    let sums = divergence::Summaries::compute(&fns);
    let sm = srcmap::SourceMap::new(&m, &fns);
    eprintln!("summaries+srcmap {:?}", t.elapsed());
    let (mut ta, mut tl) = (0.0, 0.0);
    let mut worst = (0.0, String::new(), 0usize, 0usize, 0usize);
    for f in &fns {
        let t = Instant::now();

        let d = divergence::Divergence::analyze(f, &sums);
        if f.insts.len() > 10000 {
            eprintln!("{}: insts {} phis {} branches {}", f.func.name, f.insts.len(), f.ssa.phis.len(), d.branches.len());
        }
        let a = t.elapsed().as_secs_f64();
        ta += a;
        if a > worst.0 {
            worst = (a, f.func.name.to_string(), f.insts.len(), f.cfg.len(), f.cfg.loops.len());
        }
        let t = Instant::now();
        let shape = shape_for(f, &Options::default());
        let facts = facts::KernelFacts::compute(f, &d, &sums, &shape);
        let cx = lints::LintCx::new(&facts, &sm, &|_| true, 2.0);
        let _ = lints::run(&cx);
        tl += t.elapsed().as_secs_f64();
    }
    eprintln!("divergence {:.1} ms, facts and lints {:.1} ms; slowest {:?}", ta * 1e3, tl * 1e3, worst);
}
