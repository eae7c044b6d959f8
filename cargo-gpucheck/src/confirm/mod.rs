//! `cargo gpucheck confirm`: run kernels with a launch specification and
//! generated inputs, and set what they did beside what the static analysis
//! predicted: per access site sectors per request (global) or conflict
//! degree (shared), per branch how often warps split, races seen.
//!
//! Owns: choosing the kernels and launches, driving an engine (`cpu`: the
//! interpreter in `gpucheck_analysis::interp`; `cuda`: a real GPU through
//! `cuda`), the verdicts and the exit status (0 all confirmed, 1 a mismatch
//! or an observed race, 2 could not run). Does not own: the analysis, the
//! interpreter, PTX instrumentation (`instrument`).

pub mod cuda;
pub mod instrument;
pub mod launch;
mod table;

use crate::build;
use crate::cli::{ConfirmArgs, Engine, MessageFormat};
use crate::diagnostic::PathStyle;
use anyhow::{bail, Context, Result};
use gpucheck_analysis::interp::{self, Global, Launch};
use gpucheck_analysis::{ptx, AccessReport, Options};
use table::Verdict;

/// Observed numbers of one site, from either engine.
#[derive(Debug, Clone, Default)]
pub struct SiteSeen {
    pub requests: u64,
    /// Most frequent value per request, the largest, the mean.
    pub mode: u32,
    pub max: u32,
    pub mean: f64,
}

impl From<&interp::SiteObs> for SiteSeen {
    fn from(s: &interp::SiteObs) -> SiteSeen {
        SiteSeen { requests: s.requests, mode: s.mode(), max: s.max(), mean: s.mean() }
    }
}

