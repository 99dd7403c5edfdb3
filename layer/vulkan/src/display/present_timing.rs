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

use super::timing_abi::*;
pub use crate::dispatch::device::PresentTimingAugment as Augment;
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
    let f2 = inst
        .next_features2
        .filter(|_| inst.api_version >= vk::API_VERSION_1_1)
        .ok_or("the app's instance is Vulkan 1.0: the features of VK_EXT_present_timing cannot be asked for")?;
    let mut timing = PhysicalDevicePresentTimingFeatures {
        s_type: ST_PHYSICAL_DEVICE_PRESENT_TIMING_FEATURES,
        p_next: std::ptr::null_mut(),
        present_timing: vk::FALSE,
        present_at_absolute_time: vk::FALSE,
        present_at_relative_time: vk::FALSE,
    };
    let mut id2 = PhysicalDevicePresentId2Features {
        s_type: ST_PHYSICAL_DEVICE_PRESENT_ID_2_FEATURES,
        p_next: std::ptr::addr_of_mut!(timing).cast(),
        present_id2: vk::FALSE,
    };
    let mut feats = vk::PhysicalDeviceFeatures2 {
        p_next: std::ptr::addr_of_mut!(id2).cast(),
        ..Default::default()
    };
    // SAFETY: a physical device of this instance and a chain of our own structs.
    unsafe { f2(phys, &mut feats) };
    if timing.present_timing == vk::TRUE && id2.present_id2 == vk::TRUE {
        Ok(())
    } else {
        Err("the device offers VK_EXT_present_timing without its presentTiming or presentId2 feature")
    }
}

/// The two feature structs for the device create info, and how to undo what `apply` did to
/// the app's own structs (as `present_wait::FeatureChain`).
pub struct FeatureChain {
    timing: PhysicalDevicePresentTimingFeatures,
    id2: PhysicalDevicePresentId2Features,
    patched: [Option<(*mut vk::Bool32, vk::Bool32)>; 2],
}

impl Default for FeatureChain {
    fn default() -> Self {
        FeatureChain {
            timing: PhysicalDevicePresentTimingFeatures {
                s_type: ST_PHYSICAL_DEVICE_PRESENT_TIMING_FEATURES,
                p_next: std::ptr::null_mut(),
                present_timing: vk::TRUE,
                present_at_absolute_time: vk::FALSE,
                present_at_relative_time: vk::FALSE,
            },
            id2: PhysicalDevicePresentId2Features {
                s_type: ST_PHYSICAL_DEVICE_PRESENT_ID_2_FEATURES,
                p_next: std::ptr::null_mut(),
                present_id2: vk::TRUE,
            },
            patched: [None, None],
        }
    }
}

impl FeatureChain {
    /// Turns `presentTiming` and `presentId2` on in `copy`: the app's struct of that type
    /// where it chains one (VUID-VkDeviceCreateInfo-sType-unique), else ours in front.
    ///
    /// # Safety
    /// `copy`'s chain is the app's, valid and writable until `restore`; `self` outlives the
    /// create call and does not move meanwhile.
    pub unsafe fn apply(&mut self, copy: &mut vk::DeviceCreateInfo<'_>) {
        // SAFETY: the caller's contract; structs found by sType are of that type.
        unsafe {
            let app_t = crate::dispatch::chain::find(copy.p_next, ST_PHYSICAL_DEVICE_PRESENT_TIMING_FEATURES)
                as *mut PhysicalDevicePresentTimingFeatures;
            let app_i = crate::dispatch::chain::find(copy.p_next, ST_PHYSICAL_DEVICE_PRESENT_ID_2_FEATURES)
                as *mut PhysicalDevicePresentId2Features;
            if app_t.is_null() {
                self.timing.p_next = copy.p_next as *mut c_void;
                copy.p_next = std::ptr::addr_of!(self.timing).cast();
            } else {
                let f = std::ptr::addr_of_mut!((*app_t).present_timing);
                self.patched[0] = Some((f, *f));
                *f = vk::TRUE;
            }
            if app_i.is_null() {
                self.id2.p_next = copy.p_next as *mut c_void;
                copy.p_next = std::ptr::addr_of!(self.id2).cast();
            } else {
                let f = std::ptr::addr_of_mut!((*app_i).present_id2);
                self.patched[1] = Some((f, *f));
                *f = vk::TRUE;
            }
        }
    }

