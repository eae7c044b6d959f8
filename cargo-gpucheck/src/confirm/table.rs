//! The confirm report: the static predictions and a run's observations,
//! joined by instruction (function and instruction index, never by line
//! or by message text), one row per access site, per conditional branch
//! worth showing and per race, with a verdict; printed as a table, or as
//! `{"reason":"gpucheck-confirm",…}` JSON lines.
//!
//! Verdicts: an access is `confirmed` when the observed typical value
//! equals the predicted one. A branch whose split count was evaluated for
//! every thread without sampling is `confirmed` when the warps that split
//! in a typical block equal the predicted count; a branch predicted
//! uniform must split nowhere; a bound (`at most k`) must hold in every
//! block (`within bound`). Predictions made for sampled values (a loop
//! counter, a block index, a parameter), loop exits and data-dependent
//! branches are shown beside what the run did but not judged. Races seen
//! are `RACE` whether predicted or not; a predicted race the run did not
//! show is `not observed`.
//!
//! Owns: joining, verdict rules and formatting. Does not own: running
//! kernels or the predictions.

use super::{BranchSeen, DeviceFault, Seen, SiteSeen};
use crate::cli::{ConfirmArgs, MessageFormat};
use crate::diagnostic::PathStyle;
use gpucheck_analysis::interp::{Arg, SiteKey};
use gpucheck_analysis::ir::inst::Space;
use gpucheck_analysis::races::Benign;
use gpucheck_analysis::{BranchPrediction, Report, Site, SrcPos};
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// The observation is the predicted value.
    Confirmed,
    /// The observation is the value predicted for rows that a runtime
    /// pitch or offset misaligns.
    ConfirmedMisaligned,
    /// The observation is the value predicted for a stride (read from
    /// memory) of 1.
    ConfirmedUnitStride,
    /// The observation is the value predicted for a loop's later
    /// iterations (its step moves the accesses off their first alignment).
    ConfirmedLater,
    /// A bound held in every block.
    WithinBound,
    Mismatch,
    /// Predicted, but no warp executed it.
    NotRun,
    /// Observed, with no prediction this run can judge (data-dependent,
    /// sampled values, or no static record).
    Observed,
    /// A race was seen.
    Race,
    /// A race was seen where one was predicted between two stores of the
    /// same uniform value (`benign_race`).
    BenignRace,
    /// A race was seen where one was predicted whose reading thread
    /// discards the value it reads (`benign_race`).
    DiscardedRead,
    /// A run saw a plain load meet a compare-and-swap that the load only
    /// seeds (the CAS retries when the value changed): not a race.
    CasRetry,
    /// A predicted race or barrier divergence the run did not show.
    NotObserved,
    /// A race or barrier divergence predicted for some values of a
    /// parameter (the condition its finding states) that the run's value
    /// does not meet: not shown, as predicted.
    ConditionNotMet,
    /// A predicted race the run did not show for this pair, while one of
    /// its two accesses raced with another partner (the shadow memory
    /// keeps one writer and two readers per byte: it names one partner).
    OtherPartner,
    /// Part of the block skipped a barrier, as predicted.
    BarrierDivergence,
    /// A shared access outside its array was seen with none predicted.
    OutOfBounds,
    /// A shared load of bytes no thread had written was seen with none
    /// predicted.
    Uninitialized,
    /// A shared access outside its array, or a read of bytes no thread
    /// had written, seen with none predicted, in a block other than block
    /// 0 only (which the analysis judges): told, not a failure.
    OtherBlock,
    /// A read of bytes no thread had written yet, at an access the run saw
    /// race: the write it races with came later (the race's row).
    RacyRead,
    /// The GPU stopped the run with a fault (an illegal address), where
    /// an access outside its array was predicted: the GPU does not say
    /// which access faulted.
    FaultedAsPredicted,
    /// The GPU stopped the run with a fault where no access outside its
    /// array was predicted.
    Fault,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Confirmed => "confirmed",
            Verdict::ConfirmedMisaligned => "confirmed (misaligned rows)",
            Verdict::ConfirmedUnitStride => "confirmed (stride 1)",
            Verdict::ConfirmedLater => "confirmed (later iterations)",
            Verdict::WithinBound => "within bound",
            Verdict::Mismatch => "MISMATCH",
            Verdict::NotRun => "not executed",
            Verdict::Observed => "observed",
            Verdict::Race => "RACE",
            Verdict::BenignRace => "benign race (same value)",
            Verdict::DiscardedRead => "benign race (the read value is discarded)",
            Verdict::CasRetry => "CAS retry (the load only seeds the compare-and-swap)",
            Verdict::NotObserved => "not observed",
            Verdict::ConditionNotMet => "condition not met",
            Verdict::OtherPartner => "race seen with another partner",
            Verdict::BarrierDivergence => "BARRIER DIVERGENCE",
            Verdict::OutOfBounds => "OUT OF BOUNDS",
            Verdict::Uninitialized => "UNINITIALISED READ",
            Verdict::OtherBlock => "seen in a later block (the analysis judges block 0)",
            Verdict::RacyRead => "read before the racing write (see the race)",
            Verdict::FaultedAsPredicted => "faulted, as predicted (the GPU does not name the access)",
            Verdict::Fault => "FAULT",
        }
    }
    /// A verdict that makes `confirm` exit 1.
    pub fn is_failure(self) -> bool {
        matches!(
            self,
            Verdict::Mismatch | Verdict::Race | Verdict::BarrierDivergence | Verdict::OutOfBounds | Verdict::Uninitialized | Verdict::Fault
        )
    }
    pub fn is_success(self) -> bool {
        matches!(
            self,
            Verdict::Confirmed
                | Verdict::ConfirmedMisaligned
                | Verdict::ConfirmedUnitStride
                | Verdict::ConfirmedLater
                | Verdict::WithinBound
        )
    }
}

#[derive(Debug, Clone)]
pub struct Row {
    pub place: String,
    pub line: u32,
    pub col: u32,
    pub file: String,
    pub ptx_line: u32,
    pub key: SiteKey,
    /// `global`, `shared`, `branch`, `barrier`, `group`, or `grid` (a race
    /// between blocks, on global memory).
    pub what: &'static str,
    pub predicted: String,
    pub observed: String,
    pub verdict: Verdict,
    pub json_predicted: Value,
    pub json_observed: Value,
    /// The call site a helper's line was inlined at (`{file, line, column}`), or null.
    pub via: Value,
}

/// (shown place, file, line, column) of a site's source position, else of
/// its PTX line; and the call site it was inlined at, as JSON.
fn place_via(paths: &PathStyle, site: Option<&Site>) -> ((String, String, u32, u32), Value) {
    let (span, via) = (site.and_then(|s| s.span.as_ref()), site.and_then(|s| s.via.as_ref()));
    let json_via = match (span, via) {
        (Some(_), Some(v)) => json!({"file": paths.display(&v.file), "line": v.line, "column": v.col}),
        _ => Value::Null,
    };
    (place_text(paths, span, via, site.map_or(0, |s| s.ptx_line)), json_via)
}

