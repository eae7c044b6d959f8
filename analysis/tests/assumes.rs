//! Findings say which values they rest on that the kernel does not fix
//! (`Finding::assumes`): a race found with a parameter's sample, a lane
//! stride in an unknown parameter taken as large, an address whose base
//! alignment rests on a parameter; and a finding that holds for every
//! value says none.

use gpucheck_analysis::facts::Assumed;
use gpucheck_analysis::{check, Finding, Options};

fn findings(src: &str) -> Vec<Finding> {
    check(src, &Options { block: Some([256, 1, 1]), ..Default::default() }, &|_| true).expect("parses").findings
}

fn of<'a>(fs: &'a [Finding], lint: &str) -> Vec<&'a Finding> {
    fs.iter().filter(|f| f.lint.name == lint).collect()
}

/// `s[t / n] = t`: at the sample (n = 1024) every thread writes element 0;
/// for n = 1 no two threads do. `s[(t / 1024) * n]` and `s[t & 0] = t`:
/// every thread writes element 0 whatever the parameters.
const RACES: &str = r#"
.version 7.0
.target sm_80
.address_size 64
.visible .entry by_param(.param .u32 by_param_n) {
    .reg .b32 %r<6>; .reg .b64 %rd<3>;
    .shared .align 4 .b8 s[1024];
    ld.param.u32 %r1, [by_param_n];
    mov.u32 %r2, %tid.x;
    div.u32 %r3, %r2, %r1;
    shl.b32 %r4, %r3, 2;
    mov.u32 %r5, s;
    add.s32 %r5, %r5, %r4;
    st.shared.u32 [%r5], %r2;
    ret;
}
.visible .entry scaled_zero(.param .u32 scaled_zero_n) {
    .reg .b32 %r<7>;
    .shared .align 4 .b8 s3[1024];
    ld.param.u32 %r1, [scaled_zero_n];
    mov.u32 %r2, %tid.x;
    div.u32 %r3, %r2, 1024;
    mul.lo.s32 %r6, %r3, %r1;
    shl.b32 %r4, %r6, 2;
    mov.u32 %r5, s3;
    add.s32 %r5, %r5, %r4;
    st.shared.u32 [%r5], %r2;
    ret;
}
.visible .entry always() {
    .reg .b32 %r<6>;
    .shared .align 4 .b8 s2[1024];
    mov.u32 %r2, %tid.x;
    and.b32 %r3, %r2, 0;
    mov.u32 %r5, s2;
    add.s32 %r5, %r5, %r3;
    st.shared.u32 [%r5], %r2;
    ret;
}"#;

#[test]
fn a_race_found_with_a_sample_names_it() {
    let fs = findings(RACES);
    let races = of(&fs, "shared_memory_race");
    let by_kernel = |k: &str| races.iter().find(|f| &*f.kernel == k).copied().unwrap_or_else(|| panic!("a race in `{k}`: {fs:#?}"));
    let sampled = by_kernel("by_param");
    assert_eq!(sampled.assumes.len(), 1, "{:#?}", sampled.assumes);
    let a = &sampled.assumes[0];
    assert_eq!((a.name.as_str(), a.kind, a.sample, a.alignment), ("by_param_n", Assumed::Parameter, 1024, false));
    // the same race for every value: nothing assumed
    assert!(by_kernel("always").assumes.is_empty(), "{:#?}", by_kernel("always").assumes);
    // `s[(t / 1024) * n]`: evaluated with n's sample, but every thread of the block writes
    // element 0 whatever n is: the witness is settled at other values and rests on nothing
    assert!(by_kernel("scaled_zero").assumes.is_empty(), "{:#?}", by_kernel("scaled_zero").assumes);
}

