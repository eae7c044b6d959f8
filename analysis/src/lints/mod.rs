//! Lints: one file per lint holding its declaration (`declare_lint!`:
//! name, group, default level, summary, and the explanation as its doc
//! comment) and its pass; one list (`lints!` below) that generates the
//! registry (`LINTS`) and the pass list (`run`).
//!
//! Adding a lint: write `lints/NAME.rs` with a `declare_lint!` block and a
//! `check(cx, out)` function (`out`: the [`Findings`] it gives, each kept
//! as it lives once given), and add one line to the list (it declares
//! the module too). The README's
//! lint table is checked against the registry by a test; a finding naming
//! an unregistered lint fails every test that produces one.
//!
//! Owns: the finding type (message, spans, structured notes, metrics), the
//! context passes share (`LintCx`: the kernel's facts, source positions),
//! and the decisions. Does not own: the analyses or facts (`crate::facts`),
//! levels from configuration, or rendering (the binary).

#[macro_use]
mod declare;
pub mod registry;

use crate::facts::KernelFacts;
use crate::ir::InstId;
use crate::model::ShapeSource;
pub use crate::srcmap::Place;
use crate::srcmap::{IsLocal, Resolved, SourceMap, SrcPos};
pub use registry::{Group, Level, Lint};

/// The lint modules, the registry and the pass list, from one list. A
/// lint without a pass of its own is emitted by another pass, which names
/// it after `+` (`cheap_divergent_branch` and
/// `conditional_divergent_branch` by `divergent_branch`), or by the binary
/// (`unused_gpucheck_allow`, which needs the package's source files). A
/// pass runs unless every lint it finds is silent
/// ([`crate::Options::silent`]); a debug build checks that it finds no other.
macro_rules! lints {
    ($($module:ident :: $lint:ident $(=> $check:ident $(+ [$($also:ident),*])?)?),* $(,)?) => {
        $(mod $module;)*
        /// Every lint, in display order.
        pub static LINTS: &[&Lint] = &[$(&$module::$lint),*];
        $(pub use $module::$lint;)*

        /// Run every pass on one function.
        pub fn run(cx: &LintCx<'_, '_, '_>) -> Vec<Finding> {
            let mut out = Findings::default();
            $($(
                // the lints the pass finds: its own, then those it names after `+`; a pass none
                // of whose lints a level shows is not run
                let finds: &[&Lint] = &[&$module::$lint $($(, &$also)*)?];
                if finds.iter().any(|l| !cx.silent.contains(&l.name)) {
                    let from = out.len();
                    $module::$check(cx, &mut out);
                    debug_assert!(
                        out[from..].iter().all(|f| finds.iter().any(|l| l.name == f.lint.name)),
                        "the pass of `{}` finds a lint the list does not give it",
                        stringify!($module)
                    );
                }
            )?)*
            // (the findings a pass changed after giving them: what it added, kept as the others)
            let Findings { mut list, mut texts, changed } = out;
            for k in changed {
                texts.keep(&mut list[k]);
            }
            debug_assert!(list.iter().all(|f| registry::is_registered(f.lint)), "a finding names an unregistered lint");
            list
        }
    };
}

lints! {
    barrier_divergence::BARRIER_DIVERGENCE => check,
    shared_memory_race::SHARED_MEMORY_RACE => check + [BENIGN_RACE],
    global_memory_race::GLOBAL_MEMORY_RACE => check + [BENIGN_RACE],
    grid_memory_race::GRID_MEMORY_RACE => check + [BENIGN_RACE],
    missing_threadfence::MISSING_THREADFENCE => check,
    lost_update::LOST_UPDATE => check,
    shared_out_of_bounds::SHARED_OUT_OF_BOUNDS => check,
    uninitialized_shared_read::UNINITIALIZED_SHARED_READ => check,
    unused_gpucheck_allow::UNUSED_GPUCHECK_ALLOW,
    divergent_branch::DIVERGENT_BRANCH => check + [CHEAP_DIVERGENT_BRANCH, CONDITIONAL_DIVERGENT_BRANCH],
    uncoalesced_global_access::UNCOALESCED_GLOBAL_ACCESS => check,
    shared_bank_conflict::SHARED_BANK_CONFLICT => check,
    data_dependent_access::DATA_DEPENDENT_ACCESS => check,
    shared_memory_opportunity::SHARED_MEMORY_OPPORTUNITY => check,
    misaligned_global_access::MISALIGNED_GLOBAL_ACCESS => check,
    cheap_divergent_branch::CHEAP_DIVERGENT_BRANCH,
    conditional_divergent_branch::CONDITIONAL_DIVERGENT_BRANCH,
    benign_race::BENIGN_RACE,
    vectorizable_access::VECTORIZABLE_ACCESS => check,
    stride_dependent_access::STRIDE_DEPENDENT_ACCESS => check,
}

