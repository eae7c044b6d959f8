//! Command-line interface: `cargo gpucheck [OPTIONS]` and
//! `cargo gpucheck ptx FILE…`, parsed with clap.
//!
//! Owns: flags, their help text and value parsing (`--block X,Y,Z`).
//! Does not own: what the commands do (see `main`).

use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

/// The command line parsed.
///
/// `cargo gpucheck ptx FILE… [OPTIONS]` is first parsed with a tree of that
/// one subcommand ([`ptx_alone`]): clap copies every global option into
/// every subcommand before it parses (about 90 KB and 150,000
/// instructions, a tenth of a one-kernel file's check, most of it in page
/// faults). Any other command line, and one that tree does not accept, is
/// parsed with the whole tree, so that every error and help text is the
/// whole tree's.
pub fn parse(args: Vec<std::ffi::OsString>) -> Result<Cargo, clap::Error> {
    use clap::{CommandFactory, FromArgMatches};
    if let Some(c) = ptx_alone(&args) {
        return Ok(c);
    }
    let mut cmd = Cargo::command();
    let m = cmd.try_get_matches_from_mut(args)?;
    Cargo::from_arg_matches(&m).map_err(|e| e.format(&mut cmd))
}

/// The command line parsed with [`PtxOnly`], when it names `ptx` and no
/// other subcommand (as any argument at all), asks for neither help nor
/// the version, and gives the check's options after `ptx` (where the whole
/// tree copies them to the level above: given before it, they are the
/// whole tree's to parse); `None` for any other.
fn ptx_alone(args: &[std::ffi::OsString]) -> Option<Cargo> {
    use clap::{CommandFactory, FromArgMatches};
    if !names_ptx_alone(args) {
        return None;
    }
    let mut m = PtxOnly::command().try_get_matches_from(args.iter()).ok()?;
    let PtxOnly::Gpucheck(GpucheckPtxArgs { command: Some(PtxCommand::Ptx(p)), build }) = PtxOnly::from_arg_matches_mut(&mut m).ok()?
    else {
        return None;
    };
    Some(Cargo::Gpucheck(GpucheckArgs { output: p.output.clone(), command: Some(Command::Ptx(p)), build }))
}

/// Whether the arguments after `gpucheck` name `ptx` and no other
/// subcommand (as any argument at all), and ask for neither help nor the
/// version.
fn names_ptx_alone(args: &[std::ffi::OsString]) -> bool {
    let mut ptx = false;
    for a in args.iter().skip(2).filter_map(|a| a.to_str()) {
        if a == "ptx" {
            ptx = true;
        } else if NOT_PTX.contains(&a) || ["-h", "--help", "-V", "--version"].contains(&a) {
            return false;
        }
    }
    ptx
}

/// The subcommands besides `ptx` (clap's own `help` too).
const NOT_PTX: [&str; 7] = ["confirm", "report", "instrument", "new", "lints", "explain", "help"];

/// [`Cargo`] with `ptx` its only subcommand, and none of the check's
/// options before it (see [`ptx_alone`]).
#[derive(Parser, Debug)]
#[command(name = "cargo", bin_name = "cargo")]
enum PtxOnly {
    Gpucheck(GpucheckPtxArgs),
}

#[derive(Args, Debug)]
struct GpucheckPtxArgs {
    #[command(subcommand)]
    command: Option<PtxCommand>,
    #[command(flatten)]
    build: BuildArgs,
}

#[derive(Subcommand, Debug)]
enum PtxCommand {
    Ptx(PtxArgs),
}

#[derive(Parser, Debug)]
#[command(name = "cargo", bin_name = "cargo", styles = clap::builder::Styles::styled())]
pub enum Cargo {
    /// Static analysis of GPU kernels: uncoalesced accesses, bank conflicts, divergent branches, barrier divergence, data races, reported at Rust lines.
    #[command(version, long_about = LONG_ABOUT)]
    Gpucheck(GpucheckArgs),
}

const LONG_ABOUT: &str = "cargo gpucheck builds the GPU kernel crates of a workspace to PTX (rustc's nvptx64-nvidia-cuda target, with debug info), analyses the PTX statically, and prints rustc-style warnings at the Rust line that causes an uncoalesced global access, a shared-memory bank conflict, a divergent branch, a barrier that not every thread reaches, or a data race within a block (and, with -W pedantic, misaligned rows, data-dependent addresses and reuse worth staging in shared memory).

