//! From analysis findings to diagnostics ready to print: level applied,
//! paths made relative to the workspace, spans widened to the Rust
//! expression, duplicates (code the compiler copied: unrolled loops,
//! inlined helpers) folded, and a stable order.
//!
//! Owns: that conversion and the source-text helpers it needs. Does not
//! own: analysis (the `gpucheck-analysis` crate) or rendering (`report`).

use crate::levels::Levels;
use crate::lint_attrs::Scopes;
use gpucheck_analysis::lints::UNUSED_GPUCHECK_ALLOW;
use gpucheck_analysis::{Finding, Level, Metric, Note, NoteKind, Place, ShapeSource, Text};
use rustc_hash::FxHashMap as HashMap;
use std::path::{Path, PathBuf};

/// A diagnostic ready for a reporter.
#[derive(Clone, Debug)]
pub struct Diagnostic {
    pub finding: Finding,
    pub level: Level,
    /// Where the default level came from, for the closing note.
    pub level_note: String,
    /// Display path of the primary file (relative to the workspace root when inside it).
    pub file: Option<String>,
    /// Absolute path to read the snippet from.
    pub abs_file: Option<PathBuf>,
    pub line: u32,
    pub col: u32,
    /// 1-based end column (exclusive) of the primary span.
    pub col_end: u32,
    /// The PTX file and position, for `--> ` when there is no Rust span.
    pub ptx_file: String,
    pub duplicates: usize,
    /// The smallest and largest rank of the copies folded into it (the
    /// headline's included): the headline is the worst.
    pub ranks: Option<(i64, i64)>,
    /// The finding's notes, rendered (paths relative, configuration named),
    /// and any the binary adds.
    pub notes: Vec<(NoteKind, String)>,
    /// Secondary spans: (display file, abs file, line, col, col_end, label).
    pub secondary: Vec<(String, PathBuf, u32, u32, u32, String)>,
}

/// Shortens paths in messages: workspace-relative, `$RUST/…` for the sysroot.
pub struct PathStyle {
    pub root: PathBuf,
}

