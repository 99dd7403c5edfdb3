//! The parts of the loader's `vk_layer.h` a layer needs; ash only carries the two sType values.
#![allow(dead_code)]

use ash::vk;
use std::ffi::{c_char, c_void};

/// `VkNegotiateLayerStructType::LAYER_NEGOTIATE_INTERFACE_STRUCT`.
pub const LAYER_NEGOTIATE_INTERFACE_STRUCT: i32 = 1;
/// The loader/layer interface version this layer implements.
pub const LAYER_INTERFACE_VERSION: u32 = 2;

pub type PfnGetPhysicalDeviceProcAddr =
    unsafe extern "system" fn(vk::Instance, *const c_char) -> vk::PFN_vkVoidFunction;

#[repr(C)]
pub struct VkNegotiateLayerInterface {
    pub s_type: i32,
    pub p_next: *mut c_void,
    pub loader_layer_interface_version: u32,
    pub pfn_get_instance_proc_addr: Option<vk::PFN_vkGetInstanceProcAddr>,
    pub pfn_get_device_proc_addr: Option<vk::PFN_vkGetDeviceProcAddr>,
    pub pfn_get_physical_device_proc_addr: Option<PfnGetPhysicalDeviceProcAddr>,
}

/// `VkLayerFunction` values.
pub const VK_LAYER_LINK_INFO: i32 = 0;
pub const VK_LOADER_DATA_CALLBACK: i32 = 1;

/// `PFN_vkSetDeviceLoaderData`: stamps the loader's dispatch pointer into a dispatchable
/// object the layer created itself (command buffers, queues).
pub type PfnSetDeviceLoaderData = unsafe extern "system" fn(vk::Device, *mut c_void) -> vk::Result;

#[repr(C)]
pub struct VkLayerInstanceLink {
    pub p_next: *mut VkLayerInstanceLink,
    pub pfn_next_get_instance_proc_addr: vk::PFN_vkGetInstanceProcAddr,
    pub pfn_next_get_physical_device_proc_addr: Option<PfnGetPhysicalDeviceProcAddr>,
}

/// `VkLayerInstanceCreateInfo`; `u` is the union (`pLayerInfo` for `VK_LAYER_LINK_INFO`).
#[repr(C)]
pub struct VkLayerInstanceCreateInfo {
    pub s_type: vk::StructureType,
    pub p_next: *const c_void,
    pub function: i32,
    pub u: *mut c_void,
}

#[repr(C)]
pub struct VkLayerDeviceLink {
    pub p_next: *mut VkLayerDeviceLink,
    pub pfn_next_get_instance_proc_addr: vk::PFN_vkGetInstanceProcAddr,
    pub pfn_next_get_device_proc_addr: vk::PFN_vkGetDeviceProcAddr,
}

/// `VkLayerDeviceCreateInfo`; `u` is `pLayerInfo` or `pfnSetDeviceLoaderData`.
#[repr(C)]
pub struct VkLayerDeviceCreateInfo {
    pub s_type: vk::StructureType,
    pub p_next: *const c_void,
    pub function: i32,
    pub u: *mut c_void,
}

/// Finds the loader's entry of `function` in an instance create-info chain.
///
/// # Safety
/// `p_next` must be a valid Vulkan pNext chain.
pub unsafe fn find_instance_link(p_next: *const c_void, function: i32) -> *mut VkLayerInstanceCreateInfo {
    let mut p = p_next as *mut VkLayerInstanceCreateInfo;
    // SAFETY: every pNext element starts with sType/pNext; caller guarantees a valid chain.
    unsafe {
        while !p.is_null() {
            if (*p).s_type == vk::StructureType::LOADER_INSTANCE_CREATE_INFO && (*p).function == function {
                return p;
            }
            p = (*p).p_next as *mut VkLayerInstanceCreateInfo;
        }
    }
    std::ptr::null_mut()
}

/// Finds the loader's entry of `function` in a device create-info chain.
///
/// # Safety
/// `p_next` must be a valid Vulkan pNext chain.
pub unsafe fn find_device_link(p_next: *const c_void, function: i32) -> *mut VkLayerDeviceCreateInfo {
    let mut p = p_next as *mut VkLayerDeviceCreateInfo;
    // SAFETY: every pNext element starts with sType/pNext; caller guarantees a valid chain.
    unsafe {
        while !p.is_null() {
            if (*p).s_type == vk::StructureType::LOADER_DEVICE_CREATE_INFO && (*p).function == function {
                return p;
            }
            p = (*p).p_next as *mut VkLayerDeviceCreateInfo;
        }
    }
    std::ptr::null_mut()
}