Kernel crates are the workspace packages with a [package.metadata.gpucheck] table, or those named with -p; Rust-CUDA host crates (a `cuda_builder` build-dependency) are built with rustc_codegen_nvvm through cargo-gpucheck as RUSTC_WRAPPER. `cargo gpucheck ptx FILE...` checks PTX from any producer (nvcc, clang, NVVM, Numba, Triton) instead. `cargo gpucheck confirm` runs kernels (on the built-in PTX interpreter or a real GPU) and compares what they do with the predictions.

Lint levels come from the defaults, then [workspace.metadata.gpucheck.lints], then [package.metadata.gpucheck.lints], then -A/-W/-D/-F on the command line (last wins). `#[allow(gpucheck::NAME)]` (or `expect`, `warn`, `deny`, `forbid`) on a statement or a kernel's `fn` sets the level there, as clippy's do (the crate root needs `#![feature(register_tool)]` and `#![register_tool(gpucheck)]`); `// gpucheck: allow(NAME)` on a finding's line or the line above it (or on a kernel's `fn` line) suppresses it. `cargo gpucheck lints` lists the lints; `cargo gpucheck explain NAME` explains one; `cargo gpucheck new NAME` writes a kernel crate to start from.

Exit status: 0 no error-level finding; 1 error-level findings; 2 the check could not be done (bad input, build failure).";

#[derive(Args, Debug)]
pub struct GpucheckArgs {
    #[command(subcommand)]
    pub command: Option<Command>,
    #[command(flatten)]
    pub build: BuildArgs,
    #[command(flatten)]
    pub output: OutputArgs,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Check PTX files from any producer (no build).
    Ptx(PtxArgs),
    /// Run kernels with generated inputs and compare what they do with the predictions (sectors per request, bank conflicts, branch splits, races).
    Confirm(ConfirmArgs),
    /// Write a static HTML report: per kernel its shape, coverage, findings, bytes moved per request and branches; per source file every line with an access, branch, barrier or race, coloured by its cost (green at ideal, red at 8× or more). Opens from file:// (no server, no network).
    Report(ReportArgs),
    /// Write the instrumented copy of a PTX file that `confirm --engine cuda` loads (sector and bank-conflict counters per access site, DWARF sections dropped), to check it with ptxas or read it.
    Instrument {
        /// PTX file to instrument.
        #[arg(value_name = "FILE")]
        file: PathBuf,
        /// Retarget to this architecture, e.g. `sm_90` (raises `.version` as needed).
        #[arg(long = "arch", value_name = "SM", value_parser = parse_arch)]
        arch: Option<String>,
        /// Where to write it (default: stdout).
        #[arg(short, long, value_name = "OUT")]
        output: Option<PathBuf>,
    },
    /// Write a new kernel crate that builds and checks as it is: Cargo.toml with a [package.metadata.gpucheck] launch table, the pinned nightly toolchain file, .cargo/config.toml for rust-analyzer, and two kernels (saxpy, and a block sum through shared memory).
    New {
        /// Package name.
        #[arg(value_name = "NAME")]
        name: String,
        /// Folder to create (default: ./NAME); it must not exist or be empty.
        #[arg(long, value_name = "DIR")]
        path: Option<PathBuf>,
    },
    /// List the lints: name, group, default level, summary.
    Lints {
        /// Print the list as the markdown table of the README.
        #[arg(long)]
        markdown: bool,
    },
    /// Explain a lint: what it finds, why it matters, a bad and a good kernel.
    Explain {
        /// Lint name, with or without `gpucheck::`.
        name: String,
    },
}

