//! `VK_EXT_present_timing` (revision 3) and `VK_KHR_present_id2` as the Vulkan registry
//! (`vk.xml`, header 1.4.3xx) defines them; ash 0.38 (Vulkan 1.3.281) predates both. Shared
//! with the test double (tests/presentdouble includes this file), so both sides agree on one
//! layout. Layouts follow the registry's member order; enum values are the registry's.

#![allow(dead_code)]

use ash::vk;
use std::ffi::c_void;

pub const PRESENT_TIMING: &std::ffi::CStr = c"VK_EXT_present_timing";
pub const PRESENT_ID_2: &std::ffi::CStr = c"VK_KHR_present_id2";

// VkStructureType values (extension 209, VK_EXT_present_timing; 480, VK_KHR_present_id2).
pub const ST_PHYSICAL_DEVICE_PRESENT_TIMING_FEATURES: vk::StructureType = vk::StructureType::from_raw(1_000_208_000);
pub const ST_SWAPCHAIN_TIMING_PROPERTIES: vk::StructureType = vk::StructureType::from_raw(1_000_208_001);
pub const ST_SWAPCHAIN_TIME_DOMAIN_PROPERTIES: vk::StructureType = vk::StructureType::from_raw(1_000_208_002);
pub const ST_PRESENT_TIMINGS_INFO: vk::StructureType = vk::StructureType::from_raw(1_000_208_003);
pub const ST_PRESENT_TIMING_INFO: vk::StructureType = vk::StructureType::from_raw(1_000_208_004);
pub const ST_PAST_PRESENTATION_TIMING_INFO: vk::StructureType = vk::StructureType::from_raw(1_000_208_005);
pub const ST_PAST_PRESENTATION_TIMING_PROPERTIES: vk::StructureType = vk::StructureType::from_raw(1_000_208_006);
pub const ST_PAST_PRESENTATION_TIMING: vk::StructureType = vk::StructureType::from_raw(1_000_208_007);
pub const ST_PRESENT_TIMING_SURFACE_CAPABILITIES: vk::StructureType = vk::StructureType::from_raw(1_000_208_008);
pub const ST_SWAPCHAIN_CALIBRATED_TIMESTAMP_INFO: vk::StructureType = vk::StructureType::from_raw(1_000_208_009);
pub const ST_SURFACE_CAPABILITIES_PRESENT_ID_2: vk::StructureType = vk::StructureType::from_raw(1_000_479_000);
pub const ST_PRESENT_ID_2: vk::StructureType = vk::StructureType::from_raw(1_000_479_001);
pub const ST_PHYSICAL_DEVICE_PRESENT_ID_2_FEATURES: vk::StructureType = vk::StructureType::from_raw(1_000_479_002);

/// VkSwapchainCreateFlagBitsKHR.
pub const SWAPCHAIN_CREATE_PRESENT_ID_2: vk::SwapchainCreateFlagsKHR = vk::SwapchainCreateFlagsKHR::from_raw(0x40);
pub const SWAPCHAIN_CREATE_PRESENT_TIMING: vk::SwapchainCreateFlagsKHR = vk::SwapchainCreateFlagsKHR::from_raw(0x200);

/// VkTimeDomainKHR values the extension adds.
pub const TIME_DOMAIN_PRESENT_STAGE_LOCAL: vk::TimeDomainKHR = vk::TimeDomainKHR::from_raw(1_000_208_000);
pub const TIME_DOMAIN_SWAPCHAIN_LOCAL: vk::TimeDomainKHR = vk::TimeDomainKHR::from_raw(1_000_208_001);

/// VK_ERROR_PRESENT_TIMING_QUEUE_FULL_EXT.
pub const ERROR_PRESENT_TIMING_QUEUE_FULL: vk::Result = vk::Result::from_raw(-1_000_208_000);

/// VkPresentStageFlagBitsEXT.
pub const STAGE_QUEUE_OPERATIONS_END: u32 = 0x1;
pub const STAGE_REQUEST_DEQUEUED: u32 = 0x2;
pub const STAGE_IMAGE_FIRST_PIXEL_OUT: u32 = 0x4;
pub const STAGE_IMAGE_FIRST_PIXEL_VISIBLE: u32 = 0x8;

