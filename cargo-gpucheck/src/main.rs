//! `cargo gpucheck`: clippy for GPU kernels.
//!
//! Owns: the commands (check a workspace's kernel crates, check PTX files,
//! confirm, instrument, list and explain lints; and `RUSTC_WRAPPER` mode
//! during our own builds), their exit status (0 clean or warnings only, 1
//! error-level findings, 2 the check could not be done), and wiring build →
//! analysis → levels → suppression → report. Does not own: analysis
//! (`gpucheck-analysis`), builds (`build`), levels (`levels`), comments
//! (`suppress`), rendering (`report`), confirmation runs (`confirm`).
#![cfg_attr(all(not(test), target_os = "linux", target_env = "gnu"), no_main)]

mod build;
mod cli;
mod config;
mod confirm;
mod diagnostic;
mod input;
mod levels;
mod lint_attrs;
mod new;
mod report;
mod suppress;
mod view;

use anyhow::{Context, Result};
use cli::{Cargo, ColorChoice, Command, MessageFormat, OutputArgs};
use diagnostic::{prepare, Diagnostic, PathStyle};
use gpucheck_analysis::lints::registry;
use gpucheck_analysis::Options;
use levels::Levels;
use report::Origin;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};

/// glibc's allocator kept from giving memory back to the system while the
/// check runs: the analysis makes and drops tables of a block's threads
/// over and over, on several threads, and by default glibc shrinks each
/// thread's heap when its top is free and grows it again at the next
/// table (system calls and fresh zeroed pages, none of it in the
/// program's own instructions: histogram 11,123 page faults, 7,888 so).
/// A short process keeps what it has had, up to a few megabytes free.
///
/// And one heap per analysis thread, not one more for the main thread:
/// the main thread waits while the analysis threads work, so the memory
/// it freed (the parse's) serves one of them, rather than that thread
/// touching fresh pages of a heap of its own (lud at 32×32 threads: 6,072
/// → 4,589 page faults, CPU time 0.92 of before).
fn tune_allocator() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt sets allocator parameters; called first, before any thread starts
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 1 << 20);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 8 << 20);
        libc::mallopt(libc::M_TOP_PAD, 512 << 10);
        libc::mallopt(libc::M_ARENA_MAX, analysis_threads());
    }
}

/// The threads rayon's pool starts: `RAYON_NUM_THREADS` when set (and not
/// 0), else one per CPU this process may run on. (Read here as rayon reads
/// them: asking rayon would start its pool before the allocator is set.
/// The CPUs are the affinity mask's, one system call: the standard
/// library's count also reads the cgroup's CPU quota from `/proc`, 40 µs
/// in a container, a thirtieth of a one-kernel file's check, and rayon
/// asks it again only where it starts its pool. Where a quota leaves
/// rayon fewer threads than CPUs, the main thread keeps a heap of its own.)
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn analysis_threads() -> i32 {
    let given = std::env::var("RAYON_NUM_THREADS").ok().and_then(|v| v.trim().parse::<i32>().ok()).filter(|&n| n > 0);
    given
        .or_else(|| {
            // SAFETY: a zeroed cpu_set_t is a valid empty set, and the call writes at most its size
            unsafe {
                let mut set: libc::cpu_set_t = std::mem::zeroed();
                (libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) == 0)
                    .then(|| libc::CPU_COUNT(&set))
                    .filter(|&n| n > 0)
            }
        })
        .unwrap_or(1)
}

/// The process's entry, called by the C runtime itself on Linux with
/// glibc. The standard library's own entry first finds the main thread's
/// stack, for its stack-overflow message, by reading and parsing
/// `/proc/self/maps` (`pthread_getattr_np`): a tenth of a millisecond, a
/// twelfth of a one-kernel file's whole check. Here a stack overflow ends
/// the process with the signal's plain message instead, a panic still
/// prints its message and exits with status 101, and arguments still come
/// from `std::env` (glibc hands them to the standard library before this).
#[cfg(all(not(test), target_os = "linux", target_env = "gnu"))]
#[no_mangle]
pub extern "C" fn main(_argc: std::ffi::c_int, _argv: *const *const std::ffi::c_char) -> std::ffi::c_int {
    // what the standard library's entry does that this program needs: standard
    // streams closed by the caller opened on /dev/null (so that no file this
    // program opens becomes its output)
    for fd in 0..3 {
        // SAFETY: fcntl and open on plain descriptors and a constant NUL-terminated path
        unsafe {
            if libc::fcntl(fd, libc::F_GETFD) == -1 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EBADF) {
                libc::open(c"/dev/null".as_ptr(), libc::O_RDWR);
            }
        }
    }
    let code = std::panic::catch_unwind(start).unwrap_or(101);
    std::process::exit(code)
}

