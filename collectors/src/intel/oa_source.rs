//! `intel_oa`: a periodic OA stream (i915 perf or Xe observation) read on the collector
//! thread. Each read drains what the kernel has, turns consecutive reports into deltas on
//! `CLOCK_MONOTONIC`, and reports the intervals that ended by the newest frame end as one
//! window (raw and derived values, [`super::metrics`]).

use super::accumulate::Deltas;
use super::clock::{self, Calibration};
use super::discover::{self, Device, Driver, MetricSet};
use super::frames::{Interval, Windower};
use super::report::{Layout, Report};
use super::{i915_perf, metrics, xe_observation};
use crate::constants::{self, Constants};
use crate::source::{CounterSource, GpuHint, ReadError, SourceCounter, StartError};
use crate::sys::real::RealSys;
use crate::sys::{Access, BoxSys, Fd, IoctlArg};
use framescope_core::counters::CounterWindow;
use std::io;

/// Counter Select 101b (`A32u40_A4u32_B8_C8`): the only format with A0 and A21-A35, and
/// 40-bit A counters that do not wrap between reports (digest A-38). Xe's OAG format with
/// counter select 5 has the same 256-byte layout on Gen12 (vendor-counter-backends §3.3).
pub const DEFAULT_COUNTER_SELECT: u8 = 5;

/// The wanted report period: about 1 ms (exponent 12 at 12 MHz: 8192 ticks, 683 us), fine
/// enough to cut windows near frame ends, 256 KiB/s of 256-byte reports.
pub const DEFAULT_PERIOD_NS: u64 = 1_000_000;

/// One `read()` buffer; reads repeat until the stream is empty or [`MAX_READS`] is reached.
const READ_CHUNK: usize = 64 * 1024;
const MAX_READS: usize = 64;

pub const NO_DEVICE: &str = "no i915/xe device";

/// What a drain found, in stream order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Event {
    /// A report: its offset in the sample buffer.
    Sample(usize),
    Lost,
}

/// A started stream.
struct Open {
    driver: Driver,
    drm: Fd,
    stream: Fd,
    layout: Layout,
    consts: Constants,
    freq_hz: u64,
    prev: Option<Report>,
    cur: Report,
    windower: Windower,
    lost: u64,
}

pub struct IntelOaSource {
    sys: BoxSys,
    hint: GpuHint,
    select: u8,
    period_ns: u64,
    catalogue: Vec<SourceCounter>,
    metrics: Result<metrics::Metrics, String>,
    open: Option<Open>,
    note: Option<String>,
    frame_end: Option<u64>,
    chunk: Vec<u8>,
    samples: Vec<u8>,
    events: Vec<Event>,
}

impl IntelOaSource {
    /// Over the machine's syscalls.
    pub fn new(hint: GpuHint) -> Self {
        Self::with_sys(Box::new(RealSys::new()), hint)
    }

    /// Over any [`crate::sys::Sys`] (tests use [`crate::sys::fake::FakeSys`]).
    pub fn with_sys(sys: BoxSys, hint: GpuHint) -> Self {
        IntelOaSource {
            sys,
            hint,
            select: DEFAULT_COUNTER_SELECT,
            period_ns: DEFAULT_PERIOD_NS,
            catalogue: metrics::catalogue(),
            metrics: metrics::Metrics::new(),
            open: None,
            note: None,
            frame_end: None,
            chunk: Vec::new(),
            samples: Vec::new(),
            events: Vec::new(),
        }
    }

    /// The report format on i915 (Counter Select 000b, 010b, 101b or 111b). Xe always uses
    /// its OAG counter select 5.
    pub fn with_counter_select(mut self, select: u8) -> Self {
        self.select = select;
        self
    }

    /// The wanted report period.
    pub fn with_period_ns(mut self, period_ns: u64) -> Self {
        self.period_ns = period_ns;
        self
    }

    /// Which device and metric set the source reads, once started.
    pub fn note(&self) -> Option<&str> {
        self.note.as_deref()
    }

