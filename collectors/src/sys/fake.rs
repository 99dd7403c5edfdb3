//! A scripted [`Sys`] for tests: device nodes are [`FakeNode`]s that tests (or fixture
//! models of a kernel driver) implement; every call is logged as a [`Call`], so a test can
//! assert the exact sequence a backend drives (handshake, setup, dump, read, teardown).

use super::{check_range, check_user_buffer, invalid, Access, Fd, IoctlArg, MapId, Sys};
use crate::seam::{BoxFs, Fs, ScriptedFs};
use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};

/// What a fake ioctl returns.
pub enum IoctlReply {
    /// A plain return value (`>= 0`).
    Value(i32),
    /// A new open file (a counter reader or a perf stream); only valid for [`Sys::ioctl_fd`].
    NewFile(Box<dyn FakeFile>),
}

/// An open file of a fake device: the kernel's side of one fd.
pub trait FakeFile: Send {
    /// The ioctl's effect. `arg` is exactly what the backend passed (user pointers are
    /// offsets, as [`super::UserBuffer`] describes).
    fn ioctl(&mut self, request: u64, arg: IoctlArg<'_>) -> io::Result<IoctlReply>;

    /// `read(2)`.
    fn read(&mut self, _buf: &mut [u8]) -> io::Result<usize> {
        Err(io::Error::from_raw_os_error(libc::EINVAL))
    }

    /// Whether a `poll` for input would return at once.
    fn readable(&mut self) -> bool {
        false
    }

    /// The bytes of the file's mappable memory at `offset..offset + out.len()`, as they are
    /// now (a fake kernel may change them between calls, as a ring buffer does).
    fn mapped(&mut self, _offset: u64, _out: &mut [u8]) -> io::Result<()> {
        Err(io::Error::from_raw_os_error(libc::ENODEV))
    }

    /// The length of the file's mappable memory (0: not mappable).
    fn map_len(&self) -> u64 {
        0
    }
}

/// A device node: opening it gives a new [`FakeFile`], or the error a kernel gives (`EACCES`,
/// `ENOENT`, ...).
pub trait FakeNode: Send {
    fn open(&mut self, access: Access) -> io::Result<Box<dyn FakeFile>>;
}

impl<F> FakeNode for F
where
    F: FnMut(Access) -> io::Result<Box<dyn FakeFile>> + Send,
{
    fn open(&mut self, access: Access) -> io::Result<Box<dyn FakeFile>> {
        self(access)
    }
}

/// One call made through a [`FakeSys`], with its result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Call {
    Open { path: PathBuf, ok: bool },
    Close(Fd),
    Ioctl { fd: Fd, request: u64, ret: Option<i32> },
    Read { fd: Fd, ret: Option<usize> },
    Poll { fd: Fd, readable: bool },
    Mmap { fd: Fd, len: usize, offset: u64, ok: bool },
    Munmap(MapId),
}

struct Mapping {
    fd: Fd,
    offset: u64,
    len: usize,
}

/// A [`Sys`] over fake device nodes and a fake file tree.
pub struct FakeSys {
    fs: BoxFs,
    nodes: BTreeMap<PathBuf, Box<dyn FakeNode>>,
    files: BTreeMap<i32, Box<dyn FakeFile>>,
    maps: BTreeMap<u32, Mapping>,
    next_fd: i32,
    next_map: u32,
    log: Vec<Call>,
}

impl Default for FakeSys {
    fn default() -> Self {
        Self::new(Box::new(ScriptedFs::new()))
    }
}

impl FakeSys {
    /// Over `fs` for sysfs/procfs reads (a [`ScriptedFs`] or a fixture tree).
    pub fn new(fs: BoxFs) -> Self {
        FakeSys {
            fs,
            nodes: BTreeMap::new(),
            files: BTreeMap::new(),
            maps: BTreeMap::new(),
            next_fd: 3,
            next_map: 0,
            log: Vec::new(),
        }
    }

    /// A device node at `path`.
    pub fn node(&mut self, path: impl Into<PathBuf>, node: impl FakeNode + 'static) -> &mut Self {
        self.nodes.insert(path.into(), Box::new(node));
        self
    }

