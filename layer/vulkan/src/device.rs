//! Device-level state: the next layer's function tables and what the hooks count.

use crate::guard::Site;
use crate::instance::Instance;
use crate::loader_abi::PfnSetDeviceLoaderData;
use crate::registry::{dispatch_key, Registry};
use ash::vk::{self, Handle};
use std::ffi::{c_void, CStr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

pub static CREATE_DEVICE: Site = Site::new("vkCreateDevice");

pub struct Device {
    pub handle: vk::Device,
    pub instance: Arc<Instance>,
    pub physical: vk::PhysicalDevice,
    pub next_gdpa: vk::PFN_vkGetDeviceProcAddr,
    pub set_loader_data: Option<PfnSetDeviceLoaderData>,
    pub fns: ash::Device,
    pub swapchain_fns: ash::khr::swapchain::DeviceFn,
    pub sync2_fns: ash::khr::synchronization2::DeviceFn,
    pub enabled_extensions: Vec<String>,
    pub properties: vk::PhysicalDeviceProperties,
    pub stats: DeviceStats,
}

/// Running totals since device creation; reported at destroy.
#[derive(Default)]
pub struct DeviceStats {
    pub presents: AtomicU64,
    pub submits: AtomicU64,
    pub command_buffers_begun: AtomicU64,
    pub swapchains_created: AtomicU64,
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
        // SAFETY: physical is the device's valid physical device.
        let properties = unsafe { instance.fns.get_physical_device_properties(physical) };
        Device {
            handle,
            instance,
            physical,
            next_gdpa,
            set_loader_data,
            fns,
            swapchain_fns,
            sync2_fns,
            enabled_extensions,
            properties,
            stats: DeviceStats::default(),
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
}

pub unsafe extern "system" fn destroy_device(device: vk::Device, alloc: *const vk::AllocationCallbacks<'_>) {
    if device == vk::Device::null() {
        return;
    }
    // SAFETY: a non-null device handle from the app.
    let Some(state) = DEVICES.remove(unsafe { dispatch_key(device.as_raw()) }) else {
        return;
    };
    let s = &state.stats;
    crate::log::info(format_args!(
        "device '{}' destroyed: {} presents, {} submits, {} command buffers begun",
        state.name(),
        s.presents.load(Ordering::Relaxed),
        s.submits.load(Ordering::Relaxed),
        s.command_buffers_begun.load(Ordering::Relaxed),
    ));
    // SAFETY: forwarding to the next layer's destroy for this device.
    unsafe { (state.fns.fp_v1_0().destroy_device)(device, alloc) };
}
