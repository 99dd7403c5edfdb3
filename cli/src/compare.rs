//! `framescope compare BASE NEW`: a regression gate between two runs (or two sets of runs).
//!
//! Each metric is a per-frame series (frame time, GPU busy time, a counter, or the GPU time of
//! a debug-label region); its mean on each side is compared with an interval (99 % unless
//! `--confidence` says otherwise) from a
//! moving-block bootstrap ([`crate::bootstrap`]). A time metric is a regression when the whole
//! interval lies above the threshold, so noise alone does not fail a gate; a counter, whose
//! good direction framescope does not know, fails the gate when the interval lies wholly
//! beyond the threshold either way. Dumps are streamed (bounded memory and
//! time, [`frame_lines`]); anything that makes a side unusable exits 2 with the file and line.

use crate::bootstrap::{self, Change, Method, Statistic};
use crate::frame_lines::{self, FrameLine};
use crate::text::{escape, show};
use std::ffi::{OsStr, OsString};
use std::fmt::Write;

/// `compare`'s usage lines (clap's own would not show the two forms).
pub const USAGE: &str = "\
framescope compare [OPTIONS] BASE NEW
       framescope compare [OPTIONS] BASE... -- NEW...";

/// `compare --help`'s description.
pub const ABOUT: &str = "\
Compares per-frame metrics of two runs (or two sets of runs, whose frames are pooled) and
exits 0 when nothing regressed, 1 when a metric regressed significantly beyond the threshold,
2 when an input is unusable (the message names the file and line).";

/// How the interval and verdict are made, after the options in `compare --help`.
pub const AFTER_LONG_HELP: &str = "\
The statistic (the mean over frames unless --stat says otherwise) is computed over each
side's pooled frames; its change is new/base - 1. The interval (99 % by default: a gate
that runs on every change should rarely fail on noise) comes from a moving-block bootstrap (2000 resamples, fixed seed, so the same dumps give the same
answer): blocks of consecutive frames are resampled, not single frames, because frame times
are autocorrelated and single-frame resampling would give intervals that are too narrow. The
block length is the larger of n^(1/3) and the lag where the frames' autocorrelation dies
out; blocks never span two runs. With one run a side the interval is the resamples'
percentiles; it covers frame noise only, not the difference between runs of one
configuration, and a gate on single runs fails more often than its confidence says. With
several runs on both sides the runs are resampled too (a two-level bootstrap) and the runs
are the units: the interval is Student's t on log(new/base), with each side's
variance from the resamples and Welch's degrees of freedom (at most runs - 1 a side), so
few runs give a wide interval; 3 runs a side is the least that gates, 5 or more give a
useful width. A time metric (frame_time, gpu_busy, a label) regresses when the whole
interval is above +threshold; a counter fails the gate when the whole interval is beyond
+-threshold (framescope does not know which way is better for it). The rates (dropped,
stutters) are compared by difference, not ratio (a base run has none of them, often): the
change is in percentage points, with Newcombe's hybrid Wilson interval, and --threshold is
in points too (--threshold 0.5% fails a gate when drops rose by more than half a point).

examples:
  framescope compare before.jsonl after.jsonl
  framescope compare --threshold 3% --skip-seconds 2 --metric gpu_busy a1.jsonl a2.jsonl a3.jsonl -- b1.jsonl b2.jsonl b3.jsonl
  framescope compare --metric Frame/Shadows --metric gpu_util_pct base.jsonl new.jsonl
  framescope compare --metric display_latency --metric dropped --threshold 1% base.jsonl new.jsonl
  framescope compare --stat p99 --skip-frames 100 a1.jsonl a2.jsonl a3.jsonl -- b1.jsonl b2.jsonl b3.jsonl";

pub const EXAMPLES: &str = "\
examples:
  framescope compare before.jsonl after.jsonl
  framescope compare --threshold 3% --skip-seconds 2 --metric gpu_busy a1.jsonl a2.jsonl a3.jsonl -- b1.jsonl b2.jsonl b3.jsonl";

