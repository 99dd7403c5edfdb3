//! The toggle keys of a native Wayland app, from the app's own keyboard events.
//!
//! Wayland has no way to ask for the keyboard's state (X11's `XQueryKeymap`): a client only
//! gets the key events of its own surfaces while one of them has keyboard focus. So, on the
//! app's `wl_display`, framescope makes what any client library may: an event queue of its own
//! (`wl_display_create_queue`), a wrapper of the display on that queue and, through it, a
//! registry that binds each `wl_seat` and asks for its `wl_keyboard`. The compositor sends
//! every `wl_keyboard` of the focused client the same events, so ours see the keys pressed in
//! the app's windows; nothing of ours is on the app's queue and the app's own keyboard loses
//! nothing. framescope's thread alone reads and dispatches that queue
//! ([`crate::display::wayland_sys::run_queue`], as the `wp_presentation` source does).
//!
//! The keymap comes as XKB text in a file the compositor passes (`keymap`): it is mapped,
//! compiled with xkbcommon ([`super::xkb`]), and each key's keysym is read from it with the
//! modifiers the compositor reports (`modifiers`). A combination is down when each of its
//! keys is held (by keysym, as the key is now or with no modifier); a modifier key of the
//! combination (`Shift_R`) may also be down as a modifier only, when no key of that modifier
//! is held: a virtual keyboard (an on-screen keyboard, `wtype -M shift`) sets modifiers
//! without pressing a key. Each time a combination goes down, [`framescope_core::hotkeys`]
//! acts on it, as for X11's reader.
//!
//! The layers attach at a Wayland surface's creation (`vkCreateWaylandSurfaceKHR`, an EGL
//! window surface on a Wayland display) and detach where the presentation source does, before
//! the app can disconnect the display: the surface's destruction, `vkDestroyInstance`,
//! `eglTerminate`, `wl_display_disconnect`. One connection serves all of a display's surfaces.
//! Nothing runs on the app's threads but attach and detach.

use super::xkb::{self, Context, Keymap, Xkb};
use crate::display::wayland_sys::{
    op, private_queue, run_queue, PrivateQueue, Wl, WlArgument, WlMessage, KEYMAP_XKB_V1, MARSHAL_DESTROY,
    SEAT_KEYBOARD,
};
use framescope_core::guard::{guarded, Site};
use framescope_core::sync::Mutex;
use std::ffi::{c_int, c_void, CStr};
use std::ptr;
use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

/// Keys held at once that count; more are ignored (no combination needs them).
pub const HELD: usize = 16;
/// Seats bound per display; a desktop has one.
const SEATS: usize = 4;
/// `wl_seat` version bound: 5 has `release`; later versions add nothing a keyboard needs.
const SEAT_VERSION: u32 = 5;
/// The version from which `wl_keyboard.release` exists.
const KEYBOARD_RELEASE_SINCE: u32 = 3;
/// How long teardown waits for framescope's thread (woken at once through the eventfd).
pub const STOP_WAIT: Duration = Duration::from_millis(250);
/// The thread's poll timeout: how late at most it dispatches events the app's reads queued.
const POLL_MS: c_int = 100;

static THREAD: Site = Site::new("Wayland key thread");
static EVENT: Site = Site::new("Wayland key event");

#[derive(Clone, Copy, Default, PartialEq, Eq, Debug)]
struct Held {
    key: u32,
    sym: u32,
    base: u32,
}

/// Which combinations are down, from the keys held and the modifiers; pure, so that the rules
/// are tested without a compositor.
#[derive(Debug)]
pub struct Matcher {
    /// Per combination ([`framescope_core::hotkeys::HUD`], …), its keysyms; empty: none.
    combos: [Vec<u32>; 3],
    held: [Held; HELD],
    n: usize,
    mods: u8,
    down: [bool; 3],
}

/// The modifier family of a modifier keysym (keysymdef.h), 0 for any other key.
fn family(sym: u32) -> u8 {
    match sym {
        0xffe1 | 0xffe2 => xkb::SHIFT,   // Shift_L, Shift_R
        0xffe3 | 0xffe4 => xkb::CONTROL, // Control_L, Control_R
        0xffe7..=0xffea => xkb::ALT,     // Meta_L, Meta_R, Alt_L, Alt_R
        0xffeb | 0xffec => xkb::SUPER,   // Super_L, Super_R
        _ => 0,
    }
}

impl Matcher {
    pub fn new(combos: [Vec<u32>; 3]) -> Matcher {
        Matcher {
            combos,
            held: [Held::default(); HELD],
            n: 0,
            mods: 0,
            down: [false; 3],
        }
    }

