//! Compiled programs: equal to the tree evaluator on every counter of every embedded set,
//! clear compile errors, and no heap allocation on the per-frame path.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use framescope_collectors::constants::KNOWN;
use framescope_collectors::db::databases;
use framescope_collectors::expr::{
    compile, parse, BinOp, CompileError, EvalError, Expr, Func, Program, ProgramSet, MAX_STACK,
};
use framescope_collectors::{Constants, CounterSet, RawValues};

// ---------------------------------------------------------------------------------------
// A counting allocator: every allocation made by the current thread is counted, so tests
// running in parallel on other threads do not disturb the count.

struct Counting;

thread_local! {
    static ALLOCATIONS: Cell<usize> = const { Cell::new(0) };
}

fn count_one() {
    // `try_with`: the thread-local may already be gone while the thread exits.
    let _ = ALLOCATIONS.try_with(|c| c.set(c.get() + 1));
}

fn allocations() -> usize {
    ALLOCATIONS.with(Cell::get)
}

// SAFETY: every method forwards to `System`, which upholds the `GlobalAlloc` contract; the
// counter is a const-initialised thread-local `Cell<usize>`, which neither allocates nor
// has a destructor, so counting cannot recurse into the allocator.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count_one();
        // SAFETY: the caller's `layout` obligations are passed on unchanged.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count_one();
        // SAFETY: as for `alloc`.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` was allocated by `System` (through this wrapper) with `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count_one();
        // SAFETY: `ptr` was allocated by `System` with `layout`; the caller guarantees
        // `new_size` is valid for it.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

// ---------------------------------------------------------------------------------------
// A tiny deterministic PRNG (splitmix64).

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    /// Uniform in [0, 1).
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// One input value: absent, NaN, infinite, zero, a small repeated value (so differences
/// like `a - b` hit zero divisors), negative, huge (overflow), or ordinary.
/// `missing_pct` is the chance of an absent or NaN value.
fn input_value(rng: &mut Rng, missing_pct: u64) -> Option<f64> {
    if rng.below(100) < missing_pct {
        return if rng.below(2) == 0 { None } else { Some(f64::NAN) };
    }
    Some(match rng.below(100) {
        0..=1 => f64::INFINITY,
        2..=16 => 0.0,
        17..=36 => (1 + rng.below(4)) as f64,
        37..=41 => -((1 + rng.below(1000)) as f64),
        42..=43 => 1e300,
        _ => rng.unit() * 10f64.powi(rng.below(13) as i32 - 3),
    })
}

fn constants(rng: &mut Rng, drop_pct: u64) -> Constants {
    let mut c = Constants::new();
    for (name, _) in KNOWN {
        if rng.below(100) < drop_pct {
            continue;
        }
        let v = match rng.below(3) {
            0 => [1.0, 2.0, 4.0, 8.0, 16.0][rng.below(5) as usize],
            1 => 1e-3 + rng.unit(),
            _ => 1.0 + rng.unit() * 2000.0,
        };
        c.set(name, v).unwrap();
    }
    c
}

#[derive(Default, Debug)]
struct Tally {
    some: usize,
    none: usize,
    missing_constant: usize,
}

