//! `MaliSource` (id `mali`): per-frame hardware counters of an Arm Mali GPU driven by kbase
//! (`/dev/mali0`). `start` opens the device, does the version handshake, makes the context
//! a monitor-only one, reads the GPU properties and sets up a manual-dump session on
//! kinstr_prfcnt when the kernel offers it, else on the vinstr reader. Each `read` takes one
//! dump tagged with the newest frame mark, sums its blocks and evaluates the catalogue; the
//! window is the sample's own time span on the kernel clock.

use super::derive::{self, Deriver, GpuConfig, SampleClock};
use super::hwlayout;
use super::kbase_ioctl::{self, Backend, KbaseVersion};
use super::kinstr_prfcnt::{self, KinstrReader, SAMPLE_FLAG_ERROR};
use super::layout::{accumulate_v5, Totals, V5Shape};
use super::props::GpuProps;
use super::vinstr::VinstrReader;
use crate::source::{CounterSource, ReadError, SourceCounter, StartError};
use crate::sys::{Access, BoxSys, Fd};
use framescope_core::counters::CounterWindow;
use std::io;
use std::path::PathBuf;

pub const DEVICE: &str = "/dev/mali0";

enum Reader {
    Vinstr(VinstrReader),
    Kinstr(KinstrReader),
}

struct Session {
    kbase: Fd,
    version: KbaseVersion,
    props: GpuProps,
    reader: Reader,
    deriver: Deriver,
    /// vinstr: the kernel time of the previous dump (the start of the next window).
    prev_ts: Option<u64>,
}

pub struct MaliSource {
    sys: BoxSys,
    device: PathBuf,
    catalogue: Vec<SourceCounter>,
    session: Option<Session>,
    frame: u64,
    last_tag: Option<u64>,
    totals: Totals,
    scratch: Vec<u8>,
}

fn errno_text(e: &io::Error) -> String {
    match e.raw_os_error() {
        Some(n) => format!("{e} (errno {n})"),
        None => e.to_string(),
    }
}

fn failure(what: String, errno: Option<i32>) -> StartError {
    let text = match errno {
        Some(n) => format!("{what} (errno {n})"),
        None => what,
    };
    match errno {
        Some(libc::EBUSY) | Some(libc::EAGAIN) => StartError::Retry(text),
        _ => StartError::Unavailable(text),
    }
}

impl MaliSource {
    /// Over the machine's syscalls.
    pub fn new() -> Self {
        Self::with_sys(Box::new(crate::sys::real::RealSys::new()))
    }

    /// Over any [`crate::sys::Sys`] (a `FakeSys` in tests).
    pub fn with_sys(sys: BoxSys) -> Self {
        MaliSource {
            sys,
            device: PathBuf::from(DEVICE),
            catalogue: derive::catalogue(),
            session: None,
            frame: 0,
            last_tag: None,
            totals: Totals::default(),
            scratch: Vec::new(),
        }
    }

    /// The frame number the last dump was tagged with (kinstr_prfcnt: the `user_data` the
    /// kernel returned; vinstr: the frame mark current when the dump was asked for).
    pub fn last_dump_tag(&self) -> Option<u64> {
        self.last_tag
    }