#[derive(Args, Debug)]
pub struct ReportArgs {
    #[command(flatten)]
    pub build: BuildArgs,
    /// Report on this PTX file (from any producer) instead of building the package; repeatable. Launch settings for --confirm come from --grid/--block/--arg, `.reqntid` and the [package.metadata.gpucheck] table of --manifest-path when one is given.
    #[arg(long = "ptx", value_name = "FILE")]
    pub ptx: Vec<PathBuf>,
    /// Folder to write the report into (index.html, one page per source file, style.css, report.js); default: <target-dir>/gpucheck/report (`./target` or CARGO_TARGET_DIR for --ptx without a workspace).
    #[arg(short = 'o', long = "output", value_name = "DIR")]
    pub output: Option<PathBuf>,
    /// Open index.html in the browser when written ($BROWSER, else xdg-open / open).
    #[arg(long)]
    pub open: bool,
    /// Also run the kernels on the CPU engine (as `cargo gpucheck confirm`: those with a launch configuration, or those named with --kernel) and show what each run observed beside the predictions, mismatches highlighted.
    #[arg(long)]
    pub confirm: bool,
    /// With --confirm: kernel(s) to run (default: those with a `grid` in Cargo.toml; every kernel of a --ptx file without a manifest).
    #[arg(long = "kernel", value_name = "NAME", requires = "confirm")]
    pub kernels: Vec<String>,
    /// With --confirm: a kernel argument, as for `confirm --arg` (`x=f32[1048576]`, `n=1048576`). Repeatable.
    #[arg(long = "arg", value_name = "NAME=VALUE", requires = "confirm")]
    pub args: Vec<String>,
    /// `html`: write the report's pages into the folder; `json`: print the same data as one JSON document on stdout (nothing written).
    #[arg(long, value_enum, default_value_t = ReportFormat::Html, value_name = "FMT")]
    pub format: ReportFormat,
}

#[derive(ValueEnum, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ReportFormat {
    #[default]
    Html,
    Json,
}

#[derive(Args, Debug)]
pub struct PtxArgs {
    /// PTX files to check.
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// Hide the status line of each file.
    #[arg(short, long)]
    pub quiet: bool,
    #[command(flatten)]
    pub output: OutputArgs,
}

#[derive(Args, Debug)]
pub struct ConfirmArgs {
    #[command(flatten)]
    pub build: BuildArgs,
    /// Run the kernels of this PTX file (from any producer) instead of building the package; repeatable. Launch settings come from --grid/--block/--arg and `.reqntid`, and from the [package.metadata.gpucheck] table of --manifest-path when one is given (read without cargo). Without --kernel, every kernel of the file runs.
    #[arg(long = "ptx", value_name = "FILE")]
    pub ptx: Vec<PathBuf>,
    /// Kernel(s) to run, by the name in the PTX, demangled, or as the source names it (a C++ kernel's unqualified name) (default: those with a `grid` in [package.metadata.gpucheck] or [package.metadata.gpucheck.kernels.NAME]).
    #[arg(long = "kernel", value_name = "NAME")]
    pub kernels: Vec<String>,
    /// Set from the global `--grid` (the launch's grid shape, wins over Cargo.toml; default 1 block).
    #[arg(skip)]
    pub grid: Option<[u32; 3]>,
    /// A kernel argument by Rust parameter name, PTX parameter name or index: a buffer `x=f32[1048576]` (seeded random; `:iota`, `:zero`, `:ones` to choose) or a scalar `n=1048576`, `a=2.5`. Repeatable; wins over `args` in Cargo.toml.
    #[arg(long = "arg", value_name = "NAME=VALUE")]
    pub args: Vec<String>,
    /// Where to run: `cpu` (the built-in PTX interpreter, everywhere), `cuda` (a real NVIDIA GPU through the CUDA driver, loaded at run time), or `cuda-on-cpu` (the CUDA engine's instrumented PTX on the interpreter).
    #[arg(long, value_enum, default_value_t = Engine::Cpu, value_name = "ENGINE")]
    pub engine: Engine,
    /// Instructions each thread may execute before the CPU engine stops the run as an endless loop, naming the PTX line it was at.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_STEPS, value_parser = clap::value_parser!(u64).range(1..))]
    pub max_steps: u64,
    /// Seconds a CPU-engine launch may take; one still running then, or whose first blocks say the whole grid would take longer, stops and says how long it would take. With `--engine cuda`: seconds a kernel's process (its two runs on the GPU) may take before it is stopped (0: no limit).
    #[arg(long, value_name = "SECONDS", default_value_t = DEFAULT_TIME_LIMIT)]
    pub time_limit: u64,
    /// Set from the global `--block` (the launch's block shape, wins over Cargo.toml).
    #[arg(skip)]
    pub block: Option<[u32; 3]>,
    /// Set from the global `--block NAME=X,Y,Z` (one kernel's block shape, wins over `block`).
    #[arg(skip)]
    pub kernel_blocks: Vec<(String, [u32; 3])>,
    /// Set from the global `--shared` (bytes of dynamic shared memory the launch gives).
    #[arg(skip)]
    pub shared: Option<u32>,
    /// Set from the global `--message-format` (`json` prints `gpucheck-confirm` records).
    #[arg(skip)]
    pub message_format: MessageFormat,
}

