//! Display-time sources that run in the collectors' threads (see
//! `framescope_core::display` for the model they report into).
//!
//! * [`x11_present`]: the X11 Present extension's `PresentCompleteNotify`, watched on a
//!   connection of framescope's own, for GLX windows and Vulkan Xlib/XCB surfaces.

pub mod x11_present;
