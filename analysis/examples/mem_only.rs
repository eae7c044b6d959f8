//! Time the memory analysis alone on one PTX file (development aid).
use gpucheck_analysis::*;
fn main() {
    let p = std::env::args().nth(1).unwrap();
    let src = String::from_utf8_lossy(&std::fs::read(p).unwrap()).into_owned();
    let m = ptx::parse(&src).unwrap();
    let fns = ir::lower(&m);
    let sums = divergence::Summaries::compute(&fns);
    let sm = srcmap::SourceMap::new(&m, &fns);
    let divs: Vec<_> = fns.iter().map(|f| divergence::Divergence::analyze(f, &sums)).collect();
    let t = std::time::Instant::now();
    for _ in 0..5 {
        for (k, f) in fns.iter().enumerate() {
            let shape = shape_for(f.func, &Options::default());
            let ctx = lints::Ctx::new(f, &divs[k], &sums, &shape, &sm, &|_| true);
            std::hint::black_box(ctx.memory().len());
        }
    }
    eprintln!("memory: {:?} per run", t.elapsed() / 5);
}
