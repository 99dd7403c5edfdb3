//! The hooks that make and end instances and devices: create/destroy instance, create device
//! (with what the layer adds to the app's create info), and destroy device.

use crate::device_state::{self, DeviceState};
use crate::dispatch::chain::Unlinked;
use crate::dispatch::device::{self, Device, DeviceAugment, FrameBoundaryMode};
use crate::dispatch::device_features::{PresentTimingFeatures, PresentWaitFeatures};
use crate::dispatch::instance::{self, Instance, INSTANCES};
use crate::dispatch::loader_abi::*;
use crate::dispatch::present_timing_abi as timing_abi;
use crate::dispatch::registry::dispatch_key;
use crate::display::{present_timing, present_wait};
use crate::hooks::frame_boundary;
use ash::vk::{self, Handle};
use framescope_core::guard::{guarded, Site};
use std::ffi::{c_char, c_void, CStr};
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// Whether `f` is code of the Vulkan loader (`libvulkan.so*`): a terminator or trampoline.
fn in_loader(f: unsafe extern "system" fn()) -> bool {
    // SAFETY: dladdr only reads the process's link map; `info` is written on success and its
    // file name is a NUL-terminated string owned by the loader's link map.
    unsafe {
        let mut info: libc::Dl_info = std::mem::zeroed();
        if libc::dladdr(f as *const c_void, &mut info) == 0 || info.dli_fname.is_null() {
            return false;
        }
        let path = CStr::from_ptr(info.dli_fname).to_bytes();
        let file = path.rsplit(|&c| c == b'/').next().unwrap_or(path);
        file.starts_with(b"libvulkan.so")
    }
}

static CREATE_INSTANCE: Site = Site::new("vkCreateInstance");
static DESTROY_INSTANCE: Site = Site::new("vkDestroyInstance");

pub unsafe extern "system" fn create_instance(
    ci: *const vk::InstanceCreateInfo<'_>,
    alloc: *const vk::AllocationCallbacks<'_>,
    out: *mut vk::Instance,
) -> vk::Result {
    // SAFETY: the loader passes a valid create info whose chain holds our link.
    let link_info = unsafe { find_instance_link((*ci).p_next, VK_LAYER_LINK_INFO) };
    if link_info.is_null() {
        return vk::Result::ERROR_INITIALIZATION_FAILED;
    }
    // SAFETY: the loader's link entry holds pLayerInfo; advancing it hands the rest of the
    // chain to the next layer (loader interface contract).
    let next_gipa = unsafe {
        let link = (*link_info).u as *mut VkLayerInstanceLink;
        (*link_info).u = (*link).p_next as *mut c_void;
        (*link).pfn_next_get_instance_proc_addr
    };
    // SAFETY: a null instance is valid for global commands.
    let create: vk::PFN_vkCreateInstance =
        match unsafe { next_gipa(vk::Instance::null(), c"vkCreateInstance".as_ptr()) } {
            // SAFETY: the loader returned vkCreateInstance for that name.
            Some(f) => unsafe { std::mem::transmute::<unsafe extern "system" fn(), vk::PFN_vkCreateInstance>(f) },
            None => return vk::Result::ERROR_INITIALIZATION_FAILED,
        };
    // SAFETY: `ci` is the app's valid create info.
    let app_exts = unsafe { instance_extensions(&*ci) };
    let app_has = |n: &CStr| app_exts.contains(&n);
    // VK_EXT_present_timing needs VK_KHR_get_surface_capabilities2 on the instance (the
    // extension's dependencies in vk.xml): added below the app where it presents to surfaces;
    // the loader answers its commands to the app only if the app enabled it.
    let add_caps2 = app_has(ash::khr::surface::NAME)
        && !app_has(ash::khr::get_surface_capabilities2::NAME)
        && framescope_core::settings::get().display_times;
    let mut r = vk::Result::ERROR_INITIALIZATION_FAILED;
    let mut surface_caps2 = app_has(ash::khr::get_surface_capabilities2::NAME);
    if add_caps2 {
        let mut names: Vec<*const c_char> = app_exts.iter().map(|e| e.as_ptr()).collect();
        names.push(ash::khr::get_surface_capabilities2::NAME.as_ptr());
        // SAFETY: the app's create info with one more extension name, valid for the call.
        let mut copy = unsafe { *ci };
        copy.enabled_extension_count = names.len() as u32;
        copy.pp_enabled_extension_names = names.as_ptr();
        // SAFETY: the link entry as the first call found it, for a retry (the layers below
        // advance it as they pass it on).
        let link_u = unsafe { (*link_info).u };
        // SAFETY: the app's arguments with our copy of its create info.
        r = unsafe { create(&copy, alloc, out) };
        if r == vk::Result::SUCCESS {
            surface_caps2 = true;
        } else {
            // SAFETY: restoring the loader's link entry for the retry.
            unsafe { (*link_info).u = link_u };
            framescope_core::log::info(format_args!(
                "vkCreateInstance with VK_KHR_get_surface_capabilities2 failed ({r:?}); as the app asked"
            ));
        }
    }
    if r != vk::Result::SUCCESS {
        // SAFETY: forwarding the app's arguments unchanged.
        r = unsafe { create(ci, alloc, out) };
    }
    if r != vk::Result::SUCCESS {
        return r;
    }
    // SAFETY: success means *out holds the new instance.
    let handle = unsafe { *out };
    // SAFETY: ci is valid; a null application info means API 1.0.
    let api_version = unsafe {
        let app = (*ci).p_application_info;
        if app.is_null() {
            vk::API_VERSION_1_0
        } else {
            (*app).api_version.max(vk::API_VERSION_1_0)
        }
    };
    // SAFETY: `handle` was just created through `next_gipa`'s chain.
    guarded(&CREATE_INSTANCE, || unsafe {
        register_instance(handle, next_gipa, api_version, surface_caps2)
    });
    r
}

