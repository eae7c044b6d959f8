//! The module order ARCHITECTURE.md states holds in the code: in each
//! crate's code map, a module only uses (`crate::…`) modules listed above
//! it, so there is no cycle between modules; every module of the crate is
//! in its code map. Test code (`#[cfg(test)]` at the end of a file) and
//! comments are not dependencies.

use gpucheck_tests::repo;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The top-level modules of a code map section (`## Code map: `NAME``),
/// in the order of its bullets (`* `module` — …`, `* `a::b`, `a::c` — …`).
fn code_map(doc: &str, section: &str) -> Vec<String> {
    let heading = format!("## Code map: `{section}`");
    let start = doc.find(&heading).unwrap_or_else(|| panic!("ARCHITECTURE.md has no `{heading}` section"));
    let body = &doc[start + heading.len()..];
    let body = &body[..body.find("\n## ").unwrap_or(body.len())];
    let mut order: Vec<String> = Vec::new();
    for line in body.lines().filter(|l| l.starts_with("* `")) {
        let head = line.split(" — ").next().unwrap_or(line);
        for name in head.split('`').skip(1).step_by(2) {
            let top = name.split("::").next().unwrap_or(name).trim_end_matches(".rs").to_string();
            if !order.contains(&top) {
                order.push(top);
            }
        }
    }
    order
}

/// Every `.rs` file under `dir`.
fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().map(|e| e.unwrap().path()) {
            if e.is_dir() {
                stack.push(e);
            } else if e.extension().is_some_and(|x| x == "rs") {
                out.push(e);
            }
        }
    }
    out.sort();
    out
}

/// The top-level module a source file belongs to.
fn module_of(src: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(src).unwrap();
    let first = rel.components().next().unwrap().as_os_str().to_string_lossy().to_string();
    // (`lib.rs` and `main.rs`, the crate roots, are `lib` and `main` as the code map names them)
    first.trim_end_matches(".rs").to_string()
}

/// The top-level modules a file's code names through `crate::` (comments
/// and the `#[cfg(test)]` tail left out).
fn uses(text: &str) -> BTreeSet<String> {
    let code = &text[..text.find("#[cfg(test)]").unwrap_or(text.len())];
    let mut out = BTreeSet::new();
    for line in code.lines().map(str::trim).filter(|l| !l.starts_with("//")) {
        let mut rest = line;
        while let Some(i) = rest.find("crate::") {
            let after = &rest[i + "crate::".len()..];
            let preceded = rest[..i].chars().next_back().is_some_and(|c| c.is_alphanumeric() || c == '_');
            if !preceded {
                if let Some(group) = after.strip_prefix('{') {
                    let group = &group[..group.find('}').unwrap_or(group.len())];
                    out.extend(group.split(',').map(|x| x.trim().split("::").next().unwrap_or("").to_string()).filter(|x| !x.is_empty()));
                } else {
                    let name: String = after.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
                    if !name.is_empty() {
                        out.insert(name);
                    }
                }
            }
            rest = after;
        }
    }
    out
}

/// The violations of a code map `order` by files (module, path, text).
fn violations(order: &[String], files: &[(String, String, String)], what: &str) -> Vec<String> {
    let pos = |m: &str| order.iter().position(|x| x == m);
    let modules: BTreeSet<&str> = files.iter().map(|f| f.0.as_str()).collect();
    let mut problems = Vec::new();
    for m in &modules {
        if pos(m).is_none() {
            problems.push(format!("module `{m}` of {what} is not in ARCHITECTURE.md's code map"));
        }
    }
    for (m, path, text) in files {
        let Some(at) = pos(m) else { continue };
        for used in uses(text) {
            if used == *m || !modules.contains(used.as_str()) {
                continue;
            }
            if pos(&used).is_none_or(|u| u >= at) {
                problems.push(format!(
                    "`{m}` ({path}) uses `crate::{used}`, which ARCHITECTURE.md lists below it (or not at all): a module only uses those above it"
                ));
            }
        }
    }
    problems
}

/// The violations of one crate's code map.
fn check(crate_dir: &str) -> Vec<String> {
    let doc = std::fs::read_to_string(repo().join("ARCHITECTURE.md")).expect("ARCHITECTURE.md");
    let order = code_map(&doc, crate_dir);
    let src = repo().join(crate_dir).join("src");
    let files: Vec<(String, String, String)> = files(&src)
        .into_iter()
        .map(|f| {
            let text = std::fs::read_to_string(&f).unwrap();
            (module_of(&src, &f), f.strip_prefix(repo()).unwrap().display().to_string(), text)
        })
        .collect();
    violations(&order, &files, crate_dir)
}

#[test]
fn analysis_modules_use_only_those_above_them() {
    let problems = check("analysis");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn binary_modules_use_only_those_above_them() {
    let problems = check("cargo-gpucheck");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn a_use_of_a_module_below_is_a_violation() {
    let doc = "## Code map: `x`\n\n* `a` — first.\n* `b`, `b::inner` — second.\n\n## Other\n";
    let order = code_map(doc, "x");
    assert_eq!(order, vec!["a", "b"]);
    let text = "use crate::b::Thing;\n// crate::c in a comment\nfn f() { crate::{d, e::f}; }\n#[cfg(test)]\nmod tests { use crate::g; }\n";
    assert_eq!(uses(text).into_iter().collect::<Vec<_>>(), vec!["b", "d", "e"]);
    let file = |m: &str, text: &str| (m.to_string(), format!("{m}.rs"), text.to_string());
    // `b` uses `a` above it: fine; `a` uses `b` below it, and `c` is not in the map
    assert!(violations(&order, &[file("a", ""), file("b", "use crate::a::X;")], "x").is_empty());
    let found = violations(&order, &[file("a", "use crate::b::Y;"), file("b", ""), file("c", "")], "x");
    assert_eq!(found.len(), 2, "{found:#?}");
    assert!(found.iter().any(|p| p.contains("`a` (a.rs) uses `crate::b`")), "{found:#?}");
    assert!(found.iter().any(|p| p.contains("module `c`")), "{found:#?}");
}
