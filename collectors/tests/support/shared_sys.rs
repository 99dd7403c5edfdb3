//! A `Sys` handle over a shared `FakeSys`, so a test can read the call log and count open fds
//! and mappings after the source that owns the handle is gone. sysfs reads go to the
//! handle's own scripted tree.

#![allow(dead_code)]

use framescope_collectors::seam::{Fs, ScriptedFs};
use framescope_collectors::sys::fake::FakeSys;
use framescope_collectors::sys::{Access, Fd, IoctlArg, MapId, Sys};
use std::io;
use std::path::Path;
use std::sync::{Arc, Mutex};

pub struct SharedSys {
    pub inner: Arc<Mutex<FakeSys>>,
    fs: ScriptedFs,
}

impl SharedSys {
    pub fn new(sys: FakeSys, fs: ScriptedFs) -> (Self, Arc<Mutex<FakeSys>>) {
        let inner = Arc::new(Mutex::new(sys));
        (
            SharedSys {
                inner: inner.clone(),
                fs,
            },
            inner,
        )
    }
}

impl Sys for SharedSys {
    fn open(&mut self, path: &Path, access: Access) -> io::Result<Fd> {
        self.inner.lock().unwrap().open(path, access)
    }
    fn close(&mut self, fd: Fd) {
        self.inner.lock().unwrap().close(fd)
    }
    fn ioctl(&mut self, fd: Fd, request: u64, arg: IoctlArg<'_>) -> io::Result<i32> {
        self.inner.lock().unwrap().ioctl(fd, request, arg)
    }
    fn ioctl_fd(&mut self, fd: Fd, request: u64, arg: IoctlArg<'_>) -> io::Result<Fd> {
        self.inner.lock().unwrap().ioctl_fd(fd, request, arg)
    }
    fn read(&mut self, fd: Fd, buf: &mut [u8]) -> io::Result<usize> {
        self.inner.lock().unwrap().read(fd, buf)
    }
    fn poll_readable(&mut self, fd: Fd, timeout_ms: i32) -> io::Result<bool> {
        self.inner.lock().unwrap().poll_readable(fd, timeout_ms)
    }
    fn mmap(&mut self, fd: Fd, len: usize, offset: u64) -> io::Result<MapId> {
        self.inner.lock().unwrap().mmap(fd, len, offset)
    }
    fn read_mapped(&mut self, map: MapId, offset: usize, out: &mut [u8]) -> io::Result<()> {
        self.inner.lock().unwrap().read_mapped(map, offset, out)
    }
    fn munmap(&mut self, map: MapId) {
        self.inner.lock().unwrap().munmap(map)
    }
    fn fs(&mut self) -> &mut dyn Fs {
        &mut self.fs
    }
}