/// A share as a finding's note gives it: "26 %", or "6 % to 29 %" for a
/// range (over unknown trip counts).
pub(crate) fn percent_range(low: f64, high: f64) -> String {
    let pct = |v: f64| format!("{:.0} %", 100.0 * v);
    if high - low < 0.005 {
        pct(low)
    } else {
        format!("{} to {}", pct(low), pct(high))
    }
}

/// The first instruction after load `i` (in the PTX's order, at most 256
/// on) that uses the value it loads and has a source line of its own.
fn first_placed_user(f: &crate::ir::FunctionIr<'_>, i: InstId) -> Option<InstId> {
    let v = *f.ssa.defs(i).first()?;
    (i.index() + 1..f.insts.len().min(i.index() + 257))
        .map(InstId::new)
        .find(|&j| f.ssa.uses(j).contains(&v))
        .filter(|&j| !f.unplaced.contains(j.index()) && f.locs[j].is_some())
}

/// A memory-safety fact's assumptions are ones the user can declare: every
/// one a sample of an integer parameter (`--assume n=…`). A loop counter's
/// guess or a loaded value is not, nor a floating-point parameter, whose
/// sample (an integer's bits) says nothing about the values it takes.
pub(crate) fn declarable(f: &crate::ir::FunctionIr<'_>, assumes: &[crate::facts::Assumption]) -> bool {
    assumes.iter().all(|x| {
        let float = |p: u32| f.func.params.get(p as usize).and_then(|p| crate::ir::inst::Ty::of_decl(p.ty)).is_some_and(|t| t.is_float());
        x.kind == crate::facts::Assumed::Parameter && !x.param.is_some_and(|(p, off)| off == 0 && float(p))
    })
}

/// The variable an access is based on, as its author wrote it (`` `As` ``
/// for clang's `_ZZ19matmul_missing_syncE2As`, `` `a` `` for a pointer
/// parameter the source names), or "the base pointer".
pub(crate) fn base_name(f: &crate::ir::FunctionIr<'_>, a: &crate::memory::Access) -> String {
    if let Some(s) = crate::memory::base_symbol(f, a) {
        return format!("`{}`", crate::names::readable(&crate::names::demangle(s)));
    }
    let param = a.addr_value.map(|v| crate::ir::values::root(f, v)).and_then(|r| f.def_inst(r)).and_then(|i| f.insts[i].param_read());
    match param {
        Some((p, 0)) if f.param_label(p) != p => format!("`{}`", f.param_label(p)),
        _ => "the base pointer".to_string(),
    }
}

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

impl NoteKind {
    /// The word rustc's messages give it: `note`, `help`.
    pub fn name(&self) -> &'static str {
        match self {
            NoteKind::Note => "note",
            NoteKind::Help => "help",
        }
    }
}

/// Texts that many findings say alike (a fix, a condition, the block
/// shape), each kept once and shared ([`Text::Plain`] and
/// [`Text::Shape`] are `Arc`s).
#[derive(Default)]
struct Texts {
    plain: rustc_hash::FxHashSet<std::sync::Arc<str>>,
    /// The latest block-shape note kept (a function's findings give one).
    shape: Option<std::sync::Arc<ShapeText>>,
}

