//! Safe calls for the HUD's work on the app's objects: the surface's capabilities and the
//! submit of the HUD's command buffers on the app's queue at present. The unsafe blocks are
//! here, each with the reason it holds, so `hud` can deny `unsafe_code` as it is converted.

use super::device::Device;
use ash::vk;

/// The HUD's submit at present: the app's wait semaphores, then one command buffer and one
/// signal semaphore of ours per drawn swapchain.
pub struct HudSubmit<'a> {
    pub waits: &'a [vk::Semaphore],
    pub stages: &'a [vk::PipelineStageFlags],
    pub cbs: &'a [vk::CommandBuffer],
    pub signals: &'a [vk::Semaphore],
}

impl Device {
    /// The images of the app's swapchain `sc`, which the app has not destroyed: the HUD asks
    /// in a present naming it, and drops what it made of them in the swapchain's destroy hook
    /// before the call goes down.
    pub fn swapchain_images(&self, sc: vk::SwapchainKHR) -> Result<Vec<vk::Image>, vk::Result> {
        let get = self.swapchain_fns.get_swapchain_images_khr;
        let mut n = 0u32;
        // SAFETY: a live swapchain of this device (above); a count query, then a fill of at
        // most `n` handles into a vector of `n`.
        unsafe {
            get(self.handle, sc, &mut n, std::ptr::null_mut()).result()?;
            let mut v = vec![vk::Image::null(); n as usize];
            get(self.handle, sc, &mut n, v.as_mut_ptr()).result()?;
            v.truncate(n as usize);
            Ok(v)
        }
    }

    /// The usage the surface allows for swapchain images (empty when it cannot be asked);
    /// `surface` is the app's, from the swapchain create info it passed us.
    pub fn surface_usage(&self, surface: vk::SurfaceKHR) -> vk::ImageUsageFlags {
        let inst = &self.instance;
        // SAFETY: the next layer's GIPA with our instance and a valid name.
        let Some(f) = (unsafe { (inst.next_gipa)(inst.handle, c"vkGetPhysicalDeviceSurfaceCapabilitiesKHR".as_ptr()) })
        else {
            return vk::ImageUsageFlags::empty();
        };
        // SAFETY: the name's signature.
        let f: vk::PFN_vkGetPhysicalDeviceSurfaceCapabilitiesKHR = unsafe { std::mem::transmute(f) };
        let mut caps = vk::SurfaceCapabilitiesKHR::default();
        // SAFETY: the app's surface (valid for its swapchain create info) and our physical device.
        match unsafe { f(self.physical, surface, &mut caps) } {
            vk::Result::SUCCESS => caps.supported_usage_flags,
            _ => vk::ImageUsageFlags::empty(),
        }
    }

    /// Submits the HUD's work on `queue`; the driver's result as is. The caller holds
    /// `queue` for the call (the app's present call on it, or the app's submit lock of another
    /// queue: Vulkan's external synchronization), and `s`'s command buffers are executable
    /// buffers of ours whose previous submission is done. Wait and stage slices differ in
    /// length only by the caller's mistake: the shorter is used.
    pub fn submit_hud(&self, queue: vk::Queue, s: &HudSubmit<'_>, fence: vk::Fence) -> vk::Result {
        let waits = s.waits.len().min(s.stages.len());
        let signals = s.cbs.len().min(s.signals.len());
        let submit = vk::SubmitInfo {
            wait_semaphore_count: waits as u32,
            p_wait_semaphores: s.waits.as_ptr(),
            p_wait_dst_stage_mask: s.stages.as_ptr(),
            command_buffer_count: s.cbs.len() as u32,
            p_command_buffers: s.cbs.as_ptr(),
            signal_semaphore_count: signals as u32,
            p_signal_semaphores: s.signals.as_ptr(),
            ..vk::SubmitInfo::default()
        };
        // SAFETY: every count is at most its slice's length; the queue's external
        // synchronization and the buffers' state are the caller's (above).
        unsafe { (self.fns.fp_v1_0().queue_submit)(queue, 1, &submit, fence) }
    }
}
