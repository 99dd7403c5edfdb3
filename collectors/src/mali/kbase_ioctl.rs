//! The kbase device ioctls (`/dev/mali0`, Arm's commercial driver): version handshake, context
//! flags and GPU properties. Request numbers are built from the byte size of each argument
//! struct of the kbase uAPI headers `mali_kbase_ioctl.h` (JM: `jm/mali_kbase_jm_ioctl.h`,
//! CSF: `csf/mali_kbase_csf_ioctl.h`), as redeclared by libGPUCounters
//! (`backend/device/src/device/ioctl/kbase/types.hpp`); the tests check them against the
//! published values (reference: vendor-counter-backends.md, Appendix A).

use super::le;
use super::props::{self, GpuProps};
use crate::sys::ioc::{iow, iowr};
use crate::sys::{Fd, IoctlArg, Sys, UserBuffer};
use std::fmt;
use std::io;

/// `KBASE_IOCTL_TYPE`.
pub const KBASE_TYPE: u8 = 0x80;

/// `struct kbase_ioctl_version_check { __u16 major; __u16 minor; }`.
pub const VERSION_CHECK_SIZE: usize = 4;
/// JM kernels: `_IOWR(KBASE_IOCTL_TYPE, 0, struct kbase_ioctl_version_check)`.
pub const VERSION_CHECK_JM: u64 = iowr(KBASE_TYPE, 0x00, VERSION_CHECK_SIZE);
/// CSF kernels (G610/G710 on) moved it to 0x34; their 0x00 is a stub that fails.
pub const VERSION_CHECK_CSF: u64 = iowr(KBASE_TYPE, 0x34, VERSION_CHECK_SIZE);

/// `struct kbase_ioctl_set_flags { __u32 create_flags; }`.
pub const SET_FLAGS_SIZE: usize = 4;
pub const SET_FLAGS: u64 = iow(KBASE_TYPE, 0x01, SET_FLAGS_SIZE);
/// `BASE_CONTEXT_SYSTEM_MONITOR_SUBMIT_DISABLED`: a monitoring context that submits no jobs.
pub const CONTEXT_SYSTEM_MONITOR_SUBMIT_DISABLED: u32 = 1 << 1;

/// `struct kbase_ioctl_get_gpuprops { __u64 buffer; __u32 size; __u32 flags; }`.
pub const GET_GPUPROPS_SIZE: usize = 16;
pub const GET_GPUPROPS: u64 = iow(KBASE_TYPE, 0x03, GET_GPUPROPS_SIZE);
/// The largest property blob accepted (real ones are a few hundred bytes).
pub const MAX_PROPS_BYTES: usize = 64 * 1024;

/// Which kbase flavour answered the handshake.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flavour {
    /// Job manager GPUs (Midgard, Bifrost, early Valhall).
    Jm,
    /// Command-stream-frontend GPUs (G310/G610/G710 and later).
    Csf,
}

/// The counter interface a kernel offers (libGPUCounters `hwcnt/backend_type.cpp`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    /// The legacy hwcnt reader.
    Vinstr,
    /// kinstr_prfcnt, from JM 11.37 / CSF 1.17.
    KinstrPrfcnt,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KbaseVersion {
    pub flavour: Flavour,
    pub major: u16,
    pub minor: u16,
}

impl KbaseVersion {
    /// kinstr_prfcnt from JM 11.37 / CSF 1.17 (the releases from 11.34 / 1.10 before those
    /// lose samples and number cores non-contiguously, so they get vinstr); vinstr until JM
    /// 11.40 / CSF 1.21 removed it. `None`: neither (a pre-r21 kernel).
    pub fn backend(&self) -> Option<Backend> {
        let v = (self.major, self.minor);
        let (kinstr_from, vinstr_until, first_major) = match self.flavour {
            Flavour::Jm => ((11, 37), (11, 40), 11),
            Flavour::Csf => ((1, 17), (1, 21), 1),
        };
        if v >= kinstr_from {
            Some(Backend::KinstrPrfcnt)
        } else if v < vinstr_until && self.major >= first_major {
            Some(Backend::Vinstr)
        } else {
            None
        }
    }
}

impl fmt::Display for KbaseVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let fl = match self.flavour {
            Flavour::Jm => "JM",
            Flavour::Csf => "CSF",
        };
        write!(f, "kbase {fl} {}.{}", self.major, self.minor)
    }
}

/// Why the handshake failed: the errors of the JM and of the CSF attempt.
#[derive(Debug)]
pub struct HandshakeError {
    pub jm: io::Error,
    pub csf: io::Error,
}

impl fmt::Display for HandshakeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "kbase version handshake refused (JM: {}; CSF: {})",
            self.jm, self.csf
        )
    }
}

fn version_call(sys: &mut dyn Sys, fd: Fd, request: u64) -> io::Result<(u16, u16)> {
    // We ask for version 0.0: the kernel answers with its own (libGPUCounters does the same);
    // 0.0 back means the interface is not this one.
    let mut arg = [0u8; VERSION_CHECK_SIZE];
    sys.ioctl(fd, request, IoctlArg::Struct(&mut arg))?;
    let (major, minor) = (le::u16_at(&arg, 0).unwrap_or(0), le::u16_at(&arg, 2).unwrap_or(0));
    if major == 0 && minor == 0 {
        return Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "the kernel answered version 0.0",
        ));
    }
    Ok((major, minor))
}

