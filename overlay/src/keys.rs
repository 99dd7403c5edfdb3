//! The HUD's show/hide key, the dump's start/stop key (`dump_toggle_key`, which flips
//! [`framescope_core::capture`]) and the frame limiter's next-rate key (`fps_limit_key`), read
//! from X11 with `XQueryKeymap` on a connection of our own
//! (libX11 is dlopen'ed, so the layers do not link it). Polling reads the key state without
//! grabbing anything: the app still gets every key. What a key does is
//! [`framescope_core::hotkeys`]'s, shared with the Wayland reader
//! (`framescope_collectors::input::wayland_keys`, which the layers attach to native Wayland
//! windows). No X11 means no hotkey from here: one log line, unless a Wayland reader runs.
//!
//! Every X call is a round trip to the server, so none is made on the app's threads: the
//! present path only reads an atomic ([`visible`]) and, the first time, starts a thread of
//! framescope's own that opens the connection and reads the keyboard every 100 ms. A slow or
//! stalled X server then delays the toggle, never a frame (measured: vkcube at 30 ms of X
//! latency went from 28 to 21 fps with the query on the present thread). The thread ends by
//! itself, closing its connection, once nothing has asked for the key for [`IDLE`] (the app
//! stopped presenting or tore its device down); the next present starts it again.

use framescope_core::hotkeys;
pub use framescope_core::hotkeys::{fps_presses, visible};
use std::ffi::{c_char, c_int, c_ulong, c_void, CString};
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::time::Duration;

/// How often the keyboard is read (a round trip to the X server).
const POLL: Duration = Duration::from_millis(100);

/// Without a [`poll`] for this long the reader closes its connection and ends.
pub const IDLE: Duration = Duration::from_secs(5);

/// [`NONE`], [`RUNNING`] or [`OFF`].
static READER: AtomicU8 = AtomicU8::new(NONE);
const NONE: u8 = 0;
const RUNNING: u8 = 1;
/// X11 or the key is unavailable, or the thread could not start: said once, not retried.
const OFF: u8 = 2;

/// Bumped by every [`poll`]; the reader ends when it stops moving.
static POLLS: AtomicU64 = AtomicU64::new(0);

/// Called on every present: starts the key reader the first time (and after it ended idle)
/// when the config has a key to read (the HUD's while the HUD is on, the dump's while
/// dumping). Never blocks and, once the reader runs, never allocates.
pub fn poll_config(c: &framescope_core::config::Config) {
    let [hud, dump, fps] = hotkeys::combos(c);
    if !hud.is_empty() || !dump.is_empty() || !fps.is_empty() {
        poll(hud, dump, fps);
    }
}

