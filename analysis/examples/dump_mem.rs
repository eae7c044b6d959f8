//! Print memory accesses, their address values and predictions (development aid).
use gpucheck_analysis::*;
fn main() {
    let p = std::env::args().nth(1).unwrap();
    let want = std::env::args().nth(2);
    let src = std::fs::read_to_string(p).unwrap();
    let m = ptx::parse(&src).unwrap();
    let fns = ir::lower(&m);
    let sums = divergence::Summaries::compute(&fns);
    for f in &fns {
        if want.as_deref().is_some_and(|w| w != f.func.name) {
            continue;
        }
        let d = divergence::Divergence::analyze(f, &sums);
        let shape = shape_for(f.func, &Options::default());
        if std::env::var_os("VALUES").is_some() {
            values_of(f, &d);
        }
        let facts = facts::KernelFacts::compute(f, &d, &sums, &shape);
        for x in &facts.accesses {
            let (a, p) = (&x.access, &x.prediction);
            println!("{} ptx {} {:?} {:?} w{} addr {:?}", f.func.name, f.insts[a.inst].ast.pos.line, a.kind, a.space, a.width, a.addr);
            if let Some(divergence::AbsVal::Affine { c, .. }) = Some(a.addr) {
                for x in c {
                    if let divergence::Coef::Lin { sym, .. } = x {
                        println!("   sym {sym} = {:?} ({:?})", memory::symbol_value(f, &d, &shape, sym), f.ssa.values.get(sym as usize));
                        let ev = divergence::eval::Evaluator::new(f, &d, shape.block, shape.lanes()[..1].to_vec());
                        println!("   eval: {:?}", ev.values(sym));
                        if let Err(divergence::eval::EvalErr::Leaf(x)) = ev.values(sym) {
                            println!("   samples({x}) = {:?}; def {:?}", divergence::eval::samples(f, &ev, x), f.ssa.values[x as usize]);
                            if let ir::ValueDef::Phi(p) = f.ssa.values[x as usize] {
                                let ph = &f.ssa.phis[p as usize];
                                println!(
                                    "   phi block {} header? {:?} incoming {:?}",
                                    ph.block,
                                    f.cfg.loops.iter().map(|l| l.header).collect::<Vec<_>>(),
                                    ph.incoming
                                );
                            }
                        }
                    }
                }
            }
            println!("   {:?}", p.as_ref().map(|p| (p.sectors, p.ideal, p.conflict, p.strides)));
            if let Some(p) = p {
                println!("   active lanes {} of {}", p.offsets.iter().filter(|x| x.is_some()).count(), p.offsets.len());
            }
        }
    }
}

#[allow(dead_code)]
fn values_of(f: &gpucheck_analysis::ir::FunctionIr<'_>, d: &gpucheck_analysis::divergence::Divergence) {
    for (i, inst) in f.insts.iter().enumerate() {
        let defs: Vec<_> = f.ssa.defs(i).iter().map(|v| d.vals[*v as usize]).collect();
        println!("  {:5} {:30} {:?}", inst.ast.pos.line, inst.text(), defs);
    }
    for p in &f.ssa.phis {
        println!(
            "  phi b{} {} = {:?} sync {:?} in {:?}",
            p.block,
            f.ssa.regs[p.reg as usize],
            d.vals[p.value as usize],
            d.sync_phi.first(),
            p.incoming
        );
    }
}
