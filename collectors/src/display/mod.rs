//! Display-time sources that run in the collectors' threads (see
//! `framescope_core::display` for the model they report into).
//!
//! * [`x11_present`]: the X11 Present extension's `PresentCompleteNotify`, watched on a
//!   connection of framescope's own, for GLX windows and Vulkan Xlib/XCB surfaces.
//! * [`wayland_feedback`]: the compositor's `wp_presentation` feedback, on an event queue of
//!   framescope's own attached to the app's `wl_display`, for Vulkan Wayland surfaces and EGL
//!   Wayland windows.

#[cfg(test)]
pub(crate) mod fake_compositor;
pub mod wayland_feedback;
pub(crate) mod wayland_sys;
pub mod x11_present;
