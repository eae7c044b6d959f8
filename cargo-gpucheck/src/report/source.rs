//! The source texts reports quote: a text with its line starts indexed
//! once, and the files findings point into, each read once per thread
//! (a file with hundreds of findings is not read, nor its lines found,
//! hundreds of times).

use std::path::{Path, PathBuf};
use std::rc::Rc;

/// A source text with its line starts indexed once, when first asked for
/// (a module's PTX is indexed only when a diagnostic quotes it).
pub struct SourceText<'a> {
    pub text: &'a str,
    /// (a file's, indexed when it was read; else made here)
    given: Option<&'a [usize]>,
    made: std::cell::OnceCell<Vec<usize>>,
}

impl<'a> SourceText<'a> {
    pub fn new(text: &'a str) -> Self {
        SourceText { text, given: None, made: std::cell::OnceCell::new() }
    }

    fn starts(&self) -> &[usize] {
        self.given.unwrap_or_else(|| self.made.get_or_init(|| starts(self.text)))
    }

    /// Lines `first..=last` (1-based), with their ends.
    pub fn window(&self, first: u32, last: u32) -> Option<&'a str> {
        let starts = self.starts();
        let s = *starts.get(first.checked_sub(1)? as usize)?;
        let e = starts.get(last as usize).copied().unwrap_or(self.text.len());
        self.text.get(s..e.max(s))
    }

    /// Line `line` (1-based) without its end, and where it starts: the
    /// lines `str::lines` gives.
    pub fn line(&self, line: u32) -> Option<(usize, &'a str)> {
        let s = *self.starts().get(line.checked_sub(1)? as usize)?;
        (s < self.text.len()).then(|| (s, self.text[s..].lines().next().unwrap_or("")))
    }
}

/// The byte of column `col` (1-based, in characters) of line `text`, or
/// the line's end past it.
pub fn column_byte(text: &str, col: u32) -> usize {
    text.char_indices().nth(col.saturating_sub(1) as usize).map_or(text.len(), |(b, _)| b)
}

/// Where each line of `text` starts.
fn starts(text: &str) -> Vec<usize> {
    std::iter::once(0).chain(gpucheck_analysis::ptx::newlines(text).map(|i| i + 1)).collect()
}

/// A file read for the reports.
pub struct File {
    text: String,
    starts: Vec<usize>,
}

impl File {
    pub fn text(&self) -> SourceText<'_> {
        SourceText { text: &self.text, given: Some(&self.starts), made: std::cell::OnceCell::new() }
    }
}

thread_local! {
    static FILES: std::cell::RefCell<rustc_hash::FxHashMap<PathBuf, Option<Rc<File>>>> = Default::default();
}

/// File `p`, read the first time it is asked for (`None`: it cannot be
/// read as text).
pub fn file(p: &Path) -> Option<Rc<File>> {
    FILES.with(|files| {
        files
            .borrow_mut()
            .entry(p.to_path_buf())
            .or_insert_with(|| {
                let text = std::fs::read_to_string(p).ok()?;
                Some(Rc::new(File { starts: starts(&text), text }))
            })
            .clone()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lines as `str::lines` gives them (`\r\n` ends, no line after the
    /// last end), windows with their ends.
    #[test]
    fn lines_and_windows() {
        let t = SourceText::new("a\r\nbc\n\nd\n");
        let lines: Vec<Option<&str>> = (0..6).map(|n| t.line(n).map(|x| x.1)).collect();
        assert_eq!(lines, [None, Some("a"), Some("bc"), Some(""), Some("d"), None]);
        assert_eq!(t.line(2), Some((3, "bc")));
        assert_eq!(t.window(2, 3), Some("bc\n\n"));
        assert_eq!(t.window(4, 9), Some("d\n"));
        assert_eq!(SourceText::new("x").line(1), Some((0, "x")));
        assert!(file(Path::new("/nonexistent/gpucheck")).is_none());
    }
}