    /// Puts the app's feature fields back.
    ///
    /// # Safety
    /// The app's structs `apply` patched are still valid.
    pub unsafe fn restore(&mut self) {
        for (f, old) in self.patched.iter_mut().filter_map(Option::take) {
            // SAFETY: the caller's contract.
            unsafe { *f = old };
        }
    }
}

/// The swapchain create flags present timing needs, where the surface supports it and a
/// useful stage can be reported; with the stage to ask for. `None`: this swapchain goes
/// without (present_wait may still cover it).
///
/// # Safety
/// `ci` is the app's valid create info.
pub unsafe fn swapchain_plan(
    dev: &crate::dispatch::device::Device,
    ci: &vk::SwapchainCreateInfoKHR<'_>,
) -> Option<(vk::SwapchainCreateFlagsKHR, u32)> {
    let caps2 = dev.instance.next_surface_caps2?;
    let mut timing = PresentTimingSurfaceCapabilities {
        s_type: ST_PRESENT_TIMING_SURFACE_CAPABILITIES,
        p_next: std::ptr::null_mut(),
        present_timing_supported: vk::FALSE,
        present_at_absolute_time_supported: vk::FALSE,
        present_at_relative_time_supported: vk::FALSE,
        present_stage_queries: 0,
    };
    let mut id2 = SurfaceCapabilitiesPresentId2 {
        s_type: ST_SURFACE_CAPABILITIES_PRESENT_ID_2,
        p_next: std::ptr::addr_of_mut!(timing).cast(),
        present_id2_supported: vk::FALSE,
    };
    let info = vk::PhysicalDeviceSurfaceInfo2KHR {
        surface: ci.surface,
        ..Default::default()
    };
    let mut caps = vk::SurfaceCapabilities2KHR {
        p_next: std::ptr::addr_of_mut!(id2).cast(),
        ..Default::default()
    };
    // SAFETY: the app's surface on this device's physical device; our chain.
    let r = unsafe { caps2(dev.physical, &info, &mut caps) };
    if r != vk::Result::SUCCESS || timing.present_timing_supported != vk::TRUE || id2.present_id2_supported != vk::TRUE
    {
        return None;
    }
    // First pixel visible is when the user sees it; first pixel out (scan-out) where the
    // engine cannot tell (VkPresentStageFlagBitsEXT).
    let stage = [STAGE_IMAGE_FIRST_PIXEL_VISIBLE, STAGE_IMAGE_FIRST_PIXEL_OUT]
        .into_iter()
        .find(|s| timing.present_stage_queries & s != 0)?;
    Some((SWAPCHAIN_CREATE_PRESENT_TIMING | SWAPCHAIN_CREATE_PRESENT_ID_2, stage))
}

/// At swapchain creation: retires `oldSwapchain` for present timing and, where the new one
/// can have it, puts its flags on `adjusted` (the HUD's copy of the create info, or a new
/// copy of the app's); the stage to ask for, or `None`.
///
/// # Safety
/// `ci` is null or the app's valid create info.
pub unsafe fn plan_for<'a>(
    d: &crate::dispatch::device::Device,
    pt: Option<&PresentTiming>,
    ci: *const vk::SwapchainCreateInfoKHR<'a>,
    adjusted: &mut Option<vk::SwapchainCreateInfoKHR<'a>>,
) -> Option<u32> {
    let pt = pt?;
    // SAFETY: the caller's contract.
    let ci = unsafe { ci.as_ref() }?;
    if ci.old_swapchain != vk::SwapchainKHR::null() {
        pt.swapchain_ending(ci.old_swapchain, false);
    }
    // SAFETY: as above.
    let (flags, stage) = unsafe { swapchain_plan(d, ci) }?;
    let copy = adjusted.get_or_insert(*ci);
    copy.flags |= flags;
    Some(stage)
}

/// After the swapchain was created with [`plan_for`]'s flags: whether present timing runs on it.
pub fn created(pt: Option<&PresentTiming>, handle: vk::SwapchainKHR, stage: u32) -> bool {
    pt.is_some_and(|pt| pt.swapchain_created(handle, stage))
}

