//! PTX abstract syntax tree, borrowing all names from the source text.
//!
//! Owns: the shape of a parsed module (directives, functions, statements,
//! instructions, operands) and small accessors on it. Does not own: semantics
//! of instructions (opcodes, types, which operands are defined, address
//! spaces…); that is `crate::ir::inst`'s job. Every instruction is kept with
//! its opcode text and operands, known or not.

pub use super::lexer::Pos;

#[derive(Debug, Default)]
pub struct Module<'a> {
    pub version: Option<&'a str>,
    pub targets: Vec<&'a str>,
    pub address_size: u32,
    /// `.file N "path"` entries, in order of appearance.
    pub files: Vec<FileEntry<'a>>,
    /// Module-scope variables (`.global`, `.shared`, `.const`, …).
    pub globals: Vec<VarDecl<'a>>,
    pub functions: Vec<Function<'a>>,
    /// `.section NAME { … }` blocks, kept as raw text (DWARF, decoded lazily).
    pub sections: Vec<Section<'a>>,
    /// Other module-level directives we keep but do not interpret.
    pub other: Vec<(&'a str, Pos)>,
}

#[derive(Debug, Clone, Copy)]
pub struct FileEntry<'a> {
    pub index: u32,
    pub path: &'a str,
}

#[derive(Debug, Clone)]
pub struct Section<'a> {
    pub name: &'a str,
    /// Text between the braces (or to the next section for GAS-style ones).
    pub body: &'a str,
    /// Position of the first byte of `body`.
    pub body_pos: Pos,
}

#[derive(Debug, Clone)]
pub struct VarDecl<'a> {
    pub linkage: Option<&'a str>,
    /// State space, e.g. `.shared`.
    pub space: &'a str,
    pub align: Option<u32>,
    pub vector: Option<&'a str>,
    pub ty: &'a str,
    pub name: &'a str,
    /// Array dimensions; `None` for `[]`.
    pub dims: Vec<Option<u64>>,
    pub pos: Pos,
}

#[derive(Debug, Clone)]
pub struct Param<'a> {
    /// `.param` or `.reg`.
    pub space: &'a str,
    pub ty: &'a str,
    pub name: &'a str,
    pub align: Option<u32>,
    /// `.ptr .global` etc.: the pointee space, if given.
    pub ptr_space: Option<&'a str>,
    pub is_ptr: bool,
    pub array: Option<u64>,
    pub pos: Pos,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Perf {
    pub maxntid: Option<[u32; 3]>,
    pub reqntid: Option<[u32; 3]>,
    pub minnctapersm: Option<u32>,
    pub maxnreg: Option<u32>,
}

#[derive(Debug)]
pub struct Function<'a> {
    pub name: &'a str,
    pub pos: Pos,
    pub is_entry: bool,
    pub linkage: Option<&'a str>,
    pub returns: Vec<Param<'a>>,
    pub params: Vec<Param<'a>>,
    pub perf: Perf,
    pub noreturn: bool,
    /// `None` for a declaration (prototype) without a body.
    pub body: Option<Vec<Stmt<'a>>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Loc {
    pub file: u32,
    pub line: u32,
    pub col: u32,
    /// `inlined_at F L C` (newer LLVM).
    pub inlined_at: Option<(u32, u32, u32)>,
    pub pos: Pos,
}

#[derive(Debug, Clone)]
pub struct RegDecl<'a> {
    pub ty: &'a str,
    pub vector: Option<&'a str>,
    /// Name and, for `%r<5>`, the count of numbered registers.
    pub names: Vec<(&'a str, Option<u32>)>,
    pub pos: Pos,
}