impl Texts {
    fn get(&mut self, t: &std::sync::Arc<str>) -> std::sync::Arc<str> {
        if let Some(same) = self.plain.get(&**t) {
            return same.clone();
        }
        self.plain.insert(t.clone());
        t.clone()
    }

    /// Finding `f` as it lives until the report is printed: no spare
    /// capacity, and the messages, labels and notes many findings say
    /// alike (a fix, a condition, a shape) kept once.
    fn keep(&mut self, f: &mut Finding) {
        f.shrink_to_fit();
        // (messages and labels too: a function's copies of one finding say them alike)
        f.message = self.get(&f.message);
        f.label = self.get(&f.label);
        for n in f.notes.iter_mut() {
            match &mut n.text {
                Text::Plain(t) => *t = self.get(t),
                Text::Shape(s) => match &self.shape {
                    Some(kept) if kept == s => *s = kept.clone(),
                    _ => self.shape = Some(s.clone()),
                },
                _ => {}
            }
        }
    }
}

/// The findings the passes give for one function, each kept as it lives
/// until the report is printed as it is given ([`Texts::keep`]): a pass
/// that finds thousands does not hold them all with their spare capacity
/// and their own copies of the notes they say alike. Read as a `Vec`.
#[derive(Default)]
pub struct Findings {
    list: Vec<Finding>,
    texts: Texts,
    /// Those a pass changed after giving them ([`Self::get_mut`]).
    changed: Vec<usize>,
}

impl Findings {
    pub fn push(&mut self, mut f: Finding) {
        self.texts.keep(&mut f);
        self.list.push(f);
    }

    /// Finding `k`, to change (kept again once the passes are done).
    pub fn get_mut(&mut self, k: usize) -> Option<&mut Finding> {
        let f = self.list.get_mut(k)?;
        self.changed.push(k);
        Some(f)
    }

    pub fn extend(&mut self, fs: impl IntoIterator<Item = Finding>) {
        for f in fs {
            self.push(f);
        }
    }
}

impl std::ops::Deref for Findings {
    type Target = Vec<Finding>;
    fn deref(&self) -> &Vec<Finding> {
        &self.list
    }
}

/// What a note says, as data: the binary renders positions (relative
/// paths) and configuration names (Cargo tables, flags).
#[derive(Clone, Debug, PartialEq)]
pub enum Text {
    /// A text of its own (shared where many findings say the same).
    Plain(std::sync::Arc<str>),
    /// `{before}{place}{after}`.
    At(Box<AtText>),
    /// The block shape used for a kernel and where it came from.
    Shape(std::sync::Arc<ShapeText>),
    /// The reported line is inlined into this outer frame.
    InlinedInto(SrcPos),
    /// The instruction comes from this inner frame, inlined at the reported line.
    InlinedFrom(SrcPos),
    /// No inline information: the reported line is the nearest line of the package.
    NearestLine,
}

/// [`Text::At`]'s parts (boxed: a note is a third of the size with the two
/// rarer texts out of line, and a module's findings may carry tens of
/// thousands).
#[derive(Clone, Debug, PartialEq)]
pub struct AtText {
    pub before: String,
    pub at: Place,
    pub after: String,
}

/// [`Text::Shape`]'s parts (shared by the findings of a function that say one).
#[derive(Clone, Debug, PartialEq)]
pub struct ShapeText {
    pub kernel: std::sync::Arc<str>,
    pub block: [u32; 3],
    pub source: ShapeSource,
}

impl Text {
    /// `{before}{at}{after}`.
    pub fn at(before: String, at: Place, after: String) -> Text {
        Text::At(Box::new(AtText { before, at, after }))
    }

