//! What the HUD shows: options from the config, and a snapshot of the numbers, refreshed from
//! the frame history a few times per second.

use framescope_core::config::HudPosition;
use framescope_core::counters::Catalogue;
use framescope_core::frame::{vk_format_name, vk_present_mode_name, SwapchainInfo};

/// A row of the HUD's row table (`hud_rows::ROWS`), by its place there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Row(pub usize);

/// The words of the rows that differ by graphics API, so the rows themselves are written once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ApiWords {
    /// The GPU row's name.
    pub gpu: &'static str,
    /// The counts row has submissions and command counts (Vulkan); GL has no submissions, only
    /// the draws the shim saw.
    pub submits: bool,
}

impl ApiWords {
    /// GPU busy time, from timestamps around every submission.
    pub const VULKAN: ApiWords = ApiWords {
        gpu: "GPU busy",
        submits: true,
    };
    /// One timestamp pair around the whole frame: a span, not busy time.
    pub const GL: ApiWords = ApiWords {
        gpu: "GPU span",
        submits: false,
    };
}

/// The HUD-related part of the config.
#[derive(Clone, Debug, PartialEq)]
pub struct HudOptions {
    pub refresh_ms: u64,
    pub position: HudPosition,
    pub scale: f32,
    pub font_size: f32,
    pub alpha: f32,
    pub history: usize,
    /// What the config asks of each row of [`crate::hud_rows::ROWS`], by index: 0 hides it,
    /// else 1 or the lines of a table.
    pub rows: Vec<u32>,
    /// What the rows say differently for this graphics API.
    pub api: ApiWords,
    /// Counter lines, by name, in order (`all`: every counter of the catalogue).
    pub counters: Vec<String>,
}

impl HudOptions {
    /// Whether `row` is shown.
    pub fn shows(&self, row: Row) -> bool {
        self.amount(row) > 0
    }

    /// What the config asks of `row`: 0 hides it, else 1 or the lines of a table.
    pub fn amount(&self, row: Row) -> usize {
        self.rows.get(row.0).map_or(0, |&n| n as usize)
    }

    pub fn set(&mut self, row: Row, amount: u32) {
        if let Some(n) = self.rows.get_mut(row.0) {
            *n = amount;
        }
    }

    /// Font height in pixels after scaling.
    pub fn font_pixels(&self) -> f32 {
        (self.font_size * self.scale).clamp(4.0, 256.0)
    }
}

/// The drawable of a GL swap (which has no swapchain): its size and what it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SurfaceInfo {
    pub width: u32,
    pub height: u32,
    /// e.g. `GLX back buffer`.
    pub kind: &'static str,
}

/// One counter line of the HUD.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CounterLine {
    pub name: String,
    pub unit: String,
    /// `None`: no value in the newest frame.
    pub value: Option<f64>,
}

impl CounterLine {
    /// `gpu_util_pct        57.0 %`: the value in the unit's usual precision, bytes in MiB/GiB.
    pub fn write(&self, t: &mut String) {
        use std::fmt::Write;
        let _ = write!(t, "{:<22}", self.name);
        let Some(v) = self.value else {
            t.push_str("     -");
            return;
        };
        let _ = match self.unit.as_str() {
            "%" => write!(t, "{v:6.1} %"),
            "bytes" if v >= 1024.0 * 1024.0 * 1024.0 => write!(t, "{:6.2} GiB", v / (1024.0 * 1024.0 * 1024.0)),
            "bytes" => write!(t, "{:6.0} MiB", v / (1024.0 * 1024.0)),
            "W" | "J" => write!(t, "{v:6.1} {}", self.unit),
            "bitmask" => write!(t, "{:#6x}", v as u64),
            "ns" => write!(t, "{:6.3} ms", v / 1e6),
            u => write!(t, "{v:6.0} {u}"),
        };
    }
}

/// Whether the chosen counters are shown as device rows: any of a row's counters chosen (the
/// `basic` preset names them), or `all`.
fn rows_wanted(opts: &HudOptions) -> bool {
    opts.counters
        .iter()
        .any(|c| c == "all" || crate::rows::ROW_COUNTERS.contains(&c.as_str()))
}

