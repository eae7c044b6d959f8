//! Launch specifications for `cargo gpucheck confirm`: grid, block and
//! arguments from the command line and from `[package.metadata.gpucheck]`
//! (package-wide `grid`/`block`/`args`, then per kernel in
//! `[package.metadata.gpucheck.kernels.NAME]`, then `--grid/--block/--arg`);
//! argument values (`f32[1048576]`, `u32[4096]:iota`, `2.5`, `1024`); the
//! kernel's Rust parameter names read from its `fn` in the package sources;
//! and the deterministic inputs they become.
//!
//! Owns: turning text into kernel arguments and device buffers, and the
//! error that lists what is missing. Does not own: running anything.

use gpucheck_analysis::interp::{Arg, Global};
use gpucheck_analysis::ir::inst::Ty;
use gpucheck_analysis::ptx;
use std::collections::{BTreeMap, HashMap};
use std::path::Path;

/// Element type of a generated buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Elem {
    F32,
    F64,
    I(u32, bool),
}

impl Elem {
    fn parse(s: &str) -> Option<Elem> {
        Some(match s {
            "f32" => Elem::F32,
            "f64" => Elem::F64,
            "u8" => Elem::I(1, false),
            "i8" => Elem::I(1, true),
            "u16" => Elem::I(2, false),
            "i16" => Elem::I(2, true),
            "u32" => Elem::I(4, false),
            "i32" => Elem::I(4, true),
            "u64" | "usize" => Elem::I(8, false),
            "i64" | "isize" => Elem::I(8, true),
            _ => return None,
        })
    }
    pub fn size(self) -> usize {
        match self {
            Elem::F32 => 4,
            Elem::F64 => 8,
            Elem::I(b, _) => b as usize,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fill {
    /// Seeded pseudo-random: floats in [0, 1), integers in [0, 256).
    Rand,
    Iota,
    Zero,
    Ones,
}

/// A parsed `--arg` value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Buffer { elem: Elem, len: usize, fill: Fill },
    Scalar(String),
}

/// The largest buffer an argument may ask for (the interpreter holds it in memory).
pub const MAX_BUFFER_BYTES: usize = 1 << 30;

pub fn parse_value(text: &str) -> Result<Value, String> {
    let t = text.trim();
    if let Some(open) = t.find('[') {
        let elem_s = &t[..open];
        let elem = Elem::parse(elem_s).ok_or_else(|| format!("unknown element type `{elem_s}` in `{t}` (f32, f64, u8…u64, i8…i64)"))?;
        let close = t.find(']').ok_or_else(|| format!("missing `]` in `{t}`"))?;
        let len: usize = t[open + 1..close]
            .trim()
            .replace('_', "")
            .parse()
            .map_err(|_| format!("`{}` is not a length in `{t}`", &t[open + 1..close]))?;
        let bytes = (len as u128) * elem.size() as u128;
        if bytes > MAX_BUFFER_BYTES as u128 {
            return Err(format!(
                "`{t}` would take {} bytes; a buffer holds at most {MAX_BUFFER_BYTES} bytes (1 GiB: {} elements of `{elem_s}`)",
                bytes,
                MAX_BUFFER_BYTES / elem.size()
            ));
        }
        let fill = match t[close + 1..].trim().strip_prefix(':').map(str::trim) {
            None | Some("rand") | Some("random") => Fill::Rand,
            Some("iota") => Fill::Iota,
            Some("zero") | Some("zeros") => Fill::Zero,
            Some("ones") => Fill::Ones,
            Some(other) => return Err(format!("unknown fill `{other}` in `{t}` (rand, iota, zero, ones)")),
        };
        return Ok(Value::Buffer { elem, len, fill });
    }
    if t.is_empty() {
        return Err("empty value".into());
    }
    Ok(Value::Scalar(t.to_string()))
}

/// `NAME=VALUE` from the command line.
pub fn parse_arg(s: &str) -> Result<(String, String), String> {
    let (k, v) = s.split_once('=').ok_or_else(|| format!("expected NAME=VALUE such as `x=f32[1048576]` or `n=1048576`, found `{s}`"))?;
    parse_value(v)?;
    Ok((k.trim().to_string(), v.trim().to_string()))
}

/// A kernel's launch: shape and argument texts by name.
#[derive(Debug, Clone, Default)]
pub struct Spec {
    pub grid: Option<[u32; 3]>,
    pub block: Option<[u32; 3]>,
    pub args: BTreeMap<String, String>,
    /// Arguments whose value is the package table's, shared by every
    /// kernel (so not held to one kernel's pointer types).
    pub shared: std::collections::BTreeSet<String>,
    /// Bytes of dynamic shared memory the launch gives (`shared_bytes`,
    /// `--shared`).
    pub shared_bytes: Option<u32>,
}

fn apply_table(spec: &mut Spec, t: &serde_json::Value, where_: &str) -> Result<(), String> {
    if let Some(g) = t.get("grid") {
        spec.grid = Some(crate::config::dims(g, "grid").map_err(|e| format!("{e} in {where_}"))?);
    }
    if let Some(b) = t.get("block") {
        spec.block = Some(crate::config::block(b).map_err(|e| format!("{e} in {where_}"))?);
    }
    if let Some(b) = t.get("shared_bytes") {
        spec.shared_bytes = Some(crate::config::shared_bytes(b).map_err(|e| format!("{e} in {where_}"))?);
    }
    if let Some(a) = t.get("args") {
        let obj = a.as_object().ok_or_else(|| format!("expected `args = {{ name = \"f32[1024]\", … }}` in {where_}"))?;
        // a struct's fields as a nested table: `p = { n = "1024", src = "f32[1024]" }`
        let mut items: Vec<(String, &serde_json::Value)> = Vec::new();
        for (k, v) in obj {
            match v.as_object() {
                Some(fields) => items.extend(fields.iter().map(|(f, v)| (format!("{k}.{f}"), v))),
                None => items.push((k.clone(), v)),
            }
        }
        for (k, v) in items {
            let text = match v {
                serde_json::Value::String(s) => s.clone(),
                serde_json::Value::Number(n) => n.to_string(),
                other => return Err(format!("argument `{k}` in {where_}: expected a string or number, found `{other}`")),
            };
            parse_value(&text).map_err(|e| format!("argument `{k}` in {where_}: {e}"))?;
            spec.args.insert(k, text);
        }
    }
    Ok(())
}

/// The launch of `kernel`: package table, kernel table, command line.
pub fn spec(meta: Option<&serde_json::Value>, kernel: &str, cli: &Spec) -> Result<Spec, String> {
    let mut s = Spec::default();
    if let Some(m) = meta {
        apply_table(&mut s, m, "[package.metadata.gpucheck]")?;
        s.shared = s.args.keys().cloned().collect();
        if let Some(k) = m.get("kernels").and_then(|k| k.get(kernel)) {
            let before = s.args.clone();
            apply_table(&mut s, k, &format!("[package.metadata.gpucheck.kernels.{kernel}]"))?;
            s.shared.retain(|n| s.args.get(n) == before.get(n));
        }
    }
    s.shared.retain(|n| !cli.args.contains_key(n));
    if cli.grid.is_some() {
        s.grid = cli.grid;
    }
    if cli.block.is_some() {
        s.block = cli.block;
    }
    if cli.shared_bytes.is_some() {
        s.shared_bytes = cli.shared_bytes;
    }
    s.args.extend(cli.args.iter().map(|(k, v)| (k.clone(), v.clone())));
    Ok(s)
}

/// Whether the package metadata gives `kernel` a grid (so `confirm` runs it by default).
pub fn configured(meta: Option<&serde_json::Value>, kernel: &str) -> bool {
    meta.is_some_and(|m| m.get("grid").is_some() || m.get("kernels").and_then(|k| k.get(kernel)).is_some_and(|k| k.get("grid").is_some()))
}

/// A kernel's Rust signature: its parameters `(name, type)`, and the
/// field layout of the structs passed by value among them (`Err`: why it
/// cannot be known). A CUDA C kernel's is its parameter names, one per PTX
/// parameter, with no types.
#[derive(Debug, Clone, Default)]
pub struct RustKernel {
    pub params: Vec<(String, String)>,
    pub structs: BTreeMap<String, Result<Vec<Field>, String>>,
}

/// A field of a `#[repr(C)]` struct: its name (`inner.x` for a nested
/// struct's), Rust type, byte offset and size.
#[derive(Debug, Clone, PartialEq)]
pub struct Field {
    pub name: String,
    pub ty: String,
    pub offset: usize,
    pub size: usize,
}

/// The source's parameter names of unit `u`'s kernels (PTX module
/// `ptx`), one per PTX parameter: a Rust crate's `extern "ptx-kernel"`
/// signatures, and the `__global__` signatures of the package's CUDA C
/// sources the PTX's line information names (its `.file`s; `is_local`:
/// whether one is the package's).
pub fn source_names(
    u: &crate::build::Unit,
    ptx: &gpucheck_analysis::ptx::Module<'_>,
    paths: &crate::diagnostic::PathStyle,
    is_local: &dyn Fn(&str) -> bool,
) -> HashMap<String, Vec<String>> {
    let k = &u.krate;
    let mut out = if u.kind == crate::build::UnitKind::PtxFile { HashMap::new() } else { rust_kernel_params(&k.root) };
    // (a `.rs` file: CUDA C in a string literal, compiled with NVRTC)
    let c_like = |p: &str| [".cu", ".cuh", ".cpp", ".cc", ".cxx", ".c", ".h", ".hpp", ".rs"].iter().any(|x| p.ends_with(x));
    let mut seen: Vec<&str> = Vec::new();
    for file in ptx.files.iter().map(|f| f.path).filter(|f| c_like(f) && is_local(f)) {
        // (a file named twice is read once)
        if seen.contains(&file) {
            continue;
        }
        seen.push(file);
        if let Ok(text) = std::fs::read_to_string(paths.absolute(file)) {
            for (name, params) in gpucheck_analysis::names::c_kernel_params(&text) {
                out.entry(name).or_insert(params);
            }
        }
    }
    out
}

/// The parameter names of every Rust kernel (`extern "ptx-kernel" fn NAME(…)`)
/// in the `.rs` files under `root/src`, one per PTX parameter, in order (a
/// slice `xs` is `xs` and `xs.len`).
pub fn rust_kernel_params(root: &Path) -> HashMap<String, Vec<String>> {
    let mut out = HashMap::new();
    for text in sources(root) {
        let mut rest = text.as_str();
        while let Some(i) = rest.find("\"ptx-kernel\"") {
            rest = &rest[i + "\"ptx-kernel\"".len()..];
            let Some(after) = rest.trim_start().strip_prefix("fn ") else { continue };
            let name: String = after.trim_start().chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
            let Some(open) = after.find('(') else { continue };
            if let Some(list) = enclosed(&after[open + 1..], '(', ')') {
                // one name per PTX parameter: a slice is a pointer and a length
                let names = typed_items(list).into_iter().flat_map(|(n, t)| {
                    let n = n.trim_start_matches("mut ").to_string();
                    match slice_elem(&t) {
                        Some(_) => {
                            let len = format!("{n}.len");
                            vec![n, len]
                        }
                        None => vec![n],
                    }
                });
                out.insert(name, names.collect());
            }
        }
    }
    out
}

/// The `.rs` files under `root/src`.
fn sources(root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![root.join("src")];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else { continue };
        for p in rd.flatten().map(|e| e.path()) {
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.extend(std::fs::read_to_string(&p).ok());
            }
        }
    }
    out
}

