//! Build backend for CUDA C compiled at run time with NVRTC: the sources a
//! package's Rust code hands to `cudarc`'s `compile_ptx` /
//! `compile_ptx_with_opts`.
//!
//! `scan` reads the package's `.rs` files with `syn` and resolves the first
//! argument of every such call: a string literal, a `const`/`static` item
//! of the file holding one, or `include_str!("….cu")`; anything built at run
//! time (`format!`, a variable) is said to be skipped, with why. Literal
//! fields of a `CompileOptions { … }` second argument become NVRTC options.
//! `compile` runs libnvrtc, loaded at run time (`Nvrtc::load`: the CUDA
//! installation of CUDA_HOME/CUDA_PATH/CUDA_ROOT, nvcc's, the usual
//! folders, the system loader), with `-lineinfo`. A literal is compiled as
//! if it stood at its place in the Rust file (blank lines and spaces before
//! it, the program named after the `.rs` file), so the PTX's line
//! information points into the Rust source. Does not own: which packages
//! are scanned (`super::workspace`), analysis.

use super::{KernelCrate, Unit, UnitKind};
use anyhow::{bail, Context, Result};
use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::path::{Path, PathBuf};
use syn::visit::Visit;

/// The functions whose first argument is CUDA C for NVRTC (cudarc's).
pub const CALLS: [&str; 2] = ["compile_ptx", "compile_ptx_with_opts"];

/// The architecture sources are compiled for when the call names none.
pub const ARCH: &str = "compute_80";

/// CUDA C found in a Rust file.
#[derive(Debug, Clone)]
pub struct Source {
    /// The Rust file of the call.
    pub rs: PathBuf,
    /// The call's line.
    pub line: usize,
    /// What was handed over: "a string literal", "`const KERNEL`",
    /// "`include_str!(\"k.cu\")`".
    pub what: String,
    /// The CUDA C.
    pub text: String,
    /// Where the text stands: the Rust file with the line and (1-based)
    /// column of its first character, or the `.cu` file `include_str!` reads.
    pub at: At,
    /// NVRTC options from the call's literal `CompileOptions`.
    pub options: Vec<String>,
    /// What of the call's options could not be read (not literal).
    pub unread: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum At {
    /// In a Rust string literal; `exact`: its lines are the Rust file's (a
    /// raw string, or one without escapes).
    Literal { line: usize, col: usize, exact: bool },
    /// A file of its own.
    File(PathBuf),
}

/// A call whose source cannot be read before the program runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    pub rs: PathBuf,
    pub line: usize,
    pub why: String,
}

/// Every call of [`CALLS`] in the package's `.rs` files (those under
/// `root`, other packages' folders and `target` left out).
pub fn scan(root: &Path) -> (Vec<Source>, Vec<Skipped>) {
    let mut found = Vec::new();
    let mut skipped = Vec::new();
    for rs in rust_files(root) {
        let Ok(text) = std::fs::read_to_string(&rs) else { continue };
        if !CALLS.iter().any(|c| text.contains(c)) {
            continue;
        }
        let (f, s) = scan_file(&rs, &text);
        found.extend(f);
        skipped.extend(s);
    }
    (found, skipped)
}

/// The `.rs` files of a package's folder, sorted (`target`, hidden
/// folders and nested packages left out).
pub fn rust_files(root: &Path) -> Vec<PathBuf> {
    super::files_with_extension(root, "rs", |d| {
        let name = d.file_name().map(|n| n.to_string_lossy().to_string()).unwrap_or_default();
        name != "target" && !name.starts_with('.') && !d.join("Cargo.toml").exists()
    })
}

/// The calls in one file (`text` its contents).
pub fn scan_file(rs: &Path, text: &str) -> (Vec<Source>, Vec<Skipped>) {
    let file = match syn::parse_file(text) {
        Ok(f) => f,
        Err(e) => {
            let line = e.span().start().line;
            return (Vec::new(), vec![Skipped { rs: rs.to_path_buf(), line, why: format!("the file does not parse as Rust: {e}") }]);
        }
    };
    let mut items = Items::default();
    items.visit_file(&file);
    let mut calls = Calls { rs, items: &items, found: Vec::new(), skipped: Vec::new() };
    calls.visit_file(&file);
    (calls.found, calls.skipped)
}

