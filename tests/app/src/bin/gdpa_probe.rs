//! Probes `vkGetDeviceProcAddr` for a device with and without `VK_KHR_swapchain` (and, where
//! the device offers them, one with `VK_KHR_present_id` + `VK_KHR_present_wait` too, and one
//! with `VK_EXT_present_timing` and its dependencies), through
//! the loader and through the framescope layer's own export, and prints one JSON line.
//!
//! Run under `framescope run` (so the layer is in the chain) with the layer's path as argument:
//! `gdpa_probe /path/to/libframescope_vk.so`. The layer must hand out NULL for commands of an
//! extension the app did not enable, and its hook when the extension is enabled.

#[path = "../../../../layer/vulkan/src/dispatch/present_timing_abi.rs"]
mod timing_abi;

use ash::vk;
use std::ffi::{c_char, c_void, CStr, CString};

type Gdpa = unsafe extern "system" fn(vk::Device, *const c_char) -> vk::PFN_vkVoidFunction;

fn main() {
    let layer_path = std::env::args().nth(1).expect("usage: gdpa_probe LAYER_SO");
    let entry = ash::Entry::linked();
    let app = vk::ApplicationInfo::default().api_version(vk::API_VERSION_1_3);
    // VK_KHR_swapchain requires VK_KHR_surface on the instance; VK_EXT_present_timing
    // VK_KHR_get_surface_capabilities2.
    let inst_exts = [
        ash::khr::surface::NAME.as_ptr(),
        ash::khr::get_surface_capabilities2::NAME.as_ptr(),
    ];
    let ici = vk::InstanceCreateInfo::default()
        .application_info(&app)
        .enabled_extension_names(&inst_exts);
    // SAFETY: valid create info.
    let instance = unsafe { entry.create_instance(&ici, None) }.expect("vkCreateInstance");
    // SAFETY: instance is live.
    let phys = unsafe { instance.enumerate_physical_devices() }.expect("physical devices")[0];
    let layer_gdpa = layer_gdpa(&layer_path);
    let mut results = Vec::new();
    let swapchain = ash::khr::swapchain::NAME.as_ptr();
    let mut devices = vec![("without_swapchain", vec![]), ("with_swapchain", vec![swapchain])];
    // Where the device offers present wait (a test double below), a device that enables it too.
    let present_wait = [ash::khr::present_id::NAME, ash::khr::present_wait::NAME];
    // SAFETY: phys is a physical device of the live instance.
    let offered = unsafe { instance.enumerate_device_extension_properties(phys) }.unwrap_or_default();
    if present_wait
        .iter()
        .all(|n| offered.iter().any(|e| e.extension_name_as_c_str() == Ok(*n)))
    {
        devices.push((
            "with_present_wait",
            vec![swapchain, present_wait[0].as_ptr(), present_wait[1].as_ptr()],
        ));
    }
    let present_timing = [
        c"VK_KHR_present_id2",
        c"VK_KHR_calibrated_timestamps",
        c"VK_EXT_present_timing",
    ];
    if present_timing
        .iter()
        .all(|n| offered.iter().any(|e| e.extension_name_as_c_str() == Ok(*n)))
    {
        let mut exts = vec![swapchain];
        exts.extend(present_timing.iter().map(|n| n.as_ptr()));
        devices.push(("with_present_timing", exts));
    }
    for (label, exts) in devices {
        let prio = [1.0f32];
        let queues = [vk::DeviceQueueCreateInfo::default()
            .queue_family_index(0)
            .queue_priorities(&prio)];
        let mut id = vk::PhysicalDevicePresentIdFeaturesKHR::default().present_id(true);
        let mut wait = vk::PhysicalDevicePresentWaitFeaturesKHR::default().present_wait(true);
        let mut ci = vk::DeviceCreateInfo::default()
            .queue_create_infos(&queues)
            .enabled_extension_names(&exts);
        if label == "with_present_wait" {
            ci = ci.push_next(&mut id).push_next(&mut wait);
        }
        // ash 0.38 predates VK_KHR_present_id2 and VK_EXT_present_timing: the layer's
        // definitions of their feature structs.
        let mut timing = timing_abi::PhysicalDevicePresentTimingFeatures {
            s_type: timing_abi::ST_PHYSICAL_DEVICE_PRESENT_TIMING_FEATURES,
            p_next: std::ptr::null_mut(),
            present_timing: vk::TRUE,
            present_at_absolute_time: vk::FALSE,
            present_at_relative_time: vk::FALSE,
        };
        let id2 = timing_abi::PhysicalDevicePresentId2Features {
            s_type: timing_abi::ST_PHYSICAL_DEVICE_PRESENT_ID_2_FEATURES,
            p_next: std::ptr::addr_of_mut!(timing).cast(),
            present_id2: vk::TRUE,
        };
        if label == "with_present_timing" {
            ci.p_next = std::ptr::addr_of!(id2).cast();
        }
        // SAFETY: valid create info for physical device 0, family 0.
        let device = unsafe { instance.create_device(phys, &ci, None) }.expect("vkCreateDevice");
        let h = device.handle();
        let mut fields = vec![format!("\"device\":\"{label}\"")];
        for name in [
            "vkQueuePresentKHR",
            "vkCreateSwapchainKHR",
            "vkQueueSubmit",
            "vkWaitForPresentKHR",
            "vkGetPastPresentationTimingEXT",
            "vkSetSwapchainPresentTimingQueueSizeEXT",
            "vkGetCalibratedTimestampsKHR",
        ] {
            let c = CString::new(name).unwrap();
            // SAFETY: querying a command name of a live device.
            let via_loader = unsafe { (instance.fp_v1_0().get_device_proc_addr)(h, c.as_ptr()) };
            // SAFETY: the layer's exported vkGetDeviceProcAddr, called with a device of its chain.
            let via_layer = unsafe { layer_gdpa(h, c.as_ptr()) };
            fields.push(format!(
                "\"{name}\":{{\"loader\":{},\"layer\":{},\"layer_in_layer_so\":{}}}",
                via_loader.is_some(),
                via_layer.is_some(),
                via_layer.is_some_and(|f| in_object(f as *const c_void, &layer_path)),
            ));
        }
        results.push(format!("{{{}}}", fields.join(",")));
        // SAFETY: nothing is pending on the device.
        unsafe { device.destroy_device(None) };
    }
    // SAFETY: all devices are destroyed.
    unsafe { instance.destroy_instance(None) };
    println!("gdpa-probe [{}]", results.join(","));
}