/// The text between the bracket opening at the start of `rest` (already
/// consumed) and its match.
fn enclosed(rest: &str, open: char, close: char) -> Option<&str> {
    let mut depth = 1;
    for (i, c) in rest.char_indices() {
        if c == open {
            depth += 1;
        } else if c == close {
            depth -= 1;
            if depth == 0 {
                return Some(&rest[..i]);
            }
        }
    }
    None
}

/// `name: Type` items of a comma-separated list, splitting at depth 0.
fn typed_items(list: &str) -> Vec<(String, String)> {
    gpucheck_analysis::names::split_top(list)
        .iter()
        .filter_map(|part| {
            // attributes and visibility before the name
            let mut s = part.trim();
            while let Some(rest) = s.strip_prefix("#[") {
                s = rest.split_once(']').map(|x| x.1.trim()).unwrap_or("");
            }
            let s = s.strip_prefix("pub(crate)").or_else(|| s.strip_prefix("pub")).unwrap_or(s).trim();
            let (name, ty) = s.split_once(':')?;
            let name = name.trim().trim_start_matches("mut ").trim();
            (!name.is_empty()).then(|| (name.to_string(), ty.trim().to_string()))
        })
        .collect()
}

/// Size and alignment of a primitive or pointer type.
fn primitive(ty: &str) -> Option<(usize, usize)> {
    let ty = ty.trim();
    if ty.starts_with('*') || ty.starts_with('&') {
        return Some((8, 8));
    }
    Some(match ty {
        "u8" | "i8" | "bool" => (1, 1),
        "u16" | "i16" => (2, 2),
        "u32" | "i32" | "f32" => (4, 4),
        "u64" | "i64" | "f64" | "usize" | "isize" => (8, 8),
        _ => return None,
    })
}

