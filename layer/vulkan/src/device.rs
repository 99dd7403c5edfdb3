//! Device-level state: the next layer's function tables, per-queue and per-command-buffer
//! state, and the frame state the hooks feed.

use crate::batches::Scratch;
use crate::commands::{CmdCounts, CmdFns};
use crate::frames::{FrameState, SharedFrameState};
use crate::guard::Site;
use crate::instance::Instance;
use crate::loader_abi::PfnSetDeviceLoaderData;
use crate::registry::{dispatch_key, Registry};
use crate::samples::hooks::SampleFns;
use crate::samples::recording::Recording;
use crate::samples::{Level, SampleState};
use crate::timing::QueueTiming;
use ash::vk::{self, Handle};
use framescope_core::frame::SwapchainInfo;
use framescope_core::sync::{Mutex, RwLock};
use rustc_hash::FxHashMap as HashMap;
use std::ffi::{c_void, CStr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

pub static CREATE_DEVICE: Site = Site::new("vkCreateDevice");

/// Who implements `VK_EXT_frame_boundary` for this device, if the app enabled it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FrameBoundaryMode {
    #[default]
    Off,
    /// The driver does; we only watch the boundaries.
    Native,
    /// We do: its structs are unlinked from every chain passed down.
    Emulated,
}

/// What the layer changed in the app's device create info.
#[derive(Clone, Debug, Default)]
pub struct DeviceAugment {
    pub frame_boundary: FrameBoundaryMode,
    /// `pipelineStatisticsQuery` is enabled on the device (by the app or by us).
    pub pipeline_stats: bool,
    /// Extensions we enabled that the app did not (their commands stay hidden from the app).
    pub added_extensions: Vec<&'static CStr>,
    /// The augmented create failed and the device was created exactly as the app asked.
    pub fell_back: bool,
    /// Why a source could not be used: (source, reason).
    pub unavailable: Vec<(String, String)>,
}

pub struct Device {
    pub handle: vk::Device,
    pub instance: Arc<Instance>,
    pub physical: vk::PhysicalDevice,
    pub next_gdpa: vk::PFN_vkGetDeviceProcAddr,
    pub set_loader_data: Option<PfnSetDeviceLoaderData>,
    pub fns: ash::Device,
    pub swapchain_fns: ash::khr::swapchain::DeviceFn,
    pub sync2_fns: ash::khr::synchronization2::DeviceFn,
    pub calibrated_fns: Option<ash::ext::calibrated_timestamps::DeviceFn>,
    pub cmd_fns: CmdFns,
    pub sample_fns: SampleFns,
    /// `None` with `samples=off` or when the query pools could not be made.
    pub samples: Option<SampleState>,
    /// Every recorded draw, dispatch, trace-rays, bind and barrier is intercepted and counted
    /// (`Config::counts_commands`); otherwise the app gets the next layer's commands for
    /// those that sampling does not need, and pays nothing for them.
    pub count_commands: bool,
    pub augment: DeviceAugment,
    pub properties: vk::PhysicalDeviceProperties,
    pub queue_families: Vec<vk::QueueFamilyProperties>,
    pub stats: DeviceStats,
    pub frames: SharedFrameState,
    queues: RwLock<HashMap<u64, Arc<QueueState>>>,
    command_buffers: RwLock<HashMap<u64, Arc<CmdBufState>>>,
    swapchains: RwLock<HashMap<u64, SwapchainInfo>>,
    /// The live HUD's state (issue 4, `hud` module).
    pub hud: crate::hud::DeviceHud,
}

/// Running totals since device creation; reported at destroy.
#[derive(Default)]
pub struct DeviceStats {
    pub presents: AtomicU64,
    pub submits: AtomicU64,
    pub command_buffers_begun: AtomicU64,
    pub swapchains_created: AtomicU64,
}

/// A queue the app fetched, and our timing ring for it (created on first submit).
pub struct QueueState {
    pub family: u32,
    pub inner: Mutex<QueueInner>,
}

#[derive(Default)]
pub struct QueueInner {
    /// Debug labels open on this queue (they may span command buffers and submissions).
    pub labels: Vec<crate::samples::resolve::OpenLabel>,
    pub timing: Option<QueueTiming>,
    pub timing_tried: bool,
    /// Reused arrays for the batches we pass down, per submit flavour.
    pub submit1: Scratch<vk::SubmitInfo<'static>>,
    pub submit2: Scratch<vk::SubmitInfo2<'static>>,
}

// SAFETY: the raw pointers in the scratch arrays are only used during one submit call, under
// the queue lock; between calls they dangle but are never read (each submit rebuilds them).
unsafe impl Send for QueueInner {}

