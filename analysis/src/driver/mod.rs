//! The driver: one PTX module through the pipeline. Each function is
//! lowered, analysed and dropped in a task of its own (functions in
//! parallel); a kernel's direct callees are analysed in the call contexts
//! it gives them (`contexts`) while the kernel's facts are computed, before
//! its race check, which pairs their accesses with the kernel's own — so
//! every kernel is analysed once. The result is the module's [`Report`].
//!
//! Owns: launch shapes per function (`shape_for`, `grid_for`), the order of
//! the work, and turning facts and findings into report types. Does not
//! own: any analysis (`crate::facts` and below) or the lint decisions
//! (`crate::lints`).

mod contexts;

pub use contexts::MAX_DEPTH;

use crate::divergence::{self, CallArgs, Summaries};
use crate::facts::{CallFact, CalleeAccess, Imports, KernelFacts, Skip};
use crate::interp::SiteKey;
use crate::ir::{self, inst::Special, FunctionIr};
use crate::lints::{self, Finding};
use crate::model::{self, Shape, ShapeSource};
use crate::names::{demangle, readable};
use crate::ptx::{self, ParseError};
use crate::report::*;
use crate::srcmap::{IsLocal, Place, SourceMap};
use contexts::{CallGraph, Context, Contexts};
use rustc_hash::FxHashMap;

/// Launch-shape hints, from the most to the least specific source.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// `--block NAME=X,Y,Z` (by PTX, Rust or C++ source name,
    /// [`crate::names::aliases`]): wins over everything for its kernel.
    pub cli_kernel_blocks: std::collections::HashMap<String, [u32; 3]>,
    /// `--block X,Y,Z`: wins over everything else.
    pub block: Option<[u32; 3]>,
    /// `[package.metadata.gpucheck.kernels.NAME] block = […]`.
    pub kernel_blocks: std::collections::HashMap<String, [u32; 3]>,
    /// `[package.metadata.gpucheck] block = […]`.
    pub package_block: Option<[u32; 3]>,
    /// Block shapes of the host code's launches of each kernel (by name):
    /// the shape, and the source file (as shown) and line of the launch.
    pub launch_blocks: std::collections::HashMap<String, ([u32; 3], String, u32)>,
    /// The grid shape (races between blocks), from `--grid`, then
    /// `[package.metadata.gpucheck.kernels.NAME] grid`, then
    /// `[package.metadata.gpucheck] grid`; unknown: two blocks or more
    /// along each dimension global addresses take the block index from.
    pub grid: Option<[u32; 3]>,
    pub kernel_grids: std::collections::HashMap<String, [u32; 3]>,
    pub package_grid: Option<[u32; 3]>,
    /// Bytes of dynamic shared memory the launch gives, the size of every
    /// `extern .shared` array (unknown: they are not checked for
    /// out-of-bounds or uninitialised reads):
    /// `--shared` for every kernel, then `[package.metadata.gpucheck.kernels.NAME]
    /// shared_bytes` (by [`crate::names::aliases`]), then the package's.
    pub dynamic_shared: Option<u64>,
    pub kernel_shared: std::collections::HashMap<String, u64>,
    pub package_shared: Option<u64>,
    /// `predicted / ideal` sectors from which a global access is reported
    /// (`--coalescing-threshold`; 2.0 when unset).
    pub coalescing_threshold: Option<f64>,
    /// Values declared for kernels' scalar parameters, by PTX parameter
    /// name or index: `--assume` and `[package.metadata.gpucheck] assume`
    /// for every kernel, then `[package.metadata.gpucheck.kernels.NAME]
    /// assume` (by kernel name, as in the PTX or demangled). The analysis
    /// takes them as the launch's values instead of sampling.
    pub values: FxHashMap<String, i64>,
    pub kernel_values: FxHashMap<String, FxHashMap<String, i64>>,
    /// The source's names of each kernel's parameters, one per PTX
    /// parameter (a Rust slice is two: `xs`, `xs.len`), by kernel name as
    /// the source writes it (a C++ kernel's unqualified name), so that
    /// declared values may name them and messages use them.
    pub source_names: std::collections::HashMap<String, Vec<String>>,
    /// Replay each correctness finding's witness on the interpreter before
    /// it is reported (`crate::replay`); off by default in the library,
    /// on in the binary unless `--no-replay`.
    pub replay: bool,
    /// Lints whose findings no level can show (every source of levels
    /// leaves them allowed, see the binary's `levels`): their passes do not
    /// run. Empty in the library: every pass runs.
    pub silent: Vec<&'static str>,
    /// Leave out the per-site records (`Report::accesses`, `branches`,
    /// `races`, `barriers`, `groups`, `cas_seeds`, `unfenced`) that
    /// `confirm`, the HTML report and `--all-accesses` read: a check that
    /// prints its findings alone does not make them (histogram's 7,000
    /// race records, each with its kernel's name and its two sites).
    /// Findings and coverage are the same either way. Off by default.
    pub findings_only: bool,
}

