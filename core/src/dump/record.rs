//! The three record types of a `framescope.v1` dump and their JSON encoding.
//!
//! Frame lines are serialised straight from a [`FrameRecord`] into a reused buffer (no
//! intermediate `serde_json::Value`), in a stable field order with `type` first.

use super::driver_frames::FrameGroupValues;
use crate::model::driver_values::{DriverGroup, DriverValues};
use crate::model::frame::{vk_format_name, vk_present_mode_name, DispatchKind, DrawKind, FrameRecord, GpuMissing};
use crate::model::sample::{DrawParams, PipelineStats, SampleRecord};
use crate::model::waits::WaitKind;
use crate::stats::Summary;
use serde::ser::{SerializeMap, SerializeSeq, Serializer};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value as Json};

/// Graphics API the frames come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Api {
    Vulkan,
    OpenGL,
    OpenGLES,
}

impl Api {
    /// The header's `gpu_time`: what a frame's `gpu_busy_ns` measures with this API. GL has no
    /// submissions to time, only a `GL_TIMESTAMP` pair around the frame, so its value is the
    /// frame's span, idle gaps included, and never comparable with Vulkan's busy time.
    pub fn gpu_time(self) -> &'static str {
        match self {
            Api::Vulkan => "busy",
            Api::OpenGL | Api::OpenGLES => "span",
        }
    }
}

/// The GPU and driver, as the layer found them.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DeviceInfo {
    pub name: String,
    pub vendor_id: u32,
    pub device_id: u32,
    /// `VkPhysicalDeviceDriverProperties::driverName`, when known.
    pub driver_name: Option<String>,
    /// `VkPhysicalDeviceDriverProperties::driverInfo`, when known.
    pub driver_info: Option<String>,
    /// `VkPhysicalDeviceProperties::driverVersion` as reported (vendor-specific encoding).
    pub driver_version_raw: u32,
    /// `VkPhysicalDeviceProperties::apiVersion`.
    pub api_version_raw: u32,
    /// Further fields (e.g. `device_type`, `uuid`), written into the `device` object.
    pub extra: Map<String, Json>,
}

impl DeviceInfo {
    /// The `device` object of the header.
    pub fn to_json(&self) -> Json {
        let mut m = Map::new();
        m.insert("name".into(), self.name.clone().into());
        m.insert("vendor_id".into(), self.vendor_id.into());
        m.insert("device_id".into(), self.device_id.into());
        m.insert("driver_name".into(), self.driver_name.clone().into());
        m.insert("driver_info".into(), self.driver_info.clone().into());
        // A layer that knows the driver's own notation (GL: from `GL_VERSION`) gives it in
        // `extra`; otherwise it is decoded from the raw number.
        let version = self
            .extra
            .get("driver_version")
            .cloned()
            .unwrap_or_else(|| format_driver_version(self.vendor_id, self.driver_version_raw).into());
        m.insert("driver_version".into(), version);
        m.insert("driver_version_raw".into(), self.driver_version_raw.into());
        m.insert("api_version".into(), format_vk_version(self.api_version_raw).into());
        for (k, v) in &self.extra {
            m.entry(k.clone()).or_insert_with(|| v.clone());
        }
        Json::Object(m)
    }
}

/// A Vulkan version number as `major.minor.patch`.
pub fn format_vk_version(v: u32) -> String {
    format!("{}.{}.{}", (v >> 22) & 0x7f, (v >> 12) & 0x3ff, v & 0xfff)
}

/// A driver version in the vendor's own notation: NVIDIA packs 10.8.8.6 bits; Mesa and
/// most others use the Vulkan version encoding.
pub fn format_driver_version(vendor_id: u32, v: u32) -> String {
    if vendor_id == 0x10de {
        format!("{}.{}.{}.{}", v >> 22, (v >> 14) & 0xff, (v >> 6) & 0xff, v & 0x3f)
    } else {
        format_vk_version(v)
    }
}

