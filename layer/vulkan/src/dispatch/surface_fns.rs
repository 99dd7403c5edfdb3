//! The next layer's surface commands for the surface hooks (`display_x11`, `display_wayland`,
//! `hooks::surface`), kept apart so the instance state (`instance`) can hold them without
//! depending on the hooks that use them.

use ash::vk;
use std::ffi::CStr;

/// The next layer's surface commands, resolved at `vkCreateInstance`: asked later, the
/// loader's terminator answers with the loader's exported trampolines (it looks the name up in
/// the instance's top-of-chain dispatch table), which call the top of the chain, us, again: a
/// recursion until the stack overflows (measured with loader 1.3.239). A trampoline is
/// refused (the command is then not hooked).
#[derive(Clone, Copy, Default)]
pub struct NextSurfaceFns {
    pub create_xlib: Option<vk::PFN_vkCreateXlibSurfaceKHR>,
    pub create_xcb: Option<vk::PFN_vkCreateXcbSurfaceKHR>,
    pub create_wayland: Option<vk::PFN_vkCreateWaylandSurfaceKHR>,
    pub destroy: Option<vk::PFN_vkDestroySurfaceKHR>,
}

impl NextSurfaceFns {
    pub fn resolve(gipa: impl Fn(&CStr) -> vk::PFN_vkVoidFunction) -> NextSurfaceFns {
        let get = |name: &CStr| gipa(name).filter(|&f| !is_exported_as(f, name));
        // SAFETY: each name's command has the prototype it is transmuted to.
        unsafe {
            NextSurfaceFns {
                create_xlib: get(c"vkCreateXlibSurfaceKHR")
                    .map(|f| std::mem::transmute::<unsafe extern "system" fn(), vk::PFN_vkCreateXlibSurfaceKHR>(f)),
                create_xcb: get(c"vkCreateXcbSurfaceKHR")
                    .map(|f| std::mem::transmute::<unsafe extern "system" fn(), vk::PFN_vkCreateXcbSurfaceKHR>(f)),
                create_wayland: get(c"vkCreateWaylandSurfaceKHR")
                    .map(|f| std::mem::transmute::<unsafe extern "system" fn(), vk::PFN_vkCreateWaylandSurfaceKHR>(f)),
                destroy: get(c"vkDestroySurfaceKHR")
                    .map(|f| std::mem::transmute::<unsafe extern "system" fn(), vk::PFN_vkDestroySurfaceKHR>(f)),
            }
        }
    }
}

/// Whether `f` is the exported function `name` (the loader's trampoline), not a layer's or
/// the loader's terminator (internal symbols).
fn is_exported_as(f: unsafe extern "system" fn(), name: &CStr) -> bool {
    // SAFETY: dladdr only reads the process's link map; `info` is written on success and its
    // symbol name is a NUL-terminated string owned by the link map.
    unsafe {
        let mut info: libc::Dl_info = std::mem::zeroed();
        libc::dladdr(f as *const std::ffi::c_void, &mut info) != 0
            && info.dli_saddr == f as *mut std::ffi::c_void
            && !info.dli_sname.is_null()
            && CStr::from_ptr(info.dli_sname) == name
    }
}
