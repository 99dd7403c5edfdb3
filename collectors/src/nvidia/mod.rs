//! NVIDIA counter sources: `nvml` (utilisation, clocks, power, energy, temperature, memory,
//! throttle reasons, this process's share) and `gpm` (Hopper's GPU Performance Monitoring:
//! SM, tensor, DRAM and PCIe activity over ~100 ms windows).
//!
//! Both read NVML through the [`api::NvmlApi`] seam and share one loaded library; [`sources`]
//! builds them over the real `libnvidia-ml.so.1` ([`dl`]), [`sources_with`] over any
//! implementation (the tests use [`fake`]). Facts the code relies on were measured on an H100
//! with driver 580.159.04 (`shared/reference/nvml-gpm.md`).

pub mod api;
mod device;
pub mod dl;
pub mod fake;
mod gpm;
mod nvml;
pub mod pm;

pub use device::{pick_device, PickedDevice};
pub use gpm::{GpmSource, GPM_MIN_INTERVAL, UNSUPPORTED_REASON as GPM_UNSUPPORTED_REASON};
pub use nvml::{NvmlSource, DEFAULT_SLOW_INTERVAL, MIN_INTERVAL as NVML_MIN_INTERVAL};

use crate::source::GpuHint;
use api::NvmlApi;
use std::sync::Arc;

/// Loads `libnvidia-ml.so.1` and builds the `nvml` and `gpm` sources over it, both aimed at the
/// GPU `hint` names. `Err`: why there is no NVML here, for the header's `unavailable`.
/// Concrete types rather than `Box<dyn CounterSource>` so the caller can also read
/// [`NvmlSource::note`]; box them to put them with the other sources.
pub fn sources(hint: &GpuHint) -> Result<(NvmlSource, GpmSource), String> {
    let api: Arc<dyn NvmlApi> = Arc::new(dl::DlNvml::load()?);
    Ok(sources_with(api, hint))
}

/// The same over any [`NvmlApi`].
pub fn sources_with(api: Arc<dyn NvmlApi>, hint: &GpuHint) -> (NvmlSource, GpmSource) {
    (
        NvmlSource::new(api.clone(), hint.clone()),
        GpmSource::new(api, hint.clone()),
    )
}
