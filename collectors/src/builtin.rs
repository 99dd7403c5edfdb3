//! The counter sources framescope runs, and the process's board for a config.

use crate::collector::{process_board, Built};
use crate::source::GpuHint;
use crate::sources::amdgpu::AmdgpuSource;
use crate::sources::fdinfo::FdinfoSource;
use crate::sources::hwmon::HwmonSource;
use crate::sources::system::SystemSource;
use framescope_core::config::Config;
use framescope_core::counters::CounterBoard;
use std::sync::Arc;
use std::time::Duration;

/// Every source, in catalogue order: a counter two sources name (the GPU temperature from NVML
/// and from hwmon) belongs to the first. Vendor sources come before the generic ones.
pub fn build(hint: &GpuHint) -> Vec<Built> {
    let mut out: Vec<Built> = Vec::new();
    match crate::nvidia::sources(hint) {
        Ok((nvml, gpm)) => {
            out.push(Ok(Box::new(nvml)));
            out.push(Ok(Box::new(gpm)));
            // PM counters from a `framescope gpu-sampler` of the first GPU, where one runs (the
            // header's `unavailable` says how to start it where none does).
            out.push(Ok(Box::new(crate::nvidia::pm::source::PmSource::new(0))));
        }
        Err(reason) => {
            out.push(Err(("nvml", reason.clone())));
            out.push(Err(("gpm", reason)));
            // Without NVML only where a sampler holds a ring (a sampler on a machine whose
            // NVML this process cannot load, or a test's), so machines without an NVIDIA GPU
            // do not list PM sampling as off, nor six empty counters for a ring whose sampler
            // is gone.
            if crate::nvidia::pm::ring::in_use(&crate::nvidia::pm::ring::ring_key(0)) {
                out.push(Ok(Box::new(crate::nvidia::pm::source::PmSource::new(0))));
            }
        }
    }
    out.push(Ok(Box::new(AmdgpuSource::new(hint.clone()))));
    out.extend(crate::intel::sources(hint));
    out.extend(crate::mali::sources(hint));
    out.push(Ok(Box::new(HwmonSource::new(hint.clone()))));
    out.push(Ok(Box::new(FdinfoSource::new())));
    out.push(Ok(Box::new(SystemSource::new())));
    out
}

/// The process's counter board when the config wants counters (the first call starts the
/// collector with `hint`); `None` with `counters=0`.
pub fn board_for(config: &Config, hint: GpuHint) -> Option<Arc<CounterBoard>> {
    config
        .counters
        .then(|| process_board(hint, Duration::from_millis(config.counter_interval_ms), build))
}