#[derive(ValueEnum, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Engine {
    /// The built-in PTX interpreter.
    #[default]
    Cpu,
    /// A real NVIDIA GPU: instrumented PTX through the CUDA driver.
    Cuda,
    /// The CUDA engine's instrumented PTX run on the interpreter: its counters must match `cpu` (checks the instrumentation without a GPU).
    CudaOnCpu,
}

impl Engine {
    pub fn name(self) -> &'static str {
        match self {
            Engine::Cpu => "cpu",
            Engine::Cuda => "cuda",
            Engine::CudaOnCpu => "cuda-on-cpu",
        }
    }
}

/// The subcommands that take none of the check's options: their help
/// lists only their own (clap would list the global ones too).
const OWN_OPTIONS_ONLY: [&str; 4] = ["new", "lints", "explain", "instrument"];

/// The help text of `cargo gpucheck SUB -h/--help` (or `help SUB`) for a
/// subcommand of [`OWN_OPTIONS_ONLY`], from its definition before clap
/// propagates the global options into it; `None` for anything else.
/// `args`: the arguments after `gpucheck`.
pub fn own_help(args: &[String], color: bool) -> Option<String> {
    use clap::CommandFactory;
    let (sub, long) = match args {
        [h, sub, ..] if h == "help" => (sub.as_str(), true),
        [sub, rest @ ..] => {
            let rest = rest.split(|a| a == "--").next().unwrap_or_default();
            let long = rest.iter().any(|a| a == "--help");
            (long || rest.iter().any(|a| a == "-h")).then_some((sub.as_str(), long))?
        }
        _ => return None,
    };
    if !OWN_OPTIONS_ONLY.contains(&sub) {
        return None;
    }
    let top = Cargo::command();
    let mut cmd = top.find_subcommand("gpucheck")?.find_subcommand(sub)?.clone().bin_name(format!("cargo gpucheck {sub}"));
    let text = if long { cmd.render_long_help() } else { cmd.render_help() };
    Some(if color { text.ansi().to_string() } else { text.to_string() })
}

/// The architectures ptxas knows (`sm_NN`, optionally with `a` or `f`).
pub const ARCHS: [u32; 20] = [50, 52, 53, 60, 61, 62, 70, 72, 75, 80, 86, 87, 89, 90, 100, 101, 103, 110, 120, 121];

/// `sm_NN`, `sm_NNa` or `sm_NNf` for a known `NN` ([`ARCHS`]).
fn parse_arch(s: &str) -> Result<String, String> {
    let known = || ARCHS.iter().map(|a| format!("sm_{a}")).collect::<Vec<_>>().join(", ");
    let n = s.strip_prefix("sm_").map(|r| r.strip_suffix(['a', 'f']).unwrap_or(r));
    match n.and_then(|n| n.parse::<u32>().ok()) {
        Some(v) if ARCHS.contains(&v) => Ok(s.to_string()),
        _ => Err(format!("`{s}` is not a GPU architecture ptxas knows: expected `sm_NN` such as `sm_80` or `sm_90a` (known: {})", known())),
    }
}

/// CUDA's largest grid: 2³¹−1 blocks along x, 65,535 along y and z.
pub const MAX_GRID: [u64; 3] = [(1 << 31) - 1, 65_535, 65_535];

/// CUDA's largest block: 1,024 threads along x and y, 64 along z (and
/// 1,024 in all).
pub const MAX_BLOCK: [u64; 3] = [1024, 1024, 64];

