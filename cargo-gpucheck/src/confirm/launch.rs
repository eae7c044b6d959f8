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
use std::collections::BTreeMap;
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
}

fn apply_table(spec: &mut Spec, t: &serde_json::Value, where_: &str) -> Result<(), String> {
    if let Some(g) = t.get("grid") {
        spec.grid = Some(crate::config::dims(g, "grid").map_err(|e| format!("{e} in {where_}"))?);
    }
    if let Some(b) = t.get("block") {
        spec.block = Some(crate::config::block(b).map_err(|e| format!("{e} in {where_}"))?);
    }
    if let Some(a) = t.get("args") {
        let obj = a.as_object().ok_or_else(|| format!("expected `args = {{ name = \"f32[1024]\", … }}` in {where_}"))?;
        for (k, v) in obj {
            let text = match v {
                serde_json::Value::String(s) => s.clone(),
                serde_json::Value::Number(n) => n.to_string(),
                other => return Err(format!("argument `{k}` in {where_}: expected a string or number, found `{other}`")),
            };
            parse_value(&text).map_err(|e| format!("argument `{k}` in {where_}: {e}"))?;
            spec.args.insert(k.clone(), text);
        }
    }
    Ok(())
}

/// The launch of `kernel`: package table, kernel table, command line.
pub fn spec(meta: Option<&serde_json::Value>, kernel: &str, cli: &Spec) -> Result<Spec, String> {
    let mut s = Spec::default();
    if let Some(m) = meta {
        apply_table(&mut s, m, "[package.metadata.gpucheck]")?;
        if let Some(k) = m.get("kernels").and_then(|k| k.get(kernel)) {
            apply_table(&mut s, k, &format!("[package.metadata.gpucheck.kernels.{kernel}]"))?;
        }
    }
    if cli.grid.is_some() {
        s.grid = cli.grid;
    }
    if cli.block.is_some() {
        s.block = cli.block;
    }
    s.args.extend(cli.args.iter().map(|(k, v)| (k.clone(), v.clone())));
    Ok(s)
}

/// Whether the package metadata gives `kernel` a grid (so `confirm` runs it by default).
pub fn configured(meta: Option<&serde_json::Value>, kernel: &str) -> bool {
    meta.is_some_and(|m| m.get("grid").is_some() || m.get("kernels").and_then(|k| k.get(kernel)).is_some_and(|k| k.get("grid").is_some()))
}

/// `(name, type)` of the parameters of `fn kernel(…)` in the `.rs` files under `root`.
pub fn rust_params(root: &Path, kernel: &str) -> Option<Vec<(String, String)>> {
    let mut stack = vec![root.join("src")];
    let needle = format!("fn {kernel}(");
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).ok()?.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
                continue;
            }
            if p.extension().is_none_or(|x| x != "rs") {
                continue;
            }
            let text = std::fs::read_to_string(&p).ok()?;
            let Some(at) = text.find(&needle) else { continue };
            let rest = &text[at + needle.len()..];
            // the parameter list up to the matching `)`
            let mut depth = 1;
            let mut end = 0;
            for (i, c) in rest.char_indices() {
                match c {
                    '(' | '<' | '[' => depth += 1,
                    ')' | '>' | ']' => {
                        depth -= 1;
                        if depth == 0 {
                            end = i;
                            break;
                        }
                    }
                    _ => {}
                }
            }
            let list = &rest[..end];
            let mut params = Vec::new();
            let (mut depth, mut start) = (0, 0);
            let bytes: Vec<char> = list.chars().collect();
            let mut parts = Vec::new();
            for (i, c) in bytes.iter().enumerate() {
                match c {
                    '(' | '<' | '[' => depth += 1,
                    ')' | '>' | ']' => depth -= 1,
                    ',' if depth == 0 => {
                        parts.push(bytes[start..i].iter().collect::<String>());
                        start = i + 1;
                    }
                    _ => {}
                }
            }
            parts.push(bytes[start..].iter().collect::<String>());
            for part in parts.iter().map(|s| s.trim()).filter(|s| !s.is_empty()) {
                let (name, ty) = part.split_once(':')?;
                let name = name.trim().trim_start_matches("mut ").trim();
                params.push((name.to_string(), ty.trim().to_string()));
            }
            return Some(params);
        }
    }
    None
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
}

