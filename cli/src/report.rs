//! `framescope report [--json] DUMP`: the summary of a JSON Lines dump.
//!
//! The dump is read as a stream, one line at a time, with bounded memory whatever it holds: a
//! line longer than [`MAX_LINE`] is skipped without being kept, and reading stops after
//! [`GIVE_UP`] bytes without a readable record (`/dev/zero`, an endless pipe of blank lines).
//! Nothing in the file is trusted: frame records out of order or repeated, and values that
//! their own timestamps contradict, are ignored and counted. The summary is always recomputed
//! from the frame records with the same `framescope_core::stats` code the writer uses; the
//! dump's own `summary` record is shown only when it agrees, and the report says when it does
//! not or is missing (the app crashed or was killed). A truncated last line (a kill in the
//! middle of a write) is ignored and reported. Text from the file is printed escaped.

use crate::lines::{Line, Lines, GIVE_UP, MAX_LINE};
use crate::text::{escape, show};
use framescope_core::draw_keys::{vertices, DrawKey, DrawTable, TOP};
use framescope_core::dump::SummaryRecord;
use framescope_core::frame::DrawKind;
use framescope_core::sample::PipelineStats;
use framescope_core::stats::{Distribution, SummaryBuilder};
use serde::Deserialize;
use std::ffi::{OsStr, OsString};
use std::io::Read;

/// `report --help`'s description.
pub const ABOUT: &str = "\
One table per dump: frames, fps and lows, frame-time and GPU-time percentiles, counter means,
the regions (render passes, debug labels) and draws with the most GPU time. The summary is
recomputed from the frame records; a dump whose frame records disagree with its own summary,
or that has none (the app was killed), says so. With --json, one JSON line per dump: the
summary record, with `dump` (the path) and `regions_top` added. With --html OUT, one
self-contained HTML page instead: a run view for one dump, a comparison with compare's
verdicts for several (each against the first), a farm view for a directory of dumps.

Exit status: 0 when every dump was read, 1 when any could not be (the others are still
reported), 2 on bad arguments.";