impl Options {
    /// The dynamic shared bytes function `f`'s launch gives (a device
    /// function: those every kernel's launch gives), if known.
    pub fn shared_for(&self, f: &ptx::Function<'_>) -> Option<u64> {
        let own = || crate::names::aliases(f.name).iter().find_map(|n| self.kernel_shared.get(n)).copied();
        self.dynamic_shared.or_else(|| if f.is_entry && !self.kernel_shared.is_empty() { own() } else { None }).or(self.package_shared)
    }

    /// The value declared for parameter `k` (named `name` in the PTX) of
    /// kernel `f`, if any: by its PTX name, its index, or its source name.
    pub fn declared(&self, f: &ptx::Function<'_>, k: usize, name: &str) -> Option<i64> {
        let demangled = demangle(f.name);
        let names = [f.name, demangled.as_str()];
        let index = k.to_string();
        let source = self.source_params(f).and_then(|ps| ps.get(k));
        let find = |m: &FxHashMap<String, i64>| m.get(name).or_else(|| m.get(&index)).or_else(|| source.and_then(|s| m.get(s))).copied();
        names.iter().find_map(|n| self.kernel_values.get(*n)).and_then(find).or_else(|| find(&self.values))
    }
}

impl Options {
    /// The source's names of kernel `f`'s parameters, one per PTX
    /// parameter, when they are known and as many as the PTX has.
    pub fn source_params(&self, f: &ptx::Function<'_>) -> Option<&Vec<String>> {
        if self.source_names.is_empty() {
            return None;
        }
        crate::names::aliases(f.name).iter().find_map(|n| self.source_names.get(n)).filter(|ps| ps.len() == f.params.len())
    }
}

/// The block shape used for function `f`: the one given ([`given_shape`]),
/// else an assumed shape (two or three dimensions when the function reads
/// `%tid.y` or `%tid.z`).
pub fn shape_for(f: &FunctionIr<'_>, opts: &Options) -> Shape {
    if let Some(s) = given_shape(f.func, opts) {
        return s;
    }
    let reads = |dim: u8| (0..f.ssa.regs.len()).any(|r| f.ssa.special_reg(r as u32) == Some(Special::Tid(dim)));
    let block = if reads(2) {
        [32, 4, 2]
    } else if reads(1) {
        [32, 8, 1]
    } else {
        [256, 1, 1]
    };
    Shape::new(block, ShapeSource::Assumed)
}

/// The block shape given for kernel `func`, when one is: `--block` for
/// it, `--block`, its kernel table, `.reqntid`, its host launch, the
/// package table, `.maxntid`, in that order (what `confirm` launches).
pub fn given_shape(func: &ptx::Function<'_>, opts: &Options) -> Option<Shape> {
    // (the names demangled only where a table could hold one: C++ demangling is not free)
    let names = std::cell::OnceCell::new();
    let names = || names.get_or_init(|| crate::names::aliases(func.name)).as_slice();
    if let Some(b) = by_name(&opts.cli_kernel_blocks, names) {
        return Some(Shape::new(*b, ShapeSource::Cli));
    }
    if let Some(b) = opts.block {
        return Some(Shape::new(b, ShapeSource::Cli));
    }
    if let Some((name, b)) =
        (!opts.kernel_blocks.is_empty()).then(|| names().iter().find_map(|n| opts.kernel_blocks.get_key_value(n))).flatten()
    {
        return Some(Shape::new(*b, ShapeSource::Kernel(name.clone())));
    }
    // a block has at most 1024 threads: a larger `.reqntid` is not a launch shape
    if let Some(b) = func.perf.reqntid.filter(launchable) {
        return Some(Shape::new(b, ShapeSource::Reqntid));
    }
    if let Some((b, file, line)) = by_name(&opts.launch_blocks, names) {
        return Some(Shape::new(*b, ShapeSource::Launch { file: file.clone(), line: *line }));
    }
    if let Some(b) = opts.package_block {
        return Some(Shape::new(b, ShapeSource::Package));
    }
    func.perf.maxntid.filter(launchable).map(|b| Shape::new(b, ShapeSource::Maxntid))
}