    /// The block shape used for `kernel` and where it came from.
    pub fn shape(kernel: std::sync::Arc<str>, block: [u32; 3], source: ShapeSource) -> Text {
        Text::Shape(std::sync::Arc::new(ShapeText { kernel, block, source }))
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Note {
    pub kind: NoteKind,
    pub text: Text,
}

impl Note {
    /// The text of a note that names no position or configuration.
    pub fn plain(&self) -> Option<&str> {
        match &self.text {
            Text::Plain(t) => Some(t),
            _ => None,
        }
    }
}

/// An instruction of the module: its function (index in
/// `Module::functions`) and its index in that function's instructions (the
/// numbering `crate::interp::SiteKey` uses).
pub type Site = (usize, usize);

/// What a run of the kernel must show for a correctness finding: set by
/// the race and barrier passes, run by `crate::replay`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Witness {
    /// The two accesses race (in either order) in a run of block 0 (and of
    /// block `other`, for a race between blocks); `memory`: the memory
    /// both touch, where the check placed both in one (`None`: an address
    /// it could not place and took as global, or two memories).
    Race { sites: [Site; 2], other: Option<[u32; 3]>, memory: Option<crate::ir::inst::Space> },
    /// Part of this block does not arrive with the rest at the barrier
    /// (`call`: a call to a function that executes one, which is where the
    /// run sees it).
    Barrier { site: Site, block: [u32; 3], call: bool },
    /// A thread of block 0 accesses shared memory outside the array this
    /// access is based on.
    Bounds { site: Site },
    /// A thread of block 0 reads shared bytes no thread of the block has
    /// written at this load.
    Uninit { site: Site },
}

/// What replaying a finding's witness gave (`crate::replay`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Replay {
    /// Not replayed: not a finding with a witness, or replays are off.
    #[default]
    NotRun,
    /// Not replayed, and why: it rests on values a run cannot be given
    /// (data loaded from memory, a loop counter's guessed value), the
    /// run could not be made or did not finish.
    Unable(std::sync::Arc<str>),
    /// A run of the launch described observed it; `partner`: a race at
    /// one of its two accesses with another access (the run's shadow
    /// memory names one partner per byte), not this pair.
    Reproduced { launch: std::sync::Arc<str>, partner: bool },
    /// A run of the launch described did not observe it.
    NotReproduced(std::sync::Arc<str>),
}

/// One diagnostic, before levels are applied.
#[derive(Clone, Debug)]
pub struct Finding {
    pub lint: &'static Lint,
    /// The kernel's (the function's) name, demangled: one text that every
    /// finding of the function shares.
    pub kernel: std::sync::Arc<str>,
    pub ptx_line: u32,
    pub ptx_col: u32,
    /// Where to report in Rust (innermost frame in the package).
    pub span: Option<SrcPos>,
    /// Label under the primary span.
    pub label: std::sync::Arc<str>,
    pub message: std::sync::Arc<str>,
    /// Other source positions with labels (e.g. the branch causing a barrier divergence).
    pub secondary: Vec<(SrcPos, String)>,
    pub notes: Vec<Note>,
    /// Numbers behind the message (`diverging_warps`, `warps_per_block`, …).
    pub metrics: Vec<(&'static str, Metric)>,
    /// The reported instruction is a memory access (its span is the one
    /// operand, not the statement).
    pub access: bool,
    /// The values the finding's numbers or witness were computed with that
    /// the kernel does not fix (samples, strides taken as large): empty
    /// when it holds for every value the kernel allows.
    pub assumes: Vec<crate::facts::Assumption>,
    /// What a run must observe (correctness findings with a witness;
    /// boxed: most findings have none).
    pub witness: Option<Box<Witness>>,
    /// What replaying the witness gave.
    pub replay: Replay,
    /// How bad this copy is, where the compiler's copies of one source
    /// place (an unrolled loop's iterations, inlined calls) differ: the
    /// worst copy headlines the diagnostic they fold into.
    pub rank: Option<Rank>,
}

/// The number a performance finding's message leads with, comparable
/// between copies of the finding (`12` with unit `-way`: a 12-way bank
/// conflict; `32` with ` sectors per request`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rank {
    pub value: i64,
    pub unit: &'static str,
}

impl Rank {
    /// The copies' range in words: "2-way to 32-way", "4 to 32 sectors per request".
    pub fn range(&self, lo: i64, hi: i64) -> String {
        if self.unit.starts_with('-') {
            format!("{lo}{u} to {hi}{u}", u = self.unit)
        } else {
            format!("{lo} to {hi}{}", self.unit)
        }
    }
}