/// What an engine reports for one kernel run.
#[derive(Debug, Default)]
pub struct Seen {
    /// By PTX line of the access.
    pub sites: Vec<(u32, &'static str, SiteSeen)>,
    /// Branches: PTX line, executions, splits.
    pub branches: Vec<(u32, u64, u64)>,
    /// Races: kind, shared?, PTX lines of both accesses, the two threads.
    pub races: Vec<(&'static str, bool, u32, u32, u32, u32)>,
    pub lane_insts: u64,
    pub seconds: f64,
    /// CUDA only: the uninstrumented kernel's time (CUDA events), milliseconds.
    pub kernel_ms: Option<f64>,
}

pub fn run(a: &ConfirmArgs) -> Result<i32> {
    let meta = build::metadata(a.build.manifest_path.as_deref())?;
    let ws = build::workspace(&meta, &a.build.packages, a.build.backend)?;
    let units = build::build_all(&ws, &meta, a.build.quiet, a.build.jobs)?;
    let paths = PathStyle { root: ws.root.clone() };
    let cli_spec = launch::Spec {
        grid: a.grid,
        block: a.block,
        args: a.args.iter().map(|s| launch::parse_arg(s).map_err(anyhow::Error::msg)).collect::<Result<_>>()?,
    };
    let mut rows_all = Vec::new();
    let mut ran = 0;
    for u in &units {
        let src = std::fs::read_to_string(&u.ptx).with_context(|| format!("reading PTX `{}`", u.ptx.display()))?;
        let module = ptx::parse(&src).map_err(|e| anyhow::anyhow!("{}:{e}", u.ptx.display()))?;
        let kernels: Vec<&ptx::Function<'_>> = module
            .functions
            .iter()
            .filter(|f| f.is_entry && f.body.is_some())
            .filter(|f| {
                let name = gpucheck_analysis::demangle(f.name);
                if a.kernels.is_empty() {
                    launch::configured(u.krate.meta.as_ref(), f.name)
                } else {
                    a.kernels.iter().any(|k| *k == f.name || *k == name)
                }
            })
            .collect();
        for f in kernels {
            let spec = launch::spec(u.krate.meta.as_ref(), f.name, &cli_spec).map_err(anyhow::Error::msg)?;
            let block = spec.block.or_else(|| u.krate.kernel_blocks.get(f.name).copied()).or(u.krate.block);
            let Some(block) = block else {
                bail!("no block shape for kernel `{}`: pass --block X,Y,Z or set `block` in [package.metadata.gpucheck]", f.name);
            };
            let grid = spec.grid.unwrap_or([1, 1, 1]);
            let launch = Launch { grid, block, dynamic_shared: 0 };
            let rust = launch::rust_params(&u.krate.root, f.name);
            let mut mem = Global::default();
            let prepared = launch::prepare(f, rust.as_deref(), &spec.args, &mut mem).map_err(anyhow::Error::msg)?;
            // the static predictions for exactly this block shape
            let mut opts = Options { package_block: u.krate.block, ..Default::default() };
            opts.kernel_blocks = u.krate.kernel_blocks.clone();
            opts.kernel_blocks.insert(f.name.to_string(), block);
            let is_local = |p: &str| u.krate.is_local(p);
            let report = gpucheck_analysis::check_module(&module, &opts, &is_local);
            let accesses: Vec<&AccessReport> = report.accesses.iter().filter(|x| x.kernel == gpucheck_analysis::demangle(f.name)).collect();
            let races_predicted: Vec<u32> = report
                .findings
                .iter()
                .filter(|x| x.kernel == gpucheck_analysis::demangle(f.name) && x.lint.name.ends_with("_memory_race"))
                .map(|x| x.ptx_line)
                .collect();
            if a.message_format == MessageFormat::Human {
                eprintln!(
                    "  Confirming {} on the {} engine: grid {}×{}×{}, block {}×{}×{}; {}",
                    gpucheck_analysis::demangle(f.name),
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
                Engine::Cpu => cpu(&module, f.name, &launch, &prepared, &mut mem).map_err(|e| {
                    // point at the Rust line of a faulting access
                    let at = match &e {
                        interp::InterpError::Fault { line, .. } => {
                            accesses.iter().find(|x| x.ptx_line == *line).and_then(|x| x.span.clone())
                        }
                        _ => None,
                    };
                    match at {
                        Some(s) => anyhow::anyhow!("{}:{}:{}: the CPU engine stopped: {e}", paths.display(&s.file), s.line, s.col),
                        None => anyhow::anyhow!("the CPU engine stopped: {e}"),
                    }
                })?,
                Engine::Cuda => cuda::run(&src, &module, f.name, &launch, &prepared)?,
                Engine::CudaOnCpu => cuda::run_instrumented_on_cpu(&src, f.name, &launch, &prepared, &mut mem)?,
            };
            let rows = table::rows(&accesses, &seen, &races_predicted, &report.findings, f.name, &paths);
            table::print(&rows, &seen, a, f.name, &u.krate.name);
            rows_all.extend(rows);
            ran += 1;
        }
    }
    if ran == 0 {
        bail!(
            "no kernel to run: name kernels with --kernel NAME (with --grid/--block/--arg), or give them a launch in Cargo.toml:\n  [package.metadata.gpucheck.kernels.NAME]\n  grid = [x, y, z]\n  args = {{ x = \"f32[1048576]\", n = \"1048576\" }}"
        );
    }
    let bad = rows_all.iter().filter(|r| matches!(r.verdict, Verdict::Mismatch | Verdict::Race)).count();
    Ok(if bad > 0 { 1 } else { 0 })
}

/// The CPU engine: the interpreter, its observations turned into `Seen`.
fn cpu(module: &ptx::Module<'_>, kernel: &str, l: &Launch, p: &launch::Prepared, mem: &mut Global) -> Result<Seen, interp::InterpError> {
    let started = std::time::Instant::now();
    let obs = interp::run(module, kernel, l, &p.args, mem)?;
    let seconds = started.elapsed().as_secs_f64();
    let line = |i: usize| obs.inst_lines.get(i).copied().unwrap_or(0);
    Ok(Seen {
        sites: obs.sites.iter().map(|(i, s)| (line(*i), s.space, SiteSeen::from(s))).collect(),
        branches: obs.branches.iter().map(|(i, b)| (line(*i), b.executions, b.splits)).collect(),
        races: obs.races.iter().map(|r| (r.kind, r.shared, line(r.first), line(r.second), r.first_thread, r.second_thread)).collect(),
        lane_insts: obs.lane_insts,
        seconds,
        kernel_ms: None,
    })
}
