//! Recursive-descent PTX parser producing `ast::Module`.
//!
//! Owns: the grammar of modules, directives, function headers and bodies,
//! instructions and operands, for PTX ISA 1.x–9.x as nvcc, NVVM, LLVM (rustc,
//! clang, Julia, Triton), GCC and hand writers emit it. DWARF `.section`
//! blocks are skipped at byte speed and kept raw (see `crate::srcmap::dwarf`),
//! and so are the statements it does not read (initializers, pragmas:
//! `Lexer::skip_statement`, which reads strings and comments as the tokens do).
//! Does not own: instruction semantics. Unknown opcodes parse generically.
//! Errors carry line:column and what was expected; the parser never panics.

use super::ast::*;
use super::lexer::{parse_float, parse_int, Lexer, Tok, Token};
use std::fmt;

/// A syntax error at a position in the PTX text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    pub line: u32,
    pub col: u32,
    pub expected: String,
    pub found: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: expected {}, found {}", self.line, self.col, self.expected, self.found)
    }
}

impl std::error::Error for ParseError {}

type PResult<T> = Result<T, ParseError>;

/// Labels as ptxas takes them: each defined once in its function, and
/// every `.branchtargets` entry one of them. (Branch instructions' targets
/// are checked once instructions are decoded: `ir::undefined_branch_target`.)
fn labels_once(body: &[Stmt<'_>], func: &str) -> PResult<()> {
    // (a label belongs to its `{ … }` scope: inline asm blocks that are pasted
    // twice define theirs twice, each in its own scope)
    let mut scopes: Vec<rustc_hash::FxHashMap<&str, Pos>> = vec![rustc_hash::FxHashMap::default()];
    let mut defined: rustc_hash::FxHashSet<&str> = rustc_hash::FxHashSet::default();
    for s in body {
        match s {
            Stmt::ScopeOpen(_) => scopes.push(rustc_hash::FxHashMap::default()),
            Stmt::ScopeClose(_) if scopes.len() > 1 => {
                scopes.pop();
            }
            Stmt::Label(l, pos) => {
                defined.insert(l);
                if let Some(first) = scopes.last_mut().and_then(|sc| sc.insert(l, *pos)) {
                    return Err(ParseError {
                        line: pos.line,
                        col: pos.col,
                        expected: format!(
                            "a label not defined before in this scope of `{func}` (ptxas: duplicate definition; first at line {})",
                            first.line
                        ),
                        found: format!("a second `{l}:`"),
                    });
                }
            }
            _ => {}
        }
    }
    for s in body {
        if let Stmt::BranchTargets(targets, pos) = s {
            if let Some(t) = targets.iter().find(|t| !defined.contains(*t)) {
                return Err(ParseError {
                    line: pos.line,
                    col: pos.col,
                    expected: format!("labels defined in `{func}` (ptxas: unknown symbol)"),
                    found: format!("`{t}` in `.branchtargets`"),
                });
            }
        }
    }
    Ok(())
}

/// Parse a whole PTX module.
pub fn parse(src: &str) -> Result<Module<'_>, ParseError> {
    let mut p = Parser::new(src);
    p.module()
}

struct Parser<'a> {
    lex: Lexer<'a>,
    cur: Token<'a>,
    peek: Option<Token<'a>>,
    depth: u32,
    /// `.file` entries seen anywhere (module level, headers, bodies).
    files: Vec<FileEntry<'a>>,
    /// Registers declared without `%` in the current function (hand-written PTX).
    bare_regs: Vec<&'a str>,
    /// Statement count of the previous body: functions of a module tend to be
    /// alike, so it sizes the next body's vector (no regrowth copies).
    body_hint: usize,
}

const MAX_DEPTH: u32 = 200;

fn describe(t: &Token<'_>) -> String {
    match t.kind {
        Tok::Eof => "end of file".to_string(),
        _ => {
            // control bytes (a binary file) shown escaped, not raw
            let s: String = t.text.chars().take(40).flat_map(char::escape_debug).collect();
            if t.kind == Tok::Unknown && !t.text.chars().all(|c| c.is_ascii_graphic()) {
                format!("`{s}` (not PTX text: is this a binary file?)")
            } else {
                format!("`{s}`")
            }
        }
    }
}

impl<'a> Parser<'a> {
    fn new(src: &'a str) -> Self {
        let mut lex = Lexer::new(src);
        let cur = lex.next_token();
        Parser { lex, cur, peek: None, depth: 0, files: Vec::new(), bare_regs: Vec::new(), body_hint: 16 }
    }

