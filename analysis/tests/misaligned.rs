//! `misaligned_global_access` on a few lines of PTX: `a[i + off]` with a
//! runtime `off` is predicted at 4 sectors per request when `off` is a
//! multiple of 8 floats and 5 otherwise, and reported (pedantic); with
//! the offset scaled to whole sectors (`off * 8` floats) it is not.

use gpucheck_analysis::{check, Finding, Metric, Options};

fn kernel(offset_shift: u32) -> String {
    format!(
        r#"
.version 7.0
.target sm_80
.address_size 64
.visible .entry shifted(.param .u64 a, .param .u32 off, .param .u64 out) .reqntid 256, 1, 1 {{
    .reg .b32 %r<8>; .reg .b64 %rd<10>; .reg .f32 %f<2>;
    ld.param.u64 %rd1, [a];
    ld.param.u32 %r1, [off];
    ld.param.u64 %rd2, [out];
    cvta.to.global.u64 %rd3, %rd1;
    cvta.to.global.u64 %rd4, %rd2;
    mov.u32 %r2, %tid.x;
    mov.u32 %r3, %ctaid.x;
    mov.u32 %r4, %ntid.x;
    mad.lo.s32 %r5, %r3, %r4, %r2;
    shl.b32 %r6, %r1, {offset_shift};
    add.s32 %r7, %r5, %r6;
    mul.wide.s32 %rd5, %r7, 4;
    add.s64 %rd6, %rd3, %rd5;
    ld.global.f32 %f1, [%rd6];
    mul.wide.s32 %rd7, %r5, 4;
    add.s64 %rd8, %rd4, %rd7;
    st.global.f32 [%rd8], %f1;
    ret;
}}"#
    )
}

fn misaligned(src: &str) -> Vec<Finding> {
    let r = check(src, &Options::default(), &|_| true).expect("parses");
    r.findings.into_iter().filter(|f| f.lint.name == "misaligned_global_access").collect()
}

fn metric(f: &Finding, name: &str) -> Option<i64> {
    f.metrics.iter().find(|(k, _)| *k == name).and_then(|(_, v)| match v {
        Metric::Int(x) => Some(*x),
        _ => None,
    })
}

#[test]
fn a_runtime_offset_is_reported_with_both_costs() {
    let fs = misaligned(&kernel(0));
    assert_eq!(fs.len(), 1, "only the shifted load: {fs:#?}");
    assert_eq!(fs[0].ptx_line, 20);
    assert_eq!((metric(&fs[0], "sectors_per_request"), metric(&fs[0], "misaligned_sectors_per_request")), (Some(4), Some(5)));
    assert!(
        fs[0]
            .message
            .contains("5 sectors per warp request when an offset added to the address is not a multiple of 32 bytes, 4 when it is"),
        "{}",
        fs[0].message
    );
}

#[test]
fn an_offset_in_whole_sectors_is_not() {
    // `off << 3` floats is a multiple of 32 bytes whatever `off` is
    assert!(misaligned(&kernel(3)).is_empty());
}

/// Each warp of a block is counted for itself (the counts of the warp
/// before are taken only for a request moved by whole sectors or words):
/// warp `k` of `a[t * k]` reads with a lane stride of `4k` bytes, from a
/// broadcast in warp 0 to twelve sectors in warp 3; in shared memory, two
/// lanes meet in one bank in warp 2 alone.
#[test]
fn every_warp_of_an_access_is_counted() {
    let src = r#"
.version 7.0
.target sm_80
.address_size 64
.visible .entry per_warp(.param .u64 a, .param .u64 out) .reqntid 128, 1, 1 {
    .shared .align 4 .b8 tile[2048];
    .reg .b32 %r<12>; .reg .b64 %rd<10>; .reg .f32 %f<3>;
    ld.param.u64 %rd1, [a];
    ld.param.u64 %rd2, [out];
    cvta.to.global.u64 %rd3, %rd1;
    cvta.to.global.u64 %rd4, %rd2;
    mov.u32 %r1, %tid.x;
    shr.u32 %r2, %r1, 5;
    mul.lo.u32 %r3, %r1, %r2;
    mul.wide.u32 %rd5, %r3, 4;
    add.s64 %rd6, %rd3, %rd5;
    ld.global.f32 %f1, [%rd6];
    mov.u32 %r4, tile;
    shl.b32 %r5, %r3, 2;
    add.s32 %r6, %r4, %r5;
    ld.shared.f32 %f2, [%r6];
    add.f32 %f1, %f1, %f2;
    mul.wide.u32 %rd7, %r1, 4;
    add.s64 %rd8, %rd4, %rd7;
    st.global.f32 [%rd8], %f1;
    ret;
}"#;
    let r = check(src, &Options::default(), &|_| true).expect("parses");
    let at = |line: u32| r.accesses.iter().find(|a| a.site.ptx_line == line).unwrap_or_else(|| panic!("no access at line {line}"));
    // per warp 1, 4, 8 and 12 sectors: the most frequent (a tie: the largest) and the worst are 12
    assert_eq!(at(17).sectors.map(|s| (s.0, s.1)), Some((12, 12)), "{:?}", at(17));
    // per warp 1, 1, 2 and 1 lanes per bank
    assert_eq!(at(21).conflict, Some((1, 2)), "{:?}", at(21));
}
