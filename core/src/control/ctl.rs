//! The control socket: `framescope ctl PID start|stop|mark LABEL|status` reaches a running
//! app through a Unix socket at `$XDG_RUNTIME_DIR/framescope/PID.sock` while it dumps.
//!
//! Only the user reaches it: the directory is made with mode 0700 and used only when it is
//! a real directory (not a link) owned by us with no access for others, and every peer's
//! uid is checked (`SO_PEERCRED`, unix(7)). Nothing listens on the network. The socket is
//! served by a thread of framescope's own that waits on every client at once (poll(2), at most
//! [`MAX_CLIENTS`], each with [`CLIENT_TIMEOUT`] to be done), so a client that connects and
//! says nothing delays no other client, and never the app.
//!
//! Protocol: one request line, one JSON reply line (`{"ok":true,...}` or
//! `{"ok":false,"error":"..."}`).

use crate::control::capture;
use parking_lot::Mutex;
use std::io::{ErrorKind, Read};
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::os::unix::io::AsRawFd;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Longest request line.
const MAX_REQUEST: usize = 1024;
/// How long one client may take, from its connection, to send its request and read the reply.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(1);
/// Clients served at once (each holds a descriptor and about 1 KiB).
const MAX_CLIENTS: usize = 16;
/// How often the thread looks for clients and for the end of the dump.
const POLL: Duration = Duration::from_millis(50);

/// The socket this process serves and its server's stop flag; taken at the end. Each server
/// has a flag of its own: with one flag for all, a dump started right after another ended
/// cleared it before the old server had seen it, and that server (its thread and listening
/// socket) lived on for good.
static SERVED: Mutex<Option<(PathBuf, Arc<AtomicBool>)>> = Mutex::new(None);

/// The directory of the sockets: `$XDG_RUNTIME_DIR/framescope`; `None` without an absolute
/// `XDG_RUNTIME_DIR`.
pub fn dir() -> Option<PathBuf> {
    let base = PathBuf::from(std::env::var_os("XDG_RUNTIME_DIR")?);
    base.is_absolute().then(|| base.join("framescope"))
}

/// The socket of process `pid`.
pub fn socket_path(pid: u32) -> Option<PathBuf> {
    Some(dir()?.join(format!("{pid}.sock")))
}

/// Whether `path` is a directory we own that no one else can enter (checked without
/// following a link).
pub fn dir_is_private(path: &std::path::Path) -> Result<(), String> {
    let m = std::fs::symlink_metadata(path).map_err(|e| format!("{}: {e}", path.display()))?;
    // SAFETY: geteuid has no preconditions and cannot fail.
    let uid = unsafe { libc::geteuid() };
    if !m.file_type().is_dir() {
        return Err(format!("{} is not a directory", path.display()));
    }
    if m.uid() != uid {
        return Err(format!(
            "{} belongs to uid {}, not to us ({uid})",
            path.display(),
            m.uid()
        ));
    }
    if m.mode() & 0o077 != 0 {
        return Err(format!(
            "{} is open to other users (mode {:o})",
            path.display(),
            m.mode() & 0o777
        ));
    }
    Ok(())
}

/// The uid of the process at the other end of `s`.
fn peer_uid(s: &UnixStream) -> Option<u32> {
    let mut cred = libc::ucred { pid: 0, uid: 0, gid: 0 };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: getsockopt writes at most `len` bytes into `cred`, a valid ucred on our stack;
    // the descriptor is the stream's own, open for this call.
    let rc = unsafe {
        libc::getsockopt(
            s.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&mut cred as *mut libc::ucred).cast(),
            &mut len,
        )
    };
    (rc == 0).then_some(cred.uid)
}

/// Starts serving this process's socket on a thread of its own. Never fails the app: what
/// stops it is said in one log line.
pub fn start() {
    if let Err(e) = try_start() {
        crate::runtime::log::info(format_args!("no control socket (framescope ctl): {e}"));
    }
}