/// A path as a shell command takes it: as is when it has only characters
/// no shell reads specially, else in single quotes (`'my kernels'`).
pub fn shell_quote(p: &Path) -> String {
    let s = p.to_string_lossy();
    let plain = |c: char| c.is_ascii_alphanumeric() || "_-./+=:@,%".contains(c);
    if !s.is_empty() && s.chars().all(plain) {
        s.into_owned()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

impl PathStyle {
    pub fn display(&self, p: &str) -> String {
        let path = Path::new(p);
        if let Ok(r) = path.strip_prefix(&self.root) {
            return r.to_string_lossy().to_string();
        }
        if let Some(i) = p.find("/lib/rustlib/src/rust/") {
            return format!("$RUST/{}", &p[i + "/lib/rustlib/src/rust/".len()..]);
        }
        p.to_string()
    }

    pub fn absolute(&self, p: &str) -> PathBuf {
        let path = Path::new(p);
        if path.is_absolute() {
            path.to_path_buf()
        } else {
            self.root.join(path)
        }
    }
}

/// End column (exclusive) of a `// gpucheck: allow(…)` comment or a lint
/// attribute starting at `col`, or of the lint name starting there.
fn comment_end(line: &str, col: u32) -> u32 {
    let chars: Vec<char> = line.chars().collect();
    let start = (col.max(1) - 1) as usize;
    // at a name in the list: the name
    if chars.get(start).is_some_and(|c| c.is_alphanumeric() || *c == '_') {
        let len = chars[start..].iter().take_while(|c| c.is_alphanumeric() || **c == '_' || **c == ':').count();
        return (start + len + 1) as u32;
    }
    match chars.iter().skip(start).position(|c| *c == ')') {
        // an attribute's closing bracket too
        Some(p) if chars.get(start + p + 1) == Some(&']') => (start + p + 3) as u32,
        Some(p) => (start + p + 2) as u32,
        None => chars.len() as u32 + 1,
    }
}

/// End column (exclusive) of the memory access starting at `col`: the one
/// operand (`*a.add(i)`, `*p`, `x[i]`, `(*p).f`), not the expression it is
/// part of (`*a.add(i) * *b.add(j)`); [`span_end`] when it is not one.
pub fn access_end(line: &str, col: u32) -> u32 {
    let chars: Vec<char> = line.chars().collect();
    let start = (col.max(1) - 1) as usize;
    let mut i = start;
    // a balanced group from `i` (which holds the opener), the index after it
    let group = |mut i: usize| -> Option<usize> {
        let mut depth = 0i32;
        while i < chars.len() {
            match chars[i] {
                '(' | '[' => depth += 1,
                ')' | ']' => {
                    depth -= 1;
                    if depth == 0 {
                        return Some(i + 1);
                    }
                }
                _ => {}
            }
            i += 1;
        }
        None
    };
    let ident = |mut i: usize| {
        while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_' || chars[i] == ':') {
            i += 1;
        }
        i
    };
    if chars.get(i) == Some(&'*') {
        i += 1;
    }
    let head = match chars.get(i) {
        Some('(') => group(i),
        Some(c) if c.is_alphabetic() || *c == '_' => Some(ident(i)),
        _ => None,
    };
    let Some(mut end) = head else { return span_end(line, col) };
    loop {
        match chars.get(end) {
            Some('.') if chars.get(end + 1).is_some_and(|c| c.is_alphabetic() || *c == '_') => end = ident(end + 1),
            Some('(') | Some('[') => match group(end) {
                Some(e) => end = e,
                None => break,
            },
            _ => break,
        }
    }
    (end.max(start + 1) + 1) as u32
}

/// Whether `col` starts an expression (a dereference, a group, a name),
/// not an assignment's operator.
fn expression_at(line: &str, col: u32) -> bool {
    line.chars().nth(col.max(1) as usize - 1).is_some_and(|c| c == '*' || c == '(' || c == '_' || c.is_alphabetic())
}

/// End column (exclusive, 1-based) of the expression starting at `col` on
/// `line`: up to a `{` opening a block, through a `;`, or to the end of the
/// code before a `//` comment.
pub fn span_end(line: &str, col: u32) -> u32 {
    let chars: Vec<char> = line.chars().collect();
    let start = (col.max(1) - 1) as usize;
    if start >= chars.len() {
        return col + 1;
    }
    let mut depth = 0i32;
    let mut end = chars.len();
    let mut i = start;
    while i < chars.len() {
        let c = chars[i];
        if c == '/' && chars.get(i + 1) == Some(&'/') {
            end = i;
            break;
        }
        match c {
            '(' | '[' => depth += 1,
            ')' | ']' => {
                depth -= 1;
                if depth < 0 {
                    end = i;
                    break;
                }
            }
            '{' if depth == 0 => {
                end = i;
                break;
            }
            ';' if depth == 0 => {
                end = i + 1;
                break;
            }
            _ => {}
        }
        i += 1;
    }
    while end > start && chars[end - 1].is_whitespace() {
        end -= 1;
    }
    (end.max(start + 1) + 1) as u32
}

/// Where the launch shape can be set, for the note on an assumed one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShapeHint {
    /// A Cargo workspace: `[package.metadata.gpucheck]` or `--block`.
    Cargo,
    /// PTX files: `--block` only.
    Cli,
}

