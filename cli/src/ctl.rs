//! `framescope ctl PID start|stop|mark LABEL|status`: one request to a running app's control
//! socket (see `framescope_core::ctl`), its JSON reply printed.

use crate::text::{escape, show};
use crate::usage::usage_error;
use std::ffi::OsString;
use std::io::{BufRead, BufReader, ErrorKind, Read, Write};
use std::os::unix::net::UnixStream;
use std::time::Duration;

/// `ctl`'s usage lines (clap's own would not show the requests).
pub const USAGE: &str = "\
framescope ctl PID start|stop|status
       framescope ctl PID mark LABEL...";

/// `ctl --help`'s description.
pub const ABOUT: &str = "\
Controls a running app under framescope that writes a dump (config ctl=1, the default),
through its socket $XDG_RUNTIME_DIR/framescope/PID.sock, which only the same user can reach.

  start         write frames to the dump from now (see dump_paused)
  stop          stop writing frames from now; the dump stays open
  mark LABEL    a `mark` record at this moment (in the dump, `report` and the Perfetto export)
  status        whether frames are being written, and the marks so far

Prints the app's JSON reply; exit status 0 when it said ok, 1 otherwise, 2 on bad arguments.";

pub const EXAMPLES: &str = "\
examples:
  framescope run --config dump_paused=1 -- ./game &
  framescope ctl $! start; sleep 30; framescope ctl $! mark boss-fight; framescope ctl $! stop";

// `ctl`'s arguments (a plain comment: a doc comment would become clap's about text). They are
// checked by `main`, which names what is wrong with them.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// the app's process id
    #[arg(value_name = "PID")]
    pub pid: OsString,
    /// start, stop, status, or mark and the label's words
    #[arg(
        value_name = "REQUEST",
        required = true,
        num_args = 1..,
        trailing_var_arg = true,
        allow_hyphen_values = true
    )]
    pub request: Vec<OsString>,
}

/// Longest reply read.
const MAX_REPLY: u64 = 64 << 10;

pub fn main(args: Args) -> i32 {
    let args: Vec<OsString> = std::iter::once(args.pid).chain(args.request).collect();
    let text: Option<Vec<&str>> = args.iter().map(|a| a.to_str()).collect();
    let Some(text) = text else {
        let bad = args
            .iter()
            .find(|a| a.to_str().is_none())
            .map(|a| show(a))
            .unwrap_or_default();
        return usage_error::<Args>("ctl", &format!("framescope: ctl: '{bad}' is not text"));
    };
    let (pid, request) = match text.as_slice() {
        [pid, cmd @ ("start" | "stop" | "status")] => (*pid, cmd.to_string()),
        [pid, "mark", label @ ..] if !label.is_empty() => (*pid, format!("mark {}", label.join(" "))),
        _ => {
            return usage_error::<Args>("ctl", "framescope: ctl: expected PID and a request");
        }
    };
    let Some(pid) = pid.parse::<u32>().ok().filter(|&p| p > 0) else {
        return usage_error::<Args>(
            "ctl",
            &format!("framescope: ctl: '{}' is not a process id", escape(pid)),
        );
    };
    if request.contains('\n') || request.len() > 1000 {
        eprintln!("framescope: ctl: the request must be one line of at most 1000 bytes");
        return 2;
    }
    let pid = resolve(pid);
    match send(pid, &request) {
        Ok(reply) => {
            println!("{reply}");
            let ok = serde_json::from_str::<serde_json::Value>(&reply).is_ok_and(|v| v["ok"] == true);
            if !ok {
                eprintln!("framescope: ctl: process {pid} refused '{}'", escape(&request));
            }
            i32::from(!ok)
        }
        Err(e) => {
            eprintln!("framescope: ctl: {e}");
            1
        }
    }
}

/// The process to ask for `pid`: itself when it has a socket; else, for the pid of a
/// `framescope run` (the app's parent since `run` stays to complete the dump), the one process
/// below it (children first, three levels at most) that has one; else `pid` as given, whose
/// error then names it.
fn resolve(pid: u32) -> u32 {
    let has_socket = |p: u32| framescope_core::ctl::socket_path(p).is_some_and(|s| s.exists());
    if has_socket(pid) {
        return pid;
    }
    let children = |p: u32| -> Vec<u32> {
        std::fs::read_to_string(format!("/proc/{p}/task/{p}/children"))
            .unwrap_or_default()
            .split_whitespace()
            .filter_map(|c| c.parse().ok())
            .collect()
    };
    let mut level = vec![pid];
    for _ in 0..3 {
        level = level.into_iter().flat_map(children).take(64).collect();
        let found: Vec<u32> = level.iter().copied().filter(|&p| has_socket(p)).collect();
        if let [one] = found.as_slice() {
            return *one;
        }
        if found.len() > 1 {
            break;
        }
    }
    pid
}

fn send(pid: u32, request: &str) -> Result<String, String> {
    let path = framescope_core::ctl::socket_path(pid).ok_or("XDG_RUNTIME_DIR is not set to an absolute path")?;
    let dir = path.parent().unwrap_or(&path);
    // The same checks the app made: never talk through a directory someone else controls.
    framescope_core::ctl::dir_is_private(dir).map_err(|e| format!("no usable control directory: {e}"))?;
    let s = UnixStream::connect(&path).map_err(|e| {
        format!(
            "cannot reach process {pid} at {}: {e} (is it running under framescope, dumping, with ctl=1?)",
            path.display()
        )
    })?;
    s.set_read_timeout(Some(WAIT)).map_err(|e| e.to_string())?;
    s.set_write_timeout(Some(WAIT)).map_err(|e| e.to_string())?;
    let silent = |e: &std::io::Error| {
        if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) {
            format!(
                "process {pid} gave no answer within {} s (is it stopped, e.g. by SIGSTOP or a debugger, or hung?)",
                WAIT.as_secs()
            )
        } else {
            format!("no reply from process {pid}: {e}")
        }
    };
    // A write the app cut short (it refused the request) may still have left its reply.
    let sent = (&s).write_all(format!("{request}\n").as_bytes());
    let mut reply = String::new();
    let read = BufReader::new((&s).take(MAX_REPLY)).read_line(&mut reply);
    let reply = reply.trim_end().to_string();
    if reply.is_empty() {
        return Err(match (sent, read) {
            (Err(e), _) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => silent(&e),
            (Err(e), _) => format!("cannot send to process {pid}: {e}"),
            (Ok(()), Err(e)) => silent(&e),
            (Ok(()), Ok(_)) => format!("no reply from process {pid}"),
        });
    }
    Ok(escape(&reply))
}

/// How long `ctl` waits for the app to take its request and answer.
const WAIT: Duration = Duration::from_secs(5);