pub use crate::model::counter_values::{CounterDesc, Unavailable};

/// What the layer knows for the header. The writer adds the process facts (pid, exe, args),
/// the schema id, versions and clock origin itself, on its own thread.
#[derive(Clone, Debug)]
pub struct Header {
    pub api: Api,
    pub device: Option<DeviceInfo>,
    /// `VkPhysicalDeviceLimits::timestampPeriod` (ns per tick).
    pub timestamp_period: Option<f64>,
    /// Config in effect; [`crate::dump::DumpWriter::from_config`] fills it in.
    pub config: Json,
    pub counters: Vec<CounterDesc>,
    /// Counter source ids, in the order of the frames' `counter_windows`.
    pub counter_sources: Vec<String>,
    pub unavailable: Vec<Unavailable>,
    /// The collector's board: the writer thread waits (bounded) for its catalogue and
    /// `unavailable` list before it writes the header, so the app's thread never does.
    pub counter_board: Option<std::sync::Arc<crate::session::counters::CounterBoard>>,
    /// Every recorded draw, dispatch, trace-rays command, pipeline bind and barrier was
    /// counted: the frames' counts of them are 0 when not (Vulkan with `command_counts`
    /// off).
    pub command_counts: bool,
    /// Free extra top-level fields (e.g. `"device_create_fallback": true`). A name that
    /// collides with a standard field is dropped.
    pub extra: Map<String, Json>,
    /// The groups the driver counters being collected were split into (empty when none are).
    pub driver_groups: Vec<DriverGroup>,
}

impl Header {
    pub fn new(api: Api) -> Self {
        Header {
            api,
            device: None,
            timestamp_period: None,
            config: Json::Null,
            counters: Vec::new(),
            counter_sources: Vec::new(),
            unavailable: Vec::new(),
            counter_board: None,
            command_counts: true,
            extra: Map::new(),
            driver_groups: Vec::new(),
        }
    }
}

/// Facts about the process and the writer, added to the header by the writer thread.
pub(crate) struct ProcessFacts {
    pub pid: u32,
    pub exe: String,
    pub args: Vec<String>,
    pub path: String,
    pub start_ns: u64,
    pub start_unix_ns: u64,
    pub queue_capacity: usize,
}

#[derive(Serialize)]
struct HeaderLine<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    schema: &'static str,
    framescope_version: &'static str,
    pid: u32,
    exe: &'a str,
    args: &'a [String],
    clock: &'static str,
    start_ns: u64,
    start_unix_ns: u64,
    dump_path: &'a str,
    queue_capacity: usize,
    api: Api,
    /// What the frames' `gpu_busy_ns` measures: `busy` (Vulkan: the union of the frame's
    /// submission intervals) or `span` (GL: one timestamp pair around the frame, idle gaps
    /// included).
    gpu_time: &'static str,
    command_counts: bool,
    device: Option<Json>,
    timestamp_period: Option<f64>,
    config: &'a Json,
    counters: &'a [CounterDesc],
    counter_sources: &'a [String],
    unavailable: &'a [Unavailable],
    #[serde(flatten)]
    extra: Map<String, Json>,
}

const HEADER_FIELDS: &[&str] = &[
    "type",
    "schema",
    "framescope_version",
    "pid",
    "exe",
    "args",
    "clock",
    "start_ns",
    "start_unix_ns",
    "dump_path",
    "queue_capacity",
    "api",
    "gpu_time",
    "command_counts",
    "device",
    "timestamp_period",
    "config",
    "counters",
    "counter_sources",
    "unavailable",
];

