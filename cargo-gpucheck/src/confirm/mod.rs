//! `cargo gpucheck confirm`: run kernels with a launch specification and
//! generated inputs, and set what they did beside what the static analysis
//! predicted: per access site sectors per request (global) or conflict
//! degree (shared), per branch how often warps split, races seen.
//!
//! Owns: choosing the kernels and launches (the block shape as the
//! analysis takes it, `given_shape`), driving an engine (`cpu`: the
//! interpreter in `gpucheck_analysis::interp`, with `--max-steps`,
//! `--time-limit` and a progress line; `cuda`: a real GPU through
//! `cuda`), the verdicts and the exit status (0 all confirmed, 1 a mismatch
//! or an observed race, 2 could not run). Does not own: the analysis, the
//! interpreter, PTX instrumentation (`instrument`).

pub mod cuda;
pub mod instrument;
pub mod launch;
pub mod table;

use crate::build;
use crate::cli::{ConfirmArgs, Engine, MessageFormat};
use crate::diagnostic::PathStyle;
use anyhow::{bail, Context, Result};
use gpucheck_analysis::interp::{self, Global, Histogram, Launch, RaceSeen, SiteKey};
use gpucheck_analysis::{ptx, Options};
use std::collections::{BTreeMap, BTreeSet};

/// Observed numbers of one site or branch, from either engine.
#[derive(Debug, Clone, Default)]
pub struct SiteSeen {
    pub requests: u64,
    /// Most frequent value per request, the largest, the mean.
    pub mode: u32,
    pub max: u32,
    pub mean: f64,
}

impl From<&Histogram> for SiteSeen {
    fn from(h: &Histogram) -> SiteSeen {
        SiteSeen { requests: h.total(), mode: h.mode(), max: h.max(), mean: h.mean() }
    }
}

/// What one conditional branch did over a run.
#[derive(Debug, Clone, Default)]
pub struct BranchSeen {
    pub executions: u64,
    pub splits: u64,
    /// Over the blocks that executed it: how many warps split there.
    pub warps_split: SiteSeen,
    /// Lane-slots left idle while its sides ran.
    pub idle_lane_slots: u64,
}