#[cfg(not(all(not(test), target_os = "linux", target_env = "gnu")))]
fn main() {
    std::process::exit(start());
}

/// Run the command line; its exit status.
fn start() -> i32 {
    // a reader that closes the pipe early (`| head`) ends the process quietly, as
    // cargo and ripgrep do, instead of a panic in the next print
    #[cfg(unix)]
    // SAFETY: called first, before any thread starts; SIG_DFL is a valid action for SIGPIPE
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    tune_allocator();
    match run() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {e:#}");
            2
        }
    }
}

fn run() -> Result<i32> {
    let mut args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    // started by `confirm --engine cuda` to run one kernel on the GPU
    #[cfg(feature = "cuda")]
    if let [_, arg, job] = args.as_slice() {
        if arg == confirm::cuda::JOB_ARG {
            return Ok(confirm::cuda::job_main(job));
        }
    }
    // started by cargo as RUSTC_WRAPPER during one of our own builds
    if build::wrapper::active(&args) {
        return Ok(build::wrapper::run(&args));
    }
    // `cargo gpucheck …` passes `gpucheck` first; accept `cargo-gpucheck …` too
    if args.get(1).is_none_or(|a| a != "gpucheck") {
        args.insert(1, "gpucheck".into());
    }
    let raw: Vec<String> = args.iter().skip(2).map(|a| a.to_string_lossy().to_string()).collect();
    if let Some(help) = cli::own_help(&raw, std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none()) {
        print!("{help}");
        return Ok(0);
    }
    let Cargo::Gpucheck(a) = match cli::parse(args) {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return Ok(if e.use_stderr() { 2 } else { 0 });
        }
    };
    let flags = levels::flags_from_args(&raw);
    match a.command {
        Some(Command::Lints { markdown }) => {
            if markdown {
                print!("{}", registry::markdown_table());
            } else {
                print_lints();
            }
            Ok(0)
        }
        Some(Command::Explain { name }) => explain(&name),
        Some(Command::New { name, path }) => match new::run(&name, path.as_deref()) {
            Ok(dir) => {
                eprintln!(
                    "     Created kernel crate `{name}` in {}: `cd {} && cargo gpucheck`, then `cargo gpucheck confirm`",
                    dir.display(),
                    diagnostic::shell_quote(&dir)
                );
                Ok(0)
            }
            Err(e) => {
                eprintln!("error: {e:#}");
                Ok(2)
            }
        },
        Some(Command::Confirm(mut c)) => {
            c.block = a.output.block();
            c.kernel_blocks = a.output.kernel_blocks();
            c.grid = a.output.grid;
            c.shared = a.output.shared;
            c.message_format = a.output.message_format;
            confirm::run(&c)
        }
        Some(Command::Instrument { file, arch, output }) => {
            let src = std::fs::read_to_string(&file).with_context(|| format!("reading `{}`", file.display()))?;
            let ins = confirm::instrument::instrument(&src, arch.as_deref()).map_err(|e| anyhow::anyhow!("{}:{e}", file.display()))?;
            match output {
                Some(o) => std::fs::write(&o, &ins.ptx).with_context(|| format!("writing `{}`", o.display()))?,
                None => print!("{}", ins.ptx),
            }
            eprintln!("instrumented {} access sites ({} left alone)", ins.sites.len(), ins.skipped.len());
            for (line, why) in &ins.skipped {
                eprintln!("  PTX line {line}: {why}");
            }
            Ok(0)
        }
        Some(Command::Report(r)) => write_report(&r, &a.output, &flags),
        Some(Command::Ptx(p)) => {
            let out = merge(&a.output, &p.output);
            check(input::Source::Files { files: &p.files, manifest: None }, &a.build, &out, &flags, p.quiet || a.build.quiet)
        }
        None => check(input::Source::of(&a.build, &[]), &a.build, &a.output, &flags, a.build.quiet),
    }
}

fn print_lints() {
    let w = gpucheck_analysis::LINTS.iter().map(|l| l.name.len()).max().unwrap_or(10) + 10;
    println!("{:w$}  {:12} {:8} summary", "lint", "group", "default");
    for l in gpucheck_analysis::LINTS {
        println!("{:w$}  {:12} {:8} {}", format!("gpucheck::{}", l.name), l.group.name(), l.default.as_str(), l.summary);
    }
    println!(
        "\ngroups: {} (and `all`); set levels with -A/-W/-D/-F NAME or [package.metadata.gpucheck.lints]",
        registry::GROUPS.iter().map(|g| g.name()).collect::<Vec<_>>().join(", ")
    );
}

