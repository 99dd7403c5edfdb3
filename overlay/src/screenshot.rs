//! PNG screenshots of presented images.
//!
//! The file is opened by `framescope_core::dump::open` with the dump's rules: created new
//! (`O_CREAT | O_EXCL | O_NOFOLLOW`, mode 0644 less the umask), a numbered sibling when the
//! path already holds a file, never through a symbolic link. FIFOs and devices are refused:
//! a PNG is a file, and opening a FIFO could block the thread that writes it.

use framescope_core::dump::open::{self, open_output};
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long teardown waits for screenshot threads, all together. Encoding one large frame
/// takes well under a second; what takes longer is a stalled file system, which must not hold
/// the app's device destruction.
pub const JOIN_LIMIT: Duration = Duration::from_secs(3);

/// Expands a screenshot path template: `%N` is the frame index, then `%p`, `%n`, `%t`, `%%` as
/// for dump paths. `index` > 0 (a second swapchain in the same frame) adds `-index` before the
/// extension.
pub fn expand_path(template: &str, frame: u64, index: usize, pid: u32, exe_name: &str, start_unix_s: u64) -> String {
    // `%%N` is a literal `%N`: protect `%%` first.
    let t = template
        .replace("%%", "\u{0}")
        .replace("%N", &frame.to_string())
        .replace('\u{0}', "%%");
    let home = std::env::var("HOME").ok();
    let mut path = framescope_core::dump::path::expand(&t, pid, exe_name, start_unix_s, home.as_deref());
    if index > 0 {
        let stem_end = match path.rfind('.') {
            Some(dot) if dot > path.rfind('/').map_or(0, |s| s + 1) => dot,
            _ => path.len(),
        };
        path.insert_str(stem_end, &format!("-{index}"));
    }
    path
}

/// [`expand_path`] for this process: its pid, its executable's name and the current time.
pub fn process_path(template: &str, frame: u64, index: usize) -> String {
    let exe = std::fs::read_link("/proc/self/exe")
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "app".into());
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    expand_path(template, frame, index, std::process::id(), &exe, now)
}

/// Joins screenshot writer threads, waiting at most `limit` for all of them together. Threads
/// still running then are left to end with the process, and one line says how many. Returns
/// that number.
pub fn join_bounded(handles: Vec<JoinHandle<()>>, limit: Duration) -> usize {
    let deadline = Instant::now() + limit;
    let mut left = Vec::new();
    for h in handles {
        // JoinHandle has no timed join: poll is_finished (teardown only, never per frame).
        while !h.is_finished() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        if h.is_finished() {
            let _ = h.join();
        } else {
            left.push(h);
        }
    }
    if !left.is_empty() {
        framescope_core::log::error(format_args!(
            "{} screenshot writer(s) did not finish within {} s (stalled file system?); leaving them",
            left.len(),
            limit.as_secs_f32()
        ));
    }
    left.len()
}

/// Screenshot threads of the process (readers waiting for a GPU copy, PNG writers), joined
/// within [`JOIN_LIMIT`] by [`join_all`].
static THREADS: std::sync::Mutex<Vec<JoinHandle<()>>> = std::sync::Mutex::new(Vec::new());

/// Runs `job` on a thread of framescope's named `name`, joined by [`join_all`]; the app's
/// thread never waits for the encoder or the file.
pub fn spawn(name: &str, job: impl FnOnce() + Send + 'static) {
    let job = move || {
        framescope_core::alloc_count::mark_own_thread();
        job();
    };
    match std::thread::Builder::new().name(name.into()).spawn(job) {
        Ok(h) => {
            THREADS.lock().unwrap_or_else(|p| p.into_inner()).push(h);
            static AT_EXIT: std::sync::Once = std::sync::Once::new();
            AT_EXIT.call_once(|| {
                // SAFETY: `exit_join` is an `extern "C" fn()` that never unwinds and only
                // touches 'static data.
                if unsafe { libc::atexit(exit_join) } != 0 {
                    framescope_core::log::error(format_args!(
                        "cannot register the exit hook; a screenshot may be cut short"
                    ));
                }
            });
        }
        Err(e) => framescope_core::log::error(format_args!("screenshot: cannot start a thread: {e}")),
    }
}

