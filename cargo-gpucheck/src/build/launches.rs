//! Launch shapes written in the host code: a literal cudarc
//! `LaunchConfig { block_dim: (x, y, z), .. }` (or
//! `LaunchConfig::for_num_elems(…)`, 1024 threads) in the same function as
//! the load of a kernel by name (`load_function("k")`, `get_func(…, "k")`).
//!
//! A kernel whose launches give one block shape gets it; one given two
//! different shapes gets none, and that is said. Read with `syn` from the
//! package's `.rs` files. Does not own: the order in which shapes are taken
//! (`analysis::driver::shape_for`, `confirm`).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use syn::visit::Visit;

/// The methods that load a kernel by name (cudarc's, old and new).
pub const LOADS: [&str; 4] = ["load_function", "get_func", "get_function", "load_func"];

/// The block of `LaunchConfig::for_num_elems`.
pub const FOR_NUM_ELEMS: [u32; 3] = [1024, 1, 1];

/// A kernel's block shape from a launch in the host code, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LaunchShape {
    pub block: [u32; 3],
    pub file: PathBuf,
    pub line: usize,
}

/// The launch shapes of the kernels the package's Rust code loads by name,
/// and what could not be used (a kernel given two shapes), to be said.
pub fn scan(root: &Path) -> (HashMap<String, LaunchShape>, Vec<String>) {
    let mut seen: Vec<(String, LaunchShape)> = Vec::new();
    for rs in super::nvrtc::rust_files(root) {
        let Ok(text) = std::fs::read_to_string(&rs) else { continue };
        if !text.contains("LaunchConfig") || !LOADS.iter().any(|l| text.contains(l)) {
            continue;
        }
        let Ok(file) = syn::parse_file(&text) else { continue };
        let mut v = Fns { rs: &rs, out: &mut seen };
        v.visit_file(&file);
    }
    let mut shapes: HashMap<String, LaunchShape> = HashMap::new();
    let mut said = Vec::new();
    let mut names: Vec<&String> = seen.iter().map(|(n, _)| n).collect();
    names.sort();
    names.dedup();
    for name in names {
        let mut of: Vec<&LaunchShape> = seen.iter().filter(|(n, _)| n == name).map(|(_, s)| s).collect();
        of.sort_by_key(|s| s.block);
        of.dedup_by_key(|s| s.block);
        match of[..] {
            [one] => {
                shapes.insert(name.clone(), one.clone());
            }
            _ => {
                let shown = |s: &LaunchShape| {
                    let [x, y, z] = s.block;
                    format!("{x}×{y}×{z} at {}:{}", s.file.strip_prefix(root).unwrap_or(&s.file).display(), s.line)
                };
                said.push(format!(
                    "the host code launches `{name}` with different block shapes ({}): none of them is taken as its shape; set `block` under `[package.metadata.gpucheck.kernels.{name}]`",
                    of.iter().map(|s| shown(s)).collect::<Vec<_>>().join(", ")
                ));
            }
        }
    }
    (shapes, said)
}

/// Each function body's kernel loads and launch configurations.
struct Fns<'a> {
    rs: &'a Path,
    out: &'a mut Vec<(String, LaunchShape)>,
}

impl<'ast> Visit<'ast> for Fns<'_> {
    fn visit_block(&mut self, b: &'ast syn::Block) {
        // the outermost block of a function: its loads and launches together
        let mut body = Body::default();
        body.visit_block(b);
        for name in &body.kernels {
            for (block, line) in &body.blocks {
                self.out.push((name.clone(), LaunchShape { block: *block, file: self.rs.to_path_buf(), line: *line }));
            }
        }
    }
}

#[derive(Default)]
struct Body {
    kernels: Vec<String>,
    blocks: Vec<([u32; 3], usize)>,
}

