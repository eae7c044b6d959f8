//! Device functions analysed in their call contexts: each direct call a
//! kernel makes (and, level by level, each call those callees make) gives
//! the callee its caller's arguments (abstract value, and per-thread
//! values where the caller can evaluate them), the calling threads and the
//! kernel's block shape; the callee is checked once per distinct context
//! (memoised on arguments, threads and shape, across kernels: a helper
//! called from fifty places with the same kind of arguments is analysed
//! once), and its findings carry `in this call from …` notes.
//!
//! A kernel's callees are analysed while the kernel's facts are computed
//! (`KernelFacts::compute_with` asks for their accesses once it knows the
//! calls), so that the kernel's race check pairs its own accesses with its
//! direct callees' exports: each kernel is analysed once.
//!
//! Owns: the contexts, their order (kernels first, at most [`MAX_DEPTH`]
//! calls deep, at most a budget of distinct analyses per kernel), and
//! merging a function's context reports into one. Recursive calls,
//! indirect calls and calls past the depth or budget leave the callee
//! analysed once for every caller (its `CoverageReport::contexts` is 0).
//! Callees deeper than a kernel's direct calls are not paired with their
//! callers' accesses.

use super::{check_function, Call, FunctionReport, ModuleInput};
use crate::divergence::CallArgs;
use crate::facts::Imports;
use crate::lints::{self, Finding, Place};
use crate::model::Shape;
use crate::names::{demangle, readable};
use rustc_hash::{FxHashMap, FxHashSet};
use std::sync::{Arc, Mutex};

/// Calls followed from a kernel down to the deepest callee analysed in context.
pub const MAX_DEPTH: usize = 6;

/// One call context of a device function.
#[derive(Clone, Debug)]
pub(crate) struct Context {
    /// The kernel the calls start from (shared by its findings).
    pub kernel: std::sync::Arc<str>,
    pub shape: Shape,
    pub args: CallArgs,
    /// The calls from the kernel down to this one: (caller, call site).
    pub chain: Vec<(String, Place)>,
}

/// What makes two contexts one analysis: the callee, the block shape, the
/// arguments and calling threads.
type Key = (usize, [u32; 3], CallArgs);

/// One call of a device function in a kernel's call tree: the analysis it
/// takes, and the context.
pub(crate) type Use = (Key, Context);

