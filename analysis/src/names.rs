//! Names as their authors wrote them: Rust symbols (legacy and v0)
//! demangled without their hash, C++ (Itanium) symbols demangled for notes.
//!
//! Owns: demangling. Does not own: which name a message shows (the lints).

/// A symbol as people write it: Rust (legacy and v0) names demangled
/// without their hash, others unchanged.
pub fn demangle(name: &str) -> String {
    match rustc_demangle::try_demangle(name) {
        Ok(d) => format!("{d:#}"),
        Err(_) => name.to_string(),
    }
}

/// A function's name as its author wrote it, for notes: Rust names are
/// demangled already; C++ (Itanium) names are demangled here.
pub fn readable(name: &str) -> String {
    let cpp = || cpp_demangle::Symbol::new(name).ok()?.demangle(&cpp_demangle::DemangleOptions::default()).ok();
    match name.starts_with("_Z").then(cpp).flatten() {
        Some(d) => d,
        None => name.to_string(),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn callers_are_named_as_written() {
        assert_eq!(super::readable("_Z5outerPKfj"), "outer(float const*, unsigned int)");
        assert_eq!(super::readable("two_levels"), "two_levels");
        assert_eq!(super::readable("_Zbogus"), "_Zbogus");
    }
}