// `compare`'s options (a plain comment: a doc comment would become clap's about text).
#[derive(clap::Args, Debug)]
#[command(args_override_self = true)]
pub struct Args {
    /// frame_time (the CPU frame time, present to present), gpu_busy, display_latency (frame
    /// start to the screen), dropped (share of frames replaced before the screen), stutters
    /// (share of frames that were stutters), a counter name (see `framescope counters`) or a
    /// debug-label region (its path, e.g. Frame/Shadows, or its last name); repeatable.
    /// Default: frame_time, and gpu_busy where both sides have it
    #[arg(long = "metric", value_name = "NAME", value_parser = crate::usage::text())]
    pub metrics: Vec<String>,
    /// the statistic of each side's frames: mean (default), median, or a percentile pNN (p90,
    /// p95, p99, p99.9: the frame-time spikes that 1 % lows show); a percentile needs
    /// 10/(1-q) frames a side (p99: 1000)
    #[arg(long, value_name = "S", value_parser = stat_arg)]
    pub stat: Option<Statistic>,
    /// the smallest change that counts, in percent (default 5%)
    #[arg(long, value_name = "P", value_parser = threshold_arg)]
    pub threshold: Option<f64>,
    /// the interval's confidence, 80 to 99.9 percent (default 99%)
    #[arg(long, value_name = "C", value_parser = confidence_arg)]
    pub confidence: Option<f64>,
    /// leave out each run's first N frames (shader compiles, loading)
    #[arg(long, value_name = "N", value_parser = skip_frames_arg, conflicts_with = "skip_seconds")]
    pub skip_frames: Option<u64>,
    /// leave out each run's first S seconds
    #[arg(long, value_name = "S", value_parser = skip_seconds_arg)]
    pub skip_seconds: Option<f64>,
    /// one JSON object instead of the table
    #[arg(long)]
    pub json: bool,
    /// BASE and NEW dumps, or the BASE dumps when NEW dumps follow `--`
    #[arg(value_name = "BASE")]
    pub dumps: Vec<OsString>,
    /// the NEW dumps, after `--`
    #[arg(last = true, value_name = "NEW")]
    pub new: Vec<OsString>,
}

/// Values kept per metric and run: past this the rest of the run is left out (and said so).
const MAX_VALUES: usize = 4 << 20;
/// Metrics per comparison.
const MAX_METRICS: usize = 32;
/// Fewest values per side for an interval worth printing.
const MIN_VALUES: usize = 20;

#[derive(Clone, Debug, PartialEq)]
enum Metric {
    FrameTime,
    GpuBusy,
    /// `display_latency_ns`: frame start to the screen.
    DisplayLatency,
    /// The share of displayed-or-dropped frames that were dropped ([`crate::rates`]).
    Dropped,
    /// The share of frames that were stutters.
    Stutters,
    /// A counter or a label region, whichever the dumps have.
    Named(String),
}

impl Metric {
    fn parse(s: &str) -> Metric {
        match s {
            "frame_time" => Metric::FrameTime,
            "gpu_busy" => Metric::GpuBusy,
            "display_latency" => Metric::DisplayLatency,
            "dropped" => Metric::Dropped,
            "stutters" => Metric::Stutters,
            _ => Metric::Named(s.to_owned()),
        }
    }

    fn name(&self) -> &str {
        match self {
            Metric::FrameTime => "frame_time",
            Metric::GpuBusy => "gpu_busy",
            Metric::DisplayLatency => "display_latency",
            Metric::Dropped => "dropped",
            Metric::Stutters => "stutters",
            Metric::Named(n) => n,
        }
    }

    /// A share of frames, compared by difference rather than ratio.
    fn is_rate(&self) -> bool {
        matches!(self, Metric::Dropped | Metric::Stutters)
    }

