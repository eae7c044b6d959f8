//! `#[allow(gpucheck::NAME)]`, `#[expect]`, `#[warn]`, `#[deny]` and
//! `#[forbid]` on items, statements and expressions of the package's Rust
//! sources, as clippy's `#[allow(clippy::…)]` (the crate registers the tool:
//! `#![feature(register_tool)]` and `#![register_tool(gpucheck)]`).
//!
//! An attribute sets the level of the named lints (or groups) for the
//! findings inside the node it is on; the innermost one that names a lint
//! wins, and an inner attribute cannot lower a lint an outer one (or the
//! command line) forbids. On a kernel's `fn` it covers the whole kernel,
//! code inlined into it from helpers included, as a comment on that line
//! does. An inner attribute (`#![allow(…)]`) covers its file, and the whole
//! crate in the crate root; one on an out-of-line `mod NAME;` covers the
//! module's file. An `#[expect]` that suppresses nothing, and an
//! unknown `gpucheck::` name, are `unused_gpucheck_allow` findings.
//!
//! Owns: reading the attributes (syn, with proc-macro2's line numbers) and
//! the level they give each finding. Does not own: the levels from tables
//! and flags (`levels`) or comments (`suppress`).

use gpucheck_analysis::lints::registry::{closest, expand};
use gpucheck_analysis::lints::UNUSED_GPUCHECK_ALLOW;
use gpucheck_analysis::{Finding, Level, SrcPos};
use std::cell::RefCell;
use std::path::{Path, PathBuf};
use syn::spanned::Spanned;
use syn::visit::Visit;

/// What an attribute does to the lints it names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Allow,
    Expect,
    Warn,
    Deny,
    Forbid,
}

impl Kind {
    fn parse(name: &str) -> Option<Kind> {
        if name == "expect" {
            return Some(Kind::Expect);
        }
        Some(match Level::parse(name)? {
            Level::Allow => Kind::Allow,
            Level::Warn => Kind::Warn,
            Level::Deny => Kind::Deny,
            Level::Forbid => Kind::Forbid,
        })
    }

    fn as_str(self) -> &'static str {
        match self {
            Kind::Allow => "allow",
            Kind::Expect => "expect",
            Kind::Warn => "warn",
            Kind::Deny => "deny",
            Kind::Forbid => "forbid",
        }
    }

    /// The level a finding takes (`None`: suppressed).
    fn level(self) -> Option<Level> {
        match self {
            Kind::Allow | Kind::Expect => None,
            Kind::Warn => Some(Level::Warn),
            Kind::Deny => Some(Level::Deny),
            Kind::Forbid => Some(Level::Forbid),
        }
    }
}

/// Which findings an attribute covers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Scope {
    /// Lines `from..=to` of the attribute's file (its node's extent).
    Lines { from: u32, to: u32 },
    /// A kernel's `fn`: its lines, and every finding of the kernel so
    /// named wherever its code came from.
    Kernel { name: String, from: u32, to: u32 },
    /// `#![…]` in the crate root: every file of the crate.
    Crate,
    /// On an out-of-line `mod NAME;`: every line of the module's file.
    Module { file: PathBuf },
}

/// A 1-based line and column.
type LineCol = (u32, u32);

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LintAttr {
    pub file: PathBuf,
    /// Position of the `#`.
    pub line: u32,
    pub col: u32,
    pub kind: Kind,
    /// The names after `gpucheck::`, in order, each with the line and
    /// column of its path.
    pub names: Vec<String>,
    pub name_at: Vec<LineCol>,
    pub scope: Scope,
}

/// `gpucheck::NAME` paths of a lint attribute (`#[allow(gpucheck::a,
/// gpucheck::b)]`); other tools' and rustc's lints are not ours.
fn lint_names(attr: &syn::Attribute) -> Option<(Kind, Vec<String>, Vec<LineCol>)> {
    let kind = Kind::parse(&attr.path().get_ident()?.to_string())?;
    let list = attr.meta.require_list().ok()?;
    let paths = list.parse_args_with(syn::punctuated::Punctuated::<syn::Path, syn::Token![,]>::parse_terminated).ok()?;
    let ours: Vec<&syn::Path> = paths.iter().filter(|p| p.segments.len() == 2 && p.segments[0].ident == "gpucheck").collect();
    let names = ours.iter().map(|p| p.segments[1].ident.to_string()).collect();
    let at = ours.iter().map(|p| p.segments[0].ident.span().start()).map(|s| (s.line as u32, s.column as u32 + 1)).collect();
    (!ours.is_empty()).then_some((kind, names, at))
}

