//! Fake i915 and Xe drivers for tests: [`FakeNode`]/[`FakeFile`] models of a render node
//! and its OA stream, driven through [`FakeSys`], with the sysfs/procfs files the source
//! reads scripted in a [`ScriptedFs`], and OA reports laid out by hand from the seed 004
//! tables (not from the format database the decoder reads, so a test compares two
//! independent readings of the layout).

use super::i915_perf as i9;
use super::xe_observation as xe;
use crate::seam::{BoxFs, Fs, ScriptedFs};
use crate::sys::fake::{FakeFile, FakeNode, FakeSys, IoctlReply};
use crate::sys::{Access, Fd, IoctlArg, MapId, Sys};
use std::collections::VecDeque;
use std::io;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};

/// The render node the fixtures publish.
pub const RENDER_NODE: &str = "/dev/dri/renderD128";
/// The metric set the fixtures publish (a UUID not in the RenderBasic table, id 7).
pub const METRIC_UUID: &str = "01234567-89ab-cdef-0123-456789abcdef";
pub const METRIC_ID: u64 = 7;

/// A [`FakeSys`] the test keeps a handle to after giving the source its `Box<dyn Sys>`, so
/// that the call log and the open fds can be checked after the source is dropped. The file
/// reads go to its own `fs`.
pub struct SharedSys {
    sys: Arc<Mutex<FakeSys>>,
    fs: BoxFs,
}

impl SharedSys {
    pub fn new(fs: ScriptedFs) -> (Self, Arc<Mutex<FakeSys>>) {
        let sys = Arc::new(Mutex::new(FakeSys::default()));
        (
            SharedSys {
                sys: sys.clone(),
                fs: Box::new(fs),
            },
            sys,
        )
    }

    fn lock(&self) -> MutexGuard<'_, FakeSys> {
        self.sys.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Sys for SharedSys {
    fn open(&mut self, path: &Path, access: Access) -> io::Result<Fd> {
        self.lock().open(path, access)
    }
    fn close(&mut self, fd: Fd) {
        self.lock().close(fd)
    }
    fn ioctl(&mut self, fd: Fd, request: u64, arg: IoctlArg<'_>) -> io::Result<i32> {
        self.lock().ioctl(fd, request, arg)
    }
    fn ioctl_fd(&mut self, fd: Fd, request: u64, arg: IoctlArg<'_>) -> io::Result<Fd> {
        self.lock().ioctl_fd(fd, request, arg)
    }
    fn read(&mut self, fd: Fd, buf: &mut [u8]) -> io::Result<usize> {
        self.lock().read(fd, buf)
    }
    fn poll_readable(&mut self, fd: Fd, timeout_ms: i32) -> io::Result<bool> {
        self.lock().poll_readable(fd, timeout_ms)
    }
    fn mmap(&mut self, fd: Fd, len: usize, offset: u64) -> io::Result<MapId> {
        self.lock().mmap(fd, len, offset)
    }
    fn read_mapped(&mut self, map: MapId, offset: usize, out: &mut [u8]) -> io::Result<()> {
        self.lock().read_mapped(map, offset, out)
    }
    fn munmap(&mut self, map: MapId) {
        self.lock().munmap(map)
    }
    fn fs(&mut self) -> &mut dyn Fs {
        &mut self.fs
    }
}

/// The sysfs and procfs of one Intel GPU on `driver` (`"i915"` or `"xe"`): the render
/// node's driver and PCI links, one metric set, the paranoid sysctl and `CapEff`.
pub fn sysfs(driver: &str, paranoid: &str, cap_eff: u64) -> ScriptedFs {
    let mut fs = ScriptedFs::new();
    let dev = "/sys/class/drm/renderD128/device";
    fs.link(dev, "../../../0000:00:02.0");
    fs.link(format!("{dev}/driver"), format!("../../../bus/pci/drivers/{driver}"));
    fs.file(
        format!("{dev}/drm/card0/metrics/{METRIC_UUID}/id"),
        [format!("{METRIC_ID}\n")],
    );
    fs.file("/sys/class/drm/card0/dev", ["226:0\n"]);
    let sysctl = match driver {
        "xe" => "/proc/sys/dev/xe/observation_paranoid",
        _ => "/proc/sys/dev/i915/perf_stream_paranoid",
    };
    fs.file(sysctl, [format!("{paranoid}\n")]);
    fs.file(
        "/proc/self/status",
        [format!(
            "Name:\tapp\nCapInh:\t0000000000000000\nCapEff:\t{cap_eff:016x}\n"
        )],
    );
    fs
}

/// One scripted `read()` of a stream.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReadStep {
    Data(Vec<u8>),
    /// The read fails with this errno (Xe's `EIO`).
    Errno(i32),
}

