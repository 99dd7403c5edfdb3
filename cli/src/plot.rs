//! `framescope plot DUMP... -o FILE.svg|.png`: frame time and GPU time over the run (dumps
//! overlaid), the frame-time percentile curve, and chosen counters over the run, one panel
//! each, drawn with `plotters`.
//!
//! Dumps are read strictly ([`frame_lines`]); each keeps at most [`MAX_FRAMES`] frames, and
//! each line drawn at most two points per pixel column (the smallest and largest value of the
//! frames that fall in it, so a single-frame spike still shows). The image is drawn in memory
//! and written with [`create_output`] (never through a symbolic link). Text is drawn with
//! DejaVu Sans, which ships in the binary (the `dejavu` crate): a server image without fonts
//! draws it too; `FRAMESCOPE_FONT` names another TrueType face.
//!
//! Each panel's y scale shows the steady state: it ends at the 99.9th percentile of the values
//! after each dump's start-up frames ([`STARTUP_FRAMES`]); values above are drawn at the top
//! edge, marked, and counted in the panel's title. `--all` scales to every value.

use crate::frame_lines;
use crate::output::{create_output, FileId};
use crate::text::{escape, show};
use plotters::coord::Shift;
use plotters::prelude::*;
use std::ffi::{OsStr, OsString};
use std::io::Write;
use std::path::Path;

/// `plot --help`'s description.
pub const ABOUT: &str = "\
Draws, one panel each: frame time over the run, GPU time over the run (where the dumps have
it), the frame-time percentile curve (frame time against the share of frames at or below it)
and every --counter over the run. Several dumps are overlaid, one colour each, named in the
legend. Each panel's y axis is labelled with its scale.

The y scales show the steady state: they end at the 99.9th percentile of the values after each
dump's first 10 frames; start-up spikes and rarer outliers are drawn at the top edge, marked,
and counted in the panel's title (--all scales to every value). A last panel is the histogram
of frame times.

Text is drawn with DejaVu Sans, built in; FRAMESCOPE_FONT=FILE names another TrueType face.";

pub const EXAMPLES: &str = "\
examples:
  framescope plot run.jsonl -o run.svg
  framescope plot before.jsonl after.jsonl --counter gpu_util_pct -o compare.png";

// `plot`'s options (a plain comment: a doc comment would become clap's about text).
#[derive(clap::Args, Debug)]
#[command(args_override_self = true)]
pub struct Args {
    /// JSON Lines dumps, overlaid
    #[arg(value_name = "DUMP")]
    pub dumps: Vec<OsString>,
    /// output; the format follows the extension (.svg or .png)
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub out: Option<OsString>,
    /// a counter of the dumps (see `framescope counters`); repeatable
    #[arg(long = "counter", value_name = "NAME", value_parser = crate::usage::text())]
    pub counters: Vec<String>,
    /// leave out each dump's first N frames
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub skip_frames: u64,
    /// image width (320 to 8000)
    #[arg(long, value_name = "PIXELS", default_value_t = 1200, value_parser = clap::value_parser!(u32).range(320..=8000))]
    pub width: u32,
    /// scale the y axes to every value, start-up frames and outliers included
    #[arg(long)]
    pub all: bool,
}

/// Frames kept per dump.
const MAX_FRAMES: usize = 2 << 20;
/// Counters per plot.
const MAX_COUNTERS: usize = 8;
/// Height of one panel, in pixels.
const PANEL_HEIGHT: u32 = 300;
/// Largest font file read.
const MAX_FONT_BYTES: u64 = 32 << 20;
/// Frames at the start of each dump left out of the y scales (shader compilation, the first
/// swapchain images: the demo's first frame took 120 ms against 2-3 ms after).
pub const STARTUP_FRAMES: usize = 10;
/// Bins of the frame-time histogram.
const BINS: usize = 60;

const COLOURS: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(255, 127, 14),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(23, 190, 207),
];

#[derive(Debug, PartialEq)]
enum Format {
    Svg,
    Png,
}

#[derive(Debug)]
struct Options {
    dumps: Vec<OsString>,
    out: OsString,
    format: Format,
    counters: Vec<String>,
    skip_frames: u64,
    width: u32,
    all: bool,
}

