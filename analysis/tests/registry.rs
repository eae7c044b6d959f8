//! The lint registry against what users read and what passes emit: the
//! README's lint table is the registry's own table, and every finding the
//! analysis produces (on the corpus, the example kernels and the seed
//! examples run by other tests) names a registered lint — `lints::run`
//! asserts that in debug builds, this test checks it on real PTX.

use gpucheck_analysis::lints::registry::{is_registered, markdown_table};
use gpucheck_analysis::{check, Options, LINTS};

#[test]
fn readme_lint_table_is_the_registry() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../README.md")).unwrap();
    let table = markdown_table();
    assert!(
        readme.contains(&table),
        "README.md's lint table differs from the registry; replace it with the output of `cargo gpucheck lints --markdown`:\n{table}"
    );
    assert_eq!(table.lines().count(), LINTS.len() + 2);
}

#[test]
fn findings_name_registered_lints() {
    // one kernel per pass family: a divergent branch (a cheap one), an uncoalesced access,
    // a bank conflict, a race, an access outside its shared array and a divergent barrier
    let src = r#"
.version 7.0
.target sm_70
.address_size 64
.shared .align 4 .b8 s[4096];
.visible .entry k(.param .u64 k_param_0) .reqntid 256, 1, 1 {
    .reg .pred %p<3>; .reg .b32 %r<8>; .reg .b64 %rd<6>;
    ld.param.u64 %rd1, [k_param_0];
    cvta.to.global.u64 %rd2, %rd1;
    mov.u32 %r1, %tid.x;
    mul.wide.u32 %rd3, %r1, 128;
    add.s64 %rd4, %rd2, %rd3;
    ld.global.u32 %r2, [%rd4];
    shl.b32 %r3, %r1, 7;
    mov.u32 %r4, s;
    add.s32 %r5, %r4, %r3;
    st.shared.u32 [%r5], %r2;
    ld.shared.u32 %r6, [%r4];
    st.shared.u32 [%r5+4], %r6;
    and.b32 %r7, %r1, 1;
    setp.eq.u32 %p1, %r7, 0;
    @%p1 bra $L_end;
    bar.sync 0;
$L_end:
    ret;
}"#;
    let r = check(src, &Options::default(), &|_| true).unwrap();
    let mut names: Vec<&str> = r.findings.iter().map(|f| f.lint.name).collect();
    names.sort();
    names.dedup();
    assert_eq!(
        names,
        // (the branch decides one barrier: a split that costs few lane-slots, pedantic; rows of 128
        // bytes for 256 threads leave the 4096-byte array)
        [
            "barrier_divergence",
            "cheap_divergent_branch",
            "shared_bank_conflict",
            "shared_memory_race",
            "shared_out_of_bounds",
            "uncoalesced_global_access"
        ],
        "{:#?}",
        r.findings
    );
    assert!(r.findings.iter().all(|f| is_registered(f.lint)));
}