#[derive(Debug, Clone)]
pub enum Stmt<'a> {
    Label(&'a str, Pos),
    Inst(Instruction<'a>),
    Loc(Loc),
    Reg(RegDecl<'a>),
    Var(VarDecl<'a>),
    Pragma(&'a str, Pos),
    /// `{` opening a nested scope (inline asm, call sequences).
    ScopeOpen(Pos),
    ScopeClose(Pos),
    /// `label: .branchtargets L1, L2, …;`
    BranchTargets(Vec<&'a str>, Pos),
    /// Another directive kept generically (`.callprototype`, `.file`, …).
    Directive(&'a str, Pos),
}

/// An instruction's operands: up to three stored inline (no allocation for
/// almost every instruction), more spilled to a `Vec`. Dereferences to a
/// slice. (Written here rather than using `smallvec` because that type is
/// invariant in its lifetime, which the borrowed AST cannot afford.)
#[derive(Clone, PartialEq)]
pub struct Operands<'a> {
    len: u8,
    inline: [Operand<'a>; 3],
    /// All operands, once there are more than three (boxed: one pointer
    /// keeps `Operands` small for the common case).
    #[allow(clippy::box_collection)]
    spill: Option<Box<Vec<Operand<'a>>>>,
}

impl<'a> Operands<'a> {
    pub fn new() -> Self {
        Operands { len: 0, inline: [Operand::Sink, Operand::Sink, Operand::Sink], spill: None }
    }
    pub fn push(&mut self, o: Operand<'a>) {
        let n = self.len as usize;
        match &mut self.spill {
            None if n < 3 => {
                self.inline[n] = o;
                self.len += 1;
            }
            None => {
                let mut v: Vec<Operand<'a>> = self.inline.iter_mut().map(|x| std::mem::replace(x, Operand::Sink)).collect();
                v.push(o);
                self.spill = Some(Box::new(v));
                self.len = self.len.saturating_add(1);
            }
            Some(v) => {
                v.push(o);
                self.len = self.len.saturating_add(1);
            }
        }
    }
}

impl Default for Operands<'_> {
    fn default() -> Self {
        Self::new()
    }
}

impl<'a> std::ops::Deref for Operands<'a> {
    type Target = [Operand<'a>];
    fn deref(&self) -> &[Operand<'a>] {
        match &self.spill {
            None => &self.inline[..self.len as usize],
            Some(v) => v,
        }
    }
}

impl std::fmt::Debug for Operands<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl<'a> FromIterator<Operand<'a>> for Operands<'a> {
    fn from_iter<I: IntoIterator<Item = Operand<'a>>>(it: I) -> Self {
        let mut o = Operands::new();
        for x in it {
            o.push(x);
        }
        o
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Guard<'a> {
    pub negated: bool,
    pub reg: &'a str,
}

#[derive(Debug, Clone)]
pub struct Instruction<'a> {
    pub guard: Option<Guard<'a>>,
    /// Full dotted opcode, e.g. `ld.global.nc.v2.f32` (its meaning is
    /// decoded once, by `crate::ir::inst::decode`).
    pub opcode: &'a str,
    /// Operands (most instructions have at most three: stored inline).
    pub operands: Operands<'a>,
    pub pos: Pos,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Operand<'a> {
    /// `%name`, or a name declared with `.reg`.
    Reg(&'a str),
    Imm(i64),
    Float(f64),
    /// A label, function, variable or other symbol.
    Sym(&'a str),
    /// `sym+off`
    SymOff(&'a str, i32),
    /// `[base+off]`, and `[a, b]` forms (texture) in `extra`.
    Addr(Box<Address<'a>>),
    /// `{a, b, …}` vector.
    Vector(Box<[Operand<'a>]>),
    /// `(a, b, …)` parameter list of `call`.
    List(Box<[Operand<'a>]>),
    /// `!%p`
    Not(&'a str),
    /// `%p|%q`, kept as its source text (see [`split_pair`]).
    Pair(&'a str),
    /// `_`
    Sink,
}

/// The two registers of a `%p|%q` operand.
pub fn split_pair(text: &str) -> (&str, &str) {
    let (a, b) = text.split_once('|').unwrap_or((text, "_"));
    (a.trim(), b.trim())
}

#[derive(Debug, Clone, PartialEq)]
pub struct Address<'a> {
    pub base: Option<Operand<'a>>,
    pub offset: i64,
    pub extra: Vec<Operand<'a>>,
}

impl<'a> Module<'a> {
    /// Path of `.file` index `i`.
    pub fn file(&self, i: u32) -> Option<&'a str> {
        self.files.iter().rev().find(|f| f.index == i).map(|f| f.path)
    }
    pub fn section(&self, name: &str) -> Option<&Section<'a>> {
        self.sections.iter().find(|s| s.name == name)
    }
    /// Number of instructions in all function bodies.
    pub fn instruction_count(&self) -> usize {
        self.functions.iter().filter_map(|f| f.body.as_ref()).map(|b| b.iter().filter(|s| matches!(s, Stmt::Inst(_))).count()).sum()
    }
}

impl<'s, 'a> IntoIterator for &'s Operands<'a> {
    type Item = &'s Operand<'a>;
    type IntoIter = std::slice::Iter<'s, Operand<'a>>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

#[cfg(test)]
mod size_tests {
    /// The parser's speed depends on compact statements: keep operands at 24 bytes.
    #[test]
    fn operands_stay_small() {
        assert_eq!(std::mem::size_of::<super::Operand>(), 24);
        assert!(std::mem::size_of::<super::Stmt>() <= 144);
    }

    #[test]
    fn operands_spill_past_three() {
        let mut o = super::Operands::new();
        for k in 0..5 {
            o.push(super::Operand::Imm(k));
        }
        assert_eq!(o.iter().map(|x| if let super::Operand::Imm(k) = x { *k } else { -1 }).collect::<Vec<_>>(), vec![0, 1, 2, 3, 4]);
    }
}
