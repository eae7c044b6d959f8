//! gpucheck-analysis: from PTX text to findings.
//!
//! Pipeline: [`ptx::parse`] → [`ir::lower`] (typed instructions, CFG,
//! dominators, loops, SSA, address spaces) → [`divergence`] (affine
//! thread-dependence of every value) → [`memory`] (sectors per request,
//! bank conflicts) and [`races`] → [`facts`] (per kernel) → [`lints`] →
//! [`Finding`]s with PTX positions and Rust source spans ([`srcmap`]);
//! called device functions go through the same pipeline once per call
//! context their kernels give them (`calls`).
//! [`model`] (block shape, warps, sectors, banks) sits below all of them;
//! [`interp`] runs kernels for confirmation.
//!
//! This crate is usable alone: given PTX text and a launch configuration it
//! returns findings. It spawns no process, touches no file and prints nothing;
//! Cargo, files and rendering belong to the `cargo-gpucheck` binary.

mod calls;
pub mod divergence;
pub mod facts;
pub mod interp;
pub mod ir;
pub mod lints;
pub mod memory;
pub mod meter;
pub mod model;
pub mod producer;
pub mod ptx;
pub mod races;
pub mod srcmap;
pub mod synth;

pub use lints::{Finding, Level, Lint, Metric, Note, NoteKind, Place, Text, LINTS};
pub use model::{Shape, ShapeSource};
pub use producer::producer;
pub use ptx::ParseError;
pub use srcmap::SrcPos;
use std::collections::HashMap;

/// Launch-shape hints, from the most to the least specific source.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// `--block X,Y,Z`: wins over everything.
    pub block: Option<[u32; 3]>,
    /// `[package.metadata.gpucheck.kernels.NAME] block = […]`.
    pub kernel_blocks: HashMap<String, [u32; 3]>,
    /// `[package.metadata.gpucheck] block = […]`.
    pub package_block: Option<[u32; 3]>,
    /// The grid shape (races between blocks), from `--grid`, then
    /// `[package.metadata.gpucheck.kernels.NAME] grid`, then
    /// `[package.metadata.gpucheck] grid`; unknown: two blocks or more
    /// along each dimension global addresses take the block index from.
    pub grid: Option<[u32; 3]>,
    pub kernel_grids: HashMap<String, [u32; 3]>,
    pub package_grid: Option<[u32; 3]>,
    /// `predicted / ideal` sectors from which a global access is reported
    /// (`--coalescing-threshold`; 2.0 when unset).
    pub coalescing_threshold: Option<f64>,
}

/// Where a reported instruction is: its function, its place in the PTX,
/// and its source position.
#[derive(Clone, Debug)]
pub struct Site {
    pub kernel: String,
    /// The function (index in `ptx::Module::functions`) and instruction
    /// (index in its body), as the interpreter's `SiteKey` numbers them.
    pub function: usize,
    pub inst: usize,
    pub ptx_line: u32,
    pub span: Option<SrcPos>,
    /// The call site the code at `span` was inlined at, when it is in the
    /// package too (tells apart two calls of one helper).
    pub via: Option<SrcPos>,
}

impl Site {
    /// The site as the interpreter and `confirm` number it.
    pub fn key(&self) -> interp::SiteKey {
        interp::SiteKey { func: self.function, inst: self.inst }
    }
}

/// The predicted cost of one memory access site (reported or not).
#[derive(Clone, Debug)]
pub struct AccessReport {
    pub site: Site,
    pub space: &'static str,
    pub kind: &'static str,
    pub width: u32,
    /// Global: (typical, worst) sectors per request and the ideal.
    pub sectors: Option<(u32, u32, u32)>,
    /// Global: the typical sectors per request when a runtime row pitch or
    /// offset misaligns the warps' rows (only when that costs more).
    pub misaligned: Option<u32>,
    /// Global: the lane stride is a value read from memory; `sectors` is
    /// for a large one, this for 1.
    pub sectors_at_stride_one: Option<u32>,
    /// Shared: (typical, worst) conflict degree.
    pub conflict: Option<(u32, u32)>,
    pub requests: usize,
    /// Why there is no prediction (data-dependent address), if so.
    pub unpredictable: bool,
}

