//! `global_memory_race`: races on global memory within one block (races
//! between blocks are `grid_memory_race`'s). Shares its reporting with
//! `shared_memory_race`.

use super::{Findings, LintCx};
use crate::ir::inst::Space;

declare_lint! {
    /// ### What it does
    /// The same check as `shared_memory_race`, for global memory within one block
    /// (for example every thread writing `out[0]`). Accesses through different
    /// pointer parameters are assumed not to alias. Races between different
    /// blocks are `grid_memory_race`.
    ///
    /// Before it is reported, the finding's witness runs on the built-in
    /// interpreter (its blocks, the values it names, zero-filled buffers): a
    /// note says "reproduced", or why it was not replayed; one the run does
    /// not show is pedantic (`-W gpucheck::pedantic`), saying so
    /// (`--no-replay` turns this off).
    ///
    /// ### Why is this bad
    /// The value left in memory depends on which thread writes last.
    ///
    /// ### Example
    /// ```rust
    /// *out = t as u32;               // every thread writes out[0]
    /// ```
    /// Use instead: let one thread write, or reduce first:
    /// ```rust
    /// if t == 0 { *out = result; }
    /// ```
    pub static GLOBAL_MEMORY_RACE = {
        name: "global_memory_race",
        group: Correctness,
        default: Warn,
        summary: "two threads of a block access the same global bytes in one barrier interval, one writing (different pointer parameters are assumed not to alias; races between blocks: grid_memory_race)",
        one_per_line: true,
    }
}

pub fn check(cx: &LintCx<'_, '_, '_>, out: &mut Findings) {
    super::shared_memory_race::report(cx, Space::Global, &GLOBAL_MEMORY_RACE, out);
}