impl Row {
    /// A row at a site the analysis reported.
    #[allow(clippy::too_many_arguments)]
    fn at(
        paths: &PathStyle,
        site: &Site,
        what: &'static str,
        predicted: String,
        observed: String,
        verdict: Verdict,
        json_predicted: Value,
        json_observed: Value,
    ) -> Row {
        let ((place, file, line, col), via) = place_via(paths, Some(site));
        Row {
            place,
            line,
            col,
            file,
            ptx_line: site.ptx_line,
            key: site.key(),
            what,
            predicted,
            observed,
            verdict,
            json_predicted,
            json_observed,
            via,
        }
    }
}

fn place_text(paths: &PathStyle, span: Option<&SrcPos>, via: Option<&SrcPos>, ptx_line: u32) -> (String, String, u32, u32) {
    match span {
        Some(s) => {
            let file = paths.display(&s.file);
            // a helper's line inlined at one of several call sites: which one
            let inlined = match via {
                Some(v) if v.file == s.file => format!(" (inlined at {}:{})", v.line, v.col),
                Some(v) => format!(" (inlined at {}:{}:{})", paths.display(&v.file), v.line, v.col),
                None => String::new(),
            };
            (format!("{file}:{}:{}{inlined}", s.line, s.col), file, s.line, s.col)
        }
        None => (format!("PTX line {ptx_line}"), String::new(), 0, 0),
    }
}

/// (shown place, file, line, column) of the two accesses of a race: both
/// Rust positions, else both PTX lines.
fn pair_place(paths: &PathStyle, a: Option<&SrcPos>, b: Option<&SrcPos>, ptx_lines: (u32, u32)) -> (String, String, u32, u32) {
    match (a, b) {
        (Some(a), Some(b)) => {
            (format!("{}:{}:{} and {}:{}", paths.display(&a.file), a.line, a.col, b.line, b.col), paths.display(&a.file), a.line, a.col)
        }
        _ => (format!("PTX lines {} and {}", ptx_lines.0, ptx_lines.1), String::new(), 0, 0),
    }
}

fn seen_text(s: &SiteSeen, unit: &str) -> String {
    format!("{}{unit} (max {}, mean {:.2}, {} requests)", s.mode, s.max, s.mean, s.requests)
}

/// A site's prediction: (sectors, worst, ideal) for global memory, (typical, worst) conflict degree for shared.
type Predicted = (Option<(u32, u32, u32)>, Option<(u32, u32)>);

