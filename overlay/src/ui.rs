//! The HUD drawn with Dear ImGui into plain vertex/index lists.
//!
//! imgui-rs allows one active context per process, so there is exactly one, behind a global
//! mutex, shared by every device, swapchain and thread. It is only used when a HUD's content
//! is re-rendered (a few times per second per swapchain), never per frame.

use crate::model::{HudData, HudOptions};
use crate::row_writer::RowWriter;
use framescope_core::sync::Mutex;
use imgui::{Condition, FontConfig, FontId, FontSource, StyleColor, TextureId, WindowFlags};
use std::sync::Arc;
use std::time::Instant;

/// Texture id the renderer binds for the font atlas (the only texture the HUD uses).
pub const FONT_TEXTURE: usize = 1;

/// Colour of every HUD text glyph (sRGB, 0-255); tests look for it.
pub const TEXT_RGB: [u8; 3] = [255, 255, 255];
/// Colour of the graphs' lines.
pub const GRAPH_RGB: [u8; 3] = [80, 230, 120];

/// One vertex, laid out as ImGui's `ImDrawVert` (20 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct DrawVert {
    pub pos: [f32; 2],
    pub uv: [f32; 2],
    pub col: [u8; 4],
}

/// One indexed draw with its scissor (pixels: x0, y0, x1, y1).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DrawCmd {
    pub clip: [f32; 4],
    pub first_index: u32,
    pub vertex_offset: u32,
    pub count: u32,
}

/// What a render produced: every list concatenated. Buffers are reused between renders.
#[derive(Clone, Debug, Default)]
pub struct DrawOutput {
    pub vertices: Vec<DrawVert>,
    pub indices: Vec<u16>,
    pub cmds: Vec<DrawCmd>,
    /// Size in pixels of the HUD (its window), from the top-left corner of the canvas.
    pub size: [u32; 2],
    /// Where the last render's fit search ended (each HUD renders into its own output).
    fit_memo: Option<FitMemo>,
}