    /// Every call so far.
    pub fn log(&self) -> &[Call] {
        &self.log
    }

    /// Fds still open (a backend that leaks one fails its test).
    pub fn open_fds(&self) -> usize {
        self.files.len()
    }

    /// Mappings still live.
    pub fn live_maps(&self) -> usize {
        self.maps.len()
    }

    fn add_file(&mut self, f: Box<dyn FakeFile>) -> Fd {
        let fd = self.next_fd;
        self.next_fd += 1;
        self.files.insert(fd, f);
        Fd(fd)
    }

    fn file(&mut self, fd: Fd) -> io::Result<&mut Box<dyn FakeFile>> {
        self.files
            .get_mut(&fd.0)
            .ok_or_else(|| io::Error::from_raw_os_error(libc::EBADF))
    }

    fn call(&mut self, fd: Fd, request: u64, arg: IoctlArg<'_>) -> io::Result<IoctlReply> {
        if let IoctlArg::StructWithBuffer(s, b) = &arg {
            check_user_buffer(s.len(), b)?;
        }
        if let IoctlArg::Struct(s) | IoctlArg::StructWithBuffer(s, _) = &arg {
            if super::ioc::size_of_request(request) > s.len() {
                return Err(invalid("ioctl argument shorter than its request's size"));
            }
        }
        self.file(fd)?.ioctl(request, arg)
    }
}

impl Sys for FakeSys {
    fn open(&mut self, path: &Path, access: Access) -> io::Result<Fd> {
        let r = match self.nodes.get_mut(path) {
            Some(n) => n.open(access),
            None => Err(io::Error::from_raw_os_error(libc::ENOENT)),
        };
        self.log.push(Call::Open {
            path: path.to_path_buf(),
            ok: r.is_ok(),
        });
        Ok(self.add_file(r?))
    }

    fn close(&mut self, fd: Fd) {
        if self.files.remove(&fd.0).is_some() {
            self.log.push(Call::Close(fd));
        }
    }

    fn ioctl(&mut self, fd: Fd, request: u64, arg: IoctlArg<'_>) -> io::Result<i32> {
        let r = match self.call(fd, request, arg) {
            Ok(IoctlReply::Value(v)) => Ok(v),
            Ok(IoctlReply::NewFile(_)) => Err(invalid("fake returned a new file to a plain ioctl")),
            Err(e) => Err(e),
        };
        self.log.push(Call::Ioctl {
            fd,
            request,
            ret: r.as_ref().ok().copied(),
        });
        r
    }

    fn ioctl_fd(&mut self, fd: Fd, request: u64, arg: IoctlArg<'_>) -> io::Result<Fd> {
        let r = match self.call(fd, request, arg) {
            Ok(IoctlReply::NewFile(f)) => Ok(self.add_file(f)),
            Ok(IoctlReply::Value(_)) => Err(invalid("fake returned a value to an fd-returning ioctl")),
            Err(e) => Err(e),
        };
        self.log.push(Call::Ioctl {
            fd,
            request,
            ret: r.as_ref().ok().map(|f| f.0),
        });
        r
    }

    fn read(&mut self, fd: Fd, buf: &mut [u8]) -> io::Result<usize> {
        let r = self.file(fd).and_then(|f| f.read(buf));
        self.log.push(Call::Read {
            fd,
            ret: r.as_ref().ok().copied(),
        });
        r
    }

    fn poll_readable(&mut self, fd: Fd, _timeout_ms: i32) -> io::Result<bool> {
        let readable = self.file(fd)?.readable();
        self.log.push(Call::Poll { fd, readable });
        Ok(readable)
    }

    fn mmap(&mut self, fd: Fd, len: usize, offset: u64) -> io::Result<MapId> {
        let r = (|| {
            let f = self.file(fd)?;
            let end = offset
                .checked_add(len as u64)
                .ok_or_else(|| invalid("mapping range overflows"))?;
            if len == 0 || end > f.map_len() {
                return Err(io::Error::from_raw_os_error(libc::EINVAL));
            }
            let id = self.next_map;
            self.next_map += 1;
            self.maps.insert(id, Mapping { fd, offset, len });
            Ok(MapId(id))
        })();
        self.log.push(Call::Mmap {
            fd,
            len,
            offset,
            ok: r.is_ok(),
        });
        r
    }

