//! Counter model, equation engine, counter databases and platform backends.
//!
//! * [`model`]: what a counter is (basic, scaled, derived), its block, unit and scopes.
//! * [`expr`]: the derived-counter equation language (lexer, parser, AST, evaluator).
//! * [`constants`]: symbolic constants bound per GPU and per sample at run time.
//! * [`catalogue`]: a per-GPU counter set, resolved to hardware-only expressions.
//! * [`db`]: the embedded vendor databases (`collectors/db/*.json`) and their loaders.
//! * [`sample`]: raw values, instance aggregation and accumulation over draws/frames.
//! * [`listing`]: text/JSON rendering shared by `framescope counters`.
//! * [`source`]: the `CounterSource` trait every backend implements.
//! * [`display`]: display-time sources (X11 Present, Wayland presentation feedback).
//! * [`input`]: the toggle keys of native Wayland apps, from their keyboard events.
// A safe function never dereferences a raw pointer it was handed (checked, not only by review).
#![deny(clippy::not_unsafe_ptr_arg_deref)]

pub mod builtin;
pub mod catalogue;
pub mod collector;
pub mod constants;
pub mod db;
pub mod display;
pub mod expr;
pub mod input;
pub mod intel;
pub mod listing;
pub mod mali;
pub mod model;
pub mod nvidia;
pub mod raw_values;
pub mod seam;
pub mod source;
pub mod sources;
pub mod sys;

pub use catalogue::{CounterSet, SetError};
pub use constants::{ConstantError, Constants};
pub use db::{databases, Databases, DbError};
pub use expr::{parse, EvalError, Expr, ParseError};
pub use model::{BlockType, ClockDomain, Counter, CounterId, CounterKind, Scope, Unit};
pub use raw_values::{Accumulator, InstanceValues, RawValues};
pub use source::{CounterScope, CounterSource, GpuHint, ReadError, SourceCounter, StartError};
