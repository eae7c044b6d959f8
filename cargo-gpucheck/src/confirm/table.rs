//! The confirm report: one row per access site (and per branch that split,
//! per race seen) with Rust line, space, predicted, observed and verdict;
//! printed as a table, or as `{"reason":"gpucheck-confirm",…}` JSON lines.
//!
//! Owns: verdict rules and formatting. Does not own: running kernels.

use super::{Seen, SiteSeen};
use crate::cli::{ConfirmArgs, MessageFormat};
use crate::diagnostic::PathStyle;
use gpucheck_analysis::{AccessReport, Finding, Metric};
use serde_json::json;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// The observed typical value is the predicted one.
    Confirmed,
    Mismatch,
    /// Predicted, but no warp executed the site.
    NotRun,
    /// Observed only (no static prediction: data-dependent address, or a branch).
    Observed,
    /// A race was seen.
    Race,
}

impl Verdict {
    fn as_str(self) -> &'static str {
        match self {
            Verdict::Confirmed => "confirmed",
            Verdict::Mismatch => "MISMATCH",
            Verdict::NotRun => "not executed",
            Verdict::Observed => "observed",
            Verdict::Race => "RACE",
        }
    }
}

#[derive(Debug, Clone)]
pub struct Row {
    pub place: String,
    pub line: u32,
    pub col: u32,
    pub file: String,
    pub ptx_line: u32,
    pub space: &'static str,
    pub predicted: String,
    pub observed: String,
    pub verdict: Verdict,
    pub json_predicted: serde_json::Value,
    pub json_observed: serde_json::Value,
}

fn seen_text(s: &SiteSeen, unit: &str) -> String {
    format!("{}{unit} (max {}, mean {:.2}, {} requests)", s.mode, s.max, s.mean, s.requests)
}

pub fn rows(
    accesses: &[&AccessReport],
    seen: &Seen,
    races_predicted: &[u32],
    findings: &[Finding],
    kernel: &str,
    paths: &PathStyle,
) -> Vec<Row> {
    let mut out = Vec::new();
    // (shown place, file, line, column) of a Rust position, else of the PTX line
    let place = |span: Option<&gpucheck_analysis::SrcPos>, ptx_line: u32| match span {
        Some(s) => (format!("{}:{}:{}", paths.display(&s.file), s.line, s.col), paths.display(&s.file), s.line, s.col),
        None => (format!("PTX line {ptx_line}"), String::new(), 0, 0),
    };
    for a in accesses {
        let obs = seen.sites.iter().find(|(l, _, _)| *l == a.ptx_line).map(|x| &x.2);
        let (pl, file, line, col) = place(a.span.as_ref(), a.ptx_line);
        let (predicted, typical, jp) = match (a.space, a.sectors, a.conflict) {
            ("global", Some((t, w, ideal)), _) => (
                format!("{t} sectors/req (worst {w}, ideal {ideal})"),
                Some(t),
                json!({"sectors_per_request": t, "worst_sectors_per_request": w, "ideal_sectors_per_request": ideal}),
            ),
            ("shared", _, Some((t, w))) => {
                (format!("{t}-way (worst {w})"), Some(t), json!({"conflict_degree": t, "worst_conflict_degree": w}))
            }
            _ => ("— (data-dependent)".to_string(), None, serde_json::Value::Null),
        };
        let unit = if a.space == "global" { " sectors/req" } else { "-way" };
        let (observed, jo) = match obs {
            Some(s) => (seen_text(s, unit), json!({"typical": s.mode, "max": s.max, "mean": s.mean, "requests": s.requests})),
            None => ("not executed".to_string(), serde_json::Value::Null),
        };
        let verdict = match (typical, obs) {
            (_, None) => Verdict::NotRun,
            (None, Some(_)) => Verdict::Observed,
            (Some(t), Some(s)) if s.mode == t => Verdict::Confirmed,
            _ => Verdict::Mismatch,
        };
        out.push(Row {
            place: pl,
            line,
            col,
            file,
            ptx_line: a.ptx_line,
            space: a.space,
            predicted,
            observed,
            verdict,
            json_predicted: jp,
            json_observed: jo,
        });
    }
    // branches that split
    for &(pline, execs, splits) in seen.branches.iter().filter(|b| b.2 > 0) {
        let f = findings
            .iter()
            .find(|f| f.kernel == gpucheck_analysis::demangle(kernel) && f.ptx_line == pline && f.lint.name == "divergent_branch");
        let frac = f.and_then(|f| f.metrics.iter().find(|m| m.0 == "divergent_fraction")).and_then(|m| match m.1 {
            Metric::Float(x) => Some(x),
            _ => None,
        });
        let (pl, file, line, col) = place(f.and_then(|f| f.span.as_ref()), pline);
        out.push(Row {
            place: pl,
            line,
            col,
            file,
            ptx_line: pline,
            space: "branch",
            predicted: frac.map(|x| format!("{:.0}% of warps split", x * 100.0)).unwrap_or_else(|| "—".into()),
            observed: format!("{splits} of {execs} warp executions split ({:.1}%)", 100.0 * splits as f64 / execs.max(1) as f64),
            verdict: Verdict::Observed,
            json_predicted: frac.map(|x| json!({"divergent_fraction": x})).unwrap_or(serde_json::Value::Null),
            json_observed: json!({"executions": execs, "splits": splits}),
        });
    }
    for &(kind, shared, l1, l2, t1, t2) in &seen.races {
        let predicted = races_predicted.iter().any(|&a| a == l1 || a == l2);
        let who = |t: u32| if t == u32::MAX { "several threads".to_string() } else { format!("thread {t}") };
        // both accesses at their Rust lines when the PTX says where they come from
        let at = |l: u32| accesses.iter().find(|a| a.ptx_line == l).and_then(|a| a.span.clone());
        let (place, file, line, col) = match (at(l1), at(l2)) {
            (Some(a), Some(b)) => {
                (format!("{}:{}:{} and {}:{}", paths.display(&b.file), b.line, b.col, a.line, a.col), paths.display(&b.file), b.line, b.col)
            }
            _ => (format!("PTX lines {l1} and {l2}"), String::new(), 0, 0),
        };
        out.push(Row {
            place,
            line,
            col,
            file,
            ptx_line: l2,
            space: if shared { "shared" } else { "global" },
            predicted: if predicted { "race".into() } else { "no race".into() },
            observed: format!("{kind}: {} then {}", who(t1), who(t2)),
            verdict: Verdict::Race,
            json_predicted: json!({"race": predicted}),
            json_observed: json!({"race": kind, "first_ptx_line": l1, "second_ptx_line": l2, "first_thread": t1, "second_thread": t2}),
        });
    }
    out
}