pub struct CmdBufState {
    pub pool: vk::CommandPool,
    pub primary: bool,
    pub counts: CmdCounts,
    /// Sampling state of the current recording; locked by the recording thread and at submit.
    pub rec: Mutex<Recording>,
}

pub static DEVICES: Registry<Device> = Registry::new();

/// State of the device owning `raw` (a device, queue or command buffer handle).
pub fn lookup(raw: u64) -> Option<Arc<Device>> {
    if raw == 0 {
        return None;
    }
    // SAFETY: callers pass dispatchable device-level handles given to us by the app.
    DEVICES.get(unsafe { dispatch_key(raw) })
}

impl Device {
    pub fn new(
        instance: Arc<Instance>,
        physical: vk::PhysicalDevice,
        handle: vk::Device,
        next_gdpa: vk::PFN_vkGetDeviceProcAddr,
        set_loader_data: Option<PfnSetDeviceLoaderData>,
        enabled_extensions: Vec<String>,
        augment: DeviceAugment,
    ) -> Self {
        let mut load = |name: &CStr| {
            // SAFETY: next_gdpa resolves device commands of `handle`; null stays null and ash
            // substitutes a panicking stub that the guard would catch.
            unsafe { std::mem::transmute::<vk::PFN_vkVoidFunction, *const c_void>(next_gdpa(handle, name.as_ptr())) }
        };
        // SAFETY: the loader closure returns next-layer pointers for this device.
        let fns = unsafe { ash::Device::load_with(&mut load, handle) };
        let swapchain_fns = ash::khr::swapchain::DeviceFn::load(&mut load);
        let sync2_fns = ash::khr::synchronization2::DeviceFn::load(&mut load);
        let has = |ext: &CStr| {
            enabled_extensions.iter().any(|e| e.as_bytes() == ext.to_bytes()) || augment.added_extensions.contains(&ext)
        };
        let calibrated_fns = has(ash::ext::calibrated_timestamps::NAME)
            .then(|| ash::ext::calibrated_timestamps::DeviceFn::load(&mut load));
        // SAFETY: querying command names of a live device.
        let cmd_fns = CmdFns::load(|name| unsafe { next_gdpa(handle, name.as_ptr()) });
        // SAFETY: as above.
        let sample_fns = SampleFns::load(|name| unsafe { next_gdpa(handle, name.as_ptr()) });
        let cfg = crate::settings::get();
        let level = Level::from(cfg.effective_samples());
        // SAFETY: physical is the device's valid physical device.
        let properties = unsafe { instance.fns.get_physical_device_properties(physical) };
        let stats_after_bind = crate::samples::stats_need_bound_pipeline(&properties);
        let samples = SampleState::new(&fns, level, cfg.sample_stats, augment.pipeline_stats, stats_after_bind);
        if level != Level::Off && samples.is_none() {
            crate::log::error(format_args!("cannot create query pools for samples; samples are off"));
        }
        // SAFETY: as above.
        let queue_families = unsafe { instance.fns.get_physical_device_queue_family_properties(physical) };
        let hint = crate::counters::gpu_hint(&instance, physical, &properties);
        Device {
            handle,
            instance,
            physical,
            next_gdpa,
            set_loader_data,
            fns,
            swapchain_fns,
            sync2_fns,
            calibrated_fns,
            cmd_fns,
            sample_fns,
            samples,
            count_commands: cfg.counts_commands(),
            augment,
            properties,
            queue_families,
            stats: DeviceStats::default(),
            frames: Mutex::new(FrameState::new(hint)),
            queues: RwLock::new(HashMap::default()),
            command_buffers: RwLock::new(HashMap::default()),
            swapchains: RwLock::new(HashMap::default()),
            hud: crate::hud::DeviceHud::new(),
        }
    }

    pub fn name(&self) -> String {
        // SAFETY: deviceName is a NUL-terminated array filled by the driver.
        unsafe { CStr::from_ptr(self.properties.device_name.as_ptr()) }
            .to_string_lossy()
            .into_owned()
    }

    /// Whether the next layer provides `name` for this device: our hook is only handed out
    /// when it does, so disabled extensions stay NULL to the app.
    pub fn next_has(&self, name: &CStr) -> bool {
        // SAFETY: querying a command name of a live device.
        unsafe { (self.next_gdpa)(self.handle, name.as_ptr()) }.is_some()
    }