    fn bump(&mut self) -> Token<'a> {
        let t = self.cur;
        self.cur = match self.peek.take() {
            Some(p) => p,
            None => self.lex.next_token(),
        };
        t
    }

    fn peek(&mut self) -> Token<'a> {
        if self.peek.is_none() {
            self.peek = Some(self.lex.next_token());
        }
        self.peek.unwrap_or(self.cur)
    }

    fn err<T>(&self, expected: impl Into<String>) -> PResult<T> {
        Err(ParseError { line: self.cur.pos.line, col: self.cur.pos.col, expected: expected.into(), found: describe(&self.cur) })
    }

    fn eat(&mut self, c: u8) -> bool {
        if self.cur.is_punct(c) {
            self.bump();
            true
        } else {
            false
        }
    }

    fn expect(&mut self, c: u8) -> PResult<Token<'a>> {
        if self.cur.is_punct(c) {
            Ok(self.bump())
        } else {
            self.err(format!("`{}`", c as char))
        }
    }

    fn ident(&mut self, what: &str) -> PResult<Token<'a>> {
        if self.cur.kind == Tok::Ident {
            Ok(self.bump())
        } else {
            self.err(what.to_string())
        }
    }

    fn int(&mut self, what: &str) -> PResult<i64> {
        let neg = self.eat(b'-');
        if self.cur.kind == Tok::Int {
            let t = self.bump();
            match parse_int(t.text) {
                Some(v) => Ok(if neg { v.wrapping_neg() } else { v }),
                None => Err(ParseError { line: t.pos.line, col: t.pos.col, expected: what.to_string(), found: describe(&t) }),
            }
        } else {
            self.err(what.to_string())
        }
    }

    fn uint32(&mut self, what: &str) -> PResult<u32> {
        let t = self.cur;
        let v = self.int(what)?;
        u32::try_from(v).map_err(|_| ParseError { line: t.pos.line, col: t.pos.col, expected: what.to_string(), found: describe(&t) })
    }

    /// Skip tokens to the end of the current line (for line-terminated directives).
    fn skip_line(&mut self, line: u32) {
        while self.cur.kind != Tok::Eof && self.cur.pos.line == line {
            self.bump();
        }
    }

    /// Skip tokens up to and including the next `;` at brace depth 0.
    fn skip_statement(&mut self) -> PResult<()> {
        // bytes, not tokens (`Lexer::skip_statement`); a statement that does not end is walked
        // again token by token, for where the error is
        let mut lex = Lexer::at(self.lex.src(), self.cur.pos);
        if lex.skip_statement() {
            self.lex = lex;
            self.peek = None;
            self.cur = self.lex.next_token();
            return Ok(());
        }
        let mut depth = 0i32;
        loop {
            match self.cur.kind {
                Tok::Eof => return self.err("`;`"),
                Tok::Punct(b'{') => depth += 1,
                Tok::Punct(b'}') => {
                    if depth == 0 {
                        return self.err("`;`");
                    }
                    depth -= 1
                }
                Tok::Punct(b';') if depth == 0 => {
                    self.bump();
                    return Ok(());
                }
                _ => {}
            }
            self.bump();
        }
    }

    fn module(&mut self) -> PResult<Module<'a>> {
        let mut m = Module { address_size: 64, ..Default::default() };
        loop {
            let t = self.cur;
            match t.kind {
                Tok::Eof => break,
                Tok::Ident => {}
                Tok::Punct(b';') => {
                    self.bump();
                    continue;
                }
                _ => return self.err("a directive such as `.version`, `.entry` or `.func`"),
            }
            if !t.text.starts_with('.') {
                // top-level label (old LLVM debug output: `Linfo_string0:`)
                if self.peek().is_punct(b':') {
                    self.bump();
                    self.bump();
                    continue;
                }
                return self.err("a directive such as `.version`, `.entry` or `.func`");
            }
            match t.text {
                ".version" => {
                    self.bump();
                    if matches!(self.cur.kind, Tok::Float | Tok::Int) {
                        m.version = Some(self.bump().text);
                    } else {
                        return self.err("a version number such as `7.0`");
                    }
                }
                ".target" => {
                    self.bump();
                    loop {
                        m.targets.push(self.ident("a target name such as `sm_70`")?.text);
                        if !self.eat(b',') {
                            break;
                        }
                    }
                }
                ".address_size" => {
                    self.bump();
                    m.address_size = self.uint32("an address size (32 or 64)")?;
                }
                ".file" => {
                    self.file_directive()?;
                }
                ".loc" => {
                    self.loc()?;
                }
                ".section" => self.section(&mut m)?,
                ".pragma" => {
                    self.bump();
                    self.skip_statement()?;
                }
                ".visible" | ".extern" | ".weak" | ".common" | ".entry" | ".func" | ".global" | ".shared" | ".const" | ".local" => {
                    self.linked(&mut m)?;
                }
                s if is_data_directive(s) => {
                    // loose data (GAS-style sections): skip to end of line
                    let line = t.pos.line;
                    self.skip_line(line);
                }
                _ => {
                    // unknown module directive: keep it, skip its statement
                    m.other.push((t.text, t.pos));
                    self.bump();
                    let line = t.pos.line;
                    // directives end with `;` or at the end of the line
                    while self.cur.kind != Tok::Eof && self.cur.pos.line == line && !self.cur.is_punct(b';') && !self.cur.is_punct(b'{') {
                        self.bump();
                    }
                    if self.cur.is_punct(b'{') {
                        self.bump();
                        self.lex_skip_block();
                    } else {
                        self.eat(b';');
                    }
                }
            }
        }
        m.files = std::mem::take(&mut self.files);
        Ok(m)
    }

    /// After a consumed `{`: skip raw text to the matching `}` and consume it.
    fn lex_skip_block(&mut self) -> &'a str {
        // `cur` is the first token inside the block: re-lex from there.
        self.peek = None;
        self.lex = Lexer::at(self.lex.src(), self.cur.pos);
        let body = self.lex.skip_to_close_brace();
        self.cur = self.lex.next_token();
        if self.cur.is_punct(b'}') {
            self.bump();
        }
        body
    }

    fn file_directive(&mut self) -> PResult<()> {
        let line = self.bump().pos.line;
        let index = self.uint32("a file index")?;
        if self.cur.kind != Tok::Str {
            return self.err("a quoted file path");
        }
        let s = self.bump().text;
        let path = &s[1..s.len() - 1];
        self.skip_line(line);
        self.files.push(FileEntry { index, path });
        Ok(())
    }

    fn loc(&mut self) -> PResult<Loc> {
        let t = self.bump();
        let line = t.pos.line;
        let file = self.uint32("a file index after `.loc`")?;
        let l = self.uint32("a line number")?;
        let col = if self.cur.kind == Tok::Int && self.cur.pos.line == line { self.uint32("a column")? } else { 0 };
        let mut inlined_at = None;
        while self.cur.kind != Tok::Eof && self.cur.pos.line == line {
            if self.cur.kind == Tok::Ident && self.cur.text == "inlined_at" {
                self.bump();
                let f = self.uint32("a file index after `inlined_at`")?;
                let il = self.uint32("a line number")?;
                let ic = if self.cur.kind == Tok::Int && self.cur.pos.line == line { self.uint32("a column")? } else { 0 };
                inlined_at = Some((f, il, ic));
            } else {
                self.bump();
            }
        }
        Ok(Loc { file, line: l, col, inlined_at, pos: t.pos })
    }

    fn section(&mut self, m: &mut Module<'a>) -> PResult<()> {
        let t = self.bump();
        let name = self.ident("a section name such as `.debug_info`")?.text;
        if self.cur.is_punct(b'{') && self.cur.pos.line >= t.pos.line {
            let open = self.cur.pos;
            let body_pos = Pos { line: open.line, col: open.col + 1, offset: open.offset + 1 };
            self.lex = Lexer::at(self.lex.src(), body_pos);
            self.peek = None;
            let body = self.lex.skip_to_close_brace();
            self.cur = self.lex.next_token();
            if !self.eat(b'}') {
                return self.err("`}` closing the section");
            }
            m.sections.push(Section { name, body, body_pos });
        } else {
            // GAS style: `.section .debug_x,"",@progbits` then data lines
            self.skip_line(t.pos.line);
            let start = self.cur.pos;
            while self.cur.kind != Tok::Eof && !(self.cur.kind == Tok::Ident && self.cur.text == ".section") {
                let line = self.cur.pos.line;
                self.skip_line(line);
            }
            let end = if self.cur.kind == Tok::Eof { self.lex.src().len() } else { self.cur.pos.offset as usize };
            let body = self.lex.src().get(start.offset as usize..end).unwrap_or("");
            m.sections.push(Section { name, body, body_pos: start });
        }
        Ok(())
    }

    /// Linkage-prefixed declarations: functions and variables.
    fn linked(&mut self, m: &mut Module<'a>) -> PResult<()> {
        let mut linkage = None;
        while matches!(self.cur.text, ".visible" | ".extern" | ".weak" | ".common") && self.cur.kind == Tok::Ident {
            linkage = Some(self.bump().text);
        }
        match self.cur.text {
            ".entry" | ".func" => {
                let f = self.function(linkage)?;
                m.functions.push(f);
            }
            ".global" | ".shared" | ".const" | ".local" | ".param" => {
                let v = self.var_decl(linkage)?;
                m.globals.extend(v);
            }
            _ => return self.err("`.entry`, `.func` or a variable declaration"),
        }
        Ok(())
    }

    /// `space [.align N] [.vN] .type name[dims] [= init] [, name2…];`
    fn var_decl(&mut self, linkage: Option<&'a str>) -> PResult<Vec<VarDecl<'a>>> {
        let sp = self.bump();
        let mut align = None;
        let mut vector = None;
        let mut ty = "";
        let mut out = Vec::new();
        loop {
            if self.cur.kind != Tok::Ident {
                return self.err("a type or a variable name");
            }
            let t = self.cur.text;
            if t == ".align" {
                self.bump();
                align = Some(self.uint32("an alignment")?);
            } else if matches!(t, ".v2" | ".v4" | ".v8") {
                vector = Some(self.bump().text);
            } else if matches!(t, ".ptr" | ".attribute" | ".managed" | ".unified") {
                self.bump();
                if self.cur.is_punct(b'(') {
                    self.skip_parens()?;
                }
            } else if t.starts_with('.') {
                ty = self.bump().text;
            } else {
                break;
            }
        }
        loop {
            let nt = self.ident("a variable name")?;
            let mut dims = Vec::new();
            if self.cur.is_punct(b'<') {
                // `%r<5>` parameterized names in var decl position
                self.bump();
                self.int("a count")?;
                self.expect(b'>')?;
            }
            while self.eat(b'[') {
                if self.eat(b']') {
                    dims.push(None);
                } else {
                    let v = self.int("an array size")?;
                    self.expect(b']')?;
                    dims.push(Some(v as u64));
                }
            }
            out.push(VarDecl { linkage, space: sp.text, align, vector, ty, name: nt.text, dims, pos: nt.pos });
            if self.cur.is_punct(b'=') {
                self.skip_statement()?;
                return Ok(out);
            }
            if !self.eat(b',') {
                break;
            }
        }
        self.expect(b';')?;
        Ok(out)
    }

    fn skip_parens(&mut self) -> PResult<()> {
        self.expect(b'(')?;
        let mut depth = 1;
        while depth > 0 {
            match self.cur.kind {
                Tok::Eof => return self.err("`)`"),
                Tok::Punct(b'(') => depth += 1,
                Tok::Punct(b')') => depth -= 1,
                _ => {}
            }
            self.bump();
        }
        Ok(())
    }

    fn param_list(&mut self) -> PResult<Vec<Param<'a>>> {
        self.expect(b'(')?;
        let mut out = Vec::new();
        if self.eat(b')') {
            return Ok(out);
        }
        loop {
            out.push(self.param()?);
            if self.eat(b')') {
                break;
            }
            self.expect(b',')?;
        }
        Ok(out)
    }

    fn param(&mut self) -> PResult<Param<'a>> {
        let pos = self.cur.pos;
        let mut p = Param { space: ".param", ty: "", name: "", align: None, ptr_space: None, is_ptr: false, array: None, pos };
        let mut first = true;
        loop {
            if self.cur.kind != Tok::Ident {
                return self.err("a parameter declaration such as `.param .u64 name`");
            }
            let t = self.cur.text;
            match t {
                ".param" | ".reg" if first => p.space = self.bump().text,
                ".align" => {
                    self.bump();
                    p.align = Some(self.uint32("an alignment")?);
                }
                ".ptr" => {
                    self.bump();
                    p.is_ptr = true;
                }
                ".global" | ".shared" | ".const" | ".local" if p.is_ptr => p.ptr_space = Some(self.bump().text),
                _ if t.starts_with('.') => p.ty = self.bump().text,
                _ => {
                    let n = self.bump();
                    p.name = n.text;
                    p.pos = n.pos;
                    break;
                }
            }
            first = false;
        }
        if self.eat(b'[') {
            if self.eat(b']') {
                p.array = Some(0);
            } else {
                p.array = Some(self.int("an array size")? as u64);
                self.expect(b']')?;
            }
        }
        Ok(p)
    }

    fn dims3(&mut self) -> PResult<[u32; 3]> {
        let line = self.cur.pos.line;
        let mut d = [1u32; 3];
        d[0] = self.thread_count()?;
        for v in d.iter_mut().skip(1) {
            if self.cur.is_punct(b',') && self.peek().kind == Tok::Int && self.peek().pos.line == line {
                self.bump();
                *v = self.thread_count()?;
            } else {
                break;
            }
        }
        Ok(d)
    }

    /// One dimension of `.reqntid`/`.maxntid`: ptxas refuses 0.
    fn thread_count(&mut self) -> PResult<u32> {
        let t = self.cur;
        match self.uint32("a thread count")? {
            0 => Err(ParseError {
                line: t.pos.line,
                col: t.pos.col,
                expected: "a positive thread count (ptxas: \"Positive non-zero value expected\")".into(),
                found: "`0`".into(),
            }),
            n => Ok(n),
        }
    }

    fn function(&mut self, linkage: Option<&'a str>) -> PResult<Function<'a>> {
        let kw = self.bump();
        let is_entry = kw.text == ".entry";
        let returns = if !is_entry && self.cur.is_punct(b'(') { self.param_list()? } else { Vec::new() };
        let nt = self.ident("a function name")?;
        let params = if self.cur.is_punct(b'(') { self.param_list()? } else { Vec::new() };
        let mut perf = Perf::default();
        let mut noreturn = false;
        loop {
            match self.cur.text {
                ".maxntid" if self.cur.kind == Tok::Ident => {
                    self.bump();
                    perf.maxntid = Some(self.dims3()?);
                }
                ".reqntid" if self.cur.kind == Tok::Ident => {
                    self.bump();
                    perf.reqntid = Some(self.dims3()?);
                }
                ".minnctapersm" | ".maxnctapersm" if self.cur.kind == Tok::Ident => {
                    self.bump();
                    perf.minnctapersm = Some(self.uint32("a count")?);
                }
                ".maxnreg" if self.cur.kind == Tok::Ident => {
                    self.bump();
                    perf.maxnreg = Some(self.uint32("a register count")?);
                }
                ".noreturn" if self.cur.kind == Tok::Ident => {
                    self.bump();
                    noreturn = true;
                }
                ".pragma" if self.cur.kind == Tok::Ident => {
                    self.bump();
                    self.skip_statement()?;
                }
                ".explicitcluster" | ".reqnctapercluster" | ".maxclusterrank" | ".blocksareclusters" if self.cur.kind == Tok::Ident => {
                    let line = self.bump().pos.line;
                    while (self.cur.kind == Tok::Int || self.cur.is_punct(b',')) && self.cur.pos.line == line {
                        self.bump();
                    }
                }
                _ => break,
            }
        }
        // old LLVM puts a label (and `.file`) between header and body
        while self.cur.kind == Tok::Ident && !self.cur.text.starts_with('.') && self.peek().is_punct(b':') {
            self.bump();
            self.bump();
        }
        while self.cur.kind == Tok::Ident && matches!(self.cur.text, ".file" | ".loc") {
            if self.cur.text == ".file" {
                self.file_directive()?;
            } else {
                self.loc()?;
            }
        }
        self.bare_regs.clear();
        let body = if self.eat(b';') {
            None
        } else if self.cur.kind == Tok::Ident && self.cur.text.starts_with('.') && self.cur.pos.line > nt.pos.line {
            // Open64 prototypes have no `;`: the next directive starts
            None
        } else if self.cur.is_punct(b'{') {
            self.bump();
            let body = self.body()?;
            labels_once(&body, nt.text)?;
            Some(body)
        } else {
            return self.err("`{` starting the function body or `;`");
        };
        Ok(Function { name: nt.text, pos: nt.pos, is_entry, linkage, returns, params, perf, noreturn, body })
    }

    /// Statements up to the `}` closing the function (consumed).
    fn body(&mut self) -> PResult<Vec<Stmt<'a>>> {
        let mut out = Vec::with_capacity(self.body_hint.clamp(4, 1 << 16));
        let mut depth = 0u32;
        loop {
            let t = self.cur;
            match t.kind {
                Tok::Eof => return self.err("`}` closing the function body"),
                Tok::Punct(b'}') => {
                    self.bump();
                    if depth == 0 {
                        self.body_hint = out.len() + out.len() / 8;
                        // a hint from a larger function would leave most of this one's buffer unused
                        if out.capacity() > out.len() + out.len() / 4 + 2 {
                            out.shrink_to_fit();
                        }
                        return Ok(out);
                    }
                    depth -= 1;
                    out.push(Stmt::ScopeClose(t.pos));
                }
                Tok::Punct(b'{') => {
                    self.bump();
                    depth += 1;
                    if depth > MAX_DEPTH {
                        return self.err("fewer nested scopes");
                    }
                    out.push(Stmt::ScopeOpen(t.pos));
                }
                Tok::Punct(b';') => {
                    self.bump();
                }
                Tok::Punct(b'@') => out.push(Stmt::Inst(self.instruction()?)),
                Tok::Ident => {
                    if t.text.starts_with('.') {
                        self.body_directive(&mut out)?;
                    } else if self.peek().is_punct(b':') {
                        self.bump();
                        self.bump();
                        out.push(Stmt::Label(t.text, t.pos));
                        if self.cur.kind == Tok::Ident && self.cur.text == ".branchtargets" {
                            let pos = self.bump().pos;
                            let mut targets = Vec::new();
                            loop {
                                targets.push(self.ident("a label")?.text);
                                if !self.eat(b',') {
                                    break;
                                }
                            }
                            self.expect(b';')?;
                            out.push(Stmt::BranchTargets(targets, pos));
                        }
                    } else {
                        out.push(Stmt::Inst(self.instruction()?));
                    }
                }
                _ => return self.err("an instruction, a label or a directive"),
            }
        }
    }

    fn body_directive(&mut self, out: &mut Vec<Stmt<'a>>) -> PResult<()> {
        let t = self.cur;
        match t.text {
            ".reg" => {
                self.bump();
                let mut ty = "";
                let mut vector = None;
                while self.cur.kind == Tok::Ident && self.cur.text.starts_with('.') {
                    let x = self.bump().text;
                    if matches!(x, ".v2" | ".v4" | ".v8") {
                        vector = Some(x);
                    } else if x == ".align" {
                        self.int("an alignment")?;
                    } else {
                        ty = x;
                    }
                }
                let mut names = Vec::new();
                loop {
                    let n = self.ident("a register name")?.text;
                    let mut count = None;
                    if self.eat(b'<') {
                        count = Some(self.uint32("a register count")?);
                        self.expect(b'>')?;
                    }
                    names.push((n, count));
                    if !n.starts_with('%') {
                        self.bare_regs.push(n);
                    }
                    if !self.eat(b',') {
                        break;
                    }
                }
                self.expect(b';')?;
                out.push(Stmt::Reg(RegDecl { ty, vector, names, pos: t.pos }));
            }
            s if s.starts_with(".reg.") => {
                // GCC: `.reg.u32 %x;`
                self.bump();
                let ty = &s[4..];
                let mut names = Vec::new();
                loop {
                    names.push((self.ident("a register name")?.text, None));
                    if !self.eat(b',') {
                        break;
                    }
                }
                self.expect(b';')?;
                out.push(Stmt::Reg(RegDecl { ty, vector: None, names, pos: t.pos }));
            }
            ".local" | ".shared" | ".param" | ".const" | ".global" => {
                for v in self.var_decl(None)? {
                    out.push(Stmt::Var(v));
                }
            }
            ".loc" => out.push(Stmt::Loc(self.loc()?)),
            ".file" => {
                self.file_directive()?;
                out.push(Stmt::Directive(t.text, t.pos));
            }
            ".pragma" => {
                self.bump();
                let s = if self.cur.kind == Tok::Str { self.cur.text } else { "" };
                self.skip_statement()?;
                out.push(Stmt::Pragma(s, t.pos));
            }
            _ => {
                // `.callprototype …;` and anything else: keep generically
                self.bump();
                let line = t.pos.line;
                let mut depth = 0i32;
                loop {
                    match self.cur.kind {
                        Tok::Eof => return self.err("`;`"),
                        Tok::Punct(b'(') => depth += 1,
                        Tok::Punct(b')') => depth -= 1,
                        Tok::Punct(b';') if depth <= 0 => {
                            self.bump();
                            break;
                        }
                        Tok::Punct(b'}') | Tok::Punct(b'{') if depth <= 0 => break,
                        _ if depth <= 0 && self.cur.pos.line != line && self.cur.kind == Tok::Ident && self.cur.text.starts_with('.') => {
                            break
                        }
                        _ => {}
                    }
                    self.bump();
                }
                out.push(Stmt::Directive(t.text, t.pos));
            }
        }
        Ok(())
    }

    fn instruction(&mut self) -> PResult<Instruction<'a>> {
        let pos = self.cur.pos;
        let mut guard = None;
        if self.eat(b'@') {
            let negated = self.eat(b'!');
            let r = self.ident("a predicate register after `@`")?;
            guard = Some(Guard { negated, reg: r.text });
        }
        let op = self.ident("an instruction opcode")?;
        let mut operands = Operands::new();
        if !self.eat(b';') {
            loop {
                operands.push(self.operand()?);
                if self.eat(b';') {
                    break;
                }
                if !self.eat(b',') {
                    // `call` forms separate lists by commas; anything else is an error
                    return self.err("`,` or `;` after an operand");
                }
            }
        }
        Ok(Instruction { guard, opcode: op.text, operands, pos })
    }

    fn operand(&mut self) -> PResult<Operand<'a>> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            self.depth = 0;
            return self.err("a less deeply nested operand");
        }
        let r = self.operand_inner();
        self.depth = self.depth.saturating_sub(1);
        r
    }

    fn operand_inner(&mut self) -> PResult<Operand<'a>> {
        let t = self.cur;
        match t.kind {
            Tok::Ident => {
                self.bump();
                if t.text == "_" {
                    return Ok(Operand::Sink);
                }
                if self.cur.is_punct(b'|') {
                    self.bump();
                    let q = self.ident("a predicate register after `|`")?;
                    let text = self.lex.src().get(t.pos.offset as usize..q.pos.offset as usize + q.text.len()).unwrap_or(t.text);
                    return Ok(Operand::Pair(text));
                }
                if t.text.starts_with('%') || self.bare_regs.contains(&t.text) {
                    if self.cur.is_punct(b'+') || self.cur.is_punct(b'-') {
                        let off = self.offset_expr()?;
                        return Ok(Operand::Addr(Box::new(Address { base: Some(Operand::Reg(t.text)), offset: off, extra: vec![] })));
                    }
                    return Ok(Operand::Reg(t.text));
                }
                if self.cur.is_punct(b'+') || self.cur.is_punct(b'-') {
                    let off = self.offset_expr()?;
                    return Ok(match i32::try_from(off) {
                        Ok(o) => Operand::SymOff(t.text, o),
                        Err(_) => Operand::Sym(t.text),
                    });
                }
                if self.cur.is_punct(b'(') && matches!(t.text, "generic" | "gen") {
                    self.bump();
                    let s = self.ident("a symbol")?;
                    self.expect(b')')?;
                    return Ok(Operand::Sym(s.text));
                }
                Ok(Operand::Sym(t.text))
            }
            Tok::Int => {
                let v = self.int("an integer")?;
                Ok(Operand::Imm(v))
            }
            Tok::Float => {
                self.bump();
                Ok(Operand::Float(parse_float(t.text).unwrap_or(0.0)))
            }
            Tok::Punct(b'-') => {
                if self.peek().kind == Tok::Float {
                    self.bump();
                    let f = self.bump();
                    return Ok(Operand::Float(-parse_float(f.text).unwrap_or(0.0)));
                }
                Ok(Operand::Imm(self.int("a number after `-`")?))
            }
            Tok::Punct(b'!') => {
                self.bump();
                Ok(Operand::Not(self.ident("a predicate register after `!`")?.text))
            }
            Tok::Punct(b'[') => {
                self.bump();
                let mut a = Address { base: None, offset: 0, extra: vec![] };
                if self.cur.kind == Tok::Int || self.cur.is_punct(b'-') {
                    a.offset = self.int("an address")?;
                } else if !self.cur.is_punct(b']') {
                    a.base = Some(self.operand()?);
                    if let Some(Operand::Addr(inner)) = &a.base {
                        // `%r+4` parsed as an address inside brackets
                        let inner = (**inner).clone();
                        a = inner;
                    } else if let Some(Operand::SymOff(s, o)) = a.base {
                        a.base = Some(Operand::Sym(s));
                        a.offset = o as i64;
                    }
                }
                if self.cur.is_punct(b'+') || self.cur.is_punct(b'-') {
                    a.offset = a.offset.wrapping_add(self.offset_expr()?);
                }
                while self.eat(b',') {
                    a.extra.push(self.operand()?);
                }
                self.expect(b']')?;
                Ok(Operand::Addr(Box::new(a)))
            }
            Tok::Punct(b'{') => {
                self.bump();
                let mut v = Vec::new();
                if !self.eat(b'}') {
                    loop {
                        v.push(self.operand()?);
                        if self.eat(b'}') {
                            break;
                        }
                        self.expect(b',')?;
                    }
                }
                Ok(Operand::Vector(v.into_boxed_slice()))
            }
            Tok::Punct(b'(') => {
                self.bump();
                let mut v = Vec::new();
                if !self.eat(b')') {
                    loop {
                        v.push(self.operand()?);
                        if self.eat(b')') {
                            break;
                        }
                        self.expect(b',')?;
                    }
                }
                Ok(Operand::List(v.into_boxed_slice()))
            }
            _ => self.err("an operand"),
        }
    }

    /// `(+|-) int` chains, e.g. `+-8`, `+ 4`, `-4`.
    fn offset_expr(&mut self) -> PResult<i64> {
        let mut total = 0i64;
        while self.cur.is_punct(b'+') || self.cur.is_punct(b'-') {
            let neg = self.bump().is_punct(b'-');
            let v = self.int("an integer offset")?;
            total = total.wrapping_add(if neg { v.wrapping_neg() } else { v });
        }
        Ok(total)
    }
}

