//! The hooks: the Vulkan commands the layer intercepts, one module per group. Each finds the
//! device's state by handle (`device_state`), forwards the app's call to the next layer and
//! hands what it saw to the features below (timing, samples, frames, HUD).

pub mod cmdbuf;
pub mod commands;
pub mod create;
pub mod creation;
pub mod fault;
pub mod frame_boundary;
pub mod present;
pub mod queue;
pub mod samples;
pub mod waits;

#[cfg(test)]
mod tests;
