//! `cargo gpucheck report` on the example kernels: the JSON document
//! (`--format json`) holds every kernel, every finding at its `//~` line,
//! every access site and race links that point at each other, with the
//! confirm run beside the predictions; the HTML pages render in a real
//! browser (headless Chromium: `--dump-dom` and `--screenshot`, kept under
//! the target folder in `gpucheck-test-report/`).
//!
//! Chromium comes from `GPUCHECK_CHROMIUM` or PATH (`chromium`, installed
//! by `.ci/setup`); without it the browser test prints one line saying it
//! was skipped, unless `GPUCHECK_REQUIRE_CHROMIUM=1` (set by CI) makes that
//! a failure.

use gpucheck_tests::*;
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

fn ek() -> PathBuf {
    repo().join("example-kernels")
}

/// The report of the example kernels as JSON, pedantic lints on (as the UI test), with a confirm run.
fn doc() -> &'static Value {
    static DOC: OnceLock<Value> = OnceLock::new();
    DOC.get_or_init(|| {
        let out = gpucheck(&["report", "--format", "json", "--confirm", "-q", "-W", "gpucheck::pedantic"], &ek());
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice(&out.stdout).expect("one JSON document on stdout")
    })
}

/// The kernels (`.entry`) of the example PTX.
fn entries() -> BTreeSet<String> {
    let ptx = &example_build().1;
    ptx.lines().filter_map(|l| l.split(".entry ").nth(1)).map(|r| r.trim_end_matches(['(', ' ']).to_string()).collect()
}

