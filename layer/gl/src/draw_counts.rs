//! The draws counted on each thread, by [`DrawKind`]: bumped by the draw hooks (`draws`,
//! `legacy_draws`) and taken by the swap that ends the frame (`frames`). Per thread, because a
//! GL context is current on one thread at a time and the frame ends on the thread that swaps;
//! a plain cell per kind, so counting a draw takes no lock and no atomic.

use framescope_core::frame::{DrawCounts, DrawKind};
use std::cell::Cell;

thread_local! {
    static COUNTS: [Cell<u32>; DrawKind::COUNT] = const { [const { Cell::new(0) }; DrawKind::COUNT] };
}

/// Counts one draw of `kind` on this thread.
#[inline]
pub fn count(kind: DrawKind) {
    add(kind, 1);
}

/// Counts `n` draws of `kind` on this thread.
#[inline]
pub fn add(kind: DrawKind, n: u32) {
    let _ = COUNTS.try_with(|c| {
        let cell = &c[kind as usize];
        cell.set(cell.get().wrapping_add(n));
    });
}

/// The draws counted on this thread since the last call, and resets them.
pub fn take() -> DrawCounts {
    let mut out = DrawCounts::default();
    let _ = COUNTS.try_with(|c| {
        for (o, cell) in out.0.iter_mut().zip(c.iter()) {
            *o = cell.replace(0);
        }
    });
    out
}
