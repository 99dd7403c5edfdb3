//! Seam for the GL HUD renderer (the overlay crate, built in another issue).
//!
//! [`before_swap`] is called at every swap of a measured context when the `hud` config key is
//! on: after the frame's end timestamp was written and its CPU part closed, before the real
//! swap, on the thread that swaps, with the app's context current. Whatever a renderer draws
//! here lands in the frame about to be presented and is not part of the frame's measured GPU
//! time. A renderer must save and restore every piece of GL state it touches, keep its
//! resources per context (keyed by [`SwapInfo::context`]) and free them when the context is
//! destroyed. Today it draws nothing.

use framescope_core::dump::Api;
use framescope_core::frame::FrameRecord;

/// What the HUD gets at each swap.
#[allow(dead_code)] // read by the renderer once it exists
pub struct SwapInfo<'a> {
    /// `Api::OpenGL` or `Api::OpenGLES`: which GL dialect the renderer must speak.
    pub api: Api,
    /// The current context's handle (`GLXContext` or `EGLContext`).
    pub context: usize,
    /// Index of the frame that this swap ends.
    pub frame: u64,
    /// That frame's CPU part (`t_ns`, draw counts); its GPU time is not known yet.
    pub record: &'a FrameRecord,
    /// The most recent frame with its GPU part resolved (frames arrive a few swaps late).
    pub last_complete: Option<&'a FrameRecord>,
}

/// Draws the HUD into the frame about to be presented. No-op until the renderer exists.
#[inline]
pub fn before_swap(info: &SwapInfo<'_>) {
    let _ = info;
}