/// What the analysis predicts for one conditional branch: how many warps
/// of a block take both of its sides.
#[derive(Clone, Debug, PartialEq)]
pub enum BranchPrediction {
    /// The condition is the same in every lane of each warp: no warp splits.
    Uniform,
    /// Exactly this many warps of every block split (the condition was
    /// evaluated for every thread; nothing was sampled).
    Splits(usize),
    /// This many split for the sampled values (loop counters, block
    /// indices, parameters) named; other values may split other warps.
    Sampled { warps: usize, values: Vec<(String, i64)> },
    /// At most this many (a bound of the condition is not known statically).
    AtMost(usize),
    /// A loop exit whose trip count differs between the lanes of a warp.
    TripCount,
    /// Depends on loaded data or on something that cannot be evaluated.
    Unknown,
}

/// A conditional branch with its prediction (reported or not).
#[derive(Clone, Debug)]
pub struct BranchReport {
    pub site: Site,
    /// Warps per block of the shape the prediction is for.
    pub warps: usize,
    pub prediction: BranchPrediction,
}

/// A barrier (or a call that executes one) with the prediction whether
/// every thread of the block reaches it.
#[derive(Clone, Debug)]
pub struct BarrierReport {
    pub site: Site,
    /// Part of the block skips it (`barrier_divergence`).
    pub divergent: bool,
}

/// A warp's footprint over a group of accesses to one array in one loop
/// iteration (`memory::footprint`): the union of their sectors per warp.
#[derive(Clone, Debug)]
pub struct GroupReport {
    pub kernel: String,
    pub function: usize,
    /// The members (instruction indices), in order.
    pub members: Vec<usize>,
    /// Loads (judged together, through L1) or stores.
    pub loads: bool,
    /// Sectors of the union per warp: (typical, worst); the ideal; bytes used.
    pub sectors: (u32, u32),
    /// In a loop that steps the members off their alignment: the typical
    /// sectors from the second iteration on, when they differ.
    pub later: Option<u32>,
    pub ideal: u32,
    pub bytes_used: u32,
}

/// A predicted race between two accesses of one function.
#[derive(Clone, Debug)]
pub struct RaceReport {
    pub kernel: String,
    pub function: usize,
    /// The first (writing) and second access (instruction indices), each
    /// in its function: `function`'s own, or a device function it calls.
    pub first: usize,
    pub second: usize,
    pub first_function: usize,
    pub second_function: usize,
    pub kind: races::RaceKind,
    pub space: ir::inst::Space,
    /// The witness threads (linear ids in the block) of `first` and `second`,
    /// as the finding names them.
    pub threads: (usize, usize),
    /// Both write the same uniform value (`benign_race`).
    pub benign: bool,
    /// Between threads of two blocks (`grid_memory_race`): `threads` are
    /// in block 0 and in the block next to it.
    pub between_blocks: bool,
}

/// The result of checking one PTX module.
#[derive(Debug, Default)]
pub struct Report {
    pub findings: Vec<Finding>,
    /// Kernels (`.entry`) and device functions with bodies analysed.
    pub functions: usize,
    pub kernels: usize,
    pub instructions: usize,
    /// Whether DWARF inline information was found and decoded.
    pub has_dwarf: bool,
    /// Every global and shared access with its prediction.
    pub accesses: Vec<AccessReport>,
    /// Every conditional branch with its prediction.
    pub branches: Vec<BranchReport>,
    /// Every predicted race.
    pub races: Vec<RaceReport>,
    /// Every reachable barrier with its prediction.
    pub barriers: Vec<BarrierReport>,
    /// Every access group's footprint prediction.
    pub groups: Vec<GroupReport>,
    /// The kernels' names (as in the PTX), in module order.
    pub kernel_names: Vec<String>,
    /// How each function's memory instructions were analysed.
    pub coverage: Vec<CoverageReport>,
}

