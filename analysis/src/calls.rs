//! Device functions analysed in their call contexts: each direct call a
//! kernel makes (and, level by level, each call those callees make) gives
//! the callee its caller's arguments (abstract value, and per-thread
//! values where the caller can evaluate them), the calling threads and the
//! kernel's block shape; the callee is checked once per distinct context
//! (memoised on arguments, threads and shape: a helper called from fifty
//! places with the same kind of arguments is analysed once), and its
//! findings carry `in this call from …` notes.
//!
//! Owns: the contexts, their order (kernels first, at most [`MAX_DEPTH`]
//! calls deep, at most a budget of analyses per module), and merging a
//! function's context reports into one. Recursive calls, indirect calls
//! and calls past the depth or budget leave the callee analysed once for
//! every caller (its `CoverageReport::contexts` is 0). Does not own: the
//! analysis of one function (`check_function`: in a call context it also
//! pairs the callee's own accesses between the calling threads, and
//! exports them for the caller), or the races across a kernel's direct
//! calls (`check_module` checks the kernel again with its callees' exports;
//! callees deeper down are not paired with their callers).

use crate::{check_function, demangle, divergence, ir, lints, srcmap, FunctionReport, IsLocal, Options, Place, Shape};
use rayon::prelude::*;
use std::collections::{HashMap, HashSet};

/// Calls followed from a kernel down to the deepest callee analysed in context.
pub const MAX_DEPTH: usize = 6;

/// One call context of a device function.
#[derive(Clone, Debug)]
pub(crate) struct Context {
    /// The kernel the calls start from.
    pub kernel: String,
    pub shape: Shape,
    pub args: divergence::CallArgs,
    /// The calls from the kernel down to this one: (caller, call site).
    pub chain: Vec<(String, Place)>,
    /// The kernel (index in the module) and, for a call the kernel makes
    /// itself, the call instruction (its accesses join the kernel's race check).
    pub kernel_fn: usize,
    pub call: Option<ir::InstId>,
}

/// The accesses of the device functions each kernel calls directly (by
/// kernel index), for the kernel's race check.
pub(crate) type KernelImports = HashMap<usize, crate::facts::Imports>;

/// A function's name as its author wrote it, for notes: Rust names are
/// demangled already; C++ (Itanium) names are demangled here.
pub(crate) fn readable(name: &str) -> String {
    let cpp = || cpp_demangle::Symbol::new(name).ok()?.demangle(&cpp_demangle::DemangleOptions::default()).ok();
    match name.starts_with("_Z").then(cpp).flatten() {
        Some(d) => d,
        None => name.to_string(),
    }
}