/// The rows for one kernel run: the static `report` of the module, the
/// `functions` the run went through (the kernel and its callees), what the
/// engine saw. A device function analysed in call contexts has a
/// prediction per context: those of this kernel's calls are compared (when
/// its calls differ, the run's numbers mix them: shown, not judged).
/// `args`: the run's arguments (to judge a finding's stated condition).
pub fn rows(report: &Report, kernel: &str, functions: &BTreeSet<usize>, seen: &Seen, paths: &PathStyle, args: &[Arg]) -> Vec<Row> {
    // a prediction for some values of a parameter, the run's value outside them: what it needs
    let unmet = |c: &Option<Box<gpucheck_analysis::Condition>>| {
        let c = c.as_ref()?;
        (c.met(args) == Some(false)).then(|| format!("`{}` = {}, and it needs {}", c.name, c.value(args).unwrap_or_default(), c.describe()))
    };
    let mut out = Vec::new();
    let key = |function: usize, inst: usize| SiteKey { func: function, inst };
    // this kernel's predictions: its own, its callees' in its call contexts, and
    // those of callees analysed once for every caller (not named after a kernel)
    let kernels: BTreeSet<String> = report.kernel_names.iter().map(|k| gpucheck_analysis::demangle(k)).collect();
    let ours = |s: &Site| functions.contains(&s.function) && (s.kernel == kernel || !kernels.contains(&s.kernel));
    let mut contexts: std::collections::BTreeMap<SiteKey, BTreeSet<Predicted>> = Default::default();
    for a in report.accesses.iter().filter(|a| ours(&a.site)) {
        contexts.entry(a.site.key()).or_default().insert((a.sectors, a.conflict));
    }
    // what the predicted sites cost in the run, per space and function (an impact's
    // denominator: a function's accesses are predicted, and weighed, in its own facts)
    let mut observed_cost: std::collections::BTreeMap<(&'static str, usize), f64> = Default::default();
    for a in report.accesses.iter().filter(|a| ours(&a.site) && !a.unpredictable) {
        if let Some((_, s)) = seen.sites.get(&a.site.key()) {
            *observed_cost.entry((a.space.name(), a.site.function)).or_default() += s.mode.max(1) as f64 * s.requests as f64;
        }
    }
    // memory sites
    let mut predicted_sites = BTreeSet::new();
    for a in report.accesses.iter().filter(|a| ours(&a.site)) {
        let k = a.site.key();
        let mixed = contexts.get(&k).is_some_and(|c| c.len() > 1);
        predicted_sites.insert(k);
        let obs = seen.sites.get(&k).map(|x| &x.1);
        let (predicted, typical, jp) = match (a.space, a.sectors, a.conflict) {
            (Space::Global, Some((t, w, ideal)), _) => {
                let (mut text, misaligned) = match a.misaligned {
                    Some(m) => (format!("; {m} if rows are misaligned"), json!(m)),
                    None => (String::new(), Value::Null),
                };
                if let Some(one) = a.sectors_at_stride_one {
                    text += &format!("; {one} if the stride read from memory is 1");
                }
                if a.assumed_stride {
                    text += &format!("; a lane stride taken as large, down to {ideal} if it is small");
                }
                (
                    format!("{t} sectors/req (worst {w}, ideal {ideal}{text})"),
                    Some(t),
                    json!({"sectors_per_request": t, "worst_sectors_per_request": w, "ideal_sectors_per_request": ideal,
                           "misaligned_sectors_per_request": misaligned, "sectors_per_request_at_stride_1": a.sectors_at_stride_one,
                           "assumed_stride": a.assumed_stride}),
                )
            }
            (Space::Shared, _, Some((t, w))) => {
                (format!("{t}-way (worst {w})"), Some(t), json!({"conflict_degree": t, "worst_conflict_degree": w}))
            }
            _ => ("— (data-dependent)".to_string(), None, Value::Null),
        };
        let unit = if a.space == Space::Global { " sectors/req" } else { "-way" };
        let (observed, jo) = match obs {
            Some(s) => (seen_text(s, unit), json!({"typical": s.mode, "max": s.max, "mean": s.mean, "requests": s.requests})),
            None => ("not executed".to_string(), Value::Null),
        };
        let verdict = match (typical, obs) {
            (_, None) => Verdict::NotRun,
            (None, Some(_)) => Verdict::Observed,
            (Some(_), Some(_)) if mixed => Verdict::Observed,
            (Some(t), Some(s)) if s.mode == t => Verdict::Confirmed,
            (Some(_), Some(s)) if a.misaligned == Some(s.mode) => Verdict::ConfirmedMisaligned,
            (Some(_), Some(s)) if a.sectors_at_stride_one == Some(s.mode) => Verdict::ConfirmedUnitStride,
            // a stride read from memory between 1 and large: between the two predictions
            (Some(t), Some(s)) if a.sectors_at_stride_one.is_some_and(|one| one <= s.mode && s.mode <= t) => Verdict::WithinBound,
            // rows misaligned by less than the worst offset: between the aligned and the misaligned prediction
            (Some(t), Some(s)) if a.misaligned.is_some_and(|m| t <= s.mode && s.mode <= m) => Verdict::WithinBound,
            // a stride taken as large, smaller in the run: between the ideal and the prediction
            (Some(t), Some(s)) if a.assumed_stride && a.sectors.is_some_and(|x| x.2 <= s.mode) && s.mode <= t => Verdict::WithinBound,
            _ => Verdict::Mismatch,
        };
        let predicted = match contexts.get(&k).map(|c| c.len()) {
            Some(n) if mixed => format!("{predicted} (in one of {n} call contexts)"),
            _ => predicted,
        };
        out.push(Row::at(paths, &a.site, a.space.name(), predicted, observed, verdict, jp, jo));
        if let Some(mut row) = impact_row(paths, a, obs, &observed_cost) {
            if verdict != Verdict::Confirmed {
                row.verdict = Verdict::Observed;
            }
            out.push(row);
        }
    }
    // sites the run saw that the analysis has no record of
    for (k, (space, s)) in seen.sites.iter().filter(|(k, _)| !predicted_sites.contains(k)) {
        let unit = if *space == "global" { " sectors/req" } else { "-way" };
        let line = seen.line(*k);
        out.push(Row {
            place: format!("PTX line {line}"),
            line: 0,
            col: 0,
            file: String::new(),
            ptx_line: line,
            key: *k,
            what: space,
            predicted: "— (not analysed)".into(),
            observed: seen_text(s, unit),
            verdict: Verdict::Observed,
            json_predicted: json!({"analysed": false}),
            json_observed: json!({"typical": s.mode, "max": s.max, "mean": s.mean, "requests": s.requests}),
            via: Value::Null,
        });
    }
    if !seen.control {
        // the engine observes no control flow; a fault the GPU stopped the run with, against the
        // accesses predicted outside their array
        if seen.fault.is_some() {
            safety_rows(Safety::Bounds, report, functions, seen, paths, args, &mut out);
        }
        return out;
    }
    // branches
    for b in report.branches.iter().filter(|b| ours(&b.site)) {
        let k = b.site.key();
        let obs = seen.branches.get(&k);
        let splits = obs.map_or(0, |o| o.splits);
        let (predicted, jp) = describe(&b.prediction, b.warps);
        let verdict = match (&b.prediction, obs) {
            (BranchPrediction::Uniform, _) if splits == 0 => continue,
            (BranchPrediction::Unknown, _) if splits == 0 => continue,
            (_, None) => Verdict::NotRun,
            (BranchPrediction::Uniform, Some(_)) => Verdict::Mismatch,
            (BranchPrediction::Splits(n), Some(o)) => {
                if o.warps_split.mode as usize == *n {
                    Verdict::Confirmed
                } else {
                    Verdict::Mismatch
                }
            }
            (BranchPrediction::AtMost(n), Some(o)) => {
                if o.warps_split.max as usize <= *n {
                    Verdict::WithinBound
                } else {
                    Verdict::Mismatch
                }
            }
            (_, Some(_)) => Verdict::Observed,
        };
        let (observed, jo) = branch_text(obs, b.warps);
        out.push(Row::at(paths, &b.site, "branch", predicted, observed, verdict, jp, jo));
        if let Some(row) = idle_row(paths, b, obs, seen) {
            out.push(row);
        }
    }
    // barriers: every one the kernel can reach, with how many threads arrived
    for b in report.barriers.iter().filter(|b| ours(&b.site)) {
        let obs = seen.barriers.get(&b.site.key());
        let predicted = if b.divergent { "part of the block skips it" } else { "every thread reaches it" };
        let (observed, jo) = match obs {
            None => ("not executed".to_string(), Value::Null),
            Some(o) => (
                if o.partial > 0 {
                    format!(
                        "reached by as few as {} of {} threads ({} of {} releases partial)",
                        o.fewest, o.block_threads, o.partial, o.episodes
                    )
                } else {
                    format!("every thread, {} releases", o.episodes)
                },
                json!({"releases": o.episodes, "partial_releases": o.partial, "fewest_threads": o.fewest, "block_threads": o.block_threads}),
            ),
        };
        let verdict = match (b.divergent, obs) {
            (_, None) => Verdict::NotRun,
            (true, Some(o)) if o.partial > 0 => Verdict::BarrierDivergence,
            (false, Some(o)) if o.partial > 0 => Verdict::Mismatch,
            (true, Some(_)) if unmet(&b.condition).is_some() => Verdict::ConditionNotMet,
            (true, Some(_)) => Verdict::NotObserved,
            (false, Some(_)) => Verdict::Confirmed,
        };
        let observed = match unmet(&b.condition) {
            Some(why) if verdict == Verdict::ConditionNotMet => format!("{observed} ({why})"),
            _ => observed,
        };
        out.push(Row::at(paths, &b.site, "barrier", predicted.into(), observed, verdict, json!({"divergent": b.divergent}), jo));
    }
    let at = |k: SiteKey| report.access_at(k).map(|a| &a.site);
    // access groups: the warp's footprint over their members
    for (gi, g) in report.groups.iter().enumerate().filter(|(_, g)| functions.contains(&g.function)) {
        let first = at(key(g.function, g.members[0]));
        let ((place, file, line, col), via) = place_via(paths, first);
        let verb = if g.loads { "loads" } else { "stores" };
        let obs = seen.groups.get(&gi);
        let verdict = match obs {
            None => Verdict::NotRun,
            Some(s) if s.mode == g.sectors.0 => Verdict::Confirmed,
            // iterations alternate between the two alignments: the run's mode is either
            Some(s) if g.later == Some(s.mode) => Verdict::ConfirmedLater,
            Some(_) => Verdict::Mismatch,
        };
        out.push(Row {
            place: format!("{place} (+{})", g.members.len() - 1),
            line,
            col,
            file,
            ptx_line: first.map_or(0, |a| a.ptx_line),
            key: key(g.function, g.members[0]),
            what: "group",
            predicted: format!("{} sectors/warp for {} {verb} (ideal {})", g.sectors.0, g.members.len(), g.ideal),
            observed: match obs {
                Some(s) => seen_text(s, " sectors/warp"),
                None => "not executed".into(),
            },
            verdict,
            json_predicted: json!({"group_sectors": g.sectors.0, "worst_group_sectors": g.sectors.1, "later_group_sectors": g.later, "group_ideal_sectors": g.ideal,
                                   "group_bytes_used": g.bytes_used, "members": g.members.len()}),
            json_observed: obs.map_or(Value::Null, |s| json!({"typical": s.mode, "max": s.max, "mean": s.mean, "requests": s.requests})),
            via,
        });
    }
    // shared accesses outside their array, and reads of bytes no thread wrote: seen (predicted or
    // not), and predicted but not seen
    for safety in [Safety::Bounds, Safety::Uninit] {
        safety_rows(safety, report, functions, seen, paths, args, &mut out);
    }
    // races: seen (predicted or not), and predicted but not seen
    let mut seen_pairs = BTreeSet::new();
    for r in &seen.races {
        if r.unfenced.is_some() {
            // ordered by a ticket with no fence: `missing_threadfence`'s, below
            continue;
        }
        let grid = r.blocks.is_some();
        let pair = (r.first.min(r.second), r.first.max(r.second));
        seen_pairs.insert((pair, grid));
        let prediction = report.races.iter().filter(|p| p.kernel == kernel || !kernels.contains(&p.kernel)).find(|p| {
            let (x, y) = (key(p.first_function, p.first), key(p.second_function, p.second));
            (x.min(y), x.max(y)) == pair && p.between_blocks == grid
        });
        // the static witness, as the finding names it (it may be another pair of threads)
        let predicted_text = match prediction {
            Some(p) => {
                let line = |k| at(k).and_then(|a| a.span.as_ref()).map(|s| format!("{}:{}", s.line, s.col));
                match (line(key(p.first_function, p.first)), line(key(p.second_function, p.second))) {
                    (Some(a), Some(b)) => format!("race: thread {} at {a}, thread {} at {b}", p.threads.0, p.threads.1),
                    _ => format!("race: threads {} and {}", p.threads.0, p.threads.1),
                }
            }
            None => "no race".to_string(),
        };
        let who = |t: Option<u32>, b: Option<u64>| {
            let t = t.map_or("several threads".to_string(), |t| format!("thread {t}"));
            match b {
                Some(b) => format!("{t} of block {b}"),
                None => t,
            }
        };
        let (b1, b2) = (r.blocks.map(|b| b.0), r.blocks.map(|b| b.1));
        let (l1, l2) = (seen.line(r.first), seen.line(r.second));
        // the two accesses in the order of the threads named
        let (place, file, line, col) =
            pair_place(paths, at(r.first).and_then(|a| a.span.as_ref()), at(r.second).and_then(|a| a.span.as_ref()), (l1, l2));
        out.push(Row {
            place,
            line,
            col,
            file,
            ptx_line: l1,
            key: r.first,
            what: match (r.shared, grid) {
                (true, _) => "shared",
                (false, false) => "global",
                (false, true) => "grid",
            },
            predicted: predicted_text,
            observed: format!(
                "{}: {} then {}{}",
                r.kind.describe(),
                who(r.first_thread, b1),
                who(Some(r.second_thread), b2),
                if r.same_value { " (the same value)" } else { "" }
            ),
            // a benign race is seen writing the same value (between blocks the values are not
            // compared); a discarded read is seen racing (what the thread does with it is the
            // static claim)
            verdict: match prediction.and_then(|p| p.benign) {
                Some(Benign::SameValue) if r.same_value || r.blocks.is_some() => Verdict::BenignRace,
                Some(Benign::SameValue) => Verdict::Mismatch,
                Some(Benign::Discarded) => Verdict::DiscardedRead,
                None if prediction.is_none() && report.cas_seeds.iter().any(|&(l, c)| (l.min(c), l.max(c)) == pair) => Verdict::CasRetry,
                _ => Verdict::Race,
            },
            json_predicted: match prediction {
                Some(p) => json!({"race": true, "kind": p.kind.describe(), "first_thread": p.threads.0, "second_thread": p.threads.1, "benign": p.benign.is_some(), "benign_because": p.benign.map(benign_name), "between_blocks": p.between_blocks}),
                None => json!({"race": false}),
            },
            json_observed: json!({
                "race": r.kind.describe(),
                "first_ptx_line": l1,
                "second_ptx_line": l2,
                "first_thread": r.first_thread,
                "second_thread": r.second_thread,
                "blocks": r.blocks.map(|b| [b.0, b.1]),
                "same_value": r.same_value,
            }),
            via: Value::Null,
        });
    }
    // last-block elections without a fence: one row per ticket, predicted or seen
    // per ticket: the pair predicted (published, elected), and the pair seen
    type Pair<'r> = (Option<(SiteKey, SiteKey)>, Option<&'r gpucheck_analysis::interp::RaceSeen>);
    let mut tickets: std::collections::BTreeMap<SiteKey, Pair<'_>> = Default::default();
    for u in report.unfenced.iter().filter(|u| functions.contains(&u.ticket.func)) {
        tickets.entry(u.ticket).or_default().0.get_or_insert((u.published, u.elected));
    }
    for r in &seen.races {
        if let Some(t) = r.unfenced {
            tickets.entry(t).or_default().1.get_or_insert(r);
        }
    }
    for (ticket, (predicted, observed)) in tickets {
        let (x, y) = match (predicted, observed) {
            (_, Some(r)) => (r.first, r.second),
            (Some(p), None) => p,
            (None, None) => continue,
        };
        let (a, b) = (at(x), at(y));
        let (l1, l2) = (seen.line(x), seen.line(y));
        let (place, file, line, col) = pair_place(paths, a.and_then(|a| a.span.as_ref()), b.and_then(|b| b.span.as_ref()), (l1, l2));
        let ran = seen.sites.contains_key(&ticket);
        out.push(Row {
            place,
            line,
            col,
            file,
            ptx_line: l1,
            key: x,
            what: "grid",
            predicted: if predicted.is_some() { "no fence before the ticket" } else { "no race" }.into(),
            observed: match observed {
                Some(r) => {
                    let (b1, b2) = r.blocks.unwrap_or_default();
                    format!("block {b2} took its ticket (PTX line {}) after block {b1}, with no fence after this access", seen.line(ticket))
                }
                None if ran => "no pair ordered by the ticket in this run".into(),
                None => "not executed".into(),
            },
            verdict: match (predicted, observed) {
                (Some(_), Some(_)) => Verdict::Confirmed,
                (None, _) => Verdict::Mismatch,
                (Some(_), None) if ran => Verdict::NotObserved,
                (Some(_), None) => Verdict::NotRun,
            },
            json_predicted: json!({"unfenced": predicted.is_some()}),
            json_observed: json!({"unfenced": observed.is_some(), "ticket_ptx_line": seen.line(ticket), "blocks": observed.and_then(|r| r.blocks).map(|b| [b.0, b.1])}),
            via: Value::Null,
        });
    }
    for p in report.races.iter().filter(|p| functions.contains(&p.function) && (p.kernel == kernel || !kernels.contains(&p.kernel))) {
        let (x, y) = (key(p.first_function, p.first), key(p.second_function, p.second));
        if seen_pairs.contains(&((x.min(y), x.max(y)), p.between_blocks)) {
            continue;
        }
        // one of the two raced, with another access: the shadow names one partner per byte
        let partnered = seen_pairs.iter().any(|&((u, v), grid)| grid == p.between_blocks && ([u, v].contains(&x) || [u, v].contains(&y)));
        let (a, b) = (at(x), at(y));
        let (l1, l2) = (a.map_or(0, |a| a.ptx_line), b.map_or(0, |b| b.ptx_line));
        let (place, file, line, col) = pair_place(paths, a.and_then(|a| a.span.as_ref()), b.and_then(|b| b.span.as_ref()), (l1, l2));
        out.push(Row {
            place,
            line,
            col,
            file,
            ptx_line: l1,
            key: x,
            what: if p.between_blocks { "grid" } else { p.space.name() },
            predicted: format!("race ({})", p.kind.describe()),
            observed: match unmet(&p.condition) {
                Some(why) if !partnered => format!("no race in this run ({why})"),
                _ if partnered => "this pair not named; one of the two raced with another access".into(),
                _ => "no race in this run".into(),
            },
            verdict: match unmet(&p.condition) {
                _ if partnered => Verdict::OtherPartner,
                Some(_) => Verdict::ConditionNotMet,
                None => Verdict::NotObserved,
            },
            json_predicted: json!({"race": true, "kind": p.kind.describe(), "between_blocks": p.between_blocks}),
            json_observed: json!({"race": false}),
            via: Value::Null,
        });
    }
    out
}

