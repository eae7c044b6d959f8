//! `benign_race` (pedantic): the declaration, and the words for why a race
//! is benign. The race passes (`shared_memory_race`, `global_memory_race`,
//! `grid_memory_race`) emit it for a write-after-write pair whose two stores
//! write the same uniform value (decided by `crate::races`' marks), and for
//! a race whose reading thread discards what it reads (decided by
//! `crate::facts`' witnesses): `crate::races::Race::benign`.

use crate::races::Benign;

/// The note and the help for a benign race, between two of `who`
/// (threads, blocks) within one `within` (block, grid).
pub(super) fn why(why: Benign, who: &str, within: &str) -> (String, String) {
    match why {
        Benign::SameValue => (
            format!("every racing write stores the same value, the same for every {who} of the {within}, and no {who} reads these bytes there: whichever {who} writes last, memory holds that value"),
            format!("make the intent explicit with an atomic store, or let one {who} write"),
        ),
        Benign::Discarded => (
            format!("the reading {who} discards what it reads here (a select takes the other value, or what uses it is code that {who} does not run), and no {who} that keeps the value races: whatever it reads, nothing it computes changes"),
            "read only where the value is used (move the load under the condition that uses it), or clamp the index to an element no thread writes in this interval".to_string(),
        ),
    }
}

declare_lint! {
    /// ### What it does
    /// Reports two threads of a block writing the same bytes in one barrier
    /// interval when every racing write stores the same value, uniform across
    /// the block (a constant, a kernel parameter, a value every thread computes
    /// alike), and no thread reads those bytes in the interval: the
    /// "any thread found it" flag (`*done = 1`), `x[0] = 0` by every thread.
    /// It also reports a racing read whose value the reading thread discards:
    /// a clamped read (`v = s[min(t, 127)]`) that threads past the clamp make
    /// only to throw away (`s[t] = t < 128 ? 2 * v : 0`), while thread 127
    /// writes that element; every thread that keeps what it reads is race-free.
    /// When every racing pair is two lanes of one warp, a value the same in
    /// every lane of the warp counts too: a warp's sum after a shuffle
    /// butterfly (`__shfl_xor_sync` by 16, 8, 4, 2 and 1), a broadcast
    /// (`__shfl_sync(mask, v, 0)`), a vote or a `__reduce_*_sync`, stored by
    /// every lane at its warp's slot (`s[warp] = sum`). Whichever thread
    /// writes last, memory holds that value; `confirm` checks that the run's
    /// racing writes stored the same bytes.
    ///
    /// ### Why is this bad
    /// In the CUDA and C++ memory models it is still a data race (undefined
    /// behaviour in the strict sense), and it is safe only while the store is
    /// one naturally aligned access of at most 8 bytes: a wider or split store
    /// (a struct, a vector the compiler splits) can tear, and a compiler may
    /// assume no other thread writes the location. Formal verifiers accept it
    /// (GPUVerify's equality abstraction); it is listed so that the intent can
    /// be made explicit.
    ///
    /// ### Example
    /// ```rust
    /// if found { *flag = 1; }        // every finding thread writes 1
    /// ```
    /// Use instead: an atomic store (`AtomicU32::store(1, Relaxed)`), or let one
    /// thread write after a reduction:
    /// ```rust
    /// if found { (*(flag as *const AtomicU32)).store(1, Ordering::Relaxed); }
    /// ```
    pub static BENIGN_RACE = {
        name: "benign_race",
        group: Pedantic,
        default: Allow,
        summary: "threads write the same uniform value to the same bytes in one barrier interval and nobody reads them there, or a racing read's value is discarded by the thread that reads it: a race in the strict sense, safe in practice",
        one_per_line: true,
    }
}
