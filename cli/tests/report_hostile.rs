//! `framescope report` on inputs made to hurt it: endless or huge files, over-long lines,
//! hostile numbers, forged summaries, control characters. Each must end with a clear answer,
//! within a memory bound (the child's peak RSS, from `wait4`), and never panic.

use std::io::Write;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const MIB: i64 = 1 << 20;
const MS: u64 = 1_000_000;

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
    /// Peak resident set of the report process, in bytes.
    max_rss: i64,
}

/// Runs `framescope report args`, with its address space capped at 1 GiB so a reader that
/// grows without bound fails here instead of taking the machine's memory, and killed after a
/// generous 120 s (a hang, not a timing).
fn report(args: &[&str]) -> Run {
    let dir = std::env::temp_dir();
    let tag = format!("{}-{}", std::process::id(), unique());
    let out = dir.join(format!("framescope-hostile-{tag}.out"));
    let err = dir.join(format!("framescope-hostile-{tag}.err"));
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_framescope"));
    cmd.arg("report")
        .args(args)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&err).unwrap());
    // SAFETY: setrlimit is async-signal-safe and touches nothing of the parent.
    unsafe {
        cmd.pre_exec(|| {
            let lim = libc::rlimit {
                rlim_cur: 1 << 30,
                rlim_max: 1 << 30,
            };
            if libc::setrlimit(libc::RLIMIT_AS, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    // Reaped below with wait4, which `Child::wait` cannot do: it loses the child's rusage.
    #[allow(clippy::zombie_processes)]
    let child = cmd.spawn().unwrap();
    let pid = child.id() as libc::pid_t;
    let start = Instant::now();
    let (mut status, mut usage) = (0, unsafe { std::mem::zeroed::<libc::rusage>() });
    loop {
        // SAFETY: our own child; status and usage are valid out-pointers.
        let r = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut usage) };
        assert!(r >= 0, "wait4: {}", std::io::Error::last_os_error());
        if r == pid {
            break;
        }
        if start.elapsed() > Duration::from_secs(120) {
            // SAFETY: our own child, not yet reaped.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            panic!("framescope report {args:?} still running after 120 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let code = if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        -libc::WTERMSIG(status)
    };
    let run = Run {
        code,
        stdout: String::from_utf8_lossy(&std::fs::read(&out).unwrap()).into_owned(),
        stderr: String::from_utf8_lossy(&std::fs::read(&err).unwrap()).into_owned(),
        // ru_maxrss is in KiB on Linux (getrusage(2)).
        max_rss: usage.ru_maxrss * 1024,
    };
    let _ = std::fs::remove_file(out);
    let _ = std::fs::remove_file(err);
    run
}

fn unique() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    N.fetch_add(1, Ordering::Relaxed)
}

fn temp_path(tag: &str) -> PathBuf {
    std::env::temp_dir().join(format!("framescope-hostile-{}-{tag}.jsonl", std::process::id()))
}

const HEADER: &str =
    r#"{"type":"header","schema":"framescope.v1","pid":7,"exe":"/bin/app","api":"vulkan","device":null}"#;

fn frame(i: u64, t: u64, ft: Option<u64>, gpu: Option<u64>) -> String {
    let n = |v: Option<u64>| v.map_or("null".to_string(), |v| v.to_string());
    format!(
        r#"{{"type":"frame","frame":{i},"t_ns":{t},"cpu_frame_ns":{},"gpu_busy_ns":{},"gpu_span_ns":null,"draws":0,"dispatches":0,"submits":0,"counters":{{}},"gpu_missing":"disabled"}}"#,
        n(ft),
        n(gpu)
    )
}

fn assert_one_clean_error(r: &Run) {
    assert_eq!(r.code, 1, "stdout {}\nstderr {}", r.stdout, r.stderr);
    assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
    assert!(!r.stderr.contains("panicked"), "{}", r.stderr);
}

#[test]
fn dev_zero_ends_with_one_line_in_bounded_memory() {
    let r = report(&["/dev/zero"]);
    assert_one_clean_error(&r);
    assert!(
        r.stderr
            .starts_with("framescope: '/dev/zero' is not a framescope dump (nothing readable"),
        "{}",
        r.stderr
    );
    assert!(r.max_rss < 64 * MIB, "peak RSS {} MiB", r.max_rss / MIB);
}

#[test]
fn two_hundred_mb_of_newlines_in_bounded_memory() {
    let path = temp_path("newlines");
    let mut f = std::fs::File::create(&path).unwrap();
    let block = vec![b'\n'; 1 << 20];
    for _ in 0..200 {
        f.write_all(&block).unwrap();
    }
    drop(f);
    let r = report(&[path.to_str().unwrap()]);
    std::fs::remove_file(&path).unwrap();
    assert_one_clean_error(&r);
    assert!(r.stderr.contains("is not a framescope dump"), "{}", r.stderr);
    assert!(r.max_rss < 64 * MIB, "peak RSS {} MiB", r.max_rss / MIB);
}

#[test]
fn a_100_mb_line_is_skipped_without_being_kept() {
    let path = temp_path("longline");
    let mut f = std::fs::File::create(&path).unwrap();
    writeln!(f, "{HEADER}").unwrap();
    writeln!(f, "{}", frame(0, 1_000, None, None)).unwrap();
    let block = vec![b'x'; 1 << 20];
    for _ in 0..100 {
        f.write_all(&block).unwrap();
    }
    writeln!(f).unwrap();
    writeln!(f, "{}", frame(1, 1_000 + 10 * MS, Some(10 * MS), None)).unwrap();
    // And a last line of 100 MB without a newline.
    for _ in 0..100 {
        f.write_all(&block).unwrap();
    }
    drop(f);
    let r = report(&[path.to_str().unwrap()]);
    std::fs::remove_file(&path).unwrap();
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("frames      2\n"), "{}", r.stdout);
    assert!(
        r.stdout.contains("note: 2 line(s) longer than 16 MiB were skipped"),
        "{}",
        r.stdout
    );
    assert!(r.max_rss < 64 * MIB, "peak RSS {} MiB", r.max_rss / MIB);
}