    /// Not a counter or label region, whatever the dumps hold.
    fn is_builtin(&self) -> bool {
        !matches!(self, Metric::Named(_))
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Skip {
    Frames(u64),
    Seconds(f64),
}

#[derive(Debug, PartialEq)]
struct Options {
    metrics: Vec<Metric>,
    /// Explicit metrics: one a side lacks is an error (defaults drop gpu_busy instead).
    explicit: bool,
    threshold: f64,
    /// Of the interval, 0 to 1.
    confidence: f64,
    stat: Statistic,
    skip: Option<Skip>,
    json: bool,
    base: Vec<OsString>,
    new: Vec<OsString>,
}

/// `mean`, `median` or `pNN` (a percentile strictly between 0 and 100).
fn parse_stat(s: &str) -> Option<Statistic> {
    match s {
        "mean" => Some(Statistic::Mean),
        "median" => Some(Statistic::Quantile(0.5)),
        _ => {
            let p = s.strip_prefix('p')?.parse::<f64>().ok()?;
            (p > 0.0 && p < 100.0).then_some(Statistic::Quantile(p / 100.0))
        }
    }
}

/// The statistic's name as the table and JSON show it.
fn stat_name(s: Statistic) -> String {
    match s {
        Statistic::Mean => "mean".into(),
        Statistic::Quantile(0.5) => "median".into(),
        // Rounded: 99.9 / 100 is not exactly 0.999.
        Statistic::Quantile(q) => format!("p{}", (q * 1e5).round() / 1e3),
    }
}

/// Fewest values a side for the statistic: about ten beyond a quantile's rank, so its
/// resamples vary.
fn min_values(s: Statistic) -> usize {
    match s {
        Statistic::Mean => MIN_VALUES,
        Statistic::Quantile(q) => ((10.0 / q.min(1.0 - q) - 1e-6).ceil() as usize).max(MIN_VALUES),
    }
}

fn stat_arg(s: &str) -> Result<Statistic, String> {
    parse_stat(s).ok_or_else(|| format!("'{}' is not mean, median or pNN (e.g. p99)", escape(s)))
}

fn threshold_arg(v: &str) -> Result<f64, String> {
    match v.strip_suffix('%').unwrap_or(v).trim().parse::<f64>().ok() {
        Some(t) if t.is_finite() && (0.0..1000.0).contains(&t) => Ok(t / 100.0),
        _ => Err(format!("'{}' is not a percentage (e.g. 5%)", escape(v))),
    }
}

fn confidence_arg(v: &str) -> Result<f64, String> {
    match v.strip_suffix('%').unwrap_or(v).trim().parse::<f64>().ok() {
        Some(c) if (80.0..=99.9).contains(&c) => Ok(c / 100.0),
        _ => Err(format!("'{}' is not a percentage from 80 to 99.9", escape(v))),
    }
}

fn skip_frames_arg(v: &str) -> Result<u64, String> {
    v.parse::<u64>()
        .map_err(|_| format!("'{}' is not a frame count", escape(v)))
}

fn skip_seconds_arg(v: &str) -> Result<f64, String> {
    let s = v.parse::<f64>().ok().filter(|s| s.is_finite() && *s >= 0.0 && *s < 1e9);
    s.ok_or_else(|| format!("'{}' is not a number of seconds", escape(v)))
}

/// The parsed options checked together: which dumps are which side, the metrics.
fn options(a: Args) -> Result<Options, String> {
    if a.metrics.iter().any(String::is_empty) {
        return Err("--metric needs a name".into());
    }
    if a.metrics.len() > MAX_METRICS {
        return Err(format!("at most {MAX_METRICS} metrics"));
    }
    let explicit = !a.metrics.is_empty();
    let mut metrics: Vec<Metric> = a.metrics.iter().map(|m| Metric::parse(m)).collect();
    if metrics.is_empty() {
        metrics = vec![Metric::FrameTime, Metric::GpuBusy];
    }
    let skip = match (a.skip_frames, a.skip_seconds) {
        (Some(n), _) => Some(Skip::Frames(n)),
        (None, Some(s)) => Some(Skip::Seconds(s)),
        (None, None) => None,
    };
    let (mut base, mut new) = (a.dumps, a.new);
    let after_dashes = !new.is_empty();
    if !after_dashes && base.len() == 2 {
        new.extend(base.pop());
    }
    if base.is_empty() || new.is_empty() {
        return Err("needs BASE and NEW dumps (several per side: BASE... -- NEW...)".into());
    }
    if !after_dashes && base.len() > 1 {
        return Err("several dumps per side need '--' between BASE... and NEW...".into());
    }
    Ok(Options {
        metrics,
        explicit,
        threshold: a.threshold.unwrap_or(0.05),
        confidence: a.confidence.unwrap_or(0.99),
        stat: a.stat.unwrap_or(Statistic::Mean),
        skip,
        json: a.json,
        base,
        new,
    })
}

/// Whether a label sample's path `path` is the region `name`: the whole path, or its last
/// name when `name` has no `/`.
fn label_matches(path: &str, name: &str) -> bool {
    path == name || (!name.contains('/') && path.rsplit('/').next() == Some(name))
}

/// One metric's values in one run.
#[derive(Default)]
struct Series {
    /// For a named metric: its values as a counter and as a label region.
    values: Vec<f64>,
    labels: Vec<f64>,
    full: bool,
}

impl Series {
    fn push(v: &mut Vec<f64>, full: &mut bool, x: f64) {
        if v.len() < MAX_VALUES {
            v.push(x);
        } else {
            *full = true;
        }
    }
}

/// A run's series, one per metric, and what is worth saying about it.
struct Run {
    series: Vec<Series>,
    notes: Vec<String>,
}

/// Reads `path`'s frames into one series per metric. `Err`: why the run is unusable, naming
/// the file (and line).
fn read_run(path: &OsStr, metrics: &[Metric], skip: Option<Skip>) -> Result<Run, String> {
    let mut series: Vec<Series> = metrics.iter().map(|_| Series::default()).collect();
    let (mut frames, mut used) = (0u64, 0u64);
    let mut first_t: Option<u64> = None;
    let scan = frame_lines::scan(path, |f, t| {
        frames += 1;
        let t0 = *first_t.get_or_insert(t);
        let skipped = match skip {
            Some(Skip::Frames(k)) => frames <= k,
            Some(Skip::Seconds(s)) => ((t - t0) as f64) < s * 1e9,
            None => false,
        };
        if !skipped {
            used += 1;
            add_frame(f, metrics, &mut series);
        }
    })?;
    let p = show(path);
    let mut notes = scan.notes(path);
    if used == 0 {
        return Err(format!(
            "'{p}': no frames left to compare ({frames} frames, all skipped or none)"
        ));
    }
    if series.iter().any(|s| s.full) {
        notes.push(format!(
            "'{p}': only the first {MAX_VALUES} values of a metric were used"
        ));
    }
    Ok(Run { series, notes })
}

fn add_frame(f: &FrameLine, metrics: &[Metric], series: &mut [Series]) {
    for (m, s) in metrics.iter().zip(series.iter_mut()) {
        match m {
            Metric::FrameTime => {
                if let Some(v) = f.cpu_frame_ns {
                    Series::push(&mut s.values, &mut s.full, v as f64);
                }
            }
            Metric::GpuBusy => {
                if let Some(v) = f.gpu_busy_ns {
                    Series::push(&mut s.values, &mut s.full, v as f64);
                }
            }
            Metric::DisplayLatency => {
                if let Some(v) = f.display_latency_ns {
                    Series::push(&mut s.values, &mut s.full, v as f64);
                }
            }
            Metric::Dropped => match f.display.as_deref() {
                Some("displayed") => Series::push(&mut s.values, &mut s.full, 0.0),
                Some("dropped") => Series::push(&mut s.values, &mut s.full, 1.0),
                _ => {}
            },
            Metric::Stutters => {
                if f.cpu_frame_ns.is_some() {
                    Series::push(&mut s.values, &mut s.full, f64::from(u8::from(f.stutter)));
                }
            }
            Metric::Named(name) => {
                let counter = f
                    .counters
                    .as_ref()
                    .and_then(|c| c.get(name.as_str()))
                    .copied()
                    .flatten();
                if let Some(v) = counter.filter(|v| v.is_finite()) {
                    Series::push(&mut s.values, &mut s.full, v);
                }
                let mut label = None;
                for x in &f.samples {
                    let is_label = x.scope.as_deref() == Some("label") && !x.overwritten;
                    if let (true, Some(ns), Some(path)) = (is_label, x.gpu_ns, x.label.as_deref()) {
                        if label_matches(path, name) {
                            *label.get_or_insert(0.0) += ns as f64;
                        }
                    }
                }
                if let Some(v) = label {
                    Series::push(&mut s.labels, &mut s.full, v);
                }
            }
        }
    }
}

/// What a metric turned out to be, which way is worse, and its verdict.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Verdict {
    Regression,
    Improvement,
    /// A counter moved beyond the threshold (direction unknown): fails the gate.
    Changed,
    NoChange,
}

impl Verdict {
    fn of(c: &Change, threshold: f64, time_like: bool) -> Verdict {
        match (time_like, c.low > threshold, c.high < -threshold) {
            (true, true, _) => Verdict::Regression,
            (true, _, true) => Verdict::Improvement,
            (false, true, _) | (false, _, true) => Verdict::Changed,
            _ => Verdict::NoChange,
        }
    }

