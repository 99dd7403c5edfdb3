//! Wayland `wp_presentation` feedback as a display-time source (presentation-time.xml).
//!
//! How a library watches an app's surface without touching the app's event handling: on the
//! app's `wl_display`, framescope makes an event queue of its own (`wl_display_create_queue`),
//! a wrapper of the display on that queue, and through it a registry that binds
//! `wp_presentation`. Everything framescope creates from there is on its queue, so libwayland
//! hands its events to framescope's thread only, whichever thread reads the socket.
//!
//! Per frame, on the app's thread, right before the commit of the app's surface (for Vulkan
//! the driver commits inside `vkQueuePresentKHR`, for EGL inside `eglSwapBuffers`), one
//! `wp_presentation.feedback(surface)` request: feedback applies to the surface's next
//! commit. A request is only written into libwayland's buffer (the driver's commit flushes
//! it), so it never blocks. The new feedback object and the frame it belongs to go into a
//! fixed slot of the [`Target`] (no allocation of ours; libwayland mallocs the proxy as it
//! does for every request).
//!
//! framescope's thread polls the display's fd with a timeout, and only once the fd is readable
//! does it `wl_display_prepare_read_queue` and `wl_display_read_events` straight after, so it
//! never holds a read prepared while it waits (an app thread's `read_events` would wait for
//! it), and a compositor that stops answering leaves it in `poll`, never the app. It dispatches
//! only its own queue. `presented` and `discarded` become one [`DisplayReport`] each for the
//! slot's frame, with the time converted to `CLOCK_MONOTONIC` from the clock the compositor
//! announced (`clock_id`; weston 10 announces `CLOCK_MONOTONIC_RAW`).
//!
//! Teardown ([`detach`]) runs on the app's thread before the display can go away (the layers
//! call it at `vkDestroySurfaceKHR`, `vkDestroyInstance`, `eglTerminate`): it stops the
//! thread (woken through an eventfd, waited for at most [`STOP_WAIT`]) and destroys every
//! object framescope made, its queue last.

use super::wayland_sys::{
    op, private_queue, run_queue, PrivateQueue, Wl, WlArgument, WlMessage, KIND_ZERO_COPY, MARSHAL_DESTROY,
};
use framescope_core::display::{DisplayFeed, DisplayReport, DisplaySource, PresentationMode};
use framescope_core::guard::{guarded, Site};
use framescope_core::sync::Mutex;
use std::ffi::{c_int, c_void, CStr};
use std::ptr;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicPtr, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

/// Feedback requests in flight per target: a swapchain holds at most a handful of images and
/// the compositor answers each commit within a refresh or two; past this many unanswered,
/// frames go without a request (they come out `no_report`) rather than grow anything.
pub const SLOTS: usize = 64;

/// How long teardown waits for framescope's thread to leave libwayland. Its poll is woken at
/// once through the eventfd; this bounds an app's teardown should the thread be held in
/// `wl_display_read_events` by another reader.
pub const STOP_WAIT: Duration = Duration::from_millis(250);

/// The thread's poll timeout: how often it looks at the stop flag without a wake-up, and how
/// late at most it dispatches events another reader (the app) queued for it.
const POLL_MS: c_int = 100;

/// A slot taken, its proxy not made yet (never a proxy's address: no object lives at 1).
const CLAIMED: *mut c_void = std::ptr::dangling_mut::<c_void>();

static THREAD: Site = Site::new("Wayland presentation thread");
static EVENT: Site = Site::new("Wayland presentation event");

/// Where a connection stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum State {
    /// Waiting for the registry's globals and the compositor's clock.
    Starting = 0,
    /// `wp_presentation` is bound and its clock is known: feedback is requested.
    Ready = 1,
    /// The compositor has no `wp_presentation`.
    NoPresentation = 2,
    /// The compositor's presentation clock cannot be read here.
    UnknownClock = 3,
    /// Detached, or the connection failed.
    Stopped = 4,
}

impl State {
    fn from_u8(v: u8) -> State {
        match v {
            0 => State::Starting,
            1 => State::Ready,
            2 => State::NoPresentation,
            3 => State::UnknownClock,
            _ => State::Stopped,
        }
    }
}

/// `tv_sec_hi`, `tv_sec_lo`, `tv_nsec` of `presented` as ns on the compositor's clock.
pub fn presented_ns(sec_hi: u32, sec_lo: u32, nsec: u32) -> u64 {
    let sec = (u64::from(sec_hi) << 32) | u64::from(sec_lo);
    sec.saturating_mul(1_000_000_000).saturating_add(u64::from(nsec))
}

