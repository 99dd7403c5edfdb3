//! A lost device or surface, as the driver answers one of the app's commands (or one of ours):
//! the dump says so once in a `fault` record (the app may abort right after, so the writer
//! puts it out at once), the frames still waiting for GPU time are written as `device_lost`
//! (their queries will never be read), and one log line names it. The app's result goes back
//! to it unchanged.

use crate::device_state::{DeviceState, FAULT_DEVICE_LOST, FAULT_SURFACE_LOST};
use ash::vk;
use framescope_core::clock::monotonic_now_ns;
use framescope_core::dump::Fault;
use framescope_core::frame::GpuMissing;
use framescope_core::guard::{guarded, Site};
use std::sync::atomic::Ordering;

static FAULT: Site = Site::new("fault");

/// The fault `r` names, with its bit in `DeviceStats::faults`.
fn kind(r: vk::Result) -> Option<(&'static str, u8)> {
    match r {
        vk::Result::ERROR_DEVICE_LOST => Some(("device_lost", FAULT_DEVICE_LOST)),
        vk::Result::ERROR_SURFACE_LOST_KHR => Some(("surface_lost", FAULT_SURFACE_LOST)),
        _ => None,
    }
}

/// Called with the result of `call`; does nothing unless it is a fault not yet reported.
/// Takes the device's frame lock: call it with no queue lock held.
pub fn seen(d: &DeviceState, call: &'static str, r: vk::Result) {
    let Some((kind, bit)) = kind(r) else { return };
    if d.stats.faults.fetch_or(bit, Ordering::AcqRel) & bit != 0 {
        return;
    }
    guarded(&FAULT, || {
        let mut frames = d.frames.lock();
        let frame = frames.session.frames_closed();
        if bit == FAULT_DEVICE_LOST {
            frames.session.flush(GpuMissing::DeviceLost);
        }
        if let Some(w) = frames.session.dump() {
            w.fault(Fault {
                kind,
                call,
                result: format!("VK_{r:?}"),
                frame: Some(frame),
                t_ns: monotonic_now_ns(),
            });
        }
        drop(frames);
        framescope_core::log::error(format_args!(
            "{call} answered VK_{r:?} after frame {frame}: the dump records a {kind} fault"
        ));
    });
}
