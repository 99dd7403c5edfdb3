use std::collections::HashMap;

use super::*;

fn n(name: &str) -> Expr {
    Expr::Name(name.into())
}

fn num(v: f64) -> Expr {
    Expr::Num(v)
}

fn bin(op: BinOp, l: Expr, r: Expr) -> Expr {
    Expr::bin(op, l, r)
}

fn err(src: &str) -> ParseError {
    parse(src).expect_err(src)
}

#[test]
fn multiplication_binds_tighter_than_addition() {
    assert_eq!(
        parse("a + b * c").unwrap(),
        bin(BinOp::Add, n("a"), bin(BinOp::Mul, n("b"), n("c")))
    );
    assert_eq!(
        parse("a * b + c").unwrap(),
        bin(BinOp::Add, bin(BinOp::Mul, n("a"), n("b")), n("c"))
    );
}

#[test]
fn same_precedence_is_left_associative() {
    assert_eq!(
        parse("a - b - c").unwrap(),
        bin(BinOp::Sub, bin(BinOp::Sub, n("a"), n("b")), n("c"))
    );
    assert_eq!(
        parse("a / b / c").unwrap(),
        bin(BinOp::Div, bin(BinOp::Div, n("a"), n("b")), n("c"))
    );
}

#[test]
fn parentheses_override_precedence_and_nest() {
    assert_eq!(
        parse("(a + b) * c").unwrap(),
        bin(BinOp::Mul, bin(BinOp::Add, n("a"), n("b")), n("c"))
    );
    assert_eq!(
        parse("a / ((b - (c)) * 2)").unwrap(),
        bin(
            BinOp::Div,
            n("a"),
            bin(BinOp::Mul, bin(BinOp::Sub, n("b"), n("c")), num(2.0))
        )
    );
}

#[test]
fn unary_minus_binds_tighter_than_binary_operators() {
    assert_eq!(
        parse("-a * b").unwrap(),
        bin(BinOp::Mul, Expr::Neg(Box::new(n("a"))), n("b"))
    );
    assert_eq!(
        parse("a - -b").unwrap(),
        bin(BinOp::Sub, n("a"), Expr::Neg(Box::new(n("b"))))
    );
    assert_eq!(parse("--a").unwrap(), Expr::Neg(Box::new(Expr::Neg(Box::new(n("a"))))));
}

#[test]
fn numbers_names_and_functions() {
    assert_eq!(parse("1.5e3").unwrap(), num(1500.0));
    assert_eq!(parse("JM.GPU_ACTIVE").unwrap(), n("JM.GPU_ACTIVE"));
    assert_eq!(parse("L2.EXT_RRESP_0_127").unwrap(), n("L2.EXT_RRESP_0_127"));
    assert_eq!(
        parse("max(0, a - b, c)").unwrap(),
        Expr::Call(Func::Max, vec![num(0.0), bin(BinOp::Sub, n("a"), n("b")), n("c")])
    );
    assert_eq!(parse("min(a,b)").unwrap(), Expr::Call(Func::Min, vec![n("a"), n("b")]));
}

#[test]
fn errors_carry_the_offending_position() {
    let e = err("a + * b");
    assert_eq!((e.offset, e.column("a + * b")), (4, 5));
    assert!(matches!(e.kind, ParseErrorKind::Unexpected { .. }), "{e}");
    assert_eq!(err("(a + b").offset, 6);
    assert_eq!(err("a b").offset, 2);
    assert_eq!(err("").offset, 0);
    assert_eq!(err("a $ b").kind, ParseErrorKind::UnexpectedChar('$'));
    assert_eq!(err("JM. X").kind, ParseErrorKind::BadName);
    assert_eq!(err("x + SUM(a)").kind, ParseErrorKind::UnknownFunction("SUM".into()));
    assert_eq!(err("x + SUM(a)").offset, 4);
    assert!(matches!(err("max(a)").kind, ParseErrorKind::Arity { found: 1, .. }));
    assert!(matches!(err("1e999").kind, ParseErrorKind::BadNumber(_)));
    let rendered = err("a + * b").render("a + * b");
    assert!(rendered.ends_with("\n  a + * b\n      ^"), "{rendered}");
}

