//! Reporters: rustc-style text (`human`), cargo's JSON messages (`json`)
//! and SARIF 2.1.0 (`sarif`).
//!
//! Owns: turning `Diagnostic`s into bytes on stdout/stderr and the closing
//! summary. Does not own: deciding what is reported (see `diagnostic`).

pub mod human;
pub mod json;
pub mod sarif;

/// What a package a diagnostic belongs to looks like to cargo's JSON format.
#[derive(Clone, Debug)]
pub struct Origin {
    pub package_name: String,
    /// `lib` for a package, `PTX` for a PTX file checked on its own.
    pub kind: &'static str,
    pub package_id: String,
    pub manifest_path: String,
    pub target_name: String,
    pub src_path: String,
    pub edition: String,
}

/// What was not analysed, never in silence: human output prints one note
/// per PTX file when a memory instruction was not analysed; JSON
/// with `--all-accesses` prints one `gpucheck-coverage` record per function
/// with the sites (without it, JSON stays cargo's own messages, which
/// rust-analyzer and `cargo_metadata` reject unknown records among).
/// SARIF carries the findings only.
pub fn print_coverage(
    cov: &[gpucheck_analysis::CoverageReport],
    ptx_file: &str,
    format: crate::cli::MessageFormat,
    all_sites: bool,
    paths: &crate::diagnostic::PathStyle,
) {
    use crate::cli::MessageFormat;
    match format {
        MessageFormat::Json if all_sites => {
            use std::io::Write;
            let mut out = std::io::stdout().lock();
            for c in cov {
                let site = |s: &gpucheck_analysis::SkippedSite| {
                    serde_json::json!({
                        "ptx_line": s.ptx_line,
                        "file": s.span.as_ref().map(|p| paths.display(&p.file)),
                        "line": s.span.as_ref().map(|p| p.line),
                        "reason": s.key,
                    })
                };
                let mut v = serde_json::json!({
                    "reason": "gpucheck-coverage",
                    "ptx_file": ptx_file,
                    "function": c.kernel,
                    "kernel": c.entry,
                    "memory_instructions": c.total,
                    "predicted": c.predicted,
                    "data_dependent": c.data_dependent,
                    "other_space": c.other_space,
                    "assumed_global": c.assumed_global.len(),
                    "not_analysed": c.skipped.len(),
                    "not_analysed_by_reason": c.not_analysed().iter().map(|(k, _, n)| (k.to_string(), serde_json::json!(n))).collect::<serde_json::Map<_, _>>(),
                });
                v["not_analysed_sites"] = c.skipped.iter().map(site).collect();
                v["assumed_global_sites"] = c.assumed_global.iter().map(site).collect();
                let _ = writeln!(out, "{v}");
            }
        }
        MessageFormat::Human => {
            let fns: Vec<&gpucheck_analysis::CoverageReport> = cov.iter().filter(|c| !c.skipped.is_empty()).collect();
            if fns.is_empty() {
                return;
            }
            let (skipped, total): (usize, usize) = (cov.iter().map(|c| c.skipped.len()).sum(), cov.iter().map(|c| c.total).sum());
            let mut by: std::collections::BTreeMap<&str, usize> = Default::default();
            for c in &fns {
                for (_, r, n) in c.not_analysed() {
                    *by.entry(r).or_insert(0) += n;
                }
            }
            let why: Vec<String> = by.iter().map(|(r, n)| format!("{n} {r}")).collect();
            eprintln!(
                "note: {skipped} of {total} memory instructions in {} of {} functions not analysed: {}; `--message-format json --all-accesses` lists them",
                fns.len(),
                cov.len(),
                why.join("; ")
            );
        }
        _ => {}
    }
}