/// The C layout of struct `name` (fields flattened, nested structs as
/// `outer.inner`), its size and alignment.
fn layout(srcs: &[String], name: &str, depth: u32) -> Result<(Vec<Field>, usize, usize), String> {
    let needle = format!("struct {name}");
    let (text, at) = srcs
        .iter()
        .find_map(|t| {
            t.match_indices(&needle)
                .map(|(i, _)| i)
                .find(|&i| {
                    let after = &t[i + needle.len()..];
                    after.trim_start().starts_with('{') || after.starts_with('<')
                })
                .map(|i| (t, i))
        })
        .ok_or_else(|| format!("no `struct {name}` found in the package's sources"))?;
    let before = &text[..at];
    let attrs = &before[before.rfind(['}', ';']).map(|i| i + 1).unwrap_or(0)..];
    if !attrs.replace(' ', "").contains("#[repr(C") {
        return Err(format!("`struct {name}` is not `#[repr(C)]`, so Rust does not fix the order of its fields"));
    }
    let body_at = text[at..].find('{').ok_or("no struct body")? + at + 1;
    let body = enclosed(&text[body_at..], '{', '}').ok_or("unterminated struct body")?;
    let (mut fields, mut offset, mut align) = (Vec::new(), 0usize, 1usize);
    for (field, ty) in typed_items(body) {
        let (size, a, inner) = match primitive(&ty) {
            Some((s, a)) => (s, a, None),
            None if depth < 4 => {
                let (inner, s, a) = layout(srcs, ty.trim(), depth + 1)?;
                (s, a, Some(inner))
            }
            None => return Err(format!("field `{field}: {ty}` of `struct {name}`: type not supported")),
        };
        offset = offset.div_ceil(a) * a;
        match inner {
            Some(inner) => {
                fields.extend(inner.into_iter().map(|f| Field { name: format!("{field}.{}", f.name), offset: offset + f.offset, ..f }))
            }
            None => fields.push(Field { name: field, ty, offset, size }),
        }
        offset += size;
        align = align.max(a);
    }
    Ok((fields, offset.div_ceil(align) * align, align))
}

/// The Rust signature of `fn kernel(…)` in the `.rs` files under `root`,
/// with the layout of the structs its parameters take by value.
pub fn rust_params(root: &Path, kernel: &str) -> Option<RustKernel> {
    let srcs = sources(root);
    // a kernel without `#[no_mangle]` by its `fn` name (`_RNv…3k` is `crate::k`)
    let path = gpucheck_analysis::demangle(kernel);
    let needle = format!("fn {}(", path.rsplit("::").next().unwrap_or(&path));
    let (text, at) = srcs.iter().find_map(|t| t.find(&needle).map(|i| (t, i)))?;
    let params = typed_items(enclosed(&text[at + needle.len()..], '(', ')')?);
    let mut structs = BTreeMap::new();
    for (_, ty) in &params {
        let t = ty.trim();
        if primitive(t).is_none() && slice_elem(t).is_none() && t.chars().all(|c| c.is_alphanumeric() || c == '_') {
            structs.insert(t.to_string(), layout(&srcs, t, 0).map(|x| x.0));
        }
    }
    Some(RustKernel { params, structs })
}

