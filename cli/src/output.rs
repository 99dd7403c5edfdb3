//! Output files the CLI writes (exports, plots).

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// Creates or truncates `path` for writing: `O_CREAT|O_TRUNC|O_NOFOLLOW`, mode 0644 (less
/// the umask). A link planted at the path is refused rather than followed, and anything but
/// a regular file is refused (`O_NONBLOCK` keeps a FIFO from blocking the open).
pub fn create_output(path: &Path) -> io::Result<File> {
    let file = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o644)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            Some(libc::ELOOP) => io::Error::other(
                "it is a symbolic link, and framescope never writes through one (name the target itself)",
            ),
            _ => e,
        })?;
    if !file.metadata()?.is_file() {
        return Err(io::Error::other("it is not a regular file"));
    }
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
        create_output(&p).unwrap().write_all(b"new").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"new");
        let target = dir.path().join("target");
        std::fs::write(&target, "keep").unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let e = create_output(&link).unwrap_err().to_string();
        assert!(e.contains("symbolic link"), "{e}");
        assert_eq!(std::fs::read(&target).unwrap(), b"keep");
        assert!(create_output(dir.path()).is_err());
    }
}
