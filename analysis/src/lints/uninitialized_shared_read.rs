//! `uninitialized_shared_read`: a shared-memory load that reads bytes no
//! thread of the block writes, for some thread. The detection is
//! `crate::facts::uninit`, read from the facts; owns the message.

use super::{Findings, LintCx};

declare_lint! {
    /// ### What it does
    /// Finds loads from a `.shared` array that read, for some thread of the
    /// block, an element no thread of the block writes: the second half of a
    /// tile only half the block staged (`if (t < 128) s[t] = x[i];` then
    /// `s[255 - t]`), a row read that no store of the kernel covers. The
    /// written elements are those the kernel's stores and atomics to the
    /// array write in every thread that runs them; the read is judged for
    /// the threads that run it, in the first iteration of the loops around
    /// it and, like `shared_out_of_bounds`, in the last iteration of a loop
    /// that runs a constant number of times. The message names the first thread that reads such an element,
    /// the element and the array, and a note the threads that read one; when
    /// a store would write the element from a thread that does not run it,
    /// that store is shown. A read of an element written only by stores
    /// after it (`float old = s[t]; s[t] = x[i];`) is reported as read
    /// "before any thread of the block writes it", with that store. When the
    /// offsets or guards depend on a
    /// parameter, the finding names the value it was found with.
    ///
    /// ### Known problems
    /// Only a block shape the kernel is launched with is judged (`--block`,
    /// Cargo.toml, `.reqntid`, a launch in the host code). A store in a loop
    /// around the read counts as writing its elements before the read (a
    /// read of `s[t]` ahead of its store in the same loop body is not found
    /// in the loop's first iteration), and so does one another thread runs
    /// with no barrier between (that is a race, `shared_memory_race`'s). An array
    /// is not judged when a store to it writes different elements in the
    /// loop's later iterations (a strided fill), when its address is not
    /// known per thread (`s[bin]`), or when the kernel calls a function or
    /// writes shared memory otherwise (`cp.async`, `stmatrix`, a store whose
    /// array is not known); device functions are not judged. Reads by
    /// atomics are not judged. Arrays sized at launch are one memory,
    /// judged only with the size given by `--shared`.
    ///
    /// Before it is reported, the finding's witness runs on the built-in
    /// interpreter (block 0, the values it names, zero-filled buffers),
    /// which marks every shared byte a thread stores to: a note says
    /// "reproduced", or why it was not replayed; one the run does not show
    /// is pedantic (`--no-replay` turns this off). `confirm` shows an
    /// `uninit` row for each such load, predicted or seen.
    ///
    /// ### Why is this bad
    /// Shared memory starts each block with whatever the previous block on
    /// that multiprocessor left there: the read gets garbage, different
    /// from run to run (compute-sanitizer's `initcheck` finds it only when a
    /// run happens to take that path).
    ///
    /// ### Example
    /// ```rust
    /// __shared__ float s[256];
    /// if (t < 128) s[t] = x[i];         // half the block stages the tile
    /// __syncthreads();
    /// out[i] = s[255 - t];              // threads 0..127 read s[255..128]
    /// ```
    /// Use instead: stage every element that is read:
    /// ```rust
    /// s[t] = x[i];
    /// __syncthreads();
    /// out[i] = s[255 - t];
    /// ```
    pub static UNINITIALIZED_SHARED_READ = {
        name: "uninitialized_shared_read",
        group: Correctness,
        default: Warn,
        summary: "a load from a `.shared` array reads, for some thread of the block, an element no thread of the block writes (the witness thread and element)",
    }
}

pub fn check(cx: &LintCx<'_, '_, '_>, out: &mut Findings) {
    let f = cx.facts.f;
    // offsets or guards a guessed value decides (a loop counter, a loaded value) are no
    // finding: only a parameter's sample is a condition the user can declare
    // (each with the array it reads, as the source names it)
    let judged: Vec<(&crate::facts::uninit::Uninit, Vec<crate::facts::Assumption>, String)> = cx
        .facts
        .uninitialized
        .iter()
        .map(|u| (u, cx.facts.uninit_assumes(u)))
        .filter(|(_, assumes)| super::declarable(f, assumes))
        .map(|(u, assumes)| (u, assumes, super::base_name(f, &cx.facts.accesses[u.access].access)))
        .collect();
    // one diagnostic per array: its reads of unwritten elements are one bug (a store missing),
    // headlined by the first
    let mut arrays: Vec<&String> = Vec::new();
    for (_, _, name) in &judged {
        if !arrays.contains(&name) {
            arrays.push(name);
        }
    }
    for array in arrays {
        let of_array: Vec<_> = judged.iter().filter(|(_, _, name)| name == array).collect();
        let (u, assumes, _) = of_array[0];
        let a = &cx.facts.accesses[u.access].access;
        let width = a.width.max(1) as i64;
        let element = u.offset.div_euclid(width);
        let when = match u.iteration {
            Some((it, trips)) => format!(", in iteration {} of {trips} of the loop", it + 1),
            None => String::new(),
        };
        let (message, label) = match u.later {
            false => (
                format!("uninitialised shared memory read: thread {} reads element {element} of {array}, which no thread of the block writes{when}", u.thread),
                format!("thread {} reads element {element}, never written", u.thread),
            ),
            true => (
                format!("uninitialised shared memory read: thread {} reads element {element} of {array} before any thread of the block writes it{when}", u.thread),
                format!("thread {} reads element {element} before it is written", u.thread),
            ),
        };
        let mut fd = cx.finding(&UNINITIALIZED_SHARED_READ, a.inst, message, label);
        fd.access = true;
        fd.assumes = assumes.clone();
        fd.witness = Some(Box::new(super::Witness::Uninit { site: (f.index, a.inst.index()) }));
        let unwritten = if u.later { "that no thread has written yet" } else { "that no thread writes" };
        fd.note(match u.readers.iter().filter(|&&r| r).count() {
            1 => format!("thread {} alone reads an element of {array} {unwritten}", u.thread),
            _ => format!("{} read elements of {array} {unwritten}", super::thread_ranges(&u.readers)),
        });
        if let Some((s, t)) = u.writer {
            if let Some(p) = cx.race_span(s) {
                fd.secondary.push((
                    p,
                    match u.later {
                        false => format!("thread {t} would write element {element} here, but does not run this store"),
                        true => format!("thread {t} writes element {element} here, after the read"),
                    },
                ));
            }
        }
        let others = &of_array[1..];
        for (o, _, _) in others.iter().take(3) {
            if let Some(p) = cx.race_span(o.access) {
                fd.secondary.push((p, format!("thread {} reads an unwritten element here too", o.thread)));
            }
        }
        match others.len() {
            0 => {}
            1 => fd.note(format!("one other load of {array} reads an element no thread writes")),
            n => fd.note(format!("{n} other loads of {array} read elements no thread writes")),
        }
        if u.dynamic {
            fd.note("the arrays sized at launch (`extern __shared__`) are one memory: a store through any of them writes it");
        }
        cx.shape_note(&mut fd);
        fd.help(match u.later {
            false => "write every element that is read before the barrier the read follows (let every thread that reads one stage it, or guard the read like the store)",
            true => "move the read after the store that writes the element (with a barrier between them when another thread writes it)",
        });
        out.push(fd);
    }
}
