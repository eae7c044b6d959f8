//! Divergence as lost lane-slots (`facts::slots`), on kernels small enough
//! to count by hand: the idle share a split predicts, and which lint it
//! comes out as.

use gpucheck_analysis::{check, Finding, Metric, Options};

/// A 64-thread kernel (two warps) whose odd lanes run four `add`s that the
/// even lanes wait through, `trips` times (no loop when `None`).
fn kernel(trips: Option<u32>) -> String {
    let (head, tail) = match trips {
        None => ("", "".to_string()),
        Some(n) => ("$L_loop:\n", format!("    add.u32 %r4, %r4, 1;\n    setp.lt.u32 %p2, %r4, {n};\n    @%p2 bra $L_loop;\n")),
    };
    format!(
        r#"
.version 7.0
.target sm_70
.address_size 64
.visible .entry k() .reqntid 64, 1, 1 {{
    .reg .pred %p<3>; .reg .b32 %r<8>;
    mov.u32 %r1, %tid.x;
    and.b32 %r2, %r1, 1;
    setp.eq.u32 %p1, %r2, 0;
    mov.u32 %r4, 0;
{head}    @%p1 bra $L_skip;
    add.u32 %r3, %r1, 1;
    add.u32 %r3, %r3, 1;
    add.u32 %r3, %r3, 1;
    add.u32 %r3, %r3, 1;
$L_skip:
{tail}    ret;
}}"#
    )
}

fn branch_finding(src: &str) -> Finding {
    let r = check(src, &Options::default(), &|_| true).unwrap();
    r.findings.into_iter().find(|f| f.lint.name.ends_with("divergent_branch")).expect("a divergent branch finding")
}

fn share(f: &Finding) -> f64 {
    match f.metric("idle_share") {
        Some(Metric::Float(x)) => *x,
        other => panic!("no idle share: {other:?}"),
    }
}

#[test]
fn a_split_once_around_a_few_instructions_is_cheap() {
    // per warp: 4 + 1 + 4 + 1 = 10 instructions issued (the odd lanes run the adds);
    // idle: the 16 even lanes through the 4 adds
    let f = branch_finding(&kernel(None));
    assert_eq!(f.lint.name, "cheap_divergent_branch");
    let expected = (2.0 * 4.0 * 16.0) / (2.0 * 10.0 * 32.0);
    assert!((share(&f) - expected).abs() < 1e-9, "{} against {expected}", share(&f));
}

#[test]
fn a_split_repeated_by_a_loop_is_counted_in_every_iteration() {
    // per warp: 4 before the loop, (1 + 4 + 3) × 4 iterations, 1 after: 37 instructions;
    // idle: 16 lanes through 4 adds in each of the 4 iterations
    let f = branch_finding(&kernel(Some(4)));
    let expected = (2.0 * 4.0 * 4.0 * 16.0) / (2.0 * 37.0 * 32.0);
    assert!((share(&f) - expected).abs() < 1e-9, "{} against {expected}", share(&f));
    assert_eq!(f.lint.name, "divergent_branch", "21.6 % of the lane-slots, in a loop: worth changing");
    assert!(matches!(f.metric("idle_lane_slots"), Some(Metric::Int(512))));
    assert!(matches!(f.metric("kernel_lane_slots"), Some(Metric::Int(2368))));
}