/// A note as text: positions relative to the workspace, shape sources as
/// the flag or Cargo table that set them.
pub fn render_note(n: &Note, paths: &PathStyle, hint: ShapeHint) -> String {
    let pos = |p: &gpucheck_analysis::SrcPos| format!("{}:{}:{}", paths.display(&p.file), p.line, p.col);
    match &n.text {
        Text::Plain(t) => t.to_string(),
        Text::At(x) => {
            let at = match &x.at {
                Place::Source(p) => pos(p),
                Place::PtxLine(l) => format!("PTX line {l}"),
            };
            format!("{}{at}{}", x.before, x.after)
        }
        Text::Shape(s) => {
            // a C++ kernel by its source name (`transpose` for `_Z9transposePfS_`)
            let kernel = gpucheck_analysis::names::bare(&s.kernel);
            shape_note(&kernel, s.block, &s.source, hint)
        }
        Text::InlinedInto(p) => format!("inlined into {}", pos(p)),
        Text::InlinedFrom(p) => format!("the instruction comes from {}, inlined here", pos(p)),
        Text::NearestLine => "no inline information in the PTX: this is the nearest line of the package before the instruction".into(),
    }
}

/// How a Cargo project gives a block shape.
const CARGO_SHAPE_HINT: &str = "set `block = [x, y, z]` under `[package.metadata.gpucheck]` or pass `--block`";

/// The note naming a kernel's block shape and where it came from.
fn shape_note(kernel: &str, [x, y, z]: [u32; 3], source: &ShapeSource, hint: ShapeHint) -> String {
    match source {
        ShapeSource::Assumed => {
            let how = match hint {
                ShapeHint::Cargo => CARGO_SHAPE_HINT.to_string(),
                ShapeHint::Cli => format!("pass `--block {kernel}=X,Y,Z` (or `--block X,Y,Z` for every kernel)"),
            };
            format!("no block shape given for `{kernel}`: assumed {x}×{y}×{z} (blockDim.x a multiple of 32); {how}")
        }
        ShapeSource::Cli => format!("block shape {x}×{y}×{z} from --block"),
        ShapeSource::Kernel(name) => format!("block shape {x}×{y}×{z} from [package.metadata.gpucheck.kernels.{name}]"),
        ShapeSource::Reqntid => format!("block shape {x}×{y}×{z} from .reqntid in the PTX"),
        ShapeSource::Package => format!("block shape {x}×{y}×{z} from [package.metadata.gpucheck]"),
        ShapeSource::Launch { file, line } => {
            format!("block shape {x}×{y}×{z} from the `LaunchConfig` of `{kernel}`'s launch at {file}:{line}")
        }
        ShapeSource::Maxntid => {
            let how = match hint {
                ShapeHint::Cargo => CARGO_SHAPE_HINT.to_string(),
                ShapeHint::Cli => format!("pass `--block {kernel}=X,Y,Z`"),
            };
            format!(
                    "block shape {x}×{y}×{z} from .maxntid in the PTX (`__launch_bounds__`: the largest block `{kernel}` allows); for a smaller launch, {how}"
                )
        }
    }
}