/// How the memory instructions (`ld`/`ldu`/`st`/`atom`/`red`, vector forms
/// included) of one function were analysed; the categories add up to
/// `total`.
#[derive(Clone, Debug, Default)]
pub struct CoverageReport {
    /// The function's name (demangled).
    pub kernel: String,
    pub function: usize,
    /// A kernel (`.entry`), else a device function.
    pub entry: bool,
    /// Instructions in the function's body.
    pub instructions: usize,
    /// The block shape the function was analysed for, and where it came from.
    pub block: [u32; 3],
    pub shape_source: ShapeSource,
    /// The calls (from kernels, through direct calls) a device function
    /// was analysed for (0: once for every caller, its parameters unknown),
    /// and the analyses that took: calls with the same arguments, threads
    /// and shape share one.
    pub contexts: usize,
    pub context_analyses: usize,
    pub total: usize,
    pub predicted: usize,
    pub data_dependent: usize,
    /// Local, constant and parameter memory (no coalescing question).
    pub other_space: usize,
    /// Predicted or data-dependent accesses whose space is not known,
    /// analysed as global.
    pub assumed_global: Vec<SkippedSite>,
    /// Not analysed, each with its reason.
    pub skipped: Vec<SkippedSite>,
}

impl CoverageReport {
    /// Not analysed, per reason key, in a stable order.
    pub fn not_analysed(&self) -> Vec<(&'static str, &'static str, usize)> {
        let mut by: std::collections::BTreeMap<&'static str, (&'static str, usize)> = Default::default();
        for s in &self.skipped {
            by.entry(s.key).or_insert((s.reason, 0)).1 += 1;
        }
        by.into_iter().map(|(k, (r, n))| (k, r, n)).collect()
    }
}

/// A memory instruction named in a coverage report.
#[derive(Clone, Debug)]
pub struct SkippedSite {
    pub site: Site,
    pub key: &'static str,
    pub reason: &'static str,
}

impl Report {
    /// The access report of a site, if the analysis made one.
    pub fn access_at(&self, k: interp::SiteKey) -> Option<&AccessReport> {
        self.accesses.iter().find(|a| a.site.key() == k)
    }
}

/// The block shape used for function `f`: `--block`, then the kernel's
/// metadata, `.reqntid`, the package's metadata, else an assumed shape.
pub fn shape_for(f: &ptx::Function<'_>, opts: &Options) -> Shape {
    if let Some(b) = opts.block {
        return Shape::new(b, ShapeSource::Cli);
    }
    let demangled = demangle(f.name);
    if let Some((name, b)) = [f.name, demangled.as_str()].iter().find_map(|n| opts.kernel_blocks.get_key_value(*n)) {
        return Shape::new(*b, ShapeSource::Kernel(name.clone()));
    }
    // a block has at most 1024 threads: a larger `.reqntid` is not a launch shape
    let launchable =
        |b: &[u32; 3]| b.iter().try_fold(1u64, |n, &x| n.checked_mul(x.max(1) as u64)).is_some_and(|n| n <= model::MAX_BLOCK_THREADS);
    if let Some(b) = f.perf.reqntid.filter(launchable) {
        return Shape::new(b, ShapeSource::Reqntid);
    }
    if let Some(b) = opts.package_block {
        return Shape::new(b, ShapeSource::Package);
    }
    let uses = |dim: u8| {
        f.body.iter().flatten().any(|s| {
            matches!(s, ptx::Stmt::Inst(i) if i.operands.iter().any(|o| matches!(o, ptx::Operand::Reg(r) if ir::inst::Special::parse(r) == Some(ir::inst::Special::Tid(dim)))))
        })
    };
    let block = if uses(2) {
        [32, 4, 2]
    } else if uses(1) {
        [32, 8, 1]
    } else {
        [256, 1, 1]
    };
    Shape::new(block, ShapeSource::Assumed)
}

/// The grid shape used for kernel `f`, when known: `--grid`, then the
/// kernel's metadata, then the package's.
pub fn grid_for(f: &ptx::Function<'_>, opts: &Options) -> Option<[u32; 3]> {
    let demangled = demangle(f.name);
    opts.grid.or_else(|| [f.name, demangled.as_str()].iter().find_map(|n| opts.kernel_grids.get(*n).copied())).or(opts.package_grid)
}

