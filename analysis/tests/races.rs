//! Barrier intervals on hand-built CFGs (GPUVerify's Fig. 3: the scan of
//! Fig. 1a as a CFG, with and without each barrier; a do-while loop; a
//! short-circuit condition) and the two-thread conflict check.

use gpucheck_analysis::divergence::{Divergence, Summaries};
use gpucheck_analysis::ir;
use gpucheck_analysis::memory::{accesses, Access, AccessKind};
use gpucheck_analysis::races::{conflict, intervals, RaceKind};
use gpucheck_analysis::{check, ptx, Options};

/// GPUVerify Fig. 3 (scan 1a): guarded read, barrier, guarded write, barrier, in a loop.
fn scan(first_barrier: bool, second_barrier: bool) -> String {
    let b1 = if first_barrier { "bar.sync 0;" } else { "" };
    let b2 = if second_barrier { "bar.sync 0;" } else { "" };
    format!(
        r#".version 7.0
.target sm_70
.address_size 64
.shared .align 4 .b8 sum[1024];
.visible .entry scan() .reqntid 256, 1, 1 {{
  .reg .pred %p<4>; .reg .b32 %r<16>;
  mov.u32 %r1, %tid.x;
  mov.u32 %r9, sum;
  mov.u32 %r2, 1;
  mov.u32 %r3, 0;
$Lhead:
  setp.ge.u32 %p1, %r2, 256;
  @%p1 bra $Lexit;
  setp.lt.u32 %p2, %r1, %r2;
  @%p2 bra $Lb1;
  sub.s32 %r4, %r1, %r2;
  shl.b32 %r5, %r4, 2;
  add.s32 %r5, %r5, %r9;
  ld.shared.u32 %r3, [%r5];
$Lb1:
  {b1}
  @%p2 bra $Lb2;
  shl.b32 %r6, %r1, 2;
  add.s32 %r6, %r6, %r9;
  st.shared.u32 [%r6], %r3;
$Lb2:
  {b2}
  shl.b32 %r2, %r2, 1;
  bra.uni $Lhead;
$Lexit:
  ret;
}}"#
    )
}