/// Convert (dropping allowed lints), fold duplicates and sort.
///
/// `attrs`: the `#[allow(gpucheck::…)]` and other lint attributes of the
/// unit's Rust sources; the innermost covering a finding sets its level.
pub fn prepare(
    findings: Vec<Finding>,
    ptx_file: &str,
    paths: &PathStyle,
    levels: &Levels,
    attrs: &Scopes,
    hint: ShapeHint,
) -> Vec<Diagnostic> {
    // the worst of the compiler's copies of one place comes first, and headlines (their
    // order sorted, not the findings: thousands of large records would move)
    let mut order: Vec<(std::cmp::Reverse<Option<i64>>, usize)> =
        findings.iter().enumerate().map(|(i, f)| (std::cmp::Reverse(f.rank.map(|r| r.value)), i)).collect();
    order.sort_unstable();
    let mut findings: Vec<Option<Finding>> = findings.into_iter().map(Some).collect();
    // each file the findings name, once (a module's findings may be thousands, on a few lines)
    let mut files: HashMap<String, Named> = HashMap::default();
    let mut out: Vec<Diagnostic> = Vec::new();
    // (by lint, file and line)
    let mut index: HashMap<(&'static str, Option<usize>, u32), Vec<usize>> = HashMap::default();
    // a finding's level and its note (outside an attribute's scope) follow from its lint, whether a
    // replay did not reproduce it and whether it needs values the launch may not have: said once
    // for each (most findings are the compiler's copies of a few)
    let mut by_lint: HashMap<(&'static str, bool, bool), (Level, std::rc::Rc<str>)> = HashMap::default();
    for f in order.into_iter().filter_map(|(_, i)| findings[i].take()) {
        let scoped = if attrs.is_empty() {
            None
        } else {
            let (file, line) = f.span.as_ref().map(|s| (Some(paths.absolute(&s.file)), s.line)).unwrap_or((None, 0));
            attrs.level_of(&f, file.as_deref(), line, levels.level(f.lint), &|p: &Path| paths.display(&p.to_string_lossy()))
        };
        let (level, level_note) = match scoped {
            Some((None, _)) => continue,
            Some((Some(level), note)) => {
                let (level, note) = levels.promoted(level, note);
                (level, note.into())
            }
            None => by_lint
                .entry((f.lint.name, matches!(f.replay, gpucheck_analysis::lints::Replay::NotReproduced(_)), f.conditional()))
                .or_insert_with(|| {
                    let (level, note) = levels.of_finding(&f);
                    (level, note.into())
                })
                .clone(),
        };
        if level == Level::Allow {
            continue;
        }
        // (the file looked up once: its text and names are taken only for a diagnostic of its own)
        let at = f.span.as_ref().map(|s| (s, named(&mut files, paths, &s.file)));
        let (line, col, col_end) = match at {
            Some((s, n)) => {
                let end = n
                    .line(s.line)
                    .map(|t| {
                        if f.lint.name == UNUSED_GPUCHECK_ALLOW.name {
                            comment_end(t, s.col)
                        } else if f.access {
                            access_end(t, s.col)
                        } else {
                            span_end(t, s.col)
                        }
                    })
                    .unwrap_or(s.col + 1);
                (s.line, s.col, end)
            }
            None => (f.ptx_line, f.ptx_col, f.ptx_col + 1),
        };
        // one diagnostic per lint and place: the copies the compiler made (unrolled, inlined) may differ in
        // their numbers (a misaligned copy, another witness), the bug is the same; a copy whose debug
        // column points inside the expression of another (`(i + k)` in `a.add((i + k) % n)`) is one too
        let key = (f.lint.name, at.map(|(_, n)| n.id), line);
        let text = at.and_then(|(_, n)| n.line(line));
        let same = index.get(&key).and_then(|at| {
            at.iter().copied().find(|&i| {
                let d: &Diagnostic = &out[i];
                // inside an access expression (not a store's statement), for the same reason; races on
                // one line are folded below, each access named
                let inside =
                    |outer: u32, end: u32, inner: u32| (outer + 1..end).contains(&inner) && text.is_some_and(|t| expression_at(t, outer));
                let copy =
                    d.finding.label == f.label && !f.lint.one_per_line && (inside(d.col, d.col_end, col) || inside(col, col_end, d.col));
                d.col == col || copy
            })
        });
        if let Some(i) = same {
            out[i].duplicates += 1;
            out[i].ranks = widen(out[i].ranks, f.rank.map(|r| (r.value, r.value)));
            // a copy found with other samples: the diagnostic rests on them too
            assume_also(&mut out[i].finding, &f.assumes);
            continue;
        }
        let (file, abs_file) = at.map_or((None, None), |(_, n)| (Some(n.display.clone()), Some(n.abs.clone())));
        let secondary = f
            .secondary
            .iter()
            .map(|(p, label)| {
                let n = named(&mut files, paths, &p.file);
                // the other access of a race is an access too
                let end = n.line(p.line).map(|t| if f.access { access_end(t, p.col) } else { span_end(t, p.col) }).unwrap_or(p.col + 1);
                (n.display.clone(), n.abs.clone(), p.line, p.col, end, label.clone())
            })
            .collect();
        index.entry(key).or_default().push(out.len());
        let mut notes: Vec<(NoteKind, String)> = f.notes.iter().map(|n| (n.kind.clone(), render_note(n, paths, hint))).collect();
        if f.lint.group == gpucheck_analysis::lints::Group::Correctness && f.conditional() {
            notes.push((NoteKind::Note, condition_note(&f.assumes)));
            let names: Vec<String> = f
                .assumes
                .iter()
                .filter(|a| !a.alignment && a.kind == gpucheck_analysis::facts::Assumed::Parameter)
                .map(|a| a.name.clone())
                .collect();
            if let Some(first) = names.first() {
                let how = match hint {
                    ShapeHint::Cargo => format!(
                        "`assume = {{ {first} = … }}` under `[package.metadata.gpucheck.kernels.{}]` (or `--assume {first}=VALUE`)",
                        f.kernel
                    ),
                    ShapeHint::Cli => format!("`--assume {first}=VALUE`"),
                };
                notes.push((NoteKind::Help, format!("declare the value the kernel is launched with to decide it: {how}")));
            }
        }
        let ranks = f.rank.map(|r| (r.value, r.value));
        out.push(Diagnostic {
            level_note: level_note.to_string(),
            finding: f,
            level,
            file,
            abs_file,
            line,
            col,
            col_end,
            ptx_file: ptx_file.to_string(),
            duplicates: 0,
            ranks,
            notes,
            secondary,
        });
    }
    let mut out = fold_lines(out);
    for d in &mut out {
        if d.duplicates > 0 {
            let n = d.duplicates;
            let range = match (d.finding.rank, d.ranks) {
                (Some(r), Some((lo, hi))) if lo < hi => format!("; this is the worst of them, which range from {}", r.range(lo, hi)),
                _ => String::new(),
            };
            d.notes.push((
                NoteKind::Note,
                format!("also at {n} other place{} in the PTX (code the compiler duplicated{range})", if n == 1 { "" } else { "s" }),
            ));
        }
    }
    sort(&mut out);
    out
}

/// A source file findings name: its absolute path, its name as shown,
/// and its lines (`None`: not readable).
struct Named {
    /// Its number among the names the report shows (the order each was
    /// first asked for): two spellings of one file that show alike are one.
    id: usize,
    abs: PathBuf,
    display: String,
    lines: Option<Vec<String>>,
}

impl Named {
    /// Line `line` (from 1), if the file was read and has it.
    fn line(&self, line: u32) -> Option<&str> {
        self.lines.as_ref()?.get(line.checked_sub(1)? as usize).map(String::as_str)
    }
}

/// The file a finding names as `file`, read the first time it is asked for.
fn named<'c>(files: &'c mut HashMap<String, Named>, paths: &PathStyle, file: &str) -> &'c Named {
    if !files.contains_key(file) {
        let abs = paths.absolute(file);
        let lines = std::fs::read_to_string(&abs).ok().map(|s| s.lines().map(str::to_string).collect());
        let display = paths.display(file);
        let id = files.values().find(|n| n.display == display).map_or(files.len(), |n| n.id);
        files.insert(file.to_string(), Named { id, display, abs, lines });
    }
    &files[file]
}

