//! PTX lexer: turns PTX text into tokens that borrow from the input and carry
//! their line and column.
//!
//! Owns: the token grammar (identifiers with dots, `%`/`$` names, integer and
//! float literals in every PTX spelling, strings, punctuation, comments).
//! Does not own: any knowledge of directives or instructions (see `parser`).
//! The lexer never fails: a byte it does not know becomes a `Tok::Unknown`
//! token so the parser can report it with its position.

/// A position in the PTX text (1-based line and column, 0-based byte offset).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Pos {
    pub line: u32,
    pub col: u32,
    pub offset: u32,
}

/// Token kinds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tok {
    /// Identifier, directive (`.reg`), register (`%r1`), label (`$L__BB0_1`),
    /// or a dotted opcode (`ld.global.f32`).
    Ident,
    /// Integer literal: decimal, hex `0x..`, octal, binary, optional `U` suffix.
    Int,
    /// Float literal: `0f3F800000`, `0d…`, or decimal with `.`/exponent.
    Float,
    /// `"…"` string (the token text includes the quotes).
    Str,
    /// One punctuation byte: `{ } ( ) [ ] , ; : @ ! + - < > = | * /`.
    Punct(u8),
    /// A byte that is not part of PTX.
    Unknown,
    /// End of input.
    Eof,
}

#[derive(Clone, Copy, Debug)]
pub struct Token<'a> {
    pub kind: Tok,
    pub text: &'a str,
    pub pos: Pos,
}

impl Token<'_> {
    pub fn is_punct(&self, c: u8) -> bool {
        self.kind == Tok::Punct(c)
    }
}

/// Streaming lexer. `next_token` skips whitespace and comments.
#[derive(Clone)]
pub struct Lexer<'a> {
    src: &'a str,
    bytes: &'a [u8],
    i: usize,
    line: u32,
    line_start: usize,
}

/// Byte classes, looked up once per byte.
const START: u8 = 1; // may start an identifier
const CONT: u8 = 2; // may continue an identifier
const PUNCT: u8 = 4; // a punctuation token
const SPACE: u8 = 8; // whitespace other than newline

const fn classes() -> [u8; 256] {
    let mut t = [0u8; 256];
    let mut c = 0;
    while c < 256 {
        let b = c as u8;
        if b.is_ascii_alphabetic() || b == b'_' || b == b'$' {
            t[c] = START | CONT;
        } else if b.is_ascii_digit() {
            t[c] = CONT;
        }
        c += 1;
    }
    t[b'%' as usize] = START;
    t[b'.' as usize] = START | CONT;
    let p = b"{}()[],;:@!+-<>=|*/";
    let mut i = 0;
    while i < p.len() {
        t[p[i] as usize] = PUNCT;
        i += 1;
    }
    t[b' ' as usize] = SPACE;
    t[b'\t' as usize] = SPACE;
    t[b'\r' as usize] = SPACE;
    t[0x0b] = SPACE;
    t[0x0c] = SPACE;
    t
}

static CLASS: [u8; 256] = classes();

#[inline]
fn ident_start(b: u8) -> bool {
    CLASS[b as usize] & START != 0
}

#[inline]
fn ident_cont(b: u8) -> bool {
    CLASS[b as usize] & CONT != 0
}

impl<'a> Lexer<'a> {
    pub fn new(src: &'a str) -> Self {
        Lexer { src, bytes: src.as_bytes(), i: 0, line: 1, line_start: 0 }
    }

    /// Current position (of the next byte to be read).
    pub fn pos(&self) -> Pos {
        Pos { line: self.line, col: (self.i - self.line_start + 1) as u32, offset: self.i as u32 }
    }

    /// Move to `pos` (a position previously produced by this lexer's source).
    pub fn seek(&mut self, pos: Pos) {
        self.i = (pos.offset as usize).min(self.bytes.len());
        self.line = pos.line;
        self.line_start = self.i.saturating_sub(pos.col.saturating_sub(1) as usize);
    }

    pub fn offset(&self) -> usize {
        self.i
    }

