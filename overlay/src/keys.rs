//! The HUD's show/hide key, read from X11 with `XQueryKeymap` on a connection of our own
//! (libX11 is dlopen'ed, so the layers do not link it). Polling reads the key state without
//! grabbing anything: the app still gets every key. No X11 means no hotkey (one log line).

use parking_lot::Mutex;
use std::ffi::{c_char, c_int, c_ulong, c_void, CString};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// How often the keyboard is read (a round trip to the X server).
const POLL: Duration = Duration::from_millis(100);

static VISIBLE: AtomicBool = AtomicBool::new(true);

/// Whether the HUD is shown (toggled by the key).
pub fn visible() -> bool {
    VISIBLE.load(Ordering::Relaxed)
}

type XOpenDisplay = unsafe extern "C" fn(*const c_char) -> *mut c_void;
type XQueryKeymap = unsafe extern "C" fn(*mut c_void, *mut c_char) -> c_int;
type XStringToKeysym = unsafe extern "C" fn(*const c_char) -> c_ulong;
type XKeysymToKeycode = unsafe extern "C" fn(*mut c_void, c_ulong) -> u8;

struct X11 {
    display: *mut c_void,
    query: XQueryKeymap,
    /// Keycodes that must all be down.
    codes: Vec<u8>,
}

// SAFETY: the display connection is ours alone and only used under the STATE mutex.
unsafe impl Send for X11 {}

enum State {
    Untried,
    Off,
    On { x: X11, last: Instant, down: bool },
}

static STATE: Mutex<State> = Mutex::new(State::Untried);

fn open(combo: &str) -> Result<X11, String> {
    if std::env::var_os("DISPLAY").is_none_or(|d| d.is_empty()) {
        return Err("no DISPLAY".into());
    }
    // SAFETY: dlopen/dlsym with NUL-terminated names; the library stays loaded for the life of
    // the process (never dlclosed), so the function pointers stay valid.
    unsafe {
        let lib = libc::dlopen(c"libX11.so.6".as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL);
        if lib.is_null() {
            return Err("libX11.so.6 not found".into());
        }
        let sym = |name: &std::ffi::CStr| {
            let p = libc::dlsym(lib, name.as_ptr());
            (!p.is_null()).then_some(p)
        };
        let (Some(open), Some(query), Some(to_sym), Some(to_code)) = (
            sym(c"XOpenDisplay"),
            sym(c"XQueryKeymap"),
            sym(c"XStringToKeysym"),
            sym(c"XKeysymToKeycode"),
        ) else {
            return Err("libX11 lacks XQueryKeymap".into());
        };
        let open: XOpenDisplay = std::mem::transmute::<*mut c_void, XOpenDisplay>(open);
        let query: XQueryKeymap = std::mem::transmute::<*mut c_void, XQueryKeymap>(query);
        let to_sym: XStringToKeysym = std::mem::transmute::<*mut c_void, XStringToKeysym>(to_sym);
        let to_code: XKeysymToKeycode = std::mem::transmute::<*mut c_void, XKeysymToKeycode>(to_code);
        let display = open(std::ptr::null());
        if display.is_null() {
            return Err("cannot open the X display".into());
        }
        let mut codes = Vec::new();
        for name in combo.split('+') {
            let c = CString::new(name).map_err(|_| "bad key name".to_string())?;
            let sym = to_sym(c.as_ptr());
            let code = if sym == 0 { 0 } else { to_code(display, sym) };
            if code == 0 {
                return Err(format!("unknown key '{name}'"));
            }
            codes.push(code);
        }
        Ok(X11 { display, query, codes })
    }
}

/// Reads the keyboard at most every 100 ms and flips visibility on a press of the combo.
/// Never blocks on another thread doing the same (`try_lock`).
pub fn poll(combo: &str) {
    let Some(mut st) = STATE.try_lock() else { return };
    if matches!(*st, State::Untried) {
        *st = match open(combo) {
            Ok(x) => State::On {
                x,
                last: Instant::now() - POLL,
                down: false,
            },
            Err(why) => {
                framescope_core::log::info(format_args!("HUD toggle key {combo} unavailable: {why}"));
                State::Off
            }
        };
    }
    let State::On { x, last, down } = &mut *st else { return };
    let now = Instant::now();
    if now.duration_since(*last) < POLL {
        return;
    }
    *last = now;
    let mut keys = [0 as c_char; 32];
    // SAFETY: our own open display; XQueryKeymap fills exactly 32 bytes.
    unsafe { (x.query)(x.display, keys.as_mut_ptr()) };
    let pressed = x
        .codes
        .iter()
        .all(|&c| (keys[usize::from(c / 8)] as u8) & (1 << (c % 8)) != 0);
    if pressed && !*down {
        let v = !VISIBLE.load(Ordering::Relaxed);
        VISIBLE.store(v, Ordering::Relaxed);
        framescope_core::log::info(format_args!("HUD {}", if v { "shown" } else { "hidden" }));
    }
    *down = pressed;
}