/// One diagnostic per source line for the lints that ask for it
/// (`Lint::one_per_line`), and per pair of lines
/// (the two sides of a race, whichever is primary): the later findings
/// join the first as labels and a note naming their column and message.
fn fold_lines(diags: Vec<Diagnostic>) -> Vec<Diagnostic> {
    let mut out: Vec<Diagnostic> = Vec::with_capacity(diags.len());
    // (lint, file, line, the other side's line or 0) → the diagnostic that holds it
    let mut first: HashMap<(&'static str, String, u32, u32), usize> = HashMap::default();
    for d in diags {
        let (Some(file), Some(abs)) = (d.file.clone(), d.abs_file.clone()) else {
            out.push(d);
            continue;
        };
        if !d.finding.lint.one_per_line {
            out.push(d);
            continue;
        }
        let name = d.finding.lint.name;
        let other = d.secondary.first().filter(|s| s.1 == abs).map(|s| s.2);
        let pair = other.map(|o| (name, file.clone(), d.line.min(o), d.line.max(o)));
        let line = (name, file.clone(), d.line, 0);
        let Some(i) = first.get(&line).or_else(|| pair.as_ref().and_then(|p| first.get(p))).copied() else {
            first.insert(line, out.len());
            if let Some(p) = pair {
                first.insert(p, out.len());
            }
            out.push(d);
            continue;
        };
        first.entry(line).or_insert(i);
        if let Some(p) = pair {
            first.entry(p).or_insert(i);
        }
        let into = &mut out[i];
        // one label per place (the first said which threads)
        let labelled =
            |into: &Diagnostic, l: u32, c: u32| (into.line, into.col) == (l, c) || into.secondary.iter().any(|s| (s.2, s.3) == (l, c));
        if !labelled(into, d.line, d.col) {
            into.secondary.push((file, abs, d.line, d.col, d.col_end, d.finding.label.to_string()));
        }
        for s in d.secondary {
            if !labelled(into, s.2, s.3) {
                into.secondary.push(s);
            }
        }
        into.notes.push((NoteKind::Note, format!("and at column {}: {}", d.col, d.finding.message)));
        into.duplicates += d.duplicates;
        into.ranks = widen(into.ranks, d.ranks);
        assume_also(&mut into.finding, &d.finding.assumes);
    }
    out
}

/// Two ranges of ranks as one.
fn widen(a: Option<(i64, i64)>, b: Option<(i64, i64)>) -> Option<(i64, i64)> {
    match (a, b) {
        (Some((l1, h1)), Some((l2, h2))) => Some((l1.min(l2), h1.max(h2))),
        (x, None) | (None, x) => x,
    }
}

/// What a correctness finding needs of values the kernel does not fix: the
/// values the check gave them, and what the kernel tests of them there.
pub fn condition_note(assumes: &[gpucheck_analysis::facts::Assumption]) -> String {
    use gpucheck_analysis::facts::Assumed;
    let mut parts = Vec::new();
    let mut known: Vec<&str> = Vec::new();
    for a in assumes.iter().filter(|a| !a.alignment) {
        let line = a.ptx_line.map(|l| format!(", PTX line {l}")).unwrap_or_default();
        parts.push(match a.kind {
            Assumed::Parameter => format!("`{}` = {} (a parameter)", a.name, a.sample),
            Assumed::Loaded => format!("`{}` = {} (a value loaded from memory{line})", a.name, a.sample),
            Assumed::Counter => format!("`{}` = {} (a loop counter{line})", a.name, a.sample),
            Assumed::Grid => format!("`{}` = {} (no grid given)", a.name, a.sample),
            Assumed::Value => format!("`{}` = {} (a value not known statically{line})", a.name, a.sample),
            Assumed::Stride => format!("a lane stride in `{}` taken as {} bytes", a.name, a.sample),
            Assumed::SameKey => format!("two threads loading the same key{line}"),
            Assumed::Condition => format!("`{}` as the condition above says", a.name),
        });
        for k in &a.known {
            if !known.contains(&k.as_str()) {
                known.push(k);
            }
        }
    }
    let tested = if known.is_empty() { String::new() } else { format!("; the kernel tests `{}` on the way", known.join("`, `")) };
    format!("found with {}, values the kernel does not fix{tested}: with others it may not happen", parts.join(", "))
}

/// Add the assumptions `more` a folded finding rests on to `f`'s, each once.
fn assume_also(f: &mut Finding, more: &[gpucheck_analysis::facts::Assumption]) {
    for a in more {
        if !f.assumes.contains(a) {
            f.assumes.push(a.clone());
        }
    }
}

/// The first diagnostic that can be suppressed in its source (not
/// forbidden, in a file of the package) gets a help line saying how, as
/// rustc says once where a lint's level comes from.
pub fn say_how_to_allow(diags: &mut [Diagnostic]) {
    let Some(d) = diags.iter_mut().find(|d| {
        d.level != Level::Forbid && d.abs_file.is_some() && d.file.is_some() && d.finding.lint.name != UNUSED_GPUCHECK_ALLOW.name
    }) else {
        return;
    };
    let name = d.finding.lint.name;
    let rust = d.abs_file.as_ref().is_some_and(|f| f.extension().is_some_and(|e| e == "rs"));
    let how = if rust {
        format!(
            "to allow it here, put `#[allow(gpucheck::{name})]` on the statement or the kernel's `fn` (the crate root needs `#![feature(register_tool)]` and `#![register_tool(gpucheck)]`), or a `// gpucheck: allow({name})` comment on the line"
        )
    } else {
        format!("to allow it here, put a `// gpucheck: allow({name})` comment on the line or the line above (on the kernel's line: the whole kernel)")
    };
    d.notes.push((NoteKind::Help, how));
}

/// Stable order: by file, line, column, lint.
pub fn sort(diags: &mut [Diagnostic]) {
    diags.sort_by(|a, b| (&a.file, a.line, a.col, a.finding.lint.name).cmp(&(&b.file, b.line, b.col, b.finding.lint.name)));
}

pub fn metric_json(m: &Metric) -> serde_json::Value {
    match m {
        Metric::Int(i) => serde_json::json!(i),
        Metric::Float(f) => serde_json::json!((f * 1e6).round() / 1e6),
        Metric::Text(t) => serde_json::json!(t),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_cover_the_expression() {
        assert_eq!(span_end("        _syncthreads();", 9), 24);
        assert_eq!(span_end("    if t % 2 == 0 { //~ WARN x", 8), 18);
        assert_eq!(span_end("    while i < l {", 11), 16);
        assert_eq!(span_end("    foo(a, b) // c", 5), 14);
        assert_eq!(span_end("", 3), 4);
        // an access is its one operand
        let l = "            acc += *a.add(row * n + k) * *b.add(k * n + col);";
        assert_eq!(access_end(l, 20), 39, "`*a.add(row * n + k)`");
        assert_eq!(access_end(l, 42), 61, "`*b.add(k * n + col)`");
        assert_eq!(access_end("    let v = *data.add(i) & 255;", 13), 25);
        assert_eq!(access_end("    s[t] = (*p).x + 1;", 5), 9);
        assert_eq!(access_end("    s[t] = (*p).x + 1;", 12), 18);
        assert_eq!(access_end("    *out = 1;", 5), 9);
    }

    #[test]
    fn paths_shorten() {
        let p = PathStyle { root: PathBuf::from("/w/ek") };
        assert_eq!(p.display("/w/ek/src/lib.rs"), "src/lib.rs");
        assert_eq!(p.display("/r/.rustup/toolchains/n/lib/rustlib/src/rust/library/core/src/x.rs"), "$RUST/library/core/src/x.rs");
    }
}

#[cfg(test)]
mod quote_tests {
    use super::shell_quote;
    use std::path::Path;

    #[test]
    fn paths_in_commands_are_quoted_when_a_shell_would_split_them() {
        assert_eq!(shell_quote(Path::new("kernels/src")), "kernels/src");
        assert_eq!(shell_quote(Path::new("my kernels")), "'my kernels'");
        assert_eq!(shell_quote(Path::new("it's")), "'it'\\''s'");
    }
}