    /// Evdev key `key` went down; `sym` is its keysym now, `base` with no modifier.
    pub fn press(&mut self, key: u32, sym: u32, base: u32) {
        if self.held[..self.n].iter().any(|h| h.key == key) || self.n == HELD {
            return;
        }
        self.held[self.n] = Held { key, sym, base };
        self.n += 1;
    }

    pub fn release(&mut self, key: u32) {
        if let Some(i) = self.held[..self.n].iter().position(|h| h.key == key) {
            self.held[i] = self.held[self.n - 1];
            self.n -= 1;
        }
    }

    /// A new keymap: the keys held stay held (a compositor sends one when the keyboard
    /// behind the seat changes, keys down or not), with their keysyms as `syms` gives them now.
    pub fn remap(&mut self, syms: impl Fn(u32) -> (u32, u32)) {
        for h in &mut self.held[..self.n] {
            (h.sym, h.base) = syms(h.key);
        }
    }

    /// The modifier families active now.
    pub fn set_mods(&mut self, mods: u8) {
        self.mods = mods;
    }

    /// Focus left, or the keymap changed: nothing is held, and nothing goes down for it.
    pub fn clear(&mut self) {
        self.n = 0;
        self.mods = 0;
        self.down = [false; 3];
    }

    fn satisfied(&self, sym: u32) -> bool {
        let held = &self.held[..self.n];
        if held.iter().any(|h| h.sym == sym || h.base == sym) {
            return true;
        }
        let f = family(sym);
        f != 0 && self.mods & f != 0 && !held.iter().any(|h| family(h.sym) == f || family(h.base) == f)
    }

    /// The combinations that went down since the last call.
    pub fn edges(&mut self) -> [bool; 3] {
        let mut out = [false; 3];
        for (k, went_down) in out.iter_mut().enumerate() {
            let now = !self.combos[k].is_empty() && self.combos[k].iter().all(|&s| self.satisfied(s));
            *went_down = now && !self.down[k];
            self.down[k] = now;
        }
        out
    }
}

/// One seat of ours and its keyboard.
struct Seat {
    conn: *const Conn,
    seat: AtomicPtr<c_void>,
    keyboard: AtomicPtr<c_void>,
    kb: Mutex<Kb>,
}

struct Kb {
    keymap: Option<Keymap>,
    matcher: Matcher,
}

/// framescope's objects on one app `wl_display`.
pub struct Conn {
    wl: &'static Wl,
    context: Context,
    display: *mut c_void,
    queue: *mut c_void,
    wrapper: *mut c_void,
    registry: AtomicPtr<c_void>,
    /// Boxed: each seat's dispatchers hold its address, which a push must not move.
    #[allow(clippy::vec_box)]
    seats: Mutex<Vec<Box<Seat>>>,
    combos: [Vec<u32>; 3],
    sink: fn(usize),
    stop: AtomicBool,
    wake: c_int,
    done: Mutex<Option<mpsc::Receiver<()>>>,
}

// SAFETY: the raw pointers are libwayland objects, used under libwayland's own locking
// (requests from any thread; events of our queue read and dispatched by our thread only) and
// destroyed once, at teardown, after our thread has stopped.
unsafe impl Send for Conn {}
// SAFETY: as above.
unsafe impl Sync for Conn {}

impl Conn {
    /// Stops the thread and destroys framescope's objects; on the app's thread, while the
    /// display is alive.
    fn teardown(&self) {
        framescope_core::hotkeys::wayland_reader(false);
        self.stop.store(true, Ordering::Release);
        let one: u64 = 1;
        // SAFETY: our eventfd; writes 8 bytes from the stack.
        unsafe { libc::write(self.wake, (&one as *const u64).cast(), 8) };
        let stopped = match self.done.lock().take() {
            Some(rx) => !matches!(rx.recv_timeout(STOP_WAIT), Err(mpsc::RecvTimeoutError::Timeout)),
            None => true,
        };
        if !stopped {
            framescope_core::log::error(format_args!(
                "Wayland keys: framescope's thread did not stop within {STOP_WAIT:?}; its objects are left as they are"
            ));
            return;
        }
        let wl = self.wl;
        let seats = std::mem::take(&mut *self.seats.lock());
        // SAFETY: each object is ours, destroyed once (swapped out); the thread that
        // dispatched their events has stopped.
        unsafe {
            for s in &seats {
                release_keyboard(wl, s);
                let p = s.seat.swap(ptr::null_mut(), Ordering::AcqRel);
                if !p.is_null() {
                    if (wl.proxy_get_version)(p) >= 5 {
                        (wl.proxy_marshal_array_flags)(
                            p,
                            op::SEAT_RELEASE,
                            ptr::null(),
                            5,
                            MARSHAL_DESTROY,
                            ptr::null_mut(),
                        );
                    } else {
                        (wl.proxy_destroy)(p);
                    }
                }
            }
            let p = self.registry.swap(ptr::null_mut(), Ordering::AcqRel);
            if !p.is_null() {
                (wl.proxy_destroy)(p);
            }
            (wl.proxy_wrapper_destroy)(self.wrapper);
            (wl.display_flush)(self.display);
            (wl.event_queue_destroy)(self.queue);
            libc::close(self.wake);
        }
        drop(seats);
    }
}