/// The PTX parameters' values, with the buffers made for them.
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
pub struct Prepared {
    pub args: Vec<Arg>,
    pub buffers: Vec<Buffer>,
    /// `name=value` as used, for the report.
    pub shown: Vec<String>,
}

/// Every name an argument of kernel `f` can be given by: Rust parameter
/// names (and `NAME.len` of a slice), PTX parameter names, indices.
pub fn param_names(f: &ptx::Function<'_>, rust: Option<&[(String, String)]>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for (n, t) in rust.unwrap_or(&[]) {
        out.push(n.clone());
        if slice_elem(t).is_some() {
            out.push(format!("{n}.len"));
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
pub fn prepare(
    f: &ptx::Function<'_>,
    rust: Option<&[(String, String)]>,
    given: &BTreeMap<String, String>,
    mem: &mut Global,
) -> Result<Prepared, String> {
    // a slice parameter (`&[T]`, `&mut [T]`) is a (pointer, length) pair in PTX (Rust-CUDA)
    let expanded: Option<Vec<(String, String)>> = rust.map(|r| {
        r.iter()
            .flat_map(|(n, t)| match slice_elem(t) {
                Some(e) => vec![(n.clone(), format!("*const {e}")), (format!("{n}.len"), "usize".to_string())],
                None => vec![(n.clone(), t.clone())],
            })
            .collect()
    });
    let rust = expanded.as_deref().filter(|r| r.len() == f.params.len());
    let mut args = Vec::new();
    let mut buffers = Vec::new();
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
        let Some((key, text)) = found else {
            let pointee = rty.and_then(|t| t.strip_prefix("*const ").or_else(|| t.strip_prefix("*mut "))).map(str::trim);
            let hint = match (pointee, Ty::of_decl(p.ty)) {
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
        let _ = key;
        match parse_value(&text)? {
            Value::Buffer { elem, len, fill: how } => {
                if !matches!(p.ty, ".u64" | ".b64" | ".s64") {
                    return Err(format!("argument `{display}` is a {} parameter, not a pointer: give a value, not `{text}`", p.ty));
                }
                let bytes = fill(elem, len, how, i as u64 + 1);
                let addr = mem.alloc(&bytes);
                lens.insert(display.clone(), len);
                buffers.push(Buffer { addr, bytes });
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
                if p.array.is_some() {
                    return Err(format!(
                        "argument `{display}` is an aggregate (`{} {}[{}]`), which confirm cannot fill yet",
                        p.ty,
                        p.name,
                        p.array.unwrap_or(0)
                    ));
                }
                args.push(Arg::Bits(scalar_bits(&s, p.ty, rty).map_err(|e| format!("argument `{display}`: {e}"))?));
            }
        }
        shown.push(format!("{display}={text}"));
    }
    if !missing.is_empty() {
        return Err(format!("kernel `{}` needs values for:\n{}", f.name, missing.join("\n")));
    }
    Ok(Prepared { args, buffers, shown })
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let cli = Spec { grid: Some([8, 1, 1]), block: None, args: [("x".to_string(), "f32[64]".to_string())].into() };
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
        let rust: Vec<(String, String)> = [("a", "f32"), ("x", "*const f32"), ("y", "*mut f32"), ("n", "usize")]
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect();
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
        let rust: Vec<(String, String)> =
            [("x", "&[f32]"), ("y", "&mut [f32]")].iter().map(|(a, b)| (a.to_string(), b.to_string())).collect();
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
        let p = rust_params(&dir, "saxpy").unwrap();
        let names: Vec<&str> = p.iter().map(|x| x.0.as_str()).collect();
        assert_eq!(names, ["a", "x", "y", "n", "m"]);
        assert_eq!(p[1].1, "*const f32");
        assert!(rust_params(&dir, "nothing").is_none());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
