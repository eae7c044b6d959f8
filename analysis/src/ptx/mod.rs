//! The PTX front end: lexer, AST and parser.
//!
//! Owns: turning PTX text into a syntax tree with positions. Does not own:
//! control flow, SSA or any analysis (see `crate::ir`).

pub mod ast;
pub mod lexer;
pub mod parser;

pub use ast::*;
pub use parser::{parse, ParseError};

/// The source files a module's `.file` directives name, in order, found
/// by a scan of the text that does not parse the module (for reading the
/// sources' signatures before the check). The scan looks for `.file` with
/// `memmem` and checks that only blanks precede it on its line: a file's
/// few directives are found without visiting its other lines one by one.
pub fn file_paths(src: &str) -> Vec<&str> {
    let bytes = src.as_bytes();
    memchr::memmem::find_iter(bytes, b".file")
        .filter(|&at| bytes[..at].iter().rev().take_while(|&&b| b != b'\n').all(|b| b.is_ascii_whitespace()))
        .filter_map(|at| {
            let rest = &src[at + ".file".len()..];
            let rest = &rest[..rest.find('\n').unwrap_or(rest.len())];
            let open = rest.find('"')?;
            let len = rest[open + 1..].find('"')?;
            Some(&rest[open + 1..open + 1 + len])
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn file_directives_are_scanned() {
        let src = "\t.file\t1 \"/src/a.cu\"\n.file 2 \"b.h\", 1700000000, 42\n// .file 3 \"no\"\n";
        assert_eq!(super::file_paths(src), ["/src/a.cu", "b.h"]);
        // a directive's name is looked for on its own line only; a quote on the next line is not its path
        let src = "x .file 1 \"no\"\n  .file 4\n\"no\"\n.file\t5 \"c.cu\"";
        assert_eq!(super::file_paths(src), ["c.cu"]);
        assert!(super::file_paths("").is_empty() && super::file_paths(".file").is_empty());
    }
}