/// The attributes of an expression (statement attributes are the
/// expression's in syn).
fn expr_attrs(e: &syn::Expr) -> &[syn::Attribute] {
    use syn::Expr::*;
    match e {
        Array(x) => &x.attrs,
        Assign(x) => &x.attrs,
        Async(x) => &x.attrs,
        Await(x) => &x.attrs,
        Binary(x) => &x.attrs,
        Block(x) => &x.attrs,
        Break(x) => &x.attrs,
        Call(x) => &x.attrs,
        Cast(x) => &x.attrs,
        Closure(x) => &x.attrs,
        Const(x) => &x.attrs,
        Continue(x) => &x.attrs,
        Field(x) => &x.attrs,
        ForLoop(x) => &x.attrs,
        Group(x) => &x.attrs,
        If(x) => &x.attrs,
        Index(x) => &x.attrs,
        Infer(x) => &x.attrs,
        Let(x) => &x.attrs,
        Lit(x) => &x.attrs,
        Loop(x) => &x.attrs,
        Macro(x) => &x.attrs,
        Match(x) => &x.attrs,
        MethodCall(x) => &x.attrs,
        Paren(x) => &x.attrs,
        Path(x) => &x.attrs,
        Range(x) => &x.attrs,
        RawAddr(x) => &x.attrs,
        Reference(x) => &x.attrs,
        Repeat(x) => &x.attrs,
        Return(x) => &x.attrs,
        Struct(x) => &x.attrs,
        Try(x) => &x.attrs,
        TryBlock(x) => &x.attrs,
        Tuple(x) => &x.attrs,
        Unary(x) => &x.attrs,
        Unsafe(x) => &x.attrs,
        While(x) => &x.attrs,
        Yield(x) => &x.attrs,
        _ => &[],
    }
}

fn item_attrs(i: &syn::Item) -> &[syn::Attribute] {
    use syn::Item::*;
    match i {
        Const(x) => &x.attrs,
        Enum(x) => &x.attrs,
        ExternCrate(x) => &x.attrs,
        Fn(x) => &x.attrs,
        ForeignMod(x) => &x.attrs,
        Impl(x) => &x.attrs,
        Macro(x) => &x.attrs,
        Mod(x) => &x.attrs,
        Static(x) => &x.attrs,
        Struct(x) => &x.attrs,
        Trait(x) => &x.attrs,
        TraitAlias(x) => &x.attrs,
        Type(x) => &x.attrs,
        Union(x) => &x.attrs,
        Use(x) => &x.attrs,
        _ => &[],
    }
}

struct Collect<'a> {
    file: &'a Path,
    crate_root: bool,
    out: Vec<LintAttr>,
}

impl Collect<'_> {
    fn add(&mut self, attrs: &[syn::Attribute], node: proc_macro2::Span, kernel: Option<String>) {
        let (from, to) = (node.start().line as u32, node.end().line as u32);
        for a in attrs {
            let Some((kind, names, name_at)) = lint_names(a) else { continue };
            let at = a.span().start();
            let scope = match &kernel {
                Some(name) => Scope::Kernel { name: name.clone(), from, to },
                None => Scope::Lines { from, to },
            };
            self.out.push(LintAttr {
                file: self.file.to_path_buf(),
                line: at.line as u32,
                col: at.column as u32 + 1,
                kind,
                names,
                name_at,
                scope,
            });
        }
    }
}

