//! Divergence classification on the seed papers' examples, written as the
//! PTX a compiler emits for them: Sampaio et al.'s avgSquare and sumTriangle
//! (seed 002, Fig. 1) and GPUVerify's scan 1a/1b (seed 004, Fig. 1). The
//! assertions are on the abstract values and branch verdicts themselves.

use gpucheck_analysis::divergence::{AbsVal, Divergence, Summaries};
use gpucheck_analysis::lints::Level;
use gpucheck_analysis::{check, ir, ptx, Options, ShapeSource, Text};

/// `if (tid < c) { d = 0; sum = 0; N = tid + c*c; for (i = tid; i < N; i += c) { sum += m[i]; d += 1; } v[tid] = sum / d; }`
const AVG_SQUARE: &str = r#"
.version 7.0
.target sm_70
.address_size 64
.visible .entry avgSquare(.param .u64 m, .param .u64 v, .param .u32 c) {
  .reg .pred %p<4>; .reg .b32 %r<16>; .reg .f32 %f<8>; .reg .b64 %rd<8>;
  ld.param.u64 %rd1, [m];
  ld.param.u64 %rd2, [v];
  ld.param.u32 %r1, [c];
  mov.u32 %r2, %tid.x;
  setp.ge.u32 %p1, %r2, %r1;
  @%p1 bra $Lexit;
  mul.lo.s32 %r3, %r1, %r1;
  add.s32 %r4, %r2, %r3;
  mov.u32 %r5, 0;
  mov.f32 %f1, 0f00000000;
  mov.u32 %r6, %r2;
$Lhead:
  setp.ge.u32 %p2, %r6, %r4;
  @%p2 bra $Lafter;
  mul.wide.u32 %rd3, %r6, 4;
  add.s64 %rd4, %rd1, %rd3;
  ld.global.f32 %f2, [%rd4];
  add.f32 %f1, %f1, %f2;
  add.s32 %r5, %r5, 1;
  add.s32 %r6, %r6, %r1;
  bra.uni $Lhead;
$Lafter:
  cvt.rn.f32.u32 %f3, %r5;
  div.rn.f32 %f4, %f1, %f3;
  mul.wide.u32 %rd5, %r2, 4;
  add.s64 %rd6, %rd2, %rd5;
  st.global.f32 [%rd6], %f4;
  mov.u32 %r9, %r5;
$Lexit:
  ret;
}"#;

/// `if (tid < c) { d = 0; sum = 0; L = (tid+1)*c; for (i = tid; i < L; i += c) { if (d % 2) sum += m[i]; d += 1; } v[d-1] = sum; }`
const SUM_TRIANGLE: &str = r#"
.version 7.0
.target sm_70
.address_size 64
.visible .entry sumTriangle(.param .u64 m, .param .u64 v, .param .u32 c) {
  .reg .pred %p<4>; .reg .b32 %r<16>; .reg .f32 %f<8>; .reg .b64 %rd<8>;
  ld.param.u64 %rd1, [m];
  ld.param.u64 %rd2, [v];
  ld.param.u32 %r1, [c];
  mov.u32 %r2, %tid.x;
  setp.ge.u32 %p1, %r2, %r1;
  @%p1 bra $Lexit;
  add.s32 %r3, %r2, 1;
  mul.lo.s32 %r4, %r3, %r1;
  mov.u32 %r5, 0;
  mov.f32 %f1, 0f00000000;
  mov.u32 %r6, %r2;
$Lhead:
  setp.ge.u32 %p2, %r6, %r4;
  @%p2 bra $Lafter;
  and.b32 %r7, %r5, 1;
  setp.eq.b32 %p3, %r7, 0;
  @%p3 bra $Lskip;
  mul.wide.u32 %rd3, %r6, 4;
  add.s64 %rd4, %rd1, %rd3;
  ld.global.f32 %f2, [%rd4];
  add.f32 %f1, %f1, %f2;
$Lskip:
  add.s32 %r5, %r5, 1;
  add.s32 %r6, %r6, %r1;
  bra.uni $Lhead;
$Lafter:
  sub.s32 %r8, %r5, 1;
  mul.wide.u32 %rd5, %r8, 4;
  add.s64 %rd6, %rd2, %rd5;
  st.global.f32 [%rd6], %f1;
$Lexit:
  ret;
}"#;

