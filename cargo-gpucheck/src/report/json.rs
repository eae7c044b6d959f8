//! cargo's JSON message format (one object per line), so rust-analyzer and
//! CI tools can read our findings as they read rustc's: `compiler-message`
//! objects with `message.code.code = "gpucheck::<lint>"` plus our own
//! `gpucheck` object, and a closing `build-finished`.

use super::Origin;
use crate::diagnostic::{metric_json, Diagnostic};
use gpucheck_analysis::{Level, NoteKind};
use serde_json::{json, Value};

fn level(l: Level) -> &'static str {
    if l.is_error() {
        "error"
    } else {
        "warning"
    }
}

/// Byte offset of 1-based (line, col) in `src` (columns count characters).
fn byte_offset(src: &str, line: u32, col: u32) -> usize {
    let start: usize = src.split_inclusive('\n').take(line.saturating_sub(1) as usize).map(str::len).sum();
    let text = src[start..].lines().next().unwrap_or("");
    start + text.char_indices().nth(col.saturating_sub(1) as usize).map(|(b, _)| b).unwrap_or(text.len())
}

fn span(file: &str, abs: Option<&std::path::Path>, line: u32, col: u32, col_end: u32, primary: bool, label: &str) -> Value {
    let src = abs.and_then(|p| std::fs::read_to_string(p).ok()).unwrap_or_default();
    let text = src.lines().nth(line.saturating_sub(1) as usize).unwrap_or("").to_string();
    let (byte_start, byte_end) = if src.is_empty() { (0, 0) } else { (byte_offset(&src, line, col), byte_offset(&src, line, col_end)) };
    json!({
        "file_name": file,
        "byte_start": byte_start,
        "byte_end": byte_end,
        "line_start": line,
        "line_end": line,
        "column_start": col,
        "column_end": col_end,
        "is_primary": primary,
        "text": [{"text": text, "highlight_start": col, "highlight_end": col_end}],
        "label": if label.is_empty() { Value::Null } else { json!(label) },
        "suggested_replacement": null,
        "suggestion_applicability": null,
        "expansion": null
    })
}

pub fn message(d: &Diagnostic, origin: &Origin, rendered: &str) -> Value {
    let f = &d.finding;
    let file = d.file.clone().unwrap_or_else(|| d.ptx_file.clone());
    let mut spans = vec![span(&file, d.abs_file.as_deref(), d.line, d.col, d.col_end, true, &f.label)];
    for (sf, abs, l, c, ce, label) in &d.secondary {
        spans.push(span(sf, Some(abs), *l, *c, *ce, false, label));
    }
    let mut children: Vec<Value> = d
        .notes
        .iter()
        .map(|(kind, text)| {
            json!({"message": text, "code": null, "level": match kind { NoteKind::Note => "note", NoteKind::Help => "help" }, "spans": [], "children": [], "rendered": null})
        })
        .collect();
    children.push(json!({"message": d.level_note, "code": null, "level": "note", "spans": [], "children": [], "rendered": null}));
    let mut g = serde_json::Map::new();
    g.insert("lint".into(), json!(f.lint.name));
    // the kernel as its source names it; the PTX symbol beside it (a C++ kernel's is mangled)
    g.insert("kernel".into(), json!(gpucheck_analysis::names::bare(&f.kernel)));
    g.insert("ptx_kernel".into(), json!(&*f.kernel));
    g.insert("ptx_file".into(), json!(d.ptx_file));
    g.insert("ptx_line".into(), json!(f.ptx_line));
    g.insert("duplicates".into(), json!(d.duplicates));
    // the copies' range of the number the message leads with (the headline is the worst)
    if let (Some(r), Some((lo, hi))) = (d.finding.rank, d.ranks) {
        g.insert("copies_range".into(), json!({"low": lo, "high": hi, "unit": r.unit.trim_start_matches(['-', ' '])}));
    }
    for (k, v) in &f.metrics {
        g.insert((*k).into(), metric_json(v));
    }
    // the values the finding's numbers or witness rest on that the kernel does not fix
    g.insert("assumes".into(), assumes_json(&f.assumes));
    if let Some(r) = replay_json(&f.replay) {
        g.insert("replay".into(), r);
    }
    // (the parts built above are moved in: `json!` would copy each by serialising it)
    let mut message = serde_json::Map::new();
    message.insert("$message_type".into(), json!("diagnostic"));
    message.insert("message".into(), Value::String(f.message.clone()));
    message.insert("code".into(), json!({"code": format!("gpucheck::{}", f.lint.name), "explanation": explanation(f.lint)}));
    message.insert("level".into(), json!(level(d.level)));
    message.insert("spans".into(), Value::Array(spans));
    message.insert("children".into(), Value::Array(children));
    message.insert("rendered".into(), Value::String(rendered.to_string()));
    let mut out = serde_json::Map::new();
    out.insert("reason".into(), json!("compiler-message"));
    out.insert("package_id".into(), json!(origin.package_id));
    out.insert("manifest_path".into(), json!(origin.manifest_path));
    out.insert(
        "target".into(),
        json!({
            "kind": ["lib"],
            "crate_types": ["lib"],
            "name": origin.target_name,
            "src_path": origin.src_path,
            "edition": origin.edition,
            "doc": true,
            "doctest": false,
            "test": false
        }),
    );
    out.insert("message".into(), Value::Object(message));
    out.insert("gpucheck".into(), Value::Object(g));
    Value::Object(out)
}