impl<'ast> Visit<'ast> for Collect<'_> {
    fn visit_file(&mut self, f: &'ast syn::File) {
        // inner attributes of the file: the whole file (the crate, in its root)
        let scope = if self.crate_root { Scope::Crate } else { Scope::Lines { from: 1, to: u32::MAX } };
        for a in &f.attrs {
            if let Some((kind, names, name_at)) = lint_names(a) {
                let at = a.span().start();
                let (file, line, col) = (self.file.to_path_buf(), at.line as u32, at.column as u32 + 1);
                self.out.push(LintAttr { file, line, col, kind, names, name_at, scope: scope.clone() });
            }
        }
        syn::visit::visit_file(self, f);
    }

    fn visit_item(&mut self, i: &'ast syn::Item) {
        let kernel = match i {
            syn::Item::Fn(f) => Some(f.sig.ident.to_string()),
            _ => None,
        };
        let before = self.out.len();
        self.add(item_attrs(i), i.span(), kernel);
        // `#[allow(…)] mod foo;`: the whole of foo's file
        if let syn::Item::Mod(m @ syn::ItemMod { content: None, .. }) = i {
            let file = module_file(self.file, &m.ident.to_string());
            for a in &mut self.out[before..] {
                a.scope = Scope::Module { file: file.clone() };
            }
        }
        syn::visit::visit_item(self, i);
    }

    fn visit_impl_item_fn(&mut self, f: &'ast syn::ImplItemFn) {
        self.add(&f.attrs, f.span(), None);
        syn::visit::visit_impl_item_fn(self, f);
    }

    fn visit_trait_item_fn(&mut self, f: &'ast syn::TraitItemFn) {
        self.add(&f.attrs, f.span(), None);
        syn::visit::visit_trait_item_fn(self, f);
    }

    fn visit_local(&mut self, l: &'ast syn::Local) {
        self.add(&l.attrs, l.span(), None);
        syn::visit::visit_local(self, l);
    }

    fn visit_stmt_macro(&mut self, m: &'ast syn::StmtMacro) {
        self.add(&m.attrs, m.span(), None);
        syn::visit::visit_stmt_macro(self, m);
    }

    fn visit_expr(&mut self, e: &'ast syn::Expr) {
        self.add(expr_attrs(e), e.span(), None);
        syn::visit::visit_expr(self, e);
    }

    fn visit_arm(&mut self, a: &'ast syn::Arm) {
        self.add(&a.attrs, a.span(), None);
        syn::visit::visit_arm(self, a);
    }
}

/// The file of out-of-line module `name` declared in `file`: beside a
/// crate root or `mod.rs`, else in the folder named after the file;
/// `NAME.rs`, else `NAME/mod.rs` (no `#[path]`).
fn module_file(file: &Path, name: &str) -> PathBuf {
    let dir = file.parent().unwrap_or(Path::new(""));
    let stem = file.file_stem().map(|s| s.to_string_lossy().to_string()).unwrap_or_default();
    let dir = if ["lib", "main", "mod"].contains(&stem.as_str()) { dir.to_path_buf() } else { dir.join(stem) };
    let flat = dir.join(format!("{name}.rs"));
    let nested = dir.join(name).join("mod.rs");
    if !flat.exists() && nested.exists() {
        nested
    } else {
        flat
    }
}

/// The lint attributes of one Rust source text (`crate_root`: the crate's
/// `lib.rs`, whose inner attributes cover the crate). Text syn cannot parse
/// gives none: rustc rejected it before the check.
pub fn parse(file: &Path, text: &str, crate_root: bool) -> Vec<LintAttr> {
    if !text.contains("gpucheck") {
        return Vec::new();
    }
    let Ok(ast) = syn::parse_file(text) else { return Vec::new() };
    let mut c = Collect { file, crate_root, out: Vec::new() };
    c.visit_file(&ast);
    c.out
}

/// Every lint attribute in `files` (`root`: the crate root among them).
pub fn scan(files: &[PathBuf], root: Option<&Path>) -> Vec<LintAttr> {
    let mut out = Vec::new();
    for f in files {
        if let Ok(text) = std::fs::read_to_string(f) {
            out.extend(parse(f, &text, Some(f.as_path()) == root));
        }
    }
    out
}

/// The attributes of a package and which of their names were used.
#[derive(Default)]
pub struct Scopes {
    attrs: Vec<LintAttr>,
    used: RefCell<Vec<Vec<bool>>>,
}

