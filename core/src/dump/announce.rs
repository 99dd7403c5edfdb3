//! Telling `framescope run` where a dump went: `run` stays the app's parent, so that after the
//! app ends for any reason (Ctrl+C, a crash, `kill -9`) it can complete a dump left without
//! its summary. It names an empty private directory of its own in [`RUN_DUMPS_ENV`]; each
//! process's dump writer, once its file is open, writes the file's absolute path into
//! `<dir>/<pid>` (a new file, never through a link). Without the variable nothing is written.

use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// The directory `framescope run` reads the dumps' paths from.
pub const RUN_DUMPS_ENV: &str = "FRAMESCOPE_RUN_DUMPS";

/// Records `path` (the dump just opened) for `framescope run`, when it asked. Failures are
/// silent: the dump itself is unaffected, and `run` then only cannot complete it.
pub fn announce(path: &Path) {
    let Some(dir) = std::env::var_os(RUN_DUMPS_ENV).filter(|d| !d.is_empty()) else {
        return;
    };
    let absolute = match path.is_absolute() {
        true => path.to_path_buf(),
        false => match std::env::current_dir() {
            Ok(cwd) => cwd.join(path),
            Err(_) => return,
        },
    };
    let file = Path::new(&dir).join(std::process::id().to_string());
    let opened = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(file);
    if let Ok(mut f) = opened {
        let _ = f.write_all(absolute.as_os_str().as_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_absolute_path_is_written_once_under_the_pid() {
        let dir = tempfile_dir();
        // SAFETY of the environment: this test alone sets the variable in this process.
        std::env::set_var(RUN_DUMPS_ENV, &dir);
        announce(Path::new("rel/d.jsonl"));
        announce(Path::new("/second.jsonl"));
        std::env::remove_var(RUN_DUMPS_ENV);
        let written = std::fs::read(dir.join(std::process::id().to_string())).unwrap();
        let want = std::env::current_dir().unwrap().join("rel/d.jsonl");
        assert_eq!(written, want.as_os_str().as_bytes(), "the first path stays");
        let _ = std::fs::remove_dir_all(&dir);
    }

    fn tempfile_dir() -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("fs-announce-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir(&d).unwrap();
        d
    }
}
