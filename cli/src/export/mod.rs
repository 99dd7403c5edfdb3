//! `framescope export DUMP (--perfetto FILE | --csv FILE | --presentmon FILE | --parquet
//! FILE)...`: a dump converted for other tools, all formats in one pass over the dump.
//!
//! The dump is streamed with [`Lines`], one record at a time, so memory stays bounded by one
//! line whatever the dump holds; nothing in it is trusted. Unreadable lines, frames out of
//! order and lines over [`MAX_LINE`] are skipped with a warning naming the file and line
//! (the first few, then a count), as `framescope report` does. Output files are created or
//! emptied, never written through a symbolic link, and never when they are the dump itself.

mod csv;
mod parquet;
mod perfetto;
mod presentmon;
mod protobuf;
mod records;
mod sink;

use crate::lines::{Line, Lines, GIVE_UP, MAX_LINE};
use crate::output::{create_output, FileId};
use crate::text::{escape, show};
use records::{Frame, Header, Mark, Series};
use serde::Deserialize;
use sink::Sink;
use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::{self, BufWriter};
use std::path::Path;

/// `export --help`'s description.
pub const ABOUT: &str = "\
Converts a dump in one streamed pass, to every format asked for. Output files are created or
truncated (mode 0644); a symbolic link is refused.";

pub const EXAMPLES: &str = "\
examples:
  framescope export run.jsonl --perfetto run.perfetto-trace
  framescope export run.jsonl --csv run-mangohud.csv --presentmon run-presentmon.csv
  framescope export run.jsonl --parquet run.parquet";

// `export`'s options (a plain comment: a doc comment would become clap's about text). Each
// format at most once: a second `--csv` is an error, not a replacement.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// the JSON Lines dump to convert
    #[arg(value_name = "DUMP")]
    pub dump: OsString,
    /// Perfetto trace (open in ui.perfetto.dev): one slice per frame on a CPU track; the
    /// frame's GPU samples as GPU render stage events (nested, one hardware-queue track per
    /// command buffer); gpu_busy_ns and the GPU counters as GPU counter events; system
    /// counters as counter tracks; the dump's marks as instant events
    #[arg(long, value_name = "FILE")]
    pub perfetto: Option<OsString>,
    /// MangoHud log layout (system info lines, then one row per frame)
    #[arg(long, value_name = "FILE")]
    pub csv: Option<OsString>,
    /// PresentMon CSV columns, one row per frame (columns framescope has no value for are NA)
    #[arg(long, value_name = "FILE")]
    pub presentmon: Option<OsString>,
    /// Parquet, one row per frame with the run's metadata in every row (dump, exe, pid, api,
    /// device, driver, start_unix_ns), frame times, counts and a counter_<name> column per
    /// counter: load many runs into DuckDB or Spark
    #[arg(long, value_name = "FILE")]
    pub parquet: Option<OsString>,
}

/// Problems listed one per line; the rest are counted.
const WARNINGS_SHOWN: u64 = 10;

#[derive(Deserialize)]
struct Kind {
    #[serde(rename = "type")]
    kind: Option<String>,
}

#[derive(Debug)]
struct Job {
    dump: OsString,
    outputs: Vec<(&'static str, OsString)>,
}

/// The outputs asked for, checked together.
fn job(a: Args) -> Result<Job, String> {
    let outputs: Vec<(&'static str, OsString)> = [
        ("perfetto", a.perfetto),
        ("csv", a.csv),
        ("presentmon", a.presentmon),
        ("parquet", a.parquet),
    ]
    .into_iter()
    .filter_map(|(format, file)| Some((format, file?)))
    .collect();
    if outputs.is_empty() {
        return Err("no output: give --perfetto, --csv, --presentmon or --parquet".into());
    }
    for (k, (_, file)) in outputs.iter().enumerate() {
        if outputs[..k].iter().any(|(_, p)| p == file) {
            return Err(format!("'{}' is named as two outputs", show(file)));
        }
    }
    Ok(Job { dump: a.dump, outputs })
}

pub fn main(args: Args) -> i32 {
    let job = match job(args) {
        Ok(j) => j,
        Err(e) => return crate::usage::usage_error::<Args>("export", &format!("framescope export: {e}")),
    };
    match export(&job) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("framescope export: {e}");
            1
        }
    }
}