/// How far a scope reaches, for "innermost wins": lines of the finding's own
/// file (fewest first), then a kernel's `fn` elsewhere, then the crate.
fn reach(s: &Scope, same_file: bool) -> (u8, u32) {
    match s {
        Scope::Lines { from, to } | Scope::Kernel { from, to, .. } if same_file => (0, to - from),
        Scope::Kernel { from, to, .. } => (1, to - from),
        Scope::Lines { .. } => (1, u32::MAX),
        Scope::Module { .. } => (1, u32::MAX - 1),
        Scope::Crate => (2, 0),
    }
}

impl Scopes {
    pub fn new(attrs: Vec<LintAttr>) -> Scopes {
        let used = RefCell::new(attrs.iter().map(|a| vec![false; a.names.len()]).collect());
        Scopes { attrs, used }
    }

    /// Whether some attribute names `lint`, or a group that holds it.
    pub fn names(&self, lint: &str) -> bool {
        self.attrs.iter().flat_map(|a| &a.names).any(|n| expand(n).is_some_and(|ls| ls.iter().any(|l| l.name == lint)))
    }

    /// The attributes covering a finding of `kernel` at `file:line` that name
    /// `lint`, innermost first: (attribute, name index).
    fn covering(&self, file: Option<&Path>, line: u32, kernel: &str, lint: &str) -> Vec<(usize, usize)> {
        let fn_name = gpucheck_analysis::names::bare(kernel);
        let fn_name = fn_name.rsplit("::").next().unwrap_or(&fn_name);
        let mut hits: Vec<((u8, u32), usize, usize)> = Vec::new();
        for (i, a) in self.attrs.iter().enumerate() {
            let same_file = file == Some(a.file.as_path());
            let inside = match &a.scope {
                Scope::Lines { from, to } => same_file && (*from..=*to).contains(&line),
                Scope::Kernel { name, from, to } => (same_file && (*from..=*to).contains(&line)) || name == fn_name,
                Scope::Module { file: m } => file == Some(m.as_path()),
                Scope::Crate => true,
            };
            if !inside {
                continue;
            }
            let in_lines = match &a.scope {
                Scope::Lines { from, to } | Scope::Kernel { from, to, .. } => same_file && (*from..=*to).contains(&line),
                Scope::Module { .. } | Scope::Crate => false,
            };
            // the last name of the attribute that covers the lint (a lint after its group)
            if let Some(n) = a.names.iter().rposition(|n| expand(n).is_some_and(|ls| ls.iter().any(|l| l.name == lint))) {
                hits.push((reach(&a.scope, in_lines), i, n));
            }
        }
        // innermost first; of two on one node, the later one
        hits.sort_by_key(|&(r, i, _)| (r, std::cmp::Reverse(i)));
        hits.into_iter().map(|(_, i, n)| (i, n)).collect()
    }

    /// The level an attribute gives finding `f` at `file:line`, with the
    /// note saying which (`Some((None, _))`: suppressed); `None` when no
    /// attribute names its lint. `outer`: the level tables and flags give
    /// (a forbidden lint stays so).
    pub fn level_of(
        &self,
        f: &Finding,
        file: Option<&Path>,
        line: u32,
        outer: Level,
        display: &dyn Fn(&Path) -> String,
    ) -> Option<(Option<Level>, String)> {
        let hits = self.covering(file, line, &f.kernel, f.lint.name);
        let &(i, n) = hits.first()?;
        self.used.borrow_mut()[i][n] = true;
        let a = &self.attrs[i];
        let at = |a: &LintAttr| format!("`#[{}(gpucheck::{})]` at {}:{}:{}", a.kind.as_str(), a.names[0], display(&a.file), a.line, a.col);
        let wanted = a.kind.level();
        if wanted != Some(Level::Forbid) {
            let forbidding = hits[1..].iter().map(|&(j, _)| &self.attrs[j]).find(|b| b.kind == Kind::Forbid);
            if let Some(b) = forbidding {
                return Some((Some(Level::Forbid), format!("{} has no effect: the lint is forbidden by {}", at(a), at(b))));
            }
            if outer == Level::Forbid {
                return Some((
                    Some(Level::Forbid),
                    format!("{} has no effect: the lint is forbidden on the command line or in Cargo.toml", at(a)),
                ));
            }
        }
        let name = &a.names[n];
        let note = if name == f.lint.name {
            format!("`#[{}(gpucheck::{name})]` at {}:{}:{}", a.kind.as_str(), display(&a.file), a.line, a.col)
        } else {
            format!(
                "`#[{}(gpucheck::{})]` implied by `#[{}(gpucheck::{name})]` at {}:{}:{}",
                a.kind.as_str(),
                f.lint.name,
                a.kind.as_str(),
                display(&a.file),
                a.line,
                a.col
            )
        };
        Some((wanted, note))
    }