    fn stop(&mut self) {
        if let Some(o) = self.open.take() {
            let disable = match o.driver {
                Driver::I915 => i915_perf::I915_PERF_IOCTL_DISABLE,
                Driver::Xe => xe_observation::DRM_XE_OBSERVATION_IOCTL_DISABLE,
            };
            let _ = self.sys.ioctl(o.stream, disable, IoctlArg::None);
            self.sys.close(o.stream);
            self.sys.close(o.drm);
        }
    }

    fn open_stream(&mut self, dev: &Device, set: &MetricSet, drm: Fd) -> Result<Open, StartError> {
        let sys = &mut *self.sys;
        let (layout, freq_hz, eus, stream) = match dev.driver {
            Driver::I915 => {
                let layout = Layout::for_select(self.select).map_err(|e| StartError::Unavailable(e.to_string()))?;
                let format = i915_perf::oa_format_for_select(self.select).ok_or_else(|| {
                    StartError::Unavailable(format!("counter select {} has no i915 format", self.select))
                })?;
                let freq = i915_perf::getparam(sys, drm, i915_perf::I915_PARAM_CS_TIMESTAMP_FREQUENCY)
                    .map_err(|e| StartError::Unavailable(format!("i915 timestamp frequency: {e}")))?;
                let freq = u64::try_from(freq)
                    .ok()
                    .filter(|&f| f > 0)
                    .ok_or_else(|| StartError::Unavailable(format!("i915 timestamp frequency {freq}")))?;
                let eus = i915_perf::getparam(sys, drm, i915_perf::I915_PARAM_EU_TOTAL).ok();
                let cfg = i915_perf::StreamConfig {
                    metrics_set: set.id,
                    oa_format: format,
                    exponent: clock::exponent_for(self.period_ns, freq),
                };
                let stream = i915_perf::open_stream(sys, drm, &cfg).map_err(|e| open_error(dev.driver, e))?;
                (layout, freq, eus, stream)
            }
            Driver::Xe => {
                let layout =
                    Layout::for_select(DEFAULT_COUNTER_SELECT).map_err(|e| StartError::Unavailable(e.to_string()))?;
                let (unit, freq) = xe_observation::query_first_oa_unit(sys, drm)
                    .map_err(|e| StartError::Unavailable(format!("xe OA units: {e}")))?;
                if freq == 0 {
                    return Err(StartError::Unavailable("xe OA timestamp frequency 0".into()));
                }
                let cfg = xe_observation::StreamConfig {
                    oa_unit: unit,
                    metric_set: set.id,
                    format: xe_observation::oa_format(xe_observation::OA_FMT_TYPE_OAG, DEFAULT_COUNTER_SELECT, 0, 0),
                    exponent: clock::exponent_for(self.period_ns, freq),
                };
                let stream = xe_observation::open_stream(sys, drm, &cfg).map_err(|e| open_error(dev.driver, e))?;
                (layout, freq, None, stream)
            }
        };
        let enable = match dev.driver {
            Driver::I915 => i915_perf::I915_PERF_IOCTL_ENABLE,
            Driver::Xe => xe_observation::DRM_XE_OBSERVATION_IOCTL_ENABLE,
        };
        if let Err(e) = sys.ioctl(stream, enable, IoctlArg::None) {
            sys.close(stream);
            return Err(StartError::Retry(format!("enabling the OA stream: {e}")));
        }
        let mut consts = Constants::new();
        // A frequency that is not finite and positive was refused above.
        let _ = consts.set(constants::INTEL_OA_TIMESTAMP_HZ, freq_hz as f64);
        if let Some(n) = eus.filter(|&n| n > 0) {
            let _ = consts.set(constants::INTEL_EU_COUNT, f64::from(n));
        }
        Ok(Open {
            driver: dev.driver,
            drm,
            stream,
            layout,
            consts,
            freq_hz,
            prev: None,
            cur: Report::default(),
            windower: Windower::new(),
            lost: 0,
        })
    }