/// The parsed options checked together.
fn options(a: Args) -> Result<Options, String> {
    let Args {
        dumps,
        out,
        counters,
        skip_frames,
        width,
        all,
    } = a;
    if counters.len() > MAX_COUNTERS {
        return Err(format!("at most {MAX_COUNTERS} counters"));
    }
    let out = out.ok_or("no output: -o FILE.svg or -o FILE.png")?;
    let format = match Path::new(&out).extension().and_then(OsStr::to_str) {
        Some(e) if e.eq_ignore_ascii_case("svg") => Format::Svg,
        Some(e) if e.eq_ignore_ascii_case("png") => Format::Png,
        _ => return Err(format!("'{}': the output must end in .svg or .png", show(&out))),
    };
    if dumps.is_empty() {
        return Err("no dump to plot".into());
    }
    if dumps.len() > COLOURS.len() {
        return Err(format!("at most {} dumps in one plot", COLOURS.len()));
    }
    Ok(Options {
        dumps,
        out,
        format,
        counters,
        skip_frames,
        width,
        all,
    })
}

/// One dump's series: (seconds since its first frame, value).
#[derive(Default)]
struct Run {
    name: String,
    frame_ms: Vec<(f64, f64)>,
    gpu_ms: Vec<(f64, f64)>,
    counters: Vec<Vec<(f64, f64)>>,
    cut: bool,
}

fn read(path: &OsStr, o: &Options) -> Result<(Run, Vec<String>), String> {
    let name = Path::new(path).file_name().map_or_else(|| show(path), show);
    let mut run = Run {
        name,
        counters: vec![Vec::new(); o.counters.len()],
        ..Run::default()
    };
    let (mut seen, mut t0) = (0u64, None);
    let scan = frame_lines::scan(path, |f, t| {
        seen += 1;
        if seen <= o.skip_frames {
            return;
        }
        if run.frame_ms.len() >= MAX_FRAMES {
            run.cut = true;
            return;
        }
        let x = (t - *t0.get_or_insert(t)) as f64 / 1e9;
        if let Some(ns) = f.cpu_frame_ns {
            run.frame_ms.push((x, ns as f64 / 1e6));
        }
        if let Some(ns) = f.gpu_busy_ns {
            run.gpu_ms.push((x, ns as f64 / 1e6));
        }
        for (name, series) in o.counters.iter().zip(run.counters.iter_mut()) {
            let v = f
                .counters
                .as_ref()
                .and_then(|c| c.get(name.as_str()))
                .copied()
                .flatten();
            if let Some(v) = v.filter(|v| v.is_finite()) {
                series.push((x, v));
            }
        }
    })?;
    let mut notes = scan.notes(path);
    if run.cut {
        notes.push(format!(
            "'{}': only its first {MAX_FRAMES} frames are plotted",
            show(path)
        ));
    }
    if run.frame_ms.is_empty() {
        return Err(format!("'{}' has no frame times to plot", show(path)));
    }
    Ok((run, notes))
}

/// At most two points per pixel column (`columns` of them): the smallest and largest value of
/// the points in it, in order of x.
fn decimate(points: &[(f64, f64)], columns: usize) -> Vec<(f64, f64)> {
    if points.len() <= 2 * columns {
        return points.to_vec();
    }
    let per = points.len().div_ceil(columns);
    let mut out = Vec::with_capacity(2 * columns);
    for chunk in points.chunks(per) {
        let lo = chunk.iter().min_by(|a, b| a.1.total_cmp(&b.1)).unwrap();
        let hi = chunk.iter().max_by(|a, b| a.1.total_cmp(&b.1)).unwrap();
        if lo.0 <= hi.0 {
            out.extend([*lo, *hi]);
        } else {
            out.extend([*hi, *lo]);
        }
    }
    out
}

/// Frame time at each percentile of the frames: (share of frames at or below, ms), at most
/// `columns` points.
fn percentile_curve(points: &[(f64, f64)], columns: usize) -> Vec<(f64, f64)> {
    let mut v: Vec<f64> = points.iter().map(|p| p.1).collect();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    let steps = columns.min(n).max(1);
    (0..=steps)
        .map(|k| {
            let q = k as f64 / steps as f64;
            let i = ((q * (n - 1) as f64).round() as usize).min(n - 1);
            (q * 100.0, v[i])
        })
        .collect()
}