/// Releases `s`'s keyboard, if it has one.
///
/// # Safety
/// `s`'s proxies are live and ours; no other thread dispatches their events now.
unsafe fn release_keyboard(wl: &Wl, s: &Seat) {
    let p = s.keyboard.swap(ptr::null_mut(), Ordering::AcqRel);
    if p.is_null() {
        return;
    }
    // SAFETY: the caller's.
    unsafe {
        let v = (wl.proxy_get_version)(p);
        if v >= KEYBOARD_RELEASE_SINCE {
            (wl.proxy_marshal_array_flags)(
                p,
                op::KEYBOARD_RELEASE,
                ptr::null(),
                v,
                MARSHAL_DESTROY,
                ptr::null_mut(),
            );
        } else {
            (wl.proxy_destroy)(p);
        }
    }
    let mut kb = s.kb.lock();
    kb.matcher.clear();
}

struct Entry {
    display: usize,
    conn: Arc<Conn>,
    /// (surface, owner) of each user: the owner is what detaches all its surfaces at once
    /// (the Vulkan instance, the EGL display).
    users: Vec<(usize, usize)>,
}

static CONNS: Mutex<Vec<Entry>> = Mutex::new(Vec::new());
/// Said once: why the keys are not read.
static FAILED: AtomicBool = AtomicBool::new(false);

/// Reads the configured toggle keys from `display`'s keyboard for `surface` (any key naming
/// the surface: a `VkSurfaceKHR`, an `EGLSurface`) of `owner`; a surface's second attach is
/// ignored. Failures are one log line; the app is never affected.
///
/// # Safety
/// `display` is the app's live `wl_display`, alive until [`detach`] of the surface,
/// [`detach_owner`] or [`close_display`].
pub unsafe fn attach(display: *mut c_void, surface: usize, owner: usize) {
    let cfg = framescope_core::settings::get();
    let combos = framescope_core::hotkeys::combos(cfg);
    if display.is_null() || combos.iter().all(|c| c.is_empty()) {
        return;
    }
    // SAFETY: the caller's.
    if let Err(why) = unsafe { attach_with(display, surface, owner, combos, framescope_core::hotkeys::pressed) } {
        if !FAILED.swap(true, Ordering::Relaxed) {
            let all = combos
                .iter()
                .filter(|c| !c.is_empty())
                .copied()
                .collect::<Vec<_>>()
                .join(" ");
            framescope_core::log::info(format_args!("toggle keys {all} unavailable on Wayland: {why}"));
        }
    }
}

/// [`attach`] with the combinations and what a press does given.
///
/// # Safety
/// As for [`attach`].
unsafe fn attach_with(
    display: *mut c_void,
    surface: usize,
    owner: usize,
    combos: [&str; 3],
    sink: fn(usize),
) -> Result<(), String> {
    let mut conns = CONNS.lock();
    if let Some(e) = conns.iter_mut().find(|e| e.display == display as usize) {
        if !e.users.iter().any(|u| u.0 == surface) {
            e.users.push((surface, owner));
        }
        return Ok(());
    }
    let wl = Wl::get()?;
    let xkb = Xkb::get()?;
    let mut syms: [Vec<u32>; 3] = Default::default();
    for (combo, out) in combos.iter().zip(syms.iter_mut()) {
        for name in combo.split('+').filter(|n| !n.is_empty()) {
            out.push(xkb.keysym(name).ok_or_else(|| format!("unknown key '{name}'"))?);
        }
    }
    // SAFETY: the caller's: a live display.
    let conn = unsafe { connect(wl, xkb, display, syms, sink) }?;
    framescope_core::log::info(format_args!(
        "toggle keys {} read from the app's Wayland keyboard events (while its window has keyboard focus)",
        combos
            .iter()
            .filter(|c| !c.is_empty())
            .copied()
            .collect::<Vec<_>>()
            .join(" ")
    ));
    conns.push(Entry {
        display: display as usize,
        conn,
        users: vec![(surface, owner)],
    });
    Ok(())
}