/// A branch prediction as text and JSON.
fn describe(p: &BranchPrediction, warps: usize) -> (String, Value) {
    match p {
        BranchPrediction::Uniform => ("no warp splits (uniform)".into(), json!({"warps_split": 0, "warps": warps, "kind": "uniform"})),
        BranchPrediction::Splits(n) => (format!("{n} of {warps} warps split"), json!({"warps_split": n, "warps": warps, "kind": "exact"})),
        BranchPrediction::Sampled { warps: n, values } => {
            let v: Vec<String> = values.iter().map(|(r, x)| format!("{r}={x}")).collect();
            (
                format!("{n} of {warps} warps split with {}", v.join(", ")),
                json!({"warps_split": n, "warps": warps, "kind": "sampled", "values": values.iter().map(|(r, x)| json!({"value": r, "sample": x})).collect::<Vec<_>>()}),
            )
        }
        BranchPrediction::AtMost(n) => {
            (format!("at most {n} of {warps} warps split"), json!({"warps_split": n, "warps": warps, "kind": "at_most"}))
        }
        BranchPrediction::TripCount => ("lanes run different iteration counts".into(), json!({"warps": warps, "kind": "trip_count"})),
        BranchPrediction::Unknown => ("— (data-dependent)".into(), Value::Null),
    }
}