/// One dimension (`axis`) of a `--grid` or `--block` (`what`), at least 1
/// and at most `max`.
fn dimension(p: &str, what: &str, axis: usize, max: u64, example: &str) -> Result<u32, String> {
    let name = ["x", "y", "z"][axis];
    let too_large = || format!("`{p}` is too large for the {what}'s {name}: CUDA allows at most {max}");
    match p.parse::<u64>() {
        Ok(0) => Err(format!("{what} dimensions must be at least 1")),
        Ok(v) if v > max => Err(too_large()),
        Ok(v) => Ok(v as u32),
        Err(_) if !p.is_empty() && p.bytes().all(|c| c.is_ascii_digit()) => Err(too_large()),
        Err(_) => Err(format!("`{p}` is not a positive number (expected X,Y,Z such as `{example}`)")),
    }
}

/// `confirm --max-steps`: instructions per thread (2²⁴: a second or two
/// of an endless loop in one warp).
pub const DEFAULT_MAX_STEPS: u64 = 1 << 24;

/// `confirm --time-limit`, seconds.
pub const DEFAULT_TIME_LIMIT: u64 = 60;

/// One `--block`: for every kernel, or for the kernel named.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlockArg {
    pub kernel: Option<String>,
    pub block: [u32; 3],
}

/// `X,Y,Z` ([`parse_block`]) or `NAME=X,Y,Z`.
pub fn parse_block_arg(s: &str) -> Result<BlockArg, String> {
    match s.split_once('=') {
        Some((name, b)) => {
            let name = name.trim();
            if name.is_empty() {
                return Err(format!("expected a kernel name before `=` (`transpose=32,8`), found `{s}`"));
            }
            Ok(BlockArg { kernel: Some(name.to_string()), block: parse_block(b).map_err(|e| format!("{e} (for kernel `{name}`)"))? })
        }
        None => Ok(BlockArg { kernel: None, block: parse_block(s)? }),
    }
}

impl OutputArgs {
    /// The block shape `--block X,Y,Z` gives every kernel (the last one given).
    pub fn block(&self) -> Option<[u32; 3]> {
        self.blocks.iter().rev().find(|b| b.kernel.is_none()).map(|b| b.block)
    }

    /// The shapes `--block NAME=X,Y,Z` gives single kernels (a later one for a name wins).
    pub fn kernel_blocks(&self) -> Vec<(String, [u32; 3])> {
        let mut out: Vec<(String, [u32; 3])> = Vec::new();
        for b in &self.blocks {
            if let Some(k) = &b.kernel {
                out.retain(|(n, _)| n != k);
                out.push((k.clone(), b.block));
            }
        }
        out
    }
}

/// `X`, `X,Y` or `X,Y,Z`, each ≥ 1 and within CUDA's limits ([`MAX_GRID`]).
fn parse_grid(s: &str) -> Result<[u32; 3], String> {
    let parts: Vec<&str> = s.split(',').map(str::trim).collect();
    if parts.is_empty() || parts.len() > 3 {
        return Err(format!("expected 1 to 3 comma-separated numbers such as `4096` or `64,64`, found `{s}`"));
    }
    let mut g = [1u32; 3];
    for (i, p) in parts.iter().enumerate() {
        g[i] = dimension(p, "grid", i, MAX_GRID[i], "4096,1,1")?;
    }
    Ok(g)
}

#[derive(Args, Debug, Default)]
pub struct BuildArgs {
    /// Path to Cargo.toml of the workspace or package to check.
    #[arg(long, value_name = "PATH")]
    pub manifest_path: Option<PathBuf>,
    /// Kernel package(s) to check (default: every workspace package with [package.metadata.gpucheck], every Rust-CUDA host crate, every package whose build script compiles CUDA C, and every package that depends on cudarc, for the CUDA C its Rust code hands to NVRTC).
    #[arg(short = 'p', long = "package", value_name = "SPEC")]
    pub packages: Vec<String>,
    /// Check every kernel crate of the workspace, also from inside one member package's folder (there, by default, that package only when it is a kernel crate, as cargo and clippy do).
    #[arg(long)]
    pub workspace: bool,
    /// Hide cargo's build output (progress and compiler warnings; the compiler's errors are shown).
    #[arg(short, long)]
    pub quiet: bool,
    /// How to build kernels (default: detected per package; a package with a `cuda_builder` build-dependency is a Rust-CUDA host crate built with `nvvm`; one whose build script compiles CUDA C (a `bindgen_cuda` or `cudaforge` build-dependency, or `nvcc` in build.rs) is `build-script`: its build script runs and the PTX it writes into OUT_DIR is checked; one that depends on cudarc without a [package.metadata.gpucheck] table is `nvrtc`: the CUDA C its Rust code hands to compile_ptx is compiled with NVRTC and checked; others use rustc's `nvptx` target).
    #[arg(long, value_enum, value_name = "BACKEND")]
    pub backend: Option<crate::build::Backend>,
    /// Build at most N crates at once (passed to cargo as `-j N`; default: cargo's, the number of CPUs).
    #[arg(short = 'j', long = "jobs", value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub jobs: Option<u32>,
}

