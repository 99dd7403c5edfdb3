//! The numbers the page shows, computed here on every frame so that the page's JavaScript only
//! draws: a run's summary as `report --json` gives it, the statistics it lacks (CapFrameX's
//! integral lows, P1/P0.2/P0.1), the percentile curve, the histogram, the stutter table, and
//! the frames themselves for the interactive graphs.

use super::counter_series::CounterSeries;
use crate::frame_lines;
use crate::report::{self, Overview};
use crate::text::show;
use framescope_core::stats::distribution::{low_fps, low_fps_integral, percentile_permille};
use serde_json::{json, Value};
use std::ffi::OsStr;
use std::path::Path;

/// Frames per run the page carries one by one; a longer run's graphs get [`BUCKETS`] points
/// of min/max each. The statistics cover every frame either way. At 20 000 frames a run page
/// is about 1 MB and opens in Chromium in well under a second (docs/performance.md).
pub const MAX_FRAMES_IN_PAGE: usize = 20_000;
/// Points of a longer run's graphs: about a wide screen's pixel columns, so a graph drawn
/// whole loses nothing it could show.
pub const BUCKETS: usize = 4096;
/// Rows of the per-pass counter table (render pass or label, counter).
const PASS_COUNTERS_IN_PAGE: usize = 2000;
/// Stutter frames listed; the rest are counted.
const STUTTERS_SHOWN: usize = 500;
/// Points of the percentile curve.
const CURVE_POINTS: u64 = 1000;
/// Bars of the histogram.
const HISTOGRAM_BINS: usize = 80;

/// Rounds milliseconds to 0.1 µs, so the page stays small without moving a value a graph
/// could show.
fn ms(ns: u64) -> f64 {
    (ns as f64 / 100.0).round() / 1e4
}

/// The frames as the graphs take them: one array per field, `null` where a frame lacks it.
#[derive(Default)]
struct Frames {
    index: Vec<u64>,
    t_ms: Vec<f64>,
    frame_ms: Vec<Option<f64>>,
    gpu_ms: Vec<Option<f64>>,
    latency_ms: Vec<Option<f64>>,
    display: Vec<Option<String>>,
    stutter: Vec<u8>,
    stutters: Vec<Value>,
    stutter_count: u64,
    /// Every frame time, for the statistics (not capped).
    all_frame_ns: Vec<u64>,
    /// Counters and sensors over the run, downsampled as they stream past.
    counters: CounterSeries,
}

/// The frames of `path`, the `t_ns` of its first, and notes.
fn read_frames(path: &OsStr) -> Result<(Frames, Option<u64>, Vec<String>), String> {
    let mut f = Frames::default();
    let mut t0 = None;
    let scan = frame_lines::scan(path, |line, t| {
        if let Some(ns) = line.cpu_frame_ns {
            f.all_frame_ns.push(ns);
        }
        if line.stutter {
            f.stutter_count += 1;
            if f.stutters.len() < STUTTERS_SHOWN {
                let causes: Vec<Value> = line
                    .stutter_causes
                    .iter()
                    .map(|c| json!({"cause": c.cause, "ms": ms(c.ns)}))
                    .collect();
                f.stutters.push(json!({
                    "frame": line.frame,
                    "t_ms": ms(t - *t0.get_or_insert(t)),
                    "frame_ms": line.cpu_frame_ns.map(ms),
                    "gpu_ms": line.gpu_busy_ns.map(ms),
                    "causes": causes,
                }));
            }
        }
        let t_ms = ms(t - *t0.get_or_insert(t));
        if let Some(c) = &line.counters {
            f.counters.add(t_ms, c.iter().map(|(k, v)| (k.as_ref(), *v)));
        }
        f.index.push(line.frame.unwrap_or_default());
        f.t_ms.push(t_ms);
        f.frame_ms.push(line.cpu_frame_ns.map(ms));
        f.gpu_ms.push(line.gpu_busy_ns.map(ms));
        f.latency_ms.push(line.display_latency_ns.map(ms));
        f.display.push(line.display.as_ref().map(|d| d.to_string()));
        f.stutter.push(u8::from(line.stutter));
    })?;
    Ok((f, t0, scan.notes(path)))
}