/// Encodes and writes a screenshot on a thread of its own (see [`write_png`] for the bytes).
pub fn write_async(path: String, width: u32, height: u32, row_pitch: usize, order: PixelOrder, pixels: Vec<u8>) {
    spawn("framescope-png", move || {
        match write_png(Path::new(&path), width, height, row_pitch, order, &pixels) {
            Ok(written) => framescope_core::log::info(format_args!("screenshot written to {}", written.display())),
            Err(e) => framescope_core::log::error(format_args!("screenshot {path}: {e}")),
        }
    });
}

/// Joins every screenshot thread, within [`JOIN_LIMIT`] in all; a thread joined here may start
/// another (a reader its writer), which is joined within the same bound. Called when a device
/// or context goes, and at process exit.
pub fn join_all() {
    let deadline = Instant::now() + JOIN_LIMIT;
    loop {
        let handles: Vec<_> = std::mem::take(&mut *THREADS.lock().unwrap_or_else(|p| p.into_inner()));
        if handles.is_empty() {
            return;
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if join_bounded(handles, left) > 0 {
            return;
        }
    }
}

extern "C" fn exit_join() {
    let _ = std::panic::catch_unwind(join_all);
}

/// Pixel layout of the image bytes handed to [`write_png`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PixelOrder {
    Rgba,
    Bgra,
}

