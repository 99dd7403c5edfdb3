//! What a layer needs of the process it lives in: the clock, panic containment, logging,
//! locks that never poison for the app, allocation counting, the HUD's time on the app's
//! thread, and what else is loaded.

pub mod alloc_count;
pub mod clock;
pub mod guard;
pub mod hud_time;
pub mod loaded;
pub mod log;
pub mod shown;
pub mod sync;