/// Records a new instance with the next layer's commands it needs.
///
/// # Safety
/// `handle` is a live instance created through the chain `next_gipa` belongs to.
unsafe fn register_instance(
    handle: vk::Instance,
    next_gipa: vk::PFN_vkGetInstanceProcAddr,
    api_version: u32,
    surface_caps2: bool,
) {
    // SAFETY: next_gipa resolves instance commands of `handle`.
    let fns = unsafe {
        ash::Instance::load_with(
            |name| std::mem::transmute::<vk::PFN_vkVoidFunction, *const c_void>(next_gipa(handle, name.as_ptr())),
            handle,
        )
    };
    // SAFETY: querying instance commands of `handle` by name.
    let core = unsafe { next_gipa(handle, c"vkGetPhysicalDeviceFeatures2".as_ptr()) };
    // SAFETY: as above.
    let khr = unsafe { next_gipa(handle, c"vkGetPhysicalDeviceFeatures2KHR".as_ptr()) };
    let next_features2 = if api_version >= vk::API_VERSION_1_1 {
        core.or(khr)
    } else {
        khr.filter(|&f| !in_loader(f)).or(core).or(khr)
    }
    // SAFETY: both names have the PFN_vkGetPhysicalDeviceFeatures2 signature (aliases).
    .map(|f| unsafe { std::mem::transmute::<unsafe extern "system" fn(), vk::PFN_vkGetPhysicalDeviceFeatures2>(f) });
    // SAFETY: querying an instance command of `handle` by name; that name has this signature.
    let next_surface_caps2 = unsafe { next_gipa(handle, c"vkGetPhysicalDeviceSurfaceCapabilities2KHR".as_ptr()) }
        .filter(|_| surface_caps2)
        .map(|f| unsafe {
            std::mem::transmute::<unsafe extern "system" fn(), vk::PFN_vkGetPhysicalDeviceSurfaceCapabilities2KHR>(f)
        });
    let state = Arc::new(Instance {
        handle,
        next_gipa,
        fns,
        api_version,
        next_features2,
        next_surface_caps2,
        frame_boundary_native: framescope_core::sync::Mutex::new(Vec::new()),
        // SAFETY: querying instance commands of `handle` by name.
        surface_fns: crate::dispatch::surface_fns::NextSurfaceFns::resolve(|n| unsafe {
            next_gipa(handle, n.as_ptr())
        }),
    });
    // SAFETY: handle is a live instance created through the loader.
    INSTANCES.insert(unsafe { dispatch_key(handle.as_raw()) }, state);
    framescope_core::log::debug(format_args!(
        "instance created (api {}.{})",
        vk::api_version_major(api_version),
        vk::api_version_minor(api_version)
    ));
}

pub unsafe extern "system" fn destroy_instance(instance: vk::Instance, alloc: *const vk::AllocationCallbacks<'_>) {
    if instance == vk::Instance::null() {
        return;
    }
    // SAFETY: a non-null instance handle from the app.
    let key = unsafe { dispatch_key(instance.as_raw()) };
    if let Some(state) = INSTANCES.remove(key) {
        guarded(&DESTROY_INSTANCE, || crate::display_wayland::instance_destroyed(key));
        // SAFETY: forwarding to the next layer's destroy for this instance.
        unsafe { (state.fns.fp_v1_0().destroy_instance)(instance, alloc) };
    }
}

