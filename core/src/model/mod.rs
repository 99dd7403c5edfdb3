//! The frame model: what one frame and its samples hold, in fixed-size records the app's
//! threads fill without allocating, and the tallies that feed them (waits, creations,
//! command kinds, counter values, the stutter rule).

pub mod command_kinds;
pub mod counter_values;
pub mod creation;
pub mod driver_values;
pub mod frame;
pub mod gpu_time;
pub mod labels;
pub mod sample;
pub mod stutter;
pub mod waits;
