//! Vulkan instance, device and queue.

use std::error::Error;
use std::ffi::CStr;

use ash::{ext, khr, vk};

pub struct Gpu {
    pub instance: ash::Instance,
    pub physical: vk::PhysicalDevice,
    pub device: ash::Device,
    pub queue: vk::Queue,
    pub queue_family: u32,
    /// Present only with labels on: the extension is not enabled otherwise, so
    /// the layer under test also sees apps that never use debug utils.
    pub debug_utils: Option<ext::debug_utils::Device>,
    pub surface: Option<khr::surface::Instance>,
    pub xlib_surface: Option<khr::xlib_surface::Instance>,
    pub swapchain: Option<khr::swapchain::Device>,
}

impl Gpu {
    /// `multiview` enables the Vulkan 1.1 `multiview` feature (only then, so
    /// the layer under test also sees devices without it).
    pub fn new(windowed: bool, labels: bool, frame_boundary: bool, multiview: bool) -> Result<Gpu, Box<dyn Error>> {
        let entry = ash::Entry::linked();
        let mut extensions: Vec<&CStr> = Vec::new();
        if windowed {
            extensions.push(khr::surface::NAME);
            extensions.push(khr::xlib_surface::NAME);
        }
        if labels {
            extensions.push(ext::debug_utils::NAME);
        }
        let ext_ptrs: Vec<_> = extensions.iter().map(|e| e.as_ptr()).collect();
        let app = vk::ApplicationInfo::default()
            .application_name(c"framescope-testapp")
            .application_version(1)
            .api_version(vk::API_VERSION_1_3);
        let info = vk::InstanceCreateInfo::default()
            .application_info(&app)
            .enabled_extension_names(&ext_ptrs);
        // SAFETY: `info` and everything it points to live across the call.
        let instance = unsafe { entry.create_instance(&info, None)? };
        match Self::pick_device(&instance, windowed, frame_boundary, multiview) {
            Ok((physical, device, queue_family)) => {
                // SAFETY: queue 0 of this family was requested at device creation.
                let queue = unsafe { device.get_device_queue(queue_family, 0) };
                Ok(Gpu {
                    debug_utils: labels.then(|| ext::debug_utils::Device::new(&instance, &device)),
                    surface: windowed.then(|| khr::surface::Instance::new(&entry, &instance)),
                    xlib_surface: windowed.then(|| khr::xlib_surface::Instance::new(&entry, &instance)),
                    swapchain: windowed.then(|| khr::swapchain::Device::new(&instance, &device)),
                    instance,
                    physical,
                    device,
                    queue,
                    queue_family,
                })
            }
            Err(e) => {
                // SAFETY: nothing was created from the instance that still lives.
                unsafe { instance.destroy_instance(None) };
                Err(e)
            }
        }
    }

    fn pick_device(
        instance: &ash::Instance,
        windowed: bool,
        frame_boundary: bool,
        multiview: bool,
    ) -> Result<(vk::PhysicalDevice, ash::Device, u32), Box<dyn Error>> {
        // SAFETY: plain queries on a live instance.
        let physicals = unsafe { instance.enumerate_physical_devices()? };
        for physical in physicals {
            // SAFETY: `physical` was just enumerated from this instance.
            let (props, families) = unsafe {
                (
                    instance.get_physical_device_properties(physical),
                    instance.get_physical_device_queue_family_properties(physical),
                )
            };
            if props.api_version < vk::API_VERSION_1_3 {
                continue;
            }
            // Presentation support is checked per surface later; lavapipe and
            // desktop drivers present from their graphics family.
            let Some(family) = families
                .iter()
                .position(|f| f.queue_flags.contains(vk::QueueFlags::GRAPHICS))
            else {
                continue;
            };
            let family = family as u32;
            let priorities = [1.0];
            let queues = [vk::DeviceQueueCreateInfo::default()
                .queue_family_index(family)
                .queue_priorities(&priorities)];
            let mut dev_exts = Vec::new();
            if windowed {
                dev_exts.push(khr::swapchain::NAME.as_ptr());
            }
            let mut v13 = vk::PhysicalDeviceVulkan13Features::default()
                .dynamic_rendering(true)
                .synchronization2(true);
            let mut fb = vk::PhysicalDeviceFrameBoundaryFeaturesEXT::default().frame_boundary(true);
            let mut v11 = vk::PhysicalDeviceVulkan11Features::default().multiview(true);
            if multiview {
                Self::require_multiview(instance, physical)?;
            }
            if frame_boundary {
                Self::require_frame_boundary(instance, physical)?;
                dev_exts.push(ash::ext::frame_boundary::NAME.as_ptr());
            }
            let mut info = vk::DeviceCreateInfo::default()
                .queue_create_infos(&queues)
                .enabled_extension_names(&dev_exts)
                .push_next(&mut v13);
            if frame_boundary {
                info = info.push_next(&mut fb);
            }
            if multiview {
                info = info.push_next(&mut v11);
            }
            // SAFETY: `info` and its chain live across the call.
            let device = unsafe { instance.create_device(physical, &info, None)? };
            return Ok((physical, device, family));
        }
        Err("no Vulkan 1.3 device with a graphics queue".into())
    }

    /// VK_EXT_frame_boundary must be advertised and its feature reported (a layer may provide
    /// it on drivers that do not).
    fn require_frame_boundary(instance: &ash::Instance, physical: vk::PhysicalDevice) -> Result<(), Box<dyn Error>> {
        // SAFETY: plain queries on a live instance and one of its physical devices.
        let exts = unsafe { instance.enumerate_device_extension_properties(physical)? };
        if !exts
            .iter()
            .any(|e| e.extension_name_as_c_str() == Ok(ash::ext::frame_boundary::NAME))
        {
            return Err("VK_EXT_frame_boundary is not advertised".into());
        }
        let mut fb = vk::PhysicalDeviceFrameBoundaryFeaturesEXT::default();
        let mut f2 = vk::PhysicalDeviceFeatures2::default().push_next(&mut fb);
        // SAFETY: the chain lives across the call; the instance is Vulkan 1.3.
        unsafe { instance.get_physical_device_features2(physical, &mut f2) };
        if fb.frame_boundary != vk::TRUE {
            return Err("the frameBoundary feature is not supported".into());
        }
        Ok(())
    }

    /// The `multiview` feature must be reported (Vulkan 1.1 requires it; checked so a
    /// driver or layer that hides it gives a clear error).
    fn require_multiview(instance: &ash::Instance, physical: vk::PhysicalDevice) -> Result<(), Box<dyn Error>> {
        let mut v11 = vk::PhysicalDeviceVulkan11Features::default();
        let mut f2 = vk::PhysicalDeviceFeatures2::default().push_next(&mut v11);
        // SAFETY: the chain lives across the call; the instance is Vulkan 1.3.
        unsafe { instance.get_physical_device_features2(physical, &mut f2) };
        if v11.multiview != vk::TRUE {
            return Err("the multiview feature is not supported".into());
        }
        Ok(())
    }
}

impl Drop for Gpu {
    fn drop(&mut self) {
        // SAFETY: owners of every child object are dropped before Gpu (see the
        // field order of App), so the device and instance are unused now.
        unsafe {
            self.device.destroy_device(None);
            self.instance.destroy_instance(None);
        }
    }
}