/// Our link in the loader's device chain and what it leads to.
struct DeviceLink {
    inst: Arc<Instance>,
    link_info: *mut VkLayerDeviceCreateInfo,
    /// The link entry as the first call left it, for a retry.
    next_link: *mut c_void,
    next_gdpa: vk::PFN_vkGetDeviceProcAddr,
    set_loader_data: Option<PfnSetDeviceLoaderData>,
    create: vk::PFN_vkCreateDevice,
}

impl DeviceLink {
    /// Reads our link and advances the chain (loader interface); `None` when the chain has
    /// no link, the instance is unknown or the next layer gives no `vkCreateDevice`.
    ///
    /// # Safety
    /// `ci` is the loader's valid create info of this `vkCreateDevice` call, `phys` its
    /// physical device.
    unsafe fn read(phys: vk::PhysicalDevice, ci: *const vk::DeviceCreateInfo<'_>) -> Option<DeviceLink> {
        // SAFETY: the loader passes a valid create info chain.
        let (link_info, loader_data) = unsafe {
            (
                find_device_link((*ci).p_next, VK_LAYER_LINK_INFO),
                find_device_link((*ci).p_next, VK_LOADER_DATA_CALLBACK),
            )
        };
        if link_info.is_null() {
            return None;
        }
        // SAFETY: `phys` is a handle the app (or the loader) passed to this command.
        let inst = unsafe { instance::lookup(phys.as_raw()) }?;
        // SAFETY: as for the instance link: read our link, then advance the chain.
        let (next_gipa, next_gdpa, next_link) = unsafe {
            let link = (*link_info).u as *mut VkLayerDeviceLink;
            (*link_info).u = (*link).p_next as *mut c_void;
            (
                (*link).pfn_next_get_instance_proc_addr,
                (*link).pfn_next_get_device_proc_addr,
                (*link_info).u,
            )
        };
        let set_loader_data = if loader_data.is_null() {
            None
        } else {
            // SAFETY: the VK_LOADER_DATA_CALLBACK entry's union holds pfnSetDeviceLoaderData.
            Some(unsafe { std::mem::transmute::<*mut c_void, PfnSetDeviceLoaderData>((*loader_data).u) })
        };
        // vkCreateDevice must come from the instance's dispatch, never gipa(NULL, ...).
        // SAFETY: querying an instance command of a live instance.
        let create: vk::PFN_vkCreateDevice = match unsafe { next_gipa(inst.handle, c"vkCreateDevice".as_ptr()) } {
            // SAFETY: the next layer returned vkCreateDevice for that name.
            Some(f) => unsafe { std::mem::transmute::<unsafe extern "system" fn(), vk::PFN_vkCreateDevice>(f) },
            None => return None,
        };
        Some(DeviceLink {
            inst,
            link_info,
            next_link,
            next_gdpa,
            set_loader_data,
            create,
        })
    }
}

/// One `vkCreateDevice` call down the chain, with the app's arguments.
struct DownCall<'a> {
    link: &'a DeviceLink,
    phys: vk::PhysicalDevice,
    ci: *const vk::DeviceCreateInfo<'a>,
    alloc: *const vk::AllocationCallbacks<'a>,
    out: *mut vk::Device,
}

