//! Panic containment for the layers' FFI entry points: their own logic runs inside [`guarded`],
//! so an internal failure becomes a pass-through plus one `framescope:` line, never a crash or
//! an unwind into the app's C frames. Each cdylib links its own copy (its own statics).

use std::cell::Cell;
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Once;

/// One place in a layer that can fail; it logs at most once, so a per-frame failure does not
/// flood the app's stderr.
pub struct Site {
    pub name: &'static str,
    logged: AtomicBool,
}

impl Site {
    pub const fn new(name: &'static str) -> Self {
        Site {
            name,
            logged: AtomicBool::new(false),
        }
    }
}

thread_local! {
    static DEPTH: Cell<u32> = const { Cell::new(0) };
    static LAST_PANIC: Cell<Option<String>> = const { Cell::new(None) };
}

static HOOK: Once = Once::new();

/// Chains onto the process's panic hook so that panics inside the layer are reported by the
/// guard's one line instead of the default hook; the app's own panics (a Rust app) are untouched.
fn install_panic_hook() {
    HOOK.call_once(|| {
        let previous = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            if DEPTH.try_with(|d| d.get()).unwrap_or(0) > 0 {
                let msg = match info.location() {
                    Some(l) => format!("{} ({}:{})", payload_text(info.payload()), l.file(), l.line()),
                    None => payload_text(info.payload()),
                };
                let _ = LAST_PANIC.try_with(|p| p.set(Some(msg)));
            } else {
                previous(info);
            }
        }));
    });
}

fn payload_text(p: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "panic".to_string()
    }
}

/// Runs `f`; on panic logs one line for `site` (first time only) and returns `None`.
pub fn guarded<R>(site: &'static Site, f: impl FnOnce() -> R) -> Option<R> {
    install_panic_hook();
    let _ = DEPTH.try_with(|d| d.set(d.get() + 1));
    let r = panic::catch_unwind(AssertUnwindSafe(f));
    let _ = DEPTH.try_with(|d| d.set(d.get().saturating_sub(1)));
    match r {
        Ok(v) => Some(v),
        Err(_) => {
            let msg = LAST_PANIC
                .try_with(|p| p.take())
                .ok()
                .flatten()
                .unwrap_or_else(|| "unknown".into());
            if !site.logged.swap(true, Ordering::Relaxed) {
                crate::runtime::log::error(format_args!("internal error in {}: {msg}; passing through", site.name));
            }
            None
        }
    }
}

/// Logs `msg` once for `site` (for failures that are not panics, e.g. a missing real function).
pub fn report_once(site: &'static Site, msg: std::fmt::Arguments<'_>) {
    if !site.logged.swap(true, Ordering::Relaxed) {
        crate::runtime::log::error(format_args!("{}: {msg}", site.name));
    }
}

/// Fault injection for tests: with `FRAMESCOPE_FAULT=<point>` (e.g. `present`, `gl_swap`) the
/// hook that calls `maybe_panic("<point>")` panics, which proves that a failure inside a layer
/// is contained and the app runs on.
pub fn maybe_panic(point: &str) {
    static FAULT: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    if FAULT.get_or_init(|| std::env::var("FRAMESCOPE_FAULT").ok()).as_deref() == Some(point) {
        panic!("fault injected at {point} (FRAMESCOPE_FAULT)");
    }
}