/// `T` of a slice type `&[T]`, `&'a mut [T]`.
fn slice_elem(ty: &str) -> Option<&str> {
    let t = ty.trim().strip_prefix('&')?.trim_start();
    let t = if t.starts_with('\'') { t.split_once(' ').map(|x| x.1).unwrap_or(t) } else { t };
    let t = t.trim_start().strip_prefix("mut ").unwrap_or(t).trim();
    t.strip_prefix('[')?.strip_suffix(']').map(str::trim).filter(|e| !e.contains(';'))
}

/// A buffer made for a pointer argument (the CUDA engine copies it to the device).
#[derive(Debug, Clone)]
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
pub struct Buffer {
    pub addr: u64,
    pub bytes: Vec<u8>,
    /// The argument it was made for, as given (`x`, `p.src`), and its
    /// element size in bytes.
    pub name: String,
    pub elem_bytes: usize,
}

/// Where an out-of-bounds address falls, in the terms of the buffer it
/// is nearest (within 4 KiB of its ends, where the interpreter leaves a
/// gap): "element 20 of `x` (10 elements given)".
pub fn buffer_place(buffers: &[Buffer], addr: u64) -> Option<String> {
    buffer_offset(buffers, addr).map(|x| x.0)
}

/// [`buffer_place`], with the byte offset from the buffer's start.
pub fn buffer_offset(buffers: &[Buffer], addr: u64) -> Option<(String, i64)> {
    let (b, off) = buffers.iter().find_map(|b| {
        let off = addr as i128 - b.addr as i128;
        (off >= -4096 && off < b.bytes.len() as i128 + 4096).then_some((b, off))
    })?;
    let size = b.elem_bytes.max(1) as i128;
    let n = b.bytes.len() / b.elem_bytes.max(1);
    Some((format!("element {} of `{}` ({n} elements given)", off.div_euclid(size), b.name), off as i64))
}

/// The pointee of a Rust pointer type (`f32` for `*const f32`).
fn pointee(ty: &str) -> Option<&str> {
    ty.trim().strip_prefix("*const ").or_else(|| ty.trim().strip_prefix("*mut ")).map(str::trim)
}

/// A buffer's element type against the pointer type the kernel declares:
/// `x=f64[10]` for `x: *const f32` is refused, saying what it takes.
fn check_elem(name: &str, text: &str, elem: Elem, ty: Option<&str>) -> Result<(), String> {
    let Some(t) = ty.and_then(pointee) else { return Ok(()) };
    match Elem::parse(t) {
        Some(want) if want != elem => {
            let len = text.split_once('[').map_or("N]", |x| x.1);
            Err(format!(
                "argument `{name}={text}`: `{name}` is `{}` in the kernel's signature: give `{name}={t}[{len}`",
                ty.unwrap_or("").trim()
            ))
        }
        _ => Ok(()),
    }
}

/// The PTX parameters' values, with the buffers made for them.
#[derive(Debug)]
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
pub struct Prepared {
    pub args: Vec<Arg>,
    pub buffers: Vec<Buffer>,
    /// Pointer fields of aggregate arguments: (argument, byte offset,
    /// buffer), for an engine whose buffers live at other addresses.
    pub pointer_fields: Vec<(usize, usize, usize)>,
    /// `name=value` as used, for the report.
    pub shown: Vec<String>,
}

/// Every name an argument of kernel `f` can be given by: Rust parameter
/// names (and `NAME.len` of a slice), PTX parameter names, indices.
pub fn param_names(f: &ptx::Function<'_>, rust: Option<&RustKernel>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for (n, t) in rust.map(|r| r.params.as_slice()).unwrap_or(&[]) {
        out.push(n.clone());
        if slice_elem(t).is_some() {
            out.push(format!("{n}.len"));
        }
        if let Some(Ok(fields)) = rust.and_then(|r| r.structs.get(t.trim())) {
            out.extend(fields.iter().map(|x| format!("{n}.{}", x.name)));
        }
    }
    for (i, p) in f.params.iter().enumerate() {
        out.push(p.name.to_string());
        out.push(i.to_string());
    }
    out
}

fn xorshift(seed: u64) -> impl FnMut() -> u64 {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    }
}

pub fn fill(elem: Elem, len: usize, fill: Fill, seed: u64) -> Vec<u8> {
    let mut out = Vec::with_capacity(len * elem.size());
    let mut r = xorshift(seed);
    for i in 0..len {
        match elem {
            Elem::F32 => {
                let v = match fill {
                    Fill::Rand => (r() >> 40) as f32 / (1u64 << 24) as f32,
                    Fill::Iota => i as f32,
                    Fill::Zero => 0.0,
                    Fill::Ones => 1.0,
                };
                out.extend_from_slice(&v.to_le_bytes());
            }
            Elem::F64 => {
                let v = match fill {
                    Fill::Rand => (r() >> 11) as f64 / (1u64 << 53) as f64,
                    Fill::Iota => i as f64,
                    Fill::Zero => 0.0,
                    Fill::Ones => 1.0,
                };
                out.extend_from_slice(&v.to_le_bytes());
            }
            Elem::I(b, _) => {
                let v: u64 = match fill {
                    Fill::Rand => r() % 256,
                    Fill::Iota => i as u64,
                    Fill::Zero => 0,
                    Fill::Ones => 1,
                };
                out.extend_from_slice(&v.to_le_bytes()[..b as usize]);
            }
        }
    }
    out
}