/// The file's `const` and `static` items, by name.
#[derive(Default)]
struct Items {
    values: Vec<(String, syn::Expr)>,
}

impl<'ast> Visit<'ast> for Items {
    fn visit_item_const(&mut self, i: &'ast syn::ItemConst) {
        self.values.push((i.ident.to_string(), (*i.expr).clone()));
        syn::visit::visit_item_const(self, i);
    }
    fn visit_item_static(&mut self, i: &'ast syn::ItemStatic) {
        self.values.push((i.ident.to_string(), (*i.expr).clone()));
        syn::visit::visit_item_static(self, i);
    }
}

struct Calls<'a> {
    rs: &'a Path,
    items: &'a Items,
    found: Vec<Source>,
    skipped: Vec<Skipped>,
}

impl<'ast> Visit<'ast> for Calls<'_> {
    fn visit_expr_call(&mut self, call: &'ast syn::ExprCall) {
        let called = match &*call.func {
            syn::Expr::Path(p) => p.path.segments.last().map(|s| s.ident.to_string()),
            _ => None,
        };
        if let Some(name) = called.filter(|n| CALLS.contains(&n.as_str())) {
            let line = call.paren_token.span.open().start().line;
            match call.args.first().map(|a| self.resolve(a, 0)) {
                Some(Ok((what, text, at))) => {
                    let (options, unread) = match call.args.iter().nth(1) {
                        Some(o) => options(o, self.rs),
                        None => (Vec::new(), Vec::new()),
                    };
                    self.found.push(Source { rs: self.rs.to_path_buf(), line, what, text, at, options, unread });
                }
                Some(Err(why)) => {
                    self.skipped.push(Skipped { rs: self.rs.to_path_buf(), line, why: format!("the source handed to `{name}` {why}") })
                }
                None => {}
            }
        }
        syn::visit::visit_expr_call(self, call);
    }
}

impl Calls<'_> {
    /// What `e` is, its text and where it stands; or why it cannot be read.
    fn resolve(&self, e: &syn::Expr, depth: usize) -> std::result::Result<(String, String, At), String> {
        if depth > 8 {
            return Err("names items that name each other".into());
        }
        match e {
            syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(s), .. }) => Ok(("a string literal".into(), s.value(), literal_at(s))),
            syn::Expr::Reference(r) => self.resolve(&r.expr, depth + 1),
            syn::Expr::Paren(p) => self.resolve(&p.expr, depth + 1),
            syn::Expr::Group(g) => self.resolve(&g.expr, depth + 1),
            syn::Expr::MethodCall(m) if ["to_string", "to_owned", "into", "as_str", "clone"].contains(&m.method.to_string().as_str()) => {
                self.resolve(&m.receiver, depth + 1)
            }
            syn::Expr::Call(c) if path_ends(&c.func, &["String", "from"]) && c.args.len() == 1 => self.resolve(&c.args[0], depth + 1),
            syn::Expr::Macro(m) if m.mac.path.is_ident("include_str") => {
                let lit: syn::LitStr = m.mac.parse_body().map_err(|_| "is an `include_str!` of a path that is not a literal".to_string())?;
                let file = self.rs.parent().unwrap_or(Path::new(".")).join(lit.value());
                let text = std::fs::read_to_string(&file).map_err(|e| format!("is `include_str!(\"{}\")`, which cannot be read: {e}", lit.value()))?;
                Ok((format!("`include_str!(\"{}\")`", lit.value()), text, At::File(file)))
            }
            syn::Expr::Macro(m) => {
                let name = m.mac.path.segments.last().map(|s| s.ident.to_string()).unwrap_or_default();
                Err(format!("is built at run time with `{name}!`: only string literals, `const`/`static` items holding one and `include_str!` are read"))
            }
            syn::Expr::Path(p) if p.path.segments.len() == 1 => {
                let name = p.path.segments[0].ident.to_string();
                match self.items.values.iter().find(|(n, _)| *n == name) {
                    Some((_, v)) => {
                        let (_, text, at) = self.resolve(v, depth + 1)?;
                        Ok((format!("`{name}`"), text, at))
                    }
                    None => Err(format!(
                        "is `{name}`, which is not a `const` or `static` item of this file (a variable, or an item of another file): it is known at run time only"
                    )),
                }
            }
            _ => Err("is an expression computed at run time: only string literals, `const`/`static` items holding one and `include_str!` are read".into()),
        }
    }
}