/// The font for text, registered with plotters once: `FRAMESCOPE_FONT`'s, else the built-in
/// DejaVu Sans.
fn load_font() -> Result<(), String> {
    let bytes: &'static [u8] = match std::env::var_os("FRAMESCOPE_FONT") {
        None => dejavu::sans::regular(),
        Some(p) => {
            let bad = || format!("FRAMESCOPE_FONT='{}' is not a readable TrueType font", show(&p));
            let meta = std::fs::metadata(&p).map_err(|_| bad())?;
            if !meta.is_file() || meta.len() > MAX_FONT_BYTES {
                return Err(bad());
            }
            // plotters keeps fonts for the life of the process.
            Box::leak(std::fs::read(&p).map_err(|_| bad())?.into_boxed_slice())
        }
    };
    plotters::style::register_font("sans-serif", FontStyle::Normal, bytes).map_err(|_| {
        match std::env::var_os("FRAMESCOPE_FONT") {
            Some(p) => format!("FRAMESCOPE_FONT='{}' is not a readable TrueType font", show(&p)),
            None => "the built-in font could not be loaded".into(),
        }
    })
}

struct Panel<'a> {
    title: String,
    x_label: &'a str,
    y_label: String,
    series: Vec<(usize, Vec<(f64, f64)>)>,
    /// The top of the y scale where it is not the largest value (the steady state's p99.9),
    /// and how many values lie above it.
    cap: Option<(f64, usize)>,
}

/// The 99.9th percentile of `values` (nearest rank); `None` for none.
fn p999(values: &mut [f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let n = values.len();
    Some(values[((n * 999).div_ceil(1000)).clamp(1, n) - 1])
}

/// The cap of a panel over `runs`' series picked by `pick`, their start-up frames left out:
/// `None` when nothing lies above the steady state's p99.9 (or `--all`).
fn steady_cap<'a>(runs: impl Iterator<Item = &'a [(f64, f64)]> + Clone, all: bool) -> Option<(f64, usize)> {
    if all {
        return None;
    }
    let mut steady: Vec<f64> = runs
        .clone()
        .flat_map(|s| s.iter().skip(STARTUP_FRAMES).map(|p| p.1))
        .collect();
    let cap = p999(&mut steady)?;
    let above = runs.flat_map(|s| s.iter()).filter(|p| p.1 > cap).count();
    (above > 0 && cap > 0.0).then_some((cap, above))
}

fn range(series: &[(usize, Vec<(f64, f64)>)], cap: Option<(f64, usize)>) -> ((f64, f64), (f64, f64)) {
    let pts = series.iter().flat_map(|s| s.1.iter());
    let (mut x0, mut x1, mut y0, mut y1) = (f64::MAX, f64::MIN, f64::MAX, f64::MIN);
    for &(x, y) in pts {
        (x0, x1, y0, y1) = (x0.min(x), x1.max(x), y0.min(y), y1.max(y));
    }
    if x0 > x1 {
        return ((0.0, 1.0), (0.0, 1.0));
    }
    if let Some((c, _)) = cap {
        y1 = y1.min(c);
    }
    let y0 = y0.min(0.0);
    let pad = ((y1 - y0) * 0.05).max(1e-9);
    ((x0, x1.max(x0 + 1e-9)), (y0, y1 + pad))
}