/// The font atlas, RGBA8, as the renderer uploads it.
pub struct FontAtlas {
    pub width: u32,
    pub height: u32,
    pub pixels: Vec<u8>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UiError {
    /// An earlier render stopped half-way (a panic inside ImGui code); the context is not used
    /// again.
    Broken,
}

struct Shared {
    ctx: imgui::Context,
    atlas: Arc<FontAtlas>,
    font_px: f32,
    /// The faces the fit tries, largest first: the configured one, then the smaller ones.
    faces: Vec<Face>,
    last: Instant,
    text: String,
    /// A graph's points, reused from graph to graph.
    points: Vec<imgui::sys::ImVec2>,
}

// SAFETY: a Dear ImGui context is plain heap data with no thread affinity; it is only ever
// reached through the UI mutex below, so one thread at a time uses it.
unsafe impl Send for Shared {}

enum State {
    Uninit,
    Ready(Box<Shared>),
    Broken,
}

static UI: Mutex<State> = Mutex::new(State::Uninit);

/// One face of the shared atlas.
#[derive(Clone, Copy, Debug)]
struct Face {
    id: FontId,
    /// Its size (its line height) in pixels.
    px: f32,
}

/// Sizes of the smaller faces relative to the configured one (13 px by default: 11 and 10
/// px, 6 and 5 px a character where the configured face takes 7).
const SMALLER_FACES: [f32; 2] = [11.0 / 13.0, 10.0 / 13.0];

/// The smaller faces' glyph coverage is multiplied by this: a stem of an unhinted face at
/// 10-11 px straddles two pixels at partial coverage (unbrightened, not one pixel reaches the
/// text colour); brightened, nearly every glyph has pixels of exactly the text colour (tests
/// look for it) and the text reads clearly.
const SMALL_FACE_BRIGHTEN: f32 = 1.6;

fn init(opts: &HudOptions) -> Box<Shared> {
    let mut ctx = imgui::Context::create();
    ctx.set_ini_filename(None);
    ctx.set_log_filename(None);
    let font_px = opts.font_pixels();
    // The configured face: ImGui's ProggyClean at `hud_font_size` x `hud_scale` (a bitmap face,
    // crisp at its 13 px). Added first: ImGui's default face.
    let mut faces = vec![Face {
        id: ctx.fonts().add_font(&[FontSource::DefaultFontData {
            config: Some(FontConfig {
                size_pixels: font_px,
                oversample_h: 1,
                oversample_v: 1,
                pixel_snap_h: true,
                ..FontConfig::default()
            }),
        }]),
        px: font_px,
    }];
    // The smaller faces the fit falls back to: DejaVu Sans Mono (the `dejavu` crate, Bitstream
    // Vera licence), rasterized at their own sizes into the same atlas rather than scaled.
    for ratio in SMALLER_FACES {
        let px = (font_px * ratio).round().max(6.0);
        if px >= faces.last().map_or(f32::MAX, |f| f.px) {
            continue;
        }
        let id = ctx.fonts().add_font(&[FontSource::TtfData {
            data: dejavu::sans_mono::regular(),
            size_pixels: px,
            config: Some(FontConfig {
                size_pixels: px,
                oversample_h: 1,
                oversample_v: 1,
                pixel_snap_h: true,
                rasterizer_multiply: SMALL_FACE_BRIGHTEN,
                ..FontConfig::default()
            }),
        }]);
        faces.push(Face { id, px });
    }
    let tex = ctx.fonts().build_rgba32_texture();
    let atlas = Arc::new(FontAtlas {
        width: tex.width,
        height: tex.height,
        pixels: tex.data.to_vec(),
    });
    // The glyphs are baked: the TTF copies the atlas keeps for a rebuild (a third of a MiB a
    // smaller face) are not needed again.
    ctx.fonts().clear_input_data();
    ctx.fonts().tex_id = TextureId::new(FONT_TEXTURE);
    let style = ctx.style_mut();
    style.scale_all_sizes(opts.scale);
    style.window_rounding = 0.0;
    style.window_border_size = 0.0;
    style.anti_aliased_lines = false;
    let rgba = |c: [u8; 3]| {
        [
            f32::from(c[0]) / 255.0,
            f32::from(c[1]) / 255.0,
            f32::from(c[2]) / 255.0,
            1.0,
        ]
    };
    style[StyleColor::Text] = rgba(TEXT_RGB);
    style[StyleColor::PlotLines] = rgba(GRAPH_RGB);
    style[StyleColor::FrameBg] = [0.0, 0.0, 0.0, 0.0];
    style[StyleColor::WindowBg] = [0.0, 0.0, 0.0, 1.0];
    Box::new(Shared {
        ctx,
        atlas,
        font_px,
        faces,
        last: Instant::now(),
        text: String::with_capacity(256),
        points: Vec::new(),
    })
}

/// The font atlas for `opts` (built on first use). The atlas is built once per process with
/// the first caller's font size; later option changes do not rebuild it.
pub fn font_atlas(opts: &HudOptions) -> Result<Arc<FontAtlas>, UiError> {
    let mut ui = UI.lock();
    if matches!(*ui, State::Uninit) {
        *ui = State::Ready(init(opts));
    }
    match &*ui {
        State::Ready(s) => Ok(s.atlas.clone()),
        _ => Err(UiError::Broken),
    }
}

/// Lays out the HUD for `data` on a canvas of `canvas` pixels, over a window of `window`
/// pixels, and copies the draw lists into `out`. The HUD's window is at (0, 0) and sized to
/// its content (`out.size`).
pub fn render(
    data: &HudData,
    opts: &HudOptions,
    canvas: [u32; 2],
    window: [u32; 2],
    out: &mut DrawOutput,
) -> Result<(), UiError> {
    render_fit(data, opts, canvas, window, out).map(|_| ())
}

/// `render`, returning how the HUD was cut down to fit.
fn render_fit(
    data: &HudData,
    opts: &HudOptions,
    canvas: [u32; 2],
    window: [u32; 2],
    out: &mut DrawOutput,
) -> Result<Fit, UiError> {
    let mut ui = UI.lock();
    if matches!(*ui, State::Uninit) {
        *ui = State::Ready(init(opts));
    }
    // Taken out while in use and leaked if anything below panics: ImGui cannot begin a frame
    // after one that never ended, and no C++ code should run while unwinding. The slot reads
    // Broken meanwhile, so a failed render disables the HUD for good.
    let mut state = std::mem::ManuallyDrop::new(std::mem::replace(&mut *ui, State::Broken));
    let State::Ready(s) = &mut *state else {
        *ui = std::mem::ManuallyDrop::into_inner(state);
        return Err(UiError::Broken);
    };
    let fit = fit(s, data, opts, canvas, window, out);
    *ui = std::mem::ManuallyDrop::into_inner(state);
    Ok(fit)
}

/// Lays the HUD out until it covers at most half the window each way, and returns how it was
/// cut down. In order: the configured face; the smaller faces, largest first (each baked into
/// the atlas at its own size: ImGui's default face is a bitmap font that blurs when scaled, a
/// HUD drawn at 0.8x was unreadable and its glyphs lost the text colour); then no graphs; then
/// fewer rows, the last ones (the least asked for) first, replaced by one `...` row. A row
/// wider than the half window loses its columns' padding, then ends in `...`: the smaller
/// faces are tried first, and a row is cut to the width only with the smallest.
fn fit(
    s: &mut Shared,
    data: &HudData,
    opts: &HudOptions,
    canvas: [u32; 2],
    window: [u32; 2],
    out: &mut DrawOutput,
) -> Fit {
    let limit = [window[0].min(canvas[0] * 2) / 2, window[1].min(canvas[1] * 2) / 2];
    let padding = s.ctx.style().window_padding[0];
    let fresh = Fit {
        face: 0,
        graphs: true,
        rows: usize::MAX,
        width: (limit[0] as f32 - 2.0 * padding).max(1.0),
    };
    // Where the last search for this HUD and window ended, unless it is due again.
    let key = (std::ptr::from_ref(opts) as usize, window, canvas);
    let memo = out.fit_memo.filter(|m| m.key == key && m.uses < RESEARCH);
    let mut fit = memo.map_or(fresh, |m| m.fit);
    let mut check_memo = memo.is_some();
    let mut laid = Laid::default();
    for _ in 0..32 {
        // ImGui sizes an auto-resizing window from the previous frame's content, and the
        // context is shared by HUDs with different content: lay out twice, keep the second.
        for _ in 0..2 {
            laid = frame(s, data, opts, canvas, fit, out);
        }
        if std::mem::take(&mut check_memo) && memo.is_some_and(|m| m.rows != laid.rows || m.graphs != laid.graphs) {
            // The content has other rows or graphs than when that search ended: search anew.
            fit = fresh;
            continue;
        }
        let smallest = fit.face + 1 >= s.faces.len();
        let fits = out.size[0] <= limit[0] && out.size[1] <= limit[1] && (!laid.cut || smallest);
        if fits || fit.rows == 0 {
            break;
        }
        if !smallest {
            fit.face += 1;
        } else if fit.graphs && laid.graphs {
            fit.graphs = false;
        } else {
            // Rows in proportion to the height over, then one at a time.
            let shown = laid.rows.min(fit.rows);
            let share = limit[1] as f32 / out.size[1].max(1) as f32;
            fit.rows = ((shown as f32 * share.min(1.0)) as usize).min(shown.saturating_sub(1));
        }
    }
    let uses = match memo {
        Some(m) if m.fit.face == fit.face && m.fit.graphs == fit.graphs && m.fit.rows == fit.rows => m.uses + 1,
        _ => 0,
    };
    out.fit_memo = Some(FitMemo {
        key,
        fit,
        rows: laid.rows,
        graphs: laid.graphs,
        uses,
    });
    fit
}

/// Refreshes that may start where the last search ended before one searches from the largest
/// face again (the content may have narrowed enough for a larger one).
const RESEARCH: u32 = 16;

/// Where the last fit search ended, for the next refresh of the same HUD and window to start
/// there: a search lays the HUD out twice per stage tried, and in a small window (vkcube's 500
/// x 500) it tried three faces at every refresh, most of a refresh's instructions.
#[derive(Clone, Copy, Debug)]
pub(crate) struct FitMemo {
    /// The options' address (one per device or GL process), the window, the canvas.
    key: (usize, [u32; 2], [u32; 2]),
    fit: Fit,
    /// What the layout at `fit` showed: a different count means other content.
    rows: usize,
    graphs: bool,
    /// Refreshes that started here since the last full search.
    uses: u32,
}

/// How the HUD is cut down to fit its window.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Fit {
    /// The face, in `Shared::faces`: 0 is the configured one, then smaller ones.
    face: usize,
    graphs: bool,
    /// Text rows kept; the rest are replaced by one `...` row.
    rows: usize,
    /// Pixels a row's text may take; a longer one ends in `...`.
    width: f32,
}