    /// Findings for `#[expect]` names nothing fulfilled and for unknown
    /// `gpucheck::` names.
    pub fn unused(&self) -> Vec<Finding> {
        let used = self.used.borrow();
        let mut out = Vec::new();
        for (i, a) in self.attrs.iter().enumerate() {
            for (n, name) in a.names.iter().enumerate() {
                let known = expand(name).is_some();
                if known && (used[i][n] || a.kind != Kind::Expect) {
                    continue;
                }
                let mut f = Finding::new(&UNUSED_GPUCHECK_ALLOW);
                let (line, col) = a.name_at[n];
                f.span = Some(SrcPos { file: a.file.to_string_lossy().into(), line, col });
                if known {
                    f.message = format!("unfulfilled `#[expect(gpucheck::{name})]`: no `{name}` finding here").into();
                    f.label = "expects a finding that is not there".into();
                    f.note("an `#[expect]` covers the findings inside the item, statement or expression it is on (a kernel's `fn`: the whole kernel)");
                    f.help("remove the attribute, or use `#[allow]` where no finding is expected on every build");
                } else {
                    f.message = format!("unknown lint `gpucheck::{name}`").into();
                    f.label = "not a gpucheck lint".into();
                    match closest(name) {
                        Some(c) => f.help(format!("did you mean `gpucheck::{c}`?")),
                        None => f.help("`cargo gpucheck lints` lists the lints"),
                    }
                }
                out.push(f);
            }
        }
        out
    }

