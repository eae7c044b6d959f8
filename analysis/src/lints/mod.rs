//! Lint passes and the `Finding` they produce.
//!
//! Owns: the finding type (message, spans, notes, metrics), the per-function
//! context passes share (`Ctx`), and the list of passes. Each lint's logic
//! lives in its own module; metadata in `registry`. Does not own: levels
//! from configuration or rendering (the binary).

mod barrier_divergence;
mod divergent_branch;
pub mod registry;
pub mod warps;

use crate::divergence::{Divergence, Summaries};
use crate::ir::FunctionIr;
use crate::srcmap::{Resolved, SourceMap, SrcPos};
pub use registry::{Level, Lint, LINTS};
pub use warps::Shape;

#[derive(Clone, Debug, PartialEq)]
pub enum Metric {
    Int(i64),
    Float(f64),
    Text(String),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NoteKind {
    Note,
    Help,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Note {
    pub kind: NoteKind,
    pub text: String,
}

/// One diagnostic, before levels are applied.
#[derive(Clone, Debug)]
pub struct Finding {
    pub lint: &'static Lint,
    pub kernel: String,
    pub ptx_line: u32,
    pub ptx_col: u32,
    /// Where to report in Rust (innermost frame in the package).
    pub span: Option<SrcPos>,
    /// Label under the primary span.
    pub label: String,
    pub message: String,
    /// Other source positions with labels (e.g. the branch causing a barrier divergence).
    pub secondary: Vec<(SrcPos, String)>,
    pub notes: Vec<Note>,
    /// Numbers behind the message (`diverging_warps`, `warps_per_block`, …).
    pub metrics: Vec<(&'static str, Metric)>,
}

impl Finding {
    pub fn note(&mut self, t: impl Into<String>) {
        self.notes.push(Note { kind: NoteKind::Note, text: t.into() });
    }
    pub fn help(&mut self, t: impl Into<String>) {
        self.notes.push(Note { kind: NoteKind::Help, text: t.into() });
    }
}

/// Everything a pass needs for one function.
pub struct Ctx<'c, 'a> {
    pub f: &'c FunctionIr<'a>,
    pub d: &'c Divergence,
    pub sums: &'c Summaries<'a>,
    pub shape: &'c Shape,
    pub srcmap: &'c SourceMap<'a>,
    pub is_local: &'c dyn Fn(&str) -> bool,
    /// Classification of each divergent branch (by block), computed once.
    pub classified: std::cell::RefCell<std::collections::HashMap<usize, warps::Split>>,
}

impl<'c, 'a> Ctx<'c, 'a> {
    pub fn new(
        f: &'c FunctionIr<'a>,
        d: &'c Divergence,
        sums: &'c Summaries<'a>,
        shape: &'c Shape,
        srcmap: &'c SourceMap<'a>,
        is_local: &'c dyn Fn(&str) -> bool,
    ) -> Self {
        Ctx { f, d, sums, shape, srcmap, is_local, classified: Default::default() }
    }

    /// How many warps the branch splits (memoised).
    pub fn classify(&self, br: &crate::divergence::DivBranch) -> warps::Split {
        if let Some(s) = self.classified.borrow().get(&br.block) {
            return s.clone();
        }
        let s = warps::classify(self.f, self.d, br, self.shape);
        self.classified.borrow_mut().insert(br.block, s.clone());
        s
    }
}

impl Ctx<'_, '_> {
    pub fn resolve(&self, i: usize) -> Resolved {
        self.srcmap.resolve(self.f, i, self.is_local)
    }

    /// A finding at instruction `i` with the position notes filled in.
    pub fn finding(&self, lint: &'static Lint, i: usize, message: String, label: String) -> Finding {
        let r = self.resolve(i);
        let inst = self.f.insts[i];
        let mut fd = Finding {
            lint,
            kernel: self.f.func.name.to_string(),
            ptx_line: inst.pos.line,
            ptx_col: inst.pos.col,
            span: r.primary.clone(),
            label,
            message,
            secondary: vec![],
            notes: vec![],
            metrics: vec![],
        };
        if let Some(p) = &r.primary {
            for fr in r.frames.iter().skip_while(|x| *x != p).skip(1) {
                fd.note(format!("inlined into {fr}"));
            }
            let inner: Vec<&SrcPos> = r.frames.iter().take_while(|x| *x != p).collect();
            if let Some(first) = inner.first() {
                fd.note(format!("the instruction comes from {first}, inlined here"));
            }
        }
        if r.approximate {
            fd.note("no inline information in the PTX: this is the nearest line of the package before the instruction");
        }
        fd
    }

    pub fn shape_note(&self, fd: &mut Finding) {
        let [x, y, z] = self.shape.block;
        if self.shape.is_assumed() {
            fd.note(format!(
                "no block shape given for `{}`: assumed {x}×{y}×{z} (blockDim.x a multiple of 32); set `block = [x, y, z]` under `[package.metadata.gpucheck]` or pass `--block`",
                self.f.func.name
            ));
        } else {
            fd.note(format!("block shape {x}×{y}×{z} from {}", self.shape.source));
        }
    }
}

/// Run every pass on one function.
pub fn run(ctx: &Ctx<'_, '_>) -> Vec<Finding> {
    let mut out = Vec::new();
    divergent_branch::check(ctx, &mut out);
    barrier_divergence::check(ctx, &mut out);
    out
}