    /// Reads everything the stream has into `samples`/`events`.
    fn drain(&mut self) -> Result<(), ReadError> {
        self.samples.clear();
        self.events.clear();
        self.chunk.resize(READ_CHUNK, 0);
        let Some(o) = self.open.as_mut() else {
            return Err(ReadError::Lost("not started".into()));
        };
        let size = o.layout.size;
        for _ in 0..MAX_READS {
            let n = match self.sys.read(o.stream, &mut self.chunk) {
                Ok(0) => break,
                Ok(n) => n.min(self.chunk.len()),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) if o.driver == Driver::Xe && e.raw_os_error() == Some(libc::EIO) => {
                    // Xe reports a lost report or an overflow as EIO; the status says which
                    // and clears it (vendor-counter-backends §3.3).
                    let status = xe_observation::stream_status(&mut *self.sys, o.stream)
                        .map_err(|e| ReadError::Lost(format!("xe OA status: {e}")))?;
                    let lost = xe_observation::OASTATUS_REPORT_LOST
                        | xe_observation::OASTATUS_BUFFER_OVERFLOW
                        | xe_observation::OASTATUS_COUNTER_OVERFLOW;
                    if status & lost != 0 {
                        self.events.push(Event::Lost);
                    }
                    continue;
                }
                Err(e) => return Err(ReadError::Lost(format!("reading the OA stream: {e}"))),
            };
            let data = &self.chunk[..n];
            match o.driver {
                Driver::I915 => {
                    for r in i915_perf::records(data) {
                        match r {
                            i915_perf::Record::Sample(p) if p.len() >= size => {
                                self.events.push(Event::Sample(self.samples.len()));
                                self.samples.extend_from_slice(&p[..size]);
                            }
                            i915_perf::Record::ReportLost | i915_perf::Record::BufferLost => {
                                self.events.push(Event::Lost)
                            }
                            _ => {}
                        }
                    }
                }
                Driver::Xe => {
                    let (reports, _rest) = xe_observation::split_reports(data, size);
                    for r in reports {
                        self.events.push(Event::Sample(self.samples.len()));
                        self.samples.extend_from_slice(r);
                    }
                }
            }
        }
        Ok(())
    }

    /// The calibration for this read: the render timestamp read now (i915), else the newest
    /// report taken as "now" (Xe, or when `REG_READ` is refused): reports trail the present
    /// by at most one period plus the read's own delay.
    fn calibrate(&mut self, now_ns: u64) -> Option<Calibration> {
        let o = self.open.as_ref()?;
        if o.driver == Driver::I915 {
            if let Ok(ts) = i915_perf::read_render_timestamp(&mut *self.sys, o.drm) {
                return Some(Calibration {
                    gpu_ts: ts as u32,
                    cpu_ns: now_ns,
                    freq_hz: o.freq_hz,
                });
            }
        }
        let last = self.events.iter().rev().find_map(|e| match e {
            Event::Sample(at) => Some(*at),
            Event::Lost => None,
        })?;
        let mut r = Report::default();
        o.layout.decode_into(self.samples.get(last..)?, &mut r).ok()?;
        Some(Calibration {
            gpu_ts: r.timestamp,
            cpu_ns: now_ns,
            freq_hz: o.freq_hz,
        })
    }
}

fn open_error(driver: Driver, e: io::Error) -> StartError {
    match e.raw_os_error() {
        Some(libc::EBUSY) => StartError::Retry("another OA stream is open on this GPU (one per device)".into()),
        Some(libc::EACCES) | Some(libc::EPERM) => StartError::Unavailable(format!(
            "opening the {} OA stream: {e}: {}",
            driver.name(),
            driver.privilege_fix()
        )),
        _ => StartError::Unavailable(format!("opening the {} OA stream: {e}", driver.name())),
    }
}

