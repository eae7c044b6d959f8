//! Regression tests for bugs found in review, each a few lines of PTX: a
//! constant folded without the instruction's width and signedness, an
//! address space written with a `::cta` qualifier, and two arithmetic
//! overflows (a huge `.reqntid`, a DWARF range at the top of the address
//! space) that panicked with overflow checks on.

use gpucheck_analysis::{check, Finding, Options};

fn findings(src: &str) -> Vec<Finding> {
    check(src, &Options::default(), &|_| true).expect("parses").findings
}

fn metric(f: &Finding, name: &str) -> Option<i64> {
    f.metrics.iter().find(|(k, _)| *k == name).and_then(|(_, v)| match v {
        gpucheck_analysis::Metric::Int(x) => Some(*x),
        _ => None,
    })
}

/// `min.u32(not.b32 0, 1)` is 1 (0xffffffff is the larger unsigned value),
/// so the branch is on `tid & 1`: odd and even lanes split every warp.
const TID_AND_ONE: &str = r#"
.version 7.0
.target sm_70
.address_size 64
.visible .entry k(.param .u64 k_param_0) .reqntid 256, 1, 1 {
    .reg .pred %p<2>; .reg .b32 %r<6>; .reg .b64 %rd<4>;
    mov.u32 %r1, %tid.x;
    not.b32 %r3, 0;
    min.u32 %r4, %r3, 1;
    and.b32 %r5, %r1, %r4;
    setp.eq.u32 %p1, %r5, 0;
    @%p1 bra $L_even;
    ld.param.u64 %rd1, [k_param_0];
    cvta.to.global.u64 %rd2, %rd1;
    st.global.u32 [%rd2], %r1;
$L_even:
    ret;
}"#;

#[test]
fn constant_folding_is_width_and_sign_exact() {
    let fs = findings(TID_AND_ONE);
    // (the branch decides one store: a cheap split, reported by the pedantic lint)
    let br: Vec<&Finding> = fs.iter().filter(|f| f.lint.name == "cheap_divergent_branch").collect();
    assert_eq!(br.len(), 1, "{fs:#?}");
    assert_eq!(metric(br[0], "diverging_warps"), Some(8));
    assert_eq!(metric(br[0], "warps_per_block"), Some(8));
}

/// The same kernel run on the interpreter: the branch's predicted split
/// count equals the warps the run saw split, joined by instruction.
#[test]
fn branch_prediction_matches_the_run() {
    use gpucheck_analysis::interp::{self, Arg, Global, Launch};
    let src = TID_AND_ONE;
    let r = check(src, &Options::default(), &|_| true).unwrap();
    let b = &r.branches[0];
    assert_eq!(b.prediction, gpucheck_analysis::BranchPrediction::Splits(8));
    let m = gpucheck_analysis::ptx::parse(src).unwrap();
    let mut mem = Global::default();
    let out = mem.alloc(&[0u8; 16]);
    let launch = Launch { grid: [2, 1, 1], block: [256, 1, 1], dynamic_shared: 0 };
    let obs = interp::run(&m, "k", &launch, &[Arg::Bits(out)], &mut mem).unwrap();
    let seen = &obs.branches[&b.site.key()];
    assert_eq!((seen.warps_split.mode(), seen.warps_split.max(), seen.warps_split.total()), (8, 8, 2));
}

/// `ld.shared::cta` is a shared-memory load like `ld.shared`: a column of
/// a 32-word-wide tile is a 32-way bank conflict.
#[test]
fn shared_cta_qualifier_is_shared_memory() {
    for space in ["shared", "shared::cta"] {
        let src = format!(
            r#"
.version 7.8
.target sm_90
.address_size 64
.visible .entry k() .reqntid 32, 1, 1 {{
    .reg .b32 %r<4>;
    mov.u32 %r1, %tid.x;
    shl.b32 %r2, %r1, 7;
    ld.{space}.u32 %r3, [%r2];
    st.{space}.u32 [%r2+4], %r3;
    ret;
}}"#
        );
        let fs = findings(&src);
        let bank: Vec<&Finding> = fs.iter().filter(|f| f.lint.name == "shared_bank_conflict").collect();
        assert_eq!(bank.len(), 2, "ld/st.{space}: {fs:#?}");
        assert!(bank.iter().all(|f| metric(f, "conflict_degree") == Some(32)), "ld/st.{space}: {fs:#?}");
    }
}

/// The product of three `.reqntid` dimensions overflows 64 bits.
#[test]
fn huge_reqntid_is_not_a_launch_shape() {
    let src = ".version 7.0\n.target sm_70\n.address_size 64\n.entry k() .reqntid 4294967295, 4294967295, 4294967295 { ret; }";
    let r = check(src, &Options::default(), &|_| true).unwrap();
    assert_eq!(r.kernels, 1);
    assert!(r.findings.is_empty());
}

