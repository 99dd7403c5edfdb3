//! The `wp_presentation` source against a scripted compositor: the test plays the server end
//! of a socket pair in the Wayland wire format (wayland.xml, presentation-time.xml), with the
//! process's real libwayland-client on the other end, so the source's requests, its thread,
//! its dispatchers and its teardown run as they do inside an app; and then the compositor stops
//! reading, which no real compositor does on demand. The Wayland key reader's test
//! (`crate::input::wayland_keys`) plays a seat and a keyboard on the same server end.

use super::wayland_feedback::{attach, detach, State};
use super::wayland_sys::WlInterface;
use framescope_core::display::DisplayFeed;
use std::ffi::{c_int, c_void};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The client's end of the process's libwayland, loaded for the test (an app would have it).
pub(crate) struct Client {
    pub connect_to_fd: unsafe extern "C" fn(c_int) -> *mut c_void,
    pub disconnect: unsafe extern "C" fn(*mut c_void),
    pub proxy_create: unsafe extern "C" fn(*mut c_void, *const WlInterface) -> *mut c_void,
    pub proxy_get_id: unsafe extern "C" fn(*mut c_void) -> u32,
    pub surface_interface: *const WlInterface,
}

pub(crate) fn client() -> Client {
    // SAFETY: loading a system library by name; it stays loaded for the process.
    let h = unsafe { libc::dlopen(c"libwayland-client.so.0".as_ptr(), libc::RTLD_NOW | libc::RTLD_GLOBAL) };
    assert!(
        !h.is_null(),
        "libwayland-client.so.0 is not installed (Debian's libwayland-client0)"
    );
    let sym = |name: &std::ffi::CStr| {
        // SAFETY: a live handle and a NUL-terminated name.
        let p = unsafe { libc::dlsym(h, name.as_ptr()) };
        assert!(!p.is_null(), "{name:?}");
        p
    };
    // SAFETY: each symbol is libwayland-client's function of that name and prototype.
    unsafe {
        Client {
            connect_to_fd: std::mem::transmute::<*mut c_void, unsafe extern "C" fn(c_int) -> *mut c_void>(sym(
                c"wl_display_connect_to_fd",
            )),
            disconnect: std::mem::transmute::<*mut c_void, unsafe extern "C" fn(*mut c_void)>(sym(
                c"wl_display_disconnect",
            )),
            proxy_create: std::mem::transmute::<
                *mut c_void,
                unsafe extern "C" fn(*mut c_void, *const WlInterface) -> *mut c_void,
            >(sym(c"wl_proxy_create")),
            proxy_get_id: std::mem::transmute::<*mut c_void, unsafe extern "C" fn(*mut c_void) -> u32>(sym(
                c"wl_proxy_get_id",
            )),
            surface_interface: sym(c"wl_surface_interface") as *const WlInterface,
        }
    }
}

/// The compositor's end: one message at a time, each read bounded by a receive timeout.
pub(crate) struct Server {
    fd: OwnedFd,
}

pub(crate) struct Msg {
    pub object: u32,
    pub opcode: u16,
    pub words: Vec<u32>,
}

impl Server {
    fn read_exact(&self, buf: &mut [u8]) {
        let mut got = 0;
        while got < buf.len() {
            // SAFETY: reading into the rest of `buf`.
            let n = unsafe { libc::read(self.fd.as_raw_fd(), buf[got..].as_mut_ptr().cast(), buf.len() - got) };
            assert!(n > 0, "the client sent nothing within the timeout (read {n})");
            got += n as usize;
        }
    }

    pub fn read(&self) -> Msg {
        let mut head = [0u8; 8];
        self.read_exact(&mut head);
        let object = u32::from_ne_bytes(head[0..4].try_into().unwrap());
        let second = u32::from_ne_bytes(head[4..8].try_into().unwrap());
        let size = (second >> 16) as usize;
        let mut body = vec![0u8; size - 8];
        self.read_exact(&mut body);
        Msg {
            object,
            opcode: (second & 0xffff) as u16,
            words: body
                .chunks(4)
                .map(|c| u32::from_ne_bytes(c.try_into().unwrap()))
                .collect(),
        }
    }

