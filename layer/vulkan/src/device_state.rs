//! Everything the layer keeps per device, wired together: the dispatch-level [`Device`] at the
//! bottom, and above it the app's queues and command buffers with their timing and sampling
//! state, the frame state the hooks feed, and the HUD. The hooks find it by handle
//! ([`lookup`]) and hand each feature the parts it needs.

use crate::batches::Scratch;
use crate::counts::CmdCounts;
use crate::dispatch::device::Device;
use crate::dispatch::registry::{dispatch_key, Registry};
use crate::frames::{FrameState, SharedFrameState};
use crate::gpu_hint;
use crate::hud::{DeviceHud, HudHost};
use crate::samples::recording::{Recording, SharedRecording};
use crate::samples::resolve::OpenLabel;
use crate::samples::{Level, SampleState, Sampling};
use crate::timing::QueueTiming;
use ash::vk::{self, Handle};
use framescope_core::frame::SwapchainInfo;
use framescope_core::sync::{Mutex, RwLock};
use rustc_hash::FxHashMap as HashMap;
use std::sync::atomic::{AtomicU64, AtomicU8};
use std::sync::Arc;

pub struct DeviceState {
    /// Dispatch tables and properties; shared with the HUD's screenshot threads.
    pub dev: Arc<Device>,
    /// `None` with `samples=off` or when the query pools could not be made.
    pub samples: Option<SampleState>,
    /// Every recorded draw, dispatch, trace-rays, bind and barrier is intercepted and counted
    /// (`Config::counts_commands`); otherwise the app gets the next layer's commands for
    /// those that sampling does not need, and pays nothing for them.
    pub count_commands: bool,
    pub stats: DeviceStats,
    pub frames: SharedFrameState,
    queues: RwLock<HashMap<u64, Arc<QueueState>>>,
    command_buffers: RwLock<HashMap<u64, Arc<CmdBufState>>>,
    swapchains: RwLock<HashMap<u64, SwapchainInfo>>,
    /// Queue family of each of the app's command pools (driver-counter queries use pools of
    /// the command pool's family).
    pool_families: RwLock<HashMap<u64, u32>>,
    /// The driver-counter groups collected (for the dump header), or why none are.
    pub driver_groups: Vec<framescope_core::driver_values::DriverGroup>,
    pub driver_counters_off: Option<String>,
    pub hud: DeviceHud,
    /// The `VK_KHR_present_wait` display-time source, where the device has it.
    pub present_wait: Option<crate::display::present_wait::PresentWait>,
    /// The `VK_EXT_present_timing` display-time source, where the device has it.
    pub present_timing: Option<crate::display::present_timing::PresentTiming>,
}

impl std::ops::Deref for DeviceState {
    type Target = Device;
    fn deref(&self) -> &Device {
        &self.dev
    }
}

/// Running totals since device creation; reported at destroy.
#[derive(Default)]
pub struct DeviceStats {
    pub presents: AtomicU64,
    pub submits: AtomicU64,
    pub command_buffers_begun: AtomicU64,
    pub swapchains_created: AtomicU64,
    /// Faults seen (`hooks::fault`), one bit each ([`FAULT_DEVICE_LOST`],
    /// [`FAULT_SURFACE_LOST`]), so each is reported once.
    pub faults: AtomicU8,
}

pub const FAULT_DEVICE_LOST: u8 = 1;
pub const FAULT_SURFACE_LOST: u8 = 2;

/// A queue the app fetched, and our timing ring for it (created on first submit).
pub struct QueueState {
    pub family: u32,
    pub inner: Mutex<QueueInner>,
}

#[derive(Default)]
pub struct QueueInner {
    /// Debug labels open on this queue (they may span command buffers and submissions).
    pub labels: Vec<OpenLabel>,
    pub timing: Option<QueueTiming>,
    pub timing_tried: bool,
    /// Setting the timing up failed (no query pool, no memory): this queue's frames are
    /// `disabled`, not "no timestamps".
    pub timing_failed: bool,
    /// Reused arrays for the batches we pass down, per submit flavour.
    pub submit1: Scratch<vk::SubmitInfo<'static>>,
    pub submit2: Scratch<vk::SubmitInfo2<'static>>,
}

