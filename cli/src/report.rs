//! `framescope report [--json] DUMP`: the summary of a JSON Lines dump.
//!
//! Uses the dump's own `summary` record when there is one. When it is missing (the app
//! crashed or was killed) the summary is recomputed from the frame records with the same
//! `framescope_core::stats` code the writer uses, and the report says so. A truncated last
//! line (a kill in the middle of a write) is ignored and reported.

use framescope_core::dump::SummaryRecord;
use framescope_core::stats::{Distribution, SummaryBuilder};
use serde_json::Value;

const USAGE: &str = "usage: framescope report [--json] DUMP";

/// What was read from a dump.
struct Dump {
    header: Option<Value>,
    summary: Option<SummaryRecord>,
    builder: SummaryBuilder,
    /// Frame indices missing between consecutive frame records (lost frames).
    gaps: u64,
    truncated_last_line: bool,
    /// Lines that did not parse, other than a truncated last line.
    bad_lines: Vec<usize>,
}

fn read_dump(text: &str) -> Dump {
    let mut d = Dump {
        header: None,
        summary: None,
        builder: SummaryBuilder::new(),
        gaps: 0,
        truncated_last_line: false,
        bad_lines: Vec::new(),
    };
    let mut last_frame: Option<u64> = None;
    let lines: Vec<&str> = text.split_terminator('\n').collect();
    for (i, line) in lines.iter().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            if i + 1 == lines.len() {
                d.truncated_last_line = true;
            } else {
                d.bad_lines.push(i + 1);
            }
            continue;
        };
        match v["type"].as_str() {
            Some("header") if d.header.is_none() => d.header = Some(v),
            Some("frame") => {
                let (Some(frame), Some(t_ns)) = (v["frame"].as_u64(), v["t_ns"].as_u64()) else {
                    d.bad_lines.push(i + 1);
                    continue;
                };
                if let Some(prev) = last_frame {
                    d.gaps += frame.saturating_sub(prev + 1);
                }
                last_frame = Some(frame);
                d.builder
                    .add(t_ns, v["cpu_frame_ns"].as_u64(), v["gpu_busy_ns"].as_u64());
            }
            Some("summary") => match serde_json::from_value::<SummaryRecord>(v) {
                Ok(s) => d.summary = Some(s),
                Err(_) => d.bad_lines.push(i + 1),
            },
            _ => d.bad_lines.push(i + 1),
        }
    }
    d
}

fn ms(ns: f64) -> String {
    format!("{:.3} ms", ns / 1e6)
}

fn opt_fps(f: Option<f64>) -> String {
    f.map_or_else(|| "-".to_string(), |f| format!("{f:.2} fps"))
}

fn device_line(h: &Value) -> Option<String> {
    let d = h.get("device").filter(|d| d.is_object())?;
    let mut s = format!(
        "{} [{:04x}:{:04x}]",
        d["name"].as_str().unwrap_or("?"),
        d["vendor_id"].as_u64().unwrap_or(0),
        d["device_id"].as_u64().unwrap_or(0)
    );
    if let Some(v) = d["driver_version"].as_str() {
        s.push_str(&format!(
            ", driver {}{v}",
            d["driver_name"].as_str().map(|n| format!("{n} ")).unwrap_or_default()
        ));
    }
    Some(s)
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

fn render(path: &str, d: &Dump, rec: &SummaryRecord, notes: &[String]) -> String {
    let s = &rec.summary;
    let mut out = format!("framescope report: {path}\n");
    if let Some(h) = &d.header {
        let exe = h["exe"].as_str().unwrap_or("?");
        out.push_str(&format!(
            "  {:<12}{exe} (pid {})\n",
            "exe",
            h["pid"].as_u64().unwrap_or(0)
        ));
        out.push_str(&format!("  {:<12}{}\n", "api", h["api"].as_str().unwrap_or("?")));
        if let Some(dev) = device_line(h) {
            out.push_str(&format!("  {:<12}{dev}\n", "device"));
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
    let span = d.header.as_ref().is_some_and(|h| h["gpu_time"] == "span");
    let gpu_name = if span { "gpu span" } else { "gpu busy" };
    out.push_str(&distribution_rows(
        s.frame_time_ns.as_ref(),
        s.gpu_busy_ns.as_ref(),
        gpu_name,
    ));
    out.push_str(&format!("  frames without gpu time: {}\n\n", s.gpu_missing_frames));
    for n in notes {
        out.push_str(&format!("note: {n}\n"));
    }
    out
}

pub fn main(args: &[String]) -> i32 {
    let mut json = false;
    let mut path = None;
    for a in args {
        match a.as_str() {
            "--json" => json = true,
            "-h" | "--help" => {
                println!("{USAGE}");
                return 0;
            }
            _ if path.is_none() && !a.starts_with("--") => path = Some(a.clone()),
            _ => {
                eprintln!("framescope: report: unexpected argument '{a}'\n{USAGE}");
                return 2;
            }
        }
    }
    let Some(path) = path else {
        eprintln!("{USAGE}");
        return 2;
    };
    let bytes = match std::fs::read(&path) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("framescope: cannot read '{path}': {e}");
            return 1;
        }
    };
    let d = read_dump(&String::from_utf8_lossy(&bytes));
    if d.header.is_none() && d.builder.frames() == 0 {
        eprintln!("framescope: '{path}' is not a framescope dump (no header, no frame records)");
        return 1;
    }

    let mut notes = Vec::new();
    if let Some(schema) = d.header.as_ref().and_then(|h| h["schema"].as_str()) {
        if schema != framescope_core::SCHEMA_ID {
            notes.push(format!(
                "schema is {schema}; this framescope reads {}",
                framescope_core::SCHEMA_ID
            ));
        }
    }
    if d.header.is_none() {
        notes.push("the header record is missing".into());
    }
    if d.truncated_last_line {
        notes.push("the last line was truncated (the run was cut short) and was ignored".into());
    }
    if !d.bad_lines.is_empty() {
        notes.push(format!(
            "{} line(s) could not be read and were ignored: {:?}",
            d.bad_lines.len(),
            d.bad_lines
        ));
    }
    let rec = match &d.summary {
        Some(s) => {
            notes.push(format!(
                "summary written by the dump {} (ended by {})",
                s.produced_by, s.ended_by
            ));
            s.clone()
        }
        None => {
            notes.push(format!(
                "no summary record (the run did not end normally): recomputed from {} frame records",
                d.builder.frames()
            ));
            SummaryRecord {
                summary: d.builder.summary(),
                // Lost frames show as gaps in the frame indices.
                dropped_frames: d.gaps,
                dropped_samples: 0,
                produced_by: "report".into(),
                ended_by: "recomputed".into(),
            }
        }
    };

    if json {
        for n in &notes {
            eprintln!("framescope: {n}");
        }
        println!("{}", rec.to_line());
    } else {
        print!("{}", render(&path, &d, &rec, &notes));
    }
    0
}
