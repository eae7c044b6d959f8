//! Names as their authors wrote them: Rust symbols (legacy and v0)
//! demangled without their hash, C++ (Itanium) symbols demangled for notes.
//!
//! Kernels' parameter names as CUDA C sources write them
//! ([`c_kernel_params`]).
//!
//! Owns: demangling (each name remembered per thread, a bounded cache),
//! reading kernel signatures. Does not own: which name a
//! message shows (the lints).

/// A symbol as people write it: Rust (legacy and v0) names demangled
/// without their hash, others unchanged.
pub fn demangle(name: &str) -> String {
    remembered(&DEMANGLED, name, |name| match rustc_demangle::try_demangle(name) {
        Ok(d) => format!("{d:#}"),
        Err(_) => name.to_string(),
    })
}

thread_local! {
    /// The names [`demangle`] and [`readable`] gave, by symbol: a module's
    /// few kernel names are asked for by every message and option that
    /// names one (a C++ symbol costs tens of thousands of instructions to
    /// demangle, or to find it is not a Rust one).
    static DEMANGLED: std::cell::RefCell<rustc_hash::FxHashMap<String, String>> = Default::default();
    static READABLE: std::cell::RefCell<rustc_hash::FxHashMap<String, String>> = Default::default();
}

/// The names a cache keeps at most (then it starts again: a module of many
/// kernels asks for each a few times, one after the other).
const REMEMBERED: usize = 1 << 12;

/// `make(name)`, remembered in `cache`.
fn remembered(
    cache: &'static std::thread::LocalKey<std::cell::RefCell<rustc_hash::FxHashMap<String, String>>>,
    name: &str,
    make: impl FnOnce(&str) -> String,
) -> String {
    if let Some(d) = cache.with(|c| c.borrow().get(name).cloned()) {
        return d;
    }
    let d = make(name);
    cache.with(|c| {
        let mut c = c.borrow_mut();
        if c.len() >= REMEMBERED {
            c.clear();
        }
        c.insert(name.to_string(), d.clone());
    });
    d
}

/// Is `name` a Rust symbol: v0 (`_R…`), or legacy with its hash
/// (`_ZN…17h<16 hex digits>E`; a C++ name never ends so)?
pub fn is_rust(name: &str) -> bool {
    if name.starts_with("_R") {
        return rustc_demangle::try_demangle(name).is_ok();
    }
    let hashed = name
        .strip_suffix('E')
        .and_then(|n| n.len().checked_sub(19).map(|k| &n[k..]))
        .is_some_and(|h| h.starts_with("17h") && h[3..].bytes().all(|b| b.is_ascii_hexdigit()));
    name.starts_with("_ZN") && hashed && rustc_demangle::try_demangle(name).is_ok()
}

/// A function's name as its author wrote it, for notes: Rust names are
/// demangled already; C++ (Itanium) names are demangled here.
pub fn readable(name: &str) -> String {
    remembered(&READABLE, name, readable_now)
}

fn readable_now(name: &str) -> String {
    // an older nvcc's function-local static: `_Z15sumReduce_blocki$__cuda_local_var_19906_38_non_const_shared`
    if let Some((func, var)) = name.split_once("$__cuda_local_var_") {
        let var = var.trim_start_matches(|c: char| c.is_ascii_digit() || c == '_');
        let var = var.strip_prefix("non_const_").or_else(|| var.strip_prefix("const_")).unwrap_or(var);
        return format!("{}::{var}", bare(func));
    }
    let cpp = || cpp_demangle::Symbol::new(name).ok()?.demangle(&cpp_demangle::DemangleOptions::default()).ok();
    match name.starts_with("_Z").then(cpp).flatten() {
        Some(d) => d,
        None => name.to_string(),
    }
}

/// The names a user may call PTX function `name` by: the PTX name, the
/// demangled Rust path and its last segment (`mangled_one` for
/// `t1::mangled_one`), and a C++ kernel's source name ([`bare`]), each once.
pub fn aliases(name: &str) -> Vec<String> {
    let mut out = vec![name.to_string()];
    let rust = demangle(name);
    let last = rust.rsplit("::").next().unwrap_or(&rust).to_string();
    for n in [rust.clone(), last, bare(name)] {
        if !out.contains(&n) {
            out.push(n);
        }
    }
    out
}

