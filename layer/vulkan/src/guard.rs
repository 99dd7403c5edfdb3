//! Panic containment: every entry point runs its own logic inside `guarded`, so an internal
//! failure becomes a pass-through plus one log line instead of a crash in the host app.

use std::cell::Cell;
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Once;

/// One place in the layer that can fail; logs at most once so a per-frame failure does not
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

/// Chains onto the process's panic hook so that panics inside the layer are not printed by the
/// default hook (the guard prints one line instead); the app's own panics are untouched.
fn install_panic_hook() {
    HOOK.call_once(|| {
        let previous = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            if DEPTH.with(|d| d.get()) > 0 {
                let msg = match info.location() {
                    Some(l) => format!("{} ({}:{})", payload_text(info.payload()), l.file(), l.line()),
                    None => payload_text(info.payload()),
                };
                LAST_PANIC.with(|p| p.set(Some(msg)));
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
    DEPTH.with(|d| d.set(d.get() + 1));
    let r = panic::catch_unwind(AssertUnwindSafe(f));
    DEPTH.with(|d| d.set(d.get() - 1));
    match r {
        Ok(v) => Some(v),
        Err(_) => {
            let msg = LAST_PANIC.with(|p| p.take()).unwrap_or_else(|| "unknown".into());
            if !site.logged.swap(true, Ordering::Relaxed) {
                crate::log::error(format_args!("internal error in {}: {msg}; passing through", site.name));
            }
            None
        }
    }
}
