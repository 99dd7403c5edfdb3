//! The X11 Present display-time source for GLX windows: each swap tells the process's source
//! (`framescope_collectors::display::x11_present`) which frame went to which window.
//!
//! Only a swap's drawable that is an X `Window` (`glXSwapBuffers` on the window the app
//! created the context for, as glxgears and SDL do) can be watched; a `GLXWindow`'s XID is
//! not a window for the Present extension (`glXCreateWindow` is not hooked to map it back), so
//! the source cannot watch it (a debug line) and its frames stay `no_source` (`none_found`).
//! EGL swaps name an `EGLSurface`, not a window: not watched either.

use framescope_collectors::display::x11_present::X11Present;
use framescope_core::display::DisplayFeed;
use std::sync::{Arc, OnceLock};

/// The process's source (one frame session per process in the GL shim).
static SOURCE: OnceLock<Arc<X11Present>> = OnceLock::new();

/// Gives the source the process's display feed (once; an `Arc` allocated at the first swap);
/// with `display_times=0` there is none, and the feed says so.
pub fn attach(feed: &Arc<DisplayFeed>) {
    if SOURCE.get().is_some() {
        return;
    }
    if !framescope_core::settings::get().display_times {
        feed.set_none(framescope_core::display::NoSourceReason::Disabled);
        return;
    }
    SOURCE.get_or_init(|| X11Present::new(Arc::clone(feed)));
}

/// Frame `frame`, closed at `t_ns`, goes to X window `window` (0: none). A few atomic
/// operations (the source's note ring); the first call starts the source's thread.
pub fn presented(window: u32, frame: u64, t_ns: u64) {
    if let (Some(s), true) = (SOURCE.get(), window != 0) {
        s.presented(window, frame, t_ns);
    }
}
