//! `cargo gpucheck`: clippy for GPU kernels.
//!
//! Owns: the commands (check a workspace's kernel crates, check PTX files),
//! their exit status (0 clean or warnings only, 1 error-level findings, 2 the
//! check could not be done), and wiring build → analysis → report. Does not
//! own: analysis (`gpucheck-analysis`), builds (`build`), rendering (`report`).

mod build;
mod cli;
mod diagnostic;
mod report;

use anyhow::{Context, Result};
use clap::Parser;
use cli::{Cargo, Command, MessageFormat, OutputArgs};
use diagnostic::{prepare, Diagnostic, PathStyle};
use gpucheck_analysis::{Level, Options};
use report::Origin;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};

fn main() {
    let code = match run() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {e:#}");
            2
        }
    };
    std::process::exit(code);
}

fn run() -> Result<i32> {
    let mut args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    // `cargo gpucheck …` passes `gpucheck` first; accept `cargo-gpucheck …` too
    if args.get(1).is_none_or(|a| a != "gpucheck") {
        args.insert(1, "gpucheck".into());
    }
    let Cargo::Gpucheck(a) = match Cargo::try_parse_from(args) {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return Ok(if e.use_stderr() { 2 } else { 0 });
        }
    };
    match a.command {
        Some(Command::Ptx(p)) => {
            let out = merge(&a.output, &p.output);
            check_ptx_files(&p.files, &out)
        }
        None => check_workspace(&a.build, &a.output),
    }
}

/// Options given before or after the `ptx` subcommand.
fn merge(outer: &OutputArgs, inner: &OutputArgs) -> OutputArgs {
    OutputArgs {
        block: inner.block.or(outer.block),
        message_format: if inner.message_format != MessageFormat::Human { inner.message_format } else { outer.message_format },
    }
}

fn color() -> bool {
    if std::env::var_os("NO_COLOR").is_some() {
        return false;
    }
    match std::env::var("CARGO_TERM_COLOR").as_deref() {
        Ok("always") => true,
        Ok("never") => false,
        _ => std::io::stderr().is_terminal(),
    }
}

/// Print diagnostics; return how many are errors.
fn emit(diags: &[Diagnostic], ptx_src: &str, origin: &Origin, fmt: MessageFormat) -> usize {
    let color = fmt == MessageFormat::Human && color();
    let ptx_src = report::human::SourceText::new(ptx_src);
    let ptx_src = &ptx_src;
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    for d in diags {
        match fmt {
            MessageFormat::Human => eprintln!("{}\n", report::human::render(d, ptx_src, color)),
            MessageFormat::Json => {
                let rendered = report::human::render(d, ptx_src, false);
                let _ = writeln!(out, "{}", report::json::message(d, origin, &format!("{rendered}\n")));
            }
        }
    }
    if fmt == MessageFormat::Human {
        if let Some(s) = report::human::summary(&origin.package_name, "lib", diags) {
            eprintln!("{s}");
        }
    }
    diags.iter().filter(|d| d.level == Level::Deny).count()
}

fn plural(n: usize, word: &str) -> String {
    format!("{n} {word}{}", if n == 1 { "" } else { "s" })
}

fn finish(fmt: MessageFormat, errors: usize) -> i32 {
    if fmt == MessageFormat::Json {
        println!("{}", report::json::build_finished(errors == 0));
    }
    if errors > 0 {
        1
    } else {
        0
    }
}

fn check_workspace(b: &cli::BuildArgs, o: &OutputArgs) -> Result<i32> {
    let meta = build::metadata(b.manifest_path.as_deref())?;
    let ws = build::workspace(&meta, &b.packages)?;
    let target_dir = ws.target_dir.join("gpucheck");
    let paths = PathStyle { root: ws.root.clone() };
    let mut errors = 0;
    for k in &ws.kernels {
        let ptx_path = match build::nvptx::build(k, &target_dir, b.quiet) {
            Ok(p) => p,
            Err(e) => {
                eprintln!("error: {e:#}");
                if o.message_format == MessageFormat::Json {
                    println!("{}", report::json::build_finished(false));
                }
                return Ok(2);
            }
        };
        let src = std::fs::read_to_string(&ptx_path).with_context(|| format!("reading PTX `{}`", ptx_path.display()))?;
        let opts = Options { block: o.block, kernel_blocks: k.kernel_blocks.clone(), package_block: k.block };
        let root = k.root.clone();
        let is_local = move |f: &str| {
            let p = Path::new(f);
            if p.is_absolute() {
                p.starts_with(&root)
            } else {
                root.join(p).exists()
            }
        };
        let started = std::time::Instant::now();
        let report = gpucheck_analysis::check(&src, &opts, &is_local).map_err(|e| anyhow::anyhow!("{}:{e}", ptx_path.display()))?;
        if !b.quiet && o.message_format == MessageFormat::Human {
            eprintln!(
                "    Checking {} ({} kernel{}, {} PTX instructions{}) in {:.1?}",
                k.name,
                report.kernels,
                if report.kernels == 1 { "" } else { "s" },
                report.instructions,
                if report.has_dwarf { "" } else { ", no DWARF inline info" },
                started.elapsed()
            );
        }
        let ptx_display = paths.display(&ptx_path.to_string_lossy());
        let diags = prepare(report.findings, &ptx_display, &paths);
        let origin = Origin {
            package_name: k.name.clone(),
            package_id: k.package_id.clone(),
            manifest_path: k.manifest_path.to_string_lossy().to_string(),
            target_name: k.target_name.clone(),
            src_path: k.src_path.to_string_lossy().to_string(),
            edition: k.edition.clone(),
        };
        errors += emit(&diags, &src, &origin, o.message_format);
    }
    Ok(finish(o.message_format, errors))
}

fn check_ptx_files(files: &[PathBuf], o: &OutputArgs) -> Result<i32> {
    let cwd = std::env::current_dir().unwrap_or_default();
    let paths = PathStyle { root: cwd.clone() };
    let mut errors = 0;
    let mut failed = false;
    for file in files {
        let src = match std::fs::read(file) {
            Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
            Err(e) => {
                eprintln!("error: cannot read `{}`: {e}", file.display());
                failed = true;
                continue;
            }
        };
        let opts = Options { block: o.block, ..Default::default() };
        let report = match gpucheck_analysis::check(&src, &opts, &|_| true) {
            Ok(r) => r,
            Err(e) => {
                eprintln!("error: {}:{e}", file.display());
                failed = true;
                continue;
            }
        };
        let display = paths.display(&cwd.join(file).to_string_lossy());
        if o.message_format == MessageFormat::Human {
            eprintln!(
                "    Checking {display} ({}, {}, {})",
                plural(report.kernels, "kernel"),
                plural(report.functions, "function"),
                plural(report.instructions, "instruction")
            );
        }
        let diags = prepare(report.findings, &display, &paths);
        let abs = cwd.join(file);
        let origin = Origin {
            package_name: display.clone(),
            package_id: format!("path+file://{}", abs.display()),
            manifest_path: abs.to_string_lossy().to_string(),
            target_name: file.file_stem().map(|s| s.to_string_lossy().to_string()).unwrap_or_default(),
            src_path: abs.to_string_lossy().to_string(),
            edition: "2021".into(),
        };
        errors += emit(&diags, &src, &origin, o.message_format);
    }
    if failed {
        if o.message_format == MessageFormat::Json {
            println!("{}", report::json::build_finished(false));
        }
        return Ok(2);
    }
    Ok(finish(o.message_format, errors))
}
