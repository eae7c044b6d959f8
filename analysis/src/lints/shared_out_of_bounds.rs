//! `shared_out_of_bounds`: a shared-memory access outside the statically
//! sized `.shared` array it is based on (or a local one outside its
//! thread's `.local` depot), for some thread of the block. The
//! detection is `crate::facts::bounds`, read from the facts; owns the
//! message.

use super::{Findings, LintCx};
use crate::ir::inst::{AccessKind, Space};

declare_lint! {
    /// ### What it does
    /// Finds loads and stores through a `.shared` array of a size fixed in
    /// the kernel (`__shared__ float s[256]`, `.shared .b8 tile[1024]`) whose
    /// address, for some thread of the block that executes them, falls outside
    /// the array: the halo read `s[t + 1]` by the last thread, the write
    /// `s[t - 1]` by thread 0. The offsets are evaluated for every thread of the
    /// block shape given (its guards decide which threads run the access), in
    /// the first iteration of the loops around it, and in the last iteration
    /// of a loop that runs a constant number of times when the access is on
    /// every way through its body (`for (k = 0; k <= 16; k++) s[row + k]`
    /// leaves a row of 16 in iteration 17); the message names the
    /// first thread outside, the element it touches and the array's length,
    /// and the note how many threads are outside. When the offsets depend on
    /// a parameter, the finding names the value it was found with and is a
    /// warning until that value is declared; offsets that rest on any other
    /// value not known statically (a loop counter past its first values, a
    /// loaded value) are not judged.
    ///
    /// A thread's own arrays that the compiler keeps in local memory (one
    /// indexed by a value it does not know: `float w[8]; … w[t % 9]`) are
    /// judged the same way, against the function's `.local` depot, which
    /// holds all of them: an index past one array but inside another of the
    /// same thread is not found.
    ///
    /// ### Known problems
    /// Only a block shape the kernel is launched with is judged (`--block`,
    /// Cargo.toml, `.reqntid`, a launch in the host code): with none given,
    /// or only `.maxntid`'s largest block, nothing is. Other iterations of a
    /// loop are not judged, nor the last of a nested loop, of a loop whose
    /// count depends on a parameter or a thread, or of an access under a
    /// branch inside the loop. Arrays sized at launch (`extern __shared__`)
    /// are judged against the dynamic shared bytes given with `--shared`, and
    /// not at all without it.
    ///
    /// Before it is reported, the finding's witness runs on the built-in
    /// interpreter (block 0, the values it names, zero-filled buffers), which
    /// checks every shared access against the array it is based on: a note
    /// says "reproduced", or why it was not replayed; one the run does not
    /// show is pedantic (`--no-replay` turns this off). `confirm` shows a
    /// `bounds` row for each such access, predicted or seen (one seen and not
    /// predicted is `OUT OF BOUNDS`, a failure).
    ///
    /// ### Why is this bad
    /// Shared memory is not bounds-checked: the access reads or overwrites
    /// whatever lies beyond the array (another array of the block, or
    /// nothing: an illegal-address error that aborts the kernel).
    ///
    /// ### Example
    /// ```rust
    /// __shared__ float s[256];          // one element per thread of a 256-thread block
    /// s[t] = x[i];
    /// __syncthreads();
    /// out[i] = s[t] + s[t + 1];         // thread 255 reads s[256]
    /// ```
    /// Use instead: guard the halo, or size the array for it:
    /// ```rust
    /// out[i] = s[t] + (t + 1 < 256 ? s[t + 1] : 0.0f);
    /// ```
    pub static SHARED_OUT_OF_BOUNDS = {
        name: "shared_out_of_bounds",
        group: Correctness,
        default: Deny,
        summary: "a load or store through a statically sized `.shared` array (or a thread's `.local` array) falls outside it for some thread of the block (the witness thread, element and length)",
    }
}

pub fn check(cx: &LintCx<'_, '_, '_>, out: &mut Findings) {
    for o in &cx.facts.out_of_bounds {
        // offsets a guessed value decides (a loop counter, a loaded value) are no finding: only a
        // parameter's sample is a condition the user can declare
        let assumes = cx.facts.bounds_assumes(o);
        if !super::declarable(cx.facts.f, &assumes) {
            continue;
        }
        let a = &o.access;
        let width = a.width.max(1) as i64;
        let (does, what) = if a.kind == AccessKind::Load { ("reads", "read") } else { ("writes", "write") };
        // a thread's `.local` arrays are one depot the compiler names: its local memory
        let local = a.space == Space::Local;
        let (memory, array) = match local {
            true => ("local", "its local memory".to_string()),
            false => ("shared", super::base_name(cx.facts.f, a)),
        };
        let element = o.offset.div_euclid(width);
        let length = o.size as i64 / width;
        let side = if o.offset < 0 { "before the start of" } else { "past the end of" };
        let when = match o.iteration {
            Some((it, trips)) => format!(", in iteration {} of {trips} of the loop", it + 1),
            None => String::new(),
        };
        let message = format!(
            "out-of-bounds {memory} memory {what}: thread {} {does} element {element} of {array}, which has {length}{when}",
            o.thread
        );
        let mut fd = cx.finding(&SHARED_OUT_OF_BOUNDS, a.inst, message, format!("thread {} {does} {side} {array}", o.thread));
        fd.access = true;
        fd.assumes = assumes;
        fd.witness = Some(Box::new(super::Witness::Bounds { site: (cx.facts.f.index, a.inst.index()) }));
        let outside = match o.threads {
            1 => format!("one thread of the block that runs this {what} is outside it"),
            n => format!("{n} of the block's threads that run this {what} are outside it"),
        };
        fd.note(match local {
            true => format!(
                "each thread's local arrays are kept in {} ({} bytes: {length} elements of {width} bytes), which the compiler uses for an array it cannot keep in registers (one indexed by a value it does not know); {outside}",
                super::base_name(cx.facts.f, a),
                o.size
            ),
            false => format!("{array} holds {} bytes: {length} elements of {width} bytes; {outside}", o.size),
        });
        cx.shape_note(&mut fd);
        fd.help(if o.offset < 0 {
            "keep the index at 0 or above for every thread that runs the access (guard it, or shift it)".to_string()
        } else {
            format!("keep the index below {length} for every thread that runs the access (guard it), or declare the array with room for it")
        });
        out.push(fd);
    }
}
