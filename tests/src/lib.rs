//! Integration-test harness: finds the built artifacts, starts a private Xvfb, runs real apps
//! under framescope in an isolated environment, scans their output for validation messages, and
//! compares captured images.

pub mod allocs;
pub mod artifacts;
pub mod dump;
pub mod glmark;
pub mod html_page;
pub mod image;
pub mod lane;
pub mod python;
pub mod runner;
pub mod sway;
pub mod test_layers;
pub mod validation;
pub mod weston;
pub mod xvfb;

pub use artifacts::Artifacts;
pub use runner::{Outcome, Sandbox};
pub use xvfb::Xvfb;