impl Finding {
    /// A finding of `lint` with nothing filled in yet (the passes fill in
    /// what they know; the binary's own findings: comments and attributes
    /// that suppress nothing).
    pub fn new(lint: &'static Lint) -> Finding {
        Finding {
            lint,
            kernel: "".into(),
            ptx_line: 0,
            ptx_col: 0,
            span: None,
            label: "".into(),
            message: "".into(),
            secondary: vec![],
            notes: vec![],
            metrics: vec![],
            access: false,
            assumes: vec![],
            witness: None,
            replay: Replay::NotRun,
            rank: None,
        }
    }

    pub fn note(&mut self, t: impl Into<std::sync::Arc<str>>) {
        self.notes.push(Note { kind: NoteKind::Note, text: Text::Plain(t.into()) });
    }
    pub fn help(&mut self, t: impl Into<std::sync::Arc<str>>) {
        self.notes.push(Note { kind: NoteKind::Help, text: Text::Plain(t.into()) });
    }
    pub fn note_text(&mut self, text: Text) {
        self.notes.push(Note { kind: NoteKind::Note, text });
    }
    /// Drop spare capacity (a finding lives until the report is printed).
    /// (A finding with a witness keeps room for one note more: the one its
    /// replay adds, which would otherwise double the list.)
    pub fn shrink_to_fit(&mut self) {
        self.notes.shrink_to(self.notes.len() + usize::from(self.witness.is_some()));
        self.metrics.shrink_to_fit();
        self.secondary.shrink_to_fit();
        self.assumes.shrink_to_fit();
    }

    pub fn metric(&self, name: &str) -> Option<&Metric> {
        self.metrics.iter().find(|(k, _)| *k == name).map(|(_, v)| v)
    }

    /// The finding holds for the values the check gave some unknowns, not
    /// for every value the kernel allows (alignment aside: the misaligned
    /// variant covers that).
    pub fn conditional(&self) -> bool {
        self.assumes.iter().any(|a| !a.alignment)
    }
}

/// What a pass reads for one function: its facts, and where its
/// instructions come from in the source.
pub struct LintCx<'c, 'f, 'a> {
    pub facts: &'c KernelFacts<'f, 'a>,
    pub srcmap: &'c SourceMap<'a>,
    pub is_local: &'c IsLocal<'c>,
    /// `predicted / ideal` sectors at or above which a global access is reported.
    pub coalescing_threshold: f64,
    /// The function's name, demangled (once: every finding shares it).
    name: std::sync::Arc<str>,
    /// Lints whose passes do not run ([`crate::Options::silent`]).
    pub silent: &'c [&'static str],
}

impl<'c, 'f, 'a> LintCx<'c, 'f, 'a> {
    pub fn new(facts: &'c KernelFacts<'f, 'a>, srcmap: &'c SourceMap<'a>, is_local: &'c IsLocal<'c>, coalescing_threshold: f64) -> Self {
        LintCx { facts, srcmap, is_local, coalescing_threshold, name: crate::names::demangle(facts.f.func.name).into(), silent: &[] }
    }

    pub fn resolve(&self, i: InstId) -> Resolved {
        self.srcmap.resolve(self.facts.f, i, self.is_local)
    }

    /// The package frame that instruction `i`'s reported line was inlined
    /// at (the next frame outward that is in the package), if any.
    pub fn call_site(&self, i: InstId) -> Option<SrcPos> {
        let r = self.resolve(i);
        let primary = r.primary.filter(|_| !r.approximate)?;
        let k = r.frames.iter().position(|p| *p == primary)?;
        // (a frame on the same line is an expression's own inlined method: no call site to tell apart)
        r.frames[k + 1..].iter().find(|p| (self.is_local)(&p.file) && (p.file != primary.file || p.line != primary.line)).cloned()
    }

    /// Where instruction `i` is, for a note.
    pub fn place(&self, i: InstId) -> Place {
        self.srcmap.place(self.facts.f, i, self.is_local)
    }

