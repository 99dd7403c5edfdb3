use std::fmt;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
}

impl BinOp {
    fn symbol(self) -> &'static str {
        match self {
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
        }
    }

    fn precedence(self) -> u8 {
        match self {
            BinOp::Add | BinOp::Sub => 1,
            BinOp::Mul | BinOp::Div => 2,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Func {
    Min,
    Max,
}

impl Func {
    pub fn name(self) -> &'static str {
        match self {
            Func::Min => "min",
            Func::Max => "max",
        }
    }

    pub fn from_name(name: &str) -> Option<Func> {
        match name {
            "min" => Some(Func::Min),
            "max" => Some(Func::Max),
            _ => None,
        }
    }
}

/// An equation AST.
///
/// The parser only produces `Name`; binding to a counter set turns each `Name` into a
/// `Counter` (a hardware counter input) or a `Const` (a symbolic constant).
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    Num(f64),
    Name(String),
    Counter(String),
    Const(String),
    Neg(Box<Expr>),
    Bin(BinOp, Box<Expr>, Box<Expr>),
    Call(Func, Vec<Expr>),
}

impl Expr {
    pub fn bin(op: BinOp, l: Expr, r: Expr) -> Expr {
        Expr::Bin(op, Box::new(l), Box::new(r))
    }

    /// Calls `f` on every name-like leaf (`Name`, `Counter`, `Const`), in source order.
    pub fn visit_leaves<'a>(&'a self, f: &mut impl FnMut(&'a Expr)) {
        match self {
            Expr::Num(_) => {}
            Expr::Name(_) | Expr::Counter(_) | Expr::Const(_) => f(self),
            Expr::Neg(e) => e.visit_leaves(f),
            Expr::Bin(_, l, r) => {
                l.visit_leaves(f);
                r.visit_leaves(f);
            }
            Expr::Call(_, args) => args.iter().for_each(|a| a.visit_leaves(f)),
        }
    }

    /// Names of the hardware counters this (bound) expression reads, sorted and deduplicated.
    pub fn counters(&self) -> Vec<&str> {
        self.leaves_of(|e| match e {
            Expr::Counter(n) => Some(n.as_str()),
            _ => None,
        })
    }

    /// Names of the symbolic constants this (bound) expression needs, sorted and deduplicated.
    pub fn constants(&self) -> Vec<&str> {
        self.leaves_of(|e| match e {
            Expr::Const(n) => Some(n.as_str()),
            _ => None,
        })
    }

    fn leaves_of<'a>(&'a self, pick: impl Fn(&'a Expr) -> Option<&'a str>) -> Vec<&'a str> {
        let mut out = Vec::new();
        self.visit_leaves(&mut |e| out.extend(pick(e)));
        out.sort_unstable();
        out.dedup();
        out
    }

    fn precedence(&self) -> u8 {
        match self {
            Expr::Bin(op, _, _) => op.precedence(),
            Expr::Neg(_) => 3,
            _ => 4,
        }
    }
}

/// Prints the equation back in the source syntax with the fewest parentheses that keep
/// its structure, so `parse(e.to_string()) == e` (the fuzz target checks this).
impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Expr::Num(v) => write!(f, "{v}"),
            Expr::Name(n) | Expr::Counter(n) | Expr::Const(n) => f.write_str(n),
            Expr::Neg(e) => {
                f.write_str("-")?;
                write_operand(f, e, e.precedence() < 3)
            }
            Expr::Bin(op, l, r) => {
                let p = op.precedence();
                write_operand(f, l, l.precedence() < p)?;
                write!(f, " {} ", op.symbol())?;
                // Left-associative: an equal-precedence right operand needs parentheses.
                write_operand(f, r, r.precedence() <= p)
            }
            Expr::Call(func, args) => {
                write!(f, "{}(", func.name())?;
                for (i, a) in args.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{a}")?;
                }
                f.write_str(")")
            }
        }
    }
}

fn write_operand(f: &mut fmt::Formatter<'_>, e: &Expr, parens: bool) -> fmt::Result {
    if parens {
        write!(f, "({e})")
    } else {
        write!(f, "{e}")
    }
}
