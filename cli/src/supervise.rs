//! `framescope run` as the app's parent: it starts the app, passes on the signals sent to it,
//! waits, completes every dump the app's processes left without a summary (recomputed from the
//! frames, saying how the app ended), and ends as the app did: the same exit code, or killed by
//! the same signal (without a core file of its own).
//!
//! framescope installs no signal handler in the app, so a dump's summary, written at exit,
//! is missing whenever a signal ends the app; this is the one place that can add it.
//!
//! Signals: a terminal's Ctrl+C (or Ctrl+\) reaches the whole foreground process group, the app
//! included, so those are not passed on again; one sent to `framescope run` alone (`kill`,
//! `timeout`) is passed on to the app. The app dies with `framescope run` (`PR_SET_PDEATHSIG`),
//! as it did when it replaced this process: `kill -9` of `run` still ends the app.

use crate::text::show;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};
use std::time::Duration;

/// The signals passed on to the app.
const FORWARDED: [libc::c_int; 7] = [
    libc::SIGINT,
    libc::SIGTERM,
    libc::SIGHUP,
    libc::SIGQUIT,
    libc::SIGUSR1,
    libc::SIGUSR2,
    libc::SIGALRM,
];

/// How often the wait looks at the app between signals.
const POLL: Duration = Duration::from_millis(50);

fn forwarded_set() -> libc::sigset_t {
    // SAFETY: sigemptyset/sigaddset initialise and fill a set we own.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for s in FORWARDED {
            libc::sigaddset(&mut set, s);
        }
        set
    }
}

/// Runs `c` (the app, its environment set), with `dumps` the directory its dump writers report
/// their files in; the exit code to end with, when the app did not die by a signal (then this
/// process dies by it).
pub fn run(mut c: Command, cmd: &OsStr, dumps: Option<&Path>) -> i32 {
    let set = forwarded_set();
    // Blocked here before the app starts, so none is lost between the start and the wait; the
    // child would inherit the mask (std leaves it as it is), so it unblocks them before exec.
    // SAFETY: pthread_sigmask on this thread with a set we own.
    unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) };
    // SAFETY: prctl and pthread_sigmask are async-signal-safe; the first asks for SIGKILL when
    // this parent goes, the second gives the app the mask this process was started with.
    unsafe {
        c.pre_exec(move || {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
            Ok(())
        });
    }
    let mut child = match c.spawn() {
        Ok(ch) => ch,
        Err(err) => {
            eprintln!("framescope run: cannot run '{}': {err}", show(cmd));
            return if err.kind() == std::io::ErrorKind::NotFound {
                127
            } else {
                126
            };
        }
    };
    let pid = child.id() as libc::pid_t;
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break s,
            Ok(None) => {}
            Err(e) => {
                eprintln!("framescope run: cannot wait for the app: {e}");
                return 1;
            }
        }
        let timeout = libc::timespec {
            tv_sec: 0,
            tv_nsec: POLL.as_nanos() as libc::c_long,
        };
        // SAFETY: a zeroed siginfo_t is valid to be filled in.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: waits for one of the blocked signals of `set`, up to `timeout`.
        let sig = unsafe { libc::sigtimedwait(&set, &mut info, &timeout) };
        // The terminal's signals (si_code SI_KERNEL) reached the app's process group already.
        if sig > 0 && info.si_code != libc::SI_KERNEL {
            // SAFETY: kill with the app's pid, still ours to wait for.
            unsafe { libc::kill(pid, sig) };
        }
    };
    if let Some(dir) = dumps {
        complete_dumps(dir, &ended_by(status));
        // Gone before this process may end by the app's signal, which skips every destructor.
        let _ = std::fs::remove_dir_all(dir);
    }
    match status.signal() {
        Some(sig) => die_by(sig),
        None => status.code().unwrap_or(1),
    }
}

