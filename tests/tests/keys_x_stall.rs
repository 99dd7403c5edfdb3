//! The HUD's toggle key is read on framescope's own thread, never on the app's: an X server
//! that stops answering the key reader must not stop the app.
//!
//! The apps talk to Xvfb through a small proxy on a display of its own. The proxy forwards
//! every connection both ways, but a connection that sends `QueryKeymap` (opcode 44, which
//! only framescope's key reader sends) is stalled there forever: that request and everything
//! after it are never forwarded, so the reader waits for a reply that never comes. With the
//! query on the present thread the app's first present blocks and the app never finishes; with
//! the reader on its own thread the app runs all its frames and exits 0.

use framescope_tests::{Artifacts, Outcome, Sandbox, Xvfb};
use std::io::{Read, Write};
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr, UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// A hang, not a timing: the apps need seconds.
const LIMIT: Duration = Duration::from_secs(120);

/// X11 core protocol, request `QueryKeymap`.
const QUERY_KEYMAP: u8 = 44;

struct StallingProxy {
    /// e.g. `:612`
    display: String,
    /// Connections stalled at `QueryKeymap`.
    stalled: Arc<AtomicUsize>,
    lock: PathBuf,
    socket: PathBuf,
}

impl Drop for StallingProxy {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.socket);
        let _ = std::fs::remove_file(&self.lock);
    }
}

impl StallingProxy {
    /// Listens as a free display number (its lock file taken the way X servers take theirs,
    /// so no Xvfb started meanwhile picks it) and forwards to `real`.
    fn start(real: &Xvfb) -> StallingProxy {
        let n: u32 = real.display.trim_start_matches(':').parse().unwrap();
        let server = PathBuf::from(format!("/tmp/.X11-unix/X{n}"));
        for m in 600..900u32 {
            let lock = PathBuf::from(format!("/tmp/.X{m}-lock"));
            let Ok(mut f) = std::fs::OpenOptions::new().write(true).create_new(true).open(&lock) else {
                continue;
            };
            writeln!(f, "{:>10}", std::process::id()).unwrap();
            let socket = PathBuf::from(format!("/tmp/.X11-unix/X{m}"));
            // libxcb tries the abstract socket of the same name first (Linux).
            let abstract_name = SocketAddr::from_abstract_name(socket.as_os_str().as_encoded_bytes()).unwrap();
            let (Ok(path_l), Ok(abs_l)) = (UnixListener::bind(&socket), UnixListener::bind_addr(&abstract_name)) else {
                let _ = std::fs::remove_file(&lock);
                continue;
            };
            let stalled = Arc::new(AtomicUsize::new(0));
            for l in [path_l, abs_l] {
                let (server, stalled) = (server.clone(), Arc::clone(&stalled));
                std::thread::spawn(move || {
                    for client in l.incoming().flatten() {
                        let upstream = UnixStream::connect(&server).expect("connect to Xvfb");
                        let stalled = Arc::clone(&stalled);
                        std::thread::spawn(move || forward(client, upstream, &stalled));
                    }
                });
            }
            return StallingProxy {
                display: format!(":{m}"),
                stalled,
                lock,
                socket,
            };
        }
        panic!("no free display number for the proxy in :600..:900");
    }
}

fn pad4(n: usize) -> usize {
    n.div_ceil(4) * 4
}

fn copy_exact(from: &mut UnixStream, to: &mut UnixStream, mut n: usize) -> std::io::Result<()> {
    let mut buf = [0u8; 65536];
    while n > 0 {
        let k = n.min(buf.len());
        from.read_exact(&mut buf[..k])?;
        to.write_all(&buf[..k])?;
        n -= k;
    }
    Ok(())
}

/// Server to client as is; client to server request by request (X11 protocol, "Connection
/// Setup" and "Request Format", with BIG-REQUESTS' extended length), until `QueryKeymap`.
fn forward(mut client: UnixStream, mut server: UnixStream, stalled: &AtomicUsize) {
    let (mut s2, mut c2) = (server.try_clone().unwrap(), client.try_clone().unwrap());
    std::thread::spawn(move || {
        let _ = std::io::copy(&mut s2, &mut c2);
    });
    let _ = (|| -> std::io::Result<()> {
        let mut setup = [0u8; 12];
        client.read_exact(&mut setup)?;
        server.write_all(&setup)?;
        let le = setup[0] == b'l';
        let u16_at = |b: &[u8]| {
            let v = [b[0], b[1]];
            usize::from(if le {
                u16::from_le_bytes(v)
            } else {
                u16::from_be_bytes(v)
            })
        };
        copy_exact(
            &mut client,
            &mut server,
            pad4(u16_at(&setup[6..])) + pad4(u16_at(&setup[8..])),
        )?;
        loop {
            let mut h = [0u8; 4];
            client.read_exact(&mut h)?;
            if h[0] == QUERY_KEYMAP {
                stalled.fetch_add(1, Ordering::SeqCst);
                // Never answered; the sockets stay open so the reader keeps waiting.
                loop {
                    std::thread::park();
                }
            }
            server.write_all(&h)?;
            let mut len = u16_at(&h[2..]) * 4;
            let mut header = 4;
            if len == 0 {
                let mut ext = [0u8; 4];
                client.read_exact(&mut ext)?;
                server.write_all(&ext)?;
                len = (if le {
                    u32::from_le_bytes(ext)
                } else {
                    u32::from_be_bytes(ext)
                }) as usize
                    * 4;
                header = 8;
            }
            copy_exact(&mut client, &mut server, len.saturating_sub(header))?;
        }
    })();
}

fn run_app(a: &Artifacts, proxy: &StallingProxy, name: &str, app: &Path, args: &[&str]) -> Outcome {
    let mut sb = Sandbox::new(name);
    sb.set("DISPLAY", &proxy.display).set("FRAMESCOPE_CONFIG", "hud=1");
    let app = app.display().to_string();
    sb.run_under_framescope(a, &app, args, LIMIT)
}

fn check(out: &Outcome, proxy: &StallingProxy, before: usize, what: &str) {
    assert_eq!(out.code(), Some(0), "{what}\n{}", out.describe());
    assert!(
        out.lines_with("framescope: internal error").is_empty(),
        "{what}\n{}",
        out.describe()
    );
    // The reader really went through the proxy and was stalled: this run proved something.
    assert!(
        proxy.stalled.load(Ordering::SeqCst) > before,
        "{what}: the key reader never reached the proxy\n{}",
        out.describe()
    );
}

#[test]
fn a_stalled_x_server_does_not_stop_a_vulkan_app() {
    let a = Artifacts::get();
    let x = Xvfb::start();
    let proxy = StallingProxy::start(&x);
    let out = run_app(
        &a,
        &proxy,
        "keys-stall-vk",
        &a.testapp,
        &["--frames", "300", "--width", "200", "--height", "200"],
    );
    check(&out, &proxy, 0, "testapp");
}

#[test]
fn a_stalled_x_server_does_not_stop_a_gl_app() {
    let a = Artifacts::get();
    let x = Xvfb::start();
    let proxy = StallingProxy::start(&x);
    let out = run_app(&a, &proxy, "keys-stall-gl", &a.glapp, &["--frames", "300"]);
    check(&out, &proxy, 0, "glapp");
}
