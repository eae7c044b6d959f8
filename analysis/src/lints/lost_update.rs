//! `lost_update`: a read-modify-write that is not atomic at an address
//! computed from loaded data (`bins[keys[i]] += 1`). The detection is
//! `crate::races::lost_updates` (races marked `keyed`), read from the
//! facts; owns the message.

use super::{Findings, LintCx};

declare_lint! {
    /// ### What it does
    /// Finds a plain load and a plain store of one shared or global address
    /// computed from loaded data (a key: `bins[keys[i]]`, `h[bucket(x)]`), the
    /// stored value computed from the loaded one, in code two threads or more of
    /// the block run: an increment, a sum or a maximum kept in memory without an
    /// atomic.
    ///
    /// ### Known problems
    /// Whether two threads load the same key depends on the data: keys the
    /// kernel's caller knows to be distinct (a permutation) never collide, and
    /// the finding is then not a bug (allow it at the line). It is a warning
    /// whatever level the race lints are at, and says what it needs.
    ///
    /// ### Why is this bad
    /// Two threads with the same key both read the old value and both write
    /// their own result: one of the updates is lost, and the count depends on
    /// the timing.
    ///
    /// ### Example
    /// ```rust
    /// *bins.add(key as usize) += 1;
    /// ```
    /// Use instead: an atomic read-modify-write:
    /// ```rust
    /// core::intrinsics::atomic_xadd_relaxed(bins.add(key as usize), 1);
    /// ```
    pub static LOST_UPDATE = {
        name: "lost_update",
        group: Correctness,
        default: Warn,
        summary: "a read-modify-write that is not atomic at an address computed from loaded data (`bins[keys[i]] += 1`): two threads with the same key lose an update",
        one_per_line: true,
    }
}

pub fn check(cx: &LintCx<'_, '_, '_>, out: &mut Findings) {
    // one finding per store: its race with the load (the store against itself goes with it)
    for r in cx.facts.races.iter().filter(|r| r.keyed.is_some() && r.first != r.second) {
        let (store, load) = (cx.facts.race_site(r.first), cx.facts.race_site(r.second));
        let space = store.space.name();
        let base = super::base_name(cx.facts.f, store);
        let message = format!(
            "read-modify-write of {space} memory that is not atomic, at an address computed from loaded data: two threads with the same key lose an update"
        );
        let mut fd = cx.race_finding(&LOST_UPDATE, r.first, message, "each thread writes its own result here".to_string());
        fd.assumes = cx.facts.race_assumes(r);
        fd.witness = Some(cx.race_witness(r));
        if let Some(p) = cx.race_span(r.second) {
            fd.secondary.push((p, "after reading the old value here".to_string()));
        }
        if let Some(p) = r.keyed.and_then(|k| cx.resolve(k).primary) {
            fd.secondary.push((p, "the key is loaded here".to_string()));
        }
        fd.note(format!(
            "two threads that load the same key both read the element of {base} before either writes it back, and one write overwrites the other ({} bytes, {space} memory)",
            load.width
        ));
        cx.shape_note(&mut fd);
        fd.help(
            "update with an atomic (`atomicAdd(&bins[key], 1)`; Rust: `core::intrinsics::atomic_xadd_relaxed`), or give each thread its own copy and combine them after a barrier",
        );
        out.push(fd);
    }
}