/// The layer's exported vkGetDeviceProcAddr, from the copy the loader already mapped.
fn layer_gdpa(path: &str) -> Gdpa {
    let c = CString::new(path).unwrap();
    // SAFETY: RTLD_NOLOAD only returns a handle to a library that is already loaded.
    let handle = unsafe { libc::dlopen(c.as_ptr(), libc::RTLD_NOW | libc::RTLD_NOLOAD) };
    assert!(
        !handle.is_null(),
        "the layer {path} is not loaded in this process (run under `framescope run`)"
    );
    // SAFETY: looking up an exported symbol of that handle.
    let sym = unsafe { libc::dlsym(handle, c"vkGetDeviceProcAddr".as_ptr()) };
    assert!(!sym.is_null(), "the layer exports no vkGetDeviceProcAddr");
    // SAFETY: the symbol has the PFN_vkGetDeviceProcAddr signature.
    unsafe { std::mem::transmute::<*mut c_void, Gdpa>(sym) }
}

/// Whether `addr` lies in the shared object at `path`.
fn in_object(addr: *const c_void, path: &str) -> bool {
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: dladdr only reads the address and fills `info`.
    if unsafe { libc::dladdr(addr, &mut info) } == 0 || info.dli_fname.is_null() {
        return false;
    }
    // SAFETY: dli_fname is a NUL-terminated path owned by the dynamic linker.
    let name = unsafe { CStr::from_ptr(info.dli_fname) }.to_string_lossy();
    std::fs::canonicalize(&*name).ok() == std::fs::canonicalize(path).ok()
}
