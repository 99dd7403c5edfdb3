//! `VK_EXT_frame_boundary`, implemented by the layer when the driver lacks it, so offscreen and
//! compute apps that mark their frame ends get frames too. The extension is advertised, its
//! feature reported, and its structs unlinked from every chain passed down (the layers and
//! driver below do not know them). A `VkFrameBoundaryEXT` with `FRAME_END` on a submit ends the
//! frame, unless the device presents: then presents end frames.

use crate::dispatch::chain::Unlinked;
use crate::dispatch::instance;
use ash::vk::{self, Handle};
use framescope_core::guard::{guarded, Site};
use std::ffi::{c_char, c_void, CStr};

pub const NAME: &CStr = ash::ext::frame_boundary::NAME;
const LAYER_NAME: &[u8] = b"VK_LAYER_FRAMESCOPE_overlay";

static ENUMERATE: Site = Site::new("vkEnumerateDeviceExtensionProperties");
static FEATURES2: Site = Site::new("vkGetPhysicalDeviceFeatures2");

fn our_extension() -> vk::ExtensionProperties {
    let mut p = vk::ExtensionProperties {
        spec_version: ash::ext::frame_boundary::SPEC_VERSION,
        ..Default::default()
    };
    for (d, s) in p.extension_name.iter_mut().zip(NAME.to_bytes()) {
        *d = *s as c_char;
    }
    p
}

/// Whether the driver (and layers below) implement the extension themselves; enumerated once
/// per physical device.
pub fn native(inst: &instance::Instance, phys: vk::PhysicalDevice) -> bool {
    if let Some(&(_, known)) = inst.frame_boundary_native.lock().iter().find(|(p, _)| *p == phys) {
        return known;
    }
    // SAFETY: querying a physical device of this instance.
    let has = unsafe { inst.fns.enumerate_device_extension_properties(phys) }
        .map(|v| v.iter().any(|e| e.extension_name_as_c_str() == Ok(NAME)))
        .unwrap_or(false);
    inst.frame_boundary_native.lock().push((phys, has));
    has
}

pub unsafe extern "system" fn enumerate_device_extension_properties(
    phys: vk::PhysicalDevice,
    layer: *const c_char,
    count: *mut u32,
    props: *mut vk::ExtensionProperties,
) -> vk::Result {
    // SAFETY: `phys` is a handle the app (or the loader) passed to this command.
    let Some(inst) = (unsafe { instance::lookup(phys.as_raw()) }) else {
        return vk::Result::ERROR_INITIALIZATION_FAILED;
    };
    let next = inst.fns.fp_v1_0().enumerate_device_extension_properties;
    // SAFETY: layer is null or a NUL-terminated name.
    let named = (!layer.is_null()).then(|| unsafe { CStr::from_ptr(layer) }.to_bytes());
    if named == Some(LAYER_NAME) {
        // SAFETY: the app's count/array pointers, filled with our one extension.
        return unsafe { write_out(&[our_extension()], count, props) };
    }
    if named.is_some() {
        // SAFETY: forwarding the app's arguments.
        return unsafe { next(phys, layer, count, props) };
    }
    let merged = guarded(&ENUMERATE, || {
        // SAFETY: querying the full list below us.
        let mut list = unsafe { inst.fns.enumerate_device_extension_properties(phys) }.ok()?;
        if !list.iter().any(|e| e.extension_name_as_c_str() == Ok(NAME)) {
            list.push(our_extension());
        }
        Some(list)
    })
    .flatten();
    match merged {
        // SAFETY: the app's count/array pointers.
        Some(list) => unsafe { write_out(&list, count, props) },
        // SAFETY: forwarding the app's arguments.
        None => unsafe { next(phys, layer, count, props) },
    }
}

/// The two-call idiom: count only, or fill up to `*count` and report INCOMPLETE.
///
/// # Safety
/// `count` must be valid; `props` null or valid for `*count` elements.
unsafe fn write_out(
    list: &[vk::ExtensionProperties],
    count: *mut u32,
    props: *mut vk::ExtensionProperties,
) -> vk::Result {
    if count.is_null() {
        return vk::Result::ERROR_INITIALIZATION_FAILED;
    }
    // SAFETY: caller's contract.
    unsafe {
        if props.is_null() {
            *count = list.len() as u32;
            return vk::Result::SUCCESS;
        }
        let n = (*count as usize).min(list.len());
        std::ptr::copy_nonoverlapping(list.as_ptr(), props, n);
        *count = n as u32;
        if n < list.len() {
            vk::Result::INCOMPLETE
        } else {
            vk::Result::SUCCESS
        }
    }
}