/// Appends the header line (with `\n`) to `out`.
pub(crate) fn write_header(out: &mut Vec<u8>, h: &Header, p: &ProcessFacts) {
    let mut extra = h.extra.clone();
    extra.retain(|k, _| !HEADER_FIELDS.contains(&k.as_str()));
    // The app's instruction set as the layer was built for it: `x86` for a 32-bit game.
    extra.insert("process_arch".into(), std::env::consts::ARCH.into());
    if !h.driver_groups.is_empty() {
        let groups: Vec<Json> = h
            .driver_groups
            .iter()
            .enumerate()
            .map(|(i, g)| {
                serde_json::json!({
                    "group": i,
                    "family": g.family,
                    "scope": g.scope,
                    "counters": g.names,
                    "units": g.units,
                    "storages": g.storages,
                    "meanings": g.meanings.iter().map(|m| m.as_ref().map(|m| serde_json::json!({
                        "common": m.common,
                        "vendor_db": m.vendor_db,
                        "vendor": m.vendor,
                        "scale": m.scale,
                    }))).collect::<Vec<_>>(),
                })
            })
            .collect();
        extra.insert("performance_counter_groups".into(), groups.into());
    }
    let line = HeaderLine {
        kind: "header",
        schema: crate::SCHEMA_ID,
        framescope_version: crate::VERSION,
        pid: p.pid,
        exe: &p.exe,
        args: &p.args,
        clock: "CLOCK_MONOTONIC",
        start_ns: p.start_ns,
        start_unix_ns: p.start_unix_ns,
        dump_path: &p.path,
        queue_capacity: p.queue_capacity,
        api: h.api,
        gpu_time: h.api.gpu_time(),
        command_counts: h.command_counts,
        device: h.device.as_ref().map(DeviceInfo::to_json),
        timestamp_period: h.timestamp_period,
        config: &h.config,
        counters: &h.counters,
        counter_sources: &h.counter_sources,
        unavailable: &h.unavailable,
        extra,
    };
    serde_json::to_writer(&mut *out, &line).expect("header serialises");
    out.push(b'\n');
}

/// What the dump says about a frame's attributed counters.
#[derive(Clone, Debug, PartialEq)]
pub struct FrameAttribution {
    /// The source (`pm`).
    pub source: String,
    /// The window the values cover; `None` when the frame kept the source's window values.
    pub over: Option<crate::session::attribution::Over>,
    /// Fraction of the window the samples covered.
    pub covered: f64,
    /// Why the frame has no attributed values.
    pub missing: Option<String>,
    /// Catalogue names of the attributed counters.
    pub names: Vec<String>,
    /// (index into the frame's samples, values in `names` order) for the samples long enough
    /// to get their own.
    pub samples: Vec<(usize, Vec<f64>)>,
    /// The same counters over the frame's CPU interval.
    pub interval: Option<IntervalValues>,
}

/// Counters over a frame's CPU interval, the previous frame's end to its own.
#[derive(Clone, Debug, PartialEq)]
pub struct IntervalValues {
    pub begin_ns: u64,
    pub end_ns: u64,
    /// Fraction of the interval the samples covered.
    pub covered: f64,
    /// In the attribution's `names` order.
    pub values: Vec<f64>,
}

struct FrameLine<'a> {
    r: &'a FrameRecord,
    catalogue: &'a [CounterDesc],
    sources: &'a [String],
    samples: &'a [SampleRecord],
    attribution: Option<&'a FrameAttribution>,
    /// The header's driver-counter groups and the frame's values of them.
    groups: &'a [DriverGroup],
    driver: &'a [FrameGroupValues],
}

/// `attribution`: per attributing source, the window its counters cover or why they are the
/// source's window values.
struct AttributionMap<'a>(&'a FrameAttribution);

impl Serialize for AttributionMap<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let a = self.0;
        let mut m = s.serialize_map(Some(1))?;
        let interval = a.interval.as_ref().map(|i| {
            serde_json::json!({
                "begin_ns": i.begin_ns,
                "end_ns": i.end_ns,
                "covered": (i.covered * 1e4).round() / 1e4,
                "counters": serde_json::to_value(SampleCounters(&a.names, &i.values)).unwrap_or_default(),
            })
        });
        m.serialize_entry(
            &a.source,
            &serde_json::json!({
                "over": a.over.map(|o| o.name()),
                "covered": (a.covered * 1e4).round() / 1e4,
                "missing": a.missing,
                "interval": interval,
            }),
        )?;
        m.end()
    }
}