/// Whether `e` is a path ending with `ends` (`String::from`).
fn path_ends(e: &syn::Expr, ends: &[&str]) -> bool {
    let syn::Expr::Path(p) = e else { return false };
    let segs: Vec<String> = p.path.segments.iter().map(|s| s.ident.to_string()).collect();
    segs.len() >= ends.len() && segs[segs.len() - ends.len()..].iter().zip(ends).all(|(a, b)| a == b)
}

/// Where a literal's text starts: the line and 1-based column of its first
/// character (after `"` or `r#"`), and whether its lines are the file's.
fn literal_at(s: &syn::LitStr) -> At {
    let start = s.span().start();
    let written = s.token().to_string();
    let prefix = written.find('"').map(|k| k + 1).unwrap_or(1);
    let raw = written.starts_with('r');
    At::Literal { line: start.line, col: start.column + 1 + prefix, exact: raw || !written.contains('\\') }
}

/// A string from a literal expression (`"x"`, `"x".into()`, `"x".to_string()`, `String::from("x")`).
fn lit_string(e: &syn::Expr) -> Option<String> {
    match e {
        syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(s), .. }) => Some(s.value()),
        syn::Expr::Reference(r) => lit_string(&r.expr),
        syn::Expr::MethodCall(m) if ["to_string", "to_owned", "into"].contains(&m.method.to_string().as_str()) => lit_string(&m.receiver),
        syn::Expr::Call(c) if path_ends(&c.func, &["String", "from"]) && c.args.len() == 1 => lit_string(&c.args[0]),
        _ => None,
    }
}

/// `Some(x)` → `x`.
fn some(e: &syn::Expr) -> Option<&syn::Expr> {
    match e {
        syn::Expr::Call(c) if path_ends(&c.func, &["Some"]) && c.args.len() == 1 => Some(&c.args[0]),
        _ => None,
    }
}

/// The strings of `vec![…]` or `[…]`, if all are literal.
fn lit_strings(e: &syn::Expr) -> Option<Vec<String>> {
    let elems: Vec<syn::Expr> = match e {
        syn::Expr::Macro(m) if m.mac.path.is_ident("vec") => {
            m.mac.parse_body_with(syn::punctuated::Punctuated::<syn::Expr, syn::Token![,]>::parse_terminated).ok()?.into_iter().collect()
        }
        syn::Expr::Array(a) => a.elems.iter().cloned().collect(),
        syn::Expr::Reference(r) => return lit_strings(&r.expr),
        _ => return None,
    };
    elems.iter().map(lit_string).collect()
}

