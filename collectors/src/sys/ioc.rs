//! Linux ioctl request numbers (`include/uapi/asm-generic/ioctl.h`): direction, size, type and
//! number packed into 32 bits. The ABI modules build their requests with these `const fn`s
//! from the size of the struct they lay out, so a struct of the wrong size gives a request
//! the kernel rejects, and the tests assert the numbers against the published values.

const NRBITS: u32 = 8;
const TYPEBITS: u32 = 8;
const SIZEBITS: u32 = 14;
const NRSHIFT: u32 = 0;
const TYPESHIFT: u32 = NRSHIFT + NRBITS;
const SIZESHIFT: u32 = TYPESHIFT + TYPEBITS;
const DIRSHIFT: u32 = SIZESHIFT + SIZEBITS;

const NONE: u64 = 0;
const WRITE: u64 = 1;
const READ: u64 = 2;

const fn ioc(dir: u64, ty: u8, nr: u8, size: usize) -> u64 {
    assert!(size < (1 << SIZEBITS), "ioctl argument too large for the size field");
    (dir << DIRSHIFT) | ((ty as u64) << TYPESHIFT) | ((nr as u64) << NRSHIFT) | ((size as u64) << SIZESHIFT)
}

/// `_IO(ty, nr)`
pub const fn io(ty: u8, nr: u8) -> u64 {
    ioc(NONE, ty, nr, 0)
}

/// `_IOR(ty, nr, size)`: the kernel writes the argument.
pub const fn ior(ty: u8, nr: u8, size: usize) -> u64 {
    ioc(READ, ty, nr, size)
}

/// `_IOW(ty, nr, size)`: the kernel reads the argument.
pub const fn iow(ty: u8, nr: u8, size: usize) -> u64 {
    ioc(WRITE, ty, nr, size)
}

/// `_IOWR(ty, nr, size)`
pub const fn iowr(ty: u8, nr: u8, size: usize) -> u64 {
    ioc(READ | WRITE, ty, nr, size)
}

/// The argument size a request number carries.
pub const fn size_of_request(request: u64) -> usize {
    ((request >> SIZESHIFT) & ((1 << SIZEBITS) - 1)) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_published_request_numbers() {
        // DRM_IOCTL_VERSION = _IOWR('d', 0x00, struct drm_version), 64 bytes on LP64.
        assert_eq!(iowr(b'd', 0x00, 64), 0xc040_6400);
        // DRM_IOCTL_I915_PERF_OPEN = _IOW('d', 0x40 + 0x36, struct drm_i915_perf_open_param).
        assert_eq!(iow(b'd', 0x76, 16), 0x4010_6476);
        // I915_PERF_IOCTL_ENABLE = _IO('i', 0x0).
        assert_eq!(io(b'i', 0), 0x6900);
        assert_eq!(size_of_request(iowr(b'd', 0x00, 64)), 64);
    }
}