// SAFETY: the raw pointers in the scratch arrays are only used during one submit call, under
// the queue lock; between calls they dangle but are never read (each submit rebuilds them).
unsafe impl Send for QueueInner {}

pub struct CmdBufState {
    pub pool: vk::CommandPool,
    /// The pool's queue family (`None` for a pool made before the device was tracked).
    pub family: Option<u32>,
    pub primary: bool,
    pub counts: CmdCounts,
    /// Sampling state of the current recording; locked by the recording thread and at submit.
    pub rec: SharedRecording,
}

pub static DEVICES: Registry<DeviceState> = Registry::new();

/// State of the device owning `raw` (a device, queue or command buffer handle).
///
/// # Safety
/// `raw` is 0 or a live dispatchable device-level handle (its first word is read).
pub unsafe fn lookup(raw: u64) -> Option<Arc<DeviceState>> {
    if raw == 0 {
        return None;
    }
    // SAFETY: the caller's.
    DEVICES.get(unsafe { dispatch_key(raw) })
}

impl DeviceState {
    pub fn new(dev: Device) -> Self {
        let cfg = framescope_core::settings::get();
        let level = Level::from(cfg.effective_samples());
        let stats_after_bind = crate::samples::stats_need_bound_pipeline(&dev.properties);
        let samples = SampleState::new(
            &dev,
            level,
            cfg.sample_stats,
            dev.augment.pipeline_stats,
            stats_after_bind,
            cfg.sample_stats_every,
        );
        if level != Level::Off && samples.is_none() {
            framescope_core::log::error(format_args!("cannot create query pools for samples; samples are off"));
        }
        let mut samples = samples;
        let mut driver_groups = Vec::new();
        let mut driver_counters_off = None;
        if dev.augment.perf_query {
            use crate::samples::driver_counters::{PerfState, Setup};
            match samples.as_mut() {
                None => driver_counters_off = Some("samples are off, and driver counters ride on them".into()),
                Some(s) => match PerfState::setup(&dev, &dev.augment.driver_counters, level == Level::CmdBuf) {
                    Setup::On(state, groups) => {
                        s.perf = Some(state);
                        driver_groups = groups;
                    }
                    Setup::Off(why) => driver_counters_off = Some(why),
                },
            }
        }
        let hint = gpu_hint::gpu_hint(&dev.instance, dev.physical, &dev.properties);
        let frames = FrameState::new(hint);
        if !cfg.display_times {
            frames
                .session
                .display()
                .set_none(framescope_core::display::NoSourceReason::Disabled);
        }
        let present_wait = crate::display::present_wait::PresentWait::start(
            &dev,
            dev.augment.present_wait,
            Arc::clone(frames.session.display()),
        );
        let present_timing = crate::display::present_timing::PresentTiming::start(
            &dev,
            dev.augment.present_timing,
            Arc::clone(frames.session.display()),
        );
        DeviceState {
            dev: Arc::new(dev),
            samples,
            count_commands: cfg.counts_commands(),
            stats: DeviceStats::default(),
            frames: Mutex::new(frames),
            queues: RwLock::new(HashMap::default()),
            command_buffers: RwLock::new(HashMap::default()),
            swapchains: RwLock::new(HashMap::default()),
            pool_families: RwLock::new(HashMap::default()),
            driver_groups,
            driver_counters_off,
            hud: DeviceHud::new(),
            present_wait,
            present_timing,
        }
    }