fn draw<DB: DrawingBackend>(root: DrawingArea<DB, Shift>, panels: &[Panel], runs: &[Run]) -> Result<(), String>
where
    DB::ErrorType: 'static,
{
    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| format!("drawing failed: {e}");
    root.fill(&WHITE).map_err(err)?;
    let areas = root.split_evenly((panels.len(), 1));
    for (panel, area) in panels.iter().zip(areas) {
        let ((x0, x1), (y0, y1)) = range(&panel.series, panel.cap);
        let title = match panel.cap {
            Some((c, n)) => format!(
                "{} ({n} values above {c:.3} {} drawn at the top edge, marked; --all shows them)",
                panel.title, panel.y_label
            ),
            None => panel.title.clone(),
        };
        let mut chart = ChartBuilder::on(&area)
            .caption(&title, ("sans-serif", 18))
            .margin(8)
            .margin_right(24)
            .x_label_area_size(36)
            .y_label_area_size(64)
            .build_cartesian_2d(x0..x1, y0..y1)
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_desc(panel.x_label)
            .y_desc(panel.y_label.as_str())
            .label_style(("sans-serif", 13))
            .draw()
            .map_err(err)?;
        let top = panel.cap.map_or(f64::INFINITY, |c| c.0);
        for (run, points) in &panel.series {
            let colour = COLOURS[*run % COLOURS.len()];
            chart
                .draw_series(LineSeries::new(
                    points.iter().map(|&(x, y)| (x, y.min(top))),
                    colour.stroke_width(1),
                ))
                .map_err(err)?
                .label(runs[*run].name.as_str())
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], colour.stroke_width(2)));
            // Values above the scale: a marker at the top edge where each lies.
            chart
                .draw_series(
                    points
                        .iter()
                        .filter(|p| p.1 > top)
                        .map(|&(x, _)| TriangleMarker::new((x, top), 4, colour.filled())),
                )
                .map_err(err)?;
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .label_font(("sans-serif", 13))
            .draw()
            .map_err(err)?;
    }
    root.present().map_err(err)
}

fn panels<'a>(runs: &[Run], o: &Options) -> Vec<Panel<'a>> {
    let columns = o.width as usize;
    let over_time = |title: String, y: String, pick: &dyn Fn(&Run) -> &Vec<(f64, f64)>| Panel {
        title,
        x_label: "seconds since the first frame",
        y_label: y,
        series: runs
            .iter()
            .enumerate()
            .filter(|(_, r)| !pick(r).is_empty())
            .map(|(i, r)| (i, decimate(pick(r), columns)))
            .collect(),
        cap: None,
    };
    let frame_cap = steady_cap(runs.iter().map(|r| &r.frame_ms[..]), o.all);
    let mut out = vec![over_time("frame time".into(), "ms".into(), &|r| &r.frame_ms)];
    out[0].cap = frame_cap;
    if runs.iter().any(|r| !r.gpu_ms.is_empty()) {
        let mut p = over_time("GPU time".into(), "ms".into(), &|r| &r.gpu_ms);
        p.cap = steady_cap(runs.iter().map(|r| &r.gpu_ms[..]), o.all);
        out.push(p);
    }
    // The percentile curve of the steady frames; the slowest 0.1 % above the cap, marked.
    out.push(Panel {
        title: "frame-time percentiles".into(),
        x_label: "percent of frames at or below",
        y_label: "ms".into(),
        series: runs
            .iter()
            .enumerate()
            .map(|(i, r)| (i, percentile_curve(&r.frame_ms, columns / 2)))
            .collect(),
        cap: frame_cap,
    });
    out.push(histogram(runs, frame_cap));
    for (k, name) in o.counters.iter().enumerate() {
        let mut p = over_time(escape(name), escape(name), &|r| &r.counters[k]);
        p.cap = steady_cap(runs.iter().map(|r| &r.counters[k][..]), o.all);
        out.push(p);
    }
    out
}

/// The frame-time histogram: the share of each dump's frames per bin, bins up to the frame
/// panel's cap (the last bin holds everything above).
fn histogram<'a>(runs: &[Run], cap: Option<(f64, usize)>) -> Panel<'a> {
    let top = cap.map_or_else(
        || {
            runs.iter()
                .flat_map(|r| r.frame_ms.iter().map(|p| p.1))
                .fold(0.0, f64::max)
        },
        |c| c.0,
    );
    let width = (top / BINS as f64).max(1e-9);
    let series = runs
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let mut counts = [0usize; BINS];
            for p in &r.frame_ms {
                counts[((p.1 / width) as usize).min(BINS - 1)] += 1;
            }
            let n = r.frame_ms.len().max(1) as f64;
            let pts = counts
                .iter()
                .enumerate()
                .flat_map(|(b, &c)| {
                    let share = 100.0 * c as f64 / n;
                    [(b as f64 * width, share), ((b + 1) as f64 * width, share)]
                })
                .collect();
            (i, pts)
        })
        .collect();
    Panel {
        title: "frame-time histogram".into(),
        x_label: "frame time (ms)",
        y_label: "% of frames".into(),
        series,
        cap: None,
    }
}