    /// Which interface the session uses: `vinstr` or `kinstr_prfcnt`.
    pub fn backend(&self) -> Option<&'static str> {
        self.session.as_ref().map(|s| match s.reader {
            Reader::Vinstr(_) => "vinstr",
            Reader::Kinstr(_) => "kinstr_prfcnt",
        })
    }

    pub fn kbase_version(&self) -> Option<KbaseVersion> {
        self.session.as_ref().map(|s| s.version)
    }

    pub fn gpu_props(&self) -> Option<&GpuProps> {
        self.session.as_ref().map(|s| &s.props)
    }

    fn stop(&mut self) {
        if let Some(s) = self.session.take() {
            match s.reader {
                Reader::Vinstr(r) => r.close(&mut *self.sys),
                Reader::Kinstr(r) => r.close(&mut *self.sys),
            }
            self.sys.close(s.kbase);
        }
    }

    fn open_session(&mut self, kbase: Fd) -> Result<Session, StartError> {
        let sys = &mut *self.sys;
        let version = kbase_ioctl::version_check(sys, kbase).map_err(|e| StartError::Unavailable(e.to_string()))?;
        kbase_ioctl::set_flags(sys, kbase)
            .map_err(|e| StartError::Unavailable(format!("kbase SET_FLAGS refused: {}", errno_text(&e))))?;
        let props = kbase_ioctl::get_props(sys, kbase).map_err(|e| StartError::Unavailable(e.to_string()))?;
        let key = props.product_key();
        let layout = hwlayout::for_product(key).ok_or_else(|| {
            StartError::Unavailable(format!(
                "no counter layout for Mali GPU id {:#x} (arch {}, product {})",
                props.gpu_id, key.0, key.1
            ))
        })?;
        let deriver = Deriver::new(layout).map_err(StartError::Unavailable)?;
        let backend = version
            .backend()
            .ok_or_else(|| StartError::Unavailable(format!("{version} has no supported counter interface")))?;
        let (reader, prev_ts) = match backend {
            Backend::KinstrPrfcnt => {
                let info = kinstr_prfcnt::enum_info(sys, kbase).map_err(|e| {
                    failure(
                        format!("{version} refused the kinstr_prfcnt enumeration: {}", e.what),
                        e.errno,
                    )
                })?;
                let r = KinstrReader::open(sys, kbase, &info).map_err(|e| {
                    failure(
                        format!("{version} refused the kinstr_prfcnt setup: {}", e.what),
                        e.errno,
                    )
                })?;
                (Reader::Kinstr(r), None)
            }
            Backend::Vinstr => {
                let mut r = VinstrReader::open(sys, kbase)
                    .map_err(|e| failure(format!("{version} refused the hwcnt reader setup: {}", e.what), e.errno))?;
                // A first dump clears the counters and gives the start of the first window.
                match r.dump(sys, &mut self.scratch) {
                    Ok(m) => (Reader::Vinstr(r), Some(m.timestamp_ns)),
                    Err(e) => {
                        r.close(sys);
                        return Err(failure(
                            format!("{version}: the first hwcnt dump failed: {}", e.what),
                            e.errno,
                        ));
                    }
                }
            }
        };
        Ok(Session {
            kbase,
            version,
            props,
            reader,
            deriver,
            prev_ts,
        })
    }

    fn read_session(&mut self, out: &mut [f64]) -> Result<CounterWindow, String> {
        let s = self.session.as_mut().ok_or("not started")?;
        let sys = &mut *self.sys;
        self.totals.clear();
        let gpu = GpuConfig {
            cores: s.props.num_cores(),
            l2_slices: s.props.l2_slices,
            bus_bytes: s.props.bus_bytes,
        };
        let (window, cycles) = match &mut s.reader {
            Reader::Vinstr(r) => {
                let tag = self.frame;
                let m = r.dump(sys, &mut self.scratch).map_err(|e| e.what)?;
                let shape = V5Shape {
                    l2_slices: s.props.l2_slices,
                    core_mask: s.props.core_mask,
                };
                accumulate_v5(&self.scratch, &shape, &mut self.totals).map_err(|e| e.to_string())?;
                let begin = s.prev_ts.replace(m.timestamp_ns).unwrap_or(m.timestamp_ns);
                self.last_tag = Some(tag);
                (
                    CounterWindow {
                        begin_ns: begin,
                        end_ns: m.timestamp_ns,
                    },
                    m.cycles_top,
                )
            }
            Reader::Kinstr(r) => {
                let info = r
                    .sample(
                        sys,
                        self.frame,
                        s.props.core_mask,
                        s.props.l2_slices,
                        &mut self.scratch,
                        &mut self.totals,
                    )
                    .map_err(|e| e.what)?;
                if info.flags & SAMPLE_FLAG_ERROR != 0 {
                    return Err("kinstr_prfcnt marked the sample as an error".into());
                }
                self.last_tag = Some(info.user_data);
                (
                    CounterWindow {
                        begin_ns: info.timestamp_start_ns,
                        end_ns: info.timestamp_end_ns,
                    },
                    (info.num_clock_domains > 0).then_some(info.cycles[0]),
                )
            }
        };
        let clock = SampleClock {
            span_ns: window.end_ns.saturating_sub(window.begin_ns),
            gpu_cycles: cycles,
            mhz: None,
        };
        s.deriver.evaluate(&self.totals, &gpu, &clock, out);
        Ok(window)
    }
}

impl Default for MaliSource {
    fn default() -> Self {
        Self::new()
    }
}

impl CounterSource for MaliSource {
    fn id(&self) -> &'static str {
        "mali"
    }

    fn catalogue(&self) -> &[SourceCounter] {
        &self.catalogue
    }

    fn start(&mut self) -> Result<(), StartError> {
        self.stop();
        let kbase = match self.sys.open(&self.device, Access::ReadWrite) {
            Ok(fd) => fd,
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => {
                return Err(StartError::Unavailable("no /dev/mali0".into()))
            }
            Err(e) => {
                return Err(StartError::Unavailable(format!(
                    "cannot open /dev/mali0: {}",
                    errno_text(&e)
                )))
            }
        };
        match self.open_session(kbase) {
            Ok(s) => {
                self.session = Some(s);
                Ok(())
            }
            Err(e) => {
                self.sys.close(kbase);
                Err(e)
            }
        }
    }

    fn frame_marked(&mut self, frame: u64, _t_ns: u64) {
        self.frame = frame;
    }

    fn read(&mut self, _now_ns: u64, out: &mut [f64]) -> Result<CounterWindow, ReadError> {
        out.fill(f64::NAN);
        match self.read_session(out) {
            Ok(w) => Ok(w),
            Err(e) => {
                // A broken session is torn down; the collector starts it again.
                self.stop();
                Err(ReadError::Lost(e))
            }
        }
    }
}

impl Drop for MaliSource {
    fn drop(&mut self) {
        self.stop();
    }
}
