use super::ast::{BinOp, Expr, Func};
use super::error::{ParseError, ParseErrorKind};
use super::lexer::{tokenize, Spanned, Tok};

/// Deepest nesting of parentheses, unary minus and calls accepted, and the tallest AST
/// accepted (`MAX_DEPTH * 4`). Both keep the recursive descent, and every recursive walk
/// over the AST (evaluation, printing, resolution), far from a thread's stack limit.
pub const MAX_DEPTH: usize = 64;
const MAX_HEIGHT: usize = MAX_DEPTH * 4;

/// An AST and its height; the height bounds recursion in later walks.
type Node = (Expr, usize);

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