/// How the app ended, for a completed summary's `ended_by` (its `produced_by` is
/// `framescope run`).
pub fn ended_by(status: ExitStatus) -> String {
    match (status.code(), status.signal()) {
        (_, Some(sig)) => format!("killed by {}", signal_name(sig)),
        (Some(code), None) => format!("exited with status {code} without writing it"),
        (None, None) => "ended".into(),
    }
}

fn signal_name(sig: i32) -> String {
    // SAFETY: strsignal returns a static or thread-local string for any number.
    let s = unsafe { libc::strsignal(sig) };
    let abbrev = match sig {
        libc::SIGINT => "SIGINT",
        libc::SIGTERM => "SIGTERM",
        libc::SIGKILL => "SIGKILL",
        libc::SIGHUP => "SIGHUP",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGILL => "SIGILL",
        libc::SIGPIPE => "SIGPIPE",
        _ => "",
    };
    let text = if s.is_null() {
        String::new()
    } else {
        // SAFETY: strsignal's result is NUL-terminated.
        unsafe { std::ffi::CStr::from_ptr(s) }.to_string_lossy().into_owned()
    };
    match (abbrev.is_empty(), text.is_empty()) {
        (false, false) => format!("{abbrev} ({text})"),
        (false, true) => abbrev.to_string(),
        _ => format!("signal {sig}"),
    }
}

/// Every dump reported in `dir` that has no summary gets one, appended (never through a link;
/// a cut last line first gets its newline, so the summary is a line of its own).
fn complete_dumps(dir: &Path, ended_by: &str) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        // One file per process, holding its dump's path; bounded like a path.
        let Ok(bytes) = std::fs::read(e.path()) else { continue };
        if bytes.is_empty() || bytes.len() > 4096 {
            continue;
        }
        let path = PathBuf::from(OsStr::from_bytes(&bytes));
        match complete(&path, ended_by) {
            Ok(true) => eprintln!(
                "framescope run: the app ended ({ended_by}); its dump '{}' had no summary: completed from its frames",
                show(path.as_os_str())
            ),
            Ok(false) => {}
            Err(err) => eprintln!(
                "framescope run: cannot complete the dump '{}': {err}",
                show(path.as_os_str())
            ),
        }
    }
}

/// Appends the summary `path` lacks; whether it did.
fn complete(path: &Path, ended_by: &str) -> std::io::Result<bool> {
    let Some(line) = crate::report::completion(path, ended_by)? else {
        return Ok(false);
    };
    use std::io::{Read, Seek, SeekFrom, Write};
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .append(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)?;
    let len = f.metadata()?.len();
    let mut last = [0u8; 1];
    if len > 0 {
        f.seek(SeekFrom::Start(len - 1))?;
        f.read_exact(&mut last)?;
    }
    let mut out = Vec::with_capacity(line.len() + 2);
    if len > 0 && last[0] != b'\n' {
        out.push(b'\n');
    }
    out.extend_from_slice(line.as_bytes());
    out.push(b'\n');
    f.write_all(&out)?;
    Ok(true)
}

/// Ends this process by `sig`, as the app ended, without a core file of framescope's.
fn die_by(sig: i32) -> i32 {
    let no_core = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: setrlimit, signal, sigprocmask and raise with valid arguments; if `sig` does not
    // end the process (it is ignored by default), 128 + sig is returned as a shell would show.
    unsafe {
        libc::setrlimit(libc::RLIMIT_CORE, &no_core);
        libc::signal(sig, libc::SIG_DFL);
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, sig);
        libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
        libc::raise(sig);
    }
    128 + sig
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn how_the_app_ended_is_said_in_words() {
        assert_eq!(
            ended_by(ExitStatus::from_raw(libc::SIGINT)),
            "killed by SIGINT (Interrupt)"
        );
        assert_eq!(
            ended_by(ExitStatus::from_raw(3 << 8)),
            "exited with status 3 without writing it"
        );
    }
}
