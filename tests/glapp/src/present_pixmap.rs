//! `--present-pixmap`: after each `glXSwapBuffers` the app also presents the frame with the
//! X11 Present extension's `PresentPixmap`, on a second connection of its own (x11rb), with
//! serial = frame number and target msc 0 (the next refresh). Mesa's software drivers put
//! images with `PutImage`, which the Present extension never hears of; this gives the X11
//! Present display-time source something to watch on Xvfb (fake 60 Hz refresh).
//!
//! The app waits for each present's completion (up to 100 ms) before its next frame, so it
//! runs paced by the refresh like a vsynced app: each frame is shown at the refresh after its
//! swap, none is skipped. Unpaced, the app's presents reach Xvfb frames late (its GL
//! connection's `PutImage`s go first) and whole bursts are skipped for each one shown.
//!
//! The app selects `CompleteNotify` on its window itself and reports every completion
//! (serial, ust, msc, mode) in its result line: the known answer a display-time source must match.

use x11rb::connection::{Connection, RequestConnection as _};
use x11rb::protocol::present::{self, CompleteKind, ConnectionExt as _, EventMask};
use x11rb::protocol::xproto::{ConnectionExt as _, CreateGCAux};
use x11rb::protocol::Event;
use x11rb::rust_connection::RustConnection;

pub struct Presenter {
    conn: RustConnection,
    window: u32,
    pixmap: u32,
    gc: u32,
    width: u16,
    height: u16,
    /// (serial, ust µs, msc, mode: 0 copy, 1 flip, 2 skip, 3 suboptimal copy) per completion.
    pub completions: Vec<(u32, u64, u64, u8)>,
}

fn e(what: &str) -> impl Fn(&dyn std::fmt::Display) -> String + '_ {
    move |err| format!("--present-pixmap: {what}: {err}")
}

impl Presenter {
    pub fn new(window: u32) -> Result<Presenter, String> {
        let (conn, _) = RustConnection::connect(None).map_err(|x| e("connect")(&x))?;
        if conn
            .extension_information(present::X11_EXTENSION_NAME)
            .map_err(|x| e("query extension")(&x))?
            .is_none()
        {
            return Err("--present-pixmap: the X server has no Present extension".into());
        }
        let g = conn
            .get_geometry(window)
            .map_err(|x| e("get geometry")(&x))?
            .reply()
            .map_err(|x| e("get geometry")(&x))?;
        let pixmap = conn.generate_id().map_err(|x| e("id")(&x))?;
        conn.create_pixmap(g.depth, pixmap, window, g.width, g.height)
            .map_err(|x| e("create pixmap")(&x))?;
        let gc = conn.generate_id().map_err(|x| e("id")(&x))?;
        conn.create_gc(gc, pixmap, &CreateGCAux::new())
            .map_err(|x| e("create gc")(&x))?;
        let eid = conn.generate_id().map_err(|x| e("id")(&x))?;
        conn.present_query_version(1, 2)
            .map_err(|x| e("query version")(&x))?
            .reply()
            .map_err(|x| e("query version")(&x))?;
        conn.present_select_input(eid, window, EventMask::COMPLETE_NOTIFY)
            .map_err(|x| e("select input")(&x))?
            .check()
            .map_err(|x| e("select input")(&x))?;
        Ok(Presenter {
            conn,
            window,
            pixmap,
            gc,
            width: g.width,
            height: g.height,
            completions: Vec::new(),
        })
    }

    /// Presents the window's current contents (copied into the pixmap: requests of two
    /// connections are not ordered, so it may be the previous frame's image) as `serial`.
    pub fn present(&mut self, serial: u32) -> Result<(), String> {
        let c = &self.conn;
        c.copy_area(self.window, self.pixmap, self.gc, 0, 0, 0, 0, self.width, self.height)
            .map_err(|x| e("copy area")(&x))?;
        c.present_pixmap(self.window, self.pixmap, serial, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, &[])
            .map_err(|x| e("present pixmap")(&x))?;
        c.flush().map_err(|x| e("flush")(&x))?;
        self.wait_for(serial, 100)
    }

    fn take_events(&mut self) -> Result<(), String> {
        while let Some(ev) = self.conn.poll_for_event().map_err(|x| e("event")(&x))? {
            if let Event::PresentCompleteNotify(n) = ev {
                if n.kind == CompleteKind::PIXMAP && n.window == self.window {
                    self.completions.push((n.serial, n.ust, n.msc, u8::from(n.mode)));
                }
            }
        }
        Ok(())
    }

    /// Waits up to `ms` for the completion of `serial`.
    fn wait_for(&mut self, serial: u32, ms: u64) -> Result<(), String> {
        let until = std::time::Instant::now() + std::time::Duration::from_millis(ms);
        self.take_events()?;
        while std::time::Instant::now() < until && !self.completions.iter().rev().any(|c| c.0 == serial) {
            std::thread::sleep(std::time::Duration::from_micros(500));
            self.take_events()?;
        }
        Ok(())
    }
}