/// An Xe stream open as the fake kernel saw it: observation type, op, and the chained
/// `(property, value)` pairs.
pub type XeOpen = (u64, u64, Vec<(u32, u64)>);

/// What the fake kernel saw and what it will answer; shared between the test and the model.
#[derive(Debug, Default)]
pub struct DriverState {
    /// `PERF_OPEN` (i915): flags and properties, per call.
    pub i915_opens: Vec<(u32, Vec<(u64, u64)>)>,
    /// `DRM_IOCTL_XE_OBSERVATION` (Xe): type, op and the chained properties, per call.
    pub xe_opens: Vec<XeOpen>,
    /// Ioctl requests made on stream fds, in order.
    pub stream_ioctls: Vec<u64>,
    /// What successive stream reads return; empty: `EAGAIN`.
    pub reads: VecDeque<ReadStep>,
    /// The render timestamp `REG_READ` returns (i915).
    pub render_timestamp: u64,
    pub timestamp_hz: u64,
    pub eu_total: i32,
    /// The errno the stream open fails with, if any.
    pub open_errno: Option<i32>,
    /// Xe `oa_status`, returned and cleared by the `STATUS` ioctl.
    pub xe_status: u64,
}

pub type State = Arc<Mutex<DriverState>>;

fn lock(s: &State) -> MutexGuard<'_, DriverState> {
    s.lock().unwrap_or_else(|p| p.into_inner())
}

fn errno(e: i32) -> io::Error {
    io::Error::from_raw_os_error(e)
}

/// A fake render node of `driver` (`i915` or `xe`) over `state`.
pub fn node(driver: &'static str, state: State) -> impl FakeNode {
    move |_access: Access| -> io::Result<Box<dyn FakeFile>> {
        Ok(match driver {
            "xe" => Box::new(XeDrm(state.clone())),
            _ => Box::new(I915Drm(state.clone())),
        })
    }
}

/// A FakeSys-backed setup: the shared sys handle for the source, the FakeSys to inspect,
/// and the driver state.
pub fn setup(driver: &'static str, fs: ScriptedFs) -> (SharedSys, Arc<Mutex<FakeSys>>, State) {
    let state = State::default();
    {
        let mut s = lock(&state);
        s.timestamp_hz = 12_000_000;
        s.eu_total = 24;
    }
    let (shared, sys) = SharedSys::new(fs);
    sys.lock()
        .unwrap_or_else(|p| p.into_inner())
        .node(RENDER_NODE, node(driver, state.clone()));
    (shared, sys, state)
}

struct I915Drm(State);