fn try_start() -> Result<(), String> {
    let dir = dir().ok_or("XDG_RUNTIME_DIR is not set to an absolute path")?;
    match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(format!("{}: {e}", dir.display())),
    }
    dir_is_private(&dir)?;
    remove_stale(&dir);
    let path = dir.join(format!("{}.sock", std::process::id()));
    // A socket left by an earlier process with our pid (it did not end normally).
    if std::fs::symlink_metadata(&path).is_ok() {
        std::fs::remove_file(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    let listener = UnixListener::bind(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    listener.set_nonblocking(true).map_err(|e| e.to_string())?;
    let stop = Arc::new(AtomicBool::new(false));
    // A server still running (its dump not finished) is told to stop first.
    if let Some((old, old_stop)) = SERVED.lock().replace((path.clone(), stop.clone())) {
        old_stop.store(true, Ordering::Release);
        if old != path {
            let _ = std::fs::remove_file(old);
        }
    }
    let for_thread = stop.clone();
    std::thread::Builder::new()
        .name("framescope-ctl".into())
        .spawn(move || {
            crate::runtime::alloc_count::mark_own_thread();
            let _ = std::panic::catch_unwind(|| serve(&listener, &for_thread));
            remove_socket(&for_thread);
        })
        .map(drop)
        .map_err(|e| {
            remove_socket(&stop);
            format!("cannot start its thread: {e}")
        })
}

/// Entries of the socket directory looked at for stale sockets.
const MAX_STALE_SCAN: usize = 4096;

/// Removes the sockets of processes that no longer exist: an app ended by a signal never
/// removes its own. Only `PID.sock` sockets are touched, in the private directory; a socket
/// whose pid now belongs to another process stays (it answers nothing, and goes once that
/// process is gone too).
fn remove_stale(dir: &std::path::Path) {
    use std::os::unix::fs::FileTypeExt;
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for e in entries.flatten().take(MAX_STALE_SCAN) {
        let name = e.file_name();
        let pid = name
            .to_str()
            .and_then(|n| n.strip_suffix(".sock"))
            .filter(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|p| p.parse::<libc::pid_t>().ok());
        let Some(pid) = pid.filter(|&p| p > 0) else { continue };
        if process_exists(pid) || !e.file_type().is_ok_and(|t| t.is_socket()) {
            continue;
        }
        let _ = std::fs::remove_file(e.path());
    }
}

/// Whether a process `pid` exists (`kill(pid, 0)`: only `ESRCH` says it does not).
fn process_exists(pid: libc::pid_t) -> bool {
    // SAFETY: signal 0 sends nothing; it only checks the pid.
    let r = unsafe { libc::kill(pid, 0) };
    r == 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
}

/// Ends serving (the dump is finished): the socket file goes at once, the thread within
/// [`POLL`].
pub fn stop() {
    if let Some((p, stop)) = SERVED.lock().take() {
        stop.store(true, Ordering::Release);
        let _ = std::fs::remove_file(p);
    }
}

/// Removes the socket of the server with this stop flag, if it is still the one served.
fn remove_socket(stop: &Arc<AtomicBool>) {
    let mut served = SERVED.lock();
    if served.as_ref().is_some_and(|(_, s)| Arc::ptr_eq(s, stop)) {
        if let Some((p, _)) = served.take() {
            let _ = std::fs::remove_file(p);
        }
    }
}

/// One client being served: its request read into a fixed buffer, then its reply written, then
/// (after an over-long request) the rest of what it sends read and dropped until it closes, so
/// that it reads the reply instead of a reset.
struct Conn {
    s: UnixStream,
    buf: Box<[u8; MAX_REQUEST]>,
    len: usize,
    reply: Vec<u8>,
    sent: usize,
    phase: Phase,
    deadline: Instant,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Phase {
    Reading,
    Writing { then_drain: bool },
    Draining,
}

impl Conn {
    fn new(s: UnixStream, now: Instant) -> Conn {
        let mut c = Conn {
            s,
            buf: Box::new([0; MAX_REQUEST]),
            len: 0,
            reply: Vec::new(),
            sent: 0,
            phase: Phase::Reading,
            deadline: now + CLIENT_TIMEOUT,
        };
        // SAFETY: geteuid has no preconditions and cannot fail.
        let uid = unsafe { libc::geteuid() };
        if peer_uid(&c.s) != Some(uid) {
            c.reply_with(&error("another user's process may not control this one"), false);
        }
        c
    }

    fn reply_with(&mut self, v: &serde_json::Value, then_drain: bool) {
        self.reply = v.to_string().into_bytes();
        self.reply.push(b'\n');
        self.phase = Phase::Writing { then_drain };
    }

    /// The request read so far, once it is whole (a line, or everything before the client's
    /// end of writing).
    fn take_request(&mut self, eof: bool) {
        let line_end = self.buf[..self.len].iter().position(|&b| b == b'\n');
        let line = match line_end {
            Some(n) => &self.buf[..n],
            None if eof => &self.buf[..self.len],
            None if self.len == MAX_REQUEST => {
                self.reply_with(&error(TOO_LONG), true);
                return;
            }
            None => return,
        };
        let reply = match std::str::from_utf8(line) {
            Ok(l) if !l.trim().is_empty() => answer(l.trim_end_matches('\r')),
            Ok(_) => error("empty request"),
            Err(_) => error(TOO_LONG),
        };
        self.reply_with(&reply, false);
    }

    /// Does what the socket lets it do now; `false` once the connection is done with.
    fn step(&mut self) -> bool {
        loop {
            match self.phase {
                Phase::Reading => match (&self.s).read(&mut self.buf[self.len..]) {
                    Ok(0) => {
                        if self.len == 0 {
                            return false;
                        }
                        self.take_request(true);
                    }
                    Ok(n) => {
                        self.len += n;
                        self.take_request(false);
                    }
                    Err(e) if e.kind() == ErrorKind::Interrupted => {}
                    Err(e) => return e.kind() == ErrorKind::WouldBlock,
                },
                Phase::Writing { then_drain } => match send(&self.s, &self.reply[self.sent..]) {
                    Ok(n) => {
                        self.sent += n;
                        if self.sent == self.reply.len() {
                            if !then_drain {
                                return false;
                            }
                            let _ = self.s.shutdown(std::net::Shutdown::Write);
                            self.phase = Phase::Draining;
                        }
                    }
                    Err(e) if e.kind() == ErrorKind::Interrupted => {}
                    Err(e) => return e.kind() == ErrorKind::WouldBlock,
                },
                Phase::Draining => {
                    let mut sink = [0u8; 4096];
                    match (&self.s).read(&mut sink) {
                        Ok(0) => return false,
                        Ok(_) => {}
                        Err(e) if e.kind() == ErrorKind::Interrupted => {}
                        Err(e) => return e.kind() == ErrorKind::WouldBlock,
                    }
                }
            }
        }
    }

    fn events(&self) -> libc::c_short {
        match self.phase {
            Phase::Reading | Phase::Draining => libc::POLLIN,
            Phase::Writing { .. } => libc::POLLOUT,
        }
    }
}

/// Writes without SIGPIPE: the server runs in the app's process, whose disposition of SIGPIPE
/// is the app's (often the default, which ends the process when a client hangs up early).
fn send(s: &UnixStream, bytes: &[u8]) -> std::io::Result<usize> {
    // SAFETY: `bytes` is a valid buffer of `bytes.len()` bytes for the call; the descriptor is
    // the stream's own, open for the call.
    let n = unsafe { libc::send(s.as_raw_fd(), bytes.as_ptr().cast(), bytes.len(), libc::MSG_NOSIGNAL) };
    if n < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

const TOO_LONG: &str = "the request is not one line of text (at most 1 KiB)";

/// Serves clients on this one thread, several at once without blocking on any: every socket is
/// non-blocking and waited for with poll(2). Each client has [`CLIENT_TIMEOUT`] from its
/// connection to be done; at most [`MAX_CLIENTS`] are held, and a new one past that closes the
/// oldest, so idle connections can neither stall the others nor grow the thread's memory.
fn serve(listener: &UnixListener, stop: &AtomicBool) {
    let mut conns: Vec<Conn> = Vec::with_capacity(MAX_CLIENTS);
    let mut fds: Vec<libc::pollfd> = Vec::with_capacity(MAX_CLIENTS + 1);
    while !stop.load(Ordering::Acquire) {
        let now = Instant::now();
        conns.retain(|c| c.deadline > now);
        fds.clear();
        fds.push(libc::pollfd {
            fd: listener.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        });
        fds.extend(conns.iter().map(|c| libc::pollfd {
            fd: c.s.as_raw_fd(),
            events: c.events(),
            revents: 0,
        }));
        // Woken at least every POLL to see the stop flag, and at the nearest deadline.
        let wait = conns
            .iter()
            .map(|c| c.deadline.saturating_duration_since(now))
            .fold(POLL, Duration::min);
        // SAFETY: `fds` is a valid array of `fds.len()` pollfds for the duration of the call;
        // every descriptor in it belongs to the listener or to a stream in `conns`.
        let n = unsafe {
            libc::poll(
                fds.as_mut_ptr(),
                fds.len() as libc::nfds_t,
                wait.as_millis().clamp(1, 1000) as libc::c_int,
            )
        };
        if n < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == ErrorKind::Interrupted {
                continue;
            }
            crate::runtime::log::info(format_args!("control socket stopped: {e}"));
            return;
        }
        // The clients first (in `fds` order, before any is removed or added), then new ones.
        let mut ready = fds[1..].iter().map(|p| p.revents != 0);
        conns.retain_mut(|c| !ready.next().unwrap_or(false) || c.step());
        if fds[0].revents != 0 && !accept_all(listener, &mut conns) {
            return;
        }
    }
}

/// Accepts every waiting client; `false` when the listener failed for good.
fn accept_all(listener: &UnixListener, conns: &mut Vec<Conn>) -> bool {
    loop {
        match listener.accept() {
            Ok((s, _)) => {
                if s.set_nonblocking(true).is_err() {
                    continue;
                }
                if conns.len() >= MAX_CLIENTS {
                    // The oldest goes: a client that is served promptly never gets old.
                    conns.remove(0);
                }
                let mut c = Conn::new(s, Instant::now());
                if c.step() {
                    conns.push(c);
                }
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => return true,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) if e.raw_os_error() == Some(libc::EMFILE) || e.raw_os_error() == Some(libc::ENFILE) => {
                // Out of descriptors in the app's process: the waiting client stays queued
                // until one of ours closes.
                return true;
            }
            Err(e) => {
                crate::runtime::log::info(format_args!("control socket stopped: {e}"));
                return false;
            }
        }
    }
}

fn error(why: &str) -> serde_json::Value {
    serde_json::json!({"ok": false, "error": why})
}

/// The reply to one request.
pub fn answer(request: &str) -> serde_json::Value {
    let (cmd, arg) = request.split_once(' ').unwrap_or((request, ""));
    let done = |r: Result<u64, capture::Refused>| match r {
        Ok(t) => serde_json::json!({"ok": true, "t_ns": t, "capturing": capture::capturing()}),
        Err(e) => error(&e.to_string()),
    };
    match cmd {
        "start" if arg.is_empty() => done(capture::set(true)),
        "stop" if arg.is_empty() => done(capture::set(false)),
        "mark" => done(capture::mark(arg)),
        "status" if arg.is_empty() => serde_json::json!({
            "ok": true,
            "pid": std::process::id(),
            "capturing": capture::capturing(),
            "dump_ended": capture::ended(),
            "marks": capture::marks(),
            "t_ns": crate::runtime::clock::monotonic_now_ns(),
        }),
        _ => error("unknown request; one of: start, stop, mark LABEL, status"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn requests_get_json_replies() {
        assert_eq!(answer("status")["ok"], true);
        assert_eq!(answer("bogus")["ok"], false);
        assert_eq!(answer("start now")["ok"], false);
        assert_eq!(answer("mark")["ok"], false, "a mark needs a label");
        let bad = answer("mark a\u{1b}[2J");
        assert!(bad["error"].as_str().unwrap().contains("printable"), "{bad}");
    }

    /// A server on a socket of its own in a private temporary directory, stopped on drop.
    struct TestServer {
        path: PathBuf,
        stop: Arc<AtomicBool>,
        thread: Option<std::thread::JoinHandle<()>>,
    }

    impl TestServer {
        fn start(name: &str) -> TestServer {
            let d = std::env::temp_dir().join(format!("framescope-ctl-{name}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&d);
            std::fs::DirBuilder::new().mode(0o700).create(&d).unwrap();
            let path = d.join("1.sock");
            let listener = UnixListener::bind(&path).unwrap();
            listener.set_nonblocking(true).unwrap();
            let stop = Arc::new(AtomicBool::new(false));
            let s2 = stop.clone();
            let thread = std::thread::spawn(move || serve(&listener, &s2));
            TestServer {
                path,
                stop,
                thread: Some(thread),
            }
        }

        fn connect(&self) -> UnixStream {
            let s = UnixStream::connect(&self.path).unwrap();
            s.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
            s.set_write_timeout(Some(Duration::from_secs(3))).unwrap();
            s
        }
    }

    impl Drop for TestServer {
        fn drop(&mut self) {
            self.stop.store(true, Ordering::Release);
            if let Some(t) = self.thread.take() {
                let _ = t.join();
            }
            let _ = std::fs::remove_dir_all(self.path.parent().unwrap());
        }
    }

    fn reply_line(s: &UnixStream) -> std::io::Result<serde_json::Value> {
        use std::io::BufRead;
        let mut line = String::new();
        std::io::BufReader::new(s).read_line(&mut line)?;
        Ok(serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line:?}")))
    }

    #[test]
    fn idle_clients_do_not_delay_a_request() {
        let server = TestServer::start("idle");
        let idle: Vec<UnixStream> = (0..20).map(|_| server.connect()).collect();
        let t0 = Instant::now();
        let s = server.connect();
        (&s).write_all(b"status\n").unwrap();
        let v = reply_line(&s).expect("a reply despite 20 idle clients");
        assert_eq!(v["ok"], true, "{v}");
        assert!(t0.elapsed() < Duration::from_millis(500), "{:?}", t0.elapsed());
        // Several clients that speak at once are all answered.
        let many: Vec<UnixStream> = (0..8).map(|_| server.connect()).collect();
        for c in &many {
            (&*c).write_all(b"status\n").unwrap();
        }
        for c in &many {
            assert_eq!(reply_line(c).unwrap()["ok"], true);
        }
        drop(idle);
    }

    #[test]
    fn an_overlong_request_gets_the_error_line_not_a_reset() {
        let server = TestServer::start("long");
        let s = server.connect();
        // More than the socket buffers hold, so the client is still writing when the server
        // has its answer.
        let big = vec![b'x'; 1 << 20];
        (&s).write_all(&big).expect("the whole request is taken");
        (&s).write_all(b"\n").unwrap();
        s.shutdown(std::net::Shutdown::Write).unwrap();
        let v = reply_line(&s).expect("the error line");
        assert_eq!(v["ok"], false, "{v}");
        assert!(v["error"].as_str().unwrap().contains("at most 1 KiB"), "{v}");
    }

    #[test]
    fn sockets_of_processes_that_are_gone_are_removed() {
        let t = std::env::temp_dir().join(format!("framescope-ctl-stale-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&t);
        std::fs::DirBuilder::new().mode(0o700).create(&t).unwrap();
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead = child.id();
        child.wait().unwrap();
        // SAFETY: getppid cannot fail.
        let alive = unsafe { libc::getppid() };
        for name in [format!("{dead}.sock"), format!("{alive}.sock")] {
            drop(UnixListener::bind(t.join(name)).unwrap());
        }
        std::fs::write(t.join(format!("{}.txt", dead)), "not a socket").unwrap();
        std::fs::write(t.join("notes.sock"), "not ours").unwrap();
        remove_stale(&t);
        let mut left: Vec<String> = std::fs::read_dir(&t)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        left.sort();
        let mut want = vec![format!("{alive}.sock"), format!("{dead}.txt"), "notes.sock".to_string()];
        want.sort();
        assert_eq!(left, want);
        std::fs::remove_dir_all(&t).unwrap();
    }

    #[test]
    fn only_a_private_directory_of_ours_is_used() {
        let t = std::env::temp_dir().join(format!("framescope-ctl-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&t);
        std::fs::DirBuilder::new().mode(0o755).create(&t).unwrap();
        assert!(dir_is_private(&t).unwrap_err().contains("open to other users"));
        std::fs::remove_dir(&t).unwrap();
        std::fs::DirBuilder::new().mode(0o700).create(&t).unwrap();
        dir_is_private(&t).unwrap();
        let link = t.with_extension("link");
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(&t, &link).unwrap();
        assert!(dir_is_private(&link).unwrap_err().contains("not a directory"));
        std::fs::remove_file(&link).unwrap();
        std::fs::remove_dir(&t).unwrap();
    }
}