/// The report a `presented` event makes for `frame`; `offset_ns` is
/// `CLOCK_MONOTONIC − the compositor's clock`.
pub fn presented_report(frame: u64, args: [u32; 7], offset_ns: i128) -> DisplayReport {
    let [sec_hi, sec_lo, nsec, refresh, _seq_hi, _seq_lo, flags] = args;
    let t = i128::from(presented_ns(sec_hi, sec_lo, nsec)) + offset_ns;
    DisplayReport {
        frame,
        source: DisplaySource::WaylandPresentation,
        shown_ns: Some(t.clamp(0, i128::from(u64::MAX)) as u64),
        mode: if flags & KIND_ZERO_COPY != 0 {
            PresentationMode::Flip
        } else {
            PresentationMode::Composited
        },
        // 0: the compositor does not know (presentation-time.xml).
        refresh_ns: (refresh != 0).then_some(u64::from(refresh)),
    }
}

/// The report a `discarded` event makes: the content was replaced before it was shown.
pub fn discarded_report(frame: u64) -> DisplayReport {
    DisplayReport {
        frame,
        source: DisplaySource::WaylandPresentation,
        shown_ns: None,
        mode: PresentationMode::Unknown,
        refresh_ns: None,
    }
}

fn clock_ns(clock: libc::clockid_t) -> Option<i128> {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime only writes the timespec on our stack.
    let rc = unsafe { libc::clock_gettime(clock, &mut ts) };
    (rc == 0).then(|| i128::from(ts.tv_sec) * 1_000_000_000 + i128::from(ts.tv_nsec))
}

/// `CLOCK_MONOTONIC − clock` now, from the tightest of a few monotonic brackets around a read
/// of `clock` (a preemption between two reads would otherwise be in the offset); `None` when
/// `clock` cannot be read.
pub fn offset_to_monotonic(clock: libc::clockid_t) -> Option<i128> {
    if clock == libc::CLOCK_MONOTONIC {
        return Some(0);
    }
    let mut best: Option<(i128, i128)> = None;
    for _ in 0..4 {
        let a = clock_ns(libc::CLOCK_MONOTONIC)?;
        let c = clock_ns(clock)?;
        let b = clock_ns(libc::CLOCK_MONOTONIC)?;
        let tighter = match best {
            Some((w, _)) => b - a < w,
            None => true,
        };
        if tighter {
            best = Some((b - a, (a + b) / 2 - c));
        }
    }
    best.map(|(_, o)| o)
}

struct Slot {
    proxy: AtomicPtr<c_void>,
    frame: AtomicU64,
}

/// One frame session's feed on one connection: the feedback requests in flight for it.
pub struct Target {
    conn: Arc<Conn>,
    feed: Arc<DisplayFeed>,
    slots: [Slot; SLOTS],
    next: AtomicUsize,
    announced: AtomicBool,
    /// Frames presented without a request because every slot was in flight.
    pub skipped: AtomicU64,
}

