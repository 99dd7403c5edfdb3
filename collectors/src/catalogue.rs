//! A per-GPU counter set: validated, with every counter resolved to an expression over
//! hardware counters and constants only (seed 002: resolution is per GPU, because the
//! same derived name can be computed differently on another GPU).

use std::collections::{BTreeSet, HashMap};
use std::fmt;

use crate::constants::{self, Constants};
use crate::expr::{self, BinOp, EvalError, Expr, Inputs, ParseError, ProgramSet, ProgramSetError};
use crate::model::{ClockDomain, Counter, CounterKind};
use crate::raw_values::{Accumulator, RawValues};

#[derive(Debug, Clone, PartialEq)]
pub enum SetError {
    DuplicateKey(String),
    DuplicateId {
        a: String,
        b: String,
    },
    /// An equation names something that is neither a counter of this set nor a constant.
    UnknownName {
        counter: String,
        name: String,
    },
    /// A name is both a counter and a constant.
    Ambiguous(String),
    /// Derived counters that reference each other in a loop; the path ends where it began.
    Cycle(Vec<String>),
    Parse {
        counter: String,
        equation: String,
        error: ParseError,
    },
}

impl fmt::Display for SetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SetError::DuplicateKey(k) => write!(f, "counter '{k}' is defined twice"),
            SetError::DuplicateId { a, b } => write!(f, "counters '{a}' and '{b}' share an id"),
            SetError::UnknownName { counter, name } => {
                write!(f, "{counter}: unknown counter or constant '{name}'")
            }
            SetError::Ambiguous(n) => write!(f, "'{n}' is both a counter and a constant"),
            SetError::Cycle(path) => write!(f, "derived counters form a cycle: {}", path.join(" -> ")),
            SetError::Parse {
                counter,
                equation,
                error,
            } => {
                write!(f, "{counter}: {}", error.render(equation))
            }
        }
    }
}

impl std::error::Error for SetError {}

#[derive(Debug, Clone)]
pub struct CounterSet {
    gpu: String,
    db: String,
    counters: Vec<Counter>,
    index: HashMap<String, usize>,
    /// Hardware-only expression of each counter, same order as `counters`.
    resolved: Vec<Expr>,
}

impl CounterSet {
    /// Validates the counters and resolves every one of them; fails on duplicate keys or
    /// ids, unknown names and reference cycles.
    pub fn new(gpu: &str, db: &str, counters: Vec<Counter>) -> Result<Self, SetError> {
        let mut index = HashMap::new();
        let mut ids = HashMap::new();
        for (i, c) in counters.iter().enumerate() {
            if index.insert(c.key.clone(), i).is_some() {
                return Err(SetError::DuplicateKey(c.key.clone()));
            }
            if constants::is_known(&c.key) {
                return Err(SetError::Ambiguous(c.key.clone()));
            }
            if let Some(j) = ids.insert(c.id, i) {
                let a = counters[j].key.clone();
                return Err(SetError::DuplicateId { a, b: c.key.clone() });
            }
        }
        let mut r = Resolver {
            counters: &counters,
            index: &index,
            done: vec![None; counters.len()],
            stack: Vec::new(),
        };
        for i in 0..counters.len() {
            r.resolve(i)?;
        }
        let resolved = r.done.into_iter().map(|e| e.expect("every counter resolved")).collect();
        Ok(CounterSet {
            gpu: gpu.into(),
            db: db.into(),
            counters,
            index,
            resolved,
        })
    }

    pub fn gpu(&self) -> &str {
        &self.gpu
    }

    pub fn db(&self) -> &str {
        &self.db
    }

    pub fn counters(&self) -> &[Counter] {
        &self.counters
    }

    pub fn get(&self, key: &str) -> Option<&Counter> {
        self.index.get(key).map(|&i| &self.counters[i])
    }

    /// Looks a counter up by key, or failing that case-insensitively (for the CLI).
    pub fn find(&self, name: &str) -> Option<&Counter> {
        self.get(name)
            .or_else(|| self.counters.iter().find(|c| c.key.eq_ignore_ascii_case(name)))
    }

    /// The expression of `key` over hardware counters and constants only.
    pub fn resolved(&self, key: &str) -> Option<&Expr> {
        self.index.get(key).map(|&i| &self.resolved[i])
    }

    /// True when the counter's hardware inputs come from both the top-level and the
    /// shader-core clock domain: such ratios read below 100 % at full load whenever the
    /// domains run at different frequencies (seed 002).
    pub fn cross_clock_domain(&self, key: &str) -> bool {
        let Some(e) = self.resolved(key) else { return false };
        let domains: BTreeSet<_> = e
            .counters()
            .into_iter()
            .filter_map(|n| self.get(n).and_then(|c| c.block.clock_domain()))
            .map(|d| d == ClockDomain::TopLevel)
            .collect();
        domains.len() > 1
    }