    fn fails(self) -> bool {
        matches!(self, Verdict::Regression | Verdict::Changed)
    }

    fn name(self) -> &'static str {
        match self {
            Verdict::Regression => "REGRESSION",
            Verdict::Improvement => "improvement",
            Verdict::Changed => "CHANGED",
            Verdict::NoChange => "no significant change beyond the threshold",
        }
    }
}

struct Row {
    metric: String,
    what: &'static str,
    unit: &'static str,
    change: Change,
    verdict: Verdict,
    frames: (usize, usize),
}

/// The series of metric `i` on a side: the counter's values where any run has them, else the
/// label region's. `Err` names the first run that has neither.
fn side_series(
    runs: &[Run],
    paths: &[OsString],
    i: usize,
    m: &Metric,
) -> Result<(Vec<Vec<f64>>, &'static str), String> {
    let counter = m.is_builtin() || runs.iter().any(|r| !r.series[i].values.is_empty());
    let mut out = Vec::new();
    for (r, p) in runs.iter().zip(paths) {
        let s = &r.series[i];
        let v = if counter { &s.values } else { &s.labels };
        if v.is_empty() {
            let what = match m {
                Metric::FrameTime => "frame times (cpu_frame_ns)",
                Metric::GpuBusy => "GPU busy times (gpu_busy_ns)",
                Metric::DisplayLatency => "display latencies (display_latency_ns: no display-time source)",
                Metric::Dropped => "displayed or dropped frames (display: no display-time source)",
                Metric::Stutters => "frame times to judge stutters by",
                Metric::Named(_) => "values (no counter and no label region of that name)",
            };
            return Err(format!("'{}' has no {what} for metric '{}'", show(p), escape(m.name())));
        }
        out.push(v.clone());
    }
    let what = match m {
        Metric::FrameTime => "frame time",
        Metric::GpuBusy => "GPU busy",
        Metric::DisplayLatency => "display latency",
        Metric::Dropped | Metric::Stutters => "rate",
        Metric::Named(_) if counter => "counter",
        Metric::Named(_) => "label GPU time",
    };
    Ok((out, what))
}