/// What an engine reports for one kernel run, by instruction.
#[derive(Debug, Default)]
pub struct Seen {
    /// Memory sites: space as resolved at run time, and the per-request numbers.
    pub sites: BTreeMap<SiteKey, (&'static str, SiteSeen)>,
    /// Branches (the CPU engine only).
    pub branches: BTreeMap<SiteKey, BranchSeen>,
    /// Races (the CPU engine only).
    pub races: Vec<RaceSeen>,
    /// Barriers: how many threads of the block arrived (the CPU engine only).
    pub barriers: BTreeMap<SiteKey, interp::BarrierObs>,
    /// Access groups (index in the report's `groups`): sectors of the union
    /// per warp and loop iteration (the CPU engine only).
    pub groups: BTreeMap<usize, SiteSeen>,
    /// Shared accesses outside the array they are based on: the first
    /// thread seen there and its byte offset from the array's start (the
    /// CPU engine only).
    pub out_of_bounds: BTreeMap<SiteKey, interp::SafetyFault>,
    /// Shared loads of bytes no thread of the block had written: the first
    /// thread seen and its byte offset from the array's start (the CPU
    /// engine only).
    pub uninitialized: BTreeMap<SiteKey, interp::SafetyFault>,
    /// Whether the engine observes branches and races at all.
    pub control: bool,
    /// PTX line of each instruction the engine saw, by function.
    pub lines: BTreeMap<usize, Vec<u32>>,
    pub lane_insts: u64,
    /// Warp instructions executed (the CPU engine only; 0 otherwise).
    pub warp_insts: u64,
    pub seconds: f64,
    /// CUDA only: the uninstrumented kernel's time (CUDA events), milliseconds.
    pub kernel_ms: Option<f64>,
    /// CUDA only: the GPU stopped a run with a fault of the kernel's own.
    pub fault: Option<DeviceFault>,
}

/// A run the GPU stopped (an illegal or misaligned address, a trap): the
/// GPU does not say which access, so it is the kernel's, at function
/// `func`, with the driver's words for it.
#[derive(Debug, Clone)]
pub struct DeviceFault {
    pub func: usize,
    pub what: String,
}

impl Seen {
    fn line(&self, k: SiteKey) -> u32 {
        self.lines.get(&k.func).and_then(|l| l.get(k.inst)).copied().unwrap_or(0)
    }
}

/// One kernel run: its rows (predictions beside observations, verdicts).
pub struct KernelRun {
    /// Index of its unit in the units given to `collect`.
    pub unit: usize,
    pub kernel: String,
    pub rows: Vec<table::Row>,
}

pub fn run(a: &ConfirmArgs) -> Result<i32> {
    let (units, root) = units(a)?;
    let (runs, skipped) = collect(a, &units, root, true)?;
    if runs.is_empty() {
        if skipped > 0 {
            bail!("no kernel to run: {} skipped (see the warnings above)", skipped);
        }
        bail!(
            "no kernel to run: name kernels with --kernel NAME (with --grid/--block/--arg), or give them a launch in Cargo.toml:\n  [package.metadata.gpucheck.kernels.NAME]\n  grid = [x, y, z]\n  args = {{ x = \"f32[1048576]\", n = \"1048576\" }}"
        );
    }
    let bad = runs.iter().flat_map(|r| &r.rows).filter(|r| r.verdict.is_failure()).count();
    Ok(if bad > 0 { 1 } else { 0 })
}

/// The PTX units to run (built, or the `--ptx` files) and the folder paths are shown relative to.
pub fn units(a: &ConfirmArgs) -> Result<(Vec<build::Unit>, std::path::PathBuf)> {
    let plan = crate::input::plan(crate::input::Source::of(&a.build, &a.ptx))?;
    if let Some(n) = &plan.scope {
        eprintln!("note: {n}");
    }
    if let Some(e) = plan.errors.first() {
        bail!("{e}");
    }
    let root = plan.root.clone();
    let opts = build::BuildOpts { quiet: a.build.quiet, jobs: a.build.jobs, json: a.message_format == MessageFormat::Json };
    Ok((plan.units(opts)?, root))
}

/// Run the kernels of `units` that `a` selects (those with a launch
/// configuration by default); `print`: print each run's table (or JSON
/// records) and progress. Returns the runs and how many kernels were
/// skipped (with a warning each) because no launch could be made.
pub fn collect(a: &ConfirmArgs, units: &[build::Unit], root: std::path::PathBuf, print: bool) -> Result<(Vec<KernelRun>, usize)> {
    let paths = PathStyle { root };
    if a.message_format == MessageFormat::Sarif {
        bail!("confirm prints a table (`--message-format human`) or JSON records (`--message-format json`); SARIF is for findings");
    }
    let cli_spec = launch::Spec {
        grid: a.grid,
        block: a.block,
        args: a.args.iter().map(|s| launch::parse_arg(s).map_err(anyhow::Error::msg)).collect::<Result<_>>()?,
        shared: Default::default(),
        shared_bytes: a.shared,
    };
    let sources: Vec<String> = units
        .iter()
        .map(|u| std::fs::read_to_string(&u.ptx).with_context(|| format!("reading PTX `{}`", u.ptx.display())))
        .collect::<Result<_>>()?;
    let modules: Vec<ptx::Module<'_>> = sources
        .iter()
        .zip(units)
        .map(|(src, u)| gpucheck_analysis::driver::parse(src).map_err(|e| anyhow::anyhow!("{}:{e}", u.ptx.display())))
        .collect::<Result<_>>()?;
    let kernel_names = |m: &ptx::Module<'_>| -> Vec<String> {
        m.functions.iter().filter(|f| f.is_entry && f.body.is_some()).map(|f| f.name.to_string()).collect()
    };
    // a kernel is named as in the PTX, demangled, or as its source names it
    // (a C++ kernel's unqualified name: `warp_tail` for `_Z9warp_tailPKfPf`)
    let names_kernel = |k: &str, mangled: &str| gpucheck_analysis::names::aliases(mangled).iter().any(|n| n == k);
    // kernels named on the command line (`--kernel`, `--block NAME=…`) must exist
    let all_kernels: Vec<String> = modules.iter().flat_map(kernel_names).collect();
    for k in a.kernels.iter().chain(a.kernel_blocks.iter().map(|(k, _)| k)) {
        if !all_kernels.iter().any(|m| names_kernel(k, m)) {
            let names: Vec<String> = all_kernels.iter().map(|x| gpucheck_analysis::names::bare(x)).collect();
            let names: Vec<&str> = names.iter().map(String::as_str).collect();
            let hint = gpucheck_analysis::lints::registry::closest_among(k, names.iter().copied())
                .map(|c| format!("did you mean `{c}`? "))
                .unwrap_or_default();
            bail!("no kernel `{k}` in the PTX; {hint}kernels: {}", if names.is_empty() { "none".to_string() } else { names.join(", ") });
        }
    }
    // the kernels to run, per unit, each with its launch; a kernel whose launch cannot be made is skipped
    let mut plans = Vec::new();
    let mut skipped = 0;
    let parts: Vec<crate::config::UnitKernels> = units
        .iter()
        .zip(&modules)
        .map(|(u, module)| crate::config::UnitKernels {
            manifest: paths.display(&u.krate.manifest_path.to_string_lossy()),
            meta: u.krate.meta.as_ref(),
            names: kernel_names(module).iter().flat_map(|m| gpucheck_analysis::names::aliases(m)).collect(),
        })
        .collect();
    let unknown = crate::config::unknown_kernels_by_package(&parts);
    for (ui, ((u, module), src)) in units.iter().zip(&modules).zip(&sources).enumerate() {
        for w in u.krate.config_warnings.iter().cloned().chain(unknown.iter().filter(|(i, _)| *i == ui).map(|(_, w)| w.clone())) {
            eprintln!("warning: {w}");
        }
        let mut runs = Vec::new();
        let c_names = launch::source_names(u, module, &paths, &|f| u.krate.is_local(f));
        for f in module.functions.iter().filter(|f| f.is_entry && f.body.is_some()) {
            // (a C++ kernel by its source name in what is printed)
            let name = gpucheck_analysis::names::bare(f.name);
            let wanted = if a.kernels.is_empty() {
                // a PTX file without launch settings: every kernel, with the command line's
                launch::configured(u.krate.meta.as_ref(), f.name) || (!a.ptx.is_empty() && u.krate.meta.is_none())
            } else {
                a.kernels.iter().any(|k| names_kernel(k, f.name))
            };
            if !wanted {
                continue;
            }
            let spec = match launch::spec(u.krate.meta.as_ref(), f.name, &cli_spec) {
                Ok(s) => s,
                Err(e) => {
                    eprintln!("warning: skipping kernel `{}`: {e}", gpucheck_analysis::names::bare(f.name));
                    skipped += 1;
                    continue;
                }
            };
            // the shape the analysis takes (`given_shape`)
            let given = Options {
                cli_kernel_blocks: a.kernel_blocks.iter().cloned().collect(),
                block: a.block,
                kernel_blocks: u.krate.kernel_blocks.clone(),
                launch_blocks: crate::launch_blocks(&u.krate, &paths),
                package_block: u.krate.block,
                ..Default::default()
            };
            let Some(block) = gpucheck_analysis::given_shape(f, &given).map(|s| s.block) else {
                eprintln!(
                    "warning: skipping kernel `{name}`: no block shape; pass --block {name}=X,Y,Z (or --block X,Y,Z for every kernel) or set `block` in [package.metadata.gpucheck]"
                );
                skipped += 1;
                continue;
            };
            // a CUDA C kernel's parameters by the names its source gives them (no types)
            let rust = launch::rust_params(&u.krate.root, f.name).or_else(|| {
                let names = c_names.get(&gpucheck_analysis::names::bare(f.name)).filter(|ps| ps.len() == f.params.len())?;
                let params =
                    names.iter().zip(&f.params).map(|(n, p)| (if n.is_empty() { p.name.to_string() } else { n.clone() }, String::new()));
                Some(launch::RustKernel { params: params.collect(), structs: Default::default() })
            });
            runs.push((f, spec, block, rust));
        }
        plans.push((ui, u, module, src, runs, c_names));
    }
    // arguments named on the command line must name a parameter of a kernel to run
    // (kernel as the source names it, every name a parameter answers to, the names to show: the source's
    // where known, else the PTX's)
    let params: Vec<(String, Vec<String>, Vec<String>)> = plans
        .iter()
        .flat_map(|(_, _, _, _, runs, _)| {
            runs.iter().map(|(f, _, _, rust)| {
                let shown = match rust {
                    Some(r) => r.params.iter().map(|(n, _)| n.clone()).collect(),
                    None => f.params.iter().map(|p| p.name.to_string()).collect(),
                };
                (gpucheck_analysis::names::bare(f.name), launch::param_names(f, rust.as_ref()), shown)
            })
        })
        .collect();
    for name in cli_spec.args.keys() {
        if !params.is_empty() && !params.iter().any(|(_, ps, _)| ps.contains(name)) {
            let list: Vec<String> = params.iter().map(|(k, _, shown)| format!("{k}({})", shown.join(", "))).collect();
            let hint =
                gpucheck_analysis::lints::registry::closest_among(name, params.iter().flat_map(|(_, _, s)| s.iter().map(String::as_str)))
                    .map(|c| format!("; did you mean `{c}`?"))
                    .unwrap_or_default();
            bail!(
                "argument `{name}` names no parameter of the kernels to run{hint} (parameters: {}; a parameter's PTX name or its index works too)",
                list.join("; ")
            );
        }
    }
    let mut out = Vec::new();
    for (ui, u, module, src, runs, names) in plans {
        if runs.is_empty() {
            continue;
        }
        // the static predictions, for exactly the block shapes run: the module is analysed once
        // (the source's parameter names, for the conditions the predictions state)
        let mut opts = Options {
            package_block: u.krate.block,
            kernel_blocks: u.krate.kernel_blocks.clone(),
            source_names: names,
            ..Default::default()
        };
        for (f, spec, block, _) in &runs {
            opts.kernel_blocks.insert(f.name.to_string(), *block);
            if let Some(b) = spec.shared_bytes {
                opts.kernel_shared.insert(f.name.to_string(), b as u64);
            }
            opts.kernel_grids.insert(f.name.to_string(), spec.grid.unwrap_or([1, 1, 1]));
        }
        let is_local = |p: &str| u.krate.is_local(p);
        let report = gpucheck_analysis::check_module(module, &opts, &is_local);
        for (f, spec, block, rust) in runs {
            let grid = spec.grid.unwrap_or([1, 1, 1]);
            let launch = Launch { grid, block, dynamic_shared: spec.shared_bytes.unwrap_or(0) };
            let kernel = gpucheck_analysis::demangle(f.name);
            let mut mem = Global::default();
            let prepared = match launch::prepare_with(f, rust.as_ref(), &spec.args, &spec.shared, &mut mem) {
                Ok(p) => p,
                Err(e) => {
                    eprintln!("warning: skipping kernel `{}`: {e}", gpucheck_analysis::names::bare(f.name));
                    skipped += 1;
                    continue;
                }
            };
            if a.message_format == MessageFormat::Human && (print || !a.build.quiet) {
                eprintln!(
                    "  Confirming {} on the {} engine: grid {}×{}×{}, block {}×{}×{}; {}",
                    gpucheck_analysis::names::bare(f.name),
                    a.engine.name(),
                    grid[0],
                    grid[1],
                    grid[2],
                    block[0],
                    block[1],
                    block[2],
                    prepared.shown.join(" ")
                );
            }
            let seen = match a.engine {
                Engine::Cpu => {
                    let stopped = |e: interp::InterpError| {
                        // point at the Rust line of a faulting access
                        let at = match &e {
                            interp::InterpError::Fault { site, .. } | interp::InterpError::Trap { site, .. } => {
                                report.access_at(*site).and_then(|x| x.site.span.clone())
                            }
                            _ => None,
                        };
                        // how to let it run longer
                        let hint = match &e {
                            interp::InterpError::Timeout { .. } => {
                                format!("; each thread may execute {} instructions: raise it with --max-steps N", a.max_steps)
                            }
                            interp::InterpError::TooLong { estimate: Some(_), .. } => {
                                "; run a smaller --grid, or pass --time-limit 0 (or more seconds) to run it whole".to_string()
                            }
                            interp::InterpError::TooLong { .. } => "; pass --time-limit 0 (or more seconds) to let it run".to_string(),
                            // an out-of-bounds address in the terms of the buffer it missed
                            interp::InterpError::Fault { addr, space: "global", .. } => {
                                launch::buffer_place(&prepared.buffers, *addr).map_or_else(String::new, |p| format!(": {p}"))
                            }
                            // dynamic shared memory the launch gave no bytes
                            interp::InterpError::Fault { space: "shared", .. } if !report.unsized_shared.is_empty() => format!(
                                "; the kernel's dynamic shared memory ({}) has no bytes in this launch: pass `--shared BYTES` (or set `shared_bytes` in Cargo.toml), the size the launch gives",
                                report.unsized_shared.iter().map(|n| format!("`{}`", gpucheck_analysis::names::bare(n))).collect::<Vec<_>>().join(", ")
                            ),
                            _ => String::new(),
                        };
                        match at {
                            Some(s) => {
                                anyhow::anyhow!("{}:{}:{}: the CPU engine stopped: {e}{hint}", paths.display(&s.file), s.line, s.col)
                            }
                            None => anyhow::anyhow!("the CPU engine stopped: {e}{hint}"),
                        }
                    };
                    // the Rust (CUDA C) line of the access a run stopped at, for a note
                    // a run stopped at an access outside its memory: said, with the access's source
                    // line, and that access alone is compared
                    let stopped_at = |site: SiteKey, line: u32, what: String, fault: interp::SafetyFault| {
                        let at = report
                            .access_at(site)
                            .and_then(|x| x.site.span.clone())
                            .map_or_else(String::new, |s| format!("{}:{}:{}: ", paths.display(&s.file), s.line, s.col));
                        eprintln!(
                            "note: {at}the run of `{}` stopped at PTX line {line}{what}: only that access is compared",
                            gpucheck_analysis::names::bare(f.name)
                        );
                        let mut seen = Seen { control: true, ..Seen::default() };
                        seen.out_of_bounds.insert(site, fault);
                        seen
                    };
                    match cpu(module, f.name, &launch, &prepared, &mut mem, &report.groups, &limits(a, block, print)) {
                        Ok(seen) => seen,
                        // an access outside its array and past the block's shared memory (the thread's
                        // local memory) stops the run there: that access's row says so, and the
                        // other kernels run
                        Err(interp::InterpError::Fault {
                            site,
                            space: space @ ("shared" | "local"),
                            thread,
                            block,
                            array_offset: Some(offset),
                            line,
                            ..
                        }) // (not one of dynamic shared memory the launch gave no bytes: that is said below)
                            if space == "local" || launch.dynamic_shared > 0 || report.unsized_shared.is_empty() =>
                        {
                            let whose = if space == "shared" { "the block's" } else { "its thread's" };
                            let what = format!(", a {space} access outside its array and past {whose} {space} memory");
                            stopped_at(site, line, what, interp::SafetyFault { block, thread, offset })
                        }
                        // likewise one outside every buffer given, near one of them: the buffer's element
                        Err(interp::InterpError::Fault { site, space: "global", thread, block, addr, line, .. })
                            if launch::buffer_offset(&prepared.buffers, addr).is_some() =>
                        {
                            let (place, offset) = launch::buffer_offset(&prepared.buffers, addr).unwrap_or_default();
                            let ([x, y, z], [bx, by, bz]) = (thread, block);
                            let what = format!(
                                ": thread ({x}, {y}, {z}) of block ({bx}, {by}, {bz}) accesses {place} (a buffer smaller than the kernel needs, or an access past its end)"
                            );
                            stopped_at(site, line, what, interp::SafetyFault { block, thread, offset })
                        }
                        Err(e) => return Err(stopped(e)),
                    }
                }
                Engine::Cuda => {
                    let seen = cuda::run(src, module, f.name, &launch, &prepared, time_limit(a))?;
                    if let Some(stop) = &seen.fault {
                        eprintln!(
                            "note: the GPU stopped the run of `{}`: {}; it does not say which access faulted (`--engine cpu` runs the kernel on the interpreter, which does); the next kernel runs in a fresh process",
                            gpucheck_analysis::names::bare(f.name),
                            stop.what
                        );
                    }
                    seen
                }
                Engine::CudaOnCpu => cuda::run_instrumented_on_cpu(src, f.name, &launch, &prepared, &mut mem)?,
            };
            // the kernel's own function and every function the run went through
            let index = module.functions.iter().position(|x| std::ptr::eq(x, f)).unwrap_or(0);
            let functions: BTreeSet<usize> =
                std::iter::once(index).chain(seen.lines.keys().copied()).chain(seen.sites.keys().map(|k| k.func)).collect();
            let rows = table::rows(&report, &kernel, &functions, &seen, &paths, &prepared.args);
            if print {
                table::print(&rows, &seen, a, &kernel, &u.krate.name);
            }
            out.push(KernelRun { unit: ui, kernel, rows });
        }
    }
    Ok((out, skipped))
}

