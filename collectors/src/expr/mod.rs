//! The derived-counter equation language.
//!
//! Grammar (comparison-free, as seed 002 describes derived equations):
//!
//! ```text
//! expr    := term (('+' | '-') term)*
//! term    := unary (('*' | '/') unary)*
//! unary   := '-' unary | primary
//! primary := NUMBER | NAME | FUNC '(' expr (',' expr)* ')' | '(' expr ')'
//! NAME    := IDENT ('.' IDENT)*          e.g. JM.GPU_ACTIVE, GPUBusyCycles, GPU_MHZ
//! FUNC    := 'min' | 'max'
//! ```
//!
//! A `NAME` is a counter reference or a symbolic constant; which one is decided when the
//! equation is bound to a counter set, because the parser cannot know a GPU's counters.
//!
//! A bound equation is evaluated by walking the tree ([`eval`](fn@eval)) or, on the
//! per-frame path, compiled once into a postfix [`Program`] over fixed arrays ([`program`]).

mod ast;
mod error;
mod eval;
mod lexer;
mod parser;
pub mod program;

pub use ast::{BinOp, Expr, Func};
pub use error::{ParseError, ParseErrorKind};
pub use eval::{eval, EvalError, Inputs};
pub use parser::{parse, MAX_DEPTH};
pub use program::{compile, CompileError, Program, ProgramSet, ProgramSetError, MAX_STACK};

#[cfg(test)]
mod tests;
