//! The few `libwayland-client` functions the `wp_presentation` source and the Wayland key
//! reader (`crate::input::wayland_keys`) call, looked up with `dlopen(RTLD_NOLOAD)`, and the
//! `presentation-time` protocol's interface tables.
//!
//! Why a thin binding of our own rather than `wayland-client`: framescope must use the very
//! libwayland the app's `wl_display` belongs to, and only when the app already loaded it
//! (`RTLD_NOLOAD`: a process without Wayland never gets the library); `wayland-client` with
//! `system` links `libwayland-client.so.0` into both layers at load time (every X11 and
//! headless app would need it installed) and brings four crates and a build script for
//! about fifteen C functions and two interface tables, whose layout is fixed by
//! `wayland-util.h` (`struct wl_interface`, `struct wl_message`, `union wl_argument`).
//! `wl_proxy_marshal_array_flags` (libwayland 1.20, 2021) is the non-variadic marshal call.

use std::ffi::{c_char, c_int, c_void, CStr};
use std::ptr;
use std::sync::OnceLock;

/// `struct wl_message` (wayland-util.h).
#[repr(C)]
pub struct WlMessage {
    pub name: *const c_char,
    pub signature: *const c_char,
    pub types: *const *const WlInterface,
}

/// `struct wl_interface` (wayland-util.h).
#[repr(C)]
pub struct WlInterface {
    pub name: *const c_char,
    pub version: c_int,
    pub method_count: c_int,
    pub methods: *const WlMessage,
    pub event_count: c_int,
    pub events: *const WlMessage,
}

/// `struct wl_array` (wayland-util.h).
#[repr(C)]
pub struct WlArray {
    pub size: usize,
    pub alloc: usize,
    pub data: *mut c_void,
}

/// `union wl_argument` (wayland-util.h): 32-bit integers and pointers, so the size of a
/// pointer. Only the members this crate reads or writes are named.
#[repr(C)]
#[derive(Clone, Copy)]
pub union WlArgument {
    pub u: u32,
    pub i: i32,
    pub s: *const c_char,
    pub o: *mut c_void,
    /// A file descriptor, the receiver's to close.
    pub h: i32,
    pub a: *mut WlArray,
}

/// `wl_dispatcher_func_t`.
pub type Dispatcher = unsafe extern "C" fn(
    implementation: *const c_void,
    target: *mut c_void,
    opcode: u32,
    msg: *const WlMessage,
    args: *mut WlArgument,
) -> c_int;

/// `WL_MARSHAL_FLAG_DESTROY`.
pub const MARSHAL_DESTROY: u32 = 1;

/// The functions used, from the process's own `libwayland-client.so.0`.
pub struct Wl {
    pub display_create_queue: unsafe extern "C" fn(*mut c_void) -> *mut c_void,
    pub event_queue_destroy: unsafe extern "C" fn(*mut c_void),
    pub proxy_create_wrapper: unsafe extern "C" fn(*mut c_void) -> *mut c_void,
    pub proxy_wrapper_destroy: unsafe extern "C" fn(*mut c_void),
    pub proxy_set_queue: unsafe extern "C" fn(*mut c_void, *mut c_void),
    pub proxy_marshal_array_flags:
        unsafe extern "C" fn(*mut c_void, u32, *const WlInterface, u32, u32, *mut WlArgument) -> *mut c_void,
    pub proxy_add_dispatcher: unsafe extern "C" fn(*mut c_void, Dispatcher, *const c_void, *mut c_void) -> c_int,
    pub proxy_get_user_data: unsafe extern "C" fn(*mut c_void) -> *mut c_void,
    pub proxy_get_version: unsafe extern "C" fn(*mut c_void) -> u32,
    pub proxy_destroy: unsafe extern "C" fn(*mut c_void),
    pub display_get_fd: unsafe extern "C" fn(*mut c_void) -> c_int,
    pub display_prepare_read_queue: unsafe extern "C" fn(*mut c_void, *mut c_void) -> c_int,
    pub display_read_events: unsafe extern "C" fn(*mut c_void) -> c_int,
    pub display_dispatch_queue_pending: unsafe extern "C" fn(*mut c_void, *mut c_void) -> c_int,
    pub display_flush: unsafe extern "C" fn(*mut c_void) -> c_int,
    pub display_get_error: unsafe extern "C" fn(*mut c_void) -> c_int,
    pub registry_interface: *const WlInterface,
    /// `wl_display_interface`: a `wl_display`'s first word points at it (its `wl_proxy`'s
    /// `wl_object` starts with its interface), which tells a `wl_display*` from other native
    /// displays, as Mesa's EGL does.
    pub display_interface: *const WlInterface,
    pub callback_interface: *const WlInterface,
    pub seat_interface: *const WlInterface,
    pub keyboard_interface: *const WlInterface,
    /// `wp_presentation` and `wp_presentation_feedback` (presentation-time.xml, version 1).
    pub presentation_interface: *const WlInterface,
    pub feedback_interface: *const WlInterface,
}

