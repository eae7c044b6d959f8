//! The PTX front end: lexer, AST and parser.
//!
//! Owns: turning PTX text into a syntax tree with positions, and the scans
//! of the text that need no parse (`file_paths`, `newlines`). Does not own:
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
    // (the name is searched for, not each line's start: a module has a few `.file` lines among thousands)
    src.match_indices(".file")
        .filter_map(|(at, _)| {
            // only blanks before it on its line
            let before = &src.as_bytes()[..at];
            let blanks = before.iter().rev().take_while(|&&b| b != b'\n' && b.is_ascii_whitespace()).count();
            if at > blanks && before[at - blanks - 1] != b'\n' {
                return None;
            }
            let line = &src[at + ".file".len()..];
            let rest = &line[..line.find('\n').unwrap_or(line.len())];
            let open = rest.find('"')?;
            let len = rest[open + 1..].find('"')?;
            Some(&rest[open + 1..open + 1 + len])
        })
        .collect()
}

/// The byte offsets of the newlines of `text`, in order, found eight bytes
/// at a time (a word without one is passed in one step). Not the `memchr`
/// crate: its search picks its instructions at run time, and the CPU
/// feature detection that takes costs a process about 0.1 ms on a virtual
/// machine (a tenth of a small file's whole check).
pub fn newlines(text: &str) -> impl Iterator<Item = usize> + '_ {
    const LOW7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
    const NL: u64 = 0x0a0a_0a0a_0a0a_0a0a;
    let bytes = text.as_bytes();
    let words = bytes.len() / 8;
    // words read so far, the high bits of the newlines of the last one not yet given,
    // and the bytes past the last whole word read so far
    let (mut word, mut found) = (0usize, 0u64);
    let mut tail = words * 8;
    std::iter::from_fn(move || loop {
        if found != 0 {
            let k = found.trailing_zeros() as usize / 8;
            found &= found - 1;
            return Some((word - 1) * 8 + k);
        }
        if word < words {
            let x = u64::from_le_bytes(bytes[word * 8..word * 8 + 8].try_into().unwrap_or([0; 8])) ^ NL;
            // the high bit of each byte that is zero (a newline), exactly: no carry crosses a byte
            found = !(((x & LOW7).wrapping_add(LOW7)) | x | LOW7);
            word += 1;
            continue;
        }
        while tail < bytes.len() {
            tail += 1;
            if bytes[tail - 1] == b'\n' {
                return Some(tail - 1);
            }
        }
        return None;
    })
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
        // blanks of any kind before it, a line end of two bytes after it; not one inside another line
        let src = "a\n \t.file 7 \"d.cu\"\r\n.file 8 \"e.cu\"\n\t// .file 9 \"no\"\n\tld.u32 %r1, [x]; .file 10 \"no\"";
        assert_eq!(super::file_paths(src), ["d.cu", "e.cu"]);
    }

    #[test]
    fn newlines_are_found_word_by_word() {
        // every length to past two words, newlines anywhere, and bytes a loose zero-byte test mistakes
        let mut next = crate::xorshift(7);
        for len in 0..40 {
            for _ in 0..50 {
                let text: String = (0..len).map(|_| ['\n', '\u{b}', 'a', '\u{8a}', '\u{1}', ' '][next(6) as usize]).collect();
                let want: Vec<usize> = text.bytes().enumerate().filter(|&(_, b)| b == b'\n').map(|(i, _)| i).collect();
                assert_eq!(super::newlines(&text).collect::<Vec<_>>(), want, "{text:?}");
            }
        }
    }
}
