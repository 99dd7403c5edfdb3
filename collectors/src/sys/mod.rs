//! The syscall seam under the kernel counter backends (Mali kbase and Panfrost, Intel i915
//! perf and Xe observation): every `open`, `ioctl`, `read`, `poll` and `mmap` they make goes
//! through [`Sys`], so a test drives a backend exactly as the kernel would be driven, through
//! [`fake::FakeSys`], and checks every call. This is the shape of Arm's libGPUCounters, whose
//! backends take an injected syscall interface for the same reason.
//!
//! Unsafe code lives only in [`real::RealSys`]. The seam never hands out pointers: ioctl
//! arguments are byte slices the caller lays out (little-endian, `#[repr(C)]` offsets), user
//! pointers inside them are described by [`UserBuffer`] and patched in by the real
//! implementation, and mapped memory is copied out by [`Sys::read_mapped`] with bounds checks.

pub mod fake;
pub mod ioc;
pub mod real;

use crate::seam::Fs;
use std::io;
use std::path::Path;

/// A file descriptor opened through a [`Sys`]. Only meaningful to the `Sys` that made it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Fd(pub i32);

/// A read-only mapping made by [`Sys::mmap`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct MapId(pub u32);

/// How a device node is opened. Always with `O_CLOEXEC | O_NONBLOCK`: a FIFO planted where a
/// device node should be must not block framescope's collector thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    ReadOnly,
    ReadWrite,
}

/// A user buffer that a `u64` field of an ioctl's argument struct points at (the
/// `*_ptr` fields of the kbase, Panfrost, i915 and Xe ABIs).
#[derive(Debug)]
pub struct UserBuffer<'a> {
    pub bytes: &'a mut [u8],
    /// Byte offset in the argument struct of the `u64` pointer field. An empty `bytes` is
    /// passed as a null pointer (the kbase "how many items?" calls).
    pub ptr_at: usize,
    /// Byte offsets in `bytes` of `u64` fields that hold another offset into `bytes`, or 0 for
    /// none: chained extension structs (Xe's `next_extension`). The real `Sys` turns each
    /// into an address for the call and back into an offset afterwards, so callers and fakes
    /// only ever see offsets.
    pub links_at: &'a [usize],
}

/// An ioctl's third argument.
#[derive(Debug)]
pub enum IoctlArg<'a> {
    /// No argument (passed as 0).
    None,
    /// An integer passed by value (`I915_PERF_IOCTL_CONFIG`, kbase's `SET_INTERVAL`).
    Int(u64),
    /// A pointer to this struct, read and written by the kernel.
    Struct(&'a mut [u8]),
    /// A pointer to this struct, one of whose fields points at a user buffer.
    StructWithBuffer(&'a mut [u8], UserBuffer<'a>),
}

/// The calls the kernel backends make. `&mut self` so that fakes can advance scripts;
/// backends own their `Sys` (one per backend instance, on the collector thread).
pub trait Sys: Send {
    /// `open(2)` of a device node with `O_CLOEXEC | O_NONBLOCK`.
    fn open(&mut self, path: &Path, access: Access) -> io::Result<Fd>;

    /// `close(2)`. Closing an fd twice or one this `Sys` did not make is ignored.
    fn close(&mut self, fd: Fd);

