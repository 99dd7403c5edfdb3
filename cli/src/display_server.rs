//! Whether the window systems the environment names answer: one round trip each on a socket
//! of our own, bounded by a timeout, so `doctor` can tell an app will find its compositor or X
//! server, and flag one that accepts connections but never replies (a frozen compositor hangs
//! the apps that wait for it).
//!
//! Wayland: `wl_display.sync` (object 1, opcode 0, a new callback id 2), answered by the
//! callback's `done` event (the protocol's `wayland.xml`). X11: the connection setup request
//! (byte order, protocol 11.0, no authorisation), answered by any setup reply — success,
//! failure or "authenticate" all show a server that answers.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How long a server has to answer.
pub const TIMEOUT: Duration = Duration::from_secs(1);

#[derive(Debug, PartialEq, Eq)]
pub enum Answer {
    /// It answered the round trip.
    Answers,
    /// It accepted the connection but said nothing within [`TIMEOUT`].
    Silent,
    /// No connection: the socket is missing or refuses (with the error).
    Unreachable(String),
    /// It answered with something that is not this protocol.
    Garbled,
}

/// The Wayland socket `WAYLAND_DISPLAY` names: an absolute path, or a name in
/// `XDG_RUNTIME_DIR` (as libwayland-client resolves it).
pub fn wayland_socket(display: &str, runtime_dir: Option<&str>) -> Option<PathBuf> {
    if display.starts_with('/') {
        return Some(PathBuf::from(display));
    }
    Some(Path::new(runtime_dir?).join(display))
}

/// The X server's local socket for `DISPLAY` (`:N`, `:N.S`, `unix:N`); `None` for a display
/// on another host (TCP), which is not probed.
pub fn x11_socket(display: &str) -> Option<PathBuf> {
    let rest = display.strip_prefix("unix").unwrap_or(display);
    let number = rest.strip_prefix(':')?;
    let number = number.split('.').next()?;
    number.parse::<u32>().ok()?;
    Some(PathBuf::from(format!("/tmp/.X11-unix/X{number}")))
}

fn connect(path: &Path) -> Result<UnixStream, Answer> {
    let s = UnixStream::connect(path).map_err(|e| Answer::Unreachable(e.to_string()))?;
    s.set_read_timeout(Some(TIMEOUT))
        .and_then(|()| s.set_write_timeout(Some(TIMEOUT)))
        .map_err(|e| Answer::Unreachable(e.to_string()))?;
    Ok(s)
}

fn timed_out(e: &std::io::Error) -> bool {
    matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut)
}

/// One `wl_display.sync` round trip on `path`.
pub fn probe_wayland(path: &Path) -> Answer {
    let mut s = match connect(path) {
        Ok(s) => s,
        Err(a) => return a,
    };
    // Header: sender id, then (size << 16) | opcode; then the new callback's id.
    let mut req = Vec::with_capacity(12);
    req.extend_from_slice(&1u32.to_ne_bytes());
    // Opcode 0 (`sync`) in the low half.
    req.extend_from_slice(&(12u32 << 16).to_ne_bytes());
    req.extend_from_slice(&2u32.to_ne_bytes());
    if let Err(e) = s.write_all(&req) {
        return Answer::Unreachable(e.to_string());
    }
    // Events until the callback's `done` (object 2, opcode 0); `wl_display.delete_id` may
    // come first. At most a few events: bounded reads.
    for _ in 0..8 {
        let mut head = [0u8; 8];
        match s.read_exact(&mut head) {
            Ok(()) => {}
            Err(e) if timed_out(&e) => return Answer::Silent,
            Err(_) => return Answer::Garbled,
        }
        let object = u32::from_ne_bytes([head[0], head[1], head[2], head[3]]);
        let word = u32::from_ne_bytes([head[4], head[5], head[6], head[7]]);
        let (size, opcode) = ((word >> 16) as usize, word & 0xffff);
        if !(8..=4096).contains(&size) {
            return Answer::Garbled;
        }
        let mut body = vec![0u8; size - 8];
        match s.read_exact(&mut body) {
            Ok(()) => {}
            Err(e) if timed_out(&e) => return Answer::Silent,
            Err(_) => return Answer::Garbled,
        }
        if object == 2 && opcode == 0 {
            return Answer::Answers;
        }
    }
    Answer::Garbled
}

