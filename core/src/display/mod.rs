//! When frames reached the screen: the display-time model.
//!
//! A display-time source (Vulkan `VK_KHR_present_wait`/`VK_EXT_present_timing`, the X11
//! Present extension, Wayland's `wp_presentation`) runs on a thread of framescope's own and
//! sends one [`DisplayReport`] per frame it learnt about through the session's
//! [`DisplayFeed`]. The dump writer joins reports to frames ([`join`]): a frame waits for its
//! report (and for the next displayed frame's, which ends its time on screen) up to
//! [`join::BOUND_NS`], then goes out saying which happened ([`DisplayState`]).
//!
//! Times are `CLOCK_MONOTONIC` ns, the clock of every other frame time. The derived metrics
//! follow PresentMon 2.x's definitions (its names in docs/dump-schema.md): display latency =
//! on screen − CPU start; displayed time = the next displayed frame's on-screen time − this
//! one's; until displayed = on screen − present call; between display changes = on screen −
//! the previous displayed frame's; animation error = (CPU start − the previous displayed
//! frame's CPU start) − (on screen − the previous displayed frame's on screen).

pub mod feed;
pub mod join;
pub mod model;

pub use feed::DisplayFeed;
pub use model::{DisplayReport, DisplaySource, DisplayState, FrameDisplay, NoSourceReason, PresentationMode};