/// The entry of a table keyed by kernel name for one of `names` (not
/// computed for an empty table).
fn by_name<'t, V>(table: &'t std::collections::HashMap<String, V>, names: impl FnOnce() -> &'t [String]) -> Option<&'t V> {
    if table.is_empty() {
        return None;
    }
    names().iter().find_map(|n| table.get(n))
}

/// Whether a block of this shape can be launched (at most 1024 threads).
fn launchable(b: &[u32; 3]) -> bool {
    b.iter().try_fold(1u64, |n, &x| n.checked_mul(x.max(1) as u64)).is_some_and(|n| n <= model::MAX_BLOCK_THREADS)
}

/// The grid shape used for kernel `f`, when known: `--grid`, then the
/// kernel's metadata, then the package's.
pub fn grid_for(f: &ptx::Function<'_>, opts: &Options) -> Option<[u32; 3]> {
    let names = std::cell::OnceCell::new();
    opts.grid
        .or_else(|| by_name(&opts.kernel_grids, || names.get_or_init(|| crate::names::aliases(f.name)).as_slice()).copied())
        .or(opts.package_grid)
}

/// Parse and check one PTX module. `is_local` says whether a source file
/// belongs to the package being checked (findings point into it).
pub fn check(src: &str, opts: &Options, is_local: &IsLocal<'_>) -> Result<Report, ParseError> {
    let module = parse(src)?;
    Ok(check_module(&module, opts, is_local))
}

/// Parse a PTX module and refuse what ptxas refuses that syntax alone does
/// not show: a branch to a label its function does not define.
pub fn parse(src: &str) -> Result<ptx::Module<'_>, ParseError> {
    let module = ptx::parse(src)?;
    match ir::undefined_branch_target(&module) {
        Some(e) => Err(e),
        None => Ok(module),
    }
}

/// What checking a module's functions needs.
#[derive(Clone, Copy)]
pub(crate) struct ModuleInput<'m, 'a> {
    pub module: &'a ptx::Module<'a>,
    pub mcx: &'m ir::ModuleCx<'a>,
    pub sums: &'m Summaries<'a>,
    pub srcmap: &'m SourceMap<'a>,
    pub opts: &'m Options,
    pub is_local: &'m IsLocal<'m>,
}

/// A module of fewer statements than this is checked on the calling
/// thread (`crate::par::alone`): on the corpus's small multi-kernel files
/// (45–251 instructions) the thread pool left the wall time as it was and
/// added 15–20 % CPU time; custom_kernels (1,148 instructions) gains a
/// millisecond of wall time from it.
const PARALLEL_FROM: usize = 512;

/// Check an already parsed module; functions are analysed in parallel
/// (unless the module is small: [`PARALLEL_FROM`]).
pub fn check_module<'a>(module: &'a ptx::Module<'a>, opts: &Options, is_local: &IsLocal<'_>) -> Report {
    let statements: usize = module.functions.iter().filter_map(|f| f.body.as_ref()).map(Vec::len).sum();
    if statements < PARALLEL_FROM {
        crate::par::alone(|| check_module_here(module, opts, is_local))
    } else {
        check_module_here(module, opts, is_local)
    }
}

