//! `--message-format sarif` validates against the SARIF 2.1.0 schema and
//! carries the findings, rules and locations a code-scanning UI needs.

use gpucheck_tests::*;

fn schema() -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(repo().join("tests/fixtures/sarif-schema-2.1.0.json")).unwrap()).unwrap()
}

fn validate(log: &serde_json::Value) {
    let v = jsonschema::validator_for(&schema()).expect("the SARIF schema compiles");
    let errors: Vec<String> = v.iter_errors(log).map(|e| format!("{} at {}", e, e.instance_path())).collect();
    assert!(errors.is_empty(), "SARIF output does not validate:\n{}", errors.join("\n"));
}

#[test]
fn example_kernels_sarif_validates_and_matches_the_findings() {
    let ek = repo().join("example-kernels");
    let out = gpucheck(&["-q", "--message-format", "sarif", "-W", "pedantic"], &ek);
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    let log: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON document");
    validate(&log);
    let run = &log["runs"][0];
    let rules = run["tool"]["driver"]["rules"].as_array().unwrap();
    assert!(rules.iter().any(|r| r["id"] == "gpucheck::barrier_divergence" && r["help"]["text"].as_str().unwrap().contains("Use instead")));
    let results = run["results"].as_array().unwrap();
    // the same findings as the //~ marks
    let marks = marks(&ek, &ek.join("src"));
    let mut covered: std::collections::BTreeSet<Mark> = std::collections::BTreeSet::new();
    // one result per mark (a line with two marks of a lint has two)
    assert_eq!(results.len(), marks.len(), "SARIF results against marks");
    for r in results {
        let loc = &r["locations"][0]["physicalLocation"];
        let uri = loc["artifactLocation"]["uri"].as_str().unwrap();
        assert!(uri.starts_with("src/"), "not relative to the workspace root: {uri}");
        assert_eq!(loc["artifactLocation"]["uriBaseId"], "%SRCROOT%");
        let line = loc["region"]["startLine"].as_u64().unwrap() as u32;
        let lint = r["ruleId"].as_str().unwrap().strip_prefix("gpucheck::").unwrap();
        let m = marks
            .iter()
            .find(|m| m.file == uri && m.line == line && m.lint == lint)
            .unwrap_or_else(|| panic!("no mark for {uri}:{line} {lint}"));
        covered.insert(m.clone());
        assert_eq!(r["level"], if m.level == "ERROR" { "error" } else { "warning" });
        let idx = r["ruleIndex"].as_u64().unwrap() as usize;
        assert_eq!(rules[idx]["id"], r["ruleId"]);
    }
    assert_eq!(covered.len(), marks.iter().collect::<std::collections::BTreeSet<_>>().len(), "marks without a SARIF result");
    // the schema check is real: a wrong level is rejected
    let mut bad = log.clone();
    bad["runs"][0]["results"][0]["level"] = serde_json::json!("fatal");
    let v = jsonschema::validator_for(&schema()).unwrap();
    assert!(!v.is_valid(&bad));
    // a barrier finding points back at its branch
    let b = results.iter().find(|r| r["ruleId"] == "gpucheck::barrier_divergence").unwrap();
    assert!(b["relatedLocations"][0]["message"]["text"].as_str().unwrap().contains("thread-dependent branch"));
}

#[test]
fn ptx_sarif_validates_even_without_rust_spans() {
    // PTX written for the tests, with no `.loc` (no Rust spans) and findings
    let f = repo().join("analysis/tests/nvvm/idioms.ptx");
    let out = gpucheck(&["ptx", f.to_str().unwrap(), "--message-format", "sarif"], &repo());
    let log: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    validate(&log);
    assert!(!log["runs"][0]["results"].as_array().unwrap().is_empty());
}

/// Results carry `partialFingerprints` that code scanning uses to track a
/// finding across commits: unique within a run, and unchanged when the
/// code above a finding moves it to another line.
#[test]
fn fingerprints_survive_moved_lines() {
    let dir = scratch("gpucheck-test-sarif-fingerprints");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let ek = repo().join("example-kernels");
    for f in ["Cargo.toml", "rust-toolchain.toml"] {
        std::fs::copy(ek.join(f), dir.join(f)).unwrap();
    }
    copy_tree(&ek.join("src"), &dir.join("src"));
    let target = kernel_target();
    let run = || -> Vec<(String, u64)> {
        let out = std::process::Command::new(binary())
            .args(["gpucheck", "-q", "--message-format", "sarif"])
            .current_dir(&dir)
            .env("CARGO_TARGET_DIR", &target)
            .output()
            .unwrap();
        let log: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON document");
        let mut v: Vec<(String, u64)> = log["runs"][0]["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                (
                    r["partialFingerprints"]["gpucheck/v1"].as_str().expect("a fingerprint").to_string(),
                    r["locations"][0]["physicalLocation"]["region"]["startLine"].as_u64().unwrap(),
                )
            })
            .collect();
        v.sort();
        v
    };
    let before = run();
    assert!(before.len() > 10);
    let unique: std::collections::BTreeSet<&String> = before.iter().map(|x| &x.0).collect();
    assert_eq!(unique.len(), before.len(), "fingerprints are unique");
    // three lines added at the top of every file: every finding moves, no fingerprint changes
    for e in std::fs::read_dir(dir.join("src")).unwrap() {
        let p = e.unwrap().path();
        let text = std::fs::read_to_string(&p).unwrap();
        let (doc, rest): (Vec<&str>, Vec<&str>) = text.lines().partition(|l| l.starts_with("//!"));
        std::fs::write(&p, format!("{}\n// moved\n// down\n// three lines\n{}\n", doc.join("\n"), rest.join("\n"))).unwrap();
    }
    let after = run();
    assert_eq!(after.iter().map(|x| &x.0).collect::<Vec<_>>(), before.iter().map(|x| &x.0).collect::<Vec<_>>());
    assert!(after.iter().zip(&before).any(|(a, b)| a.1 != b.1), "the lines did move");
}

fn copy_tree(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            copy_tree(&p, &to.join(p.file_name().unwrap()));
        } else {
            std::fs::copy(&p, to.join(p.file_name().unwrap())).unwrap();
        }
    }
}