    /// A finding at instruction `i` with the position notes filled in. An
    /// access with no source line of its own (after a line-0 `.loc`: code
    /// the compiler moved) is placed where its value is first used, when
    /// that has a line; one the compiler hoisted out of a loop says so.
    pub fn finding(
        &self,
        lint: &'static Lint,
        i: InstId,
        message: impl Into<std::sync::Arc<str>>,
        label: impl Into<std::sync::Arc<str>>,
    ) -> Finding {
        let f = self.facts.f;
        let access = f.insts[i].access().is_some();
        let user = if access && f.unplaced.contains(i.index()) { first_placed_user(f, i) } else { None };
        let r = self.resolve(user.unwrap_or(i));
        // the loop the compiler moved it out of: its user's (else the loop whose line it carries)
        let moved_out = match user {
            Some(j) => {
                let cfg = &f.cfg;
                let b = cfg.block_of(i);
                cfg.loops_containing(cfg.block_of(j))
                    .into_iter()
                    .rev()
                    .find(|&l| !cfg.in_loop(b, l) && cfg.dominates(b, cfg.loops[l].header))
                    // (named by its back edge's branch, which carries the loop statement's line)
                    .map(|l| Err(cfg.loops[l].latches.first().and_then(|&x| cfg.blocks[x].last()).unwrap_or(j)))
            }
            None if access => r.primary.as_ref().and_then(|at| self.hoisted_from(i, at)).map(Ok),
            None => None,
        };
        let mut fd = self.finding_in(lint, i, r, None, message, label);
        match moved_out {
            Some(Err(back)) => fd.note_text(Text::at(
                "the compiler hoisted this access out of the loop at ".into(),
                self.place(back),
                ": it runs once before the loop; the line shown is where its value is used".into(),
            )),
            Some(Ok((line, body))) => {
                let body = match body {
                    Some((a, b)) if a == b => format!("; its source is in the loop's body, line {a}"),
                    Some((a, b)) => format!("; its source is in the loop's body, lines {a}–{b}"),
                    None => String::new(),
                };
                fd.note(format!(
                    "the compiler hoisted this access out of the loop at line {line}: it runs once before the loop, and the line shown is the loop's{body}"
                ));
            }
            None if user.is_some() => {
                fd.note("the PTX gives this access no source line of its own: the line shown is where its value is used")
            }
            None => {}
        }
        fd
    }

    /// An access outside a loop that comes before it (its block dominates
    /// the loop's header) and is placed at a line of that loop's own code:
    /// the compiler moved it out of the loop (its source position is the
    /// loop's, or none). The loop's line, and the range of the other lines
    /// of the loop's code in that file (its body).
    fn hoisted_from(&self, i: InstId, at: &SrcPos) -> Option<(u32, Option<(u32, u32)>)> {
        let f = self.facts.f;
        let cfg = &f.cfg;
        let b = cfg.block_of(i);
        for (l, lp) in cfg.loops.iter_enumerated() {
            if cfg.in_loop(b, l) || !cfg.dominates(b, lp.header) {
                continue;
            }
            let lines: Vec<u32> = lp
                .blocks
                .iter()
                .flat_map(|&x| cfg.blocks[x].insts())
                .filter_map(|j| self.resolve(j).primary)
                .filter(|p| p.file == at.file)
                .map(|p| p.line)
                .collect();
            if lines.contains(&at.line) {
                let body = lines.iter().filter(|&&x| x != at.line);
                let range = body.clone().min().copied().zip(body.max().copied());
                return Some((at.line, range));
            }
        }
        None
    }