/// The numbers on screen. Buffers keep their capacity, so a refresh allocates nothing once
/// the graphs are full (counter names aside).
#[derive(Clone, Debug, Default)]
pub struct HudData {
    /// Frames per second over the last second of history.
    pub fps: Option<f64>,
    /// Mean present-to-present time (ms) over the graph window.
    pub frame_ms: Option<f64>,
    /// Mean GPU busy time (ms) over the graph window.
    pub gpu_ms: Option<f64>,
    /// Present-to-present times (ms), oldest first; missing ones are 0.
    pub frame_graph: Vec<f32>,
    /// GPU busy times (ms), oldest first; missing ones are 0.
    pub gpu_graph: Vec<f32>,
    /// Counts of the newest frame.
    pub submits: u32,
    pub draws: u64,
    pub dispatches: u64,
    pub render_passes: u32,
    /// Draws and dispatches were counted (else only submissions and passes are).
    pub commands_counted: bool,
    /// Index of the newest frame in the history.
    pub frame: Option<u64>,
    pub device: String,
    pub driver: String,
    pub swapchain: Option<SwapchainInfo>,
    /// Shown on the swapchain line when there is no swapchain (GL).
    pub surface: Option<SurfaceInfo>,
    /// Rows by device (`GPU  42%  34°C ...`) of the chosen counters that have one (`rows`).
    pub device_rows: Vec<String>,
    /// The chosen counters the catalogue has and no device row shows, with the newest
    /// frame's values, under display names.
    pub counters: Vec<CounterLine>,
    /// Catalogue slot of each entry of `counters` (rebuilt only when the catalogue changes).
    pub(crate) counter_slots: Vec<usize>,
    /// Catalogue length `counter_slots` was resolved against.
    pub(crate) resolved_for: Option<usize>,
    /// The most expensive regions: (name, smoothed GPU ms per frame), most expensive first.
    pub regions: Vec<(String, f64)>,
    /// The most expensive draws: (name, smoothed GPU ms when timed), most expensive first.
    pub top_draws: Vec<(String, f64)>,
    /// The frame limit in force (`fps_limit`; 0: none).
    pub fps_limit: u32,
    /// Driver counters (`driver_counters=1`, with `hud_counters` naming `driver` or `all`):
    /// each with the newest frame that carried its group.
    pub driver_counters: Vec<CounterLine>,
    /// The frame timeline's rows.
    pub timeline: crate::timeline_rows::TimelineRows,
}

impl HudData {
    /// Refreshes the driver-counter lines from their newest values (at HUD refreshes only: the
    /// lines are built once the groups are known).
    pub fn update_driver(&mut self, latest: &framescope_core::driver_latest::DriverLatest, opts: &HudOptions) {
        if !opts.counters.iter().any(|c| c == "driver" || c == "all") {
            self.driver_counters.clear();
            return;
        }
        let groups = latest.groups();
        let n: usize = groups.iter().map(|g| g.names.len()).sum();
        if self.driver_counters.len() != n {
            self.driver_counters = groups
                .iter()
                .flat_map(|g| g.names.iter().zip(&g.units))
                .map(|(name, unit)| CounterLine {
                    name: name.clone(),
                    unit: match *unit {
                        "percentage" => "%".into(),
                        "nanoseconds" => "ns".into(),
                        "bytes" => "B".into(),
                        u => u.into(),
                    },
                    value: None,
                })
                .collect();
        }
        let mut lines = self.driver_counters.iter_mut();
        for (g, desc) in groups.iter().enumerate() {
            for k in 0..desc.names.len() {
                if let Some(l) = lines.next() {
                    l.value = latest.value(g, k);
                }
            }
        }
    }

    /// Refreshes the counter lines and the device rows from the newest frame `r`; `full`
    /// (the device row on) adds the GPU's memory clock.
    pub fn update_counters(
        &mut self,
        r: &framescope_core::frame::FrameRecord,
        opts: &HudOptions,
        catalogue: Option<&Catalogue>,
        full: bool,
    ) {
        self.resolve_counters(opts, catalogue);
        for (line, &slot) in self.counters.iter_mut().zip(&self.counter_slots) {
            line.value = r.counters.get(slot).filter(|v| v.is_finite());
        }
        self.device_rows.clear();
        if let (true, Some(cat)) = (rows_wanted(opts), catalogue) {
            let value = |n: &str| {
                cat.index_of(n)
                    .and_then(|i| r.counters.get(i))
                    .filter(|v| v.is_finite())
            };
            let mhz = crate::rows::mean_core_mhz(
                cat.counters
                    .iter()
                    .enumerate()
                    .filter_map(|(i, c)| Some((c.name.as_str(), r.counters.get(i)?))),
            );
            crate::rows::device_rows(&value, mhz, full, &mut self.device_rows);
        }
    }

    /// Maps the chosen names to catalogue slots, once per catalogue (it is fixed once the
    /// collector has built its sources, so this runs once or twice per run).
    fn resolve_counters(&mut self, opts: &HudOptions, catalogue: Option<&Catalogue>) {
        let n = catalogue.map_or(0, |c| c.counters.len());
        if self.resolved_for == Some(n) {
            return;
        }
        self.resolved_for = Some(n);
        self.counters.clear();
        self.counter_slots.clear();
        let Some(cat) = catalogue else { return };
        let rows = rows_wanted(opts);
        for name in &opts.counters {
            let slots: Vec<usize> = if name == "all" {
                (0..n).collect()
            } else {
                cat.index_of(name).into_iter().collect()
            };
            for i in slots {
                if self.counter_slots.contains(&i) || (rows && crate::rows::in_rows(&cat.counters[i].name)) {
                    continue;
                }
                self.counter_slots.push(i);
                self.counters.push(CounterLine {
                    name: crate::rows::display_name(&cat.counters[i].name),
                    unit: cat.counters[i].unit.clone(),
                    value: None,
                });
            }
        }
    }

