//! `cargo gpucheck report`: the data of the source-view report — one row
//! per kernel, and per source file every line with an access site, a
//! divergent branch, a barrier or a race, each with its prediction, the
//! findings reported there and (with `--confirm`) what a run observed.
//!
//! Owns: joining the analysis' reports, the diagnostics (after levels and
//! `// gpucheck: allow`) and confirm rows into one serialisable [`Doc`]
//! (`--format json` prints it as is), the cost scale lines are coloured on,
//! and writing the pages (`html`). Does not own: the analysis, lint levels,
//! running kernels (`confirm`), or the build.

pub mod html;

use crate::confirm::table::{Row, Verdict};
use crate::diagnostic::{Diagnostic, PathStyle};
use gpucheck_analysis::lints::DIVERGENT_BRANCH;
use gpucheck_analysis::{BranchPrediction, Report, Site};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};

/// One analysed PTX file and what was reported on it.
pub struct Input<'a> {
    pub package: &'a str,
    /// The PTX file as shown (relative to the workspace).
    pub ptx: &'a str,
    pub diags: &'a [Diagnostic],
    pub analysis: &'a Report,
    /// Confirm runs of this file's kernels (empty without `--confirm`).
    pub runs: Vec<&'a crate::confirm::KernelRun>,
}

/// The whole report.
#[derive(Serialize, Debug)]
pub struct Doc {
    pub tool: String,
    /// Whether kernels were run (`--confirm`).
    pub confirmed: bool,
    pub kernels: Vec<KernelRow>,
    pub files: Vec<FileView>,
    /// What the report could not show, and why.
    pub notes: Vec<String>,
    /// The costliest performance findings, by their predicted share of
    /// their kernel's cost (at most ten).
    pub costliest: Vec<Costly>,
}

/// A performance finding in the overview's ranking.
#[derive(Serialize, Debug)]
pub struct Costly {
    pub at: Link,
    pub place: String,
    pub lint: String,
    pub kernel: String,
    pub share: f64,
    pub of: String,
}

/// One kernel (or device function) of the overview.
#[derive(Serialize, Debug)]
pub struct KernelRow {
    pub package: String,
    pub ptx: String,
    pub name: String,
    /// A kernel (`.entry`), else a device function.
    pub entry: bool,
    pub block: [u32; 3],
    /// Where the block shape came from.
    pub shape_source: String,
    pub instructions: usize,
    pub memory_instructions: usize,
    pub memory_analysed: usize,
    /// Not analysed, per reason: (reason, count).
    pub not_analysed: Vec<(String, usize)>,
    /// Findings by lint (as reported at their levels).
    pub findings: BTreeMap<String, usize>,
    pub errors: usize,
    /// Global access sites with a prediction: bytes moved per warp request
    /// (sectors × 32) and the ideal, summed over the sites.
    pub bytes_moved: u64,
    pub bytes_ideal: u64,
    pub access_sites: usize,
    /// Branches with a `divergent_branch` finding (as reported).
    pub divergent_branches: usize,
    /// Thread-dependent branches known to split some warp (or to run
    /// different trip counts in one), reported or not: most are too cheap
    /// to report (a bounds check splits one warp).
    pub split_branches: usize,
    pub barriers: usize,
    pub divergent_barriers: usize,
    pub races: usize,
    /// Where to look first: the file and line of its worst site.
    pub worst: Option<Link>,
    /// With `--confirm`, when the kernel ran.
    pub confirm: Option<ConfirmSummary>,
}

#[derive(Serialize, Debug, Default, Clone)]
pub struct ConfirmSummary {
    /// Predictions the run agreed with (confirmed, within bound).
    pub confirmed: usize,
    pub mismatches: usize,
    pub races_seen: usize,
    pub barrier_divergence: usize,
    /// Predicted but not executed, or shown without a verdict.
    pub other: usize,
}

/// A place in the report: a file (index in `Doc::files`) and line.
#[derive(Serialize, Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Link {
    pub file: usize,
    pub line: u32,
}

