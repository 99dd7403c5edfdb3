//! `VK_EXT_present_timing` as the display-time source, ranked above present_wait: the
//! presentation engine's own time for a present stage, not a thread's wake-up.
//!
//! At device creation framescope enables `VK_EXT_present_timing` with its dependencies
//! `VK_KHR_present_id2` and `VK_KHR_calibrated_timestamps` (and the `presentTiming` and
//! `presentId2` features) below the app where the device offers them, the app presents, the
//! instance has `VK_KHR_get_surface_capabilities2` (framescope adds it at instance creation)
//! and `display_times` is on; the app never sees their commands unless it enabled them itself
//! (`proc_addr::hidden_from_app`). An app that enables `VK_EXT_present_timing` itself owns
//! the swapchains' timing queues (results are removed once read), so framescope stays out.
//!
//! Per swapchain, where the surface says `presentTimingSupported` and can report the
//! first-pixel-visible or first-pixel-out stage (`VkPresentTimingSurfaceCapabilitiesEXT`),
//! the app's create info is copied with `VK_SWAPCHAIN_CREATE_PRESENT_TIMING_BIT_EXT` and
//! `VK_SWAPCHAIN_CREATE_PRESENT_ID_2_BIT_KHR` added; the timing queue is sized ([`QUEUE`]) and
//! a time domain chosen (`CLOCK_MONOTONIC` where offered, used as is; else the present-stage
//! local, swapchain-local or `CLOCK_MONOTONIC_RAW` domain, mapped to CLOCK_MONOTONIC with
//! `vkGetCalibratedTimestampsKHR`). Each present gets, on the
//! stack, a `VkPresentId2KHR` (framescope's increasing ids, or the app's own) and a
//! `VkPresentTimingsInfoEXT` asking for that stage with no target time (`targetTime` 0: the
//! present is not delayed). A framescope thread reads the results with
//! `vkGetPastPresentationTimingEXT` every [`POLL`] while presents are outstanding and reports
//! each frame's stage time as `shown_ns`, with `refreshDuration` as `refresh_ns`.
//!
//! A present whose timing request would fill the queue gets none (the spec fails such a
//! present with `VK_ERROR_PRESENT_TIMING_QUEUE_FULL_EXT`, which would hurt the app): its frame
//! has no report. Swapchains with present timing are not registered with present_wait, so a
//! frame has one report.

use super::app_ids::AppPresentIds;
pub use crate::dispatch::device::PresentTimingAugment as Augment;
use crate::dispatch::present_calls::TimingCalls;
use crate::dispatch::present_timing_abi::*;
use ash::vk;
use crossbeam_queue::ArrayQueue;
use framescope_core::display::{DisplayFeed, DisplayReport, DisplaySource, PresentationMode};
use framescope_core::guard::{guarded, Site};
use framescope_core::sync::{Mutex, RwLock};
use rustc_hash::FxHashMap as HashMap;
use std::ffi::{c_void, CStr};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::{JoinHandle, Thread};
use std::time::Duration;

pub const CALIBRATED_KHR: &CStr = ash::khr::calibrated_timestamps::NAME;

/// The timing queue's size per swapchain: results of about a second at 60 Hz, far more
/// than are outstanding while the reading thread keeps up.
pub const QUEUE: u32 = 64;
/// Requests stop this far short of a full queue (reads in flight, presents on other threads).
const QUEUE_MARGIN: u32 = 8;
/// How often the thread reads results while presents are outstanding.
const POLL: Duration = Duration::from_millis(2);
/// Presents queued for the reading thread; a full ring drops the present's report.
const RING: usize = 256;
/// Results read per call.
const BATCH: usize = 32;
/// Stages per result we make room for (we ask for one).
const STAGES: usize = 4;
/// Most swapchains one present may name and still get timing (stack arrays).
const MAX_SWAPCHAINS: usize = 8;
/// A present without a result this long after it is given up (as the dump's join does).
const GIVE_UP_NS: u64 = framescope_core::display::join::BOUND_NS;
/// The longest device destruction waits for the reading thread.
const JOIN_CAP: Duration = Duration::from_secs(1);

static READER: Site = Site::new("present_timing thread");