/// NVRTC options from a `CompileOptions { … }` literal, and the fields
/// that are not literal (or unknown).
fn options(e: &syn::Expr, rs: &Path) -> (Vec<String>, Vec<String>) {
    let syn::Expr::Struct(s) = e else {
        return (Vec::new(), vec!["the options (not a `CompileOptions { … }` literal)".into()]);
    };
    let mut out = Vec::new();
    let mut unread = Vec::new();
    let dir = rs.parent().unwrap_or(Path::new("."));
    for f in &s.fields {
        let syn::Member::Named(name) = &f.member else { continue };
        let name = name.to_string();
        let flag = |v: &syn::Expr| -> Option<bool> {
            match some(v)? {
                syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Bool(b), .. }) => Some(b.value),
                _ => None,
            }
        };
        let read = match name.as_str() {
            "arch" => some(&f.expr).and_then(lit_string).map(|a| vec![format!("--gpu-architecture={a}")]),
            "include_paths" => {
                lit_strings(&f.expr).map(|ps| ps.iter().map(|p| format!("--include-path={}", dir.join(p).display())).collect())
            }
            "options" => lit_strings(&f.expr),
            "use_fast_math" => flag(&f.expr).map(|b| if b { vec!["--use_fast_math".to_string()] } else { vec![] }),
            "ftz" | "prec_sqrt" | "prec_div" | "fmad" => flag(&f.expr).map(|b| vec![format!("--{}={b}", name.replace('_', "-"))]),
            _ => None,
        };
        match read {
            Some(o) => out.extend(o),
            None => unread.push(format!("`{name}`")),
        }
    }
    (out, unread)
}

/// libnvrtc, loaded.
pub struct Nvrtc {
    lib: libloading::Library,
    pub path: PathBuf,
    pub version: String,
}

type Program = *mut c_void;

impl Nvrtc {
    /// The places libnvrtc is looked for, in order.
    pub fn places() -> Vec<PathBuf> {
        let mut dirs: Vec<PathBuf> = Vec::new();
        for v in ["CUDA_HOME", "CUDA_PATH", "CUDA_ROOT"] {
            if let Some(d) = std::env::var_os(v).filter(|d| !d.is_empty()).map(PathBuf::from) {
                dirs.extend([d.join("lib64"), d.join("lib"), d.join("targets/x86_64-linux/lib")]);
            }
        }
        if let Some(cuda) = super::host::find_nvcc().and_then(|n| n.parent()?.parent().map(Path::to_path_buf)) {
            dirs.extend([cuda.join("lib64"), cuda.join("lib")]);
        }
        dirs.extend(["/usr/local/cuda/lib64", "/opt/cuda/lib64", "/usr/lib/x86_64-linux-gnu"].map(PathBuf::from));
        dirs.extend(super::host::pypi_cuda_dirs().iter().map(|d| d.join("lib")));
        dirs
    }

