use std::fmt;

use super::ast::{BinOp, Expr, Func};
use super::lexer::{tokenize, Spanned, Tok};

/// Deepest nesting of parentheses, unary minus and calls accepted, and the tallest AST
/// accepted (`MAX_DEPTH * 4`). Both keep the recursive descent, and every recursive walk
/// over the AST (evaluation, printing, resolution), far from a thread's stack limit.
pub const MAX_DEPTH: usize = 64;
const MAX_HEIGHT: usize = MAX_DEPTH * 4;

/// An AST and its height; the height bounds recursion in later walks.
type Node = (Expr, usize);

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

/// Parses an equation into an AST whose name leaves are all `Expr::Name`.
pub fn parse(src: &str) -> Result<Expr, ParseError> {
    let toks = tokenize(src)?;
    let mut p = Parser { toks, pos: 0, depth: 0 };
    let (e, _) = p.expr()?;
    p.expect(Tok::End, "an operator or end of input")?;
    Ok(e)
}

struct Parser {
    toks: Vec<Spanned>,
    pos: usize,
    depth: usize,
}

impl Parser {
    fn peek(&self) -> &Tok {
        &self.toks[self.pos].0
    }

    fn offset(&self) -> usize {
        self.toks[self.pos].1
    }

    fn bump(&mut self) -> Tok {
        let t = self.toks[self.pos].0.clone();
        if t != Tok::End {
            self.pos += 1;
        }
        t
    }

    fn unexpected(&self, expected: &'static str) -> ParseError {
        ParseError::new(
            self.offset(),
            ParseErrorKind::Unexpected {
                expected,
                found: self.peek().describe(),
            },
        )
    }

    fn expect(&mut self, t: Tok, expected: &'static str) -> Result<(), ParseError> {
        if *self.peek() == t {
            self.bump();
            Ok(())
        } else {
            Err(self.unexpected(expected))
        }
    }

    fn descend(&mut self) -> Result<(), ParseError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(ParseError::new(self.offset(), ParseErrorKind::TooDeep));
        }
        Ok(())
    }

    fn node(&self, e: Expr, height: usize, at: usize) -> Result<Node, ParseError> {
        if height > MAX_HEIGHT {
            return Err(ParseError::new(at, ParseErrorKind::TooDeep));
        }
        Ok((e, height))
    }

    fn expr(&mut self) -> Result<Node, ParseError> {
        let mut lhs = self.term()?;
        loop {
            let op = match self.peek() {
                Tok::Plus => BinOp::Add,
                Tok::Minus => BinOp::Sub,
                _ => return Ok(lhs),
            };
            let at = self.offset();
            self.bump();
            let rhs = self.term()?;
            let h = 1 + lhs.1.max(rhs.1);
            lhs = self.node(Expr::bin(op, lhs.0, rhs.0), h, at)?;
        }
    }

    fn term(&mut self) -> Result<Node, ParseError> {
        let mut lhs = self.unary()?;
        loop {
            let op = match self.peek() {
                Tok::Star => BinOp::Mul,
                Tok::Slash => BinOp::Div,
                _ => return Ok(lhs),
            };
            let at = self.offset();
            self.bump();
            let rhs = self.unary()?;
            let h = 1 + lhs.1.max(rhs.1);
            lhs = self.node(Expr::bin(op, lhs.0, rhs.0), h, at)?;
        }
    }

    fn unary(&mut self) -> Result<Node, ParseError> {
        if *self.peek() == Tok::Minus {
            let at = self.offset();
            self.bump();
            self.descend()?;
            let (e, h) = self.unary()?;
            self.depth -= 1;
            return self.node(Expr::Neg(Box::new(e)), h + 1, at);
        }
        self.primary()
    }

    fn primary(&mut self) -> Result<Node, ParseError> {
        let start = self.offset();
        match self.peek().clone() {
            Tok::Num(v) => {
                self.bump();
                Ok((Expr::Num(v), 1))
            }
            Tok::Ident(name) => {
                self.bump();
                if *self.peek() == Tok::LParen {
                    self.call(name, start)
                } else {
                    Ok((Expr::Name(name), 1))
                }
            }
            Tok::LParen => {
                self.bump();
                self.descend()?;
                let e = self.expr()?;
                self.expect(Tok::RParen, "')'")?;
                self.depth -= 1;
                Ok(e)
            }
            _ => Err(self.unexpected("a number, a name or '('")),
        }
    }

    fn call(&mut self, name: String, start: usize) -> Result<Node, ParseError> {
        let func =
            Func::from_name(&name).ok_or_else(|| ParseError::new(start, ParseErrorKind::UnknownFunction(name)))?;
        self.bump(); // '('
        self.descend()?;
        let (first, mut h) = self.expr()?;
        let mut args = vec![first];
        while *self.peek() == Tok::Comma {
            self.bump();
            let (a, ah) = self.expr()?;
            h = h.max(ah);
            args.push(a);
        }
        self.expect(Tok::RParen, "',' or ')'")?;
        self.depth -= 1;
        if args.len() < 2 {
            return Err(ParseError::new(
                start,
                ParseErrorKind::Arity {
                    func: func.name(),
                    found: args.len(),
                },
            ));
        }
        self.node(Expr::Call(func, args), h + 1, start)
    }
}