/// Whether the device offers present timing and its dependencies with the features; `Err`
/// says why not.
pub fn supported(
    inst: &crate::dispatch::instance::Instance,
    phys: vk::PhysicalDevice,
    exts: &[vk::ExtensionProperties],
) -> Result<(), &'static str> {
    let has = |n: &CStr| exts.iter().any(|e| e.extension_name_as_c_str() == Ok(n));
    if !has(PRESENT_TIMING) {
        return Err("VK_EXT_present_timing not offered by the device");
    }
    if !has(PRESENT_ID_2) || !has(CALIBRATED_KHR) {
        return Err(
            "the device offers VK_EXT_present_timing without VK_KHR_present_id2 or VK_KHR_calibrated_timestamps",
        );
    }
    if inst.next_surface_caps2.is_none() {
        return Err("the instance has no VK_KHR_get_surface_capabilities2 (VK_EXT_present_timing requires it)");
    }
    // As for present_wait: the features query is a Vulkan 1.1 command.
    let (timing, id2) = inst
        .present_timing_features(phys)
        .ok_or("the app's instance is Vulkan 1.0: the features of VK_EXT_present_timing cannot be asked for")?;
    if timing && id2 {
        Ok(())
    } else {
        Err("the device offers VK_EXT_present_timing without its presentTiming or presentId2 feature")
    }
}

/// The swapchain create flags present timing needs, where the surface supports it and a
/// useful stage can be reported; with the stage to ask for. `None`: this swapchain goes
/// without (present_wait may still cover it).
pub fn swapchain_plan(
    dev: &crate::dispatch::device::Device,
    ci: &vk::SwapchainCreateInfoKHR<'_>,
) -> Option<(vk::SwapchainCreateFlagsKHR, u32)> {
    let caps = dev.present_timing_surface(ci.surface)?;
    if !caps.timing || !caps.id2 {
        return None;
    }
    // First pixel visible is when the user sees it; first pixel out (scan-out) where the
    // engine cannot tell (VkPresentStageFlagBitsEXT).
    let stage = [STAGE_IMAGE_FIRST_PIXEL_VISIBLE, STAGE_IMAGE_FIRST_PIXEL_OUT]
        .into_iter()
        .find(|s| caps.stage_queries & s != 0)?;
    Some((SWAPCHAIN_CREATE_PRESENT_TIMING | SWAPCHAIN_CREATE_PRESENT_ID_2, stage))
}

/// At swapchain creation: retires `oldSwapchain` for present timing and, where the new one
/// can have it, puts its flags on `adjusted` (the HUD's copy of the create info, or a new
/// copy of the app's `ci`); the stage to ask for, or `None`.
pub fn plan_for<'a>(
    d: &crate::dispatch::device::Device,
    pt: Option<&PresentTiming>,
    ci: Option<&vk::SwapchainCreateInfoKHR<'a>>,
    adjusted: &mut Option<vk::SwapchainCreateInfoKHR<'a>>,
) -> Option<u32> {
    let (pt, ci) = (pt?, ci?);
    if ci.old_swapchain != vk::SwapchainKHR::null() {
        pt.swapchain_ending(ci.old_swapchain, false);
    }
    let (flags, stage) = swapchain_plan(d, ci)?;
    let copy = adjusted.get_or_insert(*ci);
    copy.flags |= flags;
    Some(stage)
}

/// After the swapchain was created with [`plan_for`]'s flags: whether present timing runs on it.
pub fn created(pt: Option<&PresentTiming>, handle: vk::SwapchainKHR, stage: u32) -> bool {
    pt.is_some_and(|pt| pt.swapchain_created(handle, stage))
}

/// One swapchain with present timing.
struct Chain {
    handle: vk::SwapchainKHR,
    stage: u32,
    domain: vk::TimeDomainKHR,
    domain_id: u64,
    last_id: AtomicU64,
    /// Timing requests whose result is not read yet.
    outstanding: AtomicU32,
    stopped: AtomicBool,
    /// Held by the reading thread around each call on this swapchain.
    busy: Mutex<()>,
    refresh_ns: AtomicU64,
    timing_counter: AtomicU64,
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
    lost: AtomicU64,
    /// Presents that went without a timing request because the queue was nearly full.
    skipped: AtomicU64,
}

/// A device's present_timing source.
pub struct PresentTiming {
    app_ids: bool,
    fns: Arc<TimingCalls>,
    feed: Arc<DisplayFeed>,
    shared: Arc<Shared>,
    waker: Thread,
    thread: Mutex<Option<JoinHandle<()>>>,
}

