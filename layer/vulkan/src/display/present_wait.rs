//! `VK_KHR_present_id` + `VK_KHR_present_wait` as a display-time source.
//!
//! At device creation framescope enables both extensions (and their features) below the app
//! where the driver offers them and the app presents (`VK_KHR_swapchain`); the app never sees
//! `vkWaitForPresentKHR` unless it enabled the extension itself (`proc_addr::hidden_from_app`).
//! Each present gets a `VkPresentIdKHR` on the stack with framescope's own increasing id per
//! swapchain; where the app enabled `VK_KHR_present_id` itself its own ids are used and none
//! are added (mixing two id sequences would break VUID-VkPresentIdKHR-presentIds-04999). After
//! the present returns, the app's thread pushes (swapchain, id, frame) onto a fixed ring
//! ([`RING`]) and unparks the device's waiting thread; that thread calls
//! `vkWaitForPresentKHR` with [`WAIT_TIMEOUT_NS`] timeouts in a loop and reports the wait's
//! return time as the frame's `shown_ns`: an upper bound of when the image reached the screen
//! (the spec asks the wait to end "as close as possible" to it; the thread's wake-up is added).
//!
//! The spec lets the swapchain of a `vkWaitForPresentKHR` be used on other threads meanwhile,
//! except by `vkDestroySwapchainKHR`; and a retired swapchain must not be waited on
//! (VUID-vkWaitForPresentKHR-swapchain-04997). So each swapchain has a `busy` lock the waiting
//! thread holds around every wait call, and destroying or retiring the swapchain first marks it
//! stopped, then takes that lock: the app's thread waits at most one wait call
//! ([`WAIT_TIMEOUT_NS`]) there, and no wait starts on it afterwards. A driver that overruns
//! the timeout is not waited for longer than [`END_CAP`] (device destruction: [`JOIN_CAP`]).

use super::app_ids::AppPresentIds;
use crate::dispatch::device::PresentWaitAugment as Enabled;
use crate::dispatch::present_calls::PresentWaitCall;
use ash::vk;
use crossbeam_queue::ArrayQueue;
use framescope_core::display::{DisplayFeed, DisplayReport, DisplaySource, PresentationMode};
use framescope_core::guard::{guarded, Site};
use framescope_core::sync::{Mutex, RwLock};
use rustc_hash::FxHashMap as HashMap;
use std::ffi::CStr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::{JoinHandle, Thread};
use std::time::Duration;

pub const PRESENT_ID: &CStr = ash::khr::present_id::NAME;
pub const PRESENT_WAIT: &CStr = ash::khr::present_wait::NAME;

/// One wait call's timeout: the longest a swapchain's destruction or retirement waits on the
/// app's thread for a wait in flight on it.
pub const WAIT_TIMEOUT_NS: u64 = 20_000_000;
/// Presents whose wait is queued: far more than any swapchain has images in flight. A full
/// ring drops the present's report (counted), never blocks the app.
pub const RING: usize = 256;
/// A present not shown within this is given up (its present may have failed below, or the
/// window is hidden); the dump's join gives up on it at the same age.
const GIVE_UP_NS: u64 = framescope_core::display::join::BOUND_NS;
/// The longest a swapchain's destruction or retirement waits for the wait in flight on it, for
/// a driver that overruns the wait's timeout: then it goes ahead and says so in one line.
const END_CAP: Duration = Duration::from_millis(100);
/// The longest device destruction waits for the waiting thread (the same overrun).
const JOIN_CAP: Duration = Duration::from_secs(1);
/// Most swapchains one present may name and still get ids (a stack array, no heap).
const MAX_SWAPCHAINS: usize = 8;

static WAITER: Site = Site::new("present_wait thread");