fn export(args: &Job) -> Result<(), String> {
    let input = File::open(&args.dump).map_err(|e| format!("cannot read '{}': {e}", show(&args.dump)))?;
    let in_meta = input
        .metadata()
        .map_err(|e| format!("cannot read '{}': {e}", show(&args.dump)))?;
    let mut sinks: Vec<(&OsStr, Box<dyn Sink>)> = Vec::new();
    for (format, path) in &args.outputs {
        // The dump is never emptied by naming it (or a hard link to it) as an output.
        let file = create_output(Path::new(path), &[FileId::of(&in_meta)])
            .map_err(|e| format!("cannot write '{}': {e}", show(path)))?;
        let out = BufWriter::with_capacity(1 << 16, file);
        let sink: Box<dyn Sink> = match *format {
            "perfetto" => Box::new(perfetto::Perfetto::new(out)),
            "csv" => Box::new(csv::MangoHud::new(out)),
            "parquet" => Box::new(parquet::Parquet::new(out, &show(&args.dump))),
            _ => Box::new(presentmon::PresentMon::new(out)),
        };
        sinks.push((path.as_os_str(), sink));
    }
    let name = show(&args.dump);
    let mut r = Reader::new(&name);
    let stats = r.run(input, GIVE_UP, &mut |event| {
        for (path, sink) in sinks.iter_mut() {
            let res = match event {
                Event::Header(h) => sink.header(h),
                Event::Frame(f) => sink.frame(f),
                Event::Mark(m) => sink.mark(m),
                Event::Series(x) => sink.series(x),
            };
            res.map_err(|e| format!("cannot write '{}': {e}", show(path)))?;
        }
        Ok(())
    })?;
    for (path, sink) in sinks.iter_mut() {
        let notes = sink
            .finish()
            .map_err(|e| format!("cannot write '{}': {e}", show(path)))?;
        for n in notes {
            eprintln!("framescope export: {}: {n}", show(path));
        }
    }
    eprintln!(
        "framescope export: {} frame(s) from '{name}' to {}",
        stats.frames,
        args.outputs
            .iter()
            .map(|(_, p)| format!("'{}'", show(p)))
            .collect::<Vec<_>>()
            .join(", ")
    );
    Ok(())
}