fn scalar_bits(text: &str, ptx_ty: &str, rust_ty: Option<&str>) -> Result<u64, String> {
    let ty = Ty::of_decl(ptx_ty);
    let float = ty.is_some_and(Ty::is_float) || rust_ty.is_some_and(|t| t == "f32" || t == "f64");
    if float {
        let v: f64 = text.parse().map_err(|_| format!("`{text}` is not a number"))?;
        return Ok(if ty == Some(Ty::F(64)) || rust_ty == Some("f64") { v.to_bits() } else { (v as f32).to_bits() as u64 });
    }
    let (neg, digits) = match text.strip_prefix('-') {
        Some(d) => (true, d),
        None => (false, text),
    };
    let digits = digits.replace('_', "");
    let v = if let Some(h) = digits.strip_prefix("0x") { u64::from_str_radix(h, 16) } else { digits.parse::<u64>() }
        .map_err(|_| format!("`{text}` is not an integer"))?;
    // the parameter's type: the Rust one when known (`usize` in a `.b64`), else the PTX one
    let (signed, bits) = match (rust_ty.map(str::trim), ty) {
        (Some(r), _) if r.starts_with('u') || r.starts_with('i') => {
            let bits = match &r[1..] {
                "size" => 64,
                n => n.parse().unwrap_or(64),
            };
            (Some(r.starts_with('i')), bits)
        }
        (_, Some(Ty::U(b))) => (Some(false), b as u32),
        (_, Some(Ty::S(b))) => (Some(true), b as u32),
        (_, Some(t)) => (None, t.bits()),
        _ => (None, 64),
    };
    let type_name = rust_ty.map(str::to_string).unwrap_or_else(|| ptx_ty.trim_start_matches('.').to_string());
    let max_unsigned = if bits >= 64 { u64::MAX } else { (1u64 << bits) - 1 };
    let max_positive = max_unsigned >> 1;
    if neg && signed == Some(false) && v != 0 {
        return Err(format!("`{text}` is negative, but the parameter is a `{type_name}`"));
    }
    let fits = match (neg, signed) {
        (true, _) => v <= max_positive + 1,
        (false, Some(true)) => v <= max_positive,
        (false, _) => v <= max_unsigned,
    };
    if !fits {
        return Err(format!("`{text}` does not fit the parameter's type `{type_name}`"));
    }
    Ok(if neg { (v as i64).wrapping_neg() as u64 & max_unsigned } else { v })
}

/// Match the given argument texts to the kernel's PTX parameters (by Rust
/// name, PTX name or index), make the buffers, and say what is missing.
#[cfg(test)]
pub fn prepare(
    f: &ptx::Function<'_>,
    rust_kernel: Option<&RustKernel>,
    given: &BTreeMap<String, String>,
    mem: &mut Global,
) -> Result<Prepared, String> {
    prepare_with(f, rust_kernel, given, &Default::default(), mem)
}

