//! A private headless weston (`--backend=headless-backend.so`) for Wayland tests: its own
//! runtime directory, its own socket, both gone when it is dropped.
//!
//! Apps reach it through [`Weston::socket`], an absolute `WAYLAND_DISPLAY` (libwayland takes
//! a path there), so a test's [`crate::Sandbox`] keeps its own `XDG_RUNTIME_DIR`.
//!
//! What weston 10's headless output does, measured here: it announces a 60 Hz mode (refresh
//! 16 666 666 ns in `wp_presentation_feedback.presented`) but presents every 25 ms: its repaint
//! starts `refresh − repaint window` (16.67 − 7 ms, in whole ms: 9 ms) after a presentation and
//! its frame timer fires 16 ms after the repaint ([`PRESENT_PERIOD_NS`]). Its presentation
//! clock is `CLOCK_MONOTONIC_RAW`.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The refresh weston 10's headless output announces (its 60 Hz mode).
pub const ANNOUNCED_REFRESH_NS: u64 = 16_666_666;
/// How often weston 10's headless output presents (see the module's comment).
pub const PRESENT_PERIOD_NS: u64 = 25_000_000;

pub struct Weston {
    child: Child,
    dir: PathBuf,
    /// The socket's absolute path, for `WAYLAND_DISPLAY`.
    pub socket: String,
    log: PathBuf,
}

impl Weston {
    /// Starts weston headless with its desktop shell (vkcube-wayland never drew a frame under
    /// `kiosk-shell.so`, with or without framescope) and waits for its socket; panics when
    /// weston is missing or does not come up within 20 s.
    pub fn start_headless() -> Weston {
        Weston::start(false)
    }

    /// [`Weston::start_headless`] with XWayland (`--xwayland`): [`Weston::x_display`] says
    /// where X11 clients connect (weston starts Xwayland at the first one).
    pub fn start_headless_xwayland() -> Weston {
        crate::artifacts::require_program("Xwayland");
        Weston::start(true)
    }

    fn start(xwayland: bool) -> Weston {
        crate::artifacts::require_program("weston");
        let dir = std::env::temp_dir().join(format!("framescope-weston-{}-{}", std::process::id(), unique()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("weston's runtime dir");
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).expect("chmod weston's runtime dir");
        let name = "wayland-framescope";
        let log = dir.join("weston.log");
        let mut cmd = Command::new("weston");
        cmd.args([
            "--backend=headless-backend.so",
            "--no-config",
            "--idle-time=0",
            &format!("--socket={name}"),
        ])
        .args(xwayland.then_some("--xwayland"))
        .env_clear()
        .env("XDG_RUNTIME_DIR", &dir)
        .env("HOME", &dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).expect("weston's log"));
        if let Ok(p) = std::env::var("PATH") {
            cmd.env("PATH", p);
        }
        let child = cmd.spawn().expect("cannot start weston");
        let mut w = Weston {
            child,
            socket: dir.join(name).display().to_string(),
            dir,
            log,
        };
        let start = Instant::now();
        // weston creates the socket's lock file, then binds the socket; it accepts once its
        // loop runs (a connection before that waits in the listen backlog).
        while !std::path::Path::new(&w.socket).exists() {
            if let Ok(Some(status)) = w.child.try_wait() {
                panic!("weston exited ({status}) before its socket came up:\n{}", w.log());
            }
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "weston's socket did not come up within 20 s:\n{}",
                w.log()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        w
    }

    /// weston's process id, for a test that stops or kills it.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The X display weston's XWayland listens on (`:N`, from its log: weston picks a free
    /// number); waits up to 20 s for it.
    pub fn x_display(&self) -> String {
        let start = Instant::now();
        loop {
            let log = self.log();
            if let Some(d) = log.lines().find_map(|l| {
                l.split_once("xserver listening on display ")
                    .map(|(_, d)| d.trim().to_string())
            }) {
                return d;
            }
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "weston's XWayland did not come up within 20 s:\n{log}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// What weston wrote to its log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Weston {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl crate::Sandbox {
    /// Apps started in this sandbox are Wayland clients of `w` (and have no X display).
    pub fn wayland(&mut self, w: &Weston) -> &mut Self {
        self.set("WAYLAND_DISPLAY", &w.socket).unset("DISPLAY")
    }
}

fn unique() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    N.fetch_add(1, Ordering::Relaxed)
}
