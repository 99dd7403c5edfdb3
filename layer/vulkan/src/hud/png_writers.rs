//! The screenshot threads: PNG writers and readers, joined within one bound when the device
//! goes.

use framescope_core::sync::Mutex;
use framescope_overlay::screenshot::PixelOrder;

static PNG_WRITERS: Mutex<Vec<std::thread::JoinHandle<()>>> = Mutex::new(Vec::new());

/// Encodes and writes a screenshot on its own thread (joined at device destruction).
pub fn write_png_async(path: String, width: u32, height: u32, order: PixelOrder, pixels: Vec<u8>) {
    let job = move || {
        framescope_core::alloc_count::mark_own_thread();
        let p = std::path::Path::new(&path);
        match framescope_overlay::screenshot::write_png(p, width, height, width as usize * 4, order, &pixels) {
            Ok(written) => framescope_core::log::info(format_args!("screenshot written to {}", written.display())),
            Err(e) => framescope_core::log::error(format_args!("screenshot {path}: {e}")),
        }
    };
    match std::thread::Builder::new().name("framescope-png".into()).spawn(job) {
        Ok(h) => PNG_WRITERS.lock().push(h),
        Err(e) => framescope_core::log::error(format_args!("screenshot: cannot start the writer thread: {e}")),
    }
}

pub fn join_all() {
    use framescope_overlay::screenshot::{join_bounded, JOIN_LIMIT};
    // A screenshot reader joined here may start a writer: join until none is left, all of it
    // within one bound (a stalled file system must not hold the app's teardown).
    let deadline = std::time::Instant::now() + JOIN_LIMIT;
    loop {
        let handles: Vec<_> = PNG_WRITERS.lock().drain(..).collect();
        if handles.is_empty() {
            return;
        }
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        if join_bounded(handles, left) > 0 {
            return;
        }
    }
}

/// Keeps a screenshot thread to join at device destruction.
pub fn add(h: std::thread::JoinHandle<()>) {
    PNG_WRITERS.lock().push(h);
}