fn explain(name: &str) -> Result<i32> {
    match registry::find(name) {
        Some(l) => {
            println!("gpucheck::{} ({}, {} by default): {}\n", l.name, l.group.name(), l.default.as_str(), l.summary);
            print!("{}", l.explanation());
            Ok(0)
        }
        None => match registry::expand(name) {
            // a group (or `all`): its lints
            Some(lints) => {
                let n = name.strip_prefix("gpucheck::").unwrap_or(name);
                println!("gpucheck::{n} is a group of {} lints; `cargo gpucheck explain NAME` explains each:\n", lints.len());
                let w = lints.iter().map(|l| l.name.len()).max().unwrap_or(10);
                for l in lints {
                    println!("  gpucheck::{:w$}  {:6}  {}", l.name, l.default.as_str(), l.summary);
                }
                Ok(0)
            }
            None => {
                let hint = registry::closest(name).map(|c| format!("; did you mean `gpucheck::{c}`?")).unwrap_or_default();
                eprintln!("error: no lint or group named `{name}`{hint}\n  (`cargo gpucheck lints` lists them)");
                Ok(2)
            }
        },
    }
}

/// Options given before or after the `ptx` subcommand.
fn merge(outer: &OutputArgs, inner: &OutputArgs) -> OutputArgs {
    OutputArgs {
        // (the inner flags come later: they win)
        blocks: outer.blocks.iter().chain(&inner.blocks).cloned().collect(),
        grid: inner.grid.or(outer.grid),
        shared: inner.shared.or(outer.shared),
        message_format: if inner.message_format != MessageFormat::Human { inner.message_format } else { outer.message_format },
        color: if inner.color != ColorChoice::Auto { inner.color } else { outer.color },
        coalescing_threshold: if inner.coalescing_threshold != 2.0 { inner.coalescing_threshold } else { outer.coalescing_threshold },
        assume: outer.assume.iter().chain(&inner.assume).cloned().collect(),
        all_accesses: inner.all_accesses || outer.all_accesses,
        no_replay: inner.no_replay || outer.no_replay,
        ..Default::default()
    }
}

fn color(choice: ColorChoice) -> bool {
    match choice {
        ColorChoice::Always => return true,
        ColorChoice::Never => return false,
        ColorChoice::Auto => {}
    }
    if std::env::var_os("NO_COLOR").is_some() {
        return false;
    }
    match std::env::var("CARGO_TERM_COLOR").as_deref() {
        Ok("always") => true,
        Ok("never") => false,
        _ => std::io::stderr().is_terminal(),
    }
}

/// Where diagnostics go: printed per package (human, JSON) or collected for
/// one SARIF log at the end.
struct Sink {
    fmt: MessageFormat,
    color: bool,
    errors: usize,
    sarif: Vec<Diagnostic>,
    warned: Vec<String>,
}

impl Sink {
    fn new(o: &OutputArgs) -> Sink {
        let mut sink = Sink {
            fmt: o.message_format,
            color: o.message_format == MessageFormat::Human && color(o.color),
            errors: 0,
            sarif: vec![],
            warned: vec![],
        };
        if o.all_accesses && o.message_format != MessageFormat::Json {
            sink.config_warnings(&["`--all-accesses` prints its records only with `--message-format json`; ignored".to_string()]);
        }
        sink
    }

    /// Configuration warnings (unknown lints…), each once, on stderr.
    fn config_warnings(&mut self, ws: &[String]) {
        for w in ws {
            if !self.warned.contains(w) {
                eprintln!("warning: {w}");
                self.warned.push(w.clone());
            }
        }
    }

    fn emit(&mut self, diags: Vec<Diagnostic>, ptx_src: &str, origin: &Origin) {
        let ptx = report::source::SourceText::new(ptx_src);
        self.errors += diags.iter().filter(|d| d.level.is_error()).count();
        match self.fmt {
            MessageFormat::Human => {
                for d in &diags {
                    eprintln!("{}\n", report::human::render(d, &ptx, self.color));
                }
                if let Some(s) = report::human::by_impact(&diags) {
                    eprintln!("{s}\n");
                }
                if let Some(s) = report::human::summary(&origin.package_name, origin.kind, &diags) {
                    eprintln!("{s}");
                }
            }
            MessageFormat::Json => {
                // (serialised straight into a buffer: `Display` goes through the formatter byte
                // by byte; sized by the findings, a few KB of JSON each: 64 KB for a unit with
                // none would be most of a small file's heap)
                let mut out = std::io::BufWriter::with_capacity((diags.len() << 12).min(1 << 16), std::io::stdout().lock());
                for d in &diags {
                    let rendered = report::human::render(d, &ptx, false);
                    let _ = serde_json::to_writer(&mut out, &report::json::message(d, origin, &format!("{rendered}\n")));
                    let _ = out.write_all(b"\n");
                }
                let _ = out.flush();
            }
            MessageFormat::Sarif => self.sarif.extend(diags),
        }
    }

