//! `shared_memory_race`: races on shared memory within a block.
//!
//! Owns: the message (kind, witness threads, both Rust lines), shared with
//! `global_memory_race`. The detection is `crate::races`, read from the
//! facts.

use super::{Findings, Lint, LintCx};
use crate::ir::inst::{AccessKind, Space};
use crate::ir::loops::Trips;
use crate::races::param::ParamCondition;

declare_lint! {
    /// ### What it does
    /// Finds pairs of shared memory accesses that can run in the same barrier
    /// interval (no `_syncthreads()` between them on some path, including around
    /// loop back edges), in two different threads of a block, on the same bytes,
    /// at least one of them a write (atomics do not race with atomics). The
    /// message names the kind (read-after-write, write-after-read,
    /// write-after-write) and a witness pair of threads, and says "one
    /// iteration apart" when only the loop's back edge joins the two (a barrier
    /// separates them within one iteration: the tiled matrix multiply without
    /// its second barrier). Warp-synchronous code is not exempt: threads of a
    /// warp are scheduled independently since Volta, and a witness pair of
    /// lanes of one warp says so (`__syncwarp()` separates them; in Rust, which
    /// has no such function, `core::arch::asm!("bar.warp.sync -1;")`). The help
    /// names the fix the pattern calls for: an atomic (or a reduction) when
    /// every thread updates one element (`*out += x[i]`); `__syncwarp()` for
    /// lanes of one warp under thread-dependent control (`if (t < 32)`: a block
    /// barrier there would be barrier divergence); a barrier every thread
    /// reaches, outside thread-dependent branches; for a race around a loop's
    /// back edge, a barrier at the end of the loop body. Two accesses
    /// are paired only when two threads can be at them between the same two
    /// barriers: a path from one to the other crosses no barrier, or a
    /// thread-dependent branch leads to each; a write in a loop whose body ends
    /// with a barrier is not paired with the code after the loop through the
    /// path where the loop runs no iteration (its trip count is uniform).
    /// One diagnostic per source line: the races of one statement (the tile
    /// loop's `As[ty][k] * Bs[k][tx]`, one missing barrier) are one error with
    /// every access labelled and the other races named in notes; the copies
    /// the compiler made of a race are counted, and the elements a race
    /// touches are counted in its note ("the same race on 15 more").
    ///
    /// Loop counters are compared at their first two values, and, in a loop whose
    /// trip count is a constant (at most 64: a counter stepped by a constant or
    /// loop-invariant amount, tested against constants or the block shape), at
    /// every iteration when an address or a thread-dependent guard in the loop
    /// moves with the counter: the message names the iteration ("in iteration 4
    /// of 8 of the loop"). A loop whose bound is a runtime value (`i < n`) has its
    /// first 16 iterations compared when a thread-dependent guard in it moves with
    /// the counter (`if (t == i)`), and the finding says the race needs the loop to
    /// run that many times.
    ///
    /// Scalar parameters are sampled, except one that offsets an index by whole
    /// elements (`a[t + offset]`): its values are solved for exactly, and a
    /// race that needs particular values says which (`when 1 ≤ offset ≤ 255`,
    /// `when x = 185`); two parameters that move the two threads' addresses one
    /// each (thread 0's `a[x]`, thread 1's `a[y]`) give the relation the race
    /// needs (`when y = x`, `when y = x + 1`). A size or row pitch that scales an
    /// index is not solved for (rows that overlap because the pitch is smaller than a row are not a
    /// launch to judge).
    ///
    /// Before it is reported, the finding's witness runs on the built-in
    /// interpreter (its blocks, the values it names, zero-filled buffers): a
    /// note says "reproduced", or why it was not replayed; one the run does
    /// not show is pedantic (`-W gpucheck::pedantic`), saying so
    /// (`--no-replay` turns this off).
    ///
    /// ### Known problems
    /// A write guarded by a test of the very value it overwrites
    /// (`if buf[y][x] == 0 && buf[y][k] != 0 { buf[y][x] = … }`) is judged as if
    /// the guard held in every thread: the data that makes the pair impossible
    /// is not known statically, so such a pair may be reported.
    ///
    /// ### Why is this bad
    /// The result depends on the order in which threads run: wrong answers that
    /// show up once in a thousand runs, or on another GPU.
    ///
    /// ### Example
    /// ```rust
    /// *s.add(t) = x;
    /// let right = *s.add(t + 1);      // thread t reads what thread t + 1 writes
    /// ```
    /// Use instead: put a barrier between the write and the read:
    /// ```rust
    /// *s.add(t) = x;
    /// _syncthreads();
    /// let right = *s.add(t + 1);
    /// ```
    pub static SHARED_MEMORY_RACE = {
        name: "shared_memory_race",
        group: Correctness,
        default: Deny,
        summary: "two threads of a block access the same shared bytes in one barrier interval (also around loop back edges), one writing; names read-after-write / write-after-read / write-after-write and a witness pair of threads",
        one_per_line: true,
    }
}