impl DownCall<'_> {
    /// Creates the device from a copy of the app's create info with extension list `names`,
    /// the statistics feature (`stats`) and the features present wait and present timing need
    /// where we add them; the app's chain is restored after.
    ///
    /// # Safety
    /// The fields are the app's valid arguments of this call.
    unsafe fn create(
        &self,
        names: &[*const c_char],
        stats: Option<&StatsPlan>,
        with_present_wait: bool,
        timing: bool,
    ) -> vk::Result {
        // SAFETY: a copy of the app's create info differing only in its extension list, which
        // holds names the app asked for or the physical device supports, and in the
        // pipelineStatisticsQuery feature where the device supports it.
        let mut copy = unsafe { *self.ci };
        copy.enabled_extension_count = names.len() as u32;
        copy.pp_enabled_extension_names = if names.is_empty() {
            std::ptr::null()
        } else {
            names.as_ptr()
        };
        // SAFETY: `copy` is of the app's create info of this call; restored right after it.
        let patched = stats.and_then(|p| unsafe { p.apply(&mut copy) });
        // The feature the extension's pools need (VUID-VkQueryPoolCreateInfo-queryType-03237),
        // chained in front of the app's structs, only when we add the extension.
        let mut perf_features = vk::PhysicalDevicePerformanceQueryFeaturesKHR {
            performance_counter_query_pools: vk::TRUE,
            ..Default::default()
        };
        if names.contains(&crate::driver_counters::EXTENSION.as_ptr()) {
            perf_features.p_next = copy.p_next as *mut c_void;
            copy.p_next = std::ptr::addr_of!(perf_features).cast();
        }
        // presentId and presentWait with the extensions we add (VUID-vkWaitForPresentKHR-presentWait-06234).
        let mut present_features = PresentWaitFeatures::default();
        if with_present_wait {
            // SAFETY: `copy`'s chain is the app's, valid for this call; restored below.
            unsafe { present_features.apply(&mut copy) };
        }
        // presentTiming and presentId2 with the extensions we add.
        let mut timing_features = PresentTimingFeatures::default();
        if timing {
            // SAFETY: as above.
            unsafe { timing_features.apply(&mut copy) };
        }
        // SAFETY: the layers below advance the chain's link as they pass it on, so a retry
        // hands them the link as the first call did (else the layer below ours finds its
        // successor's entry and fails with VK_ERROR_INITIALIZATION_FAILED, not the driver's
        // result); then forwarding a valid create info.
        let r = unsafe {
            (*self.link.link_info).u = self.link.next_link;
            (self.link.create)(self.phys, &copy, self.alloc, self.out)
        };
        if let Some(restore) = patched {
            restore();
        }
        if with_present_wait {
            // SAFETY: the app's structs `apply` patched, still valid.
            unsafe { present_features.restore() };
        }
        if timing {
            // SAFETY: as above.
            unsafe { timing_features.restore() };
        }
        r
    }
}

pub unsafe extern "system" fn create_device(
    phys: vk::PhysicalDevice,
    ci: *const vk::DeviceCreateInfo<'_>,
    alloc: *const vk::AllocationCallbacks<'_>,
    out: *mut vk::Device,
) -> vk::Result {
    // SAFETY: the loader's create info of this call.
    let Some(link) = (unsafe { DeviceLink::read(phys, ci) }) else {
        return vk::Result::ERROR_INITIALIZATION_FAILED;
    };
    let inst = &link.inst;
    // SAFETY: `ci` is the app's create info of this call.
    let plan = guarded(&device::CREATE_DEVICE, || unsafe { augment_plan(inst, phys, ci) }).unwrap_or_default();
    let mut augment = DeviceAugment {
        unavailable: plan.unavailable.clone(),
        driver_counters: plan.driver_counters.clone(),
        frame_boundary: plan.frame_boundary,
        ..DeviceAugment::default()
    };
    let emulate_fb = plan.frame_boundary == FrameBoundaryMode::Emulated;
    // SAFETY: ci is the app's valid create info.
    let app_names: Vec<*const c_char> = unsafe { app_extension_ptrs(&*ci) };
    let kept: Vec<*const c_char> = app_names
        .iter()
        .copied()
        // SAFETY: each name is a valid C string of the app's list.
        .filter(|&n| !(emulate_fb && unsafe { CStr::from_ptr(n) } == frame_boundary::NAME))
        .collect();
    // The frame-boundary feature struct is ours to answer; the layers below must not see it.
    let fb_features = if emulate_fb {
        // SAFETY: the app's create-info chain is valid and, for this call, ours to relink.
        unsafe {
            Unlinked::take(
                std::ptr::addr_of!((*ci).p_next) as *mut *mut c_void,
                vk::StructureType::PHYSICAL_DEVICE_FRAME_BOUNDARY_FEATURES_EXT,
            )
        }
    } else {
        None
    };
    // SAFETY: `ci` is the app's create info of this call.
    let stats = guarded(&device::CREATE_DEVICE, || unsafe { StatsPlan::new(inst, phys, ci) }).unwrap_or_default();
    let down = DownCall {
        link: &link,
        phys,
        ci,
        alloc,
        out,
    };
    // SAFETY: the app's arguments of this call, with its create info's copies below.
    let create_with = |names: &[*const c_char], stats: Option<&StatsPlan>, pw: bool, timing: bool| unsafe {
        down.create(names, stats, pw, timing)
    };
    let mut r = vk::Result::ERROR_INITIALIZATION_FAILED;
    let cfg = framescope_core::settings::get();
    let want_stats = stats.enable
        && cfg.samples != framescope_core::config::Samples::Off
        && cfg.sample_stats != framescope_core::config::SampleStats::Off;
    if !plan.add.is_empty() || want_stats || plan.present_wait.on || plan.present_timing.on {
        let mut names = kept.clone();
        names.extend(plan.add.iter().map(|n| n.as_ptr()));
        r = create_with(
            &names,
            want_stats.then_some(&stats),
            plan.present_wait.on,
            plan.present_timing.on,
        );
        if r == vk::Result::SUCCESS {
            augment.added_extensions = plan.add.clone();
            augment.perf_query = plan.perf_query;
            augment.pipeline_stats = stats.app_enabled || want_stats;
            augment.present_wait = plan.present_wait;
            augment.present_timing = plan.present_timing;
        } else {
            framescope_core::log::error(format_args!(
                "vkCreateDevice failed with our additions ({r:?}); retrying as the app asked"
            ));
            augment.fell_back = true;
            for n in &plan.add {
                augment.unavailable.push((
                    n.to_string_lossy().into_owned(),
                    format!("device creation with it failed: {r:?}"),
                ));
            }
        }
    }
    if r != vk::Result::SUCCESS {
        r = create_with(&kept, None, false, false);
        augment.pipeline_stats = stats.app_enabled;
        // Where the app enabled both itself, present_wait runs on the device as the app made it.
        augment.present_wait = plan.present_wait_app;
    }
    if cfg.sample_stats == framescope_core::config::SampleStats::Off {
        // The app's own feature is no reason for our queries.
        augment.pipeline_stats = false;
    }
    if !augment.pipeline_stats {
        augment
            .unavailable
            .push(("pipeline_statistics".into(), stats.why_not.clone()));
    }
    if let Some(t) = fb_features {
        // SAFETY: restoring the app's chain as it was.
        unsafe { t.restore() };
    }
    if r != vk::Result::SUCCESS {
        return r;
    }
    // SAFETY: success means *out is the new device, made from the app's create info.
    let handle = unsafe { *out };
    guarded(&device::CREATE_DEVICE, || unsafe {
        register_device(&link, phys, ci, handle, augment)
    });
    r
}