    /// Load libnvrtc from [`Nvrtc::places`], else through the system
    /// loader; or say where it was looked for.
    pub fn load() -> std::result::Result<Nvrtc, String> {
        let mut candidates: Vec<PathBuf> = Vec::new();
        for d in Nvrtc::places() {
            let Ok(entries) = std::fs::read_dir(&d) else { continue };
            let mut libs: Vec<PathBuf> = entries
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("libnvrtc.so")))
                .collect();
            libs.sort();
            candidates.extend(libs);
        }
        candidates.extend(["libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12"].map(PathBuf::from));
        for c in candidates {
            // SAFETY: libnvrtc's initialisers have no preconditions
            let Ok(lib) = (unsafe { libloading::Library::new(&c) }) else { continue };
            let mut n = Nvrtc { lib, path: c, version: String::new() };
            if let Some(v) = n.read_version() {
                n.version = v;
                return Ok(n);
            }
        }
        let places: Vec<String> = Nvrtc::places().iter().map(|p| format!("`{}`", p.display())).collect();
        Err(format!(
            "libnvrtc was not found: looked in {} and through the system loader (`libnvrtc.so`). Set CUDA_HOME to a CUDA installation, or get NVRTC from PyPI without a GPU: `pip install nvidia-cuda-nvrtc` (found by itself in python3's site-packages; elsewhere set CUDA_HOME to its `nvidia/cu13` folder)",
            places.join(", ")
        ))
    }

    fn read_version(&self) -> Option<String> {
        // SAFETY: nvrtcVersion(int*, int*) writes two ints
        unsafe {
            let f: libloading::Symbol<unsafe extern "C" fn(*mut c_int, *mut c_int) -> c_int> = self.lib.get(b"nvrtcVersion\0").ok()?;
            let (mut major, mut minor) = (0, 0);
            (f(&mut major, &mut minor) == 0).then(|| format!("{major}.{minor}"))
        }
    }

    /// Compile `text` as the program `name` with `options`: the PTX, or
    /// NVRTC's log.
    pub fn compile(&self, text: &str, name: &str, options: &[String]) -> std::result::Result<String, String> {
        let src = CString::new(text).map_err(|_| "the source holds a NUL byte".to_string())?;
        let cname = CString::new(name).map_err(|_| "the file name holds a NUL byte".to_string())?;
        let opts: Vec<CString> = options.iter().map(|o| CString::new(o.as_str()).unwrap_or_default()).collect();
        let ptrs: Vec<*const c_char> = opts.iter().map(|o| o.as_ptr()).collect();
        type Create =
            unsafe extern "C" fn(*mut Program, *const c_char, *const c_char, c_int, *const *const c_char, *const *const c_char) -> c_int;
        type Compile = unsafe extern "C" fn(Program, c_int, *const *const c_char) -> c_int;
        type Size = unsafe extern "C" fn(Program, *mut usize) -> c_int;
        type Get = unsafe extern "C" fn(Program, *mut c_char) -> c_int;
        type Destroy = unsafe extern "C" fn(*mut Program) -> c_int;
        let sym = |n: &[u8]| format!("libnvrtc `{}` lacks `{}`", self.path.display(), String::from_utf8_lossy(&n[..n.len() - 1]));
        // SAFETY: the signatures are NVRTC's (nvrtc.h); every pointer passed
        // lives until the call returns, and the buffers have the sizes NVRTC gave
        unsafe {
            let create: libloading::Symbol<Create> = self.lib.get(b"nvrtcCreateProgram\0").map_err(|_| sym(b"nvrtcCreateProgram\0"))?;
            let compile: libloading::Symbol<Compile> = self.lib.get(b"nvrtcCompileProgram\0").map_err(|_| sym(b"nvrtcCompileProgram\0"))?;
            let ptx_size: libloading::Symbol<Size> = self.lib.get(b"nvrtcGetPTXSize\0").map_err(|_| sym(b"nvrtcGetPTXSize\0"))?;
            let get_ptx: libloading::Symbol<Get> = self.lib.get(b"nvrtcGetPTX\0").map_err(|_| sym(b"nvrtcGetPTX\0"))?;
            let log_size: libloading::Symbol<Size> =
                self.lib.get(b"nvrtcGetProgramLogSize\0").map_err(|_| sym(b"nvrtcGetProgramLogSize\0"))?;
            let get_log: libloading::Symbol<Get> = self.lib.get(b"nvrtcGetProgramLog\0").map_err(|_| sym(b"nvrtcGetProgramLog\0"))?;
            let destroy: libloading::Symbol<Destroy> = self.lib.get(b"nvrtcDestroyProgram\0").map_err(|_| sym(b"nvrtcDestroyProgram\0"))?;
            let mut prog: Program = std::ptr::null_mut();
            if create(&mut prog, src.as_ptr(), cname.as_ptr(), 0, std::ptr::null(), std::ptr::null()) != 0 {
                return Err("nvrtcCreateProgram failed".into());
            }
            let read = |size: &Size, get: &Get| -> String {
                let mut n = 0usize;
                if size(prog, &mut n) != 0 || n == 0 {
                    return String::new();
                }
                let mut buf = vec![0u8; n];
                if get(prog, buf.as_mut_ptr().cast()) != 0 {
                    return String::new();
                }
                CStr::from_bytes_until_nul(&buf).map(|c| c.to_string_lossy().into_owned()).unwrap_or_default()
            };
            let status = compile(prog, ptrs.len() as c_int, ptrs.as_ptr());
            let result = if status == 0 { Ok(read(&ptx_size, &get_ptx)) } else { Err(read(&log_size, &get_log)) };
            destroy(&mut prog);
            result
        }
    }
}