    fn finish(self, root: &Path, failed: bool) -> i32 {
        match self.fmt {
            MessageFormat::Json => println!("{}", report::json::build_finished(self.errors == 0 && !failed)),
            MessageFormat::Sarif => {
                println!("{}", serde_json::to_string_pretty(&report::sarif::log(&self.sarif, root)).unwrap_or_default())
            }
            MessageFormat::Human => {}
        }
        if failed {
            2
        } else if self.errors > 0 {
            1
        } else {
            0
        }
    }
}

/// One analysed PTX file, ready to print.
struct Checked {
    diags: Vec<Diagnostic>,
    /// Configuration warnings: unknown keys, kernel tables naming no kernel.
    config_warnings: Vec<String>,
    src: String,
    origin: Origin,
    status: String,
    /// The analysis' predictions (its findings moved into `diags`).
    analysis: gpucheck_analysis::Report,
    ptx_display: String,
}

/// `cargo gpucheck` and `cargo gpucheck ptx`: check every unit of `src`
/// (the workspace's kernel crates, built; or PTX files) and print.
fn check(src: input::Source<'_>, b: &cli::BuildArgs, o: &OutputArgs, flags: &[(char, String)], quiet: bool) -> Result<i32> {
    let plan = input::plan(src)?;
    if let Some(n) = &plan.scope {
        eprintln!("note: {n}");
    }
    let paths = PathStyle { root: plan.root.clone() };
    let root_manifest = paths.display(&plan.root.join("Cargo.toml").to_string_lossy());
    let (root, lints) = (plan.root.clone(), plan.lints.clone());
    let mut sink = Sink::new(o);
    let levels_of = |k: &build::KernelCrate| levels_for(lints.as_ref(), &root_manifest, k, flags, &paths);
    // configuration that cannot be used stops the check before the build
    // (the command line's own, when there is no crate to read tables from)
    let mut from_flags = Levels::default();
    from_flags.apply_flags(flags);
    let mut bad: Vec<String> = plan.kernels.iter().flat_map(|k| levels_of(k).errors).chain(from_flags.errors.clone()).collect();
    bad.dedup();
    if !bad.is_empty() {
        for e in &bad {
            eprintln!("error: {e}");
        }
        return Ok(sink.finish(&root, true));
    }
    // inputs that cannot be used are said; the others are checked
    let mut failed = !plan.errors.is_empty();
    for e in &plan.errors {
        eprintln!("error: {e}");
    }
    let opts = build::BuildOpts { quiet: b.quiet, jobs: b.jobs, json: o.message_format == MessageFormat::Json };
    let units = match plan.units(opts) {
        Ok(u) => u,
        Err(e) => {
            eprintln!("error: {e:#}");
            return Ok(sink.finish(&root, true));
        }
    };
    sink.config_warnings(&from_flags.warnings);
    let levels: Vec<Levels> = units
        .iter()
        .map(|u| {
            let levels = levels_of(&u.krate);
            sink.config_warnings(&levels.warnings);
            levels
        })
        .collect();
    // analyse every PTX file in parallel; print in unit order
    let pairs: Vec<(&build::Unit, &Levels)> = units.iter().zip(levels.iter()).collect();
    let mut checked: Vec<Result<Checked>> = gpucheck_analysis::par::map(&pairs, |(u, l)| check_unit(u, o, l, &paths, o.all_accesses));
    let mut refs: Vec<Option<&mut Checked>> = checked.iter_mut().map(|c| c.as_mut().ok()).collect();
    unknown_kernels(&units, &mut refs, &paths, o);
    // nothing at all to check (every unit empty): said as an error, exit 2
    let nothing = !checked.is_empty() && checked.iter().all(|c| c.as_ref().is_ok_and(|c| c.analysis.functions == 0));
    for c in checked {
        let c = match c {
            Ok(c) => c,
            Err(e) => {
                eprintln!("error: {e:#}");
                failed = true;
                continue;
            }
        };
        sink.config_warnings(&c.config_warnings);
        if !quiet && o.message_format == MessageFormat::Human {
            eprintln!("{}", c.status);
        }
        report::print_sites(&c.analysis.accesses, &c.analysis.coverage, &c.ptx_display, o.message_format, o.all_accesses, &paths);
        sink.emit(c.diags, &c.src, &c.origin);
    }
    if nothing {
        eprintln!(
            "error: nothing was checked: {} (see the warnings above)",
            if units.iter().all(|u| u.kind == build::UnitKind::PtxFile) {
                format!("no kernel or device function in {}", plural(units.len(), "PTX file"))
            } else {
                format!("no kernel in {}", plural(units.len(), "package"))
            }
        );
        failed = true;
    }
    Ok(sink.finish(&root, failed))
}

