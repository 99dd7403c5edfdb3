//! A device as the layer sees it, at the bottom of the module tree: the next layer's function
//! tables, the physical device's properties and what the layer enabled. Everything the layer
//! keeps per device on top of this (queues, command buffers, samples, frames, HUD) is in
//! `device_state`.

use crate::dispatch::command_fns::{CmdFns, SampleFns};
use crate::dispatch::instance::Instance;
use crate::dispatch::loader_abi::PfnSetDeviceLoaderData;
use ash::vk::{self, Handle};
use framescope_core::guard::Site;
use std::ffi::{c_void, CStr};
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

/// `VK_KHR_present_id` + `VK_KHR_present_wait` on the device (see `display::present_wait`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PresentWaitAugment {
    /// Both extensions and both features are on for the device (the app's or ours).
    pub on: bool,
    /// The app enabled `VK_KHR_present_id` itself: its ids are used, none are added.
    pub app_ids: bool,
}

/// `VK_EXT_present_timing` with its dependencies on the device (see `display::present_timing`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PresentTimingAugment {
    pub on: bool,
    /// The app enabled `VK_KHR_present_id2` or `VK_KHR_present_id` itself: its ids are used.
    pub app_ids: bool,
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
    /// The driver's counters (`VK_KHR_performance_query`), for the dump header.
    pub driver_counters: Vec<crate::driver_counters::DriverCounter>,
    /// We enabled `VK_KHR_performance_query` with `performanceCounterQueryPools` to collect
    /// them (`driver_counters=1`).
    pub perf_query: bool,
    /// The display-time source `VK_KHR_present_wait` can run.
    pub present_wait: PresentWaitAugment,
    /// The display-time source `VK_EXT_present_timing` can run.
    pub present_timing: PresentTimingAugment,
}

/// Extension commands that create what a frame may stall on (pipelines, shaders); the hooks
/// are only handed out where the next layer has them, so an unloaded one is never called.
pub struct CreationFns {
    pub ray_tracing: ash::khr::ray_tracing_pipeline::DeviceFn,
    pub shader_object: ash::ext::shader_object::DeviceFn,
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
    /// `vkWaitSemaphoresKHR`, hooked to time the app's waits (the core 1.2 command is in `fns`).
    pub timeline_fns: ash::khr::timeline_semaphore::DeviceFn,
    /// The extension commands of the app's creations that are timed (`hooks::creation`).
    pub creation_fns: CreationFns,
    pub calibrated_fns: Option<ash::ext::calibrated_timestamps::DeviceFn>,
    pub cmd_fns: CmdFns,
    pub sample_fns: SampleFns,
    pub augment: DeviceAugment,
    pub properties: vk::PhysicalDeviceProperties,
    pub queue_families: Vec<vk::QueueFamilyProperties>,
    /// `VkPipelineCreationFeedbackCreateInfo` may be chained into pipeline creations: the
    /// device and the app's instance are both at Vulkan 1.3 (where it is core), or
    /// `VK_EXT_pipeline_creation_feedback` is enabled (by the app or by us).
    pub pipeline_feedback: bool,
}

/// Whether pipeline creation feedback is core for a device of `device_api` under an instance
/// that asked for `instance_api`: a device may use core functionality up to the lower of the
/// two (Vulkan spec, "Version Numbers": the instance's apiVersion is the highest version the
/// app uses).
pub fn feedback_is_core(instance_api: u32, device_api: u32) -> bool {
    let v = instance_api.min(device_api);
    (vk::api_version_major(v), vk::api_version_minor(v)) >= (1, 3)
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
        let timeline_fns = ash::khr::timeline_semaphore::DeviceFn::load(&mut load);
        let creation_fns = CreationFns {
            ray_tracing: ash::khr::ray_tracing_pipeline::DeviceFn::load(&mut load),
            shader_object: ash::ext::shader_object::DeviceFn::load(&mut load),
        };
        let has = |ext: &CStr| {
            enabled_extensions.iter().any(|e| e.as_bytes() == ext.to_bytes()) || augment.added_extensions.contains(&ext)
        };
        let calibrated_fns = has(ash::ext::calibrated_timestamps::NAME)
            .then(|| ash::ext::calibrated_timestamps::DeviceFn::load(&mut load));
        // SAFETY: querying command names of a live device.
        let cmd_fns = CmdFns::load(|name| unsafe { next_gdpa(handle, name.as_ptr()) });
        // SAFETY: as above.
        let sample_fns = SampleFns::load(|name| unsafe { next_gdpa(handle, name.as_ptr()) });
        // SAFETY: physical is the device's valid physical device.
        let properties = unsafe { instance.fns.get_physical_device_properties(physical) };
        // SAFETY: as above.
        let queue_families = unsafe { instance.fns.get_physical_device_queue_family_properties(physical) };
        let pipeline_feedback = feedback_is_core(instance.api_version, properties.api_version)
            || has(ash::ext::pipeline_creation_feedback::NAME);
        Device {
            handle,
            instance,
            physical,
            next_gdpa,
            set_loader_data,
            fns,
            swapchain_fns,
            sync2_fns,
            timeline_fns,
            creation_fns,
            calibrated_fns,
            cmd_fns,
            sample_fns,
            augment,
            properties,
            queue_families,
            pipeline_feedback,
        }
    }

    pub fn name(&self) -> String {
        self.properties
            .device_name_as_c_str()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    }

    /// Whether the next layer provides `name` for this device: our hook is only handed out
    /// when it does, so disabled extensions stay NULL to the app.
    pub fn next_has(&self, name: &CStr) -> bool {
        // SAFETY: querying a command name of a live device.
        unsafe { (self.next_gdpa)(self.handle, name.as_ptr()) }.is_some()
    }

    /// Whether queue family `family` can do graphics.
    pub fn has_graphics(&self, family: u32) -> bool {
        self.queue_families
            .get(family as usize)
            .is_some_and(|f| f.queue_flags.contains(vk::QueueFlags::GRAPHICS))
    }

    /// Gives a dispatchable object we created the loader's dispatch pointer.
    pub fn stamp_loader_data(&self, cb: vk::CommandBuffer) -> bool {
        match self.set_loader_data {
            // SAFETY: cb is a dispatchable object we just created on this device.
            Some(f) => (unsafe { f(self.handle, cb.as_raw() as usize as *mut c_void) }) == vk::Result::SUCCESS,
            None => false,
        }
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

    /// `VkPhysicalDeviceDriverProperties` (name, info) where the instance may ask for it.
    pub fn driver_properties(&self) -> Option<(String, String)> {
        if self.instance.api_version < vk::API_VERSION_1_1 || self.properties.api_version < vk::API_VERSION_1_2 {
            return None;
        }
        let mut drv = vk::PhysicalDeviceDriverProperties::default();
        let mut p2 = vk::PhysicalDeviceProperties2::default().push_next(&mut drv);
        // SAFETY: the instance is 1.1+, so vkGetPhysicalDeviceProperties2 exists; the chain is ours.
        unsafe {
            self.instance
                .fns
                .get_physical_device_properties2(self.physical, &mut p2)
        };
        let name = drv.driver_name_as_c_str().ok()?.to_string_lossy().into_owned();
        let info = drv.driver_info_as_c_str().ok()?.to_string_lossy().into_owned();
        Some((name, info))
    }
}
