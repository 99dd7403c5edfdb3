//! An instance as the layer sees it: the next layer's instance functions and what was asked
//! of it once. The hooks that create and destroy instances and devices are in `hooks::create`.

use crate::dispatch::registry::{dispatch_key, Registry};
use ash::vk;
use std::sync::Arc;

pub struct Instance {
    pub handle: vk::Instance,
    pub next_gipa: vk::PFN_vkGetInstanceProcAddr,
    pub fns: ash::Instance,
    /// Whether the app enabled `VK_KHR_get_physical_device_properties2` or asked for 1.1+,
    /// i.e. whether `vkGetPhysicalDeviceFeatures2`/`Properties2` may be called.
    pub api_version: u32,
    /// The next layer's `vkGetPhysicalDeviceFeatures2`, else its `...2KHR` alias; `None` when
    /// neither exists. Resolved once: the loader's terminator answers the KHR name with its
    /// trampoline, which re-enters the top of the chain (us) and recursed until the stack
    /// overflowed (vulkaninfo, vkd3d, zink and libplacebo all call the KHR name). For a 1.0
    /// instance the KHR alias is taken when a layer (not the loader) answers it: the
    /// validation layer reports a core 1.1 call from a 1.0 instance as an error (vkd3d).
    pub next_features2: Option<vk::PFN_vkGetPhysicalDeviceFeatures2>,
    /// Per physical device: whether the layers and driver below implement
    /// `VK_EXT_frame_boundary` themselves (asked once; the answer cannot change).
    /// The next layer's `vkGetPhysicalDeviceSurfaceCapabilities2KHR` where
    /// `VK_KHR_get_surface_capabilities2` is on (the app's or framescope's, for present
    /// timing), resolved at creation:
    /// asked later, the terminator of loaders before 1.3.2xx answers with the instance's
    /// dispatch entry, the top of the chain (the recursion `next_features2` describes).
    pub next_surface_caps2: Option<vk::PFN_vkGetPhysicalDeviceSurfaceCapabilities2KHR>,
    pub frame_boundary_native: framescope_core::sync::Mutex<Vec<(vk::PhysicalDevice, bool)>>,
    /// The next layer's X11 surface commands (`display_x11`), resolved at creation.
    pub surface_fns: crate::dispatch::surface_fns::NextSurfaceFns,
}

pub static INSTANCES: Registry<Instance> = Registry::new();

/// The instance owning `raw` (an instance or physical-device handle).
///
/// # Safety
/// `raw` is a live dispatchable instance-level handle (its first word is read).
pub unsafe fn lookup(raw: u64) -> Option<Arc<Instance>> {
    // SAFETY: the caller's.
    INSTANCES.get(unsafe { dispatch_key(raw) })
}