enum Event<'a> {
    Header(&'a Header),
    Frame(&'a Frame),
    Mark(&'a Mark),
    Series(&'a Series),
}

#[derive(Default, Debug)]
struct Stats {
    frames: u64,
    warnings: u64,
}

/// Reads a dump and hands its header and frames on, warning about what it skips.
struct Reader<'n> {
    name: &'n str,
    stats: Stats,
}

/// What a reader has seen so far of its dump.
#[derive(Default)]
struct Seen {
    header: bool,
    /// The header says draws and dispatches were not counted.
    uncounted: bool,
    last_frame: Option<u64>,
}

impl<'n> Reader<'n> {
    fn new(name: &'n str) -> Self {
        Reader {
            name,
            stats: Stats::default(),
        }
    }

    fn warn(&mut self, line: u64, what: &str) {
        self.stats.warnings += 1;
        if self.stats.warnings <= WARNINGS_SHOWN {
            eprintln!("framescope export: {}:{line}: {what}; skipped", self.name);
        }
    }

    fn header_line(
        &mut self,
        text: &[u8],
        n: u64,
        seen: &mut Seen,
        emit: &mut dyn FnMut(Event) -> Result<(), String>,
    ) -> Result<(), String> {
        let h =
            serde_json::from_slice::<Header>(text).map_err(|e| format!("{}:{n}: unreadable header: {e}", self.name))?;
        seen.header = true;
        seen.uncounted = h.command_counts == Some(false);
        if let Some(s) = h.schema.as_deref().filter(|&s| s != framescope_core::SCHEMA_ID) {
            eprintln!(
                "framescope export: {}:{n}: schema is {}; this framescope reads {}",
                self.name,
                escape(s),
                framescope_core::SCHEMA_ID
            );
        }
        emit(Event::Header(&h))
    }

    fn frame_line(
        &mut self,
        text: &[u8],
        n: u64,
        seen: &mut Seen,
        emit: &mut dyn FnMut(Event) -> Result<(), String>,
    ) -> Result<(), String> {
        let mut f = match serde_json::from_slice::<Frame>(text) {
            Ok(f) => f,
            Err(e) => {
                self.warn(n, &format!("unreadable frame record ({e})"));
                return Ok(());
            }
        };
        if seen.last_frame.is_some_and(|prev| f.frame <= prev) {
            self.warn(n, "frame index not after the previous frame's");
            return Ok(());
        }
        if !seen.header {
            eprintln!(
                "framescope export: {}:{n}: frame record before any header; exporting without one",
                self.name
            );
            seen.header = true;
            emit(Event::Header(&Header::default()))?;
        }
        seen.last_frame = Some(f.frame);
        self.stats.frames += 1;
        if seen.uncounted {
            // Zeros there mean "not counted": exported as unknown, not as none.
            f.draws = None;
            f.dispatches = None;
        }
        emit(Event::Frame(&f))
    }

    fn run(
        &mut self,
        input: impl io::Read,
        give_up: u64,
        emit: &mut dyn FnMut(Event) -> Result<(), String>,
    ) -> Result<Stats, String> {
        let mut lines = Lines::new(input, give_up);
        let mut seen = Seen::default();
        // A line that did not parse is reported once the next one is read: the last line of
        // a dump cut short by a kill is only a truncated record, which readers ignore.
        let mut unparsed: Option<u64> = None;
        let mut n = 0u64;
        loop {
            let next = lines
                .next_line()
                .map_err(|e| format!("{}:{}: cannot read: {e}", self.name, n + 1))?;
            let Some((blank, line)) = next else { break };
            n += 1 + blank;
            let text = match line {
                Line::GiveUp => {
                    return Err(format!(
                        "{}:{n}: no readable record in {} MiB; stopped",
                        self.name,
                        give_up >> 20
                    ))
                }
                Line::TooLong => {
                    if let Some(prev) = unparsed.take() {
                        self.warn(prev, "not a dump record");
                    }
                    self.warn(n, &format!("line longer than {} MiB", MAX_LINE >> 20));
                    continue;
                }
                Line::Text(t) => t,
            };
            if text.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            if let Some(prev) = unparsed.take() {
                self.warn(prev, "not a dump record");
            }
            let Ok(kind) = serde_json::from_slice::<Kind>(text) else {
                unparsed = Some(n);
                continue;
            };
            match kind.kind.as_deref() {
                Some("header") if seen.header => self.warn(n, "a second header"),
                Some("header") => self.header_line(text, n, &mut seen, emit)?,
                Some("frame") => self.frame_line(text, n, &mut seen, emit)?,
                // The formats have no place for a fault; `report` shows it.
                Some("summary" | "fault") => {}
                // Before the header a mark has no track to go on; the writer never puts one
                // there.
                Some("mark") if seen.header => match serde_json::from_slice::<Mark>(text) {
                    Ok(m) => emit(Event::Mark(&m))?,
                    Err(e) => self.warn(n, &format!("unreadable mark record ({e})")),
                },
                Some("series") if seen.header => match serde_json::from_slice::<Series>(text) {
                    Ok(x) => emit(Event::Series(&x))?,
                    Err(e) => self.warn(n, &format!("unreadable series record ({e})")),
                },
                _ => self.warn(n, "not a dump record"),
            }
            lines.since_record = 0;
        }
        if !seen.header {
            return Err(format!(
                "'{}' is not a framescope dump (no header, no frame records)",
                self.name
            ));
        }
        if self.stats.warnings > WARNINGS_SHOWN {
            eprintln!(
                "framescope export: {}: {} more line(s) skipped",
                self.name,
                self.stats.warnings - WARNINGS_SHOWN
            );
        }
        Ok(std::mem::take(&mut self.stats))
    }
}

/// For the fuzz target: exports `data` as a dump to every format, into nothing.
pub fn fuzz_one(data: &[u8]) {
    let mut sinks: Vec<Box<dyn Sink>> = vec![
        Box::new(perfetto::Perfetto::new(io::sink())),
        Box::new(csv::MangoHud::new(io::sink())),
        Box::new(presentmon::PresentMon::new(io::sink())),
        Box::new(parquet::Parquet::new(io::sink(), "fuzz")),
    ];
    let mut r = Reader::new("fuzz");
    let read = r.run(data, GIVE_UP, &mut |event| {
        for sink in sinks.iter_mut() {
            let _ = match event {
                Event::Header(h) => sink.header(h),
                Event::Frame(f) => sink.frame(f),
                Event::Mark(m) => sink.mark(m),
                Event::Series(x) => sink.series(x),
            };
        }
        Ok(())
    });
    if read.is_ok() {
        for sink in sinks.iter_mut() {
            let _ = sink.finish();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::sink::cell;
    use super::*;

    fn read(input: &str, give_up: u64) -> Result<(Vec<String>, Stats), String> {
        let mut seen = Vec::new();
        let stats = Reader::new("d.jsonl").run(input.as_bytes(), give_up, &mut |e| {
            seen.push(match e {
                Event::Header(h) => format!("header {}", h.app_name()),
                Event::Frame(f) => format!("frame {}", f.frame),
                Event::Mark(m) => format!("mark {}", m.label),
                Event::Series(x) => format!("series {} {}", x.source, x.begin_ns.len()),
            });
            Ok(())
        })?;
        Ok((seen, stats))
    }

    #[test]
    fn frames_stream_in_order_and_bad_lines_are_skipped() {
        let d = r#"{"type":"header","exe":"/usr/bin/app"}
{"type":"frame","frame":0,"t_ns":10}
not json
{"type":"frame","frame":0,"t_ns":11}
{"type":"frame","frame":"x","t_ns":11}
{"type":"nope"}
{"type":"series","source":"pm","begin_ns":[1,2],"end_ns":[2,3],"values":{"pm_x":[1.5,null]}}
{"type":"series","source":"pm","begin_ns":"x"}

{"type":"frame","frame":2,"t_ns":30,"cpu_frame_ns":20}
{"type":"summary","frames":2}
{"type":"fra"#;
        let (seen, stats) = read(d, GIVE_UP).unwrap();
        assert_eq!(seen, ["header app", "frame 0", "series pm 2", "frame 2"]);
        assert_eq!(stats.warnings, 5);
        assert_eq!(stats.frames, 2);
    }

    #[test]
    fn hostile_inputs_are_one_error() {
        assert!(read("", GIVE_UP).unwrap_err().contains("not a framescope dump"));
        let e = read(&"\n".repeat(5000), 1000).unwrap_err();
        assert!(e.starts_with("d.jsonl:") && e.contains("no readable record"), "{e}");
        let e = read("{\"type\":\"header\",\"counters\":7}\n", GIVE_UP).unwrap_err();
        assert!(e.starts_with("d.jsonl:1: unreadable header"), "{e}");
    }

    #[test]
    fn uncounted_draws_are_exported_as_unknown() {
        let draws = |d: &str| {
            let mut out = Vec::new();
            Reader::new("d.jsonl")
                .run(d.as_bytes(), GIVE_UP, &mut |e| {
                    if let Event::Frame(f) = e {
                        out.push((f.draws, f.dispatches));
                    }
                    Ok(())
                })
                .unwrap();
            out
        };
        let frame = "{\"type\":\"frame\",\"frame\":0,\"t_ns\":1,\"draws\":0,\"dispatches\":0}\n";
        let off = format!("{{\"type\":\"header\",\"command_counts\":false}}\n{frame}");
        assert_eq!(draws(&off), [(None, None)]);
        // Counted (or a dump from before the field): 0 is 0.
        let on = format!("{{\"type\":\"header\",\"command_counts\":true}}\n{frame}");
        assert_eq!(draws(&on), [(Some(0), Some(0))]);
        assert_eq!(
            draws(&format!("{{\"type\":\"header\"}}\n{frame}")),
            [(Some(0), Some(0))]
        );
    }

    #[test]
    fn a_frame_without_header_gets_an_empty_one() {
        let (seen, _) = read("{\"type\":\"frame\",\"frame\":5,\"t_ns\":1}\n", GIVE_UP).unwrap();
        assert_eq!(seen, ["header ", "frame 5"]);
    }

    #[test]
    fn arguments() {
        let a = |v: &[&str]| {
            use clap::Parser;
            /// `framescope export` alone, as the command line parses it.
            #[derive(Parser)]
            #[command(name = "framescope export")]
            struct Line {
                #[command(flatten)]
                args: Args,
            }
            let argv = ["framescope export"].iter().chain(v);
            job(Line::try_parse_from(argv).map_err(|e| e.to_string())?.args)
        };
        let ok = a(&["d", "--csv", "a", "--perfetto", "b"]).unwrap();
        assert_eq!(ok.outputs.len(), 2);
        assert!(a(&["d"]).unwrap_err().contains("no output"));
        assert!(a(&["d", "--csv"]).unwrap_err().contains("a value is required"));
        assert!(a(&["d", "--csv", "a", "--csv", "b"])
            .unwrap_err()
            .contains("cannot be used multiple times"));
        assert!(a(&["d", "--csv", "a", "--presentmon", "a"])
            .unwrap_err()
            .contains("two outputs"));
        assert!(a(&["d", "--json"])
            .unwrap_err()
            .contains("unexpected argument '--json'"));
    }

    #[test]
    fn cells_cannot_break_rows() {
        assert_eq!(cell("a,b\"c\nd"), "a b c d");
    }
}
