//! Reading a framescope dump in tests: every line parsed, checked against the published JSON
//! Schema, and split into header, frames and summary.

use serde_json::Value;
use std::path::Path;

pub struct Dump {
    pub header: Value,
    pub frames: Vec<Value>,
    /// `mark` records, in order.
    pub marks: Vec<Value>,
    /// `series` records, in order.
    pub series: Vec<Value>,
    /// `fault` records (a lost device or surface below framescope), in order.
    pub faults: Vec<Value>,
    pub summary: Option<Value>,
}

/// Parses `path`; panics naming the first line that does not parse, does not match the schema,
/// or breaks the order header, frames..., summary.
pub fn read(path: &Path) -> Dump {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    parse(&text)
}

/// Like [`read`], for the dump of a process that was killed: a last line without its newline
/// (the kill landed in the middle of a write, as docs/dump-schema.md allows) is ignored.
pub fn read_killed(path: &Path) -> Dump {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    let whole = match text.rfind('\n') {
        Some(i) => &text[..=i],
        None => "",
    };
    parse(whole)
}

fn parse(text: &str) -> Dump {
    let schema: Value = serde_json::from_str(framescope_core::dump::SCHEMA_JSON).expect("schema is JSON");
    let mut schemas = boon::Schemas::new();
    let mut compiler = boon::Compiler::new();
    compiler
        .add_resource("mem:///framescope.v1.schema.json", schema)
        .expect("add schema");
    let index = compiler
        .compile("mem:///framescope.v1.schema.json", &mut schemas)
        .expect("schema compiles");
    let mut header = None;
    let mut frames = Vec::new();
    let mut marks = Vec::new();
    let mut series = Vec::new();
    let mut faults = Vec::new();
    let mut summary = None;
    for (i, line) in text.lines().enumerate() {
        let v: Value =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("line {} does not parse: {e}: {line}", i + 1));
        if let Err(e) = schemas.validate(&v, index) {
            panic!("line {} does not match the schema: {e:#}\n{line}", i + 1);
        }
        match v["type"].as_str() {
            Some("header") => {
                assert!(header.is_none() && i == 0, "header on line {}", i + 1);
                header = Some(v);
            }
            Some("frame") => {
                assert!(summary.is_none(), "frame after the summary on line {}", i + 1);
                frames.push(v);
            }
            Some("mark") => {
                assert!(summary.is_none(), "mark after the summary on line {}", i + 1);
                marks.push(v);
            }
            Some("series") => {
                assert!(summary.is_none(), "series after the summary on line {}", i + 1);
                series.push(v);
            }
            Some("fault") => {
                assert!(summary.is_none(), "fault after the summary on line {}", i + 1);
                faults.push(v);
            }
            Some("summary") => {
                assert!(summary.is_none(), "second summary on line {}", i + 1);
                summary = Some(v);
            }
            other => panic!("line {}: unknown type {other:?}", i + 1),
        }
    }
    Dump {
        header: header.expect("no header"),
        frames,
        marks,
        series,
        faults,
        summary,
    }
}

impl Dump {
    /// The values of `field` in every frame, as u64 (panics on null or absence).
    pub fn u64s(&self, field: &str) -> Vec<u64> {
        self.frames
            .iter()
            .map(|f| {
                f[field]
                    .as_u64()
                    .unwrap_or_else(|| panic!("frame {} has no {field}: {f}", f["frame"]))
            })
            .collect()
    }
}

/// Field `k` of frame `f` as an integer; panics naming the frame when it has none.
pub fn frame_u64(f: &serde_json::Value, k: &str) -> u64 {
    f[k].as_u64()
        .unwrap_or_else(|| panic!("frame {} has no {k}: {f}", f["frame"]))
}

/// The middle value (the upper of the two middle ones for an even count); panics on none.
pub fn median(mut v: Vec<u64>) -> u64 {
    assert!(!v.is_empty(), "a median of nothing");
    v.sort_unstable();
    v[v.len() / 2]
}

/// The header's `unavailable` reason for `source`, if it lists one.
pub fn unavailable(header: &serde_json::Value, source: &str) -> Option<String> {
    header["unavailable"]
        .as_array()?
        .iter()
        .find(|u| u["source"] == source)
        .map(|u| u["reason"].as_str().unwrap_or_default().to_string())
}