/// Reads every run of a side; the first unusable one ends the comparison.
fn read_side(paths: &[OsString], o: &Options) -> Result<Vec<Run>, String> {
    paths.iter().map(|p| read_run(p, &o.metrics, o.skip)).collect()
}

fn compare(o: &Options) -> Result<(Vec<Row>, Vec<String>), String> {
    let base = read_side(&o.base, o)?;
    let new = read_side(&o.new, o)?;
    let mut notes: Vec<String> = base.iter().chain(&new).flat_map(|r| r.notes.clone()).collect();
    if base.len() == 1 || new.len() == 1 {
        notes.push(
            "one run a side: the interval covers frame-to-frame noise, not the differences between \
             runs of one configuration; pass several runs a side (BASE... -- NEW...) for a gate that does"
                .into(),
        );
    }
    if base.len().min(new.len()) == 2 {
        notes.push(
            "two runs on a side give the run-level interval one degree of freedom there, so it is \
             wide and the gate rarely fails; pass 3 or more runs a side"
                .into(),
        );
    }
    let mut rows = Vec::new();
    for (i, m) in o.metrics.iter().enumerate() {
        let sides = side_series(&base, &o.base, i, m).and_then(|b| Ok((b, side_series(&new, &o.new, i, m)?)));
        let ((b, what), (nw, what_new)) = match sides {
            Ok(s) => s,
            // A default gpu_busy that a side lacks (a GL dump without GPU timing) is left out.
            Err(e) if !o.explicit && *m == Metric::GpuBusy => {
                notes.push(format!("gpu_busy left out: {e}"));
                continue;
            }
            Err(e) => return Err(e),
        };
        if what != what_new {
            return Err(format!(
                "metric '{}' is a {what} in BASE but a {what_new} in NEW",
                escape(m.name())
            ));
        }
        let frames = (b.iter().map(Vec::len).sum(), nw.iter().map(Vec::len).sum());
        let least = min_values(o.stat);
        if frames.0 < least || frames.1 < least {
            return Err(format!(
                "metric '{}': {} values in BASE and {} in NEW; at least {least} a side are needed for the {}",
                escape(m.name()),
                frames.0,
                frames.1,
                stat_name(o.stat)
            ));
        }
        if m.is_rate() {
            let events = |runs: &[Vec<f64>]| runs.iter().flatten().filter(|&&v| v > 0.0).count() as u64;
            let change = crate::rates::change(
                (events(&b), frames.0 as u64),
                (events(&nw), frames.1 as u64),
                o.confidence,
            )
            .ok_or_else(|| format!("metric '{}': a side has no frames", m.name()))?;
            rows.push(Row {
                metric: m.name().to_owned(),
                what,
                unit: "%",
                verdict: Verdict::of(&change, o.threshold, true),
                change,
                frames,
            });
            continue;
        }
        let change = bootstrap::change(&b, &nw, o.confidence, o.stat).map_err(|side| {
            format!(
                "metric '{}': {}'s {} is zero, so there is no relative change to give",
                escape(m.name()),
                side.name(),
                stat_name(o.stat)
            )
        })?;
        let time_like = what != "counter";
        rows.push(Row {
            metric: m.name().to_owned(),
            what,
            unit: if time_like { "ms" } else { "" },
            verdict: Verdict::of(&change, o.threshold, time_like),
            change,
            frames,
        });
    }
    Ok((rows, notes))
}