fn sites(d: &Value) -> impl Iterator<Item = (usize, u64, &Value)> {
    d["files"].as_array().unwrap().iter().enumerate().flat_map(|(fi, f)| {
        f["lines"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(move |l| l["sites"].as_array().unwrap().iter().map(move |s| (fi, l["line"].as_u64().unwrap(), s)))
    })
}

/// The costliest findings, ranked by their predicted share of their
/// kernel's cost: the worst first, each share in (0, 1].
#[test]
fn costliest_findings_are_ranked() {
    let c = doc()["costliest"].as_array().expect("a ranking");
    assert!(c.len() >= 5, "{c:?}");
    let shares: Vec<f64> = c.iter().map(|x| x["share"].as_f64().unwrap()).collect();
    assert!(shares.windows(2).all(|w| w[0] >= w[1]) && shares.iter().all(|&x| x > 0.0 && x <= 1.0), "{shares:?}");
    // the helper's strided read (88 % of its sectors), then the unpadded tile's column (86 %)
    let top: Vec<(&str, &str)> = c[..2].iter().map(|x| (x["kernel"].as_str().unwrap(), x["lint"].as_str().unwrap())).collect();
    assert_eq!(top, [("helper_strided", "uncoalesced_global_access"), ("shared_column_unpadded", "shared_bank_conflict")], "{c:?}");
}

#[test]
fn every_kernel_has_a_row_with_its_numbers() {
    let d = doc();
    let rows: Vec<&Value> = d["kernels"].as_array().unwrap().iter().filter(|k| k["entry"] == true).collect();
    let names: BTreeSet<String> = rows.iter().map(|k| k["name"].as_str().unwrap().to_string()).collect();
    assert_eq!(names, entries());
    let row = |n: &str| rows.iter().find(|k| k["name"] == n).unwrap();
    // a strided read moves 8× its ideal; the contiguous twin exactly its ideal
    let moved = |k: &Value| k["bytes_moved"].as_u64().unwrap();
    let ideal = |k: &Value| k["bytes_ideal"].as_u64().unwrap();
    let strided = row("strided_gather");
    assert!(moved(strided) >= 4 * ideal(strided), "{strided}");
    let good = row("contiguous_read");
    assert_eq!(moved(good), ideal(good), "{good}");
    // findings per lint, races, barriers, coverage
    assert_eq!(row("neighbour_read")["findings"]["shared_memory_race"], 1);
    assert!(row("neighbour_read")["races"].as_u64().unwrap() >= 1);
    assert_eq!(row("barrier_in_branch")["divergent_barriers"], 1);
    // divergent branches: those reported, of those known to split a warp
    let branches = |n: &str| (row(n)["divergent_branches"].as_u64().unwrap(), row(n)["split_branches"].as_u64().unwrap());
    assert_eq!(branches("odd_even_branch"), (1, 1));
    assert_eq!(branches("boundary_check"), (0, 1), "a bounds check splits one warp, too cheap to report");
    assert_eq!(branches("warp_uniform_branch"), (0, 0));
    for k in &rows {
        assert!(k["memory_analysed"].as_u64() <= k["memory_instructions"].as_u64(), "{k}");
        assert!(k["instructions"].as_u64().unwrap() > 0, "{k}");
    }
    // every kernel has a launch in Cargo.toml: each ran, and no prediction was contradicted
    for k in &rows {
        let c = &k["confirm"];
        assert!(c.is_object(), "{} did not run: {k}", k["name"]);
        assert_eq!(c["mismatches"], 0, "{k}");
    }
    assert!(row("neighbour_read")["confirm"]["races_seen"].as_u64().unwrap() >= 1);
    assert!(row("strided_gather")["confirm"]["confirmed"].as_u64().unwrap() >= 1);
}

#[test]
fn every_finding_is_at_its_marked_line_and_every_access_is_shown() {
    let d = doc();
    let expected: BTreeSet<Mark> = marks(&ek(), &ek().join("src")).into_iter().collect();
    let mut got = BTreeSet::new();
    for f in d["files"].as_array().unwrap() {
        for l in f["lines"].as_array().unwrap() {
            for x in l["findings"].as_array().unwrap() {
                got.insert(Mark {
                    file: f["path"].as_str().unwrap().to_string(),
                    line: l["line"].as_u64().unwrap() as u32,
                    level: if x["level"] == "error" { "ERROR" } else { "WARN" }.into(),
                    lint: x["lint"].as_str().unwrap().to_string(),
                });
            }
        }
    }
    let missing: Vec<_> = expected.difference(&got).collect();
    let extra: Vec<_> = got.difference(&expected).collect();
    assert!(missing.is_empty() && extra.is_empty(), "missing: {missing:#?}\nextra: {extra:#?}");
    // every access site the check records is on a line of the report (copies folded, counted)
    let records = example_build().0.iter().filter(|m| m["reason"] == "gpucheck-access").count();
    let shown: usize = sites(d)
        .filter(|(_, _, s)| s["column"] == "sectors" || s["column"] == "banks")
        .map(|(_, _, s)| s["ptx_lines"].as_array().unwrap().len())
        .sum();
    assert_eq!(shown, records);
    // each line's cost is its worst site's, and the run's numbers sit beside the predictions
    for f in d["files"].as_array().unwrap() {
        for l in f["lines"].as_array().unwrap() {
            let worst = l["sites"].as_array().unwrap().iter().filter_map(|s| s["ratio"].as_f64()).reduce(f64::max);
            assert_eq!(l["ratio"].as_f64(), worst, "{l}");
        }
    }
    let observed = sites(d).filter(|(_, _, s)| s["observed"].is_string()).count();
    assert!(observed * 10 >= shown * 8, "only {observed} of {shown} sites have an observation");
    let gather = sites(d).find(|(_, _, s)| s["kernel"] == "strided_gather" && s["column"] == "sectors" && s["numbers"]["sectors"] == 32);
    assert_eq!(gather.expect("strided_gather's load").2["verdict"], "confirmed");
}

#[test]
fn race_links_point_at_each_other() {
    let d = doc();
    let races: Vec<(usize, u64, &Value)> = sites(d).filter(|(_, _, s)| s["column"] == "race").collect();
    assert!(races.len() >= 4, "{races:#?}");
    for (f, line, s) in &races {
        let p = &s["partner"];
        let (pf, pl) = (p["file"].as_u64().unwrap() as usize, p["line"].as_u64().unwrap());
        let back = races.iter().any(|(f2, l2, s2)| {
            *f2 == pf && *l2 == pl && s2["kernel"] == s["kernel"] && s2["partner"]["file"] == *f as u64 && s2["partner"]["line"] == *line
        });
        assert!(back, "no race site links back from {pf}:{pl} to {f}:{line}: {s}");
    }
    // the run saw the predicted race
    assert!(races.iter().any(|(_, _, s)| s["kernel"] == "neighbour_read" && s["verdict"] == "RACE"));
    // a race between blocks says so, and its run row is the `grid` one
    let grid = races.iter().find(|(_, _, s)| s["kernel"] == "pair_blocks_write").map(|(_, _, s)| *s).expect("the race between blocks");
    assert!(grid.to_string().contains("race between blocks (write-after-write): thread 0 of block 0 here"), "{grid}");
    assert_eq!(grid["verdict"], "RACE", "{grid}");
}

#[test]
fn a_ptx_file_alone_is_reported() {
    let ptx = &example_build().2;
    let dir = scratch("gpucheck-test-report/ptx");
    let _ = std::fs::remove_dir_all(&dir);
    let out = gpucheck(&["report", "--ptx", &ptx.display().to_string(), "-o", &dir.display().to_string(), "-q"], &ek());
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("Finished report of") && err.contains("index.html"), "{err}");
    let index = std::fs::read_to_string(dir.join("index.html")).unwrap();
    for k in entries() {
        assert!(index.contains(&format!("data-kernel=\"{k}\"")), "{k} missing from the PTX report");
    }
    assert!(dir.join("style.css").exists() && dir.join("report.js").exists());
    // source pages are named after their files (`…lib.rs.html`), not numbered
    let names: Vec<String> =
        std::fs::read_dir(dir.join("src")).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    assert!(!names.is_empty() && names.iter().all(|n| n.ends_with(".html") && n.parse::<u32>().is_err()), "{names:?}");
    assert!(names.iter().any(|n| n.contains(".rs.html") || n.contains(".ptx.html")), "{names:?}");
    assert!(names.iter().all(|n| index.contains(&format!("href=\"src/{n}\""))), "{names:?}");
    // nothing is fetched: every script, stylesheet and link is a file of the report
    let pages = std::fs::read_dir(dir.join("src")).unwrap().map(|e| e.unwrap().path()).chain([dir.join("index.html")]);
    for p in pages {
        let page = std::fs::read_to_string(&p).unwrap();
        for attr in ["src=\"", "href=\""] {
            for (i, _) in page.match_indices(attr) {
                let url = &page[i + attr.len()..][..8.min(page.len() - i - attr.len())];
                assert!(!url.starts_with("http") && !url.starts_with("//"), "{}: fetches {url}", p.display());
            }
        }
    }
}

