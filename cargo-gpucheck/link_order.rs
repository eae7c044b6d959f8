//! How the binary is linked (see build.rs): the linker script that places
//! the functions a check runs first, and the static unwinder; shared by the
//! build script and its test (`tests/link_order.rs`).

/// Whether the binary is linked by the toolchain's LLD, which adds a
/// script's sections to its default layout: Rust 1.90 and later on x86-64
/// Linux, unless a linker is configured (`RUSTC_LINKER`, or one in the
/// flags).
pub fn links_with_rust_lld() -> bool {
    if std::env::var_os("RUSTC_LINKER").is_some() {
        return false;
    }
    let flags = std::env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default();
    if flags.contains("linker") || flags.contains("link-self-contained") {
        return false;
    }
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let Ok(out) = std::process::Command::new(rustc).arg("-vV").output() else { return false };
    let text = String::from_utf8_lossy(&out.stdout);
    let release = text.lines().find_map(|l| l.strip_prefix("release: ")).unwrap_or("");
    let mut parts = release.split(['.', '-']).map(|p| p.parse::<u32>().unwrap_or(0));
    let (major, minor) = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    (major, minor) >= (1, 90)
}

/// A linker script that gives the default layout's `.text` (`INSERT
/// BEFORE .init`, where it is) the functions `list` names first, in its
/// order (one mangled name a line; `#` starts a comment), then the same
/// names as patterns without what changes from build to build ([`pattern`]:
/// a function whose hash changed, with any other copy of a generic function
/// of its name), then the rest. Each function is in a section of its own,
/// `.text.` and its mangled name; an input section goes to the first
/// description that matches it. (The output section keeps its name:
/// valgrind finds the line tables of code in `.text` only.)
pub fn hot_text_script(list: &str) -> String {
    // (a line that is not a symbol's name, a letter or `_` then letters, digits, `_`, `$`
    // and `.`, is passed over: one with other characters would stop the link)
    let name_like = |l: &&str| {
        l.bytes().next().is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
            && l.bytes().all(|b| b.is_ascii_alphanumeric() || b"_$.".contains(&b))
    };
    let names: Vec<&str> = list.lines().map(|l| l.split('#').next().unwrap_or("").trim()).filter(name_like).collect();
    let mut patterns: Vec<String> = Vec::new();
    for p in names.iter().map(|n| pattern(n)) {
        if !names.contains(&p.as_str()) && !patterns.contains(&p) {
            patterns.push(p);
        }
    }
    let mut out = String::from("SECTIONS\n{\n  .text :\n  {\n");
    // (a function the compiler takes for cold, `#[cold]` as a vector's growth is, is in
    // `.text.unlikely.` and its name)
    for x in names.iter().copied().chain(patterns.iter().map(String::as_str)) {
        out.push_str(&format!("    *(.text.{x} .text.unlikely.{x})\n"));
    }
    out.push_str("    *(.text .text.*)\n  }\n}\nINSERT BEFORE .init;\n");
    out
}

/// A mangled name with `*` for what changes with the toolchain and with a
/// crate's dependencies: a legacy name's hash (`17h` and 16 hex digits,
/// then `E`) and a v0 name's crate disambiguators (`Cs…_`). (A wildcard
/// in place of any part still matches the name itself.)
pub fn pattern(name: &str) -> String {
    let mut p = name.to_string();
    if let Some(hash) = p.len().checked_sub(20).filter(|&k| p.is_char_boundary(k) && is_legacy_hash(&p[k..])) {
        p.replace_range(hash + 3.., "*");
    }
    let mut out = String::with_capacity(p.len());
    let mut rest = p.as_str();
    while let Some(k) = rest.find("Cs") {
        let after = &rest[k + 2..];
        let len = after.bytes().take_while(u8::is_ascii_alphanumeric).count();
        out.push_str(&rest[..k + 2]);
        if len > 0 && after[len..].starts_with('_') {
            out.push('*');
            rest = &after[len..];
        } else {
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

/// `17h`, 16 hex digits and `E`: the hash that ends a legacy mangled name.
fn is_legacy_hash(s: &str) -> bool {
    s.len() == 20 && s.starts_with("17h") && s.ends_with('E') && s[3..19].bytes().all(|b| b.is_ascii_hexdigit())
}

/// The folder of GCC's static unwinder, `libgcc_eh.a`, as the C compiler
/// that links the binary (`RUSTC_LINKER` where one is configured, else
/// `cc`) finds it; `None` where it has none.
pub fn static_unwinder_dir() -> Option<std::path::PathBuf> {
    let cc = std::env::var("RUSTC_LINKER").unwrap_or_else(|_| "cc".into());
    let out = std::process::Command::new(cc).arg("-print-file-name=libgcc_eh.a").output().ok()?;
    let path = std::path::PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    // (a compiler without it prints the name alone)
    (out.status.success() && path.is_absolute() && path.is_file()).then(|| path.parent().map(std::path::Path::to_path_buf)).flatten()
}
