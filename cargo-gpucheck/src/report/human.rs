//! rustc-style text rendered with `annotate-snippets` (the renderer rustc
//! uses): `warning: …`, `--> file:line:col`, the source line with the span
//! underlined, `= note:` / `= help:` footers, and cargo's summary line. In
//! plain text, what it would print as it is is written here byte for byte
//! as it renders it (each tested against its own rendering): a one-line
//! snippet with one span ([`one_line_head`]), and the footers
//! ([`with_notes`]).

use super::source::{self, SourceText};
use crate::diagnostic::Diagnostic;
use annotate_snippets::{AnnotationKind, Group, Level as SLevel, Renderer, Snippet};
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

/// The level annotate-snippets gives a note or a help.
fn note_level(k: &NoteKind) -> SLevel<'static> {
    match k {
        NoteKind::Note => SLevel::NOTE,
        NoteKind::Help => SLevel::HELP,
    }
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
    // (one line, one span: the head written as annotate-snippets lays it out)
    let head = (!color && same_file.is_empty())
        .then(|| one_line_head(level(d), &f.message, &origin, first as usize, window.trim_end_matches('\n'), start..end, &f.label))
        .flatten();
    let mut primary = AnnotationKind::Primary.span(start..end.max(start));
    if !f.label.is_empty() {
        primary = primary.label(&*f.label);
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
    let notes: Vec<(&NoteKind, &str)> =
        notes.iter().chain(&d.notes).map(|(k, t)| (k, t.as_str())).chain([(&NoteKind::Note, d.level_note.as_str())]).collect();
    with_notes(level(d).primary_title(&*f.message).element(snippet), head, &notes, color)
}

/// The title and snippet annotate-snippets renders in plain text for
/// `text`, line `line` of `path`, with one primary span (and its label),
/// written directly where annotate-snippets prints the line as it is: a
/// one-line title, the line ASCII with tabs (four spaces each) and no
/// space at its end, the span within it and over no tab, and the line and
/// label short enough that nothing is cut. Laying the snippet out in its
/// grid of styled cells takes annotate-snippets 40,000 instructions a
/// diagnostic, most of a run that reports thousands
/// (`one_line_heads_as_annotate_snippets_renders`). `None` otherwise.
fn one_line_head(
    level: SLevel<'_>,
    message: &str,
    path: &str,
    line: usize,
    text: &str,
    span: std::ops::Range<usize>,
    label: &str,
) -> Option<String> {
    let name = if level == SLevel::ERROR {
        "error"
    } else if level == SLevel::WARNING {
        "warning"
    } else {
        return None;
    };
    let printable = |t: &str| t.bytes().all(|b| (b' '..=b'~').contains(&b) || b == b'\t');
    let (start, end) = (span.start, span.end);
    if message.contains('\n')
        || !plain_note(message)
        || !printable(path)
        || path.contains('\t')
        || text.is_empty()
        || !printable(text)
        || text.ends_with([' ', '\t'])
        || start >= end
        || end > text.len()
        || text[start..end].contains('\t')
        || label.contains('\n')
        || !(label.is_empty() || plain_note(label))
        || label.ends_with(' ')
    {
        return None;
    }
    let columns = |t: &str| t.len() + 3 * t.bytes().filter(|&b| b == b'\t').count();
    // (a character past ASCII counted twice: the widest it may be)
    let label_width: usize = label.chars().map(|c| if c.is_ascii() { 1 } else { 2 }).sum();
    let w = line.to_string().len();
    if w + 3 + columns(text) + 1 + label_width > 100 {
        return None;
    }
    let col = text[..start].chars().count() + 1;
    let mut out = String::with_capacity(2 * (message.len() + path.len() + text.len() + label.len()) + 64);
    use std::fmt::Write as _;
    let _ = write!(out, "{name}: {message}\n{:w$}--> {path}:{line}:{col}\n{:w$} |\n{line} | ", "", "");
    out.push_str(&text.replace('\t', "    "));
    let _ = write!(out, "\n{:w$} | {:pad$}{:^<carets$}", "", "", "", pad = columns(&text[..start]), carets = end - start);
    if !label.is_empty() {
        out.push(' ');
        out.push_str(label);
    }
    Some(out)
}

