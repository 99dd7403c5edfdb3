//! Whether a shared library is loaded in this process, asked without loading it: how both
//! layers recognise the overlays and layers around them (MangoHud, vkBasalt, ...).

use std::ffi::CStr;

/// Whether `lib` (a file name or soname) is loaded in this process; loads nothing.
pub fn loaded(lib: &CStr) -> bool {
    // SAFETY: RTLD_NOLOAD only looks the library up among those loaded; the reference a found
    // handle holds is given back at once.
    unsafe {
        let h = libc::dlopen(lib.as_ptr(), libc::RTLD_NOLOAD | libc::RTLD_LAZY);
        if h.is_null() {
            return false;
        }
        libc::dlclose(h);
        true
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_c_library_is_loaded_and_a_made_up_one_is_not() {
        assert!(super::loaded(c"libc.so.6"));
        assert!(!super::loaded(c"libframescope-no-such-library.so"));
    }
}