/// One source file (or the PTX itself, for code without line information).
#[derive(Serialize, Debug)]
pub struct FileView {
    pub path: String,
    /// Absolute path read for the text (not serialised).
    #[serde(skip)]
    pub abs: std::path::PathBuf,
    /// The PTX file stands in for sources the PTX has no line for.
    pub is_ptx: bool,
    /// Its page under `src/`, named after the file (`kernels_src_lib.rs.html`).
    pub page: String,
    /// The lines with something to show, in order.
    pub lines: Vec<LineView>,
}

#[derive(Serialize, Debug)]
pub struct LineView {
    pub line: u32,
    pub sites: Vec<SiteView>,
    pub findings: Vec<FindingView>,
    /// The line's worst cost: see [`SiteView::ratio`].
    pub ratio: Option<f64>,
}

/// A site's column in the source view.
#[derive(Serialize, Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[serde(rename_all = "snake_case")]
pub enum Column {
    /// Global memory: sectors per warp request against the ideal.
    Sectors,
    /// Shared memory: the bank-conflict degree.
    Banks,
    /// A branch: the fraction of warps that split.
    Split,
    Barrier,
    Race,
}

/// One prediction at a line: PTX copies of the same site (unrolled loops,
/// several calls of one helper at the same call site) folded with their count.
#[derive(Serialize, Debug, Clone)]
pub struct SiteView {
    pub column: Column,
    pub kernel: String,
    pub ptx_lines: Vec<u32>,
    /// The call site a helper's line was inlined at.
    pub via: Option<String>,
    pub predicted: String,
    /// Cost as a multiple of the ideal: sectors / ideal sectors (global),
    /// the conflict degree (shared), 1 + the fraction of warps split (a
    /// split warp runs both sides); `None` when not predictable.
    pub ratio: Option<f64>,
    pub numbers: serde_json::Value,
    /// With `--confirm`: what the run observed and the verdict.
    pub observed: Option<String>,
    pub verdict: Option<String>,
    /// The verdict makes `confirm` fail (mismatch, race seen, barrier divergence).
    pub failure: bool,
    /// A race's other access.
    pub partner: Option<Link>,
}

#[derive(Serialize, Debug, Clone)]
pub struct FindingView {
    pub lint: String,
    pub level: String,
    pub kernel: String,
    pub message: String,
    pub label: String,
    pub notes: Vec<String>,
}

/// The cost scale: 1 (ideal) is green, 8× or more red; logarithmic.
pub fn heat(ratio: f64) -> f64 {
    // (libm's: the binary links no C math library, see the analysis crate's `ir::scalar`)
    (libm::log2(ratio.max(1.0)) / 3.0).clamp(0.0, 1.0)
}

/// Where a site shows: its source line, else its PTX line.
/// A source page's file name: the path as shown, every character but
/// letters, digits, `.`, `-` and `_` made `_` (`kernels/src/lib.rs` →
/// `kernels_src_lib.rs.html`), `-2`, `-3`, … after a name `taken` already.
fn page_name(shown: &str, taken: impl Fn(&str) -> bool) -> String {
    let base: String = shown.chars().map(|c| if c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_') { c } else { '_' }).collect();
    let base = base.trim_start_matches(['_', '.']);
    let base = if base.is_empty() { "source" } else { base };
    (1..).map(|n| if n == 1 { format!("{base}.html") } else { format!("{base}-{n}.html") }).find(|p| !taken(p)).expect("a free name")
}

struct Placer<'p> {
    paths: &'p PathStyle,
    files: Vec<FileView>,
    index: HashMap<String, usize>,
    lines: Vec<BTreeMap<u32, LineView>>,
}