/// The X11 connection setup on `path`.
pub fn probe_x11(path: &Path) -> Answer {
    let mut s = match connect(path) {
        Ok(s) => s,
        Err(a) => return a,
    };
    // Byte order ('l': little endian, as the numbers below are written), unused, protocol
    // major 11, minor 0, authorisation name and data lengths 0, unused.
    let req = [b'l', 0, 11, 0, 0, 0, 0, 0, 0, 0, 0, 0];
    if let Err(e) = s.write_all(&req) {
        return Answer::Unreachable(e.to_string());
    }
    let mut head = [0u8; 8];
    match s.read_exact(&mut head) {
        // 0 failed, 1 success, 2 authenticate; then the protocol version for 0 and 1.
        Ok(()) if head[0] <= 2 => Answer::Answers,
        Ok(()) => Answer::Garbled,
        Err(e) if timed_out(&e) => Answer::Silent,
        Err(_) => Answer::Garbled,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::net::UnixListener;

    fn socket(name: &str) -> (tempdir::Dir, PathBuf) {
        let d = tempdir::Dir::new(name);
        let p = d.0.join("sock");
        (d, p)
    }

    /// A scratch directory removed on drop (no crate needed for two tests).
    mod tempdir {
        pub struct Dir(pub std::path::PathBuf);
        impl Dir {
            pub fn new(name: &str) -> Dir {
                let p = std::env::temp_dir().join(format!("fs-display-{name}-{}", std::process::id()));
                let _ = std::fs::remove_dir_all(&p);
                std::fs::create_dir_all(&p).unwrap();
                Dir(p)
            }
        }
        impl Drop for Dir {
            fn drop(&mut self) {
                let _ = std::fs::remove_dir_all(&self.0);
            }
        }
    }

    #[test]
    fn names_resolve_as_the_client_libraries_do() {
        assert_eq!(
            wayland_socket("wayland-1", Some("/run/user/7")),
            Some("/run/user/7/wayland-1".into())
        );
        assert_eq!(wayland_socket("/tmp/w", None), Some("/tmp/w".into()));
        assert_eq!(wayland_socket("wayland-1", None), None);
        assert_eq!(x11_socket(":0"), Some("/tmp/.X11-unix/X0".into()));
        assert_eq!(x11_socket(":12.1"), Some("/tmp/.X11-unix/X12".into()));
        assert_eq!(x11_socket("unix:3"), Some("/tmp/.X11-unix/X3".into()));
        assert_eq!(x11_socket("host:0"), None);
        assert_eq!(x11_socket(":x"), None);
    }

    /// A compositor that answers the sync (after a `delete_id`), one that accepts and stays
    /// silent (a frozen one), and none at all.
    #[test]
    fn a_silent_server_is_told_from_an_answering_one_within_the_timeout() {
        let (_d, path) = socket("wl");
        let l = UnixListener::bind(&path).unwrap();
        let server = std::thread::spawn(move || {
            let (mut c, _) = l.accept().unwrap();
            let mut req = [0u8; 12];
            c.read_exact(&mut req).unwrap();
            let mut ev = Vec::new();
            for (obj, op, arg) in [(1u32, 1u32, 2u32), (2, 0, 77)] {
                ev.extend_from_slice(&obj.to_ne_bytes());
                ev.extend_from_slice(&((12u32 << 16) | op).to_ne_bytes());
                ev.extend_from_slice(&arg.to_ne_bytes());
            }
            c.write_all(&ev).unwrap();
            // The second client: accepted, never answered.
            let (_silent, _) = l.accept().unwrap();
            std::thread::sleep(TIMEOUT * 3);
        });
        assert_eq!(probe_wayland(&path), Answer::Answers);
        let t = std::time::Instant::now();
        assert_eq!(probe_wayland(&path), Answer::Silent);
        assert!(t.elapsed() < TIMEOUT * 2, "{:?}", t.elapsed());
        assert!(matches!(
            probe_x11(&path.with_extension("none")),
            Answer::Unreachable(_)
        ));
        drop(server);
    }

    #[test]
    fn an_x_server_that_refuses_still_answers() {
        let (_d, path) = socket("x11");
        let l = UnixListener::bind(&path).unwrap();
        let server = std::thread::spawn(move || {
            let (mut c, _) = l.accept().unwrap();
            let mut req = [0u8; 12];
            c.read_exact(&mut req).unwrap();
            // Failed (0), reason length 0, protocol 11.0, no more data.
            c.write_all(&[0, 0, 11, 0, 0, 0, 0, 0]).unwrap();
        });
        assert_eq!(probe_x11(&path), Answer::Answers);
        server.join().unwrap();
    }
}