/// Evaluates every counter of `set` with the tree evaluator and with the compiled set, on
/// the same values, and checks they agree bit for bit.
fn compare(set: &CounterSet, ps: &ProgramSet, raw: &RawValues, consts: &Constants, tally: &mut Tally) {
    let mut inputs = vec![0.0; ps.inputs().len()];
    let mut cvals = vec![0.0; ps.constants().len()];
    let mut out = vec![0.0; ps.len()];
    ps.fill_inputs(|n| raw.get(n), &mut inputs);
    let fill = ps.fill_constants(|n| consts.get(n), &mut cvals);
    ps.eval_into(&inputs, &cvals, &mut out);
    for (i, key) in ps.keys().iter().enumerate() {
        let tree = set.evaluate(key, raw, consts);
        let prog = out[i];
        assert_eq!(
            ps.eval(i, &inputs, &cvals).unwrap_or(f64::NAN).to_bits(),
            prog.to_bits()
        );
        match tree {
            Ok(Some(v)) => {
                tally.some += 1;
                assert_eq!(
                    v.to_bits(),
                    prog.to_bits(),
                    "{} {key}: tree {v}, program {prog}",
                    set.gpu()
                );
            }
            Ok(None) => {
                tally.none += 1;
                assert!(prog.is_nan(), "{} {key}: tree None, program {prog}", set.gpu());
            }
            Err(EvalError::MissingConstant(n)) => {
                tally.missing_constant += 1;
                assert!(
                    prog.is_nan(),
                    "{} {key}: tree MissingConstant({n}), program {prog}",
                    set.gpu()
                );
                assert!(consts.get(&n).is_none());
                assert!(
                    matches!(fill, Err(EvalError::MissingConstant(_))),
                    "fill_constants must report it"
                );
            }
            Err(e) => panic!("{} {key}: tree evaluator failed: {e}", set.gpu()),
        }
    }
}

#[test]
fn every_counter_of_every_set_equals_the_tree_evaluator() {
    let dbs = databases().unwrap();
    let mut rng = Rng(0x5eed_f00d);
    let mut tally = Tally::default();
    let mut sets = 0;
    for p in dbs.profiles() {
        let set = dbs.counter_set(&p.name).unwrap();
        let ps = set.programs().unwrap_or_else(|e| panic!("{}: {e}", p.name));
        assert_eq!(ps.len(), set.counters().len());
        assert!(ps.keys().iter().zip(set.counters()).all(|(k, c)| *k == c.key));
        assert!(ps.max_depth() <= MAX_STACK);
        // The input index is exactly the hardware counters the set reads.
        for name in ps.inputs() {
            assert!(set.get(name).is_some_and(|c| !c.is_derived()), "{}: {name}", p.name);
        }
        // (missing %, constant drop %) per vector: all present first, then ever more holes.
        for (missing, drop) in [(0, 0), (0, 0), (5, 0), (10, 0), (25, 0), (50, 0), (5, 30), (20, 50)] {
            let raw: RawValues = ps
                .inputs()
                .iter()
                .filter_map(|n| input_value(&mut rng, missing).map(|v| (n.as_str(), v)))
                .collect();
            let consts = constants(&mut rng, drop);
            compare(set, &ps, &raw, &consts, &mut tally);
        }
        sets += 1;
    }
    assert!(sets >= 5, "{sets} sets");
    // Not vacuous: values, no-values and missing constants all occurred.
    assert!(
        tally.some > 1000 && tally.none > 1000 && tally.missing_constant > 10,
        "{tally:?}"
    );
}

#[test]
fn user_formulas_compile_against_a_set() {
    let set = databases().unwrap().counter_set("mali-g76").unwrap();
    let ps = set.programs().unwrap();
    let e = set
        .bind("max(JM.GPU_ACTIVE, 1) / (MALI_CONFIG_SHADER_CORE_COUNT * 2)")
        .unwrap();
    let p = compile(&e, |n| ps.input_index(n), |n| ps.constant_index(n)).unwrap();
    let mut inputs = vec![f64::NAN; ps.inputs().len()];
    let mut consts = vec![f64::NAN; ps.constants().len()];
    inputs[ps.input_index("JM.GPU_ACTIVE").unwrap()] = 800.0;
    let cores = ps.constant_index("MALI_CONFIG_SHADER_CORE_COUNT").unwrap();
    // A NaN constant is "no value", never zero.
    assert_eq!(p.eval(&inputs, &consts), None);
    consts[cores] = 4.0;
    assert_eq!(p.eval(&inputs, &consts), Some(100.0));
}

// ---------------------------------------------------------------------------------------
// Hand-checked semantics on small expressions. Names starting with `K` are constants.

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

const INPUTS: [&str; 4] = ["a", "b", "z", "big"];

fn program(src: &str) -> Program {
    let e = bind(parse(src).unwrap());
    compile(&e, |n| INPUTS.iter().position(|i| *i == n), |n| (n == "K").then_some(0)).unwrap()
}

