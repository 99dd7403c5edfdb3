//! Safe calls for the display-time sources (`display::present_wait`, `display::present_timing`):
//! the feature and surface queries that decide whether a source can run, `vkWaitForPresentKHR`,
//! and the `VK_EXT_present_timing` commands. Every chain handed to the driver is built here
//! from structs of ours, so the callers pass and get plain values.
//!
//! The invariant the swapchain calls rest on: a source calls them only for a swapchain it was
//! told was created and not yet told was retired or destroyed, holding that swapchain's `busy`
//! lock with its `stopped` flag clear (the swapchain hooks set the flag and take the lock
//! before the call goes down); and the device lives until the source's thread is joined, in
//! `vkDestroyDevice` before the call goes down.

use super::device::Device;
use super::instance::Instance;
use super::present_timing_abi::*;
use ash::vk;
use std::ffi::CStr;

/// The shape of `vkWaitForPresentKHR`.
pub type WaitFn = unsafe extern "system" fn(vk::Device, vk::SwapchainKHR, u64, u64) -> vk::Result;

impl Instance {
    /// The next layer's `vkGetPhysicalDeviceFeatures2`, where the app's instance may call it:
    /// it is a Vulkan 1.1 instance command (or of an extension the app may not have enabled),
    /// so a 1.0 instance does not get it.
    fn features2(&self) -> Option<vk::PFN_vkGetPhysicalDeviceFeatures2> {
        self.next_features2.filter(|_| self.api_version >= vk::API_VERSION_1_1)
    }

    /// `presentId` and `presentWait` of `phys`; `None` where the instance may not ask.
    pub fn present_wait_features(&self, phys: vk::PhysicalDevice) -> Option<(bool, bool)> {
        let f2 = self.features2()?;
        let mut wait = vk::PhysicalDevicePresentWaitFeaturesKHR::default();
        let mut id = vk::PhysicalDevicePresentIdFeaturesKHR::default();
        let mut feats = vk::PhysicalDeviceFeatures2::default()
            .push_next(&mut id)
            .push_next(&mut wait);
        // SAFETY: a physical device of this instance and a typed chain of our own structs.
        unsafe { f2(phys, &mut feats) };
        Some((id.present_id == vk::TRUE, wait.present_wait == vk::TRUE))
    }

    /// `presentTiming` and `presentId2` of `phys`; `None` where the instance may not ask.
    pub fn present_timing_features(&self, phys: vk::PhysicalDevice) -> Option<(bool, bool)> {
        let f2 = self.features2()?;
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
        // SAFETY: a physical device of this instance; the chain is of our stack structs, each
        // with its registry sType, alive for the call.
        unsafe { f2(phys, &mut feats) };
        Some((timing.present_timing == vk::TRUE, id2.present_id2 == vk::TRUE))
    }
}

/// What a surface says of present timing (`VkPresentTimingSurfaceCapabilitiesEXT`,
/// `VkSurfaceCapabilitiesPresentId2KHR`).
#[derive(Clone, Copy, Debug, Default)]
pub struct SurfaceTiming {
    pub timing: bool,
    pub id2: bool,
    /// `VkPresentStageFlagsEXT` the engine can report.
    pub stage_queries: u32,
}