impl Target {
    /// Asks for feedback on `surface`'s next commit, for `frame`; on the app's thread right
    /// before the commit (the present's call down). False when nothing was asked (the
    /// connection is not ready, or every slot is in flight).
    ///
    /// # Safety
    /// `surface` is a live `wl_surface` of this target's display.
    pub unsafe fn before_commit(&self, surface: *mut c_void, frame: u64) -> bool {
        let c = &*self.conn;
        if c.state() != State::Ready || surface.is_null() {
            return false;
        }
        let presentation = c.presentation.load(Ordering::Acquire);
        if presentation.is_null() {
            return false;
        }
        if !self.announced.load(Ordering::Relaxed) {
            self.announced.store(true, Ordering::Relaxed);
            self.feed.set_source(DisplaySource::WaylandPresentation);
        }
        let start = self.next.fetch_add(1, Ordering::Relaxed);
        let Some(i) = (0..SLOTS).map(|k| (start + k) % SLOTS).find(|&i| {
            self.slots[i]
                .proxy
                .compare_exchange(ptr::null_mut(), CLAIMED, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
        }) else {
            self.skipped.fetch_add(1, Ordering::Relaxed);
            return false;
        };
        let slot = &self.slots[i];
        slot.frame.store(frame, Ordering::Relaxed);
        let wl = c.wl;
        // feedback(surface, new_id): the new proxy is on the presentation's queue (ours).
        let mut args = [WlArgument { o: surface }, WlArgument { o: ptr::null_mut() }];
        // SAFETY: a live proxy of ours, the request's opcode, interface and arguments as
        // presentation-time.xml defines them; libwayland copies the arguments.
        let fb = unsafe {
            (wl.proxy_marshal_array_flags)(
                presentation,
                op::PRESENTATION_FEEDBACK,
                wl.feedback_interface,
                (wl.proxy_get_version)(presentation),
                0,
                args.as_mut_ptr(),
            )
        };
        if fb.is_null() {
            slot.proxy.store(ptr::null_mut(), Ordering::Release);
            return false;
        }
        // Before any event can come: the compositor answers only after the commit, which
        // follows this call. The dispatcher finds this target and the slot's index.
        // SAFETY: a new proxy without a dispatcher; `self` outlives it (teardown destroys the
        // proxies before it drops the targets).
        unsafe {
            (wl.proxy_add_dispatcher)(
                fb,
                feedback_event,
                self as *const Target as *const c_void,
                i as *mut c_void,
            );
        }
        slot.proxy.store(fb, Ordering::Release);
        true
    }

    /// The connection's state.
    pub fn state(&self) -> State {
        self.conn.state()
    }
}

/// framescope's objects on one app `wl_display`.
pub struct Conn {
    wl: &'static Wl,
    display: *mut c_void,
    queue: *mut c_void,
    wrapper: *mut c_void,
    registry: AtomicPtr<c_void>,
    sync: AtomicPtr<c_void>,
    presentation: AtomicPtr<c_void>,
    state: AtomicU8,
    clock: AtomicI32,
    stop: AtomicBool,
    wake: c_int,
    done: Mutex<Option<mpsc::Receiver<()>>>,
    targets: Mutex<Vec<Arc<Target>>>,
}

// SAFETY: the raw pointers are libwayland objects, used under libwayland's own locking
// (requests from any thread; events of our queue read and dispatched by our thread only) and
// destroyed once, at teardown, after our thread has stopped.
unsafe impl Send for Conn {}
// SAFETY: as above.
unsafe impl Sync for Conn {}

impl Conn {
    pub fn state(&self) -> State {
        State::from_u8(self.state.load(Ordering::Acquire))
    }

    fn set_state(&self, s: State) {
        self.state.store(s as u8, Ordering::Release);
    }

    /// The target of `feed` on this connection (one per feed, made on first use).
    pub fn target(self: &Arc<Self>, feed: &Arc<DisplayFeed>) -> Arc<Target> {
        let mut targets = self.targets.lock();
        if let Some(t) = targets.iter().find(|t| Arc::ptr_eq(&t.feed, feed)) {
            return t.clone();
        }
        let t = Arc::new(Target {
            conn: self.clone(),
            feed: feed.clone(),
            slots: std::array::from_fn(|_| Slot {
                proxy: AtomicPtr::new(ptr::null_mut()),
                frame: AtomicU64::new(0),
            }),
            next: AtomicUsize::new(0),
            announced: AtomicBool::new(false),
            skipped: AtomicU64::new(0),
        });
        targets.push(t.clone());
        t
    }

