//! Opening the files framescope writes from inside the app (dumps, screenshots).
//!
//! The rules, and why:
//! - a new file is created with `O_CREAT | O_EXCL | O_NOFOLLOW` and mode 0644 (less the
//!   umask), so nothing that already exists is ever opened for writing, truncated, or
//!   written through a symbolic link someone planted at the path;
//! - a path that already holds a regular file (a dump of an earlier process, any other file)
//!   gets the first free numbered sibling, `seq.jsonl` → `seq.1.jsonl`, `seq.2.jsonl`, …:
//!   the older file is never truncated;
//! - a symbolic link is refused, except (for dumps) one that leads to a FIFO or a character
//!   device (`/dev/stdout` is a link to `/proc/self/fd/1`): those have no content to clobber;
//! - FIFOs and character devices are opened with `O_NONBLOCK`, so a FIFO nobody reads fails
//!   at once (`ENXIO`, open(2)) instead of blocking in `open`, and writes to them go through
//!   [`write_all`], which waits for the reader in bounded steps and can be told to give up.

use std::ffi::{OsStr, OsString};
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::fd::AsRawFd;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Numbered siblings tried before giving up; bounds the `open` calls one dump can make.
pub const MAX_SIBLINGS: u32 = 999;

/// What was opened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A regular file framescope just created; nobody else wrote to it.
    NewFile,
    /// A FIFO or a character device, opened non-blocking.
    Stream,
}

/// A file opened by [`open_output`].
#[derive(Debug)]
pub struct Opened {
    pub file: File,
    /// The path actually opened: the one asked for, or its numbered sibling.
    pub path: PathBuf,
    pub kind: Kind,
    /// True when the path asked for already held something and a sibling was created.
    pub sibling: bool,
}

fn refuse(why: String) -> io::Error {
    io::Error::other(why)
}

/// Creates a new regular file at exactly `path`: never follows a link, never opens an
/// existing file.
fn create_new(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o644)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
}

fn is_stream(t: std::fs::FileType) -> bool {
    t.is_fifo() || t.is_char_device()
}

/// Opens an existing FIFO or character device without blocking, and checks that what was
/// opened is still one (the path may have been replaced since it was looked at).
fn open_stream(path: &Path, follow: bool) -> io::Result<File> {
    let flags = libc::O_NONBLOCK | libc::O_NOCTTY | if follow { 0 } else { libc::O_NOFOLLOW };
    let file = match OpenOptions::new().write(true).custom_flags(flags).open(path) {
        Ok(f) => f,
        Err(e) if e.raw_os_error() == Some(libc::ENXIO) => {
            return Err(refuse(
                "it is a FIFO that no process has open for reading (start the reader first)".into(),
            ))
        }
        Err(e) => return Err(e),
    };
    if !is_stream(file.metadata()?.file_type()) {
        return Err(refuse("it changed while being opened; not writing to it".into()));
    }
    Ok(file)
}

/// `dir/name.ext` → `dir/name.N.ext`; a name without an extension (or a dotfile) gets `.N`
/// at its end.
pub fn sibling(path: &Path, n: u32) -> PathBuf {
    let bytes = path.as_os_str().as_bytes();
    let name_start = bytes.iter().rposition(|&b| b == b'/').map_or(0, |i| i + 1);
    let name = &bytes[name_start..];
    let insert_at = match name.iter().rposition(|&b| b == b'.') {
        Some(dot) if dot > 0 => name_start + dot,
        _ => bytes.len(),
    };
    let mut out = Vec::with_capacity(bytes.len() + 8);
    out.extend_from_slice(&bytes[..insert_at]);
    out.extend_from_slice(format!(".{n}").as_bytes());
    out.extend_from_slice(&bytes[insert_at..]);
    PathBuf::from(OsString::from_vec(out))
}