/// Whether the device offers both extensions and both features, asked of the layers below;
/// `Err` says why not.
pub fn supported(
    inst: &crate::dispatch::instance::Instance,
    phys: vk::PhysicalDevice,
    exts: &[vk::ExtensionProperties],
) -> Result<(), &'static str> {
    let has = |n: &CStr| exts.iter().any(|e| e.extension_name_as_c_str() == Ok(n));
    if !has(PRESENT_ID) || !has(PRESENT_WAIT) {
        return Err("VK_KHR_present_id and VK_KHR_present_wait not offered by the device \
                    (NVIDIA and Mesa's hardware drivers have them; lavapipe 22.3 does not)");
    }
    let (id, wait) = inst
        .present_wait_features(phys)
        .ok_or("the app's instance is Vulkan 1.0: the features of VK_KHR_present_wait cannot be asked for")?;
    if id && wait {
        Ok(())
    } else {
        Err("the device offers VK_KHR_present_wait without its presentId or presentWait feature")
    }
}

/// One swapchain as the waiting thread sees it.
struct Chain {
    handle: vk::SwapchainKHR,
    /// framescope's last id on it (ours start at 1; 0 means "no id").
    last_id: AtomicU64,
    /// Retired, destroyed, or out of date: no more waits on it.
    stopped: AtomicBool,
    /// Held by the waiting thread around each wait call on this swapchain.
    busy: Mutex<()>,
}

struct Pending {
    chain: Arc<Chain>,
    id: u64,
    frame: u64,
    queued_ns: u64,
}

struct Shared {
    ring: ArrayQueue<Pending>,
    chains: RwLock<HashMap<u64, Arc<Chain>>>,
    stop: AtomicBool,
    /// Presents whose report was dropped because the ring was full.
    lost: AtomicU64,
}

/// A device's present_wait source.
pub struct PresentWait {
    app_ids: bool,
    feed: Arc<DisplayFeed>,
    shared: Arc<Shared>,
    waker: Thread,
    thread: Mutex<Option<JoinHandle<()>>>,
}

/// Ids chained onto one present: a stack struct and array, no heap.
pub struct ChainedIds {
    ids: [u64; MAX_SWAPCHAINS],
    info: vk::PresentIdKHR<'static>,
    /// (swapchain state, id) of the frame's swapchain (the present's first), to wait on.
    first: Option<(Arc<Chain>, u64)>,
}

impl PresentWait {
    /// Starts the device's waiting thread; `None` when the device does not have the wait
    /// command or the thread cannot start (then nothing reports, and the log says why).
    pub fn start(
        dev: &crate::dispatch::device::Device,
        enabled: Enabled,
        feed: Arc<DisplayFeed>,
    ) -> Option<PresentWait> {
        if !enabled.on {
            return None;
        }
        Self::spawn(dev.present_wait_call()?, enabled.app_ids, feed)
    }

    /// Starts the waiting thread on `wait`.
    fn spawn(wait: PresentWaitCall, app_ids: bool, feed: Arc<DisplayFeed>) -> Option<PresentWait> {
        let shared = Arc::new(Shared {
            ring: ArrayQueue::new(RING),
            chains: RwLock::new(HashMap::default()),
            stop: AtomicBool::new(false),
            lost: AtomicU64::new(0),
        });
        let (s, fd) = (Arc::clone(&shared), Arc::clone(&feed));
        let thread = std::thread::Builder::new()
            .name("fs-present-wait".into())
            .spawn(move || run(&s, &fd, wait))
            .map_err(|e| framescope_core::log::error(format_args!("present_wait: no waiting thread ({e})")))
            .ok()?;
        Some(PresentWait {
            app_ids,
            feed,
            shared,
            waker: thread.thread().clone(),
            thread: Mutex::new(Some(thread)),
        })
    }

    pub fn swapchain_created(&self, handle: vk::SwapchainKHR) {
        let c = Arc::new(Chain {
            handle,
            last_id: AtomicU64::new(0),
            stopped: AtomicBool::new(false),
            busy: Mutex::new(()),
        });
        self.shared.chains.write().insert(vk::Handle::as_raw(handle), c);
    }

