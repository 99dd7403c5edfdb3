//! x11rb's socket stream with a deadline on every wait, so a stalled X server ends the
//! watcher's connection (an error) instead of blocking its thread for ever: x11rb's own
//! stream waits in `poll(2)` without a timeout, and a reply never sent would keep the thread,
//! and the layer's library pinned in memory, waiting.

use std::io::{self, IoSlice};
use std::os::fd::AsRawFd;
use x11rb::rust_connection::{DefaultStream, PollMode, Stream};
use x11rb::utils::RawFdContainer;

/// The longest a reply (or room to write) is waited for.
pub const TIMEOUT_MS: i32 = 2_000;

pub struct TimedStream(pub DefaultStream);

impl Stream for TimedStream {
    fn poll(&self, mode: PollMode) -> io::Result<()> {
        let mut events = 0;
        if mode.readable() {
            events |= libc::POLLIN;
        }
        if mode.writable() {
            events |= libc::POLLOUT;
        }
        let mut fd = libc::pollfd {
            fd: self.0.as_raw_fd(),
            events,
            revents: 0,
        };
        loop {
            // SAFETY: one valid pollfd for our own open socket, count 1.
            let n = unsafe { libc::poll(&mut fd, 1, TIMEOUT_MS) };
            match n {
                0 => {
                    return Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        "the X server did not answer in 2 s",
                    ))
                }
                n if n > 0 => return Ok(()),
                _ => {
                    let e = io::Error::last_os_error();
                    if e.kind() != io::ErrorKind::Interrupted {
                        return Err(e);
                    }
                }
            }
        }
    }

    fn read(&self, buf: &mut [u8], fd_storage: &mut Vec<RawFdContainer>) -> io::Result<usize> {
        self.0.read(buf, fd_storage)
    }

    fn write(&self, buf: &[u8], fds: &mut Vec<RawFdContainer>) -> io::Result<usize> {
        self.0.write(buf, fds)
    }

    fn write_vectored(&self, bufs: &[IoSlice<'_>], fds: &mut Vec<RawFdContainer>) -> io::Result<usize> {
        self.0.write_vectored(bufs, fds)
    }
}

impl TimedStream {
    /// Waits up to `ms` for something to read; false when nothing came.
    pub fn wait_readable(&self, ms: i32) -> io::Result<bool> {
        let mut fd = libc::pollfd {
            fd: self.0.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd for our own open socket, count 1.
        let n = unsafe { libc::poll(&mut fd, 1, ms) };
        if n < 0 {
            let e = io::Error::last_os_error();
            return if e.kind() == io::ErrorKind::Interrupted {
                Ok(false)
            } else {
                Err(e)
            };
        }
        Ok(n > 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use x11rb::rust_connection::RustConnection;

    /// A server that accepts the connection and never answers: the connection setup (a wait
    /// for the server's reply like any other) fails after the deadline instead of hanging.
    #[test]
    fn a_server_that_never_answers_times_out() {
        let (ours, theirs) = std::os::unix::net::UnixStream::pair().unwrap();
        let (stream, _) = DefaultStream::from_unix_stream(ours).unwrap();
        let start = std::time::Instant::now();
        let r = RustConnection::connect_to_stream(TimedStream(stream), 0);
        let waited = start.elapsed();
        let err = r.err().expect("no server answered");
        assert!(err.to_string().contains("did not answer"), "{err}");
        let deadline = std::time::Duration::from_millis(TIMEOUT_MS as u64);
        assert!(waited >= deadline && waited < deadline * 2, "{waited:?}");
        drop(theirs);
    }
}