/// A sample's own attributed counters.
struct SampleCounters<'a>(&'a [String], &'a [f64]);

impl Serialize for SampleCounters<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (n, v) in self.0.iter().zip(self.1) {
            m.serialize_entry(n, &v.is_finite().then_some(Number(*v)))?;
        }
        m.end()
    }
}

/// Per source with values: the window they cover and its age at the frame's end.
struct Windows<'a>(&'a FrameLine<'a>);

impl Serialize for Windows<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let FrameLine { r, sources, .. } = self.0;
        let mut m = s.serialize_map(None)?;
        for (name, w) in sources.iter().zip(&r.counter_windows) {
            if w.is_set() {
                m.serialize_entry(
                    name,
                    &serde_json::json!({
                        "begin_ns": w.begin_ns,
                        "end_ns": w.end_ns,
                        "age_ns": r.t_ns.saturating_sub(w.end_ns),
                    }),
                )?;
            }
        }
        m.end()
    }
}

struct Samples<'a>(&'a [SampleRecord], Option<&'a FrameAttribution>, &'a [DriverGroup]);

impl Serialize for Samples<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.0.len()))?;
        let mut own = self.1.map_or(&[][..], |a| &a.samples[..]).iter().peekable();
        for (k, x) in self.0.iter().enumerate() {
            let counters = match own.peek() {
                Some((i, v)) if *i == k => {
                    own.next();
                    self.1.map(|a| SampleCounters(&a.names, v))
                }
                _ => None,
            };
            seq.serialize_element(&SampleLine(x, counters, self.2))?;
        }
        seq.end()
    }
}

struct SampleLine<'a>(&'a SampleRecord, Option<SampleCounters<'a>>, &'a [DriverGroup]);

impl Serialize for SampleLine<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let x = self.0;
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("scope", x.scope.name())?;
        m.serialize_entry("label", &crate::model::labels::path_string(x.label.ids()))?;
        m.serialize_entry("cmdbuf", &x.cmdbuf)?;
        m.serialize_entry("draw", &x.draw)?;
        if x.overwritten {
            m.serialize_entry("gpu_begin_ns", &None::<u64>)?;
            m.serialize_entry("gpu_end_ns", &None::<u64>)?;
            m.serialize_entry("gpu_ns", &None::<u64>)?;
        } else {
            m.serialize_entry("gpu_begin_ns", &x.gpu_begin_ns)?;
            m.serialize_entry("gpu_end_ns", &x.gpu_end_ns)?;
            m.serialize_entry("gpu_ns", &x.gpu_ns())?;
            if let Some(st) = &x.stats {
                m.serialize_entry("stats", &StatsMap(st))?;
            }
        }
        if let Some(p) = &x.params {
            m.serialize_entry("params", &ParamsMap(p))?;
        }
        m.serialize_entry("overwritten", &x.overwritten)?;
        if let Some(c) = &self.1 {
            m.serialize_entry("counters", c)?;
        }
        if let Some(d) = &x.driver {
            let names = self.2.get(usize::from(d.group)).map_or(&[][..], |g| &g.names[..]);
            m.serialize_entry("driver_counters", &SampleDriver(d, names, x.overwritten))?;
        }
        m.end()
    }
}

/// A sample's driver counters: its group, whether its command buffer was recorded in an
/// earlier frame, and the values by name (null where overwritten).
struct SampleDriver<'a>(&'a DriverValues, &'a [String], bool);

