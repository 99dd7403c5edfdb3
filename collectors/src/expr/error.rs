//! What the lexer and the parser report: where in the text an equation is wrong, and how.

use std::fmt;

#[derive(Debug, Clone, PartialEq)]
pub enum ParseErrorKind {
    UnexpectedChar(char),
    BadNumber(String),
    BadName,
    Unexpected { expected: &'static str, found: String },
    UnknownFunction(String),
    Arity { func: &'static str, found: usize },
    TooDeep,
}

/// A parse error at a byte offset of the source text.
#[derive(Debug, Clone, PartialEq)]
pub struct ParseError {
    pub offset: usize,
    pub kind: ParseErrorKind,
}

impl ParseError {
    pub(crate) fn new(offset: usize, kind: ParseErrorKind) -> Self {
        ParseError { offset, kind }
    }

    /// 1-based column (in characters) of the error in `src`.
    pub fn column(&self, src: &str) -> usize {
        let end = self.offset.min(src.len());
        src.get(..end).map_or(end, |s| s.chars().count()) + 1
    }

    /// The source line with a caret under the error, for terminal output.
    pub fn render(&self, src: &str) -> String {
        let col = self.column(src);
        format!("{self}\n  {src}\n  {}^", " ".repeat(col - 1))
    }
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "at offset {}: ", self.offset)?;
        match &self.kind {
            ParseErrorKind::UnexpectedChar(c) => write!(f, "unexpected character {c:?}"),
            ParseErrorKind::BadNumber(t) => write!(f, "invalid or out-of-range number '{t}'"),
            ParseErrorKind::BadName => write!(f, "'.' must be followed by a name segment"),
            ParseErrorKind::Unexpected { expected, found } => {
                write!(f, "expected {expected}, found {found}")
            }
            ParseErrorKind::UnknownFunction(n) => {
                write!(f, "unknown function '{n}' (known: min, max)")
            }
            ParseErrorKind::Arity { func, found } => {
                write!(f, "{func}() takes at least 2 arguments, found {found}")
            }
            ParseErrorKind::TooDeep => write!(f, "expression nested too deeply"),
        }
    }
}

impl std::error::Error for ParseError {}
