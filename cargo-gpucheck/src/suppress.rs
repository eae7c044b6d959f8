//! `// gpucheck: allow(NAME, …)` comments (line or `/* … */` block comments)
//! in the package's Rust sources.
//!
//! A comment suppresses findings of the named lints (or groups) on its own
//! line or the line below it, and on the line of a kernel's `fn` (or the line
//! above it) for the whole kernel. A forbidden lint cannot be suppressed.
//! Comments that suppress nothing become `unused_gpucheck_allow` findings.
//!
//! Owns: finding the comments, matching findings to them, and the
//! unused-comment findings. Does not own: levels (`levels`) or rendering.

use crate::diagnostic::Diagnostic;
use gpucheck_analysis::lints::registry::{closest, expand};
use gpucheck_analysis::lints::UNUSED_GPUCHECK_ALLOW;
use gpucheck_analysis::{Finding, Level, NoteKind, SrcPos};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AllowComment {
    pub file: PathBuf,
    pub line: u32,
    /// 1-based column of `//`.
    pub col: u32,
    pub names: Vec<String>,
}

/// `// gpucheck: allow(a, b)` (or `/* gpucheck: allow(a, b) */`) on one
/// line: the comment's column and names.
pub fn parse_line(line: &str) -> Option<(u32, Vec<String>)> {
    let mut from = 0;
    let next = |from: usize| [line[from..].find("//"), line[from..].find("/*")].into_iter().flatten().min();
    while let Some(p) = next(from) {
        let start = from + p;
        let rest = line[start + 2..].trim_start_matches(['/', '!', '*', ' ']);
        if let Some(r) = rest.strip_prefix("gpucheck:") {
            let r = r.trim_start();
            if let Some(args) = r.strip_prefix("allow(").and_then(|a| a.split_once(')')).map(|x| x.0) {
                let names = args.split(',').map(|s| s.trim().to_string()).filter(|s| !s.is_empty()).collect();
                return Some((line[..start].chars().count() as u32 + 1, names));
            }
        }
        from = start + 2;
    }
    None
}

/// The `.rs` files under `root`, skipping `target/` and hidden directories.
pub fn rust_files(root: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else { continue };
        let mut entries: Vec<PathBuf> = rd.filter_map(|e| e.ok().map(|e| e.path())).collect();
        entries.sort();
        for p in entries {
            let name = p.file_name().map(|n| n.to_string_lossy().to_string()).unwrap_or_default();
            if p.is_dir() {
                if name != "target" && !name.starts_with('.') {
                    stack.push(p);
                }
            } else if name.ends_with(".rs") {
                files.push(p);
            }
        }
    }
    files
}

/// Every allow comment in the given source files (Rust, CUDA C: any file
/// with `//` or `/* */` comments); files that cannot be read are skipped.
pub fn scan_files(files: &[PathBuf]) -> Vec<AllowComment> {
    let mut out = Vec::new();
    for p in files {
        let Ok(text) = std::fs::read_to_string(p) else { continue };
        for (i, l) in text.lines().enumerate() {
            if let Some((col, names)) = parse_line(l) {
                out.push(AllowComment { file: p.clone(), line: i as u32 + 1, col, names });
            }
        }
    }
    out.sort_by(|a, b| (&a.file, a.line).cmp(&(&b.file, b.line)));
    out.dedup();
    out
}

/// 1-based column of `name` in the allow list of the comment at `col` of
/// `line`.
fn name_column(line: &str, col: u32, name: &str) -> Option<u32> {
    let start = line.char_indices().nth(col as usize - 1)?.0;
    let open = start + line[start..].find("allow(")? + "allow(".len();
    let close = open + line[open..].find(')')?;
    let mut at = open;
    for part in line[open..close].split(',') {
        let lead = part.len() - part.trim_start().len();
        if part.trim() == name {
            return Some(line[..at + lead].chars().count() as u32 + 1);
        }
        at += part.len() + 1;
    }
    None
}

pub struct Suppressions {
    comments: Vec<AllowComment>,
    /// used[c][n]: name n of comment c suppressed something
    used: Vec<Vec<bool>>,
    at: HashMap<(PathBuf, u32), Vec<usize>>,
    texts: HashMap<PathBuf, Vec<String>>,
}

impl Suppressions {
    pub fn new(comments: Vec<AllowComment>) -> Self {
        let mut at: HashMap<(PathBuf, u32), Vec<usize>> = HashMap::new();
        for (i, c) in comments.iter().enumerate() {
            at.entry((c.file.clone(), c.line)).or_default().push(i);
        }
        let used = comments.iter().map(|c| vec![false; c.names.len()]).collect();
        Suppressions { comments, used, at, texts: HashMap::new() }
    }

    /// The lines of `file` (none when it cannot be read), read once.
    fn lines(&mut self, file: &Path) -> &[String] {
        self.texts
            .entry(file.to_path_buf())
            .or_insert_with(|| std::fs::read_to_string(file).map(|t| t.lines().map(str::to_string).collect()).unwrap_or_default())
    }