impl Serialize for SampleDriver<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let d = self.0;
        let mut m = s.serialize_map(Some(3))?;
        m.serialize_entry("group", &d.group)?;
        m.serialize_entry("reused", &d.reused)?;
        let values: &[f64] = if self.2 { &[] } else { d.values() };
        let nan = [f64::NAN; crate::model::driver_values::MAX_GROUP];
        let values = if values.is_empty() {
            &nan[..self.1.len().min(nan.len())]
        } else {
            values
        };
        m.serialize_entry("counters", &SampleCounters(self.1, values))?;
        m.end()
    }
}

/// A frame's driver counters, one entry per group its samples carried.
struct FrameDriver<'a>(&'a [FrameGroupValues], &'a [DriverGroup]);

impl Serialize for FrameDriver<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.0.len()))?;
        for v in self.0 {
            let Some(g) = self.1.get(usize::from(v.group)) else {
                continue;
            };
            // The same values under the vendor-neutral names where the driver is known.
            let mut common = Map::new();
            for (m, x) in g.meanings.iter().zip(&v.values) {
                if let (Some(Some(name)), true) = (m.as_ref().map(|m| &m.common), x.is_finite()) {
                    let scaled = x * m.as_ref().map_or(1.0, |m| m.scale);
                    common.insert(name.clone(), serde_json::to_value(Number(scaled)).unwrap_or_default());
                }
            }
            seq.serialize_element(&serde_json::json!({
                "group": v.group,
                "samples": v.samples,
                "reused": v.reused,
                "counters": serde_json::to_value(SampleCounters(&g.names, &v.values)).unwrap_or_default(),
                "common": common,
            }))?;
        }
        seq.end()
    }
}

struct StatsMap<'a>(&'a PipelineStats);

impl Serialize for StatsMap<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(7))?;
        for (k, v) in PipelineStats::NAMES.iter().zip(self.0.as_array()) {
            m.serialize_entry(k, &v)?;
        }
        m.end()
    }
}

struct ParamsMap<'a>(&'a DrawParams);

impl Serialize for ParamsMap<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let p = self.0;
        let mut m = s.serialize_map(Some(6))?;
        m.serialize_entry("kind", &p.kind.map(|k| k.name()))?;
        m.serialize_entry("vertex_count", &p.vertex_count)?;
        m.serialize_entry("index_count", &p.index_count)?;
        m.serialize_entry("instance_count", &p.instance_count)?;
        m.serialize_entry("indirect", &p.indirect)?;
        m.serialize_entry("pipeline", &format_args!("{:#x}", p.pipeline))?;
        m.end()
    }
}

struct ByKind<'a, T>(&'a [&'static str], &'a [T]);

impl<T: Serialize> Serialize for ByKind<'_, T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (name, v) in self.0.iter().zip(self.1) {
            m.serialize_entry(name, v)?;
        }
        m.end()
    }
}

/// A frame's creations: `{kind: {calls, ns}}`.
struct Creation<'a>(&'a crate::model::creation::CreationTimes);

impl Serialize for Creation<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(crate::model::creation::CreationKind::COUNT))?;
        for k in crate::model::creation::CreationKind::ALL {
            m.serialize_entry(
                k.name(),
                &serde_json::json!({"calls": self.0.calls(k), "ns": self.0.ns(k)}),
            )?;
        }
        m.end()
    }
}

struct Counters<'a>(&'a FrameLine<'a>);

impl Serialize for Counters<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let FrameLine { r, catalogue, .. } = self.0;
        let mut m = s.serialize_map(Some(catalogue.len()))?;
        for (i, c) in catalogue.iter().enumerate() {
            // Non-finite values serialise as null, like unavailable ones.
            m.serialize_entry(&c.name, &r.counters.get(i).filter(|v| v.is_finite()).map(Number))?;
        }
        m.end()
    }
}

/// A counter value: whole numbers (bytes, MHz, ns) as JSON integers, the rest as floats.
struct Number(f64);