/// How far an observed impact may lie from the predicted one and be
/// confirmed: the prediction weighs each site by block 0's warps and the
/// loops' trip counts, the run by the requests every block made (a share
/// of a few percentage points, or a fifth of the prediction).
fn impact_tolerance(predicted: f64) -> f64 {
    (0.2 * predicted).max(0.03)
}

/// An access's impact: the predicted share of its space's cost beyond its
/// ideal beside the share the run observed (its typical request's cost
/// less the ideal, times its requests, against what every predicted site
/// of the space in its function cost, each at its typical request: the
/// prediction's own terms). Judged only where the access's own numbers were confirmed as
/// predicted (a variant — misaligned rows, a stride of 1 — changes the
/// share with them); observed elsewhere. Only where some excess was
/// predicted or seen.
fn impact_row(
    paths: &PathStyle,
    a: &gpucheck_analysis::AccessReport,
    obs: Option<&SiteSeen>,
    cost: &std::collections::BTreeMap<(&'static str, usize), f64>,
) -> Option<Row> {
    let (low, high) = a.impact.map(|(l, h)| (l as f64, h as f64))?;
    let s = obs?;
    let ideal = match a.space {
        Space::Global => a.sectors?.2 as f64,
        _ => 1.0,
    };
    let total = *cost.get(&(a.space.name(), a.site.function))?;
    let excess = (s.mode as f64 - ideal).max(0.0) * s.requests as f64;
    if total <= 0.0 || (high == 0.0 && excess == 0.0) {
        return None;
    }
    let observed = excess / total;
    let of = if a.space == Space::Global { "global sectors" } else { "shared transactions" };
    let verdict = share_verdict(low - impact_tolerance(low), high + impact_tolerance(high), high > low, observed);
    Some(Row::at(
        paths,
        &a.site,
        "impact",
        format!("{} of the function's {of} beyond the ideal", share_text(low, high)),
        format!("{} of the function's {of} beyond the ideal", share_text(observed, observed)),
        verdict,
        json!({"impact_share": low, "impact_share_high": high}),
        json!({"impact_share": observed, "excess": excess, "total": total}),
    ))
}

/// How far an observed idle share may lie from the predicted one and be
/// confirmed: the prediction counts block 0's threads and the PTX
/// instructions of the kernel (a call as one), the run every block and
/// every instruction executed.
const IDLE_SHARE_TOLERANCE: f64 = 0.02;

/// A branch's idle lane-slots: the predicted share of the kernel's beside
/// the share the run observed (its idle slots against the warp
/// instructions executed times 32). Only where the engine counts them and
/// the branch was predicted to idle some, or was seen to.
fn idle_row(paths: &PathStyle, b: &gpucheck_analysis::BranchReport, obs: Option<&BranchSeen>, seen: &Seen) -> Option<Row> {
    if seen.warp_insts == 0 {
        return None;
    }
    let observed_idle = obs.map_or(0, |o| o.idle_lane_slots);
    let observed = observed_idle as f64 / (seen.warp_insts as f64 * 32.0);
    let (predicted, jp, verdict) = match b.idle_share {
        Some((_, high)) if high == 0.0 && observed_idle == 0 => return None,
        Some((low, high)) => (
            format!("{} of the kernel's lane-slots idle", share_text(low, high)),
            json!({"idle_share": low, "idle_share_high": high}),
            share_verdict(low - IDLE_SHARE_TOLERANCE, high + IDLE_SHARE_TOLERANCE, high > low, observed),
        ),
        None if observed_idle == 0 => return None,
        None => ("— (not counted)".to_string(), Value::Null, Verdict::Observed),
    };
    let text = format!("{} of the kernel's lane-slots idle ({observed_idle} of {})", share_text(observed, observed), seen.warp_insts * 32);
    let jo = json!({"idle_share": observed, "idle_lane_slots": observed_idle, "kernel_lane_slots": seen.warp_insts * 32});
    Some(Row::at(paths, &b.site, "idle lanes", predicted, text, verdict, jp, jo))
}

/// A share as a row gives it: "25.6 %", or "5.0 % to 40.0 %".
fn share_text(low: f64, high: f64) -> String {
    let pct = |x: f64| format!("{:.1} %", 100.0 * x);
    if high - low < 0.0005 {
        pct(low)
    } else {
        format!("{} to {}", pct(low), pct(high))
    }
}

/// An observed share against the predicted one, `from..=to` with its
/// tolerance: within a predicted range (`range`), or confirmed.
fn share_verdict(from: f64, to: f64, range: bool, observed: f64) -> Verdict {
    match (from..=to).contains(&observed) {
        true if range => Verdict::WithinBound,
        true => Verdict::Confirmed,
        false => Verdict::Mismatch,
    }
}

fn branch_text(obs: Option<&BranchSeen>, warps: usize) -> (String, Value) {
    match obs {
        Some(o) => (
            format!(
                "{} of {warps} warps split per block (max {}; {} of {} warp executions split)",
                o.warps_split.mode, o.warps_split.max, o.splits, o.executions
            ),
            json!({
                "warps_split": o.warps_split.mode,
                "max_warps_split": o.warps_split.max,
                "blocks": o.warps_split.requests,
                "executions": o.executions,
                "splits": o.splits,
            }),
        ),
        None => ("not executed".into(), Value::Null),
    }
}

/// Rows the compiler copied (an unrolled loop: the same place, prediction,
/// observation and verdict) folded into the first, with their count; the
/// order of first appearance kept.
fn fold(rows: &[Row]) -> Vec<(&Row, usize)> {
    let mut out: Vec<(&Row, usize)> = Vec::new();
    for r in rows {
        let same = |x: &Row| {
            (x.place == r.place, x.what == r.what, x.predicted == r.predicted, x.observed == r.observed) == (true, true, true, true)
                && x.verdict == r.verdict
        };
        match out.iter_mut().find(|(x, _)| same(x)) {
            Some((_, n)) => *n += 1,
            None => out.push((r, 1)),
        }
    }
    out
}

pub fn print(rows: &[Row], seen: &Seen, a: &ConfirmArgs, kernel: &str, package: &str) {
    match a.message_format {
        MessageFormat::Json | MessageFormat::Sarif => {
            for r in rows {
                println!(
                    "{}",
                    json!({
                        "reason": "gpucheck-confirm",
                        "package": package,
                        "kernel": kernel,
                        "file": (!r.file.is_empty()).then_some(&r.file),
                        "line": (r.line > 0).then_some(r.line),
                        "column": (r.line > 0).then_some(r.col),
                        "ptx_line": r.ptx_line,
                        "inlined_at": r.via,
                        "function": r.key.func,
                        "inst": r.key.inst,
                        "space": r.what,
                        "predicted": r.json_predicted,
                        "observed": r.json_observed,
                        "engine": a.engine.name(),
                        "verdict": r.verdict.as_str(),
                    })
                );
            }
        }
        MessageFormat::Human => {
            if seen.lane_insts > 0 {
                let rate = seen.lane_insts as f64 / seen.seconds.max(1e-9) / 1e6;
                eprintln!("    {} lane-instructions in {:.3} s ({rate:.0} M/s)", seen.lane_insts, seen.seconds);
            } else {
                // the GPU counts no instructions: the instrumented run's wall time
                eprintln!("    instrumented run in {:.3} s", seen.seconds);
            }
            if let Some(ms) = seen.kernel_ms {
                eprintln!("    uninstrumented kernel time (CUDA events): {ms:.3} ms");
            }
            let w0 = rows.iter().map(|r| r.place.chars().count() + 4).max().unwrap_or(4).max(4);
            let w1 = rows.iter().map(|r| r.predicted.chars().count()).max().unwrap_or(9).max(9);
            let w2 = rows.iter().map(|r| r.observed.chars().count()).max().unwrap_or(8).max(8);
            println!("{:w0$}  {:7}  {:w1$}  {:w2$}  verdict", "line", "what", "predicted", "observed");
            for (r, n) in fold(rows) {
                let place = if n > 1 { format!("{} ×{n}", r.place) } else { r.place.clone() };
                println!("{place:w0$}  {:7}  {:w1$}  {:w2$}  {}", r.what, r.predicted, r.observed, r.verdict.as_str());
            }
            let count = |f: &dyn Fn(Verdict) -> bool| rows.iter().filter(|r| f(r.verdict)).count();
            let (ok, bad, unseen) = (count(&Verdict::is_success), count(&Verdict::is_failure), count(&|v| v == Verdict::NotObserved));
            println!(
                "{}: {ok} confirmed, {bad} failed (mismatch, race, barrier divergence, out of bounds or uninitialised read), {unseen} predicted but not observed\n",
                gpucheck_analysis::names::bare(kernel)
            );
        }
    }
}

/// How JSON names why a predicted race is benign.
pub(crate) fn benign_name(b: Benign) -> &'static str {
    match b {
        Benign::SameValue => "same value",
        Benign::Discarded => "read value discarded",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::confirm::{BranchSeen, SiteSeen};
    use gpucheck_analysis::BranchReport;
    use std::path::PathBuf;

    fn branch(prediction: BranchPrediction, inst: usize) -> BranchReport {
        let site = gpucheck_analysis::Site { kernel: "k".into(), function: 0, inst, ptx_line: 10 + inst as u32, span: None, via: None };
        BranchReport { site, warps: 8, prediction, idle_share: None }
    }

    fn seen_split(typical: u32, max: u32) -> BranchSeen {
        BranchSeen {
            executions: 32,
            splits: max as u64,
            warps_split: SiteSeen { requests: 4, mode: typical, max, mean: typical as f64 },
            idle_lane_slots: 0,
        }
    }

    #[test]
    fn idle_share_verdicts() {
        // (predicted share range, idle lane-slots observed of 1000 × 32)
        let b = |inst: usize, idle_share: Option<(f64, f64)>| BranchReport { idle_share, ..branch(BranchPrediction::Splits(8), inst) };
        let report = Report {
            branches: vec![
                b(1, Some((0.25, 0.25))),
                b(2, Some((0.25, 0.25))),
                b(3, Some((0.05, 0.40))),
                b(4, Some((0.0, 0.0))),
                b(5, None),
                b(6, Some((0.0, 0.0))),
            ],
            ..Report::default()
        };
        let mut seen = Seen { control: true, warp_insts: 1000, ..Seen::default() };
        let k = |inst| SiteKey { func: 0, inst };
        for (inst, idle) in [(1, 8200), (2, 4000), (3, 3200), (4, 0), (5, 640), (6, 3200)] {
            seen.branches.insert(k(inst), BranchSeen { idle_lane_slots: idle, ..seen_split(8, 8) });
        }
        let rows = rows(&report, "k", &BTreeSet::from([0]), &seen, &PathStyle { root: PathBuf::from("/") }, &[]);
        let verdicts: Vec<(usize, Verdict)> = rows.iter().filter(|r| r.what == "idle lanes").map(|r| (r.key.inst, r.verdict)).collect();
        assert_eq!(
            verdicts,
            [
                (1, Verdict::Confirmed),   // 25.6 % against 25 %
                (2, Verdict::Mismatch),    // 12.5 % against 25 %
                (3, Verdict::WithinBound), // 10 % within 5 to 40 %
                (5, Verdict::Observed),    // not counted statically
                (6, Verdict::Mismatch),    // 10 % where none was predicted
            ],
            "nothing predicted and nothing seen is no row"
        );
    }

    #[test]
    fn unrolled_copies_fold() {
        let row = |place: &str, observed: &str, inst: usize| Row {
            place: place.into(),
            line: 1,
            col: 1,
            file: "src/lib.rs".into(),
            ptx_line: inst as u32,
            key: SiteKey { func: 0, inst },
            what: "global",
            predicted: "4 sectors/req".into(),
            observed: observed.into(),
            verdict: Verdict::Confirmed,
            json_predicted: Value::Null,
            json_observed: Value::Null,
            via: Value::Null,
        };
        let rows =
            [row("src/lib.rs:1:1", "4", 1), row("src/lib.rs:2:1", "4", 2), row("src/lib.rs:1:1", "4", 3), row("src/lib.rs:1:1", "5", 4)];
        let folded: Vec<(u32, usize)> = fold(&rows).iter().map(|(r, n)| (r.ptx_line, *n)).collect();
        assert_eq!(folded, [(1, 2), (2, 1), (4, 1)], "same place and numbers fold; other numbers stay apart");
    }

    #[test]
    fn branch_verdicts() {
        let report = Report {
            branches: vec![
                branch(BranchPrediction::Uniform, 1),
                branch(BranchPrediction::Splits(8), 2),
                branch(BranchPrediction::Splits(8), 3),
                branch(BranchPrediction::AtMost(1), 4),
                branch(BranchPrediction::AtMost(1), 5),
                branch(BranchPrediction::Sampled { warps: 2, values: vec![("%r1".into(), 4)] }, 6),
                branch(BranchPrediction::Uniform, 7),
            ],
            ..Report::default()
        };
        let mut seen = Seen { control: true, ..Seen::default() };
        let k = |inst| SiteKey { func: 0, inst };
        seen.branches.insert(k(1), seen_split(4, 4)); // "uniform" yet split: the analysis was wrong
        seen.branches.insert(k(2), seen_split(8, 8));
        seen.branches.insert(k(3), seen_split(1, 1));
        seen.branches.insert(k(4), seen_split(0, 1));
        seen.branches.insert(k(5), seen_split(1, 2));
        seen.branches.insert(k(6), seen_split(5, 5));
        seen.branches.insert(k(7), seen_split(0, 0));
        let rows = rows(&report, "k", &BTreeSet::from([0]), &seen, &PathStyle { root: PathBuf::from("/") }, &[]);
        let verdicts: Vec<(usize, Verdict)> = rows.iter().map(|r| (r.key.inst, r.verdict)).collect();
        assert_eq!(
            verdicts,
            [
                (1, Verdict::Mismatch),
                (2, Verdict::Confirmed),
                (3, Verdict::Mismatch),
                (4, Verdict::WithinBound),
                (5, Verdict::Mismatch),
                (6, Verdict::Observed),
            ],
            "a uniform branch that never split is not a row"
        );
        assert!(rows.iter().filter(|r| r.verdict.is_failure()).count() == 3);
    }

    /// A run the GPU stopped: where an access outside its array was
    /// predicted, that access's row says the run faulted as predicted;
    /// where none was, the kernel's row is a failure.
    #[test]
    fn device_faults_against_the_bounds_predicted() {
        let lint = gpucheck_analysis::lints::registry::find("shared_out_of_bounds").expect("the lint");
        let finding = gpucheck_analysis::Finding {
            lint,
            kernel: "k".into(),
            ptx_line: 12,
            ptx_col: 1,
            span: None,
            label: "thread 255 reads element 256 of `s` (256 elements)".into(),
            message: "".into(),
            secondary: vec![],
            notes: vec![],
            metrics: vec![],
            access: true,
            assumes: vec![],
            witness: Some(Box::new(gpucheck_analysis::lints::Witness::Bounds { site: (0, 7) })),
            replay: Default::default(),
            rank: None,
        };
        let stop = DeviceFault { func: 0, what: "an illegal memory access was encountered (CUDA_ERROR_ILLEGAL_ADDRESS)".into() };
        let seen = Seen { fault: Some(stop), ..Seen::default() };
        let paths = PathStyle { root: PathBuf::from("/") };
        let predicted = Report { findings: vec![finding], ..Report::default() };
        let rows = rows(&predicted, "k", &BTreeSet::from([0]), &seen, &paths, &[]);
        let row = rows.iter().find(|r| r.what == "bounds").expect("a bounds row");
        assert_eq!(
            (row.key, row.verdict, row.json_observed["fault"].as_str()),
            (SiteKey { func: 0, inst: 7 }, Verdict::FaultedAsPredicted, Some(seen.fault.as_ref().unwrap().what.as_str()))
        );
        assert!(!row.verdict.is_failure());
        // none predicted: the kernel's row fails the run
        let rows = super::rows(&Report::default(), "k", &BTreeSet::from([0]), &seen, &paths, &[]);
        assert_eq!(
            rows.iter().map(|r| (r.what, r.verdict, r.place.as_str())).collect::<Vec<_>>(),
            [("bounds", Verdict::Fault, "the kernel")]
        );
        assert!(rows[0].verdict.is_failure());
        // no fault (the CUDA engine observes no bounds): no bounds row
        let rows = super::rows(&predicted, "k", &BTreeSet::from([0]), &Seen::default(), &paths, &[]);
        assert!(rows.iter().all(|r| r.what != "bounds"));
    }

    #[test]
    fn access_verdicts_judge_ranges() {
        use gpucheck_analysis::ir::inst::AccessKind;
        use gpucheck_analysis::AccessReport;
        // (typical, ideal, misaligned variant, stride taken as large)
        let access = |inst: usize, t: u32, ideal: u32, misaligned: Option<u32>, assumed_stride: bool| AccessReport {
            site: gpucheck_analysis::Site { kernel: "k".into(), function: 0, inst, ptx_line: 10 + inst as u32, span: None, via: None },
            space: Space::Global,
            kind: AccessKind::Load,
            width: 4,
            sectors: Some((t, t, ideal)),
            misaligned,
            sectors_at_stride_one: None,
            assumed_stride,
            conflict: None,
            requests: 8,
            unpredictable: false,
            impact: None,
        };
        let report = Report {
            accesses: vec![
                access(1, 4, 4, Some(6), false),
                access(2, 4, 4, Some(6), false),
                access(3, 4, 4, Some(6), false),
                access(4, 32, 4, None, true),
                access(5, 32, 4, None, true),
                access(6, 32, 4, None, false),
            ],
            ..Report::default()
        };
        let mut seen = Seen::default();
        for (inst, observed) in [(1, 5), (2, 6), (3, 7), (4, 16), (5, 2), (6, 16)] {
            seen.sites.insert(
                SiteKey { func: 0, inst },
                ("global", SiteSeen { requests: 8, mode: observed, max: observed, mean: observed as f64 }),
            );
        }
        let rows = rows(&report, "k", &BTreeSet::from([0]), &seen, &PathStyle { root: PathBuf::from("/") }, &[]);
        let verdicts: Vec<(usize, Verdict)> = rows.iter().map(|r| (r.key.inst, r.verdict)).collect();
        assert_eq!(
            verdicts,
            [
                // rows misaligned by less than the worst offset: 4 (6 misaligned), 5 seen
                (1, Verdict::WithinBound),
                (2, Verdict::ConfirmedMisaligned),
                (3, Verdict::Mismatch),
                // a stride taken as large (32), 16 in the run: between the ideal and the prediction
                (4, Verdict::WithinBound),
                (5, Verdict::Mismatch),
                // no stride assumed: 16 for 32 is wrong
                (6, Verdict::Mismatch),
            ]
        );
    }
}

/// A memory-safety row's kind: the lint's witness it matches, what the run
/// saw, and its words.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Safety {
    /// `shared_out_of_bounds`.
    Bounds,
    /// `uninitialized_shared_read`.
    Uninit,
}