    pub fn send(&self, object: u32, opcode: u16, words: &[u32]) {
        self.send_with_fd(object, opcode, words, None);
    }

    /// [`Server::send`] with a file descriptor for the message's `fd` argument (sent beside
    /// the bytes, as `SCM_RIGHTS`; the wire words leave it out).
    pub fn send_with_fd(&self, object: u32, opcode: u16, words: &[u32], fd: Option<c_int>) {
        let size = 8 + 4 * words.len();
        let mut out = Vec::with_capacity(size);
        out.extend(object.to_ne_bytes());
        out.extend((((size as u32) << 16) | u32::from(opcode)).to_ne_bytes());
        for w in words {
            out.extend(w.to_ne_bytes());
        }
        let mut iov = libc::iovec {
            iov_base: out.as_mut_ptr().cast(),
            iov_len: out.len(),
        };
        // Room for one descriptor's control message, aligned as cmsghdr needs.
        let mut control = [0u64; 4];
        // SAFETY: a msghdr over our buffers; CMSG_* compute within `control`, which holds one
        // control message with one int.
        let n = unsafe {
            let mut msg: libc::msghdr = std::mem::zeroed();
            msg.msg_iov = &mut iov;
            msg.msg_iovlen = 1;
            if let Some(fd) = fd {
                msg.msg_control = control.as_mut_ptr().cast();
                msg.msg_controllen = libc::CMSG_SPACE(std::mem::size_of::<c_int>() as u32) as usize;
                let c = libc::CMSG_FIRSTHDR(&msg);
                (*c).cmsg_level = libc::SOL_SOCKET;
                (*c).cmsg_type = libc::SCM_RIGHTS;
                (*c).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<c_int>() as u32) as usize;
                std::ptr::write_unaligned(libc::CMSG_DATA(c).cast::<c_int>(), fd);
            }
            libc::sendmsg(self.fd.as_raw_fd(), &msg, 0)
        };
        assert_eq!(n, out.len() as isize);
    }
}

/// A wire string: its length with the NUL, then the bytes padded to 4.
pub(crate) fn string(s: &str) -> Vec<u32> {
    let mut b = s.as_bytes().to_vec();
    b.push(0);
    let len = b.len() as u32;
    while !b.len().is_multiple_of(4) {
        b.push(0);
    }
    std::iter::once(len)
        .chain(b.chunks(4).map(|c| u32::from_ne_bytes(c.try_into().unwrap())))
        .collect()
}