fn render(o: &Options, runs: &[Run]) -> Result<Vec<u8>, String> {
    load_font()?;
    let panels = panels(runs, o);
    let (w, h) = (o.width, PANEL_HEIGHT * panels.len() as u32);
    match o.format {
        Format::Svg => {
            let mut svg = String::new();
            draw(
                SVGBackend::with_string(&mut svg, (w, h)).into_drawing_area(),
                &panels,
                runs,
            )?;
            Ok(svg.into_bytes())
        }
        Format::Png => {
            let mut rgb = vec![0u8; w as usize * h as usize * 3];
            draw(
                BitMapBackend::with_buffer(&mut rgb, (w, h)).into_drawing_area(),
                &panels,
                runs,
            )?;
            let mut png = Vec::new();
            let mut enc = png::Encoder::new(&mut png, w, h);
            enc.set_color(png::ColorType::Rgb);
            enc.set_depth(png::BitDepth::Eight);
            enc.write_header()
                .and_then(|mut wr| wr.write_image_data(&rgb))
                .map_err(|e| format!("PNG encoding failed: {e}"))?;
            Ok(png)
        }
    }
}

pub fn main(args: Args) -> i32 {
    let o = match options(args) {
        Ok(o) => o,
        Err(e) => return crate::usage::usage_error::<Args>("plot", &format!("framescope: plot: {e}")),
    };
    // Checked before the dumps are read (which can take a while) and again where the output
    // is opened, which alone is free of races.
    let inputs: Vec<FileId> = o.dumps.iter().filter_map(|d| FileId::of_path(Path::new(d))).collect();
    if FileId::at_path(Path::new(&o.out)).is_some_and(|id| inputs.contains(&id)) {
        eprintln!(
            "framescope: plot: cannot write '{}': it is a dump this command reads; name another output",
            show(&o.out)
        );
        return 1;
    }
    let mut runs = Vec::new();
    for d in &o.dumps {
        match read(d, &o) {
            Ok((run, notes)) => {
                for n in notes {
                    eprintln!("framescope: plot: {n}");
                }
                runs.push(run);
            }
            Err(e) => {
                eprintln!("framescope: plot: {e}");
                return 1;
            }
        }
    }
    for (k, name) in o.counters.iter().enumerate() {
        if runs.iter().all(|r| r.counters[k].is_empty()) {
            eprintln!("framescope: plot: no dump has values of counter '{}'", escape(name));
            return 1;
        }
    }
    let bytes = match render(&o, &runs) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("framescope: plot: {e}");
            return 1;
        }
    };
    let written = create_output(Path::new(&o.out), &inputs).and_then(|mut f| f.write_all(&bytes));
    if let Err(e) = written {
        eprintln!("framescope: plot: cannot write '{}': {e}", show(&o.out));
        return 1;
    }
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimation_keeps_each_columns_extremes_in_order() {
        let mut pts: Vec<(f64, f64)> = (0..10_000).map(|i| (i as f64, 1.0)).collect();
        pts[5_000].1 = 50.0;
        pts[7_000].1 = -3.0;
        let d = decimate(&pts, 100);
        assert!(d.len() <= 200);
        assert!(d.iter().any(|p| p.1 == 50.0) && d.iter().any(|p| p.1 == -3.0));
        assert!(d.windows(2).all(|w| w[0].0 <= w[1].0));
        assert_eq!(decimate(&pts[..10], 100).len(), 10);
    }

    #[test]
    fn the_percentile_curve_runs_from_the_fastest_to_the_slowest_frame() {
        let pts: Vec<(f64, f64)> = (1..=100).rev().map(|i| (0.0, i as f64)).collect();
        let c = percentile_curve(&pts, 10);
        assert_eq!(c.first(), Some(&(0.0, 1.0)));
        assert_eq!(c.last(), Some(&(100.0, 100.0)));
        assert!(c.windows(2).all(|w| w[0].1 <= w[1].1));
    }

    #[test]
    fn arguments_name_the_output_format() {
        let a = |v: &[&str]| {
            use clap::Parser;
            /// `framescope plot` alone, as the command line parses it.
            #[derive(Parser)]
            #[command(name = "framescope plot")]
            struct Line {
                #[command(flatten)]
                args: Args,
            }
            let argv = ["framescope plot"].iter().chain(v);
            options(Line::try_parse_from(argv).map_err(|e| e.to_string())?.args)
        };
        assert_eq!(a(&["d", "-o", "x.SVG"]).unwrap().format, Format::Svg);
        assert_eq!(a(&["d", "e", "-o", "x.png"]).unwrap().dumps.len(), 2);
        assert!(a(&["d", "-o", "x.jpg"]).unwrap_err().contains(".svg or .png"));
        assert!(a(&["d"]).unwrap_err().contains("no output"));
        assert!(a(&["-o", "x.svg"]).unwrap_err().contains("no dump"));
        assert!(a(&["d", "-o", "x.svg", "--width", "10"]).is_err());
        assert!(a(&["d", "-o", "x.svg", "--bogus"]).is_err());
    }

    fn run_of(frames: &[f64]) -> Run {
        Run {
            name: "r".into(),
            frame_ms: frames.iter().enumerate().map(|(i, &ms)| (i as f64, ms)).collect(),
            ..Run::default()
        }
    }

    #[test]
    fn the_scale_leaves_the_start_up_spike_out_and_counts_what_it_cuts() {
        // A 120 ms first frame, then 2-3 ms frames with one 40 ms hitch in 5000.
        let mut f: Vec<f64> = (0..5000).map(|i| 2.0 + (i % 2) as f64).collect();
        f[0] = 120.0;
        f[3000] = 40.0;
        let r = run_of(&f);
        let cap = steady_cap(std::iter::once(&r.frame_ms[..]), false).unwrap();
        assert_eq!(
            cap,
            (3.0, 2),
            "the scale ends at the steady p99.9; the spike and the hitch are above"
        );
        assert_eq!(steady_cap(std::iter::once(&r.frame_ms[..]), true), None, "--all");
        let flat = run_of(&[2.0; 100]);
        assert_eq!(
            steady_cap(std::iter::once(&flat.frame_ms[..]), false),
            None,
            "nothing to cut"
        );
        let ((_, _), (_, y1)) = range(&[(0, r.frame_ms.clone())], Some(cap));
        assert!(y1 < 4.0, "{y1}");
    }

    #[test]
    fn the_histogram_shares_add_up_to_all_frames() {
        let r = run_of(&[1.0, 1.0, 2.0, 50.0]);
        let h = histogram(&[r], Some((3.0, 1)));
        // Two points per bin (its edges), each with the bin's share.
        let total: f64 = h.series[0].1.iter().step_by(2).map(|p| p.1).sum();
        assert!((total - 100.0).abs() < 1e-9, "{total}");
        assert_eq!(
            h.series[0].1.last().unwrap().1,
            25.0,
            "the 50 ms frame is in the last bin"
        );
    }

    #[test]
    fn a_png_has_text_without_any_font_on_the_machine() {
        // The built-in face: nothing is looked up on disk.
        std::env::remove_var("FRAMESCOPE_FONT");
        let o = Options {
            dumps: vec!["d".into()],
            out: "x.png".into(),
            format: Format::Png,
            counters: Vec::new(),
            skip_frames: 0,
            width: 400,
            all: false,
        };
        let png = render(&o, &[run_of(&[2.0, 3.0, 2.5, 2.0])]).unwrap();
        let decoder = png::Decoder::new(std::io::Cursor::new(png));
        let mut reader = decoder.read_info().unwrap();
        let mut buf = vec![0; reader.output_buffer_size()];
        let info = reader.next_frame(&mut buf).unwrap();
        let w = info.width as usize;
        // The first panel's caption row band: dark pixels are its letters.
        let dark = buf[..w * 3 * 24]
            .chunks(3)
            .filter(|p| p.iter().all(|&c| c < 80))
            .count();
        assert!(dark > 50, "no caption text drawn ({dark} dark pixels)");
    }
}
