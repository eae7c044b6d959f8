//! rustc-style text rendered with `annotate-snippets` (the renderer rustc
//! uses): `warning: …`, `--> file:line:col`, the source line with the span
//! underlined, `= note:` / `= help:` footers, and cargo's summary line.

use super::source::{self, SourceText};
use crate::diagnostic::Diagnostic;
use annotate_snippets::{AnnotationKind, Level as SLevel, Renderer, Snippet};
use gpucheck_analysis::{Level, NoteKind};

/// Byte offset of (line, col) in `src` (1-based), clamped to the line.
fn offset(src: &str, line: u32, col: u32) -> Option<usize> {
    let mut off = 0;
    for (i, l) in src.split_inclusive('\n').enumerate() {
        if i + 1 == line as usize {
            return Some(off + source::column_byte(l.trim_end_matches(['\n', '\r']), col));
        }
        off += l.len();
    }
    None
}

fn level(d: &Diagnostic) -> SLevel<'static> {
    if d.level.is_error() {
        SLevel::ERROR
    } else {
        SLevel::WARNING
    }
}

pub fn render(d: &Diagnostic, ptx: &SourceText<'_>, color: bool) -> String {
    let f = &d.finding;
    let rust_file = d.abs_file.as_deref().and_then(source::file);
    let rust_src = rust_file.as_deref().map(source::File::text);
    let (src, origin, line, col, col_end) = match (&rust_src, &d.file) {
        (Some(s), Some(file)) => (s, file.clone(), d.line, d.col, d.col_end),
        (None, Some(file)) => return plain(d, file, color),
        _ => (ptx, d.ptx_file.clone(), f.ptx_line, f.ptx_col, f.ptx_col + 1),
    };
    // render from the lines the spans cover, not the whole file
    let same_file: Vec<_> = d.secondary.iter().filter(|x| Some(&x.1) == d.abs_file.as_ref() && x.2 > 0).collect();
    let first = same_file.iter().map(|x| x.2).chain([line]).min().unwrap_or(line).max(1);
    let last = same_file.iter().map(|x| x.2).chain([line]).max().unwrap_or(line).max(1);
    let Some(window) = src.window(first, last) else { return plain(d, &origin, color) };
    let rel = |l: u32| l + 1 - first;
    let Some(start) = offset(window, rel(line.max(1)), col) else { return plain(d, &origin, color) };
    let end = offset(window, rel(line.max(1)), col_end).unwrap_or(start + 1).max(start + 1).min(window.len());
    let mut primary = AnnotationKind::Primary.span(start..end.max(start));
    if !f.label.is_empty() {
        primary = primary.label(f.label.as_str());
    }
    let mut snippet = Snippet::source(window).line_start(first as usize).path(origin.as_str()).fold(true).annotation(primary);
    let mut notes: Vec<(NoteKind, String)> = Vec::new();
    for (file, abs, l, c, ce, label) in &d.secondary {
        match offset(window, rel((*l).max(first)), *c).filter(|_| Some(abs) == d.abs_file.as_ref() && *l >= first) {
            Some(s) => {
                let e = offset(window, rel(*l), *ce).unwrap_or(s + 1).max(s + 1).min(window.len());
                snippet = snippet.annotation(AnnotationKind::Context.span(s..e).label(label.as_str()));
            }
            None => notes.push((NoteKind::Note, format!("{label} at {file}:{l}:{c}"))),
        }
    }
    notes.extend(d.notes.iter().cloned());
    notes.push((NoteKind::Note, d.level_note.clone()));
    let mut group = level(d).primary_title(f.message.as_str()).element(snippet);
    for (k, t) in &notes {
        group = group.element(match k {
            NoteKind::Note => SLevel::NOTE.message(t.as_str()),
            NoteKind::Help => SLevel::HELP.message(t.as_str()),
        });
    }
    let r = if color { Renderer::styled() } else { Renderer::plain() };

    r.render(&[group]).to_string()
}

/// Rendering without a source snippet (the Rust file is not readable).
fn plain(d: &Diagnostic, origin: &str, color: bool) -> String {
    let f = &d.finding;
    let loc = format!("at {origin}:{}:{}", d.line, d.col);
    let mut group = level(d).primary_title(f.message.as_str()).element(SLevel::NOTE.message(loc.as_str()));
    for (kind, text) in &d.notes {
        group = group.element(match kind {
            NoteKind::Note => SLevel::NOTE.message(text.as_str()),
            NoteKind::Help => SLevel::HELP.message(text.as_str()),
        });
    }
    group = group.element(SLevel::NOTE.message(d.level_note.as_str()));
    let r = if color { Renderer::styled() } else { Renderer::plain() };

    r.render(&[group]).to_string()
}