    /// A finding at instruction `i` reported in the function that
    /// instruction `anchor` is in: where `i` comes from a helper inlined
    /// there (a barrier behind `fn sync() { _syncthreads() }`, under a
    /// branch of the kernel), at the helper's call in that function — the
    /// user's line, the helper in a note. Elsewhere as [`Self::finding`].
    pub fn finding_beside(
        &self,
        lint: &'static Lint,
        i: InstId,
        anchor: InstId,
        message: impl Into<std::sync::Arc<str>>,
        label: impl Into<std::sync::Arc<str>>,
    ) -> Finding {
        let (r, a) = (self.resolve(i), self.resolve(anchor));
        let frame = (|| {
            if r.approximate || a.approximate {
                return None;
            }
            let ka = a.frames.iter().position(|x| Some(x) == a.primary.as_ref())?;
            let kp = r.frames.iter().position(|x| Some(x) == r.primary.as_ref())?;
            // the frame of `i` whose outer frames are `anchor`'s: the same inlined instance
            (kp + 1..r.frames.len()).find(|&k| r.frames[k + 1..] == a.frames[ka + 1..] && (self.is_local)(&r.frames[k].file))
        })();
        self.finding_in(lint, i, r, frame, message, label)
    }

    /// A finding at instruction `i` (resolved as `r`), at frame `frame` of
    /// it where given, else at its innermost package frame.
    fn finding_in(
        &self,
        lint: &'static Lint,
        i: InstId,
        r: Resolved,
        frame: Option<usize>,
        message: impl Into<std::sync::Arc<str>>,
        label: impl Into<std::sync::Arc<str>>,
    ) -> Finding {
        let inst = self.facts.f.insts[i].ast;
        let primary = frame.map(|k| r.frames[k].clone()).or_else(|| r.primary.clone());
        let mut fd = Finding {
            lint,
            kernel: self.name.clone(),
            ptx_line: inst.pos.line,
            ptx_col: inst.pos.col,
            span: primary.clone(),
            label: label.into(),
            message: message.into(),
            secondary: vec![],
            notes: vec![],
            metrics: vec![],
            access: self.facts.f.insts[i].access().is_some(),
            assumes: vec![],
            witness: None,
            replay: Replay::NotRun,
            rank: None,
        };
        if let Some(p) = &primary {
            for fr in r.frames.iter().skip_while(|x| *x != p).skip(1) {
                fd.note_text(Text::InlinedInto(fr.clone()));
            }
            if frame.is_some() {
                // reported at the call: the helper's own line is the note
                if let Some(inner) = r.primary.clone() {
                    fd.note_text(Text::InlinedFrom(inner));
                }
            } else {
                // a library function the reported line calls directly (`_syncthreads()`, `a.add(i)`)
                // is what the user wrote: only a deeper chain is worth a note
                let inner: Vec<&SrcPos> = r.frames.iter().take_while(|x| *x != p).collect();
                if let (Some(first), true) = (inner.first(), inner.len() > 1) {
                    fd.note_text(Text::InlinedFrom((*first).clone()));
                }
            }
        }
        if r.approximate {
            // the instruction's own line is not the package's (a toolkit header, say): name it
            if let Some(first) = r.frames.first() {
                fd.note_text(Text::InlinedFrom(first.clone()));
            }
            fd.note_text(Text::NearestLine);
        }
        fd
    }

    /// The callee access behind race site `k` ([`crate::facts::KernelFacts::race_site`]), if it is one.
    pub fn imported(&self, k: usize) -> Option<&crate::facts::CalleeAccess> {
        self.facts.imported.get(k.checked_sub(self.facts.accesses.len())?)
    }

    /// Where race site `k` is in the source (a callee's access: in the callee).
    pub fn race_span(&self, k: usize) -> Option<SrcPos> {
        match self.imported(k) {
            Some(x) => x.span.clone(),
            None => self.resolve(self.facts.race_site(k).inst).primary,
        }
    }

    /// Where race site `k` is, for a note.
    pub fn race_place(&self, k: usize) -> Place {
        match (self.imported(k), self.race_span(k)) {
            (_, Some(p)) => Place::Source(p),
            (Some(x), None) => Place::PtxLine(x.ptx_line),
            (None, None) => self.place(self.facts.race_site(k).inst),
        }
    }