/// Records a new device with its state (and starts its dump).
///
/// # Safety
/// `handle` is a live device just created through `link` from the app's create info `ci`.
unsafe fn register_device(
    link: &DeviceLink,
    phys: vk::PhysicalDevice,
    ci: *const vk::DeviceCreateInfo<'_>,
    handle: vk::Device,
    augment: DeviceAugment,
) {
    // SAFETY: ci is the app's valid create info; handle was just created from it.
    let enabled = unsafe { enabled_extensions(&*ci) };
    let dev = Device::new(
        link.inst.clone(),
        phys,
        handle,
        link.next_gdpa,
        link.set_loader_data,
        enabled,
        augment,
    );
    let state = Arc::new(DeviceState::new(dev));
    crate::hooks::present::start_dump(&state);
    // SAFETY: handle is a live device created through the loader.
    device_state::DEVICES.insert(unsafe { dispatch_key(handle.as_raw()) }, state);
}

/// How to turn on `pipelineStatisticsQuery` in the app's create info, if it is not on.
#[derive(Default)]
struct StatsPlan {
    app_enabled: bool,
    enable: bool,
    /// The app chains a `VkPhysicalDeviceFeatures2` (then `pEnabledFeatures` must stay NULL).
    in_chain: bool,
    features: vk::PhysicalDeviceFeatures,
    why_not: String,
}

impl StatsPlan {
    /// # Safety
    /// `ci` is the app's create info of this `vkCreateDevice` call: valid, with a valid chain
    /// and `pEnabledFeatures`.
    unsafe fn new(inst: &Instance, phys: vk::PhysicalDevice, ci: *const vk::DeviceCreateInfo<'_>) -> StatsPlan {
        // SAFETY: a physical device of this instance.
        let supported = unsafe { inst.fns.get_physical_device_features(phys) }.pipeline_statistics_query == vk::TRUE;
        // SAFETY: the caller's contract.
        let ci = unsafe { &*ci };
        // SAFETY: the app's pEnabledFeatures, when set, is valid.
        let app_features = unsafe { ci.p_enabled_features.as_ref() }.copied();
        // SAFETY: the app's chain is valid.
        let f2 = unsafe { crate::dispatch::chain::find(ci.p_next, vk::StructureType::PHYSICAL_DEVICE_FEATURES_2) }
            as *const vk::PhysicalDeviceFeatures2<'static>;
        // SAFETY: found by its sType.
        let chained = (!f2.is_null()).then(|| unsafe { (*f2).features });
        let current = app_features.or(chained).unwrap_or_default();
        let app_enabled = current.pipeline_statistics_query == vk::TRUE;
        StatsPlan {
            app_enabled,
            enable: supported && !app_enabled,
            in_chain: chained.is_some(),
            features: vk::PhysicalDeviceFeatures {
                pipeline_statistics_query: vk::TRUE,
                ..current
            },
            why_not: if supported {
                "samples=off or sample_stats=off".into()
            } else {
                "pipelineStatisticsQuery not supported by the device".into()
            },
        }
    }

