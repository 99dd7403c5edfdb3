//! X11 windows through Xlib, loaded with dlopen at run time so the binary has
//! no link-time dependency on libX11 (and `--headless` runs need no X at all).

use std::ffi::{c_char, c_int, c_long, c_uint, c_ulong, c_void, CStr, CString};

pub type Display = c_void;
pub type XWindow = c_ulong;

const STRUCTURE_NOTIFY_MASK: c_long = 1 << 17;
const CONFIGURE_NOTIFY: c_int = 22;

/// Xlib's `XEvent` is a union padded to 24 longs.
#[repr(C)]
union XEvent {
    kind: c_int,
    configure: XConfigureEvent,
    pad: [c_long; 24],
}

#[repr(C)]
#[derive(Clone, Copy)]
struct XConfigureEvent {
    kind: c_int,
    serial: c_ulong,
    send_event: c_int,
    display: *mut Display,
    event: XWindow,
    window: XWindow,
    x: c_int,
    y: c_int,
    width: c_int,
    height: c_int,
    border_width: c_int,
    above: XWindow,
    override_redirect: c_int,
}

type OpenDisplay = unsafe extern "C" fn(*const c_char) -> *mut Display;
type DisplayFn = unsafe extern "C" fn(*mut Display) -> c_int;
type ScreenWindow = unsafe extern "C" fn(*mut Display, c_int) -> XWindow;
type ScreenPixel = unsafe extern "C" fn(*mut Display, c_int) -> c_ulong;
type CreateSimpleWindow =
    unsafe extern "C" fn(*mut Display, XWindow, c_int, c_int, c_uint, c_uint, c_uint, c_ulong, c_ulong) -> XWindow;
type WindowFn = unsafe extern "C" fn(*mut Display, XWindow) -> c_int;
type StoreName = unsafe extern "C" fn(*mut Display, XWindow, *const c_char) -> c_int;
type SelectInput = unsafe extern "C" fn(*mut Display, XWindow, c_long) -> c_int;
type NextEvent = unsafe extern "C" fn(*mut Display, *mut XEvent) -> c_int;
type InitThreads = unsafe extern "C" fn() -> c_int;

struct Xlib {
    lib: *mut c_void,
    open_display: OpenDisplay,
    close_display: DisplayFn,
    default_screen: DisplayFn,
    root_window: ScreenWindow,
    black_pixel: ScreenPixel,
    create_simple_window: CreateSimpleWindow,
    destroy_window: WindowFn,
    store_name: StoreName,
    select_input: SelectInput,
    map_window: WindowFn,
    flush: DisplayFn,
    pending: DisplayFn,
    next_event: NextEvent,
    init_threads: InitThreads,
}

fn dl_error() -> String {
    // SAFETY: dlerror returns null or a valid C string owned by libc that stays
    // valid until the next dl* call on this thread; we copy it immediately.
    unsafe {
        let e = libc::dlerror();
        if e.is_null() {
            "unknown dlopen error".into()
        } else {
            CStr::from_ptr(e).to_string_lossy().into_owned()
        }
    }
}

impl Xlib {
    fn load() -> Result<Xlib, String> {
        // SAFETY: dlopen with a constant NUL-terminated name; libX11 has no
        // unusual initialisers.
        let lib = unsafe { libc::dlopen(c"libX11.so.6".as_ptr(), libc::RTLD_NOW) };
        if lib.is_null() {
            return Err(format!("cannot load libX11.so.6: {}", dl_error()));
        }
        macro_rules! sym {
            ($name:literal, $ty:ty) => {{
                // SAFETY: `lib` is a live handle; the symbol name is NUL-terminated.
                let p = unsafe { libc::dlsym(lib, $name.as_ptr()) };
                if p.is_null() {
                    return Err(format!("libX11 lacks {:?}", $name));
                }
                // SAFETY: `$ty` spells the Xlib.h prototype of this exact
                // symbol, so the non-null pointer is callable as that type.
                unsafe { std::mem::transmute::<*mut c_void, $ty>(p) }
            }};
        }
        Ok(Xlib {
            lib,
            open_display: sym!(c"XOpenDisplay", OpenDisplay),
            close_display: sym!(c"XCloseDisplay", DisplayFn),
            default_screen: sym!(c"XDefaultScreen", DisplayFn),
            root_window: sym!(c"XRootWindow", ScreenWindow),
            black_pixel: sym!(c"XBlackPixel", ScreenPixel),
            create_simple_window: sym!(c"XCreateSimpleWindow", CreateSimpleWindow),
            destroy_window: sym!(c"XDestroyWindow", WindowFn),
            store_name: sym!(c"XStoreName", StoreName),
            select_input: sym!(c"XSelectInput", SelectInput),
            map_window: sym!(c"XMapWindow", WindowFn),
            flush: sym!(c"XFlush", DisplayFn),
            pending: sym!(c"XPending", DisplayFn),
            next_event: sym!(c"XNextEvent", NextEvent),
            init_threads: sym!(c"XInitThreads", InitThreads),
        })
    }
}