#[repr(C)]
#[derive(Clone, Copy)]
pub struct PhysicalDevicePresentTimingFeatures {
    pub s_type: vk::StructureType,
    pub p_next: *mut c_void,
    pub present_timing: vk::Bool32,
    pub present_at_absolute_time: vk::Bool32,
    pub present_at_relative_time: vk::Bool32,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct PhysicalDevicePresentId2Features {
    pub s_type: vk::StructureType,
    pub p_next: *mut c_void,
    pub present_id2: vk::Bool32,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct SurfaceCapabilitiesPresentId2 {
    pub s_type: vk::StructureType,
    pub p_next: *mut c_void,
    pub present_id2_supported: vk::Bool32,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct PresentTimingSurfaceCapabilities {
    pub s_type: vk::StructureType,
    pub p_next: *mut c_void,
    pub present_timing_supported: vk::Bool32,
    pub present_at_absolute_time_supported: vk::Bool32,
    pub present_at_relative_time_supported: vk::Bool32,
    pub present_stage_queries: u32,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct SwapchainTimingProperties {
    pub s_type: vk::StructureType,
    pub p_next: *mut c_void,
    /// The refresh period in ns; 0 when the presentation engine does not know it.
    pub refresh_duration: u64,
    pub refresh_interval: u64,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct SwapchainTimeDomainProperties {
    pub s_type: vk::StructureType,
    pub p_next: *mut c_void,
    pub time_domain_count: u32,
    pub p_time_domains: *mut vk::TimeDomainKHR,
    pub p_time_domain_ids: *mut u64,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct PastPresentationTimingInfo {
    pub s_type: vk::StructureType,
    pub p_next: *const c_void,
    pub flags: u32,
    pub swapchain: vk::SwapchainKHR,
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct PresentStageTime {
    pub stage: u32,
    pub time: u64,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct PastPresentationTiming {
    pub s_type: vk::StructureType,
    pub p_next: *mut c_void,
    pub present_id: u64,
    pub target_time: u64,
    pub present_stage_count: u32,
    pub p_present_stages: *mut PresentStageTime,
    pub time_domain: vk::TimeDomainKHR,
    pub time_domain_id: u64,
    pub report_complete: vk::Bool32,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct PastPresentationTimingProperties {
    pub s_type: vk::StructureType,
    pub p_next: *mut c_void,
    pub timing_properties_counter: u64,
    pub time_domains_counter: u64,
    pub presentation_timing_count: u32,
    pub p_presentation_timings: *mut PastPresentationTiming,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct PresentTimingInfo {
    pub s_type: vk::StructureType,
    pub p_next: *const c_void,
    pub flags: u32,
    pub target_time: u64,
    pub time_domain_id: u64,
    pub present_stage_queries: u32,
    pub target_time_domain_present_stage: u32,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct PresentTimingsInfo {
    pub s_type: vk::StructureType,
    pub p_next: *const c_void,
    pub swapchain_count: u32,
    pub p_timing_infos: *const PresentTimingInfo,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct PresentId2 {
    pub s_type: vk::StructureType,
    pub p_next: *const c_void,
    pub swapchain_count: u32,
    pub p_present_ids: *const u64,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct SwapchainCalibratedTimestampInfo {
    pub s_type: vk::StructureType,
    pub p_next: *const c_void,
    pub swapchain: vk::SwapchainKHR,
    pub present_stage: u32,
    pub time_domain_id: u64,
}

pub type SetQueueSizeFn = unsafe extern "system" fn(vk::Device, vk::SwapchainKHR, u32) -> vk::Result;
pub type GetTimingPropertiesFn =
    unsafe extern "system" fn(vk::Device, vk::SwapchainKHR, *mut SwapchainTimingProperties, *mut u64) -> vk::Result;
pub type GetTimeDomainPropertiesFn =
    unsafe extern "system" fn(vk::Device, vk::SwapchainKHR, *mut SwapchainTimeDomainProperties, *mut u64) -> vk::Result;
pub type GetPastTimingFn = unsafe extern "system" fn(
    vk::Device,
    *const PastPresentationTimingInfo,
    *mut PastPresentationTimingProperties,
) -> vk::Result;

/// The commands of `VK_EXT_present_timing`, in the order `vk.xml` lists them.
pub const COMMANDS: [&[u8]; 4] = [
    b"vkSetSwapchainPresentTimingQueueSizeEXT",
    b"vkGetSwapchainTimingPropertiesEXT",
    b"vkGetSwapchainTimeDomainPropertiesEXT",
    b"vkGetPastPresentationTimingEXT",
];
