//! Display-time sources: learn when the app's frames reached the screen and report them
//! through the session's `framescope_core::display::DisplayFeed`.

#[cfg(test)]
mod fake_compositor;
pub mod wayland_feedback;
mod wayland_sys;
