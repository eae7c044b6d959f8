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
/// sources' signatures before the check).
pub fn file_paths(src: &str) -> Vec<&str> {
    src.lines()
        .filter_map(|l| l.trim_start().strip_prefix(".file"))
        .filter_map(|rest| {
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
    }
}