impl Device {
    /// Present timing on the app's `surface` (from the swapchain create info it passes us);
    /// `None` when the instance lacks `VK_KHR_get_surface_capabilities2` or the query fails.
    pub fn present_timing_surface(&self, surface: vk::SurfaceKHR) -> Option<SurfaceTiming> {
        let caps2 = self.instance.next_surface_caps2?;
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
            surface,
            ..Default::default()
        };
        let mut caps = vk::SurfaceCapabilities2KHR {
            p_next: std::ptr::addr_of_mut!(id2).cast(),
            ..Default::default()
        };
        // SAFETY: the app's surface (valid for its swapchain create info) on this device's
        // physical device; the chain is of our stack structs.
        let r = unsafe { caps2(self.physical, &info, &mut caps) };
        (r == vk::Result::SUCCESS).then_some(SurfaceTiming {
            timing: timing.present_timing_supported == vk::TRUE,
            id2: id2.present_id2_supported == vk::TRUE,
            stage_queries: timing.present_stage_queries,
        })
    }

    /// The next layer's command `name` as `F`.
    ///
    /// # Safety
    /// `F` is the function pointer type of the command `name`.
    unsafe fn command<F: Copy>(&self, name: &CStr) -> Option<F> {
        // SAFETY: querying a command of this live device.
        let f = unsafe { (self.next_gdpa)(self.handle, name.as_ptr()) }?;
        // SAFETY: the caller's contract (a fn pointer to a fn pointer of the same size).
        Some(unsafe { std::mem::transmute_copy::<unsafe extern "system" fn(), F>(&f) })
    }

    /// `vkWaitForPresentKHR` of this device, where it has the command.
    pub fn present_wait_call(&self) -> Option<PresentWaitCall> {
        // SAFETY: the command of that name has this signature.
        let wait = unsafe { self.command::<WaitFn>(c"vkWaitForPresentKHR") }?;
        Some(PresentWaitCall {
            device: self.handle,
            wait,
        })
    }

    /// The `VK_EXT_present_timing` commands of this device (and `vkGetCalibratedTimestampsKHR`
    /// where it has it), where it has them all.
    pub fn timing_calls(&self) -> Option<TimingCalls> {
        // SAFETY: each name's command has the signature it is loaded as.
        unsafe {
            Some(TimingCalls {
                device: self.handle,
                set_queue_size: self.command(c"vkSetSwapchainPresentTimingQueueSizeEXT")?,
                timing_properties: self.command(c"vkGetSwapchainTimingPropertiesEXT")?,
                time_domains: self.command(c"vkGetSwapchainTimeDomainPropertiesEXT")?,
                past: self.command(c"vkGetPastPresentationTimingEXT")?,
                calibrate: self.command(c"vkGetCalibratedTimestampsKHR"),
            })
        }
    }
}

/// `vkWaitForPresentKHR` bound to one device.
#[derive(Clone, Copy)]
pub struct PresentWaitCall {
    device: vk::Device,
    wait: WaitFn,
}

impl PresentWaitCall {
    /// A stand-in driver's wait, for the source's unit tests.
    #[cfg(test)]
    pub fn with(wait: WaitFn) -> PresentWaitCall {
        PresentWaitCall {
            device: vk::Device::null(),
            wait,
        }
    }

    /// Waits at most `timeout_ns` for present `id` of `swapchain`; the driver's result.
    pub fn wait(&self, swapchain: vk::SwapchainKHR, id: u64, timeout_ns: u64) -> vk::Result {
        // SAFETY: a live device and swapchain, neither retired nor destroyed during the call
        // (module invariant).
        unsafe { (self.wait)(self.device, swapchain, id, timeout_ns) }
    }
}

/// The `VK_EXT_present_timing` commands bound to one device.
pub struct TimingCalls {
    device: vk::Device,
    set_queue_size: SetQueueSizeFn,
    timing_properties: GetTimingPropertiesFn,
    time_domains: GetTimeDomainPropertiesFn,
    past: GetPastTimingFn,
    calibrate: Option<vk::PFN_vkGetCalibratedTimestampsKHR>,
}

/// What one `vkGetPastPresentationTimingEXT` call returned.
pub struct PastRead {
    pub result: vk::Result,
    pub timing_properties_counter: u64,
    /// Results written: the first `count` of the results vector, the stages of result `k` in
    /// the stage array `k`.
    pub count: usize,
}

impl TimingCalls {
    /// A stand-in driver's commands, for the source's unit tests.
    #[cfg(test)]
    pub fn with(
        set_queue_size: SetQueueSizeFn,
        timing_properties: GetTimingPropertiesFn,
        time_domains: GetTimeDomainPropertiesFn,
        past: GetPastTimingFn,
    ) -> TimingCalls {
        TimingCalls {
            device: vk::Device::null(),
            set_queue_size,
            timing_properties,
            time_domains,
            past,
            calibrate: None,
        }
    }

    /// Whether domains other than CLOCK_MONOTONIC can be mapped to it.
    pub fn can_calibrate(&self) -> bool {
        self.calibrate.is_some()
    }

    pub fn set_queue_size(&self, swapchain: vk::SwapchainKHR, size: u32) -> vk::Result {
        // SAFETY: a live swapchain created with the present timing flag (module invariant).
        unsafe { (self.set_queue_size)(self.device, swapchain, size) }
    }

    /// The swapchain's refresh duration (ns) and its timing properties counter; `None` while
    /// not known (`VK_NOT_READY`) or on an error.
    pub fn timing_properties(&self, swapchain: vk::SwapchainKHR) -> Option<(u64, u64)> {
        let mut props = SwapchainTimingProperties {
            s_type: ST_SWAPCHAIN_TIMING_PROPERTIES,
            p_next: std::ptr::null_mut(),
            refresh_duration: 0,
            refresh_interval: 0,
        };
        let mut counter = 0u64;
        // SAFETY: a live swapchain (module invariant); our struct and counter.
        let r = unsafe { (self.timing_properties)(self.device, swapchain, &mut props, &mut counter) };
        (r == vk::Result::SUCCESS).then_some((props.refresh_duration, counter))
    }