fn levels_for(
    ws_lints: Option<&serde_json::Value>,
    root_manifest: &str,
    k: &build::KernelCrate,
    flags: &[(char, String)],
    paths: &PathStyle,
) -> Levels {
    let mut levels = Levels::default();
    if let Some(t) = ws_lints {
        levels.apply_table(t, "workspace.metadata.gpucheck.lints", root_manifest);
    }
    if let Some(t) = &k.lints {
        levels.apply_table(t, "package.metadata.gpucheck.lints", &paths.display(&k.manifest_path.to_string_lossy()));
    }
    levels.apply_flags(flags);
    levels
}

/// `cargo gpucheck report`: check (and with `--confirm` run) the kernels
/// as `cargo gpucheck` and `confirm` would, then write the pages (or print
/// the JSON document).
/// `cargo gpucheck report`: check (and with `--confirm` run) the kernels
/// as `cargo gpucheck` and `confirm` would, then write the pages (or print
/// the JSON document).
fn write_report(r: &cli::ReportArgs, o: &OutputArgs, flags: &[(char, String)]) -> Result<i32> {
    let cwd = std::env::current_dir().unwrap_or_default();
    let plan = input::plan(input::Source::of(&r.build, &r.ptx))?;
    if let Some(n) = &plan.scope {
        eprintln!("note: {n}");
    }
    if let Some(e) = plan.errors.first() {
        anyhow::bail!("{e}");
    }
    let (root, target_dir, ws_lints) = (plan.root.clone(), plan.target_dir.clone(), plan.lints.clone());
    let units = plan.units(build::BuildOpts { quiet: r.build.quiet, jobs: r.build.jobs, json: false })?;
    let paths = PathStyle { root: root.clone() };
    let root_manifest = paths.display(&root.join("Cargo.toml").to_string_lossy());
    let levels: Vec<Levels> = units.iter().map(|u| levels_for(ws_lints.as_ref(), &root_manifest, &u.krate, flags, &paths)).collect();
    let mut bad: Vec<String> = levels.iter().flat_map(|l| l.errors.clone()).collect();
    bad.dedup();
    if let Some(e) = bad.first() {
        anyhow::bail!("{e}");
    }
    let mut warned: Vec<String> = levels.iter().flat_map(|l| l.warnings.clone()).collect();
    let pairs: Vec<(&build::Unit, &Levels)> = units.iter().zip(levels.iter()).collect();
    let mut checked: Vec<Checked> =
        gpucheck_analysis::par::map(&pairs, |(u, l)| check_unit(u, o, l, &paths, true)).into_iter().collect::<Result<_>>()?;
    let mut refs: Vec<Option<&mut Checked>> = checked.iter_mut().map(Some).collect();
    unknown_kernels(&units, &mut refs, &paths, o);
    for c in &checked {
        warned.extend(c.config_warnings.iter().cloned());
        if !r.build.quiet {
            eprintln!("{}", c.status);
        }
    }
    warned.dedup();
    for w in &warned {
        eprintln!("warning: {w}");
    }
    let runs = if r.confirm {
        let ca = cli::ConfirmArgs {
            build: cli::BuildArgs { manifest_path: r.build.manifest_path.clone(), quiet: r.build.quiet, ..Default::default() },
            ptx: r.ptx.clone(),
            kernels: r.kernels.clone(),
            grid: o.grid,
            args: r.args.clone(),
            engine: cli::Engine::Cpu,
            max_steps: cli::DEFAULT_MAX_STEPS,
            time_limit: cli::DEFAULT_TIME_LIMIT,
            block: o.block(),
            kernel_blocks: o.kernel_blocks(),
            shared: o.shared,
            message_format: MessageFormat::Human,
        };
        let (runs, _) = confirm::collect(&ca, &units, root.clone(), false)?;
        runs
    } else {
        vec![]
    };
    let inputs: Vec<view::Input<'_>> = checked
        .iter()
        .enumerate()
        .map(|(i, c)| view::Input {
            package: &c.origin.package_name,
            ptx: &c.ptx_display,
            diags: &c.diags,
            analysis: &c.analysis,
            runs: runs.iter().filter(|k| k.unit == i).collect(),
        })
        .collect();
    let doc = view::Doc::build(&inputs, &paths, r.confirm);
    match r.format {
        cli::ReportFormat::Json => {
            println!("{}", serde_json::to_string_pretty(&doc)?);
            Ok(0)
        }
        cli::ReportFormat::Html => {
            let dir = match &r.output {
                Some(d) => cwd.join(d),
                None => target_dir.join("gpucheck/report"),
            };
            let index = view::html::write(&doc, &dir)?;
            let findings: usize = checked.iter().map(|c| c.diags.len()).sum();
            eprintln!(
                "    Finished report of {} ({}, {} source files): {}",
                plural(doc.kernels.iter().filter(|k| k.entry).count(), "kernel"),
                plural(findings, "finding"),
                doc.files.len(),
                index.display()
            );
            if r.open && !view::open(&index) {
                eprintln!(
                    "error: the report is written, but no browser opened it ($BROWSER, else xdg-open or gio, failed or was not found): open {} yourself, or set $BROWSER",
                    diagnostic::shell_quote(&index)
                );
                return Ok(2);
            }
            Ok(0)
        }
    }
}

