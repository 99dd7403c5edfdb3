//! The X11 Present display-time source: when each frame presented to an X window reached the
//! screen, from the server's `PresentCompleteNotify`.
//!
//! Any client may watch another client's window, so framescope opens its own connection
//! (x11rb's pure-Rust one: the layers link no libxcb) on a thread of its own, selects
//! `CompleteNotify` on the app's windows and matches each completion to the frame it belongs
//! to ([`matcher`]). The app's threads only [`X11Present::presented`] ("frame F went to
//! window W at t"): a few atomic operations into a fixed ring ([`notes`]), never a round trip
//! to the server. Every wait of the thread has a deadline ([`stream`]): a stalled server
//! ends the source (one log line), never a frame.
//!
//! The thread starts at the first present, ends once no present came for [`IDLE`] (the next
//! present starts it again) or when its session dropped the source, and gives up, saying why
//! through the feed, when there is no X server or no Present extension (`no_window_system`,
//! `none_found`) or when a window is presented for a second without any event
//! (`software_present`: Mesa's software drivers on Xvfb put images with `PutImage`).
//!
//! Limits: the connection goes to `$DISPLAY`, so an app that opens another display by name is
//! watched on the wrong server (no window by that id there: `none_found`; another client's
//! window by chance: that window's times); a child forked while the thread runs inherits a source whose thread it
//! does not have, so its frames get no display times.

pub mod matcher;
pub mod notes;
pub mod stream;

use framescope_core::display::{DisplayFeed, DisplaySource, NoSourceReason};
use framescope_core::log;
use matcher::{Completion, Matcher, Mode};
use notes::{Note, NoteRing, Read};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::time::Duration;
use stream::TimedStream;
use x11rb::connection::{Connection, RequestConnection as _};
use x11rb::protocol::present::{self, CompleteKind, CompleteMode, ConnectionExt as _, EventMask};
use x11rb::protocol::Event;
use x11rb::rust_connection::{DefaultStream, RustConnection};

/// Without a new present for this long the thread closes its connection and ends.
pub const IDLE: Duration = Duration::from_secs(5);

/// A window not presented to for this long is forgotten (and its selection undone): apps
/// that open windows by the thousand (a lifecycle storm) must not grow the watcher.
const WINDOW_IDLE_NS: u64 = 10_000_000_000;

/// How long the thread sleeps between looks at the notes when no event comes.
const TICK_MS: i32 = 10;

const NONE: u8 = 0;
const RUNNING: u8 = 1;
/// Unavailable (no X server, no Present): said once, not retried.
const OFF: u8 = 2;

/// One frame session's X11 Present source.
pub struct X11Present {
    notes: NoteRing,
    feed: Arc<DisplayFeed>,
    state: AtomicU8,
}

impl X11Present {
    pub fn new(feed: Arc<DisplayFeed>) -> Arc<Self> {
        Arc::new(X11Present {
            notes: NoteRing::default(),
            feed,
            state: AtomicU8::new(NONE),
        })
    }