/// GPUVerify Fig. 1: scan with (1a) guarded accesses and unconditional
/// barriers, and (1b) the loop condition `offset <= tid` around the barriers.
fn scan(variant_b: bool) -> String {
    let head = if variant_b { "setp.gt.u32 %p1, %r2, %r1;" } else { "setp.ge.u32 %p1, %r2, 256;" };
    let guard = if variant_b { "" } else { "setp.lt.u32 %p2, %r1, %r2;\n  @%p2 bra $Lb1;" };
    let guard2 = if variant_b { "" } else { "@%p2 bra $Lb2;" };
    format!(
        r#"
.version 7.0
.target sm_70
.address_size 64
.shared .align 4 .b8 sum[1024];
.visible .entry scan() .reqntid 256, 1, 1 {{
  .reg .pred %p<4>; .reg .b32 %r<16>; .reg .b64 %rd<8>;
  mov.u32 %r1, %tid.x;
  mov.u32 %r2, 1;
  mov.u32 %r3, 0;
  mov.u32 %r9, sum;
$Lhead:
  {head}
  @%p1 bra $Lexit;
  {guard}
  sub.s32 %r4, %r1, %r2;
  shl.b32 %r5, %r4, 2;
  add.s32 %r5, %r5, %r9;
  ld.shared.u32 %r3, [%r5];
$Lb1:
  bar.sync 0;
  {guard2}
  shl.b32 %r6, %r1, 2;
  add.s32 %r6, %r6, %r9;
  ld.shared.u32 %r7, [%r6];
  add.s32 %r8, %r7, %r3;
  st.shared.u32 [%r6], %r8;
$Lb2:
  bar.sync 0;
  shl.b32 %r2, %r2, 1;
  bra.uni $Lhead;
$Lexit:
  ret;
}}"#
    )
}