// SAFETY: function pointers and pointers to immutable interface tables (libwayland's own
// statics, or ours leaked once and never written after `Wl::get` built them).
unsafe impl Send for Wl {}
// SAFETY: as above.
unsafe impl Sync for Wl {}

static WL: OnceLock<Wl> = OnceLock::new();

/// A C string that lives for the process.
fn leak_str(s: &CStr) -> *const c_char {
    s.as_ptr()
}

impl Wl {
    /// The process's libwayland-client, looked up once found; `Err` when the process has not
    /// loaded it (then it has no Wayland connection to watch) or a symbol is missing (older
    /// than 1.20). A failure is not kept: a process may load the library after a first look
    /// (an app that opens its Wayland window after an X11 or headless start).
    pub fn get() -> Result<&'static Wl, String> {
        if let Some(w) = WL.get() {
            return Ok(w);
        }
        let w = Wl::load()?;
        Ok(WL.get_or_init(|| w))
    }

    fn load() -> Result<Wl, String> {
        // SAFETY: a NUL-terminated name; RTLD_NOLOAD only returns a library already loaded,
        // taking a reference that is never dropped (the library stays for the process).
        let h = unsafe { libc::dlopen(c"libwayland-client.so.0".as_ptr(), libc::RTLD_NOW | libc::RTLD_NOLOAD) };
        if h.is_null() {
            return Err("libwayland-client.so.0 is not loaded in this process".into());
        }
        let sym = |name: &CStr| -> Result<*mut c_void, String> {
            // SAFETY: a live handle and a NUL-terminated name.
            let p = unsafe { libc::dlsym(h, name.as_ptr()) };
            if p.is_null() {
                Err(format!("libwayland-client.so.0 has no {}", name.to_string_lossy()))
            } else {
                Ok(p)
            }
        };
        macro_rules! f {
            ($name:literal) => {
                // SAFETY: the symbol is libwayland-client's function of that name, whose C
                // prototype (wayland-client-core.h) the field's type spells.
                unsafe { fn_ptr(sym($name)?) }
            };
        }
        let surface = sym(c"wl_surface_interface")? as *const WlInterface;
        let output = sym(c"wl_output_interface")? as *const WlInterface;
        let (presentation_interface, feedback_interface) = protocol(surface, output);
        Ok(Wl {
            display_create_queue: f!(c"wl_display_create_queue"),
            event_queue_destroy: f!(c"wl_event_queue_destroy"),
            proxy_create_wrapper: f!(c"wl_proxy_create_wrapper"),
            proxy_wrapper_destroy: f!(c"wl_proxy_wrapper_destroy"),
            proxy_set_queue: f!(c"wl_proxy_set_queue"),
            proxy_marshal_array_flags: f!(c"wl_proxy_marshal_array_flags"),
            proxy_add_dispatcher: f!(c"wl_proxy_add_dispatcher"),
            proxy_get_user_data: f!(c"wl_proxy_get_user_data"),
            proxy_get_version: f!(c"wl_proxy_get_version"),
            proxy_destroy: f!(c"wl_proxy_destroy"),
            display_get_fd: f!(c"wl_display_get_fd"),
            display_prepare_read_queue: f!(c"wl_display_prepare_read_queue"),
            display_read_events: f!(c"wl_display_read_events"),
            display_dispatch_queue_pending: f!(c"wl_display_dispatch_queue_pending"),
            display_flush: f!(c"wl_display_flush"),
            display_get_error: f!(c"wl_display_get_error"),
            registry_interface: sym(c"wl_registry_interface")? as *const WlInterface,
            display_interface: sym(c"wl_display_interface")? as *const WlInterface,
            callback_interface: sym(c"wl_callback_interface")? as *const WlInterface,
            seat_interface: sym(c"wl_seat_interface")? as *const WlInterface,
            keyboard_interface: sym(c"wl_keyboard_interface")? as *const WlInterface,
            presentation_interface,
            feedback_interface,
        })
    }
}