/// How much a CPU-engine launch may run (`--max-steps` per thread, the
/// block's warps together; `--time-limit`), with a progress line on a
/// terminal when `print`.
fn limits(a: &ConfirmArgs, block: [u32; 3], print: bool) -> interp::Run {
    let warps = (block.iter().map(|&x| x as u64).product::<u64>()).div_ceil(32);
    let progress =
        (print && a.message_format == MessageFormat::Human && std::io::IsTerminal::is_terminal(&std::io::stderr())).then(progress_line);
    interp::Run { budget: a.max_steps.saturating_mul(warps), time_limit: time_limit(a), progress, ..interp::Run::default() }
}

/// `--time-limit` (0: none).
fn time_limit(a: &ConfirmArgs) -> Option<std::time::Duration> {
    (a.time_limit > 0).then(|| std::time::Duration::from_secs(a.time_limit))
}

/// A progress line on stderr, redrawn at most five times a second: blocks
/// done of all, and the rate; erased when the last block ends.
fn progress_line() -> interp::Progress {
    let started = std::time::Instant::now();
    let last = std::sync::Mutex::new(started);
    interp::Progress(std::sync::Arc::new(move |done, all| {
        let now = std::time::Instant::now();
        let mut last = last.lock().unwrap_or_else(|e| e.into_inner());
        if done == all {
            eprint!("\r\x1b[2K");
        } else if now.duration_since(*last).as_millis() >= 200 {
            *last = now;
            let rate = done as f64 / now.duration_since(started).as_secs_f64().max(1e-9);
            eprint!("\r\x1b[2K    block {done} of {all} ({:.0} %), {rate:.0} blocks/s", 100.0 * done as f64 / all as f64);
        }
    }))
}