impl FakeFile for I915Drm {
    fn ioctl(&mut self, request: u64, arg: IoctlArg<'_>) -> io::Result<IoctlReply> {
        let mut st = lock(&self.0);
        match (request, arg) {
            (i9::DRM_IOCTL_I915_GETPARAM, IoctlArg::StructWithBuffer(s, b)) => {
                let param = i32::from_le_bytes(s[0..4].try_into().map_err(|_| errno(libc::EINVAL))?);
                let v = match param {
                    i9::I915_PARAM_CS_TIMESTAMP_FREQUENCY => st.timestamp_hz as i32,
                    i9::I915_PARAM_EU_TOTAL => st.eu_total,
                    _ => return Err(errno(libc::EINVAL)),
                };
                b.bytes
                    .get_mut(0..4)
                    .ok_or_else(|| errno(libc::EFAULT))?
                    .copy_from_slice(&v.to_le_bytes());
                Ok(IoctlReply::Value(0))
            }
            (i9::DRM_IOCTL_I915_REG_READ, IoctlArg::Struct(s)) => {
                if s[0..8] != i9::RENDER_TIMESTAMP_REG.to_le_bytes() {
                    return Err(errno(libc::EINVAL));
                }
                s[8..16].copy_from_slice(&st.render_timestamp.to_le_bytes());
                Ok(IoctlReply::Value(0))
            }
            (i9::DRM_IOCTL_I915_PERF_OPEN, IoctlArg::StructWithBuffer(s, b)) => {
                let (flags, props) = i9::parse_properties(s, b.bytes).ok_or_else(|| errno(libc::EINVAL))?;
                st.i915_opens.push((flags, props));
                if let Some(e) = st.open_errno {
                    return Err(errno(e));
                }
                Ok(IoctlReply::NewFile(Box::new(Stream(self.0.clone()))))
            }
            _ => Err(errno(libc::ENOTTY)),
        }
    }
}

struct XeDrm(State);

/// The OA units reply the fake Xe gives: one OAG unit, id 0, with the state's frequency.
fn oa_units_reply(freq: u64) -> Vec<u8> {
    let mut d = vec![0u8; 16 + 64 + 8];
    d[8..12].copy_from_slice(&1u32.to_le_bytes()); // num_oa_units
    d[16 + 24..16 + 32].copy_from_slice(&freq.to_le_bytes()); // oa_timestamp_freq
    d
}

impl FakeFile for XeDrm {
    fn ioctl(&mut self, request: u64, arg: IoctlArg<'_>) -> io::Result<IoctlReply> {
        let mut st = lock(&self.0);
        match (request, arg) {
            (xe::DRM_IOCTL_XE_DEVICE_QUERY, IoctlArg::StructWithBuffer(s, b)) => {
                if s[8..12] != xe::DRM_XE_DEVICE_QUERY_OA_UNITS.to_le_bytes() {
                    return Err(errno(libc::EINVAL));
                }
                let reply = oa_units_reply(st.timestamp_hz);
                if b.bytes.is_empty() {
                    s[12..16].copy_from_slice(&(reply.len() as u32).to_le_bytes());
                } else if b.bytes.len() == reply.len() {
                    b.bytes.copy_from_slice(&reply);
                } else {
                    return Err(errno(libc::EINVAL));
                }
                Ok(IoctlReply::Value(0))
            }
            (xe::DRM_IOCTL_XE_OBSERVATION, IoctlArg::StructWithBuffer(s, b)) => {
                let ty = u64::from_le_bytes(s[8..16].try_into().map_err(|_| errno(libc::EINVAL))?);
                let op = u64::from_le_bytes(s[16..24].try_into().map_err(|_| errno(libc::EINVAL))?);
                let props = xe::parse_property_chain(b.bytes).ok_or_else(|| errno(libc::EFAULT))?;
                st.xe_opens.push((ty, op, props));
                if let Some(e) = st.open_errno {
                    return Err(errno(e));
                }
                Ok(IoctlReply::NewFile(Box::new(Stream(self.0.clone()))))
            }
            _ => Err(errno(libc::ENOTTY)),
        }
    }
}

/// An OA stream fd of either driver.
struct Stream(State);