/// Writes `width` x `height` 8-bit pixels (rows of `row_pitch` bytes) as an RGB PNG. Alpha is
/// dropped: a presented image is opaque. Returns the path written: `path`, or its numbered
/// sibling when `path` already existed (see the module docs).
pub fn write_png(
    path: &Path,
    width: u32,
    height: u32,
    row_pitch: usize,
    order: PixelOrder,
    pixels: &[u8],
) -> Result<PathBuf, String> {
    let (w, h) = (width as usize, height as usize);
    if row_pitch < w * 4 || pixels.len() < row_pitch * h.saturating_sub(1) + w * 4 {
        return Err(format!("{} bytes are too few for {width}x{height}", pixels.len()));
    }
    let mut rgb = Vec::with_capacity(w * h * 3);
    for y in 0..h {
        for px in pixels[y * row_pitch..y * row_pitch + w * 4].chunks_exact(4) {
            match order {
                PixelOrder::Rgba => rgb.extend_from_slice(&px[..3]),
                PixelOrder::Bgra => rgb.extend_from_slice(&[px[2], px[1], px[0]]),
            }
        }
    }
    let opened =
        open_output(path, false).map_err(|e| format!("cannot write '{}': {e}", open::display(path.as_os_str())))?;
    if opened.sibling {
        framescope_core::log::info(format_args!(
            "'{}' already exists; writing the screenshot to '{}' instead",
            open::display(path.as_os_str()),
            open::display(opened.path.as_os_str())
        ));
    }
    let mut enc = png::Encoder::new(BufWriter::new(opened.file), width, height);
    enc.set_color(png::ColorType::Rgb);
    enc.set_depth(png::BitDepth::Eight);
    let mut w = enc.write_header().map_err(|e| e.to_string())?;
    w.write_image_data(&rgb).map_err(|e| e.to_string())?;
    w.finish().map_err(|e| e.to_string())?;
    Ok(opened.path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_template() {
        assert_eq!(expand_path("/t/s-%p-%N.png", 7, 0, 42, "app", 0), "/t/s-42-7.png");
        assert_eq!(expand_path("/t/s-%N.png", 7, 2, 42, "app", 0), "/t/s-7-2.png");
        assert_eq!(expand_path("/t.d/shot", 7, 1, 42, "app", 0), "/t.d/shot-1");
        assert_eq!(expand_path("/t/%%N-%n.png", 7, 0, 42, "app", 0), "/t/%N-app.png");
    }

    #[test]
    fn writes_a_readable_png_with_swapped_channels() {
        let dir = std::env::temp_dir().join(format!("framescope-png-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("a.png");
        // 2x1, row pitch 12 (4 bytes of padding), BGRA: blue then red.
        let px = [255, 0, 0, 255, 0, 0, 255, 255, 9, 9, 9, 9];
        assert_eq!(write_png(&path, 2, 1, 12, PixelOrder::Bgra, &px).unwrap(), path);
        let dec = png::Decoder::new(std::fs::File::open(&path).unwrap());
        let mut r = dec.read_info().unwrap();
        let mut buf = vec![0; r.output_buffer_size()];
        let info = r.next_frame(&mut buf).unwrap();
        assert_eq!((info.width, info.height), (2, 1));
        assert_eq!(&buf[..6], &[0, 0, 255, 255, 0, 0]);
        assert!(write_png(&path, 4, 4, 16, PixelOrder::Rgba, &px).is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn joins_are_bounded() {
        let (_keep, rx) = std::sync::mpsc::channel::<()>();
        let stuck = std::thread::spawn(move || {
            let _ = rx.recv();
        });
        let quick = std::thread::spawn(|| {});
        let (tx, done) = std::sync::mpsc::channel();
        std::thread::spawn(move || tx.send(join_bounded(vec![quick, stuck], Duration::from_millis(200))));
        let left = done
            .recv_timeout(Duration::from_secs(30))
            .expect("join_bounded blocked");
        assert_eq!(left, 1, "the stuck thread is left, the finished one joined");
    }

    #[test]
    fn never_clobbers_follows_links_or_blocks_on_a_fifo() {
        use std::os::unix::ffi::OsStrExt;
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("framescope-png-hostile-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let px = [1u8, 2, 3, 255];
        // An existing file: left alone, a sibling written, mode 0644 less the umask.
        let existing = dir.join("shot.png");
        std::fs::write(&existing, "theirs").unwrap();
        std::fs::set_permissions(&existing, std::fs::Permissions::from_mode(0o666)).unwrap();
        let got = write_png(&existing, 1, 1, 4, PixelOrder::Rgba, &px).unwrap();
        assert_eq!(got, dir.join("shot.1.png"));
        assert_eq!(std::fs::read_to_string(&existing).unwrap(), "theirs");
        // SAFETY: reading the umask means setting it; it is put back at once.
        let umask = unsafe { libc::umask(0o022) };
        // SAFETY: as above.
        unsafe { libc::umask(umask) };
        let mode = std::fs::metadata(&got).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o644 & !umask);
        // A symbolic link: refused, its target untouched.
        let target = dir.join("target");
        std::fs::write(&target, "precious").unwrap();
        std::os::unix::fs::symlink(&target, dir.join("link.png")).unwrap();
        let e = write_png(&dir.join("link.png"), 1, 1, 4, PixelOrder::Rgba, &px).unwrap_err();
        assert!(e.contains("symbolic link"), "{e}");
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "precious");
        // A FIFO nobody reads: refused at once (a plain open would block forever).
        let fifo = dir.join("fifo.png");
        let c = std::ffi::CString::new(fifo.as_os_str().as_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let (tx, rx) = std::sync::mpsc::channel();
        let f2 = fifo.clone();
        std::thread::spawn(move || tx.send(write_png(&f2, 1, 1, 4, PixelOrder::Rgba, &px)));
        let r = rx.recv_timeout(std::time::Duration::from_secs(30));
        let e = r.expect("write_png blocked on a FIFO").unwrap_err();
        assert!(e.contains("regular files only"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