/// What one present chains: stack structs, no heap.
pub struct ChainedTiming {
    ids: [u64; MAX_SWAPCHAINS],
    infos: [PresentTimingInfo; MAX_SWAPCHAINS],
    id2: PresentId2,
    timings: PresentTimingsInfo,
    add_ids: bool,
    /// The frame's swapchain (the present's first) and its id, when timing was asked for.
    first: Option<(Arc<Chain>, u64)>,
}

impl PresentTiming {
    /// Starts the device's reading thread; `None` when the device lacks the commands or the
    /// thread cannot start (the log says why).
    pub fn start(
        dev: &crate::dispatch::device::Device,
        enabled: Augment,
        feed: Arc<DisplayFeed>,
    ) -> Option<PresentTiming> {
        if !enabled.on {
            return None;
        }
        Self::spawn(dev.timing_calls()?, enabled.app_ids, feed)
    }

    /// Starts the reading thread on `fns`.
    fn spawn(fns: TimingCalls, app_ids: bool, feed: Arc<DisplayFeed>) -> Option<PresentTiming> {
        let shared = Arc::new(Shared {
            ring: ArrayQueue::new(RING),
            chains: RwLock::new(HashMap::default()),
            stop: AtomicBool::new(false),
            lost: AtomicU64::new(0),
            skipped: AtomicU64::new(0),
        });
        let fns = Arc::new(fns);
        let (s, fd, f) = (Arc::clone(&shared), Arc::clone(&feed), Arc::clone(&fns));
        let thread = std::thread::Builder::new()
            .name("fs-present-timing".into())
            .spawn(move || run(&s, &fd, &f))
            .map_err(|e| framescope_core::log::error(format_args!("present_timing: no reading thread ({e})")))
            .ok()?;
        Some(PresentTiming {
            app_ids,
            fns,
            feed,
            shared,
            waker: thread.thread().clone(),
            thread: Mutex::new(Some(thread)),
        })
    }

    /// A swapchain created with [`swapchain_plan`]'s flags: sizes its timing queue and picks its
    /// time domain (creation time, on the app's thread: once per swapchain). `false`: present
    /// timing does not run on it (the log says why).
    pub fn swapchain_created(&self, handle: vk::SwapchainKHR, stage: u32) -> bool {
        let Some((domain, domain_id)) = self.pick_domain(handle) else {
            framescope_core::log::info(format_args!("present_timing: the swapchain lists no time domain"));
            return false;
        };
        // A swapchain just created with the present timing flag, on the app's thread.
        let r = self.fns.set_queue_size(handle, QUEUE);
        if r != vk::Result::SUCCESS {
            framescope_core::log::info(format_args!(
                "present_timing: vkSetSwapchainPresentTimingQueueSizeEXT returned {r:?}"
            ));
            return false;
        }
        let c = Arc::new(Chain {
            handle,
            stage,
            domain,
            domain_id,
            last_id: AtomicU64::new(0),
            outstanding: AtomicU32::new(0),
            stopped: AtomicBool::new(false),
            busy: Mutex::new(()),
            refresh_ns: AtomicU64::new(0),
            timing_counter: AtomicU64::new(u64::MAX),
        });
        refresh(&self.fns, &c);
        self.shared.chains.write().insert(vk::Handle::as_raw(handle), c);
        true
    }

    /// CLOCK_MONOTONIC where the swapchain offers it (framescope's clock: no mapping), else
    /// a nanosecond domain that calibrates to it (see the module doc).
    fn pick_domain(&self, handle: vk::SwapchainKHR) -> Option<(vk::TimeDomainKHR, u64)> {
        let domains = self.fns.time_domains(handle)?;
        let pairs = || domains.iter().copied();
        let mono = pairs().find(|(d, _)| *d == vk::TimeDomainKHR::CLOCK_MONOTONIC);
        // Another domain needs vkGetCalibratedTimestampsKHR to reach CLOCK_MONOTONIC, and
        // nanoseconds: the device domain counts GPU ticks and QPC is Windows', so neither.
        let calibrated = [
            TIME_DOMAIN_PRESENT_STAGE_LOCAL,
            TIME_DOMAIN_SWAPCHAIN_LOCAL,
            vk::TimeDomainKHR::CLOCK_MONOTONIC_RAW,
        ];
        mono.or_else(|| {
            self.fns
                .can_calibrate()
                .then(|| calibrated.iter().find_map(|want| pairs().find(|(d, _)| d == want)))
                .flatten()
        })
    }