impl Placer<'_> {
    fn file(&mut self, shown: String, abs: std::path::PathBuf, is_ptx: bool) -> usize {
        if let Some(&i) = self.index.get(&shown) {
            return i;
        }
        let page = page_name(&shown, |p| self.files.iter().any(|f| f.page == p));
        self.files.push(FileView { path: shown.clone(), abs, is_ptx, page, lines: vec![] });
        self.lines.push(BTreeMap::new());
        self.index.insert(shown, self.files.len() - 1);
        self.files.len() - 1
    }

    fn link(&mut self, site: &Site, ptx: &str) -> Link {
        match &site.span {
            Some(s) => {
                let file = self.file(self.paths.display(&s.file), self.paths.absolute(&s.file), false);
                Link { file, line: s.line }
            }
            None => {
                let file = self.file(ptx.to_string(), self.paths.absolute(ptx), true);
                Link { file, line: site.ptx_line }
            }
        }
    }

    fn line(&mut self, at: &Link) -> &mut LineView {
        self.lines[at.file].entry(at.line).or_insert_with(|| LineView { line: at.line, sites: vec![], findings: vec![], ratio: None })
    }

    fn add(&mut self, at: &Link, s: SiteView) {
        let line = self.line(at);
        let same = |x: &SiteView| {
            (x.column, &x.kernel, &x.via, &x.predicted, &x.observed, &x.verdict, &x.partner)
                == (s.column, &s.kernel, &s.via, &s.predicted, &s.observed, &s.verdict, &s.partner)
        };
        match line.sites.iter_mut().find(|x| same(x)) {
            Some(x) => x.ptx_lines.extend(s.ptx_lines),
            None => line.sites.push(s),
        }
    }
}

fn via_text(paths: &PathStyle, site: &Site) -> Option<String> {
    let v = site.via.as_ref()?;
    Some(format!("{}:{}:{}", paths.display(&v.file), v.line, v.col))
}

/// What a run saw at a site: (observed, verdict, whether it fails).
type Seen = (Option<String>, Option<String>, bool);

impl SiteView {
    /// A prediction at `site` (its kernel, PTX line, call site) in a column,
    /// with what the run saw there.
    fn at(
        column: Column,
        site: &Site,
        paths: &PathStyle,
        predicted: String,
        ratio: Option<f64>,
        numbers: serde_json::Value,
        seen: Seen,
    ) -> Self {
        let (observed, verdict, failure) = seen;
        SiteView {
            column,
            kernel: site.kernel.clone(),
            ptx_lines: vec![site.ptx_line],
            via: via_text(paths, site),
            predicted,
            ratio,
            numbers,
            observed,
            verdict,
            failure,
            partner: None,
        }
    }
}

/// The confirm rows of a run by instruction and kind.
type RowIndex<'a> = HashMap<(gpucheck_analysis::interp::SiteKey, &'static str), &'a Row>;

fn observed(rows: &RowIndex<'_>, site: &Site, what: &'static str) -> Seen {
    match rows.get(&(site.key(), what)) {
        Some(r) => (Some(r.observed.clone()), Some(verdict_text(r.verdict)), r.verdict.is_failure()),
        None => (None, None, false),
    }
}

fn verdict_text(v: Verdict) -> String {
    v.as_str().to_string()
}

fn ratio_of(n: u32, ideal: u32) -> f64 {
    n as f64 / ideal.max(1) as f64
}

