//! How the HUD's rows reach ImGui: a text row cut to the width and the rows to the fit, and a
//! graph drawn as `PlotLines` would draw it, its scale at the end of the text row above it.
//! The row table ([`crate::hud_rows`]) writes through this; [`crate::ui`] sets it up per layout.

use crate::model::HudData;
use std::fmt::Write;

/// The HUD's graphs. A graph's scale is written into the text row above it, so a text row asks
/// for it by this name before the graph itself is drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Graph {
    Frame,
    Gpu,
}

impl Graph {
    const COUNT: usize = 2;

    fn values(self, data: &HudData) -> &[f32] {
        match self {
            Graph::Frame => &data.frame_graph,
            Graph::Gpu => &data.gpu_graph,
        }
    }

    /// The lowest top the graph's scale may have (ms): a flat graph stays visible.
    fn floor(self) -> f32 {
        match self {
            Graph::Frame => 1.0,
            Graph::Gpu => 0.1,
        }
    }

    fn id(self) -> &'static str {
        match self {
            Graph::Frame => "##frame",
            Graph::Gpu => "##gpu",
        }
    }
}

/// Writes the HUD's rows, counting them, and cutting a row to the width and the rows to the
/// fit.
pub struct RowWriter<'u> {
    pub(crate) ui: &'u imgui::Ui,
    pub(crate) text: &'u mut String,
    pub(crate) rows: usize,
    pub(crate) max_rows: usize,
    /// Characters a row may take.
    pub(crate) chars: usize,
    /// A row was cut down to the width (its padding or its end).
    pub(crate) cut: bool,
    pub(crate) graph_size: [f32; 2],
    pub(crate) points: &'u mut Vec<imgui::sys::ImVec2>,
    /// Each graph this layout draws: its top and its scale's text.
    pub(crate) scales: [Option<(f32, String)>; Graph::COUNT],
    /// A graph was drawn.
    pub(crate) graphs: bool,
}

impl RowWriter<'_> {
    /// Decides before any row is written that `g` is drawn in this layout, so the text row
    /// above it can carry its scale.
    pub(crate) fn will_draw(&mut self, g: Graph, data: &HudData) {
        let values = g.values(data);
        if !values.is_empty() {
            self.scales[g as usize] = Some(graph_scale(values, g.floor()));
        }
    }

    /// A text row that ends with `g`'s scale when the graph is drawn under it.
    pub fn line_scaled(&mut self, g: Graph, f: impl FnOnce(&mut String)) {
        self.write_row(Some(g), f);
    }

    /// A text row.
    pub fn line(&mut self, f: impl FnOnce(&mut String)) {
        self.write_row(None, f);
    }

    /// Draws graph `g` when this layout draws it.
    pub fn graph(&mut self, g: Graph, data: &HudData) {
        if let Some((top, _)) = &self.scales[g as usize] {
            draw_graph(self.ui, g.id(), g.values(data), *top, "", self.graph_size, self.points);
            self.graphs = true;
        }
    }

    fn write_row(&mut self, scale_of: Option<Graph>, f: impl FnOnce(&mut String)) {
        self.rows += 1;
        if self.rows > self.max_rows {
            return;
        }
        let text = &mut *self.text;
        text.clear();
        f(text);
        if let Some((_, scale)) = scale_of.and_then(|g| self.scales[g as usize].as_ref()) {
            let _ = write!(text, "  {scale}");
        }
        if text.chars().count() > self.chars {
            // First the columns' padding goes (`FPS   60.0` reads `FPS 60.0`), then the row's
            // end.
            let mut space = false;
            text.retain(|c| {
                let again = space && c == ' ';
                space = c == ' ';
                !again
            });
            self.cut = true;
        }
        if text.chars().count() > self.chars {
            let keep = text
                .char_indices()
                .nth(self.chars.saturating_sub(3))
                .map_or(text.len(), |(i, _)| i);
            text.truncate(keep);
            text.push_str("...");
        }
        self.ui.text(&*text);
    }
}