pub fn check(cx: &LintCx<'_, '_, '_>, out: &mut Findings) {
    report(cx, Space::Shared, &SHARED_MEMORY_RACE, out);
}

/// One finding per racing pair in `space` (shared with `global_memory_race`).
pub(super) fn report(cx: &LintCx<'_, '_, '_>, space: Space, lint: &'static Lint, out: &mut Findings) {
    // the name of each first access's base (many races share one)
    let mut bases: rustc_hash::FxHashMap<usize, std::sync::Arc<str>> = Default::default();
    // the texts the compiler's copies of one race say alike (they differ in their
    // instructions, not in their words), each made once
    let mut said = Said::default();
    // the fix of each race pattern, said once (most races of a function share a few)
    let mut helps: rustc_hash::FxHashMap<(Pattern, bool), std::sync::Arc<str>> = Default::default();
    // races that come from threads skipping a divergent barrier are told with that barrier
    for r in cx.facts.races.iter().filter(|r| r.through_barrier.is_none() && r.keyed.is_none()) {
        let (a, b) = (cx.facts.race_site(r.first), cx.facts.race_site(r.second));
        if a.space != space {
            continue;
        }
        let (t1, t2) = r.threads;
        let elem = r.offset / a.width.max(1) as i64;
        let lint = if r.benign.is_some() { &super::benign_race::BENIGN_RACE } else { lint };
        let what = |k: AccessKind| if k == AccessKind::Load { "reads" } else { "writes" };
        // a race that needs particular values of a parameter names them
        let (when, example) = match &r.when {
            Some(ParamCondition::Relation { param, other, plus }) => {
                let plus = match *plus {
                    0 => String::new(),
                    k if k > 0 => format!(" + {k}"),
                    k => format!(" - {}", -k),
                };
                (format!(" when `{}` = `{}`{plus}", crate::names::demangle(param), crate::names::demangle(other)), String::new())
            }
            Some(ParamCondition::Values { param, lo, hi, contiguous, example }) => {
                let p = format!("`{}`", crate::names::demangle(param));
                let cond = match (lo == hi, contiguous) {
                    (true, _) => format!("{p} = {lo}"),
                    (false, true) => format!("{lo} ≤ {p} ≤ {hi}"),
                    (false, false) => format!("{p} takes one of some values from {lo} to {hi}"),
                };
                let example = if lo == hi { String::new() } else { format!("for {p} = {example}, ") };
                (format!(" when {cond}"), example)
            }
            Some(ParamCondition::Bound { param, lo, hi, example }) => {
                let p = format!("`{}`", crate::names::demangle(param));
                let cond = match (lo, hi) {
                    (Some(l), Some(h)) if l == h => format!("{p} = {l}"),
                    (Some(l), Some(h)) => format!("{l} ≤ {p} ≤ {h}"),
                    (Some(l), None) => format!("{p} ≥ {l}"),
                    (None, Some(h)) => format!("{p} ≤ {h}"),
                    (None, None) => format!("{p} takes some value"),
                };
                let example = if lo == hi { String::new() } else { format!("for {p} = {example}, ") };
                (format!(" when {cond}"), example)
            }
            None => (String::new(), String::new()),
        };
        let at = match r.iteration {
            Some((it, Trips::Runtime)) => format!(", in iteration {} of the loop (when it runs that many times)", it + 1),
            Some((it, Trips::Known(trips))) => format!(", in iteration {} of {trips} of the loop", it + 1),
            None if r.next_iteration => ", one iteration apart".to_string(),
            None => String::new(),
        };
        let message = said
            .messages
            .entry((r.kind, [t1, t2], elem, [a.kind, b.kind], [when, example, at]))
            .or_insert_with_key(|(kind, _, _, _, [when, example, at])| {
                format!(
                    "{} data race on {} memory{when}: {example}thread {t2} {} element {elem} while thread {t1} {} it{at}",
                    kind.describe(),
                    space.name(),
                    what(b.kind),
                    what(a.kind),
                )
                .into()
            })
            .clone();
        let label = |t: usize, k: AccessKind, said: &mut Said| {
            said.labels.entry((t, k)).or_insert_with(|| format!("thread {t} {} here", what(k)).into()).clone()
        };
        // primary span on the second access, secondary on the first (the write)
        let mut fd = cx.race_finding(lint, r.second, message, label(t2, b.kind, &mut said));
        // (room for the notes a race says made once, not grown from four)
        fd.notes.reserve_exact(RACE_NOTES);
        fd.assumes = cx.facts.race_assumes(r);
        fd.witness = Some(cx.race_witness(r));
        if let Some(p) = cx.race_span(r.first).filter(|_| r.first != r.second) {
            let here = match cx.imported(r.first) {
                Some(x) => format!("thread {t1} {} here (in `{}`)", what(a.kind), x.callee),
                None => label(t1, a.kind, &mut said).to_string(),
            };
            fd.secondary.push((p, here));
        }
        if let (Some(x), true) = (cx.imported(r.first), r.first != r.second) {
            // the other access is in a call too: which one
            fd.note_text(super::Text::at(format!("thread {t1} {} it in `{}`, in the call at ", what(a.kind), x.callee), cx.place(a.inst), String::new()));
        }
        if r.first == r.second {
            fd.note(format!("both threads execute this same {}", if a.kind == AccessKind::Load { "load" } else { "store" }));
        }
        // the kernel's language: its barriers as it spells them (a finding with no line of its
        // own: the module's, CUDA C unless it names a Rust file or symbol)
        let rust = match &fd.span {
            Some(s) => s.file.ends_with(".rs"),
            None => cx.srcmap.rust_module(),
        };
        let (barrier, syncwarp) =
            if rust { ("`_syncthreads()`", "`core::arch::asm!(\"bar.warp.sync -1;\")`") } else { ("`__syncthreads()`", "`__syncwarp()`") };
        if r.lanes_only && r.benign.is_none() {
            let (lo, hi) = (t1.min(t2), t1.max(t2));
            fd.note(said.lanes.entry((lo, hi, rust)).or_insert_with(|| format!(
                "threads {lo} and {hi} are lanes of one warp: lanes of a warp are not guaranteed to run in lock-step on sm_70 and later; {syncwarp} (or a barrier every thread reaches) between the accesses separates them"
            ).into()).clone());
        }
        let base = bases.entry(r.first).or_insert_with(|| super::base_name(cx.facts.f, a).into()).clone();
        let (width, elements) = (a.width, r.elements);
        fd.note(
            said.separated
                .entry((elem, base, width, elements))
                .or_insert_with_key(|(_, base, _, _)| {
                    let more = if elements > 1 { format!("; the same race on {} more", elements - 1) } else { String::new() };
                    format!("no barrier separates the two accesses on some path (element {elem} of {base}, in {width}-byte elements{more})").into()
                })
                .clone(),
        );
        match &r.when {
            Some(ParamCondition::Relation { param, other, .. }) => fd.note(format!(
                "the two threads' addresses depend on `{}` and `{}`, one each: they meet exactly when the condition holds (the witness is for one such pair of values); for other values no two threads touch the same bytes",
                crate::names::demangle(other),
                crate::names::demangle(param),
            )),
            Some(ParamCondition::Values { param, .. }) => fd.note(format!(
                "the addresses depend on `{}`: solved for every value it can hold, not sampled; for other values no two threads touch the same bytes",
                crate::names::demangle(param)
            )),
            Some(ParamCondition::Bound { param, .. }) => fd.note(format!(
                "the two threads reach these accesses only for those values of `{}`: the branches and loop tests on their way compare it with their values (solved, not sampled); the addresses do not depend on it",
                crate::names::demangle(param)
            )),
            None => {}
        }
        match r.iteration {
            Some((it, Trips::Runtime)) => {
                fd.metrics.push(("iteration", super::Metric::Int(it as i64 + 1)));
                fd.note(format!(
                    "the loop's bound is a runtime value: its first {RUNTIME} iterations were compared (the counter's values in each are exact), and this is the first that races; a launch whose loop stops before iteration {} does not race here",
                    it + 1,
                    RUNTIME = crate::races::RUNTIME_ITERATIONS
                ));
            }
            Some((it, Trips::Known(trips))) => {
                fd.metrics.push(("iteration", super::Metric::Int(it as i64 + 1)));
                fd.metrics.push(("loop_iterations", super::Metric::Int(trips as i64)));
                fd.note(format!("the loop runs {trips} iterations (its counter's start, step and bound are constants): each was compared, not only the first two, and this is the first that races"));
            }
            None => {}
        }
        if r.next_iteration {
            fd.note("the race goes around the loop's back edge: a thread one iteration ahead meets the other's access of the previous iteration; a barrier at the end of the loop body (before the next iteration's access) separates them");
        }
        cx.shape_note(&mut fd);
        if let Some(why) = r.benign {
            let (note, help) = super::benign_race::why(why, "thread", "block");
            fd.note(note);
            fd.help(help);
        } else {
            let pattern = race_pattern(cx, r);
            fd.help(helps.entry((pattern, rust)).or_insert_with(|| race_help(pattern, barrier, syncwarp, rust).into()).clone());
        }
        out.push(fd);
    }
}

