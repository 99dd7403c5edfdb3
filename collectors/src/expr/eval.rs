use std::fmt;

use super::ast::{BinOp, Expr, Func};

/// Values an expression reads: hardware counter values (already aggregated over block
/// instances and scaled) and symbolic constants.
pub trait Inputs {
    fn counter(&self, name: &str) -> Option<f64>;
    fn constant(&self, name: &str) -> Option<f64>;
}

/// Errors are reserved for mistakes in how the engine is used; a missing counter value or
/// a division by zero is an ordinary "no value" (`Ok(None)`, JSON `null`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EvalError {
    /// The expression still holds a `Name`: it was never bound to a counter set.
    Unbound(String),
    /// A symbolic constant has no value for this GPU or sample (seed 002: constants are
    /// bound at run time; a missing one must fail clearly, not read as zero).
    MissingConstant(String),
    /// The counter set has no counter with this key.
    UnknownCounter(String),
}

impl fmt::Display for EvalError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EvalError::Unbound(n) => write!(f, "name '{n}' was not bound to a counter or constant"),
            EvalError::MissingConstant(n) => write!(f, "constant {n} has no value for this GPU"),
            EvalError::UnknownCounter(n) => write!(f, "no counter named '{n}'"),
        }
    }
}

impl std::error::Error for EvalError {}

/// Evaluates a bound expression. The result is always finite or `None`.
pub fn eval(e: &Expr, inputs: &dyn Inputs) -> Result<Option<f64>, EvalError> {
    let v = match e {
        Expr::Num(v) => Some(*v),
        Expr::Name(n) => return Err(EvalError::Unbound(n.clone())),
        Expr::Counter(n) => inputs.counter(n),
        Expr::Const(n) => Some(
            inputs
                .constant(n)
                .ok_or_else(|| EvalError::MissingConstant(n.clone()))?,
        ),
        Expr::Neg(x) => eval(x, inputs)?.map(|v| -v),
        Expr::Bin(op, l, r) => {
            // Both sides are evaluated first so a missing constant is reported even when
            // the other side has no value.
            let (l, r) = (eval(l, inputs)?, eval(r, inputs)?);
            match (l, r) {
                (Some(l), Some(r)) => apply(*op, l, r),
                _ => None,
            }
        }
        Expr::Call(func, args) => {
            let vals = args.iter().map(|a| eval(a, inputs)).collect::<Result<Vec<_>, _>>()?;
            let vals: Option<Vec<f64>> = vals.into_iter().collect();
            vals.map(|vs| {
                let pick = match func {
                    Func::Min => f64::min,
                    Func::Max => f64::max,
                };
                vs.into_iter().reduce(pick).unwrap_or(f64::NAN)
            })
        }
    };
    Ok(v.filter(|v| v.is_finite()))
}

fn apply(op: BinOp, l: f64, r: f64) -> Option<f64> {
    match op {
        BinOp::Add => Some(l + r),
        BinOp::Sub => Some(l - r),
        BinOp::Mul => Some(l * r),
        BinOp::Div if r == 0.0 => None,
        BinOp::Div => Some(l / r),
    }
}