/// cargo's closing line for one package: `warning: `x` (lib) generated 3
/// warnings` / `error: could not check `x` due to 2 previous errors; …`.
pub fn summary(name: &str, kind: &str, diags: &[Diagnostic]) -> Option<String> {
    let errors = diags.iter().filter(|d| d.level.is_error()).count();
    let warnings = diags.iter().filter(|d| d.level == Level::Warn).count();
    let dup: usize = diags.iter().map(|d| d.duplicates).sum();
    let plural = |n: usize, w: &str| format!("{n} {w}{}", if n == 1 { "" } else { "s" });
    // (the compiler's copies of one place, each folded into the finding at its source line)
    let dups = if dup > 0 { format!(" ({} folded)", plural(dup, "PTX copy")).replace("copys", "copies") } else { String::new() };
    if errors > 0 {
        let w = if warnings > 0 { format!("; {} emitted", plural(warnings, "warning")) } else { String::new() };
        Some(format!("error: could not check `{name}` ({kind}) due to {}{w}{dups}", plural(errors, "previous error")))
    } else if warnings > 0 {
        Some(format!("warning: `{name}` ({kind}) generated {}{dups}", plural(warnings, "warning")))
    } else {
        None
    }
}

/// What a performance finding costs its kernel, as its prediction gives
/// it: the share (sectors or shared transactions beyond the ideal,
/// lane-slots left idle) and what it is a share of.
pub fn cost_share(d: &Diagnostic) -> Option<(f64, &'static str)> {
    use gpucheck_analysis::Metric;
    let share = |name: &str| match d.finding.metric(name) {
        Some(Metric::Float(x)) => Some(*x),
        _ => None,
    };
    match (share("impact_share"), share("idle_share")) {
        (Some(x), _) if d.finding.lint.name == "shared_bank_conflict" => Some((x, "shared-memory transactions beyond the ideal")),
        (Some(x), _) => Some((x, "global-memory sectors beyond the ideal")),
        (None, Some(x)) => Some((x, "lane-slots left idle")),
        _ => None,
    }
}

/// The reported performance findings ranked by what they cost their
/// kernel ([`cost_share`]), costliest first.
pub fn ranked(diags: &[Diagnostic]) -> Vec<(f64, &'static str, &Diagnostic)> {
    let mut out: Vec<_> =
        diags.iter().filter(|d| d.level != Level::Allow).filter_map(|d| cost_share(d).map(|(x, what)| (x, what, d))).collect();
    out.sort_by(|a, b| b.0.total_cmp(&a.0));
    out
}

/// The five costliest performance findings of a package ([`ranked`]);
/// `None` for fewer than two.
pub fn by_impact(diags: &[Diagnostic]) -> Option<String> {
    let ranked = ranked(diags);
    if ranked.len() < 2 {
        return None;
    }
    let mut out = String::from("note: the costliest performance findings, by their predicted share of their kernel's cost:");
    for (k, (x, what, d)) in ranked.iter().take(5).enumerate() {
        let at = match &d.file {
            Some(f) => format!("{f}:{}:{}", d.line, d.col),
            None => format!("{}:{}", d.ptx_file, d.line),
        };
        let kernel = gpucheck_analysis::demangle(&d.finding.kernel);
        out += &format!("\n  {}. {at}: {:.0} % of `{kernel}`'s {what} ({})", k + 1, 100.0 * x, d.finding.lint.name);
    }
    Some(out)
}

/// One note for a PTX file with memory instructions that were not
/// analysed: how many, in how many functions, and why.
pub fn coverage_note(cov: &[gpucheck_analysis::CoverageReport]) {
    let fns = cov.iter().filter(|c| !c.skipped.is_empty()).count();
    if fns == 0 {
        return;
    }
    let (skipped, total): (usize, usize) = (cov.iter().map(|c| c.skipped.len()).sum(), cov.iter().map(|c| c.total).sum());
    let mut by: std::collections::BTreeMap<&str, usize> = Default::default();
    for (skip, n) in cov.iter().flat_map(|c| c.not_analysed()) {
        *by.entry(skip.reason()).or_insert(0) += n;
    }
    let why: Vec<String> = by.iter().map(|(r, n)| format!("{n} {r}")).collect();
    eprintln!(
        "note: {skipped} of {total} memory instructions in {fns} of {} functions not analysed: {}; `--message-format json --all-accesses` lists them",
        cov.len(),
        why.join("; ")
    );
}
