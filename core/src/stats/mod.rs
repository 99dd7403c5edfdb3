//! Statistics over a run's frames, shared by the dump writer's summary and `framescope
//! report`: the summary itself, the frame timeline's, distributions in bounded memory and
//! numbers with units.

pub mod distribution;
pub mod summary;
pub mod timeline_stats;
pub mod units;

pub use summary::*;
