//! The bottom band: the loader's interface, the next layer's function tables, the handle
//! maps that find our state from a dispatchable handle, and the safe calls (`vk_calls`,
//! `vk_objects`, `draw_calls`, `hud_objects`, `present_calls`, `profiling`) through which the
//! features above drive the driver without `unsafe`.
//! Nothing here knows a feature.

pub mod chain;
pub mod command_fns;
pub mod device;
pub mod device_features;
pub mod draw_calls;
pub mod hud_objects;
pub mod instance;
pub mod loader_abi;
pub mod present_calls;
pub mod present_timing_abi;
pub mod profiling;
pub mod registry;
pub mod surface_fns;
pub mod vk_calls;
pub mod vk_objects;