    /// From the app's present: frame `frame` goes to X window `window`, called at `t_ns`
    /// (before the real present). Never blocks; allocates only when it starts the thread
    /// (the first present, or the first after [`IDLE`]).
    pub fn presented(self: &Arc<Self>, window: u32, frame: u64, t_ns: u64) {
        if window == 0 {
            return;
        }
        self.notes.push(Note { window, frame, t_ns });
        if self.state.load(Ordering::Acquire) == NONE
            && self
                .state
                .compare_exchange(NONE, RUNNING, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
        {
            self.start();
        }
    }

    /// The feed it reports into.
    pub fn feed(&self) -> &Arc<DisplayFeed> {
        &self.feed
    }

    /// Whether the source gave up (said why through the feed).
    pub fn off(&self) -> bool {
        self.state.load(Ordering::Acquire) == OFF
    }

    fn start(self: &Arc<Self>) {
        if std::env::var_os("DISPLAY").is_none_or(|d| d.is_empty()) {
            self.give_up(NoSourceReason::NoWindowSystem, "no DISPLAY");
            return;
        }
        if let Err(why) = pin_this_library() {
            self.give_up(NoSourceReason::NoneFound, &why);
            return;
        }
        let me = Arc::clone(self);
        let spawned = std::thread::Builder::new()
            .name("framescope-x11present".into())
            .spawn(move || {
                framescope_core::alloc_count::mark_own_thread();
                // The watcher's logic must not unwind into the thread's start: a panic only
                // ends the source.
                let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| me.watch()));
                match r {
                    Ok(Ok(())) => me.state.store(NONE, Ordering::Release),
                    Ok(Err((why, text))) => me.give_up(why, &text),
                    Err(_) => me.give_up(NoSourceReason::NoneFound, "its thread panicked"),
                }
            });
        if let Err(e) = spawned {
            self.give_up(NoSourceReason::NoneFound, &format!("cannot start its thread: {e}"));
        }
    }

    fn give_up(&self, why: NoSourceReason, text: &str) {
        log::info(format_args!("X11 Present display times unavailable: {text}"));
        self.feed.set_none(why);
        self.state.store(OFF, Ordering::Release);
    }

    /// The thread: `Ok` when idle or its session ended, `Err` when it gives up.
    fn watch(self: &Arc<Self>) -> Result<(), (NoSourceReason, String)> {
        let conn = connect().map_err(|e| (NoSourceReason::NoWindowSystem, e))?;
        let lost = |e: &dyn std::fmt::Display| (NoSourceReason::NoneFound, format!("the X connection failed: {e}"));
        match conn.extension_information(present::X11_EXTENSION_NAME) {
            Ok(Some(_)) => {}
            Ok(None) => {
                return Err((
                    NoSourceReason::NoneFound,
                    "the X server has no Present extension".into(),
                ))
            }
            Err(e) => return Err(lost(&e)),
        }
        conn.present_query_version(1, 2)
            .map_err(|e| lost(&e))?
            .reply()
            .map_err(|e| lost(&e))?;
        let mut w = Watcher {
            conn,
            windows: Vec::new(),
            next_note: self.notes.written(),
            last_note_ns: framescope_core::clock::monotonic_now_ns(),
            completions: Vec::new(),
            software: false,
        };
        loop {
            let now = framescope_core::clock::monotonic_now_ns();
            // Notes first, then the events received so far, then the notes again: an event
            // is received after its present was noted, so its note is in by then.
            w.read_notes(self, now);
            w.read_events().map_err(|e| lost(&e))?;
            w.read_notes(self, now);
            w.match_events(&self.feed);
            w.check_software(&self.feed, now);
            if Arc::strong_count(self) == 1 {
                return Ok(());
            }
            if now.saturating_sub(w.last_note_ns) > IDLE.as_nanos() as u64 {
                return Ok(());
            }
            w.conn.stream().wait_readable(TICK_MS).map_err(|e| lost(&e))?;
        }
    }
}

/// One watched window.
struct Window {
    id: u32,
    /// Our `PresentSelectInput` event id.
    eid: u32,
    last_note_ns: u64,
    /// When our selection took effect; `None`: it could not be made (not a window).
    since_ns: Option<u64>,
    matcher: Matcher,
}

struct Watcher {
    conn: RustConnection<TimedStream>,
    windows: Vec<Window>,
    next_note: u64,
    last_note_ns: u64,
    /// Completions received and not yet matched (reused: no allocation in steady state).
    completions: Vec<(u32, Completion)>,
    /// `software_present` was said (and not yet taken back by an event).
    software: bool,
}

impl Watcher {
    fn read_notes(&mut self, src: &X11Present, now_ns: u64) {
        loop {
            match src.notes.read(&mut self.next_note) {
                Read::Note(n) => {
                    self.last_note_ns = now_ns;
                    let i = match self.windows.iter().position(|w| w.id == n.window) {
                        Some(i) => i,
                        None => self.subscribe(n.window, &src.feed, now_ns),
                    };
                    let w = &mut self.windows[i];
                    w.last_note_ns = now_ns;
                    // Presents requested before the selection took effect may produce no
                    // event for us: never candidates (see `matcher`).
                    if w.since_ns.is_some_and(|s| n.t_ns >= s) {
                        w.matcher.note(n.frame, n.t_ns);
                    }
                }
                Read::Lost(k) => {
                    log::debug(format_args!("X11 Present: {k} present notes overwritten unread"));
                }
                Read::Empty => break,
            }
        }
        for w in &mut self.windows {
            w.matcher.expire(now_ns);
        }
        let conn = &self.conn;
        self.windows.retain(|w| {
            let keep = now_ns.saturating_sub(w.last_note_ns) < WINDOW_IDLE_NS;
            if !keep && w.since_ns.is_some() {
                // No reply to wait for; a window already destroyed answers with an error
                // event, which the event loop skips.
                let _ = conn.present_select_input(w.eid, w.id, EventMask::NO_EVENT);
            }
            keep
        });
    }