struct Fns {
    set_queue_size: SetQueueSizeFn,
    timing_properties: GetTimingPropertiesFn,
    time_domains: GetTimeDomainPropertiesFn,
    past: GetPastTimingFn,
    calibrate: Option<vk::PFN_vkGetCalibratedTimestampsKHR>,
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
    device: vk::Device,
    fns: Arc<Fns>,
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

fn load<F>(dev: &crate::dispatch::device::Device, name: &CStr) -> Option<F> {
    // SAFETY: querying a command of a live device.
    let f = unsafe { (dev.next_gdpa)(dev.handle, name.as_ptr()) }?;
    // SAFETY: the caller names the command whose signature `F` is (a fn pointer type).
    Some(unsafe { std::mem::transmute_copy::<unsafe extern "system" fn(), F>(&f) })
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
        let fns = Fns {
            set_queue_size: load(dev, c"vkSetSwapchainPresentTimingQueueSizeEXT")?,
            timing_properties: load(dev, c"vkGetSwapchainTimingPropertiesEXT")?,
            time_domains: load(dev, c"vkGetSwapchainTimeDomainPropertiesEXT")?,
            past: load(dev, c"vkGetPastPresentationTimingEXT")?,
            calibrate: load(dev, c"vkGetCalibratedTimestampsKHR"),
        };
        Self::spawn(fns, dev.handle, enabled.app_ids, feed)
    }

