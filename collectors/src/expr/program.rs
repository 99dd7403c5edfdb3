//! Bound equations compiled once into flat postfix programs over fixed arrays.
//!
//! Why: counter backends evaluate every derived counter of a GPU's set on every frame (or
//! every counter interval) on framescope's own threads, next to the application. The tree
//! evaluator ([`eval`](fn@super::eval)) walks a boxed AST, looks every input up by name and
//! collects `min`/`max` arguments into a `Vec`; that is fine for `framescope counters` and
//! tests, but the per-frame path must neither allocate nor look names up. So each resolved
//! expression is compiled once, when the counter set is chosen, into a [`Program`]: a
//! postfix op list in which a hardware counter is an index into an input slice and a
//! symbolic constant an index into a constant slice. [`Program::eval`] runs it on a
//! fixed-size stack array ([`MAX_STACK`] values): no heap allocation, no name lookups, no
//! recursion.
//!
//! A [`ProgramSet`] compiles every counter of a set over one shared input index (the
//! hardware counters the set reads, sorted by name) and one constant index; the caller
//! fills two `f64` slices in that order each frame and gets every counter's value in a
//! third, with [`ProgramSet::eval_into`].
//!
//! Semantics are the tree evaluator's, bit for bit (the same IEEE operations in the same
//! order): a missing input (NaN in the input slice, or an index past its end), a division
//! by zero or any non-finite intermediate value makes the result `None`; `min`/`max` of N
//! arguments is `None` if any argument is. The one difference is a missing constant: the
//! tree evaluator fails with [`EvalError::MissingConstant`], a program cannot fail in the
//! hot path, so a NaN constant (or an index past the constant slice's end) reads as "no
//! value" and the result is `None`. The "fail clearly" rule is kept where constants are
//! bound: [`ProgramSet::fill_constants`] writes NaN for an absent constant and reports it
//! as `MissingConstant`, so the caller is told instead of silently reading zero or NaN.

use std::collections::BTreeSet;
use std::fmt;

use super::ast::{BinOp, Expr, Func};
use super::eval::EvalError;

/// Deepest evaluation stack a program may need. Left-associative chains (`a + b + c + …`)
/// need 2 whatever their length; each right-nested operand adds 1. The embedded databases
/// need at most a handful; a deeper expression fails to compile ([`CompileError::TooDeep`]).
pub const MAX_STACK: usize = 32;

/// One postfix instruction. Leaves push a value, operators pop their operands and push the
/// result. `Min`/`Max` are binary; an N-argument call compiles to a left fold, which is the
/// order the tree evaluator reduces in.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Op {
    /// A literal.
    Num(f64),
    /// `inputs[i]`: a hardware counter value.
    Input(usize),
    /// `constants[i]`: a symbolic constant.
    Const(usize),
    Neg,
    Add,
    Sub,
    Mul,
    Div,
    Min,
    Max,
}

/// Why an expression cannot be compiled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CompileError {
    /// The expression still holds a `Name`: it was never bound to a counter set.
    Unbound(String),
    /// The caller's resolution has no input index for this hardware counter.
    UnknownCounter(String),
    /// The caller's resolution has no constant index for this constant.
    UnknownConstant(String),
    /// Evaluation would need more than [`MAX_STACK`] stack slots.
    TooDeep { limit: usize },
}

impl fmt::Display for CompileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CompileError::Unbound(n) => write!(f, "name '{n}' was not bound to a counter or constant"),
            CompileError::UnknownCounter(n) => write!(f, "no input index for counter '{n}'"),
            CompileError::UnknownConstant(n) => write!(f, "no constant index for constant '{n}'"),
            CompileError::TooDeep { limit } => {
                write!(f, "expression needs more than {limit} evaluation stack slots")
            }
        }
    }
}

impl std::error::Error for CompileError {}

/// A bound expression compiled to postfix ops over input and constant indices.
#[derive(Debug, Clone, PartialEq)]
pub struct Program {
    ops: Vec<Op>,
    depth: usize,
}

