//! The PTX front end: lexer, AST and parser.
//!
//! Owns: turning PTX text into a syntax tree with positions, and the scan
//! of the text for its line ends (`newlines`). Does not own:
//! control flow, SSA or any analysis (see `crate::ir`).

pub mod ast;
pub mod lexer;
pub mod parser;

pub use ast::*;
pub use parser::{parse, ParseError};

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