/// A kernel's name as its source declares it: a C++ (Itanium) symbol's
/// unqualified name without template arguments or parameters (`kern` for
/// `_ZN2ns4kernILi256EEEvPf`), others as [`demangle`] gives them.
pub fn bare(name: &str) -> String {
    let full = readable(name);
    if full == name {
        return demangle(name);
    }
    // cut the parameter list and template arguments at depth 0 (an anonymous
    // namespace's parentheses are not a parameter list)
    let full = full.replace("(anonymous namespace)", "{anonymous}");
    let mut depth = 0i32;
    let mut head = String::new();
    for c in full.chars() {
        match c {
            '<' => depth += 1,
            '>' => depth -= 1,
            '(' if depth == 0 => break,
            _ if depth == 0 => head.push(c),
            _ => {}
        }
    }
    let last = head.rsplit("::").next().unwrap_or(&head);
    last.split_whitespace().last().unwrap_or(last).to_string()
}

/// The parameter names of every `__global__` function CUDA C source
/// `text` defines or declares, by name, in order (an unnamed parameter
/// is ""). A name declared twice with different names (overloads) is left
/// out: which PTX function is which is not known from the name.
pub fn c_kernel_params(text: &str) -> rustc_hash::FxHashMap<String, Vec<String>> {
    let code = strip_comments(text);
    let mut out: rustc_hash::FxHashMap<String, Vec<String>> = rustc_hash::FxHashMap::default();
    let mut clash = Vec::new();
    let mut rest = code.as_str();
    while let Some(i) = rest.find("__global__") {
        rest = &rest[i + "__global__".len()..];
        let Some((name, params)) = signature(rest) else { continue };
        match out.get(&name) {
            Some(old) if *old != params => clash.push(name),
            Some(_) => {}
            None => {
                out.insert(name, params);
            }
        }
    }
    for n in clash {
        out.remove(&n);
    }
    out
}

/// `text` with comments and string literals blanked (lengths kept).
fn strip_comments(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < b.len() {
        if b[i..].starts_with(b"//") {
            while i < b.len() && b[i] != b'\n' {
                out.push(' ');
                i += 1;
            }
        } else if b[i..].starts_with(b"/*") {
            let end = text[i + 2..].find("*/").map_or(b.len(), |e| i + 2 + e + 2);
            out.extend(std::iter::repeat_n(' ', end - i));
            i = end;
        } else if b[i] == b'"' {
            let mut j = i + 1;
            while j < b.len() && b[j] != b'"' && b[j] != b'\n' {
                j += if b[j] == b'\\' { 2 } else { 1 };
            }
            let end = (j + 1).min(b.len());
            out.extend(std::iter::repeat_n(' ', end - i));
            i = end;
        } else {
            let c = text[i..].chars().next().expect("in bounds");
            out.push(c);
            i += c.len_utf8();
        }
    }
    out
}

/// The name and parameter names of the function whose declaration
/// follows `__global__` in `rest`: the first identifier followed by `(`
/// that is not an attribute (`__launch_bounds__(256)`).
fn signature(rest: &str) -> Option<(String, Vec<String>)> {
    let mut s = rest;
    loop {
        let open = s.find(['(', ';', '{'])?;
        if s.as_bytes()[open] != b'(' {
            return None;
        }
        let name = last_ident(&s[..open])?;
        let close = open + 1 + matching(&s[open + 1..])?;
        if matches!(name, "__launch_bounds__" | "__attribute__" | "__declspec" | "alignas" | "__align__") {
            s = &s[close + 1..];
            continue;
        }
        let list = &s[open + 1..close];
        let params = match list.trim() {
            "" | "void" => Vec::new(),
            _ => split_top(list).into_iter().map(param_name).collect(),
        };
        return Some((name.to_string(), params));
    }
}

/// The identifier `text` ends with.
fn last_ident(text: &str) -> Option<&str> {
    let t = text.trim_end();
    let start = t.rfind(|c: char| !(c.is_alphanumeric() || c == '_')).map_or(0, |i| i + 1);
    let id = &t[start..];
    (!id.is_empty() && !id.starts_with(|c: char| c.is_ascii_digit())).then_some(id)
}

/// The offset in `s` of the `)` closing a `(` just before it.
fn matching(s: &str) -> Option<usize> {
    let mut depth = 0i32;
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' if depth == 0 => return Some(i),
            ')' => depth -= 1,
            _ => {}
        }
    }
    None
}