fn pct(x: f64) -> String {
    format!("{:+.1}%", x * 100.0)
}

fn value(x: f64, unit: &str) -> String {
    match unit {
        "ms" => format!("{:.3} ms", x / 1e6),
        "%" => format!("{:.2}%", x * 100.0),
        _ => format!("{x:.4}"),
    }
}

/// A change as the table shows it: relative, or in percentage points for a rate.
fn change_text(x: f64, unit: &str) -> String {
    if unit == "%" {
        format!("{:+.2}pp", x * 100.0)
    } else {
        pct(x)
    }
}

fn render(rows: &[Row], o: &Options) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "BASE: {} run(s), NEW: {} run(s); statistic {}; threshold {}; {} % intervals {}",
        o.base.len(),
        o.new.len(),
        stat_name(o.stat),
        pct(o.threshold).trim_start_matches('+'),
        o.confidence * 100.0,
        match rows.first().map(|r| r.change.method) {
            Some(Method::RunsT { .. }) => "by Student's t over runs (moving-block bootstrap variances)",
            _ => "by moving-block bootstrap percentiles",
        }
    );
    let _ = writeln!(
        s,
        "{:<24} {:>14} {:>14} {:>9}  {:<19} {:>11}  verdict",
        "metric",
        format!("base {}", stat_name(o.stat)),
        format!("new {}", stat_name(o.stat)),
        "change",
        "interval",
        "frames"
    );
    for r in rows {
        let c = &r.change;
        let _ = writeln!(
            s,
            "{:<24} {:>14} {:>14} {:>9}  {:<19} {:>11}  {}",
            format!("{} ({})", escape(&r.metric), r.what),
            value(c.base_value, r.unit),
            value(c.new_value, r.unit),
            change_text(c.change, r.unit),
            format!("[{}, {}]", change_text(c.low, r.unit), change_text(c.high, r.unit)),
            format!("{}/{}", r.frames.0, r.frames.1),
            r.verdict.name()
        );
    }
    s
}

