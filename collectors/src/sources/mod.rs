//! Counter sources over kernel files (procfs, sysfs), all reading through [`crate::seam`]:
//!
//! * [`system`]: CPU load and clocks, RAM, this process's CPU time and RSS (`/proc`).
//! * [`amdgpu`]: amdgpu's sysfs files and its binary `gpu_metrics` ([`gpu_metrics`]).
//! * [`hwmon`]: temperatures, power, fan and clock of GPU and CPU hwmon chips.
//! * [`fdinfo`]: this process's GPU engine time and memory from DRM fdinfo.
//!
//! Values a read cannot get are NaN; malformed files never panic.

pub mod amdgpu;
pub mod fdinfo;
pub mod gpu_metrics;
pub mod hwmon;
pub(crate) mod kernel_text;
pub mod system;

pub use amdgpu::AmdgpuSource;
pub use fdinfo::FdinfoSource;
pub use hwmon::HwmonSource;
pub use system::{SystemParams, SystemSource};