/// A `DW_TAG_inlined_subroutine` whose `low_pc` is the last address and
/// whose `high_pc` is a length (`DW_FORM_data8`) of 2^64 - 1.
#[test]
fn dwarf_range_at_the_end_of_the_address_space() {
    let src = r#"
.version 7.0
.target sm_70
.address_size 64
.file 1 "/src/lib.rs"
.visible .entry k() {
    .loc 1 3 5
    ret;
}
.section .debug_abbrev {
.b8 1,17,1,17,1,0,0
.b8 2,29,0,17,1,18,7,88,11,89,11,0,0
.b8 0
}
.section .debug_info {
.b32 36
.b8 4,0
.b32 .debug_abbrev
.b8 8
.b8 1
.b64 0
.b8 2
.b64 -1
.b64 -1
.b8 1,5
.b8 0
}
"#;
    let r = check(src, &Options::default(), &|_| true).unwrap();
    assert!(r.has_dwarf);
    assert_eq!(r.kernels, 1);
}

/// `%ntid.x` read on both arms of a thread-dependent `if`/`else` (the
/// compiler materialises it twice) joins to the same uniform value: the
/// tree reduction after it has a uniform trip count and its barrier is
/// reached by every thread (issue: uniform joins).
const NTID_ON_BOTH_ARMS: &str = r#"
.version 7.0
.target sm_70
.address_size 64
.shared .align 4 .b8 tile[1024];
.visible .entry reduce(.param .u64 p, .param .u32 stop) .reqntid 256, 1, 1 {
    .reg .pred %p<4>; .reg .b32 %r<12>; .reg .f32 %f<4>; .reg .b64 %rd<4>;
    mov.u32 %r1, %tid.x;
    ld.param.u32 %r2, [stop];
    shl.b32 %r7, %r1, 2;
    mov.u32 %r8, tile;
    add.s32 %r9, %r8, %r7;
    setp.lt.u32 %p1, %r1, %r2;
    @%p1 bra $Lthen;
    mov.f32 %f1, 0f00000000;
    mov.u32 %r5, %ntid.x;
    bra.uni $Ljoin;
$Lthen:
    mov.f32 %f1, 0f3F800000;
    mov.u32 %r5, %ntid.x;
$Ljoin:
    st.shared.f32 [%r9], %f1;
    bar.sync 0;
    shr.u32 %r6, %r5, 1;
$Lloop:
    setp.eq.u32 %p2, %r6, 0;
    @%p2 bra $Ldone;
    setp.ge.u32 %p3, %r1, %r6;
    @%p3 bra $Lskip;
    shl.b32 %r10, %r6, 2;
    add.s32 %r11, %r9, %r10;
    ld.shared.f32 %f2, [%r11];
    ld.shared.f32 %f3, [%r9];
    add.f32 %f3, %f3, %f2;
    st.shared.f32 [%r9], %f3;
$Lskip:
    bar.sync 0;
    shr.u32 %r6, %r6, 1;
    bra.uni $Lloop;
$Ldone:
    ret;
}"#;

#[test]
fn a_join_of_one_uniform_value_is_uniform() {
    let fs = findings(NTID_ON_BOTH_ARMS);
    let barrier: Vec<&Finding> = fs.iter().filter(|f| f.lint.name == "barrier_divergence").collect();
    assert!(barrier.is_empty(), "{barrier:#?}");
}

/// A struct copied to the thread's stack, its field's address an `or` of
/// the stack pointer (`or.b64 %rd, %SP, 8`: an offset into an aligned
/// frame): the stores are local, no race, whatever every thread writes;
/// the same stores through a global pointer race.
const STACK_FIELD: &str = r#"
.version 7.0
.target sm_80
.address_size 64
.visible .entry on_stack(.param .u64 on_stack_out) {
    .local .align 16 .b8 __local_depot0[32];
    .reg .b64 %SP; .reg .b64 %SPL; .reg .b64 %rd<6>; .reg .b32 %r<3>;
    mov.u64 %SPL, __local_depot0;
    cvta.local.u64 %SP, %SPL;
    mov.u32 %r1, %tid.x;
    add.u64 %rd1, %SP, 0;
    or.b64 %rd2, %rd1, 8;
    st.u32 [%rd2], %r1;
    and.b64 %rd3, %rd2, -16;
    st.u32 [%rd3+4], %r1;
    ret;
}
.visible .entry on_global(.param .u64 on_global_out) {
    .reg .b64 %rd<6>; .reg .b32 %r<3>;
    ld.param.u64 %rd1, [on_global_out];
    mov.u32 %r1, %tid.x;
    or.b64 %rd2, %rd1, 8;
    st.u32 [%rd2], %r1;
    ret;
}"#;

#[test]
fn a_stack_address_made_with_or_stays_local() {
    let r = check(STACK_FIELD, &Options { block: Some([64, 1, 1]), grid: Some([1, 1, 1]), ..Default::default() }, &|_| true).unwrap();
    let races: Vec<&Finding> = r.findings.iter().filter(|f| f.lint.name.ends_with("_race")).collect();
    assert!(races.iter().all(|f| &*f.kernel == "on_global"), "{races:#?}");
    assert_eq!(races.len(), 1, "{races:#?}");
    let cov = |k: &str| r.coverage.iter().find(|c| c.kernel == k).unwrap();
    assert_eq!((cov("on_stack").other_space, cov("on_stack").predicted), (2, 0));
}

