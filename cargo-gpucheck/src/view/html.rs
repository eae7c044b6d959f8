//! The report's pages, rendered with `maud`: `index.html` (the overview:
//! one sortable row per kernel), one page per source file (`src/N.html`:
//! the code with its gutter columns), `style.css` and `report.js` (sorting,
//! opening a line's details; no framework, nothing fetched).
//!
//! Owns: markup, colours and the little script. Does not own: the data
//! (`super::Doc`).

use super::{heat, Column, Doc, FileView, KernelRow, LineView, SiteView};
use maud::{html, Markup, DOCTYPE};
use std::path::Path;

const CSS: &str = r#"
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em; color: #1d1d1f; }
h1 { font-size: 1.4em; margin: 0 0 .3em; }
.sub { color: #555; margin-bottom: 1em; }
table { border-collapse: collapse; }
table.overview th, table.overview td { border-bottom: 1px solid #ddd; padding: 4px 8px; text-align: right; vertical-align: top; }
table.overview th { cursor: pointer; background: #f4f4f6; position: sticky; top: 0; }
table.overview th.sorted-asc::after { content: " ▲"; } table.overview th.sorted-desc::after { content: " ▼"; }
table.overview td.name, table.overview th.name, table.overview td.lints { text-align: left; }
table.overview td.bytes { white-space: nowrap; }
.bar { position: relative; width: 160px; height: 12px; background: #eee; display: inline-block; vertical-align: middle; }
.bar .moved { position: absolute; left: 0; top: 0; bottom: 0; }
.bar .ideal { position: absolute; left: 0; top: 3px; bottom: 3px; background: #2a7; }
.tag { display: inline-block; padding: 0 5px; border-radius: 3px; background: #eef; margin: 1px; font-size: 12px; }
.tag.error { background: #fbb; } .tag.bad { background: #f88; } .tag.ok { background: #bfb; }
.note { color: #555; }
table.src { width: 100%; font: 12.5px/1.45 ui-monospace, monospace; }
table.src td { padding: 0 6px; vertical-align: top; white-space: pre; }
table.src td.n { color: #888; text-align: right; user-select: none; }
table.src td.g { text-align: center; min-width: 4.2em; font-size: 11.5px; border-left: 1px solid #eee; }
table.src tr.has-site, table.src tr.has-finding { cursor: pointer; }
table.src tr.has-finding td.code { text-decoration: underline wavy #d33; text-decoration-skip-ink: none; }
table.src tr.detail td { white-space: normal; background: #fafafa; border: 1px solid #ddd; padding: 6px 10px; font: 13px/1.4 system-ui, sans-serif; }
table.src tr.gap td { color: #aaa; text-align: center; }
.finding { margin: 3px 0; } .finding .lint { font-weight: 600; }
.finding.error .lint { color: #b00; } .finding.warning .lint { color: #a60; }
.site { margin: 2px 0; } .mismatch { background: #fdd; font-weight: 600; }
td.run.ok { color: #180; font-weight: 600; } td.run.mismatch { background: #f88 !important; color: #600; }
a.race-link { color: #b00; font-weight: 600; }
.legend span.sw { display: inline-block; width: 3.5em; text-align: center; font-size: 12px; }
tr:target td { outline: 2px solid #48f; }
"#;

const JS: &str = r#"
// sorting the overview: click a header; numbers sort by data-sort
document.querySelectorAll('table.overview th').forEach(function (th, col) {
  th.addEventListener('click', function () {
    var tbody = th.closest('table').tBodies[0];
    var desc = !th.classList.contains('sorted-desc');
    th.parentNode.querySelectorAll('th').forEach(function (h) { h.classList.remove('sorted-asc', 'sorted-desc'); });
    th.classList.add(desc ? 'sorted-desc' : 'sorted-asc');
    var rows = Array.prototype.slice.call(tbody.rows);
    rows.sort(function (a, b) {
      var x = a.cells[col].dataset.sort, y = b.cells[col].dataset.sort;
      var nx = parseFloat(x), ny = parseFloat(y);
      var c = (isNaN(nx) || isNaN(ny)) ? String(x).localeCompare(String(y)) : nx - ny;
      return desc ? -c : c;
    });
    rows.forEach(function (r) { tbody.appendChild(r); });
  });
});
// a line's details: click the line (or arrive at #L<n>)
function toggle(tr, open) {
  var d = tr.nextElementSibling;
  if (d && d.classList.contains('detail')) { d.hidden = open === undefined ? !d.hidden : !open; }
}
document.querySelectorAll('table.src tr.has-site, table.src tr.has-finding').forEach(function (tr) {
  tr.addEventListener('click', function (e) { if (e.target.tagName !== 'A') toggle(tr); });
});
function openHash() { var t = location.hash && document.getElementById(location.hash.slice(1)); if (t) toggle(t, true); }
window.addEventListener('hashchange', openHash); openHash();
"#;

/// The background of a cell at this cost.
fn colour(ratio: f64) -> String {
    let t = heat(ratio);
    format!("background:hsl({:.0},75%,{:.0}%)", 120.0 * (1.0 - t), 82.0 - 10.0 * t)
}

fn page(title: &str, css: &str, body: Markup) -> String {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) }
                link rel="stylesheet" href=(css);
            }
            body { (body) }
        }
    }
    .into_string()
}

fn script(prefix: &str) -> Markup {
    html! { script src=(format!("{prefix}report.js")) {} }
}

/// Write the pages into `dir`; returns the path of `index.html`.
pub fn write(doc: &Doc, dir: &Path) -> anyhow::Result<std::path::PathBuf> {
    use anyhow::Context;
    std::fs::create_dir_all(dir.join("src")).with_context(|| format!("creating `{}`", dir.display()))?;
    let w = |p: &Path, s: &str| std::fs::write(p, s).with_context(|| format!("writing `{}`", p.display()));
    w(&dir.join("style.css"), CSS)?;
    w(&dir.join("report.js"), JS)?;
    for f in &doc.files {
        w(&dir.join("src").join(&f.page), &source_page(doc, f))?;
    }
    let index = dir.join("index.html");
    w(&index, &overview(doc))?;
    Ok(index)
}

fn link_to(doc: &Doc, l: &super::Link, prefix: &str) -> String {
    let page = doc.files.get(l.file).map_or("", |f| f.page.as_str());
    format!("{prefix}src/{page}#L{}", l.line)
}

fn overview(doc: &Doc) -> String {
    let max_moved = doc.kernels.iter().map(|k| k.bytes_moved).max().unwrap_or(0).max(1);
    let body = html! {
        h1 { "GPU kernel report" }
        div.sub {
            (doc.tool) " · " (doc.kernels.iter().filter(|k| k.entry).count()) " kernels, "
            (doc.kernels.iter().filter(|k| !k.entry).count()) " device functions · "
            @if doc.confirmed { "predictions beside a run on the CPU engine" } @else { "static predictions (add --confirm to run the kernels)" }
            " · sorted by bytes moved beyond the ideal per request; click a header to sort"
        }
        @for n in &doc.notes { p.note { (n) } }
        @if !doc.costliest.is_empty() {
            h2 { "Costliest findings" }
            p.sub { "performance findings by their predicted share of their kernel's cost (sectors or shared transactions beyond the ideal, lane-slots left idle)" }
            table.overview id="costliest" {
                thead { tr { th { "share" } th.name { "where" } th.name { "kernel" } th.name { "of" } th.name { "lint" } } }
                tbody {
                    @for c in &doc.costliest {
                        tr {
                            td.num data-sort=(format!("{:.4}", c.share)) { (format!("{:.0} %", 100.0 * c.share)) }
                            td.name { a href=(link_to(doc, &c.at, "")) { (c.place) } }
                            td.name { (c.kernel) }
                            td.name { (c.of) }
                            td.name { (c.lint) }
                        }
                    }
                }
            }
        }
        table.overview id="kernels" {
            thead { tr {
                th.name { "kernel" }
                th { "block" }
                th { "instructions" }
                th title="memory instructions analysed / in the function" { "memory analysed" }
                th.name { "findings" }
                th title="bytes moved per warp request, summed over the global access sites (green: the ideal)" { "bytes moved / ideal" }
                th title="branches with a divergent_branch finding; of the thread-dependent branches that split some warp" { "divergent branches" }
                th { "barriers" }
                th { "races" }
                @if doc.confirmed { th { "confirm" } }
            } }
            tbody {
                @for k in &doc.kernels { (kernel_row(doc, k, max_moved)) }
            }
        }
        h2 { "Source files" }
        ul.files {
            @for f in &doc.files {
                li {
                    a href=(format!("src/{}", f.page)) { (f.path) }
                    " — " (f.lines.len()) " lines with sites"
                    @let findings = f.lines.iter().map(|l| l.findings.len()).sum::<usize>();
                    @if findings > 0 { ", " (findings) " findings" }
                    @if f.is_ptx { span.note { " (PTX: no source line for these instructions)" } }
                }
            }
        }
        (script(""))
    };
    page("gpucheck report", "style.css", body)
}

fn kernel_row(doc: &Doc, k: &KernelRow, max_moved: u64) -> Markup {
    let ratio = k.bytes_moved as f64 / k.bytes_ideal.max(1) as f64;
    let coverage = if k.memory_instructions == 0 { 1.0 } else { k.memory_analysed as f64 / k.memory_instructions as f64 };
    let nfind: usize = k.findings.values().sum();
    html! {
        tr.kernel data-kernel=(k.name) {
            td.name data-sort=(k.name) {
                @match &k.worst { Some(l) => a href=(link_to(doc, l, "")) { (k.name) }, None => (k.name) }
                @if !k.entry { " " span.tag { "device fn" } }
                br; span.note title=(k.ptx) { (k.package) }
            }
            td data-sort=(k.block.iter().product::<u32>()) title=(k.shape_source) { (format!("{}×{}×{}", k.block[0], k.block[1], k.block[2])) }
            td data-sort=(k.instructions) { (k.instructions) }
            td data-sort=(format!("{coverage:.4}")) title=(k.not_analysed.iter().map(|(r, n)| format!("{n} not analysed: {r}")).collect::<Vec<_>>().join("; ")) {
                (k.memory_analysed) " / " (k.memory_instructions)
                @if k.memory_analysed < k.memory_instructions { " " span.tag.bad { (format!("{:.0}%", 100.0 * coverage)) } }
            }
            td.lints data-sort=(nfind) {
                @for (lint, n) in &k.findings {
                    span.tag.(if k.errors > 0 && lint.ends_with("race") { "error" } else { "" }) { (lint) " ×" (n) }
                }
            }
            td.bytes data-sort=(k.bytes_moved) title=(format!("{} B moved per request over {} sites; ideal {} B ({:.2}×)", k.bytes_moved, k.access_sites, k.bytes_ideal, ratio)) {
                span.bar {
                    span.moved style=(format!("width:{:.1}%;{}", 100.0 * k.bytes_moved as f64 / max_moved as f64, colour(ratio))) {}
                    span.ideal style=(format!("width:{:.1}%", 100.0 * k.bytes_ideal as f64 / max_moved as f64)) {}
                }
                " " (k.bytes_moved) " / " (k.bytes_ideal) " B"
            }
            td data-sort=(k.divergent_branches) title=(format!("{} with a divergent_branch finding; {} thread-dependent branches split some warp", k.divergent_branches, k.split_branches)) {
                (k.divergent_branches)
                @if k.split_branches > k.divergent_branches { " " span.note { "of " (k.split_branches) " splitting" } }
            }
            td data-sort=(k.barriers) { (k.barriers) @if k.divergent_barriers > 0 { " " span.tag.bad { (k.divergent_barriers) " divergent" } } }
            td data-sort=(k.races) { @if k.races > 0 { span.tag.bad { (k.races) } } @else { "0" } }
            @if doc.confirmed {
                @match &k.confirm {
                    Some(c) => td data-sort=(c.mismatches + c.races_seen + c.barrier_divergence) {
                        span.tag.ok { (c.confirmed) " confirmed" }
                        @if c.mismatches > 0 { " " span.tag.bad { (c.mismatches) " mismatch" } }
                        @if c.races_seen > 0 { " " span.tag.bad { (c.races_seen) " race seen" } }
                        @if c.barrier_divergence > 0 { " " span.tag.bad { (c.barrier_divergence) " barrier divergence" } }
                    },
                    None => td data-sort="-1" { span.note { "not run" } },
                }
            }
        }
    }
}

/// The cell of one column on a line: the worst site of that column.
fn cell(doc: &Doc, sites: &[&SiteView], col: Column) -> Markup {
    let of: Vec<&&SiteView> = sites.iter().filter(|s| s.column == col).collect();
    if of.is_empty() {
        return html! { td.g {} };
    }
    let worst = of.iter().max_by(|a, b| a.ratio.unwrap_or(0.0).total_cmp(&b.ratio.unwrap_or(0.0))).unwrap();
    let failure = of.iter().any(|s| s.failure);
    let style = worst.ratio.map(colour).unwrap_or_else(|| "background:#e4e4e8".into());
    let text = match (col, worst.ratio) {
        (_, None) => "?".to_string(),
        (Column::Sectors, _) => {
            let n = &worst.numbers;
            format!("{}/{}", n["sectors"], n["ideal"])
        }
        (Column::Banks, Some(r)) => format!("{r:.0}-way"),
        (Column::Split, Some(r)) => format!("{:.0}%", 100.0 * (r - 1.0)),
        (Column::Barrier, Some(r)) if r > 1.0 => "skip".into(),
        (Column::Barrier, _) => "all".into(),
        (Column::Race, _) => "race".into(),
    };
    html! {
        td.g.(format!("c-{}", col_name(col))).(if failure { "mismatch" } else { "" }) style=(style) data-ratio=(worst.ratio.unwrap_or(0.0)) {
            @match (&worst.partner, col) {
                (Some(p), Column::Race) => a.race-link href=(link_to(doc, p, "../")) title="the other access of the race" { (text) },
                _ => (text),
            }
        }
    }
}

/// The run's column (with `--confirm`): ✓ when every judged site of the
/// line agrees with its prediction, ✗ on a mismatch, `race` when the run
/// saw one, · when observed without a verdict, – when not executed.
fn run_cell(sites: &[&SiteView]) -> Markup {
    let verdicts: Vec<&str> = sites.iter().filter_map(|s| s.verdict.as_deref()).collect();
    if verdicts.is_empty() {
        return html! { td.g.run {} };
    }
    let (text, class) = if verdicts.contains(&"RACE") {
        ("race", "run mismatch")
    } else if sites.iter().any(|s| s.failure) {
        ("✗", "run mismatch")
    } else if verdicts.iter().any(|v| v.starts_with("confirmed") || *v == "within bound") {
        ("✓", "run ok")
    } else if verdicts.iter().all(|v| *v == "not executed") {
        ("–", "run")
    } else {
        ("·", "run")
    };
    let title: Vec<String> = sites
        .iter()
        .filter_map(|s| Some(format!("{}: observed {} — {}", s.kernel, s.observed.as_deref()?, s.verdict.as_deref()?)))
        .collect();
    html! { td class=(format!("g {class}")) title=(title.join("\n")) { (text) } }
}

/// A column's name (its header, and its cells' CSS class `c-NAME`).
fn col_name(c: Column) -> &'static str {
    COLUMNS.iter().find(|x| x.0 == c).map_or("", |x| x.1)
}

const COLUMNS: [(Column, &str, &str); 5] = [
    (Column::Sectors, "sectors", "global memory: sectors per warp request / ideal"),
    (Column::Banks, "banks", "shared memory: bank-conflict degree"),
    (Column::Split, "split", "branch: warps of a block that take both sides"),
    (Column::Barrier, "barrier", "a barrier: reached by all threads of the block, or skipped by some"),
    (Column::Race, "race", "a data race: click to go to the other access"),
];

fn summary(l: &LineView) -> String {
    let mut out: Vec<String> = l.findings.iter().map(|f| format!("{}: {}", f.lint, f.message)).collect();
    out.extend(l.sites.iter().map(|s| s.predicted.clone()));
    out.join("\n")
}

fn detail(doc: &Doc, l: &LineView, ncols: usize) -> Markup {
    html! {
        tr.detail hidden {
            td colspan=(ncols) {
                @for f in &l.findings {
                    div.finding.(f.level) {
                        span.lint { (f.level) "[" (f.lint) "]" } " " (f.message)
                        @if !f.label.is_empty() { " — " (f.label) }
                        " " span.note { "(" (f.kernel) ")" }
                        @for n in &f.notes { div.note { "= " (n) } }
                    }
                }
                @for s in &l.sites {
                    div.site.(if s.failure { "mismatch" } else { "" }) {
                        b { (s.kernel) } ": " (s.predicted)
                        @if s.ptx_lines.len() > 1 { " " span.tag { "×" (s.ptx_lines.len()) " PTX copies" } }
                        " " span.note { "PTX line" @if s.ptx_lines.len() > 1 { "s" } " " (s.ptx_lines.iter().map(|n| n.to_string()).collect::<Vec<_>>().join(", ")) }
                        @if let Some(v) = &s.via { " " span.note { "(in the call at " (v) ")" } }
                        @if let Some(p) = &s.partner { " " a.race-link href=(link_to(doc, p, "../")) { "→ the other access" } }
                        @if let (Some(o), Some(v)) = (&s.observed, &s.verdict) { br; "observed: " (o) " — " b { (v) } }
                    }
                }
            }
        }
    }
}

fn source_page(doc: &Doc, f: &FileView) -> String {
    let text = std::fs::read_to_string(&f.abs).ok();
    let lines: Vec<&str> = text.as_deref().map(|t| t.lines().collect()).unwrap_or_default();
    let by_line: std::collections::HashMap<u32, &LineView> = f.lines.iter().map(|l| (l.line, l)).collect();
    // big files (PTX standing in for sources): only the lines with sites and some context
    let shown: Vec<u32> = if lines.is_empty() {
        f.lines.iter().map(|l| l.line).collect()
    } else if lines.len() > 5000 {
        let mut s: std::collections::BTreeSet<u32> = Default::default();
        for l in &f.lines {
            s.extend(l.line.saturating_sub(2).max(1)..=(l.line + 2).min(lines.len() as u32));
        }
        s.into_iter().collect()
    } else {
        (1..=lines.len() as u32).collect()
    };
    let ncols = COLUMNS.len() + 2 + doc.confirmed as usize;
    let body = html! {
        h1 { (f.path) }
        div.sub {
            a href="../index.html" { "← all kernels" } " · " (doc.tool)
            @if text.is_none() { " · " span.note { "the file could not be read: only the lines with sites are listed" } }
            @if lines.len() > 5000 { " · " span.note { "a long file: only the lines with sites are shown, with 2 lines around each" } }
        }
        div.legend {
            "cost: "
            @for r in [1.0, 1.5, 2.0, 3.0, 4.0, 6.0, 8.0] { span.sw style=(colour(r)) { (r) "×" } }
            span.note { " — click a marked line for its predictions" @if doc.confirmed { ", what the run observed" } " and findings" }
        }
        table.src {
            thead { tr {
                th { "line" }
                @for (_, name, title) in COLUMNS { th title=(title) { (name) } }
                @if doc.confirmed { th title="the confirm run: ✓ as predicted, ✗ a mismatch, race: a race seen, · observed without a verdict, – not executed" { "run" } }
                th { }
            } }
            tbody {
                @for (i, n) in shown.iter().enumerate() {
                    @if i > 0 && *n > shown[i - 1] + 1 { tr.gap { td colspan=(ncols) { "⋮" } } }
                    @let l = by_line.get(n);
                    @let sites: Vec<&SiteView> = l.map(|l| l.sites.iter().collect()).unwrap_or_default();
                    @let code = lines.get(*n as usize - 1).copied().unwrap_or("");
                    tr id=(format!("L{n}"))
                        class=(match l { Some(l) if !l.findings.is_empty() => "has-finding has-site", Some(_) => "has-site", None => "" })
                        title=[l.map(|l| summary(l))] {
                        td.n { (n) }
                        @for (c, _, _) in COLUMNS { (cell(doc, &sites, c)) }
                        @if doc.confirmed { (run_cell(&sites)) }
                        td.code { (code) }
                    }
                    @if let Some(l) = l { (detail(doc, l, ncols)) }
                }
            }
        }
        (script("../"))
    };
    page(&format!("{} — gpucheck report", f.path), "../style.css", body)
}