/// The frames' arrays as the page's graphs take them: every frame up to
/// [`MAX_FRAMES_IN_PAGE`], else [`BUCKETS`] runs of consecutive frames, each drawn from its
/// slowest frame (whose fields a hover shows, and whose time is the bucket's `frame_ms`) with
/// the bucket's fastest frame time in `frame_ms_min` (and the GPU time's and latency's minimum
/// likewise): a graph draws each bucket as a min–max line, so no spike disappears.
fn graph_frames(f: &Frames) -> Value {
    let n = f.index.len();
    if n <= MAX_FRAMES_IN_PAGE {
        return json!({
            "index": f.index,
            "t_ms": f.t_ms,
            "frame_ms": f.frame_ms,
            "gpu_ms": f.gpu_ms,
            "latency_ms": f.latency_ms,
            "display": f.display,
            "stutter": f.stutter,
            "per_point": 1,
        });
    }
    let mut b = Buckets::default();
    for k in 0..BUCKETS {
        let (lo, hi) = (k * n / BUCKETS, (k + 1) * n / BUCKETS);
        if lo < hi {
            b.push(f, lo..hi);
        }
    }
    json!({
        "index": b.index,
        "t_ms": b.t_ms,
        "frame_ms": b.frame_ms,
        "frame_ms_min": b.frame_ms_min,
        "gpu_ms": b.gpu_ms,
        "gpu_ms_min": b.gpu_ms_min,
        "latency_ms": b.latency_ms,
        "latency_ms_min": b.latency_ms_min,
        "display": b.display,
        "stutter": b.stutter,
        "per_point": n.div_ceil(BUCKETS),
        "frames": n,
    })
}

/// A long run's graph points, one per bucket of frames.
#[derive(Default)]
struct Buckets<'a> {
    index: Vec<u64>,
    t_ms: Vec<f64>,
    frame_ms: Vec<Option<f64>>,
    frame_ms_min: Vec<Option<f64>>,
    gpu_ms: Vec<Option<f64>>,
    gpu_ms_min: Vec<Option<f64>>,
    latency_ms: Vec<Option<f64>>,
    latency_ms_min: Vec<Option<f64>>,
    display: Vec<Option<&'a str>>,
    stutter: Vec<u8>,
}

/// The least and greatest value of `v` over `r`, skipping frames without one.
fn min_max(v: &[Option<f64>], r: std::ops::Range<usize>) -> (Option<f64>, Option<f64>) {
    v[r].iter().flatten().fold((None, None), |(lo, hi), &x| {
        (
            Some(lo.map_or(x, |l: f64| l.min(x))),
            Some(hi.map_or(x, |h: f64| h.max(x))),
        )
    })
}

impl<'a> Buckets<'a> {
    fn push(&mut self, f: &'a Frames, r: std::ops::Range<usize>) {
        // The slowest frame stands for the bucket (the first one without a frame time).
        let slowest = r
            .clone()
            .max_by(|&a, &b| f.frame_ms[a].unwrap_or(-1.0).total_cmp(&f.frame_ms[b].unwrap_or(-1.0)))
            .unwrap_or(r.start);
        let (frame_min, frame_max) = min_max(&f.frame_ms, r.clone());
        let (gpu_min, gpu_max) = min_max(&f.gpu_ms, r.clone());
        let (lat_min, lat_max) = min_max(&f.latency_ms, r.clone());
        self.index.push(f.index[slowest]);
        self.t_ms.push(f.t_ms[slowest]);
        self.frame_ms.push(frame_max);
        self.frame_ms_min.push(frame_min);
        self.gpu_ms.push(gpu_max);
        self.gpu_ms_min.push(gpu_min);
        self.latency_ms.push(lat_max);
        self.latency_ms_min.push(lat_min);
        self.display.push(f.display[slowest].as_deref());
        self.stutter.push(u8::from(f.stutter[r].iter().any(|&s| s != 0)));
    }
}

