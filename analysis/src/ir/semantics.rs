//! Operand roles of PTX instructions: which operands an instruction defines
//! and which it reads, and whether it ends a basic block.
//!
//! Owns: the per-opcode knowledge the IR needs to build a CFG and SSA.
//! Does not own: abstract values (see `crate::divergence`). Unknown opcodes
//! follow PTX's general convention (operand 0 is the destination).

use crate::ptx::{split_pair, Instruction, Operand};

/// Opcodes whose first operand is not a destination.
fn has_no_dest(inst: &Instruction<'_>) -> bool {
    match inst.op() {
        "st" | "red" | "bar" | "barrier" | "membar" | "fence" | "bra" | "brx" | "ret" | "exit" | "trap" | "prefetch" | "prefetchu"
        | "discard" | "cp" | "pmevent" | "nanosleep" | "stmatrix" | "griddepcontrol" | "applypriority" | "createpolicy" | "sust"
        | "sured" | "multimem" => true,
        "call" => !matches!(inst.operands.first(), Some(Operand::List(_))) || inst.operands.len() < 2,
        "wmma" => inst.has_mod("store"),
        "mbarrier" => inst.has_mod("init") || inst.has_mod("inval") || inst.has_mod("expect_tx") || inst.has_mod("complete_tx"),
        "tcgen05" => !inst.has_mod("ld") && !inst.has_mod("alloc"),
        _ => false,
    }
}

/// Registers written by the instruction, in order (vector and pair
/// destinations expand to several).
pub fn defs<'a>(inst: &Instruction<'a>, out: &mut Vec<&'a str>) {
    out.clear();
    if inst.op() == "bar" && inst.has_mod("red") {
        if let Some(Operand::Reg(r)) = inst.operands.first() {
            out.push(r);
        }
        return;
    }
    if has_no_dest(inst) {
        return;
    }
    match inst.operands.first() {
        Some(Operand::Reg(r)) => out.push(r),
        Some(Operand::Pair(p)) => {
            let (a, b) = split_pair(p);
            out.push(a);
            if b != "_" {
                out.push(b);
            }
        }
        Some(Operand::Vector(v)) | Some(Operand::List(v)) => {
            for o in v {
                if let Operand::Reg(r) = o {
                    out.push(r);
                }
            }
        }
        _ => {}
    }
}

/// Registers read by the instruction (guard included).
pub fn uses<'a>(inst: &Instruction<'a>, out: &mut Vec<&'a str>) {
    out.clear();
    if let Some(g) = inst.guard {
        out.push(g.reg);
    }
    let skip_first = inst.op() == "bar" && inst.has_mod("red")
        || !has_no_dest(inst)
            && matches!(inst.operands.first(), Some(Operand::Reg(_) | Operand::Pair(..) | Operand::Vector(_) | Operand::List(_)));
    for (i, o) in inst.operands.iter().enumerate() {
        if i == 0 && skip_first {
            continue;
        }
        collect_regs(o, out);
    }
}

fn collect_regs<'a>(o: &Operand<'a>, out: &mut Vec<&'a str>) {
    match o {
        Operand::Reg(r) | Operand::Not(r) => out.push(r),
        Operand::Pair(p) => {
            let (a, b) = split_pair(p);
            out.push(a);
            out.push(b);
        }
        Operand::Addr(a) => {
            if let Some(b) = &a.base {
                collect_regs(b, out);
            }
            for e in &a.extra {
                collect_regs(e, out);
            }
        }
        Operand::Vector(v) | Operand::List(v) => v.iter().for_each(|x| collect_regs(x, out)),
        _ => {}
    }
}

/// How an instruction ends a basic block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Flow<'a> {
    /// Falls through to the next instruction.
    Next,
    /// `bra L` (conditional when guarded).
    Branch(&'a str),
    /// `brx.idx r, table` (targets resolved later from `.branchtargets`).
    Indirect(&'a str),
    /// `ret`, `exit`, `trap` (conditional when guarded).
    Exit,
}

pub fn flow<'a>(inst: &Instruction<'a>) -> Flow<'a> {
    match inst.op() {
        "bra" => match inst.operands.last() {
            Some(Operand::Sym(l)) => Flow::Branch(l),
            _ => Flow::Exit,
        },
        "brx" => match inst.operands.get(1) {
            Some(Operand::Sym(l)) => Flow::Indirect(l),
            _ => Flow::Exit,
        },
        "ret" | "exit" | "trap" => Flow::Exit,
        _ => Flow::Next,
    }
}

/// Name of the called function for a direct `call`.
pub fn call_target<'a>(inst: &Instruction<'a>) -> Option<&'a str> {
    if inst.op() != "call" {
        return None;
    }
    inst.operands.iter().find_map(|o| if let Operand::Sym(s) = o { Some(*s) } else { None })
}

/// True for barrier instructions that all threads of a block must reach.
pub fn is_barrier(inst: &Instruction<'_>) -> bool {
    match inst.op() {
        "bar" => !inst.has_mod("warp") && !inst.has_mod("arrive"),
        "barrier" => !inst.has_mod("arrive") && !inst.has_mod("cluster"),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ptx::{parse, Stmt};

    fn insts(body: &str) -> Vec<Instruction<'_>> {
        let src = format!(".entry k() {{ {body} }}");
        let src: &'static str = Box::leak(src.into_boxed_str());
        let m = parse(src).unwrap();
        let f = m.functions.into_iter().next().unwrap();
        f.body.unwrap().into_iter().filter_map(|s| if let Stmt::Inst(i) = s { Some(i) } else { None }).collect()
    }

    #[test]
    fn roles() {
        let v = insts(
            "st.global.f32 [%rd1], %f1; setp.lt.s32 %p1|%p2, %r1, %r2; @%p1 ld.global.v2.f32 {%f1,%f2}, [%rd2+4]; call.uni (%r9), f, (%r3); call.uni g, (%r4); bar.red.and.pred %p3, 0, %p4; atom.global.add.u32 %r5, [%rd3], 1;",
        );
        let mut d = vec![];
        let mut u = vec![];
        let expect: [(&[&str], &[&str]); 7] = [
            (&[], &["%rd1", "%f1"]),
            (&["%p1", "%p2"], &["%r1", "%r2"]),
            (&["%f1", "%f2"], &["%p1", "%rd2"]),
            (&["%r9"], &["%r3"]),
            (&[], &["%r4"]),
            (&["%p3"], &["%p4"]),
            (&["%r5"], &["%rd3"]),
        ];
        for (i, (ed, eu)) in v.iter().zip(expect) {
            defs(i, &mut d);
            uses(i, &mut u);
            assert_eq!((&d[..], &u[..]), (ed, eu), "{}", i.opcode);
        }
        assert!(is_barrier(&v[5]));
        assert_eq!(call_target(&v[3]), Some("f"));
    }
}
