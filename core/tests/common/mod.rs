//! Helpers shared by the core integration tests: temp paths, dump reading, schema
//! validation and the structural rules of a `framescope.v1` dump.
#![allow(dead_code)]

use serde_json::Value;
use std::path::PathBuf;

/// A fresh path in the temp dir, unique per process and call.
pub fn temp_path(tag: &str) -> PathBuf {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    let n = N.fetch_add(1, Ordering::Relaxed);
    std::env::temp_dir().join(format!("framescope-core-test-{}-{tag}-{n}.jsonl", std::process::id()))
}

/// Parses every line of a dump; panics naming the line that does not parse.
pub fn read_lines(path: &std::path::Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    assert!(text.is_empty() || text.ends_with('\n'), "last line is not terminated");
    text.lines()
        .enumerate()
        .map(|(i, l)| serde_json::from_str(l).unwrap_or_else(|e| panic!("line {} does not parse: {e}: {l}", i + 1)))
        .collect()
}

/// Like [`read_lines`] for a dump whose writer was killed: the one damage the writer's design
/// allows (a kill inside its last `write`, see core/src/dump/writer.rs) is a cut last line,
/// which is dropped here; every line before it must be whole and parse. Returns the lines and
/// whether the last one was cut.
pub fn read_lines_of_killed(path: &std::path::Path) -> (Vec<Value>, bool) {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    let whole = text.rfind('\n').map_or(0, |i| i + 1);
    let cut = whole < text.len();
    let lines = text[..whole]
        .lines()
        .enumerate()
        .map(|(i, l)| serde_json::from_str(l).unwrap_or_else(|e| panic!("line {} does not parse: {e}: {l}", i + 1)))
        .collect();
    (lines, cut)
}

/// The compiled dump schema.
pub struct Validator {
    schemas: boon::Schemas,
    index: boon::SchemaIndex,
}

impl Validator {
    pub fn new() -> Self {
        let schema: Value = serde_json::from_str(framescope_core::dump::SCHEMA_JSON).expect("schema is JSON");
        let mut schemas = boon::Schemas::new();
        let mut compiler = boon::Compiler::new();
        compiler
            .add_resource("mem:///framescope.v1.schema.json", schema)
            .expect("add schema");
        let index = compiler
            .compile("mem:///framescope.v1.schema.json", &mut schemas)
            .expect("schema compiles");
        Validator { schemas, index }
    }

    pub fn check(&self, line_no: usize, v: &Value) {
        if let Err(e) = self.schemas.validate(v, self.index) {
            panic!("line {line_no} does not match the schema: {e:#}\n{v}");
        }
    }

    pub fn is_valid(&self, v: &Value) -> bool {
        self.schemas.validate(v, self.index).is_ok()
    }
}

/// What a structural check found.
pub struct Checked {
    pub frames: Vec<Value>,
    pub summary: Option<Value>,
    /// Frame indices missing between consecutive frame records.
    pub gaps: u64,
}

/// One header first, then frames in increasing order, then at most one summary, last.
/// Every line must match the schema.
pub fn check_structure(lines: &[Value]) -> Checked {
    let v = Validator::new();
    for (i, l) in lines.iter().enumerate() {
        v.check(i + 1, l);
    }
    assert!(!lines.is_empty(), "empty dump");
    assert_eq!(lines[0]["type"], "header", "first line must be the header");
    let mut frames = Vec::new();
    let mut summary = None;
    let mut gaps = 0;
    for (i, l) in lines.iter().enumerate().skip(1) {
        match l["type"].as_str().unwrap() {
            "header" => panic!("second header on line {}", i + 1),
            "frame" => {
                assert!(summary.is_none(), "frame after the summary on line {}", i + 1);
                let f = l["frame"].as_u64().unwrap();
                if let Some(prev) = frames.last().map(|p: &Value| p["frame"].as_u64().unwrap()) {
                    assert!(f > prev, "frame {f} after frame {prev} on line {}", i + 1);
                    gaps += f - prev - 1;
                }
                frames.push(l.clone());
            }
            "mark" | "series" | "fault" => assert!(summary.is_none(), "{} after the summary", l["type"]),
            "summary" => {
                assert!(summary.is_none(), "second summary on line {}", i + 1);
                assert_eq!(i, lines.len() - 1, "summary is not the last line");
                summary = Some(l.clone());
            }
            other => panic!("unknown type {other}"),
        }
    }
    Checked { frames, summary, gaps }
}

/// Asserts the summary agrees with the frame records, recomputing count, duration and mean
/// fps here from the definitions (not with the core stats code).
pub fn check_summary_agrees(c: &Checked) {
    let s = c.summary.as_ref().expect("summary present");
    assert_eq!(s["frames"].as_u64().unwrap(), c.frames.len() as u64);
    let times: Vec<u64> = c.frames.iter().filter_map(|f| f["cpu_frame_ns"].as_u64()).collect();
    if times.is_empty() {
        assert!(s["fps_mean"].is_null());
    } else {
        let fps = times.len() as f64 * 1e9 / times.iter().sum::<u64>() as f64;
        let got = s["fps_mean"].as_f64().unwrap();
        assert!((got - fps).abs() < 1e-9 * fps, "fps_mean {got} vs {fps}");
        assert_eq!(
            s["frame_time_ns"]["max"].as_u64().unwrap(),
            *times.iter().max().unwrap()
        );
        assert_eq!(s["frame_time_ns"]["count"].as_u64().unwrap(), times.len() as u64);
    }
    if let (Some(first), Some(last)) = (c.frames.first(), c.frames.last()) {
        let d = last["t_ns"].as_u64().unwrap() - first["t_ns"].as_u64().unwrap();
        assert_eq!(s["duration_ns"].as_u64().unwrap(), d);
    }
    let missing = c.frames.iter().filter(|f| f["gpu_busy_ns"].is_null()).count() as u64;
    assert_eq!(s["gpu_missing_frames"].as_u64().unwrap(), missing);
    assert!(
        c.gaps <= s["dropped_frames"].as_u64().unwrap(),
        "gaps not explained by drops"
    );
}