    /// The swapchain is being retired (`oldSwapchain` of a new one) or destroyed: no wait
    /// starts on it from now on, and this returns once any wait in flight on it has (at most
    /// [`WAIT_TIMEOUT_NS`] later). `destroyed` forgets it.
    pub fn swapchain_ending(&self, handle: vk::SwapchainKHR, destroyed: bool) {
        let raw = vk::Handle::as_raw(handle);
        let c = if destroyed {
            self.shared.chains.write().remove(&raw)
        } else {
            self.shared.chains.read().get(&raw).cloned()
        };
        if let Some(c) = c {
            c.stopped.store(true, Ordering::Release);
            if c.busy.try_lock().or_else(|| c.busy.try_lock_for(END_CAP)).is_none() {
                framescope_core::log::error(format_args!(
                    "present_wait: vkWaitForPresentKHR overran its timeout by {} ms; the swapchain goes ahead",
                    END_CAP.as_millis()
                ));
            }
        }
    }

    /// Whether frames presented to `handle` get their display time from present_wait (for
    /// merging with other sources: present_wait wins where it runs).
    #[allow(dead_code)] // through `display::present_wait_covers`, for the X11 Present source
    pub fn covers(&self, handle: vk::SwapchainKHR) -> bool {
        self.shared
            .chains
            .read()
            .get(&vk::Handle::as_raw(handle))
            .is_some_and(|c| !c.stopped.load(Ordering::Acquire))
    }

    /// The ids for a present of `swapchains`: framescope's own (one more than the last per
    /// swapchain) unless the app passes its own (`app`) or uses present ids itself.
    pub fn ids_for(&self, swapchains: &[vk::SwapchainKHR], app: &AppPresentIds<'_>) -> ChainedIds {
        let mut out = ChainedIds {
            ids: [0; MAX_SWAPCHAINS],
            info: vk::PresentIdKHR::default(),
            first: None,
        };
        let n = swapchains.len();
        if n == 0 {
            return out;
        }
        let chains = self.shared.chains.read();
        let live = |s: &vk::SwapchainKHR| {
            chains
                .get(&vk::Handle::as_raw(*s))
                .filter(|c| !c.stopped.load(Ordering::Acquire))
        };
        if self.app_ids || app.id_chained {
            let first_id = app.id.and_then(|ids| ids.first().copied());
            if let (Some(c), Some(id)) = (live(&swapchains[0]), first_id.filter(|&id| id != 0)) {
                out.first = Some((Arc::clone(c), id));
            }
            return out;
        }
        if n > MAX_SWAPCHAINS {
            return out;
        }
        for (i, s) in swapchains.iter().enumerate() {
            if let Some(c) = live(s) {
                let id = c.last_id.fetch_add(1, Ordering::Relaxed) + 1;
                out.ids[i] = id;
                if i == 0 {
                    out.first = Some((Arc::clone(c), id));
                }
            }
        }
        if out.ids[..n].iter().any(|&id| id != 0) {
            out.info.swapchain_count = n as u32;
        }
        out
    }

    /// After a successful present: queue the wait for the frame's swapchain, wake the thread.
    pub fn presented(&self, ids: &ChainedIds, frame: u64, t_ns: u64) {
        let Some((c, id)) = ids.first.as_ref() else { return };
        if self.feed.source() != Ok(DisplaySource::PresentWait) {
            self.feed.set_source(DisplaySource::PresentWait);
        }
        let p = Pending {
            chain: Arc::clone(c),
            id: *id,
            frame,
            queued_ns: t_ns,
        };
        if self.shared.ring.push(p).is_err() {
            self.shared.lost.fetch_add(1, Ordering::Relaxed);
        }
        self.waker.unpark();
    }

