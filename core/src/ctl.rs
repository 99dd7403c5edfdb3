//! The control socket: `framescope ctl PID start|stop|mark LABEL|status` reaches a running
//! app through a Unix socket at `$XDG_RUNTIME_DIR/framescope/PID.sock` while it dumps.
//!
//! Only the user reaches it: the directory is made with mode 0700 and used only when it is
//! a real directory (not a link) owned by us with no access for others, and every peer's
//! uid is checked (`SO_PEERCRED`, unix(7)). Nothing listens on the network. The socket is
//! served by a thread of framescope's own, one short request at a time with timeouts, so a
//! client that connects and says nothing delays other clients, never the app.
//!
//! Protocol: one request line, one JSON reply line (`{"ok":true,...}` or
//! `{"ok":false,"error":"..."}`).

use crate::capture;
use parking_lot::Mutex;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::os::unix::io::AsRawFd;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Longest request line.
const MAX_REQUEST: u64 = 1024;
/// How long one client may take to send its request or read the reply.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(1);
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
        crate::log::info(format_args!("no control socket (framescope ctl): {e}"));
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
            crate::alloc_count::mark_own_thread();
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

fn serve(listener: &UnixListener, stop: &AtomicBool) {
    while !stop.load(Ordering::Acquire) {
        match listener.accept() {
            Ok((s, _)) => {
                let _ = client(s);
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => std::thread::sleep(POLL),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => {
                crate::log::info(format_args!("control socket stopped: {e}"));
                return;
            }
        }
    }
}

fn client(s: UnixStream) -> std::io::Result<()> {
    s.set_nonblocking(false)?;
    s.set_read_timeout(Some(CLIENT_TIMEOUT))?;
    s.set_write_timeout(Some(CLIENT_TIMEOUT))?;
    // SAFETY: geteuid has no preconditions and cannot fail.
    let uid = unsafe { libc::geteuid() };
    let reply = if peer_uid(&s) != Some(uid) {
        error("another user's process may not control this one")
    } else {
        let mut line = String::new();
        match BufReader::new((&s).take(MAX_REQUEST)).read_line(&mut line) {
            Ok(_) if !line.trim().is_empty() => answer(line.trim_end_matches(['\n', '\r'])),
            Ok(_) => error("empty request"),
            Err(_) => error("the request is not one line of text (at most 1 KiB)"),
        }
    };
    let mut out = reply.to_string();
    out.push('\n');
    (&s).write_all(out.as_bytes())
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
            "t_ns": crate::clock::monotonic_now_ns(),
        }),
        _ => error("unknown request; one of: start, stop, mark LABEL, status"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_get_json_replies() {
        assert_eq!(answer("status")["ok"], true);
        assert_eq!(answer("bogus")["ok"], false);
        assert_eq!(answer("start now")["ok"], false);
        assert_eq!(answer("mark")["ok"], false, "a mark needs a label");
        let bad = answer("mark a\u{1b}[2J");
        assert!(bad["error"].as_str().unwrap().contains("printable"), "{bad}");
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
