//! The machine's own syscalls: the only unsafe code of the kernel backends.

use super::{check_range, check_user_buffer, invalid, read_u64, write_u64, Access, Fd, IoctlArg, MapId, Sys};
use crate::seam::{Fs, RealFs};
use std::collections::BTreeMap;
use std::ffi::CString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// One live mapping: its address (as an integer, so the struct is `Send`) and length.
#[derive(Debug)]
struct Mapping {
    addr: usize,
    len: usize,
}

/// [`Sys`] over real syscalls. Tracks the fds and mappings it made, so `close`/`munmap` of
/// anything else is ignored and dropping it releases what the backend forgot.
#[derive(Debug, Default)]
pub struct RealSys {
    fs: RealFs,
    fds: Vec<i32>,
    maps: BTreeMap<u32, Mapping>,
    next_map: u32,
}

impl RealSys {
    pub fn new() -> Self {
        Self::default()
    }

    fn known(&self, fd: Fd) -> io::Result<i32> {
        if self.fds.contains(&fd.0) {
            Ok(fd.0)
        } else {
            Err(io::Error::from_raw_os_error(libc::EBADF))
        }
    }
}

fn last_error<T>() -> io::Result<T> {
    Err(io::Error::last_os_error())
}

impl Sys for RealSys {
    fn open(&mut self, path: &Path, access: Access) -> io::Result<Fd> {
        let c = CString::new(path.as_os_str().as_bytes()).map_err(|_| invalid("NUL byte in a device path"))?;
        let mode = match access {
            Access::ReadOnly => libc::O_RDONLY,
            Access::ReadWrite => libc::O_RDWR,
        };
        // SAFETY: `c` is a NUL-terminated string that lives across the call.
        let fd = unsafe { libc::open(c.as_ptr(), mode | libc::O_CLOEXEC | libc::O_NONBLOCK) };
        if fd < 0 {
            return last_error();
        }
        self.fds.push(fd);
        Ok(Fd(fd))
    }

    fn close(&mut self, fd: Fd) {
        if let Some(i) = self.fds.iter().position(|&f| f == fd.0) {
            self.fds.swap_remove(i);
            // SAFETY: the fd was opened (or returned by an ioctl) through this Sys and is
            // closed once, as it is removed from the list above.
            unsafe { libc::close(fd.0) };
        }
    }

    fn ioctl(&mut self, fd: Fd, request: u64, arg: IoctlArg<'_>) -> io::Result<i32> {
        let raw = self.known(fd)?;
        let ret = match arg {
            // SAFETY: an integer argument is passed by value; the kernel reads no memory.
            IoctlArg::None => unsafe { libc::ioctl(raw, request as _, 0usize) },
            // SAFETY: as above.
            IoctlArg::Int(v) => unsafe { libc::ioctl(raw, request as _, v as usize) },
            IoctlArg::Struct(s) => {
                if super::ioc::size_of_request(request) > s.len() {
                    return Err(invalid("ioctl argument shorter than its request's size"));
                }
                // SAFETY: `s` is a live, exclusively borrowed buffer at least as long as the size
                // the request number tells the kernel to read or write.
                unsafe { libc::ioctl(raw, request as _, s.as_mut_ptr()) }
            }
            IoctlArg::StructWithBuffer(s, buf) => {
                if super::ioc::size_of_request(request) > s.len() {
                    return Err(invalid("ioctl argument shorter than its request's size"));
                }
                check_user_buffer(s.len(), &buf)?;
                let base = if buf.bytes.is_empty() {
                    0
                } else {
                    buf.bytes.as_mut_ptr() as u64
                };
                for &at in buf.links_at {
                    let off = read_u64(buf.bytes, at);
                    if off != 0 {
                        write_u64(buf.bytes, at, base + off);
                    }
                }
                write_u64(s, buf.ptr_at, base);
                // SAFETY: `s` and `buf.bytes` are live, exclusively borrowed buffers; the
                // pointer field and every link were checked to lie inside them, and the kernel
                // bounds its access to the buffer by the counts the caller wrote into `s`.
                let r = unsafe { libc::ioctl(raw, request as _, s.as_mut_ptr()) };
                write_u64(s, buf.ptr_at, 0);
                for &at in buf.links_at {
                    let addr = read_u64(buf.bytes, at);
                    if addr != 0 {
                        write_u64(buf.bytes, at, addr.wrapping_sub(base));
                    }
                }
                r
            }
        };
        if ret < 0 {
            return last_error();
        }
        Ok(ret)
    }

    fn ioctl_fd(&mut self, fd: Fd, request: u64, arg: IoctlArg<'_>) -> io::Result<Fd> {
        let new = self.ioctl(fd, request, arg)?;
        self.fds.push(new);
        Ok(Fd(new))
    }