    /// The swapchain's time domains with their ids; `None` when it lists none or the query
    /// fails.
    pub fn time_domains(&self, swapchain: vk::SwapchainKHR) -> Option<Vec<(vk::TimeDomainKHR, u64)>> {
        let mut props = SwapchainTimeDomainProperties {
            s_type: ST_SWAPCHAIN_TIME_DOMAIN_PROPERTIES,
            p_next: std::ptr::null_mut(),
            time_domain_count: 0,
            p_time_domains: std::ptr::null_mut(),
            p_time_domain_ids: std::ptr::null_mut(),
        };
        // SAFETY: a live swapchain (module invariant); the count query (null arrays).
        let r = unsafe { (self.time_domains)(self.device, swapchain, &mut props, std::ptr::null_mut()) };
        if r != vk::Result::SUCCESS || props.time_domain_count == 0 {
            return None;
        }
        let n = props.time_domain_count as usize;
        let mut domains = vec![vk::TimeDomainKHR::DEVICE; n];
        let mut ids = vec![0u64; n];
        props.p_time_domains = domains.as_mut_ptr();
        props.p_time_domain_ids = ids.as_mut_ptr();
        // SAFETY: arrays of the count just returned, which the driver fills at most.
        let r = unsafe { (self.time_domains)(self.device, swapchain, &mut props, std::ptr::null_mut()) };
        if !matches!(r, vk::Result::SUCCESS | vk::Result::INCOMPLETE) {
            return None;
        }
        let n = (props.time_domain_count as usize).min(n);
        Some(domains[..n].iter().copied().zip(ids[..n].iter().copied()).collect())
    }

    /// Offset (ns) from `domain` (with `domain_id` and `stage`, for the swapchain's own
    /// domains) to CLOCK_MONOTONIC; `None` without `vkGetCalibratedTimestampsKHR` or when it
    /// fails.
    pub fn monotonic_offset(
        &self,
        swapchain: vk::SwapchainKHR,
        domain: vk::TimeDomainKHR,
        stage: u32,
        domain_id: u64,
    ) -> Option<i64> {
        let f = self.calibrate?;
        // The swapchain's own domains need the swapchain named (VkSwapchainCalibratedTimestampInfoEXT).
        let sc = SwapchainCalibratedTimestampInfo {
            s_type: ST_SWAPCHAIN_CALIBRATED_TIMESTAMP_INFO,
            p_next: std::ptr::null(),
            swapchain,
            present_stage: stage,
            time_domain_id: domain_id,
        };
        let local = domain == TIME_DOMAIN_PRESENT_STAGE_LOCAL || domain == TIME_DOMAIN_SWAPCHAIN_LOCAL;
        let infos = [
            vk::CalibratedTimestampInfoKHR {
                time_domain: domain,
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
        // SAFETY: two infos of ours and room for two results; a live swapchain (module
        // invariant).
        let r = unsafe { f(self.device, 2, infos.as_ptr(), ts.as_mut_ptr(), &mut deviation) };
        (r == vk::Result::SUCCESS).then(|| ts[1] as i64 - ts[0] as i64)
    }

    /// Reads the swapchain's complete results (each leaves the queue as it is returned) into
    /// `results`, one per array of `stages`, whose stage times the driver writes into that
    /// array.
    pub fn past_timings<const S: usize>(
        &self,
        swapchain: vk::SwapchainKHR,
        stages: &mut [[PresentStageTime; S]],
        results: &mut Vec<PastPresentationTiming>,
    ) -> PastRead {
        let info = PastPresentationTimingInfo {
            s_type: ST_PAST_PRESENTATION_TIMING_INFO,
            p_next: std::ptr::null(),
            // Complete results only.
            flags: 0,
            swapchain,
        };
        results.clear();
        for st in stages.iter_mut() {
            results.push(PastPresentationTiming {
                s_type: ST_PAST_PRESENTATION_TIMING,
                p_next: std::ptr::null_mut(),
                present_id: 0,
                target_time: 0,
                present_stage_count: S as u32,
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
        // SAFETY: a live swapchain (module invariant); `results` holds the count given, each
        // pointing at a stage array of `S` it names.
        let result = unsafe { (self.past)(self.device, &info, &mut props) };
        PastRead {
            result,
            timing_properties_counter: props.timing_properties_counter,
            count: (props.presentation_timing_count as usize).min(results.len()),
        }
    }
}