/// Removes the users `gone` picks; a display left without one is torn down (on the calling
/// thread, which must be before the display is disconnected).
fn drop_users(gone: impl Fn(&(usize, usize), usize) -> bool) {
    let ended: Vec<Arc<Conn>> = {
        let mut conns = CONNS.lock();
        let mut ended = Vec::new();
        conns.retain_mut(|e| {
            let d = e.display;
            e.users.retain(|u| !gone(u, d));
            if e.users.is_empty() {
                ended.push(e.conn.clone());
            }
            !e.users.is_empty()
        });
        ended
    };
    for c in ended {
        c.teardown();
    }
}

/// The surface attached as `surface` is being destroyed.
pub fn detach(surface: usize) {
    drop_users(|u, _| u.0 == surface);
}

/// `owner` (a Vulkan instance, an EGL display) is going: its surfaces with it.
pub fn detach_owner(owner: usize) {
    drop_users(|u, _| u.1 == owner);
}

/// The app disconnects `display`: everything of ours on it goes first.
pub fn close_display(display: *mut c_void) {
    drop_users(|_, d| d == display as usize);
}

/// # Safety
/// `display` is a live `wl_display` of `wl`'s library.
unsafe fn connect(
    wl: &'static Wl,
    xkb: &'static Xkb,
    display: *mut c_void,
    combos: [Vec<u32>; 3],
    sink: fn(usize),
) -> Result<Arc<Conn>, String> {
    let context = Context::new(xkb)?;
    // SAFETY (this block): libwayland calls on the app's live display and on the objects made
    // from it here; each is checked before use.
    let (conn, tx) = unsafe {
        let PrivateQueue { queue, wrapper, wake } = private_queue(wl, display)?;
        let (tx, rx) = mpsc::sync_channel(1);
        let conn = Arc::new(Conn {
            wl,
            context,
            display,
            queue,
            wrapper,
            registry: AtomicPtr::new(ptr::null_mut()),
            seats: Mutex::new(Vec::new()),
            combos,
            sink,
            stop: AtomicBool::new(false),
            wake,
            done: Mutex::new(Some(rx)),
        });
        framescope_core::hotkeys::wayland_reader(true);
        // get_registry through the wrapper: the registry, and all made from it, is on our queue.
        let mut arg = [WlArgument { o: ptr::null_mut() }];
        let registry = (wl.proxy_marshal_array_flags)(
            wrapper,
            op::DISPLAY_GET_REGISTRY,
            wl.registry_interface,
            1,
            0,
            arg.as_mut_ptr(),
        );
        if registry.is_null() {
            conn.teardown_unstarted();
            return Err("cannot create a registry on framescope's queue".into());
        }
        (wl.proxy_add_dispatcher)(registry, registry_event, Arc::as_ptr(&conn).cast(), ptr::null_mut());
        conn.registry.store(registry, Ordering::Release);
        (conn, tx)
    };
    let c = conn.clone();
    let spawned = std::thread::Builder::new()
        .name("framescope-wlkeys".into())
        .spawn(move || {
            framescope_core::alloc_count::mark_own_thread();
            guarded(&THREAD, || {
                // SAFETY: the app's display, alive until teardown, which waits for this
                // thread to end before the display may go; our queue, dispatched here only.
                if let Err(why) = unsafe { run_queue(c.wl, c.display, c.queue, c.wake, &c.stop, POLL_MS) } {
                    framescope_core::log::error(format_args!("Wayland keys: {why}; no more toggle keys"));
                }
            });
            let _ = tx.send(());
        });
    if let Err(e) = spawned {
        conn.teardown_unstarted();
        return Err(format!("cannot start a thread: {e}"));
    }
    Ok(conn)
}

impl Conn {
    fn teardown_unstarted(&self) {
        *self.done.lock() = None;
        self.teardown();
    }
}

/// # Safety
/// libwayland's dispatcher contract: `args` holds the event's arguments.
unsafe fn arg(args: *mut WlArgument, i: usize) -> WlArgument {
    // SAFETY: the caller's.
    unsafe { *args.add(i) }
}

