//! Replay before report: a correctness finding's witness is run on the
//! interpreter. A true race and a divergent barrier are reproduced; a
//! witness whose accesses do not race in a run is not; a witness that rests
//! on loaded data, or a run that uses its budget first, is left as it is
//! with the reason.

use gpucheck_analysis::facts::{Assumed, Assumption};
use gpucheck_analysis::lints::{Replay, Witness};
use gpucheck_analysis::{check, interp, ir, ptx, replay, Finding, Options};

const KERNELS: &str = r#"
.version 7.0
.target sm_70
.address_size 64
.shared .align 4 .b8 s[1028];

// thread t reads the element thread t + 1 writes, with no barrier between
.visible .entry race(.param .u64 race_param_0) .reqntid 256, 1, 1 {
    .reg .b32 %r<4>; .reg .b64 %rd<8>;
    mov.u32 %r1, %tid.x;
    mov.u64 %rd1, s;
    mul.wide.u32 %rd2, %r1, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.shared.u32 [%rd3], %r1;
    ld.shared.u32 %r2, [%rd3+4];
    ld.param.u64 %rd4, [race_param_0];
    cvta.to.global.u64 %rd5, %rd4;
    add.s64 %rd6, %rd5, %rd2;
    st.global.u32 [%rd6], %r2;
    ret;
}

// the race of `race`, behind a test of loaded data zero-filled buffers fail
.visible .entry skipped(.param .u64 skipped_param_0) .reqntid 256, 1, 1 {
    .reg .pred %p<2>; .reg .b32 %r<4>; .reg .b64 %rd<8>;
    ld.param.u64 %rd4, [skipped_param_0];
    cvta.to.global.u64 %rd5, %rd4;
    ld.global.u32 %r3, [%rd5];
    setp.ne.u32 %p1, %r3, 12345;
    @%p1 bra $L_end;
    mov.u32 %r1, %tid.x;
    mov.u64 %rd1, s;
    mul.wide.u32 %rd2, %r1, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.shared.u32 [%rd3], %r1;
    ld.shared.u32 %r2, [%rd3+4];
    st.global.u32 [%rd5], %r2;
$L_end:
    ret;
}

// threads 128.. skip the barrier
.visible .entry half(.param .u64 half_param_0) .reqntid 256, 1, 1 {
    .reg .pred %p<2>; .reg .b32 %r<2>;
    mov.u32 %r1, %tid.x;
    setp.ge.u32 %p1, %r1, 128;
    @%p1 bra $L_end;
    bar.sync 0;
$L_end:
    ret;
}

// the same, after a loop longer than any replay budget
.visible .entry slow(.param .u64 slow_param_0) .reqntid 256, 1, 1 {
    .reg .pred %p<3>; .reg .b32 %r<3>;
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, 0;
$L_loop:
    add.u32 %r2, %r2, 1;
    setp.lt.u32 %p1, %r2, 100000000;
    @%p1 bra $L_loop;
    setp.ge.u32 %p2, %r1, 128;
    @%p2 bra $L_end;
    bar.sync 0;
$L_end:
    ret;
}

// the race of `race`, then a barrier, then a loop longer than any replay budget
.visible .entry early(.param .u64 early_param_0) .reqntid 256, 1, 1 {
    .reg .pred %p<2>; .reg .b32 %r<4>; .reg .b64 %rd<8>;
    mov.u32 %r1, %tid.x;
    mov.u64 %rd1, s;
    mul.wide.u32 %rd2, %r1, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.shared.u32 [%rd3], %r1;
    ld.shared.u32 %r2, [%rd3+4];
    bar.sync 0;
    mov.u32 %r3, 0;
$L_loop:
    add.u32 %r3, %r3, 1;
    setp.lt.u32 %p1, %r3, 100000000;
    @%p1 bra $L_loop;
    ld.param.u64 %rd4, [early_param_0];
    cvta.to.global.u64 %rd5, %rd4;
    add.s64 %rd6, %rd5, %rd2;
    st.global.u32 [%rd6], %r2;
    ret;
}
"#;

fn findings(replay: bool) -> Vec<Finding> {
    check(KERNELS, &Options { replay, ..Options::default() }, &|_| true).expect("parses").findings
}

fn of<'f>(fs: &'f [Finding], lint: &str, kernel: &str) -> &'f Finding {
    fs.iter().find(|f| f.lint.name == lint && &*f.kernel == kernel).unwrap_or_else(|| panic!("no {lint} in {kernel}: {fs:#?}"))
}