    /// Gives a dispatchable object we created the loader's dispatch pointer.
    pub fn stamp_loader_data(&self, cb: vk::CommandBuffer) -> bool {
        match self.set_loader_data {
            // SAFETY: cb is a dispatchable object we just created on this device.
            Some(f) => (unsafe { f(self.handle, cb.as_raw() as usize as *mut c_void) }) == vk::Result::SUCCESS,
            None => false,
        }
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

    /// A queue the app fetched whose family can do graphics (the HUD's fallback when the
    /// present queue cannot).
    pub fn graphics_queue(&self) -> Option<(vk::Queue, Arc<QueueState>)> {
        let graphics = |f: u32| {
            self.queue_families
                .get(f as usize)
                .is_some_and(|p| p.queue_flags.contains(vk::QueueFlags::GRAPHICS))
        };
        let queues = self.queues.read();
        let (&raw, q) = queues.iter().find(|(_, q)| graphics(q.family))?;
        Some((vk::Queue::from_raw(raw), q.clone()))
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

    pub fn add_command_buffers(&self, pool: vk::CommandPool, primary: bool, cbs: &[vk::CommandBuffer]) {
        let mut map = self.command_buffers.write();
        for &cb in cbs {
            let state = CmdBufState {
                pool,
                primary,
                counts: CmdCounts::default(),
                rec: Mutex::new(Recording::default()),
            };
            map.insert(cb.as_raw(), Arc::new(state));
        }
    }

    pub fn remove_command_buffers(&self, cbs: &[vk::CommandBuffer]) {
        let mut map = self.command_buffers.write();
        for cb in cbs {
            map.remove(&cb.as_raw());
        }
        crate::recording_cache::invalidate();
    }

    pub fn remove_pool(&self, pool: vk::CommandPool) {
        self.command_buffers.write().retain(|_, s| s.pool != pool);
        crate::recording_cache::invalidate();
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

    /// Offset (ns) from the device's timestamp domain to CLOCK_MONOTONIC, from calibrated
    /// timestamps; `None` without the extension or when the driver cannot calibrate.
    pub fn calibration_offset_ns(&self) -> Option<i64> {
        let f = self.calibrated_fns.as_ref()?;
        let infos = [
            vk::CalibratedTimestampInfoEXT::default().time_domain(vk::TimeDomainEXT::DEVICE),
            vk::CalibratedTimestampInfoEXT::default().time_domain(vk::TimeDomainEXT::CLOCK_MONOTONIC),
        ];
        let mut ts = [0u64; 2];
        let mut deviation = 0u64;
        // SAFETY: two infos, two outputs, for a device with the extension enabled.
        let r = unsafe {
            (f.get_calibrated_timestamps_ext)(self.handle, 2, infos.as_ptr(), ts.as_mut_ptr(), &mut deviation)
        };
        if r != vk::Result::SUCCESS {
            return None;
        }
        let gpu_ns = (ts[0] as f64 * f64::from(self.properties.limits.timestamp_period)) as i64;
        Some(ts[1] as i64 - gpu_ns)
    }

    /// Reads every retired submission of every queue into the frame state. Never waits; a
    /// queue busy in another thread's submit is skipped until next time.
    pub fn poll_retired(&self, frames: &mut FrameState) {
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
            t.poll(self, |r, pending| {
                pending.retire(self, r.frame, calibration, |s| frames.push_sample(s));
                frames.retire(r.frame, r.interval);
            });
        }
    }
}

pub unsafe extern "system" fn destroy_device(device: vk::Device, alloc: *const vk::AllocationCallbacks<'_>) {
    if device == vk::Device::null() {
        return;
    }
    // SAFETY: a non-null device handle from the app.
    let Some(state) = DEVICES.remove(unsafe { dispatch_key(device.as_raw()) }) else {
        return;
    };
    crate::recording_cache::invalidate();
    crate::guard::guarded(&DESTROY, || {
        {
            // The app made the device idle before destroying it: every result is readable.
            let mut frames = state.frames.lock();
            state.poll_retired(&mut frames);
            frames.poll(framescope_core::clock::monotonic_now_ns());
            frames.finish();
        }
        // HUD (issue 4): waits for its own fences, then frees its objects.
        crate::hud::device_destroyed(&state);
        for q in state.all_queues() {
            if let Some(t) = q.inner.lock().timing.as_mut() {
                t.destroy(&state);
            }
        }
        if let Some(s) = state.samples.as_ref() {
            s.destroy(&state);
        }
        let s = &state.stats;
        crate::log::info(format_args!(
            "device '{}' destroyed: {} presents, {} submits, {} command buffers begun",
            state.name(),
            s.presents.load(Ordering::Relaxed),
            s.submits.load(Ordering::Relaxed),
            s.command_buffers_begun.load(Ordering::Relaxed),
        ));
    });
    // SAFETY: forwarding to the next layer's destroy for this device.
    unsafe { (state.fns.fp_v1_0().destroy_device)(device, alloc) };
}

static DESTROY: Site = Site::new("vkDestroyDevice");