/// The notes a race finding makes room for at once: most say four to
/// eight (`lints::run` then drops the room a finding did not use).
const RACE_NOTES: usize = 8;

/// What a race's message says: its kind, the threads (first, second), the
/// element, the kinds of access (first, second), and the condition, its
/// example and the iteration in words.
type MessageKey = (crate::races::RaceKind, [usize; 2], i64, [AccessKind; 2], [String; 3]);

/// The texts of one function's race findings, by what they say (`report`):
/// the message, the labels of the two accesses, and the notes that name
/// threads and elements.
#[derive(Default)]
struct Said {
    messages: rustc_hash::FxHashMap<MessageKey, std::sync::Arc<str>>,
    labels: rustc_hash::FxHashMap<(usize, AccessKind), std::sync::Arc<str>>,
    /// By the two lanes and the language (which names the warp barrier).
    lanes: rustc_hash::FxHashMap<(usize, usize, bool), std::sync::Arc<str>>,
    /// By element, base, width and the elements the race touches.
    separated: rustc_hash::FxHashMap<(i64, std::sync::Arc<str>, u32, usize), std::sync::Arc<str>>,
}

/// What a race's fix depends on: an accumulation (`*out += x` by every
/// thread), accesses under thread-dependent control, lanes of one warp
/// only, a race around a loop's back edge.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
struct Pattern {
    accumulation: bool,
    under_branch: bool,
    lanes_only: bool,
    next_iteration: bool,
}

