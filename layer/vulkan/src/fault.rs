//! Fault injection for tests: `FRAMESCOPE_FAULT=present` makes the present hook panic, which
//! proves that a failure inside the layer is contained and the app runs on.

use std::sync::OnceLock;

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Point {
    Present,
}

fn configured() -> Option<Point> {
    static P: OnceLock<Option<Point>> = OnceLock::new();
    *P.get_or_init(|| match std::env::var("FRAMESCOPE_FAULT").ok().as_deref() {
        Some("present") => Some(Point::Present),
        _ => None,
    })
}

pub fn maybe_panic(at: Point) {
    if configured() == Some(at) {
        panic!("fault injected at {:?} (FRAMESCOPE_FAULT)", at as u8);
    }
}
