//! The frame records of one dump, streamed strictly, for the commands that compute on them
//! (`compare`, `plot`): a line that is not a dump record, a frame without its index or time,
//! or frames out of order make the dump unusable, with the file and line named, since a gate
//! or a plot on damaged data would mislead. A truncated last line (the app was killed during
//! a write) is only noted. Memory is bounded by one line ([`Lines`]).

use crate::lines::{Line, Lines, GIVE_UP, MAX_LINE};
use crate::text::show;
use serde::Deserialize;
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::ffi::OsStr;

#[derive(Deserialize)]
struct KindLine<'a> {
    #[serde(rename = "type", borrow)]
    kind: Option<Cow<'a, str>>,
}

/// The fields of a frame record these commands read; the rest is skipped unstored.
#[derive(Deserialize)]
pub struct FrameLine<'a> {
    pub frame: Option<u64>,
    pub t_ns: Option<u64>,
    pub cpu_frame_ns: Option<u64>,
    pub gpu_busy_ns: Option<u64>,
    #[serde(default)]
    pub display_latency_ns: Option<u64>,
    #[serde(default, borrow)]
    pub display: Option<Cow<'a, str>>,
    #[serde(default)]
    pub stutter: bool,
    /// What a stutter frame waited on or created (the HTML page's stutter table).
    #[serde(default)]
    pub stutter_causes: Vec<crate::timeline::CauseFields>,
    #[serde(default, borrow)]
    pub samples: Vec<SampleLine<'a>>,
    #[serde(default, borrow)]
    pub counters: Option<BTreeMap<Cow<'a, str>, Option<f64>>>,
}

#[derive(Deserialize)]
pub struct SampleLine<'a> {
    #[serde(borrow)]
    pub scope: Option<Cow<'a, str>>,
    #[serde(borrow)]
    pub label: Option<Cow<'a, str>>,
    pub gpu_ns: Option<u64>,
    #[serde(default)]
    pub overwritten: bool,
}

/// What a scan saw besides the frames.
pub struct Scan {
    /// The line number of a truncated last line.
    pub truncated_last: Option<u64>,
}

impl Scan {
    /// Notes worth printing about `path`.
    pub fn notes(&self, path: &OsStr) -> Vec<String> {
        self.truncated_last
            .map(|n| format!("'{}' line {n}: a truncated last line, ignored", show(path)))
            .into_iter()
            .collect()
    }
}

/// Calls `frame` with every frame record of `path` and its `t_ns`, in order. `Err`: why the
/// dump is unusable, naming the file and, where there is one, the line.
pub fn scan(path: &OsStr, mut frame: impl FnMut(&FrameLine, u64)) -> Result<Scan, String> {
    let p = show(path);
    let file = std::fs::File::open(path).map_err(|e| format!("cannot read '{p}': {e}"))?;
    let mut lines = Lines::new(file, GIVE_UP);
    let (mut n, mut header, mut frames) = (0u64, false, 0u64);
    let mut unparsed: Option<u64> = None;
    let mut last: Option<(u64, u64)> = None;
    while let Some((blank, line)) = lines.next_line().map_err(|e| format!("cannot read '{p}': {e}"))? {
        n += 1 + blank;
        let text = match line {
            Line::GiveUp => return Err(format!("'{p}': nothing readable in {} MiB", GIVE_UP >> 20)),
            Line::TooLong => return Err(format!("'{p}' line {n}: longer than {} MiB", MAX_LINE >> 20)),
            Line::Text(t) => t,
        };
        if text.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        if let Some(bad) = unparsed {
            return Err(format!("'{p}' line {bad}: not a framescope dump record"));
        }
        let kind = serde_json::from_slice::<KindLine>(text).ok().and_then(|k| k.kind);
        match kind.as_deref() {
            Some("header") => header = true,
            Some("summary" | "mark" | "series" | "fault") => {}
            Some("frame") => {
                let Ok(f) = serde_json::from_slice::<FrameLine>(text) else {
                    unparsed = Some(n);
                    continue;
                };
                let (Some(index), Some(t)) = (f.frame, f.t_ns) else {
                    return Err(format!("'{p}' line {n}: a frame record without frame or t_ns"));
                };
                if last.is_some_and(|(pf, pt)| index <= pf || t < pt) {
                    return Err(format!("'{p}' line {n}: frame {index} is out of order"));
                }
                last = Some((index, t));
                frames += 1;
                frame(&f, t);
            }
            _ => unparsed = Some(n),
        }
        lines.since_record = 0;
    }
    if !header && frames == 0 {
        return Err(format!("'{p}' is not a framescope dump (no header, no frame records)"));
    }
    Ok(Scan {
        truncated_last: unparsed,
    })
}
