//! The few libxkbcommon functions the Wayland key reader calls, dlopen'ed (as libX11 is for
//! the X11 reader) so that neither layer links it: a Wayland compositor hands its clients the
//! keymap as XKB text, and only xkbcommon turns that text and the modifier state into keysyms.

use std::ffi::{c_char, c_int, c_void, CStr};
use std::sync::OnceLock;

/// `XKB_KEYMAP_FORMAT_TEXT_V1`.
const FORMAT_TEXT_V1: c_int = 1;
/// `XKB_KEYSYM_CASE_INSENSITIVE`.
const CASE_INSENSITIVE: c_int = 1;
/// `XKB_STATE_MODS_EFFECTIVE`.
const MODS_EFFECTIVE: c_int = 1 << 3;
/// Wayland's keys are evdev codes; XKB's keycodes are those plus 8 (wayland.xml, `keymap`).
const EVDEV_OFFSET: u32 = 8;

pub struct Xkb {
    context_new: unsafe extern "C" fn(c_int) -> *mut c_void,
    context_unref: unsafe extern "C" fn(*mut c_void),
    keymap_new_from_string: unsafe extern "C" fn(*mut c_void, *const c_char, c_int, c_int) -> *mut c_void,
    keymap_unref: unsafe extern "C" fn(*mut c_void),
    state_new: unsafe extern "C" fn(*mut c_void) -> *mut c_void,
    state_unref: unsafe extern "C" fn(*mut c_void),
    state_update_mask: unsafe extern "C" fn(*mut c_void, u32, u32, u32, u32, u32, u32) -> c_int,
    state_key_get_one_sym: unsafe extern "C" fn(*mut c_void, u32) -> u32,
    state_mod_name_is_active: unsafe extern "C" fn(*mut c_void, *const c_char, c_int) -> c_int,
    keysym_from_name: unsafe extern "C" fn(*const c_char, c_int) -> u32,
}

static XKB: OnceLock<Result<Xkb, String>> = OnceLock::new();

impl Xkb {
    /// libxkbcommon, loaded once for the process (never unloaded, so the pointers stay valid).
    pub fn get() -> Result<&'static Xkb, &'static str> {
        XKB.get_or_init(Xkb::load).as_ref().map_err(String::as_str)
    }