/// Compiles a bound expression; see [`Program::compile`].
pub fn compile(
    e: &Expr,
    counter: impl FnMut(&str) -> Option<usize>,
    constant: impl FnMut(&str) -> Option<usize>,
) -> Result<Program, CompileError> {
    Program::compile(e, counter, constant)
}

/// A step of the iterative compiler: visit a subtree, or emit an operator once its operands
/// are emitted.
enum Task<'a> {
    Visit(&'a Expr),
    Emit(Op),
}

impl Program {
    /// Compiles a bound expression. `counter` maps a hardware counter name to its index in
    /// the input slice, `constant` a constant name to its index in the constant slice.
    /// Fails on a `Name` left unbound, a name either resolution does not know, or a stack
    /// depth past [`MAX_STACK`]; the first such problem in source order is reported.
    ///
    /// The walk is iterative, so a tall hand-built AST cannot overflow the thread's stack.
    pub fn compile(
        e: &Expr,
        mut counter: impl FnMut(&str) -> Option<usize>,
        mut constant: impl FnMut(&str) -> Option<usize>,
    ) -> Result<Program, CompileError> {
        let mut ops = Vec::new();
        let (mut height, mut depth) = (0usize, 0usize);
        let mut todo = vec![Task::Visit(e)];
        while let Some(task) = todo.pop() {
            let op = match task {
                Task::Emit(op) => op,
                Task::Visit(e) => match e {
                    Expr::Num(v) => Op::Num(*v),
                    Expr::Name(n) => return Err(CompileError::Unbound(n.clone())),
                    Expr::Counter(n) => Op::Input(counter(n).ok_or_else(|| CompileError::UnknownCounter(n.clone()))?),
                    Expr::Const(n) => Op::Const(constant(n).ok_or_else(|| CompileError::UnknownConstant(n.clone()))?),
                    Expr::Neg(x) => {
                        todo.extend([Task::Emit(Op::Neg), Task::Visit(x)]);
                        continue;
                    }
                    Expr::Bin(op, l, r) => {
                        let op = match op {
                            BinOp::Add => Op::Add,
                            BinOp::Sub => Op::Sub,
                            BinOp::Mul => Op::Mul,
                            BinOp::Div => Op::Div,
                        };
                        todo.extend([Task::Emit(op), Task::Visit(r), Task::Visit(l)]);
                        continue;
                    }
                    Expr::Call(func, args) => {
                        let op = match func {
                            Func::Min => Op::Min,
                            Func::Max => Op::Max,
                        };
                        match args.split_first() {
                            // The tree evaluator reduces no arguments to NaN: no value.
                            None => Op::Num(f64::NAN),
                            Some((first, rest)) => {
                                // Emitted as: first, a1, op, a2, op, … (pushed in reverse).
                                for a in rest.iter().rev() {
                                    todo.extend([Task::Emit(op), Task::Visit(a)]);
                                }
                                todo.push(Task::Visit(first));
                                continue;
                            }
                        }
                    }
                },
            };
            match op {
                Op::Num(_) | Op::Input(_) | Op::Const(_) => height += 1,
                Op::Neg => {}
                Op::Add | Op::Sub | Op::Mul | Op::Div | Op::Min | Op::Max => height = height.saturating_sub(1),
            }
            if height > MAX_STACK {
                return Err(CompileError::TooDeep { limit: MAX_STACK });
            }
            depth = depth.max(height);
            ops.push(op);
        }
        Ok(Program { ops, depth })
    }

    /// The postfix ops, for inspection.
    pub fn ops(&self) -> &[Op] {
        &self.ops
    }

    /// The deepest evaluation stack this program needs (at most [`MAX_STACK`]).
    pub fn depth(&self) -> usize {
        self.depth
    }