    fn read(&mut self, fd: Fd, buf: &mut [u8]) -> io::Result<usize> {
        let raw = self.known(fd)?;
        // SAFETY: `buf` is a live, exclusively borrowed buffer of `buf.len()` bytes.
        let n = unsafe { libc::read(raw, buf.as_mut_ptr().cast(), buf.len()) };
        if n < 0 {
            return last_error();
        }
        Ok(n as usize)
    }

    fn poll_readable(&mut self, fd: Fd, timeout_ms: i32) -> io::Result<bool> {
        let raw = self.known(fd)?;
        let mut p = libc::pollfd {
            fd: raw,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one pollfd on the stack, count 1.
        let n = unsafe { libc::poll(&mut p, 1, timeout_ms) };
        if n < 0 {
            return last_error();
        }
        Ok(n > 0 && p.revents & libc::POLLIN != 0)
    }

    fn mmap(&mut self, fd: Fd, len: usize, offset: u64) -> io::Result<MapId> {
        let raw = self.known(fd)?;
        if len == 0 {
            return Err(invalid("zero-length mapping"));
        }
        // SAFETY: a new read-only shared mapping chosen by the kernel; nothing existing is
        // replaced (no MAP_FIXED).
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ,
                libc::MAP_SHARED,
                raw,
                offset as libc::off_t,
            )
        };
        if p == libc::MAP_FAILED {
            return last_error();
        }
        let id = self.next_map;
        self.next_map = self.next_map.wrapping_add(1);
        self.maps.insert(id, Mapping { addr: p as usize, len });
        Ok(MapId(id))
    }

    fn read_mapped(&mut self, map: MapId, offset: usize, out: &mut [u8]) -> io::Result<()> {
        let m = self.maps.get(&map.0).ok_or_else(|| invalid("unknown mapping"))?;
        check_range(m.len, offset, out.len())?;
        // SAFETY: `offset..end` lies inside a live PROT_READ mapping of `m.len` bytes made by
        // this Sys; `out` is a distinct, exclusively borrowed buffer of the same length.
        unsafe { std::ptr::copy_nonoverlapping((m.addr as *const u8).add(offset), out.as_mut_ptr(), out.len()) };
        Ok(())
    }

    fn munmap(&mut self, map: MapId) {
        if let Some(m) = self.maps.remove(&map.0) {
            // SAFETY: the mapping was made by this Sys with this length and is unmapped once,
            // as it is removed from the table above.
            unsafe { libc::munmap(m.addr as *mut libc::c_void, m.len) };
        }
    }

    fn fs(&mut self) -> &mut dyn Fs {
        &mut self.fs
    }
}

impl Drop for RealSys {
    fn drop(&mut self) {
        let maps: Vec<u32> = self.maps.keys().copied().collect();
        for id in maps {
            self.munmap(MapId(id));
        }
        while let Some(&fd) = self.fds.last() {
            self.close(Fd(fd));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn real_calls_on_dev_zero() {
        let mut sys = RealSys::new();
        let fd = sys.open(Path::new("/dev/zero"), Access::ReadOnly).unwrap();
        assert!(sys.poll_readable(fd, 0).unwrap());
        let mut buf = [1u8; 8];
        assert_eq!(sys.read(fd, &mut buf).unwrap(), 8);
        assert_eq!(buf, [0; 8]);
        assert_eq!(
            sys.ioctl(fd, crate::sys::ioc::io(b'x', 1), IoctlArg::None)
                .unwrap_err()
                .raw_os_error(),
            Some(libc::ENOTTY)
        );
        let m = sys.mmap(fd, 4096, 0).unwrap();
        let mut out = [7u8; 16];
        sys.read_mapped(m, 4080, &mut out).unwrap();
        assert_eq!(out, [0; 16]);
        assert!(sys.read_mapped(m, 4081, &mut out).is_err());
        assert!(sys.read_mapped(m, usize::MAX, &mut out).is_err());
        // A struct shorter than its request's size never reaches the kernel.
        let mut short = [0u8; 4];
        assert!(sys
            .ioctl(fd, crate::sys::ioc::iow(b'x', 1, 16), IoctlArg::Struct(&mut short))
            .is_err());
        // Fds it did not make are refused, not used.
        assert_eq!(sys.read(Fd(0), &mut buf).unwrap_err().raw_os_error(), Some(libc::EBADF));
        sys.munmap(m);
        sys.close(fd);
        assert!(sys.read(fd, &mut buf).is_err());
        assert!(sys.open(Path::new("/nonexistent/mali0"), Access::ReadWrite).is_err());
    }
}