/// `list` split at its top-level commas (not inside brackets or template
/// arguments): a C or Rust parameter list's items.
pub fn split_top(list: &str) -> Vec<&str> {
    let (mut depth, mut start, mut parts) = (0i32, 0, Vec::new());
    for (i, c) in list.char_indices() {
        match c {
            '(' | '<' | '[' | '{' => depth += 1,
            ')' | '>' | ']' | '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&list[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&list[start..]);
    parts
}

/// The name one parameter declaration declares (`n` for `const int n = 4`,
/// `a` for `float a[]`, `f` for `void (*f)(int)`), "" when unnamed.
fn param_name(decl: &str) -> String {
    let d = decl.split('=').next().unwrap_or("").trim();
    // a function pointer: the name inside the first parentheses
    if let Some(inner) = d.strip_suffix(')').and_then(|x| x.find("(*").map(|i| &x[i + 2..])) {
        return inner.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
    }
    let d = d.split('[').next().unwrap_or("").trim_end();
    let words: Vec<&str> = d.split(|c: char| !(c.is_alphanumeric() || c == '_')).filter(|w| !w.is_empty()).collect();
    const NOT_NAMES: &[&str] = &[
        "const",
        "volatile",
        "unsigned",
        "signed",
        "int",
        "char",
        "short",
        "long",
        "float",
        "double",
        "bool",
        "void",
        "__restrict__",
        "__restrict",
        "restrict",
        "struct",
        "size_t",
        "half",
        "__half",
        "__nv_bfloat16",
        "auto",
    ];
    match words.last() {
        // a lone type (`int`, `float*`) names nothing
        Some(w) if words.len() >= 2 && !NOT_NAMES.contains(w) => w.to_string(),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::{demangle, readable, readable_now, DEMANGLED, REMEMBERED};

    /// A name asked for again is the name made the first time, and the
    /// cache keeps at most its bound.
    #[test]
    fn names_remembered_are_the_names_made() {
        let cpp = "_ZN2ns4kernILi256EEEvPf";
        assert_eq!(readable(cpp), readable_now(cpp));
        assert_eq!(readable(cpp), readable_now(cpp));
        let rust = "_ZN4core3fmt5write17h0123456789abcdefE";
        assert_eq!(demangle(rust), "core::fmt::write");
        assert_eq!(demangle(rust), "core::fmt::write");
        for i in 0..REMEMBERED + 5 {
            let n = format!("kernel_{i}");
            assert_eq!(demangle(&n), n);
        }
        assert!(DEMANGLED.with(|c| c.borrow().len()) <= REMEMBERED);
        assert_eq!(demangle(rust), "core::fmt::write");
    }

    #[test]
    fn rust_symbols_are_told_from_cpp() {
        assert!(super::is_rust("_ZN4core6result13unwrap_failed17h02aadeb87602f26eE"));
        assert!(super::is_rust("_RNvCs1234_7mycrate4main"));
        // C++: a function (its parameters follow the name), a namespaced variable, a plain name
        assert!(!super::is_rust("_ZN2ns6kernelEPf"));
        assert!(!super::is_rust("_ZN2ns5arrayE"));
        assert!(!super::is_rust("g2p2g"));
    }

    #[test]
    fn callers_are_named_as_written() {
        assert_eq!(super::readable("_Z5outerPKfj"), "outer(float const*, unsigned int)");
        assert_eq!(super::readable("two_levels"), "two_levels");
        assert_eq!(super::readable("_Zbogus"), "_Zbogus");
        assert_eq!(super::readable("_Z15sumReduce_blocki$__cuda_local_var_19906_38_non_const_shared"), "sumReduce_block::shared");
        // a kernel in an anonymous namespace
        assert_eq!(super::bare("_ZN12_GLOBAL__N_16kernelEPj"), "kernel");
    }

    #[test]
    fn kernels_are_found_by_their_source_name() {
        assert_eq!(super::bare("_Z6kernelPfi"), "kernel");
        assert_eq!(super::bare("_ZN2ns4kernILi256EEEvPf"), "kern");
        assert_eq!(super::bare("plain"), "plain");
    }

    #[test]
    fn cuda_signatures_give_parameter_names() {
        let src = r#"
            // __global__ void commented(int x) {}
            template <int B>
            __global__ void __launch_bounds__(256) reduce(const float *__restrict__ in, float* out, unsigned n) {}
            extern "C" __global__ void k2(float a[], int, void (*cb)(int), const Pair p) ;
            __global__ void none(void) {}
            __global__ void over(int a) {}
            __global__ void over(float b) {}
            /* __global__ void hidden(int h) */
            const char *s = "__global__ void quoted(int q)";
        "#;
        let m = super::c_kernel_params(src);
        assert_eq!(m["reduce"], ["in", "out", "n"]);
        assert_eq!(m["k2"], ["a", "", "cb", "p"]);
        assert_eq!(m["none"], Vec::<String>::new());
        assert!(!m.contains_key("over") && !m.contains_key("commented") && !m.contains_key("hidden") && !m.contains_key("quoted"));
    }
}