    pub fn src(&self) -> &'a str {
        self.src
    }

    /// Skip whitespace and comments, counting lines.
    fn skip_trivia(&mut self) {
        let b = self.bytes;
        while self.i < b.len() {
            match b[self.i] {
                b'\n' => {
                    self.i += 1;
                    self.line += 1;
                    self.line_start = self.i;
                }
                c if CLASS[c as usize] & SPACE != 0 => self.i += 1,
                b'/' if self.i + 1 < b.len() && b[self.i + 1] == b'/' => {
                    while self.i < b.len() && b[self.i] != b'\n' {
                        self.i += 1;
                    }
                }
                b'/' if self.i + 1 < b.len() && b[self.i + 1] == b'*' => {
                    self.i += 2;
                    while self.i < b.len() && !(b[self.i] == b'*' && self.i + 1 < b.len() && b[self.i + 1] == b'/') {
                        if b[self.i] == b'\n' {
                            self.line += 1;
                            self.line_start = self.i + 1;
                        }
                        self.i += 1;
                    }
                    self.i = (self.i + 2).min(b.len());
                }
                _ => break,
            }
        }
    }

    /// Skip the rest of a statement (from a token's start) up to and
    /// including its `;` outside braces, strings and comments: the bytes
    /// a walk over its tokens would skip (an initializer's thousands of
    /// numbers in one scan), counting lines. `false`, the lexer where it
    /// was, when the text ends first or a `}` closes no brace it opened.
    pub fn skip_statement(&mut self) -> bool {
        let b = self.bytes;
        let (mut i, mut line, mut line_start) = (self.i, self.line, self.line_start);
        let mut depth = 0usize;
        while i < b.len() {
            match b[i] {
                b'\n' => {
                    line += 1;
                    line_start = i + 1;
                }
                b'{' => depth += 1,
                b'}' if depth == 0 => return false,
                b'}' => depth -= 1,
                b';' if depth == 0 => {
                    (self.i, self.line, self.line_start) = (i + 1, line, line_start);
                    return true;
                }
                // a string ends at its quote or its line (as `next_token` reads one)
                b'"' => {
                    i += 1;
                    while i < b.len() && b[i] != b'"' && b[i] != b'\n' {
                        if b[i] == b'\\' && i + 1 < b.len() && b[i + 1] != b'\n' {
                            i += 1;
                        }
                        i += 1;
                    }
                    if i < b.len() && b[i] == b'"' {
                        i += 1;
                    }
                    continue;
                }
                b'/' if b.get(i + 1) == Some(&b'/') => {
                    while i < b.len() && b[i] != b'\n' {
                        i += 1;
                    }
                    continue;
                }
                b'/' if b.get(i + 1) == Some(&b'*') => {
                    i += 2;
                    while i < b.len() && !(b[i] == b'*' && b.get(i + 1) == Some(&b'/')) {
                        if b[i] == b'\n' {
                            line += 1;
                            line_start = i + 1;
                        }
                        i += 1;
                    }
                    i = (i + 2).min(b.len());
                    continue;
                }
                _ => {}
            }
            i += 1;
        }
        false
    }

    /// Skip raw bytes up to (not including) the first `}` that closes the
    /// current brace level, counting lines. Used to skip DWARF data sections
    /// quickly. Returns the skipped text.
    pub fn skip_to_close_brace(&mut self) -> &'a str {
        let start = self.i;
        let b = self.bytes;
        let mut depth = 0usize;
        while self.i < b.len() {
            match b[self.i] {
                b'\n' => {
                    self.line += 1;
                    self.line_start = self.i + 1;
                }
                b'{' => depth += 1,
                b'}' => {
                    if depth == 0 {
                        break;
                    }
                    depth -= 1;
                }
                b'"' => {
                    // strings may contain braces
                    self.i += 1;
                    while self.i < b.len() && b[self.i] != b'"' && b[self.i] != b'\n' {
                        self.i += 1;
                    }
                    if self.i < b.len() && b[self.i] == b'\n' {
                        continue;
                    }
                }
                _ => {}
            }
            self.i += 1;
        }
        &self.src[start..self.i.min(b.len())]
    }

    pub fn next_token(&mut self) -> Token<'a> {
        self.skip_trivia();
        let pos = self.pos();
        let b = self.bytes;
        let start = self.i;
        if start >= b.len() {
            return Token { kind: Tok::Eof, text: "", pos };
        }
        let c = b[start];
        let kind = if c.is_ascii_digit() {
            self.number()
        } else if ident_start(c) {
            self.i += 1;
            loop {
                let rest = &b[self.i..];
                self.i += rest.iter().position(|&c| !ident_cont(c)).unwrap_or(rest.len());
                // `shared::cta`, `cta_group::1`: `::` joins identifier parts
                if self.i + 2 < b.len() && b[self.i] == b':' && b[self.i + 1] == b':' && (ident_cont(b[self.i + 2])) {
                    self.i += 2;
                    continue;
                }
                break;
            }
            Tok::Ident
        } else if c == b'"' {
            self.i += 1;
            while self.i < b.len() && b[self.i] != b'"' && b[self.i] != b'\n' {
                if b[self.i] == b'\\' && self.i + 1 < b.len() && b[self.i + 1] != b'\n' {
                    self.i += 1;
                }
                self.i += 1;
            }
            if self.i < b.len() && b[self.i] == b'"' {
                self.i += 1;
                Tok::Str
            } else {
                Tok::Unknown
            }
        } else if CLASS[c as usize] & PUNCT != 0 {
            self.i += 1;
            Tok::Punct(c)
        } else {
            // one whole UTF-8 character, so slicing stays on a boundary
            self.i += 1;
            while self.i < b.len() && (b[self.i] & 0xC0) == 0x80 {
                self.i += 1;
            }
            Tok::Unknown
        };
        Token { kind, text: &self.src[start..self.i], pos }
    }

    fn number(&mut self) -> Tok {
        let b = self.bytes;
        let s = self.i;
        if b[s] == b'0' && s + 1 < b.len() {
            match b[s + 1] {
                b'f' | b'F' | b'd' | b'D' => {
                    let mut j = s + 2;
                    while j < b.len() && b[j].is_ascii_hexdigit() {
                        j += 1;
                    }
                    if j > s + 2 {
                        self.i = j;
                        return Tok::Float;
                    }
                }
                b'x' | b'X' => {
                    let mut j = s + 2;
                    while j < b.len() && b[j].is_ascii_hexdigit() {
                        j += 1;
                    }
                    if j < b.len() && b[j] == b'U' {
                        j += 1;
                    }
                    self.i = j;
                    return Tok::Int;
                }
                b'b' | b'B' => {
                    let mut j = s + 2;
                    while j < b.len() && (b[j] == b'0' || b[j] == b'1') {
                        j += 1;
                    }
                    if j > s + 2 {
                        if j < b.len() && b[j] == b'U' {
                            j += 1;
                        }
                        self.i = j;
                        return Tok::Int;
                    }
                }
                _ => {}
            }
        }
        let mut j = s;
        while j < b.len() && b[j].is_ascii_digit() {
            j += 1;
        }
        let mut float = false;
        if j < b.len() && b[j] == b'.' && j + 1 < b.len() && b[j + 1].is_ascii_digit() {
            float = true;
            j += 1;
            while j < b.len() && b[j].is_ascii_digit() {
                j += 1;
            }
        }
        if j < b.len() && (b[j] == b'e' || b[j] == b'E') {
            let mut k = j + 1;
            if k < b.len() && (b[k] == b'+' || b[k] == b'-') {
                k += 1;
            }
            if k < b.len() && b[k].is_ascii_digit() {
                float = true;
                j = k;
                while j < b.len() && b[j].is_ascii_digit() {
                    j += 1;
                }
            }
        }
        if !float && j < b.len() && b[j] == b'U' {
            j += 1;
        }
        self.i = j;
        if float {
            Tok::Float
        } else {
            Tok::Int
        }
    }
}