#[test]
fn deep_nesting_is_an_error_not_a_stack_overflow() {
    let deep = format!("{}a{}", "(".repeat(10_000), ")".repeat(10_000));
    assert_eq!(err(&deep).kind, ParseErrorKind::TooDeep);
    assert_eq!(err(&"-".repeat(10_000)).kind, ParseErrorKind::TooDeep);
    let long = vec!["a"; 10_000].join(" + ");
    assert_eq!(err(&long).kind, ParseErrorKind::TooDeep);
    let ok = format!("{}a{}", "(".repeat(MAX_DEPTH), ")".repeat(MAX_DEPTH));
    assert_eq!(parse(&ok).unwrap(), n("a"));
}

#[test]
fn printing_round_trips() {
    for src in [
        "a - (b - c)",
        "a / (b * c)",
        "-(a + b) * c",
        "max(0, a - b - c) / (d * 1000000)",
        "(a + b) / (c - -d)",
        "a * 0.0001 + 1e-7",
    ] {
        let e = parse(src).unwrap();
        assert_eq!(parse(&e.to_string()).unwrap(), e, "{src} -> {e}");
    }
    assert_eq!(parse("((a) - (b - c))").unwrap().to_string(), "a - (b - c)");
}

struct Env(HashMap<&'static str, f64>, HashMap<&'static str, f64>);

impl Inputs for Env {
    fn counter(&self, name: &str) -> Option<f64> {
        self.0.get(name).copied()
    }
    fn constant(&self, name: &str) -> Option<f64> {
        self.1.get(name).copied()
    }
}

fn bound(src: &str) -> Expr {
    fn bind(e: Expr) -> Expr {
        match e {
            Expr::Name(n) if n.starts_with('K') => Expr::Const(n),
            Expr::Name(n) => Expr::Counter(n),
            Expr::Neg(x) => Expr::Neg(Box::new(bind(*x))),
            Expr::Bin(op, l, r) => Expr::bin(op, bind(*l), bind(*r)),
            Expr::Call(f, a) => Expr::Call(f, a.into_iter().map(bind).collect()),
            e => e,
        }
    }
    bind(parse(src).unwrap())
}

fn env() -> Env {
    Env(
        [("a", 6.0), ("b", 3.0), ("z", 0.0), ("big", 1e308)].into(),
        [("K", 2.0)].into(),
    )
}

#[test]
fn evaluation_follows_precedence() {
    let e = env();
    assert_eq!(eval(&bound("a + b * K"), &e), Ok(Some(12.0)));
    assert_eq!(eval(&bound("(a + b) * K"), &e), Ok(Some(18.0)));
    assert_eq!(eval(&bound("a - b - K"), &e), Ok(Some(1.0)));
    assert_eq!(eval(&bound("a / b / K"), &e), Ok(Some(1.0)));
    assert_eq!(eval(&bound("-a + max(b, K, 1) - min(a, 10)"), &e), Ok(Some(-9.0)));
}

#[test]
fn division_by_zero_and_missing_inputs_have_no_value() {
    let e = env();
    assert_eq!(eval(&bound("a / z"), &e), Ok(None));
    assert_eq!(eval(&bound("a / (b - 3)"), &e), Ok(None));
    assert_eq!(eval(&bound("a + missing"), &e), Ok(None));
    assert_eq!(eval(&bound("max(a, missing)"), &e), Ok(None));
    // Overflow to infinity is "no value" too: JSON output never holds NaN or inf.
    assert_eq!(eval(&bound("big * big"), &e), Ok(None));
    assert_eq!(eval(&bound("z / z"), &e), Ok(None));
}

#[test]
fn an_unbound_constant_is_an_error_even_beside_a_missing_counter() {
    let e = env();
    assert_eq!(
        eval(&bound("missing * KX"), &e),
        Err(EvalError::MissingConstant("KX".into()))
    );
    assert_eq!(eval(&parse("a").unwrap(), &e), Err(EvalError::Unbound("a".into())));
}