unsafe extern "C" fn registry_event(
    implementation: *const c_void,
    registry: *mut c_void,
    opcode: u32,
    _msg: *const WlMessage,
    args: *mut WlArgument,
) -> c_int {
    guarded(&EVENT, || {
        // SAFETY: our Conn, alive while its queue is dispatched (teardown stops the thread first).
        let c = unsafe { &*(implementation as *const Conn) };
        if opcode != op::REGISTRY_GLOBAL {
            return;
        }
        // SAFETY: global(name: uint, interface: string, version: uint).
        let (name, iface, version) = unsafe { (arg(args, 0).u, arg(args, 1).s, arg(args, 2).u) };
        // SAFETY: libwayland's NUL-terminated string for the event.
        if iface.is_null() || unsafe { CStr::from_ptr(iface) } != c"wl_seat" {
            return;
        }
        let mut seats = c.seats.lock();
        if seats.len() == SEATS {
            return;
        }
        let wl = c.wl;
        let version = version.clamp(1, SEAT_VERSION);
        let mut a = [
            WlArgument { u: name },
            WlArgument { s: c"wl_seat".as_ptr() },
            WlArgument { u: version },
            WlArgument { o: ptr::null_mut() },
        ];
        let seat = Box::new(Seat {
            conn: c,
            seat: AtomicPtr::new(ptr::null_mut()),
            keyboard: AtomicPtr::new(ptr::null_mut()),
            kb: Mutex::new(Kb {
                keymap: None,
                matcher: Matcher::new(c.combos.clone()),
            }),
        });
        // SAFETY: bind on our registry with wl_registry.bind's arguments; the new proxy is on
        // our queue and gets its dispatcher before we dispatch again. The Seat it points at is
        // boxed (its address stays) and lives until teardown destroyed the proxy.
        unsafe {
            let p = (wl.proxy_marshal_array_flags)(
                registry,
                op::REGISTRY_BIND,
                wl.seat_interface,
                version,
                0,
                a.as_mut_ptr(),
            );
            if p.is_null() {
                return;
            }
            (wl.proxy_add_dispatcher)(p, seat_event, (&*seat as *const Seat).cast(), ptr::null_mut());
            seat.seat.store(p, Ordering::Release);
        }
        seats.push(seat);
    });
    0
}

unsafe extern "C" fn seat_event(
    implementation: *const c_void,
    seat: *mut c_void,
    opcode: u32,
    _msg: *const WlMessage,
    args: *mut WlArgument,
) -> c_int {
    guarded(&EVENT, || {
        // SAFETY: our boxed Seat, alive until teardown destroyed this proxy.
        let s = unsafe { &*(implementation as *const Seat) };
        // SAFETY: the Seat's Conn outlives its seats.
        let wl = unsafe { &*s.conn }.wl;
        if opcode != op::SEAT_CAPABILITIES {
            return;
        }
        // SAFETY: capabilities(capabilities: uint).
        let caps = unsafe { arg(args, 0).u };
        let has = !s.keyboard.load(Ordering::Acquire).is_null();
        if caps & SEAT_KEYBOARD != 0 && !has {
            let mut a = [WlArgument { o: ptr::null_mut() }];
            // SAFETY: get_keyboard(new_id) on our seat; the keyboard is on our queue and gets
            // its dispatcher before we dispatch again.
            unsafe {
                let v = (wl.proxy_get_version)(seat);
                let k = (wl.proxy_marshal_array_flags)(
                    seat,
                    op::SEAT_GET_KEYBOARD,
                    wl.keyboard_interface,
                    v,
                    0,
                    a.as_mut_ptr(),
                );
                if !k.is_null() {
                    (wl.proxy_add_dispatcher)(k, keyboard_event, implementation, ptr::null_mut());
                    s.keyboard.store(k, Ordering::Release);
                }
            }
        } else if caps & SEAT_KEYBOARD == 0 && has {
            // SAFETY: our keyboard, on this (the dispatching) thread.
            unsafe { release_keyboard(wl, s) };
        }
    });
    0
}

