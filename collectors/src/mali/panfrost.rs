//! `PanfrostSource` (id `panfrost`): the same Bifrost counters through the upstream Panfrost
//! DRM driver's perfcnt ioctls (`include/uapi/drm/panfrost_drm.h`; kernel side
//! `drivers/gpu/drm/panfrost/panfrost_perfcnt.c`). A separate source rather than a second
//! path of `MaliSource`, because a machine runs one driver or the other and the header then
//! says which one was missing.
//!
//! The ioctls are "unstable", only exposed when the `unstable_ioctls` module parameter is
//! set, and perfcnt has one user at a time (`EBUSY` for the others). `PERFCNT_DUMP` copies
//! one v5 dump (see [`super::layout`]) into a user buffer; the hardware sample resets the
//! counters, so each dump covers the time since the previous one. Panfrost gives no
//! timestamps or cycle counts: windows are the collector's read times, the clock comes from
//! devfreq when there is one.

use super::derive::{self, Deriver, GpuConfig, SampleClock};
use super::hwlayout;
use super::layout::{accumulate_v5, Totals, V5Shape};
use super::le;
use super::props::{bus_bytes_from_l2_features, product_key};
use crate::source::{CounterSource, ReadError, SourceCounter, StartError};
use crate::sys::ioc::{iow, iowr};
use crate::sys::{Access, BoxSys, Fd, IoctlArg, Sys, UserBuffer};
use framescope_core::counters::CounterWindow;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// `DRM_COMMAND_BASE` (0x40) + the Panfrost command number, type `'d'`.
const DRM: u8 = b'd';
/// `struct drm_panfrost_get_param { __u32 param; __u32 pad; __u64 value; }`.
pub const GET_PARAM_SIZE: usize = 16;
pub const GET_PARAM: u64 = iowr(DRM, 0x40 + 0x04, GET_PARAM_SIZE);
/// `struct drm_panfrost_perfcnt_enable { __u32 enable; __u32 counterset; }`.
pub const PERFCNT_ENABLE_SIZE: usize = 8;
pub const PERFCNT_ENABLE: u64 = iow(DRM, 0x40 + 0x06, PERFCNT_ENABLE_SIZE);
/// `struct drm_panfrost_perfcnt_dump { __u64 buf_ptr; }`.
pub const PERFCNT_DUMP_SIZE: usize = 8;
pub const PERFCNT_DUMP: u64 = iow(DRM, 0x40 + 0x07, PERFCNT_DUMP_SIZE);

/// `enum drm_panfrost_param`.
pub const PARAM_GPU_PROD_ID: u32 = 0;
pub const PARAM_SHADER_PRESENT: u32 = 1;
pub const PARAM_L2_FEATURES: u32 = 7;
pub const PARAM_MEM_FEATURES: u32 = 10;

pub const UNSTABLE_IOCTLS: &str = "/sys/module/panfrost/parameters/unstable_ioctls";
/// What to do when the parameter is off (Mesa's pps says the same).
pub const UNSTABLE_IOCTLS_FIX: &str =
    "panfrost perfcnt needs the module parameter unstable_ioctls=1 (modprobe panfrost unstable_ioctls=1)";
const DRM_CLASS: &str = "/sys/class/drm";

/// The number of L2 slices from MEM_FEATURES bits 11:8 (plus one), as `panfrost_perfcnt.c`
/// sizes its dump.
pub fn l2_slices_from_mem_features(mem_features: u64) -> u32 {
    ((mem_features >> 8) & 0xF) as u32 + 1
}

/// A Panfrost GPU id `PROD_ID` is the upper half of the 32-bit GPU id.
pub fn product_key_from_prod_id(prod_id: u64) -> (u8, u8) {
    product_key((prod_id & 0xFFFF) << 16)
}

struct Session {
    fd: Fd,
    shape: V5Shape,
    gpu: GpuConfig,
    deriver: Deriver,
    freq_path: Option<PathBuf>,
    prev_ns: Option<u64>,
}

pub struct PanfrostSource {
    sys: BoxSys,
    catalogue: Vec<SourceCounter>,
    session: Option<Session>,
    node: Option<String>,
    totals: Totals,
    dump: Vec<u8>,
    text: Vec<u8>,
}

