//! cargo's JSON message format (one object per line), so rust-analyzer and
//! CI tools can read our findings as they read rustc's: `compiler-message`
//! objects with `message.code.code = "gpucheck::<lint>"` plus our own
//! `gpucheck` object, and a closing `build-finished`.

use super::Origin;
use crate::diagnostic::{metric_json, Diagnostic};
use gpucheck_analysis::Level;
use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{json, Value};

fn level(l: Level) -> &'static str {
    if l.is_error() {
        "error"
    } else {
        "warning"
    }
}

// cargo's JSON objects, their keys in the order `serde_json::Map` gives
// them (sorted), so that every record reads as before

#[derive(Serialize)]
pub struct Message<'d> {
    gpucheck: Fields,
    manifest_path: &'d str,
    message: Inner<'d>,
    package_id: &'d str,
    reason: &'static str,
    target: Target<'d>,
}

/// The `gpucheck` object of a message: its entries, written with their
/// keys sorted (as `serde_json::Map` wrote them), a later entry of a key
/// replacing an earlier one; no map of owned keys built per message.
#[derive(Default)]
pub struct Fields(Vec<(&'static str, Value)>);

impl Fields {
    fn insert(&mut self, key: &'static str, value: Value) {
        self.0.push((key, value));
    }
}

impl Serialize for Fields {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        // (a stable sort: entries of one key stay in the order given, the last kept)
        let mut order: Vec<usize> = (0..self.0.len()).collect();
        order.sort_by_key(|&i| self.0[i].0);
        let last = |k: usize| order.get(k + 1).is_none_or(|&next| self.0[next].0 != self.0[order[k]].0);
        let kept: Vec<usize> = (0..order.len()).filter(|&k| last(k)).map(|k| order[k]).collect();
        let mut m = s.serialize_map(Some(kept.len()))?;
        for i in kept {
            m.serialize_entry(self.0[i].0, &self.0[i].1)?;
        }
        m.end()
    }
}

#[derive(Serialize)]
struct Inner<'d> {
    #[serde(rename = "$message_type")]
    message_type: &'static str,
    children: Vec<Child<'d>>,
    code: Code,
    level: &'static str,
    message: &'d str,
    rendered: &'d str,
    spans: Vec<Span<'d>>,
}

#[derive(Serialize)]
struct Child<'d> {
    children: [(); 0],
    code: (),
    level: &'static str,
    message: &'d str,
    rendered: (),
    spans: [(); 0],
}

#[derive(Serialize)]
struct Code {
    code: String,
    explanation: &'static RawValue,
}

#[derive(Serialize)]
struct Span<'d> {
    byte_end: usize,
    byte_start: usize,
    column_end: u32,
    column_start: u32,
    expansion: (),
    file_name: &'d str,
    is_primary: bool,
    label: Option<&'d str>,
    line_end: u32,
    line_start: u32,
    suggested_replacement: (),
    suggestion_applicability: (),
    text: [SpanText; 1],
}

#[derive(Serialize)]
struct SpanText {
    highlight_end: u32,
    highlight_start: u32,
    text: String,
}

