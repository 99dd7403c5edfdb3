//! The most expensive regions (debug-label regions and render passes), smoothed over frames,
//! for the HUD's "top regions" table. Fixed capacity and fed per sample on the app's thread,
//! so it allocates nothing after creation; only `top` (a few times per second) builds strings.

use crate::model::sample::{LabelPath, SampleRecord, Scope};

/// Regions tracked; the least recently seen one gives its place to a new one.
pub const CAPACITY: usize = 64;
/// Weight of the newest frame in the moving average.
const ALPHA: f64 = 0.1;

#[derive(Clone, Copy, Default)]
struct Entry {
    used: bool,
    scope: Scope,
    path: LabelPath,
    /// Smoothed GPU ns per frame.
    ema_ns: f64,
    /// Frame being summed (a region may occur several times in one frame) and its sum.
    frame: u64,
    sum_ns: u64,
    seen: bool,
}

impl Entry {
    fn fold(&mut self) {
        if self.seen {
            let v = self.sum_ns as f64;
            self.ema_ns = if self.ema_ns == 0.0 {
                v
            } else {
                self.ema_ns * (1.0 - ALPHA) + v * ALPHA
            };
        }
        self.sum_ns = 0;
        self.seen = false;
    }
}

/// Draws tracked for the HUD's "top draws" rows.
pub const DRAW_CAPACITY: usize = 32;

/// One draw position (label path, command buffer, draw index, pipeline) and its GPU time,
/// smoothed over the frames it was timed in: with a draw budget a position is timed only
/// when the window covers it, so a per-frame average would mostly average zeros.
#[derive(Clone, Copy, Default)]
struct DrawEntry {
    used: bool,
    path: LabelPath,
    cmdbuf: u32,
    draw: u32,
    pipeline: u64,
    ema_ns: f64,
}

pub struct RegionTable {
    entries: [Entry; CAPACITY],
    draws: [DrawEntry; DRAW_CAPACITY],
    /// Index of the draw entry with the smallest time once all are used: a sample below it
    /// cannot enter, which rejects most draws of a large frame with one comparison (the table
    /// is fed per sample on the thread that reads the GPU results).
    draw_min: Option<usize>,
}

impl Default for RegionTable {
    fn default() -> Self {
        RegionTable {
            entries: [Entry::default(); CAPACITY],
            draws: [DrawEntry::default(); DRAW_CAPACITY],
            draw_min: None,
        }
    }
}

impl RegionTable {
    fn add_draw(&mut self, s: &SampleRecord, ns: u64) {
        let Some(draw) = s.draw else { return };
        let ns = ns as f64;
        let pipeline = s.params.map_or(0, |p| p.pipeline);
        if let Some(m) = self.draw_min {
            if ns < self.draws[m].ema_ns {
                // Below the smallest kept time: only a kept draw, whose time falls, changes.
                if let Some(e) = self
                    .draws
                    .iter_mut()
                    .find(|e| e.draw == draw && e.cmdbuf == s.cmdbuf && e.pipeline == pipeline && e.path == s.label)
                {
                    e.ema_ns = e.ema_ns * (1.0 - ALPHA) + ns * ALPHA;
                    self.draw_min = Some(min_index(&self.draws));
                }
                return;
            }
        }
        let found = self.draws.iter().position(|e| {
            e.used && e.draw == draw && e.cmdbuf == s.cmdbuf && e.pipeline == pipeline && e.path == s.label
        });
        match found {
            Some(i) => {
                let e = &mut self.draws[i];
                e.ema_ns = e.ema_ns * (1.0 - ALPHA) + ns * ALPHA;
            }
            None => {
                let i = self
                    .draws
                    .iter()
                    .position(|e| !e.used)
                    .unwrap_or_else(|| min_index(&self.draws));
                self.draws[i] = DrawEntry {
                    used: true,
                    path: s.label,
                    cmdbuf: s.cmdbuf,
                    draw,
                    pipeline,
                    ema_ns: ns,
                };
            }
        }
        self.draw_min = self.draws.iter().all(|e| e.used).then(|| min_index(&self.draws));
    }

    /// The `n` most expensive draws as (`draw N @ label`, smoothed ms when timed).
    pub fn top_draws(&self, n: usize, out: &mut Vec<(String, f64)>) {
        let mut list: Vec<&DrawEntry> = self.draws.iter().filter(|e| e.used).collect();
        list.sort_by(|a, b| b.ema_ns.total_cmp(&a.ema_ns));
        out.clear();
        for e in list.into_iter().take(n) {
            let label = crate::model::labels::path_string(e.path.ids());
            let name = if label.is_empty() {
                format!("draw {}", e.draw)
            } else {
                format!("draw {} @ {label}", e.draw)
            };
            out.push((name, e.ema_ns / 1e6));
        }
    }

    /// Counts a label, render-pass or draw sample with a time; other samples are ignored.
    pub fn add(&mut self, s: &SampleRecord) {
        if s.overwritten {
            return;
        }
        let Some(ns) = s.gpu_ns() else { return };
        if s.scope == Scope::Draw {
            return self.add_draw(s, ns);
        }
        if !matches!(s.scope, Scope::Label | Scope::RenderPass) {
            return;
        }
        let i = match self
            .entries
            .iter()
            .position(|e| e.used && e.scope == s.scope && e.path == s.label)
        {
            Some(i) => i,
            None => {
                let i = self.entries.iter().position(|e| !e.used).unwrap_or_else(|| {
                    let oldest = self.entries.iter().enumerate().min_by_key(|(_, e)| e.frame);
                    oldest.map_or(0, |(i, _)| i)
                });
                self.entries[i] = Entry {
                    used: true,
                    scope: s.scope,
                    path: s.label,
                    frame: s.frame,
                    ..Entry::default()
                };
                i
            }
        };
        let e = &mut self.entries[i];
        if s.frame != e.frame {
            e.fold();
            e.frame = s.frame;
        }
        e.sum_ns = e.sum_ns.saturating_add(ns);
        e.seen = true;
    }