    /// At device destruction: stops the thread (it returns within one wait call).
    pub fn stop(&self) {
        self.shared.stop.store(true, Ordering::Release);
        self.waker.unpark();
        if let Some(t) = self.thread.lock().take() {
            super::threads::join_bounded(t, JOIN_CAP, "present_wait: the waiting thread");
        }
        let lost = self.shared.lost.load(Ordering::Relaxed);
        if lost > 0 {
            framescope_core::log::info(format_args!("present_wait: {lost} presents not waited on (ring full)"));
        }
    }
}

impl ChainedIds {
    /// `info` with our `VkPresentIdKHR` in front of its chain, when we give ids; the result
    /// borrows `self` and must be passed down before `self` moves.
    pub fn chain_onto(&mut self, info: &vk::PresentInfoKHR<'_>) -> Option<vk::PresentInfoKHR<'static>> {
        if self.info.swapchain_count == 0 {
            return None;
        }
        self.info.p_present_ids = self.ids.as_ptr();
        self.info.p_next = info.p_next;
        Some(vk::PresentInfoKHR {
            s_type: info.s_type,
            p_next: std::ptr::addr_of!(self.info).cast(),
            wait_semaphore_count: info.wait_semaphore_count,
            p_wait_semaphores: info.p_wait_semaphores,
            swapchain_count: info.swapchain_count,
            p_swapchains: info.p_swapchains,
            p_image_indices: info.p_image_indices,
            p_results: info.p_results,
            _marker: std::marker::PhantomData,
        })
    }
}

/// The waiting thread: one pending present at a time, in present order.
fn run(s: &Shared, feed: &DisplayFeed, wait: PresentWaitCall) {
    let mut logged = false;
    while !s.stop.load(Ordering::Acquire) {
        let Some(p) = s.ring.pop() else {
            // Every push and `stop` unpark it; an unpark before the park makes it return at
            // once, so none is lost, and an app that stops presenting costs no wake-ups.
            std::thread::park();
            continue;
        };
        let shown = guarded(&WAITER, || wait_for(s, wait, &p, &mut logged)).flatten();
        if let Some(t) = shown {
            feed.report(DisplayReport {
                frame: p.frame,
                source: DisplaySource::PresentWait,
                shown_ns: Some(t),
                mode: PresentationMode::Unknown,
                refresh_ns: None,
            });
        }
    }
}

/// Waits for `p` in [`WAIT_TIMEOUT_NS`] steps; its time on the screen, or `None` (stopped,
/// given up, or the swapchain cannot be waited on any more).
fn wait_for(s: &Shared, wait: PresentWaitCall, p: &Pending, logged: &mut bool) -> Option<u64> {
    loop {
        if s.stop.load(Ordering::Acquire) {
            return None;
        }
        let busy = p.chain.busy.lock();
        if p.chain.stopped.load(Ordering::Acquire) {
            return None;
        }
        // The swapchain is neither destroyed nor retired while `busy` is held and `stopped` is
        // false; the device lives until `stop` joins this thread.
        let r = wait.wait(p.chain.handle, p.id, WAIT_TIMEOUT_NS);
        let t = framescope_core::clock::monotonic_now_ns();
        drop(busy);
        match r {
            vk::Result::SUCCESS | vk::Result::SUBOPTIMAL_KHR => return Some(t),
            vk::Result::TIMEOUT if t.saturating_sub(p.queued_ns) < GIVE_UP_NS => {}
            vk::Result::TIMEOUT => return None,
            other => {
                // OUT_OF_DATE, SURFACE_LOST, FULL_SCREEN_EXCLUSIVE_MODE_LOST, DEVICE_LOST:
                // this swapchain says no more.
                p.chain.stopped.store(true, Ordering::Release);
                if !std::mem::replace(logged, true) {
                    framescope_core::log::info(format_args!(
                        "present_wait: vkWaitForPresentKHR returned {other:?}; no more waits on that swapchain"
                    ));
                }
                return None;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ash::vk::Handle;
    use std::sync::atomic::AtomicU32;
    use std::time::Instant;

    fn info(swapchain: &vk::SwapchainKHR) -> vk::PresentInfoKHR<'_> {
        vk::PresentInfoKHR {
            swapchain_count: 1,
            p_swapchains: swapchain,
            ..Default::default()
        }
    }

    /// Presents one frame on `sc` as the hook does; the id chained.
    fn present(pw: &PresentWait, sc: vk::SwapchainKHR, frame: u64) -> u64 {
        let scs = [sc];
        let i = info(&scs[0]);
        let mut ids = pw.ids_for(&scs, &AppPresentIds::default());
        let down = ids.chain_onto(&i).expect("ids chained");
        // The chain points at our VkPresentIdKHR, whose first id is the one passed down.
        assert_eq!(down.p_next, std::ptr::addr_of!(ids.info).cast());
        assert_eq!(ids.info.p_present_ids, ids.ids.as_ptr());
        let id = ids.ids[0];
        pw.presented(&ids, frame, framescope_core::clock::monotonic_now_ns());
        id
    }

    fn drain(feed: &DisplayFeed, n: usize) -> Vec<DisplayReport> {
        let deadline = Instant::now() + Duration::from_secs(5);
        let mut got = Vec::new();
        while got.len() < n && Instant::now() < deadline {
            feed.drain(|r| got.push(r));
            std::thread::sleep(Duration::from_millis(1));
        }
        got
    }

    static SEEN_IDS: AtomicU64 = AtomicU64::new(0);

    extern "system" fn shown_at_once(_: vk::Device, _: vk::SwapchainKHR, id: u64, _: u64) -> vk::Result {
        SEEN_IDS.fetch_add(id, Ordering::Relaxed);
        vk::Result::SUCCESS
    }

    #[test]
    fn each_present_gets_the_next_id_and_its_frame_a_report_after_its_wait() {
        let feed = Arc::new(DisplayFeed::default());
        let pw = PresentWait::spawn(PresentWaitCall::with(shown_at_once), false, Arc::clone(&feed)).unwrap();
        let sc = vk::SwapchainKHR::from_raw(7);
        pw.swapchain_created(sc);
        assert!(pw.covers(sc));
        let before = framescope_core::clock::monotonic_now_ns();
        let ids: Vec<u64> = (10..13).map(|f| present(&pw, sc, f)).collect();
        assert_eq!(ids, [1, 2, 3]);
        let got = drain(&feed, 3);
        assert_eq!(got.iter().map(|r| r.frame).collect::<Vec<_>>(), [10, 11, 12]);
        assert!(got
            .iter()
            .all(|r| r.source == DisplaySource::PresentWait && r.shown_ns >= Some(before)));
        assert_eq!(SEEN_IDS.load(Ordering::Relaxed), 1 + 2 + 3);
        assert_eq!(feed.source(), Ok(DisplaySource::PresentWait));
        pw.stop();
    }

    static SLOW_CALLS: AtomicU32 = AtomicU32::new(0);

    /// A wait that never sees its present: the whole timeout, every call.
    extern "system" fn never_shown(_: vk::Device, _: vk::SwapchainKHR, _: u64, timeout: u64) -> vk::Result {
        SLOW_CALLS.fetch_add(1, Ordering::SeqCst);
        std::thread::sleep(Duration::from_nanos(timeout));
        vk::Result::TIMEOUT
    }

    #[test]
    fn destroying_a_swapchain_waits_for_the_wait_in_flight_and_no_wait_follows() {
        let feed = Arc::new(DisplayFeed::default());
        let pw = PresentWait::spawn(PresentWaitCall::with(never_shown), false, Arc::clone(&feed)).unwrap();
        let sc = vk::SwapchainKHR::from_raw(9);
        pw.swapchain_created(sc);
        present(&pw, sc, 0);
        let deadline = Instant::now() + Duration::from_secs(5);
        while SLOW_CALLS.load(Ordering::SeqCst) == 0 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
        let t = Instant::now();
        pw.swapchain_ending(sc, true);
        let took = t.elapsed();
        let calls = SLOW_CALLS.load(Ordering::SeqCst);
        assert!(calls >= 1);
        // One wait call at most, with the scheduler's slack on a loaded machine.
        assert!(
            took <= Duration::from_nanos(WAIT_TIMEOUT_NS) + Duration::from_millis(100),
            "{took:?}"
        );
        std::thread::sleep(Duration::from_nanos(3 * WAIT_TIMEOUT_NS));
        assert_eq!(
            SLOW_CALLS.load(Ordering::SeqCst),
            calls,
            "a wait on a destroyed swapchain"
        );
        assert!(!pw.covers(sc));
        let mut reports = 0;
        feed.drain(|_| reports += 1);
        assert_eq!(reports, 0);
        let t = Instant::now();
        pw.stop();
        assert!(t.elapsed() <= JOIN_CAP);
    }

    static OVERRUNS: AtomicU32 = AtomicU32::new(0);

    /// A driver that ignores the timeout.
    extern "system" fn overrunning(_: vk::Device, _: vk::SwapchainKHR, _: u64, _: u64) -> vk::Result {
        OVERRUNS.fetch_add(1, Ordering::SeqCst);
        std::thread::sleep(Duration::from_millis(400));
        vk::Result::TIMEOUT
    }

    #[test]
    fn a_wait_that_overruns_its_timeout_holds_the_destroy_at_most_the_cap() {
        let feed = Arc::new(DisplayFeed::default());
        let pw = PresentWait::spawn(PresentWaitCall::with(overrunning), false, Arc::clone(&feed)).unwrap();
        let sc = vk::SwapchainKHR::from_raw(11);
        pw.swapchain_created(sc);
        present(&pw, sc, 0);
        let deadline = Instant::now() + Duration::from_secs(5);
        while OVERRUNS.load(Ordering::SeqCst) == 0 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
        let t = Instant::now();
        pw.swapchain_ending(sc, true);
        let took = t.elapsed();
        // The cap, well before the driver's 400 ms are over.
        assert!(
            took >= END_CAP && took <= END_CAP + Duration::from_millis(100),
            "{took:?}"
        );
        pw.stop();
        assert_eq!(
            OVERRUNS.load(Ordering::SeqCst),
            1,
            "a second wait on an ended swapchain"
        );
    }

    static LOST_CALLS: AtomicU32 = AtomicU32::new(0);

    extern "system" fn out_of_date(_: vk::Device, _: vk::SwapchainKHR, _: u64, _: u64) -> vk::Result {
        LOST_CALLS.fetch_add(1, Ordering::SeqCst);
        vk::Result::ERROR_OUT_OF_DATE_KHR
    }

    #[test]
    fn an_out_of_date_wait_stops_ids_and_waits_on_that_swapchain_only() {
        let feed = Arc::new(DisplayFeed::default());
        let pw = PresentWait::spawn(PresentWaitCall::with(out_of_date), false, Arc::clone(&feed)).unwrap();
        let (a, b) = (vk::SwapchainKHR::from_raw(1), vk::SwapchainKHR::from_raw(2));
        pw.swapchain_created(a);
        pw.swapchain_created(b);
        present(&pw, a, 0);
        let deadline = Instant::now() + Duration::from_secs(5);
        while pw.covers(a) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
        assert!(!pw.covers(a) && pw.covers(b));
        let scs = [a];
        let mut ids = pw.ids_for(&scs, &AppPresentIds::default());
        assert!(ids.chain_onto(&info(&scs[0])).is_none(), "ids for a stopped swapchain");
        assert_eq!(LOST_CALLS.load(Ordering::SeqCst), 1);
        pw.stop();
    }
}