fn run(src: &str) -> Option<f64> {
    program(src).eval(&[6.0, 3.0, 0.0, 1e308], &[2.0])
}

#[test]
fn programs_follow_the_tree_evaluators_semantics() {
    assert_eq!(run("a + b * K"), Some(12.0));
    assert_eq!(run("(a + b) * K"), Some(18.0));
    assert_eq!(run("a - b - K"), Some(1.0));
    assert_eq!(run("a / b / K"), Some(1.0));
    assert_eq!(run("-a + max(b, K, 1) - min(a, 10)"), Some(-9.0));
    assert_eq!(run("min(a, b, K, 5)"), Some(2.0));
    assert_eq!(run("a / z"), None);
    assert_eq!(run("a / (b - 3)"), None);
    assert_eq!(run("z / z"), None);
    // Overflow is "no value", even when a later operation would bring it back in range.
    assert_eq!(run("big * big"), None);
    assert_eq!(run("big * big / big"), None);
    assert_eq!(run("-(big * 10) + big"), None);
    assert_eq!(run("min(big * big, a)"), None);
    assert_eq!(run("a / (big * big)"), None);
}

#[test]
fn missing_inputs_and_constants_give_no_value() {
    let p = program("max(a, b) + K");
    assert_eq!(p.eval(&[1.0, 2.0], &[1.0]), Some(3.0));
    // f64::max would ignore the NaN; a missing argument must not be ignored.
    assert_eq!(p.eval(&[f64::NAN, 2.0], &[1.0]), None);
    assert_eq!(p.eval(&[1.0, f64::NAN], &[1.0]), None);
    assert_eq!(p.eval(&[1.0, f64::INFINITY], &[1.0]), None);
    assert_eq!(p.eval(&[1.0, 2.0], &[f64::NAN]), None);
    // Slices that are too short read as missing: no panic.
    assert_eq!(p.eval(&[1.0], &[1.0]), None);
    assert_eq!(p.eval(&[1.0, 2.0], &[]), None);
    assert_eq!(p.eval(&[], &[]), None);
}

#[test]
fn calls_fold_left_and_degenerate_calls_match_the_tree() {
    let p = program("max(a, b, z, big)");
    assert_eq!(p.ops().len(), 7);
    assert_eq!(p.depth(), 2);
    let counter = |n: &str| INPUTS.iter().position(|i| *i == n);
    // Hand-built calls the parser would reject: no arguments is no value, one is itself.
    let empty = Expr::Call(Func::Min, vec![]);
    assert_eq!(compile(&empty, counter, |_| None).unwrap().eval(&[], &[]), None);
    let one = Expr::Call(Func::Max, vec![Expr::Counter("b".into())]);
    assert_eq!(
        compile(&one, counter, |_| None).unwrap().eval(&[0.0, 7.0], &[]),
        Some(7.0)
    );
}

// ---------------------------------------------------------------------------------------
// Compile errors.

fn right_nested(n: usize) -> Expr {
    // x + (x + (x + … x)): each level keeps one more value on the stack.
    let mut e = Expr::Counter("x".into());
    for _ in 1..n {
        e = Expr::bin(BinOp::Add, Expr::Counter("x".into()), e);
    }
    e
}

#[test]
fn compile_errors_are_clear() {
    let any = |_: &str| Some(0);
    let none = |_: &str| None;
    assert_eq!(
        compile(&parse("a + b").unwrap(), any, any),
        Err(CompileError::Unbound("a".into()))
    );
    let e = Expr::bin(BinOp::Mul, Expr::Counter("c".into()), Expr::Const("K".into()));
    assert_eq!(compile(&e, none, any), Err(CompileError::UnknownCounter("c".into())));
    assert_eq!(compile(&e, any, none), Err(CompileError::UnknownConstant("K".into())));
    assert_eq!(
        compile(&right_nested(MAX_STACK + 1), any, any),
        Err(CompileError::TooDeep { limit: MAX_STACK })
    );
    let msg = CompileError::TooDeep { limit: MAX_STACK }.to_string();
    assert!(msg.contains("32"), "{msg}");

    // Exactly at the limit compiles and evaluates.
    let p = compile(&right_nested(MAX_STACK), any, any).unwrap();
    assert_eq!(p.depth(), MAX_STACK);
    assert_eq!(p.eval(&[1.5], &[]), Some(1.5 * MAX_STACK as f64));
    // A long left-associative chain stays at depth 2.
    let long = parse(&vec!["x"; 60].join(" + ")).unwrap();
    let p = compile(&bind(long), any, any).unwrap();
    assert_eq!((p.depth(), p.eval(&[1.0], &[])), (2, Some(60.0)));
}