fn with_accesses<R>(src: &str, f: impl FnOnce(&ir::FunctionIr<'_>, &Divergence, Vec<Access>) -> R) -> R {
    let m = ptx::parse(src).unwrap();
    let fns = ir::lower(&m);
    let sums = Summaries::compute(&fns);
    let d = Divergence::analyze(&fns[0], &sums);
    let a = accesses(&fns[0], &d).collect();
    f(&fns[0], &d, a)
}

/// Does the load (access 0) share an interval with the store (access 1)?
fn load_meets_store(src: &str) -> bool {
    with_accesses(src, |f, _, a| {
        assert_eq!(a.len(), 2);
        assert_eq!((a[0].kind, a[1].kind), (AccessKind::Load, AccessKind::Store));
        let iv = intervals(f, &a, &|_| false);
        iv.share(0, 1)
    })
}

#[test]
fn gpuverify_fig3_intervals() {
    // both barriers: the read and the write are always separated
    assert!(!load_meets_store(&scan(true, true)));
    // without the first barrier they meet in the same iteration
    assert!(load_meets_store(&scan(false, true)));
    // without the second, iteration i's write meets iteration i+1's read around the back edge
    assert!(load_meets_store(&scan(true, false)));
}

#[test]
fn gpuverify_fig3_verdicts() {
    let races = |src: String| {
        check(&src, &Options::default(), &|_| true)
            .unwrap()
            .findings
            .into_iter()
            .filter(|f| f.lint.name == "shared_memory_race")
            .collect::<Vec<_>>()
    };
    assert!(races(scan(true, true)).is_empty());
    let r = races(scan(false, true));
    assert_eq!(r.len(), 1);
    assert!(
        r[0].message.starts_with("write-after-read data race on shared memory: thread 1 writes element 1 while thread 2 reads it"),
        "{}",
        r[0].message
    );
    assert_eq!(races(scan(true, false)).len(), 1);
}

#[test]
fn every_access_meets_itself_and_entry_bounds_intervals() {
    // do-while loop without barriers: the store meets itself (two threads) and the load
    let src = ".version 7.0\n.target sm_70\n.shared .align 4 .b8 s[1024];\n.entry k() {\n .reg .pred %p<2>; .reg .b32 %r<8>;\n mov.u32 %r1, %tid.x;\n mov.u32 %r7, s;\n shl.b32 %r2, %r1, 2;\n add.s32 %r2, %r2, %r7;\n ld.shared.u32 %r3, [%r2];\n bar.sync 0;\n$L:\n st.shared.u32 [%r2], %r3;\n add.s32 %r3, %r3, 1;\n setp.lt.u32 %p1, %r3, 10;\n @%p1 bra $L;\n ret;\n}\n";
    with_accesses(src, |f, _, a| {
        let iv = intervals(f, &a, &|_| false);
        // the load (before the barrier) never meets the store (after it); each meets itself
        assert!(!iv.share(0, 1));
        assert!(iv.share(0, 0) && iv.share(1, 1));
        // one interval from the entry (the load), one after the barrier, around the back edge (the store)
        assert_eq!(iv.members, [vec![0], vec![1]]);
    });
}

#[test]
fn two_thread_check() {
    let w = |kind| Access {
        inst: gpucheck_analysis::ir::InstId::new(0),
        kind,
        space: gpucheck_analysis::ir::space::Space::Shared,
        assumed: false,
        width: 4,
        addr: gpucheck_analysis::divergence::AbsVal::Bottom,
        addr_value: None,
        offset: 0,
    };
    let accs = vec![w(AccessKind::Store), w(AccessKind::Load), w(AccessKind::Atomic), w(AccessKind::Atomic)];
    let lanes = |f: &dyn Fn(usize) -> Option<i64>| Some(vec![Some(gpucheck_analysis::races::sorted(&(0..64).map(f).collect::<Vec<_>>()))]);
    // s[t] written, s[t + 1] read: thread 0 reads element 1 that thread 1 writes
    let addrs = vec![lanes(&|t| Some(4 * t as i64)), lanes(&|t| Some(4 * (t as i64 + 1))), lanes(&|_| Some(0)), lanes(&|_| Some(0))];
    let r = conflict(&accs, &addrs, 0, 1).expect("a race");
    assert_eq!((r.kind, r.threads, r.offset), (RaceKind::ReadAfterWrite, (1, 0), 4));
    // a thread reading its own element is not a race
    let own = vec![lanes(&|t| Some(4 * t as i64)), lanes(&|t| Some(4 * t as i64)), None, None];
    assert!(conflict(&accs, &own, 0, 1).is_none());
    // guarded: writers t < 16 write s[t], readers t < 16 read s[t + 16] (sequential reduction)
    let guarded = vec![lanes(&|t| (t < 16).then_some(4 * t as i64)), lanes(&|t| (t < 16).then_some(4 * (t as i64 + 16))), None, None];
    assert!(conflict(&accs, &guarded, 0, 1).is_none());
    // every thread writes the same word: write-after-write with itself
    let same = vec![lanes(&|_| Some(0)), None, None, None];
    assert_eq!(conflict(&accs, &same, 0, 0).map(|r| r.kind), Some(RaceKind::WriteAfterWrite));
    // atomics do not race with atomics
    assert!(conflict(&accs, &addrs, 2, 3).is_none());
}

/// A clamped read `v = s[min(t, 127)]` racing with thread 127's store to
/// `s[127]`, and `use_v` deciding what threads past 127 do with `v`.
fn clamped(use_v: &str) -> String {
    format!(
        r#".version 7.0
.target sm_70
.address_size 64
.shared .align 4 .b8 s[1024];
.visible .entry clamped(.param .u64 out) .reqntid 256, 1, 1 {{
  .reg .pred %p<4>; .reg .b32 %r<16>; .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [out];
  cvta.to.global.u64 %rd2, %rd1;
  mov.u32 %r1, %tid.x;
  mov.u32 %r9, s;
  min.u32 %r2, %r1, 127;
  shl.b32 %r3, %r2, 2;
  add.s32 %r3, %r3, %r9;
  ld.shared.u32 %r4, [%r3];
  shl.b32 %r5, %r1, 2;
  add.s32 %r5, %r5, %r9;
  setp.lt.u32 %p1, %r1, 128;
  add.s32 %r6, %r4, 1;
  {use_v}
  ret;
}}"#
    )
}

/// Findings of `lint` in `src`, every lint enabled.
fn findings_of(src: &str, lint: &str) -> Vec<gpucheck_analysis::Finding> {
    check(src, &Options::default(), &|_| true).unwrap().findings.into_iter().filter(|f| f.lint.name == lint).collect()
}

#[test]
fn a_clamped_read_its_thread_discards_is_benign() {
    // guarded off for threads past 127: `@%p1 st [s + 4t], v + 1`
    let guarded = clamped("@%p1 st.shared.u32 [%r5], %r6;");
    // used only in a block threads past 127 do not run
    let branched = clamped("@!%p1 bra $Lend;\n  st.shared.u32 [%r5], %r6;\n$Lend:");
    for src in [guarded, branched] {
        assert!(findings_of(&src, "shared_memory_race").is_empty(), "{src}");
        let benign = findings_of(&src, "benign_race");
        assert_eq!(benign.len(), 1, "{src}");
        assert!(benign[0].message.contains("thread 127 writes element 127 while thread 128 reads it"), "{}", benign[0].message);
    }
    // threads past 127 store what they read (to their own slot): a race that matters
    let kept = clamped("selp.u32 %r7, %r6, %r4, %p1;\n  st.shared.u32 [%r5], %r7;");
    assert_eq!(findings_of(&kept, "shared_memory_race").len(), 1);
    assert!(findings_of(&kept, "benign_race").is_empty());
    // threads 128..199 discard it, threads from 200 keep it: the race is found again among those
    let some = clamped("setp.ge.u32 %p2, %r1, 200;\n  or.pred %p3, %p1, %p2;\n  @%p3 st.shared.u32 [%r5], %r6;");
    let r = findings_of(&some, "shared_memory_race");
    assert_eq!(r.len(), 1);
    assert!(r[0].message.contains("thread 127 writes element 127 while thread 200 reads it"), "{}", r[0].message);
    assert!(findings_of(&some, "benign_race").is_empty());
}

/// A loop of four iterations where the third moves the store one element
/// along through a join on the counter (`x = i == 2 ? t + 1 : t`): only
/// that iteration races (thread t stores element t + 1 while thread t + 1
/// loads it), so the check compares iterations past the two it samples
/// for an address that moves with the counter through a join, not only
/// through arithmetic.
#[test]
fn an_address_moved_by_a_join_on_the_counter_is_compared_in_later_iterations() {
    let src = r#".version 7.0
.target sm_70
.address_size 64
.shared .align 4 .b8 s[1028];
.visible .entry k() .reqntid 256, 1, 1 {
  .reg .pred %p<4>; .reg .b32 %r<16>;
  mov.u32 %r1, %tid.x;
  mov.u32 %r9, s;
  mov.u32 %r2, 0;
$Lhead:
  setp.eq.u32 %p1, %r2, 2;
  @%p1 bra $Lmoved;
  mov.u32 %r3, %r1;
  bra.uni $Ljoin;
$Lmoved:
  add.s32 %r3, %r1, 1;
$Ljoin:
  shl.b32 %r4, %r1, 2;
  add.s32 %r4, %r4, %r9;
  ld.shared.u32 %r5, [%r4];
  shl.b32 %r6, %r3, 2;
  add.s32 %r6, %r6, %r9;
  st.shared.u32 [%r6], %r5;
  bar.sync 0;
  add.s32 %r2, %r2, 1;
  setp.lt.u32 %p2, %r2, 4;
  @%p2 bra $Lhead;
  ret;
}"#;
    let r = findings_of(src, "shared_memory_race");
    assert_eq!(r.len(), 1, "{r:#?}");
    assert!(r[0].message.contains("in iteration 3 of 4 of the loop"), "{}", r[0].message);
    // no source file named: the fix in CUDA C's words, not Rust's
    let help: Vec<&str> = r[0].notes.iter().filter(|n| n.kind == gpucheck_analysis::NoteKind::Help).filter_map(|n| n.plain()).collect();
    assert!(help.iter().any(|h| h.contains("`__syncthreads()`")), "{help:?}");
}