    /// The `n` most expensive regions as (name, smoothed ms per frame), most expensive first.
    /// Render passes are named `pass @ <label>` (their enclosing label).
    pub fn top(&self, n: usize, out: &mut Vec<(String, f64)>) {
        let mut list: Vec<(f64, &Entry)> = self
            .entries
            .iter()
            .filter(|e| e.used)
            .map(|e| {
                let mut e2 = *e;
                e2.fold();
                (e2.ema_ns, e)
            })
            .filter(|(v, _)| *v > 0.0)
            .collect();
        list.sort_by(|a, b| b.0.total_cmp(&a.0));
        out.clear();
        for (v, e) in list.into_iter().take(n) {
            let label = crate::model::labels::path_string(e.path.ids());
            let name = match e.scope {
                Scope::RenderPass if label.is_empty() => "pass".to_string(),
                Scope::RenderPass => format!("pass @ {label}"),
                _ => label,
            };
            out.push((name, v / 1e6));
        }
    }
}

fn min_index(d: &[DrawEntry]) -> usize {
    d.iter()
        .enumerate()
        .min_by(|a, b| a.1.ema_ns.total_cmp(&b.1.ema_ns))
        .map_or(0, |(i, _)| i)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn label(name: &[u8], frame: u64, ns: u64) -> SampleRecord {
        let mut path = LabelPath::default();
        path.push(crate::model::labels::intern(name));
        SampleRecord {
            frame,
            scope: Scope::Label,
            label: path,
            gpu_begin_ns: Some(1000),
            gpu_end_ns: Some(1000 + ns),
            ..SampleRecord::default()
        }
    }

    #[test]
    fn occurrences_in_one_frame_add_up_and_frames_are_smoothed() {
        let mut t = RegionTable::default();
        // Frame 0: "Main" twice (split over two command buffers), 1 ms + 1 ms.
        t.add(&label(b"regions-Main", 0, 1_000_000));
        t.add(&label(b"regions-Main", 0, 1_000_000));
        t.add(&label(b"regions-Post", 0, 500_000));
        let mut out = Vec::new();
        t.top(5, &mut out);
        assert_eq!(
            out,
            vec![("regions-Main".to_string(), 2.0), ("regions-Post".to_string(), 0.5)]
        );
        // Frame 1: Main 4 ms -> 2 * 0.9 + 4 * 0.1 = 2.2 ms.
        t.add(&label(b"regions-Main", 1, 4_000_000));
        t.top(1, &mut out);
        assert_eq!(out.len(), 1);
        assert!((out[0].1 - 2.2).abs() < 1e-9, "{out:?}");
    }

    #[test]
    fn draws_go_to_their_own_rows_and_overwritten_samples_do_not_count() {
        let mut t = RegionTable::default();
        let mut s = label(b"regions-x", 0, 10);
        s.scope = Scope::Draw;
        s.draw = Some(3);
        t.add(&s);
        let mut o = label(b"regions-y", 0, 10);
        o.overwritten = true;
        t.add(&o);
        let mut out = Vec::new();
        t.top(5, &mut out);
        assert!(out.is_empty());
        t.top_draws(5, &mut out);
        assert_eq!(out, vec![("draw 3 @ regions-x".to_string(), 10.0 / 1e6)]);
    }

    fn draw(index: u32, ns: u64) -> SampleRecord {
        SampleRecord {
            scope: Scope::Draw,
            draw: Some(index),
            gpu_begin_ns: Some(1000),
            gpu_end_ns: Some(1000 + ns),
            ..SampleRecord::default()
        }
    }

    #[test]
    fn the_most_expensive_draws_stay_and_cheap_ones_are_rejected() {
        let mut t = RegionTable::default();
        // 1000 draws a frame for 3 frames; draw i costs i ns, draw 500 is a spike of 1 ms.
        for _ in 0..3 {
            for i in 0..1000u32 {
                t.add(&draw(i, if i == 500 { 1_000_000 } else { u64::from(i) }));
            }
        }
        let mut out = Vec::new();
        t.top_draws(3, &mut out);
        let names: Vec<&str> = out.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["draw 500", "draw 999", "draw 998"]);
        assert!((out[0].1 - 1.0).abs() < 1e-9, "{out:?}");
        t.top_draws(DRAW_CAPACITY, &mut out);
        assert_eq!(out.len(), DRAW_CAPACITY);
        assert!(
            out.iter().all(|(n, _)| n == "draw 500" || n.as_str() >= "draw 968"),
            "{out:?}"
        );
    }

    #[test]
    fn a_full_table_replaces_the_region_seen_longest_ago() {
        let mut t = RegionTable::default();
        for i in 0..CAPACITY as u64 {
            t.add(&label(format!("regions-r{i}").as_bytes(), i + 1, 1000));
        }
        t.add(&label(b"regions-new", 100, 5000));
        let mut out = Vec::new();
        t.top(CAPACITY, &mut out);
        assert_eq!(out.len(), CAPACITY);
        assert_eq!(out[0].0, "regions-new");
        assert!(
            !out.iter().any(|(n, _)| n == "regions-r0"),
            "the oldest region was evicted"
        );
    }
}
