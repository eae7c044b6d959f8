//! The PTX front end: lexer, AST and parser.
//!
//! Owns: turning PTX text into a syntax tree with positions. Does not own:
//! control flow, SSA or any analysis (see `crate::ir`).

pub mod ast;
pub mod lexer;
pub mod parser;

pub use ast::*;
pub use parser::{parse, ParseError};
