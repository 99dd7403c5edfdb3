//! Fences of the HUD's submissions, with tickets: a slot that records the ticket of the
//! submission that last used it is free again once that ticket is done. Checking is
//! `vkGetFenceStatus`, never a wait; a fence is only reused after it signalled, so a ticket
//! whose fence has since been reused (serial changed) is done by construction.
//!
//! Each pending fence also remembers the app semaphores its submission waited: the app may
//! destroy such a semaphore once its own work is done, but a batch that waits it must have
//! completed first (VUID-vkDestroySemaphore-semaphore-01137), and our HUD submit is such a
//! batch. libplacebo (mpv) destroys its present semaphore after waiting only its own fences.

use crate::dispatch::device::Device;
use crate::dispatch::vk_calls::Fence;
use ash::vk;

/// Upper bound of fences per device: with every one pending the HUD skips frames instead.
const MAX_FENCES: usize = 64;
/// App present semaphores one HUD submission can wait on; a present with more goes without HUD.
pub const MAX_WAITS: usize = 16;
/// Longest wait for one of our submissions before the app destroys what it uses. Bounded so
/// no app can hang on us; long, because an app whose GPU work is that slow must still not
/// destroy objects our work uses. VUID-vkDestroySemaphore-semaphore-01137 at mpv's exit,
/// once, on a CI machine whose two cores ran several lavapipe apps under the validation
/// layer, fits the former 2 s bound running out (not confirmed: the line logged below would
/// say so). A lost device returns at once.
const WAIT_BOUND_NS: u64 = 10_000_000_000;

/// Waits (bounded) for our `fences`; says so once when the bound ran out.
fn wait_bounded(d: &Device, fences: &[&Fence]) {
    let r = d.wait_for_fences(fences, WAIT_BOUND_NS);
    if r == Err(vk::Result::TIMEOUT) {
        static SAID: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
        if !SAID.swap(true, std::sync::atomic::Ordering::Relaxed) {
            framescope_core::log::info(format_args!(
                "HUD: a submission of ours was still running after {} s when the app tore down what it uses; going on",
                WAIT_BOUND_NS / 1_000_000_000
            ));
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ticket {
    index: u32,
    serial: u64,
}

struct Entry {
    fence: Fence,
    serial: u64,
    /// Submitted and not yet seen signalled.
    pending: bool,
    /// The app's semaphores the pending submission waits (first `waits` of them).
    waited: [vk::Semaphore; MAX_WAITS],
    waits: usize,
}

pub struct FencePool {
    entries: Vec<Entry>,
}

impl Default for FencePool {
    /// Room for every fence up front: the pool gains one when all are pending, i.e. when the
    /// GPU lags further behind than before, which can first happen long into steady state (a
    /// loaded machine); growing the vector then would allocate on the app's thread.
    fn default() -> Self {
        FencePool {
            entries: Vec::with_capacity(MAX_FENCES),
        }
    }
}

impl FencePool {
    /// Whether the submission behind `t` has completed. Never waits.
    pub fn is_done(&mut self, d: &Device, t: Ticket) -> bool {
        let Some(e) = self.entries.get_mut(t.index as usize) else {
            return true;
        };
        if e.serial != t.serial || !e.pending {
            return true;
        }
        if d.fence_signalled(&e.fence) {
            e.pending = false;
            return true;
        }
        false
    }

    /// An unsignalled fence for the next submission and its ticket; `None` when every fence is
    /// pending and the pool is at its bound (or creating one failed).
    pub fn acquire(&mut self, d: &Device) -> Option<(vk::Fence, Ticket)> {
        let mut found = None;
        for (i, e) in self.entries.iter_mut().enumerate() {
            if e.pending && d.fence_signalled(&e.fence) {
                e.pending = false;
            }
            if !e.pending {
                found = Some(i);
                break;
            }
        }
        let i = match found {
            Some(i) => {
                // Signalled (or never submitted): no pending use.
                d.reset_fence(&self.entries[i].fence).ok()?;
                i
            }
            None if self.entries.len() < MAX_FENCES => {
                let fence = d.create_fence().ok()?;
                self.entries.push(Entry {
                    fence,
                    serial: 0,
                    pending: false,
                    waited: [vk::Semaphore::null(); MAX_WAITS],
                    waits: 0,
                });
                self.entries.len() - 1
            }
            None => return None,
        };
        let e = &mut self.entries[i];
        e.serial += 1;
        Some((
            e.fence.handle(),
            Ticket {
                index: i as u32,
                serial: e.serial,
            },
        ))
    }

    /// The submission using the fence of `t` went in, waiting the app's semaphores `waited`
    /// (at most [`MAX_WAITS`]; the caller refuses presents with more).
    pub fn submitted(&mut self, t: Ticket, waited: &[vk::Semaphore]) {
        if let Some(e) = self.entries.get_mut(t.index as usize) {
            if e.serial == t.serial {
                e.pending = true;
                e.waits = waited.len().min(MAX_WAITS);
                e.waited[..e.waits].copy_from_slice(&waited[..e.waits]);
            }
        }
    }

    /// Waits (bounded) for every pending submission that waited the app's semaphore `sem`,
    /// which the app is about to destroy. Most calls find none and return without a wait; one
    /// that finds one waits only for our submission the app's own present already depends on.
    pub fn wait_semaphore_users(&mut self, d: &Device, sem: vk::Semaphore) {
        for e in self.entries.iter_mut() {
            if !e.pending || !e.waited[..e.waits].contains(&sem) {
                continue;
            }
            if !d.fence_signalled(&e.fence) {
                wait_bounded(d, &[&e.fence]);
            }
            e.pending = false;
        }
    }

    /// Waits (bounded) for the submission of `t`: only at swapchain or device destruction.
    pub fn wait(&mut self, d: &Device, t: Ticket) {
        if self.is_done(d, t) {
            return;
        }
        wait_bounded(d, &[&self.entries[t.index as usize].fence]);
        self.entries[t.index as usize].pending = false;
    }

    /// Waits for everything pending, then destroys the fences.
    pub fn destroy(&mut self, d: &Device) {
        let pending: Vec<&Fence> = self.entries.iter().filter(|e| e.pending).map(|e| &e.fence).collect();
        if !pending.is_empty() {
            wait_bounded(d, &pending);
        }
        // No longer pending (waited above).
        self.entries.clear();
    }
}
