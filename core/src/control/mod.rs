//! Run-time control: the configuration and its process-wide settings, the control socket,
//! capture on and off with marks, and the frame limiter.

pub mod capture;
pub mod config;
pub mod ctl;
pub mod pacing;
pub mod settings;
