//! Output files the CLI writes (exports, plots).

use std::fs::{File, Metadata, OpenOptions};
use std::io;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::Path;

/// A file's identity (device and inode): two paths, or a path and a hard link to it, name
/// the same file exactly when these match.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileId {
    dev: u64,
    ino: u64,
}

impl FileId {
    pub fn of(m: &Metadata) -> FileId {
        FileId {
            dev: m.dev(),
            ino: m.ino(),
        }
    }

    /// The identity of the file `path` names (following links, as reading it does); `None`
    /// when it cannot be looked at (then it cannot be read either, and that error comes
    /// from the read).
    pub fn of_path(path: &Path) -> Option<FileId> {
        std::fs::metadata(path).ok().map(|m| FileId::of(&m))
    }

    /// The identity of what is at `path` itself, not following a symbolic link: what an
    /// output opened there would be (a link there is refused, for being a link).
    pub fn at_path(path: &Path) -> Option<FileId> {
        std::fs::symlink_metadata(path).ok().map(|m| FileId::of(&m))
    }
}

/// Opens `path` for writing from its start: created (mode 0644 less the umask) if it does
/// not exist, emptied if it does, but only once it is known to be a regular file that is none
/// of `inputs` (the files the command reads). An output named like an input, or a hard link
/// to one, is refused with the input untouched: the open itself does not truncate
/// (`O_TRUNC` would empty the input before any check could see it), the file is emptied only
/// after the check, through the same descriptor. A link planted at the path is refused rather
/// than followed (`O_NOFOLLOW`), and `O_NONBLOCK` keeps a FIFO from blocking the open.
pub fn create_output(path: &Path, inputs: &[FileId]) -> io::Result<File> {
    let file = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o644)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            Some(libc::ELOOP) => io::Error::other(
                "it is a symbolic link, and framescope never writes through one (name the target itself)",
            ),
            _ => e,
        })?;
    let m = file.metadata()?;
    if !m.is_file() {
        return Err(io::Error::other("it is not a regular file"));
    }
    if inputs.contains(&FileId::of(&m)) {
        return Err(io::Error::other(
            "it is a file this command reads (the same file or a hard link to it); name another output",
        ));
    }
    file.set_len(0)?;
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn outputs_are_truncated_and_links_refused() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("out.csv");
        std::fs::write(&p, "old content that is long").unwrap();
        create_output(&p, &[]).unwrap().write_all(b"new").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"new");
        let target = dir.path().join("target");
        std::fs::write(&target, "keep").unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let e = create_output(&link, &[]).unwrap_err().to_string();
        assert!(e.contains("symbolic link"), "{e}");
        assert_eq!(std::fs::read(&target).unwrap(), b"keep");
        assert!(create_output(dir.path(), &[]).is_err());
    }

    #[test]
    fn an_input_by_its_own_name_or_a_hard_link_is_refused_and_kept_whole() {
        let dir = tempfile::tempdir().unwrap();
        let input = dir.path().join("in.jsonl");
        std::fs::write(&input, "the dump").unwrap();
        let hard = dir.path().join("hard.csv");
        std::fs::hard_link(&input, &hard).unwrap();
        let ids = [FileId::of_path(&input).unwrap()];
        for p in [&input, &hard] {
            let e = create_output(p, &ids).unwrap_err().to_string();
            assert!(e.contains("a file this command reads"), "{e}");
            assert_eq!(std::fs::read(&input).unwrap(), b"the dump");
        }
        // Another file is still emptied and written.
        let other = dir.path().join("other.csv");
        std::fs::write(&other, "old").unwrap();
        create_output(&other, &ids).unwrap().write_all(b"x").unwrap();
        assert_eq!(std::fs::read(&other).unwrap(), b"x");
    }
}
