//! Run-time control: the configuration and its process-wide settings, the control socket,
//! capture on and off with marks, the frame limiter, and what the toggle keys do.

pub mod capture;
pub mod config;
pub mod ctl;
pub mod hotkeys;
pub mod pacing;
pub mod settings;