    /// Selects `CompleteNotify` on `window`; its index in `windows`.
    fn subscribe(&mut self, window: u32, feed: &DisplayFeed, now_ns: u64) -> usize {
        let mut eid = 0;
        let selected = (|| -> Result<(), String> {
            eid = self.conn.generate_id().map_err(|e| e.to_string())?;
            self.conn
                .present_select_input(eid, window, EventMask::COMPLETE_NOTIFY)
                .map_err(|e| e.to_string())?
                .check()
                .map_err(|e| e.to_string())
        })();
        let since_ns = match selected {
            Ok(()) => {
                feed.set_source(DisplaySource::X11Present);
                log::debug(format_args!("X11 Present: watching window {window:#x}"));
                Some(framescope_core::clock::monotonic_now_ns())
            }
            Err(e) => {
                // Debug only: the window was destroyed before we got to it (apps that open
                // windows by the hundred), or the drawable is no window (a GLXWindow's XID):
                // its frames say `none_found`.
                log::debug(format_args!("X11 Present: cannot watch window {window:#x}: {e}"));
                None
            }
        };
        self.windows.push(Window {
            id: window,
            eid,
            last_note_ns: now_ns,
            since_ns,
            matcher: Matcher::default(),
        });
        self.windows.len() - 1
    }

    fn read_events(&mut self) -> Result<(), x11rb::errors::ConnectionError> {
        while let Some(e) = self.conn.poll_for_event()? {
            let Event::PresentCompleteNotify(c) = e else { continue };
            // NotifyMSC completions answer someone's PresentNotifyMSC, not a present.
            if c.kind != CompleteKind::PIXMAP {
                continue;
            }
            let mode = match c.mode {
                CompleteMode::FLIP => Mode::Flip,
                CompleteMode::SKIP => Mode::Skip,
                CompleteMode::SUBOPTIMAL_COPY => Mode::SuboptimalCopy,
                _ => Mode::Copy,
            };
            self.completions.push((
                c.window,
                Completion {
                    serial: c.serial,
                    ust_us: c.ust,
                    msc: c.msc,
                    mode,
                },
            ));
        }
        Ok(())
    }

    fn match_events(&mut self, feed: &DisplayFeed) {
        for (window, c) in self.completions.drain(..) {
            let Some(w) = self.windows.iter_mut().find(|w| w.id == window) else {
                continue;
            };
            if let Some(r) = w.matcher.complete(c) {
                feed.report(r);
            }
            if self.software {
                self.software = false;
                feed.set_source(DisplaySource::X11Present);
            }
        }
    }

    fn check_software(&mut self, feed: &DisplayFeed, now_ns: u64) {
        if self.software || self.windows.iter().any(|w| w.matcher.events() > 0) {
            return;
        }
        if self.windows.iter().any(|w| w.matcher.software_present(now_ns)) {
            log::info(format_args!(
                "X11 Present: no completion for the app's window after {} presents in 1 s: it is \
                 presented without Present (as Mesa's software drivers and NVIDIA's GLX on Xvfb \
                 do); no display times",
                matcher::SOFTWARE_MIN_NOTES
            ));
            feed.set_none(NoSourceReason::SoftwarePresent);
            self.software = true;
        }
    }
}

/// Our own connection, every wait bounded ([`stream`]).
fn connect() -> Result<RustConnection<TimedStream>, String> {
    use x11rb::reexports::x11rb_protocol::{parse_display, xauth};
    let parsed = parse_display::parse_display(None).map_err(|e| format!("bad DISPLAY: {e}"))?;
    let mut last = String::from("no address to connect to");
    for addr in parsed.connect_instruction() {
        match DefaultStream::connect(&addr) {
            Ok((stream, (family, address))) => {
                // Without usable authority data the server decides (as x11rb does).
                let (name, data) = xauth::get_auth(family, &address, parsed.display)
                    .ok()
                    .flatten()
                    .unwrap_or_default();
                return RustConnection::connect_to_stream_with_auth_info(
                    TimedStream(stream),
                    parsed.screen.into(),
                    name,
                    data,
                )
                .map_err(|e| format!("cannot open the X display: {e}"));
            }
            Err(e) => last = e.to_string(),
        }
    }
    Err(format!("cannot connect to the X display: {last}"))
}

/// The Vulkan loader unloads a layer at `vkDestroyInstance`; the watcher runs this library's
/// code (possibly waiting on the server, up to [`stream::TIMEOUT_MS`]), so the library stays
/// mapped for the life of the process (`RTLD_NODELETE`, dlopen(3)).
fn pin_this_library() -> Result<(), String> {
    let here = pin_this_library as *const std::ffi::c_void;
    // SAFETY: dladdr only reads the dynamic loader's tables into `info`, a valid out-pointer;
    // `dli_fname` is a NUL-terminated string it owns. dlopen with RTLD_NOLOAD takes a
    // reference to an object already loaded and loads nothing.
    unsafe {
        let mut info: libc::Dl_info = std::mem::zeroed();
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
