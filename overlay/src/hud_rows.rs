//! The HUD's rows, each declared once: its config key (core's `KEYS` declares the key's type,
//! default and doc), the presets that show it, how it reads its numbers into [`HudData`] and
//! how it writes its text (or draws its graph). The options ([`HudOptions::from_config`]), the
//! data fill ([`HudData::fill_from`]) and the layout ([`crate::ui`]) go through this table in
//! its order, which is the order on screen; adding a row is one entry in `hud_rows!` below.

use crate::model::{ApiWords, HudData, HudOptions};
use crate::row_writer::{Graph, RowWriter};
use framescope_core::config::{Config, HudPreset};
use framescope_core::counters::Catalogue;
use framescope_core::display::DisplayFeed;
use framescope_core::driver_latest::DriverLatest;
use framescope_core::history::FrameHistory;
use framescope_core::regions::RegionTable;
use framescope_core::session::FrameSession;
use std::fmt::Write;

/// One row of the HUD (some write several lines: the timeline, the tables).
pub struct HudRow {
    /// The config key that turns it off (`hud_fps`).
    pub key: &'static str,
    /// The presets that show it.
    pub presets: &'static [HudPreset],
    /// What the config asks of it: 0 hides it, else 1 (on) or the lines of a table.
    pub setting: fn(&Config) -> u32,
    /// Refreshes its numbers at a HUD refresh (whether it is shown or not: the controller reads
    /// the frame rate, hidden or not).
    pub read: fn(&mut HudData, &HudSources<'_>, &HudOptions),
    pub content: Content,
}

/// What a row puts on screen.
pub enum Content {
    Text(fn(&mut RowWriter<'_>, &HudData, &HudOptions)),
    /// A graph, under the text row above it (which carries its scale).
    Graph(Graph),
}

pub use crate::model::Row;

/// Where a refresh reads the numbers from: the frame session's parts (tests build it from
/// parts of their own).
#[derive(Clone, Copy, Default)]
pub struct HudSources<'a> {
    pub history: Option<&'a FrameHistory>,
    pub catalogue: Option<&'a Catalogue>,
    pub display: Option<&'a DisplayFeed>,
    pub regions: Option<&'a RegionTable>,
    pub driver: Option<&'a DriverLatest>,
}

macro_rules! hud_rows {
    ($($(#[$doc:meta])* $name:ident { $($field:ident: $value:expr),* $(,)? })*) => {
        #[allow(non_camel_case_types, clippy::upper_case_acronyms)]
        enum Index { $($name),* }
        $($(#[$doc])* pub const $name: Row = Row(Index::$name as usize);)*
        /// Every row, in the order on screen.
        pub static ROWS: &[HudRow] = &[$(HudRow { $($field: $value),* }),*];
    };
}

use HudPreset::{Full, Latency, Minimal, Profiling, Standard};

hud_rows! {
    /// `FPS  60.0  limit 60`.
    FPS {
        key: "hud_fps",
        presets: &[Minimal, Standard, Full, Profiling, Latency],
        setting: |c| c.hud_fps.into(),
        read: |d, s, _| {
            if let Some(h) = s.history {
                d.fps = h.fps(1_000_000_000);
                d.fps_limit = framescope_core::pacing::LIMITER.fps();
                d.frame = h.latest().map(|r| r.frame);
            }
        },
        content: Content::Text(write_fps),
    }
    /// `Frame  16.70 ms`, with the frame graph's scale.
    FRAME_TIME {
        key: "hud_frame_time",
        presets: &[Minimal, Standard, Full, Profiling, Latency],
        setting: |c| c.hud_frame_time.into(),
        read: |d, s, o| {
            if let Some(h) = s.history {
                d.frame_ms = h.mean_frame_ms(o.history.max(2));
            }
        },
        content: Content::Text(write_frame_time),
    }
    FRAME_GRAPH {
        key: "hud_frame_graph",
        presets: &[Standard, Full, Profiling, Latency],
        setting: |c| c.hud_frame_graph.into(),
        read: |d, s, o| {
            if let Some(h) = s.history {
                d.frame_graph.clear();
                let ms = h.last(o.history.max(2)).map(|r| r.cpu_frame_ns.map_or(0.0, |t| t as f32 / 1e6));
                d.frame_graph.extend(ms);
            }
        },
        content: Content::Graph(Graph::Frame),
    }
    /// `GPU busy  3.00 ms` (GL: `GPU span`), with the GPU graph's scale. Nothing to show
    /// without GPU timing.
    GPU {
        key: "hud_gpu",
        presets: &[Standard, Full, Profiling],
        setting: |c| (c.hud_gpu && c.gpu_timing).into(),
        read: |d, s, o| {
            if let Some(h) = s.history {
                d.gpu_ms = h.mean_gpu_busy_ms(o.history.max(2));
            }
        },
        content: Content::Text(write_gpu),
    }
    GPU_GRAPH {
        key: "hud_gpu_graph",
        presets: &[Standard, Full, Profiling],
        setting: |c| (c.hud_gpu_graph && c.gpu_timing).into(),
        read: |d, s, o| {
            if let Some(h) = s.history {
                d.gpu_graph.clear();
                let ms = h.last(o.history.max(2)).map(|r| r.gpu.busy_ns.map_or(0.0, |t| t as f32 / 1e6));
                d.gpu_graph.extend(ms);
            }
        },
        content: Content::Graph(Graph::Gpu),
    }
    /// CPU busy and waiting, display latency, dropped frames, the last hitch.
    TIMELINE {
        key: "hud_timeline",
        presets: &[Full, Profiling, Latency],
        setting: |c| c.hud_timeline.into(),
        read: |d, s, o| {
            if let (Some(h), Some(feed), true) = (s.history, s.display, o.shows(TIMELINE)) {
                d.timeline.update(h, o.history.max(2), Some(feed));
            }
        },
        content: Content::Text(|w, d, _| {
            let tl = &d.timeline;
            w.line(|t| tl.write_cpu(t));
            w.line(|t| tl.write_display(t));
            if tl.displayed + tl.dropped > 0 {
                w.line(|t| tl.write_dropped(t));
            }
            w.line(|t| tl.write_hitch(t));
        }),
    }
    /// Submissions, draws and dispatches (or render passes) of the newest frame.
    COUNTS {
        key: "hud_counts",
        presets: &[Full, Profiling],
        setting: |c| c.hud_counts.into(),
        read: |d, s, _| {
            if let Some(r) = s.history.and_then(|h| h.latest()) {
                d.submits = r.counts.submits;
                d.draws = r.counts.draws_total();
                d.dispatches = r.counts.dispatches_total();
                d.render_passes = r.counts.render_passes;
                d.commands_counted = !r.counts.commands_uncounted;
            }
        },
        content: Content::Text(write_counts),
    }
    /// The device's and the driver's names (set by the layer at set-up).
    DEVICE {
        key: "hud_device",
        presets: &[Full, Profiling],
        setting: |c| c.hud_device.into(),
        read: |_, _, _| {},
        content: Content::Text(|w, d, _| {
            if !d.device.is_empty() {
                w.line(|t| t.push_str(&d.device));
                if !d.driver.is_empty() {
                    w.line(|t| t.push_str(&d.driver));
                }
            }
        }),
    }
    /// The swapchain's size, format and present mode, or the GL drawable's size.
    SWAPCHAIN {
        key: "hud_swapchain",
        presets: &[Full, Profiling],
        setting: |c| c.hud_swapchain.into(),
        read: |_, _, _| {},
        content: Content::Text(|w, d, _| {
            if d.has_swapchain_line() {
                w.line(|t| d.swapchain_text(t));
            }
        }),
    }
    /// The device rows, then a line per other chosen counter, then the driver's counters.
    COUNTERS {
        key: "hud_counters",
        presets: &[Standard, Full, Profiling],
        setting: |c| c.hud_counter_names().len() as u32,
        read: read_counters,
        content: Content::Text(|w, d, _| {
            for r in &d.device_rows {
                w.line(|t| t.push_str(r));
            }
            for c in d.counters.iter().chain(&d.driver_counters) {
                w.line(|t| c.write(t));
            }
        }),
    }
    /// The most expensive debug-label regions and render passes.
    REGIONS {
        key: "hud_regions",
        presets: &[Full, Profiling],
        setting: |c| c.hud_regions as u32,
        read: |d, s, o| {
            if let Some(r) = s.regions {
                r.top(o.amount(REGIONS), &mut d.regions);
            }
        },
        content: Content::Text(|w, d, _| table(w, "Top regions (GPU ms)", &d.regions)),
    }
    /// The most expensive draws.
    DRAWS {
        key: "hud_draws",
        presets: &[Full, Profiling],
        setting: |c| c.hud_draws as u32,
        read: |d, s, o| {
            if let Some(r) = s.regions {
                r.top_draws(o.amount(DRAWS), &mut d.top_draws);
            }
        },
        content: Content::Text(|w, d, _| table(w, "Top draws (GPU ms when timed)", &d.top_draws)),
    }
}

impl HudOptions {
    pub fn from_config(c: &Config) -> Self {
        Self::with_preset(Self::all_of(c), c.hud_preset)
    }

    /// Every row the config's `hud_*` keys leave on, whatever the preset.
    fn all_of(c: &Config) -> Self {
        HudOptions {
            refresh_ms: c.hud_refresh_ms,
            position: c.hud_position,
            scale: c.hud_scale as f32,
            font_size: c.hud_font_size as f32,
            alpha: c.hud_alpha as f32,
            history: c.hud_history as usize,
            rows: ROWS.iter().map(|r| (r.setting)(c)).collect(),
            api: ApiWords::VULKAN,
            counters: c.hud_counter_names(),
        }
    }

    /// `all` cut down to `preset`'s rows.
    pub fn with_preset(all: HudOptions, preset: HudPreset) -> HudOptions {
        let mut o = all;
        for (amount, row) in o.rows.iter_mut().zip(ROWS) {
            if !row.presets.contains(&preset) {
                *amount = 0;
            }
        }
        // The counters row shows the list of counters: the list goes with it, and profiling
        // adds the hardware's and the driver's own.
        if !o.shows(COUNTERS) {
            o.counters.clear();
        }
        if preset == Profiling {
            for extra in [
                "pm_graphics_active_pct",
                "pm_sm_active_pct",
                "pm_ps_warps_pct",
                "pm_cs_warps_pct",
                "pm_dram_bw_pct",
                "driver",
            ] {
                if !o.counters.iter().any(|c| c == extra || c == "all") {
                    o.counters.push(extra.to_string());
                }
            }
        }
        o.set(COUNTERS, o.counters.len() as u32);
        o
    }
}

impl Default for HudOptions {
    fn default() -> Self {
        Self::from_config(&Config::default())
    }
}

impl HudData {
    /// Refreshes every row's numbers from the frame session, which both APIs keep, so the GL
    /// shim and the Vulkan layer fill their HUDs alike. Called under the session owner's frame
    /// lock.
    pub fn fill_from(&mut self, session: &FrameSession, opts: &HudOptions) {
        self.fill(
            &HudSources {
                history: session.history(),
                catalogue: session.counters().and_then(|b| b.catalogue()),
                display: Some(session.display()),
                regions: session.regions(),
                driver: Some(session.driver_latest()),
            },
            opts,
        );
    }

    /// Refreshes every row's numbers from `sources`.
    pub fn fill(&mut self, sources: &HudSources<'_>, opts: &HudOptions) {
        for row in ROWS {
            (row.read)(self, sources, opts);
        }
    }
}

/// Lays out every row `opts` shows, in order; graphs only with `graphs` (the fit may drop them).
pub(crate) fn write_rows(w: &mut RowWriter<'_>, data: &HudData, opts: &HudOptions, graphs: bool) {
    for (i, row) in ROWS.iter().enumerate() {
        if let (Content::Graph(g), true) = (&row.content, graphs && opts.shows(Row(i))) {
            w.will_draw(*g, data);
        }
    }
    for (i, row) in ROWS.iter().enumerate() {
        if !opts.shows(Row(i)) {
            continue;
        }
        match &row.content {
            Content::Text(write) => write(w, data, opts),
            Content::Graph(g) => w.graph(*g, data),
        }
    }
}

fn write_fps(w: &mut RowWriter<'_>, d: &HudData, _: &HudOptions) {
    w.line(|t| {
        match d.fps {
            Some(v) => {
                let _ = write!(t, "FPS        {v:8.1}");
            }
            None => t.push_str("FPS             -"),
        }
        if d.fps_limit > 0 {
            let _ = write!(t, "  limit {}", d.fps_limit);
        }
    });
}

fn write_frame_time(w: &mut RowWriter<'_>, d: &HudData, _: &HudOptions) {
    w.line_scaled(Graph::Frame, |t| match d.frame_ms {
        Some(v) => {
            let _ = write!(t, "Frame      {v:8.2} ms");
        }
        None => t.push_str("Frame           - ms"),
    });
}

fn write_gpu(w: &mut RowWriter<'_>, d: &HudData, o: &HudOptions) {
    let name = o.api.gpu;
    w.line_scaled(Graph::Gpu, |t| {
        let _ = match d.gpu_ms {
            Some(v) => write!(t, "{name}   {v:8.2} ms"),
            None => write!(t, "{name}        - ms"),
        };
    });
}

fn write_counts(w: &mut RowWriter<'_>, d: &HudData, o: &HudOptions) {
    w.line(|t| {
        let _ = if !o.api.submits {
            write!(t, "Draws {}", d.draws)
        } else if d.commands_counted {
            write!(
                t,
                "Submits {}  Draws {}  Dispatches {}",
                d.submits, d.draws, d.dispatches
            )
        } else {
            // Vulkan counts draws only with `command_counts` (each is then intercepted).
            write!(t, "Submits {}  Passes {}", d.submits, d.render_passes)
        };
    });
}

fn read_counters(d: &mut HudData, s: &HudSources<'_>, o: &HudOptions) {
    if let Some(r) = s.history.and_then(|h| h.latest()) {
        d.update_counters(r, o, s.catalogue, o.shows(DEVICE));
    }
    if let Some(latest) = s.driver {
        d.update_driver(latest, o);
    }
}

/// A table: its title, then a line per entry.
fn table(w: &mut RowWriter<'_>, title: &str, entries: &[(String, f64)]) {
    if entries.is_empty() {
        return;
    }
    w.line(|t| t.push_str(title));
    for (name, ms) in entries {
        w.line(|t| {
            let _ = write!(t, "{ms:7.3}  {name}");
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use framescope_core::config::{parse, KEYS};
    use framescope_core::frame::FrameRecord;

    /// Every row's key is a key of the config, and its setting reads that key: turning the key
    /// off (or to 0, or `none`) hides the row.
    #[test]
    fn every_row_reads_its_own_config_key() {
        for row in ROWS {
            assert!(KEYS.iter().any(|k| k.name == row.key), "{}: not a config key", row.key);
            let on = (row.setting)(&Config::default());
            assert!(on > 0, "{}: shown by default", row.key);
            let off = if row.key == "hud_counters" { "none" } else { "0" };
            let (c, errors) = parse(&format!("{}={off}", row.key));
            assert!(errors.is_empty(), "{}: {errors:?}", row.key);
            assert_eq!((row.setting)(&c), 0, "{}={off} hides it", row.key);
        }
    }

    /// The config keys that name a HUD line, graph or table each have a row here.
    #[test]
    fn every_hud_line_key_has_a_row() {
        for k in KEYS.iter().filter(|k| {
            ["HUD line", "HUD graph", "HUD table"]
                .iter()
                .any(|p| k.doc.starts_with(p))
        }) {
            assert!(ROWS.iter().any(|r| r.key == k.name), "{}: no HUD row", k.name);
        }
    }

    #[test]
    fn a_preset_shows_its_rows_and_the_full_preset_every_row() {
        let full = HudOptions::default();
        for (i, row) in ROWS.iter().enumerate() {
            assert!(full.shows(Row(i)), "{}", row.key);
            for p in HudPreset::ALL {
                let o = HudOptions::with_preset(full.clone(), p);
                assert_eq!(o.shows(Row(i)), row.presets.contains(&p), "{} in {p:?}", row.key);
            }
        }
    }

    #[test]
    fn update_fills_graphs_and_counts_from_history() {
        let mut h = FrameHistory::new(16);
        for i in 0..20u64 {
            let mut r = FrameRecord {
                frame: i,
                t_ns: i * 4_000_000,
                cpu_frame_ns: (i > 0).then_some(4_000_000),
                ..FrameRecord::default()
            };
            r.gpu.busy_ns = Some(1_000_000);
            r.counts.submits = 2;
            r.counters.set(1, 7.5);
            h.push(r);
        }
        let opts = HudOptions {
            history: 8,
            counters: vec![
                "gpu_temp_c".into(),
                "gpu_clock_mhz".into(),
                "gpu_sm_clock_mhz".into(),
                "no_such".into(),
            ],
            ..HudOptions::default()
        };
        let mut d = HudData::default();
        let cat = catalogue(&[
            ("gpu_util_pct", "%"),
            ("gpu_clock_mhz", "MHz"),
            ("gpu_temp_c", "C"),
            ("gpu_sm_clock_mhz", "MHz"),
        ]);
        let sources = HudSources {
            history: Some(&h),
            catalogue: Some(&cat),
            ..HudSources::default()
        };
        d.fill(&sources, &opts);
        assert_eq!(d.frame_graph, vec![4.0; 8]);
        assert_eq!(d.gpu_graph, vec![1.0; 8]);
        assert!((d.fps.unwrap() - 250.0).abs() < 1e-9);
        assert_eq!(d.frame_ms, Some(4.0));
        assert_eq!(d.submits, 2);
        assert_eq!(d.frame, Some(19));
        // Chosen: gpu_temp_c (no value) and gpu_clock_mhz (7.5), which the GPU row shows;
        // gpu_sm_clock_mhz, a line of its own under its display name; a name the catalogue
        // lacks.
        assert_eq!(d.device_rows, ["GPU  8MHz"]);
        let names: Vec<&str> = d.counters.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["GPU SM clock"]);
        assert_eq!(d.counters[0].value, None);
        let cap = d.frame_graph.capacity();
        d.fill(&sources, &opts);
        assert_eq!(d.frame_graph.capacity(), cap, "a refresh reuses the graph buffers");
        let mut t = String::new();
        d.counters[0].value = Some(7.5);
        d.counters[0].write(&mut t);
        assert_eq!(t, format!("{:<22}{:>6} MHz", "GPU SM clock", "8"));
    }

    fn catalogue(list: &[(&str, &str)]) -> Catalogue {
        Catalogue {
            counters: list
                .iter()
                .map(|(n, u)| framescope_core::dump::CounterDesc {
                    name: n.to_string(),
                    unit: u.to_string(),
                    source: "test".into(),
                    scope: "device".into(),
                })
                .collect(),
            source_of: vec![0; list.len()],
            sources: vec!["test".into()],
        }
    }

    #[test]
    fn presets_cut_the_rows_down_and_profiling_adds_the_hardware_counters() {
        let mut all = HudOptions {
            counters: vec!["gpu_util_pct".into()],
            ..HudOptions::default()
        };
        all.set(REGIONS, 5);
        all.set(DRAWS, 5);
        let min = HudOptions::with_preset(all.clone(), Minimal);
        assert!(min.shows(FPS) && min.shows(FRAME_TIME) && !min.shows(FRAME_GRAPH) && !min.shows(GPU));
        assert!(min.counters.is_empty() && !min.shows(COUNTERS));
        let std = HudOptions::with_preset(all.clone(), Standard);
        assert!(std.shows(FRAME_GRAPH) && std.shows(GPU) && !std.shows(COUNTS) && !std.shows(DEVICE));
        assert!(!std.shows(REGIONS) && !std.shows(TIMELINE));
        assert_eq!(std.counters, ["gpu_util_pct"]);
        let full = HudOptions::with_preset(all.clone(), Full);
        assert_eq!((full.amount(REGIONS), full.shows(DEVICE)), (5, true));
        assert!(full.shows(TIMELINE));
        let prof = HudOptions::with_preset(all.clone(), Profiling);
        assert!(prof.counters.iter().any(|c| c == "driver") && prof.counters.iter().any(|c| c == "pm_sm_active_pct"));
        assert!(prof.shows(TIMELINE) && prof.amount(COUNTERS) == prof.counters.len());
        let latency = HudOptions::with_preset(all, Latency);
        assert!(
            latency.shows(FPS) && latency.shows(FRAME_TIME) && latency.shows(FRAME_GRAPH) && latency.shows(TIMELINE)
        );
        assert!(!latency.shows(GPU) && !latency.shows(COUNTS) && !latency.shows(DEVICE) && !latency.shows(REGIONS));
        assert!(latency.counters.is_empty());
    }
}