/// Opens `path` for writing by the rules of the module docs. `streams`: whether FIFOs and
/// character devices are acceptable (dumps: yes; screenshots: no, a PNG is a file). Never
/// blocks, never truncates, never writes through a link to a regular file.
pub fn open_output(path: &Path, streams: bool) -> io::Result<Opened> {
    let opened = |file, path: &Path, kind, sibling| Opened {
        file,
        path: path.to_path_buf(),
        kind,
        sibling,
    };
    match create_new(path) {
        Ok(f) => return Ok(opened(f, path, Kind::NewFile, false)),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    let ft = std::fs::symlink_metadata(path)?.file_type();
    if ft.is_symlink() {
        let target = std::fs::metadata(path).map(|m| m.file_type());
        if streams && target.is_ok_and(is_stream) {
            return open_stream(path, true).map(|f| opened(f, path, Kind::Stream, false));
        }
        return Err(refuse(
            "it is a symbolic link, and framescope never writes through one (name the target itself)".into(),
        ));
    }
    if is_stream(ft) {
        if streams {
            return open_stream(path, false).map(|f| opened(f, path, Kind::Stream, false));
        }
        return Err(refuse(
            "it is a FIFO or a device; this is written to regular files only".into(),
        ));
    }
    if !ft.is_file() {
        let what = if ft.is_dir() {
            "a directory (name a file in it, e.g. DIR/%n-%p.jsonl)"
        } else if ft.is_block_device() {
            "a block device"
        } else if ft.is_socket() {
            "a socket"
        } else {
            "neither a file nor a FIFO"
        };
        return Err(refuse(format!("it is {what}")));
    }
    for n in 1..=MAX_SIBLINGS {
        let p = sibling(path, n);
        match create_new(&p) {
            Ok(f) => return Ok(opened(f, &p, Kind::NewFile, true)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(refuse(format!(
        "it and its numbered siblings .1 to .{MAX_SIBLINGS} all exist"
    )))
}

/// How long one wait for a slow stream reader lasts before `give_up` is asked again.
const POLL_STEP: Duration = Duration::from_millis(100);

/// Writes all of `buf`. On a non-blocking stream whose reader is slow it waits for room in
/// steps of 100 ms, asking `give_up` after each; `give_up` returning true ends the write
/// with `TimedOut`. For regular files this is a plain `write_all`.
pub fn write_all(file: &File, mut buf: &[u8], give_up: &dyn Fn() -> bool) -> io::Result<()> {
    let mut w = file;
    while !buf.is_empty() {
        match w.write(buf) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => buf = &buf[n..],
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                if give_up() {
                    return Err(io::Error::new(io::ErrorKind::TimedOut, "its reader stopped reading"));
                }
                let mut pfd = libc::pollfd {
                    fd: file.as_raw_fd(),
                    events: libc::POLLOUT,
                    revents: 0,
                };
                // SAFETY: one valid pollfd for a descriptor `file` keeps open; the result only
                // decides whether to try the write again, which reports any real error.
                unsafe { libc::poll(&mut pfd, 1, POLL_STEP.as_millis() as libc::c_int) };
            }
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Blocks `SIGPIPE` on the calling thread (call it on framescope's own writer threads): a
/// write to a FIFO whose reader went away then fails with `EPIPE` instead of killing the app,
/// whose default action for `SIGPIPE` is to terminate. A signal left pending on the thread
/// is discarded when the thread exits.
pub fn block_sigpipe_on_this_thread() {
    // SAFETY: sigset_t is plain data initialised by sigemptyset before use; pthread_sigmask
    // changes only this thread's mask.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGPIPE);
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
    }
}

/// A path for messages: lossy UTF-8, one line.
pub fn display(path: &OsStr) -> String {
    crate::runtime::shown::shown(&path.to_string_lossy())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn scratch(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("framescope-open-{}-{tag}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn siblings_keep_the_extension() {
        let s = |p: &str, n| sibling(Path::new(p), n).display().to_string();
        assert_eq!(s("/d/seq.jsonl", 1), "/d/seq.1.jsonl");
        assert_eq!(s("/d.x/seq", 2), "/d.x/seq.2");
        assert_eq!(s("/d/.hidden", 3), "/d/.hidden.3");
        assert_eq!(s("a.b.png", 12), "a.b.12.png");
    }

    #[test]
    fn new_files_get_0644_less_the_umask() {
        let d = scratch("mode");
        // SAFETY: umask only changes this process's creation mask; restored below.
        let old = unsafe { libc::umask(0o027) };
        let r = open_output(&d.join("a.jsonl"), true);
        // SAFETY: as above.
        unsafe { libc::umask(old) };
        let o = r.unwrap();
        assert_eq!(o.kind, Kind::NewFile);
        assert_eq!(o.file.metadata().unwrap().permissions().mode() & 0o777, 0o640);
        let o = open_output(&d.join("b.jsonl"), true).unwrap();
        assert_eq!(o.file.metadata().unwrap().permissions().mode() & 0o777, 0o644 & !old);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn an_existing_file_is_left_alone_and_a_sibling_created() {
        let d = scratch("sibling");
        let p = d.join("seq.jsonl");
        std::fs::write(&p, "theirs\n").unwrap();
        std::fs::write(d.join("seq.1.jsonl"), "also theirs\n").unwrap();
        let o = open_output(&p, true).unwrap();
        assert!(o.sibling);
        assert_eq!(o.path, d.join("seq.2.jsonl"));
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "theirs\n");
        assert_eq!(std::fs::read_to_string(d.join("seq.1.jsonl")).unwrap(), "also theirs\n");
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn symlinks_to_files_are_refused_and_their_targets_untouched() {
        let d = scratch("link");
        let target = d.join("target");
        std::fs::write(&target, "keep").unwrap();
        std::os::unix::fs::symlink(&target, d.join("l.jsonl")).unwrap();
        std::os::unix::fs::symlink(d.join("missing"), d.join("dangling.jsonl")).unwrap();
        for name in ["l.jsonl", "dangling.jsonl"] {
            for streams in [true, false] {
                let e = open_output(&d.join(name), streams).unwrap_err();
                assert!(e.to_string().contains("symbolic link"), "{e}");
            }
        }
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep");
        assert!(!d.join("missing").exists());
        std::fs::remove_dir_all(&d).unwrap();
    }

    fn mkfifo(p: &Path) {
        let c = std::ffi::CString::new(p.as_os_str().as_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    }

    #[test]
    fn a_fifo_without_reader_fails_at_once_and_one_with_a_reader_gets_the_bytes() {
        let d = scratch("fifo");
        let p = d.join("f");
        mkfifo(&p);
        let e = open_output(&p, true).unwrap_err();
        assert!(e.to_string().contains("no process has open for reading"), "{e}");
        let e = open_output(&p, false).unwrap_err();
        assert!(e.to_string().contains("regular files only"), "{e}");
        // A reader, opened non-blocking so this thread can then open the writing end.
        let reader = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&p)
            .unwrap();
        let o = open_output(&p, true).unwrap();
        assert_eq!(o.kind, Kind::Stream);
        write_all(&o.file, b"line\n", &|| false).unwrap();
        let mut got = [0u8; 16];
        let n = io::Read::read(&mut &reader, &mut got).unwrap();
        assert_eq!(&got[..n], b"line\n");
        // A full pipe whose reader never reads: write_all gives up when told to.
        let big = vec![b'x'; 1 << 20];
        let e = write_all(&o.file, &big, &|| true).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::TimedOut);
        drop(reader);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn directories_are_refused_not_given_siblings() {
        let d = scratch("dir");
        let e = open_output(&d, true).unwrap_err();
        assert!(e.to_string().contains("directory"), "{e}");
        let with_slash = PathBuf::from(format!("{}/", d.display()));
        assert!(open_output(&with_slash, true).is_err());
        assert_eq!(std::fs::read_dir(&d).unwrap().count(), 0, "nothing created inside");
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_link_to_a_character_device_is_a_stream() {
        let d = scratch("chr");
        std::os::unix::fs::symlink("/dev/null", d.join("null")).unwrap();
        let o = open_output(&d.join("null"), true).unwrap();
        assert_eq!(o.kind, Kind::Stream);
        write_all(&o.file, b"gone\n", &|| false).unwrap();
        assert!(open_output(&d.join("null"), false).is_err());
        let o = open_output(Path::new("/dev/null"), true).unwrap();
        assert_eq!((o.kind, o.sibling), (Kind::Stream, false));
        std::fs::remove_dir_all(&d).unwrap();
    }
}
