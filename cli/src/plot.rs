//! `framescope plot DUMP... -o FILE.svg|.png`: frame time and GPU time over the run (dumps
//! overlaid), the frame-time percentile curve, and chosen counters over the run, one panel
//! each, drawn with `plotters`.
//!
//! Dumps are read strictly ([`frame_lines`]); each keeps at most [`MAX_FRAMES`] frames, and
//! each line drawn at most two points per pixel column (the smallest and largest value of the
//! frames that fall in it, so a single-frame spike still shows). The image is drawn in memory
//! and written with [`create_output`] (never through a symbolic link). Text needs a TrueType
//! font: `FRAMESCOPE_FONT`, else DejaVu Sans or another common sans-serif face where Linux
//! distributions install it.

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

Text in PNG files needs a TrueType font: FRAMESCOPE_FONT=FILE, else DejaVu Sans (Debian:
fonts-dejavu-core) or another common face is looked for.";

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
}

/// Frames kept per dump.
const MAX_FRAMES: usize = 2 << 20;
/// Counters per plot.
const MAX_COUNTERS: usize = 8;
/// Height of one panel, in pixels.
const PANEL_HEIGHT: u32 = 300;
/// Largest font file read.
const MAX_FONT_BYTES: u64 = 32 << 20;

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

/// Where Linux distributions put a sans-serif TrueType face.
const FONT_PATHS: &[&str] = &[
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/TTF/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu-sans-fonts/DejaVuSans.ttf",
    "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
    "/usr/share/fonts/liberation-sans/LiberationSans-Regular.ttf",
    "/usr/share/fonts/truetype/noto/NotoSans-Regular.ttf",
    "/usr/share/fonts/noto/NotoSans-Regular.ttf",
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
}

/// The parsed options checked together.
fn options(a: Args) -> Result<Options, String> {
    let Args {
        dumps,
        out,
        counters,
        skip_frames,
        width,
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

/// The font for text; registered with plotters once.
fn load_font() -> Result<(), String> {
    let candidates: Vec<std::path::PathBuf> = match std::env::var_os("FRAMESCOPE_FONT") {
        Some(p) => vec![p.into()],
        None => FONT_PATHS.iter().map(Into::into).collect(),
    };
    for p in &candidates {
        let Ok(meta) = std::fs::metadata(p) else { continue };
        if !meta.is_file() || meta.len() > MAX_FONT_BYTES {
            continue;
        }
        let Ok(bytes) = std::fs::read(p) else { continue };
        // plotters keeps fonts for the life of the process.
        let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
        if plotters::style::register_font("sans-serif", FontStyle::Normal, bytes).is_ok() {
            return Ok(());
        }
    }
    Err(match std::env::var_os("FRAMESCOPE_FONT") {
        Some(p) => format!("FRAMESCOPE_FONT='{}' is not a readable TrueType font", show(&p)),
        None => "no TrueType font found for the text (install fonts-dejavu-core, or set FRAMESCOPE_FONT=FILE)".into(),
    })
}

struct Panel<'a> {
    title: String,
    x_label: &'a str,
    y_label: String,
    series: Vec<(usize, Vec<(f64, f64)>)>,
}

fn range(series: &[(usize, Vec<(f64, f64)>)]) -> ((f64, f64), (f64, f64)) {
    let pts = series.iter().flat_map(|s| s.1.iter());
    let (mut x0, mut x1, mut y0, mut y1) = (f64::MAX, f64::MIN, f64::MAX, f64::MIN);
    for &(x, y) in pts {
        (x0, x1, y0, y1) = (x0.min(x), x1.max(x), y0.min(y), y1.max(y));
    }
    if x0 > x1 {
        return ((0.0, 1.0), (0.0, 1.0));
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
        let ((x0, x1), (y0, y1)) = range(&panel.series);
        let mut chart = ChartBuilder::on(&area)
            .caption(&panel.title, ("sans-serif", 18))
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
        for (run, points) in &panel.series {
            let colour = COLOURS[*run % COLOURS.len()];
            chart
                .draw_series(LineSeries::new(points.iter().copied(), colour.stroke_width(1)))
                .map_err(err)?
                .label(runs[*run].name.as_str())
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], colour.stroke_width(2)));
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
    };
    let mut out = vec![over_time("frame time".into(), "ms".into(), &|r| &r.frame_ms)];
    if runs.iter().any(|r| !r.gpu_ms.is_empty()) {
        out.push(over_time("GPU time".into(), "ms".into(), &|r| &r.gpu_ms));
    }
    out.push(Panel {
        title: "frame-time percentiles".into(),
        x_label: "percent of frames at or below",
        y_label: "ms".into(),
        series: runs
            .iter()
            .enumerate()
            .map(|(i, r)| (i, percentile_curve(&r.frame_ms, columns / 2)))
            .collect(),
    });
    for (k, name) in o.counters.iter().enumerate() {
        out.push(over_time(escape(name), escape(name), &|r| &r.counters[k]));
    }
    out
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
}