pub const EXAMPLES: &str = "\
examples:
  framescope report run.jsonl
  framescope report --json runs/*.jsonl
  framescope report --html run.html run.jsonl
  framescope report --html compare.html before.jsonl after.jsonl
  framescope report --html farm.html --group-by device runs/";

// `report`'s options (a plain comment: a doc comment would become clap's about text).
#[derive(clap::Args, Debug)]
#[command(args_override_self = true)]
pub struct Args {
    /// one JSON line per dump instead of the tables
    #[arg(long)]
    pub json: bool,
    /// one row per CPU core instead of one row folding them
    #[arg(long)]
    pub all_counters: bool,
    /// write one self-contained HTML page to OUT instead: one DUMP gives a run, several a
    /// comparison against the first (compare's verdicts), a directory a farm view
    #[arg(long, value_name = "OUT", conflicts_with_all = ["json", "all_counters"])]
    pub html: Option<OsString>,
    /// the farm view's grouping: driver (default), device, label (`run --label`), or a header
    /// field path such as exe or config.samples
    #[arg(long, value_name = "FIELD", requires = "html", value_parser = crate::usage::text())]
    pub group_by: Option<String>,
    /// how the farm view aggregates a group: runs (the mean of its runs' statistics, each run
    /// weighing the same; default) or frames (its runs' frames concatenated)
    #[arg(long, value_name = "HOW", requires = "html", value_parser = ["runs", "frames"])]
    pub aggregate: Option<String>,
    /// JSON Lines dumps written by framescope
    #[arg(value_name = "DUMP")]
    pub dumps: Vec<OsString>,
}

/// Marks listed; the rest are counted.
const MARKS_SHOWN: usize = 20;

#[derive(Deserialize)]
struct MarkFields {
    t_ns: u64,
    frame: Option<u64>,
    label: String,
}

/// A `fault` record: what went wrong below framescope (a lost device).
#[derive(Deserialize)]
struct FaultFields {
    kind: String,
    call: String,
    result: String,
    frame: Option<u64>,
}

/// Faults a report keeps (the writer writes at most 16).
const FAULTS_SHOWN: usize = 16;

/// Distinct regions (scope and label path) a report keeps: a forged dump may name millions.
const MAX_REGIONS: usize = 4096;
/// Regions shown, most GPU time first.
const REGIONS_SHOWN: usize = 10;
/// Rows of the driver counters by render pass (label path, counter).
const PASS_DRIVER_SHOWN: usize = 48;

/// Longest `summary` line parsed.
const MAX_SUMMARY_LINE: usize = 64 << 10;

/// Bad line numbers listed; the rest are counted.
const BAD_LINES_SHOWN: usize = 10;

/// No GPU works on one frame for an hour: drivers reset a GPU that runs a job for seconds
/// (amdgpu's default `lockup_timeout` is 10 s, i915's heartbeat 2.5 s).
const MAX_GPU_BUSY_NS: u64 = 3_600 * 1_000_000_000;

/// A line's record type; the other fields are skipped without being stored.
#[derive(Deserialize)]
struct Kind {
    #[serde(rename = "type")]
    kind: Option<String>,
}

/// The fields of a frame record that the report reads.
#[derive(Deserialize)]
struct Fields {
    frame: Option<u64>,
    t_ns: Option<u64>,
    cpu_frame_ns: Option<u64>,
    gpu_busy_ns: Option<u64>,
    /// The frame timeline's fields (absent in dumps that predate them).
    #[serde(flatten)]
    timeline: crate::timeline::TimelineFields,
    #[serde(default)]
    counters: Option<std::collections::BTreeMap<String, Option<f64>>>,
    #[serde(default)]
    samples: Vec<SampleFields>,
    /// Per group the frame's samples carried: its values over them.
    #[serde(default)]
    driver_counters: Vec<DriverFields>,
}

/// Driver counters (`VK_KHR_performance_query`) of a frame or a sample, by name.
#[derive(Deserialize)]
struct DriverFields {
    #[serde(default)]
    counters: std::collections::BTreeMap<String, Option<f64>>,
}

/// The fields of a sample that the per-draw aggregates read.
#[derive(Deserialize)]
struct SampleFields {
    scope: Option<String>,
    #[serde(default)]
    label: String,
    cmdbuf: Option<u32>,
    draw: Option<u32>,
    gpu_ns: Option<u64>,
    #[serde(default)]
    overwritten: bool,
    params: Option<ParamFields>,
    stats: Option<std::collections::BTreeMap<String, u64>>,
    driver_counters: Option<DriverFields>,
    /// The sample's own attributed counters (NVIDIA PM sampling over its GPU span).
    #[serde(default)]
    counters: Option<std::collections::BTreeMap<String, Option<f64>>>,
}

#[derive(Deserialize)]
struct ParamFields {
    kind: Option<String>,
    #[serde(default)]
    vertex_count: u32,
    #[serde(default)]
    index_count: u32,
    #[serde(default)]
    instance_count: u32,
    pipeline: Option<String>,
}

/// Longest label path a draw key keeps: a forged dump must not fill the key table with
/// megabyte names. The writer's paths are at most 8 labels of a few hundred bytes.
const MAX_LABEL_PATH: usize = 4096;

/// Counter names a report keeps statistics for: a forged dump may name millions.
const MAX_COUNTERS: usize = 256;

#[derive(Deserialize)]
struct CounterEntry {
    name: String,
    #[serde(default)]
    unit: String,
    /// `device`, `process` or `system`.
    #[serde(default)]
    scope: String,
}

#[derive(Deserialize, Default)]
struct Header {
    schema: Option<String>,
    start_ns: Option<u64>,
    exe: Option<String>,
    pid: Option<u64>,
    api: Option<String>,
    device: Option<Device>,
    /// `busy` (Vulkan) or `span` (GL: the time between the frame's two timestamps).
    gpu_time: Option<String>,
    #[serde(default)]
    counters: Vec<CounterEntry>,
    #[serde(default)]
    performance_counter_groups: Vec<DriverGroupEntry>,
}

/// A group of driver counters the layer collected in turn.
#[derive(Deserialize)]
struct DriverGroupEntry {
    #[serde(default)]
    counters: Vec<String>,
    #[serde(default)]
    units: Vec<String>,
}

impl Header {
    /// The unit of driver counter `name`, when a group names it.
    fn driver_unit(&self, name: &str) -> Option<&str> {
        self.performance_counter_groups.iter().find_map(|g| {
            let k = g.counters.iter().position(|c| c == name)?;
            Some(g.units.get(k).map_or("", String::as_str))
        })
    }
}

#[derive(Deserialize, Default)]
struct Device {
    name: Option<String>,
    vendor_id: Option<u64>,
    device_id: Option<u64>,
    driver_name: Option<String>,
    driver_version: Option<String>,
}

/// What was read from a dump.
#[derive(Default)]
struct Dump {
    header: Option<Header>,
    /// The header as written, for the HTML page's "what ran" (it shows fields this reader
    /// does not model, such as `config`).
    header_raw: Option<serde_json::Value>,
    summary: Option<SummaryRecord>,
    builder: SummaryBuilder,
    draws: DrawTable<String>,
    /// Draw samples not aggregated: label path over [`MAX_LABEL_PATH`], or a bad pipeline.
    ignored_draws: u64,
    /// `mark` records: the first [`MARKS_SHOWN`], and how many more.
    marks: Vec<MarkFields>,
    more_marks: u64,
    faults: Vec<FaultFields>,
    /// GPU time of render-pass and label samples by (scope, label path): count, total ns.
    regions: std::collections::HashMap<(String, String), (u64, u64)>,
    /// Region samples not aggregated: past [`MAX_REGIONS`] or a label path too long.
    ignored_regions: u64,
    /// Driver counters of render-pass samples by (label path, counter): samples, sum.
    pass_driver: std::collections::BTreeMap<(String, String), (u64, f64)>,
    /// The same of the samples' own attributed counters (PM sampling's per-pass values).
    pass_attributed: std::collections::BTreeMap<(String, String), (u64, f64)>,
    /// Frame indices missing between consecutive frame records (lost frames).
    gaps: u64,
    truncated_last_line: bool,
    /// Lines that did not parse or were not records of a dump, other than a truncated last
    /// line: the first [`BAD_LINES_SHOWN`] line numbers, and how many in all.
    bad_lines: Vec<u64>,
    bad_line_count: u64,
    /// Lines longer than [`MAX_LINE`], skipped unread.
    long_lines: u64,
    extra_headers: u64,
    extra_summaries: u64,
    /// Frame records whose index is not after the previous frame's.
    out_of_order: u64,
    /// Sum of the frame times accepted.
    frame_time_sum: u64,
    /// Frame records whose index skips more frames than nanoseconds passed.
    bad_jumps: u64,
    /// `cpu_frame_ns` longer than the time since the previous frame (or since boot).
    bad_frame_times: u64,
    /// `gpu_busy_ns` over [`MAX_GPU_BUSY_NS`].
    bad_gpu_times: u64,
    /// Reading stopped after [`GIVE_UP`] bytes without a record.
    gave_up: bool,
    /// Counter names past [`MAX_COUNTERS`], or not in the header's catalogue, that were ignored.
    ignored_counters: u64,
    last_frame: Option<(u64, u64)>,
}

impl Dump {
    fn bad_line(&mut self, n: u64) {
        self.bad_line_count += 1;
        if self.bad_lines.len() < BAD_LINES_SHOWN {
            self.bad_lines.push(n);
        }
    }

    fn frame(&mut self, line: &[u8], n: u64) {
        let Ok(f) = serde_json::from_slice::<Fields>(line) else {
            self.bad_line(n);
            return;
        };
        let (Some(frame), Some(t_ns)) = (f.frame, f.t_ns) else {
            self.bad_line(n);
            return;
        };
        let since_prev = match self.last_frame {
            Some((prev, _)) if frame <= prev => {
                self.out_of_order += 1;
                return;
            }
            // `t_ns` may go back a little between frames presented from different threads
            // (each reads the clock before taking the frame lock); the writer then records a
            // frame time of 0, and so does this.
            Some((prev, prev_t)) => {
                // Every lost frame took at least a nanosecond of the clock.
                let (lost, since) = (frame - prev - 1, t_ns.saturating_sub(prev_t));
                if lost > since {
                    self.bad_jumps += 1;
                    return;
                }
                self.gaps = self.gaps.saturating_add(lost);
                since
            }
            // The first frame in the dump may follow frames before `dump_start`; its frame time
            // is at most the time since boot (`t_ns` is CLOCK_MONOTONIC).
            None => t_ns,
        };
        self.last_frame = Some((frame, t_ns));
        // A frame time is the time from the previous present. Capping the running sum too
        // keeps the sums in `stats` from overflowing even when a forged `t_ns` swings back
        // and forth.
        let cpu = f.cpu_frame_ns.filter(|&ft| {
            let sum = self.frame_time_sum.checked_add(ft).filter(|_| ft <= since_prev);
            self.frame_time_sum = sum.unwrap_or(self.frame_time_sum);
            self.bad_frame_times += u64::from(sum.is_none());
            sum.is_some()
        });
        let gpu = f.gpu_busy_ns.filter(|&g| {
            let ok = g <= MAX_GPU_BUSY_NS;
            self.bad_gpu_times += u64::from(!ok);
            ok
        });
        self.builder.add(t_ns, cpu, gpu);
        f.timeline.add_to(&mut self.builder);
        for s in f.samples {
            match s.scope.as_deref() {
                Some("draw") => self.draw_sample(s),
                Some(scope @ ("renderpass" | "label")) => {
                    let scope = scope.to_owned();
                    self.region_sample(scope, s);
                }
                _ => {}
            }
        }
        for g in &f.driver_counters {
            for (name, v) in &g.counters {
                let Some(v) = v.filter(|v| v.is_finite()) else { continue };
                let named = self.header.as_ref().is_none_or(|h| h.driver_unit(name).is_some());
                let name = framescope_core::driver_values::summary_name(name);
                if named && (self.builder.counter_names() < MAX_COUNTERS || self.builder.has_counter(&name)) {
                    self.builder.add_counter(&name, v);
                } else {
                    self.ignored_counters += 1;
                }
            }
        }
        for (k, (name, v)) in f.counters.into_iter().flatten().enumerate() {
            let Some(v) = v.filter(|v| v.is_finite()) else { continue };
            let known = k < MAX_COUNTERS
                && match self.header.as_ref().map(|h| &h.counters) {
                    Some(cat) if !cat.is_empty() => cat.iter().take(MAX_COUNTERS).any(|c| c.name == name),
                    _ => self.builder.counter_names() < MAX_COUNTERS || self.builder.has_counter(&name),
                };
            if known {
                self.builder.add_counter(&name, v);
            } else {
                self.ignored_counters += 1;
            }
        }
    }

    /// A timed draw, into the per-key aggregates (as the writer adds it).
    fn draw_sample(&mut self, s: SampleFields) {
        let (Some(ns), Some(draw), Some(cmdbuf)) = (s.gpu_ns, s.draw, s.cmdbuf) else {
            return;
        };
        if s.scope.as_deref() != Some("draw") || s.overwritten {
            return;
        }
        let p = s.params.as_ref();
        let pipeline = match p.and_then(|p| p.pipeline.as_deref()) {
            None => Some(0),
            Some(h) => h.strip_prefix("0x").and_then(|h| u64::from_str_radix(h, 16).ok()),
        };
        let (Some(pipeline), true) = (pipeline, s.label.len() <= MAX_LABEL_PATH) else {
            self.ignored_draws += 1;
            return;
        };
        let kind = p
            .and_then(|p| p.kind.as_deref())
            .and_then(|k| DrawKind::ALL.into_iter().find(|d| d.name() == k));
        let vertices = p.map_or(0, |p| vertices(p.vertex_count, p.index_count, p.instance_count));
        let stats = s.stats.as_ref().and_then(|m| {
            let v: Option<Vec<u64>> = PipelineStats::NAMES.iter().map(|n| m.get(*n).copied()).collect();
            Some(PipelineStats::from_array(v?.try_into().ok()?))
        });
        let key = DrawKey {
            label: s.label,
            cmdbuf,
            draw,
            pipeline,
        };
        self.draws.add(key, kind, ns, vertices, stats.as_ref());
    }

    /// A render-pass or label sample, into the per-region totals.
    fn region_sample(&mut self, scope: String, s: SampleFields) {
        // Render passes (Vulkan) and top-level debug groups (GL's driver counters).
        if !s.overwritten && s.label.len() <= MAX_LABEL_PATH {
            let driver = s.driver_counters.iter().flat_map(|d| &d.counters);
            self.ignored_regions += add_pass_values(&mut self.pass_driver, &s.label, driver);
            let attributed = s.counters.iter().flatten();
            self.ignored_regions += add_pass_values(&mut self.pass_attributed, &s.label, attributed);
        }
        let Some(ns) = s.gpu_ns.filter(|_| !s.overwritten) else {
            return;
        };
        let key = (scope, s.label);
        let full = self.regions.len() >= MAX_REGIONS && !self.regions.contains_key(&key);
        if full || key.1.len() > MAX_LABEL_PATH {
            self.ignored_regions += 1;
            return;
        }
        let e = self.regions.entry(key).or_default();
        e.0 += 1;
        e.1 = e.1.saturating_add(ns);
    }

    /// The regions with the most GPU time: (scope, label path, samples, total ns).
    fn regions_top(&self) -> Vec<(&str, &str, u64, u64)> {
        self.regions_by_time(REGIONS_SHOWN)
    }

    /// The first `limit` regions by GPU time, most first.
    fn regions_by_time(&self, limit: usize) -> Vec<(&str, &str, u64, u64)> {
        let mut v: Vec<_> = self
            .regions
            .iter()
            .map(|((scope, label), &(n, total))| (scope.as_str(), label.as_str(), n, total))
            .collect();
        v.sort_by(|a, b| b.3.cmp(&a.3).then(a.0.cmp(b.0)).then(a.1.cmp(b.1)));
        v.truncate(limit);
        v
    }

    /// One line's record. `false` when it is not one.
    fn record(&mut self, line: &[u8], n: u64) -> bool {
        let Ok(k) = serde_json::from_slice::<Kind>(line) else {
            return false;
        };
        match k.kind.as_deref() {
            Some("frame") => self.frame(line, n),
            Some("header") if self.header.is_some() => self.extra_headers += 1,
            Some("header") => match serde_json::from_slice::<Header>(line) {
                Ok(h) => {
                    self.header = Some(h);
                    self.header_raw = serde_json::from_slice(line).ok();
                }
                Err(_) => self.bad_line(n),
            },
            Some("mark") => match serde_json::from_slice::<MarkFields>(line) {
                Ok(m) if self.marks.len() < MARKS_SHOWN => self.marks.push(m),
                Ok(_) => self.more_marks += 1,
                Err(_) => self.bad_line(n),
            },
            Some("fault") => match serde_json::from_slice::<FaultFields>(line) {
                Ok(f) if self.faults.len() < FAULTS_SHOWN => self.faults.push(f),
                Ok(_) => {}
                Err(_) => self.bad_line(n),
            },
            Some("summary") if self.summary.is_some() => self.extra_summaries += 1,
            // `SummaryRecord` flattens `Summary`, so serde buffers every field of the line
            // before reading it (tens of bytes per array element): a forged 16 MiB summary
            // would take hundreds of MiB. A real one is under 1 KiB.
            Some("summary") if line.len() > MAX_SUMMARY_LINE => self.bad_line(n),
            // Raw counter samples: the frames carry their values over each frame.
            Some("series") => {}
            Some("summary") => match serde_json::from_slice::<SummaryRecord>(line) {
                Ok(s) => self.summary = Some(s),
                Err(_) => self.bad_line(n),
            },
            _ => self.bad_line(n),
        }
        true
    }
}

fn read_dump(input: impl Read) -> std::io::Result<Dump> {
    read_dump_giving_up_after(input, GIVE_UP)
}

fn read_dump_giving_up_after(input: impl Read, give_up: u64) -> std::io::Result<Dump> {
    let mut d = Dump::default();
    let mut lines = Lines::new(input, give_up);
    // The newest line that did not parse: a truncated last line when only blank lines follow.
    let mut unparsed: Option<u64> = None;
    let mut n = 0u64;
    while let Some((blank, line)) = lines.next_line()? {
        n += 1 + blank;
        let text = match line {
            Line::GiveUp => {
                d.gave_up = true;
                break;
            }
            Line::TooLong => {
                if let Some(prev) = unparsed.take() {
                    d.bad_line(prev);
                }
                d.long_lines += 1;
                continue;
            }
            Line::Text(t) => t,
        };
        if text.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        if let Some(prev) = unparsed.take() {
            d.bad_line(prev);
        }
        if d.record(text, n) {
            lines.since_record = 0;
        } else {
            unparsed = Some(n);
        }
    }
    d.truncated_last_line = unparsed.is_some();
    Ok(d)
}

fn ms(ns: f64) -> String {
    format!("{:.3} ms", ns / 1e6)
}

fn opt_fps(f: Option<f64>) -> String {
    f.map_or_else(|| "-".to_string(), |f| format!("{f:.2} fps"))
}

fn text(s: &Option<String>) -> String {
    s.as_deref().map_or_else(|| "?".to_string(), escape)
}

fn device_line(d: &Device) -> String {
    let mut s = format!(
        "{} [{:04x}:{:04x}]",
        text(&d.name),
        d.vendor_id.unwrap_or(0),
        d.device_id.unwrap_or(0)
    );
    if let Some(v) = &d.driver_version {
        s.push_str(&format!(
            ", driver {}{}",
            d.driver_name
                .as_deref()
                .map(|n| format!("{} ", escape(n)))
                .unwrap_or_default(),
            escape(v)
        ));
    }
    s
}

/// Picks one statistic of a distribution, in ns.
type Stat = fn(&Distribution) -> f64;

fn distribution_rows(ft: Option<&Distribution>, gpu: Option<&Distribution>, gpu_name: &str) -> String {
    let cell = |d: Option<&Distribution>, f: Stat| d.map_or("-".to_string(), |d| ms(f(d)));
    let rows: [(&str, Stat); 7] = [
        ("mean", |d| d.mean),
        ("p50", |d| d.p50 as f64),
        ("p90", |d| d.p90 as f64),
        ("p95", |d| d.p95 as f64),
        ("p99", |d| d.p99 as f64),
        ("p99.9", |d| d.p99_9 as f64),
        ("max", |d| d.max as f64),
    ];
    let mut s = format!("  {:<12}{:>14}{:>14}\n", "", "frame time", gpu_name);
    for (name, f) in rows {
        s.push_str(&format!("  {:<12}{:>14}{:>14}\n", name, cell(ft, f), cell(gpu, f)));
    }
    s
}

fn render(path: &OsStr, d: &Dump, rec: &SummaryRecord, notes: &[String], all: bool) -> String {
    let s = &rec.summary;
    let mut out = format!("framescope report: {}\n", show(path));
    if let Some(h) = &d.header {
        out.push_str(&format!(
            "  {:<12}{} (pid {})\n",
            "exe",
            text(&h.exe),
            h.pid.unwrap_or(0)
        ));
        out.push_str(&format!("  {:<12}{}\n", "api", text(&h.api)));
        if let Some(dev) = &h.device {
            out.push_str(&format!("  {:<12}{}\n", "device", device_line(dev)));
        }
    }
    out.push_str(&format!("  {:<12}{}\n", "frames", s.frames));
    out.push_str(&format!("  {:<12}{:.3} s\n", "duration", s.duration_ns as f64 / 1e9));
    out.push_str(&format!("  {:<12}{}\n", "fps mean", opt_fps(s.fps_mean)));
    out.push_str(&format!("  {:<12}{}\n", "1% low", opt_fps(s.low_1pct_fps)));
    out.push_str(&format!("  {:<12}{}\n", "0.1% low", opt_fps(s.low_0_1pct_fps)));
    out.push_str(&format!("  {:<12}{} frames\n", "dropped", rec.dropped_frames));
    out.push('\n');
    // GL dumps time a span around each frame, not busy time (header `gpu_time`).
    let span = d.header.as_ref().is_some_and(|h| h.gpu_time.as_deref() == Some("span"));
    let gpu_name = if span { "gpu span" } else { "gpu busy" };
    out.push_str(&distribution_rows(
        s.frame_time_ns.as_ref(),
        s.gpu_busy_ns.as_ref(),
        gpu_name,
    ));
    out.push_str(&format!("  frames without gpu time: {}\n\n", s.gpu_missing_frames));
    out.push_str(&crate::timeline::render(s.timeline.as_ref(), s.duration_ns, s.fps_mean));
    if !s.counters.is_empty() {
        let describe = |name: &str| {
            let h = d.header.as_ref();
            let driver = name
                .strip_prefix(&framescope_core::driver_values::summary_name(""))
                .and_then(|n| h?.driver_unit(n));
            let entry = h.and_then(|h| h.counters.iter().find(|c| c.name == name));
            let unit = match driver {
                Some(u) => escape(u),
                None => entry.map_or(String::new(), |c| escape(&c.unit)),
            };
            let scope = entry.map_or("", |c| c.scope.as_str());
            (unit, crate::counter_table::Group::of(name, scope))
        };
        out.push_str(&crate::counter_table::render(&s.counters, describe, s.duration_ns, all));
        out.push('\n');
    }
    out.push_str(&regions_table(d));
    out.push_str(&pass_counter_tables(d));
    if !s.draws_top.is_empty() {
        out.push_str(&draws_table(s));
    }
    for f in &d.faults {
        let at = f.frame.map_or(String::new(), |n| format!(" after frame {n}"));
        out.push_str(&format!(
            "  fault       {}{at} ({} answered {})\n\n",
            escape(&f.kind.replace('_', " ")),
            escape(&f.call),
            escape(&f.result)
        ));
    }
    out.push_str(&marks_list(d));
    for n in notes {
        out.push_str(&format!("note: {n}\n"));
    }
    out
}

/// The label regions and render passes with the most GPU time.
fn regions_table(d: &Dump) -> String {
    let mut out = String::new();
    let regions = d.regions_top();
    if !regions.is_empty() {
        out.push_str(&format!(
            "  top regions by gpu time ({} regions)\n  {:<12}{:<36}{:>9}{:>11}{:>11}\n",
            d.regions.len(),
            "scope",
            "label",
            "samples",
            "mean ms",
            "total ms"
        ));
        for (scope, label, n, total) in regions {
            let label = if label.is_empty() {
                "-".to_string()
            } else {
                escape(label)
            };
            out.push_str(&format!(
                "  {:<12}{:<36}{:>9}{:>11.4}{:>11.3}\n",
                scope,
                label,
                n,
                total as f64 / n.max(1) as f64 / 1e6,
                total as f64 / 1e6
            ));
        }
        out.push('\n');
    }
    out
}

/// Adds one pass's counter values to `map` (by label path and counter: passes, sum); the
/// values left out because the map is full.
fn add_pass_values<'a>(
    map: &mut std::collections::BTreeMap<(String, String), (u64, f64)>,
    label: &str,
    values: impl Iterator<Item = (&'a String, &'a Option<f64>)>,
) -> u64 {
    let mut ignored = 0;
    for (name, v) in values {
        let Some(v) = v.filter(|v| v.is_finite()) else { continue };
        let key = (label.to_owned(), name.clone());
        if map.len() >= MAX_COUNTERS * 16 && !map.contains_key(&key) {
            ignored += 1;
            continue;
        }
        let e = map.entry(key).or_default();
        e.0 += 1;
        e.1 += v;
    }
    ignored
}

/// Counter means per render pass or debug group, driver counters then attributed ones.
fn pass_counter_tables(d: &Dump) -> String {
    let mut out = pass_counter_table(
        &d.pass_driver,
        "driver counters by render pass or debug group (means over those that carried each)",
    );
    out.push_str(&pass_counter_table(
        &d.pass_attributed,
        "hardware counters by render pass, attributed by GPU time (means over those that carried each)",
    ));
    out
}

/// One table of [`pass_counter_tables`].
fn pass_counter_table(map: &std::collections::BTreeMap<(String, String), (u64, f64)>, title: &str) -> String {
    let mut out = String::new();
    if !map.is_empty() {
        out.push_str(&format!(
            "  {title}\n  {:<36}{:<26}{:>14}{:>9}\n",
            "label", "counter", "mean", "passes"
        ));
        for ((label, name), (n, sum)) in map.iter().take(PASS_DRIVER_SHOWN) {
            let label = if label.is_empty() {
                "-".to_string()
            } else {
                escape(label)
            };
            out.push_str(&format!(
                "  {:<36}{:<26}{:>14}{:>9}\n",
                label,
                escape(name),
                framescope_core::units::number(sum / (*n).max(1) as f64),
                n
            ));
        }
        if map.len() > PASS_DRIVER_SHOWN {
            out.push_str(&format!("  ... and {} more\n", map.len() - PASS_DRIVER_SHOWN));
        }
        out.push('\n');
    }
    out
}

/// The `ctl` marks, with their time in the run and the frame they came before.
fn marks_list(d: &Dump) -> String {
    let mut out = String::new();
    if !d.marks.is_empty() {
        let t0 = d.header.as_ref().and_then(|h| h.start_ns).unwrap_or(0);
        out.push_str("  marks\n");
        for m in &d.marks {
            let at = m
                .frame
                .map_or("after the last frame".to_string(), |f| format!("before frame {f}"));
            out.push_str(&format!(
                "  {:>10.3} s  {:<24}{}\n",
                m.t_ns.saturating_sub(t0) as f64 / 1e9,
                at,
                escape(&m.label)
            ));
        }
        if d.more_marks > 0 {
            out.push_str(&format!("  ... and {} more\n", d.more_marks));
        }
        out.push('\n');
    }
    out
}

/// The most expensive draw keys, at most ten rows.
fn draws_table(s: &framescope_core::stats::Summary) -> String {
    let mut out = format!(
        "  top draws by gpu time ({} keys{})\n  {:<28}{:>10}{:>16}{:>7}{:>11}{:>11}{:>11}{:>10}\n",
        s.draw_keys,
        if s.draws_untracked > 0 {
            format!(", {} timed draws of further keys not kept", s.draws_untracked)
        } else {
            String::new()
        },
        "label",
        "cmdbuf:draw",
        "pipeline",
        "timed",
        "mean ms",
        "p95 ms",
        "total ms",
        "vertices"
    );
    for d in s.draws_top.iter().take(10) {
        let label = if d.label.is_empty() {
            "-".to_string()
        } else {
            escape(&d.label)
        };
        out.push_str(&format!(
            "  {:<28}{:>10}{:>16}{:>7}{:>11.4}{:>11.4}{:>11.3}{:>10.0}\n",
            label,
            format!("{}:{}", d.cmdbuf, d.draw),
            escape(&d.pipeline),
            d.count,
            d.mean_ns / 1e6,
            d.p95_ns as f64 / 1e6,
            d.total_ns as f64 / 1e6,
            d.vertices
        ));
    }
    out.push('\n');
    out
}

/// What was ignored, one note each.
fn notes_about(d: &Dump) -> Vec<String> {
    let mut notes = Vec::new();
    if let Some(schema) = d.header.as_ref().and_then(|h| h.schema.as_deref()) {
        if schema != framescope_core::SCHEMA_ID {
            notes.push(format!(
                "schema is {}; this framescope reads {}",
                escape(schema),
                framescope_core::SCHEMA_ID
            ));
        }
    }
    if d.header.is_none() {
        notes.push("the header record is missing".into());
    }
    if d.gave_up {
        notes.push(format!(
            "stopped reading after {} MiB without a readable record",
            GIVE_UP >> 20
        ));
    }
    if d.truncated_last_line {
        notes.push("the last line was truncated (the run was cut short) and was ignored".into());
    }
    if d.bad_line_count > 0 {
        let mut list: Vec<String> = d.bad_lines.iter().map(u64::to_string).collect();
        if d.bad_line_count > d.bad_lines.len() as u64 {
            list.push(format!("and {} more", d.bad_line_count - d.bad_lines.len() as u64));
        }
        notes.push(format!(
            "{} line(s) could not be read and were ignored: {}",
            d.bad_line_count,
            list.join(", ")
        ));
    }
    let counted = [
        (
            d.long_lines,
            format!("line(s) longer than {} MiB were skipped", MAX_LINE >> 20),
        ),
        (d.extra_headers, "header record(s) after the first were ignored".into()),
        (
            d.extra_summaries,
            "summary record(s) after the first were ignored".into(),
        ),
        (
            d.out_of_order,
            "frame record(s) not after the previous frame (repeated or out of order) were ignored".into(),
        ),
        (
            d.bad_jumps,
            "frame record(s) whose index skips more frames than nanoseconds passed were ignored".into(),
        ),
        (
            d.bad_frame_times,
            "frame time(s) longer than the time since the previous frame were ignored".into(),
        ),
        (
            d.bad_gpu_times,
            format!(
                "gpu busy time(s) over {} s were ignored",
                MAX_GPU_BUSY_NS / 1_000_000_000
            ),
        ),
        (
            d.ignored_counters,
            format!("counter value(s) named neither in the header's catalogue nor among the first {MAX_COUNTERS} names were ignored"),
        ),
        (
            d.ignored_draws,
            format!("draw sample(s) with a label path over {MAX_LABEL_PATH} bytes or an unreadable pipeline were left out of the draw table"),
        ),
        (
            d.ignored_regions,
            format!("region sample(s) past {MAX_REGIONS} regions or with a label path over {MAX_LABEL_PATH} bytes were left out of the region table"),
        ),
    ];
    for (n, what) in counted {
        if n > 0 {
            notes.push(format!("{n} {what}"));
        }
    }
    notes
}

pub fn main(args: Args) -> i32 {
    // `--html` is dispatched to `html` before this (args.rs), with at least one DUMP.
    let Args {
        json,
        all_counters,
        dumps: paths,
        ..
    } = args;
    // Not required in clap, so that the message keeps framescope's own lower-case usage line.
    if paths.is_empty() {
        return crate::usage::usage_error::<Args>("report", "framescope: report: no DUMP given");
    }
    let several = paths.len() > 1;
    let mut code = 0;
    for (k, path) in paths.iter().enumerate() {
        if several && !json && k > 0 {
            println!();
        }
        code = code.max(report_one(path, json, several, all_counters));
    }
    code
}

/// Reports one dump; 1 when it could not be read.
/// The summary to show for `d` (its own record when the frames agree with it, else one
/// recomputed from them) and the notes about both.
fn summarize(d: &Dump) -> (SummaryRecord, Vec<String>) {
    let mut notes = notes_about(d);
    let mut summary = d.builder.summary();
    summary.draws_top = d.draws.top(TOP, String::clone);
    summary.draw_keys = d.draws.keys() as u64;
    summary.draws_untracked = d.draws.untracked();
    let recomputed = SummaryRecord {
        summary,
        // Lost frames show as gaps in the frame indices.
        dropped_frames: d.gaps,
        dropped_samples: 0,
        produced_by: "report".into(),
        ended_by: "recomputed".into(),
    };
    let rec = match &d.summary {
        Some(s) if s.summary == recomputed.summary => {
            notes.push(format!(
                "summary written by the dump {} (ended by {})",
                escape(&s.produced_by),
                escape(&s.ended_by)
            ));
            s.clone()
        }
        Some(s) => {
            notes.push(format!(
                "the dump's summary record (by {}, ended by {}) disagrees with its frame records \
                 ({} frames, {:.3} s in the record; {} frames, {:.3} s in the frames): \
                 recomputed from the {} frame records",
                escape(&s.produced_by),
                escape(&s.ended_by),
                s.summary.frames,
                s.summary.duration_ns as f64 / 1e9,
                recomputed.summary.frames,
                recomputed.summary.duration_ns as f64 / 1e9,
                d.builder.frames()
            ));
            recomputed
        }
        None => {
            notes.push(format!(
                "no summary record (the run did not end normally): recomputed from {} frame records",
                d.builder.frames()
            ));
            recomputed
        }
    };
    (rec, notes)
}

fn report_one(path: &OsStr, json: bool, several: bool, all: bool) -> i32 {
    let d = match std::fs::File::open(path).and_then(read_dump) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("framescope: cannot read '{}': {e}", show(path));
            return 1;
        }
    };
    if d.header.is_none() && d.builder.frames() == 0 {
        let why = if d.gave_up {
            format!("nothing readable in the first {} MiB", GIVE_UP >> 20)
        } else {
            "no header, no frame records".into()
        };
        eprintln!("framescope: '{}' is not a framescope dump ({why})", show(path));
        return 1;
    }

    let (rec, notes) = summarize(&d);

    if json {
        for n in &notes {
            eprintln!("framescope: {}: {n}", show(path));
        }
        let regions = d.regions_top();
        if !several && regions.is_empty() {
            println!("{}", rec.to_line());
        } else {
            println!("{}", json_value(&rec, &regions, several.then_some(path)));
        }
    } else {
        print!("{}", render(path, &d, &rec, &notes, all));
    }
    0
}

/// `report --json`'s object: the summary record with `regions_top`, and `dump` when given.
fn json_value(rec: &SummaryRecord, regions: &[(&str, &str, u64, u64)], path: Option<&OsStr>) -> serde_json::Value {
    let mut v: serde_json::Value = serde_json::from_str(&rec.to_line()).unwrap_or_default();
    if let Some(o) = v.as_object_mut() {
        if let Some(path) = path {
            o.insert("dump".into(), show(path).into());
        }
        let top: Vec<serde_json::Value> = regions
            .iter()
            .map(|(scope, label, n, total)| {
                serde_json::json!({"scope": scope, "label": label, "samples": n, "total_ns": total})
            })
            .collect();
        o.insert("regions_top".into(), top.into());
    }
    v
}

/// Regions the HTML page lists (its table sorts them; the text report shows the top ten).
const REGIONS_IN_PAGE: usize = 200;

/// What the HTML page shows of a dump beside its frames, read as `report` reads it.
pub struct Overview {
    /// `report --json`'s object for this dump, `regions_top` holding up to 200 regions.
    pub summary: serde_json::Value,
    /// The header record as written (`null` when missing).
    pub header: serde_json::Value,
    /// `mark` records: `{t_ns, frame, label}`.
    pub marks: Vec<serde_json::Value>,
    /// Counter means per render pass or debug group: `{label, counter, source, mean, passes}`,
    /// `source` `driver` (the driver's counters) or `attributed` (PM sampling's per pass).
    pub pass_counters: Vec<serde_json::Value>,
    pub notes: Vec<String>,
}

/// Reads `path` as `report` does. `Err`: why it is no dump.
pub fn overview(path: &OsStr) -> Result<Overview, String> {
    let d = std::fs::File::open(path)
        .and_then(read_dump)
        .map_err(|e| format!("cannot read '{}': {e}", show(path)))?;
    if d.header.is_none() && d.builder.frames() == 0 {
        return Err(format!("'{}' is not a framescope dump", show(path)));
    }
    let (rec, notes) = summarize(&d);
    let marks = d
        .marks
        .iter()
        .map(|m| serde_json::json!({"t_ns": m.t_ns, "frame": m.frame, "label": m.label}))
        .collect();
    let pass_counters = [("driver", &d.pass_driver), ("attributed", &d.pass_attributed)]
        .into_iter()
        .flat_map(|(source, map)| {
            map.iter().map(move |((label, counter), (n, sum))| {
                serde_json::json!({
                    "label": label, "counter": counter, "source": source,
                    "mean": sum / (*n).max(1) as f64, "passes": n,
                })
            })
        })
        .collect();
    Ok(Overview {
        summary: json_value(&rec, &d.regions_by_time(REGIONS_IN_PAGE), None),
        header: d.header_raw.clone().unwrap_or_default(),
        marks,
        pass_counters,
        notes,
    })
}

/// The summary line that completes a dump left without one (its app ended without writing
/// it: a signal, a crash), recomputed from its frames as `report` does, with `ended_by`
/// saying how the app ended. `None` when the file has its summary or is no dump. The file is
/// read without following a link.
pub fn completion(path: &std::path::Path, ended_by: &str) -> std::io::Result<Option<String>> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)?;
    let d = read_dump(file)?;
    if d.header.is_none() || d.summary.is_some() {
        return Ok(None);
    }
    let (mut rec, _) = summarize(&d);
    rec.produced_by = "framescope run".into();
    rec.ended_by = ended_by.into();
    Ok(Some(rec.to_line()))
}

/// For the fuzz target: reads `data` as a dump and renders its report, as `report` would.
pub fn fuzz_one(data: &[u8]) {
    let Ok(d) = read_dump(data) else { return };
    let (rec, notes) = summarize(&d);
    let _ = render(std::ffi::OsStr::new("fuzz"), &d, &rec, &notes, false);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    const FRAME0: &str = r#"{"type":"frame","frame":0,"t_ns":5}"#;

    fn read(s: &[u8]) -> Dump {
        read_dump(s).unwrap()
    }

    #[test]
    fn per_pass_counters_are_averaged_by_label_for_the_driver_and_attributed_ones() {
        let frame = |i: u64, dc: f64, pm: f64| {
            format!(
                r#"{{"type":"frame","frame":{i},"t_ns":{},"samples":[{{"scope":"renderpass","label":"Main","gpu_ns":1000,"driver_counters":{{"group":0,"reused":false,"counters":{{"VS invocations":{dc}}}}},"counters":{{"pm_sm_active_pct":{pm}}}}},{{"scope":"renderpass","label":"Main","gpu_ns":1000,"overwritten":true,"counters":{{"pm_sm_active_pct":1000}}}}]}}"#,
                i * 1000 + 5
            )
        };
        let text = format!("{}\n{}\n", frame(0, 10.0, 40.0), frame(1, 30.0, 60.0));
        let d = read(text.as_bytes());
        assert_eq!(d.pass_driver[&("Main".into(), "VS invocations".into())], (2, 40.0));
        // The overwritten sample's values are not the pass's.
        assert_eq!(
            d.pass_attributed[&("Main".into(), "pm_sm_active_pct".into())],
            (2, 100.0)
        );
        let tables = pass_counter_tables(&d);
        assert!(tables.contains("driver counters by render pass"), "{tables}");
        assert!(
            tables.contains("hardware counters by render pass, attributed by GPU time"),
            "{tables}"
        );
        assert!(tables.contains("pm_sm_active_pct"), "{tables}");
    }

    #[test]
    fn blank_lines_count_in_line_numbers() {
        let d = read(format!("\n\nnot json\n\n{FRAME0}\n").as_bytes());
        assert_eq!(d.bad_lines, [3]);
        assert_eq!(d.bad_line_count, 1);
        assert!(!d.truncated_last_line);
        assert_eq!(d.builder.frames(), 1);
    }

    #[test]
    fn a_bad_last_line_is_the_truncated_one_even_with_blank_lines_after_it() {
        let d = read(format!("{FRAME0}\n{{\"type\":\"fra\n\n\r\n").as_bytes());
        assert!(d.truncated_last_line);
        assert_eq!(d.bad_line_count, 0);
    }

    #[test]
    fn endless_blank_lines_stop_after_the_give_up_budget() {
        const MIB: u64 = 1 << 20;
        let d = read_dump_giving_up_after(std::io::repeat(b'\n'), MIB).unwrap();
        assert!(d.gave_up);
        let d = read_dump_giving_up_after(std::io::repeat(b'x'), MIB).unwrap();
        assert!(d.gave_up);
        // A record resets the budget: the same bytes after one frame are read to the end.
        let input = FRAME0.as_bytes().chain(std::io::repeat(b'\n').take(MIB - 1024));
        let d = read_dump_giving_up_after(input, MIB).unwrap();
        assert!(!d.gave_up);
        assert_eq!(d.builder.frames(), 1);
    }

    #[test]
    fn a_clock_swinging_back_and_forth_cannot_overflow_the_sums() {
        let max = u64::MAX;
        let mut text = String::new();
        for i in 0..10u64 {
            let t = if i % 2 == 0 { 0 } else { max };
            text += &format!("{{\"type\":\"frame\",\"frame\":{i},\"t_ns\":{t},\"cpu_frame_ns\":{max}}}\n");
        }
        let d = read(text.as_bytes());
        // Overflowing sums panic here in a debug build.
        let s = d.builder.summary();
        assert_eq!(d.builder.frames(), 10);
        // Only frame 1's fits: frame 0 has no time before it, the even frames went back to
        // 0, and frame 3's would overflow the sum.
        assert_eq!(s.frame_time_ns.map(|f| f.count), Some(1));
        assert_eq!(d.bad_frame_times, 9);
    }

    #[test]
    fn counters_are_summarised_by_name_and_unknown_names_are_counted() {
        let header =
            r#"{"type":"header","counters":[{"name":"gpu_util_pct","unit":"%","source":"nvml","scope":"device"}]}"#;
        let f = |i: u64, v: &str| {
            format!(
                r#"{{"type":"frame","frame":{i},"t_ns":{},"counters":{{"gpu_util_pct":{v},"forged":1}}}}"#,
                1000 + i
            )
        };
        let text = [header.to_string(), f(0, "10"), f(1, "null"), f(2, "30")].join("\n") + "\n";
        let d = read(text.as_bytes());
        let s = d.builder.summary();
        let c = &s.counters["gpu_util_pct"];
        assert_eq!((c.frames, c.mean, c.min, c.max), (2, 20.0, 10.0, 30.0));
        assert!(!s.counters.contains_key("forged"));
        assert_eq!(d.ignored_counters, 3);
        let rec = SummaryRecord {
            summary: s,
            dropped_frames: 0,
            dropped_samples: 0,
            produced_by: "report".into(),
            ended_by: "recomputed".into(),
        };
        let out = render(OsStr::new("x"), &d, &rec, &[], false);
        assert!(out.contains("gpu_util_pct"), "{out}");
        assert!(
            out.lines()
                .any(|l| l.contains("gpu_util_pct") && l.contains("20.000") && l.contains('%')),
            "{out}"
        );
    }

    #[test]
    fn a_fault_record_is_named_in_the_report() {
        let fault = r#"{"type":"fault","kind":"device_lost","call":"vkQueueSubmit","result":"VK_ERROR_DEVICE_LOST","frame":3,"t_ns":9}"#;
        let d = read(format!("{FRAME0}\n{fault}\n").as_bytes());
        assert_eq!(d.bad_line_count, 0);
        let rec = SummaryRecord {
            summary: d.builder.summary(),
            dropped_frames: 0,
            dropped_samples: 0,
            produced_by: "report".into(),
            ended_by: "recomputed".into(),
        };
        let out = render(OsStr::new("x"), &d, &rec, &[], false);
        assert!(
            out.contains("fault       device lost after frame 3 (vkQueueSubmit answered VK_ERROR_DEVICE_LOST)"),
            "{out}"
        );
    }

    #[test]
    fn wrong_types_make_a_bad_line_not_a_panic() {
        let lines = [
            r#"{"type":"frame","frame":-1,"t_ns":5}"#,
            r#"{"type":"frame","frame":1e30,"t_ns":5}"#,
            r#"{"type":"frame","frame":"0","t_ns":5}"#,
            r#"{"type":"header","exe":7}"#,
            r#"{"type":"summary","frames":"many"}"#,
            r#"{"type":17}"#,
            r#"[1,2,3]"#,
            r#""frame""#,
        ];
        let d = read((lines.join("\n") + "\n" + FRAME0 + "\n").as_bytes());
        assert_eq!(d.bad_line_count, lines.len() as u64);
        assert_eq!(d.builder.frames(), 1);
    }
}