pub(crate) fn wait_for(what: &str, mut ok: impl FnMut() -> bool) {
    let start = Instant::now();
    while !ok() {
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "{what} did not happen within 5 s"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// A client display on one end of a socket pair and the compositor's end, whose reads give up
/// after 5 s.
pub(crate) fn connect(c: &Client) -> (Server, *mut c_void) {
    let mut fds = [0; 2];
    // SAFETY: socketpair writes two descriptors into `fds`.
    assert_eq!(
        unsafe {
            libc::socketpair(
                libc::AF_UNIX,
                libc::SOCK_STREAM | libc::SOCK_CLOEXEC,
                0,
                fds.as_mut_ptr(),
            )
        },
        0
    );
    // SAFETY: the server's end, ours alone.
    let server = Server {
        fd: unsafe { OwnedFd::from_raw_fd(fds[1]) },
    };
    let timeout = libc::timeval { tv_sec: 5, tv_usec: 0 };
    // SAFETY: a timeval option on our socket.
    unsafe {
        libc::setsockopt(
            fds[1],
            libc::SOL_SOCKET,
            libc::SO_RCVTIMEO,
            (&timeout as *const libc::timeval).cast(),
            std::mem::size_of::<libc::timeval>() as u32,
        )
    };
    // SAFETY: the client's end, which libwayland owns from now on.
    let display = unsafe { (c.connect_to_fd)(fds[0]) };
    assert!(!display.is_null());
    (server, display)
}

#[test]
fn a_scripted_compositor_gets_the_requests_its_answers_become_reports_and_its_silence_holds_nobody() {
    let c = client();
    let (server, display) = connect(&c);
    // SAFETY: a live display, detached below before it is disconnected.
    let conn = unsafe { attach(display) }.expect("attach");
    let feed = Arc::new(DisplayFeed::default());
    let target = conn.target(&feed);

    // framescope's thread flushes get_registry and sync (wl_display, object 1).
    let m = server.read();
    assert_eq!((m.object, m.opcode), (1, 1), "get_registry");
    let registry = m.words[0];
    let m = server.read();
    assert_eq!((m.object, m.opcode), (1, 0), "sync");
    let callback = m.words[0];
    let mut global = vec![7];
    global.extend(string("wp_presentation"));
    global.push(1);
    server.send(registry, 0, &global);
    server.send(callback, 0, &[0]);
    // bind(name, interface, version, new_id).
    let m = server.read();
    assert_eq!((m.object, m.opcode), (registry, 0), "bind");
    assert_eq!(m.words[0], 7);
    assert_eq!(m.words[1..6], string("wp_presentation")[..]);
    assert_eq!(m.words[6], 1, "version 1");
    let presentation = m.words[7];
    assert_eq!(target.state(), State::Starting, "ready only once the clock is known");
    server.send(presentation, 0, &[libc::CLOCK_MONOTONIC as u32]);
    wait_for("the clock", || target.state() == State::Ready);

    // The app's surface: a client-side wl_surface object (no compositor knows it; the ids
    // are what the request carries).
    // SAFETY: a proxy of libwayland's wl_surface interface on the live display.
    let surface = unsafe { (c.proxy_create)(display, c.surface_interface) };
    assert!(!surface.is_null());
    // SAFETY: our surface proxy on the attached display.
    assert!(unsafe { target.before_commit(surface, 41) });
    let m = server.read();
    assert_eq!((m.object, m.opcode), (presentation, 1), "feedback");
    // SAFETY: a live proxy.
    assert_eq!(m.words[0], unsafe { (c.proxy_get_id)(surface) }, "the app's surface");
    let feedback = m.words[1];
    // presented: 5 s + 123 ns, refresh 16 666 666 ns, seq 9, flags vsync | zero_copy.
    server.send(feedback, 1, &[0, 5, 123, 16_666_666, 0, 9, 0x1 | 0x8]);
    // SAFETY: as above.
    assert!(unsafe { target.before_commit(surface, 42) });
    let m = server.read();
    assert_eq!((m.object, m.opcode), (presentation, 1), "feedback");
    // discarded.
    server.send(m.words[1], 2, &[]);
    wait_for("the reports", || {
        let l = feed.latest();
        (l.displayed, l.dropped) == (1, 1)
    });
    let mut got = Vec::new();
    feed.drain(|r| got.push(r));
    assert_eq!(got.len(), 2, "{got:?}");
    assert_eq!(
        (got[0].frame, got[0].shown_ns, got[0].refresh_ns),
        (41, Some(5_000_000_123), Some(16_666_666))
    );
    assert_eq!(got[0].mode, framescope_core::display::PresentationMode::Flip);
    assert_eq!((got[1].frame, got[1].shown_ns), (42, None));
    assert_eq!(
        feed.source(),
        Ok(framescope_core::display::DisplaySource::WaylandPresentation)
    );

    // The compositor stops reading and answering: requests on the app's thread still return
    // at once (they are buffered), and so does the teardown.
    for frame in 43..93 {
        let t = Instant::now();
        // SAFETY: as above.
        unsafe { target.before_commit(surface, frame) };
        assert!(
            t.elapsed() < Duration::from_millis(250),
            "a request took {:?}",
            t.elapsed()
        );
    }
    // framescope's thread sits in poll (100 ms timeout) on a silent socket; the eventfd wakes
    // it at once: 0.11-0.17 ms measured here. With the eventfd's write left out, the teardown
    // waited for the poll's timeout: 99-100 ms in each of 4 runs, and this failed.
    let t = Instant::now();
    detach(display);
    let took = t.elapsed();
    assert!(took < Duration::from_millis(50), "the teardown took {took:?}");
    assert_eq!(target.state(), State::Stopped);
    // SAFETY: as above; the target no longer asks.
    assert!(!unsafe { target.before_commit(surface, 93) });
    // SAFETY: the app's display, framescope's objects gone; the surface proxy goes with it.
    unsafe { (c.disconnect)(display) };
}