impl FakeFile for Stream {
    fn ioctl(&mut self, request: u64, arg: IoctlArg<'_>) -> io::Result<IoctlReply> {
        let mut st = lock(&self.0);
        st.stream_ioctls.push(request);
        match (request, arg) {
            (xe::DRM_XE_OBSERVATION_IOCTL_STATUS, IoctlArg::Struct(s)) => {
                let status = std::mem::take(&mut st.xe_status);
                s.get_mut(8..16)
                    .ok_or_else(|| errno(libc::EFAULT))?
                    .copy_from_slice(&status.to_le_bytes());
                Ok(IoctlReply::Value(0))
            }
            (i9::I915_PERF_IOCTL_ENABLE | i9::I915_PERF_IOCTL_DISABLE, IoctlArg::None) => Ok(IoctlReply::Value(0)),
            _ => Err(errno(libc::ENOTTY)),
        }
    }

    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let mut st = lock(&self.0);
        match st.reads.pop_front() {
            None => Err(errno(libc::EAGAIN)),
            Some(ReadStep::Errno(e)) => Err(errno(e)),
            Some(ReadStep::Data(d)) => {
                if d.len() > buf.len() {
                    // The kernel returns whole records only; the fixtures stay below the
                    // reader's buffer.
                    return Err(errno(libc::ENOSPC));
                }
                buf[..d.len()].copy_from_slice(&d);
                Ok(d.len())
            }
        }
    }

    fn readable(&mut self) -> bool {
        !lock(&self.0).reads.is_empty()
    }
}

/// One OA report's fields, by name as seed 004 names them.
#[derive(Clone, Debug, Default)]
pub struct ReportFields {
    pub rpt_id: u32,
    pub timestamp: u32,
    pub ctx_id: u32,
    pub gpu_ticks: u32,
    /// `(index, value)` of A counters (40-bit values keep their high byte in 101b only).
    pub a: Vec<(usize, u64)>,
    pub b: Vec<(usize, u32)>,
    pub c: Vec<(usize, u32)>,
}

fn put32(r: &mut [u8], at: usize, v: u32) {
    r[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

/// A report of Counter Select `select` laid out from the seed's tables (digest §5.2):
/// 000b/010b: A7-A18 low dwords at DW(n-3); 010b adds B0-B7 at DW16, C0-C7 at DW24;
/// 101b: A0-A31 low dwords at DW4+i, A32-A35 at DW36, the A0-A31 high bytes at byte 160+i,
/// B at DW48, C at DW56; 111b: C0-C3 at DW4, B0-B7 at DW8. Fields a format lacks are
/// left out. `None` for another select.
pub fn build_report(select: u8, f: &ReportFields) -> Option<Vec<u8>> {
    let size = match select {
        0 | 7 => 64,
        2 => 128,
        5 => 256,
        _ => return None,
    };
    let mut r = vec![0u8; size];
    put32(&mut r, 0, f.rpt_id);
    put32(&mut r, 4, f.timestamp);
    put32(&mut r, 8, f.ctx_id);
    put32(&mut r, 12, f.gpu_ticks);
    for &(i, v) in &f.a {
        match select {
            0 | 2 if (7..=18).contains(&i) => put32(&mut r, 4 * (i - 3), v as u32),
            5 if i < 32 => {
                put32(&mut r, 16 + 4 * i, v as u32);
                r[160 + i] = (v >> 32) as u8;
            }
            5 if (32..36).contains(&i) => put32(&mut r, 144 + 4 * (i - 32), v as u32),
            _ => {}
        }
    }
    for &(i, v) in f.b.iter().filter(|(i, _)| *i < 8) {
        match select {
            2 => put32(&mut r, 64 + 4 * i, v),
            5 => put32(&mut r, 192 + 4 * i, v),
            7 => put32(&mut r, 32 + 4 * i, v),
            _ => {}
        }
    }
    for &(i, v) in &f.c {
        match select {
            2 if i < 8 => put32(&mut r, 96 + 4 * i, v),
            5 if i < 8 => put32(&mut r, 224 + 4 * i, v),
            7 if i < 4 => put32(&mut r, 16 + 4 * i, v),
            _ => {}
        }
    }
    Some(r)
}

/// An i915 `SAMPLE` record around a report.
pub fn sample_record(report: &[u8]) -> Vec<u8> {
    i9::frame_record(i9::RECORD_SAMPLE, report)
}

/// An i915 `OA_REPORT_LOST` record.
pub fn report_lost_record() -> Vec<u8> {
    i9::frame_record(i9::RECORD_OA_REPORT_LOST, &[])
}