impl Serialize for Number {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        // Up to 2^53 every integer is exact in an f64.
        if self.0.fract() == 0.0 && self.0.abs() <= 9_007_199_254_740_992.0 {
            s.serialize_i64(self.0 as i64)
        } else {
            s.serialize_f64(self.0)
        }
    }
}

struct Swapchain<'a>(&'a crate::model::frame::SwapchainInfo);

impl Serialize for Swapchain<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let sc = self.0;
        let mut m = s.serialize_map(Some(7))?;
        // Hex string: handles can exceed 2^53, which JSON readers may round.
        m.serialize_entry("handle", &format_args!("{:#x}", sc.handle).to_string())?;
        m.serialize_entry("width", &sc.width)?;
        m.serialize_entry("height", &sc.height)?;
        m.serialize_entry("format", &sc.format)?;
        m.serialize_entry("format_name", &vk_format_name(sc.format))?;
        m.serialize_entry("present_mode", &sc.present_mode)?;
        m.serialize_entry("present_mode_name", &vk_present_mode_name(sc.present_mode))?;
        m.end()
    }
}

const DRAW_NAMES: [&str; DrawKind::COUNT] = {
    let mut names = [""; DrawKind::COUNT];
    let mut i = 0;
    while i < DrawKind::COUNT {
        names[i] = DrawKind::ALL[i].name();
        i += 1;
    }
    names
};

const WAIT_NAMES: [&str; WaitKind::COUNT] = {
    let mut names = [""; WaitKind::COUNT];
    let mut i = 0;
    while i < WaitKind::COUNT {
        names[i] = WaitKind::ALL[i].name();
        i += 1;
    }
    names
};

const DISPATCH_NAMES: [&str; DispatchKind::COUNT] = [
    DispatchKind::ALL[0].name(),
    DispatchKind::ALL[1].name(),
    DispatchKind::ALL[2].name(),
];