/// Check one unit: analyse its PTX with its launch settings, turn the
/// findings into diagnostics (levels, `// gpucheck: allow` comments in its
/// sources), and say where it came from. `records`: with the per-site
/// records (`--all-accesses`, the HTML report), not its findings alone.
fn check_unit(u: &build::Unit, o: &OutputArgs, levels: &Levels, paths: &PathStyle, records: bool) -> Result<Checked> {
    let k = &u.krate;
    let bytes = std::fs::read(&u.ptx).with_context(|| format!("cannot read PTX `{}`", u.ptx.display()))?;
    // (valid UTF-8 is taken as it is, without the lossy decoder's copy)
    let src = String::from_utf8(bytes).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
    let ptx_display = paths.display(&std::path::absolute(&u.ptx).unwrap_or_else(|_| u.ptx.clone()).to_string_lossy());
    let started = std::time::Instant::now();
    let module = gpucheck_analysis::driver::parse(&src).map_err(|e| anyhow::anyhow!("{ptx_display}:{e}"))?;
    // `// gpucheck: allow(…)` comments and `#[allow(gpucheck::…)]` attributes in the unit's
    // sources: the package's files, and those the PTX's line information names
    // (whether each source file the PTX names is the package's, asked once: three readers below)
    let local: rustc_hash::FxHashSet<&str> = module.files.iter().map(|f| f.path).filter(|f| k.is_local(f)).collect();
    let is_local = |f: &str| local.contains(f);
    let named: Vec<PathBuf> = module.files.iter().filter(|f| is_local(f.path)).map(|f| paths.absolute(f.path)).collect();
    let mut files = match u.kind {
        build::UnitKind::PtxFile => Vec::new(),
        build::UnitKind::Crate | build::UnitKind::PtxWithManifest => suppress::rust_files(&k.root),
    };
    files.extend(named);
    files.sort();
    files.dedup();
    let crate_root = (u.kind != build::UnitKind::PtxFile).then_some(k.src_path.as_path());
    let rust: Vec<PathBuf> = files.iter().filter(|f| f.extension().is_some_and(|e| e == "rs")).cloned().collect();
    let attrs = lint_attrs::Scopes::new(lint_attrs::scan(&rust, crate_root));
    let opts = Options {
        block: o.block(),
        cli_kernel_blocks: o.kernel_blocks().into_iter().collect(),
        kernel_blocks: k.kernel_blocks.clone(),
        package_block: k.block,
        launch_blocks: launch_blocks(k, paths),
        grid: o.grid,
        dynamic_shared: o.shared.map(u64::from),
        kernel_shared: k.kernel_shared_bytes.iter().map(|(n, b)| (n.clone(), *b as u64)).collect(),
        package_shared: k.shared_bytes.map(u64::from),
        kernel_grids: k.kernel_grids.clone(),
        package_grid: k.grid,
        coalescing_threshold: Some(o.coalescing_threshold),
        // the command line's declared values win over the tables'
        values: k.values.iter().map(|(n, v)| (n.clone(), *v)).chain(o.assume.iter().cloned()).collect(),
        kernel_values: k
            .kernel_values
            .iter()
            .map(|(kn, vs)| {
                (kn.clone(), vs.iter().filter(|(n, _)| !o.assume.iter().any(|(a, _)| a == *n)).map(|(n, v)| (n.clone(), *v)).collect())
            })
            .collect(),
        source_names: confirm::launch::source_names(u, &module, paths, &is_local),
        replay: !o.no_replay,
        silent: levels.silent(&|l| attrs.names(l)),
        findings_only: !records,
    };
    let mut report = gpucheck_analysis::check_module(&module, &opts, &is_local);
    drop(local);
    drop(module);
    let status = match u.kind {
        build::UnitKind::PtxFile => format!(
            "    Checking {ptx_display} ({}; {}, {}, {})",
            gpucheck_analysis::producer(&src),
            plural(report.kernels, "kernel"),
            plural(report.functions, "function"),
            plural(report.instructions, "instruction")
        ),
        build::UnitKind::Crate | build::UnitKind::PtxWithManifest => format!(
            "    Checking {} ({}, {} PTX instructions{}) in {:.1?}{}",
            k.name,
            plural(report.kernels, "kernel"),
            report.instructions,
            if report.has_dwarf { "" } else { ", no DWARF inline info" },
            started.elapsed(),
            u.note.as_deref().map(|n| format!("\n        {n}")).unwrap_or_default()
        ),
    };
    // PTX without `.file`/`.loc`: findings can only name PTX lines
    let no_lines = if report.sources.is_empty() && report.functions > 0 {
        "\n        no line information in the PTX: findings point at PTX lines; compile with `nvcc -lineinfo` (or `-G`), `clang -gline-tables-only`, or rustc `-C debuginfo=1` to see source lines"
    } else {
        ""
    };
    // dynamic shared memory no size was given for: not checked, said
    let unsized_shared = match report.unsized_shared.as_slice() {
        [] => String::new(),
        names => format!(
            "\n        dynamic shared memory ({}) is not checked for out-of-bounds or uninitialised reads: pass `--shared BYTES` (or set `shared_bytes` in [package.metadata.gpucheck]), the size the launch gives",
            names.iter().map(|n| format!("`{}`", gpucheck_analysis::names::bare(n))).collect::<Vec<_>>().join(", ")
        ),
    };
    let status = format!("{status}{no_lines}{unsized_shared}{}", replay_summary(&report.findings));
    let hint = if u.kind == build::UnitKind::PtxFile { diagnostic::ShapeHint::Cli } else { diagnostic::ShapeHint::Cargo };
    let diags = prepare(std::mem::take(&mut report.findings), &ptx_display, paths, levels, &attrs, hint);
    let mut sup = suppress::Suppressions::new(suppress::scan_files(&files));
    let display = |p: &Path| paths.display(&p.to_string_lossy());
    let mut diags = sup.apply(diags, &display);
    let unused = attrs.unused();
    diags.extend(prepare(sup.unused(), &ptx_display, paths, levels, &attrs, hint));
    diags.extend(prepare(unused, &ptx_display, paths, levels, &lint_attrs::Scopes::default(), hint));
    diagnostic::sort(&mut diags);
    diagnostic::say_how_to_allow(&mut diags);
    let origin = match u.kind {
        build::UnitKind::PtxFile => {
            let abs = std::path::absolute(&u.ptx).unwrap_or_else(|_| u.ptx.clone());
            Origin {
                package_name: ptx_display.clone(),
                kind: "PTX",
                package_id: format!("path+file://{}", abs.display()),
                manifest_path: abs.to_string_lossy().to_string(),
                target_name: u.ptx.file_stem().map(|s| s.to_string_lossy().to_string()).unwrap_or_default(),
                src_path: abs.to_string_lossy().to_string(),
                edition: "2021".into(),
            }
        }
        build::UnitKind::Crate | build::UnitKind::PtxWithManifest => Origin {
            package_name: k.name.clone(),
            kind: "lib",
            package_id: k.package_id.clone(),
            manifest_path: k.manifest_path.to_string_lossy().to_string(),
            target_name: k.target_name.clone(),
            src_path: k.src_path.to_string_lossy().to_string(),
            edition: k.edition.clone(),
        },
    };
    let mut config_warnings = k.config_warnings.clone();
    for (kernel, [x, y, z]) in &report.unlaunchable {
        config_warnings.push(format!(
            "`.reqntid {x}, {y}, {z}` of kernel `{}` asks for {} threads per block, and a block has at most 1024: no launch can run it; it was checked with another shape (see its notes)",
            gpucheck_analysis::names::bare(kernel),
            *x as u64 * *y as u64 * *z as u64
        ));
    }
    if report.functions == 0 {
        let what = match u.kind {
            build::UnitKind::PtxFile | build::UnitKind::PtxWithManifest => {
                "is it PTX (`.entry` kernels, as `nvcc --ptx` or `clang --cuda-device-only -S` write)?"
            }
            build::UnitKind::Crate => {
                "a Rust kernel is a `#[no_mangle] pub unsafe extern \"ptx-kernel\" fn` in a `#![no_std]` crate (`cargo gpucheck new NAME` writes one)"
            }
        };
        config_warnings.push(format!("no kernels or functions found in `{ptx_display}`: nothing was checked; {what}"));
    } else if report.kernels == 0 && u.kind == build::UnitKind::Crate {
        config_warnings.push(format!(
            "no kernel in `{}`: {} checked on its own, as if a kernel of the block shape given (no launch runs it); a Rust kernel is a `#[no_mangle] pub unsafe extern \"ptx-kernel\" fn`",
            k.name,
            if report.functions == 1 { "its one device function was".to_string() } else { format!("each of its {} device functions was", report.functions) }
        ));
    }
    Ok(Checked { diags, config_warnings, src, origin, status, analysis: report, ptx_display })
}