fn check_module_here<'a>(module: &'a ptx::Module<'a>, opts: &Options, is_local: &IsLocal<'_>) -> Report {
    // module-wide facts from the instruction listings; each function's IR
    // is then built, analysed and dropped in its own task (peak memory)
    let bodies = ir::bodies(module);
    let sums = Summaries::compute(&bodies);
    let srcmap = SourceMap::new(module, &bodies);
    let mut report = Report { has_dwarf: srcmap.has_dwarf(), ..Default::default() };
    for b in &bodies {
        report.functions += 1;
        report.kernels += b.func.is_entry as usize;
        report.instructions += b.insts.len();
    }
    report.kernel_names = module.functions.iter().filter(|f| f.is_entry).map(|f| f.name.to_string()).collect();
    report.unlaunchable = module
        .functions
        .iter()
        .filter(|f| f.is_entry)
        .filter_map(|f| Some((f.name.to_string(), f.perf.reqntid.filter(|b| !launchable(b))?)))
        .collect();
    // the arrays sized at launch of the kernels no dynamic shared size was given for
    for f in module.functions.iter().filter(|f| f.is_entry && opts.shared_for(f).is_none()) {
        for v in ir::shared_decls(module, f).filter(|v| ir::static_bytes(v).is_none()) {
            if !report.unsized_shared.iter().any(|n| n == v.name) {
                report.unsized_shared.push(v.name.to_string());
            }
        }
    }
    for f in &module.files {
        if !report.sources.iter().any(|x| x == f.path) {
            report.sources.push(f.path.to_string());
        }
    }
    let indices: Vec<usize> = bodies.iter().map(|b| b.index).collect();
    let graph = CallGraph::new(&bodies);
    let mcx = ir::ModuleCx::from_bodies(module, bodies);
    // (asked once per file the PTX names: the caller's predicate may allocate or stat,
    // and findings ask it for every frame of every instruction they place)
    let local_files: rustc_hash::FxHashSet<&str> = module.files.iter().map(|f| f.path).filter(|p| is_local(p)).collect();
    let is_local = &|f: &str| local_files.contains(f);
    let input = ModuleInput { module, mcx: &mcx, sums: &sums, srcmap: &srcmap, opts, is_local };
    let cxs = Contexts::new(input, &graph);
    // kernels (each with its callees in the contexts it gives them), and device
    // functions no call context covers (uncalled, recursive), once each
    let in_context_only = |i: &usize| !module.functions[*i].is_entry && graph.called.contains(i) && !graph.recursive.contains(i);
    let (later, now): (Vec<usize>, Vec<usize>) = indices.iter().partition(|i| in_context_only(i));
    let roots: Vec<(FunctionReport, Vec<contexts::Use>)> = crate::par::map(&now, |&i| cxs.analyse_root(i));
    let mut uses = Vec::new();
    let mut per_fn: Vec<FunctionReport> = Vec::with_capacity(indices.len());
    for (r, u) in roots {
        per_fn.push(r);
        uses.extend(u);
    }
    // the called device functions in each call context their kernels give them
    let (mut in_context, context_analyses) = cxs.finish(uses);
    report.analyses = now.len() + context_analyses;
    per_fn.extend(later.iter().filter_map(|i| in_context.remove(i)));
    // those the contexts did not reach (past the call depth or budget): once for every caller
    let missed: Vec<usize> = later.iter().copied().filter(|i| !per_fn.iter().any(|r| r.coverage.function == *i)).collect();
    report.analyses += missed.len();
    per_fn.extend(crate::par::map(&missed, |&i| cxs.analyse_root(i).0));
    per_fn.sort_by_key(|r| r.coverage.function);
    for r in per_fn.iter_mut() {
        if !r.coverage.entry && !graph.called.contains(&r.coverage.function) {
            // no kernel runs this code: what its callers would pass is nobody's
            for s in r.coverage.skipped.iter_mut().filter(|s| s.skip == Skip::FromArguments) {
                s.skip = Skip::NoCaller;
            }
        }
    }
    if opts.replay {
        // the kernels whose findings (their own, or their callees' in their contexts) have witnesses
        let named: std::collections::BTreeSet<&str> =
            per_fn.iter().flat_map(|r| &r.findings).filter(|fd| fd.witness.is_some()).map(|fd| &*fd.kernel).collect();
        let kernels: Vec<crate::replay::Kernel> = per_fn
            .iter()
            .filter(|r| r.coverage.entry && named.contains(r.coverage.kernel.as_str()))
            .map(|r| {
                let f = &module.functions[r.coverage.function];
                let names = opts.source_params(f).cloned().unwrap_or_default();
                crate::replay::Kernel {
                    index: r.coverage.function,
                    block: r.shape.block,
                    grid: grid_for(f, opts),
                    declared: f.params.iter().enumerate().map(|(k, p)| opts.declared(f, k, p.name)).collect(),
                    names,
                    dynamic_shared: opts.shared_for(f).map(|b| b as u32),
                }
            })
            .collect();
        let mut findings: Vec<Finding> = Vec::new();
        for r in per_fn.iter_mut() {
            append_growing(&mut findings, std::mem::take(&mut r.findings));
        }
        crate::replay::replay(module, &mcx, &kernels, &mut findings, report.instructions);
        report.findings = findings;
    }
    for r in per_fn {
        append_growing(&mut report.findings, r.findings);
        report.accesses.extend(r.accesses);
        report.branches.extend(r.branches);
        report.races.extend(r.races);
        report.barriers.extend(r.barriers);
        report.groups.extend(r.groups);
        report.cas_seeds.extend(r.cas_seeds);
        report.unfenced.extend(r.unfenced);
        report.coverage.push(r.coverage);
    }
    report
}