    /// Evaluates the program on a stack array, without allocating. `inputs` holds hardware
    /// counter values by the indices given at compilation (NaN: none this time), `constants`
    /// constant values likewise. The result is finite or `None`: `None` on a missing input,
    /// a division by zero, an overflow, or a missing (NaN) constant. An index past the end
    /// of either slice reads as missing; this never panics.
    pub fn eval(&self, inputs: &[f64], constants: &[f64]) -> Option<f64> {
        let mut stack = [0.0f64; MAX_STACK];
        let mut sp = 0usize;
        for &op in &self.ops {
            match op {
                Op::Num(v) => {
                    *stack.get_mut(sp)? = finite(v);
                    sp += 1;
                }
                Op::Input(i) => {
                    *stack.get_mut(sp)? = finite(inputs.get(i).copied().unwrap_or(f64::NAN));
                    sp += 1;
                }
                Op::Const(i) => {
                    *stack.get_mut(sp)? = finite(constants.get(i).copied().unwrap_or(f64::NAN));
                    sp += 1;
                }
                Op::Neg => {
                    let x = stack.get_mut(sp.checked_sub(1)?)?;
                    *x = -*x;
                }
                _ => {
                    sp = sp.checked_sub(1)?;
                    let r = *stack.get(sp)?;
                    let l = stack.get_mut(sp.checked_sub(1)?)?;
                    *l = finite(binary(op, *l, r));
                }
            }
        }
        match sp {
            1 => Some(stack[0]).filter(|v| v.is_finite()),
            _ => None,
        }
    }
}

/// Non-finite values are "no value", carried as NaN, at every node as in the tree evaluator.
fn finite(v: f64) -> f64 {
    if v.is_finite() {
        v
    } else {
        f64::NAN
    }
}

/// Operands are finite or NaN (no value); NaN propagates through every operator.
fn binary(op: Op, l: f64, r: f64) -> f64 {
    match op {
        Op::Add => l + r,
        Op::Sub => l - r,
        Op::Mul => l * r,
        Op::Div if r == 0.0 => f64::NAN,
        Op::Div => l / r,
        // `f64::min`/`max` ignore a NaN operand; a missing argument must not be ignored.
        Op::Min | Op::Max if l.is_nan() || r.is_nan() => f64::NAN,
        Op::Min => f64::min(l, r),
        Op::Max => f64::max(l, r),
        Op::Num(_) | Op::Input(_) | Op::Const(_) | Op::Neg => f64::NAN,
    }
}

/// A counter of a [`ProgramSet`] failed to compile.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProgramSetError {
    pub counter: String,
    pub error: CompileError,
}

impl fmt::Display for ProgramSetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.counter, self.error)
    }
}

impl std::error::Error for ProgramSetError {}

/// Programs for many counters over one shared input index and one constant index.
///
/// Inputs are the hardware counters the programs read, constants the symbolic constants
/// they need, each sorted by name and deduplicated: a fixed order the caller resolves once
/// ([`ProgramSet::input_index`], [`ProgramSet::constant_index`]) and fills every frame.
#[derive(Debug, Clone, PartialEq)]
pub struct ProgramSet {
    keys: Vec<String>,
    programs: Vec<Program>,
    inputs: Vec<String>,
    constants: Vec<String>,
}