/// Divergence facts of the only function: (branch PTX lines that are divergent, analysis).
fn analyse<R>(src: &str, f: impl FnOnce(&ir::FunctionIr<'_>, &Divergence) -> R) -> R {
    let m = ptx::parse(src).unwrap();
    let fns = ir::lower(&m);
    let sums = Summaries::compute(&fns);
    let d = Divergence::analyze(&fns[0], &sums);
    f(&fns[0], &d)
}

fn divergent_branch_lines(f: &ir::FunctionIr<'_>, d: &Divergence) -> Vec<u32> {
    let mut v: Vec<u32> = d.branches.iter().map(|b| f.insts[b.inst].ast.pos.line).collect();
    v.sort();
    v
}

/// Value written by the first instruction whose text starts with `prefix`.
fn value_of(f: &ir::FunctionIr<'_>, d: &Divergence, opcode: &str, dest: &str) -> AbsVal {
    let i = f
        .insts
        .iter_enumerated()
        .find(|(_, i)| i.text() == opcode && i.operand(0) == Some(&ptx::Operand::Reg(dest)))
        .expect("instruction")
        .0;
    d.vals[f.ssa.defs(i)[0]]
}

fn line_of(src: &str, needle: &str) -> u32 {
    src.lines().position(|l| l.contains(needle)).unwrap() as u32 + 1
}

#[test]
fn avg_square_loop_is_uniform() {
    analyse(AVG_SQUARE, |f, d| {
        // only the `tid < c` check is thread-dependent; `i < N` is uniform since N - i does not involve tid
        assert_eq!(divergent_branch_lines(f, d), vec![line_of(AVG_SQUARE, "@%p1 bra")]);
        // d after the loop is uniform (every thread ran the same number of iterations)
        assert!(value_of(f, d, "mov.u32", "%r9").is_uniform());
    });
    // and no default-level finding: the boundary check splits at most one warp
    let r = check(AVG_SQUARE, &Options::default(), &|_| true).unwrap();
    let (on, pedantic): (Vec<_>, Vec<_>) = r.findings.iter().partition(|f| f.lint.default != Level::Allow);
    assert!(on.is_empty(), "{:?}", on.iter().map(|f| &f.message).collect::<Vec<_>>());
    // `i += c` walks by a runtime number of elements: iterations after the first
    // are aligned only when 4·c is a multiple of 32 bytes
    assert_eq!(pedantic.iter().map(|f| f.lint.name).collect::<Vec<_>>(), ["misaligned_global_access"]);
}

#[test]
fn sum_triangle_splits_the_live_range_of_d() {
    analyse(SUM_TRIANGLE, |f, d| {
        // the loop exit is divergent, the `d % 2` branch inside the loop is not
        assert_eq!(divergent_branch_lines(f, d), vec![line_of(SUM_TRIANGLE, "@%p1 bra"), line_of(SUM_TRIANGLE, "@%p2 bra")]);
        // d inside the loop is uniform (d_lp) …
        assert!(value_of(f, d, "and.b32", "%r7").is_uniform());
        // … and divergent after it (d_af): threads leave at different iterations
        assert!(value_of(f, d, "sub.s32", "%r8").is_divergent());
    });
    let mut r = check(SUM_TRIANGLE, &Options::default(), &|_| true).unwrap();
    r.findings.retain(|f| f.lint.default != Level::Allow);
    assert_eq!(r.findings.len(), 1);
    assert_eq!(r.findings[0].lint.name, "divergent_branch");
    assert_eq!(r.findings[0].ptx_line, line_of(SUM_TRIANGLE, "@%p2 bra"));
    assert!(r.findings[0].message.contains("different numbers of iterations"));
}

#[test]
fn gpuverify_scan_1a_is_clean_and_1b_diverges_at_both_barriers() {
    let a = scan(false);
    let r = check(&a, &Options::default(), &|_| true).unwrap();
    assert!(
        r.findings.iter().all(|f| f.lint.name != "barrier_divergence"),
        "{:?}",
        r.findings.iter().map(|f| &f.message).collect::<Vec<_>>()
    );
    let b = scan(true);
    let r = check(&b, &Options::default(), &|_| true).unwrap();
    let lines: Vec<u32> = r.findings.iter().filter(|f| f.lint.name == "barrier_divergence").map(|f| f.ptx_line).collect();
    let bars: Vec<u32> = b.lines().enumerate().filter(|(_, l)| l.contains("bar.sync")).map(|(i, _)| i as u32 + 1).collect();
    assert_eq!(lines, bars);
    assert!(words(&r.findings[0]).contains("thread-dependent number of iterations"));
    // the block shape comes from .reqntid
    assert!(r.findings[0]
        .notes
        .iter()
        .any(|n| matches!(&n.text, Text::Shape(s) if s.block == [256, 1, 1] && s.source == ShapeSource::Reqntid)));
}

#[test]
fn barrier_skip_ranges_are_exact() {
    // if (tid < 128) __syncthreads(); in a 256-thread block
    let src = ".version 7.0\n.target sm_70\n.entry k() .reqntid 256 {\n .reg .pred %p<2>; .reg .b32 %r<2>;\n mov.u32 %r1, %tid.x;\n setp.ge.u32 %p1, %r1, 128;\n @%p1 bra $L;\n bar.sync 0;\n$L:\n ret;\n}\n";
    let r = check(src, &Options::default(), &|_| true).unwrap();
    assert_eq!(r.findings.len(), 1);
    assert!(words(&r.findings[0]).contains("threads 128..255 of each block skip this barrier"), "{:?}", r.findings[0].notes);
    // a warp-uniform condition on a counted barrier is fine; on a block-wide one it is not
    let warp = |bar: &str| {
        format!(".version 7.0\n.target sm_70\n.entry k() .reqntid 256 {{\n .reg .pred %p<2>; .reg .b32 %r<3>;\n mov.u32 %r1, %tid.x;\n shr.u32 %r2, %r1, 5;\n setp.ge.u32 %p1, %r2, 4;\n @%p1 bra $L;\n {bar};\n$L:\n ret;\n}}\n")
    };
    assert!(check(&warp("bar.sync 1, 128"), &Options::default(), &|_| true).unwrap().findings.is_empty());
    let r = check(&warp("bar.sync 0"), &Options::default(), &|_| true).unwrap();
    assert_eq!(r.findings.len(), 1);
    assert!(words(&r.findings[0]).contains("threads 128..255"));
}

#[test]
fn divergent_branch_counts_warps() {
    let k = |cond: &str, block: &str| {
        format!(".version 7.0\n.target sm_70\n.entry k() .reqntid {block} {{\n .reg .pred %p<2>; .reg .b32 %r<4>;\n mov.u32 %r1, %tid.x;\n {cond}\n @%p1 bra $L;\n st.global.u32 [0], %r1;\n$L:\n ret;\n}}\n")
    };
    let count = |src: String| -> Option<i64> {
        let r = check(&src, &Options::default(), &|_| true).unwrap();
        // (around one store the split is cheap: the pedantic lint carries the same count)
        r.findings.iter().find(|f| matches!(f.lint.name, "divergent_branch" | "cheap_divergent_branch")).map(|f| {
            match f.metrics.iter().find(|m| m.0 == "diverging_warps").unwrap().1 {
                gpucheck_analysis::Metric::Int(n) => n,
                _ => panic!(),
            }
        })
    };
    // tid % 2: every warp
    assert_eq!(count(k("and.b32 %r2, %r1, 1;\n setp.eq.u32 %p1, %r2, 0;", "256")), Some(8));
    // tid % 64 < 32: warp-uniform, no warp splits
    assert_eq!(count(k("and.b32 %r2, %r1, 63;\n setp.lt.u32 %p1, %r2, 32;", "256")), None);
    // tid < 48: one warp — a boundary, not reported
    assert_eq!(count(k("setp.lt.u32 %p1, %r1, 48;", "256")), None);
    // tid == 0: a single lane, not reported
    assert_eq!(count(k("setp.eq.u32 %p1, %r1, 0;", "256")), None);
    // tid % 16 < 8 in a 64-thread block: both warps
    assert_eq!(count(k("and.b32 %r2, %r1, 15;\n setp.lt.u32 %p1, %r2, 8;", "64")), Some(2));
}

/// A split is worth a default-level warning when it decides real work: one
/// store is `cheap_divergent_branch` (pedantic), a loop `divergent_branch`.
#[test]
fn a_split_around_a_few_instructions_is_cheap() {
    let body = |work: &str| {
        format!(".version 7.0\n.target sm_70\n.entry k() .reqntid 256 {{\n .reg .pred %p<3>; .reg .b32 %r<6>;\n mov.u32 %r1, %tid.x;\n and.b32 %r2, %r1, 1;\n setp.eq.u32 %p1, %r2, 0;\n @%p1 bra $L;\n{work}$L:\n ret;\n}}\n")
    };
    let lints = |src: String| -> Vec<&'static str> {
        check(&src, &Options::default(), &|_| true).unwrap().findings.iter().map(|f| f.lint.name).collect()
    };
    assert_eq!(lints(body(" st.global.u32 [0], %r1;\n")), ["cheap_divergent_branch"]);
    let looped =
        " mov.u32 %r3, 0;\n$Lloop:\n add.u32 %r3, %r3, 1;\n st.global.u32 [0], %r3;\n setp.lt.u32 %p2, %r3, 100;\n @%p2 bra $Lloop;\n";
    assert_eq!(lints(body(looped)), ["divergent_branch"]);
}

/// The words of a finding's notes (positions left out).
fn words(f: &gpucheck_analysis::Finding) -> String {
    let mut out = String::new();
    for n in &f.notes {
        match &n.text {
            Text::Plain(t) => out += t,
            Text::At(x) => out += &format!("{}…{}", x.before, x.after),
            _ => {}
        }
        out.push('\n');
    }
    out
}