/// Move `from`'s items to the end of `to`, which grows by a quarter (or
/// by what is needed) when full, not by doubling: a module's findings are
/// its largest vector where the peak is (thousands of race pairs before
/// they fold), and doubling leaves up to half of it unused (a large vector
/// grows in place, its pages remapped).
fn append_growing<T>(to: &mut Vec<T>, from: Vec<T>) {
    if to.capacity() - to.len() < from.len() {
        to.reserve_exact(from.len().max(to.len() / 4));
    }
    to.extend(from);
}

/// A direct call a function makes: the callee, what it passes, where it is
/// and the call instruction.
#[derive(Clone, Debug)]
pub(crate) struct Call {
    pub callee: String,
    pub args: CallArgs,
    pub place: Place,
    pub inst: ir::InstId,
}

/// What checking one function yields.
#[derive(Clone)]
pub(crate) struct FunctionReport {
    pub findings: Vec<Finding>,
    pub accesses: Vec<AccessReport>,
    pub branches: Vec<BranchReport>,
    pub races: Vec<RaceReport>,
    pub barriers: Vec<BarrierReport>,
    pub groups: Vec<GroupReport>,
    pub coverage: CoverageReport,
    /// The calls it makes.
    pub calls: Vec<Call>,
    /// In a call context: the accesses its caller's race check pairs.
    pub exports: Vec<CalleeAccess>,
    /// The block shape it was analysed for (a call's context inherits the kernel's).
    pub shape: Shape,
    /// Loads that only seed a CAS loop, with the CAS.
    pub cas_seeds: Vec<(SiteKey, SiteKey)>,
    /// Pairs an election orders without a fence.
    pub unfenced: Vec<crate::report::UnfencedReport>,
}