impl Serialize for FrameLine<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let r = self.r;
        let c = &r.counts;
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("type", "frame")?;
        m.serialize_entry("frame", &r.frame)?;
        m.serialize_entry("t_ns", &r.t_ns)?;
        m.serialize_entry("cpu_frame_ns", &r.cpu_frame_ns)?;
        m.serialize_entry("gpu_busy_ns", &r.gpu.busy_ns)?;
        m.serialize_entry("gpu_span_ns", &r.gpu.span_ns)?;
        m.serialize_entry("gpu_begin_ns", &r.gpu.begin_ns)?;
        m.serialize_entry("gpu_end_ns", &r.gpu.end_ns)?;
        // The reason is there exactly when the GPU time is not, whatever the record says.
        let missing = match r.gpu.busy_ns {
            Some(_) => None,
            None => Some(r.gpu.missing.unwrap_or(GpuMissing::Unknown).name()),
        };
        m.serialize_entry("gpu_missing", &missing)?;
        // The frame timeline's CPU side (PresentMon: CPUStartTime, MsCPUBusy, MsCPUWait,
        // MsInPresentAPI; ours splits the waits by kind) and the GPU side on the CPU clock.
        let cpu = &r.cpu;
        m.serialize_entry("cpu_start_ns", &cpu.start_ns)?;
        m.serialize_entry("cpu_busy_ns", &cpu.busy_ns(r.t_ns))?;
        m.serialize_entry("cpu_wait_ns", &cpu.wait_ns())?;
        m.serialize_entry("present_call_ns", &cpu.present_ns)?;
        m.serialize_entry("cpu_wait_by_kind_ns", &ByKind(&WAIT_NAMES, &cpu.waits.0))?;
        let gpu_latency = match (cpu.start_ns, r.gpu.begin_ns) {
            (Some(s), Some(b)) => Some(b.saturating_sub(s)),
            _ => None,
        };
        m.serialize_entry("gpu_latency_ns", &gpu_latency)?;
        let gpu_wait = match (r.gpu.span_ns, r.gpu.busy_ns) {
            (Some(s), Some(b)) => Some(s.saturating_sub(b)),
            _ => None,
        };
        m.serialize_entry("gpu_wait_ns", &gpu_wait)?;
        // When it reached the screen (PresentMon: ScreenTime, DisplayLatency, DisplayedTime,
        // MsUntilDisplayed, MsBetweenDisplayChange, MsAnimationError).
        let d = &r.display;
        m.serialize_entry("display", d.state.name())?;
        m.serialize_entry("display_source", &d.source.map(|s| s.name()))?;
        if let Some(why) = d.why_none {
            m.serialize_entry("display_none_reason", why.name())?;
        }
        m.serialize_entry("display_mode", &d.mode.name())?;
        m.serialize_entry("refresh_ns", &d.refresh_ns)?;
        m.serialize_entry("shown_ns", &d.shown_ns)?;
        m.serialize_entry("display_latency_ns", &d.latency_ns(cpu.start_ns))?;
        m.serialize_entry("displayed_time_ns", &d.displayed_ns)?;
        m.serialize_entry("until_displayed_ns", &d.until_displayed_ns(r.t_ns))?;
        m.serialize_entry("between_display_change_ns", &d.between_changes_ns)?;
        m.serialize_entry("animation_error_ns", &d.animation_error_ns)?;
        m.serialize_entry("creation_by_kind", &Creation(&cpu.creation))?;
        let fb = &cpu.creation.pipelines;
        m.serialize_entry("pipeline_feedback", &fb.count)?;
        m.serialize_entry("pipeline_driver_ns", &fb.driver_ns)?;
        m.serialize_entry("pipeline_cache_hits", &fb.cache_hits)?;
        m.serialize_entry("stutter", &r.stutter_median_ns.is_some())?;
        if let Some(median) = r.stutter_median_ns {
            let mut causes = Vec::new();
            crate::model::stutter::causes(cpu, &mut causes);
            let excess = r.cpu_frame_ns.unwrap_or(0).saturating_sub(median);
            m.serialize_entry("stutter_median_ns", &median)?;
            m.serialize_entry("stutter_explained", &crate::model::stutter::explained(&causes, excess))?;
            let list: Vec<Json> = causes
                .iter()
                .map(|c| serde_json::json!({"cause": c.name, "ns": c.ns, "calls": c.calls}))
                .collect();
            m.serialize_entry("stutter_causes", &list)?;
        }
        // Counts that were not taken (Vulkan without `command_counts`) are unknown, not 0.
        let counted = !c.commands_uncounted;
        m.serialize_entry("draws", &counted.then(|| c.draws_total()))?;
        m.serialize_entry("dispatches", &counted.then(|| c.dispatches_total()))?;
        m.serialize_entry("submits", &c.submits)?;
        m.serialize_entry("command_buffers", &c.command_buffers)?;
        m.serialize_entry("render_passes", &c.render_passes)?;
        m.serialize_entry("pipeline_binds", &counted.then_some(c.pipeline_binds))?;
        m.serialize_entry("barriers", &counted.then_some(c.barriers))?;
        m.serialize_entry("trace_rays", &counted.then_some(c.trace_rays))?;
        m.serialize_entry("queues_without_timestamps", &c.queues_without_timestamps)?;
        m.serialize_entry("draws_timed", &c.draws_timed)?;
        m.serialize_entry("stats_command_buffers", &c.stats_command_buffers)?;
        if let Some(w) = &r.draw_window {
            m.serialize_entry(
                "draw_window",
                &serde_json::json!({
                    "first": w.first,
                    "count": w.count,
                    "of": w.of,
                    "overhead_ns": w.overhead_ns,
                }),
            )?;
        }
        m.serialize_entry("draws_by_kind", &counted.then_some(ByKind(&DRAW_NAMES, &c.draws.0)))?;
        m.serialize_entry(
            "dispatches_by_kind",
            &counted.then_some(ByKind(&DISPATCH_NAMES, &c.dispatches.0)),
        )?;
        m.serialize_entry("end", r.end.name())?;
        m.serialize_entry("swapchain", &r.swapchain.as_ref().map(Swapchain))?;
        m.serialize_entry("counters", &Counters(self))?;
        m.serialize_entry("counter_windows", &Windows(self))?;
        if let Some(a) = self.attribution {
            m.serialize_entry("attribution", &AttributionMap(a))?;
        }
        m.serialize_entry("samples", &Samples(self.samples, self.attribution, self.groups))?;
        if !self.groups.is_empty() {
            m.serialize_entry("driver_counters", &FrameDriver(self.driver, self.groups))?;
        }
        if let Some(st) = &r.stats {
            m.serialize_entry("stats", &StatsMap(st))?;
        }
        m.end()
    }
}