/// Value of an integer literal token (decimal, hex, octal, binary; `U` suffix).
pub fn parse_int(text: &str) -> Option<i64> {
    let t = text.strip_suffix('U').unwrap_or(text);
    let (digits, radix) = if let Some(h) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        (h, 16)
    } else if let Some(bn) = t.strip_prefix("0b").or_else(|| t.strip_prefix("0B")) {
        (bn, 2)
    } else if t.len() > 1 && t.starts_with('0') {
        (&t[1..], 8)
    } else {
        (t, 10)
    };
    u64::from_str_radix(digits, radix).ok().map(|v| v as i64)
}

/// Bit pattern of a float literal token (`0f…` gives f32 bits widened to an
/// f64 value, `0d…` f64 bits, decimal parsed).
pub fn parse_float(text: &str) -> Option<f64> {
    let t = text.as_bytes();
    if t.len() > 2 && t[0] == b'0' && (t[1] == b'f' || t[1] == b'F') {
        u32::from_str_radix(&text[2..], 16).ok().map(|b| f32::from_bits(b) as f64)
    } else if t.len() > 2 && t[0] == b'0' && (t[1] == b'd' || t[1] == b'D') {
        u64::from_str_radix(&text[2..], 16).ok().map(f64::from_bits)
    } else {
        text.parse().ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Where a walk over the tokens of `src` ends a statement: after its
    /// `;` outside braces (offset, line, line start), or `None`.
    fn statement_by_tokens(src: &str) -> Option<(usize, u32, usize)> {
        let mut l = Lexer::new(src);
        let mut depth = 0;
        loop {
            match l.next_token().kind {
                Tok::Eof => return None,
                Tok::Punct(b'{') => depth += 1,
                Tok::Punct(b'}') if depth == 0 => return None,
                Tok::Punct(b'}') => depth -= 1,
                Tok::Punct(b';') if depth == 0 => return Some((l.i, l.line, l.line_start)),
                _ => {}
            }
        }
    }

    #[test]
    fn a_statement_skipped_by_bytes_ends_where_its_tokens_do() {
        let cases = [
            "= {1, 2, {3, 4}, 0x2f, 1.5e-3};\n.global .u32 b;",
            "= {\"a;}b\", /* } ; */ 4 // ; }\n 5}; rest",
            "= {\"a\\\";\"}; tail",
            "= \"unterminated ; \n x ;",
            "= \"ends at the line\\\n y };",
            "\r\n= {1,\r\n2}\r\n;\r\n",
            "= {1, 2",
            "= 1 } ;",
            "= {1, /* never closed",
            "/ 2 ;",
            "= {\u{e9}, 1};",
            ";",
            "",
        ];
        for src in cases {
            let mut l = Lexer::new(src);
            let by_bytes = l.skip_statement().then_some((l.i, l.line, l.line_start));
            assert_eq!(by_bytes, statement_by_tokens(src), "{src:?}");
            if by_bytes.is_none() {
                assert_eq!((l.i, l.line, l.line_start), (0, 1, 0), "a statement that does not end leaves the lexer where it was");
            }
        }
    }

    fn kinds(s: &str) -> Vec<(Tok, &str)> {
        let mut l = Lexer::new(s);
        let mut v = vec![];
        loop {
            let t = l.next_token();
            if t.kind == Tok::Eof {
                break;
            }
            v.push((t.kind, t.text));
        }
        v
    }

    #[test]
    fn instruction_tokens() {
        let v = kinds("@!%p1 ld.global.v2.f32 {%f1, %f2}, [%rd4+-8]; // c\n");
        let texts: Vec<&str> = v.iter().map(|x| x.1).collect();
        assert_eq!(texts, ["@", "!", "%p1", "ld.global.v2.f32", "{", "%f1", ",", "%f2", "}", ",", "[", "%rd4", "+", "-", "8", "]", ";"]);
    }

    #[test]
    fn literals() {
        let v = kinds("0f3F800000 0D3FF0000000000000 0x1fU 12 1.5e3 017 0b101 7.0");
        let k: Vec<Tok> = v.iter().map(|x| x.0).collect();
        assert_eq!(k, [Tok::Float, Tok::Float, Tok::Int, Tok::Int, Tok::Float, Tok::Int, Tok::Int, Tok::Float]);
        assert_eq!(parse_int("0x1fU"), Some(31));
        assert_eq!(parse_int("017"), Some(15));
        assert_eq!(parse_int("0b101"), Some(5));
        assert_eq!(parse_float("0f3F800000"), Some(1.0));
        assert_eq!(parse_float("0D3FF0000000000000"), Some(1.0));
    }

    #[test]
    fn positions() {
        let mut l = Lexer::new("a\n  /* x\n y */ b");
        assert_eq!(l.next_token().pos, Pos { line: 1, col: 1, offset: 0 });
        let b = l.next_token();
        assert_eq!((b.text, b.pos.line, b.pos.col), ("b", 3, 7));
    }

    #[test]
    fn unterminated_things_do_not_panic() {
        for s in ["\"abc", "/* never", "0x", "0f", "é", "1e", "1.", "%", "\u{fffd}x"] {
            let _ = kinds(s);
        }
    }
}