pub unsafe extern "system" fn get_physical_device_features2(
    phys: vk::PhysicalDevice,
    f: *mut vk::PhysicalDeviceFeatures2<'_>,
) {
    // SAFETY: the app's arguments of this call.
    unsafe { features2(phys, f) }
}

/// The KHR alias goes down as the core command: see `Instance::next_features2`.
pub unsafe extern "system" fn get_physical_device_features2_khr(
    phys: vk::PhysicalDevice,
    f: *mut vk::PhysicalDeviceFeatures2<'_>,
) {
    // SAFETY: the app's arguments of this call.
    unsafe { features2(phys, f) }
}

thread_local! {
    /// Set while this thread is inside `features2`: a call that comes back up the chain into
    /// us must not go down again (it would recurse until the stack overflows).
    static IN_FEATURES2: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

static REENTERED: std::sync::Once = std::sync::Once::new();

/// # Safety
/// The app's arguments of `vkGetPhysicalDeviceFeatures2[KHR]`, valid for the call.
unsafe fn features2(phys: vk::PhysicalDevice, f: *mut vk::PhysicalDeviceFeatures2<'_>) {
    // SAFETY: `phys` is a handle the app (or the loader) passed to this command.
    let Some(inst) = (unsafe { instance::lookup(phys.as_raw()) }) else {
        return;
    };
    let Some(next) = inst.next_features2 else { return };
    if IN_FEATURES2.with(|c| c.replace(true)) {
        // The chain below led back to us: leave the struct as the app filled it.
        REENTERED.call_once(|| {
            framescope_core::log::error(format_args!(
                "vkGetPhysicalDeviceFeatures2 below framescope calls back into it; answering without going down again"
            ))
        });
        return;
    }
    struct Leave;
    impl Drop for Leave {
        fn drop(&mut self) {
            IN_FEATURES2.with(|c| c.set(false));
        }
    }
    let _leave = Leave;
    let emulate = !f.is_null() && guarded(&FEATURES2, || !native(&inst, phys)).unwrap_or(false);
    if !emulate {
        // SAFETY: forwarding the app's arguments.
        return unsafe { next(phys, f) };
    }
    // SAFETY: f is the app's writable output chain for the duration of this call.
    let taken = unsafe {
        Unlinked::take(
            std::ptr::addr_of_mut!((*f).p_next),
            vk::StructureType::PHYSICAL_DEVICE_FRAME_BOUNDARY_FEATURES_EXT,
        )
    };
    // SAFETY: forwarding with our struct unlinked.
    unsafe { next(phys, f) };
    if let Some(t) = taken {
        // SAFETY: restoring the app's chain, then filling the struct it asked about.
        unsafe {
            t.restore();
            let fb = crate::dispatch::chain::find(
                (*f).p_next,
                vk::StructureType::PHYSICAL_DEVICE_FRAME_BOUNDARY_FEATURES_EXT,
            ) as *mut vk::PhysicalDeviceFrameBoundaryFeaturesEXT<'static>;
            if !fb.is_null() {
                (*fb).frame_boundary = vk::TRUE;
            }
        }
    }
}

/// Whether a submit-info chain carries a `VkFrameBoundaryEXT` with `FRAME_END`.
///
/// # Safety
/// `p_next` must be a valid chain.
pub unsafe fn ends_frame(p_next: *const c_void) -> bool {
    // SAFETY: caller's contract; the sType says what it is.
    unsafe {
        let fb = crate::dispatch::chain::find(p_next, vk::StructureType::FRAME_BOUNDARY_EXT)
            as *const vk::FrameBoundaryEXT<'static>;
        !fb.is_null() && (*fb).flags.contains(vk::FrameBoundaryFlagsEXT::FRAME_END)
    }
}

/// Unlinks the app's `VkFrameBoundaryEXT` structs from the submit infos for the call down;
/// restores them on drop.
pub struct StrippedSubmits {
    taken: [Option<Unlinked>; 8],
}

impl StrippedSubmits {
    /// # Safety
    /// `heads` are writable `pNext` fields of structs valid for the current call.
    pub unsafe fn new(heads: impl Iterator<Item = *mut *mut c_void>) -> StrippedSubmits {
        let mut taken: [Option<Unlinked>; 8] = Default::default();
        for (slot, head) in taken.iter_mut().zip(heads) {
            // SAFETY: caller's contract.
            *slot = unsafe { Unlinked::take(head, vk::StructureType::FRAME_BOUNDARY_EXT) };
        }
        StrippedSubmits { taken }
    }
}

impl Drop for StrippedSubmits {
    fn drop(&mut self) {
        for t in self.taken.iter_mut().rev().filter_map(Option::take) {
            // SAFETY: the chains are as `new` left them.
            unsafe { t.restore() };
        }
    }
}