    /// Turns the feature on in `copy`: through our own features struct, or, when the app chains
    /// `VkPhysicalDeviceFeatures2`, by setting the bit there for the duration of the call (the
    /// returned closure restores it).
    ///
    /// # Safety
    /// `copy` is a copy of the app's create info of this call, whose chain (the app's own
    /// structs) is valid and may be written until the closure restores it.
    unsafe fn apply<'a>(&'a self, copy: &mut vk::DeviceCreateInfo<'a>) -> Option<impl FnOnce() + 'a> {
        if !self.in_chain {
            copy.p_enabled_features = &self.features;
            return None;
        }
        // SAFETY: the app's chain is valid; the struct is the app's for this call and is
        // restored right after it.
        unsafe {
            let f2 = crate::dispatch::chain::find(copy.p_next, vk::StructureType::PHYSICAL_DEVICE_FEATURES_2)
                as *mut vk::PhysicalDeviceFeatures2<'static>;
            let old = (*f2).features.pipeline_statistics_query;
            (*f2).features.pipeline_statistics_query = vk::TRUE;
            Some(move || (*f2).features.pipeline_statistics_query = old)
        }
    }
}

/// What we would like to add to the app's device: extensions it did not enable that we use.
#[derive(Default)]
struct AugmentPlan {
    add: Vec<&'static CStr>,
    frame_boundary: FrameBoundaryMode,
    unavailable: Vec<(String, String)>,
    driver_counters: Vec<crate::driver_counters::DriverCounter>,
    /// `VK_KHR_performance_query` is in `add`: `performanceCounterQueryPools` goes on too.
    perf_query: bool,
    /// present_wait with `add` (and its features).
    present_wait: crate::dispatch::device::PresentWaitAugment,
    /// present_wait without `add`: the app enabled both extensions and features itself.
    present_wait_app: crate::dispatch::device::PresentWaitAugment,
    /// present_timing with `add` (and its features).
    present_timing: present_timing::Augment,
}

/// # Safety
/// `ci` is the app's create info of this `vkCreateDevice` call, valid with its arrays.
unsafe fn augment_plan(inst: &Instance, phys: vk::PhysicalDevice, ci: *const vk::DeviceCreateInfo<'_>) -> AugmentPlan {
    let mut plan = AugmentPlan::default();
    // SAFETY: querying a physical device of this instance.
    let available = unsafe { inst.fns.enumerate_device_extension_properties(phys) }.unwrap_or_default();
    let supported = |n: &CStr| available.iter().any(|e| e.extension_name_as_c_str() == Ok(n));
    // SAFETY: the caller's contract.
    let app = unsafe { enabled_extensions(&*ci) };
    if app.iter().any(|e| e.as_bytes() == frame_boundary::NAME.to_bytes()) {
        plan.frame_boundary = if supported(frame_boundary::NAME) {
            FrameBoundaryMode::Native
        } else {
            FrameBoundaryMode::Emulated
        };
    }
    let calibrated = ash::ext::calibrated_timestamps::NAME;
    if supported(calibrated) {
        if !app.iter().any(|e| e.as_bytes() == calibrated.to_bytes()) {
            plan.add.push(calibrated);
        }
    } else {
        plan.unavailable.push((
            "calibrated_timestamps".into(),
            "VK_EXT_calibrated_timestamps not supported by the device".into(),
        ));
    }
    // Pipeline creation feedback (`hooks::creation`): core in 1.3; below that, the extension
    // where the device has it.
    // SAFETY: querying a physical device of this instance.
    let device_api = unsafe { inst.fns.get_physical_device_properties(phys) }.api_version;
    let feedback = ash::ext::pipeline_creation_feedback::NAME;
    if !device::feedback_is_core(inst.api_version, device_api)
        && supported(feedback)
        && !app.iter().any(|e| e.as_bytes() == feedback.to_bytes())
    {
        plan.add.push(feedback);
    }
    // SAFETY: the caller's contract.
    unsafe { plan_present_wait(inst, phys, ci, &available, &app, &mut plan) };
    plan_present_timing(inst, phys, &available, &app, &mut plan);
    if supported(crate::driver_counters::EXTENSION) {
        plan.driver_counters = crate::driver_counters::enumerate(inst, phys);
        let cfg = framescope_core::settings::get();
        let n = plan.driver_counters.len();
        let why_not = if app
            .iter()
            .any(|e| e.as_bytes() == crate::driver_counters::EXTENSION.to_bytes())
        {
            Some("the app uses VK_KHR_performance_query itself; framescope leaves the profiling lock to it".to_string())
        } else if !cfg.driver_counters {
            Some(format!(
                "driver_counters=0 (the default): the device's {n} counters are listed in the header's \
                 performance_counters; driver_counters=1 collects them per render pass, rotated across frames"
            ))
        } else if cfg.effective_samples() == framescope_core::config::Samples::Off {
            Some("driver_counters needs samples at cmdbuf or finer (and gpu_timing=1)".to_string())
        } else if n == 0 {
            Some("the device lists no counters".to_string())
        } else {
            None
        };
        match why_not {
            Some(why) => plan.unavailable.push(("vk_performance_query".into(), why)),
            None => {
                plan.add.push(crate::driver_counters::EXTENSION);
                plan.perf_query = true;
            }
        }
    } else {
        plan.unavailable.push((
            "vk_performance_query".into(),
            "VK_KHR_performance_query not supported by the device: no driver counters per command buffer and \
             render pass (RADV, ANV, Turnip and v3dv have them; NVIDIA's come from PM sampling)"
                .into(),
        ));
    }
    plan
}