    /// A finding at race site `k`: an access of this function, or one of a
    /// callee's at the callee's line, with a note naming the call.
    pub fn race_finding(
        &self,
        lint: &'static Lint,
        k: usize,
        message: impl Into<std::sync::Arc<str>>,
        label: impl Into<std::sync::Arc<str>>,
    ) -> Finding {
        let call = self.facts.race_site(k).inst;
        let Some(x) = self.imported(k) else { return self.finding(lint, call, message, label) };
        let mut fd = Finding {
            kernel: self.name.clone(),
            ptx_line: x.ptx_line,
            ptx_col: x.ptx_col,
            span: x.span.clone(),
            label: label.into(),
            message: message.into(),
            access: true,
            ..Finding::new(lint)
        };
        fd.note_text(Text::at(format!("in `{}`, in this call from `{}` at ", x.callee, self.name), self.place(call), String::new()));
        fd
    }

    /// Race site `k` as the run names it (a callee's access: in the callee).
    pub fn race_key(&self, k: usize) -> Site {
        match self.imported(k) {
            Some(x) => (x.function, x.export.access.inst.index()),
            None => (self.facts.f.index, self.facts.race_site(k).inst.index()),
        }
    }

    /// The witness of race `r`: its two accesses, in block 0 (and the
    /// other block, for a race between blocks), and the memory both are
    /// in where the check placed them; boxed, as a finding holds it.
    pub fn race_witness(&self, r: &crate::races::Race) -> Box<Witness> {
        let other = r.between_blocks.map(|d| {
            let mut b = [0; 3];
            b[d as usize % 3] = r.block_apart;
            b
        });
        let (a, b) = (self.facts.race_site(r.first), self.facts.race_site(r.second));
        let memory = (!a.assumed && !b.assumed && a.space == b.space).then_some(a.space);
        Box::new(Witness::Race { sites: [self.race_key(r.first), self.race_key(r.second)], other, memory })
    }

    /// The note and numbers saying what share of the kernel's predicted
    /// memory cost access `x`'s cost beyond its ideal is (`what`: that cost,
    /// `of`: the kernel's total), weighted by how often each access issues
    /// (`facts::slots`; JSON `impact_share`, `impact_share_high` for a range).
    pub fn impact_note(&self, fd: &mut Finding, x: &crate::memory::AccessFact, what: &str, of: &str) {
        let Some((low, high)) = self.facts.impact(x) else { return };
        let range = percent_range(low, high);
        let longer = match self.facts.issued(x) {
            Some(n) if !n.unknown_loops().is_empty() => " as the loop around it runs longer",
            _ => "",
        };
        let whose = if self.facts.f.func.is_entry { "kernel" } else { "function" };
        fd.note(format!("{what} are {range} of this {whose}'s predicted {of}{longer}"));
        fd.metrics.push(("impact_share", Metric::Float(low)));
        if high > low {
            fd.metrics.push(("impact_share_high", Metric::Float(high)));
        }
    }

    /// The note saying which block shape the numbers are for.
    pub fn shape_note(&self, fd: &mut Finding) {
        let shape = self.facts.shape;
        fd.note_text(Text::shape(self.name.clone(), shape.block, shape.source.clone()));
    }
}

/// `threads 128..255` style summary of the set of threads where `sel` holds.
pub fn thread_ranges(sel: &[bool]) -> String {
    let mut ranges: Vec<(usize, usize)> = vec![];
    for (t, &s) in sel.iter().enumerate() {
        if s {
            match ranges.last_mut() {
                Some((_, e)) if *e + 1 == t => *e = t,
                _ => ranges.push((t, t)),
            }
        }
    }
    let total = sel.iter().filter(|x| **x).count();
    let fmt = |(a, b): &(usize, usize)| {
        if a == b {
            format!("{a}")
        } else {
            format!("{a}..{b}")
        }
    };
    match ranges.len() {
        0 => "no thread".to_string(),
        1..=3 => format!("thread{} {}", if total == 1 { "" } else { "s" }, ranges.iter().map(fmt).collect::<Vec<_>>().join(", ")),
        _ => format!("threads {}, … ({} of {})", ranges.iter().take(3).map(fmt).collect::<Vec<_>>().join(", "), total, sel.len()),
    }
}
