//! Features framescope turns on in the app's device create info for the display-time
//! sources it adds (`VK_KHR_present_wait`, `VK_EXT_present_timing`): where the app chains a
//! feature struct of that type its field is set for the call (two structs of one type would be
//! invalid, VUID-VkDeviceCreateInfo-sType-unique), else ours goes in front of the chain; after
//! the call the app's fields get their old values back. The app's chain is written here, at
//! the bottom, so the display module above stays free of raw pointers.

use super::chain;
use super::present_timing_abi::*;
use ash::vk;
use std::ffi::c_void;

/// Fields of the app's structs set for the create call, with their old values.
type Patched = [Option<(*mut vk::Bool32, vk::Bool32)>; 2];

/// Puts the app's feature fields back.
///
/// # Safety
/// The app's structs the fields belong to are still valid.
unsafe fn restore(patched: &mut Patched) {
    for (f, old) in patched.iter_mut().filter_map(Option::take) {
        // SAFETY: the caller's contract.
        unsafe { *f = old };
    }
}

/// `presentId` and `presentWait` (VUID-vkWaitForPresentKHR-presentWait-06234).
#[derive(Default)]
pub struct PresentWaitFeatures {
    id: vk::PhysicalDevicePresentIdFeaturesKHR<'static>,
    wait: vk::PhysicalDevicePresentWaitFeaturesKHR<'static>,
    patched: Patched,
}

impl PresentWaitFeatures {
    /// Turns both features on in `copy` (a copy of the app's create info).
    ///
    /// # Safety
    /// `copy`'s chain is the app's, valid and writable until [`Self::restore`]; `self`
    /// outlives the create call and does not move meanwhile.
    pub unsafe fn apply(&mut self, copy: &mut vk::DeviceCreateInfo<'_>) {
        self.id.present_id = vk::TRUE;
        self.wait.present_wait = vk::TRUE;
        // SAFETY: the caller's contract; structs found by sType are of that type.
        unsafe {
            let app_id = chain::find(copy.p_next, vk::StructureType::PHYSICAL_DEVICE_PRESENT_ID_FEATURES_KHR)
                as *mut vk::PhysicalDevicePresentIdFeaturesKHR<'static>;
            let app_wait = chain::find(
                copy.p_next,
                vk::StructureType::PHYSICAL_DEVICE_PRESENT_WAIT_FEATURES_KHR,
            ) as *mut vk::PhysicalDevicePresentWaitFeaturesKHR<'static>;
            if app_id.is_null() {
                self.id.p_next = copy.p_next as *mut c_void;
                copy.p_next = std::ptr::addr_of!(self.id).cast();
            } else {
                let f = std::ptr::addr_of_mut!((*app_id).present_id);
                self.patched[0] = Some((f, *f));
                *f = vk::TRUE;
            }
            if app_wait.is_null() {
                self.wait.p_next = copy.p_next as *mut c_void;
                copy.p_next = std::ptr::addr_of!(self.wait).cast();
            } else {
                let f = std::ptr::addr_of_mut!((*app_wait).present_wait);
                self.patched[1] = Some((f, *f));
                *f = vk::TRUE;
            }
        }
    }

    /// Puts the app's feature fields back.
    ///
    /// # Safety
    /// The app's structs `apply` patched are still valid.
    pub unsafe fn restore(&mut self) {
        // SAFETY: the caller's contract.
        unsafe { restore(&mut self.patched) }
    }
}

/// `presentTiming` and `presentId2`, the features `VK_EXT_present_timing` needs.
pub struct PresentTimingFeatures {
    timing: PhysicalDevicePresentTimingFeatures,
    id2: PhysicalDevicePresentId2Features,
    patched: Patched,
}

impl Default for PresentTimingFeatures {
    fn default() -> Self {
        PresentTimingFeatures {
            timing: PhysicalDevicePresentTimingFeatures {
                s_type: ST_PHYSICAL_DEVICE_PRESENT_TIMING_FEATURES,
                p_next: std::ptr::null_mut(),
                present_timing: vk::TRUE,
                present_at_absolute_time: vk::FALSE,
                present_at_relative_time: vk::FALSE,
            },
            id2: PhysicalDevicePresentId2Features {
                s_type: ST_PHYSICAL_DEVICE_PRESENT_ID_2_FEATURES,
                p_next: std::ptr::null_mut(),
                present_id2: vk::TRUE,
            },
            patched: [None, None],
        }
    }
}

impl PresentTimingFeatures {
    /// Turns `presentTiming` and `presentId2` on in `copy`.
    ///
    /// # Safety
    /// As [`PresentWaitFeatures::apply`].
    pub unsafe fn apply(&mut self, copy: &mut vk::DeviceCreateInfo<'_>) {
        // SAFETY: the caller's contract; structs found by sType are of that type.
        unsafe {
            let app_t = chain::find(copy.p_next, ST_PHYSICAL_DEVICE_PRESENT_TIMING_FEATURES)
                as *mut PhysicalDevicePresentTimingFeatures;
            let app_i = chain::find(copy.p_next, ST_PHYSICAL_DEVICE_PRESENT_ID_2_FEATURES)
                as *mut PhysicalDevicePresentId2Features;
            if app_t.is_null() {
                self.timing.p_next = copy.p_next as *mut c_void;
                copy.p_next = std::ptr::addr_of!(self.timing).cast();
            } else {
                let f = std::ptr::addr_of_mut!((*app_t).present_timing);
                self.patched[0] = Some((f, *f));
                *f = vk::TRUE;
            }
            if app_i.is_null() {
                self.id2.p_next = copy.p_next as *mut c_void;
                copy.p_next = std::ptr::addr_of!(self.id2).cast();
            } else {
                let f = std::ptr::addr_of_mut!((*app_i).present_id2);
                self.patched[1] = Some((f, *f));
                *f = vk::TRUE;
            }
        }
    }

    /// Puts the app's feature fields back.
    ///
    /// # Safety
    /// The app's structs `apply` patched are still valid.
    pub unsafe fn restore(&mut self) {
        // SAFETY: the caller's contract.
        unsafe { restore(&mut self.patched) }
    }
}
