//! A private headless sway (`WLR_BACKENDS=headless`, no input devices) for Wayland tests that
//! need synthetic input: sway has the virtual-keyboard protocol, which `wtype` types through
//! (weston 10 has no such protocol). Its own runtime directory and socket, both gone when it
//! is dropped.
//!
//! sway refuses to start as root (it checks that it cannot regain root after dropping it), so
//! under root it runs as `nobody` through `setpriv`, in a runtime directory that user owns;
//! root's apps still reach its socket. Apps connect through [`Sway::socket`], an absolute
//! `WAYLAND_DISPLAY`, as with [`crate::weston::Weston`].
//!
//! How sway behaves here: a seat has the keyboard capability only while a keyboard exists, so
//! with no input device a client gets its `wl_keyboard` when `wtype` creates its virtual
//! keyboard, and loses it when `wtype` exits. `wtype` makes a keymap of the keysyms it is
//! given, in order of first use, at evdev codes 1, 2, …: the first keysym it types is evdev 1,
//! `KEY_ESC` to an app that reads raw codes (vkcube and glmark2 quit on it).

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct Sway {
    child: Child,
    dir: PathBuf,
    /// The socket's absolute path, for `WAYLAND_DISPLAY`.
    pub socket: String,
    log: PathBuf,
}

/// No XWayland (nothing here is X11), and one output.
const CONFIG: &str = "xwayland disable\noutput HEADLESS-1 resolution 640x480\n";

impl Sway {
    /// Starts sway headless and waits for its socket; panics when sway (or `wtype`, which the
    /// tests type with) is missing or sway does not come up within 20 s.
    pub fn start_headless() -> Sway {
        crate::artifacts::require_program("sway");
        crate::artifacts::require_program("wtype");
        let dir = std::env::temp_dir().join(format!("framescope-sway-{}-{}", std::process::id(), unique()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("sway's runtime dir");
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).expect("chmod sway's runtime dir");
        let config = dir.join("config");
        std::fs::write(&config, CONFIG).expect("sway's config");
        let log = dir.join("sway.log");
        // SAFETY: geteuid only reads the process's credentials.
        let root = unsafe { libc::geteuid() } == 0;
        let mut cmd = if root {
            const NOBODY: u32 = 65534;
            std::os::unix::fs::chown(&dir, Some(NOBODY), Some(NOBODY)).expect("chown sway's runtime dir");
            std::os::unix::fs::chown(&config, Some(NOBODY), Some(NOBODY)).expect("chown sway's config");
            let mut c = Command::new("setpriv");
            c.args(["--reuid=65534", "--regid=65534", "--clear-groups", "sway"]);
            c
        } else {
            Command::new("sway")
        };
        cmd.arg("-c")
            .arg(&config)
            .env_clear()
            .env("XDG_RUNTIME_DIR", &dir)
            .env("HOME", &dir)
            .env("WLR_BACKENDS", "headless")
            .env("WLR_LIBINPUT_NO_DEVICES", "1")
            // No GPU is needed: sway composites the apps' shm buffers on the CPU.
            .env("WLR_RENDERER", "pixman")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).expect("sway's log"));
        if let Ok(p) = std::env::var("PATH") {
            cmd.env("PATH", p);
        }
        let child = cmd.spawn().expect("cannot start sway");
        let mut s = Sway {
            child,
            socket: String::new(),
            dir,
            log,
        };
        let start = Instant::now();
        // sway names its socket wayland-N, the first N free in its runtime dir: wayland-1 here.
        loop {
            let found = std::fs::read_dir(&s.dir).ok().and_then(|d| {
                d.flatten().map(|e| e.path()).find(|p| {
                    use std::os::unix::fs::FileTypeExt;
                    let is_socket = std::fs::metadata(p).is_ok_and(|m| m.file_type().is_socket());
                    is_socket
                        && p.file_name()
                            .is_some_and(|n| n.to_string_lossy().starts_with("wayland-"))
                })
            });
            if let Some(p) = found {
                s.socket = p.display().to_string();
                break;
            }
            if let Ok(Some(status)) = s.child.try_wait() {
                panic!("sway exited ({status}) before its socket came up:\n{}", s.log());
            }
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "sway's socket did not come up within 20 s:\n{}",
                s.log()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        s
    }

    /// sway's IPC socket (`sway-ipc.UID.PID.sock` in its runtime directory), for `swaymsg -s`;
    /// root's `swaymsg` reaches the socket of sway running as `nobody`.
    pub fn ipc_socket(&self) -> String {
        let start = Instant::now();
        loop {
            let found = std::fs::read_dir(&self.dir).ok().and_then(|d| {
                d.flatten().map(|e| e.path()).find(|p| {
                    p.file_name()
                        .is_some_and(|n| n.to_string_lossy().starts_with("sway-ipc."))
                })
            });
            if let Some(p) = found {
                return p.display().to_string();
            }
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "sway's IPC socket did not come up within 20 s:\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// What sway wrote to its log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Sway {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl crate::Sandbox {
    /// Apps started in this sandbox are Wayland clients of `s` (and have no X display).
    pub fn sway(&mut self, s: &Sway) -> &mut Self {
        self.set("WAYLAND_DISPLAY", &s.socket).unset("DISPLAY")
    }
}

fn unique() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    N.fetch_add(1, Ordering::Relaxed)
}