/// A note annotate-snippets prints as it is: no blank line, no line
/// break at either end, no control character but the line breaks, none
/// of the invisible characters it may replace.
fn plain_note(t: &str) -> bool {
    let b = t.as_bytes();
    if b.first().is_none_or(|&c| c == b'\n') || b.last() == Some(&b'\n') {
        return false;
    }
    // most notes: no control, no line break, no byte that may start an invisible character
    // (one pass the compiler makes wide, where the one below goes byte by byte)
    let clear = |c: u8| ((b' '..0x7f).contains(&c) || c >= 0x80) & (c != 0xc2) & (c != 0xe2) & (c != 0xef);
    if b.chunks(32).all(|k| k.iter().fold(true, |all, &c| all & clear(c))) {
        return true;
    }
    // (the characters past ASCII it would not print as they are, by their UTF-8 bytes: the
    // controls U+0080–U+009F, U+200B–U+200F, U+202A–U+202E, U+2066–U+2069, U+FEFF)
    let shown = |i: usize| match b[i] {
        0xc2 => !matches!(b.get(i + 1), Some(0x80..=0x9f)),
        0xe2 => !matches!((b.get(i + 1), b.get(i + 2)), (Some(0x80), Some(0x8b..=0x8f | 0xaa..=0xae)) | (Some(0x81), Some(0xa6..=0xa9))),
        0xef => !(b.get(i + 1) == Some(&0xbb) && b.get(i + 2) == Some(&0xbf)),
        _ => true,
    };
    let (mut prev, mut ascii, mut lines) = (0u8, true, false);
    for (i, &c) in b.iter().enumerate() {
        if (c < b' ' && c != b'\n') || c == 0x7f || (c == b'\n' && prev == b'\n') || (c >= 0xc2 && !shown(i)) {
            return false;
        }
        ascii &= c.is_ascii();
        lines |= c == b'\n';
        prev = c;
    }
    // (a line break in a note past ASCII: left to annotate-snippets)
    ascii || !lines
}