fn chromium() -> Option<PathBuf> {
    let exe = std::env::var_os("GPUCHECK_CHROMIUM").map(PathBuf::from).unwrap_or_else(|| PathBuf::from("chromium"));
    if Command::new(&exe).arg("--version").output().is_ok_and(|o| o.status.success()) {
        return Some(exe);
    }
    assert!(std::env::var("GPUCHECK_REQUIRE_CHROMIUM").is_err(), "GPUCHECK_REQUIRE_CHROMIUM is set but `{}` does not run", exe.display());
    eprintln!("report_renders_in_a_browser: skipped: `{}` not found (install Debian's chromium, or set GPUCHECK_CHROMIUM)", exe.display());
    None
}

/// Headless Chromium on a page: its DOM after the scripts ran, and a screenshot when `shot` is given.
fn browse(exe: &Path, page: &Path, shot: Option<&Path>) -> String {
    let profile = scratch("gpucheck-test-report/chromium-profile");
    let mut cmd = Command::new(exe);
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--window-size=1400,1000",
    ])
    .arg(format!("--user-data-dir={}", profile.display()));
    match shot {
        Some(s) => cmd.arg(format!("--screenshot={}", s.display())),
        None => cmd.arg("--dump-dom"),
    };
    let out = cmd.arg(format!("file://{}", page.display())).output().expect("running chromium");
    assert!(out.status.success(), "chromium on {}: {}", page.display(), String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The markup of the table row with this id.
fn row<'d>(dom: &'d str, id: &str) -> Option<&'d str> {
    let start = dom.find(&format!("id=\"{id}\""))?;
    let end = dom[start..].find("</tr>")? + start;
    Some(&dom[start..end])
}

#[test]
fn report_renders_in_a_browser() {
    let Some(exe) = chromium() else { return };
    let dir = scratch("gpucheck-test-report/html");
    let _ = std::fs::remove_dir_all(&dir);
    let out = gpucheck(&["report", "--confirm", "-q", "-W", "gpucheck::pedantic", "-o", &dir.display().to_string()], &ek());
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let d = doc();
    // the overview: a row per kernel, in the DOM the browser built
    let dom = browse(&exe, &dir.join("index.html"), None);
    for k in entries() {
        assert!(dom.contains(&format!("data-kernel=\"{k}\"")), "no row for {k}");
    }
    assert!(dom.contains("sorted by bytes moved"), "{dom}");
    // each source page: every finding's line is marked and its gutter coloured; races link
    let mut race_links = 0;
    for f in d["files"].as_array().unwrap() {
        let dom = browse(&exe, &dir.join("src").join(f["page"].as_str().unwrap()), None);
        for l in f["lines"].as_array().unwrap() {
            let n = l["line"].as_u64().unwrap();
            let tr = row(&dom, &format!("L{n}")).unwrap_or_else(|| panic!("{}: no line {n}", f["path"]));
            if !l["findings"].as_array().unwrap().is_empty() {
                assert!(tr.contains("has-finding"), "{}:{n}: {tr}", f["path"]);
            }
            if l["ratio"].is_f64() {
                assert!(tr.contains("style=\"background:hsl("), "{}:{n} is not coloured: {tr}", f["path"]);
            }
        }
        race_links += dom.matches("class=\"race-link\"").count();
    }
    assert!(race_links >= 4, "{race_links} race links");
    // screenshots, kept as artifacts
    let races = d["files"].as_array().unwrap().iter().find(|f| f["path"] == "src/races.rs").expect("src/races.rs in the report");
    assert_eq!(races["page"], "src_races.rs.html");
    for (page, png) in [("index.html".to_string(), "overview.png"), (format!("src/{}", races["page"].as_str().unwrap()), "source.png")] {
        let shot = dir.join(png);
        browse(&exe, &dir.join(page), Some(&shot));
        assert!(std::fs::metadata(&shot).is_ok_and(|m| m.len() > 10_000), "{} missing or empty", shot.display());
    }
}