/// A lint's explanation, made once per lint (every message of it carries it).
fn explanation(lint: &'static gpucheck_analysis::lints::Lint) -> &'static str {
    static MADE: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    let made = MADE.get_or_init(|| gpucheck_analysis::lints::LINTS.iter().map(|l| l.explanation()).collect());
    gpucheck_analysis::lints::LINTS.iter().position(|l| std::ptr::eq(*l, lint)).and_then(|k| made.get(k)).map_or("", String::as_str)
}

/// A finding's assumptions, one object each: what (`name`, `kind`, the PTX
/// line computing it), the value it was given (`sample`; for a stride, the
/// bytes between neighbouring threads), whether it decides only the
/// alignment of the warps' addresses (`alignment_only`: other values give
/// the misaligned variant the finding names), and what the kernel itself
/// tested about it on the way to the finding (`known`: `n < 1024`).
pub fn assumes_json(assumes: &[gpucheck_analysis::facts::Assumption]) -> Value {
    json!(assumes
        .iter()
        .map(|a| json!({"name": a.name, "kind": a.kind.key(), "ptx_line": a.ptx_line, "sample": a.sample, "alignment_only": a.alignment, "known": a.known}))
        .collect::<Vec<_>>())
}

/// What replaying a correctness finding's witness gave: `status`
/// (`reproduced`, `not_reproduced`, `not_replayed`) and the launch run
/// (`launch`; `other_partner`: the run showed a race at one of the two
/// accesses with another access) or why none was (`why`). `None`: not
/// replayed at all.
pub fn replay_json(r: &gpucheck_analysis::lints::Replay) -> Option<Value> {
    use gpucheck_analysis::lints::Replay;
    match r {
        Replay::NotRun => None,
        Replay::Reproduced { launch, partner } => Some(json!({"status": "reproduced", "launch": launch, "other_partner": partner})),
        Replay::NotReproduced(how) => Some(json!({"status": "not_reproduced", "launch": how})),
        Replay::Unable(why) => Some(json!({"status": "not_replayed", "why": why})),
    }
}

pub fn build_finished(success: bool) -> Value {
    json!({"reason": "build-finished", "success": success})
}

/// One `gpucheck-access` record per memory access site (`--all-accesses`).
pub fn print_accesses(accesses: &[gpucheck_analysis::AccessReport], ptx_file: &str, paths: &crate::diagnostic::PathStyle) {
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    for a in accesses {
        let mut v = json!({
            "reason": "gpucheck-access",
            "kernel": gpucheck_analysis::names::bare(&a.site.kernel),
            "ptx_kernel": a.site.kernel,
            "file": a.site.span.as_ref().map(|s| paths.display(&s.file)),
            "line": a.site.span.as_ref().map(|s| s.line),
            "column": a.site.span.as_ref().map(|s| s.col),
            "ptx_file": ptx_file,
            "ptx_line": a.site.ptx_line,
            "space": a.space.name(),
            "kind": a.kind.name(),
            "width": a.width,
            "requests": a.requests,
            "predictable": !a.unpredictable,
        });
        if let Some((t, w, ideal)) = a.sectors {
            v["sectors_per_request"] = json!(t);
            v["worst_sectors_per_request"] = json!(w);
            v["ideal_sectors_per_request"] = json!(ideal);
            v["misaligned_sectors_per_request"] = json!(a.misaligned);
        }
        if let Some((t, w)) = a.conflict {
            v["conflict_degree"] = json!(t);
            v["worst_conflict_degree"] = json!(w);
        }
        let _ = std::io::Write::write_all(&mut out, format!("{v}\n").as_bytes());
    }
}

/// One `gpucheck-coverage` record per function: its memory instructions by
/// category, and the sites not analysed or analysed as global by assumption.
pub fn print_coverage(cov: &[gpucheck_analysis::CoverageReport], ptx_file: &str, paths: &crate::diagnostic::PathStyle) {
    let mut out = std::io::stdout().lock();
    let site = |s: &gpucheck_analysis::Site, reason: &str| {
        json!({
            "ptx_line": s.ptx_line,
            "file": s.span.as_ref().map(|p| paths.display(&p.file)),
            "line": s.span.as_ref().map(|p| p.line),
            "reason": reason,
        })
    };
    for c in cov {
        let v = json!({
            "reason": "gpucheck-coverage",
            "ptx_file": ptx_file,
            "function": c.kernel,
            "kernel": c.entry,
            "call_contexts": c.contexts,
            "context_analyses": c.context_analyses,
            "memory_instructions": c.total,
            "predicted": c.predicted,
            "data_dependent": c.data_dependent,
            "other_space": c.other_space,
            "assumed_global": c.assumed_global.len(),
            "not_analysed": c.skipped.len(),
            "not_analysed_by_reason": c.not_analysed().iter().map(|(k, n)| (k.key().to_string(), json!(n))).collect::<serde_json::Map<_, _>>(),
            "not_analysed_sites": c.skipped.iter().map(|s| site(&s.site, s.skip.key())).collect::<Vec<_>>(),
            "assumed_global_sites": c.assumed_global.iter().map(|s| site(s, "assumed_global")).collect::<Vec<_>>(),
        });
        let _ = std::io::Write::write_all(&mut out, format!("{v}\n").as_bytes());
    }
}