fn to_json(rows: &[Row], o: &Options, failed: bool) -> serde_json::Value {
    let metrics: Vec<serde_json::Value> = rows
        .iter()
        .map(|r| {
            serde_json::json!({
                "metric": r.metric,
                "kind": r.what,
                "base": r.change.base_value,
                "new": r.change.new_value,
                "change": r.change.change,
                "ci_low": r.change.low,
                "ci_high": r.change.high,
                "block_frames": [r.change.block.0, r.change.block.1],
                "interval_method": match r.change.method {
                    Method::Percentile => "bootstrap_percentile",
                    Method::RunsT { .. } => "runs_t",
                    Method::Wilson => "newcombe_wilson",
                },
                "df": match r.change.method {
                    Method::Percentile | Method::Wilson => None,
                    Method::RunsT { df } => Some(df),
                },
                "frames": [r.frames.0, r.frames.1],
                "verdict": match r.verdict {
                    Verdict::Regression => "regression",
                    Verdict::Improvement => "improvement",
                    Verdict::Changed => "changed",
                    Verdict::NoChange => "no_change",
                },
            })
        })
        .collect();
    serde_json::json!({
        "threshold": o.threshold,
        "confidence": o.confidence,
        "statistic": stat_name(o.stat),
        "base_runs": o.base.len(),
        "new_runs": o.new.len(),
        "regression": failed,
        "metrics": metrics,
    })
}

/// `compare --json BASE NEW` with the default options, for the HTML report's comparison:
/// the same object and the exit status `compare` gives (0, or 1 for a regression). `Err`:
/// what `compare` would print before exiting 2.
pub fn default_json(base: &OsStr, new: &OsStr) -> Result<(serde_json::Value, i32), String> {
    let o = Options {
        metrics: vec![Metric::FrameTime, Metric::GpuBusy],
        explicit: false,
        threshold: 0.05,
        confidence: 0.99,
        stat: Statistic::Mean,
        skip: None,
        json: true,
        base: vec![base.to_owned()],
        new: vec![new.to_owned()],
    };
    let (rows, _) = compare(&o)?;
    let failed = rows.iter().any(|r| r.verdict.fails());
    Ok((to_json(&rows, &o, failed), i32::from(failed)))
}