/// `x[t * n]` (n unknown: its lane stride is taken as large) against
/// `x[blockIdx.x * n + 2 * t]` (a known stride of 8 bytes; only where each
/// block's row starts depends on n).
const STRIDES: &str = r#"
.version 7.0
.target sm_80
.address_size 64
.visible .entry by_stride(.param .u64 by_stride_x, .param .u32 by_stride_n) {
    .reg .b32 %r<6>; .reg .b64 %rd<6>; .reg .f32 %f<2>;
    ld.param.u64 %rd1, [by_stride_x];
    ld.param.u32 %r1, [by_stride_n];
    cvta.to.global.u64 %rd2, %rd1;
    mov.u32 %r2, %tid.x;
    mul.lo.s32 %r3, %r2, %r1;
    mul.wide.u32 %rd3, %r3, 4;
    add.s64 %rd4, %rd2, %rd3;
    ld.global.f32 %f1, [%rd4];
    st.global.f32 [%rd4], %f1;
    ret;
}
.visible .entry by_row(.param .u64 by_row_x, .param .u32 by_row_n) {
    .reg .b32 %r<8>; .reg .b64 %rd<6>; .reg .f32 %f<2>;
    ld.param.u64 %rd1, [by_row_x];
    ld.param.u32 %r1, [by_row_n];
    cvta.to.global.u64 %rd2, %rd1;
    mov.u32 %r2, %tid.x;
    mov.u32 %r6, %ctaid.x;
    mul.lo.s32 %r3, %r6, %r1;
    shl.b32 %r7, %r2, 1;
    add.s32 %r4, %r3, %r7;
    mul.wide.u32 %rd3, %r4, 4;
    add.s64 %rd4, %rd2, %rd3;
    ld.global.f32 %f1, [%rd4];
    ret;
}"#;

#[test]
fn a_stride_taken_as_large_and_an_alignment_are_named() {
    let fs = findings(STRIDES);
    let unco = of(&fs, "uncoalesced_global_access");
    let by_kernel = |k: &str| unco.iter().find(|f| &*f.kernel == k).copied().unwrap_or_else(|| panic!("a finding in `{k}`: {fs:#?}"));
    let stride = by_kernel("by_stride");
    assert!(
        stride.assumes.iter().any(|a| a.kind == Assumed::Stride && a.name == "by_stride_n" && a.sample == 4096 && !a.alignment),
        "{:#?}",
        stride.assumes
    );
    // 8 bytes apart for every n: only the row's start (its alignment) rests on n
    let row = by_kernel("by_row");
    assert!(!row.assumes.is_empty(), "{:#?}", row.assumes);
    assert!(row.assumes.iter().all(|a| a.alignment && a.name == "by_row_n"), "{:#?}", row.assumes);
}

/// The race of `s[t / n] = t` behind the kernel's own checks on `n`: a
/// precondition that traps (`if (n % 256 != 0) __trap();`) and a guard
/// (`if (n < 1024)`): the assumption says what the kernel knows of `n`.
const GUARDED: &str = r#"
.version 7.0
.target sm_80
.address_size 64
.visible .entry guarded(.param .u32 guarded_n) {
    .reg .pred %p<3>; .reg .b32 %r<10>;
    .shared .align 4 .b8 s[1024];
    ld.param.u32 %r1, [guarded_n];
    rem.u32 %r9, %r1, 256;
    setp.ne.s32 %p2, %r9, 0;
    @%p2 trap;
    setp.ge.u32 %p1, %r1, 1024;
    @%p1 bra $done;
    mov.u32 %r2, %tid.x;
    div.u32 %r3, %r2, %r1;
    shl.b32 %r4, %r3, 2;
    mov.u32 %r5, s;
    add.s32 %r5, %r5, %r4;
    st.shared.u32 [%r5], %r2;
$done:
    ret;
}"#;

#[test]
fn an_assumption_says_what_the_kernel_tested() {
    let fs = findings(GUARDED);
    let race = of(&fs, "shared_memory_race");
    assert_eq!(race.len(), 1, "{fs:#?}");
    let a = &race[0].assumes;
    assert_eq!(a.len(), 1, "{a:#?}");
    assert_eq!(a[0].name, "guarded_n");
    assert_eq!(a[0].known, vec!["(guarded_n % 256) == 0".to_string(), "guarded_n < 1024".to_string()], "{a:#?}");
}