impl ProgramSet {
    /// Compiles `(key, bound expression)` pairs; programs keep the pairs' order. Fails on
    /// the first expression that does not compile, naming its key.
    pub fn compile<'a>(exprs: impl IntoIterator<Item = (&'a str, &'a Expr)>) -> Result<Self, ProgramSetError> {
        let exprs: Vec<(&str, &Expr)> = exprs.into_iter().collect();
        let (mut inputs, mut constants) = (BTreeSet::new(), BTreeSet::new());
        for (_, e) in &exprs {
            e.visit_leaves(&mut |leaf| match leaf {
                Expr::Counter(n) => {
                    inputs.insert(n.as_str());
                }
                Expr::Const(n) => {
                    constants.insert(n.as_str());
                }
                _ => {}
            });
        }
        let inputs: Vec<String> = inputs.into_iter().map(String::from).collect();
        let constants: Vec<String> = constants.into_iter().map(String::from).collect();
        let mut programs = Vec::with_capacity(exprs.len());
        for (key, e) in &exprs {
            let p = Program::compile(e, |n| sorted_index(&inputs, n), |n| sorted_index(&constants, n)).map_err(
                |error| ProgramSetError {
                    counter: (*key).to_string(),
                    error,
                },
            )?;
            programs.push(p);
        }
        Ok(ProgramSet {
            keys: exprs.iter().map(|(k, _)| (*k).to_string()).collect(),
            programs,
            inputs,
            constants,
        })
    }

    /// Number of programs (the length `eval_into`'s output should have).
    pub fn len(&self) -> usize {
        self.programs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.programs.is_empty()
    }

    /// Counter keys, in program order.
    pub fn keys(&self) -> &[String] {
        &self.keys
    }

    pub fn programs(&self) -> &[Program] {
        &self.programs
    }

    /// Position of a counter's program (and of its value in `eval_into`'s output).
    pub fn position(&self, key: &str) -> Option<usize> {
        self.keys.iter().position(|k| k == key)
    }

    /// Hardware counters read, in input-slice order (sorted by name).
    pub fn inputs(&self) -> &[String] {
        &self.inputs
    }

    /// Symbolic constants needed, in constant-slice order (sorted by name).
    pub fn constants(&self) -> &[String] {
        &self.constants
    }

    pub fn input_index(&self, name: &str) -> Option<usize> {
        sorted_index(&self.inputs, name)
    }

    pub fn constant_index(&self, name: &str) -> Option<usize> {
        sorted_index(&self.constants, name)
    }

    /// The deepest stack any program needs.
    pub fn max_depth(&self) -> usize {
        self.programs.iter().map(Program::depth).max().unwrap_or(0)
    }

    /// Fills `out` (input-slice order) from a lookup by name; an absent value is NaN.
    /// Slots past `inputs().len()` are left alone. Does not allocate.
    pub fn fill_inputs(&self, mut value: impl FnMut(&str) -> Option<f64>, out: &mut [f64]) {
        for (slot, name) in out.iter_mut().zip(&self.inputs) {
            *slot = value(name).unwrap_or(f64::NAN);
        }
    }

    /// Fills `out` (constant-slice order) from a lookup by name, e.g.
    /// `|n| constants.get(n)`. Every slot is written, NaN for an absent constant, so the
    /// counters that do not need it still evaluate; the first absent constant is reported
    /// as [`EvalError::MissingConstant`] (only that error path allocates).
    pub fn fill_constants(&self, mut value: impl FnMut(&str) -> Option<f64>, out: &mut [f64]) -> Result<(), EvalError> {
        let mut missing = None;
        for (slot, name) in out.iter_mut().zip(&self.constants) {
            *slot = value(name).unwrap_or_else(|| {
                missing = missing.or(Some(name.as_str()));
                f64::NAN
            });
        }
        match missing {
            Some(n) => Err(EvalError::MissingConstant(n.to_string())),
            None => Ok(()),
        }
    }

    /// Evaluates one program; `None` for an index past the end.
    pub fn eval(&self, i: usize, inputs: &[f64], constants: &[f64]) -> Option<f64> {
        self.programs.get(i)?.eval(inputs, constants)
    }

    /// Evaluates every program into `out` (program order; NaN: no value) without
    /// allocating. Writes `min(out.len(), len())` values.
    pub fn eval_into(&self, inputs: &[f64], constants: &[f64], out: &mut [f64]) {
        for (slot, p) in out.iter_mut().zip(&self.programs) {
            *slot = p.eval(inputs, constants).unwrap_or(f64::NAN);
        }
    }
}

fn sorted_index(names: &[String], name: &str) -> Option<usize> {
    names.binary_search_by(|n| n.as_str().cmp(name)).ok()
}