    /// Line of `fn kernel` in `file`, if any.
    fn fn_line(&mut self, file: &Path, kernel: &str) -> Option<u32> {
        let lines = self.lines(file);
        let pat = format!("fn {kernel}");
        lines.iter().position(|l| l.find(&pat).is_some_and(|p| l[p + pat.len()..].starts_with(['(', '<', ' ']))).map(|i| i as u32 + 1)
    }

    /// The comment (index, name index) that suppresses `lint` at `file:line`
    /// or for the whole kernel.
    fn matching(&mut self, file: &Path, line: u32, kernel: &str, lint: &str) -> Option<(usize, usize)> {
        let mut lines = vec![line, line.saturating_sub(1)];
        if let Some(fl) = self.fn_line(file, kernel) {
            lines.extend([fl, fl.saturating_sub(1)]);
        }
        for l in lines {
            for &c in self.at.get(&(file.to_path_buf(), l)).map(|v| v.as_slice()).unwrap_or(&[]) {
                for (n, name) in self.comments[c].names.iter().enumerate() {
                    if expand(name).is_some_and(|ls| ls.iter().any(|x| x.name == lint)) {
                        return Some((c, n));
                    }
                }
            }
        }
        None
    }

    /// Drop suppressed diagnostics (forbidden lints stay, with a note).
    pub fn apply(&mut self, diags: Vec<Diagnostic>, display: &dyn Fn(&Path) -> String) -> Vec<Diagnostic> {
        let mut out = Vec::with_capacity(diags.len());
        for mut d in diags {
            let Some(file) = d.abs_file.clone() else {
                out.push(d);
                continue;
            };
            match self.matching(&file, d.line, &d.finding.kernel.clone(), d.finding.lint.name) {
                Some((c, n)) if d.level == Level::Forbid => {
                    self.used[c][n] = true;
                    let cm = &self.comments[c];
                    d.notes.push((
                        NoteKind::Note,
                        format!(
                            "`gpucheck: allow({})` at {}:{} has no effect: the lint is forbidden",
                            cm.names[n],
                            display(&cm.file),
                            cm.line
                        ),
                    ));
                    out.push(d);
                }
                Some((c, n)) => self.used[c][n] = true,
                None => out.push(d),
            }
        }
        out
    }

    /// Findings for the names no diagnostic used.
    pub fn unused(&mut self) -> Vec<Finding> {
        let mut out = Vec::new();
        let files: Vec<PathBuf> = self.comments.iter().map(|c| c.file.clone()).collect();
        for f in files {
            self.lines(&f);
        }
        for (c, cm) in self.comments.iter().enumerate() {
            for (n, name) in cm.names.iter().enumerate() {
                if self.used[c][n] {
                    continue;
                }
                let mut f = Finding::new(&UNUSED_GPUCHECK_ALLOW);
                // at the name (one finding each), else at the comment
                let text = self.texts.get(&cm.file).and_then(|t| t.get(cm.line as usize - 1));
                let col = text.and_then(|t| name_column(t, cm.col, name)).unwrap_or(cm.col);
                f.span = Some(SrcPos { file: cm.file.to_string_lossy().into(), line: cm.line, col });
                if expand(name).is_some() {
                    f.message = format!("unused `gpucheck: allow({name})`: no `{name}` finding to suppress here").into();
                    f.label = "suppresses nothing".into();
                    f.note("a `gpucheck: allow` comment applies to findings on its own line or the line below, or to a whole kernel on the line of its `fn`");
                    f.help("remove the comment");
                } else {
                    f.message = format!("unknown lint `{name}` in `gpucheck: allow`").into();
                    match closest(name) {
                        Some(c) => f.help(format!("did you mean `{c}`?")),
                        None => f.help("`cargo gpucheck lints` lists the lints"),
                    }
                }
                out.push(f);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comment_syntax() {
        assert_eq!(parse_line("    if t % 2 == 0 { // gpucheck: allow(divergent_branch)"), Some((21, vec!["divergent_branch".into()])));
        assert_eq!(parse_line("// gpucheck:allow(a, gpucheck::b)"), Some((1, vec!["a".into(), "gpucheck::b".into()])));
        assert_eq!(parse_line("let url = \"http://x\"; // gpucheck: allow(perf)").map(|x| x.1), Some(vec!["perf".into()]));
        assert_eq!(parse_line("    x += 1; /* gpucheck: allow(divergent_branch) */"), Some((13, vec!["divergent_branch".into()])));
        assert_eq!(parse_line("/** gpucheck: allow(perf) */").map(|x| x.1), Some(vec!["perf".into()]));
        assert_eq!(parse_line("// gpucheck: deny(x)"), None);
        assert_eq!(parse_line("let x = 1; // allow(x)"), None);
        let l = "    x += 1; // gpucheck: allow(perf,  divergent_branch)";
        assert_eq!(name_column(l, 13, "perf"), Some(32));
        assert_eq!(name_column(l, 13, "divergent_branch"), Some(39));
        assert_eq!(name_column(l, 13, "other"), None);
    }
}