#[test]
fn a_true_race_and_a_divergent_barrier_are_reproduced() {
    let fs = findings(true);
    let race = of(&fs, "shared_memory_race", "race");
    assert!(matches!(&race.replay, Replay::Reproduced { launch, partner: false } if launch.contains("block 0")), "{:?}", race.replay);
    assert!(race.notes.iter().any(|n| n.plain().is_some_and(|t| t.starts_with("reproduced: a run of block 0"))), "{:?}", race.notes);
    let bar = of(&fs, "barrier_divergence", "half");
    assert!(matches!(bar.replay, Replay::Reproduced { .. }), "{:?}", bar.replay);
    // off: nothing is run
    let off = findings(false);
    assert!(off.iter().all(|f| f.replay == Replay::NotRun), "{off:#?}");
    assert!(matches!(of(&off, "shared_memory_race", "race").witness.as_deref(), Some(Witness::Race { .. })));
}

#[test]
fn a_run_that_runs_out_of_budget_proves_nothing() {
    let fs = findings(true);
    let slow = of(&fs, "barrier_divergence", "slow");
    assert!(matches!(&slow.replay, Replay::Unable(why) if why.contains("replay budget")), "{:?}", slow.replay);
}

/// The replay of `fd` alone, in kernel `kernel` of [`KERNELS`].
fn replayed(fd: Finding, kernel: &str) -> Finding {
    replayed_in_turn(vec![(fd, kernel)]).pop().expect("one finding")
}

/// The replays of findings (each in its kernel of [`KERNELS`]) in the
/// order given, sharing one small module's budget.
fn replayed_in_turn(fds: Vec<(Finding, &str)>) -> Vec<Finding> {
    let m = ptx::parse(KERNELS).expect("parses");
    let mcx = ir::ModuleCx::new(&m);
    let mut kernels = Vec::new();
    let mut all = Vec::new();
    for (mut fd, kernel) in fds {
        let index = m.functions.iter().position(|f| f.name == kernel).expect("the kernel");
        let f = &m.functions[index];
        let declared = vec![None; f.params.len()];
        kernels.push(replay::Kernel { index, block: [256, 1, 1], grid: None, declared, names: vec![], dynamic_shared: None });
        fd.replay = Replay::NotRun;
        fd.notes.clear();
        all.push(fd);
    }
    replay::replay(&m, &mcx, &kernels, &mut all, 100);
    all
}

#[test]
fn a_run_stops_once_it_has_seen_its_witnesses() {
    // the race in `early` is seen at the barrier after it: the loop after that, longer than
    // the module's replay budget, is not run, and `half`'s run after it has the budget it needs
    let fs = findings(false);
    let race = of(&fs, "shared_memory_race", "early").clone();
    let bar = of(&fs, "barrier_divergence", "half").clone();
    let out = replayed_in_turn(vec![(race.clone(), "early"), (bar.clone(), "half")]);
    assert!(out.iter().all(|f| matches!(&f.replay, Replay::Reproduced { partner: false, .. })), "{out:#?}");
    // a run that looks for a race it does not see (the global store after the loop, with
    // itself) goes on, and uses the budget: `half`'s is not run
    let m = ptx::parse(KERNELS).expect("parses");
    let index = m.functions.iter().position(|f| f.name == "early").expect("the kernel");
    let f = ir::lower_one(&m, index, &ir::ModuleCx::new(&m));
    let store = f.insts.iter().rposition(|i| i.access() == Some(ir::inst::AccessKind::Store)).expect("the global store");
    let mut other = race;
    other.witness = Some(Box::new(Witness::Race { sites: [(index, store), (index, store)], other: None, memory: None }));
    let out = replayed_in_turn(vec![(other, "early"), (bar, "half")]);
    assert!(matches!(&out[0].replay, Replay::Unable(why) if why.contains("replay budget")), "{:?}", out[0].replay);
    assert!(matches!(&out[1].replay, Replay::Unable(why) if why.contains("used their budget")), "{:?}", out[1].replay);
}

#[test]
fn a_witness_the_run_does_not_show_is_not_reproduced() {
    let fs = findings(false);
    let mut fd = of(&fs, "shared_memory_race", "race").clone();
    // the global store against itself: each thread writes its own element, no two meet
    let m = ptx::parse(KERNELS).expect("parses");
    let index = m.functions.iter().position(|f| f.name == "race").expect("the kernel");
    let f = ir::lower_one(&m, index, &ir::ModuleCx::new(&m));
    let store = f
        .insts
        .iter()
        .position(|i| i.access().is_some_and(|k| k.writes()) && i.space == Some(gpucheck_analysis::ir::inst::Space::Global))
        .expect("the global store");
    let Some(Witness::Race { sites, .. }) = fd.witness.as_deref_mut() else { panic!("a race witness") };
    *sites = [(index, store), (index, store)];
    let r = replayed(fd, "race");
    assert!(matches!(&r.replay, Replay::NotReproduced(how) if how.contains("grid 1×1×1")), "{:?}", r.replay);
    assert!(r.notes.iter().any(|n| n.plain().is_some_and(|t| t.starts_with("not reproduced:"))), "{:?}", r.notes);
}

