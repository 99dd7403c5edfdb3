//! The file seam under every sysfs/procfs counter source: sources read `/proc` and `/sys`
//! only through [`Fs`], so tests can point them at a fixture tree ([`FixtureFs`]) or script
//! successive file contents ([`ScriptedFs`]) and check values computed from deltas.
//!
//! Reads are bounded by [`READ_CAP`]: a kernel file is small, and a fixture or a hostile
//! bind mount that is not must not make the collector thread read (or allocate) without end.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::fs::OpenOptions;
use std::io::{self, Read};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Component, Path, PathBuf};

/// The most bytes a read returns; longer files are cut here. The largest file the sources
/// read is `/proc/stat` on a many-core machine (about 60 bytes a CPU), or `fdinfo` of an
/// epoll fd with many watches, which is then cut and parsed as far as it goes.
pub const READ_CAP: usize = 64 * 1024;

/// Read access to the files the sources use. `&mut self` so that fakes can advance scripts
/// and fixtures can reuse a path buffer; sources own their `Fs`.
pub trait Fs {
    /// Replaces the content of `buf` with at most [`READ_CAP`] bytes of the file at `path`.
    /// `buf` is the caller's, so its capacity carries over from read to read.
    fn read(&mut self, path: &Path, buf: &mut Vec<u8>) -> io::Result<()>;

    /// Replaces `out` with the names of the entries of the directory at `path`, sorted.
    fn list_dir(&mut self, path: &Path, out: &mut Vec<OsString>) -> io::Result<()>;

    /// The target of the symbolic link at `path`, not followed further.
    fn read_link(&mut self, path: &Path) -> io::Result<PathBuf>;
}

impl<F: Fs + ?Sized> Fs for Box<F> {
    fn read(&mut self, path: &Path, buf: &mut Vec<u8>) -> io::Result<()> {
        (**self).read(path, buf)
    }
    fn list_dir(&mut self, path: &Path, out: &mut Vec<OsString>) -> io::Result<()> {
        (**self).list_dir(path, out)
    }
    fn read_link(&mut self, path: &Path) -> io::Result<PathBuf> {
        (**self).read_link(path)
    }
}

/// A boxed seam, as sources hold it.
pub type BoxFs = Box<dyn Fs + Send>;

fn read_bounded(path: &Path, buf: &mut Vec<u8>) -> io::Result<()> {
    buf.clear();
    // O_NONBLOCK: a FIFO planted where a sysfs file should be must not block the collector.
    let f = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)?;
    f.take(READ_CAP as u64).read_to_end(buf)?;
    Ok(())
}

fn list_sorted(path: &Path, out: &mut Vec<OsString>) -> io::Result<()> {
    out.clear();
    for e in std::fs::read_dir(path)? {
        out.push(e?.file_name());
    }
    out.sort();
    Ok(())
}

/// The machine's own files.
#[derive(Clone, Copy, Debug, Default)]
pub struct RealFs;

impl Fs for RealFs {
    fn read(&mut self, path: &Path, buf: &mut Vec<u8>) -> io::Result<()> {
        read_bounded(path, buf)
    }
    fn list_dir(&mut self, path: &Path, out: &mut Vec<OsString>) -> io::Result<()> {
        list_sorted(path, out)
    }
    fn read_link(&mut self, path: &Path) -> io::Result<PathBuf> {
        std::fs::read_link(path)
    }
}

/// A fixture tree: absolute paths are looked up under `root` (`/sys/class/drm` becomes
/// `<root>/sys/class/drm`). Symbolic links inside the tree resolve as on disk, so a fixture
/// can mirror sysfs's `device` links with relative links.
#[derive(Debug)]
pub struct FixtureFs {
    root: PathBuf,
    scratch: PathBuf,
}

impl FixtureFs {
    pub fn new(root: impl Into<PathBuf>) -> Self {
        FixtureFs {
            root: root.into(),
            scratch: PathBuf::new(),
        }
    }

    fn map(&mut self, path: &Path) -> &Path {
        self.scratch.clear();
        self.scratch.push(&self.root);
        // `..` is dropped so that a path built from file content cannot leave the tree.
        for c in path.components() {
            if let Component::Normal(n) = c {
                self.scratch.push(n);
            }
        }
        &self.scratch
    }
}

