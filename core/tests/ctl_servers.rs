//! Dumps started one after another (a device destroyed, the next created) each serve the
//! control socket while they run, and no server outlives its dump: with one stop flag shared
//! by all servers, a dump started right after another cleared it before the old server (which
//! looks every 50 ms) had seen it, and that server, its thread and its socket lived on.
//!
//! A test file of its own: it sets `XDG_RUNTIME_DIR` for the whole process.

use framescope_core::dump::{Api, DumpOptions, DumpWriter, Header};
use std::os::unix::fs::PermissionsExt;
use std::time::{Duration, Instant};

/// Threads of this process named `framescope-ctl`.
fn ctl_threads() -> usize {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
        .filter(|c| c.trim() == "framescope-ctl")
        .count()
}

fn wait_until(what: &str, f: impl Fn() -> bool) {
    wait_at_most(Duration::from_secs(20), what, f);
}

fn wait_at_most(limit: Duration, what: &str, f: impl Fn() -> bool) {
    let start = Instant::now();
    while !f() {
        assert!(start.elapsed() < limit, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn each_dump_serves_the_socket_and_no_server_outlives_its_dump() {
    let dir = std::env::temp_dir().join(format!("framescope-ctl-servers-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let runtime = dir.join("runtime");
    std::fs::create_dir(&runtime).unwrap();
    std::fs::set_permissions(&runtime, std::fs::Permissions::from_mode(0o700)).unwrap();
    std::env::set_var("XDG_RUNTIME_DIR", &runtime);
    let socket = runtime.join(format!("framescope/{}.sock", std::process::id()));
    for i in 0..6 {
        let mut o = DumpOptions::new(dir.join(format!("d{i}.jsonl")).into_os_string());
        o.ctl = true;
        // Every other dump ends by itself (`dump_duration`) before its device goes, so the
        // stop at `finish` and the next dump's start come microseconds apart.
        if i % 2 == 1 {
            o.dump_duration_s = Some(0.0);
        }
        let w = DumpWriter::start(o, Header::new(Api::Vulkan));
        wait_until("the socket", || socket.exists());
        // The last dump's server sees its stop within its 50 ms poll.
        wait_at_most(
            Duration::from_secs(2),
            "one control server (the running dump's)",
            || ctl_threads() <= 1,
        );
        if i % 2 == 1 {
            wait_until("the dump to end by itself", || !w.is_active());
        }
        w.finish();
    }
    wait_until("the servers to stop", || ctl_threads() == 0);
    assert!(!socket.exists(), "the last dump's socket is removed");
    let _ = std::fs::remove_dir_all(&dir);
}