impl<'ast> Visit<'ast> for Body {
    fn visit_expr_method_call(&mut self, m: &'ast syn::ExprMethodCall) {
        if LOADS.contains(&m.method.to_string().as_str()) {
            for a in &m.args {
                if let syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(s), .. }) = a {
                    self.kernels.push(s.value());
                }
            }
        }
        syn::visit::visit_expr_method_call(self, m);
    }
    fn visit_expr_struct(&mut self, s: &'ast syn::ExprStruct) {
        if s.path.segments.last().is_some_and(|l| l.ident == "LaunchConfig") {
            let dims = s.fields.iter().find(|f| matches!(&f.member, syn::Member::Named(n) if n == "block_dim")).and_then(|f| dims(&f.expr));
            if let Some(b) = dims {
                self.blocks.push((b, s.path.segments[0].ident.span().start().line));
            }
        }
        syn::visit::visit_expr_struct(self, s);
    }
    fn visit_expr_call(&mut self, c: &'ast syn::ExprCall) {
        if let syn::Expr::Path(p) = &*c.func {
            let segs: Vec<String> = p.path.segments.iter().map(|s| s.ident.to_string()).collect();
            if segs.ends_with(&["LaunchConfig".to_string(), "for_num_elems".to_string()]) {
                self.blocks.push((FOR_NUM_ELEMS, p.path.segments[0].ident.span().start().line));
            }
        }
        syn::visit::visit_expr_call(self, c);
    }
}

/// `(x, y, z)` of integer literals.
fn dims(e: &syn::Expr) -> Option<[u32; 3]> {
    let syn::Expr::Tuple(t) = e else { return None };
    let v: Vec<u32> = t
        .elems
        .iter()
        .map(|x| match x {
            syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Int(i), .. }) => i.base10_parse::<u32>().ok(),
            _ => None,
        })
        .collect::<Option<_>>()?;
    match v[..] {
        [x, y, z] if x >= 1 && y >= 1 && z >= 1 && (x as u64) * (y as u64) * (z as u64) <= 1024 => Some([x, y, z]),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kernels_launch_in_its_function_gives_its_shape() {
        let dir = std::env::temp_dir().join(format!("gpucheck-launches-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("src")).unwrap();
        std::fs::write(
            dir.join("src/lib.rs"),
            r#"use cudarc::driver::LaunchConfig;
fn a(m: &M, s: &S) {
    let f = m.load_function("rows").unwrap();
    let cfg = LaunchConfig { grid_dim: (4, 1, 1), block_dim: (128, 1, 1), shared_mem_bytes: 0 };
    unsafe { s.launch_builder(&f).launch(cfg) }.unwrap();
}
fn b(m: &M, s: &S, n: u32) {
    let f = m.load_function("all").unwrap();
    unsafe { s.launch_builder(&f).launch(LaunchConfig::for_num_elems(n)) }.unwrap();
}
fn c(m: &M, s: &S, n: u32, b: u32) {
    let f = m.load_function("twice").unwrap();
    unsafe { s.launch_builder(&f).launch(LaunchConfig { grid_dim: (1, 1, 1), block_dim: (64, 1, 1), shared_mem_bytes: 0 }) }.unwrap();
    unsafe { s.launch_builder(&f).launch(LaunchConfig { grid_dim: (1, 1, 1), block_dim: (32, 2, 1), shared_mem_bytes: 0 }) }.unwrap();
    let g = m.load_function("runtime").unwrap();
    unsafe { s.launch_builder(&g).launch(LaunchConfig { grid_dim: (1, 1, 1), block_dim: (b, 1, 1), shared_mem_bytes: 0 }) }.unwrap();
}
"#,
        )
        .unwrap();
        let (shapes, said) = scan(&dir);
        assert_eq!(shapes["rows"], LaunchShape { block: [128, 1, 1], file: dir.join("src/lib.rs"), line: 4 });
        assert_eq!(shapes["all"].block, FOR_NUM_ELEMS);
        // two shapes in one function (with another kernel's): said, not taken
        assert!(!shapes.contains_key("twice") && !shapes.contains_key("runtime"), "{shapes:?}");
        assert_eq!(said.len(), 2, "{said:?}");
        assert!(
            said.iter().any(|s| s.contains("`twice`") && s.contains("64×1×1 at src/lib.rs:13") && s.contains("32×2×1 at src/lib.rs:14")),
            "{said:?}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