#[test]
fn a_tall_ast_compiles_without_recursion() {
    let mut e = Expr::Counter("x".into());
    for _ in 0..2_000 {
        e = Expr::Neg(Box::new(e));
    }
    let p = compile(&e, |_| Some(0), |_| None).unwrap();
    assert_eq!((p.depth(), p.eval(&[3.0], &[])), (1, Some(3.0)));
}

#[test]
fn a_set_compile_error_names_the_counter() {
    let good = Expr::Counter("x".into());
    let bad = parse("y").unwrap();
    let err = ProgramSet::compile([("good", &good), ("bad", &bad)]).unwrap_err();
    assert_eq!(err.counter, "bad");
    assert_eq!(err.error, CompileError::Unbound("y".into()));
    assert!(err.to_string().starts_with("bad: "), "{err}");
}

#[test]
fn fill_constants_reports_the_first_missing_one_and_fills_the_rest() {
    let set = databases().unwrap().counter_set("mali-g76").unwrap();
    let ps = set.programs().unwrap();
    assert!(ps.constants().len() >= 2, "{:?}", ps.constants());
    let consts = Constants::mali_bifrost(4, 2, 16).unwrap();
    let mut out = vec![0.0; ps.constants().len()];
    let err = ps.fill_constants(|n| consts.get(n), &mut out).unwrap_err();
    let EvalError::MissingConstant(first) = err else {
        panic!("{err}")
    };
    assert!(consts.get(&first).is_none());
    for (name, v) in ps.constants().iter().zip(&out) {
        assert_eq!(consts.get(name).unwrap_or(f64::NAN).to_bits(), v.to_bits(), "{name}");
    }
    let full = consts.with_sample(0.02, 500.0).unwrap();
    assert_eq!(ps.fill_constants(|n| full.get(n), &mut out), Ok(()));
}

// ---------------------------------------------------------------------------------------
// No allocation on the per-frame path.

#[test]
fn the_counting_allocator_counts() {
    let before = allocations();
    let v = std::hint::black_box(vec![1u8; 64]);
    drop(v);
    assert!(allocations() > before);
}

#[test]
fn evaluating_a_whole_set_does_not_allocate() {
    let dbs = databases().unwrap();
    let mut rng = Rng(42);
    for gpu in ["mali-g76", "amd-rdna3", "intel-gen9"] {
        let set = dbs.counter_set(gpu).unwrap();
        let ps = set.programs().unwrap();
        let raw: RawValues = ps
            .inputs()
            .iter()
            .filter_map(|n| input_value(&mut rng, 5).map(|v| (n.as_str(), v)))
            .collect();
        let consts = constants(&mut rng, 0);
        let mut inputs = vec![0.0; ps.inputs().len()];
        let mut cvals = vec![0.0; ps.constants().len()];
        let mut out = vec![0.0; ps.len()];

        let before = allocations();
        for _ in 0..10_000 {
            ps.fill_inputs(|n| raw.get(n), &mut inputs);
            ps.fill_constants(|n| consts.get(n), &mut cvals).unwrap();
            ps.eval_into(std::hint::black_box(&inputs), &cvals, &mut out);
            std::hint::black_box(&mut out);
        }
        let n = allocations() - before;
        assert_eq!(
            n,
            0,
            "{gpu}: {n} allocations over 10 000 evaluations of {} counters",
            ps.len()
        );
        assert!(out.iter().any(|v| v.is_finite()), "{gpu}: some counter has a value");
    }
}