/// Starts the reader for the `hud`, `dump` and `fps` key combinations (any may be empty: none).
fn poll(hud: &str, dump: &str, fps: &str) {
    POLLS.fetch_add(1, Ordering::Relaxed);
    if READER.load(Ordering::Acquire) != NONE
        || READER
            .compare_exchange(NONE, RUNNING, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
    {
        return;
    }
    let combo = format!("{hud} {dump} {fps}");
    if let Err(why) = start(hud, dump, fps) {
        // A native Wayland window's keys come through the Wayland reader, which said so.
        if !(why == NO_DISPLAY && hotkeys::wayland_reading()) {
            framescope_core::log::info(format_args!("toggle keys {} unavailable: {why}", combo.trim()));
        }
        READER.store(OFF, Ordering::Release);
    }
}

const NO_DISPLAY: &str = "no DISPLAY";

fn start(hud: &str, dump: &str, fps: &str) -> Result<(), String> {
    if std::env::var_os("DISPLAY").is_none_or(|d| d.is_empty()) {
        return Err(NO_DISPLAY.into());
    }
    pin_this_library()?;
    let (hud, dump, fps) = (hud.to_string(), dump.to_string(), fps.to_string());
    let combo = format!("{hud} {dump} {fps}").trim().to_string();
    std::thread::Builder::new()
        .name("framescope-keys".into())
        .spawn(move || {
            framescope_core::alloc_count::mark_own_thread();
            // The reader's logic must not unwind into the thread's start: a panic only ends
            // the hotkey.
            let r = std::panic::catch_unwind(|| read_keys(&hud, &dump, &fps));
            let next = match r {
                Ok(Ok(())) => NONE,
                Ok(Err(why)) => {
                    framescope_core::log::info(format_args!("toggle keys {combo} unavailable: {why}"));
                    OFF
                }
                Err(_) => OFF,
            };
            READER.store(next, Ordering::Release);
        })
        .map(drop)
        .map_err(|e| format!("cannot start the key thread: {e}"))
}

/// The Vulkan loader unloads a layer at `vkDestroyInstance`; our thread runs this library's
/// code, possibly blocked in a call to a stalled X server, so the library must stay mapped
/// for the life of the process (`RTLD_NODELETE`, dlopen(3)).
pub(crate) fn pin_this_library() -> Result<(), String> {
    // SAFETY: dladdr only reads the loader's tables; `info` is a valid out-pointer and its
    // `dli_fname` is a NUL-terminated string owned by the loader. dlopen with RTLD_NOLOAD
    // only takes a reference to an object already loaded.
    unsafe {
        let mut info: libc::Dl_info = std::mem::zeroed();
        let here = pin_this_library as *const c_void;
        if libc::dladdr(here, &mut info) == 0 || info.dli_fname.is_null() {
            return Err("cannot find framescope's own library".into());
        }
        let h = libc::dlopen(info.dli_fname, libc::RTLD_NOW | libc::RTLD_NOLOAD | libc::RTLD_NODELETE);
        if h.is_null() {
            return Err("cannot keep framescope's library loaded".into());
        }
    }
    Ok(())
}

type XOpenDisplay = unsafe extern "C" fn(*const c_char) -> *mut c_void;
type XCloseDisplay = unsafe extern "C" fn(*mut c_void) -> c_int;
type XQueryKeymap = unsafe extern "C" fn(*mut c_void, *mut c_char) -> c_int;
type XStringToKeysym = unsafe extern "C" fn(*const c_char) -> c_ulong;
type XKeysymToKeycode = unsafe extern "C" fn(*mut c_void, c_ulong) -> u8;

struct X11 {
    display: *mut c_void,
    close: XCloseDisplay,
    query: XQueryKeymap,
    /// Per combination (HUD, dump, frame limit), the keycodes that must all be down; empty:
    /// no key.
    codes: [Vec<u8>; 3],
}

impl Drop for X11 {
    fn drop(&mut self) {
        // SAFETY: our own display, opened by XOpenDisplay and used only on this thread.
        unsafe { (self.close)(self.display) };
    }
}

/// Opens our connection. libX11 1.8 makes itself thread-safe at load (XInitThreads in its
/// constructor), and this connection is used by this thread alone.
fn open(combos: [&str; 3]) -> Result<X11, String> {
    // SAFETY: dlopen/dlsym with NUL-terminated names; the library stays loaded for the life of
    // the process (never dlclosed), so the function pointers stay valid. The transmutes give
    // each symbol its libX11 prototype (Xlib.h).
    unsafe {
        let lib = libc::dlopen(c"libX11.so.6".as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL);
        if lib.is_null() {
            return Err("libX11.so.6 not found".into());
        }
        let sym = |name: &std::ffi::CStr| {
            let p = libc::dlsym(lib, name.as_ptr());
            (!p.is_null()).then_some(p)
        };
        let (Some(open), Some(close), Some(query), Some(to_sym), Some(to_code)) = (
            sym(c"XOpenDisplay"),
            sym(c"XCloseDisplay"),
            sym(c"XQueryKeymap"),
            sym(c"XStringToKeysym"),
            sym(c"XKeysymToKeycode"),
        ) else {
            return Err("libX11 lacks XQueryKeymap".into());
        };
        let open: XOpenDisplay = std::mem::transmute::<*mut c_void, XOpenDisplay>(open);
        let close: XCloseDisplay = std::mem::transmute::<*mut c_void, XCloseDisplay>(close);
        let query: XQueryKeymap = std::mem::transmute::<*mut c_void, XQueryKeymap>(query);
        let to_sym: XStringToKeysym = std::mem::transmute::<*mut c_void, XStringToKeysym>(to_sym);
        let to_code: XKeysymToKeycode = std::mem::transmute::<*mut c_void, XKeysymToKeycode>(to_code);
        let display = open(std::ptr::null());
        if display.is_null() {
            return Err("cannot open the X display".into());
        }
        // Owned from here, so an early return closes it.
        let mut x = X11 {
            display,
            close,
            query,
            codes: [Vec::new(), Vec::new(), Vec::new()],
        };
        for (combo, codes) in combos.iter().zip(x.codes.iter_mut()) {
            for name in combo.split('+').filter(|n| !n.is_empty()) {
                let c = CString::new(name).map_err(|_| "bad key name".to_string())?;
                let sym = to_sym(c.as_ptr());
                let code = if sym == 0 { 0 } else { to_code(x.display, sym) };
                if code == 0 {
                    return Err(format!("unknown key '{name}'"));
                }
                codes.push(code);
            }
        }
        Ok(x)
    }
}

/// The reader thread: flips visibility on each press of the combo until no present has asked
/// for the key for [`IDLE`]. A connection that breaks is libX11's to handle (by default it
/// ends the process, as it does for the app's own connection to the same server: replacing
/// the process-wide handler would take it from the app).
fn read_keys(hud: &str, dump: &str, fps: &str) -> Result<(), String> {
    let x = open([hud, dump, fps])?;
    let mut down = [false; 3];
    let (mut seen, mut quiet) = (POLLS.load(Ordering::Relaxed), Duration::ZERO);
    loop {
        let mut keys = [0 as c_char; 32];
        // SAFETY: our own open display; XQueryKeymap fills exactly 32 bytes.
        unsafe { (x.query)(x.display, keys.as_mut_ptr()) };
        for (k, codes) in x.codes.iter().enumerate() {
            let pressed = !codes.is_empty()
                && codes
                    .iter()
                    .all(|&c| (keys[usize::from(c / 8)] as u8) & (1 << (c % 8)) != 0);
            if pressed && !down[k] {
                hotkeys::pressed(k);
            }
            down[k] = pressed;
        }
        std::thread::sleep(POLL);
        let now = POLLS.load(Ordering::Relaxed);
        if now == seen {
            quiet += POLL;
            if quiet >= IDLE {
                return Ok(());
            }
        } else {
            (seen, quiet) = (now, Duration::ZERO);
        }
    }
}