impl Fs for FixtureFs {
    fn read(&mut self, path: &Path, buf: &mut Vec<u8>) -> io::Result<()> {
        let p = self.map(path);
        read_bounded(p, buf)
    }
    fn list_dir(&mut self, path: &Path, out: &mut Vec<OsString>) -> io::Result<()> {
        let p = self.map(path);
        list_sorted(p, out)
    }
    fn read_link(&mut self, path: &Path) -> io::Result<PathBuf> {
        let p = self.map(path);
        std::fs::read_link(p)
    }
}

/// One step of a scripted file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    Data(Vec<u8>),
    /// The read fails with `NotFound` (a device that went away).
    Missing,
}

#[derive(Clone, Debug)]
enum Entry {
    File { steps: Vec<Step>, next: usize },
    Link(PathBuf),
}

/// A scripted file system: each file has a sequence of contents, one per successive read;
/// the last one repeats. Directories exist implicitly above every scripted path.
#[derive(Clone, Debug, Default)]
pub struct ScriptedFs {
    entries: BTreeMap<PathBuf, Entry>,
}

impl ScriptedFs {
    pub fn new() -> Self {
        Self::default()
    }

    /// A file whose successive reads return `contents` in order (the last one repeats).
    pub fn file<I, C>(&mut self, path: impl Into<PathBuf>, contents: I) -> &mut Self
    where
        I: IntoIterator<Item = C>,
        C: AsRef<[u8]>,
    {
        let steps = contents.into_iter().map(|c| Step::Data(c.as_ref().to_vec())).collect();
        self.steps(path, steps)
    }

    /// A file with explicit steps, so that a script can make a file vanish.
    pub fn steps(&mut self, path: impl Into<PathBuf>, steps: Vec<Step>) -> &mut Self {
        self.entries.insert(path.into(), Entry::File { steps, next: 0 });
        self
    }

    /// A symbolic link to `target`.
    pub fn link(&mut self, path: impl Into<PathBuf>, target: impl Into<PathBuf>) -> &mut Self {
        self.entries.insert(path.into(), Entry::Link(target.into()));
        self
    }

    fn not_found(path: &Path) -> io::Error {
        io::Error::new(io::ErrorKind::NotFound, format!("{}: not scripted", path.display()))
    }
}

impl Fs for ScriptedFs {
    fn read(&mut self, path: &Path, buf: &mut Vec<u8>) -> io::Result<()> {
        buf.clear();
        match self.entries.get_mut(path) {
            Some(Entry::File { steps, next }) => {
                let Some(step) = steps.get((*next).min(steps.len().saturating_sub(1))) else {
                    return Err(Self::not_found(path));
                };
                *next = next.saturating_add(1);
                match step {
                    Step::Data(d) => {
                        buf.extend_from_slice(&d[..d.len().min(READ_CAP)]);
                        Ok(())
                    }
                    Step::Missing => Err(Self::not_found(path)),
                }
            }
            Some(Entry::Link(_)) => Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{}: scripted links have no content", path.display()),
            )),
            None => Err(Self::not_found(path)),
        }
    }

    fn list_dir(&mut self, path: &Path, out: &mut Vec<OsString>) -> io::Result<()> {
        out.clear();
        for p in self.entries.keys() {
            if let Ok(rest) = p.strip_prefix(path) {
                if let Some(Component::Normal(first)) = rest.components().next() {
                    if out.last().map(|l| l.as_os_str()) != Some(first) {
                        out.push(first.to_os_string());
                    }
                }
            }
        }
        out.sort();
        out.dedup();
        if out.is_empty() {
            return Err(Self::not_found(path));
        }
        Ok(())
    }

    fn read_link(&mut self, path: &Path) -> io::Result<PathBuf> {
        match self.entries.get(path) {
            Some(Entry::Link(t)) => Ok(t.clone()),
            Some(Entry::File { .. }) => Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{}: not a link", path.display()),
            )),
            None => Err(Self::not_found(path)),
        }
    }
}
