//! `grid_memory_race`: races on global memory between threads of two
//! different blocks. The detection is `crate::races::find_grid`, read from
//! the facts (`KernelFacts::grid_races`); owns the message.

use super::{Findings, LintCx};
use crate::ir::inst::AccessKind;

declare_lint! {
    /// ### What it does
    /// Finds pairs of global memory accesses that threads of two different blocks
    /// make to the same bytes, at least one of them a write (atomics do not race
    /// with atomics): block 0 against the block next to it along each dimension of
    /// the grid that holds two blocks or more, each access in either block, loop
    /// counters at their first two values. The grid shape comes from `--grid`,
    /// `[package.metadata.gpucheck.kernels.NAME] grid` or
    /// `[package.metadata.gpucheck] grid`; without one, the check assumes two
    /// blocks or more along each dimension some global address is computed from
    /// the block index along (`blockIdx`, `gridDim`), and the finding says so;
    /// it then keeps only the races that blocks of one thread have too. A
    /// grid-stride loop
    /// (`i += blockDim.x * gridDim.x`) and one value per block
    /// (`out[blockIdx.x] = …` by thread 0) do not race. Accesses through different
    /// pointer parameters are assumed not to alias. A grid-wide barrier
    /// (cooperative groups' `grid.sync()`, recognised from its arrival: an atomic
    /// on the grid workspace the driver passes in `%envreg1`/`%envreg2`) separates
    /// the grid's phases: accesses on either side of one do not race, also around
    /// a loop's back edge when the loop body ends with one.
    ///
    /// Before it is reported, the finding's witness runs on the built-in
    /// interpreter (its blocks, the values it names, zero-filled buffers): a
    /// note says "reproduced", or why it was not replayed; one the run does
    /// not show is pedantic (`-W gpucheck::pedantic`), saying so
    /// (`--no-replay` turns this off).
    ///
    /// ### Known problems
    /// A `grid.sync()` inside a device function that is not inlined is not seen
    /// (the accesses it separates are reported). Blocks are compared with their
    /// neighbour along each dimension (block 0 and block 1); block 0 is compared with
    /// a block further along (block 2: `a[(b + 2)·n + t]` read while block b + 2
    /// writes it) only when the grid is given and no branch tests `blockIdx` (the
    /// nearest such blocks whose byte ranges meet block 0's, solved for from each
    /// access's step per block): with an assumed grid, a race between blocks
    /// further apart only is not found.
    ///
    /// ### Why is this bad
    /// Blocks run concurrently and in any order, and `__syncthreads()` orders the
    /// threads of one block only: the value left in memory, or read, depends on
    /// which block runs first.
    ///
    /// ### Example
    /// ```rust
    /// if t == 0 { *out.add(block_idx() / 2) = sum; }  // blocks 2k and 2k+1 write one element
    /// ```
    /// Use instead: one element per block (or an atomic):
    /// ```rust
    /// if t == 0 { *out.add(block_idx()) = sum; }
    /// ```
    pub static GRID_MEMORY_RACE = {
        name: "grid_memory_race",
        group: Correctness,
        default: Warn,
        summary: "threads of two different blocks access the same global bytes, one writing (no barrier orders blocks); the grid from --grid or metadata, else two blocks or more along each dimension global addresses take blockIdx from",
        one_per_line: true,
    }
}

pub fn check(cx: &LintCx<'_, '_, '_>, out: &mut Findings) {
    let facts = cx.facts;
    let what = |k: AccessKind| if k == AccessKind::Load { "reads" } else { "writes" };
    // (a lost update's races between blocks are `lost_update`'s)
    for r in facts.grid_races.iter().filter(|r| r.keyed.is_none()) {
        let Some(dim) = r.between_blocks else { continue };
        let (a, b) = (&facts.accesses[r.first].access, &facts.accesses[r.second].access);
        let (t1, t2) = r.threads;
        let elem = r.offset / a.width.max(1) as i64;
        let axis = ["x", "y", "z"][dim as usize % 3];
        let k = r.block_apart;
        let other = match (dim, facts.grid_dims.iter().any(|&d| d > 0)) {
            (0, false) => format!("block {k}"),
            _ => format!("block ({})", (0..3).map(|d| if d == dim { k.to_string() } else { "0".into() }).collect::<Vec<_>>().join(", ")),
        };
        let relation = if k == 1 { "neighbours".to_string() } else { format!("{k} apart") };
        let lint = if r.benign.is_some() { &super::benign_race::BENIGN_RACE } else { &GRID_MEMORY_RACE };
        let message = format!(
            "{} data race between blocks on global memory: thread {t2} of {other} {} element {elem} while thread {t1} of block 0 {} it",
            r.kind.describe(),
            what(b.kind),
            what(a.kind)
        );
        let mut fd = cx.finding(lint, b.inst, message, format!("thread {t2} of {other} {} here", what(b.kind)));
        fd.assumes = facts.race_assumes(r);
        fd.witness = Some(cx.race_witness(r));
        if a.inst != b.inst {
            if let Some(p) = cx.resolve(a.inst).primary {
                fd.secondary.push((p, format!("thread {t1} of block 0 {} here", what(a.kind))));
            }
        } else {
            fd.note(format!("the threads of both blocks execute this same {}", if a.kind == AccessKind::Load { "load" } else { "store" }));
        }
        let base = super::base_name(facts.f, a);
        let more = if r.elements > 1 { format!("; the same race on {} more", r.elements - 1) } else { String::new() };
        fd.note(format!(
            "blocks run concurrently and in any order, and no barrier orders threads of different blocks (element {elem} of {base}, in {}-byte elements{more}; block 0 and {other} are {relation} along {axis})",
            a.width
        ));
        if facts.grid_assumed {
            let dims: Vec<&str> = facts.grid_dims.iter().map(|&d| ["x", "y", "z"][d as usize % 3]).collect();
            fd.note(format!(
                "no grid shape given for `{}`: assumed two blocks or more along {} (global addresses are computed from the block index there); pass `--grid X,Y,Z` or set `grid` in [package.metadata.gpucheck]",
                crate::names::bare(facts.f.func.name),
                dims.join(" and ")
            ));
        }
        cx.shape_note(&mut fd);
        fd.metrics.push(("first_block_dimension", super::Metric::Int(dim as i64)));
        fd.metrics.push(("blocks_apart", super::Metric::Int(k as i64)));
        if let Some(why) = r.benign {
            let (note, help) = super::benign_race::why(why, "block", "grid");
            fd.note(note);
            fd.help(help);
        } else {
            fd.help("give each block its own elements (index with blockIdx and blockDim), combine the blocks' results with atomics, or split the work into two kernel launches (in a cooperative launch, put `grid.sync()` between the accesses)");
        }
        out.push(fd);
    }
}