#[derive(Serialize)]
struct Target<'d> {
    crate_types: [&'static str; 1],
    doc: bool,
    doctest: bool,
    edition: &'d str,
    kind: [&'static str; 1],
    name: &'d str,
    src_path: &'d str,
    test: bool,
}

fn span<'d>(name: &'d str, abs: Option<&std::path::Path>, line: u32, col: u32, col_end: u32, primary: bool, label: &'d str) -> Span<'d> {
    let file = abs.and_then(super::source::file);
    let (text, (byte_start, byte_end)) = match file.as_deref().map(super::source::File::text).filter(|s| !s.text.is_empty()) {
        Some(s) => {
            // (a line past the end: the text's end, empty)
            let (start, text) = s.line(line.max(1)).unwrap_or((s.text.len(), ""));
            (text.to_string(), (start + super::source::column_byte(text, col), start + super::source::column_byte(text, col_end)))
        }
        None => (String::new(), (0, 0)),
    };
    Span {
        byte_end,
        byte_start,
        column_end: col_end,
        column_start: col,
        expansion: (),
        file_name: name,
        is_primary: primary,
        label: (!label.is_empty()).then_some(label),
        line_end: line,
        line_start: line,
        suggested_replacement: (),
        suggestion_applicability: (),
        text: [SpanText { highlight_end: col_end, highlight_start: col, text }],
    }
}

pub fn message<'d>(d: &'d Diagnostic, origin: &'d Origin, rendered: &'d str) -> Message<'d> {
    let f = &d.finding;
    let file = d.file.as_deref().unwrap_or(&d.ptx_file);
    let mut spans = vec![span(file, d.abs_file.as_deref(), d.line, d.col, d.col_end, true, &f.label)];
    for (sf, abs, l, c, ce, label) in &d.secondary {
        spans.push(span(sf, Some(abs), *l, *c, *ce, false, label));
    }
    let child = |level: &'static str, message: &'d str| Child { children: [], code: (), level, message, rendered: (), spans: [] };
    let mut children: Vec<Child<'d>> = d.notes.iter().map(|(kind, text)| child(kind.name(), text)).collect();
    children.push(child("note", &d.level_note));
    let mut g = Fields::default();
    g.insert("lint", json!(f.lint.name));
    // the kernel as its source names it; the PTX symbol beside it (a C++ kernel's is mangled)
    g.insert("kernel", json!(gpucheck_analysis::names::bare(&f.kernel)));
    g.insert("ptx_kernel", json!(&*f.kernel));
    g.insert("ptx_file", json!(d.ptx_file));
    g.insert("ptx_line", json!(f.ptx_line));
    g.insert("duplicates", json!(d.duplicates));
    // the copies' range of the number the message leads with (the headline is the worst)
    if let (Some(r), Some((lo, hi))) = (d.finding.rank, d.ranks) {
        g.insert("copies_range", json!({"low": lo, "high": hi, "unit": r.unit.trim_start_matches(['-', ' '])}));
    }
    for (k, v) in &f.metrics {
        g.insert(k, metric_json(v));
    }
    // the values the finding's numbers or witness rest on that the kernel does not fix
    g.insert("assumes", assumes_json(&f.assumes));
    if let Some(r) = replay_json(&f.replay) {
        g.insert("replay", r);
    }
    Message {
        gpucheck: g,
        manifest_path: &origin.manifest_path,
        message: Inner {
            message_type: "diagnostic",
            children,
            code: Code { code: format!("gpucheck::{}", f.lint.name), explanation: explanation(f.lint) },
            level: level(d.level),
            message: &f.message,
            rendered,
            spans,
        },
        package_id: &origin.package_id,
        reason: "compiler-message",
        target: Target {
            crate_types: ["lib"],
            doc: true,
            doctest: false,
            edition: &origin.edition,
            kind: ["lib"],
            name: &origin.target_name,
            src_path: &origin.src_path,
            test: false,
        },
    }
}

/// A lint's explanation as a JSON string, made and escaped once per lint
/// (every message of it carries it).
fn explanation(lint: &'static gpucheck_analysis::lints::Lint) -> &'static RawValue {
    static MADE: std::sync::OnceLock<Vec<Box<RawValue>>> = std::sync::OnceLock::new();
    // (each lint's, then an empty one)
    let made = MADE.get_or_init(|| {
        let texts = gpucheck_analysis::lints::LINTS.iter().map(|l| l.explanation()).chain([String::new()]);
        texts.map(|t| serde_json::value::to_raw_value(&t).expect("a string serialises")).collect()
    });
    let k = gpucheck_analysis::lints::LINTS.iter().position(|l| std::ptr::eq(*l, lint)).unwrap_or(made.len() - 1);
    &made[k]
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
        Replay::Reproduced { launch, partner } => Some(json!({"status": "reproduced", "launch": &**launch, "other_partner": partner})),
        Replay::NotReproduced(how) => Some(json!({"status": "not_reproduced", "launch": &**how})),
        Replay::Unable(why) => Some(json!({"status": "not_replayed", "why": &**why})),
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The `gpucheck` object is written as the map of its entries: keys
    /// sorted, the last entry of a key kept.
    #[test]
    fn fields_are_the_map_of_their_entries() {
        let entries: [(&'static str, Value); 6] = [
            ("lint", json!("x")),
            ("assumes", json!([])),
            ("kernel", json!("k")),
            ("lint", json!("y")),
            ("a_b", json!(1)),
            ("kernel", json!(2)),
        ];
        let mut fields = Fields::default();
        let mut map = serde_json::Map::new();
        for (k, v) in entries {
            fields.insert(k, v.clone());
            map.insert(k.to_string(), v);
        }
        assert_eq!(serde_json::to_string(&fields).unwrap(), serde_json::to_string(&map).unwrap());
        assert_eq!(serde_json::to_string(&fields).unwrap(), r#"{"a_b":1,"assumes":[],"kernel":2,"lint":"y"}"#);
    }
}