/// [`prepare`], `shared` naming the arguments whose buffers are the
/// package table's (not checked against this kernel's pointer types).
pub fn prepare_with(
    f: &ptx::Function<'_>,
    rust_kernel: Option<&RustKernel>,
    given: &BTreeMap<String, String>,
    shared: &std::collections::BTreeSet<String>,
    mem: &mut Global,
) -> Result<Prepared, String> {
    // a slice parameter (`&[T]`, `&mut [T]`) is a (pointer, length) pair in PTX (Rust-CUDA)
    let expanded: Option<Vec<(String, String)>> = rust_kernel.map(|r| {
        r.params
            .iter()
            .flat_map(|(n, t)| match slice_elem(t) {
                Some(e) => vec![(n.clone(), format!("*const {e}")), (format!("{n}.len"), "usize".to_string())],
                None => vec![(n.clone(), t.clone())],
            })
            .collect()
    });
    let rust = expanded.as_deref().filter(|r| r.len() == f.params.len());
    let mut args = Vec::new();
    let mut buffers = Vec::new();
    let mut pointer_fields = Vec::new();
    let mut shown = Vec::new();
    let mut missing = Vec::new();
    // elements of the buffer made for each named argument (for slice lengths)
    let mut lens: BTreeMap<String, usize> = BTreeMap::new();
    for (i, p) in f.params.iter().enumerate() {
        let rname = rust.map(|r| r[i].0.as_str());
        let rty = rust.map(|r| r[i].1.as_str());
        let names: Vec<String> = rname.map(str::to_string).into_iter().chain([p.name.to_string(), i.to_string()]).collect();
        let mut found = names.iter().find_map(|n| given.get(n).map(|v| (n.clone(), v.clone())));
        let display = rname.unwrap_or(p.name).to_string();
        if found.is_none() {
            // the length half of a slice: the length of its buffer
            if let Some(n) = display.strip_suffix(".len").and_then(|base| lens.get(base)) {
                found = Some((display.clone(), n.to_string()));
            }
        }
        // a struct passed by value: its fields by name
        if let Some(bytes) = p.array {
            let fields = rty.and_then(|t| rust_kernel.and_then(|r| r.structs.get(t.trim())));
            match fields {
                Some(Ok(fields)) => {
                    let mut image = vec![0u8; bytes as usize];
                    for field in fields {
                        let name = format!("{display}.{}", field.name);
                        let Some(text) = given.get(&name).or_else(|| given.get(&format!("{}.{}", p.name, field.name))) else {
                            let hint = if field.ty.starts_with('*') { format!("{name}=f32[N]") } else { format!("{name}=VALUE") };
                            missing.push(format!("  `{name}` ({}: field of `{}`): --arg {hint}", field.ty, rty.unwrap_or("")));
                            continue;
                        };
                        let bits = match parse_value(text)? {
                            Value::Buffer { elem, len, fill: how } => {
                                if !(field.ty.starts_with('*') || field.ty.starts_with('&')) {
                                    return Err(format!("field `{name}` is a `{}`, not a pointer: give a value, not `{text}`", field.ty));
                                }
                                if !shared.contains(&name) {
                                    check_elem(&name, text, elem, Some(&field.ty))?;
                                }
                                let data = fill(elem, len, how, i as u64 + 1 + field.offset as u64);
                                let addr = mem.alloc(&data);
                                pointer_fields.push((args.len(), field.offset, buffers.len()));
                                buffers.push(Buffer { addr, bytes: data, name: name.clone(), elem_bytes: elem.size() });
                                addr
                            }
                            Value::Scalar(v) => {
                                if field.ty.starts_with('*') || field.ty.starts_with('&') {
                                    return Err(format!(
                                        "field `{name}` is a pointer (`{}`): give a buffer such as `{name}=f32[1024]`, not `{v}`",
                                        field.ty
                                    ));
                                }
                                let ptx_ty = match field.size {
                                    1 => ".b8",
                                    2 => ".b16",
                                    4 => if field.ty == "f32" { ".f32" } else { ".b32" },
                                    _ => if field.ty == "f64" { ".f64" } else { ".b64" },
                                };
                                scalar_bits(&v, ptx_ty, Some(&field.ty)).map_err(|e| format!("field `{name}`: {e}"))?
                            }
                        };
                        let end = (field.offset + field.size).min(image.len());
                        if field.offset < end {
                            image[field.offset..end].copy_from_slice(&bits.to_le_bytes()[..end - field.offset]);
                        }
                        shown.push(format!("{name}={text}"));
                    }
                    args.push(Arg::Bytes(image));
                }
                Some(Err(why)) => {
                    return Err(format!("argument `{display}` is a struct passed by value (`{} {}[{bytes}]`), whose fields cannot be given: {why}", p.ty, p.name))
                }
                None => {
                    return Err(format!(
                        "argument `{display}` is an aggregate (`{} {}[{bytes}]`): give its fields as `--arg {display}.FIELD=VALUE`, which needs the kernel's Rust source with a `#[repr(C)]` struct",
                        p.ty, p.name
                    ))
                }
            }
            continue;
        }
        let Some((key, text)) = found else {
            let hint = match (rty.and_then(pointee), Ty::of_decl(p.ty)) {
                (Some(t), _) => format!("--arg {display}={}[N] (a buffer of N elements)", Elem::parse(t).map(|_| t).unwrap_or("u8")),
                (None, Some(t)) if t.is_float() => format!("--arg {display}=1.5"),
                (None, Some(t)) if t.bits() == 64 && rty.is_none() => {
                    format!("--arg {display}=VALUE or --arg {display}=f32[N] (64-bit: a scalar or a pointer)")
                }
                _ => format!("--arg {display}=VALUE"),
            };
            missing.push(format!(
                "  `{display}`{} ({}): {hint}",
                if rname.is_some() { format!(" (PTX `{}`)", p.name) } else { String::new() },
                match rty {
                    Some(r) => format!("{} {r}", p.ty),
                    None => p.ty.to_string(),
                }
            ));
            continue;
        };
        match parse_value(&text)? {
            Value::Buffer { elem, len, fill: how } => {
                if !matches!(p.ty, ".u64" | ".b64" | ".s64") {
                    return Err(format!("argument `{display}` is a {} parameter, not a pointer: give a value, not `{text}`", p.ty));
                }
                if !shared.contains(&key) {
                    check_elem(&display, &text, elem, rty)?;
                }
                let bytes = fill(elem, len, how, i as u64 + 1);
                let addr = mem.alloc(&bytes);
                lens.insert(display.clone(), len);
                buffers.push(Buffer { addr, bytes, name: display.clone(), elem_bytes: elem.size() });
                args.push(Arg::Bits(addr));
            }
            Value::Scalar(s) => {
                if let Some(t) = rty.filter(|t| t.starts_with('*')) {
                    if scalar_bits(&s, p.ty, None).is_err() {
                        return Err(format!(
                            "argument `{display}` is a pointer (`{t}`): give a buffer such as `{display}=f32[1024]`, not `{s}`"
                        ));
                    }
                }
                args.push(Arg::Bits(scalar_bits(&s, p.ty, rty).map_err(|e| format!("argument `{display}`: {e}"))?));
            }
        }
        shown.push(format!("{display}={text}"));
    }
    if !missing.is_empty() {
        return Err(format!("kernel `{}` needs values for:\n{}", f.name, missing.join("\n")));
    }
    Ok(Prepared { args, buffers, pointer_fields, shown })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kernel(params: &[(&str, &str)]) -> RustKernel {
        RustKernel { params: params.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect(), structs: BTreeMap::new() }
    }

    #[test]
    fn buffers_follow_the_signature_and_name_faults() {
        let src = ".version 7.0\n.target sm_70\n.address_size 64\n.entry k(.param .u64 k_param_0, .param .u32 k_param_1) { ret; }\n";
        let m = ptx::parse(src).unwrap();
        let f = &m.functions[0];
        let rk = kernel(&[("x", "*const f32"), ("n", "u32")]);
        let given = |x: &str| BTreeMap::from([("x".to_string(), x.to_string()), ("n".to_string(), "10".to_string())]);
        let err = prepare(f, Some(&rk), &given("f64[10]"), &mut Global::default()).unwrap_err();
        assert_eq!(err, "argument `x=f64[10]`: `x` is `*const f32` in the kernel's signature: give `x=f32[10]`");
        let p = prepare(f, Some(&rk), &given("f32[10]"), &mut Global::default()).unwrap();
        let b = &p.buffers[0];
        assert_eq!(buffer_place(&p.buffers, b.addr + 80).as_deref(), Some("element 20 of `x` (10 elements given)"));
        assert_eq!(buffer_place(&p.buffers, b.addr - 4).as_deref(), Some("element -1 of `x` (10 elements given)"));
        assert_eq!(buffer_place(&p.buffers, b.addr + (1 << 20)), None);
    }

    #[test]
    fn struct_layouts_and_fields() {
        let dir = std::env::temp_dir().join(format!("gpucheck-structs-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("src")).unwrap();
        std::fs::write(
            dir.join("src/lib.rs"),
            "#[repr(C)]\n#[derive(Clone, Copy)]\npub struct Strided {\n    pub src: *const f32,\n    pub n: u32,\n    pub dst: *mut f32,\n    pub s: Pair,\n}\n#[repr(C)]\npub struct Pair { a: u8, b: u16 }\npub struct Loose { a: u8, b: u64 }\npub unsafe extern \"ptx-kernel\" fn g(p: Strided, q: Loose) {}",
        )
        .unwrap();
        let k = rust_params(&dir, "g").unwrap();
        let fields = k.structs["Strided"].clone().unwrap();
        let layout: Vec<(&str, usize, usize)> = fields.iter().map(|f| (f.name.as_str(), f.offset, f.size)).collect();
        assert_eq!(layout, [("src", 0, 8), ("n", 8, 4), ("dst", 16, 8), ("s.a", 24, 1), ("s.b", 26, 2)]);
        assert!(k.structs["Loose"].as_ref().unwrap_err().contains("not `#[repr(C)]`"));
        // filled by field, from a PTX aggregate parameter
        let src = ".version 7.0\n.target sm_70\n.address_size 64\n.visible .entry g(.param .align 8 .b8 g_param_0[32], .param .align 8 .b8 g_param_1[16])\n{\n ret;\n}\n";
        let m = ptx::parse(src).unwrap();
        let given: BTreeMap<String, String> = [("p.src", "f32[4]"), ("p.n", "4"), ("p.dst", "f32[4]"), ("p.s.a", "7"), ("p.s.b", "513")]
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect();
        let mut mem = Global::default();
        let e = prepare(&m.functions[0], Some(&k), &given, &mut mem).unwrap_err();
        assert!(e.contains("`q` is a struct passed by value") && e.contains("not `#[repr(C)]`"), "{e}");
        let k1 = RustKernel { params: k.params[..1].to_vec(), structs: k.structs.clone() };
        let src1 = src.replace(", .param .align 8 .b8 g_param_1[16]", "");
        let m1 = ptx::parse(&src1).unwrap();
        let p = prepare(&m1.functions[0], Some(&k1), &given, &mut mem).unwrap();
        let Arg::Bytes(b) = &p.args[0] else { panic!("an aggregate") };
        assert_eq!(b.len(), 32);
        assert_eq!(u64::from_le_bytes(b[0..8].try_into().unwrap()), p.buffers[0].addr);
        assert_eq!(u32::from_le_bytes(b[8..12].try_into().unwrap()), 4);
        assert_eq!((b[24], u16::from_le_bytes(b[26..28].try_into().unwrap())), (7, 513));
        // a missing field is named
        let mut partial = given.clone();
        partial.remove("p.n");
        assert!(prepare(&m1.functions[0], Some(&k1), &partial, &mut mem).unwrap_err().contains("`p.n` (u32: field of `Strided`)"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn values() {
        assert_eq!(parse_value("f32[1_024]"), Ok(Value::Buffer { elem: Elem::F32, len: 1024, fill: Fill::Rand }));
        assert_eq!(parse_value("u32[8]:iota"), Ok(Value::Buffer { elem: Elem::I(4, false), len: 8, fill: Fill::Iota }));
        assert!(parse_value("q7[8]").unwrap_err().contains("unknown element type"));
        assert!(parse_value("f32[8]:odd").unwrap_err().contains("unknown fill"));
        assert_eq!(parse_value("2.5"), Ok(Value::Scalar("2.5".into())));
        assert!(parse_arg("x").unwrap_err().contains("NAME=VALUE"));
        assert_eq!(fill(Elem::I(4, false), 3, Fill::Iota, 1), [0, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0]);
        assert_eq!(fill(Elem::F32, 4, Fill::Rand, 7), fill(Elem::F32, 4, Fill::Rand, 7), "deterministic");
        assert_eq!(scalar_bits("2.5", ".f32", None), Ok(2.5f32.to_bits() as u64));
        assert_eq!(scalar_bits("-1", ".s64", None), Ok(u64::MAX));
        assert_eq!(scalar_bits("-1", ".b32", None), Ok(0xffff_ffff));
        assert_eq!(scalar_bits("0x10", ".u32", None), Ok(16));
        // numbers are checked against the parameter's type
        assert_eq!(scalar_bits("-5", ".u32", None), Err("`-5` is negative, but the parameter is a `u32`".to_string()));
        assert_eq!(scalar_bits("-5", ".u64", Some("usize")), Err("`-5` is negative, but the parameter is a `usize`".to_string()));
        assert!(scalar_bits("4294967296", ".u32", None).unwrap_err().contains("does not fit"));
        assert!(scalar_bits("128", ".s8", None).unwrap_err().contains("does not fit"));
        assert_eq!(scalar_bits("-128", ".s8", None), Ok(0x80));
        // sizes are checked before anything is allocated
        assert!(parse_value("f32[99999999999]").unwrap_err().contains("a buffer holds at most 1073741824 bytes"));
    }

    #[test]
    fn specs_layer_package_kernel_cli() {
        let meta: serde_json::Value = serde_json::json!({
            "grid": [4], "args": { "n": 1024, "x": "f32[1024]" },
            "kernels": { "k": { "block": [32, 8], "args": { "n": "64" } } }
        });
        let cli =
            Spec { grid: Some([8, 1, 1]), block: None, args: [("x".to_string(), "f32[64]".to_string())].into(), ..Default::default() };
        let s = spec(Some(&meta), "k", &cli).unwrap();
        assert_eq!(s.grid, Some([8, 1, 1]));
        assert_eq!(s.block, Some([32, 8, 1]));
        assert_eq!(s.args["n"], "64");
        assert_eq!(s.args["x"], "f32[64]");
        assert!(configured(Some(&meta), "other"));
        let bad = serde_json::json!({ "kernels": { "k": { "grid": [0] } } });
        assert!(spec(Some(&bad), "k", &Spec::default()).unwrap_err().contains("[package.metadata.gpucheck.kernels.k]"));
    }

    #[test]
    fn missing_arguments_are_listed_with_how_to_give_them() {
        let src = ".version 7.0\n.target sm_70\n.address_size 64\n.visible .entry saxpy(.param .f32 p0, .param .u64 p1, .param .u64 p2, .param .u64 p3)\n{\n ret;\n}\n";
        let m = ptx::parse(src).unwrap();
        let rust = kernel(&[("a", "f32"), ("x", "*const f32"), ("y", "*mut f32"), ("n", "usize")]);
        let given: BTreeMap<String, String> = [("x".to_string(), "f32[8]".to_string()), ("3".to_string(), "8".to_string())].into();
        let mut mem = Global::default();
        let e = prepare(&m.functions[0], Some(&rust), &given, &mut mem).err().unwrap();
        assert!(e.starts_with("kernel `saxpy` needs values for:"), "{e}");
        assert!(e.contains("`a` (PTX `p0`) (.f32 f32): --arg a=1.5"), "{e}");
        assert!(e.contains("`y` (PTX `p2`) (.u64 *mut f32): --arg y=f32[N]"), "{e}");
        assert!(!e.contains("`x`") && !e.contains("`n`"), "given by name and by index: {e}");
        let given: BTreeMap<String, String> =
            [("a", "2"), ("x", "f32[8]:iota"), ("p2", "f32[8]"), ("n", "8")].iter().map(|(a, b)| (a.to_string(), b.to_string())).collect();
        let ok = prepare(&m.functions[0], Some(&rust), &given, &mut mem).unwrap();
        assert_eq!(ok.args.len(), 4);
        assert_eq!(ok.args[0], Arg::Bits(2.0f32.to_bits() as u64));
        assert_eq!(ok.buffers.len(), 2);
        assert_eq!(mem.read(ok.buffers[0].addr, 8).unwrap(), fill(Elem::F32, 2, Fill::Iota, 0));
        let bad: BTreeMap<String, String> =
            [("a", "2"), ("x", "f32"), ("y", "f32[8]"), ("n", "8")].iter().map(|(a, b)| (a.to_string(), b.to_string())).collect();
        assert!(prepare(&m.functions[0], Some(&rust), &bad, &mut mem).err().unwrap().contains("is a pointer (`*const f32`)"));
    }

    #[test]
    fn slices_are_pointer_and_length() {
        assert_eq!(slice_elem("&[f32]"), Some("f32"));
        assert_eq!(slice_elem("&'a mut [u32]"), Some("u32"));
        assert_eq!(slice_elem("&[u8; 4]"), None);
        assert_eq!(slice_elem("*const f32"), None);
        // Rust-CUDA's exp_slice(x: &[f32], y: &mut [f32]) is four PTX parameters (our NVVM-style fixture)
        let src = include_str!("../../../analysis/tests/nvvm/idioms.ptx");
        let m = ptx::parse(src).unwrap();
        let f = m.functions.iter().find(|f| f.name == "exp_slice").unwrap();
        let rust = kernel(&[("x", "&[f32]"), ("y", "&mut [f32]")]);
        let given: BTreeMap<String, String> =
            [("x", "f32[100]"), ("y", "f32[80]")].iter().map(|(a, b)| (a.to_string(), b.to_string())).collect();
        let mut mem = Global::default();
        let p = prepare(f, Some(&rust), &given, &mut mem).unwrap();
        assert_eq!(p.args.len(), 4);
        assert_eq!((p.args[1].clone(), p.args[3].clone()), (Arg::Bits(100), Arg::Bits(80)), "lengths from the buffers");
        assert_eq!(p.shown, ["x=f32[100]", "x.len=100", "y=f32[80]", "y.len=80"]);
        // an explicit length wins
        let mut given = given;
        given.insert("y.len".into(), "8".into());
        let p = prepare(f, Some(&rust), &given, &mut mem).unwrap();
        assert_eq!(p.args[3], Arg::Bits(8));
    }

    #[test]
    fn rust_parameter_names() {
        let dir = std::env::temp_dir().join(format!("gpucheck-params-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("src/deep")).unwrap();
        std::fs::write(
            dir.join("src/deep/k.rs"),
            "pub unsafe extern \"ptx-kernel\" fn saxpy(a: f32, x: *const f32,\n    mut y: *mut f32, n: usize, m: [u32; 2]) {}",
        )
        .unwrap();
        let p = rust_params(&dir, "saxpy").unwrap().params;
        let names: Vec<&str> = p.iter().map(|x| x.0.as_str()).collect();
        assert_eq!(names, ["a", "x", "y", "n", "m"]);
        assert_eq!(p[1].1, "*const f32");
        assert!(rust_params(&dir, "nothing").is_none());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