/// `out[blockIdx.x * 256 + t]` after an `if (t < 128)` on both arms of
/// which the compiler computed `blockIdx.x << 8` into one register: the
/// join is that value whichever side ran (it was a sample, the same in
/// every block: a race between blocks); the twin joins `blockIdx.x << 8`
/// with 0 — threads 128..255 of every block write the same elements, a race.
const JOINED: &str = r#"
.version 7.0
.target sm_80
.address_size 64
.visible .entry same_on_both_arms(.param .u64 same_on_both_arms_out) {
  .reg .pred %p<2>; .reg .b32 %r<12>; .reg .b64 %rd<5>;
  ld.param.u64 %rd1, [same_on_both_arms_out];
  cvta.to.global.u64 %rd2, %rd1;
  mov.u32 %r1, %tid.x;
  setp.lt.u32 %p1, %r1, 128;
  @%p1 bra $A;
  mov.u32 %r2, %ctaid.x;
  shl.b32 %r11, %r2, 8;
  bra.uni $J;
$A:
  mov.u32 %r3, %ctaid.x;
  shl.b32 %r11, %r3, 8;
$J:
  add.s32 %r4, %r11, %r1;
  mul.wide.u32 %rd3, %r4, 4;
  add.s64 %rd4, %rd2, %rd3;
  st.global.u32 [%rd4], %r1;
  ret;
}
.visible .entry zero_on_one_arm(.param .u64 zero_on_one_arm_out) {
  .reg .pred %p<2>; .reg .b32 %r<12>; .reg .b64 %rd<5>;
  ld.param.u64 %rd1, [zero_on_one_arm_out];
  cvta.to.global.u64 %rd2, %rd1;
  mov.u32 %r1, %tid.x;
  setp.lt.u32 %p1, %r1, 128;
  @%p1 bra $A;
  mov.u32 %r11, 0;
  bra.uni $J;
$A:
  mov.u32 %r3, %ctaid.x;
  shl.b32 %r11, %r3, 8;
$J:
  add.s32 %r4, %r11, %r1;
  mul.wide.u32 %rd3, %r4, 4;
  add.s64 %rd4, %rd2, %rd3;
  st.global.u32 [%rd4], %r1;
  ret;
}"#;

#[test]
fn one_value_computed_on_both_arms_is_that_value() {
    let r = check(JOINED, &Options { block: Some([256, 1, 1]), grid: Some([4, 1, 1]), ..Default::default() }, &|_| true).unwrap();
    let races: Vec<&Finding> = r.findings.iter().filter(|f| f.lint.name == "grid_memory_race").collect();
    assert_eq!(races.len(), 1, "{races:#?}");
    assert_eq!(&*races[0].kernel, "zero_on_one_arm");
    assert!(r.findings.iter().all(|f| &*f.kernel != "same_on_both_arms"), "{:#?}", r.findings);
}

/// A barrier behind an inlined wrapper (`sync() { __syncthreads(); }`,
/// nvcc `-lineinfo`: `.loc … inlined_at 1 16 9`) under a branch of the
/// kernel is reported at the wrapper's call in the kernel (line 16), the
/// wrapper's line in a note: the user's line is where the branch is.
#[test]
fn a_barrier_behind_a_wrapper_is_reported_at_the_call() {
    let src = r#"
.version 7.0
.target sm_80
.address_size 64
.file 1 "/src/k.cu"
.visible .entry k(.param .u64 k_param_0) .reqntid 256, 1, 1 {
    .reg .pred %p<2>; .reg .b32 %r<3>; .reg .b64 %rd<3>;
    ld.param.u64 %rd1, [k_param_0];
    .loc 1 13 5
    mov.u32 %r1, %tid.x;
    .loc 1 15 5
    setp.gt.s32 %p1, %r1, 127;
    @%p1 bra $L_end;
    .loc 1 16 9
    .loc 1 9 72, function_name $L__info_string0, inlined_at 1 16 9
    bar.sync 0;
    .loc 1 17 9
    cvta.to.global.u64 %rd2, %rd1;
    st.global.u32 [%rd2], %r1;
$L_end:
    ret;
}
.section .debug_str {
$L__info_string0:
.b8 115,121,110,99,0
}"#;
    let found = findings(src);
    let bar: Vec<&Finding> = found.iter().filter(|f| f.lint.name == "barrier_divergence").collect();
    assert_eq!(bar.len(), 1, "{found:#?}");
    let span = bar[0].span.as_ref().expect("a source span");
    assert_eq!((&*span.file, span.line, span.col), ("/src/k.cu", 16, 9));
    let notes: Vec<String> = bar[0].notes.iter().map(|n| format!("{:?}", n.text)).collect();
    assert!(notes.iter().any(|n| n.contains("InlinedFrom") && n.contains("line: 9")), "{notes:#?}");
}