/// The `[package.metadata.gpucheck.kernels.NAME]` tables that name no
/// kernel of their package, said once per package (on its first unit), as
/// configuration warnings. A unit that could not be checked names no
/// kernel: its package is not judged.
fn unknown_kernels(units: &[build::Unit], checked: &mut [Option<&mut Checked>], paths: &PathStyle, o: &OutputArgs) {
    let broken: Vec<&Path> =
        units.iter().zip(checked.iter()).filter(|(_, c)| c.is_none()).map(|(u, _)| u.krate.manifest_path.as_path()).collect();
    let parts: Vec<config::UnitKernels> = units
        .iter()
        .zip(checked.iter())
        .map(|(u, c)| config::UnitKernels {
            manifest: paths.display(&u.krate.manifest_path.to_string_lossy()),
            meta: u.krate.meta.as_ref().filter(|_| !broken.contains(&u.krate.manifest_path.as_path())),
            names: c
                .as_ref()
                .map(|c| c.analysis.kernel_names.iter().flat_map(|n| gpucheck_analysis::names::aliases(n)).collect())
                .unwrap_or_default(),
        })
        .collect();
    for (i, w) in config::unknown_kernels_by_package(&parts) {
        if let Some(c) = checked[i].as_mut() {
            c.config_warnings.push(w);
        }
    }
    // `--block NAME=…` for a kernel no unit has (said once, with the first unit checked)
    let all: Vec<&str> = parts.iter().flat_map(|p| p.names.iter().map(String::as_str)).collect();
    let unknown: Vec<String> = o.kernel_blocks().into_iter().filter(|(k, _)| !all.contains(&k.as_str())).map(|(k, _)| k).collect();
    if let Some(c) = checked.iter_mut().find_map(|c| c.as_mut()) {
        for k in unknown {
            let hint = gpucheck_analysis::lints::registry::closest_among(&k, all.iter().copied())
                .map(|c| format!("; did you mean `{c}`?"))
                .unwrap_or_default();
            c.config_warnings.push(format!("`--block {k}=…` names no kernel that was checked{hint}"));
        }
    }
}