#[derive(Args, Debug, Default, Clone)]
pub struct OutputArgs {
    /// Set lint(s) or group(s) to allow; later flags win. Groups: `correctness`, `perf`, `pedantic`, `all` (every lint that is not pedantic); `warnings` is every lint at warn level, as in rustc (`-A warnings` hides them all).
    #[arg(short = 'A', value_name = "LINT", global = true, action = clap::ArgAction::Append)]
    pub allow: Vec<String>,
    /// Set lint(s) or group(s) to warn.
    #[arg(short = 'W', value_name = "LINT", global = true, action = clap::ArgAction::Append)]
    pub warn: Vec<String>,
    /// Set lint(s) or group(s) to deny (reported as errors; exit status 1). `-D warnings` makes every finding that would be a warning an error (pedantic lints stay off unless enabled): the CI setting.
    #[arg(short = 'D', value_name = "LINT", global = true, action = clap::ArgAction::Append)]
    pub deny: Vec<String>,
    /// Set lint(s) or group(s) to forbid (deny, and no `// gpucheck: allow` or later flag can lower it).
    #[arg(short = 'F', value_name = "LINT", global = true, action = clap::ArgAction::Append)]
    pub forbid: Vec<String>,
    /// Report a global access when its predicted sectors per warp request reach this multiple of the ideal.
    #[arg(long, value_name = "RATIO", default_value_t = 2.0, value_parser = parse_threshold, global = true)]
    pub coalescing_threshold: f64,
    /// With `--message-format json`: also print one `gpucheck-access` record per memory access site, reported or not, and one `gpucheck-coverage` record per function: its memory instructions by category, with every site not analysed (and every one analysed as global by assumption).
    #[arg(long, global = true)]
    pub all_accesses: bool,
    /// When to colour the output (`auto`: on a terminal; CARGO_TERM_COLOR and NO_COLOR are honoured).
    #[arg(long, value_enum, default_value_t = ColorChoice::Auto, value_name = "WHEN", global = true)]
    pub color: ColorChoice,
    /// Block shape for every kernel, e.g. `256` or `32,8,1`, or for one kernel, `NAME=X,Y,Z` (its Rust, PTX or C++ source name: `transpose=32,8`); repeatable, a named shape wins over an unnamed one, and both over Cargo.toml metadata and .reqntid.
    #[arg(long = "block", value_name = "[NAME=]X,Y,Z", value_parser = parse_block_arg, global = true, action = clap::ArgAction::Append)]
    pub blocks: Vec<BlockArg>,
    /// Grid shape for every kernel, e.g. `4096` or `64,64,1` (wins over Cargo.toml metadata): the launch `confirm` runs, and the grid `grid_memory_race` checks (without one: two blocks or more along each dimension a kernel reads blockIdx in).
    #[arg(long, value_name = "X,Y,Z", value_parser = parse_grid, global = true)]
    pub grid: Option<[u32; 3]>,
    /// Bytes of dynamic shared memory (`extern __shared__` arrays) the launch gives every kernel: `shared_out_of_bounds` checks those arrays against it, `uninitialized_shared_read` judges them, and `confirm` allocates it (without it, dynamic arrays are not checked and have no memory in a run).
    #[arg(long, value_name = "BYTES", value_parser = clap::value_parser!(u32).range(1..=(gpucheck_analysis::interp::MAX_SHARED_BYTES as i64)), global = true)]
    pub shared: Option<u32>,
    /// A value the kernels are launched with for a scalar parameter, by Rust or PTX parameter name or index (`n=1000`; repeatable; for every kernel that has such a parameter, and wins over `assume` in Cargo.toml): the analysis takes it as the launch's instead of sampling it, so findings that needed a sample hold (or vanish) for it.
    #[arg(long = "assume", value_name = "NAME=VALUE", value_parser = parse_assume, global = true, action = clap::ArgAction::Append)]
    pub assume: Vec<(String, i64)>,
    /// Do not replay correctness findings. By default each race and barrier finding's witness (its blocks, the parameter values it names, zero-filled buffers) is run on the interpreter before it is reported: one the run does not show is reported only as a pedantic finding (`-W gpucheck::pedantic`), saying so; one that cannot be run says why in a note.
    #[arg(long, global = true)]
    pub no_replay: bool,
    /// Output format: rustc-style text, cargo's JSON messages (one per line) for editors, or SARIF 2.1.0 for code-scanning UIs.
    #[arg(long, value_enum, default_value_t = MessageFormat::Human, value_name = "FMT", global = true)]
    pub message_format: MessageFormat,
}