fn race_pattern(cx: &LintCx<'_, '_, '_>, r: &crate::races::Race) -> Pattern {
    let facts = cx.facts;
    let (a, b) = (facts.race_site(r.first), facts.race_site(r.second));
    let accumulation = crate::races::read_modify_write(facts.f, a, b) || crate::races::read_modify_write(facts.f, b, a);
    let under_branch = [a.inst, b.inst].iter().any(|&i| facts.branches.iter().any(|x| x.controls(facts.f.cfg.block_of(i))));
    Pattern { accumulation, under_branch, lanes_only: r.lanes_only, next_iteration: r.next_iteration }
}

/// The fix a race's pattern calls for: an atomic for an accumulation;
/// `__syncwarp()` for lanes of one warp under thread-dependent control (a
/// block barrier there is barrier divergence); a barrier every thread
/// reaches, never one inside a thread-dependent branch; for a race around
/// a loop's back edge, where in the loop.
fn race_help(p: Pattern, barrier: &str, syncwarp: &str, rust: bool) -> String {
    if p.accumulation {
        let atomic = if rust { "`AtomicU32::fetch_add`, `core::intrinsics::atomic_xadd_relaxed`" } else { "`atomicAdd`" };
        return format!(
            "every thread updates the same element: accumulate with an atomic ({atomic}), or reduce within the block first (a tree in shared memory, or warp shuffles) and let one thread write the result"
        );
    }
    match (p.under_branch, p.lanes_only, p.next_iteration) {
        (true, true, _) => format!(
            "the accesses run under thread-dependent control flow: put {syncwarp} between them (a {barrier} there would be reached by part of the block only: barrier divergence)"
        ),
        (true, false, _) => format!(
            "put a barrier ({barrier}) between the two accesses where every thread of the block reaches it (outside the thread-dependent branch: inside it, it is barrier divergence), or make each thread touch its own elements"
        ),
        (false, _, true) => format!(
            "put a barrier ({barrier}) at the end of the loop body, after the iteration's last read, so that no thread starts the next iteration's writes while another still reads"
        ),
        (false, _, false) => format!("put a barrier ({barrier}) between the two accesses, or make each thread touch its own elements"),
    }
}
