//! Reporters: rustc-style text (`human`), cargo's JSON messages (`json`)
//! and SARIF 2.1.0 (`sarif`); the source texts they quote, each file read
//! once (`source`).
//!
//! Owns: turning `Diagnostic`s into bytes on stdout/stderr and the closing
//! summary. Does not own: deciding what is reported (see `diagnostic`).

pub mod human;
pub mod json;
pub mod sarif;
pub mod source;

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

/// What one PTX file's analysis says beyond its findings, never in
/// silence: JSON with `--all-accesses` prints one `gpucheck-access` record
/// per access site and one `gpucheck-coverage` record per function (without
/// it, JSON stays cargo's own messages: rust-analyzer and `cargo_metadata`
/// reject unknown records); human output prints a note when a memory
/// instruction was not analysed. SARIF carries the findings only.
pub fn print_sites(
    accesses: &[gpucheck_analysis::AccessReport],
    cov: &[gpucheck_analysis::CoverageReport],
    ptx_file: &str,
    format: crate::cli::MessageFormat,
    all_sites: bool,
    paths: &crate::diagnostic::PathStyle,
) {
    use crate::cli::MessageFormat;
    match format {
        MessageFormat::Json if all_sites => {
            json::print_accesses(accesses, ptx_file, paths);
            json::print_coverage(cov, ptx_file, paths);
        }
        MessageFormat::Human => human::coverage_note(cov),
        _ => {}
    }
}