    /// As `present_wait::PresentWait::swapchain_ending`: no call on it starts from now on,
    /// and this returns once one in flight has (reads do not block).
    pub fn swapchain_ending(&self, handle: vk::SwapchainKHR, destroyed: bool) {
        let raw = vk::Handle::as_raw(handle);
        let c = if destroyed {
            self.shared.chains.write().remove(&raw)
        } else {
            self.shared.chains.read().get(&raw).cloned()
        };
        if let Some(c) = c {
            c.stopped.store(true, Ordering::Release);
            drop(c.busy.lock());
        }
    }

    /// Whether frames presented to `handle` get their display time from present timing (for
    /// merging with other sources: present timing wins where it runs).
    #[allow(dead_code)] // through `display::present_timing_covers`, for the X11 Present source
    pub fn covers(&self, handle: vk::SwapchainKHR) -> bool {
        self.shared
            .chains
            .read()
            .get(&vk::Handle::as_raw(handle))
            .is_some_and(|c| !c.stopped.load(Ordering::Acquire))
    }

    /// The structs for a present of `swapchains` with the app's ids `app` (see the module
    /// doc).
    pub fn timing_for(&self, swapchains: &[vk::SwapchainKHR], app: &AppPresentIds<'_>) -> ChainedTiming {
        let mut out = ChainedTiming {
            ids: [0; MAX_SWAPCHAINS],
            infos: [PresentTimingInfo {
                s_type: ST_PRESENT_TIMING_INFO,
                p_next: std::ptr::null(),
                flags: 0,
                target_time: 0,
                time_domain_id: 0,
                present_stage_queries: 0,
                target_time_domain_present_stage: 0,
            }; MAX_SWAPCHAINS],
            id2: PresentId2 {
                s_type: ST_PRESENT_ID_2,
                p_next: std::ptr::null(),
                swapchain_count: 0,
                p_present_ids: std::ptr::null(),
            },
            timings: PresentTimingsInfo {
                s_type: ST_PRESENT_TIMINGS_INFO,
                p_next: std::ptr::null(),
                swapchain_count: 0,
                p_timing_infos: std::ptr::null(),
            },
            add_ids: false,
            first: None,
        };
        let n = swapchains.len();
        if n == 0 || n > MAX_SWAPCHAINS {
            return out;
        }
        // The app's own ids, where it passes them (either extension's struct).
        let app_ids = [app.id2, app.id].into_iter().flatten().find(|ids| ids.len() == n);
        let use_app = self.app_ids || app_ids.is_some();
        let chains = self.shared.chains.read();
        let mut live: [Option<&Arc<Chain>>; MAX_SWAPCHAINS] = [None; MAX_SWAPCHAINS];
        for (i, s) in swapchains.iter().enumerate() {
            live[i] = chains
                .get(&vk::Handle::as_raw(*s))
                .filter(|c| !c.stopped.load(Ordering::Acquire));
        }
        // Every entry of VkPresentTimingsInfoEXT names a time domain id of its swapchain
        // (VUID-VkPresentTimingInfoEXT-timeDomainId-12400): a swapchain without present timing
        // has none, so a present that names one goes without.
        if live[..n].iter().any(Option::is_none) {
            return out;
        }
        let mut any = false;
        for (i, c) in live[..n].iter().flatten().enumerate() {
            out.infos[i].time_domain_id = c.domain_id;
            let id = if use_app {
                app_ids.map_or(0, |a| a[i])
            } else {
                c.last_id.fetch_add(1, Ordering::Relaxed) + 1
            };
            out.ids[i] = id;
            if id == 0 {
                continue;
            }
            // A request that could fill the queue would fail the app's present.
            if c.outstanding.fetch_add(1, Ordering::AcqRel) >= QUEUE - QUEUE_MARGIN {
                c.outstanding.fetch_sub(1, Ordering::AcqRel);
                self.shared.skipped.fetch_add(1, Ordering::Relaxed);
                continue;
            }
            out.infos[i].present_stage_queries = c.stage;
            any = true;
            if i == 0 {
                out.first = Some((Arc::clone(c), id));
            }
        }
        if any {
            out.timings.swapchain_count = n as u32;
            out.add_ids = !use_app;
        }
        out
    }