/// The lows and percentile fps CapFrameX shows beside `report`'s, from every frame time.
fn extra_stats(sorted: &[u64]) -> Value {
    if sorted.is_empty() {
        return Value::Null;
    }
    let p_fps = |permille| {
        let v = percentile_permille(sorted, permille);
        (v > 0).then(|| 1e9 / v as f64)
    };
    json!({
        "low_1pct_fps": low_fps(sorted, 100),
        "low_0_1pct_fps": low_fps(sorted, 1000),
        "low_1pct_integral_fps": low_fps_integral(sorted, 100),
        "low_0_1pct_integral_fps": low_fps_integral(sorted, 1000),
        "p1_fps": p_fps(990),
        "p0_2_fps": p_fps(998),
        "p0_1_fps": p_fps(999),
    })
}

/// The L-shape curve: frame time (ms) at each permille of the frames, fastest to slowest.
fn percentile_curve(sorted: &[u64]) -> Vec<[f64; 2]> {
    if sorted.is_empty() {
        return Vec::new();
    }
    (0..=CURVE_POINTS)
        .map(|k| [k as f64 / 10.0, ms(percentile_permille(sorted, k))])
        .collect()
}

/// Frame-time histogram: equal bins from the fastest frame to the p99.9 one, the slower
/// frames counted in the last bar, so one huge hitch does not squash the rest.
fn histogram(sorted: &[u64]) -> Value {
    let Some(&lo) = sorted.first() else {
        return Value::Null;
    };
    let hi = percentile_permille(sorted, 999).max(lo + 1);
    let width = (hi - lo).div_ceil(HISTOGRAM_BINS as u64).max(1);
    let mut counts = vec![0u64; HISTOGRAM_BINS + 1];
    for &v in sorted {
        let bin = ((v - lo) / width) as usize;
        counts[bin.min(HISTOGRAM_BINS)] += 1;
    }
    json!({"from_ms": ms(lo), "bin_ms": ms(width), "counts": counts})
}

/// The file name shown for a dump.
pub fn name_of(path: &OsStr) -> String {
    Path::new(path).file_name().map_or_else(|| show(path), show)
}

/// One run: what `report` says of it, and its frames with the statistics around them.
/// `frames`: whether to carry the frames (the farm view has no graphs).
pub fn run(path: &OsStr, frames: bool) -> Result<Value, String> {
    let Overview {
        summary,
        header,
        marks,
        mut pass_counters,
        mut notes,
    } = report::overview(path)?;
    if pass_counters.len() > PASS_COUNTERS_IN_PAGE {
        notes.push(format!(
            "'{}': the per-pass counter table lists {PASS_COUNTERS_IN_PAGE} of its {} rows",
            show(path),
            pass_counters.len()
        ));
        pass_counters.truncate(PASS_COUNTERS_IN_PAGE);
    }
    let (mut f, t0, frame_notes) = read_frames(path)?;
    notes.extend(frame_notes);
    f.all_frame_ns.sort_unstable();
    let sorted = std::mem::take(&mut f.all_frame_ns);
    let mut v = json!({
        "name": name_of(path),
        "t0_ns": t0,
        "path": show(path),
        "header": header,
        "summary": summary,
        "extra": extra_stats(&sorted),
        "curve": percentile_curve(&sorted),
        "histogram": histogram(&sorted),
        "stutters": f.stutters,
        "stutter_count": f.stutter_count,
        "marks": marks,
        "pass_counters": pass_counters,
        "notes": notes,
    });
    if frames {
        v["frames"] = graph_frames(&f);
        v["counters"] = std::mem::take(&mut f.counters).into_json();
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_histogram_counts_every_frame_and_puts_the_tail_in_the_last_bar() {
        let mut v: Vec<u64> = (1..=2000).map(|i| i * 1000).collect();
        v.push(1_000_000_000);
        let h = histogram(&v);
        let counts: Vec<u64> = serde_json::from_value(h["counts"].clone()).unwrap();
        assert_eq!(counts.iter().sum::<u64>(), v.len() as u64);
        assert!(*counts.last().unwrap() >= 1);
    }

    #[test]
    fn the_integral_low_weights_frames_by_their_time() {
        // 99 frames of 10 ms and one of 100 ms: the slowest frame alone is over 1% of the time.
        let mut v = vec![10_000_000u64; 99];
        v.push(100_000_000);
        let x = extra_stats(&v);
        assert_eq!(x["low_1pct_integral_fps"].as_f64(), Some(10.0));
        assert_eq!(x["p1_fps"].as_f64(), Some(100.0));
    }
}