/// The header's driver-counter groups and a frame's values of them.
#[derive(Clone, Copy)]
pub struct DriverFrame<'a> {
    pub groups: &'a [DriverGroup],
    pub values: &'a [FrameGroupValues],
}

/// Appends one frame line (with `\n`) to `out`; `catalogue` and `sources` are the header's
/// `counters` and `counter_sources`; `attribution` what the writer attributed to the frame.
pub fn write_frame(
    out: &mut Vec<u8>,
    r: &FrameRecord,
    catalogue: &[CounterDesc],
    sources: &[String],
    samples: &[SampleRecord],
    attribution: Option<&FrameAttribution>,
    driver: DriverFrame<'_>,
) {
    let line = FrameLine {
        r,
        catalogue,
        sources,
        samples,
        attribution,
        groups: driver.groups,
        driver: driver.values,
    };
    serde_json::to_writer(&mut *out, &line).expect("frame serialises");
    out.push(b'\n');
}

/// Appends one `series` line: a source's raw samples, `rows` holding per sample its begin and
/// end (`CLOCK_MONOTONIC` ns, exact as f64 up to 2^53 ns, 104 days of uptime) and then one
/// value per name.
pub fn write_series(out: &mut Vec<u8>, source: &str, names: &[String], rows: &[f64], row: usize) {
    let n = rows.len() / row.max(1);
    let col = |k: usize| -> Vec<Option<Number>> {
        (0..n)
            .map(|i| rows[i * row + k])
            .map(|v| v.is_finite().then_some(Number(v)))
            .collect()
    };
    let mut values = Map::new();
    for (k, name) in names.iter().enumerate() {
        values.insert(name.clone(), serde_json::to_value(col(2 + k)).unwrap_or(Json::Null));
    }
    let line = serde_json::json!({
        "type": "series",
        "source": source,
        "begin_ns": col(0),
        "end_ns": col(1),
        "values": values,
    });
    serde_json::to_writer(&mut *out, &line).expect("series serialises");
    out.push(b'\n');
}

/// The `summary` record: the statistics plus how they were produced.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SummaryRecord {
    #[serde(flatten)]
    pub summary: Summary,
    /// Frames lost because the writer's queue was full.
    pub dropped_frames: u64,
    /// Samples lost because the writer's sample queue was full.
    #[serde(default)]
    pub dropped_samples: u64,
    /// `writer` (written by the dump writer) or `report` (recomputed by `framescope report`).
    pub produced_by: String,
    /// `finish` (device destroyed or process exit), `dump_duration`, or `recomputed`.
    pub ended_by: String,
}

#[derive(Serialize)]
struct Tagged<'a, T> {
    #[serde(rename = "type")]
    kind: &'static str,
    #[serde(flatten)]
    inner: &'a T,
}

impl SummaryRecord {
    /// The summary line's JSON (without newline), `type` first.
    pub fn to_line(&self) -> String {
        serde_json::to_string(&Tagged {
            kind: "summary",
            inner: self,
        })
        .expect("summary serialises")
    }
}