/// What one layout showed.
#[derive(Clone, Copy, Debug, Default)]
struct Laid {
    /// Text rows it had to show (before any cut).
    rows: usize,
    /// Whether it drew a graph.
    graphs: bool,
    /// Whether a row was cut down to the width (its padding or its end).
    cut: bool,
}

#[cfg(test)]
thread_local! {
    /// Tests: layouts this thread made.
    pub(crate) static LAYOUTS: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

/// Lays the HUD out once with `fit`'s face, graphs, rows and width: the frame's set-up, the
/// rows in the HUD's window, then the draw lists copied out.
fn frame(s: &mut Shared, data: &HudData, opts: &HudOptions, canvas: [u32; 2], fit: Fit, out: &mut DrawOutput) -> Laid {
    #[cfg(test)]
    LAYOUTS.set(LAYOUTS.get() + 1);
    let face = begin_frame(s, canvas, fit);
    let Shared { ctx, text, points, .. } = s;
    let ui = ctx.new_frame();
    let mut size = [0.0f32; 2];
    let mut laid = Laid::default();
    ui.window("framescope")
        .position([0.0, 0.0], Condition::Always)
        .bg_alpha(opts.alpha)
        .flags(
            WindowFlags::NO_DECORATION
                | WindowFlags::ALWAYS_AUTO_RESIZE
                | WindowFlags::NO_SAVED_SETTINGS
                | WindowFlags::NO_FOCUS_ON_APPEARING
                | WindowFlags::NO_NAV
                | WindowFlags::NO_INPUTS,
        )
        .build(|| {
            laid = rows(ui, face, fit, data, opts, text, points);
            size = ui.window_size();
        });
    copy_draw_lists(ctx.render(), out);
    // Whole pixels only: each one is then fully covered by the window's background, so an
    // opaque HUD has no half-transparent edge and can be composited with a copy.
    out.size = [
        (size[0].floor() as u32).min(canvas[0]),
        (size[1].floor() as u32).min(canvas[1]),
    ];
    laid
}

/// Sets the frame's display size and clock, and picks `fit`'s face.
fn begin_frame(s: &mut Shared, canvas: [u32; 2], fit: Fit) -> Face {
    let now = Instant::now();
    let io = s.ctx.io_mut();
    io.display_size = [canvas[0].max(1) as f32, canvas[1].max(1) as f32];
    io.delta_time = now.duration_since(s.last).as_secs_f32().clamp(1e-4, 1.0);
    s.last = now;
    s.faces[fit.face.min(s.faces.len() - 1)]
}

/// The rows of the table that `opts` shows, in `face`, cut to `fit`; then `...` for the rows
/// cut off.
fn rows(
    ui: &imgui::Ui,
    face: Face,
    fit: Fit,
    data: &HudData,
    opts: &HudOptions,
    text: &mut String,
    points: &mut Vec<imgui::sys::ImVec2>,
) -> Laid {
    let _face = ui.push_font(face.id);
    // Both faces are monospaced: a row of n characters is n times this wide.
    let char_w = ui.calc_text_size("0")[0].max(1.0);
    let mut w = RowWriter {
        ui,
        text,
        rows: 0,
        max_rows: fit.rows,
        chars: ((fit.width / char_w) as usize).max(8),
        cut: false,
        // Graphs follow the face's size, and take at most the row width.
        graph_size: [(22.0 * face.px).min(fit.width).floor(), (3.0 * face.px).floor()],
        points,
        scales: Default::default(),
        graphs: false,
    };
    crate::hud_rows::write_rows(&mut w, data, opts, fit.graphs);
    if w.rows > fit.rows {
        ui.text("...");
    }
    Laid {
        rows: w.rows,
        graphs: w.graphs,
        cut: w.cut,
    }
}

/// Copies ImGui's draw lists into `out`'s plain vertex, index and command lists.
fn copy_draw_lists(draw_data: &imgui::DrawData, out: &mut DrawOutput) {
    out.vertices.clear();
    out.indices.clear();
    out.cmds.clear();
    // imgui-rs builds a slice from the list pointer, which is null when nothing was drawn
    // (e.g. the hidden first frame of an auto-resizing window).
    let lists = if draw_data.draw_lists_count() == 0 {
        None
    } else {
        Some(draw_data.draw_lists())
    };
    for list in lists.into_iter().flatten() {
        let base_vertex = out.vertices.len() as u32;
        let base_index = out.indices.len() as u32;
        out.vertices.extend(list.vtx_buffer().iter().map(|v| DrawVert {
            pos: v.pos,
            uv: v.uv,
            col: v.col,
        }));
        out.indices.extend_from_slice(list.idx_buffer());
        for cmd in list.commands() {
            if let imgui::DrawCmd::Elements { count, cmd_params } = cmd {
                out.cmds.push(DrawCmd {
                    clip: cmd_params.clip_rect,
                    first_index: base_index + cmd_params.idx_offset as u32,
                    vertex_offset: base_vertex + cmd_params.vtx_offset as u32,
                    count: count as u32,
                });
            }
        }
    }
}

/// Font size the shared atlas was built with.
pub fn atlas_font_pixels() -> Option<f32> {
    match &*UI.lock() {
        State::Ready(s) => Some(s.font_px),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::row_writer::{graph_scale, PLOT_LINES};

    #[test]
    fn graphs_are_labelled_with_their_scale() {
        let (top, label) = graph_scale(&[16.0, 17.25, 12.5], 1.0);
        assert_eq!(label, "12.5-17.2 ms");
        assert!((top - 17.25 * 1.2).abs() < 1e-4);
        assert_eq!(graph_scale(&[0.01], 0.1).0, 0.1, "the floor keeps a flat graph visible");
    }

    #[test]
    fn the_hud_covers_at_most_half_the_window_and_shrinks_only_when_it_must() {
        let opts = HudOptions::default();
        let lines: Vec<crate::model::CounterLine> = (0..40)
            .map(|i| crate::model::CounterLine {
                name: format!("counter {i}"),
                unit: "%".into(),
                value: Some(f64::from(i)),
            })
            .collect();
        let data = HudData {
            fps: Some(60.0),
            frame_ms: Some(16.7),
            gpu_ms: Some(3.0),
            frame_graph: vec![16.0; 50],
            gpu_graph: vec![3.0; 50],
            counters: lines,
            ..HudData::default()
        };
        let mut big = DrawOutput::default();
        render(&data, &opts, [4000, 4000], [4000, 4000], &mut big).unwrap();
        let mut small = DrawOutput::default();
        render(&data, &opts, [300, 300], [300, 300], &mut small).unwrap();
        assert!(small.size[0] <= 150 && small.size[1] <= 150, "{:?}", small.size);
        assert!(big.size[1] > 300, "a large window shows everything: {:?}", big.size);
        assert!(!small.cmds.is_empty(), "something is still drawn");
    }

    fn counters(n: u32) -> Vec<crate::model::CounterLine> {
        (0..n)
            .map(|i| crate::model::CounterLine {
                name: format!("counter {i}"),
                unit: "%".into(),
                value: Some(f64::from(i)),
            })
            .collect()
    }

    /// What a render produced.
    fn render_with(data: &HudData, canvas: u32, plot_lines: bool) -> DrawOutput {
        let mut out = DrawOutput::default();
        PLOT_LINES.set(plot_lines);
        let r = render(
            data,
            &HudOptions::default(),
            [canvas, canvas],
            [canvas, canvas],
            &mut out,
        );
        PLOT_LINES.set(false);
        r.unwrap();
        out
    }

    #[test]
    fn graphs_draw_the_vertices_of_imguis_plot_lines() {
        // More points than the graph has pixels and fewer, a spike above the top, two points.
        for (n, canvas) in [(300usize, 1024u32), (37, 1024), (500, 400), (2, 1024)] {
            let data = HudData {
                fps: Some(60.0),
                frame_ms: Some(16.7),
                gpu_ms: Some(3.0),
                frame_graph: (0..n)
                    .map(|i| (i % 17) as f32 * 1.3 + if i == n / 2 { 40.0 } else { 0.0 })
                    .collect(),
                gpu_graph: (0..n).map(|i| ((i * 7) % 11) as f32 * 0.37).collect(),
                ..HudData::default()
            };
            let (ours, theirs) = (render_with(&data, canvas, false), render_with(&data, canvas, true));
            let what = format!("{n} points on {canvas}");
            let graph = ours.vertices.iter().filter(|v| v.col[..3] == GRAPH_RGB).count();
            assert!(graph >= 4 * n.min(100), "{what}: {graph} graph vertices");
            assert_eq!(ours.vertices.len(), theirs.vertices.len(), "{what}: vertices");
            for (k, (a, b)) in ours.vertices.iter().zip(&theirs.vertices).enumerate() {
                // Bit for bit on x86_64; a 32-bit build's C++ may keep x87 intermediates, which
                // move a position by a few ULPs (thousandths of a pixel at most).
                let near = a.pos.iter().zip(b.pos).all(|(x, y)| (x - y).abs() <= 1e-3);
                assert!(
                    near && a.uv == b.uv && a.col == b.col,
                    "{what}: vertex {k}: {a:?} vs {b:?}"
                );
            }
            assert_eq!(ours.indices, theirs.indices, "{what}: indices");
            assert_eq!(ours.size, theirs.size, "{what}: size");
            assert_eq!(ours.cmds, theirs.cmds, "{what}: commands");
        }
    }

    #[test]
    fn a_refresh_starts_where_the_last_fit_search_of_its_hud_ended() {
        let opts = HudOptions::default();
        let mut data = graphs_and(12);
        // A small window: the search tries several faces.
        let window = [500, 500];
        let render_counting = |data: &HudData, window: [u32; 2], out: &mut DrawOutput| -> (Fit, u32) {
            let before = LAYOUTS.get();
            let fit = render_fit(data, &opts, [1024, 1024], window, out).unwrap();
            (fit, LAYOUTS.get() - before)
        };
        let mut out = DrawOutput::default();
        let (first, searched) = render_counting(&data, window, &mut out);
        assert!(first.face > 0 && searched >= 4, "{first:?} after {searched} layouts");
        let (vertices, size) = (out.vertices.clone(), out.size);
        let (again, layouts) = render_counting(&data, window, &mut out);
        assert_eq!(
            (again, layouts),
            (first, 2),
            "the next refresh lays out once, twice over"
        );
        assert_eq!((&out.vertices, out.size), (&vertices, size), "and draws the same");
        // Another HUD (its own output) searches for itself.
        let (other, layouts) = render_counting(&data, window, &mut DrawOutput::default());
        assert_eq!((other, layouts), (first, searched));
        // Another window, or other rows, and the search starts from the largest face again.
        let (_, layouts) = render_counting(&data, [2000, 2000], &mut out);
        assert!(layouts == 2, "a large window fits at once: {layouts}");
        let (back, layouts) = render_counting(&data, window, &mut out);
        assert_eq!((back, layouts), (first, searched));
        // Every RESEARCH-th refresh searches in full.
        let mut fulls = 0;
        for _ in 0..2 * RESEARCH {
            let (_, layouts) = render_counting(&data, window, &mut out);
            fulls += u32::from(layouts > 2);
        }
        assert!(
            (1..=2).contains(&fulls),
            "{fulls} full searches in {} refreshes",
            2 * RESEARCH
        );
        data.counters = counters(4);
        let (fewer, layouts) = render_counting(&data, window, &mut out);
        let (fresh, full) = render_counting(&data, window, &mut DrawOutput::default());
        assert_eq!(fewer, fresh, "fewer rows: the fit a full search finds");
        assert_eq!(layouts, 2 + full, "the memo's try, then a full search");
    }

    /// The scale's text sits in the row above its graph: no glyph lies between the graph's
    /// highest and lowest point (it was drawn inside the graph, and the trace ran through it).
    #[test]
    fn no_text_is_drawn_over_a_graph() {
        let n = 300;
        let data = HudData {
            fps: Some(60.0),
            frame_ms: Some(16.7),
            // Spikes to the top of both graphs, where the label used to be.
            frame_graph: (0..n)
                .map(|i| if i % 50 == 0 { 40.0 } else { 10.0 + (i % 7) as f32 })
                .collect(),
            ..HudData::default()
        };
        let out = render_with(&data, 1024, false);
        let ys = |rgb: [u8; 3]| -> Vec<f32> {
            out.vertices
                .iter()
                .filter(|v| v.col[..3] == rgb)
                .map(|v| v.pos[1])
                .collect()
        };
        let graph = ys(GRAPH_RGB);
        let (top, bottom) = graph
            .iter()
            .fold((f32::MAX, f32::MIN), |(lo, hi), &y| (lo.min(y), hi.max(y)));
        assert!(bottom - top > 10.0, "a graph was drawn: {top}..{bottom}");
        let over: Vec<f32> = ys(TEXT_RGB).into_iter().filter(|&y| y > top && y < bottom).collect();
        assert!(over.is_empty(), "text over the graph ({top}..{bottom}): {over:?}");
    }

    fn graphs_and(n: u32) -> HudData {
        HudData {
            fps: Some(60.0),
            frame_ms: Some(16.7),
            gpu_ms: Some(3.0),
            frame_graph: vec![16.0; 50],
            gpu_graph: vec![3.0; 50],
            counters: counters(n),
            ..HudData::default()
        }
    }

    /// How far `fit` cut the HUD down, in the fit's order: the face, then the graphs, then
    /// the rows.
    fn stage(f: &Fit) -> (usize, bool, std::cmp::Reverse<usize>) {
        (f.face, !f.graphs, std::cmp::Reverse(f.rows))
    }

    #[test]
    fn a_smaller_window_gets_a_smaller_face_then_no_graphs_then_fewer_rows() {
        let opts = HudOptions::default();
        let data = graphs_and(12);
        let last = opts_faces(&opts) - 1;
        assert!(last >= 1, "at least one smaller face");
        // Only the height limits here (a wide window): each step down is the same cut or a
        // later one, never an earlier one.
        let mut seen = Vec::new();
        let mut sizes = Vec::new();
        let mut out = DrawOutput::default();
        for h in (100..=1200).rev().step_by(10) {
            let fit = render_fit(&data, &opts, [1024, 1024], [2000, h], &mut out).unwrap();
            assert!(out.size[1] <= h / 2, "{h}: {:?} {fit:?}", out.size);
            if fit.face < last {
                assert!(fit.graphs && fit.rows == usize::MAX, "{h}: a face first: {fit:?}");
            }
            if fit.graphs {
                assert_eq!(fit.rows, usize::MAX, "{h}: graphs before rows: {fit:?}");
            }
            if let Some(prev) = seen.last() {
                assert!(stage(prev) <= stage(&fit), "{h}: {prev:?} then {fit:?}");
            }
            let new_stage = match seen.last() {
                Some(p) => p.face != fit.face || p.graphs != fit.graphs,
                None => true,
            };
            if new_stage {
                sizes.push((fit, out.size));
            }
            seen.push(fit);
        }
        // Every stage was used: each face with all rows and graphs, then no graphs, then fewer
        // rows.
        for face in 0..=last {
            assert!(
                seen.iter().any(|f| f.face == face && f.graphs && f.rows == usize::MAX),
                "face {face}: {seen:?}"
            );
        }
        assert!(seen.iter().any(|f| !f.graphs && f.rows == usize::MAX), "{seen:?}");
        assert!(seen.iter().any(|f| f.rows < 12), "{seen:?}");
        // The same rows in a smaller face make a smaller HUD, each way.
        let full: Vec<_> = sizes.iter().filter(|(f, _)| f.graphs).collect();
        for pair in full.windows(2) {
            let ((a, sa), (b, sb)) = (pair[0], pair[1]);
            assert!(
                b.face > a.face && sb[0] < sa[0] && sb[1] < sa[1],
                "{a:?} {sa:?} then {b:?} {sb:?}"
            );
        }
    }

    /// Faces in the shared atlas (built with the default options by whichever test came first).
    fn opts_faces(opts: &HudOptions) -> usize {
        font_atlas(opts).unwrap();
        match &*UI.lock() {
            State::Ready(s) => s.faces.len(),
            _ => panic!("no context"),
        }
    }

    #[test]
    fn a_row_too_wide_for_the_face_gets_a_smaller_face_before_it_is_cut() {
        let opts = HudOptions::default();
        let device = "llvmpipe (LLVM 15.0.6, 256 bits)"; // 32 characters
        let data = HudData {
            fps: Some(60.0),
            device: device.into(),
            ..HudData::default()
        };
        let mut out = DrawOutput::default();
        // 7 px a character in the configured face (13 px), 6 in the first smaller one; 16 px
        // of padding: 32 characters take 240 or 208 px.
        let fit = render_fit(&data, &opts, [1024, 1024], [2 * 240, 1000], &mut out).unwrap();
        assert_eq!(fit.face, 0, "{fit:?} {:?}", out.size);
        let fit = render_fit(&data, &opts, [1024, 1024], [2 * 220, 1000], &mut out).unwrap();
        assert_eq!(fit.face, 1, "{fit:?} {:?}", out.size);
        assert!(out.size[0] <= 220 && out.size[0] >= 208, "{:?}", out.size);
    }

    #[test]
    fn the_smaller_faces_have_pixels_of_exactly_the_text_colour() {
        // Screenshot tests find the HUD's text by its colour: most glyphs drawn in each face
        // must have a fully opaque texel (drawn 1:1, exactly TEXT_RGB).
        let opts = HudOptions::default();
        let atlas = font_atlas(&opts).unwrap();
        let data = HudData {
            fps: Some(60.0),
            frame_ms: Some(16.7),
            gpu_ms: Some(3.0),
            device: "llvmpipe (LLVM 15.0.6, 256 bits)".into(),
            driver: "Mesa 22.3.6".into(),
            counters: counters(4),
            ..HudData::default()
        };
        let white = [TEXT_RGB[0], TEXT_RGB[1], TEXT_RGB[2], 255];
        let mut out = DrawOutput::default();
        let mut faces = Vec::new();
        for w in (150..=1000).rev().step_by(25) {
            let fit = render_fit(&data, &opts, [1024, 1024], [w, 1000], &mut out).unwrap();
            if faces.contains(&fit.face) {
                continue;
            }
            faces.push(fit.face);
            // Glyphs are quads of 4 vertices in the text colour with a texture rectangle.
            let (mut glyphs, mut opaque) = (0, 0);
            for q in out.vertices.chunks_exact(4) {
                let (a, c) = (q[0].uv, q[2].uv);
                if q.iter().any(|v| v.col != white) || a[0] == c[0] || a[1] == c[1] {
                    continue;
                }
                glyphs += 1;
                let px = |u: f32, n: u32| ((u * n as f32).round() as usize).min(n as usize);
                let (x0, x1) = (px(a[0], atlas.width), px(c[0], atlas.width));
                let (y0, y1) = (px(a[1], atlas.height), px(c[1], atlas.height));
                let full =
                    (y0..y1).any(|y| (x0..x1).any(|x| atlas.pixels[(y * atlas.width as usize + x) * 4 + 3] == 255));
                opaque += usize::from(full);
            }
            assert!(glyphs > 50, "face {}: {glyphs} glyphs", fit.face);
            assert!(
                opaque * 10 >= glyphs * 9,
                "face {}: {opaque} of {glyphs} glyphs have a fully opaque pixel",
                fit.face
            );
        }
        assert_eq!(faces.len(), opts_faces(&opts), "every face was drawn: {faces:?}");
    }

    #[test]
    fn renders_text_and_graphs_within_the_canvas() {
        let opts = HudOptions::default();
        let atlas = font_atlas(&opts).unwrap();
        assert!(atlas.width > 0 && atlas.pixels.len() == (atlas.width * atlas.height * 4) as usize);
        let data = HudData {
            fps: Some(60.0),
            frame_ms: Some(16.7),
            gpu_ms: Some(3.0),
            frame_graph: vec![16.0, 17.0, 16.5],
            gpu_graph: vec![3.0, 2.0, 4.0],
            device: "llvmpipe".into(),
            driver: "Mesa".into(),
            ..HudData::default()
        };
        let mut out = DrawOutput::default();
        render(&data, &opts, [1024, 1024], [1024, 1024], &mut out).unwrap();
        assert!(out.size[0] > 100 && out.size[1] > 50, "{:?}", out.size);
        assert!(!out.cmds.is_empty() && out.vertices.len() > 100);
        let n = out.vertices.len() as u32;
        assert!(out.indices.iter().all(|&i| u32::from(i) < n));
        for c in &out.cmds {
            assert!((c.first_index + c.count) as usize <= out.indices.len());
        }
        // Fewer lines: a smaller HUD, right away (the layout runs twice per render).
        let mut few = opts.clone();
        for row in [
            crate::hud_rows::FRAME_GRAPH,
            crate::hud_rows::GPU_GRAPH,
            crate::hud_rows::DEVICE,
        ] {
            few.set(row, 0);
        }
        let mut small = DrawOutput::default();
        render(&data, &few, [1024, 1024], [1024, 1024], &mut small).unwrap();
        assert!(small.size[1] < out.size[1], "{:?} vs {:?}", small.size, out.size);
        // Several threads take turns on the one context.
        let handles: Vec<_> = (0..4)
            .map(|_| {
                let (d, o) = (data.clone(), opts.clone());
                std::thread::spawn(move || {
                    let mut out = DrawOutput::default();
                    render(&d, &o, [300, 300], [300, 300], &mut out).unwrap();
                    out.size
                })
            })
            .collect();
        for h in handles {
            let s = h.join().unwrap();
            assert!(s[0] <= 300 && s[1] <= 300);
        }
    }
}
