//! Print divergent branches and the abstract values of their conditions (development aid).
use gpucheck_analysis::{divergence, ir, ptx};
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
        for br in &d.branches {
            let i = f.insts[br.inst];
            println!("{}: branch at ptx {} cond {:?}", f.func.name, i.ast.pos.line, d.vals[br.cond as usize]);
            if let Some(di) = f.def_inst(br.cond) {
                let s = f.insts[di];
                for o in &s.operands()[1..] {
                    println!("   operand {:?} = {:?}", o, d.operand(f, di, o));
                    if let ptx::Operand::Reg(r) = o {
                        if let Some(v) = f.ssa.use_of(di, r) {
                            println!("      def {:?}", f.ssa.values[v as usize]);
                        }
                    }
                }
            }
        }
    }
}
