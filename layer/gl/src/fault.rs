//! Fault injection for tests: `FRAMESCOPE_FAULT=gl_swap` makes the swap hook panic, which
//! proves that a failure inside the shim is contained and the app runs on.

use std::sync::OnceLock;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Point {
    Swap,
}

fn configured() -> Option<Point> {
    static P: OnceLock<Option<Point>> = OnceLock::new();
    *P.get_or_init(|| match std::env::var("FRAMESCOPE_FAULT").ok().as_deref() {
        Some("gl_swap") => Some(Point::Swap),
        _ => None,
    })
}

pub fn maybe_panic(at: Point) {
    if configured() == Some(at) {
        panic!("fault injected at {at:?} (FRAMESCOPE_FAULT)");
    }
}