#[derive(ValueEnum, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum MessageFormat {
    #[default]
    Human,
    Json,
    Sarif,
}

#[derive(ValueEnum, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ColorChoice {
    #[default]
    Auto,
    Always,
    Never,
}

/// `NAME=VALUE` with an integer value.
fn parse_assume(s: &str) -> Result<(String, i64), String> {
    let (name, value) = s.split_once('=').ok_or_else(|| format!("expected NAME=VALUE such as `n=1000`, found `{s}`"))?;
    let v = value.trim().parse::<i64>().map_err(|_| format!("`{}` in `{s}` is not an integer", value.trim()))?;
    if name.trim().is_empty() {
        return Err(format!("expected NAME=VALUE such as `n=1000`, found `{s}`"));
    }
    Ok((name.trim().to_string(), v))
}

fn parse_threshold(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v >= 1.0 && v.is_finite() => Ok(v),
        _ => Err(format!("expected a ratio of at least 1.0 such as `2` or `1.5`, found `{s}`")),
    }
}

/// `X`, `X,Y` or `X,Y,Z`, each ≥ 1 and within CUDA's limits ([`MAX_BLOCK`]),
/// at most 1024 threads in all.
pub fn parse_block(s: &str) -> Result<[u32; 3], String> {
    let parts: Vec<&str> = s.split(',').map(str::trim).collect();
    if parts.is_empty() || parts.len() > 3 {
        return Err(format!("expected 1 to 3 comma-separated numbers such as `256` or `32,8,1`, found `{s}`"));
    }
    let mut b = [1u32; 3];
    for (i, p) in parts.iter().enumerate() {
        b[i] = dimension(p, "block", i, MAX_BLOCK[i], "32,8,1")?;
    }
    let total: u64 = b.iter().map(|&x| x as u64).product();
    if total > 1024 {
        return Err(format!("a block has at most 1024 threads; {}×{}×{} = {total}", b[0], b[1], b[2]));
    }
    Ok(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The one-subcommand tree knows every other subcommand's name, and
    /// parses what the whole tree parses as the whole tree does.
    #[test]
    fn ptx_alone_is_the_whole_tree_on_its_command_lines() {
        use clap::CommandFactory;
        let top = Cargo::command();
        let mut names: Vec<String> = top.find_subcommand("gpucheck").unwrap().get_subcommands().map(|c| c.get_name().to_string()).collect();
        names.push("help".into());
        names.retain(|n| n != "ptx");
        names.sort();
        let mut known: Vec<String> = NOT_PTX.iter().map(|s| s.to_string()).collect();
        known.sort();
        assert_eq!(names, known);
        let line = |s: &str| -> Vec<std::ffi::OsString> { s.split(' ').map(Into::into).collect() };
        // (the first ones on the one-subcommand tree, the others on the whole tree)
        for (ok, alone) in [
            ("cargo gpucheck ptx a.ptx --message-format json", true),
            ("cargo gpucheck ptx a.ptx b.ptx -q -W pedantic --block 32,8 -D warnings --assume n=4 --block k=64", true),
            ("cargo gpucheck --manifest-path x/Cargo.toml ptx --shared 64 a.ptx --color never --no-replay", true),
            ("cargo gpucheck -W pedantic --block 32,8 ptx a.ptx b.ptx -q -D warnings --assume n=4", false),
            ("cargo gpucheck --grid 4 ptx --shared 64 a.ptx", false),
            ("cargo gpucheck -p ptx", false),
        ] {
            assert_eq!(ptx_alone(&line(ok)).is_some(), alone, "{ok}");
            let (a, b) = (parse(line(ok)).unwrap(), Cargo::try_parse_from(line(ok)).unwrap());
            assert_eq!(format!("{a:?}"), format!("{b:?}"), "{ok}");
        }
        for not_alone in
            ["cargo gpucheck ptx --help", "cargo gpucheck confirm --ptx a.ptx", "cargo gpucheck --version ptx", "cargo gpucheck lints"]
        {
            assert!(!names_ptx_alone(&line(not_alone)), "{not_alone}");
        }
        // an error is the whole tree's
        for bad in ["cargo gpucheck ptx", "cargo gpucheck ptx a.ptx --bogus", "cargo gpucheck confrim ptx a.ptx"] {
            let (a, b) = (parse(line(bad)).unwrap_err(), Cargo::try_parse_from(line(bad)).unwrap_err());
            assert_eq!(a.to_string(), b.to_string(), "{bad}");
        }
    }

    #[test]
    fn block_args() {
        assert_eq!(parse_block_arg("32,8"), Ok(BlockArg { kernel: None, block: [32, 8, 1] }));
        assert_eq!(parse_block_arg("transpose=32,8"), Ok(BlockArg { kernel: Some("transpose".into()), block: [32, 8, 1] }));
        assert!(parse_block_arg("=32").unwrap_err().contains("kernel name"));
        assert!(parse_block_arg("k=64,64").unwrap_err().contains("for kernel `k`"));
        let o = OutputArgs {
            blocks: ["k=64", "128", "k=32", "256"].iter().map(|s| parse_block_arg(s).unwrap()).collect(),
            ..Default::default()
        };
        assert_eq!(o.block(), Some([256, 1, 1]));
        assert_eq!(o.kernel_blocks(), vec![("k".to_string(), [32, 1, 1])]);
    }

    #[test]
    fn block_values() {
        assert_eq!(parse_block("256"), Ok([256, 1, 1]));
        assert_eq!(parse_block("32, 8"), Ok([32, 8, 1]));
        assert!(parse_block("0").is_err());
        assert!(parse_block("64,64").unwrap_err().contains("1024"));
        assert!(parse_block("a").is_err());
        assert!(parse_block("1,2,3,4").is_err());
        // too large is said as too large, with CUDA's limit
        assert_eq!(parse_block("99999999999"), Err("`99999999999` is too large for the block's x: CUDA allows at most 1024".into()));
        assert_eq!(parse_block("1,1,128"), Err("`128` is too large for the block's z: CUDA allows at most 64".into()));
        assert!(parse_block("-3").unwrap_err().contains("is not a positive number"));
    }

    #[test]
    fn arch_values() {
        assert_eq!(parse_arch("sm_90a"), Ok("sm_90a".to_string()));
        assert_eq!(parse_arch("sm_70"), Ok("sm_70".to_string()));
        for bad in ["sm_xx", "sm_81", "compute_80", "90", "sm_"] {
            assert!(parse_arch(bad).unwrap_err().contains("is not a GPU architecture ptxas knows"), "{bad}");
        }
    }

    #[test]
    fn grid_values() {
        assert_eq!(parse_grid("64,64"), Ok([64, 64, 1]));
        assert_eq!(parse_grid("2147483647"), Ok([2147483647, 1, 1]));
        assert_eq!(parse_grid("0"), Err("grid dimensions must be at least 1".into()));
        assert_eq!(
            parse_grid("4294967295,4294967295,65535"),
            Err("`4294967295` is too large for the grid's x: CUDA allows at most 2147483647".into())
        );
        assert_eq!(parse_grid("1,65536"), Err("`65536` is too large for the grid's y: CUDA allows at most 65535".into()));
        assert!(parse_grid("x").unwrap_err().contains("is not a positive number"));
    }
}