/// Parse and check one PTX module. `is_local` says whether a source file
/// belongs to the package being checked (findings point into it).
pub fn check(src: &str, opts: &Options, is_local: &IsLocal<'_>) -> Result<Report, ParseError> {
    let module = ptx::parse(src)?;
    Ok(check_module(&module, opts, is_local))
}

/// Whether a source file belongs to the package being checked.
pub type IsLocal<'a> = dyn Fn(&str) -> bool + Sync + 'a;

/// Check an already parsed module; functions are analysed in parallel.
pub fn check_module<'a>(module: &'a ptx::Module<'a>, opts: &Options, is_local: &IsLocal<'_>) -> Report {
    use rayon::prelude::*;
    // module-wide facts from the instruction listings; each function's IR
    // is then built, analysed and dropped in its own task (peak memory)
    let bodies = ir::bodies(module);
    let sums = divergence::Summaries::compute(&bodies);
    let srcmap = srcmap::SourceMap::new(module, &bodies);
    let mut report = Report { has_dwarf: srcmap.has_dwarf(), ..Default::default() };
    for b in &bodies {
        report.functions += 1;
        report.kernels += b.func.is_entry as usize;
        report.instructions += b.insts.len();
    }
    report.kernel_names = module.functions.iter().filter(|f| f.is_entry).map(|f| f.name.to_string()).collect();
    let indices: Vec<usize> = bodies.iter().map(|b| b.index).collect();
    let mcx = ir::ModuleCx::from_bodies(module, &bodies);
    let graph = calls::CallGraph::new(&bodies);
    drop(bodies);
    let none = facts::Imports::new();
    let once = |i: &[usize]| -> Vec<FunctionReport> {
        i.par_iter().map(|&i| check_function(&ir::lower_one(module, i, &mcx), &sums, &srcmap, opts, is_local, &[], &none)).collect()
    };
    // kernels, and device functions no call context will cover (uncalled, recursive), once
    let in_context_only = |i: &usize| !module.functions[*i].is_entry && graph.called.contains(i) && !graph.recursive.contains(i);
    let (later, now): (Vec<usize>, Vec<usize>) = indices.iter().partition(|i| in_context_only(i));
    let mut per_fn = once(&now);
    // the called device functions in each call context their kernels give them
    let input = calls::ModuleInput { module, mcx: &mcx, sums: &sums, srcmap: &srcmap, opts, is_local };
    let (in_context, imports) = calls::analyse(&input, &per_fn, &graph);
    // kernels whose direct callees access memory through their arguments: the
    // race check again, with those accesses at the calls
    let mut again: Vec<(&usize, &facts::Imports)> = imports.iter().collect();
    again.sort_by_key(|(k, _)| **k);
    let redone: Vec<FunctionReport> = again
        .par_iter()
        .map(|&(&k, imp)| check_function(&ir::lower_one(module, k, &mcx), &sums, &srcmap, opts, is_local, &[], imp))
        .collect();
    for r in redone {
        if let Some(x) = per_fn.iter_mut().find(|x| x.coverage.function == r.coverage.function) {
            *x = r;
        }
    }
    per_fn.extend(later.iter().filter_map(|i| in_context.get(i)).map(|rs| calls::merge(rs)));
    // those the contexts did not reach (past the call depth or budget): once for every caller
    let missed: Vec<usize> = later.iter().copied().filter(|i| !in_context.contains_key(i)).collect();
    per_fn.extend(once(&missed));
    per_fn.sort_by_key(|r| r.coverage.function);
    for r in per_fn.iter_mut() {
        if !r.coverage.entry && !graph.called.contains(&r.coverage.function) {
            // no kernel runs this code: what its callers would pass is nobody's
            for s in r.coverage.skipped.iter_mut().filter(|s| s.key == "from_arguments") {
                (s.key, s.reason) = ("no_caller", "in a device function no kernel of the module calls");
            }
        }
    }
    for r in per_fn {
        report.findings.extend(r.findings);
        report.accesses.extend(r.accesses);
        report.branches.extend(r.branches);
        report.races.extend(r.races);
        report.barriers.extend(r.barriers);
        report.groups.extend(r.groups);
        report.coverage.push(r.coverage);
    }
    report
}