    /// `ioctl(2)`; the kernel's return value (`>= 0`), or the errno as an error.
    fn ioctl(&mut self, fd: Fd, request: u64, arg: IoctlArg<'_>) -> io::Result<i32>;

    /// An ioctl whose return value is a new file descriptor (kbase's hardware-counter reader
    /// setup, i915's `PERF_OPEN`, Xe's observation-stream open); the new fd belongs to this
    /// `Sys` like one from [`Sys::open`].
    fn ioctl_fd(&mut self, fd: Fd, request: u64, arg: IoctlArg<'_>) -> io::Result<Fd>;

    /// `read(2)` into `buf`; `WouldBlock` when a non-blocking fd has nothing.
    fn read(&mut self, fd: Fd, buf: &mut [u8]) -> io::Result<usize>;

    /// `poll(2)` for `POLLIN` on one fd; true when readable within `timeout_ms` (0: don't wait).
    fn poll_readable(&mut self, fd: Fd, timeout_ms: i32) -> io::Result<bool>;

    /// A read-only shared mapping of `len` bytes of `fd` at `offset`.
    fn mmap(&mut self, fd: Fd, len: usize, offset: u64) -> io::Result<MapId>;

    /// Copies `out.len()` bytes at `offset` of the mapping into `out`; an error if the range
    /// is outside it (an offset from the kernel is never trusted).
    fn read_mapped(&mut self, map: MapId, offset: usize, out: &mut [u8]) -> io::Result<()>;

    /// `munmap(2)`. Unknown ids are ignored.
    fn munmap(&mut self, map: MapId);

    /// sysfs and procfs reads (metric set ids, `perf_stream_paranoid`, module parameters,
    /// which driver a DRM node belongs to).
    fn fs(&mut self) -> &mut dyn Fs;
}

impl<S: Sys + ?Sized> Sys for Box<S> {
    fn open(&mut self, path: &Path, access: Access) -> io::Result<Fd> {
        (**self).open(path, access)
    }
    fn close(&mut self, fd: Fd) {
        (**self).close(fd)
    }
    fn ioctl(&mut self, fd: Fd, request: u64, arg: IoctlArg<'_>) -> io::Result<i32> {
        (**self).ioctl(fd, request, arg)
    }
    fn ioctl_fd(&mut self, fd: Fd, request: u64, arg: IoctlArg<'_>) -> io::Result<Fd> {
        (**self).ioctl_fd(fd, request, arg)
    }
    fn read(&mut self, fd: Fd, buf: &mut [u8]) -> io::Result<usize> {
        (**self).read(fd, buf)
    }
    fn poll_readable(&mut self, fd: Fd, timeout_ms: i32) -> io::Result<bool> {
        (**self).poll_readable(fd, timeout_ms)
    }
    fn mmap(&mut self, fd: Fd, len: usize, offset: u64) -> io::Result<MapId> {
        (**self).mmap(fd, len, offset)
    }
    fn read_mapped(&mut self, map: MapId, offset: usize, out: &mut [u8]) -> io::Result<()> {
        (**self).read_mapped(map, offset, out)
    }
    fn munmap(&mut self, map: MapId) {
        (**self).munmap(map)
    }
    fn fs(&mut self) -> &mut dyn Fs {
        (**self).fs()
    }
}

/// A boxed seam, as backends hold it.
pub type BoxSys = Box<dyn Sys>;

/// Checks a [`UserBuffer`]'s offsets against the struct and buffer they index; both real and
/// fake `Sys` call it, so a layout mistake fails the same way in tests and in the field.
pub fn check_user_buffer(arg_len: usize, buf: &UserBuffer<'_>) -> io::Result<()> {
    let fits = |at: usize, len: usize| at.checked_add(8).is_some_and(|end| end <= len);
    if !fits(buf.ptr_at, arg_len) {
        return Err(invalid("user-buffer pointer field outside the ioctl argument"));
    }
    for &at in buf.links_at {
        if !fits(at, buf.bytes.len()) {
            return Err(invalid("chained-struct link outside the user buffer"));
        }
        let target = read_u64(buf.bytes, at);
        if target != 0 && target as usize >= buf.bytes.len() {
            return Err(invalid("chained-struct link points outside the user buffer"));
        }
    }
    Ok(())
}

/// Checks that `offset..offset + len` lies inside a mapping of `map_len` bytes (an offset from
/// the kernel is never trusted); the range's end.
pub(crate) fn check_range(map_len: usize, offset: usize, len: usize) -> io::Result<usize> {
    let end = offset
        .checked_add(len)
        .ok_or_else(|| invalid("mapping range overflows"))?;
    if end > map_len {
        return Err(invalid("range outside the mapping"));
    }
    Ok(end)
}

pub(crate) fn invalid(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, what.to_string())
}

pub(crate) fn read_u64(b: &[u8], at: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(w)
}

pub(crate) fn write_u64(b: &mut [u8], at: usize, v: u64) {
    b[at..at + 8].copy_from_slice(&v.to_le_bytes());
}