fn get_param(sys: &mut dyn Sys, fd: Fd, param: u32) -> Result<u64, StartError> {
    let mut arg = [0u8; GET_PARAM_SIZE];
    le::put_u32(&mut arg, 0, param);
    sys.ioctl(fd, GET_PARAM, IoctlArg::Struct(&mut arg)).map_err(|e| {
        StartError::Unavailable(format!(
            "panfrost GET_PARAM {param} failed: {e} (errno {})",
            e.raw_os_error().unwrap_or(0)
        ))
    })?;
    Ok(le::u64_at(&arg, 8).unwrap_or(0))
}

impl PanfrostSource {
    pub fn new() -> Self {
        Self::with_sys(Box::new(crate::sys::real::RealSys::new()))
    }

    pub fn with_sys(sys: BoxSys) -> Self {
        PanfrostSource {
            sys,
            catalogue: derive::catalogue(),
            session: None,
            node: None,
            totals: Totals::default(),
            dump: Vec::new(),
            text: Vec::new(),
        }
    }

    /// The render node read (`renderD128`).
    pub fn node(&self) -> Option<&str> {
        self.node.as_deref()
    }

    /// The first render node whose driver is panfrost.
    fn find_node(&mut self) -> Option<String> {
        let mut names: Vec<OsString> = Vec::new();
        self.sys.fs().list_dir(Path::new(DRM_CLASS), &mut names).ok()?;
        names.sort();
        names.into_iter().filter_map(|n| n.into_string().ok()).find(|n| {
            n.starts_with("renderD")
                && self
                    .sys
                    .fs()
                    .read_link(&Path::new(DRM_CLASS).join(n).join("device/driver"))
                    .is_ok_and(|t| t.file_name().is_some_and(|f| f == "panfrost"))
        })
    }

    fn unstable_ioctls_on(&mut self) -> bool {
        self.text.clear();
        if self.sys.fs().read(Path::new(UNSTABLE_IOCTLS), &mut self.text).is_err() {
            return false;
        }
        matches!(self.text.trim_ascii(), b"Y" | b"y" | b"1")
    }

    fn devfreq(&mut self, node: &str) -> Option<PathBuf> {
        let dir = Path::new(DRM_CLASS).join(node).join("device/devfreq");
        let mut names = Vec::new();
        self.sys.fs().list_dir(&dir, &mut names).ok()?;
        names.sort();
        names.first().map(|n| dir.join(n).join("cur_freq"))
    }

    fn read_mhz(&mut self, path: Option<&Path>) -> Option<f64> {
        self.text.clear();
        self.sys.fs().read(path?, &mut self.text).ok()?;
        let hz: f64 = std::str::from_utf8(&self.text).ok()?.trim().parse().ok()?;
        Some(hz / 1e6)
    }

    fn open_session(&mut self, fd: Fd, node: &str) -> Result<Session, StartError> {
        let sys = &mut *self.sys;
        let prod = get_param(sys, fd, PARAM_GPU_PROD_ID)?;
        let core_mask = get_param(sys, fd, PARAM_SHADER_PRESENT)?;
        let l2_features = get_param(sys, fd, PARAM_L2_FEATURES)?;
        let mem_features = get_param(sys, fd, PARAM_MEM_FEATURES)?;
        let key = product_key_from_prod_id(prod);
        let layout = hwlayout::for_product(key).ok_or_else(|| {
            StartError::Unavailable(format!(
                "no counter layout for Mali product {prod:#x} (arch {}, product {})",
                key.0, key.1
            ))
        })?;
        if core_mask == 0 {
            return Err(StartError::Unavailable("panfrost reports no shader cores".into()));
        }
        let shape = V5Shape {
            l2_slices: l2_slices_from_mem_features(mem_features),
            core_mask,
        };
        let deriver = Deriver::new(layout).map_err(StartError::Unavailable)?;
        let mut arg = [0u8; PERFCNT_ENABLE_SIZE];
        le::put_u32(&mut arg, 0, 1);
        if let Err(e) = sys.ioctl(fd, PERFCNT_ENABLE, IoctlArg::Struct(&mut arg)) {
            let n = e.raw_os_error().unwrap_or(0);
            return Err(match n {
                libc::EBUSY => StartError::Retry(format!("panfrost perfcnt is in use by another process (errno {n})")),
                _ => StartError::Unavailable(format!("panfrost PERFCNT_ENABLE refused: {e} (errno {n})")),
            });
        }
        Ok(Session {
            fd,
            shape,
            gpu: GpuConfig {
                cores: core_mask.count_ones(),
                l2_slices: shape.l2_slices,
                bus_bytes: bus_bytes_from_l2_features(l2_features),
            },
            deriver,
            freq_path: self.devfreq(node),
            prev_ns: None,
        })
    }

