//! Whole-process behaviour: a dump survives `kill -9` with every line whole, and an
//! unwritable dump path costs exactly one stderr line. The child processes are this test
//! binary re-run on the ignored `child` test with `FRAMESCOPE_TEST_CHILD` set.

mod common;

use framescope_core::dump::{Api, CounterDesc, DumpOptions, DumpWriter, Header};
use framescope_core::frame::{FrameRecord, SwapchainInfo};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const CHILD_ENV: &str = "FRAMESCOPE_TEST_CHILD";
const PATH_ENV: &str = "FRAMESCOPE_TEST_CHILD_PATH";

fn spawn_child(mode: &str, path: &str) -> Command {
    let mut c = Command::new(std::env::current_exe().unwrap());
    c.args(["--exact", "child", "--ignored", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, mode)
        .env(PATH_ENV, path)
        .stdin(Stdio::null());
    c
}

/// Body of the child processes; does nothing unless started by the tests below.
#[test]
#[ignore = "child process of the tests in this file"]
fn child() {
    let (Ok(mode), Ok(path)) = (std::env::var(CHILD_ENV), std::env::var(PATH_ENV)) else {
        return;
    };
    let mut h = Header::new(Api::Vulkan);
    h.counters = (0..8)
        .map(|i| CounterDesc {
            name: format!("c{i}"),
            unit: "count".into(),
            source: "test".into(),
            scope: "frame".into(),
        })
        .collect();
    if mode == "sigpipe" {
        // What a C app has: SIGPIPE's default action, terminating the process (the Rust test
        // harness ignores it).
        // SAFETY: resetting a signal disposition to its default in this child process.
        unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    }
    let w = DumpWriter::start(DumpOptions::new(path), h);
    w.finish_at_exit();
    let mut prev = None;
    let mut frame = |i: u64| {
        let t = framescope_core::clock::monotonic_now_ns();
        let mut r = FrameRecord {
            frame: i,
            t_ns: t,
            cpu_frame_ns: prev.map(|p| t - p),
            ..FrameRecord::default()
        };
        r.swapchain = Some(SwapchainInfo {
            handle: 0x1234,
            width: 640,
            height: 480,
            format: 50,
            present_mode: 2,
        });
        for c in 0..8u16 {
            r.counters.set(usize::from(c), (i * 1000 + u64::from(c)) as f64 / 7.0);
        }
        prev = Some(t);
        w.push(r);
    };
    match mode.as_str() {
        // Pushes frames until killed.
        "forever" => {
            for i in 0.. {
                frame(i);
                std::thread::sleep(Duration::from_micros(200));
            }
        }
        // Frames for a while (the parent closes the FIFO's reading end meanwhile), then finish.
        "sigpipe" => {
            for i in 0..200 {
                frame(i);
                std::thread::sleep(Duration::from_millis(5));
            }
            w.finish();
        }
        // A few frames, then a normal exit: the atexit hook writes the summary.
        "exit" => {
            for i in 0..10 {
                frame(i);
            }
            std::process::exit(0);
        }
        _ => {
            frame(0);
            std::thread::sleep(Duration::from_millis(200));
            w.finish();
        }
    }
}

#[test]
fn kill_9_leaves_only_whole_lines() {
    for (round, kill_after_lines) in [50usize, 400, 1500].into_iter().enumerate() {
        let path = common::temp_path(&format!("kill9-{round}"));
        let mut c = spawn_child("forever", path.to_str().unwrap())
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        let t = Instant::now();
        loop {
            let lines = std::fs::read_to_string(&path).map(|s| s.lines().count()).unwrap_or(0);
            if lines >= kill_after_lines {
                break;
            }
            assert!(t.elapsed() < Duration::from_secs(30), "child wrote only {lines} lines");
            std::thread::sleep(Duration::from_millis(3));
        }
        c.kill().unwrap(); // SIGKILL
        c.wait().unwrap();
        // A kill inside the writer's one `write` per batch may cut its last line (rare: seen
        // once in a CI rehearsal); everything before it is whole.
        let (lines, cut) = common::read_lines_of_killed(&path);
        let checked = common::check_structure(&lines);
        assert!(
            checked.summary.is_none(),
            "a killed writer cannot have written the summary"
        );
        assert!(checked.frames.len() + 1 + usize::from(cut) >= kill_after_lines);
        std::fs::remove_file(&path).unwrap();
    }
}

#[test]
fn exit_without_finish_writes_the_summary_from_the_atexit_hook() {
    let path = common::temp_path("atexit");
    let out = spawn_child("exit", path.to_str().unwrap()).output().unwrap();
    assert!(out.status.success());
    let lines = common::read_lines(&path);
    let checked = common::check_structure(&lines);
    assert_eq!(checked.frames.len(), 10);
    common::check_summary_agrees(&checked);
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn unwritable_dump_costs_one_stderr_line() {
    let out = spawn_child("once", "/nonexistent-framescope-dir/%p.jsonl")
        .output()
        .unwrap();
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    let ours: Vec<&str> = stderr.lines().filter(|l| l.starts_with("framescope:")).collect();
    assert_eq!(ours.len(), 1, "{stderr}");
    assert!(
        ours[0].starts_with("framescope: cannot write dump '/nonexistent-framescope-dir/"),
        "{}",
        ours[0]
    );
    assert!(ours[0].ends_with("dumping disabled"), "{}", ours[0]);
}

/// A FIFO whose reader goes away: the writer's next write fails with EPIPE, and the SIGPIPE
/// that comes with it must not kill the app (the default action in a C program).
#[test]
fn a_fifo_reader_going_away_costs_one_line_not_the_process() {
    use std::io::Read;
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::OpenOptionsExt;
    let path = common::temp_path("sigpipe");
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let mut reader = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(&path)
        .unwrap();
    let mut child = spawn_child("sigpipe", path.to_str().unwrap())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Read until the dump has begun, then close the reading end.
    let t = Instant::now();
    let mut buf = [0u8; 4096];
    loop {
        match reader.read(&mut buf) {
            Ok(n) if n > 0 => break,
            _ => {
                assert!(t.elapsed() < Duration::from_secs(30), "no dump bytes arrived");
                std::thread::sleep(Duration::from_millis(5));
            }
        }
    }
    drop(reader);
    let t = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(t.elapsed() < Duration::from_secs(60), "child still running");
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut stderr = String::new();
    child.stderr.take().unwrap().read_to_string(&mut stderr).unwrap();
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(status.signal(), None, "killed by a signal: {status:?}\n{stderr}");
    assert!(status.success(), "{status:?}\n{stderr}");
    let ours: Vec<&str> = stderr.lines().filter(|l| l.starts_with("framescope:")).collect();
    assert_eq!(ours.len(), 1, "{stderr}");
    assert!(ours[0].contains("Broken pipe"), "{}", ours[0]);
    std::fs::remove_file(&path).unwrap();
}