impl Doc {
    pub fn build(inputs: &[Input<'_>], paths: &PathStyle, confirmed: bool) -> Doc {
        let mut p = Placer { paths, files: vec![], index: HashMap::new(), lines: vec![] };
        let mut kernels = Vec::new();
        let mut notes = Vec::new();
        let mut costliest: Vec<Costly> = Vec::new();
        let mut quiet_fns = 0;
        for u in inputs {
            let a = u.analysis;
            let mut rows: RowIndex<'_> = HashMap::new();
            for r in u.runs.iter().flat_map(|r| &r.rows) {
                rows.entry((r.key, r.what)).or_insert(r);
            }
            // accesses
            for x in &a.accesses {
                let at = p.link(&x.site, u.ptx);
                let (column, predicted, ratio, numbers) = match (x.sectors, x.conflict) {
                    (Some((t, w, ideal)), _) => {
                        let mut text = format!("{t} sectors/request (worst {w}, ideal {ideal})");
                        if let Some(m) = x.misaligned {
                            text += &format!("; {m} if rows are misaligned");
                        }
                        if let Some(one) = x.sectors_at_stride_one {
                            text += &format!("; {one} if the stride read from memory is 1");
                        }
                        let n = serde_json::json!({"sectors": t, "worst": w, "ideal": ideal, "misaligned": x.misaligned, "requests": x.requests});
                        (Column::Sectors, text, Some(ratio_of(t, ideal)), n)
                    }
                    (None, Some((t, w))) => (
                        Column::Banks,
                        format!("{t}-way bank conflict (worst {w})"),
                        Some(t as f64),
                        serde_json::json!({"conflict": t, "worst": w, "requests": x.requests}),
                    ),
                    _ => {
                        let col = if x.space == gpucheck_analysis::ir::inst::Space::Shared { Column::Banks } else { Column::Sectors };
                        (col, format!("{} {} {}: address depends on data", x.space, x.kind, x.width), None, serde_json::Value::Null)
                    }
                };
                let seen = observed(&rows, &x.site, x.space.name());
                p.add(&at, SiteView::at(column, &x.site, paths, format!("{} {}: {predicted}", x.space, x.kind), ratio, numbers, seen));
            }
            // branches that split some warp
            for b in &a.branches {
                let split = match &b.prediction {
                    BranchPrediction::Uniform => continue,
                    BranchPrediction::Splits(n) => Some(*n),
                    BranchPrediction::Sampled { warps, .. } => Some(*warps),
                    BranchPrediction::AtMost(n) => Some(*n),
                    BranchPrediction::TripCount | BranchPrediction::Unknown => None,
                };
                let predicted = match &b.prediction {
                    BranchPrediction::Splits(n) => format!("{n} of {} warps split", b.warps),
                    BranchPrediction::Sampled { warps, values } => {
                        let v: Vec<String> = values.iter().map(|(r, x)| format!("{r}={x}")).collect();
                        format!("{warps} of {} warps split with {}", b.warps, v.join(", "))
                    }
                    BranchPrediction::AtMost(n) => format!("at most {n} of {} warps split", b.warps),
                    BranchPrediction::TripCount => "lanes of a warp run different iteration counts".into(),
                    _ => "depends on data".into(),
                };
                if split == Some(0) {
                    continue;
                }
                let at = p.link(&b.site, u.ptx);
                let ratio = split.map(|n| 1.0 + n as f64 / b.warps.max(1) as f64);
                let numbers = serde_json::json!({"warps_split": split, "warps": b.warps});
                let seen = observed(&rows, &b.site, "branch");
                p.add(&at, SiteView::at(Column::Split, &b.site, paths, format!("branch: {predicted}"), ratio, numbers, seen));
            }
            for b in &a.barriers {
                let at = p.link(&b.site, u.ptx);
                let seen = observed(&rows, &b.site, "barrier");
                let predicted = if b.divergent { "barrier: part of the block skips it" } else { "barrier: every thread reaches it" };
                let (ratio, numbers) = (Some(if b.divergent { 8.0 } else { 1.0 }), serde_json::json!({"divergent": b.divergent}));
                p.add(&at, SiteView::at(Column::Barrier, &b.site, paths, predicted.into(), ratio, numbers, seen));
            }
            // races: a marker at both accesses, each linking to the other
            for r in &a.races {
                let key = |func, inst| gpucheck_analysis::interp::SiteKey { func, inst };
                let (k1, k2) = (key(r.first_function, r.first), key(r.second_function, r.second));
                let (Some(first), Some(second)) = (a.access_at(k1), a.access_at(k2)) else { continue };
                let (la, lb) = (p.link(&first.site, u.ptx), p.link(&second.site, u.ptx));
                let seen = u.runs.iter().flat_map(|k| &k.rows).find(|row| row_is_race(row, k1, k2, r.between_blocks));
                // (between blocks: the first access in block 0, the second in the block next to it)
                let (b0, b1) = if r.between_blocks { (" of block 0", " of the other block") } else { ("", "") };
                for (site, at, other, (mine, theirs)) in
                    [(first, &la, &lb, ((r.threads.0, b0), (r.threads.1, b1))), (second, &lb, &la, ((r.threads.1, b1), (r.threads.0, b0)))]
                {
                    let predicted = format!(
                        "{} race{} ({}): thread {}{} here, thread {}{} at line {}",
                        r.space.name(),
                        if r.between_blocks { " between blocks" } else { "" },
                        r.kind.describe(),
                        mine.0,
                        mine.1,
                        theirs.0,
                        theirs.1,
                        other.line
                    );
                    let numbers = serde_json::json!({"threads": [r.threads.0, r.threads.1], "space": r.space.name(), "benign": r.benign.is_some(), "benign_because": r.benign.map(crate::confirm::table::benign_name), "between_blocks": r.between_blocks});
                    let run = (
                        seen.map(|row| row.observed.clone()),
                        seen.map(|row| verdict_text(row.verdict)),
                        seen.is_some_and(|row| row.verdict.is_failure()),
                    );
                    let v = SiteView::at(Column::Race, &site.site, paths, predicted, Some(8.0), numbers, run);
                    p.add(at, SiteView { kernel: r.kernel.clone(), partner: Some(other.clone()), ..v });
                }
            }
            // races a run saw that no prediction names
            for row in u.runs.iter().flat_map(|k| &k.rows).filter(|row| row.verdict == Verdict::Race && row.json_predicted["race"] == false)
            {
                if let Some(site) = a.access_at(row.key).map(|x| &x.site) {
                    let at = p.link(site, u.ptx);
                    let run = (Some(row.observed.clone()), Some(verdict_text(row.verdict)), true);
                    p.add(
                        &at,
                        SiteView::at(Column::Race, site, paths, "no race predicted".into(), Some(8.0), serde_json::Value::Null, run),
                    );
                }
            }
            // findings at their lines (the PTX line when there is no source line)
            for d in u.diags {
                if let Some((share, of)) = crate::report::human::cost_share(d).filter(|_| d.level != gpucheck_analysis::Level::Allow) {
                    let at = match &d.file {
                        Some(f) => {
                            Link { file: p.file(f.clone(), d.abs_file.clone().unwrap_or_else(|| paths.absolute(f)), false), line: d.line }
                        }
                        None => Link { file: p.file(u.ptx.to_string(), paths.absolute(u.ptx), true), line: d.finding.ptx_line },
                    };
                    let place = match &d.file {
                        Some(f) => format!("{f}:{}", d.line),
                        None => format!("{}:{}", u.ptx, d.finding.ptx_line),
                    };
                    costliest.push(Costly {
                        at,
                        place,
                        lint: d.finding.lint.name.to_string(),
                        kernel: gpucheck_analysis::demangle(&d.finding.kernel),
                        share,
                        of: of.to_string(),
                    });
                }
                let at = match &d.file {
                    Some(f) => {
                        Link { file: p.file(f.clone(), d.abs_file.clone().unwrap_or_else(|| paths.absolute(f)), false), line: d.line }
                    }
                    None => Link { file: p.file(u.ptx.to_string(), paths.absolute(u.ptx), true), line: d.finding.ptx_line },
                };
                let level = if d.level.is_error() { "error" } else { "warning" };
                let mut notes: Vec<String> = d.notes.iter().map(|(_, t)| t.clone()).collect();
                if d.duplicates > 0 {
                    notes.push(format!("{} more PTX copies of this finding", d.duplicates));
                }
                p.line(&at).findings.push(FindingView {
                    lint: d.finding.lint.name.to_string(),
                    level: level.into(),
                    kernel: d.finding.kernel.to_string(),
                    message: d.finding.message.to_string(),
                    label: d.finding.label.to_string(),
                    notes,
                });
            }
            // the overview rows
            for cov in &a.coverage {
                let in_fn = |s: &Site| s.function == cov.function;
                let global: Vec<_> = a.accesses.iter().filter(|x| in_fn(&x.site)).filter_map(|x| x.sectors.map(|s| (x, s))).collect();
                let worst = global
                    .iter()
                    .max_by(|(_, x), (_, y)| ratio_of(x.0, x.2).total_cmp(&ratio_of(y.0, y.2)))
                    .map(|(x, _)| p.link(&x.site, u.ptx));
                let mut findings = BTreeMap::new();
                let mut errors = 0;
                for d in u.diags.iter().filter(|d| *d.finding.kernel == *cov.kernel) {
                    *findings.entry(d.finding.lint.name.to_string()).or_insert(0) += 1;
                    errors += d.level.is_error() as usize;
                }
                let confirm = u.runs.iter().find(|r| r.kernel == cov.kernel).map(|r| {
                    let mut s = ConfirmSummary::default();
                    for row in &r.rows {
                        match row.verdict {
                            Verdict::Mismatch => s.mismatches += 1,
                            Verdict::Race => s.races_seen += 1,
                            Verdict::BarrierDivergence => s.barrier_divergence += 1,
                            v if v.is_success() => s.confirmed += 1,
                            _ => s.other += 1,
                        }
                    }
                    s
                });
                // a device function with nothing to show (no memory instruction, branch, barrier or finding)
                let empty = !cov.entry
                    && cov.total == 0
                    && findings.is_empty()
                    && !a.branches.iter().any(|b| in_fn(&b.site))
                    && !a.barriers.iter().any(|b| in_fn(&b.site));
                if empty {
                    quiet_fns += 1;
                    continue;
                }
                let hint = crate::diagnostic::ShapeHint::Cargo;
                let shape = gpucheck_analysis::Note {
                    kind: gpucheck_analysis::NoteKind::Note,
                    text: gpucheck_analysis::Text::shape(cov.kernel.as_str().into(), cov.block, cov.shape_source.clone()),
                };
                let reported_branches = findings.get(DIVERGENT_BRANCH.name).copied().unwrap_or(0);
                kernels.push(KernelRow {
                    package: u.package.to_string(),
                    ptx: u.ptx.to_string(),
                    name: cov.kernel.clone(),
                    entry: cov.entry,
                    block: cov.block,
                    shape_source: crate::diagnostic::render_note(&shape, paths, hint),
                    instructions: cov.instructions,
                    memory_instructions: cov.total,
                    memory_analysed: cov.total - cov.skipped.len(),
                    not_analysed: cov.not_analysed().into_iter().map(|(skip, n)| (skip.reason().to_string(), n)).collect(),
                    findings,
                    errors,
                    bytes_moved: global.iter().map(|(_, s)| s.0 as u64 * 32).sum(),
                    bytes_ideal: global.iter().map(|(_, s)| s.2 as u64 * 32).sum(),
                    access_sites: a.accesses.iter().filter(|x| in_fn(&x.site)).count(),
                    divergent_branches: reported_branches,
                    split_branches: a
                        .branches
                        .iter()
                        .filter(|b| {
                            in_fn(&b.site)
                                && match b.prediction {
                                    BranchPrediction::Splits(n)
                                    | BranchPrediction::AtMost(n)
                                    | BranchPrediction::Sampled { warps: n, .. } => n > 0,
                                    BranchPrediction::TripCount => true,
                                    // data-dependent: not known to split
                                    BranchPrediction::Uniform | BranchPrediction::Unknown => false,
                                }
                        })
                        .count(),
                    barriers: a.barriers.iter().filter(|b| in_fn(&b.site)).count(),
                    divergent_barriers: a.barriers.iter().filter(|b| in_fn(&b.site) && b.divergent).count(),
                    races: a.races.iter().filter(|r| r.function == cov.function).count(),
                    worst,
                    confirm,
                });
                if cov.entry && confirmed && u.runs.iter().all(|r| r.kernel != cov.kernel) {
                    notes.push(format!(
                        "`{}` was not run: it has no launch configuration (see `cargo gpucheck confirm --help`)",
                        cov.kernel
                    ));
                }
            }
        }
        if quiet_fns > 0 {
            notes
                .push(format!("{quiet_fns} device function(s) without memory instructions, branches, barriers or findings are not listed"));
        }
        // worst first: bytes moved beyond the ideal per request, then findings
        kernels.sort_by(|a, b| {
            let waste = |k: &KernelRow| k.bytes_moved.saturating_sub(k.bytes_ideal);
            waste(b)
                .cmp(&waste(a))
                .then(b.findings.values().sum::<usize>().cmp(&a.findings.values().sum::<usize>()))
                .then(a.name.cmp(&b.name))
        });
        for (f, lines) in p.files.iter_mut().zip(p.lines) {
            f.lines = lines
                .into_values()
                .map(|mut l| {
                    l.ratio = l.sites.iter().filter_map(|s| s.ratio).reduce(f64::max);
                    l
                })
                .collect();
        }
        costliest.sort_by(|a, b| b.share.total_cmp(&a.share));
        costliest.truncate(10);
        Doc { tool: format!("cargo-gpucheck {}", env!("CARGO_PKG_VERSION")), confirmed, kernels, files: p.files, notes, costliest }
    }
}

/// A confirm row for the race between the two accesses (`grid`: between blocks).
fn row_is_race(row: &Row, a: gpucheck_analysis::interp::SiteKey, b: gpucheck_analysis::interp::SiteKey, grid: bool) -> bool {
    matches!(
        row.verdict,
        Verdict::Race
            | Verdict::BenignRace
            | Verdict::DiscardedRead
            | Verdict::NotObserved
            | Verdict::ConditionNotMet
            | Verdict::OtherPartner
    ) && (row.key == a || row.key == b)
        && row.json_predicted["race"] == true
        && (row.what == "grid") == grid
}

/// Open a written page in the user's browser: `$BROWSER`, else the
/// platform's opener. An opener that exits with a failure within two
/// seconds did not open it (one still running, or done, did); `false`
/// when none did.
pub fn open(page: &std::path::Path) -> bool {
    use std::process::Command;
    let mut tries: Vec<Command> = Vec::new();
    if let Some(b) = std::env::var_os("BROWSER").filter(|b| !b.is_empty()) {
        let mut c = Command::new(b);
        c.arg(page);
        tries.push(c);
    }
    for opener in if cfg!(target_os = "macos") { &["open"][..] } else { &["xdg-open", "gio"][..] } {
        let mut c = Command::new(opener);
        if *opener == "gio" {
            c.arg("open");
        }
        c.arg(page);
        tries.push(c);
    }
    if cfg!(windows) {
        let mut c = Command::new("cmd");
        c.args(["/C", "start", ""]).arg(page);
        tries.push(c);
    }
    for mut c in tries {
        let Ok(mut child) = c.stdout(std::process::Stdio::null()).stderr(std::process::Stdio::null()).spawn() else { continue };
        let started = std::time::Instant::now();
        let opened = loop {
            match child.try_wait() {
                Ok(Some(status)) => break status.success(),
                Ok(None) if started.elapsed() < std::time::Duration::from_secs(2) => {
                    std::thread::sleep(std::time::Duration::from_millis(20))
                }
                // still running: a browser that stays open
                Ok(None) => break true,
                Err(_) => break false,
            }
        };
        if opened {
            return true;
        }
    }
    false
}

#[cfg(test)]
mod page_tests {
    use super::page_name;

    #[test]
    fn pages_are_named_after_their_files() {
        assert_eq!(page_name("kernels/src/lib.rs", |_| false), "kernels_src_lib.rs.html");
        assert_eq!(page_name("/usr/include/x y.h", |_| false), "usr_include_x_y.h.html");
        assert_eq!(page_name("a/b.rs", |p| p == "a_b.rs.html"), "a_b.rs-2.html");
        assert_eq!(page_name("..", |_| false), "source.html");
    }
}