    fn stop(&mut self) {
        if let Some(s) = self.session.take() {
            // Closing the fd disables perfcnt for this user (panfrost_perfcnt_close).
            self.sys.close(s.fd);
        }
    }

    fn read_session(&mut self, now_ns: u64, out: &mut [f64]) -> Result<Option<CounterWindow>, String> {
        let s = self.session.as_mut().ok_or("not started")?;
        self.dump.resize(s.shape.dump_bytes(), 0);
        let mut arg = [0u8; PERFCNT_DUMP_SIZE];
        let buf = UserBuffer {
            bytes: &mut self.dump,
            ptr_at: 0,
            links_at: &[],
        };
        self.sys
            .ioctl(s.fd, PERFCNT_DUMP, IoctlArg::StructWithBuffer(&mut arg, buf))
            .map_err(|e| format!("panfrost PERFCNT_DUMP failed: {e}"))?;
        let Some(begin) = s.prev_ns.replace(now_ns) else {
            // The first dump only starts the first window.
            return Ok(None);
        };
        self.totals.clear();
        accumulate_v5(&self.dump, &s.shape, &mut self.totals).map_err(|e| e.to_string())?;
        let freq_path = s.freq_path.clone();
        let mhz = self.read_mhz(freq_path.as_deref());
        let s = self.session.as_mut().ok_or("not started")?;
        let clock = SampleClock {
            span_ns: now_ns.saturating_sub(begin),
            gpu_cycles: None,
            mhz,
        };
        s.deriver.evaluate(&self.totals, &s.gpu, &clock, out);
        Ok(Some(CounterWindow {
            begin_ns: begin,
            end_ns: now_ns,
        }))
    }
}

impl Default for PanfrostSource {
    fn default() -> Self {
        Self::new()
    }
}

impl CounterSource for PanfrostSource {
    fn id(&self) -> &'static str {
        "panfrost"
    }

    fn catalogue(&self) -> &[SourceCounter] {
        &self.catalogue
    }

    fn start(&mut self) -> Result<(), StartError> {
        self.stop();
        let node = self
            .find_node()
            .ok_or_else(|| StartError::Unavailable("no render node driven by panfrost".into()))?;
        if !self.unstable_ioctls_on() {
            return Err(StartError::Unavailable(UNSTABLE_IOCTLS_FIX.into()));
        }
        let path = Path::new("/dev/dri").join(&node);
        let fd = self.sys.open(&path, Access::ReadWrite).map_err(|e| {
            StartError::Unavailable(format!(
                "cannot open {}: {e} (errno {})",
                path.display(),
                e.raw_os_error().unwrap_or(0)
            ))
        })?;
        match self.open_session(fd, &node) {
            Ok(s) => {
                self.session = Some(s);
                self.node = Some(node);
                Ok(())
            }
            Err(e) => {
                self.sys.close(fd);
                Err(e)
            }
        }
    }

    fn read(&mut self, now_ns: u64, out: &mut [f64]) -> Result<CounterWindow, ReadError> {
        out.fill(f64::NAN);
        match self.read_session(now_ns, out) {
            Ok(Some(w)) => Ok(w),
            Ok(None) => Err(ReadError::NotYet),
            Err(e) => {
                self.stop();
                Err(ReadError::Lost(e))
            }
        }
    }
}

impl Drop for PanfrostSource {
    fn drop(&mut self) {
        self.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_numbers_match_the_published_values() {
        assert_eq!(GET_PARAM, 0xC010_6444);
        assert_eq!(PERFCNT_ENABLE, 0x4008_6446);
        assert_eq!(PERFCNT_DUMP, 0x4008_6447);
    }

    #[test]
    fn feature_registers_decode() {
        assert_eq!(l2_slices_from_mem_features(0x0101), 2);
        assert_eq!(product_key_from_prod_id(0x7211), (7, 1));
    }
}