#[cfg(test)]
thread_local! {
    /// Tests: this thread's renders draw graphs with ImGui's `PlotLines`, the reference.
    pub(crate) static PLOT_LINES: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// [`graph`], or in tests that ask for it ImGui's `PlotLines` (labelled `id`), which it
/// replaces pixel for pixel.
fn draw_graph(
    ui: &imgui::Ui,
    id: &str,
    values: &[f32],
    top: f32,
    label: &str,
    size: [f32; 2],
    points: &mut Vec<imgui::sys::ImVec2>,
) {
    #[cfg(test)]
    if PLOT_LINES.get() {
        ui.plot_lines(id, values)
            .scale_min(0.0)
            .scale_max(top)
            .overlay_text(label)
            .graph_size(size)
            .build();
        return;
    }
    let _ = id;
    graph(ui, values, top, label, size, points);
}

/// A line graph of `values` from 0 (its bottom) to `top`, `size` pixels, labelled `label` at
/// its top: the pixels of ImGui's `PlotLines` (its frame padding, its point spacing of at most
/// one point a pixel, half-pixel offset and centred label), drawn as one polyline where
/// `PlotLines` adds a line a segment, which took two thirds of a refresh's instructions
/// (callgrind, vkcube on lavapipe: 45 % of `render` in `PlotEx`). Without anti-aliased lines
/// (the style's) both give each segment the same quad.
fn graph(ui: &imgui::Ui, values: &[f32], top: f32, label: &str, size: [f32; 2], points: &mut Vec<imgui::sys::ImVec2>) {
    let min = ui.cursor_screen_pos();
    // Reserves the frame as `PlotLines` does (no label beside it).
    ui.dummy(size);
    if !ui.is_item_visible() {
        return;
    }
    let max = [min[0] + size[0], min[1] + size[1]];
    let style = ui.clone_style();
    let pad = style.frame_padding;
    let (inner_min, inner_max) = ([min[0] + pad[0], min[1] + pad[1]], [max[0] - pad[0], max[1] - pad[1]]);
    let lerp = |t: [f32; 2]| imgui::sys::ImVec2 {
        x: inner_min[0] + (inner_max[0] - inner_min[0]) * t[0] + 0.5,
        y: inner_min[1] + (inner_max[1] - inner_min[1]) * t[1] + 0.5,
    };
    let count = values.len();
    // SAFETY: called between the window's begin and end (the window's `build` closure), so
    // ImGui has a current window and draw list; `points` holds `points.len()` points and the
    // label's bytes stay alive for the calls, which copy what they read.
    unsafe {
        let list = imgui::sys::igGetWindowDrawList();
        if count >= 2 {
            let res_w = (size[0] as usize).min(count) - 1;
            let item_count = (count - 1) as f32;
            let inv_scale = if top == 0.0 { 0.0 } else { 1.0 / top };
            let y = |v: f32| 1.0 - (v * inv_scale).clamp(0.0, 1.0);
            let t_step = 1.0 / res_w as f32;
            points.clear();
            let mut t0 = 0.0f32;
            points.push(lerp([t0, y(values[0])]));
            for _ in 0..res_w {
                let t1 = t0 + t_step;
                let v1 = values[((t0 * item_count + 0.5) as usize + 1) % count];
                points.push(lerp([t1, y(v1)]));
                t0 = t1;
            }
            let col = imgui::sys::igGetColorU32_Col(imgui::sys::ImGuiCol_PlotLines as i32, 1.0);
            imgui::sys::ImDrawList_AddPolyline(list, points.as_ptr(), points.len() as i32, col, 0, 1.0);
        }
        // The label centred at the top, inside the frame (clipped to it when it does not fit).
        let text_size = ui.calc_text_size(label);
        let pos = [min[0], min[1] + pad[1]];
        let clip = imgui::sys::ImVec4 {
            x: pos[0],
            y: pos[1],
            z: max[0],
            w: max[1],
        };
        let clipped = pos[0] + text_size[0] >= max[0] || pos[1] + text_size[1] >= max[1];
        let at = imgui::sys::ImVec2 {
            x: pos[0].max(pos[0] + (max[0] - pos[0] - text_size[0]) * 0.5),
            y: pos[1],
        };
        let range = label.as_bytes().as_ptr_range();
        imgui::sys::ImDrawList_AddText_FontPtr(
            list,
            imgui::sys::igGetFont(),
            imgui::sys::igGetFontSize(),
            at,
            imgui::sys::igGetColorU32_Col(imgui::sys::ImGuiCol_Text as i32, 1.0),
            range.start.cast(),
            range.end.cast(),
            0.0,
            if clipped { &clip } else { std::ptr::null() },
        );
    }
}

/// A graph's top (its largest value and a fifth more, at least `floor` ms) and its scale
/// label, written at the end of the row above the graph: the smallest and largest value
/// shown, in ms. Allocates only when the HUD re-renders.
pub(crate) fn graph_scale(values: &[f32], floor: f32) -> (f32, String) {
    let (min, max) = values
        .iter()
        .fold((f32::MAX, 0.0f32), |(lo, hi), &v| (lo.min(v), hi.max(v)));
    ((max * 1.2).max(floor), format!("{min:.1}-{max:.1} ms"))
}