/// The CPU engine: the interpreter, its observations turned into `Seen`.
fn cpu(
    module: &ptx::Module<'_>,
    kernel: &str,
    l: &Launch,
    p: &launch::Prepared,
    mem: &mut Global,
    groups: &[gpucheck_analysis::GroupReport],
    how: &interp::Run,
) -> Result<Seen, interp::InterpError> {
    let started = std::time::Instant::now();
    let watch: Vec<Vec<SiteKey>> =
        groups.iter().map(|g| g.members.iter().map(|&inst| SiteKey { func: g.function, inst }).collect()).collect();
    let obs = interp::run_with(module, kernel, l, &p.args, mem, &interp::Run { groups: watch, ..how.clone() })?;
    let seconds = started.elapsed().as_secs_f64();
    Ok(Seen {
        sites: obs.sites.iter().map(|(k, s)| (*k, (s.space, SiteSeen::from(&s.hist)))).collect(),
        branches: obs
            .branches
            .iter()
            .map(|(k, b)| {
                (
                    *k,
                    BranchSeen {
                        executions: b.executions,
                        splits: b.splits,
                        warps_split: SiteSeen::from(&b.warps_split),
                        idle_lane_slots: b.idle_lane_slots,
                    },
                )
            })
            .collect(),
        races: obs.races.clone(),
        barriers: obs.barriers.clone(),
        groups: obs.groups.iter().map(|(g, h)| (*g, SiteSeen::from(h))).collect(),
        out_of_bounds: obs.out_of_bounds.clone(),
        uninitialized: obs.uninitialized.clone(),
        control: true,
        lines: obs.lines,
        lane_insts: obs.lane_insts,
        warp_insts: obs.warp_insts,
        seconds,
        kernel_ms: None,
        fault: None,
    })
}