/// Check one function: a device function in call context `cx` when given
/// (its arguments, threads and the kernel's shape), else once for every
/// caller (a kernel: for its own launch). `imports(shape, calls)` gives the
/// accesses of its callees for its race check, given the calls it makes.
fn check_function(
    f: &FunctionIr<'_>,
    m: &ModuleInput<'_, '_>,
    cx: Option<&Context>,
    imports: &mut dyn FnMut(&Shape, &[Call]) -> Imports,
) -> FunctionReport {
    let d = match cx {
        Some(c) => divergence::Divergence::analyze_in(f, m.sums, Some(&c.args)),
        None if f.func.is_entry => {
            let bound = divergence::Bound::declared(f, &|k, name| m.opts.declared(f.func, k, name));
            divergence::Divergence::analyze_bound(f, m.sums, bound)
        }
        None => divergence::Divergence::analyze_in(f, m.sums, None),
    };
    let shape = match cx {
        Some(c) => c.shape.clone(),
        None => shape_for(f, m.opts),
    };
    let grid = cx.is_none().then(|| grid_for(f.func, m.opts)).flatten();
    let call = |c: &CallFact<'_>| Call {
        callee: c.callee.to_string(),
        args: c.args.clone(),
        place: m.srcmap.place(f, c.inst, m.is_local),
        inst: c.inst,
    };
    let facts = KernelFacts::compute_with(f, &d, m.sums, &shape, grid, &mut |cs| imports(&shape, &cs.iter().map(call).collect::<Vec<_>>()));
    let mut lcx = lints::LintCx::new(&facts, m.srcmap, m.is_local, m.opts.coalescing_threshold.unwrap_or(2.0));
    lcx.silent = &m.opts.silent;
    let findings = lints::run(&lcx);
    let kernel = cx.map_or_else(|| demangle(f.func.name), |c| c.kernel.to_string());
    let calls = facts.calls.iter().map(call).collect();
    let exports = facts
        .exports
        .iter()
        .map(|x| CalleeAccess {
            function: f.index,
            callee: readable(&demangle(f.func.name)),
            ptx_line: f.insts[x.access.inst].ast.pos.line,
            ptx_col: f.insts[x.access.inst].ast.pos.col,
            span: lcx.resolve(x.access.inst).primary,
            export: x.clone(),
        })
        .collect();
    let site = |i: ir::InstId| Site {
        kernel: kernel.clone(),
        function: f.index,
        inst: i.index(),
        ptx_line: f.insts[i].ast.pos.line,
        span: lcx.resolve(i).primary,
        via: lcx.call_site(i),
    };
    // the per-site records, unless only findings are asked for
    let Records { accesses, branches, races, barriers, groups, cas_seeds, unfenced } =
        if m.opts.findings_only { Records::default() } else { records(f, &d, &facts, &lcx, &shape, &kernel, &site) };
    let cov = &facts.coverage;
    let coverage = CoverageReport {
        kernel: demangle(f.func.name),
        function: f.index,
        entry: f.func.is_entry,
        instructions: f.insts.len(),
        block: shape.block,
        shape_source: shape.source.clone(),
        contexts: 0,
        context_analyses: 0,
        total: cov.total,
        predicted: cov.predicted,
        data_dependent: cov.data_dependent,
        other_space: cov.other_space,
        assumed_global: cov.assumed_global.iter().map(|&i| site(i)).collect(),
        skipped: cov.skipped.iter().map(|&(i, skip)| SkippedSite { site: site(i), skip }).collect(),
    };
    FunctionReport { findings, accesses, branches, races, barriers, groups, coverage, calls, exports, shape, cas_seeds, unfenced }
}

/// A function's per-site records (`confirm`, the HTML report and
/// `--all-accesses` read them; `Options::findings_only` leaves them out).
#[derive(Default)]
struct Records {
    accesses: Vec<AccessReport>,
    branches: Vec<BranchReport>,
    races: Vec<RaceReport>,
    barriers: Vec<BarrierReport>,
    groups: Vec<GroupReport>,
    cas_seeds: Vec<(SiteKey, SiteKey)>,
    unfenced: Vec<crate::report::UnfencedReport>,
}