/// The display-time source `VK_KHR_present_wait`: both extensions go on below the app where
/// the device offers them with their features, the app presents (`VK_KHR_swapchain`, which both
/// require) and `display_times` is on.
///
/// # Safety
/// `ci` is the app's create info of this `vkCreateDevice` call, valid with its chain.
unsafe fn plan_present_wait(
    inst: &Instance,
    phys: vk::PhysicalDevice,
    ci: *const vk::DeviceCreateInfo<'_>,
    available: &[vk::ExtensionProperties],
    app: &[String],
    plan: &mut AugmentPlan,
) {
    let app_has = |n: &CStr| app.iter().any(|e| e.as_bytes() == n.to_bytes());
    let why_not = if !app_has(ash::khr::swapchain::NAME) {
        Some("the app does not enable VK_KHR_swapchain")
    } else if !framescope_core::settings::get().display_times {
        Some("display_times=0")
    } else {
        present_wait::supported(inst, phys, available).err()
    };
    if let Some(why) = why_not {
        plan.unavailable.push(("present_wait".into(), why.into()));
        return;
    }
    let app_ids = app_has(present_wait::PRESENT_ID);
    plan.present_wait = crate::dispatch::device::PresentWaitAugment { on: true, app_ids };
    for n in [present_wait::PRESENT_ID, present_wait::PRESENT_WAIT] {
        if !app_has(n) {
            plan.add.push(n);
        }
    }
    // Without our additions the app's own enabling still counts, if it turned both features on.
    if app_ids && app_has(present_wait::PRESENT_WAIT) {
        // SAFETY: the caller's contract; structs found by sType are of that type.
        let on = unsafe {
            let id =
                crate::dispatch::chain::find((*ci).p_next, vk::StructureType::PHYSICAL_DEVICE_PRESENT_ID_FEATURES_KHR)
                    as *const vk::PhysicalDevicePresentIdFeaturesKHR<'static>;
            let w = crate::dispatch::chain::find(
                (*ci).p_next,
                vk::StructureType::PHYSICAL_DEVICE_PRESENT_WAIT_FEATURES_KHR,
            ) as *const vk::PhysicalDevicePresentWaitFeaturesKHR<'static>;
            !id.is_null() && (*id).present_id == vk::TRUE && !w.is_null() && (*w).present_wait == vk::TRUE
        };
        plan.present_wait_app = crate::dispatch::device::PresentWaitAugment { on, app_ids };
    }
}

/// The app's instance extension names.
///
/// # Safety
/// `ci` is a valid instance create info.
unsafe fn instance_extensions<'a>(ci: &'a vk::InstanceCreateInfo<'_>) -> Vec<&'a CStr> {
    if ci.enabled_extension_count == 0 || ci.pp_enabled_extension_names.is_null() {
        return Vec::new();
    }
    // SAFETY: the caller's contract: that many valid C strings.
    unsafe {
        std::slice::from_raw_parts(ci.pp_enabled_extension_names, ci.enabled_extension_count as usize)
            .iter()
            .map(|&p| CStr::from_ptr(p))
            .collect()
    }
}

