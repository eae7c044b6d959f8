//! SARIF 2.1.0 output (`--message-format sarif`) built with `serde-sarif`:
//! one run, every lint as a rule with its help text, results with physical
//! locations relative to the workspace root (`%SRCROOT%`), levels mapped
//! (deny/forbid → error, warn → warning), secondary spans as related
//! locations, and the finding's metrics as result properties.

use crate::diagnostic::{metric_json, Diagnostic};
use gpucheck_analysis::LINTS;
use serde_sarif::sarif;
use std::collections::BTreeMap;
use std::path::Path;

fn location(uri: &str, line: u32, col: u32, col_end: u32, message: Option<&str>) -> sarif::Location {
    let region = sarif::Region::builder()
        .start_line(line.max(1) as i64)
        .start_column(col.max(1) as i64)
        .end_column(col_end.max(col + 1) as i64)
        .build();
    let physical = sarif::PhysicalLocation::builder()
        .artifact_location(sarif::ArtifactLocation::builder().uri(uri).uri_base_id("%SRCROOT%").build())
        .region(region)
        .build();
    match message {
        Some(m) if !m.is_empty() => {
            sarif::Location::builder().physical_location(physical).message(sarif::Message::builder().text(m).build()).build()
        }
        _ => sarif::Location::builder().physical_location(physical).build(),
    }
}

/// A URI relative to the root, with `/` separators.
fn uri(p: &str) -> String {
    p.replace('\\', "/")
}

pub fn log(diags: &[Diagnostic], root: &Path) -> serde_json::Value {
    let rules: Vec<sarif::ReportingDescriptor> = LINTS
        .iter()
        .map(|l| {
            let level = if l.default.is_error() {
                "error"
            } else if l.default == gpucheck_analysis::Level::Allow {
                "none"
            } else {
                "warning"
            };
            sarif::ReportingDescriptor::builder()
                .id(format!("gpucheck::{}", l.name))
                .name(l.name)
                .short_description(sarif::MultiformatMessageString::builder().text(l.summary).build())
                .full_description(sarif::MultiformatMessageString::builder().text(l.summary).build())
                .help(sarif::MultiformatMessageString::builder().text(l.explanation()).markdown(l.explanation()).build())
                .default_configuration(sarif::ReportingConfiguration::builder().level(serde_json::json!(level)).build())
                .properties(sarif::PropertyBag::builder().tags(vec![l.group.name().to_string()]).build())
                .build()
        })
        .collect();
    let mut seen: BTreeMap<u64, u32> = BTreeMap::new();
    let results: Vec<sarif::Result> = diags
        .iter()
        .map(|d| {
            let f = &d.finding;
            let file = d.file.clone().unwrap_or_else(|| d.ptx_file.clone());
            let mut text = f.message.to_string();
            for (_, note) in &d.notes {
                text.push('\n');
                text.push_str(note);
            }
            let rule_index = LINTS.iter().position(|l| l.name == f.lint.name).unwrap_or(0) as i64;
            let mut props = BTreeMap::new();
            props.insert("kernel".to_string(), serde_json::json!(gpucheck_analysis::names::bare(&f.kernel)));
            props.insert("ptxKernel".to_string(), serde_json::json!(&*f.kernel));
            props.insert("ptx_file".to_string(), serde_json::json!(d.ptx_file));
            props.insert("ptx_line".to_string(), serde_json::json!(f.ptx_line));
            props.insert("assumes".to_string(), super::json::assumes_json(&f.assumes));
            if let Some(r) = super::json::replay_json(&f.replay) {
                props.insert("replay".to_string(), r);
            }
            for (k, v) in &f.metrics {
                props.insert((*k).to_string(), metric_json(v));
            }
            let related: Vec<sarif::Location> =
                d.secondary.iter().map(|(sf, _, l, c, ce, label)| location(&uri(sf), *l, *c, *ce, Some(label))).collect();
            let level = if d.level.is_error() { sarif::ResultLevel::Error } else { sarif::ResultLevel::Warning };
            // the same finding across commits: lint, file, kernel and the text of the line (not
            // its number), and which of the identical ones it is
            let text_of_line = d
                .abs_file
                .as_deref()
                .and_then(super::source::file)
                .and_then(|t| Some(t.text().line(d.line)?.1.to_string()))
                .unwrap_or_default();
            let key = fnv1a(&[f.lint.name, &file, &f.kernel, text_of_line.trim()]);
            let n = seen.entry(key).or_insert(0);
            *n += 1;
            let mut fingerprints = BTreeMap::new();
            fingerprints.insert("gpucheck/v1".to_string(), format!("{key:016x}:{n}"));
            sarif::Result::builder()
                .partial_fingerprints(fingerprints)
                .rule_id(format!("gpucheck::{}", f.lint.name))
                .rule_index(rule_index)
                .level(level)
                .message(sarif::Message::builder().text(text).build())
                .locations(vec![location(&uri(&file), d.line, d.col, d.col_end, None)])
                .related_locations(related)
                .properties(sarif::PropertyBag::builder().additional_properties(props).build())
                .build()
        })
        .collect();
    let driver = sarif::ToolComponent::builder()
        .name("cargo-gpucheck")
        .version(env!("CARGO_PKG_VERSION"))
        .information_uri("https://github.com/cargo-gpucheck/cargo-gpucheck")
        .rules(rules)
        .build();
    let mut base = BTreeMap::new();
    let root_uri = format!("file://{}/", root.to_string_lossy().trim_end_matches('/'));
    base.insert("%SRCROOT%".to_string(), sarif::ArtifactLocation::builder().uri(root_uri).build());
    let run =
        sarif::Run::builder().tool(sarif::Tool::builder().driver(driver).build()).results(results).original_uri_base_ids(base).build();
    let log = sarif::Sarif::builder().version(serde_json::json!("2.1.0")).schema(sarif::SCHEMA_URL).runs(vec![run]).build();
    serde_json::to_value(log).unwrap_or_default()
}

/// FNV-1a over the parts (with a separator): stable across runs, platforms
/// and Rust versions, as a fingerprint must be.
fn fnv1a(parts: &[&str]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for p in parts {
        for b in p.bytes().chain([0xff]) {
            h ^= b as u64;
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    h
}