unsafe extern "C" fn keyboard_event(
    implementation: *const c_void,
    _keyboard: *mut c_void,
    opcode: u32,
    _msg: *const WlMessage,
    args: *mut WlArgument,
) -> c_int {
    // The keymap's file is ours to close, whatever happens to the event.
    let fd = (opcode == op::KEYBOARD_KEYMAP).then(|| {
        // SAFETY: keymap(format: uint, fd: fd, size: uint).
        unsafe { arg(args, 1).h }
    });
    guarded(&EVENT, || {
        // SAFETY: our boxed Seat, alive until teardown destroyed this proxy.
        let s = unsafe { &*(implementation as *const Seat) };
        // SAFETY: the Seat's Conn outlives its seats.
        let c = unsafe { &*s.conn };
        let mut kb = s.kb.lock();
        let kb = &mut *kb;
        match opcode {
            op::KEYBOARD_KEYMAP => {
                // SAFETY: as above.
                let (format, size) = unsafe { (arg(args, 0).u, arg(args, 2).u) };
                kb.keymap = None;
                if format == KEYMAP_XKB_V1 {
                    if let Some(text) = fd.and_then(|fd| read_keymap(fd, size as usize)) {
                        kb.keymap = c.context.keymap(&text);
                    }
                    if kb.keymap.is_none() {
                        framescope_core::log::info(format_args!(
                            "Wayland keys: the compositor's keymap ({size} bytes) did not compile"
                        ));
                    }
                }
                match &kb.keymap {
                    Some(keymap) => kb.matcher.remap(|key| keymap.syms(key)),
                    None => kb.matcher.clear(),
                }
            }
            op::KEYBOARD_ENTER => {
                kb.matcher.clear();
                let Some(keymap) = &kb.keymap else { return };
                // SAFETY: enter(serial, surface, keys: array of uint32 evdev codes); the array
                // is libwayland's for the event.
                let keys = unsafe {
                    let a = arg(args, 2).a;
                    if a.is_null() || (*a).data.is_null() {
                        &[][..]
                    } else {
                        std::slice::from_raw_parts((*a).data as *const u32, (*a).size / 4)
                    }
                };
                kb.matcher.set_mods(keymap.mods());
                for &k in keys {
                    let (sym, base) = keymap.syms(k);
                    kb.matcher.press(k, sym, base);
                }
            }
            op::KEYBOARD_LEAVE => {
                kb.matcher.clear();
                return;
            }
            op::KEYBOARD_KEY => {
                let Some(keymap) = &kb.keymap else { return };
                // SAFETY: key(serial, time, key, state).
                let (key, state) = unsafe { (arg(args, 2).u, arg(args, 3).u) };
                if state == 1 {
                    let (sym, base) = keymap.syms(key);
                    kb.matcher.press(key, sym, base);
                } else if state == 0 {
                    kb.matcher.release(key);
                }
            }
            op::KEYBOARD_MODIFIERS => {
                let Some(keymap) = &mut kb.keymap else { return };
                // SAFETY: modifiers(serial, depressed, latched, locked, group).
                let (d, la, lo, g) = unsafe { (arg(args, 1).u, arg(args, 2).u, arg(args, 3).u, arg(args, 4).u) };
                keymap.update(d, la, lo, g);
                kb.matcher.set_mods(keymap.mods());
            }
            _ => return,
        }
        for (k, went_down) in kb.matcher.edges().into_iter().enumerate() {
            if went_down {
                (c.sink)(k);
            }
        }
    });
    if let Some(fd) = fd {
        // SAFETY: the event's descriptor, ours, closed once.
        unsafe { libc::close(fd) };
    }
    0
}