/// The handshake: JM first, then CSF.
pub fn version_check(sys: &mut dyn Sys, fd: Fd) -> Result<KbaseVersion, HandshakeError> {
    let jm = match version_call(sys, fd, VERSION_CHECK_JM) {
        Ok((major, minor)) => {
            return Ok(KbaseVersion {
                flavour: Flavour::Jm,
                major,
                minor,
            })
        }
        Err(e) => e,
    };
    match version_call(sys, fd, VERSION_CHECK_CSF) {
        Ok((major, minor)) => Ok(KbaseVersion {
            flavour: Flavour::Csf,
            major,
            minor,
        }),
        Err(csf) => Err(HandshakeError { jm, csf }),
    }
}

/// Makes the context a monitor-only one. `EPERM` (flags already set) and `EINVAL` are
/// tolerated, as libGPUCounters does (`instance_impl.hpp`).
pub fn set_flags(sys: &mut dyn Sys, fd: Fd) -> io::Result<()> {
    let mut arg = [0u8; SET_FLAGS_SIZE];
    le::put_u32(&mut arg, 0, CONTEXT_SYSTEM_MONITOR_SUBMIT_DISABLED);
    match sys.ioctl(fd, SET_FLAGS, IoctlArg::Struct(&mut arg)) {
        Ok(_) => Ok(()),
        Err(e) if matches!(e.raw_os_error(), Some(libc::EPERM) | Some(libc::EINVAL)) => Ok(()),
        Err(e) => Err(e),
    }
}

/// Why the GPU properties could not be had.
#[derive(Debug)]
pub enum PropsFailure {
    Ioctl(io::Error),
    /// The size the kernel announced is not usable.
    BadSize(i64),
    Parse(props::PropsError),
}

impl fmt::Display for PropsFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PropsFailure::Ioctl(e) => write!(f, "GET_GPUPROPS failed: {e}"),
            PropsFailure::BadSize(n) => write!(f, "GET_GPUPROPS announced {n} bytes"),
            PropsFailure::Parse(e) => write!(f, "{e}"),
        }
    }
}

/// Reads the property blob: a first call with size 0 returns the size needed, the second
/// fills the buffer.
pub fn get_props(sys: &mut dyn Sys, fd: Fd) -> Result<GpuProps, PropsFailure> {
    let mut arg = [0u8; GET_GPUPROPS_SIZE];
    let size = sys
        .ioctl(
            fd,
            GET_GPUPROPS,
            IoctlArg::StructWithBuffer(
                &mut arg,
                UserBuffer {
                    bytes: &mut [],
                    ptr_at: 0,
                    links_at: &[],
                },
            ),
        )
        .map_err(PropsFailure::Ioctl)?;
    if size <= 0 || size as usize > MAX_PROPS_BYTES {
        return Err(PropsFailure::BadSize(i64::from(size)));
    }
    let mut blob = vec![0u8; size as usize];
    let mut arg = [0u8; GET_GPUPROPS_SIZE];
    le::put_u32(&mut arg, 8, size as u32);
    let filled = sys
        .ioctl(
            fd,
            GET_GPUPROPS,
            IoctlArg::StructWithBuffer(
                &mut arg,
                UserBuffer {
                    bytes: &mut blob,
                    ptr_at: 0,
                    links_at: &[],
                },
            ),
        )
        .map_err(PropsFailure::Ioctl)?;
    if filled < 0 || filled as usize > blob.len() {
        return Err(PropsFailure::BadSize(i64::from(filled)));
    }
    // The kernel returns how much it wrote; older ones return 0 for "all of it".
    let used = if filled == 0 { blob.len() } else { filled as usize };
    props::parse(&blob[..used]).map_err(PropsFailure::Parse)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_numbers_match_the_published_values() {
        assert_eq!(VERSION_CHECK_JM, 0xC004_8000);
        assert_eq!(VERSION_CHECK_CSF, 0xC004_8034);
        assert_eq!(SET_FLAGS, 0x4004_8001);
        assert_eq!(GET_GPUPROPS, 0x4010_8003);
    }

    #[test]
    fn backend_choice_follows_the_kernel_version() {
        let v = |flavour, major, minor| KbaseVersion { flavour, major, minor }.backend();
        assert_eq!(v(Flavour::Jm, 11, 30), Some(Backend::Vinstr));
        assert_eq!(v(Flavour::Jm, 11, 35), Some(Backend::Vinstr));
        assert_eq!(v(Flavour::Jm, 11, 37), Some(Backend::KinstrPrfcnt));
        assert_eq!(v(Flavour::Jm, 11, 40), Some(Backend::KinstrPrfcnt));
        assert_eq!(v(Flavour::Jm, 10, 6), None);
        assert_eq!(v(Flavour::Csf, 1, 12), Some(Backend::Vinstr));
        assert_eq!(v(Flavour::Csf, 1, 20), Some(Backend::KinstrPrfcnt));
        assert_eq!(v(Flavour::Csf, 2, 0), Some(Backend::KinstrPrfcnt));
    }
}