    /// Starts the reading thread on `fns` for `device`.
    fn spawn(fns: Fns, device: vk::Device, app_ids: bool, feed: Arc<DisplayFeed>) -> Option<PresentTiming> {
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
            .spawn(move || run(&s, &fd, device, &f))
            .map_err(|e| framescope_core::log::error(format_args!("present_timing: no reading thread ({e})")))
            .ok()?;
        Some(PresentTiming {
            app_ids,
            device,
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
        // SAFETY: a live swapchain of this device, created with the present timing flag.
        let r = unsafe { (self.fns.set_queue_size)(self.device, handle, QUEUE) };
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
        refresh(&self.fns, self.device, &c);
        self.shared.chains.write().insert(vk::Handle::as_raw(handle), c);
        true
    }

    /// CLOCK_MONOTONIC where the swapchain offers it (framescope's clock: no mapping), else
    /// a nanosecond domain that calibrates to it (see the module doc).
    fn pick_domain(&self, handle: vk::SwapchainKHR) -> Option<(vk::TimeDomainKHR, u64)> {
        let mut props = SwapchainTimeDomainProperties {
            s_type: ST_SWAPCHAIN_TIME_DOMAIN_PROPERTIES,
            p_next: std::ptr::null_mut(),
            time_domain_count: 0,
            p_time_domains: std::ptr::null_mut(),
            p_time_domain_ids: std::ptr::null_mut(),
        };
        // SAFETY: a live swapchain of this device; the count query (null arrays).
        let r = unsafe { (self.fns.time_domains)(self.device, handle, &mut props, std::ptr::null_mut()) };
        if r != vk::Result::SUCCESS || props.time_domain_count == 0 {
            return None;
        }
        let n = props.time_domain_count as usize;
        let mut domains = vec![vk::TimeDomainKHR::DEVICE; n];
        let mut ids = vec![0u64; n];
        props.p_time_domains = domains.as_mut_ptr();
        props.p_time_domain_ids = ids.as_mut_ptr();
        // SAFETY: arrays of the count just returned.
        let r = unsafe { (self.fns.time_domains)(self.device, handle, &mut props, std::ptr::null_mut()) };
        if !matches!(r, vk::Result::SUCCESS | vk::Result::INCOMPLETE) {
            return None;
        }
        let n = (props.time_domain_count as usize).min(n);
        let pairs = || domains[..n].iter().copied().zip(ids[..n].iter().copied());
        let mono = pairs().find(|(d, _)| *d == vk::TimeDomainKHR::CLOCK_MONOTONIC);
        // Another domain needs vkGetCalibratedTimestampsKHR to reach CLOCK_MONOTONIC, and
        // nanoseconds: the device domain counts GPU ticks and QPC is Windows', so neither.
        let calibrated = [
            TIME_DOMAIN_PRESENT_STAGE_LOCAL,
            TIME_DOMAIN_SWAPCHAIN_LOCAL,
            vk::TimeDomainKHR::CLOCK_MONOTONIC_RAW,
        ];
        mono.or_else(|| {
            self.fns.calibrate?;
            calibrated.iter().find_map(|want| pairs().find(|(d, _)| d == want))
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

    /// The structs for a present of `info` (see the module doc).
    ///
    /// # Safety
    /// `info` is the app's present info (or our copy of it), valid for this call.
    pub unsafe fn timing_for(&self, info: &vk::PresentInfoKHR<'_>) -> ChainedTiming {
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
        let n = info.swapchain_count as usize;
        if n == 0 || n > MAX_SWAPCHAINS || info.p_swapchains.is_null() {
            return out;
        }
        // SAFETY: the caller's contract: swapchain_count valid handles.
        let swapchains = unsafe { std::slice::from_raw_parts(info.p_swapchains, n) };
        // The app's own ids, where it passes them (either extension's struct).
        // SAFETY: the chain is valid for this call; structs found by sType are of that type.
        let app_ids: Option<&[u64]> = unsafe {
            let a2 = crate::dispatch::chain::find(info.p_next, ST_PRESENT_ID_2) as *const PresentId2;
            let a1 = crate::dispatch::chain::find(info.p_next, vk::StructureType::PRESENT_ID_KHR) as *const PresentId2;
            [a2, a1]
                .into_iter()
                .filter_map(|p| p.as_ref())
                .find(|p| !p.p_present_ids.is_null() && p.swapchain_count as usize == n)
                .map(|p| std::slice::from_raw_parts(p.p_present_ids, n))
        };
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

/// Re-reads the swapchain's refresh duration when its timing properties changed.
fn refresh(fns: &Fns, device: vk::Device, c: &Chain) {
    let mut props = SwapchainTimingProperties {
        s_type: ST_SWAPCHAIN_TIMING_PROPERTIES,
        p_next: std::ptr::null_mut(),
        refresh_duration: 0,
        refresh_interval: 0,
    };
    let mut counter = 0u64;
    // SAFETY: a live swapchain (the caller holds `busy` with `stopped` false, or created it).
    let r = unsafe { (fns.timing_properties)(device, c.handle, &mut props, &mut counter) };
    // VK_NOT_READY: not known yet; asked again when the counter moves.
    if r == vk::Result::SUCCESS {
        c.refresh_ns.store(props.refresh_duration, Ordering::Relaxed);
        c.timing_counter.store(counter, Ordering::Relaxed);
    }
}

/// Offset (ns) from the swapchain's domain to CLOCK_MONOTONIC; 0 for CLOCK_MONOTONIC.
fn offset_ns(fns: &Fns, device: vk::Device, c: &Chain) -> Option<i64> {
    if c.domain == vk::TimeDomainKHR::CLOCK_MONOTONIC {
        return Some(0);
    }
    let f = fns.calibrate?;
    // The swapchain's own domains need the swapchain named (VkSwapchainCalibratedTimestampInfoEXT).
    let sc = SwapchainCalibratedTimestampInfo {
        s_type: ST_SWAPCHAIN_CALIBRATED_TIMESTAMP_INFO,
        p_next: std::ptr::null(),
        swapchain: c.handle,
        present_stage: c.stage,
        time_domain_id: c.domain_id,
    };
    let local = c.domain == TIME_DOMAIN_PRESENT_STAGE_LOCAL || c.domain == TIME_DOMAIN_SWAPCHAIN_LOCAL;
    let infos = [
        vk::CalibratedTimestampInfoKHR {
            time_domain: c.domain,
            p_next: if local {
                std::ptr::addr_of!(sc).cast()
            } else {
                std::ptr::null()
            },
            ..Default::default()
        },
        vk::CalibratedTimestampInfoKHR {
            time_domain: vk::TimeDomainKHR::CLOCK_MONOTONIC,
            ..Default::default()
        },
    ];
    let mut ts = [0u64; 2];
    let mut deviation = 0u64;
    // SAFETY: two infos and two results; the swapchain is live (the caller holds `busy`).
    let r = unsafe { f(device, 2, infos.as_ptr(), ts.as_mut_ptr(), &mut deviation) };
    (r == vk::Result::SUCCESS).then(|| ts[1] as i64 - ts[0] as i64)
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
fn run(s: &Shared, feed: &DisplayFeed, device: vk::Device, fns: &Fns) {
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
        guarded(&READER, || read(feed, device, fns, &mut sc));
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
fn read(feed: &DisplayFeed, device: vk::Device, fns: &Fns, sc: &mut Scratch) {
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
            read_chain(fns, device, &c, stages, results, logged, |id, shown| {
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

/// One swapchain's complete results, until the queue has none left.
fn read_chain(
    fns: &Fns,
    device: vk::Device,
    c: &Chain,
    stages: &mut [[PresentStageTime; STAGES]],
    results: &mut Vec<PastPresentationTiming>,
    logged: &mut bool,
    mut found: impl FnMut(u64, u64),
) {
    let info = PastPresentationTimingInfo {
        s_type: ST_PAST_PRESENTATION_TIMING_INFO,
        p_next: std::ptr::null(),
        // Complete results only: each leaves the queue as it is returned.
        flags: 0,
        swapchain: c.handle,
    };
    let mut offset: Option<Option<i64>> = None;
    loop {
        results.clear();
        for st in stages.iter_mut() {
            results.push(PastPresentationTiming {
                s_type: ST_PAST_PRESENTATION_TIMING,
                p_next: std::ptr::null_mut(),
                present_id: 0,
                target_time: 0,
                present_stage_count: STAGES as u32,
                p_present_stages: st.as_mut_ptr(),
                time_domain: vk::TimeDomainKHR::DEVICE,
                time_domain_id: 0,
                report_complete: vk::FALSE,
            });
        }
        let mut props = PastPresentationTimingProperties {
            s_type: ST_PAST_PRESENTATION_TIMING_PROPERTIES,
            p_next: std::ptr::null_mut(),
            timing_properties_counter: 0,
            time_domains_counter: 0,
            presentation_timing_count: results.len() as u32,
            p_presentation_timings: results.as_mut_ptr(),
        };
        // SAFETY: a live swapchain (the caller holds `busy`, `stopped` false); arrays of ours
        // with the counts given.
        let r = unsafe { (fns.past)(device, &info, &mut props) };
        if !matches!(r, vk::Result::SUCCESS | vk::Result::INCOMPLETE) {
            c.stopped.store(true, Ordering::Release);
            if !std::mem::replace(logged, true) {
                framescope_core::log::info(format_args!(
                    "present_timing: vkGetPastPresentationTimingEXT returned {r:?}; no more reads on that swapchain"
                ));
            }
            return;
        }
        if props.timing_properties_counter != c.timing_counter.load(Ordering::Relaxed) {
            refresh(fns, device, c);
        }
        let n = (props.presentation_timing_count as usize).min(results.len());
        for t in &results[..n] {
            if t.report_complete != vk::TRUE {
                continue;
            }
            // Saturating: a result of a request made before this source counted it (none
            // should come) must not wrap the count and stop all requests.
            let _ = c
                .outstanding
                .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1));
            let count = (t.present_stage_count as usize).min(STAGES);
            // SAFETY: the driver wrote `count` stages into our array.
            let st = unsafe { std::slice::from_raw_parts(t.p_present_stages, count) };
            // Time 0: the stage was not reached (the image was never shown).
            let Some(time) = st.iter().find(|s| s.stage == c.stage && s.time != 0).map(|s| s.time) else {
                continue;
            };
            let off = *offset.get_or_insert_with(|| offset_ns(fns, device, c));
            if let Some(off) = off {
                found(t.present_id, time.saturating_add_signed(off));
            }
        }
        if r == vk::Result::SUCCESS || n == 0 {
            return;
        }
    }
}

#[cfg(test)]
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
        let fns = Fns {
            set_queue_size: queue_size,
            timing_properties: timing_props,
            time_domains: monotonic_only,
            past,
            calibrate: None,
        };
        PresentTiming::spawn(fns, vk::Device::null(), false, Arc::clone(feed)).unwrap()
    }

    /// One present of `sc` as the hook makes it: the structs chained, then `presented`.
    fn present(pt: &PresentTiming, sc: vk::SwapchainKHR, frame: u64) -> (u64, u32) {
        let scs = [sc];
        let info = vk::PresentInfoKHR {
            swapchain_count: 1,
            p_swapchains: scs.as_ptr(),
            ..Default::default()
        };
        // SAFETY: a present info of one swapchain, valid for the call.
        let mut t = unsafe { pt.timing_for(&info) };
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
        // SAFETY: a present info of one swapchain, valid for the call.
        let mut t8 = unsafe { pt.timing_for(&info) };
        assert!(t8.chain_onto(&info).is_some());
        // A present with a result that never comes keeps the thread reading meanwhile.
        let mut t9 = unsafe { pt.timing_for(&info) };
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
