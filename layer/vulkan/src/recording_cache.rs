//! The recording thread's last command buffer, so that recording hooks (every draw) skip the
//! device and command-buffer maps: each lookup there takes a lock and clones an `Arc`, four
//! atomic read-modify-writes per draw that cost more than the rest of a hook.
//!
//! Apps record one command buffer per thread at a time, so one entry per thread hits nearly
//! always. An entry is valid while the global epoch is unchanged; freeing command buffers,
//! destroying a pool or a device bumps it. Vulkan's external synchronisation makes that safe:
//! a command buffer freed on one thread is not recorded on another without the app ordering
//! the two, so the recording thread sees the new epoch before it touches the handle again.

use crate::device_state::{self, CmdBufState, DeviceState};
use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

static EPOCH: AtomicU64 = AtomicU64::new(0);

struct Entry {
    cb: u64,
    epoch: u64,
    device: Arc<DeviceState>,
    state: Arc<CmdBufState>,
}

thread_local! {
    static LAST: RefCell<Option<Entry>> = const { RefCell::new(None) };
}

/// Command buffers were freed or a device destroyed: every thread's entry is stale.
pub fn invalidate() {
    EPOCH.fetch_add(1, Ordering::Release);
}

/// Runs `f` with the device and state of command buffer `cb` (state `None` for a buffer we do
/// not track); `None` when the handle's device is unknown.
///
/// # Safety
/// `cb` is a live command buffer handle (its device is looked up through it).
#[inline]
pub unsafe fn with<R>(cb: u64, f: impl FnOnce(&DeviceState, Option<&Arc<CmdBufState>>) -> R) -> Option<R> {
    let epoch = EPOCH.load(Ordering::Acquire);
    LAST.try_with(|cell| {
        // A hook that runs inside another (never today) finds the cell borrowed and takes
        // the uncached path.
        if let Ok(slot) = cell.try_borrow() {
            if let Some(e) = slot.as_ref().filter(|e| e.cb == cb && e.epoch == epoch) {
                return Some(f(&e.device, Some(&e.state)));
            }
        }
        // SAFETY: the caller's.
        let d = unsafe { device_state::lookup(cb) }?;
        let st = d.command_buffer(ash::vk::Handle::from_raw(cb));
        if let (Some(st), Ok(mut slot)) = (&st, cell.try_borrow_mut()) {
            *slot = Some(Entry {
                cb,
                epoch,
                device: Arc::clone(&d),
                state: Arc::clone(st),
            });
        }
        Some(f(&d, st.as_ref()))
    })
    .ok()
    .flatten()
}