/// The source as NVRTC is given it, and the program's name: a literal
/// padded to stand at its place in the Rust file (so that line information
/// names the Rust file's lines and columns), a file as it is.
pub fn program(s: &Source) -> (String, String) {
    match &s.at {
        At::Literal { line, col, .. } => {
            let mut text = "\n".repeat(line.saturating_sub(1));
            text.push_str(&" ".repeat(col.saturating_sub(1)));
            text.push_str(&s.text);
            (text, s.rs.display().to_string())
        }
        At::File(f) => (s.text.clone(), f.display().to_string()),
    }
}

/// Compile the NVRTC sources of `k` (found by [`scan`]) into
/// `<target>/gpucheck-nvrtc`; a unit per source, and the lines to say
/// (what was compiled; what was skipped, and why).
pub fn build(
    k: &KernelCrate,
    target_dir: &Path,
    nvrtc: &mut Option<std::result::Result<Nvrtc, String>>,
) -> Result<(Vec<Unit>, Vec<String>)> {
    let (sources, skipped) = scan(&k.root);
    let shown = |p: &Path| p.strip_prefix(&k.root).unwrap_or(p).display().to_string();
    let mut said: Vec<String> = skipped
        .iter()
        .map(|s| format!("warning: CUDA C for NVRTC at {}:{} in `{}` is not checked: {}", shown(&s.rs), s.line, k.name, s.why))
        .collect();
    if sources.is_empty() {
        if skipped.is_empty() {
            said.push(format!("     Skipped `{}`: its Rust code hands no CUDA C to {}", k.name, CALLS.join(" or ")));
        }
        return Ok((Vec::new(), said));
    }
    let lib = match nvrtc.get_or_insert_with(Nvrtc::load) {
        Ok(l) => &*l,
        Err(why) => bail!(
            "{} CUDA C source{} for NVRTC in `{}` cannot be compiled: {why}",
            sources.len(),
            if sources.len() == 1 { "" } else { "s" },
            k.name
        ),
    };
    let dir = target_dir.join("gpucheck-nvrtc").join(&k.name);
    std::fs::create_dir_all(&dir).with_context(|| format!("creating `{}`", dir.display()))?;
    let include = super::host::find_nvcc().and_then(|n| Some(n.parent()?.parent()?.join("include"))).filter(|i| i.join("cuda.h").is_file());
    let mut units = Vec::new();
    for s in &sources {
        let (text, name) = program(s);
        let mut options = vec![format!("--gpu-architecture={ARCH}"), "-lineinfo".to_string()];
        if let Some(d) = s.rs.parent() {
            options.push(format!("--include-path={}", d.display()));
        }
        if let Some(i) = &include {
            options.push(format!("--include-path={}", i.display()));
        }
        // the call's own (a later --gpu-architecture wins)
        options.extend(s.options.iter().cloned());
        let place = format!("{}:{}", shown(&s.rs), s.line);
        let ptx = lib.compile(&text, &name, &options).map_err(|log| {
            anyhow::anyhow!("NVRTC could not compile the CUDA C at {place} in `{}` ({}):\n{}", k.name, s.what, log.trim_end())
        })?;
        let stem = shown(&s.rs).replace(['/', '\\', '.'], "_");
        let out = dir.join(format!("{stem}-{}.ptx", s.line));
        // (written beside it and renamed into place: another check reading it at the same time
        // sees the old file or the new one, never half of one)
        let tmp = dir.join(format!(".{stem}-{}.{}.tmp", s.line, std::process::id()));
        std::fs::write(&tmp, ptx).with_context(|| format!("writing `{}`", tmp.display()))?;
        std::fs::rename(&tmp, &out).with_context(|| format!("writing `{}`", out.display()))?;
        let mut note = format!("CUDA C at {place} ({}), compiled with NVRTC {} ({})", s.what, lib.version, options[..2].join(" "));
        if !s.options.is_empty() {
            note.push_str(&format!(" and the call's options {}", s.options.join(" ")));
        }
        if !s.unread.is_empty() {
            note.push_str(&format!("; not read from the call (not literal): {}", s.unread.join(", ")));
        }
        if matches!(s.at, At::Literal { exact: false, .. }) {
            note.push_str("; the literal's escapes (`\\n`) do not keep its lines, so positions in it are approximate");
        }
        units.push(Unit { krate: k.clone(), ptx: out, note: Some(note), kind: UnitKind::Crate });
    }
    said.push(format!(
        "   Collected {} CUDA C source{} for NVRTC from `{}`'s Rust code (NVRTC {} at `{}`)",
        sources.len(),
        if sources.len() == 1 { "" } else { "s" },
        k.name,
        lib.version,
        lib.path.display()
    ));
    Ok((units, said))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SRC: &str = r####"use cudarc::nvrtc::{compile_ptx, compile_ptx_with_opts, CompileOptions};

const KERNEL: &str = r#"
extern "C" __global__ void k(float *x) { x[threadIdx.x * 2] = 0; }
"#;

fn build(n: usize) {
    let a = compile_ptx(r#"extern "C" __global__ void a() {}"#).unwrap();
    let b = compile_ptx(KERNEL).unwrap();
    let c = compile_ptx_with_opts(
        "extern \"C\" __global__ void c() {}",
        CompileOptions { arch: Some("compute_86"), options: vec!["-DN=4".to_string()], use_fast_math: Some(true), name: Some(n), ..Default::default() },
    )
    .unwrap();
    let d = compile_ptx(format!("#define N {n}\n{KERNEL}")).unwrap();
    let e = compile_ptx(&src).unwrap();
    let f = cudarc::nvrtc::compile_ptx(include_str!("missing.cu"));
}
"####;

    #[test]
    fn sources_are_found_and_the_rest_said() {
        let (found, skipped) = scan_file(Path::new("/p/src/lib.rs"), SRC);
        let whats: Vec<(&str, usize)> = found.iter().map(|s| (s.what.as_str(), s.line)).collect();
        assert_eq!(whats, vec![("a string literal", 8), ("`KERNEL`", 9), ("a string literal", 10)], "{found:#?}");
        // the raw literal's text starts after `r#"` on line 8
        assert_eq!(found[0].at, At::Literal { line: 8, col: 28, exact: true });
        assert_eq!(&SRC.lines().nth(7).unwrap()[27..], "extern \"C\" __global__ void a() {}\"#).unwrap();");
        // the const's literal starts on line 3, right after `r#"` (its text begins with a newline)
        assert_eq!(found[1].at, At::Literal { line: 3, col: 25, exact: true });
        assert!(found[1].text.contains("x[threadIdx.x * 2]"));
        // escapes: positions approximate
        assert!(matches!(found[2].at, At::Literal { exact: false, .. }));
        assert_eq!(found[2].options, vec!["--gpu-architecture=compute_86", "-DN=4", "--use_fast_math"]);
        assert_eq!(found[2].unread, vec!["`name`"]);
        let why: Vec<(usize, &str)> = skipped.iter().map(|s| (s.line, s.why.as_str())).collect();
        assert_eq!(why.len(), 3, "{why:#?}");
        assert!(why[0].0 == 15 && why[0].1.contains("built at run time with `format!`"), "{why:?}");
        assert!(why[1].0 == 16 && why[1].1.contains("`src`, which is not a `const` or `static` item"), "{why:?}");
        assert!(why[2].0 == 17 && why[2].1.contains("include_str!(\"missing.cu\")`, which cannot be read"), "{why:?}");
    }

    #[test]
    fn a_literal_is_padded_to_its_place() {
        let s = Source {
            rs: PathBuf::from("/p/src/lib.rs"),
            line: 9,
            what: String::new(),
            text: "ab\ncd".into(),
            at: At::Literal { line: 3, col: 5, exact: true },
            options: vec![],
            unread: vec![],
        };
        let (text, name) = program(&s);
        assert_eq!(text, "\n\n    ab\ncd");
        assert_eq!(name, "/p/src/lib.rs");
    }
}