pub fn print(rows: &[Row], seen: &Seen, a: &ConfirmArgs, kernel: &str, package: &str) {
    let kernel = gpucheck_analysis::demangle(kernel);
    match a.message_format {
        MessageFormat::Json | MessageFormat::Sarif => {
            for r in rows {
                println!(
                    "{}",
                    json!({
                        "reason": "gpucheck-confirm",
                        "package": package,
                        "kernel": kernel,
                        "file": r.file,
                        "line": r.line,
                        "column": r.col,
                        "ptx_line": r.ptx_line,
                        "space": r.space,
                        "predicted": r.json_predicted,
                        "observed": r.json_observed,
                        "engine": a.engine.name(),
                        "verdict": r.verdict.as_str(),
                    })
                );
            }
        }
        MessageFormat::Human => {
            let rate = seen.lane_insts as f64 / seen.seconds.max(1e-9) / 1e6;
            eprintln!("    {} lane-instructions in {:.3} s ({rate:.0} M/s)", seen.lane_insts, seen.seconds);
            if let Some(ms) = seen.kernel_ms {
                eprintln!("    uninstrumented kernel time (CUDA events): {ms:.3} ms");
            }
            let w0 = rows.iter().map(|r| r.place.len()).max().unwrap_or(4).max(4);
            let w1 = rows.iter().map(|r| r.predicted.chars().count()).max().unwrap_or(9).max(9);
            let w2 = rows.iter().map(|r| r.observed.chars().count()).max().unwrap_or(8).max(8);
            println!("{:w0$}  {:6}  {:w1$}  {:w2$}  verdict", "line", "space", "predicted", "observed");
            for r in rows {
                println!("{:w0$}  {:6}  {:w1$}  {:w2$}  {}", r.place, r.space, r.predicted, r.observed, r.verdict.as_str());
            }
            let bad = rows.iter().filter(|r| matches!(r.verdict, Verdict::Mismatch | Verdict::Race)).count();
            let ok = rows.iter().filter(|r| r.verdict == Verdict::Confirmed).count();
            println!("{kernel}: {ok} confirmed, {bad} mismatches or races\n");
        }
    }
}