impl Safety {
    fn site(self, w: &gpucheck_analysis::lints::Witness) -> Option<gpucheck_analysis::lints::Site> {
        use gpucheck_analysis::lints::Witness;
        match (self, w) {
            (Safety::Bounds, Witness::Bounds { site }) | (Safety::Uninit, Witness::Uninit { site }) => Some(*site),
            _ => None,
        }
    }
    fn seen(self, seen: &Seen) -> &BTreeMap<SiteKey, gpucheck_analysis::interp::SafetyFault> {
        match self {
            Safety::Bounds => &seen.out_of_bounds,
            Safety::Uninit => &seen.uninitialized,
        }
    }
    /// The row's `what`, its words for the fault and for none, and the
    /// JSON key.
    fn words(self) -> (&'static str, &'static str, &'static str, &'static str) {
        match self {
            Safety::Bounds => ("bounds", "out of bounds", "in bounds", "out_of_bounds"),
            Safety::Uninit => ("uninit", "uninitialised read", "written", "uninitialized"),
        }
    }
}

/// The rows of one memory-safety kind: each access predicted to make the
/// fault ([`Safety`]) or seen making it.
fn safety_rows(
    safety: Safety,
    report: &Report,
    functions: &BTreeSet<usize>,
    seen: &Seen,
    paths: &PathStyle,
    args: &[Arg],
    out: &mut Vec<Row>,
) {
    let key = |function: usize, inst: usize| SiteKey { func: function, inst };
    let at = |k: SiteKey| report.access_at(k).map(|a| &a.site);
    let observed = safety.seen(seen);
    let (what, fault, none, json_key) = safety.words();
    let predicted: BTreeMap<SiteKey, &gpucheck_analysis::Finding> = report
        .findings
        .iter()
        .filter_map(|f| safety.site(f.witness.as_deref()?).filter(|s| functions.contains(&s.0)).map(|s| (key(s.0, s.1), f)))
        .collect();
    let sites: BTreeSet<SiteKey> =
        predicted.keys().copied().chain(observed.keys().copied().filter(|k| functions.contains(&k.func))).collect();
    for k in sites {
        let (p, o) = (predicted.get(&k), observed.get(&k));
        let ran = seen.sites.get(&k).is_some_and(|(_, s)| s.requests > 0);
        // a finding found with a parameter's sample the run gives another value: not shown, as predicted
        let other_value = p.and_then(|f| {
            f.assumes.iter().filter(|x| !x.alignment).find_map(|x| match (x.param, args.get(x.param?.0 as usize)?) {
                (Some((_, 0)), &Arg::Bits(b)) if b as i64 != x.sample && b as u32 as i64 != x.sample => {
                    Some(format!("`{}` = {}; found with {}", x.name, b as i64, x.sample))
                }
                _ => None,
            })
        });
        // a global buffer's size is the launch's: the analysis judges none
        let global = report.access_at(k).is_some_and(|a| a.space == Space::Global);
        let verdict = match (p, o) {
            (Some(_), Some(_)) => Verdict::Confirmed,
            (Some(_), None) if seen.fault.is_some() => Verdict::FaultedAsPredicted,
            // the analysis judges block 0: one seen only in a later block is told, not a failure
            (None, Some(f)) if f.block != [0; 3] && !global => Verdict::OtherBlock,
            // a read that runs before the write it races with: the race's row says so
            (None, Some(_)) if safety == Safety::Uninit && seen.races.iter().any(|r| r.first == k || r.second == k) => Verdict::RacyRead,
            (None, Some(_)) if safety == Safety::Bounds => Verdict::OutOfBounds,
            (None, Some(_)) => Verdict::Uninitialized,
            (Some(_), None) if ran && other_value.is_some() => Verdict::ConditionNotMet,
            (Some(_), None) if ran => Verdict::NotObserved,
            _ => Verdict::NotRun,
        };
        // (a `.local` access has no access record: the finding's own place)
        let own = p.filter(|_| at(k).is_none()).map(|f| Site {
            kernel: f.kernel.to_string(),
            function: k.func,
            inst: k.inst,
            ptx_line: f.ptx_line,
            span: f.span.clone(),
            via: None,
        });
        let site = at(k).or(own.as_ref());
        let ((place, file, line, col), via) = place_via(paths, site);
        out.push(Row {
            place,
            line,
            col,
            file,
            ptx_line: site.map_or(seen.line(k), |a| a.ptx_line),
            key: k,
            what,
            predicted: match p {
                Some(f) => format!("{fault}: {}", f.label),
                None if global => "not judged (a global buffer)".to_string(),
                None => none.to_string(),
            },
            observed: match (o, &seen.fault) {
                (Some(f), _) => {
                    let ([x, y, z], [bx, by, bz]) = (f.thread, f.block);
                    format!("{fault}: thread ({x}, {y}, {z}) of block ({bx}, {by}, {bz}) at byte {} of its array", f.offset)
                }
                (None, Some(stop)) => stop_text(stop),
                (None, None) if ran => match &other_value {
                    Some(why) => format!("{none} ({why})"),
                    None => none.to_string(),
                },
                (None, None) => "not executed".to_string(),
            },
            verdict,
            json_predicted: json!({json_key: p.is_some()}),
            json_observed: match (o, &seen.fault) {
                (Some(f), _) => json!({json_key: true, "block": f.block, "thread": f.thread, "offset": f.offset}),
                // the GPU does not say where
                (None, Some(stop)) => json!({json_key: Value::Null, "fault": stop.what}),
                (None, None) => json!({json_key: false}),
            },
            via,
        });
    }
    // a fault with no access predicted outside its array: the kernel's own row
    if let (Some(stop), true) = (&seen.fault, safety == Safety::Bounds && predicted.is_empty()) {
        out.push(Row {
            place: "the kernel".to_string(),
            line: 0,
            col: 0,
            file: String::new(),
            ptx_line: 0,
            key: key(stop.func, 0),
            what,
            predicted: format!("{none} (no access predicted outside its array)"),
            observed: stop_text(stop),
            verdict: Verdict::Fault,
            json_predicted: json!({json_key: false}),
            json_observed: json!({json_key: Value::Null, "fault": stop.what}),
            via: Value::Null,
        });
    }
}

/// A row's words for the fault a GPU stopped the run with.
fn stop_text(stop: &DeviceFault) -> String {
    format!("the GPU stopped the run: {}", stop.what)
}