fn is_data_directive(s: &str) -> bool {
    s.len() > 2 && s.starts_with(".b") && s[2..].bytes().next().is_some_and(|b| b.is_ascii_digit())
}

impl<'a> Lexer<'a> {
    /// A lexer positioned at `pos` (which must come from a token of `src`).
    pub(crate) fn at(src: &'a str, pos: Pos) -> Self {
        let mut l = Lexer::new(src);
        l.seek(pos);
        l
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = r#"
//
// Generated by LLVM NVPTX Back-End
//
.version 7.0
.target sm_70, debug
.address_size 64
.extern .func (.param .b32 func_retval0) vprintf (.param .b64 vprintf_param_0, .param .b64 vprintf_param_1);
.global .align 4 .b8 $str[3] = {104, 105, 0};
.shared .align 4 .b8 tile[1024];
.visible .entry k(
	.param .u64 .ptr .global .align 1 k_param_0,
	.param .align 8 .b8 k_param_1[16]
)
.maxntid 256, 1, 1
.reqntid 128
{
	.reg .pred 	%p<3>;
	.reg .b32 	%r<5>;
	.loc	1 18 0
$L__func_begin1:
	ld.param.b64 	%rd1, [k_param_0];
	mov.u32 	%r2, %tid.x;
	setp.lt.s32 	%p1|%p2, %r2, -4;
	@!%p1 bra 	$L__BB1_2;
	ld.global.v2.f32 {%f1, %f2}, [%rd1+-8];
	// begin inline asm
	{
	.reg .pred __$temp3;
	setp.eq.s32 __$temp3, %r1, 0;
	}
	// end inline asm
	{ // callseq 0, 0
	.param .b64 param0;
	st.param.b64 [param0], %rd1;
	call.uni (retval0), vprintf, (param0, param1);
	}
	.loc	1 20 8, function_name $L__info_string0, inlined_at 1 10 5
	mov.f32 %f1, 0f3F800000;
$L__BB1_2:
	bar.sync 0;
	ret;
}
	.file	1 "/work/src/lib.rs"
	.section	.debug_info
	{
.b32 10
.b64 $L__func_begin1
.b64 $L__sec_end0-$L__func_begin0
.b84,255
	}
	.section	.debug_macinfo	{	}
"#;

    #[test]
    fn parses_sample() {
        let m = parse(SAMPLE).unwrap();
        assert_eq!(m.version, Some("7.0"));
        assert_eq!(m.targets, ["sm_70", "debug"]);
        assert_eq!(m.functions.len(), 2);
        let k = &m.functions[1];
        assert!(k.is_entry);
        assert_eq!(k.perf.maxntid, Some([256, 1, 1]));
        assert_eq!(k.perf.reqntid, Some([128, 1, 1]));
        assert_eq!(k.params[0].ptr_space, Some(".global"));
        assert_eq!(k.params[1].array, Some(16));
        let body = k.body.as_ref().unwrap();
        let insts: Vec<&Instruction> = body.iter().filter_map(|s| if let Stmt::Inst(i) = s { Some(i) } else { None }).collect();
        assert_eq!(insts.len(), 11);
        assert_eq!(insts[2].operands[0], Operand::Pair("%p1|%p2"));
        assert_eq!(split_pair("%p1 | %p2"), ("%p1", "%p2"));
        assert_eq!(insts[2].operands[2], Operand::Imm(-4));
        assert_eq!(insts[3].guard, Some(Guard { negated: true, reg: "%p1" }));
        match &insts[4].operands[1] {
            Operand::Addr(a) => {
                assert_eq!(a.base, Some(Operand::Reg("%rd1")));
                assert_eq!(a.offset, -8);
            }
            o => panic!("{o:?}"),
        }
        assert_eq!(insts[7].operands.len(), 3);
        let loc = body.iter().filter_map(|s| if let Stmt::Loc(l) = s { Some(*l) } else { None }).nth(1).unwrap();
        assert_eq!((loc.line, loc.col, loc.inlined_at), (20, 8, Some((1, 10, 5))));
        assert_eq!(m.file(1), Some("/work/src/lib.rs"));
        assert_eq!(m.sections.len(), 2);
        assert!(m.section(".debug_info").unwrap().body.contains("$L__sec_end0-$L__func_begin0"));
        assert_eq!(m.globals.len(), 2);
    }

    #[test]
    fn errors_name_line_and_column() {
        let e = parse(".version 7.0\n.entry k(\n{\n").unwrap_err();
        assert_eq!((e.line, e.col), (3, 1));
        assert!(e.expected.contains("parameter"), "{e}");
        let e = parse(".entry k() { add.s32 %r1, %r2 %r3; }").unwrap_err();
        assert_eq!(e.col, 31);
        assert_eq!(e.expected, "`,` or `;` after an operand");
        let e = parse("garbage").unwrap_err();
        assert!(e.to_string().starts_with("1:1: expected a directive"));
        // a binary file's bytes are escaped, not printed raw
        let e = parse(".version 7.0\n\u{1}\u{2} junk").unwrap_err();
        assert!(e.to_string().contains("found `\\u{1}"), "{e}");
        assert!(e.to_string().contains("is this a binary file?"), "{e}");
    }

    #[test]
    fn truncated_inputs_never_panic() {
        for i in 0..SAMPLE.len() {
            if SAMPLE.is_char_boundary(i) {
                let _ = parse(&SAMPLE[..i]);
            }
        }
    }
}
