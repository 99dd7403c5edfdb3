//! framescope core: configuration, frame model, frame assembly, statistics and the dump writer.
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

pub mod alloc_count;
pub mod assembly;
pub mod attribution;
pub mod capture;
pub mod clock;
pub mod command_kinds;
pub mod config;
pub mod counter_values;
pub mod counters;
pub mod creation;
pub mod ctl;
pub mod display;
pub mod distribution;
pub mod draw_keys;
pub mod driver_latest;
pub mod driver_values;
pub mod dump;
pub mod frame;
pub mod gpu_time;
pub mod guard;
pub mod history;
pub mod hud_time;
pub mod labels;
pub mod loaded;
pub mod log;
pub mod pacing;
pub mod regions;
pub mod sample;
pub mod session;
pub mod settings;
pub mod shown;
pub mod stats;
pub mod stutter;
pub mod sync;
pub mod timeline_stats;
pub mod units;
pub mod waits;

/// The dump schema id written in every header record.
pub const SCHEMA_ID: &str = "framescope.v1";

/// framescope's version, as written in the dump header.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
