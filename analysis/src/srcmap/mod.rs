//! Mapping PTX instructions back to Rust source (DESIGN §3).
//!
//! Each instruction has the `.loc` in force; with DWARF in the PTX, the
//! inline chain (`DW_TAG_inlined_subroutine` call sites) gives the frames
//! it was inlined through. A finding points at the innermost frame inside
//! the checked package; the other frames become notes. Without DWARF, the
//! nearest preceding `.loc` in a package file is used, and marked so.
//!
//! Owns: frames per instruction. Does not own: which files belong to the
//! package (the caller passes a predicate).

pub mod dwarf;

use crate::ir::{FunctionIr, InstId};
use crate::ptx::Module;
use rustc_hash::FxHashMap;

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SrcPos {
    pub file: std::sync::Arc<str>,
    pub line: u32,
    pub col: u32,
}

impl std::fmt::Display for SrcPos {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}:{}", self.file, self.line, self.col)
    }
}

/// Whether a source file belongs to the package being checked (findings
/// point into it).
pub type IsLocal<'a> = dyn Fn(&str) -> bool + Sync + 'a;

/// A place a note names: a source position, or a PTX line when the PTX
/// has no source position there.
#[derive(Clone, Debug, PartialEq)]
pub enum Place {
    Source(SrcPos),
    PtxLine(u32),
}

/// Where a finding is reported.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Resolved {
    /// Innermost frame inside the package, if any.
    pub primary: Option<SrcPos>,
    /// All frames, innermost first (the `.loc`, then each inline call site).
    pub frames: Vec<SrcPos>,
    /// True when the position came from the nearest-`.loc` fallback.
    pub approximate: bool,
}

pub struct SourceMap<'m> {
    module: &'m Module<'m>,
    /// Synthetic address of instruction 0 of each function (by function index).
    base: FxHashMap<usize, u64>,
    inline: Option<Vec<dwarf::InlineRange>>,
    /// Each `.file` index's path (the last directive giving it), one text
    /// every position in that file shares.
    paths: FxHashMap<u32, std::sync::Arc<str>>,
    /// The module names a Rust source file, or a function by a Rust
    /// symbol (found when first asked).
    rust: std::sync::OnceLock<bool>,
}

impl<'m> SourceMap<'m> {
    pub fn new<L: crate::ir::Listing<'m>>(module: &'m Module<'m>, fns: &[L]) -> SourceMap<'m> {
        let mut base = FxHashMap::default();
        let has_info = module.section(".debug_info").is_some_and(|s| s.body.trim().len() > 2);
        // labels by their module-wide instruction index, for the DWARF
        // decoder alone (no table where the module carries none)
        let mut labels: FxHashMap<&str, u64> = FxHashMap::default();
        let mut next = 0u64;
        for f in fns {
            base.insert(f.index(), next);
            if has_info {
                labels.extend(f.labels().iter().map(|(&l, &i)| (l, next + i.index() as u64)));
            }
            next += f.insts().len() as u64 + 1;
        }
        let inline = if has_info {
            let secs: Vec<(&str, &str)> = module.sections.iter().map(|s| (s.name, s.body)).collect();
            dwarf::inline_ranges(&secs, &labels)
        } else {
            None
        };
        let paths = module.files.iter().map(|f| (f.index, std::sync::Arc::from(f.path))).collect();
        SourceMap { module, base, inline, paths, rust: std::sync::OnceLock::new() }
    }

    /// Is the module Rust's: does it name a Rust source file, or a
    /// function by a Rust symbol (its language, for a finding with no
    /// source line of its own)?
    pub fn rust_module(&self) -> bool {
        let m = self.module;
        *self
            .rust
            .get_or_init(|| m.files.iter().any(|f| f.path.ends_with(".rs")) || m.functions.iter().any(|f| crate::names::is_rust(f.name)))
    }

    /// Does the module carry a DWARF inline tree we could decode?
    pub fn has_dwarf(&self) -> bool {
        self.inline.is_some()
    }

    /// Do two file indices name the same file (the PTX may list a file twice)?
    fn same_file(&self, a: u32, b: u32) -> bool {
        a == b || matches!((self.module.file(a), self.module.file(b)), (Some(x), Some(y)) if x == y)
    }

    fn pos(&self, file: u32, line: u32, col: u32) -> Option<SrcPos> {
        Some(SrcPos { file: self.paths.get(&file)?.clone(), line, col })
    }

    /// Frames of instruction `i` of `f`, and the one to report given
    /// `is_local` (is this file part of the checked package?).
    pub fn resolve(&self, f: &FunctionIr<'_>, i: InstId, is_local: &IsLocal<'_>) -> Resolved {
        let mut frames = Vec::new();
        if let Some(l) = f.locs.get(i).copied().flatten() {
            frames.extend(self.pos(l.file, l.line, l.col));
            if let Some((fi, li, ci)) = l.inlined_at {
                frames.extend(self.pos(fi, li, ci));
            }
        }
        if let (Some(inl), Some(b)) = (&self.inline, self.base.get(&f.index)) {
            let addr = b + i.index() as u64;
            let mut hits: Vec<&dwarf::InlineRange> = inl.iter().filter(|r| r.lo <= addr && addr < r.hi).collect();
            hits.sort_by_key(|r| std::cmp::Reverse(r.depth));
            // the chain must hold together: a range whose inlined function is declared in
            // another file than the position it would contain is one the instruction was only
            // scheduled into (its `.loc` says so), not a frame of it
            let mut inner_file = f.locs.get(i).copied().flatten().map(|l| l.inlined_at.map(|x| x.0).unwrap_or(l.file));
            for r in hits {
                if let (Some(callee), Some(inner)) = (r.callee_file, inner_file) {
                    if !self.same_file(callee, inner) {
                        continue;
                    }
                }
                if let Some(p) = self.pos(r.call_file, r.call_line, r.call_col) {
                    if frames.last() != Some(&p) {
                        frames.push(p);
                    }
                }
                inner_file = Some(r.call_file);
            }
        }
        let primary = frames.iter().find(|p| is_local(&p.file)).cloned();
        if primary.is_some() {
            return Resolved { primary, frames, approximate: false };
        }
        if frames.is_empty() && self.module.files.is_empty() {
            return Resolved::default();
        }
        // fallback: nearest preceding (then following) .loc in a package file
        let mut local = FxHashMap::default();
        let near = (0..i.index()).rev().chain(i.index() + 1..f.insts.len()).find_map(|j| {
            let l = f.locs[InstId::new(j)]?;
            let yes = *local.entry(l.file).or_insert_with(|| self.module.file(l.file).is_some_and(is_local));
            yes.then(|| self.pos(l.file, l.line, l.col)).flatten()
        });
        Resolved { approximate: near.is_some(), primary: near, frames }
    }

    /// Where instruction `i` of `f` is, for a note: its reported source
    /// position, else its PTX line.
    pub fn place(&self, f: &FunctionIr<'_>, i: InstId, is_local: &IsLocal<'_>) -> Place {
        match self.resolve(f, i, is_local).primary {
            Some(p) => Place::Source(p),
            None => Place::PtxLine(f.insts[i].ast.pos.line),
        }
    }
}