/// The module's direct call graph: the callees (indices in the module) of each function with a body.
fn callees(bodies: &[ir::Body<'_>]) -> HashMap<usize, Vec<usize>> {
    let index: HashMap<&str, usize> = bodies.iter().map(|b| (b.func.name, b.index)).collect();
    bodies
        .iter()
        .map(|b| {
            let mut cs: Vec<usize> = b.insts.iter().filter_map(|i| i.call_target().and_then(|t| index.get(t)).copied()).collect();
            cs.sort_unstable();
            cs.dedup();
            (b.index, cs)
        })
        .collect()
}

/// The functions reachable from `from` through direct calls (not `from` itself unless it is called).
fn reachable(graph: &HashMap<usize, Vec<usize>>, from: impl IntoIterator<Item = usize>) -> HashSet<usize> {
    let mut seen = HashSet::new();
    let mut stack: Vec<usize> = from.into_iter().collect();
    while let Some(k) = stack.pop() {
        for &c in graph.get(&k).into_iter().flatten() {
            if seen.insert(c) {
                stack.push(c);
            }
        }
    }
    seen
}

/// What the call graph says about each function: those a kernel reaches
/// through direct calls, and those on a cycle (recursive).
pub(crate) struct CallGraph {
    pub called: HashSet<usize>,
    pub recursive: HashSet<usize>,
}

impl CallGraph {
    pub fn new(bodies: &[ir::Body<'_>]) -> CallGraph {
        let graph = callees(bodies);
        let called = reachable(&graph, bodies.iter().filter(|b| b.func.is_entry).map(|b| b.index));
        let recursive = called.iter().copied().filter(|&f| reachable(&graph, [f]).contains(&f)).collect();
        CallGraph { called, recursive }
    }
}

/// What checking a module's functions needs.
#[derive(Clone, Copy)]
pub(crate) struct ModuleInput<'m, 'a> {
    pub module: &'a crate::ptx::Module<'a>,
    pub mcx: &'m ir::ModuleCx<'a>,
    pub sums: &'m divergence::Summaries<'a>,
    pub srcmap: &'m srcmap::SourceMap<'a>,
    pub opts: &'m Options,
    pub is_local: &'m IsLocal<'m>,
}

/// A callee lowered for the spaces its pointer parameters get.
type Lowering = (usize, Vec<Option<ir::space::Fact>>);

/// One callee's reports, each with the contexts it was analysed for.
type Analysed = Vec<(FunctionReport, Vec<Context>)>;

/// Analyse the module's device functions in the contexts its kernels
/// (`first`: the reports of the functions analysed once, kernels among
/// them) call them in.
/// Returns, per function index, one report per distinct context, and the
/// accesses of each kernel's direct callees in their contexts.
pub(crate) fn analyse(
    m: &ModuleInput<'_, '_>,
    first: &[FunctionReport],
    graph: &CallGraph,
) -> (HashMap<usize, Vec<FunctionReport>>, KernelImports) {
    let ModuleInput { module, mcx, sums, srcmap, opts, is_local } = *m;
    // recursive functions are analysed once for every caller
    let index: HashMap<&str, usize> = module
        .functions
        .iter()
        .enumerate()
        .filter(|(i, f)| f.body.is_some() && !f.is_entry && !graph.recursive.contains(i))
        .map(|(i, f)| (f.name, i))
        .collect();
    let budget = 64usize.max(4 * module.functions.len());
    let mut pending: Vec<(usize, Context)> = Vec::new();
    for r in first.iter().filter(|r| r.coverage.entry) {
        for (callee, args, at, inst) in &r.calls {
            if let Some(&ci) = index.get(callee.as_str()) {
                let kernel = r.coverage.kernel.clone();
                let chain = vec![(readable(&kernel), at.clone())];
                let kernel_fn = r.coverage.function;
                pending.push((ci, Context { kernel, shape: r.shape.clone(), args: args.clone(), chain, kernel_fn, call: Some(*inst) }));
            }
        }
    }
    let mut out: HashMap<usize, Vec<FunctionReport>> = HashMap::new();
    let mut imports = KernelImports::new();
    let mut done = 0;
    for _ in 0..MAX_DEPTH {
        if pending.is_empty() || done >= budget {
            break;
        }
        // contexts with the same arguments, threads and shape are one analysis
        let mut groups: Vec<(usize, Vec<Context>)> = Vec::new();
        let mut at: HashMap<(usize, [u32; 3], divergence::CallArgs), usize> = HashMap::new();
        for (ci, c) in pending.drain(..) {
            let key = (ci, c.shape.block, c.args.clone());
            match at.get(&key) {
                Some(&g) => groups[g].1.push(c),
                None => {
                    at.insert(key, groups.len());
                    groups.push((ci, vec![c]));
                }
            }
        }
        groups.truncate(budget - done);
        done += groups.len();
        // one lowering per callee and the spaces its pointers get
        let mut by_callee: Vec<(Lowering, Vec<Vec<Context>>)> = Vec::new();
        let mut slot: HashMap<Lowering, usize> = HashMap::new();
        for (ci, g) in groups {
            let key = (ci, g[0].args.params.iter().map(|a| a.as_ref().map(|a| a.space)).collect::<Vec<_>>());
            match slot.get(&key) {
                Some(&k) => by_callee[k].1.push(g),
                None => {
                    slot.insert(key.clone(), by_callee.len());
                    by_callee.push((key, vec![g]));
                }
            }
        }
        let results: Vec<(usize, Analysed)> = by_callee
            .into_par_iter()
            .map(|((ci, spaces), gs)| {
                let f = ir::lower_for_call(module, ci, mcx, &ir::space::ParamSpaces::of_call(ci, spaces));
                let none = crate::facts::Imports::new();
                let rs = gs.into_iter().map(|g| (check_function(&f, sums, srcmap, opts, is_local, &g, &none), g)).collect();
                (ci, rs)
            })
            .collect();
        for (ci, rs) in results {
            let name = readable(&demangle(module.functions[ci].name));
            for (mut r, g) in rs {
                for (callee, args, place, _) in &r.calls {
                    let Some(&next) = index.get(callee.as_str()) else { continue };
                    for c in &g {
                        let mut chain = c.chain.clone();
                        chain.push((name.clone(), place.clone()));
                        let (kernel, shape, kernel_fn) = (c.kernel.clone(), c.shape.clone(), c.kernel_fn);
                        pending.push((next, Context { kernel, shape, args: args.clone(), chain, kernel_fn, call: None }));
                    }
                }
                if !r.exports.is_empty() {
                    for c in &g {
                        if let Some(call) = c.call {
                            imports.entry(c.kernel_fn).or_default().entry(call).or_default().extend(r.exports.iter().cloned());
                        }
                    }
                }
                // the same prediction for every kernel of the group
                let mut kernels: Vec<&str> = g.iter().map(|c| c.kernel.as_str()).collect();
                kernels.dedup();
                for k in kernels.iter().skip(1) {
                    let with = |s: &crate::Site| crate::Site { kernel: k.to_string(), ..s.clone() };
                    let (a, b, x, races) = (r.accesses.clone(), r.branches.clone(), r.barriers.clone(), r.races.clone());
                    r.accesses.extend(a.iter().map(|a| crate::AccessReport { site: with(&a.site), ..a.clone() }));
                    r.branches.extend(b.iter().map(|b| crate::BranchReport { site: with(&b.site), ..b.clone() }));
                    r.barriers.extend(x.iter().map(|b| crate::BarrierReport { site: with(&b.site), ..b.clone() }));
                    r.races.extend(races.iter().map(|x| crate::RaceReport { kernel: k.to_string(), ..x.clone() }));
                }
                out.entry(ci).or_default().push(r);
            }
        }
    }
    (out, imports)
}

/// A function's reports from its contexts as one: findings that are the
/// same in several contexts once (with each context's note), every
/// prediction, the coverage of the context that predicted most.
pub(crate) fn merge(rs: &[FunctionReport]) -> FunctionReport {
    let first = &rs[0];
    let mut findings: Vec<lints::Finding> = Vec::new();
    for f in rs.iter().flat_map(|r| &r.findings) {
        match findings.iter_mut().find(|x| x.lint.name == f.lint.name && x.ptx_line == f.ptx_line && x.message == f.message) {
            Some(x) => {
                for n in &f.notes {
                    if !x.notes.contains(n) {
                        x.notes.push(n.clone());
                    }
                }
            }
            None => findings.push(f.clone()),
        }
    }
    let mut coverage = rs.iter().map(|r| &r.coverage).max_by_key(|c| (c.predicted, std::cmp::Reverse(c.skipped.len()))).unwrap().clone();
    coverage.contexts = rs.iter().map(|r| r.coverage.contexts).sum();
    coverage.context_analyses = rs.len();
    fn dedup<T: std::fmt::Debug + Clone>(xs: impl Iterator<Item = T>) -> Vec<T> {
        let mut seen = std::collections::HashSet::new();
        xs.filter(|x| seen.insert(format!("{x:?}"))).collect()
    }
    FunctionReport {
        findings,
        accesses: dedup(rs.iter().flat_map(|r| r.accesses.iter().cloned())),
        branches: dedup(rs.iter().flat_map(|r| r.branches.iter().cloned())),
        races: dedup(rs.iter().flat_map(|r| r.races.iter().cloned())),
        barriers: dedup(rs.iter().flat_map(|r| r.barriers.iter().cloned())),
        groups: dedup(rs.iter().flat_map(|r| r.groups.iter().cloned())),
        coverage,
        calls: vec![],
        exports: vec![],
        shape: first.shape.clone(),
    }
}

/// Name the calls a finding in a device function was found in.
pub(crate) fn note_contexts(f: &mut lints::Finding, cxs: &[Context]) {
    const SHOWN: usize = 3;
    for c in cxs.iter().take(SHOWN) {
        let Some((caller, at)) = c.chain.last() else { continue };
        let after = if c.chain.len() > 1 { format!(" (called from kernel `{}`)", c.kernel) } else { String::new() };
        f.note_text(lints::Text::At { before: format!("in this call from `{caller}` at "), at: at.clone(), after });
    }
    if cxs.len() > SHOWN {
        f.note(format!("and in {} more calls with the same arguments", cxs.len() - SHOWN));
    }
    if let Some(c) = cxs.first() {
        f.kernel = c.kernel.clone();
        // the block shape is the kernel's
        for n in f.notes.iter_mut() {
            if let lints::Text::Shape { kernel, .. } = &mut n.text {
                *kernel = c.kernel.clone();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::{check, Options};

    /// A helper called three times with the thread index and once with a
    /// constant, and a recursive one: the three like calls are one analysis
    /// (one finding naming the calls), the constant call another (uniform:
    /// no finding), the recursive helper is analysed once for every caller.
    const PTX: &str = r#".version 7.0
.target sm_80
.address_size 64
.func (.param .b32 ret) load(.param .b64 load_p, .param .b32 load_i)
{
  .reg .b64 %rd<4>; .reg .b32 %r<3>; .reg .f32 %f<2>;
  ld.param.u64 %rd1, [load_p];
  ld.param.u32 %r1, [load_i];
  mul.wide.u32 %rd2, %r1, 128;
  add.s64 %rd3, %rd1, %rd2;
  ld.global.f32 %f1, [%rd3];
  mov.b32 %r2, %f1;
  st.param.b32 [ret], %r2;
  ret;
}
.func rec(.param .b64 rec_p, .param .b32 rec_i)
{
  .reg .b64 %rd<4>; .reg .b32 %r<3>;
  ld.param.u64 %rd1, [rec_p];
  ld.param.u32 %r1, [rec_i];
  mul.wide.u32 %rd2, %r1, 128;
  add.s64 %rd3, %rd1, %rd2;
  st.global.u32 [%rd3], %r1;
  { .param .b64 param0; st.param.b64 [param0], %rd1; .param .b32 param1; st.param.b32 [param1], %r1;
    call.uni rec, (param0, param1); }
  ret;
}
.visible .entry k(.param .u64 k_a)
{
  .reg .b64 %rd<3>; .reg .b32 %r<6>;
  ld.param.u64 %rd1, [k_a];
  cvta.to.global.u64 %rd2, %rd1;
  mov.u32 %r1, %tid.x;
  { .param .b64 param0; st.param.b64 [param0], %rd2; .param .b32 param1; st.param.b32 [param1], %r1;
    .param .b32 retval0; call.uni (retval0), load, (param0, param1); ld.param.b32 %r2, [retval0]; }
  { .param .b64 param0; st.param.b64 [param0], %rd2; .param .b32 param1; st.param.b32 [param1], %r1;
    .param .b32 retval0; call.uni (retval0), load, (param0, param1); ld.param.b32 %r3, [retval0]; }
  { .param .b64 param0; st.param.b64 [param0], %rd2; .param .b32 param1; st.param.b32 [param1], %r1;
    .param .b32 retval0; call.uni (retval0), load, (param0, param1); ld.param.b32 %r4, [retval0]; }
  { .param .b64 param0; st.param.b64 [param0], %rd2; .param .b32 param1; st.param.b32 [param1], 7;
    .param .b32 retval0; call.uni (retval0), load, (param0, param1); ld.param.b32 %r5, [retval0]; }
  { .param .b64 param0; st.param.b64 [param0], %rd2; .param .b32 param1; st.param.b32 [param1], %r1;
    call.uni rec, (param0, param1); }
  ret;
}
"#;

    #[test]
    fn callers_are_named_as_written() {
        assert_eq!(super::readable("_Z5outerPKfj"), "outer(float const*, unsigned int)");
        assert_eq!(super::readable("two_levels"), "two_levels");
        assert_eq!(super::readable("_Zbogus"), "_Zbogus");
    }

    #[test]
    fn like_calls_share_one_analysis_and_recursion_has_none() {
        let r = check(PTX, &Options { block: Some([256, 1, 1]), ..Default::default() }, &|_| true).unwrap();
        let cov = |name: &str| r.coverage.iter().find(|c| c.kernel == name).unwrap();
        assert_eq!((cov("load").contexts, cov("load").context_analyses), (4, 2));
        assert_eq!((cov("rec").contexts, cov("rec").context_analyses), (0, 0));
        // the three like calls: one finding in the helper, naming the kernel's calls
        let found: Vec<_> = r.findings.iter().filter(|f| f.lint.name == "uncoalesced_global_access" && f.ptx_line == 11).collect();
        assert_eq!(found.len(), 1, "{found:#?}");
        assert_eq!(found[0].kernel, "k");
        let calls = found[0]
            .notes
            .iter()
            .filter(|n| matches!(&n.text, crate::Text::At { before, .. } if before.starts_with("in this call from `k`")))
            .count();
        assert_eq!(calls, 3, "{:#?}", found[0].notes);
        // the helper's load is predicted in both contexts: 32 sectors with the thread index, 1 with 7
        let sectors: Vec<u32> = r.accesses.iter().filter(|a| a.site.ptx_line == 11).filter_map(|a| a.sectors.map(|s| s.0)).collect();
        assert_eq!(sectors, vec![32, 1]);
        // the recursive helper's argument-computed store is not analysed, and said so
        assert_eq!(cov("rec").skipped.iter().map(|s| s.key).collect::<Vec<_>>(), vec!["from_arguments"]);
    }
}