    /// Stops the thread and destroys framescope's objects; on the app's thread, while the
    /// display is alive.
    fn teardown(&self) {
        let was = self.state();
        self.set_state(State::Stopped);
        self.stop.store(true, Ordering::Release);
        let one: u64 = 1;
        // SAFETY: our eventfd; writes 8 bytes from the stack.
        unsafe { libc::write(self.wake, (&one as *const u64).cast(), 8) };
        let stopped = match self.done.lock().take() {
            // Sent at its end, or dropped unsent: either way it is out of libwayland.
            Some(rx) => !matches!(rx.recv_timeout(STOP_WAIT), Err(mpsc::RecvTimeoutError::Timeout)),
            None => true,
        };
        if !stopped {
            // Its objects stay (their memory, not their events: the queue is never read again).
            framescope_core::log::error(format_args!(
                "Wayland presentation: framescope's thread did not stop within {STOP_WAIT:?}; its objects are left as they are"
            ));
            return;
        }
        let wl = self.wl;
        let targets = std::mem::take(&mut *self.targets.lock());
        for t in &targets {
            for s in &t.slots {
                let p = s.proxy.swap(ptr::null_mut(), Ordering::AcqRel);
                if !p.is_null() && p != CLAIMED {
                    // SAFETY: a feedback proxy of ours that no event destroyed.
                    unsafe { (wl.proxy_destroy)(p) };
                }
            }
        }
        // SAFETY: each is ours, destroyed once (swapped out); the thread that dispatched
        // their events has stopped.
        unsafe {
            let p = self.sync.swap(ptr::null_mut(), Ordering::AcqRel);
            if !p.is_null() {
                (wl.proxy_destroy)(p);
            }
            let p = self.presentation.swap(ptr::null_mut(), Ordering::AcqRel);
            if !p.is_null() {
                (wl.proxy_marshal_array_flags)(
                    p,
                    op::PRESENTATION_DESTROY,
                    ptr::null(),
                    1,
                    MARSHAL_DESTROY,
                    ptr::null_mut(),
                );
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
        if was == State::Ready {
            let skipped: u64 = targets.iter().map(|t| t.skipped.load(Ordering::Relaxed)).sum();
            if skipped > 0 {
                framescope_core::log::info(format_args!(
                    "Wayland presentation: {skipped} frames went without feedback (more than {SLOTS} unanswered)"
                ));
            }
        }
    }
}

/// Connections by display, with how many users (surfaces) each has.
static CONNS: Mutex<Vec<(usize, Arc<Conn>, usize)>> = Mutex::new(Vec::new());

/// The connection on `display`, made (and its thread started) on first use; each call needs
/// one [`detach`].
///
/// # Safety
/// `display` is the app's live `wl_display`, alive until the matching [`detach`] returns.
pub unsafe fn attach(display: *mut c_void) -> Result<Arc<Conn>, String> {
    if display.is_null() {
        return Err("no wl_display".into());
    }
    let mut conns = CONNS.lock();
    if let Some(e) = conns.iter_mut().find(|e| e.0 == display as usize) {
        e.2 += 1;
        return Ok(e.1.clone());
    }
    let wl = Wl::get()?;
    // SAFETY: the caller's: a live display.
    let conn = unsafe { connect(wl, display) }?;
    conns.push((display as usize, conn.clone(), 1));
    Ok(conn)
}

/// Drops one use of `display`'s connection; the last tears it down (on the calling thread,
/// which must be before the display is disconnected).
pub fn detach(display: *mut c_void) {
    let conn = {
        let mut conns = CONNS.lock();
        let Some(i) = conns.iter().position(|e| e.0 == display as usize) else {
            return;
        };
        conns[i].2 -= 1;
        if conns[i].2 > 0 {
            return;
        }
        conns.swap_remove(i).1
    };
    conn.teardown();
}

/// Tears `display`'s connection down whatever its users (the app is disconnecting it: the
/// GL shim's `wl_display_disconnect`); their targets stop asking for feedback.
pub fn close_display(display: *mut c_void) {
    let conn = {
        let mut conns = CONNS.lock();
        let Some(i) = conns.iter().position(|e| e.0 == display as usize) else {
            return;
        };
        conns.swap_remove(i).1
    };
    conn.teardown();
}

/// Whether `native` is a `wl_display*` of the process's libwayland (EGL's native display of
/// `eglGetDisplay` may be one, an X11 `Display*`, a `gbm_device*`, or the default).
///
/// # Safety
/// `native` is null or points to at least one readable pointer-sized word.
pub unsafe fn is_wl_display(native: *mut c_void) -> bool {
    if native.is_null() || !(native as usize).is_multiple_of(std::mem::align_of::<usize>()) {
        return false;
    }
    let Ok(wl) = Wl::get() else { return false };
    // Only a mapped page is read (Mesa's EGL checks with mincore too: an app may pass anything).
    // SAFETY: sysconf and mincore only read the address space; `vec` is one byte on our stack.
    let mapped = unsafe {
        let page = libc::sysconf(libc::_SC_PAGESIZE).max(4096) as usize;
        let mut vec = 0u8;
        libc::mincore(((native as usize) & !(page - 1)) as *mut c_void, page, &mut vec) == 0
    };
    // SAFETY: the caller's: one readable word, on a mapped page.
    mapped && unsafe { *(native as *const *const c_void) == wl.display_interface as *const c_void }
}

/// # Safety
/// `display` is a live `wl_display` of `wl`'s library.
unsafe fn connect(wl: &'static Wl, display: *mut c_void) -> Result<Arc<Conn>, String> {
    // SAFETY (this block): libwayland calls on the app's live display and on the objects made
    // from it here; each is checked before use.
    unsafe {
        let PrivateQueue { queue, wrapper, wake } = private_queue(wl, display)?;
        let (tx, rx) = mpsc::sync_channel(1);
        let conn = Arc::new(Conn {
            wl,
            display,
            queue,
            wrapper,
            registry: AtomicPtr::new(ptr::null_mut()),
            sync: AtomicPtr::new(ptr::null_mut()),
            presentation: AtomicPtr::new(ptr::null_mut()),
            state: AtomicU8::new(State::Starting as u8),
            clock: AtomicI32::new(-1),
            stop: AtomicBool::new(false),
            wake,
            done: Mutex::new(Some(rx)),
            targets: Mutex::new(Vec::new()),
        });
        let implementation = Arc::as_ptr(&conn) as *const c_void;
        // get_registry(new_id wl_registry) and sync(new_id wl_callback) through the wrapper:
        // both new objects are on our queue. The sync's `done` comes after every `global`.
        let mut arg = [WlArgument { o: ptr::null_mut() }];
        let registry = (wl.proxy_marshal_array_flags)(
            wrapper,
            op::DISPLAY_GET_REGISTRY,
            wl.registry_interface,
            1,
            0,
            arg.as_mut_ptr(),
        );
        if !registry.is_null() {
            (wl.proxy_add_dispatcher)(registry, registry_event, implementation, ptr::null_mut());
            conn.registry.store(registry, Ordering::Release);
        }
        let mut arg = [WlArgument { o: ptr::null_mut() }];
        let sync =
            (wl.proxy_marshal_array_flags)(wrapper, op::DISPLAY_SYNC, wl.callback_interface, 1, 0, arg.as_mut_ptr());
        if !sync.is_null() {
            (wl.proxy_add_dispatcher)(sync, callback_event, implementation, ptr::null_mut());
            conn.sync.store(sync, Ordering::Release);
        }
        if registry.is_null() || sync.is_null() {
            conn.teardown_unstarted();
            return Err("cannot create a registry on framescope's queue".into());
        }
        let c = conn.clone();
        let spawned = std::thread::Builder::new().name("framescope-wl".into()).spawn(move || {
            guarded(&THREAD, || run(&c));
            c.set_state(State::Stopped);
            let _ = tx.send(());
        });
        if let Err(e) = spawned {
            conn.teardown_unstarted();
            return Err(format!("cannot start a thread: {e}"));
        }
        Ok(conn)
    }
}

impl Conn {
    fn teardown_unstarted(&self) {
        *self.done.lock() = None;
        self.teardown();
    }
}

/// framescope's thread: dispatch our queue until teardown stops it ([`super::wayland_sys::run_queue`]).
fn run(c: &Conn) {
    // SAFETY: the app's display, alive until teardown, which waits for this thread to end
    // before the display may go; our queue, dispatched here only.
    if let Err(why) = unsafe { run_queue(c.wl, c.display, c.queue, c.wake, &c.stop, POLL_MS) } {
        lost(c, why);
    }
}

fn lost(c: &Conn, why: &str) {
    c.set_state(State::Stopped);
    framescope_core::log::error(format_args!("Wayland presentation: {why}; no more display times"));
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
        if opcode != op::REGISTRY_GLOBAL || !c.presentation.load(Ordering::Acquire).is_null() {
            return;
        }
        // SAFETY: global(name: uint, interface: string, version: uint).
        let (name, iface, version) = unsafe { (arg(args, 0).u, arg(args, 1).s, arg(args, 2).u) };
        // SAFETY: libwayland's NUL-terminated string for the event.
        if iface.is_null() || unsafe { CStr::from_ptr(iface) } != c"wp_presentation" {
            return;
        }
        let wl = c.wl;
        // bind(name, interface name, version, new_id): version 1 is all we use.
        let mut a = [
            WlArgument { u: name },
            WlArgument {
                s: c"wp_presentation".as_ptr(),
            },
            WlArgument { u: version.min(1) },
            WlArgument { o: ptr::null_mut() },
        ];
        // SAFETY: bind on our registry with wl_registry.bind's arguments; the new proxy is on
        // our queue and gets its dispatcher before we dispatch again.
        unsafe {
            let p = (wl.proxy_marshal_array_flags)(
                registry,
                op::REGISTRY_BIND,
                wl.presentation_interface,
                version.min(1),
                0,
                a.as_mut_ptr(),
            );
            if !p.is_null() {
                (wl.proxy_add_dispatcher)(p, presentation_event, implementation, ptr::null_mut());
                c.presentation.store(p, Ordering::Release);
            }
        }
    });
    0
}

unsafe extern "C" fn callback_event(
    implementation: *const c_void,
    callback: *mut c_void,
    opcode: u32,
    _msg: *const WlMessage,
    _args: *mut WlArgument,
) -> c_int {
    guarded(&EVENT, || {
        // SAFETY: as in `registry_event`.
        let c = unsafe { &*(implementation as *const Conn) };
        if opcode != op::CALLBACK_DONE {
            return;
        }
        if c.sync.swap(ptr::null_mut(), Ordering::AcqRel) == callback {
            // SAFETY: our callback; `done` is its last event (wayland.xml: destructor).
            unsafe { (c.wl.proxy_destroy)(callback) };
        }
        if c.presentation.load(Ordering::Acquire).is_null() {
            c.set_state(State::NoPresentation);
            framescope_core::log::info(format_args!(
                "Wayland presentation: the compositor has no wp_presentation; no display times"
            ));
        }
    });
    0
}

unsafe extern "C" fn presentation_event(
    implementation: *const c_void,
    _presentation: *mut c_void,
    opcode: u32,
    _msg: *const WlMessage,
    args: *mut WlArgument,
) -> c_int {
    guarded(&EVENT, || {
        // SAFETY: as in `registry_event`.
        let c = unsafe { &*(implementation as *const Conn) };
        if opcode != op::PRESENTATION_CLOCK_ID {
            return;
        }
        // SAFETY: clock_id(clk_id: uint).
        let clock = unsafe { arg(args, 0).u } as libc::clockid_t;
        c.clock.store(clock, Ordering::Release);
        if offset_to_monotonic(clock).is_some() {
            c.set_state(State::Ready);
            if clock == libc::CLOCK_MONOTONIC {
                framescope_core::log::info(format_args!(
                    "Wayland presentation: feedback on (the compositor's clock is CLOCK_MONOTONIC)"
                ));
            } else {
                framescope_core::log::info(format_args!(
                    "Wayland presentation: feedback on (the compositor's clock is {clock}, converted to CLOCK_MONOTONIC)"
                ));
            }
        } else {
            c.set_state(State::UnknownClock);
            framescope_core::log::info(format_args!(
                "Wayland presentation: the compositor's clock {clock} cannot be read here; no display times"
            ));
        }
    });
    0
}

unsafe extern "C" fn feedback_event(
    implementation: *const c_void,
    feedback: *mut c_void,
    opcode: u32,
    _msg: *const WlMessage,
    args: *mut WlArgument,
) -> c_int {
    guarded(&EVENT, || {
        // SAFETY: the Target this proxy was made for; alive until teardown destroyed the proxy.
        let t = unsafe { &*(implementation as *const Target) };
        let wl = t.conn.wl;
        // SAFETY: the user data we set: the slot's index.
        let i = unsafe { (wl.proxy_get_user_data)(feedback) } as usize;
        let Some(slot) = t.slots.get(i) else { return };
        let frame = slot.frame.load(Ordering::Relaxed);
        let report = match opcode {
            op::FEEDBACK_PRESENTED => {
                // SAFETY: presented's seven uint arguments.
                let a: [u32; 7] = std::array::from_fn(|k| unsafe { arg(args, k).u });
                let clock = t.conn.clock.load(Ordering::Acquire);
                let Some(offset) = offset_to_monotonic(clock) else {
                    return;
                };
                presented_report(frame, a, offset)
            }
            op::FEEDBACK_DISCARDED => discarded_report(frame),
            // sync_output: which output; not needed.
            _ => return,
        };
        t.feed.report(report);
        // The feedback's last event (presentation-time.xml): the proxy goes, then the slot.
        // SAFETY: our proxy, destroyed once: the slot no longer names it.
        if slot
            .proxy
            .compare_exchange(feedback, ptr::null_mut(), Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
        {
            unsafe { (wl.proxy_destroy)(feedback) };
        }
    });
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presented_time_joins_the_seconds_halves() {
        assert_eq!(presented_ns(0, 5, 7), 5_000_000_007);
        assert_eq!(presented_ns(1, 0, 0), (1u64 << 32) * 1_000_000_000);
    }

    #[test]
    fn presented_reports_time_mode_and_refresh_on_the_monotonic_clock() {
        let r = presented_report(9, [0, 2, 500, 16_666_666, 0, 120, 0x1 | 0x2], -1_000);
        assert_eq!(r.frame, 9);
        assert_eq!(r.source, DisplaySource::WaylandPresentation);
        assert_eq!(r.shown_ns, Some(2_000_000_500 - 1_000));
        assert_eq!(r.mode, PresentationMode::Composited);
        assert_eq!(r.refresh_ns, Some(16_666_666));
        let r = presented_report(10, [0, 2, 0, 0, 0, 0, KIND_ZERO_COPY], 0);
        assert_eq!((r.mode, r.refresh_ns), (PresentationMode::Flip, None));
        let r = discarded_report(11);
        assert_eq!((r.frame, r.shown_ns), (11, None));
    }

    #[test]
    fn the_raw_clock_converts_within_a_millisecond_and_monotonic_is_itself() {
        assert_eq!(offset_to_monotonic(libc::CLOCK_MONOTONIC), Some(0));
        let o = offset_to_monotonic(libc::CLOCK_MONOTONIC_RAW).expect("CLOCK_MONOTONIC_RAW");
        // A raw read converted lies inside a monotonic bracket around it (give or take 1 ms);
        // the tightest of a few brackets, so that a preemption inside one does not count.
        let error = (0..5)
            .map(|_| {
                let a = clock_ns(libc::CLOCK_MONOTONIC).unwrap();
                let raw = clock_ns(libc::CLOCK_MONOTONIC_RAW).unwrap() + o;
                let b = clock_ns(libc::CLOCK_MONOTONIC).unwrap();
                (a - raw).max(raw - b).max(0)
            })
            .min()
            .unwrap();
        assert!(error < 1_000_000, "offset {o}: {error} ns outside the bracket");
        assert_eq!(offset_to_monotonic(12345), None);
    }

    #[test]
    fn discarded_answers_before_an_earlier_frames_presented_join_to_their_frames() {
        use framescope_core::display::join::DisplayJoin;
        use framescope_core::display::DisplayState;
        use framescope_core::frame::FrameRecord;
        const MS: u64 = 1_000_000;
        let feed = Arc::new(DisplayFeed::default());
        feed.set_source(DisplaySource::WaylandPresentation);
        let mut j = DisplayJoin::new(feed.clone());
        let mut frames: Vec<FrameRecord> = (0..5)
            .map(|i| FrameRecord {
                frame: i,
                t_ns: i * 2 * MS,
                ..FrameRecord::default()
            })
            .collect();
        let at = |ms: u64| [0, 0, (ms * MS) as u32, 16_666_666, 0, 0, 0];
        feed.report(presented_report(0, at(25), 0));
        feed.report(discarded_report(2));
        feed.report(discarded_report(3));
        j.poll();
        assert!(j.holds(&frames[0], 9 * MS), "frame 0 waits for the next shown frame");
        assert!(j.holds(&frames[1], 9 * MS), "frame 1 waits for its own answer");
        feed.report(presented_report(1, at(50), 0));
        feed.report(presented_report(4, at(75), 0));
        j.poll();
        for f in &mut frames {
            j.apply(f);
        }
        let states: Vec<_> = frames.iter().map(|f| f.display.state).collect();
        use DisplayState::{Displayed, Dropped};
        assert_eq!(states, [Displayed, Displayed, Dropped, Dropped, Displayed]);
        assert_eq!(frames[0].display.displayed_ns, Some(25 * MS));
        assert_eq!(frames[1].display.displayed_ns, Some(25 * MS));
    }

    #[test]
    fn only_a_wl_display_is_taken_for_one() {
        let word = 0x1234usize;
        // SAFETY: null, and a readable word on our stack.
        unsafe {
            assert!(!is_wl_display(ptr::null_mut()));
            assert!(!is_wl_display((&word as *const usize).cast_mut().cast()));
        }
    }

    #[test]
    fn no_display_is_no_connection() {
        // SAFETY: null is refused before anything is read.
        assert!(unsafe { attach(ptr::null_mut()) }.is_err());
        detach(ptr::null_mut());
    }
}