    fn read_mapped(&mut self, map: MapId, offset: usize, out: &mut [u8]) -> io::Result<()> {
        let m = self.maps.get(&map.0).ok_or_else(|| invalid("unknown mapping"))?;
        check_range(m.len, offset, out.len())?;
        let (fd, base) = (m.fd, m.offset);
        self.file(fd)?.mapped(base + offset as u64, out)
    }

    fn munmap(&mut self, map: MapId) {
        if self.maps.remove(&map.0).is_some() {
            self.log.push(Call::Munmap(map));
        }
    }

    fn fs(&mut self) -> &mut dyn Fs {
        &mut self.fs
    }
}

#[cfg(test)]
mod tests {
    use super::super::UserBuffer;
    use super::*;

    struct Echo {
        mem: Vec<u8>,
    }

    impl FakeFile for Echo {
        fn ioctl(&mut self, request: u64, arg: IoctlArg<'_>) -> io::Result<IoctlReply> {
            match arg {
                IoctlArg::StructWithBuffer(s, b) => {
                    b.bytes.fill(request as u8);
                    s[0] = 1;
                    Ok(IoctlReply::Value(b.bytes.len() as i32))
                }
                IoctlArg::Int(7) => Ok(IoctlReply::NewFile(Box::new(Echo { mem: vec![9; 16] }))),
                _ => Err(io::Error::from_raw_os_error(libc::ENOTTY)),
            }
        }
        fn mapped(&mut self, offset: u64, out: &mut [u8]) -> io::Result<()> {
            out.copy_from_slice(&self.mem[offset as usize..offset as usize + out.len()]);
            Ok(())
        }
        fn map_len(&self) -> u64 {
            self.mem.len() as u64
        }
    }

    #[test]
    fn calls_reach_the_node_and_are_logged() {
        let mut sys = FakeSys::default();
        sys.node("/dev/x", |_| Ok(Box::new(Echo { mem: vec![] }) as Box<dyn FakeFile>));
        assert_eq!(
            sys.open(Path::new("/dev/y"), Access::ReadOnly)
                .unwrap_err()
                .raw_os_error(),
            Some(libc::ENOENT)
        );
        let fd = sys.open(Path::new("/dev/x"), Access::ReadWrite).unwrap();
        let mut s = [0u8; 16];
        let mut b = [0u8; 4];
        let n = sys
            .ioctl(
                fd,
                super::super::ioc::iow(b'x', 1, 16),
                IoctlArg::StructWithBuffer(
                    &mut s,
                    UserBuffer {
                        bytes: &mut b,
                        ptr_at: 8,
                        links_at: &[],
                    },
                ),
            )
            .unwrap();
        assert_eq!((n, s[0], b), (4, 1, [1; 4]));
        // A pointer field outside the struct is refused before the node sees it.
        let bad = UserBuffer {
            bytes: &mut b,
            ptr_at: 12,
            links_at: &[],
        };
        assert!(sys.ioctl(fd, 0, IoctlArg::StructWithBuffer(&mut s, bad)).is_err());
        let reader = sys.ioctl_fd(fd, 0, IoctlArg::Int(7)).unwrap();
        let m = sys.mmap(reader, 16, 0).unwrap();
        let mut out = [0u8; 4];
        sys.read_mapped(m, 12, &mut out).unwrap();
        assert_eq!(out, [9; 4]);
        assert!(sys.read_mapped(m, 13, &mut out).is_err());
        assert!(sys.mmap(reader, 17, 0).is_err());
        sys.munmap(m);
        sys.close(reader);
        sys.close(fd);
        assert_eq!((sys.open_fds(), sys.live_maps()), (0, 0));
        assert!(matches!(sys.log()[0], Call::Open { ok: false, .. }));
        assert_eq!(*sys.log().last().unwrap(), Call::Close(fd));
    }
}