/// What checking one function yields.
pub(crate) struct FunctionReport {
    findings: Vec<Finding>,
    accesses: Vec<AccessReport>,
    branches: Vec<BranchReport>,
    races: Vec<RaceReport>,
    barriers: Vec<BarrierReport>,
    groups: Vec<GroupReport>,
    coverage: CoverageReport,
    /// The calls it makes, each with what it passes, where it is and the
    /// call instruction.
    calls: Vec<(String, divergence::CallArgs, Place, ir::InstId)>,
    /// In a call context: the accesses its caller's race check pairs.
    exports: Vec<facts::CalleeAccess>,
    /// The kernel's block shape (the calls' contexts inherit it).
    shape: Shape,
}

/// Check one function; a device function in the call contexts `cxs` (the
/// first one's arguments and threads: they share them) when given, else
/// once for every caller; its races also paired with `imports`, the
/// accesses of its callees.
fn check_function(
    f: &ir::FunctionIr<'_>,
    sums: &divergence::Summaries,
    srcmap: &srcmap::SourceMap<'_>,
    opts: &Options,
    is_local: &IsLocal<'_>,
    cxs: &[calls::Context],
    imports: &facts::Imports,
) -> FunctionReport {
    let cx0 = cxs.first();
    let d = divergence::Divergence::analyze_in(f, sums, cx0.map(|c| &c.args));
    let shape = match cx0 {
        Some(c) => c.shape.clone(),
        None => shape_for(f.func, opts),
    };
    let grid = cx0.is_none().then(|| grid_for(f.func, opts)).flatten();
    let facts = facts::KernelFacts::compute_with(f, &d, sums, &shape, imports, grid);
    let cx = lints::LintCx { facts: &facts, srcmap, is_local, coalescing_threshold: opts.coalescing_threshold.unwrap_or(2.0) };
    let mut findings = lints::run(&cx);
    for x in findings.iter_mut() {
        calls::note_contexts(x, cxs);
    }
    let kernel = cx0.map_or_else(|| demangle(f.func.name), |c| c.kernel.clone());
    let calls = facts.calls.iter().map(|c| (c.callee.to_string(), c.args.clone(), cx.place(c.inst), c.inst)).collect();
    let exports = facts
        .exports
        .iter()
        .map(|x| facts::CalleeAccess {
            function: f.index,
            callee: calls::readable(&demangle(f.func.name)),
            ptx_line: f.insts[x.access.inst].ast.pos.line,
            ptx_col: f.insts[x.access.inst].ast.pos.col,
            span: cx.resolve(x.access.inst).primary,
            export: x.clone(),
        })
        .collect();
    let site = |i: ir::InstId| Site {
        kernel: kernel.clone(),
        function: f.index,
        inst: i.index(),
        ptx_line: f.insts[i].ast.pos.line,
        span: cx.resolve(i).primary,
        via: cx.call_site(i),
    };
    let accesses = facts
        .accesses
        .iter()
        .map(|x| {
            let (a, p) = (&x.access, &x.prediction);
            let global = a.space == ir::inst::Space::Global;
            AccessReport {
                site: site(a.inst),
                space: a.space.name(),
                kind: a.kind.name(),
                width: a.width,
                sectors: p.as_ref().filter(|_| global).map(|p| (p.sectors.0, p.sectors.1, p.ideal)),
                misaligned: p.as_ref().filter(|_| global).and_then(|p| p.misaligned).map(|m| m.sectors),
                sectors_at_stride_one: p.as_ref().and_then(|p| p.runtime_stride).map(|r| r.sectors_at_one),
                conflict: p.as_ref().filter(|_| !global).map(|p| p.conflict),
                requests: p.as_ref().map(|p| p.requests).unwrap_or(0),
                unpredictable: p.is_none(),
            }
        })
        .collect();
    let branches = f
        .cfg
        .blocks
        .iter_enumerated()
        .filter(|(b, _)| f.cfg.reachable(*b))
        .filter_map(|(b, blk)| {
            let i = blk.last()?;
            let inst = &f.insts[i];
            let g = inst.ast.guard.filter(|_| inst.is_jump())?;
            let cond = f.ssa.use_of(i, g.reg)?;
            let prediction = match facts.branch_of_block(b) {
                _ if d.at(f, cond, b).is_warp_uniform() => BranchPrediction::Uniform,
                None => BranchPrediction::Uniform,
                Some(x) => match &x.split {
                    divergence::split::Split::Exact { split, witness, .. } if witness.is_empty() => BranchPrediction::Splits(*split),
                    divergence::split::Split::Exact { split, witness, .. } => {
                        BranchPrediction::Sampled { warps: *split, values: witness.clone() }
                    }
                    divergence::split::Split::Bounded { split, .. } => BranchPrediction::AtMost(*split),
                    divergence::split::Split::TripCount => BranchPrediction::TripCount,
                    divergence::split::Split::Unknown { .. } => BranchPrediction::Unknown,
                },
            };
            Some(BranchReport { site: site(i), warps: shape.warps(), prediction })
        })
        .collect();
    let races = facts
        .races
        .iter()
        .map(|r| {
            // a callee's access is named in its own function
            let at = |k: usize| match cx.imported(k) {
                Some(x) => (x.function, x.export.access.inst.index()),
                None => (f.index, facts.race_site(k).inst.index()),
            };
            let ((first_function, first), (second_function, second)) = (at(r.first), at(r.second));
            RaceReport {
                kernel: kernel.clone(),
                function: f.index,
                first,
                second,
                first_function,
                second_function,
                kind: r.kind,
                space: facts.race_site(r.first).space,
                threads: r.threads,
                benign: r.benign,
                between_blocks: false,
            }
        })
        .chain(facts.grid_races.iter().map(|r| RaceReport {
            kernel: kernel.clone(),
            function: f.index,
            first: facts.accesses[r.first].access.inst.index(),
            second: facts.accesses[r.second].access.inst.index(),
            first_function: f.index,
            second_function: f.index,
            kind: r.kind,
            space: ir::inst::Space::Global,
            threads: r.threads,
            benign: r.benign,
            between_blocks: true,
        }))
        .collect();
    let barriers = facts.barriers.iter().map(|b| BarrierReport { site: site(b.inst), divergent: b.divergence.is_some() }).collect();
    let groups = facts
        .groups
        .iter()
        .map(|g| GroupReport {
            kernel: kernel.clone(),
            function: f.index,
            members: g.members.iter().map(|&k| facts.accesses[k].access.inst.index()).collect(),
            loads: g.kind == memory::AccessKind::Load,
            sectors: g.sectors,
            later: g.later,
            ideal: g.ideal,
            bytes_used: g.bytes_used,
        })
        .collect();
    let cov = &facts.coverage;
    let skipped = |i: ir::InstId, key: &'static str, reason: &'static str| SkippedSite { site: site(i), key, reason };
    let coverage = CoverageReport {
        kernel: demangle(f.func.name),
        function: f.index,
        entry: f.func.is_entry,
        instructions: f.insts.len(),
        block: shape.block,
        shape_source: shape.source.clone(),
        contexts: cxs.len(),
        context_analyses: usize::from(!cxs.is_empty()),
        total: cov.total,
        predicted: cov.predicted,
        data_dependent: cov.data_dependent,
        other_space: cov.other_space,
        assumed_global: cov
            .assumed_global
            .iter()
            .map(|&i| skipped(i, "assumed_global", "address space not known: analysed as global"))
            .collect(),
        skipped: cov.skipped.iter().map(|&(i, why)| skipped(i, why.key(), why.reason())).collect(),
    };
    FunctionReport { findings, accesses, branches, races, barriers, groups, coverage, calls, exports, shape }
}

/// A symbol as people write it: Rust (legacy and v0) names demangled
/// without their hash, others unchanged.
pub fn demangle(name: &str) -> String {
    match rustc_demangle::try_demangle(name) {
        Ok(d) => format!("{d:#}"),
        Err(_) => name.to_string(),
    }
}
