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