    /// The device's sampling view, when it samples.
    pub fn sampling(&self) -> Option<Sampling<'_>> {
        Some(Sampling {
            dev: &self.dev,
            state: self.samples.as_ref()?,
        })
    }

    pub fn register_queue(&self, queue: vk::Queue, family: u32) {
        if queue == vk::Queue::null() {
            return;
        }
        self.queues.write().entry(queue.as_raw()).or_insert_with(|| {
            Arc::new(QueueState {
                family,
                inner: Mutex::new(QueueInner::default()),
            })
        });
    }

    pub fn queue(&self, queue: vk::Queue) -> Option<Arc<QueueState>> {
        self.queues.read().get(&queue.as_raw()).cloned()
    }

    pub fn all_queues(&self) -> Vec<Arc<QueueState>> {
        self.queues.read().values().cloned().collect()
    }

    /// Visits every queue without allocating (per-frame paths); the map stays read-locked, so
    /// `f` must not fetch queues itself.
    pub fn for_each_queue(&self, mut f: impl FnMut(&Arc<QueueState>)) {
        for q in self.queues.read().values() {
            f(q);
        }
    }

    pub fn command_buffer(&self, cb: vk::CommandBuffer) -> Option<Arc<CmdBufState>> {
        self.command_buffers.read().get(&cb.as_raw()).cloned()
    }

    pub fn add_command_pool(&self, pool: vk::CommandPool, family: u32) {
        self.pool_families.write().insert(pool.as_raw(), family);
    }

    pub fn add_command_buffers(&self, pool: vk::CommandPool, primary: bool, cbs: &[vk::CommandBuffer]) {
        let family = self.pool_families.read().get(&pool.as_raw()).copied();
        let mut map = self.command_buffers.write();
        for &cb in cbs {
            let state = CmdBufState {
                pool,
                family,
                primary,
                counts: CmdCounts::default(),
                rec: Arc::new(Mutex::new(Recording::default())),
            };
            map.insert(cb.as_raw(), Arc::new(state));
        }
    }

    /// Callers invalidate `recording_cache` after this, and after [`Self::remove_pool`].
    pub fn remove_command_buffers(&self, cbs: &[vk::CommandBuffer]) {
        let mut map = self.command_buffers.write();
        for cb in cbs {
            map.remove(&cb.as_raw());
        }
    }

    pub fn remove_pool(&self, pool: vk::CommandPool) {
        self.pool_families.write().remove(&pool.as_raw());
        self.command_buffers.write().retain(|_, s| s.pool != pool);
    }

    pub fn add_swapchain(&self, handle: vk::SwapchainKHR, info: SwapchainInfo) {
        self.swapchains.write().insert(handle.as_raw(), info);
    }

    pub fn remove_swapchain(&self, handle: vk::SwapchainKHR) {
        self.swapchains.write().remove(&handle.as_raw());
    }

    pub fn swapchain(&self, handle: vk::SwapchainKHR) -> Option<SwapchainInfo> {
        self.swapchains.read().get(&handle.as_raw()).copied()
    }

    /// Reads every retired submission of every queue into the frame state. Never waits; a
    /// queue busy in another thread's submit is skipped until next time.
    pub fn poll_retired(&self, frames: &mut FrameState) {
        // A lost device answers no query again: its frames went out as `device_lost`.
        if self.stats.faults.load(std::sync::atomic::Ordering::Acquire) & FAULT_DEVICE_LOST != 0 {
            return;
        }
        self.for_each_queue(|q| {
            if let Some(mut inner) = q.inner.try_lock() {
                self.poll_queue(&mut inner, frames);
            }
        });
    }

    /// Retirements of one queue whose lock the caller holds: samples first, then the frame.
    pub fn poll_queue(&self, inner: &mut QueueInner, frames: &mut FrameState) {
        let calibration = frames.calibration;
        if let Some(t) = inner.timing.as_mut() {
            t.poll(&self.dev, |r, pending| {
                pending.retire(&self.dev, r.frame, calibration, |s| frames.push_sample(s));
                frames.retire(r.frame, r.interval);
            });
        }
    }
}

/// The app's queues as the HUD may use them (the present queue's family, or another queue of
/// the app that can do graphics, submitted to under the app's own submit lock), and the frames.
impl HudHost for DeviceState {
    fn frames(&self) -> &SharedFrameState {
        &self.frames
    }

    fn family(&self, queue: vk::Queue) -> Option<u32> {
        self.queues.read().get(&queue.as_raw()).map(|q| q.family)
    }

    fn graphics_queue(&self) -> Option<(vk::Queue, u32)> {
        let queues = self.queues.read();
        let (&raw, q) = queues.iter().find(|(_, q)| self.dev.has_graphics(q.family))?;
        Some((vk::Queue::from_raw(raw), q.family))
    }

    fn with_submit_lock(&self, queue: vk::Queue, f: &mut dyn FnMut()) {
        let q = self.queue(queue);
        let _held = q.as_ref().map(|q| q.inner.lock());
        f();
    }
}