/// A function pointer of type `F` from a symbol's address.
///
/// # Safety
/// `F` is an `extern "C"` function pointer type matching the symbol's C prototype.
unsafe fn fn_ptr<F: Copy>(p: *mut c_void) -> F {
    assert_eq!(std::mem::size_of::<F>(), std::mem::size_of::<*mut c_void>());
    // SAFETY: the caller's: a function pointer of the symbol's type, of a pointer's size.
    unsafe { std::mem::transmute_copy(&p) }
}

/// `wp_presentation` and `wp_presentation_feedback` as presentation-time.xml (stable,
/// version 1) defines them, built once and leaked: they refer to each other and to
/// libwayland's `wl_surface`/`wl_output` tables, whose addresses are known only at run time.
fn protocol(surface: *const WlInterface, output: *const WlInterface) -> (*const WlInterface, *const WlInterface) {
    fn leak<T>(v: T) -> *const T {
        Box::leak(Box::new(v))
    }
    // Arguments that are no object carry no interface; one shared array of nulls serves them
    // (as wayland-scanner's output does).
    let nulls: *const *const WlInterface = leak([ptr::null::<WlInterface>(); 8]).cast();
    let msg = |name: &'static CStr, signature: &'static CStr, types: *const *const WlInterface| WlMessage {
        name: leak_str(name),
        signature: leak_str(signature),
        types,
    };
    let feedback_events = leak([
        // sync_output(output: object wl_output)
        msg(c"sync_output", c"o", leak([output]).cast()),
        // presented(tv_sec_hi, tv_sec_lo, tv_nsec, refresh, seq_hi, seq_lo, flags)
        msg(c"presented", c"uuuuuuu", nulls),
        msg(c"discarded", c"", nulls),
    ]);
    let feedback = leak(WlInterface {
        name: leak_str(c"wp_presentation_feedback"),
        version: 1,
        method_count: 0,
        methods: ptr::null(),
        event_count: 3,
        events: feedback_events.cast(),
    });
    let presentation_requests = leak([
        msg(c"destroy", c"", nulls),
        // feedback(surface: object wl_surface, callback: new_id wp_presentation_feedback)
        msg(c"feedback", c"on", leak([surface, feedback]).cast()),
    ]);
    let presentation_events = leak([msg(c"clock_id", c"u", nulls)]);
    let presentation = leak(WlInterface {
        name: leak_str(c"wp_presentation"),
        version: 1,
        method_count: 2,
        methods: presentation_requests.cast(),
        event_count: 1,
        events: presentation_events.cast(),
    });
    (presentation, feedback)
}

/// Request and event numbers (presentation-time.xml, wayland.xml).
pub mod op {
    /// `wl_display.sync`, `wl_display.get_registry`.
    pub const DISPLAY_SYNC: u32 = 0;
    pub const DISPLAY_GET_REGISTRY: u32 = 1;
    /// `wl_registry.bind`; events `global`, `global_remove`.
    pub const REGISTRY_BIND: u32 = 0;
    pub const REGISTRY_GLOBAL: u32 = 0;
    /// `wl_callback.done`.
    pub const CALLBACK_DONE: u32 = 0;
    /// `wp_presentation.destroy`, `.feedback`; event `clock_id`.
    pub const PRESENTATION_DESTROY: u32 = 0;
    pub const PRESENTATION_FEEDBACK: u32 = 1;
    pub const PRESENTATION_CLOCK_ID: u32 = 0;
    /// `wp_presentation_feedback` events.
    pub const FEEDBACK_PRESENTED: u32 = 1;
    pub const FEEDBACK_DISCARDED: u32 = 2;
    /// `wl_seat.get_keyboard`, `.release` (version 5); event `capabilities`.
    pub const SEAT_GET_KEYBOARD: u32 = 1;
    pub const SEAT_RELEASE: u32 = 3;
    pub const SEAT_CAPABILITIES: u32 = 0;
    /// `wl_keyboard.release` (version 3); events `keymap`, `enter`, `leave`, `key`,
    /// `modifiers`.
    pub const KEYBOARD_RELEASE: u32 = 0;
    pub const KEYBOARD_KEYMAP: u32 = 0;
    pub const KEYBOARD_ENTER: u32 = 1;
    pub const KEYBOARD_LEAVE: u32 = 2;
    pub const KEYBOARD_KEY: u32 = 3;
    pub const KEYBOARD_MODIFIERS: u32 = 4;
}