/// The module's direct call graph: the callees (indices in the module) of each function with a body.
fn callees(bodies: &[crate::ir::Body<'_>]) -> FxHashMap<usize, Vec<usize>> {
    let index: FxHashMap<&str, usize> = bodies.iter().map(|b| (b.func.name, b.index)).collect();
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
fn reachable(graph: &FxHashMap<usize, Vec<usize>>, from: impl IntoIterator<Item = usize>) -> FxHashSet<usize> {
    let mut seen = FxHashSet::default();
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
    pub called: FxHashSet<usize>,
    pub recursive: FxHashSet<usize>,
}

impl CallGraph {
    pub fn new(bodies: &[crate::ir::Body<'_>]) -> CallGraph {
        let graph = callees(bodies);
        let called = reachable(&graph, bodies.iter().filter(|b| b.func.is_entry).map(|b| b.index));
        let recursive = called.iter().copied().filter(|&f| reachable(&graph, [f]).contains(&f)).collect();
        CallGraph { called, recursive }
    }
}

/// The context analyses of one module, shared by its kernels' tasks.
pub(crate) struct Contexts<'m, 'a> {
    input: ModuleInput<'m, 'a>,
    /// The device functions analysed in context (not recursive), by name.
    index: FxHashMap<&'a str, usize>,
    /// Distinct analyses one kernel's call tree may take.
    budget: usize,
    /// Each distinct analysis, before its contexts' notes.
    memo: Mutex<FxHashMap<Key, Arc<FunctionReport>>>,
}

impl<'m, 'a> Contexts<'m, 'a> {
    pub fn new(input: ModuleInput<'m, 'a>, graph: &CallGraph) -> Self {
        let module = input.module;
        let index = module
            .functions
            .iter()
            .enumerate()
            .filter(|(i, f)| f.body.is_some() && !f.is_entry && !graph.recursive.contains(i))
            .map(|(i, f)| (f.name, i))
            .collect();
        let budget = 64usize.max(4 * module.functions.len());
        Contexts { input, index, budget, memo: Mutex::new(FxHashMap::default()) }
    }

    /// Analyse function `i` for every caller (a kernel: for its launch, its
    /// callees in the contexts it gives them first); returns its report
    /// and the contexts its calls took, in the order found (breadth first).
    pub fn analyse_root(&self, i: usize) -> (FunctionReport, Vec<Use>) {
        let m = &self.input;
        let mut f = crate::ir::lower_one(m.module, i, m.mcx);
        f.size_dynamic_shared(m.opts.shared_for(f.func));
        if let Some(ps) = m.opts.source_params(f.func) {
            f.source_params = ps.clone();
        }
        let mut uses = Vec::new();
        let kernel = demangle(f.func.name);
        let entry = f.func.is_entry;
        let r = check_function(&f, m, None, &mut |shape, calls| {
            if entry {
                self.call_tree(&kernel, shape, calls, &mut uses)
            } else {
                Imports::default()
            }
        });
        // a kernel whose witnesses the replay runs takes it as lowered here (where the launch's
        // dynamic shared memory did not size its arrays: the replay's own lowering does not)
        if entry && m.opts.replay && m.opts.shared_for(f.func).is_none() && r.findings.iter().any(|fd| fd.witness.is_some()) {
            m.mcx.keep(f);
        }
        (r, uses)
    }

    /// The call tree of a kernel (`calls`: its direct calls), level by
    /// level: each context analysed (or found analysed), its own calls the
    /// next level. Returns the accesses the direct callees export, by call.
    fn call_tree(&self, kernel: &str, shape: &Shape, calls: &[Call], uses: &mut Vec<Use>) -> Imports {
        let mut imports = Imports::default();
        let mut pending: Vec<(usize, Context, Option<crate::ir::InstId>)> = calls
            .iter()
            .filter_map(|c| {
                let ci = *self.index.get(c.callee.as_str())?;
                let chain = vec![(readable(kernel), c.place.clone())];
                Some((ci, Context { kernel: kernel.into(), shape: shape.clone(), args: c.args.clone(), chain }, Some(c.inst)))
            })
            .collect();
        let mut taken: FxHashSet<Key> = FxHashSet::default();
        for _ in 0..MAX_DEPTH {
            if pending.is_empty() {
                break;
            }
            // the distinct analyses of this level, within the kernel's budget
            let mut level: Vec<Key> = Vec::new();
            for (ci, c, _) in &pending {
                let key = (*ci, c.shape.block, c.args.clone());
                if !taken.contains(&key) && taken.len() < self.budget {
                    taken.insert(key.clone());
                    level.push(key);
                }
            }
            let missing: Vec<(Key, Context)> = level
                .iter()
                .filter(|k| !self.memo.lock().unwrap().contains_key(*k))
                .map(|k| {
                    (k.clone(), pending.iter().find(|(ci, c, _)| (*ci, c.shape.block, &c.args) == (k.0, k.1, &k.2)).unwrap().1.clone())
                })
                .collect();
            let done: Vec<(Key, FunctionReport)> = crate::par::map_owned(missing, |(k, c)| (k.clone(), self.analyse(k.0, &c)));
            {
                let mut memo = self.memo.lock().unwrap();
                for (k, r) in done {
                    memo.entry(k).or_insert_with(|| Arc::new(r));
                }
            }
            let mut next = Vec::new();
            for (ci, c, call) in pending.drain(..) {
                let key = (ci, c.shape.block, c.args.clone());
                if !taken.contains(&key) {
                    continue;
                }
                let Some(r) = self.memo.lock().unwrap().get(&key).cloned() else { continue };
                let name = readable(&demangle(self.input.module.functions[ci].name));
                for x in &r.calls {
                    let Some(&next_ci) = self.index.get(x.callee.as_str()) else { continue };
                    let mut chain = c.chain.clone();
                    chain.push((name.clone(), x.place.clone()));
                    next.push((next_ci, Context { kernel: c.kernel.clone(), shape: c.shape.clone(), args: x.args.clone(), chain }, None));
                }
                if let Some(call) = call {
                    imports.entry(call).or_default().extend(r.exports.iter().cloned());
                }
                uses.push((key, c));
            }
            pending = next;
        }
        imports
    }

    /// Device function `ci` in context `c`: lowered for the spaces its
    /// pointer arguments have, checked with its parameters bound (its own
    /// callees are analysed from its calls, by the kernel's tree).
    fn analyse(&self, ci: usize, c: &Context) -> FunctionReport {
        let m = &self.input;
        let spaces = crate::ir::space::ParamSpaces::of_call(ci, c.args.params.iter().map(|a| a.as_ref().map(|a| a.space)));
        let mut f = crate::ir::lower_for_call(m.module, ci, m.mcx, &spaces);
        f.size_dynamic_shared(m.opts.shared_for(f.func));
        check_function(&f, m, Some(c), &mut |_, _| Imports::default())
    }

    /// Every function's context reports as one (by function index), each
    /// analysis with the notes of the contexts that took it (`uses`, in
    /// the kernels' order); and how many distinct analyses ran.
    pub fn finish(&self, uses: Vec<Use>) -> (FxHashMap<usize, FunctionReport>, usize) {
        let memo = self.memo.lock().unwrap();
        let mut order: Vec<Key> = Vec::new();
        let mut by_key: FxHashMap<Key, Vec<Context>> = FxHashMap::default();
        for (k, c) in uses {
            let cs = by_key.entry(k.clone()).or_default();
            if cs.is_empty() {
                order.push(k);
            }
            cs.push(c);
        }
        let mut per_fn: FxHashMap<usize, Vec<FunctionReport>> = FxHashMap::default();
        for k in order {
            let (Some(r), Some(cs)) = (memo.get(&k), by_key.get(&k)) else { continue };
            per_fn.entry(k.0).or_default().push(with_contexts(r, cs));
        }
        let out = per_fn.into_iter().map(|(f, rs)| (f, merge(&rs))).collect();
        (out, memo.len())
    }
}

/// An analysis' report as the contexts `cs` that took it see it: the first
/// context's kernel and shape, the findings noting the calls, every
/// prediction once for each kernel.
fn with_contexts(r: &FunctionReport, cs: &[Context]) -> FunctionReport {
    let mut r = r.clone();
    let first = &cs[0];
    r.shape = first.shape.clone();
    r.coverage.shape_source = first.shape.source.clone();
    r.coverage.contexts = cs.len();
    r.coverage.context_analyses = 1;
    for x in r.findings.iter_mut() {
        note_contexts(x, cs);
    }
    let kernel = first.kernel.to_string();
    for a in r.accesses.iter_mut() {
        a.site.kernel = kernel.clone();
    }
    for b in r.branches.iter_mut() {
        b.site.kernel = kernel.clone();
    }
    for b in r.barriers.iter_mut() {
        b.site.kernel = kernel.clone();
    }
    for x in r.races.iter_mut() {
        x.kernel = kernel.clone();
    }
    for g in r.groups.iter_mut() {
        g.kernel = kernel.clone();
    }
    for s in r.coverage.skipped.iter_mut() {
        s.site.kernel = kernel.clone();
    }
    for s in r.coverage.assumed_global.iter_mut() {
        s.kernel = kernel.clone();
    }
    // the same prediction for every kernel of the group
    let mut kernels: Vec<&str> = cs.iter().map(|c| &*c.kernel).collect();
    kernels.dedup();
    for k in kernels.iter().skip(1) {
        let with = |s: &crate::report::Site| crate::report::Site { kernel: k.to_string(), ..s.clone() };
        let (a, b, x, races) = (r.accesses.clone(), r.branches.clone(), r.barriers.clone(), r.races.clone());
        r.accesses.extend(a.iter().map(|a| crate::report::AccessReport { site: with(&a.site), ..a.clone() }));
        r.branches.extend(b.iter().map(|b| crate::report::BranchReport { site: with(&b.site), ..b.clone() }));
        r.barriers.extend(x.iter().map(|b| crate::report::BarrierReport { site: with(&b.site), ..b.clone() }));
        r.races.extend(races.iter().map(|x| crate::report::RaceReport { kernel: k.to_string(), ..x.clone() }));
    }
    r
}

/// A function's reports from its contexts as one: findings that are the
/// same in several contexts once (with each context's note), every
/// prediction, the coverage of the context that predicted most.
fn merge(rs: &[FunctionReport]) -> FunctionReport {
    let first = &rs[0];
    let mut findings: Vec<Finding> = Vec::new();
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
        let mut seen = rustc_hash::FxHashSet::default();
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
        cas_seeds: dedup(rs.iter().flat_map(|r| r.cas_seeds.iter().cloned())),
        unfenced: dedup(rs.iter().flat_map(|r| r.unfenced.iter().cloned())),
    }
}

/// Name the calls a finding in a device function was found in.
fn note_contexts(f: &mut Finding, cxs: &[Context]) {
    const SHOWN: usize = 3;
    for c in cxs.iter().take(SHOWN) {
        let Some((caller, at)) = c.chain.last() else { continue };
        let after = if c.chain.len() > 1 { format!(" (called from kernel `{}`)", c.kernel) } else { String::new() };
        f.note_text(lints::Text::at(format!("in this call from `{caller}` at "), at.clone(), after));
    }
    if cxs.len() > SHOWN {
        f.note(format!("and in {} more calls with the same arguments", cxs.len() - SHOWN));
    }
    if let Some(c) = cxs.first() {
        f.kernel = c.kernel.clone();
        // the block shape is the kernel's
        for n in f.notes.iter_mut() {
            if let lints::Text::Shape(s) = &mut n.text {
                let s = std::sync::Arc::make_mut(s);
                s.kernel = c.kernel.clone();
                s.source = c.shape.source.clone();
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
    fn like_calls_share_one_analysis_and_recursion_has_none() {
        let r = check(PTX, &Options { block: Some([256, 1, 1]), ..Default::default() }, &|_| true).unwrap();
        let cov = |name: &str| r.coverage.iter().find(|c| c.kernel == name).unwrap();
        assert_eq!((cov("load").contexts, cov("load").context_analyses), (4, 2));
        assert_eq!((cov("rec").contexts, cov("rec").context_analyses), (0, 0));
        // the kernel and the recursive helper once each, the helper's two contexts once each
        assert_eq!(r.analyses, 4);
        // the three like calls: one finding in the helper, naming the kernel's calls
        let found: Vec<_> = r.findings.iter().filter(|f| f.lint.name == "uncoalesced_global_access" && f.ptx_line == 11).collect();
        assert_eq!(found.len(), 1, "{found:#?}");
        assert_eq!(&*found[0].kernel, "k");
        let calls = found[0]
            .notes
            .iter()
            .filter(|n| matches!(&n.text, crate::Text::At(x) if x.before.starts_with("in this call from `k`")))
            .count();
        assert_eq!(calls, 3, "{:#?}", found[0].notes);
        // the helper's load is predicted in both contexts: 32 sectors with the thread index, 1 with 7
        let sectors: Vec<u32> = r.accesses.iter().filter(|a| a.site.ptx_line == 11).filter_map(|a| a.sectors.map(|s| s.0)).collect();
        assert_eq!(sectors, vec![32, 1]);
        // the recursive helper's argument-computed store is not analysed, and said so
        assert_eq!(cov("rec").skipped.iter().map(|s| s.skip.key()).collect::<Vec<_>>(), vec!["from_arguments"]);
    }
}