    /// Parses and binds an equation that is not in the database (a user's HUD formula).
    pub fn bind(&self, equation: &str) -> Result<Expr, SetError> {
        let e = expr::parse(equation).map_err(|error| SetError::Parse {
            counter: "<formula>".into(),
            equation: equation.into(),
            error,
        })?;
        let mut r = Resolver {
            counters: &self.counters,
            index: &self.index,
            done: self.resolved.iter().cloned().map(Some).collect(),
            stack: Vec::new(),
        };
        r.substitute("<formula>", &e)
    }

    /// Evaluates a counter on raw values (summed over instances, unscaled).
    pub fn evaluate(&self, key: &str, raw: &RawValues, consts: &Constants) -> Result<Option<f64>, EvalError> {
        let e = self
            .resolved(key)
            .ok_or_else(|| EvalError::UnknownCounter(key.into()))?;
        expr::eval(e, &SampleInputs { raw, consts })
    }

    /// Evaluates a bound expression (see [`CounterSet::bind`]).
    pub fn evaluate_expr(&self, e: &Expr, raw: &RawValues, consts: &Constants) -> Result<Option<f64>, EvalError> {
        expr::eval(e, &SampleInputs { raw, consts })
    }

    /// Compiles every counter, in set order, into programs over one shared input index
    /// (see [`ProgramSet`]), for allocation-free evaluation every frame.
    pub fn programs(&self) -> Result<ProgramSet, ProgramSetError> {
        ProgramSet::compile(self.counters.iter().map(|c| c.key.as_str()).zip(&self.resolved))
    }

    /// An accumulator that refuses to sum this set's non-additive inputs.
    pub fn accumulator(&self) -> Accumulator {
        Accumulator::new(
            self.counters
                .iter()
                .filter(|c| !c.is_derived() && !c.additive)
                .map(|c| c.key.clone()),
        )
    }
}

struct SampleInputs<'a> {
    raw: &'a RawValues,
    consts: &'a Constants,
}

impl Inputs for SampleInputs<'_> {
    fn counter(&self, name: &str) -> Option<f64> {
        self.raw.get(name)
    }

    fn constant(&self, name: &str) -> Option<f64> {
        self.consts.get(name)
    }
}

struct Resolver<'a> {
    counters: &'a [Counter],
    index: &'a HashMap<String, usize>,
    done: Vec<Option<Expr>>,
    /// Derived counters being resolved, outermost first, to report cycles.
    stack: Vec<usize>,
}

impl Resolver<'_> {
    fn resolve(&mut self, i: usize) -> Result<Expr, SetError> {
        if let Some(e) = &self.done[i] {
            return Ok(e.clone());
        }
        if let Some(pos) = self.stack.iter().position(|&j| j == i) {
            let mut path: Vec<String> = self.stack[pos..]
                .iter()
                .map(|&j| self.counters[j].key.clone())
                .collect();
            path.push(self.counters[i].key.clone());
            return Err(SetError::Cycle(path));
        }
        let c = &self.counters[i];
        let e = match &c.kind {
            CounterKind::Basic => Expr::Counter(c.key.clone()),
            CounterKind::Scaled { multiplier } => Expr::bin(
                BinOp::Mul,
                Expr::Counter(c.key.clone()),
                Expr::Num(f64::from(*multiplier)),
            ),
            CounterKind::Derived { expr, .. } => {
                self.stack.push(i);
                let e = self.substitute(&c.key, expr);
                self.stack.pop();
                e?
            }
        };
        self.done[i] = Some(e.clone());
        Ok(e)
    }

    fn substitute(&mut self, owner: &str, e: &Expr) -> Result<Expr, SetError> {
        Ok(match e {
            Expr::Name(n) | Expr::Counter(n) | Expr::Const(n) => {
                if let Some(&j) = self.index.get(n) {
                    self.resolve(j)?
                } else if constants::is_known(n) {
                    Expr::Const(n.clone())
                } else {
                    return Err(SetError::UnknownName {
                        counter: owner.into(),
                        name: n.clone(),
                    });
                }
            }
            Expr::Num(v) => Expr::Num(*v),
            Expr::Neg(x) => Expr::Neg(Box::new(self.substitute(owner, x)?)),
            Expr::Bin(op, l, r) => Expr::bin(*op, self.substitute(owner, l)?, self.substitute(owner, r)?),
            Expr::Call(f, args) => Expr::Call(
                *f,
                args.iter()
                    .map(|a| self.substitute(owner, a))
                    .collect::<Result<_, _>>()?,
            ),
        })
    }
}
