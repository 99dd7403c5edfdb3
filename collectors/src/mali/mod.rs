//! Arm Mali hardware counters: kbase (Arm's commercial driver, `/dev/mali0`) through
//! kinstr_prfcnt or the vinstr reader, and upstream Panfrost's perfcnt ioctls.
//!
//! One module per kernel ABI ([`kbase_ioctl`], [`vinstr`], [`kinstr_prfcnt`],
//! [`panfrost`]); pure parsers with no syscalls ([`props`], [`layout`], the parsers of
//! [`kinstr_prfcnt`] and [`vinstr`]); the database mapping ([`hwlayout`]) and the catalogue
//! ([`derive`]); the sources ([`source::MaliSource`], [`panfrost::PanfrostSource`]). Every
//! syscall goes through [`crate::sys::Sys`], so tests drive the sources against a fake
//! kernel exactly as the real one is driven.
//!
//! Counters are GPU-global and sampled by the CPU: per-frame values, never per-draw (a tiler
//! runs a pass's fragment work after all its geometry).

pub mod derive;
pub mod hwlayout;
pub mod kbase_ioctl;
pub mod kinstr_prfcnt;
pub mod layout;
pub mod le;
pub mod panfrost;
pub mod props;
pub mod source;
pub mod vinstr;

pub use panfrost::PanfrostSource;
pub use source::MaliSource;

use crate::collector::Built;
use crate::source::GpuHint;

/// The Mali sources over the machine's syscalls: `mali` (kbase) and `panfrost`. Building
/// them makes no syscall; `start` finds out which driver, if any, is there. The hint is not
/// needed: Mali GPUs are integrated, one per SoC.
pub fn sources(_hint: &GpuHint) -> Vec<Built> {
    vec![Ok(Box::new(MaliSource::new())), Ok(Box::new(PanfrostSource::new()))]
}