#[test]
fn a_huge_forged_summary_is_not_buffered() {
    let path = temp_path("bigsummary");
    let mut f = std::fs::File::create(&path).unwrap();
    writeln!(f, "{HEADER}").unwrap();
    writeln!(f, "{}", frame(0, 1_000, None, None)).unwrap();
    // 15 MiB of array elements in an unknown field of a summary line.
    f.write_all(br#"{"type":"summary","padding":["#).unwrap();
    let block = "0,".repeat(1 << 19);
    for _ in 0..15 {
        f.write_all(block.as_bytes()).unwrap();
    }
    f.write_all(
        b"0]}
",
    )
    .unwrap();
    drop(f);
    let r = report(&[path.to_str().unwrap()]);
    std::fs::remove_file(&path).unwrap();
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stdout
            .contains("note: 1 line(s) could not be read and were ignored: 3\n"),
        "{}",
        r.stdout
    );
    assert!(r.max_rss < 64 * MIB, "peak RSS {} MiB", r.max_rss / MIB);
}

#[test]
fn hostile_numbers_and_a_forged_summary_are_ignored_and_counted() {
    let path = temp_path("numbers");
    let max = u64::MAX;
    let lines = [
        HEADER.to_string(),
        frame(0, 1_000, None, Some(2 * MS)),
        frame(1, 1_000 + 10 * MS, Some(10 * MS), Some(2 * MS)),
        // Frame time and GPU time no frame can have.
        frame(2, 1_000 + 20 * MS, Some(max), Some(max)),
        // Repeated, then going back in time.
        frame(2, 1_000 + 20 * MS, Some(10 * MS), Some(2 * MS)),
        frame(1, 1_000 + 5 * MS, Some(10 * MS), Some(2 * MS)),
        frame(3, 1_000 + 30 * MS, Some(10 * MS), Some(2 * MS)),
        // Index jumps no clock allows (one would overflow `prev + 1` after it).
        frame(max, 1_000 + 40 * MS, Some(10 * MS), Some(2 * MS)),
        frame(max, 1_000 + 50 * MS, Some(10 * MS), Some(2 * MS)),
        frame(4, 1_000 + 40 * MS, Some(10 * MS), Some(2 * MS)),
        // A summary claiming a perfect run.
        r#"{"type":"summary","frames":1000000,"duration_ns":1000000000,"fps_mean":1000000.0,"frame_time_ns":null,"low_1pct_fps":null,"low_0_1pct_fps":null,"gpu_busy_ns":null,"gpu_missing_frames":0,"dropped_frames":0,"dropped_samples":0,"produced_by":"writer","ended_by":"finish"}"#.to_string(),
    ];
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    let r = report(&[path.to_str().unwrap()]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let out = &r.stdout;
    // Frames 0, 1, 2 (its values dropped), 3 and 4; 40 ms; 3 frame times of 10 ms.
    assert!(out.contains("frames      5\n"), "{out}");
    assert!(out.contains("duration    0.040 s\n"), "{out}");
    assert!(out.contains("fps mean    100.00 fps\n"), "{out}");
    assert!(
        out.contains("note: 2 frame record(s) not after the previous frame"),
        "{out}"
    );
    assert!(
        out.contains("note: 2 frame record(s) whose index skips more frames than nanoseconds"),
        "{out}"
    );
    assert!(out.contains("dropped     0 frames\n"), "{out}");
    assert!(
        out.contains("note: 1 frame time(s) longer than the time since the previous frame were ignored"),
        "{out}"
    );
    assert!(
        out.contains("note: 1 gpu busy time(s) over 3600 s were ignored"),
        "{out}"
    );
    assert!(
        out.contains("note: the dump's summary record (by writer, ended by finish) disagrees"),
        "{out}"
    );
    assert!(out.contains("1000000 frames"), "{out}");
    assert!(!out.contains("1000000.00 fps"), "{out}");
    // --json gives the recomputed record.
    let r = report(&["--json", path.to_str().unwrap()]);
    std::fs::remove_file(&path).unwrap();
    assert_eq!(r.code, 0, "{}", r.stderr);
    let s: serde_json::Value = serde_json::from_str(r.stdout.trim()).unwrap();
    assert_eq!(s["produced_by"], "report");
    assert_eq!(s["frames"], 5);
    assert_eq!(s["frame_time_ns"]["max"], 10 * MS);
    assert!(r.stderr.contains("disagrees"), "{}", r.stderr);
}

#[test]
fn control_characters_are_escaped_and_bad_lines_capped() {
    let path = temp_path("escape");
    let mut lines = vec![
        r#"{"type":"header","schema":"framescope.v1\u001b[2J","pid":7,"exe":"/bin/\u001b]0;owned\u0007app\u202e","api":"vulkan\r","device":{"name":"GPU\u001b[31m","vendor_id":1,"device_id":2,"driver_name":"drv\n","driver_version":"1\b"}}"#.to_string(),
        frame(0, 1_000, None, None),
    ];
    for _ in 0..25 {
        lines.push("not json \u{1b}[2J".to_string());
    }
    lines.push(frame(1, 1_000 + 10 * MS, Some(10 * MS), None));
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    let r = report(&[path.to_str().unwrap()]);
    std::fs::remove_file(&path).unwrap();
    assert_eq!(r.code, 0, "{}", r.stderr);
    let out = &r.stdout;
    assert!(
        !out.chars().any(|c| c.is_control() && c != '\n') && !out.contains('\u{202e}'),
        "{out:?}"
    );
    assert!(
        out.contains(r"exe         /bin/\u{1b}]0;owned\u{7}app\u{202e} (pid 7)"),
        "{out}"
    );
    assert!(
        out.contains(r"GPU\u{1b}[31m [0001:0002], driver drv\u{a} 1\u{8}"),
        "{out}"
    );
    assert!(out.contains(r"schema is framescope.v1\u{1b}[2J"), "{out}");
    assert!(
        out.contains(
            "note: 25 line(s) could not be read and were ignored: 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, and 15 more\n"
        ),
        "{out}"
    );
}

#[test]
fn a_path_that_is_not_utf8_is_read() {
    use std::os::unix::ffi::OsStrExt;
    let dir = std::env::temp_dir();
    let name = std::ffi::OsStr::from_bytes(b"framescope-hostile-caf\xe9.jsonl");
    let path = dir.join(name);
    std::fs::write(&path, format!("{HEADER}\n{}\n", frame(0, 1_000, None, None))).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_framescope"))
        .arg("report")
        .arg(&path)
        .output()
        .unwrap();
    std::fs::remove_file(&path).unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("framescope-hostile-caf\u{fffd}.jsonl"), "{stdout}");
    assert!(stdout.contains("frames      1\n"), "{stdout}");
}