pub fn main(args: Args) -> i32 {
    let o = match options(args) {
        Ok(o) => o,
        Err(e) => return crate::usage::usage_error::<Args>("compare", &format!("framescope: compare: {e}")),
    };
    let (rows, notes) = match compare(&o) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("framescope: compare: {e}");
            return 2;
        }
    };
    for n in &notes {
        eprintln!("framescope: compare: {}", escape(n));
    }
    let failed = rows.iter().any(|r| r.verdict.fails());
    if o.json {
        println!("{}", to_json(&rows, &o, failed));
    } else {
        print!("{}", render(&rows, &o));
    }
    i32::from(failed)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `framescope compare s...` through clap, then [`options`].
    fn parse_args(s: &[&str]) -> Result<Options, String> {
        use clap::Parser;
        /// `framescope compare` alone, as the command line parses it.
        #[derive(Parser)]
        #[command(name = "framescope compare")]
        struct Line {
            #[command(flatten)]
            args: Args,
        }
        let argv = ["framescope compare"].iter().chain(s);
        options(Line::try_parse_from(argv).map_err(|e| e.to_string())?.args)
    }

    #[test]
    fn arguments_split_into_sides_and_options() {
        let o = parse_args(&["--threshold", "3%", "a", "b"]).unwrap();
        assert_eq!((o.base.len(), o.new.len(), o.threshold), (1, 1, 0.03));
        assert_eq!(o.metrics, [Metric::FrameTime, Metric::GpuBusy]);
        let o = parse_args(&["--metric", "Frame/Shadows", "a1", "a2", "--", "b1", "--json"]).unwrap();
        assert_eq!((o.base.len(), o.new.len()), (2, 2), "after -- everything is a path");
        assert_eq!(o.metrics, [Metric::Named("Frame/Shadows".into())]);
        assert!(o.explicit);
        assert_eq!(o.stat, Statistic::Mean);
        let o = parse_args(&["--stat", "p99.9", "a", "b"]).unwrap();
        assert!(matches!(o.stat, Statistic::Quantile(q) if (q - 0.999).abs() < 1e-12));
        assert_eq!(stat_name(o.stat), "p99.9");
        assert_eq!(min_values(o.stat), 10_000);
        assert_eq!(
            parse_args(&["--stat", "median", "a", "b"]).unwrap().stat,
            Statistic::Quantile(0.5)
        );
        for bad in [
            &["a"][..],
            &["a", "b", "c"],
            &["--threshold", "x", "a", "b"],
            &["--threshold", "-1", "a", "b"],
            &["--skip-frames", "-3", "a", "b"],
            &["--skip-seconds", "nan", "a", "b"],
            &["--confidence", "50", "a", "b"],
            &["--stat", "p100", "a", "b"],
            &["--stat", "p0", "a", "b"],
            &["--stat", "max", "a", "b"],
            &["--metric"],
            &["--bogus", "a", "b"],
            &["a", "--"],
        ] {
            assert!(parse_args(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn labels_match_by_path_or_last_name() {
        assert!(label_matches("Frame/Shadows", "Frame/Shadows"));
        assert!(label_matches("Frame/Shadows", "Shadows"));
        assert!(!label_matches("Frame/Shadows", "Frame"));
        assert!(!label_matches("Frame/Shadows", "rame/Shadows"));
    }

    #[test]
    fn verdicts_need_the_whole_interval_past_the_threshold() {
        let c = |low, high| Change {
            base_value: 1.0,
            new_value: 1.0,
            change: (low + high) / 2.0,
            low,
            high,
            block: (1, 1),
            method: bootstrap::Method::Percentile,
        };
        assert_eq!(Verdict::of(&c(0.06, 0.14), 0.05, true), Verdict::Regression);
        assert_eq!(Verdict::of(&c(0.04, 0.14), 0.05, true), Verdict::NoChange);
        assert_eq!(Verdict::of(&c(-0.2, -0.06), 0.05, true), Verdict::Improvement);
        assert_eq!(Verdict::of(&c(-0.2, -0.06), 0.05, false), Verdict::Changed);
        assert!(!Verdict::Improvement.fails() && Verdict::Changed.fails());
    }
}