    fn load() -> Result<Xkb, String> {
        // SAFETY: a NUL-terminated name; the handle is never closed.
        let h = unsafe { libc::dlopen(c"libxkbcommon.so.0".as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
        if h.is_null() {
            return Err("libxkbcommon.so.0 not found".into());
        }
        let sym = |name: &CStr| -> Result<*mut c_void, String> {
            // SAFETY: a live handle and a NUL-terminated name.
            let p = unsafe { libc::dlsym(h, name.as_ptr()) };
            if p.is_null() {
                Err(format!("libxkbcommon.so.0 has no {}", name.to_string_lossy()))
            } else {
                Ok(p)
            }
        };
        macro_rules! f {
            ($name:literal) => {{
                let p = sym($name)?;
                // SAFETY: the symbol is libxkbcommon's function of that name, whose prototype
                // (xkbcommon.h; its enums are ints) the field's type spells; a function
                // pointer is a pointer's size.
                unsafe { std::mem::transmute_copy(&p) }
            }};
        }
        Ok(Xkb {
            context_new: f!(c"xkb_context_new"),
            context_unref: f!(c"xkb_context_unref"),
            keymap_new_from_string: f!(c"xkb_keymap_new_from_string"),
            keymap_unref: f!(c"xkb_keymap_unref"),
            state_new: f!(c"xkb_state_new"),
            state_unref: f!(c"xkb_state_unref"),
            state_update_mask: f!(c"xkb_state_update_mask"),
            state_key_get_one_sym: f!(c"xkb_state_key_get_one_sym"),
            state_mod_name_is_active: f!(c"xkb_state_mod_name_is_active"),
            keysym_from_name: f!(c"xkb_keysym_from_name"),
        })
    }

    /// The keysym of an X11 key name (`Shift_R`, `F12`, `h`); exact case first, as
    /// `XStringToKeysym` has it, then any case. `None`: no such key.
    pub fn keysym(&self, name: &str) -> Option<u32> {
        let c = std::ffi::CString::new(name).ok()?;
        // SAFETY: a NUL-terminated name; the function only reads it.
        let sym = unsafe { (self.keysym_from_name)(c.as_ptr(), 0) };
        let sym = if sym == 0 {
            // SAFETY: as above.
            unsafe { (self.keysym_from_name)(c.as_ptr(), CASE_INSENSITIVE) }
        } else {
            sym
        };
        (sym != 0).then_some(sym)
    }
}

/// An xkbcommon context, one per reader.
pub struct Context {
    xkb: &'static Xkb,
    ctx: *mut c_void,
}

// SAFETY: an xkb_context is used by one thread at a time (the reader's thread, or teardown
// after it stopped); xkbcommon objects have no thread affinity.
unsafe impl Send for Context {}
// SAFETY: as above: every use goes through the reader's lock.
unsafe impl Sync for Context {}

impl Context {
    pub fn new(xkb: &'static Xkb) -> Result<Context, &'static str> {
        // SAFETY: no flags: the default include paths, for keymaps that include files.
        let ctx = unsafe { (xkb.context_new)(0) };
        if ctx.is_null() {
            return Err("xkb_context_new failed");
        }
        Ok(Context { xkb, ctx })
    }

    /// The keymap of a `wl_keyboard.keymap` event's text (NUL-terminated), with its state.
    pub fn keymap(&self, text: &CStr) -> Option<Keymap> {
        let x = self.xkb;
        // SAFETY: our live context and a NUL-terminated text; the results are checked and
        // owned by the `Keymap` (each unref'd once).
        unsafe {
            let keymap = (x.keymap_new_from_string)(self.ctx, text.as_ptr(), FORMAT_TEXT_V1, 0);
            if keymap.is_null() {
                return None;
            }
            let state = (x.state_new)(keymap);
            let base = (x.state_new)(keymap);
            let k = Keymap {
                xkb: x,
                keymap,
                state,
                base,
            };
            (!state.is_null() && !base.is_null()).then_some(k)
        }
    }
}

impl Drop for Context {
    fn drop(&mut self) {
        // SAFETY: our context, unref'd once; keymaps hold their own reference.
        unsafe { (self.xkb.context_unref)(self.ctx) };
    }
}

/// One keymap and two states on it: the keyboard's (its modifiers as the compositor reports
/// them) and one with no modifier, whose keysyms match a combination's key whatever is held
/// with it (`a` for `Shift_L+a`, as X11's keycodes do).
pub struct Keymap {
    xkb: &'static Xkb,
    keymap: *mut c_void,
    state: *mut c_void,
    base: *mut c_void,
}

// SAFETY: as for `Context`.
unsafe impl Send for Keymap {}

/// Modifier families, as [`super::wayland_keys::Matcher`] counts them.
pub const SHIFT: u8 = 1;
pub const CONTROL: u8 = 2;
pub const ALT: u8 = 4;
pub const SUPER: u8 = 8;

impl Keymap {
    /// `wl_keyboard.modifiers`.
    pub fn update(&mut self, depressed: u32, latched: u32, locked: u32, group: u32) {
        // SAFETY: our live states.
        unsafe {
            (self.xkb.state_update_mask)(self.state, depressed, latched, locked, 0, 0, group);
            (self.xkb.state_update_mask)(self.base, 0, 0, 0, 0, 0, group);
        }
    }

    /// The keysym of evdev key `key` now, and with no modifier.
    pub fn syms(&self, key: u32) -> (u32, u32) {
        let code = key.saturating_add(EVDEV_OFFSET);
        // SAFETY: our live states; any keycode is accepted (0 for one the keymap lacks).
        unsafe {
            (
                (self.xkb.state_key_get_one_sym)(self.state, code),
                (self.xkb.state_key_get_one_sym)(self.base, code),
            )
        }
    }

    /// The modifier families active now (SHIFT | CONTROL | ALT | SUPER).
    pub fn mods(&self) -> u8 {
        let active = |name: &CStr| {
            // SAFETY: our live state and a NUL-terminated modifier name.
            unsafe { (self.xkb.state_mod_name_is_active)(self.state, name.as_ptr(), MODS_EFFECTIVE) == 1 }
        };
        let mut m = 0;
        for (name, bit) in [
            (c"Shift", SHIFT),
            (c"Control", CONTROL),
            (c"Mod1", ALT),
            (c"Mod4", SUPER),
        ] {
            if active(name) {
                m |= bit;
            }
        }
        m
    }
}

impl Drop for Keymap {
    fn drop(&mut self) {
        // SAFETY: our objects, each unref'd once (a null state was never made).
        unsafe {
            if !self.state.is_null() {
                (self.xkb.state_unref)(self.state);
            }
            if !self.base.is_null() {
                (self.xkb.state_unref)(self.base);
            }
            (self.xkb.keymap_unref)(self.keymap);
        }
    }
}