/// Function `f`'s records from its facts; `site`: an instruction's place.
fn records(
    f: &FunctionIr<'_>,
    d: &divergence::Divergence,
    facts: &KernelFacts<'_, '_>,
    lcx: &lints::LintCx<'_, '_, '_>,
    shape: &Shape,
    kernel: &str,
    site: &dyn Fn(ir::InstId) -> Site,
) -> Records {
    let accesses = facts
        .accesses
        .iter()
        .map(|x| {
            let (a, p) = (&x.access, &x.prediction);
            let global = a.space == ir::inst::Space::Global;
            AccessReport {
                site: site(a.inst),
                space: a.space,
                kind: a.kind,
                width: a.width,
                sectors: p.as_ref().filter(|_| global).map(|p| (p.sectors.0, p.sectors.1, p.ideal)),
                misaligned: p.as_ref().filter(|_| global).and_then(|p| p.misaligned).map(|m| m.sectors),
                sectors_at_stride_one: p.as_ref().and_then(|p| p.runtime_stride).map(|r| r.sectors_at_one),
                assumed_stride: p.as_ref().is_some_and(|p| global && !p.assumed_strides.is_empty()),
                conflict: p.as_ref().filter(|_| !global).map(|p| p.conflict),
                requests: p.as_ref().map(|p| p.requests).unwrap_or(0),
                unpredictable: p.is_none(),
                impact: facts.impact(x).map(|(l, h)| (l as f32, h as f32)),
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
                Some(x) => branch_prediction(f, &x.split),
            };
            let idle_share = facts.idle_share_of_block(b).filter(|_| !matches!(prediction, BranchPrediction::Uniform));
            Some(BranchReport { site: site(i), warps: shape.warps(), prediction, idle_share })
        })
        .collect();
    let races = facts
        .races
        .iter()
        .map(|r| {
            // a callee's access is named in its own function
            let ((first_function, first), (second_function, second)) = (lcx.race_key(r.first), lcx.race_key(r.second));
            RaceReport {
                kernel: kernel.to_string(),
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
                condition: race_condition(f, &r.when),
            }
        })
        .chain(facts.grid_races.iter().map(|r| RaceReport {
            kernel: kernel.to_string(),
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
            condition: race_condition(f, &r.when),
        }))
        .collect();
    let barriers = facts
        .barriers
        .iter()
        .map(|b| BarrierReport {
            site: site(b.inst),
            divergent: b.divergence.is_some(),
            condition: b.witness.as_ref().and_then(|w| {
                let needs = match w.when {
                    crate::facts::witness::BarrierWhen::Range { lo, hi } => Needs::Range { lo: Some(lo), hi: Some(hi), exact: true },
                    crate::facts::witness::BarrierWhen::NotMultiple { period, below } => Needs::NotMultiple { period, below },
                };
                condition(f, &w.param, needs)
            }),
        })
        .collect();
    let groups = facts
        .groups
        .iter()
        .map(|g| GroupReport {
            kernel: kernel.to_string(),
            function: f.index,
            members: g.members.iter().map(|&k| facts.accesses[k].access.inst.index()).collect(),
            loads: g.kind == ir::inst::AccessKind::Load,
            sectors: g.sectors,
            later: g.later,
            ideal: g.ideal,
            bytes_used: g.bytes_used,
        })
        .collect();
    let key = |k: usize| SiteKey { func: f.index, inst: facts.accesses[k].access.inst.index() };
    let cas_seeds = facts.cas_seeds.iter().map(|&(l, c)| (key(l), key(c))).collect();
    let unfenced = facts
        .unfenced
        .iter()
        .map(|u| crate::report::UnfencedReport { ticket: key(u.atomic), published: key(u.published), elected: key(u.elected) })
        .collect();
    Records { accesses, branches, races, barriers, groups, cas_seeds, unfenced }
}

/// The condition on parameter `label` (as messages name it) a finding states.
fn condition(f: &FunctionIr<'_>, label: &str, needs: Needs) -> Option<Box<Condition>> {
    let k = f.param_of_label(label)? as usize;
    let ty = ir::inst::Ty::of_decl(f.func.params[k].ty)?;
    Some(Box::new(Condition { param: k, name: label.to_string(), needs, bits: ty.bits(), signed: ty.signed() }))
}

/// The condition a race's witness states (a relation between two
/// parameters is not one `confirm` judges).
fn race_condition(f: &FunctionIr<'_>, when: &Option<crate::races::param::ParamCondition>) -> Option<Box<Condition>> {
    use crate::races::param::ParamCondition;
    match when.as_ref()? {
        ParamCondition::Values { param, lo, hi, contiguous, .. } => {
            condition(f, param, Needs::Range { lo: Some(*lo), hi: Some(*hi), exact: *contiguous })
        }
        ParamCondition::Bound { param, lo, hi, .. } => condition(f, param, Needs::Range { lo: *lo, hi: *hi, exact: true }),
        ParamCondition::Relation { .. } => None,
    }
}

/// A branch's split count as the report gives it.
fn branch_prediction(f: &FunctionIr<'_>, split: &divergence::split::Split) -> BranchPrediction {
    use divergence::split::{describe_value, Split};
    match split {
        Split::Exact { split, witness, .. } if witness.is_empty() => BranchPrediction::Splits(*split),
        Split::Exact { split, witness, .. } => {
            BranchPrediction::Sampled { warps: *split, values: witness.iter().map(|(v, x)| (describe_value(f, *v), *x)).collect() }
        }
        Split::Bounded { split, .. } => BranchPrediction::AtMost(*split),
        Split::TripCount => BranchPrediction::TripCount,
        Split::Unknown { .. } => BranchPrediction::Unknown,
    }
}