/// A diagnostic's text: its title and snippet (`group`) and then its
/// notes and helps, `= note: …` under the gutter. annotate-snippets lays
/// every character of a note out in a grid of styled cells; in plain text
/// a note whose characters it prints as they are is appended here instead,
/// byte for byte what it would render (`notes_as_annotate_snippets_renders`):
/// with 4,000 diagnostics, their notes had been most of the run.
fn with_notes<'a>(group: Group<'a>, head: Option<String>, notes: &[(&NoteKind, &'a str)], color: bool) -> String {
    if !color && !notes.is_empty() && notes.iter().all(|(_, t)| plain_note(t)) {
        let head = head.unwrap_or_else(|| Renderer::plain().render(std::slice::from_ref(&group)).to_string());
        // the gutter: the empty one under `-->`, or none (a title alone)
        let pad = match head.lines().find(|l| l.trim_start() == "|") {
            Some(l) => Some(l.len() - 1),
            None => (!head.contains('\n')).then_some(1),
        };
        if let Some(pad) = pad {
            let mut out = head;
            out.reserve(pad + 2 + notes.iter().map(|(_, t)| t.len() + pad + 9).sum::<usize>());
            // (continuation lines align under the text, after `= note: `)
            let spaces = " ".repeat(pad + 8);
            out.push('\n');
            out.push_str(&spaces[..pad]);
            out.push('|');
            for (k, t) in notes {
                let name = k.name();
                for (i, line) in t.split('\n').enumerate() {
                    out.push('\n');
                    out.push_str(&spaces[..pad + if i == 0 { 0 } else { name.len() + 4 }]);
                    if i == 0 {
                        out.push_str("= ");
                        out.push_str(name);
                        out.push_str(": ");
                    }
                    out.push_str(line);
                }
            }
            return out;
        }
    }
    let group = group.elements(notes.iter().map(|(k, t)| note_level(k).message(*t)));
    let r = if color { Renderer::styled() } else { Renderer::plain() };
    r.render(&[group]).to_string()
}

/// Rendering without a source snippet (the Rust file is not readable).
fn plain(d: &Diagnostic, origin: &str, color: bool) -> String {
    let f = &d.finding;
    let loc = format!("at {origin}:{}:{}", d.line, d.col);
    let notes: Vec<(&NoteKind, &str)> = [(&NoteKind::Note, loc.as_str())]
        .into_iter()
        .chain(d.notes.iter().map(|(k, t)| (k, t.as_str())))
        .chain([(&NoteKind::Note, d.level_note.as_str())])
        .collect();
    with_notes(Group::with_title(level(d).primary_title(&*f.message)), None, &notes, color)
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

#[cfg(test)]
mod tests {
    use super::*;

    /// What annotate-snippets renders for `group` with `notes`, in plain text.
    fn rendered(group: Group<'_>, notes: &[(&NoteKind, &str)]) -> String {
        let group = group.elements(notes.iter().map(|(k, t)| note_level(k).message(*t)));
        Renderer::plain().render(&[group]).to_string()
    }

    /// The notes appended to a title and snippet are what annotate-snippets
    /// renders, for gutters of every width, one annotation or two, a title
    /// alone, and notes of one line or several, long, with tabs, wide or
    /// invisible characters (the last ones left to annotate-snippets).
    #[test]
    fn notes_as_annotate_snippets_renders() {
        let src = "let a = 1;\n\tst.shared.f32 \t[%r8+0], %f1; // ×\nlast line here\n";
        let long = "a note of many words ".repeat(30);
        let note_sets: Vec<Vec<(&NoteKind, &str)>> = vec![
            vec![],
            vec![(&NoteKind::Note, "one")],
            vec![
                (&NoteKind::Note, "one"),
                (&NoteKind::Help, "do this: `x[i]` ≤ 4×4"),
                (&NoteKind::Note, "`#[warn(gpucheck::x)]` on by default"),
            ],
            vec![(&NoteKind::Help, "two\nlines"), (&NoteKind::Note, "three\nlines\n here")],
            vec![(&NoteKind::Note, long.as_str()), (&NoteKind::Note, "tab\tinside "), (&NoteKind::Help, " leading space")],
            vec![(&NoteKind::Note, " "), (&NoteKind::Help, "\u{a0}no-break\u{a0}"), (&NoteKind::Note, "wide 漢字 and é")],
            vec![
                (&NoteKind::Note, "trailing space "),
                (&NoteKind::Help, "spaces  \n  then more  "),
                (&NoteKind::Note, "`s[t]` and `s[t + 1]` — ok"),
            ],
            vec![(&NoteKind::Note, "blank\n\nline"), (&NoteKind::Note, "zero\u{200b}width")],
            vec![(&NoteKind::Note, "carriage\rreturn"), (&NoteKind::Help, "\u{202e}bidi")],
        ];
        let mut checked = 0;
        for line_start in [1, 9, 10, 99, 100, 9_998, 10_000, 123_456] {
            for two in [false, true] {
                for notes in &note_sets {
                    let group = || {
                        let mut snippet = Snippet::source(src)
                            .line_start(line_start)
                            .path("kernel.cu")
                            .fold(true)
                            .annotation(AnnotationKind::Primary.span(12..25).label("stride 16 × 4 bytes"));
                        if two {
                            let last = src.find("last").unwrap_or(0);
                            snippet = snippet.annotation(AnnotationKind::Context.span(last..last + 4).label("the other access"));
                        }
                        SLevel::WARNING.primary_title("16-way shared memory bank conflict").element(snippet)
                    };
                    assert_eq!(with_notes(group(), None, notes, false), rendered(group(), notes), "line {line_start}, notes {notes:?}");
                    let title = || Group::with_title(SLevel::ERROR.primary_title("data race on shared memory"));
                    assert_eq!(with_notes(title(), None, notes, false), rendered(title(), notes), "title alone, notes {notes:?}");
                    checked += 1;
                }
            }
        }
        assert_eq!(checked, 8 * 2 * note_sets.len());
    }

    /// The head written directly is what annotate-snippets renders, for
    /// lines with tabs and spaces, spans anywhere in them, labels empty,
    /// short, long or past ASCII, gutters of every width, and lines and
    /// labels near the length where it would cut them; and it is written
    /// for most such diagnostics.
    #[test]
    fn one_line_heads_as_annotate_snippets_renders() {
        let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = |n: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % n.max(1)
        };
        let alphabet = b"ab%[]+-,; \t\t.0123456789xyz_(){}*/";
        let labels = ["", "here", "stride 16 × 4 bytes along threadIdx.x", "thread 1 writes here (in `f`)", "a"];
        let (mut written, mut checked) = (0, 0);
        for _ in 0..6_000 {
            let most = if next(4) == 0 { 130 } else { 40 };
            let n = 1 + next(most) as usize;
            let mut text: String = (0..n).map(|_| alphabet[next(alphabet.len() as u64) as usize] as char).collect();
            if next(3) == 0 {
                text = text.trim_end().to_string();
            }
            if text.is_empty() {
                continue;
            }
            let start = next(text.len() as u64 + 1) as usize;
            let end = (start + 1 + next(6) as usize).min(text.len() + 1);
            let long = "long label ".repeat(1 + next(9) as usize);
            let label = if next(5) == 0 { long.trim_end() } else { labels[next(labels.len() as u64) as usize] };
            let line = [1, 9, 10, 99, 100, 9_999, 10_000, 123_456][next(8) as usize];
            let level = if next(2) == 0 { SLevel::WARNING } else { SLevel::ERROR };
            let message =
                ["16-way shared memory bank conflict: lanes stride 64 bytes", "data race on shared memory", "x"][next(3) as usize];
            let window = format!("{text}\n");
            let mut primary = AnnotationKind::Primary.span(start..end.min(window.len()));
            if !label.is_empty() {
                primary = primary.label(label);
            }
            let snippet = Snippet::source(&window).line_start(line).path("src/kernel.ptx").fold(true).annotation(primary);
            let want = Renderer::plain().render(&[level.clone().primary_title(message).element(snippet)]).to_string();
            if let Some(got) = one_line_head(level, message, "src/kernel.ptx", line, &text, start..end, label) {
                assert_eq!(got, want, "{text:?} {start}..{end} {label:?} {line}");
                written += 1;
            }
            checked += 1;
        }
        assert!(written > checked / 3, "{written} of {checked}");
    }

    /// The note check by bytes agrees with one by characters, for every
    /// character that is a control or invisible, its neighbours, and text
    /// around them.
    #[test]
    fn plain_notes_by_their_bytes() {
        // (the check as it was, a pass over the characters past ASCII)
        let by_chars = |t: &str| {
            let b = t.as_bytes();
            if b.first().is_none_or(|&c| c == b'\n') || b.last() == Some(&b'\n') {
                return false;
            }
            let (mut prev, mut ascii) = (0u8, true);
            for &c in b {
                if (c < b' ' && c != b'\n') || c == 0x7f || (c == b'\n' && prev == b'\n') {
                    return false;
                }
                ascii &= c.is_ascii();
                prev = c;
            }
            ascii
                || t.chars().all(|c| {
                    !(c.is_control()
                        || matches!(c, '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{feff}'))
                })
        };
        let mut checked = 0;
        for c in (0u32..0x3000).chain(0xfe00..0x10000).chain([0x1f600, 0x10ffff]).filter_map(char::from_u32) {
            for t in [format!("a{c}b"), format!("{c}"), format!("x × {c}\nnext"), format!("x {c}\nnext"), format!("{c}{c}")] {
                assert_eq!(plain_note(&t), by_chars(&t), "{:?}", t);
                checked += 1;
            }
        }
        assert!(checked > 40_000);
    }
}
