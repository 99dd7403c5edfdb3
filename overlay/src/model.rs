//! What the HUD shows: options from the config, and a snapshot of the numbers, refreshed from
//! the frame history a few times per second.

use framescope_core::config::{Config, HudPosition};
use framescope_core::frame::{vk_format_name, vk_present_mode_name, SwapchainInfo};
use framescope_core::history::FrameHistory;

/// The HUD-related part of the config.
#[derive(Clone, Debug, PartialEq)]
pub struct HudOptions {
    pub refresh_ms: u64,
    pub position: HudPosition,
    pub scale: f32,
    pub font_size: f32,
    pub alpha: f32,
    pub history: usize,
    pub fps: bool,
    pub frame_time: bool,
    pub frame_graph: bool,
    pub gpu: bool,
    pub gpu_graph: bool,
    /// The GPU time is a span around the frame (GL), not busy time: the line says so.
    pub gpu_span: bool,
    pub counts: bool,
    pub device: bool,
    pub swapchain: bool,
    pub counters: bool,
    /// Rows of the "top regions" table (0: hidden).
    pub regions: usize,
}

impl HudOptions {
    pub fn from_config(c: &Config) -> Self {
        HudOptions {
            refresh_ms: c.hud_refresh_ms,
            position: c.hud_position,
            scale: c.hud_scale as f32,
            font_size: c.hud_font_size as f32,
            alpha: c.hud_alpha as f32,
            history: c.hud_history as usize,
            fps: c.hud_fps,
            frame_time: c.hud_frame_time,
            frame_graph: c.hud_frame_graph,
            // Without GPU timing there is nothing to show there.
            gpu: c.hud_gpu && c.gpu_timing,
            gpu_graph: c.hud_gpu_graph && c.gpu_timing,
            gpu_span: false,
            counts: c.hud_counts,
            device: c.hud_device,
            swapchain: c.hud_swapchain,
            counters: c.hud_counters,
            regions: c.hud_regions as usize,
        }
    }

    /// Font height in pixels after scaling.
    pub fn font_pixels(&self) -> f32 {
        (self.font_size * self.scale).clamp(4.0, 256.0)
    }
}

impl Default for HudOptions {
    fn default() -> Self {
        Self::from_config(&Config::default())
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
    /// Index of the newest frame in the history.
    pub frame: Option<u64>,
    pub device: String,
    pub driver: String,
    pub swapchain: Option<SwapchainInfo>,
    /// Shown on the swapchain line when there is no swapchain (GL).
    pub surface: Option<SurfaceInfo>,
    /// `(name, value)` of the newest frame's counters.
    pub counters: Vec<(String, f64)>,
    /// The most expensive regions: (name, smoothed GPU ms per frame), most expensive first.
    pub regions: Vec<(String, f64)>,
}

impl HudData {
    /// Refreshes the "top regions" table from the layer's region statistics.
    pub fn update_regions(&mut self, table: &framescope_core::regions::RegionTable, opts: &HudOptions) {
        table.top(opts.regions, &mut self.regions);
    }

    /// Refreshes the frame numbers from `history` (the newest `opts.history` frames), naming
    /// counters with `counter_name` (catalogue index to name).
    pub fn update<'a>(
        &mut self,
        history: &FrameHistory,
        opts: &HudOptions,
        counter_name: impl Fn(usize) -> Option<&'a str>,
    ) {
        let n = opts.history.max(2);
        self.fps = history.fps(1_000_000_000);
        self.frame_ms = history.mean_frame_ms(n);
        self.gpu_ms = history.mean_gpu_busy_ms(n);
        self.frame_graph.clear();
        self.gpu_graph.clear();
        for r in history.last(n) {
            self.frame_graph.push(r.cpu_frame_ns.map_or(0.0, |t| t as f32 / 1e6));
            self.gpu_graph.push(r.gpu.busy_ns.map_or(0.0, |t| t as f32 / 1e6));
        }
        let latest = history.latest();
        self.frame = latest.map(|r| r.frame);
        if let Some(r) = latest {
            self.submits = r.counts.submits;
            self.draws = r.counts.draws_total();
            self.dispatches = r.counts.dispatches_total();
            self.counters.truncate(r.counters.len());
            for (i, (index, value)) in r.counters.iter().enumerate() {
                let name = counter_name(index).unwrap_or("?");
                match self.counters.get_mut(i) {
                    Some(slot) => {
                        if slot.0 != name {
                            slot.0.clear();
                            slot.0.push_str(name);
                        }
                        slot.1 = value;
                    }
                    None => self.counters.push((name.to_string(), value)),
                }
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
    use framescope_core::frame::FrameRecord;

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
            r.counters.set(3, 7.5);
            h.push(r);
        }
        let opts = HudOptions {
            history: 8,
            ..HudOptions::default()
        };
        let mut d = HudData::default();
        d.update(&h, &opts, |i| (i == 3).then_some("gpu_clock"));
        assert_eq!(d.frame_graph, vec![4.0; 8]);
        assert_eq!(d.gpu_graph, vec![1.0; 8]);
        assert!((d.fps.unwrap() - 250.0).abs() < 1e-9);
        assert_eq!(d.frame_ms, Some(4.0));
        assert_eq!(d.submits, 2);
        assert_eq!(d.frame, Some(19));
        assert_eq!(d.counters, vec![("gpu_clock".to_string(), 7.5)]);
        let cap = d.frame_graph.capacity();
        d.update(&h, &opts, |_| None);
        assert_eq!(d.frame_graph.capacity(), cap, "a refresh reuses the graph buffers");
        assert_eq!(d.counters[0].0, "?");
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