    /// After the present returned `r`: queue the frame's read, or take back the requests of
    /// a present that queued nothing.
    /// `frame` is `None` where the present ended no frame: its result is read (and dropped)
    /// with the next frame's.
    pub fn presented(&self, t: &ChainedTiming, r: vk::Result, frame: Option<u64>, t_ns: u64) {
        let Some((c, id)) = t.first.as_ref() else { return };
        if !matches!(r, vk::Result::SUCCESS | vk::Result::SUBOPTIMAL_KHR) {
            // Nothing was queued: no result will come for this request.
            c.outstanding.fetch_sub(1, Ordering::AcqRel);
            return;
        }
        let Some(frame) = frame else { return };
        if self.feed.source() != Ok(DisplaySource::PresentTiming) {
            self.feed.set_source(DisplaySource::PresentTiming);
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

    /// At device destruction: stops the thread.
    pub fn stop(&self) {
        self.shared.stop.store(true, Ordering::Release);
        self.waker.unpark();
        if let Some(t) = self.thread.lock().take() {
            super::threads::join_bounded(t, JOIN_CAP, "present_timing: the reading thread");
        }
        let (lost, skipped) = (
            self.shared.lost.load(Ordering::Relaxed),
            self.shared.skipped.load(Ordering::Relaxed),
        );
        if lost + skipped > 0 {
            framescope_core::log::info(format_args!(
                "present_timing: {lost} presents not read (ring full), {skipped} without a request (timing queue nearly full)"
            ));
        }
    }
}

impl ChainedTiming {
    /// `info` with our structs in front of its chain, when a present asks for timing; the
    /// result points into `self`, which must stay put until the call returns.
    pub fn chain_onto(&mut self, info: &vk::PresentInfoKHR<'_>) -> Option<vk::PresentInfoKHR<'static>> {
        if self.timings.swapchain_count == 0 {
            return None;
        }
        self.timings.p_timing_infos = self.infos.as_ptr();
        self.timings.p_next = info.p_next;
        let mut head: *const c_void = std::ptr::addr_of!(self.timings).cast();
        if self.add_ids {
            self.id2.swapchain_count = self.timings.swapchain_count;
            self.id2.p_present_ids = self.ids.as_ptr();
            self.id2.p_next = head;
            head = std::ptr::addr_of!(self.id2).cast();
        }
        Some(vk::PresentInfoKHR {
            s_type: info.s_type,
            p_next: head,
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

/// Re-reads the swapchain's refresh duration when its timing properties changed. The caller
/// holds `busy` with `stopped` false, or created the swapchain.
fn refresh(fns: &TimingCalls, c: &Chain) {
    // `None` (VK_NOT_READY): not known yet; asked again when the counter moves.
    if let Some((refresh_ns, counter)) = fns.timing_properties(c.handle) {
        c.refresh_ns.store(refresh_ns, Ordering::Relaxed);
        c.timing_counter.store(counter, Ordering::Relaxed);
    }
}

/// Offset (ns) from the swapchain's domain to CLOCK_MONOTONIC; 0 for CLOCK_MONOTONIC. The
/// caller holds `busy`.
fn offset_ns(fns: &TimingCalls, c: &Chain) -> Option<i64> {
    if c.domain == vk::TimeDomainKHR::CLOCK_MONOTONIC {
        return Some(0);
    }
    fns.monotonic_offset(c.handle, c.domain, c.stage, c.domain_id)
}

/// A result read before its present was queued for the thread: the engine can finish a
/// present's stage (a short refresh away) before the app's thread, back from
/// `vkQueuePresentKHR`, has pushed it. Kept until its present arrives.
struct Early {
    chain: Arc<Chain>,
    id: u64,
    shown: u64,
    read_ns: u64,
}

/// The reading thread's buffers, allocated once.
struct Scratch {
    pending: Vec<Pending>,
    early: Vec<Early>,
    stages: Vec<[PresentStageTime; STAGES]>,
    results: Vec<PastPresentationTiming>,
    logged: bool,
}

/// The reading thread.
fn run(s: &Shared, feed: &DisplayFeed, fns: &TimingCalls) {
    let mut sc = Scratch {
        pending: Vec::with_capacity(RING),
        early: Vec::with_capacity(EARLY),
        stages: vec![[PresentStageTime::default(); STAGES]; BATCH],
        results: Vec::with_capacity(BATCH),
        logged: false,
    };
    while !s.stop.load(Ordering::Acquire) {
        while let Some(p) = s.ring.pop() {
            sc.pending.push(p);
        }
        if sc.pending.is_empty() {
            // Every present and `stop` unpark it (an earlier unpark makes this return at once).
            std::thread::park();
            continue;
        }
        guarded(&READER, || read(feed, fns, &mut sc));
        std::thread::park_timeout(POLL);
    }
}

/// Results kept for presents not queued yet: far more than are in flight.
const EARLY: usize = 64;

fn report(feed: &DisplayFeed, p: &Pending, shown: u64) {
    feed.report(DisplayReport {
        frame: p.frame,
        source: DisplaySource::PresentTiming,
        shown_ns: Some(shown),
        mode: PresentationMode::Unknown,
        refresh_ns: Some(p.chain.refresh_ns.load(Ordering::Relaxed)).filter(|&r| r > 0),
    });
}

/// Reads the results of every swapchain with outstanding presents once, reports what
/// matches, and gives up presents of stopped swapchains or older than [`GIVE_UP_NS`].
fn read(feed: &DisplayFeed, fns: &TimingCalls, sc: &mut Scratch) {
    let Scratch {
        pending,
        early,
        stages,
        results,
        logged,
    } = sc;
    // Results that came before their presents.
    pending.retain(|p| {
        match early
            .iter()
            .position(|e| Arc::ptr_eq(&e.chain, &p.chain) && e.id == p.id)
        {
            Some(k) => {
                report(feed, p, early.swap_remove(k).shown);
                false
            }
            None => true,
        }
    });
    let now = framescope_core::clock::monotonic_now_ns();
    // Each swapchain with outstanding presents once per round.
    let mut i = 0;
    while i < pending.len() {
        let c = Arc::clone(&pending[i].chain);
        i += 1;
        if pending[..i - 1].iter().any(|p| Arc::ptr_eq(&p.chain, &c)) {
            continue;
        }
        let busy = c.busy.lock();
        if !c.stopped.load(Ordering::Acquire) {
            read_chain(fns, &c, stages, results, logged, |id, shown| {
                match pending.iter().position(|p| Arc::ptr_eq(&p.chain, &c) && p.id == id) {
                    // `remove` keeps the others in order (the loop's index).
                    Some(k) => report(feed, &pending.remove(k), shown),
                    None => {
                        if early.len() == EARLY {
                            early.remove(0);
                        }
                        early.push(Early {
                            chain: Arc::clone(&c),
                            id,
                            shown,
                            read_ns: now,
                        });
                    }
                }
            });
        }
        drop(busy);
        // Removals before `i` shift the list: a swapchain skipped so is read on the next round.
        i = i.min(pending.len());
    }
    pending.retain(|p| !p.chain.stopped.load(Ordering::Acquire) && now.saturating_sub(p.queued_ns) < GIVE_UP_NS);
    early.retain(|e| !e.chain.stopped.load(Ordering::Acquire) && now.saturating_sub(e.read_ns) < GIVE_UP_NS);
}

/// One swapchain's complete results, until the queue has none left. The caller holds `busy`
/// with `stopped` false.
fn read_chain(
    fns: &TimingCalls,
    c: &Chain,
    stages: &mut [[PresentStageTime; STAGES]],
    results: &mut Vec<PastPresentationTiming>,
    logged: &mut bool,
    mut found: impl FnMut(u64, u64),
) {
    let mut offset: Option<Option<i64>> = None;
    loop {
        let read = fns.past_timings(c.handle, stages, results);
        let r = read.result;
        if !matches!(r, vk::Result::SUCCESS | vk::Result::INCOMPLETE) {
            c.stopped.store(true, Ordering::Release);
            if !std::mem::replace(logged, true) {
                framescope_core::log::info(format_args!(
                    "present_timing: vkGetPastPresentationTimingEXT returned {r:?}; no more reads on that swapchain"
                ));
            }
            return;
        }
        if read.timing_properties_counter != c.timing_counter.load(Ordering::Relaxed) {
            refresh(fns, c);
        }
        let n = read.count;
        for (t, st) in results[..n].iter().zip(stages.iter()) {
            if t.report_complete != vk::TRUE {
                continue;
            }
            // Saturating: a result of a request made before this source counted it (none
            // should come) must not wrap the count and stop all requests.
            let _ = c
                .outstanding
                .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1));
            // The driver wrote this result's stages into its own array of ours.
            let st = &st[..(t.present_stage_count as usize).min(STAGES)];
            // Time 0: the stage was not reached (the image was never shown).
            let Some(time) = st.iter().find(|s| s.stage == c.stage && s.time != 0).map(|s| s.time) else {
                continue;
            };
            let off = *offset.get_or_insert_with(|| offset_ns(fns, c));
            if let Some(off) = off {
                found(t.present_id, time.saturating_add_signed(off));
            }
        }
        if r == vk::Result::SUCCESS || n == 0 {
            return;
        }
    }
}

// The fakes below stand in for the driver behind the ABI of `VK_EXT_present_timing`: they
// write through the pointers the driver gets, and the checks read the chain a present passes
// down, as a driver would.
#[cfg(test)]
#[allow(unsafe_code)]
mod tests {
    use super::*;
    use ash::vk::Handle;
    use std::sync::Mutex as StdMutex;
    use std::time::Instant;

    unsafe extern "system" fn queue_size(_: vk::Device, _: vk::SwapchainKHR, _: u32) -> vk::Result {
        vk::Result::SUCCESS
    }

    unsafe extern "system" fn timing_props(
        _: vk::Device,
        _: vk::SwapchainKHR,
        p: *mut SwapchainTimingProperties,
        counter: *mut u64,
    ) -> vk::Result {
        // SAFETY: our caller's structs.
        unsafe {
            (*p).refresh_duration = 16_666_667;
            *counter = 1;
        }
        vk::Result::SUCCESS
    }

    unsafe extern "system" fn monotonic_only(
        _: vk::Device,
        _: vk::SwapchainKHR,
        p: *mut SwapchainTimeDomainProperties,
        _: *mut u64,
    ) -> vk::Result {
        // SAFETY: our caller's struct and arrays of its count.
        unsafe {
            let p = &mut *p;
            if !p.p_time_domains.is_null() {
                *p.p_time_domains = vk::TimeDomainKHR::CLOCK_MONOTONIC;
                *p.p_time_domain_ids = 3;
            }
            p.time_domain_count = 1;
        }
        vk::Result::SUCCESS
    }

    /// Results the fake engine hands out on the next read: (present id, stage time).
    static READY: StdMutex<Vec<(u64, u64)>> = StdMutex::new(Vec::new());
    /// The tests share READY: one at a time.
    static SERIAL: StdMutex<()> = StdMutex::new(());

    unsafe extern "system" fn past(
        _: vk::Device,
        _: *const PastPresentationTimingInfo,
        p: *mut PastPresentationTimingProperties,
    ) -> vk::Result {
        let mut ready = READY.lock().unwrap();
        // SAFETY: our caller's arrays of the counts it gives.
        unsafe {
            let p = &mut *p;
            p.timing_properties_counter = 1;
            let n = ready.len().min(p.presentation_timing_count as usize);
            for (k, (id, t)) in ready.drain(..n).enumerate() {
                let out = &mut *p.p_presentation_timings.add(k);
                out.present_id = id;
                out.report_complete = vk::TRUE;
                out.present_stage_count = 1;
                *out.p_present_stages = PresentStageTime {
                    stage: STAGE_IMAGE_FIRST_PIXEL_OUT,
                    time: t,
                };
            }
            p.presentation_timing_count = n as u32;
        }
        vk::Result::SUCCESS
    }

    fn timing(feed: &Arc<DisplayFeed>) -> PresentTiming {
        let fns = TimingCalls::with(queue_size, timing_props, monotonic_only, past);
        PresentTiming::spawn(fns, false, Arc::clone(feed)).unwrap()
    }

    /// One present of `sc` as the hook makes it: the structs chained, then `presented`.
    fn present(pt: &PresentTiming, sc: vk::SwapchainKHR, frame: u64) -> (u64, u32) {
        let scs = [sc];
        let info = vk::PresentInfoKHR {
            swapchain_count: 1,
            p_swapchains: scs.as_ptr(),
            ..Default::default()
        };
        let mut t = pt.timing_for(&scs, &AppPresentIds::default());
        let down = t.chain_onto(&info);
        let got = down.map_or((0, 0), |d| {
            // SAFETY: our chain: VkPresentId2KHR in front of VkPresentTimingsInfoEXT.
            unsafe {
                let id2 = &*(d.p_next as *const PresentId2);
                let timings = &*(id2.p_next as *const PresentTimingsInfo);
                assert_eq!((id2.s_type, timings.s_type), (ST_PRESENT_ID_2, ST_PRESENT_TIMINGS_INFO));
                assert_eq!((*timings.p_timing_infos).time_domain_id, 3);
                (*id2.p_present_ids, (*timings.p_timing_infos).present_stage_queries)
            }
        });
        pt.presented(
            &t,
            vk::Result::SUCCESS,
            Some(frame),
            framescope_core::clock::monotonic_now_ns(),
        );
        got
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

    #[test]
    fn requests_stop_short_of_a_full_timing_queue_and_resume_as_results_are_read() {
        let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        READY.lock().unwrap().clear();
        let feed = Arc::new(DisplayFeed::default());
        let pt = timing(&feed);
        let sc = vk::SwapchainKHR::from_raw(21);
        assert!(pt.swapchain_created(sc, STAGE_IMAGE_FIRST_PIXEL_OUT));
        // No results come: requests stop at QUEUE - QUEUE_MARGIN, so no present can meet a
        // full queue (VK_ERROR_PRESENT_TIMING_QUEUE_FULL_EXT would fail the app's present).
        let asked: Vec<u32> = (0..QUEUE as u64 + 4).map(|f| present(&pt, sc, f).1).collect();
        let limit = (QUEUE - QUEUE_MARGIN) as usize;
        assert!(asked[..limit].iter().all(|&s| s == STAGE_IMAGE_FIRST_PIXEL_OUT));
        assert!(asked[limit..].iter().all(|&s| s == 0), "{asked:?}");
        // The engine finishes the first one: its frame is reported and a request goes again.
        READY.lock().unwrap().push((1, 5_000));
        let got = drain(&feed, 1);
        assert_eq!(got.len(), 1);
        assert_eq!(
            (got[0].frame, got[0].shown_ns, got[0].refresh_ns, got[0].source),
            (0, Some(5_000), Some(16_666_667), DisplaySource::PresentTiming)
        );
        assert_eq!(present(&pt, sc, 100).1, STAGE_IMAGE_FIRST_PIXEL_OUT);
        pt.swapchain_ending(sc, true);
        pt.stop();
    }

    #[test]
    fn a_result_read_before_its_present_is_queued_still_reports_its_frame() {
        let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        READY.lock().unwrap().clear();
        let feed = Arc::new(DisplayFeed::default());
        let pt = timing(&feed);
        let sc = vk::SwapchainKHR::from_raw(22);
        assert!(pt.swapchain_created(sc, STAGE_IMAGE_FIRST_PIXEL_OUT));
        READY.lock().unwrap().push((1, 1_000));
        assert_eq!(present(&pt, sc, 7).0, 1);
        assert_eq!(drain(&feed, 1).iter().map(|r| r.frame).collect::<Vec<_>>(), [7]);
        // Frame 8's present (id 2) has gone down, and the engine finished it before the app's
        // thread came back to queue it: the thread reads it first (frame 7's read is still
        // going on: the queued present below keeps it polling).
        let scs = [sc];
        let info = vk::PresentInfoKHR {
            swapchain_count: 1,
            p_swapchains: scs.as_ptr(),
            ..Default::default()
        };
        let mut t8 = pt.timing_for(&scs, &AppPresentIds::default());
        assert!(t8.chain_onto(&info).is_some());
        // A present with a result that never comes keeps the thread reading meanwhile.
        let mut t9 = pt.timing_for(&scs, &AppPresentIds::default());
        assert!(t9.chain_onto(&info).is_some());
        pt.presented(
            &t9,
            vk::Result::SUCCESS,
            Some(9),
            framescope_core::clock::monotonic_now_ns(),
        );
        READY.lock().unwrap().push((2, 2_000));
        let deadline = Instant::now() + Duration::from_secs(5);
        while !READY.lock().unwrap().is_empty() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
        assert!(READY.lock().unwrap().is_empty(), "the result was not read");
        pt.presented(
            &t8,
            vk::Result::SUCCESS,
            Some(8),
            framescope_core::clock::monotonic_now_ns(),
        );
        let got = drain(&feed, 1);
        assert_eq!(
            got.iter().map(|r| (r.frame, r.shown_ns)).collect::<Vec<_>>(),
            [(8, Some(2_000))]
        );
        pt.stop();
    }
}