    pub fn is_empty(&self) -> bool {
        self.attrs.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SRC: &str = r#"#![register_tool(gpucheck)]
#![allow(gpucheck::perf)]

#[no_mangle]
#[deny(gpucheck::divergent_branch)]
pub unsafe extern "ptx-kernel" fn k(x: *mut f32) {
    let t = 0usize;
    #[allow(gpucheck::uncoalesced_global_access, clippy::all)]
    let v = *x.add(t * 32);
    #[expect(gpucheck::shared_bank_conflict)]
    {
        *x = v;
    }
    #[allow(dead_code, gpucheck::no_such_lint)]
    fn helper() {}
}
"#;

    #[test]
    fn attributes_and_their_extents() {
        let a = parse(Path::new("lib.rs"), SRC, true);
        let got: Vec<(u32, Kind, Vec<String>, Scope)> = a.iter().map(|a| (a.line, a.kind, a.names.clone(), a.scope.clone())).collect();
        assert_eq!(
            got,
            vec![
                (2, Kind::Allow, vec!["perf".into()], Scope::Crate),
                (5, Kind::Deny, vec!["divergent_branch".into()], Scope::Kernel { name: "k".into(), from: 4, to: 16 }),
                (8, Kind::Allow, vec!["uncoalesced_global_access".into()], Scope::Lines { from: 8, to: 9 }),
                (10, Kind::Expect, vec!["shared_bank_conflict".into()], Scope::Lines { from: 10, to: 13 }),
                (14, Kind::Allow, vec!["no_such_lint".into()], Scope::Kernel { name: "helper".into(), from: 14, to: 15 }),
            ]
        );
        // the lints some attribute names, itself or through its group
        let s = Scopes::new(a);
        assert!(s.names("divergent_branch") && s.names("shared_bank_conflict"));
        assert!(!s.names("shared_memory_opportunity") && !s.names("shared_memory_race"));
        let group = Scopes::new(parse(Path::new("lib.rs"), "#[warn(gpucheck::pedantic)]\nfn k() {}\n", true));
        assert!(group.names("shared_memory_opportunity") && !group.names("divergent_branch"));
        // not a crate root: the inner attributes cover the file
        assert_eq!(parse(Path::new("m.rs"), SRC, false)[0].scope, Scope::Lines { from: 1, to: u32::MAX });
        assert!(parse(Path::new("x.rs"), "fn f() { #[allow(unused)] let x = 1; }", true).is_empty());
    }

    #[test]
    fn an_attribute_on_an_out_of_line_module_covers_its_file() {
        use gpucheck_analysis::lints::DIVERGENT_BRANCH;
        let src = "#[allow(gpucheck::divergent_branch)]\nmod helpers;\nmod other;\n";
        let attrs = parse(Path::new("src/lib.rs"), src, true);
        assert_eq!(attrs.len(), 1);
        assert_eq!(attrs[0].scope, Scope::Module { file: PathBuf::from("src/helpers.rs") });
        // declared in a file that is not a root: the module lies in the folder named after it
        assert_eq!(module_file(Path::new("src/a.rs"), "b"), PathBuf::from("src/a/b.rs"));
        let s = Scopes::new(attrs);
        let mut f = Finding::new(&DIVERGENT_BRANCH);
        f.kernel = "k".into();
        let show = |p: &Path| p.display().to_string();
        assert_eq!(s.level_of(&f, Some(Path::new("src/helpers.rs")), 40, Level::Warn, &show).unwrap().0, None);
        assert!(s.level_of(&f, Some(Path::new("src/other.rs")), 40, Level::Warn, &show).is_none());
    }

    #[test]
    fn the_innermost_wins_and_forbid_sticks() {
        use gpucheck_analysis::lints::{DIVERGENT_BRANCH, SHARED_BANK_CONFLICT, UNCOALESCED_GLOBAL_ACCESS};
        let s = Scopes::new(parse(Path::new("lib.rs"), SRC, true));
        let show = |p: &Path| p.display().to_string();
        let at = |lint, line: u32, kernel: &str| {
            let mut f = Finding::new(lint);
            f.kernel = kernel.into();
            s.level_of(&f, Some(Path::new("lib.rs")), line, Level::Warn, &show)
        };
        // the statement's allow, inside the crate's allow of the group
        let (lv, note) = at(&UNCOALESCED_GLOBAL_ACCESS, 9, "k").unwrap();
        assert_eq!(lv, None);
        assert_eq!(note, "`#[allow(gpucheck::uncoalesced_global_access)]` at lib.rs:8:5");
        // elsewhere in the file: the crate's group
        let (lv, note) = at(&UNCOALESCED_GLOBAL_ACCESS, 12, "k").unwrap();
        assert_eq!(lv, None);
        assert!(note.contains("implied by `#[allow(gpucheck::perf)]` at lib.rs:2:1"), "{note}");
        // the kernel's deny covers code inlined from elsewhere
        let mut f = Finding::new(&DIVERGENT_BRANCH);
        f.kernel = "k".into();
        assert_eq!(s.level_of(&f, Some(Path::new("helpers.rs")), 3, Level::Warn, &show).unwrap().0, Some(Level::Deny));
        // forbidden on the command line: the allow has no effect
        let mut f = Finding::new(&UNCOALESCED_GLOBAL_ACCESS);
        f.kernel = "k".into();
        let (lv, note) = s.level_of(&f, Some(Path::new("lib.rs")), 9, Level::Forbid, &show).unwrap();
        assert_eq!(lv, Some(Level::Forbid));
        assert!(note.contains("has no effect"), "{note}");
        // the expect was never used, the unknown name is said
        let unused: Vec<String> = s.unused().iter().map(|f| f.message.to_string()).collect();
        assert_eq!(
            unused,
            vec![
                "unfulfilled `#[expect(gpucheck::shared_bank_conflict)]`: no `shared_bank_conflict` finding here".to_string(),
                "unknown lint `gpucheck::no_such_lint`".to_string()
            ]
        );
        let _ = at(&SHARED_BANK_CONFLICT, 12, "k");
        assert_eq!(s.unused().len(), 1);
    }
}
