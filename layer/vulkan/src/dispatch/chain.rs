//! pNext chain surgery: finding a struct by sType, and unlinking one for the duration of a
//! call down the chain (restored afterwards) when the layers below must not see it.

use ash::vk;
use std::ffi::c_void;

/// The first struct of `s_type` in a chain, or null.
///
/// # Safety
/// `p` must be null or a valid pNext chain.
pub unsafe fn find(mut p: *const c_void, s_type: vk::StructureType) -> *mut vk::BaseOutStructure<'static> {
    while !p.is_null() {
        // SAFETY: every chain element starts with sType/pNext.
        let base = unsafe { &*(p as *const vk::BaseInStructure<'_>) };
        if base.s_type == s_type {
            return p as *mut vk::BaseOutStructure<'static>;
        }
        p = base.p_next as *const c_void;
    }
    std::ptr::null_mut()
}

/// A struct unlinked from a chain; `restore` puts it back exactly where it was.
pub struct Unlinked {
    /// The `pNext` field that pointed at the struct.
    slot: *mut *mut c_void,
    item: *mut c_void,
}

impl Unlinked {
    /// Unlinks the first struct of `s_type` reachable from the `pNext` field at `head`.
    ///
    /// # Safety
    /// `head` must point at a valid, writable pNext field whose chain stays alive and writable
    /// until `restore` (the app's structs, for the duration of the call we are in).
    pub unsafe fn take(head: *mut *mut c_void, s_type: vk::StructureType) -> Option<Unlinked> {
        let mut slot = head;
        // SAFETY: walking a valid chain; each element starts with sType/pNext.
        unsafe {
            while !(*slot).is_null() {
                let item = *slot as *mut vk::BaseOutStructure<'static>;
                if (*item).s_type == s_type {
                    *slot = (*item).p_next as *mut c_void;
                    return Some(Unlinked {
                        slot,
                        item: item as *mut c_void,
                    });
                }
                slot = std::ptr::addr_of_mut!((*item).p_next) as *mut *mut c_void;
            }
        }
        None
    }

    /// # Safety
    /// The chain must be as `take` left it.
    pub unsafe fn restore(self) {
        // SAFETY: re-linking the struct into the slot it was taken from.
        unsafe { *self.slot = self.item }
    }
}