    /// Whether the swapchain line has anything to show.
    pub fn has_swapchain_line(&self) -> bool {
        self.swapchain.is_some() || self.surface.is_some()
    }

    /// `500x500  B8G8R8A8_UNORM  IMMEDIATE`-style text of the swapchain line (`300x300  GLX back
    /// buffer` for a GL surface).
    pub fn swapchain_text(&self, out: &mut String) {
        use std::fmt::Write;
        if self.swapchain.is_none() {
            if let Some(s) = &self.surface {
                let _ = write!(out, "{}x{}  {}", s.width, s.height, s.kind);
            }
        }
        if let Some(s) = &self.swapchain {
            let _ = write!(out, "{}x{}  ", s.width, s.height);
            match vk_format_name(s.format) {
                Some(f) => out.push_str(f),
                None => {
                    let _ = write!(out, "format {}", s.format);
                }
            }
            out.push_str("  ");
            match vk_present_mode_name(s.present_mode) {
                Some(m) => out.push_str(m),
                None => {
                    let _ = write!(out, "mode {}", s.present_mode);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn driver_counter_lines_follow_the_newest_values_when_asked_for() {
        use framescope_core::driver_latest::DriverLatest;
        use framescope_core::driver_values::{DriverGroup, DriverValues};
        use framescope_core::sample::SampleRecord;
        let mut latest = DriverLatest::default();
        latest.set_groups(vec![DriverGroup {
            names: vec!["Draws".into(), "Busy".into()],
            units: vec!["generic", "percentage"],
            storages: vec!["uint64", "float64"],
            ..DriverGroup::default()
        }]);
        for frame in 1..3 {
            latest.add(&SampleRecord {
                frame,
                driver: Some(DriverValues::new(0, false, &[111.0, 42.5])),
                ..SampleRecord::default()
            });
        }
        let mut d = HudData::default();
        d.update_driver(&latest, &HudOptions::default());
        assert!(d.driver_counters.is_empty(), "not asked for by default");
        let opts = HudOptions {
            counters: vec!["driver".into()],
            ..HudOptions::default()
        };
        d.update_driver(&latest, &opts);
        let mut text = Vec::new();
        for l in &d.driver_counters {
            let mut t = String::new();
            l.write(&mut t);
            text.push(t);
        }
        assert_eq!(d.driver_counters.len(), 2);
        assert_eq!(
            (d.driver_counters[0].value, d.driver_counters[1].value),
            (Some(111.0), Some(42.5))
        );
        assert_eq!(d.driver_counters[1].unit, "%");
        assert!(text[0].starts_with("Draws") && text[0].contains("111"), "{text:?}");
    }

    #[test]
    fn counter_lines_format_by_unit() {
        let line = |unit: &str, v: f64| {
            let mut t = String::new();
            CounterLine {
                name: "x".into(),
                unit: unit.into(),
                value: Some(v),
            }
            .write(&mut t);
            t[22..].to_string()
        };
        assert_eq!(line("%", 57.04), "  57.0 %");
        assert_eq!(line("bytes", 512.0 * 1024.0 * 1024.0), "   512 MiB");
        assert_eq!(line("bytes", 3.5 * 1024.0 * 1024.0 * 1024.0), "  3.50 GiB");
        assert_eq!(line("W", 71.25), "  71.2 W");
        assert_eq!(line("bitmask", 4.0), "   0x4");
        assert_eq!(line("C", 41.0), "    41 C");
    }

    #[test]
    fn swapchain_text_names_known_enums() {
        let d = HudData {
            swapchain: Some(SwapchainInfo {
                handle: 1,
                width: 640,
                height: 480,
                format: 44,
                present_mode: 0,
            }),
            ..HudData::default()
        };
        let mut s = String::new();
        d.swapchain_text(&mut s);
        assert_eq!(s, "640x480  B8G8R8A8_UNORM  IMMEDIATE");
        let gl = HudData {
            surface: Some(SurfaceInfo {
                width: 300,
                height: 200,
                kind: "GLX back buffer",
            }),
            ..HudData::default()
        };
        assert!(gl.has_swapchain_line());
        let mut s = String::new();
        gl.swapchain_text(&mut s);
        assert_eq!(s, "300x200  GLX back buffer");
        assert!(!HudData::default().has_swapchain_line());
    }
}