/// One X connection and the windows it owns.
pub struct Windows {
    x: Xlib,
    display: *mut Display,
    windows: Vec<XWindow>,
}

/// A window whose size changed since the last poll.
#[derive(Debug, Clone, Copy)]
pub struct Resized {
    pub index: usize,
    pub width: u32,
    pub height: u32,
}

impl Windows {
    pub fn open(count: u32, width: u32, height: u32) -> Result<Windows, String> {
        let x = Xlib::load()?;
        // SAFETY: XInitThreads must precede every other Xlib call; the WSI may
        // touch the connection from its own threads.
        unsafe { (x.init_threads)() };
        // SAFETY: a null name means $DISPLAY, as documented for XOpenDisplay.
        let display = unsafe { (x.open_display)(std::ptr::null()) };
        if display.is_null() {
            // SAFETY: `lib` came from dlopen and nothing from it is in use.
            unsafe { libc::dlclose(x.lib) };
            return Err("cannot open X display (is DISPLAY set?)".into());
        }
        let mut me = Windows {
            x,
            display,
            windows: Vec::new(),
        };
        for i in 0..count {
            let title = CString::new(format!("framescope-testapp {i}")).expect("no NUL in title");
            let gap = 10;
            let left = (i * (width + gap)) as c_int;
            // SAFETY: `display` is open; the root window and pixel come from it;
            // `title` outlives the XStoreName call.
            let w = unsafe {
                let screen = (me.x.default_screen)(display);
                let root = (me.x.root_window)(display, screen);
                let black = (me.x.black_pixel)(display, screen);
                let w = (me.x.create_simple_window)(display, root, left, 0, width, height, 0, 0, black);
                (me.x.store_name)(display, w, title.as_ptr());
                (me.x.select_input)(display, w, STRUCTURE_NOTIFY_MASK);
                (me.x.map_window)(display, w);
                w
            };
            me.windows.push(w);
        }
        // SAFETY: `display` is open.
        unsafe { (me.x.flush)(display) };
        Ok(me)
    }

    pub fn display(&self) -> *mut Display {
        self.display
    }

    pub fn handles(&self) -> &[XWindow] {
        &self.windows
    }

    /// Drains queued events without blocking; reports the last size seen per window.
    pub fn poll(&mut self) -> Vec<Resized> {
        let mut out: Vec<Resized> = Vec::new();
        // SAFETY: `display` is open; XNextEvent only runs when XPending says an
        // event is queued, so it never blocks; the union is fully sized.
        unsafe {
            while (self.x.pending)(self.display) > 0 {
                let mut ev = XEvent { pad: [0; 24] };
                (self.x.next_event)(self.display, &mut ev);
                if ev.kind != CONFIGURE_NOTIFY {
                    continue;
                }
                let c = ev.configure;
                let Some(index) = self.windows.iter().position(|&w| w == c.window) else {
                    continue;
                };
                let r = Resized {
                    index,
                    width: c.width.max(0) as u32,
                    height: c.height.max(0) as u32,
                };
                match out.iter_mut().find(|o| o.index == index) {
                    Some(o) => *o = r,
                    None => out.push(r),
                }
            }
        }
        out
    }
}

impl Drop for Windows {
    fn drop(&mut self) {
        // SAFETY: every window was created on this display, which is still open;
        // surfaces on them are destroyed before Windows is dropped (see main).
        unsafe {
            for &w in &self.windows {
                (self.x.destroy_window)(self.display, w);
            }
            (self.x.close_display)(self.display);
            libc::dlclose(self.x.lib);
        }
    }
}