/// A crate's launch shapes as the analysis takes them (paths as shown).
fn launch_blocks(k: &build::KernelCrate, paths: &PathStyle) -> std::collections::HashMap<String, ([u32; 3], String, u32)> {
    k.launch_blocks.iter().map(|(n, l)| (n.clone(), (l.block, paths.display(&l.file.to_string_lossy()), l.line as u32))).collect()
}

/// What the replays of a unit's findings gave, as a line under its status
/// (empty when none was replayed): none is set aside in silence.
fn replay_summary(findings: &[gpucheck_analysis::Finding]) -> String {
    use gpucheck_analysis::lints::Replay;
    let count = |p: fn(&Replay) -> bool| findings.iter().filter(|f| p(&f.replay)).count();
    let shown = count(|r| matches!(r, Replay::Reproduced { .. }));
    let not = count(|r| matches!(r, Replay::NotReproduced(_)));
    let unable = count(|r| matches!(r, Replay::Unable(_)));
    if shown + not + unable == 0 {
        return String::new();
    }
    let mut parts = vec![format!("{shown} reproduced")];
    if not > 0 {
        parts.push(format!("{not} not reproduced (pedantic: `-W gpucheck::pedantic` shows them)"));
    }
    if unable > 0 {
        parts.push(format!("{unable} not replayed (each says why)"));
    }
    format!("\n        replayed {}: {}", plural(shown + not + unable, "correctness finding"), parts.join(", "))
}

fn plural(n: usize, word: &str) -> String {
    format!("{n} {word}{}", if n == 1 { "" } else { "s" })
}