impl CounterSource for IntelOaSource {
    fn id(&self) -> &'static str {
        "intel_oa"
    }

    fn catalogue(&self) -> &[SourceCounter] {
        &self.catalogue
    }

    fn start(&mut self) -> Result<(), StartError> {
        self.stop();
        if let Err(e) = &self.metrics {
            return Err(StartError::Unavailable(format!("intel OA formulas: {e}")));
        }
        let dev = discover::find_device(self.sys.fs(), &self.hint)
            .ok_or_else(|| StartError::Unavailable(NO_DEVICE.into()))?;
        discover::check_privilege(self.sys.fs(), dev.driver).map_err(StartError::Unavailable)?;
        let set = discover::pick_metric_set(self.sys.fs(), &dev).ok_or_else(|| {
            StartError::Unavailable(format!(
                "{} ({}) publishes no OA metric set in sysfs (metrics/<uuid>/id); load one with Mesa or igt",
                dev.name,
                dev.driver.name()
            ))
        })?;
        let drm = self
            .sys
            .open(&dev.node, Access::ReadWrite)
            .map_err(|e| match e.kind() {
                io::ErrorKind::NotFound | io::ErrorKind::PermissionDenied => {
                    StartError::Unavailable(format!("{}: {e}", dev.node.display()))
                }
                _ => StartError::Retry(format!("{}: {e}", dev.node.display())),
            })?;
        match self.open_stream(&dev, &set, drm) {
            Ok(o) => {
                self.note = Some(format!(
                    "{} ({}), metric set {} id {}{}",
                    dev.name,
                    dev.driver.name(),
                    set.uuid,
                    set.id,
                    set.name
                        .map(|n| format!(" ({n})"))
                        .unwrap_or_else(|| " (first published)".into())
                ));
                self.open = Some(o);
                Ok(())
            }
            Err(e) => {
                self.sys.close(drm);
                Err(e)
            }
        }
    }

    fn frame_marked(&mut self, _frame: u64, t_ns: u64) {
        self.frame_end = Some(t_ns);
    }

    fn read(&mut self, now_ns: u64, out: &mut [f64]) -> Result<CounterWindow, ReadError> {
        out.iter_mut().for_each(|v| *v = f64::NAN);
        self.drain()?;
        let calib = self.calibrate(now_ns);
        let Some(o) = self.open.as_mut() else {
            return Err(ReadError::Lost("not started".into()));
        };
        for ev in &self.events {
            match *ev {
                Event::Lost => {
                    o.lost = o.lost.saturating_add(1);
                    // No delta across the gap (digest §5.6 rule 9).
                    o.prev = None;
                }
                Event::Sample(at) => {
                    let Some(bytes) = self.samples.get(at..) else { continue };
                    if o.layout.decode_into(bytes, &mut o.cur).is_err() {
                        continue;
                    }
                    if let (Some(prev), Some(c)) = (&o.prev, &calib) {
                        if let (Some(b), Some(e)) = (c.to_mono(prev.timestamp), c.to_mono(o.cur.timestamp)) {
                            if e >= b {
                                o.windower.push(Interval {
                                    begin_ns: b,
                                    end_ns: e,
                                    deltas: Deltas::between(&o.layout, prev, &o.cur),
                                });
                            }
                        }
                    }
                    let next = std::mem::take(&mut o.cur);
                    o.cur = o.prev.replace(next).unwrap_or_default();
                }
            }
        }
        let n = metrics::METRICS.len();
        let lost = std::mem::take(&mut o.lost);
        let set_bookkeeping = |out: &mut [f64], reports: f64| {
            if let Some(v) = out.get_mut(n) {
                *v = reports;
            }
            if let Some(v) = out.get_mut(n + 1) {
                *v = lost as f64;
            }
        };
        match o.windower.take(self.frame_end) {
            Some(w) => {
                if let (Ok(m), Some(head)) = (&self.metrics, out.get_mut(..n)) {
                    m.evaluate(&o.layout, &w.deltas, &o.consts, head);
                }
                set_bookkeeping(out, w.deltas.pairs as f64);
                Ok(CounterWindow {
                    begin_ns: w.begin_ns,
                    end_ns: w.end_ns,
                })
            }
            None if lost > 0 => {
                set_bookkeeping(out, 0.0);
                Ok(CounterWindow {
                    begin_ns: now_ns,
                    end_ns: now_ns,
                })
            }
            None => Err(ReadError::NotYet),
        }
    }
}

impl Drop for IntelOaSource {
    fn drop(&mut self) {
        self.stop();
    }
}