/// The keymap text of a `keymap` event's file (`size` bytes, NUL-terminated by the protocol;
/// a NUL is added should one be missing).
fn read_keymap(fd: c_int, size: usize) -> Option<std::ffi::CString> {
    if size == 0 || fd < 0 {
        return None;
    }
    // SAFETY: a private read-only mapping of the compositor's file, unmapped below; only
    // `size` bytes are read.
    unsafe {
        let p = libc::mmap(ptr::null_mut(), size, libc::PROT_READ, libc::MAP_PRIVATE, fd, 0);
        if p == libc::MAP_FAILED {
            return None;
        }
        let bytes = std::slice::from_raw_parts(p as *const u8, size);
        let text = bytes.split(|&b| b == 0).next().unwrap_or(&[]).to_vec();
        libc::munmap(p, size);
        std::ffi::CString::new(text).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHIFT_L: u32 = 0xffe1;
    const SHIFT_R: u32 = 0xffe2;
    const F12: u32 = 0xffc9;
    const LOWER_A: u32 = 0x61;
    const UPPER_A: u32 = 0x41;

    fn hud(combo: &[u32]) -> Matcher {
        Matcher::new([combo.to_vec(), Vec::new(), Vec::new()])
    }

    #[test]
    fn a_combination_goes_down_once_while_held_and_again_after_a_release() {
        let mut m = hud(&[SHIFT_R, F12]);
        m.press(62, SHIFT_R, SHIFT_R);
        m.set_mods(xkb::SHIFT);
        assert_eq!(m.edges(), [false; 3]);
        m.press(88, F12, F12);
        assert_eq!(m.edges(), [true, false, false]);
        assert_eq!(m.edges(), [false; 3], "held is not pressed again");
        m.release(88);
        assert_eq!(m.edges(), [false; 3]);
        m.press(88, F12, F12);
        assert_eq!(m.edges(), [true, false, false]);
    }

    #[test]
    fn the_other_shift_key_does_not_stand_in_for_the_configured_one() {
        let mut m = hud(&[SHIFT_R, F12]);
        m.press(50, SHIFT_L, SHIFT_L);
        m.set_mods(xkb::SHIFT);
        m.press(88, F12, F12);
        assert_eq!(m.edges(), [false; 3]);
    }

    #[test]
    fn a_modifier_set_without_a_key_counts_for_its_keys() {
        let mut m = hud(&[SHIFT_R, F12]);
        m.set_mods(xkb::SHIFT);
        m.press(1, F12, F12);
        assert_eq!(m.edges(), [true, false, false]);
        m.set_mods(0);
        m.release(1);
        m.press(1, F12, F12);
        assert_eq!(m.edges(), [false; 3], "F12 alone");
    }

    #[test]
    fn a_letter_matches_with_shift_held_by_its_unmodified_keysym() {
        let mut m = hud(&[SHIFT_L, LOWER_A]);
        m.press(50, SHIFT_L, SHIFT_L);
        m.set_mods(xkb::SHIFT);
        m.press(30, UPPER_A, LOWER_A);
        assert_eq!(m.edges(), [true, false, false]);
    }

    #[test]
    fn leaving_clears_without_a_press_and_empty_combinations_never_match() {
        let mut m = Matcher::new([vec![F12], Vec::new(), vec![F12]]);
        m.press(88, F12, F12);
        assert_eq!(m.edges(), [true, false, true]);
        m.clear();
        assert_eq!(m.edges(), [false; 3]);
        m.press(88, F12, F12);
        assert_eq!(m.edges(), [true, false, true], "a press after focus came back");
    }

    #[test]
    fn a_new_keymap_keeps_the_keys_held_under_their_new_keysyms() {
        let mut m = hud(&[SHIFT_R, F12]);
        m.press(1, SHIFT_R, SHIFT_R);
        m.remap(|key| if key == 1 { (SHIFT_R, SHIFT_R) } else { (F12, F12) });
        m.press(2, F12, F12);
        assert_eq!(m.edges(), [true, false, false]);
        m.remap(|_| (LOWER_A, LOWER_A));
        assert_eq!(m.edges(), [false; 3]);
    }

    #[test]
    fn more_held_keys_than_counted_are_ignored() {
        let mut m = hud(&[F12]);
        for k in 0..(HELD as u32 + 4) {
            m.press(k, 0x100 + k, 0x100 + k);
        }
        m.press(88, F12, F12);
        assert_eq!(m.edges(), [false; 3]);
        m.release(0);
        m.press(88, F12, F12);
        assert_eq!(m.edges(), [true, false, false]);
    }

    #[test]
    fn nothing_attaches_without_a_display() {
        // SAFETY: null is refused before anything is read.
        unsafe { attach(ptr::null_mut(), 1, 1) };
        detach(1);
        detach_owner(1);
        close_display(ptr::null_mut());
    }

    /// A keymap of three keys, as a compositor would send it (evdev 42 Shift_L, 54 Shift_R,
    /// 88 F12; XKB codes are 8 more).
    const KEYMAP: &str = r#"xkb_keymap {
xkb_keycodes "t" { minimum = 8; maximum = 255; <LFSH> = 50; <RTSH> = 62; <FK12> = 96; };
xkb_types "t" { include "complete" };
xkb_compatibility "t" { include "complete" };
xkb_symbols "t" {
  key <LFSH> { [ Shift_L ] }; key <RTSH> { [ Shift_R ] }; key <FK12> { [ F12 ] };
  modifier_map Shift { <LFSH>, <RTSH> };
};
};"#;

    static PRESSES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

    fn count(k: usize) {
        assert_eq!(k, framescope_core::hotkeys::HUD);
        PRESSES.fetch_add(1, Ordering::SeqCst);
    }

    fn presses() -> usize {
        PRESSES.load(Ordering::SeqCst)
    }

    /// A file with `text` and its NUL, as the `keymap` event passes it.
    fn keymap_file(text: &str) -> std::os::fd::OwnedFd {
        use std::os::fd::FromRawFd;
        // SAFETY: a new anonymous file, ours; the write is from our buffer.
        unsafe {
            let fd = libc::memfd_create(c"keymap".as_ptr(), libc::MFD_CLOEXEC);
            assert!(fd >= 0);
            let mut b = text.as_bytes().to_vec();
            b.push(0);
            assert_eq!(libc::write(fd, b.as_ptr().cast(), b.len()), b.len() as isize);
            std::os::fd::OwnedFd::from_raw_fd(fd)
        }
    }

    #[test]
    fn a_scripted_seat_and_keyboard_toggle_on_the_combination_and_teardown_releases_them() {
        use crate::display::fake_compositor::{client, connect, string, wait_for};
        use std::os::fd::AsRawFd;
        let c = client();
        let (server, display) = connect(&c);
        // SAFETY: a live display, detached below before it is disconnected.
        unsafe { attach_with(display, 7, 8, ["Shift_R+F12", "", ""], count) }.expect("attach");

        let m = server.read();
        assert_eq!((m.object, m.opcode), (1, 1), "get_registry");
        let registry = m.words[0];
        let mut global = vec![36];
        global.extend(string("wl_seat"));
        global.push(7);
        server.send(registry, 0, &global);
        let m = server.read();
        assert_eq!((m.object, m.opcode), (registry, 0), "bind");
        assert_eq!(m.words[0], 36);
        assert_eq!(m.words[1..4], string("wl_seat")[..]);
        assert_eq!(m.words[4], SEAT_VERSION, "the seat's version");
        let seat = m.words[5];
        // No keyboard yet (a headless compositor before a virtual keyboard), then one.
        server.send(seat, 0, &[0]);
        server.send(seat, 0, &[SEAT_KEYBOARD]);
        let m = server.read();
        assert_eq!((m.object, m.opcode), (seat, 1), "get_keyboard");
        let keyboard = m.words[0];
        let file = keymap_file(KEYMAP);
        server.send_with_fd(keyboard, 0, &[1, KEYMAP.len() as u32 + 1], Some(file.as_raw_fd()));
        drop(file);
        // SAFETY: a client-side wl_surface proxy, for `enter` to name.
        let surface = unsafe { (c.proxy_create)(display, c.surface_interface) };
        // SAFETY: a live proxy.
        let sid = unsafe { (c.proxy_get_id)(surface) };
        // enter(serial, surface, keys: Shift_R already held).
        server.send(keyboard, 1, &[1, sid, 4, 54]);
        server.send(keyboard, 4, &[2, 1, 0, 0, 0]);
        // The same keymap again, as a compositor sends it when the seat's keyboard changes:
        // Shift_R stays held.
        let file = keymap_file(KEYMAP);
        server.send_with_fd(keyboard, 0, &[1, KEYMAP.len() as u32 + 1], Some(file.as_raw_fd()));
        drop(file);
        assert_eq!(presses(), 0);
        // key(serial, time, F12, pressed): the combination.
        server.send(keyboard, 3, &[3, 0, 88, 1]);
        wait_for("the first press", || presses() == 1);
        // Released, and F12 again without shift: nothing.
        server.send(keyboard, 3, &[4, 0, 88, 0]);
        server.send(keyboard, 3, &[5, 0, 54, 0]);
        server.send(keyboard, 4, &[6, 0, 0, 0, 0]);
        server.send(keyboard, 3, &[7, 0, 88, 1]);
        server.send(keyboard, 3, &[8, 0, 88, 0]);
        // Shift_L with F12: not the configured shift.
        server.send(keyboard, 3, &[9, 0, 42, 1]);
        server.send(keyboard, 4, &[10, 1, 0, 0, 0]);
        server.send(keyboard, 3, &[11, 0, 88, 1]);
        server.send(keyboard, 3, &[12, 0, 88, 0]);
        server.send(keyboard, 3, &[13, 0, 42, 0]);
        // Shift as a modifier only (a virtual keyboard's), then F12: the combination.
        server.send(keyboard, 4, &[14, 1, 0, 0, 0]);
        server.send(keyboard, 3, &[15, 0, 88, 1]);
        wait_for("the second press", || presses() == 2);
        // Focus goes: the keys held then do not count when it comes back without them.
        server.send(keyboard, 2, &[16, sid]);
        server.send(keyboard, 1, &[17, sid, 0]);
        server.send(keyboard, 3, &[18, 0, 54, 1]);
        // A round trip through our thread: the capabilities above are answered in order, so
        // the events before are dispatched once a later request comes.
        server.send(seat, 0, &[0]);
        let m = server.read();
        assert_eq!(
            (m.object, m.opcode),
            (keyboard, 0),
            "the keyboard released with its capability"
        );
        assert_eq!(
            presses(),
            2,
            "no press from the other shift, F12 alone, or focus coming back"
        );

        // A new keyboard, then the app destroys its surface: teardown releases the seat.
        server.send(seat, 0, &[SEAT_KEYBOARD]);
        let m = server.read();
        assert_eq!((m.object, m.opcode), (seat, 1), "get_keyboard");
        let keyboard = m.words[0];
        let t = std::time::Instant::now();
        detach(7);
        assert!(
            t.elapsed() < Duration::from_millis(50),
            "teardown took {:?}",
            t.elapsed()
        );
        let m = server.read();
        assert_eq!((m.object, m.opcode), (keyboard, 0), "wl_keyboard.release");
        let m = server.read();
        assert_eq!((m.object, m.opcode), (seat, 3), "wl_seat.release");
        assert!(CONNS.lock().iter().all(|e| e.display != display as usize));
        // SAFETY: the app's display, framescope's objects gone.
        unsafe { (c.disconnect)(display) };
    }
}
