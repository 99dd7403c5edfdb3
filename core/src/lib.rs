//! framescope core: configuration, frame model, frame session, statistics and the dump writer,
//! in folders by role: `model` (what a frame holds), `session` (the frame path from a frame's
//! end to the dump and the HUD), `display` (when frames reached the screen), `dump` (the
//! writer), `stats` (a run's statistics), `runtime` (the process a layer lives in), `control`
//! (configuration and run-time control).
//!
//! Everything here is pure Rust with no Vulkan or GL types, so the layers and the CLI share
//! one implementation and it can be unit-tested without a GPU.
//!
//! Threading contract: [`assembly::FrameAssembler`], [`gpu_time::IntervalSet`] and
//! [`dump::DumpWriter::push`] are safe to use on the app's threads in steady state: they do
//! no file I/O, never block on the writer and allocate nothing per frame. Everything that
//! serialises or writes runs on the dump writer's own thread.
// A safe function never dereferences a raw pointer it was handed (checked, not only by review).
#![deny(clippy::not_unsafe_ptr_arg_deref)]

// Folders by role; each module is re-exported at the crate root, where the other crates
// name it (`framescope_core::frame`, `framescope_core::config`, ...).
pub mod control;
pub mod display;
pub mod dump;
pub mod model;
pub mod runtime;
pub mod session;
pub mod stats;

pub use control::{capture, config, ctl, hotkeys, pacing, settings};
pub use model::{
    command_kinds, counter_values, creation, driver_values, frame, gpu_time, labels, sample, stutter, waits,
};
pub use runtime::{alloc_count, clock, guard, hud_time, loaded, log, shown, sync};
pub use session::{assembly, attribution, counters, draw_keys, driver_latest, history, regions};
pub use stats::{distribution, timeline_stats, units};

/// The dump schema id written in every header record.
pub const SCHEMA_ID: &str = "framescope.v1";

/// framescope's version, as written in the dump header.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