/// `wl_seat.capability.keyboard` (wayland.xml).
pub const SEAT_KEYBOARD: u32 = 2;
/// `wl_keyboard.keymap_format.xkb_v1` (wayland.xml).
pub const KEYMAP_XKB_V1: u32 = 1;

/// `wp_presentation_feedback.kind` bits (presentation-time.xml).
pub const KIND_ZERO_COPY: u32 = 0x8;

/// A private event queue on the app's display, for the objects framescope makes there: the
/// queue, a display wrapper on it (requests made through the wrapper put the new objects'
/// events on the queue, never on the app's), and an eventfd that wakes [`run_queue`].
pub struct PrivateQueue {
    pub queue: *mut c_void,
    pub wrapper: *mut c_void,
    pub wake: c_int,
}

/// Makes a [`PrivateQueue`] on `display`; on failure, what was made is undone.
///
/// # Safety
/// `display` is a live `wl_display` of `wl`'s library.
pub unsafe fn private_queue(wl: &Wl, display: *mut c_void) -> Result<PrivateQueue, String> {
    // SAFETY (this function): libwayland calls on the caller's live display and on the
    // objects made from it here; each is checked before use.
    unsafe {
        if (wl.display_get_error)(display) != 0 {
            return Err("the wl_display has an error".into());
        }
        let queue = (wl.display_create_queue)(display);
        if queue.is_null() {
            return Err("wl_display_create_queue failed".into());
        }
        let wrapper = (wl.proxy_create_wrapper)(display);
        if wrapper.is_null() {
            (wl.event_queue_destroy)(queue);
            return Err("wl_proxy_create_wrapper failed".into());
        }
        (wl.proxy_set_queue)(wrapper, queue);
        let wake = libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK);
        if wake < 0 {
            (wl.proxy_wrapper_destroy)(wrapper);
            (wl.event_queue_destroy)(queue);
            return Err("eventfd failed".into());
        }
        Ok(PrivateQueue { queue, wrapper, wake })
    }
}

/// A private queue's loop on framescope's thread: dispatch the queue, flush, wait for the
/// socket or `wake`, read. The fd is polled with a timeout, and only once it is readable is a
/// read prepared and made straight after, so no read is held prepared while we wait (an app
/// thread's `wl_display_read_events` would wait for ours) and a compositor that stops
/// answering leaves this thread in `poll`, never the app. Events another reader (the app)
/// queued for us are dispatched within `poll_ms`. `Ok` once `stop` is set; `Err` when the
/// connection failed.
///
/// # Safety
/// `display` is alive until this returns; `queue` is its queue, dispatched by this thread alone.
pub unsafe fn run_queue(
    wl: &Wl,
    display: *mut c_void,
    queue: *mut c_void,
    wake: c_int,
    stop: &std::sync::atomic::AtomicBool,
    poll_ms: c_int,
) -> Result<(), &'static str> {
    use std::sync::atomic::Ordering;
    // SAFETY (this function): libwayland calls on the caller's live display and queue.
    let fd = unsafe { (wl.display_get_fd)(display) };
    loop {
        if stop.load(Ordering::Acquire) {
            return Ok(());
        }
        // SAFETY: as above; dispatches only our objects' events.
        if unsafe { (wl.display_dispatch_queue_pending)(display, queue) } < 0 {
            return Err("dispatching failed");
        }
        // Our requests go out; EAGAIN (a full socket) leaves them for later.
        // SAFETY: as above.
        unsafe { (wl.display_flush)(display) };
        let mut fds = [
            libc::pollfd {
                fd,
                events: libc::POLLIN,
                revents: 0,
            },
            libc::pollfd {
                fd: wake,
                events: libc::POLLIN,
                revents: 0,
            },
        ];
        // SAFETY: two pollfds on our stack.
        let n = unsafe { libc::poll(fds.as_mut_ptr(), 2, poll_ms) };
        if stop.load(Ordering::Acquire) {
            return Ok(());
        }
        if n < 0 {
            continue;
        }
        if fds[0].revents & (libc::POLLERR | libc::POLLHUP | libc::POLLNVAL) != 0 {
            return Err("the compositor's socket closed");
        }
        if fds[0].revents & libc::POLLIN != 0 {
            // SAFETY: as above; prepared and read at once.
            unsafe {
                if (wl.display_prepare_read_queue)(display, queue) == 0 && (wl.display_read_events)(display) < 0 {
                    return Err("reading events failed");
                }
            }
        }
    }
}