/// The display-time source `VK_EXT_present_timing`: it and its dependencies go on below the
/// app where the device offers them with their features, the app presents, and the app does
/// not use present timing itself (its timing queues would be read by two).
fn plan_present_timing(
    inst: &Instance,
    phys: vk::PhysicalDevice,
    available: &[vk::ExtensionProperties],
    app: &[String],
    plan: &mut AugmentPlan,
) {
    let app_has = |n: &CStr| app.iter().any(|e| e.as_bytes() == n.to_bytes());
    let why_not = if !app_has(ash::khr::swapchain::NAME) {
        Some("the app does not enable VK_KHR_swapchain")
    } else if !framescope_core::settings::get().display_times {
        Some("display_times=0")
    } else if app_has(timing_abi::PRESENT_TIMING) {
        Some("the app uses VK_EXT_present_timing itself; framescope leaves its timing queues to it")
    } else {
        present_timing::supported(inst, phys, available).err()
    };
    if let Some(why) = why_not {
        plan.unavailable.push(("present_timing".into(), why.into()));
        return;
    }
    let app_ids = app_has(timing_abi::PRESENT_ID_2) || app_has(present_wait::PRESENT_ID);
    plan.present_timing = present_timing::Augment { on: true, app_ids };
    for n in [
        timing_abi::PRESENT_ID_2,
        present_timing::CALIBRATED_KHR,
        timing_abi::PRESENT_TIMING,
    ] {
        if !app_has(n) {
            plan.add.push(n);
        }
    }
}

/// # Safety
/// `ci` must be a valid device create info.
unsafe fn app_extension_ptrs(ci: &vk::DeviceCreateInfo<'_>) -> Vec<*const c_char> {
    if ci.enabled_extension_count == 0 {
        return Vec::new();
    }
    // SAFETY: the array has enabled_extension_count valid pointers.
    unsafe { std::slice::from_raw_parts(ci.pp_enabled_extension_names, ci.enabled_extension_count as usize) }.to_vec()
}

/// # Safety
/// `ci` must be a valid device create info.
unsafe fn enabled_extensions(ci: &vk::DeviceCreateInfo<'_>) -> Vec<String> {
    if ci.enabled_extension_count == 0 || ci.pp_enabled_extension_names.is_null() {
        return Vec::new();
    }
    (0..ci.enabled_extension_count as usize)
        .map(|i| {
            // SAFETY: the array has enabled_extension_count valid C strings.
            unsafe { CStr::from_ptr(*ci.pp_enabled_extension_names.add(i) as *const c_char) }
                .to_string_lossy()
                .into_owned()
        })
        .collect()
}

pub unsafe extern "system" fn destroy_device(device: vk::Device, alloc: *const vk::AllocationCallbacks<'_>) {
    if device == vk::Device::null() {
        return;
    }
    // SAFETY: a non-null device handle from the app.
    let Some(state) = device_state::DEVICES.remove(unsafe { dispatch_key(device.as_raw()) }) else {
        return;
    };
    crate::recording_cache::invalidate();
    let released = guarded(&DESTROY_DEVICE, || {
        // The waiting thread returns within one wait call, before the device goes.
        if let Some(pw) = state.present_wait.as_ref() {
            pw.stop();
        }
        if let Some(pt) = state.present_timing.as_ref() {
            pt.stop();
        }
        {
            // The app made the device idle before destroying it: every result is readable.
            let mut frames = state.frames.lock();
            state.poll_retired(&mut frames);
            frames.poll(framescope_core::clock::monotonic_now_ns());
            frames.finish();
        }
        // The HUD waits for its own fences, then frees its objects.
        crate::hud::device_destroyed(&state.dev, &state.hud);
        for q in state.all_queues() {
            if let Some(t) = q.inner.lock().timing.take() {
                t.destroy();
            }
        }
        if let Some(s) = state.samples.as_ref() {
            s.destroy();
        }
        let s = &state.stats;
        framescope_core::log::info(format_args!(
            "device '{}' destroyed: {} presents, {} submits, {} command buffers begun",
            state.name(),
            s.presents.load(Ordering::Relaxed),
            s.submits.load(Ordering::Relaxed),
            s.command_buffers_begun.load(Ordering::Relaxed),
        ));
    })
    .is_some();
    // SAFETY: forwarding to the next layer's destroy for this device.
    unsafe { (state.fns.fp_v1_0().destroy_device)(device, alloc) };
    if !released {
        // An owner that the panic left unreleased would destroy its object on a destroyed
        // device when dropped: leaking the state is the lesser harm.
        std::mem::forget(state);
    }
}

static DESTROY_DEVICE: Site = Site::new("vkDestroyDevice");