#[test]
fn a_race_at_one_access_with_another_partner_counts_and_says_so() {
    let fs = findings(false);
    let mut fd = of(&fs, "shared_memory_race", "race").clone();
    // the shared store against itself: no two threads store one element, but the store races with the load
    let Some(Witness::Race { sites, .. }) = fd.witness.as_deref_mut() else { panic!("a race witness") };
    sites[1] = sites[0];
    let r = replayed(fd, "race");
    assert!(matches!(r.replay, Replay::Reproduced { partner: true, .. }), "{:?}", r.replay);
    assert!(r.notes.iter().any(|n| n.plain().is_some_and(|t| t.contains("with another access"))), "{:?}", r.notes);
}

#[test]
fn a_run_that_does_not_reach_the_accesses_proves_nothing() {
    // the race behind a test of loaded data (a race whenever the code runs): the
    // zero-filled buffer fails the test, the accesses never run, and that is no verdict
    let fs = findings(true);
    let r = of(&fs, "shared_memory_race", "skipped");
    assert!(matches!(&r.replay, Replay::Unable(why) if why.contains("did not execute its accesses")), "{:?}", r.replay);
}

#[test]
fn a_witness_resting_on_loaded_data_is_not_replayed() {
    let fs = findings(false);
    let mut fd = of(&fs, "shared_memory_race", "race").clone();
    fd.assumes.push(Assumption {
        name: "%r9".into(),
        kind: Assumed::Loaded,
        ptx_line: Some(12),
        sample: 1024,
        alignment: false,
        known: vec![],
        param: None,
    });
    let r = replayed(fd, "race");
    assert!(matches!(&r.replay, Replay::Unable(why) if why.contains("loaded from memory")), "{:?}", r.replay);
}

/// A kernel that reads the grid workspace (`grid.sync()`), itself or in a
/// function it calls, needs a cooperative launch on a GPU.
#[test]
fn kernels_that_synchronise_their_grid_are_told_apart() {
    let src = r#"
.version 7.0
.target sm_70
.address_size 64
.visible .func sync_grid() {
    .reg .b32 %r<2>;
    mov.u32 %r1, %envreg1;
    ret;
}
.visible .entry coop() {
    call.uni sync_grid, ();
    ret;
}
.visible .entry plain() {
    ret;
}
"#;
    let m = ptx::parse(src).expect("parses");
    assert!(gpucheck_analysis::interp::synchronises_grid(&m, "coop"));
    assert!(!gpucheck_analysis::interp::synchronises_grid(&m, "plain"));
    assert!(!gpucheck_analysis::interp::synchronises_grid(&m, "no_such_kernel"));
}

#[test]
fn a_run_sees_races_only_in_the_memory_it_shadows() {
    // (what the replay of barrier findings alone runs: no byte the threads touch is shadowed,
    // so no race is seen; one for shared races shadows shared memory alone; everything else is
    // as in a run that shadows all)
    let m = ptx::parse(KERNELS).expect("parses");
    let launch = interp::Launch { grid: [1, 1, 1], block: [256, 1, 1], dynamic_shared: 0 };
    let run = |races: interp::RaceMemory| {
        let mut mem = interp::Global::default();
        let out = mem.alloc_zeroed(4096);
        let how = interp::Run { races, ..interp::Run::default() };
        interp::run_with(&m, "race", &launch, &[interp::Arg::Bits(out)], &mut mem, &how).expect("runs")
    };
    let all = run(interp::RaceMemory::ALL);
    assert!(!all.races.is_empty(), "{:?}", all.races);
    for (races, seen) in [
        (interp::RaceMemory::NONE, false),
        (interp::RaceMemory { shared: false, global: true }, false),
        (interp::RaceMemory { shared: true, global: false }, true),
    ] {
        let some = run(races);
        assert_eq!(some.races == all.races, seen, "{races:?}: {:?}", some.races);
        assert!(seen || some.races.is_empty(), "{races:?}: {:?}", some.races);
        assert_eq!(some.sites, all.sites);
        assert_eq!((some.warp_insts, some.lane_insts), (all.warp_insts, all.lane_insts));
    }
}

/// A check that prints its findings alone leaves out the per-site records
/// (`confirm`, the HTML report and `--all-accesses` read them): the
/// findings, their replays and the coverage are the same either way.
#[test]
fn findings_only_leaves_the_records_out_and_the_findings_as_they_are() {
    let run = |findings_only| check(KERNELS, &Options { replay: true, findings_only, ..Options::default() }, &|_| true).expect("parses");
    let (all, only) = (run(false), run(true));
    assert!(!all.accesses.is_empty() && !all.races.is_empty() && !all.barriers.is_empty() && !all.branches.is_empty(), "{all:#?}");
    assert!(only.accesses.is_empty() && only.races.is_empty() && only.barriers.is_empty() && only.branches.is_empty(), "{only:#?}");
    assert!(only.groups.is_empty() && only.cas_seeds.is_empty() && only.unfenced.is_empty());
    assert_eq!(format!("{:?}", all.findings), format!("{:?}", only.findings));
    assert_eq!(format!("{:?}", all.coverage), format!("{:?}", only.coverage));
}
